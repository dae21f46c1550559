//! stpreset renders SillyTavern chat-completion presets for chat bots.
//!
//! Templates are parsed once into a compact tree ([`Template::compile`]) and rendered many times
//! against a host [`Context`]. Rendering never fails: problems become [`Diagnostic`]s.
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

mod assemble;
mod context;
mod diagnostic;
mod error;
mod eval;
mod limits;
mod preset;
mod store;
mod syntax;
mod template;

pub use context::{Context, ContextItem, Host, MapHost, Role, Tag, ToolText};
pub use diagnostic::{Diagnostic, DiagnosticKind, Severity};
pub use error::{ContextError, TemplateError};
pub use limits::Limits;
pub use preset::{CompiledPreset, Message, Preset, PresetError, PresetNode, Rendered, Source};
pub use store::{Clock, PresetStore, PresetSummary, StoreError, StoreOptions, SystemClock};
pub use syntax::Span;
pub use template::{Expanded, Expansion, Template, expand};

/// The README's examples run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
