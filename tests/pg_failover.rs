//! Failover on PostgreSQL with real processes: two `docket serve --store
//! postgres://…` nodes over one database (a throwaway server; without
//! PostgreSQL the test prints `SKIPPED: no PostgreSQL` and passes).
//!
//! Sixteen writers append under load, each resending an unacknowledged
//! statement to the other node (appends are idempotent). The sequencer is
//! killed with SIGKILL; the follower must take over within a few seconds.
//! The killed node is restarted (it comes back as a follower), then the new
//! sequencer is killed too, and the first takes over again. Throughout, a
//! poller collects every checkpoint either node serves. At the end: every
//! acknowledged append is in the log with the acknowledged leaf hash, and
//! no two checkpoints of one size name different roots (each also equals
//! the root the final log has at that size).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use docket_domain::merkle;
use docket_e2e::{ServeProcess, docket_bin, sign_bytes};
use docket_proto::v1 as pb;
use docket_store_pg::PgStore;
use docket_store_pg::scratch::ScratchPostgres;
use ed25519_dalek::SigningKey;
use pb::ledger_client::LedgerClient;
use tonic::transport::Channel;

/// A node's data directory for an existing ledger: `ledger.json` and the
/// ledger key (what `docket init --store` says other nodes need).
fn node_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("keys")).unwrap();
    for f in ["ledger.json", "keys/ledger.key"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

async fn client(url: &str) -> Option<LedgerClient<Channel>> {
    let ch = Channel::from_shared(url.to_string())
        .ok()?
        .connect_timeout(Duration::from_millis(300))
        .timeout(Duration::from_secs(10))
        .connect()
        .await
        .ok()?;
    Some(LedgerClient::new(ch))
}

/// A list the load and watcher threads fill while the test runs.
type Shared<T> = Arc<Mutex<Vec<T>>>;
/// The nodes writers and pollers talk to (a restarted node gets a new port).
type Urls = Arc<Mutex<Vec<String>>>;

/// Appends `st`, trying the nodes in turn until one acknowledges it.
async fn append_anywhere(
    urls: &Urls,
    st: pb::SignedStatement,
    start: usize,
) -> Result<pb::AppendReceipt, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut attempt = start;
    let mut last = String::new();
    while Instant::now() < deadline {
        let url = {
            let u = urls.lock().unwrap();
            u[attempt % u.len()].clone()
        };
        attempt += 1;
        if let Some(mut c) = client(&url).await {
            match c.append(st.clone()).await {
                Ok(r) => return Ok(r.into_inner()),
                Err(s) => last = format!("{url}: {s}"),
            }
        } else {
            last = format!("{url}: cannot connect");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(last)
}

/// Polls `url` with a write until it is accepted: the time the node needed
/// to become the sequencer.
async fn wait_until_sequencer(url: &str, admin: &SigningKey, tag: &str) -> Duration {
    let started = Instant::now();
    let mut n = 0u64;
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{url} did not take over"
        );
        n += 1;
        let st = sign_bytes(
            "x-probe",
            format!("{{\"probe\":\"{tag}-{n}\"}}").into_bytes(),
            admin,
        );
        if let Some(mut c) = client(url).await
            && c.append(st).await.is_ok()
        {
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn start(dir: &Path, url: &str) -> ServeProcess {
    ServeProcess::start(dir, &["--store", url])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_follower_takes_over_a_killed_sequencer_losing_nothing_and_forking_nothing() {
    let pg = match ScratchPostgres::shared() {
        Ok(pg) => pg,
        Err(why) => {
            println!("SKIPPED: no PostgreSQL ({why})");
            return;
        }
    };
    let db = pg.fresh_database("failover").unwrap();
    let base = tempfile::tempdir().unwrap();
    let (n1, n2) = (base.path().join("n1"), base.path().join("n2"));
    let out = std::process::Command::new(docket_bin())
        .args(["--data", n1.to_str().unwrap(), "--store", &db, "init"])
        .env_remove("DOCKET_SERVER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    node_dir(&n1, &n2);
    let admin = docket_domain::keys::read_key_file(&n1.join("keys/admin.key")).unwrap();

    let mut a = start(&n1, &db);
    let mut b = start(&n2, &db);
    // The follower refuses writes, naming the sequencer.
    let mut c = client(&b.url()).await.unwrap();
    let err = c
        .append(sign_bytes("x-probe", b"{}".to_vec(), &admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err}");
    assert!(err.message().contains(&a.url()), "{}", err.message());

    let urls: Urls = Arc::new(Mutex::new(vec![a.url(), b.url()]));
    // (seq, leaf hash) of every acknowledged append.
    let acked: Shared<(u64, Vec<u8>)> = Arc::default();
    // (size, root, note) of every checkpoint a node served.
    let served: Shared<(u64, Vec<u8>, String)> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..16usize {
        let (urls, acked, stop, counter, admin) = (
            urls.clone(),
            acked.clone(),
            stop.clone(),
            counter.clone(),
            admin.clone(),
        );
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let st = sign_bytes(
                    "x-load",
                    format!("{{\"w\":{w},\"n\":{n}}}").into_bytes(),
                    &admin,
                );
                let r = append_anywhere(&urls, st, w).await.expect("acknowledged");
                acked.lock().unwrap().push((r.seq, r.leaf_hash));
            }
        }));
    }
    {
        let (urls, served, stop) = (urls.clone(), served.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let list = urls.lock().unwrap().clone();
                for url in list {
                    if let Some(mut c) = client(&url).await
                        && let Ok(cp) = c.get_checkpoint(pb::GetCheckpointRequest {}).await
                    {
                        let cp = cp.into_inner();
                        served.lock().unwrap().push((cp.size, cp.root, cp.note));
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }

    let acks = || acked.lock().unwrap().len();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before_kill = acks();
    assert!(before_kill > 50, "load runs: {before_kill} appends");
    // Round 1: SIGKILL the sequencer.
    a.child.kill().unwrap();
    let took_1 = wait_until_sequencer(&b.url(), &admin, "b").await;
    println!("round 1: {before_kill} appends before the kill; node 2 took over in {took_1:?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // The killed node comes back as a follower.
    let _ = a.child.wait();
    a = start(&n1, &db);
    urls.lock().unwrap()[0] = a.url();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let mut c = client(&a.url()).await.unwrap();
    let err = c
        .append(sign_bytes("x-probe", b"{\"back\":1}".to_vec(), &admin))
        .await
        .unwrap_err();
    assert!(err.message().contains(&b.url()), "{}", err.message());
    // Round 2: SIGKILL the new sequencer.
    let before_kill_2 = acks();
    b.child.kill().unwrap();
    let took_2 = wait_until_sequencer(&a.url(), &admin, "a").await;
    println!("round 2: {before_kill_2} appends before the kill; node 1 took over in {took_2:?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let _ = b.child.wait();

    assert!(took_1 < Duration::from_secs(5), "takeover took {took_1:?}");
    assert!(took_2 < Duration::from_secs(5), "takeover took {took_2:?}");
    let acked = acked.lock().unwrap().clone();
    let served = served.lock().unwrap().clone();
    assert!(
        acked.len() > before_kill_2,
        "appends continued after each takeover"
    );

    // No acknowledged append is lost: each is in the log as acknowledged.
    let mut c = client(&a.url()).await.unwrap();
    let mut stream = c
        .tail(pb::TailRequest {
            from_seq: 0,
            follow: false,
        })
        .await
        .unwrap()
        .into_inner();
    let mut leaves: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    while let Some(ev) = stream.message().await.unwrap() {
        leaves.insert(ev.seq, ev.leaf_hash);
    }
    for (seq, leaf) in &acked {
        let found = leaves
            .get(seq)
            .unwrap_or_else(|| panic!("acknowledged event {seq} lost"));
        assert_eq!(found, leaf, "event {seq} is not what was acknowledged");
    }
    // No fork: one root per served size, and it is the final log's.
    let store = PgStore::open(&db).unwrap();
    let verifier = note_verifier(&n1);
    let mut roots: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for (size, root, note) in &served {
        docket_domain::checkpoint::open_note(note, &verifier).expect("a signed checkpoint");
        if let Some(r) = roots.insert(*size, root.clone()) {
            assert_eq!(
                &r, root,
                "two checkpoints of size {size} with different roots"
            );
        }
    }
    for (size, root) in &roots {
        assert_eq!(
            merkle::root_at(&store, *size).unwrap().to_vec(),
            *root,
            "checkpoint of size {size} is not the final log's"
        );
    }
    println!(
        "{} appends acknowledged, {} checkpoints served ({} sizes), no fork",
        acked.len(),
        served.len(),
        roots.len()
    );
    a.terminate();
}

/// The ledger's checkpoint verifier, from `ledger.json`.
fn note_verifier(dir: &Path) -> docket_domain::checkpoint::NoteVerifier {
    let text = std::fs::read_to_string(dir.join("ledger.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let key = docket_domain::keys::parse_public(v["ledger_public_key"].as_str().unwrap()).unwrap();
    let origin = v["origin"].as_str().unwrap();
    docket_domain::checkpoint::NoteVerifier::new(origin, key).unwrap()
}
