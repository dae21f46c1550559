//! The thread that owns the store's PostgreSQL connection. Callers hand it closures and wait
//! for the answer.
//!
//! The synchronous `postgres` client runs a tokio runtime of its own and panics when it is
//! called from inside another runtime's thread, which is where an async bot calls the store.
//! On a thread of ours it never is. The wait is bounded, so a frozen server is an error for the
//! caller, not a hang.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use postgres::{Client, Config, NoTls};

use super::{StoreError, pg_error};

type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// The connection, made again on the next call after it broke.
pub(super) struct Session {
    config: Config,
    client: Option<Client>,
    /// Statements run on every new connection (session settings).
    setup: String,
    /// When the connection last answered.
    answered: Instant,
}

/// How long a connection may sit idle before a call checks that it is still alive. A server
/// restarted or a session terminated meanwhile then costs a reconnect, not a failed call.
const IDLE_CHECK: Duration = Duration::from_secs(1);

impl Session {
    /// After a failed call: whether the connection is dead (closed, or the server ended the
    /// session, which the client may report as an error before it sees the socket close).
    /// A dead connection is dropped, so that the next call makes a new one.
    pub(super) fn dead(&mut self) -> bool {
        let dead = match self.client.as_mut() {
            None => return false,
            Some(client) => client.is_closed() || client.simple_query("").is_err(),
        };
        if dead {
            self.client = None;
        }
        dead
    }

    /// The live connection, connecting first when there is none or it broke.
    pub(super) fn client(&mut self) -> Result<&mut Client, StoreError> {
        if self.answered.elapsed() > IDLE_CHECK
            && let Some(client) = self.client.as_mut()
            && client.simple_query("").is_err()
        {
            self.client = None;
        }
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let mut client = self.config.connect(NoTls).map_err(pg_error)?;
            client.batch_execute(&self.setup).map_err(pg_error)?;
            self.client = Some(client);
            self.answered = Instant::now();
        }
        self.client
            .as_mut()
            .ok_or_else(|| StoreError::Database("not connected".into()))
    }
}

pub(super) struct Worker {
    jobs: mpsc::Sender<Job>,
    /// How long a caller waits for an answer.
    timeout: Duration,
}

impl Worker {
    /// Starts the thread and connects once, so that a bad connection string or a refused
    /// login is an error of `open`.
    pub(super) fn start(
        config: Config,
        setup: String,
        timeout: Duration,
    ) -> Result<Worker, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("stpreset-postgres".into())
            .spawn(move || {
                let mut session = Session {
                    config,
                    client: None,
                    setup,
                    answered: Instant::now(),
                };
                // Ends when the store, and with it the sender, is dropped.
                for job in queue {
                    job(&mut session);
                }
            })
            .map_err(|e| StoreError::Database(format!("cannot start a thread: {e}")))?;
        let worker = Worker { jobs, timeout };
        worker.run(|session| session.client().map(|_| ()))?;
        Ok(worker)
    }

    /// Runs `f` on the connection's thread and returns its answer, or an error when none
    /// comes within the timeout (the call may still complete later; its transaction is then
    /// whole or absent, never half).
    pub(super) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, reply) = mpsc::sync_channel(1);
        let gave_up = Arc::new(AtomicBool::new(false));
        let abandoned = gave_up.clone();
        let job: Job = Box::new(move |session| {
            // Its caller was told it timed out: a call that has not started yet never does
            // (a queue behind a frozen server must not commit old mutations when it thaws).
            if abandoned.load(Ordering::Acquire) {
                return;
            }
            // A panic in `f` must not end the thread that every later call needs.
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(session)))
                .unwrap_or_else(|_| Err(StoreError::Database("a store call panicked".into())));
            if out.is_err() {
                session.dead();
            } else {
                session.answered = Instant::now();
            }
            let _ = answer.send(out);
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Database("the connection thread has stopped".into()))?;
        match reply.recv_timeout(self.timeout) {
            Ok(out) => out,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                gave_up.store(true, Ordering::Release);
                Err(StoreError::Database(format!(
                    "PostgreSQL did not answer within {} s",
                    self.timeout.as_secs()
                )))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(StoreError::Database(
                "the connection thread has stopped".into(),
            )),
        }
    }
}
