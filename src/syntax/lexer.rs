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
    // The `{{` of the last opener whose head has not come yet.
    let mut open: Option<usize> = None;
    // Bytes before `taken` belong to an opener already emitted (the whitespace of a plain
    // `{{ `, which the next chunk's text would otherwise repeat).
    let mut taken = 0usize;
    let plain_open = |at: usize, out: &mut Vec<Token>| {
        let end = skip_ws(bytes, at + 2);
        out.push(Token {
            kind: TokKind::Open,
            span: Span::new(at, end),
        });
        end
    };
    for pair in pairs {
        let (start, end) = {
            let s = pair.as_span();
            (s.start(), s.end())
        };
        let rule = pair.as_rule();
        if !matches!(rule, Rule::chunk | Rule::opener | Rule::EOI) {
            // A head: the grammar matches one only right after an opener.
            if let Some(at) = open.take() {
                let kind = classify(rule, bytes, start, end);
                out.push(Token {
                    kind,
                    span: Span::new(at, end),
                });
                taken = end;
            }
            continue;
        }
        if let Some(at) = open.take() {
            taken = plain_open(at, &mut out);
        }
        if rule == Rule::EOI {
            continue;
        }
        // The text holds none of `{`, `}`, `\`: the mark starts at the first one.
        let from = start.max(taken);
        let mark = memchr::memchr3(b'{', b'}', b'\\', &bytes[from..end]).map_or(end, |i| from + i);
        if from < mark {
            split_text(source, Span::new(from, mark), &mut out);
        }
        if mark == end {
            continue;
        }
        let kind = match (bytes[mark], bytes.get(mark + 1)) {
            _ if rule == Rule::opener => {
                open = Some(mark);
                continue;
            }
            _ if end - mark == 1 => TokKind::Text,
            (b'\\', Some(&b)) => TokKind::Escape(b),
            (b'}', _) => TokKind::Close,
            _ => TokKind::Placeholder,
        };
        out.push(Token {
            kind,
            span: Span::new(mark, end),
        });
    }
    if let Some(at) = open {
        plain_open(at, &mut out);
    }
    Ok(out)
}

/// The token of a tag head that the grammar matched as `rule` over `start..end`. The grammar
/// decided the kind; this reads the parts a token carries from the bytes.
fn classify(rule: Rule, b: &[u8], start: usize, end: usize) -> TokKind {
    match rule {
        // Skip `time_`: the argument is `UTC±N`.
        Rule::time_utc => TokKind::TimeUtc {
            arg: Span::new(start + 5, end),
        },
        Rule::tomori => tomori(b, start, end),
        Rule::shorthand => shorthand(b, start, end, 0),
        Rule::comment => TokKind::Comment,
        Rule::hash_if => TokKind::HashIf,
        Rule::hash_unless => TokKind::HashUnless,
        Rule::close_if => TokKind::CloseIf,
        Rule::close_unless => TokKind::CloseUnless,
        Rule::closer => TokKind::ScopedClose {
            name: Span::new(start + 1, end),
        },
        Rule::value_if => TokKind::ValueIf,
        Rule::else_kw => TokKind::Else,
        Rule::flagged => flagged(b, start, end),
        _ => TokKind::Macro {
            name: Span::new(start, end),
            flags: 0,
        },
    }
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

/// A shorthand head `.IDENT` / `$IDENT` (whitespace allowed after the sign) over `at..end`.
fn shorthand(b: &[u8], at: usize, end: usize, flags: u8) -> TokKind {
    TokKind::Shorthand {
        global: b[at] == b'$',
        ident: Span::new(skip_ws(b, at + 1), end),
        flags,
    }
}

/// A flag run, then a shorthand or a macro name, over `at..end`.
fn flagged(b: &[u8], at: usize, end: usize) -> TokKind {
    let from = at
        + b[at..end]
            .iter()
            .take_while(|&&c| is_flag(c) || is_ws(c))
            .count();
    let flags = flag_bits(&b[at..from]);
    if matches!(b[from], b'.' | b'$') {
        return shorthand(b, from, end, flags);
    }
    // `{{# if x}}`, `{{!else}}`: a flag run before a directive keyword is unparsable.
    let name = &b[from..end];
    if ["if", "unless", "else"]
        .iter()
        .any(|k| name.eq_ignore_ascii_case(k.as_bytes()))
    {
        return TokKind::Open;
    }
    TokKind::Macro {
        name: Span::new(from, end),
        flags,
    }
}

/// A TomoriBot opener `if [!]NAMESPACE:NAME }}` over `at..end`.
fn tomori(b: &[u8], at: usize, end: usize) -> TokKind {
    let mut p = skip_ws(b, at + 2);
    let negate = b[p] == b'!';
    if negate {
        p += 1;
    }
    // In the grammar's order: the first namespace word that matches is the one it committed to.
    let (ns, len) = [
        ("capability", Namespace::Capability),
        ("tool_family", Namespace::ToolFamily),
        ("tool", Namespace::Tool),
    ]
    .iter()
    .find(|(w, _)| {
        b.get(p..p + w.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(w.as_bytes()))
    })
    .map_or((Namespace::Tool, 4), |&(w, ns)| (ns, w.len()));
    let name_start = p + len + 1;
    let name_end = name_start
        + b[name_start..end]
            .iter()
            .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
            .count();
    TokKind::Tomori {
        negate,
        ns,
        name: Span::new(name_start, name_end),
    }
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
