//! The domain service: a [`Ledger`] plus its [`BlobStore`], for operations
//! that need the disk (evidence content) and for queries.
//!
//! Write paths:
//! - [`Docket::put_evidence`]: blob first (streamed, digest and size checked
//!   against the statement), then the `evidence.registered` append; the OID
//!   comes back with the receipt.
//! - [`Docket::submit`]: appends `submission.received`. The automatic
//!   verdict is not computed here: the auto-verify subscriber
//!   ([`super::auto_verify`]) judges every committed submission from its
//!   cursor, off the append path; `submit` waits (bounded by
//!   [`DocketOptions::auto_verify_wait`]) until it has handled this one, so
//!   callers still get the verdict in the response.
//! - everything else goes straight to [`Ledger::append`].
//!
//! Subscribers start when the service is created (after catching up on what
//! the last process owed) and stop with [`Docket::close`] or when the last
//! clone of the service is dropped.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use docket_verifier::TaskContract;
use docket_verifier::verdict::Verdict;
use serde::Serialize;

use crate::blobs::{BlobStore, PutOutcome, VerifiedReader, parse_digest};
use crate::error::{LedgerError, Result};
use crate::event::Statement;
use crate::keys::KeyRecord;
use crate::kind::names as kinds;
use crate::ledger::{InitOutcome, Ledger, LedgerOptions, Receipt};
use crate::oids::{self, EvidenceRegistered, OidRecord, OidState, Removal};
use crate::schema::task_key;
use crate::state::{AdmitContext, LedgerState};
use crate::tasks::{
    ApprovalInfo, ApprovalState, CheckInfo, TaskState, VerdictChange, VerdictInfo, VerdictStatus,
};

use super::auto_verify::{AutoVerify, Judgement, submission_task};
use super::query::{self, AsOf};
use super::retention_service::registration_guard;
use super::subscriber::Subscription;

pub use super::auto_verify::VerifyOutcome;

/// Tunables of the service.
#[derive(Debug, Clone)]
pub struct DocketOptions {
    /// Judge every committed submission with the verdict engine and append
    /// its checks and verdict (default on): the auto-verify subscriber.
    pub auto_verify: bool,
    /// How long [`Docket::submit`] waits for the auto-verify subscriber to
    /// judge the submission before answering without the verdict (which
    /// follows when the subscriber gets to it).
    pub auto_verify_wait: Duration,
    /// Largest evidence blob accepted (bytes).
    pub max_blob_size: u64,
    /// Most evidence bytes auto-verify loads for one submission; beyond it
    /// the remaining artifacts are reported unreadable (fail closed).
    pub max_verify_bytes: u64,
}

impl Default for DocketOptions {
    fn default() -> Self {
        Self {
            auto_verify: true,
            auto_verify_wait: Duration::from_secs(120),
            max_blob_size: 4 << 30,
            max_verify_bytes: 512 << 20,
        }
    }
}

/// Result of registering evidence.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceReceipt {
    /// The minted OID (for a duplicate statement, the first one).
    pub oid: String,
    pub receipt: Receipt,
    /// SHA-256 (hex) of the content.
    pub sha256: String,
    pub size: u64,
    /// The content was already in the blob store.
    pub blob_already_present: bool,
}

/// Result of a submission.
#[derive(Debug, Clone, Serialize)]
pub struct SubmitOutcome {
    /// Receipt of the `submission.received` event.
    pub receipt: Receipt,
    /// The verdict auto-verify issued (None when off, or when the verdict
    /// could not be appended, e.g. superseded by a newer submission).
    pub verdict: Option<Verdict>,
    /// Receipt of the `verdict.issued` event.
    pub verdict_receipt: Option<Receipt>,
    /// Why auto-verify appended no verdict, when it tried and failed (the
    /// submission itself is durable either way; the task stays PENDING).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_verify_error: Option<String>,
    /// The task's verdict state after all of it.
    pub state: TaskVerdictView,
}

/// One approval with its effective state at the time of the answer.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalView {
    #[serde(flatten)]
    pub info: ApprovalInfo,
    /// `requested`, `granted`, `denied` or `expired` at `as_of`.
    pub effective_state: ApprovalState,
}

/// A task's verdict state as queries return it.
#[derive(Debug, Clone, Serialize)]
pub struct TaskVerdictView {
    pub task_id: String,
    pub status: VerdictStatus,
    /// The current verdict (None when PENDING).
    pub verdict: Option<VerdictInfo>,
    /// The current `verdict.issued` payload (the `scc.verdict.v1` JSON).
    pub verdict_document: Option<serde_json::Value>,
    pub submissions: usize,
    pub latest_submission_seq: Option<u64>,
    /// Checks of the latest submission.
    pub checks: BTreeMap<String, CheckInfo>,
    pub approvals: Vec<ApprovalView>,
    pub state_digest: String,
    /// Last sequence number reflected (None on an empty log).
    pub as_of_seq: Option<u64>,
    /// Verdict history, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<VerdictChange>>,
}

/// A registered task with its contract.
#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    #[serde(flatten)]
    pub state: TaskState,
    /// The `task.registered` payload (the contract JSON), parsed.
    pub contract_document: serde_json::Value,
    #[serde(skip)]
    pub contract_bytes: Vec<u8>,
}

/// One OID.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceView {
    pub oid: String,
    #[serde(flatten)]
    pub record: OidRecord,
}

/// One key.
#[derive(Debug, Clone, Serialize)]
pub struct KeyView {
    pub public_key: String,
    #[serde(flatten)]
    pub record: KeyRecord,
}

/// The subscribers a service runs. Shared by every clone of the service;
/// stopped by [`Docket::close`] or when the last clone is dropped.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    /// The auto-verify subscriber and its runner.
    pub(crate) auto_verify: Option<(Arc<AutoVerify>, Subscription)>,
}

impl Subscriptions {
    fn stop(&self) {
        if let Some((_, s)) = &self.auto_verify {
            s.stop();
        }
    }
}

/// The domain service. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Docket {
    ledger: Ledger,
    blobs: Arc<BlobStore>,
    options: DocketOptions,
    subscriptions: Arc<Subscriptions>,
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

pub(crate) fn expect_kind(stmt: &Statement, kinds: &[&str]) -> Result<()> {
    if kinds.contains(&stmt.kind.as_str()) {
        Ok(())
    } else {
        Err(LedgerError::Invalid {
            what: "kind".into(),
            violations: vec![format!(
                "expected a statement of kind {}, got {}",
                kinds.join(" or "),
                stmt.kind
            )],
        })
    }
}

impl Docket {
    /// Wraps an open ledger; opens its blob store under `ledger.dir()/blobs`,
    /// finishes blob deletions a crash interrupted, and starts the
    /// subscribers (auto-verify, when on), each caught up on what the last
    /// process owed before this returns.
    pub fn new(ledger: Ledger, options: DocketOptions) -> Result<Self> {
        let blobs = Arc::new(BlobStore::open(ledger.dir())?);
        let mut docket = Self {
            ledger,
            blobs,
            options,
            subscriptions: Arc::new(Subscriptions::default()),
        };
        // Finish blob deletions a crash interrupted (retention).
        if let Err(e) = docket.finish_interrupted_removals() {
            tracing::warn!("retention: finishing interrupted deletions: {e}");
        }
        if docket.options.auto_verify && docket.ledger.failure().is_none() {
            let auto_verify = Arc::new(AutoVerify::default());
            // The runner holds a service without subscriptions of its own.
            match Subscription::start(docket.clone(), auto_verify.clone()) {
                Ok(running) => {
                    docket.subscriptions = Arc::new(Subscriptions {
                        auto_verify: Some((auto_verify, running)),
                    });
                }
                Err(e) => tracing::warn!("auto-verify: not started: {e}"),
            }
        }
        Ok(docket)
    }

    /// Opens the ledger in `dir` and its blob store.
    pub fn open(dir: &Path, ledger_options: LedgerOptions, options: DocketOptions) -> Result<Self> {
        Self::new(Ledger::open(dir, ledger_options)?, options)
    }

    /// Initialises a new ledger in `dir` (see [`crate::ledger::init`]).
    pub fn init(
        dir: &Path,
        origin: Option<&str>,
        options: DocketOptions,
    ) -> Result<(Self, InitOutcome)> {
        let (ledger, out) = crate::ledger::init(dir, origin)?;
        Ok((Self::new(ledger, options)?, out))
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    pub fn options(&self) -> &DocketOptions {
        &self.options
    }

    /// Stops the subscribers (after the event in hand), then closes the
    /// ledger (snapshots written).
    pub fn close(&self) -> Result<()> {
        self.subscriptions.stop();
        self.ledger.close()
    }

    /// The auto-verify subscriber's runner, when it runs.
    pub fn auto_verify(&self) -> Option<&Subscription> {
        self.subscriptions.auto_verify.as_ref().map(|(_, s)| s)
    }

    // ------------------------------------------------------------ writes

    /// Appends any statement, routing the kinds that need the disk:
    /// `evidence.registered` checks the blob first, `submission.received`
    /// auto-verifies (use [`Docket::submit`] to get the verdict back).
    pub fn append(&self, stmt: Statement) -> Result<Receipt> {
        match stmt.kind.as_str() {
            kinds::EVIDENCE_REGISTERED => self.register_evidence(stmt).map(|r| r.receipt),
            kinds::SUBMISSION_RECEIVED => self.submit(stmt).map(|r| r.receipt),
            kinds::VERDICT_IMPORTED => self.import_verdict(stmt).map(|r| r.receipt),
            _ => self.ledger.append(stmt),
        }
    }

    /// Registers a task (`task.registered`).
    pub fn register_task(&self, stmt: Statement) -> Result<Receipt> {
        expect_kind(&stmt, &[kinds::TASK_REGISTERED])?;
        self.ledger.append(stmt)
    }

    /// Stores content in the blob store without registering it (streamed;
    /// digest and size checked when given).
    pub fn put_blob<R: Read>(
        &self,
        reader: R,
        expected_sha256: Option<&[u8; 32]>,
        expected_size: Option<u64>,
    ) -> Result<PutOutcome> {
        self.blobs.put_stream(
            reader,
            expected_sha256,
            expected_size,
            self.options.max_blob_size,
        )
    }

    /// Checks `stmt` as the committer would if it were appended now
    /// (signature, authority, schema, references), without appending. The
    /// append re-checks everything; this only avoids work (e.g. storing a
    /// blob) for a statement that would be refused. A statement already in
    /// the log passes (its append is idempotent).
    pub fn precheck(&self, stmt: &Statement) -> Result<()> {
        stmt.check_shape()?;
        if self.ledger.store().statement_seq(&stmt.digest())?.is_some() {
            return Ok(());
        }
        stmt.verify()?;
        let state = self.ledger.state();
        let ctx = AdmitContext {
            seq: state.applied,
            recorded_at_ms: now_ms().max(state.last_recorded_at_ms),
        };
        state.admit(stmt, &ctx)
    }

    /// Stores `reader`'s content, checks it against the statement's digest
    /// and size, then appends the `evidence.registered` statement.
    pub fn put_evidence<R: Read>(&self, reader: R, stmt: Statement) -> Result<EvidenceReceipt> {
        expect_kind(&stmt, &[kinds::EVIDENCE_REGISTERED])?;
        self.precheck(&stmt)?;
        let p = evidence_payload(&stmt)?;
        let digest = parse_digest(&p.sha256)?;
        let put = self.put_blob(reader, Some(&digest), Some(p.size))?;
        let mut r = self.register_evidence(stmt)?;
        r.blob_already_present = put.already_present;
        Ok(r)
    }

    /// Appends an `evidence.registered` statement whose content is already
    /// in the blob store (same digest and size); `FailedPrecondition` if not.
    pub fn register_evidence(&self, stmt: Statement) -> Result<EvidenceReceipt> {
        expect_kind(&stmt, &[kinds::EVIDENCE_REGISTERED])?;
        self.precheck(&stmt)?;
        let p = evidence_payload(&stmt)?;
        let digest = parse_digest(&p.sha256)?;
        // No retention deletion between the blob check and the append.
        let _registration = registration_guard();
        match self.blobs.size(&digest)? {
            Some(size) if size == p.size => {}
            Some(size) => {
                return Err(LedgerError::FailedPrecondition(format!(
                    "blob {} is {size} bytes, the statement says {}",
                    p.sha256, p.size
                )));
            }
            None => {
                return Err(LedgerError::FailedPrecondition(format!(
                    "no blob with SHA-256 {} in the blob store; upload the content first",
                    p.sha256
                )));
            }
        }
        let digest_of_stmt = stmt.digest();
        let receipt = self.ledger.append(stmt)?;
        Ok(EvidenceReceipt {
            oid: oids::mint(receipt.recorded_at_ms, &digest_of_stmt),
            receipt,
            sha256: p.sha256,
            size: p.size,
            blob_already_present: true,
        })
    }

    /// Appends an `execution.recorded` statement.
    pub fn record_execution(&self, stmt: Statement) -> Result<Receipt> {
        expect_kind(&stmt, &[kinds::EXECUTION_RECORDED])?;
        self.ledger.append(stmt)
    }

    /// Appends a `check.recorded` statement.
    pub fn record_check(&self, stmt: Statement) -> Result<Receipt> {
        expect_kind(&stmt, &[kinds::CHECK_RECORDED])?;
        self.ledger.append(stmt)
    }

    /// Appends a `verdict.issued` statement (an external verifier's verdict).
    pub fn issue_verdict(&self, stmt: Statement) -> Result<Receipt> {
        expect_kind(&stmt, &[kinds::VERDICT_ISSUED])?;
        self.ledger.append(stmt)
    }

    /// Appends an `approval.requested`, `approval.granted` or `approval.denied`.
    pub fn approval(&self, stmt: Statement) -> Result<Receipt> {
        expect_kind(
            &stmt,
            &[
                kinds::APPROVAL_REQUESTED,
                kinds::APPROVAL_GRANTED,
                kinds::APPROVAL_DENIED,
            ],
        )?;
        self.ledger.append(stmt)
    }

    /// Appends a `submission.received` statement and, with auto-verify on,
    /// waits (at most [`DocketOptions::auto_verify_wait`]) for the
    /// auto-verify subscriber to judge it, to return the verdict. A
    /// duplicate statement appends nothing and returns the first
    /// submission's receipt (its verdict when one exists).
    pub fn submit(&self, stmt: Statement) -> Result<SubmitOutcome> {
        expect_kind(&stmt, &[kinds::SUBMISSION_RECEIVED])?;
        let receipt = self.ledger.append(stmt)?;
        // Fault injection for the crash tests (cli/tests/crash.rs): die like
        // kill -9 between the submission's acknowledgement and its verdict.
        if std::env::var_os("DOCKET_FAULT").is_some_and(|v| v == "abort-after-submission") {
            std::process::abort();
        }
        let mut verdict = None;
        let mut verdict_receipt = None;
        let mut auto_verify_error = None;
        if self.options.auto_verify && !receipt.duplicate {
            match &self.subscriptions.auto_verify {
                Some((auto_verify, running)) => {
                    if running.wait_handled(receipt.seq, self.options.auto_verify_wait) {
                        match auto_verify.take(receipt.seq) {
                            Some(Judgement::Judged(v)) => {
                                let v = *v;
                                verdict_receipt = Some(v.verdict_receipt);
                                verdict = Some(v.verdict);
                            }
                            // The submission is durable: report, do not fail
                            // the call (e.g. a newer submission superseded
                            // this one before its verdict landed).
                            Some(Judgement::Failed(e)) => auto_verify_error = Some(e),
                            Some(Judgement::NotOwed) | None => {}
                        }
                    } else {
                        auto_verify_error = Some(format!(
                            "auto-verify has not judged submission {} yet{}; its verdict follows when it does",
                            receipt.seq,
                            if running.is_running() {
                                format!(" (waited {:?})", self.options.auto_verify_wait)
                            } else {
                                " (it stopped)".into()
                            }
                        ));
                    }
                }
                None => {
                    auto_verify_error = Some("auto-verify is not running".into());
                }
            }
        }
        let task_id = submission_task(&self.ledger.event(receipt.seq)?)?;
        let state = self.verdict(&task_id, AsOf::Latest, false)?;
        if verdict.is_none()
            && let Some(v) = state
                .verdict
                .as_ref()
                .filter(|v| v.submission_seq == receipt.seq)
        {
            let event = self.ledger.event(v.seq)?;
            verdict = serde_json::from_slice(&event.payload).ok();
        }
        Ok(SubmitOutcome {
            receipt,
            verdict,
            verdict_receipt,
            auto_verify_error,
            state,
        })
    }

    // ------------------------------------------------------------ reads

    /// Runs `f` on the state as of `as_of`.
    pub fn with_state<T>(&self, as_of: AsOf, f: impl FnOnce(&LedgerState) -> T) -> Result<T> {
        query::with_state(&self.ledger, as_of, f)
    }

    /// A registered task with its contract.
    pub fn task(&self, task_id: &str, as_of: AsOf) -> Result<TaskView> {
        let key = task_key(task_id);
        let state = self
            .with_state(as_of, |s| {
                s.domain.verdicts.tasks.get(key.as_ref()).cloned()
            })?
            .ok_or_else(|| LedgerError::NotFound {
                what: format!("task {task_id}"),
            })?;
        let contract_bytes = self.ledger.event(state.contract.seq)?.payload;
        let contract_document =
            serde_json::from_slice(&contract_bytes).unwrap_or(serde_json::Value::Null);
        Ok(TaskView {
            state,
            contract_document,
            contract_bytes,
        })
    }

    /// The parsed contract of a task.
    pub fn contract(&self, task_id: &str) -> Result<TaskContract> {
        let view = self.task(task_id, AsOf::Latest)?;
        TaskContract::parse(&view.contract_bytes).map_err(|vs| LedgerError::Corrupt {
            location: format!("event {}", view.state.contract.seq),
            detail: format!(
                "admitted contract no longer parses: {} violation(s)",
                vs.len()
            ),
        })
    }

    /// Ledger time approvals expire against for `as_of`: the point's time
    /// for history, the wall clock for the latest state.
    fn clock_for(&self, as_of: AsOf, state: &LedgerState) -> u64 {
        match as_of {
            AsOf::Latest => now_ms().max(state.last_recorded_at_ms),
            AsOf::Time(t) => t,
            AsOf::Seq(_) => state.last_recorded_at_ms,
        }
    }

    fn view(
        &self,
        task: &TaskState,
        state: &LedgerState,
        as_of: AsOf,
        history: bool,
    ) -> TaskVerdictView {
        let clock = self.clock_for(as_of, state);
        TaskVerdictView {
            task_id: task.task_id.clone(),
            status: task.status,
            verdict: task.verdict.clone(),
            verdict_document: None,
            submissions: task.submissions.len(),
            latest_submission_seq: task.latest_submission().map(|s| s.seq),
            checks: task.checks.clone(),
            approvals: task
                .approvals
                .values()
                .map(|a| ApprovalView {
                    info: a.clone(),
                    effective_state: a.state_at(clock),
                })
                .collect(),
            state_digest: task.state_digest.to_hex(),
            as_of_seq: state.applied.checked_sub(1),
            history: history.then(|| task.history.clone()),
        }
    }

    fn attach_document(&self, mut v: TaskVerdictView) -> Result<TaskVerdictView> {
        if let Some(info) = &v.verdict {
            let payload = self.ledger.event(info.seq)?.payload;
            v.verdict_document = serde_json::from_slice(&payload).ok();
        }
        Ok(v)
    }

    /// One task's verdict state as of a point in history.
    pub fn verdict(&self, task_id: &str, as_of: AsOf, history: bool) -> Result<TaskVerdictView> {
        let key = task_key(task_id);
        let v = self
            .with_state(as_of, |s| {
                s.domain
                    .verdicts
                    .tasks
                    .get(key.as_ref())
                    .map(|t| self.view(t, s, as_of, history))
            })?
            .ok_or_else(|| LedgerError::NotFound {
                what: format!("task {task_id}"),
            })?;
        self.attach_document(v)
    }

    /// Every task's verdict state (optionally only one status), by task id.
    pub fn verdicts(
        &self,
        status: Option<VerdictStatus>,
        as_of: AsOf,
    ) -> Result<Vec<TaskVerdictView>> {
        self.with_state(as_of, |s| {
            s.domain
                .verdicts
                .tasks
                .values()
                .filter(|t| status.is_none_or(|st| t.status == st))
                .map(|t| self.view(t, s, as_of, false))
                .collect()
        })
    }

    /// One OID's record.
    pub fn evidence(&self, oid: &str) -> Result<EvidenceView> {
        let key = oid.trim().to_ascii_uppercase();
        self.with_state(AsOf::Latest, |s| s.domain.oids.oids.get(&key).cloned())?
            .map(|record| EvidenceView {
                oid: key.clone(),
                record,
            })
            .ok_or_else(|| LedgerError::NotFound {
                what: format!("evidence OID {oid}"),
            })
    }

    /// The OID an `evidence.registered` event at `seq` minted.
    pub fn oid_at(&self, seq: u64) -> Result<String> {
        let event = self.ledger.event(seq)?;
        if event.kind != kinds::EVIDENCE_REGISTERED {
            return Err(LedgerError::NotFound {
                what: format!(
                    "an evidence registration at seq {seq} (event is {})",
                    event.kind
                ),
            });
        }
        Ok(oids::of_event(&event))
    }

    /// A digest-checking reader over an OID's content. Removed content is
    /// `FailedPrecondition` naming the event that removed it.
    pub fn evidence_content(&self, oid: &str) -> Result<(EvidenceView, VerifiedReader)> {
        let view = self.evidence(oid)?;
        if view.record.state != OidState::Live {
            let why = view
                .record
                .removal
                .as_ref()
                .map(Removal::describe)
                .unwrap_or_default();
            return Err(LedgerError::FailedPrecondition(format!(
                "the content of {} was {}{why}",
                view.oid,
                view.record.state.as_str()
            )));
        }
        let digest = parse_digest(&view.record.sha256)?;
        let reader = self.blobs.open_verified(&digest).map_err(|e| match e {
            LedgerError::NotFound { .. } => LedgerError::NotFound {
                what: format!(
                    "content of {} (blob {} is missing)",
                    view.oid, view.record.sha256
                ),
            },
            other => other,
        })?;
        Ok((view, reader))
    }

    /// Keys and roles as of a point in history.
    pub fn keys(&self, as_of: AsOf, include_revoked: bool) -> Result<Vec<KeyView>> {
        self.with_state(as_of, |s| {
            let mut keys: Vec<KeyView> = s
                .keys
                .keys
                .iter()
                .filter(|(_, r)| include_revoked || r.revoked_seq.is_none())
                .map(|(k, r)| KeyView {
                    public_key: k.clone(),
                    record: r.clone(),
                })
                .collect();
            keys.sort_by_key(|k| (k.record.registered_seq, k.public_key.clone()));
            keys
        })
    }
}

fn evidence_payload(stmt: &Statement) -> Result<EvidenceRegistered> {
    oids::decode_evidence(&stmt.payload)
}
