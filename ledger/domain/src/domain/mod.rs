//! The domain service and the public paths of the domain.
//!
//! The aggregates ([`crate::keys`], [`crate::tasks`], [`crate::oids`],
//! [`crate::verdicts`], [`crate::approvals`], [`crate::retention`]) and the
//! kind table ([`crate::kind`]) are pure: no disk, no clock. This module is
//! what sits on top of them and the log:
//!
//! - [`service::Docket`]: writes that need the disk (blobs before
//!   `evidence.registered`), `submit` (which returns the automatic
//!   verdict), queries;
//! - [`subscriber`]: subscribers of committed events, each on its own
//!   thread with a persisted cursor (`DATA/cursors/<name>`);
//! - [`auto_verify`]: the auto-verify subscriber and the verdict engine
//!   run on a submission;
//! - [`retention_service`]: the retention operations that touch the disk
//!   (sweeps, reconciliation, redaction, status);
//! - [`query`]: state as of a sequence number or a time.
//!
//! Dependencies point one way: this module uses the aggregates, none of
//! them uses it. [`payloads`], [`projections`], [`oid`] and [`kinds`] are
//! the paths callers name the aggregates' payloads, records, OID minting
//! and kind names by.
//!
//! Payload schemas, the kind table and the separation-of-duties rules are
//! written down in `docs/DOMAIN.md`.

pub mod auto_verify;
pub mod deadlines;
pub mod evidence_query;
pub mod gateway;
pub mod oid;
pub mod payloads;
pub mod projections;
pub mod query;
pub mod reproduce;
pub mod retention_service;
pub mod service;
pub mod subscriber;
pub mod verdict_import;

pub use crate::state::DomainState;
pub use projections::{
    ApprovalInfo, ApprovalState, OidRecord, OidRegistry, OidState, TaskState, VerdictStatus,
    VerdictsProjection,
};
pub use query::AsOf;
pub use service::{Docket, DocketOptions};
pub use subscriber::{Subscriber, Subscription};

/// Names of the task-scoped kinds (their one spelling is
/// [`crate::kind::names`]).
pub mod kinds {
    pub use crate::kind::names::{
        APPROVAL_DENIED, APPROVAL_GRANTED, APPROVAL_REQUESTED, CHECK_RECORDED, EVIDENCE_REGISTERED,
        EXECUTION_RECORDED, SUBMISSION_RECEIVED, TASK_REGISTERED, VERDICT_DEADLINE_PASSED,
        VERDICT_IMPORTED, VERDICT_ISSUED,
    };

    /// The task-scoped kinds: tasks, evidence, submissions, checks,
    /// verdicts, approvals.
    pub const ALL: [&str; 11] = [
        TASK_REGISTERED,
        EVIDENCE_REGISTERED,
        EXECUTION_RECORDED,
        SUBMISSION_RECEIVED,
        CHECK_RECORDED,
        VERDICT_ISSUED,
        VERDICT_IMPORTED,
        VERDICT_DEADLINE_PASSED,
        APPROVAL_REQUESTED,
        APPROVAL_GRANTED,
        APPROVAL_DENIED,
    ];
}
