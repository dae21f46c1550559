//! The preset store (SQLite or PostgreSQL, per server; `stpreset::PresetStore`) for bots: import, list,
//! activate, toggle and the active preset compiled through the store's cache. Calls release
//! the GIL (the store serializes its own connection).

use pyo3::prelude::*;

use crate::{CompiledPreset, Text, error};

/// A store error as the package raises it: an import's refusal is a `PresetError` with its
/// own kind, the rest `StoreError`s.
fn store_error(e: stpreset::store::StoreError) -> PyErr {
    match &e {
        stpreset::store::StoreError::Preset(p) => error("PresetError", p.kind(), p),
        // The nodes in the way and the author's messages, for a bot to show or resolve.
        stpreset::store::StoreError::Refused { node, issues, .. } => {
            let details = serde_json::json!({"node": node, "issues": issues}).to_string();
            pyo3::exceptions::PyValueError::new_err((
                "StoreError".to_string(),
                e.kind().to_string(),
                e.to_string(),
                details,
            ))
        }
        _ => error("StoreError", e.kind(), e),
    }
}

/// Presets per server in one database: a SQLite file, or a PostgreSQL connection string.
#[pyclass(frozen, module = "stpreset._native")]
pub struct PresetStore {
    inner: stpreset::PresetStore,
}

#[pymethods]
impl PresetStore {
    #[new]
    fn new(py: Python<'_>, path: &str) -> PyResult<PresetStore> {
        py.detach(|| stpreset::PresetStore::open(path))
            .map(|inner| PresetStore { inner })
            .map_err(store_error)
    }

    fn import_preset(
        &self,
        py: Python<'_>,
        server: i64,
        name: &str,
        text: Text<'_>,
    ) -> PyResult<i64> {
        let bytes = text.json()?;
        py.detach(|| self.inner.import(server, name, &bytes))
            .map_err(store_error)
    }

    fn list_json(&self, py: Python<'_>, server: i64) -> PyResult<String> {
        let list = py.detach(|| self.inner.list(server)).map_err(store_error)?;
        Ok(serde_json::to_string(&list).unwrap_or_default())
    }

    /// A stored preset's nodes with their stored switches, as JSON (`Preset::nodes_json`).
    fn nodes_json(&self, py: Python<'_>, server: i64, preset: i64) -> PyResult<String> {
        py.detach(|| self.inner.get(server, preset).map(|p| p.nodes_json()))
            .map_err(store_error)
    }

    fn activate(&self, py: Python<'_>, server: i64, preset: i64) -> PyResult<()> {
        py.detach(|| self.inner.activate(server, preset))
            .map_err(store_error)
    }

    fn deactivate(&self, py: Python<'_>, server: i64) -> PyResult<()> {
        py.detach(|| self.inner.deactivate(server))
            .map_err(store_error)
    }

    /// `{changes, resolved, warnings}` as JSON.
    fn set_enabled(
        &self,
        py: Python<'_>,
        server: i64,
        preset: i64,
        toggles: Vec<(String, bool)>,
        resolve: bool,
    ) -> PyResult<String> {
        let changes: Vec<(&str, bool)> = toggles.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let how = if resolve {
            stpreset::switch::Resolve::Resolve
        } else {
            stpreset::switch::Resolve::Refuse
        };
        py.detach(|| self.inner.switch(server, preset, &changes, how))
            .map(|done| done.to_json())
            .map_err(store_error)
    }

    fn outline_json(&self, py: Python<'_>, server: i64, preset: i64) -> PyResult<String> {
        py.detach(|| {
            self.inner
                .get(server, preset)
                .map(|p| p.outline().to_json())
        })
        .map_err(store_error)
    }

    fn allow_regex(&self, py: Python<'_>, server: i64, preset: i64, allowed: bool) -> PyResult<()> {
        py.detach(|| self.inner.allow_regex(server, preset, allowed))
            .map_err(store_error)
    }

    fn delete(&self, py: Python<'_>, server: i64, preset: i64) -> PyResult<()> {
        py.detach(|| self.inner.delete(server, preset))
            .map_err(store_error)
    }

    fn active(&self, py: Python<'_>, server: i64) -> PyResult<Option<CompiledPreset>> {
        let active = py
            .detach(|| self.inner.active(server))
            .map_err(store_error)?;
        Ok(active.map(|inner| CompiledPreset { inner }))
    }
}
