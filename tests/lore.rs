//! SPEC §15 World Info: every `activate` and `import` case of the public `worldinfo.json`
//! vectors (`tests/vectors/`) through the library, and the behaviours the vectors do not pin.

use std::path::PathBuf;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use stpreset::{
    Context, Limits, Lorebook, activation::ScanTexts, activation::WiInput, activation::WiMessage,
    activation::WiRandom, activation::activate, lore::GenerationType, lore::LoreSource,
    lore::WiSettings, lore::WiState, tokens::TokenCounter,
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
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/worldinfo.json");
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

/// The fields of a case's `scan` (SPEC §15.12), each read into [`ScanTexts`].
const SCAN_FIELDS: [&str; 7] = [
    "persona",
    "description",
    "personality",
    "depth_prompt",
    "scenario",
    "creator_notes",
    "inject",
];

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
        // `inject`: the scan-only texts (a list, or one text).
        s.inject = match &scan["inject"] {
            Value::Array(list) => list
                .iter()
                .map(|t| t.as_str().expect("scan.inject holds texts").to_string())
                .collect(),
            Value::String(one) => vec![one.clone()],
            _ => Vec::new(),
        };
        // Every field of `scan` is read: a new one fails here until it is.
        if let Some(fields) = scan.as_object() {
            for key in fields.keys() {
                assert!(
                    SCAN_FIELDS.contains(&key.as_str()),
                    "{}: scan.{key} is not read",
                    case["id"]
                );
            }
        }
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

fn render_doc(preset: &str, ctx: &str) -> Value {
    let p = stpreset::Preset::from_json(preset.as_bytes()).unwrap();
    let ctx = Context::from_json(ctx.as_bytes()).unwrap();
    serde_json::from_str(&p.compile().render(&ctx).to_json()).unwrap()
}

const MARKERS: &str = r#"{"prompts": [
    {"identifier": "main", "content": "Main."},
    {"identifier": "worldInfoBefore", "marker": true},
    {"identifier": "worldInfoAfter", "marker": true},
    {"identifier": "chatHistory", "marker": true}]}"#;

#[test]
fn a_context_files_lorebooks_are_placed_and_the_state_comes_back() {
    let ctx = r#"{"user": "Alice", "char": "Tomori",
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "ring the bell"}],
        "position": 1,
        "lorebooks": [{"name": "town", "entries": {
            "1": {"key": ["bell"], "content": "after {{char}}", "position": 1, "sticky": 2},
            "0": {"key": ["bell"], "content": "before", "order": 5},
            "2": {"key": ["bell"], "content": "deep", "position": 4, "depth": 0}}}]}"#;
    let doc = render_doc(MARKERS, ctx);
    let texts: Vec<String> = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().clone())
        .map(|p| p.as_str().unwrap_or_default().to_string())
        .collect();
    let at = |t: &str| texts.iter().position(|x| x.contains(t));
    assert!(at("before") < at("after Tomori"), "{texts:?}");
    assert!(at("after Tomori") < at("ring the bell"), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("deep")), "{texts:?}");
    let effects = doc["wi_state"]["effects"].as_array().unwrap();
    assert_eq!(effects.len(), 1);
    assert_eq!(effects[0]["entry"], "town.1");
    assert_eq!(
        (effects[0]["start"].as_u64(), effects[0]["end"].as_u64()),
        (Some(1), Some(3))
    );
    // Without lore the document has no `wi_state`.
    let plain = render_doc(MARKERS, r#"{"user": "Alice"}"#);
    assert!(plain.get("wi_state").is_none());
}

#[test]
fn context_lorebook_errors_name_the_field() {
    for (bad, field) in [
        (
            r#"{"lorebooks": [{"name": "a", "source": "moon", "entries": {}}]}"#,
            "lorebooks[0].source",
        ),
        (r#"{"lorebooks": [{"entries": {}}]}"#, "lorebooks[0]"),
        (
            r#"{"lorebooks": [{"name": "a", "entries": 3}]}"#,
            "lorebooks[0]",
        ),
        (r#"{"world_info": {"scan_depht": 3}}"#, "scan_depht"),
    ] {
        let err = Context::from_json(bad.as_bytes()).unwrap_err().to_string();
        assert!(err.contains(field), "{bad}: {err}");
    }
}

#[test]
fn sticky_lore_outlives_its_key_across_cli_turns() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("town.json");
    std::fs::write(
        &book,
        r#"{"entries": {"0": {"key": ["bell"], "content": "It tolls.", "sticky": 3}}}"#,
    )
    .unwrap();
    let ctx = |text: &str| {
        let p = dir.path().join(format!("ctx-{}.json", text.len()));
        let v = json!({"items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": text}]});
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let run = |ctx: &std::path::Path, position: u64, state: Option<&std::path::Path>| -> Value {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_stpreset"));
        cmd.args(["lore", "--book"])
            .arg(&book)
            .arg("--context")
            .arg(ctx);
        cmd.args(["--position", &position.to_string()]);
        if let Some(s) = state {
            cmd.arg("--wi-state").arg(s);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let first = run(&ctx("ring the bell"), 1, None);
    assert_eq!(first["activated"], json!(["town.0"]));
    let state = dir.path().join("state.json");
    std::fs::write(&state, first["state"].to_string()).unwrap();
    // No key in the chat now: the sticky effect keeps the entry until position 4.
    let second = run(&ctx("quiet"), 3, Some(&state));
    assert_eq!(second["activated"], json!(["town.0"]));
    assert_eq!(second["before"], "It tolls.");
    let later = run(&ctx("quiet"), 4, Some(&state));
    assert_eq!(later["activated"], json!([]));
}

/// Draws from a fixed list, cycling.
struct Fixed(Vec<f64>, usize);

impl WiRandom for Fixed {
    fn draw(&mut self) -> f64 {
        let v = self.0[self.1 % self.0.len()];
        self.1 += 1;
        v
    }
}

fn one_turn(
    book: &str,
    history: &[&str],
    state: &WiState,
    draws: Vec<f64>,
) -> stpreset::activation::WiResult {
    let book = Lorebook::from_json("b", book.as_bytes(), &Limits::default()).unwrap();
    let ctx = Context::default();
    let mut wi = WiInput::new(&ctx);
    wi.history = history
        .iter()
        .map(|t| WiMessage { name: "", text: t })
        .collect();
    wi.position = Some(history.len() as u64);
    activate(
        &[book],
        &wi,
        &WiSettings::default(),
        state,
        &mut Fixed(draws, 0),
        &Words,
        &Limits::default(),
    )
}

#[test]
fn huge_group_weights_roll_as_doubles() {
    // Three equal weights near i64::MAX: a u64 sum would wrap and always pick the first.
    let w = i64::MAX;
    let book = format!(
        r#"{{"entries": {{"0": {{"constant": true, "group": "g", "groupWeight": {w}, "content": "a"}},
            "1": {{"constant": true, "group": "g", "groupWeight": {w}, "content": "b"}},
            "2": {{"constant": true, "group": "g", "groupWeight": {w}, "content": "c"}}}}}}"#
    );
    let pick = |u: f64| one_turn(&book, &["x"], &WiState::default(), vec![u]).activated;
    assert_eq!(pick(0.1), ["b.0"]);
    assert_eq!(pick(0.5), ["b.1"]);
    assert_eq!(pick(0.9), ["b.2"]);
}

#[test]
fn a_state_keeps_one_effect_per_kind_and_entry() {
    let book = r#"{"entries": {"0": {"key": ["bell"], "content": "c", "sticky": 5}}}"#;
    let first = one_turn(book, &["bell"], &WiState::default(), vec![0.5]);
    let mut twice = serde_json::to_value(&first.state).unwrap();
    let effect = twice["effects"][0].clone();
    twice["effects"] = json!([effect.clone(), effect.clone(), effect]);
    let state: WiState = serde_json::from_value(twice).unwrap();
    let next = one_turn(book, &["bell", "x", "quiet"], &state, vec![0.5]);
    assert_eq!(next.activated, ["b.0"]);
    assert_eq!(next.state.effects.len(), 1, "{:?}", next.state);
}

#[test]
fn a_card_or_book_with_half_an_emoji_still_reads() {
    let book = r#"{"entries": {"0": {"key": ["\ud83d"], "content": "half \ud800 emoji", "constant": true}}}"#;
    let out = one_turn(book, &["x"], &WiState::default(), vec![0.5]);
    assert_eq!(out.before, "half \u{fffd} emoji");
    let card = r#"{"name": "N\udc00", "description": "d"}"#;
    let card = stpreset::Card::from_bytes(
        card.as_bytes(),
        stpreset::lore::CardFormat::Json,
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(card.name, "N\u{fffd}");
}

#[test]
fn outlets_reach_the_outlet_macro_in_templates_and_presets() {
    let ctx = Context::from_json(
        br#"{"char": "Tomori", "position": 1,
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain"}],
        "lorebooks": [{"name": "w", "entries": {
            "0": {"key": ["rain"], "content": "Wet {{char}}.", "position": 7, "outletName": "weather"},
            "1": {"key": ["rain"], "content": "Grey.", "position": 7, "outletName": "weather", "order": 1},
            "2": {"key": ["rain"], "content": "lost", "position": 7}}}]}"#,
    )
    .unwrap();
    let out = stpreset::expand("[{{outlet::weather}}|{{outlet::none}}]", &ctx);
    // Outlets append in order descending: order 100 before order 1.
    assert_eq!(out.text, "[Wet Tomori.\nGrey.|]");
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == stpreset::DiagnosticKind::LoreOutletUnnamed)
    );
    let p = stpreset::Preset::from_json(
        br#"{"prompts": [{"identifier": "main", "content": "Sky: {{outlet::weather}}"}]}"#,
    )
    .unwrap();
    let r = p.compile().render(&ctx);
    assert_eq!(r.messages[0].text(), "Sky: Wet Tomori.\nGrey.");
}

#[test]
fn a_card_prompt_replaces_main_with_the_original_inside() {
    let p = stpreset::Preset::from_json(
        br#"{"prompts": [{"identifier": "main", "content": "Base."},
            {"identifier": "jailbreak", "content": "JB"}]}"#,
    )
    .unwrap()
    .compile();
    let card = stpreset::Card::from_bytes(
        br#"{"spec": "chara_card_v2", "data": {"name": "Sera", "system_prompt": "{{char}}: {{original}} ($1 {{ORIGINAL}})", "post_history_instructions": "Stay."}}"#,
        stpreset::lore::CardFormat::Json,
        &Limits::default(),
    )
    .unwrap();
    let mut ctx = Context::default();
    card.apply_to(&mut ctx);
    let texts: Vec<String> = p
        .render(&ctx)
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["Sera: Base. ($1 Base.)", "Stay."]);
    ctx.prefer_char_prompt = false;
    ctx.prefer_char_instruction = false;
    let texts: Vec<String> = p
        .render(&ctx)
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["Base.", "JB"]);
}

#[test]
fn a_chat_keeps_its_books_key_order_across_sets() {
    // Two string uids out of byte order: their scan order is the file's (SPEC §15.3.1), and a
    // budget of one entry shows which came first.
    let json = br#"{"position": 1, "world_info": {"budget_percent": 100},
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain"}],
        "lorebooks": [{"name": "w", "entries": {
            "zeta": {"key": ["rain"], "content": "first words here"},
            "alpha": {"key": ["rain"], "content": "second words here"}}}]}"#;
    let mut chat = stpreset::Chat::from_json(json).unwrap();
    let before = stpreset::activation::WiResult::for_context(chat.context()).activated;
    assert_eq!(before, ["w.zeta", "w.alpha"]);
    chat.set_json(br#"{"user": "Bob"}"#).unwrap();
    let after = stpreset::activation::WiResult::for_context(chat.context()).activated;
    assert_eq!(after, before);
}

#[test]
fn the_lore_budget_is_the_renders_available_after_the_presets_settings() {
    let words = |n: usize| vec!["w"; n].join(" ");
    let ctx = |settings: bool| {
        let v = json!({"tokenizer": "words", "position": 1, "preset_settings": settings,
            "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain"}],
            "lorebooks": [{"name": "w", "entries": {
                "0": {"key": ["rain"], "content": words(59), "order": 2},
                "1": {"key": ["rain"], "content": words(59), "order": 1}}}]});
        Context::from_json(v.to_string().as_bytes()).unwrap()
    };
    // 600 − 200 = 400 available, a quarter of it 100: the second entry (120 in all) overflows.
    let p = stpreset::Preset::from_json(
        br#"{"openai_max_context": 600, "openai_max_tokens": 200, "prompts": [
            {"identifier": "worldInfoBefore", "marker": true}]}"#,
    )
    .unwrap()
    .compile();
    let placed = |c: &Context| {
        let out = p.render(c);
        out.messages
            .iter()
            .map(|m| m.text().split_whitespace().count())
            .sum::<usize>()
    };
    assert_eq!(
        placed(&ctx(true)),
        59 + 1,
        "one entry and the history message"
    );
    // Without the preset's settings there is no budget: SillyTavern's default 3795 (949).
    assert_eq!(placed(&ctx(false)), 59 * 2 + 1);
}

#[test]
fn world_info_scripts_run_once_on_each_entry_when_allowed() {
    let p = stpreset::Preset::from_json(
        br#"{"prompts": [{"identifier": "worldInfoBefore", "marker": true},
            {"identifier": "chatHistory", "marker": true}],
          "extensions": {"regex_scripts": [
            {"scriptName": "shout", "findRegex": "/rain/g", "replaceString": "RAIN", "placement": [5], "promptOnly": true},
            {"scriptName": "gone", "findRegex": "/^secret.*$/", "replaceString": "", "placement": [5], "promptOnly": true}]}}"#,
    )
    .unwrap()
    .compile();
    let mut ctx = Context::from_json(
        br#"{"position": 1, "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain?"}],
        "lorebooks": [{"name": "w", "entries": {
            "0": {"key": ["rain"], "content": "It rains."},
            "1": {"key": ["rain"], "content": "secret lore"}}}]}"#,
    )
    .unwrap();
    let texts = |ctx: &Context| -> Vec<String> {
        p.render(ctx)
            .messages
            .iter()
            .map(|m| m.text().into_owned())
            .collect()
    };
    // Not allowed: the entries as written (and a RegexNotAllowed note).
    assert_eq!(texts(&ctx), ["secret lore\nIt rains.", "rain?"]);
    ctx.allow_preset_regex = true;
    // Allowed: each entry regexed once; the one a script empties is dropped; history untouched
    // (the scripts are for world info only).
    assert_eq!(texts(&ctx), ["It RAINs.", "rain?"]);
}

#[test]
fn a_key_seen_inside_a_word_then_whole_in_a_later_segment_activates() {
    // Hostile review: "cat" first occurs inside "xcatx" (not a whole word), then whole in a
    // later recursion segment; the entry keyed "cat" must still activate.
    let book = r#"{"entries": {
        "0": {"constant": true, "content": "zebra", "order": 100},
        "1": {"key": ["zebra"], "content": "xcatx lion", "order": 90},
        "2": {"key": ["lion"], "content": "the cat sat", "order": 85},
        "3": {"key": ["cat"], "content": "C", "order": 80}}}"#;
    let out = one_turn(book, &["hello"], &WiState::default(), vec![0.5]);
    assert_eq!(out.activated, ["b.0", "b.1", "b.2", "b.3"]);
}

#[test]
fn world_info_scripts_share_one_pass_total_across_entries() {
    let p = stpreset::Preset::from_json(
        br#"{"prompts": [{"identifier": "worldInfoBefore", "marker": true}],
          "extensions": {"regex_scripts": [
            {"scriptName": "slow", "findRegex": "/(a+)+$/", "replaceString": "Z", "placement": [5], "promptOnly": true}]}}"#,
    )
    .unwrap()
    .compile();
    let entries: serde_json::Map<String, Value> = (0..50)
        .map(|i| {
            (
                i.to_string(),
                json!({"constant": true, "content": format!("{}!{i}", "a".repeat(40))}),
            )
        })
        .collect();
    let v = json!({"position": 1, "allow_preset_regex": true, "max_context_tokens": 100000000,
        "lorebooks": [{"name": "w", "entries": entries}]});
    let mut ctx = Context::from_json(v.to_string().as_bytes()).unwrap();
    ctx.options.limits.regex_run_steps = 2_000;
    ctx.options.limits.regex_run_steps_max = 2_000;
    ctx.options.limits.regex_pass_steps = 10_000;
    let out = p.render(&ctx);
    // One pass for the whole walk: its total runs out, reported once without a script.
    let pass_spent: Vec<_> = out
        .diagnostics
        .iter()
        .filter(|d| d.kind == stpreset::DiagnosticKind::RegexLimit && d.script.is_none())
        .collect();
    assert_eq!(pass_spent.len(), 1, "{:#?}", out.diagnostics);
}

#[test]
fn a_key_over_the_cap_after_its_macros_never_matches() {
    let long = "d".repeat(2000);
    let v = json!({"description": long, "position": 1,
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": format!("x{long}")}],
        "lorebooks": [{"name": "w", "entries": {"0": {"key": ["x{{description}}"], "content": "c"}}}]});
    let ctx = Context::from_json(v.to_string().as_bytes()).unwrap();
    let out = stpreset::activation::WiResult::for_context(&ctx);
    assert!(out.activated.is_empty());
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == stpreset::DiagnosticKind::LoreLimit)
    );
}

#[test]
fn two_entries_with_one_name_are_reported() {
    let named = |name: &str, json: &str| {
        Lorebook::from_json(name, json.as_bytes(), &Limits::default()).unwrap()
    };
    let a = named("x", r#"{"entries": {"0": {"uid": "y.z", "key": ["k"]}}}"#);
    let b = named("x.y", r#"{"entries": {"0": {"uid": "z", "key": ["k"]}}}"#);
    let ctx = Context::default();
    let wi = WiInput::new(&ctx);
    let out = activate(
        &[a, b],
        &wi,
        &WiSettings::default(),
        &WiState::default(),
        &mut Fixed(vec![0.5], 0),
        &Words,
        &Limits::default(),
    );
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == stpreset::DiagnosticKind::LoreBookDuplicate)
    );
}

#[test]
fn a_context_files_card_values_are_read_and_the_depth_prompt_placed() {
    let ctx = Context::from_json(
        br#"{"first_mes": "Hello!", "alternate_greetings": ["Hi."],
        "char_depth_prompt": {"text": "Whisper.", "depth": 0},
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#,
    )
    .unwrap();
    assert_eq!(ctx.first_mes, "Hello!");
    let p = stpreset::Preset::from_json(
        br#"{"prompts": [{"identifier": "chatHistory", "marker": true}]}"#,
    )
    .unwrap()
    .compile();
    let out = p.render(&ctx);
    let text: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert!(text.iter().any(|t| t.contains("Whisper.")), "{text:?}");
    assert!(
        !text.iter().any(|t| t.contains("Hello!")),
        "a greeting is never rendered"
    );
    assert!(out.wi_state().is_none(), "no lore, no state");
}

/// Issue 38's levels book: every entry's keys miss, and entries with distinct
/// `delayUntilRecursion` values force one full pass per level. The gates and key tests of those
/// passes are charged to the call's plain total, so the call stops where it runs out, says so
/// once, and stops at the same test every time; under the total nothing changes.
#[test]
fn recursion_levels_spend_the_plain_total() {
    let levels_book = |entries: usize, keys: usize, levels: usize| {
        let mut e = serde_json::Map::new();
        for i in 0..entries {
            let mut ent = json!({"uid": i, "key": distinct_keys(keys), "content": format!("c{i}")});
            if i < levels {
                ent["delayUntilRecursion"] = json!(i + 1);
            }
            // The first level's entry is constant: it activates in the first recursion pass.
            if i == 0 {
                ent["constant"] = json!(true);
            }
            e.insert(i.to_string(), ent);
        }
        json!({"entries": e}).to_string()
    };
    let run = |limits: &Limits| {
        let book = Lorebook::from_json("b", levels_book(2000, 40, 130).as_bytes(), limits).unwrap();
        let ctx = Context::default();
        let mut wi = WiInput::new(&ctx);
        wi.history = vec![WiMessage {
            name: "",
            text: "nothing here",
        }];
        activate(
            &[book],
            &wi,
            &WiSettings::default(),
            &WiState::default(),
            &mut Fixed(vec![0.5], 0),
            &Words,
            limits,
        )
    };
    let lore_limits = |out: &stpreset::activation::WiResult| {
        out.diagnostics
            .iter()
            .filter(|d| d.kind == stpreset::DiagnosticKind::LoreLimit)
            .count()
    };
    // Default limits: 128 passes of 2,000 gates and (mostly) 40 key tests each fit; the pass
    // limit is what stops the call, after the first level's constant entry activated.
    let full = run(&Limits::default());
    assert!(
        full.diagnostics
            .iter()
            .any(|d| d.message.contains("scan passes")),
        "{:#?}",
        full.diagnostics
    );
    assert_eq!(full.activated, ["b.0"]);
    // A total of about half the first pass's tests: that pass stops, no recursion pass runs,
    // and it is reported once.
    let mut small = Limits::default();
    small.lore_plain_steps = 2000 * 41 * 32 / 2;
    let cut = run(&small);
    assert_eq!(lore_limits(&cut), 1, "{:#?}", cut.diagnostics);
    assert!(cut.activated.is_empty(), "{:?}", cut.activated);
    assert_eq!(run(&small).activated, cut.activated);
    assert_eq!(run(&small).diagnostics, cut.diagnostics);
}

/// Issue 53: a chat saved with `Chat::to_json` and loaded again renders turn N+1 as the chat
/// that was never saved: items, variables, globals and the World Info timed effects.
#[test]
fn a_saved_chat_renders_the_next_turn_as_the_kept_one() {
    let preset = stpreset::Preset::from_json(
        br#"{"prompts": [
            {"identifier": "main", "content": "{{setvar::turns::{{getvar::turns}}I}}{{setglobalvar::g::{{getglobalvar::g}}G}}Turn {{getvar::turns}} {{getglobalvar::g}}"},
            {"identifier": "worldInfoBefore", "marker": true},
            {"identifier": "chatHistory", "marker": true}]}"#,
    )
    .unwrap()
    .compile();
    let json = json!({"user": "Alice", "char": "Sera", "position": 1, "world_info": {"budget_percent": 100},
        "now": "2025-06-15T14:30:00.123456789Z",
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain \u{1F327}", "name": "Alice",
                   "time": "2025-06-15T14:29:00.5+02:00"}],
        "lorebooks": [{"name": "w", "entries": {
            "0": {"key": ["rain"], "content": "It rains.", "sticky": 3},
            "1": {"key": ["sun"], "content": "Sunny."}}}]});
    let mut kept = stpreset::Chat::from_json(json.to_string().as_bytes()).unwrap();
    let turn = |chat: &mut stpreset::Chat, n: u64, text: &str| {
        let out = preset.render(chat.context());
        let state = serde_json::to_string(out.wi_state().unwrap()).unwrap();
        let doc = out.to_json();
        chat.keep(out.variables.clone(), out.globals.clone());
        chat.set_json(format!(r#"{{"wi_state": {state}, "position": {n}}}"#).as_bytes())
            .unwrap();
        chat.push(stpreset::ContextItem::new(
            Some(stpreset::Tag::DialogueHistory),
            stpreset::Role::Model,
            text,
        ));
        doc
    };
    turn(&mut kept, 2, "It pours.");
    turn(&mut kept, 3, "Still.");
    // The restart: saved, then read back as a new process would.
    let saved = kept.to_json();
    let mut loaded = stpreset::Chat::from_json(saved.as_bytes()).unwrap();
    assert_eq!(loaded.context().items, kept.context().items);
    for (n, text) in [(4, "Dry now."), (5, "Sun.")] {
        let a = turn(&mut kept, n, text);
        let b = turn(&mut loaded, n, text);
        assert_eq!(a, b);
    }
    // The variables kept counting across the restart (four kept turns, then this render).
    let out = preset.render(loaded.context());
    let text: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(text[0], "Turn IIIII GGGGG", "{text:?}");
    assert_eq!(loaded.to_json(), kept.to_json());
    // A later format is refused, naming the field; so is a hostile one.
    for bad in [r#"{"stpreset_chat": 2}"#, r#"{"stpreset_chat": "1"}"#] {
        let err = stpreset::Chat::from_json(bad.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("stpreset_chat"), "{err}");
    }
}

/// Issue 38's min-activations book: `min_activations` above what can activate, scan depth 1,
/// a long chat: each pass widens the scan by one message and gates every entry again. The
/// passes are charged to the plain total: cut short, reported once, the same every time.
#[test]
fn min_activation_passes_spend_the_plain_total() {
    let mut e = serde_json::Map::new();
    for i in 0..2000 {
        e.insert(
            i.to_string(),
            json!({"uid": i, "key": distinct_keys(40), "content": "c"}),
        );
    }
    let book = json!({"entries": e}).to_string();
    let history: Vec<String> = (0..300).map(|i| format!("message {i}")).collect();
    let run = |plain: u64| {
        let mut limits = Limits::default();
        limits.lore_plain_steps = plain;
        let book = Lorebook::from_json("b", book.as_bytes(), &limits).unwrap();
        let ctx = Context::default();
        let mut wi = WiInput::new(&ctx);
        wi.history = history
            .iter()
            .map(|t| WiMessage { name: "", text: t })
            .collect();
        let mut settings = WiSettings::default();
        settings.min_activations = 1000;
        settings.scan_depth = 1;
        activate(
            &[book],
            &wi,
            &settings,
            &WiState::default(),
            &mut Fixed(vec![0.5], 0),
            &Words,
            &limits,
        )
    };
    let limited = |out: &stpreset::activation::WiResult| {
        out.diagnostics
            .iter()
            .filter(|d| d.kind == stpreset::DiagnosticKind::LoreLimit)
            .map(|d| d.message.to_string())
            .collect::<Vec<_>>()
    };
    // About three passes' tests: the call stops on the total, not on the pass limit.
    let cut = run(2000 * 41 * 32 * 3);
    assert_eq!(limited(&cut).len(), 1, "{:#?}", cut.diagnostics);
    assert!(
        limited(&cut)[0].contains("key-matching steps"),
        "{:?}",
        limited(&cut)
    );
    assert_eq!(run(2000 * 41 * 32 * 3).diagnostics, cut.diagnostics);
    // The default total lets the pass limit stop it first.
    let full = run(Limits::default().lore_plain_steps);
    let full = limited(&full);
    assert!(
        full.len() == 1 && full[0].contains("scan passes"),
        "{full:?}"
    );
}

/// Issue 38's compact keys: an entry whose keys repeat, or are empty more than once, matches
/// as it did; every selective logic is a test over the set of keys.
#[test]
fn repeated_and_empty_keys_match_as_written() {
    let run = |key: serde_json::Value, secondary: serde_json::Value, logic: u8, text: &str| {
        let book = json!({"entries": {"0": {"key": key, "keysecondary": secondary,
            "selectiveLogic": logic, "content": "X"}}})
        .to_string();
        let book = Lorebook::from_json("b", book.as_bytes(), &Limits::default()).unwrap();
        let ctx = Context::default();
        let mut wi = WiInput::new(&ctx);
        wi.history = vec![WiMessage { name: "", text }];
        activate(
            &[book],
            &wi,
            &WiSettings::default(),
            &WiState::default(),
            &mut Fixed(vec![0.5], 0),
            &Words,
            &Limits::default(),
        )
        .activated
        .len()
    };
    // AND_ALL with an empty secondary key never passes, however many empties there are.
    for secondary in [json!(["sun", ""]), json!(["sun", "", " ", ""])] {
        assert_eq!(run(json!(["rain"]), secondary, 3, "rain sun"), 0);
    }
    // AND_ANY, NOT_ANY, NOT_ALL with repeats: as with each key once.
    for (logic, text, want) in [
        (0, "rain sun", 1),
        (1, "rain sun", 1),
        (2, "rain sun", 0),
        (2, "rain", 1),
    ] {
        let once = run(json!(["rain"]), json!(["sun", "moon"]), logic, text);
        let twice = run(
            json!(["rain", "rain"]),
            json!(["sun", "moon", "sun", "moon"]),
            logic,
            text,
        );
        assert_eq!((once, twice), (want, want), "logic {logic} on {text:?}");
    }
    assert_eq!(
        run(json!(["", "", "rain", "rain"]), json!([]), 0, "rain"),
        1
    );
}

/// `n` different keys that never match (`zq0`, `zq1`, …): repeated keys are kept once at
/// import, so the hostile books' keys differ.
fn distinct_keys(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("zq{k}")).collect()
}

/// Issue 39: SillyTavern records a timed effect only when the entry's value is set (`if
/// (!entry[type]) return;`): `sticky: 0` and `cooldown: 0` leave no effect in the state.
#[test]
fn zero_length_timed_effects_are_not_recorded() {
    let book = json!({"entries": {
        "0": {"key": ["rain"], "content": "A", "sticky": 0, "cooldown": 0},
        "1": {"key": ["rain"], "content": "B", "sticky": 2, "cooldown": 0},
        "2": {"key": ["rain"], "content": "C", "sticky": 0, "cooldown": 3}}})
    .to_string();
    let book = Lorebook::from_json("b", book.as_bytes(), &Limits::default()).unwrap();
    let ctx = Context::default();
    let mut wi = WiInput::new(&ctx);
    wi.history = vec![WiMessage {
        name: "",
        text: "rain",
    }];
    wi.position = Some(1);
    let out = activate(
        &[book],
        &wi,
        &WiSettings::default(),
        &WiState::default(),
        &mut Fixed(vec![0.5], 0),
        &Words,
        &Limits::default(),
    );
    assert_eq!(out.activated.len(), 3);
    let effects: Vec<(String, String, u64)> = serde_json::to_value(&out.state).unwrap()["effects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["entry"].as_str().unwrap().to_string(),
                e["end"].as_u64().unwrap() - e["start"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        effects,
        [
            ("sticky".to_string(), "b.1".to_string(), 2),
            ("cooldown".to_string(), "b.2".to_string(), 3)
        ]
    );
}

/// A call reads at most 2¹⁷ keys (issue 38: each costs ~100 bytes while the call runs, so a
/// book of millions of short keys held hundreds of MB): past it an entry's keys are not read
/// and none matches, in scan order (higher `order` first), with one `LoreLimit`.
#[test]
fn a_call_reads_a_bounded_number_of_keys() {
    // 520 entries of 256 distinct keys (133,120 > 131,072): the last few in scan order fall
    // past the cap. Every entry also has the key `hit`.
    let entry = |i: usize| {
        let mut keys: Vec<String> = (0..255).map(|k| format!("k{i}x{k}")).collect();
        keys.push("hit".into());
        json!({"uid": i, "key": keys, "content": format!("c{i}"), "order": 1000 - i})
    };
    let entries: serde_json::Map<String, Value> =
        (0..520).map(|i| (i.to_string(), entry(i))).collect();
    let book = json!({"entries": entries}).to_string();
    let out = one_turn(&book, &["a hit"], &WiState::default(), vec![0.0]);
    let active = &out.activated;
    // 131,072 / 256 = 512 entries read: b.0..b.511 activate, b.512..b.519 do not.
    assert_eq!(active.len(), 512, "{:?}", &active[500..]);
    assert!(active.contains(&"b.511".to_string()) && !active.contains(&"b.512".to_string()));
    assert!(out.diagnostics.iter().any(
        |d| d.kind == stpreset::DiagnosticKind::LoreLimit && d.message.contains("131072 keys")
    ));
}
