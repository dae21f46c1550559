//! `stpreset store --db FILE --server ID ...`: the preset store from the command line.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;
use stpreset::PresetStore;
use stpreset::diagnostic::terminal_line;
use stpreset::store::StoreError;
use stpreset::switch::{Resolve, Switched};

use super::{ContextArgs, Failure, Format, read};

#[derive(Args)]
pub(crate) struct StoreArgs {
    /// SQLite file (created if missing; its directory must exist), or a PostgreSQL connection
    /// string (`postgresql://user@host/db` or `host=… dbname=…`).
    #[arg(long, value_name = "FILE|CONNINFO")]
    db: PathBuf,
    /// Server the command acts for; presets of other servers are refused.
    #[arg(long, value_name = "SERVER_ID", allow_negative_numbers = true)]
    server: i64,
    #[command(subcommand)]
    command: StoreCommand,
}

#[derive(Subcommand)]
enum StoreCommand {
    /// Import a preset file (replacing a same-named one) and make it active; prints its id.
    Import {
        /// Preset file (SillyTavern JSON); `-` reads standard input (then `--name` is needed).
        preset: PathBuf,
        /// Name within the server (default: the file name without extension).
        #[arg(long)]
        name: Option<String>,
    },
    /// List the server's presets: `ID<TAB>NAME<TAB>active|inactive<TAB>NODES` (control
    /// characters in a name, which only files written by other tools can hold, are escaped).
    List {
        /// `text`: one line per preset; `json`: a list of `{"active", "id", "name", "nodes",
        /// "regex_allowed"}`.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// List a preset's nodes in order: `IDENTIFIER<TAB>NAME<TAB>on|off` (control characters
    /// escaped), the identifiers that `toggle` takes.
    Nodes {
        /// The preset's id.
        #[arg(value_name = "PRESET_ID")]
        id: i64,
        /// `text`: one line per node; `json`: `[{"enabled", "identifier", "injection",
        /// "marker", "name", "role"}]`, as the packages' `preset.nodes()`.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        /// Print the nodes under their sections with tooltips, badges and exclusive groups,
        /// as `stpreset nodes` does (JSON: `{"nodes", "groups", "sections"}`).
        #[arg(long)]
        sections: bool,
    },
    /// Make a preset the server's active one.
    Activate {
        /// The preset's id (as `import` printed it, or `list` shows it).
        #[arg(value_name = "PRESET_ID")]
        id: i64,
    },
    /// Leave the server with no active preset.
    Deactivate,
    /// Let a preset's regex scripts run in renders whose context allows them (SPEC §13.6).
    AllowRegex {
        /// The preset's id.
        #[arg(value_name = "PRESET_ID")]
        id: i64,
    },
    /// Stop a preset's regex scripts (the default after every import).
    DisallowRegex {
        /// The preset's id.
        #[arg(value_name = "PRESET_ID")]
        id: i64,
    },
    /// Enable or disable nodes: `IDENT=on` / `IDENT=off`, under the author's constraints
    /// (exclusive groups, `@exclusive-with`, `@requires`...): a switch that breaks one is
    /// refused, naming the nodes in the way and the author's message, and nothing changes.
    /// Prints each switch made besides the asked ones; warnings go to standard error.
    Toggle {
        /// The preset's id.
        #[arg(value_name = "PRESET_ID")]
        id: i64,
        /// Node changes, `IDENT=on` or `IDENT=off` (an identifier from the preset's prompts).
        #[arg(required = true, value_parser = parse_toggle, value_name = "IDENT=on|off")]
        changes: Vec<(String, bool)>,
        /// Switch the conflicting nodes off and the required ones on instead of refusing.
        #[arg(long)]
        resolve: bool,
        /// `text`: `IDENT=on|off` per switch made besides the asked ones, with why; `json`:
        /// `{"changes", "resolved", "warnings"}` (every switch, the errors resolved, the
        /// warnings).
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Delete a preset (the newest survivor becomes active if it was).
    Delete {
        /// The preset's id.
        #[arg(value_name = "PRESET_ID")]
        id: i64,
    },
    /// Render the server's active preset through the cache.
    Render {
        #[command(flatten)]
        context: ContextArgs,
        /// `text`: the messages; `json`: the render document, as `stpreset render`.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        /// Print the provider request of this shape instead of the messages, as
        /// `stpreset render --shape`.
        #[arg(long, value_parser = super::render::shape_arg())]
        shape: Option<stpreset::Shape>,
        /// Lets the preset's regex scripts run when the store allows them too (the context's
        /// `allow_preset_regex`).
        #[arg(long)]
        allow_regex: bool,
        /// The kind of turn: normal, continue, impersonate, swipe, regenerate or quiet
        /// (SPEC §18.1); overrides the context's `generation_type`.
        #[arg(long, value_name = "TYPE", value_parser = super::lore::spelled::<stpreset::lore::GenerationType>)]
        generation: Option<stpreset::lore::GenerationType>,
    },
}

fn parse_toggle(s: &str) -> Result<(String, bool), String> {
    match s.rsplit_once('=') {
        Some((id, "on")) if !id.is_empty() => Ok((id.to_string(), true)),
        Some((id, "off")) if !id.is_empty() => Ok((id.to_string(), false)),
        _ => Err(format!("`{s}`: expected IDENT=on or IDENT=off")),
    }
}

/// `s` with the characters the store refuses in names (control characters, line separators,
/// bidi overrides) written as Rust escapes, so that one preset stays one terminal line.
fn printable(s: &str) -> Cow<'_, str> {
    let bad = |c: char| {
        c.is_control()
            || matches!(c,
                '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            let _ = write!(out, "{}", c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The switches made besides the asked ones (`IDENT=off  <- why`), then the warnings on
/// standard error.
fn print_switched(
    out: &mut impl Write,
    done: &Switched,
    asked: &[(&str, bool)],
) -> std::io::Result<()> {
    let why: std::collections::HashMap<&str, &str> = done
        .resolved
        .iter()
        .flat_map(|r| r.others.iter().map(|o| (o.as_str(), r.message.as_str())))
        .collect();
    let asked: std::collections::HashSet<&str> = asked.iter().map(|(id, _)| *id).collect();
    for c in done
        .changes
        .iter()
        .filter(|c| !asked.contains(c.identifier.as_str()))
    {
        writeln!(
            out,
            "{}={}\t{}",
            printable(&c.identifier),
            if c.enabled { "on" } else { "off" },
            terminal_line(why.get(c.identifier.as_str()).copied().unwrap_or_default())
        )?;
    }
    let mut err = super::stderr();
    for w in &done.warnings {
        writeln!(err, "warning: {}", terminal_line(&w.message))?;
    }
    err.flush()
}

fn failed(e: impl std::fmt::Display) -> Failure {
    Failure(e.to_string())
}

pub(crate) fn run(args: StoreArgs) -> Result<(), Failure> {
    let store = PresetStore::open(&args.db).map_err(failed)?;
    let server = args.server;
    let mut out = super::stdout();
    let written = match args.command {
        StoreCommand::Import { preset, name } => {
            let name = match name {
                Some(name) => name,
                None if preset.as_os_str() == "-" => {
                    return Err(Failure(
                        "a preset read from standard input needs --name".into(),
                    ));
                }
                None => preset
                    .file_stem()
                    .map_or_else(|| "preset".into(), |s| s.to_string_lossy().into_owned()),
            };
            let bytes = read(&preset, "preset")?;
            let id = store
                .import(server, &name, &bytes)
                .map_err(|e| Failure(format!("{}: {e}", super::input_name(&preset))))?;
            writeln!(out, "{id}")
        }
        StoreCommand::List { format } => {
            let list = store.list(server).map_err(failed)?;
            match format {
                Format::Json => writeln!(out, "{}", json!(list)),
                Format::Text => list.iter().try_for_each(|p| {
                    let state = if p.active { "active" } else { "inactive" };
                    writeln!(
                        out,
                        "{}\t{}\t{state}\t{}",
                        p.id,
                        printable(&p.name),
                        p.nodes
                    )
                }),
            }
        }
        StoreCommand::Nodes {
            id,
            format,
            sections,
        } => {
            let preset = store.get(server, id).map_err(failed)?;
            match format {
                _ if sections => match format {
                    Format::Json => writeln!(out, "{}", preset.outline().to_json()),
                    Format::Text => super::nodes::write_text(&mut out, &preset.outline()),
                },
                Format::Json => writeln!(out, "{}", preset.nodes_json()),
                Format::Text => preset.nodes().iter().try_for_each(|n| {
                    let state = if n.enabled { "on" } else { "off" };
                    writeln!(
                        out,
                        "{}\t{}\t{state}",
                        printable(&n.identifier),
                        printable(&n.name)
                    )
                }),
            }
        }
        StoreCommand::Activate { id } => {
            store.activate(server, id).map_err(failed)?;
            Ok(())
        }
        StoreCommand::Deactivate => {
            store.deactivate(server).map_err(failed)?;
            Ok(())
        }
        StoreCommand::AllowRegex { id } => {
            store.allow_regex(server, id, true).map_err(failed)?;
            Ok(())
        }
        StoreCommand::DisallowRegex { id } => {
            store.allow_regex(server, id, false).map_err(failed)?;
            Ok(())
        }
        StoreCommand::Toggle {
            id,
            changes,
            resolve,
            format,
        } => {
            let changes: Vec<(&str, bool)> =
                changes.iter().map(|(s, on)| (s.as_str(), *on)).collect();
            let how = if resolve {
                Resolve::Resolve
            } else {
                Resolve::Refuse
            };
            let done = store
                .switch(server, id, &changes, how)
                .map_err(|e| match e {
                    StoreError::Refused { .. } if !resolve => Failure(format!(
                        "{e}; nothing changed (--resolve switches the conflicting nodes off \
                         and the required ones on)"
                    )),
                    e => failed(e),
                })?;
            match format {
                Format::Json => writeln!(out, "{}", done.to_json()),
                Format::Text => print_switched(&mut out, &done, &changes),
            }
        }
        StoreCommand::Delete { id } => {
            store.delete(server, id).map_err(failed)?;
            Ok(())
        }
        StoreCommand::Render {
            context,
            format,
            shape,
            allow_regex,
            generation,
        } => {
            let mut ctx = context.load()?;
            ctx.allow_preset_regex |= allow_regex;
            if let Some(generation) = generation {
                ctx.lore
                    .get_or_insert_with(Default::default)
                    .generation_type = generation;
            }
            let rendered = store
                .render(server, &ctx)
                .map_err(failed)?
                .ok_or_else(|| Failure(format!("server {server} has no active preset")))?;
            let name = format!(
                "{} (server {server}, active preset)",
                PresetStore::shown_target(&args.db)
            );
            let report = stpreset::report::TextReport::without_sources(&name);
            super::render::print_result(&mut out, &rendered, &ctx, shape, format, &report)
        }
    };
    super::finish(&mut out, written)
}
