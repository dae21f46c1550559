//! Versioned migrations, applied on open. `PRAGMA user_version` records how far a file is.

use rusqlite::Connection;

/// Migration scripts in order; index + 1 is the schema version they produce.
const MIGRATIONS: [&str; 1] = [include_str!("../../migrations/0001_init.sql")];

/// Brings the database up to the latest schema, each step in its own transaction.
pub(super) fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let current = usize::try_from(current).unwrap_or(0);
    if current > MIGRATIONS.len() {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
            Some(format!(
                "schema version {current} is newer than this build of stpreset ({})",
                MIGRATIONS.len()
            )),
        ));
    }
    for (i, script) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction()?;
        tx.execute_batch(script)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

/// The schema version this build writes.
pub(super) fn latest() -> usize {
    MIGRATIONS.len()
}
