//! Stage 3, the history budget (SPEC §12.4): when `max_context_tokens` is set, the oldest
//! `DIALOGUE_HISTORY` items are dropped until the prompt fits. Everything else is fixed; the
//! newest non-empty history item is never dropped. Runs before the output limit, so that limit
//! never cuts the newest history while older history remains.

use super::{Message, Source};
use crate::context::{Role, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::options::Budget;

/// Reply priming SillyTavern reserves on every request.
const PRIMING: i64 = 3;
/// Per-message overhead (ST: 3 per message + 3 request padding − 2).
const PER_MESSAGE: i64 = 4;

fn is_history(m: &Message<'_>) -> bool {
    m.source == Source::Tag(Some(Tag::DialogueHistory))
}

impl Budget {
    /// Drops the oldest history items of `messages` until the prompt fits (SPEC §12.4) and
    /// `output_limit` bytes hold it; returns the diagnostics (in order) and the prompt's tokens.
    /// Without `max_context_tokens` nothing changes and there are no prompt tokens.
    ///
    /// ```
    /// use stpreset::{Budget, Counter, Message, Role, Source, Tag, Tokenizer};
    /// let history = |t: &'static str| Message::with_parts(Role::User, [t], Source::Tag(Some(Tag::DialogueHistory)));
    /// let mut messages = vec![history("old words here"), history("new")];
    /// let budget = Budget::tokens(10).with_counter(Counter::Builtin(Tokenizer::Words));
    /// let (diagnostics, tokens) = budget.apply(&mut messages, "", usize::MAX);
    /// assert_eq!((messages.len(), tokens), (1, Some(9)));
    /// assert_eq!(diagnostics[0].message, "dropped 1 of 2 history items");
    /// ```
    pub fn apply(
        &self,
        messages: &mut Vec<Message<'_>>,
        model: &str,
        output_limit: usize,
    ) -> (Vec<Diagnostic>, Option<u32>) {
        let Some(max) = self.max_context_tokens else {
            return (Vec::new(), None);
        };
        let mut diags = Vec::new();
        let resolved = self.counter.resolve(model);
        if let Some(vocab) = resolved.approximating {
            diags.push(Diagnostic::new(
                DiagnosticKind::ApproximateTokenCount,
                None,
                format!(
                    "token counts are approximate: {} is not built in",
                    vocab.name()
                ),
            ));
        }
        let role_words =
            ["system", "user", "assistant"].map(|w| resolved.count_parts(&[w.into()]) as i64);
        let cost = |m: &Message<'_>| -> i64 {
            if m.is_empty() {
                return 0;
            }
            let role = match m.role {
                Role::System => role_words[0],
                Role::User => role_words[1],
                Role::Model => role_words[2],
            };
            PER_MESSAGE + role + resolved.count_parts(m.parts()) as i64
        };
        let available = max as i64 - self.reserve_tokens as i64;
        let mut used = PRIMING;
        let mut size = 0usize;
        let mut history = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            if is_history(m) {
                history.push(i);
            } else {
                used += cost(m);
                size = size.saturating_add(m.len());
            }
        }
        let non_empty = |i: &usize| !messages[*i].is_empty();
        let protected = history.iter().rposition(non_empty);
        let total = history.iter().filter(|i| non_empty(i)).count();
        // Walk newest to oldest; the first item that does not fit ends the walk.
        let mut keep_from = 0;
        for (k, &i) in history.iter().enumerate().rev() {
            let m = &messages[i];
            let c = cost(m);
            let b = m.len();
            let shielded = protected.is_some_and(|p| k >= p);
            if shielded
                || (used + c <= available && size.checked_add(b).is_some_and(|s| s <= output_limit))
            {
                used += c;
                size = size.saturating_add(b);
            } else {
                keep_from = k + 1;
                break;
            }
        }
        let dropped = &history[..keep_from];
        let dropped_count = dropped.iter().filter(|i| non_empty(i)).count();
        if !dropped.is_empty() {
            // `dropped` is ascending: one cursor walks it beside the retain.
            let mut next = 0;
            let mut index = 0;
            messages.retain(|_| {
                let drop = dropped.get(next) == Some(&index);
                next += drop as usize;
                index += 1;
                !drop
            });
        }
        if used > available {
            diags.push(Diagnostic::new(
                DiagnosticKind::ContextOverflow,
                None,
                format!(
                    "prompt needs {used} tokens, {available} available; dropped {dropped_count} of {total} history items"
                ),
            ));
        } else if dropped_count > 0 {
            diags.push(Diagnostic::new(
                DiagnosticKind::HistoryTrimmed,
                None,
                format!("dropped {dropped_count} of {total} history items"),
            ));
        }
        (diags, Some(used.clamp(0, u32::MAX as i64) as u32))
    }
}
