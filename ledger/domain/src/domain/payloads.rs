//! The payloads callers build statements with, and the helpers to build
//! them, under one path. Each is defined by its aggregate:
//! [`crate::oids`] (`evidence.registered`), [`crate::verdicts`]
//! (`check.recorded`, submissions), [`crate::approvals`], and the shared
//! vocabulary [`crate::schema`] (task ids, times, validators). Seed
//! documents (task contracts, `scc.submit.v1`, `scc.verdict.v1`, execution
//! records) are `docket-verifier`'s types.

pub use crate::approvals::{ApprovalDecided, ApprovalRequested};
pub use crate::oids::{EvidenceRegistered, guess_evidence_type, guess_media_type};
pub use crate::schema::{
    RETENTION_CLASSES, canonical_task_id, hex_lower, is_artifact_name, is_check_name,
    is_media_type, is_sha256_hex, ms_to_rfc3339, rfc3339_ms, task_key,
};
pub use crate::verdicts::{CheckRecorded, submission_payload};
