//! A render's activated World Info entries one by one ([`Rendered::activated_lore`]), as a
//! previewer or a bot's log shows them: which entry fired, its keys and where it went, rather
//! than the one joined text the prompt carries.
//!
//! [`Rendered::activated_lore`]: crate::Rendered::activated_lore

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::lore::Lorebook;

/// One activated entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ActivatedEntry<'b> {
    /// `BOOK.UID`, as [`WiResult::activated`](super::WiResult::activated) names it.
    pub name: String,
    /// The book's name.
    pub book: &'b str,
    /// The entry's title (`comment`).
    pub comment: &'b str,
    /// Its primary keys.
    pub keys: Vec<&'b str>,
    /// Where its text goes (SPEC §15.7: 0 before the character, 1 after, 4 at a depth, ...).
    pub position: i64,
    /// Its depth, for position 4.
    pub depth: u64,
    /// Its insertion order.
    pub order: i64,
    /// Its text as written (before macros and the `WORLD_INFO` scripts).
    pub content: &'b str,
}

/// The entries `activated` names, in that order, read from `books` (a name no book has, from
/// a render of other books, is left out).
///
/// ```
/// use stpreset::{Context, ContextItem, Limits, Lorebook, Role, Tag, lore::LoreInput};
/// let book = Lorebook::from_json("w", br#"{"entries": {"0": {"key": ["rain"], "comment": "Weather", "content": "It rains."}}}"#, &Limits::default()).unwrap();
/// let mut ctx = Context::default();
/// ctx.items.push(ContextItem::new(Some(Tag::DialogueHistory), Role::User, "Is it rain?"));
/// let mut lore = LoreInput::default();
/// lore.books.push(book);
/// ctx.lore = Some(lore);
/// let preset = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "worldInfoBefore", "marker": true}]}"#).unwrap();
/// let out = preset.compile().render(&ctx);
/// let books = &ctx.lore.as_ref().unwrap().books;
/// let entries = stpreset::activation::activated_entries(books, out.activated_lore());
/// assert_eq!((entries[0].comment, entries[0].content), ("Weather", "It rains."));
/// ```
pub fn activated_entries<'b>(
    books: &'b [Lorebook],
    activated: &[String],
) -> Vec<ActivatedEntry<'b>> {
    if activated.is_empty() {
        return Vec::new();
    }
    let wanted: HashSet<&str> = activated.iter().map(String::as_str).collect();
    let mut found: HashMap<String, ActivatedEntry<'b>> = HashMap::with_capacity(wanted.len());
    for b in books {
        for e in &b.entries {
            let name = format!("{}.{}", b.name, e.uid);
            if wanted.contains(name.as_str()) && !found.contains_key(&name) {
                let entry = ActivatedEntry {
                    name: name.clone(),
                    book: &b.name,
                    comment: &e.comment,
                    keys: e.key.iter().collect(),
                    position: e.position,
                    depth: e.depth,
                    order: e.order,
                    content: &e.content,
                };
                found.insert(name, entry);
            }
        }
    }
    activated
        .iter()
        .filter_map(|n| found.get(n).cloned())
        .collect()
}
