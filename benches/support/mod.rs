//! Shared by the benches and the corpus test: a realistic bot context and the corpus location.

/// A skip message the test harness does not capture: it shows in a plain `cargo test`.
macro_rules! skipped {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

use std::path::PathBuf;

use serde_json::json;
use stpreset::Context;

/// The real presets beside the checkout, sorted; empty (with a message) when absent.
#[allow(dead_code)] // each includer uses part of this module
pub fn corpus() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/presets");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        skipped!(
            "SKIPPED: {} not found (../shared is not beside this checkout)",
            dir.display()
        );
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    paths
}

/// A bot-like context: persona, personality, lore, memories, and a `history`-message history.
#[allow(dead_code)]
pub fn realistic_context(history: usize) -> Context {
    Context::from_json(&realistic_context_json(history)).unwrap()
}

/// `realistic_context` as context-file JSON (what a binding receives). The Node and Python
/// bench scripts (`bindings/*/bench.*`) build the same document.
#[allow(dead_code)]
pub fn realistic_context_json(history: usize) -> Vec<u8> {
    let mut items = vec![
        json!({"tag": "SYSTEM_CHANNEL_PROMPT", "role": "system", "text": "Channel: #roleplay"}),
        json!({"tag": "SYSTEM_PERSONA_PROMPT", "role": "system", "text": "{{char}} is a shrine maiden who tends the hill shrine."}),
        json!({"tag": "SYSTEM_PERSONALITY", "role": "system", "text": "kind, witty, stubborn"}),
        json!({"tag": "KNOWLEDGE_SERVER_INFO", "role": "system", "text": "Server: Moonlit Hill"}),
        json!({"tag": "KNOWLEDGE_SERVER_MEMORIES", "role": "system", "text": "{user} once lost a bet."}),
        json!({"tag": "KNOWLEDGE_LOREBOOK_BEFORE", "role": "system", "text": "The shrine is 300 years old."}),
        json!({"tag": "KNOWLEDGE_LOREBOOK_AFTER", "role": "system", "text": "Festivals happen in autumn."}),
        json!({"tag": "KNOWLEDGE_ACTIVE_USERS", "role": "system", "text": "Active: Alice, Bob"}),
        json!({"tag": "DIALOGUE_SAMPLE", "role": "user", "text": "Alice: hello?"}),
        json!({"tag": "DIALOGUE_SAMPLE", "role": "model", "text": "Tomori: Welcome, traveller."}),
    ];
    for i in 0..history {
        let (role, who) = if i % 2 == 0 {
            ("user", "Alice")
        } else {
            ("model", "Tomori")
        };
        items.push(json!({"tag": "DIALOGUE_HISTORY", "role": role,
                          "text": format!("{who}: message {i} about the festival and the old shrine."),
                          "time": "2026-11-29T16:00:00Z"}));
    }
    items.push(
        json!({"tag": "CONTEXT_CURRENT", "role": "system", "text": "It is raining.", "depth": 1}),
    );
    items.push(
        json!({"tag": "KNOWLEDGE_LORE_ACTIVATED", "role": "system", "text": "Rain omen lore."}),
    );
    let ctx = json!({
        "user": "Alice", "char": "Tomori", "description": "A shrine maiden. {{user}} is her friend.",
        "personality": "kind\nwitty", "persona": "Alice is a student.", "scenario": "",
        "model": "gemini-2.5-pro", "provider": "google", "now": "2026-11-29T17:07:00Z",
        "utc_offset_minutes": 480, "seed": 42, "chat_id": "chat-1",
        "capabilities": {"web_search": true}, "tools": ["web_search"],
        "globals": {"mood": "calm"}, "items": items});
    serde_json::to_vec(&ctx).unwrap()
}
