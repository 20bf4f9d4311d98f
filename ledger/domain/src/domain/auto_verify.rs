//! Auto-verification: the verdict engine judges every committed
//! submission, signed by the ledger key (which holds the verifier role from
//! genesis), as a [`Subscriber`] of committed events.
//!
//! For a `submission.received` event that is still owed a verdict (the
//! latest submission of its task, with no verdict yet), the subscriber
//! loads the submission's evidence blobs (digest-checked; removed content
//! is simply absent, so the engine reports it missing), adds the signed
//! submission itself as `submit.json` when no evidence has that name (and,
//! when one does, requires the two to agree), runs
//! `docket_verifier::engine::evaluate` on the registered contract at the
//! submission's ledger time, and appends one `check.recorded` per check and
//! the `verdict.issued`. The verdict is a deterministic function of the log
//! and the blobs, and appending it twice appends nothing, so handling a
//! submission again (after a crash, a reset cursor) is harmless; one no
//! longer owed a verdict is passed over.
//!
//! When there is no trustworthy cursor, the start-up scan
//! ([`Docket::resume_pending_verification`]) judges every submission owed a
//! verdict, and the subscriber follows the log from there.

use std::collections::BTreeMap;
use std::sync::Mutex;

use docket_verifier::TaskContract;
use docket_verifier::VerifierError;
use docket_verifier::catalogue::ReasonCode;
use docket_verifier::engine::{ArtifactSource, evaluate};
use docket_verifier::submit::Submission;
use docket_verifier::verdict::{Finding, Verdict};

use crate::blobs::parse_digest;
use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::kind::names as kinds;
use crate::ledger::Receipt;
use crate::oids::{OidRecord, OidState};
use crate::schema::{ms_to_rfc3339, task_key};
use crate::verdicts::{CheckRecorded, SubmissionReceived, decode_submission};

use super::Docket;
use super::subscriber::Subscriber;

/// What auto-verify appended for one submission.
#[derive(Debug, Clone)]
pub struct VerifyOutcome {
    pub verdict: Verdict,
    pub check_receipts: Vec<Receipt>,
    pub verdict_receipt: Receipt,
}

/// What the subscriber did with one submission (kept for `Docket::submit`).
#[derive(Debug, Clone)]
pub enum Judgement {
    /// Judged: the verdict and its receipts.
    Judged(Box<VerifyOutcome>),
    /// Not owed a verdict any more (judged already).
    NotOwed,
    /// No verdict was appended: why (e.g. superseded by a newer
    /// submission). The submission stays pending.
    Failed(String),
}

/// Judgements kept for `Docket::submit` to collect; beyond this many, the
/// oldest are dropped (submissions nobody waits for).
const KEPT_JUDGEMENTS: usize = 256;

/// The auto-verify subscriber.
#[derive(Debug, Default)]
pub struct AutoVerify {
    judgements: Mutex<BTreeMap<u64, Judgement>>,
}

impl AutoVerify {
    /// Name of the subscriber and of its cursor file (`DATA/cursors/auto_verify`).
    pub const NAME: &'static str = "auto_verify";

    /// Takes what the subscriber did with submission `seq`, if it handled it
    /// recently.
    pub fn take(&self, seq: u64) -> Option<Judgement> {
        self.lock().remove(&seq)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Judgement>> {
        self.judgements
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn keep(&self, seq: u64, judgement: Judgement) {
        let mut kept = self.lock();
        kept.insert(seq, judgement);
        while kept.len() > KEPT_JUDGEMENTS {
            kept.pop_first();
        }
    }
}

impl Subscriber for AutoVerify {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn wants(&self, kind: &str) -> bool {
        kind == kinds::SUBMISSION_RECEIVED
    }

    /// Submissions are judged independently (one superseded by another in
    /// the same chunk is simply not owed), so several at once: their
    /// appends share group commits, as concurrent inline verifications did.
    fn concurrency(&self) -> usize {
        std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 8))
    }

    fn handle(&self, docket: &Docket, event: &Event) -> Result<()> {
        let seq = event.seq;
        let owed = {
            let task_id = submission_task(event)?;
            let state = docket.ledger().state();
            match state.domain.verdicts.tasks.get(&task_id) {
                None => Err(format!(
                    "task {task_id} of submission {seq} is not registered"
                )),
                Some(t) => match t.latest_submission().map(|s| s.seq) {
                    Some(latest) if latest != seq => Err(LedgerError::FailedPrecondition(format!(
                        "submission {seq} of task {task_id} was superseded by submission {latest}"
                    ))
                    .to_string()),
                    _ if t.verdict.as_ref().is_some_and(|v| v.submission_seq == seq) => Ok(false),
                    _ => Ok(true),
                },
            }
        };
        match owed {
            Ok(false) => {
                self.keep(seq, Judgement::NotOwed);
                Ok(())
            }
            Err(why) => {
                tracing::info!("auto-verify: submission {seq} is not judged: {why}");
                self.keep(seq, Judgement::Failed(why));
                Ok(())
            }
            Ok(true) => match docket.verify_submission(seq) {
                Ok(v) => {
                    self.keep(seq, Judgement::Judged(Box::new(v)));
                    Ok(())
                }
                Err(e) => {
                    tracing::warn!("auto-verify of submission {seq}: {e}");
                    self.keep(seq, Judgement::Failed(e.to_string()));
                    match e {
                        // A newer submission or an external verdict landed
                        // meanwhile: nothing is owed any more.
                        LedgerError::FailedPrecondition(_) => Ok(()),
                        other => Err(other),
                    }
                }
            },
        }
    }

    /// The start-up scan judges every submission owed a verdict; the log
    /// before the current length then owes nothing. If the scan fails, the
    /// whole log is handled again (each submission checked).
    fn recover(&self, docket: &Docket) -> Result<u64> {
        let len = docket.ledger().len();
        match docket.resume_pending_verification() {
            Ok(_) => Ok(len),
            Err(e @ LedgerError::Closed(_)) => Err(e),
            Err(e) => {
                tracing::warn!("auto-verify: resuming pending verification: {e}");
                Ok(0)
            }
        }
    }
}

/// Decodes a committed `submission.received` event (a payload that no
/// longer decodes is `Corrupt`).
fn decode_committed_submission(event: &Event) -> Result<SubmissionReceived> {
    decode_submission(&event.payload).map_err(|e| {
        LedgerError::corrupt(
            format!("event {}", event.seq),
            format!("an admitted submission does not decode: {e}"),
        )
    })
}

/// The canonical task id of a committed `submission.received` event.
pub fn submission_task(event: &Event) -> Result<String> {
    if event.kind != kinds::SUBMISSION_RECEIVED {
        return Err(LedgerError::NotFound {
            what: format!("submission at seq {} (event is {})", event.seq, event.kind),
        });
    }
    let sub = decode_committed_submission(event)?;
    Ok(task_key(&sub.submission.task_id).into_owned())
}

impl Docket {
    /// Submissions that are the latest of their task and have no verdict:
    /// what auto-verify owes after a restart. In log order.
    pub fn pending_verification(&self) -> Vec<u64> {
        let state = self.ledger().state();
        let mut pending: Vec<u64> = state
            .domain
            .verdicts
            .tasks
            .values()
            .filter_map(|t| {
                let latest = t.submissions.last()?;
                let judged = t
                    .verdict
                    .as_ref()
                    .is_some_and(|v| v.submission_seq == latest.seq);
                (!judged).then_some(latest.seq)
            })
            .collect();
        pending.sort_unstable();
        pending
    }

    /// Runs auto-verify on every [`Docket::pending_verification`]
    /// submission; returns the sequence numbers judged.
    pub fn resume_pending_verification(&self) -> Result<Vec<u64>> {
        let mut judged = Vec::new();
        for seq in self.pending_verification() {
            match self.verify_submission(seq) {
                Ok(_) => {
                    tracing::info!("auto-verify: judged submission {seq} left pending by a stop");
                    judged.push(seq);
                }
                // A newer submission or an external verdict landed meanwhile.
                Err(LedgerError::FailedPrecondition(m)) => {
                    tracing::info!("auto-verify: submission {seq} no longer pending: {m}");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(judged)
    }

    /// Runs the verdict engine on submission `submission_seq` and appends
    /// its checks and verdict, signed by the ledger key. Deterministic:
    /// evaluated at the submission's ledger time, so re-running it gives the
    /// same statements (appended once: duplicates are idempotent).
    pub fn verify_submission(&self, submission_seq: u64) -> Result<VerifyOutcome> {
        let verdict = self.evaluate_submission(submission_seq)?;
        let key = self.ledger().ledger_key();
        let mut statements = Vec::with_capacity(verdict.checks.len() + 1);
        for (name, passed) in &verdict.checks {
            let findings: Vec<&Finding> = verdict
                .findings
                .iter()
                .filter(|f| &f.check == name)
                .collect();
            let check = CheckRecorded {
                task_id: verdict.task_id.clone(),
                submission_seq: Some(submission_seq),
                name: name.clone(),
                passed: *passed,
                details: Some(serde_json::json!({ "findings": findings })),
            };
            // Invariant: plain data serialises.
            let payload = serde_json::to_vec(&check).expect("check serialises");
            statements.push(Statement::sign(kinds::CHECK_RECORDED, payload, key));
        }
        let mut doc = serde_json::to_value(&verdict).map_err(|e| LedgerError::Invalid {
            what: "verdict".into(),
            violations: vec![e.to_string()],
        })?;
        if let Some(map) = doc.as_object_mut() {
            map.insert("submission_seq".into(), submission_seq.into());
            // Verdict provenance (docs/DOMAIN.md): the engine, its version
            // and the digest of its rule set.
            map.insert(
                "engine".into(),
                crate::verdicts::provenance::Provenance::verifier().to_value(),
            );
        }
        // Invariant: a JSON value serialises.
        let payload = serde_json::to_vec(&doc).expect("verdict serialises");
        statements.push(Statement::sign(kinds::VERDICT_ISSUED, payload, key));
        let mut results = self.ledger().append_many(statements)?;
        // Invariant: append_many returns one result per statement, and we
        // sent at least the verdict.
        let verdict_receipt = results.pop().expect("verdict result")?;
        let check_receipts = results.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(VerifyOutcome {
            verdict,
            check_receipts,
            verdict_receipt,
        })
    }

    /// The verdict the engine gives submission `submission_seq` (appends
    /// nothing).
    pub fn evaluate_submission(&self, submission_seq: u64) -> Result<Verdict> {
        let event = self.ledger().event(submission_seq)?;
        if event.kind != kinds::SUBMISSION_RECEIVED {
            return Err(LedgerError::NotFound {
                what: format!(
                    "submission at seq {submission_seq} (event is {})",
                    event.kind
                ),
            });
        }
        let sub = decode_committed_submission(&event)?;
        let task_id = task_key(&sub.submission.task_id);
        let (contract_seq, records) = {
            let state = self.ledger().state();
            let task = state
                .domain
                .verdicts
                .tasks
                .get(task_id.as_ref())
                .ok_or_else(|| LedgerError::NotFound {
                    what: format!("task {task_id}"),
                })?;
            let records: Vec<(String, OidRecord)> = sub
                .evidence_oids
                .iter()
                .filter_map(|o| {
                    state
                        .domain
                        .oids
                        .oids
                        .get(o)
                        .map(|r| (o.clone(), r.clone()))
                })
                .collect();
            (task.contract.seq, records)
        };
        let contract_bytes = self.ledger().event(contract_seq)?.payload;
        let contract = TaskContract::parse(&contract_bytes).map_err(|vs| LedgerError::Corrupt {
            location: format!("event {contract_seq}"),
            detail: format!(
                "admitted contract no longer parses: {} violation(s)",
                vs.len()
            ),
        })?;
        let mut source = BlobArtifacts::default();
        let mut budget = self.options().max_verify_bytes;
        for (o, r) in &records {
            let entry = if r.state != OidState::Live {
                // Removed content is simply absent: the engine reports the
                // evidence missing (fail closed).
                continue;
            } else if r.size > budget {
                Err(format!(
                    "evidence {o} ({} bytes) exceeds the auto-verify budget",
                    r.size
                ))
            } else {
                match parse_digest(&r.sha256).and_then(|d| self.blobs().read_verified(&d, r.size)) {
                    Ok(bytes) => {
                        budget -= bytes.len() as u64;
                        Ok(bytes)
                    }
                    Err(LedgerError::NotFound { .. }) => continue,
                    Err(e) => Err(format!("evidence {o}: {e}")),
                }
            };
            source.blobs.insert(r.artifact_name.clone(), entry);
        }
        // The signed submission is the submission: when its submit.json is
        // not among the evidence, the engine reads the statement itself;
        // when it is, the two must agree.
        let mut mismatch = None;
        match source.blobs.get("submit.json") {
            None => {
                source
                    .blobs
                    .insert("submit.json".into(), Ok(event.payload.clone()));
            }
            Some(Ok(bytes)) => {
                let from_blob = Submission::parse(bytes).ok();
                let from_stmt = Submission::parse(&event.payload).ok();
                if from_blob != from_stmt {
                    mismatch = Some(Finding {
                        check: "schema_valid".into(),
                        rule: "ledger.submit_json_matches_statement".into(),
                        reason_code: ReasonCode::EvidenceTampered,
                        file: "submit.json".into(),
                        line: None,
                        message:
                            "the submit.json evidence differs from the signed submission statement"
                                .into(),
                    });
                }
            }
            Some(Err(_)) => {}
        }
        let at_ms = i128::from(event.recorded_at_ms) * 1_000_000;
        let evaluated_at = time::OffsetDateTime::from_unix_timestamp_nanos(at_ms)
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
        let mut verdict = evaluate(&contract, &source, evaluated_at);
        // What only the ledger knows (docs/DOMAIN.md §3.3.1, §3.11): gateway
        // attestation and harness approvals bound to ledger approvals.
        let blob = |n: &str| source.blobs.get(n).and_then(|b| b.as_deref().ok());
        let (ledger_checks, ledger_findings) = self.ledger_findings(
            &contract,
            task_id.as_ref(),
            submission_seq,
            &event.author,
            blob("report.json"),
            blob("events.normalized.jsonl"),
        )?;
        if mismatch.is_some() || !ledger_checks.is_empty() || !ledger_findings.is_empty() {
            let mut findings = verdict.findings.clone();
            findings.extend(mismatch);
            findings.extend(ledger_findings);
            let mut checks = verdict.checks.clone();
            for c in ledger_checks {
                checks.entry(c.to_string()).or_insert(true);
            }
            verdict = Verdict::from_checks(
                verdict.task_id.clone(),
                checks,
                findings,
                verdict.timestamps.clone(),
                verdict.links.clone(),
                verdict.evidence_digests.clone(),
            );
        }
        verdict.timestamps.submitted_at = Some(ms_to_rfc3339(event.recorded_at_ms));
        verdict.evidence_oids = sub.evidence_oids.clone();
        Ok(verdict)
    }
}

/// Evidence blobs loaded for the engine: name → content, or why it is
/// unusable (digest mismatch, over budget).
#[derive(Debug, Default)]
struct BlobArtifacts {
    blobs: BTreeMap<String, std::result::Result<Vec<u8>, String>>,
}

impl ArtifactSource for BlobArtifacts {
    fn list(&self) -> std::result::Result<Vec<String>, VerifierError> {
        Ok(self.blobs.keys().cloned().collect())
    }

    fn read(&self, name: &str) -> std::result::Result<Option<Vec<u8>>, VerifierError> {
        match self.blobs.get(name) {
            None => Ok(None),
            Some(Ok(bytes)) => Ok(Some(bytes.clone())),
            Some(Err(msg)) => Err(VerifierError::ArtifactUnreadable {
                name: name.to_string(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, msg.clone()),
            }),
        }
    }
}
