//! The one spelling of every kind the ledger knows. [`super::Kind`] parses
//! and prints these; callers that build statements name kinds with them.

/// The genesis event (the ledger key, sequence 0 only).
pub const GENESIS: &str = "ledger.genesis";
pub const KEY_REGISTERED: &str = "key.registered";
pub const KEY_REVOKED: &str = "key.revoked";
pub const TASK_REGISTERED: &str = "task.registered";
pub const EVIDENCE_REGISTERED: &str = "evidence.registered";
pub const EXECUTION_RECORDED: &str = "execution.recorded";
pub const SUBMISSION_RECEIVED: &str = "submission.received";
pub const CHECK_RECORDED: &str = "check.recorded";
pub const VERDICT_ISSUED: &str = "verdict.issued";
/// A seed 001 verifier `verdict.json` recorded with its evidence (verifier).
pub const VERDICT_IMPORTED: &str = "verdict.imported";
/// A task's verdict deadline passed with no verdict: FAIL `verdict_missing` (verifier).
pub const VERDICT_DEADLINE_PASSED: &str = "verdict.deadline_passed";
pub const APPROVAL_REQUESTED: &str = "approval.requested";
pub const APPROVAL_GRANTED: &str = "approval.granted";
pub const APPROVAL_DENIED: &str = "approval.denied";
/// The retention policy (admin).
pub const RETENTION_POLICY_SET: &str = "retention.policy_set";
/// Pin an OID: its content is kept until unpinned (custodian).
pub const RETENTION_PINNED: &str = "retention.pinned";
/// Unpin an OID (custodian).
pub const RETENTION_UNPINNED: &str = "retention.unpinned";
/// Move an OID to another class (custodian).
pub const RETENTION_RECLASSIFIED: &str = "retention.reclassified";
/// Replace an OID's content by a redacted version (custodian).
pub const RETENTION_REDACTED: &str = "retention.redacted";
/// One OID's content expired (custodian).
pub const EVIDENCE_EXPIRED: &str = "evidence.expired";
/// A sweep: the time its decisions are made at (custodian).
pub const RETENTION_SWEEP: &str = "retention.sweep";

/// Prefix of custom extension kinds: opaque payloads any non-auditor key
/// may append (the raw `docket log append` path and benchmarks use it).
pub const EXTENSION_PREFIX: &str = "x-";

/// Every known kind, in table order.
pub const ALL: [&str; 21] = [
    GENESIS,
    KEY_REGISTERED,
    KEY_REVOKED,
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
    RETENTION_POLICY_SET,
    RETENTION_PINNED,
    RETENTION_UNPINNED,
    RETENTION_RECLASSIFIED,
    RETENTION_REDACTED,
    EVIDENCE_EXPIRED,
    RETENTION_SWEEP,
];
