//! Corruption matrix: damage a real data directory in every way we can think
//! of and check that the ledger is never silently shorter.
//!
//! # The contract (issue "Trustworthy core")
//!
//! The ledger keeps its latest signed checkpoint in `DATA/anchor` (two 4 KiB
//! slots), apart from the sled store in `DATA/log/`; projection snapshots in
//! `DATA/snapshots/*.snap` are sealed with the ledger key and bound to a
//! sequence number and tree root. On open, a shorter log, a hole, a bad
//! event, a root mismatch or a missing anchor is refused: every command exits
//! 5 with a message that says what is wrong and where. A snapshot that fails
//! its seal or is missing is rebuilt from the log with a warning on stderr
//! (the command exits 0). `docket replay --verify` exits 5 for integrity
//! findings (a tampered snapshot included), 3 only for an authentic snapshot
//! that differs from the rebuilt state, 0 when clean.
//!
//! Whatever the damage, the outcome must be one of:
//!
//! * **refused** — an opening command (`docket --json log show 300`) exits 5
//!   (4 is accepted only when `ledger.json` or the ledger key is gone) with a
//!   message naming a location (an event, the anchor, `log/`, a snapshot, the
//!   Merkle nodes, `ledger.json`, the keys); `replay --verify` exits 5 too;
//!   and a second open still refuses (a refused open never "repairs" the
//!   ledger into a shorter one);
//! * **intact** — the command exits 0 and shows the last acknowledged event
//!   with its acknowledged leaf hash, the log holds exactly the acknowledged
//!   events with their leaf hashes and a checkpoint of that size (checked
//!   in-process after the CLI ran), and `replay --verify` exits 0.
//!
//! Never acceptable: exit 0 with fewer or different events, a panic (exit
//! 101), or exit 10 ("unexpected") for damage.
//!
//! # The matrix
//!
//! One pristine ledger (genesis + 300 `x-note` events, two runs of ~100 KB
//! events: the store splits them into 16 KiB chunks so sled never moves a
//! node to `log/blobs/`; any file found there joins the matrix) is built
//! once, together with a copy of its snapshots after 100 events and of the
//! whole data directory after 150. The ledger is smaller than the tail an
//! open always re-reads (`docket_log::verify::OPEN_TAIL`), so every open
//! re-reads every event. Every case copies the pristine directory (which is
//! never opened again: sled renames its files when it opens), applies one
//! damage and runs the checks above:
//!
//! 1. one byte flipped at ~12 offsets of every file under `log/`;
//! 2. every file under `log/` (`db`, `conf`, `snap.*`, blobs) truncated at
//!    many lengths;
//! 3. every snapshot edited to a well-formed but wrong value, truncated,
//!    deleted; all (or one) replaced by older authentic ones (folded
//!    forward: intact); one re-sealed with the ledger key but wrong (exit 3);
//! 4. the anchor deleted, one slot zeroed (opens from the other), both
//!    zeroed, a note flipped or forged, an anchor of another ledger, the
//!    anchor of a later size over the log of an earlier moment (refused:
//!    events missing), an older anchor over the full log (intact);
//! 5. `ledger.json`, `keys/ledger.key`, `keys/`, `log/`, `log/db`,
//!    `log/conf`, sled's page-table snapshots, blob files and `snapshots/`
//!    deleted.
//!
//! Cases run two at a time; the table of outcomes is printed at the end and
//! the test fails listing every violating case at once.
//! `DOCKET_CORRUPTION_ONLY=substring` runs the matching cases only;
//! `DOCKET_CORRUPTION_SEED` changes the random offsets.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use docket_domain::merkle::{self, Hash};
use docket_domain::{Ledger, LedgerOptions, Statement, keys, snapshot};
use docket_log::Layout;

/// Events appended after genesis.
const EVENTS: u64 = 300;
/// Appends after which the snapshots are copied (the "older authentic" ones).
const SNAPSHOT_AFTER: u64 = 100;
/// Appends after which the whole data directory is copied.
const COPY_AFTER: u64 = 150;
/// Runs of appends whose payload is ~100 KB. sled writes a node over a
/// quarter segment (1 MiB) to a file of its own under `log/blobs/`; the
/// store splits events into 16 KiB chunks so that this never happens, and
/// big events in a row are how it would show (any file found under
/// `log/blobs/` joins the matrix).
const BIG: [std::ops::Range<u64>; 2] = [60..80, 270..290];
/// Size of a big payload.
const BIG_LEN: usize = 100_000;
/// Default seed of the random offsets.
const SEED: u64 = 0x5eed_c0de_2024_0007;
/// Places a refusal may name (lower case), besides "event N" / "events N..".
const LOCATIONS: [&str; 8] = [
    "anchor",
    "log/",
    "tiles/",
    "snapshots/",
    "snapshot ",
    "merkle",
    "ledger.json",
    "keys/",
];

struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

/// Everything the cases are derived from, built once.
struct Fixture {
    _root: tempfile::TempDir,
    /// The store's directory in the data directory: `log` (sled) or
    /// `tiles`.
    store: &'static str,
    /// The pristine data directory (closed).
    pristine: PathBuf,
    /// The whole data directory when `COPY_AFTER` appends were acknowledged.
    earlier: PathBuf,
    /// `snapshots/` after `SNAPSHOT_AFTER` appends (authentic, older).
    old_snapshots: PathBuf,
    /// The anchor file of another ledger with a longer log.
    foreign_anchor: PathBuf,
    /// Where the cases' copies live.
    scratch: PathBuf,
    /// Every acknowledged (seq, leaf hash), genesis included.
    acked: Vec<(u64, Hash)>,
}

fn payload(i: u64) -> Vec<u8> {
    if BIG.iter().any(|r| r.contains(&i)) {
        // Big, and nothing a page could compress away.
        let mut rng = Rng(SEED ^ (i + 1));
        let pad: String = (0..BIG_LEN)
            .map(|_| char::from(b'a' + (rng.next_u64() % 26) as u8))
            .collect();
        format!("{{\"n\":{i},\"pad\":\"{pad}\"}}").into_bytes()
    } else {
        format!("{{\"n\":{i},\"note\":\"event number {i}\"}}").into_bytes()
    }
}

/// Appends events `from..to` in batches of 10 and records their receipts.
fn append(
    ledger: &Ledger,
    admin: &ed25519_dalek::SigningKey,
    from: u64,
    to: u64,
    acked: &mut Vec<(u64, Hash)>,
) {
    let mut i = from;
    while i < to {
        let end = (i + 10).min(to);
        let statements = (i..end)
            .map(|n| Statement::sign("x-note", payload(n), admin))
            .collect();
        for r in ledger.append_many(statements).expect("append") {
            let r = r.expect("an x-note is admitted");
            assert!(!r.duplicate, "payloads are unique");
            assert_eq!(r.seq, acked.len() as u64, "receipts are consecutive");
            acked.push((r.seq, r.leaf_hash));
        }
        i = end;
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create the copy");
    for entry in fs::read_dir(from).expect("read a directory to copy") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// Files under `dir` (recursively), relative to `base`, sorted.
fn files_under(base: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).expect("read directory") {
        let entry = entry.expect("directory entry");
        if entry.file_type().expect("file type").is_dir() {
            out.extend(files_under(base, &entry.path()));
        } else {
            out.push(
                entry
                    .path()
                    .strip_prefix(base)
                    .expect("under base")
                    .to_path_buf(),
            );
        }
    }
    out.sort();
    out
}

fn build_fixture(layout: Layout) -> Fixture {
    let options = || LedgerOptions {
        layout,
        ..LedgerOptions::default()
    };
    let root = tempfile::tempdir().expect("temp dir");
    let pristine = root.path().join("pristine");
    let earlier = root.path().join("earlier");
    let old_snapshots = root.path().join("old-snapshots");
    let scratch = root.path().join("cases");
    fs::create_dir_all(&scratch).expect("scratch dir");

    let (ledger, info) =
        docket_domain::ledger::init_with(&pristine, None, options()).expect("init");
    let admin = keys::read_key_file(&info.admin_key_path).expect("admin key");
    let mut acked = vec![(0, ledger.leaf_hash(0).expect("genesis leaf"))];
    append(&ledger, &admin, 0, SNAPSHOT_AFTER, &mut acked);
    ledger.snapshot().expect("snapshot");
    copy_dir(&pristine.join("snapshots"), &old_snapshots);
    append(&ledger, &admin, SNAPSHOT_AFTER, COPY_AFTER, &mut acked);
    ledger.close().expect("close");
    drop(ledger);
    copy_dir(&pristine, &earlier);
    let ledger = Ledger::open(&pristine, options()).expect("reopen");
    append(&ledger, &admin, COPY_AFTER, EVENTS, &mut acked);
    ledger.close().expect("close");
    drop(ledger);

    // Another ledger, longer than ours: its anchor is authentic, but not ours.
    let foreign = root.path().join("foreign");
    let (other, info) =
        docket_domain::ledger::init_with(&foreign, None, options()).expect("init foreign");
    let other_admin = keys::read_key_file(&info.admin_key_path).expect("foreign admin key");
    let statements = (0..EVENTS + 50)
        .map(|n| {
            Statement::sign(
                "x-note",
                format!("{{\"foreign\":{n}}}").into_bytes(),
                &other_admin,
            )
        })
        .collect();
    for r in other.append_many(statements).expect("foreign append") {
        r.expect("foreign x-note admitted");
    }
    other.close().expect("close foreign");
    drop(other);

    Fixture {
        store: match layout {
            Layout::Sled => "log",
            _ => "tiles",
        },
        pristine,
        earlier,
        old_snapshots,
        foreign_anchor: foreign.join("anchor"),
        scratch,
        acked,
        _root: root,
    }
}

// ---------------------------------------------------------------------------
// Damage primitives.

fn flip(path: &Path, offset: u64) {
    let mut bytes = fs::read(path).expect("read file to flip");
    let i = usize::try_from(offset).expect("offset fits");
    bytes[i] ^= 0xff;
    fs::write(path, bytes).expect("write flipped file");
}

fn truncate(path: &Path, len: u64) {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(len))
        .expect("truncate");
}

fn remove(path: &Path) {
    if path.is_dir() {
        fs::remove_dir_all(path).expect("remove dir");
    } else {
        fs::remove_file(path).expect("remove file");
    }
}

fn replace_dir(dir: &Path, with: &Path) {
    fs::remove_dir_all(dir).expect("remove dir to replace");
    copy_dir(with, dir);
}

/// Bytes per slot of the anchor ring `docket init` makes: eight slots
/// (docs/FORMAT.md §9).
const SLOT: usize = 65_536;
const SLOTS: usize = 8;
/// Slot header (docs/FORMAT.md §9): magic `DKTANCH3` (8), note length (4),
/// redo length (4), SHA-256 of those lengths, the note and the redo (32).
const SLOT_HEADER: usize = 48;

/// The note's length in a slot.
fn note_len(slot: &[u8]) -> usize {
    u32::from_be_bytes(slot[8..12].try_into().expect("4 bytes")) as usize
}

/// The tree size the note in `slot` names, if the slot holds one.
fn slot_size(anchor: &[u8], slot: usize) -> Option<u64> {
    let s = &anchor[slot * SLOT..(slot + 1) * SLOT];
    if &s[..8] != b"DKTANCH3" && &s[..8] != b"DKTANCH2" {
        return None;
    }
    let note = std::str::from_utf8(s.get(SLOT_HEADER..SLOT_HEADER + note_len(s))?).ok()?;
    note.lines().nth(1)?.parse().ok()
}

/// The slot holding the note with the largest tree size (the one that
/// opens).
fn newest_slot(anchor: &[u8]) -> usize {
    (0..SLOTS)
        .filter_map(|i| slot_size(anchor, i).map(|size| (size, i)))
        .max()
        .map_or(0, |(_, i)| i)
}

/// The valid slot naming the largest size below the newest one's.
fn older_slot(anchor: &[u8]) -> usize {
    let newest = newest_slot(anchor);
    (0..SLOTS)
        .filter(|i| *i != newest)
        .filter_map(|i| slot_size(anchor, i).map(|size| (size, i)))
        .max()
        .map(|(_, i)| i)
        .expect("the fixture's anchor holds more than one slot")
}

fn edit_anchor(path: &Path, f: impl FnOnce(&mut [u8])) {
    let mut bytes = fs::read(path).expect("read anchor");
    assert_eq!(
        bytes.len(),
        SLOTS * SLOT,
        "the anchor is a ring of eight slots"
    );
    f(&mut bytes);
    fs::write(path, bytes).expect("write anchor");
}

/// Changes one character of the root line of the newest note and recomputes
/// the slot's checksum: a well-formed slot whose signature cannot verify.
fn forge_newest_note(bytes: &mut [u8]) {
    use sha2::Digest as _;
    let slot = newest_slot(bytes);
    let s = &mut bytes[slot * SLOT..(slot + 1) * SLOT];
    let len = note_len(s);
    let redo_len = u32::from_be_bytes(s[12..16].try_into().expect("4 bytes")) as usize;
    let note = &mut s[SLOT_HEADER..SLOT_HEADER + len];
    let root_line = note
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .map(|(i, _)| i + 1)
        .expect("a checkpoint note has a root line");
    note[root_line] = if note[root_line] == b'A' { b'B' } else { b'A' };
    let mut h = sha2::Sha256::new();
    h.update(&s[8..16]);
    h.update(&s[SLOT_HEADER..SLOT_HEADER + len + redo_len]);
    let digest = h.finalize();
    s[16..SLOT_HEADER].copy_from_slice(&digest);
}

/// Sealed snapshot layout: magic (8), seq (8), root (32), body length (8),
/// body, signature (64).
fn edit_snapshot_body(sealed: &[u8], f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut body = sealed[56..sealed.len() - 64].to_vec();
    f(&mut body);
    let mut out = sealed[..48].to_vec();
    out.extend_from_slice(&(body.len() as u64).to_be_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&sealed[sealed.len() - 64..]);
    out
}

/// A well-formed but wrong value: "admin" becomes "auditor", else a digit
/// changes, else trailing white space (same JSON value, different bytes).
fn wrong_value(body: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(body).into_owned();
    if text.contains("\"admin\"") {
        *body = text.replacen("\"admin\"", "\"auditor\"", 1).into_bytes();
    } else if let Some(i) = body.iter().position(u8::is_ascii_digit) {
        body[i] = if body[i] == b'9' { b'0' } else { body[i] + 1 };
    } else {
        body.push(b' ');
    }
}

/// Re-seals snapshot `name` under `dir` with the ledger key but a different
/// body: authentic, yet not what the log folds to.
fn reseal_wrong(dir: &Path, name: &str) {
    let key = keys::read_key_file(&dir.join("keys/ledger.key")).expect("ledger key");
    let path = dir.join(format!("snapshots/{name}.snap"));
    let sealed = fs::read(&path).expect("read snapshot");
    let s = snapshot::open(name, &sealed, &key.verifying_key()).expect("pristine is authentic");
    let mut body = s.body.clone();
    wrong_value(&mut body);
    if name == "meta" {
        // A time long before the real one: restores fine, differs on replay.
        body = b"1".to_vec();
    }
    assert_ne!(body, s.body);
    fs::write(&path, snapshot::seal(name, s.seq, &s.root, &body, &key)).expect("write snapshot");
}

// ---------------------------------------------------------------------------
// Cases.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Either refused (naming where) or every acknowledged event intact;
    /// when it opens, `replay --verify` is clean or reports the damage
    /// (exit 5) naming where (damage the open does not read, such as an
    /// old commit record, is found by the full check).
    RefusedOrIntact,
    /// Must be refused.
    Refused,
    /// Must open with every event intact; `warns`: stderr warns about a
    /// snapshot.
    Intact { warns: bool },
    /// An authentic snapshot that differs from the log: opens intact,
    /// `replay --verify` exits 3.
    Mismatch,
}

type Damage = Box<dyn Fn(&Path, &Fixture) + Send + Sync>;

struct Case {
    name: String,
    expect: Expect,
    /// Exit codes an opening command may refuse with.
    refusal_codes: &'static [i32],
    /// Exit codes `replay --verify` may give after a refusal.
    replay_after_refusal: &'static [i32],
    /// Exit codes `replay --verify` must give before anything opens the
    /// ledger.
    replay_first: Option<&'static [i32]>,
    /// Words (lower case) a refusal must contain, besides a location.
    mentions: Vec<String>,
    damage: Damage,
}

impl Case {
    fn new(
        name: impl Into<String>,
        expect: Expect,
        damage: impl Fn(&Path, &Fixture) + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            expect,
            refusal_codes: &[5],
            replay_after_refusal: &[5],
            replay_first: None,
            mentions: Vec::new(),
            damage: Box::new(damage),
        }
    }

    fn refusal_codes(mut self, codes: &'static [i32]) -> Self {
        self.refusal_codes = codes;
        self
    }

    fn replay_after_refusal(mut self, codes: &'static [i32]) -> Self {
        self.replay_after_refusal = codes;
        self
    }

    fn replay_first(mut self, codes: &'static [i32]) -> Self {
        self.replay_first = Some(codes);
        self
    }

    fn mentions(mut self, words: &[&str]) -> Self {
        self.mentions = words.iter().map(|w| w.to_string()).collect();
        self
    }
}

/// ~12 offsets spread over a file of `len` bytes: start, header area,
/// quarters, end, two random ones, and `tail_random` more in the second half
/// (where a log-structured file keeps its live data).
fn flip_offsets(len: u64, tail_random: usize, rng: &mut Rng) -> Vec<u64> {
    let mut v = vec![
        0,
        1,
        8,
        20,
        100,
        512,
        len / 4,
        len / 2,
        len * 3 / 4,
        len.saturating_sub(64),
        len.saturating_sub(1),
        rng.below(len),
        rng.below(len),
    ];
    v.extend((0..tail_random).map(|_| len / 2 + rng.below(len - len / 2)));
    v.retain(|&o| o < len);
    v.sort_unstable();
    v.dedup();
    v
}

fn truncation_lengths(len: u64, rng: &mut Rng) -> Vec<u64> {
    let mut v = vec![
        0,
        1,
        4096,
        len / 2,
        len.saturating_sub(1),
        len.saturating_sub(100),
        rng.below(len),
        rng.below(len),
        rng.below(len),
    ];
    v.retain(|&l| l < len);
    v.sort_unstable();
    v.dedup();
    v
}

fn cases(fx: &Fixture, rng: &mut Rng) -> Vec<Case> {
    use Expect::*;
    let mut out = Vec::new();
    let store = fx.store;
    let main_file = Path::new(match store {
        "log" => "log/db",
        _ => "tiles/commits",
    });
    let log_files = files_under(&fx.pristine, &fx.pristine.join(store));
    let file_len = |rel: &Path| fs::metadata(fx.pristine.join(rel)).expect("stat").len();

    // 1. One byte flipped at ~12 offsets of every file under log/ (12 more
    // in the live half of the main file).
    for rel in &log_files {
        let tail_random = if rel.as_path() == main_file { 12 } else { 0 };
        for offset in flip_offsets(file_len(rel), tail_random, rng) {
            let r = rel.clone();
            out.push(Case::new(
                format!("flip {} @{offset}", rel.display()),
                RefusedOrIntact,
                move |dir, _| flip(&dir.join(&r), offset),
            ));
        }
    }

    // 2. Truncations of every file under log/ (log/db, blob files, sled's
    // page-table snapshots, its config).
    for rel in &log_files {
        for len in truncation_lengths(file_len(rel), rng) {
            let r = rel.clone();
            out.push(Case::new(
                format!("truncate {} to {len}", rel.display()),
                RefusedOrIntact,
                move |dir, _| truncate(&dir.join(&r), len),
            ));
        }
    }

    // 3. Snapshots.
    let snapshots = files_under(&fx.pristine, &fx.pristine.join("snapshots"));
    for rel in &snapshots {
        let len = file_len(rel);
        let r = rel.clone();
        out.push(
            Case::new(
                format!("edit {} to a wrong value", rel.display()),
                Intact { warns: true },
                move |dir, _| {
                    let p = dir.join(&r);
                    let sealed = fs::read(&p).expect("read snapshot");
                    fs::write(&p, edit_snapshot_body(&sealed, wrong_value)).expect("write");
                },
            )
            .replay_first(&[5]),
        );
        for to in [len / 2, len - 1] {
            let r = rel.clone();
            out.push(
                Case::new(
                    format!("truncate {} to {to}", rel.display()),
                    Intact { warns: true },
                    move |dir, _| truncate(&dir.join(&r), to),
                )
                .replay_first(&[5]),
            );
        }
        let r = rel.clone();
        out.push(
            Case::new(
                format!("delete {}", rel.display()),
                Intact { warns: true },
                move |dir, _| remove(&dir.join(&r)),
            )
            .replay_first(&[0]),
        );
    }
    out.push(
        Case::new(
            "older authentic snapshots (after 100 events)",
            Intact { warns: false },
            |dir, fx| replace_dir(&dir.join("snapshots"), &fx.old_snapshots),
        )
        .replay_first(&[0]),
    );
    out.push(
        Case::new(
            "one older authentic snapshot (keys), the others current",
            Intact { warns: false },
            |dir, fx| {
                fs::copy(
                    fx.old_snapshots.join("keys.snap"),
                    dir.join("snapshots/keys.snap"),
                )
                .expect("copy old keys snapshot");
            },
        )
        .replay_first(&[0]),
    );
    out.push(
        Case::new(
            "snapshot meta re-sealed by the ledger key with a wrong value",
            Mismatch,
            |dir, _| reseal_wrong(dir, "meta"),
        )
        .replay_first(&[3]),
    );

    // 4. The anchor.
    out.push(
        Case::new("delete anchor", Refused, |dir, _| {
            remove(&dir.join("anchor"));
        })
        .mentions(&["anchor"]),
    );
    for (label, newest) in [("newest", true), ("older", false)] {
        out.push(Case::new(
            format!("zero the {label} anchor slot"),
            Intact { warns: false },
            move |dir, _| {
                edit_anchor(&dir.join("anchor"), |b| {
                    let slot = if newest {
                        newest_slot(b)
                    } else {
                        older_slot(b)
                    };
                    b[slot * SLOT..(slot + 1) * SLOT].fill(0);
                });
            },
        ));
    }
    out.push(
        Case::new("zero every anchor slot", Refused, |dir, _| {
            edit_anchor(&dir.join("anchor"), |b| b.fill(0));
        })
        .mentions(&["anchor"]),
    );
    out.push(Case::new(
        "flip a byte in the newest anchor note",
        RefusedOrIntact,
        |dir, _| {
            edit_anchor(&dir.join("anchor"), |b| {
                b[newest_slot(b) * SLOT + SLOT_HEADER + 3] ^= 0xff;
            });
        },
    ));
    out.push(
        Case::new("flip a byte in every anchor note", Refused, |dir, _| {
            edit_anchor(&dir.join("anchor"), |b| {
                for slot in 0..SLOTS {
                    b[slot * SLOT + SLOT_HEADER + 3] ^= 0xff;
                }
            });
        })
        .mentions(&["anchor"]),
    );
    out.push(
        Case::new(
            "forge the newest anchor note (slot checksum recomputed)",
            Refused,
            |dir, _| edit_anchor(&dir.join("anchor"), forge_newest_note),
        )
        .mentions(&["anchor"]),
    );
    out.push(Case::new(
        "truncate anchor to one slot",
        RefusedOrIntact,
        |dir, _| truncate(&dir.join("anchor"), SLOT as u64),
    ));
    out.push(
        Case::new("anchor of another, longer ledger", Refused, |dir, fx| {
            fs::copy(&fx.foreign_anchor, dir.join("anchor")).expect("copy foreign anchor");
        })
        .mentions(&["anchor"]),
    );
    let earlier_len = (COPY_AFTER + 1).to_string();
    out.push(
        Case::new(
            format!("{store}/ of 151 events under the anchor of 301"),
            Refused,
            move |dir, fx| replace_dir(&dir.join(store), &fx.earlier.join(store)),
        )
        .mentions(&["missing", &earlier_len]),
    );
    out.push(
        Case::new(
            format!("{store}/ and snapshots/ of 151 events under the anchor of 301"),
            Refused,
            move |dir, fx| {
                replace_dir(&dir.join(store), &fx.earlier.join(store));
                replace_dir(&dir.join("snapshots"), &fx.earlier.join("snapshots"));
            },
        )
        .mentions(&["missing", &earlier_len]),
    );
    out.push(Case::new(
        "anchor of 151 events over the log of 301 (never acknowledged tail re-anchored)",
        Intact { warns: false },
        |dir, fx| {
            fs::copy(fx.earlier.join("anchor"), dir.join("anchor")).expect("copy older anchor");
        },
    ));

    // 5. Deleted files and directories.
    out.push(
        Case::new("delete ledger.json", Refused, |dir, _| {
            remove(&dir.join("ledger.json"));
        })
        .refusal_codes(&[4, 5])
        .replay_after_refusal(&[4, 5])
        .mentions(&["ledger.json"]),
    );
    for (label, rel) in [
        ("delete keys/ledger.key", "keys/ledger.key"),
        ("delete keys/", "keys"),
    ] {
        // replay --verify needs only the public key (ledger.json) to check
        // the log, but a data directory without its ledger key cannot be
        // opened again: the full check reports it (a `ledger_key` finding).
        out.push(
            Case::new(label, Refused, move |dir, _| remove(&dir.join(rel)))
                .refusal_codes(&[4, 5])
                .replay_after_refusal(&[5])
                .mentions(&["ledger.key"]),
        );
    }
    // A ledger key file that no longer parses is damage at rest (exit 5
    // naming it), not bad input.
    for (label, garbage) in [
        (
            "garble keys/ledger.key (text)",
            &b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"[..],
        ),
        (
            "garble keys/ledger.key (binary)",
            &[0xFF, 0xFE, 0x00, 0x81][..],
        ),
    ] {
        out.push(
            Case::new(label, Refused, move |dir, _| {
                // (Written in place: the file keeps its mode 0600.)
                std::fs::write(dir.join("keys/ledger.key"), garbage).expect("write the key file");
            })
            .replay_after_refusal(&[5])
            .mentions(&["ledger.key"]),
        );
    }
    out.push(
        Case::new(
            "another ledger's key in keys/ledger.key",
            Refused,
            |dir, _| {
                let other = keys::generate().expect("a key");
                std::fs::remove_file(dir.join("keys/ledger.key")).expect("remove the key file");
                keys::write_key_file(&dir.join("keys/ledger.key"), &other)
                    .expect("write the key file");
            },
        )
        .replay_after_refusal(&[5])
        .mentions(&["ledger.key"]),
    );
    let store_dir = format!("{store}/");
    out.push(
        Case::new(format!("delete {store}/"), Refused, move |dir, _| {
            remove(&dir.join(store))
        })
        .mentions(&[&store_dir]),
    );
    out.push(Case::new(
        format!("delete {}", main_file.display()),
        Refused,
        move |dir, _| remove(&dir.join(main_file)),
    ));
    for rel in log_files.iter().filter(|r| r.as_path() != main_file) {
        let r = rel.clone();
        out.push(Case::new(
            format!("delete {}", rel.display()),
            RefusedOrIntact,
            move |dir, _| remove(&dir.join(&r)),
        ));
    }
    out.push(Case::new("delete snapshots/", RefusedOrIntact, |dir, _| {
        remove(&dir.join("snapshots"))
    }));
    out
}

// ---------------------------------------------------------------------------
// Running a case.

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The refusal message: the JSON `error`, else what went to stderr.
    fn message(&self) -> String {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find_map(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| self.stderr.trim().to_string())
    }
}

fn docket(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(["--json", "--data"])
        .arg(dir)
        .args(args)
        .env_remove("DOCKET_LOG")
        .env_remove("DOCKET_DATA")
        .env_remove("DOCKET_SERVER")
        .output()
        .expect("run docket");
    Run {
        // A signal (no code) is as bad as a panic.
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The opening command: `log show` of the last acknowledged event.
fn open_cmd(dir: &Path) -> Run {
    docket(dir, &["log", "show", &EVENTS.to_string()])
}

/// `replay --verify`, checking the shape of its JSON.
fn replay_verify(dir: &Path, problems: &mut Vec<String>, when: &str) -> Run {
    let run = docket(dir, &["replay", "--verify"]);
    match serde_json::from_str::<serde_json::Value>(run.stdout.trim()) {
        Err(_) => problems.push(format!(
            "replay --verify ({when}) printed no JSON (exit {}): {}",
            run.code,
            run.stderr.trim()
        )),
        Ok(v) => {
            if v["exit_code"].as_i64() != Some(i64::from(run.code)) {
                problems.push(format!(
                    "replay --verify ({when}) exited {} but its JSON says exit_code {}",
                    run.code, v["exit_code"]
                ));
            }
            if let Some(findings) = v["report"]["findings"].as_array() {
                for f in findings {
                    let well_formed = f["kind"].is_string()
                        && f["detail"].is_string()
                        && (f["seq"].is_u64() || f["seq"].is_null());
                    if !well_formed {
                        problems.push(format!("replay --verify ({when}): finding {f}"));
                    }
                }
                if run.code != 0 && findings.is_empty() {
                    problems.push(format!(
                        "replay --verify ({when}) exited {} with no finding",
                        run.code
                    ));
                }
            } else if v["error"].is_null() {
                problems.push(format!(
                    "replay --verify ({when}): no report nor error: {v}"
                ));
            }
        }
    }
    run
}

/// The open ledger holds exactly `acked`, and its checkpoint covers them.
fn compare_with_receipts(ledger: &Ledger, acked: &[(u64, Hash)]) -> Result<(), String> {
    if ledger.len() != acked.len() as u64 {
        return Err(format!(
            "the log holds {} events, {} were acknowledged",
            ledger.len(),
            acked.len()
        ));
    }
    for (seq, leaf) in acked {
        let stored = ledger
            .leaf_hash(*seq)
            .map_err(|e| format!("leaf of event {seq}: {e}"))?;
        let bytes = ledger
            .event_bytes(*seq)
            .map_err(|e| format!("bytes of event {seq}: {e}"))?;
        if stored != *leaf || merkle::leaf_hash(&bytes) != *leaf {
            return Err(format!("event {seq} differs from its receipt"));
        }
    }
    match ledger.checkpoint() {
        Ok(Some((cp, _))) if cp.size == acked.len() as u64 => Ok(()),
        Ok(Some((cp, _))) => Err(format!("checkpoint of size {}", cp.size)),
        Ok(None) => Err("no checkpoint".into()),
        Err(e) => Err(format!("checkpoint: {e}")),
    }
}

/// The log holds exactly the acknowledged events, byte for byte (leaf
/// hashes of the stored bytes and stored leaves), and is anchored at its
/// length.
fn check_intact(dir: &Path, acked: &[(u64, Hash)]) -> Result<(), String> {
    let ledger = Ledger::open(dir, LedgerOptions::default())
        .map_err(|e| format!("in-process open after the CLI said 0: {e}"))?;
    let result = compare_with_receipts(&ledger, acked);
    ledger
        .close()
        .map_err(|e| format!("closing in-process: {e}"))?;
    result
}

/// Whether a refusal says where: a numbered event, the anchor, `log/`, a
/// snapshot, the Merkle nodes, `ledger.json` or the keys.
fn names_location(message: &str) -> bool {
    let m = message.to_lowercase();
    let numbered = |word: &str| {
        m.match_indices(word)
            .any(|(i, w)| m[i + w.len()..].starts_with(|c: char| c.is_ascii_digit()))
    };
    LOCATIONS.iter().any(|w| m.contains(w)) || numbered("event ") || numbered("events ")
}

fn short(s: &str) -> String {
    let s = s.replace('\n', " ");
    if s.len() > 300 {
        let mut end = 300;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    } else {
        s
    }
}

struct Row {
    name: String,
    open: i32,
    replay: i32,
    outcome: String,
    problems: Vec<String>,
}

fn run_case(case: &Case, fx: &Fixture, index: usize) -> Row {
    let dir = fx.scratch.join(format!("case-{index}"));
    copy_dir(&fx.pristine, &dir);
    (case.damage)(&dir, fx);
    let mut problems = Vec::new();

    if let Some(codes) = case.replay_first {
        let r = replay_verify(&dir, &mut problems, "before opening");
        if !codes.contains(&r.code) {
            problems.push(format!(
                "replay --verify before opening exited {}, expected one of {codes:?}: {}",
                r.code,
                short(&r.stdout)
            ));
        }
    }

    let open = open_cmd(&dir);
    let replay = replay_verify(&dir, &mut problems, "after opening");
    let outcome;
    if open.code == 0 {
        outcome = "intact".to_string();
        let (last_seq, last_leaf) = fx.acked[fx.acked.len() - 1];
        let shown =
            serde_json::from_str::<serde_json::Value>(open.stdout.trim()).unwrap_or_default();
        if shown["seq"].as_u64() != Some(last_seq)
            || shown["leaf_hash"].as_str() != Some(hex::encode(last_leaf).as_str())
        {
            problems.push(format!(
                "log show {last_seq} does not show the acknowledged event: {}",
                short(&open.stdout)
            ));
        }
        if case.expect == Expect::Refused {
            problems.push("opened (exit 0) but must be refused".into());
        }
        if case.expect == (Expect::Intact { warns: true })
            && !open.stderr.to_lowercase().contains("snapshot")
        {
            problems.push(format!(
                "no warning about the rebuilt snapshot on stderr: {:?}",
                short(&open.stderr)
            ));
        }
        let want_replay = if case.expect == Expect::Mismatch {
            3
        } else {
            0
        };
        let detected_by_replay = case.expect == Expect::RefusedOrIntact
            && replay.code == 5
            && names_location(&replay.stdout);
        if replay.code != want_replay && !detected_by_replay {
            problems.push(format!(
                "opened, but replay --verify exited {} (expected {want_replay}): {}",
                replay.code,
                short(&replay.stdout)
            ));
        }
        if let Err(e) = check_intact(&dir, &fx.acked) {
            problems.push(format!("SILENTLY DIFFERENT: {e}"));
        }
    } else if case.refusal_codes.contains(&open.code) {
        let message = open.message();
        outcome = format!("refused: {}", short(&message));
        if matches!(case.expect, Expect::Intact { .. } | Expect::Mismatch) {
            problems.push(format!("refused (exit {}) but must open", open.code));
        }
        if !names_location(&message) {
            problems.push(format!(
                "the refusal names no location: {}",
                short(&message)
            ));
        }
        let lower = message.to_lowercase();
        for w in &case.mentions {
            if !lower.contains(w.as_str()) {
                problems.push(format!(
                    "the refusal does not mention {w:?}: {}",
                    short(&message)
                ));
            }
        }
        if !case.replay_after_refusal.contains(&replay.code) {
            problems.push(format!(
                "refused, but replay --verify exited {} (expected one of {:?}): {}",
                replay.code,
                case.replay_after_refusal,
                short(&replay.stdout)
            ));
        }
        // A refused open must not have "repaired" anything into a shorter log.
        let again = open_cmd(&dir);
        if again.code == 0 {
            if let Err(e) = check_intact(&dir, &fx.acked) {
                problems.push(format!("SILENTLY SHORTER after a refused open: {e}"));
            }
        } else if !case.refusal_codes.contains(&again.code) {
            problems.push(format!(
                "second open exited {}: {}",
                again.code,
                short(&again.message())
            ));
        }
    } else {
        outcome = format!("exit {}: {}", open.code, short(&open.message()));
        problems.push(format!(
            "open exited {} ({}): {}",
            open.code,
            match open.code {
                101 => "panic",
                10 => "unexpected error for damage",
                -1 => "killed by a signal",
                _ => "not an accepted code",
            },
            short(&open.message())
        ));
    }
    // A panic caught inside the ledger is reported as damage; the panic's
    // own message (and its backtrace hint) must not reach the operator.
    for (what, run) in [("the open", &open), ("replay --verify", &replay)] {
        if run.stderr.contains("panicked at") {
            problems.push(format!(
                "{what} printed a panic message on stderr: {}",
                short(&run.stderr)
            ));
        }
    }
    if replay.code == 101 || replay.code == 10 || replay.code == -1 {
        problems.push(format!(
            "replay --verify exited {}: {}",
            replay.code,
            short(&format!("{} {}", replay.stdout, replay.stderr))
        ));
    }
    let _ = fs::remove_dir_all(&dir);
    Row {
        name: case.name.clone(),
        open: open.code,
        replay: replay.code,
        outcome,
        problems,
    }
}

#[test]
fn given_any_damage_to_a_sled_ledger_when_opening_then_refused_naming_where_or_intact() {
    damage_matrix(Layout::Sled);
}

#[test]
fn given_any_damage_to_a_tile_ledger_when_opening_then_refused_naming_where_or_intact() {
    damage_matrix(Layout::Tiles);
}

fn damage_matrix(layout: Layout) {
    let started = std::time::Instant::now();
    let seed = std::env::var("DOCKET_CORRUPTION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let fx = build_fixture(layout);
    let built = started.elapsed();
    let mut rng = Rng(seed | 1);
    let mut all = cases(&fx, &mut rng);
    if let Ok(only) = std::env::var("DOCKET_CORRUPTION_ONLY") {
        all.retain(|c| c.name.contains(&only));
    }

    for rel in files_under(&fx.pristine, &fx.pristine) {
        let len = fs::metadata(fx.pristine.join(&rel)).map_or(0, |m| m.len());
        println!("pristine file {:<40} {len:>10} bytes", rel.display());
    }
    // The undamaged ledger opens intact and verifies clean.
    let control = Case::new(
        "control: no damage",
        Expect::Intact { warns: false },
        |_, _| {},
    );
    let row = run_case(&control, &fx, usize::MAX);
    assert!(row.problems.is_empty(), "undamaged: {:?}", row.problems);

    let next = AtomicUsize::new(0);
    let rows: Mutex<Vec<(usize, Row)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = all.get(i) else { break };
                    let row = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        run_case(case, &fx, i)
                    }))
                    .unwrap_or_else(|p| Row {
                        name: case.name.clone(),
                        open: -1,
                        replay: -1,
                        outcome: "the test harness panicked".into(),
                        problems: vec![format!(
                            "harness panic: {}",
                            p.downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default()
                        )],
                    });
                    rows.lock().expect("rows").push((i, row));
                }
            });
        }
    });
    let mut rows = rows.into_inner().expect("rows");
    rows.sort_by_key(|(i, _)| *i);

    println!(
        "corruption matrix: {} cases, seed {seed}, fixture built in {built:.1?}, total {:.1?}",
        rows.len(),
        started.elapsed()
    );
    println!("{:<72} {:>4} {:>6}  outcome", "case", "open", "replay");
    for (_, r) in &rows {
        let mark = if r.problems.is_empty() { "" } else { "✗ " };
        println!(
            "{:<72} {:>4} {:>6}  {mark}{}",
            r.name,
            r.open,
            r.replay,
            short(&r.outcome)
        );
    }
    let refused = rows
        .iter()
        .filter(|(_, r)| r.outcome.starts_with("refused"))
        .count();
    let intact = rows.iter().filter(|(_, r)| r.outcome == "intact").count();
    println!(
        "{} refused, {} intact, {} other",
        refused,
        intact,
        rows.len() - refused - intact
    );
    let violations: Vec<String> = rows
        .iter()
        .filter(|(_, r)| !r.problems.is_empty())
        .map(|(_, r)| format!("{}:\n    {}", r.name, r.problems.join("\n    ")))
        .collect();
    assert!(
        violations.is_empty(),
        "{} of {} cases violate the contract:\n{}",
        violations.len(),
        rows.len(),
        violations.join("\n")
    );
}
