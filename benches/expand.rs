//! Parse and render throughput of a generated ~100 KB template that mixes text, macros,
//! variables, blocks of both dialects, comments and placeholders; and parse throughput of a
//! dense one (a tag every ~14 bytes).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use stpreset::{Context, Template};

/// Deterministic mixed template of at least `size` bytes.
fn template(size: usize) -> String {
    let mut t = String::with_capacity(size + 512);
    let mut i = 0usize;
    while t.len() < size {
        t.push_str("You are {{char}}, speaking with {{user}}. Stay in character and write vivid, ");
        t.push_str("grounded prose. Avoid repeating phrases from earlier replies.\n");
        t.push_str(&format!(
            "{{{{setvar::turn_{i}::{{{{getvar::turn}}}}}}}}{{{{incvar::turn}}}}"
        ));
        t.push_str(
            "{{#if description}}<character>{{description}}</character>{{else}}none{{/if}}\n",
        );
        t.push_str("{{if capability:web_search}}Use {search_tool} when facts matter.{{else}}Do not browse.{{/if}}\n");
        t.push_str("{{// authors leave notes like this one {{setvar::x::1}} }}");
        t.push_str("Mood: {{random::calm::tense::playful}}; roll {{roll:1d20}}; ");
        t.push_str(&format!(
            "{{{{#unless getvar::flag_{i}}}}}first time{{{{/unless}}}} "
        ));
        t.push_str("{{time}} on {{weekday}}. \\{literal braces\\} and <USER>.\n\n");
        i += 1;
    }
    t
}

/// A dense template: a tag every ~14 bytes (names, variables, arguments, blocks, shorthand),
/// the shape where per-token parse cost dominates.
fn dense(size: usize) -> String {
    const PIECES: [&str; 6] = [
        "Hi {{user}}, ",
        "{{getvar::x}} ",
        "{{char}} says ",
        "{{#if flag}}yes{{/if}} ",
        "{{random::a::b}} ",
        "{{.mood}} ok ",
    ];
    let mut t = String::with_capacity(size + 32);
    for piece in PIECES.iter().cycle() {
        if t.len() >= size {
            break;
        }
        t.push_str(piece);
    }
    t
}

fn context() -> Context {
    Context::from_json(
        br#"{"user": "Alice", "char": "Tomori", "description": "A shrine maiden.",
             "now": "2026-11-29T17:07:00Z", "seed": 1, "capabilities": {"web_search": true},
             "tool_phrases": {"search_tool": "the web search tool"}}"#,
    )
    .expect("bench context parses")
}

fn bench(c: &mut Criterion) {
    let src = template(100 * 1024);
    let ctx = context();
    let compiled = Template::compile(&src);
    let mut g = c.benchmark_group("expand-100KB");
    g.throughput(Throughput::Bytes(src.len() as u64));
    g.bench_function("parse", |b| b.iter(|| Template::compile(black_box(&src))));
    g.bench_function("render", |b| b.iter(|| compiled.render(black_box(&ctx))));
    g.bench_function("parse+render", |b| {
        b.iter(|| Template::compile(black_box(&src)).render(&ctx))
    });
    g.finish();

    let dense = dense(100 * 1024);
    let mut g = c.benchmark_group("dense-100KB");
    g.throughput(Throughput::Bytes(dense.len() as u64));
    g.bench_function("parse", |b| b.iter(|| Template::compile(black_box(&dense))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
