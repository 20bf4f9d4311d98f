//! Submission-to-verdict latency with auto-verify: `Docket::submit` appends
//! the `submission.received` (one durable group commit), loads the evidence
//! blobs (digest-checked), runs the verdict engine and appends the checks and
//! the verdict (a second durable group commit), on the seeds' passing case.
//!
//! Baselines measured in the same run: raw `write 4 KiB + fdatasync` (the
//! submission path needs at least two durable writes, so the floor is about
//! 2x), one durable ledger append, and the engine alone on the same blobs.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use docket_benches::fsync_latency;
use docket_domain::Statement;
use docket_domain::domain::payloads::{guess_evidence_type, guess_media_type, submission_payload};
use docket_domain::domain::{Docket, DocketOptions};
use docket_domain::keys::{self, Role};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const TASK: &[u8] = include_bytes!("../verifier/tests/cases/pass_minimal/task.json");
const SUBMIT: &[u8] = include_bytes!("../verifier/tests/cases/pass_minimal/artifacts/submit.json");
const ARTIFACTS: [(&str, &[u8]); 4] = [
    (
        "patch.diff",
        include_bytes!("../verifier/tests/cases/pass_minimal/artifacts/patch.diff"),
    ),
    (
        "evidence/patch.diff",
        include_bytes!("../verifier/tests/cases/pass_minimal/artifacts/evidence/patch.diff"),
    ),
    (
        "selftest.log",
        include_bytes!("../verifier/tests/cases/pass_minimal/artifacts/selftest.log"),
    ),
    (
        "report.md",
        include_bytes!("../verifier/tests/cases/pass_minimal/artifacts/report.md"),
    ),
];

struct Setup {
    _dir: tempfile::TempDir,
    docket: Docket,
    submitter: ed25519_dalek::SigningKey,
    oids: Vec<String>,
    task_id: String,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let (docket, out) = Docket::init(dir.path(), None, DocketOptions::default()).expect("init");
    let admin = keys::read_key_file(&out.admin_key_path).expect("admin key");
    let submitter = keys::generate().expect("key");
    let reg = json!({"public_key": hex::encode(submitter.verifying_key().to_bytes()), "roles": [Role::Submitter]});
    docket
        .ledger()
        .append(Statement::sign(
            "key.registered",
            reg.to_string().into_bytes(),
            &admin,
        ))
        .expect("register key");
    docket
        .register_task(Statement::sign(
            "task.registered",
            TASK.to_vec(),
            &submitter,
        ))
        .expect("task");
    let task_id = serde_json::from_slice::<Value>(TASK).expect("task json")["task_id"]
        .as_str()
        .expect("task id")
        .to_string();
    let mut oids = Vec::new();
    for (name, content) in ARTIFACTS {
        let p = json!({"task_id": task_id, "evidence_type": guess_evidence_type(name),
                       "sha256": hex::encode(Sha256::digest(content)), "size": content.len(),
                       "media_type": guess_media_type(name), "name": name});
        let st = Statement::sign(
            "evidence.registered",
            p.to_string().into_bytes(),
            &submitter,
        );
        oids.push(docket.put_evidence(content, st).expect("evidence").oid);
    }
    Setup {
        _dir: dir,
        docket,
        submitter,
        oids,
        task_id,
    }
}

impl Setup {
    /// A fresh submission of the passing case (a distinct summary each time,
    /// so each is a new attempt and not an idempotent replay).
    fn statement(&self, i: u64) -> Statement {
        let mut doc: Value = serde_json::from_slice(SUBMIT).expect("submit json");
        doc["tests"]["summary"] = json!(format!("3 passed (run {i})"));
        let payload = submission_payload(&serde_json::to_vec(&doc).expect("json"), &self.oids)
            .expect("payload");
        Statement::sign("submission.received", payload, &self.submitter)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn bench(c: &mut Criterion) {
    let s = setup();
    let fsync = fsync_latency(200);
    // One durable ledger append (an extension statement).
    let mut append = Vec::new();
    for i in 0..100 {
        let st = Statement::sign(
            "x-bench",
            format!("{{\"i\":{i}}}").into_bytes(),
            &s.submitter,
        );
        let t = Instant::now();
        s.docket.ledger().append(st).expect("append");
        append.push(t.elapsed());
    }
    append.sort();
    // Submission to verdict.
    let mut lat = Vec::new();
    let mut engine = Vec::new();
    for i in 0..200u64 {
        let st = s.statement(i);
        let t = Instant::now();
        let out = s.docket.submit(st).expect("submit");
        lat.push(t.elapsed());
        let v = out.verdict.expect("auto-verify verdict");
        assert_eq!(
            v.verdict,
            docket_verifier::verdict::Outcome::Pass,
            "{:?}",
            v.messages
        );
        let t = Instant::now();
        s.docket
            .evaluate_submission(out.receipt.seq)
            .expect("evaluate");
        engine.push(t.elapsed());
    }
    lat.sort();
    engine.sort();
    let mean = lat.iter().sum::<Duration>() / u32::try_from(lat.len()).unwrap_or(1);
    println!(
        "submit->verdict (auto-verify, task {}): mean {:?}, p50 {:?}, p99 {:?}; engine alone p50 {:?}; one durable append p50 {:?}; raw fdatasync {:?}",
        s.task_id,
        mean,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        percentile(&engine, 0.5),
        percentile(&append, 0.5),
        fsync
    );
    println!(
        "RATIO submit->verdict p50 vs raw fdatasync: {:?} / {:?} = {:.2} (floor ~2: two durable commits)",
        percentile(&lat, 0.5),
        fsync,
        percentile(&lat, 0.5).as_secs_f64() / fsync.as_secs_f64()
    );
    println!(
        "RATIO submit->verdict p50 vs one durable ledger append: {:.2}",
        percentile(&lat, 0.5).as_secs_f64() / percentile(&append, 0.5).as_secs_f64()
    );

    let mut group = c.benchmark_group("submit");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    let mut i = 1_000_000u64;
    group.bench_function("submit_to_verdict", |b| {
        b.iter(|| {
            i += 1;
            s.docket.submit(s.statement(i)).expect("submit")
        });
    });
    group.bench_function("engine_only", |b| {
        let seq = s.docket.ledger().len() - 1 - 14;
        let seq = (0..=seq)
            .rev()
            .find(|q| {
                s.docket
                    .ledger()
                    .event(*q)
                    .map(|e| e.kind == "submission.received")
                    .unwrap_or(false)
            })
            .expect("a submission");
        b.iter(|| s.docket.evaluate_submission(seq).expect("evaluate"));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
