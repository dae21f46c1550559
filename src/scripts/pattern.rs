//! SPEC §13.3: reading `findRegex` as SillyTavern's `regexFromString` does, compiling it with
//! the project's patched `regress` (ECMAScript as V8 in Node 20, UTF-16, a step bound: see
//! `docs/regex-engine.md`), and a literal prefilter that answers "no match" without running
//! the matcher when a literal every match needs is missing from the text.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// A compiled pattern and the flags the run loop needs.
#[derive(Debug)]
pub(crate) struct Pattern {
    pub regex: regress::Regex,
    pub global: bool,
    pub unicode: bool,
    /// A literal every match contains (SPEC §13.6.2 lets a prefilter skip work).
    required: Option<AhoCorasick>,
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Splits `F` into body and flags as the ECMAScript pattern `(\/?)(.+)\1([a-z]*)` with flag
/// `i` does (SPEC §13.3.1); `None` when F is only line breaks. Hand-written: the reading is
/// three cases, and running it through the matcher would spend steps on the author's text.
pub(crate) fn split(f: &str) -> Option<(&str, Option<&str>)> {
    let start = f.find(|c: char| !is_line_terminator(c))?;
    let rest = &f[start..];
    let line = &rest[..rest.find(is_line_terminator).unwrap_or(rest.len())];
    let (body, flags) = match line.strip_prefix('/') {
        // `.+` is greedy: the last `/` that leaves the body at least one character.
        Some(after) => match after
            .char_indices()
            .skip(1)
            .filter(|&(_, c)| c == '/')
            .last()
        {
            Some((q, _)) => {
                let tail = &after[q + 1..];
                let n = tail.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
                (&after[..q], &tail[..n])
            }
            None => (line, ""),
        },
        None => (line, ""),
    };
    if flags.is_empty() {
        return Some((body, Some("")));
    }
    let mut seen = [false; 128];
    let valid = flags.bytes().all(|b| {
        let fresh = !seen[b as usize];
        seen[b as usize] = true;
        fresh && b"gmixXsuUAJ".contains(&b)
    });
    Some(if valid {
        (body, Some(flags))
    } else {
        (f, None)
    })
}

/// Reads and compiles `F` (after any §13.5.4 expansion). The error is the message for
/// `RegexInvalid`.
pub(crate) fn compile(f: &str) -> Result<Pattern, String> {
    let (body, flags) = split(f).ok_or("the pattern is only line breaks")?;
    let flags = flags.unwrap_or("");
    if let Some(bad) = flags.chars().find(|c| "xXUAJ".contains(*c)) {
        return Err(format!("invalid flag `{bad}`"));
    }
    let unicode = flags.contains('u');
    let options = regress::Flags {
        icase: flags.contains('i'),
        multiline: flags.contains('m'),
        dot_all: flags.contains('s'),
        unicode,
        ..Default::default()
    };
    // Without `u` the pattern is UTF-16 code units, as V8 reads it: an astral character is
    // two characters (`😀+` repeats its second half).
    let regex = if unicode {
        regress::Regex::from_unicode(body.chars().map(u32::from), options)
    } else {
        regress::Regex::from_unicode(body.encode_utf16().map(u32::from), options)
    }
    .map_err(|e| e.to_string())?;
    let required = required_literal(body, options.icase, unicode).and_then(|lit| {
        AhoCorasickBuilder::new()
            .ascii_case_insensitive(options.icase)
            .match_kind(MatchKind::LeftmostFirst)
            .build([lit])
            .ok()
    });
    Ok(Pattern {
        regex,
        global: flags.contains('g'),
        unicode,
        required,
    })
}

impl Pattern {
    /// False when the text lacks a literal every match needs: no match is possible.
    pub fn may_match(&self, text: &str) -> bool {
        self.required.as_ref().is_none_or(|ac| ac.is_match(text))
    }
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
    use super::*;

    #[test]
    fn reads_like_regex_from_string() {
        let cases = [
            ("cats", ("cats", Some(""))),
            ("/a/g trailing", ("a", Some("g"))),
            ("/a/b/g", ("a/b", Some("g"))),
            ("/a/y", ("/a/y", None)),
            ("/a/G", ("/a/G", None)),
            ("/a/gg", ("/a/gg", None)),
            ("/path/to", ("/path/to", None)),
            ("a\nb", ("a", Some(""))),
            ("/a\nb/g", ("/a", Some(""))),
            ("\n\n/x/i", ("x", Some("i"))),
            ("/", ("/", Some(""))),
            ("//", ("//", Some(""))),
        ];
        for (f, want) in cases {
            assert_eq!(split(f), Some(want), "{f:?}");
        }
        assert_eq!(split("\n\r\n"), None);
        assert!(compile("/a/x").is_err());
        assert!(compile("/(/g").is_err());
    }

    #[test]
    fn required_literals_are_conservative() {
        let lit = |p: &str| required_literal(p, false, false);
        assert_eq!(lit(r"<plan>[\s\S]*?<\/plan>").as_deref(), Some("</plan>"));
        assert_eq!(lit("ab*c").as_deref(), Some("a"));
        assert_eq!(lit(r"\k<name>x\p{Lu}").as_deref(), Some("x"));
        assert_eq!(lit(r"\u0041\x41yz").as_deref(), Some("yz"));
        assert_eq!(lit("a|b"), None);
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
}
