//! The sequencer lease on PostgreSQL (real server; skipped without one):
//! fencing, the database's own refusal of a second root for one size,
//! followers that serve reads and refuse writes, and a takeover in the same
//! process (the failover with real `docket serve` processes killed with
//! SIGKILL is `tests/pg_failover.rs` in the workspace).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use docket_log::merkle;
use docket_log::store::{CommitBatch, Store};
use docket_log::{LogError, Receipt};
use docket_store_pg::{LedgerMeta, NodeOptions, PgStore, Role, open_node};
use support::{Backend, Kind, Registers, ToyLog, author, postgres, set};

fn meta() -> LedgerMeta {
    LedgerMeta {
        origin: "toy.example/lease".into(),
        ledger_public_key: hex::encode([3u8; 32]),
    }
}

fn one_event_batch(seq: u64) -> CommitBatch {
    let bytes = format!("event {seq}").into_bytes();
    CommitBatch {
        nodes: vec![(0, seq, merkle::leaf_hash(&bytes))],
        events: vec![(seq, bytes)],
        statements: vec![([seq as u8; 32], seq)],
        checkpoint: Some((seq + 1, format!("note\n{}\n", seq + 1))),
    }
}

/// Ends the session holding this database's lease lock (pg_locks spans
/// every database of the server: other tests' leases are left alone).
const KILL_LEASE_SESSION: &str = "SELECT pg_terminate_backend(pid) FROM pg_locks \
     WHERE locktype = 'advisory' AND granted \
     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";

fn sql(url: &str, q: &str) -> u64 {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.execute(q, &[]).unwrap()
}

#[test]
fn a_deposed_sequencer_can_never_commit() {
    let Some(pg) = postgres() else { return };
    let url = pg.fresh_database("fence").unwrap();
    let a = PgStore::create(&url, &meta()).unwrap();
    let b = PgStore::open(&url).unwrap();
    // Without the lease nothing is written.
    assert!(matches!(
        b.commit(&one_event_batch(0)),
        Err(LogError::Closed(_))
    ));
    assert!(a.try_lead("a", "http://a").unwrap());
    assert!(
        !b.try_lead("b", "http://b").unwrap(),
        "one holder at a time"
    );
    let info = b.lease_info().unwrap();
    assert_eq!((info.token, info.held), (1, true));
    assert_eq!(info.address.as_deref(), Some("http://a"));
    a.commit(&one_event_batch(0)).unwrap();
    // Another node bumps the token (as a new holder does) while A still
    // believes it holds the lease: A's next commit fails its fencing check.
    sql(&url, "UPDATE docket_lease SET token = token + 1");
    let err = a.commit(&one_event_batch(1)).unwrap_err();
    assert!(
        matches!(&err, LogError::Closed(why) if why.contains("deposed")),
        "{err}"
    );
    assert_eq!(a.len().unwrap(), 1, "nothing of the fenced commit landed");
    // And every later write, without asking the database again.
    assert!(matches!(
        a.put_snapshot("values", b"x"),
        Err(LogError::Closed(_))
    ));
    assert!(!a.is_leader());
}

#[test]
fn a_lost_lease_session_lets_a_follower_in_and_fences_the_old_holder() {
    let Some(pg) = postgres() else { return };
    let url = pg.fresh_database("lost").unwrap();
    let a = PgStore::create(&url, &meta()).unwrap();
    let b = PgStore::open(&url).unwrap();
    assert!(a.try_lead("a", "http://a").unwrap());
    a.commit(&one_event_batch(0)).unwrap();
    // The lease session dies (a network partition, a killed backend).
    sql(&url, KILL_LEASE_SESSION);
    let started = Instant::now();
    while !b.try_lead("b", "http://b").unwrap() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the lock was not released"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    b.commit(&one_event_batch(1)).unwrap();
    assert!(matches!(
        a.commit(&one_event_batch(2)),
        Err(LogError::Closed(_))
    ));
    assert_eq!(b.len().unwrap(), 2);
    assert_eq!(b.lease_info().unwrap().token, 2);
}

#[test]
fn the_database_refuses_a_second_root_for_a_size_and_an_anchor_moving_back() {
    let Some(pg) = postgres() else { return };
    let url = pg.fresh_database("fork").unwrap();
    let s = PgStore::create(&url, &meta()).unwrap();
    assert!(s.try_lead("s", "http://s").unwrap());
    s.commit(&one_event_batch(0)).unwrap();
    // The same note again is fine (an open re-anchoring a stored tail).
    s.put_checkpoints(&[(1, "note\n1\n".into())]).unwrap();
    let err = s
        .put_checkpoints(&[(1, "another note\n1\n".into())])
        .unwrap_err();
    assert!(err.to_string().contains("second root"), "{err}");
    s.put_anchor("note\n1\n").unwrap();
    let err = s.put_anchor("note\n0\n").unwrap_err();
    assert!(err.to_string().contains("never moves back"), "{err}");
    // A second `create` on the same database is refused.
    assert!(PgStore::create(&url, &meta()).is_err());
}

/// A second node's data directory: `ledger.json` and the ledger key.
fn node_dir(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("keys")).unwrap();
    for f in ["ledger.json", "keys/ledger.key"] {
        std::fs::copy(from.join(f), dir.path().join(f)).unwrap();
    }
    dir
}

fn node(dir: &Path, url: &str, address: &str) -> ToyLog {
    let store = Arc::new(PgStore::open(url).unwrap());
    let mut opts = NodeOptions::new(Role::Serve, address);
    opts.poll = Duration::from_millis(100);
    open_node::<Registers>(dir, store, opts).unwrap()
}

fn pg_backend() -> Option<Backend> {
    let pg = postgres()?;
    Some(Backend {
        kind: Kind::Postgres,
        dir: tempfile::tempdir().unwrap(),
        url: Some(pg.fresh_database("nodes").unwrap()),
    })
}

#[test]
fn followers_serve_reads_refuse_writes_and_one_takes_over() {
    let Some(b) = pg_backend() else { return };
    b.create().close().unwrap();
    let leader = node(b.path(), b.url(), "http://leader:1");
    assert!(!leader.is_follower());
    let d1 = node_dir(b.path());
    let d2 = node_dir(b.path());
    let f1 = node(d1.path(), b.url(), "http://f1:1");
    let f2 = node(d2.path(), b.url(), "http://f2:1");
    assert!(f1.is_follower() && f2.is_follower());
    let a = author(1);
    for i in 0..50 {
        leader.append(set("x", &i.to_string(), &a)).unwrap();
    }
    // Followers catch up, serve the same reads and proofs.
    for f in [&f1, &f2] {
        let len = f.wait_for_len_above(49, Duration::from_secs(10));
        assert_eq!(len, 50);
        assert_eq!(*f.state(), *leader.state());
        assert_eq!(f.root_at(50).unwrap(), leader.root_at(50).unwrap());
        assert_eq!(
            f.inclusion_proof(17, 50).unwrap(),
            leader.inclusion_proof(17, 50).unwrap()
        );
        assert_eq!(f.checkpoint().unwrap(), leader.checkpoint().unwrap());
        // Writes are refused, naming where the sequencer is.
        let err = f.append(set("y", "1", &a)).unwrap_err();
        assert!(
            matches!(&err, LogError::Closed(why) if why.contains("http://leader:1")),
            "{err}"
        );
    }
    let before = leader.checkpoint().unwrap().unwrap();
    // The sequencer goes away (its lease session ends with it).
    leader.close().unwrap();
    drop(leader);
    let started = Instant::now();
    while f1.is_follower() && f2.is_follower() {
        assert!(started.elapsed() < Duration::from_secs(5), "no takeover");
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("takeover after {:?}", started.elapsed());
    let (new, other) = if f1.is_follower() {
        (&f2, &f1)
    } else {
        (&f1, &f2)
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(other.is_follower(), "exactly one sequencer");
    let r = new.append(set("after", "1", &a)).unwrap();
    assert_eq!(r.seq, 50);
    let err = other.append(set("y", "2", &a)).unwrap_err();
    let new_addr = if std::ptr::eq(new, &f1) {
        "http://f1:1"
    } else {
        "http://f2:1"
    };
    assert!(
        matches!(&err, LogError::Closed(why) if why.contains(new_addr)),
        "{err}"
    );
    // The new checkpoint extends the old one.
    let (after, _) = new.checkpoint().unwrap().unwrap();
    let proof = new.consistency_proof(before.0.size, after.size).unwrap();
    merkle::verify_consistency(
        before.0.size,
        after.size,
        &before.0.root,
        &after.root,
        &proof,
    )
    .unwrap();
    assert_eq!(other.wait_for_len_above(50, Duration::from_secs(10)), 51);
}

#[test]
fn under_load_a_lost_sequencer_loses_no_acknowledged_append_and_forks_nothing() {
    let Some(b) = pg_backend() else { return };
    b.create().close().unwrap();
    let leader = node(b.path(), b.url(), "http://leader:1");
    let d1 = node_dir(b.path());
    let follower = node(d1.path(), b.url(), "http://f1:1");
    let acked: Arc<std::sync::Mutex<Vec<Receipt>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8u8)
        .map(|t| {
            let leader = leader.clone();
            let acked = Arc::clone(&acked);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for i in 0u64.. {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    match leader.append(set(&format!("w{t}"), &i.to_string(), &author(20 + t))) {
                        Ok(r) => acked.lock().unwrap().push(r),
                        Err(_) => return, // the deposed sequencer stopped
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    // Cut the sequencer's lease session under load.
    sql(b.url(), KILL_LEASE_SESSION);
    let started = Instant::now();
    while follower.is_follower() {
        assert!(started.elapsed() < Duration::from_secs(5), "no takeover");
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("takeover after {:?}", started.elapsed());
    // The old sequencer stops (fail-stop) at its next commit.
    let deadline = Instant::now() + Duration::from_secs(5);
    while leader.failure().is_none() && Instant::now() < deadline {
        follower.append(set("new", "x", &author(2))).ok();
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(
        leader.failure().is_some(),
        "the deposed sequencer failed stop"
    );
    let acked = acked.lock().unwrap();
    assert!(acked.len() > 20, "appends ran under load: {}", acked.len());
    for r in acked.iter() {
        assert!(r.seq < follower.len());
        assert_eq!(
            follower.leaf_hash(r.seq).unwrap(),
            r.leaf_hash,
            "seq {}",
            r.seq
        );
    }
    // Every stored checkpoint (one per size, by the table's key) names the
    // root the final log has at that size.
    let store = follower.store();
    let len = follower.len();
    let cps = store.checkpoints(1, len).unwrap();
    let verifier = follower.note_verifier().unwrap();
    for (size, note) in &cps {
        let cp = docket_log::checkpoint::open_note(note, &verifier).unwrap();
        assert_eq!(cp.root, merkle::root_at(store.as_ref(), *size).unwrap());
    }
    println!(
        "{} acknowledged by the old sequencer, {} events, {} checkpoints",
        acked.len(),
        len,
        cps.len()
    );
}
