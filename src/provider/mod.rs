//! Provider requests (SPEC §12): a rendered message list becomes the JSON request an OpenAI,
//! Anthropic or Gemini endpoint takes. After assembly (and its history budget), in steps that
//! are pure functions and never fail:
//!
//! 1. [`prepare`](process::prepare): flatten parts, drop empty messages;
//! 2. [`squash`](process::squash_system) adjacent system messages (optional);
//! 3. [`post-process`](process::post_process) with SillyTavern's modes (`none`, `merge`,
//!    `semi`, `strict`, `single`);
//! 4. [`shape`] for the provider.

mod options;
mod process;
mod shape;

use serde_json::Value;

pub use options::{CacheTtl, PostProcessing, ProviderOptions, Shape};

use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::role::Role;

/// A message as the provider step sees it: one text, and a speaker name a host may give
/// (rendered messages never have one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// Who speaks (`Model` is the provider's `assistant`).
    pub role: Role,
    /// The whole text.
    pub text: String,
    /// A speaker name (`example_user`, `example_assistant`, or a person).
    pub name: Option<String>,
}

/// The names the post-processing rules prefix (the context's `user`, `char` and `group`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// The user's name.
    pub user: String,
    /// The character's name.
    pub char: String,
    /// Group members (empty outside a group chat).
    pub group: Vec<String>,
}

/// Converts `messages` into the request of `options.shape` (SPEC §12.1–§12.3), with the
/// request's diagnostics (`EmptyRequest`, `NoUserTurn`). `model` is the context's model (some
/// shapes depend on it).
///
/// ```
/// use stpreset::{ChatMessage, Names, ProviderOptions, Role, Shape, convert};
/// let msg = |role, text: &str| ChatMessage { role, text: text.into(), name: None };
/// let mut options = ProviderOptions::default();
/// options.shape = Some(Shape::Anthropic);
/// let (request, diagnostics) = convert(
///     &[msg(Role::System, "Be kind."), msg(Role::User, "hi")],
///     &options,
///     &Names::default(),
///     "claude-sonnet-4-5",
/// );
/// assert_eq!(request["system"][0]["text"], "Be kind.");
/// assert_eq!(request["messages"][0]["content"][0]["text"], "hi");
/// assert!(diagnostics.is_empty());
/// ```
pub fn convert(
    messages: &[ChatMessage],
    options: &ProviderOptions,
    names: &Names,
    model: &str,
) -> (Value, Vec<Diagnostic>) {
    let mut list = process::prepare(messages.iter().cloned());
    if options.squash_system {
        list = process::squash_system(list);
    }
    let list = process::post_process(list, options.post_processing, names, &options.placeholder);
    let shape = options.shape.unwrap_or_default();
    let request = match shape {
        Shape::OpenAi => shape::openai(list),
        Shape::Anthropic => shape::anthropic(list, options, names, model),
        Shape::Google => shape::google(list, options, names, model),
    };
    let diagnostics = diagnostics(&request, shape);
    (request, diagnostics)
}

/// `EmptyRequest` / `NoUserTurn` (SPEC §12.7).
fn diagnostics(request: &Value, shape: Shape) -> Vec<Diagnostic> {
    let key = match shape {
        Shape::Google => "contents",
        _ => "messages",
    };
    let messages = request[key].as_array().map_or(&[][..], Vec::as_slice);
    if messages.is_empty() {
        return vec![Diagnostic::new(
            DiagnosticKind::EmptyRequest,
            None,
            "the request has no messages",
        )];
    }
    if shape != Shape::OpenAi && !messages.iter().any(|m| m["role"] == "user") {
        return vec![Diagnostic::new(
            DiagnosticKind::NoUserTurn,
            None,
            "the request has no user turn",
        )];
    }
    Vec::new()
}
