//! Verdict deadlines: a task whose `verdict_deadline` passes with no
//! verdict gets FAIL `verdict_missing`, recorded as an event (signed,
//! replay-exact: replay re-admits it from the log, never from the clock).

mod domain_support;

use docket_domain::checkpoint::NoteVerifier;
use docket_domain::domain::{AsOf, DocketOptions, VerdictStatus};
use docket_domain::keys::Role;
use docket_domain::replay::{self, ReplayOptions};
use docket_domain::schema::ms_to_rfc3339;
use docket_domain::verdicts::imported::DeadlinePassed;
use docket_domain::{LedgerError, Statement};
use domain_support::*;
use serde_json::json;

fn no_auto() -> DocketOptions {
    DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Registers task `n` with `verdict_deadline` at `deadline_ms`.
fn task_with_deadline(fx: &Fixture, n: u64, deadline_ms: Option<u64>) -> String {
    let id = task_id(n);
    let mut t = task_json(&id, &[]);
    if let Some(d) = deadline_ms {
        t["verdict_deadline"] = json!(ms_to_rfc3339(d));
    }
    fx.append("task.registered", &t, &fx.admin).unwrap();
    id
}

fn status(fx: &Fixture, task: &str) -> VerdictStatus {
    fx.docket.verdict(task, AsOf::Latest, false).unwrap().status
}

#[test]
fn a_passed_deadline_records_fail_verdict_missing_once_and_replays_exactly() {
    // Given three tasks: one whose deadline passed, one whose deadline is
    // in the future, one without a deadline.
    let fx = Fixture::with_options(no_auto());
    let now = now_ms();
    let passed = task_with_deadline(&fx, 1, Some(now - 60_000));
    let future = task_with_deadline(&fx, 2, Some(now + 3_600_000));
    let none = task_with_deadline(&fx, 3, None);
    // When the deadline sweeper runs at the ledger clock.
    let report = fx.docket.sweep_verdict_deadlines().unwrap();
    // Then only the passed task is recorded FAIL verdict_missing.
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert_eq!(report.failed[0].task_id, passed);
    let v = fx.docket.verdict(&passed, AsOf::Latest, false).unwrap();
    assert_eq!(v.status, VerdictStatus::Fail);
    let info = v.verdict.clone().unwrap();
    assert_eq!(info.fail_class.as_deref(), Some("verdict_missing"));
    assert_eq!(info.verdict, "FAIL");
    // Signed by the ledger key, and the document carries its provenance.
    let event = fx.docket.ledger().event(info.seq).unwrap();
    assert_eq!(event.kind, "verdict.deadline_passed");
    assert_eq!(
        event.author,
        fx.docket.ledger().ledger_key().verifying_key().to_bytes()
    );
    let doc = v.verdict_document.unwrap();
    assert_eq!(doc["engine"]["name"], "docket-verdict-deadline");
    assert_eq!(doc["engine"]["rules_digest"].as_str().unwrap().len(), 64);
    assert_eq!(status(&fx, &future), VerdictStatus::Pending);
    assert_eq!(status(&fx, &none), VerdictStatus::Pending);
    // And a second sweep records nothing more (once per task).
    let again = fx.docket.sweep_verdict_deadlines().unwrap();
    assert!(again.failed.is_empty(), "{again:?}");

    // Replay --verify re-admits the deadline event from the log: clean,
    // and the rebuilt state equals the served one.
    let len = fx.docket.ledger().len();
    fx.docket.close().unwrap();
    let ledger = fx.docket.ledger();
    let verifier = NoteVerifier::new(ledger.origin(), ledger.ledger_key().verifying_key()).unwrap();
    let (report, rebuilt) = replay::replay(
        ledger.store().as_ref(),
        &verifier,
        ReplayOptions {
            verify: true,
            as_of: None,
        },
        &mut |_, _| {},
    )
    .unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(rebuilt, *ledger.state());
    assert_eq!(ledger.len(), len);
    let t = &rebuilt.domain.verdicts.tasks[&passed];
    assert_eq!(t.status, VerdictStatus::Fail);
}

#[test]
fn the_injectable_clock_decides_before_and_after_the_deadline() {
    let fx = Fixture::with_options(no_auto());
    let deadline = now_ms() - 10_000;
    let id = task_with_deadline(&fx, 7, Some(deadline));
    // Given a decision time before the deadline: nothing is due.
    let early = fx
        .docket
        .sweep_verdict_deadlines_with(Some(deadline - 1), false, fx.docket.ledger().ledger_key())
        .unwrap();
    assert!(early.failed.is_empty());
    assert_eq!(status(&fx, &id), VerdictStatus::Pending);
    // A dry run at the deadline reports it and records nothing.
    let len = fx.docket.ledger().len();
    let dry = fx
        .docket
        .sweep_verdict_deadlines_with(Some(deadline), true, fx.docket.ledger().ledger_key())
        .unwrap();
    assert_eq!(dry.failed.len(), 1);
    assert_eq!(fx.docket.ledger().len(), len);
    // At the deadline exactly: recorded, as of that time.
    let at = fx
        .docket
        .sweep_verdict_deadlines_with(Some(deadline), false, fx.docket.ledger().ledger_key())
        .unwrap();
    assert_eq!(at.failed.len(), 1);
    let seq = at.failed[0].receipt.as_ref().unwrap().seq;
    let p: serde_json::Value =
        serde_json::from_slice(&fx.docket.ledger().event(seq).unwrap().payload).unwrap();
    assert_eq!(p["as_of_ms"], json!(deadline));
    assert_eq!(p["deadline_ms"], json!(deadline));
    assert_eq!(status(&fx, &id), VerdictStatus::Fail);
}

#[test]
fn a_task_with_a_verdict_or_a_future_claim_is_not_failed() {
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    let now = now_ms();
    let judged = task_with_deadline(&fx, 11, Some(now - 5_000));
    let oid = fx.evidence(&judged, "report.md", b"# Report\n", &sub);
    fx.append("submission.received", &submit_json(&judged, &[oid]), &sub)
        .unwrap();
    fx.append("verdict.issued", &verdict_json(&judged, false), &ver)
        .unwrap();
    // Given a judged task: not due.
    assert!(fx.docket.due_deadlines(now_ms()).is_empty());
    let task = fx
        .docket
        .ledger()
        .state()
        .domain
        .verdicts
        .tasks
        .get(&judged)
        .unwrap()
        .clone();
    // A deadline statement for it anyway is refused: it has a verdict.
    let p = DeadlinePassed::new(&task, now - 5_000, now);
    let st = sign(
        "verdict.deadline_passed",
        &serde_json::to_value(&p).unwrap(),
        &ver,
    );
    assert!(matches!(
        fx.docket.append(st),
        Err(LedgerError::FailedPrecondition(_))
    ));

    // A pending task: a claimed decision time after the ledger clock is
    // refused (nobody fails a task early by claiming a future time).
    let pending = task_with_deadline(&fx, 12, Some(now - 1_000));
    let task = fx.docket.ledger().state().domain.verdicts.tasks[&pending].clone();
    let future = DeadlinePassed::new(&task, now - 1_000, now + 3_600_000);
    let st = sign(
        "verdict.deadline_passed",
        &serde_json::to_value(&future).unwrap(),
        &ver,
    );
    assert!(matches!(
        fx.docket.append(st),
        Err(LedgerError::FailedPrecondition(_))
    ));
    // A deadline that is not the contract's is refused.
    let wrong = DeadlinePassed::new(&task, now - 2_000, now - 500);
    let st = sign(
        "verdict.deadline_passed",
        &serde_json::to_value(&wrong).unwrap(),
        &ver,
    );
    assert!(matches!(
        fx.docket.append(st),
        Err(LedgerError::FailedPrecondition(_))
    ));
    // A decision before the deadline does not decode.
    let mut early = serde_json::to_value(DeadlinePassed::new(&task, now - 1_000, now)).unwrap();
    early["as_of_ms"] = json!(now - 2_000);
    let e = fx
        .docket
        .append(sign("verdict.deadline_passed", &early, &ver))
        .unwrap_err();
    assert!(
        violations(&e)
            .iter()
            .any(|v| v.contains("before the deadline"))
    );
    // A submitter may not author it (role), nor a verifier that submitted.
    let by_sub = DeadlinePassed::new(&task, now - 1_000, now);
    let e = fx
        .docket
        .append(sign(
            "verdict.deadline_passed",
            &serde_json::to_value(&by_sub).unwrap(),
            &sub,
        ))
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    assert_eq!(status(&fx, &pending), VerdictStatus::Pending);
    // The valid one by a verifier is admitted.
    let ok = DeadlinePassed::new(&task, now - 1_000, now);
    fx.docket
        .append(sign(
            "verdict.deadline_passed",
            &serde_json::to_value(&ok).unwrap(),
            &ver,
        ))
        .unwrap();
    assert_eq!(status(&fx, &pending), VerdictStatus::Fail);
}

#[test]
fn a_malformed_verdict_deadline_is_refused_with_its_rule() {
    let fx = Fixture::with_options(no_auto());
    let mut t = task_json(&task_id(20), &[]);
    t["verdict_deadline"] = json!("tomorrow at noon");
    let e = fx
        .docket
        .register_task(Statement::sign(
            "task.registered",
            serde_json::to_vec(&t).unwrap(),
            &fx.admin,
        ))
        .unwrap_err();
    assert!(
        violations(&e)
            .iter()
            .any(|v| v.contains("task.verdict_deadline")),
        "{e}"
    );
}

#[test]
fn a_reopened_ledger_keeps_the_deadline_verdict_and_a_new_submission_is_judged() {
    // Given a deadline FAIL on a task with no submission.
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    let id = task_with_deadline(&fx, 30, Some(now_ms() - 1_000));
    let r = fx.docket.sweep_verdict_deadlines().unwrap();
    assert_eq!(r.failed.len(), 1);
    assert_eq!(r.failed[0].submission_seq, None);
    let digest = fx
        .docket
        .verdict(&id, AsOf::Latest, false)
        .unwrap()
        .state_digest;
    // When the ledger is reopened, the state is the same.
    let dir = fx.dir.path().to_path_buf();
    fx.docket.close().unwrap();
    let Fixture {
        dir: _keep,
        docket,
        admin,
    } = fx;
    drop(docket);
    let docket = docket_domain::domain::Docket::open(
        &dir,
        docket_domain::LedgerOptions::default(),
        no_auto(),
    )
    .unwrap();
    let v = docket.verdict(&id, AsOf::Latest, false).unwrap();
    assert_eq!(v.state_digest, digest);
    assert_eq!(v.status, VerdictStatus::Fail);
    let fx = Fixture {
        dir: _keep,
        docket,
        admin,
    };
    // Then a later submission is pending again and judged as usual; the
    // deadline does not fire twice.
    let oid = fx.evidence(&id, "report.md", b"# Report\n", &sub);
    fx.append("submission.received", &submit_json(&id, &[oid]), &sub)
        .unwrap();
    assert_eq!(status(&fx, &id), VerdictStatus::Pending);
    assert!(
        fx.docket
            .sweep_verdict_deadlines()
            .unwrap()
            .failed
            .is_empty()
    );
    fx.append("verdict.issued", &verdict_json(&id, true), &ver)
        .unwrap();
    assert_eq!(status(&fx, &id), VerdictStatus::Pass);
}
