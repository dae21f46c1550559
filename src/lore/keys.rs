//! Matching World Info keys against scan segments (SPEC §15.5.4–6, §15.8): plain keys with
//! the case and whole-word rules, regex keys on the §13 engine with its step bound, and the
//! memo that keeps every (key, segment) pair to one evaluation per call.

use std::cell::OnceCell;

use crate::limits::Limits;
use crate::pattern::{self, Cost, Pattern};
use crate::work::{Allowance, Stage};

/// One text keys are matched against, with its lowercase and UTF-16 forms made on first use.
#[derive(Debug)]
pub(crate) struct Segment {
    pub text: String,
    lower: OnceCell<String>,
    /// ASCII-lowercased (the regex keys' case-folding prefilters search it).
    ascii: OnceCell<String>,
    units: OnceCell<Vec<u16>>,
}

impl Segment {
    pub fn new(text: String) -> Segment {
        Segment {
            text,
            lower: OnceCell::new(),
            ascii: OnceCell::new(),
            units: OnceCell::new(),
        }
    }

    fn lower(&self) -> &str {
        self.lower.get_or_init(|| self.text.to_lowercase())
    }

    fn ascii(&self) -> &str {
        self.ascii.get_or_init(|| self.text.to_ascii_lowercase())
    }

    fn units(&self) -> &[u16] {
        self.units
            .get_or_init(|| self.text.encode_utf16().collect())
    }
}

/// A key after macro expansion and trimming.
#[derive(Debug)]
pub(crate) enum Key {
    /// Empty or whitespace-only after expansion: never matches (SPEC §15.11.14).
    Empty,
    Plain {
        text: String,
        lower: String,
        /// Whitespace inside: always a substring test.
        spaced: bool,
    },
    Regex {
        pattern: std::sync::Arc<Pattern>,
        /// The `y` flag: a test from the segment's start only.
        sticky: bool,
    },
}

pub(crate) use crate::jstext::{js_space, js_trim, split_ascii_ci};

impl Key {
    /// Reads an expanded key: `/BODY/FLAGS` compiles as a regex when it can (paying from the
    /// call's compile budget, and its compile work from the call's regex total), anything
    /// else is plain. `Err` when the regex total cannot pay: the key never matches.
    pub fn new(expanded: &str, budget: &mut Cost, steps: &mut Steps) -> Result<Key, Spent> {
        let text = js_trim(expanded);
        if text.is_empty() {
            return Ok(Key::Empty);
        }
        if let Some((body, flags)) = regex_parts(text) {
            let bare = flags.replace(['g', 'y'], "");
            let cost = pattern::cost_parts(&body, &bare);
            steps.charge_compile(cost.work())?;
            if let Ok(p) = compiled(&body, &bare, &cost, budget) {
                return Ok(Key::Regex {
                    pattern: p,
                    sticky: flags.contains('y'),
                });
            }
        }
        Ok(Key::Plain {
            text: text.to_string(),
            lower: text.to_lowercase(),
            spaced: text.chars().any(js_space),
        })
    }
}

/// Regex keys compiled by recent calls, by flags and body: a bot's books are the same turn
/// after turn, and compiling their regex keys (the prefilters' automata included) was a fifth
/// of a turn with a 400-entry book. A hit pays the call's compile budget as a compile does,
/// so the same inputs stop in the same place. Bounded as one preset's patterns are (their
/// total [`Cost::TOTAL`]; a property escape's table is the largest part of a compiled
/// pattern) and in number: past either the cache starts over.
struct RegexKeys {
    map: std::collections::HashMap<String, std::sync::Arc<Pattern>>,
    room: Cost,
}

static REGEX_KEYS: std::sync::Mutex<Option<RegexKeys>> = std::sync::Mutex::new(None);
/// Entries kept: a compiled key with its prefilters is a few kilobytes.
const REGEX_KEYS_KEPT: usize = 2048;

/// `pattern::compile_costed` through [`REGEX_KEYS`].
fn compiled(
    body: &str,
    flags: &str,
    cost: &Cost,
    budget: &mut Cost,
) -> Result<std::sync::Arc<Pattern>, String> {
    let name = format!("{flags}/{body}");
    let cache = || REGEX_KEYS.lock().unwrap_or_else(|e| e.into_inner());
    let hit = cache().as_ref().and_then(|c| c.map.get(&name).cloned());
    if let Some(p) = hit {
        // It compiled before, so it passes the one-pattern caps; the call's total is spent.
        return match budget.spend(cost) {
            true => Ok(p),
            false => Err("the patterns together are too large to compile".into()),
        };
    }
    // Compiled outside the lock: a large pattern does not hold up other threads' calls.
    let p = std::sync::Arc::new(pattern::compile_costed(body, flags, cost, budget)?);
    let mut guard = cache();
    let keys = guard.get_or_insert_with(|| RegexKeys {
        map: Default::default(),
        room: Cost::TOTAL,
    });
    if keys.map.len() >= REGEX_KEYS_KEPT || !keys.room.spend(cost) {
        keys.map.clear();
        keys.room = Cost::TOTAL;
        keys.room.spend(cost);
    }
    keys.map.insert(name, p.clone());
    Ok(p)
}

/// SillyTavern's `parseRegexFromString`: `/BODY/FLAGS` with FLAGS from `gimsuy` (each once,
/// as `RegExp` requires), BODY non-empty and without an unescaped `/`; the first `\/`
/// becomes `/`.
fn regex_parts(key: &str) -> Option<(String, &str)> {
    let inner = key.strip_prefix('/')?;
    let slash = inner.rfind('/')?;
    let (body, flags) = (&inner[..slash], &inner[slash + 1..]);
    if body.is_empty() || !flags.bytes().all(|b| b"gimsuy".contains(&b)) {
        return None;
    }
    let mut seen = [false; 128];
    if !flags
        .bytes()
        .all(|b| !std::mem::replace(&mut seen[b as usize], true))
    {
        return None;
    }
    // ST's lazy `^\/([\w\W]+?)\/([gimsuy]*)$` takes the first `/` followed only by flags;
    // an unescaped `/` left in the body refuses the key.
    let b = body.as_bytes();
    if b[0] == b'/' || b.windows(2).any(|w| w[1] == b'/' && w[0] != b'\\') {
        return None;
    }
    Some((body.replacen("\\/", "/", 1), flags))
}

/// Why a test gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spent {
    /// The call's plain or regex total ran out (`LoreLimit`).
    Total,
    /// One regex test went over its own bound (`LoreRegexLimit`).
    Run,
}

/// The step totals of one call (SPEC §15.8).
#[derive(Debug)]
pub(crate) struct Steps {
    plain: Allowance,
    regex: Allowance,
    /// The render's work budget, not a total of the call, stopped it.
    metered: bool,
    run_base: u64,
    run_max: u64,
}

/// What one gate (an entry's checks in one pass) or one key test costs, in the plain total's
/// unit (one byte scanned, about a nanosecond): a gate or a test measured 20–30 ns. Charged so
/// that the passes themselves are bounded (issue 38: 20,000 entries of 256 keys at 128
/// recursion levels tested 655 million keys, 10 s, none of it counted).
pub(crate) const TEST_STEPS: u64 = 32;

impl Steps {
    /// Spends `n` tests from the plain total; `Err` once it has run out.
    pub fn charge_tests(&mut self, n: u64) -> Result<(), Spent> {
        let cost = n.saturating_mul(TEST_STEPS);
        let left = self.plain.left();
        if cost > left {
            self.plain.spend(left);
            self.metered |= self.plain.stopped();
            return Err(Spent::Total);
        }
        self.plain.spend(cost);
        Ok(())
    }

    /// Spends `n` units of compile work (a regex key's [`Cost::work`]) from the regex total;
    /// `Err` once it has run out.
    pub fn charge_compile(&mut self, n: u64) -> Result<(), Spent> {
        let left = self.regex.left();
        self.regex.spend(n.min(left));
        if n > left {
            self.metered |= self.regex.stopped();
            return Err(Spent::Total);
        }
        Ok(())
    }

    /// Whether the render's work budget, not the call's totals, stopped the call (its
    /// `WorkLimit` reports it).
    pub fn metered(&self) -> bool {
        self.metered
    }

    pub fn new(limits: &Limits) -> Steps {
        Steps {
            plain: Allowance::new(Stage::LorePlain, limits.lore_plain_steps),
            regex: Allowance::new(Stage::LoreRegex, limits.lore_regex_steps),
            metered: false,
            run_base: limits.regex_run_steps,
            run_max: limits.regex_run_steps_max,
        }
    }
}

/// Whether a regex key matches `seg` within its run bound and the call's total. Plain keys
/// are found by the call's [`PlainIndex`]; an empty key never matches.
pub(crate) fn test(key: &Key, seg: &Segment, steps: &mut Steps) -> Result<bool, Spent> {
    let Key::Regex { pattern, sticky } = key else {
        return Ok(false);
    };
    let units = seg.units();
    let l = units.len() as u64;
    let own = steps
        .run_base
        .saturating_add(l.saturating_mul(l).saturating_mul(4))
        .min(steps.run_max);
    let left = steps.regex.left();
    let total_bound = own > left;
    let budget = own.min(left);
    // The prefilters' scan of the segment costs a step per unit (SPEC §13.6.2): a test that
    // finds nothing is not free. They skip the positions where no match can start: a
    // case-insensitive key like `/\b(hero|person)s?\b/i` tried at every unit of every
    // segment was 38% of a turn with a 400-entry book.
    let mut left = budget.saturating_sub(l + 1);
    let found = match (budget > l, *sticky) {
        (false, _) => Err(regress::StepLimit),
        (true, true) => pattern.regex.match_at_utf16_bounded(units, 0, &mut left),
        (true, false) => {
            let hay = pattern.haystack_kept(&seg.text, || seg.ascii());
            pattern.find_at(&hay, units, 0, &mut left)
        }
    };
    steps.regex.spend(budget - left);
    match found {
        Ok(m) => Ok(m.is_some()),
        Err(_) if total_bound => {
            steps.metered |= steps.regex.stopped();
            Err(Spent::Total)
        }
        Err(_) => Err(Spent::Run),
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Where a scanned segment sits, for [`PlainIndex::scan`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place {
    /// Message `i` (0 = newest).
    Message(usize),
    /// Card field `i` of the six (persona, description, …).
    Field(usize),
    Inject,
    Recursion,
}

/// Where one plain pattern was found: `[substring, whole word]` each.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hits {
    /// The newest message index with a hit (`usize::MAX`: none); entries see a prefix.
    message: [usize; 2],
    fields: [u8; 2],
    inject: [bool; 2],
    recursion: [bool; 2],
}

impl Default for Hits {
    fn default() -> Self {
        Hits {
            message: [usize::MAX; 2],
            fields: [0; 2],
            inject: [false; 2],
            recursion: [false; 2],
        }
    }
}

impl Hits {
    /// Whether the pattern occurs in a segment an entry sees: messages `0..depth`, the card
    /// fields in `fields` (a bit each), the inject texts, and recursion segments if `recursion`.
    pub fn seen(&self, word: bool, depth: usize, fields: u8, recursion: bool) -> bool {
        let w = word as usize;
        self.message[w] < depth
            || self.fields[w] & fields != 0
            || self.inject[w]
            || (recursion && self.recursion[w])
    }
}

/// The two automata of a set of plain keys, and each automaton pattern's id.
#[derive(Debug)]
struct Automata {
    folded: Option<aho_corasick::AhoCorasick>,
    exact: Option<aho_corasick::AhoCorasick>,
    folded_ids: Vec<usize>,
    exact_ids: Vec<usize>,
}

impl Automata {
    fn build(patterns: &[(String, bool)]) -> Automata {
        let build = |sensitive: bool| {
            let (ids, needles): (Vec<usize>, Vec<&str>) = patterns
                .iter()
                .enumerate()
                .filter(|(_, (_, cs))| *cs == sensitive)
                .map(|(i, (n, _))| (i, n.as_str()))
                .unzip();
            let ac = (!needles.is_empty())
                .then(|| {
                    // Never a DFA: the crate picks one for up to 100 patterns, and its
                    // memory is ~1 KiB per key byte (a hostile review made 5 GB from a 226 KB
                    // card). The contiguous NFA stays a small multiple of the key bytes.
                    aho_corasick::AhoCorasick::builder()
                        .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
                        .match_kind(aho_corasick::MatchKind::Standard)
                        .build(&needles)
                        .ok()
                })
                .flatten();
            (ac, ids)
        };
        let (folded, folded_ids) = build(false);
        let (exact, exact_ids) = build(true);
        Automata {
            folded,
            exact,
            folded_ids,
            exact_ids,
        }
    }
}

/// Automata of recent calls, by their pattern lists: a bot renders the same books turn after
/// turn, and building the automaton is most of a call's cost (1,000 entries: ~2 ms of 3).
/// Bounded by the automata's own memory, not only their count; built outside the lock, so a
/// large build does not hold up other threads' calls.
type Patterns = Vec<(String, bool)>;
static AUTOMATA: std::sync::Mutex<Vec<(Patterns, std::sync::Arc<Automata>)>> =
    std::sync::Mutex::new(Vec::new());
const AUTOMATA_KEPT: usize = 16;
const AUTOMATA_MAX_MEMORY: usize = 32 << 20;

impl Automata {
    /// What a cache entry holds: both automata, their id tables, and the pattern list kept
    /// as its key (counted by `cached_memory`).
    fn memory(&self) -> usize {
        let m = |a: &Option<aho_corasick::AhoCorasick>| a.as_ref().map_or(0, |a| a.memory_usage());
        let ids = (self.folded_ids.len() + self.exact_ids.len()) * std::mem::size_of::<usize>();
        m(&self.folded) + m(&self.exact) + ids
    }
}

/// A cache entry's memory: its automata and the pattern list that keys it.
fn cached_memory(patterns: &Patterns, a: &Automata) -> usize {
    let key: usize = patterns
        .iter()
        .map(|(n, _)| n.len() + std::mem::size_of::<(String, bool)>())
        .sum();
    key + a.memory()
}

fn cache() -> std::sync::MutexGuard<'static, Vec<(Patterns, std::sync::Arc<Automata>)>> {
    // A poisoned lock only means another thread panicked mid-update of a cache: use it.
    AUTOMATA.lock().unwrap_or_else(|e| e.into_inner())
}

fn automata(patterns: &[(String, bool)]) -> std::sync::Arc<Automata> {
    {
        let mut cache = cache();
        if let Some(k) = cache.iter().position(|(p, _)| p == patterns) {
            let hit = cache.remove(k);
            let a = hit.1.clone();
            cache.insert(0, hit);
            return a;
        }
    }
    let a = std::sync::Arc::new(Automata::build(patterns));
    let key = patterns.to_vec();
    if cached_memory(&key, &a) <= AUTOMATA_MAX_MEMORY / 4 {
        let mut cache = cache();
        cache.insert(0, (key, a.clone()));
        cache.truncate(AUTOMATA_KEPT);
        // Oldest first out until the kept entries fit their memory bound.
        while cache
            .iter()
            .map(|(p, a)| cached_memory(p, a))
            .sum::<usize>()
            > AUTOMATA_MAX_MEMORY
        {
            cache.pop();
        }
    }
    a
}

/// Every plain key of a call in two multi-pattern automata (SPEC §15.8 c): lowercased keys
/// over lowercased segments, case-sensitive ones over the text. Each segment is scanned once
/// for all keys, so a recursion chain of n entries costs n scans, not n² tests.
#[derive(Debug)]
pub(crate) struct PlainIndex {
    automata: std::sync::Arc<Automata>,
    pub hits: Vec<Hits>,
    /// Patterns a recursion segment hit for the first time, since the last `take_touched`.
    touched: Vec<usize>,
}

impl PlainIndex {
    /// `patterns[id] = (needle, case_sensitive)`; a case-insensitive needle is lowercased.
    pub fn new(patterns: &[(String, bool)]) -> PlainIndex {
        PlainIndex {
            automata: automata(patterns),
            hits: vec![Hits::default(); patterns.len()],
            touched: Vec::new(),
        }
    }

    /// Records every pattern occurring in `seg`. Costs the segment's bytes plus one step per
    /// occurrence (overlapping occurrences included, as a regex search at every position).
    pub fn scan(&mut self, seg: &Segment, place: Place, steps: &mut Steps) -> Result<(), Spent> {
        // A local count in the occurrence loop; the allowance is settled once per segment.
        let granted = steps.plain.left();
        let mut left = granted;
        let out = self.scan_within(seg, place, &mut left);
        steps.plain.spend(granted - left);
        if out.is_err() {
            steps.metered |= steps.plain.stopped();
        }
        out
    }

    fn scan_within(&mut self, seg: &Segment, place: Place, left: &mut u64) -> Result<(), Spent> {
        let a = &*self.automata;
        for (ac, ids, hay) in [
            (&a.folded, &a.folded_ids, seg.lower()),
            (&a.exact, &a.exact_ids, seg.text.as_str()),
        ] {
            let Some(ac) = ac else { continue };
            let cost = hay.len() as u64 + 1;
            if cost > *left {
                *left = 0;
                return Err(Spent::Total);
            }
            *left -= cost;
            let b = hay.as_bytes();
            for m in ac.find_overlapping_iter(hay) {
                if *left == 0 {
                    return Err(Spent::Total);
                }
                *left -= 1;
                let word = (m.start() == 0 || !is_word(b[m.start() - 1]))
                    && (m.end() == b.len() || !is_word(b[m.end()]));
                let pid = ids[m.pattern().as_usize()];
                let h = &mut self.hits[pid];
                // A first hit of either kind (a whole word may come after a substring).
                if matches!(place, Place::Recursion)
                    && (!h.recursion[0] || (word && !h.recursion[1]))
                {
                    self.touched.push(pid);
                }
                for w in [false, true] {
                    if w && !word {
                        continue;
                    }
                    let w = w as usize;
                    match place {
                        Place::Message(i) => h.message[w] = h.message[w].min(i),
                        Place::Field(f) => h.fields[w] |= 1 << f,
                        Place::Inject => h.inject[w] = true,
                        Place::Recursion => h.recursion[w] = true,
                    }
                }
            }
        }
        Ok(())
    }

    /// The patterns recursion segments hit for the first time since the last call.
    pub fn take_touched(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.touched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key read with the default limits.
    fn key(k: &str) -> Key {
        Key::new(
            k,
            &mut Cost::TOTAL.clone(),
            &mut Steps::new(&Limits::default()),
        )
        .unwrap()
    }

    /// A regex key compiled once is shared by later calls, and a later call still pays its
    /// compile budget: the same inputs stop in the same place, cached or not.
    #[test]
    fn a_cached_regex_key_pays_the_calls_budget() {
        let k = "/cached(key|test)\\d/i";
        let mut steps = Steps::new(&Limits::default());
        let cost = pattern::cost_parts("cached(key|test)\\d", "i");
        let mut room = cost.clone();
        let first = Key::new(k, &mut room, &mut steps).unwrap();
        let second = Key::new(k, &mut room, &mut steps).unwrap();
        let third = Key::new(k, &mut cost.clone(), &mut steps).unwrap();
        let (Key::Regex { pattern: a, .. }, Key::Regex { pattern: b, .. }) = (&first, &third)
        else {
            panic!("{first:?} and {third:?} are not regex keys");
        };
        assert!(std::sync::Arc::ptr_eq(a, b));
        assert!(matches!(second, Key::Plain { .. }), "{second:?}");
    }

    /// One plain key through the index, as a call tests it.
    fn plain(k: &str, seg: &str, cs: bool, ww: bool) -> bool {
        let Key::Plain {
            text,
            lower,
            spaced,
        } = key(k)
        else {
            panic!("{k} is not a plain key");
        };
        let mut index = PlainIndex::new(&[(if cs { text } else { lower }, cs)]);
        let seg = Segment::new(seg.into());
        let mut steps = Steps::new(&Limits::default());
        index.scan(&seg, Place::Message(0), &mut steps).unwrap();
        index.hits[0].seen(ww && !spaced, 1, 0, false)
    }

    #[test]
    fn whole_words_are_ascii_words() {
        assert!(plain("cat", "a cat!", false, true));
        assert!(!plain("cat", "concat", false, true));
        assert!(plain("caf", "café", false, true));
        assert!(plain("東京", "私は東京に", false, true));
        assert!(plain("a.b.a", "xa.b.a.b.a", false, true));
        assert!(plain("CAT", "cat", false, true));
        assert!(!plain("CAT", "cat", true, true));
        assert!(plain("big cat", "bigcat big cats", false, true));
        assert!(plain("at", "cat", false, false));
    }

    #[test]
    fn regex_keys_read_as_st() {
        assert_eq!(regex_parts("/a\\/b/i"), Some(("a/b".into(), "i")));
        assert_eq!(regex_parts("/a/b/"), None);
        assert_eq!(regex_parts("//i"), None);
        assert_eq!(regex_parts("/a/ii"), None);
        assert_eq!(regex_parts("/a/x"), None);
        let k = key(" /^Hi/ ");
        assert!(matches!(k, Key::Regex { .. }));
        let mut steps = Steps::new(&Limits::default());
        let seg = Segment::new("Hi there".into());
        assert_eq!(test(&k, &seg, &mut steps), Ok(true));
        let bad = key("/(/");
        assert!(matches!(bad, Key::Plain { .. }));
        assert!(matches!(key("  "), Key::Empty));
    }

    #[test]
    fn a_catastrophic_regex_key_is_bounded() {
        let limits = Limits {
            regex_run_steps: 10_000,
            regex_run_steps_max: 10_000,
            ..Limits::default()
        };
        let k = key("/(a+)+$/");
        let seg = Segment::new(format!("{}b", "a".repeat(5000)));
        let mut steps = Steps::new(&limits);
        assert_eq!(test(&k, &seg, &mut steps), Err(Spent::Run));
    }

    #[test]
    fn a_regex_key_pays_its_compile_work_from_the_regex_total() {
        let cost = pattern::cost_parts("\\p{L}[a-z]", "i").work();
        assert_eq!(cost, 10 * 100 + 6 * 50_000 + 10_000);
        let limits = |total: u64| Limits {
            lore_regex_steps: total,
            ..Limits::default()
        };
        let mut steps = Steps::new(&limits(cost));
        let mut budget = Cost::TOTAL.clone();
        let k = Key::new("/\\p{L}[a-z]/i", &mut budget, &mut steps);
        assert!(matches!(k, Ok(Key::Regex { .. })));
        let mut steps = Steps::new(&limits(cost - 1));
        assert_eq!(
            Key::new("/\\p{L}[a-z]/i", &mut budget, &mut steps).err(),
            Some(Spent::Total)
        );
        // A plain key compiles nothing and costs nothing here.
        assert!(matches!(
            Key::new("cat", &mut budget, &mut steps),
            Ok(Key::Plain { .. })
        ));
    }
}
