//! The tile store's derived-data thread: the work a commit owes only to
//! speed or to files that can be recomputed, done after the commit returns.
//!
//! * **Index inserts.** The two on-disk hash indexes (statement digest →
//!   commit-log offset, checkpoint size → record) are derived: every hit is
//!   checked against the commit log, and an open re-indexes every record
//!   past their synced watermark. A commit queues its record here; until the
//!   thread has inserted it, lookups answer from the queued record itself,
//!   so a statement is findable from the moment its commit returns, exactly
//!   as before. The thread syncs the tables (and advances their watermark)
//!   every [`INDEX_SYNC_EVERY`] events, and on close. A sync and a table's
//!   growth (a rewrite at four times the size) run with the lock released,
//!   so lookups never wait on them.
//! * **Full hash tiles.** A full tile is a function of the bundle (level 0)
//!   or of the tiles below (level L); a missing one is recomputed and
//!   rewritten when read ([`TileStore::full_tile`]). A commit queues the
//!   tiles it completes; readers get them from the queue until their file
//!   is in place (written atomically: temp file, fsync, rename, directory
//!   fsync).
//!
//! Both used to run on the store's commit path: a quarter of its time
//! under 64 writers (a `pread` and a `pwrite` per statement, two fsyncs
//! and a rename per 256 events). A failure here is a storage failure like
//! any other: it is kept, and the next commit returns it (fail-stop).

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::{CommitRecord, DiskTable, INDEX_SYNC_EVERY, TileCache, index_record, write_tile_file};
use crate::error::{LogError, Result};
use crate::merkle::Hash;

/// Work queued by a commit, done in order.
enum Job {
    /// Insert the record's statements and checkpoint into the indexes.
    Index(CommitRecord),
    /// Write full hash tile `(level, index)`.
    Tile(u8, u64),
}

/// The indexes and what is queued for them, under one lock.
pub(super) struct Indexes {
    pub(super) statements: DiskTable,
    pub(super) checkpoints: DiskTable,
    jobs: VecDeque<Job>,
    /// Statement digest → sequence number, for queued records.
    queued_statements: HashMap<Hash, u64>,
    /// Checkpoint size → checkpoint, for queued records.
    queued_checkpoints: HashMap<u64, (u64, String)>,
    /// Events inserted since the tables were last synced.
    since_sync: u64,
    /// Commit-log offset up to which every record is in the tables.
    pub(super) indexed_end: u64,
    /// The first failure of the thread; later commits return it.
    failed: Option<LogError>,
    stop: bool,
}

impl Indexes {
    /// The seq of a queued statement (`None`: look in the table).
    pub(super) fn queued_statement(&self, digest: &Hash) -> Option<u64> {
        self.queued_statements.get(digest).copied()
    }

    /// A queued checkpoint of `size` (`None`: look in the table).
    pub(super) fn queued_checkpoint(&self, size: u64) -> Option<&(u64, String)> {
        self.queued_checkpoints.get(&size)
    }

    /// Records `e` (a damaged index found by a lookup) as the derived
    /// data's failure: every later commit is refused with it.
    pub(super) fn fail(&mut self, e: &LogError) {
        fail(self, e);
    }
}

struct Shared {
    indexes: Mutex<Indexes>,
    /// Jobs queued, progress made, stop asked.
    changed: Condvar,
    /// Full tiles queued for writing, readable until their file is in place.
    tiles: Mutex<TileCache>,
    root: PathBuf,
    commits: File,
    commits_path: PathBuf,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Indexes> {
        self.indexes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn tiles(&self) -> MutexGuard<'_, TileCache> {
        self.tiles.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The derived-data thread and what it shares with the store.
pub(super) struct Derived {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Derived {
    /// Starts the thread over the indexes as opened; the caller catches
    /// them up (and sets `indexed_end`) before it queues anything.
    /// `commits` is a handle of the commit log, for checking index hits.
    pub(super) fn start(
        statements: DiskTable,
        checkpoints: DiskTable,
        root: PathBuf,
        commits: File,
        commits_path: PathBuf,
    ) -> Result<Self> {
        let shared = Arc::new(Shared {
            indexes: Mutex::new(Indexes {
                statements,
                checkpoints,
                jobs: VecDeque::new(),
                queued_statements: HashMap::new(),
                queued_checkpoints: HashMap::new(),
                since_sync: 0,
                indexed_end: 0,
                failed: None,
                stop: false,
            }),
            changed: Condvar::new(),
            tiles: Mutex::new(HashMap::new()),
            root,
            commits,
            commits_path,
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("docket-tile-derived".into())
            .spawn(move || run(&worker))
            .map_err(|e| LogError::io("tile store derived-data thread", e))?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// The indexes, locked (lookups; the catch-up at open).
    pub(super) fn indexes(&self) -> MutexGuard<'_, Indexes> {
        self.shared.lock()
    }

    /// The thread's first failure, if any (the same error again each time
    /// it is asked): the store must not commit on.
    pub(super) fn failure(&self) -> Option<LogError> {
        self.shared.lock().failed.as_ref().map(again)
    }

    /// Queues a durable commit record for the indexes; its statements and
    /// checkpoint are findable from now on.
    pub(super) fn queue_record(&self, rec: CommitRecord) {
        self.queue_record_quietly(rec);
        self.wake();
    }

    /// [`Self::queue_record`] without waking the thread: the caller wakes
    /// it ([`Self::wake`]) once the commit's callers are answered, so that
    /// its work does not take a core before their wake-ups.
    pub(super) fn queue_record_quietly(&self, rec: CommitRecord) {
        let mut ix = self.shared.lock();
        for (digest, seq) in &rec.statements {
            ix.queued_statements.insert(*digest, *seq);
        }
        if let Some(c) = &rec.checkpoint {
            ix.queued_checkpoints.insert(c.0, c.clone());
        }
        ix.jobs.push_back(Job::Index(rec));
    }

    /// Wakes the thread for the jobs queued quietly.
    pub(super) fn wake(&self) {
        self.shared.changed.notify_all();
    }

    /// Queues full tile `(level, index)` for writing; readable from now on.
    pub(super) fn queue_tile(&self, level: u8, index: u64, hashes: Vec<Hash>) {
        self.shared.tiles().insert((level, index), Arc::new(hashes));
        self.shared.lock().jobs.push_back(Job::Tile(level, index));
        self.shared.changed.notify_all();
    }

    /// A full tile queued for writing, if it is.
    pub(super) fn queued_tile(&self, level: u8, index: u64) -> Option<Arc<Vec<Hash>>> {
        self.shared.tiles().get(&(level, index)).cloned()
    }

    /// Finishes the queue, stops the thread and syncs the indexes with
    /// their watermark (best effort: they are derived).
    pub(super) fn close(&mut self) {
        // Once: the store closes it before its lock is released, and the
        // drop of this value comes after.
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        if thread.join().is_err() {
            tracing::warn!("tile store: the derived-data thread panicked");
        }
        let mut ix = self.shared.lock();
        // Watermarks only move forward: a store whose open failed before
        // its indexes caught up leaves them as they were.
        if ix.failed.is_none() && ix.jobs.is_empty() {
            let end = ix.indexed_end;
            if end > ix.statements.watermark {
                let _ = ix.statements.sync(end);
            }
            if end > ix.checkpoints.watermark {
                let _ = ix.checkpoints.sync(end);
            }
        }
    }
}

impl Drop for Derived {
    fn drop(&mut self) {
        self.close();
    }
}

/// The thread: jobs in order until stopped with nothing queued. After a
/// failure it does no more work (the store fails stop).
fn run(shared: &Shared) {
    loop {
        let mut ix = shared.lock();
        while (ix.jobs.is_empty() || ix.failed.is_some()) && !ix.stop {
            ix = shared
                .changed
                .wait(ix)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if ix.failed.is_some() {
            return;
        }
        let Some(job) = ix.jobs.pop_front() else {
            // Stopped with nothing queued.
            return;
        };
        match job {
            Job::Index(rec) => {
                // A table that must grow first grows with the lock
                // released: a rewrite of the whole table (seconds at
                // millions of events) must not stall lookups, and so the
                // commits waiting on them.
                ix = match grow_unlocked(shared, ix, &rec) {
                    Ok(ix) => ix,
                    Err((mut ix, e)) => {
                        fail(&mut ix, &e);
                        continue;
                    }
                };
                // Inserted and un-queued under one lock: a lookup sees the
                // record in one place or the other.
                let done = index_record(
                    &mut ix.statements,
                    &rec,
                    true,
                    &shared.commits,
                    &shared.commits_path,
                )
                .and_then(|()| {
                    index_record(
                        &mut ix.checkpoints,
                        &rec,
                        false,
                        &shared.commits,
                        &shared.commits_path,
                    )
                });
                match done {
                    Ok(()) => {
                        for (digest, _) in &rec.statements {
                            ix.queued_statements.remove(digest);
                        }
                        if let Some(c) = &rec.checkpoint {
                            ix.queued_checkpoints.remove(&c.0);
                        }
                        ix.indexed_end = rec.end;
                        ix.since_sync += rec.statements.len() as u64 + 1;
                        if ix.since_sync >= INDEX_SYNC_EVERY {
                            ix.since_sync = 0;
                            ix = sync_unlocked(shared, ix);
                        }
                    }
                    Err(e) => fail(&mut ix, &e),
                }
                drop(ix);
            }
            Job::Tile(level, index) => {
                drop(ix);
                let hashes = shared.tiles().get(&(level, index)).cloned();
                if let Some(hashes) = hashes {
                    match write_tile_file(&shared.root, level, index, &hashes) {
                        // Readers find the file from now on.
                        Ok(()) => {
                            shared.tiles().remove(&(level, index));
                        }
                        // Kept queued: readers still get it.
                        Err(e) => fail(&mut shared.lock(), &e),
                    }
                }
            }
        }
        shared.changed.notify_all();
    }
}

/// Grows either table that `rec` would take past half full, with the lock
/// released while the new table is written. Sound because this thread is
/// the tables' only writer: lookups meanwhile read the old table, which
/// holds the same keys (the record itself is still queued), and the new
/// one replaces it under the lock. Returns the lock, retaken.
fn grow_unlocked<'a>(
    shared: &'a Shared,
    mut ix: MutexGuard<'a, Indexes>,
    rec: &CommitRecord,
) -> std::result::Result<MutexGuard<'a, Indexes>, (MutexGuard<'a, Indexes>, LogError)> {
    let statements = rec.statements.len() as u64;
    let checkpoints = u64::from(rec.checkpoint.is_some());
    for (which, more) in [
        (Table::Statements, statements),
        (Table::Checkpoints, checkpoints),
    ] {
        let table = which.of(&mut ix);
        if more == 0 || !table.needs_growth(more) {
            continue;
        }
        let old = match table.handle() {
            Ok(old) => old,
            Err(e) => return Err((ix, e)),
        };
        drop(ix);
        let grown = old.grown();
        ix = shared.lock();
        match grown {
            Ok(next) => *which.of(&mut ix) = next,
            Err(e) => return Err((ix, e)),
        }
    }
    Ok(ix)
}

/// Syncs both tables with the lock released (a sync writes back every page
/// touched since the last one: milliseconds that lookups must not wait
/// for), then records the watermark both reached and syncs that too (so a
/// crash re-indexes at most [`INDEX_SYNC_EVERY`] events). Sound for the
/// same reason as [`grow_unlocked`]: nothing else writes the tables.
fn sync_unlocked<'a>(shared: &'a Shared, ix: MutexGuard<'a, Indexes>) -> MutexGuard<'a, Indexes> {
    let end = ix.indexed_end;
    let (ix, synced) = sync_both_unlocked(shared, ix);
    let mut ix = ix;
    if ix.failed.is_some() {
        // A lookup found a table damaged meanwhile and cleared its header
        // (so that the next open rebuilds it): record nothing over that.
        return ix;
    }
    let recorded = synced.and_then(|()| {
        ix.statements.record_watermark(end)?;
        ix.checkpoints.record_watermark(end)
    });
    let (mut ix, done) = match recorded {
        // The headers, written after the slots they vouch for are durable.
        Ok(()) => sync_both_unlocked(shared, ix),
        Err(e) => (ix, Err(e)),
    };
    if let Err(e) = done {
        fail(&mut ix, &e);
    }
    ix
}

/// `fdatasync` of both tables through second handles, the lock released
/// meanwhile; returns it retaken, with the outcome.
fn sync_both_unlocked<'a>(
    shared: &'a Shared,
    ix: MutexGuard<'a, Indexes>,
) -> (MutexGuard<'a, Indexes>, Result<()>) {
    let handles = ix
        .statements
        .handle()
        .and_then(|s| Ok((s, ix.checkpoints.handle()?)));
    drop(ix);
    let synced = handles.and_then(|(s, c)| {
        s.sync_slots()?;
        c.sync_slots()
    });
    (shared.lock(), synced)
}

/// One of the two indexes.
#[derive(Clone, Copy)]
enum Table {
    Statements,
    Checkpoints,
}

impl Table {
    fn of(self, ix: &mut Indexes) -> &mut DiskTable {
        match self {
            Self::Statements => &mut ix.statements,
            Self::Checkpoints => &mut ix.checkpoints,
        }
    }
}

fn fail(ix: &mut Indexes, e: &LogError) {
    tracing::error!("tile store: writing derived data failed: {e}");
    if ix.failed.is_none() {
        ix.failed = Some(again(e));
    }
}

/// The same error once more (`LogError` holds an `io::Error`, which does
/// not clone): I/O and corruption keep their place and kind.
fn again(e: &LogError) -> LogError {
    match e {
        LogError::Io { path, source } => LogError::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        LogError::Corrupt { location, detail } => LogError::Corrupt {
            location: location.clone(),
            detail: detail.clone(),
        },
        other => LogError::FailedPrecondition(format!(
            "the tile store could not write its derived data: {other}"
        )),
    }
}
