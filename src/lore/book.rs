//! Lorebook import (SPEC §15.3): World Info files and a card's `character_book`, read into
//! normalised entries with the editor template's defaults; a field of the wrong type takes
//! its default with a `LoreFieldInvalid`, an entry that is not an object (or is over a §15.8
//! cap) is skipped with a `LoreEntryInvalid`. Invalid entries never fail an import.

use std::collections::HashMap;

use serde::Serialize;
use serde::ser::Serializer;

use super::LoreError;
use super::json::{Json, js_key_order};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::limits::Limits;

/// Where a book comes from; it decides the scan order (SPEC §15.5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoreSource {
    /// The chat's own lorebook.
    Chat,
    /// The user's persona lorebook.
    Persona,
    /// The character card's lorebook.
    Character,
    /// A global lorebook.
    #[default]
    Global,
}

/// An entry's uid: an integer or a string (SPEC §15.3.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub(crate) enum Uid {
    Number(u64),
    Text(String),
}

impl std::fmt::Display for Uid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Uid::Number(n) => write!(f, "{n}"),
            Uid::Text(s) => f.write_str(s),
        }
    }
}

/// A probability as JSON writes it: an integer when it has no fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Probability(pub f64);

impl Serialize for Probability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.fract() == 0.0 {
            s.serialize_i64(self.0 as i64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

/// One normalised entry: exactly SPEC §15.3.2's fields, in its order (the JSON order too).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry {
    pub uid: Uid,
    pub key: Keys,
    pub keysecondary: Keys,
    pub comment: String,
    pub content: String,
    pub constant: bool,
    pub selective: bool,
    pub selective_logic: u8,
    pub order: i64,
    pub position: i64,
    pub disable: bool,
    pub probability: Probability,
    pub use_probability: bool,
    pub depth: u64,
    pub group: String,
    pub group_override: bool,
    pub group_weight: u64,
    pub scan_depth: Option<u64>,
    pub case_sensitive: Option<bool>,
    pub match_whole_words: Option<bool>,
    pub use_group_scoring: Option<bool>,
    pub role: u8,
    pub sticky: Option<u64>,
    pub cooldown: Option<u64>,
    pub delay: Option<u64>,
    pub exclude_recursion: bool,
    pub prevent_recursion: bool,
    pub delay_until_recursion: u64,
    pub ignore_budget: bool,
    pub outlet_name: String,
    pub triggers: Vec<String>,
    pub match_persona_description: bool,
    pub match_character_description: bool,
    pub match_character_personality: bool,
    pub match_character_depth_prompt: bool,
    pub match_scenario: bool,
    pub match_creator_notes: bool,
}

impl Entry {
    fn new(uid: Uid) -> Entry {
        Entry {
            uid,
            key: Keys::default(),
            keysecondary: Keys::default(),
            comment: String::new(),
            content: String::new(),
            constant: false,
            selective: true,
            selective_logic: 0,
            order: 100,
            position: 0,
            disable: false,
            probability: Probability(100.0),
            use_probability: true,
            depth: 4,
            group: String::new(),
            group_override: false,
            group_weight: 100,
            scan_depth: None,
            case_sensitive: None,
            match_whole_words: None,
            use_group_scoring: None,
            role: 0,
            sticky: None,
            cooldown: None,
            delay: None,
            exclude_recursion: false,
            prevent_recursion: false,
            delay_until_recursion: 0,
            ignore_budget: false,
            outlet_name: String::new(),
            triggers: Vec::new(),
            match_persona_description: false,
            match_character_description: false,
            match_character_personality: false,
            match_character_depth_prompt: false,
            match_scenario: false,
            match_creator_notes: false,
        }
    }
}

/// An entry's keys, in one allocation: their texts end to end and where each ends (issue 38: a
/// `Vec<String>` held about 56 bytes a key, 20 times a short key's JSON, so a 16 MB book took
/// hundreds of MB). A key repeated in the list is kept once, as are keys that are empty after
/// trimming: every selective logic is a test over the set of keys, so the entry matches as
/// before (SPEC §15.5.4). Keys with macros are always kept: each expansion may differ.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Keys {
    text: Box<str>,
    ends: Box<[u32]>,
}

impl Keys {
    /// `list`, repeats dropped (each key is at most `Limits::lore_max_key_bytes`, and the
    /// book at most `lore_max_book_bytes`, so offsets fit `u32`).
    pub fn new(list: Vec<String>) -> Keys {
        let mut seen = std::collections::HashSet::new();
        let mut empty_seen = false;
        let mut text = String::new();
        let mut ends = Vec::with_capacity(list.len());
        for key in &list {
            if !key.contains("{{") {
                if crate::jstext::js_trim(key).is_empty() {
                    if std::mem::replace(&mut empty_seen, true) {
                        continue;
                    }
                } else if !seen.insert(key.as_str()) {
                    continue;
                }
            }
            text.push_str(key);
            ends.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
        }
        Keys {
            text: text.into(),
            ends: ends.into(),
        }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(a, b)| self.text.get(a as usize..b as usize).unwrap_or_default())
    }
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Keys {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// A lorebook: its name (the identity timed effects are kept under), where it comes from and
/// its normalised entries in scan order.
///
/// ```
/// use stpreset::{Limits, Lorebook};
/// let json = br#"{"entries": {"1": {"key": ["rain"], "content": "It rains."}, "0": {"key": ["sun"]}}}"#;
/// let book = Lorebook::from_json("weather", json, &Limits::default()).unwrap();
/// assert_eq!(book.len(), 2);
/// assert!(book.diagnostics().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Lorebook {
    pub(crate) name: String,
    pub(crate) source: LoreSource,
    pub(crate) entries: Vec<Entry>,
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl Lorebook {
    /// Reads a World Info file or a `character_book` object (SPEC §15.3.1), refusing one over
    /// [`Limits::lore_max_book_bytes`] before parsing it. The book's source is `global`.
    pub fn from_json(name: &str, bytes: &[u8], limits: &Limits) -> Result<Lorebook, LoreError> {
        let limits = limits.clamped();
        if bytes.len() > limits.lore_max_book_bytes {
            return Err(LoreError::LorebookInvalid(format!(
                "book {:?} is {} bytes, over the limit of {}",
                crate::diagnostic::excerpt(name),
                bytes.len(),
                limits.lore_max_book_bytes
            )));
        }
        let text = String::from_utf8_lossy(bytes);
        let mut reader = Reader::new(name, &limits);
        let entries = stream::entries(text.as_bytes(), &mut reader)
            .map_err(|e| LoreError::LorebookInvalid(format!("not JSON: {e}")))?;
        reader.finish(entries)
    }

    /// Reads a parsed book (a World Info file or a `character_book`): the whole-document
    /// reading that the streaming one (`stream`) is tested against.
    #[cfg(test)]
    pub(crate) fn from_value(
        name: &str,
        json: &Json,
        limits: &Limits,
    ) -> Result<Lorebook, LoreError> {
        let mut reader = Reader::new(name, limits);
        let entries = match json.as_object().and_then(|o| o.get("entries")) {
            Some(Json::Object(o)) => Some(Entries::Object(
                o.members
                    .iter()
                    .map(|(k, v)| (k.clone(), reader.member(k, v)))
                    .collect(),
            )),
            Some(Json::Array(a)) => Some(Entries::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, v)| reader.element(i, v))
                    .collect(),
            )),
            _ => None,
        };
        reader.finish(entries)
    }

    /// The same book from another source.
    pub fn with_source(mut self, source: LoreSource) -> Lorebook {
        self.source = source;
        self
    }

    /// The book's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the book comes from.
    pub fn source(&self) -> LoreSource {
        self.source
    }

    /// How many entries were imported.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the book has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What the import noticed, in book order (SPEC §15.10).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The normalised entries as JSON (SPEC §15.3.2's fields, in its order).
    pub fn entries_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.entries).unwrap_or(serde_json::Value::Null)
    }
}

/// A book's own `name` when it is a non-empty string (a card's `character_book`), read
/// without parsing its entries.
pub(crate) fn own_name(bytes: &[u8]) -> Option<String> {
    let head = stream::head(bytes).ok()??;
    match head.name {
        Some(Json::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// The context file's `lorebooks` (SPEC §15.9): `[{name, source?, entries}]`, read keeping
/// the entries' key order. The error names the field. Each book streams as a World Info
/// file does ([`Lorebook::from_json`]): a bot passes its books in every render's context.
pub(crate) fn read_lorebooks(
    text: &str,
    limits: &Limits,
) -> Result<Vec<Lorebook>, (String, String)> {
    let (bytes, _) = crate::surrogates::repair_json_at(text.as_bytes());
    let err = |e: serde_json::Error| ("lorebooks".to_string(), e.to_string());
    // Each book's text, unparsed (valid JSON: the context was read already).
    let list: Vec<&serde_json::value::RawValue> = match serde_json::from_slice(&bytes) {
        Ok(list) => list,
        Err(_) => {
            // Not a list (the error JSON's own when it is not JSON at all).
            serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).map_err(err)?;
            return Err(("lorebooks".into(), "expected a list of books".into()));
        }
    };
    let mut books = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let field = format!("lorebooks[{i}]");
        let head = stream::head(item.get().as_bytes()).map_err(err)?;
        let name = head
            .as_ref()
            .and_then(|h| h.name.as_ref())
            .and_then(Json::as_str)
            .ok_or_else(|| {
                (
                    field.clone(),
                    "expected an object with a string `name`".to_string(),
                )
            })?;
        let source = match head.as_ref().and_then(|h| h.source.as_ref()) {
            None | Some(Json::Null) => LoreSource::Global,
            Some(v) => match v.as_str() {
                Some("chat") => LoreSource::Chat,
                Some("persona") => LoreSource::Persona,
                Some("character") => LoreSource::Character,
                Some("global") => LoreSource::Global,
                _ => {
                    return Err((
                        format!("{field}.source"),
                        "expected \"chat\", \"persona\", \"character\" or \"global\"".into(),
                    ));
                }
            },
        };
        let mut reader = Reader::new(name, limits);
        let book = stream::entries(item.get().as_bytes(), &mut reader)
            .map_err(|e| LoreError::LorebookInvalid(format!("not JSON: {e}")))
            .and_then(|entries| reader.finish(entries))
            .map_err(|e| (field, e.to_string()))?;
        books.push(book.with_source(source));
    }
    Ok(books)
}

/// A JS-truthy test (`!value` in `convertCharacterBook`).
fn truthy(v: Option<&Json>) -> bool {
    match v {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(Json::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Json::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// A uid as SPEC §15.3.1 accepts it: an integer ≥ 0 or a string.
fn uid_of(v: Option<&Json>) -> Option<Uid> {
    match v? {
        Json::String(s) => Some(Uid::Text(s.clone())),
        j => j
            .as_integer()
            .and_then(|i| u64::try_from(i).ok())
            .map(Uid::Number),
    }
}

/// The uid a file key stands for: a number when integer-like.
fn uid_of_key(key: &str) -> Uid {
    match super::json::integer_like(key) {
        Some(n) => Uid::Number(u64::from(n)),
        None => Uid::Text(key.to_string()),
    }
}

struct Reader<'a> {
    book: &'a str,
    limits: &'a Limits,
    diagnostics: Vec<Diagnostic>,
    entries: Vec<Entry>,
    /// Each uid's place in `entries` (its JS object key, so `3` and `"3"` are one).
    by_uid: HashMap<String, usize>,
    /// The entry cap was reached (reported once).
    capped: bool,
}

impl<'a> Reader<'a> {
    fn new(book: &'a str, limits: &'a Limits) -> Reader<'a> {
        Reader {
            book,
            limits,
            diagnostics: Vec::new(),
            entries: Vec::new(),
            by_uid: HashMap::new(),
            capped: false,
        }
    }

    fn entry_invalid(&mut self, entry: &str, why: &str) {
        let d = Diagnostic::new(
            DiagnosticKind::LoreEntryInvalid,
            None,
            format!(
                "entry {:?} of book {:?}: {why}",
                crate::diagnostic::excerpt(entry),
                crate::diagnostic::excerpt(self.book)
            ),
        )
        .in_book(Some(self.book), Some(entry));
        self.diagnostics.push(d);
    }

    /// Whether one more entry fits the book cap (one diagnostic when the first does not).
    fn room(&mut self, label: &str) -> bool {
        if self.entries.len() < self.limits.lore_max_entries {
            return true;
        }
        if !self.capped {
            self.capped = true;
            self.entry_invalid(
                label,
                "over the entry limit: this and later entries skipped",
            );
        }
        false
    }

    /// Adds a normalised entry, replacing one with the same uid in its place.
    fn push(&mut self, entry: Entry) {
        let key = entry.uid.to_string();
        if let Some(&i) = self.by_uid.get(&key) {
            self.entry_invalid(&key, "a later entry with the same uid replaces it");
            self.entries[i] = entry;
            return;
        }
        self.by_uid.insert(key, self.entries.len());
        self.entries.push(entry);
    }

    /// One World Info member (`entries[key]`), read now; placed by [`Reader::finish`].
    fn member(&mut self, key: &str, value: &Json) -> Converted {
        let Some(obj) = value.as_object() else {
            return Converted::NotObject(value.kind());
        };
        let uid = uid_of(obj.get("uid")).unwrap_or_else(|| uid_of_key(key));
        let label = uid.to_string();
        self.aside(|r| Fields::new(r, &label).read(uid, |name| obj.get(name)))
    }

    /// One `character_book` element (index `i`), converted as `convertCharacterBook` does,
    /// read now; placed by [`Reader::finish`].
    fn element(&mut self, i: usize, value: &Json) -> (Uid, Converted) {
        let obj = value.as_object();
        let uid = uid_of(obj.and_then(|o| o.get("id"))).unwrap_or(Uid::Number(i as u64));
        let Some(obj) = obj else {
            return (uid, Converted::NotObject(value.kind()));
        };
        let ext = obj.get("extensions").and_then(Json::as_object);
        let from_ext = |name: &str| ext.and_then(|e| e.get(name));
        // Values computed by the conversion (not read as they are).
        let selective = if truthy(obj.get("selective")) {
            obj.get("selective").cloned()
        } else {
            Some(Json::Bool(false))
        };
        let disable = Json::Bool(!truthy(obj.get("enabled")));
        let position = match from_ext("position") {
            Some(v) if !matches!(v, Json::Null) => v.clone(),
            _ => {
                let before = obj.get("position").and_then(Json::as_str) == Some("before_char");
                Json::Number((if before { 0 } else { 1 }).into())
            }
        };
        let label = uid.to_string();
        let read = self.aside(|r| {
            Fields::new(r, &label).read(uid.clone(), |name| match name {
                "key" => obj.get("keys"),
                "keysecondary" => obj.get("secondary_keys"),
                "content" | "comment" | "constant" => obj.get(name),
                "selective" => selective.as_ref(),
                "order" => obj.get("insertion_order"),
                "disable" => Some(&disable),
                "position" => Some(&position),
                "useProbability" | "selectiveLogic" => from_ext(name),
                other => from_ext(&snake_case(other)),
            })
        });
        (uid, read)
    }

    /// Reads an entry with its diagnostics set aside: they are reported when (and if) the
    /// entry is placed, so a book read as it streams reports as one read whole.
    fn aside(&mut self, read: impl FnOnce(&mut Self) -> Option<Entry>) -> Converted {
        let outer = std::mem::take(&mut self.diagnostics);
        let entry = read(self);
        let diagnostics = std::mem::replace(&mut self.diagnostics, outer);
        Converted::Read(entry, diagnostics)
    }

    /// The book from its read entries: in JS object order, within the entry cap, a later
    /// entry with the same uid replacing an earlier one in its place.
    fn finish(mut self, entries: Option<Entries>) -> Result<Lorebook, LoreError> {
        match entries {
            Some(Entries::Object(members)) => self.world_info(members),
            Some(Entries::Array(elements)) => self.character_book(elements),
            None => {
                return Err(LoreError::LorebookInvalid(
                    "expected an object whose `entries` is an object or an array".into(),
                ));
            }
        }
        Ok(Lorebook {
            name: self.book.to_string(),
            source: LoreSource::Global,
            entries: self.entries,
            diagnostics: self.diagnostics,
        })
    }

    /// Places one read entry under `label`.
    fn place(&mut self, label: &str, read: Converted) {
        match read {
            Converted::NotObject(kind) => {
                self.entry_invalid(label, &format!("expected an object, found {kind}"))
            }
            Converted::Read(entry, diagnostics) => {
                self.diagnostics.extend(diagnostics);
                if let Some(entry) = entry {
                    self.push(entry);
                }
            }
        }
    }

    /// A World Info file: entries keyed by object key (a repeated key replaced in its place
    /// already, as `JSON.parse` does).
    fn world_info(&mut self, members: Vec<(String, Converted)>) {
        let order = js_key_order(members.iter().map(|(k, _)| k.as_str()));
        let mut members: Vec<Option<(String, Converted)>> = members.into_iter().map(Some).collect();
        for i in order {
            let Some((key, read)) = members[i].take() else {
                continue;
            };
            if !self.room(&key) {
                continue;
            }
            self.place(&key, read);
        }
    }

    /// A `character_book`: an array converted as `convertCharacterBook` does.
    fn character_book(&mut self, elements: Vec<(Uid, Converted)>) {
        let keys: Vec<String> = elements.iter().map(|(uid, _)| uid.to_string()).collect();
        // The last of a repeated uid wins, at the first one's place (a JS object's assignment);
        // the distinct uids in first-seen order give the JS key order.
        let mut last: HashMap<&str, usize> = HashMap::new();
        let mut distinct: Vec<&str> = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            if last.insert(k.as_str(), i).is_none() {
                distinct.push(k.as_str());
            }
        }
        let firsts: Vec<usize> = js_key_order(distinct.iter().copied())
            .into_iter()
            .map(|j| last[distinct[j]])
            .collect();
        for (i, k) in keys.iter().enumerate() {
            if last[k.as_str()] != i {
                self.entry_invalid(k, "a later entry with the same id replaces it");
            }
        }
        let mut elements: Vec<Option<Converted>> =
            elements.into_iter().map(|(_, c)| Some(c)).collect();
        for i in firsts {
            let label = &keys[i];
            if !self.room(label) {
                continue;
            }
            if let Some(read) = elements[i].take() {
                self.place(label, read);
            }
        }
    }
}

/// One entry as read, before it is placed.
// Nearly every entry is `Read`: boxing it would add an allocation per entry for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Converted {
    /// Not an object: skipped with a `LoreEntryInvalid` when placed (its JSON kind).
    NotObject(&'static str),
    /// Its normalised fields (`None` over a §15.8 cap) and the diagnostics reading gave.
    Read(Option<Entry>, Vec<Diagnostic>),
}

/// A book's `entries`, each read as it was met.
#[derive(Debug)]
enum Entries {
    /// World Info: by object key, in file order (a repeated key in its first place).
    Object(Vec<(String, Converted)>),
    /// A `character_book` array: each element's uid and entry.
    Array(Vec<(Uid, Converted)>),
}

/// `groupWeight` → `group_weight`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Reads one entry's fields with their defaults, reporting each invalid one.
struct Fields<'r, 'a> {
    reader: &'r mut Reader<'a>,
    label: String,
}

impl<'r, 'a> Fields<'r, 'a> {
    fn new(reader: &'r mut Reader<'a>, label: &str) -> Self {
        Fields {
            reader,
            label: label.to_string(),
        }
    }

    fn invalid(&mut self, field: &str, why: String) {
        let d = Diagnostic::new(
            DiagnosticKind::LoreFieldInvalid,
            None,
            format!(
                "entry {:?} of book {:?}: `{field}` {why}; the default is used",
                crate::diagnostic::excerpt(&self.label),
                crate::diagnostic::excerpt(self.reader.book)
            ),
        )
        .in_book(Some(self.reader.book), Some(&self.label))
        .field(field);
        self.reader.diagnostics.push(d);
    }

    /// The normalised entry, or `None` when it is over a §15.8 cap (reported).
    fn read<'j>(&mut self, uid: Uid, get: impl Fn(&str) -> Option<&'j Json>) -> Option<Entry> {
        let mut e = Entry::new(uid);
        // Each field in §15.3.2's order, so diagnostics come in that order.
        let (mut key, mut keysecondary) = (Vec::new(), Vec::new());
        self.strings("key", get("key"), &mut key);
        self.strings("keysecondary", get("keysecondary"), &mut keysecondary);
        self.string("comment", get("comment"), &mut e.comment);
        self.string("content", get("content"), &mut e.content);
        self.boolean("constant", get("constant"), &mut e.constant);
        self.boolean("selective", get("selective"), &mut e.selective);
        if let Some(v) = self.integer("selectiveLogic", get("selectiveLogic"), 0, 3, false) {
            e.selective_logic = v.unwrap_or(0) as u8;
        }
        if let Some(v) = self.integer("order", get("order"), i64::MIN, i64::MAX, false) {
            e.order = v.unwrap_or(100);
        }
        if let Some(v) = self.integer("position", get("position"), i64::MIN, i64::MAX, false) {
            e.position = v.unwrap_or(0);
        }
        self.boolean("disable", get("disable"), &mut e.disable);
        match get("probability") {
            None => {}
            Some(v) => match v.as_number() {
                Some(p) if (0.0..=100.0).contains(&p) => e.probability = Probability(p),
                _ => self.invalid(
                    "probability",
                    format!("is {}, not a number 0–100", v.kind()),
                ),
            },
        }
        self.boolean(
            "useProbability",
            get("useProbability"),
            &mut e.use_probability,
        );
        match get("depth") {
            // ST reads `depth ?? 4`: null is the default, silently.
            None | Some(Json::Null) => {}
            v => {
                if let Some(Some(d)) = self.integer("depth", v, 0, i64::MAX, false) {
                    e.depth = d as u64;
                }
            }
        }
        self.string("group", get("group"), &mut e.group);
        self.boolean("groupOverride", get("groupOverride"), &mut e.group_override);
        if let Some(Some(w)) = self.integer("groupWeight", get("groupWeight"), 0, i64::MAX, false) {
            e.group_weight = w as u64;
        }
        e.scan_depth = self.count("scanDepth", get("scanDepth"));
        e.case_sensitive = self.flag("caseSensitive", get("caseSensitive"));
        e.match_whole_words = self.flag("matchWholeWords", get("matchWholeWords"));
        e.use_group_scoring = self.flag("useGroupScoring", get("useGroupScoring"));
        if let Some(r) = self.integer("role", get("role"), 0, 2, true) {
            e.role = r.unwrap_or(0) as u8;
        }
        e.sticky = self.count("sticky", get("sticky"));
        e.cooldown = self.count("cooldown", get("cooldown"));
        e.delay = self.count("delay", get("delay"));
        self.boolean(
            "excludeRecursion",
            get("excludeRecursion"),
            &mut e.exclude_recursion,
        );
        self.boolean(
            "preventRecursion",
            get("preventRecursion"),
            &mut e.prevent_recursion,
        );
        match get("delayUntilRecursion") {
            None => {}
            Some(Json::Bool(b)) => e.delay_until_recursion = u64::from(*b),
            v => {
                if let Some(Some(n)) = self.integer("delayUntilRecursion", v, 0, i64::MAX, false) {
                    e.delay_until_recursion = n as u64;
                }
            }
        }
        self.boolean("ignoreBudget", get("ignoreBudget"), &mut e.ignore_budget);
        self.string("outletName", get("outletName"), &mut e.outlet_name);
        self.strings("triggers", get("triggers"), &mut e.triggers);
        for (name, slot) in [
            ("matchPersonaDescription", &mut e.match_persona_description),
            (
                "matchCharacterDescription",
                &mut e.match_character_description,
            ),
            (
                "matchCharacterPersonality",
                &mut e.match_character_personality,
            ),
            (
                "matchCharacterDepthPrompt",
                &mut e.match_character_depth_prompt,
            ),
            ("matchScenario", &mut e.match_scenario),
            ("matchCreatorNotes", &mut e.match_creator_notes),
        ] {
            self.boolean(name, get(name), slot);
        }
        if !self.within_caps(&e, [&key, &keysecondary]) {
            return None;
        }
        (e.key, e.keysecondary) = (Keys::new(key), Keys::new(keysecondary));
        Some(e)
    }

    fn within_caps(&mut self, e: &Entry, [key, keysecondary]: [&Vec<String>; 2]) -> bool {
        let l = self.reader.limits;
        let why = if key.len() > l.lore_max_keys || keysecondary.len() > l.lore_max_keys {
            format!("more than {} keys", l.lore_max_keys)
        } else if key
            .iter()
            .chain(keysecondary)
            .any(|k| k.len() > l.lore_max_key_bytes)
        {
            format!("a key over {} bytes", l.lore_max_key_bytes)
        } else if e.content.len() > l.lore_max_content_bytes {
            format!("content over {} bytes", l.lore_max_content_bytes)
        } else {
            return true;
        };
        let label = self.label.clone();
        self.reader
            .entry_invalid(&label, &format!("skipped: {why} (a World Info limit)"));
        false
    }

    fn string(&mut self, field: &str, v: Option<&Json>, slot: &mut String) {
        match v {
            None => {}
            Some(Json::String(s)) => slot.clone_from(s),
            Some(v) => self.invalid(field, format!("is {}, not a string", v.kind())),
        }
    }

    fn strings(&mut self, field: &str, v: Option<&Json>, slot: &mut Vec<String>) {
        match v {
            None => {}
            Some(Json::Array(items)) => {
                slot.extend(items.iter().filter_map(Json::as_str).map(str::to_string));
                if slot.len() != items.len() {
                    self.invalid(field, "holds items that are not strings (dropped)".into());
                }
            }
            Some(v) => self.invalid(field, format!("is {}, not a list of strings", v.kind())),
        }
    }

    fn boolean(&mut self, field: &str, v: Option<&Json>, slot: &mut bool) {
        match v {
            None => {}
            Some(Json::Bool(b)) => *slot = *b,
            Some(v) => self.invalid(field, format!("is {}, not a boolean", v.kind())),
        }
    }

    /// A boolean that may be null (inherit).
    fn flag(&mut self, field: &str, v: Option<&Json>) -> Option<bool> {
        match v {
            None | Some(Json::Null) => None,
            Some(Json::Bool(b)) => Some(*b),
            Some(v) => {
                self.invalid(field, format!("is {}, not a boolean or null", v.kind()));
                None
            }
        }
    }

    /// An integer ≥ 0 or null.
    fn count(&mut self, field: &str, v: Option<&Json>) -> Option<u64> {
        self.integer(field, v, 0, i64::MAX, true)
            .flatten()
            .map(|n| n as u64)
    }

    /// `None` when invalid (reported) ; `Some(None)` when missing or an allowed null.
    fn integer(
        &mut self,
        field: &str,
        v: Option<&Json>,
        lo: i64,
        hi: i64,
        nullable: bool,
    ) -> Option<Option<i64>> {
        match v {
            None => Some(None),
            Some(Json::Null) if nullable => Some(None),
            Some(v) => match v.as_integer() {
                Some(n) if (lo..=hi).contains(&n) => Some(Some(n)),
                _ => {
                    let range = if hi == i64::MAX && lo == 0 {
                        "an integer ≥ 0".to_string()
                    } else if lo == i64::MIN {
                        "an integer".to_string()
                    } else {
                        format!("an integer {lo}–{hi}")
                    };
                    self.invalid(field, format!("is {}, not {range}", v.kind()));
                    None
                }
            },
        }
    }
}

/// A World Info file read as it streams (issue 38): each entry is read into its compact
/// form as soon as it is parsed and its JSON dropped, so an import's peak memory is the file,
/// the compact book and one entry, not the whole document as a tree (~18× the file for a
/// book of short keys). Same result as reading the parsed document whole (tested).
mod stream {
    use std::collections::HashMap;
    use std::fmt;

    use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess};

    use super::{Converted, Entries, Reader};
    use crate::lore::json::Json;

    /// Implements every `visit_*` of a visitor that accepts any value but reads only maps
    /// (`$map`) and sequences (`$seq`), each other value giving `None`.
    macro_rules! any_value {
        () => {
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
        };
    }

    /// The document's `entries`, read through `reader`; `None` when the document is not an
    /// object or its `entries` is neither an object nor an array.
    pub(crate) fn entries(
        bytes: &[u8],
        reader: &mut Reader<'_>,
    ) -> Result<Option<Entries>, serde_json::Error> {
        // Lone surrogate escapes read as U+FFFD, as in `Json::parse`.
        let (bytes, _) = crate::surrogates::repair_json_at(bytes);
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let entries = Document(reader).deserialize(&mut de)?;
        de.end()?;
        Ok(entries)
    }

    /// A context file's book: its `name` and `source` as written (the last of a repeated
    /// key, as `JSON.parse`), its other members skipped unparsed.
    #[derive(Debug, Default)]
    pub(crate) struct Head {
        pub name: Option<Json>,
        pub source: Option<Json>,
    }

    /// The book's [`Head`]; `None` when it is not an object.
    pub(crate) fn head(bytes: &[u8]) -> Result<Option<Head>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let head = de.deserialize_any(HeadVisitor)?;
        de.end()?;
        Ok(head)
    }

    struct HeadVisitor;

    impl<'de> de::Visitor<'de> for HeadVisitor {
        type Value = Option<Head>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a lorebook")
        }
        any_value!();
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut head = Head::default();
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "name" => head.name = Some(map.next_value()?),
                    "source" => head.source = Some(map.next_value()?),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(Some(head))
        }
    }

    /// Accepts any JSON value; only an object's `entries` is read.
    struct Document<'r, 'a>(&'r mut Reader<'a>);

    /// One of the document's members, or the `entries` value.
    struct EntriesValue<'r, 'a>(&'r mut Reader<'a>);

    impl<'de> DeserializeSeed<'de> for Document<'_, '_> {
        type Value = Option<Entries>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> de::Visitor<'de> for Document<'_, '_> {
        type Value = Option<Entries>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a lorebook")
        }
        any_value!();
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut entries = None;
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    // A repeated `entries` replaces the earlier one, as `JSON.parse` does.
                    "entries" => entries = map.next_value_seed(EntriesValue(&mut *self.0))?,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(entries)
        }
    }

    impl<'de> DeserializeSeed<'de> for EntriesValue<'_, '_> {
        type Value = Option<Entries>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> de::Visitor<'de> for EntriesValue<'_, '_> {
        type Value = Option<Entries>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a lorebook's entries")
        }
        any_value!();
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut elements = Vec::new();
            while let Some(value) = seq.next_element::<Json>()? {
                elements.push(self.0.element(elements.len(), &value));
            }
            Ok(Some(Entries::Array(elements)))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut members: Vec<(String, Converted)> = Vec::new();
            // A repeated key replaces the earlier value in its place, as `JSON.parse` does.
            let mut index: HashMap<String, usize> = HashMap::new();
            while let Some(key) = map.next_key::<String>()? {
                let value: Json = map.next_value()?;
                let read = self.0.member(&key, &value);
                match index.get(&key) {
                    Some(&i) => members[i].1 = read,
                    None => {
                        index.insert(key.clone(), members.len());
                        members.push((key, read));
                    }
                }
            }
            Ok(Some(Entries::Object(members)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(json: &str) -> Lorebook {
        Lorebook::from_json("B", json.as_bytes(), &Limits::default()).unwrap()
    }

    #[test]
    fn keys_are_kept_once_unless_they_have_macros() {
        let keys = Keys::new(
            [
                "rain",
                "",
                "rain",
                "  ",
                "Rain",
                "{{random::a,b}}",
                "{{random::a,b}}",
                "é",
            ]
            .map(String::from)
            .to_vec(),
        );
        let list: Vec<&str> = keys.iter().collect();
        assert_eq!(
            list,
            [
                "rain",
                "",
                "Rain",
                "{{random::a,b}}",
                "{{random::a,b}}",
                "é"
            ]
        );
        assert_eq!(keys.len(), 6);
        assert_eq!(
            serde_json::to_string(&keys).unwrap(),
            serde_json::to_string(&list).unwrap()
        );
        assert!(Keys::new(Vec::new()).is_empty());
        // The caps count the keys as written: 3 repeats over a cap of 2 skip the entry.
        let limits = Limits {
            lore_max_keys: 2,
            ..Limits::default()
        };
        let b = Lorebook::from_json(
            "B",
            br#"{"entries": {"0": {"key": ["a", "a", "a"]}}}"#,
            &limits,
        )
        .unwrap();
        assert_eq!(b.len(), 0);
    }

    fn uids(b: &Lorebook) -> Vec<String> {
        b.entries.iter().map(|e| e.uid.to_string()).collect()
    }

    #[test]
    fn world_info_order_is_a_js_objects() {
        let b = book(r#"{"entries": {"b": {}, "10": {}, "2": {}, "a": {"uid": "x"}}}"#);
        assert_eq!(uids(&b), ["2", "10", "b", "x"]);
        assert_eq!(b.entries[0].uid, Uid::Number(2));
        assert_eq!(b.entries[2].uid, Uid::Text("b".into()));
    }

    #[test]
    fn a_repeated_uid_replaces_in_place() {
        let b = book(
            r#"{"entries": {"0": {"uid": 5, "content": "a"}, "1": {"uid": 7}, "2": {"uid": 5, "content": "b"}}}"#,
        );
        assert_eq!(uids(&b), ["5", "7"]);
        assert_eq!(b.entries[0].content, "b");
        assert_eq!(b.diagnostics[0].kind, DiagnosticKind::LoreEntryInvalid);
    }

    #[test]
    fn character_book_keeps_the_last_of_a_repeated_id_at_the_first_place() {
        let b = book(r#"{"entries": [{"id": 1, "content": "a"}, {"content": "b"}, {"id": "z"}]}"#);
        assert_eq!(uids(&b), ["1", "z"]);
        assert_eq!(b.entries[0].content, "b");
        // enabled missing: disabled; selective missing: false; position: after_char.
        assert!(b.entries[0].disable && !b.entries[0].selective);
        assert_eq!(b.entries[0].position, 1);
    }

    #[test]
    fn types_take_defaults_with_one_diagnostic_each() {
        let b = book(
            r#"{"entries": {"0": {"depth": null, "role": null, "delayUntilRecursion": true, "probability": 12.5, "scanDepth": -1, "order": 2.0}}}"#,
        );
        let e = &b.entries[0];
        assert_eq!((e.depth, e.role, e.delay_until_recursion), (4, 0, 1));
        assert_eq!(e.probability, Probability(12.5));
        assert_eq!(e.order, 2);
        assert_eq!(b.diagnostics.len(), 1);
        let v = serde_json::to_value(&b.diagnostics[0]).unwrap();
        assert_eq!(v["field"], "scanDepth");
        assert_eq!(v["book"], "B");
        assert_eq!(v["entry"], "0");
    }

    #[test]
    fn caps_skip_an_entry_and_refuse_a_book() {
        let mut limits = Limits {
            lore_max_keys: 2,
            ..Limits::default()
        };
        let b = Lorebook::from_json(
            "B",
            br#"{"entries": {"0": {"key": ["a", "b", "c"]}, "1": {}}}"#,
            &limits,
        )
        .unwrap();
        assert_eq!(uids(&b), ["1"]);
        limits.lore_max_book_bytes = 10;
        assert!(Lorebook::from_json("B", br#"{"entries": {}}  "#, &limits).is_err());
        for bad in ["[]", "{}", r#"{"entries": 3}"#, "not json"] {
            assert!(Lorebook::from_json("B", bad.as_bytes(), &Limits::default()).is_err());
        }
    }

    #[test]
    fn normalised_json_has_the_spec_field_order() {
        let b = book(r#"{"entries": {"0": {"key": ["a"]}}}"#);
        let text = serde_json::to_string(&b.entries[0]).unwrap();
        assert!(text.starts_with(r#"{"uid":0,"key":["a"],"keysecondary":[],"comment":"""#));
        assert!(text.contains(r#""probability":100,"useProbability":true"#));
        assert!(text.ends_with(r#""matchCreatorNotes":false}"#));
    }

    /// A book read as it streams is the book read whole: entries, order and diagnostics.
    #[test]
    fn streaming_reads_as_the_whole_document() {
        let limits = Limits {
            lore_max_entries: 4,
            ..Limits::default()
        };
        let docs = [
            r#"{"entries": {"2": {"key": ["b"]}, "x": 3, "1": {"uid": "u", "key": "bad"},
               "2": {"key": ["again"], "order": "no"}, "-1": {"content": "c"}}, "name": 1}"#,
            r#"{"entries": [{"id": 3, "keys": ["a"]}, 7, {"id": 3, "keys": ["b"]},
               {"keys": ["c"], "extensions": {"position": 4, "group_weight": "w"}},
               {"id": "z", "enabled": false}, {"id": 0}, {"id": 1}]}"#,
            r#"{"entries": {"1": {}, "2": {}, "3": {}, "4": {}, "5": {}, "6": {"key": 1}}}"#,
            r#"{"entries": {"a": {"content": "\ud800 half"}}, "entries": {"b": {}}}"#,
            r#"{"entries": "no"}"#,
            r#"[{"entries": {}}]"#,
            r#"{"entries": {"1": {"key": ["x"]}}"#,
        ];
        for doc in docs {
            let streamed = Lorebook::from_json("B", doc.as_bytes(), &limits);
            let whole = Json::parse(doc.as_bytes())
                .map_err(|e| LoreError::LorebookInvalid(format!("not JSON: {e}")))
                .and_then(|j| Lorebook::from_value("B", &j, &limits));
            match (streamed, whole) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.entries_json(), b.entries_json(), "{doc}");
                    assert_eq!(a.diagnostics, b.diagnostics, "{doc}");
                    assert!(
                        !a.diagnostics.is_empty() || doc.contains("\"b\": {}"),
                        "{doc}"
                    );
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{doc}"),
                (a, b) => panic!("{doc}: {a:?} / {b:?}"),
            }
        }
    }

    /// A context file's books stream too: name and source wherever they are in the object
    /// (the last of a repeated one), the same book as read whole, errors naming the field.
    #[test]
    fn a_context_files_books_stream() {
        let text = r#"[{"entries": {"1": {"key": ["a"]}, "0": {"key": 3}}, "name": "x", "name": "w"},
                       {"source": "chat", "name": "c", "entries": [{"keys": ["b"]}]}]"#;
        let books = read_lorebooks(text, &Limits::default()).unwrap();
        let whole = |i: usize, name: &str| {
            let Ok(Json::Array(list)) = Json::parse(text.as_bytes()) else {
                panic!("not a list")
            };
            Lorebook::from_value(name, &list[i], &Limits::default()).unwrap()
        };
        assert_eq!(books[0].name(), "w");
        assert_eq!(books[0].source(), LoreSource::Global);
        assert_eq!(books[0].entries_json(), whole(0, "w").entries_json());
        assert_eq!(books[0].diagnostics, whole(0, "w").diagnostics);
        assert_eq!(books[0].diagnostics.len(), 1);
        assert_eq!(books[1].source(), LoreSource::Chat);
        assert_eq!(books[1].entries_json(), whole(1, "c").entries_json());
        for (text, field, why) in [
            (r#"{"a": 1}"#, "lorebooks", "expected a list of books"),
            (
                r#"[3]"#,
                "lorebooks[0]",
                "expected an object with a string `name`",
            ),
            (r#"[{"name": 1}]"#, "lorebooks[0]", "a string `name`"),
            (
                r#"[{"name": "n", "source": "x"}]"#,
                "lorebooks[0].source",
                "expected \"chat\"",
            ),
            (
                r#"[{"name": "n", "entries": 1}]"#,
                "lorebooks[0]",
                "expected an object whose",
            ),
        ] {
            let e = read_lorebooks(text, &Limits::default()).unwrap_err();
            assert_eq!(e.0, field, "{text}");
            assert!(e.1.contains(why), "{text}: {}", e.1);
        }
    }
}
