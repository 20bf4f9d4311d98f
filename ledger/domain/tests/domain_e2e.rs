//! End to end through the service: every verifier case directory
//! (`verifier/tests/cases/*`) is registered, its artifacts uploaded as
//! evidence, submitted, and auto-verified; the verdict must be the one the
//! seeds demand (`expected.json`). Submissions the ledger refuses (an
//! invalid `submit.json`) must be exactly those the engine fails for
//! `SCHEMA_VIOLATION`, and a refused task contract lists its rules.

mod domain_support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use docket_domain::checkpoint::NoteVerifier;
use docket_domain::domain::payloads::submission_payload;
use docket_domain::domain::{AsOf, VerdictStatus};
use docket_domain::keys::Role;
use docket_domain::replay::{self, ReplayOptions};
use docket_domain::{LedgerError, Statement};
use domain_support::*;
use ed25519_dalek::SigningKey;
use serde_json::Value;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../verifier/tests/cases")
}

fn files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &rel, out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    if root.is_dir() {
        walk(root, "", &mut out);
    }
    out.sort();
    out
}

enum Outcome {
    Verdict(Value),
    Refused(LedgerError),
    NoSubmitJson,
}

/// Registers the case's task, uploads every artifact, submits.
fn run_case(fx: &Fixture, sub: &SigningKey, dir: &Path) -> Result<Outcome, LedgerError> {
    let task = std::fs::read(dir.join("task.json")).unwrap();
    fx.docket
        .register_task(Statement::sign("task.registered", task.clone(), sub))?;
    let task_id = serde_json::from_slice::<Value>(&task).unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let root = dir.join("artifacts");
    let mut oids = Vec::new();
    for name in files(&root) {
        let content = std::fs::read(root.join(&name)).unwrap();
        oids.push(fx.evidence(&task_id, &name, &content, sub));
    }
    // The ledger holds the approvals the harness run claims (docs/DOMAIN.md
    // §3.11), as an operator would have granted them.
    grant_claimed_approvals(fx, sub, &task_id, &root);
    let Ok(submit) = std::fs::read(root.join("submit.json")) else {
        return Ok(Outcome::NoSubmitJson);
    };
    let payload = match submission_payload(&submit, &oids) {
        Ok(p) => p,
        Err(e) => return Ok(Outcome::Refused(e)),
    };
    match fx
        .docket
        .submit(Statement::sign("submission.received", payload, sub))
    {
        Ok(out) => {
            let v = out.verdict.expect("auto-verify issued a verdict");
            // The projection agrees with the verdict just issued.
            assert_eq!(
                out.state.status,
                if v.verdict == docket_verifier::verdict::Outcome::Pass {
                    VerdictStatus::Pass
                } else {
                    VerdictStatus::Fail
                }
            );
            for (name, passed) in &v.checks {
                assert_eq!(out.state.checks[name].passed, *passed, "check {name}");
            }
            assert_eq!(v.evidence_oids, oids);
            Ok(Outcome::Verdict(serde_json::to_value(&v).unwrap()))
        }
        Err(e @ (LedgerError::Invalid { .. } | LedgerError::NotFound { .. })) => {
            Ok(Outcome::Refused(e))
        }
        Err(e) => Err(e),
    }
}

/// Runs one case directory; returns what differs from `expected.json`.
fn check_case(dir: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    let case = dir.file_name().unwrap().to_string_lossy().into_owned();
    let expected: Value =
        serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let outcome = run_case(&fx, &sub, dir);
    if let Some(rules) = expected.get("task_violations") {
        match outcome {
            Err(LedgerError::Invalid { violations, .. }) => {
                for rule in rules.as_array().unwrap().iter().filter_map(Value::as_str) {
                    if !violations.iter().any(|v| v.contains(rule)) {
                        failures.push(format!("{case}: rule {rule} not listed in {violations:?}"));
                    }
                }
            }
            _ => failures.push(format!("{case}: invalid contract was not refused")),
        }
        return failures;
    }
    let want_verdict = expected["verdict"].as_str().unwrap();
    let want_reason = expected["reason_code"].as_str();
    match outcome {
        Err(e) => failures.push(format!("{case}: unexpected error {e}")),
        Ok(Outcome::NoSubmitJson) => {
            if want_reason != Some("EVIDENCE_MISSING") {
                failures.push(format!(
                    "{case}: no submit.json but expected {want_reason:?}"
                ));
            }
        }
        Ok(Outcome::Refused(e)) => {
            if want_verdict != "FAIL" || want_reason != Some("SCHEMA_VIOLATION") {
                failures.push(format!(
                    "{case}: submission refused ({e}) but expected {want_verdict} {want_reason:?}"
                ));
            }
        }
        Ok(Outcome::Verdict(v)) => {
            if v["verdict"] != expected["verdict"] || v["reason_code"].as_str() != want_reason {
                failures.push(format!(
                    "{case}: got {} {:?}, expected {want_verdict} {want_reason:?}; messages {}",
                    v["verdict"], v["reason_code"], v["messages"]
                ));
            } else {
                let failed: BTreeSet<&str> = v["checks"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(_, ok)| ok == &&Value::Bool(false))
                    .map(|(k, _)| k.as_str())
                    .collect();
                let want: BTreeSet<&str> = expected["failed_checks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                if failed != want {
                    failures.push(format!(
                        "{case}: failed checks {failed:?}, expected {want:?}"
                    ));
                }
            }
        }
    }
    fx.docket.close().unwrap();
    failures
}

#[test]
fn every_verifier_case_gets_the_verdict_the_seeds_demand() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let ran = dirs.len();
    assert!(
        ran >= 50,
        "only {ran} cases found under {}",
        cases_dir().display()
    );
    // Four workers: each case is its own ledger, and the time goes to fsync.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(dir) = dirs.get(i) else { break };
                        out.extend(check_case(dir));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {ran} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn pass_then_fail_with_replay_and_determinism() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let Outcome::Verdict(v) = run_case(&fx, &sub, &cases_dir().join("pass_minimal")).unwrap()
    else {
        panic!("pass_minimal gave no verdict");
    };
    assert_eq!(v["verdict"], "PASS");
    let state = fx.docket.verdict(TASK, AsOf::Latest, true).unwrap();
    assert_eq!(state.status, VerdictStatus::Pass);
    let submission_seq = state.latest_submission_seq.unwrap();
    // Auto-verify is deterministic: running it again appends nothing.
    let len = fx.docket.ledger().len();
    let again = fx.docket.verify_submission(submission_seq).unwrap();
    assert!(again.verdict_receipt.duplicate && again.check_receipts.iter().all(|r| r.duplicate));
    assert_eq!(fx.docket.ledger().len(), len);
    // The verdict is signed by the ledger key and names the submission.
    let verdict_event = fx
        .docket
        .ledger()
        .event(state.verdict.as_ref().unwrap().seq)
        .unwrap();
    assert_eq!(
        verdict_event.author,
        fx.docket.ledger().ledger_key().verifying_key().to_bytes()
    );
    let doc: Value = serde_json::from_slice(&verdict_event.payload).unwrap();
    assert_eq!(doc["submission_seq"], submission_seq);
    let submitted_at = doc["timestamps"]["submitted_at"].as_str().unwrap();
    assert_eq!(
        docket_domain::domain::payloads::rfc3339_ms(submitted_at),
        Some(i128::from(
            fx.docket
                .ledger()
                .event(submission_seq)
                .unwrap()
                .recorded_at_ms
        )),
        "submitted_at is the submission's ledger time"
    );
    // A second attempt that breaks scope supersedes with FAIL.
    let dir = cases_dir().join("fail_scope_forbidden_path");
    let root = dir.join("artifacts");
    let mut oids = Vec::new();
    for name in files(&root) {
        oids.push(fx.evidence(TASK, &name, &std::fs::read(root.join(&name)).unwrap(), &sub));
    }
    let payload =
        submission_payload(&std::fs::read(root.join("submit.json")).unwrap(), &oids).unwrap();
    let out = fx
        .docket
        .submit(Statement::sign("submission.received", payload, &sub))
        .unwrap();
    assert_eq!(out.state.status, VerdictStatus::Fail);
    assert_eq!(
        out.verdict.unwrap().reason_code.unwrap().as_str(),
        "SCOPE_CONFLICT"
    );
    let hist = fx
        .docket
        .verdict(TASK, AsOf::Latest, true)
        .unwrap()
        .history
        .unwrap();
    assert!(hist.iter().any(|c| c.status == VerdictStatus::Pass));
    // As of the first verdict: PASS.
    let first_verdict = hist
        .iter()
        .find(|c| c.kind == "verdict.issued")
        .unwrap()
        .seq;
    assert_eq!(
        fx.docket
            .verdict(TASK, AsOf::Seq(first_verdict), false)
            .unwrap()
            .status,
        VerdictStatus::Pass
    );
    // Replay --verify: clean, projections equal.
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
}

#[test]
fn tampered_or_inconsistent_evidence_fails_closed() {
    // A blob changed on disk after upload: the verdict is FAIL, not PASS.
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let dir = cases_dir().join("pass_minimal");
    fx.docket
        .register_task(Statement::sign(
            "task.registered",
            std::fs::read(dir.join("task.json")).unwrap(),
            &sub,
        ))
        .unwrap();
    let root = dir.join("artifacts");
    let mut oids = Vec::new();
    for name in files(&root) {
        oids.push(fx.evidence(TASK, &name, &std::fs::read(root.join(&name)).unwrap(), &sub));
    }
    let selftest = fx
        .docket
        .evidence(
            &oids[files(&root)
                .iter()
                .position(|n| n == "selftest.log")
                .unwrap()],
        )
        .unwrap();
    let digest = docket_domain::blobs::parse_digest(&selftest.record.sha256).unwrap();
    std::fs::write(fx.docket.blobs().path_of(&digest), b"EXIT_CODE=0\n").unwrap();
    let payload =
        submission_payload(&std::fs::read(root.join("submit.json")).unwrap(), &oids).unwrap();
    let out = fx
        .docket
        .submit(Statement::sign("submission.received", payload, &sub))
        .unwrap();
    let v = out.verdict.unwrap();
    assert_eq!(v.verdict, docket_verifier::verdict::Outcome::Fail);
    assert_eq!(out.state.status, VerdictStatus::Fail);

    // A submit.json among the evidence that differs from the signed statement.
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    fx.docket
        .register_task(Statement::sign(
            "task.registered",
            std::fs::read(dir.join("task.json")).unwrap(),
            &sub,
        ))
        .unwrap();
    let mut oids = Vec::new();
    for name in files(&root) {
        oids.push(fx.evidence(TASK, &name, &std::fs::read(root.join(&name)).unwrap(), &sub));
    }
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(root.join("submit.json")).unwrap()).unwrap();
    doc["tests"]["summary"] = Value::String("something else".into());
    let payload = submission_payload(&serde_json::to_vec(&doc).unwrap(), &oids).unwrap();
    let out = fx
        .docket
        .submit(Statement::sign("submission.received", payload, &sub))
        .unwrap();
    let v = out.verdict.unwrap();
    assert_eq!(v.reason_code.unwrap().as_str(), "EVIDENCE_TAMPERED");
}

#[test]
fn auto_verify_off_leaves_the_task_pending() {
    let fx = Fixture::with_options(docket_domain::domain::DocketOptions {
        auto_verify: false,
        ..Default::default()
    });
    let sub = fx.key(&[Role::Submitter]);
    let dir = cases_dir().join("pass_minimal");
    fx.docket
        .register_task(Statement::sign(
            "task.registered",
            std::fs::read(dir.join("task.json")).unwrap(),
            &sub,
        ))
        .unwrap();
    let root = dir.join("artifacts");
    let mut oids = Vec::new();
    for name in files(&root) {
        oids.push(fx.evidence(TASK, &name, &std::fs::read(root.join(&name)).unwrap(), &sub));
    }
    let payload =
        submission_payload(&std::fs::read(root.join("submit.json")).unwrap(), &oids).unwrap();
    let out = fx
        .docket
        .submit(Statement::sign("submission.received", payload, &sub))
        .unwrap();
    assert!(out.verdict.is_none());
    assert_eq!(
        out.state.status,
        VerdictStatus::Pending,
        "a submission without a verdict is PENDING, never PASS"
    );
    assert_eq!(
        fx.docket
            .verdicts(Some(VerdictStatus::Pending), AsOf::Latest)
            .unwrap()
            .len(),
        1
    );
    // The engine's verdict is available without appending.
    let v = fx.docket.evaluate_submission(out.receipt.seq).unwrap();
    assert_eq!(v.verdict, docket_verifier::verdict::Outcome::Pass);
    assert_eq!(
        fx.docket.verdict(TASK, AsOf::Latest, false).unwrap().status,
        VerdictStatus::Pending
    );
}

/// Records in the ledger, before the submission, a request and a grant for
/// every complete `approval.granted` a harness run's events claim (same
/// scope, mutation mode and approver actor; no expiry). A grant the ledger
/// refuses (e.g. the requester answering itself) is simply not there.
fn grant_claimed_approvals(fx: &Fixture, sub: &SigningKey, task_id: &str, root: &Path) {
    let Ok(text) = std::fs::read_to_string(root.join("events.normalized.jsonl")) else {
        return;
    };
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let field = |e: &Value, k: &str| e[k].as_str().unwrap_or_default().to_string();
    let requester = events
        .iter()
        .find(|e| e["event"] == "approval.requested")
        .map_or_else(|| "requester".to_string(), |e| field(e, "actor"));
    let approver = fx.key(&[Role::Approver]);
    for e in events.iter().filter(|e| e["event"] == "approval.granted") {
        let (scope, mode, actor) = (
            field(e, "scope"),
            field(e, "mutation_mode"),
            field(e, "actor"),
        );
        if scope.is_empty() || mode.is_empty() || actor.is_empty() {
            continue;
        }
        let request = serde_json::json!({"task_id": task_id, "actor": requester, "scope": scope,
            "mutation_mode": mode, "timestamp": "2026-02-09T14:28:00Z"});
        let Ok(r) = fx.append("approval.requested", &request, sub) else {
            continue;
        };
        let grant = serde_json::json!({"task_id": task_id, "request_seq": r.seq, "actor": actor,
            "scope": scope, "mutation_mode": mode, "timestamp": "2026-02-09T14:28:01Z"});
        let _ = fx.append("approval.granted", &grant, &approver);
    }
}
