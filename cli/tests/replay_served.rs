//! `docket replay --verify` while a `docket serve` holds the data directory
//! (issue "One command-line path": read-only commands work while the server
//! runs). Given a served ledger with appends, when replay runs on the data
//! directory, then it replays what the server serves up to its signed
//! checkpoint, checked against `ledger.json`'s key, with the directory's
//! snapshots and blobs: exit 0 when clean, 5 when a snapshot file was
//! tampered with, and the server keeps serving.

mod support;

use std::path::Path;
use std::process::Output;
use support::{At, Server, append_lines, docket, text};

fn append_notes(data: &Path, n: usize) {
    // Local commands go through the server that holds the directory.
    let out = append_lines(
        At::Data(data),
        &data.join("keys/admin.key"),
        "x-note",
        (0..n).map(|i| format!("{{\"note\":{i}}}")),
    );
    assert!(out.status.success(), "{}", text(&out));
}

fn replay(data: &Path) -> Output {
    docket()
        .arg("--data")
        .arg(data)
        .args(["--json", "replay", "--verify"])
        .output()
        .unwrap()
}

#[test]
fn replay_verify_runs_while_the_server_holds_the_data_directory() {
    let (_root, data) = support::init_ledger();
    let _server = Server::start(&data);
    // Local commands go through the server that holds the directory.
    append_notes(&data, 40);

    let out = replay(&data);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert!(
        report["report"]["events"].as_u64().unwrap() >= 41,
        "genesis + 40 notes: {report}"
    );
    assert!(
        report["report"]["signatures_checked"].as_u64().unwrap() >= 41,
        "{report}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("served by"),
        "says where the events came from: {}",
        text(&out)
    );

    // A snapshot file edited on disk is tampering, found by this replay.
    let snap = data.join("snapshots/keys.snap");
    let mut bytes = std::fs::read(&snap).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&snap, &bytes).unwrap();
    let out = replay(&data);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    assert!(
        text(&out).contains("keys"),
        "names the snapshot: {}",
        text(&out)
    );

    // The server still serves.
    append_notes(&data, 1);
}
