//! Diagnostics: what the engine noticed while parsing, rendering or importing (SPEC §5).

use std::fmt;

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

use crate::syntax::Span;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// Something the author probably did not intend.
    Warning,
    /// Worth knowing; often expected in real presets.
    Info,
}

/// What a diagnostic is about. Spelled in JSON exactly as the variant name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// `{{else}}` with no open block (dropped).
    StrayElse,
    /// A closer with no open block (dropped).
    StrayCloser,
    /// A block omitted whole: bad condition, second else, wrong closer, ...
    MalformedBlock,
    /// A block still open at the end of its text.
    UnclosedBlock,
    /// An opener past the block nesting limit (kept literal).
    NestingLimit,
    /// A capability or tool family the host does not know (false).
    UnknownCondition,
    /// A known macro given unusable arguments (kept literal).
    BadArguments,
    /// A group-chat macro (kept literal).
    UnsupportedMacro,
    /// Depth injections with no chat history to go into.
    NoHistoryForInjection,
    /// A resource limit cut something short.
    LimitReached,
    /// An order entry naming no prompt.
    UnknownOrderReference,
    /// An identifier seen twice (the first wins).
    DuplicateIdentifier,
    /// A macro name not in the catalog (kept literal).
    UnknownMacro,
    /// A marker the host has nothing for.
    UnfilledMarker,
    /// HTML tags in a node (providers do not render HTML).
    HtmlInNode,
    /// Clock macros early in the prompt (they defeat prompt caching).
    CacheUnfriendlyPrefix,
}

impl DiagnosticKind {
    /// The severity every diagnostic of this kind has.
    pub fn severity(self) -> Severity {
        use DiagnosticKind::*;
        match self {
            UnknownMacro | UnfilledMarker | HtmlInNode | CacheUnfriendlyPrefix => Severity::Info,
            _ => Severity::Warning,
        }
    }
}

impl fmt::Display for DiagnosticKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One diagnostic: kind, where (node identifier, byte span, line and column) and a message.
///
/// ```
/// let out = stpreset::expand("A{{else}}B", &stpreset::Context::default());
/// let d = &out.diagnostics[0];
/// assert_eq!(d.kind, stpreset::DiagnosticKind::StrayElse);
/// assert_eq!((d.line, d.column), (Some(1), Some(2)));
/// assert_eq!(d.span, Some((1, 9)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// What the diagnostic is about.
    pub kind: DiagnosticKind,
    /// Identifier of the node the diagnostic is about, if any.
    pub node: Option<String>,
    /// Byte offsets `[start, end)` into the node's content.
    pub span: Option<(u32, u32)>,
    /// 1-based line of `span.0`.
    pub line: Option<u32>,
    /// 1-based column of `span.0`, in bytes.
    pub column: Option<u32>,
    /// One-line explanation.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic without a position (import, assembly, limits).
    pub(crate) fn new(
        kind: DiagnosticKind,
        node: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            kind,
            node: node.map(str::to_string),
            span: None,
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// Adds the byte span and its 1-based line and column.
    pub(crate) fn at(mut self, span: Span, (line, column): (u32, u32)) -> Self {
        self.span = Some((span.start, span.end));
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// The diagnostic's severity (fixed by its kind).
    pub fn severity(&self) -> Severity {
        self.kind.severity()
    }

    /// Renders the diagnostic like a compiler message: a header, `file:line:col`, the source
    /// line and a caret under the span. `file` names where `source` (the node's content) came
    /// from: a template file, or `preset.json#node` for a preset node.
    ///
    /// ```
    /// let src = "x\nA{{else}}B";
    /// let out = stpreset::expand(src, &stpreset::Context::default());
    /// let text = out.diagnostics[0].render("prompt.txt", Some(src));
    /// assert!(text.contains("prompt.txt:2:2"));
    /// assert!(text.contains("A{{else}}B"));
    /// assert!(text.contains(" ^^^^^^^^"));
    /// ```
    pub fn render(&self, file: &str, source: Option<&str>) -> String {
        let sev = match self.severity() {
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let mut out = format!("{sev}[{}]: {}\n", self.kind, self.message);
        match (self.line, self.column) {
            (Some(line), Some(col)) => {
                out.push_str(&format!("  --> {file}:{line}:{col}\n"));
                if let (Some(src), Some((start, end))) = (source, self.span) {
                    push_snippet(&mut out, src, line, start as usize, end as usize);
                }
            }
            _ => out.push_str(&format!("  --> {file}\n")),
        }
        out
    }
}

fn push_snippet(out: &mut String, src: &str, line: u32, start: usize, end: usize) {
    let start = start.min(src.len());
    let line_start = src[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = src[start..].find('\n').map_or(src.len(), |i| start + i);
    let text = &src[line_start..line_end];
    let gutter = line.to_string();
    let pad = " ".repeat(gutter.len());
    // Caret columns count characters so they line up under multi-byte text.
    let lead = src[line_start..start].chars().count();
    let width = src[start..end.clamp(start, line_end)]
        .chars()
        .count()
        .max(1);
    out.push_str(&format!(
        "{pad} |\n{gutter} | {text}\n{pad} | {}{}\n",
        " ".repeat(lead),
        "^".repeat(width)
    ));
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}[{}]", self.severity(), self.kind)?;
        if let Some(node) = &self.node {
            write!(f, " node {node}")?;
        }
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, " at {l}:{c}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl Serialize for Diagnostic {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Diagnostic", 7)?;
        st.serialize_field("severity", &self.severity())?;
        st.serialize_field("kind", &self.kind)?;
        st.serialize_field("node", &self.node)?;
        st.serialize_field("span", &self.span.map(|(a, b)| [a, b]))?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("column", &self.column)?;
        st.serialize_field("message", &self.message)?;
        st.end()
    }
}

/// A diagnostic before it knows its node: kind, span in the node's source, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub kind: DiagnosticKind,
    pub span: Span,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let d = Diagnostic {
            kind: DiagnosticKind::MalformedBlock,
            node: Some("n1".into()),
            span: Some((3, 20)),
            line: Some(1),
            column: Some(4),
            message: "m".into(),
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["severity"], "warning");
        assert_eq!(v["kind"], "MalformedBlock");
        assert_eq!(v["span"], serde_json::json!([3, 20]));
        let info = Diagnostic {
            kind: DiagnosticKind::UnknownMacro,
            node: None,
            span: None,
            line: None,
            column: None,
            message: String::new(),
        };
        let v = serde_json::to_value(&info).unwrap();
        assert_eq!(v["severity"], "info");
        assert!(v["span"].is_null() && v["line"].is_null() && v["column"].is_null());
    }

    #[test]
    fn snippet_points_at_the_span() {
        let mut out = String::new();
        push_snippet(&mut out, "ab\ncdé{{x}}\n", 2, 7, 12);
        assert!(out.contains("2 | cdé{{x}}"), "{out}");
        assert!(out.contains("  |    ^^^^^"), "{out}");
    }
}
