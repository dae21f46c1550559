//! What a database must do to hold presets (SQLite and PostgreSQL implement it), and the checks
//! both run on rows they read back.
//!
//! Every call is scoped by server and is one transaction: a backend never leaves half of a
//! change behind, and a read that takes several statements sees one snapshot. The cache lives
//! above the backend (`PresetStore`), which asks it whether cached entries can still be served.

use crate::limits::Limits;
use crate::preset::Preset;
use crate::preset::switch::{Resolve, Switched};

use super::{PresetSummary, StoreError};

/// The server's active preset as one snapshot read it.
pub(super) struct ActivePreset {
    pub id: i64,
    pub preset: Preset,
    /// Whether the server lets its regex scripts run (SPEC §13.6.1).
    pub regex_allowed: bool,
}

/// Whether the cache may serve what it holds.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // PostgreSQL's answers
pub(super) enum Freshness {
    /// A number that changes whenever another connection commits (SQLite's `data_version`):
    /// a new value drops every cached entry.
    Version(i64),
    /// Every foreign change is being pushed to the cache as it commits (PostgreSQL's listener
    /// is connected and answered its last heartbeat within the bound).
    Vouched,
    /// Foreign changes may be going unseen (the listener is down or silent): the cache must
    /// not serve anything, so every render reads the database.
    Unvouched,
}

/// One preset as an import stores it: the parsed preset plus, per node, whether its text is
/// only comments (kept in a column for other tools; computed once, at import).
pub(super) struct NewPreset<'a> {
    pub server: i64,
    pub name: &'a str,
    pub preset: &'a Preset,
    pub comment_only: &'a [bool],
}

/// A preset database. `Send + Sync`: the store shares one between threads.
pub(super) trait Backend: Send + Sync {
    /// Replaces a same-named preset of the server, makes the new one active, returns its id
    /// (never one issued before).
    fn import(&self, new: &NewPreset<'_>) -> Result<i64, StoreError>;
    fn list(&self, server: i64) -> Result<Vec<PresetSummary>, StoreError>;
    fn get(&self, server: i64, id: i64) -> Result<Preset, StoreError>;
    fn activate(&self, server: i64, id: i64) -> Result<(), StoreError>;
    fn allow_regex(&self, server: i64, id: i64, allowed: bool) -> Result<(), StoreError>;
    fn deactivate(&self, server: i64) -> Result<(), StoreError>;
    /// All changes or none, planned by [`super::plan_switch`] on the stored states inside
    /// the write: an unknown identifier is `UnknownNode`, a broken constraint `Refused`, and
    /// nothing is written.
    fn switch(
        &self,
        server: i64,
        id: i64,
        changes: &[(&str, bool)],
        how: Resolve,
    ) -> Result<Switched, StoreError>;
    /// Deleting the active preset promotes the most recently created survivor.
    fn delete(&self, server: i64, id: i64) -> Result<(), StoreError>;
    fn load_active(&self, server: i64) -> Result<Option<ActivePreset>, StoreError>;
    fn freshness(&self) -> Result<Freshness, StoreError>;
}

/// Sizes of a stored preset, measured by the database before any row is read.
pub(super) struct StoredSize {
    pub nodes: i64,
    /// Bytes of node text: identifiers, names, roles and contents.
    pub text: i64,
    /// Bytes of the kept JSON file.
    pub raw: i64,
}

/// What a stored preset may hold at most, checked on every load before its rows are read:
/// rows that other tools wrote straight into the tables get the bounds an import gives a
/// file, so one oversized row cannot make every render of a server allocate and compile it.
pub(super) fn check_stored(id: i64, size: StoredSize) -> Result<(), StoreError> {
    let cap = i64::try_from(Limits::default().preset_bytes).unwrap_or(i64::MAX);
    let refuse = |what: String| {
        Err(StoreError::Database(format!(
            "stored preset {id} {what}; an import refuses such a file, so another tool wrote it"
        )))
    };
    if size.raw > cap {
        return refuse(format!(
            "has {} bytes of JSON, over the {cap}-byte limit",
            size.raw
        ));
    }
    // Every node costs at least its braces and keys in the file, so a file under the cap holds
    // fewer nodes than this, and no more text than the cap.
    if size.nodes > cap / 16 {
        return refuse(format!("has {} nodes", size.nodes));
    }
    if size.text > cap {
        return refuse(format!(
            "has {} bytes of node text, over the {cap}-byte limit",
            size.text
        ));
    }
    Ok(())
}

/// The error for a server with more than one active preset, which the schema's unique index
/// forbids; only a database whose index was dropped by hand can hold it.
pub(super) fn two_active(server: i64) -> StoreError {
    StoreError::Database(format!(
        "server {server} has more than one active preset (the one-active index is missing?); \
         activate one to repair it"
    ))
}
