//! How a render runs, beside what it renders (the [`Context`](crate::Context)): resource
//! limits, how depth nodes enter the chat history, and where the time comes from.

use chrono::{DateTime, Utc};
use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::limits::Limits;
use crate::provider::Tri;
use crate::tokens::Counter;

/// How depth nodes and tail items with a depth enter the chat history (SPEC §4.3, §9;
/// `docs/assembly.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Injection {
    /// Appended to the history message at their depth as `\n[System: …]` parts (SPEC §4.3).
    #[default]
    Merge,
    /// New messages inserted into the history at their depth, as SillyTavern does: one per
    /// depth, order group and role, texts joined with `\n`.
    Separate,
}

/// Read from a string only, so a wrong type says what is expected (serde's derived enum
/// reading answers `1` or `[]` with a bare "expected value").
impl<'de> Deserialize<'de> for Injection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Mode;
        impl Visitor<'_> for Mode {
            type Value = Injection;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"merge\" or \"separate\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Injection, E> {
                match v {
                    "merge" => Ok(Injection::Merge),
                    "separate" => Ok(Injection::Separate),
                    _ => Err(E::unknown_variant(v, &["merge", "separate"])),
                }
            }
        }
        d.deserialize_str(Mode)
    }
}

/// The history budget (SPEC §12.4): context fields `max_context_tokens`, `reserve_tokens`,
/// `tokenizer`. Unset, they come from a preset's settings (SPEC §14.5: `openai_max_context`,
/// and `openai_max_tokens` as the reserve); `null` means none. Without a window there is no
/// budget.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Budget {
    /// The model's context window, in tokens.
    pub max_context_tokens: Tri<u32>,
    /// Tokens kept free: the response, and what the budget does not count (tools, provider
    /// additions such as the placeholder, a prefill, name prefixes).
    pub reserve_tokens: Tri<u32>,
    /// How tokens are counted.
    pub counter: Counter,
}

impl Budget {
    /// A budget of `max_context_tokens`, nothing reserved, counted by `auto`.
    pub fn tokens(max_context_tokens: u32) -> Budget {
        Budget {
            max_context_tokens: Tri::Value(max_context_tokens),
            reserve_tokens: Tri::Value(0),
            ..Budget::default()
        }
    }

    /// No budget, whatever a preset says (the context's `"max_context_tokens": null`).
    pub fn none() -> Budget {
        Budget {
            max_context_tokens: Tri::Null,
            ..Budget::default()
        }
    }

    /// The same budget keeping `reserve_tokens` free.
    pub fn with_reserve(mut self, reserve_tokens: u32) -> Budget {
        self.reserve_tokens = Tri::Value(reserve_tokens);
        self
    }

    /// The same budget counted by `counter`.
    pub fn with_counter(mut self, counter: Counter) -> Budget {
        self.counter = counter;
        self
    }
}

/// The render's settings: one value, read by every stage.
///
/// ```
/// use stpreset::{Context, options::Injection, RenderOptions};
/// let mut ctx = Context::default();
/// ctx.options = RenderOptions::default().with_injection(Injection::Separate);
/// ctx.options.limits.output_bytes = 1 << 20;
/// assert_eq!(ctx.options.injection, Injection::Separate);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RenderOptions {
    /// Resource limits (clamped to [`Limits::MAX`] when read).
    pub limits: Limits,
    /// How depth injections enter the history.
    pub injection: Injection,
    /// Read once per render when [`Context::now`](crate::Context::now) is `None`. Hosts
    /// without a system clock set `now` (or a clock of their own) instead.
    pub clock: fn() -> DateTime<Utc>,
    /// The history budget (by default the preset's, SPEC §14.5).
    pub budget: Budget,
    /// Where regex scripts' `random` draws come from (SPEC §13.5.5).
    pub regex_random: RandomSource,
    /// Every random draw of the render returns this number in `[0, 1)` (SPEC §17.3.1):
    /// `{{roll}}` dice are `1 + ⌊x·sides⌋`, `{{random}}` takes item `⌊x·n⌋`, World Info rolls
    /// draw `x`. `None`: the seeded streams.
    pub random: Option<f64>,
}

/// A source of `random` draws for one stream (SPEC §16 "Randomness").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RandomSource {
    /// The stream derived from the context's `seed`.
    #[default]
    Seeded,
    /// Every draw takes the first item (for tests that compare with a fixed expectation).
    First,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            limits: Limits::default(),
            injection: Injection::default(),
            clock: Utc::now,
            budget: Budget::default(),
            regex_random: RandomSource::Seeded,
            random: None,
        }
    }
}

impl RenderOptions {
    /// The same options with another injection mode.
    pub fn with_injection(mut self, injection: Injection) -> Self {
        self.injection = injection;
        self
    }

    /// The same options with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same options reading the time from `clock`.
    pub fn with_clock(mut self, clock: fn() -> DateTime<Utc>) -> Self {
        self.clock = clock;
        self
    }
}
