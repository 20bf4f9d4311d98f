//! Replay: rebuild every projection from genesis and, with `verify`, prove
//! the log was not rewritten — each event decodes canonically, sequence
//! numbers are consecutive, each event names its predecessor's leaf hash,
//! ledger time never decreases, every author signature verifies (batched,
//! all cores), every event is re-admitted under the authority rules as of its
//! position, stored Merkle leaves match the bytes, the recomputed root matches
//! the latest signed checkpoint (whose signature is checked), and rebuilt
//! projections equal the stored snapshots byte for byte.

use serde::Serialize;

use crate::checkpoint::{self, NoteVerifier};
use crate::error::Result;
use crate::event::{self, Event};
use crate::merkle::{self, Frontier};
use crate::state::{AdmitContext, LedgerState};
use crate::store::Store;

/// What to do.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// Check signatures, chain, proofs and snapshots (otherwise only fold).
    pub verify: bool,
    /// Stop after this sequence number (inclusive): state "as of" it.
    pub as_of: Option<u64>,
}

/// The kind of a replay finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Stored bytes do not decode canonically.
    Decode,
    /// An event is missing or out of place.
    Sequence,
    /// `prev_hash` does not match the previous event's leaf hash.
    Chain,
    /// Ledger time went backwards.
    Time,
    /// An author signature does not verify.
    Signature,
    /// The author could not have appended this event at that position.
    Authority,
    /// The stored Merkle leaf differs from the hash of the stored bytes.
    StoredLeaf,
    /// The checkpoint's signature does not verify.
    CheckpointSignature,
    /// The recomputed root differs from the signed checkpoint's root.
    Root,
    /// A rebuilt projection differs from its stored snapshot.
    Snapshot,
    /// Data that must exist is missing (no checkpoint for a non-empty log).
    Missing,
}

/// One thing replay found wrong.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub seq: Option<u64>,
    pub detail: String,
}

impl Finding {
    /// The exit code this finding calls for (seed 004 §3): 3 determinism
    /// mismatch, 4 missing data, 5 integrity failure.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            FindingKind::Snapshot => 3,
            FindingKind::Missing => 4,
            _ => 5,
        }
    }
}

/// The outcome of a replay.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub events: u64,
    pub signatures_checked: u64,
    pub tree_size: u64,
    pub root: String,
    pub checkpoint_size: Option<u64>,
    pub snapshots_compared: Vec<String>,
    pub findings: Vec<Finding>,
}

impl ReplayReport {
    /// Exit code: 0 when clean, else the most severe finding's (5 beats 4
    /// beats 3).
    pub fn exit_code(&self) -> u8 {
        self.findings
            .iter()
            .map(Finding::exit_code)
            .max()
            .unwrap_or(0)
    }
}

const CHUNK: u64 = 8192;
/// Findings beyond this many are counted, not listed.
const MAX_FINDINGS: usize = 1000;

/// Replays `store`. `progress(done, total)` is called after each chunk.
pub fn replay(
    store: &dyn Store,
    verifier: &NoteVerifier,
    options: ReplayOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(ReplayReport, LedgerState)> {
    let len = store.len()?;
    let end = options.as_of.map_or(len, |s| (s + 1).min(len));
    let mut findings = Vec::new();
    let push = |f: Finding, findings: &mut Vec<Finding>| {
        if findings.len() < MAX_FINDINGS {
            findings.push(f);
        }
    };
    // The checkpoint to prove against: the latest at or below `end`.
    let checkpoint = if options.verify {
        match store.checkpoint(Some(end))? {
            Some(c) => Some(c),
            None if end == len => store.checkpoint(None)?,
            None => None,
        }
    } else {
        None
    };
    let snapshot_seq = if options.verify && options.as_of.is_none() {
        store.snapshot("meta")?.map(|(s, _)| s)
    } else {
        None
    };
    let mut state = LedgerState::default();
    let mut frontier = Frontier::new();
    let mut prev_hash = [0u8; 32];
    let mut last_time = 0u64;
    let mut checkpoint_root = None;
    let mut signatures_checked = 0u64;
    let mut snapshots_compared = Vec::new();
    if snapshot_seq == Some(0) {
        compare_snapshots(store, &state, &mut findings, &mut snapshots_compared)?;
    }
    let mut next = 0u64;
    while next < end {
        let to = (next + CHUNK).min(end);
        let raw = store.event_range(next, to)?;
        let mut decoded: Vec<(u64, Vec<u8>, Option<Event>)> = Vec::with_capacity(raw.len());
        for (seq, bytes) in raw {
            let ev = match Event::decode(&bytes) {
                Ok(e) => Some(e),
                Err(e) => {
                    push(
                        Finding {
                            kind: FindingKind::Decode,
                            seq: Some(seq),
                            detail: e.to_string(),
                        },
                        &mut findings,
                    );
                    None
                }
            };
            decoded.push((seq, bytes, ev));
        }
        // Signatures (all cores) run alongside the sequential fold below.
        let verify_sigs = || -> Vec<(u64, String)> {
            if !options.verify {
                return Vec::new();
            }
            let events: Vec<&Event> = decoded.iter().filter_map(|(_, _, e)| e.as_ref()).collect();
            event::verify_signatures(&events)
                .into_iter()
                .map(|i| {
                    let e = events[i];
                    (
                        e.seq,
                        format!(
                            "author signature of {} by {} does not verify",
                            e.kind,
                            hex::encode(e.author)
                        ),
                    )
                })
                .collect()
        };
        if options.verify {
            signatures_checked += decoded.iter().filter(|(_, _, e)| e.is_some()).count() as u64;
        }
        // Stored leaves of the chunk in one range scan (not a lookup each).
        let stored_leaves: std::collections::HashMap<u64, merkle::Hash> = if options.verify {
            store.leaf_hashes(next, to)?.into_iter().collect()
        } else {
            Default::default()
        };
        let fold = || -> Result<()> {
            let mut expected = next;
            for (seq, bytes, ev) in &decoded {
                if *seq != expected {
                    push(
                        Finding {
                            kind: FindingKind::Sequence,
                            seq: Some(expected),
                            detail: format!("expected event {expected}, found {seq}"),
                        },
                        &mut findings,
                    );
                }
                expected = seq + 1;
                let leaf = merkle::leaf_hash(bytes);
                frontier.push(leaf);
                if options.verify {
                    match stored_leaves.get(seq) {
                    Some(stored) if *stored == leaf => {}
                    Some(_) => push(
                        Finding {
                            kind: FindingKind::StoredLeaf,
                            seq: Some(*seq),
                            detail: "stored Merkle leaf differs from the hash of the stored event bytes".into(),
                        },
                        &mut findings,
                    ),
                    None => push(
                        Finding {
                            kind: FindingKind::StoredLeaf,
                            seq: Some(*seq),
                            detail: "the stored Merkle leaf is missing".into(),
                        },
                        &mut findings,
                    ),
                }
                }
                if let Some(ev) = ev {
                    if options.verify {
                        if ev.seq != *seq {
                            push(
                                Finding {
                                    kind: FindingKind::Sequence,
                                    seq: Some(*seq),
                                    detail: format!("event stored at {seq} says it is {}", ev.seq),
                                },
                                &mut findings,
                            );
                        }
                        if ev.prev_hash != prev_hash {
                            push(
                                Finding {
                                    kind: FindingKind::Chain,
                                    seq: Some(*seq),
                                    detail: "prev_hash is not the previous event's leaf hash"
                                        .into(),
                                },
                                &mut findings,
                            );
                        }
                        if ev.recorded_at_ms < last_time {
                            push(
                                Finding {
                                    kind: FindingKind::Time,
                                    seq: Some(*seq),
                                    detail: format!(
                                        "recorded_at_ms {} is before the previous event's {last_time}",
                                        ev.recorded_at_ms
                                    ),
                                },
                                &mut findings,
                            );
                        }
                        let ctx = AdmitContext {
                            seq: *seq,
                            recorded_at_ms: ev.recorded_at_ms,
                        };
                        if let Err(e) = state.admit(&ev.statement(), &ctx) {
                            push(
                                Finding {
                                    kind: FindingKind::Authority,
                                    seq: Some(*seq),
                                    detail: e.to_string(),
                                },
                                &mut findings,
                            );
                        }
                    }
                    last_time = last_time.max(ev.recorded_at_ms);
                    state.apply(ev);
                }
                // Keep the count right even when an event did not decode.
                state.applied = seq + 1;
                prev_hash = leaf;
                if checkpoint
                    .as_ref()
                    .is_some_and(|(s, _)| *s == frontier.size())
                {
                    checkpoint_root = Some(frontier.root());
                }
                if snapshot_seq == Some(seq + 1) {
                    compare_snapshots(store, &state, &mut findings, &mut snapshots_compared)?;
                }
            }
            if expected != to {
                push(
                    Finding {
                        kind: FindingKind::Sequence,
                        seq: Some(expected),
                        detail: format!("events {expected}..{to} are missing"),
                    },
                    &mut findings,
                );
            }
            Ok(())
        };
        let (bad_sigs, folded) = rayon::join(verify_sigs, fold);
        folded?;
        for (seq, detail) in bad_sigs {
            push(
                Finding {
                    kind: FindingKind::Signature,
                    seq: Some(seq),
                    detail,
                },
                &mut findings,
            );
        }
        next = to;
        progress(next, end);
    }
    if options.verify {
        match &checkpoint {
            None if end > 0 => push(
                Finding {
                    kind: FindingKind::Missing,
                    seq: None,
                    detail: "no signed checkpoint covers the log".into(),
                },
                &mut findings,
            ),
            None => {}
            Some((size, note)) => match checkpoint::open_note(note, verifier) {
                Err(e) => push(
                    Finding {
                        kind: FindingKind::CheckpointSignature,
                        seq: None,
                        detail: format!("checkpoint at size {size}: {e}"),
                    },
                    &mut findings,
                ),
                Ok(cp) => {
                    if cp.origin != verifier.name {
                        push(
                            Finding {
                                kind: FindingKind::CheckpointSignature,
                                seq: None,
                                detail: format!(
                                    "checkpoint origin {:?} is not this log's {:?}",
                                    cp.origin, verifier.name
                                ),
                            },
                            &mut findings,
                        );
                    }
                    if cp.size != *size {
                        push(
                            Finding {
                                kind: FindingKind::Root,
                                seq: None,
                                detail: format!(
                                    "checkpoint stored under size {size} says {}",
                                    cp.size
                                ),
                            },
                            &mut findings,
                        );
                    } else if checkpoint_root != Some(cp.root) {
                        push(
                            Finding {
                                kind: FindingKind::Root,
                                seq: None,
                                detail: format!(
                                    "recomputed root of the first {size} events differs from the signed checkpoint"
                                ),
                            },
                            &mut findings,
                        );
                    }
                }
            },
        }
    }
    // Findings in log order (stable: per-event order is kept).
    findings.sort_by_key(|f| f.seq.unwrap_or(u64::MAX));
    let report = ReplayReport {
        events: end,
        signatures_checked,
        tree_size: frontier.size(),
        root: hex::encode(frontier.root()),
        checkpoint_size: checkpoint.as_ref().map(|(s, _)| *s),
        snapshots_compared,
        findings,
    };
    Ok((report, state))
}

fn compare_snapshots(
    store: &dyn Store,
    state: &LedgerState,
    findings: &mut Vec<Finding>,
    compared: &mut Vec<String>,
) -> Result<()> {
    for (name, rebuilt) in state.snapshots() {
        compared.push(name.to_string());
        match store.snapshot(name)? {
            Some((seq, stored)) if seq == state.applied => {
                if stored != rebuilt {
                    findings.push(Finding {
                        kind: FindingKind::Snapshot,
                        seq: Some(seq),
                        detail: format!(
                            "projection {name} rebuilt at seq {seq} differs from its stored snapshot: {}",
                            crate::state::first_difference(name, &stored, &rebuilt)
                        ),
                    });
                }
            }
            Some((seq, _)) => findings.push(Finding {
                kind: FindingKind::Snapshot,
                seq: Some(seq),
                detail: format!(
                    "snapshot {name} is at seq {seq}, others at {}",
                    state.applied
                ),
            }),
            None => findings.push(Finding {
                kind: FindingKind::Snapshot,
                seq: None,
                detail: format!("snapshot {name} is missing"),
            }),
        }
    }
    Ok(())
}
