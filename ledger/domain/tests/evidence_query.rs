//! `Docket::evidence_list` (seed 000's evidence query) on a real ledger:
//! every OID of a task with the events that reference it — its minting
//! event (`evidence.registered`, or the `verdict.imported` that registered
//! an imported file), submissions (`evidence_oids`, `touched_oids`, also
//! from another task), verdicts and retention events — the type filter,
//! and refusals.

mod domain_support;

use docket_domain::LedgerError;
use docket_domain::domain::DocketOptions;
use docket_domain::domain::evidence_query::TypeFilter;
use docket_domain::keys::Role;
use domain_support::*;
use serde_json::json;

fn refs(entry: &docket_domain::domain::evidence_query::EvidenceEntry) -> Vec<(u64, String)> {
    entry
        .references
        .iter()
        .map(|r| (r.seq, r.kind.clone()))
        .collect()
}

#[test]
fn given_a_task_with_evidence_when_listed_then_each_oid_names_every_event_that_references_it() {
    let fx = Fixture::with_options(DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    });
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    let cus = fx.key(&[Role::Custodian]);
    let other = task_id(2);
    let task_seq = fx
        .append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap()
        .seq;
    fx.append("task.registered", &task_json(&other, &[]), &sub)
        .unwrap();
    // Two OIDs share one content; a third is a log.
    let diff = b"--- a/src/lib.rs\n+++ b/src/lib.rs\n".to_vec();
    let a = fx.evidence(TASK, "patch.diff", &diff, &sub);
    let b = fx.evidence(TASK, "evidence/patch.diff", &diff, &sub);
    let log = fx.evidence(TASK, "selftest.log", b"ok\nEXIT_CODE=0\n", &sub);
    let mut s = submit_json(TASK, &[a.clone(), log.clone()]);
    s["touched_oids"] = json!([b]);
    let submission = fx.append("submission.received", &s, &sub).unwrap().seq;
    // Another task's submission touches `a`: a reference from outside the task.
    let mut s2 = submit_json(&other, &[]);
    s2["touched_oids"] = json!([a]);
    let foreign = fx.append("submission.received", &s2, &sub).unwrap().seq;
    let mut v = verdict_json(TASK, false);
    v["evidence_oids"] = json!([log]);
    let verdict = fx.append("verdict.issued", &v, &ver).unwrap().seq;
    let pin = fx
        .append("retention.pinned", &json!({"oid": a}), &cus)
        .unwrap()
        .seq;
    // An extension payload that happens to hold the OID is opaque: no reference.
    fx.append("x-note", &json!({"mentions": a}), &sub).unwrap();

    let listing = fx.docket.evidence_list(TASK, None).unwrap();
    assert_eq!(listing.task_id, TASK);
    assert_eq!(listing.size, fx.docket.ledger().len());
    let oids: Vec<&str> = listing.entries.iter().map(|e| e.oid.as_str()).collect();
    assert_eq!(oids, [a.as_str(), b.as_str(), log.as_str()]);
    let [ea, eb, el] = &listing.entries[..] else {
        panic!("three entries")
    };
    assert!(task_seq < ea.record.registered_seq);
    assert_eq!(
        refs(ea),
        [
            (ea.record.registered_seq, "evidence.registered".to_string()),
            (submission, "submission.received".into()),
            (foreign, "submission.received".into()),
            (pin, "retention.pinned".into()),
        ]
    );
    assert_eq!(
        refs(eb),
        [
            (eb.record.registered_seq, "evidence.registered".to_string()),
            (submission, "submission.received".into()),
        ]
    );
    assert_eq!(
        refs(el),
        [
            (el.record.registered_seq, "evidence.registered".to_string()),
            (submission, "submission.received".into()),
            (verdict, "verdict.issued".into()),
        ]
    );
    // Shared content: one digest, two OIDs; retention state per OID.
    assert_eq!(ea.record.sha256, eb.record.sha256);
    assert!(ea.record.pinned && ea.expires_at_ms.is_none());
    assert!(!eb.record.pinned && eb.expires_at_ms.is_some());

    // The filter: an evidence type, or a seed 000 category.
    let logs = fx
        .docket
        .evidence_list(TASK, Some(&TypeFilter::parse("logs").unwrap()))
        .unwrap();
    assert_eq!(logs.entries.len(), 1);
    assert_eq!(logs.entries[0].oid, log);
    let diffs = fx
        .docket
        .evidence_list(TASK, Some(&TypeFilter::parse("patch.diff").unwrap()))
        .unwrap();
    assert_eq!(diffs.entries.len(), 2);
    assert!(
        fx.docket
            .evidence_list(TASK, Some(&TypeFilter::parse("screenshots").unwrap()))
            .unwrap()
            .entries
            .is_empty()
    );

    // A task without evidence lists nothing; an unknown task is NotFound.
    assert!(
        fx.docket
            .evidence_list(&other, None)
            .unwrap()
            .entries
            .is_empty()
    );
    let e = fx.docket.evidence_list(&task_id(9), None).unwrap_err();
    assert!(matches!(e, LedgerError::NotFound { .. }), "{e}");
    assert!(matches!(
        TypeFilter::parse("videos"),
        Err(LedgerError::Invalid { .. })
    ));
}

#[test]
fn given_an_imported_verdict_when_listed_then_its_files_reference_the_import() {
    let fx = Fixture::with_options(DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    });
    let sub = fx.key(&[Role::Submitter]);
    let ver = fx.key(&[Role::Verifier]);
    fx.append("task.registered", &task_json(TASK, &[]), &sub)
        .unwrap();
    // A seed 001 run directory: evidence/verdict.json and one evidence path.
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(run.path().join("evidence")).unwrap();
    std::fs::write(run.path().join("evidence/test.log"), b"2 passed\n").unwrap();
    std::fs::write(
        run.path().join("evidence/verdict.json"),
        serde_json::to_vec(
            &json!({"verdict": "PASS", "fail_class": null, "exit_code": 0,
            "evidence_paths": ["evidence/test.log"], "generated_utc": "2026-02-09T14:30:00Z"}),
        )
        .unwrap(),
    )
    .unwrap();
    let (_, receipt) = fx.docket.import_run_dir(run.path(), TASK, &ver).unwrap();
    assert_eq!(receipt.oids.len(), 2);
    let listing = fx.docket.evidence_list(TASK, None).unwrap();
    assert_eq!(listing.entries.len(), 2);
    for (entry, oid) in listing.entries.iter().zip(&receipt.oids) {
        assert_eq!(&entry.oid, oid);
        assert_eq!(
            refs(entry),
            [(receipt.receipt.seq, "verdict.imported".to_string())],
            "{oid}"
        );
    }
    let names: Vec<&str> = listing
        .entries
        .iter()
        .map(|e| e.record.artifact_name.as_str())
        .collect();
    assert_eq!(names, ["evidence/verdict.json", "evidence/test.log"]);
}
