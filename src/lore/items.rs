//! World Info in a render (SPEC §15.7, §16 steps 3–4): activation on the history as the prompt
//! pass left it, each entry's content through the `WORLD_INFO` scripts, and the result as
//! context items the assembler places like the host's own: before/after lore in front of the
//! host's items of that tag, examples around the host's samples, and the engine's tail items
//! (the Author's Note fallback, then the depth groups) after every host item.
//!
//! The items are added to a copy of the context, so the assembler needs no second source of
//! items; their text is final (marked as prompt-pass output), so no host pass runs on it.

use std::sync::Arc;

use super::activate::{self, SeededRandom, WiInput, WiMessage};
use super::settings::LoreInput;
use super::state::WiState;
use crate::context::{Context, ContextItem, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::role::Role;
use crate::scripts::{ItemText, PassKind, Placement, RegexPass, Scripts};

/// A render's context with its lore placed.
pub(crate) struct Placed {
    pub ctx: Context,
    /// The prompt pass's results for `ctx.items` (lore items carry their final text).
    pub regexed: Vec<Option<ItemText>>,
    pub state: WiState,
}

/// SillyTavern's `parseMesExamples` (SPEC §15.2): the `<START>` blocks of an example text.
pub(crate) fn example_blocks(text: &str) -> Vec<String> {
    if text.is_empty() || text == "<START>" {
        return Vec::new();
    }
    let text = if text.starts_with("<START>") {
        text.to_string()
    } else {
        format!("<START>\n{}", super::keys::js_trim(text))
    };
    split_start(&text)
        .into_iter()
        .skip(1)
        .map(|b| super::keys::js_trim(b).to_string())
        .filter(|b| !b.is_empty())
        .collect()
}

/// Splits on `<START>` matched ASCII case-insensitively.
fn split_start(text: &str) -> Vec<&str> {
    const TAG: &[u8] = b"<start>";
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut last, mut i) = (0, 0);
    while i + TAG.len() <= b.len() {
        if b[i..i + TAG.len()].eq_ignore_ascii_case(TAG) {
            out.push(&text[last..i]);
            i += TAG.len();
            last = i;
        } else {
            i += 1;
        }
    }
    out.push(&text[last..]);
    out
}

/// Activates `lore` for `ctx` and places the result.
pub(crate) fn place(
    ctx: &Context,
    lore: &LoreInput,
    regexed: &[Option<ItemText>],
    scripts: &Scripts,
    allowed: bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Placed {
    for b in &lore.books {
        diagnostics.extend_from_slice(b.diagnostics());
    }
    let history_text = |i: usize| match regexed.get(i) {
        Some(Some(ItemText::Text(t))) => Some(t.clone()),
        _ => None,
    };
    let texts: Vec<(usize, Option<Arc<str>>)> = ctx
        .items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.tag == Some(Tag::DialogueHistory))
        .map(|(i, _)| (i, history_text(i)))
        .collect();
    let mut input = WiInput::new(ctx);
    input.history = input
        .history
        .iter()
        .zip(&texts)
        .map(|(m, (_, t))| WiMessage {
            name: m.name,
            text: t.as_deref().unwrap_or(m.text),
        })
        .collect();
    input.position = lore.position;
    input.generation_type = lore.generation_type;
    input.dry_run = lore.dry_run;
    // The budget's context: the render's history budget when the host sets one, else
    // SillyTavern's default (SPEC §15.4).
    if let crate::provider::Tri::Value(max) = ctx.options.budget.max_context_tokens {
        let reserve = match ctx.options.budget.reserve_tokens {
            crate::provider::Tri::Value(r) => r,
            _ => 0,
        };
        input.max_context = Some(u64::from(max.saturating_sub(reserve)));
    }
    let position = input.position.unwrap_or(input.history.len() as u64);
    let mut random = SeededRandom::new(ctx.seed, position);
    let counter = ctx.options.budget.counter.for_model(&ctx.model);
    let limits = ctx.options.limits.clamped();
    let (activated, state, mut notes) = activate::run(
        &lore.books,
        &input,
        &lore.settings,
        &lore.state,
        &mut random,
        &*counter,
        &limits,
    );
    let wi_scripts = allowed && !scripts.is_empty();
    let result = activate::place(
        activated,
        |a| {
            if !wi_scripts {
                return Some(a.content.clone());
            }
            let mut pass = RegexPass::new(PassKind::Prompt, Placement::WorldInfo);
            pass.depth = (a.position == 4).then(|| u32::try_from(a.depth).unwrap_or(u32::MAX));
            let out = scripts.apply(&a.content, &pass, ctx, true);
            Some(out.text)
        },
        &mut notes,
    );
    diagnostics.append(&mut notes);

    let item = |tag: Tag, text: String, depth: Option<i64>| {
        let mut it = ContextItem::new(Some(tag), Role::System, text);
        it.depth = depth;
        it
    };
    let mut front = Vec::new();
    let mut back = Vec::new();
    if !result.before.is_empty() {
        front.push(item(Tag::KnowledgeLorebookBefore, result.before, None));
    }
    if !result.after.is_empty() {
        front.push(item(Tag::KnowledgeLorebookAfter, result.after, None));
    }
    for ex in &result.examples {
        let blocks = example_blocks(&ex.text);
        let to = if ex.position == "top" {
            &mut front
        } else {
            &mut back
        };
        to.extend(
            blocks
                .into_iter()
                .map(|b| item(Tag::DialogueSample, b, None)),
        );
    }
    // Bottom examples follow the host's samples; the tail items go after them.
    let an: Vec<&str> = result
        .an_top
        .iter()
        .chain(&result.an_bottom)
        .map(String::as_str)
        .collect();
    if !an.is_empty() {
        back.push(item(Tag::KnowledgeLoreActivated, an.join("\n"), Some(4)));
        diagnostics.push(Diagnostic::new(
            DiagnosticKind::LoreAuthorsNoteFallback,
            None,
            "Author's Note lore is placed at depth 4: stpreset has no Author's Note",
        ));
    }
    for g in result.depth {
        let depth = i64::try_from(g.depth).unwrap_or(i64::MAX);
        back.push(item(Tag::KnowledgeLoreActivated, g.text, Some(depth)));
    }
    let mut placed = ctx.clone();
    placed.lore = None;
    let (n_front, n_back) = (front.len(), back.len());
    let old = std::mem::take(&mut placed.items);
    placed.items = front;
    placed.items.extend(old);
    placed.items.extend(back);
    let final_text = |it: &ContextItem| Some(ItemText::Text(Arc::from(it.text.as_str())));
    let mut all = Vec::with_capacity(placed.items.len());
    all.extend(placed.items[..n_front].iter().map(final_text));
    all.extend((0..ctx.items.len()).map(|i| regexed.get(i).cloned().flatten()));
    all.extend(
        placed.items[placed.items.len() - n_back..]
            .iter()
            .map(final_text),
    );
    Placed {
        ctx: placed,
        regexed: all,
        state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_split_as_st() {
        assert!(example_blocks("").is_empty());
        assert!(example_blocks("<START>").is_empty());
        assert_eq!(example_blocks("A\n<start>\nB"), ["A", "B"]);
        assert_eq!(example_blocks("intro\n<START>\nA"), ["intro", "A"]);
        assert_eq!(
            example_blocks("<START>\nx\n<START>\n\n<START>y"),
            ["x", "y"]
        );
    }
}
