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
    /// Literals of which every match contains one (one per top-level alternative): a text
    /// without any cannot match, and no match starts after the last one (SPEC §13.6.2 lets a
    /// prefilter skip work).
    required: Option<AhoCorasick>,
    /// Literals one of which every match starts with: only their occurrences are tried.
    prefixes: Option<AhoCorasick>,
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
    compile_within(f, &mut Cost::MAX.clone())
}

/// What compiling a pattern may cost. Compile time is not bounded by the matcher's steps:
/// regress folds every class of a case-insensitive pattern through Unicode tables (~50 µs
/// each, ~250 µs for `\p{…}`), its optimizer is quadratic in the number of alternatives, and
/// its parser and emitter recurse per nesting level and per alternative. Real presets' patterns
/// are at most a few hundred characters with a few dozen alternatives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cost {
    /// UTF-16 units of pattern text.
    pub units: usize,
    /// Case-insensitive classes, `\p{…}` weighing 5.
    pub classes: usize,
}

impl Cost {
    /// Caps of one pattern.
    pub const ONE: Cost = Cost {
        units: 16 * 1024,
        classes: 256,
    };
    /// Caps of all the patterns a preset (or a pass's find templates) compiles.
    pub const TOTAL: Cost = Cost {
        units: 1 << 20,
        classes: 8 * 1024,
    };
    pub const MAX: Cost = Cost {
        units: usize::MAX,
        classes: usize::MAX,
    };

    /// What compiling `body` with these flags costs.
    fn of(body: &str, icase: bool) -> Cost {
        let units = body.encode_utf16().count();
        let mut classes = 0;
        if icase {
            let mut chars = body.chars();
            while let Some(c) = chars.next() {
                match c {
                    '[' => {
                        classes += 1;
                        // To the class's end (escapes included); nested `[` is literal here.
                        let mut esc = false;
                        for c in chars.by_ref() {
                            match c {
                                _ if esc => esc = false,
                                '\\' => esc = true,
                                ']' => break,
                                _ => {}
                            }
                        }
                    }
                    '\\' => match chars.next() {
                        Some('p' | 'P') => classes += 5,
                        Some('w' | 'W' | 's' | 'S' | 'd' | 'D') => classes += 1,
                        _ => {}
                    },
                    _ => {}
                }
            }
        }
        Cost { units, classes }
    }

    /// Spends `c` from this budget; false (nothing spent) when it does not fit.
    pub(crate) fn spend(&mut self, c: &Cost) -> bool {
        if c.units > self.units || c.classes > self.classes {
            return false;
        }
        self.units -= c.units;
        self.classes -= c.classes;
        true
    }
}

/// What compiling `f` (a `findRegex` as written) costs; zero when it does not read.
pub(crate) fn cost(f: &str) -> Cost {
    match split(f) {
        Some((body, flags)) => Cost::of(body, flags.unwrap_or("").contains('i')),
        None => Cost {
            units: 0,
            classes: 0,
        },
    }
}

/// [`compile`], paying its cost from `budget`: a pattern over [`Cost::ONE`], or one the
/// budget cannot pay for, is refused (`RegexInvalid`) before regress sees it.
pub(crate) fn compile_within(f: &str, budget: &mut Cost) -> Result<Pattern, String> {
    let (body, flags) = split(f).ok_or("the pattern is only line breaks")?;
    let flags = flags.unwrap_or("");
    if let Some(bad) = flags.chars().find(|c| "xXUAJ".contains(*c)) {
        return Err(format!("invalid flag `{bad}`"));
    }
    let unicode = flags.contains('u');
    let icase = flags.contains('i');
    let cost = Cost::of(body, icase);
    if cost.units > Cost::ONE.units {
        return Err(format!(
            "the pattern is {} UTF-16 units long; stpreset compiles at most {}",
            cost.units,
            Cost::ONE.units
        ));
    }
    if cost.classes > Cost::ONE.classes {
        return Err(format!(
            "the pattern has too many case-insensitive classes (weight {}, at most {})",
            cost.classes,
            Cost::ONE.classes
        ));
    }
    if !budget.spend(&cost) {
        return Err("the preset's patterns together are too large to compile".into());
    }
    let options = regress::Flags {
        icase,
        multiline: flags.contains('m'),
        dot_all: flags.contains('s'),
        unicode,
        // The optimizer is quadratic in the number of alternatives; a pattern with many
        // matches the same without it (it only makes matching faster).
        no_opt: body.matches('|').count() > 64,
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
    let required =
        required_literals(body, options.icase, unicode).and_then(|l| searcher(l, options.icase));
    let prefixes =
        prefix_literals(body, options.icase, unicode, 0).and_then(|l| searcher(l, options.icase));
    Ok(Pattern {
        regex,
        global: flags.contains('g'),
        unicode,
        required,
        prefixes,
    })
}

/// Longest literal a prefilter searches for: a match containing (or starting with) a literal
/// also contains its first bytes, and aho-corasick's build time grows faster than linearly in
/// the length of a periodic pattern (`aaaa…`).
const MAX_LITERAL: usize = 16;

/// The literals a prefilter searches for: each cut to [`MAX_LITERAL`] bytes (at a character
/// boundary), duplicates dropped; `None` when one is empty.
fn searcher(lits: Vec<String>, icase: bool) -> Option<AhoCorasick> {
    let mut cut: Vec<String> = lits
        .into_iter()
        .map(|l| crate::limits::fit(&l, MAX_LITERAL).to_string())
        .collect();
    cut.sort_unstable();
    cut.dedup();
    if cut.iter().any(String::is_empty) {
        return None;
    }
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(icase)
        .match_kind(MatchKind::LeftmostFirst)
        .build(cut)
        .ok()
}

/// A position in a text as both a UTF-8 byte offset and a UTF-16 unit offset, moved forward
/// only (so a run's conversions cost one walk over the text).
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    byte: usize,
    unit: usize,
}

impl Cursor {
    /// Moves to the first character boundary at or after unit `unit`.
    fn advance_to_unit(&mut self, text: &str, unit: usize) {
        while self.unit < unit {
            let Some(c) = text[self.byte..].chars().next() else {
                return;
            };
            self.byte += c.len_utf8();
            self.unit += c.len_utf16();
        }
    }

    /// Moves to byte `byte` (a character boundary at or after the cursor).
    fn advance_to_byte(&mut self, text: &str, byte: usize) {
        while self.byte < byte {
            let Some(c) = text[self.byte..].chars().next() else {
                return;
            };
            self.byte += c.len_utf8();
            self.unit += c.len_utf16();
        }
    }
}

impl Pattern {
    /// Whether the pattern names where its matches start (its prefix literals).
    pub fn has_starts(&self) -> bool {
        self.prefixes.is_some()
    }

    /// The first position at or after unit `pos` where a match can start (an occurrence of a
    /// prefix literal), in UTF-16 units; `None` when there is none. Calls for one text must
    /// come with ascending `pos` and the same `cursor`.
    pub fn next_start(&self, text: &str, cursor: &mut Cursor, pos: usize) -> Option<usize> {
        let ac = self.prefixes.as_ref()?;
        cursor.advance_to_unit(text, pos);
        let input = aho_corasick::Input::new(text).span(cursor.byte..text.len());
        let m = ac.find(input)?;
        cursor.advance_to_byte(text, m.start());
        Some(cursor.unit)
    }

    /// The UTF-16 offset after which no match can start: every match contains an occurrence
    /// of a required literal, and every occurrence starts before the end of the last
    /// leftmost-first match. `None` when the text has none, so nothing matches. Without a
    /// prefilter, the end of the text.
    pub fn last_start(&self, text: &str) -> Option<usize> {
        let Some(ac) = &self.required else {
            return Some(usize::MAX);
        };
        let end = ac.find_iter(text).last()?.end();
        Some(text[..end].encode_utf16().count().saturating_sub(1))
    }
}

/// Literals every match starts with (one of them; `None` when unsure): per top-level
/// alternative, after `^` and `\b`, the literal it starts with, or the prefixes of a group
/// there; an element that may match nothing (`?`, `*`, `{0,n}`) adds what follows it.
fn prefix_literals(body: &str, icase: bool, unicode: bool, level: usize) -> Option<Vec<String>> {
    if level > MAX_GROUP_DEPTH {
        return None;
    }
    let mut out = Vec::new();
    for alt in split_alternatives(body) {
        out.extend(branch_prefixes(alt, icase, unicode, level)?);
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
        (
            prefix_literals(inner, icase, unicode, level + 1)?,
            &b[close + 1..],
        )
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

/// The bytes of the first literal character of `b` as written (`x`, `\.`, `\n`).
fn literal_width(b: &str) -> Option<usize> {
    let c = b.chars().next()?;
    Some(if c == '\\' {
        1 + b[1..].chars().next()?.len_utf8()
    } else {
        c.len_utf8()
    })
}

/// The top-level alternatives of a pattern.
fn split_alternatives(body: &str) -> Vec<&str> {
    let (mut depth, mut in_class, mut escaped, mut start) = (0usize, false, false, 0);
    let mut out = Vec::new();
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '[' => in_class = true,
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '|' if depth == 0 => {
                out.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&body[start..]);
    out
}

/// The byte index of the `)` closing the group that `b` starts with.
fn group_end(b: &str) -> Option<usize> {
    let (mut depth, mut in_class, mut escaped) = (0usize, false, false);
    for (i, c) in b.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '[' => in_class = true,
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The literal characters `b` starts with (a character its quantifier may repeat zero times
/// is not one; one with `+` is the last).
fn leading_literal(b: &str, icase: bool, unicode: bool) -> Option<String> {
    let chars: Vec<char> = b.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let (c, width) = match chars[i] {
            '\\' => match chars.get(i + 1) {
                Some(&n) if n.is_ascii_punctuation() => (n, 2),
                Some('n') => ('\n', 2),
                Some('r') => ('\r', 2),
                Some('t') => ('\t', 2),
                Some('f') => ('\u{c}', 2),
                Some('v') => ('\u{b}', 2),
                _ => break,
            },
            '.' | '^' | '$' | '|' | '*' | '+' | '?' | '{' | '}' | '[' | ']' | '(' | ')' => break,
            c => (c, 1),
        };
        if icase && !(c.is_ascii() && !(unicode && matches!(c.to_ascii_lowercase(), 'k' | 's'))) {
            break;
        }
        let rest: String = chars[i + width..].iter().take(24).collect();
        match quantifier(&rest) {
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
        i += width;
    }
    (!out.is_empty()).then_some(out)
}

/// Deepest group nesting the prefilter analysis looks into (each level rescans its text).
const MAX_GROUP_DEPTH: usize = 16;

/// Literals of which every match of `body` contains at least one, read conservatively
/// (`None` when unsure): per top-level alternative, its best candidate (see [`branch`]).
fn required_literals(body: &str, icase: bool, unicode: bool) -> Option<Vec<String>> {
    alternatives(body, icase, unicode, 0)
}

fn alternatives(body: &str, icase: bool, unicode: bool, level: usize) -> Option<Vec<String>> {
    if level > MAX_GROUP_DEPTH {
        return None;
    }
    let (mut depth, mut in_class, mut escaped, mut start) = (0usize, false, false, 0);
    let mut out = Vec::new();
    let push = |b: &str, out: &mut Vec<String>| -> Option<()> {
        out.extend(branch(b, icase, unicode, level)?);
        Some(())
    };
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '[' => in_class = true,
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '|' if depth == 0 => {
                push(&body[start..i], &mut out)?;
                start = i + 1;
            }
            _ => {}
        }
    }
    push(&body[start..], &mut out)?;
    Some(out)
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
    let chars: Vec<(usize, char)> = b.char_indices().collect();
    let (mut depth, mut in_class, mut escaped, mut open) = (0usize, false, false, 0usize);
    for (k, &(i, c)) in chars.iter().enumerate() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '[' => in_class = true,
            '(' => {
                if depth == 0 {
                    open = i;
                }
                depth += 1;
            }
            ')' if depth > 0 => {
                depth -= 1;
                if depth > 0 {
                    continue;
                }
                let next = chars.get(k + 1).map(|&(_, c)| c);
                if matches!(next, Some('*' | '?' | '{')) {
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
                let candidate = alternatives(inner, icase, unicode, level + 1);
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
        assert_eq!(lit(r"\0123"), None);
        assert_eq!(lit(r"(a)\10xyz").as_deref(), Some("xyz"));
        // The same through the passes: `\012` is a line feed, never the text "12".
        let p = compile("/\\0123/g").unwrap();
        assert_eq!(p.last_start("a\n3b"), Some(usize::MAX));
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
        assert_eq!(
            prefix_literals(r"a{0}b", false, false, 0),
            Some(vec!["a".into(), "b".into()])
        );
        let p = compile("/😀a|a/").unwrap();
        let mut cursor = Cursor::default();
        let text = "x😀a a";
        let starts: Vec<Option<usize>> = [0, 2, 4, 6]
            .iter()
            .map(|&pos| p.next_start(text, &mut cursor, pos))
            .collect();
        assert_eq!(starts, [Some(1), Some(3), Some(5), None]);
        let p = compile("/ab|cd/g").unwrap();
        assert_eq!(p.last_start("ab 😀 cd x"), Some(7));
        assert_eq!(p.last_start("xx"), None);
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
