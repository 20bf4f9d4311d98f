//! The retention sweep's decision pass over 1,000,000 OIDs
//! (`retention::rules::plan`: one pass over the OID registry deciding
//! expiry, pins and the count limit). Goal: under 10 s.
//!
//! The state is built in memory, not from 1M signed events: the OID
//! registry's records are inserted directly (the fold of `evidence.registered`
//! is measured by the projection bench), and the 10,000 tasks and their
//! submissions (which the count limit reads) are folded from unsigned
//! events. Mix: 70% routine, 20% high_impact, 5% pinned by class, 1% pinned
//! by event; registrations spread over 400 days; `now` at day 200; each task
//! has 3 submissions of 5 OIDs and the policy keeps the last 2.
//!
//! Baseline measured in the same run: iterating the same `BTreeMap` of 1M
//! records and reading the fields the rules read (the least a pass can do).
//! The retention summary (`retention::status`, same pass plus top-k
//! upcoming) is reported too.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use docket_benches::report_ratio;
use docket_domain::LedgerState;
use docket_domain::domain::projections::Hex32;
use docket_domain::domain::{OidRecord, OidState, oid};
use docket_domain::event::{EVENT_FORMAT, Event};
use docket_domain::retention::state::{PinInfo, PolicyRecord};
use docket_domain::retention::{Policy, rules, status};
use serde_json::json;

const OIDS: u64 = 1_000_000;
const TASKS: u64 = 10_000;
const DAY: u64 = 86_400_000;
const T0: u64 = 1_770_000_000_000;

fn task_id(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

fn event(seq: u64, at: u64, kind: &str, payload: &serde_json::Value) -> Event {
    Event {
        format: EVENT_FORMAT,
        seq,
        recorded_at_ms: at,
        prev_hash: [0; 32],
        kind: kind.to_string(),
        author: [9; 32],
        payload: serde_json::to_vec(payload).expect("json"),
        signature: [0; 64],
    }
}

/// Builds the state: 1M OID records, 10k tasks with 3 submissions each.
fn build() -> LedgerState {
    let mut state = LedgerState::default();
    let mut oids_of: Vec<Vec<String>> = vec![Vec::new(); TASKS as usize];
    let mut seq = 0u64;
    for i in 0..OIDS {
        let t = i % TASKS;
        // Spread over 400 days, in time order (OIDs are time-ordered ULIDs).
        let at = T0 + i * (400 * DAY / OIDS);
        let mut digest = [0u8; 32];
        digest[..8].copy_from_slice(&i.to_be_bytes());
        let o = oid::mint(at, &digest);
        let class = match i % 100 {
            0..=69 => "routine",
            70..=89 => "high_impact",
            90..=94 => "pinned",
            _ => "routine",
        };
        let explicit_pin = i % 100 == 99;
        if explicit_pin {
            state.retention.pins.insert(
                o.clone(),
                PinInfo {
                    seq: i,
                    at_ms: at,
                    by: "bench".into(),
                    reason: None,
                },
            );
        }
        state.domain.oids.oids.insert(
            o.clone(),
            OidRecord {
                sha256: hex::encode(digest),
                size: 1000 + i % 5000,
                evidence_type: "selftest.log".into(),
                media_type: "text/plain".into(),
                task_id: task_id(t),
                retention_class: class.into(),
                name: None,
                artifact_name: format!("evidence/{o}"),
                registered_seq: i,
                registered_at_ms: at,
                registered_by: Hex32([9; 32]),
                state: OidState::Live,
                pinned: class == "pinned" || explicit_pin,
                removal: None,
            },
        );
        if oids_of[t as usize].len() < 15 {
            oids_of[t as usize].push(o);
        }
        seq = i;
    }
    // Tasks and submissions, folded from unsigned events.
    for t in 0..TASKS {
        seq += 1;
        let id = task_id(t);
        state
            .apply(&event(
                seq,
                T0,
                "task.registered",
                &json!({"task_id": id, "goal": "g", "role": "executor",
                        "pins": {"allowed_paths": ["src/"], "forbidden_paths": []},
                        "retention_class": "routine"}),
            ))
            .expect("task folds");
        for s in 0..3usize {
            seq += 1;
            let oids = &oids_of[t as usize][s * 5..s * 5 + 5];
            state
                .apply(&event(
                    seq,
                    T0 + 1,
                    "submission.received",
                    &json!({"schema_version": "scc.submit.v1", "task_id": id, "status": "DONE",
                            "changed_files": [], "new_files": [],
                            "tests": {"commands": ["cargo test"], "passed": true, "summary": "ok"},
                            "artifacts": {"report_md": "report.md", "selftest_log": "selftest.log",
                                          "evidence_dir": "evidence/", "patch_diff": "patch.diff",
                                          "submit_json": "submit.json"},
                            "exit_code": 0, "needs_input": [], "evidence_oids": oids}),
                ))
                .expect("submission folds");
        }
    }
    state.retention.policy = Some(PolicyRecord {
        seq: 0,
        at_ms: T0,
        by: "bench".into(),
        policy: Policy {
            routine_days: 30,
            high_impact_days: 90,
            keep_last_submissions: 2,
            allow_future_sweeps: false,
        },
    });
    state
}

/// The baseline: one pass over the same map reading what the rules read.
fn baseline(map: &BTreeMap<String, OidRecord>, now: u64) -> u64 {
    let mut n = 0u64;
    for (k, r) in map {
        if r.state == OidState::Live
            && !r.pinned
            && r.registered_at_ms < now
            && !r.retention_class.is_empty()
            && !k.is_empty()
        {
            n += 1;
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let start = Instant::now();
    let state = build();
    println!(
        "sweep state: {} OIDs, {} tasks, built in {:.1} s",
        state.domain.oids.oids.len(),
        state.domain.verdicts.tasks.len(),
        start.elapsed().as_secs_f64()
    );
    let now = T0 + 200 * DAY;
    let plan = rules::plan(&state, now);
    println!(
        "plan at day 200: {} expire, {} kept pinned, {} kept by the count limit, {} within their class",
        plan.expire.len(),
        plan.kept_pinned,
        plan.kept_count_limit,
        plan.kept_within_class
    );
    assert_eq!(plan.examined, OIDS);
    // Best of three interleaved rounds (the machine is shared).
    let (mut plan_s, mut base_s, mut status_s) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..3 {
        let t = Instant::now();
        black_box(baseline(&state.domain.oids.oids, now));
        base_s = base_s.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        black_box(rules::plan(&state, now));
        plan_s = plan_s.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        black_box(status::status(&state, now, 20));
        status_s = status_s.min(t.elapsed().as_secs_f64());
    }
    println!(
        "sweep decision pass over {OIDS} OIDs: {plan_s:.3} s (goal < 10 s); summary: {status_s:.3} s; baseline map pass: {base_s:.3} s"
    );
    let n = OIDS as f64;
    report_ratio(
        "sweep decision pass",
        n / plan_s,
        "OIDs/s",
        "raw BTreeMap pass",
        n / base_s,
    );
    report_ratio(
        "retention summary pass",
        n / status_s,
        "OIDs/s",
        "raw BTreeMap pass",
        n / base_s,
    );
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("plan_1m_oids", |b| {
        b.iter(|| black_box(rules::plan(&state, now)))
    });
    group.bench_function("baseline_btreemap_1m", |b| {
        b.iter(|| black_box(baseline(&state.domain.oids.oids, now)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
