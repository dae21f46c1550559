//! Regex scripts (SPEC §13) on NemoNet 2.0 and NemoEngine 11.5.2 (from `../shared`, skipped
//! when absent) over a realistic 200-message history whose replies carry `<think>`, `<plan>`,
//! tracker and pad blocks (~1–5 KB each):
//! - `off`: the render with scripts not allowed (the baseline), hot in a loop;
//! - `off-next`: the same render in the same situation as `next` (a preset compiled and
//!   rendered with 200 messages, then the 201-message render), scripts not allowed;
//! - `first`: the first render with scripts allowed (a freshly compiled preset, empty cache);
//! - `next`: the render a bot does next turn, one message appended (the cache holds the rest);
//!   the issue's target is `next` ≤ 1.5 × the render with scripts off (`off-next` is that
//!   render measured the same way);
//! - `store`: one reply through the store pass.
//!
//! `compile/*` (issue 38): a preset of hostile patterns, freshly compiled, through one store
//! pass with the default limits: what compiling costs before the pass's budget stops it.
//! At the caps of one pattern: `wide-classes`, 40 patterns of 256 case-insensitive `[\s\S]`
//! (~48 µs each to fold); `properties`, 20 of 256 `\p{L}`; and `css`, 100 copies of an
//! 8.9 KB case-insensitive CSS pattern a fuzzer found.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;
use stpreset::{Context, Preset, Role};

/// A reply as the corpus presets' models write them (deterministic, `i` varies it).
fn reply(i: usize) -> String {
    let para = "Tomori's breath hitched as the lantern swung past the archive door. Her heart pounded, \
                and she smiled warmly despite the fear; the scent of ozone filled the air. ";
    let body = para.repeat(2 + i % 12);
    format!(
        "<think>\nAlice wants to sneak in tonight (turn {i}). Tomori would hesitate, then go along.\n{}</think>\n\
         <plan>\nBeat: Tomori balks at the locked door.\nRisk: the guard's lantern.\n</plan>\n\
         {body}\n<nemo-pad>padding {i}</nemo-pad>\n\
         <st-tracker type=\"status\" title=\"Archive Run\"><st-row k=\"Location\" v=\"Archive\"/>\
         <st-bar k=\"Suspicion\" v=\"{}\"/></st-tracker>",
        "Tension first, then a choice. ".repeat(3 + i % 5),
        30 + i % 40
    )
}

fn context(messages: usize, allow: bool) -> Context {
    let mut items = vec![
        json!({"tag": "SYSTEM_PERSONA_PROMPT", "role": "system", "text": "{{char}} is a shrine maiden."}),
        json!({"tag": "KNOWLEDGE_LOREBOOK_BEFORE", "role": "system", "text": "The archive is old."}),
    ];
    for i in 0..messages {
        if i % 2 == 0 {
            items.push(json!({"tag": "DIALOGUE_HISTORY", "role": "user", "name": "Alice",
                "text": format!("*sneaks closer* Message {i}: we should look at the east wing shelves.")}));
        } else {
            items.push(json!({"tag": "DIALOGUE_HISTORY", "role": "model", "name": "Tomori", "text": reply(i)}));
        }
    }
    let doc = json!({"user": "Alice", "char": "Tomori", "seed": 7, "chat_id": "c",
        "now": "2026-11-29T17:07:00Z", "allow_preset_regex": allow, "items": items});
    Context::from_json(doc.to_string().as_bytes()).unwrap()
}

fn bench(c: &mut Criterion) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/presets");
    for name in ["nemo__NemoNet-2.0", "nemo__NemoEngine-11.5.2-General-RP"] {
        let Ok(bytes) = std::fs::read(dir.join(format!("{name}.json"))) else {
            eprintln!("SKIPPED: {name} not found (../shared is not beside this checkout)");
            continue;
        };
        let preset = Preset::from_json(&bytes).unwrap();
        let compiled = preset.compile();
        let (off, on) = (context(200, false), context(200, true));
        let next = context(201, true);
        let off_next = context(201, false);
        let mut g = c.benchmark_group(format!("regex/{name}"));
        g.sample_size(20);
        g.bench_function("off", |b| b.iter(|| compiled.render(black_box(&off))));
        g.bench_function("first", |b| {
            b.iter_batched(
                || preset.compile(),
                |p| {
                    p.render(black_box(&on));
                    p
                },
                BatchSize::PerIteration,
            )
        });
        g.bench_function("next", |b| {
            b.iter_batched(
                || {
                    let p = preset.compile();
                    p.render(&on);
                    p
                },
                |p| {
                    p.render(black_box(&next));
                    p
                },
                BatchSize::PerIteration,
            )
        });
        g.bench_function("off-next", |b| {
            b.iter_batched(
                || {
                    let p = preset.compile();
                    p.render(&off);
                    p
                },
                |p| {
                    p.render(black_box(&off_next));
                    p
                },
                BatchSize::PerIteration,
            )
        });
        let text = reply(7);
        g.bench_function("store", |b| {
            b.iter(|| compiled.store_message(black_box(&text), Role::Model, &on))
        });
        g.finish();
    }
}

/// A preset whose scripts have these find patterns (placement: AI output).
fn hostile(finds: impl Iterator<Item = String>) -> Vec<u8> {
    let scripts: Vec<_> = finds
        .map(|f| json!({"findRegex": f, "replaceString": "x", "placement": [2]}))
        .collect();
    let doc = json!({"prompts": [{"identifier": "main", "content": "M"}],
        "extensions": {"regex_scripts": scripts}});
    doc.to_string().into_bytes()
}

fn compile(c: &mut Criterion) {
    let css = format!(
        "/(?:\\r?\\n){}<nemo-pad>[\\s\\S]*?<\\/nemo-pad>\\s*$/gi",
        ".pk-stat[data-k^=\"tou\" i]>b::before{content:\"x\"}".repeat(190)
    );
    let cases: [(&str, Vec<u8>); 3] = [
        (
            "wide-classes",
            hostile((0..40).map(|i| format!("/{}q{i}/gi", "[\\s\\S]".repeat(256)))),
        ),
        (
            "properties",
            hostile((0..20).map(|i| format!("/{}q{i}/gu", "\\p{L}".repeat(256)))),
        ),
        ("css", hostile((0..100).map(|_| css.clone()))),
    ];
    let ctx = Context::from_json(br#"{"allow_preset_regex": true}"#).unwrap();
    let mut g = c.benchmark_group("compile");
    g.sample_size(10);
    for (name, bytes) in cases {
        let preset = Preset::from_json(&bytes).unwrap();
        g.bench_function(name, |b| {
            b.iter(|| {
                preset
                    .compile()
                    .store_message(black_box("hello world"), Role::Model, &ctx)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench, compile);
criterion_main!(benches);
