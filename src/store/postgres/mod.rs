//! The PostgreSQL backend: one database shared by bots on many machines.
//!
//! Two connections per store, each on a thread of its own ([`worker`] runs the calls,
//! [`listener`] hears every change through the schema's triggers and tells the cache). Tables
//! live in the schema `stpreset`, so they cannot collide with a bot's own. Writes take a
//! per-server advisory lock inside their transaction, so two instances importing for one server
//! queue instead of failing on the one-active index.

mod listener;
mod schema;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Config, IsolationLevel, Transaction};

use super::backend::{
    ActivePreset, Backend, Freshness, NewPreset, StoredSize, check_stored, two_active,
};
use super::{PresetSummary, StoreError, now, plan_switch, postgres_shown};
use crate::preset::switch::{Resolve, Switched};
use crate::preset::{Preset, PresetNode};

use listener::Listener;
use worker::Worker;

/// PostgreSQL's own message for a failure, without the driver's prefix.
fn pg_reason(e: &postgres::Error) -> String {
    use std::error::Error as _;
    match (e.as_db_error(), e.source()) {
        (Some(db), _) => db.message().to_string(),
        // "error connecting to server" alone does not say why (refused, timed out, ...).
        (None, Some(cause)) => format!("{e}: {cause}"),
        (None, None) => e.to_string(),
    }
}

fn pg_error(e: postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
        StoreError::Locked
    } else {
        StoreError::Database(pg_reason(&e))
    }
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        pg_error(e)
    }
}

/// PostgreSQL's `text` cannot hold U+0000, which a preset's strings may. A preset that has one
/// is stored with `nul_escaped` and every text column escaped: `\` as `\\`, U+0000 as `\0`.
/// Presets without one (nearly all) are stored as they are, readable with plain SQL.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\0', "\\0")
}

fn unescape(s: String) -> String {
    if !s.contains('\\') {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('\0'),
            Some('\\') => out.push('\\'),
            // Not written by us (another tool's row): kept as it is.
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The second key of a server's advisory write lock. Two servers may share one (then their
/// writes queue behind each other); that costs time, never correctness.
fn server_key(server: i64) -> i32 {
    (server ^ (server >> 32)) as i32
}

pub(super) struct Postgres {
    worker: Worker,
    listener: Listener,
}

impl Postgres {
    pub(super) fn open(
        target: &str,
        busy_timeout: Duration,
        sink: Box<dyn Fn(Option<i64>) + Send + Sync>,
    ) -> Result<Postgres, StoreError> {
        let shown = postgres_shown(target);
        let open_err = |reason: String| StoreError::Open {
            path: shown.clone(),
            reason,
        };
        let mut config: Config = target.parse().map_err(|e| open_err(pg_reason(&e)))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        if config.get_application_name().is_none() {
            config.application_name("stpreset");
        }
        // A server that vanishes without closing the connection (a power cut, a partition)
        // is noticed by TCP in seconds instead of the system's default of hours.
        config
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(5))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(3)
            .tcp_user_timeout(Duration::from_secs(10));
        let setup = format!(
            "SET lock_timeout = {}; SET idle_in_transaction_session_timeout = 60000",
            busy_timeout.as_millis().max(1)
        );
        let opened = |e: StoreError| match e {
            StoreError::Database(reason) => open_err(reason),
            e => e,
        };
        let worker = Worker::start(config.clone(), setup, busy_timeout + Duration::from_secs(5))
            .map_err(opened)?;
        worker
            .run(|session| schema::migrate(session.client()?))
            .map_err(opened)?;
        let listener = Listener::start(config, Arc::from(sink))
            .map_err(|e| open_err(format!("cannot start a thread: {e}")))?;
        listener.wait_ready(Duration::from_secs(2));
        Ok(Postgres { worker, listener })
    }

    /// Runs `f` in one read-only snapshot (repeatable read): a preset and its nodes come from
    /// one committed state. A read that fails because the connection had died (a server
    /// restart since the last call) is tried once more on a new connection: it wrote nothing.
    fn read<T: Send + 'static>(
        &self,
        f: impl Fn(&mut Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.worker.run(move |session| {
            let attempt = |session: &mut worker::Session| {
                let mut tx = session
                    .client()?
                    .build_transaction()
                    .isolation_level(IsolationLevel::RepeatableRead)
                    .read_only(true)
                    .start()?;
                let out = f(&mut tx)?;
                tx.commit()?;
                Ok(out)
            };
            match attempt(session) {
                Err(_) if session.dead() => attempt(session),
                out => out,
            }
        })
    }

    /// Runs `f` in a transaction holding the server's write lock, and commits it.
    fn write<T: Send + 'static>(
        &self,
        server: i64,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.worker.run(move |session| {
            let mut tx = session.client()?.transaction()?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &[&schema::LOCK_KEY, &server_key(server)],
            )?;
            let out = f(&mut tx)?;
            tx.commit()?;
            Ok(out)
        })
    }
}

/// Owned columns of an import's nodes, sent as arrays in one statement.
struct NodeColumns {
    identifier: Vec<String>,
    name: Vec<String>,
    role: Vec<String>,
    content: Vec<String>,
    marker: Vec<bool>,
    enabled: Vec<bool>,
    comment_only: Vec<bool>,
    order_index: Vec<i64>,
    injection_position: Vec<i32>,
    injection_depth: Vec<i32>,
    injection_order: Vec<i32>,
}

impl NodeColumns {
    fn new(nodes: &[PresetNode], comment_only: &[bool], text: impl Fn(&str) -> String) -> Self {
        NodeColumns {
            identifier: nodes.iter().map(|n| text(&n.identifier)).collect(),
            name: nodes.iter().map(|n| text(&n.name)).collect(),
            role: nodes.iter().map(|n| text(&n.role)).collect(),
            content: nodes.iter().map(|n| text(&n.content)).collect(),
            marker: nodes.iter().map(|n| n.marker).collect(),
            enabled: nodes.iter().map(|n| n.enabled).collect(),
            comment_only: comment_only.to_vec(),
            order_index: (0..nodes.len() as i64).collect(),
            injection_position: nodes.iter().map(|n| n.injection_position).collect(),
            injection_depth: nodes.iter().map(|n| n.injection_depth).collect(),
            injection_order: nodes.iter().map(|n| n.injection_order).collect(),
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 11] {
        [
            &self.identifier,
            &self.name,
            &self.role,
            &self.content,
            &self.marker,
            &self.enabled,
            &self.comment_only,
            &self.order_index,
            &self.injection_position,
            &self.injection_depth,
            &self.injection_order,
        ]
    }
}

impl Backend for Postgres {
    fn import(&self, new: &NewPreset<'_>) -> Result<i64, StoreError> {
        let preset = new.preset;
        let escaped = preset.raw_json().contains('\0')
            || preset.nodes().iter().any(|n| {
                [&n.identifier, &n.name, &n.role, &n.content]
                    .iter()
                    .any(|s| s.contains('\0'))
            });
        let text = |s: &str| if escaped { escape(s) } else { s.to_string() };
        let columns = NodeColumns::new(preset.nodes(), new.comment_only, text);
        // Names are never escaped: they cannot hold U+0000 (`check_name`), and one stored
        // form per name keeps the per-server uniqueness of names exact.
        let (server, name, raw) = (new.server, new.name.to_string(), text(preset.raw_json()));
        let lone = i64::try_from(preset.lone_surrogates).unwrap_or(i64::MAX);
        self.write(server, move |tx| {
            tx.execute(
                "DELETE FROM stpreset.st_presets WHERE server_id = $1 AND name = $2",
                &[&server, &name],
            )?;
            tx.execute(
                "UPDATE stpreset.st_presets SET active = false WHERE server_id = $1 AND active",
                &[&server],
            )?;
            let id = next_id(tx)?;
            let at = now();
            tx.execute(
                "INSERT INTO stpreset.st_presets (id, server_id, name, raw_json, active, \
                 created_at, updated_at, lone_surrogates, nul_escaped) \
                 VALUES ($1, $2, $3, $4, true, $5, $5, $6, $7)",
                &[&id, &server, &name, &raw, &at, &lone, &escaped],
            )?;
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![&id];
            params.extend(columns.params());
            tx.execute(
                "INSERT INTO stpreset.st_preset_nodes (preset_id, identifier, name, role, \
                 content, marker, enabled, comment_only, order_index, injection_position, \
                 injection_depth, injection_order) \
                 SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], \
                 $6::bool[], $7::bool[], $8::bool[], $9::int8[], $10::int4[], $11::int4[], \
                 $12::int4[])",
                &params,
            )?;
            Ok(id)
        })
    }

    fn list(&self, server: i64) -> Result<Vec<PresetSummary>, StoreError> {
        // One snapshot: the node counts match the presets listed. Names and descriptions
        // that other tools wrote are cut to what an import could store, so one huge row
        // cannot make every listing allocate it.
        self.read(move |tx| {
            tx.query(
                "SELECT p.id, left(p.name, 256), p.active, \
                        (SELECT COUNT(*) FROM stpreset.st_preset_nodes n WHERE n.preset_id = p.id), \
                        CASE WHEN octet_length(p.description) <= 4096 THEN p.description END, \
                        left(p.created_at, 64), left(p.updated_at, 64), p.regex_allowed \
                 FROM stpreset.st_presets p WHERE p.server_id = $1 ORDER BY p.id",
                &[&server],
            )?
            .iter()
            .map(|r| {
                Ok(PresetSummary {
                    id: r.try_get(0)?,
                    name: r.try_get(1)?,
                    active: r.try_get(2)?,
                    nodes: usize::try_from(r.try_get::<_, i64>(3)?).unwrap_or(0),
                    description: r.try_get(4)?,
                    created_at: r.try_get(5)?,
                    updated_at: r.try_get(6)?,
                    regex_allowed: r.try_get(7)?,
                })
            })
            .collect()
        })
    }

    fn get(&self, server: i64, id: i64) -> Result<Preset, StoreError> {
        self.read(move |tx| load(tx, server, id))
    }

    fn activate(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.write(server, move |tx| {
            owned(tx, server, id)?;
            tx.execute(
                "UPDATE stpreset.st_presets SET active = false WHERE server_id = $1 AND active",
                &[&server],
            )?;
            tx.execute(
                "UPDATE stpreset.st_presets SET active = true, updated_at = $2 WHERE id = $1",
                &[&id, &now()],
            )?;
            Ok(())
        })
    }

    fn allow_regex(&self, server: i64, id: i64, allowed: bool) -> Result<(), StoreError> {
        self.write(server, move |tx| {
            owned(tx, server, id)?;
            tx.execute(
                "UPDATE stpreset.st_presets SET regex_allowed = $2, updated_at = $3 WHERE id = $1",
                &[&id, &allowed, &now()],
            )?;
            Ok(())
        })
    }

    fn deactivate(&self, server: i64) -> Result<(), StoreError> {
        self.write(server, move |tx| {
            tx.execute(
                "UPDATE stpreset.st_presets SET active = false WHERE server_id = $1 AND active",
                &[&server],
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
        let changes: Vec<(String, bool)> = changes
            .iter()
            .map(|(identifier, on)| (identifier.to_string(), *on))
            .collect();
        self.write(server, move |tx| {
            let (_, escaped) = owned(tx, server, id)?;
            // The plan reads the states this transaction sees: the server's advisory lock
            // keeps every other write of the server out until it commits.
            let asked: Vec<(&str, bool)> =
                changes.iter().map(|(s, on)| (s.as_str(), *on)).collect();
            let done = plan_switch(|| load_nodes(tx, server, id), id, &asked, how)?;
            let update = tx.prepare(
                "UPDATE stpreset.st_preset_nodes SET enabled = $3 \
                 WHERE preset_id = $1 AND identifier = $2",
            )?;
            for c in &done.changes {
                let stored = if escaped {
                    escape(&c.identifier)
                } else if c.identifier.contains('\0') {
                    // Unescaped rows cannot hold U+0000, so no node has this identifier.
                    return Err(StoreError::UnknownNode {
                        id,
                        identifier: c.identifier.clone(),
                    });
                } else {
                    c.identifier.clone()
                };
                if tx.execute(&update, &[&id, &stored, &c.enabled])? == 0 {
                    return Err(StoreError::UnknownNode {
                        id,
                        identifier: c.identifier.clone(),
                    });
                }
            }
            tx.execute(
                "UPDATE stpreset.st_presets SET updated_at = $2 WHERE id = $1",
                &[&id, &now()],
            )?;
            Ok(done)
        })
    }

    fn delete(&self, server: i64, id: i64) -> Result<(), StoreError> {
        self.write(server, move |tx| {
            let (was_active, _) = owned(tx, server, id)?;
            tx.execute("DELETE FROM stpreset.st_presets WHERE id = $1", &[&id])?;
            if was_active {
                tx.execute(
                    "UPDATE stpreset.st_presets SET active = true WHERE id = \
                       (SELECT id FROM stpreset.st_presets WHERE server_id = $1 \
                        ORDER BY created_at DESC, id DESC LIMIT 1)",
                    &[&server],
                )?;
            }
            Ok(())
        })
    }

    fn load_active(&self, server: i64) -> Result<Option<ActivePreset>, StoreError> {
        self.read(move |tx| {
            let rows = tx.query(
                "SELECT id, regex_allowed FROM stpreset.st_presets \
                 WHERE server_id = $1 AND active LIMIT 2",
                &[&server],
            )?;
            match &rows[..] {
                [] => Ok(None),
                [row] => {
                    let id: i64 = row.try_get(0)?;
                    Ok(Some(ActivePreset {
                        id,
                        preset: load(tx, server, id)?,
                        regex_allowed: row.try_get(1)?,
                    }))
                }
                _ => Err(two_active(server)),
            }
        })
    }

    fn freshness(&self) -> Result<Freshness, StoreError> {
        Ok(if self.listener.vouches() {
            Freshness::Vouched
        } else {
            Freshness::Unvouched
        })
    }
}

/// A preset id never issued before. A sequence hands ids out without a lock that imports for
/// different servers would queue on. Rows other tools wrote may hold ids ahead of it: an id
/// already taken moves the sequence past the largest (never backwards, so an id it issued is
/// never issued again) and draws again.
fn next_id(tx: &mut Transaction<'_>) -> Result<i64, StoreError> {
    loop {
        let id: i64 = tx
            .query_one("SELECT nextval('stpreset.st_preset_ids')", &[])?
            .try_get(0)?;
        let taken: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM stpreset.st_presets WHERE id = $1)",
                &[&id],
            )?
            .try_get(0)?;
        if !taken {
            return Ok(id);
        }
        tx.execute(
            "SELECT setval('stpreset.st_preset_ids', GREATEST(s.last_value, \
               (SELECT MAX(id) FROM stpreset.st_presets))) FROM stpreset.st_preset_ids s",
            &[],
        )?;
    }
}

/// Checks that preset `id` belongs to `server`; returns its active and escaped flags.
fn owned(tx: &mut Transaction<'_>, server: i64, id: i64) -> Result<(bool, bool), StoreError> {
    tx.query_opt(
        "SELECT active, nul_escaped FROM stpreset.st_presets WHERE id = $1 AND server_id = $2",
        &[&id, &server],
    )?
    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
    .unwrap_or(Err(StoreError::NotFound { server, id }))
}

/// Reads one preset in the caller's snapshot, after checking its size in the database.
fn load(tx: &mut Transaction<'_>, server: i64, id: i64) -> Result<Preset, StoreError> {
    let nodes = load_nodes(tx, server, id)?;
    let row = tx.query_one(
        "SELECT raw_json, lone_surrogates, nul_escaped FROM stpreset.st_presets WHERE id = $1",
        &[&id],
    )?;
    let escaped: bool = row.try_get(2)?;
    let raw: String = row.try_get(0)?;
    let raw = if escaped { unescape(raw) } else { raw };
    let lone: i64 = row.try_get(1)?;
    Ok(Preset::from_stored(
        nodes,
        raw.into_bytes().into_boxed_slice(),
        usize::try_from(lone).unwrap_or(0),
    ))
}

/// One preset's nodes in order in the caller's snapshot, after checking its size in the
/// database (a toggle's check needs no more than these).
fn load_nodes(
    tx: &mut Transaction<'_>,
    server: i64,
    id: i64,
) -> Result<Vec<PresetNode>, StoreError> {
    let row = tx
        .query_opt(
            "SELECT octet_length(p.raw_json)::int8, \
                    (SELECT COUNT(*) FROM stpreset.st_preset_nodes n WHERE n.preset_id = p.id), \
                    (SELECT COALESCE(SUM(octet_length(identifier) + octet_length(name) \
                       + octet_length(role) + octet_length(content)), 0)::int8 \
                     FROM stpreset.st_preset_nodes n WHERE n.preset_id = p.id), \
                    p.nul_escaped \
             FROM stpreset.st_presets p WHERE p.id = $1 AND p.server_id = $2",
            &[&id, &server],
        )?
        .ok_or(StoreError::NotFound { server, id })?;
    let escaped: bool = row.try_get(3)?;
    // Escaping at most doubles a text (every `\` becomes two): an escaped preset may take up
    // to twice the bytes an import accepts.
    let stored = |n: i64| if escaped { n / 2 } else { n };
    check_stored(
        id,
        StoredSize {
            raw: stored(row.try_get(0)?),
            nodes: row.try_get(1)?,
            text: stored(row.try_get(2)?),
        },
    )?;
    let text = |s: String| if escaped { unescape(s) } else { s };
    tx.query(
        "SELECT identifier, name, role, content, marker, enabled, injection_position, \
                    injection_depth, injection_order \
             FROM stpreset.st_preset_nodes WHERE preset_id = $1 ORDER BY order_index",
        &[&id],
    )?
    .iter()
    .map(|r| {
        Ok(PresetNode {
            identifier: text(r.try_get(0)?),
            name: text(r.try_get(1)?),
            role: text(r.try_get(2)?),
            content: text(r.try_get(3)?),
            marker: r.try_get(4)?,
            enabled: r.try_get(5)?,
            injection_position: r.try_get(6)?,
            injection_depth: r.try_get(7)?,
            injection_order: r.try_get(8)?,
        })
    })
    .collect::<Result<Vec<_>, StoreError>>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_every_shape() {
        for s in ["", "plain", "a\0b", "\\0", "\\", "\0\\\0", "x\\y\\\\z\0"] {
            let e = escape(s);
            assert!(!e.contains('\0'), "{e:?}");
            assert_eq!(unescape(e), s);
        }
        // Text another tool wrote into an escaped preset keeps a lone or unknown escape.
        assert_eq!(unescape("a\\nb\\".into()), "a\\nb\\");
    }
}
