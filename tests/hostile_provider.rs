//! Hostile review of SPEC §12 (provider shapes, history budget, token counting): regressions
//! for what the review found, and the extremes it tried that must keep working.

use serde_json::json;
use stpreset::{
    Message, ProviderOptions, Role, Shape, Source, Tag, options::Budget, provider::ChatMessage,
    provider::Names, provider::convert, tokens::Counter, tokens::Tokenizer,
};

fn named(role: Role, text: &str, name: Option<&str>) -> ChatMessage {
    ChatMessage {
        role,
        text: text.into(),
        name: name.map(String::from),
        keep_apart: false,
    }
}

fn options(shape: Shape, mode: &str) -> ProviderOptions {
    let mut o = ProviderOptions::default();
    o.shape = Some(shape);
    o.post_processing = match mode {
        "merge" => stpreset::provider::PostProcessing::Merge,
        "single" => stpreset::provider::PostProcessing::Single,
        _ => stpreset::provider::PostProcessing::None,
    }
    .into();
    o
}

fn names() -> Names {
    Names {
        user: "Alice".into(),
        char: "Tomori".into(),
        group: Vec::new(),
    }
}

/// SillyTavern tests names for truthiness (`if (message.name)`, `!message.name`): an empty
/// name adds no `": "` prefix in any mode or shape, does not block `squash_system`, and is not
/// sent as `"name": ""` in the openai shape.
#[test]
fn an_empty_name_is_no_name() {
    let list = [
        named(Role::System, "A", None),
        named(Role::System, "B", Some("")),
        named(Role::User, "hi", Some("")),
        named(Role::Model, "yo", Some("")),
    ];
    let (req, _) = convert(&list, &options(Shape::OpenAi, "none"), &names(), "");
    assert_eq!(
        req,
        json!({"messages": [
            {"role": "system", "content": "A"}, {"role": "system", "content": "B"},
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})
    );
    let (req, _) = convert(&list, &options(Shape::OpenAi, "merge"), &names(), "");
    assert_eq!(req["messages"][1]["content"], "hi");
    assert_eq!(req["messages"][2]["content"], "yo");
    let (req, _) = convert(&list, &options(Shape::Anthropic, "none"), &names(), "");
    assert_eq!(req["messages"][0]["content"][0]["text"], "hi");
    assert_eq!(req["messages"][1]["content"][0]["text"], "yo");
    let (req, _) = convert(&list, &options(Shape::Google, "none"), &names(), "");
    assert_eq!(req["contents"][0]["parts"][0]["text"], "hi");
    assert_eq!(req["contents"][1]["parts"][0]["text"], "yo");
    // squash_system: "B" with an empty name is nameless and joins "A".
    let mut o = options(Shape::OpenAi, "none");
    o.squash_system = true.into();
    let (req, _) = convert(&list, &o, &names(), "");
    assert_eq!(
        req["messages"][0],
        json!({"role": "system", "content": "A\nB"})
    );
    // single still adds USER/CHAR (those come from Names, not the message's name).
    let (req, _) = convert(&list, &options(Shape::OpenAi, "single"), &names(), "");
    assert_eq!(
        req["messages"][0]["content"],
        "A\n\nB\n\nAlice: hi\n\nTomori: yo"
    );
}

#[test]
fn cache_at_depth_near_u64_max_marks_nothing_and_does_not_panic() {
    let list = [
        named(Role::User, "a", None),
        named(Role::Model, "b", None),
        named(Role::User, "c", None),
    ];
    for d in [u64::MAX, u64::MAX - 1, u64::MAX - 2, 0] {
        let mut o = options(Shape::Anthropic, "none");
        o.cache_at_depth = Some(d);
        o.assistant_prefill = "go \u{3000}\u{85}".into();
        let (req, _) = convert(&list, &o, &names(), "claude-sonnet-4-6");
        let marks = req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().unwrap().iter())
            .filter(|b| b.get("cache_control").is_some())
            .count();
        assert_eq!(marks, if d == 0 { 2 } else { 0 }, "depth {d}");
        // The prefill is right-trimmed with Unicode White_Space; the model refuses prefills.
        assert_eq!(req["messages"][3]["content"][0]["text"], "go");
        assert_eq!(req["messages"][3]["role"], "user");
    }
}

fn history(role: Role, text: &str) -> Message<'_> {
    Message::with_parts(role, [text], Source::Tag(Some(Tag::DialogueHistory)))
}

#[test]
fn budget_extremes_report_negative_available_and_keep_the_newest() {
    let words = Counter::Builtin(Tokenizer::Words);
    let mut messages = vec![history(Role::User, "a"), history(Role::Model, "b")];
    let budget = Budget::tokens(0)
        .with_reserve(u32::MAX)
        .with_counter(words.clone());
    let (diags, tokens) = budget.apply(&mut messages, "", usize::MAX);
    assert_eq!((messages.len(), tokens), (1, Some(9)));
    assert_eq!(
        diags[0].message,
        "prompt needs 9 tokens, -4294967295 available; dropped 1 of 2 history items"
    );
    let mut messages = vec![history(Role::User, "a"), history(Role::Model, "b")];
    let budget = Budget::tokens(u32::MAX)
        .with_reserve(u32::MAX)
        .with_counter(words.clone());
    let (diags, _) = budget.apply(&mut messages, "", usize::MAX);
    assert_eq!(
        diags[0].message,
        "prompt needs 9 tokens, 0 available; dropped 1 of 2 history items"
    );
    let mut messages: Vec<Message> = Vec::new();
    let (diags, tokens) = Budget::tokens(u32::MAX)
        .with_counter(words)
        .apply(&mut messages, "", 0);
    assert!(diags.is_empty());
    assert_eq!(tokens, Some(3));
}

#[cfg(feature = "tiktoken")]
#[test]
fn long_runs_of_any_whitespace_count_without_panicking() {
    for ws in [" ", "\u{3000}", "\u{85}", "\r\n", "\u{a0}"] {
        let text = format!("x{}y", ws.repeat(1_000_000 / ws.chars().count()));
        for t in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let mut messages = vec![history(Role::User, &text)];
            let (_, tokens) = Budget::tokens(10).with_counter(Counter::Builtin(t)).apply(
                &mut messages,
                "",
                usize::MAX,
            );
            assert!(tokens.unwrap() > 8);
        }
    }
}

/// The output limit runs after the budget: when the fixed messages fill it, the newest history
/// item and its depth-0 injection are cut. The diagnostics and `prompt_tokens` describe what is
/// left (before, `HistoryTrimmed` said "dropped 1 of 2" and the tokens counted the whole item).
#[test]
fn the_output_limit_after_the_budget_is_reported_as_sent() {
    let preset = stpreset::Preset::from_json(
        br#"{"prompts": [
            {"identifier": "main", "content": "one two three four five six seven eight nine ten"},
            {"identifier": "chatHistory", "marker": true},
            {"identifier": "nudge", "content": "Stay calm.", "injection_position": 1, "injection_depth": 0}
        ]}"#,
    )
    .unwrap()
    .compile();
    let mut ctx = stpreset::Context::default();
    for text in ["an older message", "the newest message"] {
        ctx.items.push(stpreset::ContextItem::new(
            Some(Tag::DialogueHistory),
            Role::User,
            text,
        ));
    }
    ctx.options.budget = Budget::tokens(1000).with_counter(Counter::Builtin(Tokenizer::Words));
    let main = "one two three four five six seven eight nine ten";
    // Room for `main` and "the newest": the injection part and the older item are not sent.
    ctx.options.limits.output_bytes = main.len() + "the newest".len();
    let out = preset.render(&ctx);
    let texts: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(texts, [main, "the newest"]);
    assert_eq!(out.prompt_tokens(), Some(3 + (4 + 1 + 10) + (4 + 1 + 2)));
    let diags: Vec<&str> = out.diagnostics.iter().map(|d| d.message.as_str()).collect();
    let limit = ctx.options.limits.output_bytes;
    assert_eq!(
        diags,
        [
            "dropped 1 of 2 history items".to_string(),
            format!(
                "rendered output cut at the limit of {limit} bytes; the newest history message was cut"
            ),
        ]
    );
    // Room for `main` only: both items are gone, and say so.
    ctx.options.limits.output_bytes = main.len();
    let out = preset.render(&ctx);
    assert_eq!(out.messages.len(), 1);
    assert_eq!(out.prompt_tokens(), Some(3 + 15));
    assert_eq!(out.diagnostics[0].message, "dropped 2 of 2 history items");
    assert!(
        out.diagnostics[1]
            .message
            .ends_with("the newest history message was dropped")
    );
}
