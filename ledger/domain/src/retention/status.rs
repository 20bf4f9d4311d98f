//! The retention summary: per-class counts and bytes, upcoming expiries,
//! pins, expired and redacted content. Pure over the state and a `now`
//! parameter; the service adds what only the disk knows (content awaiting
//! deletion).

use std::collections::{BTreeMap, BinaryHeap};

use serde::Serialize;

use crate::oids::OidState;
use crate::schema::ms_to_rfc3339;

use super::View;
use super::classes;
use super::policy::Policy;
use super::rules::{self, Decision, Keep};
use super::state::current_size;

/// Counts and bytes of one class (an OID counts in its current class).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClassStats {
    pub class: String,
    /// OIDs whose original content is present (state `live`).
    pub live_count: u64,
    /// Bytes of that content (a blob shared by several OIDs counts once per OID).
    pub live_bytes: u64,
    /// Live or redacted OIDs of the class that are pinned.
    pub pinned_count: u64,
    /// OIDs whose content expired and was purged.
    pub expired_count: u64,
    /// Registered bytes of that content.
    pub expired_bytes: u64,
    /// OIDs whose original was replaced by a redacted version (still held).
    pub redacted_count: u64,
    /// Bytes of the redacted versions held.
    pub redacted_bytes: u64,
}

/// An OID that will expire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Upcoming {
    pub oid: String,
    pub class: String,
    pub task_id: String,
    pub expires_at_ms: u64,
    pub expires_at: String,
    pub size: u64,
}

/// A pinned OID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinnedView {
    pub oid: String,
    pub class: String,
    /// The `retention.pinned` event (None: pinned by its class).
    pub pin_seq: Option<u64>,
    pub reason: Option<String>,
    pub size: u64,
}

/// An OID whose original content was removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemovedView {
    pub oid: String,
    pub class: String,
    pub state: OidState,
    /// The event that removed it.
    pub seq: u64,
    pub at_ms: u64,
    pub at: String,
    pub reason: String,
    /// Registered size of the original.
    pub size: u64,
    pub redacted_sha256: Option<String>,
}

/// Totals of a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub count: u64,
    pub bytes: u64,
}

/// The last sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastSweep {
    pub seq: u64,
    pub at_ms: u64,
    pub as_of_ms: u64,
    pub expired: u64,
}

/// Content the log removed whose blob is still on disk (filled in by the
/// service: only the disk knows).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PendingDeletion {
    /// Blobs awaiting deletion (a crash interrupted it, or a fresh upload of
    /// the same content is inside its grace period).
    pub blobs: u64,
    pub bytes: u64,
    /// Digests (hex), at most the status limit.
    pub digests: Vec<String>,
}

/// The retention summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetentionStatus {
    /// Last sequence number reflected (None on an empty log).
    pub as_of_seq: Option<u64>,
    /// The time expiries are computed against.
    pub now_ms: u64,
    pub now: String,
    pub policy: Policy,
    /// The `retention.policy_set` event in force (None: the built-in default).
    pub policy_seq: Option<u64>,
    /// routine, high_impact, pinned (then any other class), in that order.
    pub classes: Vec<ClassStats>,
    /// Content the rules expire at `now` that no sweep has expired yet.
    pub due: Totals,
    /// Content held only by the count limit (past its class period).
    pub held_by_count_limit: Totals,
    /// Soonest expiries after `now`, at most `limit`.
    pub upcoming: Vec<Upcoming>,
    pub pinned_total: u64,
    /// Pinned OIDs in OID order, at most `limit`.
    pub pinned: Vec<PinnedView>,
    /// Content purged by expiry.
    pub expired: Totals,
    pub redacted_total: u64,
    /// Redacted OIDs, most recent redaction first, at most `limit`.
    pub redacted: Vec<RemovedView>,
    pub sweeps: u64,
    pub last_sweep: Option<LastSweep>,
    /// Filled in by the service.
    pub pending_deletion: PendingDeletion,
}

/// Summarises retention at `now_ms`, listing at most `limit` entries per list.
pub fn status<'a>(state: impl Into<View<'a>>, now_ms: u64, limit: usize) -> RetentionStatus {
    let state = state.into();
    let policy = state.retention.policy();
    let holds = rules::count_holds(state, policy.keep_last_submissions);
    let mut by_class: BTreeMap<&str, ClassStats> = BTreeMap::new();
    let mut due = Totals::default();
    let mut held = Totals::default();
    let mut expired = Totals::default();
    let mut pinned_total = 0u64;
    let mut pinned = Vec::new();
    let mut redacted_total = 0u64;
    // Max-heap of the `limit` soonest expiries.
    let mut soonest: BinaryHeap<(u64, &str)> = BinaryHeap::new();
    let mut redacted: BinaryHeap<(u64, &str)> = BinaryHeap::new();
    for (oid, r) in &state.oids.oids {
        let stats = by_class
            .entry(r.retention_class.as_str())
            .or_insert_with(|| ClassStats {
                class: r.retention_class.clone(),
                ..ClassStats::default()
            });
        match r.state {
            OidState::Live => {
                stats.live_count += 1;
                stats.live_bytes += r.size;
            }
            OidState::Redacted => {
                stats.redacted_count += 1;
                stats.redacted_bytes += current_size(r).unwrap_or(0);
                redacted_total += 1;
                let seq = r.removal.as_ref().map_or(0, |x| x.seq);
                redacted.push((u64::MAX - seq, oid.as_str()));
                if redacted.len() > limit {
                    redacted.pop();
                }
            }
            OidState::Expired => {
                stats.expired_count += 1;
                stats.expired_bytes += r.size;
                expired.count += 1;
                expired.bytes += r.size;
                continue;
            }
        }
        if r.pinned {
            stats.pinned_count += 1;
            pinned_total += 1;
            if pinned.len() < limit {
                let pin = state.retention.pins.get(oid);
                pinned.push(PinnedView {
                    oid: oid.clone(),
                    class: r.retention_class.clone(),
                    pin_seq: pin.map(|p| p.seq),
                    reason: pin.and_then(|p| p.reason.clone()),
                    size: current_size(r).unwrap_or(0),
                });
            }
        }
        let hold = holds.get(oid.as_str()).copied();
        let size = current_size(r).unwrap_or(0);
        match rules::decide_record(&policy, r, None, hold, now_ms) {
            Decision::Expire { .. } => {
                due.count += 1;
                due.bytes += size;
            }
            Decision::Keep(Keep::CountLimit { .. }) => {
                if rules::expires_at(&policy, r).is_some_and(|t| now_ms >= t) {
                    held.count += 1;
                    held.bytes += size;
                }
            }
            Decision::Keep(Keep::WithinClass { expires_at_ms }) => {
                soonest.push((expires_at_ms, oid.as_str()));
                if soonest.len() > limit {
                    soonest.pop();
                }
            }
            Decision::Keep(_) | Decision::Gone => {}
        }
    }
    let mut upcoming: Vec<Upcoming> = soonest
        .into_sorted_vec()
        .into_iter()
        .filter_map(|(t, oid)| {
            let r = state.oids.oids.get(oid)?;
            Some(Upcoming {
                oid: oid.to_string(),
                class: r.retention_class.clone(),
                task_id: r.task_id.clone(),
                expires_at_ms: t,
                expires_at: ms_to_rfc3339(t),
                size: current_size(r).unwrap_or(0),
            })
        })
        .collect();
    upcoming.truncate(limit);
    let redacted: Vec<RemovedView> = redacted
        .into_sorted_vec()
        .into_iter()
        .filter_map(|(_, oid)| {
            let r = state.oids.oids.get(oid)?;
            let removal = r.removal.as_ref()?;
            Some(RemovedView {
                oid: oid.to_string(),
                class: r.retention_class.clone(),
                state: r.state,
                seq: removal.seq,
                at_ms: removal.at_ms,
                at: ms_to_rfc3339(removal.at_ms),
                reason: removal.reason.clone(),
                size: r.size,
                redacted_sha256: removal.redacted_sha256.clone(),
            })
        })
        .collect();
    let mut classes: Vec<ClassStats> = classes::ALL
        .iter()
        .map(|c| {
            by_class.remove(c).unwrap_or_else(|| ClassStats {
                class: (*c).to_string(),
                ..ClassStats::default()
            })
        })
        .collect();
    classes.extend(by_class.into_values());
    let last_sweep = state
        .retention
        .sweeps
        .iter()
        .next_back()
        .map(|(seq, s)| LastSweep {
            seq: *seq,
            at_ms: s.at_ms,
            as_of_ms: s.as_of_ms,
            expired: s.expired,
        });
    RetentionStatus {
        as_of_seq: state.applied.checked_sub(1),
        now_ms,
        now: ms_to_rfc3339(now_ms),
        policy,
        policy_seq: state.retention.policy.as_ref().map(|p| p.seq),
        classes,
        due,
        held_by_count_limit: held,
        upcoming,
        pinned_total,
        pinned,
        expired,
        redacted_total,
        redacted,
        sweeps: state.retention.sweeps.len() as u64,
        last_sweep,
        pending_deletion: PendingDeletion::default(),
    }
}
