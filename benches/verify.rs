//! Verdict engine on a typical artifacts directory with a 2,000-line diff
//! (goal: under 1 ms), reported as a ratio to the physical baseline measured
//! in the same run: raw SHA-256 over the same artifact bytes.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use docket_benches::report_ratio;
use docket_verifier::TaskContract;
use docket_verifier::engine::{DirArtifacts, MemoryArtifacts, evaluate};
use docket_verifier::time::OffsetDateTime;
use docket_verifier::verdict::Outcome;
use sha2::Digest as _;

const TASK_ID: &str = "72c84e9c-0975-4c1a-b9a5-864c2725dc8a";
const FILES: usize = 20;
/// Diff body lines per file (context + removed + added), 20 × 100 = 2,000.
const LINES_PER_FILE: usize = 100;

fn contract() -> TaskContract {
    let json = format!(
        r#"{{"task_id":"{TASK_ID}","goal":"Refactor the parser","role":"executor",
            "pins":{{"allowed_paths":["src/","tests/**/*.rs"],"forbidden_paths":["src/secrets/"]}},
            "acceptance":{{"required_evidence":["patch.diff","selftest.log","report.md","submit.json"],
                           "required_checks":["scope_valid","tests_passed"],"required_test_commands":["cargo test"]}}}}"#
    );
    TaskContract::parse(json.as_bytes()).expect("bench contract is valid")
}

/// A typical artifacts set: 20 modified files, 2,000 diff body lines.
fn artifacts() -> MemoryArtifacts {
    let mut diff = String::new();
    let mut files = Vec::new();
    for f in 0..FILES {
        let path = format!("src/module_{f:02}.rs");
        diff.push_str(&format!("diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"));
        // One hunk: 50 context, 25 removed, 25 added.
        diff.push_str("@@ -1,75 +1,75 @@ impl Parser\n");
        for i in 0..LINES_PER_FILE {
            match i % 4 {
                0 | 1 => diff.push_str(&format!(
                    "     let value_{i} = self.next_token()?; // context line\n"
                )),
                2 => diff.push_str(&format!(
                    "-    let old_{i} = legacy_parse(&input[{i}..]);\n"
                )),
                _ => diff.push_str(&format!("+    let new_{i} = parse_fast(&input[{i}..])?;\n")),
            }
        }
        files.push(path);
    }
    let changed = files
        .iter()
        .map(|f| format!("\"{f}\""))
        .collect::<Vec<_>>()
        .join(",");
    let submit = format!(
        r#"{{"schema_version":"scc.submit.v1","task_id":"{TASK_ID}","status":"DONE","changed_files":[{changed}],"new_files":[],
            "tests":{{"commands":["cargo test"],"passed":true,"summary":"212 passed"}},
            "artifacts":{{"report_md":"report.md","selftest_log":"selftest.log","evidence_dir":"evidence/","patch_diff":"patch.diff","submit_json":"submit.json"}},
            "exit_code":0,"needs_input":[]}}"#
    );
    let mut selftest = String::from("2026-02-09T14:29:00Z cwd=/repo\n$ cargo test\n");
    for i in 0..212 {
        selftest.push_str(&format!("test parser::tests::case_{i} ... ok\n"));
    }
    selftest.push_str("test result: ok. 212 passed; 0 failed\nEXIT_CODE=0\n");
    let mut report = String::from(
        "# Report\n## Goal summary\nRefactor the parser.\n## Key decisions\n- parse_fast everywhere\n## Changed files\n",
    );
    for f in &files {
        report.push_str(&format!("- {f}\n"));
    }
    MemoryArtifacts::new()
        .with("submit.json", submit)
        .with("patch.diff", diff.clone())
        .with("evidence/patch.diff", diff)
        .with("selftest.log", selftest)
        .with("report.md", report)
}

fn evaluated_at() -> OffsetDateTime {
    OffsetDateTime::UNIX_EPOCH
}

fn mean_nanos(rounds: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..rounds / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..rounds {
        f();
    }
    start.elapsed().as_nanos() as f64 / f64::from(rounds)
}

fn bench(c: &mut Criterion) {
    let contract = contract();
    let memory = artifacts();
    let diff_lines = memory.blobs["patch.diff"]
        .iter()
        .filter(|b| **b == b'\n')
        .count();
    let total_bytes: usize = memory.blobs.values().map(Vec::len).sum();
    let verdict = evaluate(&contract, &memory, evaluated_at());
    assert_eq!(
        verdict.verdict,
        Outcome::Pass,
        "bench artifacts must PASS: {:?}",
        verdict.messages
    );

    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in &memory.blobs {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("artifact has a parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write artifact");
    }
    let on_disk = DirArtifacts::open(dir.path()).expect("artifacts dir");

    let mut group = c.benchmark_group("verify");
    group.bench_function("evaluate_memory_2000_line_diff", |b| {
        b.iter(|| evaluate(black_box(&contract), black_box(&memory), evaluated_at()))
    });
    group.bench_function("evaluate_dir_2000_line_diff", |b| {
        b.iter(|| evaluate(black_box(&contract), black_box(&on_disk), evaluated_at()))
    });
    group.bench_function("baseline_sha256_same_bytes", |b| {
        b.iter(|| {
            for bytes in memory.blobs.values() {
                black_box(sha2::Sha256::digest(black_box(bytes)));
            }
        })
    });
    group.finish();

    let rounds = 2_000;
    let engine = mean_nanos(rounds, || {
        black_box(evaluate(&contract, &memory, evaluated_at()));
    });
    let engine_dir = mean_nanos(rounds / 4, || {
        black_box(evaluate(&contract, &on_disk, evaluated_at()));
    });
    let baseline = mean_nanos(rounds, || {
        for bytes in memory.blobs.values() {
            black_box(sha2::Sha256::digest(black_box(bytes)));
        }
    });
    println!("verify: {diff_lines}-line diff, {total_bytes} artifact bytes; goal < 1 ms");
    report_ratio(
        "evaluate (memory)",
        engine / 1_000.0,
        "us",
        "raw SHA-256 of the same bytes",
        baseline / 1_000.0,
    );
    report_ratio(
        "evaluate (dir)",
        engine_dir / 1_000.0,
        "us",
        "raw SHA-256 of the same bytes",
        baseline / 1_000.0,
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
