//! Argument parsing and dispatch. stdout carries results, stderr diagnostics and errors.
//! Exit codes: 0 success, 1 bad input file, 2 bad usage (clap's own code).

mod expand;
mod lore;
mod nodes;
mod regex;
mod render;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "store")]
mod store;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand, ValueEnum};
use stpreset::Context;

#[derive(Parser)]
#[command(
    name = "stpreset",
    version,
    about = "Render SillyTavern chat-completion presets"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import, render and assemble a preset; print the messages.
    Render(render::RenderArgs),
    /// Import a preset and report problems a preset author should know about.
    Audit(render::AuditArgs),
    /// List a preset's nodes by the author's sections, with tooltips, badges and exclusive
    /// groups.
    Nodes(nodes::NodesArgs),
    /// Render one template as a single enabled custom node and print its text.
    Expand(expand::ExpandArgs),
    /// Run the preset's regex scripts over one text (a reply before storing it, say).
    Regex(regex::RegexArgs),
    /// Activate World Info books for a chat and print what activated and where it goes.
    Lore(lore::LoreArgs),
    /// Read a character card (PNG or JSON) and print its fields and what it adds to a context.
    Card(lore::CardArgs),
    /// Import, list, activate, toggle, delete and render presets kept per server in SQLite.
    #[cfg(feature = "store")]
    Store(store::StoreArgs),
    /// Serve the previewer page on a local address: a preset rendered as a conversation, with
    /// its diagnostics, node switches, settings and provider request (docs/serve.md).
    #[cfg(feature = "serve")]
    Serve(serve::ServeArgs),
}

/// Output format shared by every command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum Format {
    /// For people: the result on stdout, diagnostics on stderr.
    #[default]
    Text,
    /// For programs: one JSON document on stdout (SPEC §9).
    Json,
}

/// Options that build the host context.
#[derive(Args)]
pub(crate) struct ContextArgs {
    /// Context file (SPEC §9); every field optional; `-` reads standard input.
    #[arg(long, value_name = "CTX.json")]
    pub(crate) context: Option<PathBuf>,
    /// Overrides the context file's `seed` (the macros' random source).
    #[arg(long)]
    seed: Option<u64>,
    /// Overrides the context file's `now` (RFC 3339, e.g. 2026-11-29T17:07:00Z).
    #[arg(long, value_name = "RFC3339", value_parser = rfc3339)]
    now: Option<DateTime<Utc>>,
    /// Overrides the context file's `model` (`{{model}}`; for `render`, also the model the
    /// provider request is for).
    #[arg(long)]
    model: Option<String>,
}

impl ContextArgs {
    fn load(&self) -> Result<Context, Failure> {
        let mut ctx = match &self.context {
            Some(path) => Context::from_json(&read(path, "context")?)
                .map_err(|e| Failure(format!("{}: {e}", input_name(path))))?,
            None => Context::default(),
        };
        if let Some(seed) = self.seed {
            ctx.seed = seed;
        }
        if let Some(now) = self.now {
            ctx.now = Some(now);
        }
        if let Some(model) = &self.model {
            ctx.model = model.clone();
        }
        Ok(ctx)
    }
}

/// The host's own regex scripts and the card's permission (issue 39), for `render` and
/// `regex`.
#[derive(clap::Args)]
pub(crate) struct ScriptFlags {
    /// A file of your own regex scripts (SillyTavern's global scripts, as its Regex extension
    /// exports them: one script or a list); they run before the preset's, always. Repeatable.
    #[arg(long = "regex", value_name = "FILE")]
    regex: Vec<PathBuf>,
    /// Lets the card's regex scripts run (the context's `allow_char_regex`); without it they
    /// do not, and a `RegexNotAllowed` note says so.
    #[arg(long)]
    allow_char_regex: bool,
}

impl ScriptFlags {
    pub(crate) fn apply(&self, ctx: &mut Context) -> Result<(), Failure> {
        ctx.allow_char_regex |= self.allow_char_regex;
        for path in &self.regex {
            ctx.add_regex_scripts(
                stpreset::scripts::ScriptSource::Global,
                &read(path, "regex scripts")?,
            )
            .map_err(|e| Failure(format!("{}: {e}", input_name(path))))?;
        }
        Ok(())
    }
}

/// A bad input file: one line on stderr, exit 1.
pub(crate) struct Failure(String);

/// Buffered standard output: the line-buffered lock scans every small write for newlines,
/// which costs more than rendering when a JSON document lists many diagnostics.
pub(crate) fn stdout() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock())
}

/// Same for standard error, where human-form diagnostics go.
pub(crate) fn stderr() -> std::io::BufWriter<std::io::StderrLock<'static>> {
    std::io::BufWriter::with_capacity(64 * 1024, std::io::stderr().lock())
}

/// Flushes `out` after `written`; a write failure is a one-line error, except a closed pipe
/// (`stpreset render big.json | head`), which is a normal, quiet end: exit 0, as most Unix
/// tools end there (killed by SIGPIPE, which Rust programs ignore).
pub(crate) fn finish(out: &mut impl Write, written: std::io::Result<()>) -> Result<(), Failure> {
    match written.and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure(format!("cannot write output: {e}"))),
    }
}

/// Largest input the CLI reads, from a file or standard input: the preset limit (SPEC §8),
/// for templates and context files too, so memory stays a small multiple of 2 MiB.
pub(crate) const MAX_INPUT: usize = 2 << 20;

/// Reads at most [`MAX_INPUT`] bytes; more is a one-line error naming the input. The cap
/// applies while reading: a 10 GB file or an endless pipe is never held in memory.
/// Cards and lorebooks pass their own cap (SPEC §15.8).
pub(crate) fn read_within(reader: impl Read, name: &str, max: usize) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    reader
        .take(max as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Failure(format!("cannot read {name}: {e}")))?;
    if buf.len() > max {
        return Err(Failure(format!(
            "{name}: input is over the limit of {max} bytes"
        )));
    }
    Ok(buf)
}

/// Reads the input `what` (`preset`, `context`, `template`) from `path`, or from standard input
/// when `path` is `-`. Errors say which input failed.
pub(crate) fn read(path: &Path, what: &str) -> Result<Vec<u8>, Failure> {
    read_up_to(path, what, MAX_INPUT)
}

/// [`read`] with another cap.
pub(crate) fn read_up_to(path: &Path, what: &str, max: usize) -> Result<Vec<u8>, Failure> {
    if path.as_os_str() == "-" {
        return read_within(
            std::io::stdin().lock(),
            &format!("{what} from <stdin>"),
            max,
        );
    }
    let name = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| Failure(format!("cannot read the {what} file {name}: {e}")))?;
    read_within(file, &name, max)
}

/// How messages name an input: its path, or `<stdin>` for `-`.
pub(crate) fn input_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "<stdin>".into()
    } else {
        path.display().to_string()
    }
}

/// Standard input can feed one input only: two `-` would leave the second one empty.
pub(crate) fn one_stdin(paths: &[Option<&Path>]) -> Result<(), Failure> {
    let dashes = paths
        .iter()
        .filter(|p| p.is_some_and(|p| p.as_os_str() == "-"))
        .count();
    if dashes > 1 {
        return Err(Failure(
            "only one input can come from standard input (`-`)".into(),
        ));
    }
    Ok(())
}

/// `--now`: RFC 3339, with an example in the error (chrono's own says "premature end of input").
fn rfc3339(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| "expected an RFC 3339 time, e.g. 2026-11-29T17:07:00Z".to_string())
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Expand(args) => expand::run(args),
        Command::Regex(args) => regex::run(args),
        Command::Lore(args) => lore::run(args),
        Command::Card(args) => lore::run_card(args),
        Command::Render(args) => render::render(args),
        Command::Audit(args) => render::audit(args),
        Command::Nodes(args) => nodes::run(args),
        #[cfg(feature = "store")]
        Command::Store(args) => store::run(args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg)) => {
            // `eprintln!` would panic on a closed stderr; the exit code still tells.
            let _ = writeln!(
                std::io::stderr(),
                "stpreset: {}",
                stpreset::diagnostic::terminal_line(&msg)
            );
            ExitCode::from(1)
        }
    }
}
