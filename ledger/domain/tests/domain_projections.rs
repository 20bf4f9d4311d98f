//! Given/when/then tests for each domain projection (verdict state per task,
//! OID registry, keys), plus state "as of", snapshots and replay.

mod domain_support;

use docket_domain::checkpoint::NoteVerifier;
use docket_domain::domain::projections::{ApprovalState, Hex32, OidState, VerdictStatus};
use docket_domain::domain::{AsOf, DocketOptions, oid, query};
use docket_domain::keys::Role;
use docket_domain::replay::{self, FindingKind, ReplayOptions};
use domain_support::*;

fn no_auto() -> DocketOptions {
    DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    }
}

#[test]
fn task_registered_creates_pending_task() {
    // Given a ledger with a submitter.
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    // When the task is registered (in an upper-case UUID form).
    let payload = task_json(&TASK.to_uppercase(), &["scope_valid"]);
    let r = fx.append("task.registered", &payload, &sub).unwrap();
    // Then it is PENDING under its canonical id, with its contract summary.
    let state = fx.docket.ledger().state();
    let t = &state.domain.verdicts.tasks[TASK];
    assert_eq!(t.status, VerdictStatus::Pending);
    assert_eq!(t.contract.seq, r.seq);
    assert_eq!(
        t.contract.sha256.to_hex(),
        sha_hex(&serde_json::to_vec(&payload).unwrap())
    );
    assert_eq!(t.contract.required_checks, vec!["scope_valid".to_string()]);
    assert_eq!(t.contract.retention_class, "routine");
    assert_eq!(t.history.len(), 1);
    assert_eq!(t.history[0].before, None);
    assert_eq!(t.history[0].after, t.state_digest);
    assert!(t.submitters.is_empty(), "registering is not submitting");
    assert!(state.domain.oids.oids.is_empty());
}

#[test]
fn evidence_registered_mints_a_deterministic_oid() {
    // Given a task.
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    // When evidence is put.
    let content = b"diff --git a/src/lib.rs b/src/lib.rs\n";
    let stmt = sign(
        "evidence.registered",
        &evidence_payload(TASK, "patch.diff", content),
        &sub,
    );
    let r = fx.docket.put_evidence(&content[..], stmt.clone()).unwrap();
    // Then the OID is the ULID of (recorded time, statement digest) ...
    assert_eq!(r.oid, oid::mint(r.receipt.recorded_at_ms, &stmt.digest()));
    assert_eq!(r.oid, fx.docket.oid_at(r.receipt.seq).unwrap());
    assert_eq!(oid::timestamp_ms(&r.oid), Some(r.receipt.recorded_at_ms));
    assert!(!r.blob_already_present);
    // ... the registry holds its record, and the task knows its submitter.
    let ev = fx.docket.evidence(&r.oid).unwrap();
    assert_eq!(ev.record.sha256, sha_hex(content));
    assert_eq!(ev.record.size, content.len() as u64);
    assert_eq!(ev.record.evidence_type, "patch.diff");
    assert_eq!(ev.record.media_type, "text/x-diff");
    assert_eq!(ev.record.task_id, TASK);
    assert_eq!(
        ev.record.retention_class, "routine",
        "defaults to the task's class"
    );
    assert_eq!(ev.record.artifact_name, "patch.diff");
    assert_eq!(ev.record.state, OidState::Live);
    let t = fx.docket.task(TASK, AsOf::Latest).unwrap();
    assert_eq!(t.state.evidence, vec![r.oid.clone()]);
    assert!(
        t.state
            .submitters
            .contains(&Hex32(sub.verifying_key().to_bytes()))
    );
    // And the content reads back, digest-checked.
    let (_, mut reader) = fx.docket.evidence_content(&r.oid).unwrap();
    let mut back = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut back).unwrap();
    assert_eq!(back, content);
    // When the same statement is sent again, it is idempotent: same OID.
    let again = fx.docket.put_evidence(&content[..], stmt).unwrap();
    assert!(again.receipt.duplicate);
    assert!(again.blob_already_present);
    assert_eq!(again.oid, r.oid);
}

#[test]
fn submission_check_verdict_and_resubmission_fold_with_digest_chain() {
    // Given a task with evidence.
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    fx.append("task.registered", &task_json(TASK, &["scope_valid"]), &sub)
        .unwrap();
    let oid = fx.evidence(TASK, "patch.diff", b"x", &sub);
    // When a submission arrives, then the task is PENDING with one attempt.
    let s1 = fx
        .append(
            "submission.received",
            &submit_json(TASK, std::slice::from_ref(&oid)),
            &sub,
        )
        .unwrap();
    let v = fx.docket.verdict(TASK, AsOf::Latest, true).unwrap();
    assert_eq!(v.status, VerdictStatus::Pending);
    assert_eq!(v.submissions, 1);
    assert_eq!(v.latest_submission_seq, Some(s1.seq));
    // When a check and a PASS verdict are recorded, then it is PASS.
    fx.append(
        "check.recorded",
        &check_json(TASK, "scope_valid", true),
        &ver,
    )
    .unwrap();
    let vr = fx
        .append("verdict.issued", &verdict_json(TASK, true), &ver)
        .unwrap();
    let v = fx.docket.verdict(TASK, AsOf::Latest, true).unwrap();
    assert_eq!(v.status, VerdictStatus::Pass);
    let info = v.verdict.as_ref().unwrap();
    assert_eq!(info.seq, vr.seq);
    assert_eq!(info.submission_seq, s1.seq);
    assert_eq!(
        v.checks["scope_valid"].seq,
        vr.seq - 1,
        "the recorded check keeps its event"
    );
    assert_eq!(
        v.checks["tests_passed"].seq, vr.seq,
        "checks carried by the verdict"
    );
    assert_eq!(v.verdict_document.as_ref().unwrap()["verdict"], "PASS");
    // When the task is resubmitted, then it is PENDING again (never PASS
    // for an unjudged attempt) and the checks reset.
    let s2 = fx
        .append("submission.received", &submit_json(TASK, &[]), &sub)
        .unwrap();
    let v = fx.docket.verdict(TASK, AsOf::Latest, true).unwrap();
    assert_eq!(v.status, VerdictStatus::Pending);
    assert!(v.verdict.is_none() && v.checks.is_empty());
    assert_eq!(v.submissions, 2);
    // And a FAIL for the new attempt supersedes.
    fx.append("verdict.issued", &verdict_json(TASK, false), &ver)
        .unwrap();
    let v = fx.docket.verdict(TASK, AsOf::Latest, true).unwrap();
    assert_eq!(v.status, VerdictStatus::Fail);
    assert_eq!(
        v.verdict.as_ref().unwrap().reason_code.as_deref(),
        Some("CI_FAILED")
    );
    assert_eq!(v.verdict.as_ref().unwrap().submission_seq, s2.seq);
    // The history chains before/after digests, one entry per change.
    let h = v.history.unwrap();
    let kinds: Vec<&str> = h.iter().map(|c| c.kind.as_ref()).collect();
    assert_eq!(
        kinds,
        [
            "task.registered",
            "submission.received",
            "check.recorded",
            "verdict.issued",
            "submission.received",
            "verdict.issued"
        ]
    );
    for pair in h.windows(2) {
        assert_eq!(pair[1].before, Some(pair[0].after));
        assert_ne!(pair[1].before, Some(pair[1].after));
    }
    assert_eq!(h.last().unwrap().after.to_hex(), v.state_digest);
    // Lists by status.
    assert_eq!(
        fx.docket
            .verdicts(Some(VerdictStatus::Fail), AsOf::Latest)
            .unwrap()
            .len(),
        1
    );
    assert!(
        fx.docket
            .verdicts(Some(VerdictStatus::Pass), AsOf::Latest)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn approvals_request_grant_deny_and_expire() {
    // Given a task, a requester and two approvers.
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let appr = fx.key(&[Role::Approver]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    // When a request is made with an expiry far ahead, then it is REQUESTED.
    let req = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "ci-bot", Some("2999-01-01T00:00:00Z")),
            &sub,
        )
        .unwrap();
    let v = fx.docket.verdict(TASK, AsOf::Latest, false).unwrap();
    assert_eq!(v.approvals.len(), 1);
    assert_eq!(v.approvals[0].effective_state, ApprovalState::Requested);
    // When an approver grants it, then it is GRANTED, by that key.
    fx.append(
        "approval.granted",
        &approval_decision(TASK, req.seq, "alice", false),
        &appr,
    )
    .unwrap();
    let state = fx.docket.ledger().state();
    let a = &state.domain.verdicts.tasks[TASK].approvals[&req.seq];
    assert_eq!(a.state, ApprovalState::Granted);
    assert_eq!(a.decided_by, Some(Hex32(appr.verifying_key().to_bytes())));
    assert_eq!(a.state_at(0), ApprovalState::Granted);
    assert_eq!(
        a.state_at(32_503_680_000_001),
        ApprovalState::Expired,
        "past its expiry"
    );
    drop(state);
    // When a second request is denied, then it is DENIED with the reason.
    let req2 = fx
        .append(
            "approval.requested",
            &approval_request(TASK, "ci-bot", None),
            &sub,
        )
        .unwrap();
    fx.append(
        "approval.denied",
        &approval_decision(TASK, req2.seq, "alice", true),
        &appr,
    )
    .unwrap();
    let v = fx.docket.verdict(TASK, AsOf::Latest, true).unwrap();
    assert_eq!(v.approvals[1].effective_state, ApprovalState::Denied);
    assert_eq!(v.approvals[1].info.reason.as_deref(), Some("not yet"));
    assert_eq!(
        v.history.unwrap().len(),
        5,
        "registration + 4 approval events"
    );
}

#[test]
fn keys_projection_records_roles_and_revocation() {
    // Given a ledger; when a key is registered and then revoked ...
    let fx = Fixture::with_options(no_auto());
    let k = fx.key(&[Role::Verifier, Role::Approver]);
    let pk = hex::encode(k.verifying_key().to_bytes());
    let before = fx.docket.ledger().len();
    fx.revoke(&k);
    // ... then the key list shows it revoked, with history as of before.
    let all = fx.docket.keys(AsOf::Latest, true).unwrap();
    let rec = all.iter().find(|x| x.public_key == pk).unwrap();
    assert_eq!(rec.record.revoked_seq, Some(before));
    assert!(rec.record.roles.contains(&Role::Verifier));
    assert!(
        fx.docket
            .keys(AsOf::Latest, false)
            .unwrap()
            .iter()
            .all(|x| x.public_key != pk)
    );
    let then = fx.docket.keys(AsOf::Seq(before - 1), false).unwrap();
    assert!(
        then.iter().any(|x| x.public_key == pk),
        "unrevoked as of before the revocation"
    );
}

#[test]
fn state_as_of_sequence_and_time() {
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    let s = fx
        .append("submission.received", &submit_json(TASK, &[]), &sub)
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let v = fx
        .append("verdict.issued", &verdict_json(TASK, false), &ver)
        .unwrap();
    // As of the submission: PENDING. As of the verdict: FAIL.
    let at_sub = fx.docket.verdict(TASK, AsOf::Seq(s.seq), false).unwrap();
    assert_eq!(at_sub.status, VerdictStatus::Pending);
    assert_eq!(at_sub.as_of_seq, Some(s.seq));
    assert_eq!(
        fx.docket
            .verdict(TASK, AsOf::Seq(v.seq), false)
            .unwrap()
            .status,
        VerdictStatus::Fail
    );
    // Time: the last event at or before a time.
    let ledger = fx.docket.ledger();
    assert_eq!(
        query::seq_at_or_before(ledger, s.recorded_at_ms).unwrap(),
        Some(s.seq)
    );
    assert_eq!(
        query::seq_at_or_before(ledger, v.recorded_at_ms - 1).unwrap(),
        Some(s.seq)
    );
    assert_eq!(query::seq_at_or_before(ledger, 0).unwrap(), None);
    let at_time = fx
        .docket
        .verdict(TASK, AsOf::Time(v.recorded_at_ms - 1), false)
        .unwrap();
    assert_eq!(at_time.status, VerdictStatus::Pending);
    assert!(matches!(AsOf::parse("12").unwrap(), AsOf::Seq(12)));
    assert!(matches!(
        AsOf::parse("2026-02-09T14:30:00Z").unwrap(),
        AsOf::Time(1_770_647_400_000)
    ));
    assert!(AsOf::parse("yesterday").is_err());
    // Before the task existed: not found.
    assert!(fx.docket.verdict(TASK, AsOf::Seq(1), false).is_err());
}

#[test]
fn snapshots_restart_and_replay_verify_compare_domain_projections() {
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    let oid = fx.evidence(TASK, "patch.diff", b"y", &sub);
    fx.append(
        "submission.received",
        &submit_json(TASK, std::slice::from_ref(&oid)),
        &sub,
    )
    .unwrap();
    fx.append("verdict.issued", &verdict_json(TASK, false), &ver)
        .unwrap();
    let live = fx.docket.ledger().state().clone();
    fx.docket.close().unwrap();
    let dir = fx.dir.path().to_path_buf();
    drop(fx.docket);
    // Restart from snapshots: same state.
    let reopened =
        docket_domain::domain::Docket::open(&dir, Default::default(), no_auto()).unwrap();
    assert_eq!(*reopened.ledger().state(), live);
    let verifier = NoteVerifier::new(
        reopened.ledger().origin(),
        reopened.ledger().ledger_key().verifying_key(),
    )
    .unwrap();
    let (report, rebuilt) = replay::replay(
        reopened.ledger().store().as_ref(),
        &verifier,
        ReplayOptions {
            verify: true,
            as_of: None,
        },
        &mut |_, _| {},
    )
    .unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert!(report.snapshots_compared.iter().any(|n| n == "verdicts"));
    assert!(report.snapshots_compared.iter().any(|n| n == "oids"));
    assert_eq!(rebuilt, live);
    reopened.close().unwrap();
    drop(reopened);
    // Tamper with the stored verdicts snapshot: replay refuses it (exit 5,
    // naming the file), and the ledger serves the log's verdict.
    let snap = dir.join("snapshots/verdicts.snap");
    let bytes = std::fs::read(&snap).unwrap();
    let text =
        String::from_utf8_lossy(&bytes).replace("\"status\":\"fail\"", "\"status\":\"pass\"");
    assert_ne!(
        text.as_bytes(),
        &bytes[..],
        "the snapshot holds a FAIL to flip"
    );
    std::fs::write(&snap, text.as_bytes()).unwrap();
    let store = docket_log::sequencer::open_local_store(&dir).unwrap();
    let (report, _) = replay::replay(
        &store,
        &verifier,
        ReplayOptions {
            verify: true,
            as_of: None,
        },
        &mut |_, _| {},
    )
    .unwrap();
    let f = report
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::SnapshotTampered)
        .expect("tampered snapshot reported");
    assert!(f.detail.contains("verdicts"), "{}", f.detail);
    assert_eq!(report.exit_code(), 5);
    drop(store);
    // Opening never uses it: the state is the log's, and the mirror is
    // rewritten from the log.
    let reopened =
        docket_domain::domain::Docket::open(&dir, Default::default(), no_auto()).unwrap();
    assert_eq!(*reopened.ledger().state(), live);
    assert!(
        reopened
            .ledger()
            .open_report()
            .warnings
            .iter()
            .any(|w| w.contains("verdicts")),
        "{:?}",
        reopened.ledger().open_report()
    );
}

#[test]
fn chunked_parallel_rebuild_equals_the_live_state() {
    // More events than one rebuild chunk, mixing domain and extension kinds.
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    let ledger = fx.docket.ledger();
    let mut pending = Vec::new();
    for i in 0..5_000u32 {
        let st = if i % 1000 == 0 {
            let mut p = submit_json(TASK, &[]);
            p["tests"]["summary"] = serde_json::json!(format!("run {i}"));
            sign("submission.received", &p, &sub)
        } else if i % 500 == 250 {
            sign(
                "check.recorded",
                &check_json(TASK, &format!("c{i}"), i % 2 == 0),
                &ver,
            )
        } else {
            docket_domain::Statement::sign("x-note", format!("{i}").into_bytes(), &sub)
        };
        pending.push(ledger.submit(vec![st]).unwrap());
    }
    for rx in pending {
        for r in rx.recv().unwrap() {
            r.unwrap();
        }
    }
    let len = ledger.len();
    let live = ledger.state().clone();
    let rebuilt = query::fold_prefix(ledger.store().as_ref(), len).unwrap();
    assert_eq!(rebuilt, live);
    assert_eq!(rebuilt.domain.verdicts.tasks[TASK].submissions.len(), 5);
    // A historical point in the middle of a chunk equals a fold that stops there.
    let mid = query::fold_prefix(ledger.store().as_ref(), 4_200).unwrap();
    assert_eq!(mid.applied, 4_200);
    let mut by_hand = docket_domain::LedgerState::default();
    for e in ledger.events(0, 4_200).unwrap() {
        by_hand.apply(&e).unwrap();
    }
    assert_eq!(mid, by_hand);
}
