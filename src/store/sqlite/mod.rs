//! The SQLite backend: one file, shared by every process on the machine. Foreign commits are
//! noticed through `PRAGMA data_version` before a cached entry is served.

mod schema;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{
    Connection, ErrorCode, MAIN_DB, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
    params,
};

use super::backend::{
    ActivePreset, Backend, Freshness, NewPreset, StoredSize, check_stored, two_active,
};
use super::{PresetSummary, StoreError, now, plan_switch};
use crate::preset::switch::{Resolve, Switched};
use crate::preset::{Preset, PresetNode};

pub(super) use schema::latest as schema_version;

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

const PRESET_NODE_COLUMNS: &str = "identifier, name, role, content, marker, enabled, \
     comment_only, order_index, injection_position, injection_depth, injection_order";

pub(super) struct Sqlite {
    // One connection, on purpose: `PRAGMA data_version` changes only for commits by *other*
    // connections, so with one connection this store's own writes never flush its whole
    // cache (each invalidates just its server), while every foreign commit does.
    conn: Mutex<Connection>,
    /// `Some(path)` when the file could only be opened read-only.
    read_only: Option<String>,
}

impl Sqlite {
    pub(super) fn open(path: &Path, busy_timeout: Duration) -> Result<Sqlite, StoreError> {
        // Switching a new file to WAL needs an exclusive lock, and SQLite answers `SQLITE_BUSY`
        // at once, without its busy handler, when another connection is opening the same new
        // file (it would deadlock otherwise). So the first opens of several processes retry
        // the whole open, with growing pauses, until the busy timeout is spent.
        // SQLite reads an empty path as a private temporary database: every write would vanish
        // with the store.
        if path.as_os_str().is_empty() {
            return Err(StoreError::Open {
                path: String::new(),
                reason: "the path is empty (use open_in_memory for a temporary store)".into(),
            });
        }
        let deadline = std::time::Instant::now() + busy_timeout;
        let mut pause = Duration::from_millis(2);
        loop {
            match Sqlite::open_once(path, busy_timeout) {
                Err(StoreError::Locked) if std::time::Instant::now() + pause < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                result => return result,
            }
        }
    }

    fn open_once(path: &Path, busy_timeout: Duration) -> Result<Sqlite, StoreError> {
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
        conn.busy_timeout(busy_timeout)?;
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
        Sqlite::setup(conn, busy_timeout, true, read_only).map_err(|e| match e {
            StoreError::Database(reason) => open_err(reason),
            e => e,
        })
    }

    pub(super) fn open_in_memory() -> Result<Sqlite, StoreError> {
        let conn = Connection::open_in_memory()?;
        Sqlite::setup(conn, Duration::from_secs(5), false, None)
    }

    fn setup(
        mut conn: Connection,
        busy_timeout: Duration,
        wal: bool,
        read_only: Option<String>,
    ) -> Result<Sqlite, StoreError> {
        conn.busy_timeout(busy_timeout)?;
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
        Ok(Sqlite {
            conn: Mutex::new(conn),
            read_only,
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // rusqlite leaves the connection usable after a panic elsewhere; keep serving.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Runs `f` in a write transaction and commits it.
    fn write<T>(
        &self,
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
        Ok(out)
    }
}

impl Backend for Sqlite {
    fn import(&self, new: &NewPreset<'_>) -> Result<i64, StoreError> {
        let NewPreset {
            server,
            name,
            preset,
            comment_only,
        } = *new;
        self.write(|tx| {
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
            Ok(id)
        })
    }

    fn list(&self, server: i64) -> Result<Vec<PresetSummary>, StoreError> {
        let conn = self.conn();
        // One statement, so one snapshot: the node counts match the presets listed. Names and
        // descriptions other tools wrote are cut to what an import could store, so one huge
        // row cannot make every listing allocate it.
        let mut stmt = conn.prepare_cached(
            "SELECT p.id, substr(p.name, 1, 256), p.active, \
                    (SELECT COUNT(*) FROM st_preset_nodes n WHERE n.preset_id = p.id), \
                    CASE WHEN length(CAST(p.description AS BLOB)) <= 4096 THEN p.description END, \
                    substr(p.created_at, 1, 64), substr(p.updated_at, 1, 64), p.regex_allowed \
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

    fn get(&self, server: i64, id: i64) -> Result<Preset, StoreError> {
        self.read(|tx| load(tx, server, id))
    }

    fn activate(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.write(|tx| {
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

    fn allow_regex(&self, server: i64, id: i64, allowed: bool) -> Result<(), StoreError> {
        self.write(|tx| {
            owned(tx, server, id)?;
            tx.execute(
                "UPDATE st_presets SET regex_allowed = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, allowed, now()],
            )?;
            Ok(())
        })
    }

    fn deactivate(&self, server: i64) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE st_presets SET active = 0 WHERE server_id = ?1 AND active = 1",
                params![server],
            )?;
            Ok(())
        })
    }

    fn switch(
        &self,
        server: i64,
        id: i64,
        changes: &[(&str, bool)],
        how: Resolve,
    ) -> Result<Switched, StoreError> {
        self.write(|tx| {
            owned(tx, server, id)?;
            let done = plan_switch(|| load_nodes(tx, server, id), id, changes, how)?;
            let mut update = tx.prepare_cached(
                "UPDATE st_preset_nodes SET enabled = ?3 WHERE preset_id = ?1 AND identifier = ?2",
            )?;
            for c in &done.changes {
                if update.execute(params![id, c.identifier, c.enabled])? == 0 {
                    return Err(StoreError::UnknownNode {
                        id,
                        identifier: c.identifier.clone(),
                    });
                }
            }
            tx.execute(
                "UPDATE st_presets SET updated_at = ?2 WHERE id = ?1",
                params![id, now()],
            )?;
            Ok(done)
        })
    }

    fn delete(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.write(|tx| {
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

    fn load_active(&self, server: i64) -> Result<Option<ActivePreset>, StoreError> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, regex_allowed FROM st_presets WHERE server_id = ?1 AND active = 1 LIMIT 2",
            )?;
            let rows = stmt
                .query_map(params![server], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<(i64, bool)>, _>>()?;
            match rows[..] {
                [] => Ok(None),
                [(id, regex_allowed)] => Ok(Some(ActivePreset {
                    id,
                    preset: load(tx, server, id)?,
                    regex_allowed,
                })),
                _ => Err(two_active(server)),
            }
        })
    }

    fn freshness(&self) -> Result<Freshness, StoreError> {
        // Asked on every render, so the statement is cached rather than prepared each time.
        let conn = self.conn();
        let version = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?;
        Ok(Freshness::Version(version))
    }
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
fn load(conn: &Connection, server: i64, id: i64) -> Result<Preset, StoreError> {
    let nodes = load_nodes(conn, server, id)?;
    let (raw, lone): (String, i64) = conn.query_row(
        "SELECT raw_json, lone_surrogates FROM st_presets WHERE id = ?1",
        params![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(Preset::from_stored(
        nodes,
        raw.into_bytes().into_boxed_slice(),
        usize::try_from(lone).unwrap_or(0),
    ))
}

/// One preset's nodes in order, after checking its size in the database (a toggle's check
/// needs no more than these).
fn load_nodes(conn: &Connection, server: i64, id: i64) -> Result<Vec<PresetNode>, StoreError> {
    let size = conn
        .prepare_cached(
            "SELECT LENGTH(CAST(p.raw_json AS BLOB)), \
                    (SELECT COUNT(*) FROM st_preset_nodes n WHERE n.preset_id = p.id), \
                    (SELECT COALESCE(SUM(LENGTH(CAST(identifier AS BLOB)) + LENGTH(CAST(name AS BLOB)) \
                       + LENGTH(CAST(role AS BLOB)) + LENGTH(CAST(content AS BLOB))), 0) \
                     FROM st_preset_nodes n WHERE n.preset_id = p.id) \
             FROM st_presets p WHERE p.id = ?1 AND p.server_id = ?2",
        )?
        .query_row(params![id, server], |r| {
            Ok(StoredSize {
                raw: r.get(0)?,
                nodes: r.get(1)?,
                text: r.get(2)?,
            })
        })
        .optional()?
        .ok_or(StoreError::NotFound { server, id })?;
    check_stored(id, size)?;
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
    Ok(nodes)
}
