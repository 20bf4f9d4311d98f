//! `docket migrate --layout`: a ledger moves between the sled layout and the
//! tile layout in place, verified by replay, losing nothing and keeping its
//! proofs; the old store is kept aside; a second migration, or one while a
//! server holds the directory, is refused with a clear message.

mod support;

use std::path::Path;

use docket_domain::{Ledger, LedgerOptions, Statement, keys};
use support::{docket, text};

fn json(dir: &Path, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = docket()
        .args(["--json", "--data"])
        .arg(dir)
        .args(args)
        .output()
        .expect("run docket");
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), v, text(&out))
}

/// Appends `n` notes in batches of 50 (large ones every 40th, over the
/// 65,535 bytes a tile entry holds inline).
fn append(dir: &Path, from: usize, n: usize) {
    let ledger = Ledger::open(dir, LedgerOptions::default()).expect("open");
    let admin = keys::read_key_file(&dir.join("keys/admin.key")).expect("admin key");
    let statements: Vec<Statement> = (from..from + n)
        .map(|i| {
            let pad = if i % 40 == 0 {
                "p".repeat(70_000)
            } else {
                String::new()
            };
            Statement::sign(
                "x-note",
                format!("{{\"n\":{i},\"pad\":\"{pad}\"}}").into_bytes(),
                &admin,
            )
        })
        .collect();
    for chunk in statements.chunks(50) {
        for r in ledger.append_many(chunk.to_vec()).expect("append") {
            r.expect("admitted");
        }
    }
    ledger.close().expect("close");
}

#[test]
fn given_a_sled_ledger_when_migrated_to_tiles_and_back_then_nothing_changes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("d");
    // Given a ledger of the sled layout with 600 events.
    let (code, _, t) = json(&data, &["--store", "sled", "init"]);
    assert_eq!(code, Some(0), "{t}");
    assert!(data.join("log").is_dir() && !data.join("tiles").exists());
    append(&data, 0, 600);
    let (_, before, t) = json(&data, &["checkpoint"]);
    let root = before["root"].as_str().expect("root").to_string();
    let size = before["size"].as_u64().expect("size");
    assert!(size > 600, "{t}");
    let (_, proof_before, t) = json(&data, &["prove", "inclusion", "77"]);
    assert_eq!(proof_before["check"]["verified"], true, "{t}");

    // When it moves to tiles.
    let (code, v, t) = json(&data, &["migrate", "--layout", "tiles"]);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(v["events"].as_u64(), Some(size), "{v}");
    assert_eq!(v["replay"]["same_root"], true, "{v}");
    assert_eq!(v["root"].as_str(), Some(root.as_str()), "{v}");

    // Then the data directory holds the tile layout, the old store aside,
    // and everything reads, proves and verifies as before.
    assert!(data.join("tiles/tile/entries/000").is_file());
    assert!(data.join("tiles/tile/0/000").is_file());
    assert!(
        data.join("tiles/large").is_dir(),
        "events over 65,535 bytes"
    );
    assert!(data.join("log.migrated").is_dir() && !data.join("log").exists());
    assert!(!data.join(".migrate").exists());
    let (_, after, _) = json(&data, &["checkpoint"]);
    assert_eq!(after["root"], before["root"]);
    assert_eq!(after["size"], before["size"]);
    let (_, proof_after, _) = json(&data, &["prove", "inclusion", "77"]);
    assert_eq!(proof_after["proof"], proof_before["proof"]);
    let (code, v, t) = json(&data, &["replay", "--verify"]);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(v["ok"], true, "{v}");
    // And it takes new events.
    append(&data, 600, 100);

    // A second migration to the same layout is refused, changing nothing.
    let (code, _, t) = json(&data, &["migrate", "--layout", "tiles"]);
    assert_eq!(code, Some(2), "a refused request: {t}");
    assert!(t.contains("already has the tiles layout"), "{t}");

    // Back to sled (the first old store deleted, as an operator would).
    std::fs::remove_dir_all(data.join("log.migrated")).expect("delete the old store");
    let (code, v, t) = json(&data, &["migrate", "--layout", "sled"]);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(v["replay"]["same_root"], true, "{v}");
    assert!(data.join("log").is_dir() && data.join("tiles.migrated").is_dir());
    let (code, _, t) = json(&data, &["replay", "--verify"]);
    assert_eq!(code, Some(0), "{t}");
    let (_, last, _) = json(&data, &["log", "show", "700"]);
    assert_eq!(last["seq"], 700, "{last}");
    // To tiles again (the old tiles stay aside), then back to sled while
    // they are still there: refused, naming them, the ledger untouched.
    let (code, _, t) = json(&data, &["migrate", "--layout", "tiles"]);
    assert_eq!(code, Some(0), "{t}");
    let (code, _, t) = json(&data, &["migrate", "--layout", "sled"]);
    assert_ne!(code, Some(0), "{t}");
    assert!(t.contains("tiles.migrated"), "{t}");
    assert!(data.join("tiles").is_dir() && !data.join(".migrate").exists());
    let (code, _, t) = json(&data, &["replay", "--verify"]);
    assert_eq!(code, Some(0), "{t}");
}

#[test]
fn given_a_served_ledger_when_migrated_then_it_is_refused_naming_the_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("d");
    let (code, _, t) = json(&data, &["--store", "sled", "init"]);
    assert_eq!(code, Some(0), "{t}");
    let server = support::Server::start(&data);
    let (code, _, t) = json(&data, &["migrate", "--layout", "tiles"]);
    drop(server);
    assert_eq!(code, Some(64), "a usage error: {t}");
    assert!(t.contains("server"), "{t}");
    assert!(
        data.join("log").is_dir() && !data.join("tiles").exists(),
        "untouched"
    );
}

#[test]
fn given_a_damaged_sled_ledger_when_migrated_then_it_is_refused_and_nothing_is_written() {
    // Given a sled ledger of 300 events whose log/db has its second
    // quarter zeroed (sled's own recovery at open would drop and zero what
    // follows),
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("d");
    let (code, _, t) = json(&data, &["--store", "sled", "init"]);
    assert_eq!(code, Some(0), "{t}");
    append(&data, 0, 300);
    let db = data.join("log/db");
    let mut bytes = std::fs::read(&db).expect("log/db");
    let len = bytes.len();
    bytes[len / 4..len / 2].fill(0);
    std::fs::write(&db, &bytes).expect("damage");
    let names = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        v.sort();
        v
    };
    let before = names(&data);
    // when it is migrated to tiles,
    let (code, _, t) = json(&data, &["migrate", "--layout", "tiles"]);
    // then the migration is refused as damage, the damaged file is byte
    // for byte what it was (the source is read from a private copy), and
    // nothing of the attempt is left in the data directory.
    assert_eq!(code, Some(5), "{t}");
    assert!(
        std::fs::read(&db).expect("log/db") == bytes,
        "log/db was rewritten"
    );
    assert_eq!(names(&data), before, "{t}");
}
