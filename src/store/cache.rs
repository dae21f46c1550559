//! The per-server cache of active compiled presets (SPEC §7): TTL, negative caching, a
//! capacity bound, single-flight loading, and invalidation that a concurrent load cannot undo.
//!
//! Hand-rolled rather than moka: tests must drive the TTL with an injected clock, which moka
//! does not expose, and the whole cache is a map behind one lock plus counters.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::StoreError;
use crate::preset::CompiledPreset;

/// A source of monotonic time, injectable for tests.
pub trait Clock: Send + Sync {
    /// Time elapsed since some fixed origin.
    fn now(&self) -> Duration;
}

/// The real monotonic clock.
#[derive(Debug)]
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// What the cache holds for a server: its active compiled preset, or "none" (negative entry).
pub(super) type Cached = Option<Arc<CompiledPreset>>;

/// Locks a mutex even if a panicking thread poisoned it: every critical section here leaves
/// the data consistent (single inserts and removes), so the data is still good.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Entry {
    value: Cached,
    expires: Duration,
    /// Matches the entry's item in `Inner::order`; older items for the server are stale.
    seq: u64,
}

enum FlightState {
    Loading,
    Done(Cached),
    /// The load failed: its waiters fail with the same error. Their calls overlapped it, and
    /// loading again one after another would make the last of n waiters wait n times as long
    /// behind a database that does not answer (found by a review, with a frozen server).
    Failed(StoreError),
    /// The loader panicked or gave up its ticket: waiters load for themselves.
    Abandoned,
}

/// One load in progress; callers missing on the same server wait for it instead of loading.
struct Flight {
    state: Mutex<FlightState>,
    done: Condvar,
}

impl Flight {
    fn finish(&self, state: FlightState) {
        *lock(&self.state) = state;
        self.done.notify_all();
    }

    /// The flight's outcome; `None` when its loader abandoned it.
    fn wait(&self) -> Option<Result<Cached, StoreError>> {
        let mut state = lock(&self.state);
        loop {
            match &*state {
                FlightState::Loading => {
                    state = self.done.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                FlightState::Done(value) => return Some(Ok(value.clone())),
                FlightState::Failed(e) => return Some(Err(e.clone())),
                FlightState::Abandoned => return None,
            }
        }
    }
}

#[derive(Default)]
struct Inner {
    entries: HashMap<i64, Entry>,
    /// Insertion order, oldest first, for eviction. Since the TTL is the same for every
    /// entry, this is also expiry order. Items whose `seq` no longer matches are skipped.
    order: VecDeque<(i64, u64)>,
    next_seq: u64,
    /// The load in progress per server. Invalidation removes it: a load that started before
    /// an invalidation must not store its (stale) result, and later callers must not wait for
    /// it. That removal is what keeps a render racing a write from pinning the old preset.
    loading: HashMap<i64, Arc<Flight>>,
    /// The database's `PRAGMA data_version` when last checked; `None` before the first check.
    data_version: Option<i64>,
}

impl Inner {
    fn clear(&mut self) {
        self.entries.clear();
        self.order.clear();
        self.loading.clear();
    }

    fn insert(&mut self, capacity: usize, server: i64, value: Cached, expires: Duration) {
        if capacity == 0 {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries.insert(
            server,
            Entry {
                value,
                expires,
                seq,
            },
        );
        self.order.push_back((server, seq));
        while self.entries.len() > capacity {
            let Some((victim, seq)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&victim).is_some_and(|e| e.seq == seq) {
                self.entries.remove(&victim);
            }
        }
        // Re-inserts and invalidations leave stale items behind; drop them before they
        // outnumber the live ones, so the queue stays proportional to the capacity.
        if self.order.len() > 2 * self.entries.len() + 64 {
            let entries = &self.entries;
            self.order
                .retain(|(s, seq)| entries.get(s).is_some_and(|e| e.seq == *seq));
        }
    }
}

/// The outcome of a lookup.
pub(super) enum Lookup<'a> {
    /// A fresh entry, or the result of a load another caller did while this one waited.
    Hit(Cached),
    /// The load this caller waited for failed with this error.
    Failed(StoreError),
    /// The caller loads and hands the result to the ticket.
    Miss(LoadTicket<'a>),
}

/// The right (and duty) to load one server's entry. Dropping it unfinished, e.g. on an error
/// or a panic, releases the callers waiting for it so that they load for themselves.
pub(super) struct LoadTicket<'a> {
    cache: &'a PresetCache,
    server: i64,
    flight: Arc<Flight>,
    finished: bool,
}

impl LoadTicket<'_> {
    /// Stores the loaded value (unless invalidated meanwhile) and hands it to the waiters.
    pub fn finish(mut self, value: Cached) {
        self.finished = true;
        self.cache
            .complete(self.server, &self.flight, FlightState::Done(value));
    }

    /// Hands the load's error to the waiters; nothing is cached.
    pub fn fail(mut self, error: StoreError) {
        self.finished = true;
        self.cache
            .complete(self.server, &self.flight, FlightState::Failed(error));
    }
}

impl Drop for LoadTicket<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.cache
                .complete(self.server, &self.flight, FlightState::Abandoned);
        }
    }
}

pub(super) struct PresetCache {
    inner: Mutex<Inner>,
    ttl: Duration,
    capacity: usize,
    clock: Arc<dyn Clock>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl PresetCache {
    pub fn new(ttl: Duration, capacity: usize, clock: Arc<dyn Clock>) -> Self {
        PresetCache {
            inner: Mutex::new(Inner::default()),
            ttl,
            capacity,
            clock,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// A fresh entry, the result of a load already in progress (waiting for it), or a ticket
    /// to load. Only one caller per server loads at a time; a miss counts once per load.
    pub fn get(&self, server: i64) -> Lookup<'_> {
        loop {
            let now = self.clock.now();
            let mut inner = lock(&self.inner);
            if let Some(e) = inner.entries.get(&server)
                && e.expires > now
            {
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Lookup::Hit(e.value.clone());
            }
            if let Some(flight) = inner.loading.get(&server).cloned() {
                drop(inner);
                match flight.wait() {
                    Some(Ok(value)) => {
                        self.hits.fetch_add(1, Ordering::Relaxed);
                        return Lookup::Hit(value);
                    }
                    Some(Err(e)) => return Lookup::Failed(e),
                    // The loader gave up; look again (and maybe load).
                    None => continue,
                }
            }
            self.misses.fetch_add(1, Ordering::Relaxed);
            let flight = Arc::new(Flight {
                state: Mutex::new(FlightState::Loading),
                done: Condvar::new(),
            });
            inner.loading.insert(server, flight.clone());
            return Lookup::Miss(LoadTicket {
                cache: self,
                server,
                flight,
                finished: false,
            });
        }
    }

    fn complete(&self, server: i64, flight: &Arc<Flight>, outcome: FlightState) {
        let expires = self.clock.now() + self.ttl;
        let mut inner = lock(&self.inner);
        let current = inner
            .loading
            .get(&server)
            .is_some_and(|f| Arc::ptr_eq(f, flight));
        if current {
            inner.loading.remove(&server);
            if let FlightState::Done(value) = &outcome {
                inner.insert(self.capacity, server, value.clone(), expires);
            }
        }
        drop(inner);
        // Waiters that joined before an invalidation still get this value: their calls
        // overlapped the write, so either state is a correct answer for them.
        flight.finish(outcome);
    }

    /// Forgets the server's entry and disowns a load in progress.
    pub fn invalidate(&self, server: i64) {
        let mut inner = lock(&self.inner);
        inner.entries.remove(&server);
        inner.loading.remove(&server);
    }

    /// Forgets every entry and disowns every load in progress.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // PostgreSQL's listener
    pub fn invalidate_all(&self) {
        lock(&self.inner).clear();
    }

    /// Records the database's `PRAGMA data_version`. A change means another connection
    /// committed; which servers it touched is unknown, so everything is forgotten.
    pub fn observe_data_version(&self, version: i64) {
        let mut inner = lock(&self.inner);
        if inner.data_version == Some(version) {
            return;
        }
        if inner.data_version.is_some() {
            inner.clear();
        }
        inner.data_version = Some(version);
    }

    pub fn stats(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    pub fn len(&self) -> usize {
        lock(&self.inner).entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(capacity: usize) -> PresetCache {
        PresetCache::new(
            Duration::from_secs(600),
            capacity,
            Arc::new(SystemClock::default()),
        )
    }

    fn load(cache: &PresetCache, server: i64) {
        match cache.get(server) {
            Lookup::Miss(ticket) => ticket.finish(None),
            Lookup::Hit(_) | Lookup::Failed(_) => {}
        }
    }

    #[test]
    fn capacity_evicts_the_oldest_and_the_queue_stays_small() {
        let cache = cache(3);
        for server in 0..10_000 {
            load(&cache, server);
            load(&cache, server % 5); // re-inserts leave stale queue items behind
        }
        let inner = lock(&cache.inner);
        assert!(inner.entries.len() <= 3);
        assert!(inner.order.len() <= 2 * 3 + 64 + 1, "{}", inner.order.len());
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let cache = cache(0);
        load(&cache, 1);
        load(&cache, 1);
        assert_eq!((cache.stats(), cache.len()), ((0, 2), 0));
    }

    #[test]
    fn invalidation_during_a_load_wins() {
        let cache = cache(8);
        let Lookup::Miss(ticket) = cache.get(1) else {
            panic!("cold cache")
        };
        cache.invalidate(1);
        ticket.finish(None);
        assert!(
            matches!(cache.get(1), Lookup::Miss(_)),
            "stale load not stored"
        );
    }

    #[test]
    fn a_dropped_ticket_releases_waiters() {
        let cache = Arc::new(cache(8));
        let Lookup::Miss(ticket) = cache.get(1) else {
            panic!("cold cache")
        };
        let waiter = {
            let cache = cache.clone();
            std::thread::spawn(move || matches!(cache.get(1), Lookup::Miss(_)))
        };
        // Whether the waiter joined the flight or comes after it, it must end up loading.
        drop(ticket);
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_failed_load_fails_its_waiters_once() {
        let cache = Arc::new(cache(8));
        let Lookup::Miss(ticket) = cache.get(1) else {
            panic!("cold cache")
        };
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let cache = cache.clone();
                std::thread::spawn(move || match cache.get(1) {
                    Lookup::Failed(e) => e.kind(),
                    Lookup::Miss(_) => "Miss",
                    Lookup::Hit(_) => "Hit",
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        ticket.fail(StoreError::Locked);
        for w in waiters {
            // A waiter that came after the failure loads itself; one that waited shares it.
            assert!(matches!(w.join().unwrap(), "Locked" | "Miss"));
        }
        assert_eq!(cache.len(), 0, "errors are not cached");
    }

    #[test]
    fn a_foreign_write_forgets_everything() {
        let cache = cache(8);
        cache.observe_data_version(1);
        load(&cache, 1);
        cache.observe_data_version(1);
        assert_eq!(cache.len(), 1);
        cache.observe_data_version(2);
        assert_eq!(cache.len(), 0);
    }
}
