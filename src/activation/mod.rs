//! World Info activation (SPEC §15.4–§15.7): which entries of which books activate for a
//! chat, and where their text goes. A pure function of its inputs: the host passes the
//! timed-effect state and the message position in and gets the new state back. The books,
//! cards, settings and state it reads are `lore`'s (data and import); this folder is what a
//! call and a render do with them:
//!
//! - here: the call's input and output types, [`activate`] and the §15.7 placement walk;
//! - `call`: the engine (entries, scan passes, timed effects, key tests, macro expansion);
//! - `groups`: inclusion groups and their scoring (§15.5.8);
//! - `items`: World Info in a render (the lore a context brings, placed as context items).
//!
//! Work is linear (§15.8): keys and contents are expanded once per call, each (key, segment)
//! pair is tested once (a memo per key remembers how far it has looked), and every test is
//! paid for from the call's step totals.

mod call;
mod entries;
mod groups;
pub(crate) mod items;

pub use entries::{ActivatedEntry, activated_entries};

use std::collections::BTreeMap;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use crate::context::{Context, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind, excerpt};
use crate::limits::Limits;
use crate::lore::{GenerationType, Lorebook, WiSettings, WiState};
use crate::role::Role;
use crate::tokens::TokenCounter;
use call::Call;

/// Texts scanned besides the messages, each by the entries whose `match*` flag selects it,
/// and `inject`, scanned by every entry (SillyTavern's `scan: true` extension prompts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScanTexts {
    /// The user's persona description.
    pub persona: String,
    /// The character's description.
    pub description: String,
    /// The character's personality.
    pub personality: String,
    /// The character's depth prompt.
    pub depth_prompt: String,
    /// The scenario.
    pub scenario: String,
    /// The card's creator notes.
    pub creator_notes: String,
    /// Extra scan-only texts.
    pub inject: Vec<String>,
}

/// One history message as activation scans it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WiMessage<'a> {
    /// The speaker's name (empty: none).
    pub name: &'a str,
    /// The message text.
    pub text: &'a str,
}

/// What one activation call reads besides the books and settings (SPEC §15.4).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WiInput<'a> {
    /// Names, variables, clock and seed for the macros in keys and contents.
    pub context: &'a Context,
    /// The messages, oldest first.
    pub history: Vec<WiMessage<'a>>,
    /// Messages in the conversation up to and including the newest (the timed-effect clock);
    /// `None`: the history's length.
    pub position: Option<u64>,
    /// The generation type, for entries with `triggers`.
    pub generation_type: GenerationType,
    /// Card and persona texts, and extra scan-only texts.
    pub scan: ScanTexts,
    /// The context size the budget is a percentage of; `None`: 3795 (SillyTavern's default).
    pub max_context: Option<u64>,
    /// Decide without starting or ending timed effects.
    pub dry_run: bool,
}

impl<'a> WiInput<'a> {
    /// The context's `DIALOGUE_HISTORY` items (a message without a `name` takes the user's or
    /// the character's by its role, as every SillyTavern message has one) and its card and
    /// persona values as scan texts.
    ///
    /// ```
    /// use stpreset::{Context, ContextItem, Role, Tag, activation::WiInput};
    /// let mut ctx = Context::default();
    /// ctx.user = "Alice".into();
    /// ctx.items.push(ContextItem::new(Some(Tag::DialogueHistory), Role::User, "hi"));
    /// let input = WiInput::new(&ctx);
    /// assert_eq!((input.history[0].name, input.history[0].text), ("Alice", "hi"));
    /// ```
    pub fn new(ctx: &'a Context) -> WiInput<'a> {
        let history = ctx
            .items
            .iter()
            .filter(|i| i.tag == Some(Tag::DialogueHistory))
            .map(|i| WiMessage {
                name: match (&i.name, i.role) {
                    (Some(n), _) => n,
                    (None, Role::User) => &ctx.user,
                    (None, Role::Model) => &ctx.char,
                    (None, Role::System) => "",
                },
                text: &i.text,
            })
            .collect();
        WiInput {
            context: ctx,
            history,
            position: None,
            generation_type: GenerationType::Normal,
            scan: ScanTexts {
                persona: ctx.persona.clone(),
                description: ctx.description.clone(),
                personality: ctx.personality.clone(),
                scenario: ctx.scenario.clone(),
                depth_prompt: ctx
                    .char_depth_prompt
                    .as_ref()
                    .map(|d| d.text.clone())
                    .unwrap_or_default(),
                ..ScanTexts::default()
            },
            max_context: None,
            dry_run: false,
        }
    }
}

/// The random source of activation: group and probability rolls, each a number in `[0, 1)`.
pub trait WiRandom {
    /// The next draw.
    fn draw(&mut self) -> f64;
}

/// The default source: a stream seeded from the context seed and the message position
/// (SPEC §15.6.4), so a render at the same position repeats its draws.
#[derive(Debug, Clone)]
pub struct SeededRandom(Xoshiro256PlusPlus);

impl SeededRandom {
    /// The lore stream of `seed` at message position `position`.
    pub fn new(seed: u64, position: u64) -> SeededRandom {
        SeededRandom(Xoshiro256PlusPlus::seed_from_u64(lore_seed(seed, position)))
    }
}

/// The lore stream's seed: the context seed with the tag `lore` and the position (SPEC §16).
pub(crate) fn lore_seed(seed: u64, position: u64) -> u64 {
    crate::eval::stream_seed(seed ^ position.rotate_left(32), "lore")
}

impl WiRandom for SeededRandom {
    fn draw(&mut self) -> f64 {
        self.0.random::<f64>()
    }
}

/// Text placed at a chat depth (SPEC §15.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DepthLore {
    /// Messages from the end.
    pub depth: u64,
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The entries' texts joined with `\n`.
    pub text: String,
}

/// Text placed with the example dialogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExampleLore {
    /// `top` or `bottom`.
    pub position: &'static str,
    /// The entry's text.
    pub text: String,
}

/// What an activation call gives back (SPEC §15.7), in its JSON order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct WiResult {
    /// Entry names (`BOOK.UID`) in activation order.
    pub activated: Vec<String>,
    /// Text before the character (position 0), joined with `\n`.
    pub before: String,
    /// Text after the character (position 1).
    pub after: String,
    /// Text at chat depths (position 4).
    pub depth: Vec<DepthLore>,
    /// Text with the examples (positions 5 and 6).
    pub examples: Vec<ExampleLore>,
    /// Author's Note top (position 2).
    pub an_top: Vec<String>,
    /// Author's Note bottom (position 3).
    pub an_bottom: Vec<String>,
    /// Outlets by name (position 7).
    pub outlets: BTreeMap<String, String>,
    /// The state to pass to the next call.
    pub state: WiState,
    /// What the call noticed.
    pub diagnostics: Vec<Diagnostic>,
}

/// An activated entry as the placement walk needs it.
#[derive(Debug, Clone)]
pub(crate) struct Activated {
    pub name: String,
    pub book: String,
    pub uid: String,
    pub content: String,
    pub order: i64,
    pub position: i64,
    pub depth: u64,
    pub role: u8,
    pub outlet: String,
}

/// Activates `books` for `input` (SPEC §15.5) and places the result (§15.7).
///
/// ```
/// use stpreset::{Context, ContextItem, Limits, Lorebook, Role, Tag, activation::WiInput, lore::WiSettings, lore::WiState};
/// let book = Lorebook::from_json("w", br#"{"entries": {"0": {"key": ["rain"], "content": "It rains."}}}"#, &Limits::default()).unwrap();
/// let mut ctx = Context::default();
/// ctx.items.push(ContextItem::new(Some(Tag::DialogueHistory), Role::User, "Is it rain?"));
/// let input = WiInput::new(&ctx);
/// let mut rng = stpreset::activation::SeededRandom::new(0, 1);
/// let words = stpreset::tokens::Counter::Builtin(stpreset::tokens::Tokenizer::Words).for_model("");
/// let out = stpreset::activation::activate(&[book], &input, &WiSettings::default(), &WiState::default(), &mut rng, &*words, &Limits::default());
/// assert_eq!(out.activated, ["w.0"]);
/// assert_eq!(out.before, "It rains.");
/// ```
pub fn activate(
    books: &[Lorebook],
    input: &WiInput<'_>,
    settings: &WiSettings,
    state: &WiState,
    random: &mut dyn WiRandom,
    counter: &dyn TokenCounter,
    limits: &Limits,
) -> WiResult {
    let ((activated, state, mut diagnostics), note) = crate::work::render(limits, || {
        run(books, input, settings, state, random, counter, limits)
    });
    diagnostics.extend(note);
    let mut out = place(activated, |a| Some(a.content.clone()), &mut diagnostics);
    out.state = state;
    out.diagnostics = diagnostics;
    out
}

/// The activation without placement: the activated entries in activation order, the new
/// state and the diagnostics (a render regexes each content before placing it).
pub(crate) fn run(
    books: &[Lorebook],
    input: &WiInput<'_>,
    settings: &WiSettings,
    state: &WiState,
    random: &mut dyn WiRandom,
    counter: &dyn TokenCounter,
    limits: &Limits,
) -> (Vec<Activated>, WiState, Vec<Diagnostic>) {
    let limits = limits.clamped();
    let mut call = Call::new(books, input, settings, random, counter, &limits);
    call.start_effects(state);
    call.passes();
    let state = call.end_effects();
    let activated = call
        .activated
        .iter()
        .map(|&i| {
            let e = &call.ents[i];
            Activated {
                name: e.name.clone(),
                book: e.book.to_string(),
                uid: e.entry.uid.to_string(),
                content: e.content.clone().unwrap_or_default(),
                order: e.entry.order,
                position: e.entry.position,
                depth: e.entry.depth,
                role: e.entry.role,
                outlet: e.entry.outlet_name.clone(),
            }
        })
        .collect();
    (activated, state, call.diagnostics)
}

/// SPEC §15.7's walk: non-empty contents by `order` descending (stable on activation order).
/// `text` gives each entry's final text (a render's `WORLD_INFO` scripts); `None` or empty
/// drops it.
pub(crate) fn place(
    mut activated: Vec<Activated>,
    mut text: impl FnMut(&Activated) -> Option<String>,
    diagnostics: &mut Vec<Diagnostic>,
) -> WiResult {
    let mut out = WiResult {
        activated: activated.iter().map(|a| a.name.clone()).collect(),
        before: String::new(),
        after: String::new(),
        depth: Vec::new(),
        examples: Vec::new(),
        an_top: Vec::new(),
        an_bottom: Vec::new(),
        outlets: BTreeMap::new(),
        state: WiState::default(),
        diagnostics: Vec::new(),
    };
    activated.sort_by_key(|a| std::cmp::Reverse(a.order));
    // Unshifted lists are built reversed and turned at the end.
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let mut depth_groups: Vec<(u64, u8, Vec<String>)> = Vec::new();
    let mut unnamed_reported = false;
    for a in &activated {
        if a.content.is_empty() {
            continue;
        }
        let Some(t) = text(a).filter(|t| !t.is_empty()) else {
            continue;
        };
        match a.position {
            0 => before.push(t),
            1 => after.push(t),
            2 => out.an_top.push(t),
            3 => out.an_bottom.push(t),
            4 => match depth_groups
                .iter_mut()
                .find(|(d, r, _)| *d == a.depth && *r == a.role)
            {
                Some(g) => g.2.push(t),
                None => depth_groups.push((a.depth, a.role, vec![t])),
            },
            5 | 6 => out.examples.push(ExampleLore {
                position: if a.position == 5 { "top" } else { "bottom" },
                text: t,
            }),
            7 if a.outlet.is_empty() && !unnamed_reported => {
                unnamed_reported = true;
                diagnostics.push(
                    Diagnostic::new(
                        DiagnosticKind::LoreOutletUnnamed,
                        None,
                        format!(
                            "entry {} is an outlet without a name: placed nowhere",
                            excerpt(&a.name)
                        ),
                    )
                    .in_book(Some(&a.book), Some(&a.uid)),
                );
            }
            7 if a.outlet.is_empty() => {}
            7 => {
                let slot = out.outlets.entry(a.outlet.clone()).or_default();
                if !slot.is_empty() {
                    slot.push('\n');
                }
                slot.push_str(&t);
            }
            _ => {}
        }
    }
    before.reverse();
    after.reverse();
    out.before = before.join("\n");
    out.after = after.join("\n");
    out.an_top.reverse();
    out.an_bottom.reverse();
    out.examples.reverse();
    out.depth = depth_groups
        .into_iter()
        .map(|(depth, role, mut texts)| {
            texts.reverse();
            DepthLore {
                depth,
                role: match role {
                    1 => "user",
                    2 => "assistant",
                    _ => "system",
                },
                text: texts.join("\n"),
            }
        })
        .collect();
    out
}
