//! Compile and render time for every corpus preset (read from `../shared/corpus/presets`,
//! skipped when absent) with a 200-message history, plus the cold path (import + compile +
//! render) for each.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use stpreset::Preset;

mod support;

fn bench(c: &mut Criterion) {
    let ctx = support::realistic_context(200);
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
        g.bench_function("cold", |b| {
            b.iter(|| {
                Preset::from_json(black_box(&bytes))
                    .unwrap()
                    .compile()
                    .render(&ctx)
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
