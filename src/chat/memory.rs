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

/// Per item: its count under one vocabulary, `(vocabulary code << 32) | count` (0 for none:
/// one word, so relaxed loads and stores can never pair a count with the wrong vocabulary),
/// and the work of counting its text plus one (0 for none; the same under every vocabulary).
#[derive(Debug, Default)]
pub(crate) struct ItemCounts(Vec<[AtomicU64; 2]>);

impl Clone for ItemCounts {
    /// A copy's items have the same texts (at other addresses): the counts still hold.
    fn clone(&self) -> ItemCounts {
        let load = |c: &AtomicU64| AtomicU64::new(c.load(Ordering::Relaxed));
        ItemCounts(self.0.iter().map(|[c, w]| [load(c), load(w)]).collect())
    }
}

fn code(vocab: Vocab) -> u64 {
    match vocab {
        Vocab::O200k => 1 << 32,
        Vocab::Cl100k => 2 << 32,
    }
}

fn unknown() -> [AtomicU64; 2] {
    [AtomicU64::new(0), AtomicU64::new(0)]
}

impl ItemCounts {
    /// No count yet for any of `len` items.
    pub fn unknown(len: usize) -> ItemCounts {
        ItemCounts((0..len).map(|_| unknown()).collect())
    }

    /// Items `start..end` replaced by `added` new ones (whose counts are unknown).
    pub fn splice(&mut self, start: usize, end: usize, added: usize) {
        self.0.splice(start..end, (0..added).map(|_| unknown()));
    }

    /// One new item at the end.
    pub fn push(&mut self) {
        self.0.push(unknown());
    }

    fn get(&self, item: usize, vocab: Vocab) -> Option<u32> {
        let word = self.0.get(item)?[0].load(Ordering::Relaxed);
        (word & !u64::from(u32::MAX) == code(vocab)).then_some(word as u32)
    }

    fn work(&self, item: usize) -> Option<u64> {
        let word = self.0.get(item)?[1].load(Ordering::Relaxed);
        word.checked_sub(1)
    }

    fn put(&self, item: usize, vocab: Vocab, count: u32, work: u64) {
        if let Some([c, w]) = self.0.get(item) {
            c.store(code(vocab) | u64::from(count), Ordering::Relaxed);
            w.store(work.saturating_add(1), Ordering::Relaxed);
        }
    }
}

impl Remember for Chat {
    #[inline]
    fn own(&self, parts: &[Cow<'_, str>], item: Option<usize>) -> Option<usize> {
        match (parts, item) {
            ([Cow::Borrowed(one)], Some(i))
                if self.ctx.items.get(i).is_some_and(|it| it.is_own_text(one)) =>
            {
                Some(i)
            }
            _ => None,
        }
    }

    #[inline]
    fn recall(&self, i: usize, vocab: Vocab) -> (Option<u32>, Option<u64>) {
        (self.counts.get(i, vocab), self.counts.work(i))
    }

    #[inline]
    fn remember(&self, i: usize, vocab: Vocab, count: u32, work: u64) {
        self.counts.put(i, vocab, count, work);
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
    fn a_count_is_remembered_per_vocabulary_and_the_work_for_every_one() {
        let chat = two();
        let known = chat.known();
        assert_eq!(known.recall(1, Vocab::O200k), (None, None));
        known.remember(1, Vocab::O200k, 7, 140);
        assert_eq!(known.recall(1, Vocab::O200k), (Some(7), Some(140)));
        // Another vocabulary has no count yet, but the text's work is the same.
        assert_eq!(known.recall(1, Vocab::Cl100k), (None, Some(140)));
        known.remember(1, Vocab::Cl100k, 8, 140);
        assert_eq!(known.recall(1, Vocab::O200k), (None, Some(140)));
        assert_eq!(known.recall(0, Vocab::Cl100k), (None, None));
        // A work of 0 is remembered as known.
        known.remember(0, Vocab::O200k, 0, 0);
        assert_eq!(known.recall(0, Vocab::O200k), (Some(0), Some(0)));
    }

    #[test]
    fn a_message_is_an_items_own_text_only_by_address() {
        let chat = two();
        let known = chat.known();
        let item = [Cow::Borrowed(chat.ctx.items[1].text.as_str())];
        assert_eq!(known.own(&item, Some(1)), Some(1));
        // Naming another item, none that exists, or none at all is never that item.
        assert_eq!(known.own(&item, Some(0)), None);
        assert_eq!(known.own(&item, Some(9)), None);
        assert_eq!(known.own(&item, None), None);
        // Equal text elsewhere, or the item's text among other parts, is not its own.
        let copy = [Cow::Owned::<str>("two".into())];
        let joined = [item[0].clone(), Cow::Borrowed("!")];
        assert_eq!(known.own(&copy, Some(1)), None);
        assert_eq!(known.own(&joined, Some(1)), None);
    }

    #[test]
    fn splicing_forgets_only_the_replaced_items() {
        let mut counts = ItemCounts::unknown(3);
        for i in 0..3 {
            counts.put(i, Vocab::O200k, i as u32 + 10, 1);
        }
        counts.splice(1, 2, 2);
        let got: Vec<Option<u32>> = (0..4).map(|i| counts.get(i, Vocab::O200k)).collect();
        assert_eq!(got, [Some(10), None, None, Some(12)]);
        let work: Vec<Option<u64>> = (0..4).map(|i| counts.work(i)).collect();
        assert_eq!(work, [Some(1), None, None, Some(1)]);
    }
}
