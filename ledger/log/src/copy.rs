//! Copying a ledger between stores (the embedded layouts, PostgreSQL),
//! checked on the way and verified by replay at the end; and moving a data
//! directory's ledger to another embedded layout in place.
//!
//! The copy reads the source as replay does (every event decoded and
//! checked, Merkle nodes recomputed from the bytes, never copied), so a
//! damaged source is refused naming where, and the destination is replayed
//! with every check before anything is switched over.

use std::collections::HashMap;

use crate::checkpoint::NoteVerifier;
use crate::event::Event;
use crate::merkle::{self, Frontier, Hash};
use crate::store::{CommitBatch, Store};
use crate::verify::{LogChecker, Trust, VerifyOptions, VerifyReport, verify_log};
use crate::{LogError, StateMachine, snapshot};

/// Events per destination commit.
const CHUNK: u64 = 8192;

/// The persisted statement filter's snapshot name (sealed like a
/// projection; see the sequencer).
const FILTER_SNAPSHOT: &str = "statement-filter";

/// What a copy did.
#[derive(Debug, Clone)]
pub struct CopyReport {
    pub events: u64,
    pub checkpoints: u64,
    /// Root recomputed from the source's event bytes.
    pub root: Hash,
    /// Size of the anchored checkpoint copied.
    pub anchor_size: u64,
    /// Snapshots copied, and those left out (stale or not authentic: the
    /// destination rebuilds them on its first open).
    pub snapshots: Vec<String>,
    pub snapshots_skipped: Vec<String>,
}

/// Copies the ledger in `from` into the empty store `to` (which must accept
/// writes: for PostgreSQL, hold the lease): every event with its Merkle
/// nodes and statement digest, every checkpoint, the sealed snapshots of
/// `M` that verify and reflect a prefix of what is copied, and last the
/// anchor. Each event is checked as replay checks it (canonical decoding,
/// sequence, chain, time, its stored leaf); the Merkle nodes are recomputed
/// from the bytes, never copied. A damaged source is refused naming the
/// first bad sequence number (`docket recover` exports its intact prefix).
/// `progress(done, total)` is called after every chunk.
pub fn copy_ledger<M: StateMachine>(
    from: &dyn Store,
    to: &dyn Store,
    verifier: &NoteVerifier,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CopyReport, LogError> {
    if to.len()? > 0 || to.anchor()?.is_some() {
        return Err(LogError::AlreadyExists {
            what: "a ledger in the destination store".into(),
        });
    }
    let anchor = from.anchor()?.ok_or_else(|| {
        LogError::corrupt(
            "anchor",
            "the source has no anchor (latest signed checkpoint)",
        )
    })?;
    let anchored = crate::checkpoint::open_note(&anchor, verifier)
        .map_err(|e| LogError::corrupt("anchor", format!("the source's anchor: {e}")))?;
    let len = from.len()?;
    if anchored.size > len {
        return Err(LogError::corrupt(
            format!("event {len}"),
            format!(
                "the source holds {len} events but its anchor names {}",
                anchored.size
            ),
        ));
    }
    let mut checker = LogChecker::new();
    let mut frontier = Frontier::new();
    let mut checkpoints = 0u64;
    let mut next = 0u64;
    let mut root_at_anchor = (anchored.size == 0).then(merkle::empty_root);
    while next < len {
        let end = (next + CHUNK).min(len);
        let raw = from.event_range(next, end)?;
        let stored: HashMap<u64, Hash> = from.leaf_hashes(next, end)?.into_iter().collect();
        let mut batch = CommitBatch::default();
        for (seq, bytes) in raw {
            let at = format!("event {seq}");
            let event = Event::decode(&bytes).map_err(|e| LogError::corrupt(&at, e.to_string()))?;
            let leaf = merkle::leaf_hash(&bytes);
            if let Some(f) = checker.check_decoded(&event, leaf).first() {
                return Err(LogError::corrupt(
                    f.seq.map_or(at, |s| format!("event {s}")),
                    f.detail.clone(),
                ));
            }
            if stored.get(&seq) != Some(&leaf) {
                return Err(LogError::corrupt(
                    at,
                    "the stored Merkle leaf differs from the hash of the stored event bytes",
                ));
            }
            batch.nodes.extend(frontier.push(leaf));
            batch.statements.push((event.statement().digest(), seq));
            batch.events.push((seq, bytes));
            if frontier.size() == anchored.size {
                root_at_anchor = Some(frontier.root());
            }
        }
        if checker.len() != end {
            return Err(LogError::corrupt(
                format!("event {}", checker.len()),
                format!(
                    "events {}..{end} are missing from the source",
                    checker.len()
                ),
            ));
        }
        to.commit(&batch)?;
        let cps = from.checkpoints(next + 1, end)?;
        checkpoints += cps.len() as u64;
        if !cps.is_empty() {
            to.put_checkpoints(&cps)?;
        }
        next = end;
        progress(next, len);
    }
    if root_at_anchor != Some(anchored.root) {
        return Err(LogError::corrupt(
            format!("events 0..{}", anchored.size),
            "the root of the source's events differs from its anchored checkpoint",
        ));
    }
    let root = frontier.root();
    // Snapshots: only authentic ones that reflect a prefix of the copy (a
    // snapshot of a longer log would read as damage in the destination).
    let mut names: Vec<String> = M::default()
        .snapshot()
        .into_iter()
        .map(|(n, _)| n.to_string())
        .collect();
    names.push(FILTER_SNAPSHOT.to_string());
    let mut copied = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        let Some(sealed) = from.snapshot(&name)? else {
            skipped.push(name);
            continue;
        };
        let fits = snapshot::open(&name, &sealed, &verifier.key)
            .is_ok_and(|s| s.seq <= len && merkle::root_at(to, s.seq).is_ok_and(|r| r == s.root));
        if fits {
            to.put_snapshot(&name, &sealed)?;
            copied.push(name);
        } else {
            skipped.push(name);
        }
    }
    to.put_anchor(&anchor)?;
    Ok(CopyReport {
        events: len,
        checkpoints,
        root,
        anchor_size: anchored.size,
        snapshots: copied,
        snapshots_skipped: skipped,
    })
}

/// Replays the ledger in `store` from genesis with every check
/// (`replay --verify`: signatures, chain, admission, root against the
/// anchor and the checkpoints, snapshots) and checks its root equals
/// `expected_root` at `expected_len` events.
pub fn verify_copy<M: StateMachine>(
    store: &dyn Store,
    verifier: &NoteVerifier,
    expected_len: u64,
    expected_root: &Hash,
) -> Result<VerifyReport, LogError> {
    let (report, _) = verify_log::<M>(
        store,
        Trust {
            checkpoints: verifier,
            snapshots: &verifier.key,
        },
        VerifyOptions::full(),
        &mut |_, _| {},
    )?;
    if let Some(f) = report.first_damage() {
        return Err(LogError::corrupt(
            f.seq.map_or_else(|| "log".into(), |s| format!("event {s}")),
            format!("the copy does not verify: {}", f.detail),
        ));
    }
    if report.events != expected_len || report.root != hex::encode(expected_root) {
        return Err(LogError::corrupt(
            "log",
            format!(
                "the copy replays to {} events with root {}, the source to {expected_len} with {}",
                report.events,
                report.root,
                hex::encode(expected_root)
            ),
        ));
    }
    Ok(report)
}

/// What [`migrate_layout`] did.
#[derive(Debug, Clone)]
pub struct LayoutMigration {
    /// The copy (events, checkpoints, root, anchor size, snapshots).
    pub copy: CopyReport,
    /// The replay of the new store, with every check.
    pub replay: VerifyReport,
    /// Where the old store now is (`DIR/log.migrated` or
    /// `DIR/tiles.migrated`): kept, for the operator to delete.
    pub old_store: std::path::PathBuf,
}

/// Moves the ledger in data directory `dir` to the embedded layout `to`, in
/// place: copies it into a staging directory (`DIR/.migrate/`) as
/// [`copy_ledger`] does, replays the copy with every check
/// ([`verify_copy`]), then switches with one rename, and moves the old
/// store aside (`DIR/log.migrated` or `DIR/tiles.migrated`). The anchor,
/// `ledger.json`, the keys and the sealed snapshots stay where they are
/// (they name the same log). Every intermediate state opens: until the
/// switching rename the old store is the ledger, after it the new one is.
/// Refuses while another process holds the store (a running server).
pub fn migrate_layout<M: StateMachine>(
    dir: &std::path::Path,
    to: crate::Layout,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<LayoutMigration, LogError> {
    use crate::Layout;
    let from = Layout::of(dir);
    if from == to {
        return Err(LogError::FailedPrecondition(format!(
            "the ledger in {} already has the {} layout",
            dir.display(),
            to.name()
        )));
    }
    let old_aside = dir.join(format!("{}.migrated", from.store_dir()));
    if old_aside.exists() {
        return Err(LogError::AlreadyExists {
            what: format!(
                "{} (an earlier migration's old store: delete it first)",
                old_aside.display()
            ),
        });
    }
    // The source is read from a private copy (its open is a recovery that
    // would write to a damaged store: the evidence of a refused migration
    // must stay as it was), with the original store locked meanwhile.
    let (source, verifier) = crate::sequencer::open_store_for_verification(dir)?;
    let staging = dir.join(".migrate");
    if staging.exists() {
        // An interrupted migration: the live store was never touched.
        std::fs::remove_dir_all(&staging).map_err(|e| LogError::io(&staging, e))?;
    }
    let copied = (|| {
        let target = to.create_store(&staging)?;
        let copy = copy_ledger::<M>(source.as_ref(), target.as_ref(), &verifier, progress)?;
        let replay = verify_copy::<M>(target.as_ref(), &verifier, copy.events, &copy.root)?;
        Ok::<_, LogError>((copy, replay))
    })();
    let (copy, replay) = match copied {
        Ok(done) => done,
        Err(e) => {
            // Refused: nothing of the attempt is left behind.
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    drop(source);
    let new_store = dir.join(to.store_dir());
    let rename = |a: &std::path::Path, b: &std::path::Path| {
        std::fs::rename(a, b).map_err(|e| LogError::io(b, e))?;
        crate::store::sync_dir(dir)
    };
    // Tiles win when both directories exist: to tiles, the new store moves
    // in first (that rename is the switch); to sled, it moves in first and
    // moving the tiles aside is the switch.
    rename(&staging.join(to.store_dir()), &new_store)?;
    rename(&dir.join(from.store_dir()), &old_aside)?;
    std::fs::remove_dir_all(&staging).map_err(|e| LogError::io(&staging, e))?;
    crate::store::sync_dir(dir)?;
    Ok(LayoutMigration {
        copy,
        replay,
        old_store: old_aside,
    })
}
