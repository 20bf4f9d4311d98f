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
//!    disk's floor.
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

fn report(what: &str, mut lat: Vec<Duration>) {
    lat.sort();
    let n = lat.len().max(1);
    let mean = lat.iter().sum::<Duration>() / n as u32;
    println!(
        "{what:<44} p50 {:>6.0} µs  mean {:>6.0} µs  ({} calls)",
        lat[n / 2].as_secs_f64() * 1e6,
        mean.as_secs_f64() * 1e6,
        lat.len()
    );
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

    let (floor, grpc) = rt.block_on(async {
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
        report("gRPC health Check (no ledger at all)", pure);
        let mut floor = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            client
                .get_checkpoint(pb::GetCheckpointRequest {})
                .await
                .expect("checkpoint");
            floor.push(t.elapsed());
        }
        let mut grpc = Vec::with_capacity(n);
        for st in wire {
            let t = Instant::now();
            client.append(st).await.expect("append");
            grpc.push(t.elapsed());
        }
        (floor, grpc)
    });
    report("gRPC GetCheckpoint (no disk)", floor);
    report("gRPC Append, one call at a time", grpc);

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
    let overwrite: Vec<Duration> = (0..n.min(2000))
        .map(|i| {
            let t = Instant::now();
            f.write_all_at(&[i as u8; 4096], 0).expect("write");
            f.sync_data().expect("fdatasync");
            t.elapsed()
        })
        .collect();
    report("raw pwrite 4 KiB in place + fdatasync", overwrite);
    let mut a = std::fs::OpenOptions::new()
        .append(true)
        .open(&raw)
        .expect("raw file");
    let append: Vec<Duration> = (0..n.min(2000))
        .map(|_| {
            let t = Instant::now();
            a.write_all(&[7u8; 256]).expect("write");
            a.sync_data().expect("fdatasync");
            t.elapsed()
        })
        .collect();
    report("raw append 256 B + fdatasync", append);
}
