//! The verdict-ledger domain: tasks, evidence, executions, submissions,
//! checks, verdicts and approvals as statements, with their projections.
//!
//! - [`admit`]: pure admission of domain statements (schemas via
//!   `docket-verifier`, references, separation of duties, task state);
//! - [`projections`]: the verdict state per task and the OID registry, folded
//!   by [`apply`] and snapshotted as canonical JSON by [`snapshots`];
//! - [`oid`]: deterministic OID minting;
//! - [`query`]: state as of a sequence number or a time;
//! - [`service::Docket`]: the operations that also need the disk (blob
//!   store, auto-verify).
//!
//! Payload schemas, the authority table and the separation-of-duties rules
//! are written down in `docs/DOMAIN.md`.

pub mod admit;
pub mod oid;
pub mod payloads;
pub mod projections;
pub mod query;
pub mod service;

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::state::{AdmitContext, LedgerState};

pub use projections::{
    ApprovalInfo, ApprovalState, DomainState, OidRecord, OidRegistry, OidState, TaskState,
    VerdictStatus, VerdictsProjection,
};
pub use query::AsOf;
pub use service::{Docket, DocketOptions};

/// Event kind names of the domain.
pub mod kinds {
    pub const TASK_REGISTERED: &str = "task.registered";
    pub const EVIDENCE_REGISTERED: &str = "evidence.registered";
    pub const EXECUTION_RECORDED: &str = "execution.recorded";
    pub const SUBMISSION_RECEIVED: &str = "submission.received";
    pub const CHECK_RECORDED: &str = "check.recorded";
    pub const VERDICT_ISSUED: &str = "verdict.issued";
    pub const APPROVAL_REQUESTED: &str = "approval.requested";
    pub const APPROVAL_GRANTED: &str = "approval.granted";
    pub const APPROVAL_DENIED: &str = "approval.denied";

    /// Every kind this module admits.
    pub const ALL: [&str; 9] = [
        TASK_REGISTERED,
        EVIDENCE_REGISTERED,
        EXECUTION_RECORDED,
        SUBMISSION_RECEIVED,
        CHECK_RECORDED,
        VERDICT_ISSUED,
        APPROVAL_REQUESTED,
        APPROVAL_GRANTED,
        APPROVAL_DENIED,
    ];
}

/// Domain admission for kinds beyond keys and extensions.
pub fn admit(state: &LedgerState, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
    if crate::retention::is_retention_kind(&stmt.kind) {
        return crate::retention::admit(state, stmt, ctx);
    }
    admit::admit(state, stmt, ctx)
}

/// Folds a domain event into the domain projections.
pub fn apply(state: &mut LedgerState, event: &Event) {
    if crate::retention::is_retention_kind(&event.kind) {
        crate::retention::apply(state, event);
        return;
    }
    state.domain.apply(event);
}

/// Snapshot bytes of the domain projections (canonical JSON).
pub fn snapshots(state: &LedgerState) -> Vec<(&'static str, Vec<u8>)> {
    // Invariant: projection states are maps, strings, integers and bools with
    // string or integer keys; serde_json cannot fail on them.
    vec![
        (
            VerdictsProjection::NAME,
            serde_json::to_vec(&state.domain.verdicts).expect("verdicts serialise"),
        ),
        (
            OidRegistry::NAME,
            serde_json::to_vec(&state.domain.oids).expect("oids serialise"),
        ),
        (
            crate::retention::SNAPSHOT_NAME,
            crate::retention::snapshot(state),
        ),
    ]
}

/// Restores one domain projection from its snapshot.
pub fn restore(state: &mut LedgerState, name: &str, bytes: &[u8]) -> Result<()> {
    let corrupt =
        |e: serde_json::Error| LedgerError::corrupt(format!("snapshot {name}"), e.to_string());
    match name {
        VerdictsProjection::NAME => {
            state.domain.verdicts = serde_json::from_slice(bytes).map_err(corrupt)?;
            Ok(())
        }
        OidRegistry::NAME => {
            state.domain.oids = serde_json::from_slice(bytes).map_err(corrupt)?;
            Ok(())
        }
        crate::retention::SNAPSHOT_NAME => crate::retention::restore(state, bytes),
        _ => Err(LedgerError::corrupt(
            format!("snapshot {name}"),
            "unknown projection",
        )),
    }
}
