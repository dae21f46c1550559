//! A preset compiled once (every taking-part node parsed into a tree) and rendered many times.

use std::collections::BTreeMap;

use super::{Preset, PresetNode};
use crate::assemble::{self, Slot};
use crate::context::{Context, Host};
use crate::diagnostic::{Diagnostic, Finding};
use crate::eval::{self, EvalNode, Signals};
use crate::limits::Limits;
use crate::syntax::{self, Tree};

pub use crate::assemble::{Message, Source};

/// What rendering needs of a node besides its tree (the content lives in the tree).
#[derive(Debug)]
struct NodeInfo {
    identifier: Box<str>,
    role: Box<str>,
    marker: bool,
    depth: Option<(i32, i32)>,
}

impl From<&PresetNode> for NodeInfo {
    fn from(n: &PresetNode) -> Self {
        NodeInfo {
            identifier: n.identifier.as_str().into(),
            role: n.role.as_str().into(),
            marker: n.is_marker(),
            depth: n
                .is_depth()
                .then_some((n.injection_depth, n.injection_order)),
        }
    }
}

/// A parsed node: its tree and its parse findings.
#[derive(Debug)]
struct Compiled {
    tree: Tree,
    findings: Vec<Finding>,
}

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
/// let texts: Vec<String> = out.messages.iter().map(|m| m.text()).collect();
/// assert_eq!(texts, ["You are Tomori.", "hi\n[System: Stay in character.]"]);
/// ```
#[derive(Debug)]
pub struct CompiledPreset {
    nodes: Vec<NodeInfo>,
    /// Per node: the parsed tree of an enabled, non-marker node.
    compiled: Vec<Option<Compiled>>,
    /// Nodes that take part in the passes (compiled, not comment-only), in preset order.
    evaluated: Vec<usize>,
    /// Nodes the assembler walks, in preset order, each with its position in `evaluated`.
    walked: Vec<(usize, Option<usize>)>,
    import_diagnostics: Vec<Diagnostic>,
}

/// The result of rendering a preset.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Rendered {
    /// The ordered messages for the model provider.
    pub messages: Vec<Message>,
    /// Import, parse, pass-1, pass-2 and assembly diagnostics, in that order.
    pub diagnostics: Vec<Diagnostic>,
    /// Local variables after the render.
    pub variables: BTreeMap<String, String>,
    /// Global variables after the render.
    pub globals: BTreeMap<String, String>,
}

use serde::Serialize;

impl Preset {
    /// Parses every enabled, non-marker node once, with the default limits.
    pub fn compile(&self) -> CompiledPreset {
        self.compile_with(&Limits::default())
    }

    /// Parses every enabled, non-marker node once, with the given parse limits.
    pub fn compile_with(&self, limits: &Limits) -> CompiledPreset {
        let compiled: Vec<Option<Compiled>> = self
            .nodes
            .iter()
            .map(|n| {
                (n.enabled && !n.is_marker()).then(|| {
                    let (tree, findings) = syntax::parse(n.content.as_str().into(), limits);
                    Compiled { tree, findings }
                })
            })
            .collect();
        // Which nodes take part and which the walk visits is fixed here, not per render.
        let mut evaluated = Vec::new();
        let mut walked = Vec::new();
        for (i, (node, c)) in self.nodes.iter().zip(&compiled).enumerate() {
            let eval = c.as_ref().filter(|c| !c.tree.comment_only).map(|_| {
                evaluated.push(i);
                evaluated.len() - 1
            });
            // Comment-only custom nodes never render; `main` stays as the anchor.
            let marker = node.enabled && node.is_marker();
            if marker || eval.is_some() || (c.is_some() && node.identifier == "main") {
                walked.push((i, eval));
            }
        }
        CompiledPreset {
            nodes: self.nodes.iter().map(NodeInfo::from).collect(),
            compiled,
            evaluated,
            walked,
            import_diagnostics: self.diagnostics.clone(),
        }
    }
}

impl CompiledPreset {
    /// Whether node `index` holds only comments, `{{trim}}` and whitespace (never rendered).
    /// `None` for nodes that were not compiled (disabled nodes and markers).
    pub fn is_comment_only(&self, index: usize) -> Option<bool> {
        self.compiled
            .get(index)?
            .as_ref()
            .map(|c| c.tree.comment_only)
    }

    /// Renders against `ctx`, answering host predicates from `ctx.host`.
    pub fn render(&self, ctx: &Context) -> Rendered {
        self.render_with_host(ctx, &ctx.host)
    }

    /// Renders against `ctx`, answering host predicates from `host`.
    pub fn render_with_host(&self, ctx: &Context, host: &dyn Host) -> Rendered {
        let eval_nodes: Vec<EvalNode<'_>> = self
            .evaluated
            .iter()
            .filter_map(|&i| {
                let c = self.compiled[i].as_ref()?;
                Some(EvalNode {
                    id: &self.nodes[i].identifier,
                    tree: &c.tree,
                    findings: &c.findings,
                })
            })
            .collect();
        let mut ev = eval::evaluate(&eval_nodes, ctx, host);
        let mut signals = Signals::default();
        for out in &ev.nodes {
            signals.add(out.signals);
        }
        let mut slots: Vec<Slot<'_>> = self
            .walked
            .iter()
            .map(|&(i, eval)| {
                let n = &self.nodes[i];
                Slot {
                    identifier: &n.identifier,
                    role: &n.role,
                    marker: n.marker,
                    depth: n.depth,
                    text: eval
                        .and_then(|e| ev.nodes.get_mut(e))
                        .map_or_else(String::new, |o| std::mem::take(&mut o.text)),
                }
            })
            .collect();
        let mut diagnostics =
            Vec::with_capacity(self.import_diagnostics.len() + ev.diagnostics.len() + 4);
        diagnostics.extend_from_slice(&self.import_diagnostics);
        diagnostics.extend(ev.diagnostics);
        let messages = assemble::assemble(&mut slots, signals, ctx, &mut diagnostics);
        Rendered {
            messages,
            diagnostics,
            variables: ev.variables,
            globals: ev.globals,
        }
    }
}
