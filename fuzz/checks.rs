//! The invariants the fuzz targets assert, shared with `tests/fuzz_regressions.rs` so every
//! crash input replays in `cargo test`.

// Each fuzz target includes this file and uses only its own check.
#![allow(dead_code)]

use stpreset::{Context, Preset, Template};

/// A fixed context (clock, seed, host facts, a little history) so every run reproduces.
pub fn context() -> Context {
    Context::from_json(
        br#"{"user": "Alice", "char": "Tomori", "seed": 7, "now": "2026-11-29T17:07:00Z",
             "description": "{{user}}'s friend {char}", "persona": "a student",
             "capabilities": {"web_search": true, "image_generation": false},
             "tools": ["web_search"], "tool_families": {"url_fetch": false},
             "tool_names": {"t": "tool"}, "tool_phrases": {"p": "a phrase"},
             "globals": {"g": "1"},
             "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi", "time": "2026-11-29T17:00:00Z"},
                       {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "yo"}]}"#,
    )
    .expect("fixed context parses")
}

/// Bytes → tokens → tree. Never panics; invalid UTF-8 is refused, nothing else is.
pub fn parse(data: &[u8]) {
    match Template::from_bytes(data) {
        Ok(t) => assert_eq!(t.source().as_bytes(), data),
        Err(_) => assert!(std::str::from_utf8(data).is_err()),
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
    assert!(a.text.len() <= ctx.limits.output_bytes);
    let b = template.render(&ctx);
    assert_eq!(a.text, b.text, "same seed and clock, same bytes");
    assert_eq!(a.diagnostics, b.diagnostics);
    let src = template.source();
    if !src.contains(['{', '<', '\\']) && !src.trim().is_empty() {
        assert_eq!(a.text, src, "plain text renders to itself");
    }
}

/// `PRESET JSON` + optional `\n\0CONTEXT JSON`: import errors are fine, panics are not; a
/// render stays within the output limit and is deterministic.
pub fn render(data: &[u8]) {
    let (preset, ctx) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Context::from_json(&data[i + 1..]).ok()),
        None => (data, None),
    };
    let Ok(preset) = Preset::from_json(preset) else {
        return;
    };
    let mut ctx = ctx.unwrap_or_else(context);
    // The fuzzer must not wait for the real clock or a huge history.
    ctx.now = context().now;
    ctx.items.truncate(64);
    let compiled = preset.compile();
    let a = compiled.render(&ctx);
    let total: usize = a
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(String::len)
        .sum();
    assert!(total <= ctx.limits.output_bytes);
    let b = compiled.render(&ctx);
    assert_eq!(a.messages, b.messages, "same seed and clock, same messages");
    let _ = preset.audit();
}
