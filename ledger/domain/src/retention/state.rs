//! The `retention` projection and the fold of the retention kinds.
//!
//! The fold also updates the domain's OID registry, which already carries
//! the fields retention owns: `retention_class`, `pinned`, `state` and
//! `removal` (the event that removed the original content). Pure: no
//! clock, no disk; `BTreeMap`s throughout so the snapshot is canonical JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain::projections::Removal;
use crate::domain::{OidRecord, OidState};
use crate::event::Event;
use crate::state::LedgerState;

use super::classes;
use super::kinds;
use super::payloads::{
    Expired, FindingRef, Pinned, PolicySet, Reclassified, Redacted, Sweep, Unpinned,
};
use super::policy::Policy;

/// The policy event in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRecord {
    pub seq: u64,
    pub at_ms: u64,
    /// Hex public key of the admin that set it.
    pub by: String,
    pub policy: Policy,
}

/// An explicit pin (`retention.pinned`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinInfo {
    pub seq: u64,
    pub at_ms: u64,
    pub by: String,
    pub reason: Option<String>,
}

/// One redaction of an OID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedactionInfo {
    pub seq: u64,
    pub at_ms: u64,
    pub by: String,
    pub original_sha256: String,
    pub redacted_sha256: String,
    pub redacted_size: u64,
    pub reason: String,
    pub findings: Vec<FindingRef>,
}

/// One `retention.sweep` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepInfo {
    pub at_ms: u64,
    /// The time its decisions were made at (its `now`, else its ledger time).
    pub as_of_ms: u64,
    pub by: String,
    /// `evidence.expired` events that name this sweep.
    pub expired: u64,
}

/// Retention state beyond the OID registry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionState {
    /// The latest `retention.policy_set`; None: the built-in default.
    pub policy: Option<PolicyRecord>,
    /// Explicit pins by OID (an OID of class `pinned` is pinned without one).
    pub pins: BTreeMap<String, PinInfo>,
    /// Redactions by OID, oldest first.
    pub redactions: BTreeMap<String, Vec<RedactionInfo>>,
    /// Sweeps by sequence number.
    pub sweeps: BTreeMap<u64, SweepInfo>,
}

impl RetentionState {
    /// The policy in force (the built-in default before any policy event).
    pub fn policy(&self) -> Policy {
        self.policy.as_ref().map(|p| p.policy).unwrap_or_default()
    }

    /// The redaction whose content an OID holds now (its latest), if any.
    pub fn current_redaction(&self, oid: &str) -> Option<&RedactionInfo> {
        self.redactions.get(oid).and_then(|v| v.last())
    }
}

/// SHA-256 (hex) of the content an OID holds now: the registered content
/// while live, the latest redacted version once redacted, None once expired.
pub fn current_sha256<'a>(
    record: &'a OidRecord,
    retention: &'a RetentionState,
    oid: &str,
) -> Option<&'a str> {
    match record.state {
        OidState::Live => Some(record.sha256.as_str()),
        OidState::Redacted => record
            .removal
            .as_ref()
            .and_then(|r| r.redacted_sha256.as_deref())
            .or_else(|| {
                retention
                    .current_redaction(oid)
                    .map(|r| r.redacted_sha256.as_str())
            }),
        OidState::Expired => None,
    }
}

/// Size of the content an OID holds now (see [`current_sha256`]).
pub fn current_size(record: &OidRecord) -> Option<u64> {
    match record.state {
        OidState::Live => Some(record.size),
        OidState::Redacted => record.removal.as_ref().and_then(|r| r.redacted_size),
        OidState::Expired => None,
    }
}

fn parse<'a, T: Deserialize<'a>>(event: &'a Event) -> Option<T> {
    serde_json::from_slice(&event.payload).ok()
}

/// Folds one retention event. Never fails: a payload that does not decode
/// or names an unknown OID (impossible after admission) is ignored.
pub fn apply(state: &mut LedgerState, event: &Event) {
    let by = || hex::encode(event.author);
    let retention = &mut state.retention;
    let oids = &mut state.domain.oids.oids;
    match event.kind.as_str() {
        kinds::POLICY_SET => {
            if let Some(p) = parse::<PolicySet>(event) {
                retention.policy = Some(PolicyRecord {
                    seq: event.seq,
                    at_ms: event.recorded_at_ms,
                    by: by(),
                    policy: p.policy(),
                });
            }
        }
        kinds::PINNED => {
            let Some(p) = parse::<Pinned>(event) else {
                return;
            };
            let Some(r) = oids.get_mut(&p.oid) else {
                return;
            };
            r.pinned = true;
            retention.pins.insert(
                p.oid,
                PinInfo {
                    seq: event.seq,
                    at_ms: event.recorded_at_ms,
                    by: by(),
                    reason: p.reason,
                },
            );
        }
        kinds::UNPINNED => {
            let Some(p) = parse::<Unpinned>(event) else {
                return;
            };
            let Some(r) = oids.get_mut(&p.oid) else {
                return;
            };
            retention.pins.remove(&p.oid);
            if r.retention_class == classes::PINNED {
                let task_class = state
                    .domain
                    .verdicts
                    .tasks
                    .get(&r.task_id)
                    .map(|t| t.contract.retention_class.as_str())
                    .filter(|c| *c != classes::PINNED);
                r.retention_class = p
                    .class
                    .as_deref()
                    .or(task_class)
                    .unwrap_or(classes::ROUTINE)
                    .to_string();
            }
            r.pinned = false;
        }
        kinds::RECLASSIFIED => {
            let Some(p) = parse::<Reclassified>(event) else {
                return;
            };
            let Some(r) = oids.get_mut(&p.oid) else {
                return;
            };
            r.pinned = p.class == classes::PINNED || retention.pins.contains_key(&p.oid);
            r.retention_class = p.class;
        }
        kinds::REDACTED => {
            let Some(p) = parse::<Redacted>(event) else {
                return;
            };
            let Some(r) = oids.get_mut(&p.oid) else {
                return;
            };
            r.state = OidState::Redacted;
            r.removal = Some(Removal {
                seq: event.seq,
                at_ms: event.recorded_at_ms,
                reason: p.reason.clone(),
                redacted_sha256: Some(p.redacted_sha256.clone()),
                redacted_size: Some(p.redacted_size),
            });
            retention
                .redactions
                .entry(p.oid)
                .or_default()
                .push(RedactionInfo {
                    seq: event.seq,
                    at_ms: event.recorded_at_ms,
                    by: by(),
                    original_sha256: p.original_sha256,
                    redacted_sha256: p.redacted_sha256,
                    redacted_size: p.redacted_size,
                    reason: p.reason,
                    findings: p.findings,
                });
        }
        kinds::SWEEP => {
            let Some(p) = parse::<Sweep>(event) else {
                return;
            };
            let as_of_ms = p
                .now
                .as_deref()
                .and_then(crate::domain::payloads::rfc3339_ms)
                .and_then(|t| u64::try_from(t).ok())
                .unwrap_or(event.recorded_at_ms);
            retention.sweeps.insert(
                event.seq,
                SweepInfo {
                    at_ms: event.recorded_at_ms,
                    as_of_ms,
                    by: by(),
                    expired: 0,
                },
            );
        }
        kinds::EXPIRED => {
            let Some(p) = parse::<Expired>(event) else {
                return;
            };
            let Some(r) = oids.get_mut(&p.oid) else {
                return;
            };
            let reason = p.reason.unwrap_or_else(|| {
                format!("expired under the {} retention class", r.retention_class)
            });
            r.state = OidState::Expired;
            r.removal = Some(Removal {
                seq: event.seq,
                at_ms: event.recorded_at_ms,
                reason,
                redacted_sha256: None,
                redacted_size: None,
            });
            if let Some(s) = p.sweep_seq.and_then(|s| retention.sweeps.get_mut(&s)) {
                s.expired += 1;
            }
        }
        _ => {}
    }
}
