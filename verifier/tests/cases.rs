//! Data-driven verdict cases: every directory under `tests/cases/` holds a
//! `task.json`, an `artifacts/` directory and an `expected.json`. Regenerate
//! them with `python3 verifier/tests/gen_cases.py`.

use docket_verifier::engine::{ArtifactSource, DirArtifacts, MemoryArtifacts, evaluate};
use docket_verifier::verdict::Outcome;
use docket_verifier::{TaskContract, Verdict};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn evaluated_at() -> time::OffsetDateTime {
    time::macros::datetime!(2026-02-09 14:30:00 UTC)
}

fn run_case(dir: &Path) -> Result<(), String> {
    let task_bytes = std::fs::read(dir.join("task.json")).map_err(|e| e.to_string())?;
    let expected: Value = serde_json::from_slice(
        &std::fs::read(dir.join("expected.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    if let Some(rules) = expected.get("task_violations") {
        let violations = match TaskContract::parse(&task_bytes) {
            Ok(_) => return Err("contract parsed but violations were expected".into()),
            Err(v) => v,
        };
        let got: BTreeSet<&str> = violations.iter().map(|v| v.rule.as_str()).collect();
        for rule in rules
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !got.contains(rule) {
                return Err(format!("expected violation {rule}, got {got:?}"));
            }
        }
        return Ok(());
    }
    let contract =
        TaskContract::parse(&task_bytes).map_err(|v| format!("contract invalid: {v:?}"))?;
    let source = DirArtifacts::open(dir.join("artifacts")).map_err(|e| e.to_string())?;
    let verdict = evaluate(&contract, &source, evaluated_at());

    // Same verdict, byte for byte, from the same blobs in memory and on a second run.
    let mut memory = MemoryArtifacts::new();
    for name in source.list().map_err(|e| e.to_string())? {
        let bytes = source
            .read(&name)
            .map_err(|e| e.to_string())?
            .ok_or("vanished")?;
        memory.blobs.insert(name, bytes);
    }
    let canonical = verdict.to_canonical_json();
    if evaluate(&contract, &memory, evaluated_at()).to_canonical_json() != canonical
        || evaluate(&contract, &source, evaluated_at()).to_canonical_json() != canonical
    {
        return Err("verdict is not deterministic across runs/sources".into());
    }
    // The ledger must accept what the engine produces.
    Verdict::parse(&canonical)
        .map_err(|v| format!("engine verdict fails Verdict::parse: {v:?}"))?;

    let explain = || format!("\n  verdict: {}", String::from_utf8_lossy(&canonical));
    let want_verdict = expected["verdict"].as_str().unwrap_or_default();
    let got_verdict = match verdict.verdict {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
    };
    if want_verdict != got_verdict {
        return Err(format!(
            "verdict {got_verdict}, expected {want_verdict}{}",
            explain()
        ));
    }
    let got_reason = verdict.reason_code.map(|c| c.as_str().to_owned());
    let want_reason = expected["reason_code"].as_str().map(str::to_owned);
    if got_reason != want_reason {
        return Err(format!(
            "reason_code {got_reason:?}, expected {want_reason:?}{}",
            explain()
        ));
    }
    let failed: BTreeSet<String> = verdict
        .checks
        .iter()
        .filter(|(_, ok)| !**ok)
        .map(|(k, _)| k.clone())
        .collect();
    let want_failed: BTreeSet<String> = expected["failed_checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if failed != want_failed {
        return Err(format!(
            "failed checks {failed:?}, expected {want_failed:?}{}",
            explain()
        ));
    }
    let rules: BTreeSet<&str> = verdict.findings.iter().map(|f| f.rule.as_str()).collect();
    for rule in expected["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !rules.contains(rule) {
            return Err(format!(
                "rule {rule} not among findings {rules:?}{}",
                explain()
            ));
        }
    }
    if let Some(class) = expected.get("fail_class").and_then(Value::as_str)
        && verdict.fail_class.map(|c| c.as_str()) != Some(class)
    {
        return Err(format!(
            "fail_class {:?}, expected {class}{}",
            verdict.fail_class,
            explain()
        ));
    }
    for seed in [
        "schema_valid",
        "scope_valid",
        "tests_passed",
        "evidence_present",
    ] {
        if !verdict.checks.contains_key(seed) {
            return Err(format!("seed check {seed} missing"));
        }
    }
    if verdict.verdict == Outcome::Fail && verdict.messages.is_empty() {
        return Err("FAIL without messages".into());
    }
    Ok(())
}

#[test]
fn data_driven_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/cases exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 20, "only {} cases", dirs.len());
    let mut failures = Vec::new();
    let mut codes = BTreeSet::new();
    for dir in &dirs {
        if let Ok(e) = std::fs::read(dir.join("expected.json"))
            && let Ok(v) = serde_json::from_slice::<Value>(&e)
            && let Some(c) = v["reason_code"].as_str()
        {
            codes.insert(c.to_owned());
        }
        if let Err(message) = run_case(dir) {
            failures.push(format!(
                "{}: {message}",
                dir.file_name().unwrap_or_default().to_string_lossy()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n\n")
    );
    // Every seed code and the tamper code is exercised by some case.
    for code in docket_verifier::catalogue::SEED_CATALOGUE
        .iter()
        .map(|e| e.code.as_str())
        .chain(["EVIDENCE_TAMPERED"])
    {
        assert!(codes.contains(code), "no case for {code}");
    }
}
