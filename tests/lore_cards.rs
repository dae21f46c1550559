//! Runs the `"kind": "card"` cases of the public World Info vectors (SPEC §15.12,
//! `tests/vectors/worldinfo.json`) through `Card::from_bytes`.

use std::path::PathBuf;

use base64::Engine as _;
use serde_json::Value;
use stpreset::{Card, Limits, lore::CardFormat};

/// A skip message the test harness does not capture: it shows in a plain `cargo test`.
macro_rules! skipped {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

fn vectors() -> Option<Vec<Value>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/worldinfo.json");
    let Ok(bytes) = std::fs::read(&path) else {
        skipped!(
            "skipping: {} not found (set STPRESET_SHARED, or put shared/ beside the checkout)",
            path.display()
        );
        return None;
    };
    let file: Value = serde_json::from_slice(&bytes).expect("worldinfo.json is JSON");
    let cases = file["cases"]
        .as_array()
        .expect("worldinfo.json has `cases`");
    Some(
        cases
            .iter()
            .filter(|c| c["kind"] == "card")
            .cloned()
            .collect(),
    )
}

fn limits(overrides: &Value) -> Limits {
    let mut limits = Limits::default();
    let Some(fields) = overrides.as_object() else {
        return limits;
    };
    for (name, value) in fields {
        let n = value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(|| panic!("limit {name} is not a size: {value}"));
        match name.as_str() {
            "card_max_file_bytes" => limits.card_max_file_bytes = n,
            "card_max_json_bytes" => limits.card_max_json_bytes = n,
            "card_png_max_chunks" => limits.card_png_max_chunks = n,
            "lore_max_book_bytes" => limits.lore_max_book_bytes = n,
            "lore_max_entries" => limits.lore_max_entries = n,
            "lore_max_keys" => limits.lore_max_keys = n,
            "lore_max_key_bytes" => limits.lore_max_key_bytes = n,
            "lore_max_content_bytes" => limits.lore_max_content_bytes = n,
            other => panic!("a limit this test does not know: {other}"),
        }
    }
    limits
}

/// Compares objects field by field and lists in order, naming the first difference's path.
fn compare(path: &str, got: &Value, want: &Value) -> Result<(), String> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for key in w.keys().chain(g.keys()) {
                let here = format!("{path}.{key}");
                match (g.get(key), w.get(key)) {
                    (Some(g), Some(w)) => compare(&here, g, w)?,
                    (None, _) => return Err(format!("{here}: missing")),
                    (_, None) => return Err(format!("{here}: not expected")),
                }
            }
            Ok(())
        }
        (Value::Array(g), Value::Array(w)) => {
            if g.len() != w.len() {
                return Err(format!("{path}: {} items, expected {}", g.len(), w.len()));
            }
            for (i, (g, w)) in g.iter().zip(w).enumerate() {
                compare(&format!("{path}[{i}]"), g, w)?;
            }
            Ok(())
        }
        _ if got == want => Ok(()),
        _ => Err(format!("{path}: got {got}, expected {want}")),
    }
}

fn run(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    let file = base64::engine::general_purpose::STANDARD
        .decode(input["file_b64"].as_str().ok_or("no file_b64")?)
        .map_err(|e| format!("file_b64: {e}"))?;
    let format = match input["format"].as_str() {
        Some("png") => CardFormat::Png,
        Some("json") => CardFormat::Json,
        Some("auto") => CardFormat::Auto,
        other => return Err(format!("unknown format {other:?}")),
    };
    let expected = &case["expected"];
    let got = Card::from_bytes(&file, format, &limits(&input["limits"]));
    match (got, expected.get("error")) {
        (Ok(card), None) => {
            compare("card", &card.to_json(), &expected["card"])?;
            let kinds: Vec<Value> = card
                .diagnostics()
                .iter()
                .map(|d| Value::from(d.kind.to_string()))
                .collect();
            compare("diagnostics", &Value::from(kinds), &expected["diagnostics"])
        }
        (Ok(_), Some(err)) => Err(format!("imported, expected the error {err}")),
        (Err(e), Some(err)) if err == e.kind() => Ok(()),
        (Err(e), _) => Err(format!("error {e}, expected {expected}")),
    }
}

#[test]
fn card_vectors() {
    let Some(cases) = vectors() else { return };
    assert!(!cases.is_empty(), "worldinfo.json has no card cases");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| run(c).err().map(|e| format!("{}: {e}", c["id"])))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} card cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    skipped!("{} card cases pass", cases.len());
}
