//! SPEC §13 (preset regex scripts): every case of `../shared/conformance/regex.json` through
//! the library — text exactly, `Regex*` diagnostics as (kind, script) — and the rules' own
//! tests. Skips, with a visible message, when `../shared` is not beside the checkout.

/// A skip message the test harness does not capture: it shows in a plain `cargo test`.
macro_rules! skipped {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

use std::path::PathBuf;

use serde_json::{Value, json};
use stpreset::{
    Context, DiagnosticKind, PassKind, Placement, Preset, RandomSource, RegexPass, Role,
};

fn vectors() -> Option<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/regex.json");
    match std::fs::read(&path) {
        Ok(bytes) => Some(serde_json::from_slice(&bytes).expect("vector file is JSON")),
        Err(_) => {
            skipped!(
                "SKIPPED: {} not found (../shared is not beside this checkout)",
                path.display()
            );
            None
        }
    }
}

/// The case's scripts as a list (resolving `{"set": FILE[, "index": N]}`).
fn scripts(case: &Value, sets: &Value) -> Value {
    match &case["scripts"] {
        Value::Object(o) => {
            let set = &sets[o["set"].as_str().unwrap()];
            match o.get("index").and_then(Value::as_u64) {
                Some(i) => json!([set[i as usize]]),
                None => set.clone(),
            }
        }
        list => list.clone(),
    }
}

fn preset(scripts: Value) -> stpreset::CompiledPreset {
    let file = json!({"prompts": [{"identifier": "main", "content": "x"}], "extensions": {"regex_scripts": scripts}});
    Preset::from_json(file.to_string().as_bytes())
        .unwrap()
        .compile()
}

fn context(input: &Value) -> Context {
    let m = &input["macros"];
    let mut ctx = Context::from_json(
        json!({
            "user": m["user"], "char": m["char"],
            "variables": m["variables"], "globals": m["globals"],
            "allow_preset_regex": input["allowed"],
            "items": input.get("items").cloned().unwrap_or(json!([])),
        })
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    if m["random"] == "first" {
        ctx.options.regex_random = RandomSource::First;
    }
    ctx
}

fn regex_kinds(diags: &[stpreset::Diagnostic]) -> Vec<(String, Option<u32>)> {
    diags
        .iter()
        .filter(|d| format!("{}", d.kind).starts_with("Regex"))
        .map(|d| (d.kind.to_string(), d.script))
        .collect()
}

fn expected_kinds(expected: &Value) -> Vec<(String, Option<u32>)> {
    expected["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap().to_string(),
                d["script"].as_u64().map(|s| s as u32),
            )
        })
        .collect()
}

fn pass_of(input: &Value) -> RegexPass {
    let kind = match input["pass"].as_str().unwrap() {
        "store" => PassKind::Store,
        "edit" => PassKind::Edit,
        "prompt" => PassKind::Prompt,
        _ => PassKind::Display,
    };
    let placement = match input["placement"].as_u64().unwrap() {
        1 => Placement::UserInput,
        2 => Placement::AiOutput,
        _ => Placement::WorldInfo,
    };
    let mut pass = RegexPass::new(kind, placement);
    pass.depth = input["depth"].as_u64().map(|d| d as u32);
    pass.speaker = input["speaker"].as_str().map(str::to_string);
    pass
}

#[test]
fn every_vector_case() {
    let Some(v) = vectors() else { return };
    let sets = &v["script_sets"];
    let mut failures = Vec::new();
    let cases = v["cases"].as_array().unwrap();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let started = std::time::Instant::now();
        let compiled = preset(scripts(case, sets));
        let input = &case["input"];
        let ctx = context(input);
        let expected = &case["expected"];
        let (got, diags) = if case["kind"] == "history" {
            let out = compiled.prompt_pass(&ctx);
            (json!(out.items), out.diagnostics)
        } else {
            let out = compiled.apply_regex(input["text"].as_str().unwrap(), &pass_of(input), &ctx);
            (json!(out.text), out.diagnostics)
        };
        let want = if case["kind"] == "history" {
            &expected["items"]
        } else {
            &expected["text"]
        };
        if std::env::var_os("REGEX_TIMES").is_some() {
            eprintln!("{:>8.1} ms {id}", started.elapsed().as_secs_f64() * 1e3);
        }
        if &got != want {
            failures.push(format!(
                "{id}: text\n  got  {}\n  want {}",
                short(&got),
                short(want)
            ));
        } else if regex_kinds(&diags) != expected_kinds(expected) {
            failures.push(format!(
                "{id}: diagnostics {:?}, want {:?}",
                regex_kinds(&diags),
                expected_kinds(expected)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 400 {
        format!("{}…", &s[..s.floor_char_boundary(400)])
    } else {
        s
    }
}

#[test]
fn not_allowed_runs_nothing_and_says_so() {
    let p = preset(json!([{"findRegex": "/a/", "replaceString": "b", "placement": [2]}]));
    let ctx = Context::default();
    let out = p.store_message("a", Role::Model, &ctx);
    assert_eq!(out.text, "a");
    assert_eq!(out.diagnostics[0].kind, DiagnosticKind::RegexNotAllowed);
}
