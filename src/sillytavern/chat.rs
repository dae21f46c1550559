//! The chat as SillyTavern turns it into messages (notes rules 21, 31, 35–37): each history
//! item named as `names_behavior` says, its name macros replaced (SPEC §17.3.5), and the
//! depth injections spliced in as messages of their own (`populationInjectionPrompts`).

use std::borrow::Cow;

use crate::assemble::{Source, sanitize_name};
use crate::context::{Context, Tag};
use crate::role::Role;

/// A chat or injected message before the budget: a history item's text is borrowed when the
/// layout leaves it as it is (then a binding hands the caller's own string back,
/// `passthrough`).
#[derive(Debug, Clone)]
pub(crate) struct ChatLine<'c> {
    pub role: Role,
    pub text: Cow<'c, str>,
    /// The `name` field (names mode 1).
    pub name: Option<Box<str>>,
    /// `Some((depth, order))` for an injected message.
    pub injected: Option<(u32, f64)>,
    /// The caller's item it comes from (a history message): its token count is remembered
    /// by a `Chat` when the text is the item's own.
    pub item: Option<usize>,
}

impl ChatLine<'_> {
    /// What produced the line: a history item, or the depth injections of one depth, order and
    /// role.
    pub fn source(&self) -> Source {
        match self.injected {
            Some((depth, order)) => Source::Depth {
                depth,
                order: order as i64,
                role: self.role,
            },
            None => Source::Tag(Some(Tag::DialogueHistory)),
        }
    }
}

/// One prompt to inject: its role (only the three ST knows), depth, order and text.
#[derive(Debug, Clone)]
pub(crate) struct Injection {
    pub role: Role,
    pub depth: u32,
    pub order: f64,
    pub text: String,
}

/// ST's extension prompt at a depth (`getExtensionPrompt(IN_CHAT, …)`): by key, in key order.
#[derive(Debug, Clone)]
pub(crate) struct ExtensionPrompt {
    pub key: String,
    pub role: Role,
    pub depth: u64,
    pub text: String,
}

/// The macros SPEC §17.3.5 replaces in chat text, case-insensitively, with their values.
/// Outside a group every value is the user's or the speaker's name, borrowed (this runs every
/// render: owned copies were a dozen allocations of a short render).
fn chat_macros<'a>(ctx: &'a Context, char: &'a str) -> Vec<(&'static str, Cow<'a, str>)> {
    let user = Cow::Borrowed(ctx.user.as_str());
    let speaker = Cow::Borrowed(char);
    // `{{group}}`, `{{charIfNotGroup}}`, `{{groupNotMuted}}`, `{{notChar}}`.
    let (group, not_muted, not_char) = if ctx.group.is_empty() {
        (speaker.clone(), speaker.clone(), user.clone())
    } else {
        let muted: std::collections::HashSet<&str> =
            ctx.group_muted.iter().map(String::as_str).collect();
        let not_muted: Vec<&str> = ctx
            .group
            .iter()
            .map(String::as_str)
            .filter(|m| !muted.contains(m))
            .collect();
        let not_char: Vec<&str> = ctx
            .group
            .iter()
            .map(String::as_str)
            .filter(|m| *m != char)
            .chain(std::iter::once(ctx.user.as_str()))
            .collect();
        (
            Cow::Owned(ctx.group.join(", ")),
            Cow::Owned(not_muted.join(", ")),
            Cow::Owned(not_char.join(", ")),
        )
    };
    vec![
        ("{{user}}", user.clone()),
        ("{{char}}", speaker.clone()),
        ("{{group}}", group.clone()),
        ("{{charifnotgroup}}", group.clone()),
        ("{{groupnotmuted}}", not_muted),
        ("{{notchar}}", not_char),
        ("<user>", user),
        ("<bot>", speaker.clone()),
        ("<char>", speaker),
        ("<group>", group.clone()),
        ("<charifnotgroup>", group),
    ]
}

/// `text` with every macro of `macros` replaced, ASCII case-insensitively, in one left-to-right
/// scan (so a value is never scanned again: chat text stays data), and carriage returns
/// removed, cut at `room` bytes (before the removal). The second value is `false` when the
/// text was cut there: 100,000 `{{user}}` under a 10 KB name would make a gigabyte, so the
/// output stops at the render's cap instead (SPEC §8) and the work is linear in the text plus
/// the room. A text without macros or carriage returns is borrowed, cut or not.
fn replace_macros<'t>(
    text: &'t str,
    macros: &[(&'static str, Cow<'_, str>)],
    room: usize,
) -> (Cow<'t, str>, bool) {
    let bytes = text.as_bytes();
    // Most chat messages have no macro and no carriage return: one scan says so (two, for the
    // macros and then the returns, were a tenth of a long render).
    if memchr::memchr3(b'{', b'<', b'\r', bytes).is_none() {
        let kept = crate::limits::fit(text, room);
        return (Cow::Borrowed(kept), kept.len() == text.len());
    }
    // Every macro starts with `{` or `<`: memchr jumps between them (a byte loop over every
    // history message was the largest part of a repeated SillyTavern-layout render).
    let find = |from: usize| {
        let mut i = from;
        while let Some(at) = memchr::memchr2(b'{', b'<', &bytes[i..]) {
            i += at;
            if let Some(m) = macros.iter().find(|(key, _)| {
                bytes.len() - i >= key.len()
                    && bytes[i..i + key.len()].eq_ignore_ascii_case(key.as_bytes())
            }) {
                return Some((i, m));
            }
            i += 1;
        }
        None
    };
    let Some(mut next) = find(0) else {
        let kept = crate::limits::fit(text, room);
        let whole = kept.len() == text.len();
        return match memchr::memchr(b'\r', kept.as_bytes()) {
            None => (Cow::Borrowed(kept), whole),
            Some(_) => (Cow::Owned(kept.replace('\r', "")), whole),
        };
    };
    let mut out = String::new();
    let push = |out: &mut String, s: &str| {
        let keep = crate::limits::fit(s, room - out.len());
        out.push_str(keep);
        keep.len() == s.len()
    };
    let mut copied = 0;
    let whole = loop {
        let (at, (key, value)) = next;
        if !push(&mut out, &text[copied..at]) || !push(&mut out, value) {
            break false;
        }
        copied = at + key.len();
        match find(copied) {
            Some(m) => next = m,
            None => break push(&mut out, &text[copied..]),
        }
    };
    if memchr::memchr(b'\r', out.as_bytes()).is_some() {
        out.retain(|c| c != '\r');
    }
    (Cow::Owned(out), whole)
}

/// The history items as ST's `setOpenAIMessages` + `populateChatHistory` make them, newest
/// first (the order the room, the injections and the budget walk them: each line is moved
/// once, never reversed). `text` gives an item's text after the prompt pass (by item index); `char` is the
/// speaker ST generates for. The texts share `room` bytes, newest first as the history budget
/// keeps them: past it an item is cut (then empty) and `false` returned, so a hostile chat
/// costs the output cap, not its names times its macros. Within the cap every text is ST's.
///
/// `swiped_at` is the caller's item a swipe's copy of the chat left out (else `usize::MAX`):
/// the items after it are one further in the caller's list.
pub(crate) fn history<'c>(
    ctx: &Context,
    text: impl Fn(usize) -> Cow<'c, str>,
    names_behavior: i64,
    char: &str,
    mut room: usize,
    swiped_at: usize,
) -> (Vec<ChatLine<'c>>, bool) {
    let macros = chat_macros(ctx, char);
    let in_group = !ctx.group.is_empty();
    let mut whole = true;
    // The history items' indices first, then one `extend` over them (its length known), so
    // that each line is written in place: a line built in a temporary and then pushed had
    // its fields read back as wider loads than they were stored with (a store-forwarding
    // stall per message).
    let at: Vec<usize> = (0..ctx.items.len())
        .rev()
        .filter(|&i| ctx.items[i].tag == Some(Tag::DialogueHistory))
        .collect();
    let mut line = |i: usize| {
        let item = &ctx.items[i];
        let narrator = item.role == Role::System;
        let name = item.name.as_deref().unwrap_or(match item.role {
            Role::User => &ctx.user,
            _ => &ctx.char,
        });
        let prefixed = match names_behavior {
            0 => in_group && name != ctx.user,
            2 => !narrator,
            _ => false,
        };
        // The `Name: ` prefix is spent from the room too, and copied only as far as it fits:
        // a 100 KB card name on 100,000 messages costs the room, not ten gigabytes of copies.
        let prefix_len = if prefixed { name.len() + 2 } else { 0 };
        let (body, fits) = match text(i) {
            // Borrowed from the item: what it borrows stays the item's text.
            Cow::Borrowed(t) => replace_macros(t, &macros, room.saturating_sub(prefix_len)),
            Cow::Owned(t) => {
                let (body, fits) = replace_macros(&t, &macros, room.saturating_sub(prefix_len));
                (Cow::Owned(body.into_owned()), fits)
            }
        };
        whole &= prefix_len <= room && fits;
        let text = if prefixed {
            let mut text = String::with_capacity(prefix_len + body.len());
            text.push_str(crate::limits::fit(name, room));
            text.push_str(crate::limits::fit(": ", room - text.len()));
            text.push_str(&body);
            Cow::Owned(text)
        } else {
            body
        };
        room -= text.len().min(room);
        ChatLine {
            role: item.role,
            text,
            name: (names_behavior == 1).then(|| sanitize_name(name).into_boxed_str()),
            injected: None,
            item: Some(i + usize::from(i >= swiped_at)),
        }
    };
    let out: Vec<ChatLine<'c>> = at.iter().map(|&i| line(i)).collect();
    (out, whole)
}

/// JavaScript's `String(number)` for an order key.
fn order_key(order: f64) -> String {
    if order.fract() == 0.0 && order.abs() < 1e15 {
        format!("{}", order as i64)
    } else {
        format!("{order}")
    }
}

/// `populationInjectionPrompts`: for each depth, the prompts grouped by order (high to low),
/// each group's roles system, user, assistant joined with `\n` (order 100 adds the extension
/// prompts of that depth and role), spliced newest-first (`newest` and the result are newest
/// first).
///
/// ST splices each depth's messages at `depth + (messages inserted so far)` of the newest-first
/// list, which puts them after exactly `depth` chat messages (or after all of them): built here
/// in one pass instead of one splice per depth, so the cost is linear in history + prompts.
pub(crate) fn inject<'c>(
    newest: Vec<ChatLine<'c>>,
    prompts: &[Injection],
    extensions: &[ExtensionPrompt],
) -> Vec<ChatLine<'c>> {
    type AtDepth<'a> = (Vec<&'a Injection>, Vec<&'a ExtensionPrompt>);
    let mut by_depth: std::collections::BTreeMap<u32, AtDepth<'_>> = Default::default();
    for p in prompts.iter().filter(|p| !p.text.is_empty()) {
        by_depth.entry(p.depth).or_default().0.push(p);
    }
    for e in extensions.iter().filter(|e| !e.text.is_empty()) {
        if let Some(d) = u32::try_from(e.depth).ok().filter(|d| *d <= 10_000) {
            by_depth.entry(d).or_default().1.push(e);
        }
    }
    if by_depth.is_empty() {
        return newest;
    }
    let total = newest.len() + by_depth.len() * 3;
    let mut newest = newest.into_iter();
    let mut out: Vec<ChatLine<'c>> = Vec::with_capacity(total);
    let mut taken = 0usize;
    for (depth, (at, mut ext)) in by_depth {
        // Groups by order: `100` always exists (the extension prompts' group); keys compared
        // as JavaScript's object keys (`String(order)`), sorted numerically, high to low.
        let mut groups: Vec<(String, f64, Vec<&Injection>)> =
            vec![("100".into(), 100.0, Vec::new())];
        let mut by_key: std::collections::HashMap<String, usize> = [("100".to_string(), 0)].into();
        for p in at {
            let key = order_key(p.order);
            let i = *by_key.entry(key.clone()).or_insert_with(|| {
                groups.push((key, p.order, Vec::new()));
                groups.len() - 1
            });
            groups[i].2.push(p);
        }
        groups.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
        ext.sort_by(|a, b| a.key.cmp(&b.key));
        // The lines above this depth, moved in one run.
        let had = out.len();
        out.extend(newest.by_ref().take((depth as usize).saturating_sub(taken)));
        taken += out.len() - had;
        // Each role's prompts joined with `\n`, then that and the extension prompts (each
        // trimmed, joined with `\n`) each trimmed and joined with `\n`: written into two
        // buffers kept from role to role (a list and a string per join were most of the
        // injections' cost).
        let (mut joined, mut extension) = (String::new(), String::new());
        let join = |into: &mut String, texts: &mut dyn Iterator<Item = &str>| {
            into.clear();
            for (i, t) in texts.enumerate() {
                if i > 0 {
                    into.push('\n');
                }
                into.push_str(t);
            }
        };
        for (key, order, members) in &groups {
            for role in [Role::System, Role::User, Role::Model] {
                join(
                    &mut joined,
                    &mut members
                        .iter()
                        .filter(|p| p.role == role)
                        .map(|p| p.text.as_str()),
                );
                extension.clear();
                if key == "100" {
                    join(
                        &mut extension,
                        &mut ext
                            .iter()
                            .filter(|e| e.role == role)
                            .map(|e| crate::jstext::js_trim(&e.text)),
                    );
                }
                let mut text = String::new();
                for (i, t) in [joined.as_str(), extension.as_str()]
                    .into_iter()
                    .filter(|t| !t.is_empty())
                    .enumerate()
                {
                    if i > 0 {
                        text.push('\n');
                    }
                    text.push_str(crate::jstext::js_trim(t));
                }
                if !text.is_empty() {
                    out.push(ChatLine {
                        role,
                        text: Cow::Owned(text),
                        name: None,
                        injected: Some((depth, *order)),
                        item: None,
                    });
                }
            }
        }
    }
    out.extend(newest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(role: Role, text: &str) -> ChatLine<'static> {
        ChatLine {
            role,
            text: Cow::Owned(text.into()),
            name: None,
            injected: None,
            item: None,
        }
    }

    fn inj(role: Role, depth: u32, order: f64, text: &str) -> Injection {
        Injection {
            role,
            depth,
            order,
            text: text.into(),
        }
    }

    #[test]
    fn injections_land_as_sillytavern_places_them() {
        let newest = vec![
            line(Role::User, "u2"),
            line(Role::Model, "a1"),
            line(Role::User, "u1"),
        ];
        let out = inject(
            newest,
            &[
                inj(Role::System, 0, 100.0, "s0"),
                inj(Role::User, 0, 100.0, "u0"),
                inj(Role::System, 0, 50.0, "low"),
                inj(Role::System, 1, 100.0, "d1a"),
                inj(Role::System, 1, 100.0, "d1b"),
                inj(Role::System, 9, 100.0, "deep"),
            ],
            &[ExtensionPrompt {
                key: "DEPTH_PROMPT".into(),
                role: Role::System,
                depth: 1,
                text: " note ".into(),
            }],
        );
        let texts: Vec<&str> = out.iter().rev().map(|l| &*l.text).collect();
        assert_eq!(
            texts,
            [
                "deep",
                "u1",
                "a1",
                "d1a\nd1b\nnote",
                "u2",
                "low",
                "u0",
                "s0"
            ]
        );
    }

    #[test]
    fn injected_texts_are_joined_then_trimmed_as_sillytavern_does() {
        let ext = |role, depth, text: &str| ExtensionPrompt {
            key: format!("k{depth}"),
            role,
            depth,
            text: text.into(),
        };
        let out = inject(
            vec![line(Role::User, "u")],
            &[
                inj(Role::System, 2, 100.0, " a "),
                inj(Role::System, 2, 100.0, "b "),
                inj(Role::User, 3, 100.0, "  "),
            ],
            &[
                ext(Role::System, 2, " x "),
                ext(Role::User, 3, "y"),
                ext(Role::System, 4, "   "),
            ],
        );
        let injected: Vec<(u32, &str)> = out
            .iter()
            .filter_map(|l| Some((l.injected?.0, &*l.text)))
            .collect();
        // A blank join still takes its place before the extension prompts' `\n`; a blank
        // extension prompt alone makes no message.
        assert_eq!(injected, [(2, "a \nb\nx"), (3, "\ny")]);
    }

    #[test]
    fn chat_macros_are_the_names_only() {
        let ctx = Context {
            user: "Alice".into(),
            ..Context::default()
        };
        let macros = chat_macros(&ctx, "Sera");
        let (out, whole) = replace_macros(
            "{{USER}} and <BOT>: {{getvar::x}}\r\n {{char}}",
            &macros,
            usize::MAX,
        );
        assert!(whole);
        assert_eq!(out, "Alice and Sera: {{getvar::x}}\n Sera");
        // Nothing to replace: the text itself, cut at the room, carriage returns removed.
        let (out, whole) = replace_macros("a {{getvar::x}} <b>", &macros, usize::MAX);
        assert!(whole && matches!(out, Cow::Borrowed("a {{getvar::x}} <b>")));
        let (out, whole) = replace_macros("aé b", &macros, 2);
        assert!(!whole && matches!(out, Cow::Borrowed("a")));
        let (out, whole) = replace_macros("a\r\nb", &macros, 3);
        assert!(!whole);
        assert_eq!(out, "a\n");
    }

    #[test]
    fn name_macros_stop_at_the_room() {
        let ctx = Context {
            user: "é".repeat(5_000),
            ..Context::default()
        };
        let macros = chat_macros(&ctx, "Sera");
        // 100,000 names of 10 KB would be a gigabyte: the text stops at the room, on a char
        // boundary, after a scan of the input.
        let names = "{{user}}".repeat(100_000);
        let (out, whole) = replace_macros(&names, &macros, 25_001);
        assert!(!whole);
        assert_eq!(out.len(), 25_000);
        let (out, whole) = replace_macros("x{{user}}y", &macros, 10_002);
        assert!(whole);
        assert_eq!(out.len(), 10_002);
        // Newest first: the newest item is whole, the older one cut, the oldest empty.
        let mut ctx = ctx;
        for text in ["old", "{{user}}", "new {{user}}"] {
            ctx.items.push(crate::context::ContextItem::new(
                Some(Tag::DialogueHistory),
                Role::User,
                text,
            ));
        }
        let text = |i: usize| Cow::Borrowed(ctx.items[i].text.as_str());
        let (lines, whole) = history(&ctx, text, 0, "Sera", 15_000, usize::MAX);
        assert!(!whole);
        let lens: Vec<usize> = lines.iter().map(|l| l.text.len()).collect();
        assert_eq!(lens, [10_004, 4_996, 0]);
        let (_, whole) = history(&ctx, text, 0, "Sera", 20_007, usize::MAX);
        assert!(whole);
    }

    #[test]
    fn name_prefixes_are_spent_from_the_room() {
        // A 100 KB name prefixed (names mode 2) to 10,000 messages: the newest nine whole,
        // the tenth cut inside the name, the rest empty, and `\r` dropped from the text only.
        let mut ctx = Context {
            char: "c".repeat(100_000),
            ..Context::default()
        };
        for _ in 0..10_000 {
            ctx.items.push(crate::context::ContextItem::new(
                Some(Tag::DialogueHistory),
                Role::Model,
                "h\ri",
            ));
        }
        let text = |i: usize| Cow::Borrowed(ctx.items[i].text.as_str());
        let (lines, whole) = history(&ctx, text, 2, "Sera", 1_000_000, usize::MAX);
        assert!(!whole);
        let full = format!("{}: hi", ctx.char);
        assert!(lines[..9].iter().all(|l| l.text == full));
        assert_eq!(lines[9].text, "c".repeat(1_000_000 - 9 * full.len()));
        assert!(lines[10..].iter().all(|l| l.text.is_empty()));
    }

    #[test]
    fn names_are_sanitized_as_sillytavern_does() {
        assert_eq!(sanitize_name("Sera"), "Sera");
        assert_eq!(sanitize_name("Dr. Mira K"), "Dr__Mira_K");
    }
}
