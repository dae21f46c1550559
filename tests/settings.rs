//! SPEC §14 (preset settings in the request): every case of the public `settings.json` vectors
//! (`tests/vectors/`) through the library, a sample through the CLI, and the rules' own tests;
//! the corpus checks skip, with a visible message, when `../shared` is not beside the checkout.

/// A skip message the test harness does not capture: it shows in a plain `cargo test`.
macro_rules! skipped {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use stpreset::{
    Context, Preset, Role, provider::ChatMessage, provider::Names, provider::request,
    request_options, settings::PresetSettings,
};

fn cases() -> Option<Vec<Value>> {
    let file: Value =
        serde_json::from_slice(&support::vectors("settings.json")).expect("vector file is JSON");
    Some(file["cases"].as_array().cloned().unwrap_or_default())
}

/// JSON equality with numbers compared by value (`1` = `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The context file of a non-prompt case: its context fields, the model and the shape.
fn context_json(input: &Value) -> Value {
    let mut ctx = input.get("context").cloned().unwrap_or_else(|| json!({}));
    ctx["model"] = input["model"].clone();
    let options = ctx
        .get("provider_options")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut options = options;
    options["shape"] = input["shape"].clone();
    ctx["provider_options"] = options;
    ctx
}

fn diagnostics(d: &[stpreset::Diagnostic]) -> Value {
    d.iter()
        .map(|d| json!({"severity": d.severity(), "kind": d.kind, "message": d.message}))
        .collect()
}

/// The request without its messages part.
fn fields(body: &Value) -> Value {
    let mut body = body.clone();
    if let Value::Object(map) = &mut body {
        for key in ["messages", "system", "contents", "systemInstruction"] {
            map.remove(key);
        }
    }
    body
}

/// The roles of a request's messages.
fn roles(body: &Value) -> Value {
    let list = body
        .get("messages")
        .or_else(|| body.get("contents"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    list.iter().map(|m| m["role"].clone()).collect()
}

/// A non-prompt case through `PresetSettings::from_json`, `request_options` and `request`.
fn settings_case(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    let expect = &case["expect"];
    let parsed = Context::from_json(&serde_json::to_vec(&context_json(input)).unwrap());
    if let Some(key) = expect.get("error").and_then(Value::as_str) {
        return match parsed {
            Err(e) if e.to_string().contains(key) => Ok(()),
            Err(e) => Err(format!("error does not name `{key}`: {e}")),
            Ok(_) => Err("context accepted".into()),
        };
    }
    let ctx = parsed.map_err(|e| format!("bad context: {e}"))?;
    let (settings, diags) = PresetSettings::from_json(&input["preset"]);
    let got = diagnostics(&diags);
    if got != expect["diagnostics"] {
        return Err(format!("diagnostics {got} != {}", expect["diagnostics"]));
    }
    let (options, effective) = request_options(&settings, &ctx);
    let effective = serde_json::to_value(&effective).unwrap();
    if !same(&effective, &expect["effective"]) {
        return Err(format!("effective {effective} != {}", expect["effective"]));
    }
    let fixed = [
        ChatMessage::new(Role::System, "You are Char."),
        ChatMessage::new(Role::User, "User: hi"),
    ];
    let names = Names {
        user: "User".into(),
        char: "Char".into(),
        group: Vec::new(),
    };
    let (body, _) = request(&fixed, &options, &names, &ctx.model);
    if let Some(want) = expect.get("request")
        && !same(&fields(&body), want)
    {
        return Err(format!("request {} != {want}", fields(&body)));
    }
    if let Some(want) = expect.get("roles")
        && roles(&body) != *want
    {
        return Err(format!("roles {} != {want}", roles(&body)));
    }
    Ok(())
}

/// A prompt case: the preset rendered with the context, messages or the request's messages.
fn prompt_case(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    let expect = &case["expect"];
    let preset = Preset::from_json(&serde_json::to_vec(&input["preset"]).unwrap())
        .map_err(|e| format!("preset: {e}"))?;
    let ctx = Context::from_json(&serde_json::to_vec(&input["context"]).unwrap())
        .map_err(|e| format!("context: {e}"))?;
    let out = preset.compile().render(&ctx);
    if let Some(want) = expect.get("messages") {
        let got: Value = out
            .messages
            .iter()
            .map(|m| {
                let role = serde_json::to_value(m.role).unwrap();
                json!([role, m.text()])
            })
            .collect();
        if got != *want {
            return Err(format!("messages {got} != {want}"));
        }
    }
    if let Some(want) = expect.get("request") {
        let (body, _) = out.to_request(&ctx.provider_options);
        if !same(&body, want) {
            return Err(format!("request {body} != {want}"));
        }
    }
    Ok(())
}

#[test]
fn every_settings_vector_passes() {
    let Some(cases) = cases() else { return };
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        let result = if case["category"] == "prompt" {
            prompt_case(case)
        } else {
            settings_case(case)
        };
        if let Err(e) = result {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} settings cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    eprintln!("{} settings vectors pass", cases.len());
}

/// A non-prompt case through `stpreset render --format json` with its preset given a main
/// node and a history: request fields, effective options, the settings' warnings, exit codes.
fn cli_case(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    let expect = &case["expect"];
    let mut preset = input["preset"].clone();
    preset["prompts"] = json!([
        {"identifier": "main", "content": "You are {{char}}."},
        {"identifier": "chatHistory", "marker": true}
    ]);
    let mut ctx = context_json(input);
    ctx["user"] = json!("User");
    ctx["char"] = json!("Char");
    ctx["items"] = json!([{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "User: hi"}]);
    let name = case["name"]
        .as_str()
        .unwrap_or("case")
        .replace(['/', ' ', ':'], "_");
    let p = support::temp(
        &format!("{name}.preset.json"),
        preset.to_string().as_bytes(),
    );
    let c = support::temp(&format!("{name}.ctx.json"), ctx.to_string().as_bytes());
    let out = support::stpreset(
        &[
            "render",
            support::arg(&p),
            "--context",
            support::arg(&c),
            "--format",
            "json",
        ],
        None,
    );
    if let Some(key) = expect.get("error").and_then(Value::as_str) {
        let stderr = support::text(&out.stderr);
        return match out.status.code() {
            Some(1) if stderr.contains(key) => Ok(()),
            code => Err(format!("exit {code:?}, stderr {stderr:?} (wanted `{key}`)")),
        };
    }
    if !out.status.success() {
        return Err(format!(
            "exit {:?}: {}",
            out.status,
            support::text(&out.stderr)
        ));
    }
    let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    if !same(&doc["effective"], &expect["effective"]) {
        return Err(format!(
            "effective {} != {}",
            doc["effective"], expect["effective"]
        ));
    }
    let warnings: Value = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "PresetSettingIgnored")
        .map(|d| json!({"severity": d["severity"], "kind": d["kind"], "message": d["message"]}))
        .collect();
    if warnings != expect["diagnostics"] {
        return Err(format!(
            "diagnostics {warnings} != {}",
            expect["diagnostics"]
        ));
    }
    if let Some(want) = expect.get("request")
        && !same(&fields(&doc["request"]), want)
    {
        return Err(format!("request {} != {want}", fields(&doc["request"])));
    }
    Ok(())
}

#[test]
fn a_sample_of_the_vectors_through_the_cli() {
    let Some(cases) = cases() else { return };
    let sample: Vec<&Value> = cases
        .iter()
        .filter(|c| c["category"] != "prompt")
        .enumerate()
        .filter(|(i, c)| i % 4 == 0 || c["category"] == "corpus" || c["category"] == "error")
        .map(|(_, c)| c)
        .collect();
    let failures: Vec<String> = sample
        .iter()
        .filter_map(|c| cli_case(c).err().map(|e| format!("{}: {e}", c["name"])))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{} settings vectors pass through the CLI", sample.len());
}

fn render_json(preset: Value, ctx: Value) -> (Value, Value) {
    let preset = Preset::from_json(preset.to_string().as_bytes()).unwrap();
    let ctx = Context::from_json(ctx.to_string().as_bytes()).unwrap();
    let out = preset.compile().render(&ctx);
    let messages: Value = out
        .messages
        .iter()
        .map(|m| json!([serde_json::to_value(m.role).unwrap(), m.text(), m.source]))
        .collect();
    let doc: Value = serde_json::from_str(&out.to_json()).unwrap();
    (messages, doc)
}

fn walk(order: &[&str]) -> Value {
    let prompts: Vec<Value> = order
        .iter()
        .map(|id| match *id {
            "main" => json!({"identifier": "main", "content": "MAIN"}),
            id => json!({"identifier": id, "marker": true}),
        })
        .collect();
    json!({ "prompts": prompts })
}

#[test]
fn a_personality_format_sees_the_items_and_suppresses_nothing() {
    let mut preset = walk(&["main", "charPersonality", "chatHistory"]);
    preset["personality_format"] = json!("[{{char}}: {{personality}}]");
    let ctx = json!({"char": "Tomori", "personality": "the context's, unused",
        "items": [{"tag": "SYSTEM_PERSONALITY", "role": "system", "text": "kind to {{user}}"},
                  {"tag": "SYSTEM_PERSONALITY", "role": "system", "text": "witty"}]});
    let (messages, _) = render_json(preset.clone(), ctx);
    assert_eq!(
        messages,
        json!([["system", "MAIN", {"node": "main"}],
               ["system", "[Tomori: kind to User\nwitty]", {"setting": "personality_format"}]])
    );
    // No personality items: the marker emits nothing, the format is not used.
    let (messages, _) = render_json(preset, json!({"personality": "kind"}));
    assert_eq!(messages, json!([["system", "MAIN", {"node": "main"}]]));
}

#[test]
fn a_format_of_many_placeholders_stops_at_the_output_limit() {
    let mut preset = walk(&["main", "worldInfoBefore", "chatHistory"]);
    preset["wi_format"] = json!("{0}".repeat(200_000));
    let lore = "x".repeat(100_000);
    let ctx =
        json!({"items": [{"tag": "KNOWLEDGE_LOREBOOK_BEFORE", "role": "system", "text": lore}]});
    let (messages, doc) = render_json(preset, ctx);
    // 20 GB if built whole; the output limit (8 MiB) keeps its share and says so.
    let lore_len = messages[1][1].as_str().unwrap().len();
    assert!(lore_len <= 8 << 20, "{lore_len}");
    assert!(
        doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["kind"] == "LimitReached")
    );
}

#[test]
fn setting_templates_run_declarations_name_their_node_and_follow_edits() {
    let mut preset = walk(&["main", "chatHistory"]);
    preset["new_chat_prompt"] = json!("{{setvar::opened::yes}}[Start, {{char}}]{{#if x}}");
    preset["new_group_chat_prompt"] = json!("{{setvar::group_prompt::ran}}");
    let ctx = json!({"char": "Tomori"});
    let (messages, doc) = render_json(preset.clone(), ctx);
    assert_eq!(
        messages[1],
        json!(["system", "[Start, Tomori]", {"setting": "new_chat_prompt"}])
    );
    // Both ran (used or not), in table order.
    assert_eq!(
        doc["variables"],
        json!({"group_prompt": "ran", "opened": "yes"})
    );
    let unclosed = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "UnclosedBlock")
        .expect("the template's own diagnostic");
    assert_eq!(unclosed["node"], "new_chat_prompt");
    // A context edit replaces the template for this render.
    let ctx = json!({"char": "Tomori", "preset_settings": {"new_chat_prompt": "Hello {{char}}"}});
    let (messages, _) = render_json(preset.clone(), ctx);
    assert_eq!(messages[1][1], "Hello Tomori");
    let ctx = json!({"preset_settings": {"new_chat_prompt": null}});
    let (messages, _) = render_json(preset, ctx);
    assert_eq!(messages.as_array().unwrap().len(), 1);
}

#[test]
fn a_preset_alone_gives_a_budget_and_a_host_null_removes_it() {
    let mut preset = walk(&["main", "chatHistory"]);
    preset["openai_max_context"] = json!(600);
    preset["openai_max_tokens"] = json!(500);
    let items: Vec<Value> = (0..20)
        .map(|i| json!({"tag": "DIALOGUE_HISTORY", "role": "user", "text": format!("message {i} with a few words")}))
        .collect();
    let ctx = json!({"tokenizer": "words", "items": items});
    let (messages, doc) = render_json(preset.clone(), ctx.clone());
    assert!(messages.as_array().unwrap().len() < 21);
    assert_eq!(doc["effective"]["reserve_tokens"], 500);
    let trimmed = &doc["diagnostics"].as_array().unwrap()[0];
    assert_eq!(trimmed["kind"], "HistoryTrimmed");
    let mut ctx = ctx;
    ctx["max_context_tokens"] = Value::Null;
    let (messages, doc) = render_json(preset, ctx);
    assert_eq!(messages.as_array().unwrap().len(), 21);
    assert_eq!(doc["prompt_tokens"], Value::Null);
}

#[test]
fn stored_presets_keep_their_settings() {
    let mut preset = walk(&["main", "chatHistory"]);
    preset["temperature"] = json!("0.5");
    preset["top_k"] = json!(true);
    let store = stpreset::PresetStore::open_in_memory().unwrap();
    let id = store.import(7, "p", preset.to_string().as_bytes()).unwrap();
    store.activate(7, id).unwrap();
    let active = store.active(7).unwrap().unwrap();
    let ctx = Context::default();
    let out = active.render(&ctx);
    assert_eq!(out.effective_options().max_context_tokens, None);
    let (body, _) = out.to_request(&stpreset::ProviderOptions::default());
    assert_eq!(body["temperature"], 0.5);
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.message == "preset setting top_k ignored: expected an integer")
    );
}

/// Every corpus preset's request for each shape can be POSTed as it is: the model (OpenAI,
/// Anthropic), max tokens and, where the model takes them, sampling fields.
#[test]
fn corpus_requests_are_complete() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/presets");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        skipped!("SKIPPED: {} not found", dir.display());
        return;
    };
    let mut checked = 0;
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let preset = Preset::from_json(&std::fs::read(&path).unwrap()).unwrap();
        let compiled = preset.compile();
        let s = preset.settings();
        for (shape, model) in [
            ("openai", "gpt-4.1"),
            ("anthropic", "claude-3-5-sonnet-20241022"),
            ("google", "gemini-2.0-flash"),
        ] {
            let ctx = json!({"model": model, "max_context_tokens": 32000,
                "provider_options": {"shape": shape},
                "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]});
            let ctx = Context::from_json(ctx.to_string().as_bytes()).unwrap();
            let (body, _) = compiled.render(&ctx).to_request(&ctx.provider_options);
            let name = format!("{} / {shape}", path.display());
            let (max, temperature) = match shape {
                "google" => (
                    &body["generationConfig"]["maxOutputTokens"],
                    &body["generationConfig"]["temperature"],
                ),
                _ => (&body["max_tokens"], &body["temperature"]),
            };
            if shape != "google" {
                assert_eq!(body["model"], model, "{name}");
            }
            if shape == "anthropic" || s.openai_max_tokens.is_some() {
                assert!(max.is_number(), "{name}: no max tokens");
            }
            if let Some(t) = s.temperature {
                let cap = if shape == "anthropic" { 1.0 } else { 2.0 };
                assert_eq!(temperature.as_f64(), Some(t.min(cap)), "{name}");
            }
            checked += 1;
        }
    }
    eprintln!("{checked} corpus requests are complete");
}
