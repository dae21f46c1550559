//! A single compiled template: what `stpreset expand` renders (see `render` for how).

use crate::context::Context;
use crate::error::TemplateError;
use crate::limits::Limits;
use crate::render::{self, CompiledNode, Expansion};

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
    node: CompiledNode,
    /// Lone surrogates replaced in the source before compiling (a `LoneSurrogate` note).
    lone_surrogates: usize,
}

impl Template {
    /// Compiles `source` with the default [`Limits`]. Never fails.
    pub fn compile(source: &str) -> Template {
        Template::compile_with(source, &Limits::default())
    }

    /// Compiles `source` with the given parse limits (block and tag nesting).
    pub fn compile_with(source: &str, limits: &Limits) -> Template {
        Template {
            node: CompiledNode::compile(TEMPLATE_ID, source, limits),
            lone_surrogates: 0,
        }
    }

    /// Notes that `count` lone UTF-16 surrogates were replaced by U+FFFD in the source before
    /// it was compiled (front ends whose strings are UTF-16): each render reports it.
    ///
    /// ```
    /// let t = stpreset::Template::compile("a\u{FFFD}").with_lone_surrogates(1);
    /// let out = t.render(&stpreset::Context::default());
    /// assert_eq!(out.diagnostics[0].kind, stpreset::DiagnosticKind::LoneSurrogate);
    /// ```
    pub fn with_lone_surrogates(mut self, count: usize) -> Template {
        self.lone_surrogates = count;
        self
    }

    /// Compiles bytes, refusing invalid UTF-8 and files over the default
    /// [`Limits::template_bytes`] before parsing. Surrogates written as three bytes (Python's
    /// `surrogatepass`) are read as U+FFFD, with a `LoneSurrogate` note.
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
        let (bytes, lone) = crate::surrogates::repair_text(bytes);
        let text = std::str::from_utf8(&bytes).map_err(|e| TemplateError::Utf8 {
            offset: e.valid_up_to(),
        })?;
        Ok(Template::compile(text).with_lone_surrogates(lone))
    }

    /// The template's source text.
    pub fn source(&self) -> &str {
        &self.node.tree.source
    }

    /// Whether the template holds only comments, `{{trim}}` and whitespace.
    pub fn is_comment_only(&self) -> bool {
        self.node.tree.comment_only
    }

    /// Renders against `ctx` (its options give the limits and the clock).
    pub fn render(&self, ctx: &Context) -> Expansion {
        let mut out = render::template(&self.node, ctx);
        if self.lone_surrogates > 0 {
            out.diagnostics.insert(
                0,
                crate::diagnostic::Diagnostic::lone_surrogates(
                    "the template",
                    self.lone_surrogates,
                ),
            );
        }
        out
    }
}

/// Compiles and renders `source` in one step.
///
/// ```
/// let ctx = stpreset::Context::default();
/// assert_eq!(stpreset::expand("{{reverse::abc}}", &ctx).text, "cba");
/// ```
pub fn expand(source: &str, ctx: &Context) -> Expansion {
    Template::compile_with(source, &ctx.options.limits).render(ctx)
}
