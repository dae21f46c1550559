//! Which request a render builds (SPEC §17.1), and the SillyTavern user state that shapes the
//! SillyTavern layout's prompt (§17.2). A leaf: the context holds these, `sillytavern` reads
//! them.

use serde::Deserialize;

use crate::role::Role;

/// How rendered prompts become messages and the request body (SPEC §17.1).
///
/// ```
/// let ctx = stpreset::Context::from_json(br#"{"layout": "sillytavern"}"#).unwrap();
/// assert_eq!(ctx.layout, stpreset::Layout::SillyTavern);
/// assert_eq!(stpreset::Context::default().layout, stpreset::Layout::Seed);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Layout {
    /// stpreset's own assembly (SPEC §4, §12): buckets, markers, merged injections.
    #[default]
    Seed,
    /// The body the live SillyTavern 1.18 app sends for the same inputs (SPEC §17).
    SillyTavern,
}

impl Layout {
    /// The context-file spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Seed => "seed",
            Layout::SillyTavern => "sillytavern",
        }
    }
}

/// Where the persona description goes (ST `persona_description_position`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PersonaPosition {
    /// 0: the `personaDescription` marker.
    #[default]
    InPrompt,
    /// 2: before the Author's Note.
    TopAuthorsNote,
    /// 3: after the Author's Note.
    BottomAuthorsNote,
    /// 4: a depth injection at `persona_depth` / `persona_role`.
    AtDepth,
    /// 9: nowhere.
    None,
}

impl PersonaPosition {
    /// ST's number for the position; `None` for any other number.
    pub fn from_number(n: i64) -> Option<PersonaPosition> {
        Some(match n {
            0 => PersonaPosition::InPrompt,
            2 => PersonaPosition::TopAuthorsNote,
            3 => PersonaPosition::BottomAuthorsNote,
            4 => PersonaPosition::AtDepth,
            9 => PersonaPosition::None,
            _ => return None,
        })
    }
}

/// The chat's Author's Note (ST chat metadata `note_prompt`, `note_interval`, `note_position`,
/// `note_depth`, `note_role`); a fresh chat's text is empty, so it sends nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorsNote {
    /// The note (a template).
    pub text: String,
    /// Every how many user messages it applies (1: always; 0: never).
    pub interval: u64,
    /// 0 after `main`, 1 in the chat at `depth`, 2 before `main`.
    pub position: u8,
    /// Messages from the end, when in the chat.
    pub depth: u64,
    /// Who it speaks as.
    pub role: Role,
}

impl Default for AuthorsNote {
    fn default() -> Self {
        AuthorsNote {
            text: String::new(),
            interval: 1,
            position: 1,
            depth: 4,
            role: Role::System,
        }
    }
}

/// SillyTavern's prompt-changing user state (SPEC §17.2), at a fresh install's values by
/// default. Only the SillyTavern layout reads it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UserSettings {
    /// `persona_description_position`.
    pub persona_position: PersonaPosition,
    /// `persona_description_depth` (2).
    pub persona_depth: u64,
    /// `persona_description_role` (system).
    pub persona_role: Role,
    /// The chat's Author's Note.
    pub author_note: AuthorsNote,
    /// The Character's Note depth when the card gives none (`depth_prompt_depth_default`, 4).
    pub char_note_depth: u64,
    /// Its role when the card gives none (`depth_prompt_role_default`, system).
    pub char_note_role: Role,
    /// The chat's scenario override (`""`: none).
    pub chat_scenario: String,
    /// The chat's example-dialogue override (`""`: none).
    pub chat_mes_example: String,
    /// The chat's system-prompt override (`""`: none).
    pub chat_system_prompt: String,
    /// "Start Reply With" (`user_prompt_bias`): an assistant message after the prompt.
    pub start_reply_with: String,
    /// Examples are budgeted before the history (`pin_examples`).
    pub pin_examples: bool,
    /// The chat's `chat_id_hash` (seeds `{{pick}}`); `None`: the hash of `chat_id`.
    pub chat_id_hash: Option<u64>,
    /// `pick_reroll_seed` of the chat metadata, joined into `{{pick}}`'s seed.
    pub pick_reroll_seed: Option<String>,
    /// The prompt of a `quiet` generation (SPEC §18.1; empty: none).
    pub quiet_prompt: String,
    /// A `quiet` generation skips World Info at depth and outlets (ST's `skipWIAN`).
    pub quiet_skip_wi: bool,
}

impl Default for UserSettings {
    fn default() -> Self {
        UserSettings {
            persona_position: PersonaPosition::InPrompt,
            persona_depth: 2,
            persona_role: Role::System,
            author_note: AuthorsNote::default(),
            char_note_depth: 4,
            char_note_role: Role::System,
            chat_scenario: String::new(),
            chat_mes_example: String::new(),
            chat_system_prompt: String::new(),
            start_reply_with: String::new(),
            pin_examples: false,
            chat_id_hash: None,
            pick_reroll_seed: None,
            quiet_prompt: String::new(),
            quiet_skip_wi: false,
        }
    }
}

/// How a group chat uses its members' cards (SPEC §18.3; ST's `group_generation_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GroupMode {
    /// `swap` (ST 0): the speaker's own card only.
    #[default]
    Swap,
    /// `append` (ST 1): every member's card fields joined; muted members left out, except the
    /// speaker.
    Append,
    /// `append_disabled` (ST 2): every member's card fields joined, muted members too.
    AppendDisabled,
}

impl GroupMode {
    /// The context-file spelling (`swap`, `append`, `append_disabled`).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupMode::Swap => "swap",
            GroupMode::Append => "append",
            GroupMode::AppendDisabled => "append_disabled",
        }
    }

    /// Reads a context-file spelling.
    ///
    /// ```
    /// use stpreset::layout::GroupMode;
    /// assert_eq!(GroupMode::from_name("append"), Some(GroupMode::Append));
    /// assert_eq!(GroupMode::from_name("Append"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<GroupMode> {
        [
            GroupMode::Swap,
            GroupMode::Append,
            GroupMode::AppendDisabled,
        ]
        .into_iter()
        .find(|m| m.as_str() == name)
    }
}
