//! Tamper tests: rewriting a stored event makes `docket replay --verify` exit
//! 5 naming the sequence; a doctored projection snapshot exits 3.

use std::process::Command;

use docket_domain::store::{SledStore, Store};
use docket_domain::{LedgerOptions, Statement, keys};
use docket_log::Layout;
use docket_log::tiles::TileStore;

const LAYOUTS: [Layout; 2] = [Layout::Tiles, Layout::Sled];

fn docket() -> Command {
    Command::new(env!("CARGO_BIN_EXE_docket"))
}

fn ledger_with_events(dir: &std::path::Path, n: usize) {
    ledger_of_layout(dir, n, Layout::default());
}

fn ledger_of_layout(dir: &std::path::Path, n: usize, layout: Layout) {
    let options = LedgerOptions {
        layout,
        ..LedgerOptions::default()
    };
    let (ledger, info) = docket_domain::ledger::init_with(dir, None, options).unwrap();
    let admin = keys::read_key_file(&info.admin_key_path).unwrap();
    for i in 0..n {
        ledger
            .append(Statement::sign(
                "x-note",
                format!("{{\"n\":{i}}}").into_bytes(),
                &admin,
            ))
            .unwrap();
    }
    ledger.close().unwrap();
}

/// Flips bit 0 of byte `back` bytes before the end of event `seq`, in
/// whichever store the closed ledger has.
fn flip_event(dir: &std::path::Path, seq: u64, back: usize) {
    if Layout::of(dir) == Layout::Tiles {
        let (path, offset, len) = TileStore::locate_entry(dir, seq).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[offset as usize + len - back] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
        return;
    }
    let store = SledStore::open(dir).unwrap();
    let mut bytes = store.event_bytes(seq).unwrap().unwrap();
    let at = bytes.len() - back;
    bytes[at] ^= 0x01;
    let mut key = vec![b'e'];
    key.extend_from_slice(&seq.to_be_bytes());
    store.raw_tree().insert(key, bytes).unwrap();
    store.sync().unwrap();
}

/// Deletes events `from..` from the closed ledger's store (a tile bundle
/// holds its events in order: the rest of it goes too; sled loses `from`
/// to `to` only).
fn delete_events(dir: &std::path::Path, from: u64, to: u64) {
    if Layout::of(dir) == Layout::Tiles {
        let (path, offset, _) = TileStore::locate_entry(dir, from).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.set_len(offset - 2).unwrap();
        return;
    }
    let store = SledStore::open(dir).unwrap();
    for seq in from..to {
        let mut key = vec![b'e'];
        key.extend_from_slice(&seq.to_be_bytes());
        store.raw_tree().remove(key).unwrap();
    }
    store.sync().unwrap();
}

fn replay_verify(dir: &std::path::Path) -> (i32, serde_json::Value) {
    let out = docket()
        .args(["--json", "--data"])
        .arg(dir)
        .args(["replay", "--verify"])
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap(), v)
}

#[test]
fn clean_ledger_verifies() {
    let dir = tempfile::tempdir().unwrap();
    ledger_with_events(dir.path(), 10);
    let (code, v) = replay_verify(dir.path());
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["first_damage"], serde_json::Value::Null, "{v}");
}

#[test]
fn rewritten_event_is_found() {
    for layout in LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        ledger_of_layout(dir.path(), 10, layout);
        flip_event(dir.path(), 5, 70); // inside the payload
        let (code, v) = replay_verify(dir.path());
        assert_eq!(code, 5, "{v}");
        let findings = v["report"]["findings"].as_array().unwrap();
        assert_eq!(findings[0]["seq"], 5, "{v}");
        // The lowest sequence number named (docs/OPERATIONS.md step 2).
        assert_eq!(v["first_damage"], 5, "{v}");
        let kinds: Vec<&str> = findings.iter().filter_map(|f| f["kind"].as_str()).collect();
        assert!(kinds.contains(&"signature"), "{kinds:?}");
        assert!(kinds.contains(&"chain"), "{kinds:?}");
        assert!(kinds.contains(&"root"), "{kinds:?}");
    }
}

#[test]
fn deleted_event_is_found() {
    for layout in LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        ledger_of_layout(dir.path(), 10, layout);
        delete_events(dir.path(), 4, 5);
        let (code, v) = replay_verify(dir.path());
        assert_eq!(code, 5, "{layout:?}: {v}");
        assert_eq!(v["report"]["findings"][0]["seq"], 4, "{layout:?}: {v}");
    }
}

#[test]
fn doctored_snapshot_is_tampering_and_is_never_used() {
    let dir = tempfile::tempdir().unwrap();
    ledger_with_events(dir.path(), 3);
    let snap = dir.path().join("snapshots/keys.snap");
    let bytes = std::fs::read(&snap).unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let doctored = text.replacen("\"admin\"", "\"auditor\"", 1);
    assert_ne!(text, doctored);
    std::fs::write(&snap, doctored.as_bytes()).unwrap();
    let (code, v) = replay_verify(dir.path());
    assert_eq!(code, 5, "{v}");
    let detail = v["report"]["findings"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("keys"), "names the snapshot: {detail}");
    // Opening rebuilds it from the log (with a warning); replay is then clean.
    let out = docket()
        .args(["--json", "--data"])
        .arg(dir.path())
        .args(["log", "show", "0"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("keys"),
        "warns about the rebuilt snapshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, v) = replay_verify(dir.path());
    assert_eq!(code, 0, "{v}");
}

#[test]
fn authentic_but_different_snapshot_is_a_determinism_mismatch() {
    // A snapshot sealed with the ledger key whose content differs from the
    // fold: what a non-deterministic projection would write. Exit 3, naming
    // the first differing entry.
    let dir = tempfile::tempdir().unwrap();
    ledger_with_events(dir.path(), 3);
    let ledger_key = keys::read_key_file(&dir.path().join("keys/ledger.key")).unwrap();
    let snap = dir.path().join("snapshots/keys.snap");
    let sealed = std::fs::read(&snap).unwrap();
    let open = docket_log::snapshot::open("keys", &sealed, &ledger_key.verifying_key()).unwrap();
    let body = String::from_utf8(open.body)
        .unwrap()
        .replacen("\"admin\"", "\"auditor\"", 1);
    let resealed =
        docket_log::snapshot::seal("keys", open.seq, &open.root, body.as_bytes(), &ledger_key);
    std::fs::write(&snap, resealed).unwrap();
    let (code, v) = replay_verify(dir.path());
    assert_eq!(code, 3, "{v}");
    let detail = v["report"]["findings"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("keys/keys/"),
        "names the differing key: {detail}"
    );
}

#[test]
fn deleted_snapshot_is_rebuilt_not_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    ledger_with_events(dir.path(), 3);
    std::fs::remove_file(dir.path().join("snapshots/verdicts.snap")).unwrap();
    let (code, v) = replay_verify(dir.path());
    assert_eq!(code, 0, "{v}");
}

/// `docket --data DATA log show SEQ` (a command that opens the ledger).
fn log_show(data: &std::path::Path, seq: u64) -> std::process::Output {
    docket()
        .arg("--data")
        .arg(data)
        .args(["log", "show", &seq.to_string()])
        .output()
        .unwrap()
}

/// Flips one bit of byte `at` of the first level-0 hash tile (a derived
/// file) of the closed tile ledger in `data`: the tile's path, its bytes
/// before and after.
fn flip_in_first_leaf_tile(
    data: &std::path::Path,
    at: usize,
) -> (std::path::PathBuf, Vec<u8>, Vec<u8>) {
    let tile = data.join("tiles/tile/0/000");
    let before = std::fs::read(&tile).unwrap();
    let mut bytes = before.clone();
    bytes[at] ^= 0x01;
    std::fs::write(&tile, &bytes).unwrap();
    (tile, before, bytes)
}

/// `docket --json --data DATA recover --out OUT`: exit code and report.
fn recover(data: &std::path::Path, out: &std::path::Path) -> (Option<i32>, serde_json::Value) {
    let run = docket()
        .args(["--json", "--data"])
        .arg(data)
        .args(["recover", "--out"])
        .arg(out)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|_| serde_json::json!({"stderr": String::from_utf8_lossy(&run.stderr)}));
    (run.status.code(), v)
}

/// A closed tile ledger of 601 events (genesis and 600 notes: bundles 000
/// and 001 full, 002.part open) at `dir/d`, and its verifier key.
fn tile_ledger_of_601(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let data = dir.join("d");
    ledger_of_layout(&data, 600, Layout::Tiles);
    let vkey = vkey_of(&data);
    (data, vkey)
}

/// The verifier key of the ledger in `data` (what an auditor pins).
fn vkey_of(data: &std::path::Path) -> String {
    let ledger_key = keys::read_key_file(&data.join("keys/ledger.key")).unwrap();
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("ledger.json")).unwrap()).unwrap();
    docket_log::checkpoint::verifier_key(
        config["origin"].as_str().unwrap(),
        &ledger_key.verifying_key(),
    )
}

fn audits_clean(bundle: &std::path::Path, vkey: &str) {
    let out = docket()
        .args(["--json", "audit"])
        .arg(bundle)
        .args(["--trusted-key", vkey])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_shortened_log_is_refused_and_its_provable_prefix_recovers() {
    for layout in LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d");
        ledger_of_layout(&data, 30, layout);
        let vkey = vkey_of(&data);
        // Given the last events lost from the store (the anchor still says 31).
        delete_events(&data, 20, 31);
        // When a command opens it: refused, exit 5, naming where.
        let out = log_show(&data, 0);
        assert_eq!(out.status.code(), Some(5));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("event 20") && err.contains("31"), "{err}");
        // Then `docket recover` exports the provable prefix, which audits clean.
        let bundle = dir.path().join("bundle");
        let (code, v) = recover(&data, &bundle);
        assert_eq!(code, Some(5), "events were lost: {v}");
        assert_eq!(v["plan"]["first_damage"], 20, "{v}");
        let prefix = v["plan"]["prefix"].as_u64().unwrap();
        assert!(prefix > 0 && prefix <= 20, "{v}");
        audits_clean(&bundle, &vkey);
    }
}

#[test]
fn a_damaged_hash_tile_loses_nothing_recover_keeps_every_event_and_the_next_open_rewrites_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 300, Layout::Tiles);
    // Given one hash of the first level-0 hash tile (a derived file) flipped,
    let (tile, before, bytes) = flip_in_first_leaf_tile(&data, 32 * 9);
    // when recover runs on it, then it exports every event: the damage is
    // to derived data, not to the events the signed checkpoints prove,
    let (code, v) = recover(&data, &dir.path().join("bundle"));
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["plan"]["lost"], 0, "{v}");
    assert_eq!(v["plan"]["prefix"], v["plan"]["anchor_size"], "{v}");
    assert_eq!(
        std::fs::read(&tile).unwrap(),
        bytes,
        "recover leaves it as it is"
    );
    // and the next open rewrites the tile from the event bytes, saying so,
    let out = log_show(&data, 9);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("tiles/tile/0/000"), "{err}");
    assert_eq!(std::fs::read(&tile).unwrap(), before);
    // after which the full check finds nothing.
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn prove_verifies_against_a_trusted_key() {
    let dir = tempfile::tempdir().unwrap();
    ledger_with_events(dir.path(), 12);
    let run = |args: &[&str]| {
        let out = docket()
            .args(["--json", "--data"])
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        (out.status.code().unwrap(), v)
    };
    // The data directory's own key (ledger.json) is the default anchor.
    let (code, v) = run(&["prove", "inclusion", "4"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["check"]["verified"], true, "{v}");
    assert_eq!(v["check"]["trust"], "ledger.json");
    // An earlier size is tied to the signed checkpoint by consistency.
    let (code, v) = run(&["prove", "inclusion", "2", "--size", "5"]);
    assert_eq!(code, 0, "{v}");
    let (code, v) = run(&["prove", "consistency", "3", "7"]);
    assert_eq!(code, 0, "{v}");
    // A wrong pinned key: the checkpoint does not verify, exit 5.
    let other = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("ledger.json")).unwrap()).unwrap();
    let wrong = docket_log::checkpoint::verifier_key(
        config["origin"].as_str().unwrap(),
        &other.verifying_key(),
    );
    let (code, v) = run(&["prove", "inclusion", "4", "--trusted-key", &wrong]);
    assert_eq!(code, 5, "{v}");
    assert_eq!(v["check"]["verified"], false, "{v}");
}

#[test]
fn a_hash_tile_cut_short_is_named_by_the_full_check_and_recover_keeps_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 600, Layout::Tiles);
    // Given the first level-0 hash tile (derived) cut short,
    std::fs::write(data.join("tiles/tile/0/000"), b"short").unwrap();
    // when the full check runs, then it names the file and goes on from the
    // event bytes (exit 5, no finding against an event),
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 5, "{v}");
    let text = v.to_string();
    assert!(text.contains("tiles/tile/0/000"), "{v}");
    // and recover exports every event, which audits clean.
    let bundle = dir.path().join("bundle");
    let (code, v) = recover(&data, &bundle);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["plan"]["lost"], 0, "{v}");
    assert_eq!(v["plan"]["prefix"], v["plan"]["anchor_size"], "{v}");
    audits_clean(&bundle, &vkey_of(&data));
}

#[test]
fn without_its_anchor_file_a_ledger_is_refused_and_recover_exports_what_its_stored_checkpoints_prove()
 {
    for layout in LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d");
        ledger_of_layout(&data, 40, layout);
        let vkey = vkey_of(&data);
        // Given the anchor file deleted,
        std::fs::remove_file(data.join("anchor")).unwrap();
        // when a command opens the ledger, then it is refused naming the anchor,
        let out = log_show(&data, 0);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{layout:?}: {err}");
        assert!(err.contains("anchor"), "{err}");
        assert!(!data.join("anchor").exists(), "never re-created");
        // and recover exports the events the stored checkpoints prove, but
        // exits 5: without the anchor, later losses cannot be ruled out.
        let bundle = dir.path().join("bundle");
        let (code, v) = recover(&data, &bundle);
        assert_eq!(code, Some(5), "{layout:?}: {v}");
        assert!(v["plan"]["prefix"].as_u64().unwrap() > 0, "{v}");
        assert!(
            v["plan"]["damage"].as_str().unwrap().contains("anchor"),
            "{v}"
        );
        audits_clean(&bundle, &vkey);
    }
}

#[test]
fn a_torn_entry_bundle_is_named_by_the_full_check_and_recover_exports_the_events_before_the_tear() {
    let dir = tempfile::tempdir().unwrap();
    let (data, vkey) = tile_ledger_of_601(dir.path());
    // Given the first full entry bundle cut in the middle of its entries,
    let bundle0 = data.join("tiles/tile/entries/000");
    let bytes = std::fs::read(&bundle0).unwrap();
    std::fs::write(&bundle0, &bytes[..bytes.len() / 2]).unwrap();
    // when a command opens the ledger, then it is refused naming the bundle,
    let out = log_show(&data, 599);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("tiles/tile/entries/000"), "{err}");
    // when the full check runs, then it names the file and the events it
    // cannot read, and goes on past them (exit 5),
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 5, "{v}");
    let text = v.to_string();
    assert!(
        text.contains("tiles/tile/entries/000") && text.contains("cannot be read"),
        "{v}"
    );
    // and recover exports the events before the tear (each commit stored a
    // signed checkpoint), which audit clean, and exits 5 (events were lost);
    let out = dir.path().join("bundle");
    let salvage = dir.path().join("salvage");
    let (code, v) = recover_salvaging(&data, &out, &salvage);
    assert_eq!(code, Some(5), "{v}");
    let first = v["plan"]["first_damage"].as_u64().unwrap();
    let prefix = v["plan"]["prefix"].as_u64().unwrap();
    assert!(first > 0 && first < 256, "{v}");
    assert!(prefix > 0 && prefix <= first, "{v}");
    audits_clean(&out, &vkey);
    // with --salvage-out, the events the cut took (the bytes after it are
    // gone) are missing, and every event of the later bundles is carried,
    // proved by the anchor's checkpoint.
    let missing = &v["salvage"]["missing"];
    let first_lost = missing[0][0].as_u64().unwrap();
    assert_eq!(first_lost, first, "{v}");
    assert_eq!(missing, &serde_json::json!([[first_lost, 255]]), "{v}");
    assert_eq!(
        audited_ranges(&salvage, &vkey),
        serde_json::json!([[0, first_lost - 1], [256, 600]])
    );
}

/// `docket --json --data DATA recover --out OUT --salvage-out SALVAGE`.
fn recover_salvaging(
    data: &std::path::Path,
    out: &std::path::Path,
    salvage: &std::path::Path,
) -> (Option<i32>, serde_json::Value) {
    let run = docket()
        .args(["--json", "--data"])
        .arg(data)
        .args(["recover", "--out"])
        .arg(out)
        .arg("--salvage-out")
        .arg(salvage)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|_| serde_json::json!({"stderr": String::from_utf8_lossy(&run.stderr)}));
    (run.status.code(), v)
}

/// Reads the file at `path`, lets `edit` change its bytes, writes it back
/// (damage at rest, done by hand).
fn edit_file(path: &std::path::Path, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    edit(&mut bytes);
    std::fs::write(path, &bytes).unwrap();
}

/// Overwrites the 2-byte length before event `seq`'s entry in its tile
/// bundle with `len` (0xFFFF runs past any bundle; a small one frames
/// made-up entries).
fn set_entry_length(data: &std::path::Path, seq: u64, len: u16) {
    let (path, offset, _) = TileStore::locate_entry(data, seq).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let at = usize::try_from(offset).unwrap() - 2;
    bytes[at..at + 2].copy_from_slice(&len.to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();
}

/// The runs of events a bundle carries, as its audit (trusted) reports them.
fn audited_ranges(bundle: &std::path::Path, vkey: &str) -> serde_json::Value {
    let out = docket()
        .args(["--json", "audit"])
        .arg(bundle)
        .args(["--trusted-key", vkey])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    v["report"]["ranges"].clone()
}

#[test]
fn given_one_event_lost_in_the_middle_when_recovering_then_every_event_after_it_is_salvaged_and_proved()
 {
    for layout in LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d");
        ledger_of_layout(&data, 600, layout);
        let vkey = vkey_of(&data);
        // Given event 100's bytes lost: in a tile ledger its entry's length
        // garbled (the bundle tears there: every entry after it is framed
        // wrong), in a sled ledger its record removed,
        if layout == Layout::Tiles {
            set_entry_length(&data, 100, 0xFFFF);
        } else {
            delete_events(&data, 100, 101);
        }
        // when recover runs with --salvage-out,
        let prefix_bundle = dir.path().join("prefix");
        let salvage = dir.path().join("salvage");
        let (code, v) = recover_salvaging(&data, &prefix_bundle, &salvage);
        // then the prefix stops before the hole (exit 5: the hole is lost),
        assert_eq!(code, Some(5), "{layout:?}: {v}");
        let prefix = v["plan"]["prefix"].as_u64().unwrap();
        assert!(prefix > 0 && prefix <= 100, "{layout:?}: {v}");
        audits_clean(&prefix_bundle, &vkey);
        // and the salvage bundle carries every other event of the anchored
        // tree (601 events, genesis included), proved by the anchor's
        // checkpoint: only event 100 is missing.
        assert_eq!(v["salvage"]["tree_size"], 601, "{layout:?}: {v}");
        assert_eq!(v["salvage"]["events"], 600, "{layout:?}: {v}");
        assert_eq!(
            v["salvage"]["missing"],
            serde_json::json!([[100, 100]]),
            "{layout:?}: {v}"
        );
        assert_eq!(
            v["salvage"]["after_prefix"].as_u64(),
            Some(600 - prefix),
            "{layout:?}: {v}"
        );
        assert_eq!(
            audited_ranges(&salvage, &vkey),
            serde_json::json!([[0, 99], [101, 600]]),
            "{layout:?}"
        );
    }
}

#[test]
fn given_a_garbled_length_or_a_damaged_kept_leaf_when_salvaging_then_only_the_damaged_event_is_lost()
 {
    type Damage = fn(&std::path::Path);
    let cases: [(&str, Damage, u64); 7] = [
        // An altered event whose leaf nobody kept (the open bundle has no
        // level-0 tile; a full bundle whose tile is gone): the next
        // event's prev_hash gives its leaf.
        (
            "event 532 (open bundle) altered",
            |data| flip_event(data, 532, 40),
            532,
        ),
        (
            "event 100 altered, its level-0 tile deleted",
            |data| {
                flip_event(data, 100, 40);
                std::fs::remove_file(data.join("tiles/tile/0/000")).unwrap();
            },
            100,
        ),
        // In the open bundle (002.part: events 512..=600), which has no
        // level-0 tile: the chain checks the entries and finds the ones
        // after the damage again, for a length that runs past the file and
        // for a small one that frames made-up entries.
        (
            "event 560's length (open bundle) runs past the file",
            |data| {
                set_entry_length(data, 560, 0xFFFF);
            },
            560,
        ),
        (
            "event 570's length (open bundle) says 10 bytes",
            |data| {
                set_entry_length(data, 570, 10);
            },
            570,
        ),
        // A small wrong length still frames whole entries, made-up ones:
        // the entries are checked against their kept leaves.
        (
            "event 300's length says 10 bytes",
            |data| {
                set_entry_length(data, 300, 10);
            },
            300,
        ),
        // An altered event, and the kept leaf of an intact one zeroed: the
        // chain (each event's prev_hash) tells which leaf is right.
        (
            "event 266 altered, event 100's kept leaf zeroed",
            |data| {
                flip_event(data, 266, 40);
                let tile = data.join("tiles/tile/0/000");
                edit_file(&tile, |bytes| bytes[3200..3232].fill(0));
            },
            266,
        ),
        // Both the bytes' framing and the kept leaf of one event gone: the
        // next event's prev_hash gives its leaf.
        (
            "event 356's length garbled and its kept leaf zeroed",
            |data| {
                set_entry_length(data, 356, 0xFFFF);
                let tile = data.join("tiles/tile/0/001");
                edit_file(&tile, |bytes| bytes[100 * 32..101 * 32].fill(0));
            },
            356,
        ),
    ];
    for (what, damage, lost) in cases {
        // Given a tile ledger of 601 events with that damage,
        let dir = tempfile::tempdir().unwrap();
        let (data, vkey) = tile_ledger_of_601(dir.path());
        damage(&data);
        // when recover runs with --salvage-out,
        let salvage = dir.path().join("salvage");
        let (code, v) = recover_salvaging(&data, &dir.path().join("prefix"), &salvage);
        // then only the damaged event is missing from the salvage, which
        // is proved by the anchor and audits clean.
        assert_eq!(code, Some(5), "{what}: {v}");
        assert_eq!(v["salvage"]["tree_size"], 601, "{what}: {v}");
        assert_eq!(
            v["salvage"]["missing"],
            serde_json::json!([[lost, lost]]),
            "{what}: {v}"
        );
        assert_eq!(
            audited_ranges(&salvage, &vkey),
            serde_json::json!([[0, lost - 1], [lost + 1, 600]]),
            "{what}"
        );
    }
}

#[test]
fn given_a_bundle_and_its_leaf_tile_both_gone_when_salvaging_then_a_kept_upper_node_proves_the_events_after()
 {
    // Given a tile ledger of 601 events whose second entry bundle (events
    // 256..=511) and its level-0 hash tile are both deleted: neither the
    // bytes nor the leaves of those events survive, but the node over
    // them (level 8, index 1) is in tiles/partial,
    let dir = tempfile::tempdir().unwrap();
    let (data, vkey) = tile_ledger_of_601(dir.path());
    std::fs::remove_file(data.join("tiles/tile/entries/001")).unwrap();
    std::fs::remove_file(data.join("tiles/tile/0/001")).unwrap();
    let partial = std::fs::read(data.join("tiles/partial")).unwrap();
    // when recover runs with --salvage-out,
    let salvage = dir.path().join("salvage");
    let (code, v) = recover_salvaging(&data, &dir.path().join("prefix"), &salvage);
    // then the prefix stops at the hole, but the salvage is proved by the
    // anchor (size 601) with that node standing in for the lost run: only
    // the 256 events of the deleted bundle are missing, and it audits clean.
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["plan"]["prefix"], 256, "{v}");
    assert_eq!(v["salvage"]["tree_size"], 601, "{v}");
    assert_eq!(
        v["salvage"]["missing"],
        serde_json::json!([[256, 511]]),
        "{v}"
    );
    assert_eq!(
        audited_ranges(&salvage, &vkey),
        serde_json::json!([[0, 255], [512, 600]])
    );
    // (tiles/partial, the only copy of that node, is left as it was.)
    assert!(std::fs::read(data.join("tiles/partial")).unwrap() == partial);
    // And with the level-0 tile damaged rather than deleted (its kept
    // leaves, and the nodes from them, are wrong), the node from
    // tiles/partial still stands in: the same salvage.
    ledger_of_layout(&data.with_extension("b"), 600, Layout::Tiles);
    let data = data.with_extension("b");
    std::fs::remove_file(data.join("tiles/tile/entries/001")).unwrap();
    let tile = data.join("tiles/tile/0/001");
    edit_file(&tile, |bytes| bytes[4096..].fill(0));
    let salvage = dir.path().join("salvage-b");
    let (code, v) = recover_salvaging(&data, &dir.path().join("prefix-b"), &salvage);
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(
        v["salvage"]["missing"],
        serde_json::json!([[256, 511]]),
        "{v}"
    );
    assert_eq!(
        audited_ranges(&salvage, &vkey_of(&data)),
        serde_json::json!([[0, 255], [512, 600]])
    );
}

#[test]
fn given_the_genesis_bundle_gone_when_salvaging_then_the_events_after_it_are_carried_and_their_authority_is_not_passed()
 {
    // Given a tile ledger of 601 events whose first entry bundle (genesis
    // and the key registrations among events 0..=255) is deleted,
    let dir = tempfile::tempdir().unwrap();
    let (data, vkey) = tile_ledger_of_601(dir.path());
    std::fs::remove_file(data.join("tiles/tile/entries/000")).unwrap();
    // when recover runs, first without --salvage-out,
    let prefix = dir.path().join("prefix");
    let (code, v) = recover(&data, &prefix);
    // then there is no prefix to write (no bundle is created), and it
    // says what a salvage would carry (exit 5: acknowledged events lost);
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["plan"]["prefix"], 0, "{v}");
    assert_eq!(v["out"], serde_json::Value::Null, "{v}");
    assert_eq!(v["export"], serde_json::Value::Null, "{v}");
    assert_eq!(v["salvage"]["after_prefix"], 345, "{v}");
    assert!(!prefix.exists());
    // and with --salvage-out, the salvage carries events 256..=600 proved
    // by the anchor (the kept leaves of the lost bundle give the root).
    let salvage = dir.path().join("salvage");
    let (code, v) = recover_salvaging(&data, &prefix, &salvage);
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["salvage"]["tree_size"], 601, "{v}");
    assert_eq!(
        v["salvage"]["missing"],
        serde_json::json!([[0, 255]]),
        "{v}"
    );
    assert!(!prefix.exists());
    // Its audit checks every event and proof but, genesis and the authors'
    // registrations being lost, passes no authority: missing_context, exit 4.
    let out = docket()
        .args(["--json", "audit"])
        .arg(&salvage)
        .args(["--trusted-key", &vkey])
        .output()
        .unwrap();
    let a: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(4), "{a}");
    assert_eq!(
        a["report"]["ranges"],
        serde_json::json!([[256, 600]]),
        "{a}"
    );
    assert!(a.to_string().contains("missing_context"), "{a}");
    // With its level-0 tile gone too, the node over the first 256 events
    // that tiles/partial kept stands in for them: the same salvage;
    std::fs::remove_file(data.join("tiles/tile/0/000")).unwrap();
    let (code, v) = recover_salvaging(&data, &prefix, &dir.path().join("salvage2"));
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(
        v["salvage"]["missing"],
        serde_json::json!([[0, 255]]),
        "{v}"
    );
    // and with tiles/partial gone as well, no leaf and no node is left for
    // them: nothing provable remains (exit 4, nothing written).
    std::fs::remove_file(data.join("tiles/partial")).unwrap();
    let other = dir.path().join("salvage3");
    let (code, v) = recover_salvaging(&data, &prefix, &other);
    assert_eq!(code, Some(4), "{v}");
    assert!(!other.exists());
    assert!(!prefix.exists());
}

#[test]
fn given_a_copy_of_a_key_registration_stored_in_place_of_a_later_event_when_recovering_then_the_damage_is_where_it_is_stored()
 {
    // Given a ledger whose event 1 registers a key (signed, and valid where
    // it belongs), stored again in place of event 266,
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let (ledger, info) =
        docket_domain::ledger::init_with(&data, None, LedgerOptions::default()).unwrap();
    let admin = keys::read_key_file(&info.admin_key_path).unwrap();
    let other = keys::generate().unwrap();
    let registration = format!(
        "{{\"public_key\":\"{}\",\"roles\":[\"submitter\"]}}",
        hex::encode(other.verifying_key().to_bytes())
    );
    ledger
        .append(Statement::sign(
            "key.registered",
            registration.into_bytes(),
            &admin,
        ))
        .unwrap();
    for i in 0..300 {
        let note = format!("{{\"n\":{i}}}").into_bytes();
        ledger
            .append(Statement::sign("x-note", note, &admin))
            .unwrap();
    }
    ledger.close().unwrap();
    drop(ledger);
    let (from_path, from, from_len) = TileStore::locate_entry(&data, 1).unwrap();
    let (to_path, to, to_len) = TileStore::locate_entry(&data, 266).unwrap();
    let source = std::fs::read(&from_path).unwrap();
    let from = usize::try_from(from).unwrap();
    let copy = source[from - 2..from + from_len].to_vec();
    let mut target = std::fs::read(&to_path).unwrap();
    let at = usize::try_from(to).unwrap();
    target.splice(at - 2..at + to_len, copy);
    std::fs::write(&to_path, &target).unwrap();
    // when the full check and recover run, then the damage is found at 266
    // (where the copy is stored; it is not admitted there as the event 1
    // it claims to be, which would refuse it as a second registration), so
    // the provable prefix keeps events 0..266.
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 5, "{v}");
    let seqs: Vec<u64> = v["report"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["seq"].as_u64())
        .collect();
    assert!(seqs.iter().all(|&s| s >= 266), "{v}");
    let (code, v) = recover(&data, &dir.path().join("bundle"));
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["plan"]["first_damage"], 266, "{v}");
    assert_eq!(v["plan"]["prefix"], 266, "{v}");
}

#[test]
fn given_a_damaged_sled_file_when_checked_or_recovered_then_the_file_is_left_as_it_was() {
    // Given a sled ledger whose log/db has 4 KiB zeroed in the middle
    // (sled's own recovery at open would drop and zero what follows),
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 300, Layout::Sled);
    let db = data.join("log/db");
    edit_file(&db, |bytes| bytes[40_000..44_096].fill(0));
    let bytes = std::fs::read(&db).unwrap();
    // when the full check and recover read it (both report damage),
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 5, "{v}");
    let (code, v) = recover_salvaging(
        &data,
        &dir.path().join("prefix"),
        &dir.path().join("salvage"),
    );
    assert_ne!(code, Some(0), "{v}");
    // then the damaged file is byte for byte what it was: they read a
    // private copy (the evidence is kept for whoever investigates).
    assert!(std::fs::read(&db).unwrap() == bytes, "log/db was rewritten");
}

/// Every file under `dir` with its bytes (symbolic links and directories
/// by name only).
fn files_under(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.insert(path.clone(), Vec::new());
                todo.push(path);
            } else if meta.is_file() {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            } else {
                out.insert(path, Vec::new());
            }
        }
    }
    out
}

#[test]
fn given_a_damaged_tile_ledger_when_checked_or_recovered_then_no_file_is_written() {
    // Given a tile ledger of 601 events with an event altered, its partial
    // hash tiles zeroed and its statement index gone (an open in place
    // would rebuild both derived files, and tiles/partial may hold the
    // only copy of a hash a salvage needs),
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 600, Layout::Tiles);
    flip_event(&data, 300, 40);
    let partial = data.join("tiles/partial");
    let len = std::fs::metadata(&partial).unwrap().len();
    std::fs::write(&partial, vec![0u8; usize::try_from(len).unwrap()]).unwrap();
    std::fs::remove_file(data.join("tiles/statements.idx")).unwrap();
    // (and, in the files a private copy hard-links, a kept leaf flipped
    // and stray bytes after a full bundle's entries: a repair replaces or
    // cuts them, never in place),
    let tile = data.join("tiles/tile/0/000");
    edit_file(&tile, |bytes| bytes[100] ^= 1);
    let bundle = data.join("tiles/tile/entries/001");
    edit_file(&bundle, |bytes| bytes.extend_from_slice(b"stray"));
    let before = files_under(&data);
    // when the full check and recover read it (both report damage),
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 5, "{v}");
    let (code, v) = recover_salvaging(
        &data,
        &dir.path().join("prefix"),
        &dir.path().join("salvage"),
    );
    assert_eq!(code, Some(5), "{v}");
    // then every file of the data directory is byte for byte what it was,
    // and none was added: they read a private copy.
    let after = files_under(&data);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &before {
        assert!(after[path] == *bytes, "{} was rewritten", path.display());
    }
}

#[test]
fn given_a_temporary_directory_inside_the_data_directory_when_checking_then_it_is_refused_and_abandoned_copies_are_removed()
 {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 20, Layout::Tiles);
    let before = files_under(&data);
    // Given TMPDIR inside the data directory, when the full check runs,
    // then it is refused (exit 2) naming TMPDIR, and nothing is written.
    let run = docket()
        .env("TMPDIR", data.join("tiles"))
        .args(["--json", "--data"])
        .arg(&data)
        .args(["replay", "--verify"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("TMPDIR"),
        "{run:?}"
    );
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        files_under(&data).keys().collect::<Vec<_>>()
    );
    // Given a private copy a killed process left in TMPDIR (its process
    // is gone, the copy two hours old), when the full check runs, then it
    // is removed, and the
    // check's own copy is gone when it ends.
    let temp = dir.path().join("tmp");
    let abandoned = temp.join("docket-tiles-copy-4194999-1-0");
    std::fs::create_dir_all(abandoned.join("tiles")).unwrap();
    // (two hours old: a younger one may belong to a process this one
    // cannot see)
    std::fs::File::open(&abandoned)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(7200))
        .unwrap();
    let run = docket()
        .env("TMPDIR", &temp)
        .args(["--json", "--data"])
        .arg(&data)
        .args(["replay", "--verify"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert_eq!(std::fs::read_dir(&temp).unwrap().count(), 0);
}

#[test]
fn given_damage_recover_once_gave_up_on_when_recovering_then_it_recovers_what_survives() {
    type Damage = fn(&std::path::Path);
    /// What, the damage, recover's exit code, the largest prefix, the
    /// salvage's one missing run (None: the prefix is everything).
    type Case = (&'static str, Damage, Option<i32>, u64, Option<[u64; 2]>);
    let cases: [Case; 3] = [
        // Zeroes after the open bundle's entries frame 256 empty entries:
        // not a full bundle (they are no events), and past the commit.
        (
            "4 KiB of zeroes appended to the open bundle",
            |data| {
                let part = data.join("tiles/tile/entries/002.part");
                edit_file(&part, |bytes| bytes.extend(vec![0u8; 4096]));
            },
            Some(0),
            601,
            None,
        ),
        // Snapshots are derived: a salvage goes on without their directory.
        (
            "the snapshots directory deleted",
            |data| std::fs::remove_dir_all(data.join("snapshots")).unwrap(),
            Some(0),
            601,
            None,
        ),
        // A commit log the indexes cannot be rebuilt from, and a garbled
        // length in the open bundle.
        (
            "the commit log's first 200 bytes zeroed, event 560's length garbled",
            |data| {
                let commits = data.join("tiles/commits");
                edit_file(&commits, |bytes| bytes[..200].fill(0));
                set_entry_length(data, 560, 0);
            },
            Some(5),
            560,
            Some([560, 560]),
        ),
    ];
    for (what, damage, code_wanted, prefix_at_most, missing) in cases {
        // Given a tile ledger of 601 events with that damage,
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d");
        ledger_of_layout(&data, 600, Layout::Tiles);
        damage(&data);
        // when recover runs with --salvage-out,
        let (code, v) = recover_salvaging(
            &data,
            &dir.path().join("prefix"),
            &dir.path().join("salvage"),
        );
        // then it recovers the prefix, and the salvage misses only the
        // event that is gone.
        assert_eq!(code, code_wanted, "{what}: {v}");
        let prefix = v["plan"]["prefix"].as_u64().unwrap();
        assert!(prefix > 0 && prefix <= prefix_at_most, "{what}: {v}");
        match missing {
            None => assert_eq!(prefix, 601, "{what}: {v}"),
            Some(lost) => assert_eq!(
                v["salvage"]["missing"],
                serde_json::json!([lost]),
                "{what}: {v}"
            ),
        }
    }
}

#[test]
fn given_a_ledger_without_its_snapshots_directory_when_recovering_then_every_event_is_recovered() {
    for layout in LAYOUTS {
        // Given a ledger of 301 events whose snapshots/ (derived) is gone,
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d");
        ledger_of_layout(&data, 300, layout);
        std::fs::remove_dir_all(data.join("snapshots")).unwrap();
        // when recover runs, then it recovers every event (exit 0), and
        // the data directory is left as it was (no snapshots/ made).
        let (code, v) = recover(&data, &dir.path().join("prefix"));
        assert_eq!(code, Some(0), "{layout:?}: {v}");
        assert_eq!(v["plan"]["prefix"], 301, "{layout:?}: {v}");
        assert!(!data.join("snapshots").exists(), "{layout:?}");
    }
}

#[test]
fn given_the_last_commit_torn_when_checked_then_the_repair_in_the_copy_is_said() {
    // Given a tile ledger whose last event's bytes differ on disk from
    // what the anchor's redo holds (as a commit torn at a crash leaves it),
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 300, Layout::Tiles);
    flip_event(&data, 300, 40);
    let before = files_under(&data);
    // when the full check runs, then the ledger is intact (the redo is
    // the acknowledged commit), it says what its open committed again,
    // and the data directory is left as it was.
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 0, "{v}");
    let repaired = v["repaired_in_copy"].as_array().unwrap();
    assert!(
        repaired
            .iter()
            .any(|r| r.as_str().unwrap().contains("anchor's redo")),
        "{v}"
    );
    let after = files_under(&data);
    for (path, bytes) in &before {
        assert!(after[path] == *bytes, "{} was rewritten", path.display());
    }
}

#[test]
fn given_an_intact_ledger_when_recovering_with_salvage_then_no_salvage_bundle_is_written() {
    // Given an intact ledger (the prefix is the whole anchored log),
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 20, Layout::Tiles);
    let vkey = vkey_of(&data);
    // when recover runs with --salvage-out,
    let salvage = dir.path().join("salvage");
    let (code, v) = recover_salvaging(&data, &dir.path().join("prefix"), &salvage);
    // then the prefix bundle holds everything, and no salvage bundle is
    // written (it would prove nothing more).
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["plan"]["prefix"], 21, "{v}");
    assert_eq!(v["salvage"], serde_json::Value::Null, "{v}");
    // (And one path for both bundles is a usage error, before anything is
    // written.)
    let same = dir.path().join("same");
    let (code, v) = recover_salvaging(&data, &same, &same);
    assert_eq!(code, Some(64), "{v}");
    assert!(!same.exists());
    assert_eq!(v["salvage_out"], serde_json::Value::Null, "{v}");
    assert!(!salvage.exists());
    assert_eq!(
        audited_ranges(&dir.path().join("prefix"), &vkey),
        serde_json::json!([[0, 20]])
    );
}

#[test]
fn without_an_intact_commit_log_a_tile_ledger_is_refused_and_recover_exports_every_anchored_event()
{
    for damage in ["deleted", "cut to half", "zero-filled"] {
        let dir = tempfile::tempdir().unwrap();
        let (data, vkey) = tile_ledger_of_601(dir.path());
        // Given the commit log deleted, cut short or zero-filled,
        let commits = data.join("tiles/commits");
        let len = std::fs::metadata(&commits).unwrap().len();
        match damage {
            "deleted" => std::fs::remove_file(&commits).unwrap(),
            "cut to half" => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&commits)
                    .unwrap();
                f.set_len(len / 2).unwrap();
            }
            _ => std::fs::write(&commits, vec![0u8; len as usize]).unwrap(),
        }
        // when a command opens the ledger, then it is refused (exit 5),
        // naming the commit log (when it is there but accounts for fewer
        // events than the entry bundles hold),
        let out = log_show(&data, 0);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{damage}: {err}");
        assert!(err.contains("tiles/commits"), "{damage}: {err}");
        // and recover reads the events from the entry bundles, proves them
        // by the anchor, and exports all of them, which audit clean.
        let bundle = dir.path().join("bundle");
        let (code, v) = recover(&data, &bundle);
        assert_eq!(code, Some(0), "{damage}: {v}");
        assert_eq!(v["plan"]["lost"], 0, "{damage}: {v}");
        assert_eq!(
            v["plan"]["prefix"], v["plan"]["anchor_size"],
            "{damage}: {v}"
        );
        audits_clean(&bundle, &vkey);
    }
}

#[test]
fn a_damaged_anchor_slot_is_named_on_stderr_and_the_newest_slot_that_verifies_is_used() {
    for layout in LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d");
        ledger_of_layout(&data, 40, layout);
        // Given one byte of the note in the anchor's first slot flipped (every
        // slot of the ring has been written by now),
        let anchor = data.join("anchor");
        edit_file(&anchor, |bytes| bytes[60] ^= 0x01);
        // when a command opens the ledger, then it serves every event and
        // says which slot did not verify.
        let out = log_show(&data, 40);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{layout:?}: {err}");
        assert!(
            err.contains("anchor: slot 0 (byte 0) does not verify"),
            "{layout:?}: {err}"
        );
    }
}

#[test]
fn an_event_altered_before_the_open_tail_is_refused_when_read_or_exported_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    // Given more events than the open re-reads, and event 10 (far before
    // that tail) altered on disk,
    ledger_of_layout(&data, 4_300, Layout::Tiles);
    flip_event(&data, 10, 40);
    // when a command reads it or exports it, then it is refused naming the
    // event (exit 5), never shown or written into a bundle,
    let show = log_show(&data, 10);
    let err = String::from_utf8_lossy(&show.stderr);
    assert_eq!(show.status.code(), Some(5), "{err}");
    assert!(err.contains("event 10"), "{err}");
    let out = dir.path().join("bundle");
    let export = docket()
        .arg("--data")
        .arg(&data)
        .arg("export")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&export.stderr);
    assert_eq!(export.status.code(), Some(5), "{err}");
    assert!(err.contains("event 10"), "{err}");
    // while an intact event still reads.
    let other = log_show(&data, 4000);
    assert_eq!(other.status.code(), Some(0));
}

#[test]
fn bytes_appended_to_a_full_entry_bundle_are_named_and_its_256_entries_still_serve() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 600, Layout::Tiles);
    // Given garbage appended to the first full bundle (its 256 entries intact),
    let bundle0 = data.join("tiles/tile/entries/000");
    let mut bytes = std::fs::read(&bundle0).unwrap();
    let intact = bytes.len();
    bytes.extend_from_slice(&[0xAB; 777]);
    std::fs::write(&bundle0, &bytes).unwrap();
    // when the full check runs, then it names the file and the byte where
    // the stray bytes begin (a structure finding, exit 5),
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 5, "{v}");
    let findings = v["report"]["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{v}");
    assert_eq!(findings[0]["kind"], "structure", "{v}");
    let detail = findings[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("tiles/tile/entries/000, byte {intact}"))
            && detail.contains("777 bytes"),
        "{detail}"
    );
    // recover loses nothing (no event is damaged),
    let (code, v) = recover(&data, &dir.path().join("bundle"));
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["plan"]["lost"], 0, "{v}");
    // and a command that reads through it serves every event, with a
    // warning naming the file and where the extra bytes begin (unless its
    // background check cut them off first).
    let out = log_show(&data, 5);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "tiles/tile/entries/000 holds 777 bytes after its 256 entries, from byte {intact}"
        )) || std::fs::read(&bundle0).unwrap().len() == intact,
        "{err}"
    );
}

#[test]
fn a_proof_under_a_damaged_hash_tile_the_open_did_not_read_is_served_only_once_the_tile_is_rebuilt()
{
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    // Given more events than the open re-reads, and hash 9 of the first
    // level-0 tile flipped (a derived file the open does not read: its tail
    // is the last 4,096 events, and the tree before them is read from the
    // level-1 tile),
    ledger_of_layout(&data, 4_700, Layout::Tiles);
    let (tile, before, bytes) = flip_in_first_leaf_tile(&data, 32 * 9);
    // when an inclusion proof whose path reads it is asked, then the proof
    // checked against the signed checkpoint (exit 0) is served, because the
    // tile was rewritten from the event bytes first, which stderr names,
    for (args, seq) in [
        (["prove", "inclusion", "8"], 8),
        (["prove", "inclusion", "9"], 9),
    ] {
        let out = docket()
            .args(["--json", "--data"])
            .arg(&data)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["check"]["verified"], true, "{v}");
        assert_eq!(v["proof"]["leaf_index"], seq, "{v}");
        if seq == 8 {
            // (Rebuilt by the proof's own check, or by the command's
            // background check when it reached the tile first.)
            assert!(err.contains("tiles/tile/0/000"), "{err}");
            assert!(
                err.contains("the inclusion proof of event 8")
                    || err.contains("background check: seq 9"),
                "{err}"
            );
        }
        assert_eq!(std::fs::read(&tile).unwrap(), before);
    }
    // And with an event under the tile altered too (the bytes cannot
    // rebuild it), no proof is served: exit 5 naming the stored tree.
    std::fs::write(&tile, &bytes).unwrap();
    flip_event(&data, 20, 40);
    let out = docket()
        .args(["--data"])
        .arg(&data)
        .args(["prove", "consistency", "10", "4700"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("Merkle tree"), "{err}");
}

#[test]
fn a_ledger_key_file_that_no_longer_parses_is_damage_for_the_open_and_reported_by_recover() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    ledger_of_layout(&data, 10, Layout::Tiles);
    // Given the ledger key file overwritten in place (it keeps its mode),
    std::fs::write(data.join("keys/ledger.key"), "not a key\n").unwrap();
    // when a command opens the ledger, then it is refused as damage (exit
    // 5, not 2 for bad input) naming the file,
    let out = log_show(&data, 3);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("keys/ledger.key"), "{err}");
    // while recover, which signs nothing (checkpoints verify with
    // ledger.json's public key), exports every event and names the damaged
    // key; also when the file is gone.
    for bundle in ["bundle", "bundle2"] {
        let (code, v) = recover(&data, &dir.path().join(bundle));
        assert_eq!(code, Some(0), "{v}");
        assert_eq!(v["plan"]["prefix"], 11, "{v}");
        assert!(
            v["ledger_key_damage"]
                .as_str()
                .is_some_and(|d| d.contains("keys/ledger.key")),
            "{v}"
        );
        if bundle == "bundle" {
            std::fs::remove_file(data.join("keys/ledger.key")).unwrap();
        }
    }
}

#[test]
fn an_event_read_through_a_damaged_stored_leaf_rebuilds_it_from_the_bytes_first() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    // Given more events than the open re-reads, and the stored leaf hash of
    // event 8 (hash 8 of level-0 tile 0, a derived file) flipped,
    ledger_of_layout(&data, 4_700, Layout::Tiles);
    let (tile, before, bytes) = flip_in_first_leaf_tile(&data, 32 * 8 + 3);
    for command in ["log show", "export"] {
        std::fs::write(&tile, &bytes).unwrap();
        // when a command reads the event (and, for export, proves it), then
        // it succeeds: the tile was rewritten from the event bytes (they
        // give the anchored root), which stderr names,
        let out = if command == "log show" {
            log_show(&data, 8)
        } else {
            docket()
                .arg("--data")
                .arg(&data)
                .arg("export")
                .arg(dir.path().join("bundle"))
                .output()
                .unwrap()
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{command}: {err}");
        assert!(err.contains("tiles/tile/0/000"), "{command}: {err}");
        assert_eq!(std::fs::read(&tile).unwrap(), before, "{command}");
    }
    audits_clean(&dir.path().join("bundle"), &vkey_of(&data));
}

#[test]
fn a_deleted_entry_bundle_is_named_by_the_refusal_not_the_intact_commit_log() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    // Given a tile ledger of three bundles whose middle (full) one is deleted,
    ledger_of_layout(&data, 700, Layout::Tiles);
    std::fs::remove_file(data.join("tiles/tile/entries/001")).unwrap();
    // when a command opens it, then it is refused naming that bundle, with
    // one warning for the commits that name the missing events.
    let out = log_show(&data, 3);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("tiles/tile/entries/001 is missing"), "{err}");
    assert!(!err.contains("commit log was cut short"), "{err}");
    assert_eq!(
        err.matches("commit(s) of tiles/commits").count(),
        1,
        "{err}"
    );
}

#[test]
fn given_the_ledger_private_key_lost_when_recovering_then_the_whole_log_is_exported_and_the_key_reported()
 {
    // Given an intact ledger whose keys/ledger.key was lost (campaign 21b,
    // finding 4: recover refused to export anything, though it signs
    // nothing and checkpoints verify with ledger.json's public key),
    let dir = tempfile::tempdir().unwrap();
    let (data, vkey) = tile_ledger_of_601(dir.path());
    std::fs::remove_file(data.join("keys/ledger.key")).unwrap();
    // when it is recovered,
    let out = dir.path().join("prefix");
    let (code, v) = recover(&data, &out);
    // then every event is exported (exit 0), the bundle audits clean with
    // the ledger's verifier key, and the lost key is reported.
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["plan"]["prefix"], 601, "{v}");
    audits_clean(&out, &vkey);
    assert!(
        v["ledger_key_damage"]
            .as_str()
            .is_some_and(|d| d.contains("ledger.key")),
        "{v}"
    );
}

#[test]
fn given_a_bundle_and_its_leaf_tile_restored_from_another_when_recovering_then_only_that_run_is_lost()
 {
    // Given bundle 001 and its level-0 tile overwritten by copies of
    // bundle 000's (a misplaced restore: the bytes and the kept leaves of
    // events 256..511 agree with each other, and both are another run's;
    // campaign 21b, finding 2: the salvage was null),
    let dir = tempfile::tempdir().unwrap();
    let (data, vkey) = tile_ledger_of_601(dir.path());
    let tiles = data.join("tiles/tile");
    std::fs::copy(tiles.join("entries/000"), tiles.join("entries/001")).unwrap();
    std::fs::copy(tiles.join("0/000"), tiles.join("0/001")).unwrap();
    // when recover salvages,
    let (out, salvage) = (dir.path().join("prefix"), dir.path().join("salvage"));
    let (code, v) = recover_salvaging(&data, &out, &salvage);
    // then the level-8 node the store kept over 256..511 stands in for the
    // run, and every other event is proved and carried.
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(
        v["salvage"]["missing"],
        serde_json::json!([[256, 511]]),
        "{v}"
    );
    assert_eq!(v["salvage"]["events"], 601 - 256, "{v}");
    audits_clean(&salvage, &vkey);
}

#[test]
fn given_two_bundles_swapped_with_their_tiles_when_recovering_then_every_event_is_salvaged_in_place()
 {
    // Given bundles 000 and 001 swapped, with their level-0 tiles (the
    // events are intact, under each other's names),
    let dir = tempfile::tempdir().unwrap();
    let (data, vkey) = tile_ledger_of_601(dir.path());
    let tiles = data.join("tiles/tile");
    for sub in ["entries", "0"] {
        let (a, b, t) = (
            tiles.join(sub).join("000"),
            tiles.join(sub).join("001"),
            tiles.join(sub).join("swap"),
        );
        std::fs::rename(&a, &t).unwrap();
        std::fs::rename(&b, &a).unwrap();
        std::fs::rename(&t, &b).unwrap();
    }
    // when recover salvages,
    let (out, salvage) = (dir.path().join("prefix"), dir.path().join("salvage"));
    let (code, v) = recover_salvaging(&data, &out, &salvage);
    // then the prefix from genesis is gone (genesis is not at its place),
    // but each event is taken from where it lies by the position its own
    // bytes name: all 601 are proved by the signed root and carried.
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["salvage"]["events"], 601, "{v}");
    assert_eq!(v["salvage"]["missing"], serde_json::json!([]), "{v}");
    audits_clean(&salvage, &vkey);
}

#[test]
fn given_a_large_event_whose_stand_in_is_damaged_when_recovering_then_its_own_file_is_salvaged() {
    // Given a tile ledger with an event over 65,535 bytes (its bundle holds
    // a 37-byte stand-in naming its leaf, its bytes are tiles/large/<seq>)
    // and one byte of that stand-in's leaf flipped (campaign 21b, finding
    // 1: the event was lost though its file is intact),
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let (ledger, info) = docket_domain::ledger::init_with(
        &data,
        None,
        LedgerOptions {
            layout: Layout::Tiles,
            ..LedgerOptions::default()
        },
    )
    .unwrap();
    let admin = keys::read_key_file(&info.admin_key_path).unwrap();
    for i in 0..300 {
        let payload = format!("{{\"n\":{i}}}").into_bytes();
        ledger
            .append(Statement::sign("x-note", payload, &admin))
            .unwrap();
    }
    let big = ledger
        .append(Statement::sign("x-note", vec![b'x'; 100_000], &admin))
        .unwrap()
        .seq;
    for i in 0..20 {
        let payload = format!("{{\"after\":{i}}}").into_bytes();
        ledger
            .append(Statement::sign("x-note", payload, &admin))
            .unwrap();
    }
    ledger.close().unwrap();
    drop(ledger);
    let vkey = vkey_of(&data);
    // Its bundle is the open one (events 256..): walk its entries.
    let bundle = data.join("tiles/tile/entries/001.part");
    edit_file(&bundle, |b| {
        let mut at = 0usize;
        for _ in 256..big {
            at += 2 + usize::from(u16::from_be_bytes([b[at], b[at + 1]]));
        }
        let stand_in_len = usize::from(u16::from_be_bytes([b[at], b[at + 1]]));
        assert_eq!(stand_in_len, docket_log::tiles::OVERSIZED_ENTRY_LEN);
        assert_eq!(b[at + 2], docket_log::tiles::OVERSIZED_MARKER);
        b[at + 2 + 20] ^= 0x01;
    });
    // when it is checked, the damaged stand-in is still damage (nothing is
    // papered over),
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 5, "{v}");
    // and when recover salvages, the event is read from its own file and
    // proved by the signed root like any other: nothing is missing.
    let (out, salvage) = (dir.path().join("prefix"), dir.path().join("salvage"));
    let (code, v) = recover_salvaging(&data, &out, &salvage);
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["plan"]["prefix"], big, "{v}");
    assert_eq!(v["salvage"]["missing"], serde_json::json!([]), "{v}");
    assert_eq!(v["salvage"]["events"], big + 21, "{v}");
    audits_clean(&salvage, &vkey);
}

#[test]
fn given_an_anchor_slot_whose_redo_was_altered_when_checking_then_the_slot_is_named_and_the_store_kept()
 {
    // Given a tile ledger whose newest anchor slot's redo has one event
    // byte flipped, the slot's hash made to match again (docs/FORMAT.md §9;
    // the store itself is intact, and the slot's note still verifies:
    // campaign 21b, finding 5, where the intact open bundle was blamed),
    let dir = tempfile::tempdir().unwrap();
    let (data, vkey) = tile_ledger_of_601(dir.path());
    alter_newest_anchor_redo(&data, true);
    // when the ledger is checked, then every event is verified from the
    // store (exit 0) and the damaged slot is named,
    let (code, v) = replay_verify(&data);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["report"]["events"], 601, "{v}");
    let notes = v["repaired_in_copy"].to_string();
    assert!(notes.contains("anchor slot is damaged"), "{v}");
    // and recover exports all of it.
    let out = dir.path().join("prefix");
    let (code, v) = recover(&data, &out);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["plan"]["prefix"], 601, "{v}");
    audits_clean(&out, &vkey);
}

#[test]
fn given_a_bundle_from_another_ledger_when_recovering_then_only_its_run_is_lost() {
    // Given bundle 001 of a ledger replaced by bundle 001 of another one
    // (the same sequence numbers, another chain: its bytes and its
    // `prev_hash` chain agree with each other, and only the kept leaves of
    // the level-0 tile tell them apart; campaign 21c, finding 1: the
    // salvage was null),
    let dir = tempfile::tempdir().unwrap();
    let (data, vkey) = tile_ledger_of_601(dir.path());
    let other = tempfile::tempdir().unwrap();
    let (foreign, _) = tile_ledger_of_601(other.path());
    for bundle in ["001", "000"] {
        let name = format!("tiles/tile/entries/{bundle}");
        std::fs::copy(foreign.join(&name), data.join(&name)).unwrap();
        // when recover salvages,
        let out = dir.path().join(format!("prefix-{bundle}"));
        let salvage = dir.path().join(format!("salvage-{bundle}"));
        let (code, v) = recover_salvaging(&data, &out, &salvage);
        assert_eq!(code, Some(5), "{v}");
        // then the foreign run is lost and every other event is proved by
        // the ledger's own signed root and carried: with bundle 001
        // foreign, events 0..255 and 512..600; with bundle 000 foreign too
        // (genesis is not the ledger's), 512..600 only.
        let missing = if bundle == "001" {
            serde_json::json!([[256, 511]])
        } else {
            serde_json::json!([[0, 511]])
        };
        assert_eq!(v["salvage"]["missing"], missing, "{v}");
        if bundle == "001" {
            audits_clean(&salvage, &vkey);
        }
    }
}

/// Flips one byte of the first event in the redo of the newest anchor slot
/// that carries one (docs/FORMAT.md §9), and with `rehash` makes the
/// slot's hash match again (the slot then verifies; its note still does).
fn alter_newest_anchor_redo(data: &std::path::Path, rehash: bool) {
    edit_file(&data.join("anchor"), |d| {
        use sha2::Digest as _;
        const SLOT: usize = 64 * 1024;
        let be32 = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap()) as usize;
        let (_, s, l, r) = (0..d.len() / SLOT)
            .filter(|i| d[i * SLOT..].starts_with(b"DKTANCH3"))
            .map(|i| {
                let s = i * SLOT;
                let (l, r) = (be32(&d[s + 8..s + 12]), be32(&d[s + 12..s + 16]));
                let note = std::str::from_utf8(&d[s + 48..s + 48 + l]).unwrap();
                let size: u64 = note.lines().nth(1).unwrap().parse().unwrap();
                (size, s, l, r)
            })
            .filter(|&(_, _, _, r)| r > 0)
            .max()
            .expect("a slot with a redo");
        // redo = durable (8) || first_seq (8) || n (4) || length (4) || event
        let redo = s + 48 + l;
        let first_len = be32(&d[redo + 20..redo + 24]);
        d[redo + 24 + first_len / 2] ^= 0x01;
        if rehash {
            let mut h = sha2::Sha256::new();
            h.update(&d[s + 8..s + 16]);
            h.update(&d[s + 48..s + 48 + l + r]);
            let hash = h.finalize();
            d[s + 16..s + 48].copy_from_slice(&hash);
        }
    });
}

#[test]
fn given_the_newest_anchor_slot_damaged_and_the_open_bundle_torn_then_recover_counts_the_loss_against_its_signed_size()
 {
    // Given the newest anchor slot damaged (one byte of its redo flipped:
    // the slot no longer verifies, its note still does) and the open
    // bundle's last entry torn (campaign 21c, finding 2: the loss was
    // counted against the older slot the open fell back to, `lost: 0`),
    let dir = tempfile::tempdir().unwrap();
    let (data, _) = tile_ledger_of_601(dir.path());
    alter_newest_anchor_redo(&data, false);
    edit_file(&data.join("tiles/tile/entries/002.part"), |b| {
        let cut = b.len() - 20;
        b.truncate(cut);
    });
    // when recover runs,
    let (code, v) = recover(&data, &dir.path().join("prefix"));
    // then the acknowledged size is the damaged slot's signed one, and
    // every acknowledged event not exported is counted lost.
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["plan"]["anchor_size"], 601, "{v}");
    let prefix = v["plan"]["prefix"].as_u64().unwrap();
    assert!(prefix < 601, "{v}");
    assert_eq!(v["plan"]["lost"], 601 - prefix, "{v}");
}
