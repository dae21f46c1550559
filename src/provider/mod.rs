//! Provider requests (SPEC §12): a rendered message list becomes the JSON request an OpenAI,
//! Anthropic or Gemini endpoint takes. After assembly (and its history budget), in steps that
//! are pure functions and never fail:
//!
//! 1. [`prepare`](process::prepare): flatten parts, drop empty messages;
//! 2. [`squash`](process::squash_system) adjacent system messages (optional);
//! 3. [`post-process`](process::post_process) with SillyTavern's modes (`none`, `merge`,
//!    `semi`, `strict`, `single`);
//! 4. [`shape`] for the provider;
//! 5. the request's other [`fields`] (model, sampling, reasoning) by model family
//!    ([`models`]), SPEC §14.4.

mod fields;
mod models;
mod options;
mod process;
mod shape;

use serde_json::Value;

pub(crate) use models::gemini_low_temperature;
pub(crate) use models::limits as model_limits;
pub use options::{
    CacheTtl, PostProcessing, ProviderOptions, ReasoningEffort, Shape, Tri, Verbosity,
};

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
    /// Never joined with its neighbours by `squash_system` (SillyTavern's new-chat,
    /// new-example-chat and group-nudge prompts, SPEC §14.5).
    pub keep_apart: bool,
}

impl ChatMessage {
    /// A nameless message that squashes like any other.
    ///
    /// ```
    /// let m = stpreset::provider::ChatMessage::new(stpreset::Role::User, "hi");
    /// assert_eq!((m.text.as_str(), m.name, m.keep_apart), ("hi", None, false));
    /// ```
    pub fn new(role: Role, text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role,
            text: text.into(),
            name: None,
            keep_apart: false,
        }
    }
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

/// Converts `messages` into the messages part of the request of `options.shape` (SPEC
/// §12.1–§12.3), with the request's diagnostics (`EmptyRequest`, `NoUserTurn`). `model` is the
/// context's model (some shapes and role rules depend on it). Options the context left unset
/// take their §12 default; [`request`] adds the other fields.
///
/// ```
/// use stpreset::{provider::ChatMessage, provider::Names, ProviderOptions, Role, Shape, provider::convert};
/// let msg = |role, text: &str| ChatMessage::new(role, text);
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
    if options.squash_system.value() == Some(&true) {
        list = process::squash_system(list);
    }
    let shape = options.shape.unwrap_or_default();
    // o1 takes no system messages (SPEC §14.4 openai rule 3), turned before post-processing
    // as SillyTavern does.
    if shape == Shape::OpenAi && models::openai_o1(model) {
        for m in &mut list {
            if m.role == Role::System {
                m.role = Role::User;
            }
        }
    }
    let mode = options.post_processing.value().copied().unwrap_or_default();
    let speakers = process::Speakers::new(names);
    let list = process::post_process(list, mode, &speakers, &options.placeholder);
    let mut notes = Vec::new();
    let request = match shape {
        Shape::OpenAi => shape::openai(list),
        Shape::Anthropic => shape::anthropic(list, options, &speakers, model, &mut notes),
        Shape::Google => shape::google(list, options, &speakers, model),
    };
    notes.extend(diagnostics(&request, shape));
    (request, notes)
}

/// The whole request body of `options.shape` (SPEC §14.4): [`convert`]'s messages plus the
/// model (`openai`, `anthropic`), sampling, max tokens, seed, choices, stream, reasoning effort,
/// verbosity and thinking as the model family takes them. Options are used as given (unset and
/// `null` are not sent); a rendered preset fills them from its settings first
/// ([`Rendered::to_request`](crate::Rendered::to_request)).
///
/// ```
/// use stpreset::{provider::ChatMessage, provider::Names, ProviderOptions, provider::ReasoningEffort, Role, Shape, provider::request};
/// let mut options = ProviderOptions::default();
/// options.shape = Some(Shape::Anthropic);
/// options.max_tokens = 8000.into();
/// options.reasoning_effort = ReasoningEffort::Medium.into();
/// let messages = [ChatMessage::new(Role::User, "hi")];
/// let (body, _) = request(&messages, &options, &Names::default(), "claude-sonnet-4-5");
/// assert_eq!(body["model"], "claude-sonnet-4-5");
/// assert_eq!(body["max_tokens"], 8000);
/// assert_eq!(body["thinking"]["budget_tokens"], 2000);
/// ```
pub fn request(
    messages: &[ChatMessage],
    options: &ProviderOptions,
    names: &Names,
    model: &str,
) -> (Value, Vec<Diagnostic>) {
    let (mut body, mut diagnostics) = convert(messages, options, names, model);
    let shape = options.shape.unwrap_or_default();
    if let Value::Object(map) = &mut body {
        map.extend(fields::fields(shape, model, options));
        if options.cap_to_model {
            diagnostics.extend(cap_to_model(map, model));
        }
    }
    (body, diagnostics)
}

/// Caps the body's output tokens at the model's maximum (`cap_to_model`, issue 39): the
/// field whichever shape wrote it, and an Anthropic thinking budget kept below it.
fn cap_to_model(map: &mut serde_json::Map<String, Value>, model: &str) -> Option<Diagnostic> {
    let Some(limits) = models::limits(model) else {
        return Some(Diagnostic::new(
            DiagnosticKind::ModelUnknown,
            None,
            format!(
                "model `{}` is not in the model table: its output tokens are sent as asked",
                crate::diagnostic::excerpt(model)
            ),
        ));
    };
    let max = u64::from(limits.output);
    let field = ["max_tokens", "max_completion_tokens"]
        .into_iter()
        .find(|k| map.contains_key(*k));
    let slot = match field {
        Some(k) => map.get_mut(k),
        None => map
            .get_mut("generationConfig")
            .and_then(|g| g.get_mut("maxOutputTokens")),
    }?;
    let field = field.unwrap_or("maxOutputTokens");
    let asked = slot.as_u64().filter(|&n| n > max)?;
    *slot = max.into();
    if let Some(budget) = map
        .get_mut("thinking")
        .and_then(|t| t.get_mut("budget_tokens"))
        .filter(|b| b.as_u64().is_some_and(|b| b >= max))
    {
        *budget = (max - 1).into();
    }
    Some(Diagnostic::new(
        DiagnosticKind::ModelLimit,
        None,
        format!(
            "model `{}` takes at most {max} output tokens: `{field}` {asked} asked, {max} sent",
            crate::diagnostic::excerpt(model)
        ),
    ))
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
