//! The render pipeline (SPEC §2, §4), one path for a lone template and for a compiled preset:
//! compiled nodes → evaluation (two passes, host passes, finishing) → assembly (place → inject
//! → limit) → output. `Template` and `CompiledPreset` only hold what they compiled; every
//! setting comes from the context's [`RenderOptions`](crate::RenderOptions).

use std::collections::BTreeMap;

use crate::assemble::{self, Message, Plan, PromptTokens};
use crate::context::Context;
use crate::diagnostic::{Diagnostic, DiagnosticKind, Finding};
use crate::eval::{self, EvalNode, Expanded};
use crate::limits::{Limits, OutputBudget};
use crate::provider::{self, ChatMessage, Names, ProviderOptions};
use crate::syntax::{self, Tree};

/// One template compiled: its tree and parse findings, under the identifier it renders as.
#[derive(Debug)]
pub(crate) struct CompiledNode {
    pub id: Box<str>,
    pub tree: Tree,
    pub findings: Vec<Finding>,
}

impl CompiledNode {
    pub fn compile(id: &str, source: &str, limits: &Limits) -> CompiledNode {
        let (tree, findings) = syntax::parse(source.into(), limits);
        CompiledNode {
            id: id.into(),
            tree,
            findings,
        }
    }

    fn eval(&self) -> EvalNode<'_> {
        EvalNode {
            id: &self.id,
            tree: &self.tree,
            findings: &self.findings,
        }
    }
}

/// The result of rendering a preset. Its messages borrow the context's text where they pass
/// it through unchanged (chat history, most host items); [`Rendered::into_owned`] detaches it.
///
/// Serialized by hand (`json.rs`: `prompt_tokens` is counted when written); a new field goes
/// there too.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Rendered<'c> {
    /// The ordered messages for the model provider.
    pub messages: Vec<Message<'c>>,
    /// Import, parse, pass-1, pass-2 and assembly diagnostics, in that order.
    pub diagnostics: Vec<Diagnostic>,
    /// Local variables after the render.
    pub variables: BTreeMap<String, String>,
    /// Global variables after the render.
    pub globals: BTreeMap<String, String>,
    /// The prompt's tokens ([`Rendered::prompt_tokens`]), counted when first asked for.
    pub(crate) tokens: Option<PromptTokens>,
    /// Who speaks and which model, for provider requests.
    pub(crate) speakers: Speakers<'c>,
}

/// The context's names and model, as a request needs them.
#[derive(Debug, Clone)]
pub(crate) struct Speakers<'c> {
    user: std::borrow::Cow<'c, str>,
    char: std::borrow::Cow<'c, str>,
    group: std::borrow::Cow<'c, [String]>,
    model: std::borrow::Cow<'c, str>,
}

impl<'c> Speakers<'c> {
    fn of(ctx: &'c Context) -> Self {
        Speakers {
            user: ctx.user.as_str().into(),
            char: ctx.char.as_str().into(),
            group: ctx.group.as_slice().into(),
            model: ctx.model.as_str().into(),
        }
    }

    fn into_owned(self) -> Speakers<'static> {
        Speakers {
            user: self.user.into_owned().into(),
            char: self.char.into_owned().into(),
            group: self.group.into_owned().into(),
            model: self.model.into_owned().into(),
        }
    }
}

/// The result of rendering one template.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Expansion {
    /// The finished text (empty when the template produced only whitespace).
    pub text: String,
    /// Parse, pass-1 and pass-2 diagnostics, in that order.
    pub diagnostics: Vec<Diagnostic>,
    /// Local variables after the render.
    pub variables: BTreeMap<String, String>,
    /// Global variables after the render (the host's, plus what the template set).
    pub globals: BTreeMap<String, String>,
    /// Host values the text expanded (non-empty, in body text that survived the host pass).
    pub expanded: Expanded,
}

/// Renders one template as a lone node (no assembly); the output limit cuts its text.
pub(crate) fn template(node: &CompiledNode, ctx: &Context) -> Expansion {
    let mut ev = eval::evaluate(std::slice::from_ref(&node.eval()), ctx);
    let mut text = ev.texts.pop().unwrap_or_default();
    let cap = ctx.options.limits.clamped().output_bytes;
    if !OutputBudget::new(cap).spend(&mut text) {
        ev.diagnostics.push(Diagnostic::new(
            DiagnosticKind::LimitReached,
            Some(&node.id),
            format!("output cut at the limit of {cap} bytes"),
        ));
    }
    Expansion {
        text,
        diagnostics: ev.diagnostics,
        variables: ev.variables,
        globals: ev.globals,
        expanded: ev.expanded,
    }
}

/// Renders a compiled preset: its evaluated nodes in order, then its assembly plan (whose
/// text indices point into `nodes`).
pub(crate) fn preset<'c>(
    nodes: &[CompiledNode],
    plan: &Plan,
    import: &[Diagnostic],
    ctx: &'c Context,
) -> Rendered<'c> {
    let eval_nodes: Vec<EvalNode<'_>> = nodes.iter().map(CompiledNode::eval).collect();
    let mut ev = eval::evaluate(&eval_nodes, ctx);
    let mut diagnostics = Vec::with_capacity(import.len() + ev.diagnostics.len() + 4);
    diagnostics.extend_from_slice(import);
    diagnostics.extend(ev.diagnostics);
    let (messages, tokens) =
        assemble::assemble(plan, &mut ev.texts, ev.expanded, ctx, &mut diagnostics);
    Rendered {
        messages,
        diagnostics,
        variables: ev.variables,
        globals: ev.globals,
        tokens,
        speakers: Speakers::of(ctx),
    }
}

impl Rendered<'_> {
    /// The same result with every text owned, free of the context it was rendered from (to
    /// keep it after the context is gone, or send it to another thread).
    pub fn into_owned(self) -> Rendered<'static> {
        Rendered {
            messages: self.messages.into_iter().map(Message::into_owned).collect(),
            diagnostics: self.diagnostics,
            variables: self.variables,
            globals: self.globals,
            tokens: self.tokens,
            speakers: self.speakers.into_owned(),
        }
    }

    /// The prompt's tokens under the history budget (SPEC §12.4): 3 + the cost of every
    /// message in [`messages`](Self::messages); `None` without a budget. Counted on the first
    /// call (the budget decides with upper bounds where they suffice; most texts come from the
    /// count cache) and kept, so change `messages` after asking, if at all.
    pub fn prompt_tokens(&self) -> Option<u32> {
        self.tokens.as_ref().map(|t| t.get(&self.messages))
    }

    /// The provider request for these messages (SPEC §12.6), with the request's diagnostics.
    /// Names and model are the rendered context's.
    pub fn to_request(&self, options: &ProviderOptions) -> (serde_json::Value, Vec<Diagnostic>) {
        let messages: Vec<ChatMessage> = self
            .messages
            .iter()
            .map(|m| ChatMessage {
                role: m.role,
                text: m.text().into_owned(),
                name: None,
            })
            .collect();
        let names = Names {
            user: self.speakers.user.to_string(),
            char: self.speakers.char.to_string(),
            group: self.speakers.group.to_vec(),
        };
        provider::convert(&messages, options, &names, &self.speakers.model)
    }
}
