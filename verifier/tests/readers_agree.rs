//! The typed and checked readers of each seed document give the same
//! answer on damaged bytes: good documents with one to four bytes replaced,
//! inserted or removed, drawn from JSON's syntax (quotes, escapes,
//! brackets, digits, exponents) and bytes that are not UTF-8. The unit
//! tests damage values; these damage the text.

use docket_verifier::execution::ExecutionRecord;
use docket_verifier::submit::Submission;
use docket_verifier::{TaskContract, Verdict};
use proptest::prelude::*;

const TASK: &str = r#"{"task_id": "72c84e9c-0975-4c1a-b9a5-864c2725dc8a", "goal": "Create IO layer documentation.", "role": "executor", "pins": {"allowed_paths": ["docs/io/"], "forbidden_paths": ["docs/io/secret/"]}, "files": ["docs/io/a.md"], "context": {"map": {}, "docs": {}, "history": {}}, "acceptance": {"required_evidence": ["patch.diff"], "required_checks": ["scope_valid"], "required_test_commands": ["cargo test"]}, "retention_class": "high_impact", "verdict_deadline": "2026-12-01T00:00:00Z"}"#;
const SUBMIT: &str = r#"{"schema_version": "scc.submit.v1", "task_id": "72c84e9c-0975-4c1a-b9a5-864c2725dc8a", "status": "DONE", "changed_files": ["src/a.rs"], "new_files": [], "tests": {"commands": ["cargo test"], "passed": true, "summary": "ok"}, "artifacts": {"report_md": "report.md", "selftest_log": "selftest.log", "evidence_dir": "evidence/", "patch_diff": "patch.diff", "submit_json": "submit.json"}, "exit_code": 0, "needs_input": [], "evidence_oids": []}"#;
const VERDICT: &str = r#"{"schema_version": "scc.verdict.v1", "task_id": "t-1", "verdict": "FAIL", "reason_code": "SCOPE_CONFLICT", "fail_class": "scope_violation", "messages": ["m"], "checks": {"schema_valid": true, "scope_valid": false, "tests_passed": true, "evidence_present": true}, "timestamps": {"submitted_at": "2026-02-09T14:29:00Z", "evaluated_at": "2026-02-09T14:30:00Z"}, "links": {"patch_diff": "patch.diff"}, "findings": [{"check": "scope_valid", "rule": "scope.forbidden", "reason_code": "SCOPE_CONFLICT", "file": "a.rs", "line": 3, "message": "no"}], "submission_seq": 4}"#;

fn execution() -> String {
    let record = ExecutionRecord::from_execution(
        "cargo test",
        0,
        "ok\n",
        "",
        "2026-02-09T14:30:00Z",
        "2026-02-09T14:30:01.5Z",
        1.5,
    );
    serde_json::to_string(&record).expect("a record serializes")
}

/// One change to the text: at a position (a fraction of its length), a
/// byte replaced, inserted, or removed.
#[derive(Debug, Clone)]
enum Edit {
    Replace(prop::sample::Index, u8),
    Insert(prop::sample::Index, Vec<u8>),
    Remove(prop::sample::Index),
}

fn syntax_byte() -> impl Strategy<Value = u8> {
    prop::sample::select(
        b"\"\\u{}[],:-+.0123456789eEtfn \x00\x1f\x7f\xc3\xa9\xed\xa0\x80\xff".to_vec(),
    )
}

fn edit() -> impl Strategy<Value = Edit> {
    let insert = prop_oneof![
        syntax_byte().prop_map(|b| vec![b]),
        prop::sample::select(vec![
            br#"\ud800"#.to_vec(),
            br#"\udc00"#.to_vec(),
            br#"\u0041"#.to_vec(),
            b"1e999".to_vec(),
            br#""zz": 1e999, "#.to_vec(),
            br#""zz": "\ud800", "#.to_vec(),
            b"\"zz\": \"\xff\", ".to_vec(),
            br#""zz": [1, {"a": null}], "#.to_vec(),
        ]),
    ];
    prop_oneof![
        (any::<prop::sample::Index>(), syntax_byte()).prop_map(|(i, b)| Edit::Replace(i, b)),
        (any::<prop::sample::Index>(), insert).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<prop::sample::Index>().prop_map(Edit::Remove),
    ]
}

fn damage(good: &str, edits: &[Edit]) -> Vec<u8> {
    let mut bytes = good.as_bytes().to_vec();
    for e in edits {
        match e {
            Edit::Replace(i, b) if !bytes.is_empty() => {
                let at = i.index(bytes.len());
                bytes[at] = *b;
            }
            Edit::Insert(i, b) => {
                let at = i.index(bytes.len() + 1);
                bytes.splice(at..at, b.iter().copied());
            }
            Edit::Remove(i) if !bytes.is_empty() => {
                bytes.remove(i.index(bytes.len()));
            }
            _ => {}
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn task_contracts(edits in prop::collection::vec(edit(), 1..=4)) {
        let doc = damage(TASK, &edits);
        prop_assert_eq!(TaskContract::parse(&doc), TaskContract::parse_checked(&doc));
    }

    #[test]
    fn submissions(edits in prop::collection::vec(edit(), 1..=4)) {
        let doc = damage(SUBMIT, &edits);
        prop_assert_eq!(Submission::parse(&doc), Submission::parse_checked(&doc));
    }

    #[test]
    fn verdicts(edits in prop::collection::vec(edit(), 1..=4)) {
        let doc = damage(VERDICT, &edits);
        prop_assert_eq!(Verdict::parse(&doc), Verdict::parse_checked(&doc));
    }

    #[test]
    fn execution_records(edits in prop::collection::vec(edit(), 1..=4)) {
        let doc = damage(&execution(), &edits);
        prop_assert_eq!(ExecutionRecord::parse(&doc), ExecutionRecord::parse_checked(&doc));
    }
}

/// The good documents above are read by both readers (so the damage starts
/// from a valid document).
#[test]
fn the_good_documents_are_valid() {
    assert!(TaskContract::parse_checked(TASK.as_bytes()).is_ok());
    assert!(Submission::parse_checked(SUBMIT.as_bytes()).is_ok());
    assert!(Verdict::parse_checked(VERDICT.as_bytes()).is_ok());
    assert!(ExecutionRecord::parse_checked(execution().as_bytes()).is_ok());
}
