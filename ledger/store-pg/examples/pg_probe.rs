//! What the PostgreSQL store costs at a given size, on a throwaway server:
//! appends/s with 64 writers, the open (anchored check) of a follower,
//! its catch-up rate, the promotion after the sequencer goes away, and the
//! bytes stored per event. Prints one line per figure.
//!
//! ```sh
//! cargo run --release -p docket-store-pg --example pg_probe -- 100000
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use docket_log::event::Statement;
use docket_log::{Log, LogOptions};
use docket_store_pg::scratch::{self, ScratchPostgres};
use docket_store_pg::{NodeOptions, PgStore, Role, migrate, open_node};

// The log core probes' trivial state machine.
#[path = "../../log/examples/common/mod.rs"]
#[allow(
    dead_code,
    reason = "this probe uses the state machine, not the layout option"
)]
mod common;

use common::Count;

fn append(log: &Log<Count>, writers: u64, total: u64, tag: &str) -> f64 {
    let per = total / writers;
    let started = Instant::now();
    std::thread::scope(|s| {
        for w in 0..writers {
            let log = log.clone();
            s.spawn(move || {
                let key = ed25519_dalek::SigningKey::from_bytes(&[w as u8 + 1; 32]);
                for i in 0..per {
                    let payload = format!("{{\"tag\":\"{tag}\",\"w\":{w},\"i\":{i}}}");
                    log.append(Statement::sign("x-probe", payload.into_bytes(), &key))
                        .expect("append");
                }
            });
        }
    });
    (per * writers) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let pg = match ScratchPostgres::shared() {
        Ok(pg) => pg,
        Err(why) => {
            println!("SKIPPED: no PostgreSQL ({why})");
            return;
        }
    };
    let url = pg.fresh_database("probe").expect("database");
    let dir = tempfile::tempdir().expect("temp dir");
    Log::<Count>::create(dir.path(), Some("probe.example/log"), LogOptions::default())
        .expect("create")
        .close()
        .expect("close");
    migrate::move_fresh_ledger::<Count>(dir.path(), &url).expect("into PostgreSQL");
    let leader = open_node::<Count>(
        dir.path(),
        Arc::new(PgStore::open(&url).expect("open")),
        NodeOptions::new(Role::OneShot, "probe-leader"),
    )
    .expect("leader");
    let rate = append(&leader, 64, n, "fill");
    println!("appends, 64 writers: {rate:.0}/s ({n} events)");

    let started = Instant::now();
    let follower = Log::<Count>::open_follower(
        dir.path(),
        Arc::new(PgStore::open(&url).expect("open")),
        LogOptions::default(),
        None,
    )
    .expect("follower");
    println!(
        "follower open (anchored check) at {} events: {:?}",
        follower.len(),
        started.elapsed()
    );
    let more = (n / 10).max(1000);
    append(&leader, 64, more, "more");
    let started = Instant::now();
    let len = follower.follow().expect("follow");
    println!(
        "follower catch-up of {more} events: {:?} ({:.0} events/s), now at {len}",
        started.elapsed(),
        more as f64 / started.elapsed().as_secs_f64()
    );
    leader.close().expect("close");
    drop(leader);
    let store = Arc::new(PgStore::open(&url).expect("open"));
    let promoted =
        Log::<Count>::open_follower(dir.path(), store.clone(), LogOptions::default(), None)
            .expect("second follower");
    let started = Instant::now();
    while !store.try_lead("probe", "nowhere").expect("lease") {
        std::thread::sleep(Duration::from_millis(5));
    }
    promoted.promote().expect("promote");
    println!(
        "promotion at {} events (lease, catch-up, anchored check, write path): {:?}",
        promoted.len(),
        started.elapsed()
    );
    let mut c = scratch::connect(&url).expect("connect");
    let total: i64 = c
        .query_one(
            "SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c \
             WHERE c.relname LIKE 'docket_%' AND c.relkind = 'r'",
            &[],
        )
        .expect("sizes")
        .get(0);
    for table in [
        "docket_events",
        "docket_nodes",
        "docket_statements",
        "docket_checkpoints",
    ] {
        let size: i64 = c
            .query_one(&format!("SELECT pg_total_relation_size('{table}')"), &[])
            .expect("size")
            .get(0);
        println!(
            "  {table}: {:.0} bytes/event",
            size as f64 / promoted.len() as f64
        );
    }
    println!(
        "stored: {:.0} bytes/event in all tables (indexes included)",
        total as f64 / promoted.len() as f64
    );
    promoted.close().expect("close");
}
