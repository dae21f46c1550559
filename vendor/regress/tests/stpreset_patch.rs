//! stpreset patch: tests for the vendored changes (see PATCHES.md).
//! Run with `cargo test --no-default-features --features std,utf16 -- --nocapture` to see
//! the measured step counts.

use regress::{Flags, Match, Regex, StepLimit};
use std::time::Instant;

fn u(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

fn re(pattern: &str, flags: &str) -> Regex {
    Regex::with_flags(pattern, flags).unwrap_or_else(|e| panic!("/{pattern}/{flags}: {e}"))
}

/// Steps spent by one bounded search with an (effectively) unlimited budget.
fn cost(r: &Regex, text: &[u16], start: usize) -> (Option<Match>, u64) {
    let budget = 1u64 << 40;
    let mut steps = budget;
    let m = r
        .find_at_utf16_bounded(text, start, &mut steps)
        .expect("budget of 2^40 steps should be enough");
    (m, budget - steps)
}

fn range(m: &Option<Match>) -> Option<std::ops::Range<usize>> {
    m.as_ref().map(|m| m.range())
}

/// Unbounded reference: the UTF-16 API for unicode regexes, UCS-2 otherwise.
fn reference(r: &Regex, unicode: bool, text: &[u16], start: usize) -> Option<Match> {
    if unicode {
        r.find_from_utf16(text, start).next()
    } else {
        r.find_from_ucs2(text, start).next()
    }
}

fn is_match(pattern: &str, flags: &str, text: &str) -> bool {
    let r = re(pattern, flags);
    let mut steps = 1_000_000;
    r.find_at_utf16_bounded(&u(text), 0, &mut steps)
        .unwrap()
        .is_some()
}

// ---------------------------------------------------------------------------------------
// Calibration.

#[test]
fn catastrophic_backtracking_hits_the_limit() {
    let r = re("(a+)+$", "");
    let text = u(&format!("{}!", "a".repeat(30)));
    let mut steps = 10_000_000u64;
    let t = Instant::now();
    let res = r.find_at_utf16_bounded(&text, 0, &mut steps);
    let elapsed = t.elapsed();
    eprintln!("(a+)+$ on a*30+'!': {res:?} after {elapsed:?} with budget 10^7");
    assert_eq!(res.unwrap_err(), StepLimit);
    assert_eq!(steps, 0);
    assert!(elapsed.as_secs_f64() < 1.0, "took {elapsed:?}");

    // With 16 'a's the search does finish; the count grows by 2x per 'a', so 30 'a's need
    // 2^14 times this (measured: 822,083,475 steps for 25 'a's).
    let text16 = u(&format!("{}!", "a".repeat(16)));
    let (m, spent) = cost(&r, &text16, 0);
    assert!(m.is_none());
    eprintln!("(a+)+$ on a*16+'!': {spent} steps (x2 per extra 'a')");
    assert!(spent << 14 > 10_000_000, "{spent}");
}

#[test]
fn lazy_scan_without_closing_tag() {
    let r = re(
        r"<thinking>[\s\S]*?<\/thinking>|<think>[\s\S]*?<\/think>",
        "g",
    );
    let text = u(&format!("<think>{}", "x".repeat(6000)));

    let (m, once) = cost(&r, &text, 0);
    assert!(m.is_none());

    // What a caller that retries the search from every start offset pays (quadratic).
    let t = Instant::now();
    let mut every_start = 0u64;
    for start in 0..=text.len() {
        let (m, spent) = cost(&r, &text, start);
        assert!(m.is_none());
        every_start += spent;
    }
    eprintln!(
        "think scan on 6007 units: {once} steps from 0 (the g loop stops there); \
         {every_start} steps summed over a search from every start ({:?})",
        t.elapsed()
    );
    assert!((6000..100_000).contains(&once), "{once}");
    assert!(
        every_start > 10_000_000 && every_start < 200_000_000,
        "{every_start}"
    );
}

#[test]
fn literal_search_is_linear() {
    let r = re("cat", "");
    let text: Vec<u16> = (0..1_000_000u32)
        .map(|i| b"dogs and mice "[(i % 14) as usize] as u16)
        .collect();
    let (m, spent) = cost(&r, &text, 0);
    assert!(m.is_none());
    let per_unit = spent as f64 / text.len() as f64;
    eprintln!("'cat' over 1,000,000 units without a match: {spent} steps ({per_unit:.3}/unit)");
    assert!((1.0..=2.5).contains(&per_unit), "{per_unit}");
}

// ---------------------------------------------------------------------------------------
// Budget accounting.

#[test]
fn budget_is_decremented_and_can_be_reused() {
    let r = re("b+", "");
    let text = u("aaabbbaaab");
    let mut steps = 1000u64;
    let m = r
        .find_at_utf16_bounded(&text, 0, &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 3..6);
    let after_first = steps;
    assert!(after_first < 1000);
    let m = r
        .find_at_utf16_bounded(&text, m.end(), &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 9..10);
    assert!(steps < after_first);
    let before = steps;
    assert!(
        r.find_at_utf16_bounded(&text, 10, &mut steps)
            .unwrap()
            .is_none()
    );
    assert!(steps < before);
}

#[test]
fn exact_budget_succeeds_and_one_less_fails() {
    let cases = [
        ("(a+)+$", "", "aaaaaaaaaaaa!"),
        (r"<think>[\s\S]*?<\/think>", "", "xx<think>abc</thin"),
        (r"(\w+)\s\1", "i", "hello HELLO world"),
        (r"(?<=(a+))b(?!c)", "", "aaabc aab"),
        ("x*y", "", "xxxxxxxxxxxxxxxxxxxz"),
    ];
    for (p, f, t) in cases {
        let r = re(p, f);
        let text = u(t);
        let (m, spent) = cost(&r, &text, 0);
        let mut steps = spent;
        let m2 = r.find_at_utf16_bounded(&text, 0, &mut steps).unwrap();
        assert_eq!(range(&m), range(&m2), "/{p}/");
        assert_eq!(steps, 0);
        let mut steps = spent - 1;
        assert_eq!(
            r.find_at_utf16_bounded(&text, 0, &mut steps).unwrap_err(),
            StepLimit,
            "/{p}/ with {} steps",
            spent - 1
        );
        assert_eq!(steps, 0);
    }
}

#[test]
fn zero_budget_and_out_of_range_start() {
    let r = re("a", "");
    let text = u("a");
    let mut steps = 0;
    assert_eq!(
        r.find_at_utf16_bounded(&text, 0, &mut steps).unwrap_err(),
        StepLimit
    );
    assert_eq!(steps, 0);
    let mut steps = 10;
    assert!(
        r.find_at_utf16_bounded(&text, 2, &mut steps)
            .unwrap()
            .is_none()
    );
    assert!(
        r.find_at_utf16_bounded(&text, usize::MAX, &mut steps)
            .unwrap()
            .is_none()
    );
    assert_eq!(steps, 10);
}

#[test]
fn backreference_costs_its_length() {
    let r = re(r"(a*)b\1c", "");
    let short = u(&format!("{}b{}d", "a".repeat(10), "a".repeat(10)));
    let long = u(&format!("{}b{}d", "a".repeat(1000), "a".repeat(1000)));
    let (_, s1) = cost(&r, &short, 0);
    let (_, s2) = cost(&r, &long, 0);
    // The backref compare alone is ~1000 steps on the long text at the first start.
    assert!(s2 > s1 + 1000, "{s1} {s2}");
}

// ---------------------------------------------------------------------------------------
// Ranges, unicode vs non-unicode, start offsets.

#[test]
fn code_unit_ranges() {
    let text = u("x😀y");
    let mut steps = 1000;
    // Non-unicode: `.` is one code unit, even half a surrogate pair.
    let m = re(".", "")
        .find_at_utf16_bounded(&text, 1, &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 1..2);
    // Unicode: `.` is the whole pair.
    let m = re(".", "u")
        .find_at_utf16_bounded(&text, 1, &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 1..3);
    let m = re("(.)y", "u")
        .find_at_utf16_bounded(&text, 0, &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 1..4);
    assert_eq!(m.group(1), Some(1..3));
    let m = re("(..)y", "")
        .find_at_utf16_bounded(&text, 0, &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 1..4);
    assert_eq!(m.group(1), Some(1..3));
    // Non-unicode `^.$` does not match a lone emoji (two characters), unicode does.
    assert!(!is_match("^.$", "", "😀"));
    assert!(is_match("^.$", "u", "😀"));
    assert!(is_match("^..$", "", "😀"));
    // Unicode escape of an astral character.
    assert!(is_match(r"^\u{1F600}$", "u", "😀"));
    // Without `u`, `\ud83d\ude00` is two characters, matching the two units.
    assert!(is_match(r"^\ud83d\ude00$", "", "😀"));
    assert!(is_match(r"^\ud83d\ude00$", "u", "😀"));
    // ... so a class of them matches a lone unit; with `u` it is one astral character.
    let lone_low = [0xDE00u16];
    let mut steps = 1000;
    let class = re(r"^[\ud83d\ude00]$", "");
    assert!(
        class
            .find_at_utf16_bounded(&lone_low, 0, &mut steps)
            .unwrap()
            .is_some()
    );
    let class_u = re(r"^[\ud83d\ude00]$", "u");
    assert!(
        class_u
            .find_at_utf16_bounded(&lone_low, 0, &mut steps)
            .unwrap()
            .is_none()
    );
    // The caller feeds a non-unicode pattern as UTF-16 units (as V8 reads it): `😀+`
    // repeats the low surrogate only.
    let split = Regex::from_unicode("^😀+$".encode_utf16().map(u32::from), "").unwrap();
    let mut text = u("😀");
    text.push(0xDE00);
    let m = split
        .find_at_utf16_bounded(&text, 0, &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 0..3);
}

#[test]
fn lookbehind_sees_text_before_start() {
    let r = re("(?<=a)b", "");
    let text = u("abab");
    let mut steps = 1000;
    let m = r
        .find_at_utf16_bounded(&text, 1, &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 1..2);
    let r = re(r"\bb", "");
    let mut steps = 1000;
    // At offset 1 there is no word boundary: 'a' precedes.
    let m = r
        .find_at_utf16_bounded(&u("ab b"), 1, &mut steps)
        .unwrap()
        .unwrap();
    assert_eq!(m.range(), 3..4);
    let r = re("^b", "");
    let mut steps = 1000;
    assert!(
        r.find_at_utf16_bounded(&u("ab"), 1, &mut steps)
            .unwrap()
            .is_none()
    );
}

#[test]
fn never_panics_for_any_start() {
    let texts = ["", "a", "😀", "a😀b"];
    let mut texts: Vec<Vec<u16>> = texts.iter().map(|t| u(t)).collect();
    // Lone surrogates too.
    texts.push(vec![0xD83D]);
    texts.push(vec![0xDE00, 0x78]);
    texts.push(vec![0x78, 0xD83D]);
    texts.push(vec![0xDE00, 0xD83D, 0x61]);
    for flags in ["", "u", "i", "iu", "s", "m"] {
        for p in [
            ".",
            "(?<=.).",
            r"\b",
            "$",
            "^",
            "[^a]",
            r"(.)\1",
            "(?=.)",
            // Single-character loops backtracking across a start between the halves of a
            // surrogate pair (upstream reached `unreachable_unchecked`).
            r"(?<=(?<!ſ?\W?)A+.?)",
            ".*x",
            ".+?$",
            "(?<=.+)",
            "(?<=.*?^)",
        ] {
            let r = re(p, flags);
            for t in &texts {
                for start in 0..=t.len() + 2 {
                    let mut steps = 10_000;
                    let got = r.find_at_utf16_bounded(t, start, &mut steps).unwrap();
                    if start <= t.len() {
                        let unicode = flags.contains('u');
                        let want = reference(&r, unicode, t, start);
                        assert_eq!(range(&got), range(&want), "/{p}/{flags} {t:?} @{start}");
                    } else {
                        assert!(got.is_none());
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Legacy Canonicalize.

#[test]
fn legacy_case_insensitive_canonicalize() {
    // ſ U+017F, K U+212A KELVIN SIGN, ı U+0131 DOTLESS I.
    assert!(is_match("ſ", "i", "ſ"));
    assert!(!is_match("ſ", "i", "s"));
    assert!(!is_match("ſ", "i", "S"));
    assert!(!is_match("s", "i", "ſ"));
    assert!(!is_match("S", "i", "ſ"));
    assert!(is_match("s", "i", "S"));
    assert!(!is_match("k", "i", "\u{212A}"));
    assert!(!is_match("K", "i", "\u{212A}"));
    assert!(is_match("k", "i", "K"));
    assert!(is_match("\u{212A}", "i", "\u{212A}"));
    assert!(!is_match("\u{212A}", "i", "k"));
    assert!(!is_match("i", "i", "ı"));
    assert!(!is_match("ı", "i", "I"));
    // Non-ASCII pairs still fold.
    assert!(is_match("é", "i", "É"));
    assert!(is_match("µ", "i", "μ")); // U+00B5 and U+03BC both canonicalize to U+039C
    assert!(is_match("ω", "i", "Ω"));
    // Classes.
    for class in ["[a-z]", "[s]", "[k]", "[^\\W]", "\\w", "[\\w]", "[a-zA-Z]"] {
        assert!(!is_match(class, "i", "ſ"), "{class}");
        assert!(!is_match(class, "i", "\u{212A}"), "{class}");
    }
    assert!(is_match("[a-z]", "i", "Q"));
    assert!(is_match("[ſ]", "i", "ſ"));
    assert!(!is_match("[ſ]", "i", "s"));
    assert!(is_match("[^a-z]", "i", "ſ"));
    assert!(!is_match("[^a-z]", "i", "Q"));
    assert!(is_match("\\W", "i", "ſ"));
    assert!(is_match("[à-ÿ]", "i", "À"));
    // Backreferences.
    assert!(is_match(r"^(s)\1$", "i", "sS"));
    assert!(!is_match(r"^(s)\1$", "i", "sſ"));
    assert!(!is_match(r"^(ſ)\1$", "i", "ſs"));
}

#[test]
fn unicode_case_insensitive_uses_simple_case_folding() {
    for t in ["s", "S", "ſ"] {
        assert!(is_match("ſ", "iu", t), "{t}");
        assert!(is_match("s", "iu", t), "{t}");
        assert!(is_match("[a-z]", "iu", t), "{t}");
    }
    for t in ["k", "K", "\u{212A}"] {
        assert!(is_match("k", "iu", t), "{t}");
        assert!(is_match("\u{212A}", "iu", t), "{t}");
        assert!(is_match("[a-z]", "iu", t), "{t}");
    }
    assert!(is_match(r"\w", "iu", "ſ"));
    assert!(is_match(r"^(s)\1$", "iu", "sſ"));
}

// ---------------------------------------------------------------------------------------
// ES2024 syntax.

#[test]
fn es2025_syntax_is_rejected() {
    for (p, f) in [
        ("(?i:a)", ""),
        ("(?-i:a)", ""),
        ("(?i-m:a)", ""),
        ("(?ims-s:a)", ""),
        ("(?m:^a)", "u"),
        ("(?s:.)", ""),
        ("(?i)a", ""),
        ("(?<a>x)|(?<a>y)", ""),
        ("(?:(?<a>x)|(?<a>y))", "u"),
        ("(?<a>x)(?<a>y)", ""),
    ] {
        assert!(
            Regex::with_flags(p, f).is_err(),
            "/{p}/{f} should be a syntax error"
        );
    }
    // Astral group names: literal, fed as UTF-16 units (as the caller does without `u`),
    // and as escaped surrogate pairs.
    for pattern in [
        "(?<𝑓𝑜𝑥>fox)",
        r"(?<\ud835\udc53\ud835\udc5c\ud835\udc65>fox)",
        r"(?<\u{1d453}\u{1d45c}\u{1d465}>fox)",
    ] {
        let r = Regex::from_unicode(pattern.encode_utf16().map(u32::from), "").unwrap();
        let mut steps = 1000;
        let m = r
            .find_at_utf16_bounded(&u("a fox"), 0, &mut steps)
            .unwrap()
            .unwrap();
        assert_eq!(m.named_group("𝑓𝑜𝑥"), Some(2..5), "{pattern}");
    }
    for (p, f) in [
        ("(?:a)", ""),
        ("(?=a)", ""),
        ("(?!a)", ""),
        ("(?<=a)", ""),
        ("(?<!a)", ""),
        ("(?<a>x)\\k<a>", ""),
        ("(?<a>x)|(?<b>y)", "u"),
        ("\\p{L}", "u"),
    ] {
        assert!(Regex::with_flags(p, f).is_ok(), "/{p}/{f} should compile");
    }
}

// ---------------------------------------------------------------------------------------
// Property-style agreement with the unbounded APIs.

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

fn random_pattern(rng: &mut Rng, depth: u32) -> String {
    const ATOMS: &[&str] = &[
        "a", "b", "ab", ".", "[ab]", "[^a]", "\\w", "\\W", "\\b", "\\B", "^", "$", "😀", "\\s",
        "(?:)", "A", "[a-c]", "ſ", "\\1",
    ];
    const QUANTS: &[&str] = &[
        "", "", "", "*", "+", "?", "*?", "+?", "{0,2}", "{2}", "{1,}?",
    ];
    let n = 1 + rng.below(3);
    let mut s = String::new();
    for _ in 0..n {
        let atom = if depth > 0 && rng.below(3) == 0 {
            let inner = random_pattern(rng, depth - 1);
            match rng.below(6) {
                0 => format!("({inner})"),
                1 => format!("(?:{inner})"),
                2 => format!("(?={inner})"),
                3 => format!("(?!{inner})"),
                4 => format!("(?<={inner})"),
                _ => format!("(?<!{inner})"),
            }
        } else {
            rng.pick(ATOMS).to_string()
        };
        s.push_str(&atom);
        if !atom.starts_with("(?<") && !atom.starts_with("(?=") && !atom.starts_with("(?!") {
            s.push_str(rng.pick(QUANTS));
        }
    }
    if depth > 0 && rng.below(4) == 0 {
        s.push('|');
        s.push_str(&random_pattern(rng, depth - 1));
    }
    s
}

#[test]
fn bounded_agrees_with_unbounded() {
    const CHUNKS: &[&str] = &["a", "b", "A", " ", "😀", "ſ", "\n", "ab", "c"];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut compiled = 0;
    let mut checked = 0;
    for _ in 0..3000 {
        let pattern = random_pattern(&mut rng, 2);
        let flags = *["", "i", "u", "iu", "m", "s"].get(rng.below(6)).unwrap();
        let Ok(r) = Regex::with_flags(&pattern, flags) else {
            continue;
        };
        compiled += 1;
        let unicode = Flags::from(flags).unicode;
        for _ in 0..4 {
            let mut text = String::new();
            for _ in 0..rng.below(12) {
                text.push_str(rng.pick(CHUNKS));
            }
            let text = u(&text);
            let start = rng.below(text.len() + 2);
            let (got, spent) = cost(&r, &text, start);
            let want = if start <= text.len() {
                reference(&r, unicode, &text, start)
            } else {
                None
            };
            assert_eq!(
                got.as_ref().map(|m| (m.range(), m.captures.clone())),
                want.as_ref().map(|m| (m.range(), m.captures.clone())),
                "/{pattern}/{flags} on {text:?} from {start}"
            );
            // Exactly `spent` is enough, one less is not (the count is exact, never overshot).
            let mut steps = spent;
            let again = r.find_at_utf16_bounded(&text, start, &mut steps).unwrap();
            assert_eq!(range(&again), range(&got));
            assert_eq!(steps, 0);
            if spent > 0 {
                let mut steps = spent - 1;
                assert!(
                    r.find_at_utf16_bounded(&text, start, &mut steps).is_err(),
                    "/{pattern}/{flags} on {text:?} from {start} with {} steps",
                    spent - 1
                );
                assert_eq!(steps, 0);
            }
            // A random smaller budget either succeeds identically or runs out.
            let budget = rng.below(spent as usize + 1) as u64;
            let mut steps = budget;
            match r.find_at_utf16_bounded(&text, start, &mut steps) {
                Ok(m) => {
                    assert_eq!(range(&m), range(&got));
                    assert_eq!(budget - steps, spent);
                }
                Err(StepLimit) => assert_eq!(steps, 0),
            }
            checked += 1;
        }
    }
    eprintln!("property check: {compiled} patterns compiled, {checked} searches compared");
    assert!(compiled > 1000, "{compiled}");
}

/// stpreset patch: a lazy single-character loop is entered in O(1), so n matches of
/// `<t>[\s\S]*?</t>` cost O(text), not O(n · text) (upstream scanned to the end of the text
/// on every entry).
#[test]
fn lazy_loops_do_not_scan_ahead() {
    let re = Regex::from_unicode(
        "<t>[\\s\\S]*?<\\/t>".encode_utf16().map(u32::from),
        regress::Flags::default(),
    )
    .unwrap();
    let cost = |n: usize| {
        let text: Vec<u16> = "a<t>b</t>c ".repeat(n).encode_utf16().collect();
        let mut steps = 1u64 << 40;
        let before = steps;
        let (mut pos, mut found) = (0, 0);
        while let Ok(Some(m)) = re.find_at_utf16_bounded(&text, pos, &mut steps) {
            assert_eq!(m.end() - m.start(), 8);
            pos = m.end();
            found += 1;
        }
        assert_eq!(found, n);
        before - steps
    };
    let (small, large) = (cost(100), cost(1000));
    assert!(large < small * 11, "{small} -> {large}");
}

/// stpreset patch: quantified `\b`/`\B` are syntax errors and `\u{…}` without `u` is the
/// letter `u` followed by braces, as in V8 (Node 20).
#[test]
fn v8_syntax_details() {
    let compile = |p: &str, unicode: bool| {
        Regex::from_unicode(
            p.encode_utf16().map(u32::from),
            Flags {
                unicode,
                ..Flags::default()
            },
        )
    };
    for bad in [r"\b+", r"\B{1}", r"\b?", r"x\u{61}*"] {
        assert!(compile(bad, false).is_err(), "{bad}");
    }
    let find = |p: &str, unicode: bool, text: &str| {
        let re = compile(p, unicode).unwrap();
        let units: Vec<u16> = text.encode_utf16().collect();
        let mut steps = 1 << 30;
        re.find_at_utf16_bounded(&units, 0, &mut steps)
            .unwrap()
            .map(|m| String::from_utf16_lossy(&units[m.range()]))
    };
    assert_eq!(find(r"\u{2}", false, "uu").as_deref(), Some("uu"));
    assert_eq!(find(r"\u{61}", true, "a").as_deref(), Some("a"));
    assert_eq!(find(r"[\u{61}]", false, "{").as_deref(), Some("{"));
    assert_eq!(find(r"(?=a)*a", false, "a").as_deref(), Some("a"));
}

/// stpreset patch: the backtrack stack is capped (about 64 MiB), so memory does not grow
/// with the step budget; a search over the cap ends like one over its steps.
#[test]
fn backtrack_stack_is_capped() {
    let pattern = format!("(?:{}a)*[c]", "()".repeat(5000));
    let re = Regex::from_unicode(pattern.encode_utf16().map(u32::from), Flags::default()).unwrap();
    let text: Vec<u16> = "a".repeat(12_000).encode_utf16().collect();
    let mut steps = 100_000_000;
    assert!(matches!(
        re.find_at_utf16_bounded(&text, 0, &mut steps),
        Err(StepLimit)
    ));
    assert!(steps == 0);
}

/// stpreset patch: a loop's state is saved when it is entered afresh, so nested loops over
/// bodies that can match empty end as in V8 (upstream looped forever). Expected values were
/// produced by Node 20's `RegExp.prototype.exec`.
#[test]
fn nested_loops_over_empty_bodies_end() {
    // Pattern, text, and the match with its groups (None: no match).
    type Case<'a> = (&'a str, &'a str, Option<&'a [Option<&'a str>]>);
    let cases: [Case<'_>; 8] = [
        ("(?:(?:a*)*)*b", "a", None),
        ("(?:(?:a*)*)*b", "a ab", Some(&[Some("ab")])),
        (
            "((a|)*)*b",
            "aab",
            Some(&[Some("aab"), Some("aa"), Some("a")]),
        ),
        ("(?:(?:a?)*)*b", "a", None),
        ("(?:(?:a*)+)*b", "a", None),
        (
            "((a*)(b*))*c",
            "aabbabc",
            Some(&[Some("aabbabc"), Some("ab"), Some("a"), Some("b")]),
        ),
        ("(()|a)*b", "aab", Some(&[Some("aab"), Some("a"), None])),
        (
            "((a*?)*?)*?b",
            "aab",
            Some(&[Some("aab"), Some("a"), Some("a")]),
        ),
    ];
    for (pattern, text, want) in cases {
        let re =
            Regex::from_unicode(pattern.encode_utf16().map(u32::from), Flags::default()).unwrap();
        let units: Vec<u16> = text.encode_utf16().collect();
        let mut steps = 10_000;
        let got = re
            .find_at_utf16_bounded(&units, 0, &mut steps)
            .unwrap_or_else(|_| panic!("{pattern} on {text:?} ran out of steps"));
        let got: Option<Vec<Option<String>>> = got.map(|m| {
            std::iter::once(Some(m.range()))
                .chain(m.groups().skip(1))
                .map(|g| g.map(|r| String::from_utf16_lossy(&units[r])))
                .collect()
        });
        let want: Option<Vec<Option<String>>> =
            want.map(|w| w.iter().map(|g| g.map(str::to_string)).collect());
        assert_eq!(got, want, "{pattern} on {text:?}");
    }
}
