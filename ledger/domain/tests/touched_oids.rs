//! Seed 001 executor output on a real ledger: a submission's `touched_oids`
//! are recorded beside its `evidence_oids` when every one is a registered
//! OID; an unregistered, malformed or repeated one refuses the whole
//! submission and appends nothing. Also the ledger side of the gateway rule
//! and of the harness approval binding ([`Docket::ledger_findings`]) on
//! real approvals and execution records.

mod domain_support;

use docket_domain::LedgerError;
use docket_domain::keys::Role;
use docket_verifier::TaskContract;
use docket_verifier::catalogue::ReasonCode;
use docket_verifier::execution::ExecutionRecord;
use domain_support::*;
use serde_json::json;

#[test]
fn registered_touched_oids_are_recorded_beside_the_evidence() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    let other = task_id(2);
    fx.append("task.registered", &task_json(&other, &[]), &sub)
        .unwrap();
    let diff = fx.evidence(TASK, "patch.diff", b"--- a\n+++ b\n", &sub);
    let elsewhere = fx.evidence(&other, "notes.txt", b"touched", &sub);

    let mut doc = submit_json(TASK, std::slice::from_ref(&diff));
    doc["touched_oids"] = json!([diff, elsewhere]);
    let r = fx.append("submission.received", &doc, &sub).unwrap();

    let state = fx.docket.ledger().state();
    let task = &state.domain.verdicts.tasks[TASK];
    let s = task.submissions.last().unwrap();
    assert_eq!(s.seq, r.seq);
    assert_eq!(s.evidence_oids, std::slice::from_ref(&diff));
    assert_eq!(s.touched_oids, [diff, elsewhere]);
}

#[test]
fn an_unregistered_touched_oid_refuses_the_submission_and_appends_nothing() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    let diff = fx.evidence(TASK, "patch.diff", b"--- a\n+++ b\n", &sub);
    let len = fx.docket.ledger().len();

    // Well-formed but never registered: NOT_FOUND naming it.
    let ghost = "01KGCV31W0C42YQHMVAT6FSR1H";
    let mut doc = submit_json(TASK, std::slice::from_ref(&diff));
    doc["touched_oids"] = json!([diff, ghost]);
    let e = fx.append("submission.received", &doc, &sub).unwrap_err();
    assert!(matches!(e, LedgerError::NotFound { .. }), "{e}");
    assert!(e.to_string().contains(ghost), "{e}");
    assert!(e.to_string().contains("touched_oids"), "{e}");
    assert_eq!(fx.docket.ledger().len(), len);

    // Malformed or repeated: INVALID, every violation listed.
    doc["touched_oids"] = json!(["nope", diff, diff]);
    let e = fx.append("submission.received", &doc, &sub).unwrap_err();
    let v = violations(&e);
    assert!(v.iter().any(|x| x.contains("touched_oids/0")), "{v:?}");
    assert!(
        v.iter()
            .any(|x| x.contains("touched_oids/2") && x.contains("twice")),
        "{v:?}"
    );
    assert_eq!(fx.docket.ledger().len(), len);
    assert!(
        fx.docket.ledger().state().domain.verdicts.tasks[TASK]
            .submissions
            .is_empty()
    );
}

/// A new attempt of the task's submission (an extra field makes it new).
fn attempt(n: u64) -> serde_json::Value {
    let mut v = submit_json(TASK, &[]);
    v["attempt"] = json!(n);
    v
}

fn contract(require: bool) -> TaskContract {
    let mut t = task_json(TASK, &[]);
    t["acceptance"]["require_gateway_execution"] = json!(require);
    TaskContract::parse(&serde_json::to_vec(&t).unwrap()).unwrap()
}

fn record(cmd: &str, exit: i64) -> serde_json::Value {
    let r = ExecutionRecord::from_execution(
        cmd,
        exit,
        "out\n",
        "",
        "2026-02-09T14:29:00Z",
        "2026-02-09T14:29:01Z",
        1.0,
    );
    let mut v = serde_json::to_value(r).unwrap();
    v["task_id"] = json!(TASK);
    v
}

#[test]
fn only_records_of_a_gateway_key_other_than_the_submitter_count() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let gw = fx.key(&[Role::Gateway]);
    // A key holding both roles is a gateway, but not for its own submission.
    let both = fx.key(&[Role::Submitter, Role::Gateway]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    fx.append("execution.recorded", &record("make test", 0), &sub)
        .unwrap();
    fx.append("execution.recorded", &record("make check", 0), &both)
        .unwrap();
    let seq = fx
        .append("submission.received", &submit_json(TASK, &[]), &both)
        .unwrap()
        .seq;
    let author = both.verifying_key().to_bytes();

    let (checks, f) = fx
        .docket
        .ledger_findings(&contract(true), TASK, seq, &author, None, None)
        .unwrap();
    assert_eq!(checks, ["gateway_attested"]);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, "ledger.gateway.record_missing");
    assert_eq!(f[0].reason_code, ReasonCode::EvidenceMissing);
    // Not required: no check, no finding.
    let (checks, f) = fx
        .docket
        .ledger_findings(&contract(false), TASK, seq, &author, None, None)
        .unwrap();
    assert!(checks.is_empty() && f.is_empty());

    // A gateway's record after the submission does not count for it.
    fx.append("execution.recorded", &record("make test", 2), &gw)
        .unwrap();
    let (_, f) = fx
        .docket
        .ledger_findings(&contract(true), TASK, seq, &author, None, None)
        .unwrap();
    assert_eq!(f[0].rule, "ledger.gateway.record_missing");
    // For a later submission it does: it failed, so CI_FAILED.
    let later = fx
        .append("submission.received", &attempt(2), &sub)
        .unwrap()
        .seq;
    let (_, f) = fx
        .docket
        .ledger_findings(
            &contract(true),
            TASK,
            later,
            &sub.verifying_key().to_bytes(),
            None,
            None,
        )
        .unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].rule, "ledger.gateway.failed");
    assert_eq!(f[0].reason_code, ReasonCode::CiFailed);
}

/// A harness `report.json` that claims a grant, and its events.
fn harness(granted_by: &str) -> (Vec<u8>, Vec<u8>) {
    let report = json!({
        "case_id": "CASE-7", "run_id": "run-1", "status": "pass", "backend": "backend-x",
        "run_started_at": "2026-02-09T14:28:00Z", "run_finished_at": "2026-02-09T14:28:30Z",
        "backend_exit_code": 0, "artifacts_dir": "/runs/run-1", "changed_files": [],
        "allowed_writes_passed": true, "approval_status": "granted",
        "verification": [{"command": "cargo test", "passed": true}], "blockers": [],
        "artifact_paths": {}, "artifact_digests": {}, "freshness": {}
    });
    let events = format!(
        "{}\n{}\n",
        r#"{"event":"approval.requested","actor":"alice","scope":"merge","mutation_mode":"real-repo","timestamp":"2026-02-09T14:28:05Z"}"#,
        json!({"event": "approval.granted", "actor": granted_by, "scope": "merge",
               "mutation_mode": "real-repo", "timestamp": "2026-02-09T14:28:06Z",
               "expires_at": "2026-02-09T15:00:00Z"})
    );
    (serde_json::to_vec(&report).unwrap(), events.into_bytes())
}

#[test]
fn a_claimed_harness_grant_needs_a_ledger_grant_decided_before_the_submission() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let approver = fx.key(&[Role::Approver]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    let req = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "alice", None),
            &sub,
        )
        .unwrap()
        .seq;
    let first = fx
        .append("submission.received", &submit_json(TASK, &[]), &sub)
        .unwrap()
        .seq;
    fx.append(
        "approval.granted",
        &approval_decision(TASK, req, "bob", false),
        &approver,
    )
    .unwrap();
    let second = fx
        .append("submission.received", &attempt(2), &sub)
        .unwrap()
        .seq;
    let me = sub.verifying_key().to_bytes();
    let (report, events) = harness("bob");
    let findings = |seq| {
        fx.docket
            .ledger_findings(
                &contract(false),
                TASK,
                seq,
                &me,
                Some(&report),
                Some(&events),
            )
            .unwrap()
            .1
    };
    // At the first submission the request was not answered yet.
    let f = findings(first);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].rule, "harness.approval.ledger");
    assert_eq!(f[0].reason_code, ReasonCode::PolicyViolation);
    assert!(f[0].message.contains("never answered"), "{}", f[0].message);
    // At the second, bob's grant matches.
    assert!(findings(second).is_empty());
    // A run that says someone else granted it does not match.
    let (report, events) = harness("mallory");
    let f = fx
        .docket
        .ledger_findings(
            &contract(false),
            TASK,
            second,
            &me,
            Some(&report),
            Some(&events),
        )
        .unwrap()
        .1;
    assert_eq!(f.len(), 1);
    assert!(f[0].message.starts_with("approval denied"));
}
