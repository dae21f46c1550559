//! The preset store on real SQLite files (SPEC §7): every operation, scoping, transactions,
//! the cache (TTL with an injected clock, negative entries, invalidation) and concurrency.
#![cfg(feature = "store")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use stpreset::{Context, PresetStore, store::Clock, store::StoreError, store::StoreOptions};

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
        .map(|r| r.messages.iter().map(|m| m.text().into_owned()).collect())
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

// ---- The databases every test of this suite runs against ----

/// A database for one test: a SQLite file always, and a fresh PostgreSQL database (in the
/// server that `STPRESET_TEST_POSTGRES` names, e.g. `host=/tmp/pg port=5432 user=postgres`)
/// when that variable is set and the build has the `postgres` feature.
enum Db {
    Sqlite(tempfile::TempDir),
    Postgres {
        target: String,
        scratch: tempfile::TempDir,
    },
}

static PG_DATABASES: AtomicU64 = AtomicU64::new(0);

/// The PostgreSQL server's connection string, or `None` when the PostgreSQL runs of this
/// suite are skipped; the reason is written once, past the test harness's capture, so that a
/// plain `cargo test` shows it.
fn postgres_server() -> Option<String> {
    static SAID: std::sync::Once = std::sync::Once::new();
    let skipped = |why: &str| {
        SAID.call_once(|| {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (PostgreSQL runs of the store suite): {why}"
            );
        });
        None
    };
    match std::env::var("STPRESET_TEST_POSTGRES").ok() {
        Some(base) if cfg!(feature = "postgres") => Some(base),
        Some(_) => skipped("build with --features postgres to run them"),
        None => skipped("STPRESET_TEST_POSTGRES is not set (scripts/pg-throwaway starts a server)"),
    }
}

/// Runs SQL through `psql` (no client crate needed in the tests); returns its rows, one line
/// each, fields separated by `|`.
fn psql(target: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([target, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
        .args(["-c", "SET search_path = stpreset, public", "-c", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A new, empty PostgreSQL database on the test server.
fn postgres_database(base: &str) -> String {
    let name = format!(
        "t{}_{}",
        std::process::id(),
        PG_DATABASES.fetch_add(1, Ordering::SeqCst)
    );
    psql(
        &format!("{base} dbname=postgres"),
        &format!("CREATE DATABASE {name}"),
    );
    format!("{base} dbname={name}")
}

/// A new PostgreSQL database for a test that only PostgreSQL has, or `None` (with a message).
fn postgres_only() -> Option<String> {
    postgres_server().map(|base| postgres_database(&base))
}

fn backends() -> Vec<Db> {
    let mut dbs = vec![Db::Sqlite(tempfile::tempdir().unwrap())];
    if let Some(base) = postgres_server() {
        dbs.push(Db::Postgres {
            target: postgres_database(&base),
            scratch: tempfile::tempdir().unwrap(),
        });
    }
    dbs
}

impl Db {
    /// What `PresetStore::open` and `--db` take.
    fn target(&self) -> std::path::PathBuf {
        match self {
            Db::Sqlite(dir) => dir.path().join("p.sqlite"),
            Db::Postgres { target, .. } => target.into(),
        }
    }

    fn open(&self) -> PresetStore {
        PresetStore::open(self.target()).unwrap()
    }

    /// A folder for the test's own files.
    fn scratch(&self) -> &std::path::Path {
        match self {
            Db::Sqlite(dir) | Db::Postgres { scratch: dir, .. } => dir.path(),
        }
    }

    /// Plain SQL from outside the store (another tool), in the `sqlite` or `postgres`
    /// dialect; returns the rows, one line each, fields separated by `|`.
    fn sql(&self, sqlite: &str, postgres: &str) -> String {
        match self {
            Db::Sqlite(_) => {
                let conn = rusqlite::Connection::open(self.target()).unwrap();
                let mut stmt = conn.prepare(sqlite).unwrap();
                let columns = stmt.column_count();
                let rows: Vec<String> = stmt
                    .query_map([], |r| {
                        Ok((0..columns)
                            .map(|i| match r.get_ref(i).unwrap() {
                                rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                                rusqlite::types::ValueRef::Text(t) => {
                                    String::from_utf8_lossy(t).into_owned()
                                }
                                _ => String::new(),
                            })
                            .collect::<Vec<_>>()
                            .join("|"))
                    })
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                rows.iter().map(|r| format!("{r}\n")).collect()
            }
            Db::Postgres { target, .. } => psql(target, postgres),
        }
    }

    /// SQL that reads the same in both dialects.
    fn same_sql(&self, sql: &str) -> String {
        self.sql(sql, sql)
    }
}

/// Asserts that `got` reaches `want`: at once on SQLite (a foreign commit is seen at the next
/// render), within the one-second bound on PostgreSQL (a foreign commit reaches the cache as a
/// notification).
fn seen<T: PartialEq + std::fmt::Debug>(db: &Db, want: T, mut got: impl FnMut() -> T) {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        let now = got();
        if now == want {
            return;
        }
        if matches!(db, Db::Sqlite(_)) || std::time::Instant::now() > deadline {
            assert_eq!(now, want);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Tests that count cache hits on PostgreSQL need their listener threads to run on time; the
/// tests that load the machine (64 threads, a killed server) run alone.
static MACHINE: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn counting_hits() -> std::sync::RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

fn loading_the_machine() -> std::sync::RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

/// Lets notifications of foreign commits already made reach a PostgreSQL store before a test
/// counts cache hits.
fn settle(db: &Db) {
    if matches!(db, Db::Postgres { .. }) {
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn operations_and_reopen() {
    for db in backends() {
        let store = db.open();
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
        let store = db.open();
        assert_eq!(store.list(1).unwrap().len(), 2);
        assert!(!store.get(1, a).unwrap().nodes()[1].enabled);
        store.activate(1, a).unwrap();
        assert_eq!(texts(&store, 1).unwrap(), ["A User"]);
    }
}

#[test]
fn comment_only_nodes_are_flagged_in_the_table() {
    for db in backends() {
        let store = db.open();
        let id = store.import(1, "a", A).unwrap();
        drop(store);
        let flagged = db.same_sql(&format!(
            "SELECT identifier FROM st_preset_nodes WHERE preset_id = {id} AND comment_only"
        ));
        assert_eq!(flagged, "note\n");
    }
}

#[test]
fn other_servers_are_refused_without_writes() {
    for db in backends() {
        let store = db.open();
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
}

#[test]
fn unknown_node_changes_nothing() {
    for db in backends() {
        let store = db.open();
        let a = store.import(1, "a", A).unwrap();
        let r = store.set_enabled(1, a, &[("extra", false), ("nope", true)]);
        assert!(matches!(r, Err(StoreError::UnknownNode { .. })));
        assert!(
            store.get(1, a).unwrap().nodes()[1].enabled,
            "the first change rolled back"
        );
    }
}

#[test]
fn reimport_replaces_and_failing_import_rolls_back() {
    for db in backends() {
        let store = db.open();
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
        db.sql(
            "CREATE TRIGGER boom BEFORE INSERT ON st_preset_nodes WHEN NEW.identifier = 'boom'
             BEGIN SELECT RAISE(ABORT, 'boom'); END;",
            "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN IF NEW.identifier = 'boom' THEN RAISE 'boom'; END IF; RETURN NEW; END $$;
             CREATE TRIGGER boom BEFORE INSERT ON st_preset_nodes FOR EACH ROW EXECUTE FUNCTION boom();",
        );
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
}

#[test]
fn deleting_the_active_preset_promotes_the_newest_survivor() {
    for db in backends() {
        let store = db.open();
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
}

#[test]
fn cache_ttl_negative_entries_and_invalidation() {
    let _quiet = counting_hits();
    for db in backends() {
        let clock = Arc::new(TestClock::default());
        let mut options = StoreOptions::default();
        options.ttl = Duration::from_secs(600);
        options.clock = clock.clone();
        let store = PresetStore::open_with(db.target(), options).unwrap();

        // Negative caching: no active preset is cached too.
        assert!(store.active(1).unwrap().is_none());
        assert!(store.active(1).unwrap().is_none());
        assert_eq!(store.cache_stats(), (1, 1));

        // An entry is served until the TTL runs out, then reloaded.
        let a = store.import(1, "a", A).unwrap();
        settle(&db); // its own notification comes back too
        let first = store.active(1).unwrap().unwrap();
        clock.advance(599);
        assert!(
            Arc::ptr_eq(&first, &store.active(1).unwrap().unwrap()),
            "fresh entry served"
        );
        clock.advance(2);
        let (_, misses) = store.cache_stats();
        assert!(!Arc::ptr_eq(&first, &store.active(1).unwrap().unwrap()));
        assert_eq!(store.cache_stats().1, misses + 1, "expired entry reloaded");

        // Every mutation through the store invalidates at once.
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
}

#[test]
fn database_errors_are_returned_not_cached() {
    for db in backends() {
        let store = db.open();
        store.import(1, "a", A).unwrap();
        db.same_sql("ALTER TABLE st_preset_nodes RENAME TO moved");
        store.set_enabled(1, 1, &[]).unwrap_err(); // any mutation fails now...
        assert!(store.active(1).is_err(), "...and loading fails loudly");
        db.same_sql("ALTER TABLE moved RENAME TO st_preset_nodes");
        assert!(
            store.active(1).unwrap().is_some(),
            "the failure was not cached as `none`"
        );
    }
}

#[test]
fn concurrent_renders_while_toggling() {
    for db in backends() {
        let store = Arc::new(db.open());
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

// ---- Concurrency across connections and processes ----

/// A preset of `n` nodes whose contents are all `letter`: a load that mixes two presets or
/// misses nodes shows as a wrong count or a wrong letter.
fn uniform(letter: char, n: usize) -> Vec<u8> {
    let prompts: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"identifier": format!("n{i}"), "content": letter.to_string()}))
        .collect();
    serde_json::to_vec(&serde_json::json!({ "letter": letter, "prompts": prompts })).unwrap()
}

fn cli(db: &std::path::Path, server: i64, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_stpreset"))
        .arg("store")
        .arg("--db")
        .arg(db)
        .args(["--server", &server.to_string()])
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn reimport_racing_loads_never_yields_a_partial_or_mixed_preset() {
    for db in backends() {
        let writer = db.open();
        let reader = db.open();
        // Small presets: many commits, so many chances to land between a load's statements.
        let (p, q) = (uniform('P', 30), uniform('Q', 20));
        writer.import(1, "same", &p).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..300 {
                    writer
                        .import(1, "same", if i % 2 == 0 { &q } else { &p })
                        .unwrap();
                    // SQLite gives a new row the highest id + 1, so a re-import would reuse the
                    // id it just deleted; a newer row elsewhere makes the next id fresh. Both
                    // cases are covered: reuse mixes old file and new nodes, a fresh id leaves
                    // the old id with no nodes (or no row).
                    if i % 4 < 2 {
                        writer.import(2, "pad", B).unwrap();
                    }
                }
                done.store(true, Ordering::SeqCst);
            });
            let mut loads = 0u64;
            while !done.load(Ordering::SeqCst) {
                let (id, preset) = reader
                    .load_active(1)
                    .expect("a load never fails mid-import")
                    .expect("there is always an active preset");
                let nodes = preset.nodes();
                let letter = nodes.first().map(|n| n.content.clone());
                let want = match letter.as_deref() {
                    Some("P") => 30,
                    Some("Q") => 20,
                    other => panic!("preset {id}: first node {other:?}"),
                };
                assert_eq!(nodes.len(), want, "preset {id} is whole");
                assert!(nodes.iter().all(|n| Some(&n.content) == letter.as_ref()));
                assert_eq!(
                    preset.raw()["letter"].as_str(),
                    letter.as_deref(),
                    "not mixed"
                );
                loads += 1;
                if loads.is_multiple_of(16) {
                    // Through the cache too (the other store's writes flush it).
                    assert!(reader.active(1).expect("no torn load").is_some());
                }
            }
        });
    }
}

#[test]
fn a_write_through_another_store_is_seen_at_the_next_render() {
    let _quiet = counting_hits();
    for db in backends() {
        let bot = db.open();
        let other = db.open();
        let a = other.import(1, "a", A).unwrap();
        settle(&db);
        assert_eq!(texts(&bot, 1).unwrap(), ["A User", "EXTRA"]);
        let (hits, _) = bot.cache_stats();
        assert_eq!(texts(&bot, 1).unwrap(), ["A User", "EXTRA"]);
        assert_eq!(
            bot.cache_stats().0,
            hits + 1,
            "no foreign write, entry served"
        );

        other.set_enabled(1, a, &[("extra", false)]).unwrap();
        seen(&db, Some(vec!["A User".to_string()]), || texts(&bot, 1));
        other.import(1, "b", B).unwrap();
        seen(&db, Some(vec!["B".to_string()]), || texts(&bot, 1));
        other.deactivate(1).unwrap();
        seen(&db, None, || texts(&bot, 1));
        // Plain SQL from another tool counts as another writer too.
        db.same_sql(&format!(
            "UPDATE st_presets SET active = true WHERE id = {a}"
        ));
        seen(&db, Some(vec!["A User".to_string()]), || texts(&bot, 1));
        settle(&db);
        // The bot's own writes still invalidate only their server.
        assert!(texts(&bot, 2).is_none());
        bot.set_enabled(1, a, &[("extra", true)]).unwrap();
        let (hits, _) = bot.cache_stats();
        assert!(texts(&bot, 2).is_none());
        assert_eq!(bot.cache_stats().0, hits + 1, "server 2's entry survived");
        assert_eq!(texts(&bot, 1).unwrap(), ["A User", "EXTRA"]);
    }
}

#[test]
fn a_write_through_the_cli_is_seen_at_the_next_render() {
    for db in backends() {
        let target = db.target();
        let bot = db.open();
        let a = bot.import(1, "a", A).unwrap();
        assert_eq!(texts(&bot, 1).unwrap(), ["A User", "EXTRA"]);
        let out = cli(&target, 1, &["toggle", &a.to_string(), "extra=off"]);
        assert!(out.status.success(), "{}", stderr(&out));
        seen(&db, Some(vec!["A User".to_string()]), || texts(&bot, 1));
        let out = cli(&target, 1, &["deactivate"]);
        assert!(out.status.success(), "{}", stderr(&out));
        seen(&db, None, || texts(&bot, 1));
    }
}

#[test]
fn concurrent_first_opens_migrate_once() {
    for db in backends() {
        let path = db.target();
        let threads = 4;
        let start = std::sync::Barrier::new(threads);
        std::thread::scope(|s| {
            for t in 0..threads {
                let (path, start) = (&path, &start);
                s.spawn(move || {
                    start.wait();
                    let store = PresetStore::open(path).expect("concurrent first opens");
                    store.import(1, &format!("t{t}"), A).unwrap();
                });
            }
        });
        assert_eq!(db.open().list(1).unwrap().len(), threads);
    }
}

#[test]
fn concurrent_writers_on_separate_stores_never_report_locked() {
    for db in backends() {
        let path = db.target();
        let ids: Vec<i64> = {
            let store = db.open();
            (0..4)
                .map(|t| store.import(1, &format!("t{t}"), A).unwrap())
                .collect()
        };
        let stores: Vec<PresetStore> = ids
            .iter()
            .map(|_| PresetStore::open(&path).unwrap())
            .collect();
        std::thread::scope(|s| {
            for (store, &id) in stores.iter().zip(&ids) {
                s.spawn(move || {
                    for i in 0..40 {
                        // Each of these reads (ownership) before it writes.
                        store.set_enabled(1, id, &[("extra", i % 2 == 0)]).unwrap();
                        store.activate(1, id).unwrap();
                        assert!(store.render(1, &Context::default()).unwrap().is_some());
                    }
                });
            }
        });
    }
}

/// Runs one CLI process per argument list, all at once; every one must succeed.
fn cli_at_once(db: &std::path::Path, runs: Vec<Vec<String>>) {
    let children: Vec<_> = runs
        .into_iter()
        .map(|args| {
            std::process::Command::new(env!("CARGO_BIN_EXE_stpreset"))
                .arg("store")
                .arg("--db")
                .arg(db)
                .args(["--server", "1"])
                .args(args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

#[test]
fn concurrent_cli_first_opens_lose_no_import() {
    for db in backends() {
        let target = db.target();
        let preset = db.scratch().join("a.json");
        std::fs::write(&preset, A).unwrap();
        let preset = preset.to_str().unwrap();
        // Fresh file: every process migrates it or waits for the one that does.
        cli_at_once(
            &target,
            (0..4)
                .map(|i| {
                    vec![
                        "import".into(),
                        preset.into(),
                        "--name".into(),
                        format!("p{i}"),
                    ]
                })
                .collect(),
        );
        assert_eq!(db.open().list(1).unwrap().len(), 4, "no import lost");
    }
}

#[test]
fn concurrent_cli_toggles_never_report_locked() {
    for db in backends() {
        let target = db.target();
        let id = db.open().import(1, "a", A).unwrap().to_string();
        for round in 0..4 {
            let change = if round % 2 == 0 {
                "extra=off"
            } else {
                "extra=on"
            };
            cli_at_once(
                &target,
                (0..6)
                    .map(|_| vec!["toggle".into(), id.clone(), change.into()])
                    .collect(),
            );
        }
    }
}

#[test]
fn the_cache_stays_within_its_capacity() {
    let _quiet = counting_hits();
    for db in backends() {
        let store = db.open();
        for server in [0, 5_000, 9_999] {
            store.import(server, "a", B).unwrap();
        }
        for server in 0..10_000 {
            store.active(server).unwrap();
            assert!(store.cache_len() <= 1024, "default capacity");
        }
        let (_, misses) = store.cache_stats();
        assert!(store.active(0).unwrap().is_some(), "evicted, reloaded");
        assert_eq!(store.cache_stats().1, misses + 1);

        let mut options = StoreOptions::default();
        options.cache_capacity = 10;
        let small = PresetStore::open_with(db.target(), options).unwrap();
        for server in 0..10_000 {
            small.active(server % 3_000).unwrap();
            assert!(small.cache_len() <= 10);
        }
    }
}

#[test]
fn concurrent_misses_on_one_server_load_once() {
    let _quiet = counting_hits();
    for db in backends() {
        let store = db.open();
        // Large enough that every thread arrives while the first is still loading.
        store.import(1, "big", &uniform('P', 3_000)).unwrap();
        settle(&db); // its own notification comes back too
        let threads = 8;
        let start = std::sync::Barrier::new(threads);
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        store.active(1).unwrap().unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            store.cache_stats(),
            (threads as u64 - 1, 1),
            "(hits, misses)"
        );
        assert!(results.iter().all(|r| Arc::ptr_eq(r, &results[0])));
    }
}

#[test]
fn a_foreign_table_of_the_same_name_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE st_presets (x)").unwrap();
    let err = PresetStore::open(&path).err().unwrap();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Open { .. }), "{msg}");
    assert!(msg.contains("st_presets") && !msg.contains('\n'), "{msg}");
    let tables: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1, "nothing created");
    let out = cli(&path, 1, &["list"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn names_that_break_list_output_are_refused() {
    for db in backends() {
        let store = db.open();
        for name in [
            "",
            "  ",
            "a\tb",
            "a\nb",
            "a\rb",
            "\u{1b}[31mred",
            "a\u{202e}b",
            "a\u{2028}b",
        ] {
            assert!(
                matches!(
                    store.import(1, name, A),
                    Err(StoreError::InvalidName { .. })
                ),
                "{name:?}"
            );
        }
        assert!(store.list(1).unwrap().is_empty(), "nothing written");
        store.import(1, "Spaghetti (v2) — ünïcode", A).unwrap();

        let target = db.target();
        let preset = db.scratch().join("a.json");
        std::fs::write(&preset, A).unwrap();
        for name in ["", "a\tb"] {
            let out = cli(
                &target,
                1,
                &["import", preset.to_str().unwrap(), "--name", name],
            );
            assert_eq!(out.status.code(), Some(1));
            assert!(
                stderr(&out).contains("invalid preset name"),
                "{}",
                stderr(&out)
            );
        }
        // A name that another tool wrote is escaped in the text listing.
        db.sql(
            "UPDATE st_presets SET name = 'x' || char(9) || 'y' || char(10) || char(27) || '[2J'",
            "UPDATE st_presets SET name = 'x' || chr(9) || 'y' || chr(10) || chr(27) || '[2J'",
        );
        let out = cli(&target, 1, &["list"]);
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.lines().count(), 1, "{text:?}");
        assert_eq!(text.matches('\t').count(), 3, "{text:?}");
        assert!(text.contains(r"x\ty\n\u{1b}[2J"), "{text:?}");
        assert!(!text.trim_end().chars().any(|c| c.is_control() && c != '\t'));
    }
}

/// Runs the CLI as a user who cannot write `db` nor its directory, or returns `None` when
/// this machine cannot arrange that (root without `setpriv`).
#[cfg(unix)]
fn cli_without_write_access(db: &std::path::Path, args: &[&str]) -> Option<std::process::Output> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = db.parent().unwrap();
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let mut cmd = if root {
        // Root writes through any mode bits: run as `nobody` instead.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o644)).unwrap();
        let as_nobody = || {
            let mut cmd = std::process::Command::new("setpriv");
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_stpreset"));
            cmd
        };
        let usable = as_nobody()
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !usable {
            eprintln!("SKIPPED: cannot run the CLI as an unprivileged user here");
            return None;
        }
        as_nobody()
    } else {
        std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_stpreset"))
    };
    let out = cmd
        .arg("store")
        .arg("--db")
        .arg(db)
        .args(["--server", "1"])
        .args(args)
        .output()
        .unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(out)
}

#[cfg(unix)]
#[test]
fn a_read_only_file_can_be_listed_and_rendered_but_not_changed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.sqlite");
    let a = open(&dir).import(1, "a", A).unwrap();
    let Some(out) = cli_without_write_access(&db, &["list"]) else {
        return;
    };
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{a}\ta\tactive\t4\n")
    );
    let out = cli_without_write_access(&db, &["render"]).unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli_without_write_access(&db, &["toggle", &a.to_string(), "extra=off"]).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("read-only"), "{}", stderr(&out));
    assert!(
        open(&dir).get(1, a).unwrap().nodes()[1].enabled,
        "nothing written"
    );
}

// ---- Regex script permission (SPEC §13.6.1) ----

const SCRIPTED: &[u8] = br#"{"prompts": [
    {"identifier": "main", "content": "M"},
    {"identifier": "chatHistory", "marker": true}],
    "extensions": {"regex_scripts": [
        {"scriptName": "hide plans", "findRegex": "/<plan>.*?<\\/plan>/g", "placement": [2], "promptOnly": true}]}}"#;

fn regex_ctx(allow: bool) -> Context {
    let mut ctx = Context::from_json(
        br#"{"items": [{"tag": "DIALOGUE_HISTORY", "role": "model", "text": "a<plan>x</plan>b"}]}"#,
    )
    .unwrap();
    ctx.allow_preset_regex = allow;
    ctx
}

fn history_text(store: &PresetStore, server: i64, ctx: &Context) -> (String, Vec<String>) {
    let r = store.render(server, ctx).unwrap().unwrap();
    let kinds = r.diagnostics.iter().map(|d| d.kind.to_string()).collect();
    (r.messages.last().unwrap().text().into_owned(), kinds)
}

#[test]
fn scripts_run_only_when_the_store_and_the_context_allow_them() {
    for db in backends() {
        let store = db.open();
        let id = store.import(5, "s", SCRIPTED).unwrap();
        assert!(!store.list(5).unwrap()[0].regex_allowed);
        // The context allows, the store does not: nothing runs, and the render says so.
        let (text, kinds) = history_text(&store, 5, &regex_ctx(true));
        assert_eq!(text, "a<plan>x</plan>b");
        assert!(kinds.contains(&"RegexNotAllowed".to_string()));
        // The note names the permission that is missing (issue 39).
        let why = |ctx: &Context| {
            let r = store.render(5, ctx).unwrap().unwrap();
            r.diagnostics
                .iter()
                .find(|d| d.kind == stpreset::DiagnosticKind::RegexNotAllowed)
                .map(|d| d.message.to_string())
                .unwrap()
        };
        assert!(why(&regex_ctx(true)).contains("the store does not allow"));
        assert!(why(&regex_ctx(false)).contains("neither the context"));
        store.allow_regex(5, id, true).unwrap();
        assert!(store.list(5).unwrap()[0].regex_allowed);
        assert_eq!(history_text(&store, 5, &regex_ctx(true)).0, "ab");
        // The store allows, the context does not.
        assert_eq!(
            history_text(&store, 5, &regex_ctx(false)).0,
            "a<plan>x</plan>b"
        );
        // Another server cannot change it.
        assert!(matches!(
            store.allow_regex(6, id, false),
            Err(StoreError::NotFound { .. })
        ));
        // Re-importing resets the permission.
        let id = store.import(5, "s", SCRIPTED).unwrap();
        assert_eq!(
            history_text(&store, 5, &regex_ctx(true)).0,
            "a<plan>x</plan>b"
        );
        store.allow_regex(5, id, true).unwrap();
        store.allow_regex(5, id, false).unwrap();
        assert_eq!(
            history_text(&store, 5, &regex_ctx(true)).0,
            "a<plan>x</plan>b"
        );
    }
}

#[test]
fn a_schema_1_file_migrates_and_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.sqlite");
    {
        let store = PresetStore::open(&path).unwrap();
        store.import(5, "s", SCRIPTED).unwrap();
    }
    // Make it the file an earlier build wrote: no permission column, version 1.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TABLE st_id_floor; ALTER TABLE st_presets DROP COLUMN lone_surrogates; \
             ALTER TABLE st_presets DROP COLUMN regex_allowed; PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let store = PresetStore::open(&path).unwrap();
    let v: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v as usize, PresetStore::schema_version());
    let list = store.list(5).unwrap();
    assert!(list[0].active && !list[0].regex_allowed);
    assert_eq!(
        history_text(&store, 5, &regex_ctx(true)).0,
        "a<plan>x</plan>b"
    );
    store.allow_regex(5, list[0].id, true).unwrap();
    assert_eq!(history_text(&store, 5, &regex_ctx(true)).0, "ab");
}

#[test]
fn the_cli_allows_and_disallows_scripts() {
    for db in backends() {
        let target = db.target();
        let file = db.scratch().join("s.json");
        std::fs::write(&file, SCRIPTED).unwrap();
        let ctx = db.scratch().join("ctx.json");
        std::fs::write(
            &ctx,
            br#"{"items": [{"tag": "DIALOGUE_HISTORY", "role": "model", "text": "a<plan>x</plan>b"}]}"#,
        )
        .unwrap();
        let out = cli(&target, 3, &["import", file.to_str().unwrap()]);
        let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let render = |allow: bool| {
            let mut args = vec!["render", "--context", ctx.to_str().unwrap()];
            if allow {
                args.push("--allow-regex");
            }
            String::from_utf8(cli(&target, 3, &args).stdout).unwrap()
        };
        assert!(render(true).contains("a<plan>x</plan>b"));
        assert!(cli(&target, 3, &["allow-regex", &id]).status.success());
        assert!(render(true).contains("\nab\n"), "{}", render(true));
        assert!(render(false).contains("a<plan>x</plan>b"));
        assert!(cli(&target, 3, &["disallow-regex", &id]).status.success());
        assert!(render(true).contains("a<plan>x</plan>b"));
        assert!(!cli(&target, 4, &["allow-regex", &id]).status.success());
    }
}

#[test]
fn preset_ids_are_never_reused_even_after_the_newest_is_deleted() {
    for db in backends() {
        let store = db.open();
        let base = store.import(1, "base", SCRIPTED).unwrap();
        let safe = store.import(1, "safe", SCRIPTED).unwrap();
        store.delete(1, safe).unwrap();
        let next = store.import(1, "evil", SCRIPTED).unwrap();
        assert!(next > safe && safe > base, "{base} {safe} {next}");
        // The stale id names nothing: activating or allowing it is refused, not redirected.
        assert!(matches!(
            store.activate(1, safe),
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            store.allow_regex(1, safe, true),
            Err(StoreError::NotFound { .. })
        ));
        // Across servers too.
        store.delete(1, next).unwrap();
        assert!(store.import(2, "other", SCRIPTED).unwrap() > next);
    }
}

#[test]
fn a_schema_2_file_keeps_its_ids_above_every_one_issued() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.sqlite");
    {
        let store = PresetStore::open(&path).unwrap();
        store.import(5, "a", SCRIPTED).unwrap();
        let b = store.import(5, "b", SCRIPTED).unwrap();
        store.delete(5, b).unwrap();
    }
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TABLE st_id_floor; ALTER TABLE st_presets DROP COLUMN lone_surrogates; \
             PRAGMA user_version = 2;",
        )
        .unwrap();
    }
    let store = PresetStore::open(&path).unwrap();
    let ids: Vec<i64> = store.list(5).unwrap().iter().map(|p| p.id).collect();
    let next = store.import(5, "c", SCRIPTED).unwrap();
    assert!(ids.iter().all(|&id| next > id));
}

#[test]
fn a_stored_preset_keeps_its_lone_surrogate_note() {
    for db in backends() {
        let store = db.open();
        store
            .import(
                1,
                "s",
                br#"{"prompts": [{"identifier": "main", "content": "a\ud800"}]}"#,
            )
            .unwrap();
        let ctx = stpreset::Context::default();
        let out = store.render(1, &ctx).unwrap().unwrap();
        assert_eq!(out.messages[0].text(), "a\u{FFFD}");
        let kinds: Vec<_> = out.diagnostics.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, [stpreset::DiagnosticKind::LoneSurrogate]);
    }
}

#[test]
fn names_refuse_invisible_characters_and_length() {
    for db in backends() {
        let store = db.open();
        for name in [
            "safe\u{200b}",
            "\u{feff}",
            "\u{61c}x",
            "\u{fff9}x",
            &"n".repeat(257),
        ] {
            assert!(
                matches!(
                    store.import(1, name, SCRIPTED),
                    Err(StoreError::InvalidName { .. })
                ),
                "{name:?}"
            );
        }
        store.import(1, &"n".repeat(256), SCRIPTED).unwrap();
        assert!(matches!(
            PresetStore::open(""),
            Err(StoreError::Open { .. })
        ));
    }
}

// ---- PostgreSQL: other instances, faults, what its text cannot hold ----

/// A preset whose texts hold U+0000, which PostgreSQL's `text` refuses.
const NUL: &[u8] = br#"{"prompts": [
    {"identifier": "a\u0000b", "name": "n\u0000", "content": "x\u0000y \\0 \\\\0"},
    {"identifier": "plain", "content": "P"}]}"#;

#[test]
fn u0000_round_trips_exactly() {
    for db in backends() {
        let store = db.open();
        let id = store.import(1, "nul", NUL).unwrap();
        let want = stpreset::Preset::from_json(NUL).unwrap();
        let got = store.get(1, id).unwrap();
        assert_eq!(got.nodes(), want.nodes());
        assert_eq!(got.raw(), want.raw());
        assert_eq!(
            texts(&store, 1).unwrap(),
            ["x\u{0}y \\0 \\\\0", "P"],
            "rendered as imported"
        );
        store.set_enabled(1, id, &[("a\u{0}b", false)]).unwrap();
        assert_eq!(texts(&store, 1).unwrap(), ["P"]);
        assert!(matches!(
            store.set_enabled(1, id, &[("a\\0b", false)]),
            Err(StoreError::UnknownNode { .. })
        ));
        // A name with backslashes on a preset whose text is escaped lists as given.
        store.import(1, "C:\\dir\\x", NUL).unwrap();
        assert!(
            store
                .list(1)
                .unwrap()
                .iter()
                .any(|p| p.name == "C:\\dir\\x")
        );
        // Escaping doubles backslashes: a file just under the import limit still loads.
        let big = format!(
            r#"{{"prompts": [{{"identifier": "big", "content": "{}\u0000"}}]}}"#,
            "a\\n".repeat(600_000)
        );
        store.import(1, "big", big.as_bytes()).unwrap();
        assert_eq!(
            store
                .active(1)
                .unwrap()
                .unwrap()
                .render(&Context::default())
                .messages
                .len(),
            1
        );
        // A preset without U+0000 is stored as it is, readable with plain SQL.
        let id = store
            .import(
                1,
                "plain",
                br#"{"prompts": [{"identifier": "m", "content": "a\\0b"}]}"#,
            )
            .unwrap();
        let content = db.same_sql(&format!(
            "SELECT content FROM st_preset_nodes WHERE preset_id = {id}"
        ));
        assert_eq!(content, "a\\0b\n");
        assert_eq!(texts(&store, 1).unwrap(), ["a\\0b"]);
    }
}

#[test]
fn rows_other_tools_wrote_are_checked_on_load() {
    for db in backends() {
        let store = db.open();
        let id = store.import(1, "a", A).unwrap();
        db.sql(
            "UPDATE st_preset_nodes SET content = printf('%.*c', 3000000, 'x') WHERE identifier = 'main'",
            "UPDATE st_preset_nodes SET content = repeat('x', 3000000) WHERE identifier = 'main'",
        );
        settle(&db);
        let err = store.active(1).expect_err("refused");
        assert!(
            err.to_string().contains(&format!("stored preset {id}")),
            "{err}"
        );
        assert!(store.get(1, id).is_err());
        // Repaired by hand: served again.
        db.same_sql("UPDATE st_preset_nodes SET content = 'ok' WHERE identifier = 'main'");
        seen(&db, true, || store.active(1).is_ok());
    }
}

#[test]
fn a_rolled_back_change_is_never_seen() {
    let _quiet = counting_hits();
    let Some(target) = postgres_only() else {
        return;
    };
    let bot = PresetStore::open(&target).unwrap();
    let a = bot.import(1, "a", A).unwrap();
    std::thread::sleep(Duration::from_millis(100)); // the import's own notification
    assert_eq!(texts(&bot, 1).unwrap(), ["A User", "EXTRA"]);
    psql(
        &target,
        &format!(
            "BEGIN; UPDATE st_preset_nodes SET enabled = false WHERE preset_id = {a}; ROLLBACK;"
        ),
    );
    std::thread::sleep(Duration::from_millis(200));
    let (hits, misses) = bot.cache_stats();
    assert_eq!(texts(&bot, 1).unwrap(), ["A User", "EXTRA"]);
    assert_eq!(
        bot.cache_stats(),
        (hits + 1, misses),
        "nobody was told anything"
    );
}

#[test]
fn postgres_changes_reach_other_processes_within_a_second() {
    let Some(target) = postgres_only() else {
        return;
    };
    let bot = PresetStore::open(&target).unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), A).unwrap();
    let path = std::path::Path::new(&target);
    let out = cli(path, 1, &["import", file.path().to_str().unwrap()]);
    let a = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let db = Db::Postgres {
        target: target.clone(),
        scratch: tempfile::tempdir().unwrap(),
    };
    let mut timings = Vec::new();
    let mut timed = |want: Option<Vec<String>>| {
        let start = std::time::Instant::now();
        seen(&db, want, || texts(&bot, 1));
        timings.push(start.elapsed());
    };
    timed(Some(vec!["A User".into(), "EXTRA".into()]));
    for (args, want) in [
        (
            vec!["toggle", &a, "extra=off"],
            Some(vec!["A User".to_string()]),
        ),
        (vec!["deactivate"], None),
        (vec!["activate", &a], Some(vec!["A User".to_string()])),
        (vec!["delete", &a], None),
    ] {
        // Warm the cache so that only a notification can make the bot see the change.
        let _ = texts(&bot, 1);
        assert!(cli(path, 1, &args).status.success());
        timed(want);
    }
    assert!(
        timings.iter().all(|t| *t < Duration::from_secs(1)),
        "{timings:?}"
    );
}

/// The pid of the store's listening connection.
fn listener_pid(target: &str) -> Option<String> {
    let pids = psql(
        target,
        "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_notify%' \
         AND datname = current_database()",
    );
    pids.lines().next().map(str::to_string)
}

#[test]
fn a_dropped_listener_never_serves_a_stale_entry() {
    let Some(target) = postgres_only() else {
        return;
    };
    let bot = PresetStore::open(&target).unwrap();
    let a = bot.import(1, "a", A).unwrap();
    assert_eq!(texts(&bot, 1).unwrap(), ["A User", "EXTRA"]);
    for round in 0..3 {
        let pid = listener_pid(&target).expect("the store listens");
        // Kill the listener and change the preset at once: the notification has nobody to
        // go to.
        let on = round % 2 == 1;
        psql(
            &target,
            &format!(
                "SELECT pg_terminate_backend({pid}); \
                 UPDATE st_preset_nodes SET enabled = {on} WHERE preset_id = {a} AND identifier = 'extra'"
            ),
        );
        let want = if on {
            vec!["A User", "EXTRA"]
        } else {
            vec!["A User"]
        };
        let want: Vec<String> = want.into_iter().map(String::from).collect();
        let start = std::time::Instant::now();
        // Stale reads are allowed within the bound only; after it, every render is new.
        while texts(&bot, 1).as_ref() != Some(&want) {
            assert!(
                start.elapsed() < Duration::from_secs(1),
                "stale past the bound"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        for _ in 0..50 {
            assert_eq!(
                texts(&bot, 1).as_ref(),
                Some(&want),
                "no stale read afterwards"
            );
        }
        // The listener is back (a new connection) and the cache is used again.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while listener_pid(&target).is_none_or(|p| p == pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "the listener reconnects"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A private PostgreSQL server that a test may kill.
struct PrivateServer(tempfile::TempDir);

impl PrivateServer {
    fn script(&self, cmd: &str) -> String {
        let out = std::process::Command::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/pg-throwaway"
        ))
        .args([cmd, self.0.path().to_str().unwrap()])
        .output()
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        self.script("stop");
    }
}

#[test]
fn a_server_killed_mid_write_leaves_all_or_nothing_and_the_store_recovers() {
    let _alone = loading_the_machine();
    if postgres_server().is_none() {
        return;
    }
    let server = PrivateServer(tempfile::tempdir().unwrap());
    let base = server.script("start");
    let target = format!("{base} dbname=postgres");
    let mut options = StoreOptions::default();
    options.busy_timeout = Duration::from_secs(2);
    let store = PresetStore::open_with(&target, options).unwrap();
    let small = store.import(1, "small", A).unwrap();
    let big = uniform('P', 20_000);
    for round in 0..4u64 {
        let killed = std::thread::scope(|s| {
            let write = s.spawn(|| {
                if round % 2 == 0 {
                    store.import(1, "big", &big).map(|_| ())
                } else {
                    store.set_enabled(1, small, &[("extra", round % 4 == 1)])
                }
            });
            std::thread::sleep(Duration::from_millis(3 * round));
            server.script("kill");
            write.join().unwrap()
        });
        server.script("start");
        // The failed call was an error, not a panic; the next read reconnects (a read that
        // finds its connection dead is tried once more on a new one).
        let list = store.list(1).expect("the store recovers at once");
        if let Some(p) = list.iter().find(|p| p.name == "big") {
            assert_eq!(p.nodes, 20_000, "round {round}: whole ({killed:?})");
            assert_eq!(store.get(1, p.id).unwrap().nodes().len(), 20_000);
            store.delete(1, p.id).unwrap();
            store.activate(1, small).unwrap();
        }
        assert_eq!(list.iter().filter(|p| p.active).count(), 1, "round {round}");
        let extra = store.get(1, small).unwrap().nodes()[1].enabled;
        let texts_now = texts(&store, 1).unwrap();
        assert_eq!(
            texts_now.len(),
            if extra { 2 } else { 1 },
            "render matches rows"
        );
    }
}

#[test]
fn a_foreign_stpreset_schema_is_refused() {
    let Some(target) = postgres_only() else {
        return;
    };
    psql(
        &target,
        "CREATE SCHEMA stpreset; CREATE TABLE stpreset.st_presets (x int)",
    );
    let err = PresetStore::open(&target).err().expect("refused");
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(err.to_string().contains("st_presets"), "{err}");
}

#[test]
fn the_cli_lists_a_presets_nodes_and_renders_a_request() {
    for db in backends() {
        let target = db.target();
        let id = db.open().import(1, "a", A).unwrap().to_string();
        assert!(
            cli(&target, 1, &["toggle", &id, "extra=off"])
                .status
                .success()
        );
        let out = cli(&target, 1, &["nodes", &id]);
        let text = String::from_utf8(out.stdout).unwrap();
        let states: Vec<(&str, &str)> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[0], f[2])
            })
            .collect();
        assert_eq!(
            states,
            [
                ("main", "on"),
                ("extra", "off"),
                ("note", "on"),
                ("chatHistory", "on")
            ]
        );
        let out = cli(&target, 1, &["nodes", &id, "--format", "json"]);
        let nodes: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(nodes[1]["identifier"], "extra");
        assert_eq!(nodes[1]["enabled"], false);
        let out = cli(&target, 2, &["nodes", &id]);
        assert_eq!(out.status.code(), Some(1), "another server's preset");
        assert!(stderr(&out).contains("no preset"), "{}", stderr(&out));
        let out = cli(&target, 1, &["render", "--shape", "anthropic"]);
        let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(body["temperature"], 0.5, "the preset's settings: {body}");
    }
}

/// Servers every stress thread shares; each thread also has one of its own.
const SHARED_SERVERS: i64 = 4;
const STRESS_THREADS: i64 = 32;

/// A preset whose every node says which server it was imported for.
fn marked(server: i64, nodes: usize) -> Vec<u8> {
    let prompts: Vec<serde_json::Value> = (0..nodes)
        .map(
            |i| serde_json::json!({"identifier": format!("n{i}"), "content": format!("S{server}")}),
        )
        .collect();
    serde_json::to_vec(&serde_json::json!({ "prompts": prompts })).unwrap()
}

/// One process's share of the stress test: 32 threads over two stores, importing, toggling,
/// activating, deleting and rendering shared and private servers. `process` keeps the two
/// processes' private servers apart.
fn stress(target: &std::path::Path, process: i64) {
    let stores = [
        PresetStore::open(target).unwrap(),
        PresetStore::open(target).unwrap(),
    ];
    std::thread::scope(|s| {
        for t in 0..STRESS_THREADS {
            let store = &stores[t as usize % 2];
            s.spawn(move || {
                let own = 1_000 + process * 100 + t;
                for i in 0..12i64 {
                    let server = if i % 2 == 0 {
                        own
                    } else {
                        1 + (t + i) % SHARED_SERVERS
                    };
                    let id = store
                        .import(
                            server,
                            &format!("p{}", (t + i) % 3),
                            &marked(server, 3 + (i as usize % 4)),
                        )
                        .unwrap();
                    match store.set_enabled(server, id, &[("n1", i % 3 == 0)]) {
                        // Another thread replaced or deleted it meanwhile: not an error of ours.
                        Ok(()) | Err(StoreError::NotFound { .. }) => {}
                        Err(e) => panic!("toggle: {e}"),
                    }
                    if i % 5 == 4 {
                        match store.delete(server, id) {
                            Ok(()) | Err(StoreError::NotFound { .. }) => {}
                            Err(e) => panic!("delete: {e}"),
                        }
                    }
                    for probe in [server, own, 1 + t % SHARED_SERVERS] {
                        if let Some(out) = store.render(probe, &Context::default()).unwrap() {
                            for m in &out.messages {
                                assert_eq!(
                                    m.text(),
                                    format!("S{probe}"),
                                    "a read of another server"
                                );
                            }
                        }
                    }
                }
            });
        }
    });
}

/// The second process of the stress test: runs only when the first starts it.
#[test]
fn stress_worker() {
    let (Ok(target), Ok(process)) = (
        std::env::var("STPRESET_STRESS_TARGET"),
        std::env::var("STPRESET_STRESS_PROCESS"),
    ) else {
        return;
    };
    stress(std::path::Path::new(&target), process.parse().unwrap());
}

#[test]
fn thirty_two_threads_in_two_processes_keep_every_invariant() {
    let _alone = loading_the_machine();
    for db in backends() {
        let target = db.target();
        db.open(); // migrated before the crowd arrives
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "stress_worker", "--test-threads=1"])
            .env("STPRESET_STRESS_TARGET", &target)
            .env("STPRESET_STRESS_PROCESS", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        stress(&target, 0);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
        let store = db.open();
        let servers = (1..=SHARED_SERVERS)
            .chain((0..2).flat_map(|p| (0..STRESS_THREADS).map(move |t| 1_000 + p * 100 + t)));
        for server in servers {
            let list = store.list(server).unwrap();
            assert!(
                list.iter().filter(|p| p.active).count() <= 1,
                "server {server}"
            );
            assert!(
                list.is_empty() || list.iter().any(|p| p.active),
                "server {server}: presets but none active"
            );
            for p in &list {
                let preset = store.get(server, p.id).unwrap();
                assert_eq!(preset.nodes().len(), p.nodes);
                assert!(
                    preset
                        .nodes()
                        .iter()
                        .all(|n| n.content == format!("S{server}"))
                );
            }
        }
    }
}

#[test]
fn the_store_can_be_called_inside_an_async_runtime() {
    for db in backends() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store = db.open();
            let id = store.import(1, "a", A).unwrap();
            store.set_enabled(1, id, &[("extra", false)]).unwrap();
            assert_eq!(texts(&store, 1).unwrap(), ["A User"]);
            assert_eq!(store.list(1).unwrap().len(), 1);
            drop(store);
        });
    }
}

#[test]
fn a_backlog_of_notifications_never_keeps_a_stale_entry_past_the_bound() {
    // PostgreSQL has one notification queue for all databases: a flood here delays others.
    let _alone = loading_the_machine();
    let Some(target) = postgres_only() else {
        return;
    };
    let bot = PresetStore::open(&target).unwrap();
    let a = bot.import(1, "a", A).unwrap();
    assert_eq!(texts(&bot, 1).unwrap(), ["A User", "EXTRA"]);
    // 300,000 notifications for other servers, then the change, in one transaction: the
    // change's own notification arrives last.
    psql(
        &target,
        &format!(
            "SELECT count(pg_notify('stpreset_changes', (g + 100000)::text)) \
             FROM generate_series(1, 300000) g; \
             UPDATE st_preset_nodes SET enabled = false WHERE preset_id = {a} AND identifier = 'extra'"
        ),
    );
    let start = std::time::Instant::now();
    while texts(&bot, 1).unwrap() != ["A User"] {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "stale past the bound"
        );
    }
}

#[test]
fn dropped_stores_close_their_connections_under_notification_traffic() {
    // PostgreSQL has one notification queue for all databases: a flood here delays others.
    let _alone = loading_the_machine();
    let Some(target) = postgres_only() else {
        return;
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let count = || {
        psql(
            &target,
            "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name = 'stpreset' AND datname = current_database()",
        )
        .trim()
        .parse::<usize>()
        .unwrap()
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                psql(
                    &target,
                    "SELECT count(pg_notify('stpreset_changes', g::text)) FROM generate_series(1, 200) g",
                );
            }
        });
        for _ in 0..10 {
            let store = PresetStore::open(&target).unwrap();
            assert!(store.render(1, &Context::default()).unwrap().is_none());
        }
        std::thread::sleep(Duration::from_millis(1500));
        let open = count();
        stop.store(true, Ordering::Relaxed);
        assert_eq!(open, 0, "connections of dropped stores");
    });
}

#[test]
fn rows_of_the_wrong_shape_are_errors_not_panics() {
    let Some(target) = postgres_only() else {
        return;
    };
    let store = PresetStore::open(&target).unwrap();
    let a = store.import(1, "a", A).unwrap();
    psql(
        &target,
        "ALTER TABLE st_presets ALTER created_at DROP NOT NULL; \
         UPDATE st_presets SET created_at = NULL; \
         ALTER TABLE st_preset_nodes ALTER content DROP NOT NULL; \
         UPDATE st_preset_nodes SET content = NULL",
    );
    assert!(matches!(store.list(1), Err(StoreError::Database(_))));
    assert!(matches!(store.get(1, a), Err(StoreError::Database(_))));
    // A huge description another tool wrote is not read into every listing.
    psql(
        &target,
        "UPDATE st_presets SET created_at = 'x', description = repeat('d', 10000000)",
    );
    assert_eq!(store.list(1).unwrap()[0].description, None);
}

#[test]
fn a_frozen_server_fails_every_call_within_its_timeout() {
    let _alone = loading_the_machine();
    let Some(target) = postgres_only() else {
        return;
    };
    let mut options = StoreOptions::default();
    options.busy_timeout = Duration::from_millis(500);
    let timeout = Duration::from_millis(5_500); // busy timeout + 5 s
    let store = PresetStore::open_with(&target, options).unwrap();
    store.import(1, "a", A).unwrap();
    let pid = psql(
        &target,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'stpreset' \
         AND datname = current_database() AND query NOT LIKE 'SELECT pg_notify%'",
    )
    .trim()
    .to_string();
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !signal("-STOP") {
        eprintln!("SKIPPED: cannot stop the server process {pid} here");
        return;
    }
    // The store's own connection freezes mid-call: the call times out, and renders waiting
    // behind it each fail within their own timeout, not one timeout after another.
    let start = std::time::Instant::now();
    assert!(store.deactivate(1).is_err());
    assert!(start.elapsed() < timeout + Duration::from_secs(1));
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                let start = std::time::Instant::now();
                let _ = store.active(1);
                assert!(
                    start.elapsed() < timeout + Duration::from_secs(1),
                    "{:?}",
                    start.elapsed()
                );
            });
        }
    });
    assert!(signal("-CONT"));
    // Whatever the timed-out call did, the store agrees with the database within the bound.
    let active = || {
        psql(&target, "SELECT count(*) FROM st_presets WHERE active")
            .trim()
            .to_string()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let want = active() == "1";
        if store.active(1).is_ok_and(|p| p.is_some() == want) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the store recovers");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SPEC §17.1.2: the store's switches reach the prompt list SillyTavern's layout reads (its
/// `character_id` 100001 order), per server, and survive a reopen.
#[test]
fn toggles_reach_the_sillytavern_layout() {
    const ST: &[u8] = br#"{"prompts": [
        {"identifier": "main", "content": "Main"},
        {"identifier": "extra", "content": "EXTRA", "system_prompt": false},
        {"identifier": "chatHistory", "marker": true}],
      "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": "main", "enabled": true}, {"identifier": "extra", "enabled": true},
        {"identifier": "chatHistory", "enabled": true}]}]}"#;
    let ctx = Context::from_json(br#"{"layout": "sillytavern"}"#).unwrap();
    let st_texts = |store: &PresetStore, server: i64| -> Vec<String> {
        store
            .render(server, &ctx)
            .unwrap()
            .unwrap()
            .messages
            .iter()
            .map(|m| m.text().into_owned())
            .collect()
    };
    for db in backends() {
        let store = db.open();
        let a = store.import(1, "a", ST).unwrap();
        store.import(2, "a", ST).unwrap();
        assert_eq!(st_texts(&store, 1), ["Main", "EXTRA", "[Start a new Chat]"]);
        store.set_enabled(1, a, &[("extra", false)]).unwrap();
        assert_eq!(st_texts(&store, 1), ["Main", "[Start a new Chat]"]);
        assert_eq!(st_texts(&store, 2), ["Main", "EXTRA", "[Start a new Chat]"]);
        drop(store);
        let store = db.open();
        assert_eq!(st_texts(&store, 1), ["Main", "[Start a new Chat]"]);
    }
}

// ---- Toggles under the authors' constraints (issue 41) ----

const STYLES: &[u8] = br#"{"prompts": [
    {"identifier": "main", "content": "Hi"},
    {"identifier": "terse", "name": "Terse", "content": "{{// @mutual-exclusive-group len}}T"},
    {"identifier": "lush", "name": "Lush", "content": "{{// @mutual-exclusive-group len}}{{// @exclusive-with-message Pick one length.}}L", "enabled": false},
    {"identifier": "plain", "name": "Plain", "content": "{{// @mutual-exclusive-group len}}P", "enabled": false}]}"#;

fn enabled(store: &PresetStore, server: i64, id: i64) -> Vec<String> {
    store
        .get(server, id)
        .unwrap()
        .nodes()
        .iter()
        .filter(|n| n.enabled)
        .map(|n| n.identifier.clone())
        .collect()
}

#[test]
fn toggles_refuse_what_breaks_a_constraint_and_resolve_when_asked() {
    use stpreset::switch::{IssueKind, Resolve};
    for db in backends() {
        let store = db.open();
        let id = store.import(1, "styles", STYLES).unwrap();
        match store.set_enabled(1, id, &[("lush", true)]) {
            Err(StoreError::Refused { node, issues, .. }) => {
                assert_eq!(node, "lush");
                assert_eq!(issues[0].kind, IssueKind::Group);
                assert_eq!(issues[0].others, ["terse"]);
                assert_eq!(issues[0].author.as_deref(), Some("Pick one length."));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(enabled(&store, 1, id), ["main", "terse"], "nothing written");
        // Turning off never refuses; an unknown node still fails the whole call.
        store.set_enabled(1, id, &[("terse", false)]).unwrap();
        assert!(matches!(
            store.set_enabled(1, id, &[("lush", true), ("nope", true)]),
            Err(StoreError::UnknownNode { .. })
        ));
        store.set_enabled(1, id, &[("lush", true)]).unwrap();
        let done = store
            .switch(1, id, &[("plain", true)], Resolve::Resolve)
            .unwrap();
        assert_eq!(done.resolved[0].others, ["lush"]);
        assert_eq!(enabled(&store, 1, id), ["main", "plain"]);
        // The cache saw the write.
        assert_eq!(texts(&store, 1).unwrap(), ["Hi", "P"]);
        // Other servers cannot switch it.
        assert!(matches!(
            store.switch(2, id, &[("lush", true)], Resolve::Resolve),
            Err(StoreError::NotFound { .. })
        ));
    }
}

#[test]
fn two_admins_switching_one_group_at_once_never_leave_two_members_on() {
    for db in backends() {
        let first = Arc::new(db.open());
        let id = first.import(1, "styles", STYLES).unwrap();
        first.set_enabled(1, id, &[("terse", false)]).unwrap();
        for _ in 0..20 {
            let second = Arc::new(db.open());
            let racers: Vec<_> = [(first.clone(), "lush"), (second, "plain")]
                .into_iter()
                .map(|(store, node)| {
                    std::thread::spawn(move || store.set_enabled(1, id, &[(node, true)]).is_ok())
                })
                .collect();
            let won: Vec<bool> = racers.into_iter().map(|r| r.join().unwrap()).collect();
            assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
            let on = enabled(&first, 1, id);
            assert_eq!(on.len(), 2, "main and one style: {on:?}");
            first
                .set_enabled(1, id, &[("lush", false), ("plain", false)])
                .unwrap();
        }
    }
}

/// Every exclusive group of the corpus's directive presets, switched through the store: an
/// off member is refused while another is on, and resolving leaves exactly it on.
#[test]
fn the_corpus_groups_switch_one_member_at_a_time() {
    use stpreset::switch::Resolve;
    let Some(corpus) = support_corpus() else {
        return;
    };
    let db = tempfile::tempdir().unwrap();
    let store = open(&db);
    let (mut checked, mut resolved) = (0, 0);
    for (file, preset) in corpus {
        let bytes = std::fs::read(&file).unwrap();
        let id = store.import(1, &file.to_string_lossy(), &bytes).unwrap();
        let outline = preset.outline();
        if outline.groups.is_empty() {
            // No directives (Lucid Loom, Marinara, ST's Default): every switch is accepted.
            let all: Vec<(&str, bool)> = preset
                .nodes()
                .iter()
                .map(|n| (n.identifier.as_str(), true))
                .collect();
            let done = store.switch(1, id, &all, Resolve::Refuse).unwrap();
            assert!(done.resolved.is_empty(), "{}", file.display());
            continue;
        }
        for g in outline.groups.iter().filter(|g| g.members.len() > 1) {
            let on_now = |store: &PresetStore| -> Vec<String> {
                let on = enabled(store, 1, id);
                g.members
                    .iter()
                    .filter(|m| on.contains(m))
                    .cloned()
                    .collect()
            };
            let pick = g
                .members
                .iter()
                .find(|m| !on_now(&store).contains(m))
                .unwrap();
            let before = on_now(&store);
            let plain = store.set_enabled(1, id, &[(pick.as_str(), true)]);
            assert_eq!(
                plain.is_err(),
                !before.is_empty(),
                "{} group {}: {plain:?}",
                file.display(),
                g.name
            );
            match store.switch(1, id, &[(pick.as_str(), true)], Resolve::Resolve) {
                Ok(_) => {
                    assert_eq!(on_now(&store), std::slice::from_ref(pick), "{}", g.name);
                    resolved += 1;
                }
                // A member that requires a node another constraint excludes: refused whole.
                Err(StoreError::Refused { issues, .. }) => {
                    eprintln!("{}: {issues:?}", g.name);
                    assert_eq!(on_now(&store), before, "{}: {issues:?}", g.name)
                }
                Err(e) => panic!("{e}"),
            }
            checked += 1;
        }
    }
    // NemoEngine 11.5.2's 32 groups of two or more, NemoNet 2.0's 17, Magpie's 7, ...
    assert_eq!((checked, resolved), (58, 58));
}

/// The corpus presets' files, by path (the store imports bytes).
fn support_corpus() -> Option<Vec<(std::path::PathBuf, stpreset::Preset)>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/presets");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "SKIPPED: {} not found (../shared is not beside this checkout)",
            dir.display()
        );
        return None;
    };
    let mut out: Vec<_> = entries
        .flatten()
        .filter_map(|e| {
            let preset = stpreset::Preset::from_json(&std::fs::read(e.path()).ok()?).ok()?;
            Some((e.path(), preset))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}
