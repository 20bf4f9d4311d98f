//! Recovery of a damaged ledger: find the intact, provable prefix of its
//! log and export it as a bundle that audits clean against the ledger key.
//!
//! The prefix is the longest run of events from genesis that (1) has no
//! integrity finding from the one log verifier, and (2) ends at a size for
//! which the ledger signed a checkpoint (stored with the events, or the
//! anchor) whose root equals the root recomputed from those events' bytes.
//! Nothing is re-signed: every checkpoint in the bundle is one the ledger
//! signed before the damage. Damage to derived data only (a stored leaf
//! hash, a hash tile, a snapshot) does not shorten the prefix.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::checkpoint::{self, NoteVerifier};
use crate::error::{LedgerError, Result};
use crate::merkle::{self, Frontier};
use crate::replay::{self, FindingKind, ReplayOptions, ReplayReport};
use crate::store::Store;

use super::memory::MemoryLog;

/// What the recovery found.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryPlan {
    /// Events in the damaged store.
    pub stored_events: u64,
    /// The anchored size (what the ledger had acknowledged and signed).
    pub anchor_size: Option<u64>,
    /// First sequence number with an integrity finding (None: none).
    pub first_damage: Option<u64>,
    /// What the finding says.
    pub damage: Option<String>,
    /// Size of the provable prefix exported.
    pub prefix: u64,
    /// Events acknowledged but not recoverable: `anchor_size - prefix`.
    pub lost: u64,
}

/// Verifies the store and finds its provable prefix; returns the plan, the
/// verifier's report and the in-memory log of the prefix (exportable with
/// [`super::export`]).
pub fn recover(
    store: &dyn Store,
    verifier: &NoteVerifier,
    ledger_key: ed25519_dalek::SigningKey,
) -> Result<(RecoveryPlan, ReplayReport, MemoryLog)> {
    let (report, _) = replay::replay(
        store,
        verifier,
        ReplayOptions {
            verify: true,
            as_of: None,
        },
        &mut |_, _| {},
    )?;
    let stored_events = store.len()?;
    let first = report
        .findings
        .iter()
        .filter(|f| f.exit_code() == 5 && cuts_the_prefix(f.kind))
        .filter_map(|f| f.seq.map(|s| (s, f.detail.clone())))
        .min_by_key(|(s, _)| *s);
    let limit = first.as_ref().map_or(stored_events, |(s, _)| *s);
    // Read the intact events and recompute roots along the way.
    let mut events = Vec::new();
    let mut frontier = Frontier::new();
    let mut roots = BTreeMap::new();
    let mut next = 0;
    while next < limit {
        let to = (next + 8192).min(limit);
        // (A damaged file may hold the last of these events with ones
        // that cannot be read: those, past `limit`, are not asked for.)
        for (seq, bytes) in store.salvage_range(next, to)?.0 {
            if seq != events.len() as u64 {
                break;
            }
            frontier.push(merkle::leaf_hash(&bytes));
            roots.insert(seq + 1, frontier.root());
            events.push(bytes);
        }
        if events.len() as u64 != to {
            break;
        }
        next = to;
    }
    // Signed checkpoints at sizes within the intact run whose root matches.
    let mut checkpoints = BTreeMap::new();
    let mut candidates: Vec<String> = Vec::new();
    if let Some(note) = store.anchor()? {
        candidates.push(note);
    }
    for size in 1..=events.len() as u64 {
        match store.checkpoint(Some(size)) {
            Ok(Some((_, note))) => candidates.push(note),
            Ok(None) => {}
            // A damaged derived index (the tile store's checkpoint index)
            // hides this size's checkpoint; the others still count.
            Err(LedgerError::Corrupt { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    for note in candidates {
        if let Ok(cp) = checkpoint::open_note(&note, verifier)
            && cp.size > 0
            && roots.get(&cp.size) == Some(&cp.root)
        {
            checkpoints.insert(cp.size, note);
        }
    }
    let prefix = checkpoints.keys().next_back().copied().unwrap_or(0);
    if prefix == 0 {
        return Err(LedgerError::NotFound {
            what:
                "a signed checkpoint over an intact prefix of the log: nothing provable to recover"
                    .into(),
        });
    }
    events.truncate(usize::try_from(prefix).unwrap_or(usize::MAX));
    let anchor_size = report.anchor_size;
    let plan = RecoveryPlan {
        stored_events,
        anchor_size,
        first_damage: first.as_ref().map(|(s, _)| *s),
        damage: first.map(|(_, d)| d).or_else(|| {
            anchor_size.is_none().then(|| {
                "the anchor (the ledger's latest signed checkpoint) is missing or unreadable: \
                 events acknowledged after the last checkpoint stored with the events cannot \
                 be accounted for"
                    .to_string()
            })
        }),
        prefix,
        lost: anchor_size.unwrap_or(stored_events).saturating_sub(prefix),
    };
    let log = MemoryLog::from_stored(&verifier.name, ledger_key, events, checkpoints)?;
    Ok((plan, report, log))
}

/// Whether a finding cuts the prefix at its seq. Findings about derived
/// data only (a stored leaf hash or hash tile, a snapshot) do not: the
/// prefix is proved by the signed checkpoints its own bytes give, whatever
/// the derived copies say.
fn cuts_the_prefix(kind: FindingKind) -> bool {
    !matches!(
        kind,
        FindingKind::StoredLeaf
            | FindingKind::Structure
            | FindingKind::Snapshot
            | FindingKind::SnapshotTampered
    )
}

/// Copies the blobs of `dir/blobs` that the prefix references into `log`,
/// so `--with-blobs` recovery carries the evidence that survived.
pub fn attach_blobs(log: &mut MemoryLog, dir: &Path) -> Result<()> {
    let blobs = crate::blobs::BlobStore::open(dir)?;
    let digests: Vec<crate::blobs::BlobDigest> = log
        .state()
        .domain
        .oids
        .oids
        .values()
        .filter_map(|o| crate::blobs::parse_digest(&o.sha256).ok())
        .collect();
    for d in digests {
        // A blob that is gone or fails its digest is simply not carried;
        // the audit reports it as missing.
        if let Ok(bytes) = blobs.read_verified(&d, super::source::MAX_EXPORT_BLOB) {
            log.insert_blob(d, bytes);
        }
    }
    Ok(())
}
