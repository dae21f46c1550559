//! `stpreset expand [FILE|-]`: one template, rendered as a lone node.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use stpreset::{Template, TextReport};

use super::{ContextArgs, Failure, Format, read};

#[derive(Args)]
pub(crate) struct ExpandArgs {
    /// Template file; `-` or nothing reads standard input.
    file: Option<PathBuf>,
    #[command(flatten)]
    context: ContextArgs,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub(crate) fn run(args: ExpandArgs) -> Result<(), Failure> {
    let (name, bytes) = match &args.file {
        Some(p) if p.as_os_str() != "-" => (p.display().to_string(), read(p)?),
        _ => {
            let name = "<stdin>".to_string();
            let bytes = super::read_capped(std::io::stdin().lock(), &name)?;
            (name, bytes)
        }
    };
    let ctx = args.context.load()?;
    let template = Template::from_bytes(&bytes).map_err(|e| Failure(format!("{name}: {e}")))?;
    let out = template.render(&ctx);
    let mut stdout = super::stdout();
    let written = match args.format {
        Format::Text => {
            let mut stderr = super::stderr();
            // Diagnostics are best effort: a closed stderr must not fail the render.
            let _ =
                TextReport::template(&name, template.source()).write(&mut stderr, &out.diagnostics);
            let _ = stderr.flush();
            stdout.write_all(out.text.as_bytes())
        }
        Format::Json => out.write_json(&mut stdout),
    };
    super::finish(&mut stdout, written)
}
