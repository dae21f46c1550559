//! `stpreset lore` and the World Info flags `render` shares (SPEC §15.9).

use std::path::{Path, PathBuf};

use clap::Args;
use stpreset::{
    Context, GenerationType, Limits, LoreInput, LoreSource, Lorebook, SeededRandom, WiInput,
    WiState, activate,
};

use super::{ContextArgs, Failure, read, read_up_to};

/// The World Info flags: books, state, position and generation type. They override the
/// context file's fields of the same meaning; `--book` adds books before its `lorebooks`.
#[derive(Args, Default)]
pub(crate) struct LoreFlags {
    /// A lorebook (World Info JSON or a `character_book`), `[NAME=]PATH`; the name (default:
    /// the file stem) is the book's identity in the timed-effect state. Repeatable.
    #[arg(long = "book", value_name = "[NAME=]PATH")]
    books: Vec<String>,
    /// Where the `--book` books come from: chat, persona, character or global.
    #[arg(long, value_enum, default_value = "global")]
    book_source: SourceArg,
    /// The timed-effect state the previous turn printed (`wi_state`).
    #[arg(long, value_name = "STATE.json")]
    wi_state: Option<PathBuf>,
    /// Messages in the conversation up to and including the newest (the timed-effect clock).
    #[arg(long)]
    position: Option<u64>,
    /// The generation type, for entries with triggers.
    #[arg(long, value_enum)]
    generation: Option<GenerationArg>,
    /// Decide without starting or ending timed effects.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
enum SourceArg {
    Chat,
    Persona,
    Character,
    #[default]
    Global,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum GenerationArg {
    Normal,
    Continue,
    Impersonate,
    Swipe,
    Regenerate,
    Quiet,
}

impl LoreFlags {
    fn any(&self) -> bool {
        !self.books.is_empty()
            || self.wi_state.is_some()
            || self.position.is_some()
            || self.generation.is_some()
            || self.dry_run
    }

    /// Puts the flags into the context's lore (made when the flags ask for any).
    pub(crate) fn apply(&self, ctx: &mut Context) -> Result<(), Failure> {
        if !self.any() {
            return Ok(());
        }
        let source = match self.book_source {
            SourceArg::Chat => LoreSource::Chat,
            SourceArg::Persona => LoreSource::Persona,
            SourceArg::Character => LoreSource::Character,
            SourceArg::Global => LoreSource::Global,
        };
        let mut books = Vec::new();
        for spec in &self.books {
            books.push(book(spec)?.with_source(source));
        }
        let lore = ctx.lore.get_or_insert_with(LoreInput::default);
        books.append(&mut lore.books);
        lore.books = books;
        if let Some(path) = &self.wi_state {
            let bytes = read(path, "World Info state")?;
            lore.state = serde_json::from_slice::<WiState>(&bytes).map_err(|e| {
                Failure(format!(
                    "{}: not a World Info state: {e}",
                    super::input_name(path)
                ))
            })?;
        }
        if self.position.is_some() {
            lore.position = self.position;
        }
        if let Some(g) = self.generation {
            lore.generation_type = match g {
                GenerationArg::Normal => GenerationType::Normal,
                GenerationArg::Continue => GenerationType::Continue,
                GenerationArg::Impersonate => GenerationType::Impersonate,
                GenerationArg::Swipe => GenerationType::Swipe,
                GenerationArg::Regenerate => GenerationType::Regenerate,
                GenerationArg::Quiet => GenerationType::Quiet,
            };
        }
        lore.dry_run |= self.dry_run;
        Ok(())
    }
}

/// `[NAME=]PATH`: a `=` before the path's first separator names the book.
fn book(spec: &str) -> Result<Lorebook, Failure> {
    let (name, path) = match spec.split_once('=') {
        Some((name, path)) if !name.is_empty() && !name.contains(['/', '\\']) => {
            (name.to_string(), Path::new(path))
        }
        _ => {
            let path = Path::new(spec);
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "book".into());
            (stem, path)
        }
    };
    let limits = Limits::default();
    let bytes = read_up_to(path, "lorebook", limits.lore_max_book_bytes)?;
    Lorebook::from_json(&name, &bytes, &limits)
        .map_err(|e| Failure(format!("{}: {e}", super::input_name(path))))
}

#[derive(Args)]
pub(crate) struct LoreArgs {
    #[command(flatten)]
    lore: LoreFlags,
    #[command(flatten)]
    context: ContextArgs,
}

/// Prints the activation's `WiResult` as JSON (SPEC §15.7; its own key order).
pub(crate) fn run(args: LoreArgs) -> Result<(), Failure> {
    let mut ctx = args.context.load()?;
    args.lore.apply(&mut ctx)?;
    let lore = ctx.lore.clone().unwrap_or_default();
    let mut input = WiInput::new(&ctx);
    input.position = lore.position;
    input.generation_type = lore.generation_type;
    input.dry_run = lore.dry_run;
    let position = input.position.unwrap_or(input.history.len() as u64);
    let mut random = SeededRandom::new(ctx.seed, position);
    let counter = ctx.options.budget.counter.for_model(&ctx.model);
    let mut out = activate(
        &lore.books,
        &input,
        &lore.settings,
        &lore.state,
        &mut random,
        &*counter,
        &ctx.options.limits,
    );
    let mut imports: Vec<_> = lore
        .books
        .iter()
        .flat_map(|b| b.diagnostics().to_vec())
        .collect();
    imports.append(&mut out.diagnostics);
    out.diagnostics = imports;
    let text = serde_json::to_string(&out).map_err(|e| Failure(e.to_string()))?;
    let mut stdout = super::stdout();
    let written = {
        use std::io::Write as _;
        writeln!(stdout, "{text}")
    };
    super::finish(&mut stdout, written)
}
