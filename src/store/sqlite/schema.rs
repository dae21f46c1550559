//! Versioned migrations, applied on open. `PRAGMA user_version` records how far a file is.

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// Migration scripts in order; index + 1 is the schema version they produce.
const MIGRATIONS: [&str; 3] = [
    include_str!("../../../migrations/sqlite/0001_init.sql"),
    include_str!("../../../migrations/sqlite/0002_regex_allowed.sql"),
    include_str!("../../../migrations/sqlite/0003_ids_and_notes.sql"),
];

/// The tables the migrations create; a version-0 file that already has one is not ours.
const TABLES: [&str; 2] = ["st_presets", "st_preset_nodes"];

fn version(conn: &Connection) -> Result<usize, StoreError> {
    let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let v = usize::try_from(v).unwrap_or(usize::MAX);
    if v > MIGRATIONS.len() {
        return Err(StoreError::Database(format!(
            "schema version {v} is newer than this build of stpreset ({})",
            MIGRATIONS.len()
        )));
    }
    Ok(v)
}

/// Refuses a file at version 0 that already has one of our tables: someone else's table of
/// that name, which the first migration would collide with.
fn refuse_foreign_tables(conn: &Connection) -> Result<(), StoreError> {
    for table in TABLES {
        let exists: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = ?1)",
            [table],
            |r| r.get(0),
        )?;
        if exists {
            return Err(StoreError::Database(format!(
                "it has a table `{table}` that stpreset did not create (schema version 0); \
                 not a preset store"
            )));
        }
    }
    Ok(())
}

/// Brings the database up to the latest schema. Reads only when the file is current, so a
/// read-only file can be opened. Otherwise all steps run in one immediate transaction that
/// re-reads the version, so processes opening a fresh file at once migrate it exactly once.
pub(super) fn migrate(conn: &mut Connection, read_only: bool) -> Result<(), StoreError> {
    if version(conn)? == MIGRATIONS.len() {
        return Ok(());
    }
    if read_only {
        return Err(StoreError::Database(format!(
            "it needs migrating to schema version {} but is read-only",
            MIGRATIONS.len()
        )));
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current = version(&tx)?;
    if current == 0 {
        refuse_foreign_tables(&tx)?;
    }
    for (i, script) in MIGRATIONS.iter().enumerate().skip(current) {
        tx.execute_batch(script).map_err(|e| {
            StoreError::Database(format!(
                "migration to schema version {}: {}",
                i + 1,
                super::sqlite_reason(&e)
            ))
        })?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.commit()?;
    Ok(())
}

/// The schema version this build writes.
pub(in crate::store) fn latest() -> usize {
    MIGRATIONS.len()
}
