//! The domain projections: verdict state per task and the OID registry.
//!
//! Both are pure folds over admitted events (no clock, no disk) with
//! `BTreeMap`s throughout, so their snapshot bytes are canonical JSON and a
//! rebuilt projection compares byte for byte with a stored snapshot.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::event::Event;

use super::kinds;
use super::oid;
use super::payloads::{
    ApprovalRequested, CheckExtra, DecisionExtra, EvidenceRegistered, ExecutionExtra,
    SubmissionExtra, TaskExtra, VerdictExtra, hex_lower, rfc3339_ms, task_key,
};

/// 32 raw bytes (a SHA-256 digest or an ed25519 public key), serialised as
/// 64 lower-case hex digits. Byte order and hex order agree, so maps and
/// sets keyed by it sort the same either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Hex32(pub [u8; 32]);

/// A SHA-256 digest.
pub type Digest32 = Hex32;

impl Hex32 {
    pub fn to_hex(&self) -> String {
        hex_lower(&self.0)
    }
}

impl std::fmt::Display for Hex32 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Hex32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Hex32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        let bytes = hex::decode(s.as_ref()).map_err(serde::de::Error::custom)?;
        let arr: [u8; 32] = bytes
            .try_into()
            .map_err(|_| serde::de::Error::custom("a digest is 32 bytes"))?;
        Ok(Hex32(arr))
    }
}

/// The static name of a domain kind (history entries borrow it).
fn static_kind(kind: &str) -> Cow<'static, str> {
    kinds::ALL
        .iter()
        .find(|k| **k == kind)
        .map_or_else(|| Cow::Owned(kind.to_string()), |k| Cow::Borrowed(*k))
}

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
/// their UTF-8 bytes, options as a 0/1 byte then the value.
struct Preimage(Sha256);

impl Preimage {
    fn u8(&mut self, v: u8) {
        self.0.update([v]);
    }
    fn u64(&mut self, v: u64) {
        self.0.update(v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.update(v.to_be_bytes());
    }
    fn bytes32(&mut self, b: &Hex32) {
        self.0.update(b.0);
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.update(s.as_bytes());
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
        let mut p = Preimage(Sha256::new());
        p.0.update(TASK_STATE_DIGEST_PREFIX);
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
        Hex32(p.0.finalize().into())
    }

    /// The latest submission.
    pub fn latest_submission(&self) -> Option<&SubmissionInfo> {
        self.submissions.last()
    }

    fn record_change(&mut self, event: &Event) {
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

impl Removal {
    /// " by event SEQ at TIME (REASON)": how errors name the removal.
    pub fn describe(&self) -> String {
        format!(
            " by event {} at {} ({})",
            self.seq,
            super::payloads::ms_to_rfc3339(self.at_ms),
            self.reason
        )
    }
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
    pub registered_by: Hex32,
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

fn sha(b: &[u8]) -> Hex32 {
    Hex32(Sha256::digest(b).into())
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
        let task_id = task_key(&p.task_id).into_owned();
        if self.verdicts.tasks.contains_key(&task_id) {
            return;
        }
        let acceptance = p.acceptance.unwrap_or_default();
        let mut task = TaskState {
            task_id: task_id.clone(),
            contract: ContractInfo {
                seq: event.seq,
                sha256: sha(&event.payload),
                registered_by: Hex32(event.author),
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
        self.verdicts.tasks.insert(task_id, task);
    }

    fn apply_evidence(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<EvidenceRegistered>(&event.payload) else {
            return;
        };
        let Some(task) = self.verdicts.tasks.get_mut(task_key(&p.task_id).as_ref()) else {
            return;
        };
        let oid = oid::of_event(event);
        let author = Hex32(event.author);
        task.submitters.insert(author);
        task.evidence.push(oid.clone());
        let retention_class = p
            .retention_class
            .clone()
            .unwrap_or_else(|| task.contract.retention_class.clone());
        let artifact_name = p
            .name
            .clone()
            .unwrap_or_else(|| default_artifact_name(&p.evidence_type, &oid));
        let task_id = task.task_id.clone();
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

    fn task_mut(&mut self, raw_id: &str) -> Option<&mut TaskState> {
        self.verdicts.tasks.get_mut(task_key(raw_id).as_ref())
    }

    fn apply_execution(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<ExecutionExtra>(&event.payload) else {
            return;
        };
        let Some(task) = self.task_mut(&p.task_id) else {
            return;
        };
        let by = Hex32(event.author);
        task.submitters.insert(by);
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
        let Some(task) = self.task_mut(&p.task_id) else {
            return;
        };
        let by = Hex32(event.author);
        task.submitters.insert(by);
        task.submissions.push(SubmissionInfo {
            seq: event.seq,
            by,
            at_ms: event.recorded_at_ms,
            status: p.status,
            sha256: sha(&event.payload),
            evidence_oids: p.evidence_oids,
        });
        // A new attempt has no checks and no verdict yet: PENDING.
        task.checks.clear();
        task.verdict = None;
        task.status = VerdictStatus::Pending;
        task.record_change(event);
    }

    fn apply_check(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<CheckExtra>(&event.payload) else {
            return;
        };
        let Some(task) = self.task_mut(&p.task_id) else {
            return;
        };
        let Some(latest) = task.latest_submission().map(|s| s.seq) else {
            return;
        };
        let info = CheckInfo {
            passed: p.passed,
            seq: event.seq,
            by: Hex32(event.author),
            submission_seq: p.submission_seq.unwrap_or(latest),
        };
        match task.checks.get_mut(p.name.as_ref()) {
            Some(slot) => *slot = info,
            None => {
                task.checks.insert(p.name.into_owned(), info);
            }
        }
        task.record_change(event);
    }

    fn apply_verdict(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<VerdictExtra>(&event.payload) else {
            return;
        };
        let Some(task) = self.task_mut(&p.task_id) else {
            return;
        };
        let Some(latest) = task.latest_submission().map(|s| s.seq) else {
            return;
        };
        let by = Hex32(event.author);
        let submission_seq = p.submission_seq.unwrap_or(latest);
        // The checks a verdict carries count as recorded by it, unless a
        // check.recorded event already holds that name with the same result.
        for (name, passed) in &p.checks {
            let same = task
                .checks
                .get(name.as_ref())
                .is_some_and(|c| c.passed == *passed);
            if !same {
                task.checks.insert(
                    name.clone().into_owned(),
                    CheckInfo {
                        passed: *passed,
                        seq: event.seq,
                        by,
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
            sha256: sha(&event.payload),
            submission_seq,
            evidence_oids: p.evidence_oids,
        });
        task.record_change(event);
    }

    fn apply_approval_request(&mut self, event: &Event) {
        let Ok(p) = serde_json::from_slice::<ApprovalRequested>(&event.payload) else {
            return;
        };
        let Some(task) = self.task_mut(&p.task_id) else {
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
                requested_by: Hex32(event.author),
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
        let Ok(p) = serde_json::from_slice::<DecisionExtra>(&event.payload) else {
            return;
        };
        let Some(task) = self.task_mut(&p.task_id) else {
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
        a.decided_by = Some(Hex32(event.author));
        a.decided_actor = Some(p.actor);
        a.reason = p.reason;
        task.record_change(event);
    }
}
