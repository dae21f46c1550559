//! The regex scripts' passes (SPEC §13.2–§13.7): which scripts run on which text, the run
//! loop over UTF-16 code units with its step and size bounds, and the prompt pass of a render
//! with its cache. The scripts themselves (import, templates) are `scripts`.

mod audit;
mod cache;
mod run;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use crate::context::{Context, Role, Tag};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::identity::convert_identities;
use crate::limits::Limits;
use crate::pattern::{self, Pattern};
use crate::scripts::replace::Template;
use crate::scripts::{RegexScript, ScriptSource, Substitute};
pub(crate) use audit::audit;
use cache::PromptCache;
use run::{PassRun, deep};

/// Which call a pass reproduces (SPEC §13.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PassKind {
    /// A model reply or user message before the host stores it (ST `cleanUpMessage`,
    /// `sendMessageAsUser`): scripts with neither `markdownOnly` nor `promptOnly`.
    Store,
    /// An edited message (`updateMessage`): as `Store`, and `runOnEdit`.
    Edit,
    /// Text sent to the model (`Generate`): `promptOnly` scripts.
    Prompt,
    /// Text shown to people (`messageFormatting`): `markdownOnly` scripts.
    Display,
}

/// Where the text comes from (SPEC §13.1 placements).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Placement {
    /// 1: a user message.
    UserInput,
    /// 2: a model reply (and system messages, as ST).
    AiOutput,
    /// 5: world info (lore).
    WorldInfo,
}

impl Placement {
    fn number(self) -> i64 {
        match self {
            Placement::UserInput => 1,
            Placement::AiOutput => 2,
            Placement::WorldInfo => 5,
        }
    }

    /// The placement of a chat message by its role (`system` counts as the model's, as ST).
    pub fn of_role(role: Role) -> Placement {
        match role {
            Role::User => Placement::UserInput,
            _ => Placement::AiOutput,
        }
    }
}

/// One pass's parameters (SPEC §13.7).
///
/// ```
/// use stpreset::{Context, passes::PassKind, passes::Placement, Preset, passes::RegexPass};
/// let p = Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "x"}], "extensions": {"regex_scripts": [
///     {"findRegex": "/\\bcat\\b/g", "replaceString": "dog", "placement": [2]}]}}"#).unwrap();
/// let mut ctx = Context::default();
/// ctx.allow_preset_regex = true;
/// let pass = RegexPass::new(PassKind::Store, Placement::AiOutput);
/// assert_eq!(p.compile().apply_regex("a cat, a catalog", &pass, &ctx).text, "a dog, a catalog");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegexPass {
    /// Which call.
    pub kind: PassKind,
    /// Where the text comes from.
    pub placement: Placement,
    /// The message's depth (0 = newest), where the pass has one.
    pub depth: Option<u32>,
    /// Who said it: `char` when trim strings expand (edit and display passes only).
    pub speaker: Option<String>,
}

impl RegexPass {
    /// A pass without depth or speaker.
    pub fn new(kind: PassKind, placement: Placement) -> RegexPass {
        RegexPass {
            kind,
            placement,
            depth: None,
            speaker: None,
        }
    }
}

/// A pass's result: the text and the diagnostics (import's `RegexScriptInvalid` first).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Regexed {
    /// The text after every script that ran.
    pub text: String,
    /// Import, then the pass's diagnostics, in processing order.
    pub diagnostics: Vec<Diagnostic>,
}

/// The prompt pass of a render on its own (SPEC §13.7): per context item, its text after the
/// pass (`None` for a lore item a script emptied, which the render drops).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PromptPass {
    /// One entry per context item, in order.
    pub items: Vec<Option<String>>,
    /// Import, then the pass's diagnostics.
    pub diagnostics: Vec<Diagnostic>,
}

/// A context item after the prompt pass, when the pass changed it.
#[derive(Debug, Clone)]
pub(crate) enum ItemText {
    /// The new text (final: lore was identity-converted before the pass).
    Text(Arc<str>),
    /// A lore item the pass emptied.
    Dropped,
}

/// How a script's pattern is had.
#[derive(Debug)]
enum Find {
    /// Compiled on first use: a pass compiles only the scripts it selects.
    Fixed(std::sync::OnceLock<Result<Pattern, String>>),
    Template(Template, bool),
}

#[derive(Debug)]
struct Compiled {
    script: RegexScript,
    /// Its pattern does not fit the preset's compile budget ([`pattern::Cost::TOTAL`], spent
    /// in list order): it is refused, the same way whichever pass meets it first.
    over_budget: bool,
    /// The work a pass selecting it pays for its fixed pattern ([`pattern::Cost::work`]),
    /// whether compiled now or earlier: the same inputs cost the same (0 for a template).
    compile_work: u64,
    /// Its templates, read on first use: a bot's renders seldom run a preset's scripts (they
    /// need `allow_preset_regex`), and parsing Magpie's replacement templates was three
    /// quarters of compiling the preset.
    parsed: std::sync::OnceLock<Parsed>,
    /// What parsing reads.
    limits: Limits,
}

/// A script's find, replacement and trim templates.
#[derive(Debug)]
struct Parsed {
    find: Find,
    replacement: Template,
    trims: Vec<Template>,
    /// Its templates may give other output for the same inputs (SPEC §13.11).
    impure: bool,
}

impl Compiled {
    fn parsed(&self) -> &Parsed {
        self.parsed.get_or_init(|| {
            let (s, limits) = (&self.script, &self.limits);
            let find = match s.substitute {
                Substitute::None => Find::Fixed(std::sync::OnceLock::new()),
                sub => Find::Template(
                    Template::text(&s.find_regex, limits),
                    sub == Substitute::Escaped,
                ),
            };
            let replacement = Template::replacement(&s.replace_string, limits);
            let trims: Vec<Template> = s
                .trim_strings
                .iter()
                .map(|t| Template::text(t, limits))
                .collect();
            let impure = replacement.impure()
                || trims.iter().any(Template::impure)
                || matches!(&find, Find::Template(t, _) if t.impure());
            Parsed {
                find,
                replacement,
                trims,
                impure,
            }
        })
    }
}

/// A preset's scripts, compiled once with the preset.
#[derive(Debug, Default)]
pub(crate) struct Scripts {
    list: Vec<Compiled>,
    import: Vec<Diagnostic>,
    cache: Mutex<PromptCache>,
}

impl Scripts {
    pub fn import(extensions: Option<&RawValue>) -> (Vec<RegexScript>, Vec<Diagnostic>) {
        crate::scripts::read(extensions)
    }

    pub fn compile(scripts: &[RegexScript], import: &[Diagnostic], limits: &Limits) -> Scripts {
        let mut budget = pattern::Cost::TOTAL;
        let list = scripts
            .iter()
            .map(|s| {
                let cost = pattern::cost(&s.find_regex);
                let fixed = s.substitute == Substitute::None && s.live();
                let over_budget = fixed && !budget.spend(&cost);
                let compile_work = match fixed && !over_budget {
                    true => cost.work(),
                    false => 0,
                };
                Compiled {
                    script: s.clone(),
                    over_budget,
                    compile_work,
                    parsed: std::sync::OnceLock::new(),
                    limits: limits.clone(),
                }
            })
            .collect();
        Scripts {
            list,
            import: import.to_vec(),
            cache: Mutex::default(),
        }
    }

    /// The import's notes (`RegexScriptInvalid`), as every pass reports them first.
    pub(crate) fn import_notes(&self) -> &[Diagnostic] {
        &self.import
    }

    /// The scripts as imported, in list order.
    pub fn scripts(&self) -> impl Iterator<Item = &RegexScript> {
        self.list.iter().map(|c| &c.script)
    }

    /// The `RegexNotAllowed` of each source a pass may not run that has a valid entry not
    /// disabled (SPEC §13.6.1): at most one per source.
    fn refusals(&self, p: Permission) -> Vec<Diagnostic> {
        [
            ScriptSource::Global,
            ScriptSource::Preset,
            ScriptSource::Character,
        ]
        .into_iter()
        .filter(|&source| {
            !p.allows(source)
                && self
                    .list
                    .iter()
                    .any(|c| c.script.source == source && !c.script.disabled)
        })
        .map(|source| p.refusal(source))
        .collect()
    }

    /// Whether `p` lets any of the scripts run at all.
    pub(crate) fn any_allowed(&self, p: Permission) -> bool {
        self.list.iter().any(|c| p.allows(c.script.source))
    }

    /// A pass over one text (SPEC §13.7 `apply_regex`).
    pub fn apply(&self, text: &str, pass: &RegexPass, ctx: &Context, p: Permission) -> Regexed {
        deep(|| self.apply_inner(text, pass, ctx, p))
    }

    fn apply_inner(&self, text: &str, pass: &RegexPass, ctx: &Context, p: Permission) -> Regexed {
        let mut run = PassRun::new(self, ctx, p);
        run.diagnostics.extend(self.refusals(p));
        let text = if self.any_allowed(p) {
            let speaker = match pass.kind {
                PassKind::Edit | PassKind::Display => pass.speaker.as_deref(),
                _ => None,
            };
            let depth = match pass.kind {
                PassKind::Store | PassKind::Edit => None,
                _ => pass.depth,
            };
            run.text(text, pass.kind, pass.placement, depth, speaker)
                .into_owned()
        } else {
            text.to_string()
        };
        Regexed {
            text,
            diagnostics: run.finish(),
        }
    }

    /// One prompt pass at `WORLD_INFO` over many texts (the §15.7 walk of a render's lore,
    /// one entry at a time): the texts share the pass's step total and work budget (SPEC
    /// §13.6.2–3), as the prompt pass's items do.
    pub(crate) fn lore_pass<'a>(&'a self, ctx: &'a Context, p: Permission) -> LorePass<'a> {
        LorePass {
            run: PassRun::new(self, ctx, p),
        }
    }

    /// The prompt pass over a context's items (SPEC §13.2.3): per item, `None` when it is
    /// unchanged.
    /// Empty when the pass changed nothing it could (no scripts, or not allowed): a render of
    /// a preset without scripts allocates nothing here.
    pub fn prompt_items(
        &self,
        ctx: &Context,
        permission: Permission,
        with_import: bool,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Vec<Option<ItemText>> {
        if with_import {
            diagnostics.extend_from_slice(&self.import);
        }
        if self.list.is_empty() {
            return Vec::new();
        }
        diagnostics.extend(self.refusals(permission));
        if !self.any_allowed(permission) {
            return Vec::new();
        }
        deep(|| self.prompt_items_inner(ctx, permission, diagnostics))
    }

    fn prompt_items_inner(
        &self,
        ctx: &Context,
        permission: Permission,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Vec<Option<ItemText>> {
        let mut run = PassRun::new(self, ctx, permission);
        run.diagnostics.clear(); // the caller reported the import's
        let mut out = vec![None; ctx.items.len()];
        let history = ctx
            .items
            .iter()
            .filter(|i| i.tag == Some(Tag::DialogueHistory))
            .count();
        let mut seen = 0;
        // Hashed once, when a history item first needs the cache.
        let fingerprint = std::cell::OnceCell::new();
        // The history is chat text: its runs also pay from the chat text's share.
        crate::work::on_chat(|| {
            for (i, item) in ctx.items.iter().enumerate() {
                if item.tag != Some(Tag::DialogueHistory) {
                    continue;
                }
                seen += 1;
                let depth = (history - seen) as u32;
                let placement = Placement::of_role(item.role);
                out[i] = run
                    .cached(&item.text, placement, Some(depth), &fingerprint)
                    .map(ItemText::Text);
            }
        });
        for (i, item) in ctx.items.iter().enumerate() {
            let depth = match item.tag {
                Some(Tag::KnowledgeLorebookBefore | Tag::KnowledgeLorebookAfter) => None,
                Some(Tag::KnowledgeLoreActivated) => item.depth.and_then(|d| u32::try_from(d).ok()),
                _ => continue,
            };
            if item.text.is_empty() {
                continue;
            }
            let text = convert_identities(&item.text, &ctx.user, &ctx.char);
            let after = run.text(&text, PassKind::Prompt, Placement::WorldInfo, depth, None);
            out[i] = match after {
                Cow::Owned(t) if t.is_empty() => Some(ItemText::Dropped),
                Cow::Owned(t) => Some(ItemText::Text(t.into())),
                Cow::Borrowed(_) => match text {
                    Cow::Owned(t) => Some(ItemText::Text(t.into())),
                    Cow::Borrowed(_) => None,
                },
            };
        }
        diagnostics.extend(run.finish());
        out
    }
}

/// A prompt pass at `WORLD_INFO` that texts are fed to one by one (`Scripts::lore_pass`).
pub(crate) struct LorePass<'a> {
    run: PassRun<'a>,
}

impl LorePass<'_> {
    /// The text after the pass's scripts; `depth` for an entry placed at a depth.
    pub fn text(&mut self, text: &str, depth: Option<u32>) -> String {
        deep(|| {
            self.run
                .text(text, PassKind::Prompt, Placement::WorldInfo, depth, None)
                .into_owned()
        })
    }

    /// What the pass reported, without the import's notes (a render reported them).
    pub fn finish(self) -> Vec<Diagnostic> {
        let mut out = self.run.finish();
        out.retain(|d| d.kind != DiagnosticKind::RegexScriptInvalid);
        out
    }
}

/// Who lets which regex scripts run (SPEC §13.6, issue 39): a preset's need the context
/// (`allow_preset_regex`) and the preset's keeper (the store's `allow-regex`; always, outside
/// a store); a card's need the context (`allow_char_regex`), as SillyTavern asks before it
/// runs a character's scripts; the host's own (global) always run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Permission {
    pub context: bool,
    pub keeper: bool,
    pub character: bool,
}

impl Permission {
    /// Whether scripts of `source` may run.
    pub(crate) fn allows(self, source: ScriptSource) -> bool {
        match source {
            ScriptSource::Global => true,
            ScriptSource::Preset => self.context && self.keeper,
            ScriptSource::Character => self.character,
        }
    }

    /// The `RegexNotAllowed` of a source whose scripts did not run, naming who did not allow
    /// them (issue 39).
    fn refusal(self, source: ScriptSource) -> Diagnostic {
        let message = match source {
            ScriptSource::Character => "the card's regex scripts: none ran: the context does not \
                                        allow them (`allow_char_regex`)"
                .to_string(),
            _ => {
                let why = match (self.context, self.keeper) {
                    (false, true) => "the context does not allow them (`allow_preset_regex`)",
                    (true, false) => "the store does not allow this preset's (`store allow-regex`)",
                    _ => {
                        "neither the context (`allow_preset_regex`) nor the store \
                         (`store allow-regex`) allows them"
                    }
                };
                format!("regex scripts: none ran: {why}")
            }
        };
        Diagnostic::new(DiagnosticKind::RegexNotAllowed, None, message)
    }
}
