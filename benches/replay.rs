//! Replay with full verification (signatures batched on both cores, chain,
//! Merkle root, checkpoint, snapshots), events/s against raw `verify_batch`
//! on both cores in the same run. Goal: ≥ 75% of it.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use docket_benches::{report_ratio, signed_messages, verify_batch_rate};
use docket_domain::replay::{self, ReplayOptions};

const EVENTS: u64 = 50_000;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = docket_benches::ledger_with_events(dir.path(), EVENTS);
    ledger.close().expect("close");
    let verifier = ledger.note_verifier().expect("verifier");
    let store = ledger.store().clone();

    let msgs = signed_messages(EVENTS as usize);
    let verify_rate = verify_batch_rate(&msgs, 128);
    // One warm-up pass (page cache, allocator), then the timed one.
    replay::replay(
        store.as_ref(),
        &verifier,
        ReplayOptions::default(),
        &mut |_, _| {},
    )
    .expect("warm-up replay");
    let start = Instant::now();
    let (report, _) = replay::replay(
        store.as_ref(),
        &verifier,
        ReplayOptions {
            verify: true,
            as_of: None,
        },
        &mut |_, _| {},
    )
    .expect("replay");
    assert!(report.findings.is_empty());
    let rate = EVENTS as f64 / start.elapsed().as_secs_f64();
    report_ratio(
        "replay --verify",
        rate,
        "events/s",
        "raw verify_batch both cores",
        verify_rate,
    );

    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(EVENTS));
    group.bench_function("verify_50k", |b| {
        b.iter(|| {
            replay::replay(
                store.as_ref(),
                &verifier,
                ReplayOptions {
                    verify: true,
                    as_of: None,
                },
                &mut |_, _| {},
            )
            .expect("replay")
        });
    });
    group.bench_function("fold_only_50k", |b| {
        b.iter(|| {
            replay::replay(
                store.as_ref(),
                &verifier,
                ReplayOptions::default(),
                &mut |_, _| {},
            )
            .expect("replay")
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
