//! Presets persisted per server, with a cache of each server's active compiled preset
//! (SPEC §7), in SQLite (one file, the embedded default) or PostgreSQL (many machines, behind
//! the `postgres` cargo feature). Every call is scoped by server id; every multi-row change is
//! one transaction; every multi-statement read is one snapshot; every successful mutation
//! invalidates that server's cache entry, and a commit by any other connection (another
//! process, another machine, another tool) is noticed before a cached entry is served, within
//! a second. The concurrency model is written up in `docs/store.md`.

mod backend;
mod cache;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::context::Context;
use crate::preset::switch::{Resolve, SwitchError, Switched};
use crate::preset::{CompiledPreset, Preset, PresetError};
use crate::render::Rendered;

use backend::{Backend, Freshness, NewPreset};
pub use cache::{Clock, SystemClock};

/// Why a store operation failed. Nothing was written, with one exception: on PostgreSQL, a
/// `Database` error for a lost connection or a call that did not answer in time leaves the
/// outcome unknown (the change may have committed; the cache is dropped either way).
#[derive(Debug, Clone, Error, strum::IntoStaticStr)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file cannot be opened or created.
    #[error("cannot open database {path}: {reason}")]
    Open {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// Another connection holds the database lock past the busy timeout.
    #[error("database is locked by another connection")]
    Locked,
    /// The file could only be opened read-only, and a mutation was asked for.
    #[error("database {path} is read-only; presets cannot be changed")]
    ReadOnly {
        /// The file.
        path: String,
    },
    /// A preset name that cannot be stored (see [`PresetStore::import`]).
    #[error("invalid preset name {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No preset with that id belongs to that server.
    #[error("no preset {id} on server {server}")]
    NotFound {
        /// The server asked about.
        server: i64,
        /// The preset id asked for.
        id: i64,
    },
    /// A toggle named a node the preset does not have.
    #[error("preset {id} has no node `{identifier}`")]
    UnknownNode {
        /// The preset.
        id: i64,
        /// The identifier asked for.
        identifier: String,
    },
    /// Switching a node on breaks its author's constraints ([`crate::switch`]); nothing was
    /// switched.
    #[error("preset {id}: {}", crate::preset::switch::refusal(.node, .issues))]
    Refused {
        /// The preset.
        id: i64,
        /// The node that could not be switched on.
        node: String,
        /// The constraints it breaks, with the nodes they name and the author's messages.
        issues: Vec<crate::preset::switch::Issue>,
    },
    /// The preset file was refused.
    #[error(transparent)]
    Preset(#[from] PresetError),
    /// Any other database failure.
    #[error("database error: {0}")]
    Database(String),
}

/// What a request of switches off only does: exactly them (switching off never refuses nor
/// cascades), each identifier's last wish in order of first mention. The store writes these
/// without reading the preset; an identifier it has no node of is still refused there.
fn offs_only(changes: &[(&str, bool)]) -> Option<Switched> {
    if changes.iter().any(|&(_, on)| on) {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    let changes = changes
        .iter()
        .filter(|(id, _)| seen.insert(*id))
        .map(|(id, _)| crate::preset::switch::Change {
            identifier: id.to_string(),
            enabled: false,
        })
        .collect();
    Some(Switched {
        changes,
        ..Switched::default()
    })
}

/// What switching `changes` on stored preset `id` does (backends call it inside the write,
/// on the states they read there), or the store's refusal. `load` reads the preset only when
/// something is switched on: switching off never refuses, and a toggle of offs stays one
/// `UPDATE` per identifier (the backends still refuse an identifier without a node).
fn plan_switch(
    load: impl FnOnce() -> Result<Vec<crate::preset::PresetNode>, StoreError>,
    id: i64,
    changes: &[(&str, bool)],
    how: Resolve,
) -> Result<Switched, StoreError> {
    if let Some(done) = offs_only(changes) {
        return Ok(done);
    }
    crate::preset::switch::plan(&load()?, changes, how).map_err(|e| match e {
        SwitchError::UnknownNode(identifier) => StoreError::UnknownNode { id, identifier },
        SwitchError::Refused { node, issues } => StoreError::Refused { id, node, issues },
    })
}

impl StoreError {
    /// The variant's name (`"Open"`, `"Locked"`, `"NotFound"`, ...), as the bindings report it;
    /// an import's refusal is `"Preset"` (its own kind: [`PresetError::kind`]).
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}

/// Characters a name may not contain. They would break `list`'s one-line-per-preset,
/// tab-separated output (tab, newline), or make it lie on a terminal or in a bot's menu
/// (escapes, bidi controls, invisible format characters that make `safe` and `safe\u{200b}`
/// two names that look alike). Hand-listed: Unicode's format characters (category Cf) that
/// matter here, with no general-category crate in the tree for one list.
fn forbidden_in_name(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}' | '\u{180e}'
            | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
            | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}' | '\u{e0020}'..='\u{e007f}')
}

/// The longest name, in characters: a name is a label in a list, not a document.
const NAME_CHARS: usize = 256;

fn check_name(name: &str) -> Result<(), StoreError> {
    let reason = if name.trim().is_empty() {
        "a name must have a visible character"
    } else if name.chars().any(forbidden_in_name) {
        "control and format characters (tab, newline, escape, bidi controls, zero-width characters...) are not allowed"
    } else if name.chars().nth(NAME_CHARS).is_some() {
        "a name has at most 256 characters"
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidName {
        name: name.to_string(),
        reason,
    })
}

/// One line of `list`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct PresetSummary {
    /// Preset id (unique across servers).
    pub id: i64,
    /// Name, unique per server.
    pub name: String,
    /// Whether it is the server's active preset.
    pub active: bool,
    /// Number of nodes.
    pub nodes: usize,
    /// Whether the server lets its regex scripts run (SPEC §13.6.1).
    pub regex_allowed: bool,
    /// Optional description.
    #[serde(skip)]
    pub description: Option<String>,
    /// RFC 3339 creation time.
    #[serde(skip)]
    pub created_at: String,
    /// RFC 3339 time of the last change.
    #[serde(skip)]
    pub updated_at: String,
}

/// Store options: cache TTL and capacity, the clock that measures the TTL, the busy timeout.
#[derive(Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// How long a cached active preset (or "none") stays fresh. Default 10 minutes.
    pub ttl: Duration,
    /// How many servers' entries the cache holds at most; past it, the oldest go first.
    /// Default 1024. Zero disables caching (concurrent loads are still shared).
    pub cache_capacity: usize,
    /// The cache's clock.
    pub clock: Arc<dyn Clock>,
    /// How long to wait for another connection's lock before `StoreError::Locked`.
    pub busy_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            ttl: Duration::from_secs(600),
            cache_capacity: 1024,
            clock: Arc::new(SystemClock::default()),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// Presets of many servers in one database, plus the active-preset cache.
/// `Send + Sync`: share one store between threads.
///
/// ```
/// use stpreset::{Context, PresetStore};
/// let store = PresetStore::open_in_memory().unwrap();
/// let id = store.import(7, "mine", br#"{"prompts": [{"identifier": "main", "content": "Hi {{user}}"}]}"#).unwrap();
/// assert_eq!(store.list(7).unwrap()[0].id, id);
/// let ctx = Context::default();
/// let out = store.render(7, &ctx).unwrap().unwrap();
/// assert_eq!(out.messages[0].text(), "Hi User");
/// assert!(store.list(8).unwrap().is_empty(), "other servers see nothing");
/// ```
pub struct PresetStore {
    backend: Box<dyn Backend>,
    cache: Arc<cache::PresetCache>,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// libpq's connection keywords: a target whose first word is `KEYWORD=` is a connection string.
const LIBPQ_KEYWORDS: [&str; 42] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslmode",
    "requiressl",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
    "sslnegotiation",
    "require_auth",
];

/// Whether `target` names a PostgreSQL database rather than a SQLite file: a
/// `postgres://`/`postgresql://` URL (any case), or a key/value connection string whose first
/// key is one of libpq's (`host=… dbname=…`). A file whose name looks like that can still be
/// opened as `./host=…`.
fn is_postgres_target(target: &str) -> bool {
    let lower = target.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://")
        || lower.starts_with("postgresql://")
        || lower
            .split_once('=')
            .is_some_and(|(key, _)| LIBPQ_KEYWORDS.contains(&key.trim()))
}

impl PresetStore {
    /// Opens (creating if needed) a preset database and migrates it to the current schema:
    /// a SQLite file path, or a PostgreSQL connection string (`postgresql://user@host/db`
    /// or `host=… dbname=…`; needs the `postgres` cargo feature).
    ///
    /// A SQLite file this process cannot write is opened read-only: reads and renders work,
    /// and mutations fail with [`StoreError::ReadOnly`]. Opening a current database writes
    /// nothing.
    pub fn open(target: impl AsRef<Path>) -> Result<PresetStore, StoreError> {
        PresetStore::open_with(target, StoreOptions::default())
    }

    /// Opens a database with the given options.
    pub fn open_with(
        target: impl AsRef<Path>,
        options: StoreOptions,
    ) -> Result<PresetStore, StoreError> {
        let target = target.as_ref();
        if let Some(text) = target.to_str()
            && is_postgres_target(text)
        {
            return PresetStore::open_postgres(text, options);
        }
        let backend = sqlite::Sqlite::open(target, options.busy_timeout)?;
        PresetStore::with_backend(Box::new(backend), cache_for(&options))
    }

    #[cfg(feature = "postgres")]
    fn open_postgres(target: &str, options: StoreOptions) -> Result<PresetStore, StoreError> {
        let cache = cache_for(&options);
        let sink = cache.clone();
        let backend = postgres::Postgres::open(
            target,
            options.busy_timeout,
            Box::new(move |change| match change {
                Some(server) => sink.invalidate(server),
                None => sink.invalidate_all(),
            }),
        )?;
        PresetStore::with_backend(Box::new(backend), cache)
    }

    #[cfg(not(feature = "postgres"))]
    fn open_postgres(target: &str, _options: StoreOptions) -> Result<PresetStore, StoreError> {
        Err(StoreError::Open {
            path: postgres_shown(target),
            reason: "this build of stpreset has no PostgreSQL support (cargo feature `postgres`)"
                .into(),
        })
    }

    /// A database target as messages should show it: a file path as it is, a PostgreSQL
    /// connection string without its password.
    ///
    /// ```
    /// use stpreset::PresetStore;
    /// assert!(!PresetStore::shown_target("postgresql://bot:secret@db/x").contains("secret"));
    /// assert_eq!(PresetStore::shown_target("presets.sqlite"), "presets.sqlite");
    /// ```
    pub fn shown_target(target: impl AsRef<Path>) -> String {
        let target = target.as_ref();
        match target.to_str() {
            Some(text) if is_postgres_target(text) => postgres_shown(text),
            _ => target.display().to_string(),
        }
    }

    /// A store in memory (for tests and short-lived tools).
    pub fn open_in_memory() -> Result<PresetStore, StoreError> {
        let options = StoreOptions::default();
        PresetStore::with_backend(
            Box::new(sqlite::Sqlite::open_in_memory()?),
            cache_for(&options),
        )
    }

    fn with_backend(
        backend: Box<dyn Backend>,
        cache: Arc<cache::PresetCache>,
    ) -> Result<PresetStore, StoreError> {
        let store = PresetStore { backend, cache };
        store.check_foreign_writes()?;
        Ok(store)
    }

    /// The SQLite schema version of files this build creates.
    pub fn schema_version() -> usize {
        sqlite::schema_version()
    }

    /// Imports a preset for `server` under `name`, replacing a same-named preset of that
    /// server, and makes it the active one. Returns the new preset's id, never one issued
    /// before in this database.
    ///
    /// A name must have a visible character and no control characters (tab, newline,
    /// escape, ...) nor line separators or bidi overrides: [`StoreError::InvalidName`].
    pub fn import(&self, server: i64, name: &str, bytes: &[u8]) -> Result<i64, StoreError> {
        check_name(name)?;
        let preset = Preset::from_json(bytes)?;
        let comment_only: Vec<bool> = preset
            .nodes()
            .iter()
            .map(|n| !n.marker && n.is_comment_only())
            .collect();
        let new = NewPreset {
            server,
            name,
            preset: &preset,
            comment_only: &comment_only,
        };
        self.changed(server, self.backend.import(&new))
    }

    /// The server's presets, oldest first.
    pub fn list(&self, server: i64) -> Result<Vec<PresetSummary>, StoreError> {
        self.backend.list(server)
    }

    /// One preset of the server, with its nodes in order (as stored, toggles included).
    pub fn get(&self, server: i64, id: i64) -> Result<Preset, StoreError> {
        self.backend.get(server, id)
    }

    /// Makes `id` the server's one active preset.
    pub fn activate(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.changed(server, self.backend.activate(server, id))
    }

    /// Lets the preset's regex scripts run, or stops them (SPEC §13.6.1). A render runs them
    /// only when its context allows them too; importing a preset of the same name again
    /// resets the permission to off.
    pub fn allow_regex(&self, server: i64, id: i64, allowed: bool) -> Result<(), StoreError> {
        self.changed(server, self.backend.allow_regex(server, id, allowed))
    }

    /// Leaves the server with no active preset (native context assembly).
    pub fn deactivate(&self, server: i64) -> Result<(), StoreError> {
        self.changed(server, self.backend.deactivate(server))
    }

    /// Sets nodes' enabled states (markers too) under their author's constraints, refusing
    /// what breaks one ([`switch`](Self::switch) with [`Resolve::Refuse`]). An unknown
    /// identifier fails the whole call.
    pub fn set_enabled(
        &self,
        server: i64,
        id: i64,
        changes: &[(&str, bool)],
    ) -> Result<(), StoreError> {
        self.switch(server, id, changes, Resolve::Refuse)
            .map(|_| ())
    }

    /// Switches nodes under their author's constraints ([`crate::switch`]): checked against
    /// the stored states inside the write, so two admins switching members of one exclusive
    /// group at once cannot both win; all or nothing. Returns what was switched (resolutions
    /// included) and the warnings.
    ///
    /// ```
    /// use stpreset::{PresetStore, store::StoreError, switch::Resolve};
    /// let store = PresetStore::open_in_memory().unwrap();
    /// let id = store.import(7, "styles", br#"{"prompts": [
    ///     {"identifier": "terse", "content": "{{// @mutual-exclusive-group len}}Be terse."},
    ///     {"identifier": "lush", "content": "{{// @mutual-exclusive-group len}}Be lush.", "enabled": false}]}"#).unwrap();
    /// let refused = store.switch(7, id, &[("lush", true)], Resolve::Refuse).unwrap_err();
    /// assert!(matches!(refused, StoreError::Refused { .. }));
    /// let done = store.switch(7, id, &[("lush", true)], Resolve::Resolve).unwrap();
    /// assert_eq!(done.changes.len(), 2, "terse went off");
    /// ```
    pub fn switch(
        &self,
        server: i64,
        id: i64,
        changes: &[(&str, bool)],
        how: Resolve,
    ) -> Result<Switched, StoreError> {
        self.changed(server, self.backend.switch(server, id, changes, how))
    }

    /// Deletes a preset; if it was active, the most recently created survivor becomes active.
    pub fn delete(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.changed(server, self.backend.delete(server, id))
    }

    /// The server's active preset, uncached: its id and nodes in order, read from one
    /// snapshot (a concurrent re-import gives the old preset or the new one, never a mix).
    pub fn load_active(&self, server: i64) -> Result<Option<(i64, Preset)>, StoreError> {
        Ok(self.backend.load_active(server)?.map(|a| (a.id, a.preset)))
    }

    /// The server's active preset, compiled, through the cache. `None`: no active preset
    /// (cached too). A database error is returned, never cached.
    ///
    /// Before serving an entry, checks that no other connection committed a change the
    /// cache has not heard of; if one did, the cache is dropped. Concurrent misses on one
    /// server load and compile once; the others wait for that result.
    pub fn active(&self, server: i64) -> Result<Option<Arc<CompiledPreset>>, StoreError> {
        if !self.check_foreign_writes()? {
            // Nobody vouches for the cache: read the database and keep nothing.
            return self.load_compiled(server);
        }
        match self.cache.get(server) {
            cache::Lookup::Hit(hit) => Ok(hit),
            cache::Lookup::Failed(e) => Err(e),
            cache::Lookup::Miss(ticket) => match self.load_compiled(server) {
                Ok(compiled) => {
                    ticket.finish(compiled.clone());
                    Ok(compiled)
                }
                Err(e) => {
                    // The callers waiting for this load fail with it (not cached).
                    ticket.fail(e.clone());
                    Err(e)
                }
            },
        }
    }

    fn load_compiled(&self, server: i64) -> Result<Option<Arc<CompiledPreset>>, StoreError> {
        Ok(self.backend.load_active(server)?.map(|active| {
            let mut compiled = active.preset.compile();
            compiled.set_regex_permitted(active.regex_allowed);
            Arc::new(compiled)
        }))
    }

    /// Renders the server's active preset (through the cache); `None` when it has none.
    pub fn render<'c>(
        &self,
        server: i64,
        ctx: &'c Context,
    ) -> Result<Option<Rendered<'c>>, StoreError> {
        Ok(self.active(server)?.map(|p| p.render(ctx)))
    }

    /// Cache hits and misses so far. A miss is one load from the database; a call that
    /// waited for another caller's load of the same server counts as a hit.
    pub fn cache_stats(&self) -> (u64, u64) {
        self.cache.stats()
    }

    /// How many servers' entries the cache holds (at most `StoreOptions::cache_capacity`).
    pub fn cache_len(&self) -> usize {
        self.cache.len()
    }

    /// Whether the cache may be used: `false` when the backend cannot vouch that it has heard
    /// of every foreign commit.
    fn check_foreign_writes(&self) -> Result<bool, StoreError> {
        match self.backend.freshness()? {
            Freshness::Version(version) => {
                self.cache.observe_data_version(version);
                Ok(true)
            }
            Freshness::Vouched => Ok(true),
            Freshness::Unvouched => Ok(false),
        }
    }

    /// A mutation's result. The server's cache entry is dropped whatever the outcome: a call
    /// that failed on a lost connection or a timeout may still have committed.
    fn changed<T>(&self, server: i64, result: Result<T, StoreError>) -> Result<T, StoreError> {
        self.cache.invalidate(server);
        result
    }
}

fn cache_for(options: &StoreOptions) -> Arc<cache::PresetCache> {
    Arc::new(cache::PresetCache::new(
        options.ttl,
        options.cache_capacity,
        options.clock.clone(),
    ))
}

/// A connection string as messages show it: never its password. The target is parsed and only
/// its user, hosts, ports and database are shown; one that does not parse is not echoed at all.
#[cfg(feature = "postgres")]
fn postgres_shown(target: &str) -> String {
    use ::postgres::config::Host;
    let Ok(config) = target.parse::<::postgres::Config>() else {
        return "<PostgreSQL connection string>".into();
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    // A password holding `@` unencoded (`u:p@ss@h`) parses as a host holding the rest of it.
    if hosts.iter().any(|h| h.contains('@')) {
        return "<PostgreSQL connection string>".into();
    }
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    let mut shown = String::from("postgresql://");
    if let Some(user) = config.get_user() {
        shown.push_str(user);
        shown.push('@');
    }
    shown.push_str(&hosts.join(","));
    if !ports.is_empty() {
        shown.push(':');
        shown.push_str(&ports.join(","));
    }
    shown.push('/');
    shown.push_str(config.get_dbname().unwrap_or(""));
    crate::diagnostic::terminal_safe(&shown).into_owned()
}

/// Without the client there is nothing to parse with: nothing of the target is shown.
#[cfg(not(feature = "postgres"))]
fn postgres_shown(_target: &str) -> String {
    "<PostgreSQL connection string>".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_told_apart() {
        for pg in [
            "postgresql://u@h/db",
            "postgres://h/db",
            "POSTGRESQL://h/db",
            "host=/tmp dbname=x",
            "dbname=x",
            "connect_timeout=3 host=h",
            "options='-c x=y' host=h",
            "password = p host=h",
        ] {
            assert!(is_postgres_target(pg), "{pg}");
        }
        for file in ["p.sqlite", "./host=x", "/tmp/a=b", "data/presets.db", ""] {
            assert!(!is_postgres_target(file), "{file}");
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn passwords_are_not_shown() {
        for (target, shown) in [
            (
                "postgresql://bot:secret@db:5432/x",
                "postgresql://bot@db:5432/x",
            ),
            ("host=db password=secret dbname=x", "postgresql://db/x"),
            ("password = secret host=db", "postgresql://db/"),
            ("password='secret swordfish' host=db", "postgresql://db/"),
            (
                "postgresql:///x?host=/tmp&password=secret",
                "postgresql:///tmp/x",
            ),
            (
                "postgresql://u:sec@ret@h/x",
                "<PostgreSQL connection string>",
            ),
            (
                "POSTGRESQL://u:secret@h/x",
                "<PostgreSQL connection string>",
            ),
        ] {
            let got = postgres_shown(target);
            assert!(
                !got.contains("secret") && !got.contains("ret@"),
                "{target}: {got}"
            );
            assert_eq!(got, shown, "{target}");
        }
    }
}
