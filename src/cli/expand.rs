//! `stpreset expand [FILE|-]`: one template, rendered as a lone node.

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use stpreset::Template;

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
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| Failure(format!("cannot read standard input: {e}")))?;
            ("<stdin>".to_string(), buf)
        }
    };
    let ctx = args.context.load()?;
    let template = Template::from_bytes(&bytes).map_err(|e| Failure(format!("{name}: {e}")))?;
    let out = template.render(&ctx);
    let stdout = std::io::stdout();
    let mut stdout = stdout.lock();
    let written = match args.format {
        Format::Text => {
            let mut stderr = std::io::stderr().lock();
            for d in &out.diagnostics {
                // Diagnostics are best effort: a closed stderr must not fail the render.
                let _ = write!(stderr, "{}", d.render(&name, Some(template.source())));
            }
            stdout.write_all(out.text.as_bytes())
        }
        Format::Json => {
            let doc = json!({
                "text": out.text,
                "diagnostics": out.diagnostics,
                "variables": out.variables,
            });
            writeln!(stdout, "{doc}")
        }
    };
    written
        .and_then(|()| stdout.flush())
        .map_err(|e| Failure(format!("cannot write output: {e}")))
}
