//! World Info settings and the generation type (SPEC §15.4): plain data, read from a
//! context file's `world_info` and `generation_type`.

use serde::{Deserialize, Serialize};

/// World Info settings (SPEC §15.4; context field `world_info`). Defaults are SillyTavern's
/// fresh install.
///
/// ```
/// let s: stpreset::lore::WiSettings = serde_json::from_str(r#"{"scan_depth": 4}"#).unwrap();
/// assert_eq!((s.scan_depth, s.budget_percent, s.recursive), (4, 25, true));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct WiSettings {
    /// Messages scanned, newest first (`world_info_depth`).
    pub scan_depth: u64,
    /// Budget as a percentage of the context.
    pub budget_percent: u64,
    /// A cap on the budget in tokens (0: none).
    pub budget_cap: u64,
    /// Scan `Name: text` instead of the text alone.
    pub include_names: bool,
    /// Activated entries' text is scanned again.
    pub recursive: bool,
    /// Keys match case-sensitively unless an entry says otherwise.
    pub case_sensitive: bool,
    /// Keys without whitespace match whole words unless an entry says otherwise.
    pub match_whole_words: bool,
    /// 0: character and global books sorted together; 1: character first; 2: global first.
    pub character_strategy: u8,
    /// Scan deeper until this many entries activated (0: off).
    pub min_activations: u64,
    /// The deepest scan min activations may reach (0: the history length).
    pub min_activations_depth_max: u64,
    /// Most scan passes (0: no cap besides `Limits::lore_max_passes`).
    pub max_recursion_steps: u64,
    /// Group members compete by how many keys matched.
    pub group_scoring: bool,
}

impl Default for WiSettings {
    fn default() -> Self {
        WiSettings {
            scan_depth: 2,
            budget_percent: 25,
            budget_cap: 0,
            include_names: true,
            recursive: true,
            case_sensitive: false,
            match_whole_words: true,
            character_strategy: 1,
            min_activations: 0,
            min_activations_depth_max: 0,
            max_recursion_steps: 0,
            group_scoring: false,
        }
    }
}

/// What kind of generation the activation is for (entry `triggers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GenerationType {
    /// A new reply.
    #[default]
    Normal,
    /// Continuing the last reply.
    Continue,
    /// Writing as the user.
    Impersonate,
    /// Another version of the last reply.
    Swipe,
    /// The last reply written again.
    Regenerate,
    /// A background generation.
    Quiet,
}

impl GenerationType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            GenerationType::Normal => "normal",
            GenerationType::Continue => "continue",
            GenerationType::Impersonate => "impersonate",
            GenerationType::Swipe => "swipe",
            GenerationType::Regenerate => "regenerate",
            GenerationType::Quiet => "quiet",
        }
    }
}

/// What a render does with World Info (SPEC §15.9, context fields `lorebooks`, `world_info`,
/// `wi_state`, `position`, `generation_type`): activate these books for the chat history and
/// place the result; [`Rendered::wi_state`](crate::Rendered::wi_state) gives the new state.
///
/// ```
/// use stpreset::{Context, ContextItem, Limits, lore::LoreInput, Lorebook, Preset, Role, Tag};
/// let book = Lorebook::from_json("w", br#"{"entries": {"0": {"key": ["rain"], "content": "It rains."}}}"#, &Limits::default()).unwrap();
/// let mut ctx = Context::default();
/// ctx.items.push(ContextItem::new(Some(Tag::DialogueHistory), Role::User, "rain?"));
/// let mut lore = LoreInput::new(vec![book]);
/// lore.position = Some(1);
/// ctx.lore = Some(lore);
/// let preset = Preset::from_json(br#"{"prompts": [{"identifier": "worldInfoBefore", "marker": true}, {"identifier": "chatHistory", "marker": true}]}"#).unwrap();
/// let out = preset.compile().render(&ctx);
/// assert_eq!(out.messages[0].parts()[0], "It rains.");
/// assert!(out.wi_state().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct LoreInput {
    /// The books, in order (§15.5.1 orders them by source).
    pub books: Vec<crate::lore::Lorebook>,
    /// The World Info settings.
    pub settings: WiSettings,
    /// The state the previous turn returned.
    pub state: crate::lore::WiState,
    /// The message position (the timed-effect clock); `None`: the history's length.
    pub position: Option<u64>,
    /// The generation type.
    pub generation_type: GenerationType,
    /// Decide without starting or ending timed effects.
    pub dry_run: bool,
}

impl LoreInput {
    /// These books with the default settings and an empty state.
    pub fn new(books: Vec<crate::lore::Lorebook>) -> LoreInput {
        LoreInput {
            books,
            ..LoreInput::default()
        }
    }
}
