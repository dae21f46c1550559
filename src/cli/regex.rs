//! `stpreset regex PRESET.json [FILE|-]`: one SPEC §13.7 pass of the preset's regex scripts
//! over one text, as a bot runs them around the model.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use stpreset::{passes::PassKind, passes::Placement, passes::RegexPass, report::TextReport};

use super::{ContextArgs, Failure, Format, read};

#[derive(Args)]
pub(crate) struct RegexArgs {
    /// Preset file (SillyTavern JSON); `-` reads standard input.
    preset: PathBuf,
    /// The text to run the scripts on; `-` (the default) reads standard input.
    file: Option<PathBuf>,
    #[command(flatten)]
    context: ContextArgs,
    /// Which call: `store` (a reply or user message before storing it), `edit`, `prompt`
    /// (text sent to the model), `display` (text shown to people, HTML and all) or
    /// `display-text` (the display pass with its HTML as Markdown, for a chat app).
    #[arg(long, value_enum, default_value_t = PassArg::Store)]
    pass: PassArg,
    /// Where the text comes from.
    #[arg(long, value_enum, default_value_t = PlacementArg::Model)]
    placement: PlacementArg,
    /// The message's depth (0 = newest), for the prompt and display passes.
    #[arg(long, value_name = "N")]
    depth: Option<u32>,
    /// Who said it (`char` in trim strings; edit and display passes).
    #[arg(long, value_name = "NAME")]
    speaker: Option<String>,
    /// Lets the preset's regex scripts run (the context's `allow_preset_regex`, SPEC §13.6);
    /// without it nothing runs and a `RegexNotAllowed` note says so.
    #[arg(long)]
    allow_regex: bool,
    #[command(flatten)]
    scripts: super::ScriptFlags,
    /// A character card (PNG or JSON): its regex scripts run after the preset's, with
    /// `--allow-char-regex`.
    #[arg(long, value_name = "CARD")]
    card: Option<PathBuf>,
    /// `text`: the result; `json`: `{"diagnostics", "text"}`.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum PassArg {
    Store,
    Edit,
    Prompt,
    Display,
    DisplayText,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlacementArg {
    User,
    Model,
    WorldInfo,
}

pub(crate) fn run(args: RegexArgs) -> Result<(), Failure> {
    let stdin = PathBuf::from("-");
    let file = args.file.as_ref().unwrap_or(&stdin);
    super::one_stdin(&[
        Some(&args.preset),
        Some(file),
        args.context.context.as_deref(),
    ])?;
    let preset = super::render::import(&args.preset)?;
    let mut ctx = args.context.load()?;
    ctx.allow_preset_regex |= args.allow_regex;
    if let Some(path) = &args.card {
        super::lore::card(path)?.apply_to(&mut ctx);
    }
    args.scripts.apply(&mut ctx)?;
    let bytes = read(file, "text")?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        Failure(format!(
            "{}: not UTF-8 (byte {})",
            super::input_name(file),
            e.valid_up_to()
        ))
    })?;
    let mut pass = RegexPass::new(
        match args.pass {
            PassArg::Store => PassKind::Store,
            PassArg::Edit => PassKind::Edit,
            PassArg::Prompt => PassKind::Prompt,
            PassArg::Display | PassArg::DisplayText => PassKind::Display,
        },
        match args.placement {
            PlacementArg::User => Placement::UserInput,
            PlacementArg::Model => Placement::AiOutput,
            PlacementArg::WorldInfo => Placement::WorldInfo,
        },
    );
    pass.depth = args.depth;
    pass.speaker = args.speaker;
    let mut out = preset.compile().apply_regex(text, &pass, &ctx);
    if args.pass == PassArg::DisplayText {
        out.text = stpreset::scripts::display_markdown(&out.text);
    }
    let mut stdout = super::stdout();
    let written = match args.format {
        Format::Text => {
            let name = super::input_name(&args.preset);
            let report = TextReport::preset(&name, &preset);
            let mut stderr = super::stderr();
            let _ = report.write(&mut stderr, &out.diagnostics);
            let _ = stderr.flush();
            stdout.write_all(out.text.as_bytes())
        }
        Format::Json => out.write_json(&mut stdout),
    };
    super::finish(&mut stdout, written)
}
