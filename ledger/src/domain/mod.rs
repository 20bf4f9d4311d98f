//! The verdict-ledger domain: tasks, evidence, executions, submissions,
//! checks, verdicts, approvals and retention as statements, with their
//! projections. (Filled in by the domain work; this is the seam.)

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::state::{AdmitContext, LedgerState};

/// Domain admission for kinds beyond keys and extensions.
pub fn admit(_state: &LedgerState, stmt: &Statement, _ctx: &AdmitContext) -> Result<()> {
    Err(LedgerError::FailedPrecondition(format!(
        "kind {} is not supported by this ledger yet",
        stmt.kind
    )))
}

/// Folds a domain event into the domain projections.
pub fn apply(_state: &mut LedgerState, _event: &Event) {}

/// Snapshot bytes of the domain projections.
pub fn snapshots(_state: &LedgerState) -> Vec<(&'static str, Vec<u8>)> {
    Vec::new()
}

/// Restores one domain projection from its snapshot.
pub fn restore(_state: &mut LedgerState, name: &str, _bytes: &[u8]) -> Result<()> {
    Err(LedgerError::corrupt(
        format!("snapshot {name}"),
        "unknown projection",
    ))
}
