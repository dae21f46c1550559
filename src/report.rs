//! Diagnostics in human form for a whole render or audit: each one against its node's source,
//! with a cap per node and per run so the text stays within a constant factor of the input
//! (a line of 40k unknown macros must not print 40k copies of that line).

use std::collections::HashMap;
use std::io::{self, Write};

use crate::diagnostic::Diagnostic;
use crate::preset::Preset;

/// Most diagnostics printed for one node.
pub const MAX_PER_NODE: usize = 20;
/// Most diagnostics printed in all.
pub const MAX_PER_RUN: usize = 200;

/// Writes diagnostics like a compiler, each with a snippet of the source it points into.
///
/// Node sources are looked up once (by identifier, the first node wins as on import), so
/// printing is linear in the number of diagnostics. At most 20 diagnostics of
/// one node and 200 in all are printed; a last line says how many were left out.
/// The library's values and JSON output keep every diagnostic.
///
/// ```
/// let preset = stpreset::Preset::from_json(br#"{"prompts": [
///     {"identifier": "main", "content": "{{x}}{{y}}"}]}"#).unwrap();
/// let ctx = stpreset::Context::default();
/// let out = preset.compile().render(&ctx);
/// let mut text = Vec::new();
/// stpreset::report::TextReport::preset("p.json", &preset).write(&mut text, &out.diagnostics).unwrap();
/// let text = String::from_utf8(text).unwrap();
/// assert!(text.contains("p.json#main:1:6"));
/// ```
pub struct TextReport<'a> {
    file: &'a str,
    sources: Sources<'a>,
}

enum Sources<'a> {
    /// Every diagnostic points into this one text.
    Template(&'a str),
    /// Diagnostics point into the content of the node they name.
    Nodes(HashMap<&'a str, &'a str>),
}

impl<'a> TextReport<'a> {
    /// Diagnostics of one template read from `file`.
    pub fn template(file: &'a str, source: &'a str) -> Self {
        TextReport {
            file,
            sources: Sources::Template(source),
        }
    }

    /// Diagnostics of a preset read from `file`, labelled `file#node`.
    pub fn preset(file: &'a str, preset: &'a Preset) -> Self {
        let mut nodes = HashMap::with_capacity(preset.nodes().len());
        for n in preset.nodes() {
            nodes
                .entry(n.identifier.as_str())
                .or_insert(n.content.as_str());
        }
        TextReport {
            file,
            sources: Sources::Nodes(nodes),
        }
    }

    /// Diagnostics without sources (snippets are left out), labelled `file#node`.
    pub fn without_sources(file: &'a str) -> Self {
        TextReport {
            file,
            sources: Sources::Nodes(HashMap::new()),
        }
    }

    /// Writes `diags` to `out` within the caps.
    pub fn write(&self, out: &mut dyn Write, diags: &[Diagnostic]) -> io::Result<()> {
        let mut per_node: HashMap<Option<&str>, usize> = HashMap::new();
        let mut printed = 0;
        let mut left_out = 0;
        for d in diags {
            let seen = per_node.entry(d.node.as_deref()).or_default();
            if printed == MAX_PER_RUN || *seen == MAX_PER_NODE {
                left_out += 1;
                continue;
            }
            *seen += 1;
            printed += 1;
            let (label, source) = match (&self.sources, &d.node) {
                (Sources::Template(src), _) => (self.file.into(), Some(*src)),
                (Sources::Nodes(nodes), Some(id)) => (
                    format!("{}#{id}", self.file).into(),
                    nodes.get(id.as_str()).copied(),
                ),
                (Sources::Nodes(_), None) => (std::borrow::Cow::Borrowed(self.file), None),
            };
            out.write_all(d.render(&label, source).as_bytes())?;
        }
        if left_out > 0 {
            writeln!(
                out,
                "… and {left_out} more diagnostics not shown (at most {MAX_PER_NODE} per node \
                 and {MAX_PER_RUN} in all; JSON output lists every one)"
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text report of rendering `nodes` copies of `content`.
    fn report_of(content: &str, nodes: usize) -> String {
        let prompts: Vec<_> = (0..nodes)
            .map(|i| serde_json::json!({"identifier": format!("n{i}"), "content": content}))
            .collect();
        let json = serde_json::json!({ "prompts": prompts });
        let preset = Preset::from_json(json.to_string().as_bytes()).unwrap();
        let ctx = crate::context::Context::default();
        let out = preset.compile().render(&ctx);
        let mut text = Vec::new();
        TextReport::preset("p.json", &preset)
            .write(&mut text, &out.diagnostics)
            .unwrap();
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn caps_per_node_and_counts_the_rest() {
        let text = report_of(&"{{x}}".repeat(50), 2);
        assert_eq!(text.matches("info[UnknownMacro]").count(), 2 * MAX_PER_NODE);
        assert!(text.contains("… and 60 more diagnostics"), "{text}");
    }

    #[test]
    fn caps_per_run() {
        let text = report_of(&"{{x}}".repeat(10), 30);
        assert_eq!(text.matches("info[UnknownMacro]").count(), MAX_PER_RUN);
        assert!(text.contains("… and 100 more diagnostics"), "{text}");
    }

    #[test]
    fn no_footer_when_everything_fits() {
        let text = report_of("{{x}}", 2);
        assert_eq!(text.matches("info[UnknownMacro]").count(), 2);
        assert!(!text.contains("more diagnostics"));
    }
}
