//! A preset compiled once: every taking-part node parsed, and its assembly resolved into a
//! plan, so a render only evaluates and follows the plan (`render`).

use super::Preset;
use crate::assemble::{Plan, PlanNode};
use crate::context::Context;
use crate::diagnostic::Diagnostic;
use crate::limits::Limits;
use crate::render::{self, CompiledNode, Rendered};
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
            let text = compiled.filter(|c| !c.tree.comment_only).map(|c| {
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
        CompiledPreset {
            nodes,
            comment_only,
            plan: Plan::new(walked),
            import_diagnostics: self.diagnostics.clone(),
            settings: self.settings.clone(),
            templates,
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
        let parts = render::PresetParts {
            nodes: &self.nodes,
            plan: &self.plan,
            import: &self.import_diagnostics,
            settings: &self.settings,
            templates: &self.templates,
        };
        render::preset(&parts, ctx)
    }

    /// The settings it renders with (SPEC §14).
    pub fn settings(&self) -> &PresetSettings {
        &self.settings
    }
}
