//! Character card import (SPEC §15.1) into the fields a render uses (§15.2).
//!
//! A card is a PNG whose `tEXt` chunk holds base64 JSON (see `png`), or the JSON itself. Three
//! shapes are read as ST's `readFromV2` reads them: V2/V3 (a `spec` key, fields under `data`),
//! V2/V3 without a usable `data` (top-level fields only, `CardNoData`) and V1 (top-level
//! fields). Fields of the wrong type are empty (or their default) with one `CardFieldInvalid`;
//! everything else that goes wrong is a typed [`LoreError`] and nothing is half-imported.

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::Serializer;
use serde_json::value::RawValue;

use super::book::{Entry, LoreSource, Lorebook};
use super::json::{Json, Object};
use super::keys::js_trim;
use super::{LoreError, png};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::limits::Limits;
use crate::role::Role;

/// How [`Card::from_bytes`] reads its bytes (SPEC §15.1.1).
///
/// ```
/// use stpreset::{Card, lore::CardFormat, Limits};
/// let err = Card::from_bytes(br#"{"name":"A"}"#, CardFormat::Png, &Limits::default()).unwrap_err();
/// assert_eq!(err.kind(), "CardPngInvalid");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CardFormat {
    /// A PNG with the card in a `tEXt` chunk.
    Png,
    /// The card's JSON.
    Json,
    /// PNG when the bytes start with the PNG signature, else JSON.
    #[default]
    Auto,
}

/// A card's `extensions.depth_prompt`: text placed into the chat at a depth (SPEC §15.2).
///
/// ```
/// use stpreset::{Card, lore::CardFormat, Limits, Role};
/// let json = br#"{"spec":"chara_card_v2","data":{"name":"A",
///     "extensions":{"depth_prompt":{"prompt":"Whisper.","depth":2,"role":"assistant"}}}}"#;
/// let card = Card::from_bytes(json, CardFormat::Json, &Limits::default()).unwrap();
/// let dp = card.depth_prompt.unwrap();
/// assert_eq!((dp.text.as_str(), dp.depth, dp.role), ("Whisper.", 2, Role::Model));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepthPrompt {
    /// The prompt (never empty: a card with an empty one has no depth prompt).
    pub text: String,
    /// How many messages from the end it goes (default 4).
    pub depth: u64,
    /// The role it is sent as (default system; the card's `assistant` is [`Role::Model`]).
    pub role: Role,
}

/// A character card, read into SPEC §15.2's fields.
///
/// Its JSON (`Serialize`, [`Card::to_json`]) has exactly those fields: `serde_json::to_string`
/// writes them in §15.2's order, while a `serde_json::Value` holds them in its map's order. The
/// card's `extensions.regex_scripts` are kept ([`Card::regex_scripts`]) but neither run
/// (§15.13) nor in the JSON.
///
/// ```
/// use stpreset::{Card, lore::CardFormat, Limits, lore::LoreSource};
/// let json = br#"{"spec":"chara_card_v3","data":{"name":"Sera","mes_example":"<START>\nHi\n<START>\nBye",
///     "character_book":{"entries":[{"keys":["forest"],"content":"Old trees.","enabled":true}]}}}"#;
/// let card = Card::from_bytes(json, CardFormat::Auto, &Limits::default()).unwrap();
/// assert_eq!(card.samples, ["Hi", "Bye"]);
/// let book = card.book().unwrap();
/// assert_eq!((book.name(), book.source(), book.len()), ("Sera's Lorebook", LoreSource::Character, 1));
/// assert!(card.diagnostics().is_empty());
/// assert!(serde_json::to_string(&card).unwrap().starts_with(r#"{"name":"Sera","description":"#));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    /// `name`: the context's `char` when it has none.
    pub name: String,
    /// `description`.
    pub description: String,
    /// `personality`.
    pub personality: String,
    /// `scenario`.
    pub scenario: String,
    /// `first_mes`: a greeting to post; never rendered.
    pub first_mes: String,
    /// `mes_example` as written.
    pub mes_examples_raw: String,
    /// The example blocks of `mes_example` (ST `parseMesExamples`), unexpanded.
    pub samples: Vec<String>,
    /// `system_prompt`: replaces the preset's `main` node (§15.2).
    pub char_prompt: String,
    /// `post_history_instructions`: replaces the preset's `jailbreak` node.
    pub char_instruction: String,
    /// `extensions.depth_prompt`, when its prompt is a non-empty string.
    pub depth_prompt: Option<DepthPrompt>,
    /// `creator_notes` (V1: `creatorcomment`): a scan source only.
    pub creator_notes: String,
    /// `character_version`.
    pub char_version: String,
    /// `alternate_greetings` (the strings among them).
    pub alternate_greetings: Vec<String>,
    /// `character_book`, a book of source `character`.
    pub book: Option<Lorebook>,
    /// `extensions.regex_scripts` as the card has them (not run: SPEC §15.13).
    regex_scripts: Option<Json>,
    diagnostics: Vec<Diagnostic>,
}

impl Card {
    /// Reads a card file (SPEC §15.1): a PNG with the card in a `tEXt` chunk, or its JSON.
    /// Sizes are checked against `limits` (read through [`Limits::clamped`]) before the work
    /// they bound.
    ///
    /// ```
    /// use stpreset::{Card, lore::CardFormat, Limits};
    /// let card = Card::from_bytes(br#"{"name":"Old","creatorcomment":"v1"}"#, CardFormat::Json,
    ///     &Limits::default()).unwrap();
    /// assert_eq!((card.name.as_str(), card.creator_notes.as_str()), ("Old", "v1"));
    /// let err = Card::from_bytes(b"[1]", CardFormat::Json, &Limits::default()).unwrap_err();
    /// assert_eq!(err.kind(), "CardNotACard");
    /// ```
    pub fn from_bytes(
        bytes: &[u8],
        format: CardFormat,
        limits: &Limits,
    ) -> Result<Card, LoreError> {
        let limits = limits.clamped();
        if bytes.len() > limits.card_max_file_bytes {
            return Err(LoreError::CardTooLarge(format!(
                "the card file is {} bytes, over the limit of {}",
                bytes.len(),
                limits.card_max_file_bytes
            )));
        }
        let read_png = match format {
            CardFormat::Png => true,
            CardFormat::Json => false,
            CardFormat::Auto => png::is_png(bytes),
        };
        let json = if read_png {
            let text = png::card_text(bytes, &limits)?;
            Cow::Owned(png::node_base64(&text, limits.card_max_json_bytes)?)
        } else {
            if bytes.len() > limits.card_max_json_bytes {
                return Err(LoreError::CardTooLarge(format!(
                    "the card's JSON is {} bytes, over the limit of {}",
                    bytes.len(),
                    limits.card_max_json_bytes
                )));
            }
            Cow::Borrowed(bytes)
        };
        let text = String::from_utf8_lossy(&json);
        // serde_json's nesting limit (128) makes a deeply nested card an error, not a deep stack.
        // The book is set aside unparsed and read as it streams: as a tree it took ~18× its
        // size (a 16 MB card peaked at 304 MB).
        let (value, book) = Json::parse_aside(text.as_bytes(), &["data", "character_book"])
            .map_err(|e| LoreError::CardJsonInvalid(format!("the card is not JSON: {e}")))?;
        Card::from_value(&value, book.as_deref(), &limits)
    }

    /// Reads a parsed card (SPEC §15.1.6–7).
    fn from_value(
        json: &Json,
        book: Option<&RawValue>,
        limits: &Limits,
    ) -> Result<Card, LoreError> {
        let Some(root) = json.as_object() else {
            return Err(LoreError::CardNotACard(format!(
                "expected an object, found {}",
                json.kind()
            )));
        };
        let mut r = Reader::default();
        let mut no_data = false;
        let mut card = if root.get("spec").is_some() {
            match root.get("data") {
                Some(Json::Object(data)) => r.v2(root, data, book, limits),
                _ => {
                    no_data = true;
                    r.top_level(root)
                }
            }
        } else if root.get("name").is_some() {
            let mut card = r.top_level(root);
            card.creator_notes = match root.get("creatorcomment") {
                Some(v) if !matches!(v, Json::Null) => r.text(Some(v), "creatorcomment"),
                _ => r.text(root.get("creator_notes"), "creator_notes"),
            };
            card
        } else {
            return Err(LoreError::CardNotACard(
                "an object with neither `spec` nor `name`".into(),
            ));
        };
        card.samples = parse_mes_examples(&card.mes_examples_raw);
        if no_data {
            card.diagnostics.push(Diagnostic::new(
                DiagnosticKind::CardNoData,
                None,
                "the card has `spec` but no `data` object: only its top-level fields are read",
            ));
        }
        if !r.invalid.is_empty() {
            card.diagnostics.push(Diagnostic::new(
                DiagnosticKind::CardFieldInvalid,
                None,
                format!(
                    "card fields of the wrong type, read as empty or their default: {}",
                    r.invalid.join(", ")
                ),
            ));
        }
        if let Some(book) = &card.book {
            card.diagnostics.extend_from_slice(book.diagnostics());
        }
        Ok(card)
    }

    /// What the import noticed (SPEC §15.10): each card kind once, `CardNoData` first, then
    /// the embedded book's import diagnostics.
    ///
    /// ```
    /// use stpreset::{Card, lore::CardFormat, DiagnosticKind, Limits};
    /// let json = br#"{"spec":"chara_card_v2","name":"A","personality":5}"#;
    /// let card = Card::from_bytes(json, CardFormat::Json, &Limits::default()).unwrap();
    /// let kinds: Vec<_> = card.diagnostics().iter().map(|d| d.kind).collect();
    /// assert_eq!(kinds, [DiagnosticKind::CardNoData, DiagnosticKind::CardFieldInvalid]);
    /// assert_eq!(card.personality, "");
    /// ```
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The card's lorebook (source `character`), if it has one.
    ///
    /// ```
    /// use stpreset::{Card, lore::CardFormat, Limits};
    /// let json = br#"{"spec":"chara_card_v2","data":{"name":"A","character_book":{"name":"Lore","entries":[]}}}"#;
    /// let card = Card::from_bytes(json, CardFormat::Json, &Limits::default()).unwrap();
    /// assert_eq!(card.book().map(|b| b.name()), Some("Lore"));
    /// ```
    pub fn book(&self) -> Option<&Lorebook> {
        self.book.as_ref()
    }

    /// The card's `extensions.regex_scripts`, as the card has them: kept for the host, never
    /// run (SPEC §15.13) and not part of [`Card::to_json`].
    ///
    /// ```
    /// use stpreset::{Card, lore::CardFormat, Limits};
    /// let json = br#"{"spec":"v2","data":{"name":"A","extensions":{"regex_scripts":[{"findRegex":"a"}]}}}"#;
    /// let card = Card::from_bytes(json, CardFormat::Json, &Limits::default()).unwrap();
    /// assert_eq!(card.regex_scripts().unwrap()[0]["findRegex"], "a");
    /// assert!(card.to_json().get("regex_scripts").is_none());
    /// ```
    pub fn regex_scripts(&self) -> Option<serde_json::Value> {
        self.regex_scripts.as_ref().map(plain_value)
    }

    /// The card as JSON (SPEC §15.2's fields; the book as `{name, entries}` with normalised
    /// entries). Compare it by field: the key order is the `Value` map's, while
    /// `serde_json::to_string(&card)` writes §15.2's order.
    ///
    /// ```
    /// use stpreset::{Card, lore::CardFormat, Limits};
    /// let card = Card::from_bytes(br#"{"name":"Old"}"#, CardFormat::Json, &Limits::default()).unwrap();
    /// let json = card.to_json();
    /// assert_eq!(json["name"], "Old");
    /// assert_eq!(json["book"], serde_json::Value::Null);
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The card as §15.2's JSON document, borrowed from the card; its field order is the JSON's.
#[derive(Serialize)]
struct CardJson<'a> {
    name: &'a str,
    description: &'a str,
    personality: &'a str,
    scenario: &'a str,
    first_mes: &'a str,
    mes_examples_raw: &'a str,
    samples: &'a [String],
    char_prompt: &'a str,
    char_instruction: &'a str,
    depth_prompt: Option<DepthPromptJson<'a>>,
    creator_notes: &'a str,
    char_version: &'a str,
    alternate_greetings: &'a [String],
    book: Option<BookJson<'a>>,
}

#[derive(Serialize)]
struct DepthPromptJson<'a> {
    text: &'a str,
    depth: u64,
    role: &'static str,
}

#[derive(Serialize)]
struct BookJson<'a> {
    name: &'a str,
    // The entries themselves (not `entries_json`'s Value), so a string keeps their order.
    entries: &'a [Entry],
}

impl Serialize for Card {
    /// §15.2's JSON, in its order.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        CardJson {
            name: &self.name,
            description: &self.description,
            personality: &self.personality,
            scenario: &self.scenario,
            first_mes: &self.first_mes,
            mes_examples_raw: &self.mes_examples_raw,
            samples: &self.samples,
            char_prompt: &self.char_prompt,
            char_instruction: &self.char_instruction,
            depth_prompt: self.depth_prompt.as_ref().map(|d| DepthPromptJson {
                text: &d.text,
                depth: d.depth,
                role: match d.role {
                    Role::System => "system",
                    Role::User => "user",
                    Role::Model => "assistant",
                },
            }),
            creator_notes: &self.creator_notes,
            char_version: &self.char_version,
            alternate_greetings: &self.alternate_greetings,
            book: self.book.as_ref().map(|b| BookJson {
                name: &b.name,
                entries: &b.entries,
            }),
        }
        .serialize(s)
    }
}

/// A [`Json`] as a `serde_json::Value` (whose objects keep their map's order, not the
/// file's). Recursion is bounded: the parser refuses nesting deeper than 128.
fn plain_value(j: &Json) -> serde_json::Value {
    use serde_json::Value;
    match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Number(n.clone()),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(a) => Value::Array(a.iter().map(plain_value).collect()),
        Json::Object(o) => Value::Object(
            o.members
                .iter()
                .map(|(k, v)| (k.clone(), plain_value(v)))
                .collect(),
        ),
    }
}

/// The six fields ST's `readFromV2` takes from `data` when it has them, else from the top
/// level, in `Card`'s order (`mes_example` is `mes_examples_raw`).
const SIX: [&str; 6] = [
    "name",
    "description",
    "personality",
    "scenario",
    "first_mes",
    "mes_example",
];

/// Reads fields, collecting the paths of those of the wrong type (SPEC §15.1.7).
#[derive(Default)]
struct Reader {
    invalid: Vec<String>,
}

impl Reader {
    /// A text field: a string as is; missing or `null` is `""`; another type is `""`, invalid.
    fn text(&mut self, v: Option<&Json>, path: &str) -> String {
        match v {
            None | Some(Json::Null) => String::new(),
            Some(Json::String(s)) => s.clone(),
            Some(other) => {
                self.wrong(path, other);
                String::new()
            }
        }
    }

    fn wrong(&mut self, path: &str, found: &Json) {
        self.invalid.push(format!("{path} ({})", found.kind()));
    }

    /// An object field: missing or `null` is none; another type is none, invalid.
    fn object<'j>(&mut self, v: Option<&'j Json>, path: &str) -> Option<&'j Object> {
        match v {
            None | Some(Json::Null) => None,
            Some(Json::Object(o)) => Some(o),
            Some(other) => {
                self.wrong(path, other);
                None
            }
        }
    }

    /// A card with the six fields as `get` finds them (a value and the path prefix that
    /// names it in messages) and the rest empty.
    fn six<'j>(&mut self, get: impl Fn(&str) -> (Option<&'j Json>, &'static str)) -> Card {
        let mut field = |key: &str| {
            let (v, prefix) = get(key);
            self.text(v, &format!("{prefix}{key}"))
        };
        let [
            name,
            description,
            personality,
            scenario,
            first_mes,
            mes_example,
        ] = SIX.map(&mut field);
        Card {
            name,
            description,
            personality,
            scenario,
            first_mes,
            mes_examples_raw: mes_example,
            samples: Vec::new(),
            char_prompt: String::new(),
            char_instruction: String::new(),
            depth_prompt: None,
            creator_notes: String::new(),
            char_version: String::new(),
            alternate_greetings: Vec::new(),
            book: None,
            regex_scripts: None,
            diagnostics: Vec::new(),
        }
    }

    /// V1, or V2/V3 without `data`: the six from the top level.
    fn top_level(&mut self, root: &Object) -> Card {
        self.six(|k| (root.get(k), ""))
    }

    /// V2/V3: the six from `data` when it has the key (even `null`), else the top level;
    /// everything else from `data` only.
    fn v2(
        &mut self,
        root: &Object,
        data: &Object,
        book: Option<&RawValue>,
        limits: &Limits,
    ) -> Card {
        let mut card = self.six(|k| match data.get(k) {
            Some(v) => (Some(v), "data."),
            None => (root.get(k), ""),
        });
        card.char_prompt = self.text(data.get("system_prompt"), "data.system_prompt");
        card.char_instruction = self.text(
            data.get("post_history_instructions"),
            "data.post_history_instructions",
        );
        card.creator_notes = self.text(data.get("creator_notes"), "data.creator_notes");
        card.char_version = self.text(data.get("character_version"), "data.character_version");
        card.alternate_greetings = self.greetings(data.get("alternate_greetings"));
        if let Some(ext) = self.object(data.get("extensions"), "data.extensions") {
            card.depth_prompt = self.depth_prompt(ext.get("depth_prompt"));
            card.regex_scripts = ext.get("regex_scripts").cloned();
        }
        card.book = self.book(book, &card.name, limits);
        card
    }

    /// `alternate_greetings`: its strings; other items are dropped, a non-list is `[]`.
    fn greetings(&mut self, v: Option<&Json>) -> Vec<String> {
        const PATH: &str = "data.alternate_greetings";
        match v {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Array(items)) => {
                let strings: Vec<String> = items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_string))
                    .collect();
                if strings.len() < items.len() {
                    self.invalid
                        .push(format!("{PATH} (items that are not strings)"));
                }
                strings
            }
            Some(other) => {
                self.wrong(PATH, other);
                Vec::new()
            }
        }
    }

    /// `extensions.depth_prompt {prompt, depth, role}`: a depth prompt when `prompt` is a
    /// non-empty string. A wrong `depth` or `role` is reported even when the prompt is empty:
    /// the file is wrong either way.
    fn depth_prompt(&mut self, v: Option<&Json>) -> Option<DepthPrompt> {
        const PATH: &str = "data.extensions.depth_prompt";
        let dp = self.object(v, PATH)?;
        let text = self.text(dp.get("prompt"), &format!("{PATH}.prompt"));
        let depth = match dp.get("depth") {
            None | Some(Json::Null) => 4,
            Some(j) => match j.as_integer().and_then(|i| u64::try_from(i).ok()) {
                Some(d) => d,
                None => {
                    self.invalid
                        .push(format!("{PATH}.depth (not an integer ≥ 0)"));
                    4
                }
            },
        };
        let role = match dp.get("role") {
            None | Some(Json::Null) => Role::System,
            Some(j) => match j.as_str() {
                Some("system") => Role::System,
                Some("user") => Role::User,
                Some("assistant") => Role::Model,
                _ => {
                    self.invalid.push(format!(
                        "{PATH}.role (not \"system\", \"user\" or \"assistant\")"
                    ));
                    Role::System
                }
            },
        };
        (!text.is_empty()).then_some(DepthPrompt { text, depth, role })
    }

    /// `character_book`, named by its own non-empty `name` or else after the card (ST). A
    /// book that does not read is left out with the card's `CardFieldInvalid`, so a card is
    /// still usable without its lore.
    fn book(
        &mut self,
        raw: Option<&RawValue>,
        card_name: &str,
        limits: &Limits,
    ) -> Option<Lorebook> {
        const PATH: &str = "data.character_book";
        let raw = raw.filter(|r| r.get() != "null")?.get().as_bytes();
        let name = super::book::own_name(raw).unwrap_or_else(|| format!("{card_name}'s Lorebook"));
        match Lorebook::from_json(&name, raw, limits) {
            Ok(book) => Some(book.with_source(LoreSource::Character)),
            Err(_) => {
                self.invalid
                    .push(format!("{PATH} (not a book: no `entries` list)"));
                None
            }
        }
    }
}

/// ST's `parseMesExamples` (SPEC §15.2): the example blocks of `mes_example`, trimmed, the
/// empty ones dropped.
pub(crate) fn parse_mes_examples(raw: &str) -> Vec<String> {
    const START: &str = "<START>";
    if raw.is_empty() || raw == START {
        return Vec::new();
    }
    let owned;
    let text = if raw.starts_with(START) {
        raw
    } else {
        owned = format!("{START}\n{}", js_trim(raw));
        &owned
    };
    super::keys::split_ascii_ci(text, START)
        .into_iter()
        .skip(1)
        .map(js_trim)
        .filter(|b| !b.is_empty())
        .map(str::to_string)
        .collect()
}

/// What a group chat reads of another member's card (SPEC §18.3): the fields ST's
/// `getGroupCharacterCardsLazy` and `getGroupDepthPrompts` read.
///
/// ```
/// use stpreset::{Card, Limits, lore::{CardFormat, GroupCard}};
/// let card = Card::from_bytes(br#"{"name":"Mira","description":"A fox."}"#, CardFormat::Json,
///     &Limits::default()).unwrap();
/// assert_eq!(GroupCard::from(&card).description, "A fox.");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupCard {
    /// `description`.
    pub description: String,
    /// `personality`.
    pub personality: String,
    /// `scenario`.
    pub scenario: String,
    /// `mes_example` as written.
    pub mes_example: String,
    /// `extensions.depth_prompt` (the member's Character's Note).
    pub depth_prompt: Option<DepthPrompt>,
}

impl From<&Card> for GroupCard {
    fn from(card: &Card) -> GroupCard {
        GroupCard {
            description: card.description.clone(),
            personality: card.personality.clone(),
            scenario: card.scenario.clone(),
            mes_example: card.mes_examples_raw.clone(),
            depth_prompt: card.depth_prompt.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lore::png::tests::png;

    fn card(json: &str) -> Card {
        Card::from_bytes(json.as_bytes(), CardFormat::Json, &Limits::default()).unwrap()
    }

    fn kinds(card: &Card) -> Vec<DiagnosticKind> {
        card.diagnostics().iter().map(|d| d.kind).collect()
    }

    #[test]
    fn examples_split_as_st() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("<START>", &[]),
            ("<start>", &[]),
            ("A\n<start>\nB", &["A", "B"]),
            ("intro\n<START>\nA", &["intro", "A"]),
            ("\u{FEFF} A \u{FEFF}", &["A"]),
            ("<START>\u{85}A\u{85}", &["\u{85}A\u{85}"]),
            ("<START>\n<START>\n \n<StArT>x<START", &["x<START"]),
            (" <START>A", &["A"]),
        ];
        for (raw, want) in cases {
            assert_eq!(parse_mes_examples(raw), *want, "{raw:?}");
        }
    }

    #[test]
    fn json_keeps_section_15_2_order() {
        let c = card(
            r#"{"spec":"chara_card_v2","data":{"name":"N","extensions":{"depth_prompt":{"prompt":"p","role":"assistant"}},
            "character_book":{"entries":[{"id":3,"keys":["k"]}]}}}"#,
        );
        let s = serde_json::to_string(&c).unwrap();
        let want = concat!(
            r#"{"name":"N","description":"","personality":"","scenario":"","first_mes":"","#,
            r#""mes_examples_raw":"","samples":[],"char_prompt":"","char_instruction":"","#,
            r#""depth_prompt":{"text":"p","depth":4,"role":"assistant"},"creator_notes":"","#,
            r#""char_version":"","alternate_greetings":[],"book":{"name":"N's Lorebook","#,
            r#""entries":[{"uid":3,"key":["k"],"keysecondary":[],"comment":"#
        );
        assert!(s.starts_with(want), "{s}");
        assert_eq!(c.to_json()["book"]["entries"][0]["uid"], 3);
    }

    #[test]
    fn shapes() {
        // `data` wins even with null; the rest comes from `data` only.
        let c = card(
            r#"{"spec":"x","name":"Top","description":"top","system_prompt":"no",
            "data":{"name":"Data","description":null}}"#,
        );
        assert_eq!(
            (
                c.name.as_str(),
                c.description.as_str(),
                c.char_prompt.as_str()
            ),
            ("Data", "", "")
        );
        assert!(c.diagnostics().is_empty());
        // `data` not an object: the six from the top level, CardNoData.
        let c = card(r#"{"spec":null,"data":[1],"name":"Top","system_prompt":"no"}"#);
        assert_eq!((c.name.as_str(), c.char_prompt.as_str()), ("Top", ""));
        assert_eq!(kinds(&c), [DiagnosticKind::CardNoData]);
        // V1 reads nothing beyond the six and the creator notes.
        let c = card(
            r#"{"name":"V1","creator_notes":"n","alternate_greetings":["x"],"system_prompt":"s"}"#,
        );
        assert_eq!(c.creator_notes, "n");
        assert!(c.alternate_greetings.is_empty() && c.char_prompt.is_empty());
        for bad in ["[]", "3", "\"x\"", "{}", r#"{"data":{"name":"x"}}"#] {
            let err = Card::from_bytes(bad.as_bytes(), CardFormat::Json, &Limits::default());
            assert_eq!(err.unwrap_err().kind(), "CardNotACard", "{bad}");
        }
        for bad in ["", "{", "\u{FEFF}{}", "{\"name\":1,}"] {
            let err = Card::from_bytes(bad.as_bytes(), CardFormat::Auto, &Limits::default());
            assert_eq!(err.unwrap_err().kind(), "CardJsonInvalid", "{bad:?}");
        }
    }

    #[test]
    fn field_types() {
        let c = card(
            r#"{"spec":"v2","data":{"name":"A","first_mes":5,"alternate_greetings":["a",1,"b"],
            "extensions":{"depth_prompt":{"prompt":"","depth":-1,"role":"narrator"}},
            "character_book":"nope"}}"#,
        );
        assert_eq!(c.alternate_greetings, ["a", "b"]);
        assert_eq!(
            (
                c.first_mes.as_str(),
                c.depth_prompt.is_none(),
                c.book.is_none()
            ),
            ("", true, true)
        );
        assert_eq!(kinds(&c), [DiagnosticKind::CardFieldInvalid]);
        let msg = &c.diagnostics()[0].message;
        for path in [
            "data.first_mes",
            "data.alternate_greetings",
            "depth_prompt.depth",
            "depth_prompt.role",
            "data.character_book",
        ] {
            assert!(msg.contains(path), "{path} in {msg}");
        }
        let c = card(
            r#"{"spec":"v2","data":{"name":"A","extensions":{"depth_prompt":{"prompt":"p","depth":2.0,"role":null}}}}"#,
        );
        let dp = c.depth_prompt.unwrap();
        assert_eq!((dp.depth, dp.role), (2, Role::System));
        assert!(c.diagnostics.is_empty());
    }

    #[test]
    fn book_diagnostics_follow_the_cards() {
        let c = card(
            r#"{"spec":"v2","name":5,"data":{"character_book":{"name":"",
            "entries":[{"keys":["a", 1]}, 7]}}}"#,
        );
        assert_eq!(c.book().unwrap().name(), "'s Lorebook");
        let k = kinds(&c);
        assert_eq!(k[0], DiagnosticKind::CardFieldInvalid);
        assert!(k[1..].contains(&DiagnosticKind::LoreFieldInvalid), "{k:?}");
        assert!(k[1..].contains(&DiagnosticKind::LoreEntryInvalid), "{k:?}");
    }

    #[test]
    fn size_limits() {
        let json = br#"{"name":"A"}"#;
        let mut limits = Limits {
            card_max_json_bytes: json.len(),
            ..Limits::default()
        };
        assert!(Card::from_bytes(json, CardFormat::Json, &limits).is_ok());
        limits.card_max_json_bytes = json.len() - 1;
        let err = Card::from_bytes(json, CardFormat::Json, &limits).unwrap_err();
        assert_eq!(err.kind(), "CardTooLarge");
        let limits = Limits {
            card_max_file_bytes: json.len() - 1,
            ..Limits::default()
        };
        let err = Card::from_bytes(json, CardFormat::Auto, &limits).unwrap_err();
        assert_eq!(err.kind(), "CardTooLarge");
    }

    #[test]
    fn nesting_10000_deep_is_invalid_json() {
        let deep = format!(r#"{{"name":{}{}}}"#, "[".repeat(10_000), "]".repeat(10_000));
        let err = Card::from_bytes(deep.as_bytes(), CardFormat::Json, &Limits::default());
        assert_eq!(err.unwrap_err().kind(), "CardJsonInvalid");
        let deep = format!(
            r#"{{"name":{}1{}}}"#,
            r#"{"a":"#.repeat(10_000),
            "}".repeat(10_000)
        );
        let err = Card::from_bytes(deep.as_bytes(), CardFormat::Json, &Limits::default());
        assert_eq!(err.unwrap_err().kind(), "CardJsonInvalid");
    }

    fn png_card(json: &str) -> Vec<u8> {
        use std::fmt::Write as _;
        // A plain standard base64 encoder: the tests do not need a crate for 20 lines.
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut text = String::from("chara\0");
        for group in json.as_bytes().chunks(3) {
            let n =
                group.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b)) << (8 * (3 - group.len()));
            for i in 0..=group.len() {
                let _ = write!(text, "{}", A[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        png(&[
            (b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]),
            (b"tEXt", text.as_bytes()),
            (b"IDAT", b"x\x9cc`\x00\x02\x00\x00\x05\x00\x01"),
            (b"IEND", &[]),
        ])
    }

    #[test]
    fn png_cards_read_and_every_truncation_fails_cleanly() {
        let file = png_card(r#"{"spec":"chara_card_v2","data":{"name":"P","description":"d"}}"#);
        for format in [CardFormat::Png, CardFormat::Auto] {
            let c = Card::from_bytes(&file, format, &Limits::default()).unwrap();
            assert_eq!((c.name.as_str(), c.description.as_str()), ("P", "d"));
        }
        // Read as JSON, a PNG is not JSON.
        let err = Card::from_bytes(&file, CardFormat::Json, &Limits::default()).unwrap_err();
        assert_eq!(err.kind(), "CardJsonInvalid");
        for end in 0..file.len() - 4 {
            let r = Card::from_bytes(&file[..end], CardFormat::Png, &Limits::default());
            assert_eq!(r.unwrap_err().kind(), "CardPngInvalid", "cut at {end}");
            // Auto reads a cut signature as JSON: an error all the same.
            assert!(Card::from_bytes(&file[..end], CardFormat::Auto, &Limits::default()).is_err());
        }
    }

    #[test]
    fn decoded_json_over_the_cap_is_too_large() {
        let file = png_card(&format!(r#"{{"name":"{}"}}"#, "x".repeat(100)));
        let limits = Limits {
            card_max_json_bytes: 64,
            ..Limits::default()
        };
        let err = Card::from_bytes(&file, CardFormat::Png, &limits).unwrap_err();
        assert_eq!(err.kind(), "CardTooLarge");
    }

    #[test]
    fn itxt_and_ztxt_only_cards_have_no_metadata() {
        let file = png(&[
            (b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]),
            (b"iTXt", b"chara\0\0\0\0\0eyJuYW1lIjoiQSJ9"),
            (b"zTXt", b"ccv3\0\0x\x9cK\x05\x00\x00f\x00f"),
            (b"IEND", &[]),
        ]);
        let err = Card::from_bytes(&file, CardFormat::Auto, &Limits::default()).unwrap_err();
        assert_eq!(err.kind(), "CardNoMetadata");
    }
}
