//! Versioned migrations for the PostgreSQL schema `stpreset`, applied on open. The version is
//! a row of `stpreset.st_schema`.

use postgres::Client;

use super::{StoreError, pg_error};

/// Migration scripts in order; index + 1 is the schema version they produce.
const MIGRATIONS: [&str; 1] = [include_str!("../../../migrations/postgres/0001_init.sql")];

/// The advisory lock key (`stpr` in ASCII) of migrations and per-server writes; the second
/// key is 0 for migrations and derived from the server id for writes.
pub(super) const LOCK_KEY: i32 = 0x7374_7072;

/// Whether `stpreset.TABLE` exists, read from the catalog with the statement's snapshot
/// (`to_regclass` may answer from a catalog cache that predates a concurrent migration).
const TABLE_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables \
     WHERE schemaname = 'stpreset' AND tablename = $1)";

/// The version a database is at: `None` before our schema exists.
fn version(client: &mut Client) -> Result<Option<i64>, StoreError> {
    let exists: bool = client
        .query_one(TABLE_EXISTS, &[&"st_schema"])
        .map_err(pg_error)?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let row = client
        .query_opt("SELECT max(version) FROM stpreset.st_schema", &[])
        .map_err(pg_error)?;
    Ok(row.and_then(|r| r.get::<_, Option<i64>>(0)))
}

fn check(version: Option<i64>) -> Result<(), StoreError> {
    match version {
        Some(v) if v > MIGRATIONS.len() as i64 => Err(StoreError::Database(format!(
            "schema version {v} is newer than this build of stpreset ({})",
            MIGRATIONS.len()
        ))),
        _ => Ok(()),
    }
}

/// Brings the database up to the latest schema. Reads only when it is current, so a role that
/// may only read can open it. Otherwise every step runs in one transaction under an advisory
/// lock that re-reads the version, so instances opening a new database at once migrate it
/// exactly once.
pub(super) fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let current = version(client)?;
    check(current)?;
    if current == Some(MIGRATIONS.len() as i64) {
        return Ok(());
    }
    let mut tx = client.transaction().map_err(pg_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_KEY])
        .map_err(pg_error)?;
    let current = {
        let exists: bool = tx
            .query_one(TABLE_EXISTS, &[&"st_schema"])
            .map_err(pg_error)?
            .get(0);
        if exists {
            tx.query_one("SELECT max(version) FROM stpreset.st_schema", &[])
                .map_err(pg_error)?
                .get::<_, Option<i64>>(0)
        } else {
            None
        }
    };
    check(current)?;
    if current.is_none() {
        // A schema `stpreset` with our tables but no version row is someone else's.
        let mut foreign = false;
        for table in ["st_presets", "st_preset_nodes"] {
            foreign |= tx
                .query_one(TABLE_EXISTS, &[&table])
                .map_err(pg_error)?
                .get::<_, bool>(0);
        }
        if foreign {
            return Err(StoreError::Database(
                "it has a table `stpreset.st_presets` that stpreset did not create (no schema \
                 version); not a preset store"
                    .into(),
            ));
        }
        tx.batch_execute(
            "CREATE SCHEMA IF NOT EXISTS stpreset; \
             CREATE TABLE stpreset.st_schema (version bigint NOT NULL)",
        )
        .map_err(pg_error)?;
    }
    let from = usize::try_from(current.unwrap_or(0)).unwrap_or(0);
    for (i, script) in MIGRATIONS.iter().enumerate().skip(from) {
        tx.batch_execute(script).map_err(|e| {
            StoreError::Database(format!(
                "migration to schema version {}: {}",
                i + 1,
                super::pg_reason(&e)
            ))
        })?;
    }
    tx.execute("DELETE FROM stpreset.st_schema", &[])
        .map_err(pg_error)?;
    tx.execute(
        "INSERT INTO stpreset.st_schema (version) VALUES ($1)",
        &[&(MIGRATIONS.len() as i64)],
    )
    .map_err(pg_error)?;
    tx.commit().map_err(pg_error)
}
