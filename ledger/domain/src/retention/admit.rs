//! Admission of the retention kinds: may this statement be appended now?
//!
//! Pure: reads only the state ([`View`]) and the [`AdmitContext`], never the
//! clock or the disk, because replay re-runs it for every event. The core
//! has already checked the signature and the role (`retention.policy_set`:
//! admin; every other retention kind: custodian), and the payload is
//! decoded (its schema holds).
//!
//! `evidence.expired` is admitted only when the expiry rules
//! ([`super::rules`]) say the OID's content has expired **at the
//! `as_of_ms` its payload states**, evaluated on the state before the event.
//! Both are in the log, so replay reaches the same answer. `as_of_ms` (and a
//! sweep's `now`) may not be later than the event's own ledger time unless
//! the policy in force sets `allow_future_sweeps`: nobody can expire content
//! early by claiming a future time.

use crate::error::{LedgerError, Result};
use crate::oids::{OidRecord, OidState, Removal};
use crate::schema::ms_to_rfc3339;
use docket_log::machine::AdmitContext;

use super::View;
use super::classes;
use super::kinds;
use super::payloads::{Expired, Pinned, Reclassified, Redacted, Unpinned};
use super::rules::{self, Decision};
use super::state::current_sha256;

fn record<'s>(state: View<'s>, oid: &str) -> Result<&'s OidRecord> {
    state.oids.record(oid)
}

/// Refuses an action on content that already expired.
fn not_expired(oid: &str, record: &OidRecord, action: &str) -> Result<()> {
    if record.state != OidState::Expired {
        return Ok(());
    }
    let why = record
        .removal
        .as_ref()
        .map(Removal::describe)
        .unwrap_or_default();
    Err(LedgerError::FailedPrecondition(format!(
        "the content of {oid} expired{why}: nothing to {action}"
    )))
}

/// A stated time may not be after the event's ledger time unless the policy
/// allows future sweeps.
fn check_clock(state: View<'_>, stated_ms: u64, ctx: &AdmitContext, what: &str) -> Result<()> {
    if stated_ms <= ctx.recorded_at_ms || state.retention.policy().allow_future_sweeps {
        return Ok(());
    }
    Err(LedgerError::FailedPrecondition(format!(
        "{what} {} is after the ledger clock ({}); the retention policy does not allow future sweeps (allow_future_sweeps)",
        ms_to_rfc3339(stated_ms),
        ms_to_rfc3339(ctx.recorded_at_ms)
    )))
}

/// `retention.pinned`: a registered OID whose content has not expired and
/// that is not pinned yet.
pub fn admit_pin(state: View<'_>, p: &Pinned) -> Result<()> {
    let r = record(state, &p.oid)?;
    not_expired(&p.oid, r, "pin")?;
    if r.pinned {
        let how = match state.retention.pins.get(&p.oid) {
            Some(pin) => format!("by event {}", pin.seq),
            None => "by its class".into(),
        };
        return Err(LedgerError::FailedPrecondition(format!(
            "{} is already pinned ({how})",
            p.oid
        )));
    }
    Ok(())
}

/// `retention.unpinned`: a pinned OID; a fallback class only for an OID
/// whose class is `pinned`.
pub fn admit_unpin(state: View<'_>, p: &Unpinned) -> Result<()> {
    let r = record(state, &p.oid)?;
    if !r.pinned {
        return Err(LedgerError::FailedPrecondition(format!(
            "{} is not pinned",
            p.oid
        )));
    }
    if p.class.is_some() && r.retention_class != classes::PINNED {
        return Err(LedgerError::Invalid {
            what: kinds::UNPINNED.into(),
            violations: vec![format!(
                "class: {} is in class {}, which it keeps when unpinned; use retention.reclassified to change it",
                p.oid, r.retention_class
            )],
        });
    }
    Ok(())
}

/// `retention.reclassified`: an OID with content, moved to another class.
pub fn admit_reclassify(state: View<'_>, p: &Reclassified) -> Result<()> {
    let r = record(state, &p.oid)?;
    not_expired(&p.oid, r, "reclassify")?;
    if r.retention_class == p.class {
        return Err(LedgerError::FailedPrecondition(format!(
            "{} is already in class {}",
            p.oid, p.class
        )));
    }
    Ok(())
}

/// `retention.redacted`: an OID with content, replacing exactly the content
/// it holds now.
pub fn admit_redaction(state: View<'_>, p: &Redacted) -> Result<()> {
    let r = record(state, &p.oid)?;
    not_expired(&p.oid, r, "redact")?;
    let current = current_sha256(r, state.retention, &p.oid).unwrap_or_default();
    if current != p.original_sha256 {
        return Err(LedgerError::FailedPrecondition(format!(
            "the content {} holds now is {current}, not original_sha256 {}",
            p.oid, p.original_sha256
        )));
    }
    Ok(())
}

/// `retention.sweep`: its `now` is not after the ledger clock (unless the
/// policy allows future sweeps).
pub fn admit_sweep(state: View<'_>, ctx: &AdmitContext, now_ms: Option<u64>) -> Result<()> {
    if let Some(now) = now_ms {
        check_clock(state, now, ctx, "the sweep's now")?;
    }
    Ok(())
}

/// `evidence.expired`: the rules expire the OID's content at the payload's
/// `as_of_ms` (which may not be after the ledger clock), and the sweep it
/// names (if any) decided at that same time.
pub fn admit_expiry(state: View<'_>, ctx: &AdmitContext, p: &Expired) -> Result<()> {
    let r = record(state, &p.oid)?;
    if let Some(seq) = p.sweep_seq {
        let Some(sweep) = state.retention.sweeps.get(&seq) else {
            return Err(LedgerError::NotFound {
                what: format!("retention.sweep event {seq}"),
            });
        };
        if sweep.as_of_ms != p.as_of_ms {
            return Err(LedgerError::Invalid {
                what: kinds::EXPIRED.into(),
                violations: vec![format!(
                    "as_of_ms: {} differs from the now of sweep {seq} ({})",
                    p.as_of_ms, sweep.as_of_ms
                )],
            });
        }
    }
    not_expired(&p.oid, r, "expire")?;
    check_clock(state, p.as_of_ms, ctx, "as_of_ms")?;
    match rules::decide(state, &p.oid, p.as_of_ms) {
        Some(Decision::Expire { .. }) => Ok(()),
        Some(Decision::Keep(k)) => Err(LedgerError::FailedPrecondition(format!(
            "{} has not expired at {}: {}",
            p.oid,
            ms_to_rfc3339(p.as_of_ms),
            k.describe()
        ))),
        // Gone was refused by not_expired; an unknown OID by record().
        Some(Decision::Gone) | None => Err(LedgerError::FailedPrecondition(format!(
            "{} has no content to expire",
            p.oid
        ))),
    }
}
