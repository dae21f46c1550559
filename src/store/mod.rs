//! Presets persisted per server in SQLite, with a cache of each server's active compiled
//! preset (SPEC §7). Every call is scoped by server id; every multi-row change is one
//! transaction; every successful mutation invalidates that server's cache entry.

mod cache;
mod schema;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension, Transaction, params};
use thiserror::Error;

use crate::context::Context;
use crate::preset::{CompiledPreset, Preset, PresetError, PresetNode, Rendered};

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

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked,
            _ => StoreError::Database(e.to_string()),
        }
    }
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

/// Store options: cache TTL and the clock that measures it.
#[derive(Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// How long a cached active preset (or "none") stays fresh. Default 10 minutes.
    pub ttl: Duration,
    /// The cache's clock.
    pub clock: Arc<dyn Clock>,
    /// How long to wait for another connection's lock before `StoreError::Locked`.
    pub busy_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            ttl: Duration::from_secs(600),
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
/// let out = store.render(7, &Context::default()).unwrap().unwrap();
/// assert_eq!(out.messages[0].text(), "Hi User");
/// assert!(store.list(8).unwrap().is_empty(), "other servers see nothing");
/// ```
pub struct PresetStore {
    conn: Mutex<Connection>,
    cache: cache::PresetCache,
}

const PRESET_NODE_COLUMNS: &str = "identifier, name, role, content, marker, enabled, \
     comment_only, order_index, injection_position, injection_depth, injection_order";

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

impl PresetStore {
    /// Opens (creating if needed) a database file and migrates it to the current schema.
    pub fn open(path: impl AsRef<Path>) -> Result<PresetStore, StoreError> {
        PresetStore::open_with(path, StoreOptions::default())
    }

    /// Opens a database file with the given options.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: StoreOptions,
    ) -> Result<PresetStore, StoreError> {
        let path = path.as_ref();
        let open_err = |reason: String| StoreError::Open {
            path: path.display().to_string(),
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
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        PresetStore::setup(conn, options, true)
    }

    /// A store in memory (for tests and short-lived tools).
    pub fn open_in_memory() -> Result<PresetStore, StoreError> {
        let conn = Connection::open_in_memory()?;
        PresetStore::setup(conn, StoreOptions::default(), false)
    }

    fn setup(
        mut conn: Connection,
        options: StoreOptions,
        wal: bool,
    ) -> Result<PresetStore, StoreError> {
        conn.busy_timeout(options.busy_timeout)?;
        conn.pragma_update(None, "foreign_keys", true)?;
        if wal {
            // WAL lets readers proceed while a writer commits.
            let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        }
        schema::migrate(&mut conn)?;
        Ok(PresetStore {
            conn: Mutex::new(conn),
            cache: cache::PresetCache::new(options.ttl, options.clock),
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
    pub fn import(&self, server: i64, name: &str, bytes: &[u8]) -> Result<i64, StoreError> {
        let preset = Preset::from_json(bytes)?;
        let comment_only: Vec<bool> = preset
            .nodes()
            .iter()
            .map(|n| !n.marker && n.is_comment_only())
            .collect();
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute(
            "DELETE FROM st_presets WHERE server_id = ?1 AND name = ?2",
            params![server, name],
        )?;
        tx.execute(
            "UPDATE st_presets SET active = 0 WHERE server_id = ?1 AND active = 1",
            params![server],
        )?;
        let at = now();
        tx.execute(
            "INSERT INTO st_presets (server_id, name, raw_json, active, created_at, updated_at) \
             VALUES (?1, ?2, ?3, 1, ?4, ?4)",
            params![server, name, preset.raw_json(), at],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(&format!(
                "INSERT INTO st_preset_nodes (preset_id, {PRESET_NODE_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
            ))?;
            for (i, (n, comment)) in preset.nodes().iter().zip(comment_only).enumerate() {
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
        }
        tx.commit()?;
        drop(conn);
        self.cache.invalidate(server);
        Ok(id)
    }

    /// The server's presets, oldest first.
    pub fn list(&self, server: i64) -> Result<Vec<PresetSummary>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT p.id, p.name, p.active, \
                    (SELECT COUNT(*) FROM st_preset_nodes n WHERE n.preset_id = p.id), \
                    p.description, p.created_at, p.updated_at \
             FROM st_presets p WHERE p.server_id = ?1 ORDER BY p.id",
        )?;
        let rows = stmt.query_map(params![server], |r| {
            Ok(PresetSummary {
                id: r.get(0)?,
                name: r.get(1)?,
                active: r.get(2)?,
                nodes: r.get::<_, i64>(3)? as usize,
                description: r.get(4)?,
                created_at: r.get(5)?,
                updated_at: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One preset of the server, with its nodes in order (as stored, toggles included).
    pub fn get(&self, server: i64, id: i64) -> Result<Preset, StoreError> {
        let conn = self.conn();
        load(&conn, server, id)
    }

    /// Makes `id` the server's one active preset.
    pub fn activate(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.mutate(server, |tx| {
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

    /// Leaves the server with no active preset (native context assembly).
    pub fn deactivate(&self, server: i64) -> Result<(), StoreError> {
        self.mutate(server, |tx| {
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
        self.mutate(server, |tx| {
            owned(tx, server, id)?;
            let mut update = tx.prepare(
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
        self.mutate(server, |tx| {
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

    /// The server's active preset, uncached: its id and nodes in order.
    pub fn load_active(&self, server: i64) -> Result<Option<(i64, Preset)>, StoreError> {
        let conn = self.conn();
        let id: Option<i64> = conn
            .query_row(
                "SELECT id FROM st_presets WHERE server_id = ?1 AND active = 1",
                params![server],
                |r| r.get(0),
            )
            .optional()?;
        match id {
            Some(id) => Ok(Some((id, load(&conn, server, id)?))),
            None => Ok(None),
        }
    }

    /// The server's active preset, compiled, through the cache. `None`: no active preset
    /// (cached too). A database error is returned, never cached.
    pub fn active(&self, server: i64) -> Result<Option<Arc<CompiledPreset>>, StoreError> {
        match self.cache.get(server) {
            Ok(hit) => Ok(hit),
            Err(generation) => {
                let compiled = self
                    .load_active(server)?
                    .map(|(_, preset)| Arc::new(preset.compile()));
                self.cache.store(server, generation, compiled.clone());
                Ok(compiled)
            }
        }
    }

    /// Renders the server's active preset (through the cache); `None` when it has none.
    pub fn render(&self, server: i64, ctx: &Context) -> Result<Option<Rendered>, StoreError> {
        Ok(self.active(server)?.map(|p| p.render(ctx)))
    }

    /// Cache hits and misses so far.
    pub fn cache_stats(&self) -> (u64, u64) {
        self.cache.stats()
    }

    /// Runs `f` in a transaction; on success commits and invalidates the server's cache entry.
    fn mutate(
        &self,
        server: i64,
        f: impl FnOnce(&Transaction<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        f(&tx)?;
        tx.commit()?;
        drop(conn);
        self.cache.invalidate(server);
        Ok(())
    }
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

fn load(conn: &Connection, server: i64, id: i64) -> Result<Preset, StoreError> {
    let raw: String = conn
        .query_row(
            "SELECT raw_json FROM st_presets WHERE id = ?1 AND server_id = ?2",
            params![id, server],
            |r| r.get(0),
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
    ))
}
