//! `stpreset nodes`: a preset's nodes as its author arranged them for the people switching
//! them (issue 41): sections, switches, tooltips, badges and exclusive groups.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use stpreset::diagnostic::terminal_line;

use super::{Failure, Format};

#[derive(Args)]
pub(crate) struct NodesArgs {
    /// Preset file (SillyTavern JSON); `-` reads standard input.
    preset: PathBuf,
    /// `text`: one line per node under its section's heading with the section's on/total;
    /// `json`: `{"nodes", "groups", "sections"}` (docs/presets.md, "Sections and directives").
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub(crate) fn run(args: NodesArgs) -> Result<(), Failure> {
    let preset = super::render::import(&args.preset)?;
    let outline = preset.outline();
    let mut out = super::stdout();
    let written = match args.format {
        Format::Json => writeln!(out, "{}", outline.to_json()),
        Format::Text => write_text(&mut out, &outline),
    };
    super::finish(&mut out, written)
}

/// `# Title (on/total)` per main header, `## Title (on/total)` per sub-header, then each node
/// as `[x] NAME  IDENTIFIER`, its groups and badge after it, its tooltip on the next line.
pub(crate) fn write_text(
    out: &mut impl Write,
    o: &stpreset::outline::Outline,
) -> std::io::Result<()> {
    // By header node: one lookup per header, however many there are.
    let sections: std::collections::HashMap<&str, &stpreset::outline::Section> = o
        .sections
        .iter()
        .flat_map(|s| std::iter::once(s).chain(&s.sections))
        .map(|s| (s.identifier.as_str(), s))
        .collect();
    for n in &o.nodes {
        let name = terminal_line(&n.name);
        match n.header {
            Some(level) => {
                let (title, on, total) = sections
                    .get(n.identifier.as_str())
                    .map_or(("", 0, 0), |s| (s.title.as_str(), s.enabled, s.total));
                let marks = if level == "main" { "#" } else { "##" };
                writeln!(out, "{marks} {} ({on}/{total})", terminal_line(title))?;
            }
            None => {
                let mut line = format!(
                    "{}[{}] {name}  {}",
                    "  ".repeat(n.section.len()),
                    if n.enabled { "x" } else { " " },
                    terminal_line(&n.identifier)
                );
                for g in &n.groups {
                    line.push_str(&format!("  (one of: {})", terminal_line(g)));
                }
                for b in &n.badges {
                    line.push_str(&format!("  [{}]", terminal_line(b)));
                }
                writeln!(out, "{line}")?;
                if let Some(t) = &n.tooltip {
                    writeln!(
                        out,
                        "{}    {}",
                        "  ".repeat(n.section.len()),
                        terminal_line(t)
                    )?;
                }
            }
        }
    }
    Ok(())
}
