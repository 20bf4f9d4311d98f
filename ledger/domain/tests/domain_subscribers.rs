//! Auto-verify as a subscriber of committed events: every committed
//! submission is judged however it was appended, from a persisted cursor
//! (`DATA/cursors/auto_verify`) that a reopen resumes from and that is
//! never trusted blindly.

mod domain_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use docket_domain::Statement;
use docket_domain::domain::payloads::submission_payload;
use docket_domain::domain::subscriber::Cursor;
use docket_domain::domain::{AsOf, Docket, DocketOptions, VerdictStatus};
use docket_domain::keys::Role;
use docket_domain::ledger::LedgerOptions;
use docket_verifier::verdict::Outcome;
use domain_support::*;
use ed25519_dalek::SigningKey;

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../verifier/tests/cases/pass_minimal")
}

fn no_auto() -> DocketOptions {
    DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    }
}

/// Registers the passing case's task and evidence; returns the signed
/// submission (not appended).
fn prepare(fx: &Fixture, sub: &SigningKey) -> Statement {
    let dir = case_dir();
    fx.docket
        .register_task(Statement::sign(
            "task.registered",
            std::fs::read(dir.join("task.json")).unwrap(),
            sub,
        ))
        .unwrap();
    let root = dir.join("artifacts");
    let mut oids = Vec::new();
    for name in files(&root, "") {
        let content = std::fs::read(root.join(&name)).unwrap();
        oids.push(fx.evidence(TASK, &name, &content, sub));
    }
    let payload =
        submission_payload(&std::fs::read(root.join("submit.json")).unwrap(), &oids).unwrap();
    Statement::sign("submission.received", payload, sub)
}

/// Every file under `dir`, as `/`-separated names relative to it, sorted.
fn files(dir: &Path, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if e.file_type().unwrap().is_dir() {
            out.extend(files(&e.path(), &rel));
        } else {
            out.push(rel);
        }
    }
    out.sort();
    out
}

fn cursor(dir: &Path) -> Cursor {
    Cursor::new(dir, "auto_verify")
}

fn status(docket: &Docket) -> VerdictStatus {
    docket.verdict(TASK, AsOf::Latest, false).unwrap().status
}

#[test]
fn a_submission_appended_straight_to_the_log_is_judged() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let stmt = prepare(&fx, &sub);
    // Not through Docket::submit: the raw log append path.
    let receipt = fx.docket.ledger().append(stmt).unwrap();
    let running = fx.docket.auto_verify().expect("auto-verify runs");
    assert!(running.wait_handled(receipt.seq, Duration::from_secs(60)));
    let v = fx.docket.verdict(TASK, AsOf::Latest, false).unwrap();
    assert_eq!(v.status, VerdictStatus::Pass);
    let info = v.verdict.unwrap();
    assert_eq!(info.submission_seq, receipt.seq);
    assert_eq!(
        fx.docket.ledger().event(info.seq).unwrap().author,
        fx.docket.ledger().ledger_key().verifying_key().to_bytes()
    );
}

#[test]
fn submit_returns_the_verdict_and_the_cursor_follows() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let stmt = prepare(&fx, &sub);
    let out = fx.docket.submit(stmt.clone()).unwrap();
    assert!(
        out.auto_verify_error.is_none(),
        "{:?}",
        out.auto_verify_error
    );
    let verdict_receipt = out.verdict_receipt.expect("a verdict receipt");
    assert_eq!(out.verdict.unwrap().verdict, Outcome::Pass);
    assert_eq!(out.state.status, VerdictStatus::Pass);
    assert!(verdict_receipt.seq > out.receipt.seq);
    // A duplicate submission appends nothing and finds the verdict.
    let len = fx.docket.ledger().len();
    let again = fx.docket.submit(stmt).unwrap();
    assert!(again.receipt.duplicate);
    assert_eq!(again.receipt.seq, out.receipt.seq);
    assert_eq!(again.verdict.unwrap().verdict, Outcome::Pass);
    assert_eq!(fx.docket.ledger().len(), len);
    fx.docket.close().unwrap();
    let last = cursor(fx.dir.path()).read().unwrap().expect("a cursor");
    assert!(
        last >= out.receipt.seq,
        "cursor {last} before the submission"
    );
    assert!(last < fx.docket.ledger().len());
}

#[test]
fn a_reopen_judges_what_was_committed_after_the_cursor() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let stmt = prepare(&fx, &sub);
    let Fixture { dir, docket, .. } = fx;
    docket.close().unwrap();
    drop(docket);
    let before = cursor(dir.path()).read().unwrap().expect("a cursor");
    // A session without auto-verify commits a submission: nothing judges it.
    let quiet = Docket::open(dir.path(), LedgerOptions::default(), no_auto()).unwrap();
    let receipt = quiet.submit(stmt).unwrap().receipt;
    assert_eq!(status(&quiet), VerdictStatus::Pending);
    quiet.close().unwrap();
    drop(quiet);
    assert_eq!(cursor(dir.path()).read().unwrap(), Some(before));
    // Reopened with auto-verify: caught up from the cursor before open returns.
    let docket = Docket::open(
        dir.path(),
        LedgerOptions::default(),
        DocketOptions::default(),
    )
    .unwrap();
    assert_eq!(status(&docket), VerdictStatus::Pass);
    let v = docket.verdict(TASK, AsOf::Latest, false).unwrap();
    assert_eq!(v.verdict.unwrap().submission_seq, receipt.seq);
    docket.close().unwrap();
}

#[test]
fn a_cursor_beyond_the_log_is_not_trusted() {
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let stmt = prepare(&fx, &sub);
    fx.docket.submit(stmt).unwrap();
    let Fixture { dir, docket, .. } = fx;
    let len = docket.ledger().len();
    docket.close().unwrap();
    drop(docket);
    // A cursor from another (longer) history: it would skip the submission.
    std::fs::create_dir_all(dir.path().join("cursors")).unwrap();
    std::fs::write(dir.path().join("cursors/auto_verify"), "1000000\n").unwrap();
    let docket = Docket::open(
        dir.path(),
        LedgerOptions::default(),
        DocketOptions::default(),
    )
    .unwrap();
    assert_eq!(
        status(&docket),
        VerdictStatus::Pass,
        "reset to a safe position: the pending submission was judged"
    );
    let reset = cursor(dir.path()).read().unwrap().expect("a cursor");
    assert!(reset >= len - 1 && reset < docket.ledger().len(), "{reset}");
    docket.close().unwrap();
    drop(docket);
    // A cursor that does not parse is replaced too.
    std::fs::write(dir.path().join("cursors/auto_verify"), "garbage").unwrap();
    let docket = Docket::open(
        dir.path(),
        LedgerOptions::default(),
        DocketOptions::default(),
    )
    .unwrap();
    assert!(cursor(dir.path()).read().unwrap().is_some());
    docket.close().unwrap();
}

#[test]
fn a_superseded_submission_is_reported_not_judged() {
    let fx = Fixture::with_options(no_auto());
    let sub = fx.key(&[Role::Submitter]);
    let first = prepare(&fx, &sub);
    let first_seq = fx.docket.submit(first).unwrap().receipt.seq;
    let mut second = submit_json(TASK, &[]);
    second["tests"]["summary"] = "again".into();
    let second_seq = fx.append("submission.received", &second, &sub).unwrap().seq;
    let Fixture { dir, docket, .. } = fx;
    docket.close().unwrap();
    drop(docket);
    let docket = Docket::open(
        dir.path(),
        LedgerOptions::default(),
        DocketOptions::default(),
    )
    .unwrap();
    // Only the latest submission is owed a verdict.
    let v = docket.verdict(TASK, AsOf::Latest, false).unwrap();
    assert_eq!(v.verdict.unwrap().submission_seq, second_seq);
    assert!(first_seq < second_seq);
    docket.close().unwrap();
}
