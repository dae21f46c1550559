//! Stage 3 (SPEC §18.1, the seed layout): what the generation type adds after everything
//! else. A `continue` without `continue_prefill` moves the newest chat message (with the depth
//! parts merged into it) to the end, before its nudge; the nudge, an impersonation prompt and a
//! quiet prompt are one system message after every other message, so the budget keeps them
//! (fixed) and drops history for them.

use super::{Assembly, Message, Source};
use crate::context::{Role, Tag};

/// What a render's generation type adds ([`super::Extras::turn`]); nothing for `normal`.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    /// The newest chat message goes to the end first (`continue` without `continue_prefill`).
    pub move_last: bool,
    /// The system message that ends the prompt, and the setting it comes from.
    pub prompt: Option<(String, &'static str)>,
}

pub(crate) fn apply(assembly: &mut Assembly<'_>, turn: Turn) {
    if turn.move_last
        && let Some(range) = assembly.history.clone()
        && let Some(last) = assembly.messages[range.clone()]
            .iter()
            .rposition(|m| matches!(m.source, Source::Tag(Some(Tag::DialogueHistory))))
    {
        let message = assembly.messages.remove(range.start + last);
        assembly.messages.push(message);
        assembly.history = Some(range.start..range.end - 1);
    }
    if let Some((text, key)) = turn.prompt {
        assembly
            .messages
            .push(Message::new(Role::System, text, Source::Setting(key)));
    }
}
