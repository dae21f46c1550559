//! Stage 2, depth injection (SPEC §4.3; `docs/assembly.md`): depth nodes and tail items with a
//! depth enter the chat history, merged into history messages or as separate messages.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::ops::Range;

use super::place::{host_text, is_tail, regex_dropped};
use super::{Assembly, Injection, Message, Plan, Source};
use crate::context::{Context, Role};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::passes::ItemText;

/// One text to inject, in preset order (depth nodes, then tail items).
pub(super) struct Injected<'c> {
    depth: i32,
    order: i32,
    role: Role,
    text: Cow<'c, str>,
    source: Source,
}

/// Tail items with a depth join at this order (SPEC §4.3), like a node without one.
const DEFAULT_ORDER: i32 = 100;

/// The injections of a render: depth nodes with text (moved out of `texts`), then tail items
/// with a depth.
pub(super) fn collect<'c>(
    plan: &Plan,
    texts: &mut [String],
    ctx: &'c Context,
    regexed: &[Option<ItemText>],
) -> Vec<Injected<'c>> {
    let mut out: Vec<Injected> = plan
        .depth
        .iter()
        .filter_map(|n| {
            let text = std::mem::take(texts.get_mut(n.text)?);
            Some(Injected {
                depth: n.depth,
                order: n.order,
                role: n.role,
                text: Cow::Owned(text),
                source: Source::Node(n.identifier.clone()),
            })
        })
        .collect();
    for (i, item) in ctx.items.iter().enumerate() {
        if !is_tail(item.tag) || regex_dropped(regexed, i) {
            continue;
        }
        if let Some(depth) = item.depth {
            out.push(Injected {
                depth: depth.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
                order: DEFAULT_ORDER,
                role: item.role,
                text: host_text(ctx, regexed, i),
                source: Source::Tag(item.tag),
            });
        }
    }
    out.retain(|i| !i.text.trim().is_empty());
    out
}

pub(super) fn inject<'c>(
    assembly: &mut Assembly<'c>,
    injections: Vec<Injected<'c>>,
    mode: Injection,
    diags: &mut Vec<Diagnostic>,
) {
    if injections.is_empty() {
        return;
    }
    let history = match (&assembly.history, mode) {
        (Some(h), Injection::Merge) if !h.is_empty() => h.clone(),
        (Some(h), Injection::Separate) => h.clone(),
        _ => {
            diags.push(Diagnostic::new(
                DiagnosticKind::NoHistoryForInjection,
                None,
                format!(
                    "{} depth injection(s) omitted: there is no chat history",
                    injections.len()
                ),
            ));
            return;
        }
    };
    match mode {
        Injection::Merge => merge(&mut assembly.messages[history], injections),
        Injection::Separate => separate(assembly, history, injections),
    }
}

/// Merge mode (SPEC §4.3): each history message at depth d (0 = newest) gets one
/// `\n[System: …]` part joining its injections, ordered by `injection_order` then preset
/// order. Depths past the oldest message land on the oldest.
fn merge<'c>(history: &mut [Message<'c>], injections: Vec<Injected<'c>>) {
    let n = history.len();
    let mut placed: Vec<(usize, i32, usize, Cow<'c, str>)> = injections
        .into_iter()
        .enumerate()
        .map(|(seq, i)| {
            let d = i.depth.max(0) as usize;
            (n.saturating_sub(d + 1), i.order, seq, i.text)
        })
        .collect();
    placed.sort_by_key(|&(target, order, seq, _)| (target, order, seq));
    for group in placed.chunk_by(|a, b| a.0 == b.0) {
        // Written once into a buffer of the final size (no join, then format, of the texts).
        const OPEN: &str = "\n[System: ";
        let size = OPEN.len() + group.iter().map(|p| p.3.len() + 1).sum::<usize>();
        let mut part = String::with_capacity(size);
        part.push_str(OPEN);
        for (k, p) in group.iter().enumerate() {
            if k > 0 {
                part.push('\n');
            }
            part.push_str(&p.3);
        }
        part.push(']');
        history[group[0].0].parts_mut().push(part.into());
    }
}

/// Separate mode, as SillyTavern 1.18 (`populateInjectionPrompts`): the history newest first;
/// for each depth d ascending, for each `injection_order` group from the highest to the
/// lowest, one message per role (system, user, assistant) joining that role's texts (each
/// trimmed) with `\n`, the group's messages inserted at d + (messages inserted so far); then
/// the list is turned back to oldest first. Depths past the history put their messages
/// before the oldest message.
///
/// Each group lands after exactly min(d, history length) of the original messages and after
/// every group inserted before it, so the list is built in one merge instead of one splice
/// per group (which would cost groups × history).
fn separate<'c>(assembly: &mut Assembly<'c>, history: Range<usize>, injections: Vec<Injected<'c>>) {
    let mut injections: Vec<(usize, Injected<'c>)> = injections.into_iter().enumerate().collect();
    let depth = |i: &Injected| i.depth.max(0) as usize;
    injections.sort_by_key(|(seq, i)| (depth(i), Reverse(i.order), *seq));
    let mut old: Vec<Message<'c>> = assembly.messages.drain(history.clone()).collect();
    old.reverse();
    let total = old.len();
    let mut old = old.into_iter();
    let mut newest_first = Vec::with_capacity(total + injections.len());
    let mut taken = 0;
    let same_group = |a: &(usize, Injected<'c>), b: &(usize, Injected<'c>)| {
        (depth(&a.1), a.1.order) == (depth(&b.1), b.1.order)
    };
    for group in injections.chunk_by(same_group) {
        let d = depth(&group[0].1).min(total);
        newest_first.extend(old.by_ref().take(d - taken));
        taken = d;
        for role in [Role::System, Role::User, Role::Model] {
            let of_role = || group.iter().map(|(_, i)| i).filter(|i| i.role == role);
            if of_role().next().is_none() {
                continue;
            }
            let text: Vec<&str> = of_role().map(|i| i.text.trim()).collect();
            let sources = of_role().map(|i| i.source.clone()).collect();
            newest_first.push(Message::new(
                role,
                text.join("\n"),
                Source::Injection(sources),
            ));
        }
    }
    newest_first.extend(old);
    newest_first.reverse();
    let end = history.start + newest_first.len();
    assembly
        .messages
        .splice(history.start..history.start, newest_first);
    assembly.history = Some(history.start..end);
}
