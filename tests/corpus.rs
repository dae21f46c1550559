//! Every real preset in `../shared/corpus/presets/` imports, compiles, renders with a realistic
//! context and audits, without a panic or an error. Skips with a message when the corpus is
//! absent. Run with `--nocapture` to see the per-preset table.

use std::collections::BTreeMap;

use stpreset::Preset;

#[path = "../benches/support/mod.rs"]
mod support;
use support::realistic_context;

#[test]
fn every_corpus_preset_renders_and_audits() {
    let paths = support::corpus();
    if paths.is_empty() {
        return;
    }
    let ctx = realistic_context(20);
    eprintln!(
        "{:<48} {:>6} {:>7} {:>9}  diagnostics",
        "preset", "nodes", "enabled", "out bytes"
    );
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let preset = Preset::from_json(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let out = preset.compile().render(&ctx);
        assert!(!out.messages.is_empty(), "{name}: no messages");
        let history = out
            .messages
            .iter()
            .filter(|m| m.source == stpreset::Source::Tag(Some(stpreset::Tag::DialogueHistory)))
            .count();
        assert_eq!(history, 20, "{name}: every history item arrives");
        let audit = preset.audit();
        let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
        for d in out.diagnostics.iter().chain(&audit) {
            *by_kind.entry(d.kind.to_string()).or_default() += 1;
        }
        let bytes_out: usize = out.messages.iter().map(|m| m.text().len()).sum();
        let enabled = preset.nodes().iter().filter(|n| n.enabled).count();
        eprintln!(
            "{name:<48} {:>6} {enabled:>7} {bytes_out:>9}  {by_kind:?}",
            preset.nodes().len()
        );
    }
}
