//! The macros that read SillyTavern's app state rather than the card or the variables: chat
//! positions, the card's greetings and notes, the system prompt, token limits, the generation
//! type, extensions (docs/macros.md). Each answers from a context field where ST reads its own
//! state; where the context has no such field, from what a fresh SillyTavern install holds.
//! `tests/st-macros/` checks every one against ST's own macro engine.

use std::borrow::Cow;

use super::macros::Bad;
use super::{Run, clock};
use crate::context::Tag;
use crate::syntax::catalog::{ChatIndex, MacroKind, TokenLimit};

/// SillyTavern's system prompt in a fresh install (`Neutral - Chat`, power-user.js), printed
/// as ST prints it: its macros are not expanded.
const DEFAULT_SYSTEM_PROMPT: &str =
    "Write {{char}}'s next reply in a fictional chat between {{char}} and {{user}}.";

/// The default context template's chat start and example separator (power-user.js).
const CONTEXT_SEPARATOR: &str = "***";

/// ST's built-in extensions (`public/scripts/extensions/`), all on in a fresh install.
const STOCK_EXTENSIONS: [&str; 14] = [
    "assets",
    "attachments",
    "caption",
    "connection-manager",
    "expressions",
    "gallery",
    "memory",
    "quick-reply",
    "regex",
    "stable-diffusion",
    "token-counter",
    "translate",
    "tts",
    "vectors",
];

/// How many messages SillyTavern shows of a chat it opens (`chat_truncation`, default 100).
const SHOWN_MESSAGES: usize = 100;

/// A fresh install's `openai_max_context` and `openai_max_tokens` (openai.js), for a render
/// whose preset and context give none.
const DEFAULT_CONTEXT: i64 = 4095;
const DEFAULT_RESPONSE: i64 = 300;

impl Run<'_, '_> {
    /// Writes the value of one of this module's macros into `out`.
    pub(super) fn state_value(
        &mut self,
        kind: MacroKind,
        args: &[Cow<'_, str>],
        out: &mut String,
    ) -> Result<(), Bad> {
        let ctx = self.ctx();
        let arg = |i: usize| args.get(i).map_or("", |a| a.trim());
        let convert = |text: &str| {
            crate::identity::convert_identities(crate::jstext::js_trim(text), &ctx.user, &ctx.char)
                .into_owned()
        };
        match kind {
            MacroKind::ChatIndex(which) => {
                // Counted once per render: a preset of n of these over m messages must not
                // cost n × m.
                let (n, last) = *self.eng.history.get_or_insert_with(|| {
                    let mut history = ctx
                        .items
                        .iter()
                        .enumerate()
                        .filter(|(_, i)| i.tag == Some(Tag::DialogueHistory));
                    let n = history.clone().count();
                    (n, history.next_back().map(|(i, _)| i))
                });
                let last = last.map(|i| &ctx.items[i]);
                let value = match which {
                    ChatIndex::LastMessage => n.checked_sub(1).map(|i| i.to_string()),
                    ChatIndex::AllRange => n.checked_sub(1).map(|i| format!("0-{i}")),
                    ChatIndex::FirstIncluded => {
                        ctx.first_included_message_id.map(|i| i.to_string())
                    }
                    ChatIndex::FirstDisplayed => match ctx.first_displayed_message_id {
                        Some(i) => Some(i.to_string()),
                        None => (n > 0).then(|| n.saturating_sub(SHOWN_MESSAGES).to_string()),
                    },
                    ChatIndex::LastSwipe => last.and_then(|m| m.swipes).map(|s| s.to_string()),
                    ChatIndex::CurrentSwipe => last
                        .and_then(|m| m.swipe_id)
                        .map(|s| (u64::from(s) + 1).to_string()),
                };
                out.push_str(value.as_deref().unwrap_or(""));
            }
            MacroKind::Greeting => {
                // ST's integer argument (`/^-?\d+$/` after trimming); 0 is the greeting, N the
                // Nth alternate one, anything out of range empty.
                let index = match arg(0) {
                    "" => 0,
                    a => {
                        let digits = a.strip_prefix('-').unwrap_or(a);
                        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                            return Err(Bad::Literal("the index must be a whole number"));
                        }
                        // Past the greetings either way; a negative index is out of range.
                        if a.starts_with('-') && digits.bytes().any(|b| b != b'0') {
                            return Ok(());
                        }
                        digits.parse::<usize>().unwrap_or(usize::MAX)
                    }
                };
                let text = match index {
                    0 => Some(ctx.first_mes.as_str()),
                    i => ctx.alternate_greetings.get(i - 1).map(String::as_str),
                };
                out.push_str(&convert(text.unwrap_or("")));
            }
            MacroKind::CreatorNotes => out.push_str(&convert(&ctx.creator_notes)),
            MacroKind::CharDepthPrompt => {
                if let Some(d) = &ctx.char_depth_prompt {
                    out.push_str(&convert(&d.text));
                }
            }
            MacroKind::SystemPrompt | MacroKind::DefaultSystemPrompt => {
                let system = ctx
                    .system_prompt
                    .as_deref()
                    .unwrap_or(DEFAULT_SYSTEM_PROMPT);
                // Off (`""`) is off for both; the card's prompt wins only for `systemPrompt`.
                if !system.is_empty() {
                    let card = convert(&ctx.char_prompt);
                    if kind == MacroKind::SystemPrompt && ctx.prefer_char_prompt && !card.is_empty()
                    {
                        out.push_str(&card);
                    } else {
                        out.push_str(system);
                    }
                }
            }
            MacroKind::Instruct | MacroKind::Input => {}
            MacroKind::ContextTemplate => out.push_str(CONTEXT_SEPARATOR),
            MacroKind::TokenLimit(which) => {
                let (window, response) = self.token_limits();
                let value = match which {
                    TokenLimit::Context => window,
                    TokenLimit::Response => response,
                    TokenLimit::Prompt => window - response,
                };
                out.push_str(&value.to_string());
            }
            MacroKind::TimeDiff => out.push_str(&clock::time_diff(arg(0), arg(1))),
            MacroKind::LastGenerationType => out.push_str(ctx.generation_type().name()),
            MacroKind::IsMobile => out.push_str("false"),
            MacroKind::HasExtension => {
                let name = arg(0);
                let on = |ext: &str| {
                    same_name(ext, name)
                        || ext
                            .strip_prefix("third-party/")
                            .is_some_and(|short| same_name(short, name))
                };
                let found = match &ctx.extensions {
                    Some(list) => !name.is_empty() && list.iter().any(|e| on(e)),
                    None => !name.is_empty() && STOCK_EXTENSIONS.iter().any(|e| on(e)),
                };
                out.push_str(if found { "true" } else { "false" });
            }
            _ => {}
        }
        Ok(())
    }

    /// The window and the response's tokens as SillyTavern's `getMaxContextTokens` and
    /// `getMaxResponseTokens` give them: the context's `max_context_tokens` and
    /// `provider_options.max_tokens`, else the preset's settings, else a fresh install's.
    fn token_limits(&self) -> (i64, i64) {
        let ctx = self.ctx();
        let settings = self.eng.settings;
        let window = match ctx.options.budget.max_context_tokens {
            crate::provider::Tri::Value(w) => i64::from(w),
            _ => settings
                .and_then(|s| s.openai_max_context)
                .unwrap_or(DEFAULT_CONTEXT),
        };
        let response = match ctx.provider_options.max_tokens {
            crate::provider::Tri::Value(n) => n,
            _ => settings
                .and_then(|s| s.openai_max_tokens)
                .unwrap_or(DEFAULT_RESPONSE),
        };
        (window, response)
    }
}

/// ST's `equalsIgnoreCaseAndAccents` for extension names: equal once decomposed (NFD), the
/// combining diacritics U+0300–U+036F dropped, and lowercased.
fn same_name(a: &str, b: &str) -> bool {
    use unicode_normalization::UnicodeNormalization;
    let fold = |s: &str| -> String {
        s.nfd()
            .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
            .flat_map(char::to_lowercase)
            .collect()
    };
    fold(a) == fold(b)
}
