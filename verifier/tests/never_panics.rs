//! Property tests: the diff parser and every JSON entry point never panic on
//! arbitrary input, and the engine never PASSes garbage.

use docket_verifier::engine::{MemoryArtifacts, evaluate};
use docket_verifier::execution::ExecutionRecord;
use docket_verifier::harness::RunReport;
use docket_verifier::submit::Submission;
use docket_verifier::verdict::Outcome;
use docket_verifier::{TaskContract, Verdict, VerifierOutput, diff};
use proptest::prelude::*;

/// Lines that look like diff syntax, so the parser's deeper states are reached.
fn diffish_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("diff --git a/x b/x".to_owned()),
        Just("--- a/x".to_owned()),
        Just("+++ b/x".to_owned()),
        Just("--- /dev/null".to_owned()),
        Just("+++ /dev/null".to_owned()),
        Just("new file mode 100644".to_owned()),
        Just("deleted file mode 100644".to_owned()),
        Just("rename from a".to_owned()),
        Just("rename to b".to_owned()),
        Just("copy from a".to_owned()),
        Just("similarity index 250%".to_owned()),
        Just("GIT binary patch".to_owned()),
        Just("literal 12".to_owned()),
        Just("\\ No newline at end of file".to_owned()),
        Just("-- ".to_owned()),
        Just(String::new()),
        (0u32..5, 0u32..5, 0u32..5, 0u32..5)
            .prop_map(|(a, b, c, d)| format!("@@ -{a},{b} +{c},{d} @@")),
        "[ +\\-@\\\\\"a-z/]{0,12}",
        any::<String>(),
    ]
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|i| serde_json::json!(i)),
        any::<f64>().prop_map(|f| serde_json::json!(f)),
        "[a-zA-Z0-9_./:-]{0,16}".prop_map(serde_json::Value::String),
        Just(serde_json::json!("scc.submit.v1")),
        Just(serde_json::json!("72c84e9c-0975-4c1a-b9a5-864c2725dc8a")),
        Just(serde_json::json!("2026-02-09T14:30:00Z")),
    ];
    let keys = prop_oneof![
        Just("task_id"),
        Just("goal"),
        Just("role"),
        Just("pins"),
        Just("allowed_paths"),
        Just("forbidden_paths"),
        Just("files"),
        Just("acceptance"),
        Just("schema_version"),
        Just("status"),
        Just("tests"),
        Just("passed"),
        Just("artifacts"),
        Just("exit_code"),
        Just("verdict"),
        Just("checks"),
        Just("timestamps"),
        Just("evaluated_at"),
        Just("raw_command"),
        Just("stdout"),
        Just("stderr"),
        Just("evidence_hash"),
        Just("freshness"),
        Just("verification"),
        Just("x"),
    ];
    leaf.prop_recursive(4, 48, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(keys.clone().prop_map(str::to_owned), inner, 0..8)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn all_json_entry_points(bytes: &[u8]) {
    let _ = TaskContract::parse(bytes);
    let _ = Submission::parse(bytes);
    let _ = Verdict::parse(bytes);
    let _ = VerifierOutput::parse(bytes);
    let _ = ExecutionRecord::parse(bytes);
    let _ = RunReport::parse(bytes);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn diff_parser_never_panics_on_bytes(s in any::<String>()) {
        let _ = diff::parse(&s);
    }

    #[test]
    fn diff_parser_never_panics_on_diffish_text(lines in prop::collection::vec(diffish_line(), 0..40)) {
        let text = lines.join("\n");
        if let Ok(patch) = diff::parse(&text) {
            // Counts add up in every accepted hunk.
            for h in patch.files.iter().flat_map(|f| &f.hunks) {
                prop_assert_eq!(h.context + h.removed, h.old_count);
                prop_assert_eq!(h.context + h.added, h.new_count);
            }
        }
    }

    #[test]
    fn json_entry_points_never_panic_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        all_json_entry_points(&bytes);
    }

    #[test]
    fn json_entry_points_never_panic_on_json(value in json_value()) {
        let bytes = serde_json::to_vec(&value).unwrap();
        all_json_entry_points(&bytes);
    }

    #[test]
    fn engine_never_passes_garbage(names in prop::collection::vec("(submit\\.json|patch\\.diff|selftest\\.log|report\\.md|report\\.json|evidence/x\\.execution\\.json)", 0..6),
                                   blobs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 6)) {
        let contract = TaskContract::parse(br#"{"task_id":"72c84e9c-0975-4c1a-b9a5-864c2725dc8a","goal":"g","role":"r","pins":{"allowed_paths":["src/"]}}"#).unwrap();
        let mut artifacts = MemoryArtifacts::new();
        for (name, blob) in names.iter().zip(&blobs) {
            artifacts.blobs.insert(name.clone(), blob.clone());
        }
        let t = time::OffsetDateTime::UNIX_EPOCH;
        let verdict = evaluate(&contract, &artifacts, t);
        prop_assert_eq!(verdict.verdict, Outcome::Fail);
        prop_assert_eq!(verdict.to_canonical_json(), evaluate(&contract, &artifacts, t).to_canonical_json());
    }
}
