//! `stpreset render PRESET.json` and `stpreset audit PRESET.json`.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use stpreset::{Diagnostic, Message, Preset, Rendered, Role, Source};

use super::{ContextArgs, Failure, Format, read};

/// `audit --format json`.
#[derive(Serialize)]
struct AuditJson<'a> {
    nodes: usize,
    enabled: usize,
    diagnostics: &'a [Diagnostic],
}

#[derive(Args)]
pub(crate) struct RenderArgs {
    /// Preset file (SillyTavern JSON).
    preset: PathBuf,
    #[command(flatten)]
    context: ContextArgs,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Args)]
pub(crate) struct AuditArgs {
    /// Preset file (SillyTavern JSON).
    preset: PathBuf,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

fn import(path: &std::path::Path) -> Result<Preset, Failure> {
    let bytes = read(path)?;
    Preset::from_json(&bytes).map_err(|e| Failure(format!("{}: {e}", path.display())))
}

/// Diagnostics in human form, each with its node's source line when it has a position.
fn print_diagnostics(file: &str, preset: Option<&Preset>, diags: &[Diagnostic]) {
    let mut stderr = super::stderr();
    for d in diags {
        let source = d.node.as_deref().and_then(|id| {
            preset?
                .nodes()
                .iter()
                .find(|n| n.identifier == id)
                .map(|n| n.content.as_str())
        });
        let label = match &d.node {
            Some(id) => format!("{file}#{id}"),
            None => file.to_string(),
        };
        // Best effort: a closed stderr must not fail the command.
        let _ = write!(stderr, "{}", d.render(&label, source));
    }
    let _ = stderr.flush();
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Model => "model",
    }
}

fn source_name(source: &Source) -> String {
    match source {
        Source::Node(id) => format!("node {id}"),
        Source::Tag(Some(tag)) => serde_json::to_value(tag)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        Source::Tag(None) => "untagged".into(),
        _ => "SAMPLE_SEPARATOR".into(),
    }
}

fn write_text(out: &mut impl Write, messages: &[Message]) -> std::io::Result<()> {
    for m in messages {
        writeln!(
            out,
            "### {} ({})",
            role_name(m.role),
            source_name(&m.source)
        )?;
        writeln!(out, "{}", m.text())?;
    }
    Ok(())
}

/// Writes a render result: messages (text) or the whole result (JSON) to `out`; in text
/// form the diagnostics go to stderr.
pub(crate) fn print_rendered(
    out: &mut impl Write,
    rendered: &Rendered,
    format: Format,
    file: &str,
) -> std::io::Result<()> {
    match format {
        Format::Text => {
            print_diagnostics(file, None, &rendered.diagnostics);
            write_text(out, &rendered.messages)
        }
        Format::Json => super::write_json(out, rendered),
    }
}

pub(crate) fn render(args: RenderArgs) -> Result<(), Failure> {
    let preset = import(&args.preset)?;
    let ctx = args.context.load()?;
    let out = preset.compile().render(&ctx);
    let file = args.preset.display().to_string();
    let mut stdout = super::stdout();
    let written = match args.format {
        Format::Text => {
            print_diagnostics(&file, Some(&preset), &out.diagnostics);
            write_text(&mut stdout, &out.messages)
        }
        Format::Json => print_rendered(&mut stdout, &out, args.format, &file),
    };
    super::finish(&mut stdout, written)
}

pub(crate) fn audit(args: AuditArgs) -> Result<(), Failure> {
    let preset = import(&args.preset)?;
    let diags = preset.audit();
    let file = args.preset.display().to_string();
    let nodes = preset.nodes();
    let enabled = nodes.iter().filter(|n| n.enabled).count();
    let mut stdout = super::stdout();
    let written = match args.format {
        Format::Text => {
            print_diagnostics(&file, Some(&preset), &diags);
            writeln!(
                stdout,
                "{file}: {} nodes ({enabled} enabled), {} warnings, {} notes",
                nodes.len(),
                diags
                    .iter()
                    .filter(|d| d.severity() == stpreset::Severity::Warning)
                    .count(),
                diags
                    .iter()
                    .filter(|d| d.severity() == stpreset::Severity::Info)
                    .count(),
            )
        }
        Format::Json => {
            let doc = AuditJson {
                nodes: nodes.len(),
                enabled,
                diagnostics: &diags,
            };
            super::write_json(&mut stdout, &doc)
        }
    };
    super::finish(&mut stdout, written)
}
