//! Stage 3, the history budget (SPEC §12.4): when `max_context_tokens` is set, the oldest
//! `DIALOGUE_HISTORY` items are dropped until the prompt fits. Everything else is fixed; the
//! newest non-empty history item is never dropped. Runs before the output limit, so that limit
//! never cuts the newest history while older history remains.

use std::fmt;
use std::sync::OnceLock;

use super::{Message, Source};
use crate::context::{Role, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::limits::OutputBudget;
use crate::options::Budget;
use crate::tokens::{Known, Resolved};

/// Reply priming SillyTavern reserves on every request.
const PRIMING: i64 = 3;
/// Per-message overhead (ST: 3 per message + 3 request padding − 2).
const PER_MESSAGE: i64 = 4;

fn is_history(m: &Message<'_>) -> bool {
    // A pattern, not `==` with a built `Source`: comparing and dropping one per message was
    // a tenth of a 200-message render.
    matches!(m.source, Source::Tag(Some(Tag::DialogueHistory)))
}

/// Costs of messages under one counter (SPEC §12.4): exact, or an upper bound.
struct Costs<'r, 'k> {
    resolved: &'r Resolved,
    /// `system`, `user`, `assistant`.
    roles: [i64; 3],
    /// A chat's remembered counts of its items, when a chat is rendered.
    known: Option<Known<'k>>,
}

impl<'r, 'k> Costs<'r, 'k> {
    fn new(resolved: &'r Resolved, known: Option<Known<'k>>) -> Costs<'r, 'k> {
        let roles = resolved.roles().map(i64::from);
        Costs {
            resolved,
            roles,
            known,
        }
    }

    fn role(&self, m: &Message<'_>) -> i64 {
        match m.role {
            Role::System => self.roles[0],
            Role::User => self.roles[1],
            Role::Model => self.roles[2],
        }
    }

    /// 0 for an empty text, else 4 + role word + text (counted once, as one string).
    fn exact(&self, m: &Message<'_>) -> i64 {
        self.exact_sized(m, m.len())
    }

    /// [`exact`](Self::exact) of `m`, whose text is `len` bytes (the walk has the length
    /// already: a history's messages are measured once, not twice).
    #[inline]
    fn exact_sized(&self, m: &Message<'_>, len: usize) -> i64 {
        if len == 0 {
            return 0;
        }
        let count = || self.resolved.count_known(m.parts(), m.item(), self.known) as i64;
        // A chat item's text is chat text: counting it also pays from its share of the work.
        let count = match m.item() {
            Some(_) => crate::work::on_chat(count),
            None => count(),
        };
        PER_MESSAGE + self.role(m) + count
    }

    /// At least [`exact`](Self::exact) when the counter is bounded by bytes: the text's
    /// length (`len`) stands for its count. Positive exactly when the text is not empty.
    #[inline]
    fn bound_sized(&self, m: &Message<'_>, len: usize) -> i64 {
        if len == 0 {
            return 0;
        }
        PER_MESSAGE + self.role(m) + len.min(i64::MAX as usize / 2) as i64
    }
}

/// A render's prompt tokens (SPEC §12.4: 3 + Σ cost of what is sent): known when the budget
/// had to count exactly, else counted over the final messages when first asked.
#[derive(Clone)]
pub(crate) struct PromptTokens<'c> {
    resolved: Resolved,
    known: OnceLock<u32>,
    /// A rendered chat's remembered counts of its items.
    items: Option<Known<'c>>,
}

impl fmt::Debug for PromptTokens<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptTokens")
            .field("known", &self.known.get())
            .finish_non_exhaustive()
    }
}

impl<'c> PromptTokens<'c> {
    /// The count of a message list another layout budgeted, counted when first asked for.
    pub fn of_list(counter: &crate::tokens::Counter, model: &str) -> PromptTokens<'static> {
        PromptTokens {
            resolved: counter.resolve(model),
            known: OnceLock::new(),
            items: None,
        }
    }

    /// The same count, free of the chat it rendered (counted without its memory).
    pub fn into_owned(self) -> PromptTokens<'static> {
        PromptTokens {
            resolved: self.resolved,
            known: self.known,
            items: None,
        }
    }

    /// The tokens of `messages`, the list the budget produced (counted once, then kept).
    pub fn get(&self, messages: &[Message<'_>]) -> u32 {
        *self.known.get_or_init(|| {
            let costs = Costs::new(&self.resolved, self.items);
            let used = PRIMING + messages.iter().map(|m| costs.exact(m)).sum::<i64>();
            clamp(used)
        })
    }
}

fn clamp(used: i64) -> u32 {
    used.clamp(0, u32::MAX as i64) as u32
}

impl Budget {
    /// What each message costs under this budget's counter (SPEC §12.4: 0 for an empty text,
    /// else 4 + its role word + its text); a prompt's tokens are 3 + their sum. For a front end
    /// that shows where the tokens go (`stpreset serve`).
    ///
    /// ```
    /// use stpreset::{options::Budget, tokens::Counter, Message, Role, Source, tokens::Tokenizer};
    /// let m = Message::with_parts(Role::User, ["three words here"], Source::Tag(None));
    /// let words = Budget::default().with_counter(Counter::Builtin(Tokenizer::Words));
    /// assert_eq!(words.costs(&[m], ""), [4 + 1 + 3]);
    /// ```
    pub fn costs(&self, messages: &[Message<'_>], model: &str) -> Vec<u32> {
        let resolved = self.counter.resolve(model);
        let costs = Costs::new(&resolved, None);
        messages.iter().map(|m| clamp(costs.exact(m))).collect()
    }

    /// Drops the oldest history items of `messages` until the prompt fits (SPEC §12.4) and
    /// `output_limit` bytes hold it, then cuts the list at `output_limit` (§8); returns the
    /// diagnostics (in order) and the prompt's tokens. Both describe the list as cut: history
    /// items the limit removed count as dropped, and the tokens count only what is left.
    /// Without `max_context_tokens` only the limit applies and there are no prompt tokens.
    ///
    /// ```
    /// use stpreset::{options::Budget, tokens::Counter, Message, Role, Source, Tag, tokens::Tokenizer};
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
        let (diags, tokens) = self.apply_lazy(messages, model, output_limit, None);
        (diags, tokens.map(|t| t.get(messages)))
    }

    /// [`apply`](Self::apply), with the prompt tokens counted only when asked for.
    ///
    /// With tiktoken the walk first adds upper bounds (a token is at least one byte, so a
    /// message costs at most 4 + role word + its bytes) and counts exactly only from the first
    /// item whose bound does not fit: counting is the render's dominant cost (a large preset
    /// injects kilobytes into the newest history items, new text every turn), while a bound
    /// that fits proves the exact walk keeps the item too. The decisions are those of the
    /// exact walk: exact counting starts before the first decision a bound cannot prove, and
    /// covers the diagnostics whenever the bounds exceed the budget. `items`: a chat's
    /// remembered counts of its items (kept for the prompt tokens); with them the walk counts
    /// exactly from the start.
    pub(crate) fn apply_lazy<'c>(
        &self,
        messages: &mut Vec<Message<'_>>,
        model: &str,
        output_limit: usize,
        items: Option<Known<'c>>,
    ) -> (Vec<Diagnostic>, Option<PromptTokens<'c>>) {
        let mut diags = Vec::new();
        let Some(&max) = self.max_context_tokens.value() else {
            diags.extend(limit_output(messages, output_limit).map(|cut| cut.diagnostic));
            return (diags, None);
        };
        let reserve = self.reserve_tokens.value().copied().unwrap_or(0);
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
        let costs_of = Costs::new(&resolved, items);
        // A chat's render counts exactly from the start: its history's counts are remembered
        // (as cheap as bounds), and the front ends that render chats report the prompt tokens
        // every turn, which a bounded walk would count in a pass of their own afterwards.
        let mut exact = !resolved.bounded_by_bytes() || items.is_some();
        let cost = |m: &Message<'_>, len: usize, exact: bool| {
            if exact {
                costs_of.exact_sized(m, len)
            } else {
                costs_of.bound_sized(m, len)
            }
        };
        let available = max as i64 - reserve as i64;
        // Each message's cost (exact, or its bound before the walk turns exact), once counted:
        // fixed and kept items; 0 for the rest.
        let mut costs = vec![0i64; messages.len()];
        let mut used = PRIMING;
        let mut size = 0usize;
        let mut history = Vec::with_capacity(messages.len());
        // In the same pass: the newest history item with text (the protected one) and how
        // many have text.
        let (mut protected, mut total) = (None, 0);
        for (i, m) in messages.iter().enumerate() {
            if is_history(m) {
                if !m.is_empty() {
                    protected = Some(history.len());
                    total += 1;
                }
                history.push(i);
            } else {
                let len = m.len();
                costs[i] = cost(m, len, exact);
                used += costs[i];
                size = size.saturating_add(len);
            }
        }
        let non_empty = |i: &usize| !messages[*i].is_empty();
        // Walk newest to oldest; the first item that does not fit ends the walk.
        let mut keep_from = 0;
        for (k, &i) in history.iter().enumerate().rev() {
            let m = &messages[i];
            let b = m.len();
            let shielded = protected.is_some_and(|p| k >= p);
            let size_fits = size.checked_add(b).is_some_and(|s| s <= output_limit);
            let mut c = cost(m, b, exact);
            if !shielded && size_fits && !exact && used + c > available {
                // The bounds prove no more: count what is kept so far, exactly, once.
                exact = true;
                used = PRIMING;
                for (j, fixed) in messages.iter().enumerate() {
                    if !is_history(fixed) {
                        costs[j] = costs_of.exact(fixed);
                        used += costs[j];
                    }
                }
                for &j in &history[k + 1..] {
                    costs[j] = costs_of.exact(&messages[j]);
                    used += costs[j];
                }
                c = costs_of.exact_sized(m, b);
            }
            if shielded || (size_fits && used + c <= available) {
                costs[i] = c;
                used += c;
                size = size.saturating_add(b);
            } else {
                keep_from = k + 1;
                break;
            }
        }
        let dropped = &history[..keep_from];
        let mut dropped_count = dropped.iter().filter(|i| non_empty(i)).count();
        if let (Some(&first), Some(&last)) = (dropped.first(), dropped.last())
            && last - first + 1 == dropped.len()
        {
            // The usual shape: the oldest items, with no fixed message among them.
            messages.drain(first..=last);
            costs.drain(first..=last);
        } else if !dropped.is_empty() {
            // `dropped` is ascending: one cursor walks it beside the retain (of the messages
            // and, in step, of their costs).
            let mut next = 0;
            let mut index = 0;
            let mut keep = Vec::with_capacity(messages.len());
            messages.retain(|_| {
                let drop = dropped.get(next) == Some(&index);
                next += drop as usize;
                index += 1;
                keep.push(!drop);
                !drop
            });
            let mut flags = keep.into_iter();
            costs.retain(|_| flags.next().unwrap_or(false));
        }
        // The output limit cuts only when the fixed messages and the protected item exceed it
        // (the walk kept nothing else that would not fit); what it removes or cuts is not sent,
        // so the counts and the diagnostics follow what is left.
        // `size` is what is left (fixed and kept items): within the limit, nothing to cut and
        // no pass over the messages to find that out.
        let cut = if size <= output_limit {
            None
        } else {
            limit_output(messages, output_limit)
        };
        if let Some(cut) = &cut {
            dropped_count += cut.removed_history;
            costs.truncate(messages.len());
            if cut.shortened
                && let (Some(last), Some(m)) = (costs.last_mut(), messages.last())
            {
                let was_sent = *last > 0;
                *last = cost(m, m.len(), exact);
                // Cut to nothing: nothing of the item is sent.
                dropped_count += (was_sent && m.is_empty() && is_history(m)) as usize;
            }
            used = PRIMING + costs.iter().sum::<i64>();
        }
        // Bounds within the budget prove the prompt fits; beyond it, only a count can tell.
        if !exact && used > available {
            exact = true;
            used = PRIMING + messages.iter().map(|m| costs_of.exact(m)).sum::<i64>();
        }
        if exact && used > available {
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
        diags.extend(cut.map(|cut| cut.diagnostic));
        let known = OnceLock::new();
        if exact {
            let _ = known.set(clamp(used));
        }
        let tokens = PromptTokens {
            resolved,
            known,
            items,
        };
        (diags, Some(tokens))
    }
}

/// What the output limit took.
pub(crate) struct Cut {
    /// The `LimitReached` diagnostic.
    pub diagnostic: Diagnostic,
    /// History items with text that it removed whole.
    pub removed_history: usize,
    /// Whether the last message left was shortened.
    pub shortened: bool,
}

/// The output limit (SPEC §8): cuts the message that crosses `limit` bytes at a UTF-8
/// boundary and drops everything after it. A cut that lands on a part boundary leaves no empty
/// part, and no message without parts. When the newest history item with text is cut or
/// removed, the diagnostic says so: a bot would otherwise answer a message it never sent.
pub(crate) fn limit_output(messages: &mut Vec<Message<'_>>, limit: usize) -> Option<Cut> {
    // Nothing crosses the limit: leave every message as it is (its parts untouched, so a
    // message that is an item as given stays one, `Message::item`).
    let total = messages
        .iter()
        .fold(0usize, |n, m| n.saturating_add(m.len()));
    if total <= limit {
        return None;
    }
    // Before any part is cut: the newest history item with text (one pass; the cut changes
    // the emptiness this reads).
    let newest = messages
        .iter()
        .rposition(|m| is_history(m) && !m.is_empty());
    let mut budget = OutputBudget::new(limit);
    for mi in 0..messages.len() {
        let parts = messages[mi].parts_mut();
        let Some(pi) = parts
            .as_mut_slice()
            .iter_mut()
            .position(|p| !budget.spend_part(p))
        else {
            continue;
        };
        // A cut that leaves the crossing part empty keeps nothing of it.
        let keep = if parts.as_slice()[pi].is_empty() {
            pi
        } else {
            pi + 1
        };
        // Kept only with text: a cut just after an empty part (an empty history item before
        // its merged injection) would otherwise leave a message of one empty part.
        let kept = parts.as_slice()[..keep].iter().any(|p| !p.is_empty());
        parts.truncate(keep);
        let left = if kept { mi + 1 } else { mi };
        let removed = messages.split_off(left);
        // The crossing message, when removed, had text (it crossed the limit) but is cut empty.
        let crossing_removed = !kept;
        let removed_history = removed
            .iter()
            .enumerate()
            .filter(|(j, m)| is_history(m) && ((*j == 0 && crossing_removed) || !m.is_empty()))
            .count();
        let mut message = format!("rendered output cut at the limit of {limit} bytes");
        match newest {
            Some(n) if n >= left || messages[n].is_empty() => {
                message.push_str("; the newest history message was dropped")
            }
            Some(n) if n == mi => message.push_str("; the newest history message was cut"),
            _ => {}
        }
        return Some(Cut {
            diagnostic: Diagnostic::new(DiagnosticKind::LimitReached, None, message),
            removed_history,
            shortened: kept,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Counter, Tokenizer};

    fn fixed(text: &str) -> Message<'_> {
        Message::with_parts(Role::System, [text], Source::Node("main".into()))
    }

    fn history<'a>(parts: &[&'a str]) -> Message<'a> {
        Message::with_parts(
            Role::User,
            parts.iter().copied(),
            Source::Tag(Some(Tag::DialogueHistory)),
        )
    }

    fn words(max: u32) -> Budget {
        Budget::tokens(max).with_counter(Counter::Builtin(Tokenizer::Words))
    }

    fn texts(messages: &[Message<'_>]) -> Vec<String> {
        messages.iter().map(|m| m.text().into_owned()).collect()
    }

    fn messages(diags: &[Diagnostic]) -> Vec<(DiagnosticKind, &str)> {
        diags.iter().map(|d| (d.kind, d.message.as_str())).collect()
    }

    #[test]
    fn a_cut_newest_item_is_counted_as_sent_and_named() {
        // 16 fixed bytes, limit 20: the newest item (protected) is cut to 4 bytes, the older
        // one is dropped by the walk.
        let mut list = vec![
            fixed("0123456789 abcde"),
            history(&["old"]),
            history(&["newest", "\n[System: be kind]"]),
        ];
        let (diags, tokens) = words(1000).apply(&mut list, "", 20);
        assert_eq!(texts(&list), ["0123456789 abcde", "newe"]);
        // 3 + (4 + 1 + 2) + (4 + 1 + 1): the cut text, not the whole item.
        assert_eq!(tokens, Some(16));
        assert_eq!(
            messages(&diags),
            [
                (
                    DiagnosticKind::HistoryTrimmed,
                    "dropped 1 of 2 history items"
                ),
                (
                    DiagnosticKind::LimitReached,
                    "rendered output cut at the limit of 20 bytes; the newest history message was cut"
                ),
            ]
        );
    }

    #[test]
    fn history_the_limit_removes_counts_as_dropped() {
        // The fixed message fills the limit: neither history item is sent.
        let mut list = vec![
            fixed("0123456789 abcdefghi"),
            history(&["old"]),
            history(&["newest"]),
        ];
        let (diags, tokens) = words(1000).apply(&mut list, "", 20);
        assert_eq!(texts(&list), ["0123456789 abcdefghi"]);
        assert_eq!(tokens, Some(3 + 7));
        assert_eq!(
            messages(&diags),
            [
                (
                    DiagnosticKind::HistoryTrimmed,
                    "dropped 2 of 2 history items"
                ),
                (
                    DiagnosticKind::LimitReached,
                    "rendered output cut at the limit of 20 bytes; the newest history message was dropped"
                ),
            ]
        );
        // A cut inside the fixed message: the same, and the fixed text counts as cut.
        let mut list = vec![fixed("0123456789 abcdefghi xyz"), history(&["newest"])];
        let (diags, tokens) = words(1000).apply(&mut list, "", 20);
        assert_eq!(texts(&list), ["0123456789 abcdefghi"]);
        assert_eq!(tokens, Some(3 + 7));
        assert_eq!(diags[0].message, "dropped 1 of 1 history items");
    }

    #[test]
    fn the_overflow_reports_what_is_sent() {
        // Before the cut the prompt needs 3 + 7 + 8 = 18; the limit leaves "newe" (3 + 7 + 6).
        let mut list = vec![fixed("0123456789 abcde"), history(&["newest", " two"])];
        let (diags, tokens) = words(5).apply(&mut list, "", 20);
        assert_eq!(tokens, Some(16));
        assert_eq!(
            diags[0].message,
            "prompt needs 16 tokens, 5 available; dropped 0 of 1 history items"
        );
        // An item cut to nothing (its first part empty) is not sent: dropped.
        let mut list = vec![fixed("0123456789 abcdefghi"), history(&["", "x"])];
        let (diags, tokens) = words(1000).apply(&mut list, "", 20);
        assert_eq!(tokens, Some(10));
        assert_eq!(diags[0].message, "dropped 1 of 1 history items");
        assert!(
            diags[1]
                .message
                .ends_with("the newest history message was dropped")
        );
    }

    #[test]
    fn without_a_budget_the_limit_still_names_the_newest_item() {
        let mut list = vec![fixed("0123456789"), history(&["a"]), history(&["newest"])];
        let (diags, tokens) = Budget::default().apply(&mut list, "", 12);
        assert_eq!(
            (texts(&list), tokens),
            (vec!["0123456789".into(), "a".into(), "n".into()], None)
        );
        assert_eq!(
            messages(&diags),
            [(
                DiagnosticKind::LimitReached,
                "rendered output cut at the limit of 12 bytes; the newest history message was cut"
            )]
        );
        // A cut before any history says nothing about history.
        let mut list = vec![fixed("0123456789"), fixed("more")];
        let (diags, _) = Budget::default().apply(&mut list, "", 12);
        assert_eq!(
            diags[0].message,
            "rendered output cut at the limit of 12 bytes"
        );
    }

    #[test]
    fn a_cut_after_an_empty_part_leaves_no_empty_message() {
        // An empty history item with a merged injection, cut where the injection starts.
        let mut list = vec![fixed("0123456789"), history(&["", "\n[System: note]"])];
        let (diags, _) = Budget::default().apply(&mut list, "", 10);
        assert_eq!(texts(&list), ["0123456789"]);
        assert!(
            diags[0]
                .message
                .ends_with("the newest history message was dropped")
        );
        // Some text before the cut keeps the message, cut.
        let mut list = vec![fixed("0123456789"), history(&["ab", "\n[System: note]"])];
        Budget::default().apply(&mut list, "", 12);
        assert_eq!(texts(&list), ["0123456789", "ab"]);
    }

    /// The walk with upper bounds (o200k, cached) decides exactly as the exact walk (the same
    /// vocabulary as a host counter, which gets no bounds), reports the same diagnostics and,
    /// when asked, the same tokens; on lists and budgets where the switch to exact counting
    /// falls anywhere in the walk, with and without the output limit cutting.
    #[cfg(feature = "tiktoken")]
    #[test]
    fn bounds_decide_exactly_as_counts() {
        let exact = Counter::Custom(Counter::Builtin(Tokenizer::O200k).resolve("").counter);
        let words = [
            "Alice:",
            "the",
            "shrine",
            "雨",
            "  ",
            "\n",
            "!!",
            "12345",
            "é",
            "\n[System: x]",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for case in 0..300 {
            let texts: Vec<Vec<String>> = (0..1 + next(8))
                .map(|_| {
                    (0..1 + next(2))
                        .map(|_| (0..next(6)).map(|_| words[next(words.len())]).collect())
                        .collect()
                })
                .collect();
            let list: Vec<Message<'_>> = texts
                .iter()
                .map(|parts| {
                    let source = if next(3) == 0 {
                        Source::Node("n".into())
                    } else {
                        Source::Tag(Some(Tag::DialogueHistory))
                    };
                    let role = [Role::System, Role::User, Role::Model][next(3)];
                    Message::with_parts(role, parts.iter().map(String::as_str), source)
                })
                .collect();
            let full = Budget::tokens(u32::MAX)
                .with_counter(exact.clone())
                .apply(&mut list.clone(), "", usize::MAX)
                .1
                .unwrap_or(0);
            let bytes: usize = list.iter().map(|m| m.len()).sum();
            let max = next(full as usize + 8) as u32;
            let limit = if next(3) == 0 {
                next(bytes + 2)
            } else {
                usize::MAX
            };
            let reserve = next(4) as u32;
            let mut a = list.clone();
            let (da, ta) = Budget::tokens(max)
                .with_reserve(reserve)
                .with_counter(exact.clone())
                .apply(&mut a, "", limit);
            let mut b = list.clone();
            let (db, tb) = Budget::tokens(max)
                .with_reserve(reserve)
                .with_counter(Counter::Builtin(Tokenizer::O200k))
                .apply_lazy(&mut b, "", limit, None);
            assert_eq!(a, b, "case {case}");
            assert_eq!(messages(&da), messages(&db), "case {case}");
            assert_eq!(ta, tb.map(|t| t.get(&b)), "case {case}");
        }
    }

    /// Within the budget a walk under tiktoken counts nothing new: the bounds decide, and the
    /// tokens are counted when asked (then the texts are in the cache). A budget that the
    /// bounds exceed counts what it keeps, not what it drops.
    #[cfg(feature = "tiktoken")]
    #[test]
    fn bounds_spare_counting_until_the_tokens_are_asked_for() {
        let o200k = Counter::Builtin(Tokenizer::O200k);
        let resolved = o200k.resolve("");
        let unique = format!("{:?}", std::time::Instant::now());
        let texts: Vec<String> = (0..4).map(|i| format!("{unique} message {i}")).collect();
        let list = || -> Vec<Message<'_>> { texts.iter().map(|t| history(&[t])).collect() };
        let cached = |i: usize| resolved.cached(&[texts[i].as_str().into()]);
        let mut sent = list();
        let (_, tokens) = Budget::tokens(1_000_000)
            .with_counter(o200k.clone())
            .apply_lazy(&mut sent, "", usize::MAX, None);
        assert!((0..4).all(|i| !cached(i)));
        let tokens = tokens.map(|t| t.get(&sent));
        assert!((0..4).all(cached));
        assert_eq!(
            tokens,
            Budget::tokens(1_000_000)
                .with_counter(o200k.clone())
                .apply(&mut list(), "", usize::MAX)
                .1
        );
        // Room for the two newest by count, not by bounds: the walk turns exact at the second
        // newest; the third is counted to be dropped; the oldest is never counted.
        let texts: Vec<String> = (0..4).map(|i| format!("{unique} again {i}")).collect();
        // Counted here: the newest, which the walk counts anyway.
        let each = Costs::new(&resolved, None).exact(&history(&[&texts[3]]));
        let mut sent: Vec<Message<'_>> = texts.iter().map(|t| history(&[t])).collect();
        let (diags, _) = Budget::tokens(3 + 2 * each as u32 + 1)
            .with_counter(o200k)
            .apply_lazy(&mut sent, "", usize::MAX, None);
        assert_eq!(diags[0].message, "dropped 2 of 4 history items");
        let cached = |i: usize| resolved.cached(&[texts[i].as_str().into()]);
        assert_eq!(
            (0..4).map(cached).collect::<Vec<_>>(),
            [false, true, true, true]
        );
    }
}
