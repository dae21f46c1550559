//! A single compiled template: what `stpreset expand` renders.

use std::collections::BTreeMap;

use crate::context::{Context, Host};
use crate::diagnostic::{Diagnostic, DiagnosticKind, Finding};
use crate::error::TemplateError;
use crate::eval::{self, EvalNode, Signals};
use crate::limits::{Limits, OutputBudget};
use crate::syntax::{self, Tree};

/// Node identifier a lone template renders as.
const TEMPLATE_ID: &str = "template";

/// A template compiled once, to render many times.
///
/// ```
/// let t = stpreset::Template::compile("{{#if description}}D{{else}}none{{/if}}");
/// let ctx = stpreset::Context::default();
/// assert_eq!(t.render(&ctx).text, "none");
/// ```
#[derive(Debug)]
pub struct Template {
    tree: Tree,
    findings: Vec<Finding>,
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

/// Which host values a render expanded in surviving body text (SPEC §2.3.3). A preset's
/// assembler drops the matching native blocks; a host assembling on its own can do the same.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expanded {
    /// `{{description}}` was expanded.
    pub description: bool,
    /// `{{personality}}` was expanded.
    pub personality: bool,
    /// `{{persona}}` was expanded.
    pub persona: bool,
    /// `{{scenario}}` was expanded.
    pub scenario: bool,
}

impl Template {
    /// Compiles `source` with the default [`Limits`]. Never fails.
    pub fn compile(source: &str) -> Template {
        Template::compile_with(source, &Limits::default())
    }

    /// Compiles `source` with the given parse limits (block and tag nesting).
    pub fn compile_with(source: &str, limits: &Limits) -> Template {
        let (tree, findings) = syntax::parse(source.into(), limits);
        Template { tree, findings }
    }

    /// Compiles bytes, refusing invalid UTF-8 and files over the default
    /// [`Limits::template_bytes`] before parsing.
    ///
    /// ```
    /// assert!(stpreset::Template::from_bytes(b"ok").is_ok());
    /// assert!(stpreset::Template::from_bytes(b"\xff").is_err());
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Template, TemplateError> {
        let limit = Limits::default().template_bytes;
        if bytes.len() > limit {
            return Err(TemplateError::TooLarge {
                size: bytes.len(),
                limit,
            });
        }
        let text = std::str::from_utf8(bytes).map_err(|e| TemplateError::Utf8 {
            offset: e.valid_up_to(),
        })?;
        Ok(Template::compile(text))
    }

    /// The template's source text.
    pub fn source(&self) -> &str {
        &self.tree.source
    }

    /// Whether the template holds only comments, `{{trim}}` and whitespace.
    pub fn is_comment_only(&self) -> bool {
        self.tree.comment_only
    }

    /// Renders against `ctx`, answering host predicates from `ctx.host`.
    pub fn render(&self, ctx: &Context) -> Expansion {
        self.render_with_host(ctx, &ctx.host)
    }

    /// Renders against `ctx`, answering host predicates from `host`.
    pub fn render_with_host(&self, ctx: &Context, host: &dyn Host) -> Expansion {
        let node = EvalNode {
            id: TEMPLATE_ID,
            tree: &self.tree,
            findings: &self.findings,
        };
        let mut ev = eval::evaluate(std::slice::from_ref(&node), ctx, host);
        let (mut text, signals) = ev
            .nodes
            .pop()
            .map(|n| (n.text, n.signals))
            .unwrap_or_default();
        let cap = ctx.limits.clamped().output_bytes;
        if !OutputBudget::new(cap).spend(&mut text) {
            ev.diagnostics.push(Diagnostic::new(
                DiagnosticKind::LimitReached,
                Some(TEMPLATE_ID),
                format!("output cut at the limit of {cap} bytes"),
            ));
        }
        Expansion {
            text,
            diagnostics: ev.diagnostics,
            variables: ev.variables,
            globals: ev.globals,
            expanded: Expanded {
                description: signals.has(Signals::DESCRIPTION),
                personality: signals.has(Signals::PERSONALITY),
                persona: signals.has(Signals::PERSONA),
                scenario: signals.has(Signals::SCENARIO),
            },
        }
    }
}

/// Compiles and renders `source` in one step.
///
/// ```
/// let ctx = stpreset::Context::default();
/// assert_eq!(stpreset::expand("{{reverse::abc}}", &ctx).text, "cba");
/// ```
pub fn expand(source: &str, ctx: &Context) -> Expansion {
    Template::compile_with(source, &ctx.limits).render(ctx)
}
