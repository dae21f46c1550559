//! Group chats' member cards (SPEC §18.3, notes rules 63–64): in the append modes the card
//! fields are every member's, joined, and every member's Character's Note is injected, as
//! ST's `getGroupCharacterCardsLazy` and `getGroupDepthPrompts` build them. In swap mode (and
//! outside a group) nothing here applies: the speaker's own card is the context's fields.

use crate::context::Context;
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::layout::GroupMode;
use crate::lore::{DepthPrompt, GroupCard};

/// A group chat in an append mode: the render's context with its card fields (description,
/// personality, scenario, examples raw and formatted) the group's, each already expanded
/// with its member as `{{char}}` (ST substitutes them where it joins them, never again).
#[derive(Debug)]
pub(super) struct GroupFields {
    pub ctx: Context,
    /// The members' Character's Notes, in member order (`DEPTH_PROMPT_<n>`).
    pub notes: Vec<DepthPrompt>,
}

/// The joined fields, or `None` in swap mode or outside a group. A member named in `group`
/// without a card is skipped with a `GroupCardMissing` warning.
pub(super) fn fields(
    ctx: &Context,
    own: GroupCard,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<GroupFields> {
    let mode = ctx.group_generation_mode;
    if ctx.group.is_empty() || mode == GroupMode::Swap {
        return None;
    }
    // ST walks `group.members`, finds each member's card, and leaves out a muted member
    // unless it is the speaker (the fields of `append_disabled` keep them all).
    let mut missing = Vec::new();
    // A set: a host's group and muted lists can both be long.
    let muted_set: std::collections::HashSet<&str> =
        ctx.group_muted.iter().map(String::as_str).collect();
    let members: Vec<(&str, &GroupCard, bool)> = ctx
        .group
        .iter()
        .filter_map(|name| {
            let muted = muted_set.contains(name.as_str()) && *name != ctx.char;
            let card = if *name == ctx.char {
                Some(&own)
            } else {
                ctx.group_cards.get(name)
            };
            if card.is_none() {
                missing.push(name.as_str());
            }
            card.map(|c| (name.as_str(), c, muted))
        })
        .collect();
    if !missing.is_empty() {
        diagnostics.push(Diagnostic::new(
            DiagnosticKind::GroupCardMissing,
            None,
            format!(
                "group members without a card in `group_cards`, left out of the group's card fields: {}",
                crate::diagnostic::excerpt(&missing.join(", "))
            ),
        ));
    }
    // One copy of the context for every member's expansions, `char` set per member.
    let mut member_ctx = ctx.clone();
    let mut expand_tree = |tree: &crate::syntax::Tree, member: &str| -> String {
        if member_ctx.char != member {
            member_ctx.char = member.to_string();
        }
        crate::eval::expand_tree_alone("group_cards", tree, &member_ctx)
    };
    let limits = ctx.options.limits.clamped();
    let parse = |text: String| crate::syntax::parse(text.into(), &limits).0;
    let in_fields = |muted: bool| !muted || mode == GroupMode::AppendDisabled;
    let mut collect = |field: &str, get: &dyn Fn(&GroupCard) -> &str, examples: bool| {
        // ST's `customTransform`: `<FIELDNAME>` replaced (case-insensitively), then the
        // macros with the member as `{{char}}`. The prefix and suffix are parsed once per
        // field, not once per member.
        let fieldname = |text: &str| crate::jstext::split_ascii_ci(text, "<FIELDNAME>").join(field);
        let affix = |text: &str| (!text.is_empty()).then(|| parse(fieldname(text)));
        let (prefix, suffix) = (affix(&ctx.group_join_prefix), affix(&ctx.group_join_suffix));
        let mut values = Vec::new();
        for &(name, card, muted) in &members {
            if !in_fields(muted) {
                continue;
            }
            let value = crate::jstext::js_trim(get(card));
            if value.is_empty() {
                continue;
            }
            let value = if examples && !value.starts_with("<START>") {
                format!("<START>\n{value}")
            } else {
                value.to_string()
            };
            let mut affixed = |tree: &Option<crate::syntax::Tree>| {
                tree.as_ref()
                    .map_or_else(String::new, |t| expand_tree(t, name))
            };
            let (before, after) = (affixed(&prefix), affixed(&suffix));
            let value = crate::jstext::js_trim(&fieldname(&value)).to_string();
            let value = expand_tree(&parse(value), name);
            let joined = format!("{before}{value}{after}");
            if !joined.is_empty() {
                values.push(joined);
            }
        }
        values.join("\n")
    };
    let description = collect("Description", &|c| &c.description, false);
    let personality = collect("Personality", &|c| &c.personality, false);
    let scenario = collect("Scenario", &|c| &c.scenario, false);
    let examples = collect("Example Messages", &|c| &c.mes_example, true);
    // The chat's own scenario and examples (chat metadata) win, expanded for the speaker.
    let st = &ctx.user_settings;
    let speaker_name = ctx.char.clone();
    let mut expand = |text: &str, member: &str| expand_tree(&parse(text.to_string()), member);
    let mut chat_override = |text: &str| -> Option<String> {
        let text = crate::jstext::js_trim(text);
        (!text.is_empty())
            .then(|| expand(text, &speaker_name))
            .filter(|t| !t.is_empty())
    };
    let scenario = chat_override(&st.chat_scenario).unwrap_or(scenario);
    let examples = chat_override(&st.chat_mes_example).unwrap_or(examples);
    // Character's Notes: every member's but the muted ones (the speaker's always), in both
    // append modes.
    let mut notes = Vec::new();
    for &(name, card, muted) in &members {
        let Some(dp) = card.depth_prompt.as_ref().filter(|_| !muted) else {
            continue;
        };
        let text = expand(crate::jstext::js_trim(&dp.text), name);
        if !text.is_empty() {
            notes.push(DepthPrompt { text, ..dp.clone() });
        }
    }
    member_ctx.char = ctx.char.clone();
    member_ctx.mes_examples = crate::lore::parse_mes_examples(&examples).join("\n");
    member_ctx.description = description;
    member_ctx.personality = personality;
    member_ctx.scenario = scenario;
    member_ctx.mes_examples_raw = examples;
    Some(GroupFields {
        ctx: member_ctx,
        notes,
    })
}
