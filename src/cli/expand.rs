//! `stpreset expand [FILE|-]`: one template, rendered as a lone node.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use stpreset::{Template, report::TextReport};

use super::{ContextArgs, Failure, Format, read};

#[derive(Args)]
pub(crate) struct ExpandArgs {
    /// Template file; `-` or nothing reads standard input.
    file: Option<PathBuf>,
    #[command(flatten)]
    context: ContextArgs,
    /// `text`: the expanded text; `json`: `{"text", "diagnostics", "variables"}`.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub(crate) fn run(args: ExpandArgs) -> Result<(), Failure> {
    let stdin = std::path::Path::new("-");
    let file = args.file.as_deref().unwrap_or(stdin);
    super::one_stdin(&[Some(file), args.context.context.as_deref()])?;
    let name = if file == stdin {
        "<stdin>".to_string()
    } else {
        file.display().to_string()
    };
    let bytes = read(file, "template")?;
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
