//! The tasks aggregate: `task.registered` (the task contract) and the task
//! record every task-scoped statement folds into — the contract, who
//! submitted material, the attempts, the checks and verdict of the latest
//! attempt, approvals, the history of the verdict state and its digest.
//!
//! The record's parts are written by their own aggregates:
//! [`crate::oids`] (evidence), [`crate::verdicts`] (executions, submissions,
//! checks, verdicts) and [`crate::approvals`]; each calls
//! [`TaskState::record_change`] after a change of the verdict state. The
//! projection is `verdicts` (`{"tasks": {...}}`), canonical JSON.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use docket_verifier::TaskContract;
use docket_verifier::task::RetentionClass;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::kind::names;
use crate::schema::{Digest32, Hex32, classes, from_violations, task_key};

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
    type Err = LedgerError;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "pending" => Ok(VerdictStatus::Pending),
            "pass" => Ok(VerdictStatus::Pass),
            "fail" => Ok(VerdictStatus::Fail),
            other => Err(LedgerError::malformed(
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
    pub sha256: Hex32,
    /// Hex public key of the registering author.
    pub registered_by: Hex32,
    pub registered_at_ms: u64,
    /// Default retention class of the task's evidence.
    pub retention_class: String,
    /// `acceptance.required_checks`: a PASS needs each of them passed.
    pub required_checks: Vec<String>,
    /// `acceptance.required_evidence` (evidence type names).
    pub required_evidence: Vec<String>,
    /// `verdict_deadline`, Unix ms: when it passes with no verdict, the
    /// deadline sweeper records FAIL `verdict_missing`
    /// ([`crate::verdicts::imported`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_deadline_ms: Option<u64>,
}

/// One execution record of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionInfo {
    pub seq: u64,
    pub by: Hex32,
    pub status: String,
    pub exit_code: Option<i64>,
    pub evidence_hash: String,
    pub evidence_oids: Vec<String>,
}

/// One submission (attempt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmissionInfo {
    pub seq: u64,
    pub by: Hex32,
    pub at_ms: u64,
    /// `DONE`, `NEED_INPUT` or `FAILED` as the executor reported.
    pub status: String,
    /// SHA-256 (hex) of the submission payload.
    pub sha256: Hex32,
    pub evidence_oids: Vec<String>,
    /// The executor's `touched_oids` (seed 001), each a registered OID.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touched_oids: Vec<String>,
}

/// One check result for the latest submission (the latest record per name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckInfo {
    pub passed: bool,
    /// The `check.recorded` event, or the `verdict.issued` event that carried it.
    pub seq: u64,
    pub by: Hex32,
    pub submission_seq: u64,
}

/// The current verdict (for the latest submission).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictInfo {
    pub seq: u64,
    pub by: Hex32,
    pub at_ms: u64,
    /// `PASS` or `FAIL`.
    pub verdict: String,
    pub reason_code: Option<String>,
    pub fail_class: Option<String>,
    /// SHA-256 (hex) of the `scc.verdict.v1` payload.
    pub sha256: Hex32,
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
    pub requested_by: Hex32,
    pub actor: String,
    pub scope: String,
    pub mutation_mode: String,
    pub requested_at: String,
    /// Effective expiry, Unix ms (the grant's when it names one).
    pub expires_at_ms: Option<i64>,
    /// `requested`, `granted` or `denied` (never `expired` in the fold).
    pub state: ApprovalState,
    pub decided_seq: Option<u64>,
    pub decided_by: Option<Hex32>,
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
    pub kind: Cow<'static, str>,
    pub at_ms: u64,
    pub status: VerdictStatus,
    pub reason_code: Option<String>,
    /// Digest of the task's verdict state before the event; None for the
    /// registration that created it.
    pub before: Option<Digest32>,
    /// Digest after the event.
    pub after: Digest32,
}

/// Everything the ledger knows about one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskState {
    pub task_id: String,
    pub contract: ContractInfo,
    /// Hex keys that authored evidence, executions or submissions for the
    /// task: separation of duties bars them from its checks, verdicts and
    /// approvals.
    pub submitters: BTreeSet<Hex32>,
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
    /// SHA-256 of the verdict state ([`TaskState::digest`]).
    pub state_digest: Digest32,
}

/// Feeds the task-state digest preimage (docs/DOMAIN.md, "Verdict state
/// digest"): big-endian fixed-width integers, strings as a u64 length and
/// their UTF-8 bytes, options as a 0/1 byte then the value. Writes go
/// through a buffer on the stack, handed to the hasher when full (many
/// small hasher updates cost more than the hashing; a heap buffer costs an
/// allocation per digest).
struct Preimage {
    hasher: Sha256,
    buf: [u8; 512],
    len: usize,
}

impl Preimage {
    fn new() -> Self {
        Preimage {
            hasher: Sha256::new(),
            buf: [0; 512],
            len: 0,
        }
    }
    fn put(&mut self, bytes: &[u8]) {
        if self.len + bytes.len() > self.buf.len() {
            self.hasher.update(&self.buf[..self.len]);
            self.len = 0;
            if bytes.len() > self.buf.len() {
                self.hasher.update(bytes);
                return;
            }
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
    fn finish(mut self) -> Digest32 {
        self.hasher.update(&self.buf[..self.len]);
        Hex32(self.hasher.finalize().into())
    }
    fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }
    fn u64(&mut self, v: u64) {
        self.put(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.put(&v.to_be_bytes());
    }
    fn bytes32(&mut self, b: &Hex32) {
        self.put(&b.0);
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.put(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
        }
    }
}

/// Domain separator of the task-state digest.
pub const TASK_STATE_DIGEST_PREFIX: &[u8] = b"docket/v1/task-state\0";

impl TaskState {
    /// SHA-256 of the verdict state: task id, contract digest, status,
    /// submission sequence numbers, checks of the latest submission, current
    /// verdict and approvals, in the byte layout of docs/DOMAIN.md.
    pub fn digest(&self) -> Digest32 {
        let mut p = Preimage::new();
        p.put(TASK_STATE_DIGEST_PREFIX);
        p.str(&self.task_id);
        p.bytes32(&self.contract.sha256);
        p.u8(match self.status {
            VerdictStatus::Pending => 0,
            VerdictStatus::Pass => 1,
            VerdictStatus::Fail => 2,
        });
        p.u64(self.submissions.len() as u64);
        for s in &self.submissions {
            p.u64(s.seq);
        }
        p.u64(self.checks.len() as u64);
        for (name, c) in &self.checks {
            p.str(name);
            p.u8(u8::from(c.passed));
            p.u64(c.seq);
            p.bytes32(&c.by);
            p.u64(c.submission_seq);
        }
        match &self.verdict {
            None => p.u8(0),
            Some(v) => {
                p.u8(1);
                p.u64(v.seq);
                p.bytes32(&v.by);
                p.u64(v.at_ms);
                p.str(&v.verdict);
                p.opt_str(v.reason_code.as_deref());
                p.opt_str(v.fail_class.as_deref());
                p.bytes32(&v.sha256);
                p.u64(v.submission_seq);
                p.u64(v.evidence_oids.len() as u64);
                for o in &v.evidence_oids {
                    p.str(o);
                }
            }
        }
        p.u64(self.approvals.len() as u64);
        for a in self.approvals.values() {
            p.u64(a.request_seq);
            p.bytes32(&a.requested_by);
            p.str(&a.actor);
            p.str(&a.scope);
            p.str(&a.mutation_mode);
            p.str(&a.requested_at);
            match a.expires_at_ms {
                None => p.u8(0),
                Some(t) => {
                    p.u8(1);
                    p.i64(t);
                }
            }
            p.u8(match a.state {
                ApprovalState::Requested => 0,
                ApprovalState::Granted => 1,
                ApprovalState::Denied => 2,
                ApprovalState::Expired => 3,
            });
            p.opt_u64(a.decided_seq);
            match &a.decided_by {
                None => p.u8(0),
                Some(k) => {
                    p.u8(1);
                    p.bytes32(k);
                }
            }
            p.opt_str(a.decided_actor.as_deref());
            p.opt_str(a.note.as_deref());
            p.opt_str(a.reason.as_deref());
        }
        p.finish()
    }

    /// The latest submission.
    pub fn latest_submission(&self) -> Option<&SubmissionInfo> {
        self.submissions.last()
    }

    /// Appends one entry to the history after `event` changed the verdict
    /// state (recomputing the digest).
    pub fn record_change(&mut self, event: &Event) {
        let before = Some(self.state_digest);
        let after = self.digest();
        self.state_digest = after;
        self.history.push(VerdictChange {
            seq: event.seq,
            kind: static_kind(&event.kind),
            at_ms: event.recorded_at_ms,
            status: self.status,
            reason_code: self.verdict.as_ref().and_then(|v| v.reason_code.clone()),
            before,
            after,
        });
    }

    /// Separation of duties: a key that authored the task's evidence,
    /// executions or submissions may not `action` it (check, judge,
    /// approve).
    pub fn check_not_submitter(&self, stmt: &Statement, action: &str) -> Result<()> {
        if self.submitters.contains(&Hex32(stmt.author)) {
            return Err(LedgerError::denied(
                &stmt.kind,
                &stmt.author,
                format!(
                    "separation of duties: this key submitted material for task {} and cannot {action} it",
                    self.task_id
                ),
            ));
        }
        Ok(())
    }
}

/// The static name of a known kind (history entries borrow it).
fn static_kind(kind: &str) -> Cow<'static, str> {
    names::ALL
        .iter()
        .find(|k| **k == kind)
        .map_or_else(|| Cow::Owned(kind.to_string()), |k| Cow::Borrowed(*k))
}

/// Verdict state per task (snapshot `verdicts`).
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

    /// The task a statement names (any UUID spelling); `NotFound` naming it
    /// as written.
    pub fn task(&self, raw_id: &str) -> Result<&TaskState> {
        self.tasks
            .get(task_key(raw_id).as_ref())
            .ok_or_else(|| LedgerError::NotFound {
                what: format!("task {raw_id}"),
            })
    }

    /// The task an admitted event names, for its fold: a missing task means
    /// the event is not what was admitted (`Corrupt`).
    pub fn task_for_fold(&mut self, raw_id: &str, event: &Event) -> Result<&mut TaskState> {
        self.tasks
            .get_mut(task_key(raw_id).as_ref())
            .ok_or_else(|| {
                LedgerError::corrupt(
                    format!("event {}", event.seq),
                    format!(
                        "{} names task {raw_id}, which is not registered",
                        event.kind
                    ),
                )
            })
    }
}

// ------------------------------------------------------------ task.registered

/// Decodes a `task.registered` payload: a task contract, every rule of
/// seed 000 §1 (`TaskContract::parse`).
pub fn decode(payload: &[u8]) -> Result<TaskContract> {
    TaskContract::parse(payload).map_err(|vs| from_violations("task.registered", vs))
}

/// The canonical task id of a contract.
pub fn task_id(contract: &TaskContract) -> String {
    contract.task_id.to_string()
}

/// The default retention class a contract gives its evidence.
pub fn retention_class(contract: &TaskContract) -> &'static str {
    match contract.retention_class {
        None | Some(RetentionClass::Routine) => classes::ROUTINE,
        Some(RetentionClass::HighImpact) => classes::HIGH_IMPACT,
        Some(RetentionClass::Pinned) => classes::PINNED,
    }
}

/// `task.registered`: the task id is not registered yet.
pub fn admit(tasks: &VerdictsProjection, contract: &TaskContract) -> Result<()> {
    let id = task_id(contract);
    if let Some(t) = tasks.tasks.get(&id) {
        return Err(LedgerError::AlreadyExists {
            what: format!("task {id} (registered at seq {})", t.contract.seq),
        });
    }
    Ok(())
}

/// Folds `task.registered`: a new task record, PENDING, with the first
/// history entry.
pub fn fold(tasks: &mut VerdictsProjection, event: &Event, contract: &TaskContract) -> Result<()> {
    let task_id = task_id(contract);
    if let Some(t) = tasks.tasks.get(&task_id) {
        return Err(LedgerError::corrupt(
            format!("event {}", event.seq),
            format!(
                "task {task_id} was already registered at seq {}",
                t.contract.seq
            ),
        ));
    }
    let mut task = TaskState {
        task_id: task_id.clone(),
        contract: ContractInfo {
            seq: event.seq,
            sha256: Hex32::sha256(&event.payload),
            registered_by: Hex32(event.author),
            registered_at_ms: event.recorded_at_ms,
            retention_class: retention_class(contract).to_string(),
            required_checks: contract.acceptance.required_checks.clone(),
            required_evidence: contract
                .acceptance
                .required_evidence
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
            verdict_deadline_ms: contract
                .verdict_deadline
                .as_deref()
                .and_then(crate::schema::rfc3339_ms)
                .map(|ms| u64::try_from(ms).unwrap_or(0)),
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
        state_digest: Digest32::default(),
    };
    task.state_digest = task.digest();
    task.history.push(VerdictChange {
        seq: event.seq,
        kind: static_kind(&event.kind),
        at_ms: event.recorded_at_ms,
        status: VerdictStatus::Pending,
        reason_code: None,
        before: None,
        after: task.state_digest,
    });
    tasks.tasks.insert(task_id, task);
    Ok(())
}
