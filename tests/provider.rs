//! SPEC §12 through the library: the public `provider.json` vectors (`tests/vectors/`):
//! post-processing and shapes (`convert`), the history budget (`Budget::apply`),
//! both in a pipeline, and option errors (`Context::from_json`).

mod support;

use serde_json::{Map, Value, json};
use stpreset::{
    Context, Message, Role, Source, Tag, provider::ChatMessage, provider::Names, provider::convert,
};

fn cases() -> Option<Vec<Value>> {
    let doc: Value = serde_json::from_slice(&support::vectors("provider.json")).expect("json");
    Some(doc["cases"].as_array().expect("cases").clone())
}

/// The case's options as a context file: names, model and budget fields at the top, the rest
/// under `provider_options`.
fn context_json(options: &Value) -> Value {
    let mut ctx = Map::new();
    let mut provider = Map::new();
    for (k, v) in options.as_object().into_iter().flatten() {
        match k.as_str() {
            "names" => {
                for (nk, nv) in v.as_object().into_iter().flatten() {
                    ctx.insert(nk.clone(), nv.clone());
                }
            }
            "model" | "tokenizer" | "max_context_tokens" | "reserve_tokens" => {
                ctx.insert(k.clone(), v.clone());
            }
            _ => {
                provider.insert(k.clone(), v.clone());
            }
        }
    }
    if !provider.is_empty() {
        ctx.insert("provider_options".into(), Value::Object(provider));
    }
    Value::Object(ctx)
}

fn role(v: &Value) -> Role {
    serde_json::from_value(v.clone()).expect("role")
}

fn text(m: &Value) -> String {
    match m.get("parts") {
        Some(parts) => parts
            .as_array()
            .expect("parts")
            .iter()
            .map(|p| p.as_str().expect("part"))
            .collect(),
        None => m["text"].as_str().unwrap_or("").to_string(),
    }
}

fn source(m: &Value) -> Source {
    match m.get("source") {
        Some(s) if s.get("node").is_some() => Source::Node(s["node"].as_str().unwrap().into()),
        Some(s) if s["tag"] == "SAMPLE_SEPARATOR" => Source::SampleSeparator,
        Some(s) => Source::Tag(
            serde_json::from_value::<Option<Tag>>(s["tag"].clone())
                .ok()
                .flatten(),
        ),
        // Not history.
        None => Source::Node("".into()),
    }
}

fn rendered(input: &Value) -> Vec<Message<'_>> {
    input["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let parts = match m.get("parts") {
                Some(_) => serde_json::from_value(m["parts"].clone()).expect("parts"),
                None => vec![text(m)],
            };
            Message::with_parts(role(&m["role"]), parts, source(m))
        })
        .collect()
}

fn chat(messages: &[Message]) -> Vec<ChatMessage> {
    messages
        .iter()
        .map(|m| ChatMessage::new(m.role, m.text().into_owned()))
        .collect()
}

fn names(ctx: &Context) -> Names {
    Names {
        user: ctx.user.clone(),
        char: ctx.char.clone(),
        group: ctx.group.clone(),
    }
}

fn diagnostics(d: &[stpreset::Diagnostic]) -> Value {
    d.iter()
        .map(|d| json!({"severity": d.severity(), "kind": d.kind, "message": d.message}))
        .collect()
}

/// Runs one case; `Err` says what differs.
fn run(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    let category = case["category"].as_str().unwrap_or("");
    let parsed = Context::from_json(&serde_json::to_vec(&context_json(&input["options"])).unwrap());
    if category == "error" {
        let key = case["expect"]["error"].as_str().unwrap();
        return match parsed {
            Err(e) if e.to_string().contains(key) => Ok(()),
            Err(e) => Err(format!("error does not name `{key}`: {e}")),
            Ok(_) => Err("options accepted".into()),
        };
    }
    let ctx = parsed.map_err(|e| format!("bad options: {e}"))?;
    let got = if category.starts_with("shape/") || category.starts_with("st/") {
        let msgs: Vec<ChatMessage> = input["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| ChatMessage {
                name: m.get("name").and_then(Value::as_str).map(String::from),
                ..ChatMessage::new(role(&m["role"]), text(m))
            })
            .collect();
        convert(&msgs, &ctx.provider_options, &names(&ctx), &ctx.model).0
    } else {
        let mut messages = rendered(input);
        let (mut diags, tokens) = ctx
            .options
            .budget
            .apply(&mut messages, &ctx.model, usize::MAX);
        if category == "pipeline" {
            let (mut request, request_diags) = convert(
                &chat(&messages),
                &ctx.provider_options,
                &names(&ctx),
                &ctx.model,
            );
            diags.extend(request_diags);
            request["diagnostics"] = diagnostics(&diags);
            request["prompt_tokens"] = json!(tokens);
            request
        } else {
            json!({"messages": messages, "diagnostics": diagnostics(&diags), "prompt_tokens": tokens})
        }
    };
    if got == case["expect"] {
        Ok(())
    } else {
        Err(format!("\n  got  {got}\n  want {}", case["expect"]))
    }
}

#[test]
fn provider_vectors() {
    let Some(cases) = cases() else { return };
    let tiktoken = cfg!(feature = "tiktoken");
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &cases {
        let needs_off = case["build"]["tiktoken"] == json!(false);
        let needs_on = case["category"] == "budget/tiktoken";
        if (needs_off && tiktoken) || (needs_on && !tiktoken) {
            continue;
        }
        ran += 1;
        if let Err(why) = run(case) {
            failures.push(format!("{}: {why}", case["name"].as_str().unwrap_or("?")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} provider cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "{ran} provider vectors pass ({} skipped for this build)",
        cases.len() - ran
    );
}

/// Issue 39 §2: with `cap_to_model`, no corpus preset's body asks a model in the table for
/// more output tokens than it takes, in either layout and every shape; each cap is said
/// with the model, the asked and the sent value. Without it the body is SPEC's.
#[test]
fn cap_to_model_keeps_every_corpus_body_within_the_models_output() {
    let Some(presets) = support::corpus_presets() else {
        return;
    };
    // (model, shape, its output limit)
    let models = [
        ("gpt-4.1", "openai", 32_768),
        ("gpt-4o-mini", "openai", 16_384),
        ("gpt-5-chat-latest", "openai", 16_384),
        ("o3-mini", "openai", 100_000),
        ("claude-3-5-haiku-latest", "anthropic", 8_192),
        ("claude-opus-4-1", "anthropic", 32_000),
        ("claude-sonnet-4-5", "anthropic", 64_000),
        ("gemini-2.0-flash", "google", 8_192),
        ("gemini-2.5-pro", "google", 65_536),
    ];
    let output = |body: &Value| {
        ["max_tokens", "max_completion_tokens"]
            .iter()
            .find_map(|k| body[k].as_u64())
            .or_else(|| body["generationConfig"]["maxOutputTokens"].as_u64())
    };
    let mut capped = 0;
    for (file, preset) in presets {
        let compiled = preset.compile();
        for (model, shape, limit) in models {
            for layout in ["seed", "sillytavern"] {
                let doc = |cap: bool| {
                    json!({"model": model, "layout": layout,
                        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}],
                        "provider_options": {"shape": shape, "cap_to_model": cap}})
                };
                let ctx = |cap| Context::from_json(doc(cap).to_string().as_bytes()).unwrap();
                let (on, on_notes) = compiled
                    .render(&ctx(true))
                    .to_request(&ctx(true).provider_options);
                let (off, off_notes) = compiled
                    .render(&ctx(false))
                    .to_request(&ctx(false).provider_options);
                let name = format!("{file} {model} {layout}");
                let sent = output(&on).unwrap_or(0);
                assert!(sent <= limit, "{name}: {sent} > {limit}");
                let asked = output(&off).unwrap_or(0);
                let notes: Vec<_> = on_notes
                    .iter()
                    .filter(|d| d.kind == stpreset::DiagnosticKind::ModelLimit)
                    .collect();
                if asked > limit {
                    capped += 1;
                    assert_eq!(sent, limit, "{name}");
                    assert_eq!(notes.len(), 1, "{name}");
                    let want = format!("model `{model}` takes at most {limit} output tokens");
                    assert!(notes[0].message.contains(&want), "{}", notes[0].message);
                    assert!(
                        notes[0]
                            .message
                            .contains(&format!("{asked} asked, {limit} sent"))
                    );
                    if let Some(budget) = on["thinking"]["budget_tokens"].as_u64() {
                        assert!(budget < sent, "{name}: thinking {budget} >= {sent}");
                    }
                } else {
                    assert!(notes.is_empty(), "{name}");
                    assert_eq!(on, off, "{name}: capped though within the limit");
                }
                assert!(
                    !off_notes
                        .iter()
                        .any(|d| d.kind == stpreset::DiagnosticKind::ModelLimit)
                );
            }
        }
    }
    assert!(
        capped > 0,
        "no corpus preset asked for more than a model takes"
    );
    // A model the table does not know is sent as asked, with a note.
    let ctx = Context::from_json(
        br#"{"model": "my-local-llama", "provider_options": {"cap_to_model": true, "max_tokens": 999999}}"#,
    )
    .unwrap();
    let preset =
        stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "x"}]}"#)
            .unwrap()
            .compile();
    let (body, notes) = preset.render(&ctx).to_request(&ctx.provider_options);
    assert_eq!(body["max_tokens"], 999_999);
    assert!(
        notes
            .iter()
            .any(|d| d.kind == stpreset::DiagnosticKind::ModelUnknown)
    );
}

/// Issue 39 §2, the window: with `cap_to_model` every corpus preset's history budget is at
/// most the model's window and keeps room for the reply the body asks, whether the window
/// came from the preset or from the context (`max_context_tokens` without `reserve_tokens`);
/// a cut window is a `ModelLimit` warning of the render.
#[test]
fn cap_to_model_fits_the_prompt_and_the_reply_in_the_window() {
    let Some(presets) = support::corpus_presets() else {
        return;
    };
    // (model, shape, output, window)
    let models = [
        ("gpt-4o", "openai", 16_384u64, 128_000u64),
        ("claude-sonnet-4-5", "anthropic", 64_000, 200_000),
        ("gemini-2.5-pro", "google", 65_536, 1_048_576),
    ];
    let mut cut = 0;
    for (file, preset) in presets {
        let compiled = preset.compile();
        for (model, shape, output, window) in models {
            for host_window in [None, Some(150_000u64)] {
                let mut doc = json!({"model": model,
                    "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}],
                    "provider_options": {"shape": shape, "cap_to_model": true}});
                if let Some(w) = host_window {
                    doc["max_context_tokens"] = w.into();
                }
                let ctx = Context::from_json(doc.to_string().as_bytes()).unwrap();
                let rendered = compiled.render(&ctx);
                let name = format!("{file} {model} {host_window:?}");
                let Some(used) = rendered.effective_options().max_context_tokens else {
                    continue;
                };
                let used = u64::from(used);
                let reserve = u64::from(rendered.effective_options().reserve_tokens);
                assert!(used <= window, "{name}: window {used} > {window}");
                assert!(reserve <= output, "{name}: reserve {reserve} > {output}");
                let (body, _) = rendered.to_request(&ctx.provider_options);
                let sent = ["max_tokens", "max_completion_tokens"]
                    .iter()
                    .find_map(|k| body[k].as_u64())
                    .or_else(|| body["generationConfig"]["maxOutputTokens"].as_u64());
                if let Some(sent) = sent {
                    assert!(
                        reserve >= sent.min(output),
                        "{name}: reserve {reserve} < {sent}"
                    );
                }
                let noted = rendered
                    .diagnostics
                    .iter()
                    .any(|d| d.kind == stpreset::DiagnosticKind::ModelLimit);
                let asked =
                    host_window.or_else(|| preset.settings().openai_max_context.map(|w| w as u64));
                assert_eq!(noted, asked.is_some_and(|a| a > window), "{name}");
                cut += usize::from(noted);
            }
        }
    }
    assert!(cut > 0, "no corpus preset's window was over a model's");
}
