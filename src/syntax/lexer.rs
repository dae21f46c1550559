//! pest pairs → flat tokens with byte spans. The only place that touches pest.

use pest::Parser;

use pest_derive::Parser;

use super::tree::{Identity, Namespace, Span};

#[derive(Parser)]
#[grammar = "../grammar/template.pest"]
struct TemplateGrammar;

/// TomoriBot predicate namespace (`capability:`, `tool:`, `tool_family:`).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokKind {
    Text,
    Escape(u8),
    Tomori {
        negate: bool,
        ns: Namespace,
        name: Span,
    },
    Comment,
    HashIf,
    HashUnless,
    ValueIf,
    Else,
    CloseIf,
    CloseUnless,
    /// `{{/NAME…`: a scoped closer (SPEC §11.3); `name` is NAME as written.
    ScopedClose {
        name: Span,
    },
    Macro {
        name: Span,
        flags: u8,
    },
    /// `{{time_UTC±N`: the macro `time` with the argument `UTC±N` (its span).
    TimeUtc {
        arg: Span,
    },
    /// `{{.IDENT` or `{{$IDENT` (SPEC §11.5): the variable name's span; `global` for `$`.
    Shorthand {
        global: bool,
        ident: Span,
        flags: u8,
    },
    Open,
    Close,
    Sep,
    Placeholder,
    Compat(Identity),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Token {
    pub kind: TokKind,
    pub span: Span,
}

impl TokKind {
    /// Does this token start a tag that needs a `}}` of its own?
    pub fn opens_tag(self) -> bool {
        matches!(
            self,
            TokKind::Comment
                | TokKind::HashIf
                | TokKind::HashUnless
                | TokKind::ValueIf
                | TokKind::Else
                | TokKind::CloseIf
                | TokKind::CloseUnless
                | TokKind::ScopedClose { .. }
                | TokKind::Macro { .. }
                | TokKind::TimeUtc { .. }
                | TokKind::Shorthand { .. }
                | TokKind::Open
        )
    }
}

/// Tokenizes `source`. Fails only when pest itself gives up (a host-set call limit);
/// the caller then treats the whole source as text.
pub(crate) fn tokenize(source: &str) -> Result<Vec<Token>, ()> {
    let pairs = TemplateGrammar::parse(Rule::template, source).map_err(|_| ())?;
    let bytes = source.as_bytes();
    // Roughly one token per 24 bytes of typical preset text.
    let mut out = Vec::with_capacity(source.len() / 24 + 4);
    // Bytes before `taken` belong to a tag head already emitted: a head is read past its `{{`
    // chunk into the next one, and a TomoriBot opener takes that chunk's `}}` too.
    let mut taken = 0usize;
    for pair in pairs {
        if pair.as_rule() != Rule::chunk {
            continue;
        }
        let (start, end) = {
            let s = pair.as_span();
            (s.start(), s.end())
        };
        // The chunk's text holds none of `{`, `}`, `\`: its mark starts at the first one.
        let mark =
            memchr::memchr3(b'{', b'}', b'\\', &bytes[start..end]).map_or(end, |i| start + i);
        let text_from = start.max(taken);
        if text_from < mark {
            split_text(source, Span::new(text_from, mark), &mut out);
        }
        if mark == end || mark < taken {
            continue;
        }
        let kind = match (bytes[mark], bytes.get(mark + 1)) {
            _ if end - mark == 1 => TokKind::Text,
            (b'\\', Some(&b)) => TokKind::Escape(b),
            (b'}', _) => TokKind::Close,
            (b'{', Some(b'{')) => {
                let (kind, head_end) = head(bytes, mark + 2);
                taken = head_end;
                out.push(Token {
                    kind,
                    span: Span::new(mark, head_end),
                });
                // A simple tag: its text and `}}` came in this chunk (see the grammar).
                if end - mark > 2 {
                    let close = end - 2;
                    if taken < close {
                        split_text(source, Span::new(taken, close), &mut out);
                    }
                    if taken <= close {
                        out.push(Token {
                            kind: TokKind::Close,
                            span: Span::new(close, end),
                        });
                    }
                }
                continue;
            }
            _ => TokKind::Placeholder,
        };
        out.push(Token {
            kind,
            span: Span::new(mark, end),
        });
    }
    Ok(out)
}

/// Flags of a flagged tag (SPEC §11.7): `#` (keep scoped content untrimmed) and the flags
/// SillyTavern reserves without implementing (`!`, `?`, `~`, `>`), which are ignored.
pub(crate) const FLAG_HASH: u8 = 1;
pub(crate) const FLAG_IGNORED: u8 = 2;

fn flag_bits(text: &[u8]) -> u8 {
    let mut bits = 0;
    for &b in text {
        match b {
            b'#' => bits |= FLAG_HASH,
            b'!' | b'?' | b'~' | b'>' => bits |= FLAG_IGNORED,
            _ => {}
        }
    }
    bits
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_flag(b: u8) -> bool {
    matches!(b, b'!' | b'?' | b'~' | b'>' | b'#')
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while b.get(at).is_some_and(|&c| is_ws(c)) {
        at += 1;
    }
    at
}

/// Whether `b[at..]` starts with `word`, ASCII case ignored; the end of the word if so.
fn word(b: &[u8], at: usize, word: &str) -> Option<usize> {
    let end = at + word.len();
    b.get(at..end)
        .filter(|s| s.eq_ignore_ascii_case(word.as_bytes()))
        .map(|_| end)
}

/// A directive keyword is one word: it ends at whitespace or at the end of the tag.
fn kw_end(b: &[u8], at: usize) -> bool {
    b.get(at).is_some_and(|&c| is_ws(c)) || b.get(at..at + 2) == Some(b"}}")
}

/// End of a macro name at `at`: an ASCII letter, then letters, digits, `_`, `-`; `None` if no
/// name starts there.
pub(super) fn name_end(bytes: &[u8], at: usize, limit: usize) -> Option<usize> {
    if at >= limit || !bytes[at].is_ascii_alphabetic() {
        return None;
    }
    let mut end = at + 1;
    while end < limit && (bytes[end].is_ascii_alphanumeric() || matches!(bytes[end], b'_' | b'-')) {
        end += 1;
    }
    Some(end)
}

/// End of a shorthand IDENT at `at`: a name without its trailing `-` (`.x--` is `x` then `--`:
/// a run of `-` counts only when a letter, digit or `_` ends it).
pub(super) fn ident_end(bytes: &[u8], at: usize, limit: usize) -> Option<usize> {
    let mut end = name_end(bytes, at, limit)?;
    while bytes[end - 1] == b'-' {
        end -= 1;
    }
    Some(end)
}

/// The head of a tag whose `{{` ends at `at`: what kind of tag it is and where the head ends
/// (the opener token runs from `{{` to there). Without a recognised head the tag is a plain
/// `{{` (`{{ }}`, `{{#each x}}`) whose braces the builder keeps as literal text.
///
/// The head, as PEG (alternatives in order, each committed once it matches; `ws` is space, tab,
/// CR, LF; `^"x"` ignores ASCII case):
///
/// ```text
/// tag      = "{{" !"{" (time_utc | ws* head?)
/// time_utc = ^"time_utc" ("+" | "-") DIGIT+ &"}}"           legacy, no whitespace (SPEC §11.1)
/// head     = &("." | "$") shorthand
///          | &"/" ("//" | "/" ^"if" kw_end | "/" ^"unless" kw_end | "/" NAME)
///          | &"#" ("#" ^"if" kw_end | "#" ^"unless" kw_end)
///          | &flag flags (shorthand | NAME)
///          | &^"i" (tomori | ^"if" (kw_end | &":") | NAME)
///          | &^"e" (^"else" kw_end | NAME)
///          | NAME
/// kw_end   = &(ws | "}}")
/// tomori   = ^"if" ws+ "!"? (^"capability" | ^"tool_family" | ^"tool") ":" TB_NAME ws* "}}"
/// shorthand = ("." | "$") ws* IDENT
/// flags    = flag (ws* flag)* ws*            flag = "!" | "?" | "~" | ">" | "#"
/// NAME     = ALPHA (ALNUM | "_" | "-")*
/// IDENT    = ALPHA ("-"* (ALNUM | "_"))*
/// TB_NAME  = ALNUM (ALNUM | "_" | "." | "-")*
/// ```
///
/// None of these bytes is `{`, `}` or `\`, so a head lies inside the text of the chunk after
/// `{{`; only a TomoriBot opener reaches further, through that chunk's `}}`.
fn head(b: &[u8], at: usize) -> (TokKind, usize) {
    if let Some(end) = time_utc(b, at) {
        // Skip `time_`: the argument is `UTC±N`.
        return (
            TokKind::TimeUtc {
                arg: Span::new(at + 5, end),
            },
            end,
        );
    }
    let h = skip_ws(b, at);
    let open = (TokKind::Open, h);
    let Some(&first) = b.get(h) else {
        return open;
    };
    match first {
        b'.' | b'$' => shorthand(b, h, 0).unwrap_or(open),
        b'/' => slash(b, h).unwrap_or(open),
        b'#' => {
            if let Some(end) = word(b, h + 1, "if").filter(|&e| kw_end(b, e)) {
                return (TokKind::HashIf, end);
            }
            if let Some(end) = word(b, h + 1, "unless").filter(|&e| kw_end(b, e)) {
                return (TokKind::HashUnless, end);
            }
            flagged(b, h).unwrap_or(open)
        }
        _ if is_flag(first) => flagged(b, h).unwrap_or(open),
        b'i' | b'I' => {
            if let Some(found) = tomori(b, h) {
                return found;
            }
            match word(b, h, "if") {
                Some(end) if kw_end(b, end) || b.get(end) == Some(&b':') => (TokKind::ValueIf, end),
                _ => macro_name(b, h, 0).unwrap_or(open),
            }
        }
        b'e' | b'E' => match word(b, h, "else") {
            Some(end) if kw_end(b, end) => (TokKind::Else, end),
            _ => macro_name(b, h, 0).unwrap_or(open),
        },
        _ => macro_name(b, h, 0).unwrap_or(open),
    }
}

fn time_utc(b: &[u8], at: usize) -> Option<usize> {
    let sign = word(b, at, "time_utc")?;
    if !matches!(b.get(sign), Some(b'+' | b'-')) {
        return None;
    }
    let digits = sign + 1;
    let mut end = digits;
    while b.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    (end > digits && b.get(end..end + 2) == Some(b"}}")).then_some(end)
}

fn macro_name(b: &[u8], at: usize, flags: u8) -> Option<(TokKind, usize)> {
    let end = name_end(b, at, b.len())?;
    let name = Span::new(at, end);
    Some((TokKind::Macro { name, flags }, end))
}

fn shorthand(b: &[u8], at: usize, flags: u8) -> Option<(TokKind, usize)> {
    let global = *b.get(at)? == b'$';
    let from = skip_ws(b, at + 1);
    let end = ident_end(b, from, b.len())?;
    let ident = Span::new(from, end);
    Some((
        TokKind::Shorthand {
            global,
            ident,
            flags,
        },
        end,
    ))
}

/// `{{//`, `{{/if`, `{{/unless`, `{{/NAME` (the head starts with `/` at `at`).
fn slash(b: &[u8], at: usize) -> Option<(TokKind, usize)> {
    let after = at + 1;
    if b.get(after) == Some(&b'/') {
        return Some((TokKind::Comment, after + 1));
    }
    if let Some(end) = word(b, after, "if").filter(|&e| kw_end(b, e)) {
        return Some((TokKind::CloseIf, end));
    }
    if let Some(end) = word(b, after, "unless").filter(|&e| kw_end(b, e)) {
        return Some((TokKind::CloseUnless, end));
    }
    let end = name_end(b, after, b.len())?;
    Some((
        TokKind::ScopedClose {
            name: Span::new(after, end),
        },
        end,
    ))
}

/// A flag run at `at`, then a shorthand or a macro name.
fn flagged(b: &[u8], at: usize) -> Option<(TokKind, usize)> {
    let mut end = at + 1;
    loop {
        let next = skip_ws(b, end);
        match b.get(next) {
            Some(&c) if is_flag(c) => end = next + 1,
            _ => break,
        }
    }
    let flags = flag_bits(&b[at..end]);
    let from = skip_ws(b, end);
    if matches!(b.get(from), Some(b'.' | b'$')) {
        return shorthand(b, from, flags);
    }
    let (kind, end) = macro_name(b, from, flags)?;
    // `{{# if x}}`, `{{!else}}`: a flag run before a directive keyword is unparsable.
    let name = &b[from..end];
    if ["if", "unless", "else"]
        .iter()
        .any(|k| name.eq_ignore_ascii_case(k.as_bytes()))
    {
        return Some((TokKind::Open, end));
    }
    Some((kind, end))
}

/// TomoriBot opener, a complete tag: `{{if [!]capability:NAME}}` (also `tool:`, `tool_family:`).
fn tomori(b: &[u8], at: usize) -> Option<(TokKind, usize)> {
    let after_if = word(b, at, "if")?;
    let mut p = skip_ws(b, after_if);
    if p == after_if {
        return None;
    }
    let negate = b.get(p) == Some(&b'!');
    if negate {
        p += 1;
    }
    // Tried in this order, and committed: `tool_familyx:` does not fall back to `tool`.
    let (ns, after_ns) = [
        ("capability", Namespace::Capability),
        ("tool_family", Namespace::ToolFamily),
        ("tool", Namespace::Tool),
    ]
    .iter()
    .find_map(|&(w, ns)| word(b, p, w).map(|end| (ns, end)))?;
    if b.get(after_ns) != Some(&b':') {
        return None;
    }
    let name_start = after_ns + 1;
    if !b.get(name_start).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    let mut name_end = name_start + 1;
    while b
        .get(name_end)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
    {
        name_end += 1;
    }
    let close = skip_ws(b, name_end);
    if b.get(close..close + 2) != Some(b"}}") {
        return None;
    }
    let name = Span::new(name_start, name_end);
    Some((TokKind::Tomori { negate, ns, name }, close + 2))
}

/// A compatibility placeholder at the start of `rest`, in any ASCII case (SPEC §11.14.1: ST
/// replaces them with `/<USER>/gi`), and its length.
fn compat(rest: &[u8]) -> Option<(TokKind, usize)> {
    const NAMES: [(&[u8], Identity); 5] = [
        (b"<user>", Identity::User),
        (b"<bot>", Identity::Bot),
        (b"<char>", Identity::Char),
        (b"<group>", Identity::Group),
        (b"<charifnotgroup>", Identity::Group),
    ];
    NAMES.iter().find_map(|&(name, who)| {
        rest.get(..name.len())
            .filter(|head| head.eq_ignore_ascii_case(name))
            .map(|_| (TokKind::Compat(who), name.len()))
    })
}

/// Cuts `::` separators and compatibility placeholders (`<USER>`, `<bot>`, ...) out of a text
/// token (see the grammar).
fn split_text(source: &str, span: Span, out: &mut Vec<Token>) {
    let bytes = &source.as_bytes()[span.range()];
    let base = span.start as usize;
    let mut from = 0;
    let mut i = 0;
    while let Some(off) = memchr::memchr2(b':', b'<', &bytes[i..]) {
        let at = i + off;
        let (kind, len) = if bytes[at] == b':' {
            if bytes.get(at + 1) != Some(&b':') {
                i = at + 1;
                continue;
            }
            (TokKind::Sep, 2)
        } else {
            match compat(&bytes[at..]) {
                Some(found) => found,
                None => {
                    i = at + 1;
                    continue;
                }
            }
        };
        if at > from {
            out.push(Token {
                kind: TokKind::Text,
                span: Span::new(base + from, base + at),
            });
        }
        out.push(Token {
            kind,
            span: Span::new(base + at, base + at + len),
        });
        from = at + len;
        i = from;
    }
    if from < bytes.len() {
        out.push(Token {
            kind: TokKind::Text,
            span: Span::new(base + from, base + bytes.len()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(&'static str, String)> {
        tokenize(src)
            .unwrap()
            .into_iter()
            .map(|t| {
                let k = match t.kind {
                    TokKind::Text => "text",
                    TokKind::Escape(_) => "escape",
                    TokKind::Tomori { .. } => "tomori",
                    TokKind::Comment => "comment",
                    TokKind::HashIf => "#if",
                    TokKind::HashUnless => "#unless",
                    TokKind::ValueIf => "if",
                    TokKind::Else => "else",
                    TokKind::CloseIf => "/if",
                    TokKind::CloseUnless => "/unless",
                    TokKind::ScopedClose { .. } => "/name",
                    TokKind::Macro { .. } => "macro",
                    TokKind::TimeUtc { .. } => "time_utc",
                    TokKind::Shorthand { .. } => "shorthand",
                    TokKind::Open => "open",
                    TokKind::Close => "close",
                    TokKind::Sep => "sep",
                    TokKind::Placeholder => "ph",
                    TokKind::Compat(_) => "compat",
                };
                (k, src[t.span.range()].to_string())
            })
            .collect()
    }

    #[test]
    fn brace_runs_open_with_the_last_two() {
        let k = kinds("{{{user}}}");
        assert_eq!(k[0], ("text", "{".into()));
        assert_eq!(k[1], ("macro", "{{user".into()));
        assert_eq!(k[2], ("close", "}}".into()));
        assert_eq!(k[3], ("text", "}".into()));
    }

    #[test]
    fn directive_keywords_need_a_word_end() {
        // SPEC §11.12: `{{if::x}}` and `{{if:x}}` are value-if forms now.
        assert_eq!(kinds("{{if::x}}")[0].0, "if");
        assert_eq!(kinds("{{if:x}}")[0].0, "if");
        assert_eq!(kinds("{{iffy}}")[0].0, "macro");
        assert_eq!(kinds("{{elseif}}")[0].0, "macro");
        assert_eq!(kinds("{{ ELSE }}")[0].0, "else");
        assert_eq!(kinds("{{#if}}")[0].0, "#if");
        assert_eq!(kinds("{{/if x}}")[0].0, "/if");
        assert_eq!(kinds("{{/ifx}}")[0].0, "/name");
    }

    #[test]
    fn scoped_closers_need_a_name_right_after_the_slash() {
        assert_eq!(kinds("{{/setvar}}")[0], ("/name", "{{/setvar".into()));
        assert_eq!(kinds("{{ /getvar::x}}")[0].0, "/name");
        assert_eq!(kinds("{{/ x}}")[0].0, "open");
        assert_eq!(kinds("{{/}}")[0].0, "open");
        assert_eq!(kinds("{{#/x}}")[0].0, "open");
        assert_eq!(kinds("{{/unless}}")[0].0, "/unless");
    }

    #[test]
    fn tomori_openers_are_whole_tags() {
        let t = tokenize("{{IF !Tool_Family:url.fetch-2 }}").unwrap();
        assert_eq!(t.len(), 1);
        match t[0].kind {
            TokKind::Tomori { negate, ns, .. } => {
                assert!(negate);
                assert_eq!(ns, Namespace::ToolFamily);
            }
            other => panic!("{other:?}"),
        }
        // Not of the TomoriBot form: a value condition.
        assert_eq!(kinds("{{if capability:a b}}")[0].0, "if");
    }

    #[test]
    fn placeholders_and_escapes() {
        let k = kinds("\\{user} {tool}} \\\\{ {a b} <USER><user>");
        let want: Vec<(&str, &str)> = vec![
            ("escape", "\\{"),
            ("text", "user"),
            ("text", "}"),
            ("text", " "),
            ("text", "{"),
            ("text", "tool"),
            ("close", "}}"),
            ("text", " "),
            ("text", "\\"),
            ("escape", "\\{"),
            ("text", " "),
            ("text", "{"),
            ("text", "a b"),
            ("text", "}"),
            ("text", " "),
            ("compat", "<USER>"),
            ("compat", "<user>"),
        ];
        let got: Vec<(&str, &str)> = k.iter().map(|(a, b)| (*a, b.as_str())).collect();
        assert_eq!(got, want);
        assert_eq!(kinds("{user}.")[0], ("ph", "{user}".to_string()));
    }

    #[test]
    fn heads_read_past_their_chunk_only_as_far_as_the_grammar_says() {
        // A TomoriBot opener takes its `}}`; nothing is left for a `close` token.
        let k = kinds("a{{if tool:x }}b");
        assert_eq!(k[1], ("tomori", "{{if tool:x }}".into()));
        assert_eq!(k[2], ("text", "b".into()));
        // `time_UTC±N` only right before `}}`; otherwise a plain name.
        assert_eq!(
            kinds("{{time_UTC+2}}")[0],
            ("time_utc", "{{time_UTC+2".into())
        );
        assert_eq!(kinds("{{time_UTC+2 }}")[0], ("macro", "{{time_UTC".into()));
        assert_eq!(kinds("{{ time_UTC+2}}")[0], ("macro", "{{ time_UTC".into()));
        // Shorthand IDENT leaves trailing `-` to what follows.
        assert_eq!(
            kinds("{{. x--}}")[..2],
            [("shorthand", "{{. x".into()), ("text", "--".into())]
        );
        assert_eq!(kinds("{{.}}")[0], ("open", "{{".into()));
        // Flags: before a name, a shorthand, or (unparsable) a directive keyword.
        assert_eq!(kinds("{{! ?x}}")[0], ("macro", "{{! ?x".into()));
        assert_eq!(kinds("{{# .v}}")[0], ("shorthand", "{{# .v".into()));
        assert_eq!(kinds("{{#if.x}}")[0], ("open", "{{#if".into()));
        assert_eq!(kinds("{{#iffy}}")[0], ("macro", "{{#iffy".into()));
        // A head that fails keeps its leading whitespace in the opener.
        assert_eq!(kinds("{{  1}}")[0], ("open", "{{  ".into()));
        // `tool_family` is tried before `tool` and does not fall back to it.
        assert_eq!(kinds("{{if tool_familyx:a}}")[0].0, "if");
    }

    #[test]
    fn separators_and_comments() {
        let k = kinds("{{ // x }}{{a :: b}}");
        assert_eq!(k[0].0, "comment");
        assert!(k.iter().any(|x| x.0 == "sep"));
    }
}
