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

// The library's subsystems, public where a host uses their types (the front door below names
// the everyday ones); the rest is the pipeline's inside. docs/architecture.md lists them
// floor by floor.
pub mod activation;
mod assemble;
mod chat;
mod context;
pub mod diagnostic;
mod error;
mod eval;
pub mod greeting;
mod identity;
mod jsjson;
pub mod json;
mod jstext;
mod keyhash;
pub mod layout;
mod limits;
pub mod lore;
mod node;
mod number;
pub mod options;
pub mod passes;
pub mod passthrough;
mod pattern;
mod preset;
pub mod provider;
mod render;
pub mod report;
mod role;
pub mod scripts;
pub mod settings;
mod sillytavern;
mod span;
pub mod stchat;
#[cfg(feature = "store")]
pub mod store;
mod surrogates;
mod syntax;
mod template;
pub mod tokens;
mod work;

// The front door: what a bot's first hour names. Everything else is under its subsystem
// (`stpreset::lore::WiState`, `stpreset::provider::ChatMessage`, ...).
pub use assemble::{Message, Source};
pub use chat::Chat;
pub use context::{Context, ContextItem, MacroFn, MapHost, Role, Tag};
pub use diagnostic::{Diagnostic, DiagnosticKind, Severity};
pub use error::{ContextError, TemplateError};
pub use eval::Expanded;
pub use layout::Layout;
pub use limits::Limits;
pub use lore::{Card, Lorebook};
pub use options::RenderOptions;
/// Sections, tooltips and exclusive groups a preset's author wrote for its nodes (issue 41).
pub use preset::outline;
pub use preset::switch;
pub use preset::{CompiledPreset, Preset, PresetError, PresetNode};
pub use provider::{ProviderOptions, Shape};
pub use render::{Expansion, Rendered, request_options};
#[cfg(feature = "store")]
pub use store::PresetStore;
pub use template::{Template, expand};

/// The README's examples run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, feature = "store"))]
pub struct ReadmeDoctests;
