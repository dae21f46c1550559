//! Every limit of SPEC §8 (and the memory and work bounds of §10) at limit − 1, limit and
//! limit + 1, through the public API with small configured values.

use stpreset::{Context, DiagnosticKind, Limits, Preset, Template};

fn ctx_with(f: impl FnOnce(&mut Limits)) -> Context {
    let mut c = Context::from_json(br#"{"user": "Alice", "now": "2026-11-29T17:07:00Z"}"#).unwrap();
    f(&mut c.options.limits);
    c
}

fn render(t: &str, c: &Context) -> (String, Vec<DiagnosticKind>) {
    let out = Template::compile_with(t, &c.options.limits).render(c);
    (out.text, out.diagnostics.iter().map(|d| d.kind).collect())
}

fn count(k: &[DiagnosticKind], kind: DiagnosticKind) -> usize {
    k.iter().filter(|&&x| x == kind).count()
}

#[test]
fn block_nesting() {
    let c = ctx_with(|l| l.block_nesting = 4);
    for depth in [3, 4, 5] {
        let t = format!(
            "{}x{}",
            "{{#if user}}".repeat(depth),
            "{{/if}}".repeat(depth)
        );
        let (text, k) = render(&t, &c);
        let literal = depth.saturating_sub(4);
        let want = format!(
            "{}x{}",
            "{{#if user}}".repeat(literal),
            "{{/if}}".repeat(literal)
        );
        assert_eq!(text, want, "depth {depth}");
        assert_eq!(count(&k, DiagnosticKind::NestingLimit), literal);
    }
}

#[test]
fn tag_nesting() {
    let c = ctx_with(|l| l.tag_nesting = 4);
    for depth in [3, 4, 5] {
        let t = format!(
            "{}{{{{user}}}}{}",
            "{{reverse::".repeat(depth - 1),
            "}}".repeat(depth - 1)
        );
        let (text, k) = render(&t, &c);
        let reversed = if (depth - 1) % 2 == 0 {
            "Alice"
        } else {
            "ecilA"
        };
        if depth <= 4 {
            assert_eq!(text, reversed, "depth {depth}");
            assert!(k.is_empty());
        } else {
            // The fifth level stays literal text: `{{user}}` reversed an even number of times.
            assert_eq!(text, "{{user}}");
            assert_eq!(count(&k, DiagnosticKind::LimitReached), 1);
        }
    }
}

#[test]
fn output_bytes() {
    for limit in [4, 5, 6] {
        let c = ctx_with(|l| l.output_bytes = limit);
        let (text, k) = render("abcde", &c);
        assert_eq!(text, &"abcde"[..limit.min(5)]);
        assert_eq!(
            count(&k, DiagnosticKind::LimitReached),
            usize::from(limit < 5)
        );
    }
    // Presets: the crossing message is cut, later ones dropped.
    let p = Preset::from_json(br#"{"prompts": [{"identifier": "a", "content": "abc"}, {"identifier": "b", "content": "de"}]}"#).unwrap();
    for limit in [4, 5, 6] {
        let c = ctx_with(|l| l.output_bytes = limit);
        let out = p.compile().render(&c);
        let joined: String = out.messages.iter().map(|m| m.text().into_owned()).collect();
        assert_eq!(joined, &"abcde"[..limit.min(5)]);
    }
}

#[test]
fn variable_bytes() {
    for limit in [4, 5, 6] {
        let c = ctx_with(|l| l.variable_bytes = limit);
        let (text, k) = render("{{setvar::v::12345}}{{getvar::v}}", &c);
        assert_eq!(text, &"12345"[..limit.min(5)]);
        assert_eq!(
            count(&k, DiagnosticKind::LimitReached),
            usize::from(limit < 5)
        );
    }
}

#[test]
fn variables_total_bytes() {
    for limit in [9, 10, 11] {
        let c = ctx_with(|l| l.variables_total_bytes = limit);
        let (text, k) = render(
            "{{setvar::a::12345}}{{setvar::b::67890}}{{getvar::a}}{{getvar::b}}",
            &c,
        );
        assert_eq!(text, &"1234567890"[..limit.min(10)]);
        assert_eq!(
            count(&k, DiagnosticKind::LimitReached),
            usize::from(limit < 10)
        );
    }
}

#[test]
fn work_bytes() {
    // "ab" is 2 bytes of text, each `{{user}}` produces 5.
    for (limit, want) in [(11, "abAlice"), (12, "abAliceAlice"), (13, "abAliceAlice")] {
        let c = ctx_with(|l| l.work_bytes = limit);
        let (text, k) = render("ab{{user}}{{user}}", &c);
        assert_eq!(text, want, "budget {limit}");
        assert_eq!(
            count(&k, DiagnosticKind::LimitReached),
            usize::from(limit < 12)
        );
    }
}

#[test]
fn preset_bytes() {
    let doc = br#"{"prompts": [{"identifier": "a"}]}"#;
    for limit in [doc.len() - 1, doc.len(), doc.len() + 1] {
        let mut limits = Limits::default();
        limits.preset_bytes = limit;
        assert_eq!(
            Preset::from_json_with(doc, &limits).is_ok(),
            limit >= doc.len()
        );
    }
}

#[test]
fn dice_caps() {
    let c = ctx_with(|l| {
        l.dice_count = 5;
        l.dice_sides = 7;
        l.dice_modifier = 9;
    });
    for (n, want) in [(4, "4"), (5, "5"), (6, "5")] {
        assert_eq!(render(&format!("{{{{roll:{n}d1}}}}"), &c).0, want);
    }
    for (z, want) in [(8, "9"), (9, "10"), (10, "10")] {
        assert_eq!(render(&format!("{{{{roll:1d1+{z}}}}}"), &c).0, want);
    }
    for sides in [6, 7, 8] {
        for seed in 0..40 {
            let mut c2 = c.clone();
            c2.seed = seed;
            let v: u32 = render(&format!("{{{{roll:1d{sides}}}}}"), &c2)
                .0
                .parse()
                .unwrap();
            assert!((1..=sides.min(7)).contains(&v));
        }
    }
}

#[test]
fn spent_budget_leaves_placeholders_as_written() {
    let mut c = ctx_with(|l| l.work_bytes = 3);
    c.host.set_tool_name("t", "tool");
    let (text, k) = render("ab{{user}} <USER> <BOT> {user} {t}", &c);
    assert_eq!(text, "ab <USER> <BOT> {user} {t}");
    assert_eq!(count(&k, DiagnosticKind::LimitReached), 1);
}

/// The object variable macros (`setvarkey`): the JSON a write makes must fit the variable
/// caps whole, else nothing is written (a cut JSON text would not parse); an array index far
/// past the end is refused before the array is built.
#[test]
fn object_variables_fit_the_variable_caps_whole() {
    // `{"a":"xyz"}` is 11 bytes.
    for (limit, want) in [(10, ""), (11, r#"{"a":"xyz"}"#), (12, r#"{"a":"xyz"}"#)] {
        let c = ctx_with(|l| l.variable_bytes = limit);
        let (text, k) = render("{{setvarkey::o::a::xyz}}{{getvar::o}}", &c);
        assert_eq!(text, want, "limit {limit}");
        assert_eq!(
            count(&k, DiagnosticKind::LimitReached),
            usize::from(limit < 11)
        );
    }
    // JavaScript would build an array of 4 billion holes; here the write is refused at once.
    let mut c = ctx_with(|_| {});
    c.variables.insert("a".into(), "[1]".into());
    let (text, k) = render(
        "{{setvarkey::a::4294967294::x}}{{setvarkey::a::length::4294967295}}[{{getvar::a}}]",
        &c,
    );
    assert_eq!(text, "[[1]]");
    assert_eq!(count(&k, DiagnosticKind::LimitReached), 2);
}

/// Every `getvarkey` parses the variable's JSON: the bytes are charged to the work budget, so
/// many reads of a large variable stop at the budget instead of costing reads × size.
#[test]
fn object_variable_reads_are_charged() {
    let big = format!("{{\"k\": \"{}\"}}", "x".repeat(100_000));
    let mut c = ctx_with(|l| l.work_bytes = 1_000_000);
    c.variables.insert("v".into(), big);
    let (text, k) = render(&"{{getvarkey::v::nothing}}".repeat(1000), &c);
    assert_eq!(text, "");
    assert_eq!(count(&k, DiagnosticKind::LimitReached), 1);
}
