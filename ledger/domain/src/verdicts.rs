//! The submissions aggregate: what a submitter hands in about a task
//! (`execution.recorded`, `submission.received`) and what a verifier says
//! about the latest attempt (`check.recorded`, `verdict.issued`): payloads,
//! admission rules and folds into the task record ([`crate::tasks`]).
//!
//! Seed documents are decoded with `docket-verifier`'s schemas (seed 002
//! execution records, `scc.submit.v1`, `scc.verdict.v1`) plus the fields
//! Docket adds (`task_id` on execution records, `evidence_oids` on
//! submissions, `submission_seq` on verdicts); `check.recorded` is Docket's
//! own and refuses unknown fields.
//!
//! Separation of duties: a task's submitters (keys that authored its
//! evidence, executions or submissions) may not check or judge it.

pub mod imported;
pub mod provenance;

use std::collections::BTreeSet;

use docket_verifier::execution::{ExecutionRecord, ExecutionStatus};
use docket_verifier::submit::{Submission, SubmitStatus};
use docket_verifier::verdict::{Outcome, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::kind::names;
use crate::oids::{OidRegistry, OidState, are_distinct_oids, read_oids};
use crate::schema::{
    Fields, Hex32, MAX_LABEL, decode_checked, direct, finish, is_check_name, is_text, json_object,
};
use crate::tasks::{
    CheckInfo, ExecutionInfo, SubmissionInfo, TaskState, VerdictInfo, VerdictStatus,
    VerdictsProjection,
};

/// Merges the verifier's violations (if its schema refused the document)
/// with Docket's own field violations.
fn merged<T>(parsed: &std::result::Result<T, Vec<docket_verifier::Violation>>) -> Vec<String> {
    match parsed {
        Ok(_) => Vec::new(),
        Err(vs) => vs.iter().map(ToString::to_string).collect(),
    }
}

/// The fields Docket adds to seed documents, read straight from the
/// payload for the decoders' fast path ([`direct`]; other fields are the
/// seed schema's, which `docket-verifier` checks). Each is what [`Fields`]
/// accepts: a missing or `null` field is None, a wrong type refuses the
/// whole struct (and so takes the checked path). It ignores the seed
/// fields unchecked, so it is read only after the seed document's reader
/// accepted the same bytes.
#[derive(Deserialize)]
struct DocketFields {
    task_id: Option<String>,
    evidence_oids: Option<Vec<String>>,
    touched_oids: Option<Vec<String>>,
    submission_seq: Option<u64>,
    /// An object, or the struct is refused (`Map` reads only objects).
    engine: Option<serde_json::Map<String, Value>>,
}

/// An optional OID list that reads without a violation: the OIDs (none
/// when absent); None when an entry is malformed or repeated.
fn oids_or_empty(oids: Option<Vec<String>>) -> Option<Vec<String>> {
    match oids {
        None => Some(Vec::new()),
        Some(o) => are_distinct_oids(&o).then_some(o),
    }
}

/// The submission a check or verdict is about: `submission_seq` when given
/// (it must be the task's latest), else the latest.
pub fn judged_submission(task: &TaskState, submission_seq: Option<u64>) -> Result<u64> {
    let Some(latest) = task.latest_submission().map(|s| s.seq) else {
        return Err(LedgerError::FailedPrecondition(format!(
            "task {} has no submission to judge",
            task.task_id
        )));
    };
    match submission_seq {
        None => Ok(latest),
        Some(s) if s == latest => Ok(s),
        Some(s) if task.submissions.iter().any(|x| x.seq == s) => {
            Err(LedgerError::FailedPrecondition(format!(
                "submission {s} of task {} was superseded by submission {latest}",
                task.task_id
            )))
        }
        Some(s) => Err(LedgerError::NotFound {
            what: format!("submission {s} of task {}", task.task_id),
        }),
    }
}

/// The latest submission of a task, for the fold of a check or verdict
/// (admission guaranteed one).
fn latest_for_fold(task: &TaskState, event: &Event) -> Result<u64> {
    task.latest_submission().map(|s| s.seq).ok_or_else(|| {
        LedgerError::corrupt(
            format!("event {}", event.seq),
            format!(
                "{} for task {}, which has no submission",
                event.kind, task.task_id
            ),
        )
    })
}

// ------------------------------------------------------------ execution.recorded

/// `execution.recorded`: a seed 002 execution record plus the task it is
/// for and the evidence it produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionRecorded {
    /// The task (as written).
    pub task_id: String,
    /// OIDs of the evidence, registered to the same task.
    pub evidence_oids: Vec<String>,
    /// The record, every seed 002 rule checked (`evidence_hash` recomputed).
    pub record: ExecutionRecord,
}

/// Decodes `execution.recorded` (every violation of the record and of the
/// Docket fields listed together).
pub fn decode_execution(payload: &[u8]) -> Result<ExecutionRecorded> {
    let parsed = ExecutionRecord::parse(payload);
    // Fast path: a valid record whose Docket fields read without a
    // violation (the checks below, typed).
    if parsed.is_ok()
        && let Some(d) = direct::<DocketFields>(payload)
        && let Some(task_id) = d.task_id.filter(|t| is_text(t, MAX_LABEL))
        && let Some(evidence_oids) = oids_or_empty(d.evidence_oids)
        && let Ok(record) = parsed
    {
        return Ok(ExecutionRecorded {
            task_id,
            evidence_oids,
            record,
        });
    }
    decode_execution_checked(payload, parsed)
}

/// [`decode_execution`] through [`Fields`]: every violation of the document
/// (`parsed`) and of the Docket fields named.
fn decode_execution_checked(
    payload: &[u8],
    parsed: std::result::Result<ExecutionRecord, Vec<docket_verifier::Violation>>,
) -> Result<ExecutionRecorded> {
    const WHAT: &str = names::EXECUTION_RECORDED;
    let mut violations = merged(&parsed);
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    let task_id = f.text("task_id", true, MAX_LABEL).map(str::to_string);
    let evidence_oids = read_oids(&mut f, false);
    violations.extend(f.violations);
    finish(WHAT, violations)?;
    match (parsed, task_id) {
        (Ok(record), Some(task_id)) => Ok(ExecutionRecorded {
            task_id,
            evidence_oids,
            record,
        }),
        // Invariant: finish() returned Ok, so the record parsed and the
        // required task_id was read; answer like a violation regardless.
        _ => Err(crate::schema::invalid(WHAT, "payload does not decode")),
    }
}

/// `execution.recorded`: the task exists and the OIDs are its own.
pub fn admit_execution(
    tasks: &VerdictsProjection,
    oids: &OidRegistry,
    p: &ExecutionRecorded,
) -> Result<()> {
    let task = tasks.task(&p.task_id)?;
    oids.check_task(task, names::EXECUTION_RECORDED, &p.evidence_oids)
}

/// The seed spelling of an execution status.
fn execution_status(s: ExecutionStatus) -> &'static str {
    match s {
        ExecutionStatus::Success => "SUCCESS",
        ExecutionStatus::Failure => "FAILURE",
        ExecutionStatus::NoEvidence => "NO_EVIDENCE",
    }
}

/// Folds `execution.recorded`: the author becomes a submitter of the task.
pub fn fold_execution(
    tasks: &mut VerdictsProjection,
    event: &Event,
    p: &ExecutionRecorded,
) -> Result<()> {
    let task = tasks.task_for_fold(&p.task_id, event)?;
    let by = Hex32(event.author);
    task.submitters.insert(by);
    task.executions.push(ExecutionInfo {
        seq: event.seq,
        by,
        status: execution_status(p.record.status).to_string(),
        exit_code: p.record.exit_code,
        evidence_hash: p.record.evidence_hash.to_ascii_lowercase(),
        evidence_oids: p.evidence_oids.clone(),
    });
    Ok(())
}

// ------------------------------------------------------------ submission.received

/// `submission.received`: an `scc.submit.v1` document plus the OIDs of its
/// evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionReceived {
    /// The document, every stateless rule of seed 000 §2 checked.
    pub submission: Submission,
    /// Distinct, well-formed OIDs (may be empty).
    pub evidence_oids: Vec<String>,
    /// The executor's `touched_oids` (seed 001 executor output): distinct,
    /// well-formed OIDs, each registered (to any task) before the
    /// submission; optional.
    pub touched_oids: Vec<String>,
}

/// Decodes `submission.received` (every violation of the document and of
/// `evidence_oids` listed together).
pub fn decode_submission(payload: &[u8]) -> Result<SubmissionReceived> {
    let parsed = Submission::parse(payload);
    // Fast path: a valid document whose Docket fields read without a
    // violation (`evidence_oids` required, `touched_oids` optional).
    if parsed.is_ok()
        && let Some(d) = direct::<DocketFields>(payload)
        && let Some(evidence_oids) = d.evidence_oids.filter(|o| are_distinct_oids(o))
        && let Some(touched_oids) = oids_or_empty(d.touched_oids)
        && let Ok(submission) = parsed
    {
        return Ok(SubmissionReceived {
            submission,
            evidence_oids,
            touched_oids,
        });
    }
    decode_submission_checked(payload, parsed)
}

/// [`decode_submission`] through [`Fields`]: every violation of the document
/// (`parsed`) and of the Docket fields named.
fn decode_submission_checked(
    payload: &[u8],
    parsed: std::result::Result<Submission, Vec<docket_verifier::Violation>>,
) -> Result<SubmissionReceived> {
    const WHAT: &str = names::SUBMISSION_RECEIVED;
    let mut violations = merged(&parsed);
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    let evidence_oids = read_oids(&mut f, true);
    let touched_oids = crate::oids::read_oid_field(&mut f, "touched_oids", false);
    violations.extend(f.violations);
    finish(WHAT, violations)?;
    match parsed {
        Ok(submission) => Ok(SubmissionReceived {
            submission,
            evidence_oids,
            touched_oids,
        }),
        // Invariant: finish() returned Ok, so Submission::parse succeeded;
        // answer like a violation regardless.
        Err(vs) => Err(crate::schema::from_violations(WHAT, vs)),
    }
}

/// `submission.received`: the task exists; every OID is the task's, no two
/// share an artifact name, and every one still holds its content; every
/// `touched_oids` entry is a registered OID (`NotFound` naming it).
pub fn admit_submission(
    tasks: &VerdictsProjection,
    oids: &OidRegistry,
    p: &SubmissionReceived,
) -> Result<()> {
    const WHAT: &str = names::SUBMISSION_RECEIVED;
    let task = tasks.task(&p.submission.task_id)?;
    oids.check_task(task, WHAT, &p.evidence_oids)?;
    for o in &p.touched_oids {
        if !oids.oids.contains_key(o) {
            return Err(LedgerError::NotFound {
                what: format!("touched_oids: evidence OID {o} (not registered)"),
            });
        }
    }
    let mut seen = BTreeSet::new();
    let mut violations = Vec::new();
    let mut records = Vec::with_capacity(p.evidence_oids.len());
    for o in &p.evidence_oids {
        let r = oids.record(o)?;
        if !seen.insert(r.artifact_name.as_str()) {
            violations.push(format!(
                "evidence_oids: two OIDs have the artifact name {:?}",
                r.artifact_name
            ));
        }
        records.push((o, r));
    }
    finish(WHAT, violations)?;
    for (o, r) in records {
        if r.state != OidState::Live {
            return Err(LedgerError::FailedPrecondition(format!(
                "evidence {o} is {} (content removed at seq {})",
                r.state.as_str(),
                r.removal.as_ref().map_or(0, |x| x.seq)
            )));
        }
    }
    Ok(())
}

/// The seed spelling of a submission status.
fn submit_status(s: SubmitStatus) -> &'static str {
    match s {
        SubmitStatus::Done => "DONE",
        SubmitStatus::NeedInput => "NEED_INPUT",
        SubmitStatus::Failed => "FAILED",
    }
}

/// Folds `submission.received`: a new attempt, which has no checks and no
/// verdict yet (PENDING); the author becomes a submitter.
pub fn fold_submission(
    tasks: &mut VerdictsProjection,
    event: &Event,
    p: &SubmissionReceived,
) -> Result<()> {
    let task = tasks.task_for_fold(&p.submission.task_id, event)?;
    let by = Hex32(event.author);
    task.submitters.insert(by);
    task.submissions.push(SubmissionInfo {
        seq: event.seq,
        by,
        at_ms: event.recorded_at_ms,
        status: submit_status(p.submission.status).to_string(),
        sha256: Hex32::sha256(&event.payload),
        evidence_oids: p.evidence_oids.clone(),
        touched_oids: p.touched_oids.clone(),
    });
    task.checks.clear();
    task.verdict = None;
    task.status = VerdictStatus::Pending;
    task.record_change(event);
    Ok(())
}

/// Builds a `submission.received` payload: the `submit.json` document with
/// `evidence_oids` added (replacing any there). A document that is not a
/// JSON object is `Invalid` with the verifier's violations.
pub fn submission_payload(submit_json: &[u8], evidence_oids: &[String]) -> Result<Vec<u8>> {
    let mut map = match serde_json::from_slice::<Value>(submit_json) {
        Ok(Value::Object(map)) => map,
        _ => {
            let violations = match Submission::parse(submit_json) {
                Err(vs) => vs.iter().map(ToString::to_string).collect(),
                Ok(_) => vec!["submit.json must be a JSON object".into()],
            };
            return Err(LedgerError::Invalid {
                what: names::SUBMISSION_RECEIVED.into(),
                violations,
            });
        }
    };
    map.insert(
        "evidence_oids".into(),
        Value::Array(evidence_oids.iter().cloned().map(Value::String).collect()),
    );
    // Invariant: a JSON map serialises.
    Ok(serde_json::to_vec(&Value::Object(map)).expect("JSON serialises"))
}

// ------------------------------------------------------------ check.recorded

/// `check.recorded`: one named check result for a task's latest submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRecorded {
    /// The task (UUID).
    pub task_id: String,
    /// Sequence number of the submission checked; default: the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_seq: Option<u64>,
    /// Check name (`schema_valid`, `scope_valid`, ... or an evidence rule).
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// Free-form details (any JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// Decodes `check.recorded` (every violation listed).
pub fn decode_check(payload: &[u8]) -> Result<CheckRecorded> {
    // Fast path: the typed struct refuses unknown fields and wrong types;
    // the value checks are those of `decode_check_checked`.
    if let Some(p) = direct::<CheckRecorded>(payload)
        && is_text(&p.task_id, MAX_LABEL)
        && is_check_name(&p.name)
    {
        return Ok(p);
    }
    decode_check_checked(payload)
}

/// [`decode_check`] through [`Fields`]: every violation named.
fn decode_check_checked(payload: &[u8]) -> Result<CheckRecorded> {
    const WHAT: &str = names::CHECK_RECORDED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&["task_id", "submission_seq", "name", "passed", "details"]);
    f.text("task_id", true, MAX_LABEL);
    f.u64("submission_seq", false);
    if let Some(n) = f.str("name", true)
        && !is_check_name(n)
    {
        f.violate(
            "name",
            format!("{n:?} is not 1..=128 characters of [A-Za-z0-9_.:/-]"),
        );
    }
    f.bool("passed", true);
    finish(WHAT, f.violations)?;
    decode_checked(WHAT, map)
}

/// `check.recorded`: by a non-submitter of the task, about its latest
/// submission.
pub fn admit_check(tasks: &VerdictsProjection, stmt: &Statement, p: &CheckRecorded) -> Result<()> {
    let task = tasks.task(&p.task_id)?;
    task.check_not_submitter(stmt, "check")?;
    judged_submission(task, p.submission_seq)?;
    Ok(())
}

/// Folds `check.recorded`: the latest record per name wins.
pub fn fold_check(tasks: &mut VerdictsProjection, event: &Event, p: &CheckRecorded) -> Result<()> {
    let task = tasks.task_for_fold(&p.task_id, event)?;
    let latest = latest_for_fold(task, event)?;
    let info = CheckInfo {
        passed: p.passed,
        seq: event.seq,
        by: Hex32(event.author),
        submission_seq: p.submission_seq.unwrap_or(latest),
    };
    task.checks.insert(p.name.clone(), info);
    task.record_change(event);
    Ok(())
}

// ------------------------------------------------------------ verdict.issued

/// `verdict.issued`: an `scc.verdict.v1` document (its `evidence_oids`
/// distinct, well-formed OIDs) and the submission it judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictIssued {
    /// The document, every stateless rule of seed 000 §3 checked.
    pub verdict: Verdict,
    /// The submission judged; default: the task's latest.
    pub submission_seq: Option<u64>,
    /// The engine that produced it (auto-verify always records it; an
    /// external verifier may).
    pub engine: Option<provenance::Provenance>,
}

/// Decodes `verdict.issued` (every violation of the document and of the
/// Docket fields listed together).
pub fn decode_verdict(payload: &[u8]) -> Result<VerdictIssued> {
    let parsed = Verdict::parse(payload);
    // Fast path: a valid document whose Docket fields read without a
    // violation (`evidence_oids` is the document's, only checked here).
    if parsed.is_ok()
        && let Some(d) = direct::<DocketFields>(payload)
        && d.evidence_oids.as_deref().is_none_or(are_distinct_oids)
        && let Some(engine) = match &d.engine {
            None => Some(None),
            Some(obj) => match provenance::engine_object(obj) {
                (Some(p), v) if v.is_empty() => Some(Some(p)),
                _ => None,
            },
        }
        && let Ok(verdict) = parsed
    {
        return Ok(VerdictIssued {
            verdict,
            submission_seq: d.submission_seq,
            engine,
        });
    }
    decode_verdict_checked(payload, parsed)
}

/// [`decode_verdict`] through [`Fields`]: every violation of the document
/// (`parsed`) and of the Docket fields named.
fn decode_verdict_checked(
    payload: &[u8],
    parsed: std::result::Result<Verdict, Vec<docket_verifier::Violation>>,
) -> Result<VerdictIssued> {
    const WHAT: &str = names::VERDICT_ISSUED;
    let mut violations = merged(&parsed);
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    let submission_seq = f.u64("submission_seq", false);
    read_oids(&mut f, false);
    let engine = provenance::read_engine(&mut f, false);
    violations.extend(f.violations);
    finish(WHAT, violations)?;
    match parsed {
        Ok(verdict) => Ok(VerdictIssued {
            verdict,
            submission_seq,
            engine,
        }),
        // Invariant: finish() returned Ok, so Verdict::parse succeeded;
        // answer like a violation regardless.
        Err(vs) => Err(crate::schema::from_violations(WHAT, vs)),
    }
}

/// `verdict.issued`: the task exists, the OIDs are its own, the author is
/// not a submitter, the judged submission is the latest, and **no check,
/// no PASS**: a PASS needs every required check passed (in the verdict or
/// recorded), no recorded check failed, and every required evidence type
/// among the judged submission's evidence.
pub fn admit_verdict(
    tasks: &VerdictsProjection,
    oids: &OidRegistry,
    stmt: &Statement,
    p: &VerdictIssued,
) -> Result<()> {
    const WHAT: &str = names::VERDICT_ISSUED;
    let verdict = &p.verdict;
    let task = tasks.task(&verdict.task_id)?;
    oids.check_task(task, WHAT, &verdict.evidence_oids)?;
    task.check_not_submitter(stmt, "judge")?;
    let judged = judged_submission(task, p.submission_seq)?;
    if verdict.verdict != Outcome::Pass {
        return Ok(());
    }
    let mut violations = Vec::new();
    for name in &task.contract.required_checks {
        let in_verdict = verdict.checks.get(name).copied();
        let recorded = task.checks.get(name).map(|c| c.passed);
        if !(in_verdict == Some(true) || (in_verdict.is_none() && recorded == Some(true))) {
            violations.push(format!(
                "[verdict.required_check] /checks/{name}: PASS needs the contract's required check {name} passed"
            ));
        }
    }
    for (name, c) in &task.checks {
        if !c.passed {
            violations.push(format!(
                "[verdict.no_check_no_pass] /checks/{name}: check {name} was recorded as failed at seq {}",
                c.seq
            ));
        }
    }
    if let Some(sub) = task.submissions.iter().find(|s| s.seq == judged) {
        // The submission statement is itself the submit.json document.
        let types: BTreeSet<&str> = sub
            .evidence_oids
            .iter()
            .filter_map(|o| oids.oids.get(o))
            .map(|r| r.evidence_type.as_str())
            .chain(["submit.json"])
            .collect();
        for t in &task.contract.required_evidence {
            if !types.contains(t.as_str()) {
                violations.push(format!(
                    "[verdict.required_evidence] /evidence_oids: PASS needs evidence of type {t} in submission {judged}"
                ));
            }
        }
    }
    finish(WHAT, violations)
}

/// Folds `verdict.issued`: the verdict of the latest submission. The checks
/// a verdict carries count as recorded by it, unless a `check.recorded`
/// already holds that name with the same result.
pub fn fold_verdict(
    tasks: &mut VerdictsProjection,
    event: &Event,
    p: &VerdictIssued,
) -> Result<()> {
    let v = &p.verdict;
    let task = tasks.task_for_fold(&v.task_id, event)?;
    let latest = latest_for_fold(task, event)?;
    let by = Hex32(event.author);
    let submission_seq = p.submission_seq.unwrap_or(latest);
    for (name, passed) in &v.checks {
        let same = task.checks.get(name).is_some_and(|c| c.passed == *passed);
        if !same {
            task.checks.insert(
                name.clone(),
                CheckInfo {
                    passed: *passed,
                    seq: event.seq,
                    by,
                    submission_seq,
                },
            );
        }
    }
    let pass = v.verdict == Outcome::Pass;
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
        reason_code: v.reason_code.map(|c| c.as_str().to_string()),
        fail_class: v.fail_class.map(|c| c.as_str().to_string()),
        sha256: Hex32::sha256(&event.payload),
        submission_seq,
        evidence_oids: v.evidence_oids.clone(),
    });
    task.record_change(event);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TASK: &str = "00000000-0000-4000-8000-000000000001";

    /// The fast path decides and answers exactly as the checked path.
    pub(crate) fn same<T: PartialEq + std::fmt::Debug>(
        payload: &[u8],
        fast: Result<T>,
        checked: Result<T>,
    ) {
        let text = String::from_utf8_lossy(payload);
        match (fast, checked) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
            (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{text}"),
            (a, b) => panic!("{text}: fast {a:?}, checked {b:?}"),
        }
    }

    fn oids(n: u8) -> Vec<String> {
        (0..n)
            .map(|i| crate::oids::mint(1_770_000_000_000, &[i; 32]))
            .collect()
    }

    /// Every variant of `base` with `field` set to each of `values` (None:
    /// removed), as JSON bytes, plus `extra` raw payloads.
    fn variants(base: &Value, fields: &[(&str, Vec<Option<Value>>)]) -> Vec<Vec<u8>> {
        let mut out = vec![serde_json::to_vec(base).unwrap()];
        for (field, values) in fields {
            for v in values {
                let mut doc = base.clone();
                let map = doc.as_object_mut().unwrap();
                match v {
                    None => {
                        map.remove(*field);
                    }
                    Some(v) => {
                        map.insert((*field).to_string(), v.clone());
                    }
                }
                out.push(serde_json::to_vec(&doc).unwrap());
            }
        }
        let text = String::from_utf8(out[0].clone()).unwrap();
        let inner = text.trim_start_matches('{').trim_end_matches('}');
        out.push(format!("  \n{text}\t").into_bytes());
        out.push(format!("{text} x").into_bytes());
        out.push(format!("[{text}]").into_bytes());
        out.push(format!("{{{inner},{inner}}}").into_bytes());
        out.push(format!("{{{inner},\"unknown_field\":1}}").into_bytes());
        // Not UTF-8, in a field the fast path does not read.
        let mut not_utf8 = format!("{{{inner},\"unknown_field\":\"").into_bytes();
        not_utf8.extend_from_slice(b"\xff\"}");
        out.push(not_utf8);
        out.push(b"not json".to_vec());
        out.push(b"[]".to_vec());
        out.push(b"{}".to_vec());
        out
    }

    fn oid_values() -> Vec<Option<Value>> {
        let two = oids(2);
        vec![
            None,
            Some(Value::Null),
            Some(json!([])),
            Some(json!(two)),
            Some(json!([two[0], two[0]])),
            Some(json!([two[0].to_lowercase()])),
            Some(json!(["8ZZZZZZZZZZZZZZZZZZZZZZZZZ"])),
            Some(json!([1])),
            Some(json!(two[0])),
            Some(json!({"a": 1})),
        ]
    }

    fn text_values() -> Vec<Option<Value>> {
        vec![
            None,
            Some(Value::Null),
            Some(json!(TASK)),
            Some(json!("")),
            Some(json!("  ")),
            Some(json!("a\u{1}b")),
            Some(json!("x".repeat(300))),
            Some(json!(7)),
            Some(json!(["a"])),
        ]
    }

    #[test]
    fn check_fast_path_is_the_checked_path() {
        let base = json!({"task_id": TASK, "submission_seq": 4, "name": "tests_passed",
                          "passed": true, "details": {"findings": []}});
        assert!(decode_check(&serde_json::to_vec(&base).unwrap()).is_ok());
        let seqs = vec![
            None,
            Some(Value::Null),
            Some(json!(0)),
            Some(json!(-1)),
            Some(json!(1.0)),
            Some(json!("1")),
            Some(json!(u64::MAX)),
        ];
        for payload in variants(
            &base,
            &[
                ("task_id", text_values()),
                ("submission_seq", seqs),
                (
                    "name",
                    vec![
                        None,
                        Some(json!("a b")),
                        Some(json!("")),
                        Some(json!("ok.name:1/x-y")),
                        Some(json!(5)),
                    ],
                ),
                (
                    "passed",
                    vec![
                        None,
                        Some(Value::Null),
                        Some(json!(false)),
                        Some(json!("yes")),
                    ],
                ),
                (
                    "details",
                    vec![None, Some(Value::Null), Some(json!([1, {"b": 2, "a": 1}]))],
                ),
            ],
        ) {
            same(
                &payload,
                decode_check(&payload),
                decode_check_checked(&payload),
            );
        }
    }

    #[test]
    fn seed_document_fast_paths_are_the_checked_paths() {
        let record = docket_verifier::execution::ExecutionRecord::from_execution(
            "cargo test",
            0,
            "ok",
            "",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:02Z",
            2.0,
        );
        let mut execution = serde_json::to_value(record).unwrap();
        execution["task_id"] = json!(TASK);
        execution["evidence_oids"] = json!(oids(2));
        assert!(decode_execution(&serde_json::to_vec(&execution).unwrap()).is_ok());
        for payload in variants(
            &execution,
            &[("task_id", text_values()), ("evidence_oids", oid_values())],
        ) {
            let parsed = ExecutionRecord::parse(&payload);
            same(
                &payload,
                decode_execution(&payload),
                decode_execution_checked(&payload, parsed),
            );
        }

        let submission = json!({"schema_version": "scc.submit.v1", "task_id": TASK, "status": "DONE",
            "changed_files": ["src/lib.rs"], "new_files": [],
            "tests": {"commands": ["cargo test"], "passed": true, "summary": "3 passed"},
            "artifacts": {"report_md": "report.md", "selftest_log": "selftest.log", "evidence_dir": "evidence/",
                          "patch_diff": "patch.diff", "submit_json": "submit.json"},
            "exit_code": 0, "needs_input": [], "evidence_oids": oids(3)});
        assert!(decode_submission(&serde_json::to_vec(&submission).unwrap()).is_ok());
        for payload in variants(
            &submission,
            &[
                ("evidence_oids", oid_values()),
                ("touched_oids", oid_values()),
                ("status", vec![Some(json!("NOPE"))]),
            ],
        ) {
            let parsed = Submission::parse(&payload);
            same(
                &payload,
                decode_submission(&payload),
                decode_submission_checked(&payload, parsed),
            );
        }

        let engine = provenance::Provenance::verifier().to_value();
        let verdict = json!({"schema_version": "scc.verdict.v1", "task_id": TASK, "verdict": "PASS",
            "messages": [], "checks": {"schema_valid": true, "scope_valid": true, "tests_passed": true,
                                       "evidence_present": true},
            "timestamps": {"submitted_at": "2026-02-09T14:30:00.000Z", "evaluated_at": "2026-02-09T14:30:00Z"},
            "links": {"submit_json": "submit.json", "report_md": "report.md", "selftest_log": "selftest.log",
                      "patch_diff": "patch.diff"},
            "evidence_oids": oids(2), "evidence_digests": {}, "findings": [], "submission_seq": 7});
        let mut with_engine = verdict.clone();
        with_engine["engine"] = engine.clone();
        for doc in [&verdict, &with_engine] {
            let decoded = decode_verdict(&serde_json::to_vec(doc).unwrap());
            assert!(decoded.is_ok(), "{decoded:?}");
        }
        let mut bad_engine = engine.clone();
        bad_engine["rules_digest"] = json!("ABC");
        let mut extra_engine = engine.clone();
        extra_engine["extra"] = json!(1);
        for payload in variants(
            &verdict,
            &[
                ("evidence_oids", oid_values()),
                (
                    "submission_seq",
                    vec![None, Some(Value::Null), Some(json!(-3)), Some(json!("7"))],
                ),
                (
                    "engine",
                    vec![
                        None,
                        Some(Value::Null),
                        Some(engine.clone()),
                        Some(bad_engine),
                        Some(extra_engine),
                        Some(json!(["docket-verifier", "0.1.0", "0".repeat(64)])),
                        Some(json!("docket-verifier")),
                        Some(json!({})),
                    ],
                ),
            ],
        ) {
            let parsed = Verdict::parse(&payload);
            same(
                &payload,
                decode_verdict(&payload),
                decode_verdict_checked(&payload, parsed),
            );
        }
    }

    #[test]
    fn evidence_fast_path_is_the_checked_path() {
        use crate::oids::{decode_evidence, decode_evidence_checked};
        let base = json!({"task_id": TASK, "evidence_type": "patch.diff", "sha256": "ab".repeat(32),
                          "size": 12, "media_type": "text/x-diff", "retention_class": "routine",
                          "name": "patch.diff"});
        assert!(decode_evidence(&serde_json::to_vec(&base).unwrap()).is_ok());
        let strings = |good: &[Value], bad: &[Value]| -> Vec<Option<Value>> {
            let mut v = vec![None, Some(Value::Null), Some(json!(1))];
            v.extend(good.iter().chain(bad).cloned().map(Some));
            v
        };
        for payload in variants(
            &base,
            &[
                ("task_id", text_values()),
                (
                    "evidence_type",
                    strings(&[json!("selftest.log"), json!("other")], &[json!("nope")]),
                ),
                (
                    "sha256",
                    strings(
                        &[json!("0".repeat(64))],
                        &[json!("AB".repeat(32)), json!("ab")],
                    ),
                ),
                (
                    "size",
                    strings(&[json!(0)], &[json!(-1), json!(1.5), json!("1")]),
                ),
                (
                    "media_type",
                    strings(&[json!("text/plain; charset=utf-8")], &[json!("text")]),
                ),
                (
                    "retention_class",
                    strings(
                        &[json!("pinned"), json!("high_impact")],
                        &[json!("forever")],
                    ),
                ),
                (
                    "name",
                    strings(
                        &[json!("evidence/a.json")],
                        &[json!("../a"), json!("/a"), json!("")],
                    ),
                ),
            ],
        ) {
            same(
                &payload,
                decode_evidence(&payload),
                decode_evidence_checked(&payload),
            );
        }
    }
}
