//! A context kept between turns: a bot reads its context once and then adds only what changed
//! (a message, the variables a render returned), instead of rebuilding the whole context
//! file every turn. The language packages hold one of these natively, so a 200-message
//! history crosses into Rust once, not once per turn.

mod memory;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::value::RawValue;

use crate::context::{Context, ContextItem, UTF8_BOM};
use crate::error::ContextError;
use crate::passthrough::{Addresses, Passthrough};
use crate::tokens::Known;
use memory::ItemCounts;

/// A [`Context`] built from context-file JSON (SPEC §9) and changed in place: fields replaced
/// by [`Chat::set_json`], items spliced by [`Chat::splice_json`]. Every change is checked as a
/// context file is; a refused change leaves the chat as it was.
///
/// ```
/// let mut chat = stpreset::Chat::from_json(br#"{"user": "Alice", "items": [
///     {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#).unwrap();
/// chat.splice_json(1, 0, br#"[{"tag": "DIALOGUE_HISTORY", "role": "model", "text": "hello"}]"#).unwrap();
/// chat.set_json(br#"{"variables": {"turns": "2"}}"#).unwrap();
/// assert!(chat.set_json(br#"{"seed": "x"}"#).is_err());
/// let ctx = chat.context();
/// assert_eq!((ctx.user.as_str(), ctx.items.len(), ctx.variables["turns"].as_str()), ("Alice", 2, "2"));
/// ```
#[derive(Debug)]
pub struct Chat {
    /// The fields as given, without `items`: what `set_json` merges into and re-reads. Kept
    /// as written: a `lorebooks` entry's key order is its scan order (SPEC §15.3.1).
    fields: std::collections::BTreeMap<String, Box<RawValue>>,
    ctx: Context,
    /// Where the items' texts are, for [`Chat::passthrough`]; emptied when items change.
    addresses: OnceLock<Addresses>,
    /// Each item's token count once a budget counted it (kept in step with the items).
    counts: ItemCounts,
    /// Lone surrogates replaced in each field, and in each item (SPEC §9, issue 20): the
    /// context's count is their sum, so a note leaves with the value that caused it.
    field_surrogates: BTreeMap<String, usize>,
    item_surrogates: Vec<u32>,
    /// Their sum, kept as items come and go (a splice costs what it adds and removes, not the
    /// chat's length).
    in_items: usize,
}

impl Clone for Chat {
    /// A copy has its own texts at other addresses: its table starts empty.
    fn clone(&self) -> Chat {
        Chat {
            fields: self.fields.clone(),
            ctx: self.ctx.clone(),
            addresses: OnceLock::new(),
            counts: self.counts.clone(),
            field_surrogates: self.field_surrogates.clone(),
            item_surrogates: self.item_surrogates.clone(),
            in_items: self.in_items,
        }
    }
}

impl Chat {
    /// A chat from a context file's JSON (items included).
    pub fn from_json(bytes: &[u8]) -> Result<Chat, ContextError> {
        let mut ctx = Context::from_json(bytes)?;
        // Read once more as plain JSON to keep the fields for `set_json`: the context reader
        // has already accepted (and bounded) this text.
        let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        let (repaired, at) = crate::surrogates::repair_json_at(bytes);
        let mut fields = fields(&repaired)?;
        fields.remove("items");
        let (mut field_surrogates, mut item_surrogates) = (BTreeMap::new(), Vec::new());
        if !at.is_empty() {
            for (key, raw) in top_level(&repaired) {
                if key == "items" {
                    item_surrogates = per_item(&repaired, raw.get(), &at);
                } else {
                    let n = within(&repaired, raw.get(), &at);
                    if n > 0 {
                        field_surrogates.insert(key, n);
                    }
                }
            }
        }
        item_surrogates.resize(ctx.items.len(), 0);
        ctx.items.shrink_to_fit();
        let mut chat = Chat {
            fields,
            field_surrogates,
            in_items: item_surrogates.iter().map(|&n| n as usize).sum(),
            item_surrogates,
            counts: ItemCounts::unknown(ctx.items.len()),
            ctx,
            addresses: OnceLock::new(),
        };
        chat.count_surrogates();
        Ok(chat)
    }

    /// The context it stands for.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The host's facts and macros for later renders: a bot sets its macro callback here
    /// once for the chat ([`MapHost::set_macro_fn`](crate::MapHost::set_macro_fn)).
    ///
    /// ```
    /// let mut chat = stpreset::Chat::from_json(b"{}").unwrap();
    /// chat.host_mut().set_macro_fn(|name, _| (name == "summary").then(|| "So far.".into()));
    /// assert_eq!(stpreset::expand("{{summary}}", chat.context()).text, "So far.");
    /// ```
    pub fn host_mut(&mut self) -> &mut crate::context::MapHost {
        &mut self.ctx.host
    }

    /// Which parts of a render of [`Chat::context`] are an item's text (see [`Passthrough`]);
    /// its address table is built once and kept until the items change.
    pub fn passthrough(&self) -> Passthrough<'_> {
        Passthrough::kept(&self.ctx, &self.addresses)
    }

    /// What a render of this chat may remember between renders (its items' token counts).
    pub(crate) fn known(&self) -> Known<'_> {
        self
    }

    /// How many items it has.
    pub fn len(&self) -> usize {
        self.ctx.items.len()
    }

    /// Whether it has no items.
    pub fn is_empty(&self) -> bool {
        self.ctx.items.is_empty()
    }

    /// Replaces `delete` items from `start` (both clamped to the list) with the items of a JSON
    /// list, read as a context file's `items` (an error names `items[i]`, `i` counted in the
    /// given list).
    pub fn splice_json(
        &mut self,
        start: usize,
        delete: usize,
        items: &[u8],
    ) -> Result<(), ContextError> {
        let (new, counts) = read_items(items)?;
        let len = self.ctx.items.len();
        let start = start.min(len);
        let end = start.saturating_add(delete).min(len);
        let n = new.len();
        self.ctx.items.splice(start..end, new);
        self.counts.splice(start, end, n);
        let added: usize = counts.iter().map(|&n| n as usize).sum();
        let removed: usize = self
            .item_surrogates
            .splice(start..end, counts)
            .map(|n| n as usize)
            .sum();
        self.in_items = self.in_items + added - removed;
        self.addresses = OnceLock::new();
        self.count_surrogates();
        Ok(())
    }

    fn count_surrogates(&mut self) {
        self.ctx.lone_surrogates = self.field_surrogates.values().sum::<usize>() + self.in_items;
    }

    /// Replaces the fields a JSON object has (any context field except `items`); the others
    /// keep their values.
    pub fn set_json(&mut self, bytes: &[u8]) -> Result<(), ContextError> {
        // Checked as a context file first: same messages, same bounds. What this reads of
        // the costly fields it sets (a book) is the value the chat takes.
        let mut given = Context::from_json(bytes)?;
        let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        let (repaired, at) = crate::surrogates::repair_json_at(bytes);
        let new = fields(&repaired)?;
        if new.contains_key("items") {
            return Err(ContextError::Field {
                field: "items".into(),
                problem: "items change by splicing them, not by setting them".into(),
            });
        }
        // The merged fields are read again, except the ones that cost most to read and do
        // not depend on the others: a bot sets `wi_state` or `now` every turn, and reading
        // its 400-entry book again each time was most of the turn (issue 54). Those come from
        // `given` when set now, else from the chat as it is. A card in `group_cards` is read
        // under `limits`, so a change of either reads them again; the two script lists share
        // their notes, so they are kept or read again together.
        let set = |key: &str| new.contains_key(key);
        let scripts_set = set("regex_scripts") || set("char_regex_scripts");
        let cards_set = set("group_cards") || set("limits");
        let reread = |key: &str| match key {
            "lorebooks" => false,
            "group_cards" => cards_set,
            "regex_scripts" | "char_regex_scripts" => scripts_set,
            _ => true,
        };
        let mut merged: BTreeMap<&str, &RawValue> = self
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), &**v))
            .collect();
        merged.extend(new.iter().map(|(k, v)| (k.as_str(), &**v)));
        let has_books = merged.contains_key("lorebooks");
        merged.retain(|k, _| reread(k));
        let json = serde_json::to_vec(&merged).unwrap_or_default();
        let mut ctx = Context::from_json(&json)?;
        // Read: nothing below refuses, so the chat changes only from here on.
        if has_books {
            let from = if set("lorebooks") {
                &mut given
            } else {
                &mut self.ctx
            };
            // `lorebooks: null` reads as no lore at all: then there is nothing to carry.
            if let Some(lore) = from.lore.as_mut() {
                ctx.lore.get_or_insert_with(Default::default).books =
                    std::mem::take(&mut lore.books);
            }
        }
        if !cards_set {
            ctx.group_cards = std::mem::take(&mut self.ctx.group_cards);
        }
        if !scripts_set {
            ctx.regex_scripts = std::mem::take(&mut self.ctx.regex_scripts);
            ctx.char_regex_scripts = std::mem::take(&mut self.ctx.char_regex_scripts);
            ctx.regex_notes = std::mem::take(&mut self.ctx.regex_notes);
        }
        // The bot's macro callback is not a field: it stays (it was dropped here before).
        ctx.host.adopt_macro_fn(&mut self.ctx.host);
        ctx.items = std::mem::take(&mut self.ctx.items);
        self.fields.extend(new);
        // The merged fields were read repaired: the counts come from the text given now, for
        // the fields it sets, and stay for the others.
        for (key, raw) in top_level(&repaired) {
            match within(&repaired, raw.get(), &at) {
                0 => self.field_surrogates.remove(&key),
                n => self.field_surrogates.insert(key, n),
            };
        }
        self.ctx = ctx;
        self.count_surrogates();
        Ok(())
    }

    /// Carries a render's local and global variables (`Rendered::variables`, `globals`) into
    /// the chat's next render: the values a bot keeps between turns (SPEC §9).
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main",
    ///     "content": "{{setvar::n::{{getvar::n}}x}}{{getvar::n}}"}]}"#).unwrap().compile();
    /// let mut chat = stpreset::Chat::from_json(b"{}").unwrap();
    /// for _ in 0..2 {
    ///     let out = p.render(chat.context());
    ///     chat.keep(out.variables, out.globals);
    /// }
    /// assert_eq!(chat.context().variables["n"], "xx");
    /// ```
    pub fn keep(&mut self, variables: BTreeMap<String, String>, globals: BTreeMap<String, String>) {
        let raw = |m: &BTreeMap<String, String>| {
            serde_json::value::to_raw_value(m).expect("a map of strings serializes")
        };
        self.fields.insert("variables".into(), raw(&variables));
        self.fields.insert("globals".into(), raw(&globals));
        self.ctx.variables = variables;
        self.ctx.globals = globals;
        // A render's maps hold no lone surrogates (they were replaced when read).
        self.field_surrogates.remove("variables");
        self.field_surrogates.remove("globals");
        self.count_surrogates();
    }

    /// The chat saved: a context file (SPEC §9) holding its fields as they are now (the
    /// variables and globals [`Chat::keep`] carried, a `wi_state` set with
    /// [`Chat::set_json`]), its items, and `"stpreset_chat": 1`, the format. [`Chat::from_json`]
    /// reads it back with the same checks and bounds as any context file (a later format is
    /// refused, naming the field), and a render of the loaded chat equals one of this chat.
    /// Texts are saved as the chat holds them: a lone surrogate the input had is U+FFFD here,
    /// so the loaded chat carries no `LoneSurrogate` note for it.
    ///
    /// ```
    /// let mut chat = stpreset::Chat::from_json(br#"{"user": "Alice"}"#).unwrap();
    /// chat.push(stpreset::ContextItem::new(
    ///     Some(stpreset::Tag::DialogueHistory), stpreset::Role::User, "hi"));
    /// chat.set_json(br#"{"variables": {"turns": "1"}}"#).unwrap();
    /// let saved = chat.to_json();
    /// let loaded = stpreset::Chat::from_json(saved.as_bytes()).unwrap();
    /// assert_eq!(loaded.context().items, chat.context().items);
    /// assert_eq!(loaded.context().variables["turns"], "1");
    /// ```
    pub fn to_json(&self) -> String {
        let items: Vec<SavedItem<'_>> = self.ctx.items.iter().map(SavedItem::from).collect();
        // Items and the format serialize infallibly: strings, numbers and unit variants.
        let items = serde_json::value::to_raw_value(&items).ok();
        let format = serde_json::value::to_raw_value(&crate::context::CHAT_FORMAT).ok();
        // The fields as kept, raw (a lorebook's key order is its scan order), as `set_json`
        // writes them; a loaded chat's own `stpreset_chat` is replaced.
        let mut doc: BTreeMap<&str, &RawValue> = self
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), &**v))
            .collect();
        doc.extend(format.as_deref().map(|f| ("stpreset_chat", f)));
        doc.extend(items.as_deref().map(|i| ("items", i)));
        serde_json::to_string(&doc).unwrap_or_default()
    }

    /// Adds one item at the end.
    pub fn push(&mut self, item: ContextItem) {
        self.ctx.items.push(item);
        self.item_surrogates.push(0);
        self.counts.push();
        self.addresses = OnceLock::new();
    }
}

/// An item as a context file writes it (the reader's field names; absent = default).
#[derive(serde::Serialize)]
struct SavedItem<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<crate::context::Tag>,
    role: crate::role::Role,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    depth: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

impl<'a> From<&'a ContextItem> for SavedItem<'a> {
    fn from(i: &'a ContextItem) -> SavedItem<'a> {
        SavedItem {
            tag: i.tag,
            role: i.role,
            text: &i.text,
            // Nanoseconds kept: the loaded time is the same instant.
            time: i
                .time
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
            depth: i.depth,
            name: i.name.as_deref(),
        }
    }
}

/// A context file's top-level fields, from its repaired text (`repair_json_at`), read after
/// `Context::from_json` accepted the text (so it is an object, and no deeper than the reader
/// allows).
fn fields(
    repaired: &[u8],
) -> Result<std::collections::BTreeMap<String, Box<RawValue>>, ContextError> {
    crate::context::guarded(|| serde_json::from_slice(repaired)).map_err(|e: serde_json::Error| {
        ContextError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        }
    })
}

/// Items read as a context file's `items`, and the lone surrogates replaced in each.
fn read_items(json: &[u8]) -> Result<(Vec<ContextItem>, Vec<u32>), ContextError> {
    let mut doc = Vec::with_capacity(json.len() + 10);
    doc.extend_from_slice(b"{\"items\":");
    doc.extend_from_slice(json);
    doc.push(b'}');
    let items = Context::from_json(&doc)?.items;
    let (repaired, at) = crate::surrogates::repair_json_at(json);
    let mut counts = if at.is_empty() {
        Vec::new()
    } else {
        per_item(
            &repaired,
            std::str::from_utf8(&repaired).unwrap_or_default(),
            &at,
        )
    };
    counts.resize(items.len(), 0);
    Ok((items, counts))
}

/// How many of the replacements at offsets `at` (ascending) of `text` fall in each element of
/// `list`, a JSON list lying inside `text` (rare: only when a replacement was made). Two binary
/// searches per element: linear in the elements whatever the number of replacements.
fn per_item(text: &[u8], list: &str, at: &[usize]) -> Vec<u32> {
    let elements: Vec<&RawValue> =
        crate::context::guarded(|| serde_json::from_str(list)).unwrap_or_default();
    elements
        .iter()
        .map(|raw| within(text, raw.get(), at) as u32)
        .collect()
}

/// How many offsets of `at` (ascending) fall inside `part`, a slice of `text`.
fn within(text: &[u8], part: &str, at: &[usize]) -> usize {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    let end = start + part.len();
    at.partition_point(|&p| p < end) - at.partition_point(|&p| p < start)
}

/// A JSON object's top-level fields, each as its raw text inside `text` (empty when it is not
/// an object; keys with escapes are read as written).
fn top_level(text: &[u8]) -> Vec<(String, &RawValue)> {
    let map: Result<BTreeMap<String, &RawValue>, _> =
        crate::context::guarded(|| serde_json::from_slice(text));
    map.map(|m| m.into_iter().collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_change_changes_nothing() {
        let mut chat = Chat::from_json(br#"{"user": "A", "seed": 3, "items": []}"#).unwrap();
        assert!(chat.set_json(br#"{"user": "B", "seed": -1}"#).is_err());
        assert!(
            chat.splice_json(
                0,
                0,
                br#"[{"role": "user", "text": "x"}, {"role": "nobody"}]"#
            )
            .is_err()
        );
        assert!(chat.set_json(br#"{"items": []}"#).is_err());
        assert_eq!((chat.context().user.as_str(), chat.len()), ("A", 0));
        chat.set_json(br#"{"user": "B"}"#).unwrap();
        assert_eq!(
            (chat.context().user.as_str(), chat.context().seed),
            ("B", 3)
        );
    }

    /// `set_json` keeps the fields it does not read again (books, cards, scripts): after
    /// every change the chat's context is the one its saved file reads as, and the bot's
    /// macro callback stays.
    #[test]
    fn a_change_keeps_what_it_does_not_read_again() {
        let book = |name: &str, key: &str| {
            format!(
                r#"{{"name": "{name}", "entries": {{"0": {{"uid": 0, "key": ["{key}"], "content": "about {key}"}}}}}}"#
            )
        };
        let card = r#"{"name": "Oren", "description": "A smith."}"#;
        let script =
            r#"{"scriptName": "s", "findRegex": "/a/g", "replaceString": "b", "placement": [2]}"#;
        let mut chat = Chat::from_json(
            format!(
                r#"{{"user": "A", "char": "B", "group": ["B", "Oren"], "group_cards": {{"Oren": {card}}},
                "lorebooks": [{}], "regex_scripts": [{script}, "x"],
                "items": [{{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "the river"}}]}}"#,
                book("w", "river")
            )
            .as_bytes(),
        )
        .unwrap();
        chat.host_mut()
            .set_macro_fn(|name, _| (name == "summary").then(|| "So far.".into()));
        let changes = [
            r#"{"wi_state": {"version": 1, "effects": []}, "position": 3}"#.to_string(),
            r#"{"now": "2026-12-07T10:00:00Z"}"#.to_string(),
            format!(
                r#"{{"lorebooks": [{}, {}]}}"#,
                book("x", "hill"),
                book("y", "sea")
            ),
            r#"{"limits": {"render_work": 900000000}}"#.to_string(),
            format!(r#"{{"char_regex_scripts": [{script}]}}"#),
            r#"{"world_info": {"scan_depth": 3}}"#.to_string(),
            r#"{"lorebooks": null}"#.to_string(),
            format!(r#"{{"group_cards": {{"Oren": {card}, "Ivy": {card}}}}}"#),
        ];
        for change in &changes {
            chat.set_json(change.as_bytes()).unwrap();
            let saved = Context::from_json(chat.to_json().as_bytes()).unwrap();
            let mut ctx = chat.context().clone();
            ctx.host.clear_macro_fn();
            assert_eq!(format!("{ctx:?}"), format!("{saved:?}"), "after {change}");
            assert_eq!(
                crate::expand("{{summary}}", chat.context()).text,
                "So far.",
                "after {change}"
            );
        }
        let lore = chat.context().lore.as_ref().unwrap();
        assert!(lore.books.is_empty());
        assert_eq!(lore.settings.scan_depth, 3);
        assert_eq!(chat.context().group_cards.len(), 2);
        assert_eq!(chat.context().char_regex_scripts.len(), 1);
        assert!(!chat.context().regex_notes.is_empty());
    }

    #[test]
    fn a_lone_surrogate_is_noted_while_its_message_stays() {
        let mut chat = Chat::from_json(
            br#"{"user": "A\ud83d", "items": [
            {"role": "user", "text": "a\ud83d\ud83d"}, {"role": "user", "text": "b"}]}"#,
        )
        .unwrap();
        assert_eq!(chat.context().lone_surrogates, 3);
        assert_eq!(chat.context().items[0].text, "a\u{FFFD}\u{FFFD}");
        chat.splice_json(2, 0, br#"[{"role": "user", "text": "\ude00"}]"#)
            .unwrap();
        assert_eq!(chat.context().lone_surrogates, 4);
        chat.splice_json(0, 1, b"[]").unwrap();
        assert_eq!(chat.context().lone_surrogates, 2);
        chat.set_json(br#"{"user": "B", "char": "C\udc00"}"#)
            .unwrap();
        assert_eq!(chat.context().lone_surrogates, 2);
        chat.keep(Default::default(), Default::default());
        assert_eq!(
            chat.context().lone_surrogates,
            2,
            "keeping variables keeps the other notes"
        );
        chat.set_json(br#"{"char": "C"}"#).unwrap();
        assert_eq!(chat.context().lone_surrogates, 1);
    }

    #[test]
    fn splice_clamps_like_array_splice() {
        let mut chat = Chat::from_json(br#"{}"#).unwrap();
        let one = br#"[{"role": "user", "text": "a"}, {"role": "user", "text": "b"}]"#;
        chat.splice_json(99, 99, one).unwrap();
        chat.splice_json(0, 1, b"[]").unwrap();
        chat.splice_json(1, 5, br#"[{"role": "model", "text": "c"}]"#)
            .unwrap();
        let texts: Vec<&str> = chat
            .context()
            .items
            .iter()
            .map(|i| i.text.as_str())
            .collect();
        assert_eq!(texts, ["b", "c"]);
    }
}
