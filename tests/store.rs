//! The preset store on real SQLite files (SPEC §7): every operation, scoping, transactions,
//! the cache (TTL with an injected clock, negative entries, invalidation) and concurrency.
#![cfg(feature = "store")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use stpreset::{Clock, Context, PresetStore, StoreError, StoreOptions};

const A: &[u8] = br#"{"temperature": 0.5, "prompts": [
    {"identifier": "main", "content": "A {{user}}"},
    {"identifier": "extra", "content": "EXTRA"},
    {"identifier": "note", "content": "{{// only a comment}}"},
    {"identifier": "chatHistory", "marker": true}]}"#;
const B: &[u8] = br#"{"prompts": [{"identifier": "main", "content": "B"}]}"#;

/// A store mutation under test.
type Mutation = Box<dyn Fn(&PresetStore)>;

/// A clock the test moves by hand.
#[derive(Default)]
struct TestClock(AtomicU64);

impl TestClock {
    fn advance(&self, secs: u64) {
        self.0.fetch_add(secs * 1000, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

fn open(dir: &tempfile::TempDir) -> PresetStore {
    PresetStore::open(dir.path().join("p.sqlite")).unwrap()
}

fn texts(store: &PresetStore, server: i64) -> Option<Vec<String>> {
    store
        .render(server, &Context::default())
        .unwrap()
        .map(|r| r.messages.iter().map(|m| m.text()).collect())
}

fn active(store: &PresetStore, server: i64) -> Vec<i64> {
    store
        .list(server)
        .unwrap()
        .iter()
        .filter(|p| p.active)
        .map(|p| p.id)
        .collect()
}

#[test]
fn operations_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let a = store.import(1, "a", A).unwrap();
    let b = store.import(1, "b", B).unwrap();
    assert_eq!(active(&store, 1), [b], "the latest import is active");
    let list = store.list(1).unwrap();
    assert_eq!((list[0].name.as_str(), list[0].nodes), ("a", 4));
    store.activate(1, a).unwrap();
    assert_eq!(active(&store, 1), [a]);
    assert_eq!(texts(&store, 1).unwrap(), ["A User", "EXTRA"]);
    store
        .set_enabled(1, a, &[("extra", false), ("chatHistory", false)])
        .unwrap();
    assert_eq!(texts(&store, 1).unwrap(), ["A User"]);
    let preset = store.get(1, a).unwrap();
    assert!(!preset.nodes()[1].enabled && !preset.nodes()[3].enabled);
    assert_eq!(preset.raw()["temperature"], 0.5, "the whole file is kept");
    store.deactivate(1).unwrap();
    assert!(active(&store, 1).is_empty());
    assert_eq!(texts(&store, 1), None);
    drop(store);

    // Everything survives a reopen.
    let store = open(&dir);
    assert_eq!(store.list(1).unwrap().len(), 2);
    assert!(!store.get(1, a).unwrap().nodes()[1].enabled);
    store.activate(1, a).unwrap();
    assert_eq!(texts(&store, 1).unwrap(), ["A User"]);
}

#[test]
fn comment_only_nodes_are_flagged_in_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let id = store.import(1, "a", A).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(dir.path().join("p.sqlite")).unwrap();
    let flags: Vec<(String, bool)> = conn
        .prepare("SELECT identifier, comment_only FROM st_preset_nodes WHERE preset_id = ?1 ORDER BY order_index")
        .unwrap()
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(flags[2], ("note".to_string(), true));
    assert!(!flags[0].1);
}

#[test]
fn other_servers_are_refused_without_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let a = store.import(1, "a", A).unwrap();
    for result in [
        store.activate(2, a),
        store.delete(2, a),
        store.set_enabled(2, a, &[("extra", false)]),
    ] {
        assert!(matches!(
            result,
            Err(StoreError::NotFound { server: 2, .. })
        ));
    }
    assert!(matches!(store.get(2, a), Err(StoreError::NotFound { .. })));
    assert!(store.list(2).unwrap().is_empty());
    assert_eq!(active(&store, 1), [a]);
    assert!(store.get(1, a).unwrap().nodes()[1].enabled);
}

#[test]
fn unknown_node_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let a = store.import(1, "a", A).unwrap();
    let r = store.set_enabled(1, a, &[("extra", false), ("nope", true)]);
    assert!(matches!(r, Err(StoreError::UnknownNode { .. })));
    assert!(
        store.get(1, a).unwrap().nodes()[1].enabled,
        "the first change rolled back"
    );
}

#[test]
fn reimport_replaces_and_failing_import_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let a = store.import(1, "same", A).unwrap();
    let other = store.import(1, "other", B).unwrap();
    let a2 = store.import(1, "same", B).unwrap();
    assert_ne!(a, a2);
    let names: Vec<String> = store.list(1).unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["other", "same"]);
    assert_eq!(active(&store, 1), [a2]);
    // A bad file changes nothing.
    assert!(matches!(
        store.import(1, "same", b"{not json"),
        Err(StoreError::Preset(_))
    ));
    assert_eq!(active(&store, 1), [a2]);
    // A failure half-way through the node inserts rolls the whole import back.
    let conn = rusqlite::Connection::open(dir.path().join("p.sqlite")).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER boom BEFORE INSERT ON st_preset_nodes WHEN NEW.identifier = 'boom'
         BEGIN SELECT RAISE(ABORT, 'boom'); END;",
    )
    .unwrap();
    let bad = br#"{"prompts": [{"identifier": "fine"}, {"identifier": "boom"}]}"#;
    assert!(matches!(
        store.import(1, "same", bad),
        Err(StoreError::Database(_))
    ));
    let list = store.list(1).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        active(&store, 1),
        [a2],
        "the replaced preset is still there and active"
    );
    assert!(store.get(1, other).is_ok());
}

#[test]
fn deleting_the_active_preset_promotes_the_newest_survivor() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let a = store.import(1, "a", A).unwrap();
    let b = store.import(1, "b", B).unwrap();
    let c = store.import(1, "c", B).unwrap();
    store.activate(1, a).unwrap();
    store.delete(1, b).unwrap();
    assert_eq!(
        active(&store, 1),
        [a],
        "deleting an inactive one changes nothing"
    );
    store.delete(1, a).unwrap();
    assert_eq!(active(&store, 1), [c]);
    store.delete(1, c).unwrap();
    assert!(store.list(1).unwrap().is_empty());
    assert_eq!(texts(&store, 1), None);
}

#[test]
fn cache_ttl_negative_entries_and_invalidation() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::default());
    let mut options = StoreOptions::default();
    options.ttl = Duration::from_secs(600);
    options.clock = clock.clone();
    let store = PresetStore::open_with(dir.path().join("p.sqlite"), options).unwrap();

    // Negative caching: no active preset is cached too.
    assert!(store.active(1).unwrap().is_none());
    assert!(store.active(1).unwrap().is_none());
    assert_eq!(store.cache_stats(), (1, 1));

    // A write through another connection is invisible until the TTL runs out...
    let a = store.import(1, "a", A).unwrap();
    let first = store.active(1).unwrap().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("p.sqlite")).unwrap();
    conn.execute(
        "UPDATE st_preset_nodes SET enabled = 0 WHERE identifier = 'extra'",
        [],
    )
    .unwrap();
    clock.advance(599);
    assert!(
        Arc::ptr_eq(&first, &store.active(1).unwrap().unwrap()),
        "fresh entry served"
    );
    clock.advance(2);
    assert_eq!(
        texts(&store, 1).unwrap(),
        ["A User"],
        "expired entry reloaded"
    );

    // ...while every mutation through the store invalidates at once.
    let mutations: Vec<Mutation> = vec![
        Box::new(move |s| s.set_enabled(1, a, &[("extra", true)]).unwrap()),
        Box::new(|s| s.deactivate(1).unwrap()),
        Box::new(move |s| s.activate(1, a).unwrap()),
        Box::new(|s| {
            s.import(1, "b", B).unwrap();
        }),
        Box::new(|s| {
            let b = s.list(1).unwrap()[1].id;
            s.delete(1, b).unwrap();
        }),
    ];
    let expected: [Option<Vec<&str>>; 5] = [
        Some(vec!["A User", "EXTRA"]),
        None,
        Some(vec!["A User", "EXTRA"]),
        Some(vec!["B"]),
        Some(vec!["A User", "EXTRA"]),
    ];
    for (mutate, want) in mutations.iter().zip(expected) {
        let _ = store.active(1).unwrap(); // warm the cache
        mutate(&store);
        let got = texts(&store, 1);
        assert_eq!(got, want.map(|v| v.into_iter().map(String::from).collect()));
    }
    // Other servers' entries are untouched by these mutations.
    let (hits_before, _) = store.cache_stats();
    assert!(store.active(2).unwrap().is_none());
    assert!(store.active(2).unwrap().is_none());
    assert_eq!(store.cache_stats().0, hits_before + 1);
}

#[test]
fn database_errors_are_returned_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store.import(1, "a", A).unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("p.sqlite")).unwrap();
    conn.execute_batch("ALTER TABLE st_preset_nodes RENAME TO moved")
        .unwrap();
    store.set_enabled(1, 1, &[]).unwrap_err(); // any mutation fails now...
    assert!(store.active(1).is_err(), "...and loading fails loudly");
    conn.execute_batch("ALTER TABLE moved RENAME TO st_preset_nodes")
        .unwrap();
    assert!(
        store.active(1).unwrap().is_some(),
        "the failure was not cached as `none`"
    );
}

#[test]
fn concurrent_renders_while_toggling() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir));
    let a = store.import(1, "a", A).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let toggler = {
        let (store, stop) = (store.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut on = false;
            while !stop.load(Ordering::Relaxed) {
                store.set_enabled(1, a, &[("extra", on)]).unwrap();
                on = !on;
            }
        })
    };
    let renderers: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let got = texts(&store, 1).unwrap();
                    // Never torn: either the whole old state or the whole new one.
                    assert!(got == ["A User"] || got == ["A User", "EXTRA"], "{got:?}");
                }
            })
        })
        .collect();
    for r in renderers {
        r.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    toggler.join().unwrap();
}

#[test]
fn open_errors_are_clear() {
    let err = PresetStore::open("/nonexistent-dir/p.sqlite")
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("/nonexistent-dir") && err.contains("does not exist"),
        "{err}"
    );
}

#[test]
fn a_locked_database_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.sqlite");
    let mut options = StoreOptions::default();
    options.busy_timeout = Duration::from_millis(50);
    let store = PresetStore::open_with(&path, options).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    assert!(matches!(store.import(1, "a", A), Err(StoreError::Locked)));
    conn.execute_batch("COMMIT").unwrap();
    assert!(store.import(1, "a", A).is_ok());
}
