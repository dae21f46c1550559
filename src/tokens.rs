//! Token counting for the history budget (SPEC §12.5): a [`TokenCounter`] trait, tiktoken's
//! o200k and cl100k vocabularies (cargo feature `tiktoken`, compiled in), SillyTavern's byte
//! estimate and a word counter for readable tests.

#[cfg(feature = "tiktoken")]
mod cache;

/// The words a message's role costs in its token count (SPEC §12.4), by `Role` order.
const ROLE_WORDS: [&str; 3] = ["system", "user", "assistant"];

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// What remembers token counts per chat item between renders: a `Chat`
/// (`chat/memory.rs`), which knows when an item's text changes. Behind a trait so that
/// counting stands below the context it reads.
#[cfg_attr(not(feature = "tiktoken"), allow(dead_code))]
pub(crate) trait Remember {
    /// The item whose own text `parts` are: `item`, as the message says
    /// ([`Message::item`](crate::Message::item)), when its one part is that item's text (by
    /// address), else none.
    fn own(&self, parts: &[Cow<'_, str>], item: Option<usize>) -> Option<usize>;
    /// What is remembered of item `i`: its count under `vocab`, and its counting's work.
    fn recall(&self, i: usize, vocab: Vocab) -> (Option<u32>, Option<u64>);
    /// Remembers item `i`'s count under `vocab` and its counting's work.
    fn remember(&self, i: usize, vocab: Vocab, count: u32, work: u64);
}

/// A render's view of a chat's memory (`None`: a plain context, nothing remembered).
pub(crate) type Known<'c> = &'c dyn Remember;

/// Counts tokens of a text. Implementations must be linear in the text and never panic.
///
/// ```
/// use stpreset::tokens::TokenCounter;
/// struct Chars;
/// impl TokenCounter for Chars {
///     fn count(&self, text: &str) -> u32 {
///         text.chars().count() as u32
///     }
/// }
/// assert_eq!(Chars.count("héllo"), 5);
/// ```
pub trait TokenCounter: Send + Sync {
    /// Tokens of `text`, special-token text counted as ordinary text.
    fn count(&self, text: &str) -> u32;
}

/// Which counter a budget uses (context field `tokenizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tokenizer {
    /// `o200k` for the OpenAI models SillyTavern counts with it, else `cl100k`.
    #[default]
    Auto,
    /// tiktoken `o200k_base`.
    O200k,
    /// tiktoken `cl100k_base`.
    Cl100k,
    /// SillyTavern's estimate: `ceil(utf8 bytes / 3.35)`.
    Approx,
    /// Runs of non-whitespace characters (tests, readable vectors).
    Words,
}

impl Tokenizer {
    /// Loads the vocabulary now rather than at the first render that counts with it: about
    /// 0.3–0.4 s and 35 MB per vocabulary, once per process. `auto` loads both `o200k` and
    /// `cl100k` (the model decides per render); `approx` and `words` load nothing, nor does
    /// anything without the `tiktoken` feature. Call it at start-up, or on a thread of its own.
    ///
    /// ```
    /// stpreset::tokens::Tokenizer::Words.preload(); // nothing to load
    /// ```
    pub fn preload(self) {
        let vocabs: &[Vocab] = match self {
            Tokenizer::Auto => &[Vocab::O200k, Vocab::Cl100k],
            Tokenizer::O200k => &[Vocab::O200k],
            Tokenizer::Cl100k => &[Vocab::Cl100k],
            Tokenizer::Approx | Tokenizer::Words => &[],
        };
        for &vocab in vocabs {
            vocab.load();
        }
    }
}

/// Empties the process-wide token count caches (benchmarks measure a first render with it).
#[doc(hidden)]
pub fn clear_count_caches() {
    #[cfg(feature = "tiktoken")]
    for vocab in [Vocab::O200k, Vocab::Cl100k] {
        cache::CountCache::of(vocab).clear();
    }
}

/// Reads a tokenizer's name as the context file writes it (`auto`, `o200k`, `cl100k`,
/// `approx`, `words`); the error says what is expected.
///
/// ```
/// assert_eq!("o200k".parse::<stpreset::tokens::Tokenizer>(), Ok(stpreset::tokens::Tokenizer::O200k));
/// assert!("gpt2".parse::<stpreset::tokens::Tokenizer>().unwrap_err().contains("expected auto"));
/// ```
impl std::str::FromStr for Tokenizer {
    type Err = String;
    fn from_str(name: &str) -> Result<Tokenizer, String> {
        Ok(match name {
            "auto" => Tokenizer::Auto,
            "o200k" => Tokenizer::O200k,
            "cl100k" => Tokenizer::Cl100k,
            "approx" => Tokenizer::Approx,
            "words" => Tokenizer::Words,
            _ => {
                return Err(format!(
                    "unknown tokenizer {name:?}: expected auto, o200k, cl100k, approx or words"
                ));
            }
        })
    }
}

/// The counter a render uses: a built-in one (default `auto`), or the host's.
#[derive(Clone)]
pub enum Counter {
    /// A built-in tokenizer.
    Builtin(Tokenizer),
    /// The host's own counter.
    Custom(Arc<dyn TokenCounter>),
}

impl Default for Counter {
    fn default() -> Self {
        Counter::Builtin(Tokenizer::Auto)
    }
}

impl fmt::Debug for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Counter::Builtin(t) => write!(f, "Builtin({t:?})"),
            Counter::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// A vocabulary of the `tiktoken` feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vocab {
    O200k,
    Cl100k,
}

impl Vocab {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Vocab::O200k => "o200k",
            Vocab::Cl100k => "cl100k",
        }
    }

    /// The vocabulary, loaded on first use (once per process).
    #[cfg(feature = "tiktoken")]
    fn load(self) -> &'static tiktoken_rs::CoreBPE {
        match self {
            Vocab::O200k => tiktoken_rs::o200k_base_singleton(),
            Vocab::Cl100k => tiktoken_rs::cl100k_base_singleton(),
        }
    }

    /// Nothing to load without the `tiktoken` feature.
    #[cfg(not(feature = "tiktoken"))]
    fn load(self) {}

    /// SillyTavern's choice for `auto`: its list of o200k models (case-sensitive), else cl100k.
    fn for_model(model: &str) -> Vocab {
        const O200K: [&str; 10] = [
            "o1-preview",
            "o1-mini",
            "o3-mini",
            "gpt-5",
            "o3",
            "o4-mini",
            "gpt-4o",
            "chatgpt-4o-latest",
            "gpt-4.1",
            "gpt-4.5",
        ];
        // Every render resolves its model: ten substring searches cost about as much as
        // placing a small preset's nodes. The last answer is kept per thread (a bot renders
        // one model turn after turn); one entry of at most 256 bytes, so nothing grows.
        thread_local! {
            static LAST: std::cell::RefCell<(String, Option<Vocab>)> =
                const { std::cell::RefCell::new((String::new(), None)) };
        }
        let search = || {
            if model == "o1" || O200K.iter().any(|m| model.contains(m)) {
                Vocab::O200k
            } else {
                Vocab::Cl100k
            }
        };
        if model.len() > 256 {
            return search();
        }
        LAST.with(|last| {
            let Ok(mut last) = last.try_borrow_mut() else {
                return search();
            };
            match &*last {
                (m, Some(vocab)) if m == model => *vocab,
                _ => {
                    let vocab = search();
                    last.0.clear();
                    last.0.push_str(model);
                    last.1 = Some(vocab);
                    vocab
                }
            }
        })
    }
}

/// A resolved counter, and the vocabulary it stands in for when that one is not built in.
#[derive(Clone)]
pub(crate) struct Resolved {
    pub counter: Arc<dyn TokenCounter>,
    pub approximating: Option<Vocab>,
    /// The process-wide count cache of a built-in tiktoken vocabulary. The estimates are
    /// cheaper than a lookup, and a host's counter may change its answers.
    #[cfg(feature = "tiktoken")]
    cache: Option<(Vocab, &'static cache::CountCache)>,
}

/// A resolved counter as a [`TokenCounter`] that counts through the process-wide count cache
/// when the vocabulary has one (World Info's budget: a turn counts the same entries again),
/// paid as [`Resolved::count_parts`] pays.
pub(crate) struct Cached(pub Resolved);

impl TokenCounter for Cached {
    fn count(&self, text: &str) -> u32 {
        self.0.count_parts(&[Cow::Borrowed(text)])
    }
}

impl Resolved {
    /// Whether a text's count is at most its length in bytes, and costly enough that a
    /// budget walks with that bound first: tiktoken's tokens are each at least one byte (and
    /// the pre-split of SPEC §12.5 only splits). A host's counter promises no such bound.
    pub fn bounded_by_bytes(&self) -> bool {
        #[cfg(feature = "tiktoken")]
        return self.cache.is_some();
        #[cfg(not(feature = "tiktoken"))]
        false
    }

    /// Whether the count cache holds the text of `parts` (tests of what a walk counted).
    #[cfg(all(test, feature = "tiktoken"))]
    pub fn cached(&self, parts: &[Cow<'_, str>]) -> bool {
        self.cache.is_some_and(|(_, c)| c.contains(parts))
    }

    /// Tokens of the concatenation of `parts` (counted as one string).
    pub fn count_parts(&self, parts: &[Cow<'_, str>]) -> u32 {
        #[cfg(feature = "tiktoken")]
        if let Some((vocab, cache)) = self.cache {
            return cache
                .count_paid(parts, &Tiktoken(vocab), || token_work(parts), pay)
                .unwrap_or_else(|| byte_len(parts));
        }
        match parts {
            [one] => self.counter.count(one),
            _ => self.counter.count(&parts.concat()),
        }
    }

    /// The counts of the role words `system`, `user`, `assistant` (SPEC §12.4's per-message
    /// cost), counted once per built-in vocabulary.
    pub fn roles(&self) -> [u32; 3] {
        #[cfg(feature = "tiktoken")]
        if let Some((vocab, cache)) = self.cache {
            // Cached for the process: counted unmetered (three words).
            return cache.roles(&Tiktoken(vocab));
        }
        ROLE_WORDS.map(|w| self.counter.count(w))
    }

    /// [`count_parts`](Self::count_parts), remembered per chat item when `known` is given
    /// (`item`: the item the message says it is, [`Message::item`](crate::Message::item))
    /// (a built-in vocabulary only: the estimates are cheaper than remembering, and a host's
    /// counter may change its answers).
    #[inline]
    pub fn count_known(
        &self,
        parts: &[Cow<'_, str>],
        item: Option<usize>,
        known: Option<Known<'_>>,
    ) -> u32 {
        #[cfg(feature = "tiktoken")]
        if let (Some(known), Some((vocab, cache))) = (known, self.cache)
            && let Some(i) = known.own(parts, item)
        {
            // Paid before a remembered count is used, so it costs what a counted one does
            // (the same inputs spend the same work), and never remembered when unpaid. The
            // work is remembered too: an item is weighed once, not every turn.
            let (count, work) = known.recall(i, vocab);
            let weight = work.unwrap_or_else(|| token_work(parts));
            if !pay(weight) {
                return byte_len(parts);
            }
            if let (Some(count), Some(_)) = (count, work) {
                // A repeated turn: nothing new to remember (no stores to a shared chat).
                return count;
            }
            let count = count.unwrap_or_else(|| {
                let paid = |_| true;
                cache
                    .count_paid(parts, &Tiktoken(vocab), || weight, paid)
                    .unwrap_or_default()
            });
            known.remember(i, vocab, count, weight);
            return count;
        }
        #[cfg(not(feature = "tiktoken"))]
        let _ = item;
        #[cfg(not(feature = "tiktoken"))]
        let _ = known;
        self.count_parts(parts)
    }
}

impl Counter {
    /// The counter itself, for `model` (which `auto` needs): what World Info's budget counts
    /// with ([`activate`](crate::activate)).
    ///
    /// ```
    /// let words = stpreset::tokens::Counter::Builtin(stpreset::tokens::Tokenizer::Words).for_model("");
    /// assert_eq!(words.count("two words"), 2);
    /// ```
    pub fn for_model(&self, model: &str) -> Arc<dyn TokenCounter> {
        self.resolve(model).counter
    }

    /// The counter for `model`.
    pub(crate) fn resolve(&self, model: &str) -> Resolved {
        let tokenizer = match self {
            Counter::Custom(c) => return uncached(c.clone()),
            Counter::Builtin(t) => *t,
        };
        let vocab = match tokenizer {
            Tokenizer::Approx => return builtin(Approx),
            Tokenizer::Words => return builtin(Words),
            Tokenizer::Auto => Vocab::for_model(model),
            Tokenizer::O200k => Vocab::O200k,
            Tokenizer::Cl100k => Vocab::Cl100k,
        };
        vocab_counter(vocab)
    }
}

fn builtin(c: impl TokenCounter + 'static) -> Resolved {
    uncached(Arc::new(c))
}

fn uncached(counter: Arc<dyn TokenCounter>) -> Resolved {
    Resolved {
        counter,
        approximating: None,
        #[cfg(feature = "tiktoken")]
        cache: None,
    }
}

#[cfg(feature = "tiktoken")]
fn vocab_counter(vocab: Vocab) -> Resolved {
    // One counter per vocabulary for the process, not one allocated per render.
    static COUNTERS: [std::sync::OnceLock<Arc<dyn TokenCounter>>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    let slot = match vocab {
        Vocab::O200k => &COUNTERS[0],
        Vocab::Cl100k => &COUNTERS[1],
    };
    Resolved {
        counter: slot.get_or_init(|| Arc::new(Metered(vocab))).clone(),
        approximating: None,
        cache: Some((vocab, cache::CountCache::of(vocab))),
    }
}

#[cfg(not(feature = "tiktoken"))]
fn vocab_counter(vocab: Vocab) -> Resolved {
    Resolved {
        counter: Arc::new(Approx),
        approximating: Some(vocab),
    }
}

/// SillyTavern's `guesstimate`.
struct Approx;

impl TokenCounter for Approx {
    fn count(&self, text: &str) -> u32 {
        (text.len() as f64 / 3.35).ceil() as u32
    }
}

/// Maximal runs of non-whitespace (Unicode `White_Space`).
struct Words;

impl TokenCounter for Words {
    fn count(&self, text: &str) -> u32 {
        text.split_whitespace().count() as u32
    }
}

/// Longest run (in chars) tiktoken sees in one piece (SPEC §12.5).
#[cfg_attr(not(feature = "tiktoken"), allow(dead_code))]
const MAX_RUN: usize = 65_536;

/// Texts at least this long are counted in chunks on a cache miss ([`line_cuts`]).
#[cfg(feature = "tiktoken")]
const CHUNKED: usize = 1024;

/// Fewest bytes of a chunk: each costs a lookup, and a cache entry of its own.
#[cfg(feature = "tiktoken")]
const CHUNK_MIN: usize = 256;

/// Where `text` can be cut so that o200k's and cl100k's counts of the pieces add up to the
/// count of the whole: after a run of white space that ends in a line break (`\n` or `\r`),
/// before a character that is neither white space nor `/`; at least `min` bytes apart.
///
/// Both vocabularies' pre-tokenizers are leftmost-first regular expressions without
/// look-behind, and every piece that reaches such a line break ends at the end of its white
/// space run: `\s*[\r\n]+` comes before `\s+(?!\S)` and takes the whole run up to its last
/// line break, and `[^\s\p{L}\p{N}]+[\r\n]*` (o200k: `[\r\n/]*`) can go on past it only
/// into more line breaks (or a `/`). So the text's pieces are the pieces of the part before
/// the cut followed by those of the part after it, and BPE counts each piece alone; the long
/// runs of SPEC §12.5 do not cross a cut (the run changes there). A history item with lore
/// merged into it (`item\n[System: …]`) is a new text every turn: counted in chunks, only
/// its new lines are counted again. The property test checks the sum against the whole.
#[cfg(feature = "tiktoken")]
fn line_cuts(text: &str, min: usize) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut last = 0;
    // The end of the white space run last read: its other line breaks are not read again
    // (a million line breaks before a `/` would otherwise be read a million times each).
    let mut read_to = 0;
    for i in memchr::memchr2_iter(b'\n', b'\r', text.as_bytes()) {
        if i < last + min || i < read_to {
            continue;
        }
        // The end of the white space run the line break is in, and its last character.
        let mut end = i + 1;
        let mut last_ws = text.as_bytes()[i] as char;
        for c in text[i + 1..].chars() {
            if !c.is_whitespace() {
                break;
            }
            end += c.len_utf8();
            last_ws = c;
        }
        read_to = end;
        let next = text[end..].chars().next();
        if matches!(last_ws, '\n' | '\r') && next.is_some_and(|c| c != '/') && end - last >= min {
            cuts.push(end);
            last = end;
        }
    }
    cuts
}

/// What counting `parts` would cost is charged to the render's work budget (`crate::work`,
/// issue 38): `None` when it was paid, else the texts' byte length to use as the count. A
/// tiktoken token is at least a byte, so a render whose budget ran out overestimates its
/// prompt (and keeps less history) but never overfills the context; the estimate is never
/// cached or remembered.
#[cfg(feature = "tiktoken")]
fn unpaid(parts: &[Cow<'_, str>]) -> Option<u32> {
    (!pay(token_work(parts))).then(|| byte_len(parts))
}

/// Charges `work` units of counting to the render's work budget; `false` when it ran out.
#[cfg(feature = "tiktoken")]
fn pay(work: u64) -> bool {
    crate::work::charge(crate::work::Stage::Tokens, work)
}

/// The texts' byte length, the count that stands in for an unpaid one (see [`unpaid`]).
#[cfg(feature = "tiktoken")]
fn byte_len(parts: &[Cow<'_, str>]) -> u32 {
    let bytes: usize = parts.iter().map(|p| p.len()).sum();
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

/// Work units of counting a text (about a nanosecond each), measured per shape on this
/// machine kind: tiktoken's BPE costs 17 ns a byte of prose, 30–60 of digits, punctuation,
/// CJK, base64 or emoji, and 150 of one long run of a letter, whose merges are many. A byte
/// in a run of more than 64 bytes without ASCII whitespace is charged as the dearest shape,
/// every other byte as 20. The parts are one text: a run goes on across them.
///
/// Weighed every time a text is counted, cached or not (the same inputs spend the same
/// work), so it reads 64 bytes at a time: a block's whitespace as one bitmask (a loop the
/// compiler vectorises), from which only the runs that cross a block boundary are followed;
/// a run that starts and ends inside one block is shorter than 64 and costs the flat rate.
/// Byte by byte, this was 40% of a repeated SillyTavern-layout turn (`token_work_bytewise`,
/// the test oracle, is the same sum).
#[cfg(feature = "tiktoken")]
fn token_work(parts: &[Cow<'_, str>]) -> u64 {
    const SHORT: u64 = 20;
    const LONG: u64 = 160;
    const RUN: u64 = 64;
    let (mut len, mut long, mut run) = (0u64, 0u64, 0u64);
    let mut settle = |run: u64| {
        if run > RUN {
            long += run;
        }
    };
    for part in parts {
        let bytes = part.as_bytes();
        len += bytes.len() as u64;
        for block in bytes.chunks(64) {
            let mut mask = 0u64;
            for (i, b) in block.iter().enumerate() {
                mask |= u64::from(b.is_ascii_whitespace()) << i;
            }
            let n = block.len() as u64;
            if mask == 0 {
                run += n;
                continue;
            }
            settle(run + u64::from(mask.trailing_zeros()));
            run = n - 1 - u64::from(63 - mask.leading_zeros());
        }
    }
    settle(run);
    len * SHORT + long * (LONG - SHORT)
}

/// [`Tiktoken`] paid from the render's work budget, for the counters that count without the
/// cache (a host's `for_model`).
#[cfg(feature = "tiktoken")]
struct Metered(Vocab);

#[cfg(feature = "tiktoken")]
impl TokenCounter for Metered {
    fn count(&self, text: &str) -> u32 {
        match unpaid(&[Cow::Borrowed(text)]) {
            Some(bytes) => bytes,
            None => Tiktoken(self.0).count(text),
        }
    }
}

/// tiktoken, after the pre-split of SPEC §12.5: runs of whitespace and of non-whitespace
/// longer than 65,536 characters are cut after every 65,536th character. tiktoken-rs panics
/// on a whitespace run of about a million characters (its regex backtracking limit) and its
/// BPE is superlinear in one piece's length, so no piece may be longer.
#[cfg(feature = "tiktoken")]
struct Tiktoken(Vocab);

#[cfg(feature = "tiktoken")]
impl TokenCounter for Tiktoken {
    fn count(&self, text: &str) -> u32 {
        let bpe = self.0.load();
        let mut total = 0u32;
        for piece in pieces(text) {
            total = total.saturating_add(bpe.encode_ordinary(piece).len() as u32);
        }
        total
    }
}

/// `text` cut inside runs longer than [`MAX_RUN`] characters; otherwise `text` whole.
#[cfg_attr(not(feature = "tiktoken"), allow(dead_code))]
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut cuts = Vec::new();
    let mut run_ws = None;
    let mut run_len = 0usize;
    for (at, c) in text.char_indices() {
        let ws = c.is_whitespace();
        if run_ws != Some(ws) {
            run_ws = Some(ws);
            run_len = 0;
        }
        // Cut after every 65,536th character of a run, but never at the run's end: the cut
        // goes before the next character of the same run.
        if run_len > 0 && run_len.is_multiple_of(MAX_RUN) {
            cuts.push(at);
        }
        run_len += 1;
    }
    let mut start = 0;
    cuts.push(text.len());
    cuts.into_iter().map(move |end| {
        let piece = &text[start..end];
        start = end;
        piece
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts of the characters the pre-tokenizers treat apart: letters in both cases and
    /// scripts, digits, marks, apostrophes, slashes, brackets, white space of every kind.
    #[cfg(feature = "tiktoken")]
    fn tricky_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let atoms = prop::sample::select(vec![
            "a", "Bc", "word", "É", "日本", "7", "123", " ", "  ", "\n", "\r", "\t", "\r\n", "/",
            "'s", "'", "[", "]", ".", ",", "😀", "\u{301}", "\u{a0}", "\u{2028}", "\u{3000}",
            "\n/", " \n", "\n\n", "-", "_",
        ]);
        prop::collection::vec(atoms, 0..60).prop_map(|v| v.concat())
    }

    #[cfg(feature = "tiktoken")]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// Cut where `line_cuts` says, o200k's and cl100k's counts of the pieces add up to
        /// the count of the whole text.
        #[test]
        fn counts_add_up_across_line_cuts(text in tricky_text()) {
            for vocab in [Vocab::O200k, Vocab::Cl100k] {
                let counter = Tiktoken(vocab);
                let cuts = line_cuts(&text, 1);
                let mut start = 0;
                let mut sum = 0;
                for end in cuts.iter().copied().chain([text.len()]) {
                    sum += counter.count(&text[start..end]);
                    start = end;
                }
                proptest::prop_assert_eq!(sum, counter.count(&text), "{:?} cut at {:?}", text, cuts);
            }
        }
    }

    /// Line breaks in one long white space run are read once: linear, whatever the run.
    #[cfg(feature = "tiktoken")]
    #[test]
    fn line_cuts_read_a_run_of_line_breaks_once() {
        let text = format!("x{}/", "\n".repeat(2_000_000));
        assert!(line_cuts(&text, 1).is_empty());
        let text = format!("x{}y", " \n".repeat(1_000_000));
        assert_eq!(line_cuts(&text, 1), [text.len() - 1]);
    }

    /// A long text with lore merged in is counted in chunks: the same count as a whole, and
    /// the next turn's text with a new first line counts only what changed.
    #[cfg(feature = "tiktoken")]
    #[test]
    fn a_long_text_is_counted_in_chunks() {
        let lore: String = (0..40)
            .map(|i| format!("Entry {i}: the road runs past the old mill and the ford.\n"))
            .collect();
        let text = format!("Alice: hello there.\n[System: {lore}]");
        assert!(text.len() >= CHUNKED);
        let cuts = line_cuts(&text, CHUNK_MIN);
        assert!(cuts.len() >= 3, "{cuts:?}");
        assert!(cuts.windows(2).all(|w| w[1] - w[0] >= CHUNK_MIN));
        let cache = cache::CountCache::of(Vocab::O200k);
        let o200k = Tiktoken(Vocab::O200k);
        let whole = o200k.count(&text);
        let parts = [
            Cow::Borrowed("Alice: hello there."),
            Cow::Owned(format!("\n[System: {lore}]")),
        ];
        assert_eq!(cache.count(&parts, &o200k), whole);
        // The last chunk is remembered alone.
        let last = &text[*cuts.last().unwrap()..];
        assert!(cache.contains(&[Cow::Borrowed(last)]));
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn counting_work_follows_the_texts_shape() {
        let work = |t: &str| token_work(&[Cow::Borrowed(t)]);
        assert_eq!(work("two words"), 9 * 20);
        assert_eq!(work(&"a".repeat(64)), 64 * 20);
        assert_eq!(work(&"a".repeat(65)), 65 * 160);
        assert_eq!(work(&format!("{} x", "a".repeat(65))), 65 * 160 + 2 * 20);
        // Inside a render the work is charged; out of budget, the byte length stands in and
        // nothing is cached.
        let limits = crate::limits::Limits {
            render_work: 1000,
            ..crate::limits::Limits::default()
        };
        let o200k = Counter::Builtin(Tokenizer::O200k).resolve("");
        let long = "b".repeat(100);
        let (n, note) = crate::work::render(&limits, || o200k.counter.count(&long));
        assert_eq!(n, 100);
        assert!(note.is_some_and(|d| d.message.contains("token counting")));
        assert!(
            o200k.counter.count(&long) < 100,
            "outside a render it counts"
        );
    }

    /// A text the cache already holds is charged as if it were counted afresh: a render
    /// whose budget cannot pay for it gets the byte length, cached or not.
    #[cfg(feature = "tiktoken")]
    #[test]
    fn a_cached_count_is_charged_as_a_fresh_one() {
        let o200k = Counter::Builtin(Tokenizer::O200k).resolve("");
        let long = [Cow::Owned("c".repeat(100))];
        let counted = o200k.count_parts(&long);
        assert!(counted < 100, "outside a render it counts: {counted}");
        let limits = crate::limits::Limits {
            render_work: 1000,
            ..crate::limits::Limits::default()
        };
        let (n, note) = crate::work::render(&limits, || o200k.count_parts(&long));
        assert_eq!(n, 100);
        assert!(note.is_some_and(|d| d.message.contains("token counting")));
        // With room, the cached count again.
        let (n, _) = crate::work::render(&crate::limits::Limits::default(), || {
            o200k.count_parts(&long)
        });
        assert_eq!(n, counted);
    }

    /// The byte-by-byte weighing `token_work` replaced: the same sum for any text and any
    /// split into parts.
    #[cfg(feature = "tiktoken")]
    fn token_work_bytewise(bytes: impl Iterator<Item = u8>) -> u64 {
        let (mut work, mut run) = (0u64, 0u64);
        let settle = |run: u64| if run > 64 { run * 160 } else { run * 20 };
        for b in bytes {
            if b.is_ascii_whitespace() {
                work += settle(run) + 20;
                run = 0;
            } else {
                run += 1;
            }
        }
        work + settle(run)
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn block_wise_work_is_the_byte_wise_sum() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
        let whitespace = [b' ', b'\n', b'\t', b'\r', 0x0c];
        for _ in 0..3000 {
            let len = rng.random_range(0..400usize);
            // Long runs are likely: whitespace is drawn rarely in some texts.
            let ws_odds = rng.random_range(1..200u32);
            let bytes: Vec<u8> = (0..len)
                .map(|_| match rng.random_range(0..ws_odds) {
                    0 => whitespace[rng.random_range(0..whitespace.len())],
                    _ => b'a',
                })
                .collect();
            let text = String::from_utf8(bytes).unwrap();
            let cut = rng.random_range(0..=text.len());
            let parts = [Cow::Borrowed(&text[..cut]), Cow::Borrowed(&text[cut..])];
            let want = token_work_bytewise(text.bytes());
            assert_eq!(token_work(&[Cow::Borrowed(&text)]), want, "{text:?}");
            assert_eq!(token_work(&parts), want, "{text:?} cut at {cut}");
        }
    }

    fn count(t: Tokenizer, model: &str, text: &str) -> u32 {
        Counter::Builtin(t).resolve(model).counter.count(text)
    }

    #[test]
    fn estimates_and_words() {
        assert_eq!(count(Tokenizer::Approx, "", "system"), 2);
        assert_eq!(count(Tokenizer::Approx, "", "assistant"), 3);
        assert_eq!(count(Tokenizer::Approx, "", ""), 0);
        assert_eq!(count(Tokenizer::Words, "", " a  b\u{85}c\u{feff}d "), 3);
    }

    #[test]
    fn auto_follows_sillytavern_model_list() {
        assert_eq!(Vocab::for_model("gpt-4o-mini"), Vocab::O200k);
        assert_eq!(Vocab::for_model("o1"), Vocab::O200k);
        assert_eq!(Vocab::for_model("GPT-4o"), Vocab::Cl100k);
        assert_eq!(Vocab::for_model("claude-sonnet-4-6"), Vocab::Cl100k);
    }

    #[test]
    fn the_remembered_model_answers_only_for_itself() {
        // Alternating models, each asked twice: the per-thread memo never answers for
        // another model, nor for a longer one it does not keep.
        let long = format!("{}gpt-4o", "x".repeat(300));
        for _ in 0..2 {
            for (model, vocab) in [
                ("gpt-4o", Vocab::O200k),
                ("gpt-4o", Vocab::O200k),
                ("gpt-4", Vocab::Cl100k),
                ("gpt-4", Vocab::Cl100k),
                ("", Vocab::Cl100k),
                ("o1", Vocab::O200k),
                (long.as_str(), Vocab::O200k),
                (&long[..300], Vocab::Cl100k),
            ] {
                assert_eq!(Vocab::for_model(model), vocab, "{model}");
            }
        }
    }

    #[test]
    fn long_runs_are_cut_every_65536_chars_never_at_the_end() {
        let run = "a".repeat(MAX_RUN);
        assert_eq!(pieces(&run).count(), 1);
        let run = "é".repeat(MAX_RUN + 1) + " x";
        let lens: Vec<usize> = pieces(&run).map(|p| p.chars().count()).collect();
        assert_eq!(lens, [MAX_RUN, 3]);
        let text = format!("x{}y", " ".repeat(2 * MAX_RUN + 5));
        let lens: Vec<usize> = pieces(&text).map(|p| p.chars().count()).collect();
        assert_eq!(lens, [1 + MAX_RUN, MAX_RUN, 6]);
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn tiktoken_counts_match_the_spec() {
        let o = |t: &str| count(Tokenizer::O200k, "", t);
        let c = |t: &str| count(Tokenizer::Cl100k, "", t);
        assert_eq!((o("Hello world"), c("Hello world")), (2, 2));
        assert_eq!((o("こんにちは世界"), c("こんにちは世界")), (2, 4));
        assert_eq!(o("<|endoftext|>"), 7);
        assert_eq!(c(&"Hello".repeat(14_000)), 14_001);
    }
}
