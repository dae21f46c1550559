//! SPEC §12 costs: the history budget and each provider shape on the corpus's largest preset
//! with a 2,000-message history, and token counting throughput (`Throughput::Bytes`, so
//! criterion prints MB/s).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use stpreset::{
    Preset, ProviderOptions, Shape, options::Budget, tokens::Counter, tokens::Tokenizer,
};

mod support;

fn bench(c: &mut Criterion) {
    let Some(path) = support::corpus()
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
    else {
        return;
    };
    let compiled = Preset::from_json(&std::fs::read(&path).unwrap())
        .unwrap()
        .compile();
    let mut ctx = support::realistic_context(2_000);
    ctx.model = "gpt-4o".into();
    let plain = compiled.render(&ctx);
    let mut g = c.benchmark_group("provider-2000-history");
    g.bench_function("render", |b| b.iter(|| compiled.render(black_box(&ctx))));
    for (name, tokenizer) in [
        ("o200k", Tokenizer::O200k),
        ("cl100k", Tokenizer::Cl100k),
        ("approx", Tokenizer::Approx),
    ] {
        // A window that keeps about half of the history: the walk counts what it keeps.
        let mut budgeted = ctx.clone();
        budgeted.options.budget = Budget::tokens(32_000).with_counter(Counter::Builtin(tokenizer));
        g.bench_function(format!("render+budget-{name}"), |b| {
            b.iter(|| compiled.render(black_box(&budgeted)))
        });
    }
    for shape in [Shape::OpenAi, Shape::Anthropic, Shape::Google] {
        let mut options = ProviderOptions::default();
        options.shape = Some(shape);
        options.cache_at_depth = Some(2);
        g.bench_function(format!("to-request-{shape:?}"), |b| {
            b.iter(|| plain.to_request(black_box(&options)))
        });
    }
    g.finish();

    // Counting throughput on the rendered prompt's text.
    let text: String = plain.messages.iter().map(|m| m.text()).collect();
    let mut g = c.benchmark_group("token-counting");
    g.throughput(Throughput::Bytes(text.len() as u64));
    for (name, tokenizer) in [
        ("o200k", Tokenizer::O200k),
        ("cl100k", Tokenizer::Cl100k),
        ("approx", Tokenizer::Approx),
        ("words", Tokenizer::Words),
    ] {
        let mut messages = plain.messages.clone();
        let budget = Budget::tokens(u32::MAX).with_counter(Counter::Builtin(tokenizer));
        g.bench_function(name, |b| {
            b.iter(|| {
                messages.clone_from(&plain.messages);
                budget.apply(black_box(&mut messages), "gpt-4o", usize::MAX)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
