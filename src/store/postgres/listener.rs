//! The connection that hears every change (`LISTEN stpreset_changes`) and tells the cache.
//!
//! It vouches for the cache only while it can prove it has heard every change committed up to
//! a recent moment: every [`HEARTBEAT`] it sends itself a notification on a channel of its own,
//! and PostgreSQL delivers notifications in commit order, so when that echo arrives, every
//! change committed before it was sent has arrived too. The cache is trusted for [`VOUCH`]
//! after the send time of the last echo heard. A backlog of notifications, a dropped
//! connection or a frozen server all delay the echo, so the store reads the database on every
//! render until the listener has caught up; on reconnecting, the whole cache is dropped, since
//! notifications sent while it was away are lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Config, NoTls};

/// The channel the schema's triggers notify; the payload is a server id, or `*` for all.
pub(super) const CHANNEL: &str = "stpreset_changes";

/// How often the listener sends itself an echo.
const HEARTBEAT: Duration = Duration::from_millis(200);

/// How long after the send time of the last echo heard the cache is still trusted. A change
/// committed while the listener cannot hear it is therefore served stale for less than this,
/// which keeps SPEC's bound (every instance sees a change within one second).
const VOUCH: Duration = Duration::from_millis(800);

/// Where changes go: `Some(server)`, or `None` for "anything may have changed".
pub(super) type Sink = Arc<dyn Fn(Option<i64>) + Send + Sync>;

struct State {
    origin: Instant,
    /// Milliseconds from `origin` to the send time of the last echo heard (+1); 0 while no
    /// connection vouches.
    heard_ms: AtomicU64,
    stop: AtomicBool,
}

impl State {
    fn millis(&self, at: Instant) -> u64 {
        // +1 so that an echo sent in the first millisecond is not read as "never".
        at.saturating_duration_since(self.origin).as_millis() as u64 + 1
    }
}

pub(super) struct Listener {
    state: Arc<State>,
}

impl Listener {
    pub(super) fn start(config: Config, sink: Sink) -> std::io::Result<Listener> {
        let state = Arc::new(State {
            origin: Instant::now(),
            heard_ms: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let thread_state = state.clone();
        std::thread::Builder::new()
            .name("stpreset-listen".into())
            .spawn(move || listen(config, sink, &thread_state))?;
        Ok(Listener { state })
    }

    /// Whether every change committed more than [`VOUCH`] ago has reached the cache.
    pub(super) fn vouches(&self) -> bool {
        let heard = self.state.heard_ms.load(Ordering::Acquire);
        heard != 0 && self.state.millis(Instant::now()) - heard < VOUCH.as_millis() as u64
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
        // The thread sees it within a heartbeat, even under a stream of notifications, and
        // ends with its connection; nobody waits for it.
        self.state.stop.store(true, Ordering::Release);
    }
}

fn listen(config: Config, sink: Sink, state: &State) {
    let mut pause = Duration::from_millis(50);
    while !state.stop.load(Ordering::Acquire) {
        if let Ok(client) = config.connect(NoTls) {
            pause = Duration::from_millis(50);
            let _ = hear(client, &sink, state);
            state.heard_ms.store(0, Ordering::Release);
        } else {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}

/// Serves one connection until it fails or the store is dropped.
fn hear(mut client: Client, sink: &Sink, state: &State) -> Result<(), postgres::Error> {
    let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[])?.get(0);
    let echo = format!("stpreset_echo_{pid}");
    client.batch_execute(&format!("LISTEN {CHANNEL}; LISTEN {echo}"))?;
    // Whatever was cached before this connection listened may have missed a change.
    sink(None);
    // Echoes in flight: (sequence number, send time), oldest first.
    let mut pending: std::collections::VecDeque<(u64, Instant)> = Default::default();
    let mut seq = 0u64;
    let mut next_beat = Instant::now();
    while !state.stop.load(Ordering::Acquire) {
        let now = Instant::now();
        if now >= next_beat {
            seq += 1;
            client.execute("SELECT pg_notify($1, $2)", &[&echo, &seq.to_string()])?;
            pending.push_back((seq, now));
            // A server that never answers must not grow this without end.
            if pending.len() > 64 {
                pending.pop_front();
            }
            next_beat = now + HEARTBEAT;
        }
        let wait = next_beat.saturating_duration_since(Instant::now());
        let Some(note) = client.notifications().timeout_iter(wait).next()? else {
            continue;
        };
        if note.channel() == echo {
            // Only our own echo proves the queue was read up to its send time; another
            // session could send one on this channel too.
            let Ok(n) = note.payload().parse::<u64>() else {
                continue;
            };
            if note.process_id() != pid {
                continue;
            }
            while let Some(&(s, sent)) = pending.front() {
                if s > n {
                    break;
                }
                pending.pop_front();
                if s == n {
                    state
                        .heard_ms
                        .fetch_max(state.millis(sent), Ordering::AcqRel);
                }
            }
        } else {
            sink(note.payload().parse::<i64>().ok());
        }
    }
    Ok(())
}
