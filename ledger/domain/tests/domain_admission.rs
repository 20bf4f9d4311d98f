//! Admission of domain statements: schemas (every violation listed),
//! references, duplicates, separation of duties, "no check, no PASS", and
//! that a refusal appends nothing.

mod domain_support;

use docket_domain::LedgerError;
use docket_domain::domain::DocketOptions;
use docket_domain::keys::Role;
use domain_support::*;
use serde_json::json;

fn fx() -> Fixture {
    Fixture::with_options(DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    })
}

#[test]
fn invalid_payloads_list_every_violation_and_append_nothing() {
    let fx = fx();
    let sub = fx.key(&[Role::Submitter]);
    let len = fx.docket.ledger().len();
    // Task contract: the verifier's rules, all of them.
    let bad_task = json!({"task_id": "TASK-001", "goal": "", "pins": {"allowed_paths": []}});
    let e = fx.append("task.registered", &bad_task, &sub).unwrap_err();
    let v = violations(&e);
    for rule in [
        "task.task_id.uuid",
        "task.goal.non_empty",
        "task.required",
        "task.pins.allowed_paths.non_empty",
    ] {
        assert!(
            v.iter().any(|x| x.contains(rule)),
            "{rule} missing from {v:?}"
        );
    }
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    // Evidence: every field checked, unknown fields refused.
    let bad = json!({"task_id": TASK, "evidence_type": "video", "sha256": "XYZ", "size": -1,
                     "media_type": "text", "retention_class": "forever", "name": "../etc", "extra": 1});
    let v = violations(&fx.append("evidence.registered", &bad, &sub).unwrap_err());
    for field in [
        "evidence_type",
        "sha256",
        "size",
        "media_type",
        "retention_class",
        "name",
        "extra",
    ] {
        assert!(
            v.iter().any(|x| x.starts_with(field)),
            "{field} missing from {v:?}"
        );
    }
    // Execution record: the recomputed evidence_hash must match; task_id required.
    let rec = json!({"raw_command": "make test", "exit_code": 0, "stdout": "ok", "stderr": "",
                     "started_at": "2026-02-09T14:30:00Z", "finished_at": "2026-02-09T14:30:01Z",
                     "duration_seconds": 1.0, "status": "SUCCESS", "evidence_hash": "00"});
    let v = violations(&fx.append("execution.recorded", &rec, &sub).unwrap_err());
    assert!(
        v.iter().any(|x| x.contains("execution.evidence_hash")),
        "{v:?}"
    );
    assert!(v.iter().any(|x| x.starts_with("task_id")), "{v:?}");
    // Submission: scc.submit.v1 rules plus evidence_oids.
    let mut s = submit_json(TASK, &[]);
    s["schema_version"] = json!("scc.submit.v2");
    s["evidence_oids"] = json!(["nope", 3]);
    let v = violations(&fx.append("submission.received", &s, &sub).unwrap_err());
    assert!(
        v.iter().any(|x| x.contains("submit.schema_version")),
        "{v:?}"
    );
    assert!(
        v.iter().filter(|x| x.starts_with("evidence_oids/")).count() == 2,
        "{v:?}"
    );
    // Verdict: scc.verdict.v1 rules.
    let ver = fx.key(&[Role::Verifier]);
    let mut vd = verdict_json(TASK, true);
    vd["checks"]["scope_valid"] = json!(false);
    let v = violations(&fx.append("verdict.issued", &vd, &ver).unwrap_err());
    assert!(
        v.iter().any(|x| x.contains("verdict.no_check_no_pass")),
        "{v:?}"
    );
    // Approval: fields and expiry order.
    let mut a = approval_request(TASK, "", Some("2000-01-01T00:00:00Z"));
    a["timestamp"] = json!("yesterday");
    let v = violations(&fx.append("approval.requested", &a, &sub).unwrap_err());
    assert!(
        v.iter().any(|x| x.starts_with("actor")) && v.iter().any(|x| x.starts_with("timestamp")),
        "{v:?}"
    );
    // Nothing but the two key registrations and the task was appended.
    assert_eq!(fx.docket.ledger().len(), len + 2);
}

#[test]
fn references_duplicates_and_preconditions() {
    let fx = fx();
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    let other = task_id(2);
    // Unknown task: NotFound.
    let e = fx
        .append("submission.received", &submit_json(TASK, &[]), &sub)
        .unwrap_err();
    assert!(matches!(e, LedgerError::NotFound { .. }), "{e}");
    let e = fx
        .append(
            "evidence.registered",
            &evidence_payload(TASK, "patch.diff", b"x"),
            &sub,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::NotFound { .. }), "{e}");
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    fx.append("task.registered", &task_json(&other, &[]), &sub)
        .unwrap();
    // Same task id, different statement: AlreadyExists. Same statement: idempotent.
    let mut t2 = task_json(TASK, &[]);
    t2["goal"] = json!("something else");
    let e = fx.append("task.registered", &t2, &sub).unwrap_err();
    assert!(matches!(e, LedgerError::AlreadyExists { .. }), "{e}");
    assert!(
        fx.append("task.registered", &task_json(TASK, &[]), &sub)
            .unwrap()
            .duplicate
    );
    // Evidence needs its blob in the store first.
    let e = fx
        .docket
        .register_evidence(sign(
            "evidence.registered",
            &evidence_payload(TASK, "patch.diff", b"nope"),
            &sub,
        ))
        .unwrap_err();
    assert!(matches!(e, LedgerError::FailedPrecondition(_)), "{e}");
    // Content must match the statement's digest and size.
    let e = fx
        .docket
        .put_evidence(
            &b"other"[..],
            sign(
                "evidence.registered",
                &evidence_payload(TASK, "patch.diff", b"x"),
                &sub,
            ),
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::Invalid { .. }), "{e}");
    // Unknown OID: NotFound; OID of another task: Invalid.
    let e = fx
        .append(
            "submission.received",
            &submit_json(TASK, &["01KGCV31W0C42YQHMVAT6FSR1H".into()]),
            &sub,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::NotFound { .. }), "{e}");
    let foreign = fx.evidence(&other, "patch.diff", b"z", &sub);
    let e = fx
        .append("submission.received", &submit_json(TASK, &[foreign]), &sub)
        .unwrap_err();
    assert!(violations(&e)[0].contains("registered to task"), "{e}");
    // Two OIDs with one artifact name: Invalid.
    let a = fx.evidence(TASK, "patch.diff", b"a", &sub);
    let b = fx.evidence(TASK, "patch.diff", b"b", &sub);
    let e = fx
        .append(
            "submission.received",
            &submit_json(TASK, &[a.clone(), b]),
            &sub,
        )
        .unwrap_err();
    assert!(violations(&e)[0].contains("artifact name"), "{e}");
    // Verdict or check with no submission: FailedPrecondition.
    let e = fx
        .append("verdict.issued", &verdict_json(TASK, false), &ver)
        .unwrap_err();
    assert!(matches!(e, LedgerError::FailedPrecondition(_)), "{e}");
    let e = fx
        .append(
            "check.recorded",
            &check_json(TASK, "scope_valid", true),
            &ver,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::FailedPrecondition(_)), "{e}");
    // A verdict naming a superseded submission: FailedPrecondition.
    let s1 = fx
        .append("submission.received", &submit_json(TASK, &[a]), &sub)
        .unwrap();
    fx.append("submission.received", &submit_json(TASK, &[]), &sub)
        .unwrap();
    let mut v = verdict_json(TASK, false);
    v["submission_seq"] = json!(s1.seq);
    let e = fx.append("verdict.issued", &v, &ver).unwrap_err();
    assert!(matches!(e, LedgerError::FailedPrecondition(_)), "{e}");
    v["submission_seq"] = json!(1);
    let e = fx.append("verdict.issued", &v, &ver).unwrap_err();
    assert!(matches!(e, LedgerError::NotFound { .. }), "{e}");
    // Approval answers: unknown request NotFound; answered twice FailedPrecondition.
    let appr = fx.key(&[Role::Approver]);
    let e = fx
        .append(
            "approval.granted",
            &approval_decision(TASK, 999, "alice", false),
            &appr,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::NotFound { .. }), "{e}");
    let req = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "bot", None),
            &sub,
        )
        .unwrap();
    fx.append(
        "approval.granted",
        &approval_decision(TASK, req.seq, "alice", false),
        &appr,
    )
    .unwrap();
    let e = fx
        .append(
            "approval.denied",
            &approval_decision(TASK, req.seq, "alice", true),
            &appr,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::FailedPrecondition(_)), "{e}");
    // Scope must match the request.
    let req = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "bot2", None),
            &sub,
        )
        .unwrap();
    let mut d = approval_decision(TASK, req.seq, "alice", false);
    d["scope"] = json!("deploy");
    assert!(matches!(
        fx.append("approval.granted", &d, &appr).unwrap_err(),
        LedgerError::Invalid { .. }
    ));
}

#[test]
fn expired_requests_cannot_be_answered() {
    let fx = fx();
    let sub = fx.key(&[Role::Submitter]);
    let appr = fx.key(&[Role::Approver]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    // Expiry already past at ledger time: refused.
    let e = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "bot", Some("2026-02-09T14:31:00Z")),
            &sub,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::FailedPrecondition(_)), "{e}");
    // Expiring in 50 ms: answered after it, refused.
    let soon = docket_domain::domain::payloads::ms_to_rfc3339(
        u64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap()
            + 50,
    );
    let req = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "bot", Some(&soon)),
            &sub,
        )
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(120));
    let e = fx
        .append(
            "approval.granted",
            &approval_decision(TASK, req.seq, "alice", false),
            &appr,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::FailedPrecondition(_)), "{e}");
}

#[test]
fn separation_of_duties() {
    let fx = fx();
    // A key holding every working role: it submits, so it may not judge.
    let both = fx.key(&[Role::Submitter, Role::Verifier, Role::Approver]);
    let ver = fx.key(&[Role::Verifier]);
    let appr = fx.key(&[Role::Approver]);
    let appr2 = fx.key(&[Role::Approver]);
    fx.append("task.registered", &task_json(TASK, &[]), &both)
        .unwrap();
    // Registering alone does not make one a submitter ...
    let req = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "bot", None),
            &appr2,
        )
        .unwrap();
    fx.append(
        "approval.granted",
        &approval_decision(TASK, req.seq, "carol", false),
        &both,
    )
    .unwrap();
    // ... submitting does.
    fx.append("submission.received", &submit_json(TASK, &[]), &both)
        .unwrap();
    for (kind, payload) in [
        ("verdict.issued", verdict_json(TASK, false)),
        ("check.recorded", check_json(TASK, "scope_valid", true)),
    ] {
        let e = fx.append(kind, &payload, &both).unwrap_err();
        assert!(
            matches!(&e, LedgerError::PermissionDenied { reason, .. } if reason.contains("separation")),
            "{e}"
        );
    }
    let req = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "bot2", None),
            &appr2,
        )
        .unwrap();
    let e = fx
        .append(
            "approval.granted",
            &approval_decision(TASK, req.seq, "carol", false),
            &both,
        )
        .unwrap_err();
    assert!(
        matches!(e, LedgerError::PermissionDenied { .. }),
        "a task's submitter cannot approve it: {e}"
    );
    // Nobody answers their own request (by key, or by actor name).
    let e = fx
        .append(
            "approval.granted",
            &approval_decision(TASK, req.seq, "alice", false),
            &appr2,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    let e = fx
        .append(
            "approval.denied",
            &approval_decision(TASK, req.seq, "BOT2", true),
            &appr,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    fx.append(
        "approval.denied",
        &approval_decision(TASK, req.seq, "alice", true),
        &appr,
    )
    .unwrap();
    // An independent verifier may judge.
    fx.append("verdict.issued", &verdict_json(TASK, false), &ver)
        .unwrap();
    // Only verifier keys issue verdicts.
    let e = fx
        .append("verdict.issued", &verdict_json(TASK, false), &appr)
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
}

#[test]
fn no_check_no_pass() {
    let fx = fx();
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    let mut task = task_json(TASK, &["security_review"]);
    task["acceptance"]["required_evidence"] = json!(["patch.diff"]);
    fx.append("task.registered", &task, &sub).unwrap();
    let diff = fx.evidence(TASK, "patch.diff", b"d", &sub);
    fx.append("submission.received", &submit_json(TASK, &[]), &sub)
        .unwrap();
    // PASS without the required check and without the required evidence.
    let v = violations(
        &fx.append("verdict.issued", &verdict_json(TASK, true), &ver)
            .unwrap_err(),
    );
    assert!(
        v.iter().any(|x| x.contains("verdict.required_check")),
        "{v:?}"
    );
    assert!(
        v.iter().any(|x| x.contains("verdict.required_evidence")),
        "{v:?}"
    );
    // With the evidence, a recorded failing check still blocks a PASS ...
    fx.append("submission.received", &submit_json(TASK, &[diff]), &sub)
        .unwrap();
    fx.append(
        "check.recorded",
        &check_json(TASK, "security_review", false),
        &ver,
    )
    .unwrap();
    let v = violations(
        &fx.append("verdict.issued", &verdict_json(TASK, true), &ver)
            .unwrap_err(),
    );
    assert!(v.iter().any(|x| x.contains("recorded as failed")), "{v:?}");
    // ... until it is recorded as passed.
    fx.append(
        "check.recorded",
        &check_json(TASK, "security_review", true),
        &ver,
    )
    .unwrap();
    fx.append("verdict.issued", &verdict_json(TASK, true), &ver)
        .unwrap();
    // A FAIL needs no passing check.
    fx.append("verdict.issued", &verdict_json(TASK, false), &ver)
        .unwrap();
}
