//! Our docs are the contract: `tests/independent/` holds verifiers written
//! in Python from `docs/` and `tests/vectors/` alone (no Docket source; see
//! its README). This test holds them and Docket to the same answers:
//!
//! * every stored vector (signatures, events, RFC 9162 tree, checkpoints,
//!   OIDs, summaries, bundles, archives) and every admission vector passes
//!   the independent checkers;
//! * bundles exported from a fresh ledger (the demo's task flow: keys, a
//!   task, evidence, two submissions, checks, a FAIL and a PASS verdict) are
//!   clean to both `docket audit` and the independent verifier, and each
//!   damage below gets the same exit code from both.
//!
//! Needs `python3`; prints `SKIPPED: …` and passes without it (CI installs
//! it).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};
use support::{docket, text};

fn independent_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("independent")
}

/// `python3` when it runs, else `None` (the test then skips).
fn python() -> Option<Command> {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| Command::new("python3"))
}

fn has_python_module(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_vector_passes_the_independent_checkers() {
    let Some(_) = python() else {
        println!("SKIPPED: no python3");
        return;
    };
    let dir = independent_dir();
    let mut scripts = vec!["admission.py"];
    // check_vectors.py re-signs vectors with `cryptography`'s Ed25519.
    if has_python_module("cryptography") {
        scripts.push("check_vectors.py");
    } else {
        println!("SKIPPED: check_vectors.py (no python3 cryptography module)");
    }
    for script in scripts {
        let out = Command::new("python3")
            .arg(dir.join(script))
            .output()
            .expect("run python3");
        assert!(
            out.status.success(),
            "{script} disagrees with the stored vectors:\n{}",
            text(&out)
        );
    }
}

/// Exit code of `docket audit --trusted-key KEY BUNDLE`.
fn docket_audit(bundle: &Path, key: &str) -> (i32, String) {
    let out = docket()
        .arg("audit")
        .arg(bundle)
        .arg("--trusted-key")
        .arg(key)
        .output()
        .expect("run docket audit");
    (out.status.code().unwrap_or(-1), text(&out))
}

/// Exit code of the independent verifier on the same bundle.
fn independent_audit(bundle: &Path, key: &str) -> (i32, String) {
    let out = Command::new("python3")
        .arg(independent_dir().join("verify_bundle.py"))
        .arg("--trusted-key")
        .arg(key)
        .arg(bundle)
        .output()
        .expect("run python3");
    (out.status.code().unwrap_or(-1), text(&out))
}

fn both_say(bundle: &Path, key: &str, expected: i32, what: &str) {
    let (ours, ours_out) = docket_audit(bundle, key);
    let (theirs, theirs_out) = independent_audit(bundle, key);
    assert_eq!(
        (ours, theirs),
        (expected, expected),
        "{what}: docket audit exit {ours}, independent verifier exit {theirs} (expected {expected})\n\
         docket:\n{ours_out}\nindependent:\n{theirs_out}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// `events.bin` records: 4-byte big-endian length, then the event's bytes
/// (docs/BUNDLE.md §4).
fn records(bundle: &Path) -> Vec<Vec<u8>> {
    let raw = std::fs::read(bundle.join("events.bin")).expect("events.bin");
    let mut out = Vec::new();
    let mut at = 0;
    while at < raw.len() {
        let len = u32::from_be_bytes(raw[at..at + 4].try_into().expect("4 bytes")) as usize;
        out.push(raw[at + 4..at + 4 + len].to_vec());
        at += 4 + len;
    }
    out
}

fn write_records(bundle: &Path, records: &[Vec<u8>]) {
    let mut raw = Vec::new();
    for r in records {
        raw.extend_from_slice(&u32::try_from(r.len()).expect("small").to_be_bytes());
        raw.extend_from_slice(r);
    }
    std::fs::write(bundle.join("events.bin"), raw).expect("write events.bin");
}

/// Rewrites the manifest's digests and sizes for the files as they are now
/// (so a damage is found by what it breaks, not by the file digest).
fn reseal(bundle: &Path) {
    let path = bundle.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("manifest")).expect("json");
    let files = manifest["files"].as_object_mut().expect("files");
    let mut sealed = BTreeMap::new();
    for name in files.keys() {
        let bytes = std::fs::read(bundle.join(name)).expect("listed file");
        sealed.insert(
            name.clone(),
            serde_json::json!({"sha256": hex::encode(Sha256::digest(&bytes)), "size": bytes.len()}),
        );
    }
    for (name, entry) in sealed {
        files.insert(name, entry);
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).expect("json")).expect("write");
}

/// A damage done to a copy of a bundle.
type Damage = Box<dyn Fn(&Path)>;

#[test]
fn fresh_bundles_get_the_same_answer_from_docket_and_the_independent_verifier() {
    let Some(_) = python() else {
        println!("SKIPPED: no python3");
        return;
    };
    let root = tempfile::tempdir().expect("temp dir");
    let data = root.path().join("ledger");
    let out = docket()
        .arg("demo")
        .arg("--keep")
        .arg(&data)
        .output()
        .expect("run docket demo");
    assert!(out.status.success(), "docket demo: {}", text(&out));
    let out = docket()
        .arg("--data")
        .arg(&data)
        .args(["checkpoint", "--vkey"])
        .output()
        .expect("run docket checkpoint");
    assert!(out.status.success(), "checkpoint --vkey: {}", text(&out));
    let key = String::from_utf8(out.stdout).expect("utf-8");
    let key = key.trim();

    let export = |name: &str, args: &[&str]| -> PathBuf {
        let bundle = root.path().join(name);
        let out = docket()
            .arg("--data")
            .arg(&data)
            .arg("export")
            .args(args)
            .arg(&bundle)
            .output()
            .expect("run docket export");
        assert!(out.status.success(), "export {args:?}: {}", text(&out));
        bundle
    };
    let full = export("full", &["--with-blobs"]);
    let range = export("range", &["--from", "5", "--to", "20"]);
    let tar = export("bundle.tar", &["--tar"]);
    for (bundle, what) in [
        (&full, "whole log with blobs"),
        (&range, "a range"),
        (&tar, "a tar"),
    ] {
        both_say(bundle, key, 0, what);
    }

    // Given a copy of the whole-log bundle, when one thing is damaged, then
    // both verifiers exit with the same code.
    let damaged = |name: &str, damage: &dyn Fn(&Path)| -> PathBuf {
        let bundle = root.path().join(format!("damaged-{name}"));
        copy_dir(&full, &bundle);
        damage(&bundle);
        bundle
    };
    let cases: Vec<(&str, i32, Damage)> = vec![
        (
            "summary byte appended (file digest)",
            5,
            Box::new(|b: &Path| {
                let mut s = std::fs::read(b.join("summary.json")).expect("summary");
                s.push(b' ');
                std::fs::write(b.join("summary.json"), s).expect("write");
            }),
        ),
        (
            "a payload byte flipped, manifest resealed (signature)",
            5,
            Box::new(|b: &Path| {
                let mut recs = records(b);
                let last = recs[10].len() - 70;
                recs[10][last] ^= 0x01;
                write_records(b, &recs);
                reseal(b);
            }),
        ),
        (
            "two events swapped, manifest resealed (order)",
            5,
            Box::new(|b: &Path| {
                let mut recs = records(b);
                recs.swap(12, 13);
                write_records(b, &recs);
                reseal(b);
            }),
        ),
        (
            "proofs.json deleted (missing file)",
            4,
            Box::new(|b: &Path| std::fs::remove_file(b.join("proofs.json")).expect("rm")),
        ),
        (
            "a blob deleted (missing blob)",
            4,
            Box::new(|b: &Path| {
                let blob = std::fs::read_dir(b.join("blobs"))
                    .expect("blobs")
                    .next()
                    .expect("one blob")
                    .expect("entry")
                    .path();
                std::fs::remove_file(&blob).expect("rm");
                let path = b.join("manifest.json");
                let mut m: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&path).expect("manifest")).expect("json");
                let name = format!(
                    "blobs/{}",
                    blob.file_name().expect("name").to_string_lossy()
                );
                m["files"].as_object_mut().expect("files").remove(&name);
                std::fs::write(&path, serde_json::to_vec(&m).expect("json")).expect("write");
            }),
        ),
        (
            "the summary's event count altered, resealed (summary mismatch)",
            3,
            Box::new(|b: &Path| {
                let path = b.join("summary.json");
                let mut s: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&path).expect("summary")).expect("json");
                let n = s["events"].as_u64().expect("events");
                s["events"] = serde_json::json!(n + 1);
                std::fs::write(&path, serde_json::to_vec(&s).expect("json")).expect("write");
                reseal(b);
            }),
        ),
        (
            "a file outside the manifest (unlisted file)",
            5,
            Box::new(|b: &Path| std::fs::write(b.join("notes.txt"), b"hi").expect("write")),
        ),
    ];
    for (what, expected, damage) in &cases {
        let bundle = damaged(&what.replace(' ', "-"), damage.as_ref());
        both_say(&bundle, key, *expected, what);
    }
}
