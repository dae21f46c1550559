//! A bot's whole turn (issue 54), as the README's `Chat` recipe does it: the preset compiled
//! once, the chat kept, and each turn one message appended, the previous turn's `wi_state`
//! set back, one render, one request body, the variables kept. NemoEngine 11.5.2 (else the
//! corpus's largest preset), a card with a 400-entry book, a 200-message history, model
//! `gpt-4o` (tiktoken counts the budgets), in both layouts; and the book's activation alone
//! over the same history (the `lore` row). The card and book are generated (a public card's
//! shape: keys of names and places, a tenth of them regular expressions, 400–1,200-byte
//! entries with `{{char}}`/`{{user}}`, a few constants, recursion on), so the rows need no
//! card file; the preset comes from `../shared/corpus` (skipped when absent).

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use stpreset::{Chat, ContextItem, Preset, Role, Tag};

mod support;

const ENTRIES: usize = 400;
const HISTORY: usize = 200;

/// The generated book: entry `i` is about `place{i}`/`person{i}`, a tenth keyed by a regular
/// expression, every 40th constant, some selective with a secondary key, positions mixed.
fn book() -> serde_json::Value {
    let entries: serde_json::Map<String, serde_json::Value> = (0..ENTRIES)
        .map(|i| {
            let keys = if i % 10 == 3 {
                json!([format!("/\\b(person|hero){i}s?\\b/i")])
            } else {
                json!([format!("place{i}"), format!("Person{i}")])
            };
            let body = format!(
                "{{{{char}}}} knows place{i} well: the road there runs past the old mill and the \
                 river ford, where {{{{user}}}} once lost a bet. Person{i} keeps the records of the \
                 town. "
            )
            .repeat(2 + i % 5);
            let mut e = json!({
                "uid": i, "key": keys, "content": body, "comment": format!("Entry {i}"),
                "order": 100 + i % 50, "position": (i % 5) % 2, "depth": 4,
                "selective": i % 9 == 0, "keysecondary": if i % 9 == 0 { json!(["river"]) } else { json!([]) },
                "constant": i % 40 == 0,
            });
            if i % 5 == 2 {
                e["position"] = json!(4);
                e["role"] = json!(0);
            }
            (i.to_string(), e)
        })
        .collect();
    json!({"name": "Generated World", "source": "character", "entries": entries})
}

/// The chat: `HISTORY` messages, a twentieth of them naming an entry's key.
fn context_json(layout: &str) -> Vec<u8> {
    let items: Vec<serde_json::Value> = (0..HISTORY)
        .map(|i| {
            let (role, who) = if i % 2 == 0 { ("user", "Alice") } else { ("model", "Tomori") };
            let mention = if i % 20 == 0 { format!(" We passed place{}.", i * 2) } else { String::new() };
            json!({"tag": "DIALOGUE_HISTORY", "role": role,
                   "text": format!("{who}: message {i} about the festival and the old shrine.{mention}")})
        })
        .collect();
    serde_json::to_vec(&json!({
        "user": "Alice", "char": "Tomori", "layout": layout, "model": "gpt-4o",
        "provider_options": {"shape": "openai"},
        "description": "Tomori is a shrine maiden of the hill shrine. {{user}} is her oldest friend. ".repeat(20),
        "personality": "kind, witty, stubborn", "scenario": "An autumn festival at the shrine.",
        "persona": "Alice is a student who visits on weekends.",
        "mes_examples": "<START>\n{{user}}: Hello?\n{{char}}: Welcome, traveller.",
        "world_info": {"scan_depth": 4, "budget_percent": 25},
        "lorebooks": [book()], "items": items}))
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let corpus = support::corpus();
    let Some(path) = corpus
        .iter()
        .find(|p| p.to_string_lossy().contains("NemoEngine-11.5.2"))
        .or_else(|| {
            corpus
                .iter()
                .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        })
    else {
        return;
    };
    let compiled = Preset::from_json(&std::fs::read(path).unwrap())
        .unwrap()
        .compile();
    let mut g = c.benchmark_group("turn");
    for layout in ["seed", "sillytavern"] {
        let mut chat = Chat::from_json(&context_json(layout)).unwrap();
        let mut n = 0usize;
        g.bench_function(format!("{layout}/whole-turn"), |b| {
            b.iter(|| {
                // The chat stays at its length: one message out at the front, one in.
                chat.splice_json(0, 1, b"[]").unwrap();
                n += 1;
                chat.push(ContextItem::new(
                    Some(Tag::DialogueHistory),
                    if n.is_multiple_of(2) {
                        Role::User
                    } else {
                        Role::Model
                    },
                    format!(
                        "Alice: turn {n}, and we talk of place{} again.",
                        n % ENTRIES
                    ),
                ));
                let out = compiled.render_chat(black_box(&chat));
                let (body, _) = out.to_request(&chat.context().provider_options);
                // The packages report it with every render.
                black_box(out.prompt_tokens());
                let state = out
                    .wi_state()
                    .map(|s| serde_json::to_vec(&json!({"wi_state": s})).unwrap());
                let (variables, globals) = (out.variables.clone(), out.globals.clone());
                drop(out);
                if let Some(state) = state {
                    chat.set_json(&state).unwrap();
                }
                chat.keep(variables, globals);
                black_box(body)
            })
        });
        let chat = Chat::from_json(&context_json(layout)).unwrap();
        g.bench_function(format!("{layout}/render"), |b| {
            b.iter(|| compiled.render_chat(black_box(&chat)).messages.len())
        });
        if layout == "seed" {
            // The book's activation alone over the same chat (what `lore(chat)` runs).
            g.bench_function("lore", |b| {
                b.iter(|| {
                    stpreset::activation::WiResult::for_context(black_box(chat.context()))
                        .activated
                        .len()
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
