//! The activation engine (SPEC §15.5–§15.8): one call's entries, its scan passes (initial,
//! recursion, minimum activations), timed effects, key tests against the memoized segments,
//! and the macro expansion of keys and contents, each paid from the call's step totals.

use std::collections::HashMap;

use super::{WiInput, WiRandom, lore_seed};
use crate::diagnostic::{Diagnostic, DiagnosticKind, excerpt};
use crate::eval::ScriptEngine;
use crate::limits::Limits;
use crate::lore::book::Entry;
use crate::lore::keys::{self, Key, Place, PlainIndex, Segment, Spent, Steps};
use crate::lore::state::{Effect, EffectKind, fingerprint};
use crate::lore::{LoreSource, Lorebook, WiSettings, WiState};
use crate::pattern::Cost;
use crate::tokens::TokenCounter;
use crate::work::{Allowance, Stage};

/// What the start of a call does with one effect of the state.
enum Start {
    Drop,
    Detached,
    Attached(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PassKind {
    Initial,
    Recursion,
    MinActivations,
}

/// How far one key has looked, and what it found (SPEC §15.8 b).
#[derive(Debug, Default, Clone)]
pub(super) struct Memo {
    /// Messages tested, newest first.
    messages: usize,
    /// The entry's card fields and the inject texts were tested.
    fixed: bool,
    /// Recursion segments tested.
    recursion: usize,
    /// A hit among messages and fixed texts.
    hit_base: bool,
    /// A hit among recursion segments.
    hit_recursion: bool,
}

/// One entry in the call.
pub(super) struct Ent<'b> {
    pub(super) entry: &'b Entry,
    pub(super) name: String,
    pub(super) book: &'b str,
    /// Expanded keys (once per call), primary then secondary.
    pub(super) keys: Option<(Vec<Key>, Vec<Key>)>,
    pub(super) memos: Vec<Memo>,
    /// Content without decorator lines, expanded on first need.
    pub(super) content: Option<String>,
    pub(super) activate: bool,
    pub(super) dont_activate: bool,
    pub(super) body: &'b str,
    pub(super) groups: Vec<&'b str>,
    /// Card fields this entry scans: bit `f` for `Call::fields[f]`.
    pub(super) fields: u8,
    /// The entry's fingerprint, computed once per call.
    pub(super) fingerprint: std::cell::OnceCell<String>,
    /// The pattern id of each plain key in the call's [`PlainIndex`] (primary, then secondary).
    pub(super) pids: Vec<Option<usize>>,
    /// Its keys were not read (past [`MAX_KEYS`], or the plain total ran out): none matches.
    pub(super) keyless: bool,
}

pub(super) struct Call<'a, 'b> {
    pub(super) input: &'a WiInput<'a>,
    pub(super) settings: &'a WiSettings,
    pub(super) random: &'a mut dyn WiRandom,
    pub(super) counter: &'a dyn TokenCounter,
    pub(super) limits: &'a Limits,
    pub(super) ents: Vec<Ent<'b>>,
    pub(super) by_name: HashMap<String, usize>,
    /// Scan order (SPEC §15.5.1).
    pub(super) order: Vec<usize>,
    /// Messages, newest first.
    pub(super) messages: Vec<Segment>,
    /// The six card and persona texts (empty ones never match), then the inject texts.
    pub(super) fields: Vec<Segment>,
    pub(super) injects: Vec<Segment>,
    pub(super) recursion: Vec<Segment>,
    pub(super) position: u64,
    pub(super) skew: u64,
    pub(super) level: u64,
    pub(super) levels: Vec<u64>,
    pub(super) activated: Vec<usize>,
    pub(super) done: Vec<bool>,
    pub(super) sticky: Vec<bool>,
    pub(super) cooldown: Vec<bool>,
    pub(super) overflow: bool,
    pub(super) tokens: u64,
    pub(super) budget: u64,
    pub(super) steps: Steps,
    pub(super) compile: Cost,
    pub(super) engine: Option<ScriptEngine<'a>>,
    /// The lore macro engine's bytes (SPEC §15.5.10), drawn from the render's work budget.
    pub(super) work: Allowance,
    pub(super) diagnostics: Vec<Diagnostic>,
    pub(super) reported: std::collections::HashSet<(DiagnosticKind, Option<usize>)>,
    /// Effects kept from the input state (sticky, then cooldowns).
    pub(super) kept: Vec<Effect>,
    /// Every plain key of the call, built on the first key test.
    pub(super) plain: Option<PlainIndex>,
    /// Messages and recursion segments the index has scanned.
    pub(super) scanned_messages: usize,
    pub(super) scanned_recursion: usize,
    /// Pattern id → the entries with a key of it.
    pub(super) users: Vec<Vec<usize>>,
    /// Entries with a regex key (tested on each new segment by their memo).
    pub(super) regex_ents: Vec<usize>,
    /// Each entry's place in the scan order.
    pub(super) pos: Vec<usize>,
    /// The next pass is a recursion pass at the same level as this one: only entries whose
    /// answer can change need the gate (SPEC §15.8: no pass walks every entry again).
    pub(super) narrow: bool,
    /// The last pass's candidates that did not activate (group or budget losers).
    pub(super) losers: Vec<usize>,
    /// Bytes of expanded key text so far (`MAX_KEY_TEXT`).
    pub(super) key_bytes: usize,
    /// Keys read so far (`MAX_KEYS`).
    pub(super) keys_read: usize,
    /// The passes' gates and key tests spent the plain total (`exhaust`).
    pub(super) exhausted: bool,
    /// Activated entries' group names (group blocking, §15.5.8).
    pub(super) activated_groups: std::collections::HashSet<&'b str>,
}

const MAX_MESSAGES: usize = 1000;

/// Key text one call expands, in all (SPEC §15.8 caps each key, not their sum after macros):
/// what the key automata are built from, so it bounds their memory and build time (about 125
/// bytes and 1 µs per byte of key text: a hostile review's book of a million 4-byte keys cost
/// 0.5 GB and 4 s at 4 MiB). Real books hold well under it (5,000 entries of 5 keys: 300 KB).
const MAX_KEY_TEXT: usize = 1 << 20;

/// Keys one call reads, in all: each costs the call about 100 bytes while it runs (its
/// expanded form, its memo, its pattern id), empty or not, so their number bounds the call's
/// memory as `MAX_KEY_TEXT` bounds the automata's (issue 38: a 16 MB book of two million
/// distinct short keys peaked at 270 MB). Past it, an entry's keys are not read and none
/// matches. Real books hold well under it (5,000 entries of 5 keys: 25,000).
const MAX_KEYS: usize = 1 << 17;

impl<'a, 'b> Call<'a, 'b> {
    pub(super) fn new(
        books: &'b [Lorebook],
        input: &'a WiInput<'a>,
        settings: &'a WiSettings,
        random: &'a mut dyn WiRandom,
        counter: &'a dyn TokenCounter,
        limits: &'a Limits,
    ) -> Self {
        let mut call = Call {
            input,
            settings,
            random,
            counter,
            limits,
            ents: Vec::new(),
            by_name: HashMap::new(),
            order: Vec::new(),
            messages: Vec::new(),
            fields: Vec::new(),
            injects: Vec::new(),
            recursion: Vec::new(),
            position: 0,
            skew: 0,
            level: 0,
            levels: Vec::new(),
            activated: Vec::new(),
            done: Vec::new(),
            sticky: Vec::new(),
            cooldown: Vec::new(),
            overflow: false,
            tokens: 0,
            budget: 0,
            steps: Steps::new(limits),
            compile: Cost::TOTAL,
            engine: None,
            work: Allowance::new(Stage::Templates, limits.work_bytes as u64),
            diagnostics: Vec::new(),
            reported: std::collections::HashSet::new(),
            kept: Vec::new(),
            plain: None,
            scanned_messages: 0,
            scanned_recursion: 0,
            users: Vec::new(),
            regex_ents: Vec::new(),
            pos: Vec::new(),
            narrow: false,
            losers: Vec::new(),
            activated_groups: std::collections::HashSet::new(),
            key_bytes: 0,
            keys_read: 0,
            exhausted: false,
        };
        call.books(books);
        call.segments();
        call
    }

    fn report(&mut self, kind: DiagnosticKind, ent: Option<usize>, message: String) {
        if !self.reported.insert((kind, ent)) {
            return;
        }
        let (book, entry) = match ent {
            Some(i) => (
                Some(self.ents[i].book),
                Some(self.ents[i].entry.uid.to_string()),
            ),
            None => (None, None),
        };
        self.diagnostics
            .push(Diagnostic::new(kind, None, message).in_book(book, entry.as_deref()));
    }

    /// The books in use (one per name, SPEC §15.4), their entries and the scan order.
    fn books(&mut self, books: &'b [Lorebook]) {
        let mut used: Vec<&'b Lorebook> = Vec::new();
        let mut entries = 0usize;
        for b in books {
            if let Some(first) = used.iter().find(|u| u.name == b.name) {
                if first.entries != b.entries {
                    let d = Diagnostic::new(
                        DiagnosticKind::LoreBookDuplicate,
                        None,
                        format!(
                            "a second book named {:?} with other entries is skipped",
                            excerpt(&b.name)
                        ),
                    )
                    .in_book(Some(&b.name), None);
                    self.diagnostics.push(d);
                }
                continue;
            }
            if used.len() >= self.limits.lore_max_books
                || entries + b.entries.len() > self.limits.lore_max_entries
            {
                self.report(
                    DiagnosticKind::LoreLimit,
                    None,
                    format!(
                        "World Info limits: at most {} books and {} entries; book {:?} and later ones are skipped",
                        self.limits.lore_max_books,
                        self.limits.lore_max_entries,
                        excerpt(&b.name)
                    ),
                );
                break;
            }
            entries += b.entries.len();
            used.push(b);
        }
        let strategy = self.settings.character_strategy;
        let tier = |s: LoreSource| match s {
            LoreSource::Chat => 0,
            LoreSource::Persona => 1,
            LoreSource::Character if strategy == 0 => 2,
            LoreSource::Global if strategy == 0 => 2,
            LoreSource::Character if strategy == 2 => 3,
            LoreSource::Global if strategy == 2 => 2,
            LoreSource::Character => 2,
            LoreSource::Global => 3,
        };
        let mut levels = Vec::new();
        let mut keyed: Vec<(u8, i64, usize)> = Vec::new();
        for b in used {
            for e in &b.entries {
                let i = self.ents.len();
                let name = format!("{}.{}", b.name, e.uid);
                // `BOOK.UID` can name two entries (book `x`, uid `y.z`; book `x.y`, uid `z`):
                // timed effects follow the first; said once per call, not silently.
                if self.by_name.contains_key(&name) {
                    let d = Diagnostic::new(
                        DiagnosticKind::LoreBookDuplicate,
                        None,
                        format!(
                            "two entries are named {:?} (a book name or uid with a dot): timed \
                             effects follow the first",
                            excerpt(&name)
                        ),
                    )
                    .in_book(Some(&b.name), Some(&e.uid.to_string()));
                    if self
                        .reported
                        .insert((DiagnosticKind::LoreBookDuplicate, None))
                    {
                        self.diagnostics.push(d);
                    }
                } else {
                    self.by_name.insert(name.clone(), i);
                }
                let (activate, dont_activate, body) = decorators(&e.content);
                if e.delay_until_recursion > 0 {
                    levels.push(e.delay_until_recursion);
                }
                self.ents.push(Ent {
                    entry: e,
                    name,
                    book: &b.name,
                    keys: None,
                    memos: Vec::new(),
                    content: None,
                    activate,
                    dont_activate,
                    body,
                    groups: e
                        .group
                        .split(',')
                        .map(|g| g.trim_start_matches(keys::js_space))
                        .filter(|g| !g.is_empty())
                        .collect(),
                    fields: [
                        e.match_persona_description,
                        e.match_character_description,
                        e.match_character_personality,
                        e.match_character_depth_prompt,
                        e.match_scenario,
                        e.match_creator_notes,
                    ]
                    .iter()
                    .enumerate()
                    .fold(0, |mask, (f, &on)| mask | (u8::from(on) << f)),
                    pids: Vec::new(),
                    keyless: false,
                    fingerprint: std::cell::OnceCell::new(),
                });
                keyed.push((tier(b.source), e.order, i));
            }
        }
        // Stable: books in input order, entries in book order, within a tier by order.
        keyed.sort_by_key(|&(t, order, _)| (t, std::cmp::Reverse(order)));
        self.order = keyed.into_iter().map(|(_, _, i)| i).collect();
        self.pos = vec![0; self.ents.len()];
        for (k, &i) in self.order.iter().enumerate() {
            self.pos[i] = k;
        }
        levels.sort_unstable();
        levels.dedup();
        self.level = levels.first().copied().unwrap_or(0);
        // Kept reversed: the next level is popped from the end.
        self.levels = levels.into_iter().skip(1).rev().collect();
        let n = self.ents.len();
        self.done = vec![false; n];
        self.sticky = vec![false; n];
        self.cooldown = vec![false; n];
    }

    fn segments(&mut self) {
        let input = self.input;
        let names = self.settings.include_names;
        self.messages = input
            .history
            .iter()
            .rev()
            .take(MAX_MESSAGES)
            .map(|m| {
                let text = if names && !m.name.is_empty() {
                    format!("{}: {}", m.name, m.text)
                } else {
                    m.text.to_string()
                };
                Segment::new(keys::js_trim(&text).to_string())
            })
            .collect();
        let s = &input.scan;
        self.fields = [
            &s.persona,
            &s.description,
            &s.personality,
            &s.depth_prompt,
            &s.scenario,
            &s.creator_notes,
        ]
        .into_iter()
        .map(|t| Segment::new(t.clone()))
        .collect();
        self.injects = s
            .inject
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| Segment::new(t.clone()))
            .collect();
        let max_context = input.max_context.unwrap_or(3795);
        let b = (self.settings.budget_percent as f64 * max_context as f64 / 100.0 + 0.5).floor();
        let mut budget = if b < 1.0 { 1 } else { b as u64 };
        if self.settings.budget_cap > 0 {
            budget = budget.min(self.settings.budget_cap);
        }
        self.budget = budget;
        self.position = input.position.unwrap_or(input.history.len() as u64);
        if input.position.is_none()
            && self.ents.iter().any(|e| {
                on(e.entry.sticky).is_some()
                    || on(e.entry.cooldown).is_some()
                    || on(e.entry.delay).is_some()
            })
        {
            self.report(
                DiagnosticKind::LorePositionMissing,
                None,
                "timed effects without the message position: the history length stands in".into(),
            );
        }
    }

    /// SPEC §15.6.2: which effects apply, which are kept, which end.
    pub(super) fn start_effects(&mut self, state: &WiState) {
        if self.input.dry_run {
            self.kept = state.effects.clone();
            return;
        }
        let p = self.position;
        // At most one effect per kind and entry (SPEC §15.6.1): the first one counts.
        let mut seen = std::collections::HashSet::new();
        let (mut stickies, mut cooldowns): (Vec<Effect>, Vec<Effect>) = state
            .effects
            .iter()
            .filter(|e| seen.insert((e.kind, e.entry.as_str())))
            .cloned()
            .partition(|e| e.kind == EffectKind::Sticky);
        // Each entry's cooldown, by name: an ending sticky effect replaces it in place.
        let mut cool_at: HashMap<String, usize> = cooldowns
            .iter()
            .enumerate()
            .map(|(k, c)| (c.entry.clone(), k))
            .collect();
        let mut kept_sticky = Vec::new();
        for eff in stickies.drain(..) {
            let i = match self.start_of(&eff, p) {
                Start::Drop => continue,
                Start::Detached => {
                    kept_sticky.push(eff);
                    continue;
                }
                Start::Attached(i) => i,
            };
            let entry = self.ents[i].entry;
            if on(entry.sticky).is_none() {
                continue;
            }
            if p >= eff.end {
                if let Some(c) = on(entry.cooldown) {
                    let cool = Effect {
                        kind: EffectKind::Cooldown,
                        entry: eff.entry.clone(),
                        fingerprint: eff.fingerprint.clone(),
                        start: p,
                        end: p.saturating_add(c),
                        protected: true,
                    };
                    match cool_at.get(&eff.entry) {
                        Some(&k) => cooldowns[k] = cool,
                        None => {
                            cool_at.insert(eff.entry.clone(), cooldowns.len());
                            cooldowns.push(cool);
                        }
                    }
                }
                continue;
            }
            self.sticky[i] = true;
            kept_sticky.push(eff);
        }
        let mut kept_cool = Vec::new();
        for eff in cooldowns {
            match self.start_of(&eff, p) {
                Start::Drop => {}
                Start::Detached => kept_cool.push(eff),
                Start::Attached(i) => {
                    if on(self.ents[i].entry.cooldown).is_some() && p < eff.end {
                        self.cooldown[i] = true;
                        kept_cool.push(eff);
                    }
                }
            }
        }
        kept_sticky.extend(kept_cool);
        self.kept = kept_sticky;
    }

    /// SPEC §15.6.2's first questions about an effect at position `p`: dropped (started here
    /// and not protected, or detached and over), kept detached, or attached to entry `i`.
    fn start_of(&self, eff: &Effect, p: u64) -> Start {
        if p <= eff.start && !eff.protected {
            return Start::Drop;
        }
        match self.attached(eff) {
            Some(i) => Start::Attached(i),
            None if p < eff.end => Start::Detached,
            None => Start::Drop,
        }
    }

    /// The entry an effect is attached to: same name and fingerprint.
    fn attached(&self, eff: &Effect) -> Option<usize> {
        let &i = self.by_name.get(&eff.entry)?;
        (*self.fingerprint(i) == eff.fingerprint).then_some(i)
    }

    fn fingerprint(&self, i: usize) -> &String {
        let e = &self.ents[i];
        e.fingerprint.get_or_init(|| fingerprint(e.entry))
    }

    /// SPEC §15.6.3: new effects for activated entries.
    pub(super) fn end_effects(&mut self) -> WiState {
        let mut effects = std::mem::take(&mut self.kept);
        if self.input.dry_run {
            return WiState {
                version: 1,
                effects,
            };
        }
        let p = self.position;
        let mut new_sticky = Vec::new();
        let mut new_cool = Vec::new();
        // One lookup per activated entry: the kept effects by kind and name.
        let kept: HashMap<(EffectKind, &str), &str> = effects
            .iter()
            .map(|x| ((x.kind, x.entry.as_str()), x.fingerprint.as_str()))
            .collect();
        let mut detached: std::collections::HashSet<(EffectKind, String)> = Default::default();
        for &i in &self.activated {
            let e = self.ents[i].entry;
            for (kind, value, out) in [
                (EffectKind::Sticky, on(e.sticky), &mut new_sticky),
                (EffectKind::Cooldown, on(e.cooldown), &mut new_cool),
            ] {
                let Some(v) = value else { continue };
                let fp = self.fingerprint(i).clone();
                let name = &self.ents[i].name;
                match kept.get(&(kind, name.as_str())) {
                    Some(&f) if f == fp => continue,
                    Some(_) => {
                        detached.insert((kind, name.clone()));
                    }
                    None => {}
                }
                out.push(Effect {
                    kind,
                    entry: name.clone(),
                    fingerprint: fp,
                    start: p,
                    end: p.saturating_add(v),
                    protected: false,
                });
            }
        }
        if !detached.is_empty() {
            effects.retain(|x| !detached.contains(&(x.kind, x.entry.clone())));
        }
        let (mut sticky, cool): (Vec<Effect>, Vec<Effect>) = effects
            .into_iter()
            .partition(|e| e.kind == EffectKind::Sticky);
        sticky.extend(new_sticky);
        sticky.extend(cool);
        sticky.extend(new_cool);
        WiState {
            version: 1,
            effects: sticky,
        }
    }

    /// SPEC §15.5.11: the passes of one call.
    pub(super) fn passes(&mut self) {
        let mut kind = PassKind::Initial;
        let mut count = 0u64;
        loop {
            let now = self.pass(kind);
            count += 1;
            let feeds: Vec<usize> = now
                .iter()
                .copied()
                .filter(|&i| !self.ents[i].entry.prevent_recursion)
                .collect();
            for &i in &feeds {
                let text = self.ents[i].content.clone().unwrap_or_default();
                self.recursion.push(Segment::new(text));
            }
            let cap = self.settings.max_recursion_steps;
            if (cap > 0 && count >= cap) || self.exhausted {
                break;
            }
            if count >= self.limits.lore_max_passes as u64 {
                self.report(
                    DiagnosticKind::LoreLimit,
                    None,
                    format!(
                        "World Info: the call stopped after {} scan passes (a limit)",
                        self.limits.lore_max_passes
                    ),
                );
                break;
            }
            let recursive = self.settings.recursive && !self.overflow;
            self.narrow = kind == PassKind::Recursion;
            kind = if recursive
                && (!feeds.is_empty()
                    || (kind == PassKind::MinActivations && !self.recursion.is_empty()))
            {
                PassKind::Recursion
            } else if self.min_activations_due() {
                self.skew += 1;
                self.narrow = false;
                PassKind::MinActivations
            } else if let Some(level) = self.levels.pop().filter(|_| self.settings.recursive) {
                self.level = level;
                self.narrow = false;
                PassKind::Recursion
            } else {
                break;
            };
        }
    }

    fn min_activations_due(&self) -> bool {
        let s = self.settings;
        let d = s.scan_depth.saturating_add(self.skew);
        !self.overflow
            && s.min_activations > 0
            && (self.activated.len() as u64) < s.min_activations
            && d <= self.input.history.len() as u64
            && (s.min_activations_depth_max == 0 || d <= s.min_activations_depth_max)
    }

    /// One pass: the gate, groups, probability and budget. Returns what it activated.
    fn pass(&mut self, kind: PassKind) -> Vec<usize> {
        let mut candidates = Vec::new();
        let narrow = self.narrow && kind == PassKind::Recursion;
        let walk = if narrow {
            self.changed()
        } else {
            self.order.clone()
        };
        for i in walk {
            if self.gate(i, kind) {
                candidates.push(i);
            }
        }
        let gated = candidates.clone();
        // Stuck entries first, then scan order (stable).
        candidates.sort_by_key(|&i| !self.sticky[i]);
        let candidates = self.groups(candidates, kind);
        let mut now = Vec::new();
        for i in candidates {
            let e = self.ents[i].entry;
            if self.overflow && !e.ignore_budget {
                continue;
            }
            let stuck = self.sticky[i];
            if e.use_probability && e.probability.0 != 100.0 && !stuck {
                let u = self.random.draw();
                if u * 100.0 > e.probability.0 {
                    self.done[i] = true;
                    continue;
                }
            }
            let content = self.content(i);
            let t = u64::from(self.counter.count(&format!("{content}\n")));
            if !e.ignore_budget && self.tokens + t >= self.budget {
                self.overflow = true;
                continue;
            }
            self.tokens += t;
            self.done[i] = true;
            self.activated.push(i);
            self.activated_groups
                .extend(self.ents[i].groups.iter().copied());
            now.push(i);
        }
        self.losers = gated.into_iter().filter(|&i| !self.done[i]).collect();
        now
    }

    /// The entries whose gate can answer differently in a recursion pass at the same level as
    /// the last: the last pass's losers, entries with a key the new recursion segments hit,
    /// and entries with regex keys; in scan order.
    fn changed(&mut self) -> Vec<usize> {
        self.index();
        self.scan_up_to(0);
        let touched = self
            .plain
            .as_mut()
            .map(PlainIndex::take_touched)
            .unwrap_or_default();
        let mut out = std::mem::take(&mut self.losers);
        for pid in touched {
            out.extend_from_slice(&self.users[pid]);
        }
        out.extend(self.regex_ents.iter().copied());
        out.retain(|&i| !self.done[i]);
        out.sort_unstable_by_key(|&i| self.pos[i]);
        out.dedup();
        out
    }

    /// SPEC §15.5.3: whether the entry is a candidate in this pass.
    fn gate(&mut self, i: usize, kind: PassKind) -> bool {
        if self.done[i] || self.exhausted {
            return false;
        }
        if self.steps.charge_tests(1).is_err() {
            self.exhaust();
            return false;
        }
        let (e, stuck) = (self.ents[i].entry, self.sticky[i]);
        if e.disable {
            return false;
        }
        let gen_type = self.input.generation_type.name();
        if !e.triggers.is_empty() && !e.triggers.iter().any(|t| t == gen_type) {
            return false;
        }
        if e.delay.is_some_and(|n| self.position < n) {
            return false;
        }
        if self.cooldown[i] && !stuck {
            return false;
        }
        let level = e.delay_until_recursion;
        if !stuck && level > 0 && (kind != PassKind::Recursion || level > self.level) {
            return false;
        }
        if !stuck && kind == PassKind::Recursion && e.exclude_recursion {
            return false;
        }
        if self.ents[i].activate {
            return true;
        }
        if self.ents[i].dont_activate {
            return false;
        }
        if e.constant || stuck {
            return true;
        }
        if e.key.is_empty() {
            return false;
        }
        self.matches(i, kind)
    }

    /// Primary, then secondary keys (SPEC §15.5.4, §15.5.7).
    fn matches(&mut self, i: usize, kind: PassKind) -> bool {
        self.expand_keys(i);
        let n_primary = self.ents[i].entry.key.len();
        if !(0..n_primary).any(|k| self.key_hit(i, k, kind)) {
            return false;
        }
        let e = self.ents[i].entry;
        let n_secondary = e.keysecondary.len();
        if !e.selective || n_secondary == 0 {
            return true;
        }
        let logic = e.selective_logic;
        let mut any = false;
        let mut all = true;
        for k in 0..n_secondary {
            let hit = self.key_hit(i, n_primary + k, kind);
            any |= hit;
            all &= hit;
            match logic {
                0 if any => return true,
                1 if !hit => return true,
                2 if hit => return false,
                3 if !hit => return false,
                _ => {}
            }
        }
        match logic {
            0 => any,
            1 => !all,
            2 => !any,
            _ => all,
        }
    }

    /// Whether key `k` (primary first, then secondary) of entry `i` matches a segment the
    /// entry sees in a pass of `kind`. Only segments not yet tested are tested.
    pub(super) fn key_hit(&mut self, i: usize, k: usize, kind: PassKind) -> bool {
        self.expand_keys(i);
        if self.exhausted || self.ents[i].keyless {
            return false;
        }
        if self.steps.charge_tests(1).is_err() {
            self.exhaust();
            return false;
        }
        let e = self.ents[i].entry;
        let ww = e
            .match_whole_words
            .unwrap_or(self.settings.match_whole_words);
        let depth = e
            .scan_depth
            .unwrap_or(self.settings.scan_depth.saturating_add(self.skew))
            .min(MAX_MESSAGES as u64) as usize;
        if depth == 0 {
            return false;
        }
        self.index();
        if let Some(pid) = self.ents[i].pids.get(k).copied().flatten() {
            self.scan_up_to(depth);
            let spaced = match self.key(i, k) {
                Key::Plain { spaced, .. } => *spaced,
                _ => false,
            };
            let mask = self.ents[i].fields;
            let recursion = kind != PassKind::MinActivations;
            return self
                .plain
                .as_ref()
                .is_some_and(|p| p.hits[pid].seen(ww && !spaced, depth, mask, recursion));
        }
        let mut memo = std::mem::take(&mut self.ents[i].memos[k]);
        let result = self.look(i, k, &mut memo, depth, kind);
        self.ents[i].memos[k] = memo;
        result
    }

    fn key(&self, i: usize, k: usize) -> &Key {
        let (primary, secondary) = self.ents[i].keys.as_ref().expect("keys expanded");
        if k < primary.len() {
            &primary[k]
        } else {
            &secondary[k - primary.len()]
        }
    }

    /// Builds the call's plain-key index (once): every key of every entry that can match,
    /// expanded in scan order, then the fixed texts scanned.
    fn index(&mut self) {
        if self.plain.is_some() {
            return;
        }
        let mut ids: HashMap<(String, bool), usize> = HashMap::new();
        let mut patterns: Vec<(String, bool)> = Vec::new();
        for k in 0..self.order.len() {
            let i = self.order[k];
            let e = self.ents[i].entry;
            if e.disable || e.key.is_empty() {
                continue;
            }
            self.expand_keys(i);
            if self.ents[i].keyless {
                continue;
            }
            let cs = e.case_sensitive.unwrap_or(self.settings.case_sensitive);
            let (primary, secondary) = self.ents[i].keys.as_ref().expect("keys expanded");
            if primary
                .iter()
                .chain(secondary)
                .any(|k| matches!(k, Key::Regex { .. }))
            {
                self.regex_ents.push(i);
            }
            let pids: Vec<Option<usize>> = primary
                .iter()
                .chain(secondary)
                .map(|key| match key {
                    Key::Plain { text, lower, .. } => {
                        let needle = if cs { text.clone() } else { lower.clone() };
                        let next = patterns.len();
                        let id = *ids.entry((needle.clone(), cs)).or_insert(next);
                        if id == next {
                            patterns.push((needle, cs));
                        }
                        Some(id)
                    }
                    _ => None,
                })
                .collect();
            for pid in pids.iter().flatten() {
                if self.users.len() <= *pid {
                    self.users.resize(*pid + 1, Vec::new());
                }
                if self.users[*pid].last() != Some(&i) {
                    self.users[*pid].push(i);
                }
            }
            self.ents[i].pids = pids;
        }
        let mut index = PlainIndex::new(&patterns);
        let mut spent = None;
        for (f, seg) in self.fields.iter().enumerate() {
            if !seg.text.is_empty() && spent.is_none() {
                spent = index.scan(seg, Place::Field(f), &mut self.steps).err();
            }
        }
        for seg in &self.injects {
            if spent.is_none() {
                spent = index.scan(seg, Place::Inject, &mut self.steps).err();
            }
        }
        self.plain = Some(index);
        if spent.is_some() {
            self.spent();
        }
    }

    /// Scans the messages up to `depth` and every recursion segment not yet scanned.
    fn scan_up_to(&mut self, depth: usize) {
        let Some(index) = self.plain.as_mut() else {
            return;
        };
        let upto = depth.min(self.messages.len());
        let mut spent = None;
        while self.scanned_messages < upto && spent.is_none() {
            let i = self.scanned_messages;
            self.scanned_messages += 1;
            // Messages are chat text: their scan also pays from its share.
            let (seg, steps) = (&self.messages[i], &mut self.steps);
            spent = crate::work::on_chat(|| index.scan(seg, Place::Message(i), steps)).err();
        }
        while self.scanned_recursion < self.recursion.len() && spent.is_none() {
            let i = self.scanned_recursion;
            self.scanned_recursion += 1;
            spent = index
                .scan(&self.recursion[i], Place::Recursion, &mut self.steps)
                .err();
        }
        if spent.is_some() {
            // Nothing later is scanned: the remaining tests are no match (SPEC §15.8).
            self.scanned_messages = self.messages.len();
            self.scanned_recursion = usize::MAX;
            self.spent();
        }
    }

    /// The passes' own work (gates and key tests) ran out of the plain total: no entry is a
    /// candidate any more and no further pass runs (deterministic: the same inputs stop at
    /// the same test).
    fn exhaust(&mut self) {
        self.exhausted = true;
        self.spent();
    }

    fn spent(&mut self) {
        if self.steps.metered() {
            return;
        }
        self.report(
            DiagnosticKind::LoreLimit,
            None,
            "World Info: the call spent its key-matching steps; later tests do not match".into(),
        );
    }

    /// A regex key (plain keys use the index): the segments its memo has not tested yet.
    fn look(&mut self, i: usize, k: usize, memo: &mut Memo, depth: usize, kind: PassKind) -> bool {
        if memo.hit_base {
            return true;
        }
        let (primary, secondary) = self.ents[i].keys.as_ref().expect("keys expanded");
        let key = if k < primary.len() {
            &primary[k]
        } else {
            &secondary[k - primary.len()]
        };
        let mut outcome = None;
        let upto = depth.min(self.messages.len());
        let from = memo.messages.min(upto);
        let segs = self.messages[from..upto].iter();
        let r = crate::work::on_chat(|| first_hit(key, segs, &mut self.steps, &mut memo.messages));
        if found(r, &mut memo.hit_base, &mut outcome) {
            return true;
        }
        if outcome.is_none() && !memo.fixed {
            memo.fixed = true;
            let mask = self.ents[i].fields;
            let fields = (0..self.fields.len())
                .filter(|f| mask & (1 << f) != 0)
                .map(|f| &self.fields[f]);
            let segs = fields.chain(&self.injects).filter(|s| !s.text.is_empty());
            let r = first_hit(key, segs, &mut self.steps, &mut 0);
            if found(r, &mut memo.hit_base, &mut outcome) {
                return true;
            }
        }
        if outcome.is_none() && kind != PassKind::MinActivations {
            if memo.hit_recursion {
                return true;
            }
            let segs = self.recursion[memo.recursion.min(self.recursion.len())..].iter();
            let r = first_hit(key, segs, &mut self.steps, &mut memo.recursion);
            if found(r, &mut memo.hit_recursion, &mut outcome) {
                return true;
            }
        }
        match outcome {
            Some(Spent::Run) => self.report(
                DiagnosticKind::LoreRegexLimit,
                Some(i),
                format!(
                    "entry {}: a regex key took more than its matcher steps (no match)",
                    excerpt(&self.ents[i].name)
                ),
            ),
            Some(Spent::Total) => self.spent(),
            None => {}
        }
        false
    }

    /// The lore macro engine (SPEC §15.5.10), made on first use.
    fn expand(&mut self, i: usize, text: &str) -> String {
        if !crate::scripts::replace::has_macros(text) {
            return text.to_string();
        }
        let ctx = self.input.context;
        let position = self.position;
        let engine = self
            .engine
            .get_or_insert_with(|| ScriptEngine::new(ctx, lore_seed(ctx.seed, position), false));
        let (tree, _) = crate::syntax::parse(text.into(), self.limits);
        let id = format!("lore:{}", self.ents[i].name);
        // Macro notes inside lore are not reported: the entry is the author's unit, and a
        // book's unknown macros would repeat on every call.
        let mut ignored = Vec::new();
        let out = engine.expand(
            &mut self.work,
            &id,
            &tree,
            Vec::new(),
            false,
            None,
            &mut ignored,
        );
        if engine.work_out() {
            self.report(
                DiagnosticKind::LoreLimit,
                None,
                "World Info: macros in keys and contents spent the lore work budget; later \
                 macros expand to nothing"
                    .into(),
            );
        }
        out
    }

    pub(super) fn expand_keys(&mut self, i: usize) {
        if self.ents[i].keys.is_some() {
            return;
        }
        let e = self.ents[i].entry;
        // Reading a key is a test's work (a walk of its text, macros aside) and ~100 bytes.
        let n = e.key.len() + e.keysecondary.len();
        let over = self.keys_read + n > MAX_KEYS;
        if over || self.exhausted || self.steps.charge_tests(n as u64).is_err() {
            self.ents[i].keys = Some((Vec::new(), Vec::new()));
            self.ents[i].keyless = true;
            match over {
                true => self.report(
                    DiagnosticKind::LoreLimit,
                    None,
                    format!(
                        "World Info: past {MAX_KEYS} keys in one call, later entries' keys \
                         never match"
                    ),
                ),
                false if !self.exhausted => self.exhaust(),
                false => {}
            }
            return;
        }
        self.keys_read += n;
        let read = |this: &mut Self, list: &crate::lore::book::Keys| -> Vec<Key> {
            list.iter()
                .map(|k| {
                    let text = this.expand(i, k);
                    // The key cap holds after macros too (`{{description}}` can be any size),
                    // and so does the call's total of key text: over either, no match.
                    let max = this.limits.lore_max_key_bytes;
                    if text.len() > max || this.key_bytes + text.len() > MAX_KEY_TEXT {
                        this.report(
                            DiagnosticKind::LoreLimit,
                            None,
                            format!(
                                "World Info: a key over {max} bytes after its macros, or past \
                                 {MAX_KEY_TEXT} bytes of keys in one call, never matches"
                            ),
                        );
                        return Key::Empty;
                    }
                    this.key_bytes += text.len();
                    Key::new(&text, &mut this.compile, &mut this.steps).unwrap_or_else(|_| {
                        this.spent();
                        Key::Empty
                    })
                })
                .collect()
        };
        let primary = read(self, &e.key);
        let secondary = read(self, &e.keysecondary);
        self.ents[i].memos = vec![Memo::default(); primary.len() + secondary.len()];
        self.ents[i].keys = Some((primary, secondary));
    }

    /// The entry's content, decorators removed and macros expanded (once per call).
    fn content(&mut self, i: usize) -> String {
        if let Some(c) = &self.ents[i].content {
            return c.clone();
        }
        let body = self.ents[i].body;
        let c = self.expand(i, body);
        self.ents[i].content = Some(c.clone());
        c
    }
}

/// Whether a test series hit (recorded in `hit`); a spent total goes to `outcome`.
fn found(r: Result<bool, Spent>, hit: &mut bool, outcome: &mut Option<Spent>) -> bool {
    match r {
        Ok(true) => {
            *hit = true;
            true
        }
        Ok(false) => false,
        Err(s) => {
            *outcome = Some(s);
            false
        }
    }
}

/// A timed-effect setting that is on: SillyTavern tests `!entry[type]`, so 0 is off like a
/// missing value (issue 39: `sticky: 0` recorded an effect of no length every activation).
fn on(value: Option<u64>) -> Option<u64> {
    value.filter(|&v| v > 0)
}

/// Tests `segs` in order until one matches; `tested` counts the segments tested.
fn first_hit<'s>(
    key: &Key,
    segs: impl Iterator<Item = &'s Segment>,
    steps: &mut Steps,
    tested: &mut usize,
) -> Result<bool, Spent> {
    for seg in segs {
        *tested += 1;
        if keys::test(key, seg, steps)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// SPEC §15.5.3's decorators: (`@@activate`, `@@dont_activate`, the content without the
/// decorator lines).
fn decorators(content: &str) -> (bool, bool, &str) {
    if !content.starts_with("@@") {
        return (false, false, content);
    }
    let known = |l: &str| {
        let l = l
            .strip_prefix('@')
            .filter(|r| r.starts_with("@@"))
            .unwrap_or(l);
        l.starts_with("@@activate") || l.starts_with("@@dont_activate")
    };
    let (mut activate, mut dont) = (false, false);
    let mut fallback = false;
    let mut body = content;
    let mut rest = content;
    loop {
        let (line, next) = match rest.split_once('\n') {
            Some((l, n)) => (l, Some(n)),
            None => (rest, None),
        };
        if !line.starts_with("@@") {
            body = rest;
            break;
        }
        if line.starts_with("@@@") && !fallback {
            // skipped
        } else if known(line) {
            let d = if line.starts_with("@@@") {
                &line[1..]
            } else {
                line
            };
            activate |= d == "@@activate";
            dont |= d == "@@dont_activate";
            fallback = false;
        } else {
            fallback = true;
        }
        match next {
            Some(n) => rest = n,
            None => break,
        }
    }
    (activate, dont, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decorators_read_as_st() {
        assert_eq!(decorators("@@activate\nbody"), (true, false, "body"));
        assert_eq!(decorators("@@activate extra\nbody"), (false, false, "body"));
        assert_eq!(
            decorators("@@dont_activate\n@@x\ntext\n@@y"),
            (false, true, "text\n@@y")
        );
        // Every line a decorator: the content stays whole.
        assert_eq!(decorators("@@activate"), (true, false, "@@activate"));
        // `@@@` is a fallback, read only after an unknown decorator.
        assert_eq!(decorators("@@@activate\nb"), (false, false, "b"));
        assert_eq!(decorators("@@unknown\n@@@activate\nb"), (true, false, "b"));
        assert_eq!(
            decorators("plain @@activate"),
            (false, false, "plain @@activate")
        );
    }
}
