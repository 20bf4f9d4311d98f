//! The domain services: `Tasks`, `Evidence`, `Executions`, `Submissions`,
//! `Verdicts`, `Approvals`, `Retention` and `Export`, over the domain
//! service [`docket_domain::domain::Docket`].

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use docket_domain::domain::payloads::{EvidenceRegistered, task_key};
use docket_domain::domain::projections::{ApprovalState, OidState, TaskState, VerdictStatus};
use docket_domain::domain::service::EvidenceView;
use docket_domain::domain::{AsOf, Docket, kinds};
use docket_domain::export::ExportOptions;
use docket_domain::retention::kinds as retention_kinds;
use docket_domain::{Event, LedgerError, LedgerState, Statement};
use docket_proto::v1 as pb;
use docket_proto::v1::upload_evidence_request::Part as UploadPart;
use sha2::{Digest as _, Sha256};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::convert::{self, ms_i64, raw};
use super::ledger_svc::stopped;
use super::shared::Shared;
use super::status;
use super::uploads::{self, UploadAuth};
use crate::exit;

/// Largest chunk an upload may send.
pub const MAX_UPLOAD_CHUNK: usize = 1 << 20;
/// Chunk size of downloads.
const DOWNLOAD_CHUNK: usize = 256 << 10;
/// Default and largest page of `ListVerdicts`.
const PAGE_DEFAULT: usize = 100;
const PAGE_MAX: usize = 1000;
/// Default wait of `Submit` with `wait_for_verdict`.
const WAIT_DEFAULT: Duration = Duration::from_secs(30);
/// Events folded per step while watching verdicts.
const WATCH_CHUNK: u64 = 512;

/// Every domain service, over one shared state.
#[derive(Debug, Clone)]
pub struct DomainService {
    pub shared: Arc<Shared>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The ledger time approvals expire against for a point in history: the
/// wall clock for the latest state, the point's time otherwise.
fn clock_for(as_of: AsOf, state: &LedgerState) -> u64 {
    match as_of {
        AsOf::Latest => now_ms().max(state.last_recorded_at_ms),
        AsOf::Time(t) => t,
        AsOf::Seq(_) => state.last_recorded_at_ms,
    }
}

fn status_enum(s: VerdictStatus) -> i32 {
    match s {
        VerdictStatus::Pass => pb::VerdictStatus::Pass as i32,
        VerdictStatus::Fail => pb::VerdictStatus::Fail as i32,
        VerdictStatus::Pending => pb::VerdictStatus::Pending as i32,
    }
}

fn approval_enum(s: ApprovalState) -> i32 {
    match s {
        ApprovalState::Requested => pb::ApprovalState::Requested as i32,
        ApprovalState::Granted => pb::ApprovalState::Granted as i32,
        ApprovalState::Denied => pb::ApprovalState::Denied as i32,
        ApprovalState::Expired => pb::ApprovalState::Expired as i32,
    }
}

/// A task's verdict state on the wire. Reads the current verdict's payload
/// (and, with `details`, each check's details) from the log.
pub fn task_verdict(
    docket: &Docket,
    task: &TaskState,
    clock: u64,
    as_of_seq: u64,
    history: bool,
    details: bool,
) -> Result<pb::TaskVerdict, LedgerError> {
    let ledger = docket.ledger();
    let mut out = pb::TaskVerdict {
        task_id: task.task_id.clone(),
        status: status_enum(task.status),
        submissions: u32::try_from(task.submissions.len()).unwrap_or(u32::MAX),
        latest_submission_seq: task.latest_submission().map_or(0, |s| s.seq),
        state_digest: raw(&task.state_digest),
        as_of_seq,
        ..Default::default()
    };
    if let Some(v) = &task.verdict {
        out.verdict_json = ledger.event(v.seq)?.payload;
        out.reason_code = v.reason_code.clone().unwrap_or_default();
        out.fail_class = v.fail_class.clone().unwrap_or_default();
        out.verdict_seq = v.seq;
        out.verifier_public_key = raw(&v.by);
        out.issued_at_unix_ms = ms_i64(v.at_ms);
        out.evidence_oids.clone_from(&v.evidence_oids);
    }
    for (name, c) in &task.checks {
        let details_json = if details {
            let event = ledger.event(c.seq)?;
            check_details(&event, name)
        } else {
            Vec::new()
        };
        out.checks.push(pb::CheckResult {
            name: name.clone(),
            passed: c.passed,
            details_json,
            seq: c.seq,
            verifier_public_key: raw(&c.by),
        });
    }
    for a in task.approvals.values() {
        out.approvals.push(pb::Approval {
            request_seq: a.request_seq,
            state: approval_enum(a.state_at(clock)),
            requested_by: raw(&a.requested_by),
            actor: a.actor.clone(),
            scope: a.scope.clone(),
            mutation_mode: a.mutation_mode.clone(),
            expires_at_unix_ms: a.expires_at_ms.unwrap_or(0),
            decided_seq: a.decided_seq.unwrap_or(0),
            decided_by: a.decided_by.as_ref().map(raw).unwrap_or_default(),
            decided_actor: a.decided_actor.clone().unwrap_or_default(),
            requested_at: a.requested_at.clone(),
            note: a.note.clone().unwrap_or_default(),
            reason: a.reason.clone().unwrap_or_default(),
        });
    }
    if history {
        out.history = task
            .history
            .iter()
            .map(|h| pb::VerdictChange {
                seq: h.seq,
                kind: h.kind.to_string(),
                status: status_enum(h.status),
                reason_code: h.reason_code.clone().unwrap_or_default(),
                before_digest: h.before.as_ref().map(raw).unwrap_or_default(),
                after_digest: raw(&h.after),
                at_unix_ms: ms_i64(h.at_ms),
            })
            .collect();
    }
    Ok(out)
}

/// The `details` of a check: the `check.recorded` payload's `details`, or
/// the findings of that check in a `verdict.issued` payload.
fn check_details(event: &Event, name: &str) -> Vec<u8> {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&event.payload) else {
        return Vec::new();
    };
    let value = if event.kind == kinds::CHECK_RECORDED {
        doc.get("details").cloned()
    } else {
        doc.get("findings").and_then(|f| f.as_array()).map(|all| {
            serde_json::json!({
                "findings": all
                    .iter()
                    .filter(|f| f.get("check").and_then(|c| c.as_str()) == Some(name))
                    .collect::<Vec<_>>()
            })
        })
    };
    value
        .filter(|v| !v.is_null())
        .and_then(|v| serde_json::to_vec(&v).ok())
        .unwrap_or_default()
}

pub(crate) fn evidence_info(v: &EvidenceView, expires_at_ms: Option<u64>) -> pb::EvidenceInfo {
    let r = &v.record;
    pb::EvidenceInfo {
        oid: v.oid.clone(),
        task_id: r.task_id.clone(),
        evidence_type: r.evidence_type.clone(),
        media_type: r.media_type.clone(),
        sha256: raw(&r.sha256),
        size: r.size,
        retention_class: r.retention_class.clone(),
        pinned: r.pinned,
        state: match r.state {
            OidState::Live => pb::EvidenceState::Live as i32,
            OidState::Expired => pb::EvidenceState::Expired as i32,
            OidState::Redacted => pb::EvidenceState::Redacted as i32,
        },
        registered_seq: r.registered_seq,
        registered_at_unix_ms: ms_i64(r.registered_at_ms),
        expires_at_unix_ms: expires_at_ms
            .filter(|_| !r.pinned && r.state == OidState::Live)
            .map_or(0, ms_i64),
        removal: r.removal.as_ref().map(|m| pb::EvidenceRemoval {
            seq: m.seq,
            at_unix_ms: ms_i64(m.at_ms),
            reason: m.reason.clone(),
            redacted_sha256: m.redacted_sha256.as_ref().map(raw).unwrap_or_default(),
            redacted_size: m.redacted_size.unwrap_or(0),
        }),
    }
}

fn evidence_receipt(r: &docket_domain::domain::service::EvidenceReceipt) -> pb::EvidenceReceipt {
    pb::EvidenceReceipt {
        sha256: raw(&r.sha256),
        size: r.size,
        blob_already_present: r.blob_already_present,
        oid: r.oid.clone(),
        receipt: Some(convert::receipt(&r.receipt, kinds::EVIDENCE_REGISTERED)),
    }
}

/// A blocking `Read` over upload chunks arriving on a channel.
struct ChunkReader {
    rx: mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.current.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.current = chunk;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.pos);
        buf[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Feeds an upload's chunks into `tx`; returns the status that must end
/// the call when the stream is bad (the blob store then sees a truncated
/// stream and stores nothing under the expected digest).
async fn forward_chunks(
    mut inbound: Streaming<pb::UploadEvidenceRequest>,
    tx: mpsc::Sender<Vec<u8>>,
) -> Option<Status> {
    loop {
        match inbound.message().await {
            Ok(Some(m)) => match m.part {
                Some(UploadPart::Chunk(c)) => {
                    if c.len() > MAX_UPLOAD_CHUNK {
                        return Some(status::with_exit_code(
                            Status::resource_exhausted(format!(
                                "resource exhausted: an upload chunk is {} bytes; the limit is {MAX_UPLOAD_CHUNK}",
                                c.len()
                            )),
                            exit::INVALID,
                        ));
                    }
                    if tx.send(c).await.is_err() {
                        // The store stopped reading (it failed); its error wins.
                        return None;
                    }
                }
                Some(UploadPart::Header(_)) => {
                    return Some(status::invalid(&[
                        "only the first upload message may carry a header".into(),
                    ]));
                }
                None => {}
            },
            Ok(None) => return None,
            Err(s) => return Some(status::inbound(s)),
        }
    }
}

/// The digest and size an `evidence.registered` statement names (its
/// schema errors, when it has any, as the ledger would report them).
fn upload_target(docket: &Docket, st: &Statement) -> Result<([u8; 32], u64), LedgerError> {
    match serde_json::from_slice::<EvidenceRegistered>(&st.payload) {
        Ok(p) => Ok((docket_domain::blobs::parse_digest(&p.sha256)?, p.size)),
        Err(e) => {
            docket.precheck(st)?;
            Err(LedgerError::Invalid {
                what: "evidence.registered payload".into(),
                violations: vec![e.to_string()],
            })
        }
    }
}

/// A header's authorisation, statement and (without a statement) the
/// expected digest and size.
type UploadHeaderParts = (UploadAuth, Option<Statement>, Option<([u8; 32], u64)>);

impl DomainService {
    fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Checks an upload header's shape and how it is signed. An unsigned
    /// upload is `UNAUTHENTICATED` before anything else is said about it.
    fn upload_header(&self, header: &pb::UploadHeader) -> Result<UploadHeaderParts, Status> {
        let explicit =
            !header.uploader_public_key.is_empty() || !header.upload_signature.is_empty();
        if !explicit && header.statement.is_none() {
            self.shared
                .metrics
                .rejected
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err(status::to_status(&LedgerError::BadSignature {
                seq: None,
                detail: "the upload is not signed: set header.uploader_public_key and \
                         header.upload_signature (over \"docket/v1/upload\\0\" || SHA-256(content) || \
                         size as u64 big-endian), or send the evidence.registered statement"
                    .into(),
            }));
        }
        let mut violations = Vec::new();
        let expected_sha: Option<[u8; 32]> = if header.expected_sha256.is_empty() {
            None
        } else if let Ok(d) = header.expected_sha256.as_slice().try_into() {
            Some(d)
        } else {
            violations.push(format!(
                "header.expected_sha256 must be 32 raw bytes, got {}",
                header.expected_sha256.len()
            ));
            None
        };
        let statement = match &header.statement {
            None => {
                if header.expected_sha256.is_empty() {
                    violations.push(
                        "header.expected_sha256 is required for an upload without a statement"
                            .into(),
                    );
                }
                None
            }
            Some(st) => {
                let st = self.shared.checked(st, &[kinds::EVIDENCE_REGISTERED])?;
                if let Ok(p) = serde_json::from_slice::<EvidenceRegistered>(&st.payload) {
                    if let Some(d) = expected_sha
                        && hex::encode(d) != p.sha256.to_ascii_lowercase()
                    {
                        violations.push(
                            "header.expected_sha256 differs from the statement's sha256".into(),
                        );
                    }
                    if header.expected_size != 0 && header.expected_size != p.size {
                        violations.push(format!(
                            "header.expected_size {} differs from the statement's size {}",
                            header.expected_size, p.size
                        ));
                    }
                }
                Some(st)
            }
        };
        let auth = if explicit {
            let key: Option<[u8; 32]> = header.uploader_public_key.as_slice().try_into().ok();
            if key.is_none() {
                violations.push(format!(
                    "header.uploader_public_key must be 32 raw bytes, got {}",
                    header.uploader_public_key.len()
                ));
            }
            let signature: Option<[u8; 64]> = header.upload_signature.as_slice().try_into().ok();
            if signature.is_none() {
                violations.push(format!(
                    "header.upload_signature must be 64 raw bytes, got {}",
                    header.upload_signature.len()
                ));
            }
            key.zip(signature)
                .map(|(key, signature)| UploadAuth::Signed { key, signature })
        } else {
            statement.clone().map(UploadAuth::Statement)
        };
        match auth {
            Some(auth) if violations.is_empty() => {
                let expected = expected_sha.map(|d| (d, header.expected_size));
                Ok((auth, statement, expected))
            }
            _ => {
                self.shared
                    .metrics
                    .rejected
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Err(status::invalid(&violations))
            }
        }
    }

    async fn append(
        &self,
        request: &Request<pb::SignedStatement>,
        kinds: &[&str],
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.shared
            .append_proto(request.get_ref(), kinds)
            .await
            .map(Response::new)
    }

    /// A task's verdict state right now, on the wire.
    async fn current_verdict(&self, task_id: String) -> Result<pb::TaskVerdict, Status> {
        self.shared
            .read(move |d| {
                let key = task_key(&task_id).to_string();
                let found = d.with_state(AsOf::Latest, |s| {
                    s.domain
                        .verdicts
                        .tasks
                        .get(&key)
                        .cloned()
                        .map(|t| (t, clock_for(AsOf::Latest, s), s.applied.saturating_sub(1)))
                })?;
                let (t, clock, seq) = found.ok_or_else(|| LedgerError::NotFound {
                    what: format!("task {task_id}"),
                })?;
                task_verdict(d, &t, clock, seq, false, true)
            })
            .await
    }

    /// Waits until the task has a verdict for `submission_seq` (or a newer
    /// submission), or `timeout` passes.
    async fn wait_for_verdict(
        &self,
        task_id: &str,
        submission_seq: u64,
        timeout: Duration,
    ) -> Result<pb::TaskVerdict, Status> {
        let deadline = Instant::now() + timeout;
        let mut len = self.shared.len.clone();
        let mut shutdown = self.shared.shutdown.clone();
        loop {
            let v = self.current_verdict(task_id.to_string()).await?;
            let judged = v.verdict_seq != 0
                && v.status != pb::VerdictStatus::Pending as i32
                && v.latest_submission_seq >= submission_seq;
            if judged || v.latest_submission_seq > submission_seq || Instant::now() >= deadline {
                return Ok(v);
            }
            tokio::select! {
                r = len.changed() => if r.is_err() { return Ok(v); },
                () = tokio::time::sleep_until(deadline.into()) => {}
                () = stopped(&mut shutdown) => return Ok(v),
            }
        }
    }
}

// ---------------------------------------------------------------- Tasks

#[tonic::async_trait]
impl pb::tasks_server::Tasks for DomainService {
    async fn register_task(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[kinds::TASK_REGISTERED]).await
    }

    async fn get_task(
        &self,
        request: Request<pb::GetTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        self.shared().check_read(&request)?;
        let req = request.into_inner();
        let as_of = convert::as_of(req.as_of.as_ref())?;
        let view = self
            .shared
            .read(move |d| d.task(&req.task_id, as_of))
            .await?;
        Ok(Response::new(pb::Task {
            task_id: view.state.task_id.clone(),
            contract_json: view.contract_bytes,
            registered_seq: view.state.contract.seq,
            registered_by: raw(&view.state.contract.registered_by),
            registered_at_unix_ms: ms_i64(view.state.contract.registered_at_ms),
            retention_class: view.state.contract.retention_class.clone(),
        }))
    }
}

// ---------------------------------------------------------------- Evidence

type DownloadStream = ReceiverStream<Result<pb::DownloadEvidenceResponse, Status>>;

#[tonic::async_trait]
impl pb::evidence_server::Evidence for DomainService {
    async fn upload(
        &self,
        request: Request<Streaming<pb::UploadEvidenceRequest>>,
    ) -> Result<Response<pb::EvidenceReceipt>, Status> {
        self.shared.writable()?;
        let mut inbound = request.into_inner();
        let first = inbound
            .message()
            .await
            .map_err(status::inbound)?
            .ok_or_else(|| status::invalid(&["the upload stream is empty".into()]))?;
        let Some(UploadPart::Header(header)) = first.part else {
            return Err(status::invalid(&[
                "the first upload message must carry the header".into(),
            ]));
        };
        let (auth, statement, expected) = self.upload_header(&header)?;
        // Everything about the header is checked before any content is
        // read: signature, key, statement, quota and disk reserve.
        let uploads = Arc::clone(&self.shared.uploads);
        let docket = self.shared.docket.clone();
        let checked = statement.clone();
        let reservation = tokio::task::spawn_blocking(move || {
            let (digest, size) = match (&checked, expected) {
                (Some(st), _) => upload_target(&docket, st)?,
                (None, Some(target)) => target,
                (None, None) => {
                    return Err(LedgerError::Invalid {
                        what: "upload header".into(),
                        violations: vec!["header.expected_sha256 is required".into()],
                    });
                }
            };
            let key = uploads::authorize(&docket, &auth, &digest, size)?;
            if let Some(st) = &checked {
                docket.precheck(st)?;
            }
            uploads.reserve(&docket, key, digest, size)
        })
        .await
        .map_err(|e| status::join_error(&e))?
        .map_err(|e| {
            self.shared
                .metrics
                .rejected
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.shared.status_of(&e)
        })?;
        let (tx, rx) = mpsc::channel::<Vec<u8>>(8);
        let reader = ChunkReader {
            rx,
            current: Vec::new(),
            pos: 0,
        };
        let forward = forward_chunks(inbound, tx);
        match statement {
            Some(st) => {
                let store = self.shared.write(move |d| {
                    let r = d.put_evidence(reader, st)?;
                    reservation.commit(r.blob_already_present);
                    Ok(r)
                });
                let (stored, bad_stream) = tokio::join!(store, forward);
                if let Some(s) = bad_stream {
                    return Err(s);
                }
                Ok(Response::new(evidence_receipt(&stored?)))
            }
            None => {
                let (digest, size) = reservation.target();
                let store = self.shared.read(move |d| {
                    let put = d.put_blob(reader, Some(&digest), Some(size))?;
                    reservation.commit(put.already_present);
                    Ok(put)
                });
                let (stored, bad_stream) = tokio::join!(store, forward);
                if let Some(s) = bad_stream {
                    return Err(s);
                }
                let put = stored?;
                Ok(Response::new(pb::EvidenceReceipt {
                    sha256: put.digest.to_vec(),
                    size: put.size,
                    blob_already_present: put.already_present,
                    oid: String::new(),
                    receipt: None,
                }))
            }
        }
    }

    async fn register(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::EvidenceReceipt>, Status> {
        let st = self
            .shared
            .checked(request.get_ref(), &[kinds::EVIDENCE_REGISTERED])?;
        let r = self.shared.write(move |d| d.register_evidence(st)).await?;
        Ok(Response::new(evidence_receipt(&r)))
    }

    async fn get_evidence(
        &self,
        request: Request<pb::GetEvidenceRequest>,
    ) -> Result<Response<pb::EvidenceInfo>, Status> {
        self.shared().check_read(&request)?;
        let oid = request.into_inner().oid;
        let (v, expires) = self
            .shared
            .read(move |d| {
                let v = d.evidence(&oid)?;
                let expires = d.with_state(AsOf::Latest, |s| {
                    docket_domain::retention::rules::expires_at(&s.retention.policy(), &v.record)
                })?;
                Ok((v, expires))
            })
            .await?;
        Ok(Response::new(evidence_info(&v, expires)))
    }

    async fn list_evidence(
        &self,
        request: Request<pb::ListEvidenceRequest>,
    ) -> Result<Response<pb::ListEvidenceResponse>, Status> {
        self.shared().check_read(&request)?;
        let req = request.into_inner();
        let r = self
            .shared
            .read(move |d| crate::evidence_list::list(d, &req))
            .await?;
        Ok(Response::new(r))
    }

    type DownloadStream = DownloadStream;

    async fn download(
        &self,
        request: Request<pb::DownloadEvidenceRequest>,
    ) -> Result<Response<Self::DownloadStream>, Status> {
        self.shared().check_read(&request)?;
        let req = request.into_inner();
        let (view, mut reader) = self
            .shared
            .read(move |d| match d.evidence_content(&req.oid) {
                Err(LedgerError::FailedPrecondition(why)) if req.allow_redacted => {
                    match d.redacted_content(&req.oid) {
                        Ok(found) => Ok(found),
                        Err(_) => Err(LedgerError::FailedPrecondition(why)),
                    }
                }
                other => other,
            })
            .await?;
        let (tx, rx) = mpsc::channel(4);
        let info = evidence_info(&view, None);
        tokio::task::spawn_blocking(move || {
            if tx
                .blocking_send(Ok(pb::DownloadEvidenceResponse {
                    part: Some(pb::download_evidence_response::Part::Info(info)),
                }))
                .is_err()
            {
                return;
            }
            loop {
                let mut buf = vec![0u8; DOWNLOAD_CHUNK];
                let mut filled = 0;
                let mut failed = None;
                while filled < buf.len() {
                    match reader.read(&mut buf[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                if filled > 0 {
                    buf.truncate(filled);
                    let msg = pb::DownloadEvidenceResponse {
                        part: Some(pb::download_evidence_response::Part::Chunk(buf)),
                    };
                    if tx.blocking_send(Ok(msg)).is_err() {
                        return;
                    }
                }
                if let Some(e) = failed {
                    let s = if e.kind() == std::io::ErrorKind::InvalidData {
                        status::with_exit_code(
                            Status::data_loss(format!("evidence content is corrupt: {e}")),
                            exit::HARD_FAIL,
                        )
                    } else {
                        tracing::error!(error = %e, "reading evidence content");
                        status::unavailable("I/O error on the server (see its log)")
                    };
                    let _ = tx.blocking_send(Err(s));
                    return;
                }
                if filled == 0 {
                    return;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

// ---------------------------------------------------------------- Executions

#[tonic::async_trait]
impl pb::executions_server::Executions for DomainService {
    async fn record_execution(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[kinds::EXECUTION_RECORDED]).await
    }
}

// ---------------------------------------------------------------- Submissions

#[tonic::async_trait]
impl pb::submissions_server::Submissions for DomainService {
    async fn submit(
        &self,
        request: Request<pb::SubmitRequest>,
    ) -> Result<Response<pb::SubmitResponse>, Status> {
        let req = request.into_inner();
        let Some(st) = req.statement.as_ref() else {
            return Err(status::invalid(&["statement is required".into()]));
        };
        let st = self.shared.checked(st, &[kinds::SUBMISSION_RECEIVED])?;
        let outcome = self.shared.write(move |d| d.submit(st)).await?;
        let receipt = convert::receipt(&outcome.receipt, kinds::SUBMISSION_RECEIVED);
        let verdict = if req.wait_for_verdict {
            let timeout = if req.wait_timeout_ms == 0 {
                WAIT_DEFAULT
            } else {
                Duration::from_millis(u64::from(req.wait_timeout_ms))
            };
            Some(
                self.wait_for_verdict(&outcome.state.task_id, outcome.receipt.seq, timeout)
                    .await?,
            )
        } else {
            None
        };
        Ok(Response::new(pb::SubmitResponse {
            receipt: Some(receipt),
            verdict,
        }))
    }
}

// ---------------------------------------------------------------- Verdicts

type WatchStream = ReceiverStream<Result<pb::TaskVerdict, Status>>;

#[tonic::async_trait]
impl pb::verdicts_server::Verdicts for DomainService {
    async fn record_check(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[kinds::CHECK_RECORDED]).await
    }

    async fn issue_verdict(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[kinds::VERDICT_ISSUED]).await
    }

    async fn import_verdict(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::ImportVerdictResponse>, Status> {
        crate::verdict_import::import_rpc(&self.shared, request.get_ref())
            .await
            .map(Response::new)
    }

    async fn reproduce_verdict(
        &self,
        request: Request<pb::ReproduceVerdictRequest>,
    ) -> Result<Response<pb::ReproduceVerdictResponse>, Status> {
        self.shared().check_read(&request)?;
        crate::verdict_import::reproduce_rpc(&self.shared, request.into_inner().task_id)
            .await
            .map(Response::new)
    }

    async fn get_verdict(
        &self,
        request: Request<pb::GetVerdictRequest>,
    ) -> Result<Response<pb::TaskVerdict>, Status> {
        self.shared().check_read(&request)?;
        let req = request.into_inner();
        let as_of = convert::as_of(req.as_of.as_ref())?;
        let v = self
            .shared
            .read(move |d| {
                let key = task_key(&req.task_id).to_string();
                let found = d.with_state(as_of, |s| {
                    s.domain
                        .verdicts
                        .tasks
                        .get(&key)
                        .cloned()
                        .map(|t| (t, clock_for(as_of, s), s.applied.saturating_sub(1)))
                })?;
                let (t, clock, seq) = found.ok_or_else(|| LedgerError::NotFound {
                    what: format!("task {}", req.task_id),
                })?;
                task_verdict(d, &t, clock, seq, req.include_history, true)
            })
            .await?;
        Ok(Response::new(v))
    }

    async fn list_verdicts(
        &self,
        request: Request<pb::ListVerdictsRequest>,
    ) -> Result<Response<pb::ListVerdictsResponse>, Status> {
        self.shared().check_read(&request)?;
        let req = request.into_inner();
        let as_of = convert::as_of(req.as_of.as_ref())?;
        let filter = match pb::VerdictStatus::try_from(req.status) {
            Ok(pb::VerdictStatus::Unspecified) => None,
            Ok(pb::VerdictStatus::Pass) => Some(VerdictStatus::Pass),
            Ok(pb::VerdictStatus::Fail) => Some(VerdictStatus::Fail),
            Ok(pb::VerdictStatus::Pending) => Some(VerdictStatus::Pending),
            Err(_) => {
                return Err(status::invalid(&[format!(
                    "status {} is not a VerdictStatus",
                    req.status
                )]));
            }
        };
        let page = match usize::try_from(req.page_size).unwrap_or(PAGE_MAX) {
            0 => PAGE_DEFAULT,
            n => n.min(PAGE_MAX),
        };
        let token = req.page_token;
        let (verdicts, next) = self
            .shared
            .read(move |d| {
                let (tasks, clock, seq) = d.with_state(as_of, |s| {
                    let range = s.domain.verdicts.tasks.range::<String, _>((
                        if token.is_empty() {
                            std::ops::Bound::Unbounded
                        } else {
                            std::ops::Bound::Excluded(&token)
                        },
                        std::ops::Bound::Unbounded,
                    ));
                    let tasks: Vec<TaskState> = range
                        .map(|(_, t)| t)
                        .filter(|t| filter.is_none_or(|f| t.status == f))
                        .take(page + 1)
                        .cloned()
                        .collect();
                    (tasks, clock_for(as_of, s), s.applied.saturating_sub(1))
                })?;
                let more = tasks.len() > page;
                let mut out = Vec::with_capacity(page);
                for t in tasks.iter().take(page) {
                    out.push(task_verdict(d, t, clock, seq, false, false)?);
                }
                let next = if more {
                    tasks[page - 1].task_id.clone()
                } else {
                    String::new()
                };
                Ok((out, next))
            })
            .await?;
        Ok(Response::new(pb::ListVerdictsResponse {
            verdicts,
            next_page_token: next,
        }))
    }

    type WatchVerdictsStream = WatchStream;

    async fn watch_verdicts(
        &self,
        request: Request<pb::WatchVerdictsRequest>,
    ) -> Result<Response<Self::WatchVerdictsStream>, Status> {
        self.shared().check_read(&request)?;
        let req = request.into_inner();
        let filter: Vec<String> = req
            .task_ids
            .iter()
            .map(|t| task_key(t).to_string())
            .collect();
        let len = *self.shared.len.borrow();
        let start = if req.from_seq == 0 {
            len
        } else {
            req.from_seq.min(len)
        };
        let (tx, rx) = mpsc::channel(256);
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move { feed_watch(shared, start, filter, tx).await });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

/// The canonical task id an event is about, when it is a domain event.
fn event_task(event: &Event) -> Option<String> {
    if !kinds::ALL.contains(&event.kind.as_str()) {
        return None;
    }
    let doc: serde_json::Value = serde_json::from_slice(&event.payload).ok()?;
    doc.get("task_id")?
        .as_str()
        .map(|t| task_key(t).to_string())
}

/// Folds the log from `start`, live, and sends each change of a watched
/// task's verdict state, in sequence order.
async fn feed_watch(
    shared: Arc<Shared>,
    start: u64,
    filter: Vec<String>,
    tx: mpsc::Sender<Result<pb::TaskVerdict, Status>>,
) {
    let store = Arc::clone(shared.ledger.store());
    let state = tokio::task::spawn_blocking(move || {
        docket_domain::domain::query::fold_prefix(store.as_ref(), start)
    })
    .await;
    let mut state = match state {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let _ = tx.send(Err(status::to_status(&e))).await;
            return;
        }
        Err(e) => {
            let _ = tx.send(Err(status::join_error(&e))).await;
            return;
        }
    };
    let mut len_rx = shared.len.clone();
    let mut shutdown = shared.shutdown.clone();
    let mut next = start;
    loop {
        let len = *len_rx.borrow_and_update();
        while next < len {
            let to = (next + WATCH_CHUNK).min(len);
            let docket = shared.docket.clone();
            let filter = filter.clone();
            let step = tokio::task::spawn_blocking(move || {
                let mut changes = Vec::new();
                for (seq, bytes) in docket.ledger().store().event_range(next, to)? {
                    let event = Event::decode(&bytes)?;
                    state.apply(&event)?;
                    let Some(key) = event_task(&event) else {
                        continue;
                    };
                    if !filter.is_empty() && !filter.contains(&key) {
                        continue;
                    }
                    if let Some(t) = state.domain.verdicts.tasks.get(&key)
                        && t.history.last().is_some_and(|h| h.seq == seq)
                    {
                        changes.push(task_verdict(
                            &docket,
                            t,
                            event.recorded_at_ms,
                            seq,
                            false,
                            true,
                        )?);
                    }
                }
                Ok::<_, LedgerError>((state, changes))
            })
            .await;
            let changes = match step {
                Ok(Ok((s, changes))) => {
                    state = s;
                    changes
                }
                Ok(Err(e)) => {
                    let _ = tx.send(Err(status::to_status(&e))).await;
                    return;
                }
                Err(e) => {
                    let _ = tx.send(Err(status::join_error(&e))).await;
                    return;
                }
            };
            for c in changes {
                tokio::select! {
                    r = tx.send(Ok(c)) => if r.is_err() { return; },
                    () = stopped(&mut shutdown) => {
                        let _ = tx.try_send(Err(status::unavailable(format!(
                            "the server is shutting down; resume with from_seq = {next}"
                        ))));
                        return;
                    }
                }
            }
            next = to;
        }
        tokio::select! {
            r = len_rx.changed() => if r.is_err() {
                let _ = tx.send(Err(status::unavailable("the ledger closed"))).await;
                return;
            },
            () = stopped(&mut shutdown) => {
                let _ = tx.send(Err(status::unavailable(format!(
                    "the server is shutting down; resume with from_seq = {next}"
                )))).await;
                return;
            }
            () = tx.closed() => return,
        }
    }
}

// ---------------------------------------------------------------- Approvals

#[tonic::async_trait]
impl pb::approvals_server::Approvals for DomainService {
    async fn request_approval(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[kinds::APPROVAL_REQUESTED]).await
    }

    async fn grant_approval(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[kinds::APPROVAL_GRANTED]).await
    }

    async fn deny_approval(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[kinds::APPROVAL_DENIED]).await
    }
}

// ---------------------------------------------------------------- Retention

fn sweep_response(r: &docket_domain::retention::SweepReport) -> pb::SweepResponse {
    let mut receipts = Vec::new();
    if let Some(sr) = &r.sweep_receipt {
        receipts.push(convert::receipt(sr, retention_kinds::SWEEP));
    }
    receipts.extend(
        r.expired
            .iter()
            .filter_map(|e| e.receipt.as_ref())
            .map(|rc| convert::receipt(rc, retention_kinds::EXPIRED)),
    );
    pb::SweepResponse {
        dry_run: r.dry_run,
        now_unix_ms: ms_i64(r.now_ms),
        expired_oids: r.expired.iter().map(|e| e.planned.oid.clone()).collect(),
        bytes_freed: r.bytes_freed,
        receipts,
        // Invariant: the report is plain data; serialising cannot fail.
        report_json: serde_json::to_string(r).expect("sweep report serialises"),
    }
}

fn retention_status(
    s: &docket_domain::retention::RetentionStatus,
    policy_json: Option<Vec<u8>>,
) -> pb::RetentionStatus {
    pb::RetentionStatus {
        policy_json: policy_json.unwrap_or_default(),
        classes: s
            .classes
            .iter()
            .map(|c| pb::RetentionClassStats {
                class: c.class.clone(),
                live_count: c.live_count,
                live_bytes: c.live_bytes,
                pinned_count: c.pinned_count,
                expired_count: c.expired_count,
                expired_bytes: c.expired_bytes,
                redacted_count: c.redacted_count,
            })
            .collect(),
        upcoming: s
            .upcoming
            .iter()
            .map(|u| pb::UpcomingExpiry {
                oid: u.oid.clone(),
                class: u.class.clone(),
                expires_at_unix_ms: ms_i64(u.expires_at_ms),
                size: u.size,
            })
            .collect(),
        as_of_seq: s.as_of_seq.unwrap_or(0),
        // Invariant: the status is plain data; serialising cannot fail.
        status_json: serde_json::to_string(s).expect("retention status serialises"),
    }
}

#[tonic::async_trait]
impl pb::retention_server::Retention for DomainService {
    async fn set_policy(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[retention_kinds::POLICY_SET]).await
    }

    async fn pin(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[retention_kinds::PINNED]).await
    }

    async fn unpin(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[retention_kinds::UNPINNED]).await
    }

    async fn reclassify(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.append(&request, &[retention_kinds::RECLASSIFIED])
            .await
    }

    async fn redact(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        let payload = request.get_ref().payload.clone();
        let mut response = self.append(&request, &[retention_kinds::REDACTED]).await?;
        // What the redaction did to the original content, as the embedded
        // `docket retention redact` reports it (response metadata
        // `docket-redaction-bin`, JSON).
        if let Ok(p) = docket_domain::retention::payloads::redacted(&payload) {
            let effect = self
                .shared
                .read(move |d| {
                    let original = docket_domain::blobs::parse_digest(&p.original_sha256)?;
                    let deleted = !d.blobs().contains(&original)?;
                    let needed_by: Vec<String> = d.with_state(AsOf::Latest, |s| {
                        s.domain
                            .oids
                            .oids
                            .iter()
                            .filter(|(o, r)| {
                                **o != p.oid
                                    && docket_domain::retention::state::current_sha256(
                                        r,
                                        &s.retention,
                                        o,
                                    ) == Some(p.original_sha256.as_str())
                            })
                            .map(|(o, _)| o.clone())
                            .collect()
                    })?;
                    Ok(serde_json::json!({
                        "original_deleted": deleted,
                        "original_still_needed_by": needed_by,
                    }))
                })
                .await;
            if let Ok(effect) = effect {
                response.metadata_mut().insert_bin(
                    "docket-redaction-bin",
                    tonic::metadata::MetadataValue::from_bytes(effect.to_string().as_bytes()),
                );
            }
        }
        Ok(response)
    }

    async fn sweep(
        &self,
        request: Request<pb::SweepRequest>,
    ) -> Result<Response<pb::SweepResponse>, Status> {
        let req = request.into_inner();
        let Some(st) = req.statement.as_ref() else {
            return Err(status::invalid(&["statement is required".into()]));
        };
        let st = self.shared.checked(st, &[retention_kinds::SWEEP])?;
        let dry_run = req.dry_run;
        if !dry_run {
            self.shared.writable()?;
        }
        let report = self
            .shared
            .read(move |d| d.sweep_request(st, dry_run))
            .await
            .inspect_err(|_| {
                self.shared
                    .metrics
                    .rejected
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            })?;
        Ok(Response::new(sweep_response(&report)))
    }

    async fn get_status(
        &self,
        request: Request<pb::GetRetentionStatusRequest>,
    ) -> Result<Response<pb::RetentionStatus>, Status> {
        self.shared().check_read(&request)?;
        let req = request.into_inner();
        let as_of = convert::as_of(req.as_of.as_ref())?;
        let limit = match req.upcoming_limit {
            0 => 20,
            n => usize::try_from(n).unwrap_or(usize::MAX).min(10_000),
        };
        let now = u64::try_from(req.now_unix_ms).ok().filter(|&n| n > 0);
        let (s, policy) = self
            .shared
            .read(move |d| {
                Ok((
                    d.retention_status(as_of, now, limit)?,
                    d.retention_policy_json(as_of)?,
                ))
            })
            .await?;
        Ok(Response::new(retention_status(&s, policy)))
    }
}

// ---------------------------------------------------------------- Export

/// Chunk size of export streams.
const EXPORT_CHUNK: usize = 256 << 10;

fn export_options(req: pb::ExportRequest) -> Result<ExportOptions, Status> {
    use docket_domain::export::{AsOf as ExportAsOf, ExportFormat};
    let as_of = match req.as_of.and_then(|a| a.point) {
        None => None,
        Some(pb::as_of::Point::Seq(s)) => Some(ExportAsOf::Seq(s)),
        Some(pb::as_of::Point::Time(t)) => {
            match docket_domain::domain::payloads::rfc3339_ms(&t)
                .and_then(|ms| u64::try_from(ms).ok())
            {
                Some(ms) => Some(ExportAsOf::TimeMs(ms)),
                None => {
                    return Err(status::invalid(&[format!(
                        "as_of.time {t:?} is not an RFC 3339 time after 1970"
                    )]));
                }
            }
        }
    };
    let format = match req.format.as_str() {
        "" | "bundle" => ExportFormat::Bundle,
        "vsa" => ExportFormat::Vsa,
        other => {
            return Err(status::invalid(&[format!(
                "format {other:?} is not `bundle` or `vsa`"
            )]));
        }
    };
    Ok(ExportOptions {
        tasks: req.task_ids,
        from: (req.from_seq != 0).then_some(req.from_seq),
        to: (req.to_seq != 0).then_some(req.to_seq),
        as_of,
        with_blobs: req.with_blobs,
        since_note: (!req.since_checkpoint.is_empty()).then_some(req.since_checkpoint),
        format,
    })
}

type ExportStream = ReceiverStream<Result<pb::ExportChunk, Status>>;

#[tonic::async_trait]
impl pb::export_server::Export for DomainService {
    type ExportBundleStream = ExportStream;

    async fn export_bundle(
        &self,
        request: Request<pb::ExportRequest>,
    ) -> Result<Response<Self::ExportBundleStream>, Status> {
        self.shared().check_read(&request)?;
        let options = export_options(request.into_inner())?;
        let docket = self.shared.docket.clone();
        let (files, report) = tokio::task::spawn_blocking(move || {
            docket_domain::export::writer::build(docket.ledger(), &options)
        })
        .await
        .map_err(|e| status::join_error(&e))?
        .map_err(|e| status::export_status(&e))?;
        // Invariant: ExportReport is numbers, strings and lists of them.
        let report_json = serde_json::to_string(&report).expect("export report serialises");
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(async move {
            // Files in path order, the manifest last.
            let (manifest, rest): (Vec<_>, Vec<_>) = files
                .into_iter()
                .partition(|(p, _)| p == docket_domain::export::format::MANIFEST);
            let count = rest.len() + manifest.len();
            for (i, (path, data)) in rest.into_iter().chain(manifest).enumerate() {
                let digest = Sha256::digest(&data).to_vec();
                let total = data.len();
                let mut offset = 0;
                loop {
                    let end = (offset + EXPORT_CHUNK).min(total);
                    let last = end == total;
                    let chunk = pb::ExportChunk {
                        path: path.clone(),
                        offset: offset as u64,
                        data: data[offset..end].to_vec(),
                        last,
                        sha256: if last { digest.clone() } else { Vec::new() },
                        report_json: if last && i + 1 == count {
                            report_json.clone()
                        } else {
                            String::new()
                        },
                    };
                    if tx.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                    if last {
                        break;
                    }
                    offset = end;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}
