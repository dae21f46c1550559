//! Runs the shared conformance vectors (`../shared/conformance/`) through the library.
//! Skips, with a visible message, when `../shared` is not beside the checkout.

use std::path::PathBuf;

use serde_json::Value;
use stpreset::{Context, Severity, expand};

fn shared(file: &str) -> Option<Vec<Value>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/conformance")
        .join(file);
    match std::fs::read(&path) {
        Ok(bytes) => Some(serde_json::from_slice(&bytes).expect("vector file is JSON")),
        Err(_) => {
            eprintln!(
                "SKIPPED: {} not found (../shared is not beside this checkout)",
                path.display()
            );
            None
        }
    }
}

#[test]
fn template_vectors() {
    let Some(cases) = shared("templates.json") else {
        return;
    };
    let mut failures = Vec::new();
    for case in &cases {
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
    assert!(
        failures.is_empty(),
        "{} of {} cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    eprintln!("{} template vectors pass", cases.len());
}
