//! Verdict provenance and `Docket::reproduce` (`docket verify --reproduce`):
//! the engine that produced a recorded verdict, re-run on the recorded
//! evidence, gives it again on an untouched ledger, and does not on a
//! tampered one (evidence content altered on disk, or a signed verdict the
//! engine would not produce); and `Docket::import_run_dir` on real files.

mod domain_support;

use std::path::{Path, PathBuf};

use docket_domain::LedgerError;
use docket_domain::Statement;
use docket_domain::domain::payloads::submission_payload;
use docket_domain::domain::verdict_import::ImportPlan;
use docket_domain::domain::{AsOf, DocketOptions, VerdictStatus};
use docket_domain::keys::Role;
use docket_domain::verdicts::provenance::Provenance;
use domain_support::*;
use serde_json::{Value, json};

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
    walk(root, "", &mut out);
    out.sort();
    out
}

/// Registers `case`'s contract and submits its artifacts; returns the
/// task id and the OIDs by artifact name.
fn submit_case(
    fx: &Fixture,
    sub: &ed25519_dalek::SigningKey,
    case: &str,
) -> (String, Vec<(String, String)>) {
    let dir = cases_dir().join(case);
    let contract = std::fs::read(dir.join("task.json")).unwrap();
    let task: Value = serde_json::from_slice(&contract).unwrap();
    let task = task["task_id"].as_str().unwrap().to_string();
    fx.docket
        .register_task(Statement::sign("task.registered", contract, sub))
        .unwrap();
    let root = dir.join("artifacts");
    let mut oids = Vec::new();
    for name in files(&root) {
        let oid = fx.evidence(&task, &name, &std::fs::read(root.join(&name)).unwrap(), sub);
        oids.push((name, oid));
    }
    let list: Vec<String> = oids.iter().map(|(_, o)| o.clone()).collect();
    let payload =
        submission_payload(&std::fs::read(root.join("submit.json")).unwrap(), &list).unwrap();
    fx.docket
        .submit(Statement::sign("submission.received", payload, sub))
        .unwrap();
    (task, oids)
}

#[test]
fn an_auto_verify_verdict_records_its_engine_and_reproduces_until_evidence_is_altered() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let (task, oids) = submit_case(&fx, &sub, "pass_minimal");
    let v = fx.docket.verdict(&task, AsOf::Latest, false).unwrap();
    assert_eq!(v.status, VerdictStatus::Pass);
    let doc = v.verdict_document.unwrap();
    assert_eq!(
        serde_json::from_value::<Provenance>(doc["engine"].clone()).unwrap(),
        Provenance::verifier()
    );
    // Untouched: the engine gives the recorded verdict.
    let r = fx.docket.reproduce(&task).unwrap();
    assert!(r.matches, "{:?}", r.differences);
    assert_eq!(r.kind, "verdict.issued");
    // Tampered: the selftest.log content changed on disk.
    let (_, oid) = oids.iter().find(|(n, _)| n == "selftest.log").unwrap();
    let rec = fx.docket.evidence(oid).unwrap().record;
    let digest = docket_domain::blobs::parse_digest(&rec.sha256).unwrap();
    std::fs::write(fx.docket.blobs().path_of(&digest), b"EXIT_CODE=1\n").unwrap();
    let r = fx.docket.reproduce(&task).unwrap();
    assert!(!r.matches);
    assert_eq!(r.recorded.verdict, "PASS");
    assert_eq!(r.reproduced.verdict, "FAIL");
}

#[test]
fn a_signed_verdict_the_engine_would_not_produce_does_not_reproduce() {
    // Given a failing submission and no auto-verify, an external verifier
    // records PASS.
    let fx = Fixture::with_options(DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    });
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    let (task, _) = submit_case(&fx, &sub, "fail_ci_tests_failed");
    let contract: Value = serde_json::from_slice(
        &std::fs::read(cases_dir().join("fail_ci_tests_failed/task.json")).unwrap(),
    )
    .unwrap();
    let mut doc = verdict_json(&task, true);
    for c in contract["acceptance"]["required_checks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        doc["checks"][c.as_str().unwrap()] = json!(true);
    }
    fx.append("verdict.issued", &doc, &ver).unwrap();
    assert_eq!(
        fx.docket
            .verdict(&task, AsOf::Latest, false)
            .unwrap()
            .status,
        VerdictStatus::Pass
    );
    // When reproduced, the engine gives FAIL: the recorded verdict differs.
    let r = fx.docket.reproduce(&task).unwrap();
    assert!(!r.matches);
    assert_eq!(r.recorded_engine, None);
    assert_eq!(r.reproduced.verdict, "FAIL");
    assert!(r.differences.iter().any(|d| d.starts_with("verdict:")));
    // A task without a verdict has nothing to reproduce.
    let none = task_id(99);
    fx.append("task.registered", &task_json(&none, &[]), &fx.admin)
        .unwrap();
    assert!(matches!(
        fx.docket.reproduce(&none),
        Err(LedgerError::NotFound { .. })
    ));
}

fn write(dir: &Path, rel: &str, content: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

#[test]
fn import_run_dir_records_one_event_with_its_evidence_and_refuses_submitters() {
    let fx = Fixture::new();
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    let both = fx.key(&[Role::Submitter, Role::Verifier]);
    let task = task_id(5);
    fx.append("task.registered", &task_json(&task, &[]), &fx.admin)
        .unwrap();
    let run = tempfile::tempdir().unwrap();
    write(
        run.path(),
        "evidence/verdict.json",
        r#"{"verdict":"FAIL","fail_class":"timeout","exit_code":124,"evidence_paths":["evidence/run.log","./evidence/run.log","evidence/verdict.json"],"generated_utc":"2026-02-09T14:30:00Z"}"#,
    );
    write(run.path(), "evidence/run.log", "killed after 600s\n");
    // A key that submitted for the task may not import its verdict.
    fx.evidence(&task, "report.md", b"# Report\n", &both);
    let len = fx.docket.ledger().len();
    let e = fx
        .docket
        .import_run_dir(run.path(), &task, &both)
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    // A submitter key (no verifier role) neither.
    let e = fx
        .docket
        .import_run_dir(run.path(), &task, &sub)
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    assert_eq!(fx.docket.ledger().len(), len);
    // The verifier imports: one event, FAIL timeout as reported, two OIDs
    // (duplicates and verdict.json itself in evidence_paths collapse).
    let (plan, r) = fx.docket.import_run_dir(run.path(), &task, &ver).unwrap();
    assert_eq!(fx.docket.ledger().len(), len + 1);
    assert_eq!(plan.files.len(), 2);
    assert_eq!(r.oids.len(), 2);
    let v = fx.docket.verdict(&task, AsOf::Latest, false).unwrap();
    assert_eq!(v.status, VerdictStatus::Fail);
    let info = v.verdict.unwrap();
    assert_eq!(info.fail_class.as_deref(), Some("timeout"));
    assert_eq!(info.evidence_oids, r.oids);
    let rec = fx.docket.evidence(&r.oids[1]).unwrap().record;
    assert_eq!(rec.artifact_name, "evidence/run.log");
    assert_eq!(rec.registered_seq, r.receipt.seq);
    // The verifier did not become a submitter: it may still record checks.
    let state = fx.docket.ledger().state();
    let t = &state.domain.verdicts.tasks[&task];
    assert!(!t.submitters.contains(&docket_domain::schema::Hex32(
        ver.verifying_key().to_bytes()
    )));
    drop(state);
    assert!(fx.docket.reproduce(&task).unwrap().matches);
    // Tampered verdict.json content: the import no longer reproduces.
    let digest = docket_domain::blobs::parse_digest(&plan.files[0].artifact.sha256).unwrap();
    std::fs::write(
        fx.docket.blobs().path_of(&digest),
        br#"{"verdict":"PASS","fail_class":null,"exit_code":0,"evidence_paths":[],"generated_utc":"2026-02-09T14:30:00Z"}"#,
    )
    .unwrap();
    let r = fx.docket.reproduce(&task).unwrap();
    assert!(!r.matches, "{r:?}");

    // A payload whose recorded verdict does not follow from what it
    // imports is refused by admission.
    let plan = ImportPlan::read(run.path(), &task, None).unwrap();
    let mut doc: Value = serde_json::from_slice(&plan.payload).unwrap();
    doc["verdict"] = json!("PASS");
    doc["fail_class"] = Value::Null;
    doc["exit_code"] = json!(0);
    let e = fx
        .docket
        .import_verdict(sign("verdict.imported", &doc, &ver))
        .unwrap_err();
    assert!(
        violations(&e).iter().any(|v| v.contains("[import.rules]")),
        "{e}"
    );
    // A fail_class outside the seed 001 taxonomy is refused.
    doc["verdict"] = json!("FAIL");
    doc["fail_class"] = json!("flaky");
    doc["exit_code"] = json!(124);
    let e = fx
        .docket
        .import_verdict(sign("verdict.imported", &doc, &ver))
        .unwrap_err();
    assert!(
        violations(&e).iter().any(|v| v.contains("fail_class")),
        "{e}"
    );
}
