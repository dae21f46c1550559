//! Hostile templates must parse and render in linear time without overflowing a small stack.
//! (Timing belongs in `benches/`; these tests prove completion and stack safety.)

use stpreset::{Context, DiagnosticKind, Template};

/// Runs `f` on a thread with a 256 KiB stack: deep recursion would abort the test process.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic")
}

fn count(out: &stpreset::Expansion, kind: DiagnosticKind) -> usize {
    out.diagnostics.iter().filter(|d| d.kind == kind).count()
}

fn roomy() -> Context {
    let mut ctx = Context::default();
    ctx.limits.output_bytes = usize::MAX;
    ctx
}

#[test]
fn a_million_unclosed_openers() {
    let out = on_small_stack(|| {
        // One brace run: only its last two braces open a tag.
        let src = "{{".repeat(1_000_000);
        assert_eq!(Template::compile(&src).render(&roomy()).text, src);
        // Separate unclosed tags: 64 nest, the 65th starts a literal run to the end.
        let src = "{{a ".repeat(1_000_000);
        let out = Template::compile(&src).render(&roomy());
        assert_eq!(out.text, src, "unclosed `{{` stay literal");
        out
    });
    assert_eq!(count(&out, DiagnosticKind::LimitReached), 1);
}

#[test]
fn a_million_nested_ifs() {
    let out = on_small_stack(|| {
        let mut src = "{{#if user}}".repeat(1_000_000);
        src.push('x');
        let out = Template::compile(&src).render(&roomy());
        // 32 levels render (their openers vanish), the rest stays literal.
        assert_eq!(out.text.len(), src.len() - 32 * "{{#if user}}".len());
        out
    });
    assert_eq!(count(&out, DiagnosticKind::NestingLimit), 1_000_000 - 32);
    assert_eq!(count(&out, DiagnosticKind::UnclosedBlock), 32);
}

#[test]
fn a_million_unclosed_arguments_and_tomori_blocks() {
    on_small_stack(|| {
        for unit in [
            "{{m::",
            "{{if tool:x}}",
            "{{/if}}",
            "{{// ",
            "}}",
            "{{else}}",
        ] {
            let src = unit.repeat(200_000);
            let out = Template::compile(&src).render(&Context::default());
            assert!(out.text.len() <= src.len(), "{unit}");
        }
    });
}

#[test]
fn deep_nesting_inside_arguments_and_blocks() {
    // 63 argument levels, each holding 32 block levels (whose opener tags are the 64th tag
    // level): the deepest structure that still renders.
    on_small_stack(|| {
        let mut src = String::new();
        for _ in 0..63 {
            src.push_str("{{reverse::");
            src.push_str(&"{{#if user}}".repeat(32));
        }
        src.push('x');
        for _ in 0..63 {
            src.push_str(&"{{/if}}".repeat(32));
            src.push_str("}}");
        }
        let out = Template::compile(&src).render(&Context::default());
        assert_eq!(out.text, "x");
    });
}
