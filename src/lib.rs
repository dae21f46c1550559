//! stpreset renders SillyTavern chat-completion presets for chat bots.
//!
//! A preset is imported ([`Preset::from_json`]), compiled once ([`Preset::compile`]) and
//! rendered many times against a host [`Context`] into ordered messages
//! ([`CompiledPreset::render`]). Single templates work the same way ([`Template::compile`]).
//! Rendering never fails: problems become [`Diagnostic`]s. With the default `store` feature,
//! `PresetStore` keeps presets per server in SQLite with a cache of compiled active presets.
//!
//! ```
//! use stpreset::{Context, Template};
//!
//! let mut ctx = Context::default();
//! ctx.user = "Alice".into();
//! let t = Template::compile("{{setvar::mood::calm}}Hi {{user}}, you seem {{getvar::mood}}.");
//! assert_eq!(t.render(&ctx).text, "Hi Alice, you seem calm.");
//! ```
#![deny(missing_docs)]

// pest_derive without its `std` feature (which adds a per-rule stack probe) names `alloc`.
extern crate alloc;

mod activation;
mod assemble;
mod chat;
mod context;
mod diagnostic;
mod error;
mod eval;
mod greeting;
mod identity;
mod jsjson;
mod json;
mod jstext;
mod keyhash;
mod layout;
mod limits;
mod lore;
mod node;
mod number;
mod options;
mod passes;
mod passthrough;
mod pattern;
mod preset;
mod provider;
mod render;
mod report;
mod role;
mod scripts;
mod settings;
mod sillytavern;
mod span;
mod stchat;
#[cfg(feature = "store")]
mod store;
mod surrogates;
mod syntax;
mod template;
mod tokens;
mod work;

pub use activation::{
    DepthLore, ExampleLore, ScanTexts, SeededRandom, WiInput, WiMessage, WiRandom, WiResult,
    activate,
};
pub use assemble::{Message, Source};
pub use chat::Chat;
pub use context::{Context, ContextItem, MacroFn, MapHost, Role, Tag};
pub use diagnostic::{Diagnostic, DiagnosticKind, LoreAt, Severity, terminal_line, terminal_safe};
pub use error::{ContextError, TemplateError};
pub use eval::Expanded;
pub use greeting::FirstMessage;
pub use json::RenderDetails;
pub use layout::{AuthorsNote, Layout, PersonaPosition, UserSettings};
pub use limits::Limits;
pub use lore::{
    Card, CardFormat, DepthPrompt, Effect, EffectKind, GenerationType, LoreError, LoreInput,
    LoreSource, Lorebook, WiSettings, WiState,
};
pub use options::{Budget, Injection, RandomSource, RenderOptions};
pub use passes::{PassKind, Placement, PromptPass, RegexPass, Regexed};
pub use passthrough::{PartMemo, Passthrough};
pub use preset::{CompiledPreset, Preset, PresetError, PresetNode};
pub use provider::{
    CacheTtl, ChatMessage, Names, PostProcessing, ProviderOptions, ReasoningEffort, Shape, Tri,
    Verbosity, convert, request,
};
pub use render::{Expansion, Rendered, request_options};
pub use report::TextReport;
pub use scripts::markdown::display_markdown;
pub use scripts::{RegexScript, ScriptSource, Substitute};
pub use settings::resolve::EffectiveOptions;
pub use settings::{PresetSettings, PresetSettingsUse, SettingsEdit};
pub use stchat::{CHAT_MAX_FILE_BYTES, CHAT_MAX_MESSAGES, st_chat_context};
#[cfg(feature = "store")]
pub use store::{Clock, PresetStore, PresetSummary, StoreError, StoreOptions, SystemClock};
pub use template::{Template, expand};
#[doc(hidden)]
pub use tokens::clear_count_caches;
pub use tokens::{Counter, TokenCounter, Tokenizer};

/// The README's examples run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, feature = "store"))]
pub struct ReadmeDoctests;
