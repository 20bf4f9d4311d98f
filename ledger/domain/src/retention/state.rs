//! The `retention` projection and the folds of the retention kinds.
//!
//! The folds also move the OID registry's retention fields
//! ([`crate::oids::OidRecord`]: `retention_class`, `pinned`, `state` and
//! `removal`, the event that removed the original content). Pure: no clock,
//! no disk; `BTreeMap`s throughout so the snapshot is canonical JSON. Every
//! fold takes its decoded payload; one that names an OID the registry does
//! not hold is an event that was never admitted (`Corrupt`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::event::Event;
use crate::oids::{OidRecord, OidRegistry, OidState, Removal};
use crate::tasks::VerdictsProjection;

use super::classes;
use super::payloads::{Expired, FindingRef, Pinned, PolicySet, Reclassified, Redacted, Unpinned};
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

fn by(event: &Event) -> String {
    hex::encode(event.author)
}

/// Folds `retention.policy_set`: the policy from this event on.
pub fn fold_policy(retention: &mut RetentionState, event: &Event, p: &PolicySet) -> Result<()> {
    retention.policy = Some(PolicyRecord {
        seq: event.seq,
        at_ms: event.recorded_at_ms,
        by: by(event),
        policy: p.policy(),
    });
    Ok(())
}

/// Folds `retention.pinned`: the OID is kept until unpinned.
pub fn fold_pinned(
    oids: &mut OidRegistry,
    retention: &mut RetentionState,
    event: &Event,
    p: &Pinned,
) -> Result<()> {
    let r = oids.record_for_fold(&p.oid, event)?;
    r.pinned = true;
    retention.pins.insert(
        p.oid.clone(),
        PinInfo {
            seq: event.seq,
            at_ms: event.recorded_at_ms,
            by: by(event),
            reason: p.reason.clone(),
        },
    );
    Ok(())
}

/// Folds `retention.unpinned`: an OID of class `pinned` falls back to the
/// payload's class, else its task's (unless that is `pinned`), else
/// `routine`.
pub fn fold_unpinned(
    tasks: &VerdictsProjection,
    oids: &mut OidRegistry,
    retention: &mut RetentionState,
    event: &Event,
    p: &Unpinned,
) -> Result<()> {
    let r = oids.record_for_fold(&p.oid, event)?;
    retention.pins.remove(&p.oid);
    if r.retention_class == classes::PINNED {
        let task_class = tasks
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
    Ok(())
}

/// Folds `retention.reclassified`: the OID's new class (pinned when the
/// class is `pinned` or an explicit pin holds it).
pub fn fold_reclassified(
    oids: &mut OidRegistry,
    retention: &RetentionState,
    event: &Event,
    p: &Reclassified,
) -> Result<()> {
    let r = oids.record_for_fold(&p.oid, event)?;
    r.pinned = p.class == classes::PINNED || retention.pins.contains_key(&p.oid);
    r.retention_class = p.class.clone();
    Ok(())
}

/// Folds `retention.redacted`: the OID now holds the redacted version.
pub fn fold_redacted(
    oids: &mut OidRegistry,
    retention: &mut RetentionState,
    event: &Event,
    p: &Redacted,
) -> Result<()> {
    let r = oids.record_for_fold(&p.oid, event)?;
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
        .entry(p.oid.clone())
        .or_default()
        .push(RedactionInfo {
            seq: event.seq,
            at_ms: event.recorded_at_ms,
            by: by(event),
            original_sha256: p.original_sha256.clone(),
            redacted_sha256: p.redacted_sha256.clone(),
            redacted_size: p.redacted_size,
            reason: p.reason.clone(),
            findings: p.findings.clone(),
        });
    Ok(())
}

/// Folds `retention.sweep`: decisions are made at its `now` (Unix ms, when
/// stated), else at its ledger time.
pub fn fold_sweep(
    retention: &mut RetentionState,
    event: &Event,
    now_ms: Option<u64>,
) -> Result<()> {
    retention.sweeps.insert(
        event.seq,
        SweepInfo {
            at_ms: event.recorded_at_ms,
            as_of_ms: now_ms.unwrap_or(event.recorded_at_ms),
            by: by(event),
            expired: 0,
        },
    );
    Ok(())
}

/// Folds `evidence.expired`: the OID's content is gone; the sweep it names
/// (if any) counts it.
pub fn fold_expired(
    oids: &mut OidRegistry,
    retention: &mut RetentionState,
    event: &Event,
    p: &Expired,
) -> Result<()> {
    let r = oids.record_for_fold(&p.oid, event)?;
    let reason = p
        .reason
        .clone()
        .unwrap_or_else(|| format!("expired under the {} retention class", r.retention_class));
    r.state = OidState::Expired;
    r.removal = Some(Removal {
        seq: event.seq,
        at_ms: event.recorded_at_ms,
        reason,
        redacted_sha256: None,
        redacted_size: None,
    });
    // Admission guarantees the sweep; a partial log may not carry it.
    if let Some(s) = p.sweep_seq.and_then(|s| retention.sweeps.get_mut(&s)) {
        s.expired += 1;
    }
    Ok(())
}
