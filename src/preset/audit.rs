//! `stpreset audit` (SPEC §6): every node parsed with the rendering tree, reporting structure
//! problems, unknown and unsupported macros anywhere (both branches, conditions, arguments),
//! HTML tags, and clock macros that would change the cached prompt prefix.

use super::Preset;
use crate::diagnostic::{Diagnostic, DiagnosticKind, Finding, excerpt};
use crate::syntax::catalog::MacroKind;
use crate::syntax::tree::CallShape;
use crate::syntax::{self, Span, Tree};

/// HTML element names providers would show as raw markup (XML-style section tags such as
/// `<rules>` are common in presets and read fine by models, so they are not reported).
const HTML_TAGS: &[&str] = &[
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "center",
    "code",
    "details",
    "div",
    "em",
    "font",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "iframe",
    "img",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "script",
    "small",
    "span",
    "strong",
    "style",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "u",
    "ul",
];

impl Preset {
    /// Audits every node. Import diagnostics come first, then per node in preset order.
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [
    ///     {"identifier": "main", "content": "{{time}} <b>{{summary}}</b>{{#if x}}"},
    ///     {"identifier": "chatHistory", "marker": true}
    /// ]}"#).unwrap();
    /// let kinds: Vec<_> = p.audit().iter().map(|d| d.kind.to_string()).collect();
    /// // `x` in the condition is an unknown macro too.
    /// assert_eq!(kinds, ["UnclosedBlock", "CacheUnfriendlyPrefix", "UnknownMacro", "UnknownMacro", "HtmlInNode"]);
    /// ```
    pub fn audit(&self) -> Vec<Diagnostic> {
        let limits = &self.limits;
        let mut out = self.diagnostics.clone();
        let mut before_history = true;
        for node in &self.nodes {
            if node.enabled && node.is_marker() && node.identifier == "chatHistory" {
                before_history = false;
            }
            if node.is_marker() {
                continue;
            }
            let (tree, findings) = syntax::parse(node.content.as_str().into(), limits);
            let at = |kind, span: Span, message: String| {
                Diagnostic::new(kind, Some(&node.identifier), message)
                    .at(span, tree.line_col(span.start))
            };
            for Finding {
                kind,
                span,
                message,
            } in findings
            {
                out.push(at(kind, span, message));
            }
            let prefix = before_history && node.enabled && !node.is_depth();
            for call in tree.reachable_calls() {
                let name = excerpt(tree.text(call.span));
                let problem = match (call.shape, call.kind) {
                    (CallShape::BadArguments, MacroKind::Shorthand(..)) => Some((
                        DiagnosticKind::BadArguments,
                        format!("`{name}`: not a shorthand form (stays literal)"),
                    )),
                    (CallShape::BadArguments, _) => Some((
                        DiagnosticKind::BadArguments,
                        format!("`{name}`: wrong number of arguments (stays literal)"),
                    )),
                    (_, MacroKind::Unknown) => Some((
                        DiagnosticKind::UnknownMacro,
                        format!("`{name}` is not a known macro (stays literal)"),
                    )),
                    (_, kind) if prefix && kind.is_temporal() => Some((
                        DiagnosticKind::CacheUnfriendlyPrefix,
                        format!(
                            "`{name}` before the chat history changes the cached prompt prefix \
                             on every clock tick"
                        ),
                    )),
                    _ => None,
                };
                if let Some((kind, message)) = problem {
                    out.push(at(kind, call.span, message));
                }
            }
            if let Some((span, count)) = html_tags(&tree) {
                out.push(at(
                    DiagnosticKind::HtmlInNode,
                    span,
                    format!("{count} HTML tag(s): providers do not render HTML"),
                ));
            }
        }
        self.audit_anchors(&mut out);
        super::outline::audit(&self.nodes, &mut out);
        crate::passes::audit(&self.scripts, &mut out);
        out
    }

    /// A walked chat history without an enabled `main`: the host's humanizer rules and channel
    /// prompt (and its knowledge items, without `charDescription` or `charPersonality`) will
    /// follow the chat history (SPEC §4.2).
    fn audit_anchors(&self, out: &mut Vec<Diagnostic>) {
        let enabled = |id: &str| self.nodes.iter().any(|n| n.enabled && n.identifier == id);
        if !enabled("chatHistory") || enabled("main") {
            return;
        }
        let knowledge = if enabled("charDescription") || enabled("charPersonality") {
            ""
        } else {
            ", server info, memories, emojis and stickers"
        };
        out.push(Diagnostic::new(
            DiagnosticKind::UnanchoredItems,
            None,
            format!(
                "`main` is not enabled: a host's humanizer rules, channel prompt{knowledge} \
                 will follow the chat history"
            ),
        ));
    }
}

/// The first HTML tag in a node's source and how many there are.
fn html_tags(tree: &Tree) -> Option<(Span, usize)> {
    let src = tree.text(Span::new(0, tree.source.len()));
    let bytes = src.as_bytes();
    let mut first = None;
    let mut count = 0;
    for at in memchr::memchr_iter(b'<', bytes) {
        let name_start = at + 1 + usize::from(bytes.get(at + 1) == Some(&b'/'));
        let name_end = bytes[name_start.min(bytes.len())..]
            .iter()
            .position(|b| !b.is_ascii_alphanumeric())
            .map_or(bytes.len(), |i| name_start + i);
        let name = &src[name_start.min(name_end)..name_end];
        let after = bytes.get(name_end).copied();
        let ends = matches!(after, Some(b'>' | b'/' | b' ' | b'\t' | b'\n'));
        if ends && HTML_TAGS.iter().any(|t| t.eq_ignore_ascii_case(name)) {
            count += 1;
            first.get_or_insert(Span::new(at, name_end + 1));
        }
    }
    first.map(|s| (s, count))
}
