//! Evaluation (SPEC §2): pass 1 selects branches and applies declarations in order, pass 2
//! expands values over the saved selection, deciding TomoriBot blocks and tool/identity
//! placeholders on the way (the host passes), then each node is finished.

mod chance;
mod clock;
mod macros;
mod run;
mod shorthand;
mod state;
mod text;
mod vars;

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDateTime, Utc};
use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;

use crate::context::{Context, Host};
use crate::diagnostic::{Diagnostic, DiagnosticKind, Finding};
use crate::syntax::Span;
use crate::syntax::tree::Tree;
use crate::work::{Allowance, Stage};
use run::{Mode, Run};
use vars::Vars;

/// One node taking part in a render.
pub(crate) struct EvalNode<'a> {
    pub id: &'a str,
    pub tree: &'a Tree,
    pub findings: &'a [Finding],
    /// What `{{personality}}` is in this node, identity-converted, instead of the context's (a
    /// preset's `personality_format` sees the personality items, SPEC §14.6).
    pub personality: Option<&'a str>,
    /// Whether the host values it expands suppress native blocks (SPEC §2.3.3; setting
    /// templates never do, SPEC §14.6).
    pub suppresses: bool,
    /// SillyTavern 1.18's macro engine where it differs from §1–§3 (the SillyTavern layout
    /// sets it on its nodes, SPEC §17; `docs/sillytavern.md`): a whitespace-only result is
    /// kept (§17.3.6), an unpaired `{{trim}}` deletes itself and the newlines around it, a
    /// variable's value argument is trimmed.
    pub st_engine: bool,
}

/// What a node's body did that the assembler needs to know (SPEC §2.3.3, §4.2).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signals(u8);

impl Signals {
    pub const DESCRIPTION: Signals = Signals(1);
    pub const PERSONALITY: Signals = Signals(2);
    pub const PERSONA: Signals = Signals(4);
    pub const SCENARIO: Signals = Signals(8);
    pub const TRIM: Signals = Signals(16);

    pub fn has(self, s: Signals) -> bool {
        self.0 & s.0 != 0
    }
    pub fn add(&mut self, s: Signals) {
        self.0 |= s.0;
    }
}

/// Which host values a render expanded in surviving body text (SPEC §2.3.3). A preset's
/// assembler drops the matching native blocks; a host assembling on its own can do the same.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expanded {
    /// `{{description}}` was expanded.
    pub description: bool,
    /// `{{personality}}` was expanded.
    pub personality: bool,
    /// `{{persona}}` was expanded.
    pub persona: bool,
    /// `{{scenario}}` was expanded.
    pub scenario: bool,
}

impl From<Signals> for Expanded {
    fn from(s: Signals) -> Expanded {
        Expanded {
            description: s.has(Signals::DESCRIPTION),
            personality: s.has(Signals::PERSONALITY),
            persona: s.has(Signals::PERSONA),
            scenario: s.has(Signals::SCENARIO),
        }
    }
}

pub(crate) struct Evaluation {
    /// Each node's finished text, in order (empty = no output).
    pub texts: Vec<String>,
    /// Host values any node expanded.
    pub expanded: Expanded,
    pub diagnostics: Vec<Diagnostic>,
    pub variables: BTreeMap<String, String>,
    pub globals: BTreeMap<String, String>,
}

/// The mark an unpaired `{{trim}}` leaves in a SillyTavern-engine node's text.
pub(crate) fn st_trim_marker() -> &'static str {
    st_trim_mark()
}

/// Runs both passes and the host passes over `nodes`, in order.
///
/// `settings` are the preset's settings that apply (SPEC §14.3), which `{{maxContext}}` & co.
/// read where the context sets no value; `None` for a template alone.
pub(crate) fn evaluate(
    nodes: &[EvalNode<'_>],
    ctx: &Context,
    settings: Option<&crate::settings::PresetSettings>,
) -> Evaluation {
    let mut eng = Engine::new(ctx, &ctx.host);
    eng.settings = settings;
    let mut states = Vec::with_capacity(nodes.len());
    let (mut blocks, mut slots) = (0, 0);
    for n in nodes {
        states.push(NodeState {
            block_base: blocks,
            slot_base: slots,
        });
        blocks += n.tree.blocks.len();
        slots += n.tree.slots as usize;
    }
    // A host macro never replaces a catalog macro (issue 39): say so once per render.
    for name in ctx.host.macros().keys() {
        if crate::syntax::catalog::MacroKind::lookup(name)
            != crate::syntax::catalog::MacroKind::Unknown
        {
            eng.diags.push(Diagnostic::new(
                DiagnosticKind::MacroShadowed,
                None,
                format!(
                    "the host's macro `{}` is named like a macro of the catalog, which is used",
                    crate::diagnostic::excerpt(name)
                ),
            ));
        }
    }
    // One allocation each for all nodes' pass-1 records.
    eng.decisions = vec![0; blocks];
    eng.records = vec![Record::default(); slots];
    for (node, st) in nodes.iter().zip(&states) {
        for f in node.findings {
            eng.diags
                .push(diagnostic(node, f.kind, f.span, f.message.clone()));
        }
        let granted = eng.grant();
        Run::new(&mut eng, node, st).walk(node.tree.root);
        eng.settle(granted);
    }
    let mut texts = Vec::with_capacity(nodes.len());
    let mut all = Signals::default();
    // The buffer `st_trim` joins into, kept from node to node (see there).
    let mut spare = String::new();
    for (node, st) in nodes.iter().zip(&states) {
        let granted = eng.grant();
        let mut run = Run::new(&mut eng, node, st);
        let mut text = String::with_capacity(node.tree.source.len());
        run.expand(node.tree.root, Mode::Body { literal: true }, &mut text);
        let signals = run.sig;
        eng.settle(granted);
        if node.suppresses {
            all.add(signals);
        }
        texts.push(if node.st_engine {
            st_trim(text, &mut spare)
        } else {
            finish(text, signals)
        });
    }
    for (name, node) in ["user", "char"].into_iter().zip(&eng.empty_names) {
        if let Some(node) = node {
            eng.diags.push(Diagnostic::new(
                DiagnosticKind::EmptyName,
                Some(node),
                format!("`{{{{{name}}}}}` is empty: the context gives no `{name}`"),
            ));
        }
    }
    let (variables, globals) = eng.vars.into_maps();
    Evaluation {
        texts,
        expanded: all.into(),
        diagnostics: eng.diags,
        variables,
        globals,
    }
}

/// Where an unpaired `{{trim}}` stood in a SillyTavern-layout node: private-use characters
/// around a number drawn once per process from the OS's randomness, so no input can hold the
/// mark (a fixed one could be written into chat text and delete newlines of a prompt). The
/// mark never reaches the output: `st_trim` removes it.
fn st_trim_mark() -> &'static str {
    static MARK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARK.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let nonce = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        format!("\u{F8FF}trim{nonce:016x}\u{F8FF}")
    })
}

/// SillyTavern's `{{trim}}` post-processing: each mark and the newlines (`\n`, `\r\n`) on
/// both sides of it are deleted (MacroEngine: `/(?:\r?\n)*{{trim}}(?:\r?\n)*/gi`).
///
/// The text is joined into `spare`, which then keeps the text's own buffer for the next
/// call: presets put `{{trim}}` in most of their prompts, and a fresh buffer per prompt (a
/// large allocation each, freed at once) was a twentieth of NemoEngine's evaluation.
fn st_trim(text: String, spare: &mut String) -> String {
    let mark = st_trim_mark();
    // Every prompt of a SillyTavern-layout render is searched, and presets put `{{trim}}` in
    // hundreds of them: memchr's SIMD search with a rare-byte prefilter, built once, where
    // `str::contains` and `str::split` (two-way) cost a tenth of a repeated render.
    static FINDER: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
        std::sync::OnceLock::new();
    let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(mark.as_bytes()));
    let mut marks = finder.find_iter(text.as_bytes()).peekable();
    if marks.peek().is_none() {
        return text;
    }
    let mut joined = std::mem::take(spare);
    joined.clear();
    joined.reserve(text.len());
    let mut start = 0;
    for at in marks.chain(std::iter::once(text.len())) {
        // The piece between two marks (or an end): newlines after the previous mark and
        // before the next one go.
        let mut p = &text[start..at];
        if start > 0 {
            while let Some(r) = p.strip_prefix('\n').or_else(|| p.strip_prefix("\r\n")) {
                p = r;
            }
        }
        if at < text.len() {
            while let Some(r) = p.strip_suffix('\n') {
                p = r.strip_suffix('\r').unwrap_or(r);
            }
        }
        joined.push_str(p);
        start = (at + mark.len()).min(text.len());
    }
    *spare = text;
    joined
}

/// `{{trim}}` trims the whole text; whitespace-only text produces nothing. In place: a
/// node's text can be large.
fn finish(mut text: String, signals: Signals) -> String {
    if text.trim().is_empty() {
        return String::new();
    }
    if signals.has(Signals::TRIM) {
        text::trim_in_place(&mut text);
    }
    text
}

fn diagnostic(
    node: &EvalNode<'_>,
    kind: DiagnosticKind,
    span: Span,
    message: String,
) -> Diagnostic {
    Diagnostic::new(kind, Some(node.id), message).at(span, node.tree.line_col(span.start))
}

/// Host values that are identity-converted once per render, on first use.
#[derive(Debug, Clone, Copy)]
enum HostValue {
    Description,
    Personality,
    Scenario,
    Persona,
    MesExamples,
    MesExamplesRaw,
    Model,
    CharVersion,
    LastMessage,
    LastUserMessage,
    LastCharMessage,
    CharPrompt,
    CharInstruction,
}
const HOST_VALUES: usize = 13;

/// Render-wide state shared by all nodes.
struct Engine<'a> {
    ctx: &'a Context,
    /// `ctx.options.limits`, clamped to their hard maxima.
    limits: crate::limits::Limits,
    host: &'a dyn Host,
    vars: Vars,
    rng: Xoshiro256PlusPlus,
    /// Local time, or `None` with time awareness off.
    clock: Option<NaiveDateTime>,
    /// The render's UTC time.
    now: DateTime<Utc>,
    /// Bytes the current node (or expansion) may still produce: what `work` granted it.
    work_left: usize,
    work_out: bool,
    /// The render's work budget, not `work_bytes`, bounds `work_left` (its `WorkLimit`
    /// reports running out).
    work_metered: bool,
    /// The render's template bytes (`Limits::work_bytes`), drawn from its work budget.
    work: Allowance,
    diags: Vec<Diagnostic>,
    host_values: [Option<std::borrow::Cow<'a, str>>; HOST_VALUES],
    /// The host callback's answers of this render, by call text (issue 39).
    macro_calls: std::collections::HashMap<String, Option<String>>,
    /// `idle_duration`, worked out once per render: it scans the whole history, and a preset
    /// with n of them against m history items must not cost n × m.
    idle: Option<String>,
    /// `group`, `groupNotMuted`, `notChar`, worked out once per render.
    groups: Option<[String; 3]>,
    /// The chat's length and its last message's index in the items, for the chat-position
    /// macros (`state`), worked out once per render.
    history: Option<(usize, Option<usize>)>,
    /// Per block of every node: 0 not selected in pass 1, 1 then-branch, 2 else-branch.
    decisions: Vec<u8>,
    /// Per declaration slot of every node: what it renders and its arguments' signals.
    records: Vec<Record>,
    /// The first node that expanded an empty `{{user}}` / `{{char}}`.
    empty_names: [Option<String>; 2],
    /// Set while a regex script's template expands (SPEC §13.5).
    script: Option<ScriptFrame>,
    /// Every `random` draw takes the first item (a host-supplied source, SPEC §13.5.5).
    first_random: bool,
    /// The preset's settings that apply, for the token-limit macros (`state`).
    settings: Option<&'a crate::settings::PresetSettings>,
}

/// What a regex script's expansion sees besides the context (SPEC §13.5).
#[derive(Debug, Default)]
struct ScriptFrame {
    /// The values of the template's tokens, in token order.
    values: Vec<String>,
    /// Escape each outermost macro's output for a pattern (SPEC §13.5.4).
    escape: bool,
    /// `char` for this expansion: the pass's speaker, for trim strings (SPEC §13.4.4).
    speaker: Option<String>,
}

/// The seed of one consumer's random stream (SPEC §16): the context seed mixed with the
/// consumer's tag by the stable `pick` hash. The nodes' stream is the context seed itself.
pub(crate) fn stream_seed(seed: u64, tag: &str) -> u64 {
    chance::stable_hash(&[&seed.to_le_bytes(), tag.as_bytes()])
}

impl<'a> Engine<'a> {
    /// Gives the next node what the render's template bytes have left (SPEC §8, issue 38).
    fn grant(&mut self) -> usize {
        if self.work_out {
            return 0;
        }
        self.work_left = usize::try_from(self.work.left()).unwrap_or(usize::MAX);
        self.work_metered = self.work.meter_binds();
        self.work_left
    }

    /// Charges what the node spent of `granted`.
    fn settle(&mut self, granted: usize) {
        self.work
            .spend(granted.saturating_sub(self.work_left) as u64);
        if self.work_out {
            self.work.stopped();
        }
    }

    fn new(ctx: &'a Context, host: &'a dyn Host) -> Self {
        let limits = ctx.options.limits.clamped();
        // The one clock reading of the render.
        let now = ctx.now.unwrap_or_else(ctx.options.clock);
        Engine {
            ctx,
            host,
            vars: Vars::new(
                &ctx.variables,
                &ctx.globals,
                limits.variable_bytes,
                limits.variables_total_bytes,
            ),
            rng: Xoshiro256PlusPlus::seed_from_u64(ctx.seed),
            clock: ctx
                .time_awareness
                .then(|| clock::local(now, ctx.utc_offset_minutes)),
            now,
            work_left: 0,
            work_metered: false,
            work: Allowance::new(Stage::Templates, limits.work_bytes as u64),
            limits,
            work_out: false,
            diags: Vec::new(),
            host_values: Default::default(),
            macro_calls: Default::default(),
            idle: None,
            groups: None,
            history: None,
            decisions: Vec::new(),
            records: Vec::new(),
            empty_names: [None, None],
            script: None,
            first_random: false,
            settings: None,
        }
    }
}

/// `template` expanded with every `{{original}}` (ASCII case-insensitive) standing for
/// `original`, which is data: it is never parsed again.
/// `once`: only the first `{{original}}` has the value, later ones are empty (SillyTavern's
/// macro engine, SPEC §17.3.6).
pub(crate) fn with_original(
    id: &str,
    template: &str,
    original: String,
    ctx: &Context,
    once: bool,
) -> String {
    with_value(id, template, "{{original}}", original, ctx, once)
}

/// `template` expanded with the macro `tag` (ASCII case-insensitive, e.g. `{{original}}`)
/// standing for `value`, which is data: it is never parsed again. `once`: only the first
/// occurrence has the value.
pub(crate) fn with_value(
    id: &str,
    template: &str,
    tag: &str,
    original: String,
    ctx: &Context,
    once: bool,
) -> String {
    use crate::syntax::catalog::SCRIPT_VALUE;
    // The value token is a macro's output: `original` is data, never parsed again.
    let token = format!("{{{{{SCRIPT_VALUE}::0}}}}");
    let pieces = crate::jstext::split_ascii_ci(template, tag);
    let rewritten = if once && pieces.len() > 2 {
        format!("{}{token}{}", pieces[0], pieces[1..].concat())
    } else {
        pieces.join(&token)
    };
    expand_setting(id, rewritten, vec![original], ctx)
}

/// A setting's template (`impersonation_prompt`, …) expanded alone, as SillyTavern's
/// `substituteParams` expands it where it builds that prompt: the render's macros, its own
/// random stream, no variable writes kept.
pub(crate) fn expand_alone(id: &str, template: &str, ctx: &Context) -> String {
    expand_setting(id, template.to_string(), Vec::new(), ctx)
}

fn expand_setting(id: &str, template: String, values: Vec<String>, ctx: &Context) -> String {
    let limits = ctx.options.limits.clamped();
    let (tree, _) = crate::syntax::parse(template.into(), &limits);
    expand_tree(id, &tree, values, ctx)
}

/// [`expand_alone`] of a template parsed once and expanded for several contexts (a group's
/// join prefix, once per member).
pub(crate) fn expand_tree_alone(id: &str, tree: &crate::syntax::Tree, ctx: &Context) -> String {
    expand_tree(id, tree, Vec::new(), ctx)
}

fn expand_tree(id: &str, tree: &crate::syntax::Tree, values: Vec<String>, ctx: &Context) -> String {
    let limits = ctx.options.limits.clamped();
    let seed = crate::eval::stream_seed(ctx.seed, "nodes");
    let mut engine = crate::eval::ScriptEngine::new(ctx, seed, false);
    let mut notes = Vec::new();
    let mut work = Allowance::new(Stage::Templates, limits.work_bytes as u64);
    engine.expand(&mut work, id, tree, values, false, None, &mut notes)
}

/// Expands regex scripts' templates for one pass (SPEC §13.5): one RNG stream and one work
/// budget for the whole pass, and every expansion starting from the context's variables.
pub(crate) struct ScriptEngine<'a> {
    eng: Engine<'a>,
}

impl<'a> ScriptEngine<'a> {
    /// `seed` seeds the pass's `random`/`roll` stream; `first` makes every `random` take its
    /// first item.
    pub fn new(ctx: &'a Context, seed: u64, first: bool) -> Self {
        let mut eng = Engine::new(ctx, &ctx.host);
        eng.rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        eng.script = Some(ScriptFrame::default());
        eng.first_random = first;
        eng.vars.begin_scratch();
        ScriptEngine { eng }
    }

    /// Whether the pass's work budget ran out (SPEC §13.6.3).
    pub fn work_out(&self) -> bool {
        self.eng.work_out
    }

    /// Expands `tree` (a template whose value tokens are `stpreset_capture` calls) with the
    /// tokens' `values`, spending its bytes from `work` (the pass's). `id` names the template
    /// in diagnostics and seeds `pick`. Writes are
    /// undone afterwards; `{{trim}}` trims the output, which is otherwise kept as it is
    /// (whitespace included).
    #[allow(clippy::too_many_arguments)]
    pub fn expand(
        &mut self,
        work: &mut Allowance,
        id: &str,
        tree: &Tree,
        values: Vec<String>,
        escape: bool,
        speaker: Option<&str>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> String {
        let eng = &mut self.eng;
        eng.vars.rollback();
        eng.script = Some(ScriptFrame {
            values,
            escape,
            speaker: speaker.map(str::to_string),
        });
        eng.decisions.clear();
        eng.decisions.resize(tree.blocks.len(), 0);
        eng.records.clear();
        eng.records.resize(tree.slots as usize, Record::default());
        let node = EvalNode {
            id,
            tree,
            findings: &[],
            personality: None,
            suppresses: false,
            st_engine: false,
        };
        let st = NodeState {
            block_base: 0,
            slot_base: 0,
        };
        let granted = usize::try_from(work.left()).unwrap_or(usize::MAX);
        eng.work_left = granted;
        eng.work_metered = work.meter_binds();
        Run::new(eng, &node, &st).walk(tree.root);
        let mut run = Run::new(eng, &node, &st);
        let mut text = String::new();
        run.expand(tree.root, Mode::Body { literal: true }, &mut text);
        if run.sig.has(Signals::TRIM) {
            text::trim_in_place(&mut text);
        }
        work.spend((granted - eng.work_left) as u64);
        if eng.work_out {
            work.stopped();
        }
        diagnostics.append(&mut eng.diags);
        text
    }
}

/// Where a node's pass-1 results start in the engine's shared vectors.
struct NodeState {
    block_base: usize,
    slot_base: usize,
}

#[derive(Default, Clone)]
struct Record {
    output: String,
    signals: Signals,
    /// A shorthand selection's pass-1 choice (`shorthand::CHOSE_*`).
    choice: u8,
    /// A scoped declaration refused in pass 1: pass 2 renders the pair as written.
    rejected: bool,
}

#[cfg(test)]
mod tests {
    /// The splitting `st_trim` replaced, kept as the oracle.
    fn st_trim_by_split(text: &str) -> String {
        let mark = super::st_trim_mark();
        let pieces: Vec<&str> = text.split(mark).collect();
        let last = pieces.len() - 1;
        let mut joined = String::new();
        for (i, piece) in pieces.iter().enumerate() {
            let mut p: &str = piece;
            if i > 0 {
                while let Some(r) = p.strip_prefix('\n').or_else(|| p.strip_prefix("\r\n")) {
                    p = r;
                }
            }
            if i < last {
                while let Some(r) = p.strip_suffix('\n') {
                    p = r.strip_suffix('\r').unwrap_or(r);
                }
            }
            joined.push_str(p);
        }
        joined
    }

    #[test]
    fn st_trim_deletes_each_mark_and_the_newlines_around_it() {
        let m = super::st_trim_mark();
        // One spare buffer throughout, as a render passes it from prompt to prompt: what it
        // kept from one text never shows in the next.
        let mut spare = String::from("left over");
        let mut st_trim = |text: String| super::st_trim(text, &mut spare);
        assert_eq!(st_trim(format!("a\n\r\n{m}\n\nb")), "ab");
        assert_eq!(st_trim(format!("{m}\nx\n{m}")), "x");
        assert_eq!(st_trim("no mark\n".into()), "no mark\n");
        // Against the split-based version, over texts built from the pieces that matter.
        let parts = ["\n", "\r\n", "\r", "x", " ", m];
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..3000 {
            let mut text = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 12) as usize;
            let mut s = state;
            for _ in 0..len {
                text.push_str(parts[(s % parts.len() as u64) as usize]);
                s /= parts.len() as u64;
                if s == 0 {
                    s = state.rotate_left(17) | 1;
                }
            }
            assert_eq!(st_trim(text.clone()), st_trim_by_split(&text), "{text:?}");
        }
    }
}
