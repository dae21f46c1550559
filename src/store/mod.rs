//! Presets persisted per server in SQLite, with a cache of each server's active compiled
//! preset (SPEC §7). Every call is scoped by server id; every multi-row change is one
//! immediate transaction; every multi-statement read is one snapshot; every successful
//! mutation invalidates that server's cache entry, and a commit by any other connection
//! (another process, another `PresetStore`) is noticed before a cached entry is served.
//! The concurrency model is written up in `docs/store.md`.

mod cache;
mod schema;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{
    Connection, ErrorCode, MAIN_DB, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
    params,
};
use thiserror::Error;

use crate::context::Context;
use crate::preset::{CompiledPreset, Preset, PresetError, PresetNode};
use crate::render::Rendered;

pub use cache::{Clock, SystemClock};

/// Why a store operation failed. Nothing was written.
#[derive(Debug, Error)]
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
    /// The preset file was refused.
    #[error(transparent)]
    Preset(#[from] PresetError),
    /// Any other database failure.
    #[error("database error: {0}")]
    Database(String),
}

impl StoreError {
    /// The variant's name (`"Open"`, `"Locked"`, `"NotFound"`, ...), as the bindings report it;
    /// an import's refusal is `"Preset"` (its own kind: [`PresetError::kind`]).
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Open { .. } => "Open",
            StoreError::Locked => "Locked",
            StoreError::ReadOnly { .. } => "ReadOnly",
            StoreError::InvalidName { .. } => "InvalidName",
            StoreError::NotFound { .. } => "NotFound",
            StoreError::UnknownNode { .. } => "UnknownNode",
            StoreError::Preset(_) => "Preset",
            StoreError::Database(_) => "Database",
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked,
            _ => StoreError::Database(sqlite_reason(&e)),
        }
    }
}

/// SQLite's own message: rusqlite's `Display` appends the whole statement to syntax-level
/// errors, which for a migration script is dozens of lines.
fn sqlite_reason(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqlInputError { msg, .. }
        | rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        e => e.to_string(),
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

/// Presets of many servers in one SQLite file, plus the active-preset cache.
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
    // One connection, on purpose: `PRAGMA data_version` changes only for commits by *other*
    // connections, so with one connection this store's own writes never flush its whole
    // cache (each invalidates just its server), while every foreign commit does.
    conn: Mutex<Connection>,
    cache: cache::PresetCache,
    /// `Some(path)` when the file could only be opened read-only.
    read_only: Option<String>,
}

const PRESET_NODE_COLUMNS: &str = "identifier, name, role, content, marker, enabled, \
     comment_only, order_index, injection_position, injection_depth, injection_order";

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

impl PresetStore {
    /// Opens (creating if needed) a database file and migrates it to the current schema.
    ///
    /// A file this process cannot write is opened read-only: reads and renders work, and
    /// mutations fail with [`StoreError::ReadOnly`]. Opening a current file writes nothing.
    pub fn open(path: impl AsRef<Path>) -> Result<PresetStore, StoreError> {
        PresetStore::open_with(path, StoreOptions::default())
    }

    /// Opens a database file with the given options.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: StoreOptions,
    ) -> Result<PresetStore, StoreError> {
        // Switching a new file to WAL needs an exclusive lock, and SQLite answers `SQLITE_BUSY`
        // at once, without its busy handler, when another connection is opening the same new
        // file (it would deadlock otherwise). So the first opens of several processes retry
        // the whole open, with growing pauses, until the busy timeout is spent.
        // SQLite reads an empty path as a private temporary database: every write would vanish
        // with the store.
        if path.as_ref().as_os_str().is_empty() {
            return Err(StoreError::Open {
                path: String::new(),
                reason: "the path is empty (use open_in_memory for a temporary store)".into(),
            });
        }
        let deadline = std::time::Instant::now() + options.busy_timeout;
        let mut pause = Duration::from_millis(2);
        loop {
            match PresetStore::open_once(path.as_ref(), options.clone()) {
                Err(StoreError::Locked) if std::time::Instant::now() + pause < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                result => return result,
            }
        }
    }

    fn open_once(path: &Path, options: StoreOptions) -> Result<PresetStore, StoreError> {
        let shown = path.display().to_string();
        let open_err = |reason: String| StoreError::Open {
            path: shown.clone(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            return Err(open_err(format!(
                "directory {} does not exist",
                dir.display()
            )));
        }
        let mut conn = Connection::open(path).map_err(|e| open_err(sqlite_reason(&e)))?;
        conn.busy_timeout(options.busy_timeout)?;
        // SQLite opens a write-protected file read-only by itself, but a WAL file also needs
        // its `-shm` index and `-wal` log, which cannot be created when the directory is not
        // writable. Then nothing can be written anyway, and the file is opened immutable: a
        // snapshot for readers, without locks.
        if let Err(e) = conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
            && matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen)
            )
        {
            drop(conn);
            conn = open_immutable(path).map_err(|e| open_err(sqlite_reason(&e)))?;
        }
        let read_only = conn.is_readonly(MAIN_DB)?.then(|| shown.clone());
        PresetStore::setup(conn, options, true, read_only).map_err(|e| match e {
            StoreError::Database(reason) => open_err(reason),
            e => e,
        })
    }

    /// A store in memory (for tests and short-lived tools).
    pub fn open_in_memory() -> Result<PresetStore, StoreError> {
        let conn = Connection::open_in_memory()?;
        PresetStore::setup(conn, StoreOptions::default(), false, None)
    }

    fn setup(
        mut conn: Connection,
        options: StoreOptions,
        wal: bool,
        read_only: Option<String>,
    ) -> Result<PresetStore, StoreError> {
        conn.busy_timeout(options.busy_timeout)?;
        conn.pragma_update(None, "foreign_keys", true)?;
        if wal && read_only.is_none() {
            // Asked before set, so that opening a file that is already WAL runs no statement
            // that could write or wait for a lock.
            let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                // WAL lets readers proceed while a writer commits.
                let _mode: String =
                    conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
            }
        }
        schema::migrate(&mut conn, read_only.is_some())?;
        let cache = cache::PresetCache::new(options.ttl, options.cache_capacity, options.clock);
        cache.observe_data_version(data_version(&conn)?);
        Ok(PresetStore {
            conn: Mutex::new(conn),
            cache,
            read_only,
        })
    }

    /// The schema version of files this build creates.
    pub fn schema_version() -> usize {
        schema::latest()
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // rusqlite leaves the connection usable after a panic elsewhere; keep serving.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Imports a preset for `server` under `name`, replacing a same-named preset of that
    /// server, and makes it the active one. Returns the new preset's id.
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
        self.write(server, |tx| {
            tx.execute(
                "DELETE FROM st_presets WHERE server_id = ?1 AND name = ?2",
                params![server, name],
            )?;
            tx.execute(
                "UPDATE st_presets SET active = 0 WHERE server_id = ?1 AND active = 1",
                params![server],
            )?;
            let at = now();
            // Never an id issued before (schema 3), even past rows other tools wrote.
            let id: i64 = tx.query_row(
                "UPDATE st_id_floor SET id = MAX(id, (SELECT COALESCE(MAX(id), 0) FROM st_presets)) + 1 \
                 RETURNING id",
                [],
                |r| r.get(0),
            )?;
            tx.execute(
                "INSERT INTO st_presets (id, server_id, name, raw_json, active, created_at, updated_at, \
                 lone_surrogates) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5, ?6)",
                params![id, server, name, preset.raw_json(), at, preset.lone_surrogates as i64],
            )?;
            let mut insert = tx.prepare(&format!(
                "INSERT INTO st_preset_nodes (preset_id, {PRESET_NODE_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
            ))?;
            for (i, (n, comment)) in preset.nodes().iter().zip(&comment_only).enumerate() {
                insert.execute(params![
                    id,
                    n.identifier,
                    n.name,
                    n.role,
                    n.content,
                    n.marker,
                    n.enabled,
                    comment,
                    i as i64,
                    n.injection_position,
                    n.injection_depth,
                    n.injection_order
                ])?;
            }
            Ok(id)
        })
    }

    /// The server's presets, oldest first.
    pub fn list(&self, server: i64) -> Result<Vec<PresetSummary>, StoreError> {
        let conn = self.conn();
        // One statement, so one snapshot: the node counts match the presets listed.
        let mut stmt = conn.prepare_cached(
            "SELECT p.id, p.name, p.active, \
                    (SELECT COUNT(*) FROM st_preset_nodes n WHERE n.preset_id = p.id), \
                    p.description, p.created_at, p.updated_at, p.regex_allowed \
             FROM st_presets p WHERE p.server_id = ?1 ORDER BY p.id",
        )?;
        let rows = stmt.query_map(params![server], |r| {
            Ok(PresetSummary {
                id: r.get(0)?,
                name: r.get(1)?,
                active: r.get(2)?,
                nodes: r.get::<_, i64>(3)?.try_into().unwrap_or(0),
                description: r.get(4)?,
                created_at: r.get(5)?,
                updated_at: r.get(6)?,
                regex_allowed: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One preset of the server, with its nodes in order (as stored, toggles included).
    pub fn get(&self, server: i64, id: i64) -> Result<Preset, StoreError> {
        self.read(|tx| load(tx, server, id))
    }

    /// Makes `id` the server's one active preset.
    pub fn activate(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.write(server, |tx| {
            owned(tx, server, id)?;
            tx.execute(
                "UPDATE st_presets SET active = 0 WHERE server_id = ?1 AND active = 1",
                params![server],
            )?;
            tx.execute(
                "UPDATE st_presets SET active = 1, updated_at = ?2 WHERE id = ?1",
                params![id, now()],
            )?;
            Ok(())
        })
    }

    /// Lets the preset's regex scripts run, or stops them (SPEC §13.6.1). A render runs them
    /// only when its context allows them too; importing a preset of the same name again
    /// resets the permission to off.
    pub fn allow_regex(&self, server: i64, id: i64, allowed: bool) -> Result<(), StoreError> {
        self.write(server, |tx| {
            owned(tx, server, id)?;
            tx.execute(
                "UPDATE st_presets SET regex_allowed = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, allowed, now()],
            )?;
            Ok(())
        })
    }

    /// Leaves the server with no active preset (native context assembly).
    pub fn deactivate(&self, server: i64) -> Result<(), StoreError> {
        self.write(server, |tx| {
            tx.execute(
                "UPDATE st_presets SET active = 0 WHERE server_id = ?1 AND active = 1",
                params![server],
            )?;
            Ok(())
        })
    }

    /// Sets nodes' enabled states (markers too). An unknown identifier fails the whole call.
    pub fn set_enabled(
        &self,
        server: i64,
        id: i64,
        changes: &[(&str, bool)],
    ) -> Result<(), StoreError> {
        self.write(server, |tx| {
            owned(tx, server, id)?;
            let mut update = tx.prepare_cached(
                "UPDATE st_preset_nodes SET enabled = ?3 WHERE preset_id = ?1 AND identifier = ?2",
            )?;
            for (identifier, on) in changes {
                if update.execute(params![id, identifier, on])? == 0 {
                    return Err(StoreError::UnknownNode {
                        id,
                        identifier: identifier.to_string(),
                    });
                }
            }
            tx.execute(
                "UPDATE st_presets SET updated_at = ?2 WHERE id = ?1",
                params![id, now()],
            )?;
            Ok(())
        })
    }

    /// Deletes a preset; if it was active, the most recently created survivor becomes active.
    pub fn delete(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.write(server, |tx| {
            let was_active = owned(tx, server, id)?;
            tx.execute("DELETE FROM st_presets WHERE id = ?1", params![id])?;
            if was_active {
                tx.execute(
                    "UPDATE st_presets SET active = 1 WHERE id = \
                       (SELECT id FROM st_presets WHERE server_id = ?1 \
                        ORDER BY created_at DESC, id DESC LIMIT 1)",
                    params![server],
                )?;
            }
            Ok(())
        })
    }

    /// The server's active preset, uncached: its id and nodes in order, read from one
    /// snapshot (a concurrent re-import gives the old preset or the new one, never a mix).
    pub fn load_active(&self, server: i64) -> Result<Option<(i64, Preset)>, StoreError> {
        self.read(|tx| active_preset(tx, server))
    }

    /// The server's active preset, compiled, through the cache. `None`: no active preset
    /// (cached too). A database error is returned, never cached.
    ///
    /// Before serving an entry, checks whether another connection committed since the last
    /// check; if so, the whole cache is dropped. Concurrent misses on one server load and
    /// compile once; the others wait for that result.
    pub fn active(&self, server: i64) -> Result<Option<Arc<CompiledPreset>>, StoreError> {
        self.check_foreign_writes()?;
        match self.cache.get(server) {
            cache::Lookup::Hit(hit) => Ok(hit),
            cache::Lookup::Miss(ticket) => {
                // On an error the ticket is dropped unfinished: waiters load for themselves.
                let compiled = self.read(|tx| {
                    let Some((id, preset)) = active_preset(tx, server)? else {
                        return Ok(None);
                    };
                    let allowed: bool = tx.query_row(
                        "SELECT regex_allowed FROM st_presets WHERE id = ?1",
                        params![id],
                        |r| r.get(0),
                    )?;
                    let mut compiled = preset.compile();
                    compiled.set_regex_permitted(allowed);
                    Ok(Some(Arc::new(compiled)))
                })?;
                ticket.finish(compiled.clone());
                Ok(compiled)
            }
        }
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

    fn check_foreign_writes(&self) -> Result<(), StoreError> {
        let conn = self.conn();
        let version = data_version(&conn)?;
        // Recorded under the connection lock, so versions are observed in the order read.
        self.cache.observe_data_version(version);
        Ok(())
    }

    /// Runs `f` in one read transaction: every statement in it sees the same snapshot.
    fn read<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f` in a write transaction; on success commits and invalidates the server's
    /// cache entry.
    fn write<T>(
        &self,
        server: i64,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Some(path) = &self.read_only {
            return Err(StoreError::ReadOnly { path: path.clone() });
        }
        let mut conn = self.conn();
        // IMMEDIATE takes the write lock before the first read, waiting out the busy
        // timeout. A deferred transaction that reads first and then writes must upgrade its
        // read lock, which SQLite refuses at once with SQLITE_BUSY rather than wait.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        drop(conn);
        self.cache.invalidate(server);
        Ok(out)
    }
}

/// Changes whenever another connection commits to the database. Asked on every render, so
/// the statement is cached rather than prepared each time.
fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))?)
}

/// Opens `path` read-only and immutable (no locks, no `-shm`), through a `file:` URI.
fn open_immutable(path: &Path) -> rusqlite::Result<Connection> {
    let mut uri = String::from("file:");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// Checks that preset `id` belongs to `server`; returns its active flag.
fn owned(conn: &Connection, server: i64, id: i64) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT active FROM st_presets WHERE id = ?1 AND server_id = ?2",
        params![id, server],
        |r| r.get(0),
    )
    .optional()?
    .ok_or(StoreError::NotFound { server, id })
}

/// Reads one preset; the caller runs it inside a transaction so that the preset row and its
/// nodes come from one snapshot.
/// The server's active preset and its id, in the caller's snapshot.
fn active_preset(tx: &Connection, server: i64) -> Result<Option<(i64, Preset)>, StoreError> {
    let id: Option<i64> = tx
        .query_row(
            "SELECT id FROM st_presets WHERE server_id = ?1 AND active = 1",
            params![server],
            |r| r.get(0),
        )
        .optional()?;
    id.map(|id| Ok((id, load(tx, server, id)?))).transpose()
}

fn load(conn: &Connection, server: i64, id: i64) -> Result<Preset, StoreError> {
    let (raw, lone): (String, i64) = conn
        .query_row(
            "SELECT raw_json, lone_surrogates FROM st_presets WHERE id = ?1 AND server_id = ?2",
            params![id, server],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .ok_or(StoreError::NotFound { server, id })?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {PRESET_NODE_COLUMNS} FROM st_preset_nodes WHERE preset_id = ?1 ORDER BY order_index"
    ))?;
    let nodes = stmt
        .query_map(params![id], |r| {
            Ok(PresetNode {
                identifier: r.get(0)?,
                name: r.get(1)?,
                role: r.get(2)?,
                content: r.get(3)?,
                marker: r.get(4)?,
                enabled: r.get(5)?,
                injection_position: r.get(8)?,
                injection_depth: r.get(9)?,
                injection_order: r.get(10)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Preset::from_stored(
        nodes,
        raw.into_bytes().into_boxed_slice(),
        usize::try_from(lone).unwrap_or(0),
    ))
}
