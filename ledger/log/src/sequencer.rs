//! The sequencer: one verify stage and one committer thread doing group
//! commit over a [`Store`], generic over the [`StateMachine`] it feeds.
//! An idle pipeline runs to completion: a stage whose next stage holds no
//! batch does that stage's work itself instead of waking its thread
//! (`Stage`).
//!
//! Write path (see ARCHITECTURE.md): callers hand statements to a bounded
//! queue (back-pressure: a full queue blocks the caller). The verify stage
//! takes everything queued (up to `max_batch` statements) and checks every
//! author signature under the one rule ([`crate::signature`]) on all cores.
//! The committer then, in order and under the state write lock: answers a
//! statement already in the log with its first receipt (only once its
//! signature verified), asks the state machine to admit each new statement
//! against the state so far, assigns sequence number, ledger time and
//! previous hash, encodes the event, pushes its leaf hash into the Merkle
//! frontier and folds it. It signs one checkpoint for the new tree size,
//! writes events, Merkle nodes, statement index and checkpoint in one atomic
//! store commit (flush + fsync), then writes the checkpoint to the anchor
//! (pwrite + fdatasync), or lets the store anchor it with the commit in the
//! same wait ([`Store::commit_anchored`]). Only then does the state lock
//! drop, the committed length advance and every caller of the batch get its
//! receipt. A storage
//! error is fail-stop: the state is reloaded from what is durable and every
//! later append is refused until the ledger is reopened.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockReadGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};

use crate::checkpoint::{self, Checkpoint, NoteVerifier};
use crate::error::{LogError, Result};
use crate::event::{EVENT_FORMAT, Event, Statement};
use crate::keys;
use crate::machine::{AdmitContext, StateMachine};
use crate::merkle::{self, Frontier, Hash, MerkleError};
use crate::store::{CommitBatch, SledStore, Store};
use crate::verify::{FindingKind, OpenReport, Opened, Trust};

// Followers over a shared store, and their promotion to sequencer (see
// `sequencer/follower.rs`).
mod follower;
pub use follower::{Campaign, Election};

/// Tunables of an open ledger.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// Most statements one group commit takes.
    pub max_batch: usize,
    /// Requests that may wait in the queue before callers block.
    pub queue_depth: usize,
    /// Write projection snapshots every this many events (and on close).
    pub snapshot_every: u64,
    /// Re-read, in the background after open, the events the open check
    /// did not (all but the tail); damage found is a fail-stop.
    pub background_scrub: bool,
    /// The on-disk layout of a ledger this creates (an existing ledger
    /// opens with whichever layout it has).
    pub layout: Layout,
}

impl Default for LogOptions {
    fn default() -> Self {
        Self {
            max_batch: 1024,
            queue_depth: 4096,
            snapshot_every: 100_000,
            background_scrub: true,
            layout: Layout::default(),
        }
    }
}

/// The embedded store layouts a data directory can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Layout {
    /// C2SP tlog-tiles on plain files ([`crate::tiles::TileStore`],
    /// `DIR/tiles/`).
    #[default]
    Tiles,
    /// One sled tree ([`SledStore`], `DIR/log/`).
    Sled,
}

impl Layout {
    /// The layout's name, as `--store` and `migrate --layout` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Tiles => "tiles",
            Layout::Sled => "sled",
        }
    }

    /// The store's directory in a data directory (`tiles`, `log`).
    pub fn store_dir(self) -> &'static str {
        match self {
            Layout::Tiles => "tiles",
            Layout::Sled => "log",
        }
    }

    /// The layout of the ledger under `dir`: tiles when `DIR/tiles/`
    /// exists, else sled.
    pub fn of(dir: &Path) -> Layout {
        if dir.join(Layout::Tiles.store_dir()).is_dir() {
            Layout::Tiles
        } else {
            Layout::Sled
        }
    }

    /// Creates an empty store of this layout under `dir`.
    pub fn create_store(self, dir: &Path) -> Result<Arc<dyn Store>> {
        Ok(match self {
            Layout::Tiles => Arc::new(crate::tiles::TileStore::create(dir)?),
            Layout::Sled => Arc::new(SledStore::create(dir)?),
        })
    }
}

/// Opens the embedded store of the ledger under `dir`, whichever layout it
/// has; a store that does not open is reported as corruption naming it.
pub fn open_local_store(dir: &Path) -> Result<Arc<dyn Store>> {
    if ![Layout::Tiles, Layout::Sled]
        .iter()
        .any(|l| dir.join(l.store_dir()).exists())
    {
        return Err(LogError::corrupt(
            "tiles/",
            "the store is missing from the data directory (tiles/, or log/ for a sled ledger)",
        ));
    }
    Ok(match Layout::of(dir) {
        Layout::Tiles => Arc::new(crate::tiles::TileStore::open(dir)?),
        Layout::Sled => Arc::new(open_sled_guarded(dir)?),
    })
}

/// What `init` and `open` read from `DIR/ledger.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LogConfigFile {
    pub origin: String,
    pub ledger_public_key: String,
}

/// The acknowledgement of one durable append.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    pub seq: u64,
    #[serde(with = "hex_hash")]
    pub leaf_hash: Hash,
    pub recorded_at_ms: u64,
    /// True when the statement was already in the log: nothing was appended
    /// and `seq` is the first event that carried it.
    pub duplicate: bool,
}

mod hex_hash {
    pub fn serialize<S: serde::Serializer>(h: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(h))
    }
}

/// Counters for metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    pub appended: AtomicU64,
    pub rejected: AtomicU64,
    pub batches: AtomicU64,
    pub queued: AtomicU64,
    pub commit_micros_total: AtomicU64,
}

/// Where a request's results go, exactly once: a channel the caller waits
/// on, or a callback run on the thread that has them (the publish stage;
/// on a refusal, the caller's own thread).
enum Reply {
    Channel(SyncSender<Vec<Result<Receipt>>>),
    Callback(Box<dyn FnOnce(Vec<Result<Receipt>>) + Send>),
}

impl Reply {
    fn send(self, results: Vec<Result<Receipt>>) {
        match self {
            // The caller may have stopped waiting: nothing to tell.
            Self::Channel(tx) => {
                let _ = tx.send(results);
            }
            Self::Callback(f) => f(results),
        }
    }
}

type CommitListener = Box<dyn Fn(u64) + Send + Sync>;

struct Request {
    statements: Vec<Statement>,
    reply: Reply,
}

type FailureListener = Box<dyn Fn(&str) + Send + Sync>;

struct Inner<M> {
    dir: PathBuf,
    store: Arc<dyn Store>,
    ledger_key: SigningKey,
    origin: String,
    state: RwLock<M>,
    open_report: OpenReport,
    committed: Mutex<u64>,
    committed_changed: Condvar,
    committed_len: AtomicU64,
    /// Events visible to store reads (written by the committer).
    visible_len: AtomicU64,
    /// Every statement digest in the log (Bloom filter).
    /// `None` when the store answers [`Store::statement_seq`] from an
    /// exact index of its own ([`Store::exact_statement_lookup`]).
    statement_filter: Option<StatementFilter>,
    queue: Mutex<Option<SyncSender<Request>>>,
    committer: Mutex<Vec<JoinHandle<()>>>,
    failure: Mutex<Option<String>>,
    listeners: Mutex<Vec<CommitListener>>,
    failure_listeners: Mutex<Vec<FailureListener>>,
    /// The background scrub of the events the open did not re-read.
    scrub: Mutex<Option<JoinHandle<()>>>,
    /// `Some` while this log is a read-only follower of a shared store.
    follower: Mutex<Option<follower::FollowerState>>,
    stopping: std::sync::atomic::AtomicBool,
    /// The durable length at which a proof that did not verify could not be
    /// repaired from the event bytes ([`Log::prove_inclusion`]): no second
    /// rebuild is tried at that length.
    unrepaired_at: Mutex<Option<u64>>,
    /// The last signed checkpoint proofs were checked against, as
    /// `(size, root)`, its signature verified once.
    verified_head: Mutex<Option<(u64, Hash)>>,
    metrics: Metrics,
    options: LogOptions,
}

/// Where a proof that does not verify is reported: the store's Merkle tree.
const MERKLE_TREE: &str = "the stored Merkle tree";

/// An inclusion proof the log checked before returning it
/// ([`Log::prove_inclusion`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvedInclusion {
    pub leaf_index: u64,
    pub tree_size: u64,
    /// The leaf hash of event `leaf_index`.
    pub leaf: Hash,
    /// The root of the tree of `tree_size` events.
    pub root: Hash,
    /// RFC 9162 audit path from the leaf's sibling up.
    pub path: Vec<Hash>,
}

/// A consistency proof the log checked before returning it
/// ([`Log::prove_consistency`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvedConsistency {
    pub old_size: u64,
    pub new_size: u64,
    pub old_root: Hash,
    pub new_root: Hash,
    /// RFC 9162 consistency proof.
    pub path: Vec<Hash>,
}

/// An open log. Cheap to clone; all clones share one committer. When the
/// last clone is dropped the log closes (the queue drains, everything
/// acknowledged is durable) and its threads end; [`Log::close`] does the
/// same explicitly and also writes snapshots.
pub struct Log<M: StateMachine> {
    inner: Arc<Inner<M>>,
    _handle: Arc<Handle<M>>,
}

impl<M: StateMachine> Clone for Log<M> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _handle: Arc::clone(&self._handle),
        }
    }
}

/// Counts the user-facing clones of a [`Log`]: the log's own threads hold
/// `Inner`, never a `Handle`, so dropping the last handle can end them.
struct Handle<M> {
    inner: Arc<Inner<M>>,
}

impl<M> Drop for Handle<M> {
    fn drop(&mut self) {
        stop_scrub(&self.inner);
        drop(lock(&self.inner.queue).take());
        let handles: Vec<_> = lock(&self.inner.committer).drain(..).collect();
        let me = std::thread::current().id();
        for handle in handles {
            // A listener running on a log thread may drop the last handle:
            // never join oneself.
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
    }
}

impl<M: StateMachine> std::fmt::Debug for Log<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("dir", &self.inner.dir)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// `ledger.json` is missing: no ledger at all (exit 4), or a ledger whose
/// configuration was lost (damage, exit 5) when its log or key is there.
fn missing_config(dir: &Path) -> LogError {
    if dir.join("log").exists()
        || dir.join("keys/ledger.key").exists()
        || dir.join("anchor").exists()
    {
        LogError::corrupt(
            "ledger.json",
            "the ledger's configuration is missing from a data directory that holds a ledger (its log or key is there)",
        )
    } else {
        LogError::NotFound {
            what: "a ledger in the data directory (run `docket init`)".into(),
        }
    }
}

/// What every open of a ledger directory establishes before it serves,
/// sequencer or follower: the configuration, the ledger key (present and
/// matching `ledger.json`), the open check over `store`
/// ([`crate::verify::open_check`]) and the statement filter (the sealed one
/// brought up to date, else rebuilt from the statement index with a
/// warning).
struct CheckedOpen<M> {
    config: LogConfigFile,
    ledger_key: SigningKey,
    verifier: NoteVerifier,
    opened: Opened<M>,
    len: u64,
    /// `None` when the store answers [`Store::statement_seq`] from an
    /// exact index of its own ([`Store::exact_statement_lookup`]).
    statement_filter: Option<StatementFilter>,
}

fn check_open<M: StateMachine>(dir: &Path, store: &dyn Store) -> Result<CheckedOpen<M>> {
    let (config, _) = read_config(dir)?;
    let ledger_key = read_ledger_key(dir, &config)?;
    let verifier = NoteVerifier::new(&config.origin, ledger_key.verifying_key())?;
    let public = ledger_key.verifying_key();
    let stored_len = store.len()?;
    let exact = store.exact_statement_lookup();
    let persisted_filter = if exact {
        None
    } else {
        StatementFilter::load(store, &public, stored_len)
    };
    let opened: Opened<M> = crate::verify::open_check(
        store,
        Trust {
            checkpoints: &verifier,
            snapshots: &public,
        },
        persisted_filter.as_ref().map(|(_, seq)| *seq),
    )?;
    let len = opened.frontier.size();
    for w in &opened.report.warnings {
        tracing::warn!("{w}");
    }
    let statement_filter = match persisted_filter {
        _ if exact => None,
        Some((filter, _)) => {
            for d in &opened.digests {
                filter.insert(d);
            }
            Some(filter)
        }
        None => {
            // A derived file missing, stale or refused: rebuild it from
            // the statement index (one scan), and say so when it was
            // there but failed its check.
            if store.snapshot(StatementFilter::SNAPSHOT)?.is_some() {
                tracing::warn!(
                    "snapshot {} failed its check (edited, foreign or stale); rebuilding it from the log",
                    StatementFilter::SNAPSHOT
                );
            } else {
                tracing::warn!(
                    "snapshot {} is missing; rebuilding it from the log",
                    StatementFilter::SNAPSHOT
                );
            }
            let filter = StatementFilter::for_len(len);
            store.for_each_statement(&mut |d| filter.insert(&d))?;
            Some(filter)
        }
    };
    Ok(CheckedOpen {
        config,
        ledger_key,
        verifier,
        opened,
        len,
        statement_filter,
    })
}

/// Reads `DIR/keys/ledger.key`, the key every opening of the ledger signs
/// checkpoints and seals snapshots with, and checks it against
/// `ledger.json`'s `ledger_public_key`.
///
/// # Errors
/// [`LogError::Corrupt`] naming `keys/ledger.key` when the file is missing
/// from a data directory that holds a ledger, does not parse, or holds
/// another key: each is damage at rest (restore the file from a backup), not
/// bad input. [`LogError::Io`] when it cannot be read (permissions), and
/// [`LogError::Encrypted`]-style key errors as [`keys::read_key_file`]
/// reports them (a passphrase that is missing or wrong).
pub fn read_ledger_key(dir: &Path, config: &LogConfigFile) -> Result<SigningKey> {
    let key_path = dir.join("keys/ledger.key");
    if !key_path.exists() {
        return Err(LogError::corrupt(
            "keys/ledger.key",
            "the ledger key is missing from a data directory that holds a ledger",
        ));
    }
    let ledger_key = keys::read_key_file(&key_path).map_err(|e| match e {
        // The file is there but does not parse: damage at rest, not input.
        LogError::Malformed { detail, .. } => LogError::corrupt(
            "keys/ledger.key",
            format!("the ledger key file is damaged (it does not parse: {detail}); restore it from a backup"),
        ),
        other => other,
    })?;
    if hex::encode(ledger_key.verifying_key().to_bytes()) != config.ledger_public_key {
        return Err(LogError::corrupt(
            "keys/ledger.key",
            "it holds another key than ledger.json's ledger_public_key; restore it from a backup",
        ));
    }
    Ok(ledger_key)
}

/// Reads `DIR/ledger.json`: the origin and the ledger's public key, the
/// trust anchor for checkpoints and snapshots. Needs no private key.
pub fn read_config(dir: &Path) -> Result<(LogConfigFile, NoteVerifier)> {
    let config_path = dir.join("ledger.json");
    let config: LogConfigFile = match std::fs::read(&config_path) {
        Ok(b) => serde_json::from_slice(&b)
            .map_err(|e| LogError::corrupt("ledger.json", e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing_config(dir));
        }
        Err(e) => return Err(LogError::io(config_path, e)),
    };
    let public = keys::parse_public(&config.ledger_public_key)
        .map_err(|e| LogError::corrupt("ledger.json", format!("ledger_public_key: {e}")))?;
    let verifier = NoteVerifier::new(&config.origin, public)
        .map_err(|e| LogError::corrupt("ledger.json", format!("origin: {e}")))?;
    Ok((config, verifier))
}

/// Opens the sled store under `dir` for verification only (replay, audit
/// of a data directory): no sequencer, no open-time refusal, so that every
/// finding can be reported. sled can panic on a damaged file; that is
/// reported as corruption of `log/`, never as a crash.
pub fn open_store_for_verification(dir: &Path) -> Result<(Arc<dyn Store>, NoteVerifier)> {
    let (_, verifier) = read_config(dir)?;
    Ok((open_local_store_to_read(dir)?, verifier))
}

/// [`open_local_store`] for commands that only read: the store is read
/// from a private copy, since its recovery at open would write to a
/// damaged store (sled's rewrites a damaged file, [`SledStore::open_copy`];
/// the tile store's rebuilds derived files that may hold the only copy of
/// a hash, [`crate::tiles::TileStore::open_copy`]).
fn open_local_store_to_read(dir: &Path) -> Result<Arc<dyn Store>> {
    Ok(match Layout::of(dir) {
        Layout::Sled if dir.join(Layout::Sled.store_dir()).exists() => {
            Arc::new(open_sled_copy_guarded(dir)?)
        }
        Layout::Tiles if dir.join(Layout::Tiles.store_dir()).exists() => {
            Arc::new(crate::tiles::TileStore::open_copy(dir)?)
        }
        _ => open_local_store(dir)?,
    })
}

/// As [`open_store_for_verification`], for recovering what a damaged data
/// directory still holds: a tile store opens even without its commit log
/// ([`crate::tiles::TileStore::open_copy_to_salvage`]), either store
/// without its snapshots; it is read from a private copy, as
/// [`open_store_for_verification`] reads it.
pub fn open_store_to_salvage(dir: &Path) -> Result<(Arc<dyn Store>, NoteVerifier)> {
    let (_, verifier) = read_config(dir)?;
    let store: Arc<dyn Store> = match Layout::of(dir) {
        Layout::Tiles if dir.join(Layout::Tiles.store_dir()).exists() => {
            Arc::new(crate::tiles::TileStore::open_copy_to_salvage(dir)?)
        }
        Layout::Sled if dir.join(Layout::Sled.store_dir()).exists() => {
            Arc::new(sled_open_guarded(|| SledStore::open_copy_to_salvage(dir))?)
        }
        _ => open_local_store_to_read(dir)?,
    };
    Ok((store, verifier))
}

/// [`SledStore::open`], with a panic inside sled turned into
/// [`LogError::Corrupt`] naming `log/`.
pub fn open_sled_guarded(dir: &Path) -> Result<SledStore> {
    sled_open_guarded(|| SledStore::open(dir))
}

/// [`SledStore::open_copy`] (a private copy, for reading a store that may be
/// damaged), guarded as [`open_sled_guarded`].
pub fn open_sled_copy_guarded(dir: &Path) -> Result<SledStore> {
    sled_open_guarded(|| SledStore::open_copy(dir))
}

fn sled_open_guarded(open: impl FnOnce() -> Result<SledStore>) -> Result<SledStore> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(open)) {
        // sled's own corruption report is damage; an I/O error (a lock
        // held by another process, permissions) stays what it is.
        Ok(r) => r.map_err(|e| match e {
            LogError::Store {
                source: sled::Error::Io(io),
                context,
            } => LogError::Store {
                context,
                source: sled::Error::Io(io),
            },
            // Corruption, or a damaged `conf` read as an unknown version
            // (`Unsupported`): the store the ledger created is damaged.
            LogError::Store { context, source } => LogError::corrupt(
                "log/",
                format!(
                    "the sled store does not open ({context}): {}",
                    crate::error::sled_report(&source)
                ),
            ),
            other => other,
        }),
        Err(panic) => Err(LogError::corrupt(
            "log/",
            format!(
                "the sled store does not open (sled panicked: {})",
                crate::store::panic_message(panic.as_ref())
            ),
        )),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Whether `dir` already holds a ledger.
pub fn exists(dir: &Path) -> bool {
    dir.join("ledger.json").exists() || dir.join("keys/ledger.key").exists()
}

impl<M: StateMachine> Log<M> {
    /// Creates a new, empty log under `dir`, durably: the ledger key
    /// (`keys/ledger.key`, mode 0600), the store, an anchor holding the
    /// signed checkpoint of the empty tree, and last `ledger.json` (whose
    /// presence marks a complete ledger). Every new name is fsynced into its
    /// directory before this returns. Refuses to touch an existing ledger.
    pub fn create(dir: &Path, origin: Option<&str>, options: LogOptions) -> Result<Log<M>> {
        if exists(dir)
            || dir.join("log").exists()
            || dir.join("tiles").exists()
            || dir.join("anchor").exists()
        {
            return Err(LogError::AlreadyExists {
                what: "a ledger in the data directory".into(),
            });
        }
        // A bad origin is refused before anything is written.
        if let Some(origin) = origin {
            checkpoint::check_origin(origin).map_err(|e| LogError::Invalid {
                what: "origin".into(),
                violations: vec![e.to_string()],
            })?;
        }
        crate::store::create_dir_durably(dir)?;
        let ledger_key = keys::generate()?;
        let ledger_pub = hex::encode(ledger_key.verifying_key().to_bytes());
        let origin = origin
            .map(str::to_string)
            .unwrap_or_else(|| format!("docket.local/{}", &ledger_pub[..16]));
        checkpoint::Checkpoint {
            origin: origin.clone(),
            size: 0,
            root: merkle::empty_root(),
            extensions: Vec::new(),
        }
        .validate()?;
        keys::write_key_file(&dir.join("keys/ledger.key"), &ledger_key)?;
        let store = options.layout.create_store(dir)?;
        let empty = Checkpoint {
            origin: origin.clone(),
            size: 0,
            root: merkle::empty_root(),
            extensions: Vec::new(),
        }
        .body();
        store.put_anchor(&checkpoint::sign_note(&empty, &origin, &ledger_key))?;
        // Snapshots of the empty state, so the first open has no missing
        // mirror to report.
        for (name, bytes) in M::default().snapshot() {
            let sealed = crate::snapshot::seal(name, 0, &merkle::empty_root(), &bytes, &ledger_key);
            store.put_snapshot(name, &sealed)?;
        }
        if !store.exact_statement_lookup() {
            let filter = StatementFilter::for_len(0).to_bytes();
            let sealed = crate::snapshot::seal(
                StatementFilter::SNAPSHOT,
                0,
                &merkle::empty_root(),
                &filter,
                &ledger_key,
            );
            store.put_snapshot(StatementFilter::SNAPSHOT, &sealed)?;
        }
        let config = LogConfigFile {
            origin,
            ledger_public_key: ledger_pub,
        };
        // Invariant: plain strings serialise.
        let text = serde_json::to_vec_pretty(&config).expect("config serialises");
        crate::store::write_atomically(&dir.join("ledger.json"), &text)?;
        // Keep the store open: sled releases its file lock asynchronously,
        // so closing and reopening here could race with ourselves.
        Self::open_with_store(dir, store, options)
    }

    /// Opens the ledger under `dir` with its sled store.
    pub fn open(dir: &Path, options: LogOptions) -> Result<Log<M>> {
        if !exists(dir) {
            return Err(LogError::NotFound {
                what: "a ledger in the data directory (run `docket init`)".into(),
            });
        }
        let store = open_local_store(dir)?;
        Self::open_with_store(dir, store, options)
    }

    /// Opens the ledger over any [`Store`] (the seam for other backends).
    pub fn open_with_store(
        dir: &Path,
        store: Arc<dyn Store>,
        options: LogOptions,
    ) -> Result<Log<M>> {
        let CheckedOpen {
            config,
            ledger_key,
            verifier,
            opened,
            len,
            statement_filter,
        } = check_open::<M>(dir, store.as_ref())?;
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
            follower: Mutex::new(None),
            stopping: std::sync::atomic::AtomicBool::new(false),
            unrepaired_at: Mutex::new(None),
            verified_head: Mutex::new(None),
            metrics: Metrics::default(),
            options,
        });
        // Events after the anchor are durable but were never acknowledged
        // (a stop between the store's fsync and the anchor's): they are
        // valid, so anchor them now, with the checkpoint stored for them
        // when there is one (never a second signature for one size).
        if len > inner.open_report.anchor_size {
            let root = opened.frontier.root();
            let stored = inner
                .store
                .checkpoint(Some(len))?
                .map(|(_, note)| note)
                .filter(|note| {
                    checkpoint::open_note(note, &verifier).is_ok_and(|cp| cp.root == root)
                });
            let note = match stored {
                Some(note) => note,
                _ => {
                    let note = sign_checkpoint(&inner, len, root);
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
            write_snapshots(&inner, &state, len, opened.frontier.root())?;
        }
        let working = inner
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let position = WritePosition {
            working,
            frontier: opened.frontier,
            prev_hash: opened.prev_hash,
            last_time: opened.last_time,
        };
        let (tx, threads) = start_write_path(&inner, position)?;
        *lock(&inner.queue) = Some(tx);
        lock(&inner.committer).extend(threads);
        let handle = Arc::new(Handle {
            inner: Arc::clone(&inner),
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
        Ok(Log {
            inner,
            _handle: handle,
        })
    }

    /// Appends one statement; returns once it is durable.
    pub fn append(&self, statement: Statement) -> Result<Receipt> {
        let mut r = self.append_many(vec![statement])?;
        // Invariant: the committer replies with one result per statement.
        r.pop().expect("one result per statement")
    }

    /// Appends statements in order through one queue slot; each gets its own
    /// result (a rejected one does not stop the others). Returns once all are
    /// durable.
    pub fn append_many(&self, statements: Vec<Statement>) -> Result<Vec<Result<Receipt>>> {
        let expected = statements.len();
        let rx = self.submit(statements)?;
        let results = rx.recv().map_err(|_| self.closed_error())?;
        debug_assert_eq!(results.len(), expected);
        Ok(results)
    }

    /// Queues statements and returns the channel their results arrive on, so
    /// one thread can keep many appends in flight (pipelining).
    pub fn submit(&self, statements: Vec<Statement>) -> Result<Receiver<Vec<Result<Receipt>>>> {
        let (reply, rx) = mpsc::sync_channel(1);
        let tx = lock(&self.inner.queue)
            .clone()
            .ok_or_else(|| self.closed_error())?;
        self.inner.metrics.queued.fetch_add(1, Ordering::Relaxed);
        tx.send(Request {
            statements,
            reply: Reply::Channel(reply),
        })
        .map_err(|_| self.closed_error())?;
        Ok(rx)
    }

    /// Queues statements without waiting for room or for durability:
    /// `on_done` gets their results, in order, exactly once — on the
    /// publish thread once they are durable (so it must neither block nor
    /// panic: hand the results on, e.g. to async oneshot channels; every
    /// later batch waits for it), or on this thread with
    /// an error for each when the queue is full (`ResourceExhausted`) or the
    /// log is closed.
    pub fn submit_then(
        &self,
        statements: Vec<Statement>,
        on_done: impl FnOnce(Vec<Result<Receipt>>) + Send + 'static,
    ) {
        // Each statement gets the error (LogError is not Clone).
        let refuse = |statements: &[Statement], e: &dyn Fn() -> LogError, on_done: Reply| {
            on_done.send(statements.iter().map(|_| Err(e())).collect());
        };
        let reply = Reply::Callback(Box::new(on_done));
        let Some(tx) = lock(&self.inner.queue).clone() else {
            return refuse(&statements, &|| self.closed_error(), reply);
        };
        self.inner.metrics.queued.fetch_add(1, Ordering::Relaxed);
        match tx.try_send(Request { statements, reply }) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(r)) => {
                self.inner.metrics.queued.fetch_sub(1, Ordering::Relaxed);
                let depth = self.inner.options.queue_depth;
                let full = || {
                    LogError::ResourceExhausted(format!(
                        "the write queue is full ({depth} requests waiting)"
                    ))
                };
                refuse(&r.statements, &full, r.reply);
            }
            Err(mpsc::TrySendError::Disconnected(r)) => {
                self.inner.metrics.queued.fetch_sub(1, Ordering::Relaxed);
                refuse(&r.statements, &|| self.closed_error(), r.reply);
            }
        }
    }

    fn closed_error(&self) -> LogError {
        if let Some(reason) = follower::refusal(&self.inner) {
            return LogError::Closed(reason);
        }
        LogError::Closed(
            lock(&self.inner.failure)
                .clone()
                .unwrap_or_else(|| "the ledger was closed".into()),
        )
    }

    /// Number of durable events.
    pub fn len(&self) -> u64 {
        self.inner.committed_len.load(Ordering::Acquire)
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The checkpoint origin.
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// The ledger's signing key (checkpoints; auto-verify).
    pub fn ledger_key(&self) -> &SigningKey {
        &self.inner.ledger_key
    }

    /// The C2SP verifier key for checkpoints.
    pub fn verifier_key(&self) -> String {
        checkpoint::verifier_key(&self.inner.origin, &self.inner.ledger_key.verifying_key())
    }

    /// Note verifier for this ledger's checkpoints.
    pub fn note_verifier(&self) -> Result<NoteVerifier> {
        Ok(NoteVerifier::new(
            &self.inner.origin,
            self.inner.ledger_key.verifying_key(),
        )?)
    }

    /// The store (read access for replay, export and proofs).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Metrics counters.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// What opening found and repaired (warnings for the operator).
    pub fn open_report(&self) -> &OpenReport {
        &self.inner.open_report
    }

    /// Why the ledger stopped accepting appends (fail-stop), if it did.
    pub fn failure(&self) -> Option<String> {
        lock(&self.inner.failure).clone()
    }

    /// Registers a callback run once if the ledger fails stop, with the reason.
    pub fn on_failure(&self, listener: impl Fn(&str) + Send + Sync + 'static) {
        lock(&self.inner.failure_listeners).push(Box::new(listener));
    }

    /// Read access to the live state (reflects exactly the durable events).
    pub fn state(&self) -> RwLockReadGuard<'_, M> {
        self.inner
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One durable event.
    pub fn event(&self, seq: u64) -> Result<Event> {
        Event::decode(&self.event_bytes(seq)?)
    }

    /// The canonical bytes of one durable event.
    pub fn event_bytes(&self, seq: u64) -> Result<Vec<u8>> {
        if seq >= self.len() {
            return Err(LogError::NotFound {
                what: format!("event {seq} (the log has {} events)", self.len()),
            });
        }
        self.event_bytes_range(seq, seq + 1)?
            .pop()
            .map(|(_, bytes)| bytes)
            .ok_or_else(|| LogError::corrupt(format!("event {seq}"), "missing from the store"))
    }

    /// Durable events `from..to` (clamped), decoded.
    pub fn events(&self, from: u64, to: u64) -> Result<Vec<Event>> {
        self.event_bytes_range(from, to)?
            .into_iter()
            .map(|(seq, b)| {
                Event::decode(&b)
                    .map_err(|e| LogError::corrupt(format!("event {seq}"), e.to_string()))
            })
            .collect()
    }

    /// The canonical bytes of durable events `from..to` (clamped), each
    /// checked against its stored leaf hash. When one does not match, the
    /// stored leaves (derived) are rebuilt from the event bytes if those give
    /// the anchored root (see [`Log::prove_inclusion`]) and the read is made
    /// again; an event whose bytes still do not match is
    /// [`LogError::Corrupt`] naming it.
    pub fn event_bytes_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let to = to.min(self.len());
        if from >= to {
            return Ok(Vec::new());
        }
        let read = || -> Result<Vec<(u64, Vec<u8>)>> {
            let stored: HashMap<u64, Hash> = self
                .inner
                .store
                .leaf_hashes(from, to)?
                .into_iter()
                .collect();
            let events = self.inner.store.event_range(from, to)?;
            for (want, (seq, b)) in (from..).zip(&events) {
                if *seq != want {
                    return Err(LogError::corrupt(
                        format!("event {want}"),
                        "missing from the store",
                    ));
                }
                check_read(*seq, b, stored.get(seq))?;
            }
            if events.len() as u64 != to - from {
                return Err(LogError::corrupt(
                    format!("event {}", from + events.len() as u64),
                    "missing from the store",
                ));
            }
            Ok(events)
        };
        match read() {
            Err(LogError::Corrupt { location, detail }) => match self.repair_once()? {
                Some(files) => {
                    let events = read().inspect_err(|_| {
                        // The rebuild could not help: not again at this length.
                        *lock(&self.inner.unrepaired_at) = Some(self.len());
                    })?;
                    if !files.is_empty() {
                        tracing::warn!(
                            "reading events {from}..{to}: {location}: {detail}; the event bytes \
                             give the anchored root, so {} were rewritten from them",
                            files.join(", ")
                        );
                    }
                    Ok(events)
                }
                None => Err(LogError::Corrupt { location, detail }),
            },
            other => other,
        }
    }

    /// Blocks until the log has more than `len` events or `timeout` passes;
    /// returns the durable length.
    pub fn wait_for_len_above(&self, len: u64, timeout: Duration) -> u64 {
        let guard = lock(&self.inner.committed);
        let (guard, _) = self
            .inner
            .committed_changed
            .wait_timeout_while(guard, timeout, |c| {
                *c <= len && lock(&self.inner.failure).is_none()
            })
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard
    }

    /// Registers a callback run (on the committer thread) after every commit
    /// with the new durable length. Keep it cheap (e.g. notify a channel).
    /// It runs after the commit's callers were answered (an answer waits for
    /// no listener), so a caller may see its append durable (`len`, reads,
    /// proofs) before a listener has heard of it.
    pub fn on_commit(&self, listener: impl Fn(u64) + Send + Sync + 'static) {
        lock(&self.inner.listeners).push(Box::new(listener));
    }

    /// The signed checkpoint for the current size (`None` on an empty log).
    pub fn checkpoint(&self) -> Result<Option<(Checkpoint, String)>> {
        let len = self.len();
        if len == 0 {
            return Ok(None);
        }
        self.checkpoint_at(len).map(Some)
    }

    /// The signed checkpoint stored for `size` (every commit stores one).
    pub fn checkpoint_at(&self, size: u64) -> Result<(Checkpoint, String)> {
        if size == 0 || size > self.len() {
            return Err(LogError::NotFound {
                what: format!("a checkpoint for tree size {size}"),
            });
        }
        let Some((_, note)) = self.inner.store.checkpoint(Some(size))? else {
            return Err(LogError::NotFound {
                what: format!("a checkpoint for tree size {size} (not a commit boundary)"),
            });
        };
        let cp = checkpoint::open_note(&note, &self.note_verifier()?)?;
        Ok((cp, note))
    }

    /// RFC 9162 root of the first `size` events, proved against the signed
    /// checkpoint of the head before it is returned (see
    /// [`Log::prove_inclusion`]).
    pub fn root_at(&self, size: u64) -> Result<Hash> {
        self.check_size(size)?;
        self.proved(
            MERKLE_TREE,
            &format!("the root of the tree of {size} events"),
            || {
                let root = merkle::root_at(self.inner.store.as_ref(), size)?;
                Ok(match self.disagreement_with_head(size, &root)? {
                    None => Ok(root),
                    Some(why) => Err(why),
                })
            },
        )
    }

    /// Inclusion proof of leaf `index` in the tree of `size` leaves (the
    /// audit path of [`Log::prove_inclusion`]).
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>> {
        Ok(self.prove_inclusion(index, size)?.path)
    }

    /// Consistency proof between tree sizes (the path of
    /// [`Log::prove_consistency`]).
    pub fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<Vec<Hash>> {
        Ok(self.prove_consistency(old_size, new_size)?.path)
    }

    /// The inclusion proof of leaf `index` in the tree of `size` leaves,
    /// with the leaf hash and the root it proves, all read from the store's
    /// Merkle tree (a derived copy of the event bytes) and **checked before
    /// they are returned**: the path must lead from the leaf to the root, and
    /// the root must be the signed checkpoint's at the head (or consistent
    /// with it, by a consistency proof checked here too). When they do not
    /// verify, the store's derived tree is rebuilt from the event bytes if
    /// those give the anchored root ([`Store::rebuild_derived_tree`], named
    /// in a warning) and the proof is made again; otherwise the answer is
    /// [`LogError::Corrupt`] and no proof is served.
    pub fn prove_inclusion(&self, index: u64, size: u64) -> Result<ProvedInclusion> {
        self.check_size(size)?;
        if index >= size {
            return Err(LogError::Invalid {
                what: "inclusion proof".into(),
                violations: vec![format!("leaf index {index} is not below tree size {size}")],
            });
        }
        let what = format!("the inclusion proof of event {index} in the tree of {size} events");
        self.proved(MERKLE_TREE, &what, || {
            let store = self.inner.store.as_ref();
            let leaf = merkle::NodeSource::node(store, 0, index)?;
            let path = merkle::inclusion_proof(store, index, size)?;
            let root = merkle::root_at(store, size)?;
            if let Err(e) = merkle::verify_inclusion(&leaf, index, size, &path, &root) {
                return Ok(Err(format!(
                    "the path from the stored leaf does not give the stored root: {e}"
                )));
            }
            Ok(match self.disagreement_with_head(size, &root)? {
                None => Ok(ProvedInclusion {
                    leaf_index: index,
                    tree_size: size,
                    leaf,
                    root,
                    path,
                }),
                Some(why) => Err(why),
            })
        })
    }

    /// The consistency proof between the trees of `old_size` and `new_size`
    /// leaves with both roots, checked before it is returned as
    /// [`Log::prove_inclusion`] checks its proof: the proof must join the
    /// two roots, and the new root must be (or be consistent with) the
    /// signed checkpoint of the head.
    pub fn prove_consistency(&self, old_size: u64, new_size: u64) -> Result<ProvedConsistency> {
        self.check_size(new_size)?;
        if old_size > new_size {
            return Err(LogError::Invalid {
                what: "consistency proof".into(),
                violations: vec![format!("old size {old_size} is above new size {new_size}")],
            });
        }
        let what = format!("the consistency proof from {old_size} to {new_size} events");
        self.proved(MERKLE_TREE, &what, || {
            let store = self.inner.store.as_ref();
            let path = merkle::consistency_proof(store, old_size, new_size)?;
            let old_root = merkle::root_at(store, old_size)?;
            let new_root = merkle::root_at(store, new_size)?;
            if let Err(e) =
                merkle::verify_consistency(old_size, new_size, &old_root, &new_root, &path)
            {
                return Ok(Err(format!(
                    "the proof does not join the stored roots: {e}"
                )));
            }
            Ok(match self.disagreement_with_head(new_size, &new_root)? {
                None => Ok(ProvedConsistency {
                    old_size,
                    new_size,
                    old_root,
                    new_root,
                    path,
                }),
                Some(why) => Err(why),
            })
        })
    }

    /// `count` consecutive complete Merkle nodes at tree `level` from index
    /// `first` (level 0: leaf hashes; level 8·L: the hashes of a C2SP hash
    /// tile of level L), read from the store and **proved before they are
    /// returned**: split into aligned complete subtrees, each subtree's root
    /// must verify against the signed checkpoint of the head by the audit
    /// path above it. When they do not, the derived tree is rebuilt from the
    /// event bytes once (see [`Log::prove_inclusion`]); what still does not
    /// verify is [`LogError::Corrupt`].
    pub fn proved_nodes(&self, level: u8, first: u64, count: u64) -> Result<Vec<Hash>> {
        self.check_complete_nodes(level, first, count)?;
        let what = format!(
            "the stored Merkle nodes {first}..{} at level {level}",
            first + count
        );
        self.proved(MERKLE_TREE, &what, || {
            let store = self.inner.store.as_ref();
            let nodes = if level == 0 {
                let leaves = store.leaf_hashes(first, first + count)?;
                if leaves.len() as u64 != count
                    || leaves
                        .iter()
                        .zip(first..)
                        .any(|((seq, _), want)| *seq != want)
                {
                    return Ok(Err("some are missing from the store".into()));
                }
                leaves.into_iter().map(|(_, h)| h).collect()
            } else {
                (first..first + count)
                    .map(|i| merkle::NodeSource::node(store, level, i))
                    .collect::<std::result::Result<Vec<_>, _>>()?
            };
            Ok(
                match self.nodes_disagreement_with_head(level, first, &nodes)? {
                    None => Ok(nodes),
                    Some(why) => Err(why),
                },
            )
        })
    }

    /// Events `first..first + count` as stored, **proved before they are
    /// returned**: their leaf hashes, computed from the bytes, must verify
    /// against the signed checkpoint of the head as [`Log::proved_nodes`]
    /// checks nodes (so neither the stored leaf hashes nor any other
    /// derived file is trusted for them). Damaged events are
    /// [`LogError::Corrupt`] naming the range.
    pub fn proved_events(&self, first: u64, count: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        self.check_complete_nodes(0, first, count)?;
        let end = first + count;
        let what = format!("the leaves of events {first}..{end}, hashed from their bytes,");
        self.proved(&format!("events {first}..{end}"), &what, || {
            let events = self.inner.store.event_range(first, end)?;
            if events.len() as u64 != count
                || events
                    .iter()
                    .zip(first..)
                    .any(|((seq, _), want)| *seq != want)
            {
                return Ok(Err("some are missing from the store".into()));
            }
            let leaves: Vec<Hash> = events.iter().map(|(_, b)| merkle::leaf_hash(b)).collect();
            Ok(
                match self.nodes_disagreement_with_head(0, first, &leaves)? {
                    None => Ok(events),
                    Some(why) => Err(why),
                },
            )
        })
    }

    /// `count` nodes at tree `level` from `first` are complete nodes of the
    /// durable tree (else [`LogError::NotFound`]).
    fn check_complete_nodes(&self, level: u8, first: u64, count: u64) -> Result<()> {
        let end_leaf = first
            .checked_add(count)
            .and_then(|end| end.checked_mul(1u64.checked_shl(u32::from(level))?));
        match end_leaf {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(LogError::NotFound {
                what: format!(
                    "Merkle nodes {first}..{} at level {level} (the log has {} events)",
                    first.saturating_add(count),
                    self.len()
                ),
            }),
        }
    }

    /// Why `nodes` (consecutive complete nodes at tree `level` from index
    /// `first`) are not nodes of the tree the ledger signed at its head, or
    /// `None` when every aligned complete subtree they make up verifies
    /// against that checkpoint by the stored audit path above it.
    fn nodes_disagreement_with_head(
        &self,
        level: u8,
        first: u64,
        nodes: &[Hash],
    ) -> Result<Option<String>> {
        let head = self.len();
        if head == 0 {
            return Ok((!nodes.is_empty()).then(|| "the log is empty".into()));
        }
        let (signed_size, signed_root) = self.signed_head(head)?;
        let store = self.inner.store.as_ref();
        let mut at = 0usize;
        while at < nodes.len() {
            let index = first + at as u64;
            // The largest aligned run of 2^k nodes from `index` within `nodes`.
            let mut k = 0u32;
            while k < 62
                && index.is_multiple_of(1u64 << (k + 1))
                && at + (1usize << (k + 1)) <= nodes.len()
            {
                k += 1;
            }
            let run = &nodes[at..at + (1usize << k)];
            let height = u32::from(level) + k;
            let path = merkle::subtree_inclusion_proof(store, height, index >> k, signed_size)?;
            let root = merkle::complete_subtree_root(run);
            if let Err(e) = merkle::verify_subtree_inclusion(
                &root,
                height,
                index >> k,
                signed_size,
                &path,
                &signed_root,
            ) {
                return Ok(Some(format!(
                    "nodes {index}..{} at level {level} are not in the signed checkpoint's tree of {signed_size}: {e}",
                    index + run.len() as u64,
                )));
            }
            at += run.len();
        }
        Ok(None)
    }

    /// The size and root of the signed checkpoint at `head` (a commit
    /// boundary), its signature verified the first time it is asked for.
    fn signed_head(&self, head: u64) -> Result<(u64, Hash)> {
        if let Some((size, root)) = *lock(&self.inner.verified_head)
            && size == head
        {
            return Ok((size, root));
        }
        let (signed, _) = self.checkpoint_at(head)?;
        *lock(&self.inner.verified_head) = Some((signed.size, signed.root));
        Ok((signed.size, signed.root))
    }

    /// Why `root`, read from the store for the tree of `size` leaves, is not
    /// the tree the ledger signed, or `None` when it is: equal to the root
    /// of the signed checkpoint at the head, or joined to it by a
    /// consistency proof that verifies.
    fn disagreement_with_head(&self, size: u64, root: &Hash) -> Result<Option<String>> {
        let head = self.len();
        if head == 0 {
            return Ok(
                (*root != merkle::empty_root()).then(|| "the empty tree's root differs".into())
            );
        }
        let (signed_size, signed_root) = self.signed_head(head)?;
        if size == signed_size {
            return Ok((*root != signed_root).then(|| {
                format!(
                    "the stored root {} is not the signed checkpoint's {}",
                    hex::encode(root),
                    hex::encode(signed_root)
                )
            }));
        }
        let path = merkle::consistency_proof(self.inner.store.as_ref(), size, signed_size)?;
        Ok(
            merkle::verify_consistency(size, signed_size, root, &signed_root, &path)
                .err()
                .map(|e| {
                    format!(
                        "the stored tree of {size} events is not a prefix of the signed checkpoint's tree of {signed_size}: {e}"
                    )
                }),
        )
    }

    /// Rebuilds the store's derived tree from the event bytes, if they give
    /// the anchored root ([`crate::verify::repair_derived_tree`]): the files
    /// rewritten, or `None` when the bytes do not give it (the events are
    /// the damage), on a follower (which writes nothing), or when a rebuild
    /// already failed at this length (each reads the whole store).
    fn repair_once(&self) -> Result<Option<Vec<String>>> {
        let len = self.len();
        if self.is_follower() || *lock(&self.inner.unrepaired_at) == Some(len) {
            return Ok(None);
        }
        let repaired =
            crate::verify::repair_derived_tree(self.inner.store.as_ref(), &self.note_verifier()?)?;
        if repaired.is_none() {
            *lock(&self.inner.unrepaired_at) = Some(len);
        }
        Ok(repaired)
    }

    /// Runs `attempt` (a proof made from the store and checked: `Ok(Err(why))`
    /// when it does not verify). On a failed check the derived tree is
    /// rebuilt from the event bytes once, if they give the anchored root,
    /// and the attempt is made again; what still does not verify is damage.
    fn proved<T>(
        &self,
        location: &str,
        what: &str,
        attempt: impl Fn() -> Result<std::result::Result<T, String>>,
    ) -> Result<T> {
        // A node the signed tree has but the store cannot give (missing,
        // unreadable) fails the check like a wrong one: it may be rebuilt.
        let checked = || match attempt() {
            Err(
                e @ (LogError::Corrupt { .. } | LogError::Merkle(MerkleError::MissingNode { .. })),
            ) => Ok(Err(e.to_string())),
            other => other,
        };
        let why = match checked()? {
            Ok(proved) => return Ok(proved),
            Err(why) => why,
        };
        let len = self.len();
        if let Some(files) = self.repair_once()? {
            if let Ok(proved) = checked()? {
                if !files.is_empty() {
                    tracing::warn!(
                        "{what} failed the check against the signed checkpoint ({why}); the \
                         event bytes give the anchored root, so {} were rewritten from them",
                        files.join(", ")
                    );
                }
                return Ok(proved);
            }
            // A rebuild rewrites every tile that differs at once: one that
            // leaves this failing cannot help again at this length (and
            // each reads the whole store).
            *lock(&self.inner.unrepaired_at) = Some(len);
        }
        Err(LogError::corrupt(
            location,
            format!(
                "{what} failed the check against the ledger's signed checkpoint ({why}), and \
                 the event bytes do not give a tree that repairs it; nothing is served \
                 (`docket replay --verify` names the damage)"
            ),
        ))
    }

    /// Leaf hash of event `seq` as stored.
    pub fn leaf_hash(&self, seq: u64) -> Result<Hash> {
        if seq >= self.len() {
            return Err(LogError::NotFound {
                what: format!("event {seq}"),
            });
        }
        Ok(merkle::NodeSource::node(self.inner.store.as_ref(), 0, seq)?)
    }

    fn check_size(&self, size: u64) -> Result<()> {
        if size > self.len() {
            return Err(LogError::NotFound {
                what: format!("tree size {size} (the log has {} events)", self.len()),
            });
        }
        Ok(())
    }

    /// Writes projection snapshots now (also done every `snapshot_every`
    /// events and on close).
    pub fn snapshot(&self) -> Result<()> {
        let state = self.state();
        let len = self.len();
        let root = merkle::root_at(self.inner.store.as_ref(), len)?;
        write_snapshots(&self.inner, &state, len, root)
    }

    /// Stops the committer after the queue drains, writes snapshots and
    /// syncs. Further appends fail with `Closed`.
    pub fn close(&self) -> Result<()> {
        stop_scrub(&self.inner);
        drop(lock(&self.inner.queue).take());
        let handles: Vec<_> = lock(&self.inner.committer).drain(..).collect();
        for handle in handles {
            let _ = handle.join();
        }
        if let Some(f) = lock(&self.inner.failure).clone() {
            return Err(LogError::Closed(f));
        }
        if self.is_follower() {
            // A follower writes nothing: its sequencer writes the snapshots.
            return Ok(());
        }
        self.snapshot()
    }
}

impl<M> Drop for Inner<M> {
    fn drop(&mut self) {
        drop(lock(&self.queue).take());
        let handles: Vec<_> = lock(&self.committer).drain(..).collect();
        let me = std::thread::current().id();
        for handle in handles {
            // The last reference may be dropped by one of the log's own
            // threads as it ends (after a fail-stop): never join oneself.
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where the write path resumes: the working state and the tree's frontier,
/// previous leaf hash and ledger time after the last durable event.
struct WritePosition<M> {
    working: M,
    frontier: Frontier,
    prev_hash: Hash,
    last_time: u64,
}

/// Starts the write path's four threads (verify, committer, store,
/// publish) over `inner` from `position`; returns the request queue's
/// sender and the threads, to be joined in this order on close (the verify
/// stage ends when the queue closes, the committer when the verify stage
/// ends, the store stage when the committer ends, the publisher last).
fn start_write_path<M: StateMachine>(
    inner: &Arc<Inner<M>>,
    position: WritePosition<M>,
) -> Result<(SyncSender<Request>, Vec<JoinHandle<()>>)> {
    let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .map_err(|e| LogError::io(format!("{name} thread"), e))
    };
    let (tx, rx) = mpsc::sync_channel::<Request>(inner.options.queue_depth);
    // The committer may run a few batches ahead; the store stage merges
    // whatever is waiting into one fsync (group commit).
    let (durable_tx, durable_rx) = mpsc::sync_channel::<Sequenced<M::Admitted>>(8);
    let committer = Arc::new(Stage::new(Committer {
        inner: Arc::clone(inner),
        recent: RecentDigests::default(),
        working: position.working,
        frontier: position.frontier,
        prev_hash: position.prev_hash,
        last_time: position.last_time,
        syncer: Some(durable_tx),
    }));
    let publisher = Arc::new(Stage::new(Syncer {
        inner: Arc::clone(inner),
        since_snapshot: 0,
        last: None,
    }));
    let (publish_tx, publish_rx) = mpsc::sync_channel::<Sequenced<M::Admitted>>(8);
    let store_inner = Arc::clone(inner);
    let store_publisher = Arc::clone(&publisher);
    let store_stage = spawn(
        "docket-store",
        Box::new(move || run_store(&store_inner, durable_rx, &store_publisher, publish_tx)),
    )?;
    let publish_stage = spawn(
        "docket-publish",
        Box::new(move || run_publish(&publisher, publish_rx)),
    )?;
    let (verified_tx, verified_rx) = mpsc::sync_channel::<Verified>(2);
    let verify_inner = Arc::clone(inner);
    let verify_committer = Arc::clone(&committer);
    let verify = spawn(
        "docket-verify",
        Box::new(move || verify_stage(&verify_inner, rx, &verify_committer, verified_tx)),
    )?;
    let committer_inner = Arc::clone(inner);
    let committer_stage = spawn(
        "docket-committer",
        Box::new(move || run_committer(&committer_inner, &committer, verified_rx)),
    )?;
    Ok((
        tx,
        vec![verify, committer_stage, store_stage, publish_stage],
    ))
}

/// A stage's owned state, which the stage before it may use itself when
/// this stage is idle (run to completion): an idle pipeline hands one
/// caller's batch from thread to thread at 6–20 µs a wake-up, more than
/// the work of the stage it wakes (docs/BENCHMARKS.md). Only the stage
/// before sends to this one, so when it reads `pending` as zero, this
/// stage has handed on everything it was sent, and work done in its place
/// follows that in order.
struct Stage<T> {
    state: Mutex<T>,
    /// Batches sent to this stage's thread and not yet handed on by it.
    pending: std::sync::atomic::AtomicUsize,
}

impl<T> Stage<T> {
    fn new(state: T) -> Self {
        Self {
            state: Mutex::new(state),
            pending: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// This stage's state, to do its work in its place, when its thread
    /// holds nothing sent to it.
    fn idle(&self) -> Option<std::sync::MutexGuard<'_, T>> {
        (self.pending.load(Ordering::Acquire) == 0).then(|| lock(&self.state))
    }
}

/// Why appends are refused after a stage stopped: the recorded failure.
fn failure_reason<M>(inner: &Inner<M>) -> String {
    lock(&inner.failure)
        .clone()
        .unwrap_or_else(|| "ledger failed".into())
}

fn sign_checkpoint<M>(inner: &Inner<M>, size: u64, root: Hash) -> String {
    let body = Checkpoint {
        origin: inner.origin.clone(),
        size,
        root,
        extensions: Vec::new(),
    }
    .body();
    checkpoint::sign_note(&body, &inner.origin, &inner.ledger_key)
}

/// Seals and writes every projection snapshot of `state`, which reflects
/// events `0..len` with tree root `root`.
fn write_snapshots<M: StateMachine>(
    inner: &Inner<M>,
    state: &M,
    len: u64,
    root: Hash,
) -> Result<()> {
    for (name, bytes) in state.snapshot() {
        let sealed = crate::snapshot::seal(name, len, &root, &bytes, &inner.ledger_key);
        inner.store.put_snapshot(name, &sealed)?;
    }
    let Some(filter) = &inner.statement_filter else {
        return Ok(());
    };
    let filter = filter.to_bytes();
    let sealed = crate::snapshot::seal(
        StatementFilter::SNAPSHOT,
        len,
        &root,
        &filter,
        &inner.ledger_key,
    );
    inner.store.put_snapshot(StatementFilter::SNAPSHOT, &sealed)
}

/// Stops the background scrub (it checks between chunks) and waits for it.
fn stop_scrub<M>(inner: &Inner<M>) {
    inner.stopping.store(true, Ordering::Release);
    let handle = lock(&inner.scrub).take();
    if let Some(h) = handle
        && h.thread().id() != std::thread::current().id()
    {
        let _ = h.join();
    }
}

/// Every event read for a caller is checked against its stored leaf hash,
/// so bytes altered on disk since they were appended are refused (naming
/// the event) rather than served, whatever the open's tail re-read covered.
fn check_read(seq: u64, bytes: &[u8], stored: Option<&Hash>) -> Result<()> {
    if stored == Some(&merkle::leaf_hash(bytes)) {
        return Ok(());
    }
    Err(LogError::corrupt(
        format!("event {seq}"),
        "its bytes do not hash to its stored Merkle leaf: the event (or the derived tile holding \
         its leaf) was altered on disk; `docket replay --verify` tells which",
    ))
}

/// How [`Log::failure`] begins when the log stopped because its background
/// check found damage (not a storage error): servers answer writes with
/// data loss, not unavailability.
pub const DAMAGE_STOP: &str = "damage found by the background check of the log: ";

/// The background scrub: re-reads the events the open did not, and turns
/// damage into a fail-stop that names it (health NOT_SERVING, appends
/// refused), exactly as if the open had found it.
fn run_scrub<M>(inner: &Inner<M>, upto: u64) {
    let started = std::time::Instant::now();
    let keep_going = || !inner.stopping.load(Ordering::Acquire);
    let mut may_repair = true;
    let finding = loop {
        match crate::verify::scrub(inner.store.as_ref(), upto, &keep_going) {
            Ok(None) if keep_going() => {
                tracing::info!(
                    "background check: events 0..{upto} intact ({:?})",
                    started.elapsed()
                );
                return;
            }
            Ok(None) => return,
            // Damage the check could not read past (a torn file): it stops
            // the log as a finding does.
            Err(e @ LogError::Corrupt { .. }) => break e.to_string(),
            Err(e) => {
                tracing::warn!("background check of the log stopped: {e}");
                return;
            }
            Ok(Some(finding)) => {
                // A stored leaf or hash tile that differs from the bytes is
                // a derived copy: rebuilt once when the bytes give the
                // anchored root, and the check runs again against it;
                // otherwise the damage stops the log.
                let derived = matches!(
                    finding.kind,
                    FindingKind::StoredLeaf | FindingKind::Structure
                );
                if !(derived && may_repair) {
                    break finding.to_string();
                }
                may_repair = false;
                let repaired = NoteVerifier::new(&inner.origin, inner.ledger_key.verifying_key())
                    .map_err(LogError::from)
                    .and_then(|v| crate::verify::repair_derived_tree(inner.store.as_ref(), &v));
                match repaired {
                    Ok(Some(files)) if !files.is_empty() => tracing::warn!(
                        "background check: {finding}; the event bytes give the anchored root, \
                         so {} were rewritten from them",
                        files.join(", ")
                    ),
                    // Nothing left to rewrite: another reader (a proof, an
                    // event read) rebuilt the tree after this check read
                    // it. The check runs again over the rebuilt tree.
                    Ok(Some(_)) => tracing::info!(
                        "background check: {finding}; the tree was rebuilt from the event bytes \
                         meanwhile; checking again"
                    ),
                    Ok(None) => break finding.to_string(),
                    Err(e) => {
                        tracing::warn!("background check: rebuilding the derived tree failed: {e}");
                        break finding.to_string();
                    }
                }
            }
        }
    };
    let msg = format!("{DAMAGE_STOP}{finding}");
    tracing::error!("{msg}");
    *lock(&inner.failure) = Some(msg.clone());
    drop(lock(&inner.queue).take());
    for l in lock(&inner.failure_listeners).iter() {
        l(&msg);
    }
    inner.committed_changed.notify_all();
}

/// What the verify stage learnt about one statement.
#[derive(Clone)]
struct Check {
    signature: Result<(), String>,
    digest: Hash,
    /// `Some(answer)` when the verify stage could answer the idempotency
    /// question as of `seen_len`; `None` when the committer must ask.
    prior: Option<Option<u64>>,
    seen_len: u64,
}

/// Stage 2: sequences verified statements against its own working state
/// (ahead of what is durable) and hands each sequenced batch to the syncer,
/// so the next batch is sequenced while the previous one is being synced.
struct Committer<M: StateMachine> {
    inner: Arc<Inner<M>>,
    recent: RecentDigests,
    /// The state as of everything sequenced (durable or in flight). Readers
    /// never see it: they read `Inner::state`, the durable state.
    working: M,
    frontier: Frontier,
    prev_hash: Hash,
    last_time: u64,
    syncer: Option<SyncSender<Sequenced<M::Admitted>>>,
}

/// One sequenced batch on its way to the disk.
struct Sequenced<A> {
    batch: CommitBatch,
    /// The events appended, to fold into the durable state once synced.
    events: Vec<Event>,
    /// What admission learnt of each event (its decoded payload), for that
    /// fold: one per event, in order.
    admitted: Vec<A>,
    requests: Vec<Request>,
    results: Vec<Vec<Result<Receipt>>>,
    /// Tree size and root after this batch, and its signed checkpoint.
    size: u64,
    root: Hash,
    note: Option<String>,
    /// The store anchored `note` with its commit ([`Store::commit_anchored`]).
    anchored: bool,
    started: std::time::Instant,
}

/// A batch that could not be made durable, and why.
type FailedBatch<A> = Box<(LogError, Sequenced<A>)>;

impl<A> Sequenced<A> {
    /// Appends `next` (sequenced after `self`) to this batch: its events,
    /// nodes and statements follow, its size, root and checkpoint replace.
    fn merge(&mut self, next: Sequenced<A>) {
        self.batch.events.extend(next.batch.events);
        self.batch.nodes.extend(next.batch.nodes);
        self.batch.statements.extend(next.batch.statements);
        if next.note.is_some() {
            self.batch.checkpoint = next.batch.checkpoint;
            self.note = next.note;
            self.anchored = next.anchored;
            self.size = next.size;
            self.root = next.root;
        }
        self.events.extend(next.events);
        self.admitted.extend(next.admitted);
        self.requests.extend(next.requests);
        self.results.extend(next.results);
    }
}

/// The publish stage's state (stage 4, after the store stage's commit):
/// anchors each durable batch the store did not anchor, folds it into the
/// durable state under a short write lock, publishes the new length and
/// replies; run on its own thread ([`run_publish`]) or, when that thread
/// is idle, by the store stage ([`run_store`]). A storage error is
/// fail-stop: the durable state never saw the failed batch.
struct Syncer<M> {
    inner: Arc<Inner<M>>,
    since_snapshot: u64,
    /// Size and root of the last durable batch (for the final snapshots).
    last: Option<(u64, Hash)>,
}

/// Signatures checked by the verify stage, waiting to be sequenced.
struct Verified {
    requests: Vec<Request>,
    signatures: Vec<Result<(), String>>,
    /// Statement digests, in order.
    digests: Vec<Hash>,
    /// Sequence of an event already carrying each digest, as the store
    /// answered after `seen_len` events were visible.
    prior: Vec<Option<Option<u64>>>,
    seen_len: u64,
}

/// A fixed 16 MiB Bloom filter over the statement digests in the log, so
/// the common case of the idempotency check — a new statement — needs no
/// store lookup. Four probe positions come straight from the digest (SHA-256
/// output is uniform). No false negatives; false positives (≈0.5% at 10M
/// statements) only cost a lookup.
struct StatementFilter {
    bits_log2: u32,
    words: Vec<AtomicU64>,
}

impl StatementFilter {
    /// Smallest filter: 2^20 bits (128 KiB).
    const MIN_BITS_LOG2: u32 = 20;
    /// Largest filter: 2^30 bits (128 MiB, ~60M statements at 16 bits each).
    const MAX_BITS_LOG2: u32 = 30;
    /// The persisted filter's snapshot name (sealed like a projection).
    const SNAPSHOT: &'static str = crate::verify::STATEMENT_FILTER;

    /// A filter with 32 to 64 bits per statement for a log of `len`
    /// statements: room to grow 4x before it is rebuilt larger.
    fn for_len(len: u64) -> Self {
        let want = (len.max(1) * 32).next_power_of_two().trailing_zeros();
        let bits_log2 = want.clamp(Self::MIN_BITS_LOG2, Self::MAX_BITS_LOG2);
        Self {
            bits_log2,
            words: (0..(1usize << (bits_log2 - 6)))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Whether this filter is still small enough a rebuild is worth it:
    /// fewer than 8 bits per statement.
    fn too_small_for(&self, len: u64) -> bool {
        self.bits_log2 < Self::MAX_BITS_LOG2 && (1u64 << self.bits_log2) < len.saturating_mul(8)
    }

    fn positions(&self, digest: &Hash) -> [usize; 4] {
        let mask = (1u64 << self.bits_log2) - 1;
        std::array::from_fn(|i| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&digest[8 * i..8 * i + 8]);
            (u64::from_le_bytes(b) & mask) as usize
        })
    }

    fn insert(&self, digest: &Hash) {
        for p in self.positions(digest) {
            self.words[p >> 6].fetch_or(1 << (p & 63), Ordering::Relaxed);
        }
    }

    fn may_contain(&self, digest: &Hash) -> bool {
        self.positions(digest)
            .iter()
            .all(|p| self.words[p >> 6].load(Ordering::Relaxed) & (1 << (p & 63)) != 0)
    }

    /// `bits_log2` (u8) then the words, little-endian.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + self.words.len() * 8);
        out.push(self.bits_log2 as u8);
        for w in &self.words {
            out.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        out
    }

    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let (&bits_log2, rest) = bytes.split_first()?;
        let bits_log2 = u32::from(bits_log2);
        if !(Self::MIN_BITS_LOG2..=Self::MAX_BITS_LOG2).contains(&bits_log2)
            || rest.len() != (1usize << (bits_log2 - 6)) * 8
        {
            return None;
        }
        Some(Self {
            bits_log2,
            words: rest
                .chunks_exact(8)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(c);
                    AtomicU64::new(u64::from_le_bytes(b))
                })
                .collect(),
        })
    }

    /// The persisted filter if its seal verifies and it reflects a prefix
    /// of this log (its root is the stored tree's at its size); else None.
    /// A filter is a derived file: anything wrong means a rebuild.
    fn load(store: &dyn Store, key: &ed25519_dalek::VerifyingKey, len: u64) -> Option<(Self, u64)> {
        let sealed = store.snapshot(Self::SNAPSHOT).ok()??;
        let snap = crate::snapshot::open(Self::SNAPSHOT, &sealed, key).ok()?;
        if snap.seq > len || merkle::root_at(store, snap.seq).ok()? != snap.root {
            return None;
        }
        let filter = Self::from_bytes(&snap.body)?;
        (!filter.too_small_for(len)).then_some((filter, snap.seq))
    }
}

/// Digests appended recently, for idempotency checks of statements whose
/// store lookup ran before those appends were visible.
#[derive(Default)]
struct RecentDigests {
    /// Digest → the receipt of the event that carries it (durable or in
    /// flight: sequenced, not yet synced).
    by_digest: HashMap<Hash, Receipt>,
    order: std::collections::VecDeque<(u64, Hash)>,
}

impl RecentDigests {
    const KEEP: usize = 1 << 16;

    /// Lowest sequence number still remembered (all later ones are).
    fn floor(&self, len: u64) -> u64 {
        self.order.front().map_or(len, |(s, _)| *s)
    }

    fn insert(&mut self, digest: Hash, receipt: Receipt) {
        self.order.push_back((receipt.seq, digest));
        self.by_digest.insert(digest, receipt);
        while self.order.len() > Self::KEEP {
            if let Some((_, d)) = self.order.pop_front() {
                self.by_digest.remove(&d);
            }
        }
    }
}

fn fail_requests(requests: Vec<Request>, why: &str) {
    for r in requests {
        let n = r.statements.len();
        r.reply.send(
            (0..n)
                .map(|_| Err(LogError::Closed(why.to_string())))
                .collect(),
        );
    }
}

/// Stage 1 of the write path: take everything queued (up to `max_batch`
/// statements), verify the signatures on all cores, hand the batch to the
/// committer, or sequence it here when the committer is idle ([`Stage`]).
/// Runs concurrently with the store's fsync of the previous batch.
fn verify_stage<M: StateMachine>(
    inner: &Inner<M>,
    rx: Receiver<Request>,
    committer: &Stage<Committer<M>>,
    tx: SyncSender<Verified>,
) {
    while let Ok(first) = rx.recv() {
        let mut requests = vec![first];
        let mut count = requests[0].statements.len();
        while count < inner.options.max_batch {
            match rx.try_recv() {
                Ok(r) => {
                    count += r.statements.len();
                    requests.push(r);
                }
                Err(_) => break,
            }
        }
        inner
            .metrics
            .queued
            .fetch_sub(requests.len() as u64, Ordering::Relaxed);
        let all: Vec<&Statement> = requests.iter().flat_map(|r| r.statements.iter()).collect();
        let signatures = verify_all(&all);
        // Idempotency lookups happen here, off the committer's critical
        // path; the committer covers what became visible since `seen_len`.
        let seen_len = inner.visible_len.load(Ordering::Acquire);
        let digests: Vec<Hash> = all.iter().map(|s| s.digest()).collect();
        let prior: Vec<Option<Option<u64>>> = digests
            .iter()
            .map(|d| {
                if inner
                    .statement_filter
                    .as_ref()
                    .is_none_or(|f| f.may_contain(d))
                {
                    inner.store.statement_seq(d).ok()
                } else {
                    // Definitely new as of `seen_len` (a Bloom filter has no
                    // false negatives): no store lookup.
                    Some(None)
                }
            })
            .collect();
        drop(all);
        let verified = Verified {
            requests,
            signatures,
            digests,
            prior,
            seen_len,
        };
        let refused = if let Some(mut idle) = committer.idle() {
            idle.commit_group(vec![verified]).err()
        } else {
            committer.pending.fetch_add(1, Ordering::AcqRel);
            tx.send(verified).err().map(|mpsc::SendError(v)| v.requests)
        };
        if let Some(requests) = refused {
            let why = failure_reason(inner);
            fail_requests(requests, &why);
            while let Ok(r) = rx.try_recv() {
                fail_requests(vec![r], &why);
            }
            return;
        }
    }
}

/// Stage 2's thread: sequences the batches the verify stage handed over,
/// merging whatever else is already verified into one commit.
fn run_committer<M: StateMachine>(
    inner: &Inner<M>,
    stage: &Stage<Committer<M>>,
    rx: Receiver<Verified>,
) {
    while let Ok(first) = rx.recv() {
        let mut committer = lock(&stage.state);
        let mut group = vec![first];
        let mut count = group[0].signatures.len();
        while count < 2 * inner.options.max_batch {
            match rx.try_recv() {
                Ok(v) => {
                    count += v.signatures.len();
                    group.push(v);
                }
                Err(_) => break,
            }
        }
        let merged = group.len();
        let refused = committer.commit_group(group);
        // Under the lock: the verify stage may sequence in this stage's
        // place only after this batch has been handed on.
        stage.pending.fetch_sub(merged, Ordering::AcqRel);
        if let Err(requests) = refused {
            // The store stage stopped (fail-stop): refuse this batch and
            // everything still queued.
            let why = failure_reason(inner);
            fail_requests(requests, &why);
            while let Ok(v) = rx.try_recv() {
                fail_requests(v.requests, &why);
            }
            return;
        }
    }
    // Queue closed: dropping the sender lets the store stage finish.
    drop(lock(&stage.state).syncer.take());
}

impl<M: StateMachine> Committer<M> {
    /// Sequences `group` and hands it to the store stage; the requests to
    /// refuse when that stage has stopped (fail-stop).
    fn commit_group(&mut self, group: Vec<Verified>) -> std::result::Result<(), Vec<Request>> {
        let sequenced = self.sequence(group);
        match &self.syncer {
            Some(tx) => tx.send(sequenced).map_err(|mpsc::SendError(s)| s.requests),
            None => Err(sequenced.requests),
        }
    }

    /// Sequences one group against the working state: no lock, no I/O
    /// (except a store read for a duplicate whose first event is durable).
    fn sequence(&mut self, group: Vec<Verified>) -> Sequenced<M::Admitted> {
        let started = std::time::Instant::now();
        let mut requests = Vec::new();
        let mut checks: Vec<Check> = Vec::new();
        for v in group {
            requests.extend(v.requests);
            for ((signature, digest), prior) in v.signatures.into_iter().zip(v.digests).zip(v.prior)
            {
                checks.push(Check {
                    signature,
                    digest,
                    prior,
                    seen_len: v.seen_len,
                });
            }
        }
        let mut batch = CommitBatch::default();
        let mut events = Vec::new();
        let mut admitted = Vec::new();
        let mut results: Vec<Vec<Result<Receipt>>> = Vec::with_capacity(requests.len());
        let mut next_seq = self.frontier.size();
        let mut idx = 0;
        let clock = now_ms();
        for req in &requests {
            let mut out = Vec::with_capacity(req.statements.len());
            for stmt in &req.statements {
                let check = checks[idx].clone();
                idx += 1;
                out.push(self.sequence_one(
                    stmt,
                    check,
                    clock,
                    &mut batch,
                    (&mut events, &mut admitted),
                    &mut next_seq,
                ));
            }
            results.push(out);
        }
        let root = self.frontier.root();
        let note = (!batch.events.is_empty()).then(|| {
            let note = sign_checkpoint(&self.inner, next_seq, root);
            batch.checkpoint = Some((next_seq, note.clone()));
            note
        });
        Sequenced {
            batch,
            events,
            admitted,
            requests,
            results,
            size: next_seq,
            root,
            note,
            anchored: false,
            started,
        }
    }

    fn sequence_one(
        &mut self,
        stmt: &Statement,
        check: Check,
        clock: u64,
        batch: &mut CommitBatch,
        (events, admitted): (&mut Vec<Event>, &mut Vec<M::Admitted>),
        next_seq: &mut u64,
    ) -> Result<Receipt> {
        stmt.check_shape()?;
        // The signature first: a statement whose signature does not verify
        // is refused even when an identical statement is in the log, so an
        // unauthenticated caller never learns a receipt (or a verdict).
        check
            .signature
            .map_err(|detail| LogError::BadSignature { seq: None, detail })?;
        let digest = check.digest;
        // In this batch, an earlier batch still in flight, or recently
        // durable: the remembered receipt.
        if let Some(r) = self.recent.by_digest.get(&digest) {
            return Ok(Receipt {
                duplicate: true,
                ..r.clone()
            });
        }
        let prior = match check.prior {
            Some(Some(seq)) => Some(seq),
            // New as of `seen_len`, and everything since is in `recent`.
            Some(None) if check.seen_len >= self.recent.floor(*next_seq) => None,
            _ => self.inner.store.statement_seq(&digest)?,
        };
        if let Some(seq) = prior {
            let bytes =
                self.inner.store.event_bytes(seq)?.ok_or_else(|| {
                    LogError::corrupt(format!("event {seq}"), "indexed but missing")
                })?;
            let event = Event::decode(&bytes)?;
            return Ok(Receipt {
                seq,
                leaf_hash: merkle::leaf_hash(&bytes),
                recorded_at_ms: event.recorded_at_ms,
                duplicate: true,
            });
        }
        let recorded_at_ms = clock.max(self.last_time);
        let ctx = AdmitContext {
            seq: *next_seq,
            recorded_at_ms,
        };
        let learnt = self.working.admit(stmt, &ctx)?;
        let event = Event {
            format: EVENT_FORMAT,
            seq: *next_seq,
            recorded_at_ms,
            prev_hash: self.prev_hash,
            kind: stmt.kind.clone(),
            author: stmt.author,
            payload: stmt.payload.clone(),
            signature: stmt.signature,
        };
        let bytes = event.encode();
        let leaf = merkle::leaf_hash(&bytes);
        // An admitted statement always folds; a failure is a bug in the
        // state machine, reported as such (nothing is appended).
        self.working.apply_admitted(&event, &learnt).map_err(|e| {
            LogError::corrupt(
                format!("event {} (not appended)", event.seq),
                format!("the state machine admitted a statement it cannot fold: {e}"),
            )
        })?;
        batch.nodes.extend(self.frontier.push(leaf));
        batch.events.push((event.seq, bytes));
        batch.statements.push((digest, event.seq));
        let seq = event.seq;
        events.push(event);
        admitted.push(learnt);
        self.prev_hash = leaf;
        self.last_time = recorded_at_ms;
        *next_seq += 1;
        let receipt = Receipt {
            seq,
            leaf_hash: leaf,
            recorded_at_ms,
            duplicate: false,
        };
        self.recent.insert(digest, receipt.clone());
        Ok(receipt)
    }
}

/// The store stage: commit each (merged) batch with its fsyncs, then
/// publish it here when the publisher is idle and the store anchored the
/// batch ([`Stage`]), or hand it to the publisher, so that the anchor
/// write of batch N overlaps the store commit of batch N+1.
fn run_store<M: StateMachine>(
    inner: &Inner<M>,
    rx: Receiver<Sequenced<M::Admitted>>,
    publisher: &Stage<Syncer<M>>,
    publish: SyncSender<Sequenced<M::Admitted>>,
) {
    while let Ok(mut sequenced) = rx.recv() {
        // Group commit: everything already sequenced goes to disk with
        // this batch, in one store commit.
        while let Ok(next) = rx.try_recv() {
            sequenced.merge(next);
        }
        if sequenced.note.is_some() {
            match inner.store.commit_anchored(&sequenced.batch) {
                Ok(anchored) => sequenced.anchored = anchored,
                Err(e) => {
                    lock(&publisher.state).fail_stop(&e, Some(sequenced), &rx);
                    return;
                }
            }
        }
        // A batch with an anchor still to write goes to the publisher's
        // thread: that fdatasync overlaps the next commit.
        let anchored = sequenced.anchored || sequenced.note.is_none();
        if anchored && let Some(mut idle) = publisher.idle() {
            match idle.make_durable(sequenced) {
                // Answered: now what the store deferred until then.
                Ok(()) => match inner.store.after_commit() {
                    Ok(()) => continue,
                    Err(e) => {
                        idle.fail_stop(&e, None, &rx);
                        idle.last = None;
                        return;
                    }
                },
                Err(failed) => {
                    let (e, sequenced) = *failed;
                    idle.fail_stop(&e, Some(sequenced), &rx);
                    // As after the publisher's own fail-stop: no snapshots
                    // when its thread ends.
                    idle.last = None;
                    return;
                }
            }
        }
        publisher.pending.fetch_add(1, Ordering::AcqRel);
        if let Err(mpsc::SendError(s)) = publish.send(sequenced) {
            // The publisher stopped (fail-stop): refuse the rest.
            let why = failure_reason(inner);
            fail_requests(s.requests, &why);
            while let Ok(s) = rx.try_recv() {
                fail_requests(s.requests, &why);
            }
            return;
        }
        // The publisher answers (it anchors first when the store did not).
        if let Err(e) = inner.store.after_commit() {
            lock(&publisher.state).fail_stop(&e, None, &rx);
            return;
        }
    }
}

/// The publish stage's thread: anchor, fold into the durable state,
/// publish, reply. Batches arrive durable in the store, in order.
fn run_publish<M: StateMachine>(stage: &Stage<Syncer<M>>, rx: Receiver<Sequenced<M::Admitted>>) {
    while let Ok(mut sequenced) = rx.recv() {
        let mut publisher = lock(&stage.state);
        // Everything already stored is anchored with one write.
        let mut merged = 1;
        while let Ok(next) = rx.try_recv() {
            sequenced.merge(next);
            merged += 1;
        }
        if let Err(failed) = publisher.make_durable(sequenced) {
            let (e, sequenced) = *failed;
            publisher.fail_stop(&e, Some(sequenced), &rx);
            // Never zero again: the store stage publishes nothing more.
            return;
        }
        // Under the lock: the store stage may publish in this stage's
        // place only after this batch is published.
        stage.pending.fetch_sub(merged, Ordering::AcqRel);
    }
    // The store stage ended (close): final snapshots of the durable state.
    let publisher = lock(&stage.state);
    if let Some((len, root)) = publisher.last {
        let state = publisher
            .inner
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = write_snapshots(&publisher.inner, &state, len, root) {
            tracing::warn!("writing snapshots on close failed: {e}");
        }
    }
}

impl<M: StateMachine> Syncer<M> {
    fn make_durable(
        &mut self,
        s: Sequenced<M::Admitted>,
    ) -> std::result::Result<(), FailedBatch<M::Admitted>> {
        let inner = Arc::clone(&self.inner);
        let appended = s.events.len() as u64;
        if let Some(note) = &s.note {
            // 1. (done by the store stage) One atomic write, flush and fsync
            // of every file and directory it touched.
            // 2. The anchor, before anyone is told: a checkpoint is served
            // (and a receipt sent) only once it is anchored. The store may
            // have anchored it with the commit, in the same wait.
            if !s.anchored
                && let Err(e) = inner.store.put_anchor(note)
            {
                return Err(Box::new((e, s)));
            }
            // 3. Fold into the durable state (a short write lock: readers
            // are never blocked across an fsync).
            {
                let mut state = inner
                    .state
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for (event, admitted) in s.events.iter().zip(&s.admitted) {
                    if let Err(e) = state.apply_admitted(event, admitted) {
                        // Impossible: the working state folded the same
                        // events. A non-deterministic state machine.
                        let e = LogError::corrupt(
                            format!("event {}", event.seq),
                            format!(
                                "the durable state does not fold what the working state folded: {e}"
                            ),
                        );
                        return Err(Box::new((e, s)));
                    }
                }
            }
            if let Some(filter) = &inner.statement_filter {
                for (digest, _) in &s.batch.statements {
                    filter.insert(digest);
                }
            }
            // After the filter holds them: the verify stage reads
            // `visible_len` before consulting the filter.
            inner.visible_len.store(s.size, Ordering::Release);
            // 4. Publish.
            {
                let mut c = lock(&inner.committed);
                *c = s.size;
                inner.committed_len.store(s.size, Ordering::Release);
            }
            self.last = Some((s.size, s.root));
        }
        let rejected: u64 = s.results.iter().flatten().filter(|r| r.is_err()).count() as u64;
        inner
            .metrics
            .appended
            .fetch_add(appended, Ordering::Relaxed);
        inner
            .metrics
            .rejected
            .fetch_add(rejected, Ordering::Relaxed);
        inner.metrics.batches.fetch_add(1, Ordering::Relaxed);
        inner.metrics.commit_micros_total.fetch_add(
            u64::try_from(s.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        // 5. Answer the callers, and only then wake tail waiters and run
        // the listeners: a listener that wakes a thread (the auto-verify
        // runner, say) would otherwise give it a core before the callers'
        // wake-ups (docs/BENCHMARKS.md, thirteenth session). The durable
        // length was published above, so an answered caller reads its
        // append whether or not a listener has run.
        for (req, res) in s.requests.into_iter().zip(s.results) {
            req.reply.send(res);
        }
        if s.note.is_some() {
            inner.committed_changed.notify_all();
            for l in lock(&inner.listeners).iter() {
                l(s.size);
            }
        }
        self.since_snapshot += appended;
        if self.since_snapshot >= inner.options.snapshot_every {
            self.since_snapshot = 0;
            let state = inner
                .state
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // A snapshot is a derived file: failing to write one is logged,
            // never fail-stop (the log is intact; the next open rebuilds).
            if let Err(e) = write_snapshots(&inner, &state, s.size, s.root) {
                tracing::warn!("writing snapshots failed: {e}");
            }
        }
        Ok(())
    }

    /// A storage error: record why, refuse this batch (if the error came
    /// with one) and everything after it, and tell the listeners. The
    /// durable state never folded the failed batch, so readers keep seeing
    /// exactly what is on disk.
    fn fail_stop(
        &self,
        e: &LogError,
        failed: Option<Sequenced<M::Admitted>>,
        rx: &Receiver<Sequenced<M::Admitted>>,
    ) {
        let msg = format!("fail-stop after a storage error: {e}");
        tracing::error!("{msg}");
        *lock(&self.inner.failure) = Some(msg.clone());
        drop(lock(&self.inner.queue).take());
        // Listeners (health) first: once a caller hears of the failure, so
        // does everyone watching.
        for l in lock(&self.inner.failure_listeners).iter() {
            l(&msg);
        }
        // Wake tail waiters so they see the failure.
        self.inner.committed_changed.notify_all();
        if let Some(failed) = failed {
            fail_requests(failed.requests, &msg);
        }
        while let Ok(s) = rx.try_recv() {
            fail_requests(s.requests, &msg);
        }
    }
}

/// Verifies every statement's signature under the one rule
/// ([`crate::signature`]): batches on chunks across all cores, each answer
/// exactly what a single verification would give.
fn verify_all(stmts: &[&Statement]) -> Vec<Result<(), String>> {
    crate::event::verify_statements(stmts)
        .into_iter()
        .map(|r| r.map_err(|e| e.to_string()))
        .collect()
}
