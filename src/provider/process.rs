//! Steps before the shape (SPEC §12.1, §12.2): prepare, squash, post-processing modes (ST
//! `mergeMessages`), and the name rules they share with the shapes.

use super::{ChatMessage, Names, PostProcessing};
use crate::role::Role;

/// §12.1: empty messages are dropped (SillyTavern never sends them). An empty name is no name:
/// SillyTavern tests names for truthiness (`if (message.name)`, `!message.name`), so `""`
/// neither prefixes `": "` nor blocks `squash_system`, nor reaches the `openai` shape.
pub(super) fn prepare(messages: impl Iterator<Item = ChatMessage>) -> Vec<ChatMessage> {
    messages
        .filter(|m| !m.text.is_empty())
        .map(|mut m| {
            if m.name.as_deref() == Some("") {
                m.name = None;
            }
            m
        })
        .collect()
}

/// Whether `text` starts with `name: `.
fn says(text: &str, name: &str) -> bool {
    text.strip_prefix(name).is_some_and(|r| r.starts_with(": "))
}

fn prefixed(name: &str, text: String) -> String {
    format!("{name}: {text}")
}

/// Rule 12.2.A.a: `CHAR: ` unless CHAR is empty, or the text already starts with it or with a
/// group member's name.
pub(super) fn as_char(text: String, names: &Names) -> String {
    if names.char.is_empty()
        || says(&text, &names.char)
        || names.group.iter().any(|g| says(&text, g))
    {
        text
    } else {
        prefixed(&names.char, text)
    }
}

/// Rule 12.2.A.b: `USER: ` unless USER is empty or the text already starts with it.
pub(super) fn as_user(text: String, names: &Names) -> String {
    if names.user.is_empty() || says(&text, &names.user) {
        text
    } else {
        prefixed(&names.user, text)
    }
}

/// Rules a and b for system messages of the example names; other names add nothing. The
/// message's text, moved.
pub(super) fn example_names(m: ChatMessage, names: &Names) -> String {
    match m.name.as_deref() {
        Some("example_assistant") => as_char(m.text, names),
        Some("example_user") => as_user(m.text, names),
        _ => m.text,
    }
}

/// Rule c: a name N gives `N: ` unless the text starts with it. The message's text, moved.
fn named(m: ChatMessage) -> String {
    match m.name.as_deref() {
        Some(n) if !says(&m.text, n) => prefixed(n, m.text),
        _ => m.text,
    }
}

/// Gemini's rule, whatever the role: the example names by rules a and b, any other by rule c.
pub(super) fn any_name(m: ChatMessage, names: &Names) -> String {
    match m.name.as_deref() {
        Some("example_assistant" | "example_user") => example_names(m, names),
        _ => named(m),
    }
}

/// §12.2.1: consecutive nameless system messages joined with one newline; a message kept apart
/// (SPEC §14.5) joins nothing and nothing joins it.
pub(super) fn squash_system(list: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(list.len());
    for m in list {
        if let Some(last) = out.last_mut()
            && m.role == Role::System
            && m.name.is_none()
            && !m.keep_apart
            && last.role == Role::System
            && last.name.is_none()
            && !last.keep_apart
        {
            last.text.push('\n');
            last.text.push_str(&m.text);
        } else {
            out.push(m);
        }
    }
    out
}

/// Step B: a non-empty message of the previous message's role joins it after a blank line.
fn push_merged(out: &mut Vec<ChatMessage>, m: ChatMessage) {
    match out.last_mut() {
        Some(last) if last.role == m.role && !m.text.is_empty() => {
            last.text.push_str("\n\n");
            last.text.push_str(&m.text);
        }
        _ => out.push(m),
    }
}

fn placeholder(text: &str) -> ChatMessage {
    ChatMessage::new(Role::User, text)
}

/// §12.2, algorithm M (every mode but `none`, which passes the list unchanged).
pub(super) fn post_process(
    list: Vec<ChatMessage>,
    mode: PostProcessing,
    names: &Names,
    placeholder_text: &str,
) -> Vec<ChatMessage> {
    if mode == PostProcessing::None {
        return list;
    }
    let single = mode == PostProcessing::Single;
    let mut out: Vec<ChatMessage> = Vec::with_capacity(list.len());
    for m in list {
        // A: names become prefixes, then go.
        let mut role = m.role;
        let mut text = if role == Role::System {
            example_names(m, names)
        } else {
            named(m)
        };
        if single {
            text = match role {
                Role::Model => as_char(text, names),
                Role::User => as_user(text, names),
                Role::System => text,
            };
            role = Role::User;
        }
        push_merged(&mut out, ChatMessage::new(role, text));
    }
    if out.is_empty() {
        out.push(placeholder(placeholder_text));
    }
    if matches!(
        mode,
        PostProcessing::Semi | PostProcessing::Strict | PostProcessing::Single
    ) {
        for m in out.iter_mut().skip(1) {
            if m.role == Role::System {
                m.role = Role::User;
            }
        }
        if mode == PostProcessing::Strict {
            if out[0].role == Role::System && out.get(1).is_none_or(|m| m.role != Role::User) {
                out.insert(1, placeholder(placeholder_text));
            } else if out[0].role == Role::Model {
                out.insert(0, placeholder(placeholder_text));
            }
        }
        let list = std::mem::take(&mut out);
        for m in list {
            push_merged(&mut out, m);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_names_are_rules_a_and_b_only_on_system_messages() {
        let names = Names {
            user: "Alice".into(),
            char: "Tomori".into(),
            group: Vec::new(),
        };
        let msg = |role, name: &str| ChatMessage {
            name: Some(name.into()),
            ..ChatMessage::new(role, "hi")
        };
        let out = post_process(
            vec![
                msg(Role::System, "example_user"),
                msg(Role::User, "example_user"),
            ],
            PostProcessing::Semi,
            &names,
            "[Start]",
        );
        assert_eq!(out[0].text, "Alice: hi");
        assert_eq!(out[1].text, "example_user: hi");
    }
}
