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
/// [`super::export`]). The log is `None` when no signed checkpoint covers
/// an intact prefix from genesis (the first entry bundle is gone, say):
/// the plan's `prefix` is then 0, and a [`salvage`] may still prove the
/// events after the damage.
pub fn recover(
    store: &dyn Store,
    verifier: &NoteVerifier,
) -> Result<(RecoveryPlan, ReplayReport, Option<MemoryLog>)> {
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
    events.truncate(usize::try_from(prefix).unwrap_or(usize::MAX));
    // A damaged newest anchor slot may still carry the checkpoint the
    // ledger signed and acknowledged last: counted when its signature
    // verifies, so that the loss is counted against it, not against the
    // older slot the open fell back to.
    let damaged_slot_size = store
        .anchor_notes_of_damaged_slots()?
        .iter()
        .filter_map(|note| checkpoint::open_note(note, verifier).ok())
        .map(|cp| cp.size)
        .max()
        .filter(|&size| report.anchor_size.is_none_or(|a| size > a));
    let anchor_size = report.anchor_size.max(damaged_slot_size);
    let plan = RecoveryPlan {
        stored_events,
        anchor_size,
        first_damage: first.as_ref().map(|(s, _)| *s),
        damage: first
            .map(|(_, d)| d)
            .or_else(|| {
                damaged_slot_size.map(|size| {
                    format!(
                        "the newest anchor slot does not verify (damaged), but its checkpoint note \
                     does: the ledger acknowledged {size} events"
                    )
                })
            })
            .or_else(|| {
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
    if prefix == 0 {
        return Ok((plan, report, None));
    }
    let log = MemoryLog::from_stored(&verifier.name, verifier.key, events, checkpoints)?;
    Ok((plan, report, Some(log)))
}

/// The error of a recovery that found nothing provable: no intact prefix
/// and no salvage.
pub fn nothing_provable() -> LedgerError {
    LedgerError::NotFound {
        what: "a signed checkpoint over an intact prefix of the log or over the events that \
               survive: nothing provable to recover"
            .into(),
    }
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
    let blobs = crate::blobs::BlobStore::open_to_read(dir);
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

/// What [`salvage`] found: every intact event that one signed checkpoint
/// proves, those after the damage included.
#[derive(Debug, Clone, Serialize)]
pub struct Salvage {
    /// The size of the signed checkpoint that proves them: the anchor's
    /// (the ledger's latest) when the store still gives its root, else the
    /// largest stored checkpoint that it gives.
    pub tree_size: u64,
    /// Intact events carried (each in the tree of that checkpoint).
    pub events: u64,
    /// Of those, the events after the intact prefix (`seq >= prefix`).
    pub after_prefix: u64,
    /// The events below `tree_size` that are not carried, as inclusive
    /// `[first, last]` ranges: their bytes are gone or altered (only their
    /// leaf hash survives, in the store's derived tree or the chain, or a
    /// node the store kept above a run of them).
    pub missing: Vec<[u64; 2]>,
    /// The anchor's size (the ledger's latest signed checkpoint) when it
    /// is larger than `tree_size`: what survives does not prove the anchor,
    /// and the events `tree_size..anchor_size` are not in the salvage.
    pub anchor_size: Option<u64>,
}

/// A log with holes: the intact events of a damaged store and the leaf
/// hashes of all of them, lost ones included, under a checkpoint the
/// ledger signed. The source of a salvage export ([`salvage`]).
pub struct SalvagedLog {
    origin: String,
    ledger_public: ed25519_dalek::VerifyingKey,
    tree: SalvageTree,
    events: BTreeMap<u64, Vec<u8>>,
    checkpoint: (crate::checkpoint::Checkpoint, String),
    state: crate::state::LedgerState,
    blobs: std::collections::HashMap<crate::blobs::BlobDigest, Vec<u8>>,
}

impl std::fmt::Debug for SalvagedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SalvagedLog")
            .field("tree_size", &self.checkpoint.0.size)
            .field("events", &self.events.len())
            .finish_non_exhaustive()
    }
}

/// Finds every intact event of a damaged store that a signed checkpoint
/// proves, past the damage too (a torn entry bundle, an altered event):
/// the events a prefix export ([`recover`]) must leave out because the
/// chain from genesis breaks at the damage.
///
/// Each event's leaf is the hash of its bytes where they can be read, else
/// the leaf hash the store's derived tree kept. The leaves of the tree of a
/// signed checkpoint (the anchor first, then stored ones, largest first)
/// must give that checkpoint's root: then every leaf used is the one the
/// ledger signed (SHA-256 collision resistance), the kept ones included,
/// and every event carried is proved by it. Where an event's bytes and its
/// kept leaf differ, both choices are tried (the bytes first): the one that
/// gives the root wins, and an event whose bytes lose is not carried.
///
/// Where the bytes and the kept leaves of a run of events are both gone,
/// a Merkle node the store kept over that run (a hash tile of level 1 or
/// up, a partial tile as the open found it, a stored node) stands in for
/// it: the tree then still gives a signed root and proves the events after
/// the run. An event is carried only if its own path to the root is made of
/// its leaf and known siblings (so the root was computed from its leaf).
/// `None` when no signed checkpoint beyond `prefix` is proved this way.
pub fn salvage(
    store: &dyn Store,
    verifier: &NoteVerifier,
    prefix: u64,
) -> Result<Option<(Salvage, SalvagedLog)>> {
    let stored = store.len()?;
    // The signed checkpoints that could prove more than the prefix.
    let mut candidates: BTreeMap<u64, (crate::checkpoint::Checkpoint, String)> = BTreeMap::new();
    let mut consider = |note: String| {
        if let Ok(cp) = checkpoint::open_note(&note, verifier)
            && cp.size > prefix
        {
            candidates.entry(cp.size).or_insert((cp, note));
        }
    };
    let mut anchor_size = None;
    if let Ok(Some(note)) = store.anchor() {
        anchor_size = checkpoint::open_note(&note, verifier)
            .ok()
            .map(|cp| cp.size);
        consider(note);
    }
    match store.checkpoints(prefix + 1, stored) {
        Ok(found) => found.into_iter().for_each(|(_, note)| consider(note)),
        // A damaged checkpoint index hides what it held; the anchor counts.
        Err(LedgerError::Corrupt { .. }) => {}
        Err(e) => return Err(e),
    }
    let Some(&largest) = candidates.keys().next_back() else {
        return Ok(None);
    };
    // Every event that can be read, and every kept leaf, up to the largest.
    let end = largest.min(stored);
    let known_end = largest;
    let mut bytes_of: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut kept: BTreeMap<u64, merkle::Hash> = BTreeMap::new();
    let mut next = 0;
    while next < end {
        let to = (next + 8192).min(end);
        bytes_of.extend(store.salvage_range(next, to)?.0);
        match store.leaf_hashes(next, to) {
            Ok(leaves) => kept.extend(leaves),
            // A damaged derived tile keeps no leaf; the bytes may still do.
            Err(LedgerError::Corrupt { .. }) => {}
            Err(e) => return Err(e),
        }
        next = to;
    }
    let mut kept_nodes: std::collections::HashMap<(u8, u64), merkle::Hash> =
        std::collections::HashMap::new();
    if largest > stored {
        // Past the store's length: what its files hold after the damage
        // (read more carefully than the range above where they overlap).
        let past = store.salvage_past_len(largest)?;
        kept_nodes.extend(past.nodes.iter().map(|&(l, i, h)| ((l, i), h)));
        let from = past
            .events
            .first()
            .map(|(s, _)| *s)
            .into_iter()
            .chain(past.leaves.first().map(|(s, _)| *s))
            .min();
        if let Some(from) = from {
            // Events the careful read did not yield are not taken from the
            // plain one either (they may be entries a garbled length made).
            bytes_of.retain(|seq, _| *seq < from);
        }
        bytes_of.extend(past.events);
        kept.extend(past.leaves);
    }
    // Misplaced events (a bundle restored under another's name, two
    // bundles swapped): bytes that decode as the event of another position
    // are that position's bytes when it has none of its own. The tree
    // below still decides: only a leaf the signed root was computed from
    // is carried.
    let own_seq =
        |pos: u64, bytes: &[u8]| crate::event::Event::decode(bytes).is_ok_and(|e| e.seq == pos);
    // Events the store keeps apart from its run (the tile store's large
    // events, by their own files) where the run yields none of its own: a
    // damaged stand-in entry loses nothing its file still holds.
    for seq in 0..known_end {
        if !bytes_of.get(&seq).is_some_and(|b| own_seq(seq, b))
            && let Some(bytes) = store.salvage_set_apart(seq)?
        {
            bytes_of.insert(seq, bytes);
        }
    }
    let mut misplaced: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for (&pos, bytes) in &bytes_of {
        if let Ok(event) = crate::event::Event::decode(bytes)
            && event.seq != pos
            && event.seq < known_end
        {
            misplaced.entry(event.seq).or_insert_with(|| bytes.clone());
        }
    }
    for (seq, bytes) in misplaced {
        if !bytes_of.get(&seq).is_some_and(|b| own_seq(seq, b)) {
            bytes_of.insert(seq, bytes);
        }
    }
    // The chain is a third witness: event `seq + 1` names the leaf of
    // `seq` in its `prev_hash`. Where it agrees with the bytes or with the
    // kept leaf, that leaf is taken (a damaged kept leaf of an intact
    // event, an altered event whose kept leaf is intact); where the bytes
    // are gone, the first tree takes the chain's over the kept leaf.
    let witness = |seq: u64| -> Option<merkle::Hash> {
        let event = crate::event::Event::decode(bytes_of.get(&(seq + 1))?).ok()?;
        (event.seq == seq + 1).then_some(event.prev_hash)
    };
    // Trees tried in turn where the witnesses leave a choice: the bytes'
    // leaves first; the kept leaves first, then the chain's; and the bytes'
    // and the chain's alone (no kept leaf: those of a lost run may be
    // damaged too), with only whole-tile nodes (levels 8, 16, …) standing
    // in for what is missing, lowest level first.
    let mut from_bytes: Vec<Option<merkle::Hash>> = Vec::new();
    let mut from_kept: Vec<Option<merkle::Hash>> = Vec::new();
    let mut from_events: Vec<Option<merkle::Hash>> = Vec::new();
    for seq in 0..known_end {
        // Bytes that are not the event of this position (another event's,
        // a misplaced or duplicated bundle restored here) are no leaf of it:
        // the event at `seq` names `seq` in its canonical bytes.
        let read = bytes_of
            .get(&seq)
            .filter(|b| own_seq(seq, b))
            .map(|b| merkle::leaf_hash(b));
        let stored = kept.get(&seq).copied();
        let w = witness(seq);
        // The first tree takes what two witnesses agree on, else the
        // bytes, else the chain. The second always takes the kept leaf
        // first, else the chain (an altered event whose leaf was not
        // kept): bytes and chain can agree on another ledger's events
        // copied in with the same sequence numbers, which only the kept
        // leaves tell apart.
        let a = match w {
            Some(w) if read == Some(w) || stored == Some(w) => Some(w),
            w => read.or(w).or(stored),
        };
        let b = stored.or(w).or(read);
        // No leaf at all: a node the store kept above it may stand in.
        from_bytes.push(a);
        from_kept.push(b);
        from_events.push(w.or(read));
    }
    let stand_in = |level: u8, index: u64| -> Option<merkle::Hash> {
        kept_nodes
            .get(&(level, index))
            .copied()
            .or_else(|| store.node(level, index).ok())
    };
    let from_bytes = SalvageTree::build(from_bytes, &stand_in);
    let from_kept = SalvageTree::build(from_kept, &stand_in);
    // Built when the first two give no signed root.
    let tile_levels: Vec<u8> = (1..8u8)
        .map(|t| 8 * t)
        .filter(|&l| known_end >> l > 0)
        .collect();
    let mut whole_tiles: Vec<Option<SalvageTree>> = vec![None; tile_levels.len()];
    for (size, (cp, note)) in candidates.into_iter().rev() {
        let gives_root = |tree: &SalvageTree| merkle::root_at(tree, size).ok() == Some(cp.root);
        let mut whole_tile = None;
        if !gives_root(&from_bytes) && !gives_root(&from_kept) {
            for (k, &from_level) in tile_levels.iter().enumerate() {
                let tree = whole_tiles[k].get_or_insert_with(|| {
                    SalvageTree::build(from_events.clone(), &|level, index| {
                        (level >= from_level).then(|| stand_in(level, index))?
                    })
                });
                if gives_root(tree) {
                    whole_tile = Some(k);
                    break;
                }
            }
        }
        let tree = if gives_root(&from_bytes) {
            &from_bytes
        } else if gives_root(&from_kept) {
            &from_kept
        } else if let Some(tree) = whole_tile.and_then(|k| whole_tiles[k].as_ref()) {
            tree
        } else {
            continue;
        };
        // The events whose bytes are the leaf the checkpoint proves.
        let mut events = BTreeMap::new();
        let mut state = crate::state::LedgerState::default();
        for (seq, bytes) in bytes_of.range(..size) {
            let leaf = merkle::leaf_hash(bytes);
            if !leaf_is(tree, *seq, &leaf) || !tree.proves(*seq, size) {
                continue;
            }
            let Ok(event) = crate::event::Event::decode(bytes) else {
                continue;
            };
            let _ = state.apply_partial(&event);
            events.insert(*seq, bytes.clone());
        }
        let carried: Vec<u64> = events.keys().copied().collect();
        let missing = super::writer::runs((0..size).filter(|s| !events.contains_key(s)));
        let plan = Salvage {
            tree_size: size,
            events: carried.len() as u64,
            after_prefix: carried.iter().filter(|&&s| s >= prefix).count() as u64,
            missing,
            anchor_size: anchor_size.filter(|&a| a > size),
        };
        // The tree of exactly the checkpoint's size (an export proves
        // against the checkpoint covering the source's length).
        let log = SalvagedLog {
            origin: verifier.name.clone(),
            ledger_public: verifier.key,
            tree: tree.truncated(size),
            events,
            checkpoint: (cp, note),
            state,
            blobs: std::collections::HashMap::new(),
        };
        return Ok(Some((plan, log)));
    }
    Ok(None)
}

fn leaf_is(tree: &SalvageTree, seq: u64, leaf: &merkle::Hash) -> bool {
    merkle::NodeSource::node(tree, 0, seq).is_ok_and(|h| &h == leaf)
}

/// A Merkle tree with holes, for [`salvage`]: every node computed from its
/// two children where both are known, else the node the store kept there
/// (if any). Complete nodes only, as [`merkle::NodeSource`] serves them.
#[derive(Debug, Clone, Default)]
struct SalvageTree {
    /// `levels[l][i]` is node `(l, i)`, `None` where it is not known.
    levels: Vec<Vec<Option<merkle::Hash>>>,
    /// Some node is a kept one standing in for children not known.
    stood_in: bool,
}

impl SalvageTree {
    /// The tree over `leaves`, asking `stand_in(level, index)` for the
    /// nodes whose children are not both known.
    fn build(
        leaves: Vec<Option<merkle::Hash>>,
        stand_in: &dyn Fn(u8, u64) -> Option<merkle::Hash>,
    ) -> Self {
        let mut stood_in = false;
        let mut levels = vec![leaves];
        while let Some(below) = levels.last().filter(|l| l.len() >= 2) {
            let level = u8::try_from(levels.len()).unwrap_or(u8::MAX);
            let up: Vec<Option<merkle::Hash>> = below
                .chunks_exact(2)
                .enumerate()
                .map(|(i, pair)| match (pair[0], pair[1]) {
                    (Some(l), Some(r)) => Some(merkle::node_hash(&l, &r)),
                    _ => {
                        let node = stand_in(level, i as u64);
                        stood_in |= node.is_some();
                        node
                    }
                })
                .collect();
            levels.push(up);
        }
        Self { levels, stood_in }
    }

    fn len(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }

    /// The same tree cut to its first `size` leaves.
    fn truncated(&self, size: u64) -> Self {
        let levels = self
            .levels
            .iter()
            .enumerate()
            .map(|(l, nodes)| {
                let keep = usize::try_from(size >> l).unwrap_or(usize::MAX);
                nodes[..keep.min(nodes.len())].to_vec()
            })
            .take_while(|nodes| !nodes.is_empty())
            .collect();
        Self {
            levels,
            stood_in: self.stood_in,
        }
    }

    /// Whether the root at `size` was computed from leaf `seq`: its audit
    /// path is made of known nodes (so every node above the leaf, up to
    /// the root, came from its children). Always, where nothing stood in.
    fn proves(&self, seq: u64, size: u64) -> bool {
        !self.stood_in || merkle::inclusion_proof(self, seq, size).is_ok()
    }
}

impl merkle::NodeSource for SalvageTree {
    fn node(
        &self,
        level: u8,
        index: u64,
    ) -> std::result::Result<merkle::Hash, merkle::MerkleError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| *self.levels.get(usize::from(level))?.get(i)?)
            .ok_or(merkle::MerkleError::MissingNode { level, index })
    }
}

impl SalvagedLog {
    /// Copies the blobs of `dir/blobs` that the carried events reference
    /// (as [`attach_blobs`] does for a prefix).
    pub fn attach_blobs(&mut self, dir: &Path) -> Result<()> {
        let blobs = crate::blobs::BlobStore::open_to_read(dir);
        for o in self.state.domain.oids.oids.values() {
            if let Ok(d) = crate::blobs::parse_digest(&o.sha256)
                && let Ok(bytes) = blobs.read_verified(&d, super::source::MAX_EXPORT_BLOB)
            {
                self.blobs.insert(d, bytes);
            }
        }
        Ok(())
    }
}

impl super::LogSource for SalvagedLog {
    fn len(&self) -> u64 {
        self.tree.len()
    }

    fn holds(&self, seq: u64) -> bool {
        self.events.contains_key(&seq)
    }

    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        Ok(self
            .events
            .range(from..to.max(from))
            .map(|(s, b)| (*s, b.clone()))
            .collect())
    }

    fn checkpoint_covering(&self, size: u64) -> Result<(crate::checkpoint::Checkpoint, String)> {
        if size <= self.checkpoint.0.size {
            return Ok(self.checkpoint.clone());
        }
        Err(LedgerError::NotFound {
            what: format!("a checkpoint covering tree size {size}"),
        })
    }

    fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<merkle::Hash>> {
        Ok(merkle::inclusion_proof(&self.tree, index, size)?)
    }

    fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<merkle::Hash>> {
        Ok(merkle::consistency_proof(&self.tree, old, new)?)
    }

    fn root_at(&self, size: u64) -> Result<merkle::Hash> {
        Ok(merkle::root_at(&self.tree, size)?)
    }

    fn origin(&self) -> String {
        self.origin.clone()
    }

    fn ledger_public_key(&self) -> ed25519_dalek::VerifyingKey {
        self.ledger_public
    }

    fn ledger_signing_key(&self) -> Option<&ed25519_dalek::SigningKey> {
        None
    }

    fn keys(&self) -> crate::projection::KeysProjection {
        self.state.keys.clone()
    }

    fn blob(&self, digest: &crate::blobs::BlobDigest) -> Result<Option<Vec<u8>>> {
        Ok(self.blobs.get(digest).cloned())
    }

    fn oid_record(&self, oid: &str) -> Option<crate::domain::OidRecord> {
        self.state.domain.oids.oids.get(oid).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::SalvageTree;
    use crate::merkle::{self, MemoryTree, NodeSource as _};

    fn leaves(n: u64) -> Vec<merkle::Hash> {
        (0..n)
            .map(|i| merkle::leaf_hash(&i.to_be_bytes()))
            .collect()
    }

    #[test]
    fn given_a_lost_aligned_run_when_its_node_stands_in_then_the_root_and_the_leaves_around_it_are_proved()
     {
        // Given 601 leaves, of which 256..512 are lost, and the true tree's
        // node (8, 1) over them,
        let all = leaves(601);
        let mut truth = MemoryTree::new();
        all.iter().for_each(|l| truth.push(*l));
        let with_hole: Vec<Option<merkle::Hash>> = all
            .iter()
            .enumerate()
            .map(|(i, l)| (!(256..512).contains(&i)).then_some(*l))
            .collect();
        let kept = |level: u8, index: u64| (level == 8).then(|| truth.node(level, index).ok())?;
        // when the tree is built with it standing in,
        let tree = SalvageTree::build(with_hole, &kept);
        // then it gives the true root at every size past the run, and the
        // leaves outside the run are proved at 601.
        assert!(tree.stood_in);
        for size in [512, 513, 600, 601] {
            assert_eq!(
                merkle::root_at(&tree, size).unwrap(),
                merkle::root_at(&truth, size).unwrap()
            );
        }
        assert!(tree.proves(0, 601) && tree.proves(255, 601) && tree.proves(512, 601));
        assert!(!tree.proves(300, 601));
        // (and its cut to 513 leaves serves an inclusion proof that checks)
        let cut = tree.truncated(513);
        let proof = merkle::inclusion_proof(&cut, 512, 513).unwrap();
        merkle::verify_inclusion(
            &all[512],
            512,
            513,
            &proof,
            &merkle::root_at(&truth, 513).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn given_a_lost_leaf_when_a_node_stands_in_above_it_then_its_sibling_is_not_proved() {
        // Given 16 leaves of which leaf 5 is lost, and every true node,
        let all = leaves(16);
        let mut truth = MemoryTree::new();
        all.iter().for_each(|l| truth.push(*l));
        let mut with_hole: Vec<Option<merkle::Hash>> = all.iter().copied().map(Some).collect();
        with_hole[5] = None;
        let kept = |level: u8, index: u64| truth.node(level, index).ok();
        // when node (1, 2) over leaves 4 and 5 stands in,
        let tree = SalvageTree::build(with_hole, &kept);
        // then the root is the true one, but leaf 4 (whose sibling is
        // gone: the root was not computed from it) is not proved; the
        // others are.
        assert_eq!(merkle::root_at(&tree, 16).unwrap(), truth.root());
        assert!(!tree.proves(4, 16));
        assert!(
            (0..16)
                .filter(|&i| i != 4 && i != 5)
                .all(|i| tree.proves(i, 16))
        );
        // And without stand-ins nothing past the hole gives a root.
        let bare = SalvageTree::build(
            all.iter()
                .enumerate()
                .map(|(i, l)| (i != 5).then_some(*l))
                .collect(),
            &|_, _| None,
        );
        assert!(merkle::root_at(&bare, 16).is_err());
        assert!(merkle::root_at(&bare, 4).is_ok());
    }
}
