//! Assembly (SPEC §4): rendered nodes and the host's tagged items become the ordered message
//! list. Markers pull item buckets, groups flush at anchors, depth nodes merge into history.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::context::{Context, ContextItem, Role, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::eval::Signals;
use crate::identity::convert_identities;
use crate::limits::OutputBudget;

/// One message for a model provider. Flattening concatenates `parts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The text, in parts: depth injections add `\n[System: ...]` parts to history items.
    pub parts: Vec<String>,
    /// What produced the message.
    pub source: Source,
}

impl Message {
    /// The message's text: its parts concatenated.
    pub fn text(&self) -> String {
        self.parts.concat()
    }
}

/// What produced a message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A preset node (custom node, `main`, or the persona/scenario markers), by identifier.
    Node(String),
    /// A host item, by tag (`None` when untagged).
    Tag(Option<Tag>),
    /// The separator after trailing example dialogue.
    SampleSeparator,
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        match self {
            Source::Node(id) => m.serialize_entry("node", id)?,
            Source::Tag(tag) => m.serialize_entry("tag", tag)?,
            Source::SampleSeparator => m.serialize_entry("tag", "SAMPLE_SEPARATOR")?,
        }
        m.end()
    }
}

/// A node as the walk sees it: only enabled nodes that take part reach the assembler.
pub(crate) struct Slot<'a> {
    pub identifier: &'a str,
    pub role: &'a str,
    /// A marker by `marker: true` (never `main`).
    pub marker: bool,
    /// `(depth, order)` for depth nodes.
    pub depth: Option<(i32, i32)>,
    /// The finished text of a custom node (empty: no output); moved into its message.
    pub text: String,
}

const SAMPLE_SEPARATOR: &str = "[System: The example dialogue above only shows how {{char}} writes; it is not part of the live conversation. Continue from the current scene.]";

const KNOWLEDGE: [Tag; 4] = [
    Tag::KnowledgeServerInfo,
    Tag::KnowledgeServerMemories,
    Tag::KnowledgeEmojis,
    Tag::KnowledgeStickers,
];
const PARTICIPANTS: [Tag; 3] = [
    Tag::KnowledgeActiveUsers,
    Tag::KnowledgeShortTermMemory,
    Tag::SystemConditioning,
];

fn is_tail(tag: Option<Tag>) -> bool {
    matches!(
        tag,
        Some(
            Tag::KnowledgeLoreActivated
                | Tag::KnowledgeRetrievedDocuments
                | Tag::ContextParticipantPresence
                | Tag::ContextCurrent
        )
    )
}

fn is_dropped(tag: Option<Tag>) -> bool {
    matches!(
        tag,
        Some(Tag::SystemServerPrompt | Tag::SystemFallbackPrompt)
    )
}

/// Buckets of the host's items, by tag, in input order; each bucket is emitted at most once.
struct Buckets<'c> {
    ctx: &'c Context,
    /// Bucket key (None = untagged) → item indices, in first-appearance order.
    order: Vec<Option<Tag>>,
    items: BTreeMap<Option<TagKey>, Vec<usize>>,
    done: Vec<Option<Tag>>,
    suppressed: Vec<Tag>,
}

/// `Tag` has no `Ord`; its discriminant orders the map.
type TagKey = u8;

fn key(tag: Option<Tag>) -> Option<TagKey> {
    tag.map(|t| t as u8)
}

impl<'c> Buckets<'c> {
    fn new(ctx: &'c Context, suppressed: Vec<Tag>) -> Self {
        let mut order = Vec::new();
        let mut items: BTreeMap<Option<TagKey>, Vec<usize>> = BTreeMap::new();
        for (i, item) in ctx.items.iter().enumerate() {
            if is_tail(item.tag) || is_dropped(item.tag) {
                continue;
            }
            let entry = items.entry(key(item.tag)).or_default();
            if entry.is_empty() {
                order.push(item.tag);
            }
            entry.push(i);
        }
        Buckets {
            ctx,
            order,
            items,
            done: Vec::new(),
            suppressed,
        }
    }

    fn emit(&mut self, tag: Option<Tag>, out: &mut Vec<Message>) {
        if self.done.contains(&tag) {
            return;
        }
        self.done.push(tag);
        if tag.is_some_and(|t| self.suppressed.contains(&t)) {
            return;
        }
        for &i in self.items.get(&key(tag)).map_or(&[][..], Vec::as_slice) {
            out.push(host_message(self.ctx, &self.ctx.items[i]));
        }
    }
}

/// A host item as a message; identities are converted except in chat history.
fn host_message(ctx: &Context, item: &ContextItem) -> Message {
    let text = if item.tag == Some(Tag::DialogueHistory) {
        item.text.clone()
    } else {
        convert_identities(&item.text, &ctx.user, &ctx.char).into_owned()
    };
    Message {
        role: item.role,
        parts: vec![text],
        source: Source::Tag(item.tag),
    }
}

fn node_role(role: &str) -> Role {
    match role {
        "assistant" => Role::Model,
        "user" => Role::User,
        _ => Role::System,
    }
}

/// Builds the message list from the walk slots (in preset order) and the host context.
pub(crate) fn assemble(
    slots: &mut [Slot<'_>],
    signals: Signals,
    ctx: &Context,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Message> {
    let mut suppressed = Vec::new();
    if signals.has(Signals::DESCRIPTION) {
        suppressed.push(Tag::SystemPersonaPrompt);
    }
    if signals.has(Signals::PERSONALITY) {
        suppressed.push(Tag::SystemPersonality);
    }
    let mut buckets = Buckets::new(ctx, suppressed);
    let lore_marker = |id: &str| slots.iter().any(|s| s.marker && s.identifier == id);
    let lore_without_marker: Vec<Tag> = [
        ("worldInfoBefore", Tag::KnowledgeLorebookBefore),
        ("worldInfoAfter", Tag::KnowledgeLorebookAfter),
    ]
    .into_iter()
    .filter(|(id, _)| !lore_marker(id))
    .map(|(_, tag)| tag)
    .collect();
    let flush_participants = |buckets: &mut Buckets<'_>, out: &mut Vec<Message>| {
        for &tag in &lore_without_marker {
            buckets.emit(Some(tag), out);
        }
        for tag in PARTICIPANTS {
            buckets.emit(Some(tag), out);
        }
    };

    let mut out = Vec::new();
    let mut knowledge_done = false;
    let mut participants_done = false;
    for slot in slots.iter_mut().filter(|s| s.depth.is_none()) {
        let id = slot.identifier;
        if !participants_done && matches!(id, "dialogueExamples" | "chatHistory") {
            flush_participants(&mut buckets, &mut out);
            participants_done = true;
        }
        if id == "main" {
            if !slot.text.is_empty() {
                out.push(node_message(slot));
            }
            buckets.emit(Some(Tag::SystemHumanizerRules), &mut out);
            buckets.emit(Some(Tag::SystemChannelPrompt), &mut out);
        } else if slot.marker {
            marker(slot, signals, &mut buckets, ctx, &mut out, diags);
        } else if !slot.text.is_empty() {
            out.push(node_message(slot));
        }
        if !knowledge_done && matches!(id, "main" | "charDescription" | "charPersonality") {
            for tag in KNOWLEDGE {
                buckets.emit(Some(tag), &mut out);
            }
            knowledge_done = true;
        }
    }
    if !knowledge_done {
        for tag in KNOWLEDGE {
            buckets.emit(Some(tag), &mut out);
        }
    }
    if !participants_done {
        flush_participants(&mut buckets, &mut out);
    }
    let leftovers: Vec<Option<Tag>> = buckets
        .order
        .iter()
        .copied()
        .filter(Option::is_some)
        .chain(buckets.order.iter().copied().filter(Option::is_none))
        .collect();
    for tag in leftovers {
        buckets.emit(tag, &mut out);
    }
    if out
        .last()
        .is_some_and(|m| m.source == Source::Tag(Some(Tag::DialogueSample)))
    {
        out.push(Message {
            role: Role::User,
            parts: vec![convert_identities(SAMPLE_SEPARATOR, &ctx.user, &ctx.char).into_owned()],
            source: Source::SampleSeparator,
        });
    }
    let mut injections: Vec<(i32, i32, String)> = slots
        .iter_mut()
        .filter_map(|s| s.depth.map(|(d, o)| (d, o, std::mem::take(&mut s.text))))
        .collect();
    for item in ctx.items.iter().filter(|i| is_tail(i.tag)) {
        match item.depth {
            Some(depth) => {
                let text = convert_identities(&item.text, &ctx.user, &ctx.char).into_owned();
                let depth = depth.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
                injections.push((depth, 100, text));
            }
            None => out.push(host_message(ctx, item)),
        }
    }
    inject(&mut out, injections, diags);
    limit_output(&mut out, ctx.limits.clamped().output_bytes, diags);
    out
}

fn node_message(slot: &mut Slot<'_>) -> Message {
    Message {
        role: node_role(slot.role),
        parts: vec![std::mem::take(&mut slot.text)],
        source: Source::Node(slot.identifier.to_string()),
    }
}

fn marker(
    slot: &Slot<'_>,
    signals: Signals,
    buckets: &mut Buckets<'_>,
    ctx: &Context,
    out: &mut Vec<Message>,
    diags: &mut Vec<Diagnostic>,
) {
    let host_text = |text: &str, suppressed: bool, out: &mut Vec<Message>| {
        if !suppressed && !text.is_empty() {
            out.push(Message {
                role: Role::System,
                parts: vec![convert_identities(text, &ctx.user, &ctx.char).into_owned()],
                source: Source::Node(slot.identifier.to_string()),
            });
        }
    };
    match slot.identifier {
        "charDescription" => buckets.emit(Some(Tag::SystemPersonaPrompt), out),
        "charPersonality" => buckets.emit(Some(Tag::SystemPersonality), out),
        "dialogueExamples" => buckets.emit(Some(Tag::DialogueSample), out),
        "chatHistory" => buckets.emit(Some(Tag::DialogueHistory), out),
        "worldInfoBefore" => buckets.emit(Some(Tag::KnowledgeLorebookBefore), out),
        "worldInfoAfter" => buckets.emit(Some(Tag::KnowledgeLorebookAfter), out),
        "personaDescription" => host_text(&ctx.persona, signals.has(Signals::PERSONA), out),
        "scenario" => host_text(&ctx.scenario, signals.has(Signals::SCENARIO), out),
        other => diags.push(Diagnostic::new(
            DiagnosticKind::UnfilledMarker,
            Some(other),
            format!("marker `{other}` has no host block: it produces nothing"),
        )),
    }
}

/// Merges injections `(depth, order, text)` (in preset order, then tail items) into history.
fn inject(out: &mut [Message], injections: Vec<(i32, i32, String)>, diags: &mut Vec<Diagnostic>) {
    let injections: Vec<_> = injections
        .into_iter()
        .filter(|(_, _, t)| !t.trim().is_empty())
        .collect();
    if injections.is_empty() {
        return;
    }
    let history: Vec<usize> = out
        .iter()
        .enumerate()
        .filter(|(_, m)| m.source == Source::Tag(Some(Tag::DialogueHistory)))
        .map(|(i, _)| i)
        .collect();
    if history.is_empty() {
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
    // Target index in `history`, order, preset position, text.
    let mut placed: Vec<(usize, i32, usize, String)> = injections
        .into_iter()
        .enumerate()
        .map(|(seq, (depth, order, text))| {
            let d = depth.max(0) as usize;
            let target = history.len().saturating_sub(d + 1);
            (target, order, seq, text)
        })
        .collect();
    placed.sort_by_key(|&(target, order, seq, _)| (target, order, seq));
    let mut i = 0;
    while i < placed.len() {
        let target = placed[i].0;
        let mut joined = String::new();
        while i < placed.len() && placed[i].0 == target {
            if !joined.is_empty() {
                joined.push('\n');
            }
            joined.push_str(&placed[i].3);
            i += 1;
        }
        out[history[target]]
            .parts
            .push(format!("\n[System: {joined}]"));
    }
}

/// Cuts the message that crosses the output limit at a UTF-8 boundary; drops later output.
fn limit_output(out: &mut Vec<Message>, limit: usize, diags: &mut Vec<Diagnostic>) {
    let mut budget = OutputBudget::new(limit);
    for mi in 0..out.len() {
        let parts = &mut out[mi].parts;
        if let Some(pi) = parts.iter_mut().position(|p| !budget.spend(p)) {
            parts.truncate(pi + 1);
            out.truncate(mi + 1);
            diags.push(Diagnostic::new(
                DiagnosticKind::LimitReached,
                None,
                format!("rendered output cut at the limit of {limit} bytes"),
            ));
            return;
        }
    }
}
