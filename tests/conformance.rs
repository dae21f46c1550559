//! Runs the public conformance vectors (`tests/vectors/`, the repository's copy of
//! `../shared/conformance/`) through the library.

mod support;

use std::path::PathBuf;

use serde_json::Value;
use stpreset::{Context, Severity, expand};

/// A public conformance vector file (the repository's copy, `tests/vectors/`).
fn shared(file: &str) -> Option<Vec<Value>> {
    Some(serde_json::from_slice(&support::vectors(file)).expect("vector file is JSON"))
}

/// Fails listing every failing case by name, or reports how many passed.
fn all_pass(what: &str, total: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} of {total} {what} cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{total} {what} vectors pass");
}

/// Runs template cases; returns one line per failing case (`name: what differs`).
fn template_failures<'c>(cases: impl IntoIterator<Item = &'c Value>) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?");
        let ctx = Context::from_json(&serde_json::to_vec(&case["context"]).unwrap())
            .unwrap_or_else(|e| panic!("{name}: bad context: {e}"));
        let out = expand(case["template"].as_str().unwrap(), &ctx);
        if out.text != case["expect"].as_str().unwrap() {
            failures.push(format!(
                "{name}: text {:?} != {:?}",
                out.text, case["expect"]
            ));
            continue;
        }
        if let Some(expected) = case.get("warnings").and_then(Value::as_array) {
            let mut want: Vec<&str> = expected.iter().filter_map(Value::as_str).collect();
            let mut got: Vec<String> = out
                .diagnostics
                .iter()
                .filter(|d| d.severity() == Severity::Warning)
                .map(|d| d.kind.to_string())
                .collect();
            want.sort_unstable();
            got.sort_unstable();
            if got != want {
                failures.push(format!("{name}: warnings {got:?} != {want:?}"));
            }
        }
    }
    failures
}

#[test]
fn template_vectors() {
    let Some(cases) = shared("templates.json") else {
        return;
    };
    all_pass("template", cases.len(), &template_failures(&cases));
}

/// SPEC §11 (the SillyTavern 1.18 dialect): every case must pass.
#[test]
fn st_template_vectors() {
    let Some(cases) = shared("st-templates.json") else {
        return;
    };
    all_pass(
        "SillyTavern dialect",
        cases.len(),
        &template_failures(&cases),
    );
}

/// Renders each case (`preset`, `context`) and compares `[role, text]` per message with
/// `expect_messages`, and each message's SPEC §9 source with `expect_sources` when given.
fn render_failures(cases: &[Value], label: &str) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        let name = format!("{label}{}", case["name"].as_str().unwrap_or("?"));
        let ctx = Context::from_json(&serde_json::to_vec(&case["context"]).unwrap())
            .unwrap_or_else(|e| panic!("{name}: bad context: {e}"));
        let preset =
            match stpreset::Preset::from_json(&serde_json::to_vec(&case["preset"]).unwrap()) {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!("{name}: import failed: {e}"));
                    continue;
                }
            };
        let out = preset.compile().render(&ctx);
        let got: Vec<Value> = out
            .messages
            .iter()
            .map(|m| serde_json::json!([m.role, m.text()]))
            .collect();
        if Value::Array(got.clone()) != case["expect_messages"] {
            failures.push(format!(
                "{name}:\n  got  {}\n  want {}",
                Value::Array(got),
                case["expect_messages"]
            ));
        }
        if let Some(want) = case.get("expect_sources") {
            let got: Vec<Value> = out
                .messages
                .iter()
                .map(|m| serde_json::to_value(&m.source).unwrap())
                .collect();
            if &Value::Array(got.clone()) != want {
                failures.push(format!(
                    "{name}: sources\n  got  {}\n  want {want}",
                    Value::Array(got)
                ));
            }
        }
    }
    failures
}

#[test]
fn render_vectors() {
    let Some(cases) = shared("renders.json") else {
        return;
    };
    all_pass("render", cases.len(), &render_failures(&cases, ""));
}

/// Our own render vectors (`tests/renders/*.json`): the shared format plus `expect_sources`.
#[test]
fn own_render_vectors() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/renders");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/renders")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in &files {
        let cases: Vec<Value> =
            serde_json::from_slice(&std::fs::read(file).expect("read")).expect("json");
        count += cases.len();
        failures.extend(render_failures(&cases, &format!("{}: ", file.display())));
    }
    assert!(count > 0, "no vectors in {}", dir.display());
    all_pass("own render", count, &failures);
}

#[test]
fn import_error_vectors() {
    let Some(cases) = shared("import-errors.json") else {
        return;
    };
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        let text = case["preset_text"].as_str().unwrap();
        let bytes = if text == "@oversize" {
            serde_json::to_vec(&serde_json::json!({"prompts": [{"identifier": "a", "content": "x".repeat(2 * 1024 * 1024 + 10)}]})).unwrap()
        } else {
            text.as_bytes().to_vec()
        };
        match stpreset::Preset::from_json(&bytes) {
            Ok(_) => failures.push(format!("{name}: imported, expected an error")),
            Err(e) => {
                let msg = e.to_string();
                if msg.lines().count() != 1 || msg.is_empty() {
                    failures.push(format!("{name}: message is not one line: {msg:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// SillyTavern's own macro engine on `tests/st-macros/cases.json` (recorded by
/// `tests/st-macros/record.mjs` from ST 1.18's code): every case must pass.
#[test]
fn st_macro_engine_vectors() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/st-macros/vectors.json");
    let cases: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("tests/st-macros/vectors.json"))
            .expect("vector file is JSON");
    assert!(!cases.is_empty());
    all_pass(
        "SillyTavern macro engine",
        cases.len(),
        &template_failures(&cases),
    );
}

/// Every macro name SillyTavern 1.18 registers (`tests/st-macros/registered.json`, written by
/// the recorder) is one the engine implements, or one whose handling docs/macros.md decides
/// (listed here with the reason). A name ST adds fails this test until one of the two is done.
#[test]
fn every_sillytavern_macro_is_implemented_or_decided() {
    const DECIDED: [(&str, &str); 1] = [(
        "original",
        "SPEC §11.14.4: stays unknown outside a card's prompt override",
    )];
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/st-macros/registered.json");
    let file: Value = serde_json::from_slice(&std::fs::read(&path).expect("registered.json"))
        .expect("registered.json is JSON");
    let names: Vec<&str> = file["names"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.len() > 100, "ST registers over 100 names");
    let ctx = Context::default();
    let mut missing = Vec::new();
    for name in &names {
        if DECIDED.iter().any(|(n, _)| n == name) {
            continue;
        }
        let out = expand(&format!("{{{{{name}}}}}"), &ctx);
        let unknown = out.diagnostics.iter().any(|d| {
            let kind = d.kind.to_string();
            kind == "UnknownMacro" || kind == "UnsupportedMacro"
        });
        if unknown {
            missing.push(*name);
        }
    }
    assert!(
        missing.is_empty(),
        "SillyTavern macros neither implemented nor decided: {missing:?}"
    );
}
