//! Durable author-signed appends/s with the log on PostgreSQL, next to the
//! same ledger on the embedded stores (the tile layout, the default, and
//! the sled layout) and next to a plain PostgreSQL
//! append-only table (hash-chained rows, synchronous commit), with 1 and 64
//! clients, all measured in one run on one throwaway server (fsync and
//! synchronous commit on) whose data directory is on the same disk as the
//! sled store's. Without PostgreSQL (no `initdb`/`pg_ctl`, and no
//! `DOCKET_TEST_PG_URL`) the bench prints why and skips.
//!
//! The plain table is what one would write by hand: each append is one
//! statement in its own transaction that advances a one-row chain head
//! (`hash = sha256(prev_hash || payload)`) and inserts the row. The head's
//! row lock is held until COMMIT, so a hash chain written this way takes one
//! WAL flush per append whatever the number of clients; Docket's group
//! commit takes one per batch. An unchained insert (no head, no lock) is
//! printed too, as the table's upper bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use docket_benches::report_ratio;
use docket_domain::{Ledger, LedgerState, Statement, keys};
use docket_store_pg::scratch::ScratchPostgres;
use docket_store_pg::{NodeOptions, PgStore, Role, migrate, open_node};

struct Fixture {
    _dir: tempfile::TempDir,
    ledger: Ledger,
    writer: ed25519_dalek::SigningKey,
    counter: AtomicU64,
}

/// A fresh ledger with a registered writer: in `dir` (of `layout`), or
/// moved into the database at `url` as `docket init --store` does.
fn fixture(url: Option<&str>, layout: docket_log::Layout) -> Arc<Fixture> {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = docket_domain::LedgerOptions {
        layout,
        ..docket_domain::LedgerOptions::default()
    };
    let (ledger, info) = docket_domain::ledger::init_with(dir.path(), None, options).expect("init");
    let ledger = match url {
        None => ledger,
        Some(url) => {
            ledger.close().expect("close");
            drop(ledger);
            migrate::move_fresh_ledger::<LedgerState>(dir.path(), url).expect("into PostgreSQL");
            let store = Arc::new(PgStore::open(url).expect("open the database"));
            open_node::<LedgerState>(dir.path(), store, NodeOptions::new(Role::OneShot, "bench"))
                .expect("open on PostgreSQL")
        }
    };
    let admin = keys::read_key_file(&info.admin_key_path).expect("admin key");
    let writer = keys::generate().expect("key");
    let reg = format!(
        "{{\"public_key\":\"{}\",\"roles\":[\"submitter\"]}}",
        hex::encode(writer.verifying_key().to_bytes())
    );
    ledger
        .append(Statement::sign("key.registered", reg.into_bytes(), &admin))
        .expect("register writer");
    Arc::new(Fixture {
        _dir: dir,
        ledger,
        writer,
        counter: AtomicU64::new(0),
    })
}

/// Appends `total` pre-signed statements from `writers` threads; returns
/// the wall time of the appends only.
fn run(f: &Fixture, writers: usize, total: u64) -> Duration {
    let per = total.div_ceil(writers as u64);
    let batches: Vec<Vec<Statement>> = (0..writers)
        .map(|_| {
            (0..per)
                .map(|_| {
                    let n = f.counter.fetch_add(1, Ordering::Relaxed);
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

/// The plain table: `chain` rows hash-chained through a one-row head, or
/// `plain` rows without a chain.
fn plain_tables(url: &str) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    c.batch_execute(
        "CREATE TABLE chain (seq bigint PRIMARY KEY, hash bytea NOT NULL, payload bytea NOT NULL);
         CREATE TABLE chain_head (id boolean PRIMARY KEY, seq bigint NOT NULL, hash bytea NOT NULL);
         INSERT INTO chain_head VALUES (true, -1, '\\x0000000000000000000000000000000000000000000000000000000000000000');
         CREATE TABLE plain (seq bigserial PRIMARY KEY, payload bytea NOT NULL);",
    )
    .expect("create the plain tables");
}

const CHAINED: &str = "WITH h AS (UPDATE chain_head SET seq = seq + 1, hash = sha256(hash || $1) \
     WHERE id RETURNING seq, hash) INSERT INTO chain (seq, hash, payload) SELECT seq, hash, $1 FROM h";
const UNCHAINED: &str = "INSERT INTO plain (payload) VALUES ($1)";

/// `total` single-statement transactions from `clients` connections
/// (synchronous commit on); returns appends/s.
fn plain_rate(url: &str, sql: &str, clients: usize, total: u64) -> f64 {
    let per = total.div_ceil(clients as u64);
    let mut conns: Vec<postgres::Client> = (0..clients)
        .map(|_| postgres::Client::connect(url, postgres::NoTls).expect("connect"))
        .collect();
    // A payload the size of a signed statement's canonical event.
    let payload = vec![7u8; 220];
    let start = Instant::now();
    std::thread::scope(|s| {
        for c in conns.iter_mut() {
            let payload = &payload;
            s.spawn(move || {
                let stmt = c.prepare(sql).expect("prepare");
                for _ in 0..per {
                    c.execute(&stmt, &[payload]).expect("insert");
                }
            });
        }
    });
    (per * clients as u64) as f64 / start.elapsed().as_secs_f64()
}

fn bench(c: &mut Criterion) {
    let pg = match ScratchPostgres::shared() {
        Ok(pg) => pg,
        Err(why) => {
            println!("SKIPPED pg_append: no PostgreSQL ({why})");
            return;
        }
    };
    let plain_url = pg.fresh_database("bench_plain").expect("database");
    plain_tables(&plain_url);
    let on_pg = fixture(
        Some(&pg.fresh_database("bench_ledger").expect("database")),
        docket_log::Layout::Tiles,
    );
    let on_tiles = fixture(None, docket_log::Layout::Tiles);
    let on_sled = fixture(None, docket_log::Layout::Sled);

    let mut group = c.benchmark_group("pg_append");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(6));
    group.throughput(Throughput::Elements(1));
    for clients in [1usize, 64] {
        let f = Arc::clone(&on_pg);
        group.bench_function(format!("postgres_{clients}_clients"), move |b| {
            b.iter_custom(|iters| run(&f, clients, iters.max(clients as u64)));
        });
        // Direct measurements for the ratio lines, one after the other.
        let total = if clients == 1 { 1_000 } else { 20_000 };
        let pg_rate = total as f64 / run(&on_pg, clients, total).as_secs_f64();
        let tiles_rate = total as f64 / run(&on_tiles, clients, total).as_secs_f64();
        let sled_rate = total as f64 / run(&on_sled, clients, total).as_secs_f64();
        let chained = plain_rate(&plain_url, CHAINED, clients, total);
        let unchained = plain_rate(&plain_url, UNCHAINED, clients, total);
        println!(
            "pg_append {clients} clients: docket on PostgreSQL {pg_rate:.0}/s, docket on tiles \
             {tiles_rate:.0}/s, docket on sled {sled_rate:.0}/s, plain hash-chained table \
             {chained:.0}/s, plain unchained insert {unchained:.0}/s"
        );
        let embedded = format!("docket append on tiles, {clients} clients");
        report_ratio(&embedded, tiles_rate, "ops/s", "docket on sled", sled_rate);
        report_ratio(
            &embedded,
            tiles_rate,
            "ops/s",
            "plain hash-chained PG table",
            chained,
        );
        let what = format!("docket append on PostgreSQL, {clients} clients");
        report_ratio(&what, pg_rate, "ops/s", "docket on tiles", tiles_rate);
        report_ratio(
            &what,
            pg_rate,
            "ops/s",
            "plain hash-chained PG table",
            chained,
        );
        report_ratio(
            &what,
            pg_rate,
            "ops/s",
            "plain unchained PG insert",
            unchained,
        );
    }
    group.finish();
    on_pg.ledger.close().expect("close");
    on_tiles.ledger.close().expect("close");
    on_sled.ledger.close().expect("close");
}

criterion_group!(benches, bench);
criterion_main!(benches);
