//! The tile store on its own (docs/FORMAT.md §11): a model-based property
//! test with reopens, commits that never returned (torn tails in every
//! file), derived files lost or damaged, and the byte format an outside
//! reader relies on.

use std::path::Path;

use docket_log::LogError;
use docket_log::checkpoint::Checkpoint;
use docket_log::merkle::{self, Frontier, MemoryTree, NodeSource};
use docket_log::store::{CommitBatch, Store};
use docket_log::tiles::{self, TileStore};
use proptest::prelude::*;

/// Fake event bytes (the raw store does not decode them); every 97th is
/// over 65,535 bytes. Never starts with 0xFF.
fn event(seq: u64) -> Vec<u8> {
    let len = if seq % 97 == 13 {
        70_000 + (seq as usize % 5)
    } else {
        30 + (seq as usize * 37) % 400
    };
    let mut b = format!("\x01event-{seq}-").into_bytes();
    b.resize(len, (seq % 200) as u8 + 1);
    b
}

/// A small fake event, for tests that need many.
fn small_event(seq: u64) -> Vec<u8> {
    format!("\x01small-{seq}").into_bytes()
}

fn digest(seq: u64) -> [u8; 32] {
    let mut d = [0u8; 32];
    d[..8].copy_from_slice(&seq.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    d[8..16].copy_from_slice(&seq.to_be_bytes());
    d[31] = 0xd1;
    d
}

/// What the store must hold: the tree of every committed event.
#[derive(Clone)]
struct Model {
    frontier: Frontier,
    tree: MemoryTree,
}

impl Model {
    fn new() -> Self {
        Self {
            frontier: Frontier::new(),
            tree: MemoryTree::new(),
        }
    }

    fn len(&self) -> u64 {
        self.tree.len()
    }

    /// The batch appending `n` events, with nodes and a checkpoint.
    fn batch(&mut self, n: u64) -> CommitBatch {
        self.batch_of(n, event)
    }

    /// The same with events made by `event`.
    fn batch_of(&mut self, n: u64, event: fn(u64) -> Vec<u8>) -> CommitBatch {
        let mut b = CommitBatch::default();
        let from = self.len();
        for seq in from..from + n {
            let bytes = event(seq);
            let leaf = merkle::leaf_hash(&bytes);
            self.tree.push(leaf);
            b.nodes.extend(self.frontier.push(leaf));
            b.statements.push((digest(seq), seq));
            b.events.push((seq, bytes));
        }
        let size = self.len();
        b.checkpoint = Some((size, note(size, self.tree.root())));
        b
    }
}

/// A checkpoint note as the log above stores it: a C2SP body and a
/// signature line (the store reads the body's root, never the signature).
fn note(size: u64, root: [u8; 32]) -> String {
    let body = Checkpoint {
        origin: "example.org/tile-store-test".into(),
        size,
        root,
        extensions: Vec::new(),
    }
    .body();
    format!("{body}\n— example.org/tile-store-test AAAAAAAA\n")
}

fn create(dir: &Path) -> TileStore {
    TileStore::create(dir).expect("create")
}

fn open(dir: &Path) -> TileStore {
    TileStore::open(dir).expect("open")
}

/// Everything an outside reader checks against the model.
fn check(store: &TileStore, model: &Model, probe: u64) {
    let len = model.len();
    assert_eq!(store.len().unwrap(), len);
    if len == 0 {
        return;
    }
    // Roots at several sizes, from the store's nodes.
    for size in [len, len / 2 + 1, (probe % len) + 1] {
        assert_eq!(
            merkle::root_at(store, size).unwrap(),
            merkle::root_at(&model.tree, size).unwrap(),
            "root at {size} of {len}"
        );
    }
    // Proofs.
    let i = probe % len;
    assert_eq!(
        merkle::inclusion_proof(store, i, len).unwrap(),
        merkle::inclusion_proof(&model.tree, i, len).unwrap()
    );
    let old = (probe / 7) % len + 1;
    assert_eq!(
        merkle::consistency_proof(store, old, len).unwrap(),
        merkle::consistency_proof(&model.tree, old, len).unwrap()
    );
    // Events, leaves, statements, checkpoints.
    let from = probe % len;
    let to = (from + 300).min(len);
    let got = store.event_range(from, to).unwrap();
    assert_eq!(got.len() as u64, to - from);
    for (seq, bytes) in &got {
        assert_eq!(*bytes, event(*seq), "event {seq}");
    }
    for (seq, leaf) in store.leaf_hashes(from, to).unwrap() {
        assert_eq!(leaf, model.tree.node(0, seq).unwrap(), "leaf {seq}");
    }
    assert_eq!(store.statement_seq(&digest(from)).unwrap(), Some(from));
    assert_eq!(store.statement_seq(&digest(len + 5)).unwrap(), None);
    assert_eq!(store.checkpoint(None).unwrap().map(|c| c.0), Some(len));
}

#[derive(Debug, Clone)]
enum Op {
    Commit(u64),
    Reopen,
    /// A commit that never returned: bytes past the ends of the open
    /// bundle and of the commit log, then a reopen.
    TornCommit,
    /// A derived index or a full hash tile lost, then a reopen.
    LoseDerived(u8),
    /// A commit anchored in the same wait ([`Store::commit_anchored`]).
    CommitAnchored(u64),
    /// The same, then a stop after the anchor's fdatasync and before the
    /// bundle's and the commit log's: only the anchor holds the commit.
    CommitAnchoredThenLoseIt(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (1u64..300).prop_map(Op::Commit),
        2 => Just(Op::Reopen),
        2 => Just(Op::TornCommit),
        1 => (0u8..5).prop_map(Op::LoseDerived),
        3 => (1u64..5).prop_map(Op::CommitAnchored),
        3 => (1u64..5).prop_map(Op::CommitAnchoredThenLoseIt),
    ]
}

/// Changes the last hash of `tiles/partial` and seals it again with a
/// valid check (FORMAT.md §11): only the root check can refuse it.
fn forge_partial(path: &Path) {
    use sha2::Digest as _;
    let mut bytes = std::fs::read(path).unwrap();
    let body_len = bytes.len() - 16;
    if body_len >= 13 + 32 {
        bytes[body_len - 1] ^= 0x01;
    }
    let check = sha2::Sha256::digest(&bytes[..body_len]);
    bytes[body_len..].copy_from_slice(&check[..16]);
    std::fs::write(path, bytes).unwrap();
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// Cuts `path` back to `len` bytes (removes it when it did not exist).
fn cut(path: &Path, len: Option<u64>) {
    match len {
        None => {
            let _ = std::fs::remove_file(path);
        }
        Some(len) => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(len)
            .unwrap(),
    }
}

/// Whether the tile store anchors `batch` with its commit: its events and
/// checkpoint fit one 4 KiB anchor slot (docs/FORMAT.md §9).
fn fits_an_anchor(batch: &CommitBatch) -> bool {
    let note = batch.checkpoint.as_ref().map_or(0, |c| c.1.len());
    let events: usize = batch.events.iter().map(|(_, b)| 4 + b.len()).sum();
    48 + note + 8 + 4 + events + 4 + 40 * batch.statements.len() <= 4096
}

fn append_garbage(path: &Path, bytes: &[u8]) {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn the_store_matches_its_model_across_reopens_and_torn_commits(
        ops in proptest::collection::vec(op(), 1..24),
        probe in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut model = Model::new();
        let mut store = Some(create(dir.path()));
        for op in ops {
            match op {
                Op::Commit(n) => {
                    let batch = model.batch(n);
                    store.as_ref().unwrap().commit(&batch).unwrap();
                }
                Op::Reopen => {
                    drop(store.take());
                    store = Some(open(dir.path()));
                }
                Op::TornCommit => {
                    drop(store.take());
                    let len = model.len();
                    let part = dir
                        .path()
                        .join("tiles")
                        .join(format!("{}.part", tiles::bundle_path(len / 256)));
                    if let Some(parent) = part.parent() {
                        std::fs::create_dir_all(parent).unwrap();
                    }
                    // An entry of a commit that never returned, and half of
                    // its commit record.
                    append_garbage(&part, &[0, 5, 1, 2, 3, 4, 5, 0]);
                    append_garbage(&dir.path().join("tiles/commits"), b"DKC1\0\0\0\x40half");
                    store = Some(open(dir.path()));
                }
                Op::CommitAnchored(n) => {
                    let batch = model.batch(n);
                    let s = store.as_ref().unwrap();
                    prop_assert_eq!(s.commit_anchored(&batch).unwrap(), fits_an_anchor(&batch));
                    if fits_an_anchor(&batch) {
                        prop_assert_eq!(s.anchor().unwrap(), batch.checkpoint.map(|c| c.1));
                    }
                }
                Op::CommitAnchoredThenLoseIt(n) => {
                    let len = model.len();
                    let batch = model.batch(n);
                    let [commits, part] = commit_files(dir.path(), len);
                    let anchored = store.as_ref().unwrap().commit_anchored(&batch).unwrap();
                    prop_assert_eq!(anchored, fits_an_anchor(&batch));
                    drop(store.take());
                    if !anchored {
                        // Acknowledged by the anchor written after it:
                        // nothing of it may be lost.
                    } else if len / 256 == (len + n) / 256 {
                        // The bundle and the commit record never reached
                        // the disk; the anchor did.
                        cut(&commits.0, commits.1);
                        cut(&part.0, part.1);
                    } else {
                        // The batch filled its bundle, acknowledged by its
                        // slot alone too: the rename, the bundle's new
                        // bytes, the next bundle's bytes and the commit
                        // record never reached the disk (the next bundle's
                        // file was prepared ahead, its name durable).
                        let full = dir
                            .path()
                            .join("tiles")
                            .join(tiles::bundle_path(len / 256));
                        std::fs::rename(&full, &part.0).unwrap();
                        cut(&part.0, part.1);
                        let next = dir
                            .path()
                            .join("tiles")
                            .join(format!("{}.part", tiles::bundle_path(len / 256 + 1)));
                        cut(&next, Some(0));
                        cut(&commits.0, commits.1);
                    }
                    store = Some(open(dir.path()));
                }
                Op::LoseDerived(which) => {
                    drop(store.take());
                    let tiles = dir.path().join("tiles");
                    match which {
                        0 => std::fs::remove_file(tiles.join("statements.idx")).unwrap(),
                        1 => std::fs::write(tiles.join("checkpoints.idx"), b"garbage").unwrap(),
                        2 => std::fs::remove_file(tiles.join("partial")).unwrap(),
                        3 => forge_partial(&tiles.join("partial")),
                        _ => {
                            let first = tiles.join(tiles::hash_tile_path(0, 0));
                            let _ = std::fs::remove_file(first);
                        }
                    }
                    store = Some(open(dir.path()));
                }
            }
            check(store.as_ref().unwrap(), &model, probe);
        }
        // And once more from a cold open.
        drop(store.take());
        check(&open(dir.path()), &model, probe.rotate_left(17));
    }
}

#[test]
fn bundles_hold_the_events_as_c2sp_entries_and_stand_ins_for_large_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    store.commit(&model.batch(300)).unwrap();
    drop(store);
    // Bundle 0 is full: 256 entries `u16be(len) || entry`.
    let bytes = std::fs::read(dir.path().join("tiles/tile/entries/000")).unwrap();
    let entries = tiles::parse_bundle(&bytes).unwrap();
    assert_eq!(entries.len(), 256);
    for (seq, entry) in entries.iter().enumerate() {
        let e = event(seq as u64);
        if e.len() > tiles::MAX_INLINE_ENTRY {
            assert_eq!(
                *entry,
                tiles::oversized_entry(&e).as_slice(),
                "stand-in {seq}"
            );
            let large = std::fs::read(dir.path().join(format!("tiles/large/{seq}"))).unwrap();
            assert_eq!(large, e);
        } else {
            assert_eq!(*entry, e.as_slice(), "entry {seq}");
        }
    }
    // Hash tile 0/000 holds the 256 leaf hashes; the rest is open.
    let tile = std::fs::read(dir.path().join("tiles/tile/0/000")).unwrap();
    assert_eq!(tile.len(), 256 * 32);
    for i in 0..256u64 {
        let at = i as usize * 32;
        assert_eq!(&tile[at..at + 32], &model.tree.node(0, i).unwrap());
    }
    assert!(dir.path().join("tiles/tile/entries/001.part").is_file());
    assert!(!dir.path().join("tiles/tile/0/001").exists());
}

#[test]
fn a_large_event_whose_file_was_changed_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    store.commit(&model.batch(20)).unwrap();
    drop(store);
    let path = dir.path().join("tiles/large/13");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[500] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let store = open(dir.path());
    let err = store.event_bytes(13).unwrap_err().to_string();
    assert!(err.contains("tiles/large/13"), "{err}");
    assert_eq!(store.event_bytes(12).unwrap(), Some(event(12)));
}

#[test]
fn a_second_open_of_the_same_store_is_refused_while_the_first_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let err = TileStore::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("could not acquire lock"), "{err}");
    drop(store);
    open(dir.path());
}

#[test]
fn a_commit_record_whose_events_are_missing_is_not_the_length() {
    // Given a commit whose record reached the disk but whose bundle bytes
    // did not (they are synced side by side),
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    store.commit(&model.batch(10)).unwrap();
    store.commit(&model.batch(5)).unwrap();
    drop(store);
    let part = dir.path().join("tiles/tile/entries/000.part");
    let (_, offset, _) = TileStore::locate_entry(dir.path(), 12).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&part)
        .unwrap()
        .set_len(offset - 2)
        .unwrap();
    // when the store opens, then its length is the previous commit's, and
    // the next commit continues from there.
    let store = open(dir.path());
    assert_eq!(store.len().unwrap(), 10);
    let mut model = Model::new();
    model.batch(10);
    store.commit(&model.batch(30)).unwrap();
    check(&store, &model, 3);
    drop(store);
    check(&open(dir.path()), &model, 11);
}

/// `(path, length)` of the commit log and of an open bundle.
type CommitFiles = [(std::path::PathBuf, Option<u64>); 2];

/// `(commit log, open bundle)` lengths of the store in `dir` at `len`
/// events, to cut back to.
fn commit_files(dir: &Path, len: u64) -> CommitFiles {
    let commits = dir.join("tiles/commits");
    let part = dir
        .join("tiles")
        .join(format!("{}.part", tiles::bundle_path(len / 256)));
    [
        (commits.clone(), file_len(&commits)),
        (part.clone(), file_len(&part)),
    ]
}

/// How long the store's fdatasyncs are held back in tests that stop it
/// while its background round has not finished (a slow disk), so that the
/// anchor ring's durable mark stays where the test needs it.
const HOLD_BACK: std::time::Duration = std::time::Duration::from_millis(300);

/// A store holding `first`, then `anchored` committed with their anchor
/// (each fits a slot), then a stop after the last anchor's fdatasync and
/// before any of those commits' bundle or commit-log bytes were durable:
/// the files are cut back to `first`.
fn lose_anchored_commits(dir: &Path, first: &CommitBatch, anchored: &[&CommitBatch]) {
    let store = create(dir);
    store.commit(first).unwrap();
    store.hold_back_syncs(HOLD_BACK);
    let before = commit_files(dir, first.events.len() as u64);
    for batch in anchored {
        assert!(store.commit_anchored(batch).unwrap());
    }
    drop(store);
    for (path, len) in &before {
        cut(path, *len);
    }
}

/// A model of ten events, then commits of three and two small ones: the
/// batches of the three commits.
fn ten_then_three_and_two() -> (Model, CommitBatch, CommitBatch, CommitBatch) {
    let mut model = Model::new();
    let first = model.batch(10);
    let older = model.batch_of(3, small_event);
    let newer = model.batch_of(2, small_event);
    (model, first, older, newer)
}

/// The store holds `len` events: `model`'s, small ones from 10 on, with
/// `model`'s root.
fn holds_small_events_up_to(store: &TileStore, model: &Model, len: u64) {
    assert_eq!(store.len().unwrap(), len);
    let got: Vec<Vec<u8>> = store
        .event_range(10, len)
        .unwrap()
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    assert_eq!(got, (10..len).map(small_event).collect::<Vec<_>>());
    assert_eq!(
        merkle::root_at(store, len).unwrap(),
        merkle::root_at(&model.tree, len).unwrap()
    );
}

/// Overwrites `n` bytes of `path` at `at` with zeros (pages written back
/// as zeros before a power cut).
fn zero_at(path: &Path, at: u64, n: usize) {
    use std::os::unix::fs::FileExt as _;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&vec![0; n], at).unwrap();
}

/// The store holds `model`'s events 0..15 (ten, then two anchored commits
/// of three and two small events) with their root and statements.
fn holds_the_fifteen(store: &TileStore, model: &Model) {
    holds_small_events_up_to(store, model, 15);
    for seq in [10, 12, 14] {
        assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
    }
}

#[test]
fn the_last_two_anchored_commits_lost_by_the_store_are_committed_again() {
    // Given two commits acknowledged by their anchor slots alone, of which
    // the store lost both (the older one's fdatasyncs were still running
    // when the newer one was anchored),
    let dir = tempfile::tempdir().unwrap();
    let (model, first, older, newer) = ten_then_three_and_two();
    lose_anchored_commits(dir.path(), &first, &[&older, &newer]);
    // when the store opens, then it commits both again from the two slots.
    let store = open(dir.path());
    assert_eq!(store.anchor().unwrap(), newer.checkpoint.map(|c| c.1));
    holds_the_fifteen(&store, &model);
    drop(store);
    holds_the_fifteen(&open(dir.path()), &model);
}

#[test]
fn of_two_anchored_commits_only_the_one_the_store_lost_is_committed_again() {
    // Given two commits acknowledged by their anchor slots alone, of which
    // the store holds the older intact and lost the newer,
    let dir = tempfile::tempdir().unwrap();
    let (model, first, older, newer) = ten_then_three_and_two();
    let store = create(dir.path());
    store.commit(&first).unwrap();
    assert!(store.commit_anchored(&older).unwrap());
    let before = commit_files(dir.path(), 13);
    assert!(store.commit_anchored(&newer).unwrap());
    drop(store);
    for (path, len) in &before {
        cut(path, *len);
    }
    // when the store opens, then it commits the newer again after the
    // older (whether it keeps the older's bytes or cuts back and rewrites
    // them, the store ends the same: only the result is checked here).
    let store = open(dir.path());
    holds_the_fifteen(&store, &model);
    let [(commits, Some(commits_len)), _] = commit_files(dir.path(), 15) else {
        panic!("a commit log");
    };
    assert!(commits_len > before[0].1.unwrap(), "{}", commits.display());
    drop(store);
    assert_eq!(open(dir.path()).len().unwrap(), 15);
}

#[test]
fn anchored_commits_the_store_holds_torn_are_cut_back_and_committed_again() {
    // Given two commits acknowledged by their anchor slots alone, whose
    // bundle bytes and commit record reached the disk torn in the middle
    // (pages written back out of order before a power cut: the older
    // commit's record and an entry of it are zeros, the newer intact),
    let dir = tempfile::tempdir().unwrap();
    let (model, first, older, newer) = ten_then_three_and_two();
    let store = create(dir.path());
    store.commit(&first).unwrap();
    let [(commits, Some(commits_at)), (part, Some(part_at))] = commit_files(dir.path(), 10) else {
        panic!("the first commit wrote both files");
    };
    store.hold_back_syncs(HOLD_BACK);
    assert!(store.commit_anchored(&older).unwrap());
    assert!(store.commit_anchored(&newer).unwrap());
    drop(store);
    zero_at(&commits, commits_at + 4, 40);
    zero_at(&part, part_at + 2, 4);
    // when the store opens, then it cuts back to where the anchored
    // commits begin and commits both again from the two slots.
    let store = open(dir.path());
    holds_the_fifteen(&store, &model);
    assert_eq!(store.anchor().unwrap(), newer.checkpoint.map(|c| c.1));
}

#[test]
fn an_anchor_ahead_of_the_store_by_more_than_its_ring_is_not_redone() {
    // Given nine commits anchored with their events, of which the store
    // lost all nine (the oldest one's slot was overwritten: a store that
    // lost what was durable before the ring's eight commits),
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let first = model.batch(10);
    let lost: Vec<CommitBatch> = (0..9).map(|_| model.batch_of(1, small_event)).collect();
    let last = lost.last().unwrap();
    lose_anchored_commits(dir.path(), &first, &lost.iter().collect::<Vec<_>>());
    // when the store opens, then it holds what survived and nothing more:
    // the anchor, still at 19, is for the ledger's check to report.
    let store = open(dir.path());
    assert_eq!(store.len().unwrap(), 10);
    assert_eq!(
        store.anchor().unwrap(),
        last.checkpoint.clone().map(|c| c.1)
    );
}

#[test]
fn the_ring_commits_again_all_eight_anchored_commits_the_store_lost() {
    // Given eight commits acknowledged by their anchor slots alone, of
    // different sizes, none of which reached the store's files durably,
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let first = model.batch(10);
    let lost: Vec<CommitBatch> = (1..=8).map(|n| model.batch_of(n, small_event)).collect();
    lose_anchored_commits(dir.path(), &first, &lost.iter().collect::<Vec<_>>());
    // when the store opens, then it commits all eight again, in order, with
    // their statements and checkpoints, and so after another reopen.
    for _ in 0..2 {
        let store = open(dir.path());
        holds_small_events_up_to(&store, &model, 46);
        for batch in &lost {
            let (seq, _) = batch.events[0];
            assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
            let (size, note) = batch.checkpoint.clone().unwrap();
            assert_eq!(store.checkpoint(Some(size)).unwrap(), Some((size, note)));
        }
    }
}

#[test]
fn a_store_holding_the_ring_torn_midway_keeps_what_is_intact_and_redoes_the_rest() {
    // Given four commits acknowledged by their anchor slots alone, of which
    // the store's files hold the first two intact and the third torn (a
    // page of its bundle bytes written back as zeros before a power cut),
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let first = model.batch(10);
    let ring: Vec<CommitBatch> = (0..4).map(|_| model.batch_of(2, small_event)).collect();
    let store = create(dir.path());
    store.commit(&first).unwrap();
    store.hold_back_syncs(HOLD_BACK);
    for batch in &ring[..2] {
        assert!(store.commit_anchored(batch).unwrap());
    }
    let [(commits, Some(commits_at)), (part, Some(part_at))] = commit_files(dir.path(), 14) else {
        panic!("the commits wrote both files");
    };
    for batch in &ring[2..] {
        assert!(store.commit_anchored(batch).unwrap());
    }
    drop(store);
    zero_at(&part, part_at + 2, 4);
    let intact_commits = std::fs::read(&commits).unwrap()[..commits_at as usize].to_vec();
    // when the store opens, then it cuts back to the end of the second
    // commit (the commit log keeps its first three records), and commits
    // the third and fourth again from the ring.
    let store = open(dir.path());
    holds_small_events_up_to(&store, &model, 18);
    assert_eq!(
        std::fs::read(&commits).unwrap()[..commits_at as usize],
        intact_commits[..],
        "the intact records were kept"
    );
    drop(store);
    assert_eq!(open(dir.path()).len().unwrap(), 18);
}

#[test]
fn an_anchored_commit_whose_events_do_not_give_its_root_is_not_redone() {
    // Given a commit anchored with a checkpoint whose root is not its
    // events' root, lost by the store,
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let first = model.batch(4);
    let mut batch = model.batch_of(2, small_event);
    batch.checkpoint = Some((6, note(6, [0x5a; 32])));
    lose_anchored_commits(dir.path(), &first, &[&batch]);
    // when the store opens, then it does not commit them again.
    let store = open(dir.path());
    assert_eq!(store.len().unwrap(), 4);
}

#[test]
fn an_anchored_commit_the_store_lost_is_committed_again_from_the_anchor() {
    // Given a commit anchored with its events, which the store lost (the
    // stop came after the anchor's fdatasync, before the bundle's and the
    // commit log's),
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let first = model.batch(4);
    let batch = model.batch_of(2, small_event);
    lose_anchored_commits(dir.path(), &first, &[&batch]);
    // when the store opens, then it holds them once, at their places, with
    // their statements and checkpoint, and so after another reopen.
    let store = open(dir.path());
    assert_eq!(store.len().unwrap(), 6);
    assert_eq!(store.event_bytes(5).unwrap(), Some(small_event(5)));
    assert_eq!(store.statement_seq(&digest(5)).unwrap(), Some(5));
    assert_eq!(store.checkpoint(Some(6)).unwrap(), batch.checkpoint);
    drop(store);
    assert_eq!(open(dir.path()).len().unwrap(), 6);
}

#[test]
fn a_log_past_one_full_level_one_tile_proves_like_a_tree_in_memory() {
    // 66,000 events: 257 full bundles and one full tile of level 1 (the
    // nodes of tree level 8 for the first 65,536 leaves), reopened.
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let (mut frontier, mut tree) = (Frontier::new(), MemoryTree::new());
    let n = 66_000u64;
    let mut seq = 0;
    while seq < n {
        let mut b = CommitBatch::default();
        for s in seq..(seq + 4096).min(n) {
            let bytes = small_event(s);
            let leaf = merkle::leaf_hash(&bytes);
            tree.push(leaf);
            b.nodes.extend(frontier.push(leaf));
            b.statements.push((digest(s), s));
            b.events.push((s, bytes));
        }
        seq = tree.len();
        b.checkpoint = Some((seq, note(seq, tree.root())));
        store.commit(&b).unwrap();
    }
    drop(store);
    assert!(dir.path().join("tiles/tile/1/000").is_file());
    let store = open(dir.path());
    for size in [n, 65_536, 65_535, 256, 1] {
        assert_eq!(
            merkle::root_at(&store, size).unwrap(),
            merkle::root_at(&tree, size).unwrap()
        );
    }
    for i in [0, 255, 256, 65_535, 65_536, 65_999] {
        assert_eq!(
            merkle::inclusion_proof(&store, i, n).unwrap(),
            merkle::inclusion_proof(&tree, i, n).unwrap(),
            "inclusion of {i}"
        );
    }
    assert_eq!(
        merkle::consistency_proof(&store, 65_537, n).unwrap(),
        merkle::consistency_proof(&tree, 65_537, n).unwrap()
    );
    // Every node of level 8 (a level-1 tile hash) and one above it.
    for i in 0..(n >> 8) {
        assert_eq!(
            store.node(8, i).unwrap(),
            tree.node(8, i).unwrap(),
            "node 8/{i}"
        );
    }
    assert_eq!(store.node(16, 0).unwrap(), tree.node(16, 0).unwrap());
    // The statement index grew twice on the way (16,384 → 65,536 → 262,144
    // slots): every statement is still found, and no other.
    for s in (0..n).step_by(7) {
        assert_eq!(
            store.statement_seq(&digest(s)).unwrap(),
            Some(s),
            "statement {s}"
        );
    }
    assert_eq!(store.statement_seq(&digest(n + 1)).unwrap(), None);
    assert_eq!(
        std::fs::metadata(dir.path().join("tiles/statements.idx"))
            .unwrap()
            .len(),
        index_file_len(1 << 18)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// What `fuzz/fuzz_targets/tile_store_open.rs` does, in CI: arbitrary
    /// bytes spliced into a real store's commit log, open bundle, partial
    /// tiles, index or anchor (also with the last commit held only by the
    /// anchor) never panic the open or the reads; and whenever the store's tree has
    /// the root the log signed at its length (the check the log above makes
    /// against its anchor), every event reads back as written.
    #[test]
    fn damaged_files_never_panic_the_open(
        cut in 0usize..4000,
        junk in proptest::collection::vec(any::<u8>(), 0..200),
        at in any::<prop::sample::Index>(),
        which in 0u8..6,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = create(dir.path());
        let mut model = Model::new();
        // The last two batches fit the anchor, which carries them as its
        // redo (FORMAT.md §9).
        for n in [5u64, 30, 7] {
            store.commit_anchored(&model.batch(n)).unwrap();
        }
        let before_last = commit_files(dir.path(), 42);
        prop_assert!(store.commit_anchored(&model.batch(2)).unwrap());
        drop(store);
        if which == 5 {
            // The last commit lost by the store; only the (damaged) anchor
            // holds it.
            for (path, len) in &before_last {
                crate::cut(path, *len);
            }
        }
        let path = dir.path().join(match which {
            0 => "tiles/commits",
            1 => "tiles/tile/entries/000.part",
            2 => "tiles/partial",
            3 => "tiles/statements.idx",
            _ => "anchor",
        });
        let mut bytes = std::fs::read(&path).unwrap();
        let cut = cut.min(bytes.len());
        bytes.truncate(bytes.len() - cut);
        if !bytes.is_empty() {
            let i = at.index(bytes.len());
            let end = (i + junk.len()).min(bytes.len());
            bytes[i..end].copy_from_slice(&junk[..end - i]);
        }
        std::fs::write(&path, bytes).unwrap();
        if let Ok(store) = TileStore::open(dir.path()) {
            let len = store.len().unwrap();
            prop_assert!(len <= 44);
            let _ = store.statement_seq(&digest(3));
            let _ = store.checkpoint(Some(len));
            let signed = len > 0
                && merkle::root_at(&store, len).ok() == merkle::root_at(&model.tree, len).ok();
            if signed && let Ok(events) = store.event_range(0, len) {
                for (seq, bytes) in events {
                    prop_assert_eq!(bytes, event(seq));
                }
            }
        }
    }
}

#[test]
fn a_torn_bundle_tail_is_cut_even_when_checkpoints_are_written_first() {
    // Given a store reopened over a commit that never returned (entries
    // past the open bundle's end),
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    store.commit(&model.batch(100)).unwrap();
    drop(store);
    let part = dir.path().join("tiles/tile/entries/000.part");
    append_garbage(&part, &vec![0x01; 200_000]);
    let store = open(dir.path());
    // when copied checkpoints land first and then commits fill the bundle,
    store.put_checkpoints(&[(50, "note\n50\n".into())]).unwrap();
    store.commit(&model.batch(200)).unwrap();
    drop(store);
    // then the full bundle holds exactly its 256 events, and all reads back.
    let bytes = std::fs::read(dir.path().join("tiles/tile/entries/000")).unwrap();
    assert_eq!(tiles::parse_bundle(&bytes).unwrap().len(), 256);
    let store = open(dir.path());
    check(&store, &model, 77);
    assert_eq!(store.checkpoint(Some(50)).unwrap().map(|c| c.0), Some(50));
}

/// A closed store of 3 full bundles and a part (three hashes of level 1).
fn closed_store_of_830_events() -> (tempfile::TempDir, Model) {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    for n in [300u64, 400, 130] {
        store.commit(&model.batch(n)).unwrap();
    }
    drop(store);
    (dir, model)
}

#[test]
fn an_open_takes_the_upper_partial_tiles_from_their_file_without_reading_full_tiles() {
    // Given a store of 3 full bundles and a part (three hashes of level 1),
    let (dir, model) = closed_store_of_830_events();
    // when a full level-0 tile is gone before the open,
    let lost = dir.path().join("tiles").join(tiles::hash_tile_path(0, 1));
    std::fs::remove_file(&lost).unwrap();
    let store = open(dir.path());
    // then the open did not need it (the partial tiles came from
    // `tiles/partial`, proved by the checkpoint's root) and every read
    // still agrees with the model (the tile is recomputed when a proof
    // needs it).
    assert!(!lost.exists(), "the open read full tiles it did not need");
    check(&store, &model, 5);
    assert!(lost.exists());
}

#[test]
fn a_forged_partial_tiles_file_is_recomputed_not_trusted() {
    // Given a store whose `tiles/partial` has one hash changed under a
    // valid check,
    let (dir, model) = closed_store_of_830_events();
    let partial = dir.path().join("tiles/partial");
    let before = std::fs::read(&partial).unwrap();
    forge_partial(&partial);
    assert_ne!(std::fs::read(&partial).unwrap(), before);
    // when it opens, then the roots and proofs are the model's, and the
    // file is written again as it was.
    let store = open(dir.path());
    for probe in [0, 255, 256, 700, 829] {
        check(&store, &model, probe);
    }
    assert_eq!(std::fs::read(&partial).unwrap(), before);
}

/// The synced watermark of a derived index: the commit-log offset up to
/// which it holds every record (header: magic, capacity, count, watermark).
/// The length of a derived index of `capacity` slots (FORMAT §11: a 4 KiB
/// header, then 4 KiB pages of 255 slots).
fn index_file_len(capacity: u64) -> u64 {
    4096 + 4096 * capacity.div_ceil(255)
}

fn index_watermark(dir: &Path, name: &str) -> u64 {
    let b = std::fs::read(dir.join("tiles").join(name)).unwrap();
    u64::from_be_bytes(b[24..32].try_into().unwrap())
}

/// Commits one event at a time (made by `event`) until the store refuses
/// one, for at most about ten seconds; returns the refusal. A refused batch
/// does not advance `model` (it is tried on a copy).
fn commit_until_refused(
    store: &TileStore,
    model: &mut Model,
    event: fn(u64) -> Vec<u8>,
) -> Option<LogError> {
    for _ in 0..2_000 {
        let mut trial = model.clone();
        match store.commit(&trial.batch_of(1, event)) {
            Ok(()) => *model = trial,
            Err(e) => return Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    None
}

#[test]
fn what_a_commit_queues_for_the_derived_thread_is_readable_at_once_and_on_disk_after_close() {
    // Given a store, when commits complete two full tiles and are read
    // straight away (the derived-data thread may not have written the
    // tiles or inserted the statements yet),
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    for n in [200u64, 150, 170] {
        store.commit(&model.batch(n)).unwrap();
        for probe in [0, 199, 255, 256, 400, 519] {
            check(&store, &model, probe);
        }
        for seq in 0..model.len() {
            assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
            assert_eq!(
                store.checkpoint(Some(model.len())).unwrap().map(|c| c.0),
                Some(model.len())
            );
        }
    }
    // then everything reads as the model, and once closed the tiles are
    // files and the indexes are synced up to the end of the commit log
    // (the next open re-indexes nothing).
    drop(store);
    for tile in [0, 1] {
        let path = dir
            .path()
            .join("tiles")
            .join(tiles::hash_tile_path(0, tile));
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            256 * 32,
            "{}",
            path.display()
        );
    }
    let end = std::fs::metadata(dir.path().join("tiles/commits"))
        .unwrap()
        .len();
    assert_eq!(index_watermark(dir.path(), "statements.idx"), end);
    assert_eq!(index_watermark(dir.path(), "checkpoints.idx"), end);
    let store = open(dir.path());
    check(&store, &model, 300);
}

#[test]
fn lookups_go_on_while_the_derived_thread_grows_and_syncs_the_statement_index() {
    // Given a store, and a reader looking up committed statements all along,
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    let committed = std::sync::atomic::AtomicU64::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let lookups = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut lookups = 0u64;
            let mut probe = 1u64;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let len = committed.load(std::sync::atomic::Ordering::Acquire);
                if len > 0 {
                    probe = probe
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    let seq = (probe >> 11) % len;
                    assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
                    lookups += 1;
                }
            }
            lookups
        });
        // when 70,000 statements are committed (the statement index grows
        // twice, from 16,384 slots to 262,144, each time while the reader
        // reads, and is synced once 65,536 events are in),
        for _ in 0..14 {
            store.commit(&model.batch_of(5_000, small_event)).unwrap();
            committed.store(model.len(), std::sync::atomic::Ordering::Release);
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        reader.join().unwrap()
    });
    assert!(lookups > 0);
    // then every statement is found, the index has grown, and its synced
    // watermark moves on while the store is open (the thread syncs it with
    // no close),
    for seq in (0..model.len()).step_by(7) {
        assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
    }
    // (The growth is the derived thread's: on a loaded machine it may
    // still be under way when the commits return.)
    let index = dir.path().join("tiles/statements.idx");
    let waited = std::time::Instant::now();
    while std::fs::metadata(&index).unwrap().len() != index_file_len(262_144)
        && waited.elapsed() < std::time::Duration::from_secs(120)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        std::fs::metadata(&index).unwrap().len(),
        index_file_len(262_144)
    );
    while index_watermark(dir.path(), "statements.idx") == 0 {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(120),
            "never synced"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // and after a reopen every statement is still found.
    drop(store);
    let store = open(dir.path());
    for seq in (0..model.len()).step_by(7) {
        assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// FORMAT §11's promise for the derived indexes: whatever bytes land in
    /// a statement index's pages (its header intact), a lookup answers the
    /// statement's own sequence number or reports damage, never "absent"
    /// and never another number.
    #[test]
    fn bytes_spliced_into_the_statement_index_never_give_a_wrong_answer(
        junk in proptest::collection::vec(any::<u8>(), 1..48),
        at in any::<prop::sample::Index>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = create(dir.path());
        let mut model = Model::new();
        store.commit(&model.batch_of(600, small_event)).unwrap();
        drop(store);
        let index = dir.path().join("tiles/statements.idx");
        let len = std::fs::metadata(&index).unwrap().len();
        let at = 4096 + at.index((len - 4096) as usize) as u64;
        let junk = &junk[..junk.len().min((len - at) as usize)];
        let file = std::fs::OpenOptions::new().write(true).open(&index).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, junk, at).unwrap();
        drop(file);
        let store = open(dir.path());
        for seq in 0..model.len() {
            if let Ok(found) = store.statement_seq(&digest(seq)) {
                prop_assert_eq!(found, Some(seq), "statement {}", seq);
            }
        }
        if let Ok(found) = store.statement_seq(&digest(10_000)) {
            prop_assert_eq!(found, None);
        }
    }
}

#[test]
fn a_damaged_statement_index_page_is_damage_not_a_new_statement_and_a_reopen_rebuilds_it() {
    // Given a closed store of 3,000 statements,
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    store.commit(&model.batch_of(3_000, small_event)).unwrap();
    drop(store);
    // when a page of its statement index is zeroed (the keys there would
    // look absent, so their statements would look new),
    let index = dir.path().join("tiles/statements.idx");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &[0u8; 4096], 4096 + 4096 * 3).unwrap();
    drop(file);
    // then a lookup that reads the page is damage naming it, never "new",
    let store = open(dir.path());
    let mut damaged = None;
    for seq in 0..model.len() {
        match store.statement_seq(&digest(seq)) {
            Ok(found) => assert_eq!(found, Some(seq), "statement {seq}"),
            Err(e) => {
                damaged = Some(e);
                break;
            }
        }
    }
    let e = damaged.expect("some statement's probe reads page 3");
    assert!(matches!(e, LogError::Corrupt { .. }), "{e:?}");
    assert!(e.to_string().contains("statements.idx page 3"), "{e}");
    // no commit goes on (it could not tell a repeated statement),
    assert!(
        store
            .commit(&model.clone().batch_of(1, small_event))
            .is_err()
    );
    assert_eq!(store.len().unwrap(), model.len());
    // and a reopen rebuilds the index from the commit log: every statement
    // is found, and commits go on.
    drop(store);
    let store = open(dir.path());
    for seq in 0..model.len() {
        assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
    }
    store.commit(&model.batch_of(1, small_event)).unwrap();
    assert_eq!(store.len().unwrap(), model.len());
}

#[test]
fn a_tile_the_derived_thread_cannot_write_stops_later_commits_and_stays_readable() {
    // Given a store whose level-0 tile directory cannot be made (a file
    // has its name),
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    store.commit(&model.batch(200)).unwrap();
    let blocker = dir.path().join("tiles/tile/0");
    std::fs::write(&blocker, b"not a directory").unwrap();
    // when a commit completes tile 0 (it returns: its events are durable),
    store.commit(&model.batch(100)).unwrap();
    // then the tile is still served from memory,
    check(&store, &model, 10);
    // and once the thread has failed, every later commit is refused with
    // the I/O error, naming the file (fail-stop), and nothing is added.
    let e = commit_until_refused(&store, &mut model, event)
        .expect("a commit after the failed tile write is refused");
    assert!(matches!(e, LogError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("tile/0"), "{e}");
    assert!(store.commit(&model.clone().batch(1)).is_err());
    assert_eq!(store.len().unwrap(), model.len());
    check(&store, &model, 20);
    // And after the cause is removed, a reopen recomputes the tile.
    drop(store);
    std::fs::remove_file(&blocker).unwrap();
    let store = open(dir.path());
    check(&store, &model, 30);
    assert!(
        dir.path()
            .join("tiles")
            .join(tiles::hash_tile_path(0, 0))
            .exists()
    );
}

#[test]
fn an_index_growth_that_fails_stops_later_commits_and_every_statement_stays_findable() {
    // Given a store whose statement index cannot grow (a directory has the
    // name of the table it would build),
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut model = Model::new();
    std::fs::create_dir(dir.path().join("tiles/statements.idx.grow")).unwrap();
    // when commits take the index past half of its 16,384 slots (they
    // return: their events are durable; the growth happens after, on the
    // derived-data thread),
    store.commit(&model.batch_of(5_000, small_event)).unwrap();
    store.commit(&model.batch_of(5_000, small_event)).unwrap();
    // then once the thread has failed, every later commit is refused with
    // the I/O error, naming the file (fail-stop), and nothing is added,
    let e = commit_until_refused(&store, &mut model, small_event)
        .expect("a commit after the failed growth is refused");
    assert!(matches!(e, LogError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("statements.idx.grow"), "{e}");
    assert_eq!(store.len().unwrap(), model.len());
    // every statement is still found (the record that could not be
    // inserted is still queued),
    for seq in 0..model.len() {
        assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
    }
    // and after the cause is removed a reopen catches the index up.
    drop(store);
    std::fs::remove_dir(dir.path().join("tiles/statements.idx.grow")).unwrap();
    let store = open(dir.path());
    for seq in 0..model.len() {
        assert_eq!(store.statement_seq(&digest(seq)).unwrap(), Some(seq));
    }
    store.commit(&model.batch_of(1, small_event)).unwrap();
}

#[test]
fn damage_before_the_rings_durable_mark_is_left_for_the_check_never_redone() {
    // Given a commit anchored with its events, the store then made durable
    // (closed and reopened), and a second commit anchored with its events
    // (its slot records the store durable up to 13),
    let dir = tempfile::tempdir().unwrap();
    let (_, first, older, newer) = ten_then_three_and_two();
    let store = create(dir.path());
    store.commit(&first).unwrap();
    assert!(store.commit_anchored(&older).unwrap());
    drop(store);
    let store = open(dir.path());
    assert!(store.commit_anchored(&newer).unwrap());
    drop(store);
    // when a byte of event 11 (the older commit's, durable) is changed on
    // disk,
    let (path, offset, _) = TileStore::locate_entry(dir.path(), 11).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offset as usize + 3] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let damaged = bytes[offset as usize..offset as usize + small_event(11).len()].to_vec();
    // then the open does not rewrite it from the ring (that commit ends at
    // the durable mark): the store keeps the damaged bytes for the log's
    // check to report, and holds all fifteen events.
    let store = open(dir.path());
    assert_eq!(store.len().unwrap(), 15);
    assert_eq!(store.event_bytes(11).unwrap(), Some(damaged));
    assert_ne!(store.event_bytes(11).unwrap(), Some(small_event(11)));
    assert_eq!(store.event_bytes(14).unwrap(), Some(small_event(14)));
}

/// A store holding 250 small events (a commit on the fully synced path),
/// then, with the store's syncs held back, two commits of four small
/// events acknowledged by their anchor slots alone, the second of which
/// fills bundle 0 (renamed to its full name) and opens bundle 1: the
/// model, the bundle files' paths `(000, 000.part, 001.part)` and the commit
/// files as they were at 250 events.
fn fill_bundle_zero_by_anchored_commits(
    dir: &Path,
) -> (Model, [std::path::PathBuf; 3], CommitFiles) {
    let mut model = Model::new();
    let first = model.batch_of(250, small_event);
    let ring = [
        model.batch_of(4, small_event),
        model.batch_of(4, small_event),
    ];
    let store = create(dir);
    store.commit(&first).unwrap();
    let before = commit_files(dir, 250);
    store.hold_back_syncs(HOLD_BACK);
    for batch in &ring {
        assert!(store.commit_anchored(batch).unwrap());
    }
    let entries = dir.join("tiles/tile/entries");
    let paths = [
        entries.join("000"),
        entries.join("000.part"),
        entries.join("001.part"),
    ];
    assert!(paths[0].is_file() && !paths[1].exists() && paths[2].is_file());
    drop(store);
    (model, paths, before)
}

#[test]
fn a_commit_filling_a_bundle_acknowledged_by_its_slot_is_redone_when_the_store_lost_its_rename_and_bytes()
 {
    // Given a commit acknowledged by its anchor slot alone that filled
    // bundle 0 and began bundle 1, and a stop before the background round
    // that syncs them: the rename of 000.part to 000 did not reach the
    // disk, nor did the bytes of either bundle or the commit log since the
    // 250 events synced before,
    let dir = tempfile::tempdir().unwrap();
    let (model, [full, part, next], before) = fill_bundle_zero_by_anchored_commits(dir.path());
    std::fs::rename(&full, &part).unwrap();
    std::fs::remove_file(&next).unwrap();
    for (path, len) in &before {
        cut(path, *len);
    }
    // when the store opens, then it commits both anchored commits again
    // from the ring, bundle 0 under its full name, and so after a reopen.
    for _ in 0..2 {
        let store = open(dir.path());
        holds_small_events_up_to(&store, &model, 258);
        assert!(full.is_file() && !part.exists() && next.is_file());
    }
}

#[test]
fn a_full_bundle_whose_rename_did_not_reach_the_disk_is_renamed_at_open() {
    // Given a full bundle 0 whose bytes, and the commits after it, reached
    // the disk, but not its rename (it is still named 000.part),
    let dir = tempfile::tempdir().unwrap();
    let (model, [full, part, _], _) = fill_bundle_zero_by_anchored_commits(dir.path());
    std::fs::rename(&full, &part).unwrap();
    // when the store opens, then it holds every event and finishes the
    // rename.
    let store = open(dir.path());
    holds_small_events_up_to(&store, &model, 258);
    assert!(full.is_file() && !part.exists());
    assert_eq!(store.event_bytes(255).unwrap(), Some(small_event(255)));
}

#[test]
fn a_part_file_past_the_open_bundle_carries_no_events_and_is_emptied_before_use() {
    // Given a store of ten events whose next bundle's .part holds bytes (a
    // file prepared ahead, then written by a commit that never returned),
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let first = model.batch_of(10, small_event);
    create(dir.path()).commit(&first).unwrap();
    let next = dir.path().join("tiles/tile/entries/001.part");
    append_garbage(&next, &[0, 5, 1, 2, 3, 4, 5, 0, 3, 9, 9, 9]);
    // when the store opens and commits past the end of bundle 0, then the
    // stray bytes are neither events nor kept: bundle 1 holds exactly the
    // new events, and so after a reopen.
    let store = open(dir.path());
    assert_eq!(store.len().unwrap(), 10);
    let more = model.batch_of(300, small_event);
    store.commit(&more).unwrap();
    holds_small_events_up_to(&store, &model, 310);
    drop(store);
    let store = open(dir.path());
    holds_small_events_up_to(&store, &model, 310);
    let bundle_one = std::fs::read(&next).unwrap();
    let entries = tiles::parse_bundle(&bundle_one).unwrap();
    assert_eq!(entries.len(), 310 - 256);
    assert_eq!(entries[0], small_event(256).as_slice());
}

/// A store of `n` small events committed 4,096 at a time, closed.
fn store_of_small_events(dir: &Path, n: u64) {
    let store = create(dir);
    let mut model = Model::new();
    while model.len() < n {
        let k = (n - model.len()).min(4096);
        store.commit(&model.batch_of(k, small_event)).unwrap();
    }
}

/// Flips one bit of byte `at` of `path`.
fn flip(path: &Path, at: u64) {
    let mut b = std::fs::read(path).unwrap();
    b[at as usize] ^= 0x10;
    std::fs::write(path, b).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn check_structures_reports_damage_to_the_commit_log_and_upper_hash_tiles() {
    // Given a store past one full level-1 hash tile,
    let pristine = tempfile::tempdir().unwrap();
    let n = 66_000u64;
    store_of_small_events(pristine.path(), n);
    let damaged = |damage: &dyn Fn(&Path)| {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(pristine.path(), dir.path());
        damage(dir.path());
        dir
    };
    // when it is undamaged, then nothing is found and every event's
    // statement digest is recorded by its position;
    let store = open(pristine.path());
    let report = store.check_structures(&|| true).unwrap().unwrap();
    assert!(report.damage.is_empty(), "{:?}", report.damage);
    assert_eq!(report.statements.len() as u64, n);
    for s in (0..n).step_by(997) {
        assert_eq!(report.statements[s as usize], Some(digest(s)), "seq {s}");
    }
    drop(store);

    // when one hash of the level-1 tile is flipped, then the tile and the
    // byte are named (the proofs through it would not verify);
    let dir = damaged(&|d| flip(&d.join("tiles/tile/1/000"), 32 * 5 + 3));
    let report = open(dir.path())
        .check_structures(&|| true)
        .unwrap()
        .unwrap();
    assert_eq!(report.damage.len(), 1, "{:?}", report.damage);
    assert_eq!(report.damage[0].0, "tiles/tile/1/000, byte 160");
    // and the level-0 tile it was compared with is named too (either may
    // be the damaged one).
    assert!(
        report.damage[0].1.contains("tiles/tile/0/005"),
        "{:?}",
        report.damage
    );

    // when a byte of a statement digest in the commit log is flipped, then
    // its record is named, and a lookup of that statement is an error
    // naming it, never "not in the log" (which would append it twice).
    let commits = std::fs::read(pristine.path().join("tiles/commits")).unwrap();
    let needle = digest(30_000);
    let at = commits
        .windows(32)
        .position(|w| w == needle)
        .expect("the digest is in the commit log") as u64;
    let dir = damaged(&|d| flip(&d.join("tiles/commits"), at + 20));
    let store = open(dir.path());
    let report = store.check_structures(&|| true).unwrap().unwrap();
    assert_eq!(report.damage.len(), 1, "{:?}", report.damage);
    assert!(
        report.damage[0].0.starts_with("tiles/commits, byte "),
        "{:?}",
        report.damage
    );
    match store.statement_seq(&needle) {
        Err(LogError::Corrupt { location, .. }) => {
            assert!(location.starts_with("tiles/commits, byte "), "{location}");
        }
        other => panic!("a lookup over a damaged commit record gave {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The files `docket recover` reads, as arbitrary bytes (a full entry
    /// bundle, its level-0 hash tile, the open bundle after it; no commit
    /// log): opening the store to salvage and reading what survives, past
    /// its length too, never panics, and what it yields is in order with
    /// each event's own sequence number. (The same body as the fuzz target
    /// `fuzz/fuzz_targets/tile_store_salvage.rs`, on proptest's inputs.)
    #[test]
    fn salvaging_arbitrary_files_never_panics(
        bundle in proptest::collection::vec(any::<u8>(), 0..3000),
        tile in proptest::collection::vec(any::<u8>(), 0..9000),
        open_bundle in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let dir = tempfile::tempdir().unwrap();
        drop(TileStore::create(dir.path()).unwrap());
        let root = dir.path().join("tiles");
        std::fs::remove_file(root.join("commits")).unwrap();
        std::fs::write(root.join("tile/entries/000"), &bundle).unwrap();
        std::fs::create_dir_all(root.join("tile/0")).unwrap();
        std::fs::write(root.join("tile/0/000"), &tile).unwrap();
        std::fs::write(root.join("tile/entries/001.part"), &open_bundle).unwrap();
        if let Ok(store) = TileStore::open_to_salvage(dir.path()) {
            let len = store.len().unwrap_or(0);
            if let Ok((events, _)) = store.salvage_range(0, len.min(600)) {
                prop_assert!(events.windows(2).all(|w| w[0].0 < w[1].0));
            }
            let _ = store.leaf_hashes(0, len.min(600));
            if let Ok(past) = store.salvage_past_len(600) {
                prop_assert!(past.events.windows(2).all(|w| w[0].0 < w[1].0));
                // (From the start of the bundle the length ends in.)
                let from = len / tiles::TILE_WIDTH * tiles::TILE_WIDTH;
                prop_assert!(past.events.iter().all(|(seq, _)| *seq >= from));
            }
        }
    }
}
