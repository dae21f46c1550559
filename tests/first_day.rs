//! A bot's first day (issue 39). Macros the host supplies (the context's `macros` and
//! `MapHost::set_macro`): their values are data, the catalog always wins, and they are charged
//! like any output. One render a turn: the request document carries the lore state.

use serde_json::json;
use stpreset::{Context, DiagnosticKind, Preset};

fn ctx(extra: serde_json::Value) -> Context {
    let mut doc = json!({"user": "Alice", "char": "Sera",
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]});
    doc.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    Context::from_json(doc.to_string().as_bytes()).unwrap()
}

fn preset(content: &str) -> stpreset::CompiledPreset {
    Preset::from_json(
        json!({"prompts": [{"identifier": "main", "content": content},
            {"identifier": "chatHistory", "marker": true}]})
        .to_string()
        .as_bytes(),
    )
    .unwrap()
    .compile()
}

fn main_text(p: &stpreset::CompiledPreset, c: &Context) -> (String, Vec<DiagnosticKind>) {
    let out = p.render(c);
    (
        out.messages[0].text().into_owned(),
        out.diagnostics.iter().map(|d| d.kind).collect(),
    )
}

#[test]
fn host_values_fill_their_macros_in_both_layouts() {
    let p = preset("[{{summary}}|{{Summary::ignored}}|{{ long_term_memory }}|{{sim_tracker}}]");
    for layout in ["seed", "sillytavern"] {
        let c = ctx(json!({"layout": layout,
            "macros": {"summary": "They met. {{user}}", "LONG_TERM_MEMORY": "LTM"}}));
        let (text, kinds) = main_text(&p, &c);
        // The value is data: `{{user}}` in it stays as written.
        assert_eq!(
            text, "[They met. {{user}}|They met. {{user}}|LTM|{{sim_tracker}}]",
            "{layout}"
        );
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == DiagnosticKind::UnknownMacro)
                .count(),
            1,
            "{layout}: only the third-party macro without a value"
        );
    }
    let third = preset("{{sim_tracker}}");
    let plain = ctx(json!({}));
    let out = third.render(&plain);
    let note = out
        .diagnostics
        .iter()
        .find(|d| d.kind == DiagnosticKind::UnknownMacro)
        .unwrap();
    assert!(note.message.contains("`macros`"), "{}", note.message);
}

#[test]
fn stock_extension_macros_keep_their_fresh_install_values_until_the_host_gives_one() {
    let p = preset("[{{summary}}{{reasoningPrefix}}]");
    let st = |macros: serde_json::Value| {
        main_text(&p, &ctx(json!({"layout": "sillytavern", "macros": macros}))).0
    };
    assert_eq!(st(json!({})), "[<think>]");
    assert_eq!(
        st(json!({"reasoningPrefix": "<r>", "summary": "S"})),
        "[S<r>]"
    );
}

#[test]
fn a_catalog_macro_is_never_replaced() {
    let p = preset("{{user}} {{char}}");
    let c = ctx(json!({"macros": {"user": "Mallory", "Char": "X", "summary": "fine"}}));
    let (text, kinds) = main_text(&p, &c);
    assert_eq!(text, "Alice Sera");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == DiagnosticKind::MacroShadowed)
            .count(),
        2
    );
}

#[test]
fn host_values_are_charged_to_the_render() {
    let big = "m".repeat(100_000);
    let p = preset(&"{{summary}}".repeat(100));
    let mut c = ctx(json!({"macros": {"summary": big}}));
    c.options.limits.work_bytes = 1_000_000;
    let out = p.render(&c);
    assert!(out.messages[0].len() <= 1_000_000);
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == DiagnosticKind::LimitReached)
    );
    // Through the render's work budget too.
    let mut c = ctx(json!({"macros": {"summary": "m".repeat(100_000)},
        "limits": {"render_work": 500_000}}));
    c.options.limits.work_bytes = 64 << 20;
    let out = p.render(&c);
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == DiagnosticKind::WorkLimit)
    );
}

#[test]
fn a_regex_script_sees_a_changed_host_value() {
    let p = Preset::from_json(
        json!({"prompts": [{"identifier": "chatHistory", "marker": true}],
            "extensions": {"regex_scripts": [{"findRegex": "/hi/g", "replaceString": "{{summary}}",
                "placement": [1], "promptOnly": true}]}})
        .to_string()
        .as_bytes(),
    )
    .unwrap()
    .compile();
    for value in ["one", "two", "one"] {
        let c = ctx(json!({"allow_preset_regex": true, "macros": {"summary": value}}));
        let out = p.render(&c);
        assert_eq!(
            out.messages[0].text(),
            value,
            "the regex cache keys on host macros"
        );
    }
}

#[test]
fn the_library_sets_host_macros_too() {
    let mut c = ctx(json!({}));
    c.host.set_macro("NemoLore", "remembered");
    assert_eq!(stpreset::expand("{{nemolore}}", &c).text, "remembered");
}

/// Issue 39: the request document carries the World Info state, so a bot renders once a turn.
#[test]
fn the_request_document_carries_the_lore_state() {
    let p = preset("{{summary}}");
    let c = ctx(
        json!({"position": 1, "lorebooks": [{"name": "w", "entries": {
        "0": {"key": ["hi"], "content": "Lore.", "sticky": 2}}}]}),
    );
    let out = p.render(&c);
    let doc: serde_json::Value =
        serde_json::from_str(&out.to_request_json(&c.provider_options)).unwrap();
    assert_eq!(doc["wi_state"]["effects"][0]["entry"], "w.0");
    let plain = ctx(json!({}));
    let doc: serde_json::Value =
        serde_json::from_str(&p.render(&plain).to_request_json(&plain.provider_options)).unwrap();
    assert!(doc.get("wi_state").is_none());
}

/// The host's macro callback: asked for names the catalog and the context's `macros` lack,
/// once per call text per render, with the arguments as written.
#[test]
fn a_macro_callback_answers_what_nothing_else_does() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut c = ctx(json!({"macros": {"summary": "S"}}));
    {
        let (calls, seen) = (calls.clone(), seen.clone());
        c.host.set_macro_fn(move |name, args| {
            calls.fetch_add(1, Ordering::SeqCst);
            seen.lock()
                .unwrap()
                .push(format!("{name}:{}", args.join("|")));
            (name != "nothing").then(|| format!("<{name} {}>", args.len()))
        });
    }
    let p = preset("{{memory::recent::5}} {{memory::recent::5}} {{summary}} {{user}} {{nothing}}");
    let (text, kinds) = main_text(&p, &c);
    assert_eq!(text, "<memory 2> <memory 2> S Alice {{nothing}}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "{:?}",
        seen.lock().unwrap()
    );
    assert_eq!(*seen.lock().unwrap(), ["memory:recent|5", "nothing:"]);
    assert!(kinds.contains(&DiagnosticKind::UnknownMacro));
    // Each render asks again.
    main_text(&p, &c);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[test]
fn a_failing_or_greedy_callback_never_takes_the_render_down() {
    let mut c = ctx(json!({"limits": {"render_work": 1_000_000}}));
    c.host.set_macro_fn(|name, _| match name {
        "boom" => panic!("the bot's callback failed"),
        _ => Some("x".repeat(10_000_000)),
    });
    let p = preset("a {{boom}} b {{huge}} c");
    let out = p.render(&c);
    let text = out.messages[0].text().into_owned();
    assert!(text.starts_with("a {{boom}} b "), "{text}");
    assert!(text.len() < 1_100_000, "{}", text.len());
    let kinds: Vec<_> = out.diagnostics.iter().map(|d| d.kind).collect();
    assert!(
        kinds.contains(&DiagnosticKind::HostMacroFailed),
        "{kinds:?}"
    );
    assert!(kinds.contains(&DiagnosticKind::WorkLimit), "{kinds:?}");
}

#[test]
fn regex_scripts_see_each_callback_answer() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let p = Preset::from_json(
        json!({"prompts": [{"identifier": "chatHistory", "marker": true}],
            "extensions": {"regex_scripts": [{"findRegex": "/hi/g", "replaceString": "{{turn}}",
                "placement": [1], "promptOnly": true}]}})
        .to_string()
        .as_bytes(),
    )
    .unwrap()
    .compile();
    let n = Arc::new(AtomicUsize::new(0));
    let mut c = ctx(json!({"allow_preset_regex": true}));
    let counter = n.clone();
    c.host
        .set_macro_fn(move |_, _| Some(counter.fetch_add(1, Ordering::SeqCst).to_string()));
    let first = p.render(&c).messages[0].text().into_owned();
    let second = p.render(&c).messages[0].text().into_owned();
    assert_ne!(first, second, "no cached result while a callback is set");
}
