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
//! | `b'e' ‖ seq (u64 BE)` | canonical event bytes |
//! | `b'n' ‖ level (u8) ‖ index (u64 BE)` | complete Merkle node hash (level 0 = leaf hash) |
//! | `b's' ‖ statement digest (32)` | seq (u64 BE) of the first event carrying it |
//! | `b'c' ‖ tree size (u64 BE)` | signed checkpoint note (UTF-8) |
//!
//! Projection snapshots are files under `DIR/snapshots/`, written atomically.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{LedgerError, Result};
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
    /// Durably stores a projection snapshot reflecting events `..seq`.
    fn put_snapshot(&self, name: &str, seq: u64, bytes: &[u8]) -> Result<()>;
    /// The stored snapshot `(seq, bytes)` for `name`.
    fn snapshot(&self, name: &str) -> Result<Option<(u64, Vec<u8>)>>;
}

/// Merkle nodes at or above this level are also kept in memory (about 4
/// bytes per event: 1/16 + 1/32 + … of the leaves), so a proof reads only the
/// bottom four levels from sled.
pub const CACHED_FROM_LEVEL: u8 = 4;

/// The embedded sled store under `DIR/log/` with snapshots in `DIR/snapshots/`.
pub struct SledStore {
    db: sled::Db,
    tree: sled::Tree,
    db_file: File,
    snapshot_dir: PathBuf,
    /// `upper[l - CACHED_FROM_LEVEL][i]` = node (l, i), for every stored
    /// complete node at level ≥ [`CACHED_FROM_LEVEL`].
    upper: std::sync::RwLock<Vec<Vec<Hash>>>,
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStore")
            .field("snapshot_dir", &self.snapshot_dir)
            .finish_non_exhaustive()
    }
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
        .map_err(|_| LedgerError::corrupt(location, "expected an 8-byte sequence number"))?;
    Ok(u64::from_be_bytes(arr))
}

impl SledStore {
    /// Opens (or creates) the store under `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        let log_dir = dir.join("log");
        let snapshot_dir = dir.join("snapshots");
        for d in [&log_dir, &snapshot_dir] {
            fs::create_dir_all(d).map_err(|e| LedgerError::io(d, e))?;
        }
        let db = sled::Config::new()
            .path(&log_dir)
            // Keep every value inline in the main file: sled writes values
            // over segment_size/4 to separate blob files without fsync.
            .segment_size(4 << 20)
            .flush_every_ms(None)
            .open()
            .map_err(|e| LedgerError::store(format!("opening {}", log_dir.display()), e))?;
        let tree = db
            .open_tree("log")
            .map_err(|e| LedgerError::store("opening tree log", e))?;
        let db_path = log_dir.join("db");
        let db_file = File::open(&db_path).map_err(|e| LedgerError::io(&db_path, e))?;
        let upper = load_upper_levels(&tree)?;
        Ok(Self {
            db,
            tree,
            db_file,
            snapshot_dir,
            upper: std::sync::RwLock::new(upper),
        })
    }

    /// The raw sled tree, for tests that tamper with stored bytes.
    #[doc(hidden)]
    pub fn raw_tree(&self) -> &sled::Tree {
        &self.tree
    }

    /// Flushes sled's buffers and fsyncs its file (sled 0.34's `flush` alone
    /// does not reach the disk on Linux: sled#1452).
    pub fn sync(&self) -> Result<()> {
        self.db
            .flush()
            .map_err(|e| LedgerError::store("flushing", e))?;
        self.db_file
            .sync_all()
            .map_err(|e| LedgerError::io("log/db", e))
    }
}

/// Reads every stored node at level ≥ [`CACHED_FROM_LEVEL`], checking that
/// each level is contiguous from index 0.
fn load_upper_levels(tree: &sled::Tree) -> Result<Vec<Vec<Hash>>> {
    let mut upper = Vec::new();
    for level in CACHED_FROM_LEVEL..64 {
        let mut nodes = Vec::new();
        for item in tree.scan_prefix([b'n', level]) {
            let (k, v) = item.map_err(|e| LedgerError::store("scanning Merkle nodes", e))?;
            let index = seq_from(&k[2..], "Merkle node key")?;
            if index != nodes.len() as u64 || v.len() != 32 {
                return Err(LedgerError::corrupt(
                    format!("Merkle node ({level}, {index})"),
                    "nodes of a level are not contiguous 32-byte hashes",
                ));
            }
            let mut h = [0u8; 32];
            h.copy_from_slice(&v);
            nodes.push(h);
        }
        if nodes.is_empty() {
            break;
        }
        upper.push(nodes);
    }
    Ok(upper)
}

impl NodeSource for SledStore {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        if level >= CACHED_FROM_LEVEL {
            let upper = self
                .upper
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            return usize::try_from(index)
                .ok()
                .and_then(|i| upper.get(usize::from(level - CACHED_FROM_LEVEL))?.get(i))
                .copied()
                .ok_or(MerkleError::MissingNode { level, index });
        }
        match self.tree.get(node_key(level, index)) {
            Ok(Some(v)) if v.len() == 32 => {
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
            b.insert(&event_key(*seq)[..], bytes.as_slice());
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
        self.tree
            .apply_batch(b)
            .map_err(|e| LedgerError::store("applying a commit batch", e))?;
        self.sync()?;
        // Durable: publish the upper nodes to the in-memory levels.
        let mut upper = self
            .upper
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (level, index, hash) in &batch.nodes {
            if *level < CACHED_FROM_LEVEL {
                continue;
            }
            let l = usize::from(level - CACHED_FROM_LEVEL);
            while upper.len() <= l {
                upper.push(Vec::new());
            }
            if *index == upper[l].len() as u64 {
                upper[l].push(*hash);
            } else {
                // Out of order: only a store written by hand does this;
                // proofs then fail with MissingNode rather than lie.
                tracing::warn!("Merkle node ({level}, {index}) committed out of order");
            }
        }
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        match self.tree.scan_prefix(b"e").next_back() {
            None => Ok(0),
            Some(Ok((k, _))) => Ok(seq_from(&k[1..], "last event key")? + 1),
            Some(Err(e)) => Err(LedgerError::store("reading the last event", e)),
        }
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        self.tree
            .get(event_key(seq))
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| LedgerError::store(format!("reading event {seq}"), e))
    }

    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        if from >= to {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(usize::try_from(to - from).unwrap_or(0).min(1 << 16));
        for item in self.tree.range(event_key(from)..event_key(to)) {
            let (k, v) = item.map_err(|e| LedgerError::store("scanning events", e))?;
            out.push((seq_from(&k[1..], "event key")?, v.to_vec()));
        }
        Ok(out)
    }

    fn for_each_statement(&self, f: &mut dyn FnMut(Hash)) -> Result<()> {
        for item in self.tree.scan_prefix(b"s") {
            let (k, _) = item.map_err(|e| LedgerError::store("scanning statement digests", e))?;
            if let Ok(d) = <[u8; 32]>::try_from(&k[1..]) {
                f(d);
            }
        }
        Ok(())
    }

    fn leaf_hashes(&self, from: u64, to: u64) -> Result<Vec<(u64, Hash)>> {
        let mut out = Vec::new();
        if from >= to {
            return Ok(out);
        }
        for item in self.tree.range(node_key(0, from)..node_key(0, to)) {
            let (k, v) = item.map_err(|e| LedgerError::store("scanning Merkle leaves", e))?;
            let seq = seq_from(&k[2..], "Merkle leaf key")?;
            if let Ok(h) = <[u8; 32]>::try_from(v.as_ref()) {
                out.push((seq, h));
            }
        }
        Ok(out)
    }

    fn statement_seq(&self, digest: &Hash) -> Result<Option<u64>> {
        match self
            .tree
            .get(statement_key(digest))
            .map_err(|e| LedgerError::store("reading statement index", e))?
        {
            None => Ok(None),
            Some(v) => Ok(Some(seq_from(&v, "statement index")?)),
        }
    }

    fn checkpoint(&self, size: Option<u64>) -> Result<Option<(u64, String)>> {
        let found = match size {
            Some(s) => self
                .tree
                .get(checkpoint_key(s))
                .map_err(|e| LedgerError::store("reading checkpoint", e))?
                .map(|v| (s, v)),
            None => match self.tree.scan_prefix(b"c").next_back() {
                None => None,
                Some(Ok((k, v))) => Some((seq_from(&k[1..], "checkpoint key")?, v)),
                Some(Err(e)) => return Err(LedgerError::store("reading checkpoints", e)),
            },
        };
        found
            .map(|(s, v)| {
                String::from_utf8(v.to_vec())
                    .map(|note| (s, note))
                    .map_err(|_| LedgerError::corrupt(format!("checkpoint {s}"), "not UTF-8"))
            })
            .transpose()
    }

    fn put_snapshot(&self, name: &str, seq: u64, bytes: &[u8]) -> Result<()> {
        let path = self.snapshot_dir.join(format!("{name}.snap"));
        let mut content = Vec::with_capacity(bytes.len() + 8);
        content.extend_from_slice(&seq.to_be_bytes());
        content.extend_from_slice(bytes);
        write_atomically(&path, &content)
    }

    fn snapshot(&self, name: &str) -> Result<Option<(u64, Vec<u8>)>> {
        let path = self.snapshot_dir.join(format!("{name}.snap"));
        match fs::read(&path) {
            Ok(content) if content.len() >= 8 => {
                let seq = seq_from(&content[..8], "snapshot header")?;
                Ok(Some((seq, content[8..].to_vec())))
            }
            Ok(_) => Err(LedgerError::corrupt(
                path.display().to_string(),
                "snapshot shorter than its header",
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(LedgerError::io(path, e)),
        }
    }
}

/// Writes `path` atomically: a temp file in the same directory, fsync,
/// rename, fsync of the directory.
pub fn write_atomically(path: &Path, content: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    let mut f = File::create(&tmp).map_err(|e| LedgerError::io(&tmp, e))?;
    f.write_all(content)
        .and_then(|()| f.sync_all())
        .map_err(|e| LedgerError::io(&tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| LedgerError::io(path, e))?;
    sync_dir(dir)
}

/// fsyncs a directory so a rename or create inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| LedgerError::io(dir, e))
}
