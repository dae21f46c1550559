//! Preset import (SPEC §6) and assembly (SPEC §4), rule by rule, through the public API.

use serde_json::{Value, json};
use stpreset::{Context, DiagnosticKind, Preset, PresetError, Role};

fn preset(v: Value) -> Preset {
    Preset::from_json(&serde_json::to_vec(&v).unwrap()).unwrap()
}

fn err(v: Value) -> PresetError {
    Preset::from_json(&serde_json::to_vec(&v).unwrap()).unwrap_err()
}

fn ctx(items: Value) -> Context {
    let mut c = json!({"user": "Alice", "char": "Tomori", "now": "2026-11-29T17:07:00Z",
                       "description": "DESC {{user}}", "personality": "PERS", "persona": "PERSONA",
                       "scenario": "SCEN"});
    c["items"] = items;
    Context::from_json(&serde_json::to_vec(&c).unwrap()).unwrap()
}

fn item(tag: &str, role: &str, text: &str) -> Value {
    json!({"tag": tag, "role": role, "text": text})
}

/// Prompts in array order, no order list: `("id", "content")`; content `@` means marker.
fn nodes(spec: &[(&str, &str)]) -> Value {
    let prompts: Vec<Value> = spec
        .iter()
        .map(|(id, content)| {
            if *content == "@" {
                json!({"identifier": id, "marker": true})
            } else {
                json!({"identifier": id, "content": content})
            }
        })
        .collect();
    json!({ "prompts": prompts })
}

fn texts(p: &Preset, c: &Context) -> Vec<String> {
    p.compile()
        .render(c)
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect()
}

/// Each message's parts, as owned strings.
fn parts(out: &stpreset::Rendered<'_>) -> Vec<Vec<String>> {
    out.messages
        .iter()
        .map(|m| m.parts().iter().map(|p| p.to_string()).collect())
        .collect()
}

fn ids(p: &Preset) -> Vec<(&str, bool)> {
    p.nodes()
        .iter()
        .map(|n| (n.identifier.as_str(), n.enabled))
        .collect()
}

fn kinds(d: &[stpreset::Diagnostic]) -> Vec<DiagnosticKind> {
    d.iter().map(|d| d.kind).collect()
}

// ---- import -------------------------------------------------------------------------------

#[test]
fn order_lists() {
    let prompts = json!([{"identifier": "a"}, {"identifier": "b"}, {"identifier": "c"}]);
    let p = preset(json!({"prompts": prompts, "prompt_order": [
        {"character_id": 100000, "order": [{"identifier": "a"}]},
        {"character_id": "100001", "order": [{"identifier": "c", "enabled": false}, {"identifier": "b"},
                                             {"identifier": "zz"}, {"identifier": "c"}]}]}));
    assert_eq!(ids(&p), [("c", false), ("b", true)]);
    assert_eq!(
        kinds(p.diagnostics()),
        [
            DiagnosticKind::UnknownOrderReference,
            DiagnosticKind::DuplicateIdentifier
        ]
    );
    // A null `order` is no list: the 100000 list is used.
    let p = preset(json!({"prompts": prompts, "prompt_order": [
        {"character_id": 100001, "order": null}, {"character_id": 100000, "order": [{"identifier": "b"}]}]}));
    assert_eq!(ids(&p), [("b", true)]);
    // An empty list is a list: nothing is imported.
    let p = preset(
        json!({"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": []}]}),
    );
    assert!(p.nodes().is_empty());
    // No usable list: array order with the prompts' own enabled flags.
    let p = preset(
        json!({"prompts": [{"identifier": "a", "enabled": false}, {"identifier": "b"}],
                          "prompt_order": [{"character_id": 5, "order": [{"identifier": "b"}]}]}),
    );
    assert_eq!(ids(&p), [("a", false), ("b", true)]);
}

#[test]
fn duplicate_prompts_keep_the_first() {
    let p = preset(json!({"prompts": [{"identifier": "main", "content": "one"},
                                      {"identifier": "main", "content": "two"}]}));
    assert_eq!(p.nodes().len(), 1);
    assert_eq!(p.nodes()[0].content, "one");
    assert_eq!(
        kinds(p.diagnostics()),
        [DiagnosticKind::DuplicateIdentifier]
    );
}

#[test]
fn node_defaults_and_raw_fields() {
    let p = preset(json!({"temperature": 0.7, "prompts": [{"identifier": "x"}]}));
    let n = &p.nodes()[0];
    assert_eq!(
        (n.role.as_str(), n.content.as_str(), n.marker, n.enabled),
        ("system", "", false, true)
    );
    assert_eq!(
        (n.injection_position, n.injection_depth, n.injection_order),
        (0, 4, 100)
    );
    assert_eq!(n.name, "x");
    assert_eq!(p.raw()["temperature"], 0.7);
}

#[test]
fn wrong_types_name_prompt_and_field() {
    let cases = [
        (json!({"prompts": [{"identifier": 3}]}), "identifier"),
        (json!({"prompts": [{"identifier": "a", "role": 1}]}), "role"),
        (
            json!({"prompts": [{"identifier": "a", "content": ["x"]}]}),
            "content",
        ),
        (
            json!({"prompts": [{"identifier": "a", "marker": "yes"}]}),
            "marker",
        ),
        (
            json!({"prompts": [{"identifier": "a", "enabled": 1}]}),
            "enabled",
        ),
        (
            json!({"prompts": [{"identifier": "a", "injection_depth": 2.5}]}),
            "injection_depth",
        ),
        (
            json!({"prompts": [{"identifier": "a", "injection_order": "1e3"}]}),
            "injection_order",
        ),
        (
            json!({"prompts": [{"identifier": "a", "injection_position": "2"}]}),
            "injection_position",
        ),
        (
            json!({"prompts": [{"identifier": "a", "injection_position": true}]}),
            "injection_position",
        ),
    ];
    for (v, field) in cases {
        let msg = err(v).to_string();
        assert!(msg.contains(field), "{msg}");
        assert_eq!(msg.lines().count(), 1);
    }
    // Prompts the order list does not reference are validated too.
    let e = err(
        json!({"prompts": [{"identifier": "a"}, {"identifier": "b", "marker": 1}],
                       "prompt_order": [{"character_id": 100001, "order": [{"identifier": "a"}]}]}),
    );
    assert!(e.to_string().contains("prompt b"), "{e}");
    assert!(matches!(
        err(
            json!({"prompts": [{"identifier": "a"}], "prompt_order": [{"character_id": 100001, "order": "x"}]})
        ),
        PresetError::Shape { .. }
    ));
}

#[test]
fn integer_fields_accept_whole_numbers_and_digit_strings() {
    let p = preset(
        json!({"prompts": [{"identifier": "a", "injection_position": "1", "injection_depth": 2.0,
                                       "injection_order": " -90 "}, {"identifier": "b", "injection_depth": 1e12}]}),
    );
    let n = &p.nodes()[0];
    assert_eq!(
        (n.injection_position, n.injection_depth, n.injection_order),
        (1, 2, -90)
    );
    assert_eq!(p.nodes()[1].injection_depth, i32::MAX);
}

#[test]
fn bad_files() {
    assert!(matches!(
        Preset::from_json(b"\xff{}"),
        Err(PresetError::Utf8 { .. })
    ));
    match Preset::from_json(b"{\n  \"prompts\": [,]}") {
        Err(PresetError::Json { line, column, .. }) => assert_eq!((line, column), (2, 15)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Preset::from_json(b"[1]"),
        Err(PresetError::NotAPreset(_))
    ));
    assert!(matches!(
        Preset::from_json(b"{\"prompts\": []}"),
        Err(PresetError::NotAPreset(_))
    ));
    assert!(matches!(
        Preset::from_json(b"{\"prompts\": {}}"),
        Err(PresetError::Shape { .. })
    ));
}

#[test]
fn size_limit_is_inclusive() {
    let limit = 2 * 1024 * 1024;
    let shell = json!({"prompts": [{"identifier": "a", "content": ""}]}).to_string();
    let pad = "x".repeat(limit - shell.len());
    let exact = shell.replace("\"content\":\"\"", &format!("\"content\":\"{pad}\""));
    assert_eq!(exact.len(), limit);
    assert!(Preset::from_json(exact.as_bytes()).is_ok());
    let over = exact.replace("\"content\":\"", "\"content\":\"x");
    assert!(matches!(
        Preset::from_json(over.as_bytes()),
        Err(PresetError::TooLarge { .. })
    ));
}

#[test]
fn legacy_post_history_is_deduplicated_against_depth_nodes() {
    let p = preset(
        json!({"prompts": [{"identifier": "j", "content": " Stay. ", "injection_position": 1}],
                          "post_history": "Stay.", "sysprompt": {"post_history": "Other"}}),
    );
    let got: Vec<_> = p.nodes().iter().map(|n| n.identifier.as_str()).collect();
    assert_eq!(got, ["j", "legacySyspromptPostHistory"]);
}

#[test]
fn comment_only_nodes_are_flagged_and_never_rendered() {
    let p = preset(nodes(&[("a", "{{// note}} {{trim}}"), ("b", "B")]));
    let c = p.compile();
    assert_eq!(c.is_comment_only(0), Some(true));
    assert_eq!(c.is_comment_only(1), Some(false));
    assert_eq!(texts(&p, &ctx(json!([]))), ["B"]);
}

// ---- assembly -----------------------------------------------------------------------------

#[test]
fn main_is_the_anchor_with_or_without_text() {
    let items = json!([
        item("SYSTEM_CHANNEL_PROMPT", "system", "CHAN"),
        item("SYSTEM_HUMANIZER_RULES", "system", "HUM"),
        item("SYSTEM_SERVER_PROMPT", "system", "SRV"),
        item("SYSTEM_FALLBACK_PROMPT", "system", "FALL")
    ]);
    let p = preset(nodes(&[("x", "X"), ("main", "MAIN")]));
    assert_eq!(texts(&p, &ctx(items.clone())), ["X", "MAIN", "HUM", "CHAN"]);
    let p = preset(nodes(&[("main", "@"), ("x", "X")]));
    assert_eq!(texts(&p, &ctx(items.clone())), ["HUM", "CHAN", "X"]);
    let p = preset(nodes(&[("main", "{{// comment only}}"), ("x", "X")]));
    assert_eq!(texts(&p, &ctx(items)), ["HUM", "CHAN", "X"]);
}

#[test]
fn groups_flush_at_their_anchors() {
    let items = json!([
        item("KNOWLEDGE_ACTIVE_USERS", "system", "USERS"),
        item("KNOWLEDGE_SERVER_INFO", "system", "INFO"),
        item("KNOWLEDGE_LOREBOOK_AFTER", "system", "LA"),
        item("KNOWLEDGE_LOREBOOK_BEFORE", "system", "LB"),
        item("SYSTEM_CONDITIONING", "system", "COND"),
        item("DIALOGUE_HISTORY", "user", "H")
    ]);
    // Knowledge after charPersonality even though it emitted nothing; participants (with the
    // lore whose marker is missing) right before chatHistory; worldInfoAfter keeps its bucket.
    let p = preset(nodes(&[
        ("a", "A"),
        ("charPersonality", "@"),
        ("b", "B"),
        ("chatHistory", "@"),
        ("worldInfoAfter", "@"),
    ]));
    assert_eq!(
        texts(&p, &ctx(items.clone())),
        ["A", "INFO", "B", "LB", "USERS", "COND", "H", "LA"]
    );
    // With no anchors at all, both groups flush after the walk, then leftovers.
    let p = preset(nodes(&[("a", "A")]));
    assert_eq!(
        texts(&p, &ctx(items)),
        ["A", "INFO", "LB", "LA", "USERS", "COND", "H"]
    );
}

#[test]
fn leftovers_go_in_bucket_order_untagged_last() {
    let items = json!([{"role": "system", "text": "U1"}, item("DIALOGUE_HISTORY", "user", "H"),
                       item("SYSTEM_PERSONALITY", "system", "P"), {"role": "user", "text": "U2"},
                       item("DIALOGUE_HISTORY", "model", "H2")]);
    let p = preset(nodes(&[("a", "A")]));
    assert_eq!(texts(&p, &ctx(items)), ["A", "H", "H2", "P", "U1", "U2"]);
}

#[test]
fn suppression_drops_native_blocks_wherever_they_would_appear() {
    let items = json!([
        item("SYSTEM_PERSONA_PROMPT", "system", "NATIVE DESC"),
        item("SYSTEM_PERSONALITY", "system", "NATIVE PERS")
    ]);
    let p = preset(nodes(&[
        (
            "d",
            "{{description}}|{{personality}}|{{persona}}|{{scenario}}",
        ),
        ("personaDescription", "@"),
        ("scenario", "@"),
    ]));
    assert_eq!(
        texts(&p, &ctx(items.clone())),
        ["DESC Alice|PERS|PERSONA|SCEN"]
    );
    let p = preset(nodes(&[
        ("personaDescription", "@"),
        ("scenario", "@"),
        ("charDescription", "@"),
    ]));
    assert_eq!(
        texts(&p, &ctx(items)),
        ["PERSONA", "SCEN", "NATIVE DESC", "NATIVE PERS"]
    );
}

#[test]
fn host_items_are_identity_converted_except_history() {
    let items = json!([
        item("SYSTEM_PERSONA_PROMPT", "system", "{{user}} and {char}"),
        item("DIALOGUE_HISTORY", "user", "{{user}} {char}")
    ]);
    let p = preset(nodes(&[("charDescription", "@"), ("chatHistory", "@")]));
    assert_eq!(
        texts(&p, &ctx(items)),
        ["Alice and Tomori", "{{user}} {char}"]
    );
}

#[test]
fn roles_and_sources() {
    let p = preset(
        json!({"prompts": [{"identifier": "a", "content": "A", "role": "assistant"},
                                      {"identifier": "u", "content": "U", "role": "user"},
                                      {"identifier": "s", "content": "S", "role": "narrator"}]}),
    );
    let c = ctx(json!([]));
    let out = p.compile().render(&c);
    let roles: Vec<Role> = out.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::Model, Role::User, Role::System]);
    let v = serde_json::to_value(&out).unwrap();
    assert_eq!(v["messages"][0]["source"], json!({"node": "a"}));
    assert_eq!(v["messages"][0]["role"], "model");
}

#[test]
fn sample_separator_and_unfilled_markers() {
    let items = json!([item("DIALOGUE_SAMPLE", "user", "S")]);
    let p = preset(nodes(&[("nsfw", "@"), ("dialogueExamples", "@")]));
    let c = ctx(items);
    let out = p.compile().render(&c);
    assert_eq!(out.messages.len(), 2);
    assert_eq!(out.messages[1].role, Role::User);
    assert!(out.messages[1].text().contains("how Tomori writes"));
    assert_eq!(
        serde_json::to_value(&out.messages[1].source).unwrap(),
        json!({"tag": "SAMPLE_SEPARATOR"})
    );
    assert_eq!(kinds(&out.diagnostics), [DiagnosticKind::UnfilledMarker]);
}

#[test]
fn depth_injection_rules() {
    let history = json!([item("DIALOGUE_HISTORY", "user", "H1"), item("DIALOGUE_HISTORY", "model", "H2"),
                         item("DIALOGUE_HISTORY", "user", "H3"),
                         {"tag": "CONTEXT_CURRENT", "role": "system", "text": "NOW {{user}}", "depth": 0},
                         {"tag": "CONTEXT_CURRENT", "role": "system", "text": "  ", "depth": 0}]);
    let p = preset(json!({"prompts": [
        {"identifier": "chatHistory", "marker": true},
        {"identifier": "neg", "content": "NEG", "injection_position": 1, "injection_depth": -5, "injection_order": 100},
        {"identifier": "empty", "content": "{{noop}}", "injection_position": 1, "injection_depth": 0},
        {"identifier": "first", "content": "FIRST", "injection_position": 1, "injection_depth": 0, "injection_order": 1},
        {"identifier": "far", "content": "FAR", "injection_position": 1, "injection_depth": 2147483647},
        {"identifier": "mid", "content": "MID", "injection_position": 1, "injection_depth": 1}]}));
    let c = ctx(history);
    let out = p.compile().render(&c);
    let got = parts(&out);
    assert_eq!(
        got,
        [
            vec!["H1".to_string(), "\n[System: FAR]".into()],
            vec!["H2".to_string(), "\n[System: MID]".into()],
            vec!["H3".to_string(), "\n[System: FIRST\nNEG\nNOW Alice]".into()],
        ]
    );
    // No history: injections are omitted with one warning, only if one is non-empty.
    let c = ctx(json!([]));
    let out = p.compile().render(&c);
    assert!(out.messages.is_empty());
    assert_eq!(
        kinds(&out.diagnostics),
        [DiagnosticKind::NoHistoryForInjection]
    );
    let p =
        preset(json!({"prompts": [{"identifier": "e", "content": " ", "injection_position": 1}]}));
    assert!(p.compile().render(&ctx(json!([]))).diagnostics.is_empty());
}

#[test]
fn depth_nodes_take_part_in_both_passes() {
    // A depth node declares a variable that an earlier node reads (pass 2 sees the final map).
    let p = preset(json!({"prompts": [
        {"identifier": "a", "content": "[{{getvar::v}}]"},
        {"identifier": "chatHistory", "marker": true},
        {"identifier": "d", "content": "{{setvar::v::set by depth}}D", "injection_position": 1, "injection_depth": 0}]}));
    let c = ctx(json!([item("DIALOGUE_HISTORY", "user", "H")]));
    let out = p.compile().render(&c);
    let got: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(got, ["[set by depth]", "H\n[System: D]"]);
    assert_eq!(out.variables["v"], "set by depth");
}

#[test]
fn output_limit_cuts_the_crossing_message() {
    let p = preset(nodes(&[("a", "12345"), ("b", "6789"), ("c", "never")]));
    let mut c = ctx(json!([]));
    c.options.limits.output_bytes = 7;
    let out = p.compile().render(&c);
    let got: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(got, ["12345", "67"]);
    assert_eq!(kinds(&out.diagnostics), [DiagnosticKind::LimitReached]);
}

#[test]
fn an_output_limit_on_a_part_boundary_leaves_no_empty_part_or_message() {
    let p = preset(nodes(&[("a", "MAIN"), ("b", "next")]));
    let mut c = ctx(json!([item("DIALOGUE_HISTORY", "user", "H")]));
    c.options.limits.output_bytes = 4;
    let out = p.compile().render(&c);
    let got = parts(&out);
    assert_eq!(got, [vec!["MAIN".to_string()]]);
    assert_eq!(kinds(&out.diagnostics), [DiagnosticKind::LimitReached]);
    drop(out);
    c.options.limits.output_bytes = 0;
    assert!(p.compile().render(&c).messages.is_empty());
}

#[test]
fn compiled_presets_render_many_contexts() {
    let p = preset(nodes(&[("a", "Hi {{user}} {{random::x::y::z::w}}")]));
    let compiled = p.compile();
    let mut c = ctx(json!([]));
    let first = compiled.render(&c).messages[0].text().into_owned();
    c.user = "Bob".into();
    assert!(
        compiled.render(&c).messages[0]
            .text()
            .starts_with("Hi Bob ")
    );
    c.user = "Alice".into();
    assert_eq!(compiled.render(&c).messages[0].text(), first);
}

#[test]
fn audit_reports_problems_in_every_node() {
    let p = preset(json!({"prompts": [
        {"identifier": "a", "content": "{{#if {{foo}}}}{{else}}{{getvarkey::k}}{{/if}}"},
        {"identifier": "off", "content": "{{user::x}}", "enabled": false},
        {"identifier": "t", "content": "{{isodate}}"},
        {"identifier": "chatHistory", "marker": true},
        {"identifier": "late", "content": "{{time}} <div>"}]}));
    let d = p.audit();
    let got: Vec<(DiagnosticKind, Option<&str>)> =
        d.iter().map(|d| (d.kind, d.node.as_deref())).collect();
    assert_eq!(
        got,
        [
            (DiagnosticKind::UnknownMacro, Some("a")),
            (DiagnosticKind::BadArguments, Some("a")),
            (DiagnosticKind::BadArguments, Some("off")),
            (DiagnosticKind::CacheUnfriendlyPrefix, Some("t")),
            (DiagnosticKind::HtmlInNode, Some("late")),
            // No `main`: a host's channel prompt would follow the history.
            (DiagnosticKind::UnanchoredItems, None),
        ]
    );
    assert!(
        d.iter()
            .filter(|d| d.node.is_some())
            .all(|d| d.line.is_some() && d.column.is_some())
    );
}

/// `prompt_order` is read from its raw JSON (only the chosen list's items are parsed): every
/// shape rule and the choice of list behave as reading it whole would.
#[test]
fn prompt_order_shapes_and_choice() {
    let prompts =
        r#""prompts": [{"identifier": "a", "content": "A"}, {"identifier": "b", "content": "B"}]"#;
    let import = |order: &str| {
        Preset::from_json(format!("{{{prompts}, \"prompt_order\": {order}}}").as_bytes())
            .map(|p| {
                p.nodes()
                    .iter()
                    .map(|n| format!("{}{}", n.identifier, if n.enabled { "+" } else { "-" }))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .map_err(|e| e.to_string())
    };
    let cases: [(&str, Result<&str, &str>); 17] = [
        ("null", Ok("a+ b+")),
        ("[]", Ok("a+ b+")),
        (
            "{}",
            Err("`prompt_order`: expected an array, found an object"),
        ),
        (
            "[1]",
            Err("`prompt_order[0]`: expected an object, found a number"),
        ),
        (
            r#"[{"character_id": 7, "order": 3}]"#,
            Err("`prompt_order[0].order`: expected an array, found a number"),
        ),
        (r#"[{"character_id": 7, "order": [5]}]"#, Ok("a+ b+")),
        (
            r#"[{"character_id": 100000, "order": [{"identifier": "b"}]}]"#,
            Ok("b+"),
        ),
        (
            r#"[{"character_id": 100000, "order": [{"identifier": "b"}]}, {"character_id": 100001, "order": [{"identifier": "a", "enabled": false}]}]"#,
            Ok("a-"),
        ),
        (
            r#"[{"character_id": 100001.0, "order": [{"identifier": "a"}]}]"#,
            Ok("a+ b+"),
        ),
        (
            r#"[{"character_id": " 100001 ", "order": [{"identifier": "b"}]}]"#,
            Ok("b+"),
        ),
        (
            r#"[{"character_id": "1000\u0030\u0031", "order": [{"identifier": "b"}]}]"#,
            Ok("b+"),
        ),
        (
            r#"[{"character_id": 100001, "order": null}, {"character_id": 100001, "order": [{"identifier": "b"}]}]"#,
            Ok("b+"),
        ),
        (
            r#"[{"character_id": 100001, "order": [7]}]"#,
            Err("`prompt_order[0].order[0]`: expected an object, found a number"),
        ),
        (
            r#"[{"character_id": 100001, "order": [{"identifier": 1}]}]"#,
            Err("`prompt_order[0].order[0].identifier`: expected a string, found a number"),
        ),
        (
            r#"[{"character_id": 100001, "order": [{}]}]"#,
            Err("`prompt_order[0].order[0].identifier`: expected a string, found nothing"),
        ),
        (
            r#"[{"character_id": 100001, "order": [{"identifier": "a", "enabled": "yes"}]}]"#,
            Err("`prompt_order[0].order[0].enabled`: expected true or false, found a string"),
        ),
        (
            r#"[{"character_id": 100001, "order": [{"identifier": "a", "identifier": "b", "enabled": true, "enabled": null}]}], "prompt_order": [{"character_id": 100001, "order": [{"identifier": "a"}]}]"#,
            Ok("a+"),
        ),
    ];
    for (order, want) in cases {
        assert_eq!(
            import(order).as_deref().map_err(|e| e.as_ref()),
            want,
            "{order}"
        );
    }
}

/// SPEC §13.2.3 / §16: a history item's `name` becomes its `name: ` prefix in the prompt,
/// verbatim; macros read the text alone; other items keep their text; the budget counts the
/// prefix.
#[test]
fn speaker_names_prefix_history_items_only() {
    let p = preset(nodes(&[
        ("main", "last: {{lastMessage}}"),
        ("chatHistory", "@"),
        ("jb", "JB"),
    ]));
    let c = ctx(json!([
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi", "name": "{{user}} <USER>"},
        {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "hello", "name": ""},
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "how are you?", "name": "Bob"},
        {"tag": "SYSTEM_CHANNEL_PROMPT", "role": "system", "text": "channel", "name": "Ignored"}
    ]));
    let out = p.compile().render(&c);
    let texts: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(
        texts,
        [
            "last: how are you?",
            "channel",
            "{{user}} <USER>: hi",
            "hello",
            "Bob: how are you?",
            "JB"
        ]
    );
    let mut words = c.clone();
    words.options.budget = stpreset::options::Budget::tokens(1000).with_counter(
        stpreset::tokens::Counter::Builtin(stpreset::tokens::Tokenizer::Words),
    );
    let counted = p.compile().render(&words).prompt_tokens().unwrap();
    let mut unnamed = words.clone();
    unnamed.items[2].name = None;
    assert_eq!(
        p.compile().render(&unnamed).prompt_tokens().unwrap() + 1,
        counted,
        "the prefix `Bob:` is one more word"
    );
}
