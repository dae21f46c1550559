//! SPEC §14 (preset settings in the request): every case of
//! `../shared/conformance/settings.json` through the library, a sample through the CLI, and the
//! rules' own tests. Skips, with a visible message, when `../shared` is not beside the checkout.

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use stpreset::{
    ChatMessage, Context, Names, Preset, PresetSettings, Role, request, request_options,
};

fn cases() -> Option<Vec<Value>> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/settings.json");
    match std::fs::read(&path) {
        Ok(bytes) => {
            let file: Value = serde_json::from_slice(&bytes).expect("vector file is JSON");
            Some(file["cases"].as_array().cloned().unwrap_or_default())
        }
        Err(_) => {
            eprintln!(
                "SKIPPED: {} not found (../shared is not beside this checkout)",
                path.display()
            );
            None
        }
    }
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
