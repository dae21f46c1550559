//! The invariants the fuzz targets assert, shared with `tests/fuzz_regressions.rs` so every
//! crash input replays in `cargo test`.

// Each fuzz target includes this file and uses only its own check.
#![allow(dead_code)]

use stpreset::{Context, Preset, Template, report::TextReport};

/// The limits every target runs with: the render's work budget at a quarter of the default
/// (chat text's share too), so that a unit stays well under `scripts/fuzz`'s one-second
/// timeout even with coverage instrumentation. Work that escapes the budget is then a
/// timeout finding.
pub fn limits() -> stpreset::Limits {
    let mut l = stpreset::Limits::default();
    l.render_work = 200_000_000;
    l.chat_work = 25_000_000;
    l
}

/// A fixed context (clock, seed, host facts, a little history) so every run reproduces.
pub fn context() -> Context {
    let mut ctx = Context::from_json(
        br#"{"user": "Alice", "char": "Tomori", "seed": 7, "now": "2026-11-29T17:07:00Z",
             "description": "{{user}}'s friend {char}", "persona": "a student",
             "capabilities": {"web_search": true, "image_generation": false},
             "tools": ["web_search"], "tool_families": {"url_fetch": false},
             "tool_names": {"t": "tool"}, "tool_phrases": {"p": "a phrase"},
             "globals": {"g": "1"},
             "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi", "time": "2026-11-29T17:00:00Z"},
                       {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "yo"}]}"#,
    )
    .expect("fixed context parses");
    ctx.options.limits = limits();
    ctx
}

/// The text a template's bytes stand for (docs/hardening.md, "Numbers and encodings"),
/// written out again here so the fuzzer checks the engine against a second reading: UTF-8
/// as it is; a surrogate written as three bytes (`ED A0..BF 80..BF`) is half a character,
/// two halves side by side are the character, a lone half U+FFFD; anything else that is not
/// UTF-8 (a surrogate cut short among it) has no text.
pub fn wtf8_text(data: &[u8]) -> Option<String> {
    let half = |i: usize| match data.get(i..i + 3)? {
        &[0xED, b1 @ 0xA0..=0xBF, b2 @ 0x80..=0xBF] => {
            Some(0xD000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F))
        }
        _ => None,
    };
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        match (half(i), half(i + 3)) {
            (Some(high @ 0xD800..=0xDBFF), Some(low @ 0xDC00..=0xDFFF)) => {
                let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?;
                out.extend_from_slice(c.to_string().as_bytes());
                i += 6;
            }
            (Some(_), _) => {
                out.extend_from_slice("\u{FFFD}".as_bytes());
                i += 3;
            }
            _ => {
                out.push(data[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Bytes → tokens → tree. Never panics; the source is the text the bytes stand for
/// ([`wtf8_text`]), and bytes that stand for none are refused, as are oversize ones.
pub fn parse(data: &[u8]) {
    let oversize = data.len() > stpreset::Limits::default().template_bytes;
    match Template::from_bytes(data) {
        Ok(t) => assert_eq!(Some(t.source()), wtf8_text(data).as_deref()),
        Err(_) => assert!(oversize || wtf8_text(data).is_none()),
    }
}

/// A template rendered as a lone node: bounded output, deterministic, and text without any
/// syntax renders to itself.
pub fn expand(data: &[u8]) {
    let Ok(template) = Template::from_bytes(data) else {
        return;
    };
    let ctx = context();
    let a = template.render(&ctx);
    assert!(a.text.len() <= ctx.options.limits.output_bytes);
    let b = template.render(&ctx);
    assert_eq!(a.text, b.text, "same seed and clock, same bytes");
    assert_eq!(a.diagnostics, b.diagnostics);
    let src = template.source();
    if !src.contains(['{', '<', '\\']) && !src.trim().is_empty() {
        assert_eq!(a.text, src, "plain text renders to itself");
    }
}

/// Splits `PRESET JSON` + optional `\0CONTEXT JSON` into an imported preset and a context
/// (the fixed one when the second part is missing or refused).
fn preset_and_context(data: &[u8]) -> Option<(Preset, Context)> {
    let (preset, ctx) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Context::from_json(&data[i + 1..]).ok()),
        None => (data, None),
    };
    let preset = Preset::from_json(preset).ok()?;
    let mut ctx = ctx.unwrap_or_else(context);
    // The fuzzer must not wait for the real clock or a huge history, nor raise the budget.
    ctx.now = context().now;
    ctx.options.limits = limits();
    ctx.items.truncate(64);
    Some((preset, ctx))
}

/// Arbitrary bytes imported: a typed error or a preset whose identifiers are unique (the
/// CLI, the store and diagnostics find nodes by identifier).
pub fn import(data: &[u8]) {
    let Ok(preset) = Preset::from_json(data) else {
        return;
    };
    let mut ids = std::collections::HashSet::new();
    for n in preset.nodes() {
        assert!(
            ids.insert(n.identifier.as_str()),
            "duplicate id {:?}",
            n.identifier
        );
    }
    // The authors' outline (issue 41): every node once, and JSON within a constant per node
    // plus a constant per input byte (section titles are cut, values copied at most twice
    // and escaped at most sixfold).
    let outline = preset.outline();
    assert_eq!(outline.nodes.len(), preset.nodes().len());
    let json = outline.to_json();
    let bound = 1024 * outline.nodes.len() + 16 * data.len() + 4096;
    assert!(json.len() <= bound, "{} > {bound}", json.len());
    // Switching under the authors' constraints (issue 41): every node asked on, refused or
    // resolved; what comes back stays within a constant per node plus one per input byte.
    let asked: Vec<(&str, bool)> = preset
        .nodes()
        .iter()
        .map(|n| (n.identifier.as_str(), true))
        .collect();
    for how in [
        stpreset::switch::Resolve::Refuse,
        stpreset::switch::Resolve::Resolve,
    ] {
        let shown = match preset.plan_switch(&asked, how) {
            Ok(done) => {
                assert!(done.changes.len() <= asked.len());
                done.to_json()
            }
            Err(e) => e.to_string(),
        };
        let bound = 64 * 1024 * (asked.len() + 1) + 16 * data.len();
        assert!(shown.len() <= bound, "{} > {bound}", shown.len());
    }
    let _ = preset.compile();
}

/// What a bounded diagnostic looks like: its JSON and its rendered text stay below a
/// constant whatever the input, so output grows at most linearly with the diagnostic count.
const MAX_DIAGNOSTIC_BYTES: usize = 4096;

/// The CLI's path: import, compile, render, then the diagnostics printed in text (against
/// their node sources) and JSON. Output stays within a constant factor of the input.
pub fn cli(data: &[u8]) {
    let Some((preset, ctx)) = preset_and_context(data) else {
        return;
    };
    let out = preset.compile().render(&ctx);
    let audit = preset.audit();
    for diags in [&out.diagnostics, &audit] {
        let mut text = Vec::new();
        TextReport::preset("preset.json", &preset)
            .write(&mut text, diags)
            .expect("writing to memory");
        assert!(
            text.len() <= 210 * MAX_DIAGNOSTIC_BYTES,
            "{} bytes",
            text.len()
        );
        assert!(
            diags.len() <= data.len() + 16,
            "{} diagnostics",
            diags.len()
        );
        for d in diags.iter() {
            let json = serde_json::to_string(d).expect("diagnostics serialize");
            assert!(json.len() <= MAX_DIAGNOSTIC_BYTES, "{json}");
            let source = preset
                .nodes()
                .iter()
                .find(|n| Some(&n.identifier) == d.node.as_ref())
                .map(|n| n.content.as_str());
            // Against its own source and against a foreign one: bounded, never a panic.
            for src in [source, Some("é"), Some(""), None] {
                assert!(d.render("f", src).len() <= MAX_DIAGNOSTIC_BYTES);
            }
        }
    }
    let json = serde_json::to_string(&out).expect("render output serializes");
    let text_bytes: usize = out.messages.iter().map(stpreset::Message::len).sum();
    // JSON escapes a byte to at most 6 (`\u0001`); the rest is per diagnostic and message.
    let bound = 6 * text_bytes
        + out.diagnostics.len() * MAX_DIAGNOSTIC_BYTES
        + out.messages.len() * 1024
        + 6 * (ctx
            .globals
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>()
            + out
                .variables
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>())
        + 4096;
    assert!(json.len() <= bound, "{} > {bound}", json.len());
}

/// `PRESET JSON` + optional `\0CONTEXT JSON`: import errors are fine, panics are not; a
/// render stays within the output limit and is deterministic.
pub fn render(data: &[u8]) {
    let Some((preset, ctx)) = preset_and_context(data) else {
        return;
    };
    render_bounded(&preset.compile(), &ctx);
    let _ = preset.audit();
}

/// One render of `compiled`: its messages within the output cap, the same messages a second
/// time, and every provider shape's body (pure functions that never fail) bounded by the
/// messages' text plus the placeholder, a prefill and the model's name.
fn render_bounded(compiled: &stpreset::CompiledPreset, ctx: &Context) {
    let a = compiled.render(ctx);
    let total: usize = a.messages.iter().map(stpreset::Message::len).sum();
    assert!(
        total <= ctx.options.limits.output_bytes,
        "{total} bytes out"
    );
    let b = compiled.render(ctx);
    assert_eq!(a.messages, b.messages, "same input, same messages");
    for shape in [
        stpreset::Shape::OpenAi,
        stpreset::Shape::Anthropic,
        stpreset::Shape::Google,
    ] {
        let mut options = ctx.provider_options.clone();
        options.shape = Some(shape);
        let (request, _) = a.to_request(&options);
        let size = request.to_string().len();
        // The prefill may be the preset's (rendered); the body also names the model.
        let extra = options.placeholder.len()
            + a.effective_options().assistant_prefill.len()
            + ctx.model.len();
        assert!(size <= 4 * total + 6 * extra + 64 * a.messages.len() + 4096);
    }
}

/// One regex script from the fields of `data` (SPEC §13): `MODE \0 findRegex \0 replaceString
/// \0 trimString \0 text`, where MODE's bytes choose the flags of the entry and the pass. Runs
/// the store, edit, display and prompt passes and a render: bounded output, deterministic, and
/// never over the step bound (a slow unit under `-timeout=1` is a finding).
pub fn regex(data: &[u8]) {
    let mut parts = data.splitn(5, |&b| b == 0);
    let mode = parts.next().unwrap_or_default();
    let field = |p: Option<&[u8]>| String::from_utf8_lossy(p.unwrap_or_default()).into_owned();
    let (find, replace, trim, text) = (
        field(parts.next()),
        field(parts.next()),
        field(parts.next()),
        field(parts.next()),
    );
    let bit = |i: usize| mode.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
    let script = serde_json::json!({
        "findRegex": find, "replaceString": replace, "trimStrings": [trim],
        "placement": [1, 2, 5], "promptOnly": bit(0), "markdownOnly": bit(1),
        "runOnEdit": bit(2), "substituteRegex": u8::from(bit(3)) + u8::from(bit(4)),
        "minDepth": if bit(5) { serde_json::json!(1) } else { serde_json::Value::Null },
    });
    let doc = serde_json::json!({
        "prompts": [{"identifier": "main", "content": "M"}, {"identifier": "chatHistory", "marker": true}],
        "extensions": {"regex_scripts": [script.clone(), script]}});
    let Ok(preset) = Preset::from_json(doc.to_string().as_bytes()) else {
        return;
    };
    let compiled = preset.compile();
    let mut ctx = context();
    ctx.allow_preset_regex = true;
    ctx.variables
        .insert("v".into(), find.chars().take(64).collect());
    // Small bounds keep each unit well under the fuzzer's timeout.
    ctx.options.limits.regex_run_steps = 200_000;
    ctx.options.limits.regex_run_steps_max = 2_000_000;
    ctx.options.limits.regex_pass_steps = 4_000_000;
    // A replacement may multiply the text up to the output limit (linear, but 8 MiB through
    // seven passes and two renders' token counts is seconds): a smaller limit, same rules.
    ctx.options.limits.output_bytes = 256 << 10;
    let limit = ctx.options.limits.output_bytes;
    let role = if bit(6) {
        stpreset::Role::User
    } else {
        stpreset::Role::Model
    };
    for out in [
        compiled.store_message(&text, role, &ctx),
        compiled.edit_message(&text, role, Some("Kaede"), &ctx),
        compiled.display_message(&text, role, Some(2), Some("Kaede"), &ctx),
    ] {
        assert!(out.text.len() <= limit.max(text.len()));
    }
    // The display text for Markdown hosts: its HTML read leniently, at most twice the display
    // pass's output (each tag's Markdown is shorter than twice the tag).
    let display = compiled.display_message(&text, role, Some(2), Some("Kaede"), &ctx);
    let markdown = stpreset::scripts::display_markdown(&display.text);
    assert!(markdown.len() <= 2 * display.text.len());
    assert!(stpreset::scripts::display_markdown(&text).len() <= 2 * text.len());
    let a = compiled.store_message(&text, role, &ctx);
    let b = compiled.store_message(&text, role, &ctx);
    assert_eq!(a, b, "same inputs, same result");
    ctx.items.push(stpreset::ContextItem::new(
        Some(stpreset::Tag::DialogueHistory),
        role,
        text.clone(),
    ));
    let pass = compiled.prompt_pass(&ctx);
    assert_eq!(pass.items.len(), ctx.items.len());
    let r = compiled.render(&ctx);
    let total: usize = r.messages.iter().map(stpreset::Message::len).sum();
    assert!(total <= limit);
    assert_eq!(r.messages, compiled.render(&ctx).messages);
}

/// A chat changed turn after turn (`Chat`, issue 20): `\0`-separated segments, the first the
/// context file, each next one an operation: `s` + start + count + items JSON (splice), `f` +
/// fields JSON (set), `k` (keep the last render's variables), `r` (render). After every
/// operation each item's text is found as that item; a render of the chat (which remembers
/// its items' token counts) is the render of its context, and a message that says it is an
/// item (`Message::item`) has that item's text as its one part.
pub fn chat(data: &[u8]) {
    let mut segments = data.split(|&b| b == 0);
    let Some(first) = segments.next() else {
        return;
    };
    let Ok(mut chat) = stpreset::Chat::from_json(first) else {
        return;
    };
    // The fuzzer's context may not raise the work budget (`limits`).
    let fuzz_limits = br#"{"limits": {"render_work": 200000000, "chat_work": 25000000}}"#;
    chat.set_json(fuzz_limits)
        .expect("the fuzz limits are a context");
    let preset = Preset::from_json(
        br#"{"openai_max_context": 600, "prompts": [{"identifier": "main", "content": "{{user}} {{lastMessage}}{{setvar::n::{{getvar::n}}x}}"},
            {"identifier": "chatHistory", "marker": true},
            {"identifier": "jb", "content": "j", "injection_position": 1, "injection_depth": 1}]}"#,
    )
    .expect("the fuzz preset imports")
    .compile();
    type Vars = std::collections::BTreeMap<String, String>;
    let mut kept: (Vars, Vars) = Default::default();
    for op in segments {
        match op.split_first() {
            Some((b's', rest)) if rest.len() >= 2 => {
                let (start, count) = (rest[0] as usize, rest[1] as usize);
                let before = chat.len();
                if chat.splice_json(start, count, &rest[2..]).is_err() {
                    assert_eq!(chat.len(), before, "a refused splice changed the chat");
                }
            }
            Some((b'f', rest)) => {
                let _ = chat.set_json(rest);
                chat.set_json(fuzz_limits)
                    .expect("the fuzz limits are a context");
            }
            Some((b'k', _)) => chat.keep(kept.0.clone(), kept.1.clone()),
            // Saved and read back (a restart): the same items, and the same render when no
            // lone surrogate was repaired (the saved text holds U+FFFD, so no note follows).
            Some((b'v', _)) => {
                let saved = chat.to_json();
                let loaded =
                    stpreset::Chat::from_json(saved.as_bytes()).expect("a saved chat reads back");
                assert_eq!(loaded.context().items, chat.context().items, "saved items");
                if chat.context().lone_surrogates == 0 {
                    assert_eq!(
                        preset.render(loaded.context()).to_json(),
                        preset.render(chat.context()).to_json(),
                        "a loaded chat renders otherwise"
                    );
                }
            }
            Some((b'r', _)) => {
                let out = preset.render_chat(&chat);
                assert_eq!(
                    out.to_json(),
                    preset.render(chat.context()).to_json(),
                    "a chat's render differs from its context's"
                );
                let items = &chat.context().items;
                for m in &out.messages {
                    if let Some(i) = m.item() {
                        assert_eq!(
                            m.parts(),
                            [items[i].text.as_str()],
                            "message {i} is not its item"
                        );
                    }
                }
                kept = (out.variables, out.globals);
            }
            _ => {}
        }
        let mut found = chat.passthrough();
        for (i, item) in chat.context().items.iter().enumerate() {
            if !item.text.is_empty() {
                assert_eq!(
                    found.item_of(&item.text),
                    Some(i),
                    "item {i} not found by address"
                );
            }
        }
        let bound = data.len() / 3 + 1;
        assert!(
            chat.context().lone_surrogates <= bound,
            "more notes than input"
        );
    }
}

/// World Info activation (SPEC §15): the input is a lorebook, a NUL, then chat messages
/// separated by NULs. Import and activation never panic; every activated name is an entry of
/// the book; the state round-trips as JSON and a second turn on it does not panic; output is
/// bounded by the entries' text.
pub fn lore(data: &[u8]) {
    let mut parts = data.split(|&b| b == 0);
    let Some(book) = parts.next() else { return };
    let limits = limits();
    let Ok(book) = stpreset::Lorebook::from_json("b", book, &limits) else {
        return;
    };
    let mut ctx = stpreset::Context::default();
    ctx.user = "Alice".into();
    ctx.char = "Tomori".into();
    for (i, m) in parts.take(64).enumerate() {
        let role = if i % 2 == 0 {
            stpreset::Role::User
        } else {
            stpreset::Role::Model
        };
        ctx.items.push(stpreset::ContextItem::new(
            Some(stpreset::Tag::DialogueHistory),
            role,
            String::from_utf8_lossy(m).into_owned(),
        ));
    }
    let settings = stpreset::lore::WiSettings::default();
    let words =
        stpreset::tokens::Counter::Builtin(stpreset::tokens::Tokenizer::Words).for_model("");
    let books = [book];
    let mut state = stpreset::lore::WiState::default();
    for turn in 0..2u64 {
        let mut input = stpreset::activation::WiInput::new(&ctx);
        input.position = Some(ctx.items.len() as u64 + turn);
        let mut rng = stpreset::activation::SeededRandom::new(7, turn);
        let out = stpreset::activation::activate(
            &books, &input, &settings, &state, &mut rng, &*words, &limits,
        );
        let names: std::collections::HashSet<String> =
            serde_json::from_value::<Vec<serde_json::Value>>(books[0].entries_json())
                .unwrap_or_default()
                .iter()
                .map(|e| {
                    format!(
                        "b.{}",
                        e["uid"]
                            .as_str()
                            .map_or_else(|| e["uid"].to_string(), str::to_string)
                    )
                })
                .collect();
        for a in &out.activated {
            assert!(names.contains(a), "activated {a} is not an entry");
        }
        let json = serde_json::to_string(&out.state).expect("state serializes");
        state = serde_json::from_str(&json).expect("state reads back");
    }
}

/// Card bytes (SPEC §15.1): reading never panics, in either format; a card that reads prints a
/// document that is JSON, and applying it to a context keeps the context readable.
pub fn card(data: &[u8]) {
    let limits = limits();
    for format in [
        stpreset::lore::CardFormat::Png,
        stpreset::lore::CardFormat::Auto,
    ] {
        if let Ok(card) = stpreset::Card::from_bytes(data, format, &limits) {
            let doc = card.to_json_document();
            serde_json::from_str::<serde_json::Value>(&doc).expect("the card document is JSON");
            let mut ctx = stpreset::Context::default();
            ctx.options.limits = limits.clone();
            card.apply_to(&mut ctx);
            let _ = stpreset::activation::WiResult::for_context(&ctx);
            // A chat started from it: the item is the first swipe, one swipe per greeting.
            let preset = Preset::from_json(
                br#"{"prompts": [{"identifier": "chatHistory", "marker": true}]}"#,
            )
            .expect("the fuzz preset imports")
            .compile();
            if let Some(first) = preset.first_message(&ctx) {
                assert_eq!(
                    Some(&first.item.text),
                    first.swipes.first(),
                    "the first swipe"
                );
                assert!(first.swipes.len() <= 1 + ctx.alternate_greetings.len());
            }
        }
    }
}

/// A preset, a card and a SillyTavern chat file (`PRESET \0 CARD \0 CHAT.jsonl`, any part
/// missing or refused left out) rendered under `layout: "sillytavern"` (SPEC §17–§18), in
/// each generation type: never a panic, the output cap holds (SPEC §8), the same input gives
/// the same messages, and every shape's body is bounded by the messages.
pub fn st_layout(data: &[u8]) {
    let mut parts = data.splitn(3, |&b| b == 0);
    let Ok(preset) = Preset::from_json(parts.next().unwrap_or_default()) else {
        return;
    };
    let compiled = preset.compile();
    let mut ctx = context();
    let limits = limits();
    let mut member = None;
    if let Some(card) = parts.next()
        && let Ok(card) =
            stpreset::Card::from_bytes(card, stpreset::lore::CardFormat::Auto, &limits)
    {
        card.apply_to(&mut ctx);
        member = Some(stpreset::lore::GroupCard::from(&card));
    }
    if let Some(chat) = parts.next() {
        let _ = ctx.apply_st_chat(chat);
    }
    ctx.layout = stpreset::Layout::SillyTavern;
    ctx.now = context().now;
    ctx.items.truncate(64);
    use stpreset::lore::GenerationType as G;
    for generation in [G::Normal, G::Continue, G::Impersonate, G::Swipe, G::Quiet] {
        ctx.lore
            .get_or_insert_with(|| stpreset::lore::LoreInput::new(Vec::new()))
            .generation_type = generation;
        render_bounded(&compiled, &ctx);
    }
    // The same inputs as a group chat in both append modes (SPEC §18.3), the card also the
    // second member's, a third member muted and one without a card.
    if let Some(member) = member {
        ctx.group = vec![ctx.char.clone(), "Mira".into(), "Kai".into(), "Lost".into()];
        ctx.group_muted = vec!["Kai".into()];
        ctx.group_cards.insert("Mira".into(), member.clone());
        ctx.group_cards.insert("Kai".into(), member);
        ctx.group_join_prefix = "<FIELDNAME> of {{char}}: ".into();
        ctx.group_join_suffix = "\n".into();
        for mode in [
            stpreset::layout::GroupMode::Append,
            stpreset::layout::GroupMode::AppendDisabled,
        ] {
            ctx.group_generation_mode = mode;
            render_bounded(&compiled, &ctx);
        }
    }
}
