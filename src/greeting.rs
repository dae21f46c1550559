//! A new chat's first message, as SillyTavern opens a chat with a character (`getFirstMessage`
//! in `public/script.js`): the card's `first_mes` and `alternate_greetings` become one message
//! of the character with its swipes.
//!
//! ST stores the greetings as written (macros stay; they are read when the chat is prompted),
//! after the regex scripts of the AI-output placement: the store pass here.

use crate::context::{Context, ContextItem, Tag};
use crate::diagnostic::Diagnostic;
use crate::preset::CompiledPreset;
use crate::role::Role;

/// What [`CompiledPreset::first_message`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FirstMessage {
    /// The chat's first item: `DIALOGUE_HISTORY`, role model, named the character, its text
    /// the first swipe.
    pub item: ContextItem,
    /// The message's swipes, each after the store pass: `first_mes` (left out when it is
    /// empty, as ST does), then each alternate greeting. A bot that offers another greeting
    /// sets the item's text to another swipe.
    pub swipes: Vec<String>,
    /// The store pass's diagnostics (`RegexNotAllowed` once, when the context does not allow
    /// the preset's scripts).
    pub diagnostics: Vec<Diagnostic>,
}

impl CompiledPreset {
    /// The message a new chat with the context's character starts with (ST's
    /// `getFirstMessage`), or `None` when its first swipe would be empty (ST then starts the
    /// chat with no message).
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "x"}]}"#)
    ///     .unwrap().compile();
    /// let ctx = stpreset::Context::from_json(br#"{"char": "Sera", "first_mes": "",
    ///     "alternate_greetings": ["Hello, {{user}}.", "Hm?"]}"#).unwrap();
    /// let first = p.first_message(&ctx).unwrap();
    /// assert_eq!(first.item.text, "Hello, {{user}}.");
    /// assert_eq!(first.item.name.as_deref(), Some("Sera"));
    /// assert_eq!(first.swipes, ["Hello, {{user}}.", "Hm?"]);
    /// ```
    pub fn first_message(&self, ctx: &Context) -> Option<FirstMessage> {
        // Every greeting's pass spends one work budget (a card may have thousands).
        let (out, note) = crate::work::render(&ctx.options.limits, || self.greetings(ctx));
        let mut out = out?;
        out.diagnostics.extend(note);
        Some(out)
    }

    fn greetings(&self, ctx: &Context) -> Option<FirstMessage> {
        let mut diagnostics = Vec::new();
        // Each greeting's pass repeats the same notes (a card may have thousands): one each.
        let mut seen = std::collections::HashSet::new();
        let mut swipes = Vec::with_capacity(1 + ctx.alternate_greetings.len());
        let mut store = |text: &str| {
            let out = self.store_message(text, Role::Model, ctx);
            for d in out.diagnostics {
                if seen.insert(serde_json::to_string(&d).unwrap_or_default()) {
                    diagnostics.push(d);
                }
            }
            out.text
        };
        let first = store(&ctx.first_mes);
        let alternates: Vec<String> = ctx.alternate_greetings.iter().map(|g| store(g)).collect();
        // ST: swipes = [first, ...alternates]; an empty first is shifted out only when there
        // are alternates (a card without them and an empty first_mes starts with nothing).
        if !first.is_empty() || alternates.is_empty() {
            swipes.push(first);
        }
        swipes.extend(alternates);
        let text = swipes.first().filter(|t| !t.is_empty())?.clone();
        let item =
            ContextItem::new(Some(Tag::DialogueHistory), Role::Model, text).named(ctx.char.clone());
        Some(FirstMessage {
            item,
            swipes,
            diagnostics,
        })
    }
}
