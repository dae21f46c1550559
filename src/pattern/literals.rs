//! Literals read from a pattern's text for the prefilters of `pattern` (SPEC §13.6.2 lets a
//! prefilter skip positions): what every match contains (`required_literals`) and what every
//! match starts with (`prefix_literals`). Conservative: `None` whenever the text is not plainly
//! understood, since a wrong literal would skip a real match.

/// Literals every match starts with (one of them; `None` when unsure): per top-level
/// alternative, after `^` and `\b`, the literal it starts with, or the prefixes of a group
/// there; an element that may match nothing (`?`, `*`, `{0,n}`) adds what follows it.
pub(super) fn prefix_literals(
    body: &str,
    icase: bool,
    unicode: bool,
    level: usize,
) -> Option<Vec<String>> {
    per_alternative(body, level, |alt| {
        branch_prefixes(alt, icase, unicode, level)
    })
}

/// The literals of every top-level alternative of `body` together, `None` if any has none
/// (or the groups nest past `MAX_GROUP_DEPTH`).
fn per_alternative(
    body: &str,
    level: usize,
    mut of: impl FnMut(&str) -> Option<Vec<String>>,
) -> Option<Vec<String>> {
    if level > MAX_GROUP_DEPTH {
        return None;
    }
    let mut out = Vec::new();
    for alt in split_alternatives(body) {
        out.extend(of(alt)?);
    }
    Some(out)
}

/// A quantifier at the start of `s`: its length and whether it allows zero repetitions.
fn quantifier(s: &str) -> (usize, bool) {
    let b = s.as_bytes();
    let (len, zero) = match b.first() {
        Some(b'?' | b'*') => (1, true),
        Some(b'+') => (1, false),
        Some(b'{') => {
            let digits = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            let body = b[1..]
                .iter()
                .take_while(|c| c.is_ascii_digit() || **c == b',')
                .count();
            if digits == 0 || b.get(1 + body) != Some(&b'}') {
                return (0, false); // a lone `{` (Annex B) is a literal, not a quantifier
            }
            (body + 2, s[1..1 + digits].bytes().all(|c| c == b'0'))
        }
        _ => (0, false),
    };
    // A lazy quantifier's `?`.
    (
        len + usize::from(len > 0 && b.get(len) == Some(&b'?')),
        zero,
    )
}

fn branch_prefixes(alt: &str, icase: bool, unicode: bool, level: usize) -> Option<Vec<String>> {
    if level > MAX_GROUP_DEPTH {
        return None;
    }
    let mut b = alt;
    while let Some(rest) = b.strip_prefix('^').or_else(|| b.strip_prefix("\\b")) {
        b = rest;
    }
    let (first, rest) = if b.starts_with('(') {
        let close = group_end(b)?;
        let inner = &b[1..close];
        let inner = if let Some(rest) = inner.strip_prefix("?:") {
            rest
        } else if inner.starts_with("?<") && !inner.starts_with("?<=") && !inner.starts_with("?<!")
        {
            &inner[inner.find('>')? + 1..]
        } else if inner.starts_with('?') {
            return None; // a lookaround: the match starts with what follows, unknown here
        } else {
            inner
        };
        let rest = &b[close + 1..];
        // An unquantified group of plain words followed by a literal (`(lord|lady) ash`):
        // every match starts with one word and the literal, a far rarer start than the word.
        if quantifier(rest).0 == 0
            && let Some(joined) = group_then_literal(inner, rest, icase, unicode)
        {
            return Some(joined);
        }
        (prefix_literals(inner, icase, unicode, level + 1)?, rest)
    } else {
        let lit = leading_literal(b, icase, unicode)?;
        let width = literal_width(b)?;
        // `leading_literal` stops before a character a quantifier makes optional.
        let (q, _) = quantifier(&b[width..]);
        if q == 0 || lit.chars().count() > 1 {
            return Some(vec![lit]);
        }
        (vec![lit], &b[width..])
    };
    let (q, zero) = quantifier(rest);
    if !zero {
        return Some(first);
    }
    let mut all = first;
    all.extend(branch_prefixes(&rest[q..], icase, unicode, level + 1)?);
    Some(all)
}

/// Most alternatives a group's words are joined with what follows (`(a|b|…)x`): the
/// prefilter's automaton grows with them, and past a few the words alone select well enough.
const MAX_JOINED: usize = 16;

/// The words of a group (`inner`, its text without the parentheses and `?:`/`?<name>`) each
/// followed by the literal run that `rest` starts with, when every alternative of the group
/// is plain literal text and that run's first character is not optional: every match of
/// `(person|hero)3s?` contains `person3` or `hero3`. `None` otherwise.
fn group_then_literal(inner: &str, rest: &str, icase: bool, unicode: bool) -> Option<Vec<String>> {
    let alternatives = split_alternatives(inner);
    if alternatives.len() > MAX_JOINED {
        return None;
    }
    let words: Vec<String> = alternatives
        .iter()
        .map(|alt| {
            let lit = leading_literal(alt, icase, unicode)?;
            // Plain text only: the run read is the whole alternative, with no quantifier.
            let mut width = 0;
            while width < alt.len() {
                width += literal_width(&alt[width..])?;
                if quantifier(&alt[width..]).0 != 0 {
                    return None;
                }
            }
            (width == alt.len() && lit.chars().count() == alt_chars(alt)?).then_some(lit)
        })
        .collect::<Option<_>>()?;
    let next = leading_literal(rest, icase, unicode)?;
    // `leading_literal` keeps an optional first character for the prefixes' caller: here a
    // character that may be absent is not required.
    if quantifier(&rest[literal_width(rest)?..]).1 {
        return None;
    }
    Some(words.iter().map(|w| format!("{w}{next}")).collect())
}

/// How many characters an alternative of plain text stands for (an escape is one).
fn alt_chars(alt: &str) -> Option<usize> {
    let mut n = 0;
    let mut width = 0;
    while width < alt.len() {
        width += literal_width(&alt[width..])?;
        n += 1;
    }
    Some(n)
}

/// The bytes of the first literal character of `b` as written (`x`, `\.`, `\n`).
fn literal_width(b: &str) -> Option<usize> {
    let c = b.chars().next()?;
    Some(if c == '\\' {
        1 + b[1..].chars().next()?.len_utf8()
    } else {
        c.len_utf8()
    })
}

/// The structural characters of a pattern, `(`, `)` and `|` outside classes and escapes, with
/// their byte index and the group depth before them: the one place the analyses below skip
/// classes and escapes.
fn structure(body: &str) -> impl Iterator<Item = (usize, char, usize)> + '_ {
    let (mut depth, mut in_class, mut escaped) = (0usize, false, false);
    body.char_indices().filter_map(move |(i, c)| {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '[' => in_class = true,
            '(' => {
                depth += 1;
                return Some((i, c, depth - 1));
            }
            ')' => {
                let before = depth;
                depth = depth.saturating_sub(1);
                return Some((i, c, before));
            }
            '|' => return Some((i, c, depth)),
            _ => {}
        }
        None
    })
}

/// The top-level alternatives of a pattern.
fn split_alternatives(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, _, _) in structure(body).filter(|&(_, c, d)| c == '|' && d == 0) {
        out.push(&body[start..i]);
        start = i + 1;
    }
    out.push(&body[start..]);
    out
}

/// The byte index of the `)` closing the group that `b` starts with.
fn group_end(b: &str) -> Option<usize> {
    structure(b)
        .find(|&(_, c, d)| c == ')' && d == 1)
        .map(|(i, _, _)| i)
}

/// The literal characters `b` starts with (a character its quantifier may repeat zero times
/// is not one; one with `+` is the last).
fn leading_literal(b: &str, icase: bool, unicode: bool) -> Option<String> {
    let mut out = String::new();
    let mut rest = b;
    loop {
        let mut chars = rest.chars();
        let Some(first) = chars.next() else {
            break;
        };
        let (c, width) = match first {
            '\\' => match chars.next() {
                Some(n) if n.is_ascii_punctuation() => (n, 1 + n.len_utf8()),
                Some('n') => ('\n', 2),
                Some('r') => ('\r', 2),
                Some('t') => ('\t', 2),
                Some('f') => ('\u{c}', 2),
                Some('v') => ('\u{b}', 2),
                _ => break,
            },
            '.' | '^' | '$' | '|' | '*' | '+' | '?' | '{' | '}' | '[' | ']' | '(' | ')' => break,
            c => (c, c.len_utf8()),
        };
        if icase && !(c.is_ascii() && !(unicode && matches!(c.to_ascii_lowercase(), 'k' | 's'))) {
            break;
        }
        rest = &rest[width..];
        // The whole quantifier is read, however long (`a{000…0}` allows zero).
        match quantifier(rest) {
            (0, _) => out.push(c),
            (_, true) if out.is_empty() => {
                // An optional first character: the caller adds what may follow it.
                out.push(c);
                break;
            }
            (_, true) => break,
            (_, false) => {
                out.push(c);
                break;
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Deepest group nesting the prefilter analysis looks into (each level rescans its text).
const MAX_GROUP_DEPTH: usize = 16;

/// Literals of which every match of `body` contains at least one, read conservatively
/// (`None` when unsure): per top-level alternative, its best candidate (see [`branch`]).
pub(super) fn required_literals(body: &str, icase: bool, unicode: bool) -> Option<Vec<String>> {
    alternatives(body, icase, unicode, 0)
}

fn alternatives(body: &str, icase: bool, unicode: bool, level: usize) -> Option<Vec<String>> {
    per_alternative(body, level, |alt| branch(alt, icase, unicode, level))
}

/// The best candidate of one alternative (no top-level `|`): its longest top-level literal
/// run, or the literals of a group every match goes through once (not quantified to allow
/// zero, not a lookaround), whichever has the longer shortest literal.
fn branch(b: &str, icase: bool, unicode: bool, level: usize) -> Option<Vec<String>> {
    let mut best: Option<Vec<String>> = required_literal(b, icase, unicode).map(|l| vec![l]);
    let score = |c: &Option<Vec<String>>| {
        c.as_ref()
            .map_or(0, |v| v.iter().map(String::len).min().unwrap_or(0))
    };
    let mut open = 0;
    for (i, c, depth) in structure(b) {
        match (c, depth) {
            ('(', 0) => open = i,
            (')', 1) => {
                if matches!(b[i + 1..].chars().next(), Some('*' | '?' | '{')) {
                    continue;
                }
                let inner = &b[open + 1..i];
                let inner = if let Some(rest) = inner.strip_prefix("?:") {
                    rest
                } else if inner.starts_with("?<")
                    && !inner.starts_with("?<=")
                    && !inner.starts_with("?<!")
                {
                    match inner.find('>') {
                        Some(end) => &inner[end + 1..],
                        None => continue,
                    }
                } else if inner.starts_with('?') {
                    continue; // a lookaround consumes nothing
                } else {
                    inner
                };
                let mut candidate = alternatives(inner, icase, unicode, level + 1);
                // Its words joined to the literal right after it, when it is plain words.
                let joined = group_then_literal(inner, &b[i + 1..], icase, unicode);
                if score(&joined) > score(&candidate) {
                    candidate = joined;
                }
                if score(&candidate) > score(&best) {
                    best = candidate;
                }
            }
            _ => {}
        }
    }
    best.filter(|v| !v.is_empty() && v.iter().all(|l| !l.is_empty()))
}

/// The longest run of literal characters that every match of `body` contains, read
/// conservatively from the top level of the pattern (outside groups and classes, with no
/// top-level `|`); `None` when unsure. With `i`, only ASCII runs qualify (matched ASCII
/// case-insensitively), and with `iu` not `k` or `s`, which fold to non-ASCII characters.
fn required_literal(body: &str, icase: bool, unicode: bool) -> Option<String> {
    let mut best = String::new();
    let mut run = String::new();
    let mut depth = 0usize;
    let mut in_class = false;
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let flush = |run: &mut String, best: &mut String| {
        if run.len() > best.len() {
            *best = std::mem::take(run);
        }
        run.clear();
    };
    let ok_char = |c: char| {
        if !icase {
            return true;
        }
        c.is_ascii() && !(unicode && matches!(c.to_ascii_lowercase(), 'k' | 's'))
    };
    while i < chars.len() {
        let c = chars[i];
        if in_class {
            match c {
                '\\' => i += 1,
                ']' => in_class = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        // The character this position contributes as a literal, if any.
        let mut lit = None;
        let mut width = 1;
        match c {
            '\\' => {
                let next = *chars.get(i + 1)?;
                width = 2;
                if next.is_ascii_punctuation() {
                    lit = Some(next);
                } else {
                    // Skip an escape's own argument (`\k<name>`, `\p{L}`, `\u{1F600}`,
                    // `\u0041`, `\x41`, `\cA`) so it is not read as literal text.
                    let close = match (next, chars.get(i + 2)) {
                        ('k', Some('<')) => Some('>'),
                        ('p' | 'P' | 'u', Some('{')) => Some('}'),
                        _ => None,
                    };
                    width += match (next, close) {
                        (_, Some(end)) => chars[i + 2..]
                            .iter()
                            .position(|&c| c == end)
                            .map_or(chars.len(), |p| p + 1),
                        ('u', None) => 4,
                        ('x', None) => 2,
                        ('c', None) => 1,
                        // A backreference or (without `u`) an octal escape: `\012` is a line
                        // feed, `\10` may be octal U+0008; its digits are never literal text.
                        (d, None) if d.is_ascii_digit() => chars[i + 2..]
                            .iter()
                            .take_while(|c| c.is_ascii_digit())
                            .count(),
                        _ => 0,
                    };
                }
            }
            '[' => in_class = true,
            '{' => {
                // A quantifier's braces (`{2,}`): skip them whole, or their digits would read
                // as literal text. A lone `{` (Annex B) is a literal we do not count.
                let n = chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit() || **c == ',')
                    .count();
                if chars.get(i + 1 + n) == Some(&'}') && n > 0 {
                    width = n + 2;
                }
            }
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '|' if depth == 0 => return None,
            '.' | '^' | '$' | '|' => {}
            '*' | '+' | '?' | '}' | ']' => {}
            _ => lit = Some(c),
        }
        let quant = chars.get(i + width).copied();
        match lit {
            Some(l) if depth == 0 && !in_class && ok_char(l) => match quant {
                Some('*' | '?' | '{') => flush(&mut run, &mut best),
                Some('+') => {
                    run.push(l);
                    flush(&mut run, &mut best);
                }
                _ => run.push(l),
            },
            _ => flush(&mut run, &mut best),
        }
        i += width;
    }
    flush(&mut run, &mut best);
    // A run inside a quantified group was never counted (depth > 0), but a quantifier on a
    // group that follows a run cannot remove the run itself.
    (!best.is_empty()).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::super::{Cursor, compile};
    use super::*;

    #[test]
    fn required_literals_are_conservative() {
        let lit = |p: &str| required_literal(p, false, false);
        assert_eq!(lit(r"<plan>[\s\S]*?<\/plan>").as_deref(), Some("</plan>"));
        assert_eq!(lit("ab*c").as_deref(), Some("a"));
        assert_eq!(lit(r"\k<name>x\p{Lu}").as_deref(), Some("x"));
        assert_eq!(lit(r"\u0041\x41yz").as_deref(), Some("yz"));
        assert_eq!(lit(r"\0123"), None);
        assert_eq!(lit(r"(a)\10xyz").as_deref(), Some("xyz"));
        // The same through the passes: `\012` is a line feed, never the text "12".
        let p = compile("/\\0123/g").unwrap();
        assert_eq!(p.last_start(&p.haystack("a\n3b")), Some(usize::MAX));
        assert_eq!(lit("a|b"), None);
        assert_eq!(
            required_literals(
                r"(.*?</think(ing)?>(\\n)?)|(<think(ing)?>[\s\S]*<\/think>)",
                false,
                false
            ),
            Some(vec!["</think".into(), "</think>".into()])
        );
        assert_eq!(
            required_literals("(?:ab)?c|(?=xyz)d", false, false),
            Some(vec!["c".into(), "d".into()])
        );
        assert_eq!(required_literals(&"(".repeat(5000), false, false), None);
        assert_eq!(
            required_literals(r"x.*?</t>|<t>.*y|[|]z", false, false),
            Some(vec!["</t>".into(), "<t>".into(), "z".into()])
        );
        assert_eq!(
            prefix_literals(r"^<plan>[\s\S]*?|(?:<a>|\bb+)x|(?<n>cd)", false, false, 0),
            Some(vec!["<plan>".into(), "<a>".into(), "b".into(), "cd".into()])
        );
        assert_eq!(prefix_literals("a|.b", false, false, 0), None);
        assert_eq!(
            prefix_literals("(?:a)?b", false, false, 0),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            prefix_literals("ab*", false, false, 0),
            Some(vec!["a".into()])
        );
        assert_eq!(
            prefix_literals(r"(?:\r?\n){0,2}<nemo-pad>[\s\S]*?", true, false, 0),
            Some(vec!["\r".into(), "\n".into(), "<nemo-pad>".into()])
        );
        assert_eq!(prefix_literals(r"a?", false, false, 0), None);
        assert_eq!(
            prefix_literals(r"a*b", false, false, 0),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(prefix_literals(r"(?=x)y", false, false, 0), None);
        let zeros = "0".repeat(30);
        assert_eq!(
            prefix_literals(&format!("xa{{{zeros}}}b"), false, false, 0),
            Some(vec!["x".into()])
        );
        assert_eq!(
            prefix_literals(r"a{0}b", false, false, 0),
            Some(vec!["a".into(), "b".into()])
        );
        let p = compile("/😀a|a/").unwrap();
        let mut cursor = Cursor::default();
        let text = "x😀a a";
        let starts: Vec<Option<usize>> = [0, 2, 4, 6]
            .iter()
            .map(|&pos| p.next_start(&p.haystack(text), &mut cursor, pos))
            .collect();
        assert_eq!(starts, [Some(1), Some(3), Some(5), None]);
        let p = compile("/ab|cd/g").unwrap();
        assert_eq!(p.last_start(&p.haystack("ab 😀 cd x")), Some(7));
        assert_eq!(p.last_start(&p.haystack("xx")), None);
        assert_eq!(lit("(?:x|y)z"), Some("z".into()));
        assert_eq!(lit("ab+c").as_deref(), Some("ab"));
        assert_eq!(lit(r"\d+"), None);
        assert_eq!(lit("o{2,}"), None);
        assert_eq!(lit("xo{2,3}yz").as_deref(), Some("yz"));
        assert_eq!(
            required_literal("think", true, true).as_deref(),
            Some("thin")
        );
        assert_eq!(required_literal("é", true, false), None);
    }

    /// A group of plain words followed by a literal gives each word with the literal, as
    /// required and as prefix literals; anything less plain keeps the words alone.
    #[test]
    fn plain_words_are_joined_to_the_literal_after_them() {
        let req = |p: &str| required_literals(p, true, false);
        let pre = |p: &str| prefix_literals(p, true, false, 0);
        let joined = Some(vec!["person3".to_string(), "hero3".into()]);
        assert_eq!(req(r"\b(person|hero)3s?\b"), joined);
        assert_eq!(pre(r"\b(person|hero)3s?\b"), joined);
        assert_eq!(
            req(r"(?:lord|lady) ash"),
            Some(vec!["lord ash".into(), "lady ash".into()])
        );
        assert_eq!(
            req(r"x(?<n>a\.b|cd)ef"),
            Some(vec!["a.bef".into(), "cdef".into()])
        );
        // Not plain words, or nothing certain after them: the old reading.
        for p in [
            r"(person|hero)s?3",
            r"(person|her+o)3",
            r"(person|h.ro)3",
            r"(person|hero)\b3",
            r"(person|hero)+3",
            r"(person|hero)3{0,1}x",
            r"(person|hero)?3",
        ] {
            for lits in [req(p), pre(p)].into_iter().flatten() {
                assert!(!lits.iter().any(|l| l.contains("o3")), "{p}: {lits:?}");
            }
        }
        // An empty word: the group may match nothing.
        assert_eq!(pre(r"(a|)bc"), None);
        // Too many words: the words alone.
        let many: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
        let p = format!("({})zz", many.join("|"));
        assert_eq!(pre(&p), Some(many.clone()));
        // And the prefilters still find every match the regex finds.
        for (pattern, text, at) in [
            (
                "/\\b(person|hero)3s?\\b/i",
                "a Person33 and HERO3s.",
                Some(15),
            ),
            ("/\\b(person|hero)3s?\\b/i", "person4 hero33 person3x", None),
            ("/(lord|lady) ash/", "Lady ash, lady ashes", Some(10)),
        ] {
            let p = compile(pattern).unwrap();
            let units: Vec<u16> = text.encode_utf16().collect();
            let mut steps = u64::MAX;
            let found = p
                .find_at(&p.haystack(text), &units, 0, &mut steps)
                .unwrap()
                .map(|m| m.start());
            let mut steps = u64::MAX;
            let plain = p
                .regex
                .find_at_utf16_bounded(&units, 0, &mut steps)
                .unwrap()
                .map(|m| m.start());
            assert_eq!(found, plain, "{pattern} in {text:?}");
            assert_eq!(found, at, "{pattern} in {text:?}");
        }
    }
}
