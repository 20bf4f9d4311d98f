//! Retention: records are forever, content expires.
//!
//! Evidence content (blobs) is kept for as long as its retention class says
//! and then deleted; the log keeps every event and every digest, so proofs
//! and `replay --verify` never break. Everything here is derived from event
//! times and the policy event, so a replay reproduces every decision.
//!
//! - [`policy`]: the policy (`retention.policy_set`, admin) and its built-in
//!   default; days per class and the count limit;
//! - [`payloads`]: the payload schemas of the retention kinds;
//! - [`state`]: the `retention` projection (policy in force, pins,
//!   redactions, sweeps) and the fold, which also updates the OID registry
//!   (`state`, `pinned`, `retention_class`, `removal` of each OID);
//! - [`admit`]: pure admission of the retention kinds (an `evidence.expired`
//!   is admitted only when the rules say the OID has expired);
//! - [`rules`]: the pure expiry rules and the sweep plan (`now` is always a
//!   parameter, never read inside the rules);
//! - [`status`]: the pure retention summary;
//! - [`redact`]: the secret scanner behind `docket retention redact --auto`;
//! - [`service`]: the operations that also touch the disk, as methods on
//!   [`crate::domain::Docket`]: sweeps (event first, then deletion),
//!   reconciliation after a crash, redaction, status, the periodic sweeper.
//!
//! The rules, payloads and crash-safety argument are in `docs/RETENTION.md`.

pub mod admit;
pub mod payloads;
pub mod policy;
pub mod redact;
pub mod rules;
pub mod service;
pub mod state;
pub mod status;

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::state::{AdmitContext, LedgerState};

pub use policy::Policy;
pub use rules::{Decision, Keep, SweepPlan};
pub use service::{ReconcileReport, RedactOutcome, SweepOptions, SweepReport, Sweeper};
pub use state::RetentionState;
pub use status::RetentionStatus;

/// Event kinds of retention.
pub mod kinds {
    /// The retention policy (admin).
    pub const POLICY_SET: &str = "retention.policy_set";
    /// Pin an OID: its content is kept until unpinned (custodian).
    pub const PINNED: &str = "retention.pinned";
    /// Unpin an OID (custodian).
    pub const UNPINNED: &str = "retention.unpinned";
    /// Move an OID to another class (custodian).
    pub const RECLASSIFIED: &str = "retention.reclassified";
    /// Replace an OID's content by a redacted version (custodian).
    pub const REDACTED: &str = "retention.redacted";
    /// A sweep: the time its decisions are made at (custodian).
    pub const SWEEP: &str = "retention.sweep";
    /// One OID's content expired (custodian).
    pub const EXPIRED: &str = "evidence.expired";

    /// Every retention kind.
    pub const ALL: [&str; 7] = [
        POLICY_SET,
        PINNED,
        UNPINNED,
        RECLASSIFIED,
        REDACTED,
        SWEEP,
        EXPIRED,
    ];
}

/// Retention classes.
pub mod classes {
    pub const ROUTINE: &str = "routine";
    pub const HIGH_IMPACT: &str = "high_impact";
    pub const PINNED: &str = "pinned";
    /// Every class, in display order.
    pub const ALL: [&str; 3] = [ROUTINE, HIGH_IMPACT, PINNED];
}

/// Snapshot name of the retention projection (`DATA/snapshots/retention`).
pub const SNAPSHOT_NAME: &str = "retention";

/// Whether `kind` is one of the retention kinds.
pub fn is_retention_kind(kind: &str) -> bool {
    kinds::ALL.contains(&kind)
}

/// Admission of a retention statement at `ctx` (pure).
pub fn admit(state: &LedgerState, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
    admit::admit(state, stmt, ctx)
}

/// Folds a retention event (pure; unknown kinds are ignored).
pub fn apply(state: &mut LedgerState, event: &Event) {
    state::apply(state, event);
}

/// Canonical snapshot bytes of the retention projection.
pub fn snapshot(state: &LedgerState) -> Vec<u8> {
    // Invariant: the projection holds maps with string or integer keys,
    // strings, integers and bools; serde_json cannot fail on them.
    serde_json::to_vec(&state.retention).expect("retention state serialises")
}

/// Restores the retention projection from its snapshot bytes.
pub fn restore(state: &mut LedgerState, bytes: &[u8]) -> Result<()> {
    state.retention = serde_json::from_slice(bytes)
        .map_err(|e| LedgerError::corrupt(format!("snapshot {SNAPSHOT_NAME}"), e.to_string()))?;
    Ok(())
}
