//! Property tests: the nesting limit, no panics on any input, deterministic renders.

use proptest::prelude::*;
use stpreset::{Context, DiagnosticKind, Template};

fn ctx() -> Context {
    Context::from_json(
        br#"{"user": "Alice", "char": "Tomori", "now": "2026-11-29T17:07:00Z", "seed": 3,
             "capabilities": {"web_search": true, "image_generation": false},
             "tools": ["web_search"], "tool_names": {"t": "tool"}}"#,
    )
    .unwrap()
}

/// One nesting level: opener, closer, and whether its condition holds in `ctx()`.
const LEVELS: [(&str, &str, bool); 8] = [
    ("{{#if user}}", "{{/if}}", true),
    ("{{#if scenario}}", "{{/if}}", false),
    ("{{#unless scenario}}", "{{/unless}}", true),
    ("{{#unless user}}", "{{/unless}}", false),
    ("{{if capability:web_search}}", "{{/if}}", true),
    ("{{if capability:image_generation}}", "{{/if}}", false),
    ("{{if !user}}", "{{/if}}", false),
    ("{{ IF tool:web_search }}", "{{/IF}}", true),
];

/// Builds the nested template and the text SPEC §1.2 says it renders to.
fn nest(levels: &[(usize, bool)], limit: usize) -> (String, String) {
    let mut src = String::new();
    for (i, &(k, _)) in levels.iter().enumerate() {
        src.push_str(LEVELS[k].0);
        src.push_str(&format!("A{i}."));
    }
    for (i, &(k, with_else)) in levels.iter().enumerate().rev() {
        if with_else {
            src.push_str(&format!("{{{{else}}}}B{i}."));
        }
        src.push_str(LEVELS[k].1);
    }
    fn expect(levels: &[(usize, bool)], i: usize, limit: usize) -> String {
        let Some(&(k, with_else)) = levels.get(i) else {
            return String::new();
        };
        let inner = expect(levels, i + 1, limit);
        if i >= limit {
            // Past the limit: structure verbatim, text renders normally.
            let els = if with_else {
                format!("{{{{else}}}}B{i}.")
            } else {
                String::new()
            };
            format!("{}A{i}.{inner}{els}{}", LEVELS[k].0, LEVELS[k].1)
        } else if LEVELS[k].2 {
            format!("A{i}.{inner}")
        } else if with_else {
            format!("B{i}.")
        } else {
            String::new()
        }
    }
    (src, expect(levels, 0, limit))
}

/// Mostly true levels, so that the levels past the limit are reached often.
fn level() -> impl Strategy<Value = usize> {
    let truthy: Vec<usize> = (0..LEVELS.len()).filter(|&k| LEVELS[k].2).collect();
    prop_oneof![19 => prop::sample::select(truthy), 1 => 0..LEVELS.len()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn nesting_limit(levels in prop::collection::vec((level(), any::<bool>()), 1..=80)) {
        let (src, want) = nest(&levels, 32);
        let out = Template::compile(&src).render(&ctx());
        prop_assert_eq!(&out.text, &want);
        let limited = out.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::NestingLimit).count();
        prop_assert_eq!(limited, levels.len().saturating_sub(32));
        // Nothing else is wrong with these templates.
        prop_assert_eq!(out.diagnostics.len(), limited);
    }

    #[test]
    fn any_string_parses_and_renders(src in any::<String>()) {
        let out = Template::compile(&src).render(&ctx());
        prop_assert!(out.text.len() <= src.len() * 8 + 64);
    }

    #[test]
    fn tag_soup_parses_and_renders(parts in prop::collection::vec(prop::sample::select(vec![
        "{{", "}}", "{", "}", "\\", "::", ":", " ", "#if", "#unless", "/if", "/unless", "if", "else",
        "!", "user", "getvar", "setvar", "x", "capability:web_search", "tool:t", "//", "<USER>",
        "{t}", "{user}", "random", "roll", "1d6", "incvar", "trim", "\n", "é",
    ]), 0..120)) {
        let src: String = parts.concat();
        let t = Template::compile(&src);
        let a = t.render(&ctx());
        let b = t.render(&ctx());
        prop_assert_eq!(a.text, b.text, "deterministic");
        prop_assert_eq!(a.diagnostics, b.diagnostics);
    }

    #[test]
    fn deterministic_for_a_seed(seed in any::<u64>(), picks in 1usize..6) {
        let src = "{{random::a::b::c::d}}{{roll:3d6+1}}{{pick::x::y::z}}{{setvar::v::{{random:1,2,3}}}}".repeat(picks)
            + "{{getvar::v}}{{if tool:web_search}}{{random::p::q}}{{/if}}";
        let mut c = ctx();
        c.seed = seed;
        let t = Template::compile(&src);
        prop_assert_eq!(t.render(&c).text, t.render(&c).text);
    }

    #[test]
    fn text_without_syntax_renders_to_itself(src in "[^{<\\\\]*") {
        prop_assume!(!src.trim().is_empty());
        prop_assert_eq!(Template::compile(&src).render(&ctx()).text, src);
    }
}

/// One change a bot makes to its chat between turns.
#[derive(Debug, Clone)]
enum Turn {
    /// Items from `at` (scaled to the chat), `delete` of them, replaced by these texts (with a
    /// speaker name when the flag is set).
    Splice(usize, usize, Vec<(String, bool)>),
    /// The model: one of each vocabulary, and a host counter (`words`).
    Model(usize),
}

fn turn() -> impl Strategy<Value = Turn> {
    let long = "many words in a row ".repeat(30);
    let text = prop::sample::select(vec!["hi", "hello there", "the same words", "", " ", "é 🎉"])
        .prop_map(str::to_string);
    prop_oneof![
        (
            0usize..40,
            0usize..4,
            prop::collection::vec((prop_oneof![text, Just(long)], any::<bool>()), 0..5)
        )
            .prop_map(|(at, delete, items)| Turn::Splice(at, delete, items)),
        (0usize..3).prop_map(Turn::Model),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A chat rendered turn after turn (`render_chat`, which remembers its items' token
    /// counts) gives the document a render of the same context gives, whatever changed.
    #[test]
    fn a_chat_renders_as_its_context(max in 512u32..1500, st in any::<bool>(), turns in prop::collection::vec(turn(), 1..12)) {
        let preset = stpreset::Preset::from_json(format!(
            r#"{{"openai_max_context": {max}, "prompts": [{{"identifier": "main", "content": "Be brief."}},
                {{"identifier": "chatHistory", "marker": true}},
                {{"identifier": "note", "content": "Note", "injection_position": 1, "injection_depth": 1}}]}}"#
        ).as_bytes()).unwrap().compile();
        let mut chat = stpreset::Chat::from_json(br#"{"items": [
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"},
            {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "hello there"}]}"#).unwrap();
        // Both layouts: each remembers the items' counts through the chat.
        if st {
            chat.set_json(br#"{"layout": "sillytavern", "model": "gpt-4o"}"#).unwrap();
        }
        for turn in turns {
            match turn {
                Turn::Splice(at, delete, items) => {
                    let items: Vec<serde_json::Value> = items.iter().enumerate().map(|(i, (text, named))| {
                        let role = if i % 2 == 0 { "user" } else { "model" };
                        let mut item = serde_json::json!({"tag": "DIALOGUE_HISTORY", "role": role, "text": text});
                        if *named {
                            item["name"] = "Alice".into();
                        }
                        item
                    }).collect();
                    let at = at % (chat.len() + 1);
                    chat.splice_json(at, delete, serde_json::to_string(&items).unwrap().as_bytes()).unwrap();
                }
                Turn::Model(m) => {
                    let fields = [r#"{"model": "gpt-4o"}"#, r#"{"model": "gpt-4"}"#, r#"{"tokenizer": "words"}"#][m];
                    chat.set_json(fields.as_bytes()).unwrap();
                }
            }
            for _ in 0..2 {
                let fast = preset.render_chat(&chat);
                let plain = preset.render(chat.context());
                prop_assert_eq!(fast.prompt_tokens(), plain.prompt_tokens());
                prop_assert_eq!(fast.to_json(), plain.to_json());
            }
        }
    }
}
