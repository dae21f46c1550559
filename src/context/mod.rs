//! What the host supplies for a render (SPEC §4.1, §9): names, host values, clock, seed,
//! capability and tool facts, global variables and the tagged native-context items.

mod file;

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::options::RenderOptions;
use crate::provider::ProviderOptions;
pub use crate::role::Role;
use crate::settings::PresetSettingsUse;
pub(crate) use file::{CHAT_FORMAT, guarded};

/// Everything a render reads from the host. Every field has a default (SPEC §9): empty strings,
/// user `User`, no capabilities, tools or items, seed 0, the clock of [`RenderOptions`] read at
/// render time, offset 0, time awareness on.
///
/// ```
/// let mut ctx = stpreset::Context::default();
/// ctx.user = "Alice".into();
/// ctx.char = "Tomori".into();
/// assert_eq!(stpreset::expand("{{user}} & {{char}}", &ctx).text, "Alice & Tomori");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Context {
    /// User display name (`{{user}}`, `<USER>`, `{user}`).
    pub user: String,
    /// Character (bot persona) name (`{{char}}`, `{{bot}}`).
    pub char: String,
    /// Host value: the character's persona prompt (`{{description}}`).
    pub description: String,
    /// Host value: personality attributes (`{{personality}}`).
    pub personality: String,
    /// Host value: the scenario, usually empty (`{{scenario}}`).
    pub scenario: String,
    /// Host value: the user's persona description (`{{persona}}`).
    pub persona: String,
    /// Host value: formatted example dialogue (`{{mesExamples}}`).
    pub mes_examples: String,
    /// Host value: raw example dialogue (`{{mesExamplesRaw}}`).
    pub mes_examples_raw: String,
    /// Host value: card version (`{{char_version}}`), usually empty.
    pub char_version: String,
    /// Host value: the character card's main-prompt override (`{{charPrompt}}`).
    pub char_prompt: String,
    /// Host value: the card's post-history instruction override (`{{charInstruction}}`).
    pub char_instruction: String,
    /// Group members, in order (`{{group}}`); empty outside a group chat.
    pub group: Vec<String>,
    /// Muted group members (left out of `{{groupNotMuted}}` and `{{notChar}}`).
    pub group_muted: Vec<String>,
    /// The other group members' cards by name (SPEC §18.3; context-file field `group_cards`,
    /// CLI `--group-card NAME=PATH`): the speaker's card is this context's own fields. Read by
    /// the SillyTavern layout in the append modes.
    pub group_cards: BTreeMap<String, crate::lore::GroupCard>,
    /// How a group chat uses its members' cards (`group_generation_mode`).
    pub group_generation_mode: crate::layout::GroupMode,
    /// Put before each member's card field in the append modes, `<FIELDNAME>` replaced by the
    /// field's name (`group_join_prefix`, ST's `generation_mode_join_prefix`).
    pub group_join_prefix: String,
    /// Put after each member's card field (`group_join_suffix`).
    pub group_join_suffix: String,
    /// Configured model codename (`{{model}}`).
    pub model: String,
    /// Model provider (for hosts; no macro reads it).
    pub provider: String,
    /// The one clock reading of the render; `None` reads `options.clock` once per render.
    pub now: Option<DateTime<Utc>>,
    /// Local time is `now` plus this many minutes (UTC+8 is 480).
    pub utc_offset_minutes: i32,
    /// When false every temporal macro expands to empty.
    pub time_awareness: bool,
    /// Seed of the render's RNG (`random`, `roll`).
    pub seed: u64,
    /// Chat identifier: `pick` is stable per (chat id, node, offset).
    pub chat_id: String,
    /// Host-supplied global variables (`getglobalvar`), read back after the render.
    pub globals: BTreeMap<String, String>,
    /// The chat's local variables as the last render left them (`Rendered::variables`): pass
    /// them back each turn and `incvar` counters accumulate (SPEC §11.8).
    pub variables: BTreeMap<String, String>,
    /// Tagged native-context items, in input order.
    pub items: Vec<ContextItem>,
    /// Capability and tool facts (TomoriBot predicates, tool placeholders).
    pub host: MapHost,
    /// How the render runs: limits, injection mode, clock, history budget.
    pub options: RenderOptions,
    /// How [`Rendered::to_request`](crate::Rendered::to_request) shapes a provider request
    /// (context field `provider_options`, SPEC §12, §14.3).
    pub provider_options: ProviderOptions,
    /// Whether the preset's settings apply, and with which edits (SPEC §14.3).
    pub preset_settings: PresetSettingsUse,
    /// Whether the preset's regex scripts may run (SPEC §13.6.1; context-file field
    /// `allow_preset_regex`). Off by default: scripts are a stranger's code paths.
    pub allow_preset_regex: bool,
    /// Whether the card's regex scripts may run (context-file field `allow_char_regex`): off
    /// by default, as SillyTavern asks before it runs a character's scripts.
    pub allow_char_regex: bool,
    /// The host's own regex scripts (SillyTavern's global scripts; context-file field
    /// `regex_scripts`, a list in the export format): they run before the preset's, always.
    pub regex_scripts: Vec<crate::scripts::RegexScript>,
    /// The card's regex scripts (`extensions.regex_scripts`; context-file field
    /// `char_regex_scripts`, filled from `--card`): they run after the preset's, when
    /// `allow_char_regex`.
    pub char_regex_scripts: Vec<crate::scripts::RegexScript>,
    /// The `RegexScriptInvalid` notes of those two lists, reported with every pass.
    pub(crate) regex_notes: Vec<crate::diagnostic::Diagnostic>,
    /// Lone UTF-16 surrogates the context file held, each read as U+FFFD: a render reports
    /// them in one `LoneSurrogate` note.
    pub lone_surrogates: usize,
    /// The chat-file lines that held them (`apply_st_chat`), for the note.
    pub(crate) surrogate_lines: Vec<usize>,
    /// World Info to activate and place in a render (SPEC §15.9); `None`: none.
    pub lore: Option<crate::lore::LoreInput>,
    /// A non-empty `char_prompt` replaces the text of an enabled `main` node, with
    /// `{{original}}` the node's own text (SPEC §15.2); default true.
    pub prefer_char_prompt: bool,
    /// Likewise `char_instruction` for the `jailbreak` node; default true.
    pub prefer_char_instruction: bool,
    /// A card's greeting to post (SPEC §15.2): informational, never rendered.
    pub first_mes: String,
    /// A card's other greetings: informational.
    pub alternate_greetings: Vec<String>,
    /// A card's depth prompt: a system tail item at its depth (SPEC §15.2, §15.7).
    pub char_depth_prompt: Option<crate::lore::DepthPrompt>,
    /// A card's creator notes: `{{charCreatorNotes}}` (docs/macros.md).
    pub creator_notes: String,
    /// SillyTavern's system prompt (its "System Prompt" panel), `{{systemPrompt}}` and
    /// `{{defaultSystemPrompt}}`: `None` is a fresh install's (`Neutral - Chat`), `""` is off.
    pub system_prompt: Option<String>,
    /// The extensions the host has on, `{{hasExtension::NAME}}`: `None` is SillyTavern's
    /// built-in ones, as a fresh install has them.
    pub extensions: Option<Vec<String>>,
    /// The first chat message the previous request included, `{{firstIncludedMessageId}}`
    /// (SillyTavern records it after each generation); `None` renders empty.
    pub first_included_message_id: Option<u64>,
    /// The first chat message on screen, `{{firstDisplayedMessageId}}`; `None` is what
    /// SillyTavern shows of a chat it opens (its last 100 messages).
    pub first_displayed_message_id: Option<u64>,
    /// Which request the render builds (SPEC §17.1): the seed layout or SillyTavern's.
    pub layout: crate::layout::Layout,
    /// SillyTavern's prompt-changing user state (SPEC §17.2), read by the SillyTavern layout.
    pub user_settings: crate::layout::UserSettings,
    /// The World Info outlets of this render (`{{outlet::NAME}}`), set by the render itself.
    pub(crate) outlets: BTreeMap<String, String>,
    /// The generation type of a context whose lore has been placed (`lore` is then `None`):
    /// [`Context::generation_type`] reads it.
    pub(crate) placed_generation: crate::lore::GenerationType,
    /// The reply a swipe replaces, left out of the items the seed layout builds from; the
    /// last-message macros still read it (SPEC §18.1).
    pub(crate) swiped: Option<Box<ContextItem>>,
}

impl Default for Context {
    fn default() -> Self {
        Context {
            user: "User".into(),
            char: String::new(),
            description: String::new(),
            personality: String::new(),
            scenario: String::new(),
            persona: String::new(),
            mes_examples: String::new(),
            mes_examples_raw: String::new(),
            char_version: String::new(),
            char_prompt: String::new(),
            char_instruction: String::new(),
            group: Vec::new(),
            group_muted: Vec::new(),
            group_cards: BTreeMap::new(),
            group_generation_mode: crate::layout::GroupMode::Swap,
            group_join_prefix: String::new(),
            group_join_suffix: String::new(),
            model: String::new(),
            provider: String::new(),
            now: None,
            utc_offset_minutes: 0,
            time_awareness: true,
            seed: 0,
            chat_id: String::new(),
            globals: BTreeMap::new(),
            variables: BTreeMap::new(),
            items: Vec::new(),
            host: MapHost::default(),
            options: RenderOptions::default(),
            provider_options: ProviderOptions::default(),
            preset_settings: PresetSettingsUse::Use,
            allow_preset_regex: false,
            allow_char_regex: false,
            regex_scripts: Vec::new(),
            char_regex_scripts: Vec::new(),
            regex_notes: Vec::new(),
            lone_surrogates: 0,
            surrogate_lines: Vec::new(),
            lore: None,
            prefer_char_prompt: true,
            prefer_char_instruction: true,
            first_mes: String::new(),
            alternate_greetings: Vec::new(),
            char_depth_prompt: None,
            creator_notes: String::new(),
            system_prompt: None,
            extensions: None,
            first_included_message_id: None,
            first_displayed_message_id: None,
            layout: crate::layout::Layout::Seed,
            user_settings: crate::layout::UserSettings::default(),
            outlets: BTreeMap::new(),
            placed_generation: Default::default(),
            swiped: None,
        }
    }
}

/// The UTF-8 byte-order mark, accepted (and dropped) before a JSON file: editors on Windows
/// save one; it is not part of the JSON.
pub(crate) const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Tags of native-context items (SPEC §4.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize, strum::IntoStaticStr,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
#[cfg_attr(test, derive(strum::EnumIter))]
#[non_exhaustive]
pub enum Tag {
    /// `SYSTEM_SERVER_PROMPT`.
    SystemServerPrompt,
    /// `SYSTEM_FALLBACK_PROMPT`.
    SystemFallbackPrompt,
    /// `SYSTEM_HUMANIZER_RULES`.
    SystemHumanizerRules,
    /// `SYSTEM_CHANNEL_PROMPT`.
    SystemChannelPrompt,
    /// `SYSTEM_PERSONA_PROMPT`.
    SystemPersonaPrompt,
    /// `SYSTEM_PERSONALITY`.
    SystemPersonality,
    /// `DIALOGUE_SAMPLE`.
    DialogueSample,
    /// `DIALOGUE_HISTORY`.
    DialogueHistory,
    /// `KNOWLEDGE_LOREBOOK_BEFORE`.
    KnowledgeLorebookBefore,
    /// `KNOWLEDGE_LOREBOOK_AFTER`.
    KnowledgeLorebookAfter,
    /// `KNOWLEDGE_SERVER_INFO`.
    KnowledgeServerInfo,
    /// `KNOWLEDGE_SERVER_MEMORIES`.
    KnowledgeServerMemories,
    /// `KNOWLEDGE_EMOJIS`.
    KnowledgeEmojis,
    /// `KNOWLEDGE_STICKERS`.
    KnowledgeStickers,
    /// `KNOWLEDGE_ACTIVE_USERS`.
    KnowledgeActiveUsers,
    /// `KNOWLEDGE_SHORT_TERM_MEMORY`.
    KnowledgeShortTermMemory,
    /// `SYSTEM_CONDITIONING`.
    SystemConditioning,
    /// `KNOWLEDGE_LORE_ACTIVATED`.
    KnowledgeLoreActivated,
    /// `KNOWLEDGE_RETRIEVED_DOCUMENTS`.
    KnowledgeRetrievedDocuments,
    /// `CONTEXT_PARTICIPANT_PRESENCE`.
    ContextParticipantPresence,
    /// `CONTEXT_CURRENT`.
    ContextCurrent,
}

impl Tag {
    /// How many tags there are: discriminants run from 0 to `COUNT - 1` (the last variant
    /// above is the highest), so assembly can keep per-tag tables in arrays.
    pub(crate) const COUNT: usize = Tag::ContextCurrent as usize + 1;

    /// The tag as the context file spells it (`DIALOGUE_HISTORY`), without serializing it.
    ///
    /// ```
    /// assert_eq!(stpreset::Tag::DialogueHistory.name(), "DIALOGUE_HISTORY");
    /// ```
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// One tagged native-context item.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ContextItem {
    /// The item's tag, or `None` for an untagged item.
    #[serde(default)]
    pub tag: Option<Tag>,
    /// Who speaks: `system`, `user` or `model` (`assistant` is accepted as `model`).
    pub role: Role,
    /// The item's text (never rewritten when it is chat history).
    #[serde(default)]
    pub text: String,
    /// When the message was sent (used by `idle_duration`).
    #[serde(default, deserialize_with = "file::rfc3339")]
    pub time: Option<DateTime<Utc>>,
    /// Tail-slot items only: inject at this depth instead of appending.
    #[serde(default)]
    pub depth: Option<i64>,
    /// Who said it (SPEC §13.2.3, §16): a chat-history item with a name reaches the prompt as
    /// `name: text` (verbatim; an empty name adds nothing), while `{{lastMessage}}` and its
    /// kin read the text alone. Accepted on any item; only history items are prefixed.
    #[serde(default)]
    pub name: Option<String>,
    /// How many swipes the message has (`{{lastSwipeId}}`); `None`: it has none, as a
    /// user's message in SillyTavern.
    #[serde(default)]
    pub swipes: Option<u32>,
    /// Which swipe is shown, from 0 (`{{currentSwipeId}}` prints it from 1).
    #[serde(default)]
    pub swipe_id: Option<u32>,
}

impl ContextItem {
    /// Whether `text` is this item's text itself, borrowed (the same address and length), not
    /// an equal copy: how a front end or a cache knows a message part *is* the item.
    ///
    /// ```
    /// use stpreset::{ContextItem, Role};
    /// let item = ContextItem::new(None, Role::User, "hello");
    /// assert!(item.is_own_text(&item.text));
    /// assert!(!item.is_own_text(&String::from("hello")) && !item.is_own_text(&item.text[1..]));
    /// ```
    #[inline]
    pub fn is_own_text(&self, text: &str) -> bool {
        // `*const str` compares address and length.
        std::ptr::eq(self.text.as_str(), text)
    }

    /// An item with a tag, a role and text.
    pub fn new(tag: Option<Tag>, role: Role, text: impl Into<String>) -> Self {
        ContextItem {
            tag,
            role,
            text: text.into(),
            time: None,
            depth: None,
            name: None,
            swipes: None,
            swipe_id: None,
        }
    }

    /// Sets the speaker's name (a history item's prompt text becomes `name: text`).
    ///
    /// ```
    /// use stpreset::{Context, ContextItem, Preset, Role, Tag};
    /// let p = Preset::from_json(br#"{"prompts": [{"identifier": "chatHistory", "marker": true}]}"#).unwrap();
    /// let mut ctx = Context::default();
    /// ctx.items.push(ContextItem::new(Some(Tag::DialogueHistory), Role::User, "hi").named("Alice"));
    /// assert_eq!(p.compile().render(&ctx).messages[0].text(), "Alice: hi");
    /// ```
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the item's send time.
    pub fn at(mut self, time: DateTime<Utc>) -> Self {
        self.time = Some(time);
        self
    }
}

/// How the host fills a tool-name placeholder `{key}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolText<'a> {
    /// A tool name, inserted in backticks.
    Name(&'a str),
    /// A phrase, inserted as is.
    Phrase(&'a str),
}

/// The host's answers to TomoriBot predicates and tool-name placeholders (SPEC §4.4), as the
/// evaluator asks them. Names arrive lower-cased.
pub(crate) trait Host {
    /// `capability:NAME`: `None` when the host does not know the capability.
    fn capability(&self, name: &str) -> Option<bool>;
    /// `tool:NAME`: is a tool with that name available (never unknown).
    fn tool(&self, name: &str) -> bool;
    /// `tool_family:NAME`: `None` when the host does not know the family.
    fn tool_family(&self, name: &str) -> Option<bool>;
    /// `{key}` placeholders in template text.
    fn tool_text(&self, key: &str) -> Option<ToolText<'_>>;
    /// A macro the host supplies (issue 39), by its ASCII-lower-cased name.
    fn host_macro(&self, name: &str) -> Option<&str>;
    /// The host's macro callback, for names without a value.
    fn macro_fn(&self) -> Option<&MacroFn>;
}

/// A host's macro callback (issue 39): `(name, arguments)` as written in `{{name::a::b}}` →
/// the value, `None` to leave the macro as it is, or `Err(message)` when the host failed (a
/// `HostMacroFailed` diagnostic carries the message; the macro stays as it is).
pub type MacroFn = dyn Fn(&str, &[&str]) -> Result<Option<String>, String> + Send + Sync;

/// [`MacroFn`] in a [`MapHost`] (which is `Debug` and `Clone`).
#[derive(Clone)]
struct MacroCallback(std::sync::Arc<MacroFn>);

impl std::fmt::Debug for MacroCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacroCallback")
    }
}

/// The host's capability and tool facts (SPEC §4.4, §9), the answers to TomoriBot predicates
/// and tool-name placeholders. Keys are lower-cased on insertion.
///
/// ```
/// let mut ctx = stpreset::Context::default();
/// ctx.host.set_capability("Web_Search", true);
/// ctx.host.add_tool("web_search");
/// let t = "{{if capability:web_search}}search{{/if}}{{if !tool:web_search}}none{{/if}}";
/// assert_eq!(stpreset::expand(t, &ctx).text, "search");
/// ```
#[derive(Debug, Clone, Default)]
pub struct MapHost {
    capabilities: HashMap<String, bool>,
    tools: HashSet<String>,
    tool_families: HashMap<String, bool>,
    tool_names: HashMap<String, String>,
    tool_phrases: HashMap<String, String>,
    /// Ordered: the regex cache hashes them in order (`passes::context_fingerprint`).
    macros: BTreeMap<String, String>,
    macro_fn: Option<MacroCallback>,
}

impl MapHost {
    /// Supplies the macro `{{name}}` (issue 39): the values extensions give SillyTavern
    /// (`summary`, `authorsNote`, …) or a third party's (`long_term_memory`). The name is
    /// matched as the catalog matches names (ASCII case ignored; `{{name::args}}` gets the
    /// same value); the value is data, never parsed again. A catalog macro is never replaced:
    /// a render names a host macro that would shadow one (`MacroShadowed`).
    ///
    /// ```
    /// let mut ctx = stpreset::Context::default();
    /// ctx.host.set_macro("Summary", "They met at the shrine. {{user}}");
    /// assert_eq!(stpreset::expand("[{{summary}}]", &ctx).text, "[They met at the shrine. {{user}}]");
    /// ```
    pub fn set_macro(&mut self, name: &str, value: &str) {
        self.macros
            .insert(name.trim().to_ascii_lowercase(), value.to_string());
    }

    /// Answers the macros the catalog lacks and [`set_macro`](Self::set_macro) gives no value,
    /// with `(name, arguments)` as written: `{{memory::recent::5}}` calls `f("memory",
    /// &["recent", "5"])`. Called at most once per distinct call text per evaluation of the
    /// preset's nodes (a regex pass or a card prompt asks again); its text is data and charged
    /// like any output; `None` leaves the
    /// macro literal. A panic in `f` is a `HostMacroFailed` diagnostic, never a crash. A
    /// callback's answers cannot be known ahead, so regex scripts do not reuse earlier results
    /// while one is set.
    ///
    /// ```
    /// let mut ctx = stpreset::Context::default();
    /// ctx.host.set_macro_fn(|name, args| (name == "memory").then(|| format!("{} notes", args.len())));
    /// assert_eq!(stpreset::expand("{{memory::a::b}} {{other}}", &ctx).text, "2 notes {{other}}");
    /// ```
    pub fn set_macro_fn(
        &mut self,
        f: impl Fn(&str, &[&str]) -> Option<String> + Send + Sync + 'static,
    ) {
        self.macro_fn = Some(MacroCallback(std::sync::Arc::new(move |name, args| {
            Ok(f(name, args))
        })));
    }

    /// [`set_macro_fn`](Self::set_macro_fn) for a callback that can fail: `Err(message)` is a
    /// `HostMacroFailed` diagnostic with the message (a package's callback that throws).
    ///
    /// ```
    /// let mut ctx = stpreset::Context::default();
    /// ctx.host.set_fallible_macro_fn(|name, _| match name {
    ///     "memory" => Err("the memory service is down".to_string()),
    ///     _ => Ok(None),
    /// });
    /// let out = stpreset::expand("{{memory}}", &ctx);
    /// assert_eq!(out.text, "{{memory}}");
    /// assert!(out.diagnostics[0].message.contains("the memory service is down"));
    /// ```
    pub fn set_fallible_macro_fn(
        &mut self,
        f: impl Fn(&str, &[&str]) -> Result<Option<String>, String> + Send + Sync + 'static,
    ) {
        self.macro_fn = Some(MacroCallback(std::sync::Arc::new(f)));
    }

    /// Takes `other`'s macro callback (none when it has none): a chat's fields read again
    /// keep the callback its bot set.
    pub(crate) fn adopt_macro_fn(&mut self, other: &mut MapHost) {
        self.macro_fn = other.macro_fn.take();
    }

    /// Removes the macro callback.
    pub fn clear_macro_fn(&mut self) {
        self.macro_fn = None;
    }

    /// Whether a macro callback is set.
    pub(crate) fn has_macro_fn(&self) -> bool {
        self.macro_fn.is_some()
    }

    /// The host macros' names (ASCII lower case) and values, in name order.
    pub(crate) fn macros(&self) -> &BTreeMap<String, String> {
        &self.macros
    }
    /// Answers `capability:NAME`.
    pub fn set_capability(&mut self, name: &str, on: bool) {
        self.capabilities.insert(name.to_lowercase(), on);
    }
    /// Makes `tool:NAME` true.
    pub fn add_tool(&mut self, name: &str) {
        self.tools.insert(name.to_lowercase());
    }
    /// Answers `tool_family:NAME`.
    pub fn set_tool_family(&mut self, name: &str, on: bool) {
        self.tool_families.insert(name.to_lowercase(), on);
    }
    /// Maps `{key}` to a tool name (inserted in backticks).
    pub fn set_tool_name(&mut self, key: &str, tool: &str) {
        self.tool_names.insert(key.to_lowercase(), tool.to_string());
    }
    /// Maps `{key}` to a phrase (inserted as is).
    pub fn set_tool_phrase(&mut self, key: &str, phrase: &str) {
        self.tool_phrases
            .insert(key.to_lowercase(), phrase.to_string());
    }
}

impl Host for MapHost {
    fn capability(&self, name: &str) -> Option<bool> {
        self.capabilities.get(name).copied()
    }
    fn tool(&self, name: &str) -> bool {
        self.tools.contains(name)
    }
    fn tool_family(&self, name: &str) -> Option<bool> {
        self.tool_families.get(name).copied()
    }
    fn tool_text(&self, key: &str) -> Option<ToolText<'_>> {
        // `tool_names` wins over `tool_phrases` (SPEC §10).
        if let Some(n) = self.tool_names.get(key) {
            return Some(ToolText::Name(n));
        }
        self.tool_phrases.get(key).map(|p| ToolText::Phrase(p))
    }
    fn host_macro(&self, name: &str) -> Option<&str> {
        self.macros.get(name).map(String::as_str)
    }
    fn macro_fn(&self) -> Option<&MacroFn> {
        self.macro_fn.as_ref().map(|c| &*c.0)
    }
}

#[cfg(test)]
impl Context {
    /// A context of `DIALOGUE_HISTORY` user items with these texts (unit tests).
    pub(crate) fn with_history(texts: &[&str]) -> Context {
        let mut ctx = Context::default();
        for t in texts {
            ctx.items
                .push(ContextItem::new(Some(Tag::DialogueHistory), Role::User, *t));
        }
        ctx
    }
}

impl Context {
    /// Which generation this render is for: the lore's `generation_type`, also once the lore
    /// has been placed.
    pub(crate) fn generation_type(&self) -> crate::lore::GenerationType {
        self.lore
            .as_ref()
            .map_or(self.placed_generation, |l| l.generation_type)
    }

    /// What a swipe builds from (SPEC §18.1), in either layout: `Ok(Some)` a copy without the
    /// last chat message, which its last-message macros still read (ST's `coreChat.pop()`);
    /// `Ok(None)` when this is no swipe or there is no chat. ST swipes only a reply: a chat
    /// that ends with another message is built as a regeneration, which keeps it, and `Err`
    /// says so (decision, issue 53).
    pub(crate) fn swipe_copy(&self) -> Result<Option<Context>, crate::diagnostic::Diagnostic> {
        if self.generation_type() != crate::lore::GenerationType::Swipe || self.swiped.is_some() {
            return Ok(None);
        }
        let Some(last) = self
            .items
            .iter()
            .rposition(|i| i.tag == Some(Tag::DialogueHistory))
        else {
            return Ok(None);
        };
        if self.items[last].role != Role::Model {
            return Err(crate::diagnostic::Diagnostic::new(
                crate::diagnostic::DiagnosticKind::GenerationFallback,
                None,
                "a swipe replaces the character's last reply, but the chat ends with another \
                 message: it is kept, and the prompt is built as a regeneration",
            ));
        }
        let mut copy = self.clone();
        copy.swiped = Some(Box::new(copy.items.remove(last)));
        Ok(Some(copy))
    }

    /// The `GenerationFallback` of a quiet generation without a quiet prompt (SPEC §18.1): it
    /// builds the normal prompt, as SillyTavern does.
    pub(crate) fn quiet_fallback(&self) -> Option<crate::diagnostic::Diagnostic> {
        (self.generation_type() == crate::lore::GenerationType::Quiet
            && self.user_settings.quiet_prompt.is_empty())
        .then(|| {
            crate::diagnostic::Diagnostic::new(
                crate::diagnostic::DiagnosticKind::GenerationFallback,
                None,
                "a quiet generation without a quiet prompt (`quiet_prompt`, `--quiet-prompt`) \
                 builds the normal prompt, as SillyTavern does",
            )
        })
    }

    /// The `LoneSurrogate` note of a render of this context, when its input had any: one
    /// note, naming the chat-file lines (the first 20) when a chat file held them.
    pub(crate) fn surrogate_note(&self) -> Option<crate::diagnostic::Diagnostic> {
        if self.lone_surrogates == 0 {
            return None;
        }
        let input = if self.surrogate_lines.is_empty() {
            "the context".to_string()
        } else {
            let lines: Vec<String> = self
                .surrogate_lines
                .iter()
                .take(20)
                .map(usize::to_string)
                .collect();
            let more = if self.surrogate_lines.len() > 20 {
                ", …"
            } else {
                ""
            };
            format!("the context (chat file lines {}{more})", lines.join(", "))
        };
        Some(crate::diagnostic::Diagnostic::lone_surrogates(
            &input,
            self.lone_surrogates,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_is_named_as_the_context_file_spells_it() {
        for tag in <Tag as strum::IntoEnumIterator>::iter() {
            let json = serde_json::to_value(tag).unwrap();
            assert_eq!(json.as_str(), Some(tag.name()));
            assert_eq!(serde_json::from_value::<Tag>(json).unwrap(), tag);
        }
    }

    #[test]
    fn host_maps_match_lower_case() {
        let ctx = Context::from_json(
            br#"{"capabilities": {"Web_Search": true}, "tools": ["Read_File"],
                 "tool_names": {"Mem": "m"}, "tool_phrases": {"mem": "p", "x": "phrase"}}"#,
        )
        .unwrap();
        assert_eq!(ctx.host.capability("web_search"), Some(true));
        assert!(ctx.host.tool("read_file"));
        assert_eq!(ctx.host.tool_text("mem"), Some(ToolText::Name("m")));
        assert_eq!(ctx.host.tool_text("x"), Some(ToolText::Phrase("phrase")));
    }
}
