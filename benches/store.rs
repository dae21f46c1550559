//! Store operations at size n and 10n, so their growth can be read off (compare the two rows
//! of each group): import and toggle by nodes per preset, list by presets per server, render
//! through the cache (hit) and without it (load + compile + render every call) by nodes; and
//! how long a toggle by one store takes to reach another store's render. On SQLite, and on
//! PostgreSQL too when `STPRESET_TEST_POSTGRES` names a server (built with `--features
//! postgres`; `scripts/pg-throwaway start DIR` starts one). Then the corpus presets, cached vs
//! from the database.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::time::Duration;
use stpreset::{PresetStore, store::StoreOptions};

mod support;

/// Nodes per preset (import, toggle, render) and presets per server (list): n and 10n.
const NODES: [usize; 2] = [50, 500];
const PRESETS: [usize; 2] = [10, 100];

/// A preset of `n` nodes with a few macros each and a chat-history marker in the middle.
fn synthetic(n: usize) -> Vec<u8> {
    let mut prompts: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            json!({"identifier": format!("n{i}"), "name": format!("Node {i}"),
                   "content": format!("{{{{char}}}} talks to {{{{user}}}} about topic {i}. \
                                       {{{{setvar::t{i}::{i}}}}}{{{{getvar::t{i}}}}}")})
        })
        .collect();
    prompts.insert(n / 2, json!({"identifier": "chatHistory", "marker": true}));
    serde_json::to_vec(&json!({ "prompts": prompts })).expect("bench preset")
}

/// Where a bench's stores live: a SQLite file, or a PostgreSQL database of its own.
enum Target {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Target {
    fn backends() -> Vec<(&'static str, Target)> {
        let mut targets = vec![(
            "sqlite",
            Target::Sqlite(tempfile::tempdir().expect("temp dir")),
        )];
        match std::env::var("STPRESET_TEST_POSTGRES") {
            Ok(base) if cfg!(feature = "postgres") => {
                let name = format!("bench_{}", std::process::id());
                let made = std::process::Command::new("psql")
                    .arg(format!("{base} dbname=postgres"))
                    .args(["-qc", &format!("CREATE DATABASE {name}")])
                    .status()
                    .is_ok_and(|s| s.success());
                if made {
                    targets.push((
                        "postgres",
                        Target::Postgres(format!("{base} dbname={name}")),
                    ));
                }
            }
            _ => eprintln!(
                "store benches: PostgreSQL skipped (set STPRESET_TEST_POSTGRES, --features postgres)"
            ),
        }
        targets
    }

    fn open(&self, capacity: usize) -> PresetStore {
        let mut options = StoreOptions::default();
        options.cache_capacity = capacity;
        match self {
            Target::Sqlite(dir) => PresetStore::open_with(dir.path().join("ops.sqlite"), options),
            Target::Postgres(target) => PresetStore::open_with(target, options),
        }
        .expect("store opens")
    }
}

fn operations(c: &mut Criterion) {
    for (backend, target) in Target::backends() {
        operations_on(c, backend, &target);
    }
}

fn operations_on(c: &mut Criterion, backend: &str, target: &Target) {
    let ctx = support::realistic_context(20);
    let store = target.open(1024);
    // Server 1 000 + n holds one preset of n nodes; server 2 000 + n holds n presets.
    for n in NODES {
        store
            .import(1_000 + n as i64, "p", &synthetic(n))
            .expect("import");
    }
    for n in PRESETS {
        for i in 0..n {
            store
                .import(2_000 + n as i64, &format!("p{i}"), &synthetic(5))
                .expect("import");
        }
    }
    let uncached = target.open(0);
    let other = target.open(1024);

    let mut g = c.benchmark_group(format!("store/{backend}/import (nodes)"));
    for n in NODES {
        let bytes = synthetic(n);
        g.bench_with_input(BenchmarkId::from_parameter(n), &bytes, |b, bytes| {
            b.iter(|| {
                store
                    .import(3_000, "same", black_box(bytes))
                    .expect("import")
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group(format!("store/{backend}/list (presets)"));
    for n in PRESETS {
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| store.list(black_box(2_000 + n as i64)).expect("list"))
        });
    }
    g.finish();

    let mut g = c.benchmark_group(format!("store/{backend}/toggle one node (nodes)"));
    for n in NODES {
        let server = 1_000 + n as i64;
        let id = store.list(server).expect("list")[0].id;
        let mut on = false;
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                on = !on;
                store
                    .set_enabled(server, id, &[("n1", on)])
                    .expect("toggle")
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group(format!("store/{backend}/active, cached (nodes)"));
    for n in NODES {
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| store.active(black_box(1_000 + n as i64)).expect("active"))
        });
    }
    g.finish();

    let mut g = c.benchmark_group(format!("store/{backend}/render, cached (nodes)"));
    for n in NODES {
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                store
                    .render(1_000 + n as i64, black_box(&ctx))
                    .expect("render")
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group(format!("store/{backend}/render, uncached (nodes)"));
    for n in NODES {
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                uncached
                    .render(1_000 + n as i64, black_box(&ctx))
                    .expect("render")
            })
        });
    }
    g.finish();

    // A toggle by one store, then the other store's renders until they show it: the time for
    // a change to reach another instance (SQLite: its next render; PostgreSQL: a notification).
    let mut g = c.benchmark_group(format!("store/{backend}/toggle seen by another store"));
    let server = 1_000 + NODES[0] as i64;
    let id = store.list(server).expect("list")[0].id;
    let mut on = false;
    g.bench_function("50 nodes", |b| {
        b.iter(|| {
            let before = other.active(server).expect("active").expect("preset");
            on = !on;
            store
                .set_enabled(server, id, &[("n1", on)])
                .expect("toggle");
            // A new compiled preset is one loaded after the change was heard.
            while std::sync::Arc::ptr_eq(
                &before,
                &other.active(server).expect("active").expect("preset"),
            ) {}
        })
    });
    g.finish();
}

fn corpus(c: &mut Criterion) {
    let ctx = support::realistic_context(200);
    let target = Target::Sqlite(tempfile::tempdir().expect("temp dir"));
    let store = target.open(1024);
    for path in support::corpus() {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.contains("Default") && !name.contains("NemoEngine-11") {
            continue;
        }
        let bytes = std::fs::read(&path).expect("corpus preset");
        store.import(1, &name, &bytes).expect("import");
        let mut g = c.benchmark_group(format!("store/{name}"));
        g.bench_function("cached render", |b| {
            b.iter(|| store.render(1, black_box(&ctx)))
        });
        g.bench_function("render from database", |b| {
            b.iter(|| {
                let (_, preset) = store.load_active(1).expect("load").expect("active");
                preset.compile().render(black_box(&ctx))
            })
        });
        g.finish();
    }
}

fn config() -> Criterion {
    // Two shared cores: short runs; the n-vs-10n ratio matters, not the last percent.
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = operations, corpus
}
criterion_main!(benches);
