//! `stpreset render PRESET.json` and `stpreset audit PRESET.json`.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use stpreset::{
    Context, Diagnostic, Message, Preset, Rendered, Role, Shape, Source, diagnostic::terminal_line,
    diagnostic::terminal_safe, report::TextReport,
};

use super::{ContextArgs, Failure, Format, read};

#[derive(Args)]
pub(crate) struct RenderArgs {
    /// Preset file (SillyTavern JSON); `-` reads standard input.
    preset: PathBuf,
    #[command(flatten)]
    context: ContextArgs,
    /// `text`: the messages; `json`: `{"messages", "diagnostics", "variables", "globals",
    /// "prompt_tokens", "effective"}` (with `--shape`: `{"request", ...}`).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Print the provider request of this shape (SPEC §12) instead of the messages; overrides
    /// the context's `provider_options.shape`.
    #[arg(long, value_parser = shape_arg())]
    shape: Option<Shape>,
    /// Lets the preset's regex scripts run on the history and lore (the context's
    /// `allow_preset_regex`, SPEC §13.6).
    #[arg(long)]
    allow_regex: bool,
    #[command(flatten)]
    scripts: super::ScriptFlags,
    #[command(flatten)]
    lore: super::lore::LoreFlags,
    /// Which request to build: `seed` (stpreset's layout) or `sillytavern` (the body the live
    /// SillyTavern app sends, SPEC §17); overrides the context's `layout`.
    #[arg(long, value_enum)]
    layout: Option<LayoutArg>,
    /// A SillyTavern chat file (`.jsonl`) as the history (SPEC §17.5): its messages replace
    /// the context's `DIALOGUE_HISTORY` items, its metadata fills what the context leaves unset.
    #[arg(long, value_name = "CHAT.jsonl")]
    chat: Option<PathBuf>,
    /// The prompt of a `--generation quiet` (the context's `quiet_prompt`, SPEC §18.1).
    #[arg(long, value_name = "TEXT")]
    quiet_prompt: Option<String>,
    /// When the chat has no history, start it as SillyTavern opens a new chat: the card's
    /// first message, its swipe SWIPE (0, the default: `first_mes`; then the alternate
    /// greetings).
    #[arg(long, value_name = "SWIPE", num_args = 0..=1, default_missing_value = "0")]
    first_message: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LayoutArg {
    Seed,
    Sillytavern,
}

/// `--shape`: one of [`Shape::NAMES`] (`gemini` is `google`), listed in `--help`.
pub(crate) fn shape_arg() -> impl clap::builder::TypedValueParser<Value = Shape> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Shape::NAMES.map(|(n, _)| n))
        .try_map(|name| name.parse::<Shape>())
}

#[derive(Args)]
pub(crate) struct AuditArgs {
    /// Preset file (SillyTavern JSON); `-` reads standard input.
    preset: PathBuf,
    /// `text`: the findings and a summary; `json`: `{"nodes", "enabled", "diagnostics"}`.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Text findings on stdout with the summary (default: findings on stderr), so
    /// `stpreset audit p.json --stdout > report.txt` keeps the whole report (JSON output is
    /// one document on stdout anyway).
    #[arg(long)]
    stdout: bool,
}

pub(crate) fn import(path: &std::path::Path) -> Result<Preset, Failure> {
    let bytes = read(path, "preset")?;
    Preset::from_json(&bytes).map_err(|e| Failure(format!("{}: {e}", super::input_name(path))))
}

/// Diagnostics in human form on stderr, each with its node's source line when it has one.
fn print_diagnostics(report: &TextReport<'_>, diags: &[Diagnostic]) {
    let mut stderr = super::stderr();
    // Best effort: a closed stderr must not fail the command.
    let _ = report.write(&mut stderr, diags);
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
        Source::Node(id) => format!("node {}", terminal_line(id)),
        Source::Tag(Some(tag)) => tag.name().into(),
        Source::Tag(None) => "untagged".into(),
        Source::SampleSeparator => "SAMPLE_SEPARATOR".into(),
        Source::Setting(key) => format!("setting {key}"),
        Source::Injection(parts) => {
            let parts: Vec<String> = parts.iter().map(source_name).collect();
            format!("injected: {}", parts.join(", "))
        }
        // `Source` is non-exhaustive: a future kind prints its JSON.
        other => serde_json::to_string(other).unwrap_or_default(),
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
        // The text is the payload (newlines and tabs kept); other control characters are
        // escaped like everything else this human view prints. JSON output is exact.
        writeln!(out, "{}", terminal_safe(&m.text()))?;
    }
    Ok(())
}

/// Writes a render result to `out`: the provider request when a shape is asked for (`shape`,
/// or the context's `provider_options.shape`), else the messages (text) or the whole result
/// (JSON). In text form the diagnostics go to stderr through `report`.
pub(crate) fn print_result(
    out: &mut impl Write,
    rendered: &Rendered,
    ctx: &Context,
    shape: Option<Shape>,
    format: Format,
    report: &TextReport<'_>,
) -> std::io::Result<()> {
    let mut provider = ctx.provider_options.clone();
    if let Some(shape) = shape {
        provider.shape = Some(shape);
    }
    match (provider.shape.is_some(), format) {
        (true, Format::Text) => {
            let (request, request_diags) = rendered.to_request(&provider);
            let mut diags = rendered.diagnostics.clone();
            diags.extend(request_diags);
            print_diagnostics(report, &diags);
            serde_json::to_writer(&mut *out, &request).map_err(std::io::Error::from)?;
            writeln!(out)
        }
        (true, Format::Json) => rendered.write_request_json(&provider, out),
        (false, Format::Text) => {
            print_diagnostics(report, &rendered.diagnostics);
            write_text(out, &rendered.messages)
        }
        (false, Format::Json) => rendered.write_json(out),
    }
}

pub(crate) fn render(args: RenderArgs) -> Result<(), Failure> {
    super::one_stdin(&[
        Some(&args.preset),
        args.context.context.as_deref(),
        args.chat.as_deref(),
    ])?;
    let preset = import(&args.preset)?;
    let mut ctx = args.context.load()?;
    ctx.allow_preset_regex |= args.allow_regex;
    if let Some(layout) = args.layout {
        ctx.layout = match layout {
            LayoutArg::Seed => stpreset::Layout::Seed,
            LayoutArg::Sillytavern => stpreset::Layout::SillyTavern,
        };
    }

    // SillyTavern builds some prompts for its source (a Claude continue's prefill): the
    // layout reads the shape at render time (the seed layout only when the request is made).
    if ctx.layout == stpreset::Layout::SillyTavern
        && let Some(shape) = args.shape
    {
        ctx.provider_options.shape = Some(shape);
    }
    args.lore.apply(&mut ctx)?;
    args.scripts.apply(&mut ctx)?;
    if let Some(prompt) = args.quiet_prompt {
        ctx.user_settings.quiet_prompt = prompt;
    }
    // After the card: the card's name wins over the chat header's `character_name`.
    if let Some(path) = &args.chat {
        apply_chat(&mut ctx, path)?;
    }
    let compiled = preset.compile();
    if let Some(swipe) = args.first_message {
        start_chat(&compiled, &mut ctx, swipe)?;
    }
    let out = compiled.render(&ctx);
    let file = super::input_name(&args.preset);
    let mut stdout = super::stdout();
    let report = TextReport::preset(&file, &preset);
    let written = print_result(&mut stdout, &out, &ctx, args.shape, args.format, &report);
    super::finish(&mut stdout, written)
}

/// `--first-message SWIPE`: a chat without history starts with the character's first message
/// (ST's `getFirstMessage`); a chat that has history is left as it is, as ST does.
fn start_chat(
    compiled: &stpreset::CompiledPreset,
    ctx: &mut Context,
    swipe: usize,
) -> Result<(), Failure> {
    if ctx
        .items
        .iter()
        .any(|i| i.tag == Some(stpreset::Tag::DialogueHistory))
    {
        return Ok(());
    }
    let Some(first) = compiled.first_message(ctx) else {
        return Ok(());
    };
    let Some(text) = first.swipes.get(swipe) else {
        return Err(Failure(format!(
            "--first-message {swipe}: the character has {} greeting(s), numbered from 0",
            first.swipes.len()
        )));
    };
    let mut item = first.item;
    item.text = text.clone();
    ctx.items.push(item);
    Ok(())
}

/// Reads `--chat` into the context (SPEC §17.5).
pub(crate) fn apply_chat(ctx: &mut Context, path: &std::path::Path) -> Result<(), Failure> {
    let bytes = super::read_up_to(path, "chat", stpreset::stchat::CHAT_MAX_FILE_BYTES)?;
    ctx.apply_st_chat(&bytes)
        .map_err(|e| Failure(format!("{}: {e}", super::input_name(path))))
}

/// `1 warning`, `2 notes`.
fn counted(diags: &[Diagnostic], severity: stpreset::Severity, what: &str) -> String {
    let n = diags.iter().filter(|d| d.severity() == severity).count();
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

pub(crate) fn audit(args: AuditArgs) -> Result<(), Failure> {
    let preset = import(&args.preset)?;
    let diags = preset.audit();
    let file = super::input_name(&args.preset);
    let nodes = preset.nodes();
    let enabled = nodes.iter().filter(|n| n.enabled).count();
    let mut stdout = super::stdout();
    let written = match args.format {
        Format::Text => {
            let report = TextReport::preset(&file, &preset);
            // With `--stdout`, findings first, then the summary, in one stream.
            let found = if args.stdout {
                report.write(&mut stdout, &diags)
            } else {
                print_diagnostics(&report, &diags);
                Ok(())
            };
            found.and_then(|()| {
                writeln!(
                    stdout,
                    "{}: {} nodes ({enabled} enabled), {}, {}",
                    terminal_line(&file),
                    nodes.len(),
                    counted(&diags, stpreset::Severity::Warning, "warning"),
                    counted(&diags, stpreset::Severity::Info, "note"),
                )
            })
        }
        Format::Json => preset.write_audit_json(&diags, &mut stdout),
    };
    super::finish(&mut stdout, written)
}
