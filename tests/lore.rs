//! SPEC §15 World Info: every `activate` and `import` case of
//! `../shared/conformance/worldinfo.json` through the library (skipped, with a visible message,
//! when `../shared` is not beside the checkout), and the behaviours the vectors do not pin.

use std::path::PathBuf;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use stpreset::{
    Context, GenerationType, Limits, LoreSource, Lorebook, ScanTexts, TokenCounter, WiInput,
    WiMessage, WiRandom, WiSettings, WiState, activate,
};

/// The books of a case as written in the file: key order matters (SPEC §15.3.1), and
/// `serde_json::Value` sorts keys.
#[derive(serde::Deserialize)]
struct RawDoc {
    cases: Vec<RawCase>,
}

#[derive(serde::Deserialize)]
struct RawCase {
    input: RawInput,
}

#[derive(serde::Deserialize)]
struct RawInput {
    #[serde(default)]
    books: Vec<RawBook>,
    #[serde(default)]
    turns: Vec<RawTurn>,
    book: Option<Box<RawValue>>,
}

#[derive(serde::Deserialize)]
struct RawTurn {
    books: Option<Vec<RawBook>>,
}

#[derive(serde::Deserialize)]
struct RawBook {
    data: Box<RawValue>,
}

fn vectors() -> Option<Vec<(Value, RawCase)>> {
    let dir = std::env::var_os("STPRESET_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let path = dir.join("conformance/worldinfo.json");
    match std::fs::read(&path) {
        Ok(bytes) => {
            let doc: Value = serde_json::from_slice(&bytes).expect("vector file is JSON");
            let raw: RawDoc = serde_json::from_slice(&bytes).expect("vector file is JSON");
            let cases = doc["cases"].as_array().cloned().unwrap_or_default();
            Some(cases.into_iter().zip(raw.cases).collect())
        }
        Err(_) => {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: {} not found (../shared is not beside this checkout)",
                path.display()
            );
            None
        }
    }
}

/// Runs of non-whitespace: the vectors' `words` tokenizer.
struct Words;

impl TokenCounter for Words {
    fn count(&self, text: &str) -> u32 {
        text.split_whitespace().count() as u32
    }
}

/// Serves a case's recorded `Math.random` values in order.
struct Draws {
    values: Vec<f64>,
    used: usize,
    ran_out: bool,
}

impl WiRandom for Draws {
    fn draw(&mut self) -> f64 {
        match self.values.get(self.used) {
            Some(&v) => {
                self.used += 1;
                v
            }
            None => {
                self.ran_out = true;
                0.5
            }
        }
    }
}

/// `expected` holds at `path`: objects by the expected fields, lists in order.
fn within(expected: &Value, actual: &Value, path: &str, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                match a.get(k) {
                    Some(av) => within(v, av, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}: missing")),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                within(ev, av, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => {}
        _ if expected == actual => {}
        _ => out.push(format!("{path}: expected {expected}, got {actual}")),
    }
}

fn book(spec: &Value, raw: &RawBook) -> Lorebook {
    let name = spec["name"].as_str().unwrap();
    let bytes = raw.data.get().as_bytes();
    let source: LoreSource = serde_json::from_value(spec["source"].clone()).unwrap();
    Lorebook::from_json(name, bytes, &Limits::default())
        .unwrap_or_else(|e| panic!("book {name}: {e}"))
        .with_source(source)
}

/// Runs one `activate` case; the failures, by turn and field.
fn books(specs: &Value, raw: &[RawBook]) -> Vec<Lorebook> {
    specs
        .as_array()
        .unwrap()
        .iter()
        .zip(raw)
        .map(|(s, r)| book(s, r))
        .collect()
}

fn run_activate(case: &Value, raw: &RawCase) -> Vec<String> {
    let input = &case["input"];
    let mut ctx = Context::default();
    ctx.user = input["user"].as_str().unwrap_or("").into();
    ctx.char = input["char"].as_str().unwrap_or("").into();
    let settings: WiSettings = serde_json::from_value(input["settings"].clone()).unwrap();
    let mut books = books(&input["books"], &raw.input.books);
    let scan = &input["scan"];
    let text = |k: &str| scan[k].as_str().unwrap_or("").to_string();
    let mut state = WiState::default();
    let mut failures = Vec::new();
    for (t, (turn, expected)) in input["turns"]
        .as_array()
        .unwrap()
        .iter()
        .zip(case["expected"].as_array().unwrap())
        .enumerate()
    {
        if let (Some(b), Some(r)) = (turn.get("books"), &raw.input.turns[t].books) {
            books = self::books(b, r);
        }
        let history: Vec<(String, String)> = turn["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["name"].as_str().unwrap_or("").to_string(),
                    m["text"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        let mut wi = WiInput::new(&ctx);
        wi.history = history
            .iter()
            .map(|(name, text)| WiMessage { name, text })
            .collect();
        wi.position = turn["chat_position"].as_u64();
        wi.generation_type = turn
            .get("generation_type")
            .map(|g| serde_json::from_value::<GenerationType>(g.clone()).unwrap())
            .unwrap_or_default();
        wi.dry_run = turn["dry_run"].as_bool().unwrap_or(false);
        wi.max_context = input["max_context"].as_u64();
        let mut s = ScanTexts::default();
        s.persona = text("persona");
        s.description = text("description");
        s.personality = text("personality");
        s.depth_prompt = text("depth_prompt");
        s.scenario = text("scenario");
        s.creator_notes = text("creator_notes");
        wi.scan = s;
        let mut draws = Draws {
            values: turn["draws"]
                .as_array()
                .map(|d| d.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default(),
            used: 0,
            ran_out: false,
        };
        let out = activate(
            &books,
            &wi,
            &settings,
            &state,
            &mut draws,
            &Words,
            &Limits::default(),
        );
        let mut actual = serde_json::to_value(&out).unwrap();
        actual["draws_used"] = json!(draws.used);
        if let Some(effects) = actual["state"]["effects"].as_array_mut() {
            for e in effects {
                e.as_object_mut().unwrap().remove("fingerprint");
            }
        }
        let mut diffs = Vec::new();
        if draws.ran_out {
            diffs.push("ran out of draws".to_string());
        }
        within(expected, &actual, &format!("turn {t}"), &mut diffs);
        failures.extend(diffs);
        state = out.state;
    }
    failures
}

fn run_import(case: &Value, raw: &RawCase) -> Vec<String> {
    let bytes = raw.input.book.as_ref().unwrap().get().as_bytes().to_vec();
    let expected = &case["expected"];
    let mut diffs = Vec::new();
    match Lorebook::from_json("B", &bytes, &Limits::default()) {
        Ok(b) => {
            let diagnostics: Vec<Value> = b
                .diagnostics()
                .iter()
                .map(|d| serde_json::to_value(d).unwrap())
                .collect();
            let actual = json!({"entries": b.entries_json(), "diagnostics": diagnostics});
            within(expected, &actual, "import", &mut diffs);
        }
        Err(e) => within(expected, &json!({"error": e.kind()}), "import", &mut diffs),
    }
    diffs
}

#[test]
fn worldinfo_activation_and_import_vectors() {
    let Some(cases) = vectors() else { return };
    let mut failures = Vec::new();
    let mut ran = 0;
    for (case, raw) in &cases {
        let diffs = match case["kind"].as_str() {
            Some("activate") => run_activate(case, raw),
            Some("import") => run_import(case, raw),
            _ => continue,
        };
        ran += 1;
        if !diffs.is_empty() {
            failures.push(format!("{}:\n  {}", case["id"], diffs.join("\n  ")));
        }
    }
    assert!(ran > 0, "no activate or import case in the vector file");
    assert!(
        failures.is_empty(),
        "{} of {ran} cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
