//! Arbitrary bytes through the grammar, the tree builder and a render.
//! Invariants: no panic; invalid UTF-8 is refused; text without any syntax renders to itself;
//! output stays within the output limit; rendering twice gives the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stpreset::{Context, Template};

fuzz_target!(|data: &[u8]| {
    let Ok(template) = Template::from_bytes(data) else {
        assert!(std::str::from_utf8(data).is_err());
        return;
    };
    // A fixed clock and seed so a crash reproduces.
    let ctx = Context::from_json(
        br#"{"user": "Alice", "char": "Tomori", "seed": 7, "now": "2026-11-29T17:07:00Z",
             "description": "{{user}}'s friend", "capabilities": {"web_search": true},
             "tools": ["web_search"], "tool_names": {"t": "tool"}}"#,
    )
    .expect("fixed context parses");
    let a = template.render(&ctx);
    assert!(a.text.len() <= ctx.limits.output_bytes);
    let b = template.render(&ctx);
    assert_eq!(a.text, b.text);
    let src = template.source();
    if !src.contains(['{', '}', '<', '\\']) && !src.trim().is_empty() {
        assert_eq!(a.text, src);
    }
});
