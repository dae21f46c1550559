//! Character cards and World Info as data (SPEC §15): card import (`card`, with its PNG reader
//! `png`), lorebook import (`book`), key matching (`keys`), the activation settings
//! (`settings`) and the timed-effect state (`state`). The activation call and its place in a
//! render are `activation`'s, above the context and the evaluator they read.
//!
//! Cards and books come from strangers: every size is checked against [`Limits`] before
//! anything is allocated for it, and activation work is linear in the text scanned (§15.8).

pub(crate) mod book;
pub(crate) mod card;
pub(crate) mod json;
pub(crate) mod keys;
mod png;
mod settings;
pub(crate) mod state;

pub(crate) use book::read_lorebooks;
pub use book::{LoreSource, Lorebook};
pub(crate) use card::parse_mes_examples;
pub use card::{Card, CardFormat, DepthPrompt, GroupCard};
pub use settings::{GenerationType, LoreInput, WiSettings};
pub use state::{Effect, EffectKind, WiState};

/// Why a card or a lorebook could not be imported (SPEC §15.10): nothing is half-imported.
///
/// ```
/// let err = stpreset::Lorebook::from_json("B", b"[]", &stpreset::Limits::default()).unwrap_err();
/// assert_eq!(err.kind(), "LorebookInvalid");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
#[non_exhaustive]
pub enum LoreError {
    /// Not a PNG, or a PNG whose chunks do not read (§15.1.2).
    #[error("CardPngInvalid: {0}")]
    CardPngInvalid(String),
    /// A PNG without a `ccv3` or `chara` text chunk (§15.1.3).
    #[error("CardNoMetadata: {0}")]
    CardNoMetadata(String),
    /// The card's JSON does not parse (§15.1.4).
    #[error("CardJsonInvalid: {0}")]
    CardJsonInvalid(String),
    /// JSON that is not a card (§15.1.6).
    #[error("CardNotACard: {0}")]
    CardNotACard(String),
    /// Over a card size limit (§15.8).
    #[error("CardTooLarge: {0}")]
    CardTooLarge(String),
    /// Not a lorebook, or over its size limit (§15.3.1).
    #[error("LorebookInvalid: {0}")]
    LorebookInvalid(String),
}

impl LoreError {
    /// The error's kind as SPEC §15.10 spells it.
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}
