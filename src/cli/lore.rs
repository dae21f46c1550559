//! `stpreset lore` and the World Info flags `render` shares (SPEC §15.9).

use std::path::{Path, PathBuf};

use clap::Args;
use stpreset::{
    Card, Context, Limits, Lorebook, lore::CardFormat, lore::GenerationType, lore::LoreInput,
    lore::LoreSource, lore::WiState,
};

use super::{ContextArgs, Failure, read_up_to};

/// The World Info flags: books, state, position and generation type. They override the
/// context file's fields of the same meaning; `--book` adds books before its `lorebooks`.
#[derive(Args)]
pub(crate) struct LoreFlags {
    /// A character card (PNG or JSON, SPEC §15.1): fills the context fields the context file
    /// leaves unset, and adds its lorebook.
    #[arg(long, value_name = "CARD")]
    card: Option<PathBuf>,
    /// Another group member's card, `NAME=PATH` (SPEC §18.3; the context's `group_cards`):
    /// read in a group chat's append modes. Repeatable.
    #[arg(long = "group-card", value_name = "NAME=PATH")]
    group_cards: Vec<String>,
    /// A lorebook (World Info JSON or a `character_book`), `[NAME=]PATH`; the name (default:
    /// the file stem) is the book's identity in the timed-effect state. Repeatable.
    #[arg(long = "book", value_name = "[NAME=]PATH")]
    books: Vec<String>,
    /// Where the `--book` books come from: chat, persona, character or global.
    #[arg(long, value_name = "SOURCE", default_value = "global", value_parser = spelled::<LoreSource>)]
    book_source: LoreSource,
    /// The timed-effect state the previous turn printed (`wi_state`).
    #[arg(long, value_name = "STATE.json")]
    wi_state: Option<PathBuf>,
    /// Messages in the conversation up to and including the newest (the timed-effect clock).
    #[arg(long)]
    position: Option<u64>,
    /// The kind of turn: normal, continue, impersonate, swipe, regenerate or quiet. It builds
    /// the prompt SillyTavern builds for it (SPEC §18.1) and selects World Info entries with
    /// triggers.
    #[arg(long, value_name = "TYPE", value_parser = spelled::<GenerationType>)]
    generation: Option<GenerationType>,
    /// Decide without starting or ending timed effects.
    #[arg(long)]
    dry_run: bool,
}

/// A value spelled as in a context file (the library's serde names, one list of spellings).
pub(crate) fn spelled<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|e| e.to_string())
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
        if let Some(path) = &self.card {
            let card = card(path)?;
            card.apply_to(ctx);
        }
        for spec in &self.group_cards {
            let Some((name, path)) = spec.split_once('=').filter(|(n, _)| !n.is_empty()) else {
                return Err(Failure(format!(
                    "--group-card {spec}: expected NAME=PATH (the member's name, then its card)"
                )));
            };
            let card = card(Path::new(path))?;
            ctx.group_cards
                .insert(name.to_string(), stpreset::lore::GroupCard::from(&card));
        }
        if !self.any() {
            return Ok(());
        }
        let source = self.book_source;
        let mut books = Vec::new();
        for spec in &self.books {
            books.push(book(spec)?.with_source(source));
        }
        let lore = ctx.lore.get_or_insert_with(LoreInput::default);
        books.append(&mut lore.books);
        lore.books = books;
        if let Some(path) = &self.wi_state {
            // A state holds up to two effects per entry of 20,000: more than the 2 MiB of
            // presets and contexts, as much as a card file may be.
            let cap = Limits::default().card_max_file_bytes;
            let bytes = read_up_to(path, "World Info state", cap)?;
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
            lore.generation_type = g;
        }
        lore.dry_run |= self.dry_run;
        Ok(())
    }
}

/// Reads a card: PNG when the file is named `.png`, else by its first bytes.
pub(crate) fn card(path: &Path) -> Result<Card, Failure> {
    let limits = Limits::default();
    let bytes = read_up_to(path, "card", limits.card_max_file_bytes)?;
    let png = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let format = if png {
        CardFormat::Png
    } else {
        CardFormat::Auto
    };
    Card::from_bytes(&bytes, format, &limits)
        .map_err(|e| Failure(format!("{}: {e}", super::input_name(path))))
}

#[derive(Args)]
pub(crate) struct CardArgs {
    /// The card file (PNG or JSON); `-` reads standard input.
    card: PathBuf,
    /// `text`: the fields; `json`: `{"card", "diagnostics", "context", "items"}`.
    #[arg(long, value_enum, default_value_t)]
    format: super::Format,
}

/// `stpreset card`: the card as read, and what it puts into a context.
pub(crate) fn run_card(args: CardArgs) -> Result<(), Failure> {
    let card = card(&args.card)?;
    let doc = card.to_json_document();
    let mut stdout = super::stdout();
    let written = match args.format {
        super::Format::Json => {
            use std::io::Write as _;
            writeln!(stdout, "{doc}")
        }
        super::Format::Text => {
            use std::io::Write as _;
            let context = card.context_values();
            let mut w = || -> std::io::Result<()> {
                for (k, v) in context.as_object().into_iter().flatten() {
                    writeln!(
                        stdout,
                        "{k}: {}",
                        stpreset::diagnostic::terminal_safe(&v.to_string())
                    )?;
                }
                if let Some(b) = card.book() {
                    writeln!(
                        stdout,
                        "book: {} ({} entries)",
                        stpreset::diagnostic::terminal_line(b.name()),
                        b.len()
                    )?;
                }
                for d in card.diagnostics() {
                    writeln!(stdout, "{d}")?;
                }
                Ok(())
            };
            w()
        }
    };
    super::finish(&mut stdout, written)
}

/// `[NAME=]PATH`: a `=` before the path's first separator names the book.
pub(crate) fn book_spec(spec: &str) -> (String, &Path) {
    match spec.split_once('=') {
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
    }
}

/// A lorebook file's bytes, within the book limit.
pub(crate) fn book_bytes(path: &Path) -> Result<Vec<u8>, Failure> {
    read_up_to(path, "lorebook", Limits::default().lore_max_book_bytes)
}

fn book(spec: &str) -> Result<Lorebook, Failure> {
    let (name, path) = book_spec(spec);
    let limits = Limits::default();
    let bytes = book_bytes(path)?;
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
    let text = stpreset::activation::WiResult::for_context(&ctx).to_json();
    let mut stdout = super::stdout();
    let written = {
        use std::io::Write as _;
        writeln!(stdout, "{text}")
    };
    super::finish(&mut stdout, written)
}
