//! Followers: a log opened read-only over a store that another process
//! sequences (a shared database), and its promotion to sequencer in place.
//!
//! A follower runs the same anchored open check as any open, then folds
//! what the sequencer commits: every poll it reads the events up to the
//! next stored checkpoint, checks them exactly as the open checks the tail
//! (contiguous, chained, time never decreasing, each hashing to its stored
//! leaf) and their root against that signed checkpoint, folds them into the
//! readers' state and publishes the new length (tails and `on_commit`
//! listeners wake as on a sequencer). Reads, proofs and checkpoints come
//! from the store, clamped to what was folded. Writes are refused with
//! [`LogError::Closed`] naming where the sequencer is.
//!
//! Which process sequences is decided outside the log, by an [`Election`]
//! (for the PostgreSQL store: an advisory lock and a fencing token, see the
//! `docket-store-pg` crate). When the election is won, the follower catches
//! up on everything committed before the win, re-runs the anchored open
//! check against the store, anchors a committed but unanchored tail with
//! the checkpoint stored for it (never a second root for a size), and
//! starts the write path: from then on it is a sequencer like any other.
//! A promotion never goes back: a sequencer that loses its lease fails
//! stop (its store refuses the commit) and is restarted as a follower.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::{
    CheckedOpen, Handle, Inner, Log, LogOptions, Metrics, WritePosition, check_open, lock,
    run_scrub, sign_checkpoint, start_write_path, write_snapshots,
};
use crate::checkpoint::{self, NoteVerifier};
use crate::error::{LogError, Result};
use crate::event::Event;
use crate::machine::StateMachine;
use crate::merkle::{self, Frontier, Hash};
use crate::store::{CommitBatch, Store};
use crate::verify::{Opened, Trust};

/// What a follower's [`Election`] says at one poll.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Campaign {
    /// Another process sequences: stay a follower. `reason` is what writes
    /// to this follower are told (e.g. where the sequencer is).
    Follow { reason: String },
    /// This process now holds the store's write lease (and the store fences
    /// its commits with it): promote.
    Lead,
}

/// Decides, at every poll of a follower, whether it becomes the sequencer.
pub trait Election: Send + Sync + 'static {
    /// One attempt to win the store's write lease. An error is logged and
    /// the next poll tries again.
    fn campaign(&self) -> Result<Campaign>;

    /// How often the follower polls the store for new events and campaigns.
    fn poll_interval(&self) -> Duration {
        Duration::from_millis(200)
    }
}

/// The follower's position in the shared log (everything it folded).
pub(super) struct FollowerState {
    frontier: Frontier,
    prev_hash: Hash,
    last_time: u64,
    /// What writes are told.
    reason: String,
}

/// Events a follower folds per step (between two commit boundaries when it
/// can), so catching up holds the readers' write lock only briefly.
const FOLLOW_STEP: u64 = 8192;

/// The refusal a write to a follower gets, if this log is one.
pub(super) fn refusal<M>(inner: &Inner<M>) -> Option<String> {
    lock(&inner.follower).as_ref().map(|f| f.reason.clone())
}

impl<M: StateMachine> Log<M> {
    /// Opens the ledger under `dir` over `store` as a read-only follower of
    /// the process that sequences the store: the anchored open check runs
    /// as for any open, but nothing is written (no anchor, no snapshot).
    ///
    /// With an `election`, a thread polls every
    /// [`Election::poll_interval`]: it folds what the sequencer committed
    /// ([`Log::follow`]) and campaigns; when the election is won the log
    /// promotes itself ([`Log::promote`]). Without one, the caller polls.
    /// `dir` holds `ledger.json` and the ledger key, needed to check
    /// checkpoints and to sequence after a promotion.
    pub fn open_follower(
        dir: &Path,
        store: Arc<dyn Store>,
        options: LogOptions,
        election: Option<Box<dyn Election>>,
    ) -> Result<Log<M>> {
        let CheckedOpen {
            config,
            ledger_key,
            verifier: _,
            opened,
            len,
            statement_filter,
        } = check_open::<M>(dir, store.as_ref()).map_err(|e| match e {
            LogError::NotFound { .. } => LogError::NotFound {
                what: format!("a ledger in {} (run `docket init`)", dir.display()),
            },
            other => other,
        })?;
        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            store,
            ledger_key,
            origin: config.origin,
            state: RwLock::new(opened.state),
            open_report: opened.report,
            committed: Mutex::new(len),
            committed_changed: Condvar::new(),
            committed_len: AtomicU64::new(len),
            visible_len: AtomicU64::new(len),
            statement_filter,
            queue: Mutex::new(None),
            committer: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
            listeners: Mutex::new(Vec::new()),
            failure_listeners: Mutex::new(Vec::new()),
            scrub: Mutex::new(None),
            follower: Mutex::new(Some(FollowerState {
                frontier: opened.frontier,
                prev_hash: opened.prev_hash,
                last_time: opened.last_time,
                reason: "this node is a read-only follower; writes go to the sequencer".into(),
            })),
            stopping: std::sync::atomic::AtomicBool::new(false),
            unrepaired_at: Mutex::new(None),
            verified_head: Mutex::new(None),
            metrics: Metrics::default(),
            options,
        });
        if opened.scrub_below > 0 && inner.options.background_scrub {
            let scrub_inner = Arc::clone(&inner);
            let upto = opened.scrub_below;
            let scrubber = std::thread::Builder::new()
                .name("docket-scrub".into())
                .spawn(move || run_scrub(&scrub_inner, upto))
                .map_err(|e| LogError::io("scrub thread", e))?;
            *lock(&inner.scrub) = Some(scrubber);
        }
        if let Some(election) = election {
            let follow_inner = Arc::clone(&inner);
            let follower = std::thread::Builder::new()
                .name("docket-follow".into())
                .spawn(move || run_follower(&follow_inner, election.as_ref()))
                .map_err(|e| LogError::io("follower thread", e))?;
            lock(&inner.committer).push(follower);
        }
        let handle = Arc::new(Handle {
            inner: Arc::clone(&inner),
        });
        Ok(Log {
            inner,
            _handle: handle,
        })
    }

    /// Whether this log is a read-only follower (not promoted).
    pub fn is_follower(&self) -> bool {
        lock(&self.inner.follower).is_some()
    }

    /// Sets what writes to this follower are told (e.g. the address of the
    /// sequencer). No effect on a sequencer.
    pub fn set_follower_reason(&self, reason: impl Into<String>) {
        if let Some(f) = lock(&self.inner.follower).as_mut() {
            f.reason = reason.into();
        }
    }

    /// Folds the events the sequencer committed since the last call, up to
    /// the latest stored checkpoint, and returns the new length. Checks each
    /// event as the open checks the tail and the root against the signed
    /// checkpoint; damage is [`LogError::Corrupt`] naming where (nothing of
    /// the damaged step is folded). On a sequencer it returns the length.
    pub fn follow(&self) -> Result<u64> {
        follow(&self.inner)
    }

    /// Turns this follower into the sequencer of its store, in place. The
    /// caller must hold the store's write lease (its commits are fenced):
    /// the follower catches up on everything committed before, re-runs the
    /// anchored open check against the store, anchors a committed but
    /// unanchored tail with the checkpoint stored for it, and starts the
    /// write path. On a sequencer it does nothing.
    pub fn promote(&self) -> Result<()> {
        promote(&self.inner)
    }
}

/// The follower thread: fold, campaign, promote when elected.
fn run_follower<M: StateMachine>(inner: &Arc<Inner<M>>, election: &dyn Election) {
    let poll = election.poll_interval();
    let mut last_warning: Option<Instant> = None;
    let mut warn = |what: &str, e: &LogError| {
        // A database that is away is retried every poll: say so at most
        // every ten seconds.
        if last_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
            tracing::warn!("follower: {what}: {e}");
            last_warning = Some(Instant::now());
        }
    };
    while !inner.stopping.load(Ordering::Acquire) {
        match follow(inner) {
            Ok(_) => {}
            Err(e @ LogError::Corrupt { .. }) => {
                fail(inner, &format!("damage found while following the log: {e}"));
                return;
            }
            Err(e) => warn("reading new events", &e),
        }
        match election.campaign() {
            Ok(Campaign::Lead) => {
                if inner.stopping.load(Ordering::Acquire) {
                    return;
                }
                match promote(inner) {
                    Ok(()) => {
                        tracing::info!(
                            len = inner.committed_len.load(Ordering::Acquire),
                            "this node is now the sequencer"
                        );
                    }
                    Err(e) => fail(inner, &format!("promotion to sequencer failed: {e}")),
                }
                return;
            }
            Ok(Campaign::Follow { reason }) => {
                if let Some(f) = lock(&inner.follower).as_mut() {
                    f.reason = reason;
                }
            }
            Err(e) => warn("campaigning for the sequencer lease", &e),
        }
        // Sleep in short steps so a close is never kept waiting.
        let until = Instant::now() + poll;
        while Instant::now() < until && !inner.stopping.load(Ordering::Acquire) {
            std::thread::sleep(poll.min(Duration::from_millis(50)));
        }
    }
}

/// Fail-stop of a follower (damage, or a failed promotion): the reason is
/// recorded, listeners hear it, waiters wake; reads keep showing what was
/// folded.
fn fail<M>(inner: &Inner<M>, msg: &str) {
    tracing::error!("{msg}");
    *lock(&inner.failure) = Some(msg.to_string());
    drop(lock(&inner.queue).take());
    for l in lock(&inner.failure_listeners).iter() {
        l(msg);
    }
    inner.committed_changed.notify_all();
}

fn follow<M: StateMachine>(inner: &Inner<M>) -> Result<u64> {
    let verifier = NoteVerifier::new(&inner.origin, inner.ledger_key.verifying_key())?;
    loop {
        match follow_step(inner, &verifier)? {
            // Listeners run without the follower's lock held (one may ask
            // whether this log is a follower).
            Some(size) => {
                for l in lock(&inner.listeners).iter() {
                    l(size);
                }
            }
            None => return Ok(inner.committed_len.load(Ordering::Acquire)),
        }
    }
}

/// Folds the events up to the next commit boundary (within
/// [`FOLLOW_STEP`] events when there is one); returns the new length, or
/// None when there is nothing new (or this log is no longer a follower).
fn follow_step<M: StateMachine>(inner: &Inner<M>, verifier: &NoteVerifier) -> Result<Option<u64>> {
    let mut guard = lock(&inner.follower);
    let Some(position) = guard.as_mut() else {
        return Ok(None);
    };
    let len = inner.committed_len.load(Ordering::Acquire);
    let target = match inner.store.checkpoints(len + 1, len + FOLLOW_STEP)?.pop() {
        Some(c) => Some(c),
        None => inner
            .store
            .checkpoint(None)?
            .filter(|(size, _)| *size > len),
    };
    let Some((size, note)) = target else {
        return Ok(None);
    };
    let cp = checkpoint::open_note(&note, verifier).map_err(|e| {
        LogError::corrupt(
            format!("checkpoint {size}"),
            format!("the stored checkpoint does not verify: {e}"),
        )
    })?;
    if cp.size != size {
        return Err(LogError::corrupt(
            format!("checkpoint {size}"),
            format!("the checkpoint stored under size {size} says {}", cp.size),
        ));
    }
    let step = read_step(inner.store.as_ref(), position, len, size)?;
    if step.frontier.root() != cp.root {
        return Err(LogError::corrupt(
            format!("events 0..{size}"),
            format!(
                "the root of the first {size} events ({}) differs from the signed checkpoint's ({})",
                hex::encode(step.frontier.root()),
                hex::encode(cp.root)
            ),
        ));
    }
    {
        let mut state = inner
            .state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for event in &step.events {
            state.apply(event).map_err(|e| {
                LogError::corrupt(
                    format!("event {}", event.seq),
                    format!("a committed event does not fold: {e}"),
                )
            })?;
        }
    }
    if let Some(filter) = &inner.statement_filter {
        for d in &step.digests {
            filter.insert(d);
        }
    }
    position.frontier = step.frontier;
    position.prev_hash = step.prev_hash;
    position.last_time = step.last_time;
    inner.visible_len.store(size, Ordering::Release);
    {
        let mut c = lock(&inner.committed);
        *c = size;
        inner.committed_len.store(size, Ordering::Release);
    }
    inner.committed_changed.notify_all();
    Ok(Some(size))
}

/// Events `len..size` read and checked, not yet folded.
struct Step {
    events: Vec<Event>,
    digests: Vec<Hash>,
    frontier: Frontier,
    prev_hash: Hash,
    last_time: u64,
}

/// Reads and checks events `from..to` after `position` (which describes
/// `0..from`): contiguous, each decoding canonically, hashing to its stored
/// leaf, naming its predecessor's leaf hash, with time never decreasing.
fn read_step(store: &dyn Store, position: &FollowerState, from: u64, to: u64) -> Result<Step> {
    let mut step = Step {
        events: Vec::with_capacity(usize::try_from(to - from).unwrap_or(0)),
        digests: Vec::new(),
        frontier: position.frontier.clone(),
        prev_hash: position.prev_hash,
        last_time: position.last_time,
    };
    let raw = store.event_range(from, to)?;
    let stored: HashMap<u64, Hash> = store.leaf_hashes(from, to)?.into_iter().collect();
    let mut next = from;
    for (seq, bytes) in raw {
        let at = format!("event {next}");
        if seq != next {
            return Err(LogError::corrupt(
                at,
                format!("the event is missing (the next stored event is {seq})"),
            ));
        }
        let leaf = merkle::leaf_hash(&bytes);
        if stored.get(&seq) != Some(&leaf) {
            return Err(LogError::corrupt(
                at,
                "the stored Merkle leaf differs from the hash of the stored event bytes",
            ));
        }
        let event = Event::decode(&bytes).map_err(|e| LogError::corrupt(&at, e.to_string()))?;
        if event.seq != seq {
            return Err(LogError::corrupt(
                at,
                format!("the event stored at {seq} says it is {}", event.seq),
            ));
        }
        if event.prev_hash != step.prev_hash {
            return Err(LogError::corrupt(
                at,
                "prev_hash is not the leaf hash of the previous event",
            ));
        }
        if event.recorded_at_ms < step.last_time {
            return Err(LogError::corrupt(
                at,
                "recorded_at_ms is before the previous event's",
            ));
        }
        step.frontier.push(leaf);
        step.prev_hash = leaf;
        step.last_time = event.recorded_at_ms;
        step.digests.push(event.statement().digest());
        step.events.push(event);
        next += 1;
    }
    if next != to {
        return Err(LogError::corrupt(
            format!("event {next}"),
            format!("events {next}..{to} are missing (a checkpoint of size {to} is stored)"),
        ));
    }
    Ok(step)
}

fn promote<M: StateMachine>(inner: &Arc<Inner<M>>) -> Result<()> {
    if lock(&inner.follower).is_none() {
        return Ok(());
    }
    // 1. Everything the previous sequencer committed before our lease is in
    // the store (the lease serialises after its last commit): fold it.
    follow(inner)?;
    let len = inner.committed_len.load(Ordering::Acquire);
    // 2. The anchored open check, against the store, as at every open.
    let verifier = NoteVerifier::new(&inner.origin, inner.ledger_key.verifying_key())?;
    let public = inner.ledger_key.verifying_key();
    let opened: Opened<M> = crate::verify::open_check(
        inner.store.as_ref(),
        Trust {
            checkpoints: &verifier,
            snapshots: &public,
        },
        Some(len),
    )?;
    // Lock order: the queue, then the follower (as `Log::submit` does).
    let mut queue = lock(&inner.queue);
    let mut guard = lock(&inner.follower);
    let Some(position) = guard.as_ref() else {
        return Ok(());
    };
    let len = position.frontier.size();
    if opened.frontier.size() != len || opened.frontier.root() != position.frontier.root() {
        return Err(LogError::corrupt(
            format!("events 0..{}", opened.frontier.size()),
            format!(
                "the store holds {} events after the follower folded {len} and the lease was won: \
                 the log changed under a fenced store",
                opened.frontier.size()
            ),
        ));
    }
    // 3. A committed tail the previous sequencer never anchored: anchor it
    // with the checkpoint stored for it (never a second root for a size).
    let root = position.frontier.root();
    if len > opened.report.anchor_size {
        let stored = inner
            .store
            .checkpoint(Some(len))?
            .map(|(_, note)| note)
            .filter(|note| checkpoint::open_note(note, &verifier).is_ok_and(|cp| cp.root == root));
        let note = match stored {
            Some(note) => note,
            None => {
                let note = sign_checkpoint(inner, len, root);
                inner.store.commit(&CommitBatch {
                    checkpoint: Some((len, note.clone())),
                    ..Default::default()
                })?;
                note
            }
        };
        inner.store.put_anchor(&note)?;
    }
    if opened.rewrite_snapshots {
        let state = inner
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        write_snapshots(inner, &state, len, root)?;
    }
    // 4. The write path, exactly as `open_with_store` starts it.
    let working = inner
        .state
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if inner.stopping.load(Ordering::Acquire) {
        return Err(LogError::Closed("the ledger was closed".into()));
    }
    let (tx, threads) = start_write_path(
        inner,
        WritePosition {
            working,
            frontier: position.frontier.clone(),
            prev_hash: position.prev_hash,
            last_time: position.last_time,
        },
    )?;
    lock(&inner.committer).extend(threads);
    *queue = Some(tx);
    *guard = None;
    Ok(())
}
