//! The history budget on a bot's repeated turn (issue 18): NemoEngine 11.5.2 (read from
//! `../shared/corpus/presets`, skipped when absent) with a 200-message history, rendered without
//! a budget and with the budget its preset supplies (2,000,000 tokens, 64,000 reserved, o200k).
//!
//! Every iteration is a new turn: the history slides by one message (a fresh, never seen text
//! is appended, the oldest leaves), built outside the timed part, so the newest message and the
//! history messages that carry depth injections are never in a count cache. `budget` (the
//! render: the walk decides with upper bounds) must stay within 1.5× `no-budget`;
//! `budget+prompt_tokens` also reports the exact prompt tokens (NemoEngine merges 17 KB and
//! 27 KB of injections into history items that change every turn: those texts are new and
//! must be counted); `budget-cold` empties the count cache before each render and reports the
//! tokens (a process's first render of a context, once the vocabulary is loaded).

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::cell::RefCell;
use std::hint::black_box;
use stpreset::{
    Context, ContextItem, Preset, Role, Tag, options::Budget, tokens::Counter, tokens::Tokenizer,
};

mod support;

const PRESET: &str = "nemo__NemoEngine-11.5.2-General-RP.json";

/// The context of the next turn: `state`'s history with its oldest message gone and a new one
/// (unique text) appended.
fn next_turn(state: &RefCell<(Context, usize)>, budget: Option<&Budget>) -> Context {
    // `None` keeps the context's budget.
    let mut state = state.borrow_mut();
    let (ctx, turn) = &mut *state;
    *turn += 1;
    let history = |i: &ContextItem| i.tag == Some(Tag::DialogueHistory);
    let first = ctx.items.iter().position(history).expect("history");
    let last = ctx.items.iter().rposition(history).expect("history");
    let old = ctx.items.remove(first);
    let (role, who) = if *turn % 2 == 0 {
        (Role::User, "Alice")
    } else {
        (Role::Model, "Tomori")
    };
    let text = format!("{who}: turn {turn} brings news of the rain over the shrine steps.");
    let mut item = ContextItem::new(Some(Tag::DialogueHistory), role, text);
    item.time = old.time;
    ctx.items.insert(last, item);
    let mut out = ctx.clone();
    if let Some(b) = budget {
        out.options.budget = b.clone();
    }
    out
}

fn bench(c: &mut Criterion) {
    let Some(path) = support::corpus()
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == PRESET))
    else {
        eprintln!("SKIPPED: {PRESET} not in the corpus");
        return;
    };
    let compiled = Preset::from_json(&std::fs::read(&path).unwrap())
        .unwrap()
        .compile();
    // The preset's own budget (SPEC §14.5: 2,000,000 − 64,000), counted with o200k.
    let budget = Budget::default().with_counter(Counter::Builtin(Tokenizer::O200k));
    let none = Budget::none();
    let state = RefCell::new((support::realistic_context(200), 0usize));
    // The vocabulary loads once per process, outside every measurement.
    let first = next_turn(&state, Some(&budget));
    assert!(compiled.render(&first).prompt_tokens().is_some());

    let mut g = c.benchmark_group("budget");
    g.bench_function("no-budget", |b| {
        b.iter_batched(
            || next_turn(&state, Some(&none)),
            |ctx| compiled.render(black_box(&ctx)).messages.len(),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("budget", |b| {
        b.iter_batched(
            || next_turn(&state, Some(&budget)),
            |ctx| compiled.render(black_box(&ctx)).messages.len(),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("budget+prompt_tokens", |b| {
        b.iter_batched(
            || next_turn(&state, Some(&budget)),
            |ctx| compiled.render(black_box(&ctx)).prompt_tokens(),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("budget-cold", |b| {
        b.iter_batched(
            // One setup per render (a batch would run every setup first, then the renders).
            || {
                stpreset::tokens::clear_count_caches();
                next_turn(&state, Some(&budget))
            },
            |ctx| compiled.render(black_box(&ctx)).prompt_tokens(),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
