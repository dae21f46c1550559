//! SPEC §17 against the live SillyTavern app: every recorded case of `tests/stlive/vectors.json`
//! (written by `scripts/stlive-vectors.py` from `../shared/tools/stlive` recordings) renders
//! through the library with `layout: "sillytavern"` and must give ST's body, or, for a case
//! SPEC §17.3 lists, our own recorded body. Corpus presets are read from `../shared` (checked by
//! sha256); without it those cases skip with a visible message.

use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};
use stpreset::{Card, Context, Layout, Limits, Preset, ProviderOptions, Shape, lore::CardFormat};

macro_rules! skipped {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The body as the vectors keep it: SPEC §14.7.9's equivalent omissions and deliberate fields
/// taken out, integral floats as integers, strings over `short` bytes as `sha256:HEX`.
fn digest(v: &Value, short: usize) -> Value {
    match v {
        Value::String(s) if s.len() > short => {
            Value::String(format!("sha256:{}", hex(s.as_bytes())))
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() && f.fract() == 0.0 && f.abs() < 1e15 => {
                Value::from(f as i64)
            }
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(|x| digest(x, short)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), digest(x, short)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

fn normalise(mut b: Value) -> Value {
    if let Value::Object(m) = &mut b {
        if m.get("stream") == Some(&Value::Bool(false)) {
            m.remove("stream");
        }
        if m.get("stop_sequences") == Some(&Value::Array(Vec::new())) {
            m.remove("stop_sequences");
        }
        if m.get("system") == Some(&Value::Array(Vec::new())) {
            m.remove("system");
        }
        m.remove("safetySettings");
        m.remove("stop");
        if let Some(Value::Object(gc)) = m.get_mut("generationConfig") {
            if gc.get("candidateCount") == Some(&Value::from(1)) {
                gc.remove("candidateCount");
            }
            if let Some(Value::Object(t)) = gc.get_mut("thinkingConfig") {
                t.remove("includeThoughts");
            }
        }
        if let Some(Value::Object(t)) = m.get_mut("thinking") {
            t.remove("display");
        }
    }
    b
}

/// The first place two bodies differ, as a JSON path.
fn first_difference(a: &Value, b: &Value, path: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (p, q) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if let Some(d) = first_difference(p, q, format!("{path}.{k}")) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(p, q, format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (x.len() != y.len())
                .then(|| format!("{path}: {} entries, expected {}", y.len(), x.len()))
        }
        _ => (a != b).then(|| format!("{path}: {b} (expected {a})")),
    }
}

#[test]
fn recorded_sillytavern_bodies() {
    let file = root().join("tests/stlive/vectors.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).expect("vectors")).expect("JSON");
    assert_eq!(doc["format"], "stpreset-stlive-vectors/1");
    let short = doc["digest_over_bytes"]
        .as_u64()
        .expect("digest_over_bytes") as usize;
    let cards = doc["cards"].as_object().expect("cards");
    let cases = doc["cases"].as_array().expect("cases");
    let shared = root().join("../shared");
    let (mut ran, mut skipped, mut listed) = (0, 0, 0);
    // SPEC §17.3: at most 5% of the corpus cases may be listed (the harness's probe preset
    // prints `{{random}}` on purpose, so its cases are all listed and counted apart).
    let (mut corpus, mut corpus_listed) = (0, 0);
    let mut failures = Vec::new();
    for case in cases {
        let id = case["id"].as_str().expect("id");
        let inputs = &case["inputs"];
        let preset = &inputs["preset"];
        let dir = match preset["group"].as_str() {
            Some("probe") => shared.join("tools/stlive/fixtures/presets"),
            _ => shared.join("corpus/presets"),
        };
        let Ok(bytes) = std::fs::read(dir.join(preset["file"].as_str().expect("file"))) else {
            skipped += 1;
            continue;
        };
        assert_eq!(
            hex(&bytes),
            preset["sha256"],
            "{id}: the preset file changed"
        );
        // Every field of the format is read: the card by its sha256, the context, the shape
        // and the source ST used for it.
        let card_sha = inputs["card"].as_str().expect("card");
        let card_json = serde_json::to_vec(&cards[card_sha]).expect("card");
        let mut ctx = Context::from_json(&serde_json::to_vec(&inputs["context"]).expect("ctx"))
            .unwrap_or_else(|e| panic!("{id}: context: {e}"));
        assert_eq!(ctx.layout, Layout::SillyTavern, "{id}");
        Card::from_bytes(&card_json, CardFormat::Json, &Limits::default())
            .unwrap_or_else(|e| panic!("{id}: card: {e}"))
            .apply_to(&mut ctx);
        let shape = match (inputs["shape"].as_str(), inputs["st_source"].as_str()) {
            (Some("openai"), Some("custom" | "openai")) => Shape::OpenAi,
            (Some("anthropic"), Some("claude")) => Shape::Anthropic,
            (Some("google"), Some("makersuite" | "vertexai")) => Shape::Google,
            other => panic!("{id}: shape and source {other:?}"),
        };
        // ST builds some prompts for its source (a Claude continue's prefill).
        ctx.provider_options.shape = Some(shape);
        let options: ProviderOptions = ctx.provider_options.clone();
        let preset = Preset::from_json(&bytes).expect("preset imports");
        let (body, _) = preset.compile().render(&ctx).to_request(&options);
        let ours = digest(&normalise(body), short);
        let in_corpus = inputs["preset"]["group"] != "probe";
        corpus += usize::from(in_corpus);
        let want = match case.get("listed") {
            Some(l) => {
                assert!(
                    l.as_array().is_some_and(|l| !l.is_empty()),
                    "{id}: listed names a rule"
                );
                listed += 1;
                corpus_listed += usize::from(in_corpus);
                &case["ours_expected"]
            }
            None => &case["expected"],
        };
        ran += 1;
        if let Some(d) = first_difference(want, &ours, String::new()) {
            failures.push(format!("{id}: {d}"));
        }
    }
    if skipped > 0 {
        skipped!(
            "SKIPPED: {skipped} of {} SillyTavern cases (their presets are in ../shared, not beside this checkout)",
            cases.len()
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} SillyTavern cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        corpus_listed * 20 <= corpus,
        "more than 5% of the corpus cases are listed: {corpus_listed} of {corpus} ({listed} of {ran} in all)"
    );
}
