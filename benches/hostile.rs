//! Hostile inputs at size n and 10n: time must grow linearly (compare the two rows of each
//! group). Templates render through `Template`, presets through import + compile + render.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use stpreset::{Context, Preset, Template};

/// A named input generator: size n → input.
type Case<T> = (&'static str, fn(usize) -> T);

fn ctx() -> Context {
    Context::from_json(
        br#"{"user": "Alice", "char": "Tomori", "now": "2026-11-29T17:07:00Z",
             "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#,
    )
    .expect("bench context")
}

fn templates(c: &mut Criterion) {
    let cases: [Case<String>; 7] = [
        ("nested-if", |n| "{{#if user}}".repeat(n)),
        ("unclosed-args", |n| "{{m::".repeat(n)),
        ("unclosed-tags", |n| "{{a ".repeat(n)),
        ("stray-closers", |n| "{{/if}}".repeat(n)),
        ("comment-without-end", |n| {
            format!("{{{{// {}", "{{x}} ".repeat(n))
        }),
        ("enormous-rolls", |n| {
            "{{roll:999999999d999999999+999999999}}".repeat(n)
        }),
        ("setvar-doubling", |n| {
            "{{setvar::a::xy}}".to_string()
                + &"{{setvar::a::{{getvar::a}}{{getvar::a}}}}".repeat(n / 1000)
                + "{{getvar::a}}"
        }),
    ];
    let ctx = ctx();
    for case in cases {
        at_n_and_10n(c, case, |src| {
            Template::compile(black_box(src)).render(&ctx)
        });
    }
}

/// Benches one hostile input at n = 10 000 and 10n.
fn at_n_and_10n<T, R>(c: &mut Criterion, (name, make): Case<T>, run: impl Fn(&T) -> R) {
    let mut g = c.benchmark_group(format!("hostile/{name}"));
    g.sample_size(10);
    for n in [10_000, 100_000] {
        let input = make(n);
        g.bench_with_input(BenchmarkId::from_parameter(n), &input, |b, input| {
            b.iter(|| run(input))
        });
    }
    g.finish();
}

fn preset_bytes(prompts: Vec<serde_json::Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({ "prompts": prompts })).expect("bench preset")
}

fn presets(c: &mut Criterion) {
    let cases: [Case<Vec<u8>>; 3] = [
        ("many-nodes", |n| {
            preset_bytes(
                (0..n)
                    .map(|i| json!({"identifier": format!("n{i}"), "content": "{{user}} {{setvar::k::v}}"}))
                    .collect(),
            )
        }),
        ("max-depth-injections", |n| {
            let mut p = vec![json!({"identifier": "chatHistory", "marker": true})];
            p.extend((0..n).map(|i| {
                json!({"identifier": format!("d{i}"), "content": "J", "injection_position": 1,
                       "injection_depth": 2147483647u32})
            }));
            preset_bytes(p)
        }),
        ("one-big-node", |n| {
            let unit = "Text {{user}} {{getvar::x}} {{#if user}}y{{/if}} ";
            preset_bytes(vec![
                json!({"identifier": "big", "content": unit.repeat(n / unit.len() * 20)}),
            ])
        }),
    ];
    let ctx = ctx();
    // 100 000 nodes do not fit in 2 MiB of JSON: lift the file limit so the bench measures
    // rendering, not the refusal.
    let mut roomy = stpreset::Limits::default();
    roomy.preset_bytes = 64 << 20;
    for case in cases {
        at_n_and_10n(c, case, |bytes| {
            Preset::from_json_with(black_box(bytes), &roomy).map(|p| p.compile().render(&ctx))
        });
    }
}

criterion_group!(benches, templates, presets);
criterion_main!(benches);
