//! Subscribers of committed events: work that follows an append (the
//! automatic verdict after a submission) runs off the append path, on its
//! own thread, from a persisted cursor.
//!
//! A [`Subscriber`] has a name and handles one committed event at a time.
//! Its runner ([`Subscription`]) reads the durable log from the cursor
//! (`Ledger::events`), hands every event the subscriber wants to it, and
//! advances the cursor after handling; it sleeps until the log grows (a
//! commit listener wakes it). The cursor is a small file,
//! `DATA/cursors/<name>`, holding the last sequence number handled,
//! written atomically (temporary file, fsync, rename, fsync of the
//! directory).
//!
//! The cursor is a derived file and is never trusted blindly: one that is
//! missing, does not parse, or names a sequence number the log does not
//! have (a log restored from an older backup) is replaced, with a warning,
//! by [`Subscriber::recover`]'s safe position. Handlers are idempotent
//! (appending a statement already in the log returns the first receipt), so
//! handling an event twice — after a crash between the handler and the
//! cursor write, or after a reset — is harmless. A handler that fails keeps
//! the persisted cursor before the failed event, so the next start retries
//! it; the runner itself moves on.
//!
//! On start, the runner catches up from the cursor to the log's length
//! before [`Subscription::start`] returns (a reopened ledger has done the
//! work its last process owed), then follows new commits in the background
//! until stopped (explicitly, or when the last handle is dropped).

use std::collections::BTreeSet;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{LedgerError, Result};
use crate::event::Event;
use crate::store::sync_dir;

use super::Docket;

/// Directory of cursor files under the data directory.
pub const CURSORS_DIR: &str = "cursors";
/// Events read per chunk.
const CHUNK: u64 = 1024;
/// The cursor is written after a chunk in which an event was handled, and
/// at least every this many events otherwise.
const PERSIST_EVERY: u64 = 4096;
/// Longest sleep between checks of the stop flag and the ledger's health
/// (commits wake the runner at once).
const IDLE_CHECK: Duration = Duration::from_millis(500);

/// Work that follows committed events.
pub trait Subscriber: Send + Sync + 'static {
    /// Its name: the cursor file `DATA/cursors/<name>` and the thread name.
    fn name(&self) -> &'static str;

    /// Whether events of `kind` interest it; others are passed over
    /// without a call (and without decoding). Default: every kind.
    fn wants(&self, kind: &str) -> bool {
        let _ = kind;
        true
    }

    /// Handles one committed event. Must be idempotent. `Closed` stops the
    /// runner; any other error is logged and retried at the next start.
    fn handle(&self, docket: &Docket, event: &Event) -> Result<()>;

    /// How many events it may handle at once (on that many threads); the
    /// events of one chunk are then handled in any order. Default: 1, in
    /// log order. Asked once, when the subscription starts.
    fn concurrency(&self) -> usize {
        1
    }

    /// Brings the subscriber up to date when there is no trustworthy
    /// cursor (none yet, or one the log contradicts) and returns the first
    /// sequence number still to handle. Default: 0, the whole log again
    /// (handlers are idempotent).
    fn recover(&self, docket: &Docket) -> Result<u64> {
        let _ = docket;
        Ok(0)
    }
}

/// The cursor file of one subscriber.
#[derive(Debug, Clone)]
pub struct Cursor {
    path: PathBuf,
}

impl Cursor {
    /// The cursor of subscriber `name` in data directory `data_dir`.
    pub fn new(data_dir: &Path, name: &str) -> Self {
        Self {
            path: data_dir.join(CURSORS_DIR).join(name),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last sequence number handled, as written (None: no file).
    /// Unvalidated: see [`Cursor::load_checked`].
    pub fn read(&self) -> Result<Option<u64>> {
        let text = match fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LedgerError::io(&self.path, e)),
        };
        text.trim().parse::<u64>().map(Some).map_err(|e| {
            LedgerError::corrupt(
                self.path.display().to_string(),
                format!("not a sequence number ({e})"),
            )
        })
    }

    /// The next sequence number to handle in a log of `len` events, when
    /// the file is present and plausible; None (after a warning when the
    /// file exists) when it must be recovered.
    pub fn load_checked(&self, name: &str, len: u64) -> Option<u64> {
        match self.read() {
            Ok(Some(last)) if last < len => Some(last + 1),
            Ok(Some(last)) => {
                tracing::warn!(
                    "{name}: the cursor says event {last} was handled, but the log has {len} events; resetting it to a safe position"
                );
                None
            }
            Ok(None) => {
                tracing::info!("{name}: no cursor yet; starting from a safe position");
                None
            }
            Err(e) => {
                tracing::warn!("{name}: {e}; resetting the cursor to a safe position");
                None
            }
        }
    }

    /// Durably records that every event before `next` was handled
    /// (`next - 1` is written; for 0, nothing handled, the file is removed).
    pub fn store(&self, next: u64) -> Result<()> {
        // Invariant: the cursor path is DATA/cursors/<name>, so it has a parent.
        let dir = self.path.parent().expect("cursor file has a directory");
        let Some(last) = next.checked_sub(1) else {
            return match fs::remove_file(&self.path) {
                Ok(()) => sync_dir(dir),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(LedgerError::io(&self.path, e)),
            };
        };
        if !dir.exists() {
            fs::create_dir_all(dir).map_err(|e| LedgerError::io(dir, e))?;
            if let Some(data) = dir.parent() {
                sync_dir(data)?;
            }
        }
        static UNIQUE: AtomicU64 = AtomicU64::new(0);
        let tmp = self.path.with_extension(format!(
            "tmp.{}.{}",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::Relaxed)
        ));
        let write = || -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(format!("{last}\n").as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &self.path)
        };
        if let Err(e) = write() {
            let _ = fs::remove_file(&tmp);
            return Err(LedgerError::io(&self.path, e));
        }
        sync_dir(dir)
    }
}

/// Progress of a runner, shared with its thread and its waiters.
#[derive(Debug)]
struct Progress {
    /// The first sequence number not handled yet.
    next: u64,
    /// Events at or after `next` already handled (concurrent handling
    /// finishes out of order).
    done_ahead: BTreeSet<u64>,
    /// The thread is following the log.
    running: bool,
    stop: bool,
}

impl Progress {
    fn handled(&self, seq: u64) -> bool {
        seq < self.next || self.done_ahead.contains(&seq)
    }
}

#[derive(Debug)]
struct Shared {
    progress: Mutex<Progress>,
    /// Notified on every commit, on progress and on stop.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        lock(&self.progress)
    }

    fn notify(&self) {
        let _guard = self.lock();
        self.changed.notify_all();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Marks the runner stopped even if a handler panics.
struct Running(Arc<Shared>);

impl Drop for Running {
    fn drop(&mut self) {
        let mut p = self.0.lock();
        p.running = false;
        drop(p);
        self.0.changed.notify_all();
    }
}

/// One running subscriber: its thread, its progress. Stops (and waits for
/// the event in hand) when stopped or dropped.
pub struct Subscription {
    name: &'static str,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("name", &self.name)
            .field("next", &self.next())
            .finish()
    }
}

/// The runner's state between events.
struct Runner {
    name: &'static str,
    subscriber: Arc<dyn Subscriber>,
    docket: Docket,
    cursor: Cursor,
    shared: Arc<Shared>,
    /// The next sequence number as last written to the cursor file.
    persisted: u64,
    /// The first event whose handling failed: the cursor stays before it.
    first_failure: Option<u64>,
    /// [`Subscriber::concurrency`], asked once (it may cost system calls,
    /// and the runner wakes on every commit).
    concurrency: usize,
}

impl Runner {
    /// Handles events `from..to` (reading them in chunks); false when the
    /// runner must stop (stopped, or the ledger closed).
    fn run_range(&mut self, mut from: u64, to: u64) -> bool {
        while from < to {
            let upto = (from + CHUNK).min(to);
            let events = match self.docket.ledger().events(from, upto) {
                Ok(e) => e,
                Err(LedgerError::Closed(_)) => return false,
                Err(e) => {
                    // Retried after a pause (the log core fails stop on
                    // storage errors, which ends the runner).
                    tracing::warn!("{}: reading events {from}..{upto}: {e}", self.name);
                    std::thread::sleep(IDLE_CHECK);
                    return true;
                }
            };
            // Invariant: a non-empty range reads at least one event, else
            // the log shrank under us (it never does); stop rather than spin.
            let Some(last) = events.last().map(|e| e.seq) else {
                return false;
            };
            let wanted: Vec<&Event> = events
                .iter()
                .filter(|e| self.subscriber.wants(&e.kind))
                .collect();
            let unhandled = self.handle_all(&wanted);
            let next = unhandled.unwrap_or(last + 1);
            {
                let mut p = self.shared.lock();
                p.next = next;
                p.done_ahead = p.done_ahead.split_off(&next);
            }
            self.shared.changed.notify_all();
            from = next;
            if unhandled.is_some() {
                return false;
            }
            if !wanted.is_empty() || from - self.persisted >= PERSIST_EVERY {
                self.persist();
            }
        }
        true
    }

    /// Handles `events` (in log order, or on up to
    /// [`Subscriber::concurrency`] threads); returns the first one left
    /// unhandled when the runner must stop.
    fn handle_all(&mut self, events: &[&Event]) -> Option<u64> {
        if events.is_empty() {
            return None;
        }
        let workers = self.concurrency.clamp(1, events.len());
        let position = AtomicUsize::new(0);
        let halt = AtomicBool::new(false);
        let unhandled: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());
        let failed: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());
        let work = || {
            loop {
                let i = position.fetch_add(1, Ordering::Relaxed);
                let Some(event) = events.get(i) else {
                    return;
                };
                if halt.load(Ordering::Relaxed) || self.shared.lock().stop {
                    halt.store(true, Ordering::Relaxed);
                    lock(&unhandled).insert(event.seq);
                    continue;
                }
                match self.subscriber.handle(&self.docket, event) {
                    Ok(()) => {}
                    Err(LedgerError::Closed(m)) => {
                        tracing::info!("{}: the ledger closed: {m}", self.name);
                        halt.store(true, Ordering::Relaxed);
                        lock(&unhandled).insert(event.seq);
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(
                            "{}: event {}: {e} (retried at the next start)",
                            self.name,
                            event.seq
                        );
                        lock(&failed).insert(event.seq);
                    }
                }
                self.shared.lock().done_ahead.insert(event.seq);
                self.shared.changed.notify_all();
            }
        };
        if workers == 1 {
            work();
        } else {
            std::thread::scope(|scope| {
                for _ in 0..workers {
                    scope.spawn(work);
                }
            });
        }
        if let Some(&f) = lock(&failed).first() {
            self.first_failure = Some(self.first_failure.map_or(f, |x| x.min(f)));
        }
        lock(&unhandled).first().copied()
    }

    /// Writes the cursor: every event before it was handled, and none
    /// failed (a failed event is retried at the next start).
    fn persist(&mut self) {
        let next = self.shared.lock().next;
        let next = self.first_failure.map_or(next, |f| f.min(next));
        if next == self.persisted {
            return;
        }
        match self.cursor.store(next) {
            Ok(()) => self.persisted = next,
            Err(e) => tracing::warn!("{}: writing the cursor: {e}", self.name),
        }
    }

    /// Follows the log until stopped or the ledger closes.
    fn follow(mut self) {
        let _running = Running(Arc::clone(&self.shared));
        let ledger = self.docket.ledger().clone();
        loop {
            let next = {
                let mut p = self.shared.lock();
                loop {
                    if p.stop || ledger.failure().is_some() {
                        drop(p);
                        self.persist();
                        return;
                    }
                    if ledger.len() > p.next {
                        break p.next;
                    }
                    p = self
                        .shared
                        .changed
                        .wait_timeout(p, IDLE_CHECK)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                }
            };
            if !self.run_range(next, ledger.len()) {
                self.persist();
                return;
            }
        }
    }
}

impl Subscription {
    /// Starts `subscriber` on `docket`'s ledger: validates its cursor (or
    /// recovers), catches up to the current length, then follows new
    /// commits on a thread named `docket-<name>`. `docket` must not own
    /// subscriptions itself (the runner holds it).
    pub fn start(docket: Docket, subscriber: Arc<dyn Subscriber>) -> Result<Subscription> {
        let name = subscriber.name();
        let ledger = docket.ledger().clone();
        let cursor = Cursor::new(ledger.dir(), name);
        let len = ledger.len();
        let next = match cursor.load_checked(name, len) {
            Some(next) => next,
            None => {
                let next = subscriber.recover(&docket)?.min(len);
                if let Err(e) = cursor.store(next) {
                    tracing::warn!("{name}: writing the cursor: {e}");
                }
                next
            }
        };
        let shared = Arc::new(Shared {
            progress: Mutex::new(Progress {
                next,
                done_ahead: BTreeSet::new(),
                running: true,
                stop: false,
            }),
            changed: Condvar::new(),
        });
        {
            let wake = Arc::clone(&shared);
            ledger.on_commit(move |_| wake.notify());
        }
        let concurrency = subscriber.concurrency();
        let mut runner = Runner {
            name,
            subscriber,
            docket,
            cursor,
            shared: Arc::clone(&shared),
            persisted: next,
            first_failure: None,
            concurrency,
        };
        // Catch up before returning: what the last process owed is done.
        let started = Instant::now();
        if !runner.run_range(next, len) {
            runner.persist();
            shared.lock().running = false;
            return Ok(Subscription {
                name,
                shared,
                thread: Mutex::new(None),
            });
        }
        runner.persist();
        if len > next {
            tracing::info!(
                "{name}: caught up on events {next}..{len} in {:?}",
                started.elapsed()
            );
        }
        let thread = std::thread::Builder::new()
            .name(format!("docket-{name}"))
            .spawn(move || runner.follow())
            .map_err(|e| LedgerError::io(format!("docket-{name} thread"), e))?;
        Ok(Subscription {
            name,
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The subscriber's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The first sequence number not handled yet.
    pub fn next(&self) -> u64 {
        self.shared.lock().next
    }

    /// Whether the runner still follows the log.
    pub fn is_running(&self) -> bool {
        self.shared.lock().running
    }

    /// Waits until event `seq` was handled, at most `timeout`; false when
    /// it was not (the runner is slow, or stopped).
    pub fn wait_handled(&self, seq: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut p = self.shared.lock();
        loop {
            if p.handled(seq) {
                return true;
            }
            let now = Instant::now();
            if !p.running || now >= deadline {
                return false;
            }
            p = self
                .shared
                .changed
                .wait_timeout(p, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// Stops the runner after the event in hand and waits for it.
    pub fn stop(&self) {
        {
            let mut p = self.shared.lock();
            p.stop = true;
        }
        self.shared.changed.notify_all();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(t) = thread
            && t.join().is_err()
        {
            tracing::error!("{}: the subscriber thread panicked", self.name);
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trip_and_validation() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cursor::new(dir.path(), "probe");
        assert_eq!(c.read().unwrap(), None);
        assert_eq!(c.load_checked("probe", 10), None);
        c.store(0).unwrap();
        assert_eq!(c.read().unwrap(), None, "nothing handled: nothing written");
        c.store(7).unwrap();
        assert_eq!(c.read().unwrap(), Some(6));
        c.store(0).unwrap();
        assert_eq!(c.read().unwrap(), None, "reset to nothing handled");
        c.store(7).unwrap();
        assert_eq!(c.read().unwrap(), Some(6));
        assert_eq!(c.load_checked("probe", 10), Some(7));
        assert_eq!(c.load_checked("probe", 7), Some(7));
        // A cursor beyond the log is not trusted.
        assert_eq!(c.load_checked("probe", 6), None);
        fs::write(c.path(), "garbage").unwrap();
        assert!(c.read().is_err());
        assert_eq!(c.load_checked("probe", 10), None);
        // No temporary files are left behind.
        let names: Vec<_> = fs::read_dir(dir.path().join(CURSORS_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("probe")]);
    }
}
