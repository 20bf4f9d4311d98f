//! The domain projections: verdict state per task and the OID registry.
//!
//! Both are pure folds over admitted events (no clock, no disk) with
//! `BTreeMap`s throughout, so their snapshot bytes are canonical JSON and a
//! rebuilt projection compares byte for byte with a stored snapshot.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::event::Event;

use super::kinds;
use super::oid;
use super::payloads::{
    ApprovalDecided, ApprovalRequested, CheckRecorded, EvidenceRegistered, ExecutionExtra,
    SubmissionExtra, TaskExtra, VerdictExtra, rfc3339_ms, task_key,
};

/// Verdict status of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictStatus {
    /// No verdict for the latest submission (or no submission yet).
    Pending,
    Pass,
    Fail,
}

impl VerdictStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictStatus::Pending => "pending",
            VerdictStatus::Pass => "pass",
            VerdictStatus::Fail => "fail",
        }
    }
}

impl std::str::FromStr for VerdictStatus {
    type Err = crate::LedgerError;
    fn from_str(s: &str) -> crate::Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "pending" => Ok(VerdictStatus::Pending),
            "pass" => Ok(VerdictStatus::Pass),
            "fail" => Ok(VerdictStatus::Fail),
            other => Err(crate::LedgerError::malformed(
                "verdict status",
                format!("{other:?} is not pass, fail or pending"),
            )),
        }
    }
}

impl std::fmt::Display for VerdictStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The registered contract, as much of it as admission and queries need
/// (the full contract is the payload of event `seq`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractInfo {
    /// Sequence number of the `task.registered` event.
    pub seq: u64,
    /// SHA-256 (hex) of the contract payload bytes.
    pub sha256: String,
    /// Hex public key of the registering author.
    pub registered_by: String,
    pub registered_at_ms: u64,
    /// Default retention class of the task's evidence.
    pub retention_class: String,
    /// `acceptance.required_checks`: a PASS needs each of them passed.
    pub required_checks: Vec<String>,
    /// `acceptance.required_evidence` (evidence type names).
    pub required_evidence: Vec<String>,
}

/// One execution record of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionInfo {
    pub seq: u64,
    pub by: String,
    pub status: String,
    pub exit_code: Option<i64>,
    pub evidence_hash: String,
    pub evidence_oids: Vec<String>,
}

/// One submission (attempt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmissionInfo {
    pub seq: u64,
    pub by: String,
    pub at_ms: u64,
    /// `DONE`, `NEED_INPUT` or `FAILED` as the executor reported.
    pub status: String,
    /// SHA-256 (hex) of the submission payload.
    pub sha256: String,
    pub evidence_oids: Vec<String>,
}

/// One check result for the latest submission (the latest record per name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckInfo {
    pub passed: bool,
    /// The `check.recorded` event, or the `verdict.issued` event that carried it.
    pub seq: u64,
    pub by: String,
    pub submission_seq: u64,
}

/// The current verdict (for the latest submission).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictInfo {
    pub seq: u64,
    pub by: String,
    pub at_ms: u64,
    /// `PASS` or `FAIL`.
    pub verdict: String,
    pub reason_code: Option<String>,
    pub fail_class: Option<String>,
    /// SHA-256 (hex) of the `scc.verdict.v1` payload.
    pub sha256: String,
    pub submission_seq: u64,
    pub evidence_oids: Vec<String>,
}

/// Stored state of an approval request (`expired` is computed at read time
/// from `expires_at_ms`, see [`ApprovalInfo::state_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    Requested,
    Granted,
    Denied,
    Expired,
}

impl ApprovalState {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Requested => "requested",
            ApprovalState::Granted => "granted",
            ApprovalState::Denied => "denied",
            ApprovalState::Expired => "expired",
        }
    }
}

/// One approval request and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalInfo {
    pub request_seq: u64,
    pub requested_by: String,
    pub actor: String,
    pub scope: String,
    pub mutation_mode: String,
    pub requested_at: String,
    /// Effective expiry, Unix ms (the grant's when it names one).
    pub expires_at_ms: Option<i64>,
    /// `requested`, `granted` or `denied` (never `expired` in the fold).
    pub state: ApprovalState,
    pub decided_seq: Option<u64>,
    pub decided_by: Option<String>,
    pub decided_actor: Option<String>,
    /// The request's note.
    pub note: Option<String>,
    /// The decision's reason.
    pub reason: Option<String>,
}

impl ApprovalInfo {
    /// The state at ledger time `now_ms`: requested or granted past expiry
    /// reads as `expired`.
    pub fn state_at(&self, now_ms: u64) -> ApprovalState {
        match (self.state, self.expires_at_ms) {
            (ApprovalState::Requested | ApprovalState::Granted, Some(exp))
                if i128::from(now_ms) > i128::from(exp) =>
            {
                ApprovalState::Expired
            }
            (s, _) => s,
        }
    }
}

/// One change of a task's verdict state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictChange {
    pub seq: u64,
    pub kind: String,
    pub at_ms: u64,
    pub status: VerdictStatus,
    pub reason_code: Option<String>,
    /// Digest of the task's verdict state before the event; None for the
    /// registration that created it.
    pub before: Option<String>,
    /// Digest after the event.
    pub after: String,
}

/// Everything the ledger knows about one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskState {
    pub task_id: String,
    pub contract: ContractInfo,
    /// Hex keys that authored evidence, executions or submissions for the
    /// task: separation of duties bars them from its checks, verdicts and
    /// approvals.
    pub submitters: BTreeSet<String>,
    /// OIDs registered for the task, in registration order.
    pub evidence: Vec<String>,
    pub executions: Vec<ExecutionInfo>,
    /// Every attempt, oldest first.
    pub submissions: Vec<SubmissionInfo>,
    /// Checks of the latest submission, by name.
    pub checks: BTreeMap<String, CheckInfo>,
    /// Current verdict of the latest submission.
    pub verdict: Option<VerdictInfo>,
    pub status: VerdictStatus,
    /// Approval requests by request sequence number.
    pub approvals: BTreeMap<u64, ApprovalInfo>,
    /// Every change of the verdict state, oldest first.
    pub history: Vec<VerdictChange>,
    /// SHA-256 (hex) of the verdict state ([`TaskState::digest`]).
    pub state_digest: String,
}

/// The part of a task's state its digest covers (see docs/DOMAIN.md).
#[derive(Serialize)]
struct DigestView<'a> {
    task_id: &'a str,
    contract_sha256: &'a str,
    status: VerdictStatus,
    submissions: Vec<u64>,
    checks: &'a BTreeMap<String, CheckInfo>,
    verdict: &'a Option<VerdictInfo>,
    approvals: &'a BTreeMap<u64, ApprovalInfo>,
}

impl TaskState {
    /// SHA-256 (hex) of the canonical JSON of the verdict state: task id,
    /// contract digest, status, submission sequence numbers, checks of the
    /// latest submission, current verdict and approvals.
    pub fn digest(&self) -> String {
        let view = DigestView {
            task_id: &self.task_id,
            contract_sha256: &self.contract.sha256,
            status: self.status,
            submissions: self.submissions.iter().map(|s| s.seq).collect(),
            checks: &self.checks,
            verdict: &self.verdict,
            approvals: &self.approvals,
        };
        // Invariant: the view holds strings, integers, bools and maps with
        // string or integer keys; serde_json cannot fail on them.
        let bytes = serde_json::to_vec(&view).expect("digest view serialises");
        hex::encode(Sha256::digest(&bytes))
    }

    /// The latest submission.
    pub fn latest_submission(&self) -> Option<&SubmissionInfo> {
        self.submissions.last()
    }

    fn record_change(&mut self, event: &Event) {
        let before = Some(std::mem::take(&mut self.state_digest));
        let after = self.digest();
        self.state_digest = after.clone();
        self.history.push(VerdictChange {
            seq: event.seq,
            kind: event.kind.clone(),
            at_ms: event.recorded_at_ms,
            status: self.status,
            reason_code: self.verdict.as_ref().and_then(|v| v.reason_code.clone()),
            before,
            after,
        });
    }
}

/// Verdict state per task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictsProjection {
    /// Canonical task id → state.
    pub tasks: BTreeMap<String, TaskState>,
}

impl VerdictsProjection {
    pub const NAME: &'static str = "verdicts";

    /// Tasks whose current status is `status`.
    pub fn with_status(&self, status: VerdictStatus) -> impl Iterator<Item = &TaskState> {
        self.tasks.values().filter(move |t| t.status == status)
    }
}

/// Lifecycle of an OID's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OidState {
    Live,
    Expired,
    Redacted,
}

impl OidState {
    pub fn as_str(self) -> &'static str {
        match self {
            OidState::Live => "live",
            OidState::Expired => "expired",
            OidState::Redacted => "redacted",
        }
    }
}

/// Which event removed an OID's original content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removal {
    pub seq: u64,
    pub at_ms: u64,
    pub reason: String,
    /// For a redaction: SHA-256 (hex) and size of the redacted content.
    pub redacted_sha256: Option<String>,
    pub redacted_size: Option<u64>,
}

/// One OID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OidRecord {
    /// SHA-256 (hex) of the registered content.
    pub sha256: String,
    pub size: u64,
    pub evidence_type: String,
    pub media_type: String,
    pub task_id: String,
    pub retention_class: String,
    /// Name as registered (None when the statement named none).
    pub name: Option<String>,
    /// The name the verdict engine sees: `name`, else the type name for the
    /// four seed files, else `evidence/<OID>`.
    pub artifact_name: String,
    pub registered_seq: u64,
    pub registered_at_ms: u64,
    pub registered_by: String,
    pub state: OidState,
    pub pinned: bool,
    pub removal: Option<Removal>,
}

/// OID → evidence record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OidRegistry {
    pub oids: BTreeMap<String, OidRecord>,
}

impl OidRegistry {
    pub const NAME: &'static str = "oids";
}

/// The artifact name an OID gets when its statement names none.
pub fn default_artifact_name(evidence_type: &str, oid: &str) -> String {
    match evidence_type {
        "patch.diff" | "selftest.log" | "report.md" | "submit.json" => evidence_type.to_string(),
        _ => format!("evidence/{oid}"),
    }
}

/// Every domain projection, folded together (they depend on each other:
/// an OID takes its task's retention class by default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainState {
    pub verdicts: VerdictsProjection,
    pub oids: OidRegistry,
}

fn sha_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

impl DomainState {
    /// Folds one admitted event. Never fails: a payload that does not decode
    /// (impossible after admission; possible only in a tampered log, which
    /// replay reports separately) is ignored.
    pub fn apply(&mut self, event: &Event) {
        match event.kind.as_str() {
            kinds::TASK_REGISTERED => self.apply_task(event),
            kinds::EVIDENCE_REGISTERED => self.apply_evidence(event),
            kinds::EXECUTION_RECORDED => self.apply_execution(event),
            kinds::SUBMISSION_RECEIVED => self.apply_submission(event),
            kinds::CHECK_RECORDED => self.apply_check(event),
            kinds::VERDICT_ISSUED => self.apply_verdict(event),
            kinds::APPROVAL_REQUESTED => self.apply_approval_request(event),
            kinds::APPROVAL_GRANTED | kinds::APPROVAL_DENIED => self.apply_approval_decision(event),
            _ => {}
        }
    }

    fn apply_task(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<TaskExtra>(&event.payload) else {
            return;
        };
        let task_id = task_key(&p.task_id);
        if self.verdicts.tasks.contains_key(&task_id) {
            return;
        }
        let acceptance = p.acceptance.unwrap_or_default();
        let mut task = TaskState {
            task_id: task_id.clone(),
            contract: ContractInfo {
                seq: event.seq,
                sha256: sha_hex(&event.payload),
                registered_by: hex::encode(event.author),
                registered_at_ms: event.recorded_at_ms,
                retention_class: p.retention_class.unwrap_or_else(|| "routine".into()),
                required_checks: acceptance.required_checks.unwrap_or_default(),
                required_evidence: acceptance.required_evidence.unwrap_or_default(),
            },
            submitters: BTreeSet::new(),
            evidence: Vec::new(),
            executions: Vec::new(),
            submissions: Vec::new(),
            checks: BTreeMap::new(),
            verdict: None,
            status: VerdictStatus::Pending,
            approvals: BTreeMap::new(),
            history: Vec::new(),
            state_digest: String::new(),
        };
        task.state_digest = task.digest();
        task.history.push(VerdictChange {
            seq: event.seq,
            kind: event.kind.clone(),
            at_ms: event.recorded_at_ms,
            status: VerdictStatus::Pending,
            reason_code: None,
            before: None,
            after: task.state_digest.clone(),
        });
        self.verdicts.tasks.insert(task_id, task);
    }

    fn apply_evidence(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<EvidenceRegistered>(&event.payload) else {
            return;
        };
        let task_id = task_key(&p.task_id);
        let Some(task) = self.verdicts.tasks.get_mut(&task_id) else {
            return;
        };
        let oid = oid::of_event(event);
        let author = hex::encode(event.author);
        task.submitters.insert(author.clone());
        task.evidence.push(oid.clone());
        let retention_class = p
            .retention_class
            .clone()
            .unwrap_or_else(|| task.contract.retention_class.clone());
        let artifact_name = p
            .name
            .clone()
            .unwrap_or_else(|| default_artifact_name(&p.evidence_type, &oid));
        self.oids.oids.insert(
            oid,
            OidRecord {
                sha256: p.sha256,
                size: p.size,
                evidence_type: p.evidence_type,
                media_type: p.media_type,
                task_id,
                pinned: retention_class == "pinned",
                retention_class,
                name: p.name,
                artifact_name,
                registered_seq: event.seq,
                registered_at_ms: event.recorded_at_ms,
                registered_by: author,
                state: OidState::Live,
                removal: None,
            },
        );
    }

    fn apply_execution(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<ExecutionExtra>(&event.payload) else {
            return;
        };
        let Some(task) = self.verdicts.tasks.get_mut(&task_key(&p.task_id)) else {
            return;
        };
        let by = hex::encode(event.author);
        task.submitters.insert(by.clone());
        task.executions.push(ExecutionInfo {
            seq: event.seq,
            by,
            status: p.status,
            exit_code: p.exit_code,
            evidence_hash: p.evidence_hash.to_ascii_lowercase(),
            evidence_oids: p.evidence_oids,
        });
    }

    fn apply_submission(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<SubmissionExtra>(&event.payload) else {
            return;
        };
        let Some(task) = self.verdicts.tasks.get_mut(&task_key(&p.task_id)) else {
            return;
        };
        let by = hex::encode(event.author);
        task.submitters.insert(by.clone());
        task.submissions.push(SubmissionInfo {
            seq: event.seq,
            by,
            at_ms: event.recorded_at_ms,
            status: p.status,
            sha256: sha_hex(&event.payload),
            evidence_oids: p.evidence_oids,
        });
        // A new attempt has no checks and no verdict yet: PENDING.
        task.checks.clear();
        task.verdict = None;
        task.status = VerdictStatus::Pending;
        task.record_change(event);
    }

    fn apply_check(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<CheckRecorded>(&event.payload) else {
            return;
        };
        let Some(task) = self.verdicts.tasks.get_mut(&task_key(&p.task_id)) else {
            return;
        };
        let Some(latest) = task.latest_submission().map(|s| s.seq) else {
            return;
        };
        task.checks.insert(
            p.name,
            CheckInfo {
                passed: p.passed,
                seq: event.seq,
                by: hex::encode(event.author),
                submission_seq: p.submission_seq.unwrap_or(latest),
            },
        );
        task.record_change(event);
    }

    fn apply_verdict(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<VerdictExtra>(&event.payload) else {
            return;
        };
        let Some(task) = self.verdicts.tasks.get_mut(&task_key(&p.task_id)) else {
            return;
        };
        let Some(latest) = task.latest_submission().map(|s| s.seq) else {
            return;
        };
        let by = hex::encode(event.author);
        let submission_seq = p.submission_seq.unwrap_or(latest);
        // The checks a verdict carries count as recorded by it, unless a
        // check.recorded event already holds that name with the same result.
        for (name, passed) in &p.checks {
            let same = task.checks.get(name).is_some_and(|c| c.passed == *passed);
            if !same {
                task.checks.insert(
                    name.clone(),
                    CheckInfo {
                        passed: *passed,
                        seq: event.seq,
                        by: by.clone(),
                        submission_seq,
                    },
                );
            }
        }
        let pass = p.verdict == "PASS";
        task.status = if pass {
            VerdictStatus::Pass
        } else {
            VerdictStatus::Fail
        };
        task.verdict = Some(VerdictInfo {
            seq: event.seq,
            by,
            at_ms: event.recorded_at_ms,
            verdict: if pass { "PASS".into() } else { "FAIL".into() },
            reason_code: p.reason_code,
            fail_class: p.fail_class,
            sha256: sha_hex(&event.payload),
            submission_seq,
            evidence_oids: p.evidence_oids,
        });
        task.record_change(event);
    }

    fn apply_approval_request(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<ApprovalRequested>(&event.payload) else {
            return;
        };
        let Some(task) = self.verdicts.tasks.get_mut(&task_key(&p.task_id)) else {
            return;
        };
        let expires_at_ms = p
            .expires_at
            .as_deref()
            .and_then(rfc3339_ms)
            .and_then(|t| i64::try_from(t).ok());
        task.approvals.insert(
            event.seq,
            ApprovalInfo {
                request_seq: event.seq,
                requested_by: hex::encode(event.author),
                actor: p.actor,
                scope: p.scope,
                mutation_mode: p.mutation_mode,
                requested_at: p.timestamp,
                expires_at_ms,
                state: ApprovalState::Requested,
                decided_seq: None,
                decided_by: None,
                decided_actor: None,
                note: p.note,
                reason: None,
            },
        );
        task.record_change(event);
    }

    fn apply_approval_decision(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<ApprovalDecided>(&event.payload) else {
            return;
        };
        let Some(task) = self.verdicts.tasks.get_mut(&task_key(&p.task_id)) else {
            return;
        };
        let Some(a) = task.approvals.get_mut(&p.request_seq) else {
            return;
        };
        let granted = event.kind == kinds::APPROVAL_GRANTED;
        a.state = if granted {
            ApprovalState::Granted
        } else {
            ApprovalState::Denied
        };
        if granted
            && let Some(exp) = p
                .expires_at
                .as_deref()
                .and_then(rfc3339_ms)
                .and_then(|t| i64::try_from(t).ok())
        {
            a.expires_at_ms = Some(exp);
        }
        a.decided_seq = Some(event.seq);
        a.decided_by = Some(hex::encode(event.author));
        a.decided_actor = Some(p.actor);
        a.reason = p.reason;
        task.record_change(event);
    }
}
