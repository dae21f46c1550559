//! A template compiled once: its tree and parse findings under the identifier it renders as
//! (a preset node, a setting's template, a lone template), shared by both layouts.

use crate::diagnostic::Finding;
use crate::eval::EvalNode;
use crate::limits::Limits;
use crate::syntax::{self, Tree};

/// One template compiled: its tree and parse findings, under the identifier it renders as.
#[derive(Debug)]
pub(crate) struct CompiledNode {
    pub id: Box<str>,
    pub tree: Tree,
    pub findings: Vec<Finding>,
}

impl CompiledNode {
    pub fn compile(id: &str, source: &str, limits: &Limits) -> CompiledNode {
        let (tree, findings) = syntax::parse(source.into(), limits);
        CompiledNode {
            id: id.into(),
            tree,
            findings,
        }
    }

    pub(crate) fn eval(&self) -> EvalNode<'_> {
        EvalNode {
            id: &self.id,
            tree: &self.tree,
            findings: &self.findings,
            personality: None,
            suppresses: true,
            st_engine: false,
        }
    }

    /// A setting's template (SPEC §14.6), when it takes part in a render: present, not blank,
    /// and not a format that changes nothing.
    pub fn setting(key: &str, text: Option<&str>, limits: &Limits) -> Option<CompiledNode> {
        let text = text?;
        let identity = matches!(
            (key, text),
            ("personality_format", "{{personality}}")
                | ("scenario_format", "{{scenario}}")
                | ("wi_format", "{0}")
        );
        (!text.trim().is_empty() && !identity).then(|| CompiledNode::compile(key, text, limits))
    }
}
