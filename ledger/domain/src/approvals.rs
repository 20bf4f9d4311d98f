//! The approvals aggregate (seed 003: actor, scope, mutation mode,
//! timestamp, expiry): `approval.requested`, `approval.granted` and
//! `approval.denied`, their payloads (Docket's own: unknown fields are
//! refused), admission rules and folds into the task record
//! ([`crate::tasks`]).
//!
//! Separation of duties: nobody answers their own request (neither the
//! requesting key nor the requesting actor), and a task's submitters answer
//! none of its requests. A request's id is the sequence number of its
//! `approval.requested` event; `expired` is read at query time, never
//! folded.

use serde::{Deserialize, Serialize};

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::kind::names;
use crate::schema::{
    Fields, Hex32, MAX_LABEL, MAX_NOTE, decode_checked, finish, json_object, rfc3339_ms,
};
use crate::tasks::{ApprovalInfo, ApprovalState, VerdictsProjection};
use docket_log::machine::AdmitContext;

/// `approval.requested` (seed 003: actor, scope, mutation mode, timestamp, expiry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequested {
    pub task_id: String,
    /// Who asks (a person or system name).
    pub actor: String,
    /// What the approval covers, e.g. `merge`, `deploy:staging`.
    pub scope: String,
    /// Mutation mode, e.g. `read-only`, `workspace-write`, `real-repo`.
    pub mutation_mode: String,
    /// RFC 3339 time of the request (author's clock).
    pub timestamp: String,
    /// RFC 3339 expiry; none = does not expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `approval.granted` / `approval.denied`: the answer to one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalDecided {
    pub task_id: String,
    /// Sequence number of the `approval.requested` event answered.
    pub request_seq: u64,
    /// Who decides (must differ from the request's actor).
    pub actor: String,
    /// Must equal the request's scope.
    pub scope: String,
    /// Must equal the request's mutation mode.
    pub mutation_mode: String,
    /// RFC 3339 time of the decision (author's clock).
    pub timestamp: String,
    /// RFC 3339 expiry of a grant; default: the request's expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Why (required for a denial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An RFC 3339 expiry as Unix ms (None when absent or out of range).
fn expiry_ms(expires_at: Option<&str>) -> Option<i64> {
    expires_at
        .and_then(rfc3339_ms)
        .and_then(|t| i64::try_from(t).ok())
}

// ------------------------------------------------------------ approval.requested

/// Decodes `approval.requested` (every violation listed): non-empty labels,
/// RFC 3339 times, an expiry after the request's time.
pub fn decode_request(payload: &[u8]) -> Result<ApprovalRequested> {
    const WHAT: &str = names::APPROVAL_REQUESTED;
    let map = json_object(WHAT, payload)?;
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
    f.text("task_id", true, MAX_LABEL);
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
    decode_checked(WHAT, map)
}

/// `approval.requested`: the task exists and the expiry is not already past
/// at the ledger time of the append.
pub fn admit_request(
    tasks: &VerdictsProjection,
    ctx: &AdmitContext,
    p: &ApprovalRequested,
) -> Result<()> {
    tasks.task(&p.task_id)?;
    if let Some(exp) = p.expires_at.as_deref().and_then(rfc3339_ms)
        && exp < i128::from(ctx.recorded_at_ms)
    {
        return Err(LedgerError::FailedPrecondition(
            "the request's expires_at is already past (ledger time)".into(),
        ));
    }
    Ok(())
}

/// Folds `approval.requested`: a new request, keyed by its sequence number.
pub fn fold_request(
    tasks: &mut VerdictsProjection,
    event: &Event,
    p: &ApprovalRequested,
) -> Result<()> {
    let task = tasks.task_for_fold(&p.task_id, event)?;
    task.approvals.insert(
        event.seq,
        ApprovalInfo {
            request_seq: event.seq,
            requested_by: Hex32(event.author),
            actor: p.actor.clone(),
            scope: p.scope.clone(),
            mutation_mode: p.mutation_mode.clone(),
            requested_at: p.timestamp.clone(),
            expires_at_ms: expiry_ms(p.expires_at.as_deref()),
            state: ApprovalState::Requested,
            decided_seq: None,
            decided_by: None,
            decided_actor: None,
            note: p.note.clone(),
            reason: None,
        },
    );
    task.record_change(event);
    Ok(())
}

// ------------------------------------------------------------ approval.granted / approval.denied

/// Decodes `approval.granted` (`granted`) or `approval.denied`: a denial
/// needs a reason and carries no expiry; an expiry is after the decision's
/// time (every violation listed).
pub fn decode_decision(payload: &[u8], granted: bool) -> Result<ApprovalDecided> {
    let what = if granted {
        names::APPROVAL_GRANTED
    } else {
        names::APPROVAL_DENIED
    };
    let map = json_object(what, payload)?;
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
    f.text("task_id", true, MAX_LABEL);
    f.u64("request_seq", true);
    f.text("actor", true, MAX_LABEL);
    f.text("scope", true, MAX_LABEL);
    f.text("mutation_mode", true, MAX_LABEL);
    let at = f.timestamp("timestamp", true);
    let exp = f.timestamp("expires_at", false);
    f.text("reason", !granted, MAX_NOTE);
    if !granted && map.get("expires_at").is_some_and(|v| !v.is_null()) {
        f.violate("expires_at", "only a grant carries an expiry");
    }
    if let (Some(at), Some(exp)) = (at, exp)
        && exp <= at
    {
        f.violate("expires_at", "must be after timestamp");
    }
    finish(what, f.violations)?;
    decode_checked(what, map)
}

/// `approval.granted` / `approval.denied`: answers an open, unexpired
/// request of the task with the same scope and mutation mode (a grant
/// cannot outlive the request), by someone other than the requester and
/// not a submitter of the task.
pub fn admit_decision(
    tasks: &VerdictsProjection,
    stmt: &Statement,
    ctx: &AdmitContext,
    p: &ApprovalDecided,
) -> Result<()> {
    let what = stmt.kind.as_str();
    let task = tasks.task(&p.task_id)?;
    let request_seq = p.request_seq;
    let Some(req) = task.approvals.get(&request_seq) else {
        return Err(LedgerError::NotFound {
            what: format!("approval request {request_seq} of task {}", task.task_id),
        });
    };
    let mut violations = Vec::new();
    if req.scope != p.scope {
        violations.push(format!(
            "scope: {:?} differs from the request's {:?}",
            p.scope, req.scope
        ));
    }
    if req.mutation_mode != p.mutation_mode {
        violations.push(format!(
            "mutation_mode: {:?} differs from the request's {:?}",
            p.mutation_mode, req.mutation_mode
        ));
    }
    if let (Some(exp), Some(req_exp)) = (
        p.expires_at.as_deref().and_then(rfc3339_ms),
        req.expires_at_ms,
    ) && exp > i128::from(req_exp)
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
    if req.actor.trim().eq_ignore_ascii_case(p.actor.trim()) {
        return Err(LedgerError::denied(
            what,
            &stmt.author,
            format!(
                "separation of duties: actor {:?} requested this approval and cannot answer it",
                p.actor
            ),
        ));
    }
    task.check_not_submitter(stmt, "approve")?;
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
    // As for a request: a grant that would be expired when it is recorded
    // grants nothing.
    if let Some(exp) = p.expires_at.as_deref().and_then(rfc3339_ms)
        && exp < i128::from(ctx.recorded_at_ms)
    {
        return Err(LedgerError::FailedPrecondition(
            "the grant's expires_at is already past (ledger time)".into(),
        ));
    }
    Ok(())
}

/// Folds `approval.granted` (`granted`) or `approval.denied`: the request's
/// answer; a grant that names an expiry replaces the request's.
pub fn fold_decision(
    tasks: &mut VerdictsProjection,
    event: &Event,
    p: &ApprovalDecided,
    granted: bool,
) -> Result<()> {
    let task = tasks.task_for_fold(&p.task_id, event)?;
    let task_id = task.task_id.clone();
    let Some(a) = task.approvals.get_mut(&p.request_seq) else {
        return Err(LedgerError::corrupt(
            format!("event {}", event.seq),
            format!(
                "{} answers approval request {} of task {task_id}, which does not exist",
                event.kind, p.request_seq
            ),
        ));
    };
    a.state = if granted {
        ApprovalState::Granted
    } else {
        ApprovalState::Denied
    };
    if granted && let Some(exp) = expiry_ms(p.expires_at.as_deref()) {
        a.expires_at_ms = Some(exp);
    }
    a.decided_seq = Some(event.seq);
    a.decided_by = Some(Hex32(event.author));
    a.decided_actor = Some(p.actor.clone());
    a.reason = p.reason.clone();
    task.record_change(event);
    Ok(())
}
