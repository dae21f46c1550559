//! pest pairs → flat tokens with byte spans. The only place that touches pest.

use pest::Parser;
use pest::iterators::Pair;

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
    // Roughly one token per 24 bytes of typical preset text.
    let mut out = Vec::with_capacity(source.len() / 24 + 4);
    for pair in pairs {
        let span = span_of(&pair);
        let kind = match pair.as_rule() {
            Rule::text => {
                split_text(source, span, &mut out);
                continue;
            }
            Rule::lone => TokKind::Text,
            Rule::escape => TokKind::Escape(source.as_bytes()[span.start as usize + 1]),
            Rule::close => TokKind::Close,
            Rule::placeholder => TokKind::Placeholder,
            Rule::tag => tag(pair),
            _ => continue,
        };
        out.push(Token { kind, span });
    }
    Ok(out)
}

fn span_of(pair: &Pair<'_, Rule>) -> Span {
    let s = pair.as_span();
    Span::new(s.start(), s.end())
}

/// Flags of a flagged tag (SPEC §11.7): `#` (keep scoped content untrimmed) and the flags
/// SillyTavern reserves without implementing (`!`, `?`, `~`, `>`), which are ignored.
pub(crate) const FLAG_HASH: u8 = 1;
pub(crate) const FLAG_IGNORED: u8 = 2;

fn flag_bits(text: &str) -> u8 {
    let mut bits = 0;
    for b in text.bytes() {
        match b {
            b'#' => bits |= FLAG_HASH,
            b'!' | b'?' | b'~' | b'>' => bits |= FLAG_IGNORED,
            _ => {}
        }
    }
    bits
}

/// Classifies a `tag` by its head.
fn tag(pair: Pair<'_, Rule>) -> TokKind {
    let mut inner = pair.into_inner();
    let Some(mut head) = inner.next() else {
        return TokKind::Open;
    };
    let mut flags = 0;
    if head.as_rule() == Rule::flags {
        flags = flag_bits(head.as_str());
        let Some(next) = inner.next() else {
            return TokKind::Open;
        };
        // `{{# if x}}`, `{{!else}}`: a flag run before a directive keyword is unparsable.
        if next.as_rule() == Rule::name
            && ["if", "unless", "else"]
                .iter()
                .any(|k| next.as_str().eq_ignore_ascii_case(k))
        {
            return TokKind::Open;
        }
        head = next;
    }
    match head.as_rule() {
        Rule::comment => TokKind::Comment,
        Rule::hash_if => TokKind::HashIf,
        Rule::hash_unless => TokKind::HashUnless,
        Rule::close_if => TokKind::CloseIf,
        Rule::close_unless => TokKind::CloseUnless,
        Rule::closer => {
            let s = span_of(&head);
            TokKind::ScopedClose {
                name: Span::new(s.start as usize + 1, s.end as usize),
            }
        }
        Rule::value_if => TokKind::ValueIf,
        Rule::else_kw => TokKind::Else,
        Rule::name => TokKind::Macro {
            name: span_of(&head),
            flags,
        },
        Rule::tomori => tomori(head),
        Rule::shorthand => {
            let mut global = false;
            let mut ident = Span::default();
            for inner in head.into_inner() {
                match inner.as_rule() {
                    Rule::sh_scope => global = inner.as_str() == "$",
                    Rule::sh_ident => ident = span_of(&inner),
                    _ => {}
                }
            }
            TokKind::Shorthand {
                global,
                ident,
                flags,
            }
        }
        Rule::time_utc => {
            let s = span_of(&head);
            // Skip `time_`: the argument is `UTC±N`.
            TokKind::TimeUtc {
                arg: Span::new(s.start as usize + 5, s.end as usize),
            }
        }
        _ => TokKind::Open,
    }
}

fn tomori(pair: Pair<'_, Rule>) -> TokKind {
    let mut negate = false;
    let mut ns = Namespace::Tool;
    let mut name = Span::default();
    for inner in pair.into_inner() {
        match inner.as_rule() {
            Rule::tb_not => negate = true,
            Rule::tb_ns => {
                let s = inner.as_str();
                ns = if s.eq_ignore_ascii_case("capability") {
                    Namespace::Capability
                } else if s.eq_ignore_ascii_case("tool") {
                    Namespace::Tool
                } else {
                    Namespace::ToolFamily
                };
            }
            Rule::tb_name => name = span_of(&inner),
            _ => {}
        }
    }
    TokKind::Tomori { negate, ns, name }
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
    fn separators_and_comments() {
        let k = kinds("{{ // x }}{{a :: b}}");
        assert_eq!(k[0].0, "comment");
        assert!(k.iter().any(|x| x.0 == "sep"));
    }
}
