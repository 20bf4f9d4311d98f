//! The expiry rules: pure functions of the state and a `now` parameter.
//!
//! An OID's content expires at `registered_at_ms + days(class) × 86 400 000`
//! (its `evidence.registered` event's ledger time plus its class's period
//! under the policy in force) and is expired at any `now_ms >= expires_at_ms`:
//! content is kept for exactly the class's period, and one millisecond
//! before the boundary it is still kept. In order, the content is kept when:
//!
//! 1. it is already gone (expired: nothing to decide);
//! 2. the OID is **pinned** (explicitly, or by class `pinned`): pins beat
//!    every period;
//! 3. the **count limit** holds it: it is among the `evidence_oids` of the
//!    last `keep_last_submissions` submissions of its task;
//! 4. its class has no period (`pinned`, or a class unknown to this ledger:
//!    fails safe), or `now_ms < expires_at_ms`.
//!
//! Otherwise it expires. Redacted content expires like the original would
//! (the clock runs from the registration). Nothing here reads a clock.

use std::collections::HashMap;

use serde::Serialize;

use crate::oids::{OidRecord, OidState};
use crate::schema::ms_to_rfc3339;

use super::View;
use super::policy::Policy;
use super::state::{current_sha256, current_size};

/// Why an OID's content is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Keep {
    /// Pinned: by a `retention.pinned` event (its seq) or by class `pinned`.
    Pinned { pin_seq: Option<u64> },
    /// Among the evidence of the last N submissions of its task (the newest
    /// such submission's seq).
    CountLimit { submission_seq: u64 },
    /// Inside its class's period.
    WithinClass { expires_at_ms: u64 },
    /// Its class has no period.
    NoPeriod,
}

impl Keep {
    /// One human sentence.
    pub fn describe(&self) -> String {
        match self {
            Keep::Pinned { pin_seq: Some(s) } => format!("it is pinned (event {s})"),
            Keep::Pinned { pin_seq: None } => "it is pinned by its class".into(),
            Keep::CountLimit { submission_seq } => format!(
                "the count limit keeps it: submission {submission_seq} is among its task's last submissions"
            ),
            Keep::WithinClass { expires_at_ms } => {
                format!("its class keeps it until {}", ms_to_rfc3339(*expires_at_ms))
            }
            Keep::NoPeriod => "its class never expires".into(),
        }
    }
}

/// What the rules say about one OID at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// The content already expired.
    Gone,
    /// The content is kept.
    Keep(Keep),
    /// The content has expired (since `expires_at_ms`).
    Expire { expires_at_ms: u64 },
}

/// When `record`'s content expires under `policy` (None: never).
pub fn expires_at(policy: &Policy, record: &OidRecord) -> Option<u64> {
    policy
        .keep_ms(&record.retention_class)
        .map(|k| record.registered_at_ms.saturating_add(k))
}

/// The decision for one record, given its count-limit hold.
pub fn decide_record(
    policy: &Policy,
    record: &OidRecord,
    pin_seq: Option<u64>,
    count_hold: Option<u64>,
    now_ms: u64,
) -> Decision {
    if record.state == OidState::Expired {
        return Decision::Gone;
    }
    if record.pinned {
        return Decision::Keep(Keep::Pinned { pin_seq });
    }
    if let Some(submission_seq) = count_hold {
        return Decision::Keep(Keep::CountLimit { submission_seq });
    }
    match expires_at(policy, record) {
        None => Decision::Keep(Keep::NoPeriod),
        Some(t) if now_ms >= t => Decision::Expire { expires_at_ms: t },
        Some(t) => Decision::Keep(Keep::WithinClass { expires_at_ms: t }),
    }
}

/// The newest of the last `n` submissions of `record`'s task that names
/// `oid` (None when `n` is 0 or none does).
pub fn count_hold<'a>(
    state: impl Into<View<'a>>,
    oid: &str,
    record: &OidRecord,
    n: u32,
) -> Option<u64> {
    if n == 0 {
        return None;
    }
    let task = state.into().tasks.tasks.get(&record.task_id)?;
    task.submissions
        .iter()
        .rev()
        .take(n as usize)
        .find(|s| s.evidence_oids.iter().any(|o| o == oid))
        .map(|s| s.seq)
}

/// The decision for `oid` at `now_ms` under the policy in force (None for
/// an unknown OID).
pub fn decide<'a>(state: impl Into<View<'a>>, oid: &str, now_ms: u64) -> Option<Decision> {
    let state = state.into();
    let record = state.oids.oids.get(oid)?;
    let policy = state.retention.policy();
    let hold = count_hold(state, oid, record, policy.keep_last_submissions);
    let pin_seq = state.retention.pins.get(oid).map(|p| p.seq);
    Some(decide_record(&policy, record, pin_seq, hold, now_ms))
}

/// Every OID held by the count limit: OID → the newest submission naming it
/// among the last `n` of its task.
pub fn count_holds<'a>(state: impl Into<View<'a>>, n: u32) -> HashMap<&'a str, u64> {
    let mut out = HashMap::new();
    if n == 0 {
        return out;
    }
    for task in state.into().tasks.tasks.values() {
        // Newest first, so the first insert is the newest submission.
        for s in task.submissions.iter().rev().take(n as usize) {
            for o in &s.evidence_oids {
                out.entry(o.as_str()).or_insert(s.seq);
            }
        }
    }
    out
}

/// One OID a sweep expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Planned {
    pub oid: String,
    pub class: String,
    pub task_id: String,
    pub registered_at_ms: u64,
    pub expires_at_ms: u64,
    /// SHA-256 (hex) and size of the content it holds now.
    pub sha256: String,
    pub size: u64,
}

impl Planned {
    /// The removal reason its `evidence.expired` event states.
    pub fn reason(&self, policy: &Policy) -> String {
        match policy.days(&self.class) {
            Some(days) => format!(
                "{} retention of {days} days ended at {}",
                self.class,
                ms_to_rfc3339(self.expires_at_ms)
            ),
            None => format!("{} retention ended", self.class),
        }
    }
}

/// A sweep's decisions at one `now`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SweepPlan {
    pub now_ms: u64,
    pub policy: Policy,
    /// OIDs to expire, in OID order (registration-time order).
    pub expire: Vec<Planned>,
    /// OIDs whose content is still held (live or redacted).
    pub examined: u64,
    pub kept_pinned: u64,
    pub kept_count_limit: u64,
    pub kept_within_class: u64,
}

/// Decides every OID at `now_ms` (one pass over the registry).
pub fn plan<'a>(state: impl Into<View<'a>>, now_ms: u64) -> SweepPlan {
    let state = state.into();
    let policy = state.retention.policy();
    let holds = count_holds(state, policy.keep_last_submissions);
    let mut out = SweepPlan {
        now_ms,
        policy,
        expire: Vec::new(),
        examined: 0,
        kept_pinned: 0,
        kept_count_limit: 0,
        kept_within_class: 0,
    };
    for (oid, record) in &state.oids.oids {
        if record.state == OidState::Expired {
            continue;
        }
        out.examined += 1;
        let hold = if holds.is_empty() {
            None
        } else {
            holds.get(oid.as_str()).copied()
        };
        match decide_record(&policy, record, None, hold, now_ms) {
            Decision::Gone => {}
            Decision::Keep(Keep::Pinned { .. }) => out.kept_pinned += 1,
            Decision::Keep(Keep::CountLimit { .. }) => out.kept_count_limit += 1,
            Decision::Keep(_) => out.kept_within_class += 1,
            Decision::Expire { expires_at_ms } => out.expire.push(Planned {
                oid: oid.clone(),
                class: record.retention_class.clone(),
                task_id: record.task_id.clone(),
                registered_at_ms: record.registered_at_ms,
                expires_at_ms,
                sha256: current_sha256(record, state.retention, oid)
                    .unwrap_or_default()
                    .to_string(),
                size: current_size(record).unwrap_or(0),
            }),
        }
    }
    out
}
