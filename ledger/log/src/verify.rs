//! The one log verifier, used by `replay --verify`, by offline audits and by
//! every open of the ledger.
//!
//! [`LogChecker`] checks events one after another: canonical decoding,
//! consecutive sequence numbers, each event naming its predecessor's leaf
//! hash, ledger time that never decreases, and (when given) the stored
//! Merkle leaf against the hash of the stored bytes; it grows the RFC 9162
//! frontier from the recomputed leaves, so the root it reports is the root
//! of the bytes, never of stored nodes. [`verify_log`] runs it over a store,
//! and adds what the caller asks for: every author signature (the one rule,
//! all cores), re-admission of every event by the state machine as of its
//! position, the recomputed root against the anchor and the stored
//! checkpoints (signatures checked), and rebuilt projections against the
//! authenticated snapshots. [`open_check`] is the same scan with the checks
//! an open can afford (no signatures, no re-admission: they were checked on
//! the way in) and turns the first integrity finding into an error.

use std::collections::HashMap;
use std::sync::mpsc;

use ed25519_dalek::VerifyingKey;
use serde::Serialize;

use crate::checkpoint::{self, Checkpoint, NoteVerifier};
use crate::error::{LogError, Result};
use crate::event::{self, Event};
use crate::machine::{AdmitContext, StateMachine};
use crate::merkle::{self, Frontier, Hash};
use crate::snapshot::{self, SnapshotError};
use crate::store::Store;

/// The kind of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FindingKind {
    /// Stored bytes do not decode canonically.
    Decode,
    /// An event is missing or out of place (a hole, a shorter log).
    Sequence,
    /// `prev_hash` does not match the previous event's leaf hash.
    Chain,
    /// Ledger time went backwards.
    Time,
    /// An author signature does not verify.
    Signature,
    /// The author could not have appended this event at that position.
    Authority,
    /// An admitted event did not fold into the state.
    Fold,
    /// The stored Merkle leaf differs from the hash of the stored bytes.
    StoredLeaf,
    /// A checkpoint's (or the anchor's) signature does not verify.
    CheckpointSignature,
    /// The recomputed root differs from a signed checkpoint's root.
    Root,
    /// A snapshot claims events or a root the log does not have.
    SnapshotAhead,
    /// A snapshot's seal does not verify: it was edited (a derived file that
    /// was tampered with). It is never used; it is rebuilt from the log.
    SnapshotTampered,
    /// An authentic snapshot differs from the state rebuilt from the log
    /// (a determinism mismatch).
    Snapshot,
    /// Data that must exist is missing (the anchor, a checkpoint).
    Missing,
    /// Content held beside the log by digest (named by an event, checked by
    /// the state machine's owner) is missing or does not match its digest.
    Content,
    /// The ledger's private key file (`keys/ledger.key`) is missing, does
    /// not parse, or holds another key than `ledger.json` names: the ledger
    /// cannot sign or open until it is restored from a backup.
    LedgerKey,
    /// The store's own bookkeeping is damaged (a commit record, a hash tile
    /// above level 0, a statement digest recorded for an event): the detail
    /// names the file and byte.
    Structure,
}

/// One thing the verifier found wrong.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub seq: Option<u64>,
    pub detail: String,
}

impl Finding {
    /// The exit code this finding calls for (seed 004 §3): 3 for a
    /// determinism mismatch, 5 for anything else (integrity: tampering,
    /// corruption, missing signed data).
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            FindingKind::Snapshot => 3,
            _ => 5,
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.seq {
            Some(s) => write!(f, "seq {s}: {}", self.detail),
            None => f.write_str(&self.detail),
        }
    }
}

/// The sealed statement filter's snapshot name (written by the sequencer).
pub const STATEMENT_FILTER: &str = "statement-filter";

/// Findings beyond this many are counted, not listed.
const MAX_FINDINGS: usize = 1000;

#[derive(Debug, Default)]
struct Findings {
    list: Vec<Finding>,
    dropped: u64,
}

impl Findings {
    fn push(&mut self, kind: FindingKind, seq: Option<u64>, detail: impl Into<String>) {
        if self.list.len() < MAX_FINDINGS {
            self.list.push(Finding {
                kind,
                seq,
                detail: detail.into(),
            });
        } else {
            self.dropped += 1;
        }
    }
}

/// Incremental per-event checks over a log read in order.
#[derive(Debug, Clone, Default)]
pub struct LogChecker {
    next_seq: u64,
    prev_hash: Hash,
    last_time: u64,
    frontier: Frontier,
    /// False for a run that starts after genesis with an unknown
    /// predecessor: its first event's chain link cannot be checked.
    chain_known: bool,
}

/// What [`LogChecker::push`] learnt about one event.
#[derive(Debug)]
pub struct Checked {
    /// RFC 9162 leaf hash of the bytes.
    pub leaf: Hash,
    /// The decoded event, when `decode` was asked for and it decodes.
    pub event: Option<Event>,
}

impl LogChecker {
    /// A checker for a log that starts at genesis.
    pub fn new() -> Self {
        Self {
            chain_known: true,
            ..Self::default()
        }
    }

    /// A checker for a run of events that starts at `seq` (a partial
    /// export): the first event's predecessor is not carried, so its chain
    /// link is not checked; its time must not precede `not_before_ms` (the
    /// last time seen in an earlier run). The frontier of such a checker is
    /// meaningless: prove a partial run with inclusion proofs.
    pub fn starting_at(seq: u64, not_before_ms: u64) -> Self {
        if seq == 0 {
            let mut c = Self::new();
            c.last_time = not_before_ms;
            return c;
        }
        Self {
            next_seq: seq,
            last_time: not_before_ms,
            chain_known: false,
            ..Self::default()
        }
    }

    /// Checks the next event of the log (or run), already decoded, whose
    /// canonical bytes hash to `leaf`: sequence, chain and time. Returns the
    /// findings (kinds `Sequence`, `Chain`, `Time`).
    pub fn check_decoded(&mut self, event: &Event, leaf: Hash) -> Vec<Finding> {
        let mut findings = Findings::default();
        if event.seq != self.next_seq {
            findings.push(
                FindingKind::Sequence,
                Some(self.next_seq),
                format!(
                    "event {} is missing (the next event is {})",
                    self.next_seq, event.seq
                ),
            );
        }
        self.check_header(
            event.seq,
            (event.seq, event.recorded_at_ms, event.prev_hash),
            &mut findings,
        );
        self.advance(event.seq, leaf);
        findings.list
    }

    fn check_header(&mut self, seq: u64, header: (u64, u64, Hash), findings: &mut Findings) {
        let (own_seq, time, prev) = header;
        if own_seq != seq {
            findings.push(
                FindingKind::Sequence,
                Some(seq),
                format!("the event stored at {seq} says it is {own_seq}"),
            );
        }
        if self.chain_known && prev != self.prev_hash {
            findings.push(
                FindingKind::Chain,
                Some(seq),
                if seq == 0 {
                    "the genesis event's prev_hash is not all zeros".to_string()
                } else {
                    format!("prev_hash is not the leaf hash of event {}", seq - 1)
                },
            );
        }
        if time < self.last_time {
            findings.push(
                FindingKind::Time,
                Some(seq),
                format!(
                    "recorded_at_ms {time} is before the previous event's {}",
                    self.last_time
                ),
            );
        }
        self.last_time = self.last_time.max(time);
    }

    fn advance(&mut self, seq: u64, leaf: Hash) {
        self.frontier.push(leaf);
        self.prev_hash = leaf;
        self.next_seq = seq + 1;
        self.chain_known = true;
    }

    /// Events checked so far (the next expected sequence number).
    pub fn len(&self) -> u64 {
        self.next_seq
    }

    /// Whether nothing was checked yet.
    pub fn is_empty(&self) -> bool {
        self.next_seq == 0
    }

    /// The frontier of the recomputed leaves.
    pub fn frontier(&self) -> &Frontier {
        &self.frontier
    }

    /// Leaf hash of the last event checked (zeros before genesis).
    pub fn prev_hash(&self) -> Hash {
        self.prev_hash
    }

    /// Ledger time of the last event checked.
    pub fn last_time(&self) -> u64 {
        self.last_time
    }

    /// Checks event `seq` given its stored `bytes` and precomputed `leaf`
    /// (the hash of the bytes). `stored_leaf` is the store's level-0 node,
    /// when the caller has one to compare. With `decode`, the event is fully
    /// decoded (canonical form); otherwise only the fixed-offset envelope
    /// fields are read (sequence, time, previous hash).
    fn push(
        &mut self,
        seq: u64,
        bytes: &[u8],
        leaf: Hash,
        stored_leaf: Option<Option<Hash>>,
        decode: bool,
        findings: &mut Findings,
    ) -> Checked {
        let how = if decode { Decode::Here } else { Decode::Header };
        self.push_with(seq, bytes, leaf, stored_leaf, how, findings)
    }

    /// [`LogChecker::push`] with the decoding already done elsewhere (on
    /// another thread) or to be done here.
    fn push_with(
        &mut self,
        seq: u64,
        bytes: &[u8],
        leaf: Hash,
        stored_leaf: Option<Option<Hash>>,
        how: Decode,
        findings: &mut Findings,
    ) -> Checked {
        if seq != self.next_seq {
            findings.push(
                FindingKind::Sequence,
                Some(self.next_seq),
                format!(
                    "event {} is missing (the next stored event is {seq})",
                    self.next_seq
                ),
            );
        }
        match stored_leaf {
            None => {}
            Some(Some(stored)) if stored == leaf => {}
            Some(Some(_)) => findings.push(
                FindingKind::StoredLeaf,
                Some(seq),
                "the stored Merkle leaf differs from the hash of the stored event bytes",
            ),
            Some(None) => findings.push(
                FindingKind::StoredLeaf,
                Some(seq),
                "the stored Merkle leaf is missing",
            ),
        }
        let mut event = None;
        let decoded = match how {
            Decode::Here => Some(Event::decode(bytes).map_err(|e| e.to_string())),
            Decode::Done(d) => Some(d),
            Decode::Header => None,
        };
        let header = if let Some(decoded) = decoded {
            match decoded {
                Ok(e) => {
                    let h = (e.seq, e.recorded_at_ms, e.prev_hash);
                    event = Some(e);
                    Some(h)
                }
                Err(e) => {
                    findings.push(FindingKind::Decode, Some(seq), e);
                    None
                }
            }
        } else {
            envelope_header(bytes).or_else(|| {
                findings.push(
                    FindingKind::Decode,
                    Some(seq),
                    "the event is shorter than its envelope",
                );
                None
            })
        };
        if let Some(h) = header {
            self.check_header(seq, h, findings);
        }
        self.advance(seq, leaf);
        Checked { leaf, event }
    }
}

/// How [`LogChecker::push_with`] gets at an event's fields.
enum Decode {
    /// Only the fixed-offset envelope fields.
    Header,
    /// Decode fully, here.
    Here,
    /// Decoded already (on a reader thread).
    Done(std::result::Result<Event, String>),
}

/// One chunk read, hashed and decoded ahead of the checks.
struct Prefetched {
    to: u64,
    raw: Vec<(u64, Vec<u8>)>,
    /// Events the store holds but cannot read: `(from, to, why)`.
    lost_events: Vec<(u64, u64, String)>,
    stored: HashMap<u64, Hash>,
    unreadable: UnreadableLeaves,
    leaves: Vec<Hash>,
    decoded: Vec<std::result::Result<Event, String>>,
}

/// Reads, hashes and decodes chunk `from..to` (hashing and decoding on all
/// cores).
fn prefetch(store: &dyn Store, from: u64, to: u64) -> Result<Prefetched> {
    use rayon::prelude::*;
    let (raw, lost) = store.salvage_range(from, to)?;
    let lost_events = group_unreadable(lost);
    let (stored, unreadable) = stored_leaves(store, from, to)?;
    let (leaves, decoded): (Vec<Hash>, Vec<_>) = raw
        .par_iter()
        .with_min_len(256)
        .map(|(_, b)| {
            (
                merkle::leaf_hash(b),
                Event::decode(b).map_err(|e| e.to_string()),
            )
        })
        .unzip();
    Ok(Prefetched {
        to,
        raw,
        lost_events,
        stored,
        unreadable,
        leaves,
        decoded,
    })
}

/// Runs of events that cannot be read, `(from, to, "where: what")`, from
/// [`Store::salvage_range`]'s list (consecutive events with one cause are
/// one run).
fn group_unreadable(lost: Vec<(u64, String, String)>) -> Vec<(u64, u64, String)> {
    let mut runs: Vec<(u64, u64, String)> = Vec::new();
    for (seq, location, detail) in lost {
        let why = format!("{location}: {detail}");
        match runs.last_mut() {
            Some((_, to, last)) if *to == seq && *last == why => *to = seq + 1,
            _ => runs.push((seq, seq + 1, why)),
        }
    }
    runs
}

/// Stored leaves whose derived copy cannot be read: `(from, to, where,
/// what)`. Their events are checked against their bytes alone.
type UnreadableLeaves = Vec<(u64, u64, String, String)>;

/// The stored leaves of `from..to`. Where the store reports its derived
/// copy damaged (a tile store's level-0 hash tile that does not parse), the
/// range is read again in tiles of 256 so that only the damaged ones are
/// set aside, each named once, and the check goes on from the bytes.
fn stored_leaves(
    store: &dyn Store,
    from: u64,
    to: u64,
) -> Result<(HashMap<u64, Hash>, UnreadableLeaves)> {
    match store.leaf_hashes(from, to) {
        Ok(leaves) => return Ok((leaves.into_iter().collect(), Vec::new())),
        Err(LogError::Corrupt { .. }) => {}
        Err(e) => return Err(e),
    }
    let mut stored = HashMap::new();
    let mut unreadable = Vec::new();
    let mut at = from;
    while at < to {
        let width = crate::tiles::TILE_WIDTH;
        let end = ((at / width + 1) * width).min(to);
        match store.leaf_hashes(at, end) {
            Ok(leaves) => stored.extend(leaves),
            Err(LogError::Corrupt { location, detail }) => {
                unreadable.push((at, end, location, detail));
            }
            Err(e) => return Err(e),
        }
        at = end;
    }
    Ok((stored, unreadable))
}

/// `(seq, recorded_at_ms, prev_hash)` read at their fixed offsets of the
/// canonical envelope (docs/FORMAT.md §3): format (1), seq (8), time (8),
/// prev_hash (32).
fn envelope_header(bytes: &[u8]) -> Option<(u64, u64, Hash)> {
    if bytes.len() < 49 || bytes[0] != event::EVENT_FORMAT {
        return None;
    }
    let seq = u64::from_be_bytes(bytes[1..9].try_into().ok()?);
    let time = u64::from_be_bytes(bytes[9..17].try_into().ok()?);
    let prev: Hash = bytes[17..49].try_into().ok()?;
    Some((seq, time, prev))
}

/// What to check.
#[derive(Debug, Clone, Copy)]
pub struct VerifyOptions {
    /// Verify every author signature.
    pub signatures: bool,
    /// Re-admit every event under the state machine's rules as of its
    /// position.
    pub admission: bool,
    /// Compare rebuilt projections with the stored snapshots.
    pub snapshots: bool,
    /// Stop after this sequence number (inclusive): state "as of" it.
    pub as_of: Option<u64>,
}

impl VerifyOptions {
    /// Everything (what `replay --verify` does).
    pub fn full() -> Self {
        Self {
            signatures: true,
            admission: true,
            snapshots: true,
            as_of: None,
        }
    }

    /// Only the fold, with the structural checks that come for free.
    pub fn fold_only(as_of: Option<u64>) -> Self {
        Self {
            signatures: false,
            admission: false,
            snapshots: false,
            as_of,
        }
    }
}

/// The outcome of a verification.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub events: u64,
    pub signatures_checked: u64,
    pub tree_size: u64,
    pub root: String,
    /// Size of the anchored (latest signed and served) checkpoint.
    pub anchor_size: Option<u64>,
    /// Size of the latest checkpoint stored with the events.
    pub checkpoint_size: Option<u64>,
    pub snapshots_compared: Vec<String>,
    /// Snapshots that were missing and are rebuilt from the log.
    pub snapshots_missing: Vec<String>,
    pub findings: Vec<Finding>,
    /// Findings beyond the listed ones.
    pub findings_dropped: u64,
}

impl VerifyReport {
    /// Exit code: 0 when clean, else the most severe finding's (5 beats 3).
    pub fn exit_code(&self) -> u8 {
        self.findings
            .iter()
            .map(Finding::exit_code)
            .max()
            .unwrap_or(0)
    }

    /// The first integrity finding (exit 5), in log order.
    pub fn first_damage(&self) -> Option<&Finding> {
        self.findings.iter().find(|f| f.exit_code() == 5)
    }
}

/// Trusted material the checks are made against.
#[derive(Debug, Clone, Copy)]
pub struct Trust<'a> {
    /// The ledger's checkpoint key (origin + public key).
    pub checkpoints: &'a NoteVerifier,
    /// The key snapshots are sealed with (the ledger key).
    pub snapshots: &'a VerifyingKey,
}

const CHUNK: u64 = 8192;

/// A sealed snapshot set read from the store, classified.
struct StoredSnapshots {
    /// Authentic parts, all at one sequence number.
    parts: Vec<(String, Vec<u8>)>,
    seq: Option<u64>,
    root: Option<Hash>,
    /// Names whose file is missing.
    missing: Vec<String>,
}

fn read_snapshots<M: StateMachine>(
    store: &dyn Store,
    key: &VerifyingKey,
    len: u64,
    findings: &mut Findings,
) -> Result<StoredSnapshots> {
    let names: Vec<&'static str> = M::default()
        .snapshot()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let mut out = StoredSnapshots {
        parts: Vec::new(),
        seq: None,
        root: None,
        missing: Vec::new(),
    };
    let mut usable = true;
    for name in names {
        let Some(sealed) = store.snapshot(name)? else {
            out.missing.push(name.to_string());
            usable = false;
            continue;
        };
        match snapshot::open(name, &sealed, key) {
            Ok(s) => {
                if s.seq > len {
                    findings.push(
                        FindingKind::SnapshotAhead,
                        Some(len),
                        format!(
                            "snapshot {name} reflects {} events but the log holds {len}: \
                             events {len}..{} are missing from the log",
                            s.seq, s.seq
                        ),
                    );
                    usable = false;
                    continue;
                }
                match out.seq {
                    None => {
                        out.seq = Some(s.seq);
                        out.root = Some(s.root);
                    }
                    Some(seq) if seq == s.seq && out.root == Some(s.root) => {}
                    // Snapshots of different moments (a crash between two
                    // snapshot writes): use none, rebuild.
                    Some(_) => usable = false,
                }
                out.parts.push((name.to_string(), s.body));
            }
            Err(e @ SnapshotError::BadSeal { .. }) | Err(e @ SnapshotError::Malformed { .. }) => {
                findings.push(FindingKind::SnapshotTampered, None, e.to_string());
                usable = false;
            }
        }
    }
    if !usable {
        out.parts.clear();
        out.seq = None;
        out.root = None;
    }
    Ok(out)
}

/// Verifies the log in `store` from genesis, folding it into a fresh state
/// machine. `progress(done, total)` is called after each chunk.
pub fn verify_log<M: StateMachine>(
    store: &dyn Store,
    trust: Trust<'_>,
    options: VerifyOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(VerifyReport, M)> {
    let full_range = options.as_of.is_none();
    // The anchor before the length (see `open_check`: a store another node
    // writes to moves both forward together).
    let anchor_note = if full_range { store.anchor()? } else { None };
    let len = store.len()?;
    let end = options.as_of.map_or(len, |s| (s + 1).min(len));
    let mut findings = Findings::default();

    // The anchor: the latest checkpoint the ledger signed and served.
    let anchor = if full_range {
        match anchor_note {
            None => {
                findings.push(
                    FindingKind::Missing,
                    None,
                    "the anchor (latest signed checkpoint) is missing",
                );
                None
            }
            Some(note) => match checkpoint::open_note(&note, trust.checkpoints) {
                Ok(cp) => Some(cp),
                Err(e) => {
                    findings.push(
                        FindingKind::CheckpointSignature,
                        None,
                        format!("the anchor does not verify: {e}"),
                    );
                    None
                }
            },
        }
    } else {
        None
    };
    if let Some(a) = &anchor
        && a.size > len
    {
        // What the store can tell about why (its files), as the open says.
        let why = match store.explain_shortfall(a.size) {
            Ok(Some(why)) => format!("; {why}"),
            Ok(None) => String::new(),
            Err(e) => format!("; reading the store further to say why failed: {e}"),
        };
        findings.push(
            FindingKind::Sequence,
            Some(len),
            format!(
                "the log holds {len} events but the ledger signed a checkpoint of size {}: \
                 events {len}..{} are missing{why}",
                a.size, a.size
            ),
        );
    }
    // The latest checkpoint stored with the events (at or below `end`).
    let stored_checkpoint = match store.checkpoint(Some(end))? {
        Some(c) => Some(c),
        None if full_range => store.checkpoint(None)?,
        None => None,
    };
    let snapshots = if options.snapshots && full_range {
        // The statement filter is a derived file too: an unauthentic one is
        // tampering (the open rebuilds it).
        if let Some(sealed) = store.snapshot(STATEMENT_FILTER)?
            && let Err(e) = snapshot::open(STATEMENT_FILTER, &sealed, trust.snapshots)
        {
            findings.push(FindingKind::SnapshotTampered, None, e.to_string());
        }
        Some(read_snapshots::<M>(
            store,
            trust.snapshots,
            len,
            &mut findings,
        )?)
    } else {
        None
    };
    let compare_at = snapshots.as_ref().and_then(|s| s.seq);
    // The store's own structures (commit records, upper hash tiles), and
    // the statement digests it recorded, compared with the events below.
    let recorded_statements = if full_range {
        match store.check_structures(&|| true)? {
            Some(report) => {
                for (location, detail) in report.damage {
                    findings.push(
                        FindingKind::Structure,
                        None,
                        format!("{location}: {detail}"),
                    );
                }
                report.statements
            }
            None => Vec::new(),
        }
    } else {
        Vec::new()
    };

    let mut state = M::default();
    let mut checker = LogChecker::new();
    let mut signatures_checked = 0u64;
    let mut roots_at: HashMap<u64, Hash> = HashMap::new();
    let wanted_sizes: Vec<u64> = [
        anchor.as_ref().map(|a| a.size),
        stored_checkpoint.as_ref().map(|(s, _)| *s),
        compare_at,
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut snapshots_compared = Vec::new();
    let mut compare = |state: &M, seq: u64, findings: &mut Findings| {
        if let Some(s) = &snapshots {
            compare_snapshots(state, seq, &s.parts, findings, &mut snapshots_compared);
        }
    };
    if compare_at == Some(0) {
        compare(&state, 0, &mut findings);
    }
    for size in &wanted_sizes {
        if *size == 0 {
            roots_at.insert(0, merkle::empty_root());
        }
    }
    // Chunks end at every size we must compare at, so roots and snapshots
    // are taken at chunk boundaries.
    let mut bounds = Vec::new();
    let mut next = 0u64;
    while next < end {
        let to = wanted_sizes
            .iter()
            .copied()
            .filter(|&s| s > next)
            .fold((next + CHUNK).min(end), u64::min);
        bounds.push((next, to));
        next = to;
    }
    // A reader thread reads, hashes and decodes chunk N+1 while chunk N is
    // checked, its signatures verified (all cores) and folded.
    std::thread::scope(|scope| -> Result<()> {
        let (tx, rx) = mpsc::sync_channel::<Result<Prefetched>>(2);
        let reader_bounds = bounds.clone();
        scope.spawn(move || {
            for (from, to) in reader_bounds {
                let chunk = prefetch(store, from, to);
                let failed = chunk.is_err();
                if tx.send(chunk).is_err() || failed {
                    return;
                }
            }
        });
        for _ in &bounds {
            let Ok(chunk) = rx.recv() else { break };
            let chunk = chunk?;
            for (from, to, why) in &chunk.lost_events {
                findings.push(
                    FindingKind::Decode,
                    Some(*from),
                    format!("events {from}..{to} cannot be read: {why}"),
                );
            }
            for (from, to, location, detail) in &chunk.unreadable {
                findings.push(
                    FindingKind::Structure,
                    None,
                    format!(
                        "{location}: {detail} (the stored leaves of events {from}..{to}; \
                         a derived file: those events are checked against their bytes alone, \
                         and the ledger's next open rewrites it when their bytes give the anchored root)"
                    ),
                );
            }
            let unreadable = |seq: u64| {
                chunk
                    .unreadable
                    .iter()
                    .any(|(f, t, ..)| (*f..*t).contains(&seq))
            };
            let mut events: Vec<Event> = Vec::with_capacity(chunk.raw.len());
            for (((seq, bytes), leaf), decoded) in
                chunk.raw.iter().zip(chunk.leaves).zip(chunk.decoded)
            {
                let checked = checker.push_with(
                    *seq,
                    bytes,
                    leaf,
                    (!unreadable(*seq)).then(|| chunk.stored.get(seq).copied()),
                    Decode::Done(decoded),
                    &mut findings,
                );
                // An event stored where it does not belong (it says it is
                // another) is a `Sequence` finding at its position: it is
                // not admitted or folded there, so that what it would
                // refuse or change is not filed under the number it claims.
                if let Some(e) = checked.event.filter(|e| e.seq == *seq) {
                    events.push(e);
                }
            }
            // Signatures (and recorded statement digests) on all cores,
            // alongside the sequential fold.
            let verify_sigs = || -> (Vec<u64>, Vec<(u64, Hash, Hash)>) {
                let bad = if options.signatures {
                    event::verify_signatures(&events)
                        .into_iter()
                        .map(|i| events[i].seq)
                        .collect()
                } else {
                    Vec::new()
                };
                (bad, misrecorded_statements(&events, &recorded_statements))
            };
            let fold = || -> Vec<(FindingKind, u64, String)> {
                let mut out = Vec::new();
                for ev in &events {
                    let mut admitted = None;
                    if options.admission {
                        let ctx = AdmitContext {
                            seq: ev.seq,
                            recorded_at_ms: ev.recorded_at_ms,
                        };
                        match state.admit(&ev.statement(), &ctx) {
                            Ok(a) => admitted = Some(a),
                            Err(e) => out.push((FindingKind::Authority, ev.seq, e.to_string())),
                        }
                    }
                    // An admitted event folds from what admission decoded.
                    let folded = match &admitted {
                        Some(a) => state.apply_admitted(ev, a),
                        None => state.apply(ev),
                    };
                    if let Err(e) = folded {
                        out.push((FindingKind::Fold, ev.seq, e.to_string()));
                    }
                }
                out
            };
            let ((bad_sigs, misrecorded), fold_findings) = rayon::join(verify_sigs, fold);
            for (seq, recorded, own) in misrecorded {
                findings.push(
                    FindingKind::Structure,
                    Some(seq),
                    format!(
                        "tiles/commits records statement digest {} for this event, not its own {} \
                         (a lookup of the statement would miss it)",
                        hex::encode(recorded),
                        hex::encode(own)
                    ),
                );
            }
            if options.signatures {
                signatures_checked += events.len() as u64;
            }
            for seq in bad_sigs {
                findings.push(
                    FindingKind::Signature,
                    Some(seq),
                    "the author signature does not verify",
                );
            }
            for (kind, seq, detail) in fold_findings {
                findings.push(kind, Some(seq), detail);
            }
            // Roots at the sizes we compare against (recomputed from the bytes).
            let size = checker.len();
            if wanted_sizes.contains(&size) {
                roots_at.insert(size, checker.frontier().root());
            }
            if compare_at == Some(size) && size > 0 {
                compare(&state, size, &mut findings);
            }
            progress(chunk.to, end);
        }
        Ok(())
    })?;
    if checker.len() < end {
        findings.push(
            FindingKind::Sequence,
            Some(checker.len()),
            format!("events {}..{end} are missing", checker.len()),
        );
    }
    if let (Some(s), Some(root)) = (snapshots.as_ref(), snapshots.as_ref().and_then(|s| s.root))
        && let Some(seq) = s.seq
        && let Some(actual) = roots_at.get(&seq)
        && *actual != root
    {
        findings.push(
            FindingKind::SnapshotAhead,
            Some(seq),
            format!("the snapshots were taken at a tree root the log does not have at size {seq}"),
        );
    }
    if let Some(a) = &anchor
        && a.size <= checker.len()
    {
        match roots_at.get(&a.size) {
            Some(r) if *r == a.root => {
                // The bytes give the root the ledger signed: where a stored
                // leaf differs, the stored leaf (derived) is the damaged
                // copy, not the event.
                for f in &mut findings.list {
                    if f.kind == FindingKind::StoredLeaf && f.seq.is_some_and(|s| s < a.size) {
                        f.detail.push_str(
                            "; the event bytes give the anchored root, so the stored leaf \
                             (a derived hash tile, tiles/tile/0/… in the tile store) is the damaged copy; \
                             the server's background check rewrites it from the events",
                        );
                    }
                }
            }
            _ => findings.push(
                FindingKind::Root,
                Some(a.size.saturating_sub(1)),
                format!(
                    "the root recomputed from the first {} events differs from the anchored checkpoint",
                    a.size
                ),
            ),
        }
    }
    match &stored_checkpoint {
        None if end > 0 && full_range => findings.push(
            FindingKind::Missing,
            None,
            "no signed checkpoint is stored for the log",
        ),
        None => {}
        Some((size, note)) => check_stored_checkpoint(
            *size,
            note,
            trust.checkpoints,
            &roots_at,
            checker.len(),
            &mut findings,
        ),
    }
    let mut list = findings.list;
    list.sort_by_key(|f| f.seq.unwrap_or(u64::MAX));
    let report = VerifyReport {
        events: checker.len(),
        signatures_checked,
        tree_size: checker.frontier().size(),
        root: hex::encode(checker.frontier().root()),
        anchor_size: anchor.as_ref().map(|a| a.size),
        checkpoint_size: stored_checkpoint.as_ref().map(|(s, _)| *s),
        snapshots_compared,
        snapshots_missing: snapshots.map(|s| s.missing).unwrap_or_default(),
        findings: list,
        findings_dropped: findings.dropped,
    };
    Ok((report, state))
}

/// Events whose statement digest differs from the one the store recorded
/// for their position: `(seq, recorded, own)`, on all cores.
fn misrecorded_statements(events: &[Event], recorded: &[Option<Hash>]) -> Vec<(u64, Hash, Hash)> {
    use rayon::prelude::*;
    if recorded.is_empty() {
        return Vec::new();
    }
    events
        .par_iter()
        .with_min_len(256)
        .filter_map(|ev| {
            let want = (*recorded.get(usize::try_from(ev.seq).ok()?)?)?;
            let own = ev.statement_digest();
            (own != want).then_some((ev.seq, want, own))
        })
        .collect()
}

/// Hashes the leaves of a chunk on all cores.
fn hash_leaves(raw: &[(u64, Vec<u8>)]) -> Vec<Hash> {
    use rayon::prelude::*;
    raw.par_iter()
        .with_min_len(256)
        .map(|(_, b)| merkle::leaf_hash(b))
        .collect()
}

fn check_stored_checkpoint(
    size: u64,
    note: &str,
    verifier: &NoteVerifier,
    roots: &HashMap<u64, Hash>,
    checked: u64,
    findings: &mut Findings,
) {
    match checkpoint::open_note(note, verifier) {
        Err(e) => findings.push(
            FindingKind::CheckpointSignature,
            None,
            format!("the checkpoint stored for size {size}: {e}"),
        ),
        Ok(cp) => {
            if cp.origin != verifier.name {
                findings.push(
                    FindingKind::CheckpointSignature,
                    None,
                    format!(
                        "checkpoint origin {:?} is not this log's {:?}",
                        cp.origin, verifier.name
                    ),
                );
            }
            if cp.size != size {
                findings.push(
                    FindingKind::Root,
                    None,
                    format!("the checkpoint stored under size {size} says {}", cp.size),
                );
            } else if size <= checked && roots.get(&size) != Some(&cp.root) {
                findings.push(
                    FindingKind::Root,
                    Some(size.saturating_sub(1)),
                    format!(
                        "the root recomputed from the first {size} events differs from the signed checkpoint"
                    ),
                );
            }
        }
    }
}

fn compare_snapshots<M: StateMachine>(
    state: &M,
    seq: u64,
    stored: &[(String, Vec<u8>)],
    findings: &mut Findings,
    compared: &mut Vec<String>,
) {
    for (name, rebuilt) in state.snapshot() {
        compared.push(name.to_string());
        if let Some((_, bytes)) = stored.iter().find(|(n, _)| n == name)
            && *bytes != rebuilt
        {
            findings.push(
                FindingKind::Snapshot,
                Some(seq),
                format!(
                    "projection {name} rebuilt at seq {seq} differs from its authentic snapshot: {}",
                    M::describe_difference(name, bytes, &rebuilt)
                ),
            );
        }
    }
}

/// What an open found and did (reported to the operator as warnings).
#[derive(Debug, Clone, Default, Serialize)]
pub struct OpenReport {
    /// Events in the log.
    pub events: u64,
    /// Size of the anchored checkpoint.
    pub anchor_size: u64,
    /// Sequence the state was restored from (0 = rebuilt from genesis).
    pub restored_from: u64,
    /// Snapshots that were missing, stale-set or failed their seal, and
    /// were rebuilt from the log.
    pub rebuilt_snapshots: Vec<String>,
    /// Human-readable warnings.
    pub warnings: Vec<String>,
}

/// What [`open_check`] hands the sequencer.
#[derive(Debug)]
pub struct Opened<M> {
    pub state: M,
    pub frontier: Frontier,
    pub prev_hash: Hash,
    pub last_time: u64,
    pub report: OpenReport,
    /// Snapshots must be rewritten (some were missing or not authentic).
    pub rewrite_snapshots: bool,
    /// Events `0..scrub_below` were not re-read by the open (only the stored
    /// tree over them was checked against the anchor): the background scrub
    /// ([`scrub`]) reads them.
    pub scrub_below: u64,
    /// Statement digests of the events the open decoded, from
    /// `digests_from` on (to complete a persisted statement filter).
    pub digests_from: u64,
    pub digests: Vec<Hash>,
}

/// Events re-read at every open, at least: the tail of the log.
pub const OPEN_TAIL: u64 = 4096;

/// The open-time check, costing the same at 10k and at 1M events:
///
/// * the anchor verifies and the store holds at least the anchored size;
/// * authentic snapshots are used (others rebuilt), one that claims events
///   or a root the log does not have is damage;
/// * the last [`OPEN_TAIL`] events, and every event after the snapshots, are
///   read: contiguous, chained, hashing to their stored leaves, decoded and
///   folded; the frontier before them comes from the stored tree;
/// * the root of the bytes (tail) over the stored tree (prefix) equals the
///   anchored root, and the stored tree's root at the head equals it too.
///
/// Any integrity finding is an error ([`LogError::Corrupt`]) naming where:
/// the ledger refuses to serve. The events before the tail are re-read by
/// [`scrub`], which the sequencer runs in the background (and
/// `replay --verify` runs in full).
///
/// One kind of finding is repaired instead: when the stored tree (a derived
/// copy, such as the tile store's hash tiles) disagrees with the event
/// bytes and the bytes give the anchored root, the store rebuilds it from
/// them ([`Store::rebuild_derived_tree`]), the check runs again, and the
/// report's warnings say which files were rewritten.
pub fn open_check<M: StateMachine>(
    store: &dyn Store,
    trust: Trust<'_>,
    digests_from: Option<u64>,
) -> Result<Opened<M>> {
    let first = match open_check_once::<M>(store, trust, digests_from) {
        Err(e @ LogError::Corrupt { .. }) => e,
        other => return other,
    };
    match repair_derived_tree(store, trust.checkpoints)? {
        Some(rewritten) if !rewritten.is_empty() => {
            let mut opened = open_check_once::<M>(store, trust, digests_from)?;
            opened.report.warnings.push(format!(
                "{} disagreed with the event bytes ({first}); the bytes give the anchored root, \
                 so these derived files were rewritten from them",
                rewritten.join(", ")
            ));
            Ok(opened)
        }
        _ => Err(first),
    }
}

/// Rebuilds the store's derived tree from the event bytes when they give the
/// anchored checkpoint's root ([`Store::rebuild_derived_tree`]); the files
/// rewritten, or `None` when the anchor does not verify or the bytes do not
/// give its root (then nothing was written: the events are the damage).
pub fn repair_derived_tree(
    store: &dyn Store,
    checkpoints: &NoteVerifier,
) -> Result<Option<Vec<String>>> {
    // Only the anchored checkpoint decides whether the bytes are intact.
    let Some(anchor) = store
        .anchor()?
        .and_then(|note| checkpoint::open_note(&note, checkpoints).ok())
    else {
        return Ok(None);
    };
    store.rebuild_derived_tree(anchor.size, &anchor.root)
}

fn open_check_once<M: StateMachine>(
    store: &dyn Store,
    trust: Trust<'_>,
    digests_from: Option<u64>,
) -> Result<Opened<M>> {
    // The anchor before the length: on a store another node writes to
    // (PostgreSQL), both move forward together, so the length read after
    // the anchor is never below it; read the other way round, a commit in
    // between looks like missing events.
    let note = store.anchor()?.ok_or_else(|| {
        LogError::corrupt(
            "anchor",
            "the anchor (latest signed checkpoint) is missing; the log cannot be trusted",
        )
    })?;
    let len = store.len()?;
    let mut findings = Findings::default();
    let anchor: Checkpoint = checkpoint::open_note(&note, trust.checkpoints).map_err(|e| {
        LogError::corrupt(
            "anchor",
            format!("the anchored checkpoint does not verify: {e}"),
        )
    })?;
    if anchor.size > len {
        let why = match store.explain_shortfall(anchor.size) {
            Ok(Some(why)) => format!("; {why}"),
            Ok(None) => String::new(),
            Err(e) => format!("; reading the store further to say why failed: {e}"),
        };
        return Err(LogError::corrupt(
            format!("event {len}"),
            format!(
                "the log holds {len} events but the ledger signed a checkpoint of size {}: \
                 events {len}..{} are missing (expected at least {} events, found {len}){why}",
                anchor.size, anchor.size, anchor.size
            ),
        ));
    }
    let snaps = read_snapshots::<M>(store, trust.snapshots, len, &mut findings)?;
    if let Some(f) = findings
        .list
        .iter()
        .find(|f| f.kind == FindingKind::SnapshotAhead)
    {
        return Err(LogError::corrupt(
            f.seq
                .map(|s| format!("event {s}"))
                .unwrap_or_else(|| "log".into()),
            f.detail.clone(),
        ));
    }
    let mut report = OpenReport {
        events: len,
        anchor_size: anchor.size,
        ..Default::default()
    };
    let mut rewrite = false;
    for f in findings
        .list
        .iter()
        .filter(|f| f.kind == FindingKind::SnapshotTampered)
    {
        report
            .warnings
            .push(format!("{}; rebuilding it from the log", f.detail));
        rewrite = true;
    }
    for m in &snaps.missing {
        report.warnings.push(format!(
            "snapshot {m} is missing; rebuilding it from the log"
        ));
        rewrite = true;
    }
    let mut state = match snaps.seq {
        Some(seq) => match M::restore(seq, &snaps.parts) {
            Ok(s) => {
                report.restored_from = seq;
                s
            }
            Err(e) => {
                report.warnings.push(format!(
                    "authentic snapshots at seq {seq} do not restore ({e}); rebuilding from the log"
                ));
                rewrite = true;
                M::default()
            }
        },
        None => M::default(),
    };
    if rewrite && report.restored_from == 0 {
        report.rebuilt_snapshots = M::default()
            .snapshot()
            .into_iter()
            .map(|(n, _)| n.to_string())
            .collect();
    }
    let fold_from = report.restored_from;
    let digests_from = digests_from.unwrap_or(len).min(len);
    // Where the re-read starts: the tail, everything to fold, every digest
    // to collect, and the snapshot's size (to check its root from bytes).
    let tail_from = [
        len.saturating_sub(OPEN_TAIL),
        fold_from,
        digests_from,
        anchor.size.saturating_sub(OPEN_TAIL),
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    let mut checker = if tail_from == 0 {
        LogChecker::new()
    } else {
        let frontier = Frontier::restore(store, tail_from).map_err(|e| {
            LogError::corrupt(
                "Merkle nodes",
                format!("the stored tree below event {tail_from} is incomplete: {e}"),
            )
        })?;
        let prev = store.event_bytes(tail_from - 1)?.ok_or_else(|| {
            LogError::corrupt(
                format!("event {}", tail_from - 1),
                "the event is missing from the store",
            )
        })?;
        let last_time = envelope_header(&prev).map(|(_, t, _)| t).ok_or_else(|| {
            LogError::corrupt(
                format!("event {}", tail_from - 1),
                "the event does not decode",
            )
        })?;
        LogChecker {
            next_seq: tail_from,
            prev_hash: merkle::leaf_hash(&prev),
            last_time,
            frontier,
            chain_known: true,
        }
    };
    let mut findings = Findings::default();
    let mut digests = Vec::new();
    let root_of = |size: u64, checker: &LogChecker| -> Result<Hash> {
        if size == checker.len() {
            Ok(checker.frontier().root())
        } else {
            merkle::root_at(store, size).map_err(|e| {
                LogError::corrupt(
                    "Merkle nodes",
                    format!("the stored tree at size {size} is incomplete: {e}"),
                )
            })
        }
    };
    let mut root_at_snapshot = match snaps.seq {
        Some(seq) if seq <= tail_from => Some(root_of(seq, &checker)?),
        _ => None,
    };
    let mut root_at_anchor = if anchor.size <= tail_from {
        Some(root_of(anchor.size, &checker)?)
    } else {
        None
    };
    let mut next = tail_from;
    while next < len {
        let to = (next + CHUNK).min(len);
        let raw = store.event_range(next, to)?;
        let stored = store.leaf_hashes(next, to)?;
        let stored: HashMap<u64, Hash> = stored.into_iter().collect();
        let leaves = hash_leaves(&raw);
        for ((seq, bytes), leaf) in raw.iter().zip(leaves) {
            let decode = *seq >= fold_from || *seq >= digests_from;
            let checked = checker.push(
                *seq,
                bytes,
                leaf,
                Some(stored.get(seq).copied()),
                decode,
                &mut findings,
            );
            if let Some(f) = findings.list.first() {
                return Err(damage(f));
            }
            if let Some(ev) = checked.event {
                if *seq >= digests_from {
                    digests.push(ev.statement().digest());
                }
                if *seq >= fold_from {
                    state.apply(&ev).map_err(|e| {
                        LogError::corrupt(
                            format!("event {seq}"),
                            format!("an admitted event does not fold: {e}"),
                        )
                    })?;
                }
            }
            let size = checker.len();
            if Some(size) == snaps.seq {
                root_at_snapshot = Some(checker.frontier().root());
            }
            if size == anchor.size {
                root_at_anchor = Some(checker.frontier().root());
            }
        }
        if checker.len() != to {
            let f = Finding {
                kind: FindingKind::Sequence,
                seq: Some(checker.len()),
                detail: format!("events {}..{to} are missing", checker.len()),
            };
            return Err(damage(&f));
        }
        next = to;
    }
    if root_at_anchor != Some(anchor.root) {
        return Err(LogError::corrupt(
            format!("events 0..{}", anchor.size),
            format!(
                "the root of the first {} events ({}) differs from the anchored checkpoint's ({})",
                anchor.size,
                root_at_anchor.map(hex::encode).unwrap_or_default(),
                hex::encode(anchor.root)
            ),
        ));
    }
    if let (Some(seq), Some(expected)) = (snaps.seq, snaps.root)
        && root_at_snapshot != Some(expected)
    {
        return Err(LogError::corrupt(
            format!("events 0..{seq}"),
            "the snapshots were sealed at a tree root the log does not have at that size: \
             the log was rewritten",
        ));
    }
    // The stored upper Merkle nodes must agree with the bytes (proofs are
    // served from them).
    if len > 0 {
        let stored_root = merkle::root_at(store, len).map_err(|e| {
            LogError::corrupt(
                "Merkle nodes",
                format!("the stored tree is incomplete: {e}"),
            )
        })?;
        if stored_root != checker.frontier().root() {
            return Err(LogError::corrupt(
                "Merkle nodes",
                format!(
                    "the stored tree's root at size {len} differs from the root of the event bytes"
                ),
            ));
        }
    }
    Ok(Opened {
        state,
        frontier: checker.frontier().clone(),
        prev_hash: checker.prev_hash(),
        last_time: checker.last_time(),
        report,
        rewrite_snapshots: rewrite,
        scrub_below: tail_from,
        digests_from,
        digests,
    })
}

/// The background half of the open check: re-reads events `0..upto` (the
/// ones the open did not), checking each against its stored leaf, the chain
/// and time, and that the root of their bytes equals the stored tree's root
/// at `upto` (which the open checked against the anchor). Returns the first
/// damage found, if any. `keep_going` is polled between chunks (a closing
/// log stops the scrub).
pub fn scrub(
    store: &dyn Store,
    upto: u64,
    keep_going: &dyn Fn() -> bool,
) -> Result<Option<Finding>> {
    let mut checker = LogChecker::new();
    let mut findings = Findings::default();
    let mut next = 0u64;
    while next < upto {
        if !keep_going() {
            return Ok(None);
        }
        let to = (next + CHUNK).min(upto);
        let raw = store.event_range(next, to)?;
        let (stored, unreadable) = stored_leaves(store, next, to)?;
        if let Some((from, to, location, detail)) = unreadable.into_iter().next() {
            return Ok(Some(Finding {
                kind: FindingKind::Structure,
                seq: None,
                detail: format!("{location}: {detail} (the stored leaves of events {from}..{to})"),
            }));
        }
        let leaves = hash_leaves(&raw);
        for ((seq, bytes), leaf) in raw.iter().zip(leaves) {
            checker.push(
                *seq,
                bytes,
                leaf,
                Some(stored.get(seq).copied()),
                false,
                &mut findings,
            );
            if let Some(f) = findings.list.first() {
                return Ok(Some(f.clone()));
            }
        }
        if checker.len() != to {
            return Ok(Some(Finding {
                kind: FindingKind::Sequence,
                seq: Some(checker.len()),
                detail: format!("events {}..{to} are missing", checker.len()),
            }));
        }
        next = to;
    }
    if let Some(report) = store.check_structures(keep_going)?
        && let Some((location, detail)) = report.damage.into_iter().next()
    {
        return Ok(Some(Finding {
            kind: FindingKind::Structure,
            seq: None,
            detail: format!("{location}: {detail}"),
        }));
    }
    if upto > 0 {
        let stored = merkle::root_at(store, upto).ok();
        if stored != Some(checker.frontier().root()) {
            return Ok(Some(Finding {
                kind: FindingKind::Root,
                seq: Some(upto - 1),
                detail: format!(
                    "the root of the bytes of the first {upto} events differs from the stored tree's (which the anchor vouches for)"
                ),
            }));
        }
    }
    Ok(None)
}

fn damage(f: &Finding) -> LogError {
    LogError::corrupt(
        f.seq
            .map(|s| format!("event {s}"))
            .unwrap_or_else(|| "log".into()),
        f.detail.clone(),
    )
}
