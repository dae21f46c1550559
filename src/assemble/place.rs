//! Stage 1, placement (SPEC §4.2): the plan's steps in order; markers pull the host's item
//! buckets, `main` and the first knowledge/participant anchors flush their groups, and what no
//! anchor claimed follows at the end.

use std::borrow::Cow;

use super::{Assembly, Extras, Marker, Message, Plan, Source, Step, StepKind};
use crate::context::{Context, ContextItem, Role, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::eval::Expanded;
use crate::identity::convert_identities;
use crate::passes::ItemText;

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
const LORE: [Tag; 2] = [Tag::KnowledgeLorebookBefore, Tag::KnowledgeLorebookAfter];

/// Tail-slot items: placed at the end, or injected at their depth (`inject`).
pub(super) fn is_tail(tag: Option<Tag>) -> bool {
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
///
/// The items' indices sit in one list grouped by bucket (a counting sort over the tag's
/// discriminant), so building the buckets costs two allocations whatever the item count.
struct Buckets<'c, 'r> {
    ctx: &'c Context,
    /// The prompt pass's results, per context item (SPEC §13.2.3).
    regexed: &'r [Option<ItemText>],
    /// Bucket keys (None = untagged) in first-appearance order.
    order: Vec<Option<Tag>>,
    /// Item indices grouped by bucket, each group in input order.
    items: Vec<usize>,
    /// Per bucket key: its group's range in `items`.
    ranges: [(usize, usize); KEYS],
    /// Per bucket key: emitted already, or suppressed.
    done: [bool; KEYS],
}

/// Bucket keys: every tag's discriminant, then one for untagged items.
const KEYS: usize = Tag::COUNT + 1;

fn key(tag: Option<Tag>) -> usize {
    tag.map_or(Tag::COUNT, |t| t as usize)
}

impl<'c, 'r> Buckets<'c, 'r> {
    fn new(ctx: &'c Context, regexed: &'r [Option<ItemText>], suppressed: &[Tag]) -> Self {
        let placed = |(i, item): &(usize, &ContextItem)| {
            !is_tail(item.tag) && !is_dropped(item.tag) && !regex_dropped(regexed, *i)
        };
        let mut counts = [0usize; KEYS];
        let mut order = Vec::new();
        for (_, item) in ctx.items.iter().enumerate().filter(placed) {
            let count = &mut counts[key(item.tag)];
            if *count == 0 {
                order.push(item.tag);
            }
            *count += 1;
        }
        let mut ranges = [(0usize, 0usize); KEYS];
        let mut start = 0;
        for (range, count) in ranges.iter_mut().zip(counts) {
            *range = (start, start);
            start += count;
        }
        let mut items = vec![0; start];
        for (i, item) in ctx.items.iter().enumerate().filter(placed) {
            let end = &mut ranges[key(item.tag)].1;
            items[*end] = i;
            *end += 1;
        }
        let mut done = [false; KEYS];
        for &tag in suppressed {
            done[key(Some(tag))] = true;
        }
        Buckets {
            ctx,
            regexed,
            order,
            items,
            ranges,
            done,
        }
    }

    /// The texts `emit` would add for `tag`, joined with `\n` (`None`: already emitted or
    /// suppressed).
    fn joined(&self, tag: Tag) -> Option<String> {
        let k = key(Some(tag));
        if self.done[k] {
            return None;
        }
        let (from, to) = self.ranges[k];
        let texts: Vec<Cow<'c, str>> = self.items[from..to]
            .iter()
            .map(|&i| host_text(self.ctx, self.regexed, i))
            .collect();
        Some(texts.join("\n"))
    }

    /// How many items `emit` would add for `tag`.
    fn pending(&self, tag: Tag) -> usize {
        let k = key(Some(tag));
        let (from, to) = self.ranges[k];
        if self.done[k] { 0 } else { to - from }
    }

    /// Emits the bucket of `tag` through a format (SPEC §14.6): when the format applies and the
    /// bucket has text, one message of `role` with `text(joined)` (nothing when that is empty)
    /// instead of the items; otherwise the items as usual.
    fn emit_formatted(
        &mut self,
        tag: Tag,
        format: Option<(&'static str, &str)>,
        role: Role,
        text: impl FnOnce(&str, &str) -> String,
        out: &mut Vec<Message<'c>>,
    ) {
        if let Some((setting, format)) = format
            && let Some(joined) = self.joined(tag).filter(|j| !j.is_empty())
        {
            self.done[key(Some(tag))] = true;
            let text = text(format, &joined);
            if !text.is_empty() {
                out.push(Message::new(role, text, Source::Setting(setting)));
            }
            return;
        }
        self.emit(Some(tag), out);
    }

    /// Emits the bucket of `tag` (once); returns the range of messages it added.
    fn emit(&mut self, tag: Option<Tag>, out: &mut Vec<Message<'c>>) -> std::ops::Range<usize> {
        let start = out.len();
        let k = key(tag);
        if std::mem::replace(&mut self.done[k], true) {
            return start..start;
        }
        let (from, to) = self.ranges[k];
        let (ctx, regexed, items) = (self.ctx, self.regexed, &self.items[from..to]);
        if items.iter().all(|&i| as_given(ctx, regexed, i)) {
            // The usual history: every message built from registers straight into the list.
            // Through `host_message` (a call, then a move), each went through a temporary
            // whose item and role were written as two narrow stores and read back as one wide
            // load: a store-forwarding stall per history message, a sixth of placing.
            out.extend(items.iter().map(|&i| {
                let item = &ctx.items[i];
                Message::of_item(
                    item.role,
                    Cow::Borrowed(&item.text),
                    Source::Tag(item.tag),
                    i,
                )
            }));
        } else {
            out.extend(items.iter().map(|&i| host_message(ctx, regexed, i)));
        }
        start..out.len()
    }
}

/// A host item as a message; identities are converted except in chat history. The text is
/// borrowed unless a conversion changed it.
pub(super) fn host_message<'c>(
    ctx: &'c Context,
    regexed: &[Option<ItemText>],
    i: usize,
) -> Message<'c> {
    let item = &ctx.items[i];
    Message::of_item(
        item.role,
        host_text(ctx, regexed, i),
        Source::Tag(item.tag),
        i,
    )
}

/// Whether item `i` is placed as its own text ([`host_text`] borrows it): a history item
/// without a speaker name that the prompt pass left alone.
fn as_given(ctx: &Context, regexed: &[Option<ItemText>], i: usize) -> bool {
    let item = &ctx.items[i];
    item.tag == Some(Tag::DialogueHistory)
        && name_prefix(ctx, item).is_none()
        && !matches!(regexed.get(i), Some(Some(_)))
}

/// Who says history item `item`: its `name`, else the user or the character by its role.
pub(crate) fn speaker<'c>(ctx: &'c Context, item: &'c crate::context::ContextItem) -> &'c str {
    match item.name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => name,
        None if item.role == crate::context::Role::User => &ctx.user,
        None => &ctx.char,
    }
}

/// The `Name: ` a history item's text gets in the prompt (SPEC §16 step 6): its own `name`;
/// or, when the host sets `names_behavior` (SPEC §18.2), that mode's: -1 and 1 none (1 names
/// the message instead), 0 the speaker in a group chat unless it is the user, 2 the speaker
/// of every message but a narrator's (system).
fn name_prefix<'c>(ctx: &'c Context, item: &'c crate::context::ContextItem) -> Option<&'c str> {
    match ctx.preset_settings.host_names_behavior() {
        None => item.name.as_deref().filter(|n| !n.is_empty()),
        Some(0) => {
            let name = speaker(ctx, item);
            (!ctx.group.is_empty() && name != ctx.user).then_some(name)
        }
        Some(2) => (item.role != crate::context::Role::System).then(|| speaker(ctx, item)),
        Some(_) => None,
    }
}

/// PromptManager's `sanitizeName`: a name of `[a-zA-Z0-9_]{1,64}` as is, else every other
/// character replaced by `_` and cut to 64.
pub(crate) fn sanitize_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// The `name` of each message when the host sets `names_behavior` 1 (SPEC §18.2, seed
/// layout): a history item's speaker as [`sanitize_name`] makes it; `None` for every other
/// message, and no list at all in every other mode (the request then names no message).
pub(crate) fn message_names(
    ctx: &Context,
    messages: &[Message<'_>],
) -> Option<Box<[Option<String>]>> {
    (ctx.preset_settings.host_names_behavior() == Some(1)).then(|| {
        messages
            .iter()
            .map(|m| {
                let item = &ctx.items[m.item()?];
                (item.tag == Some(Tag::DialogueHistory)).then(|| sanitize_name(speaker(ctx, item)))
            })
            .collect()
    })
}

/// Whether the prompt pass dropped item `i` (a lore item a script emptied, SPEC §13.2.3).
pub(super) fn regex_dropped(regexed: &[Option<ItemText>], i: usize) -> bool {
    matches!(regexed.get(i), Some(Some(ItemText::Dropped)))
}

/// Item `i`'s text as it is placed (see [`host_message`]): the prompt pass's result when it
/// changed it (final: lore was converted before the pass). A history item with a speaker name
/// gets its `name: ` prefix here, verbatim (SPEC §13.2.3, §16).
pub(super) fn host_text<'c>(
    ctx: &'c Context,
    regexed: &[Option<ItemText>],
    i: usize,
) -> Cow<'c, str> {
    let item = &ctx.items[i];
    let after: Option<&str> = match regexed.get(i) {
        Some(Some(ItemText::Text(t))) => Some(t),
        Some(Some(ItemText::Dropped)) => Some(""),
        _ => None,
    };
    if item.tag == Some(Tag::DialogueHistory) {
        match (name_prefix(ctx, item), after) {
            (Some(name), text) => {
                // Pushed, not `format!`: a history is hundreds of these per render.
                let text = text.unwrap_or(&item.text);
                let mut out = String::with_capacity(name.len() + 2 + text.len());
                out.push_str(name);
                out.push_str(": ");
                out.push_str(text);
                Cow::Owned(out)
            }
            (_, Some(text)) => Cow::Owned(text.to_string()),
            _ => Cow::Borrowed(&item.text),
        }
    } else {
        match after {
            Some(text) => Cow::Owned(text.to_string()),
            None => convert_identities(&item.text, &ctx.user, &ctx.char),
        }
    }
}

/// Walks the plan into messages. Native blocks a node already expanded (`{{description}}`,
/// `{{personality}}`) are dropped (SPEC §2.3.3).
pub(super) fn place<'c>(
    plan: &Plan,
    texts: &mut [String],
    expanded: Expanded,
    ctx: &'c Context,
    regexed: &[Option<ItemText>],
    mut extras: Extras,
    diags: &mut Vec<Diagnostic>,
) -> Assembly<'c> {
    let mut suppressed = Vec::new();
    if expanded.description {
        suppressed.push(Tag::SystemPersonaPrompt);
    }
    if expanded.personality {
        suppressed.push(Tag::SystemPersonality);
    }
    let mut buckets = Buckets::new(ctx, regexed, &suppressed);
    let limit = ctx.options.limits.clamped().output_bytes;
    // `wi_format` serves both lore buckets; it was rendered once.
    let wi_format = extras.wi_format.take();
    let lore = |buckets: &mut Buckets<'c, '_>, tag: Tag, role: Role, out: &mut Vec<Message<'c>>| {
        let format = wi_format.as_deref().map(|f| ("wi_format", f));
        buckets.emit_formatted(tag, format, role, |f, lore| fill(f, lore, limit), out);
    };
    let flush_participants = |buckets: &mut Buckets<'c, '_>, out: &mut Vec<Message<'c>>| {
        for (tag, marked) in LORE.into_iter().zip(plan.lore_markers) {
            if !marked {
                lore(buckets, tag, Role::System, out);
            }
        }
        for tag in PARTICIPANTS {
            buckets.emit(Some(tag), out);
        }
    };

    let mut out = Vec::with_capacity(plan.steps.len() + ctx.items.len() + 1);
    let mut history = None;
    let mut knowledge_done = false;
    let mut participants_done = false;
    for step in &plan.steps {
        if step.participants_before {
            flush_participants(&mut buckets, &mut out);
            participants_done = true;
        }
        match step.kind {
            StepKind::Main => {
                node_text(step, texts, &mut out);
                buckets.emit(Some(Tag::SystemHumanizerRules), &mut out);
                buckets.emit(Some(Tag::SystemChannelPrompt), &mut out);
            }
            StepKind::Custom => node_text(step, texts, &mut out),
            StepKind::Marker(Marker::ChatHistory) => {
                history = Some(chat_history(ctx, &mut extras, &mut buckets, &mut out));
            }
            StepKind::Marker(m @ (Marker::WorldInfoBefore | Marker::WorldInfoAfter)) => {
                let tag = if m == Marker::WorldInfoBefore {
                    Tag::KnowledgeLorebookBefore
                } else {
                    Tag::KnowledgeLorebookAfter
                };
                lore(&mut buckets, tag, step.role, &mut out);
            }
            StepKind::Marker(m) => marker(
                m,
                step,
                expanded,
                &mut extras,
                &mut buckets,
                &mut out,
                diags,
            ),
        }
        if step.knowledge_after {
            for tag in KNOWLEDGE {
                buckets.emit(Some(tag), &mut out);
            }
            knowledge_done = true;
        }
    }
    // Everything from here on follows the walked steps: after the chat history, when its marker
    // was walked.
    let after_steps = out.len();
    let history_walked = history.is_some();
    if !knowledge_done {
        for tag in KNOWLEDGE {
            buckets.emit(Some(tag), &mut out);
        }
    }
    if !participants_done {
        flush_participants(&mut buckets, &mut out);
    }
    // What no anchor claimed: tagged buckets first, untagged items last.
    let leftovers: Vec<Option<Tag>> = buckets
        .order
        .iter()
        .copied()
        .filter(Option::is_some)
        .chain(buckets.order.iter().copied().filter(Option::is_none))
        .collect();
    for tag in leftovers {
        let range = buckets.emit(tag, &mut out);
        if tag == Some(Tag::DialogueHistory) && history.is_none() {
            history = Some(range);
        }
    }
    if history_walked {
        unanchored(&out[after_steps..], diags);
    }
    if out
        .last()
        .is_some_and(|m| m.source == Source::Tag(Some(Tag::DialogueSample)))
    {
        let text = convert_identities(SAMPLE_SEPARATOR, &ctx.user, &ctx.char);
        out.push(Message::new(Role::User, text, Source::SampleSeparator));
        // An empty history at the end stays after the separator: injections there belong to
        // the live conversation, not to the example dialogue the separator closes.
        if let Some(h) = history.as_mut()
            && h.start == h.end
            && h.start == out.len() - 1
        {
            *h = out.len()..out.len();
        }
    }
    // Tail items without a depth follow everything; those with one are injected.
    for (i, _) in ctx.items.iter().enumerate().filter(|(i, item)| {
        is_tail(item.tag) && item.depth.is_none() && !regex_dropped(regexed, *i)
    }) {
        out.push(host_message(ctx, regexed, i));
    }
    Assembly {
        messages: out,
        history,
    }
}

/// Host items placed after the walk (their anchor or marker is not walked) land after the chat
/// history, where a model reads them as part of the latest turn: SPEC §4.2 places them there,
/// and a preset that disables `main` (NemoEngine 11.5.2 does) surprises the host. Untagged items
/// go last by design and are not reported.
fn unanchored(late: &[Message<'_>], diags: &mut Vec<Diagnostic>) {
    let mut tags: Vec<&str> = Vec::new();
    for m in late {
        if let Source::Tag(Some(tag)) = &m.source {
            let name = tag.name();
            if !tags.contains(&name) {
                tags.push(name);
            }
        }
    }
    if !tags.is_empty() {
        diags.push(Diagnostic::new(
            DiagnosticKind::UnanchoredItems,
            None,
            format!(
                "host items {} follow the chat history: the preset walks no anchor for them \
                 (an enabled `main`, or their marker)",
                tags.join(", ")
            ),
        ));
    }
}

/// A node's rendered text as its message (nothing when empty).
fn node_text(step: &Step, texts: &mut [String], out: &mut Vec<Message<'_>>) {
    if let Some(text) = step.text.and_then(|i| texts.get_mut(i))
        && !text.is_empty()
    {
        let source = Source::Node(step.identifier.clone());
        out.push(Message::new(step.role, std::mem::take(text), source));
    }
}

/// The `chatHistory` marker (SPEC §4.2, §14.6): the new-chat (or new-group-chat) prompt, the
/// history items, `send_if_empty` after a model turn, the group nudge. Returns the history's
/// range.
fn chat_history<'c>(
    ctx: &'c Context,
    extras: &mut Extras,
    buckets: &mut Buckets<'c, '_>,
    out: &mut Vec<Message<'c>>,
) -> std::ops::Range<usize> {
    let group = !ctx.group.is_empty();
    let opener = if group {
        ("new_group_chat_prompt", extras.new_group_chat_prompt.take())
    } else {
        ("new_chat_prompt", extras.new_chat_prompt.take())
    };
    if let (key, Some(text)) = opener {
        out.push(Message::new(Role::System, text, Source::Setting(key)));
    }
    let range = buckets.emit(Some(Tag::DialogueHistory), out);
    if let Some(text) = extras.send_if_empty.take()
        && range.end > range.start
        && out[range.end - 1].role == Role::Model
    {
        out.push(Message::new(
            Role::User,
            text,
            Source::Setting("send_if_empty"),
        ));
    }
    if group && let Some(text) = extras.group_nudge_prompt.take() {
        out.push(Message::new(
            Role::System,
            text,
            Source::Setting("group_nudge_prompt"),
        ));
    }
    range
}

/// `format` with each `{0}` replaced by `lore` (SPEC §14.6; not rescanned), built only up to
/// just past `limit` bytes: a format of many `{0}` must not multiply a large lore past what
/// the output limit would keep (it cuts the rest and reports it).
fn fill(format: &str, lore: &str, limit: usize) -> String {
    let mut out = String::new();
    for (i, piece) in format.split("{0}").enumerate() {
        if i > 0 {
            out.push_str(lore);
        }
        out.push_str(piece);
        if out.len() > limit {
            let mut cut = limit + 1;
            while !out.is_char_boundary(cut) {
                cut += 1;
            }
            out.truncate(cut);
            break;
        }
    }
    out
}

fn marker<'c>(
    m: Marker,
    step: &Step,
    expanded: Expanded,
    extras: &mut Extras,
    buckets: &mut Buckets<'c, '_>,
    out: &mut Vec<Message<'c>>,
    diags: &mut Vec<Diagnostic>,
) {
    let ctx = buckets.ctx;
    let host_text = |text: &'c str, suppressed: bool, out: &mut Vec<Message<'c>>| {
        if !suppressed && !text.is_empty() {
            let text = convert_identities(text, &ctx.user, &ctx.char);
            let source = Source::Node(step.identifier.clone());
            out.push(Message::new(Role::System, text, source));
        }
    };
    let tag = match m {
        Marker::CharDescription => Tag::SystemPersonaPrompt,
        Marker::CharPersonality => {
            let format = extras
                .personality_format
                .as_deref()
                .map(|f| ("personality_format", f));
            let text = |f: &str, _: &str| f.to_string();
            return buckets.emit_formatted(Tag::SystemPersonality, format, step.role, text, out);
        }
        Marker::DialogueExamples => {
            if let Some(text) = extras.new_example_chat_prompt.take()
                && buckets.pending(Tag::DialogueSample) > 0
            {
                let source = Source::Setting("new_example_chat_prompt");
                out.push(Message::new(Role::System, text, source));
            }
            Tag::DialogueSample
        }
        Marker::ChatHistory => Tag::DialogueHistory,
        Marker::WorldInfoBefore => Tag::KnowledgeLorebookBefore,
        Marker::WorldInfoAfter => Tag::KnowledgeLorebookAfter,
        Marker::PersonaDescription => return host_text(&ctx.persona, expanded.persona, out),
        Marker::Scenario => {
            let scenario = convert_identities(&ctx.scenario, &ctx.user, &ctx.char);
            if let Some(f) = extras.scenario_format.take()
                && !expanded.scenario
                && !scenario.is_empty()
            {
                if !f.is_empty() {
                    out.push(Message::new(
                        step.role,
                        f,
                        Source::Setting("scenario_format"),
                    ));
                }
                return;
            }
            return host_text(&ctx.scenario, expanded.scenario, out);
        }
        Marker::Unfilled => {
            let id = &*step.identifier;
            diags.push(Diagnostic::new(
                DiagnosticKind::UnfilledMarker,
                Some(id),
                format!("marker `{id}` has no host block: it produces nothing"),
            ));
            return;
        }
    };
    buckets.emit(Some(tag), out);
}
