//! The context file of SPEC §9 (JSON) read into a [`Context`]: field for field, each value
//! checked with an error that names its field, unknown fields named with a "did you mean",
//! lorebooks streamed, regex script lists read leniently.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::{Context, ContextItem, MapHost, Role, UTF8_BOM};
use crate::error::ContextError;
use crate::limits::Limits;
use crate::options::{Budget, Injection, RenderOptions};
use crate::provider::{ProviderOptions, Tri};
use crate::settings::{PresetSettingsUse, SettingsEdit};
use crate::tokens::{Counter, Tokenizer};

/// Runs a JSON reader with room for its recursion (serde_json goes 128 levels deep): a bot's
/// worker thread may have 64 KiB of stack, which 127 nested arrays overflow. Costs nothing
/// when the stack has room.
pub(crate) fn guarded<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(256 << 10, 1 << 20, f)
}

/// The context file of SPEC §9, field for field.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ContextFile {
    user: Option<String>,
    char: String,
    description: String,
    personality: String,
    scenario: String,
    persona: String,
    mes_examples: String,
    mes_examples_raw: String,
    char_version: String,
    char_prompt: String,
    char_instruction: String,
    group: Vec<String>,
    group_muted: Vec<String>,
    // SPEC §18.3: each member's card as a card file's JSON, read as `--card` reads one.
    group_cards: BTreeMap<String, Box<serde_json::value::RawValue>>,
    #[serde(deserialize_with = "present")]
    group_generation_mode: Option<serde_json::Value>,
    group_join_prefix: String,
    group_join_suffix: String,
    model: String,
    provider: String,
    #[serde(deserialize_with = "rfc3339")]
    now: Option<DateTime<Utc>>,
    utc_offset_minutes: i32,
    time_awareness: Option<bool>,
    seed: u64,
    chat_id: String,
    capabilities: BTreeMap<String, bool>,
    tools: Vec<String>,
    tool_families: BTreeMap<String, bool>,
    tool_names: BTreeMap<String, String>,
    tool_phrases: BTreeMap<String, String>,
    /// Host macros (issue 39): `{"summary": "…"}`.
    macros: BTreeMap<String, String>,
    globals: BTreeMap<String, String>,
    variables: BTreeMap<String, String>,
    items: Vec<ContextItem>,
    injection: Option<Injection>,
    // SPEC §12, §14: read as JSON values so that every refusal names its field; `null` is
    // kept apart from a missing field.
    provider_options: Option<serde_json::Value>,
    #[serde(deserialize_with = "present")]
    max_context_tokens: Option<serde_json::Value>,
    #[serde(deserialize_with = "present")]
    reserve_tokens: Option<serde_json::Value>,
    tokenizer: Option<serde_json::Value>,
    #[serde(deserialize_with = "present")]
    preset_settings: Option<serde_json::Value>,
    allow_preset_regex: bool,
    allow_char_regex: bool,
    regex_scripts: Option<Box<serde_json::value::RawValue>>,
    char_regex_scripts: Option<Box<serde_json::value::RawValue>>,
    // SPEC §15.9. Books keep their entries' key order, so they are read from the raw text.
    world_info: Option<crate::lore::WiSettings>,
    lorebooks: Option<Box<serde_json::value::RawValue>>,
    wi_state: Option<crate::lore::WiState>,
    position: Option<u64>,
    generation_type: Option<crate::lore::GenerationType>,
    prefer_char_prompt: Option<bool>,
    prefer_char_instruction: Option<bool>,
    first_mes: String,
    alternate_greetings: Vec<String>,
    char_depth_prompt: Option<DepthPromptFile>,
    creator_notes: String,
    system_prompt: Option<String>,
    extensions: Option<Vec<String>>,
    first_included_message_id: Option<u64>,
    first_displayed_message_id: Option<u64>,
    // SPEC §17: read as JSON values so that every refusal names its field.
    #[serde(deserialize_with = "present")]
    layout: Option<serde_json::Value>,
    #[serde(deserialize_with = "present")]
    random: Option<serde_json::Value>,
    persona_position: Option<serde_json::Value>,
    persona_depth: Option<serde_json::Value>,
    persona_role: Option<serde_json::Value>,
    author_note: Option<serde_json::Value>,
    char_note_depth: Option<serde_json::Value>,
    char_note_role: Option<serde_json::Value>,
    chat_scenario: Option<String>,
    chat_mes_example: Option<String>,
    chat_system_prompt: Option<String>,
    start_reply_with: Option<String>,
    pin_examples: Option<bool>,
    chat_id_hash: Option<serde_json::Value>,
    pick_reroll_seed: Option<serde_json::Value>,
    quiet_prompt: Option<String>,
    quiet_skip_wi: Option<bool>,
    /// A saved chat's format (`Chat::to_json`): only [`CHAT_FORMAT`] is read.
    stpreset_chat: Option<serde_json::Value>,
    /// The render's work budget (issue 38): `render_work`, `chat_work`.
    limits: Option<serde_json::Value>,
}

/// `group_cards`: each member's card read as a card file's JSON (SPEC §18.3), a refusal
/// naming the member.
fn group_cards(
    raw: &BTreeMap<String, Box<serde_json::value::RawValue>>,
    limits: &crate::limits::Limits,
) -> Result<BTreeMap<String, crate::lore::GroupCard>, ContextError> {
    raw.iter()
        .map(|(name, card)| {
            crate::lore::Card::from_bytes(
                card.get().as_bytes(),
                crate::lore::CardFormat::Json,
                limits,
            )
            .map(|card| (name.clone(), crate::lore::GroupCard::from(&card)))
            .map_err(|e| ContextError::Field {
                field: format!("group_cards.{}", crate::diagnostic::excerpt(name)),
                problem: e.to_string(),
            })
        })
        .collect()
}

/// The format `Chat::to_json` writes as `stpreset_chat` (docs/context.md, "Saving a chat").
pub(crate) const CHAT_FORMAT: u64 = 1;

/// `char_depth_prompt` in a context file: `{"text", "depth" (default 4), "role" (default
/// system)}`, as `stpreset card` prints a card's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DepthPromptFile {
    text: String,
    depth: Option<u64>,
    role: Option<Role>,
}

/// An RFC 3339 time or `null`, with an example in the error (chrono's own says "premature end
/// of input" for `2026-01-01`).
pub(super) fn rfc3339<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<DateTime<Utc>>, D::Error> {
    let Some(s) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    DateTime::parse_from_rfc3339(&s)
        .map(|t| Some(t.with_timezone(&Utc)))
        .map_err(|_| {
            serde::de::Error::custom(format!(
                "expected an RFC 3339 time, e.g. 2026-11-29T17:07:00Z, found \"{}\"",
                crate::diagnostic::excerpt(&s)
            ))
        })
}

/// A field that is present, `null` included (a missing one is `None` by `default`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

/// `preset_settings` (SPEC §14.3): `true`, `false`, or an object of settings to replace.
fn preset_settings_field(v: Option<&serde_json::Value>) -> Result<PresetSettingsUse, ContextError> {
    match v {
        None | Some(serde_json::Value::Bool(true)) => Ok(PresetSettingsUse::Use),
        Some(serde_json::Value::Bool(false)) => Ok(PresetSettingsUse::Ignore),
        Some(serde_json::Value::Object(map)) => {
            let mut edit = SettingsEdit::default();
            for (key, value) in map {
                edit.set(key, value)
                    .map_err(|problem| ContextError::Field {
                        field: format!("preset_settings.{}", crate::diagnostic::excerpt(key)),
                        problem,
                    })?;
            }
            Ok(PresetSettingsUse::Edit(edit))
        }
        Some(other) => Err(ContextError::Field {
            field: "preset_settings".into(),
            problem: format!(
                "expected true, false or an object of preset settings, found {}",
                crate::diagnostic::excerpt(&other.to_string())
            ),
        }),
    }
}

/// A u32 field (`max_context_tokens`, `reserve_tokens`): a JSON integer in `0..=4294967295`;
/// missing is unset (the preset's applies, SPEC §14.5), `null` is none.
fn tokens_field(field: &str, v: Option<&serde_json::Value>) -> Result<Tri<u32>, ContextError> {
    match v {
        None => Ok(Tri::Unset),
        Some(serde_json::Value::Null) => Ok(Tri::Null),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Tri::Value)
            .ok_or_else(|| ContextError::Field {
                field: field.into(),
                problem: format!(
                    "expected an integer from 0 to 4294967295, found {}",
                    crate::diagnostic::excerpt(&v.to_string())
                ),
            }),
    }
}

fn field_error(field: &str, problem: impl Into<String>) -> ContextError {
    ContextError::Field {
        field: field.into(),
        problem: problem.into(),
    }
}

fn found(v: &serde_json::Value) -> String {
    crate::diagnostic::excerpt(&v.to_string()).to_string()
}

/// `layout` (SPEC §17.1): `"seed"`, `"sillytavern"` or `null`.
fn layout_field(v: Option<&serde_json::Value>) -> Result<crate::layout::Layout, ContextError> {
    use crate::layout::Layout;
    match v {
        None | Some(serde_json::Value::Null) => Ok(Layout::Seed),
        Some(serde_json::Value::String(s)) if s == "seed" => Ok(Layout::Seed),
        Some(serde_json::Value::String(s)) if s == "sillytavern" => Ok(Layout::SillyTavern),
        Some(v) => Err(field_error(
            "layout",
            format!("expected \"seed\" or \"sillytavern\", found {}", found(v)),
        )),
    }
}

/// `group_generation_mode` (SPEC §18.3): `"swap"` (also `null`), `"append"`, `"append_disabled"`.
fn group_mode_field(
    v: Option<&serde_json::Value>,
) -> Result<crate::layout::GroupMode, ContextError> {
    use crate::layout::GroupMode;
    match v {
        None | Some(serde_json::Value::Null) => Ok(GroupMode::Swap),
        Some(v) => v.as_str().and_then(GroupMode::from_name).ok_or_else(|| {
            field_error(
                "group_generation_mode",
                format!(
                    "expected \"swap\", \"append\" or \"append_disabled\", found {}",
                    found(v)
                ),
            )
        }),
    }
}

/// `random` (SPEC §17.3.1): `{"constant": X}` with 0 <= X < 1, or `null`.
fn random_field(v: Option<&serde_json::Value>) -> Result<Option<f64>, ContextError> {
    let bad = |v: &serde_json::Value| {
        field_error(
            "random",
            format!(
                "expected {{\"constant\": X}} with 0 <= X < 1, found {}",
                found(v)
            ),
        )
    };
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v @ serde_json::Value::Object(map)) => match (map.len(), map.get("constant")) {
            (1, Some(x)) => match x.as_f64() {
                Some(x) if (0.0..1.0).contains(&x) => Ok(Some(x)),
                _ => Err(bad(v)),
            },
            _ => Err(bad(v)),
        },
        Some(v) => Err(bad(v)),
    }
}

fn role_field(field: &str, v: Option<&serde_json::Value>) -> Result<Option<Role>, ContextError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) if s == "system" => Ok(Some(Role::System)),
        Some(serde_json::Value::String(s)) if s == "user" => Ok(Some(Role::User)),
        Some(serde_json::Value::String(s)) if s == "assistant" => Ok(Some(Role::Model)),
        Some(v) => Err(field_error(
            field,
            format!(
                "expected \"system\", \"user\" or \"assistant\", found {}",
                found(v)
            ),
        )),
    }
}

fn count_field(
    field: &str,
    v: Option<&serde_json::Value>,
    max: u64,
) -> Result<Option<u64>, ContextError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => v.as_u64().filter(|n| *n <= max).map(Some).ok_or_else(|| {
            field_error(
                field,
                format!("expected an integer from 0 to {max}, found {}", found(v)),
            )
        }),
    }
}

/// The SillyTavern user state of SPEC §17.2.
fn user_settings(file: &ContextFile) -> Result<crate::layout::UserSettings, ContextError> {
    use crate::layout::{AuthorsNote, PersonaPosition, UserSettings};
    let mut st = UserSettings::default();
    if let Some(v) = file.persona_position.as_ref().filter(|v| !v.is_null()) {
        st.persona_position = v
            .as_i64()
            .and_then(PersonaPosition::from_number)
            .ok_or_else(|| {
                field_error(
                    "persona_position",
                    format!("expected 0, 2, 3, 4 or 9, found {}", found(v)),
                )
            })?;
    }
    const DEPTH: u64 = 10_000;
    if let Some(d) = count_field("persona_depth", file.persona_depth.as_ref(), DEPTH)? {
        st.persona_depth = d;
    }
    if let Some(r) = role_field("persona_role", file.persona_role.as_ref())? {
        st.persona_role = r;
    }
    if let Some(d) = count_field("char_note_depth", file.char_note_depth.as_ref(), DEPTH)? {
        st.char_note_depth = d;
    }
    if let Some(r) = role_field("char_note_role", file.char_note_role.as_ref())? {
        st.char_note_role = r;
    }
    match file.author_note.as_ref() {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(map)) => {
            let mut note = AuthorsNote::default();
            for (key, v) in map {
                let field = format!("author_note.{}", crate::diagnostic::excerpt(key));
                match key.as_str() {
                    "text" => {
                        note.text = v
                            .as_str()
                            .ok_or_else(|| {
                                field_error(
                                    &field,
                                    format!("expected a string, found {}", found(v)),
                                )
                            })?
                            .to_string();
                    }
                    "interval" => {
                        note.interval =
                            count_field(&field, Some(v), u64::from(u32::MAX))?.unwrap_or(1)
                    }
                    "position" => {
                        note.position = match v.as_u64() {
                            Some(p @ 0..=2) => p as u8,
                            _ => {
                                return Err(field_error(
                                    &field,
                                    format!("expected 0, 1 or 2, found {}", found(v)),
                                ));
                            }
                        }
                    }
                    "depth" => note.depth = count_field(&field, Some(v), DEPTH)?.unwrap_or(4),
                    "role" => note.role = role_field(&field, Some(v))?.unwrap_or(Role::System),
                    _ => {
                        return Err(field_error(
                            &field,
                            "unknown field (expected text, interval, position, depth, role)",
                        ));
                    }
                }
            }
            st.author_note = note;
        }
        Some(v) => {
            return Err(field_error(
                "author_note",
                format!("expected an object, found {}", found(v)),
            ));
        }
    }
    for (slot, value) in [
        (&mut st.chat_scenario, &file.chat_scenario),
        (&mut st.chat_mes_example, &file.chat_mes_example),
        (&mut st.chat_system_prompt, &file.chat_system_prompt),
        (&mut st.start_reply_with, &file.start_reply_with),
    ] {
        if let Some(v) = value {
            slot.clone_from(v);
        }
    }
    st.pin_examples = file.pin_examples.unwrap_or(false);
    st.quiet_prompt = file.quiet_prompt.clone().unwrap_or_default();
    st.quiet_skip_wi = file.quiet_skip_wi.unwrap_or(false);
    st.chat_id_hash = count_field(
        "chat_id_hash",
        file.chat_id_hash.as_ref(),
        9_007_199_254_740_991,
    )?;
    st.pick_reroll_seed = match file.pick_reroll_seed.as_ref() {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(v @ serde_json::Value::Number(n)) if n.is_i64() || n.is_u64() => Some(v.to_string()),
        Some(v) => {
            return Err(field_error(
                "pick_reroll_seed",
                format!("expected a string or an integer, found {}", found(v)),
            ));
        }
    };
    Ok(st)
}

/// serde's "unknown field `X`, expected one of `a`, `b`, …" (every field, 60 of them) as
/// "unknown field `X` (did you mean `b`?)" when one is close (issue 39): names bots write from
/// SillyTavern's code or other libraries (`charName`, `history`), the snake_case spelling of a
/// camelCase one, or the nearest by Jaro-Winkler similarity. `None` when nothing is close.
const MAX_GUESSED_KEY: usize = 256;

fn did_you_mean(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, rest) = rest.split_once('`')?;
    // No field is a tenth this long: a longer key is no typo of one, and comparing it with
    // every field costs its length times theirs (a 57 KB key was a fuzzer's timeout).
    if unknown.len() > MAX_GUESSED_KEY {
        return None;
    }
    let names: Vec<&str> = rest
        .strip_prefix(", expected one of ")?
        .split(", ")
        .filter_map(|n| n.strip_prefix('`')?.strip_suffix('`'))
        .collect();
    const ALIASES: [(&str, &str); 12] = [
        ("charname", "char"),
        ("character", "char"),
        ("name2", "char"),
        ("username", "user"),
        ("name1", "user"),
        ("history", "items"),
        ("messages", "items"),
        ("chat", "items"),
        ("lorebook", "lorebooks"),
        ("worldinfo", "lorebooks"),
        ("examples", "mes_examples"),
        ("mesexample", "mes_examples"),
    ];
    let folded: String = unknown
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    let snake: String = unknown.chars().fold(String::new(), |mut s, c| {
        if c.is_ascii_uppercase() {
            s.push('_');
        }
        s.push(c.to_ascii_lowercase());
        s
    });
    let guess = ALIASES
        .iter()
        .find(|(alias, _)| *alias == folded)
        .map(|(_, name)| *name)
        .or_else(|| names.iter().copied().find(|n| *n == snake))
        .or_else(|| {
            names
                .iter()
                .map(|n| (strsim::jaro_winkler(&snake, n), *n))
                .filter(|(score, _)| *score > 0.85)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, n)| n)
        })
        .filter(|n| names.contains(n))?;
    Some(format!(
        "unknown field `{}` (did you mean `{guess}`? docs/context.md lists the fields)",
        crate::diagnostic::excerpt(unknown)
    ))
}

/// `limits`: the work budget a host tunes per deployment (docs/hardening.md). Only
/// `render_work` and `chat_work` are read from a context (decision): the other limits are the
/// library's safety margins, set in code if at all.
fn limits_field(v: Option<&serde_json::Value>) -> Result<Limits, ContextError> {
    let mut limits = Limits::default();
    let map = match v {
        None | Some(serde_json::Value::Null) => return Ok(limits),
        Some(serde_json::Value::Object(map)) => map,
        Some(v) => {
            return Err(field_error(
                "limits",
                format!("expected an object, found {}", found(v)),
            ));
        }
    };
    for (key, value) in map {
        let slot = match key.as_str() {
            "render_work" => &mut limits.render_work,
            "chat_work" => &mut limits.chat_work,
            _ => {
                return Err(field_error(
                    &format!("limits.{}", crate::diagnostic::excerpt(key)),
                    "a context sets only `render_work` and `chat_work`",
                ));
            }
        };
        *slot = value.as_u64().ok_or_else(|| {
            field_error(
                &format!("limits.{key}"),
                format!(
                    "expected a whole number of work units, found {}",
                    found(value)
                ),
            )
        })?;
    }
    Ok(limits)
}

fn tokenizer_field(v: Option<&serde_json::Value>) -> Result<Tokenizer, ContextError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(Tokenizer::Auto),
        Some(v) => Tokenizer::deserialize(v).map_err(|_| ContextError::Field {
            field: "tokenizer".into(),
            problem: "expected one of \"auto\", \"o200k\", \"cl100k\", \"approx\", \"words\""
                .into(),
        }),
    }
}

impl Context {
    /// Adds regex scripts of `source` from JSON as SillyTavern's Regex extension exports
    /// them: one script (an object) or a list. The host's own go in `regex_scripts` (they run
    /// before the preset's, always); a card's in `char_regex_scripts` (after the preset's,
    /// when `allow_char_regex`). Entries that cannot be read are ignored, and every pass then
    /// says so (`RegexScriptInvalid`).
    ///
    /// ```
    /// use stpreset::{Context, scripts::ScriptSource};
    /// let mut ctx = Context::default();
    /// ctx.add_regex_scripts(ScriptSource::Global, br#"{"scriptName": "x", "findRegex": "a", "placement": [2]}"#)
    ///     .unwrap();
    /// assert_eq!(ctx.regex_scripts[0].name, "x");
    /// assert!(ctx.add_regex_scripts(ScriptSource::Global, b"{").is_err());
    /// ```
    pub fn add_regex_scripts(
        &mut self,
        source: crate::scripts::ScriptSource,
        json: &[u8],
    ) -> Result<(), ContextError> {
        let value: serde_json::Value =
            serde_json::from_slice(json).map_err(|e| ContextError::Field {
                field: "regex_scripts".into(),
                problem: format!("not JSON: {}", strip_position(&e.to_string())),
            })?;
        let list = match value {
            serde_json::Value::Object(_) => serde_json::Value::Array(vec![value]),
            other => other,
        };
        let raw = serde_json::value::to_raw_value(&list).map_err(|e| ContextError::Field {
            field: "regex_scripts".into(),
            problem: e.to_string(),
        })?;
        let (scripts, mut notes) = crate::scripts::read_list(&raw, source);
        match source {
            crate::scripts::ScriptSource::Character => self.char_regex_scripts.extend(scripts),
            crate::scripts::ScriptSource::Global => self.regex_scripts.extend(scripts),
            crate::scripts::ScriptSource::Preset => {
                return Err(ContextError::Field {
                    field: "regex_scripts".into(),
                    problem: "a preset's scripts come with the preset".into(),
                });
            }
        }
        self.regex_notes.append(&mut notes);
        Ok(())
    }

    /// Reads a context file (SPEC §9). Unknown fields and unknown tags are errors that name them.
    ///
    /// ```
    /// let ctx = stpreset::Context::from_json(br#"{"user": "Alice", "seed": 3}"#).unwrap();
    /// assert_eq!((ctx.user.as_str(), ctx.seed), ("Alice", 3));
    /// let err = stpreset::Context::from_json(br#"{"usr": "Alice"}"#).unwrap_err();
    /// assert!(err.to_string().contains("usr"));
    /// ```
    pub fn from_json(bytes: &[u8]) -> Result<Context, ContextError> {
        guarded(|| Context::read_json(bytes))
    }

    fn read_json(bytes: &[u8]) -> Result<Context, ContextError> {
        let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        let (text, lone_surrogates) =
            crate::surrogates::json_text(bytes).map_err(|offset| ContextError::Utf8 { offset })?;
        let text = &*text;
        let json_error = |e: serde_json::Error| ContextError::Json {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        };
        // serde would also read a struct from an array, and says "invalid type: integer"
        // for `5`: name the real problem.
        if !text.trim_start().starts_with('{') {
            let value: serde_json::Value = serde_json::from_str(text).map_err(json_error)?;
            let found = match value {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "a boolean",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::String(_) => "a string",
                serde_json::Value::Array(_) => "an array",
                serde_json::Value::Object(_) => "an object",
            };
            return Err(ContextError::NotAnObject { found });
        }
        // The path names the field a type error is about (`items[2].text: invalid type: …`):
        // serde_json alone gives only a line and a column.
        let mut de = serde_json::Deserializer::from_str(text);
        let mut file: ContextFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let message = strip_position(&inner.to_string());
            let message = did_you_mean(&message).unwrap_or(message);
            ContextError::Json {
                line: inner.line(),
                column: inner.column(),
                message: match path.as_str() {
                    "" | "." | "?" => message,
                    path => format!("`{}`: {message}", crate::diagnostic::excerpt(path)),
                },
            }
        })?;
        de.end().map_err(json_error)?;
        if let Some(v) = &file.stpreset_chat
            && v.as_u64() != Some(CHAT_FORMAT)
        {
            return Err(ContextError::Field {
                field: "stpreset_chat".into(),
                problem: format!(
                    "a chat saved in format {} (this stpreset reads format {CHAT_FORMAT})",
                    crate::diagnostic::excerpt(&v.to_string())
                ),
            });
        }
        let lore = lore_fields(&mut file)?;
        // The host's and the card's regex scripts, read as a preset's are (SPEC §13.1).
        let mut regex_notes = Vec::new();
        let mut scripts = |raw: Option<&serde_json::value::RawValue>, source| {
            raw.map(|raw| {
                let (list, mut notes) = crate::scripts::read_list(raw, source);
                regex_notes.append(&mut notes);
                list
            })
            .unwrap_or_default()
        };
        let regex_scripts = scripts(
            file.regex_scripts.as_deref(),
            crate::scripts::ScriptSource::Global,
        );
        let char_regex_scripts = scripts(
            file.char_regex_scripts.as_deref(),
            crate::scripts::ScriptSource::Character,
        );
        let limits = limits_field(file.limits.as_ref())?;
        let group_cards = group_cards(&file.group_cards, &limits)?;
        let group_generation_mode = group_mode_field(file.group_generation_mode.as_ref())?;
        let layout = layout_field(file.layout.as_ref())?;
        let random = random_field(file.random.as_ref())?;
        let user_settings = user_settings(&file)?;
        let mut host = MapHost::default();
        for (k, v) in &file.capabilities {
            host.set_capability(k, *v);
        }
        for t in &file.tools {
            host.add_tool(t);
        }
        for (k, v) in &file.tool_families {
            host.set_tool_family(k, *v);
        }
        for (k, v) in &file.tool_names {
            host.set_tool_name(k, v);
        }
        for (k, v) in &file.tool_phrases {
            host.set_tool_phrase(k, v);
        }
        for (k, v) in &file.macros {
            host.set_macro(k, v);
        }
        Ok(Context {
            user: file.user.unwrap_or_else(|| "User".into()),
            char: file.char,
            description: file.description,
            personality: file.personality,
            scenario: file.scenario,
            persona: file.persona,
            mes_examples: file.mes_examples,
            mes_examples_raw: file.mes_examples_raw,
            char_version: file.char_version,
            char_prompt: file.char_prompt,
            char_instruction: file.char_instruction,
            group: file.group,
            group_muted: file.group_muted,
            group_cards,
            group_generation_mode,
            group_join_prefix: file.group_join_prefix,
            group_join_suffix: file.group_join_suffix,
            model: file.model,
            provider: file.provider,
            now: file.now,
            utc_offset_minutes: file.utc_offset_minutes,
            time_awareness: file.time_awareness.unwrap_or(true),
            seed: file.seed,
            chat_id: file.chat_id,
            globals: file.globals,
            variables: file.variables,
            items: file.items,
            host,
            options: RenderOptions {
                budget: Budget {
                    max_context_tokens: tokens_field(
                        "max_context_tokens",
                        file.max_context_tokens.as_ref(),
                    )?,
                    reserve_tokens: tokens_field("reserve_tokens", file.reserve_tokens.as_ref())?,
                    counter: Counter::Builtin(tokenizer_field(file.tokenizer.as_ref())?),
                },
                random,
                limits,
                ..RenderOptions::default().with_injection(file.injection.unwrap_or_default())
            },
            provider_options: match &file.provider_options {
                None | Some(serde_json::Value::Null) => ProviderOptions::default(),
                Some(v) => {
                    ProviderOptions::from_json(v).map_err(|(key, problem)| ContextError::Field {
                        field: match key.as_str() {
                            "" => "provider_options".into(),
                            key => format!("provider_options.{key}"),
                        },
                        problem,
                    })?
                }
            },
            preset_settings: preset_settings_field(file.preset_settings.as_ref())?,
            allow_preset_regex: file.allow_preset_regex,
            allow_char_regex: file.allow_char_regex,
            regex_scripts,
            char_regex_scripts,
            regex_notes,
            lone_surrogates,
            surrogate_lines: Vec::new(),
            lore,
            prefer_char_prompt: file.prefer_char_prompt.unwrap_or(true),
            prefer_char_instruction: file.prefer_char_instruction.unwrap_or(true),
            first_mes: file.first_mes,
            alternate_greetings: file.alternate_greetings,
            char_depth_prompt: file.char_depth_prompt.map(|d| crate::lore::DepthPrompt {
                text: d.text,
                depth: d.depth.unwrap_or(4),
                role: d.role.unwrap_or(Role::System),
            }),
            creator_notes: file.creator_notes,
            system_prompt: file.system_prompt,
            extensions: file.extensions,
            first_included_message_id: file.first_included_message_id,
            first_displayed_message_id: file.first_displayed_message_id,
            layout,
            user_settings,
            outlets: BTreeMap::new(),
            placed_generation: Default::default(),
            swiped: None,
        })
    }
}

/// The World Info fields (SPEC §15.9): `Some` when any of them is given.
fn lore_fields(file: &mut ContextFile) -> Result<Option<crate::lore::LoreInput>, ContextError> {
    let any = file.world_info.is_some()
        || file.lorebooks.is_some()
        || file.wi_state.is_some()
        || file.position.is_some()
        || file.generation_type.is_some();
    if !any {
        return Ok(None);
    }
    let books = match file.lorebooks.take() {
        Some(raw) => crate::lore::read_lorebooks(raw.get(), &crate::limits::Limits::default())
            .map_err(|(field, problem)| ContextError::Field { field, problem })?,
        None => Vec::new(),
    };
    let mut lore = crate::lore::LoreInput::new(books);
    lore.settings = file.world_info.take().unwrap_or_default();
    lore.state = file.wi_state.take().unwrap_or_default();
    lore.position = file.position;
    lore.generation_type = file.generation_type.unwrap_or_default();
    Ok(Some(lore))
}

/// serde_json appends " at line L column C"; the error carries those separately.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_field_names_the_one_meant() {
        let err = |json: &str| Context::from_json(json.as_bytes()).unwrap_err().to_string();
        for (json, meant) in [
            (r#"{"charName": "x"}"#, "`char`"),
            (r#"{"history": []}"#, "`items`"),
            (r#"{"allowPresetRegex": true}"#, "`allow_preset_regex`"),
            (r#"{"mes_example": ""}"#, "`mes_examples`"),
            (r#"{"lorebook": []}"#, "`lorebooks`"),
        ] {
            let e = err(json);
            assert!(e.contains(&format!("did you mean {meant}?")), "{json}: {e}");
            assert!(!e.contains("expected one of"), "{e}");
        }
        // Nothing close: the list stays.
        let e = err(r#"{"zzzz": 1}"#);
        assert!(e.contains("expected one of `user`"), "{e}");
        // A key far longer than any field is no typo of one: the list stays, and the key is
        // not compared with every field (its length times theirs).
        let e = err(&format!(r#"{{"{}chars": 1}}"#, "a".repeat(MAX_GUESSED_KEY)));
        assert!(e.contains("expected one of `user`"), "{e}");
    }

    #[test]
    fn unknown_tag_is_named() {
        let err =
            Context::from_json(br#"{"items": [{"tag": "NOPE", "role": "user", "text": ""}]}"#)
                .unwrap_err()
                .to_string();
        assert!(err.contains("NOPE"), "{err}");
    }

    #[test]
    fn assistant_is_model_and_defaults_apply() {
        let ctx =
            Context::from_json(br#"{"items": [{"role": "assistant", "text": "x"}]}"#).unwrap();
        assert_eq!(ctx.items[0].role, Role::Model);
        assert_eq!(ctx.user, "User");
        assert!(ctx.time_awareness);
    }

    #[test]
    fn injection_mode_is_a_string_or_null() {
        let mode = |v: &str| {
            Context::from_json(format!(r#"{{"injection": {v}}}"#).as_bytes())
                .map(|c| c.options.injection)
                .map_err(|e| e.to_string())
        };
        assert_eq!(mode("null"), Ok(Injection::Merge));
        assert_eq!(mode(r#""separate""#), Ok(Injection::Separate));
        for bad in ["1", "[]", "{}", r#""Separate""#] {
            let err = mode(bad).unwrap_err();
            assert!(
                err.contains(r#"merge"#) && err.contains("separate"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn bad_json_reports_line_and_column() {
        let err = Context::from_json(b"{\n  \"seed\": x}").unwrap_err();
        match err {
            ContextError::Json { line, column, .. } => assert_eq!((line, column), (2, 11)),
            other => panic!("{other:?}"),
        }
    }
}
