//! Compile and render time for every corpus preset (read from `../shared/corpus/presets`,
//! skipped when absent) with a 200-message history, plus the cold path (import + compile +
//! render) for each, and a render of the same context kept as a `Chat`; compile throughput over each preset's enabled text; and the floor of a
//! render, one `memcpy` of the bytes it outputs (compare `render` with `floor`).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use stpreset::Preset;

mod support;

fn bench(c: &mut Criterion) {
    // `HISTORY=0 cargo bench --bench render` gives each render's fixed cost (what a short
    // chat pays), the default 200 messages what a long one pays.
    let n: usize = std::env::var("HISTORY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let ctx = support::realistic_context(n);
    let chat = stpreset::Chat::from_json(&support::realistic_context_json(n)).unwrap();
    let mut st_chat = chat.clone();
    st_chat.set_json(br#"{"layout": "sillytavern"}"#).unwrap();
    for path in support::corpus() {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let preset = Preset::from_json(&bytes).unwrap();
        let compiled = preset.compile();
        let mut g = c.benchmark_group(&name);
        g.bench_function("import", |b| {
            b.iter(|| Preset::from_json(black_box(&bytes)))
        });
        g.bench_function("compile", |b| b.iter(|| black_box(&preset).compile()));
        g.bench_function("render", |b| b.iter(|| compiled.render(black_box(&ctx))));
        // The SillyTavern layout of the same context (SPEC §17): its prompt list is built on
        // the first render and kept, so this is a turn's cost.
        let mut st_ctx = ctx.clone();
        st_ctx.layout = stpreset::Layout::SillyTavern;
        g.bench_function("render_sillytavern", |b| {
            b.iter(|| compiled.render(black_box(&st_ctx)))
        });
        // What a bot keeping a `Chat` pays per turn (issue 20).
        g.bench_function("render_chat", |b| {
            b.iter(|| compiled.render_chat(black_box(&chat)))
        });
        // The same in the SillyTavern layout: what a bot keeping a `Chat` pays in it.
        g.bench_function("render_chat_sillytavern", |b| {
            b.iter(|| compiled.render_chat(black_box(&st_chat)))
        });
        g.bench_function("cold", |b| {
            b.iter(|| {
                Preset::from_json(black_box(&bytes))
                    .unwrap()
                    .compile()
                    .render(&ctx)
            })
        });
        // The floor: copying the rendered text once, as one block.
        let out: String = compiled
            .render(&ctx)
            .messages
            .iter()
            .map(|m| m.text())
            .collect();
        let src = out.as_bytes();
        let mut dst = vec![0u8; src.len()];
        g.bench_function("floor", |b| {
            b.iter(|| dst.copy_from_slice(black_box(src)));
        });
        g.finish();
        let enabled = enabled_bytes(&preset);
        let mut g = c.benchmark_group("compile-throughput");
        g.throughput(Throughput::Bytes(enabled as u64));
        g.bench_function(&name, |b| b.iter(|| black_box(&preset).compile()));
        g.finish();
    }
    // The whole corpus's enabled text in one figure (the #12 target): every preset compiled once.
    let presets: Vec<Preset> = support::corpus()
        .iter()
        .map(|p| Preset::from_json(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    let enabled: usize = presets.iter().map(enabled_bytes).sum();
    if enabled > 0 {
        let mut g = c.benchmark_group("compile-throughput");
        g.throughput(Throughput::Bytes(enabled as u64));
        g.bench_function("corpus", |b| {
            b.iter(|| {
                for p in &presets {
                    black_box(black_box(p).compile());
                }
            })
        });
        g.finish();
    }
    // What a language binding does per render on the largest preset: read the context JSON,
    // render, write the result JSON (compare with `render` above; bindings/*/bench.* time the
    // whole call from JavaScript and Python).
    if let Some(path) = support::corpus()
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
    {
        let compiled = Preset::from_json(&std::fs::read(&path).unwrap())
            .unwrap()
            .compile();
        let json = support::realistic_context_json(200);
        let mut g = c.benchmark_group("binding-crossing");
        g.bench_function("context-json+render+to-json", |b| {
            b.iter(|| {
                let ctx = stpreset::Context::from_json(black_box(&json)).unwrap();
                compiled.render(&ctx).to_json()
            })
        });
        g.bench_function("context-json", |b| {
            b.iter(|| stpreset::Context::from_json(black_box(&json)).unwrap())
        });
        g.finish();
    }
}

/// The bytes a compile parses: the enabled, non-marker nodes' text.
fn enabled_bytes(preset: &Preset) -> usize {
    preset
        .nodes()
        .iter()
        .filter(|n| n.enabled && !n.is_marker())
        .map(|n| n.content.len())
        .sum()
}

criterion_group!(benches, bench);
criterion_main!(benches);
