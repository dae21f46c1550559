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

/// Compiles with room for the multi-megabyte inputs here (the default cut is 2 MiB).
fn compile_big(src: &str) -> Template {
    let mut limits = stpreset::Limits::default();
    limits.template_bytes = stpreset::Limits::MAX.template_bytes;
    Template::compile_with(src, &limits)
}

#[test]
fn templates_past_the_limit_are_cut_and_reported() {
    let src = "é".repeat(1 << 20) + "{{user}}";
    let out = Template::compile(&src).render(&Context::default());
    assert_eq!(out.text.len(), 2 << 20);
    assert_eq!(count(&out, DiagnosticKind::LimitReached), 1);
    let Err(err) = Template::from_bytes(src.as_bytes()) else {
        panic!("a template over the limit is refused")
    };
    assert!(err.to_string().contains("over the limit"), "{err}");
}

#[test]
fn limits_above_the_hard_maxima_are_clamped() {
    let mut ctx = Context::default();
    ctx.options.limits.dice_count = u32::MAX;
    ctx.options.limits.dice_sides = u32::MAX;
    ctx.options.limits.dice_modifier = u32::MAX;
    let out = Template::compile("{{roll:4294967295d4294967295+4294967295}}").render(&ctx);
    let sum: i64 = out.text.parse().expect("a number");
    let max = stpreset::Limits::MAX;
    assert!(sum >= max.dice_count as i64 + max.dice_modifier as i64);
    assert!(sum <= max.dice_count as i64 * max.dice_sides as i64 + max.dice_modifier as i64);
    let mut limits = stpreset::Limits::default();
    limits.tag_nesting = usize::MAX;
    limits.block_nesting = usize::MAX;
    let deep = "{{#if user}}".repeat(10_000) + &"{{getvar::".repeat(10_000);
    let out =
        on_small_stack(move || Template::compile_with(&deep, &limits).render(&Context::default()));
    assert!(count(&out, DiagnosticKind::NestingLimit) >= 10_000 - max.block_nesting);
}

fn roomy() -> Context {
    let mut ctx = Context::default();
    ctx.options.limits.output_bytes = usize::MAX;
    ctx
}

#[test]
fn a_million_unclosed_openers() {
    let out = on_small_stack(|| {
        // One brace run: only its last two braces open a tag.
        let src = "{{".repeat(1_000_000);
        assert_eq!(compile_big(&src).render(&roomy()).text, src);
        // Separate unclosed tags: 64 nest, the 65th starts a literal run to the end.
        let src = "{{a ".repeat(1_000_000);
        let out = compile_big(&src).render(&roomy());
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
        let out = compile_big(&src).render(&roomy());
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
            let out = compile_big(&src).render(&Context::default());
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
        let out = compile_big(&src).render(&Context::default());
        assert_eq!(out.text, "x");
    });
}

#[test]
fn comment_without_end_and_enormous_rolls() {
    on_small_stack(|| {
        let src = format!("{{{{// {}", "{{x}} ".repeat(100_000));
        let out = compile_big(&src).render(&roomy());
        assert_eq!(out.text, src, "an unclosed comment is literal text");
        let out = Template::compile(&"{{roll:999999999d999999999+999999999}}".repeat(2_000))
            .render(&roomy());
        // Capped at 100d1000+1000000: every roll is a 7-digit number.
        assert_eq!(out.text.len(), 2_000 * 7);
    });
}

#[test]
fn presets_at_scale() {
    use serde_json::json;
    let ctx = Context::from_json(
        br#"{"items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "h"}]}"#,
    )
    .unwrap();
    let mut limits = stpreset::Limits::default();
    limits.preset_bytes = 64 << 20;
    on_small_stack(move || {
        // 100 000 nodes.
        let prompts: Vec<_> = (0..100_000)
            .map(|i| json!({"identifier": format!("n{i}"), "content": "x{{setvar::k::v}}"}))
            .collect();
        let bytes = serde_json::to_vec(&json!({"prompts": prompts})).unwrap();
        let out = stpreset::Preset::from_json_with(&bytes, &limits)
            .unwrap()
            .compile()
            .render(&ctx);
        assert_eq!(out.messages.len(), 100_001);
        // Depth 2^31 − 1 injections clamp to the first history item.
        let mut prompts = vec![json!({"identifier": "chatHistory", "marker": true})];
        prompts.extend((0..1000).map(|i| {
            json!({"identifier": format!("d{i}"), "content": "J",
            "injection_position": 1, "injection_depth": 2147483647u32})
        }));
        let bytes = serde_json::to_vec(&json!({"prompts": prompts})).unwrap();
        let out = stpreset::Preset::from_json(&bytes)
            .unwrap()
            .compile()
            .render(&ctx);
        assert_eq!(out.messages.len(), 1);
        assert_eq!(out.messages[0].parts().len(), 2);
        // A single node just under 2 MiB of mixed syntax.
        let unit = "Text {{user}} {{getvar::x}} {{#if user}}y{{/if}} {{// c}} ";
        let content = unit.repeat((2 << 20) / unit.len() - 100);
        let bytes =
            serde_json::to_vec(&json!({"prompts": [{"identifier": "big", "content": content}]}))
                .unwrap();
        assert!(bytes.len() <= 2 << 20);
        let out = stpreset::Preset::from_json(&bytes)
            .unwrap()
            .compile()
            .render(&ctx);
        assert!(out.messages[0].text().starts_with("Text User  y"));
    });
}
