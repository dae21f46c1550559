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
        }
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
        &self.node.tree.source
    }

    /// Whether the template holds only comments, `{{trim}}` and whitespace.
    pub fn is_comment_only(&self) -> bool {
        self.node.tree.comment_only
    }

    /// Renders against `ctx` (its options give the limits and the clock).
    pub fn render(&self, ctx: &Context) -> Expansion {
        render::template(&self.node, ctx)
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
