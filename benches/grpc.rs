//! Durable appends over gRPC on loopback (unary `Ledger.Append` from 64
//! connections, and `Ledger.AppendStream` with a window of statements in
//! flight), with latency percentiles, against in-process `Ledger::append`
//! from 64 threads measured in the same run; then p99 latency at half of the
//! unary peak (open loop). Goals: ≥ 15,000 durable appends/s over loopback,
//! p99 < 20 ms at half of peak load. And the write-path goals as ratios to
//! raw `verify_batch` on all cores, measured in the same run: 64 unary
//! clients ≥ 0.14 of it, `AppendStream` from 64 clients with 8 in flight
//! each ≥ 0.23 with p99 < 50 ms, 64 in-process writers ≥ 0.28 (15k, 25k and
//! 30k/s on a machine of 108k signatures/s).
//!
//! The 64 unary clients run twice: on the tonic client, and on the lean
//! client of `docket bench-load --raw-h2` (requests built on the h2 crate),
//! which leaves more of the shared cores to the server, as pgbench does.
//!
//! Statements are signed before the clock starts (signing is the client's
//! work, not the server's). The server runs on a runtime of its own, built
//! as `docket serve` builds its runtime, and the clients on another, as
//! with a server in its own process; both share the machine's cores.
//! `DOCKET_BENCH_GRPC_SHARED_RUNTIME=1` puts them on one runtime instead
//! (this bench's setup before 2026-11-28). `DOCKET_BENCH_GRPC_SECS` sets
//! the seconds per measured run (default 5).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use docket_benches::{report_ratio, signed_messages, verify_batch_rate};
use docket_cli::server::convert;
use docket_cli::server::raw_h2::RawAppender;
use docket_domain::Statement;
use docket_proto::v1 as pb;
use docket_proto::v1::ledger_client::LedgerClient;
use ed25519_dalek::SigningKey;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

const CLIENTS: usize = 64;
const STREAMS: usize = 8;
const WINDOW: usize = 256;

fn secs() -> f64 {
    std::env::var("DOCKET_BENCH_GRPC_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0)
}

/// Nearest-rank percentile of sorted microseconds.
fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1000.0
}

struct Run {
    appends: u64,
    seconds: f64,
    lat_us: Vec<u64>,
}

impl Run {
    /// The run begun at `start` whose clients are `tasks`, each giving its
    /// calls' latencies in microseconds.
    async fn of_clients(start: Instant, tasks: Vec<tokio::task::JoinHandle<Vec<u64>>>) -> Self {
        let mut lat_us = Vec::new();
        for t in tasks {
            lat_us.extend(t.await.expect("client"));
        }
        Run {
            appends: lat_us.len() as u64,
            seconds: start.elapsed().as_secs_f64(),
            lat_us,
        }
    }

    fn rate(&self) -> f64 {
        self.appends as f64 / self.seconds
    }

    fn print(&mut self, what: &str) {
        self.lat_us.sort_unstable();
        println!(
            "{what}: {:.0} appends/s ({} in {:.2}s); latency p50 {:.2} ms, p99 {:.2} ms, p999 {:.2} ms",
            self.rate(),
            self.appends,
            self.seconds,
            pct(&self.lat_us, 0.50),
            pct(&self.lat_us, 0.99),
            pct(&self.lat_us, 0.999),
        );
    }
}

/// `n` statements per client, signed now, all distinct.
fn presign(key: &SigningKey, tag: &str, clients: usize, n: usize) -> Vec<Vec<pb::SignedStatement>> {
    (0..clients)
        .map(|c| {
            (0..n)
                .map(|i| {
                    let payload = format!("{{\"run\":\"{tag}\",\"c\":{c},\"n\":{i}}}").into_bytes();
                    convert::statement_to_proto(&Statement::sign("x-bench", payload, key))
                })
                .collect()
        })
        .collect()
}

/// Unary appends from `clients` connections for `dur` (each client one call
/// at a time), optionally paced to `per_client_rate` calls/s (open loop).
async fn unary(
    channels: &[Channel],
    statements: Vec<Vec<pb::SignedStatement>>,
    dur: Duration,
    per_client_rate: Option<f64>,
) -> Run {
    let start = Instant::now();
    let deadline = start + dur;
    let mut tasks = Vec::new();
    for (ch, stmts) in channels.iter().zip(statements) {
        let mut client = LedgerClient::new(ch.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(stmts.len());
            let interval = per_client_rate.map(|r| Duration::from_secs_f64(1.0 / r));
            let mut next = Instant::now();
            for st in stmts {
                if Instant::now() >= deadline {
                    break;
                }
                if let Some(iv) = interval {
                    tokio::time::sleep_until(next.into()).await;
                    next += iv;
                }
                let t = Instant::now();
                client.append(st).await.expect("append");
                lat.push(t.elapsed().as_micros() as u64);
            }
            lat
        }));
    }
    Run::of_clients(start, tasks).await
}

/// Unary appends from `clients` connections of the lean client
/// (`docket bench-load --raw-h2`: requests built on the h2 crate, bodies
/// encoded before the clock starts), each client one call at a time.
async fn unary_raw_h2(url: &str, statements: Vec<Vec<pb::SignedStatement>>, dur: Duration) -> Run {
    let mut clients = Vec::new();
    for stmts in statements {
        let bodies: Vec<_> = stmts.iter().map(RawAppender::encode).collect();
        clients.push((RawAppender::connect(url).await.expect("connect"), bodies));
    }
    let start = Instant::now();
    let deadline = start + dur;
    let mut tasks = Vec::new();
    for (mut client, bodies) in clients {
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(bodies.len());
            for body in bodies {
                if Instant::now() >= deadline {
                    break;
                }
                let t = Instant::now();
                client.append(body).await.expect("append");
                lat.push(t.elapsed().as_micros() as u64);
            }
            lat
        }));
    }
    Run::of_clients(start, tasks).await
}

/// `AppendStream` from `channels.len()` connections, `window` in flight each.
async fn streaming(
    channels: &[Channel],
    statements: Vec<Vec<pb::SignedStatement>>,
    dur: Duration,
    window: usize,
) -> Run {
    let start = Instant::now();
    let deadline = start + dur;
    let mut tasks = Vec::new();
    for (ch, stmts) in channels.iter().zip(statements) {
        let mut client = LedgerClient::new(ch.clone());
        tasks.push(tokio::spawn(async move {
            let (tx, rx) = mpsc::channel::<pb::SignedStatement>(window);
            let (sent_tx, mut sent_rx) = mpsc::unbounded_channel::<Instant>();
            let window = Arc::new(tokio::sync::Semaphore::new(window));
            let w = Arc::clone(&window);
            let producer = tokio::spawn(async move {
                for st in stmts {
                    if Instant::now() >= deadline {
                        break;
                    }
                    let Ok(p) = w.acquire().await else { break };
                    p.forget();
                    let _ = sent_tx.send(Instant::now());
                    if tx.send(st).await.is_err() {
                        break;
                    }
                }
            });
            let mut receipts = client
                .append_stream(ReceiverStream::new(rx))
                .await
                .expect("append stream")
                .into_inner();
            let mut lat = Vec::new();
            while let Some(_r) = receipts.message().await.expect("receipt") {
                window.add_permits(1);
                if let Some(t) = sent_rx.recv().await {
                    lat.push(t.elapsed().as_micros() as u64);
                }
            }
            let _ = producer.await;
            lat
        }));
    }
    Run::of_clients(start, tasks).await
}

/// In-process `Ledger::append` from `CLIENTS` threads (pre-signed).
fn in_process(ledger: &docket_domain::Ledger, key: &SigningKey, dur: Duration) -> Run {
    let per = 40_000 / CLIENTS;
    let batches: Vec<Vec<Statement>> = (0..CLIENTS)
        .map(|c| {
            (0..per)
                .map(|i| {
                    let payload = format!("{{\"run\":\"local\",\"c\":{c},\"n\":{i}}}").into_bytes();
                    Statement::sign("x-bench", payload, key)
                })
                .collect()
        })
        .collect();
    let start = Instant::now();
    let deadline = start + dur;
    let lat_us: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .into_iter()
            .map(|batch| {
                let ledger = ledger.clone();
                s.spawn(move || {
                    let mut lat = Vec::new();
                    for st in batch {
                        if Instant::now() >= deadline {
                            break;
                        }
                        let t = Instant::now();
                        ledger.append(st).expect("append");
                        lat.push(t.elapsed().as_micros() as u64);
                    }
                    lat
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("writer"))
            .collect()
    });
    Run {
        appends: lat_us.len() as u64,
        seconds: start.elapsed().as_secs_f64(),
        lat_us,
    }
}

/// Whether the server shares the clients' runtime
/// (`DOCKET_BENCH_GRPC_SHARED_RUNTIME=1`, as before 2026-11-28) instead of
/// running on its own, as `docket serve` does in a process of its own.
fn shared_runtime() -> bool {
    std::env::var_os("DOCKET_BENCH_GRPC_SHARED_RUNTIME").is_some_and(|v| v == "1")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("bench-client")
        .max_blocking_threads(2048)
        .build()
        .expect("runtime");
    // The server's own runtime, the one `docket serve` runs on: its tasks
    // do not queue behind the load generator's on the same workers (nor
    // the clients' behind the server's), as with a server in its own
    // process, which is how `scripts/bench-vs-postgres.sh` runs it.
    let own =
        (!shared_runtime()).then(|| docket_cli::server::server_runtime().expect("server runtime"));
    let server_rt = own.as_ref().unwrap_or(&rt);
    println!(
        "server runtime: {}",
        if own.is_some() {
            "its own (as `docket serve`)"
        } else {
            "shared with the clients"
        }
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, writer) = docket_benches::serve_with_writer(server_rt, dir.path(), "bench");
    let url = server.url();
    let dur = Duration::from_secs_f64(secs());
    // Generous: enough statements that no client runs out before the clock.
    let budget =
        |rate_guess: f64, clients: usize| ((rate_guess * secs()) as usize / clients).max(100);

    let mut local = in_process(server.ledger(), &writer, dur);
    local.print("in-process Ledger::append, 64 threads");

    let channels: Vec<Channel> = rt.block_on(async {
        let mut v = Vec::new();
        for _ in 0..CLIENTS {
            v.push(docket_cli::client::channel(&url).await.expect("connect"));
        }
        v
    });
    let stmts = presign(&writer, "unary", CLIENTS, budget(60_000.0, CLIENTS));
    let mut u = rt.block_on(unary(&channels, stmts, dur, None));
    u.print("gRPC unary Append, 64 connections, 1 call each");
    let stmts = presign(&writer, "unary-h2", CLIENTS, budget(60_000.0, CLIENTS));
    let mut lean = rt.block_on(unary_raw_h2(&url, stmts, dur));
    lean.print("gRPC unary Append, 64 connections of the lean h2 client, 1 call each");

    // The same connections with 4 calls in flight each (256 concurrent
    // calls): bigger group commits.
    let wide: Vec<Channel> = channels.iter().cycle().take(CLIENTS * 4).cloned().collect();
    let stmts = presign(
        &writer,
        "unary4",
        CLIENTS * 4,
        budget(60_000.0, CLIENTS * 4),
    );
    let mut u4 = rt.block_on(unary(&wide, stmts, dur, None));
    u4.print("gRPC unary Append, 64 connections, 4 calls each");

    let stmts = presign(&writer, "stream", STREAMS, budget(120_000.0, STREAMS));
    let mut s = rt.block_on(streaming(&channels[..STREAMS], stmts, dur, WINDOW));
    s.print(&format!(
        "gRPC AppendStream, {STREAMS} streams x {WINDOW} in flight"
    ));

    let stmts = presign(&writer, "stream32", STREAMS, budget(120_000.0, STREAMS));
    let mut s32 = rt.block_on(streaming(&channels[..STREAMS], stmts, dur, 32));
    s32.print(&format!(
        "gRPC AppendStream, {STREAMS} streams x 32 in flight"
    ));

    let stmts = presign(&writer, "stream64x8", CLIENTS, budget(60_000.0, CLIENTS));
    let mut s64 = rt.block_on(streaming(&channels, stmts, dur, 8));
    s64.print(&format!(
        "gRPC AppendStream, {CLIENTS} streams x 8 in flight"
    ));

    let half = u.rate() / 2.0;
    let stmts = presign(&writer, "half", CLIENTS, budget(half * 1.2, CLIENTS));
    let mut h = rt.block_on(unary(&channels, stmts, dur, Some(half / CLIENTS as f64)));
    h.print(&format!(
        "gRPC unary at half of its peak ({half:.0}/s offered)"
    ));

    report_ratio(
        "gRPC unary appends",
        u.rate(),
        "ops/s",
        "in-process appends",
        local.rate(),
    );
    report_ratio(
        "gRPC unary appends (256 in flight)",
        u4.rate(),
        "ops/s",
        "in-process appends",
        local.rate(),
    );
    report_ratio(
        "gRPC streaming appends",
        s.rate(),
        "ops/s",
        "in-process appends",
        local.rate(),
    );
    // The physical baseline, after the server runs (not beside them).
    let msgs = signed_messages(16_384);
    verify_batch_rate(&msgs, 64);
    let verify_rate = verify_batch_rate(&msgs, 64);
    let baseline = "raw verify_batch, all cores";
    report_ratio(
        "gRPC unary, 64 clients",
        u.rate(),
        "ops/s",
        baseline,
        verify_rate,
    );
    report_ratio(
        "gRPC unary, 64 lean h2 clients",
        lean.rate(),
        "ops/s",
        baseline,
        verify_rate,
    );
    report_ratio(
        "gRPC AppendStream, 64 x 8",
        s64.rate(),
        "ops/s",
        baseline,
        verify_rate,
    );
    report_ratio(
        "in-process appends, 64 threads",
        local.rate(),
        "ops/s",
        baseline,
        verify_rate,
    );
    let goal = |met: bool| if met { "met" } else { "NOT met" };
    println!(
        "GOAL 64 unary clients >= 0.14 of verify_batch: {} ({:.3}; lean h2 client {:.3}); AppendStream 64x8 >= 0.23: {} ({:.3}) with p99 < 50 ms: {} ({:.2} ms); in-process 64 writers >= 0.28: {} ({:.3})",
        goal(u.rate() >= 0.14 * verify_rate),
        u.rate() / verify_rate,
        lean.rate() / verify_rate,
        goal(s64.rate() >= 0.23 * verify_rate),
        s64.rate() / verify_rate,
        goal(pct(&s64.lat_us, 0.99) < 50.0),
        pct(&s64.lat_us, 0.99),
        goal(local.rate() >= 0.28 * verify_rate),
        local.rate() / verify_rate,
    );
    let best = u.rate().max(u4.rate()).max(s.rate()).max(s32.rate());
    println!(
        "GOAL durable appends/s over loopback >= 15000: {} ({best:.0}); p99 at half load < 20 ms: {} ({:.2} ms)",
        if best >= 15_000.0 { "met" } else { "NOT met" },
        if pct(&h.lat_us, 0.99) < 20.0 {
            "met"
        } else {
            "NOT met"
        },
        pct(&h.lat_us, 0.99),
    );

    // A criterion measurement of one round trip (unary, one client).
    let mut group = c.benchmark_group("grpc");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    let ch = channels[0].clone();
    let key = writer.clone();
    let counter = std::sync::atomic::AtomicU64::new(0);
    group.bench_function("unary_append_round_trip", |b| {
        b.iter(|| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let st = convert::statement_to_proto(&Statement::sign(
                "x-bench",
                format!("{{\"rt\":{n}}}").into_bytes(),
                &key,
            ));
            let mut client = LedgerClient::new(ch.clone());
            rt.block_on(client.append(st)).expect("append");
        });
    });
    group.finish();
    drop(channels);
    drop(ch);
    server_rt.block_on(server.shutdown()).expect("shutdown");
}

criterion_group!(benches, bench);
criterion_main!(benches);
