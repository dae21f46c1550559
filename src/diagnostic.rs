//! Diagnostics: what the engine noticed while parsing, rendering or importing (SPEC §5).

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

use crate::span::Span;

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
    /// A recognised macro stpreset does not model (kept literal). No macro of the catalog is
    /// one any more (the `setvarkey` family is answered); kept for hosts that match on it.
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
    /// A `{{name` with no closing `}}` in its node: it reaches the model as written.
    UnclosedTag,
    /// A macro flag SillyTavern reserves but does not implement (`!`, `?`, `~`, `>`).
    IgnoredFlag,
    /// The history budget counted with an estimate: the exact vocabulary is not built in.
    ApproximateTokenCount,
    /// The fixed messages and the newest history item alone exceed the token budget.
    ContextOverflow,
    /// The history budget dropped older history items.
    HistoryTrimmed,
    /// A provider request without any message.
    EmptyRequest,
    /// An Anthropic or Gemini request with messages but no user turn.
    NoUserTurn,
    /// An Anthropic turn holding only blank text, sent as SillyTavern sends it: the API refuses
    /// it (only the SillyTavern layout keeps blank messages, as ST does).
    BlankTurn,
    /// A preset setting of the wrong type or out of range (ignored, SPEC §14.1).
    PresetSettingIgnored,
    /// Host items that no walked anchor places: they follow the chat history.
    UnanchoredItems,
    /// A node's `{{// @…}}` directive or section header an admin's menu cannot honour: a
    /// reference to no node, an exclusive group of one or with several members on, a header
    /// with text of its own (issue 41).
    DirectiveProblem,
    /// `{{user}}` or `{{char}}` expanded to nothing: the context leaves the name empty.
    EmptyName,
    /// A regex script entry ignored at import: not an object, or a field of the wrong type
    /// (SPEC §13.1).
    RegexScriptInvalid,
    /// A script's pattern does not read or compile (SPEC §13.3.1).
    RegexInvalid,
    /// A step or size bound discarded a run, or ended a pass early (SPEC §13.6).
    RegexLimit,
    /// The host did not allow the preset's regex scripts (SPEC §13.6.1).
    RegexNotAllowed,
    /// Audit: a plain script's depth bound never applies (SPEC §13.7).
    RegexDepthIgnored,
    /// Audit: a valid, enabled script no pass can run (SPEC §13.7).
    RegexNeverRuns,
    /// Input text held lone UTF-16 surrogates, each replaced by U+FFFD (issue 20).
    LoneSurrogate,
    /// A card field of the wrong type, read as empty or its default (SPEC §15.1.7).
    CardFieldInvalid,
    /// A V2/V3 card without a `data` object: only the top-level fields are read (§15.1.6).
    CardNoData,
    /// A lorebook entry field of the wrong type or range, read as its default (SPEC §15.3.3).
    LoreFieldInvalid,
    /// A lorebook entry skipped or replaced at import (SPEC §15.3).
    LoreEntryInvalid,
    /// A second book with a name already used, and other entries: skipped (SPEC §15.4).
    LoreBookDuplicate,
    /// A regex key over its step bound: no match (SPEC §15.5.6).
    LoreRegexLimit,
    /// A World Info limit cut the activation short (SPEC §15.8).
    LoreLimit,
    /// An outlet entry without an outlet name: placed nowhere (SPEC §15.7).
    LoreOutletUnnamed,
    /// Timed effects without the host's message position: the history length stood in (§15.4).
    LorePositionMissing,
    /// Author's Note lore placed at depth 4: stpreset has no Author's Note (SPEC §15.7).
    LoreAuthorsNoteFallback,
    /// A generation type the chat or context cannot honour as asked (a `quiet` one without a
    /// quiet prompt, a `swipe` of a chat that ends with the user's message): what was built
    /// instead is in the message.
    GenerationFallback,
    /// Host items the SillyTavern layout has no place for (it reads the chat history and the
    /// card's fields, SPEC §17.2): left out.
    ItemsIgnored,
    /// A model message of a group chat without a speaker `name` (SPEC §17.2): named `char`.
    MissingSpeakerName,
    /// A group member without a card in `group_cards` (SPEC §18.3): left out of the group's
    /// card fields in the append modes.
    GroupCardMissing,
    /// The render spent its one work budget (`Limits::render_work`, issue 38): the work after
    /// that point was skipped as each stage skips it at its own limit; the message names the
    /// stage that spent most.
    WorkLimit,
    /// A host macro named like a catalog macro (issue 39): the catalog's is used.
    MacroShadowed,
    /// The host's macro callback panicked (issue 39): the macro stays literal.
    HostMacroFailed,
    /// The body asked for more output tokens than the model takes and `cap_to_model` capped
    /// them (issue 39); the message names the model, the asked and the sent value.
    ModelLimit,
    /// `cap_to_model` is on but the model table does not know the model: sent as asked.
    ModelUnknown,
}

impl DiagnosticKind {
    /// The severity every diagnostic of this kind has.
    pub fn severity(self) -> Severity {
        use DiagnosticKind::*;
        match self {
            UnknownMacro
            | UnfilledMarker
            | HtmlInNode
            | CacheUnfriendlyPrefix
            | UnclosedTag
            | IgnoredFlag
            | ApproximateTokenCount
            | HistoryTrimmed
            | UnanchoredItems
            | EmptyName
            | RegexNotAllowed
            | RegexDepthIgnored
            | RegexNeverRuns
            | LoneSurrogate
            | CardNoData
            | LorePositionMissing
            | LoreAuthorsNoteFallback
            | ModelUnknown => Severity::Info,
            _ => Severity::Warning,
        }
    }
}

impl DiagnosticKind {
    /// Whether the kind belongs to SPEC §13 (its diagnostics always carry `script`).
    pub fn is_regex(self) -> bool {
        use DiagnosticKind::*;
        matches!(
            self,
            RegexScriptInvalid
                | RegexInvalid
                | RegexLimit
                | RegexNotAllowed
                | RegexDepthIgnored
                | RegexNeverRuns
        )
    }
}

impl DiagnosticKind {
    /// Whether the kind belongs to World Info (SPEC §15.10: it carries `book` and `entry`).
    pub fn is_lore(self) -> bool {
        use DiagnosticKind::*;
        matches!(
            self,
            LoreFieldInvalid
                | LoreEntryInvalid
                | LoreBookDuplicate
                | LoreRegexLimit
                | LoreLimit
                | LoreOutletUnnamed
                | LorePositionMissing
                | LoreAuthorsNoteFallback
        )
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
    /// The 0-based position of the regex script it is about (SPEC §13.8), for diagnostics of
    /// script runs and their expansions; `None` otherwise.
    pub script: Option<u32>,
    /// For World Info diagnostics (SPEC §15.10): the book, entry and field it is about.
    pub lore: Option<Box<LoreAt>>,
}

/// Where in a lorebook a World Info diagnostic points (SPEC §15.10).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LoreAt {
    /// The book's name.
    pub book: Option<String>,
    /// The entry's uid (or a skipped entry's key or index), as a string.
    pub entry: Option<String>,
    /// The normalised field name (`LoreFieldInvalid` only).
    pub field: Option<String>,
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
            script: None,
            lore: None,
        }
    }

    /// The same diagnostic, about an entry (or the whole book when `entry` is `None`).
    pub(crate) fn in_book(mut self, book: Option<&str>, entry: Option<&str>) -> Self {
        let at = self.lore.get_or_insert_with(Box::default);
        at.book = book.map(str::to_string);
        at.entry = entry.map(str::to_string);
        self
    }

    /// The same diagnostic, about one field of its entry.
    pub(crate) fn field(mut self, field: &str) -> Self {
        self.lore.get_or_insert_with(Box::default).field = Some(field.to_string());
        self
    }

    /// The same diagnostic, about regex script `script` (0-based).
    pub(crate) fn for_script(mut self, script: Option<usize>) -> Self {
        self.script = script.map(|i| u32::try_from(i).unwrap_or(u32::MAX));
        self
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
    /// The output is bounded whatever the input: the snippet is a window of at most a few
    /// dozen characters either side of the span (`…` marks a cut line), long messages are cut,
    /// and control characters are escaped so a preset cannot drive the terminal. A `source`
    /// other than the one the span was measured in gives a wrong snippet, never a panic.
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
        let file = fit_chars(file, MAX_LABEL);
        let file = terminal_line(&file);
        let message = fit_chars(&self.message, MAX_MESSAGE);
        let message = terminal_line(&message);
        let mut out = format!("{sev}[{}]: {message}\n", self.kind);
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

/// Longest file label and message a rendered diagnostic shows (bytes; cut with `…`).
const MAX_LABEL: usize = 300;
const MAX_MESSAGE: usize = 300;
/// Bytes of the source line shown either side of the span, and of the span itself.
const SNIPPET_CONTEXT: usize = 40;
const SNIPPET_SPAN: usize = 80;

/// The largest char boundary at or below `i` (clamped to the string).
fn floor_boundary(s: &str, i: usize) -> usize {
    crate::limits::fit(s, i).len()
}

/// Input text quoted in a diagnostic message (a macro as written, a variable key, an
/// identifier), cut to a short prefix: a message must not repeat a whole argument, or nested
/// tags would make the diagnostics quadratic in the input.
pub(crate) fn excerpt(s: &str) -> Cow<'_, str> {
    fit_chars(s, 60)
}

/// `s` cut to at most `max` bytes at a char boundary, with `…` when cut.
pub(crate) fn fit_chars(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("{}…", &s[..floor_boundary(s, max)]))
    }
}

/// Multi-line text safe to print on a terminal: control characters other than newline and
/// tab (other C0, DEL, C1) become visible escapes (`\u{1b}`), so a preset's text cannot
/// move the cursor, recolour or retitle the terminal of whoever reads the output. Borrowed
/// when nothing needs escaping.
///
/// ```
/// assert_eq!(stpreset::diagnostic::terminal_safe("a\x1b[31mb\n\tc"), "a\\u{1b}[31mb\n\tc");
/// assert!(matches!(stpreset::diagnostic::terminal_safe("plain"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn terminal_safe(s: &str) -> Cow<'_, str> {
    escape_controls(s, |c| c.is_control() && c != '\n' && c != '\t')
}

/// [`terminal_safe`] for text that must stay on one line (identifiers, names, file names,
/// messages): newlines and tabs are escaped too, and so are the Unicode line separators and
/// bidirectional overrides, which can make a label read as something else ("Trojan Source").
///
/// ```
/// assert_eq!(stpreset::diagnostic::terminal_line("id\n### user"), "id\\u{a}### user");
/// assert_eq!(stpreset::diagnostic::terminal_line("a\u{202e}b"), "a\\u{202e}b");
/// ```
pub fn terminal_line(s: &str) -> Cow<'_, str> {
    escape_controls(s, |c| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    })
}

fn escape_controls(s: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escaped(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One snippet line of a source: tabs show as one space (so the caret lines up); other
/// control characters are escaped.
fn snippet_text(s: &str) -> Cow<'_, str> {
    if s.contains('\t') {
        Cow::Owned(terminal_line(&s.replace('\t', " ")).into_owned())
    } else {
        terminal_line(s)
    }
}

/// The source line around `start..end` and a caret under the span. Every search is bounded
/// by the window, so a diagnostic costs the same on a 2 MB line as on a short one.
fn push_snippet(out: &mut String, src: &str, line: u32, start: usize, end: usize) {
    let start = floor_boundary(src, start);
    let end = floor_boundary(src, end.max(start));
    let lo = floor_boundary(src, start.saturating_sub(SNIPPET_CONTEXT));
    let line_start = src[lo..start].rfind('\n').map_or(lo, |i| lo + i + 1);
    let cut_before = line_start > 0 && src.as_bytes()[line_start - 1] != b'\n';
    let span_end = floor_boundary(src, end.min(start + SNIPPET_SPAN));
    let span_end = src[start..span_end]
        .find('\n')
        .map_or(span_end, |i| start + i);
    let hi = floor_boundary(src, span_end + SNIPPET_CONTEXT);
    let line_end = src[span_end..hi].find('\n').map_or(hi, |i| span_end + i);
    let cut_after = line_end < src.len() && src.as_bytes()[line_end] != b'\n';
    let before = snippet_text(&src[line_start..start]);
    let span = snippet_text(&src[start..span_end]);
    let after = snippet_text(&src[span_end..line_end]);
    let (open, close) = (
        if cut_before { "…" } else { "" },
        if cut_after { "…" } else { "" },
    );
    let gutter = line.to_string();
    let pad = " ".repeat(gutter.len());
    // Caret columns count characters so they line up under multi-byte text.
    let lead = open.chars().count() + before.chars().count();
    let width = span.chars().count().max(1);
    out.push_str(&format!(
        "{pad} |\n{gutter} | {open}{before}{span}{after}{close}\n{pad} | {}{}\n",
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
        // Keys in byte order (SPEC §16).
        // `script` only where it means something: regex kinds (null for the list-level ones)
        // and the macro diagnostics of a script's expansions.
        let script = self.script.is_some() || self.kind.is_regex();
        // `book` and `entry` on World Info kinds, `field` where one is named.
        let lore = self.kind.is_lore();
        let at = self.lore.as_deref();
        let field = at.and_then(|a| a.field.as_deref());
        let extra = script as usize + 2 * lore as usize + field.is_some() as usize;
        let mut st = s.serialize_struct("Diagnostic", 7 + extra)?;
        if lore {
            st.serialize_field("book", &at.and_then(|a| a.book.as_deref()))?;
        }
        st.serialize_field("column", &self.column)?;
        if lore {
            st.serialize_field("entry", &at.and_then(|a| a.entry.as_deref()))?;
        }
        if let Some(f) = field {
            st.serialize_field("field", f)?;
        }
        st.serialize_field("kind", &self.kind)?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("message", &self.message)?;
        st.serialize_field("node", &self.node)?;
        if script {
            st.serialize_field("script", &self.script)?;
        }
        st.serialize_field("severity", &self.severity())?;
        st.serialize_field("span", &self.span.map(|(a, b)| [a, b]))?;
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
            script: None,
            lore: None,
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
            script: None,
            lore: None,
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

    #[test]
    fn render_never_panics_on_a_foreign_source() {
        let d = Diagnostic::new(DiagnosticKind::UnknownMacro, Some("n"), "m")
            .at(Span::new(1, 6), (1, 2));
        // Spans measured in another text: inside a multi-byte char, past the end, reversed.
        for src in ["aéééé", "", "é", "ab", "a\n\n\n"] {
            let _ = d.render("f", Some(src));
        }
        let mut reversed = d.clone();
        reversed.span = Some((9, 2));
        let _ = reversed.render("f", Some("aéééé{{x}}"));
    }

    #[test]
    fn snippet_is_a_bounded_window_of_a_long_line() {
        let src = format!("{}{{{{x}}}}{}", "a".repeat(100_000), "b".repeat(100_000));
        let d = Diagnostic::new(DiagnosticKind::UnknownMacro, Some("n"), "m")
            .at(Span::new(100_000, 100_005), (1, 100_001));
        let text = d.render("f", Some(&src));
        assert!(text.len() < 400, "{} bytes", text.len());
        assert!(
            text.contains("| …aaaa") && text.contains("aaaa{{x}}bbbb") && text.contains("bbbb…"),
            "{text}"
        );
        let caret_line = text.lines().last().unwrap();
        let shown = text.lines().nth(3).unwrap();
        let column = |line: &str, pat: &str| line[..line.find(pat).unwrap()].chars().count();
        assert_eq!(column(caret_line, "^"), column(shown, "{{x}}"), "{text}");
    }

    #[test]
    fn control_characters_are_escaped_everywhere() {
        let d = Diagnostic::new(DiagnosticKind::UnknownMacro, Some("n"), "bad \x1b[2J")
            .at(Span::new(0, 5), (1, 1));
        let text = d.render("p.json#a\x1b]0;title\x07", Some("\x1b[31m{{x}}"));
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
        assert!(text.contains("\\u{1b}[31m"), "{text}");
    }

    #[test]
    fn long_messages_and_labels_are_cut() {
        let d = Diagnostic::new(DiagnosticKind::UnknownMacro, None, "m".repeat(10_000));
        let text = d.render(&"f".repeat(10_000), None);
        assert!(text.len() < 800, "{}", text.len());
    }
}
