//! The SillyTavern layout (SPEC §17): a preset, card, lore and chat become the message list
//! the live SillyTavern 1.18 app builds (`Generate` → `prepareOpenAIMessages` →
//! `populateChatCompletion`) and then the body its server posts. The layout is chosen once,
//! in `render::preset`, which wraps this module's [`Output`]; this module stands below
//! `render` and nothing else branches on the layout. Stages, in order:
//!
//! 1. [`prompts`] (compile time): the prompt list ST reads from the file;
//! 2. `evaluate` (here): card fields, lore, settings and prompt contents as templates, in
//!    ST's order of macro substitution (the templates a render brings are compiled once,
//!    [`templates`]);
//! 3. `collection` (here): each prompt's content, the markers ST fills, the card's overrides;
//! 4. [`chat`]: history messages, names, and the depth injections spliced in;
//! 5. [`examples`]: example dialogue blocks and lines;
//! 6. `populate` (here): membership, placement and the token budget in ST's order;
//! 7. [`request`]: the body per source (ST's client post-steps and server converters).
//!
//! `docs/sillytavern.md` lists every rule with the ST function it comes from. A new stage is
//! a module here and one call in [`render`].

mod chat;
mod examples;
mod group;
pub(crate) mod prompts;
pub(crate) mod request;
mod templates;

use std::borrow::Cow;

use crate::assemble::{Message, Source};
use crate::context::{Context, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::eval::{self, EvalNode};
use crate::layout::PersonaPosition;
use crate::node::CompiledNode;
use crate::passes::ItemText;
use crate::passes::Scripts;
use crate::role::Role;
use crate::settings::PresetSettings;
use crate::settings::resolve::Resolution;

use chat::{ExtensionPrompt, Injection};
pub(crate) use prompts::StPlan;
use prompts::{Kind, Marker, Named};

/// What the request step needs beside the messages: each message's `name`.
#[derive(Debug, Clone, Default)]
pub(crate) struct StExtra {
    pub names: Vec<Option<Box<str>>>,
}

/// What a render in this layout reads of a compiled preset besides its prompt list.
pub(crate) struct Inputs<'p> {
    /// Import diagnostics, first in the result.
    pub import: &'p [Diagnostic],
    pub scripts: &'p Scripts,
    /// Who lets the preset's regex scripts run (SPEC §13.6.1).
    pub regex: crate::passes::Permission,
}

/// A render in this layout, for `render` to wrap: history texts the layout leaves as they are
/// borrow the context's items (a binding then hands the caller's own strings back).
pub(crate) struct Output<'c> {
    pub messages: Vec<Message<'c>>,
    pub extra: StExtra,
    pub diagnostics: Vec<Diagnostic>,
    pub variables: std::collections::BTreeMap<String, String>,
    pub globals: std::collections::BTreeMap<String, String>,
    /// Claude's prefill as rendered for this generation type (`None`: none).
    pub prefill: Option<String>,
    pub wi_state: Option<crate::lore::WiState>,
    /// The World Info entries activated (`BOOK.UID`), in activation order.
    pub activated: Vec<String>,
}

/// The template settings a render reads (by a name, not a string: matching keys as strings
/// was a twentieth of a short render).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    NewChat,
    NewGroupChat,
    NewExampleChat,
    GroupNudge,
    WiFormat,
    ScenarioFormat,
    PersonalityFormat,
    Impersonation,
    ContinueNudge,
    SendIfEmpty,
}

impl Setting {
    /// The preset file's key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Setting::NewChat => "new_chat_prompt",
            Setting::NewGroupChat => "new_group_chat_prompt",
            Setting::NewExampleChat => "new_example_chat_prompt",
            Setting::GroupNudge => "group_nudge_prompt",
            Setting::WiFormat => "wi_format",
            Setting::ScenarioFormat => "scenario_format",
            Setting::PersonalityFormat => "personality_format",
            Setting::Impersonation => "impersonation_prompt",
            Setting::ContinueNudge => "continue_nudge_prompt",
            Setting::SendIfEmpty => "send_if_empty",
        }
    }

    /// ST's fresh-install value (`default_settings`).
    fn default(self) -> &'static str {
        match self {
            Setting::NewChat => "[Start a new Chat]",
            Setting::NewGroupChat => "[Start a new group chat. Group members: {{group}}]",
            Setting::NewExampleChat => "[Example Chat]",
            Setting::GroupNudge => "[Write the next reply only as {{char}}.]",
            Setting::WiFormat => "{0}",
            Setting::ScenarioFormat => "{{scenario}}",
            Setting::PersonalityFormat => "{{personality}}",
            Setting::ContinueNudge => {
                "[Continue your last message without repeating its original content.]"
            }
            Setting::Impersonation => {
                "[Write your next reply from the point of view of {{user}}, using the chat history so far as a guideline for the writing style of {{user}}. Don't write as {{char}} or system. Don't describe actions of {{char}}.]"
            }
            Setting::SendIfEmpty => "",
        }
    }

    fn given(self, s: &PresetSettings) -> Option<&str> {
        match self {
            Setting::NewChat => s.new_chat_prompt.as_deref(),
            Setting::NewGroupChat => s.new_group_chat_prompt.as_deref(),
            Setting::NewExampleChat => s.new_example_chat_prompt.as_deref(),
            Setting::GroupNudge => s.group_nudge_prompt.as_deref(),
            Setting::WiFormat => s.wi_format.as_deref(),
            Setting::ScenarioFormat => s.scenario_format.as_deref(),
            Setting::PersonalityFormat => s.personality_format.as_deref(),
            Setting::Impersonation => s.impersonation_prompt.as_deref(),
            Setting::ContinueNudge => s.continue_nudge_prompt.as_deref(),
            Setting::SendIfEmpty => s.send_if_empty.as_deref(),
        }
    }
}

/// ST's fresh-install value of a template setting the preset lacks (`default_settings`).
pub(crate) fn setting_or_default(settings: Option<&PresetSettings>, setting: Setting) -> &str {
    settings
        .and_then(|s| setting.given(s))
        .unwrap_or(setting.default())
}

/// The templates a render evaluates besides the preset's prompts, by what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    Description,
    Personality,
    Scenario,
    Examples,
    CharNote,
    Persona,
    LoreBefore,
    LoreAfter,
    LoreDepth(usize),
    LoreExamples(usize),
    AuthorsNoteTop,
    AuthorsNoteBottom,
    ScenarioFormat,
    PersonalityFormat,
    WiFormat,
    GroupNudge,
    Impersonation,
    Quiet,
    Prefill,
    ContinuePrefill,
    NewChat,
    NewExampleChat,
    AuthorsNote,
    Bias,
}

impl Slot {
    /// The position of a slot that is not one of the lore's numbered ones.
    fn fixed(self) -> Option<usize> {
        Some(match self {
            Slot::LoreDepth(_) | Slot::LoreExamples(_) => return None,
            Slot::Description => 0,
            Slot::Personality => 1,
            Slot::Scenario => 2,
            Slot::Examples => 3,
            Slot::CharNote => 4,
            Slot::Persona => 5,
            Slot::LoreBefore => 6,
            Slot::LoreAfter => 7,
            Slot::AuthorsNoteTop => 8,
            Slot::AuthorsNoteBottom => 9,
            Slot::ScenarioFormat => 10,
            Slot::PersonalityFormat => 11,
            Slot::WiFormat => 12,
            Slot::GroupNudge => 13,
            Slot::Impersonation => 14,
            Slot::Quiet => 15,
            Slot::Prefill => 16,
            Slot::ContinuePrefill => 17,
            Slot::NewChat => 18,
            Slot::NewExampleChat => 19,
            Slot::AuthorsNote => 20,
            Slot::Bias => 21,
        })
    }
}

/// Each template's text by its slot, empty where a render brought none: the fixed slots by
/// position, the lore's depth groups and example blocks by their number (a lorebook can
/// bring thousands; a map hashed every slot was a twentieth of a short render).
#[derive(Default)]
struct SlotTexts<'a> {
    fixed: [&'a str; 22],
    depth: Vec<&'a str>,
    examples: Vec<&'a str>,
}

impl<'a> SlotTexts<'a> {
    fn set(&mut self, slot: Slot, text: &'a str) {
        let (list, i) = match slot {
            Slot::LoreDepth(i) => (&mut self.depth, i),
            Slot::LoreExamples(i) => (&mut self.examples, i),
            fixed => {
                if let Some(i) = fixed.fixed() {
                    self.fixed[i] = text;
                }
                return;
            }
        };
        if list.len() <= i {
            list.resize(i + 1, "");
        }
        list[i] = text;
    }

    fn get(&self, slot: Slot) -> &'a str {
        let found = match slot {
            Slot::LoreDepth(i) => self.depth.get(i),
            Slot::LoreExamples(i) => self.examples.get(i),
            fixed => fixed.fixed().and_then(|i| self.fixed.get(i)),
        };
        found.copied().unwrap_or_default()
    }
}

/// One message placed at a collection index.
#[derive(Debug, Clone)]
struct Out<'c> {
    role: Role,
    text: Cow<'c, str>,
    name: Option<String>,
    source: Source,
}

/// What one index of ST's sparse collection array holds.
enum Placed<'c> {
    /// A prompt of the collection, by its index (its text moves into its message when
    /// emitted), with the Author's Note's relative message (`true`: before it).
    Prompt {
        at: usize,
        note: Option<(Out<'c>, bool)>,
    },
    Outs(Vec<Out<'c>>),
    /// The chat history: its opening prompt, the lines the budget kept (newest first, as the
    /// budget walked them: each becomes a message in one move, turned as it goes), and what
    /// follows them. A history line is the largest record a render moves, once per message.
    History {
        head: Out<'c>,
        newest: Vec<chat::ChatLine<'c>>,
        tail: Vec<Out<'c>>,
    },
}

impl<'c> Placed<'c> {
    fn len(&self) -> usize {
        match self {
            Placed::Prompt { note, .. } => 1 + usize::from(note.is_some()),
            Placed::Outs(outs) => outs.len(),
            Placed::History { newest, tail, .. } => 1 + newest.len() + tail.len(),
        }
    }

    /// Appends the slot's messages and their names in order, leaving out those without
    /// content (as `getChat` does).
    fn emit(
        self,
        collection: &mut [Prompt<'_>],
        messages: &mut Vec<Message<'c>>,
        names: &mut Vec<Option<Box<str>>>,
    ) {
        // Plain loops writing each message straight from its record: a tuple built per
        // message and handed through a closure was read back before its stores had landed
        // (a store-forwarding stall per history message, a sixth of a long render).
        fn out<'c>(o: Out<'c>, messages: &mut Vec<Message<'c>>, names: &mut Vec<Option<Box<str>>>) {
            if !o.text.is_empty() {
                names.push(o.name.map(String::into_boxed_str));
                messages.push(Message::new(o.role, o.text, o.source));
            }
        }
        match self {
            Placed::Prompt { at, note } => {
                let (before, after) = match note {
                    Some((n, true)) => (Some(n), None),
                    Some((n, false)) => (None, Some(n)),
                    None => (None, None),
                };
                before.into_iter().for_each(|o| out(o, messages, names));
                if let Some(p) = collection.get_mut(at) {
                    out(
                        Out {
                            role: p.role,
                            text: Cow::Owned(std::mem::take(&mut p.content)),
                            name: None,
                            source: Source::Node(p.entry.identifier.clone()),
                        },
                        messages,
                        names,
                    );
                }
                after.into_iter().for_each(|o| out(o, messages, names));
            }
            Placed::Outs(list) => list.into_iter().for_each(|o| out(o, messages, names)),
            Placed::History { head, newest, tail } => {
                out(head, messages, names);
                let mut newest = newest;
                newest.retain(|l| !l.text.is_empty());
                // `extend` over a mapped `Vec` (its length known) writes each message in
                // place: a message built in a temporary and then moved had its narrow
                // fields read back as one wide load before they had landed.
                names.extend(newest.iter_mut().rev().map(|l| l.name.take()));
                messages.extend(newest.into_iter().rev().map(|l| {
                    let source = l.source();
                    Message::new(l.role, l.text, source)
                }));
                tail.into_iter().for_each(|o| out(o, messages, names));
            }
        }
    }
}

/// A prompt of the collection at render time (after `getPromptCollection` and
/// `preparePromptsForChatCompletion`): its entry in the plan and what this render gives it
/// (a render builds one per prompt: copying the entry's dozen fields was a tenth of a short
/// render).
#[derive(Debug)]
struct Prompt<'p> {
    entry: &'p prompts::Entry,
    /// Its identifier's order entry is off (ST's `isPromptDisabledForActiveCharacter`).
    off: bool,
    /// The role for injection (only the three ST knows are injected).
    inject_role: Option<Role>,
    /// The role of its relative message.
    role: Role,
    content: String,
}

/// Where each [`Named`] prompt is in the collection (ST's `prompts.index("…")`).
#[derive(Default)]
struct NamedAt([Option<usize>; Named::COUNT]);

impl NamedAt {
    fn get(&self, name: Named) -> Option<usize> {
        self.0[name.slot()]
    }

    /// Notes that `i` holds `entry`, when it is named and the first of its name.
    fn note(&mut self, entry: &prompts::Entry, i: usize) {
        if let Some(n) = entry.named {
            self.0[n.slot()].get_or_insert(i);
        }
    }
}

/// The history budget in ST's terms (`ChatCompletion`'s token budget).
struct Budget<'c> {
    left: Option<i64>,
    /// Counts through the process-wide count cache (a built-in vocabulary): a turn recounts
    /// only the texts that changed, as the seed layout's budget does. Each count is charged
    /// to the work budget whether it was cached or not, so the same inputs stop in the same
    /// place.
    counter: crate::tokens::Resolved,
    /// The counts of `system`, `user`, `assistant`, once per render.
    roles: [i64; 3],
    /// A `Chat`'s memory of its items' counts: a history message that is its item's own
    /// text is counted once per chat, not hashed and looked up every turn.
    known: Option<crate::tokens::Known<'c>>,
    /// The prompts charged their byte bounds instead of their counts (while nothing has been
    /// refused, with a vocabulary whose tokens are each at least a byte): counted only when
    /// something does not fit that way ([`settle`](Self::settle)). Each decision is the one
    /// counting makes (a count is at most its bound), and a window that holds the whole
    /// render by bytes counts nothing (NemoEngine's 2,000,000 tokens).
    deferred: Option<Vec<usize>>,
}

impl Budget<'_> {
    /// Charges the collection's prompt `i`, placed whole (ST's `addToChatCompletion`): false
    /// when it does not fit.
    fn take_prompt(&mut self, prompts: &[Prompt<'_>], i: usize) -> bool {
        let Some(Prompt { role, content, .. }) = prompts.get(i) else {
            return false;
        };
        let (role, text) = (*role, content.as_str());
        if self.deferred.is_some() {
            let bound = self.bound(role, text, None);
            if self.afford(bound) {
                self.spend(bound);
                self.deferred.get_or_insert_default().push(i);
                return true;
            }
            self.settle(prompts);
        }
        let cost = self.cost(role, text, None);
        if !self.afford(cost) {
            return false;
        }
        self.spend(cost);
        true
    }

    /// Replaces the deferred prompts' byte bounds by their counts.
    fn settle(&mut self, prompts: &[Prompt<'_>]) {
        for p in self
            .deferred
            .take()
            .unwrap_or_default()
            .into_iter()
            .flat_map(|i| prompts.get(i))
        {
            let exact = self.cost(p.role, &p.content, None) - self.bound(p.role, &p.content, None);
            self.spend(exact);
        }
    }

    fn cost(&self, role: Role, text: &str, name: Option<&str>) -> i64 {
        self.cost_of(role, text, name, None)
    }

    /// [`cost`](Self::cost) of a text that may be the caller's item `item`.
    fn cost_of(&self, role: Role, text: &str, name: Option<&str>, item: Option<usize>) -> i64 {
        if text.is_empty() || self.left.is_none() {
            return 0;
        }
        let role = self.role(role);
        let count = |t: &str| i64::from(self.counter.count_parts(&[Cow::Borrowed(t)]));
        let text = match item {
            // Borrowed: a `Chat` recognises its item's own text by its address.
            Some(_) => i64::from(self.counter.count_known(
                &[Cow::Borrowed(text)],
                item,
                self.known,
            )),
            None => count(text),
        };
        4 + role + text + name.map_or(0, count)
    }

    /// The count of `role`'s word.
    fn role(&self, role: Role) -> i64 {
        self.roles[match role {
            Role::System => 0,
            Role::User => 1,
            Role::Model => 2,
        }]
    }

    /// At least [`cost_of`](Self::cost_of) when the counter's tokens are each at least a
    /// byte (a built-in vocabulary, `bounded_by_bytes`): the byte lengths stand for the counts.
    fn bound(&self, role: Role, text: &str, name: Option<&str>) -> i64 {
        if text.is_empty() {
            return 0;
        }
        let role = self.role(role);
        let bytes = text.len() + name.map_or(0, str::len);
        4 + role + i64::try_from(bytes).unwrap_or(i64::MAX / 4)
    }

    fn afford(&self, cost: i64) -> bool {
        self.left.is_none_or(|l| l - cost >= 0)
    }

    fn spend(&mut self, cost: i64) {
        if let Some(l) = &mut self.left {
            *l -= cost;
        }
    }
}

/// Renders a compiled preset in the SillyTavern layout, with the render's one resolution of
/// the preset's settings (`res`, SPEC §14.3–§14.5). History texts it leaves as they are
/// borrow `ctx`'s items.
pub(crate) fn render<'c>(
    parts: &Inputs<'_>,
    plan: &StPlan,
    res: &mut Resolution<'_>,
    ctx: &'c Context,
    known: Option<crate::tokens::Known<'c>>,
) -> Output<'c> {
    let mut diagnostics: Vec<Diagnostic> = parts.import.to_vec();
    diagnostics.extend(ctx.surrogate_note());
    let window_note = res.window_note.take();
    let res: &Resolution<'_> = res;
    let settings = res.settings();
    let generation = ctx
        .lore
        .as_ref()
        .map(|l| l.generation_type)
        .unwrap_or_default()
        .name();

    let (is_continue, is_impersonate, is_quiet) = (
        generation == "continue",
        generation == "impersonate",
        generation == "quiet",
    );
    // A swipe builds from the chat without its last message (ST `coreChat.pop()`), while the
    // macros still read the whole chat (SPEC §18.1).
    let full = ctx;
    let swiped;
    let ctx = match full.swipe_copy() {
        Ok(Some(copy)) => {
            swiped = copy;
            &swiped
        }
        Ok(None) => full,
        Err(note) => {
            diagnostics.push(note);
            full
        }
    };
    diagnostics.extend(full.quiet_fallback());
    // The prompt pass over the host's items (SPEC §13), then activation (§15) on what it left.
    let regexed = parts
        .scripts
        .prompt_items(ctx, parts.regex, false, &mut diagnostics);
    let available = res.available();
    let wi = ctx.lore.as_ref().map(|lore| {
        crate::activation::items::activate_for(
            ctx,
            lore,
            &regexed,
            Some((parts.scripts, parts.regex)),
            available,
            &mut diagnostics,
        )
    });
    let skip_wi = is_quiet && ctx.user_settings.quiet_skip_wi;
    // The macros read the whole chat and this render's outlets.
    let with_outlets;
    let eval_ctx = match &wi {
        Some(wi) => {
            let mut copy = full.clone();
            copy.lore = None;
            if !skip_wi {
                copy.outlets = wi.outlets.clone();
            }
            with_outlets = copy;
            &with_outlets
        }
        None => full,
    };
    // Borrowed from the caller's items (`full`): a swipe's copy lacks the reply it replaces,
    // so its items after that one are the next of `full`'s.
    let swiped_at = match std::ptr::eq(ctx, full) {
        true => usize::MAX,
        false => full
            .items
            .iter()
            .rposition(|i| i.tag == Some(Tag::DialogueHistory))
            .unwrap_or(usize::MAX),
    };
    // Each item's text after the prompt pass (by the index in `ctx`), read once, as the
    // history is built.
    let history_text = |i: usize| -> Cow<'c, str> {
        match regexed.get(i) {
            Some(Some(ItemText::Text(t))) => Cow::Owned(t.to_string()),
            Some(Some(ItemText::Dropped)) => Cow::Borrowed(""),
            _ => full
                .items
                .get(i + usize::from(i >= swiped_at))
                .map_or(Cow::Borrowed(""), |item| Cow::Borrowed(item.text.as_str())),
        }
    };

    // The layout reads the chat history and the card's fields: say which host items it
    // leaves out (a bot moving from the seed layout may be feeding memories as items).
    // Counted by tag (a few dozen at most), named in the tags' alphabetical order.
    let mut by_tag: Vec<(Option<Tag>, usize)> = Vec::new();
    for item in &ctx.items {
        match item.tag {
            Some(
                Tag::DialogueHistory
                | Tag::SystemPersonaPrompt
                | Tag::SystemPersonality
                | Tag::DialogueSample,
            ) => {}
            tag => match by_tag.iter_mut().find(|(t, _)| *t == tag) {
                Some((_, n)) => *n += 1,
                None => by_tag.push((tag, 1)),
            },
        }
    }
    if !by_tag.is_empty() {
        let name = |tag: Option<Tag>| tag.map_or("untagged", Tag::name);
        by_tag.sort_unstable_by_key(|(tag, _)| name(*tag));
        let mut note = String::from(
            "the SillyTavern layout reads the chat history and the card's fields; left out: ",
        );
        let mut digits = itoa::Buffer::new();
        for (i, (tag, n)) in by_tag.iter().enumerate() {
            if i > 0 {
                note.push_str(", ");
            }
            note.push_str(digits.format(*n));
            note.push(' ');
            note.push_str(name(*tag));
        }
        diagnostics.push(Diagnostic::new(DiagnosticKind::ItemsIgnored, None, note));
    }
    if !ctx.group.is_empty() {
        let unnamed = ctx
            .items
            .iter()
            .filter(|i| {
                i.tag == Some(Tag::DialogueHistory) && i.role == Role::Model && i.name.is_none()
            })
            .count();
        if unnamed > 0 {
            diagnostics.push(Diagnostic::new(
                DiagnosticKind::MissingSpeakerName,
                None,
                format!(
                    "{unnamed} character messages of the group chat have no `name`: named `{}`",
                    ctx.char
                ),
            ));
        }
    }

    // 2. Templates, in ST's order of substitution: the card's fields (`getCharacterCardFields`),
    // the lore, the formats and nudges, the prompts (`getPromptCollection`), then the chat's
    // prompts.
    let st = &ctx.user_settings;
    let limits = ctx.options.limits.clamped();
    // The texts borrow the context, the settings and the lore where they can: a render
    // brings some twenty templates and most are the same strings turn after turn.
    let trimmed = |s| Cow::Borrowed(crate::jstext::js_trim(s));
    let scenario = if st.chat_scenario.is_empty() {
        &ctx.scenario
    } else {
        &st.chat_scenario
    };
    // The card's raw example text (`mes_examples` when the host gives only that).
    let card_examples = if ctx.mes_examples_raw.is_empty() {
        &ctx.mes_examples
    } else {
        &ctx.mes_examples_raw
    };
    let mes_examples = if st.chat_mes_example.is_empty() {
        card_examples
    } else {
        &st.chat_mes_example
    };
    let description: Cow<'_, str> = if ctx.description.is_empty() {
        Cow::Owned(tagged_text(ctx, Tag::SystemPersonaPrompt))
    } else {
        Cow::Borrowed(&ctx.description)
    };
    let personality: Cow<'_, str> = if ctx.personality.is_empty() {
        Cow::Owned(tagged_text(ctx, Tag::SystemPersonality))
    } else {
        Cow::Borrowed(&ctx.personality)
    };
    // A group chat in an append mode: every member's fields, expanded already, and the copy
    // of the context the macros then read them from (ST's `getCharacterCardFields`). Outside
    // a group the speaker's fields are not copied for it.
    let group = match ctx.group.is_empty() {
        true => None,
        false => group::fields(
            eval_ctx,
            crate::lore::GroupCard {
                description: description.to_string(),
                personality: personality.to_string(),
                scenario: ctx.scenario.clone(),
                mes_example: card_examples.clone(),
                depth_prompt: ctx.char_depth_prompt.clone(),
            },
            &mut diagnostics,
        ),
    };
    let eval_ctx = group.as_ref().map_or(eval_ctx, |g| &g.ctx);
    // (In a group's append mode those four are the group's, expanded already: the speaker's
    // own are not evaluated again.)
    let own = |text| match group {
        Some(_) => Cow::Borrowed(""),
        None => trimmed(text),
    };
    let mut before: Vec<(Slot, Cow<'_, str>)> = vec![
        (Slot::Description, own(&description)),
        (Slot::Personality, own(&personality)),
        (Slot::Scenario, own(scenario)),
        (Slot::Examples, own(mes_examples)),
    ];
    if let Some(dp) = &ctx.char_depth_prompt {
        before.push((Slot::CharNote, trimmed(&dp.text)));
    }
    before.push((Slot::Persona, Cow::Borrowed(&ctx.persona)));
    if let Some(wi) = &wi {
        before.push((Slot::LoreBefore, Cow::Borrowed(&wi.before)));
        before.push((Slot::LoreAfter, Cow::Borrowed(&wi.after)));
        for (i, d) in wi.depth.iter().enumerate() {
            before.push((Slot::LoreDepth(i), Cow::Borrowed(&d.text)));
        }
        for (i, e) in wi.examples.iter().enumerate() {
            before.push((Slot::LoreExamples(i), Cow::Borrowed(&e.text)));
        }
        before.push((Slot::AuthorsNoteTop, Cow::Owned(wi.an_top.join("\n"))));
        before.push((Slot::AuthorsNoteBottom, Cow::Owned(wi.an_bottom.join("\n"))));
    }
    for (slot, setting) in [
        (Slot::ScenarioFormat, Setting::ScenarioFormat),
        (Slot::PersonalityFormat, Setting::PersonalityFormat),
        (Slot::WiFormat, Setting::WiFormat),
        (Slot::GroupNudge, Setting::GroupNudge),
    ] {
        before.push((slot, Cow::Borrowed(setting_or_default(settings, setting))));
    }
    if is_impersonate {
        before.push((
            Slot::Impersonation,
            Cow::Borrowed(setting_or_default(settings, Setting::Impersonation)),
        ));
    }
    if is_quiet {
        before.push((Slot::Quiet, Cow::Borrowed(&st.quiet_prompt)));
    }
    // Claude's prefill (OAI `createGenerationParameters`): the impersonation prefill for an
    // impersonation, none for quiet and for a continue with `continue_prefill`.
    let continue_prefill = settings.and_then(|s| s.continue_prefill).unwrap_or(false);
    let prefill = if is_impersonate {
        settings.and_then(|s| s.assistant_impersonation.as_deref())
    } else if is_quiet || (is_continue && continue_prefill) {
        None
    } else {
        settings.and_then(|s| s.assistant_prefill.as_deref())
    };
    before.push((Slot::Prefill, Cow::Borrowed(prefill.unwrap_or_default())));
    if is_continue && continue_prefill {
        // The continued message carries the prefill instead (for Claude).
        let text = settings.and_then(|s| s.assistant_prefill.as_deref());
        before.push((
            Slot::ContinuePrefill,
            Cow::Borrowed(text.unwrap_or_default()),
        ));
    }
    let new_chat_setting = if ctx.group.is_empty() {
        Setting::NewChat
    } else {
        Setting::NewGroupChat
    };
    let after: [(Slot, Cow<'_, str>); 4] = [
        (
            Slot::NewChat,
            Cow::Borrowed(setting_or_default(settings, new_chat_setting)),
        ),
        (
            Slot::NewExampleChat,
            Cow::Borrowed(setting_or_default(settings, Setting::NewExampleChat)),
        ),
        (Slot::AuthorsNote, Cow::Borrowed(&st.author_note.text)),
        (Slot::Bias, Cow::Borrowed(&st.start_reply_with)),
    ];
    let templates: Vec<(Slot, &str)> = before
        .iter()
        .chain(&after)
        .map(|(slot, text)| (*slot, &**text))
        .collect();
    // The templates a render brings that are plain text (half of them: empty fields, most
    // nudges) are their own text: neither compiled (nor looked up, hashed and compared in
    // the cache) nor evaluated.
    let plains: Vec<bool> = templates.iter().map(|(_, t)| plain(t, &limits)).collect();
    let compiled = plan.templates.compile_all(
        templates
            .iter()
            .zip(&plains)
            .filter(|(_, plain)| !**plain)
            .map(|((slot, text), _)| (slot_id(*slot), *text)),
        &limits,
    );
    // How many of the compiled ones come before the prompts.
    let split = plains[..before.len()].iter().filter(|p| !**p).count();
    fn as_node(n: &CompiledNode) -> EvalNode<'_> {
        EvalNode {
            st_engine: true,
            suppresses: false,
            ..n.eval()
        }
    }
    // Only the prompts in the collection run (ST substitutes each collection entry once).
    let on: Vec<Option<usize>> = plan
        .entries
        .iter()
        .map(|e| {
            let triggered = e.triggers.is_empty() || e.triggers.iter().any(|t| t == generation);
            e.text.filter(|_| e.enabled && triggered)
        })
        .collect();
    let (compiled_before, compiled_after) = compiled.split_at(split);
    let mut nodes: Vec<EvalNode<'_>> = compiled_before.iter().map(|n| as_node(n)).collect();
    nodes.extend(on.iter().flatten().map(|&i| as_node(&plan.nodes[i])));
    nodes.extend(compiled_after.iter().map(|n| as_node(n)));
    let ev = eval::evaluate(&nodes, eval_ctx, settings);
    diagnostics.extend(ev.diagnostics);
    // The texts in the order they were evaluated: the templates before, the prompts, after.
    let mut evaluated = ev.texts.into_iter();
    let text_of = |i: usize, evaluated: &mut std::vec::IntoIter<String>| match plains[i] {
        true => Cow::Borrowed(templates[i].1),
        false => Cow::Owned(evaluated.next().unwrap_or_default()),
    };
    let texts: Vec<Cow<'_, str>> = (0..before.len())
        .map(|i| text_of(i, &mut evaluated))
        .collect();
    // Each entry's text, by entry.
    let entry_texts: Vec<Option<String>> = on
        .iter()
        .map(|t| t.and_then(|_| evaluated.next()))
        .collect();
    let after_texts: Vec<Cow<'_, str>> = (before.len()..templates.len())
        .map(|i| text_of(i, &mut evaluated))
        .collect();
    let mut by_slot = SlotTexts::default();
    for ((slot, _), text) in before
        .iter()
        .chain(&after)
        .zip(texts.iter().chain(&after_texts))
    {
        by_slot.set(*slot, text);
    }
    if let Some(g) = &group {
        by_slot.set(Slot::Description, &g.ctx.description);
        by_slot.set(Slot::Personality, &g.ctx.personality);
        by_slot.set(Slot::Scenario, &g.ctx.scenario);
        by_slot.set(Slot::Examples, &g.ctx.mes_examples_raw);
    }
    let slot_text = |slot: Slot| -> String { by_slot.get(slot).to_string() };
    // A format that is only its own macro gives the evaluated field.
    let format = |field: Slot, format_slot: Slot, setting: Setting| {
        let value = slot_text(field);
        let fmt = setting_or_default(settings, setting);
        if value.is_empty() || fmt.is_empty() || fmt == setting.default() {
            value
        } else {
            slot_text(format_slot)
        }
    };
    let scenario_text = format(
        Slot::Scenario,
        Slot::ScenarioFormat,
        Setting::ScenarioFormat,
    );
    let personality_text = format(
        Slot::Personality,
        Slot::PersonalityFormat,
        Setting::PersonalityFormat,
    );
    let wi_format = slot_text(Slot::WiFormat);
    let format_wi = |text: String| {
        if text.is_empty() || wi_format.trim().is_empty() {
            text
        } else {
            wi_format.replace("{0}", &text)
        }
    };

    // 3. The collection.
    let mut collection: Vec<Prompt<'_>> =
        Vec::with_capacity(plan.entries.len() + Marker::ALL.len());
    let mut at = NamedAt::default();
    for (e, text) in plan.entries.iter().zip(entry_texts) {
        let triggered = e.triggers.is_empty() || e.triggers.iter().any(|t| t == generation);
        let on = e.enabled && triggered;
        if !on && e.kind != Kind::Main {
            continue;
        }
        at.note(e, collection.len());
        collection.push(Prompt {
            entry: e,
            off: !e.enabled,
            inject_role: e.role,
            role: e.role.unwrap_or(Role::System),
            content: text.unwrap_or_default(),
        });
    }
    let persona_in_prompt =
        !ctx.persona.is_empty() && ctx.user_settings.persona_position == PersonaPosition::InPrompt;
    // No "Start Reply With" for an impersonation or a continue (SC `getBiasStrings`).
    let bias = if is_impersonate || is_continue {
        String::new()
    } else {
        slot_text(Slot::Bias)
    };
    for marker in Marker::ALL {
        let content = match marker {
            Marker::WorldInfoBefore => format_wi(slot_text(Slot::LoreBefore)),
            Marker::WorldInfoAfter => format_wi(slot_text(Slot::LoreAfter)),
            Marker::CharDescription => slot_text(Slot::Description),
            Marker::CharPersonality => personality_text.clone(),
            Marker::Scenario => scenario_text.clone(),
            Marker::Impersonate => slot_text(Slot::Impersonation),
            Marker::QuietPrompt => slot_text(Slot::Quiet),
            Marker::GroupNudge => slot_text(Slot::GroupNudge),
            Marker::Bias => bias.clone(),
            Marker::PersonaDescription if persona_in_prompt => slot_text(Slot::Persona),
            Marker::PersonaDescription => continue,
        };
        let default_role = marker.default_role();
        match at.get(Named::Marker(marker)) {
            // The preset's entry keeps its role and position; ST supplies the content.
            Some(i) => {
                let p = &mut collection[i];
                p.content = content;
                if !p.entry.has_role {
                    p.role = default_role;
                    p.inject_role = Some(default_role);
                }
            }
            None => {
                let Some(entry) = plan.markers.get(marker as usize) else {
                    continue;
                };
                at.note(entry, collection.len());
                collection.push(Prompt {
                    entry,
                    // An entry the generation type left out still has its switch.
                    off: plan
                        .named(Named::Marker(marker))
                        .is_some_and(|e| !e.enabled),
                    inject_role: Some(default_role),
                    role: default_role,
                    content,
                });
            }
        }
    }
    // The card's system prompt and post-history instructions replace `main` / `jailbreak`,
    // with `{{original}}` (once) the preset's text.
    let system = if st.chat_system_prompt.is_empty() {
        &ctx.char_prompt
    } else {
        &st.chat_system_prompt
    };
    for (kind, card_text, prefer) in [
        (Kind::Main, system, ctx.prefer_char_prompt),
        (
            Kind::Jailbreak,
            &ctx.char_instruction,
            ctx.prefer_char_instruction,
        ),
    ] {
        let card_text = crate::jstext::js_trim(card_text);
        if !prefer || card_text.is_empty() {
            continue;
        }
        if let Some(p) = collection.iter_mut().find(|p| p.entry.kind == kind)
            && !p.entry.forbid_overrides
            && !p.off
        {
            let original = std::mem::take(&mut p.content);
            p.content =
                crate::eval::with_original(&p.entry.identifier, card_text, original, ctx, true);
        }
    }

    // The output cap (SPEC §8), spent before any text is counted or copied again: the
    // prompts in collection order, the depth prompts, the chat newest first, the examples;
    // the messages are cut at the cap once more at the end. Within the cap nothing changes.
    let cap = limits.output_bytes;
    let mut room = crate::limits::OutputBudget::new(cap);
    let mut cut = false;
    for p in &mut collection {
        cut |= !room.spend(&mut p.content);
    }

    // 4.–6. Populate, in ST's order.
    let names_behavior = settings.and_then(|s| s.names_behavior).unwrap_or(0);
    let counter = ctx.options.budget.counter.resolve(&ctx.model);
    let effective = &res.effective;
    diagnostics.extend(window_note);
    // ST's budget is always on: a preset without a context size has ST's defaults (4095
    // and 300, OAI `default_settings`); the host's `max_context_tokens: null` turns it off.
    let (window, reserve) = match (
        &ctx.options.budget.max_context_tokens,
        effective.max_context_tokens,
    ) {
        (crate::provider::Tri::Unset, None) => (
            Some(4095),
            match ctx.options.budget.reserve_tokens {
                crate::provider::Tri::Value(r) => r,
                _ => settings
                    .and_then(|s| s.openai_max_tokens)
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(300),
            },
        ),
        (_, window) => (window, effective.reserve_tokens),
    };
    let roles = counter.roles().map(i64::from);
    let mut budget = Budget {
        left: window.map(|m| i64::from(m) - i64::from(reserve)),
        counter,
        roles,
        known,
        deferred: None,
    };
    if budget.counter.bounded_by_bytes() && budget.left.is_some() {
        budget.deferred = Some(Vec::new());
    }
    // ST's `ChatCompletion` writes collections at their prompt's index of a sparse array and
    // pushes the continue and control collections after the highest index written so far.
    let mut slots: std::collections::BTreeMap<usize, Placed<'c>> = Default::default();
    let mut overflow = false;
    budget.spend(3);
    // ST's `addToChatCompletion` of the prompt at `i` of the collection: its text moves into
    // its message when the slots are emitted (copying every placed prompt's text here was a
    // tenth of a render).
    let add = |i: Option<usize>,
               slots: &mut std::collections::BTreeMap<usize, Placed<'c>>,
               budget: &mut Budget,
               overflow: &mut bool| {
        if *overflow {
            return;
        }
        let Some(i) = i else { return };
        let Some(p) = collection.get(i) else { return };
        if (p.off && p.entry.named != Some(Named::Main)) || p.entry.in_chat {
            return;
        }
        if !budget.take_prompt(&collection, i) {
            *overflow = true;
            return;
        }
        slots.insert(i, Placed::Prompt { at: i, note: None });
    };
    for name in [
        Named::Marker(Marker::WorldInfoBefore),
        Named::Main,
        Named::Marker(Marker::WorldInfoAfter),
        Named::Marker(Marker::CharDescription),
        Named::Marker(Marker::CharPersonality),
        Named::Marker(Marker::Scenario),
        Named::Marker(Marker::PersonaDescription),
    ] {
        add(at.get(name), &mut slots, &mut budget, &mut overflow);
    }
    let mut control: Vec<Out<'c>> = Vec::new();
    for (on, marker, key) in [
        (is_impersonate, Marker::Impersonate, "impersonation_prompt"),
        (is_quiet, Marker::QuietPrompt, "quiet_prompt"),
    ] {
        if let Some(p) = at
            .get(Named::Marker(marker))
            .map(|i| &collection[i])
            .filter(|_| on)
        {
            control.push(Out {
                role: p.role,
                text: p.content.clone().into(),
                name: None,
                source: Source::Setting(key),
            });
        }
    }
    let control_cost: i64 = control
        .iter()
        .map(|o| budget.cost(o.role, &o.text, None))
        .sum();
    budget.spend(control_cost);
    let relative = (0..collection.len())
        .filter(|&i| collection[i].entry.relative && !collection[i].entry.in_chat)
        .map(Some);
    for i in [at.get(Named::Nsfw), at.get(Named::Jailbreak)]
        .into_iter()
        .chain(relative)
    {
        add(i, &mut slots, &mut budget, &mut overflow);
    }
    add(
        at.get(Named::EnhanceDefinitions),
        &mut slots,
        &mut budget,
        &mut overflow,
    );
    if !bias.trim().is_empty() {
        add(
            at.get(Named::Marker(Marker::Bias)),
            &mut slots,
            &mut budget,
            &mut overflow,
        );
    }

    // The extension prompts at depth (`getExtensionPrompt(IN_CHAT, …)`): the Author's Note,
    // the Character's Note, the persona at depth, World Info at depth.
    let mut extensions: Vec<ExtensionPrompt> = Vec::new();
    let user_turns = ctx
        .items
        .iter()
        .filter(|i| i.tag == Some(Tag::DialogueHistory) && i.role == Role::User)
        .count() as u64;
    let note = &st.author_note;
    let note_applies = match note.interval {
        0 => false,
        1 => true,
        n => user_turns > 0 && user_turns >= n && user_turns.is_multiple_of(n),
    };
    if note_applies {
        let mut text = slot_text(Slot::AuthorsNote);
        match st.persona_position {
            PersonaPosition::TopAuthorsNote if !ctx.persona.is_empty() => {
                text = format!("{}\n{text}", slot_text(Slot::Persona));
            }
            PersonaPosition::BottomAuthorsNote if !ctx.persona.is_empty() => {
                text = format!("{text}\n{}", slot_text(Slot::Persona));
            }
            _ => {}
        }
        if wi.is_some() {
            let joined = format!(
                "{}\n{text}\n{}",
                slot_text(Slot::AuthorsNoteTop),
                slot_text(Slot::AuthorsNoteBottom)
            );
            let joined = joined.strip_prefix('\n').unwrap_or(&joined);
            text = joined.strip_suffix('\n').unwrap_or(joined).to_string();
        }
        if note.position == 1 {
            extensions.push(ExtensionPrompt {
                key: "2_floating_prompt".into(),
                role: note.role,
                depth: note.depth,
                text,
            });
        } else if !text.is_empty() {
            // Relative (0 after `main`, 2 before it): an extra message in `main`'s slot.
            if let Some(i) = at.get(Named::Main)
                && let Some(Placed::Prompt { note: slot, .. }) = slots.get_mut(&i)
            {
                let out = Out {
                    role: note.role,
                    text: text.into(),
                    name: None,
                    source: Source::Setting("author_note"),
                };
                *slot = Some((out, note.position == 2));
            }
        }
    }
    match group.as_ref().filter(|g| !g.notes.is_empty()) {
        // ST's `getGroupDepthPrompts`: one note per member, keyed by its index.
        Some(g) => {
            for (i, dp) in g.notes.iter().enumerate() {
                extensions.push(ExtensionPrompt {
                    key: format!("DEPTH_PROMPT_{i}"),
                    role: dp.role,
                    depth: dp.depth,
                    text: dp.text.clone(),
                });
            }
        }
        None => {
            if let Some(dp) = &ctx.char_depth_prompt {
                extensions.push(ExtensionPrompt {
                    key: "DEPTH_PROMPT".into(),
                    role: dp.role,
                    depth: dp.depth,
                    text: slot_text(Slot::CharNote),
                });
            }
        }
    }
    if st.persona_position == PersonaPosition::AtDepth && !ctx.persona.is_empty() {
        extensions.push(ExtensionPrompt {
            key: "PERSONA_DESCRIPTION".into(),
            role: st.persona_role,
            depth: st.persona_depth,
            text: slot_text(Slot::Persona),
        });
    }
    if let Some(wi) = wi.as_ref().filter(|_| !skip_wi) {
        for (i, d) in wi.depth.iter().enumerate() {
            let role = match d.role {
                "user" => Role::User,
                "assistant" => Role::Model,
                _ => Role::System,
            };
            let n = match role {
                Role::System => 0,
                Role::User => 1,
                Role::Model => 2,
            };
            extensions.push(ExtensionPrompt {
                key: format!("customDepthWI_{}_{n}", d.depth),
                role,
                depth: d.depth,
                text: slot_text(Slot::LoreDepth(i)),
            });
        }
    }
    let injections: Vec<Injection> = collection
        .iter()
        .filter(|p| p.entry.in_chat)
        .filter_map(|p| {
            Some(Injection {
                role: p.inject_role?,
                depth: p.entry.depth?,
                order: p.entry.order,
                text: p.content.clone(),
            })
        })
        .collect();
    for e in &mut extensions {
        cut |= !room.spend(&mut e.text);
    }
    // Newest first from here to the budget (`chat::history`).
    let (mut newest, whole) = chat::history(
        ctx,
        history_text,
        names_behavior,
        &ctx.char,
        room.left(),
        swiped_at,
    );
    cut |= !whole;
    room.charge(newest.iter().map(|l| l.text.len()).sum());
    // A continue with `continue_prefill` takes the newest message out before the injections
    // and sends it last (OAI `populateChatCompletion`); Claude's gets the prefill before it.
    if is_continue && continue_prefill && !newest.is_empty() {
        let last = newest.remove(0);
        let claude = ctx.provider_options.shape == Some(crate::provider::Shape::Anthropic);
        let prefill = if last.role == Role::Model && claude {
            slot_text(Slot::ContinuePrefill)
        } else {
            String::new()
        };
        let text = [prefill.as_str(), &*last.text]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        let out = Out {
            role: last.role,
            text: text.into(),
            name: last.name.map(String::from),
            source: Source::Setting("continue_prefill"),
        };
        budget.spend(budget.cost(out.role, &out.text, out.name.as_deref()));
        control.push(out);
    }
    let mut lines = chat::inject(newest, &injections, &extensions);
    // A continue without it moves the newest chat message and the nudge after every prompt
    // (OAI `populateChatHistory`); `{{lastChatMessage}}` is the continued text, trimmed.
    let mut continued: Option<Vec<Out<'c>>> = None;
    if is_continue && !continue_prefill && at.get(Named::ChatHistory).is_some() {
        let postfix = settings
            .and_then(|s| s.continue_postfix.clone())
            .unwrap_or_else(|| " ".into());
        let at = lines.iter().position(|l| l.injected.is_none());
        let cycle = at.map_or(String::new(), |i| {
            let text = &lines[i].text;
            if text.ends_with(' ') {
                text.to_string()
            } else {
                format!("{text}{postfix}")
            }
        });
        if !cycle.is_empty() {
            let mut msgs = Vec::new();
            if let Some(i) = at {
                let l = lines.remove(i);
                msgs.push(Out {
                    role: l.role,
                    text: l.text,
                    name: None,
                    source: Source::Tag(Some(Tag::DialogueHistory)),
                });
            }
            let nudge = settings
                .and_then(|s| s.continue_nudge_prompt.clone())
                .unwrap_or_else(|| {
                    "[Continue your last message without repeating its original content.]".into()
                });
            let text = crate::eval::with_value(
                "continue_nudge_prompt",
                &nudge,
                "{{lastChatMessage}}",
                crate::jstext::js_trim(&cycle).to_string(),
                eval_ctx,
                false,
            );
            msgs.push(Out {
                role: Role::System,
                text: text.into(),
                name: None,
                source: Source::Setting("continue_nudge_prompt"),
            });
            continued = Some(msgs);
        }
    }
    let lines = lines;

    // Example blocks: the card's, with World Info's before and after them.
    let mut example_blocks: Vec<String> = Vec::new();
    if let Some(wi) = &wi {
        for (i, e) in wi.examples.iter().enumerate() {
            if e.position == "top" {
                let mut b = examples::blocks(&slot_text(Slot::LoreExamples(i)));
                b.append(&mut example_blocks);
                example_blocks = b;
            }
        }
    }
    example_blocks.extend(examples::blocks(
        &slot_text(Slot::Examples).replace('\r', ""),
    ));
    if let Some(wi) = &wi {
        for (i, e) in wi.examples.iter().enumerate() {
            if e.position != "top" {
                example_blocks.extend(examples::blocks(&slot_text(Slot::LoreExamples(i))));
            }
        }
    }
    let mut example_lines: Vec<Vec<examples::ExampleLine>> = example_blocks
        .iter()
        .map(|b| examples::split(b, &ctx.user, &ctx.char, &ctx.group))
        .collect();
    for line in example_lines.iter_mut().flatten() {
        cut |= !room.spend(&mut line.text);
    }

    let has_history = at
        .get(Named::ChatHistory)
        .is_some_and(|i| collection[i].entry.kind == Kind::ChatHistory)
        && !overflow;
    let has_examples = at.get(Named::DialogueExamples).is_some() && !overflow;
    let new_chat = slot_text(Slot::NewChat);
    let send_if_empty = setting_or_default(settings, Setting::SendIfEmpty).to_string();
    // A group chat's nudge closes the history, except for an impersonation (notes rule 67).
    let group_nudge = at
        .get(Named::Marker(Marker::GroupNudge))
        .map(|i| &collection[i])
        .filter(|_| !ctx.group.is_empty() && !is_impersonate)
        .map(|p| Out {
            role: p.role,
            text: p.content.clone().into(),
            name: None,
            source: Source::Setting("group_nudge_prompt"),
        });
    let continue_cost: i64 = continued
        .iter()
        .flatten()
        .map(|o| budget.cost(o.role, &o.text, None))
        .sum();
    let history_count = lines.iter().filter(|l| l.injected.is_none()).count();
    let new_example = slot_text(Slot::NewExampleChat);
    // When the history and the examples fit the budget by their byte lengths (a built-in
    // vocabulary's token is at least a byte), every one of them is kept whatever their counts:
    // nothing is counted, as the seed layout's budget first walks with the same bounds. The
    // messages are those ST's counting keeps; only the work of counting is not spent.
    if budget.counter.bounded_by_bytes()
        && let Some(left) = budget.left
    {
        let fixed = [
            (Role::System, new_chat.as_str()),
            (Role::User, send_if_empty.as_str()),
        ];
        let bound: i64 = fixed
            .iter()
            .map(|(role, text)| budget.bound(*role, text, None))
            .chain(
                group_nudge
                    .iter()
                    .map(|n| budget.bound(n.role, &n.text, None)),
            )
            .chain(
                lines
                    .iter()
                    .map(|l| budget.bound(l.role, &l.text, l.name.as_deref())),
            )
            .chain(
                example_lines
                    .iter()
                    .flatten()
                    .map(|line| budget.bound(Role::System, &line.text, Some(line.name()))),
            )
            .fold(continue_cost, i64::saturating_add);
        // Each example block opens with the new-example prompt.
        let blocks = i64::try_from(example_lines.len()).unwrap_or(i64::MAX);
        let bound = budget
            .bound(Role::System, &new_example, None)
            .saturating_mul(blocks)
            .saturating_add(bound);
        if left.saturating_sub(bound) < 0 {
            budget.settle(&collection);
        }
        if budget.left.is_some_and(|l| l.saturating_sub(bound) >= 0) {
            budget.left = None;
            budget.deferred = None;
        }
    }
    budget.settle(&collection);
    let mut lines = lines;
    // Called once: the lines move into the messages (a borrowed history text stays borrowed).
    let mut populate_history = |budget: &mut Budget| -> Placed<'c> {
        let mut lines = std::mem::take(&mut lines);
        let mut out = Vec::new();
        let new_chat_cost = budget.cost(Role::System, &new_chat, None);
        budget.spend(new_chat_cost);
        let nudge_cost = group_nudge
            .as_ref()
            .map_or(0, |n| budget.cost(n.role, &n.text, None));
        budget.spend(nudge_cost + continue_cost);
        if lines.first().is_some_and(|l| l.role == Role::Model) && !send_if_empty.is_empty() {
            let cost = budget.cost(Role::User, &send_if_empty, None);
            if budget.afford(cost) {
                budget.spend(cost);
                out.push(Out {
                    role: Role::User,
                    text: send_if_empty.clone().into(),
                    name: None,
                    source: Source::Setting("send_if_empty"),
                });
            }
        }
        // The newest lines the budget affords (all of them when nothing is counted).
        let mut kept = if budget.left.is_none() {
            lines.len()
        } else {
            0
        };
        for l in lines.iter().skip(kept) {
            // Chat text: counting it also pays from the chat text's share of the work.
            let cost =
                crate::work::on_chat(|| budget.cost_of(l.role, &l.text, l.name.as_deref(), l.item));
            if !budget.afford(cost) {
                break;
            }
            budget.spend(cost);
            kept += 1;
        }
        lines.truncate(kept);
        budget.spend(-new_chat_cost - nudge_cost - continue_cost);
        let head = Out {
            role: Role::System,
            text: new_chat.clone().into(),
            name: None,
            source: Source::Setting(new_chat_setting.key()),
        };
        out.extend(group_nudge.clone());
        Placed::History {
            head,
            newest: lines,
            tail: out,
        }
    };
    let populate_examples = |budget: &mut Budget| -> Vec<Out<'c>> {
        let mut out = Vec::new();
        let mut n = 0u32;
        for block in &example_lines {
            let mut msgs = Vec::with_capacity(block.len() + 1);
            msgs.push(Out {
                role: Role::System,
                text: new_example.clone().into(),
                name: None,
                source: Source::Setting("new_example_chat_prompt"),
            });
            for line in block {
                msgs.push(Out {
                    role: Role::System,
                    text: line.text.clone().into(),
                    name: Some(line.name().into()),
                    source: Source::Example(n),
                });
                n += 1;
            }
            let cost: i64 = msgs
                .iter()
                .map(|m| budget.cost(m.role, &m.text, m.name.as_deref()))
                .sum();
            if !budget.afford(cost) {
                break;
            }
            budget.spend(cost);
            out.extend(msgs);
        }
        out
    };
    let push = |slots: &mut std::collections::BTreeMap<usize, Placed<'c>>, out: Vec<Out<'c>>| {
        let next = slots.keys().next_back().map_or(0, |k| k + 1);
        slots.insert(next, Placed::Outs(out));
    };
    let kept_history = std::cell::Cell::new(history_count);
    let mut place_history = |slots: &mut std::collections::BTreeMap<usize, Placed<'c>>,
                             budget: &mut Budget| {
        if let (true, Some(i)) = (has_history, at.get(Named::ChatHistory)) {
            let h = populate_history(budget);
            if let Placed::History { newest, .. } = &h {
                kept_history.set(newest.iter().filter(|l| l.injected.is_none()).count());
            }
            slots.insert(i, h);
            if let Some(c) = continued.take() {
                push(slots, c);
            }
        }
    };
    let place_examples = |slots: &mut std::collections::BTreeMap<usize, Placed<'c>>,
                          budget: &mut Budget| {
        if let (true, Some(i)) = (has_examples, at.get(Named::DialogueExamples)) {
            slots.insert(i, Placed::Outs(populate_examples(budget)));
        }
    };
    if st.pin_examples {
        place_examples(&mut slots, &mut budget);
        place_history(&mut slots, &mut budget);
    } else {
        place_history(&mut slots, &mut budget);
        place_examples(&mut slots, &mut budget);
    }
    if !control.is_empty() {
        push(&mut slots, control);
    }
    if kept_history.get() < history_count {
        diagnostics.push(Diagnostic::new(
            DiagnosticKind::HistoryTrimmed,
            None,
            format!(
                "the token budget dropped {} of {history_count} history items (SillyTavern's order: the oldest, after the examples)",
                history_count - kept_history.get()
            ),
        ));
    }
    if overflow {
        diagnostics.push(Diagnostic::new(
            DiagnosticKind::ContextOverflow,
            None,
            "the prompts SillyTavern always sends do not fit the context size; the body holds what fit",
        ));
    }

    let total = slots.values().map(Placed::len).sum();
    let mut messages = Vec::with_capacity(total);
    let mut names = Vec::with_capacity(total);
    for placed in slots.into_values() {
        placed.emit(&mut collection, &mut messages, &mut names);
    }
    match crate::assemble::limit_output(&mut messages, cap) {
        Some(c) => {
            names.truncate(messages.len());
            diagnostics.push(c.diagnostic);
        }
        None if cut => diagnostics.push(Diagnostic::new(
            DiagnosticKind::LimitReached,
            None,
            format!("rendered output cut at the limit of {cap} bytes"),
        )),
        None => {}
    }
    let prefill = prefill.map(|_| slot_text(Slot::Prefill));
    let (wi_state, wi_activated) = match wi {
        Some(w) => (Some(w.state), w.activated),
        None => (None, Vec::new()),
    };
    Output {
        messages,
        extra: StExtra { names },
        diagnostics,
        variables: ev.variables,
        globals: ev.globals,
        prefill,
        activated: wi_activated,
        wi_state,
    }
}

/// A template ST's engine leaves as it is, told from its text alone: no `{` and no `<` (every
/// macro, and every legacy one like `<USER>`, starts with one), no `\` (an escaped brace,
/// `\}`, loses its backslash) and within the template limit (so parsing it finds nothing:
/// property test). Its text is its output.
fn plain(text: &str, limits: &crate::limits::Limits) -> bool {
    text.len() <= limits.template_bytes
        && memchr::memchr3(b'{', b'<', b'\\', text.as_bytes()).is_none()
}

fn slot_id(slot: Slot) -> &'static str {
    match slot {
        Slot::Description => "description",
        Slot::Personality => "personality",
        Slot::Scenario => "scenario",
        Slot::Examples => "mes_example",
        Slot::CharNote => "depth_prompt",
        Slot::Persona => "persona",
        Slot::LoreBefore | Slot::LoreAfter | Slot::LoreDepth(_) | Slot::LoreExamples(_) => {
            "world_info"
        }
        Slot::AuthorsNoteTop | Slot::AuthorsNoteBottom | Slot::AuthorsNote => "author_note",
        Slot::ScenarioFormat => "scenario_format",
        Slot::PersonalityFormat => "personality_format",
        Slot::WiFormat => "wi_format",
        Slot::GroupNudge => "group_nudge_prompt",
        Slot::Impersonation => "impersonation_prompt",
        Slot::Quiet => "quiet_prompt",
        Slot::Prefill | Slot::ContinuePrefill => "assistant_prefill",
        Slot::NewChat => "new_chat_prompt",
        Slot::NewExampleChat => "new_example_chat_prompt",
        Slot::Bias => "start_reply_with",
    }
}

/// The host's items of one tag joined with `\n` (a host that gives the card as items).
fn tagged_text(ctx: &Context, tag: Tag) -> String {
    let texts: Vec<&str> = ctx
        .items
        .iter()
        .filter(|i| i.tag == Some(tag))
        .map(|i| i.text.as_str())
        .collect();
    texts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluated(node: &CompiledNode, ctx: &Context) -> String {
        let node = EvalNode {
            st_engine: true,
            suppresses: false,
            ..node.eval()
        };
        let mut ev = eval::evaluate(std::slice::from_ref(&node), ctx, None);
        ev.texts.pop().unwrap_or_default()
    }

    #[test]
    fn only_templates_without_macro_openers_are_plain() {
        let limits = crate::limits::Limits::default();
        for text in ["{{char}}", "<USER>", "{0}", "a < b", "x {", "\\}"] {
            assert!(!plain(text, &limits), "{text:?}");
        }
        for text in ["", "[Start a new Chat]", "a}}b>c", "line\r\n\n  "] {
            assert!(plain(text, &limits), "{text:?}");
        }
        // Over the template limit: compiled, so that the cut is noted.
        let small = crate::limits::Limits {
            template_bytes: 4,
            ..Default::default()
        };
        assert!(plain("abcd", &small) && !plain("abcde", &small));
    }

    /// Text of the characters templates treat specially (mostly not `{`, `<` and `\\`), and any
    /// other.
    fn plain_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let atoms = prop::sample::select(vec![
            "}", "}}", ">", "]", "[", "|", ":", "::", "#", "/", "*", "%", "$", "$1", "@", "!",
            "trim", "user", "char", "original", " ", "\n", "\r\n", "\r", "\t", "é", "\u{a0}", "😀",
            "a", "Word",
        ]);
        // Now and then one of the characters that make a text not plain, so that `plain`
        // is checked on both sides (a text it wrongly called plain would fail below).
        let any = prop::sample::select(vec!["{", "<", "\\", "\\}", "}", "a", " ", "{{char}}"]);
        prop_oneof![
            3 => prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat()),
            3 => "[^{<\\\\]{0,80}",
            1 => prop::collection::vec(any, 0..4).prop_map(|v| v.concat()),
        ]
    }

    proptest::proptest! {
        // A template `plain` leaves unevaluated is one evaluation would leave as it is.
        #[test]
        fn a_plain_template_evaluates_to_itself(text in plain_text()) {
            let limits = crate::limits::Limits::default();
            proptest::prop_assume!(plain(&text, &limits));
            let node = CompiledNode::compile("new_chat_prompt", &text, &limits);
            // Nothing to note either: the render neither compiles nor evaluates it.
            proptest::prop_assert!(node.findings.is_empty(), "{:?}", node.findings);
            let ctx = Context { user: "Alice".into(), char: "Sera".into(), ..Context::default() };
            proptest::prop_assert_eq!(evaluated(&node, &ctx), text);
        }
    }
}
