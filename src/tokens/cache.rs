//! A process-wide cache of token counts, one per built-in vocabulary (o200k, cl100k). A bot
//! renders the same history every turn with one new message; tiktoken spends microseconds per
//! message (tens of milliseconds per render of a large preset with 200 messages, issue 18),
//! a lookup tens of nanoseconds.
//!
//! Keyed by the whole flattened text, never by part (SPEC §12.4): its XXH3-128 under a secret
//! drawn once per process, and its length in bytes. XXH3 is not a cryptographic hash, but
//! nobody outside the process knows the secret, so texts cannot be chosen to collide with each
//! other; a chance collision of 128 bits is far below any hardware error rate. For the same
//! reason crafted keys cannot fill one bucket, so the hash map uses the key's bits as they
//! are (`KeyHasher`): every lookup and insert is O(1) plus one pass over the text.
//!
//! Memory is bounded by two generations of at most [`GENERATION`] entries (48 bytes of key,
//! count and weight each, about 7 MB per vocabulary when both are full): inserts go to the young map; when
//! it is full it becomes the old one and the previous old one is freed; a hit in the old map
//! moves the entry back to the young one, so the texts of every turn's render survive.
//!
//! Hand-written rather than a caching crate: this policy (bounded, O(1), recently used texts
//! stay) is the thirty lines below, while the caching crates bring concurrent eviction
//! machinery, background threads or unsafe linked lists that this one use does not need.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use crate::keyhash::KeyHasher;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use twox_hash::XxHash3_128;
use twox_hash::xxhash3_128::SECRET_MINIMUM_LENGTH;

use super::{TokenCounter, Vocab};

/// Entries per generation.
const GENERATION: usize = 1 << 16;

/// Bytes of an XXH3 secret (the size of its default secret).
const SECRET: usize = 192;
const _: () = assert!(SECRET >= SECRET_MINIMUM_LENGTH);

/// Inputs up to this length XXH3 hashes with its short-input paths.
const SHORT: usize = 240;

/// Counts of one vocabulary.
pub(crate) struct CountCache {
    secret: [u8; SECRET],
    maps: Mutex<Generations>,
    /// The role words' counts (`system`, `user`, `assistant`), which every budgeted render
    /// asks for: counted once, not looked up three times a render.
    roles: OnceLock<[u32; 3]>,
}

#[derive(Default)]
struct Generations {
    young: HashMap<Key, Entry, KeyHasher>,
    old: HashMap<Key, Entry, KeyHasher>,
}

/// A text's count, and the work counting it is charged (`tokens::token_work`): kept together
/// so that a repeated text is neither counted nor weighed again, and still charged the same.
#[derive(Debug, Clone, Copy)]
struct Entry {
    count: u32,
    work: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    hash: u128,
    len: usize,
}

impl Generations {
    fn put(&mut self, key: Key, entry: Entry) {
        self.young.insert(key, entry);
        if self.young.len() >= GENERATION {
            self.old = std::mem::take(&mut self.young);
        }
    }
}

impl CountCache {
    fn new() -> CountCache {
        // The secret comes from std's randomly keyed SipHash (`RandomState`, seeded by the
        // operating system): 24 outputs of one random key, without a dependency for OS
        // randomness.
        let state = RandomState::new();
        let mut secret = [0u8; SECRET];
        for (i, chunk) in secret.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&state.hash_one(i).to_le_bytes());
        }
        CountCache {
            secret,
            maps: Mutex::default(),
            roles: OnceLock::new(),
        }
    }

    /// The cache of `vocab`, created on first use.
    pub fn of(vocab: Vocab) -> &'static CountCache {
        static O200K: OnceLock<CountCache> = OnceLock::new();
        static CL100K: OnceLock<CountCache> = OnceLock::new();
        match vocab {
            Vocab::O200k => O200K.get_or_init(CountCache::new),
            Vocab::Cl100k => CL100K.get_or_init(CountCache::new),
        }
    }

    /// `counter`'s count of the concatenation of `parts` once `pay` accepts the work of
    /// counting it; `None` when `pay` refuses (nothing is counted or cached). The work is
    /// `weigh()`'s the first time and remembered with the count, so a repeated text is paid
    /// the same without being weighed again. The lock is never held while counting.
    pub fn count_paid(
        &self,
        parts: &[Cow<'_, str>],
        counter: &dyn TokenCounter,
        weigh: impl FnOnce() -> u64,
        pay: impl FnOnce(u64) -> bool,
    ) -> Option<u32> {
        let key = self.key(parts);
        if let Some(entry) = self.get(key) {
            return pay(entry.work).then_some(entry.count);
        }
        let work = weigh();
        if !pay(work) {
            return None;
        }
        let joined;
        let text: &str = match parts {
            [one] => one,
            _ => {
                joined = parts.concat();
                &joined
            }
        };
        let count = self.count_in_chunks(text, counter);
        self.lock().put(key, Entry { count, work });
        Some(count)
    }

    /// `counter`'s count of `text`, a long one as the sum of its chunks' counts (each through
    /// this cache: `super::line_cuts` says where the sum is the whole's). Chunks are
    /// remembered with their own work, as if counted alone.
    fn count_in_chunks(&self, text: &str, counter: &dyn TokenCounter) -> u32 {
        if text.len() < super::CHUNKED {
            return counter.count(text);
        }
        let cuts = super::line_cuts(text, super::CHUNK_MIN);
        if cuts.is_empty() {
            return counter.count(text);
        }
        let mut start = 0;
        let mut total = 0u32;
        for end in cuts.into_iter().chain([text.len()]) {
            let chunk = [Cow::Borrowed(&text[start..end])];
            start = end;
            let key = self.key(&chunk);
            let count = match self.get(key) {
                Some(entry) => entry.count,
                None => {
                    let count = counter.count(&chunk[0]);
                    let work = super::token_work(&chunk);
                    self.lock().put(key, Entry { count, work });
                    count
                }
            };
            total = total.saturating_add(count);
        }
        total
    }

    /// [`count_paid`](Self::count_paid) unpaid and unweighed (the tests of the cache itself).
    #[cfg(test)]
    pub fn count(&self, parts: &[Cow<'_, str>], counter: &dyn TokenCounter) -> u32 {
        self.count_paid(parts, counter, || 0, |_| true)
            .unwrap_or_default()
    }

    /// The key of the concatenated text. A long text in parts (a history item with merged
    /// injections: tens of kilobytes every turn) is hashed part by part; a short one is joined
    /// first, because twox-hash's streaming hasher keys inputs of at most 240 bytes by its
    /// seed, not its secret (beyond that, seed 0 and the secret give the one-shot hash).
    fn key(&self, parts: &[Cow<'_, str>]) -> Key {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let hash = match parts {
            [one] => XxHash3_128::oneshot_with_secret(&self.secret, one.as_bytes()).ok(),
            _ if len <= SHORT => {
                XxHash3_128::oneshot_with_secret(&self.secret, parts.concat().as_bytes()).ok()
            }
            _ => XxHash3_128::with_seed_and_secret(0, self.secret)
                .ok()
                .map(|mut h| {
                    for p in parts {
                        h.write(p.as_bytes());
                    }
                    h.finish_128()
                }),
        };
        // Never refused: the secret is long enough (asserted where `SECRET` is declared).
        Key {
            hash: hash.unwrap_or_default(),
            len,
        }
    }

    fn get(&self, key: Key) -> Option<Entry> {
        let mut maps = self.lock();
        if let Some(&entry) = maps.young.get(&key) {
            return Some(entry);
        }
        let entry = maps.old.remove(&key)?;
        maps.put(key, entry);
        Some(entry)
    }

    /// The maps stay consistent whatever panicked while they were locked (every change is one
    /// insert or one swap), so a poisoned lock is used as it is.
    fn lock(&self) -> MutexGuard<'_, Generations> {
        self.maps.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the text of `parts` has a count here.
    #[cfg(test)]
    pub fn contains(&self, parts: &[Cow<'_, str>]) -> bool {
        let key = self.key(parts);
        let maps = self.lock();
        maps.young.contains_key(&key) || maps.old.contains_key(&key)
    }

    /// The counts of the role words `system`, `user`, `assistant` under `counter` (this
    /// cache's vocabulary).
    pub fn roles(&self, counter: &dyn TokenCounter) -> [u32; 3] {
        *self
            .roles
            .get_or_init(|| super::ROLE_WORDS.map(|w| counter.count(w)))
    }

    /// Forgets every count.
    pub fn clear(&self) {
        *self.lock() = Generations::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Counts bytes, and how often it was asked.
    #[derive(Default)]
    struct Calls(AtomicU32);

    impl TokenCounter for Calls {
        fn count(&self, text: &str) -> u32 {
            self.0.fetch_add(1, Ordering::Relaxed);
            text.len() as u32
        }
    }

    fn parts<'a>(p: &[&'a str]) -> Vec<Cow<'a, str>> {
        p.iter().map(|s| Cow::Borrowed(*s)).collect()
    }

    #[test]
    fn the_key_is_the_whole_text_however_it_is_split() {
        let cache = CountCache::new();
        let long = "xyz".repeat(700);
        let texts = [
            "".to_string(),
            "short".into(),
            "a".repeat(239),
            "c".repeat(240),
            "b".repeat(241),
            long.clone(),
        ];
        for text in &texts {
            let whole = cache.key(&parts(&[text]));
            for at in [0, 1, text.len() / 2, text.len()].map(|at| at.min(text.len())) {
                let (a, b) = text.split_at(at);
                assert_eq!(cache.key(&parts(&[a, b])), whole, "{} at {at}", text.len());
                assert_eq!(cache.key(&parts(&[a, "", b])), whole);
            }
        }
        assert_ne!(cache.key(&parts(&["ab"])), cache.key(&parts(&["ba"])));
        // Another process (another secret) has other keys.
        assert_ne!(
            CountCache::new().key(&parts(&["ab"])),
            cache.key(&parts(&["ab"]))
        );
    }

    #[test]
    fn each_text_is_counted_once_and_parts_share_the_whole_texts_entry() {
        let cache = CountCache::new();
        let calls = Calls::default();
        assert_eq!(cache.count(&parts(&["hello world"]), &calls), 11);
        assert_eq!(cache.count(&parts(&["hello", " world"]), &calls), 11);
        for _ in 0..1000 {
            assert_eq!(cache.count(&parts(&["hello world"]), &calls), 11);
        }
        assert_eq!(calls.0.load(Ordering::Relaxed), 1);
        assert_eq!(cache.count(&parts(&["hello", "world"]), &calls), 10);
        assert_eq!(calls.0.load(Ordering::Relaxed), 2);
        cache.clear();
        cache.count(&parts(&["hello world"]), &calls);
        assert_eq!(calls.0.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn memory_stays_within_two_generations_and_recent_texts_survive() {
        let cache = CountCache::new();
        let calls = Calls::default();
        let keep = "asked every turn";
        for i in 0..(3 * GENERATION + 7) {
            cache.count(&parts(&[&i.to_string()]), &calls);
            if i % 1000 == 0 {
                cache.count(&parts(&[keep]), &calls);
            }
            let maps = cache.lock();
            assert!(maps.young.len() < GENERATION && maps.old.len() <= GENERATION);
        }
        let before = calls.0.load(Ordering::Relaxed);
        cache.count(&parts(&[keep]), &calls);
        assert_eq!(calls.0.load(Ordering::Relaxed), before, "recounted");
        // The oldest texts are gone.
        cache.count(&parts(&["1"]), &calls);
        assert_eq!(calls.0.load(Ordering::Relaxed), before + 1);
    }
}
