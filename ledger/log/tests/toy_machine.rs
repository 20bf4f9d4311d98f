//! The log core tested with a tiny state machine of its own: no domain type
//! in sight. Given/when/then cases for the seam (admission, fold, snapshots),
//! idempotency after signature checks, anchored open, and a model-based
//! property test with restarts.

use std::collections::BTreeMap;
use std::path::Path;

use docket_log::Layout;
use docket_log::event::Statement;
use docket_log::machine::{AdmitContext, StateMachine};
use docket_log::merkle;
use docket_log::store::{SledStore, Store};
use docket_log::tiles;
use docket_log::verify::{FindingKind, Trust, VerifyOptions, verify_log};
use docket_log::{Event, Log, LogError, LogOptions};
use ed25519_dalek::SigningKey;
use proptest::prelude::*;

/// A register of `name=value` pairs. Admission refuses the value `deny`
/// and payloads without `=`; the fold counts events per author.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Registers {
    values: BTreeMap<String, String>,
    events: u64,
}

impl StateMachine for Registers {
    type Admitted = ();

    fn admit(&self, statement: &Statement, _at: &AdmitContext) -> docket_log::Result<()> {
        let text = std::str::from_utf8(&statement.payload).map_err(|_| LogError::Invalid {
            what: "toy.set".into(),
            violations: vec!["payload is not UTF-8".into()],
        })?;
        match text.split_once('=') {
            Some((_, "deny")) => Err(LogError::FailedPrecondition("value deny refused".into())),
            Some(_) => Ok(()),
            None => Err(LogError::Invalid {
                what: "toy.set".into(),
                violations: vec!["payload must be name=value".into()],
            }),
        }
    }

    fn apply(&mut self, event: &Event) -> docket_log::Result<()> {
        let text = std::str::from_utf8(&event.payload)
            .map_err(|_| LogError::corrupt(format!("event {}", event.seq), "not UTF-8"))?;
        let (k, v) = text
            .split_once('=')
            .ok_or_else(|| LogError::corrupt(format!("event {}", event.seq), "no ="))?;
        self.values.insert(k.to_string(), v.to_string());
        self.events += 1;
        Ok(())
    }

    fn snapshot(&self) -> Vec<(&'static str, Vec<u8>)> {
        let values = self
            .values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("\n");
        vec![
            ("values", values.into_bytes()),
            ("count", self.events.to_string().into_bytes()),
        ]
    }

    fn restore(_seq: u64, parts: &[(String, Vec<u8>)]) -> docket_log::Result<Self> {
        let mut s = Registers::default();
        for (name, bytes) in parts {
            let text = std::str::from_utf8(bytes).map_err(|_| LogError::corrupt(name, "utf8"))?;
            match name.as_str() {
                "values" => {
                    for line in text.lines().filter(|l| !l.is_empty()) {
                        let (k, v) = line
                            .split_once('=')
                            .ok_or_else(|| LogError::corrupt(name, "line"))?;
                        s.values.insert(k.into(), v.into());
                    }
                }
                "count" => {
                    s.events = text.parse().map_err(|_| LogError::corrupt(name, "count"))?;
                }
                _ => return Err(LogError::corrupt(name, "unknown part")),
            }
        }
        Ok(s)
    }
}

type ToyLog = Log<Registers>;

fn author(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn set(name: &str, value: &str, key: &SigningKey) -> Statement {
    Statement::sign("toy.set", format!("{name}={value}").into_bytes(), key)
}

fn create(dir: &Path) -> ToyLog {
    ToyLog::create(dir, Some("toy.example/log"), LogOptions::default()).unwrap()
}

fn create_with(dir: &Path, layout: Layout) -> ToyLog {
    let options = LogOptions {
        layout,
        ..LogOptions::default()
    };
    ToyLog::create(dir, Some("toy.example/log"), options).unwrap()
}

const LAYOUTS: [Layout; 2] = [Layout::Tiles, Layout::Sled];

/// A closed log of `layout` holding `n` sets of `x` by author 1.
fn closed_log(layout: Layout, n: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let log = create_with(dir.path(), layout);
    let a = author(1);
    for i in 0..n {
        log.append(set("x", &i.to_string(), &a)).unwrap();
    }
    log.close().unwrap();
    dir
}

/// Damage done to a closed ledger's store behind its back, for either
/// layout (the byte formats are those of docs/FORMAT.md).
mod tamper {
    use super::*;

    fn locate(dir: &Path, seq: u64) -> (std::path::PathBuf, usize, usize) {
        let (path, offset, len) = tiles::TileStore::locate_entry(dir, seq).unwrap();
        (path, offset as usize, len)
    }

    /// Removes events `from..` (the log's tail) from the store.
    pub fn cut_tail(dir: &Path, from: u64) {
        if Layout::of(dir) == Layout::Sled {
            let store = SledStore::open(dir).unwrap();
            for seq in from..store.len().unwrap() {
                let mut k = vec![b'e'];
                k.extend_from_slice(&seq.to_be_bytes());
                store.raw_tree().remove(k).unwrap();
            }
            store.sync().unwrap();
            return;
        }
        let (path, at, _) = locate(dir, from);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len((at - 2) as u64).unwrap();
    }

    /// Flips one bit of event `seq`'s payload (70 bytes from its end).
    pub fn flip(dir: &Path, seq: u64) {
        if Layout::of(dir) == Layout::Sled {
            let store = SledStore::open(dir).unwrap();
            let mut bytes = store.event_bytes(seq).unwrap().unwrap();
            let n = bytes.len();
            bytes[n - 70] ^= 1;
            let mut k = vec![b'e'];
            k.extend_from_slice(&seq.to_be_bytes());
            store.raw_tree().insert(k, bytes).unwrap();
            store.sync().unwrap();
            return;
        }
        let (path, at, len) = locate(dir, seq);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at + len - 70] ^= 1;
        std::fs::write(&path, bytes).unwrap();
    }
}

fn open(dir: &Path) -> docket_log::Result<ToyLog> {
    ToyLog::open(dir, LogOptions::default())
}

fn verify(dir: &Path) -> docket_log::verify::VerifyReport {
    let (store, verifier) = docket_log::sequencer::open_store_for_verification(dir).unwrap();
    let (report, _) = verify_log::<Registers>(
        &store,
        Trust {
            checkpoints: &verifier,
            snapshots: &verifier.key,
        },
        VerifyOptions::full(),
        &mut |_, _| {},
    )
    .unwrap();
    report
}

/// Closes `log` and checks, with the one log verifier, that the ledger in
/// `dir` has no findings and is anchored at `size`.
fn close_and_verify(log: ToyLog, dir: &Path, size: u64) {
    log.close().unwrap();
    drop(log);
    let report = verify(dir);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.anchor_size, Some(size));
}

#[test]
fn given_appends_when_reopened_then_state_and_log_are_restored() {
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    let a = author(1);
    for i in 0..50 {
        log.append(set(&format!("r{}", i % 7), &i.to_string(), &a))
            .unwrap();
    }
    let state = log.state().clone();
    log.close().unwrap();
    drop(log);
    let log = open(dir.path()).unwrap();
    assert_eq!(log.len(), 50);
    assert_eq!(*log.state(), state);
    assert!(
        log.open_report().warnings.is_empty(),
        "{:?}",
        log.open_report()
    );
    close_and_verify(log, dir.path(), 50);
}

#[test]
fn given_an_acknowledged_append_only_the_anchor_holds_when_reopened_then_it_is_committed_again() {
    // Given a tile-store log whose appends come one at a time (each is
    // anchored with its commit, the anchor carrying the event), and whose
    // last acknowledged append then lost its bundle bytes and commit
    // record (a stop after the anchor's fdatasync, before the others'),
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    let a = author(1);
    for i in 0..20 {
        log.append(set("x", &i.to_string(), &a)).unwrap();
    }
    let files = ["tiles/commits", "tiles/tile/entries/000.part"].map(|f| {
        let path = dir.path().join(f);
        let len = std::fs::metadata(&path).unwrap().len();
        (path, len)
    });
    let last = set("y", "last", &a);
    let receipt = log.append(last.clone()).unwrap();
    log.close().unwrap();
    drop(log);
    for (path, len) in &files {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.set_len(*len).unwrap();
    }
    // when the log reopens, then the append is there again, at its place,
    // the log verifies against the anchor, and sending it again is a
    // duplicate of that receipt.
    let log = open(dir.path()).unwrap();
    assert_eq!(log.len(), 21);
    assert_eq!(
        log.state().values.get("y").map(String::as_str),
        Some("last")
    );
    let again = log.append(last).unwrap();
    assert!(again.duplicate);
    assert_eq!(
        (again.seq, again.leaf_hash),
        (receipt.seq, receipt.leaf_hash)
    );
    close_and_verify(log, dir.path(), 21);
}

#[test]
fn given_small_and_large_appends_at_once_when_reopened_then_the_anchor_is_the_last_commit() {
    // Given writers appending at once, some small (commits anchored with
    // their events by the store) and some of 5 KB (too big for an anchor
    // slot: anchored after the commit by the publish stage), so that both
    // kinds of anchor write interleave,
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    std::thread::scope(|s| {
        for w in 0..6u8 {
            let log = &log;
            s.spawn(move || {
                let a = author(10 + w);
                for i in 0..60 {
                    let value = if w % 3 == 0 {
                        "v".repeat(5_000)
                    } else {
                        i.to_string()
                    };
                    log.append(set(&format!("w{w}-{i}"), &value, &a)).unwrap();
                }
            });
        }
    });
    assert_eq!(log.len(), 360);
    log.close().unwrap();
    drop(log);
    // when the log reopens, then the anchor names its whole length and the
    // log verifies against it.
    let log = open(dir.path()).unwrap();
    assert_eq!(log.len(), 360);
    assert!(
        log.open_report().warnings.is_empty(),
        "{:?}",
        log.open_report()
    );
    close_and_verify(log, dir.path(), 360);
}

#[test]
fn given_a_refused_statement_when_appended_then_nothing_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    let a = author(1);
    log.append(set("x", "1", &a)).unwrap();
    let results = log
        .append_many(vec![set("y", "deny", &a), set("z", "2", &a)])
        .unwrap();
    assert!(matches!(results[0], Err(LogError::FailedPrecondition(_))));
    assert_eq!(
        results[1].as_ref().unwrap().seq,
        1,
        "the refusal fails nothing else"
    );
    assert_eq!(log.len(), 2);
    assert_eq!(log.state().values.get("y"), None);
}

#[test]
fn given_a_logged_statement_when_resent_with_a_forged_signature_then_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    let a = author(1);
    let st = set("x", "1", &a);
    let first = log.append(st.clone()).unwrap();
    // The same statement again: the first receipt, nothing appended.
    let again = log.append(st.clone()).unwrap();
    assert!(again.duplicate);
    assert_eq!(again.seq, first.seq);
    // Same author, kind and payload, forged signature: refused, no receipt.
    let mut forged = st;
    forged.signature[10] ^= 1;
    assert!(matches!(
        log.append(forged),
        Err(LogError::BadSignature { .. })
    ));
    assert_eq!(log.len(), 1);
}

#[test]
fn given_a_tampered_snapshot_when_opened_then_it_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    let a = author(1);
    log.append(set("x", "1", &a)).unwrap();
    log.append(set("y", "2", &a)).unwrap();
    let state = log.state().clone();
    log.close().unwrap();
    drop(log);
    let path = dir.path().join("snapshots/values.snap");
    let text = std::fs::read(&path).unwrap();
    let edited: Vec<u8> = String::from_utf8_lossy(&text)
        .replace("x=1", "x=9")
        .into_bytes();
    std::fs::write(&path, edited).unwrap();
    let report = verify(dir.path());
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::SnapshotTampered),
        "{:?}",
        report.findings
    );
    assert_eq!(report.exit_code(), 5);
    let log = open(dir.path()).unwrap();
    assert_eq!(*log.state(), state, "the edited mirror is never served");
    assert!(!log.open_report().warnings.is_empty());
    log.close().unwrap();
    drop(log);
    assert!(
        verify(dir.path()).findings.is_empty(),
        "the mirror was rewritten"
    );
}

#[test]
fn given_a_snapshot_from_a_longer_log_when_opened_then_it_is_log_damage() {
    for layout in LAYOUTS {
        // (30 single-event commits: more than the anchor's ring of eight
        // slots carries, so no redo in it can give back what is cut; with
        // fewer, whether the open may commit the cut events again from the
        // ring depends on how far the background syncs had got.)
        let dir = closed_log(layout, 30);
        // Cut all events from 6 out of the store: the anchor and the
        // snapshots still say 30.
        let snapshots: Vec<(String, Vec<u8>)> = ["values", "count"]
            .iter()
            .map(|n| {
                let p = dir.path().join(format!("snapshots/{n}.snap"));
                (p.display().to_string(), std::fs::read(p).unwrap())
            })
            .collect();
        tamper::cut_tail(dir.path(), 6);
        for (p, b) in snapshots {
            std::fs::write(p, b).unwrap();
        }
        let err = open(dir.path()).unwrap_err();
        assert!(matches!(err, LogError::Corrupt { .. }), "{layout:?}: {err}");
        assert!(err.to_string().contains("event 6"), "{layout:?}: {err}");
    }
}

#[test]
fn given_a_truncated_log_when_opened_then_it_is_refused_naming_where() {
    for layout in LAYOUTS {
        let dir = closed_log(layout, 20);
        std::fs::remove_dir_all(dir.path().join("snapshots")).unwrap();
        std::fs::create_dir(dir.path().join("snapshots")).unwrap();
        tamper::cut_tail(dir.path(), 15);
        let err = open(dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("event 15"), "{layout:?}: {msg}");
        assert!(msg.contains("20"), "says what was expected: {msg}");
        // The verifier reports the same.
        let report = verify(dir.path());
        assert_eq!(report.exit_code(), 5);
        assert_eq!(report.first_damage().unwrap().seq, Some(15), "{report:?}");
    }
}

#[test]
fn given_a_rewritten_event_when_opened_then_it_is_refused() {
    for layout in LAYOUTS {
        let dir = closed_log(layout, 20);
        tamper::flip(dir.path(), 7);
        let err = open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("event 7"), "{layout:?}: {err}");
    }
}

#[test]
fn given_a_missing_anchor_when_opened_then_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    log.append(set("x", "1", &author(1))).unwrap();
    log.close().unwrap();
    drop(log);
    std::fs::remove_file(dir.path().join("anchor")).unwrap();
    let err = open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("anchor"), "{err}");
}

/// One step of the model test.
#[derive(Debug, Clone)]
enum Op {
    Set(u8, u8),
    Duplicate,
    Forged,
    Denied,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..5, any::<u8>()).prop_map(|(k, v)| Op::Set(k, v)),
        1 => Just(Op::Duplicate),
        1 => Just(Op::Forged),
        1 => Just(Op::Denied),
        1 => Just(Op::Restart),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The log against a model (a vector of accepted statements and a map),
    /// with restarts: every acknowledged statement stays, in order; refused
    /// ones never appear; state after reopen equals the model.
    #[test]
    fn log_matches_its_model_across_restarts(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut log = create(dir.path());
        let a = author(2);
        let mut model: Vec<Statement> = Vec::new();
        let mut values: BTreeMap<String, String> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Set(k, v) => {
                    let st = set(&format!("k{k}"), &format!("v{v}-{}", model.len()), &a);
                    let r = log.append(st.clone()).unwrap();
                    prop_assert_eq!(r.seq, model.len() as u64);
                    let text = String::from_utf8(st.payload.clone()).unwrap();
                    let (k, v) = text.split_once('=').unwrap();
                    values.insert(k.into(), v.into());
                    model.push(st);
                }
                Op::Duplicate => {
                    if let Some(st) = model.last().cloned() {
                        let r = log.append(st).unwrap();
                        prop_assert!(r.duplicate);
                        prop_assert_eq!(r.seq, model.len() as u64 - 1);
                    }
                }
                Op::Forged => {
                    let mut st = set("f", "x", &a);
                    st.signature[0] ^= 0x80;
                    prop_assert!(log.append(st).is_err());
                }
                Op::Denied => {
                    prop_assert!(log.append(set("d", "deny", &a)).is_err());
                }
                Op::Restart => {
                    log.close().unwrap();
                    drop(log);
                    log = open(dir.path()).unwrap();
                }
            }
            prop_assert_eq!(log.len(), model.len() as u64);
            prop_assert_eq!(&log.state().values, &values);
        }
        for (i, st) in model.iter().enumerate() {
            let e = log.event(i as u64).unwrap();
            prop_assert_eq!(&e.statement(), st);
        }
        log.close().unwrap();
        drop(log);
        let report = verify(dir.path());
        prop_assert!(report.findings.is_empty(), "{:?}", report.findings);
    }
}

/// A store that fails every commit once `broken` is set (a full disk, an
/// I/O error), delegating everything else to sled.
struct BreakableStore {
    inner: std::sync::Arc<dyn Store>,
    broken: std::sync::atomic::AtomicBool,
    /// Commits still succeed but anchor nothing themselves, and every
    /// anchor write fails (the publish stage's own fdatasync).
    anchor_broken: std::sync::atomic::AtomicBool,
}

impl BreakableStore {
    fn over(dir: &Path) -> std::sync::Arc<Self> {
        std::sync::Arc::new(BreakableStore {
            inner: docket_log::sequencer::open_local_store(dir).unwrap(),
            broken: std::sync::atomic::AtomicBool::new(false),
            anchor_broken: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn no_space() -> LogError {
        LogError::io("log/db", std::io::Error::other("No space left on device"))
    }
}

impl docket_log::merkle::NodeSource for BreakableStore {
    fn node(
        &self,
        level: u8,
        index: u64,
    ) -> Result<docket_log::merkle::Hash, docket_log::merkle::MerkleError> {
        self.inner.node(level, index)
    }
}

impl Store for BreakableStore {
    fn commit(&self, batch: &docket_log::store::CommitBatch) -> docket_log::Result<()> {
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Self::no_space());
        }
        self.inner.commit(batch)
    }
    fn commit_anchored(&self, batch: &docket_log::store::CommitBatch) -> docket_log::Result<bool> {
        if self.anchor_broken.load(std::sync::atomic::Ordering::SeqCst) {
            self.commit(batch)?;
            return Ok(false);
        }
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Self::no_space());
        }
        self.inner.commit_anchored(batch)
    }
    fn after_commit(&self) -> docket_log::Result<()> {
        self.inner.after_commit()
    }
    fn len(&self) -> docket_log::Result<u64> {
        self.inner.len()
    }
    fn event_bytes(&self, seq: u64) -> docket_log::Result<Option<Vec<u8>>> {
        self.inner.event_bytes(seq)
    }
    fn event_range(&self, from: u64, to: u64) -> docket_log::Result<Vec<(u64, Vec<u8>)>> {
        self.inner.event_range(from, to)
    }
    fn statement_seq(&self, digest: &[u8; 32]) -> docket_log::Result<Option<u64>> {
        self.inner.statement_seq(digest)
    }
    fn for_each_statement(&self, f: &mut dyn FnMut([u8; 32])) -> docket_log::Result<()> {
        self.inner.for_each_statement(f)
    }
    fn checkpoint(&self, size: Option<u64>) -> docket_log::Result<Option<(u64, String)>> {
        self.inner.checkpoint(size)
    }
    fn put_snapshot(&self, name: &str, bytes: &[u8]) -> docket_log::Result<()> {
        self.inner.put_snapshot(name, bytes)
    }
    fn snapshot(&self, name: &str) -> docket_log::Result<Option<Vec<u8>>> {
        self.inner.snapshot(name)
    }
    fn anchor(&self) -> docket_log::Result<Option<String>> {
        self.inner.anchor()
    }
    fn put_anchor(&self, note: &str) -> docket_log::Result<()> {
        if self.anchor_broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Self::no_space());
        }
        self.inner.put_anchor(note)
    }
}

#[test]
fn given_a_storage_error_when_appending_then_the_log_fails_stop_showing_only_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path()).close().unwrap();
    let store = BreakableStore::over(dir.path());
    let log = ToyLog::open_with_store(dir.path(), store.clone(), LogOptions::default()).unwrap();
    let failures = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = failures.clone();
    log.on_failure(move |why| seen.lock().unwrap().push(why.to_string()));
    let a = author(1);
    for i in 0..5 {
        log.append(set("x", &i.to_string(), &a)).unwrap();
    }
    let committed = log.state().clone();
    // When the disk fails.
    store
        .broken
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let err = log.append(set("x", "lost", &a)).unwrap_err();
    assert!(matches!(err, LogError::Closed(_)), "{err}");
    // Then: fail-stop with the reason, later appends refused, reads show
    // only what is durable, the listener heard it.
    assert!(
        log.failure().unwrap().contains("No space left"),
        "{:?}",
        log.failure()
    );
    assert!(matches!(
        log.append(set("y", "1", &a)),
        Err(LogError::Closed(_))
    ));
    assert_eq!(log.len(), 5);
    assert_eq!(*log.state(), committed);
    assert_eq!(failures.lock().unwrap().len(), 1);
    drop(log);
    drop(store);
    // A restart after the cause is fixed loses nothing acknowledged.
    let log = open(dir.path()).unwrap();
    assert_eq!(log.len(), 5);
    assert_eq!(*log.state(), committed);
    log.append(set("z", "after", &a)).unwrap();
}

#[test]
fn given_many_writers_when_the_disk_fails_mid_stream_then_every_acknowledged_append_survives_and_the_rest_are_refused()
 {
    // Run to completion (a stage doing the next one's work while that one
    // is idle) and the hand-offs between threads both happen under eight
    // writers; a failure of the store's commit, or of the publish stage's
    // anchor write, must stop both the same way.
    for break_the_anchor in [false, true] {
        // Given a ledger with eight writers appending one at a time,
        let dir = tempfile::tempdir().unwrap();
        create(dir.path()).close().unwrap();
        let store = BreakableStore::over(dir.path());
        let log =
            ToyLog::open_with_store(dir.path(), store.clone(), LogOptions::default()).unwrap();
        let acknowledged = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for w in 0..8u8 {
                let (log, acknowledged) = (&log, &acknowledged);
                s.spawn(move || {
                    let key = author(w + 1);
                    let mut last = None;
                    for i in 0..400 {
                        match log.append(set(&format!("w{w}"), &i.to_string(), &key)) {
                            Ok(r) => {
                                // One writer's appends are sequenced in order.
                                assert!(last < Some(r.seq), "{last:?} then {}", r.seq);
                                last = Some(r.seq);
                                acknowledged.lock().unwrap().push(r);
                            }
                            Err(LogError::Closed(_)) => return,
                            Err(e) => panic!("{e}"),
                        }
                    }
                });
            }
            // and one more keeping many statements in flight, whose
            // receipts must follow the order it submitted them in,
            let (log_ref, acknowledged_ref) = (&log, &acknowledged);
            s.spawn(move || {
                let key = author(10);
                let mut in_flight = std::collections::VecDeque::new();
                let mut last = None;
                for i in 0..2000 {
                    // A refused submit ends the stream once the receipts
                    // still in flight are taken (some may be acknowledged).
                    let submitted = match log_ref.submit(vec![set("stream", &i.to_string(), &key)])
                    {
                        Ok(rx) => {
                            in_flight.push_back(rx);
                            true
                        }
                        Err(_) => false,
                    };
                    let last_one = i == 1999 || !submitted;
                    while in_flight.len() > 16 || (last_one && !in_flight.is_empty()) {
                        let Some(rx) = in_flight.pop_front() else {
                            break;
                        };
                        let Ok(mut results) = rx.recv() else { return };
                        match results.pop() {
                            Some(Ok(r)) => {
                                assert!(last < Some(r.seq), "{last:?} then {}", r.seq);
                                last = Some(r.seq);
                                acknowledged_ref.lock().unwrap().push(r);
                            }
                            Some(Err(LogError::Closed(_))) => return,
                            other => panic!("{other:?}"),
                        }
                    }
                    if !submitted {
                        return;
                    }
                }
            });
            // when the disk fails once some have been acknowledged,
            while log.len() < 200 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let flag = if break_the_anchor {
                &store.anchor_broken
            } else {
                &store.broken
            };
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        // then the log failed stop, refuses more, and every receipt it gave
        // is in the log after a restart, with its leaf hash.
        assert!(log.failure().is_some(), "anchor broken: {break_the_anchor}");
        assert!(matches!(
            log.append(set("after", "1", &author(9))),
            Err(LogError::Closed(_))
        ));
        let acknowledged = acknowledged.into_inner().unwrap();
        assert!(
            acknowledged.len() >= 200 && acknowledged.len() < 5200,
            "{} acknowledged; anchor broken: {break_the_anchor}",
            acknowledged.len()
        );
        drop(log);
        drop(store);
        let log = open(dir.path()).unwrap();
        assert!(log.len() >= acknowledged.len() as u64);
        for r in &acknowledged {
            assert_eq!(
                log.leaf_hash(r.seq).unwrap(),
                r.leaf_hash,
                "event {}",
                r.seq
            );
        }
        log.append(set("z", "after", &author(1))).unwrap();
    }
}

#[test]
fn given_old_damage_beyond_the_open_tail_when_opened_then_the_background_check_fails_stop() {
    for layout in LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let log = create_with(dir.path(), layout);
        let a = author(1);
        let n = docket_log::verify::OPEN_TAIL + 904;
        for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
            let batch = chunk
                .iter()
                .map(|i| set(&format!("r{}", i % 13), &i.to_string(), &a))
                .collect();
            for r in log.append_many(batch).unwrap() {
                r.unwrap();
            }
        }
        log.close().unwrap();
        drop(log);
        // Given event 100 rewritten in the store (far before the open's tail).
        tamper::flip(dir.path(), 100);
        // When the ledger opens (the tail is intact, so the open itself passes),
        // then the background check finds the damage, names it and fails stop.
        let log = open(dir.path()).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while log.failure().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let why = log
            .failure()
            .expect("the background check reported the damage");
        assert!(why.contains("seq 100"), "{why}");
        assert!(matches!(
            log.append(set("x", "1", &a)),
            Err(LogError::Closed(_))
        ));
        // And the full verifier agrees.
        drop(log);
        let report = verify(dir.path());
        assert_eq!(report.first_damage().unwrap().seq, Some(100), "{layout:?}");
    }
}

#[test]
fn given_a_torn_entry_bundle_beyond_the_open_tail_when_the_background_check_reaches_it_then_the_log_fails_stop()
 {
    // Given a tile ledger whose first entry bundle (before the open's tail)
    // is cut in the middle of an entry,
    let (dir, _) = closed_log_longer_than_the_open_tail(Layout::Tiles);
    let bundle = dir.path().join("tiles/tile/entries/000");
    let bytes = std::fs::read(&bundle).unwrap();
    std::fs::write(&bundle, &bytes[..3000]).unwrap();
    // when it opens (the tail is intact) and the background check reaches
    // the tear, then the log stops naming the file and refuses appends.
    let log = open(dir.path()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while log.failure().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let why = log.failure().expect("the background check stopped the log");
    assert!(why.contains("tiles/tile/entries/000"), "{why}");
    assert!(matches!(
        log.append(set("x", "1", &author(1))),
        Err(LogError::Closed(_))
    ));
}

/// Flips one bit of hash `k` of level-0 hash tile `index` of a closed
/// tile-store ledger; returns the tile's bytes before.
fn damage_leaf_tile(dir: &Path, index: u64, k: usize) -> (std::path::PathBuf, Vec<u8>) {
    let path = dir.join("tiles").join(tiles::hash_tile_path(0, index));
    let before = std::fs::read(&path).unwrap();
    let mut bytes = before.clone();
    bytes[32 * k + 5] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    (path, before)
}

#[test]
fn given_a_damaged_hash_tile_in_the_open_tail_when_opened_then_it_is_rebuilt_from_the_event_bytes()
{
    for damage in ["one hash flipped", "cut short"] {
        // Given a closed ledger of 600 events (two full level-0 tiles) whose
        // second tile, a derived file, is damaged,
        let dir = closed_log(Layout::Tiles, 600);
        let (tile, before) = damage_leaf_tile(dir.path(), 1, 77);
        if damage == "cut short" {
            std::fs::write(&tile, &before[..100]).unwrap();
        }
        // when it opens, then the open rewrites the tile from the event
        // bytes (they give the anchored root) and says so,
        let log = open(dir.path()).unwrap_or_else(|e| panic!("{damage}: {e}"));
        assert_eq!(std::fs::read(&tile).unwrap(), before, "{damage}");
        let warnings = log.open_report().warnings.join("\n");
        assert!(
            warnings.contains("tiles/tile/0/001"),
            "{damage}: {warnings}"
        );
        // and the ledger serves and verifies clean.
        log.append(set("y", "1", &author(2))).unwrap();
        close_and_verify(log, dir.path(), 601);
    }
}

#[test]
fn given_a_damaged_merkle_node_in_a_sled_ledger_when_opened_then_it_is_rebuilt_from_the_event_bytes()
 {
    // (level, index): a leaf hash in the open's tail, and a node of the
    // upper levels kept in memory (the root's left child at 600 events).
    for (level, index) in [(0u8, 77u64), (9, 0)] {
        // Given a closed sled ledger of 600 events with one stored Merkle
        // node (a derived copy of the event bytes) overwritten,
        let dir = closed_log(Layout::Sled, 600);
        let key = |level: u8, index: u64| {
            let mut k = vec![b'n', level];
            k.extend_from_slice(&index.to_be_bytes());
            k
        };
        let before = {
            let store = SledStore::open(dir.path()).unwrap();
            let before = store
                .raw_tree()
                .get(key(level, index))
                .unwrap()
                .unwrap()
                .to_vec();
            store
                .raw_tree()
                .insert(key(level, index), vec![0xAB; 32])
                .unwrap();
            store.sync().unwrap();
            before
        };
        // when it opens, then the node is rewritten from the event bytes
        // (they give the anchored root) and a warning names it,
        let log = open(dir.path()).unwrap_or_else(|e| panic!("({level}, {index}): {e}"));
        let warnings = log.open_report().warnings.join("\n");
        assert!(
            warnings.contains(&format!("Merkle node ({level}, {index})")),
            "({level}, {index}): {warnings}"
        );
        let (cp, _) = log.checkpoint().unwrap().unwrap();
        let p = log.prove_inclusion(77, cp.size).unwrap();
        merkle::verify_inclusion(&p.leaf, 77, cp.size, &p.path, &cp.root).unwrap();
        // and the ledger serves and verifies clean.
        log.append(set("y", "1", &author(2))).unwrap();
        close_and_verify(log, dir.path(), 601);
        let store = SledStore::open(dir.path()).unwrap();
        assert_eq!(
            store
                .raw_tree()
                .get(key(level, index))
                .unwrap()
                .unwrap()
                .to_vec(),
            before
        );
    }
}

#[test]
fn given_a_damaged_event_when_opened_then_no_derived_file_is_rewritten_from_it() {
    // Given a closed ledger whose event 300 is rewritten in its bundle,
    let dir = closed_log(Layout::Tiles, 600);
    let tile = dir.path().join("tiles").join(tiles::hash_tile_path(0, 1));
    let before = std::fs::read(&tile).unwrap();
    tamper::flip(dir.path(), 300);
    // when it opens, then it is refused naming the event, and the hash tile
    // (which still holds the event's true leaf hash) is left as it was.
    let err = open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("event 300"), "{err}");
    assert_eq!(std::fs::read(&tile).unwrap(), before);
}

#[test]
fn given_a_damaged_hash_tile_before_the_open_tail_when_the_background_check_finds_it_then_it_is_rebuilt()
 {
    // Given a closed ledger whose first level-0 tile (events 0..256, before
    // the tail the open re-reads) is damaged,
    let (dir, n) = closed_log_longer_than_the_open_tail(Layout::Tiles);
    let a = author(1);
    for (round, damage) in ["one hash flipped", "cut short"].into_iter().enumerate() {
        let (tile, before) = damage_leaf_tile(dir.path(), 0, 3);
        if damage == "cut short" {
            std::fs::write(&tile, &before[..100]).unwrap();
        }
        // when it opens (the tail is intact) and the background check
        // reaches the tile, then the tile is rewritten from the event bytes
        // and the log does not stop.
        let log = open(dir.path()).unwrap();
        wait_until_file_holds(&tile, &before);
        assert_eq!(
            std::fs::read(&tile).unwrap(),
            before,
            "{damage}: the tile was rebuilt"
        );
        // (The check runs again over the rebuilt tree: wait for its verdict.)
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert_eq!(log.failure(), None, "{damage}");
        log.append(set("y", &round.to_string(), &a)).unwrap();
        close_and_verify(log, dir.path(), n + 1 + round as u64);
    }
}

#[test]
fn given_bytes_appended_to_a_full_entry_bundle_when_checked_then_the_full_check_names_them_and_the_background_check_cuts_them_off()
 {
    // Given a closed ledger whose first full entry bundle (before the open
    // tail) has 17 bytes appended after its 256 entries,
    let (dir, n) = closed_log_longer_than_the_open_tail(Layout::Tiles);
    let bundle = dir.path().join("tiles").join(tiles::bundle_path(0));
    let intact = std::fs::read(&bundle).unwrap();
    let mut grown = intact.clone();
    grown.extend_from_slice(&[0x5A; 17]);
    std::fs::write(&bundle, &grown).unwrap();
    // when the full check runs, then it names the file and the byte where
    // the stray bytes begin (a structure finding, exit 5),
    let report = verify(dir.path());
    let finding = report
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::Structure)
        .unwrap_or_else(|| panic!("no structure finding: {:?}", report.findings));
    assert!(
        finding
            .to_string()
            .contains(&format!("tiles/tile/entries/000, byte {}", intact.len())),
        "{finding:?}"
    );
    assert!(finding.detail.contains("17 bytes"), "{finding:?}");
    // and when the ledger opens, the background check cuts them off (the
    // entries give the anchored root without them) and the log goes on.
    let log = open(dir.path()).unwrap();
    wait_until_file_holds(&bundle, &intact);
    assert_eq!(
        std::fs::read(&bundle).unwrap(),
        intact,
        "the stray bytes were cut off"
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(log.failure(), None);
    log.append(set("y", "after", &author(1))).unwrap();
    close_and_verify(log, dir.path(), n + 1);
}

/// Waits (up to two minutes) until the file at `path` holds `bytes`: a
/// repair by the background check, which runs on a thread of its own.
fn wait_until_file_holds(path: &Path, bytes: &[u8]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::fs::read(path).unwrap() != bytes && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A closed ledger of `OPEN_TAIL + 904` events (the first
/// level-0 tiles lie before the tail the open re-reads).
fn closed_log_longer_than_the_open_tail(layout: Layout) -> (tempfile::TempDir, u64) {
    let dir = tempfile::tempdir().unwrap();
    let log = create_with(dir.path(), layout);
    let a = author(1);
    let n = docket_log::verify::OPEN_TAIL + 904;
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let batch = chunk.iter().map(|i| set("x", &i.to_string(), &a)).collect();
        for r in log.append_many(batch).unwrap() {
            r.unwrap();
        }
    }
    log.close().unwrap();
    drop(log);
    (dir, n)
}

fn open_without_background_check(dir: &Path) -> docket_log::Result<ToyLog> {
    let options = LogOptions {
        background_scrub: false,
        ..LogOptions::default()
    };
    ToyLog::open(dir, options)
}

#[test]
fn given_a_damaged_hash_tile_the_open_did_not_read_when_a_proof_is_asked_then_the_proof_served_verifies()
 {
    let (dir, n) = closed_log_longer_than_the_open_tail(Layout::Tiles);
    for (event, hash) in [(3, 3), (10, 3), (200, 131)] {
        for proof in ["inclusion", "consistency", "root"] {
            // Given hash 3 or 131 of the first level-0 tile (before the
            // open's tail, and no background check running) damaged,
            let (tile, before) = damage_leaf_tile(dir.path(), 0, hash);
            let log = open_without_background_check(dir.path()).unwrap();
            let (cp, _) = log.checkpoint().unwrap().unwrap();
            // when a proof whose path reads it is asked (for the damaged
            // leaf itself or a leaf beside it, or from a tree ending inside
            // the tile), then what is served verifies against the signed
            // checkpoint, because the tile was rewritten from the event
            // bytes first.
            match proof {
                "inclusion" => {
                    let p = log.prove_inclusion(event, cp.size).unwrap();
                    assert_eq!(p.root, cp.root);
                    merkle::verify_inclusion(&p.leaf, event, cp.size, &p.path, &cp.root).unwrap();
                }
                "consistency" => {
                    let old = event + 1;
                    let c = log.prove_consistency(old, cp.size).unwrap();
                    assert_eq!(c.new_root, cp.root);
                    merkle::verify_consistency(old, cp.size, &c.old_root, &cp.root, &c.path)
                        .unwrap();
                }
                _ => {
                    let old_root = log.root_at(event + 1).unwrap();
                    let path = log.consistency_proof(event + 1, n).unwrap();
                    merkle::verify_consistency(event + 1, n, &old_root, &cp.root, &path).unwrap();
                }
            }
            assert_eq!(std::fs::read(&tile).unwrap(), before, "{proof} of {event}");
            drop(log);
        }
    }
}

#[test]
fn given_a_merkle_node_missing_from_a_sled_ledger_where_the_open_does_not_read_when_a_proof_is_asked_then_it_is_rebuilt_first()
 {
    // Given a sled ledger longer than the open's tail whose stored leaf
    // hash of event 5 (a derived copy) was deleted,
    let (dir, n) = closed_log_longer_than_the_open_tail(Layout::Sled);
    let key = [&[b'n', 0][..], &5u64.to_be_bytes()].concat();
    let before = {
        let store = SledStore::open(dir.path()).unwrap();
        let before = store.raw_tree().remove(&key).unwrap().unwrap().to_vec();
        store.sync().unwrap();
        before
    };
    // when a proof that reads it is asked (no background check runs), then
    // the node is rewritten from the event bytes and the proof verifies
    // against the signed checkpoint (before: an internal error).
    let log = open_without_background_check(dir.path()).unwrap();
    let (cp, _) = log.checkpoint().unwrap().unwrap();
    assert_eq!(cp.size, n);
    let p = log.prove_inclusion(4, n).unwrap();
    merkle::verify_inclusion(&p.leaf, 4, n, &p.path, &cp.root).unwrap();
    drop(log);
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(
        store.raw_tree().get(&key).unwrap().unwrap().to_vec(),
        before
    );
}

#[test]
fn given_a_proof_that_rebuilds_a_damaged_tile_while_the_background_check_reads_it_then_the_log_does_not_stop()
 {
    let (dir, n) = closed_log_longer_than_the_open_tail(Layout::Tiles);
    for round in 0..3 {
        // Given hash 9 of the first level-0 tile damaged, and the ledger
        // opened with its background check running,
        let (tile, before) = damage_leaf_tile(dir.path(), 0, 9);
        let log = open(dir.path()).unwrap();
        // when a proof through it rebuilds the tile while the check may be
        // reading the damaged copy,
        let p = log.prove_inclusion(8, n).unwrap();
        let (cp, _) = log.checkpoint().unwrap().unwrap();
        merkle::verify_inclusion(&p.leaf, 8, n, &p.path, &cp.root).unwrap();
        assert_eq!(std::fs::read(&tile).unwrap(), before);
        // then the check, finding nothing left to rewrite, checks again and
        // the log does not stop.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert_eq!(log.failure(), None, "round {round}");
        drop(log);
    }
}

#[test]
fn given_a_damaged_hash_tile_and_damaged_events_under_it_when_a_proof_is_asked_then_none_is_served()
{
    // Given the first level-0 tile damaged and an event under it too (so
    // the bytes cannot rebuild the tile),
    let (dir, _) = closed_log_longer_than_the_open_tail(Layout::Tiles);
    let (tile, _) = damage_leaf_tile(dir.path(), 0, 3);
    tamper::flip(dir.path(), 9);
    let damaged = std::fs::read(&tile).unwrap();
    let log = open_without_background_check(dir.path()).unwrap();
    let (cp, _) = log.checkpoint().unwrap().unwrap();
    // when a proof whose path reads the damaged hash is asked, then no
    // proof is served: the answer is damage naming the tree, twice (the
    // second time without another rebuild), and nothing was rewritten,
    for _ in 0..2 {
        let err = log.prove_inclusion(2, cp.size).unwrap_err();
        assert!(matches!(err, LogError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("Merkle tree"), "{err}");
        assert!(log.inclusion_proof(2, cp.size).is_err());
    }
    assert_eq!(std::fs::read(&tile).unwrap(), damaged);
    // while a proof in a part of the tree that is intact is still served.
    let proved = log.prove_inclusion(cp.size - 1, cp.size).unwrap();
    merkle::verify_inclusion(&proved.leaf, cp.size - 1, cp.size, &proved.path, &cp.root).unwrap();
}

#[test]
fn given_events_at_the_payload_limit_when_stored_then_sled_writes_no_blob_file() {
    // sled writes a node past a quarter segment into an unsynced file of its
    // own; the store splits events into chunks so that never happens.
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    let a = author(1);
    let big = "v".repeat(docket_log::event::MAX_PAYLOAD - 16);
    for i in 0..40 {
        let st = Statement::sign("toy.set", format!("k{i}={big}").into_bytes(), &a);
        log.append(st).unwrap();
    }
    let state = log.state().clone();
    log.close().unwrap();
    drop(log);
    let blobs = dir.path().join("log/blobs");
    let count = std::fs::read_dir(&blobs).map(|d| d.count()).unwrap_or(0);
    assert_eq!(count, 0, "sled wrote blob files");
    let log = open(dir.path()).unwrap();
    assert_eq!(*log.state(), state);
    assert_eq!(
        log.event(17).unwrap().payload.len(),
        docket_log::event::MAX_PAYLOAD - 16 + 4
    );
}

#[test]
fn given_a_reopened_log_when_proofs_are_asked_while_the_merkle_cache_loads_then_they_match_the_loaded_ones()
 {
    // The upper Merkle levels load in the background after open: proofs
    // asked before (sled lookups), during and after must be the same, and
    // appends made meanwhile must be provable too.
    let dir = tempfile::tempdir().unwrap();
    let key = author(1);
    let log = create(dir.path());
    for i in 0..700 {
        log.append(set(&format!("k{i}"), "v", &key)).unwrap();
    }
    log.close().unwrap();
    drop(log);
    let log = open(dir.path()).unwrap();
    let size = log.len();
    let early: Vec<_> = (0..size)
        .step_by(7)
        .map(|i| log.inclusion_proof(i, size).unwrap())
        .collect();
    let early_consistency = log.consistency_proof(333, size).unwrap();
    for i in 0..300 {
        log.append(set(&format!("later{i}"), "v", &key)).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let late: Vec<_> = (0..size)
        .step_by(7)
        .map(|i| log.inclusion_proof(i, size).unwrap())
        .collect();
    assert_eq!(early, late);
    assert_eq!(log.consistency_proof(333, size).unwrap(), early_consistency);
    // And the events appended while the cache loaded are provable against
    // the latest size, as an in-memory tree says.
    let all = log.len();
    let mut tree = docket_log::merkle::MemoryTree::default();
    for seq in 0..all {
        tree.push(docket_log::merkle::leaf_hash(
            &log.event_bytes(seq).unwrap(),
        ));
    }
    for i in (0..all).step_by(13) {
        assert_eq!(
            log.inclusion_proof(i, all).unwrap(),
            docket_log::merkle::inclusion_proof(&tree, i, all).unwrap()
        );
    }
    log.close().unwrap();
}

/// A store another node commits to while it is being opened: the first of
/// `len`/`anchor` to be asked sees the log before that commit (`before`
/// events, anchored at `before`), every later read sees it after.
struct CommittedMeanwhile {
    inner: std::sync::Arc<dyn Store>,
    before: u64,
    asked: std::sync::atomic::AtomicBool,
}

impl CommittedMeanwhile {
    /// Whether this read is the first one (and so sees the older log).
    fn first_read(&self) -> bool {
        !self.asked.swap(true, std::sync::atomic::Ordering::SeqCst)
    }
}

impl docket_log::merkle::NodeSource for CommittedMeanwhile {
    fn node(
        &self,
        level: u8,
        index: u64,
    ) -> Result<docket_log::merkle::Hash, docket_log::merkle::MerkleError> {
        self.inner.node(level, index)
    }
}

impl Store for CommittedMeanwhile {
    fn commit(&self, batch: &docket_log::store::CommitBatch) -> docket_log::Result<()> {
        self.inner.commit(batch)
    }
    fn len(&self) -> docket_log::Result<u64> {
        if self.first_read() {
            return Ok(self.before);
        }
        self.inner.len()
    }
    fn event_bytes(&self, seq: u64) -> docket_log::Result<Option<Vec<u8>>> {
        self.inner.event_bytes(seq)
    }
    fn event_range(&self, from: u64, to: u64) -> docket_log::Result<Vec<(u64, Vec<u8>)>> {
        self.inner.event_range(from, to)
    }
    fn statement_seq(&self, digest: &[u8; 32]) -> docket_log::Result<Option<u64>> {
        self.inner.statement_seq(digest)
    }
    fn for_each_statement(&self, f: &mut dyn FnMut([u8; 32])) -> docket_log::Result<()> {
        self.inner.for_each_statement(f)
    }
    fn checkpoint(&self, size: Option<u64>) -> docket_log::Result<Option<(u64, String)>> {
        self.inner.checkpoint(size)
    }
    fn put_snapshot(&self, name: &str, bytes: &[u8]) -> docket_log::Result<()> {
        self.inner.put_snapshot(name, bytes)
    }
    fn snapshot(&self, name: &str) -> docket_log::Result<Option<Vec<u8>>> {
        self.inner.snapshot(name)
    }
    fn anchor(&self) -> docket_log::Result<Option<String>> {
        if self.first_read() {
            return Ok(self
                .inner
                .checkpoint(Some(self.before))?
                .map(|(_, note)| note));
        }
        self.inner.anchor()
    }
    fn put_anchor(&self, note: &str) -> docket_log::Result<()> {
        self.inner.put_anchor(note)
    }
}

#[test]
fn given_a_commit_between_the_opens_reads_when_opened_then_no_events_look_missing() {
    // Given a log whose last commits land while a node opens it (a shared
    // store such as PostgreSQL: events and anchor move forward together),
    let dir = tempfile::tempdir().unwrap();
    let key = author(1);
    let log = create(dir.path());
    for i in 0..20 {
        log.append(set(&format!("k{i}"), "v", &key)).unwrap();
    }
    let len = log.len();
    log.close().unwrap();
    drop(log);
    let (_, verifier) = docket_log::sequencer::read_config(dir.path()).unwrap();
    let store = CommittedMeanwhile {
        inner: docket_log::sequencer::open_local_store(dir.path()).unwrap(),
        before: len - 5,
        asked: std::sync::atomic::AtomicBool::new(false),
    };
    assert!(store.inner.checkpoint(Some(len - 5)).unwrap().is_some());
    // when the open check runs, then it sees no hole: it reads the anchor
    // (the older one) before the length (the newer one), never the reverse.
    let opened = docket_log::verify::open_check::<Registers>(
        &store,
        Trust {
            checkpoints: &verifier,
            snapshots: &verifier.key,
        },
        None,
    )
    .unwrap_or_else(|e| panic!("a commit between two reads is not damage: {e}"));
    assert_eq!(opened.frontier.size(), len);
}

#[test]
fn given_submit_then_when_durable_or_closed_then_the_callback_runs_once_with_every_result() {
    // Given a log and a callback that hands its results on,
    let dir = tempfile::tempdir().unwrap();
    let log = create(dir.path());
    let a = author(1);
    let (tx, rx) = std::sync::mpsc::channel();
    // when three statements (one refused) are submitted without waiting,
    let t = tx.clone();
    log.submit_then(
        vec![set("x", "1", &a), set("y", "deny", &a), set("z", "2", &a)],
        move |results| t.send(results).unwrap(),
    );
    // then the callback gets their results in order, once they are durable.
    let results = rx.recv().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].as_ref().unwrap().seq, 0);
    assert!(matches!(results[1], Err(LogError::FailedPrecondition(_))));
    assert_eq!(results[2].as_ref().unwrap().seq, 1);
    assert_eq!(log.len(), 2, "durable before the callback ran");
    // And on a closed log, each statement gets Closed, on the caller's thread.
    let closed = log.clone();
    log.close().unwrap();
    let t = tx.clone();
    closed.submit_then(vec![set("w", "3", &a), set("v", "4", &a)], move |results| {
        t.send(results).unwrap();
    });
    let results = rx.try_recv().expect("answered before submit_then returned");
    assert_eq!(results.len(), 2);
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Err(LogError::Closed(_))))
    );
    drop(tx);
    assert!(rx.recv().is_err(), "no second answer");
}

#[test]
fn given_a_commit_listener_that_waits_for_the_caller_when_appending_then_the_caller_is_answered_first()
 {
    for layout in LAYOUTS {
        // Given a log whose commit listener waits (up to 10 s) until the
        // appender says it has its receipt,
        let dir = tempfile::tempdir().unwrap();
        let log = create_with(dir.path(), layout);
        let (answered_tx, answered_rx) = std::sync::mpsc::channel::<()>();
        let answered_rx = std::sync::Mutex::new(answered_rx);
        let (heard_tx, heard_rx) = std::sync::mpsc::channel::<(u64, bool)>();
        let heard_tx = std::sync::Mutex::new(heard_tx);
        log.on_commit(move |len| {
            let caller_first = answered_rx
                .lock()
                .unwrap()
                .recv_timeout(std::time::Duration::from_secs(10))
                .is_ok();
            heard_tx.lock().unwrap().send((len, caller_first)).unwrap();
        });
        // when one statement is appended,
        let receipt = log.append(set("x", "1", &author(1))).unwrap();
        // then the append returns while the listener still waits, and the
        // log already shows the event to the answered caller,
        assert_eq!(receipt.seq, 0, "{layout:?}");
        assert_eq!(log.len(), 1, "{layout:?}");
        answered_tx.send(()).unwrap();
        // and the listener hears of the commit after the caller was
        // answered (run before the answer, it would have timed out).
        assert_eq!(
            heard_rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap(),
            (1, true),
            "{layout:?}"
        );
        close_and_verify(log, dir.path(), 1);
    }
}

#[test]
fn given_blocking_and_pipelining_writers_at_once_when_reopened_then_every_acknowledged_append_is_there_once()
 {
    for layout in LAYOUTS {
        // Given a log, four threads appending one at a time (an idle
        // pipeline runs each to completion, one stage doing the next one's
        // work) and four keeping eight submissions in flight each,
        let dir = tempfile::tempdir().unwrap();
        let log = create_with(dir.path(), layout);
        let per = 60;
        let per_writer: Vec<Vec<u64>> = std::thread::scope(|s| {
            let mut handles = Vec::new();
            for w in 0..8u8 {
                let log = log.clone();
                handles.push(s.spawn(move || {
                    let key = author(w + 1);
                    let stmt = |i: usize| set(&format!("w{w}"), &i.to_string(), &key);
                    let mut seqs = Vec::new();
                    if w < 4 {
                        for i in 0..per {
                            seqs.push(log.append(stmt(i)).unwrap().seq);
                        }
                    } else {
                        let mut pending = std::collections::VecDeque::new();
                        for i in 0..per {
                            pending.push_back(log.submit(vec![stmt(i)]).unwrap());
                            if pending.len() == 8 {
                                let r = pending.pop_front().unwrap().recv().unwrap();
                                seqs.push(r[0].as_ref().unwrap().seq);
                            }
                        }
                        for rx in pending {
                            seqs.push(rx.recv().unwrap()[0].as_ref().unwrap().seq);
                        }
                    }
                    seqs
                }));
            }
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // when all are acknowledged, then each got its own sequence number,
        // together exactly 0..n, each writer's in the order it appended,
        let n = 8 * per as u64;
        for (w, seqs) in per_writer.iter().enumerate() {
            assert!(
                seqs.windows(2).all(|p| p[0] < p[1]),
                "{layout:?}: writer {w} sequenced out of order: {seqs:?}"
            );
        }
        let mut sorted: Vec<u64> = per_writer.into_iter().flatten().collect();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{layout:?}");
        // and after a reopen every one is there, in a log that verifies,
        // each writer's last value last.
        let state = log.state().clone();
        close_and_verify(log, dir.path(), n);
        let log = open(dir.path()).unwrap();
        assert_eq!(log.len(), n);
        assert_eq!(*log.state(), state);
        for w in 0..8 {
            assert_eq!(
                log.state().values.get(&format!("w{w}")).map(String::as_str),
                Some((per - 1).to_string().as_str()),
                "{layout:?}: writer {w}'s last value"
            );
        }
    }
}
