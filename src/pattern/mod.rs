//! The bounded matcher (SPEC §13.3), a leaf that regex scripts and World Info regex keys both
//! stand on: reading `findRegex` as SillyTavern's `regexFromString` does, compiling it with
//! the project's patched `regress` (ECMAScript as V8 in Node 20, UTF-16, a step bound: see
//! `docs/regex-engine.md`), and the prefilters built from `literals`: no match without a
//! required literal, and matches tried only where a prefix literal occurs.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

mod literals;

use literals::{prefix_literals, required_literals};

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
    /// The searchers hold ASCII-lowercased literals, searched in ASCII-lowercased text
    /// ([`Pattern::haystack`]) (a case-insensitive pattern's).
    fold: bool,
}

/// A text as a pattern's prefilters search it ([`Pattern::haystack`]): ASCII-lowercased when
/// they fold case, which keeps every byte offset and UTF-16 offset of the text.
pub(crate) struct Haystack<'t>(std::borrow::Cow<'t, str>);

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
/// regress folds every class of a case-insensitive pattern (up to ~50 µs for a class as wide
/// as `[\s\S]`, ~85 µs for `\p{L}`), copies a property's table for each `\p{…}` (~5 µs),
/// and its parser and emitter recurse per nesting level and per alternative (its optimizer,
/// quadratic in the alternatives, is off past 64 of them). Real presets' patterns are at most
/// a few hundred characters with a few dozen alternatives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cost {
    /// UTF-16 units of pattern text.
    pub units: usize,
    /// Case-insensitive classes, `\p{…}` weighing 5.
    pub classes: usize,
    /// Property escapes (`\p{…}`, `\P{…}`), with or without `i`: each copies its table (up
    /// to ~700 ranges, 5.6 KB for `\p{L}`) into the compiled pattern, which a compiled
    /// preset keeps (60 patterns of 3,200 `\p{L}` held 1 GB).
    pub props: usize,
}

impl Cost {
    /// Caps of one pattern.
    pub const ONE: Cost = Cost {
        units: 16 * 1024,
        classes: 256,
        props: 256,
    };
    /// Caps of all the patterns a preset (or a pass's find templates) compiles.
    pub const TOTAL: Cost = Cost {
        units: 1 << 20,
        classes: 8 * 1024,
        props: 4 * 1024,
    };
    pub const MAX: Cost = Cost {
        units: usize::MAX,
        classes: usize::MAX,
        props: usize::MAX,
    };

    /// What compiling `body` with these flags costs.
    fn of(body: &str, icase: bool) -> Cost {
        let units = body.encode_utf16().count();
        let (mut classes, mut props) = (0, 0);
        let icase = usize::from(icase);
        let mut chars = body.chars();
        // The escape after a `\\` (`\p` inside a class too).
        let mut escape = |c: Option<char>, in_class: bool, classes: &mut usize| match c {
            Some('p' | 'P') => {
                props += 1;
                *classes += icase * 5;
            }
            Some('w' | 'W' | 's' | 'S' | 'd' | 'D') if !in_class => *classes += icase,
            _ => {}
        };
        while let Some(c) = chars.next() {
            match c {
                '[' => {
                    classes += icase;
                    // To the class's end (escapes included); nested `[` is literal here.
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' => escape(chars.next(), true, &mut classes),
                            ']' => break,
                            _ => {}
                        }
                    }
                }
                '\\' => escape(chars.next(), false, &mut classes),
                _ => {}
            }
        }
        Cost {
            units,
            classes,
            props,
        }
    }

    /// Spends `c` from this budget; false (nothing spent) when it does not fit.
    pub(crate) fn spend(&mut self, c: &Cost) -> bool {
        if c.units > self.units || c.classes > self.classes || c.props > self.props {
            return false;
        }
        self.units -= c.units;
        self.classes -= c.classes;
        self.props -= c.props;
        true
    }

    /// The work units (about a nanosecond each) a render is charged for compiling this: an
    /// upper bound of regress's compile time measured on the worst shapes (2026-12, release):
    /// 100 a UTF-16 unit (alternatives without the optimizer ~52 ns, nesting ~110 ns), 50,000
    /// a case-insensitive class (`[\s\S]` ~48 µs; a letter class ~0.4 µs), 10,000 a property
    /// escape (`\p{L}` ~5.4 µs, a `v`-flag `&&` of two ~5 µs).
    pub(crate) fn work(&self) -> u64 {
        let w = |n: usize, each: u64| (n as u64).saturating_mul(each);
        w(self.units, 100)
            .saturating_add(w(self.classes, 50_000))
            .saturating_add(w(self.props, 10_000))
    }
}

/// What compiling `f` (a `findRegex` as written) costs; zero when it does not read.
pub(crate) fn cost(f: &str) -> Cost {
    match split(f) {
        Some((body, flags)) => cost_parts(body, flags.unwrap_or("")),
        None => Cost {
            units: 0,
            classes: 0,
            props: 0,
        },
    }
}

/// What compiling a pattern already split into body and flags costs.
pub(crate) fn cost_parts(body: &str, flags: &str) -> Cost {
    Cost::of(body, flags.contains('i'))
}

/// [`compile`], paying its cost from `budget`: a pattern over [`Cost::ONE`], or one the
/// budget cannot pay for, is refused (`RegexInvalid`) before regress sees it.
pub(crate) fn compile_within(f: &str, budget: &mut Cost) -> Result<Pattern, String> {
    let (body, flags) = split(f).ok_or("the pattern is only line breaks")?;
    let flags = flags.unwrap_or("");
    compile_costed(body, flags, &cost_parts(body, flags), budget)
}

/// Compiles a pattern already split into body and flags (a World Info regex key, SPEC
/// §15.5.6, is read by its own rule) whose [`cost_parts`] is `cost` (a key charges it to its
/// call first), paying it from `budget` as [`compile_within`].
pub(crate) fn compile_costed(
    body: &str,
    flags: &str,
    cost: &Cost,
    budget: &mut Cost,
) -> Result<Pattern, String> {
    if let Some(bad) = flags.chars().find(|c| "xXUAJ".contains(*c)) {
        return Err(format!("invalid flag `{bad}`"));
    }
    let unicode = flags.contains('u');
    let icase = flags.contains('i');
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
    if cost.props > Cost::ONE.props {
        return Err(format!(
            "the pattern has too many property escapes ({}, at most {})",
            cost.props,
            Cost::ONE.props
        ));
    }
    if !budget.spend(cost) {
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
    // regress's parser and optimizer recurse per nesting level (up to 256) and per alternative
    // (up to 8,192 within `Cost::ONE`): compile with at least 4 MiB of stack, on a fresh 8 MiB
    // segment when the thread has less (compiles are few: once per script and preset).
    let regex = stacker::maybe_grow(4 << 20, 8 << 20, || {
        if unicode {
            regress::Regex::from_unicode(body.chars().map(u32::from), options)
        } else {
            regress::Regex::from_unicode(body.encode_utf16().map(u32::from), options)
        }
    })
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
        fold: options.icase,
    })
}

/// Longest literal a prefilter searches for: a match containing (or starting with) a literal
/// also contains its first bytes, and aho-corasick's build time grows faster than linearly in
/// the length of a periodic pattern (`aaaa…`).
const MAX_LITERAL: usize = 16;

/// The literals a prefilter searches for: each cut to [`MAX_LITERAL`] bytes (at a character
/// boundary), duplicates dropped; `None` when one is empty. A case-insensitive pattern's are
/// ASCII-lowercased and searched case-sensitively in ASCII-lowercased text, the same matches
/// as aho-corasick's `ascii_case_insensitive`: with that option the crate uses no
/// vectorized prefilter (`hero` and `person` are 80 case variants) and walked its automaton
/// byte by byte, a quarter of a turn whose book has case-insensitive regex keys.
fn searcher(lits: Vec<String>, icase: bool) -> Option<AhoCorasick> {
    let mut cut: Vec<String> = lits
        .into_iter()
        .map(|l| {
            let l = crate::limits::fit(&l, MAX_LITERAL);
            match icase {
                true => l.to_ascii_lowercase(),
                false => l.to_string(),
            }
        })
        .collect();
    cut.sort_unstable();
    cut.dedup();
    if cut.iter().any(String::is_empty) {
        return None;
    }
    AhoCorasickBuilder::new()
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
    /// Moves one character at a time while `more` says so (or to the end of the text).
    fn advance_while(&mut self, text: &str, more: impl Fn(&Cursor) -> bool) {
        while more(self) {
            let Some(c) = text[self.byte..].chars().next() else {
                return;
            };
            self.byte += c.len_utf8();
            self.unit += c.len_utf16();
        }
    }

    /// Moves to the first character boundary at or after unit `unit`.
    fn advance_to_unit(&mut self, text: &str, unit: usize) {
        self.advance_while(text, |c| c.unit < unit);
    }

    /// Moves to byte `byte` (a character boundary at or after the cursor).
    fn advance_to_byte(&mut self, text: &str, byte: usize) {
        self.advance_while(text, |c| c.byte < byte);
    }
}

impl Pattern {
    /// Whether the pattern names where its matches start (its prefix literals).
    pub fn has_starts(&self) -> bool {
        self.prefixes.is_some()
    }

    /// `text` as the prefilters search it: a copy only when they fold case (and have
    /// something to search for).
    pub fn haystack<'t>(&self, text: &'t str) -> Haystack<'t> {
        Haystack(
            match self.folds() && text.bytes().any(|b| b.is_ascii_uppercase()) {
                true => std::borrow::Cow::Owned(text.to_ascii_lowercase()),
                false => std::borrow::Cow::Borrowed(text),
            },
        )
    }

    /// [`haystack`](Self::haystack) of a text whose ASCII-lowercased form the caller keeps
    /// (`lowered`, asked for only when the prefilters fold case): a World Info segment is
    /// tested by every regex key of a call, and copied once, not once per key.
    pub fn haystack_kept<'t>(
        &self,
        text: &'t str,
        lowered: impl FnOnce() -> &'t str,
    ) -> Haystack<'t> {
        Haystack(std::borrow::Cow::Borrowed(match self.folds() {
            true => lowered(),
            false => text,
        }))
    }

    /// Whether the prefilters search ASCII-lowercased text.
    fn folds(&self) -> bool {
        self.fold && (self.required.is_some() || self.prefixes.is_some())
    }

    /// The first position at or after unit `pos` where a match can start (an occurrence of a
    /// prefix literal), in UTF-16 units; `None` when there is none. Calls for one text must
    /// come with ascending `pos` and the same `cursor`.
    pub fn next_start(&self, hay: &Haystack<'_>, cursor: &mut Cursor, pos: usize) -> Option<usize> {
        let text: &str = &hay.0;
        let ac = self.prefixes.as_ref()?;
        cursor.advance_to_unit(text, pos);
        let input = aho_corasick::Input::new(text).span(cursor.byte..text.len());
        let m = ac.find(input)?;
        cursor.advance_to_byte(text, m.start());
        Some(cursor.unit)
    }

    /// The first match starting at or after unit `pos` of `text` (`units` is its UTF-16
    /// form), tried only where the prefilters allow: nothing past the last required literal,
    /// and only at prefix literals when the pattern has them. Matches as
    /// `regex.find_at_utf16_bounded` would, in fewer steps.
    pub fn find_at(
        &self,
        hay: &Haystack<'_>,
        units: &[u16],
        pos: usize,
        steps: &mut u64,
    ) -> Result<Option<regress::Match>, regress::StepLimit> {
        let Some(last) = self.last_start(hay) else {
            return Ok(None);
        };
        if !self.has_starts() {
            return match pos <= last {
                true => self.regex.find_at_utf16_bounded(units, pos, steps),
                false => Ok(None),
            };
        }
        let mut cursor = Cursor::default();
        let mut at = pos;
        while let Some(start) = self.next_start(hay, &mut cursor, at) {
            if start > last {
                break;
            }
            if let Some(m) = self.regex.match_at_utf16_bounded(units, start, steps)? {
                return Ok(Some(m));
            }
            at = start + 1;
        }
        Ok(None)
    }

    /// The UTF-16 offset after which no match can start: every match contains an occurrence
    /// of a required literal, and every occurrence starts before the end of the last
    /// leftmost-first match. `None` when the text has none, so nothing matches. Without a
    /// prefilter, the end of the text.
    pub fn last_start(&self, hay: &Haystack<'_>) -> Option<usize> {
        let text: &str = &hay.0;
        let Some(ac) = &self.required else {
            return Some(usize::MAX);
        };
        let end = ac.find_iter(text).last()?.end();
        Some(text[..end].encode_utf16().count().saturating_sub(1))
    }
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

    /// The prefiltered search finds what the plain search finds, from any position.
    #[test]
    fn find_at_matches_the_unfiltered_search() {
        let patterns = [
            "/\\b(person|hero)3s?\\b/i",
            "/Kelvin|k\\d/i",
            "/(?:ab|cd)+e/",
            "/x*/",
            "/\\bé+\\b/iu",
            "/^the/m",
            "/(lord|lady) ash/i",
            "/x(?:per\\.son|hero)3[a-z]/",
        ];
        let texts = [
            "",
            "Person3 met the HEROs3 and person3s",
            "LADY ASH, lord ashes, lady as xper.son3x xhero3 xhero3y",
            "ab cd abcde KELVIN k9 \u{212A}9",
            "the\nthe é ÉÉ x xx",
            "😀 hero3 😀 persons3",
        ];
        for f in patterns {
            let p = compile(f).unwrap();
            for text in texts {
                let units: Vec<u16> = text.encode_utf16().collect();
                for pos in 0..=units.len() {
                    let want = p
                        .regex
                        .find_at_utf16_bounded(&units, pos, &mut u64::MAX.clone())
                        .unwrap()
                        .map(|m| m.range());
                    let got = p
                        .find_at(&p.haystack(text), &units, pos, &mut u64::MAX.clone())
                        .unwrap()
                        .map(|m| m.range());
                    assert_eq!(got, want, "{f} in {text:?} from {pos}");
                }
            }
        }
    }

    #[test]
    fn the_cost_counts_classes_and_property_escapes() {
        // A class, and a property escape inside it, both weigh when case-insensitive.
        assert_eq!(
            cost("/[\\p{L}x]\\w\\]/i"),
            Cost {
                units: 12,
                classes: 1 + 5 + 1,
                props: 1
            }
        );
        // Without `i` only the property escapes weigh, inside a class or not.
        assert_eq!(
            cost("/\\P{Lu}[\\p{N}]\\s/"),
            Cost {
                units: 15,
                classes: 0,
                props: 2
            }
        );
        assert_eq!(cost("/[\\p{L}]/i").work(), 7 * 100 + 6 * 50_000 + 10_000);
    }

    #[test]
    fn property_escapes_are_capped_per_pattern_and_per_preset() {
        let many = |n: usize| format!("/{}/u", "\\p{L}".repeat(n));
        assert!(compile(&many(256)).is_ok());
        let e = compile(&many(257)).err().unwrap_or_default();
        assert!(
            e.contains("too many property escapes (257, at most 256)"),
            "{e}"
        );
        let mut total = Cost::TOTAL.clone();
        for _ in 0..16 {
            assert!(compile_within(&many(256), &mut total).is_ok());
        }
        assert!(compile_within(&many(1), &mut total).is_err());
    }
}
