//! The storage trait and its embedded sled implementation.
//!
//! The trait is deliberately narrow — commit a batch durably, read events,
//! Merkle nodes, statement digests, checkpoints and projection snapshots — so
//! that a backend on another engine (a PostgreSQL-wire database plus an object
//! store) can replace sled without touching projections, the verifier or the
//! API.
//!
//! sled layout (one tree, prefix-keyed, so a commit is one atomic
//! `apply_batch`):
//!
//! | key | value |
//! | --- | --- |
//! | `b'e' ‖ seq (u64 BE)` | canonical event bytes (the first [`EVENT_CHUNK`] of them) |
//! | `b'e' ‖ seq (u64 BE) ‖ i (u16 BE)` | chunk `i ≥ 1` of a larger event |
//! | `b'n' ‖ level (u8) ‖ index (u64 BE)` | complete Merkle node hash (level 0 = leaf hash) |
//! | `b's' ‖ statement digest (32)` | seq (u64 BE) of the first event carrying it |
//! | `b'c' ‖ tree size (u64 BE)` | signed checkpoint note (UTF-8) |
//!
//! Projection snapshots are files under `DIR/snapshots/`, written atomically;
//! the store keeps their bytes, the log authenticates them
//! ([`crate::snapshot`]). The anchor (the latest signed checkpoint) is the
//! file `DIR/anchor`, apart from the sled tree ([`Anchor`]).
//!
//! # Durability
//!
//! A commit is one sled batch, `flush`, then `sync_all` of `log/db` (sled
//! 0.34's flush is not an fsync: sled#1452). sled writes a node that grows
//! past a quarter segment into its own file under `log/blobs/` and never
//! syncs it, nor the directories; so after every flush the store fsyncs each
//! new file in `log/blobs/` and every directory of `log/` whose listing
//! changed. No acknowledged byte lives in a file or a name that was not
//! fsynced.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{LogError, Result};
use crate::merkle::{Hash, MerkleError, NodeSource};

/// Everything one group commit writes, atomically.
#[derive(Debug, Default)]
pub struct CommitBatch {
    /// `(seq, canonical bytes)`, consecutive from the store's current length.
    pub events: Vec<(u64, Vec<u8>)>,
    /// `(statement digest, seq)` for idempotent replays.
    pub statements: Vec<(Hash, u64)>,
    /// Complete Merkle nodes created by these events.
    pub nodes: Vec<(u8, u64, Hash)>,
    /// The signed checkpoint for the tree after this batch.
    pub checkpoint: Option<(u64, String)>,
}

/// What a store's own bookkeeping holds, for [`crate::verify::verify_log`]
/// and the background scrub to check against the events
/// ([`Store::check_structures`]).
#[derive(Debug, Default)]
pub struct StructureReport {
    /// The statement digest the store recorded for each event, indexed by
    /// sequence number (`None`, or past the end, where it recorded none).
    /// The verifier compares each with the digest of the event's
    /// statement: a recorded digest that differs would make the store
    /// answer "not in the log" for a statement that is.
    pub statements: Vec<Option<Hash>>,
    /// Damage found in the store's own files: `(location, detail)`, the
    /// location a file and byte offset.
    pub damage: Vec<(String, String)>,
}

/// The narrow storage interface the ledger needs.
pub trait Store: NodeSource + Send + Sync {
    /// Writes `batch` atomically and returns only once it is on disk.
    fn commit(&self, batch: &CommitBatch) -> Result<()>;
    /// Number of events stored.
    fn len(&self) -> Result<u64>;
    /// Whether the log is empty.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Canonical bytes of event `seq`.
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>>;
    /// Canonical bytes of events `from..to` (clamped to the log), in order.
    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>>;
    /// Like [`Store::event_range`], for the full check and recovery, which
    /// report damage instead of stopping at it: damage to the files that
    /// hold the events does not end the read. The events that can be read
    /// are returned, and each one that cannot is named in the second list
    /// `(seq, where, what)`. Other errors (I/O) are errors. The default
    /// reads the range, and on damage each event alone.
    fn salvage_range(&self, from: u64, to: u64) -> Result<SalvagedRange> {
        match self.event_range(from, to) {
            Ok(events) => return Ok((events, Vec::new())),
            Err(LogError::Corrupt { .. }) => {}
            Err(e) => return Err(e),
        }
        let to = to.min(self.len()?);
        let mut events = Vec::new();
        let mut unreadable = Vec::new();
        for seq in from..to {
            match self.event_bytes(seq) {
                Ok(Some(bytes)) => events.push((seq, bytes)),
                Ok(None) => {}
                Err(LogError::Corrupt { location, detail }) => {
                    unreadable.push((seq, location, detail));
                }
                Err(e) => return Err(e),
            }
        }
        Ok((events, unreadable))
    }
    /// For recovery only: what the store's files still hold at and past
    /// its length ([`Store::len`]) up to `to`: the events that can be read
    /// and the leaf hashes kept for them, each list in order and possibly
    /// with gaps. A store whose length ends where damage cut its run of
    /// events short (the tile store after a torn entry bundle) still holds
    /// events and leaves after the damage; those can be proved by a signed
    /// checkpoint whose tree reaches them. A store may start before its
    /// length (the tile store: at the start of the bundle the length ends
    /// in), where what it returns is read more carefully than
    /// [`Store::salvage_range`] and [`Store::leaf_hashes`] read it; callers
    /// prefer it for those events. The default, for stores whose length is
    /// where their files end, returns nothing.
    fn salvage_past_len(&self, to: u64) -> Result<SalvagedPastLen> {
        let _ = to;
        Ok(SalvagedPastLen::default())
    }
    /// For recovery only: bytes that may be event `seq`, from where the
    /// store keeps them apart from its run of events (the tile store: the
    /// file of an event over 65,535 bytes, whose stand-in entry in its
    /// bundle is damaged or lost), when they decode as event `seq`. Never a
    /// repair: checks keep reporting the damage; a salvage proves the bytes
    /// against a signed root before it carries them. The default: none.
    fn salvage_set_apart(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        let _ = seq;
        Ok(None)
    }
    /// What the store's open repaired in its files (for the full check to
    /// say; a store opened in a private copy repaired the copy only). The
    /// default: nothing.
    fn repaired_at_open(&self) -> Vec<String> {
        Vec::new()
    }
    /// Sequence number of the event that first carried a statement digest.
    fn statement_seq(&self, digest: &Hash) -> Result<Option<u64>>;
    /// Calls `f` with every statement digest in the log (to build the
    /// ledger's in-memory filter when it opens).
    fn for_each_statement(&self, f: &mut dyn FnMut(Hash)) -> Result<()>;
    /// Stored leaf hashes (Merkle level 0) of events `from..to` that exist,
    /// in order. Replay compares them with the hashes of the stored bytes.
    fn leaf_hashes(&self, from: u64, to: u64) -> Result<Vec<(u64, Hash)>> {
        Ok((from..to)
            .filter_map(|i| self.node(0, i).ok().map(|h| (i, h)))
            .collect())
    }
    /// The checkpoint for exactly `size`, or the latest when `size` is None.
    fn checkpoint(&self, size: Option<u64>) -> Result<Option<(u64, String)>>;
    /// Every stored checkpoint whose size is in `from..=to`, in order of
    /// size (for copying a ledger between stores, and for a follower that
    /// catches up one commit boundary at a time). The default asks
    /// [`Store::checkpoint`] for each size; stores that can scan override it.
    fn checkpoints(&self, from: u64, to: u64) -> Result<Vec<(u64, String)>> {
        let mut out = Vec::new();
        for size in from..=to {
            if let Some(c) = self.checkpoint(Some(size))? {
                out.push(c);
            }
        }
        Ok(out)
    }
    /// Durably stores signed checkpoints for sizes whose events are stored
    /// (copying a ledger's history into a new store). The default commits
    /// them one by one; stores override it with one durable write.
    fn put_checkpoints(&self, checkpoints: &[(u64, String)]) -> Result<()> {
        for c in checkpoints {
            self.commit(&CommitBatch {
                checkpoint: Some(c.clone()),
                ..CommitBatch::default()
            })?;
        }
        Ok(())
    }
    /// Durably stores the sealed bytes of a projection snapshot (see
    /// [`crate::snapshot`]; the store does not interpret them).
    fn put_snapshot(&self, name: &str, bytes: &[u8]) -> Result<()>;
    /// The stored sealed bytes of snapshot `name`.
    fn snapshot(&self, name: &str) -> Result<Option<Vec<u8>>>;
    /// The anchor: the latest signed checkpoint note, kept durably apart from
    /// the events (`None` only for a store that was never anchored).
    fn anchor(&self) -> Result<Option<String>>;
    /// Durably replaces the anchor. Called after the commit it covers is
    /// durable, and before that checkpoint is served to anyone.
    fn put_anchor(&self, note: &str) -> Result<()>;
    /// For recovery only: the checkpoint notes of anchor slots that were
    /// written but do not verify (a torn write, or damage since), as far as
    /// their bytes still hold one. Untrusted: a caller counts one only if
    /// its signature verifies (a damaged newest slot may still carry the
    /// signed size the ledger acknowledged). The default: none.
    fn anchor_notes_of_damaged_slots(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// Commits `batch` like [`Store::commit`] and, when the store can make
    /// both durable in one wait, also anchors `batch.checkpoint` (the anchor
    /// then carries the batch's events, so an open that finds the anchor
    /// ahead of the store by exactly this batch commits it again, FORMAT
    /// §9). Returns whether it anchored; when it did not, the caller
    /// anchors with [`Store::put_anchor`] as usual. The default only
    /// commits.
    fn commit_anchored(&self, batch: &CommitBatch) -> Result<bool> {
        self.commit(batch)?;
        Ok(false)
    }
    /// Work the last commit deferred until its callers were answered (the
    /// tile store begins its background fdatasync round and wakes its
    /// index thread here). The write path calls it after each commit's
    /// answers; a store also does it at its next commit and at its close,
    /// so nothing is lost if it is never called. An error is a storage
    /// failure: the write path stops (fail-stop). The default does nothing.
    fn after_commit(&self) -> Result<()> {
        Ok(())
    }
    /// Whether [`Store::statement_seq`] is an exact index lookup of a few
    /// reads whatever the log's size: the sequencer then keeps no Bloom
    /// filter of statement digests (nor its sealed snapshot) in front of
    /// it, so opening does not read one.
    fn exact_statement_lookup(&self) -> bool {
        false
    }
    /// Checks the store's own structures that the rest of this trait does
    /// not expose for checking (for the tile store: every commit record's
    /// checksum and order, every stored hash tile above level 0 against its
    /// recomputation from the level below) and returns them with what was
    /// found. `None`: the store has nothing of the kind (the default).
    /// `keep_going` is polled now and then; when it says stop, the report
    /// so far is returned.
    fn check_structures(&self, keep_going: &dyn Fn() -> bool) -> Result<Option<StructureReport>> {
        let _ = keep_going;
        Ok(None)
    }
    /// Recomputes the store's derived Merkle data (the tile store's hash
    /// tiles) from the event bytes, and, only when those bytes give `root`
    /// at `size` (a signed checkpoint's), replaces every stored copy that
    /// differs and returns where (`tiles/tile/0/001`, …; empty when none
    /// differed). `None`: the bytes do not give that root (the events, not
    /// the derived data, are damaged: nothing was written), or the store
    /// keeps no derived tree it can rebuild (the default). The open check
    /// calls it when the tree disagrees with the bytes, so that damage to
    /// a derived file is repaired instead of refusing the ledger.
    fn rebuild_derived_tree(&self, size: u64, root: &Hash) -> Result<Option<Vec<String>>> {
        let _ = (size, root);
        Ok(None)
    }
    /// What the store can tell about why it holds fewer events than a
    /// signed checkpoint says it should (`expected`), in a sentence naming
    /// its files (the tile store: a commit log that accounts for fewer
    /// events than the entry bundles hold, or the bundle where the events
    /// end). Called only when the open refuses for that reason (it may read
    /// the whole store). `None`: nothing to add (the default).
    fn explain_shortfall(&self, expected: u64) -> Result<Option<String>> {
        let _ = expected;
        Ok(None)
    }
}

/// For [`Store::rebuild_derived_tree`] of a store that keeps every
/// complete Merkle node (sled, PostgreSQL): the nodes the event bytes of
/// `store` give that its stored copies lack or differ from, as `(level,
/// index, hash)`; `None` when the bytes do not give `root` at `size` (or
/// events are missing): then the events are the damage and nothing may be
/// rewritten. `stored(level, from, to)` reads the stored nodes of one level
/// in an index range (those present, in order). Reads every event.
pub fn derived_tree_differences(
    store: &dyn Store,
    size: u64,
    root: &Hash,
    stored: &dyn Fn(u8, u64, u64) -> Result<Vec<(u64, Hash)>>,
) -> Result<Option<Vec<(u8, u64, Hash)>>> {
    const CHUNK: u64 = 4096;
    let len = store.len()?;
    if size > len {
        return Ok(None);
    }
    let mut frontier = crate::merkle::Frontier::new();
    let mut root_at_size = (size == 0).then(crate::merkle::empty_root);
    let mut differing = Vec::new();
    for from in (0..len).step_by(CHUNK as usize) {
        let to = (from + CHUNK).min(len);
        let events = store.event_range(from, to)?;
        if events.len() as u64 != to - from
            || events
                .iter()
                .zip(from..)
                .any(|((seq, _), want)| *seq != want)
        {
            return Ok(None);
        }
        // The nodes these events complete, by level (indices ascending).
        let mut by_level: Vec<Vec<(u64, Hash)>> = Vec::new();
        for (_, bytes) in &events {
            for (level, index, hash) in frontier.push(crate::merkle::leaf_hash(bytes)) {
                let level = usize::from(level);
                if by_level.len() <= level {
                    by_level.resize_with(level + 1, Vec::new);
                }
                by_level[level].push((index, hash));
            }
            if frontier.size() == size {
                root_at_size = Some(frontier.root());
            }
        }
        for (level, nodes) in by_level.iter().enumerate() {
            let (Some(first), Some(last)) = (nodes.first(), nodes.last()) else {
                continue;
            };
            // Invariant: a Merkle level is below 64.
            let level = u8::try_from(level).unwrap_or(u8::MAX);
            let present: std::collections::HashMap<u64, Hash> =
                stored(level, first.0, last.0 + 1)?.into_iter().collect();
            differing.extend(
                nodes
                    .iter()
                    .filter(|(index, hash)| present.get(index) != Some(hash))
                    .map(|(index, hash)| (level, *index, *hash)),
            );
        }
    }
    Ok((root_at_size.as_ref() == Some(root)).then_some(differing))
}

/// How a store that keeps Merkle nodes names those it rewrote: the first
/// eight as `{place} Merkle node (level, index)`, then how many more.
pub fn name_nodes(place: &str, nodes: &[(u8, u64, Hash)]) -> Vec<String> {
    nodes
        .iter()
        .take(8)
        .map(|(level, index, _)| format!("{place} Merkle node ({level}, {index})"))
        .chain((nodes.len() > 8).then(|| format!("{} more {place} Merkle nodes", nodes.len() - 8)))
        .collect()
}

/// What [`Store::salvage_range`] read: the events that could be read, and
/// `(seq, where, what)` for each that could not.
pub type SalvagedRange = (Vec<(u64, Vec<u8>)>, Vec<(u64, String, String)>);

/// What [`Store::salvage_past_len`] found past a store's length.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SalvagedPastLen {
    /// `(seq, canonical bytes)` of the events that can be read.
    pub events: Vec<(u64, Vec<u8>)>,
    /// `(seq, leaf hash)` kept in the store's derived tree.
    pub leaves: Vec<(u64, Hash)>,
    /// `(level, index, hash)`: Merkle nodes above the leaves that the
    /// store's derived files kept over that range (a tile store's hash
    /// tiles of levels 1 and up, and its partial tiles as they were before
    /// the open). Such a node stands in for a run of events whose bytes and
    /// leaves are both gone, so that the events after it can still be
    /// proved by a signed root. Nothing here is trusted: a salvage uses a
    /// node only inside a tree that gives a signed checkpoint's root.
    pub nodes: Vec<(u8, u64, Hash)>,
}

/// Merkle nodes at or above this level are also kept in memory (about 4
/// bytes per event: 1/16 + 1/32 + … of the leaves), so a proof reads only the
/// bottom four levels from sled.
pub const CACHED_FROM_LEVEL: u8 = 4;

/// sled's page cache (its default is 1 GiB; see docs/BENCHMARKS.md).
pub const SLED_CACHE_BYTES: u64 = 16 << 20;

/// The embedded sled store under `DIR/log/` with snapshots in `DIR/snapshots/`.
pub struct SledStore {
    db: sled::Db,
    tree: sled::Tree,
    db_file: File,
    log_dir: PathBuf,
    snapshot_dir: PathBuf,
    anchor: Anchor,
    /// Names under `log/` (and `log/blobs/`) as of the last sync.
    synced_names: std::sync::Mutex<std::collections::BTreeSet<PathBuf>>,
    /// `levels[l - CACHED_FROM_LEVEL][i]` = node (l, i), for every stored
    /// complete node at level ≥ [`CACHED_FROM_LEVEL`], once loaded.
    upper: Arc<std::sync::RwLock<UpperLevels>>,
    /// Loads `upper` in the background after open (so an open does not
    /// cost a scan of every upper node); stopped and joined on drop.
    upper_loader: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    /// For [`SledStore::open_copy`]: the copy sled opened (removed on drop,
    /// after the fields above: fields drop in declaration order) and the
    /// lock held on the original. Held only to be dropped.
    _copy: Option<PrivateCopy>,
}

/// A private copy of (part of) a data directory, for commands that only
/// read a store that may be damaged ([`SledStore::open_copy`],
/// [`crate::tiles::TileStore::open_copy`]): the store opens the copy, so its
/// recovery at open (sled's, or the tile store's redo and rebuilds of
/// derived files) never writes to the evidence. Removed when dropped; the
/// lock on the original store is held as long as the copy is in use, so
/// that a server cannot start on the original meanwhile.
#[derive(Debug)]
pub(crate) struct PrivateCopy {
    pub(crate) dir: PathBuf,
    _original_lock: Option<File>,
}

impl PrivateCopy {
    /// Copies each `(source, name)` to `name` in a new directory under the
    /// system's temporary directory (`TMPDIR`), holding `original_lock`
    /// (already locked) until the copy is dropped. A missing source is
    /// left out (the store reports it as it would in place).
    ///
    /// Refused when the temporary directory lies inside `data_dir` (the
    /// copy would write into the evidence, and copy itself). Copies a
    /// process left behind (killed before it could remove them) are
    /// removed first, once that process is gone.
    ///
    /// A file `link` accepts (by its path below the source directory) is
    /// hard-linked rather than copied: for files the store never writes in
    /// place once they exist (it replaces them by a rename, which in the
    /// copy leaves the original alone).
    pub(crate) fn make(
        kind: &str,
        data_dir: &Path,
        original_lock: Option<File>,
        sources: &[(&Path, &str)],
        link: &dyn Fn(&Path) -> bool,
    ) -> Result<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let temp = resolved(&std::env::temp_dir());
        let data = resolved(data_dir);
        if temp.starts_with(&data) {
            return Err(LogError::FailedPrecondition(format!(
                "the temporary directory {} (TMPDIR) is inside the data directory {}: a private \
                 copy of the store there would write into it; set TMPDIR to a directory outside it",
                temp.display(),
                data.display()
            )));
        }
        remove_abandoned_copies(&temp);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = temp.join(format!(
            "docket-{kind}-copy-{}-{nanos}-{n}",
            std::process::id()
        ));
        // Made before the copying, so that a failed copy is removed.
        let copy = Self {
            dir: dir.clone(),
            _original_lock: original_lock,
        };
        std::fs::create_dir_all(&dir).map_err(|e| LogError::io(&dir, e))?;
        for (source, name) in sources {
            let to = dir.join(name);
            match std::fs::symlink_metadata(source) {
                Ok(m) if m.is_dir() => copy_dir(source, &to, Path::new(""), link)?,
                Ok(_) => copy_file(source, &to)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(source, e)),
            }
        }
        Ok(copy)
    }
}

impl PrivateCopy {
    /// A private copy ([`PrivateCopy::make`]) of the store directory
    /// `store` (`log` or `tiles`) of data directory `dir`, with its anchor
    /// and snapshots, the original locked by `lock` (given the store
    /// directory). The store directory must exist, and so must
    /// `snapshots/` unless `salvage`: they are derived, and the copy of a
    /// store read to salvage gets an empty one.
    pub(crate) fn of_store(
        store: &str,
        dir: &Path,
        salvage: bool,
        lock: &dyn Fn(&Path) -> Result<Option<File>>,
        link: &dyn Fn(&Path) -> bool,
    ) -> Result<Self> {
        let original = dir.join(store);
        let snapshots = dir.join("snapshots");
        if salvage {
            require_dirs(&[&original])?;
        } else {
            require_dirs(&[&original, &snapshots])?;
        }
        let kind = if store == "log" { "sled" } else { store };
        let copy = Self::make(
            kind,
            dir,
            lock(&original)?,
            &[
                (&original, store),
                (&dir.join("anchor"), "anchor"),
                (&snapshots, "snapshots"),
            ],
            link,
        )?;
        let copied = copy.dir.join("snapshots");
        if salvage && !copied.exists() {
            std::fs::create_dir(&copied).map_err(|e| LogError::io(&copied, e))?;
        }
        Ok(copy)
    }
}

/// `path` made absolute and resolved (symbolic links, `..`) as far as it
/// exists; the rest, not yet created, appended as given.
fn resolved(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

/// Removes the private copies under `temp` whose process is gone and that
/// are over an hour old (a copy is named `docket-<kind>-copy-<pid>-…`; a
/// process killed by a signal cannot remove its own). Linux only (`/proc`);
/// best effort.
fn remove_abandoned_copies(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name
            .strip_prefix("docket-")
            .and_then(|r| r.split_once("-copy-"))
            .map(|(_, r)| r)
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        // And an hour old: a process of another PID namespace sharing this
        // directory may be alive and reading its copy.
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(3600));
        if old && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The error for a store whose lock file `path` another process holds
/// (worded as sled words it: callers recognise `could not acquire lock`).
pub(crate) fn held_elsewhere(path: &Path) -> LogError {
    LogError::io(
        path,
        std::io::Error::other("could not acquire lock: another process holds this ledger's store"),
    )
}

/// Copies the directory `from` into `to` (created), recursively; a file
/// whose path below the top directory copied (`rel`) `link` accepts is
/// hard-linked instead when it can be (same file system, writable), else
/// copied.
fn copy_dir(from: &Path, to: &Path, rel: &Path, link: &dyn Fn(&Path) -> bool) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| LogError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| LogError::io(from, e))? {
        let entry = entry.map_err(|e| LogError::io(from, e))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let rel = rel.join(entry.file_name());
        let kind = entry.file_type().map_err(|e| LogError::io(&src, e))?;
        if kind.is_dir() {
            copy_dir(&src, &dst, &rel, link)?;
        } else if kind.is_file() {
            if link(&rel) && std::fs::hard_link(&src, &dst).is_ok() {
                continue;
            }
            copy_file(&src, &dst)?;
        }
    }
    Ok(())
}

/// Copies file `from` to `to`; a failure names both (reading the one, or
/// writing the other: a full temporary directory, say).
fn copy_file(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).map(|_| ()).map_err(|e| {
        LogError::io(
            to,
            std::io::Error::new(e.kind(), format!("copying {} here: {e}", from.display())),
        )
    })
}

/// The in-memory upper Merkle levels. Until `loaded`, lookups go to sled and
/// commits do not touch `levels` (the loader tops up from sled what was
/// committed while it scanned, under the write lock, before it sets
/// `loaded`).
#[derive(Debug, Default)]
struct UpperLevels {
    loaded: bool,
    levels: Vec<Vec<Hash>>,
    /// Nodes a rebuild rewrote in sled while the loader had not published
    /// yet: its scan may have read them before the rewrite, so it lays
    /// these over what it read when it publishes.
    rewritten_before_load: Vec<(u8, u64, Hash)>,
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStore")
            .field("snapshot_dir", &self.snapshot_dir)
            .finish_non_exhaustive()
    }
}

/// Largest value the store writes into sled: an event is split into chunks
/// of at most this size. sled writes a tree node whose serialised size
/// passes a quarter segment (1 MiB with our 4 MiB segments) into a file of
/// its own under `log/blobs/` and a leaf holds up to 17 entries, so
/// 17 × 16 KiB keeps every node inline in the fsynced `log/db`, whatever
/// the event size (up to the 256 KiB payload limit).
pub const EVENT_CHUNK: usize = 16 << 10;

/// Key of chunk `chunk` of event `seq`: chunk 0 is `e‖seq`, chunk i ≥ 1 is
/// `e‖seq‖i (u16 BE)`, so chunks sort in order right after their event.
fn event_chunk_key(seq: u64, chunk: u16) -> Vec<u8> {
    let mut k = event_key(seq).to_vec();
    if chunk > 0 {
        k.extend_from_slice(&chunk.to_be_bytes());
    }
    k
}

fn event_key(seq: u64) -> [u8; 9] {
    let mut k = [b'e'; 9];
    k[1..].copy_from_slice(&seq.to_be_bytes());
    k
}

fn node_key(level: u8, index: u64) -> [u8; 10] {
    let mut k = [0u8; 10];
    k[0] = b'n';
    k[1] = level;
    k[2..].copy_from_slice(&index.to_be_bytes());
    k
}

fn statement_key(digest: &Hash) -> [u8; 33] {
    let mut k = [b's'; 33];
    k[1..].copy_from_slice(digest);
    k
}

fn checkpoint_key(size: u64) -> [u8; 9] {
    let mut k = [b'c'; 9];
    k[1..].copy_from_slice(&size.to_be_bytes());
    k
}

fn seq_from(bytes: &[u8], location: &str) -> Result<u64> {
    let arr: [u8; 8] = bytes
        .try_into()
        .map_err(|_| LogError::corrupt(location, "expected an 8-byte sequence number"))?;
    Ok(u64::from_be_bytes(arr))
}

/// The message of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs `op` on the sled tree (`what` names it), turning a panic inside
/// sled into [`LogError::Corrupt`] naming `log/`: sled asserts on some
/// damaged files (at open, guarded by
/// [`crate::sequencer::open_sled_guarded`], and also on a later read of a
/// damaged node), and damage is reported, never a crash.
fn sled_guarded<T>(what: &str, op: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(op)).unwrap_or_else(|payload| {
        Err(LogError::corrupt(
            "log/",
            format!(
                "the sled store is damaged ({what}: sled panicked: {})",
                panic_message(payload.as_ref())
            ),
        ))
    })
}

impl SledStore {
    /// Opens (or creates) the store under `dir`.
    ///
    /// The directories `log/` and `snapshots/` and the anchor file must
    /// exist ([`SledStore::create`] makes them); a missing one is reported,
    /// never silently recreated, because a fresh empty store would hide a
    /// lost log.
    pub fn open(dir: &Path) -> Result<Self> {
        Self::open_at(dir, dir.join("log"), None)
    }

    /// Opens a private copy of the store under `dir`, for commands that
    /// only read a store that may be damaged (`replay --verify`, `recover`,
    /// the source of `migrate`): sled's own recovery at open rewrites a
    /// damaged `log/db` (it drops what follows a bad segment and zeroes it),
    /// which must not happen to the evidence. `log/` is copied to the
    /// system's temporary directory with the anchor and the snapshots, and
    /// sled opens the copy. The original `log/db` stays locked (as
    /// sled locks it) while the copy is in use, so a server cannot start on
    /// it meanwhile; one already running is reported as sled reports it
    /// (`could not acquire lock`). Costs one copy of `log/` (about 1.4 KB
    /// per event).
    pub fn open_copy(dir: &Path) -> Result<Self> {
        Self::open_copy_with(dir, false)
    }

    /// [`SledStore::open_copy`] for `docket recover`: a missing
    /// `snapshots/` (derived) is no reason to stop; the copy gets an empty
    /// one.
    pub fn open_copy_to_salvage(dir: &Path) -> Result<Self> {
        Self::open_copy_with(dir, true)
    }

    fn open_copy_with(dir: &Path, salvage: bool) -> Result<Self> {
        let lock = |original: &Path| {
            let db_path = original.join("db");
            let lock = File::open(&db_path).map_err(|e| LogError::io(&db_path, e))?;
            match lock.try_lock() {
                Ok(()) => Ok(Some(lock)),
                Err(std::fs::TryLockError::WouldBlock) => Err(held_elsewhere(&db_path)),
                Err(std::fs::TryLockError::Error(e)) => Err(LogError::io(&db_path, e)),
            }
        };
        // sled rewrites its files in place: all are copied.
        let copy = PrivateCopy::of_store("log", dir, salvage, &lock, &|_| false)?;
        let log_dir = copy.dir.join("log");
        Self::open_at(dir, log_dir, Some(copy))
    }

    fn open_at(dir: &Path, log_dir: PathBuf, copy: Option<PrivateCopy>) -> Result<Self> {
        // A private copy holds the anchor and the snapshots too (nothing is
        // opened for writing in the data directory: read-only media work).
        let files = copy.as_ref().map_or(dir, |c| c.dir.as_path());
        let snapshot_dir = files.join("snapshots");
        require_dirs(&[&log_dir, &snapshot_dir])?;
        let anchor = Anchor::open(&files.join("anchor"))?;
        let config = sled::Config::new()
            .path(&log_dir)
            // Keep every value inline in the main file: sled writes values
            // over segment_size/4 to separate blob files without fsync.
            .segment_size(4 << 20)
            // sled's default page cache is 1 GiB, and a busy ledger fills
            // it (about 1.2 KB per event): a server grew past 1.1 GB at 1M
            // events under load; with 16 MiB it stays under 256 MB (and
            // appends were no slower). Reads past the cache go to the OS's
            // page cache; the upper Merkle levels stay in memory anyway.
            .cache_capacity(SLED_CACHE_BYTES)
            .flush_every_ms(None);
        // sled releases its lock on `log/db` when the last of its own pool
        // tasks drops the file, which can be a moment after the `Db` we
        // closed is gone: a lock held by this process is retried briefly;
        // one held elsewhere (a running `docket serve`) is reported after
        // LOCK_WAIT.
        const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
        let started = std::time::Instant::now();
        let db = loop {
            match config.open() {
                Err(sled::Error::Io(e))
                    // sled reports it as ErrorKind::Other with this text.
                    if e.to_string().contains("could not acquire lock")
                        && started.elapsed() < LOCK_WAIT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => {
                    break other.map_err(|e| {
                        let what = match &copy {
                            Some(_) => format!("opening a private copy of {}", dir.join("log").display()),
                            None => format!("opening {}", log_dir.display()),
                        };
                        LogError::store(what, e)
                    })?;
                }
            }
        };
        let tree = db
            .open_tree("log")
            .map_err(|e| LogError::store("opening tree log", e))?;
        let db_path = log_dir.join("db");
        let db_file = File::open(&db_path).map_err(|e| LogError::io(&db_path, e))?;
        let upper = Arc::new(std::sync::RwLock::new(UpperLevels::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let loader = {
            let (tree, upper, stop) = (tree.clone(), Arc::clone(&upper), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("docket-merkle-cache".into())
                .spawn(move || load_upper_levels(&tree, &upper, &stop))
                .map_err(|e| LogError::io("Merkle cache thread", e))?
        };
        let store = Self {
            db,
            tree,
            db_file,
            log_dir,
            snapshot_dir,
            anchor,
            synced_names: std::sync::Mutex::default(),
            upper,
            upper_loader: Some((stop, loader)),
            _copy: copy,
        };
        // Whatever sled wrote while opening (recovery) is made durable now.
        store.sync()?;
        Ok(store)
    }

    /// Creates an empty store under `dir` durably: `log/`, `snapshots/`, the
    /// sled files and the anchor (a ring of empty slots), every new name
    /// fsynced into its directory. Refuses a directory that holds a store.
    pub fn create(dir: &Path) -> Result<Self> {
        create_dir_durably(dir)?;
        for name in ["log", "snapshots", "anchor"] {
            if dir.join(name).exists() {
                return Err(LogError::AlreadyExists {
                    what: format!("{name} in the data directory"),
                });
            }
        }
        create_dir_durably(&dir.join("log"))?;
        create_dir_durably(&dir.join("snapshots"))?;
        Anchor::create(&dir.join("anchor"))?;
        sync_dir(dir)?;
        Self::open(dir)
    }

    /// The raw sled tree, for tests that tamper with stored bytes.
    #[doc(hidden)]
    pub fn raw_tree(&self) -> &sled::Tree {
        &self.tree
    }

    /// Flushes sled's buffers and fsyncs its file (sled 0.34's `flush` alone
    /// does not reach the disk on Linux: sled#1452).
    ///
    /// Then fsyncs every file sled created since the last sync (its blob
    /// files under `log/blobs/`, snapshots of its page table) and every
    /// directory whose listing changed, so no acknowledged byte sits in a
    /// file or a name that was not made durable.
    pub fn sync(&self) -> Result<()> {
        self.db
            .flush()
            .map_err(|e| LogError::store("flushing", e))?;
        self.db_file
            .sync_all()
            .map_err(|e| LogError::io("log/db", e))?;
        self.sync_new_names()
    }

    fn sync_new_names(&self) -> Result<()> {
        let mut synced = self
            .synced_names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut now = std::collections::BTreeSet::new();
        let mut dirs_changed: Vec<PathBuf> = Vec::new();
        for dir in [self.log_dir.clone(), self.log_dir.join("blobs")] {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(LogError::io(&dir, e)),
            };
            let mut changed = false;
            for entry in entries {
                let entry = entry.map_err(|e| LogError::io(&dir, e))?;
                let path = entry.path();
                if !synced.contains(&path) {
                    changed = true;
                    let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
                    if is_file {
                        match File::open(&path) {
                            Ok(f) => f.sync_all().map_err(|e| LogError::io(&path, e))?,
                            // sled removed it in the meantime: nothing to keep.
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => return Err(LogError::io(&path, e)),
                        }
                    }
                }
                now.insert(path);
            }
            if changed
                || synced
                    .iter()
                    .any(|p| p.parent() == Some(dir.as_path()) && !now.contains(p))
            {
                dirs_changed.push(dir);
            }
        }
        for dir in &dirs_changed {
            sync_dir(dir)?;
        }
        *synced = now;
        Ok(())
    }
}

/// Reads every stored node at level ≥ [`CACHED_FROM_LEVEL`] into `upper`
/// (the background half of an open). Each level must be contiguous from
/// index 0; a level that is not is left to sled lookups (a proof through a
/// missing node fails with `MissingNode`; the open check and the scrub
/// report damage where it matters) and a warning names it.
fn load_upper_levels(tree: &sled::Tree, upper: &std::sync::RwLock<UpperLevels>, stop: &AtomicBool) {
    if let Some(levels) = scan_upper_levels(tree, stop) {
        publish_upper_levels(tree, upper, levels);
    }
}

/// The first half of [`load_upper_levels`], without the lock (commits and
/// rebuilds go on meanwhile): every stored level ≥ [`CACHED_FROM_LEVEL`]
/// as far as it is contiguous from index 0. `None` when stopped or a level
/// is not contiguous (lookups then stay with sled).
fn scan_upper_levels(tree: &sled::Tree, stop: &AtomicBool) -> Option<Vec<Vec<Hash>>> {
    let mut levels: Vec<Vec<Hash>> = Vec::new();
    for level in CACHED_FROM_LEVEL..64 {
        let mut nodes = Vec::new();
        for item in tree.scan_prefix([b'n', level]) {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let Some(h) = item.ok().and_then(|(k, v)| {
                let index = seq_from(&k[2..], "Merkle node key").ok()?;
                (index == nodes.len() as u64).then_some(())?;
                <[u8; 32]>::try_from(&v[..]).ok()
            }) else {
                tracing::warn!(
                    "Merkle nodes of level {level} are not contiguous 32-byte hashes from index {}; \
                     proofs read them from the store",
                    nodes.len()
                );
                return None;
            };
            nodes.push(h);
        }
        if nodes.is_empty() {
            break;
        }
        levels.push(nodes);
    }
    Some(levels)
}

/// The second half of [`load_upper_levels`], under the write lock: what
/// was committed during the scan (every commit that saw `loaded == false`
/// is durable in sled by now) and what a rebuild rewrote during it are laid
/// over the scanned `levels`, which are then published.
fn publish_upper_levels(
    tree: &sled::Tree,
    upper: &std::sync::RwLock<UpperLevels>,
    mut levels: Vec<Vec<Hash>>,
) {
    let mut guard = upper
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A rebuild that ran during the scan wrote sled before it recorded its
    // nodes here (under this lock): the scan may hold the damaged values.
    for (level, index, hash) in std::mem::take(&mut guard.rewritten_before_load) {
        let slot = level
            .checked_sub(CACHED_FROM_LEVEL)
            .and_then(|l| levels.get_mut(usize::from(l)))
            .and_then(|nodes| nodes.get_mut(usize::try_from(index).ok()?));
        if let Some(slot) = slot {
            *slot = hash;
        }
    }
    for level in CACHED_FROM_LEVEL..64 {
        let l = usize::from(level - CACHED_FROM_LEVEL);
        if levels.len() <= l {
            levels.push(Vec::new());
        }
        loop {
            let index = levels[l].len() as u64;
            match tree.get(node_key(level, index)) {
                Ok(Some(v)) if v.len() == 32 => {
                    let mut h = [0u8; 32];
                    h.copy_from_slice(&v);
                    levels[l].push(h);
                }
                _ => break,
            }
        }
        if levels[l].is_empty() {
            levels.truncate(l);
            break;
        }
    }
    guard.levels = levels;
    guard.loaded = true;
}

impl Drop for SledStore {
    fn drop(&mut self) {
        if let Some((stop, loader)) = self.upper_loader.take() {
            stop.store(true, Ordering::Relaxed);
            // The loader holds a handle on the sled tree: it must be gone
            // before sled's lock can be released.
            let _ = loader.join();
        }
    }
}

impl NodeSource for SledStore {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        if level >= CACHED_FROM_LEVEL {
            let upper = self
                .upper
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if upper.loaded {
                return usize::try_from(index)
                    .ok()
                    .and_then(|i| {
                        upper
                            .levels
                            .get(usize::from(level - CACHED_FROM_LEVEL))?
                            .get(i)
                    })
                    .copied()
                    .ok_or(MerkleError::MissingNode { level, index });
            }
        }
        // A read that fails, or that panics inside sled on a damaged file
        // (see `sled_guarded`), is a missing node: proofs fail closed.
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.tree.get(node_key(level, index))
        }));
        match read {
            Ok(Ok(Some(v))) if v.len() == 32 => {
                let mut h = [0u8; 32];
                h.copy_from_slice(&v);
                Ok(h)
            }
            _ => Err(MerkleError::MissingNode { level, index }),
        }
    }
}

impl Store for SledStore {
    fn commit(&self, batch: &CommitBatch) -> Result<()> {
        let mut b = sled::Batch::default();
        for (seq, bytes) in &batch.events {
            for (i, chunk) in bytes.chunks(EVENT_CHUNK).enumerate() {
                let i = u16::try_from(i).map_err(|_| {
                    LogError::ResourceExhausted(format!("event {seq} is too large to store"))
                })?;
                b.insert(event_chunk_key(*seq, i), chunk);
            }
        }
        for (digest, seq) in &batch.statements {
            b.insert(&statement_key(digest)[..], &seq.to_be_bytes()[..]);
        }
        for (level, index, hash) in &batch.nodes {
            b.insert(&node_key(*level, *index)[..], &hash[..]);
        }
        if let Some((size, note)) = &batch.checkpoint {
            b.insert(&checkpoint_key(*size)[..], note.as_bytes());
        }
        sled_guarded("applying a commit batch", || {
            self.tree
                .apply_batch(b)
                .map_err(|e| LogError::store("applying a commit batch", e))?;
            self.sync()
        })?;
        // Durable: publish the upper nodes to the in-memory levels.
        let mut guard = self
            .upper
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !guard.loaded {
            // The loader reads these from sled before it publishes.
            return Ok(());
        }
        let upper = &mut guard.levels;
        for (level, index, hash) in &batch.nodes {
            if *level < CACHED_FROM_LEVEL {
                continue;
            }
            let l = usize::from(level - CACHED_FROM_LEVEL);
            while upper.len() <= l {
                upper.push(Vec::new());
            }
            let len = upper[l].len() as u64;
            if *index == len {
                upper[l].push(*hash);
            } else if *index > len {
                // Out of order: only a store written by hand does this;
                // proofs then fail with MissingNode rather than lie.
                tracing::warn!("Merkle node ({level}, {index}) committed out of order");
            }
            // (index < len: the background loader already read it from
            // sled after this commit made it durable.)
        }
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        sled_guarded("reading the last event", || {
            match self.tree.scan_prefix(b"e").next_back() {
                None => Ok(0),
                Some(Ok((k, _))) => Ok(seq_from(&k[1..9.min(k.len())], "last event key")? + 1),
                Some(Err(e)) => Err(LogError::store("reading the last event", e)),
            }
        })
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        let mut range = self.event_range(seq, seq + 1)?;
        Ok(range.pop().filter(|(s, _)| *s == seq).map(|(_, b)| b))
    }

    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        sled_guarded("scanning events", || {
            if from >= to {
                return Ok(Vec::new());
            }
            let mut out: Vec<(u64, Vec<u8>)> =
                Vec::with_capacity(usize::try_from(to - from).unwrap_or(0).min(1 << 16));
            for item in self.tree.range(event_key(from)..event_key(to)) {
                let (k, v) = item.map_err(|e| LogError::store("scanning events", e))?;
                let seq = seq_from(&k[1..9.min(k.len())], "event key")?;
                let chunk = match k.len() {
                    9 => 0,
                    11 => u16::from_be_bytes([k[9], k[10]]),
                    _ => return Err(LogError::corrupt("event key", "not 9 or 11 bytes")),
                };
                match out.last_mut() {
                    Some((s, bytes)) if *s == seq && chunk > 0 => bytes.extend_from_slice(&v),
                    // A chunk without its predecessor: the event is damaged;
                    // hand back what is there (it will not hash to its leaf).
                    _ if chunk > 0 => out.push((seq, v.to_vec())),
                    _ => out.push((seq, v.to_vec())),
                }
            }
            Ok(out)
        })
    }

    fn for_each_statement(&self, f: &mut dyn FnMut(Hash)) -> Result<()> {
        sled_guarded("scanning statement digests", || {
            for item in self.tree.scan_prefix(b"s") {
                let (k, _) = item.map_err(|e| LogError::store("scanning statement digests", e))?;
                if let Ok(d) = <[u8; 32]>::try_from(&k[1..]) {
                    f(d);
                }
            }
            Ok(())
        })
    }

    fn leaf_hashes(&self, from: u64, to: u64) -> Result<Vec<(u64, Hash)>> {
        sled_guarded("scanning Merkle leaves", || {
            let mut out = Vec::new();
            if from >= to {
                return Ok(out);
            }
            for item in self.tree.range(node_key(0, from)..node_key(0, to)) {
                let (k, v) = item.map_err(|e| LogError::store("scanning Merkle leaves", e))?;
                let seq = seq_from(&k[2..], "Merkle leaf key")?;
                if let Ok(h) = <[u8; 32]>::try_from(v.as_ref()) {
                    out.push((seq, h));
                }
            }
            Ok(out)
        })
    }

    fn statement_seq(&self, digest: &Hash) -> Result<Option<u64>> {
        sled_guarded("reading statement index", || {
            match self
                .tree
                .get(statement_key(digest))
                .map_err(|e| LogError::store("reading statement index", e))?
            {
                None => Ok(None),
                Some(v) => Ok(Some(seq_from(&v, "statement index")?)),
            }
        })
    }

    fn checkpoint(&self, size: Option<u64>) -> Result<Option<(u64, String)>> {
        sled_guarded("reading checkpoints", || {
            let found = match size {
                Some(s) => self
                    .tree
                    .get(checkpoint_key(s))
                    .map_err(|e| LogError::store("reading checkpoint", e))?
                    .map(|v| (s, v)),
                None => match self.tree.scan_prefix(b"c").next_back() {
                    None => None,
                    Some(Ok((k, v))) => Some((seq_from(&k[1..], "checkpoint key")?, v)),
                    Some(Err(e)) => return Err(LogError::store("reading checkpoints", e)),
                },
            };
            found
                .map(|(s, v)| {
                    String::from_utf8(v.to_vec())
                        .map(|note| (s, note))
                        .map_err(|_| LogError::corrupt(format!("checkpoint {s}"), "not UTF-8"))
                })
                .transpose()
        })
    }

    fn checkpoints(&self, from: u64, to: u64) -> Result<Vec<(u64, String)>> {
        sled_guarded("scanning checkpoints", || {
            let mut out = Vec::new();
            if from > to {
                return Ok(out);
            }
            // Sizes stop short of u64::MAX, so the end key stays in the prefix.
            let end = checkpoint_key(to.min(u64::MAX - 1) + 1);
            for item in self.tree.range(checkpoint_key(from)..end) {
                let (k, v) = item.map_err(|e| LogError::store("scanning checkpoints", e))?;
                let size = seq_from(&k[1..], "checkpoint key")?;
                let note = String::from_utf8(v.to_vec())
                    .map_err(|_| LogError::corrupt(format!("checkpoint {size}"), "not UTF-8"))?;
                out.push((size, note));
            }
            Ok(out)
        })
    }

    fn put_checkpoints(&self, checkpoints: &[(u64, String)]) -> Result<()> {
        sled_guarded("applying a checkpoint batch", || {
            let mut b = sled::Batch::default();
            for (size, note) in checkpoints {
                b.insert(&checkpoint_key(*size)[..], note.as_bytes());
            }
            self.tree
                .apply_batch(b)
                .map_err(|e| LogError::store("applying a checkpoint batch", e))?;
            self.sync()
        })
    }

    fn put_snapshot(&self, name: &str, bytes: &[u8]) -> Result<()> {
        put_snapshot_file(&self.snapshot_dir, name, bytes)
    }

    fn snapshot(&self, name: &str) -> Result<Option<Vec<u8>>> {
        read_snapshot_file(&self.snapshot_dir, name)
    }

    fn anchor(&self) -> Result<Option<String>> {
        self.anchor.read()
    }

    fn anchor_notes_of_damaged_slots(&self) -> Result<Vec<String>> {
        self.anchor.notes_of_damaged_slots()
    }

    fn put_anchor(&self, note: &str) -> Result<()> {
        self.anchor.write(note)
    }

    /// [`Store::rebuild_derived_tree`]: every Merkle node recomputed from
    /// the event bytes, and, only if they give `root` at `size`, each stored
    /// node that differs (or is missing) written again in one synced batch
    /// (and in the in-memory upper levels). Reads every event: it runs only
    /// when a check found the stored tree disagreeing with the bytes.
    fn rebuild_derived_tree(&self, size: u64, root: &Hash) -> Result<Option<Vec<String>>> {
        let stored = |level: u8, from: u64, to: u64| -> Result<Vec<(u64, Hash)>> {
            sled_guarded("scanning Merkle nodes", || {
                let mut out = Vec::new();
                for item in self.tree.range(node_key(level, from)..node_key(level, to)) {
                    let (k, v) = item.map_err(|e| LogError::store("scanning Merkle nodes", e))?;
                    if let (Ok(index), Ok(h)) = (
                        seq_from(&k[2..], "Merkle node key"),
                        <[u8; 32]>::try_from(v.as_ref()),
                    ) {
                        out.push((index, h));
                    }
                }
                Ok(out)
            })
        };
        let Some(differing) = derived_tree_differences(self, size, root, &stored)? else {
            return Ok(None);
        };
        if differing.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let mut batch = sled::Batch::default();
        for (level, index, hash) in &differing {
            batch.insert(&node_key(*level, *index)[..], &hash[..]);
        }
        sled_guarded("rewriting Merkle nodes", || {
            self.tree
                .apply_batch(batch)
                .map_err(|e| LogError::store("rewriting Merkle nodes", e))?;
            self.sync()
        })?;
        {
            let mut upper = self
                .upper
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !upper.loaded {
                // The background loader may have scanned these before the
                // rewrite: it lays them over its scan when it publishes.
                upper.rewritten_before_load.extend(
                    differing
                        .iter()
                        .filter(|(level, _, _)| *level >= CACHED_FROM_LEVEL)
                        .copied(),
                );
            }
            for (level, index, hash) in &differing {
                let slot = level
                    .checked_sub(CACHED_FROM_LEVEL)
                    .and_then(|l| upper.levels.get_mut(usize::from(l)))
                    .and_then(|nodes| nodes.get_mut(usize::try_from(*index).ok()?));
                if let Some(slot) = slot {
                    *slot = *hash;
                }
            }
        }
        let named = name_nodes("log/", &differing);
        tracing::warn!(
            "sled store: {} differed from the event bytes, which give the signed root; rewritten from them",
            named.join(", ")
        );
        Ok(Some(named))
    }
}

/// The events of the commit an anchor slot's checkpoint covers, kept in the
/// slot beside the note so that the commit and the anchor are made durable
/// in one wait (docs/FORMAT.md §9). An open that finds the anchor ahead of
/// the store by exactly these events (the stop came before the store's
/// fsync finished, after the anchor's) commits them again; see
/// [`crate::tiles::TileStore::open`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AnchorRedo {
    /// The store's length known durable when the slot was written (its
    /// events and commit records fdatasynced): an open never takes a
    /// difference before it for a write that did not reach the disk
    /// (docs/FORMAT.md §9). 0 in slots of the second version, which do not
    /// record it.
    pub durable: u64,
    /// Sequence number of the first event: the store's length before the
    /// commit.
    pub first_seq: u64,
    /// Canonical bytes of the events, in order.
    pub events: Vec<Vec<u8>>,
    /// `(statement digest, seq)` of the commit, as in [`CommitBatch`].
    pub statements: Vec<(Hash, u64)>,
}

impl AnchorRedo {
    /// The redo of `batch` (whose events are consecutive, as a commit's
    /// are), written when the store is durable up to `durable` events.
    #[must_use]
    pub fn of(batch: &CommitBatch, durable: u64) -> Self {
        Self {
            durable,
            first_seq: batch.events.first().map_or(0, |(seq, _)| *seq),
            events: batch.events.iter().map(|(_, b)| b.clone()).collect(),
            statements: batch.statements.clone(),
        }
    }

    /// `u64be durable || u64be first_seq || u32be n || n × (u32be len ||
    /// bytes) || u32be m || m × (digest (32) || u64be seq)` (the redo of a
    /// third-version slot).
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.durable.to_be_bytes());
        out.extend_from_slice(&self.first_seq.to_be_bytes());
        out.extend_from_slice(&(self.events.len() as u32).to_be_bytes());
        for e in &self.events {
            out.extend_from_slice(&(e.len() as u32).to_be_bytes());
            out.extend_from_slice(e);
        }
        out.extend_from_slice(&(self.statements.len() as u32).to_be_bytes());
        for (digest, seq) in &self.statements {
            out.extend_from_slice(digest);
            out.extend_from_slice(&seq.to_be_bytes());
        }
    }

    /// Bytes [`AnchorRedo::encode`] writes.
    fn encoded_len(&self) -> usize {
        Self::len_of(self.events.iter().map(Vec::len), self.statements.len())
    }

    /// Bytes the redo of events of these lengths and `statements` entries
    /// takes.
    fn len_of(event_lens: impl Iterator<Item = usize>, statements: usize) -> usize {
        8 + 8 + 4 + event_lens.map(|n| 4 + n).sum::<usize>() + 4 + 40 * statements
    }

    /// The redo of a third-version slot: `durable`, then the second
    /// version's redo; `durable` may not pass `first_seq`.
    fn decode_v3(b: &[u8]) -> Option<Self> {
        let (durable, rest) = b.split_first_chunk::<8>()?;
        let durable = u64::from_be_bytes(*durable);
        let redo = Self::decode(rest)?;
        (durable <= redo.first_seq).then_some(Self { durable, ..redo })
    }

    /// The redo of a second-version slot (`durable` 0).
    fn decode(mut b: &[u8]) -> Option<Self> {
        fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
            let (head, tail) = b.split_at_checked(n)?;
            *b = tail;
            Some(head)
        }
        fn u32_of(b: &mut &[u8]) -> Option<usize> {
            Some(u32::from_be_bytes(take(b, 4)?.try_into().ok()?) as usize)
        }
        fn u64_of(b: &mut &[u8]) -> Option<u64> {
            Some(u64::from_be_bytes(take(b, 8)?.try_into().ok()?))
        }
        let first_seq = u64_of(&mut b)?;
        let n = u32_of(&mut b)?;
        let mut events = Vec::new();
        for _ in 0..n {
            let len = u32_of(&mut b)?;
            events.push(take(&mut b, len)?.to_vec());
        }
        let m = u32_of(&mut b)?;
        let mut statements = Vec::new();
        for _ in 0..m {
            let digest: Hash = take(&mut b, 32)?.try_into().ok()?;
            statements.push((digest, u64_of(&mut b)?));
        }
        b.is_empty().then_some(Self {
            durable: 0,
            first_seq,
            events,
            statements,
        })
    }
}

/// The anchor file: the latest signed checkpoint note, in fixed slots
/// written in turn (pwrite + fdatasync), so a torn write of one slot leaves
/// the others intact (docs/FORMAT.md §9). A file made by `docket init` is a
/// ring of [`Anchor::RING_SLOTS`] slots of [`Anchor::RING_SLOT`] bytes; one of
/// 8,192 bytes or less has the first versions' two slots of
/// [`Anchor::SLOT`] bytes and is used as it is. A slot is `"DKTANCH2"`, the
/// note's length and the redo's (u32 BE each), SHA-256 of those eight
/// bytes, the note and the redo, then the note, the redo ([`AnchorRedo`],
/// possibly empty) and zero padding to a multiple of 4,096 bytes (the rest
/// of the slot is ignored); slots of the first version (`"DKTANCH1"`, note
/// length, SHA-256 of the note, the note) are still read. Reading picks the
/// valid slot whose note names the largest tree size; which slot is newer is
/// decided by the notes, never by the file.
///
/// A missing file opens as an anchor with no valid slot, exactly like one
/// whose slots are all damaged: the open check then refuses the ledger
/// ("the anchor … is missing"), while verification and recovery go on
/// from the checkpoints stored with the events. Nothing is ever written to
/// it (a write is refused: the file is not re-created behind the operator's
/// back).
pub struct Anchor {
    /// `None`: the file is missing.
    file: Option<File>,
    /// Bytes per slot and number of slots of this file.
    slot_len: usize,
    slot_count: usize,
    /// Slot to write next, the tree size the newest slot names and the size
    /// each slot names.
    slots: std::sync::Mutex<NextSlot>,
}

/// Where the next anchor write goes.
#[derive(Debug, Clone)]
struct NextSlot {
    index: usize,
    /// Size named by the newest valid slot. Writes only ever move it up, so
    /// the slots not being written always hold the previous anchors: the
    /// publish thread's anchor of a batch is skipped when the store already
    /// anchored a later one with its commit.
    newest_size: Option<u64>,
    /// The tree size each slot's note names (`None`: no valid slot there).
    held: Vec<Option<u64>>,
}

impl std::fmt::Debug for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anchor")
            .field("slot_len", &self.slot_len)
            .field("slot_count", &self.slot_count)
            .finish_non_exhaustive()
    }
}

/// One valid anchor slot: the note and the redo it carries, if any.
pub(crate) type AnchorSlot = (String, Option<AnchorRedo>);

impl Anchor {
    /// Bytes per slot of a first-version anchor (two slots, 8,192 bytes).
    pub const SLOT: usize = 4096;
    /// Bytes per slot of the ring `docket init` makes.
    pub const RING_SLOT: usize = 65_536;
    /// Slots of the ring `docket init` makes.
    pub const RING_SLOTS: usize = 8;
    const MAGIC_V1: &'static [u8; 8] = b"DKTANCH1";
    const MAGIC_V2: &'static [u8; 8] = b"DKTANCH2";
    const MAGIC: &'static [u8; 8] = b"DKTANCH3";
    /// Magic, two lengths, SHA-256.
    const HEADER: usize = 8 + 4 + 4 + 32;
    /// Slots are padded to a multiple of this.
    const PAGE: usize = 4096;

    pub(crate) fn create(path: &Path) -> Result<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| LogError::io(path, e))?;
        f.write_all(&vec![0u8; Self::RING_SLOTS * Self::RING_SLOT])
            .and_then(|()| f.sync_all())
            .map_err(|e| LogError::io(path, e))
    }

    pub(crate) fn open(path: &Path) -> Result<Self> {
        let file = match fs::OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!("the anchor file is missing: {}", path.display());
                return Ok(Self {
                    file: None,
                    slot_len: Self::RING_SLOT,
                    slot_count: 0,
                    slots: std::sync::Mutex::new(NextSlot {
                        index: 0,
                        newest_size: None,
                        held: Vec::new(),
                    }),
                });
            }
            Err(e) => return Err(LogError::io(path, e)),
        };
        let file_len = file.metadata().map_err(|e| LogError::io(path, e))?.len();
        let file = Some(file);
        let (slot_len, slot_count) = if file_len <= 2 * Self::SLOT as u64 {
            (Self::SLOT, 2)
        } else {
            (Self::RING_SLOT, Self::RING_SLOTS)
        };
        let anchor = Self {
            file,
            slot_len,
            slot_count,
            slots: std::sync::Mutex::new(NextSlot {
                index: 0,
                newest_size: None,
                held: vec![None; slot_count],
            }),
        };
        // A slot that was written (it starts with a slot magic) but does not
        // verify is a torn write at a crash or damage since: either way the
        // newest valid slot is used, and the operator hears of it.
        let mut slots = Vec::with_capacity(slot_count);
        for (i, (slot, written)) in anchor.slots_with_magic()?.into_iter().enumerate() {
            if slot.is_none() && written {
                tracing::warn!(
                    "anchor: slot {i} (byte {}) does not verify (a torn write at a crash, or damage since); the newest slot that verifies is used",
                    i * slot_len
                );
            }
            slots.push(slot);
        }
        let held: Vec<Option<u64>> = slots
            .iter()
            .map(|s| s.as_ref().and_then(|(note, _)| note_size(note)))
            .collect();
        // Write next into the slot after the newest one.
        let newest = newest_slot(&slots);
        *anchor
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = NextSlot {
            index: newest.map_or(0, |i| (i + 1) % slot_count),
            newest_size: newest.and_then(|i| held[i]),
            held,
        };
        Ok(anchor)
    }

    fn slots(&self) -> Result<Vec<Option<AnchorSlot>>> {
        Ok(self
            .slots_with_magic()?
            .into_iter()
            .map(|(s, _)| s)
            .collect())
    }

    /// Every slot, parsed, with whether its bytes start with a slot magic
    /// (it was written at some time).
    fn slots_with_magic(&self) -> Result<Vec<(Option<AnchorSlot>, bool)>> {
        Ok(self
            .slot_bytes()?
            .iter()
            .map(|buf| {
                let written = [Self::MAGIC, Self::MAGIC_V2, Self::MAGIC_V1]
                    .iter()
                    .any(|m| buf.starts_with(*m));
                (Self::parse_slot(buf), written)
            })
            .collect())
    }

    /// The bytes of every slot, as the file holds them (a slot past the
    /// file's end is short or empty).
    fn slot_bytes(&self) -> Result<Vec<Vec<u8>>> {
        use std::os::unix::fs::FileExt as _;
        let mut out = Vec::with_capacity(self.slot_count);
        let Some(file) = &self.file else {
            return Ok(out);
        };
        for i in 0..self.slot_count {
            let mut buf = vec![0u8; self.slot_len];
            let mut n = 0;
            while n < buf.len() {
                let got = file
                    .read_at(&mut buf[n..], (i * self.slot_len + n) as u64)
                    .map_err(|e| LogError::io("anchor", e))?;
                if got == 0 {
                    break;
                }
                n += got;
            }
            buf.truncate(n);
            out.push(buf);
        }
        Ok(out)
    }

    fn parse_slot(buf: &[u8]) -> Option<AnchorSlot> {
        use sha2::Digest as _;
        match buf.get(..8)? {
            m if m == Self::MAGIC_V1 => {
                let len = u32::from_be_bytes(buf.get(8..12)?.try_into().ok()?) as usize;
                let note = buf.get(44..44_usize.checked_add(len)?)?;
                if sha2::Sha256::digest(note)[..] != *buf.get(12..44)? {
                    return None;
                }
                Some((String::from_utf8(note.to_vec()).ok()?, None))
            }
            m if m == Self::MAGIC || m == Self::MAGIC_V2 => {
                let note_len = u32::from_be_bytes(buf.get(8..12)?.try_into().ok()?) as usize;
                let redo_len = u32::from_be_bytes(buf.get(12..16)?.try_into().ok()?) as usize;
                let note_end = Self::HEADER.checked_add(note_len)?;
                let body = buf.get(Self::HEADER..note_end.checked_add(redo_len)?)?;
                let mut h = sha2::Sha256::new();
                h.update(&buf[8..16]);
                h.update(body);
                if h.finalize()[..] != buf[16..48] {
                    return None;
                }
                let (note, redo) = body.split_at(note_len);
                let note = String::from_utf8(note.to_vec()).ok()?;
                let redo = if redo.is_empty() {
                    None
                } else if m == Self::MAGIC {
                    Some(AnchorRedo::decode_v3(redo)?)
                } else {
                    Some(AnchorRedo::decode(redo)?)
                };
                Some((note, redo))
            }
            _ => None,
        }
    }

    pub(crate) fn read(&self) -> Result<Option<String>> {
        Ok(self.read_with_redo()?.map(|(note, _)| note))
    }

    /// The notes of the slots that start with a ring magic but do not
    /// verify, where their header still frames UTF-8 note bytes
    /// ([`Store::anchor_notes_of_damaged_slots`]; untrusted).
    pub(crate) fn notes_of_damaged_slots(&self) -> Result<Vec<String>> {
        Ok(self
            .slot_bytes()?
            .iter()
            .filter(|buf| buf.starts_with(Self::MAGIC) || buf.starts_with(Self::MAGIC_V2))
            .filter(|buf| Self::parse_slot(buf).is_none())
            .filter_map(|buf| {
                let len = u32::from_be_bytes(buf.get(8..12)?.try_into().ok()?) as usize;
                let note = buf.get(Self::HEADER..Self::HEADER.checked_add(len)?)?;
                String::from_utf8(note.to_vec()).ok()
            })
            .collect())
    }

    /// The newest valid slot: its note and the redo it carries.
    pub(crate) fn read_with_redo(&self) -> Result<Option<AnchorSlot>> {
        let mut slots = self.slots()?;
        Ok(newest_slot(&slots).and_then(|i| slots[i].take()))
    }

    /// The valid slots' notes and redos, the newest first, then the others
    /// in file order (docs/FORMAT.md §9).
    pub(crate) fn read_newest_first(&self) -> Result<Vec<AnchorSlot>> {
        let mut slots = self.slots()?;
        let Some(newest) = newest_slot(&slots) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(slots.len());
        out.extend(slots[newest].take());
        out.extend(slots.into_iter().flatten());
        Ok(out)
    }

    /// The slot's bytes for `note` and `redo`, or `None` when they do not
    /// fit `capacity` bytes.
    fn encode_slot(note: &str, redo: Option<&AnchorRedo>, capacity: usize) -> Option<Vec<u8>> {
        use sha2::Digest as _;
        let redo_len = redo.map_or(0, AnchorRedo::encoded_len);
        let len = Self::HEADER + note.len() + redo_len;
        if len > capacity {
            return None;
        }
        let mut buf = Vec::with_capacity(len.next_multiple_of(Self::PAGE));
        buf.extend_from_slice(Self::MAGIC);
        buf.extend_from_slice(&(note.len() as u32).to_be_bytes());
        buf.extend_from_slice(&(redo_len as u32).to_be_bytes());
        buf.extend_from_slice(&[0u8; 32]);
        buf.extend_from_slice(note.as_bytes());
        if let Some(r) = redo {
            r.encode(&mut buf);
        }
        let mut h = sha2::Sha256::new();
        h.update(&buf[8..16]);
        h.update(&buf[Self::HEADER..]);
        buf[16..48].copy_from_slice(&h.finalize());
        buf.resize(len.next_multiple_of(Self::PAGE).min(capacity), 0);
        Some(buf)
    }

    pub(crate) fn write(&self, note: &str) -> Result<()> {
        let slot = Self::encode_slot(note, None, self.slot_len).ok_or_else(|| {
            LogError::ResourceExhausted(format!(
                "checkpoint note of {} bytes does not fit an anchor slot",
                note.len()
            ))
        })?;
        self.write_slot(note_size(note), &slot)
    }

    /// The slot bytes anchoring `note` with the redo of its commit, when
    /// they fit one slot of this file; write them with
    /// [`Anchor::write_slot`].
    pub(crate) fn slot_with_redo(&self, note: &str, redo: &AnchorRedo) -> Option<Vec<u8>> {
        Self::encode_slot(note, Some(redo), self.slot_len)
    }

    /// Whether `note` and `batch`'s redo fit one slot of this file,
    /// measured before any of its bytes are copied (a group commit of many
    /// events does not fit).
    pub(crate) fn fits_redo_of(&self, note: &str, batch: &CommitBatch) -> bool {
        let redo_len = AnchorRedo::len_of(
            batch.events.iter().map(|(_, b)| b.len()),
            batch.statements.len(),
        );
        Self::HEADER + note.len() + redo_len <= self.slot_len
    }

    /// The tree size named by the slot the next write overwrites (0 when it
    /// holds none): a store that anchors commits with their redo must be
    /// durable up to it before that write, since the redo it holds is lost
    /// with it (docs/FORMAT.md §9).
    pub(crate) fn overwritten_by_next(&self) -> u64 {
        let next = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        next.held.get(next.index).copied().flatten().unwrap_or(0)
    }

    /// Writes a slot [`Anchor::slot_with_redo`] made (`pwrite`,
    /// `fdatasync`) for a checkpoint of tree size `size` into the next slot
    /// of the ring. A size below the newest slot's is not written: the
    /// newer anchor covers it.
    pub(crate) fn write_slot(&self, size: Option<u64>, slot: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt as _;
        let mut next = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let (Some(size), Some(newest)) = (size, next.newest_size)
            && size < newest
        {
            return Ok(());
        }
        if slot.len() > self.slot_len {
            return Err(LogError::ResourceExhausted(format!(
                "an anchor slot of {} bytes does not fit this anchor's {} bytes",
                slot.len(),
                self.slot_len
            )));
        }
        let Some(file) = &self.file else {
            return Err(LogError::corrupt(
                "anchor",
                "the anchor file is missing: it is not re-created by a write (restore it, or recover the ledger)",
            ));
        };
        let index = next.index;
        file.write_all_at(slot, (index * self.slot_len) as u64)
            .and_then(|()| file.sync_data())
            .map_err(|e| LogError::io("anchor", e))?;
        next.held[index] = size;
        next.index = (index + 1) % self.slot_count;
        next.newest_size = size.or(next.newest_size);
        Ok(())
    }
}

/// Tree size named by a note's checkpoint body (second line), if it parses.
fn note_size(note: &str) -> Option<u64> {
    note.lines().nth(1)?.parse().ok()
}

/// The valid slot naming the largest tree size (the first in file order of
/// equals).
fn newest_slot(slots: &[Option<AnchorSlot>]) -> Option<usize> {
    let mut best: Option<(usize, Option<u64>)> = None;
    for (i, slot) in slots.iter().enumerate() {
        let Some((note, _)) = slot else { continue };
        let size = note_size(note);
        if best.is_none_or(|(_, b)| size > b) {
            best = Some((i, size));
        }
    }
    best.map(|(i, _)| i)
}

/// Refuses to open a store whose directories are missing: a missing one is
/// reported (corruption naming it), never silently recreated, because a
/// fresh empty store would hide a lost log.
pub(crate) fn require_dirs(dirs: &[&Path]) -> Result<()> {
    for d in dirs {
        if !d.is_dir() {
            return Err(LogError::corrupt(
                d.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
                    + "/",
                "the directory is missing from the data directory",
            ));
        }
    }
    Ok(())
}

/// Writes snapshot `name` as `DIR/snapshots/NAME.snap`, atomically (the
/// embedded stores' snapshot files).
pub(crate) fn put_snapshot_file(snapshot_dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    write_atomically(&snapshot_dir.join(format!("{name}.snap")), bytes)
}

/// Reads snapshot file `NAME.snap` (`None` when there is none).
pub(crate) fn read_snapshot_file(snapshot_dir: &Path, name: &str) -> Result<Option<Vec<u8>>> {
    let path = snapshot_dir.join(format!("{name}.snap"));
    match fs::read(&path) {
        Ok(content) => Ok(Some(content)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LogError::io(path, e)),
    }
}

/// Writes `path` atomically: a temp file in the same directory, fsync,
/// rename, fsync of the directory.
pub fn write_atomically(path: &Path, content: &[u8]) -> Result<()> {
    // Unique per call, not only per process: two threads may write the same
    // derived file at once (a reader recomputing a missing tile while a
    // repair rewrites it), and must not share a temporary file.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = File::create(&tmp).map_err(|e| LogError::io(&tmp, e))?;
    f.write_all(content)
        .and_then(|()| f.sync_all())
        .map_err(|e| LogError::io(&tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| LogError::io(path, e))?;
    sync_dir(dir)
}

/// Creates `dir` (and missing parents) so that every new name is durable:
/// each directory created is fsynced into its parent.
pub fn create_dir_durably(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_durably(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(LogError::io(dir, e)),
    }
    sync_dir(dir)?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    Ok(())
}

/// fsyncs a directory so a rename or create inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| LogError::io(dir, e))
}

impl<S: NodeSource + ?Sized + Send + Sync> NodeSource for Arc<S> {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        (**self).node(level, index)
    }
}

/// A shared store is a store (the opened layout is chosen at run time).
impl<S: Store + ?Sized> Store for Arc<S> {
    fn commit(&self, batch: &CommitBatch) -> Result<()> {
        (**self).commit(batch)
    }
    fn len(&self) -> Result<u64> {
        (**self).len()
    }
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        (**self).event_bytes(seq)
    }
    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        (**self).event_range(from, to)
    }
    fn statement_seq(&self, digest: &Hash) -> Result<Option<u64>> {
        (**self).statement_seq(digest)
    }
    fn for_each_statement(&self, f: &mut dyn FnMut(Hash)) -> Result<()> {
        (**self).for_each_statement(f)
    }
    fn leaf_hashes(&self, from: u64, to: u64) -> Result<Vec<(u64, Hash)>> {
        (**self).leaf_hashes(from, to)
    }
    fn checkpoint(&self, size: Option<u64>) -> Result<Option<(u64, String)>> {
        (**self).checkpoint(size)
    }
    fn checkpoints(&self, from: u64, to: u64) -> Result<Vec<(u64, String)>> {
        (**self).checkpoints(from, to)
    }
    fn put_checkpoints(&self, checkpoints: &[(u64, String)]) -> Result<()> {
        (**self).put_checkpoints(checkpoints)
    }
    fn put_snapshot(&self, name: &str, bytes: &[u8]) -> Result<()> {
        (**self).put_snapshot(name, bytes)
    }
    fn snapshot(&self, name: &str) -> Result<Option<Vec<u8>>> {
        (**self).snapshot(name)
    }
    fn anchor(&self) -> Result<Option<String>> {
        (**self).anchor()
    }
    fn put_anchor(&self, note: &str) -> Result<()> {
        (**self).put_anchor(note)
    }
    fn commit_anchored(&self, batch: &CommitBatch) -> Result<bool> {
        (**self).commit_anchored(batch)
    }
    fn after_commit(&self) -> Result<()> {
        (**self).after_commit()
    }
    fn exact_statement_lookup(&self) -> bool {
        (**self).exact_statement_lookup()
    }
    fn check_structures(&self, keep_going: &dyn Fn() -> bool) -> Result<Option<StructureReport>> {
        (**self).check_structures(keep_going)
    }
    fn salvage_past_len(&self, to: u64) -> Result<SalvagedPastLen> {
        (**self).salvage_past_len(to)
    }
    fn salvage_set_apart(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        (**self).salvage_set_apart(seq)
    }
    fn anchor_notes_of_damaged_slots(&self) -> Result<Vec<String>> {
        (**self).anchor_notes_of_damaged_slots()
    }
    fn repaired_at_open(&self) -> Vec<String> {
        (**self).repaired_at_open()
    }
    fn salvage_range(&self, from: u64, to: u64) -> Result<SalvagedRange> {
        (**self).salvage_range(from, to)
    }
    fn rebuild_derived_tree(&self, size: u64, root: &Hash) -> Result<Option<Vec<String>>> {
        (**self).rebuild_derived_tree(size, root)
    }
    fn explain_shortfall(&self, expected: u64) -> Result<Option<String>> {
        (**self).explain_shortfall(expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest as _;

    #[test]
    fn a_panic_inside_a_sled_read_is_reported_as_damage_of_log_not_a_crash() {
        // Given a sled operation that panics (as sled's own assertions do on
        // some damaged files, at a read long after the open),
        let read = || -> Result<u64> { panic!("assertion failed: *key < self.hi") };
        // when it runs guarded, then the caller gets corruption naming
        // `log/`, the operation and sled's message, and the process goes on;
        match sled_guarded("scanning events", read) {
            Err(LogError::Corrupt { location, detail }) => {
                assert_eq!(location, "log/");
                assert!(detail.contains("scanning events"), "{detail}");
                assert!(
                    detail.contains("assertion failed: *key < self.hi"),
                    "{detail}"
                );
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        // and an operation that does not panic answers as it would alone.
        assert_eq!(sled_guarded("reading", || Ok(7)).unwrap(), 7);
        assert!(matches!(
            sled_guarded("reading", || -> Result<()> { Err(LogError::corrupt("x", "y")) }),
            Err(LogError::Corrupt { location, .. }) if location == "x"
        ));
    }

    #[test]
    fn given_a_rebuild_during_the_upper_level_load_when_the_load_publishes_then_it_keeps_the_rewritten_nodes()
     {
        // Given a sled store of 32 events (two level-4 nodes, kept in memory),
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::create(dir.path()).unwrap();
        let mut frontier = crate::merkle::Frontier::new();
        let mut nodes = std::collections::BTreeMap::new();
        for seq in 0..32u64 {
            let bytes = format!("\x01upper-{seq}").into_bytes();
            let mut batch = CommitBatch::default();
            for (level, index, hash) in frontier.push(crate::merkle::leaf_hash(&bytes)) {
                nodes.insert((level, index), hash);
                batch.nodes.push((level, index, hash));
            }
            batch.events.push((seq, bytes));
            store.commit(&batch).unwrap();
        }
        let intact = nodes[&(CACHED_FROM_LEVEL, 0)];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !store.upper.read().unwrap().loaded {
            assert!(
                std::time::Instant::now() < deadline,
                "the loader never published"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // and its first level-4 node damaged on disk, as a later open finds it:
        store
            .tree
            .insert(node_key(CACHED_FROM_LEVEL, 0), &[0xAA; 32][..])
            .unwrap();
        {
            let mut upper = store.upper.write().unwrap();
            upper.loaded = false;
            upper.levels.clear();
        }
        // when the background loader scans the damaged node,
        let scanned = scan_upper_levels(&store.tree, &AtomicBool::new(false)).unwrap();
        assert_eq!(scanned[0][0], [0xAA; 32]);
        // a proof's rebuild rewrites it from the event bytes meanwhile,
        let rewritten = store
            .rebuild_derived_tree(32, &frontier.root())
            .unwrap()
            .expect("the bytes give the root");
        assert_eq!(rewritten.len(), 1, "{rewritten:?}");
        // and the loader then publishes what it scanned,
        publish_upper_levels(&store.tree, &store.upper, scanned);
        // then the published level holds the rewritten node, as sled does.
        let upper = store.upper.read().unwrap();
        assert!(upper.loaded);
        assert_eq!(
            upper.levels[0][0], intact,
            "the loader published a stale node"
        );
        assert!(upper.rewritten_before_load.is_empty());
        drop(upper);
        assert_eq!(store.node(CACHED_FROM_LEVEL, 0).unwrap(), intact);
    }

    fn anchor_in(dir: &Path) -> Anchor {
        let path = dir.join("anchor");
        Anchor::create(&path).unwrap();
        Anchor::open(&path).unwrap()
    }

    fn note(size: u64) -> String {
        format!(
            "example.org/anchor-test\n{size}\n{}\n\n— example.org/anchor-test AAAAAAAA\n",
            "A".repeat(43) + "="
        )
    }

    /// An anchor of size 40, then of 43 carrying [`redo`] (the next slot).
    fn anchored_at_40_then_43(dir: &Path) -> Anchor {
        let anchor = anchor_in(dir);
        write_40_then_43(&anchor);
        anchor
    }

    fn write_40_then_43(anchor: &Anchor) {
        anchor.write(&note(40)).unwrap();
        anchor
            .write_slot(
                Some(43),
                &anchor.slot_with_redo(&note(43), &redo()).unwrap(),
            )
            .unwrap();
    }

    fn redo() -> AnchorRedo {
        AnchorRedo {
            durable: 38,
            first_seq: 41,
            events: vec![b"\x01first".to_vec(), b"\x01second event".to_vec()],
            statements: vec![([7u8; 32], 41), ([9u8; 32], 42)],
        }
    }

    #[test]
    fn a_slot_carries_its_note_and_the_redo_of_its_commit_byte_for_byte() {
        // Given a slot anchoring size 43 with the redo of events 41 and 42,
        let dir = tempfile::tempdir().unwrap();
        let anchor = anchor_in(dir.path());
        let slot = anchor.slot_with_redo(&note(43), &redo()).unwrap();
        // then its layout is FORMAT §9's: magic, the two lengths, SHA-256
        // of the lengths, note and redo, then note, redo, zero padding.
        let note = note(43);
        let mut encoded_redo = Vec::new();
        redo().encode(&mut encoded_redo);
        assert_eq!(encoded_redo.len(), redo().encoded_len());
        assert_eq!(&slot[..8], b"DKTANCH3");
        assert_eq!(&slot[8..12], &(note.len() as u32).to_be_bytes());
        assert_eq!(&slot[12..16], &(encoded_redo.len() as u32).to_be_bytes());
        let mut h = sha2::Sha256::new();
        h.update(&slot[8..16]);
        h.update(note.as_bytes());
        h.update(&encoded_redo);
        assert_eq!(&slot[16..48], &h.finalize()[..]);
        assert_eq!(&slot[48..48 + note.len()], note.as_bytes());
        let redo_at = 48 + note.len();
        assert_eq!(
            &slot[redo_at..redo_at + encoded_redo.len()],
            &encoded_redo[..]
        );
        assert_eq!(
            &encoded_redo[..20],
            &[0, 0, 0, 0, 0, 0, 0, 38, 0, 0, 0, 0, 0, 0, 0, 41, 0, 0, 0, 2]
        );
        assert!(slot[redo_at + encoded_redo.len()..].iter().all(|&b| b == 0));
        assert_eq!(slot.len(), 4096, "padded to a multiple of 4,096 bytes");
        // and when it is written, reading gives both back.
        anchor.write(&self::note(40)).unwrap();
        anchor.write_slot(Some(43), &slot).unwrap();
        assert_eq!(
            anchor.read_with_redo().unwrap(),
            Some((note.clone(), Some(redo())))
        );
        assert_eq!(anchor.read().unwrap(), Some(note));
    }

    #[test]
    fn a_first_version_slot_is_still_read_without_a_redo() {
        // Given an anchor file written by an earlier version (DKTANCH1),
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchor");
        let note = note(5);
        let mut slot = b"DKTANCH1".to_vec();
        slot.extend_from_slice(&(note.len() as u32).to_be_bytes());
        slot.extend_from_slice(&sha2::Sha256::digest(note.as_bytes()));
        slot.extend_from_slice(note.as_bytes());
        slot.resize(2 * Anchor::SLOT, 0);
        fs::write(&path, &slot).unwrap();
        // when it is opened, then its note is the anchor, and the next
        // write goes to the other slot.
        let anchor = Anchor::open(&path).unwrap();
        assert_eq!(anchor.read_with_redo().unwrap(), Some((note.clone(), None)));
        anchor.write(&self::note(6)).unwrap();
        let bytes = fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"DKTANCH1");
        assert_eq!(&bytes[Anchor::SLOT..Anchor::SLOT + 8], b"DKTANCH3");
        assert_eq!(anchor.read().unwrap(), Some(self::note(6)));
    }

    #[test]
    fn lengths_moved_under_an_intact_hash_make_the_slot_invalid() {
        // Given the newest slot carries a redo, and one byte of the note
        // moves into the redo by changing only the two lengths,
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchor");
        let anchor = anchored_at_40_then_43(dir.path());
        drop(anchor);
        let mut bytes = fs::read(&path).unwrap();
        let at = Anchor::RING_SLOT;
        let note_len = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
        let redo_len = u32::from_be_bytes(bytes[at + 12..at + 16].try_into().unwrap());
        bytes[at + 8..at + 12].copy_from_slice(&(note_len - 1).to_be_bytes());
        bytes[at + 12..at + 16].copy_from_slice(&(redo_len + 1).to_be_bytes());
        fs::write(&path, &bytes).unwrap();
        // then that slot is not valid, and the older one is the anchor.
        let anchor = Anchor::open(&path).unwrap();
        assert_eq!(anchor.read_with_redo().unwrap(), Some((note(40), None)));
    }

    #[test]
    fn an_older_anchor_written_late_is_skipped_so_a_torn_write_falls_back_to_the_newest_before_it()
    {
        // Given anchors of 40 then 43 (the store's, with its redo), and the
        // publish stage's anchor of 41 arriving after them,
        let dir = tempfile::tempdir().unwrap();
        let anchor = anchored_at_40_then_43(dir.path());
        anchor.write(&note(41)).unwrap();
        // when the next anchor (44) is written and its write is torn,
        anchor.write(&note(44)).unwrap();
        drop(anchor);
        let path = dir.path().join("anchor");
        let mut bytes = fs::read(&path).unwrap();
        let newest = (0..Anchor::RING_SLOTS)
            .find(|i| {
                Anchor::parse_slot(&bytes[i * Anchor::RING_SLOT..(i + 1) * Anchor::RING_SLOT])
                    .is_some_and(|(n, _)| n == note(44))
            })
            .unwrap();
        bytes[newest * Anchor::RING_SLOT + 60] ^= 0xff;
        fs::write(&path, &bytes).unwrap();
        // then the anchor is 43, the newest before it, never 41 or 40.
        let anchor = Anchor::open(&path).unwrap();
        assert_eq!(anchor.read().unwrap(), Some(note(43)));
    }

    #[test]
    fn a_commit_too_large_for_a_slot_gets_no_redo_slot() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = anchor_in(dir.path());
        let mut big = redo();
        big.events.push(vec![1u8; Anchor::RING_SLOT]);
        assert!(anchor.slot_with_redo(&note(44), &big).is_none());
        assert!(matches!(
            anchor.write(&"x".repeat(Anchor::RING_SLOT)),
            Err(LogError::ResourceExhausted(_))
        ));
        assert_eq!(anchor.read().unwrap(), None);
    }

    #[test]
    fn the_ring_is_written_in_turn_and_names_what_the_next_write_overwrites() {
        // Given a new anchor (the ring docket init makes),
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchor");
        let anchor = anchor_in(dir.path());
        assert_eq!(
            fs::metadata(&path).unwrap().len(),
            (Anchor::RING_SLOTS * Anchor::RING_SLOT) as u64
        );
        // when more anchors than it has slots are written,
        for size in 1..=Anchor::RING_SLOTS as u64 {
            assert_eq!(anchor.overwritten_by_next(), 0, "slot {size} was empty");
            anchor.write(&note(size)).unwrap();
        }
        assert_eq!(anchor.overwritten_by_next(), 1, "the oldest slot names 1");
        anchor.write(&note(9)).unwrap();
        // then each went to the next slot, the ninth over the first,
        let bytes = fs::read(&path).unwrap();
        let sizes: Vec<u64> = (0..Anchor::RING_SLOTS)
            .map(|i| {
                let (n, _) =
                    Anchor::parse_slot(&bytes[i * Anchor::RING_SLOT..(i + 1) * Anchor::RING_SLOT])
                        .unwrap();
                note_size(&n).unwrap()
            })
            .collect();
        assert_eq!(sizes, vec![9, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(anchor.overwritten_by_next(), 2);
        // and a reopen continues after the newest.
        drop(anchor);
        let anchor = Anchor::open(&path).unwrap();
        assert_eq!(anchor.read().unwrap(), Some(note(9)));
        assert_eq!(anchor.overwritten_by_next(), 2);
    }

    #[test]
    fn a_first_version_anchor_keeps_its_two_slots_of_4096_bytes() {
        // Given an anchor file of two 4,096-byte slots (earlier versions),
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchor");
        fs::write(&path, vec![0u8; 2 * Anchor::SLOT]).unwrap();
        let anchor = Anchor::open(&path).unwrap();
        // when three anchors are written, one with a redo,
        write_40_then_43(&anchor);
        anchor.write(&note(44)).unwrap();
        // then the file keeps its size, the slots alternate, and a redo that
        // does not fit 4,096 bytes is not offered.
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 2 * Anchor::SLOT);
        assert_eq!(
            Anchor::parse_slot(&bytes[..Anchor::SLOT]).map(|(n, _)| n),
            Some(note(44))
        );
        assert_eq!(
            Anchor::parse_slot(&bytes[Anchor::SLOT..]),
            Some((note(43), Some(redo())))
        );
        let mut big = redo();
        big.events.push(vec![1u8; Anchor::SLOT]);
        assert!(anchor.slot_with_redo(&note(45), &big).is_none());
        assert_eq!(anchor.overwritten_by_next(), 43);
    }

    #[test]
    fn a_second_version_slot_with_a_redo_is_still_read_with_no_durable_mark() {
        // Given a slot of the second version (DKTANCH2: the redo has no
        // durable mark) in a two-slot anchor,
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchor");
        let note = note(43);
        let mut redo_v2 = Vec::new();
        redo().encode(&mut redo_v2);
        let redo_v2 = redo_v2.split_off(8);
        let mut slot = b"DKTANCH2".to_vec();
        slot.extend_from_slice(&(note.len() as u32).to_be_bytes());
        slot.extend_from_slice(&(redo_v2.len() as u32).to_be_bytes());
        let mut h = sha2::Sha256::new();
        h.update(&slot[8..16]);
        h.update(note.as_bytes());
        h.update(&redo_v2);
        slot.extend_from_slice(&h.finalize());
        slot.extend_from_slice(note.as_bytes());
        slot.extend_from_slice(&redo_v2);
        slot.resize(2 * Anchor::SLOT, 0);
        fs::write(&path, &slot).unwrap();
        // then it is read with its redo, whose durable mark is 0.
        let anchor = Anchor::open(&path).unwrap();
        let expected = AnchorRedo {
            durable: 0,
            ..redo()
        };
        assert_eq!(
            anchor.read_with_redo().unwrap(),
            Some((note, Some(expected)))
        );
    }

    #[test]
    fn a_redo_whose_durable_mark_passes_its_first_event_makes_the_slot_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = anchor_in(dir.path());
        let bad = AnchorRedo {
            durable: 42,
            ..redo()
        };
        let slot = anchor.slot_with_redo(&note(43), &bad).unwrap();
        assert_eq!(Anchor::parse_slot(&slot), None);
        let good = anchor.slot_with_redo(&note(43), &redo()).unwrap();
        assert_eq!(Anchor::parse_slot(&good), Some((note(43), Some(redo()))));
    }
}
