//! Offline bundle audit throughput (`docket_domain::export::audit`) against
//! its physical limit measured in the same run: raw `ed25519_dalek::
//! verify_batch` over the same signatures on all cores, with the signing
//! messages precomputed.
//!
//! The audit does everything `docket audit` does on a whole-log bundle read
//! from disk: manifest digests, framing and canonical decoding, batched
//! signatures, chain and time, inclusion proofs and the recomputed root,
//! full re-admission from genesis, and the rebuilt summary.
//!
//! Goal: >= 60,000 events/s and >= 90% of the raw `verify_batch` rate on
//! all cores (issue 14; it was 75% before).
//! `DOCKET_BENCH_AUDIT_EVENTS` sets the bundle size (default 200,000).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use docket_domain::Statement;
use docket_domain::event::Event;
use docket_domain::export::{self, AuditOptions, ExportOptions, LogSource, MemoryLog};
use docket_domain::keys::Role;
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use rayon::prelude::*;

const T0: u64 = 1_700_000_000_000;

fn build_log(n: u64) -> MemoryLog {
    let admin = SigningKey::from_bytes(&[2; 32]);
    let mut log = MemoryLog::genesis(
        "bench.docket/audit",
        SigningKey::from_bytes(&[1; 32]),
        &admin,
        T0,
    )
    .unwrap();
    let authors: Vec<SigningKey> = (0..3u8)
        .map(|i| SigningKey::from_bytes(&[10 + i; 32]))
        .collect();
    for a in &authors {
        log.register(&admin, a, &[Role::Submitter], T0 + 1).unwrap();
    }
    let stmts: Vec<Statement> = (0..n)
        .into_par_iter()
        .map(|i| {
            let payload = format!(
                "{{\"note\":{i},\"text\":\"an x-note payload of about a hundred bytes, like a small check record\"}}"
            );
            Statement::sign("x-note", payload.into_bytes(), &authors[(i % 3) as usize])
        })
        .collect();
    for (i, st) in stmts.into_iter().enumerate() {
        log.append(st, T0 + 10 + i as u64).unwrap();
        if i % 1024 == 1023 {
            log.commit();
        }
    }
    log.commit();
    log
}

/// Raw `verify_batch` over chunks of 128 on all cores (the ledger's chunk
/// size), messages precomputed: the physical limit of signature checking.
fn raw_verify(msgs: &[Vec<u8>], sigs: &[Signature], keys: &[VerifyingKey]) -> Duration {
    let start = Instant::now();
    let ok = msgs
        .par_chunks(128)
        .zip(sigs.par_chunks(128))
        .zip(keys.par_chunks(128))
        .all(|((m, s), k)| {
            let refs: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
            ed25519_dalek::verify_batch(&refs, s, k).is_ok()
        });
    assert!(ok);
    start.elapsed()
}

fn best(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

fn benches(c: &mut Criterion) {
    let n: u64 = std::env::var("DOCKET_BENCH_AUDIT_EVENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let t = Instant::now();
    let log = build_log(n);
    let total = log.len();
    println!(
        "[audit] built a {total}-event log in {:?} ({} cores)",
        t.elapsed(),
        rayon::current_num_threads()
    );

    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    let t = Instant::now();
    let report = export::export(&log, &ExportOptions::default(), &bundle, false).unwrap();
    let export_time = t.elapsed();
    println!(
        "[audit] export: {} events, {} bytes in {export_time:?} ({:.0} events/s)",
        report.events,
        report.bytes,
        report.events as f64 / export_time.as_secs_f64()
    );

    // Physical limit, same run.
    let events: Vec<Event> = (0..total)
        .map(|s| Event::decode(log.event_bytes(s).unwrap()).unwrap())
        .collect();
    let msgs: Vec<Vec<u8>> = events.iter().map(Event::signing_message).collect();
    let sigs: Vec<Signature> = events
        .iter()
        .map(|e| Signature::from_bytes(&e.signature))
        .collect();
    let keys: Vec<VerifyingKey> = events
        .iter()
        .map(|e| VerifyingKey::from_bytes(&e.author).unwrap())
        .collect();
    let raw = best(3, || raw_verify(&msgs, &sigs, &keys));
    let raw_rate = total as f64 / raw.as_secs_f64();

    let options = AuditOptions {
        trusted_key: Some(log.note_verifier().unwrap()),
        allow_external_ref: false,
    };
    let audit_time = best(3, || {
        let t = Instant::now();
        let r = export::audit(&bundle, &options, &mut |_, _, _| {});
        let d = t.elapsed();
        assert_eq!(r.exit_code(), 0, "{:?}", r.findings);
        assert_eq!(r.events, total);
        d
    });
    let audit_rate = total as f64 / audit_time.as_secs_f64();
    let ratio = audit_rate / raw_rate;
    println!(
        "[audit] {total} events: audit {audit_time:?} = {audit_rate:.0} events/s; raw verify_batch on all cores {raw:?} = {raw_rate:.0} events/s; \
         ratio {ratio:.2} (goal >= 0.9 and >= 60000 events/s: {})",
        if ratio >= 0.9 && audit_rate >= 60_000.0 {
            "met"
        } else {
            "NOT met"
        }
    );

    // Criterion samples on a smaller bundle.
    let small = build_log(20_000);
    let small_dir = dir.path().join("small");
    export::export(&small, &ExportOptions::default(), &small_dir, false).unwrap();
    let small_opts = AuditOptions {
        trusted_key: Some(small.note_verifier().unwrap()),
        allow_external_ref: false,
    };
    let mut g = c.benchmark_group("audit_20k");
    g.throughput(criterion::Throughput::Elements(small.len()));
    g.bench_function("audit", |b| {
        b.iter(|| black_box(export::audit(&small_dir, &small_opts, &mut |_, _, _| {})));
    });
    g.finish();
}

criterion_group! {
    name = audit;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(audit);
