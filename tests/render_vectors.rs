//! Our own render vectors (`tests/renders/*.json`), in the format of the shared
//! `renders.json` plus an optional `expect_sources` (each message's source as SPEC §9 JSON).
//! One file per feature; every case runs through the library.

use serde_json::Value;
use stpreset::{Context, Preset};

#[test]
fn render_vectors() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/renders");
    let mut files: Vec<_> = std::fs::read_dir(dir)
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
        for case in &cases {
            count += 1;
            let name = format!(
                "{}: {}",
                file.display(),
                case["name"].as_str().unwrap_or("?")
            );
            let ctx = Context::from_json(&serde_json::to_vec(&case["context"]).unwrap())
                .unwrap_or_else(|e| panic!("{name}: bad context: {e}"));
            let preset = Preset::from_json(&serde_json::to_vec(&case["preset"]).unwrap())
                .unwrap_or_else(|e| panic!("{name}: bad preset: {e}"));
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
    }
    assert!(count > 0, "no vectors in {dir}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
