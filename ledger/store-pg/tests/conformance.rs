//! One store conformance suite, run against every store: the two embedded
//! stores (the tile store and sled) and the PostgreSQL store on a real
//! (throwaway) server. Every test body runs once per backend; without
//! PostgreSQL the embedded ones run and the PostgreSQL part prints
//! `SKIPPED: no PostgreSQL`.
//!
//! Covered: commit and read back, ranges (clamped), the statement index,
//! checkpoints, snapshots, the anchor, proofs through the Merkle functions
//! against an in-memory tree, the log on top (append, reopen, replay
//! verification), corruption (a deleted event, a rewritten event: the open
//! refuses naming where; what a lost event leaves still gives the
//! anchored root, as `recover --salvage-out` needs), and a crash (a writer process killed with
//! SIGKILL in the middle of its commits loses nothing it acknowledged).

mod support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use docket_log::LogError;
use docket_log::merkle::{self, Frontier, MemoryTree};
use docket_log::store::{CommitBatch, Store};
use docket_log::verify::{Trust, VerifyOptions, verify_log};
use support::{Backend, Kind, Registers, author, backends, set};

fn each_backend(mut f: impl FnMut(&Backend)) {
    for b in backends() {
        println!("-- {:?}", b.kind);
        f(&b);
    }
}

/// `n` fake events' bytes (the raw store does not decode them).
fn event_bytes(seq: u64) -> Vec<u8> {
    let mut b = format!("event-{seq}-").into_bytes();
    b.resize(40 + (seq as usize * 37) % 300, b'x');
    b
}

/// Commits events `from..to` in one batch with their Merkle nodes and a
/// checkpoint for the new size.
fn commit_range(
    store: &dyn Store,
    frontier: &mut Frontier,
    tree: &mut MemoryTree,
    from: u64,
    to: u64,
) {
    store
        .commit(&batch_of_range(frontier, tree, from, to))
        .expect("commit");
}

/// The batch of events `from..to` with their Merkle nodes and a checkpoint
/// for the new size.
fn batch_of_range(
    frontier: &mut Frontier,
    tree: &mut MemoryTree,
    from: u64,
    to: u64,
) -> CommitBatch {
    let mut batch = CommitBatch::default();
    for seq in from..to {
        let bytes = event_bytes(seq);
        let leaf = merkle::leaf_hash(&bytes);
        tree.push(leaf);
        batch.nodes.extend(frontier.push(leaf));
        let mut digest = [0u8; 32];
        digest[..8].copy_from_slice(&seq.to_be_bytes());
        digest[31] = 0xd1;
        batch.statements.push((digest, seq));
        batch.events.push((seq, bytes));
    }
    batch.checkpoint = Some((to, format!("checkpoint note of size\n{to}\n")));
    batch
}

#[test]
fn a_commit_anchored_with_its_checkpoint_moves_the_anchor_which_never_moves_back() {
    each_backend(|b| {
        let store = b.raw_store();
        let mut frontier = Frontier::new();
        let mut tree = MemoryTree::new();
        commit_range(store.as_ref(), &mut frontier, &mut tree, 0, 10);
        let (_, first) = store.checkpoint(Some(10)).unwrap().unwrap();
        store.put_anchor(&first).unwrap();
        // Given a small batch committed with `commit_anchored`,
        let batch = batch_of_range(&mut frontier, &mut tree, 10, 12);
        let anchored = store.commit_anchored(&batch).unwrap();
        // then the tile store (the anchor carries the events) and
        // PostgreSQL (the anchor moves in the commit's transaction) anchored
        // it; sled cannot, and its caller anchors as before.
        assert_eq!(anchored, b.kind != Kind::Sled, "{:?}", b.kind);
        let (_, note) = batch.checkpoint.clone().unwrap();
        if !anchored {
            store.put_anchor(&note).unwrap();
        }
        assert_eq!(store.anchor().unwrap(), Some(note.clone()));
        assert_eq!(store.len().unwrap(), 12);
        assert_eq!(store.event_bytes(11).unwrap(), Some(event_bytes(11)));
        // and an anchor of an earlier size, written after it (the publish
        // stage anchoring a batch the store already anchored past), leaves
        // the anchor where it is.
        store.put_anchor(&first).unwrap();
        assert_eq!(store.anchor().unwrap(), Some(note));
    });
}

#[test]
fn commit_and_read_back() {
    each_backend(|b| {
        let store = b.raw_store();
        assert_eq!(store.len().unwrap(), 0);
        assert!(store.is_empty().unwrap());
        assert_eq!(store.checkpoint(None).unwrap(), None);
        assert_eq!(store.anchor().unwrap(), None);
        let mut frontier = Frontier::new();
        let mut tree = MemoryTree::new();
        commit_range(store.as_ref(), &mut frontier, &mut tree, 0, 10);
        commit_range(store.as_ref(), &mut frontier, &mut tree, 10, 11);
        commit_range(store.as_ref(), &mut frontier, &mut tree, 11, 40);
        assert_eq!(store.len().unwrap(), 40);
        // Single events, ranges (clamped to the log), beyond the end.
        assert_eq!(store.event_bytes(7).unwrap(), Some(event_bytes(7)));
        assert_eq!(store.event_bytes(40).unwrap(), None);
        let range = store.event_range(5, 100).unwrap();
        assert_eq!(range.len(), 35);
        assert!(range.iter().all(|(s, bytes)| *bytes == event_bytes(*s)));
        assert_eq!(range.first().map(|r| r.0), Some(5));
        assert!(store.event_range(20, 20).unwrap().is_empty());
        assert!(store.event_range(30, 10).unwrap().is_empty());
        // Leaves.
        let leaves = store.leaf_hashes(0, 40).unwrap();
        assert_eq!(leaves.len(), 40);
        assert_eq!(leaves[12], (12, merkle::leaf_hash(&event_bytes(12))));
        // The statement index.
        let mut d = [0u8; 32];
        d[..8].copy_from_slice(&13u64.to_be_bytes());
        d[31] = 0xd1;
        assert_eq!(store.statement_seq(&d).unwrap(), Some(13));
        assert_eq!(store.statement_seq(&[9u8; 32]).unwrap(), None);
        let mut all = Vec::new();
        store.for_each_statement(&mut |h| all.push(h)).unwrap();
        assert_eq!(all.len(), 40);
        // Checkpoints: exact, latest, ranges, none between boundaries.
        assert_eq!(store.checkpoint(Some(11)).unwrap().map(|c| c.0), Some(11));
        assert_eq!(store.checkpoint(Some(12)).unwrap(), None);
        assert_eq!(store.checkpoint(None).unwrap().map(|c| c.0), Some(40));
        let sizes: Vec<u64> = store
            .checkpoints(1, 39)
            .unwrap()
            .iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(sizes, vec![10, 11]);
        let sizes: Vec<u64> = store
            .checkpoints(11, 1000)
            .unwrap()
            .iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(sizes, vec![11, 40]);
        // Checkpoints in bulk.
        store
            .put_checkpoints(&[(12, "note\n12\n".into()), (13, "note\n13\n".into())])
            .unwrap();
        assert_eq!(store.checkpoints(12, 13).unwrap().len(), 2);
        // Snapshots: absent, put, replaced.
        assert_eq!(store.snapshot("values").unwrap(), None);
        store.put_snapshot("values", b"one").unwrap();
        store.put_snapshot("values", b"two").unwrap();
        assert_eq!(store.snapshot("values").unwrap(), Some(b"two".to_vec()));
        // The anchor: read after write (the PostgreSQL store also moves it
        // with each commit's checkpoint, and never back).
        let (_, note) = store.checkpoint(Some(40)).unwrap().unwrap();
        store.put_anchor(&note).unwrap();
        assert_eq!(store.anchor().unwrap(), Some(note));
    });
}

#[test]
fn proofs_from_the_store_match_an_in_memory_tree() {
    each_backend(|b| {
        let store = b.raw_store();
        let mut frontier = Frontier::new();
        let mut tree = MemoryTree::new();
        let mut from = 0;
        for to in [1u64, 2, 3, 8, 17, 64, 100, 257, 300] {
            commit_range(store.as_ref(), &mut frontier, &mut tree, from, to);
            from = to;
        }
        for size in [1u64, 2, 5, 64, 99, 257, 300] {
            let root = merkle::root_at(store.as_ref(), size).unwrap();
            assert_eq!(
                root,
                merkle::root_at(&tree, size).unwrap(),
                "root at {size}"
            );
            for index in [0, size / 2, size - 1] {
                let proof = merkle::inclusion_proof(store.as_ref(), index, size).unwrap();
                assert_eq!(proof, merkle::inclusion_proof(&tree, index, size).unwrap());
                let leaf = merkle::leaf_hash(&event_bytes(index));
                merkle::verify_inclusion(&leaf, index, size, &proof, &root).unwrap();
            }
            for old in [1u64, size / 3, size] {
                if old == 0 {
                    continue;
                }
                let proof = merkle::consistency_proof(store.as_ref(), old, size).unwrap();
                assert_eq!(proof, merkle::consistency_proof(&tree, old, size).unwrap());
                let old_root = merkle::root_at(store.as_ref(), old).unwrap();
                merkle::verify_consistency(old, size, &old_root, &root, &proof).unwrap();
            }
        }
        assert_eq!(
            Frontier::restore(store.as_ref(), 300).unwrap().root(),
            frontier.root()
        );
    });
}

fn verify(b: &Backend, log: &support::ToyLog) -> docket_log::verify::VerifyReport {
    let verifier = log.note_verifier().unwrap();
    let (report, _) = verify_log::<Registers>(
        log.store().as_ref(),
        Trust {
            checkpoints: &verifier,
            snapshots: &verifier.key,
        },
        VerifyOptions::full(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(report.exit_code(), 0, "{:?}: {report:?}", b.kind);
    report
}

#[test]
fn the_log_appends_reopens_and_verifies() {
    each_backend(|b| {
        let log = b.create();
        let a = author(1);
        for i in 0..60 {
            log.append(set(&format!("r{}", i % 7), &i.to_string(), &a))
                .unwrap();
        }
        // Many writers: group commits of several statements.
        std::thread::scope(|s| {
            for t in 0..8 {
                let log = log.clone();
                s.spawn(move || {
                    for i in 0..25 {
                        log.append(set(&format!("t{t}"), &i.to_string(), &author(2)))
                            .unwrap();
                    }
                });
            }
        });
        // Idempotent, refused.
        let again = log.append(set("r0", "0", &a)).unwrap();
        assert!(again.duplicate);
        assert!(matches!(
            log.append(set("x", "deny", &a)),
            Err(LogError::FailedPrecondition(_))
        ));
        assert_eq!(log.len(), 260);
        let proof = log.inclusion_proof(100, 260).unwrap();
        let root = log.root_at(260).unwrap();
        merkle::verify_inclusion(&log.leaf_hash(100).unwrap(), 100, 260, &proof, &root).unwrap();
        let (cp, _) = log.checkpoint().unwrap().unwrap();
        assert_eq!((cp.size, cp.root), (260, root));
        let state = log.state().clone();
        assert_eq!(state.events, 260);
        log.close().unwrap();
        drop(log);
        let log = b.open().unwrap();
        assert_eq!(log.len(), 260);
        assert_eq!(*log.state(), state);
        assert!(
            log.open_report().warnings.is_empty(),
            "{:?}",
            log.open_report()
        );
        let report = verify(b, &log);
        assert_eq!(report.events, 260);
        assert_eq!(report.anchor_size, Some(260));
    });
}

#[test]
fn a_deleted_event_is_refused_naming_where() {
    each_backend(|b| {
        let log = b.create();
        for i in 0..30 {
            log.append(set("x", &i.to_string(), &author(1))).unwrap();
        }
        log.close().unwrap();
        drop(log);
        b.delete_event(20);
        let err = b.open().unwrap_err();
        assert!(
            matches!(err, LogError::Corrupt { .. }),
            "{:?}: {err}",
            b.kind
        );
        assert!(err.to_string().contains("event 20"), "{:?}: {err}", b.kind);
    });
}

#[test]
fn a_rewritten_event_is_refused_naming_where() {
    each_backend(|b| {
        let log = b.create();
        for i in 0..30 {
            log.append(set("x", &i.to_string(), &author(1))).unwrap();
        }
        log.close().unwrap();
        drop(log);
        b.rewrite_event(7);
        let err = b.open().unwrap_err();
        assert!(
            matches!(err, LogError::Corrupt { .. }),
            "{:?}: {err}",
            b.kind
        );
        assert!(err.to_string().contains("event 7"), "{:?}: {err}", b.kind);
    });
}

#[test]
fn a_damaged_stored_leaf_hash_is_rebuilt_from_the_event_bytes_and_proofs_verify() {
    each_backend(|b| {
        // Given a closed ledger (past one full tile) whose stored leaf hash
        // of event 3 (derived from its bytes) is damaged,
        let log = b.create();
        let batch = (0..300)
            .map(|i| set("x", &i.to_string(), &author(1)))
            .collect();
        for r in log.append_many(batch).unwrap() {
            r.unwrap();
        }
        log.close().unwrap();
        drop(log);
        b.damage_leaf_hash(3);
        // when the ledger opens, then it is rebuilt from the event bytes
        // (they give the anchored root) and a warning says so,
        let log = b.open().unwrap_or_else(|e| panic!("{:?}: {e}", b.kind));
        let warnings = log.open_report().warnings.join("\n");
        assert!(warnings.contains("rewritten"), "{:?}: {warnings}", b.kind);
        // and proofs through it verify against the signed checkpoint,
        let (cp, _) = log.checkpoint().unwrap().unwrap();
        for index in [2, 3] {
            let p = log.prove_inclusion(index, cp.size).unwrap();
            merkle::verify_inclusion(&p.leaf, index, cp.size, &p.path, &cp.root).unwrap();
        }
        // while a rebuild asked for a root the bytes do not give writes
        // nothing and says so (`None`), and one for theirs finds nothing
        // left to rewrite.
        let store = log.store().clone();
        let mut wrong = cp.root;
        wrong[0] ^= 1;
        assert_eq!(
            store.rebuild_derived_tree(cp.size, &wrong).unwrap(),
            None,
            "{:?}",
            b.kind
        );
        assert_eq!(
            store.rebuild_derived_tree(cp.size, &cp.root).unwrap(),
            Some(Vec::new()),
            "{:?}",
            b.kind
        );
        assert!(verify(b, &log).findings.is_empty(), "{:?}", b.kind);
    });
}

#[test]
fn after_a_lost_event_what_the_store_still_yields_gives_the_anchored_root() {
    each_backend(|b| {
        // Given a closed ledger of 300 events (one full tile) whose event
        // 100 is lost (in a tile bundle, with every entry after it in the
        // bundle: the file is cut there; appended in 30 commits, so that
        // the anchor's ring, which keeps the last 8 commits to redo, does
        // not hold it),
        let log = b.create();
        for commit in 0..30 {
            let batch = (0..10)
                .map(|i| set("x", &(commit * 10 + i).to_string(), &author(1)))
                .collect();
            for r in log.append_many(batch).unwrap() {
                r.unwrap();
            }
        }
        log.close().unwrap();
        drop(log);
        b.delete_event(100);
        // when what survives is read as `recover` reads it (the readable
        // events, the leaf hashes kept, and what lies past the store's
        // length),
        let store = b.salvage_store();
        let (_, verifier) = docket_log::sequencer::read_config(b.path()).unwrap();
        let anchor = store.anchor().unwrap().expect("the anchor");
        let anchored = docket_log::checkpoint::open_note(&anchor, &verifier).unwrap();
        assert_eq!(anchored.size, 300);
        let len = store.len().unwrap();
        let mut read: std::collections::BTreeMap<u64, Vec<u8>> =
            store.salvage_range(0, len).unwrap().0.into_iter().collect();
        let mut kept: std::collections::BTreeMap<u64, merkle::Hash> =
            store.leaf_hashes(0, len).unwrap().into_iter().collect();
        let past = store.salvage_past_len(anchored.size).unwrap();
        read.extend(past.events);
        kept.extend(past.leaves);
        // then every event below the anchored size has its bytes or a kept
        // leaf, together giving the anchored root,
        let mut tree = MemoryTree::new();
        for seq in 0..anchored.size {
            let leaf = read
                .get(&seq)
                .map(|bytes| merkle::leaf_hash(bytes))
                .or_else(|| kept.get(&seq).copied())
                .unwrap_or_else(|| panic!("{:?}: no bytes and no leaf for {seq}", b.kind));
            tree.push(leaf);
        }
        assert_eq!(
            tree.root(),
            anchored.root,
            "{:?}: len {len}, read {:?}, kept {:?}",
            b.kind,
            runs_of(read.keys().copied()),
            runs_of(kept.keys().copied())
        );
        // and every event after the lost one is read (the tile store finds
        // them past the cut in the later bundle), the lost one is not.
        assert!(!read.contains_key(&100), "{:?}", b.kind);
        let first_after = if b.kind == Kind::Tiles { 256 } else { 101 };
        for seq in first_after..anchored.size {
            assert!(read.contains_key(&seq), "{:?}: event {seq}", b.kind);
        }
    });
}

/// Consecutive sequence numbers as inclusive `(first, last)` runs (for
/// failure messages).
fn runs_of(seqs: impl Iterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for s in seqs {
        match out.last_mut() {
            Some((_, b)) if *b + 1 == s => *b = s,
            _ => out.push((s, s)),
        }
    }
    out
}

/// The writer process of [`a_writer_killed_mid_commit_loses_nothing_acknowledged`]:
/// runs only when `DOCKET_CRASH_CHILD` names a backend (`sled DIR`, `tiles DIR` or
/// `postgres DIR URL`); prints `ack SEQ LEAF` after each acknowledged
/// append, from 4 threads, until killed.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var("DOCKET_CRASH_CHILD") else {
        return;
    };
    let parts: Vec<&str> = spec.split(' ').collect();
    let dir = std::path::PathBuf::from(parts[1]);
    let log = match parts.get(2) {
        None => support::ToyLog::open(&dir, support::opts()).unwrap(),
        Some(url) => {
            let store = Arc::new(docket_store_pg::PgStore::open(url).unwrap());
            docket_store_pg::open_node::<Registers>(
                &dir,
                store,
                docket_store_pg::NodeOptions::new(docket_store_pg::Role::OneShot, "child"),
            )
            .unwrap()
        }
    };
    assert!(!log.is_follower());
    println!("ready");
    std::io::stdout().flush().unwrap();
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let log = log.clone();
            s.spawn(move || {
                for i in 0u64.. {
                    // Unique per process: every round appends new events.
                    let value = format!("{}-{i}", std::process::id());
                    let r = log
                        .append(set(&format!("w{t}"), &value, &author(10 + t)))
                        .unwrap();
                    let line = format!("ack {} {}\n", r.seq, hex::encode(r.leaf_hash));
                    std::io::stdout().lock().write_all(line.as_bytes()).unwrap();
                }
            });
        }
    });
}

#[test]
fn a_writer_killed_mid_commit_loses_nothing_acknowledged() {
    each_backend(|b| {
        b.create().close().unwrap();
        let spec = match b.kind {
            Kind::Sled => format!("sled {}", b.path().display()),
            Kind::Tiles => format!("tiles {}", b.path().display()),
            Kind::Postgres => format!("postgres {} {}", b.path().display(), b.url()),
        };
        for round in 0..3 {
            // Let sled release its lock from the previous process.
            std::thread::sleep(Duration::from_millis(100));
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
                .env("DOCKET_CRASH_CHILD", &spec)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let mut acked: Vec<(u64, String)> = Vec::new();
            let started = Instant::now();
            // Kill after a number of acknowledgements that varies per round.
            let kill_after = 150 + round * 97;
            while acked.len() < kill_after {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "writer too slow"
                );
                let Some(Ok(line)) = lines.next() else {
                    panic!("the writer ended early ({:?})", child.wait());
                };
                if let Some(rest) = line.strip_prefix("ack ") {
                    let (seq, leaf) = rest.split_once(' ').unwrap();
                    acked.push((seq.parse().unwrap(), leaf.to_string()));
                }
            }
            child.kill().unwrap(); // SIGKILL, mid-commit
            // Every acknowledgement printed before the kill.
            for line in lines.map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("ack ") {
                    let (seq, leaf) = rest.split_once(' ').unwrap();
                    acked.push((seq.parse().unwrap(), leaf.to_string()));
                }
            }
            child.wait().unwrap();
            let log = b.open().unwrap();
            for (seq, leaf) in &acked {
                assert!(*seq < log.len(), "{:?}: acknowledged {seq} lost", b.kind);
                assert_eq!(hex::encode(log.leaf_hash(*seq).unwrap()), *leaf);
            }
            verify(b, &log);
            println!(
                "{:?} round {round}: {} acknowledged, {} durable",
                b.kind,
                acked.len(),
                log.len()
            );
            log.close().unwrap();
        }
    });
}
