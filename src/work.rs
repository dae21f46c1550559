//! One work budget per render (issue 38): every stage's counted work is also charged to one
//! meter, so the stages' own limits are shares of a single total instead of adding up.
//!
//! A unit is about a nanosecond of this machine kind's CPU: each stage converts its own
//! count (matcher steps, bytes scanned or produced, tests) with a [`Stage`] weight measured in
//! `benches/lore.rs`. Work on chat text (inside [`on_chat`]) also pays from chat text's own
//! share, `Limits::chat_work`. When the meter runs out, each stage behaves as when its own limit runs out
//! (the same inputs are cut at the same place, since the render is single-threaded and every
//! charge is a function of the inputs, cache hits included), and the render gets one
//! [`DiagnosticKind::WorkLimit`] naming the stage that spent most.
//!
//! Hand-written on purpose, as a per-thread meter rather than a handle passed down: every
//! stage reads its limits from the [`Context`](crate::Context) it is handed, several re-enter
//! the pipeline on a copied context (lore's card prompts, a template inside lore), and a
//! render never yields (no `async`, no other render interleaves on the thread). A render that
//! starts inside another (a host callback rendering again) shares the outer render's meter.
//!
//! To charge a new stage: add a [`Stage`] with its weight and keep its counter in an
//! [`Allowance`].

use std::cell::Cell;

use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::limits::Limits;

/// A stage that charges the meter, with what one of its counted units costs in work units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Bytes template evaluation produces (the `work_bytes` count).
    Templates,
    /// Regex script matcher steps, every pass (the `regex_pass_steps` count).
    Regex,
    /// World Info: plain-key steps (bytes scanned, gates and key tests).
    LorePlain,
    /// World Info: regex-key matcher steps.
    LoreRegex,
    /// Counting tiktoken tokens (history budgets, World Info's budget), in work units
    /// already (`tokens::token_work` weighs a text by its shape).
    Tokens,
}

impl Stage {
    const ALL: [Stage; 5] = [
        Stage::Templates,
        Stage::Regex,
        Stage::LorePlain,
        Stage::LoreRegex,
        Stage::Tokens,
    ];

    /// Work units of one counted unit, measured on this machine kind (`benches/lore.rs`'s
    /// `hostile-*` rows; docs/hardening.md): a regex matcher step is about 1.9 ns, a
    /// plain-key step (a byte through the automaton, or 1/32 of a gate or key test) about
    /// 1.3 ns, a produced template byte about 1.2 ns. [`Limits::render_work`]'s default is
    /// sized so that the dearest mix stays under about a second.
    fn weight(self) -> u64 {
        match self {
            Stage::Templates => 1,
            Stage::Regex | Stage::LoreRegex => 2,
            Stage::LorePlain => 1,
            Stage::Tokens => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Stage::Templates => "template evaluation",
            Stage::Regex => "regex scripts",
            Stage::LorePlain => "World Info keys",
            Stage::LoreRegex => "World Info regex keys",
            Stage::Tokens => "token counting",
        }
    }
}

struct Meter {
    active: Cell<bool>,
    left: Cell<u64>,
    /// Inside [`on_chat`]: the work is on chat text, which also pays from `chat_left`.
    chat: Cell<bool>,
    chat_left: Cell<u64>,
    /// The render's budget ran out (a `WorkLimit` is due).
    out: Cell<bool>,
    /// The chat text's share ran out (the `WorkLimit` says so).
    chat_out: Cell<bool>,
    /// The stage that first found the budget spent.
    first_out: Cell<Option<Stage>>,
    spent: [Cell<u64>; Stage::ALL.len()],
}

impl Meter {
    /// What the work being done may still spend.
    fn available(&self) -> u64 {
        match self.chat.get() {
            true => self.left.get().min(self.chat_left.get()),
            false => self.left.get(),
        }
    }

    fn pay(&self, stage: Stage, cost: u64) {
        if !self.active.get() {
            return;
        }
        self.left.set(self.left.get().saturating_sub(cost));
        if self.chat.get() {
            self.chat_left
                .set(self.chat_left.get().saturating_sub(cost));
        }
        let spent = &self.spent[stage as usize];
        spent.set(spent.get().saturating_add(cost));
    }

    /// The work stopped on what [`available`](Self::available) gave it: whichever bound was
    /// the smaller ran out.
    fn ran_out(&self, stage: Stage) {
        if self.first_out.get().is_none() {
            self.first_out.set(Some(stage));
        }
        if self.chat.get() && self.chat_left.get() < self.left.get() {
            self.chat_out.set(true);
        } else {
            self.out.set(true);
        }
    }
}

thread_local! {
    static METER: Meter = const {
        Meter {
            active: Cell::new(false),
            left: Cell::new(u64::MAX),
            chat: Cell::new(false),
            chat_left: Cell::new(u64::MAX),
            out: Cell::new(false),
            chat_out: Cell::new(false),
            first_out: Cell::new(None),
            spent: [const { Cell::new(0) }; Stage::ALL.len()],
        }
    };
}

/// Resets the meter when the outermost render ends, however it ends.
struct Scope;

impl Drop for Scope {
    fn drop(&mut self) {
        METER.with(|m| {
            m.active.set(false);
            m.left.set(u64::MAX);
            m.chat_left.set(u64::MAX);
            m.chat.set(false);
        });
    }
}

/// Runs `f` as one render with `limits.render_work` units, `limits.chat_work` of them for
/// work on chat text. Returns its result and, when the meter ran out, the `WorkLimit`
/// diagnostic to append. Inside another render, `f` shares that render's meter and the outer
/// one reports.
pub(crate) fn render<R>(limits: &Limits, f: impl FnOnce() -> R) -> (R, Option<Diagnostic>) {
    let nested = METER.with(|m| m.active.get());
    if nested {
        return (f(), None);
    }
    let limits = limits.clamped();
    let (total, chat_total) = (limits.render_work, limits.chat_work);
    METER.with(|m| {
        m.active.set(true);
        m.left.set(total);
        m.chat_left.set(chat_total);
        m.chat.set(false);
        m.out.set(false);
        m.chat_out.set(false);
        m.first_out.set(None);
        m.spent.iter().for_each(|c| c.set(0));
    });
    let scope = Scope;
    let out = f();
    let note = METER.with(|m| {
        let (out, chat_out) = (m.out.get(), m.chat_out.get());
        if !out && !chat_out {
            return None;
        }
        let mut spent: Vec<(Stage, u64)> = Stage::ALL
            .iter()
            .zip(&m.spent)
            .map(|(s, c)| (*s, c.get()))
            .filter(|(_, c)| *c > 0)
            .collect();
        // Most first; a tie keeps pipeline order.
        spent.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
        let share = |c: u64| c.saturating_mul(100) / total.max(1);
        // Nothing paid yet: the stage that could not pay is named.
        let (stage, most) = match spent.first() {
            Some(first) => *first,
            None => (m.first_out.get()?, 0),
        };
        let rest = spent.get(1..).unwrap_or_default();
        let rest: Vec<String> = rest
            .iter()
            .map(|(s, c)| format!(", {} {}%", s.name(), share(*c)))
            .collect();
        let what = match (out, chat_out) {
            (true, false) => format!(
                "the render spent its work budget ({total} units, about {} ms)",
                total / 1_000_000
            ),
            (false, _) => format!(
                "the work on chat text spent its share of the render's budget ({chat_total} \
                 units, about {} ms)",
                chat_total / 1_000_000
            ),
            (true, true) => format!(
                "the render spent its work budget ({total} units, about {} ms) and the work on \
                 chat text its share ({chat_total} units)",
                total / 1_000_000
            ),
        };
        Some(Diagnostic::new(
            DiagnosticKind::WorkLimit,
            None,
            format!(
                "{what}; {} spent the most ({}% of the budget{}); the work after that point \
                 was skipped",
                stage.name(),
                share(most),
                rest.concat()
            ),
        ))
    });
    drop(scope);
    (out, note)
}

/// Runs `f` as work on chat text (the history's regex pass, scanning messages for World Info
/// keys, counting the history's tokens): what it spends is also paid from the chat text's
/// share, `Limits::chat_work`, so text a chat user writes cannot spend the whole budget.
pub(crate) fn on_chat<R>(f: impl FnOnce() -> R) -> R {
    let before = METER.with(|m| m.chat.replace(true));
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0;
            METER.with(|m| m.chat.set(before));
        }
    }
    let _restore = Restore(before);
    f()
}

/// Charges `n` units of a stage without a share of its own (token counting, which cannot stop
/// half-way: its caller has a cheap fallback): `false`, and the meter marked spent, when the
/// render cannot pay them. Outside a render, always `true`.
// Token counting is its only caller, and only tiktoken's counts are charged.
#[cfg_attr(not(feature = "tiktoken"), allow(dead_code))]
pub(crate) fn charge(stage: Stage, n: u64) -> bool {
    let cost = n.saturating_mul(stage.weight());
    METER.with(|m| {
        if !m.active.get() {
            return true;
        }
        if cost > m.available() {
            // Once out, out: later texts are not counted either (the same inputs cut at the
            // same text whatever their sizes).
            m.ran_out(stage);
            match m.chat.get() && m.chat_left.get() < m.left.get() {
                true => m.chat_left.set(0),
                false => m.left.set(0),
            }
            return false;
        }
        m.pay(stage, cost);
        true
    })
}

/// A stage's own limit, drawn from the render's meter: what is left is the smaller of the
/// two, and what is spent is charged to both. Stages read [`left`](Self::left) before a unit
/// of work (a regex run, a node), give the unit at most that, and [`spend`](Self::spend) what
/// it used, so hot loops keep a plain local counter.
#[derive(Debug, Clone)]
pub(crate) struct Allowance {
    own: u64,
    used: u64,
    stage: Stage,
}

impl Allowance {
    /// A stage's counter with its own limit `own` (in the stage's unit).
    pub fn new(stage: Stage, own: u64) -> Allowance {
        Allowance {
            own,
            used: 0,
            stage,
        }
    }

    /// Units spent so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    fn meter_left(&self) -> u64 {
        METER.with(|m| m.available()) / self.stage.weight()
    }

    /// Units the stage may still spend.
    pub fn left(&self) -> u64 {
        self.own.min(self.meter_left())
    }

    /// Spends `n` units (callers spend at most [`left`](Self::left)).
    pub fn spend(&mut self, n: u64) {
        self.own = self.own.saturating_sub(n);
        self.used = self.used.saturating_add(n);
        let cost = n.saturating_mul(self.stage.weight());
        METER.with(|m| m.pay(self.stage, cost));
    }

    /// Whether the render's meter, not the stage's own limit, bounds [`left`](Self::left).
    pub fn meter_binds(&self) -> bool {
        self.meter_left() < self.own
    }

    /// The stage stopped because it ran out: `true` when the render's meter, not the stage's
    /// own limit, was the smaller bound (the render then reports one `WorkLimit`, and the
    /// stage should not blame its own limit).
    pub fn stopped(&self) -> bool {
        let render = self.meter_binds();
        if render {
            METER.with(|m| m.ran_out(self.stage));
        }
        render
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(render_work: u64) -> Limits {
        Limits {
            render_work,
            ..Limits::default()
        }
    }

    #[test]
    fn outside_a_render_a_stage_has_its_own_limit() {
        let mut a = Allowance::new(Stage::Regex, 100);
        assert_eq!(a.left(), 100);
        a.spend(40);
        assert_eq!((a.left(), a.used()), (60, 40));
        assert!(!a.stopped());
    }

    #[test]
    fn stages_share_the_meter_and_the_one_that_spent_most_is_named() {
        let (left, note) = render(&limits(1000), || {
            let mut regex = Allowance::new(Stage::Regex, 1_000_000);
            let mut plain = Allowance::new(Stage::LorePlain, 1_000_000);
            // 300 steps at weight 2: 600 units.
            regex.spend(300);
            assert_eq!(plain.left(), 400);
            assert_eq!(regex.left(), 200);
            plain.spend(plain.left());
            assert_eq!(regex.left(), 0);
            assert!(regex.stopped());
            regex.left()
        });
        assert_eq!(left, 0);
        let note = note.expect("the meter ran out");
        assert_eq!(note.kind, DiagnosticKind::WorkLimit);
        assert!(
            note.message
                .contains("regex scripts spent the most (60% of the budget, World Info keys 40%)"),
            "{}",
            note.message
        );
        // The next render starts full, and a stage stopped by its own share reports nothing.
        let ((), note) = render(&limits(1000), || {
            let mut a = Allowance::new(Stage::Templates, 10);
            a.spend(a.left());
            assert!(!a.stopped());
        });
        assert!(note.is_none());
    }

    #[test]
    fn chat_text_pays_from_its_share_and_the_rest_goes_on() {
        let limits = Limits {
            render_work: 1000,
            chat_work: 100,
            ..Limits::default()
        };
        let ((), note) = render(&limits, || {
            let mut regex = Allowance::new(Stage::Regex, 1_000_000);
            on_chat(|| {
                assert_eq!(regex.left(), 50);
                regex.spend(50);
                assert!(regex.stopped());
                assert!(!charge(Stage::Tokens, 100), "the chat's share is spent");
            });
            // Work on other text still has the render's 900 units.
            assert_eq!(regex.left(), 450);
            assert!(charge(Stage::Tokens, 100));
        });
        let note = note.expect("the chat's share ran out").message;
        assert!(
            note.starts_with("the work on chat text spent its share"),
            "{note}"
        );
        assert!(
            note.contains("regex scripts spent the most (10% of the budget, token counting"),
            "{note}"
        );
    }

    #[test]
    fn a_render_inside_a_render_shares_its_meter() {
        let ((), outer) = render(&limits(100), || {
            let ((), inner) = render(&limits(1_000_000), || {
                let mut a = Allowance::new(Stage::Templates, 1000);
                assert_eq!(a.left(), 100);
                a.spend(100);
                assert!(a.stopped());
            });
            assert!(inner.is_none(), "the outer render reports");
        });
        assert!(outer.is_some());
    }
}
