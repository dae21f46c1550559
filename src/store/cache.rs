//! The per-server cache of active compiled presets (SPEC §7): TTL, negative caching, and
//! invalidation that a concurrent load cannot undo.
//!
//! Hand-rolled rather than moka: tests must drive the TTL with an injected clock, which moka
//! does not expose, and the whole cache is a map behind one lock plus counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

struct Entry {
    value: Cached,
    expires: Duration,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<i64, Entry>,
    /// Bumped by every invalidation; a load that started before a bump must not be stored.
    generation: HashMap<i64, u64>,
}

pub(super) struct PresetCache {
    inner: Mutex<Inner>,
    ttl: Duration,
    clock: Arc<dyn Clock>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl PresetCache {
    pub fn new(ttl: Duration, clock: Arc<dyn Clock>) -> Self {
        PresetCache {
            inner: Mutex::new(Inner::default()),
            ttl,
            clock,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a consistent map (every write is one insert
        // or remove), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh entry, or the generation to hand to `store` after loading.
    pub fn get(&self, server: i64) -> Result<Cached, u64> {
        let now = self.clock.now();
        let inner = self.lock();
        match inner.entries.get(&server) {
            Some(e) if e.expires > now => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(e.value.clone())
            }
            _ => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                Err(inner.generation.get(&server).copied().unwrap_or(0))
            }
        }
    }

    /// Stores a loaded value unless the server was invalidated since `generation` was read.
    pub fn store(&self, server: i64, generation: u64, value: Cached) {
        let expires = self.clock.now() + self.ttl;
        let mut inner = self.lock();
        if inner.generation.get(&server).copied().unwrap_or(0) == generation {
            inner.entries.insert(server, Entry { value, expires });
        }
    }

    pub fn invalidate(&self, server: i64) {
        let mut inner = self.lock();
        inner.entries.remove(&server);
        *inner.generation.entry(server).or_insert(0) += 1;
    }

    pub fn stats(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}
