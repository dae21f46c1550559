//! `stpreset serve --db DB --server ID [--stored PRESET_ID]`: the previewer on a stored preset
//! (issue 41). The page starts from the stored file with the stored switches as its toggles,
//! and "Save to store" writes the page's switches back through the store's checked toggle
//! (`PresetStore::switch`), in one transaction, so the author's constraints hold there too.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use stpreset::PresetStore;
use stpreset::store::StoreError;
use stpreset::switch::Resolve;

use super::api::Answer;

/// Where the stored preset is.
pub(crate) struct Stored {
    pub db: PathBuf,
    pub server: i64,
    /// The preset; `None`: the server's active one (looked up on every load).
    pub id: Option<i64>,
}

impl Stored {
    fn open(&self) -> Result<(PresetStore, i64), String> {
        let store = PresetStore::open(&self.db).map_err(|e| e.to_string())?;
        let id = match self.id {
            Some(id) => id,
            None => match store.load_active(self.server).map_err(|e| e.to_string())? {
                Some((id, _)) => id,
                None => return Err(format!("server {} has no active preset", self.server)),
            },
        };
        Ok((store, id))
    }

    /// What `/api/start` says of the stored preset: `({"name", "text"}, {"server", "id",
    /// "toggles"})`, the text being the imported file and `toggles` the stored switches where
    /// they differ from the file's (`Preset::toggles` of the stored preset).
    pub(crate) fn start(&self) -> Result<(serde_json::Value, serde_json::Value), String> {
        let (store, id) = self.open()?;
        let stored = store.get(self.server, id).map_err(|e| e.to_string())?;
        let toggles: BTreeMap<&str, bool> = stored
            .toggles()
            .iter()
            .map(|(id, on)| (id.as_str(), *on))
            .collect();
        let name = format!("stored preset {id} (server {})", self.server);
        Ok((
            serde_json::json!({"name": name, "text": stored.raw_json()}),
            serde_json::json!({"server": self.server, "id": id, "toggles": toggles}),
        ))
    }

    /// `POST /api/store/save` with `{"toggles": [["IDENT", bool], ...]}` (pairs: the ons are
    /// checked in the page's order): the page's switches written to the stored preset through
    /// the store's checked toggle (the nodes the page never switched keep
    /// their stored state, whoever set it since the page loaded). `{"saved": {changes,
    /// resolved, warnings}}`, or 409 `refused` with the node and the issues in the way.
    pub(crate) fn save(&self, body: &[u8]) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Save {
            toggles: Vec<(String, bool)>,
        }
        let save: Save = match serde_json::from_slice(body) {
            Ok(s) => s,
            Err(e) => return Answer::error(400, "request", &format!("request body: {e}")),
        };
        let (store, id) = match self.open() {
            Ok(opened) => opened,
            Err(e) => return Answer::error(500, "store", &e),
        };
        let changes: Vec<(&str, bool)> = save
            .toggles
            .iter()
            .map(|(id, on)| (id.as_str(), *on))
            .collect();
        match store.switch(self.server, id, &changes, Resolve::Refuse) {
            Ok(done) => Answer {
                status: 200,
                body: serde_json::json!({"saved": done}).to_string(),
            },
            Err(e) => {
                let message = e.to_string();
                let (status, body) = match e {
                    StoreError::Refused { node, issues, .. } => (
                        409,
                        serde_json::json!({"error": {"kind": "refused", "message": message,
                            "node": node, "issues": issues}}),
                    ),
                    StoreError::NotFound { .. } => (
                        404,
                        serde_json::json!({"error": {"kind": "not_found", "message": message}}),
                    ),
                    StoreError::UnknownNode { .. } => (
                        422,
                        serde_json::json!({"error": {"kind": "toggles", "message": message}}),
                    ),
                    _ => (
                        500,
                        serde_json::json!({"error": {"kind": "store", "message": message}}),
                    ),
                };
                Answer {
                    status,
                    body: body.to_string(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STYLES: &[u8] = br#"{"prompts": [
        {"identifier": "terse", "name": "Terse", "content": "{{// @mutual-exclusive-group len}}T"},
        {"identifier": "lush", "name": "Lush", "content": "{{// @mutual-exclusive-group len}}L", "enabled": false}]}"#;

    #[test]
    fn a_stored_preset_starts_with_its_switches_and_saves_through_the_checked_toggle() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.sqlite");
        let store = PresetStore::open(&db).unwrap();
        let id = store.import(3, "styles", STYLES).unwrap();
        store.set_enabled(3, id, &[("terse", false)]).unwrap();
        let stored = Stored {
            db,
            server: 3,
            id: None,
        };
        let (preset, info) = stored.start().unwrap();
        assert_eq!(preset["text"].as_str().unwrap().as_bytes(), STYLES);
        assert_eq!(info["toggles"], serde_json::json!({"terse": false}));
        assert_eq!(info["id"], id);
        // Both on: refused, nothing written.
        let a = stored.save(br#"{"toggles": [["terse", true], ["lush", true]]}"#);
        assert_eq!(a.status, 409, "{}", a.body);
        assert!(a.body.contains(r#""node":"lush""#), "{}", a.body);
        let on = |store: &PresetStore| -> Vec<bool> {
            store
                .get(3, id)
                .unwrap()
                .nodes()
                .iter()
                .map(|n| n.enabled)
                .collect()
        };
        assert_eq!(on(&store), [false, false]);
        let a = stored.save(br#"{"toggles": [["terse", false], ["lush", true]]}"#);
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(on(&store), [false, true]);
        // Another server's preset is not found.
        let other = Stored {
            db: stored.db.clone(),
            server: 4,
            id: Some(id),
        };
        assert!(other.start().is_err());
        assert_eq!(other.save(br#"{"toggles": []}"#).status, 404);
        assert_eq!(stored.save(br#"{"toggles": [["nope", true]]}"#).status, 422);
    }
}
