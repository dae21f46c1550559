//! One pass's run loop (SPEC §13.6): the scripts it selects and pays for, each run over UTF-16
//! code units with its step, size and compile bounds, the find templates' expansion, and the
//! prompt cache's records.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::cache::{CACHE_ENTRIES, CacheKey, Cached, context_fingerprint};
use super::{Find, PassKind, Permission, Placement, Scripts};
use crate::context::Context;
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::eval::ScriptEngine;
use crate::limits::Limits;
use crate::options::RandomSource;
use crate::pattern::{self, Pattern};
use crate::scripts::RegexScript;
use crate::scripts::replace::{self, Body, Piece, Template, Token};
use crate::work::{Allowance, Stage};

pub(super) const OVER_BUDGET: &str = "the preset's patterns together are too large to compile";

/// One pass: its RNG stream and work budget (through the engine), its step total and its
/// diagnostics.
pub(super) struct PassRun<'a> {
    scripts: &'a Scripts,
    ctx: &'a Context,
    /// Which sources' scripts this pass may select.
    permission: Permission,
    limits: Limits,
    engine: Option<ScriptEngine<'a>>,
    /// The pass's matcher steps (SPEC §13.6.2), drawn from the render's work budget.
    steps: Allowance,
    pass_spent: bool,
    pub(super) diagnostics: Vec<Diagnostic>,
    reported: Vec<(DiagnosticKind, Option<u32>)>,
    /// Find templates' patterns, by expanded text, for this pass.
    patterns: HashMap<String, Rc<Result<Pattern, String>>>,
    /// The scripts a pass kind and placement select, before depth.
    candidates: [Option<Vec<usize>>; 12],
    /// Whether this pass has paid each script's compile work.
    paid: Vec<Compile>,
    /// While a result is being recorded for the cache: every diagnostic reported.
    log: Option<Vec<Diagnostic>>,
    /// What the pass's find templates may still cost to compile.
    compile_budget: pattern::Cost,
    /// Bytes the pass's expansions may produce (SPEC §13.6.3), drawn from the render's work
    /// budget; the engine is given what is left before each expansion.
    work: Allowance,
    /// The work budget ran out during this pass.
    work_out: bool,
}

/// A script's compile work in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compile {
    /// Not selected yet.
    Due,
    Paid,
    /// The pass could not pay when it selected the script: the pass ends when it comes to
    /// run it (the scripts before it still run).
    Unpaid,
}

/// What one run did.
enum Outcome {
    Unchanged,
    Changed(Vec<u16>),
    /// Over its own bound (or the size bound): discarded.
    Limit(&'static str),
    /// The pass total ran out during it: discarded, the pass ends.
    PassSpent,
}

impl<'a> PassRun<'a> {
    pub(super) fn new(scripts: &'a Scripts, ctx: &'a Context, permission: Permission) -> Self {
        let limits = ctx.options.limits.clamped();
        PassRun {
            scripts,
            ctx,
            permission,
            steps: Allowance::new(Stage::Regex, limits.regex_pass_steps),
            work: Allowance::new(Stage::Templates, limits.work_bytes as u64),
            limits,
            engine: None,
            pass_spent: false,
            diagnostics: scripts.import.clone(),
            reported: Vec::new(),
            patterns: HashMap::new(),
            candidates: Default::default(),
            paid: vec![Compile::Due; scripts.list.len()],
            log: None,
            compile_budget: pattern::Cost::TOTAL,
            work_out: false,
        }
    }

    fn engine(&mut self) -> &mut ScriptEngine<'a> {
        let ctx = self.ctx;
        self.engine.get_or_insert_with(|| {
            // The regex stream (SPEC §16): the context seed mixed with the tag `regex`.
            let seed = crate::eval::stream_seed(ctx.seed, "regex");
            ScriptEngine::new(ctx, seed, ctx.options.regex_random == RandomSource::First)
        })
    }

    fn report(&mut self, d: Diagnostic) {
        if let Some(log) = &mut self.log {
            log.push(d.clone());
        }
        let key = (d.kind, d.script);
        if !self.reported.contains(&key) {
            self.reported.push(key);
            self.diagnostics.push(d);
        }
    }

    pub(super) fn finish(self) -> Vec<Diagnostic> {
        self.diagnostics
    }

    /// Indices of the scripts a pass runs on a text with this placement and depth.
    fn selected(&mut self, kind: PassKind, placement: Placement, depth: Option<u32>) -> Vec<usize> {
        // The kind and placement filter once per pass; only depth varies by item.
        let list = &self.scripts.list;
        let slot = kind as usize * 3 + placement as usize;
        if self.candidates[slot].is_none() {
            let p = placement.number();
            let found: Vec<usize> = (0..list.len())
                .filter(|&i| {
                    let s = &list[i].script;
                    let by_kind = match kind {
                        PassKind::Store => !s.markdown_only && !s.prompt_only,
                        PassKind::Edit => !s.markdown_only && !s.prompt_only && s.run_on_edit,
                        PassKind::Prompt => s.prompt_only,
                        PassKind::Display => s.markdown_only,
                    };
                    by_kind
                        && s.live()
                        && s.placement.contains(&p)
                        && self.permission.allows(s.source)
                })
                .collect();
            self.pay_compiles(&found);
            self.candidates[slot] = Some(found);
        }
        let list = &self.scripts.list;
        self.candidates[slot]
            .as_deref()
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(|&i| depth_allows(&list[i].script, depth))
            .collect()
    }

    /// Pays, in list order, the compile work of the selected scripts this pass has not paid
    /// for yet, before any of them runs: a pattern compiled by an earlier pass or render costs
    /// the same, so the same inputs stop at the same place. From the first it cannot pay for,
    /// none is paid: the pass ends when it comes to run that one.
    fn pay_compiles(&mut self, selected: &[usize]) {
        let mut short = false;
        for &i in selected {
            if self.paid[i] != Compile::Due {
                continue;
            }
            let work = self.scripts.list[i].compile_work;
            short = short || work > self.steps.left();
            self.paid[i] = match short {
                true => Compile::Unpaid,
                false => {
                    self.steps.spend(work);
                    Compile::Paid
                }
            };
        }
    }

    /// Charges `n` units of compile work to the pass's steps: `false` (all that was left
    /// spent) when it cannot pay them.
    fn pay(&mut self, n: u64) -> bool {
        let left = self.steps.left();
        self.steps.spend(n.min(left));
        n <= left
    }

    /// The pass total (or the render's budget) ran out: the pass ends, once said.
    fn spent(&mut self) {
        if std::mem::replace(&mut self.pass_spent, true) || self.steps.stopped() {
            // Said already, or the render's budget ran out: its `WorkLimit` says so.
            return;
        }
        let total = self.limits.regex_pass_steps;
        self.report(Diagnostic::new(
            DiagnosticKind::RegexLimit,
            None,
            format!(
                "regex scripts: the pass spent its {total} matcher steps; the remaining runs \
                 were skipped"
            ),
        ));
    }

    /// A prompt-pass history item, from the cache when its scripts are pure (SPEC §13.11):
    /// the whole item when its text and script set were seen, else each run that was.
    pub(super) fn cached(
        &mut self,
        text: &str,
        placement: Placement,
        depth: Option<u32>,
        fingerprint: &std::cell::OnceCell<u128>,
    ) -> Option<Arc<str>> {
        let selected = self.selected(PassKind::Prompt, placement, depth);
        if selected.is_empty() || text.is_empty() {
            return None;
        }
        // A host macro callback's answers cannot be known ahead: nothing is reused.
        // Nor when the pass could not pay to compile one of them: a fresh run ends the pass
        // there, and a remembered result must not carry it past that point.
        if self.ctx.host.has_macro_fn()
            || selected
                .iter()
                .any(|&i| self.scripts.list[i].parsed().impure || self.paid[i] == Compile::Unpaid)
        {
            return match self.run_all(text, &selected, None) {
                Cow::Owned(t) => Some(t.into()),
                Cow::Borrowed(_) => None,
            };
        }
        // One-shot hashes of a few words: the environment (context values, placement) and
        // which scripts run.
        let fingerprint = *fingerprint.get_or_init(|| context_fingerprint(self.ctx));
        let env = |parts: &[u64]| {
            let mut buf = [0u8; 16 + 8 * 8];
            buf[..16].copy_from_slice(&fingerprint.to_le_bytes());
            let mut h = twox_hash::XxHash3_128::oneshot(&buf[..16]) ^ placement.number() as u128;
            for chunk in parts.chunks(8) {
                let mut n = 16;
                for p in chunk {
                    buf[n..n + 8].copy_from_slice(&p.to_le_bytes());
                    n += 8;
                }
                buf[..16].copy_from_slice(&h.to_le_bytes());
                h = twox_hash::XxHash3_128::oneshot(&buf[..n]);
            }
            h
        };
        let ids: smallvec::SmallVec<[u64; 16]> = selected.iter().map(|&i| i as u64).collect();
        let hash = crate::keyhash::text_hash(text.as_bytes());
        let key = CacheKey {
            text: hash,
            env: env(&ids),
        };
        if let Some(hit) = self.lookup(key) {
            return hit;
        }
        self.record(key, |run| {
            // Each run on its own (a new message's depth changes the set by one script).
            let mut cur: Option<Arc<str>> = None;
            let mut hash = hash;
            for &i in &selected {
                let now: &str = cur.as_deref().unwrap_or(text);
                if now.is_empty() || run.pass_spent {
                    break;
                }
                let key = CacheKey {
                    text: hash,
                    env: env(&[u64::MAX, i as u64]),
                };
                let out = match run.lookup(key) {
                    Some(hit) => hit,
                    None => {
                        let now = now.to_string();
                        run.record(key, |run| run.run_one(i, &now, None).map(Arc::from))
                    }
                };
                if let Some(out) = out {
                    hash = crate::keyhash::text_hash(out.as_bytes());
                    cur = Some(out);
                }
            }
            cur
        })
    }

    /// A cached result, applied to this pass as if it ran: its steps spent, its diagnostics
    /// reported. `None` when there is none, or when the pass could not afford it now.
    fn lookup(&mut self, key: CacheKey) -> Option<Option<Arc<str>>> {
        let hit = self.scripts.cache.lock().ok()?.map.get(&key).cloned()?;
        if hit.steps > self.steps.left() || self.pass_spent || hit.work > self.work.left() {
            return None;
        }
        self.steps.spend(hit.steps);
        self.work.spend(hit.work);
        for d in hit.diagnostics {
            self.report(d);
        }
        Some(hit.text)
    }

    /// Runs `f` and keeps its result, steps and every diagnostic it reported under `key`,
    /// unless the pass total cut it short (a fresh pass would not give the same).
    fn record(
        &mut self,
        key: CacheKey,
        f: impl FnOnce(&mut Self) -> Option<Arc<str>>,
    ) -> Option<Arc<str>> {
        let (steps_before, work_before) = (self.steps.used(), self.work.used());
        let outer = self.log.replace(Vec::new());
        let out = f(self);
        let log = std::mem::replace(&mut self.log, outer).unwrap_or_default();
        if let Some(outer) = &mut self.log {
            outer.extend(log.iter().cloned());
        }
        // Nor is one whose macros the work budget emptied.
        if !self.pass_spent
            && !self.work_out
            && let Ok(mut cache) = self.scripts.cache.lock()
        {
            if cache.map.len() >= CACHE_ENTRIES {
                cache.map.clear();
            }
            cache.map.insert(
                key,
                Cached {
                    text: out.clone(),
                    diagnostics: log,
                    steps: self.steps.used() - steps_before,
                    work: self.work.used() - work_before,
                },
            );
        }
        out
    }

    /// One text through the selected scripts of a pass.
    pub(super) fn text<'t>(
        &mut self,
        text: &'t str,
        kind: PassKind,
        placement: Placement,
        depth: Option<u32>,
        speaker: Option<&str>,
    ) -> Cow<'t, str> {
        let selected = self.selected(kind, placement, depth);
        self.run_all(text, &selected, speaker)
    }

    fn run_all<'t>(
        &mut self,
        text: &'t str,
        selected: &[usize],
        speaker: Option<&str>,
    ) -> Cow<'t, str> {
        let mut cur: Cow<'t, str> = Cow::Borrowed(text);
        for &i in selected {
            // An empty text is never changed (SPEC §13.2.4).
            if cur.is_empty() || self.pass_spent {
                break;
            }
            if let Some(out) = self.run_one(i, &cur, speaker) {
                cur = Cow::Owned(out);
            }
        }
        cur
    }

    /// Script `i` on `text`: the new text when it changed, with the run's diagnostics.
    fn run_one(&mut self, i: usize, text: &str, speaker: Option<&str>) -> Option<String> {
        match self.run(i, text, speaker) {
            Outcome::Unchanged => None,
            Outcome::Changed(units) => Some(String::from_utf16_lossy(&units)),
            Outcome::Limit(why) => {
                let label = self.scripts.list[i].script.label();
                self.report(
                    Diagnostic::new(
                        DiagnosticKind::RegexLimit,
                        None,
                        format!("{label}{why}; the run was discarded"),
                    )
                    .for_script(Some(i)),
                );
                None
            }
            Outcome::PassSpent => {
                self.spent();
                None
            }
        }
    }

    /// The pattern of script `i` for this run; `Err` when the pass cannot pay to compile it.
    /// A find template's pattern is paid on every use, found in the pass's map or not, so a
    /// cached run (which replays its steps) and a fresh one cost the same.
    fn pattern(&mut self, i: usize) -> Result<Option<Rc<Result<Pattern, String>>>, ()> {
        let scripts = self.scripts;
        let c = &scripts.list[i];
        let (template, escaped) = match &c.parsed().find {
            Find::Fixed(cell) => {
                let compile = || match c.over_budget {
                    true => Err(OVER_BUDGET.to_string()),
                    false => pattern::compile(&c.script.find_regex),
                };
                return Ok(match cell.get_or_init(compile) {
                    Ok(_) => None,
                    Err(e) => Some(Rc::new(Err(e.clone()))),
                });
            }
            Find::Template(t, escaped) => (t, *escaped),
        };
        let mut diags = Vec::new();
        let f = self.expand(i, template, &[], escaped, None, &mut diags);
        for d in diags {
            self.report(d.for_script(Some(i)));
        }
        if f.is_empty() {
            return Ok(Some(Rc::new(Err(
                "the find template expanded to nothing".into()
            ))));
        }
        if !self.pay(pattern::cost(&f).work()) {
            return Err(());
        }
        let compiled = self
            .patterns
            .entry(f)
            .or_insert_with_key(|f| Rc::new(pattern::compile_within(f, &mut self.compile_budget)));
        Ok(Some(compiled.clone()))
    }

    /// Expands a template (SPEC §13.5). A plain one is its text.
    fn expand(
        &mut self,
        i: usize,
        t: &Template,
        values: &[Vec<u16>],
        escape: bool,
        speaker: Option<&str>,
        diags: &mut Vec<Diagnostic>,
    ) -> String {
        match &t.body {
            Body::Plain(pieces) => {
                let mut units = Vec::new();
                for p in pieces {
                    match p {
                        Piece::Text(u) => units.extend_from_slice(u),
                        Piece::Token(k) => units.extend_from_slice(&values[*k]),
                    }
                }
                String::from_utf16_lossy(&units)
            }
            Body::Macros(tree) => {
                let values = values.iter().map(|v| String::from_utf16_lossy(v)).collect();
                let id = format!("script:{}", i + 1);
                let mut work = self.work.clone();
                let engine = self.engine();
                let from = diags.len();
                let out = engine.expand(&mut work, &id, tree, values, escape, speaker, diags);
                self.work_out = engine.work_out();
                self.work = work;
                // Positionless, like every regex diagnostic (SPEC §13.8): the spans would
                // point into the rewritten template, not the field the author wrote.
                let label = self.scripts.list[i].script.label();
                for d in &mut diags[from..] {
                    (d.node, d.span, d.line, d.column) = (None, None, None, None);
                    d.message = format!("{label}{}", d.message);
                }
                out
            }
        }
    }

    /// Script `i` on `text` (SPEC §13.3–§13.6).
    fn run(&mut self, i: usize, text: &str, speaker: Option<&str>) -> Outcome {
        if self.paid[i] == Compile::Unpaid {
            let left = self.steps.left();
            self.steps.spend(left);
            return Outcome::PassSpent;
        }
        let scripts = self.scripts;
        let c = &scripts.list[i];
        let Ok(dynamic) = self.pattern(i) else {
            return Outcome::PassSpent;
        };
        let pattern = match (&c.parsed().find, &dynamic) {
            (Find::Fixed(cell), None) => match cell.get() {
                Some(Ok(p)) => p,
                _ => return Outcome::Unchanged,
            },
            (_, Some(r)) => match r.as_ref() {
                Ok(p) => p,
                Err(e) => {
                    let label = c.script.label();
                    self.report(
                        Diagnostic::new(
                            DiagnosticKind::RegexInvalid,
                            None,
                            format!(
                                "{label}the pattern is invalid ({}); the script does nothing",
                                crate::diagnostic::excerpt(e)
                            ),
                        )
                        .for_script(Some(i)),
                    );
                    return Outcome::Unchanged;
                }
            },
            _ => return Outcome::Unchanged,
        };
        let l = text.chars().map(char::len_utf16).sum::<usize>() as u64;
        let own = self
            .limits
            .regex_run_steps
            .saturating_add(l.saturating_mul(l).saturating_mul(4))
            .min(self.limits.regex_run_steps_max);
        // One read of the meter: the bound and the budget must agree.
        let left = self.steps.left();
        let pass_bound = own > left;
        let budget = own.min(left);
        let mut steps = budget;
        let outcome = self.search(i, pattern, text, l, &mut steps, speaker);
        self.steps.spend(budget - steps);
        match outcome {
            Err(Stop::Steps) if pass_bound => Outcome::PassSpent,
            Err(Stop::Steps) => Outcome::Limit("the run took more than its matcher steps"),
            Err(Stop::Size) => Outcome::Limit("the result would exceed the output limit"),
            Ok(None) => Outcome::Unchanged,
            Ok(Some(out)) => Outcome::Changed(out),
        }
    }

    /// A run's work within `steps`: the prefilter's scan of the text (one step per unit, as
    /// SPEC §13.6.2 allows for skipped positions: a run that finds nothing is not free, so a
    /// pass of many scripts meets its total), then the match loop.
    fn search(
        &mut self,
        i: usize,
        pattern: &Pattern,
        text: &str,
        units_len: u64,
        steps: &mut u64,
        speaker: Option<&str>,
    ) -> Result<Option<Vec<u16>>, Stop> {
        spend(steps, units_len + 1)?;
        let hay = pattern.haystack(text);
        let Some(last_start) = pattern.last_start(&hay) else {
            return Ok(None);
        };
        let units: Vec<u16> = text.encode_utf16().collect();
        let subject = Subject {
            hay: &hay,
            units: &units,
            last_start,
        };
        self.replace_all(i, pattern, subject, steps, speaker)
    }

    /// The match loop: replaces the first match, or every match with `g`.
    fn replace_all(
        &mut self,
        i: usize,
        pattern: &Pattern,
        subject: Subject<'_>,
        steps: &mut u64,
        speaker: Option<&str>,
    ) -> Result<Option<Vec<u16>>, Stop> {
        let Subject {
            hay,
            units,
            last_start,
        } = subject;
        let out_cap = self.limits.output_bytes;
        let scripts = self.scripts;
        let c = &scripts.list[i];
        let mut out: Vec<u16> = Vec::new();
        let (mut pos, mut last) = (0usize, 0usize);
        let mut changed = false;
        // Where matches can start (prefix literals), when the pattern says.
        let mut cursor = pattern::Cursor::default();
        // No match starts after the last required literal (`Pattern::last_start`).
        while pos <= units.len() && pos <= last_start {
            let found = if pattern.has_starts() {
                // Only where a prefix literal occurs, each tried alone.
                let mut found = Ok(None);
                let mut at = pos;
                while let Some(start) = pattern.next_start(hay, &mut cursor, at) {
                    found = pattern.regex.match_at_utf16_bounded(units, start, steps);
                    if !matches!(found, Ok(None)) {
                        break;
                    }
                    at = start + 1;
                }
                found
            } else {
                pattern.regex.find_at_utf16_bounded(units, pos, steps)
            };
            let m = match found {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(regress::StepLimit) => return Err(Stop::Steps),
            };
            let (s, e) = (m.start(), m.end());
            changed = true;
            out.extend_from_slice(&units[last..s]);
            // Values (SPEC §13.4.3), each trimmed (§13.4.4). A trim string with macros expands
            // for every value, as SillyTavern's `filterString` does (its `random` draws in
            // that order); a plain one is its text.
            let parsed = c.parsed();
            let mut values = Vec::with_capacity(parsed.replacement.tokens.len());
            for t in &parsed.replacement.tokens {
                let range = match t {
                    Token::Group(n) => m.group(*n),
                    Token::Named(name) => m.named_group(name),
                };
                let mut v = range.map_or_else(Vec::new, |r| units[r].to_vec());
                // A token costs a step even when its value is empty.
                spend(steps, v.len() as u64 + 1)?;
                for trim in &parsed.trims {
                    let expanded;
                    let pat: &[u16] = match &trim.body {
                        Body::Plain(pieces) => match pieces.first() {
                            Some(Piece::Text(u)) => u,
                            _ => &[],
                        },
                        Body::Macros(_) => {
                            let mut diags = Vec::new();
                            expanded = self
                                .expand(i, trim, &[], false, speaker, &mut diags)
                                .encode_utf16()
                                .collect::<Vec<u16>>();
                            for d in diags {
                                self.report(d.for_script(Some(i)));
                            }
                            &expanded
                        }
                    };
                    let examined = replace::remove_all(&mut v, pat);
                    spend(steps, examined as u64 + 1)?;
                }
                values.push(v);
            }
            match &parsed.replacement.body {
                Body::Plain(pieces) => {
                    for p in pieces {
                        match p {
                            Piece::Text(u) => out.extend_from_slice(u),
                            Piece::Token(k) => out.extend_from_slice(&values[*k]),
                        }
                    }
                }
                Body::Macros(_) => {
                    let mut diags = Vec::new();
                    let text =
                        self.expand(i, &parsed.replacement, &values, false, None, &mut diags);
                    for d in diags {
                        self.report(d.for_script(Some(i)));
                    }
                    out.extend(text.encode_utf16());
                }
            }
            // A unit is at least one UTF-8 byte: over the cap in units is over it in bytes.
            if out.len() > out_cap {
                return Err(Stop::Size);
            }
            last = e;
            if !pattern.global {
                break;
            }
            pos = if e > s {
                e
            } else if pattern.unicode
                && units.get(e).is_some_and(|u| (0xD800..0xDC00).contains(u))
                && units
                    .get(e + 1)
                    .is_some_and(|u| (0xDC00..0xE000).contains(u))
            {
                e + 2
            } else {
                e + 1
            };
        }
        if !changed {
            return Ok(None);
        }
        out.extend_from_slice(&units[last.min(units.len())..]);
        if String::from_utf16_lossy(&out).len() > out_cap {
            return Err(Stop::Size);
        }
        Ok(Some(out))
    }
}

/// The text a run works on: as its prefilters search it, as UTF-16 units, and the unit offset after which no
/// match can start.
struct Subject<'t> {
    /// The text as the pattern's prefilters search it.
    hay: &'t pattern::Haystack<'t>,
    units: &'t [u16],
    last_start: usize,
}

/// Why a run stopped early.
enum Stop {
    Steps,
    Size,
}

/// Counts `n` units of value work as steps.
fn spend(steps: &mut u64, n: u64) -> Result<(), Stop> {
    if n > *steps {
        *steps = 0;
        return Err(Stop::Steps);
    }
    *steps -= n;
    Ok(())
}

/// Runs a pass with at least 1 MiB of stack (on a fresh 4 MiB segment when the thread has
/// less): the matcher recurses per nested lookaround (up to 256) and the macro engine per tag.
/// Compiling needs more and grows its own (`pattern::compile_within`); a bot's usual 2 MiB
/// worker thread has room, so a render allocates nothing here.
pub(super) fn deep<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(1 << 20, 4 << 20, f)
}

/// SPEC §13.2.2.
pub(super) fn depth_allows(s: &RegexScript, depth: Option<u32>) -> bool {
    let Some(d) = depth else {
        return true;
    };
    let d = f64::from(d);
    let below = s.min_depth.is_some_and(|min| min >= -1.0 && d < min);
    let above = s.max_depth.is_some_and(|max| max >= 0.0 && d > max);
    !below && !above
}
