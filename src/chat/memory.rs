//! Token counts remembered per chat item, between renders (issue 20).
//!
//! A bot renders the same history every turn with one message more. The process-wide cache
//! (`tokens/cache.rs`) still hashes each history text, takes a lock and looks it up, every turn: a
//! third of a 200-message budgeted render of a small preset. A [`Chat`](crate::Chat) knows
//! when an item changes (only by splicing), so it keeps each item's count beside the item
//! and a render reads it back for the price of an address comparison.
//!
//! Still keyed by the whole flattened text, never by part (SPEC §12.4): a count is used only
//! for a message whose one part is an item's whole text (`Message::item`, checked by
//! address), so the message's text *is* the item's.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Chat;
use crate::tokens::{Remember, Vocab};

/// Each item's count under one vocabulary: `(vocabulary code << 32) | count`, 0 for none.
/// One word, so relaxed loads and stores can never pair a count with the wrong vocabulary.
#[derive(Debug, Default)]
pub(crate) struct ItemCounts(Vec<AtomicU64>);

impl Clone for ItemCounts {
    /// A copy's items have the same texts (at other addresses): the counts still hold.
    fn clone(&self) -> ItemCounts {
        ItemCounts(
            self.0
                .iter()
                .map(|c| AtomicU64::new(c.load(Ordering::Relaxed)))
                .collect(),
        )
    }
}

fn code(vocab: Vocab) -> u64 {
    match vocab {
        Vocab::O200k => 1 << 32,
        Vocab::Cl100k => 2 << 32,
    }
}

impl ItemCounts {
    /// No count yet for any of `len` items.
    pub fn unknown(len: usize) -> ItemCounts {
        ItemCounts((0..len).map(|_| AtomicU64::new(0)).collect())
    }

    /// Items `start..end` replaced by `added` new ones (whose counts are unknown).
    pub fn splice(&mut self, start: usize, end: usize, added: usize) {
        self.0
            .splice(start..end, (0..added).map(|_| AtomicU64::new(0)));
    }

    /// One new item at the end.
    pub fn push(&mut self) {
        self.0.push(AtomicU64::new(0));
    }

    fn get(&self, item: usize, vocab: Vocab) -> Option<u32> {
        let word = self.0.get(item)?.load(Ordering::Relaxed);
        (word & !u64::from(u32::MAX) == code(vocab)).then_some(word as u32)
    }

    fn put(&self, item: usize, vocab: Vocab, count: u32) {
        if let Some(cell) = self.0.get(item) {
            cell.store(code(vocab) | u64::from(count), Ordering::Relaxed);
        }
    }
}

impl Remember for Chat {
    /// The count of the text of `parts` under `vocab`: remembered when the message is item
    /// `item` as given (`Message::item`, checked here by address: its one part is that
    /// item's text), else (and the first time) `count()`.
    #[inline]
    fn count(
        &self,
        parts: &[Cow<'_, str>],
        item: Option<usize>,
        vocab: Vocab,
        count: &mut dyn FnMut() -> u32,
    ) -> u32 {
        let items = &self.ctx.items;
        let is_item = |i: usize, one: &str| items.get(i).is_some_and(|it| it.is_own_text(one));
        let item = match (parts, item) {
            ([Cow::Borrowed(one)], Some(i)) if is_item(i, one) => i,
            _ => return count(),
        };
        if let Some(n) = self.counts.get(item, vocab) {
            return n;
        }
        let n = count();
        self.counts.put(item, vocab, n);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Chat {
        Chat::from_json(
            br#"{"items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "one"},
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "two"}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn an_items_count_is_counted_once_per_vocabulary() {
        let chat = two();
        let known = chat.known();
        let calls = std::cell::Cell::new(0);
        let count = |parts: &[Cow<'_, str>], vocab| {
            known.count(parts, Some(1), vocab, &mut || {
                calls.set(calls.get() + 1);
                7
            })
        };
        let item = [Cow::Borrowed(chat.ctx.items[1].text.as_str())];
        assert_eq!(count(&item, Vocab::O200k), 7);
        assert_eq!(count(&item, Vocab::O200k), 7);
        assert_eq!(calls.get(), 1);
        // Another vocabulary counts again (and is what the item keeps).
        count(&item, Vocab::Cl100k);
        count(&item, Vocab::O200k);
        assert_eq!(calls.get(), 3);
        // Equal text elsewhere, or the item's text among other parts, is never its count.
        let copy = [Cow::Owned::<str>("two".into())];
        let joined = [item[0].clone(), Cow::Borrowed("!")];
        count(&copy, Vocab::O200k);
        count(&joined, Vocab::O200k);
        assert_eq!(calls.get(), 5);
    }

    #[test]
    fn a_message_that_names_an_item_is_checked_by_address() {
        let chat = two();
        chat.counts.put(1, Vocab::O200k, 7);
        let known = chat.known();
        let two = [Cow::Borrowed(chat.ctx.items[1].text.as_str())];
        assert_eq!(known.count(&two, Some(1), Vocab::O200k, &mut || 0), 7);
        // Naming another item, none that exists, or none at all is never that item's count.
        assert_eq!(known.count(&two, Some(0), Vocab::O200k, &mut || 3), 3);
        assert_eq!(known.count(&two, Some(9), Vocab::O200k, &mut || 4), 4);
        assert_eq!(known.count(&two, None, Vocab::O200k, &mut || 5), 5);
        assert_eq!(chat.counts.get(0, Vocab::O200k), None);
    }

    #[test]
    fn splicing_forgets_only_the_replaced_items() {
        let mut counts = ItemCounts::unknown(3);
        for i in 0..3 {
            counts.put(i, Vocab::O200k, i as u32 + 10);
        }
        counts.splice(1, 2, 2);
        let got: Vec<Option<u32>> = (0..4).map(|i| counts.get(i, Vocab::O200k)).collect();
        assert_eq!(got, [Some(10), None, None, Some(12)]);
    }
}
