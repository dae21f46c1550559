//! SillyTavern fidelity rules that apply to every template (SPEC §11.14) and the catalog
//! additions of §11.6 that need no new syntax, through the public API.

use stpreset::{Context, DiagnosticKind, Preset, expand};

fn ctx(extra: &str) -> Context {
    let json = format!(
        r#"{{"user": "Alice", "char": "Tomori", "now": "2026-11-29T17:07:00Z",
            "utc_offset_minutes": 480 {extra}}}"#
    );
    Context::from_json(json.as_bytes()).expect("test context")
}

fn run(t: &str, c: &Context) -> String {
    expand(t, c).text
}

fn kinds(t: &str, c: &Context) -> Vec<DiagnosticKind> {
    expand(t, c).diagnostics.iter().map(|d| d.kind).collect()
}

#[test]
fn compatibility_placeholders_in_any_case() {
    let c = ctx("");
    assert_eq!(
        run(
            "<user> <User> <BOT> <char> <GROUP> <charIfNotGroup> <users>",
            &c
        ),
        "Alice Alice Tomori Tomori Tomori Tomori <users>"
    );
    let g = ctx(r#", "group": ["Tomori", "Kaede"]"#);
    assert_eq!(
        run("<group>|<CHARIFNOTGROUP>", &g),
        "Tomori, Kaede|Tomori, Kaede"
    );
}

#[test]
fn group_macros_answer_with_and_without_a_group() {
    let solo = ctx("");
    assert_eq!(
        run(
            "{{group}}|{{charIfNotGroup}}|{{groupNotMuted}}|{{notChar}}",
            &solo
        ),
        "Tomori|Tomori|Tomori|Alice"
    );
    assert!(kinds("{{group}}{{notChar}}", &solo).is_empty());
    let g = ctx(r#", "group": ["Tomori", "Kaede", "Rin"], "group_muted": ["Rin"]"#);
    assert_eq!(
        run("{{group}}|{{groupNotMuted}}|{{notChar}}", &g),
        "Tomori, Kaede, Rin|Tomori, Kaede|Kaede"
    );
    let only_char = ctx(r#", "group": ["Tomori"]"#);
    assert_eq!(run("[{{notChar}}]", &only_char), "[]");
}

#[test]
fn card_overrides_are_host_values() {
    let c = ctx(r#", "char_prompt": "Be {{user}}'s guide.", "char_instruction": "Stay brief.""#);
    assert_eq!(
        run("{{charPrompt}}|{{charInstruction}}|{{charJailbreak}}", &c),
        "Be Alice's guide.|Stay brief.|Stay brief."
    );
    assert_eq!(run("[{{charPrompt}}]", &ctx("")), "[]");
    assert_eq!(kinds("{{original}}", &c), [DiagnosticKind::UnknownMacro]);
}

#[test]
fn idle_duration_reads_like_sillytavern() {
    let at = |time: &str| {
        ctx(&format!(
            r#", "items": [{{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi", "time": "{time}"}}]"#
        ))
    };
    assert_eq!(
        run("{{idle_duration}}", &at("2026-11-29T17:06:30Z")),
        "a few seconds"
    );
    assert_eq!(
        run("{{idleDuration}}", &at("2026-11-29T16:07:00Z")),
        "an hour"
    );
    assert_eq!(
        run("{{idle_duration}}", &at("2026-11-29T14:07:00Z")),
        "3 hours"
    );
    assert_eq!(
        run("{{idle_duration}}", &at("2026-11-28T17:07:00Z")),
        "a day"
    );
    assert_eq!(
        run("{{idle_duration}}", &at("2026-11-30T17:07:00Z")),
        "just now"
    );
    assert_eq!(run("{{idle_duration}}", &ctx("")), "just now");
}

#[test]
fn hasvar_and_deletevar() {
    let c = ctx("");
    // Body reads see the final map (SPEC §11.11.1): deleted by then.
    assert_eq!(
        run(
            "{{setvar::v::}}{{hasvar::v}}{{deletevar::v}}{{hasvar::v}}",
            &c
        ),
        "falsefalse"
    );
    assert_eq!(
        run("{{setvar::v::}}{{varexists::v}} {{hasvar::w}}", &c),
        "true false"
    );
    assert_eq!(
        run(
            "{{setglobalvar::g::1}}{{flushglobalvar::g}}[{{getglobalvar::g}}]",
            &c
        ),
        "[]"
    );
    // A condition reads the variables so far (pass 1).
    assert_eq!(
        run(
            "{{setvar::v::x}}{{#if {{hasvar::v}}}}yes{{/if}}{{deletevar::v}}",
            &c
        ),
        "yes"
    );
    assert_eq!(kinds("{{hasvar}}", &c), [DiagnosticKind::BadArguments]);
    // A deleted value no longer counts toward the caps.
    let mut small = ctx("");
    small.options.limits.variables_total_bytes = 4;
    assert!(
        kinds(
            "{{setvar::a::1234}}{{deletevar::a}}{{setvar::b::1234}}",
            &small
        )
        .is_empty()
    );
}

#[test]
fn space_newline_and_time_at_utc_offsets() {
    let c = ctx("");
    assert_eq!(run("a{{space}}b{{space::3}}c{{space::}}d", &c), "a b   cd");
    assert_eq!(run("a{{newline::2}}b{{newline}}c", &c), "a\n\nb\nc");
    assert_eq!(run("{{space::1001}}", &c), "{{space::1001}}");
    assert_eq!(kinds("{{newline::x}}", &c), [DiagnosticKind::BadArguments]);
    // 17:07 UTC; the context's +8 h offset is ignored by an explicit `UTC±N`.
    assert_eq!(run("{{time}}", &c), "1:07 AM");
    assert_eq!(
        run("{{time::UTC+2}}|{{time::utc-5}}|{{time:: UTC+0 }}", &c),
        "7:07 PM|12:07 PM|5:07 PM"
    );
    assert_eq!(run("{{time::UTC+16}}", &c), "{{time::UTC+16}}");
    assert_eq!(kinds("{{time::GMT+1}}", &c), [DiagnosticKind::BadArguments]);
    let mut off = ctx("");
    off.time_awareness = false;
    assert_eq!(run("[{{time::UTC+2}}]", &off), "[]");
}

#[test]
fn unclosed_tags_are_reported() {
    let c = ctx("");
    assert_eq!(run("{{user}'s hat", &c), "{{user}'s hat");
    let out = expand("ok\n{{user}'s {{getvar::x}", &c);
    let unclosed: Vec<_> = out
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::UnclosedTag)
        .map(|d| (d.line, d.column))
        .collect();
    assert_eq!(unclosed, [(Some(2), Some(1)), (Some(2), Some(11))]);
    // A bare `{{` is no typo of a macro: silent.
    assert!(kinds("{{ } {{{", &c).is_empty());
    // Audit sees it too.
    let p = Preset::from_json(br#"{"prompts": [{"identifier": "a", "content": "{{trim}"}]}"#)
        .expect("preset");
    let audit: Vec<_> = p.audit().iter().map(|d| d.kind).collect();
    assert_eq!(audit, [DiagnosticKind::UnclosedTag]);
}

#[test]
fn chat_variables_accumulate_across_turns() {
    let p = Preset::from_json(
        br#"{"prompts": [{"identifier": "main", "content": "turn {{incvar::turn}}"}]}"#,
    )
    .expect("preset")
    .compile();
    let mut c = ctx(r#", "variables": {"turn": "41", "keep": "me"}"#);
    // The result borrows the context: a turn keeps what the next one needs and lets it go.
    c.variables = {
        let first = p.render(&c);
        assert_eq!(first.messages[0].text(), "turn 42");
        assert_eq!(first.variables.get("turn").map(String::as_str), Some("42"));
        assert_eq!(first.variables.get("keep").map(String::as_str), Some("me"));
        first.variables
    };
    assert_eq!(p.render(&c).messages[0].text(), "turn 43");
    let err = Context::from_json(br#"{"variables": {"n": 1}}"#).expect_err("strings only");
    assert!(
        err.to_string().contains("variables") || err.to_string().contains("string"),
        "{err}"
    );
}

#[test]
fn legacy_time_utc_tag() {
    let c = ctx("");
    assert_eq!(run("{{time_UTC+2}}|{{TIME_utc-5}}", &c), "7:07 PM|12:07 PM");
    // Only the exact shape: whitespace anywhere leaves an unparsable tag, as before.
    for literal in [
        "{{ time_UTC+2}}",
        "{{time_UTC+2 }}",
        "{{time_UTC+}}",
        "{{time_UTC2}}",
    ] {
        assert_eq!(run(literal, &c), literal);
    }
    assert_eq!(run("{{time_UTC+16}}", &c), "{{time_UTC+16}}");
    let out = expand("{{time_UTC+16}}", &c);
    assert_eq!(out.diagnostics.len(), 1);
    assert!(
        out.diagnostics[0].message.contains("at most 15"),
        "{:?}",
        out.diagnostics
    );
    assert_eq!(run("{{reverse::{{time_UTC+0}}}}", &c), "MP 70:5");
}

#[test]
fn flags_are_accepted_and_reported() {
    let c = ctx("");
    assert_eq!(
        run("{{!reverse::hello}}|{{#user}}|{{~ ? .a = 1}}{{.a}}", &c),
        "olleh|Alice|1"
    );
    let flagged = kinds("{{!reverse::hello}}{{#user}}{{> .b}}", &c);
    assert_eq!(
        flagged,
        [DiagnosticKind::IgnoredFlag, DiagnosticKind::IgnoredFlag]
    );
    assert_eq!(run("{{!x {{user}}}}", &c), "{{!x Alice}}");
    assert_eq!(kinds("{{!x}}", &c), [DiagnosticKind::UnknownMacro]);
    // A flag run before a directive keyword is no opener.
    assert_eq!(run("{{# if x}}a", &c), "{{# if x}}a");
    // An audit sees flags in untaken branches too.
    let p = Preset::from_json(
        br#"{"prompts": [{"identifier": "a", "content": "{{#if x}}{{?time}}{{/if}}"}]}"#,
    )
    .expect("preset");
    assert!(
        p.audit()
            .iter()
            .any(|d| d.kind == DiagnosticKind::IgnoredFlag)
    );
}

#[test]
fn inline_if_conditions_end_at_their_own_separator() {
    let c = ctx(r#", "variables": {"n": "3"}, "globals": {"g": "x"}"#);
    for (t, want) in [
        ("{{if::.n::x}}", "x"),
        ("{{if::!.n::x}}", ""),
        ("{{if::.n == 3::x}}", "x"),
        ("{{if::.n != 3::x{{else}}y}}", "y"),
        ("{{if::$g::x}}", "x"),
        ("{{if::.a ?? 0::x{{else}}y}}", "y"),
        ("{{if::!.a ?? 0::x{{else}}y}}", "x"),
        ("{{if::.a = 0::x{{else}}y}}|{{.a}}", "y|0"),
        // `getvar` bare is literal text (true); `f` is THEN.
        ("{{if::getvar::f}}", "f"),
    ] {
        let out = expand(t, &c);
        assert_eq!(out.text, want, "{t}");
        assert!(
            out.diagnostics
                .iter()
                .all(|d| d.kind != DiagnosticKind::StrayElse),
            "{t}: {:?}",
            out.diagnostics
        );
    }
}

#[test]
fn nested_inline_ifs_with_shorthand_conditions_stay_linear() {
    // Each level once took its THEN into the condition too: the tree doubled per level (a
    // 563-byte preset needed 11 GB). 60 levels, 100 times, must be instant and exact.
    let src = format!("{}x{}", "{{if::.a ?? 1::".repeat(60), "}}".repeat(60)).repeat(100);
    assert_eq!(run(&src, &ctx("")), "x".repeat(100));
    let json = serde_json::json!({"prompts": [{"identifier": "a", "content": src}]});
    let p = Preset::from_json(json.to_string().as_bytes()).expect("preset");
    assert!(p.audit().is_empty());
}

#[test]
fn bad_declarations_in_dropped_tomori_branches_still_report() {
    // SPEC §2.1.4 / issue 9 item 9: pass 1 runs declarations of both TomoriBot branches, so a
    // wrong argument count is reported there even when the host drops the branch; once only.
    let c = ctx(r#", "capabilities": {"image_generation": false, "web_search": true}"#);
    for (t, text) in [
        (
            "{{if capability:image_generation}}{{setvar::}}{{/if}}x",
            "x",
        ),
        (
            "{{if capability:web_search}}{{setvar::}}{{/if}}x",
            "{{setvar::}}x",
        ),
        ("{{incvar}}", "{{incvar}}"),
    ] {
        let out = expand(t, &c);
        assert_eq!(out.text, text, "{t}");
        let bad = out
            .diagnostics
            .iter()
            .filter(|d| d.kind == DiagnosticKind::BadArguments)
            .count();
        assert_eq!(bad, 1, "{t}: {:?}", out.diagnostics);
    }
}
