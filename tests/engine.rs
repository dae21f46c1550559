//! Behaviour of the template engine through the public API, rule by rule (SPEC §1–§3, §10).

use stpreset::{Context, DiagnosticKind, Limits, Template, expand};

fn ctx() -> Context {
    let mut c = Context::from_json(
        br#"{
        "user": "Alice", "char": "Tomori",
        "description": "A shrine maiden. {{user}} is her friend; {char} likes tea.",
        "personality": "kind", "persona": "Alice is a student.",
        "model": "gemini-2.5-pro", "now": "2026-11-29T17:07:00Z", "utc_offset_minutes": 480,
        "seed": 7, "chat_id": "chat-1",
        "capabilities": {"web_search": true, "image_generation": false},
        "tools": ["web_search"], "tool_families": {"url_fetch": false},
        "tool_names": {"memory_tool": "create_long_term_memory", "both": "the_name"},
        "tool_phrases": {"search_tool": "the web search tool", "both": "the phrase"},
        "globals": {"mood": "calm"},
        "items": [
          {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "{{user}}: hi", "time": "2026-11-29T15:00:00Z"},
          {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "hello {user}"}
        ]}"#,
    )
    .unwrap();
    c.options.limits = Limits::default();
    c
}

fn run(t: &str) -> String {
    expand(t, &ctx()).text
}

fn kinds(t: &str) -> Vec<DiagnosticKind> {
    expand(t, &ctx())
        .diagnostics
        .iter()
        .map(|d| d.kind)
        .collect()
}

#[test]
fn brace_runs() {
    assert_eq!(run("{{{user}}}"), "{Alice}");
    assert_eq!(run("{{setvar::t::{x}}}[{{getvar::t}}]"), "}[{x]");
}

#[test]
fn unparsable_tags_keep_their_braces_and_parse_inside() {
    assert_eq!(run("{{ }}"), "{{ }}");
    assert_eq!(run("{{#each x}}"), "{{#each x}}");
    assert_eq!(run("{{user!}}"), "{{user!}}");
    assert_eq!(run("{{!x {{user}}}}"), "{{!x Alice}}");
    assert_eq!(run("a {{user b {{char}}"), "a {{user b Tomori");
}

#[test]
fn directive_words_need_a_word_end() {
    for t in ["{{else::x}}", "{{elseif}}", "{{iffy}}"] {
        assert_eq!(run(t), t);
        assert_eq!(kinds(t), [DiagnosticKind::UnknownMacro], "{t}");
    }
    // SPEC §11.12: `{{if::x}}` opens a value-if (here unclosed, ending at the node's end).
    assert_eq!(run("{{if::x}}a"), "a");
    assert_eq!(kinds("{{if::x}}a"), [DiagnosticKind::UnclosedBlock]);
}

#[test]
fn argument_forms() {
    assert_eq!(run("[{{reverse:}}]"), "[]");
    assert_eq!(run("{{reverse :x}}"), "x:");
    assert_eq!(
        run("{{reverse abc}}|{{reverse:abc}}|{{reverse :: abc }}"),
        "cba|cba|cba"
    );
    assert_eq!(run("{{random:a::b}}"), "a::b");
    assert_eq!(run("{{setvar::k::  v }}[{{getvar:k}}]"), "[  v ]");
    assert_eq!(run("{{setvar ::k:: v}}[{{getvar k}}]"), "[ v]");
    assert_eq!(run("{{user:}}"), "{{user:}}");
    assert_eq!(kinds("{{user::x}}"), [DiagnosticKind::BadArguments]);
    assert_eq!(run("{{datetimeformat YYYY}}"), "2026");
}

#[test]
fn escapes() {
    assert_eq!(run(r"\{\{user\}\}"), "{{user}}");
    assert_eq!(run(r"a\\{b"), r"a\{b");
    assert_eq!(run(r"a\x\"), r"a\x\");
    assert_eq!(run(r"{{setvar::k::\{x\}}}{{getvar::k}}"), "{x}");
    assert_eq!(run(r"\{user\} {user}"), "{user} Alice");
    assert_eq!(run(r"{{random::a\,b}}"), "a,b");
}

#[test]
fn comments() {
    assert_eq!(
        run("a{{// x {{setvar::k::1}} {{/if}} }}b[{{getvar::k}}]"),
        "ab[]"
    );
    assert!(kinds("a{{// {{/if}} {{else}} }}b").is_empty());
    assert_eq!(run("a{{ // spaced }}b"), "ab");
    assert_eq!(
        run("a{{// never closed {{user}}"),
        "a{{// never closed Alice"
    );
}

#[test]
fn unknown_and_unsupported_macros() {
    assert_eq!(run("{{foo::{{user}}::x}}"), "{{foo::Alice::x}}");
    assert_eq!(run("{{foo:: {user} }}"), "{{foo:: Alice }}");
    assert_eq!(kinds("{{foo}}"), [DiagnosticKind::UnknownMacro]);
    // The object variable macros are answered (docs/templates.md): an absent variable's key
    // is empty; a wrong argument count stays literal.
    assert_eq!(run("{{getvarkey::a::b}}|{{notChar::x}}"), "|{{notChar::x}}");
    assert_eq!(kinds("{{setvarkey::a}}"), [DiagnosticKind::BadArguments]);
    assert_eq!(run("{{#if {{getvarkey::a}}}}T{{else}}F{{/if}}"), "F");
    assert_eq!(
        kinds("{{#if summary}}T{{/if}}"),
        [DiagnosticKind::UnknownMacro]
    );
}

#[test]
fn tag_nesting_limit() {
    let mut c = ctx();
    c.options.limits.tag_nesting = 2;
    let t = "{{reverse::{{reverse::{{user}}}}}}";
    let out = Template::compile_with(t, &c.options.limits).render(&c);
    assert_eq!(out.text, "{{user}}");
    let k: Vec<_> = out.diagnostics.iter().map(|d| d.kind).collect();
    assert_eq!(k, [DiagnosticKind::LimitReached]);
    // At the limit it renders.
    let out = Template::compile_with("{{reverse::{{user}}}}", &c.options.limits).render(&c);
    assert_eq!(out.text, "ecilA");
}

#[test]
fn block_recovery() {
    use DiagnosticKind::*;
    assert_eq!(run("A{{#if user}}B{{/if x}}C"), "AC");
    assert_eq!(kinds("A{{#if user}}B{{/if x}}C"), [MalformedBlock]);
    assert_eq!(run("A{{#if ! user}}B{{/if}}C"), "AC");
    assert_eq!(run("A{{#if user:x}}B{{/if}}C"), "AC");
    assert_eq!(run("A{{#if user x}}B{{/if}}C"), "AC");
    assert_eq!(run("A{{#if {{user}} x}}B{{/if}}C"), "AC");
    assert_eq!(run("A{{#if !{{user}}}}B{{else}}N{{/if}}C"), "ANC");
    assert_eq!(run("{{#unless !user}}U{{/unless}}"), "U");
    // One MalformedBlock however many faults; nested structure still reported.
    let k = kinds("{{#unless user x}}{{else}}{{else x}}{{else}}{{/if}}");
    assert_eq!(k, [MalformedBlock]);
    let k = kinds("{{#if}}{{else}}{{/if}}{{/unless}}");
    assert_eq!(k, [MalformedBlock, StrayCloser]);
    // Unclosed: Handlebars ends at the node boundary, TomoriBot is omitted.
    assert_eq!(run("{{#if user}}A{{#unless scenario}}B"), "AB");
    assert_eq!(
        kinds("{{#if user}}A{{#unless scenario}}B"),
        [UnclosedBlock, UnclosedBlock]
    );
    assert_eq!(run("X{{if tool:web_search}}A{{#if user}}B{{/if}}"), "X");
    // A wrong-kind closer still closes the innermost block.
    assert_eq!(run("{{#if user}}A{{#if user}}B{{/unless}}C{{/if}}D"), "ACD");
}

#[test]
fn block_nesting_limit() {
    use DiagnosticKind::*;
    let mut c = ctx();
    c.options.limits.block_nesting = 1;
    let render = |t: &str| {
        let out = Template::compile_with(t, &c.options.limits).render(&c);
        (
            out.text,
            out.diagnostics.iter().map(|d| d.kind).collect::<Vec<_>>(),
        )
    };
    let (text, k) = render("{{#if user}}{{#if user}}{{user}}{{else}}{{char}}{{/if}}{{/if}}");
    assert_eq!(text, "{{#if user}}Alice{{else}}Tomori{{/if}}");
    assert_eq!(k, [NestingLimit]);
    // Nested tags of a literal opener are not evaluated.
    let (text, _) = render("{{#if user}}{{#if {{setvar::z::1}}}}x{{/if}}{{/if}}[{{getvar::z}}]");
    assert_eq!(text, "{{#if {{setvar::z::1}}}}x{{/if}}[]");
    // Openers inside a literal block are literal too, each with its own diagnostic.
    let (text, k) = render("{{#if user}}{{if tool:x}}{{#unless a}}b{{/unless}}{{/if}}{{/if}}");
    assert_eq!(text, "{{if tool:x}}{{#unless a}}b{{/unless}}{{/if}}");
    assert_eq!(k, [NestingLimit, NestingLimit]);
    // A literal opener that never closes takes the enclosing closer; that block is unclosed.
    let (text, k) = render("{{#if user}}{{#if user}}x{{/if}}");
    assert_eq!(text, "{{#if user}}x{{/if}}");
    assert_eq!(k, [UnclosedBlock, NestingLimit]);
    // Each argument has its own block stack, counted from 0.
    let (text, _) = render("{{#if user}}{{reverse::{{#if user}}ab{{/if}}}}{{/if}}");
    assert_eq!(text, "ba");
}

#[test]
fn conditions_run_side_effects_in_order() {
    assert_eq!(
        run("{{#if {{incvar::n}}}}A{{/if}}{{#if {{incvar::n}}}}B{{/if}}[{{getvar::n}}]"),
        "AB[2]"
    );
    assert_eq!(
        run("{{setvar::f::0}}{{#if getvar::f}}T{{else}}F{{/if}}"),
        "F"
    );
    assert_eq!(
        run("{{#if getvar::{{getvar::missing}}}}T{{else}}F{{/if}}"),
        "F"
    );
    assert_eq!(run("{{#if getvar::mood}}T{{/if}}"), "");
    assert_eq!(run("{{#if getglobalvar::mood}}T{{/if}}"), "T");
}

#[test]
fn tomori_blocks_are_decided_in_pass_two() {
    let c = ctx();
    let alone = expand("{{random::a::b::c::d::e::f}}", &c).text;
    let with_dropped = expand(
        "{{if tool:absent}}{{random::1::2::3}}{{/if}}{{random::a::b::c::d::e::f}}",
        &c,
    )
    .text;
    assert_eq!(alone, with_dropped);
    assert!(kinds("{{if tool:absent}}{{summary}}{{/if}}").is_empty());
    // Declarations in the dropped branch ran in pass 1, with their diagnostics.
    let out = expand(
        "{{if tool:absent}}{{setvar::k::{{summary}}}}{{/if}}[{{getvar::k}}]",
        &c,
    );
    assert_eq!(out.text, "[{{summary}}]");
    assert_eq!(out.diagnostics.len(), 1);
    assert_eq!(
        run("{{if !tool_family:url_fetch}}Y{{/if}}{{if TOOL:Web_Search}}W{{/if}}"),
        "YW"
    );
}

#[test]
fn placeholders() {
    assert_eq!(
        run("{memory_tool}|{search_tool}|{both}|{Memory_Tool}"),
        "`create_long_term_memory`|the web search tool|`the_name`|`create_long_term_memory`"
    );
    assert_eq!(
        run("{user} {char} {bot} {User} {{memory_tool}}"),
        "Alice Tomori Tomori {User} {{memory_tool}}"
    );
    // Arguments of known macros are not literal template text.
    assert_eq!(run("{{reverse::{user}x}}"), "x}resu{");
    assert_eq!(
        run("<USER> <BOT> <CHAR> <user> <Char> {{reverse::<USER>}}"),
        "Alice Tomori Tomori Alice Tomori ecilA"
    );
}

#[test]
fn host_values_are_identity_converted() {
    assert_eq!(
        run("{{description}}"),
        "A shrine maiden. Alice is her friend; Tomori likes tea."
    );
    assert_eq!(
        run("{{lastMessage}}|{{lastUserMessage}}|{{lastCharMessage}}"),
        "hello Alice|Alice: hi|hello Alice"
    );
    assert_eq!(run("{{model}}|{{idle_duration}}"), "gemini-2.5-pro|2 hours");
}

#[test]
fn expanded_signals_count_only_surviving_body_text() {
    let c = ctx();
    let e = |t: &str| expand(t, &c).expanded;
    assert!(e("{{description}}").description);
    assert!(!e("{{#if description}}x{{/if}}").description);
    assert!(!e("{{if tool:absent}}{{description}}{{/if}}").description);
    assert!(e("{{setvar::d::{{description}}}}").description);
    assert!(!e("{{if tool:absent}}{{setvar::d::{{personality}}}}{{/if}}").personality);
    assert!(e("{{if tool:web_search}}{{setvar::d::{{personality}}}}{{/if}}").personality);
    assert!(!e("{{scenario}}").scenario, "empty values do not count");
    assert!(e("{{reverse::{{persona}}}}").persona);
    assert!(!e("{{#if getvar::{{persona}}}}{{/if}}").persona);
}

#[test]
fn trim_and_empty_nodes() {
    assert_eq!(run("  a  {{trim}}  "), "a");
    assert_eq!(run("  a  "), "  a  ");
    assert_eq!(run(" \n "), "");
    assert_eq!(run("{{if tool:absent}}{{trim}}{{/if}} a "), " a ");
    assert_eq!(run(" {{setvar::x::{{trim}}}}a "), "a");
}

#[test]
fn clock() {
    assert_eq!(
        run("{{datetimeformat::[Day] Do MMM, ddd hh:mm:ss a}}"),
        "Day 30th Nov, Mon 01:07:00 am"
    );
    let mut c = ctx();
    c.time_awareness = false;
    assert_eq!(
        expand("[{{datetimeformat::YYYY}}{{idle_duration}}{{time}}]", &c).text,
        "[]"
    );
}

#[test]
fn randomness_is_seeded_and_pick_is_stable() {
    let t = "{{random::a::b::c::d::e::f::g::h}}{{roll:1d1000}}|{{pick::a::b::c::d::e::f::g::h}}";
    let mut c = ctx();
    let first = expand(t, &c).text;
    assert_eq!(expand(t, &c).text, first);
    let mut randoms = std::collections::HashSet::new();
    let mut picks = std::collections::HashSet::new();
    for seed in 0..20 {
        c.seed = seed;
        let out = expand(t, &c).text;
        let (r, p) = out.split_once('|').unwrap();
        randoms.insert(r.to_string());
        picks.insert(p.to_string());
    }
    assert!(randoms.len() > 1, "random and roll follow the seed");
    assert_eq!(picks.len(), 1, "pick ignores the seed");
    c.chat_id = "another-chat".into();
    let others: std::collections::HashSet<_> = (0..8)
        .map(|i| {
            c.chat_id = format!("chat-{i}");
            expand(t, &c).text.split_once('|').unwrap().1.to_string()
        })
        .collect();
    assert!(others.len() > 1, "pick depends on the chat id");
}

#[test]
fn dice() {
    use DiagnosticKind::*;
    for seed in 0..50 {
        let mut c = ctx();
        c.seed = seed;
        let n: i64 = expand("{{roll:2d6+1}}", &c).text.parse().unwrap();
        assert!((3..=13).contains(&n));
    }
    assert_eq!(run("{{roll:1000d1}}"), "100");
    assert_eq!(run("{{roll:1d1+99999999}}"), "1000001");
    assert_eq!(run("{{roll:0d6-3}}"), "-3");
    assert_eq!(run("[{{roll:1d0}}]"), "[]");
    assert_eq!(kinds("{{roll:1d0}}"), [BadArguments]);
    assert_eq!(run("[{{random}}{{random::}}{{pick}}]"), "[]");
    assert!(kinds("{{random}}{{random::}}{{pick}}").is_empty());
}

#[test]
fn variables() {
    use DiagnosticKind::*;
    assert_eq!(
        run("{{incglobalvar::mood}}{{decglobalvar::g}}|{{getglobalvar::mood}}"),
        "1-1|1"
    );
    assert_eq!(run("{{setvar:: k ::v}}{{getvar::  k}}"), "v");
    assert_eq!(run("[{{getvar::}}]"), "[{{getvar::}}]");
    assert_eq!(kinds("{{getvar::}}"), [BadArguments]);
    assert_eq!(run("{{setvar::{{getvar::none}}::v}}|"), "{{setvar::::v}}|");
    assert_eq!(
        run("{{addvar::n::1}}{{addvar::n::2.5}}{{getvar::n}}"),
        "3.5"
    );
    let out = expand("{{setvar::a::1}}{{setglobalvar::g::2}}", &ctx());
    assert_eq!(out.variables.get("a").map(String::as_str), Some("1"));
    assert_eq!(out.globals.get("g").map(String::as_str), Some("2"));
    assert_eq!(out.globals.get("mood").map(String::as_str), Some("calm"));
}

#[test]
fn memory_and_work_limits() {
    use DiagnosticKind::*;
    let mut c = ctx();
    c.options.limits.variable_bytes = 4;
    let out = expand("{{setvar::a::123456}}{{getvar::a}}", &c);
    assert_eq!(out.text, "1234");
    assert_eq!(out.diagnostics[0].kind, LimitReached);

    let mut c = ctx();
    c.options.limits.work_bytes = 40;
    let out = expand(
        "{{setvar::a::0123456789}}{{getvar::a}}{{getvar::a}}{{getvar::a}}{{getvar::a}}|{{user}}",
        &c,
    );
    assert_eq!(out.text, "0123456789|");
    let limits: Vec<_> = out
        .diagnostics
        .iter()
        .filter(|d| d.kind == LimitReached)
        .collect();
    assert_eq!(limits.len(), 1);

    let mut c = ctx();
    c.options.limits.output_bytes = 5;
    let out = expand("abcdé", &c);
    assert_eq!(out.text, "abcd");
    assert_eq!(out.diagnostics[0].kind, LimitReached);
}

#[test]
fn doubling_chain_stops() {
    let mut t = String::from("{{setvar::a::xxxxxxxx}}");
    for _ in 0..40 {
        t.push_str("{{setvar::a::{{getvar::a}}{{getvar::a}}}}");
    }
    t.push_str("{{getvar::a}}");
    let out = expand(&t, &ctx());
    assert!(out.text.len() <= 1 << 20);
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == DiagnosticKind::LimitReached)
    );
}

#[test]
fn diagnostics_carry_positions() {
    let out = expand("line one\n  {{else}} and {{foo}}", &ctx());
    let d = &out.diagnostics[0];
    assert_eq!(
        (d.kind, d.span, d.line, d.column),
        (DiagnosticKind::StrayElse, Some((11, 19)), Some(2), Some(3))
    );
    assert_eq!(d.node.as_deref(), Some("template"));
    let f = &out.diagnostics[1];
    assert_eq!(
        (f.kind, f.line, f.column),
        (DiagnosticKind::UnknownMacro, Some(2), Some(16))
    );
}

#[test]
fn comment_only_detection() {
    assert!(Template::compile("{{// a}} {{trim}}\n").is_comment_only());
    assert!(!Template::compile("{{// a}} x").is_comment_only());
    assert!(!Template::compile("").is_comment_only());
}

#[test]
fn addvar_loops_spend_the_budget() {
    let mut c = ctx();
    c.options.limits.work_bytes = 1 << 16;
    let t = format!(
        "{{{{setvar::a::{}}}}}{}",
        "x".repeat(4096),
        "{{addvar::a::y}}".repeat(1000)
    );
    let out = expand(&t, &c);
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == DiagnosticKind::LimitReached)
    );
    assert!(out.variables["a"].len() < 4096 + 1000);
}

/// `expand` with a card's depth prompt in the context placed the lore, then expanded the
/// placed context, which still had the depth prompt, and so placed it again without end (a
/// stack overflow): it now expands once, and `{{charDepthPrompt}}` reads the prompt.
#[test]
fn expand_with_a_depth_prompt_places_it_once() {
    let ctx = Context::from_json(
        br#"{"char": "Sera", "char_depth_prompt": {"text": "Stay {{char}}.", "depth": 2}}"#,
    )
    .unwrap();
    let out = stpreset::expand("[{{charDepthPrompt}}]", &ctx);
    assert_eq!(out.text, "[Stay Sera.]");
}
