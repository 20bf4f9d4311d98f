//! Durable author-signed appends/s with 1, 16 and 64 concurrent writers,
//! against raw `verify_batch` (both cores) and raw sled insert + fsync
//! measured in the same run. Goal: ≥ 25,000 appends/s with 64 writers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use docket_benches::{report_ratio, signed_messages, sled_insert_fsync_rate, verify_batch_rate};
use docket_domain::keys::{self, Role};
use docket_domain::{Ledger, Statement};

struct Fixture {
    _dir: tempfile::TempDir,
    ledger: Ledger,
    writer: ed25519_dalek::SigningKey,
    counter: std::sync::atomic::AtomicU64,
}

fn fixture() -> Arc<Fixture> {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ledger, info) = docket_domain::ledger::init(dir.path(), None).expect("init");
    let admin = keys::read_key_file(&info.admin_key_path).expect("admin key");
    let writer = keys::generate().expect("key");
    let reg = format!(
        "{{\"public_key\":\"{}\",\"roles\":[\"submitter\"]}}",
        hex_key(&writer)
    );
    ledger
        .append(Statement::sign("key.registered", reg.into_bytes(), &admin))
        .expect("register writer");
    let _ = Role::Submitter;
    Arc::new(Fixture {
        _dir: dir,
        ledger,
        writer,
        counter: Default::default(),
    })
}

fn hex_key(k: &ed25519_dalek::SigningKey) -> String {
    k.verifying_key()
        .to_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Appends `total` pre-signed statements from `writers` threads; returns the
/// wall time of the appends only (signing is the client's work).
fn run(f: &Arc<Fixture>, writers: usize, total: u64) -> Duration {
    let per = total.div_ceil(writers as u64);
    let batches: Vec<Vec<Statement>> = (0..writers)
        .map(|_| {
            (0..per)
                .map(|_| {
                    let n = f.counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Statement::sign("x-bench", format!("{{\"n\":{n}}}").into_bytes(), &f.writer)
                })
                .collect()
        })
        .collect();
    let start = Instant::now();
    std::thread::scope(|s| {
        for batch in batches {
            let ledger = f.ledger.clone();
            s.spawn(move || {
                for st in batch {
                    ledger.append(st).expect("append");
                }
            });
        }
    });
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let msgs = signed_messages(8192);
    let verify_rate = verify_batch_rate(&msgs, 64);
    let sled_rate = sled_insert_fsync_rate(20_000, 64);
    println!(
        "baseline: raw verify_batch (both cores) {verify_rate:.0} sig/s; raw sled insert+fsync (64/batch) {sled_rate:.0} inserts/s"
    );
    let f = fixture();
    let mut group = c.benchmark_group("durable_append");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(6));
    group.throughput(Throughput::Elements(1));
    for writers in [1usize, 16, 64] {
        let f2 = Arc::clone(&f);
        group.bench_function(format!("{writers}_writers"), move |b| {
            b.iter_custom(|iters| run(&f2, writers, iters.max(writers as u64)));
        });
        // A direct measurement for the ratio lines.
        let total = if writers == 1 { 1_000 } else { 20_000 };
        let d = run(&f, writers, total);
        let rate = total as f64 / d.as_secs_f64();
        report_ratio(
            &format!("append {writers} writers"),
            rate,
            "ops/s",
            "raw verify_batch",
            verify_rate,
        );
        report_ratio(
            &format!("append {writers} writers"),
            rate,
            "ops/s",
            "raw sled insert+fsync",
            sled_rate,
        );
    }
    group.finish();
    f.ledger.close().expect("close");
}

criterion_group!(benches, bench);
criterion_main!(benches);
