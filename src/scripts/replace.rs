//! SPEC §13.4: a replacement's tokens (`$N`, `$<name>`, `{{match}}`), its template, and trim
//! strings. A template with macros is compiled once with each token rewritten to a
//! `stpreset_capture` call, so a value behaves as a macro's output: data, never parsed
//! (§13.5.2). A template without macros (most of them) is assembled without the engine.

use crate::limits::Limits;
use crate::syntax::{self, catalog::SCRIPT_VALUE, tree::Tree};

/// A value a template refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// `$N` (`$0` = the whole match); `usize::MAX` for a number no pattern has.
    Group(usize),
    /// `$<name>`.
    Named(String),
}

/// Template text between tokens, or a token's index in `Template::tokens`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(Vec<u16>),
    Token(usize),
}

/// A compiled replacement or trim string.
#[derive(Debug)]
pub(crate) struct Template {
    pub tokens: Vec<Token>,
    pub body: Body,
}

#[derive(Debug)]
pub(crate) enum Body {
    /// No macros: text and tokens, assembled as UTF-16.
    Plain(Vec<Piece>),
    /// Expanded by the macro engine; tokens are `stpreset_capture::i` calls.
    Macros(Box<Tree>),
}

/// Whether text may hold something the macro engine would change: braces, escapes,
/// compatibility placeholders (`<USER>`, any case).
pub(crate) fn has_macros(s: &str) -> bool {
    s.contains(['{', '}', '\\']) || {
        let lower = s.to_ascii_lowercase();
        ["<user>", "<bot>", "<char>", "<group>", "<charifnotgroup>"]
            .iter()
            .any(|p| lower.contains(p))
    }
}

/// Every `{{match}}` (ASCII case-insensitive, exactly these 9 characters) becomes `$0`
/// (SPEC §13.4.1).
fn match_to_zero(s: &str) -> std::borrow::Cow<'_, str> {
    const M: &[u8] = b"{{match}}";
    let b = s.as_bytes();
    let hit = |i: usize| {
        b.get(i..i + M.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(M))
    };
    if !(0..b.len()).any(hit) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        if hit(i) {
            out.push_str(&s[last..i]);
            out.push_str("$0");
            i += M.len();
            last = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[last..]);
    out.into()
}

/// Cuts `s` into text and tokens (SPEC §13.4.2), one scan left to right.
fn scan(s: &str) -> (Vec<Token>, Vec<(bool, std::ops::Range<usize>)>) {
    let b = s.as_bytes();
    let mut tokens = Vec::new();
    // (is_token, range in s): a token's range is its index in `tokens` (start..start).
    let mut parts = Vec::new();
    let (mut i, mut last) = (0, 0);
    while i < b.len() {
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let token = if digits > 0 {
            let n = s[i + 1..i + 1 + digits]
                .parse::<usize>()
                .unwrap_or(usize::MAX);
            Some((Token::Group(n), 1 + digits))
        } else if b.get(i + 1) == Some(&b'<') {
            match s[i + 2..].find('>') {
                Some(0) | None => None,
                Some(end) => Some((Token::Named(s[i + 2..i + 2 + end].to_string()), end + 3)),
            }
        } else {
            None
        };
        match token {
            Some((t, len)) => {
                if last < i {
                    parts.push((false, last..i));
                }
                parts.push((true, tokens.len()..tokens.len()));
                tokens.push(t);
                i += len;
                last = i;
            }
            None => i += 1,
        }
    }
    if last < b.len() {
        parts.push((false, last..b.len()));
    }
    (tokens, parts)
}

impl Template {
    /// A replacement string: `{{match}}` and tokens, then macros.
    pub fn replacement(source: &str, limits: &Limits) -> Template {
        let source = match_to_zero(source);
        let (tokens, parts) = scan(&source);
        let text = |r: &std::ops::Range<usize>| &source[r.clone()];
        let macros = parts.iter().any(|(tok, r)| !tok && has_macros(text(r)));
        let body = if macros {
            let mut rewritten = String::with_capacity(source.len() + tokens.len() * 24);
            for (tok, r) in &parts {
                if *tok {
                    rewritten.push_str(&format!("{{{{{SCRIPT_VALUE}::{}}}}}", r.start));
                } else {
                    rewritten.push_str(text(r));
                }
            }
            Body::Macros(Box::new(syntax::parse(rewritten.into(), limits).0))
        } else {
            Body::Plain(
                parts
                    .iter()
                    .map(|(tok, r)| match tok {
                        true => Piece::Token(r.start),
                        false => Piece::Text(text(r).encode_utf16().collect()),
                    })
                    .collect(),
            )
        };
        Template { tokens, body }
    }

    /// A template without tokens: a trim string or a find template.
    pub fn text(source: &str, limits: &Limits) -> Template {
        let body = if has_macros(source) {
            Body::Macros(Box::new(syntax::parse(source.into(), limits).0))
        } else {
            Body::Plain(vec![Piece::Text(source.encode_utf16().collect())])
        };
        Template {
            tokens: Vec::new(),
            body,
        }
    }

    /// Whether expanding it can give different output for the same inputs, or read what the
    /// cache's context fingerprint leaves out: the history (`lastMessage`) and the host's
    /// capability and tool facts (TomoriBot blocks). Then prompt-pass results are not cached
    /// (SPEC §13.11).
    pub fn impure(&self) -> bool {
        use crate::syntax::catalog::MacroKind::*;
        match &self.body {
            Body::Plain(_) => false,
            Body::Macros(tree) => {
                tree.calls.iter().any(|c| {
                    c.kind.is_temporal()
                        || matches!(
                            c.kind,
                            Random | Pick | Roll | LastMessage | LastUserMessage | LastCharMessage
                        )
                }) || tree
                    .blocks
                    .iter()
                    .any(|b| matches!(b.kind, crate::syntax::tree::BlockKind::Tomori { .. }))
            }
        }
    }
}

/// Removes every occurrence of `pat` from `value`, left to right (JavaScript's `replaceAll`
/// with `""`), in one pass (Knuth–Morris–Pratt: a periodic trim string on a long value must
/// not cost their product). Returns the units examined, which the caller counts as steps.
pub(crate) fn remove_all(value: &mut Vec<u16>, pat: &[u16]) -> usize {
    if pat.is_empty() || value.len() < pat.len() {
        return value.len() + pat.len();
    }
    // fail[i]: length of the longest proper prefix of pat[..=i] that is also its suffix.
    let mut fail = vec![0usize; pat.len()];
    let mut k = 0;
    for i in 1..pat.len() {
        while k > 0 && pat[i] != pat[k] {
            k = fail[k - 1];
        }
        if pat[i] == pat[k] {
            k += 1;
        }
        fail[i] = k;
    }
    let mut out = Vec::with_capacity(value.len());
    let mut k = 0;
    for &u in value.iter() {
        while k > 0 && u != pat[k] {
            k = fail[k - 1];
        }
        out.push(u);
        if u == pat[k] {
            k += 1;
        }
        if k == pat.len() {
            // A whole occurrence: drop it; the next search starts after it (no overlap).
            out.truncate(out.len() - pat.len());
            k = 0;
        }
    }
    let examined = 2 * value.len() + pat.len();
    *value = out;
    examined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_scan_once_left_to_right() {
        let (t, _) = scan("[$01][$10][$<w>][$$][$<>][$< $<>]$99999999999999999999999");
        assert_eq!(
            t,
            vec![
                Token::Group(1),
                Token::Group(10),
                Token::Named("w".into()),
                Token::Named(" $<".into()),
                Token::Group(usize::MAX),
            ]
        );
        assert_eq!(match_to_zero("[{{MATCH}}1]{{ match }}"), "[$01]{{ match }}");
    }

    #[test]
    fn plain_templates_skip_the_engine() {
        let l = Limits::default();
        assert!(matches!(
            Template::replacement("<$1> x", &l).body,
            Body::Plain(_)
        ));
        assert!(matches!(
            Template::replacement("{{user}}", &l).body,
            Body::Macros(_)
        ));
        assert!(matches!(
            Template::replacement("<USER>", &l).body,
            Body::Macros(_)
        ));
        assert!(Template::replacement("{{random::a,b}}", &l).impure());
        assert!(!Template::replacement("{{getvar::$1}}", &l).impure());
        assert!(Template::replacement("{{if capability:web}}W{{/if}}", &l).impure());
    }

    #[test]
    fn remove_all_matches_a_naive_replace_all() {
        let cases = [
            ("aaaa", "aa", ""),
            ("aaa", "aa", "a"),
            ("abababx", "abab", "abx"),
            ("xabcabcabdy", "abcabd", "xabcy"),
            ("aab", "ab", "a"),
            ("", "a", ""),
            ("abc", "", "abc"),
        ];
        for (v, p, want) in cases {
            let mut units: Vec<u16> = v.encode_utf16().collect();
            remove_all(&mut units, &p.encode_utf16().collect::<Vec<_>>());
            assert_eq!(String::from_utf16_lossy(&units), want, "{v} - {p}");
            assert_eq!(v.replace(p, ""), want, "the reference itself");
        }
    }

    #[test]
    fn remove_all_is_literal() {
        let mut v: Vec<u16> = "acbbab".encode_utf16().collect();
        remove_all(&mut v, &"ab".encode_utf16().collect::<Vec<_>>());
        assert_eq!(String::from_utf16_lossy(&v), "acbb");
    }
}
