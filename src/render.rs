//! The render pipeline (SPEC §2, §4), one path for a lone template and for a compiled preset:
//! compiled nodes → evaluation (two passes, host passes, finishing) → assembly (place → inject
//! → limit) → output. `Template` and `CompiledPreset` only hold what they compiled; every
//! setting comes from the context's [`RenderOptions`](crate::RenderOptions).

use std::collections::BTreeMap;

use crate::assemble::{self, Extras, Message, Plan, PromptTokens, Turn};
use crate::context::{Context, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::eval::{self, EvalNode, Expanded};
use crate::identity::convert_identities;
use crate::limits::OutputBudget;
pub(crate) use crate::node::CompiledNode;
use crate::options::Budget;
use crate::passes::Scripts;
use crate::provider::{self, ChatMessage, Names, ProviderOptions, Tri};
use crate::settings::resolve::{self, EffectiveOptions, Resolution};
use crate::settings::{PresetSettings, PresetSettingsUse, TEMPLATES};
use crate::tokens::Known;

/// The result of rendering a preset. Its messages borrow the context's text where they pass
/// it through unchanged (chat history, most host items); [`Rendered::into_owned`] detaches it.
///
/// Serialized by hand (`json.rs`: `prompt_tokens` is counted when written); a new field goes
/// there too.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Rendered<'c> {
    /// The ordered messages for the model provider.
    pub messages: Vec<Message<'c>>,
    /// Import, parse, pass-1, pass-2 and assembly diagnostics, in that order.
    pub diagnostics: Vec<Diagnostic>,
    /// Local variables after the render.
    pub variables: BTreeMap<String, String>,
    /// Global variables after the render.
    pub globals: BTreeMap<String, String>,
    /// The prompt's tokens ([`Rendered::prompt_tokens`]), counted when first asked for.
    pub(crate) tokens: Option<PromptTokens<'c>>,
    /// Who speaks and which model, for provider requests.
    pub(crate) speakers: Speakers<'c>,
    /// The preset's settings as request options (SPEC §14.5), for `to_request`.
    pub(crate) preset_options: ProviderOptions,
    /// The §12 options the render used (SPEC §14.3), JSON `"effective"`.
    pub(crate) effective: EffectiveOptions,
    /// The World Info state after the render's activation (SPEC §15.9), when it had lore.
    pub(crate) wi_state: Option<crate::lore::WiState>,
    /// The World Info entries the render's activation gave (`BOOK.UID`), in activation order.
    pub(crate) activated: Box<[String]>,
    /// What the SillyTavern layout's request needs beside the messages (SPEC §17); `None` in
    /// the seed layout.
    pub(crate) st: Option<Box<crate::sillytavern::StExtra>>,
    /// The seed layout's message names when the host sets `names_behavior` 1 (SPEC §18.2);
    /// `None` otherwise (the SillyTavern layout keeps its names in `st`).
    pub(crate) names: Option<Box<[Option<String>]>>,
}

/// The context's names and model, as a request needs them.
#[derive(Debug, Clone)]
pub(crate) struct Speakers<'c> {
    user: std::borrow::Cow<'c, str>,
    char: std::borrow::Cow<'c, str>,
    group: std::borrow::Cow<'c, [String]>,
    model: std::borrow::Cow<'c, str>,
}

impl<'c> Speakers<'c> {
    fn of(ctx: &'c Context) -> Self {
        Speakers {
            user: ctx.user.as_str().into(),
            char: ctx.char.as_str().into(),
            group: ctx.group.as_slice().into(),
            model: ctx.model.as_str().into(),
        }
    }

    fn into_owned(self) -> Speakers<'static> {
        Speakers {
            user: self.user.into_owned().into(),
            char: self.char.into_owned().into(),
            group: self.group.into_owned().into(),
            model: self.model.into_owned().into(),
        }
    }
}

/// The result of rendering one template.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Expansion {
    /// The finished text (empty when the template produced only whitespace).
    pub text: String,
    /// Parse, pass-1 and pass-2 diagnostics, in that order.
    pub diagnostics: Vec<Diagnostic>,
    /// Local variables after the render.
    pub variables: BTreeMap<String, String>,
    /// Global variables after the render (the host's, plus what the template set).
    pub globals: BTreeMap<String, String>,
    /// Host values the text expanded (non-empty, in body text that survived the host pass).
    pub expanded: Expanded,
}

/// Renders one template as a lone node (no assembly); the output limit cuts its text. The
/// whole render spends one work budget (`crate::work`).
pub(crate) fn template(node: &CompiledNode, ctx: &Context) -> Expansion {
    let (mut out, note) = crate::work::render(&ctx.options.limits, || template_within(node, ctx));
    out.diagnostics.extend(note);
    out
}

fn template_within(node: &CompiledNode, ctx: &Context) -> Expansion {
    // A context with lore activates it first, so `{{outlet::NAME}}` works (SPEC §16: `expand`
    // runs §15 but never §13).
    if ctx.lore.is_some() || ctx.char_depth_prompt.is_some() {
        let none = crate::lore::LoreInput::default();
        let lore = ctx.lore.as_ref().unwrap_or(&none);
        let mut notes = Vec::new();
        let available = resolution(None, ctx).available();
        let placed = crate::activation::items::place(ctx, lore, &[], None, available, &mut notes);
        // The placed context keeps the card's depth prompt (`{{charDepthPrompt}}` reads it):
        // it is expanded as it is, not placed again.
        let mut out = expand_placed(node, &placed.ctx);
        notes.append(&mut out.diagnostics);
        out.diagnostics = notes;
        return out;
    }
    expand_placed(node, ctx)
}

/// [`template_within`] once the lore is placed.
fn expand_placed(node: &CompiledNode, ctx: &Context) -> Expansion {
    let mut ev = eval::evaluate(std::slice::from_ref(&node.eval()), ctx, None);
    if let Some(note) = ctx.surrogate_note() {
        ev.diagnostics.insert(0, note);
    }
    let mut text = ev.texts.pop().unwrap_or_default();
    let cap = ctx.options.limits.clamped().output_bytes;
    if !OutputBudget::new(cap).spend(&mut text) {
        ev.diagnostics.push(Diagnostic::new(
            DiagnosticKind::LimitReached,
            Some(&node.id),
            format!("output cut at the limit of {cap} bytes"),
        ));
    }
    Expansion {
        text,
        diagnostics: ev.diagnostics,
        variables: ev.variables,
        globals: ev.globals,
        expanded: ev.expanded,
    }
}

/// What a compiled preset renders: its nodes, plan and import diagnostics, its settings and
/// their compiled templates (SPEC §14.6, in table order).
pub(crate) struct PresetParts<'p> {
    pub nodes: &'p [CompiledNode],
    pub plan: &'p Plan,
    pub import: &'p [Diagnostic],
    pub settings: &'p PresetSettings,
    pub templates: &'p [CompiledNode],
    pub scripts: &'p Scripts,
    /// Who lets the preset's regex scripts run (SPEC §13.6.1).
    pub regex: crate::passes::Permission,
    /// The prompt list SillyTavern reads (SPEC §17.1.2), when the context asks for its layout.
    pub st_plan: Option<&'p crate::sillytavern::StPlan>,
}

/// Renders a compiled preset: its evaluated nodes in order, then its setting templates, then
/// its assembly plan (whose text indices point into `nodes`). `known`: a chat's remembered
/// token counts of `ctx`'s items. The whole render spends one work budget (`crate::work`).
pub(crate) fn preset<'c>(
    parts: &PresetParts<'_>,
    ctx: &'c Context,
    known: Option<Known<'c>>,
) -> Rendered<'c> {
    let (mut out, note) =
        crate::work::render(&ctx.options.limits, || preset_within(parts, ctx, known));
    out.diagnostics.extend(note);
    out
}

fn preset_within<'c>(
    parts: &PresetParts<'_>,
    ctx: &'c Context,
    known: Option<Known<'c>>,
) -> Rendered<'c> {
    // The settings are resolved once per render (SPEC §14.3–§14.5) and passed down.
    let mut res = resolution(Some(parts.settings), ctx);
    // The one place the layout is chosen (SPEC §17.1).
    if let Some(plan) = parts.st_plan {
        let inputs = crate::sillytavern::Inputs {
            import: parts.import,
            scripts: parts.scripts,
            regex: parts.regex,
        };
        let out = crate::sillytavern::render(&inputs, plan, &mut res, ctx, known);
        return finish_layout(res, ctx, out);
    }
    // A swipe builds from the chat without the reply it replaces (SPEC §18.1), from a copy.
    match ctx.swipe_copy() {
        Ok(Some(copy)) => preset_seed(parts, res, &copy, None).into_owned(),
        Ok(None) => preset_seed(parts, res, ctx, known),
        Err(note) => {
            let mut out = preset_seed(parts, res, ctx, known);
            out.diagnostics.push(note);
            out
        }
    }
}

/// The seed layout's render, its lore placed first.
fn preset_seed<'c>(
    parts: &PresetParts<'_>,
    res: Resolution<'_>,
    ctx: &'c Context,
    known: Option<Known<'c>>,
) -> Rendered<'c> {
    if ctx.lore.is_some() || ctx.char_depth_prompt.is_some() {
        // Rendered from a copy of the context, whose texts are not the chat's items.
        return with_lore(parts, res, ctx);
    }
    render_preset(parts, res, ctx, None, known)
}

/// SPEC §16 steps 2–4: the prompt pass on the host's items, activation on the history it
/// left, and the lore placed into a copy of the context that the rest of the render reads.
/// The result owns its text (the copy does not outlive the call).
fn with_lore(parts: &PresetParts<'_>, res: Resolution<'_>, ctx: &Context) -> Rendered<'static> {
    let none = crate::lore::LoreInput::default();
    let lore = ctx.lore.as_ref().unwrap_or(&none);
    let mut early = Vec::new();
    let regexed = parts
        .scripts
        .prompt_items(ctx, parts.regex, false, &mut early);
    // The lore budget's context is the render's history budget, §12.4's `available` (SPEC
    // §15.4), after the preset's settings.
    let available = res.available();
    let placed = crate::activation::items::place(
        ctx,
        lore,
        &regexed,
        Some((parts.scripts, parts.regex)),
        available,
        &mut early,
    );
    let mut out =
        render_preset(parts, res, &placed.ctx, Some((placed.regexed, early)), None).into_owned();
    // A render with a card's depth prompt but no lore has no state to keep.
    out.wi_state = ctx.lore.is_some().then_some(placed.state);
    out.activated = placed.activated.into();
    out
}

/// The render after the prompt pass; `early` is the pass's result and its diagnostics when a
/// caller ran it already.
fn render_preset<'c>(
    parts: &PresetParts<'_>,
    mut res: Resolution<'_>,
    ctx: &'c Context,
    early: Option<(Vec<Option<crate::passes::ItemText>>, Vec<Diagnostic>)>,
    known: Option<Known<'c>>,
) -> Rendered<'c> {
    // Which settings apply (SPEC §14.3, resolved once); an edited template is compiled for
    // this render.
    let settings = res.settings();
    let edits = match &ctx.preset_settings {
        PresetSettingsUse::Edit(edit) => edit.0.as_slice(),
        _ => &[],
    };
    let limits = ctx.options.limits.clamped();
    let fresh: Vec<CompiledNode> = edits
        .iter()
        .filter_map(|(key, _)| CompiledNode::setting(key, settings?.template(key), &limits))
        .collect();
    let templates: Vec<&CompiledNode> = match settings {
        None => Vec::new(),
        Some(_) => TEMPLATES
            .iter()
            .filter_map(|key| {
                let from = if edits.iter().any(|(k, _)| k == key) {
                    &fresh
                } else {
                    parts.templates
                };
                from.iter().find(|n| &*n.id == *key)
            })
            .collect(),
    };
    // A personality format's `{{personality}}` is the personality items (SPEC §14.6).
    let personality = templates
        .iter()
        .any(|n| &*n.id == "personality_format")
        .then(|| personality_items(ctx));
    let mut eval_nodes: Vec<EvalNode<'_>> = parts.nodes.iter().map(CompiledNode::eval).collect();
    eval_nodes.extend(templates.iter().map(|n| {
        EvalNode {
            personality: personality
                .as_deref()
                .filter(|_| &*n.id == "personality_format"),
            suppresses: false,
            ..n.eval()
        }
    }));
    let mut diagnostics = Vec::with_capacity(parts.import.len() + 8);
    diagnostics.extend_from_slice(parts.import);
    diagnostics.extend(ctx.surrogate_note());
    // The prompt pass runs on the host's items before anything else reads them (SPEC §16).
    let regexed = match early {
        Some((regexed, notes)) => {
            diagnostics.extend(notes);
            regexed
        }
        None => parts
            .scripts
            .prompt_items(ctx, parts.regex, false, &mut diagnostics),
    };

    let mut ev = eval::evaluate(&eval_nodes, ctx, settings);
    diagnostics.extend(ev.diagnostics);
    if !(ctx.char_prompt.is_empty() && ctx.char_instruction.is_empty()) {
        let ids: Vec<&str> = parts.nodes.iter().map(|n| &*n.id).collect();
        card_prompts(&ids, &mut ev.texts[..parts.nodes.len()], ctx);
    }
    let template_texts = ev.texts.split_off(parts.nodes.len());
    let mut rendered: Vec<(&str, String)> = templates
        .iter()
        .map(|n| &*n.id)
        .zip(template_texts)
        .collect();
    let mut take = |key: &str| {
        rendered
            .iter_mut()
            .find(|(k, _)| *k == key)
            .map(|(_, text)| std::mem::take(text))
    };
    let prompt = |text: Option<String>| text.filter(|t| !t.is_empty());
    let extras = Extras {
        personality_format: take("personality_format"),
        scenario_format: take("scenario_format"),
        wi_format: take("wi_format"),
        new_chat_prompt: prompt(take("new_chat_prompt")),
        new_group_chat_prompt: prompt(take("new_group_chat_prompt")),
        new_example_chat_prompt: prompt(take("new_example_chat_prompt")),
        group_nudge_prompt: prompt(take("group_nudge_prompt")),
        send_if_empty: settings
            .and_then(|s| s.send_if_empty.clone())
            .filter(|s| !s.is_empty()),
        regexed,
        turn: turn(settings, ctx, &mut diagnostics),
    };
    let prefill = prompt(take("assistant_prefill"));
    res.set_prefill(prefill, &ctx.provider_options, &ctx.model);
    diagnostics.extend(res.window_note.take());
    let budget = Budget {
        max_context_tokens: res
            .effective
            .max_context_tokens
            .map_or(Tri::Null, Tri::Value),
        reserve_tokens: Tri::Value(res.effective.reserve_tokens),
        counter: ctx.options.budget.counter.clone(),
    };
    let (messages, tokens) = assemble::assemble(
        parts.plan,
        &mut ev.texts,
        ev.expanded,
        ctx,
        extras,
        (&budget, known),
        &mut diagnostics,
    );
    let names = assemble::message_names(ctx, &messages);
    Rendered {
        messages,
        diagnostics,
        variables: ev.variables,
        globals: ev.globals,
        tokens,
        speakers: Speakers::of(ctx),
        preset_options: res.preset,
        effective: res.effective,
        wi_state: None,
        activated: Box::default(),
        st: None,
        names,
    }
}

/// What the generation type adds at the end of a seed-layout prompt (SPEC §18.1): the
/// continue nudge (with the continued message moved before it), the impersonation prompt or
/// the quiet prompt, each a setting's template (ST's default when the preset has none).
fn turn(settings: Option<&PresetSettings>, ctx: &Context, notes: &mut Vec<Diagnostic>) -> Turn {
    use crate::lore::GenerationType as G;
    use crate::sillytavern::Setting;
    let template = |setting| crate::sillytavern::setting_or_default(settings, setting);
    match ctx.generation_type() {
        G::Continue if !settings.and_then(|s| s.continue_prefill).unwrap_or(false) => {
            let Some(last) = ctx
                .items
                .iter()
                .rfind(|i| i.tag == Some(Tag::DialogueHistory))
            else {
                return Turn::default();
            };
            // `{{lastChatMessage}}` is the continued text, trimmed (ST's `cyclePrompt`).
            let text = crate::eval::with_value(
                "continue_nudge_prompt",
                template(Setting::ContinueNudge),
                "{{lastChatMessage}}",
                crate::jstext::js_trim(&last.text).to_string(),
                ctx,
                false,
            );
            Turn {
                move_last: true,
                prompt: Some((text, "continue_nudge_prompt")),
            }
        }
        G::Impersonate => Turn {
            move_last: false,
            prompt: Some((
                crate::eval::expand_alone(
                    "impersonation_prompt",
                    template(Setting::Impersonation),
                    ctx,
                ),
                "impersonation_prompt",
            )),
        },
        G::Quiet => {
            let quiet = &ctx.user_settings.quiet_prompt;
            if let Some(note) = ctx.quiet_fallback() {
                notes.push(note);
                return Turn::default();
            }
            Turn {
                move_last: false,
                prompt: Some((
                    crate::eval::expand_alone("quiet_prompt", quiet, ctx),
                    "quiet_prompt",
                )),
            }
        }
        _ => Turn::default(),
    }
}

/// A render result around messages another layout built (SPEC §17): the context's names and
/// model, and the options the preset's settings give, with the layout's prefill.
fn finish_layout<'c>(
    mut resolved: Resolution<'_>,
    ctx: &'c Context,
    out: crate::sillytavern::Output<'c>,
) -> Rendered<'c> {
    resolved.preset.assistant_prefill = match out.prefill {
        Some(p) if !p.is_empty() => Tri::Value(p),
        _ => Tri::Null,
    };
    // SPEC §12.4's count of what is sent (the layout's budget is always on unless the host
    // turned it off with `max_context_tokens: null`).
    let budgeted = !matches!(ctx.options.budget.max_context_tokens, Tri::Null);
    Rendered {
        messages: out.messages,
        diagnostics: out.diagnostics,
        variables: out.variables,
        globals: out.globals,
        tokens: budgeted.then(|| PromptTokens::of_list(&ctx.options.budget.counter, &ctx.model)),
        speakers: Speakers::of(ctx).into_owned(),
        preset_options: resolved.preset,
        effective: resolved.effective,
        wi_state: out.wi_state,
        activated: out.activated.into(),
        st: Some(Box::new(out.extra)),
        names: None,
    }
}

/// What a preset's settings and a context make of a request, without rendering the preset
/// (SPEC §14.3–§14.5): the options [`request`](crate::request) takes and the effective §12
/// options. The context's `preset_settings` applies (`false`: the preset contributes nothing;
/// an edit replaces keys). A preset's prefill is used as written (a render renders it first).
///
/// ```
/// use stpreset::{provider::ChatMessage, Context, provider::Names, settings::PresetSettings, Role, provider::request, request_options};
/// let (settings, _) = PresetSettings::from_json(&serde_json::json!({
///     "temperature": 1.5, "openai_max_tokens": 500, "openai_max_context": 8000}));
/// let ctx = Context::from_json(br#"{"model": "claude-3-5-haiku", "provider_options": {"shape": "anthropic"}}"#).unwrap();
/// let (options, effective) = request_options(&settings, &ctx);
/// assert_eq!((effective.max_context_tokens, effective.reserve_tokens), (Some(8000), 500));
/// let (body, _) = request(&[ChatMessage::new(Role::User, "hi")], &options, &Names::default(), &ctx.model);
/// assert_eq!((body["temperature"].as_f64(), body["max_tokens"].as_i64()), (Some(1.0), Some(500)));
/// ```
pub fn request_options(
    settings: &PresetSettings,
    ctx: &Context,
) -> (ProviderOptions, EffectiveOptions) {
    let mut res = resolution(Some(settings), ctx);
    let prefill = res.settings().and_then(|s| s.assistant_prefill.clone());
    res.set_prefill(prefill, &ctx.provider_options, &ctx.model);
    let options = resolve::overlay(&ctx.provider_options, &res.preset, &ctx.model);
    (options, res.effective)
}

/// The render's one resolution of `settings` with `ctx` (SPEC §14.3–§14.5).
fn resolution<'s>(settings: Option<&'s PresetSettings>, ctx: &Context) -> Resolution<'s> {
    Resolution::new(
        settings,
        &ctx.preset_settings,
        &ctx.provider_options,
        &ctx.model,
        &ctx.options.budget,
    )
}

/// SPEC §15.2 "Card prompts": a non-empty `char_prompt` (`char_instruction`) is the text of the
/// enabled `main` (`jailbreak`) node, rendered as a template in which `{{original}}` is the
/// node's own rendered text. `nodes` are the evaluated nodes' identifiers, `texts` their texts.
pub(crate) fn card_prompts(nodes: &[&str], texts: &mut [String], ctx: &Context) {
    for (id, prompt, prefer) in [
        ("main", &ctx.char_prompt, ctx.prefer_char_prompt),
        (
            "jailbreak",
            &ctx.char_instruction,
            ctx.prefer_char_instruction,
        ),
    ] {
        if !prefer || prompt.trim().is_empty() {
            continue;
        }
        let Some(k) = nodes.iter().position(|n| *n == id) else {
            continue;
        };
        let original = std::mem::take(&mut texts[k]);
        texts[k] = eval::with_original(id, prompt, original, ctx, false);
    }
}

/// The `SYSTEM_PERSONALITY` items' texts as placed, joined with `\n`.
fn personality_items(ctx: &Context) -> String {
    let texts: Vec<std::borrow::Cow<'_, str>> = ctx
        .items
        .iter()
        .filter(|i| i.tag == Some(Tag::SystemPersonality))
        .map(|i| convert_identities(&i.text, &ctx.user, &ctx.char))
        .collect();
    texts.join("\n")
}

impl Rendered<'_> {
    /// The same result with every text owned, free of the context it was rendered from (to
    /// keep it after the context is gone, or send it to another thread).
    pub fn into_owned(self) -> Rendered<'static> {
        Rendered {
            messages: self.messages.into_iter().map(Message::into_owned).collect(),
            diagnostics: self.diagnostics,
            variables: self.variables,
            globals: self.globals,
            tokens: self.tokens.map(PromptTokens::into_owned),
            speakers: self.speakers.into_owned(),
            preset_options: self.preset_options,
            effective: self.effective,
            wi_state: self.wi_state,
            activated: self.activated,
            st: self.st,
            names: self.names,
        }
    }

    /// The World Info state to keep for the next turn (SPEC §15.9); `None` when the context
    /// had no lore.
    pub fn wi_state(&self) -> Option<&crate::lore::WiState> {
        self.wi_state.as_ref()
    }

    /// The World Info entries this render activated, as `BOOK.UID` in activation order (what
    /// `stpreset lore` lists as `activated`); empty when the context had no lore.
    pub fn activated_lore(&self) -> &[String] {
        &self.activated
    }

    /// The prompt's tokens under the history budget (SPEC §12.4): 3 + the cost of every
    /// message in [`messages`](Self::messages); `None` without a budget. Counted on the first
    /// call (the budget decides with upper bounds where they suffice; most texts come from the
    /// count cache) and kept, so change `messages` after asking, if at all.
    pub fn prompt_tokens(&self) -> Option<u32> {
        self.tokens.as_ref().map(|t| t.get(&self.messages))
    }

    /// The §12 options this render used, after the preset's settings (SPEC §14.3): squash,
    /// system prompt use, prefill, post-processing and the history budget.
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"openai_max_context": 4095, "openai_max_tokens": 300,
    ///     "squash_system_messages": true, "prompts": [{"identifier": "main", "content": "Hi"}]}"#).unwrap();
    /// let ctx = stpreset::Context::default();
    /// let out = p.compile().render(&ctx);
    /// let e = out.effective_options();
    /// assert_eq!((e.max_context_tokens, e.reserve_tokens, e.squash_system), (Some(4095), 300, true));
    /// ```
    pub fn effective_options(&self) -> &EffectiveOptions {
        &self.effective
    }

    /// The names the request's prefixes use (the rendered context's `user`, `char`, `group`).
    pub(crate) fn names(&self) -> Names {
        Names {
            user: self.speakers.user.to_string(),
            char: self.speakers.char.to_string(),
            group: self.speakers.group.to_vec(),
        }
    }

    /// The `name` of message `i`: the SillyTavern layout's example lines, and history items
    /// in `names_behavior` 1 (SPEC §17.1.3); in the seed layout, history items when the host
    /// sets `names_behavior` 1 (SPEC §18.2), else `None`.
    pub fn message_name(&self, i: usize) -> Option<&str> {
        match &self.st {
            Some(st) => st.names.get(i)?.as_deref(),
            None => self.names.as_ref()?.get(i)?.as_deref(),
        }
    }

    /// How the render document spells `role`: a reply is `assistant` in the SillyTavern
    /// layout (SPEC §17.1.3: the roles ST's client posts) and `model` in the seed layout. A
    /// front end that builds the messages itself (the packages' chat renders) spells them so.
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"}]}"#)
    ///     .unwrap()
    ///     .compile();
    /// let mut ctx = stpreset::Context::default();
    /// assert_eq!(p.render(&ctx).role_spelling(stpreset::Role::Model), "model");
    /// ctx.layout = stpreset::Layout::SillyTavern;
    /// assert_eq!(p.render(&ctx).role_spelling(stpreset::Role::Model), "assistant");
    /// ```
    pub fn role_spelling(&self, role: crate::role::Role) -> &'static str {
        match (role, &self.st) {
            (crate::role::Role::System, _) => "system",
            (crate::role::Role::User, _) => "user",
            (crate::role::Role::Model, None) => "model",
            (crate::role::Role::Model, Some(_)) => "assistant",
        }
    }

    /// The whole provider request body for these messages (SPEC §12.6, §14.4), with the
    /// request's diagnostics: `options` (usually the context's `provider_options`) over the
    /// preset's settings. Names and model are the rendered context's.
    pub fn to_request(&self, options: &ProviderOptions) -> (serde_json::Value, Vec<Diagnostic>) {
        if let Some(st) = &self.st {
            return crate::sillytavern::request::body(
                &self.messages,
                st,
                &self.preset_options,
                options,
                &self.names(),
                &self.speakers.model,
            );
        }
        let messages: Vec<ChatMessage> = self
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| ChatMessage {
                keep_apart: m.source.keeps_apart(),
                name: self.message_name(i).map(str::to_owned),
                ..ChatMessage::new(m.role, m.text().into_owned())
            })
            .collect();
        let names = self.names();
        let model = &self.speakers.model;
        let options = resolve::overlay(options, &self.preset_options, model);
        provider::request(&messages, &options, &names, model)
    }
}
