//! Admission of domain statements: may this statement be appended now?
//!
//! Pure: reads only the [`LedgerState`] and the [`AdmitContext`] (the
//! sequence number and ledger time the event would get), never the clock or
//! the disk, because replay re-runs it for every event. The core has already
//! checked the signature, that the author is a known, unrevoked key inside
//! its validity window, and that it holds a role the kind allows
//! ([`crate::authority::KINDS`]). What is checked here, in this order:
//!
//! 1. the payload schema, listing every violated rule (`Invalid`);
//! 2. that everything it references exists (`NotFound`) and that ids it
//!    creates do not (`AlreadyExists`);
//! 3. separation of duties (`PermissionDenied`);
//! 4. that the task's state allows it now (`FailedPrecondition`).
//!
//! Blob presence for `evidence.registered` is a disk fact and so is checked
//! by the service ([`super::service::Docket`]) before it appends.

use std::collections::BTreeSet;

use docket_verifier::execution::ExecutionRecord;
use docket_verifier::submit::Submission;
use docket_verifier::verdict::{Outcome, Verdict};
use docket_verifier::{EvidenceType, TaskContract};

use crate::error::{LedgerError, Result};
use crate::event::Statement;
use crate::state::{AdmitContext, LedgerState};

use super::kinds;
use super::oid;
use super::payloads::EvidenceRegistered;
use super::payloads::{
    Fields, RETENTION_CLASSES, finish, from_violations, is_artifact_name, is_check_name,
    is_media_type, is_sha256_hex, json_object, task_key,
};
use super::projections::{ApprovalState, Hex32, OidState, TaskState};

/// Longest actor, scope, mutation mode (bytes).
const MAX_LABEL: usize = 256;
/// Longest note or reason (bytes).
const MAX_NOTE: usize = 4096;

/// Decides whether a domain statement may be appended at `ctx`.
pub fn admit(state: &LedgerState, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
    match stmt.kind.as_str() {
        kinds::TASK_REGISTERED => admit_task(state, stmt),
        kinds::EVIDENCE_REGISTERED => admit_evidence(state, stmt, ctx),
        kinds::EXECUTION_RECORDED => admit_execution(state, stmt),
        kinds::SUBMISSION_RECEIVED => admit_submission(state, stmt),
        kinds::CHECK_RECORDED => admit_check(state, stmt),
        kinds::VERDICT_ISSUED => admit_verdict(state, stmt),
        kinds::APPROVAL_REQUESTED => admit_approval_request(state, stmt, ctx),
        kinds::APPROVAL_GRANTED | kinds::APPROVAL_DENIED => {
            admit_approval_decision(state, stmt, ctx)
        }
        other => Err(LedgerError::FailedPrecondition(format!(
            "kind {other} is not supported by this ledger yet"
        ))),
    }
}

fn task<'s>(state: &'s LedgerState, raw_id: &str) -> Result<&'s TaskState> {
    state
        .domain
        .verdicts
        .tasks
        .get(task_key(raw_id).as_ref())
        .ok_or_else(|| LedgerError::NotFound {
            what: format!("task {raw_id}"),
        })
}

/// Separation of duties: a key that authored a task's evidence, executions
/// or submissions may not check, judge or approve it.
fn not_submitter(task: &TaskState, stmt: &Statement, action: &str) -> Result<()> {
    if task.submitters.contains(&Hex32(stmt.author)) {
        return Err(LedgerError::denied(
            &stmt.kind,
            &stmt.author,
            format!(
                "separation of duties: this key submitted material for task {} and cannot {action} it",
                task.task_id
            ),
        ));
    }
    Ok(())
}

/// Each OID must be registered (NotFound) to `task` (Invalid).
fn check_oids(state: &LedgerState, task: &TaskState, what: &str, oids: &[String]) -> Result<()> {
    let mut violations = Vec::new();
    for o in oids {
        match state.domain.oids.oids.get(o) {
            None => {
                return Err(LedgerError::NotFound {
                    what: format!("evidence OID {o}"),
                });
            }
            Some(r) if r.task_id != task.task_id => violations.push(format!(
                "evidence_oids: {o} is registered to task {}, not {}",
                r.task_id, task.task_id
            )),
            Some(_) => {}
        }
    }
    finish(what, violations)
}

/// Reads an optional `evidence_oids` array of well-formed, distinct OIDs.
fn read_oids(f: &mut Fields<'_>, required: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, o) in f
        .strings("evidence_oids", required)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        if !oid::is_oid(o) {
            f.violate(
                &format!("evidence_oids/{i}"),
                format!("{o:?} is not an OID (26-character ULID, upper case)"),
            );
        } else if !seen.insert(o) {
            f.violate(
                &format!("evidence_oids/{i}"),
                format!("{o} is listed twice"),
            );
        } else {
            out.push(o.to_string());
        }
    }
    out
}

fn admit_task(state: &LedgerState, stmt: &Statement) -> Result<()> {
    let contract = TaskContract::parse(&stmt.payload)
        .map_err(|vs| from_violations(kinds::TASK_REGISTERED, vs))?;
    let id = contract.task_id.to_string();
    if let Some(t) = state.domain.verdicts.tasks.get(&id) {
        return Err(LedgerError::AlreadyExists {
            what: format!("task {id} (registered at seq {})", t.contract.seq),
        });
    }
    Ok(())
}

/// Validates an `evidence.registered` payload (every violation listed) and
/// decodes it.
pub fn evidence_schema(payload: &[u8]) -> Result<EvidenceRegistered> {
    const WHAT: &str = kinds::EVIDENCE_REGISTERED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&[
        "task_id",
        "evidence_type",
        "sha256",
        "size",
        "media_type",
        "retention_class",
        "name",
    ]);
    f.text("task_id", true, MAX_LABEL);
    if let Some(t) = f.str("evidence_type", true)
        && t.parse::<EvidenceType>().is_err()
    {
        let names: Vec<&str> = EvidenceType::ALL.iter().map(|t| t.as_str()).collect();
        f.violate(
            "evidence_type",
            format!("{t:?} is not one of {}", names.join(", ")),
        );
    }
    if let Some(d) = f.str("sha256", true)
        && !is_sha256_hex(d)
    {
        f.violate("sha256", "must be 64 lower-case hex digits");
    }
    f.u64("size", true);
    if let Some(m) = f.str("media_type", true)
        && !is_media_type(m)
    {
        f.violate(
            "media_type",
            format!("{m:?} is not a media type (type/subtype)"),
        );
    }
    if let Some(c) = f.str("retention_class", false)
        && !RETENTION_CLASSES.contains(&c)
    {
        f.violate(
            "retention_class",
            format!("{c:?} is not one of routine, high_impact, pinned"),
        );
    }
    if let Some(n) = f.str("name", false)
        && !is_artifact_name(n)
    {
        f.violate(
            "name",
            format!("{n:?} is not a relative path without empty, . or .. components"),
        );
    }
    finish(WHAT, f.violations)?;
    serde_json::from_slice(payload).map_err(|e| LedgerError::Invalid {
        what: WHAT.into(),
        violations: vec![e.to_string()],
    })
}

fn admit_evidence(state: &LedgerState, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
    let p = evidence_schema(&stmt.payload)?;
    task(state, &p.task_id)?;
    let minted = oid::of_statement(stmt, ctx.recorded_at_ms);
    if let Some(r) = state.domain.oids.oids.get(&minted) {
        return Err(LedgerError::AlreadyExists {
            what: format!("OID {minted} (registered at seq {})", r.registered_seq),
        });
    }
    Ok(())
}

fn admit_execution(state: &LedgerState, stmt: &Statement) -> Result<()> {
    const WHAT: &str = kinds::EXECUTION_RECORDED;
    let mut violations: Vec<String> = match ExecutionRecord::parse(&stmt.payload) {
        Ok(_) => Vec::new(),
        Err(vs) => vs.iter().map(ToString::to_string).collect(),
    };
    let map = json_object(WHAT, &stmt.payload)?;
    let mut f = Fields::new(&map);
    let task_id = f.text("task_id", true, MAX_LABEL).map(str::to_string);
    let oids = read_oids(&mut f, false);
    violations.extend(f.violations);
    finish(WHAT, violations)?;
    // Invariant: finish() returned Ok, so the required task_id was read.
    let task = task(state, &task_id.expect("task_id validated"))?;
    check_oids(state, task, WHAT, &oids)
}

fn admit_submission(state: &LedgerState, stmt: &Statement) -> Result<()> {
    const WHAT: &str = kinds::SUBMISSION_RECEIVED;
    let parsed = Submission::parse(&stmt.payload);
    let mut violations: Vec<String> = match &parsed {
        Ok(_) => Vec::new(),
        Err(vs) => vs.iter().map(ToString::to_string).collect(),
    };
    let map = json_object(WHAT, &stmt.payload)?;
    let mut f = Fields::new(&map);
    let oids = read_oids(&mut f, true);
    violations.extend(f.violations);
    finish(WHAT, violations)?;
    // Invariant: finish() returned Ok, so Submission::parse succeeded.
    let submission = parsed.expect("submission validated");
    let task = task(state, &submission.task_id)?;
    check_oids(state, task, WHAT, &oids)?;
    let mut names = BTreeSet::new();
    let mut violations = Vec::new();
    for o in &oids {
        // Invariant: check_oids found every OID in the registry.
        let r = &state.domain.oids.oids[o];
        if !names.insert(r.artifact_name.as_str()) {
            violations.push(format!(
                "evidence_oids: two OIDs have the artifact name {:?}",
                r.artifact_name
            ));
        }
    }
    finish(WHAT, violations)?;
    for o in &oids {
        let r = &state.domain.oids.oids[o];
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

/// The submission a check or verdict is about: `submission_seq` when given
/// (it must be the task's latest), else the latest.
fn judged_submission(task: &TaskState, submission_seq: Option<u64>) -> Result<u64> {
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

fn admit_check(state: &LedgerState, stmt: &Statement) -> Result<()> {
    const WHAT: &str = kinds::CHECK_RECORDED;
    let map = json_object(WHAT, &stmt.payload)?;
    let mut f = Fields::new(&map);
    f.only(&["task_id", "submission_seq", "name", "passed", "details"]);
    let task_id = f.text("task_id", true, MAX_LABEL);
    let submission_seq = f.u64("submission_seq", false);
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
    // Invariant: finish() returned Ok, so the required task_id was read.
    let task = task(state, task_id.expect("task_id validated"))?;
    not_submitter(task, stmt, "check")?;
    judged_submission(task, submission_seq)?;
    Ok(())
}

fn admit_verdict(state: &LedgerState, stmt: &Statement) -> Result<()> {
    const WHAT: &str = kinds::VERDICT_ISSUED;
    let parsed = Verdict::parse(&stmt.payload);
    let mut violations: Vec<String> = match &parsed {
        Ok(_) => Vec::new(),
        Err(vs) => vs.iter().map(ToString::to_string).collect(),
    };
    let map = json_object(WHAT, &stmt.payload)?;
    let mut f = Fields::new(&map);
    let submission_seq = f.u64("submission_seq", false);
    let oids = read_oids(&mut f, false);
    violations.extend(f.violations);
    finish(WHAT, violations)?;
    // Invariant: finish() returned Ok, so Verdict::parse succeeded.
    let verdict = parsed.expect("verdict validated");
    let task = task(state, &verdict.task_id)?;
    check_oids(state, task, WHAT, &oids)?;
    not_submitter(task, stmt, "judge")?;
    let judged = judged_submission(task, submission_seq)?;
    if verdict.verdict == Outcome::Pass {
        // No check, no PASS: every required check passed (in the verdict or
        // recorded for this submission), no recorded check failed, and every
        // required evidence type is among the submission's evidence.
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
        // Invariant: judged_submission returned a seq of this task's submissions.
        let sub = task
            .submissions
            .iter()
            .find(|s| s.seq == judged)
            .expect("judged submission exists");
        // The submission statement is itself the submit.json document.
        let types: BTreeSet<&str> = sub
            .evidence_oids
            .iter()
            .filter_map(|o| state.domain.oids.oids.get(o))
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
        finish(WHAT, violations)?;
    }
    Ok(())
}

fn admit_approval_request(state: &LedgerState, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
    const WHAT: &str = kinds::APPROVAL_REQUESTED;
    let map = json_object(WHAT, &stmt.payload)?;
    let mut f = Fields::new(&map);
    f.only(&[
        "task_id",
        "actor",
        "scope",
        "mutation_mode",
        "timestamp",
        "expires_at",
        "note",
    ]);
    let task_id = f.text("task_id", true, MAX_LABEL);
    f.text("actor", true, MAX_LABEL);
    f.text("scope", true, MAX_LABEL);
    f.text("mutation_mode", true, MAX_LABEL);
    let at = f.timestamp("timestamp", true);
    let exp = f.timestamp("expires_at", false);
    f.text("note", false, MAX_NOTE);
    if let (Some(at), Some(exp)) = (at, exp)
        && exp <= at
    {
        f.violate("expires_at", "must be after timestamp");
    }
    finish(WHAT, f.violations)?;
    // Invariant: finish() returned Ok, so the required task_id was read.
    task(state, task_id.expect("task_id validated"))?;
    if let Some(exp) = exp
        && exp < i128::from(ctx.recorded_at_ms)
    {
        return Err(LedgerError::FailedPrecondition(
            "the request's expires_at is already past (ledger time)".into(),
        ));
    }
    Ok(())
}

fn admit_approval_decision(
    state: &LedgerState,
    stmt: &Statement,
    ctx: &AdmitContext,
) -> Result<()> {
    let what = stmt.kind.as_str();
    let granted = what == kinds::APPROVAL_GRANTED;
    let map = json_object(what, &stmt.payload)?;
    let mut f = Fields::new(&map);
    f.only(&[
        "task_id",
        "request_seq",
        "actor",
        "scope",
        "mutation_mode",
        "timestamp",
        "expires_at",
        "reason",
    ]);
    let task_id = f.text("task_id", true, MAX_LABEL);
    let request_seq = f.u64("request_seq", true);
    let actor = f.text("actor", true, MAX_LABEL);
    let scope = f.text("scope", true, MAX_LABEL);
    let mode = f.text("mutation_mode", true, MAX_LABEL);
    let at = f.timestamp("timestamp", true);
    let exp = f.timestamp("expires_at", false);
    f.text("reason", !granted, MAX_NOTE);
    if !granted && map.contains_key("expires_at") {
        f.violate("expires_at", "only a grant carries an expiry");
    }
    if let (Some(at), Some(exp)) = (at, exp)
        && exp <= at
    {
        f.violate("expires_at", "must be after timestamp");
    }
    finish(what, f.violations)?;
    // Invariant: finish() returned Ok, so every required field was read.
    let (task_id, request_seq, actor, scope, mode) = (
        task_id.expect("validated"),
        request_seq.expect("validated"),
        actor.expect("validated"),
        scope.expect("validated"),
        mode.expect("validated"),
    );
    let task = task(state, task_id)?;
    let Some(req) = task.approvals.get(&request_seq) else {
        return Err(LedgerError::NotFound {
            what: format!("approval request {request_seq} of task {}", task.task_id),
        });
    };
    let mut violations = Vec::new();
    if req.scope != scope {
        violations.push(format!(
            "scope: {scope:?} differs from the request's {:?}",
            req.scope
        ));
    }
    if req.mutation_mode != mode {
        violations.push(format!(
            "mutation_mode: {mode:?} differs from the request's {:?}",
            req.mutation_mode
        ));
    }
    if let (Some(exp), Some(req_exp)) = (exp, req.expires_at_ms)
        && exp > i128::from(req_exp)
    {
        violations.push("expires_at: a grant cannot outlive the request's expiry".into());
    }
    finish(what, violations)?;
    if req.requested_by == Hex32(stmt.author) {
        return Err(LedgerError::denied(
            what,
            &stmt.author,
            "separation of duties: nobody answers their own approval request",
        ));
    }
    if req.actor.trim().eq_ignore_ascii_case(actor.trim()) {
        return Err(LedgerError::denied(
            what,
            &stmt.author,
            format!(
                "separation of duties: actor {actor:?} requested this approval and cannot answer it"
            ),
        ));
    }
    not_submitter(task, stmt, "approve")?;
    if req.state != ApprovalState::Requested {
        return Err(LedgerError::FailedPrecondition(format!(
            "approval request {request_seq} was already {} at seq {}",
            req.state.as_str(),
            req.decided_seq.unwrap_or_default()
        )));
    }
    if req.state_at(ctx.recorded_at_ms) == ApprovalState::Expired {
        return Err(LedgerError::FailedPrecondition(format!(
            "approval request {request_seq} has expired"
        )));
    }
    Ok(())
}
