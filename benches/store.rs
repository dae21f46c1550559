//! Rendering a server's active preset through the store: from the cache vs from the database
//! (load + compile on every call).

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use stpreset::PresetStore;

mod support;

fn bench(c: &mut Criterion) {
    let ctx = support::realistic_context(200);
    let dir = std::env::temp_dir().join(format!("stpreset-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let store = PresetStore::open(dir.join("bench.sqlite")).expect("store opens");
    for path in support::corpus() {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if !name.contains("Default") && !name.contains("NemoEngine-11") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        store.import(1, &name, &bytes).unwrap();
        let mut g = c.benchmark_group(format!("store/{name}"));
        g.bench_function("cached render", |b| {
            b.iter(|| store.render(1, black_box(&ctx)))
        });
        g.bench_function("render from database", |b| {
            b.iter(|| {
                let (_, preset) = store.load_active(1).unwrap().unwrap();
                preset.compile().render(black_box(&ctx))
            })
        });
        g.finish();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
