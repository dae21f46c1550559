//! The preset store (SQLite or PostgreSQL, per server; `stpreset::PresetStore`) for bots: import, list,
//! activate, toggle and render a server's active preset through the store's cache.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::{CompiledPreset, error};

/// A store error as `index.js` raises it: an import's refusal is a `PresetError` with its own
/// kind, the rest `StoreError`s.
fn store_error(e: stpreset::store::StoreError) -> napi::Error {
    match &e {
        stpreset::store::StoreError::Preset(p) => error("PresetError", p.kind(), p),
        // The nodes in the way and the author's messages, for a bot to show or resolve.
        stpreset::store::StoreError::Refused { node, issues, .. } => {
            let info = serde_json::json!({"class": "StoreError", "kind": e.kind(),
                "message": e.to_string(), "node": node, "issues": issues});
            napi::Error::new(napi::Status::InvalidArg, info.to_string())
        }
        _ => error("StoreError", e.kind(), e),
    }
}

/// A server or preset id: decimal text (`index.js` accepts BigInt, safe integers and strings,
/// since Discord's ids are past 2^53).
fn id(text: &str) -> Result<i64> {
    text.parse().map_err(|_| {
        error(
            "StoreError",
            "Id",
            format!("not an id: {}", stpreset::diagnostic::terminal_safe(text)),
        )
    })
}

/// Presets per server in one database: a SQLite file, or a PostgreSQL connection string.
#[napi]
pub struct PresetStore {
    inner: stpreset::PresetStore,
}

#[napi]
impl PresetStore {
    /// Opens (or creates) the store: a SQLite file path or a PostgreSQL connection string.
    #[napi(factory)]
    pub fn open(path: String) -> Result<PresetStore> {
        stpreset::PresetStore::open(path)
            .map(|inner| PresetStore { inner })
            .map_err(store_error)
    }

    /// Imports a preset file under `name` (replacing the server's preset of that name);
    /// returns its id as decimal text.
    #[napi]
    pub fn import_preset(
        &self,
        server: String,
        name: String,
        text: Either<String, Buffer>,
    ) -> Result<String> {
        let bytes: &[u8] = match &text {
            Either::A(s) => s.as_bytes(),
            Either::B(b) => b,
        };
        self.inner
            .import(id(&server)?, &name, bytes)
            .map(|id| id.to_string())
            .map_err(store_error)
    }

    /// A stored preset's nodes in walk order with their stored switches, as JSON (the list
    /// `Preset.nodes()` gives; `stpreset store nodes ID --format json`).
    #[napi]
    pub fn nodes_json(&self, server: String, preset: String) -> Result<String> {
        self.inner
            .get(id(&server)?, id(&preset)?)
            .map(|p| p.nodes_json())
            .map_err(store_error)
    }

    /// A stored preset's outline with its stored switches, as JSON (`Preset.outline()`;
    /// `stpreset store nodes ID --sections --format json`).
    #[napi]
    pub fn outline_json(&self, server: String, preset: String) -> Result<String> {
        self.inner
            .get(id(&server)?, id(&preset)?)
            .map(|p| p.outline().to_json())
            .map_err(store_error)
    }

    /// The server's presets as JSON: `[{"active", "id", "name", "nodes", "regex_allowed"}]`,
    /// each id as decimal text (as `import_preset` returns it; JS numbers stop at 2^53).
    #[napi]
    pub fn list_json(&self, server: String) -> Result<String> {
        let list = self.inner.list(id(&server)?).map_err(store_error)?;
        let list: Vec<serde_json::Value> = list
            .iter()
            .map(|p| {
                let mut v = serde_json::to_value(p).unwrap_or_default();
                v["id"] = serde_json::Value::String(p.id.to_string());
                v
            })
            .collect();
        Ok(serde_json::to_string(&list).unwrap_or_default())
    }

    /// Makes a preset the server's active one.
    #[napi]
    pub fn activate(&self, server: String, preset: String) -> Result<()> {
        self.inner
            .activate(id(&server)?, id(&preset)?)
            .map_err(store_error)
    }

    /// Leaves the server without an active preset.
    #[napi]
    pub fn deactivate(&self, server: String) -> Result<()> {
        self.inner.deactivate(id(&server)?).map_err(store_error)
    }

    /// Switches nodes on or off under their author's constraints: `[["identifier", bool]]` as
    /// JSON, in the caller's order (the ons are checked in it); an unknown one fails the call,
    /// a broken constraint is refused unless `resolve`. Returns `{changes, resolved, warnings}`
    /// as JSON.
    #[napi]
    pub fn set_enabled(
        &self,
        server: String,
        preset: String,
        toggles_json: String,
        resolve: bool,
    ) -> Result<String> {
        let toggles: Vec<(String, bool)> =
            serde_json::from_str(&toggles_json).map_err(|e| error("StoreError", "Toggles", e))?;
        let changes: Vec<(&str, bool)> = toggles.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let how = if resolve {
            stpreset::switch::Resolve::Resolve
        } else {
            stpreset::switch::Resolve::Refuse
        };
        self.inner
            .switch(id(&server)?, id(&preset)?, &changes, how)
            .map(|done| done.to_json())
            .map_err(store_error)
    }

    /// Lets (or stops) the preset's regex scripts run for this server (SPEC §13.6).
    #[napi]
    pub fn allow_regex(&self, server: String, preset: String, allowed: bool) -> Result<()> {
        self.inner
            .allow_regex(id(&server)?, id(&preset)?, allowed)
            .map_err(store_error)
    }

    /// Deletes a preset.
    #[napi]
    pub fn delete(&self, server: String, preset: String) -> Result<()> {
        self.inner
            .delete(id(&server)?, id(&preset)?)
            .map_err(store_error)
    }

    /// The server's active preset, compiled (through the cache), or nothing.
    #[napi]
    pub fn active(&self, server: String) -> Result<Option<CompiledPreset>> {
        let active = self.inner.active(id(&server)?).map_err(store_error)?;
        Ok(active.map(|inner: Arc<stpreset::CompiledPreset>| CompiledPreset { inner }))
    }
}
