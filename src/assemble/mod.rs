//! Assembly (SPEC §4): rendered nodes and the host's tagged items become the ordered message
//! list, in stages over one [`Assembly`] value:
//!
//! 1. [`place`]: walk the preset's plan; markers pull item buckets, anchors flush groups;
//! 2. [`inject`]: depth nodes and tail items with a depth enter the history ([`Injection`]);
//! 3. [`generation`]: what the generation type adds at the end (a nudge, an impersonation or
//!    quiet prompt; SPEC §18.1);
//! 4. [`budget`]: the oldest history goes until the prompt fits its token budget;
//! 5. [`budget::limit_output`]: the output limit cuts the message list (called by the budget,
//!    whose counts and diagnostics describe the list as cut).
//!
//! Where every node goes is resolved once, when a preset is compiled ([`Plan`]); a render only
//! follows the plan. A new stage is a module here and one line in [`assemble`].

mod budget;
mod generation;
mod inject;
mod message;
mod place;

use std::ops::Range;
use std::sync::Arc;

pub(crate) use budget::{PromptTokens, limit_output};
pub(crate) use generation::Turn;
pub use message::{Message, Source};
pub(crate) use place::{message_names, sanitize_name};

use crate::context::{Context, Role};
use crate::diagnostic::Diagnostic;
use crate::eval::Expanded;
pub(crate) use crate::options::Injection;

/// The messages so far, and where the chat history sits among them.
pub(crate) struct Assembly<'c> {
    pub messages: Vec<Message<'c>>,
    /// The history block: the `DIALOGUE_HISTORY` items, contiguous, or the empty range where
    /// the `chatHistory` marker stood. `None` when neither exists.
    pub history: Option<Range<usize>>,
}

/// What a walked node does, resolved at compile time from its identifier and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepKind {
    /// `main`: its text, then the humanizer rules and the channel prompt.
    Main,
    /// A custom node's text.
    Custom,
    /// A marker: pulls a host bucket or host value.
    Marker(Marker),
}

/// The markers SPEC §4.2 fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    CharDescription,
    CharPersonality,
    DialogueExamples,
    ChatHistory,
    WorldInfoBefore,
    WorldInfoAfter,
    PersonaDescription,
    Scenario,
    /// Any other marker: produces nothing (`UnfilledMarker`).
    Unfilled,
}

impl Marker {
    fn of(identifier: &str) -> Marker {
        match identifier {
            "charDescription" => Marker::CharDescription,
            "charPersonality" => Marker::CharPersonality,
            "dialogueExamples" => Marker::DialogueExamples,
            "chatHistory" => Marker::ChatHistory,
            "worldInfoBefore" => Marker::WorldInfoBefore,
            "worldInfoAfter" => Marker::WorldInfoAfter,
            "personaDescription" => Marker::PersonaDescription,
            "scenario" => Marker::Scenario,
            _ => Marker::Unfilled,
        }
    }
}

/// One walked, non-depth node.
#[derive(Debug)]
pub(crate) struct Step {
    pub kind: StepKind,
    /// Shared with every message the node produces.
    pub identifier: Arc<str>,
    pub role: Role,
    /// Index of its rendered text among the evaluated nodes (`None`: no text).
    pub text: Option<usize>,
    /// Flush the participant group (and lorebooks without a marker) before this step: the
    /// first `dialogueExamples` or `chatHistory`.
    pub participants_before: bool,
    /// Flush the knowledge group after this step: the first `main`, `charDescription` or
    /// `charPersonality`.
    pub knowledge_after: bool,
}

/// A depth node (injection position 1).
#[derive(Debug)]
pub(crate) struct DepthNode {
    pub identifier: Arc<str>,
    pub role: Role,
    pub depth: i32,
    pub order: i32,
    pub text: usize,
}

/// A preset's assembly, resolved at compile time.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    pub depth: Vec<DepthNode>,
    /// Whether a `worldInfoBefore` / `worldInfoAfter` marker places the lorebooks (else they
    /// go with the participants).
    pub lore_markers: [bool; 2],
}

/// A node as the plan sees it.
pub(crate) struct PlanNode<'a> {
    pub identifier: &'a str,
    pub role: &'a str,
    /// A marker by `marker: true` (never `main`).
    pub marker: bool,
    /// `(depth, order)` of a depth node.
    pub depth: Option<(i32, i32)>,
    /// Index of its rendered text among the evaluated nodes.
    pub text: Option<usize>,
}

impl Plan {
    /// Resolves the walk of `nodes` (in preset order: enabled markers, evaluated nodes, and
    /// `main` even when it renders nothing).
    pub fn new<'a>(nodes: impl IntoIterator<Item = PlanNode<'a>>) -> Plan {
        let mut plan = Plan::default();
        let (mut participants, mut knowledge) = (false, false);
        for n in nodes {
            if let Some((depth, order)) = n.depth {
                if let Some(text) = n.text {
                    plan.depth.push(DepthNode {
                        identifier: n.identifier.into(),
                        role: node_role(n.role),
                        depth,
                        order,
                        text,
                    });
                }
                continue;
            }
            let kind = if n.identifier == "main" {
                StepKind::Main
            } else if n.marker {
                StepKind::Marker(Marker::of(n.identifier))
            } else {
                StepKind::Custom
            };
            match kind {
                StepKind::Marker(Marker::WorldInfoBefore) => plan.lore_markers[0] = true,
                StepKind::Marker(Marker::WorldInfoAfter) => plan.lore_markers[1] = true,
                _ => {}
            }
            let participants_before =
                !participants && matches!(n.identifier, "dialogueExamples" | "chatHistory");
            participants |= participants_before;
            let knowledge_after = !knowledge
                && matches!(n.identifier, "main" | "charDescription" | "charPersonality");
            knowledge |= knowledge_after;
            plan.steps.push(Step {
                kind,
                identifier: n.identifier.into(),
                role: node_role(n.role),
                text: n.text,
                participants_before,
                knowledge_after,
            });
        }
        plan
    }
}

fn node_role(role: &str) -> Role {
    match role {
        "assistant" => Role::Model,
        "user" => Role::User,
        _ => Role::System,
    }
}

/// What a preset's settings add to the walk (SPEC §14.6), rendered. A format is `Some` when it
/// applies (neither blank nor the identity), with its rendered text (empty: the marker emits
/// nothing); a prompt is `Some` when it rendered to text.
#[derive(Debug, Default)]
pub(crate) struct Extras {
    pub personality_format: Option<String>,
    pub scenario_format: Option<String>,
    pub wi_format: Option<String>,
    pub new_chat_prompt: Option<String>,
    pub new_group_chat_prompt: Option<String>,
    pub new_example_chat_prompt: Option<String>,
    pub group_nudge_prompt: Option<String>,
    /// Verbatim, not rendered; `Some` only when non-empty.
    pub send_if_empty: Option<String>,
    /// The prompt pass's results per context item (SPEC §13.2.3); empty when nothing ran.
    pub regexed: Vec<Option<crate::passes::ItemText>>,
    /// What the generation type adds at the end.
    pub turn: Turn,
}

/// Builds the message list: the stages in order. `texts` are the evaluated nodes' finished
/// texts (moved into their messages); `budget` is the render's effective history budget,
/// `known` a chat's remembered counts of its items.
/// Returns the messages and, with a budget, the prompt's tokens (counted when asked for).
pub(crate) fn assemble<'c>(
    plan: &Plan,
    texts: &mut [String],
    expanded: Expanded,
    ctx: &'c Context,
    mut extras: Extras,
    (budget, known): (&crate::options::Budget, Option<crate::tokens::Known<'c>>),
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Message<'c>>, Option<PromptTokens<'c>>) {
    let regexed = std::mem::take(&mut extras.regexed);
    let regexed = regexed.as_slice();
    let turn = std::mem::take(&mut extras.turn);
    let mut assembly = place::place(plan, texts, expanded, ctx, regexed, extras, diags);
    let injections = inject::collect(plan, texts, ctx, regexed);
    inject::inject(&mut assembly, injections, ctx.options.injection, diags);
    generation::apply(&mut assembly, turn);
    let limit = ctx.options.limits.clamped().output_bytes;
    // The budget ends with the output limit, so its counts describe what is sent.
    let (budget_diags, prompt_tokens) =
        budget.apply_lazy(&mut assembly.messages, &ctx.model, limit, known);
    diags.extend(budget_diags);
    (assembly.messages, prompt_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node<'a>(identifier: &'a str, marker: bool, text: Option<usize>) -> PlanNode<'a> {
        PlanNode {
            identifier,
            role: "system",
            marker,
            depth: None,
            text,
        }
    }

    #[test]
    fn the_plan_resolves_kinds_and_anchors_once() {
        let plan = Plan::new([
            node("main", true, Some(0)),
            node("charDescription", true, None),
            node("chatHistory", false, Some(1)),
            node("dialogueExamples", true, None),
            node("worldInfoAfter", true, None),
            node("myMarker", true, None),
            PlanNode {
                identifier: "jb",
                role: "assistant",
                marker: false,
                depth: Some((2, 50)),
                text: Some(2),
            },
        ]);
        let kinds: Vec<StepKind> = plan.steps.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                StepKind::Main,
                StepKind::Marker(Marker::CharDescription),
                StepKind::Custom,
                StepKind::Marker(Marker::DialogueExamples),
                StepKind::Marker(Marker::WorldInfoAfter),
                StepKind::Marker(Marker::Unfilled),
            ]
        );
        // Only the first of each anchor triggers.
        let knowledge: Vec<bool> = plan.steps.iter().map(|s| s.knowledge_after).collect();
        assert_eq!(knowledge, [true, false, false, false, false, false]);
        let participants: Vec<bool> = plan.steps.iter().map(|s| s.participants_before).collect();
        assert_eq!(participants, [false, false, true, false, false, false]);
        assert_eq!(plan.lore_markers, [false, true]);
        assert_eq!(plan.depth.len(), 1);
        assert_eq!(
            (plan.depth[0].role, plan.depth[0].depth, plan.depth[0].order),
            (Role::Model, 2, 50)
        );
    }
}
