//! Where one client's append latency goes: one connection, one call at a
//! time, against a server in this process on loopback.
//!
//! 1. `grpc.health.v1.Health/Check` round trips: the floor of any unary call
//!    (HTTP/2 on loopback, tonic, the runtime's wake-ups); then
//!    `Ledger.GetCheckpoint` (a read on the blocking pool), no disk.
//! 2. `Ledger.Append` round trips (statements signed before the clock).
//! 3. `Ledger::append` in this process from one thread: the log's own path
//!    (verify, sequence, checkpoint signature, commit and anchor fdatasyncs,
//!    publish), no network.
//! 4. A raw `fdatasync` of a 4 KiB overwrite and of a 256-byte append, the
//!    disk's floor; and the overwrite again after a 300 µs pause, as one
//!    client's appends see the disk (a virtual disk answers an fdatasync
//!    after a pause in about twice the time it takes back to back, and
//!    PostgreSQL's commits pay the same).
//! 5. One signature check and one checkpoint signature.
//!
//! Then the floor of one client's unary append on this machine, physical
//! parts only: an empty gRPC round trip, one fdatasync after a pause, one
//! signature check and one checkpoint signature, and the measured
//! append's p50 against it.
//!
//! `cargo run --release -p docket-benches --example one_client [N]` (N calls
//! each, default 3000). Prints p50 and mean of each.

use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::time::{Duration, Instant};

use docket_cli::server::convert;
use docket_domain::Statement;
use docket_proto::v1 as pb;
use docket_proto::v1::ledger_client::LedgerClient;

/// Times `op(i)` for `i` in `0..count`, each after a `pause` (not timed).
fn timed(count: usize, pause: Duration, mut op: impl FnMut(usize)) -> Vec<Duration> {
    (0..count)
        .map(|i| {
            if !pause.is_zero() {
                std::thread::sleep(pause);
            }
            let t = Instant::now();
            op(i);
            t.elapsed()
        })
        .collect()
}

/// Prints p50 and mean of `lat`; returns the p50.
fn report(what: &str, mut lat: Vec<Duration>) -> Duration {
    lat.sort();
    let n = lat.len().max(1);
    let mean = lat.iter().sum::<Duration>() / n as u32;
    println!(
        "{what:<44} p50 {:>6.0} µs  mean {:>6.0} µs  ({} calls)",
        lat[n / 2].as_secs_f64() * 1e6,
        mean.as_secs_f64() * 1e6,
        lat.len()
    );
    lat[n / 2]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3000)
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, writer) = docket_benches::serve_with_writer(&rt, dir.path(), "one-client");
    let url = server.url();
    let sign = |tag: &str, i: usize| {
        let payload = format!("{{\"run\":\"{tag}\",\"n\":{i}}}").into_bytes();
        Statement::sign("x-bench", payload, &writer)
    };
    let wire: Vec<pb::SignedStatement> = (0..n)
        .map(|i| convert::statement_to_proto(&sign("grpc", i)))
        .collect();
    let local: Vec<Statement> = (0..n).map(|i| sign("local", i)).collect();

    let (rtt, checkpoint_calls, grpc) = rt.block_on(async {
        let ch = docket_cli::client::channel(&url).await.expect("connect");
        let mut health = tonic_health::pb::health_client::HealthClient::new(ch.clone());
        let mut client = LedgerClient::new(ch);
        let mut pure = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            health
                .check(tonic_health::pb::HealthCheckRequest::default())
                .await
                .expect("health");
            pure.push(t.elapsed());
        }
        let rtt = report("gRPC health Check (no ledger at all)", pure);
        let mut checkpoint_calls = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            client
                .get_checkpoint(pb::GetCheckpointRequest {})
                .await
                .expect("checkpoint");
            checkpoint_calls.push(t.elapsed());
        }
        let mut grpc = Vec::with_capacity(n);
        for st in wire {
            let t = Instant::now();
            client.append(st).await.expect("append");
            grpc.push(t.elapsed());
        }
        (rtt, checkpoint_calls, grpc)
    });
    report("gRPC GetCheckpoint (no disk)", checkpoint_calls);
    let append_p50 = report("gRPC Append, one call at a time", grpc);

    let ledger = server.ledger().clone();
    let in_process: Vec<Duration> = std::thread::spawn(move || {
        local
            .into_iter()
            .map(|st| {
                let t = Instant::now();
                ledger.append(st).expect("append");
                t.elapsed()
            })
            .collect()
    })
    .join()
    .expect("writer thread");
    report("in-process Ledger::append, one thread", in_process);

    let raw = dir.path().join("raw");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(true)
        .open(&raw)
        .expect("raw file");
    f.write_all_at(&[0u8; 4096], 0).expect("write");
    f.sync_all().expect("sync");
    let raw_n = n.min(2000);
    let mut overwrite = |i: usize| {
        f.write_all_at(&[i as u8; 4096], 0).expect("write");
        f.sync_data().expect("fdatasync");
    };
    report(
        "raw pwrite 4 KiB in place + fdatasync",
        timed(raw_n, Duration::ZERO, &mut overwrite),
    );
    let fsync_p50 = report(
        "the same after a 300 µs pause",
        timed(raw_n, Duration::from_micros(300), &mut overwrite),
    );
    let mut a = std::fs::OpenOptions::new()
        .append(true)
        .open(&raw)
        .expect("raw file");
    let append = timed(raw_n, Duration::ZERO, |_| {
        a.write_all(&[7u8; 256]).expect("write");
        a.sync_data().expect("fdatasync");
    });
    report("raw append 256 B + fdatasync", append);

    let st = sign("floor", 0);
    let checks = timed(raw_n, Duration::ZERO, |_| {
        let ok = docket_log::event::verify_statements(&[&st]);
        assert!(ok[0].is_ok(), "a good signature");
    });
    let verify_p50 = report("one signature check (the write path's rule)", checks);
    let body = format!("one-client\n1\n{}\n", "A".repeat(44));
    let signs = timed(raw_n, Duration::ZERO, |_| {
        std::hint::black_box(docket_log::checkpoint::sign_note(
            &body,
            "one-client",
            &writer,
        ));
    });
    let sign_p50 = report("one checkpoint signature", signs);
    let floor = rtt + fsync_p50 + verify_p50 + sign_p50;
    println!(
        "FLOOR one unary client: round trip {:.0} + fdatasync after a pause {:.0} + signature check {:.0} + checkpoint signature {:.0} = {:.0} µs ({:.0} appends/s); gRPC Append p50 {:.0} µs is {:.2}x the floor",
        rtt.as_secs_f64() * 1e6,
        fsync_p50.as_secs_f64() * 1e6,
        verify_p50.as_secs_f64() * 1e6,
        sign_p50.as_secs_f64() * 1e6,
        floor.as_secs_f64() * 1e6,
        1.0 / floor.as_secs_f64(),
        append_p50.as_secs_f64() * 1e6,
        append_p50.as_secs_f64() / floor.as_secs_f64(),
    );
}
