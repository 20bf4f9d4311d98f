//! The retention aggregate: records are forever, content expires.
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
//!   redactions, sweeps) and the folds, which also move the OID registry's
//!   retention fields (`state`, `pinned`, `retention_class`, `removal`);
//! - [`admit`]: pure admission of the retention kinds (an `evidence.expired`
//!   is admitted only when the rules say the OID has expired);
//! - [`rules`]: the pure expiry rules and the sweep plan (`now` is always a
//!   parameter, never read inside the rules);
//! - [`status`]: the pure retention summary;
//! - [`redact`]: the secret scanner behind `docket retention redact --auto`;
//! - [`reports`]: what sweeps, reconciliations and redactions report;
//! - [`sweeper`]: the periodic sweep loop (for servers).
//!
//! Retention depends on the evidence aggregate ([`crate::oids`]) and reads
//! the tasks ([`crate::tasks`], for the count limit); neither depends on
//! it. The operations that touch the disk (sweeps, reconciliation after a
//! crash, redaction) are the service's: `domain::retention_service`.
//! The rules, payloads and crash-safety argument are in `docs/RETENTION.md`.

pub mod admit;
pub mod payloads;
pub mod policy;
pub mod redact;
pub mod reports;
pub mod rules;
pub mod state;
pub mod status;
pub mod sweeper;

use crate::error::{LedgerError, Result};
use crate::oids::OidRegistry;
use crate::tasks::VerdictsProjection;

pub use policy::Policy;
pub use reports::{
    DEFAULT_GRACE_MS, DeletedBlob, ExpiredOid, ReconcileReport, RedactOutcome, SkippedOid,
    SweepOptions, SweepReport,
};
pub use rules::{Decision, Keep, SweepPlan};
pub use state::RetentionState;
pub use status::RetentionStatus;
pub use sweeper::{PeriodicSweep, Sweeper};

/// Event kinds of retention (their one spelling is [`crate::kind::names`]).
pub mod kinds {
    use crate::kind::names;

    /// The retention policy (admin).
    pub const POLICY_SET: &str = names::RETENTION_POLICY_SET;
    /// Pin an OID: its content is kept until unpinned (custodian).
    pub const PINNED: &str = names::RETENTION_PINNED;
    /// Unpin an OID (custodian).
    pub const UNPINNED: &str = names::RETENTION_UNPINNED;
    /// Move an OID to another class (custodian).
    pub const RECLASSIFIED: &str = names::RETENTION_RECLASSIFIED;
    /// Replace an OID's content by a redacted version (custodian).
    pub const REDACTED: &str = names::RETENTION_REDACTED;
    /// A sweep: the time its decisions are made at (custodian).
    pub const SWEEP: &str = names::RETENTION_SWEEP;
    /// One OID's content expired (custodian).
    pub const EXPIRED: &str = names::EVIDENCE_EXPIRED;

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
pub use crate::schema::classes;

/// Snapshot name of the retention projection (`DATA/snapshots/retention`).
pub const SNAPSHOT_NAME: &str = "retention";

/// What the retention rules read: the OID registry, the tasks (the count
/// limit keeps the evidence of their last submissions) and retention's own
/// projection. `LedgerState` converts into it (`View::from(&state)`), so
/// every function here takes `impl Into<View>`.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// Events folded in (the state's next sequence number).
    pub applied: u64,
    pub tasks: &'a VerdictsProjection,
    pub oids: &'a OidRegistry,
    pub retention: &'a RetentionState,
}

/// Canonical snapshot bytes of the retention projection.
pub fn snapshot(retention: &RetentionState) -> Vec<u8> {
    // Invariant: the projection holds maps with string or integer keys,
    // strings, integers and bools; serde_json cannot fail on them.
    serde_json::to_vec(retention).expect("retention state serialises")
}

/// Parses the retention projection's snapshot bytes.
pub fn restore(bytes: &[u8]) -> Result<RetentionState> {
    serde_json::from_slice(bytes)
        .map_err(|e| LedgerError::corrupt(format!("snapshot {SNAPSHOT_NAME}"), e.to_string()))
}
