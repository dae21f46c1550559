//! The connection that hears every change (`LISTEN stpreset_changes`) and tells the cache.
//!
//! It vouches for the cache only while it can prove it is hearing: connected, and the server
//! answered within [`VOUCH`]. Past that (a dropped connection, a frozen server), the store reads
//! the database on every render until the listener is back, and on its return the whole cache
//! is dropped, since notifications sent while it was away are lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Config, NoTls};

/// The channel the schema's triggers notify; the payload is a server id, or `*` for all.
pub(super) const CHANNEL: &str = "stpreset_changes";

/// How often an idle listener asks the server whether it is there.
const HEARTBEAT: Duration = Duration::from_millis(200);

/// How long after the server's last sign of life the cache is still trusted. A change that
/// commits while the listener cannot hear it is therefore served stale for less than this,
/// which keeps SPEC's bound (every instance sees a change within one second).
const VOUCH: Duration = Duration::from_millis(800);

/// Where changes go: `Some(server)`, or `None` for "anything may have changed".
pub(super) type Sink = Arc<dyn Fn(Option<i64>) + Send + Sync>;

struct State {
    origin: Instant,
    /// Milliseconds from `origin` to the server's last sign of life; 0 while disconnected.
    heard_ms: AtomicU64,
    stop: AtomicBool,
}

impl State {
    fn heard(&self) {
        // +1 so that a sign of life in the first millisecond is not read as "never".
        let ms = self.origin.elapsed().as_millis() as u64 + 1;
        self.heard_ms.store(ms, Ordering::Release);
    }
}

pub(super) struct Listener {
    state: Arc<State>,
}

impl Listener {
    /// `own_pid`: the server process of the store's own connection, whose notifications are
    /// skipped.
    pub(super) fn start(
        config: Config,
        sink: Sink,
        own_pid: Arc<AtomicI32>,
    ) -> std::io::Result<Listener> {
        let state = Arc::new(State {
            origin: Instant::now(),
            heard_ms: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let thread_state = state.clone();
        std::thread::Builder::new()
            .name("stpreset-listen".into())
            .spawn(move || listen(config, sink, &own_pid, &thread_state))?;
        Ok(Listener { state })
    }

    /// Whether every change committed more than [`VOUCH`] ago has reached the cache.
    pub(super) fn vouches(&self) -> bool {
        let heard = self.state.heard_ms.load(Ordering::Acquire);
        heard != 0
            && (self.state.origin.elapsed().as_millis() as u64 + 1) - heard
                < VOUCH.as_millis() as u64
    }

    /// Waits (bounded) until the listener vouches, so that a store just opened uses its cache
    /// from the first render.
    pub(super) fn wait_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.vouches() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // The thread sees it at its next heartbeat and ends; nobody waits for it.
        self.state.stop.store(true, Ordering::Release);
    }
}

fn listen(config: Config, sink: Sink, own_pid: &AtomicI32, state: &State) {
    let mut pause = Duration::from_millis(50);
    while !state.stop.load(Ordering::Acquire) {
        if let Ok(client) = config.connect(NoTls) {
            pause = Duration::from_millis(50);
            hear(client, &sink, own_pid, state);
            state.heard_ms.store(0, Ordering::Release);
        } else {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}

/// Serves one connection until it fails or the store is dropped.
fn hear(mut client: Client, sink: &Sink, own_pid: &AtomicI32, state: &State) {
    if client.batch_execute(&format!("LISTEN {CHANNEL}")).is_err() {
        return;
    }
    // Whatever was cached before this connection listened may have missed a change.
    sink(None);
    state.heard();
    while !state.stop.load(Ordering::Acquire) {
        {
            let mut notes = client.notifications();
            let mut iter = notes.timeout_iter(HEARTBEAT);
            loop {
                match iter.next() {
                    Ok(Some(note)) => {
                        state.heard();
                        if note.process_id() != own_pid.load(Ordering::Acquire) {
                            sink(note.payload().parse::<i64>().ok());
                        }
                    }
                    Ok(None) => break,
                    Err(_) => return,
                }
            }
        }
        if client.batch_execute("SELECT 1").is_err() {
            return;
        }
        state.heard();
    }
}
