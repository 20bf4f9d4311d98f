//! Physical baselines measured in the same run as each bench, so every
//! figure is reported as a ratio to what the machine itself can do: raw
//! `verify_batch` on all cores, raw sled insert + fsync, raw fsync.

use std::io::Write as _;
use std::time::{Duration, Instant};

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use rayon::prelude::*;

/// A new embedded ledger in `dir` holding `events` events: its genesis,
/// then `x-bench` notes signed by its first admin, submitted 2,048 at a
/// time (pipelined group commits). Left open.
pub fn ledger_with_events(dir: &std::path::Path, events: u64) -> docket_domain::Ledger {
    let (ledger, info) = docket_domain::ledger::init(dir, None).expect("init");
    let admin = docket_domain::keys::read_key_file(&info.admin_key_path).expect("admin key");
    let mut pending = Vec::new();
    for i in 1..events {
        let st = docket_domain::Statement::sign(
            "x-bench",
            format!("{{\"n\":{i}}}").into_bytes(),
            &admin,
        );
        pending.push(ledger.submit(vec![st]).expect("submit"));
        if pending.len() >= 2048 {
            for rx in pending.drain(..) {
                rx.recv().expect("reply");
            }
        }
    }
    for rx in pending.drain(..) {
        rx.recv().expect("reply");
    }
    ledger
}

/// Signed messages for baselines: `(message, signature, key)`.
pub fn signed_messages(n: usize) -> Vec<(Vec<u8>, Signature, VerifyingKey)> {
    let key = SigningKey::from_bytes(&[42; 32]);
    (0..n)
        .map(|i| {
            let m = format!("docket/v1/x-bench\0message {i:08}").into_bytes();
            let s = key.sign(&m);
            (m, s, key.verifying_key())
        })
        .collect()
}

/// Signatures per second that raw `verify_batch` sustains on all cores
/// (chunks of `chunk`, one rayon task each).
pub fn verify_batch_rate(msgs: &[(Vec<u8>, Signature, VerifyingKey)], chunk: usize) -> f64 {
    let start = Instant::now();
    msgs.par_chunks(chunk).for_each(|c| {
        let m: Vec<&[u8]> = c.iter().map(|x| x.0.as_slice()).collect();
        let s: Vec<Signature> = c.iter().map(|x| x.1).collect();
        let k: Vec<VerifyingKey> = c.iter().map(|x| x.2).collect();
        assert!(ed25519_dalek::verify_batch(&m, &s, &k).is_ok());
    });
    msgs.len() as f64 / start.elapsed().as_secs_f64()
}

/// Inserts per second into a raw sled tree with one `flush` + `fsync` per
/// batch of `batch` inserts (the physical floor of a durable sled append).
pub fn sled_insert_fsync_rate(total: usize, batch: usize) -> f64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = sled::Config::new()
        .path(dir.path())
        .flush_every_ms(None)
        .open()
        .expect("sled opens");
    let file = std::fs::File::open(dir.path().join("db")).expect("sled db file");
    let value = vec![7u8; 200];
    let start = Instant::now();
    let mut i = 0u64;
    while (i as usize) < total {
        let mut b = sled::Batch::default();
        for _ in 0..batch {
            b.insert(&i.to_be_bytes(), value.as_slice());
            i += 1;
        }
        db.apply_batch(b).expect("insert");
        db.flush().expect("flush");
        file.sync_all().expect("fsync");
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// Mean latency of `write 4 KiB + fdatasync` on this disk.
pub fn fsync_latency(rounds: usize) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut f = std::fs::File::create(dir.path().join("f")).expect("file");
    let buf = vec![1u8; 4096];
    let start = Instant::now();
    for _ in 0..rounds {
        f.write_all(&buf).expect("write");
        f.sync_data().expect("fdatasync");
    }
    start.elapsed() / u32::try_from(rounds).unwrap_or(1)
}

/// Prints one result line with its ratio to a baseline.
pub fn report_ratio(what: &str, value: f64, unit: &str, baseline: &str, baseline_value: f64) {
    println!(
        "RATIO {what}: {value:.0} {unit} vs {baseline}: {baseline_value:.0} {unit} = {:.2}",
        value / baseline_value
    );
}

/// A `docket serve` in this process (on `rt`, 127.0.0.1, a free port) over a
/// fresh ledger under `dir`, and a writer key registered through it under
/// `writer`, for benches that send appends.
pub fn serve_with_writer(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    writer: &str,
) -> (docket_cli::server::RunningServer, SigningKey) {
    use docket_cli::server::{ServeOptions, spawn};
    let listen = "127.0.0.1:0".parse().expect("addr");
    let server = rt
        .block_on(spawn(ServeOptions::new(dir.join("ledger"), listen)))
        .expect("server");
    let admin = docket_domain::keys::read_key_file(
        &server.init.as_ref().expect("new ledger").admin_key_path,
    )
    .expect("admin key");
    let key = rt
        .block_on(docket_cli::server::bench_load::register_writer(
            &server.url(),
            &admin,
            writer,
        ))
        .expect("writer");
    (server, key)
}
