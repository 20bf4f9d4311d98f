//! The records of the task and evidence projections under one path. Each
//! is defined by its aggregate: [`crate::tasks`] (the task record: contract,
//! attempts, checks, verdict, approvals, history, digest) and
//! [`crate::oids`] (the OID registry); [`crate::projection`] lists every
//! projection by snapshot name.

pub use crate::oids::{OidRecord, OidRegistry, OidState, Removal, default_artifact_name};
pub use crate::schema::{Digest32, Hex32};
pub use crate::state::DomainState;
pub use crate::tasks::{
    ApprovalInfo, ApprovalState, CheckInfo, ContractInfo, ExecutionInfo, SubmissionInfo,
    TASK_STATE_DIGEST_PREFIX, TaskState, VerdictChange, VerdictInfo, VerdictStatus,
    VerdictsProjection,
};
