//! `docket replay` while a `docket serve` holds the data directory (sled's
//! lock keeps every other process out of `log/`).
//!
//! The events come from the server that holds the directory (its address is
//! in `DATA/server/address`); everything else is read or checked locally,
//! with the trust anchor of `ledger.json`:
//!
//! 1. the sealed snapshots are read from `DATA/snapshots/` first (each was
//!    written for a size the ledger had already signed);
//! 2. then the server's latest signed checkpoint (size `S`), which plays the
//!    part of the anchor: its signature is checked against the ledger key of
//!    `ledger.json`, and the root of the events against its root;
//! 3. then events `0..S`, by the server's tail.
//!
//! The same verifier as always ([`docket_log::verify::verify_log`]) then
//! checks encodings, sequence, chain, time, every signature, re-admission,
//! the root against the checkpoint and the snapshots against the rebuilt
//! state. What it cannot check this way: the stored Merkle nodes and the
//! anchor file (the server's own open check and background scrub do); the
//! report says so.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use docket_log::merkle::{Hash, MemoryTree, MerkleError, NodeSource, leaf_hash};
use docket_log::store::{CommitBatch, Store};
use docket_log::{LogError, Result};

use crate::backend::Backend;

/// The events a server serves, up to its checkpoint, with the snapshots of
/// the data directory: a read-only [`Store`] for the verifier.
pub struct ServedStore {
    events: Vec<Vec<u8>>,
    tree: MemoryTree,
    checkpoint: (u64, String),
    snapshots: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for ServedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedStore")
            .field("events", &self.events.len())
            .field("checkpoint", &self.checkpoint.0)
            .finish_non_exhaustive()
    }
}

/// Names of the snapshots under `DATA/snapshots/` (`NAME.snap`).
fn read_snapshots(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let dir: PathBuf = dir.join("snapshots");
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(LogError::io(&dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| LogError::io(&dir, e))?;
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".snap"))
        else {
            continue;
        };
        let bytes = std::fs::read(&path).map_err(|e| LogError::io(&path, e))?;
        out.push((name.to_string(), bytes));
    }
    Ok(out)
}

impl ServedStore {
    /// Reads the snapshots of `data`, then the checkpoint and the events up
    /// to it from `server`; `progress(done, total)` after each 4,096 events.
    pub fn fetch(
        data: &Path,
        server: &dyn Backend,
        progress: &mut dyn FnMut(u64, u64),
    ) -> anyhow::Result<Self> {
        let snapshots = read_snapshots(data)?;
        let cp = server.checkpoint()?;
        let size = cp.size;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut events: Vec<Vec<u8>> =
            Vec::with_capacity(usize::try_from(size).unwrap_or(0).min(1 << 24));
        let mut tree = MemoryTree::new();
        let mut failure: Option<anyhow::Error> = None;
        if size > 0 {
            server.tail(0, false, &mut |view| {
                match b64.decode(&view.event_b64) {
                    Ok(bytes) => {
                        tree.push(leaf_hash(&bytes));
                        events.push(bytes);
                    }
                    Err(e) => {
                        failure = Some(anyhow::anyhow!(
                            "the server sent event {} in bad base64: {e}",
                            view.seq
                        ));
                        return false;
                    }
                }
                let done = events.len() as u64;
                if done.is_multiple_of(4096) {
                    progress(done, size);
                }
                done < size
            })?;
        }
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(Self {
            events,
            tree,
            checkpoint: (size, cp.note),
            snapshots,
        })
    }

    /// The size of the checkpoint the replay stops at.
    pub fn checkpoint_size(&self) -> u64 {
        self.checkpoint.0
    }
}

fn read_only() -> LogError {
    LogError::FailedPrecondition("a replay through the server writes nothing".into())
}

impl NodeSource for ServedStore {
    fn node(&self, level: u8, index: u64) -> std::result::Result<Hash, MerkleError> {
        self.tree.node(level, index)
    }
}

impl Store for ServedStore {
    fn commit(&self, _batch: &CommitBatch) -> Result<()> {
        Err(read_only())
    }

    fn len(&self) -> Result<u64> {
        Ok(self.events.len() as u64)
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        Ok(usize::try_from(seq)
            .ok()
            .and_then(|i| self.events.get(i))
            .cloned())
    }

    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let to = to.min(self.events.len() as u64);
        Ok((from..to)
            .filter_map(|seq| {
                let i = usize::try_from(seq).ok()?;
                Some((seq, self.events.get(i)?.clone()))
            })
            .collect())
    }

    fn statement_seq(&self, _digest: &Hash) -> Result<Option<u64>> {
        Ok(None)
    }

    fn for_each_statement(&self, _f: &mut dyn FnMut(Hash)) -> Result<()> {
        Ok(())
    }

    fn checkpoint(&self, size: Option<u64>) -> Result<Option<(u64, String)>> {
        Ok(match size {
            None => Some(self.checkpoint.clone()),
            Some(s) if s == self.checkpoint.0 => Some(self.checkpoint.clone()),
            Some(_) => None,
        })
    }

    fn checkpoints(&self, from: u64, to: u64) -> Result<Vec<(u64, String)>> {
        Ok((from..=to)
            .contains(&self.checkpoint.0)
            .then(|| self.checkpoint.clone())
            .into_iter()
            .collect())
    }

    fn put_snapshot(&self, _name: &str, _bytes: &[u8]) -> Result<()> {
        Err(read_only())
    }

    fn snapshot(&self, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .snapshots
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone()))
    }

    fn anchor(&self) -> Result<Option<String>> {
        Ok(Some(self.checkpoint.1.clone()))
    }

    fn put_anchor(&self, _note: &str) -> Result<()> {
        Err(read_only())
    }
}
