//! World Info in a render (SPEC §15.7, §16 steps 3–4): activation on the history as the prompt
//! pass left it, each entry's content through the `WORLD_INFO` scripts, and the result as
//! context items the assembler places like the host's own: before/after lore in front of the
//! host's items of that tag, examples around the host's samples, and the engine's tail items
//! (the Author's Note fallback, then the depth groups) after every host item.
//!
//! The items are added to a copy of the context, so the assembler needs no second source of
//! items; their text is final (marked as prompt-pass output), so no host pass runs on it.

use std::sync::Arc;

use super::{SeededRandom, WiInput, WiMessage};
use crate::context::{Context, ContextItem, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::lore::{LoreInput, WiState};
use crate::passes::{ItemText, Permission, Scripts};
use crate::role::Role;

/// Every draw the same number (`random: {"constant": X}`, SPEC §17.3.1).
struct Constant(f64);

impl super::WiRandom for Constant {
    fn draw(&mut self) -> f64 {
        self.0
    }
}

/// A render's context with its lore placed.
pub(crate) struct Placed {
    pub ctx: Context,
    /// The prompt pass's results for `ctx.items` (lore items carry their final text).
    pub regexed: Vec<Option<ItemText>>,
    pub state: WiState,
    /// The entries activated (`BOOK.UID`), in activation order.
    pub activated: Vec<String>,
}

/// Activates `lore` for `ctx` and places the result.
/// The activation of a render or of [`WiResult::for_context`]: the books' import notes go to
/// `diagnostics`; the history is the prompt pass's (`regexed`, by item) where it changed.
fn run_for(
    ctx: &Context,
    lore: &LoreInput,
    regexed: &[Option<ItemText>],
    available: Option<u64>,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<super::Activated>, WiState, Vec<Diagnostic>) {
    for b in &lore.books {
        diagnostics.extend_from_slice(b.diagnostics());
    }
    let history_text = |i: usize| match regexed.get(i) {
        Some(Some(ItemText::Text(t))) => Some(t.clone()),
        _ => None,
    };
    let texts: Vec<(usize, Option<Arc<str>>)> = ctx
        .items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.tag == Some(Tag::DialogueHistory))
        .map(|(i, _)| (i, history_text(i)))
        .collect();
    let mut input = WiInput::new(ctx);
    input.history = input
        .history
        .iter()
        .zip(&texts)
        .map(|(m, (_, t))| WiMessage {
            name: m.name,
            text: t.as_deref().unwrap_or(m.text),
        })
        .collect();
    input.position = lore.position;
    input.generation_type = lore.generation_type;
    input.dry_run = lore.dry_run;
    // The budget's context: the render's history budget (§12.4's `available`) when there is
    // one, else SillyTavern's default (SPEC §15.4).
    input.max_context = available;
    let position = input.position.unwrap_or(input.history.len() as u64);
    let mut seeded = SeededRandom::new(ctx.seed, position);
    let mut constant = Constant(ctx.options.random.unwrap_or_default());
    let random: &mut dyn super::WiRandom = match ctx.options.random {
        Some(_) => &mut constant,
        None => &mut seeded,
    };
    // Through the count cache: the entries a turn activates are mostly last turn's.
    let counter = crate::tokens::Cached(ctx.options.budget.counter.resolve(&ctx.model));
    let limits = ctx.options.limits.clamped();
    super::run(
        &lore.books,
        &input,
        &lore.settings,
        &lore.state,
        random,
        &counter,
        &limits,
    )
}

/// Activates `lore` for `ctx` and places each entry's text by position (`WiResult`), through
/// the `WORLD_INFO` scripts when they run (`scripts`: a preset's, and who lets them run; none
/// for a lone template); the state is in the result. Both layouts read it.
pub(crate) fn activate_for(
    ctx: &Context,
    lore: &LoreInput,
    regexed: &[Option<ItemText>],
    scripts: Option<(&Scripts, Permission)>,
    available: Option<u64>,
    diagnostics: &mut Vec<Diagnostic>,
) -> super::WiResult {
    let (activated, state, mut notes) = run_for(ctx, lore, regexed, available, diagnostics);
    // One `WORLD_INFO` pass over every entry (SPEC §15.7): they share its step total and work
    // budget. Placed text stops at the render's output limit, which no more lore could reach.
    let mut pass = scripts
        .filter(|(s, p)| s.any_allowed(*p))
        .map(|(s, p)| s.lore_pass(ctx, p));
    let cap = ctx.options.limits.clamped().output_bytes;
    let mut placed_bytes = 0usize;
    let mut over = false;
    let mut result = super::place(
        activated,
        |a| {
            if over {
                return None;
            }
            let text = match pass.as_mut() {
                None => a.content.clone(),
                Some(pass) => {
                    let depth =
                        (a.position == 4).then(|| u32::try_from(a.depth).unwrap_or(u32::MAX));
                    pass.text(&a.content, depth)
                }
            };
            placed_bytes = placed_bytes.saturating_add(text.len());
            if placed_bytes > cap {
                over = true;
                return None;
            }
            Some(text)
        },
        &mut notes,
    );
    if let Some(pass) = pass {
        notes.extend(pass.finish());
    }
    if over {
        notes.push(Diagnostic::new(
            crate::diagnostic::DiagnosticKind::LoreLimit,
            None,
            format!("World Info: lore past the output limit of {cap} bytes is not placed"),
        ));
    }
    diagnostics.append(&mut notes);
    result.state = state;
    result
}

pub(crate) fn place(
    ctx: &Context,
    lore: &LoreInput,
    regexed: &[Option<ItemText>],
    scripts: Option<(&Scripts, Permission)>,
    available: Option<u64>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Placed {
    let mut result = activate_for(ctx, lore, regexed, scripts, available, diagnostics);
    let state = std::mem::take(&mut result.state);
    let activated = std::mem::take(&mut result.activated);
    let item = |tag: Tag, text: String, depth: Option<i64>| {
        let mut it = ContextItem::new(Some(tag), Role::System, text);
        it.depth = depth;
        it
    };
    let mut front = Vec::new();
    let mut back = Vec::new();
    if !result.before.is_empty() {
        front.push(item(Tag::KnowledgeLorebookBefore, result.before, None));
    }
    if !result.after.is_empty() {
        front.push(item(Tag::KnowledgeLorebookAfter, result.after, None));
    }
    for ex in &result.examples {
        let blocks = crate::lore::card::parse_mes_examples(&ex.text);
        let to = if ex.position == "top" {
            &mut front
        } else {
            &mut back
        };
        to.extend(
            blocks
                .into_iter()
                .map(|b| item(Tag::DialogueSample, b, None)),
        );
    }
    // Bottom examples follow the host's samples; the tail items go after them.
    let an: Vec<&str> = result
        .an_top
        .iter()
        .chain(&result.an_bottom)
        .map(String::as_str)
        .collect();
    if !an.is_empty() {
        back.push(item(Tag::KnowledgeLoreActivated, an.join("\n"), Some(4)));
        diagnostics.push(Diagnostic::new(
            DiagnosticKind::LoreAuthorsNoteFallback,
            None,
            "Author's Note lore is placed at depth 4: stpreset has no Author's Note",
        ));
    }
    // Then the card's depth prompt (SPEC §16 step 4), then the depth groups.
    if let Some(dp) = &ctx.char_depth_prompt {
        let depth = i64::try_from(dp.depth).unwrap_or(i64::MAX);
        back.push(item(
            Tag::KnowledgeLoreActivated,
            // Card text is host text (SPEC §15.2, §2.3.2): its identity placeholders are
            // converted here, since tail items carry final text that no host pass reads.
            crate::identity::convert_identities(&dp.text, &ctx.user, &ctx.char).into_owned(),
            Some(depth),
        ));
    }
    // A quiet generation with `quiet_skip_wi` leaves out World Info at depth and the outlets
    // (ST's `skipWIAN`, SPEC §18.1); the rest of the lore stays.
    let skip_wi = lore.generation_type == crate::lore::GenerationType::Quiet
        && ctx.user_settings.quiet_skip_wi;
    if !skip_wi {
        for g in result.depth {
            let depth = i64::try_from(g.depth).unwrap_or(i64::MAX);
            back.push(item(Tag::KnowledgeLoreActivated, g.text, Some(depth)));
        }
    }
    let mut placed = ctx.clone();
    placed.lore = None;
    placed.placed_generation = lore.generation_type;
    if !skip_wi {
        placed.outlets = result.outlets;
    }
    let (n_front, n_back) = (front.len(), back.len());
    let old = std::mem::take(&mut placed.items);
    placed.items = front;
    placed.items.extend(old);
    placed.items.extend(back);
    let final_text = |it: &ContextItem| Some(ItemText::Text(Arc::from(it.text.as_str())));
    let mut all = Vec::with_capacity(placed.items.len());
    all.extend(placed.items[..n_front].iter().map(final_text));
    all.extend((0..ctx.items.len()).map(|i| regexed.get(i).cloned().flatten()));
    all.extend(
        placed.items[placed.items.len() - n_back..]
            .iter()
            .map(final_text),
    );
    Placed {
        ctx: placed,
        regexed: all,
        state,
        activated,
    }
}

impl crate::lore::Card {
    /// Puts the card into a context (SPEC §15.2, §16 step 1): its values fill the fields the
    /// context leaves empty, with one item each for description, personality and example
    /// block unless the host has items of that tag; its depth prompt becomes a tail item;
    /// its book joins the context's lore (source `character`).
    ///
    /// ```
    /// use stpreset::{Card, lore::CardFormat, Context, Limits};
    /// let card = Card::from_bytes(br#"{"name": "Sera", "description": "A healer."}"#, CardFormat::Json, &Limits::default()).unwrap();
    /// let mut ctx = Context::default();
    /// card.apply_to(&mut ctx);
    /// assert_eq!((ctx.char.as_str(), ctx.description.as_str()), ("Sera", "A healer."));
    /// ```
    pub fn apply_to(&self, ctx: &mut Context) {
        let has = |ctx: &Context, tag: Tag| ctx.items.iter().any(|i| i.tag == Some(tag));
        let fill = |slot: &mut String, value: &str| {
            let empty = slot.is_empty();
            if empty {
                value.clone_into(slot);
            }
            empty && !value.is_empty()
        };
        fill(&mut ctx.char, &self.name);
        let mut items = Vec::new();
        if fill(&mut ctx.description, &self.description) && !has(ctx, Tag::SystemPersonaPrompt) {
            items.push(ContextItem::new(
                Some(Tag::SystemPersonaPrompt),
                Role::System,
                self.description.clone(),
            ));
        }
        if fill(&mut ctx.personality, &self.personality) && !has(ctx, Tag::SystemPersonality) {
            items.push(ContextItem::new(
                Some(Tag::SystemPersonality),
                Role::System,
                self.personality.clone(),
            ));
        }
        fill(&mut ctx.scenario, &self.scenario);
        if fill(&mut ctx.mes_examples_raw, &self.mes_examples_raw) {
            fill(&mut ctx.mes_examples, &self.samples.join("\n"));
            if !has(ctx, Tag::DialogueSample) {
                items.extend(
                    self.samples.iter().map(|s| {
                        ContextItem::new(Some(Tag::DialogueSample), Role::System, s.clone())
                    }),
                );
            }
        }
        fill(&mut ctx.char_prompt, &self.char_prompt);
        fill(&mut ctx.char_instruction, &self.char_instruction);
        fill(&mut ctx.char_version, &self.char_version);
        if ctx.char_depth_prompt.is_none() {
            ctx.char_depth_prompt.clone_from(&self.depth_prompt);
        }
        if ctx.first_mes.is_empty() {
            ctx.first_mes.clone_from(&self.first_mes);
        }
        fill(&mut ctx.creator_notes, &self.creator_notes);
        // The card's regex scripts, read as a preset's are; they run when the context allows
        // them (`allow_char_regex`).
        if ctx.char_regex_scripts.is_empty()
            && let Some(raw) = self
                .regex_scripts()
                .and_then(|v| serde_json::value::to_raw_value(&v).ok())
        {
            let (list, mut notes) =
                crate::scripts::read_list(&raw, crate::scripts::ScriptSource::Character);
            ctx.char_regex_scripts = list;
            ctx.regex_notes.append(&mut notes);
        }
        if ctx.alternate_greetings.is_empty() {
            ctx.alternate_greetings
                .clone_from(&self.alternate_greetings);
        }
        // Card items go before the host's own (they are the character's definition).
        let host = std::mem::take(&mut ctx.items);
        ctx.items = items;
        ctx.items.extend(host);
        if let Some(book) = &self.book {
            ctx.lore
                .get_or_insert_with(LoreInput::default)
                .books
                .push(book.clone());
        }
    }
}

impl super::WiResult {
    /// The activation a render of `ctx` would place (its `lore`; none: nothing activates),
    /// without the render and without regex scripts: what `stpreset lore` prints. The books'
    /// import notes come first in `diagnostics`.
    ///
    /// ```
    /// let ctx = stpreset::Context::from_json(br#"{"position": 1,
    ///     "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain"}],
    ///     "lorebooks": [{"name": "w", "entries": {"0": {"key": ["rain"], "content": "Wet."}}}]}"#).unwrap();
    /// let out = stpreset::activation::WiResult::for_context(&ctx);
    /// assert_eq!(out.before, "Wet.");
    /// assert!(out.to_json().starts_with(r#"{"activated":["w.0"],"before":"Wet.""#));
    /// ```
    pub fn for_context(ctx: &Context) -> super::WiResult {
        // Borrowed: a clone copied every book (45 MB of a 16 MB book's 80 MB peak).
        let none = LoreInput::default();
        let lore = ctx.lore.as_ref().unwrap_or(&none);
        let mut diagnostics = Vec::new();
        // A lone context has no preset settings: its window is the host's (SPEC §15.4).
        let available = crate::settings::resolve::Resolution::new(
            None,
            &ctx.preset_settings,
            &ctx.provider_options,
            &ctx.model,
            &ctx.options.budget,
        )
        .available();
        let ((activated, state, mut notes), note) =
            crate::work::render(&ctx.options.limits, || {
                run_for(ctx, lore, &[], available, &mut diagnostics)
            });
        notes.extend(note);
        let mut out = super::place(activated, |a| Some(a.content.clone()), &mut notes);
        diagnostics.append(&mut notes);
        out.state = state;
        out.diagnostics = diagnostics;
        out
    }

    /// The JSON document (SPEC §15.7's key order).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl crate::lore::Card {
    /// The context-file fields [`apply_to`](Self::apply_to) fills in an empty context, with
    /// the card's book as `lorebooks`, keys in byte order: a host that builds context files
    /// merges them under its own values (and the `items` of
    /// [`to_json_document`](Self::to_json_document) before its own items).
    pub fn context_values(&self) -> serde_json::Value {
        let mut ctx = Context::default();
        self.apply_to(&mut ctx);
        let mut values = serde_json::json!({
            "alternate_greetings": ctx.alternate_greetings, "char": ctx.char,
            "char_instruction": ctx.char_instruction, "char_prompt": ctx.char_prompt,
            "char_version": ctx.char_version, "description": ctx.description,
            "creator_notes": ctx.creator_notes, "first_mes": ctx.first_mes,
            "char_regex_scripts": self.regex_scripts(),
            "char_depth_prompt": ctx.char_depth_prompt.as_ref().map(|d| serde_json::json!({
                "depth": d.depth, "role": d.role, "text": d.text})),
            "mes_examples": ctx.mes_examples,
            "mes_examples_raw": ctx.mes_examples_raw, "personality": ctx.personality,
            "scenario": ctx.scenario,
        });
        // The card's book as a context file's `lorebooks` entry (World Info form, keyed by
        // uid), so a host that merges these values into its context gets the book too.
        if let Some(book) = &self.book {
            let entries: serde_json::Map<String, serde_json::Value> = book
                .entries
                .iter()
                .map(|e| {
                    (
                        e.uid.to_string(),
                        serde_json::to_value(e).unwrap_or_default(),
                    )
                })
                .collect();
            values["lorebooks"] = serde_json::json!([
                {"entries": entries, "name": book.name(), "source": "character"}
            ]);
        }
        values
    }

    /// `{"card", "context", "diagnostics", "items"}` (what `stpreset card --format json`
    /// prints, SPEC §15.9): `card` in §15.2's order, the rest with keys in byte order; `items`
    /// are the context items [`apply_to`](Self::apply_to) adds.
    ///
    /// ```
    /// use stpreset::{Card, lore::CardFormat, Limits};
    /// let card = Card::from_bytes(br#"{"name": "Sera", "personality": "kind"}"#, CardFormat::Json, &Limits::default()).unwrap();
    /// let doc = card.to_json_document();
    /// assert!(doc.starts_with(r#"{"card":{"name":"Sera","#));
    /// assert!(doc.contains(r#""items":[{"depth":null,"role":"system","tag":"SYSTEM_PERSONALITY","text":"kind"}]"#));
    /// ```
    pub fn to_json_document(&self) -> String {
        let mut ctx = Context::default();
        self.apply_to(&mut ctx);
        let items: Vec<serde_json::Value> = ctx
            .items
            .iter()
            .map(|i| serde_json::json!({"depth": i.depth, "role": i.role, "tag": i.tag, "text": i.text}))
            .collect();
        let card = serde_json::to_string(self).unwrap_or_default();
        let rest = |v: &serde_json::Value| serde_json::to_string(v).unwrap_or_default();
        let diagnostics = serde_json::to_value(self.diagnostics()).unwrap_or_default();
        format!(
            r#"{{"card":{card},"context":{},"diagnostics":{},"items":{}}}"#,
            rest(&self.context_values()),
            rest(&diagnostics),
            rest(&serde_json::Value::Array(items))
        )
    }
}
