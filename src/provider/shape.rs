//! Step 4, the request shapes (SPEC §12.3): OpenAI chat, Anthropic Messages (ST
//! `convertClaudeMessages`, `cachingAtDepthForClaude`), Gemini (ST `convertGooglePrompt`).

use serde_json::{Map, Value, json};

use super::models;
use super::process::{Speakers, any_name, example_names};
use super::{ChatMessage, ProviderOptions};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::role::Role;

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Model => "assistant",
    }
}

/// `{"messages": [{"role", "content", "name"?}]}`.
pub(super) fn openai(list: Vec<ChatMessage>) -> Value {
    let messages: Vec<Value> = list
        .into_iter()
        .map(|m| {
            let mut o = Map::new();
            o.insert("role".into(), role_name(m.role).into());
            o.insert("content".into(), m.text.into());
            if let Some(n) = m.name {
                o.insert("name".into(), n.into());
            }
            Value::Object(o)
        })
        .collect();
    json!({ "messages": messages })
}

fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}

/// `{"system"?: [blocks], "messages": [{"role", "content": [blocks]}]}`.
pub(super) fn anthropic(
    list: Vec<ChatMessage>,
    options: &ProviderOptions,
    names: &Speakers<'_>,
    model: &str,
    notes: &mut Vec<Diagnostic>,
) -> Value {
    // 0. The API rejects blank text blocks.
    let mut list: std::collections::VecDeque<ChatMessage> = list
        .into_iter()
        .filter(|m| options.keep_blank || !m.text.trim().is_empty())
        .collect();
    // 1. The leading system run becomes `system`.
    let use_system_prompt = options.use_system_prompt.value() != Some(&false);
    let mut system = Vec::new();
    if use_system_prompt {
        while list.front().is_some_and(|m| m.role == Role::System) {
            if let Some(m) = list.pop_front() {
                let text = example_names(m, names);
                system.push(text_block(text));
            }
        }
        if list.is_empty() {
            list.push_back(ChatMessage::new(Role::User, &options.placeholder));
        }
    }
    // 2. Roles and names; 3. prefill; 4. same-role turns concatenate their blocks.
    let mut turns: Vec<(Role, Vec<Value>)> = Vec::with_capacity(list.len() + 1);
    let mut push = |role: Role, block: Value| match turns.last_mut() {
        Some((r, blocks)) if *r == role => blocks.push(block),
        _ => turns.push((role, vec![block])),
    };
    for m in list {
        let (role, text) = match m.role {
            Role::System => (Role::User, example_names(m, names)),
            role => match &m.name {
                Some(n) => (role, format!("{n}: {}", m.text)),
                None => (role, m.text),
            },
        };
        push(role, text_block(text));
    }
    let prefill = options.assistant_prefill.value().map_or("", String::as_str);
    if !prefill.trim().is_empty() {
        let prefill = prefill.trim_end().to_string();
        push(Role::Model, text_block(prefill));
    }
    if options.keep_blank {
        warn_blank_turns(&turns, notes);
    }
    // 5. Caching, in SillyTavern's order.
    let ttl = options.cache_ttl.as_str();
    let cache = |blocks: &mut Vec<Value>| {
        if let Some(last) = blocks.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral", "ttl": ttl});
        }
    };
    if options.cache_system_prompt {
        cache(&mut system);
    }
    if let Some(d) = options.cache_at_depth {
        let mut passed_prefill = false;
        let mut depth = 0u64;
        let mut previous = None;
        for (role, blocks) in turns.iter_mut().rev() {
            if !passed_prefill && *role == Role::Model {
                continue;
            }
            passed_prefill = true;
            if previous != Some(*role) {
                if depth == d || depth == d.saturating_add(2) {
                    cache(blocks);
                }
                if depth == d.saturating_add(2) {
                    break;
                }
                depth += 1;
                previous = Some(*role);
            }
        }
    }
    // 6. A trailing assistant turn on a model that refuses prefills, or that thinks (SPEC
    // §14.4 anthropic rule 5), is sent as the user's.
    if (models::claude_adaptive(model) || super::fields::claude_thinks(model, options))
        && let Some((role, _)) = turns.last_mut()
        && *role == Role::Model
    {
        *role = Role::User;
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role_name(role), "content": content}))
        .collect();
    let mut request = Map::new();
    if use_system_prompt && !system.is_empty() {
        request.insert("system".into(), Value::Array(system));
    }
    request.insert("messages".into(), Value::Array(messages));
    Value::Object(request)
}

/// Where blank messages are kept (the SillyTavern layout, as ST sends them: recorded, e.g.
/// NemoEngine 5.9.1's first turn `[" "]`), a turn whose every text block is blank is sent as
/// ST sends it, with one `BlankTurn` warning naming the first: the API refuses such a turn
/// ("text content blocks must contain non-whitespace text"), while a blank block beside a
/// non-blank one is accepted. Dropping it would make the request differ from ST's.
fn warn_blank_turns(turns: &[(Role, Vec<Value>)], notes: &mut Vec<Diagnostic>) {
    let blank = |blocks: &[Value]| {
        blocks
            .iter()
            .all(|b| b["text"].as_str().is_some_and(|t| t.trim().is_empty()))
    };
    let mut found = turns.iter().enumerate().filter(|(_, (_, b))| blank(b));
    if let Some((first, _)) = found.next() {
        let more = found.count();
        let others = match more {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        notes.push(Diagnostic::new(
            DiagnosticKind::BlankTurn,
            None,
            format!(
                "message {first}{others} holds only blank text: the Anthropic API refuses it \
                 (\"text content blocks must contain non-whitespace text\"); SillyTavern sends \
                 it as it is"
            ),
        ));
    }
}

/// `{"systemInstruction"?: {"parts"}, "contents": [{"role", "parts"}]}`.
pub(super) fn google(
    list: Vec<ChatMessage>,
    options: &ProviderOptions,
    names: &Speakers<'_>,
    model: &str,
) -> Value {
    let mut list: std::collections::VecDeque<ChatMessage> = list.into();
    let mut system = Vec::new();
    if options.use_system_prompt.value() != Some(&false) && !models::gemini_no_system(model) {
        while list.len() > 1 && list.front().is_some_and(|m| m.role == Role::System) {
            if let Some(m) = list.pop_front() {
                system.push(json!({"text": example_names(m, names)}));
            }
        }
    }
    let mut contents: Vec<(&'static str, String)> = Vec::with_capacity(list.len());
    for m in list {
        let role = match m.role {
            Role::Model => "model",
            _ => "user",
        };
        let text = any_name(m, names);
        match contents.last_mut() {
            Some((r, first)) if *r == role => {
                first.push_str("\n\n");
                first.push_str(&text);
            }
            _ => contents.push((role, text)),
        }
    }
    let contents: Vec<Value> = contents
        .into_iter()
        .map(|(role, text)| json!({"role": role, "parts": [{"text": text}]}))
        .collect();
    let mut request = Map::new();
    if !system.is_empty() {
        request.insert("systemInstruction".into(), json!({ "parts": system }));
    }
    request.insert("contents".into(), Value::Array(contents));
    Value::Object(request)
}
