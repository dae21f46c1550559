//! World Info activation (SPEC §15): a 1,000-entry book over a 200-message history with scan
//! depth 50, alone (`activate`) and inside a render of SillyTavern's Default preset, beside the
//! same render without lore. The book is generated (keys `topic{i}`, a tenth of them mentioned
//! in the chat, a few groups, sticky and probability entries), so the row needs no corpus. Two
//! rows of issue 38's hostile books: their passes are charged to the plain-key total; and one
//! render of a hostile preset with a hostile book, which the render's work budget stops.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use stpreset::{
    Context, Limits, Lorebook, Preset, activation::SeededRandom, activation::WiInput,
    activation::activate, lore::LoreInput, lore::WiSettings, lore::WiState, tokens::Counter,
    tokens::Tokenizer,
};

mod support;

fn book() -> Lorebook {
    let entries: serde_json::Map<String, serde_json::Value> = (0..1000)
        .map(|i| {
            let mut e = json!({
                "key": [format!("topic{i}"), format!("alias {i}")],
                "keysecondary": if i % 7 == 0 { json!(["river"]) } else { json!([]) },
                "content": format!("Lore about topic {i}: a paragraph of background text that the model should know."),
                "order": i % 50,
                "position": i % 5,
            });
            if i % 13 == 0 {
                e["group"] = json!(format!("g{}", i % 4));
            }
            if i % 17 == 0 {
                e["sticky"] = json!(2);
            }
            if i % 19 == 0 {
                e["probability"] = json!(50);
            }
            (i.to_string(), e)
        })
        .collect();
    let bytes = serde_json::to_vec(&json!({ "entries": entries })).unwrap();
    Lorebook::from_json("world", &bytes, &Limits::default()).unwrap()
}

/// Issue 38's hostile books, generated: 20,000 entries whose `keys` never match, the first
/// 130 at distinct `delayUntilRecursion` levels (one full pass per level), or none
/// (`min_activations` then widens the scan one message per pass). What the passes cost is
/// charged to the call's plain-key total, so a row measures the capped activation.
fn hostile_book(keys: usize, levels: usize) -> Lorebook {
    let entries: serde_json::Map<String, serde_json::Value> = (0..20_000)
        .map(|i| {
            let mut e = json!({"uid": i, "key": distinct_keys(keys), "content": format!("c{i}")});
            if i < levels {
                e["delayUntilRecursion"] = json!(i + 1);
            }
            (i.to_string(), e)
        })
        .collect();
    let bytes = serde_json::to_vec(&json!({ "entries": entries })).unwrap();
    Lorebook::from_json("hostile", &bytes, &Limits::default()).unwrap()
}

fn stacked_preset() -> stpreset::CompiledPreset {
    let scripts: Vec<_> = (0..4)
        .map(|k| {
            json!({"scriptName": format!("s{k}"), "findRegex": "/(a|a)*\\d/g",
            "replaceString": "x", "placement": [1, 2], "promptOnly": true})
        })
        .collect();
    let doc = json!({"prompts": [{"identifier": "main", "content": "Main {{user}}"},
            {"identifier": "worldInfoBefore", "marker": true},
            {"identifier": "chatHistory", "marker": true}],
        "extensions": {"regex_scripts": scripts}});
    Preset::from_json(doc.to_string().as_bytes())
        .unwrap()
        .compile()
}

fn context() -> Context {
    let mut ctx = support::realistic_context(200);
    // A tenth of the topics come up in the chat.
    let mut n = 0;
    for item in ctx.items.iter_mut() {
        if item.tag == Some(stpreset::Tag::DialogueHistory) {
            item.text
                .push_str(&format!(" about topic{} by the river", n * 10));
            n += 1;
        }
    }
    ctx
}

fn bench(c: &mut Criterion) {
    let books = vec![book()];
    let ctx = context();
    let mut settings = WiSettings::default();
    settings.scan_depth = 50;
    let words = Counter::Builtin(Tokenizer::Words).for_model("");
    let mut g = c.benchmark_group("lore");
    // One activation call at `position` (the seed follows it, as a turn's would).
    let run = |books: &[Lorebook], ctx: &Context, settings: &WiSettings, position: u64| {
        let mut input = WiInput::new(ctx);
        input.position = Some(position);
        let mut rng = SeededRandom::new(1, position);
        activate(
            black_box(books),
            &input,
            settings,
            &WiState::default(),
            &mut rng,
            &*words,
            &Limits::default(),
        )
    };
    g.bench_function("activate-1000-entries-200-messages-depth-50", |b| {
        b.iter(|| run(&books, &ctx, &settings, 200))
    });
    let hostile_ctx = support::realistic_context(300);
    for (name, book, min_activations) in [
        (
            "hostile-130-levels-20000-entries-100-keys",
            hostile_book(100, 130),
            0,
        ),
        (
            "hostile-min-activations-1000-depth-1",
            hostile_book(100, 0),
            1000,
        ),
    ] {
        let books = vec![book];
        let mut settings = WiSettings::default();
        settings.min_activations = min_activations;
        if min_activations > 0 {
            settings.scan_depth = 1;
        }
        g.bench_function(name, |b| {
            b.iter(|| run(&books, &hostile_ctx, &settings, 300))
        });
    }
    // Issue 38's stacked budgets: four scripts that backtrack on every history item, over
    // 300 items of 3,000 `a`, and the levels book, in one render. The stages' own limits add
    // up to several seconds; the render's one work budget stops them together (`WorkLimit`).
    let stacked = stacked_preset();
    let mut hostile_render = Context::from_json(
        json!({"user": "A", "char": "B", "allow_preset_regex": true, "items": (0..300)
            .map(|i| json!({"tag": "DIALOGUE_HISTORY", "role": if i % 2 == 0 {"user"} else {"model"},
                "text": "a".repeat(3000)}))
            .collect::<Vec<_>>()})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    hostile_render.lore = Some(LoreInput::new(vec![hostile_book(100, 130)]));
    g.bench_function("hostile-stacked-scripts-and-levels-render", |b| {
        b.iter(|| stacked.render(black_box(&hostile_render)).messages.len())
    });
    // The chat-text worst case (issue 38): a preset's usual strip-tags script, and a history
    // whose every item opens 1,000 tags and closes another (each run backtracks over the rest of
    // the item). Only chat text is hostile: it stops at chat text's share of the budget.
    let strip = Preset::from_json(
        json!({"prompts": [{"identifier": "main", "content": "Main {{user}}"},
                {"identifier": "chatHistory", "marker": true}],
            "extensions": {"regex_scripts": [{"scriptName": "strip", "findRegex": "/<(\\w+)>[\\s\\S]*?<\\/\\1>/g",
                "replaceString": "", "placement": [1, 2], "promptOnly": true}]}})
        .to_string()
        .as_bytes(),
    )
    .unwrap()
    .compile();
    for layout in ["seed", "sillytavern"] {
        let chat = Context::from_json(
            json!({"user": "A", "char": "B", "allow_preset_regex": true, "layout": layout,
                "model": "gpt-4o", "items": (0..300)
                .map(|i| json!({"tag": "DIALOGUE_HISTORY", "role": if i % 2 == 0 {"user"} else {"model"},
                    "text": format!("{}</b>", "<a>".repeat(1000))}))
                .collect::<Vec<_>>()})
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        g.bench_function(format!("hostile-chat-text-{layout}-render"), |b| {
            b.iter(|| strip.render(black_box(&chat)).messages.len())
        });
    }
    if let Some(path) = support::corpus()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("Default"))
    {
        let compiled = Preset::from_json(&std::fs::read(&path).unwrap())
            .unwrap()
            .compile();
        g.bench_function("render-st-default-without-lore", |b| {
            b.iter(|| compiled.render(black_box(&ctx)))
        });
        let mut with = ctx.clone();
        let mut lore = LoreInput::new(books.clone());
        lore.settings = settings.clone();
        lore.position = Some(200);
        with.lore = Some(lore);
        g.bench_function("render-st-default-with-lore", |b| {
            b.iter(|| compiled.render(black_box(&with)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

/// `n` different keys that never match (`zq0`, `zq1`, …): repeated keys are kept once at
/// import, so the hostile books' keys differ.
fn distinct_keys(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("zq{k}")).collect()
}
