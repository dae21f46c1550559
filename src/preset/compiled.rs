//! A preset compiled once: every taking-part node parsed, and its assembly resolved into a
//! plan, so a render only evaluates and follows the plan (`render`).

use super::Preset;
use crate::assemble::{Plan, PlanNode};
use crate::chat::Chat;
use crate::context::Context;
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::limits::Limits;
use crate::passes::{PassKind, Placement, PromptPass, RegexPass, Regexed, Scripts};
use crate::render::{self, CompiledNode, Rendered};
use crate::role::Role;
use crate::settings::{PresetSettings, TEMPLATES};

/// A preset ready to render: enabled nodes are parsed once, here.
///
/// ```
/// use stpreset::{Context, Preset};
/// let preset = Preset::from_json(br#"{"prompts": [
///     {"identifier": "main", "content": "You are {{char}}."},
///     {"identifier": "chatHistory", "marker": true},
///     {"identifier": "jb", "content": "Stay in character.", "injection_position": 1, "injection_depth": 0}
/// ]}"#).unwrap();
/// let compiled = preset.compile();
/// let mut ctx = Context::from_json(br#"{"char": "Tomori", "items": [
///     {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#).unwrap();
/// let out = compiled.render(&ctx);
/// let texts: Vec<_> = out.messages.iter().map(|m| m.text().into_owned()).collect();
/// assert_eq!(texts, ["You are Tomori.", "hi\n[System: Stay in character.]"]);
/// ```
#[derive(Debug)]
pub struct CompiledPreset {
    /// The nodes that take part in the passes (enabled, not markers, not comment-only), in
    /// preset order.
    nodes: Vec<CompiledNode>,
    /// Per preset node: whether it is comment-only (`None`: not compiled).
    comment_only: Vec<Option<bool>>,
    plan: Plan,
    import_diagnostics: Vec<Diagnostic>,
    settings: PresetSettings,
    /// The settings' templates that take part in a render (SPEC §14.6), in table order.
    templates: Vec<CompiledNode>,
    /// The regex scripts (SPEC §13), compiled.
    scripts: Scripts,
    /// Whether whoever keeps the preset lets its scripts run (the store's per-preset
    /// permission, SPEC §13.6.1); the context must allow them too.
    regex_permitted: bool,
    /// The file as imported, for the SillyTavern layout's prompt list.
    raw: std::sync::Arc<[u8]>,
    /// The switches made on the preset before compiling, applied to that list too.
    toggles: Vec<(String, bool)>,
    /// That list, built on the first SillyTavern-layout render (SPEC §17.1.2).
    st_plan: std::sync::OnceLock<crate::sillytavern::StPlan>,
    limits: Limits,
}

impl Preset {
    /// Parses every enabled, non-marker node once, with the limits it was imported with.
    pub fn compile(&self) -> CompiledPreset {
        self.compile_with(&self.limits)
    }

    /// Parses every enabled, non-marker node once, with the given parse limits.
    pub fn compile_with(&self, limits: &Limits) -> CompiledPreset {
        let mut nodes = Vec::new();
        let mut comment_only = Vec::with_capacity(self.nodes.len());
        let mut walked = Vec::new();
        for n in &self.nodes {
            let compiled = (n.enabled && !n.is_marker())
                .then(|| CompiledNode::compile(&n.identifier, &n.content, limits));
            comment_only.push(compiled.as_ref().map(|c| c.tree.comment_only));
            let is_main = compiled.is_some() && n.identifier == "main";
            // `main` and `jailbreak` are kept even when they hold only comments: a card's
            // system prompt and post-history instructions replace their text (SPEC §15.2).
            let card_slot = matches!(n.identifier.as_str(), "main" | "jailbreak");
            let text = compiled
                .filter(|c| card_slot || !c.tree.comment_only)
                .map(|c| {
                    nodes.push(c);
                    nodes.len() - 1
                });
            // Comment-only custom nodes never render; `main` stays as the anchor.
            if (n.enabled && n.is_marker()) || text.is_some() || is_main {
                walked.push(PlanNode {
                    identifier: &n.identifier,
                    role: &n.role,
                    marker: n.is_marker(),
                    depth: n
                        .is_depth()
                        .then_some((n.injection_depth, n.injection_order)),
                    text,
                });
            }
        }
        let templates = TEMPLATES
            .iter()
            .filter_map(|key| CompiledNode::setting(key, self.settings.template(key), limits))
            .collect();
        let script_import: Vec<Diagnostic> = self
            .diagnostics
            .iter()
            .filter(|d| d.kind == DiagnosticKind::RegexScriptInvalid)
            .cloned()
            .collect();
        CompiledPreset {
            nodes,
            comment_only,
            plan: Plan::new(walked),
            import_diagnostics: self.diagnostics.clone(),
            settings: self.settings.clone(),
            templates,
            scripts: Scripts::compile(&self.scripts, &script_import, limits),
            regex_permitted: true,
            raw: self.raw.clone(),
            toggles: self.toggles.clone(),
            st_plan: std::sync::OnceLock::new(),
            limits: limits.clone(),
        }
    }
}

impl CompiledPreset {
    /// Whether node `index` holds only comments, `{{trim}}` and whitespace (never rendered).
    /// `None` for nodes that were not compiled (disabled nodes and markers).
    pub fn is_comment_only(&self, index: usize) -> Option<bool> {
        *self.comment_only.get(index)?
    }

    /// Renders against `ctx` (its options give the limits, the injection mode and the clock).
    pub fn render<'c>(&self, ctx: &'c Context) -> Rendered<'c> {
        let mut own = None;
        let parts = self.parts(ctx, &mut own);
        render::preset(&parts, ctx, None)
    }

    /// What a render of `ctx` reads of the preset (`own` holds the render's own script list
    /// when it has one: [`scripts_for`](Self::scripts_for)).
    fn parts<'s>(&'s self, ctx: &Context, own: &'s mut Option<Scripts>) -> render::PresetParts<'s> {
        render::PresetParts {
            nodes: &self.nodes,
            plan: &self.plan,
            import: &self.import_diagnostics,
            settings: &self.settings,
            templates: &self.templates,
            scripts: self.scripts_for(ctx, own),
            regex: self.regex_permission(ctx),
            st_plan: (ctx.layout == crate::layout::Layout::SillyTavern).then(|| self.st_plan()),
        }
    }

    /// The prompt list SillyTavern reads from the file (SPEC §17.1.2), built once.
    fn st_plan(&self) -> &crate::sillytavern::StPlan {
        self.st_plan.get_or_init(|| {
            let root: serde_json::Value = serde_json::from_slice(&self.raw).unwrap_or_default();
            let mut plan = crate::sillytavern::StPlan::new(&root, &self.limits);
            plan.switch(&self.toggles);
            plan
        })
    }

    /// Renders a [`Chat`]: the same result as [`render`](Self::render) of its context, and
    /// faster turn after turn, since the chat remembers what depends on its items alone (the
    /// token count of each history text, SPEC §12.4) until they change. Made for front ends
    /// that report the prompt's tokens every turn: with a history budget its walk counts
    /// exactly from the start (`render` bounds first and counts `prompt_tokens` when asked).
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "chatHistory", "marker": true}],
    ///     "openai_max_context": 100}"#).unwrap().compile();
    /// let chat = stpreset::Chat::from_json(br#"{"items": [
    ///     {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#).unwrap();
    /// assert_eq!(p.render_chat(&chat).to_json(), p.render(chat.context()).to_json());
    /// ```
    pub fn render_chat<'c>(&self, chat: &'c Chat) -> Rendered<'c> {
        let mut own = None;
        let parts = self.parts(chat.context(), &mut own);
        render::preset(&parts, chat.context(), Some(chat.known()))
    }

    /// The regex scripts a pass over `ctx` has, in SillyTavern's order (`getRegexScripts`):
    /// the host's own, the preset's, the card's. Without the host's or a card's, the preset's
    /// list compiled with it (and its prompt-pass cache); with them, one list compiled for
    /// this call into `own`, so their patterns compile again on every call (a host with its
    /// own scripts pays that; the preset's bounds hold for the whole list).
    fn scripts_for<'s>(&'s self, ctx: &Context, own: &'s mut Option<Scripts>) -> &'s Scripts {
        if ctx.regex_scripts.is_empty()
            && ctx.char_regex_scripts.is_empty()
            && ctx.regex_notes.is_empty()
        {
            return &self.scripts;
        }
        let all: Vec<crate::scripts::RegexScript> = ctx
            .regex_scripts
            .iter()
            .chain(self.scripts.scripts())
            .chain(&ctx.char_regex_scripts)
            .cloned()
            .collect();
        let mut notes = self.scripts.import_notes().to_vec();
        notes.extend_from_slice(&ctx.regex_notes);
        own.insert(Scripts::compile(&all, &notes, &ctx.options.limits))
    }

    /// Who lets which regex scripts run with `ctx`: the context, the keeper (the preset's)
    /// and the context again (the card's).
    fn regex_permission(&self, ctx: &Context) -> crate::passes::Permission {
        crate::passes::Permission {
            context: ctx.allow_preset_regex,
            keeper: self.regex_permitted,
            character: ctx.allow_char_regex,
        }
    }

    /// Sets whether the preset's keeper permits its regex scripts (the store's permission).
    #[cfg(feature = "store")]
    pub(crate) fn set_regex_permitted(&mut self, permitted: bool) {
        self.regex_permitted = permitted;
    }

    /// The regex scripts it runs (SPEC §13.1), as [`Preset::regex_scripts`] lists them.
    pub fn regex_scripts(&self) -> impl Iterator<Item = &crate::scripts::RegexScript> {
        self.scripts.scripts()
    }

    /// Runs the preset's regex scripts over one text (SPEC §13.7), when `ctx` allows them:
    /// the scripts `pass` selects, in list order. Diagnostics begin with the import's
    /// `RegexScriptInvalid`s.
    pub fn apply_regex(&self, text: &str, pass: &RegexPass, ctx: &Context) -> Regexed {
        let permission = self.regex_permission(ctx);
        let mut own = None;
        let scripts = self.scripts_for(ctx, &mut own);
        let (mut out, note) = crate::work::render(&ctx.options.limits, || {
            scripts.apply(text, pass, ctx, permission)
        });
        out.diagnostics.extend(note);
        if let Some(note) = ctx.surrogate_note() {
            out.diagnostics.insert(0, note);
        }
        out
    }

    /// A model reply (`Role::Model`) or user message (`Role::User`) before the bot stores it
    /// (SillyTavern's `cleanUpMessage` / `sendMessageAsUser`): call it on each one.
    ///
    /// ```
    /// use stpreset::{Context, Preset, Role};
    /// let p = Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "x"}], "extensions": {"regex_scripts": [
    ///     {"findRegex": "/\\s*<ooc>.*?<\\/ooc>/g", "placement": [1, 2]}]}}"#).unwrap();
    /// let mut ctx = Context::default();
    /// ctx.allow_preset_regex = true;
    /// let out = p.compile().store_message("Hi <ooc>brb</ooc> there", Role::User, &ctx);
    /// assert_eq!(out.text, "Hi there");
    /// ```
    pub fn store_message(&self, text: &str, role: Role, ctx: &Context) -> Regexed {
        let pass = RegexPass::new(PassKind::Store, Placement::of_role(role));
        self.apply_regex(text, &pass, ctx)
    }

    /// An edited message (`updateMessage`): `runOnEdit` scripts; `speaker` is `char` for trim
    /// strings.
    pub fn edit_message(
        &self,
        text: &str,
        role: Role,
        speaker: Option<&str>,
        ctx: &Context,
    ) -> Regexed {
        let pass = RegexPass {
            speaker: speaker.map(str::to_string),
            ..RegexPass::new(PassKind::Edit, Placement::of_role(role))
        };
        self.apply_regex(text, &pass, ctx)
    }

    /// Text a host shows to people (`messageFormatting`): `markdownOnly` scripts, which often
    /// emit HTML (never sanitized here; never send the result to a model).
    pub fn display_message(
        &self,
        text: &str,
        role: Role,
        depth: Option<u32>,
        speaker: Option<&str>,
        ctx: &Context,
    ) -> Regexed {
        let pass = RegexPass {
            depth,
            speaker: speaker.map(str::to_string),
            ..RegexPass::new(PassKind::Display, Placement::of_role(role))
        };
        self.apply_regex(text, &pass, ctx)
    }

    /// [`display_message`](Self::display_message) for hosts that show Markdown (a Discord
    /// bot): the display pass as SillyTavern runs it, then its HTML as Markdown — styles,
    /// scripts and hidden elements dropped, emphasis, links, lists and line breaks kept, the
    /// reply's own Markdown untouched (docs/regex.md, "Text for Markdown hosts").
    ///
    /// ```
    /// let preset = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "M"}],
    ///     "extensions": {"regex_scripts": [{"findRegex": "/<final>([\\s\\S]*?)<\\/final>/g",
    ///     "replaceString": "<style>.f{color:red}</style><div class='f'><b>$1</b></div>",
    ///     "placement": [2], "markdownOnly": true}]}}"#).unwrap().compile();
    /// let mut ctx = stpreset::Context::default();
    /// ctx.allow_preset_regex = true;
    /// let out = preset.display_text("<final>Hi *there*</final>", stpreset::Role::Model, None, None, &ctx);
    /// assert_eq!(out.text, "**Hi *there***");
    /// ```
    pub fn display_text(
        &self,
        text: &str,
        role: Role,
        depth: Option<u32>,
        speaker: Option<&str>,
        ctx: &Context,
    ) -> Regexed {
        let mut out = self.display_message(text, role, depth, speaker, ctx);
        out.text = crate::scripts::markdown::display_markdown(&out.text);
        out
    }

    /// The prompt pass a render runs (SPEC §13.2.3), alone: each context item's text after
    /// it (with no `name` prefix), `None` for a lore item it dropped.
    pub fn prompt_pass(&self, ctx: &Context) -> PromptPass {
        let mut diagnostics = Vec::new();
        diagnostics.extend(ctx.surrogate_note());
        let mut own = None;
        let scripts = self.scripts_for(ctx, &mut own);
        let (changed, note) = crate::work::render(&ctx.options.limits, || {
            scripts.prompt_items(ctx, self.regex_permission(ctx), true, &mut diagnostics)
        });
        diagnostics.extend(note);
        let items = ctx
            .items
            .iter()
            .enumerate()
            .map(|(i, item)| match changed.get(i) {
                Some(Some(crate::passes::ItemText::Text(t))) => Some(t.to_string()),
                Some(Some(crate::passes::ItemText::Dropped)) => None,
                _ => Some(item.text.clone()),
            })
            .collect();
        PromptPass { items, diagnostics }
    }

    /// The settings it renders with (SPEC §14).
    pub fn settings(&self) -> &PresetSettings {
        &self.settings
    }
}
