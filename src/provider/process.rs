//! Steps before the shape (SPEC §12.1, §12.2): prepare, squash, post-processing modes (ST
//! `mergeMessages`), and the name rules they share with the shapes.

use aho_corasick::{AhoCorasick, Anchored, Input, StartKind};

use super::{ChatMessage, Names, PostProcessing};
use crate::role::Role;

/// The names as the rules test them. "Starts with a group member's name" is asked of every
/// model turn (in `single` mode, every message): the members' `G: ` prefixes sit in one anchored
/// automaton built once per request, so each test costs the text's matching prefix, not
/// members × messages (a group of 150,000 over 20,000 turns took 7 s as a loop).
pub(super) struct Speakers<'a> {
    pub user: &'a str,
    pub char: &'a str,
    group: Group<'a>,
}

enum Group<'a> {
    None,
    Automaton(AhoCorasick),
    /// Only if the automaton cannot be built (beyond its size limits): the plain loop.
    Members(&'a [String]),
}

impl<'a> Speakers<'a> {
    pub fn new(names: &'a Names) -> Speakers<'a> {
        let group = if names.group.is_empty() {
            Group::None
        } else {
            AhoCorasick::builder()
                .start_kind(StartKind::Anchored)
                .build(names.group.iter().map(|g| format!("{g}: ")))
                .map_or(Group::Members(&names.group), Group::Automaton)
        };
        Speakers {
            user: &names.user,
            char: &names.char,
            group,
        }
    }

    /// Whether `text` starts with `G: ` for some group member G.
    fn group_member_says(&self, text: &str) -> bool {
        match &self.group {
            Group::None => false,
            Group::Automaton(ac) => ac.find(Input::new(text).anchored(Anchored::Yes)).is_some(),
            Group::Members(members) => members.iter().any(|g| says(text, g)),
        }
    }
}

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
pub(super) fn as_char(text: String, names: &Speakers<'_>) -> String {
    if names.char.is_empty() || says(&text, names.char) || names.group_member_says(&text) {
        text
    } else {
        prefixed(names.char, text)
    }
}

/// Rule 12.2.A.b: `USER: ` unless USER is empty or the text already starts with it.
pub(super) fn as_user(text: String, names: &Speakers<'_>) -> String {
    if names.user.is_empty() || says(&text, names.user) {
        text
    } else {
        prefixed(names.user, text)
    }
}

/// Rules a and b for system messages of the example names; other names add nothing. The
/// message's text, moved.
pub(super) fn example_names(m: ChatMessage, names: &Speakers<'_>) -> String {
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
pub(super) fn any_name(m: ChatMessage, names: &Speakers<'_>) -> String {
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
    names: &Speakers<'_>,
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
    fn a_group_member_prefix_is_found_by_the_automaton() {
        let names = Names {
            user: "U".into(),
            char: "C".into(),
            group: vec!["Ka".into(), "Kaede: x".into(), "".into()],
        };
        let s = Speakers::new(&names);
        assert!(s.group_member_says("Ka: hi"));
        assert!(s.group_member_says("Kaede: x: hi"));
        assert!(s.group_member_says(": hi"), "an empty member name is `: `");
        assert!(!s.group_member_says("Kaede: hi"));
        assert!(!s.group_member_says("say Ka: hi"));
        assert_eq!(as_char("Kaede: hi".into(), &s), "C: Kaede: hi");
        assert_eq!(as_char("Ka: hi".into(), &s), "Ka: hi");
    }

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
            &Speakers::new(&names),
            "[Start]",
        );
        assert_eq!(out[0].text, "Alice: hi");
        assert_eq!(out[1].text, "example_user: hi");
    }
}
