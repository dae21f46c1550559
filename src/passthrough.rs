//! Which parts of a render are a context item's text passed through unchanged.
//!
//! A render borrows the host's text where it does not change it (chat history above all). A
//! language binding that already holds those texts as its own strings can hand the caller's
//! string back instead of building a copy: for a 200-message history that copy, not the
//! render, was most of a Node or Python call. Identity is by address: a borrowed part that
//! starts where an item's text starts and is as long *is* that text.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::context::Context;
use crate::keyhash::{KeyHasher, text_hash};

/// Recognises parts that are a context item's whole text (see the module note).
/// [`Chat::passthrough`](crate::Chat::passthrough) gives one that keeps its table between renders.
///
/// Parts come mostly in item order (history), so the item after the last one found is tried
/// first; a miss builds a sorted address table once, so any order costs `O(log n)` a part.
///
/// ```
/// use stpreset::{Context, ContextItem, passthrough::Passthrough, Preset, Role, Tag};
/// let p = Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"},
///     {"identifier": "chatHistory", "marker": true}]}"#).unwrap();
/// let mut ctx = Context::default();
/// ctx.items.push(ContextItem::new(Some(Tag::DialogueHistory), Role::User, "hello"));
/// let out = p.compile().render(&ctx);
/// let mut items = Passthrough::new(&ctx);
/// let found: Vec<Option<usize>> =
///     out.messages.iter().map(|m| items.item_of(&m.parts()[0])).collect();
/// assert_eq!(found, [None, Some(0)]);
/// ```
#[derive(Debug)]
pub struct Passthrough<'c> {
    ctx: &'c Context,
    next: usize,
    sorted: Table<'c>,
}

/// Item text addresses, sorted: built on the first miss, or kept by a [`Chat`] between renders.
pub(crate) type Addresses = Vec<(usize, usize)>;

#[derive(Debug)]
enum Table<'c> {
    Own(OnceLock<Addresses>),
    Kept(&'c OnceLock<Addresses>),
}

/// The sorted (address, index) table of the items' non-empty texts.
fn addresses(ctx: &Context) -> Addresses {
    let mut v: Addresses = ctx
        .items
        .iter()
        .enumerate()
        .filter(|(_, it)| !it.text.is_empty())
        .map(|(i, it)| (it.text.as_ptr() as usize, i))
        .collect();
    v.sort_unstable();
    v
}

impl<'c> Passthrough<'c> {
    /// A finder over `ctx`'s items (the context the render borrowed from).
    pub fn new(ctx: &'c Context) -> Passthrough<'c> {
        Passthrough {
            ctx,
            next: 0,
            sorted: Table::Own(OnceLock::new()),
        }
    }

    /// A finder whose address table lives in `kept` (a chat keeps it between renders; it must
    /// be emptied whenever the items change).
    pub(crate) fn kept(ctx: &'c Context, kept: &'c OnceLock<Addresses>) -> Passthrough<'c> {
        Passthrough {
            ctx,
            next: 0,
            sorted: Table::Kept(kept),
        }
    }

    /// The index of the item whose whole text `part` is, if any: a part borrowed from it, by
    /// address (an owned copy lives elsewhere, so equal text is not enough). Empty parts never
    /// match (empty strings share one address).
    pub fn item_of(&mut self, part: &str) -> Option<usize> {
        if part.is_empty() {
            return None;
        }
        let ctx = self.ctx;
        let is = |i: usize| ctx.items.get(i).is_some_and(|it| it.is_own_text(part));
        let found = if is(self.next) {
            Some(self.next)
        } else {
            let sorted = match &self.sorted {
                Table::Own(cell) => cell.get_or_init(|| addresses(ctx)),
                Table::Kept(cell) => cell.get_or_init(|| addresses(ctx)),
            };
            let at = sorted
                .binary_search_by_key(&(part.as_ptr() as usize), |&(a, _)| a)
                .ok()?;
            Some(sorted[at].1).filter(|&i| is(i))
        }?;
        self.next = found + 1;
        Some(found)
    }
}

/// The produced parts of a chat's previous render, by hash: a front end that keeps the
/// strings it built for them can hand one back when the next render produces the same text
/// (a preset's static nodes, every turn), so only what changed crosses again.
///
/// A front end numbers the produced parts of each render 0, 1, 2… in the order it receives
/// them, keeping each render's list; [`PartMemo::part`] says which part of the previous list
/// has the same text. [`PartMemo::commit`] makes this render's list the previous one (only
/// once the front end has taken the render, so both sides agree).
///
/// ```
/// let mut memo = stpreset::passthrough::PartMemo::default();
/// assert_eq!((memo.part("static"), memo.part("turn 1")), (None, None));
/// memo.commit();
/// assert_eq!((memo.part("turn 2"), memo.part("static")), (None, Some(0)));
/// memo.commit();
/// assert_eq!(memo.part("static"), Some(1));
/// ```
#[derive(Debug, Default)]
pub struct PartMemo {
    previous: HashMap<u128, u32, KeyHasher>,
    current: Vec<u128>,
}

impl PartMemo {
    /// Adds `text` as this render's next produced part; returns the number of the previous
    /// render's part with the same text, if any. Hashes are keyed per process (XXH3-128), so
    /// chat text cannot be chosen to collide.
    pub fn part(&mut self, text: &str) -> Option<u32> {
        let hash = text_hash(text.as_bytes());
        self.current.push(hash);
        self.previous.get(&hash).copied()
    }

    /// This render's parts become the previous render's.
    pub fn commit(&mut self) {
        self.previous.clear();
        for (i, &h) in self.current.iter().enumerate() {
            self.previous.entry(h).or_insert(i as u32);
        }
        self.current.clear();
    }

    /// Forgets this render's parts (the front end did not take it).
    pub fn abandon(&mut self) {
        self.current.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(texts: &[&str]) -> Context {
        Context::with_history(texts)
    }

    #[test]
    fn finds_whole_texts_in_any_order_and_nothing_else() {
        let c = ctx(&["one", "two", "three", ""]);
        let mut p = Passthrough::new(&c);
        let t = |i: usize| c.items[i].text.as_str();
        assert_eq!(p.item_of(t(2)), Some(2));
        assert_eq!(p.item_of(t(0)), Some(0));
        assert_eq!(p.item_of(t(1)), Some(1));
        // A slice of an item, an equal copy, an empty item: not the item's text.
        assert_eq!(p.item_of(&c.items[2].text[1..]), None);
        assert_eq!(p.item_of(&c.items[2].text[..2]), None);
        assert_eq!(p.item_of(&String::from("two")), None);
        assert_eq!(p.item_of("two"), None);
        assert_eq!(p.item_of(t(3)), None);
    }
}
