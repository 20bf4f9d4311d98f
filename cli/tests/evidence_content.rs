//! Evidence content at rest (issue "Trustworthy core", blob edits of the
//! corruption matrix): content is kept beside the log by SHA-256. Given a
//! ledger with registered evidence, when a blob is edited, truncated or
//! deleted, then `replay --verify` exits 5 naming the OID and the blob,
//! `evidence get` exits 5 and writes nothing, and the log itself still
//! opens (the records are intact; only the content is gone).

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{docket, text};

fn run(data: &Path, args: &[&str]) -> Output {
    docket()
        .arg("--data")
        .arg(data)
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &Output) {
    assert!(out.status.success(), "{}", text(out));
}

fn demo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/demo"))
}

/// A ledger with the demo task and one evidence file; returns (data, OID,
/// blob path, content).
fn ledger_with_evidence(root: &Path) -> (PathBuf, String, PathBuf, Vec<u8>) {
    let data = root.join("ledger");
    ok(&run(&data, &["init"]));
    let key = root.join("s.key");
    let out = docket()
        .args(["--json", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pubkey = v["public_key"].as_str().unwrap().to_string();
    let admin = data.join("keys/admin.key");
    ok(&run(
        &data,
        &[
            "key",
            "add",
            &pubkey,
            "--role",
            "submitter",
            "--key",
            admin.to_str().unwrap(),
        ],
    ));
    let task_file = demo().join("task.json");
    let task: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&task_file).unwrap()).unwrap();
    let task = task["task_id"].as_str().unwrap().to_string();
    ok(&run(
        &data,
        &[
            "task",
            "register",
            task_file.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ],
    ));
    let content = b"selftest: 12 passed, 0 failed\n".repeat(50);
    let file = root.join("selftest.log");
    std::fs::write(&file, &content).unwrap();
    let out = run(
        &data,
        &[
            "--json",
            "evidence",
            "put",
            file.to_str().unwrap(),
            "--task",
            &task,
            "--key",
            key.to_str().unwrap(),
        ],
    );
    ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let oid = v["oid"].as_str().expect("an OID").to_string();
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&content));
    let blob = data.join("blobs").join(&digest[..2]).join(&digest);
    assert!(blob.exists(), "the blob is stored at {}", blob.display());
    (data, oid, blob, content)
}

fn assert_content_damage(data: &Path, oid: &str, root: &Path, what: &str) {
    let out = run(data, &["replay", "--verify"]);
    assert_eq!(out.status.code(), Some(5), "{what}: {}", text(&out));
    let all = text(&out);
    assert!(all.contains(oid), "{what}: the report names the OID: {all}");
    assert!(all.contains("blobs/"), "{what}: and the blob: {all}");
    let target = root.join(format!("got-{what}"));
    let out = run(
        data,
        &["evidence", "get", oid, "--out", target.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(5), "{what}: {}", text(&out));
    assert!(!target.exists(), "{what}: nothing written");
    // The records are intact: the log still opens and shows the OID.
    ok(&run(data, &["evidence", "show", oid]));
}

#[test]
fn replay_verify_is_clean_with_intact_content_and_evidence_get_round_trips() {
    let root = tempfile::tempdir().unwrap();
    let (data, oid, _, content) = ledger_with_evidence(root.path());
    let out = run(&data, &["replay", "--verify"]);
    ok(&out);
    let target = root.path().join("got");
    ok(&run(
        &data,
        &["evidence", "get", &oid, "--out", target.to_str().unwrap()],
    ));
    assert_eq!(std::fs::read(&target).unwrap(), content);
}

#[test]
fn a_flipped_byte_in_a_blob_is_damage_naming_the_oid() {
    let root = tempfile::tempdir().unwrap();
    let (data, oid, blob, mut content) = ledger_with_evidence(root.path());
    content[17] ^= 0x20;
    std::fs::write(&blob, &content).unwrap();
    assert_content_damage(&data, &oid, root.path(), "flipped");
}

#[test]
fn a_truncated_blob_is_damage_naming_the_oid() {
    let root = tempfile::tempdir().unwrap();
    let (data, oid, blob, content) = ledger_with_evidence(root.path());
    std::fs::write(&blob, &content[..content.len() / 2]).unwrap();
    assert_content_damage(&data, &oid, root.path(), "truncated");
}

#[test]
fn a_deleted_blob_is_missing_content_naming_the_oid() {
    let root = tempfile::tempdir().unwrap();
    let (data, oid, blob, _) = ledger_with_evidence(root.path());
    std::fs::remove_file(&blob).unwrap();
    let out = run(&data, &["replay", "--verify"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    assert!(text(&out).contains("missing"), "{}", text(&out));
    assert!(text(&out).contains(&oid), "{}", text(&out));
}
