//! `docket log tail --from 0 | head -n1` on a ledger of a few thousand
//! events: the reader goes away after one line, and docket must end quietly
//! (exit 0, nothing on stderr), not panic with "Broken pipe" (exit 101).

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use docket_domain::{Statement, keys};

#[test]
fn a_closed_pipe_ends_docket_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let (ledger, info) = docket_domain::ledger::init(dir.path(), None).unwrap();
    let admin = keys::read_key_file(&info.admin_key_path).unwrap();
    let batch: Vec<Statement> = (0..3000)
        .map(|i| Statement::sign("x-note", format!("{{\"n\":{i}}}").into_bytes(), &admin))
        .collect();
    for r in ledger.append_many(batch).unwrap() {
        r.unwrap();
    }
    ledger.close().unwrap();
    drop(ledger);
    for json in [false, true] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_docket"));
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .arg("--data")
            .arg(dir.path())
            .args(["log", "tail", "--from", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first).unwrap();
        assert!(!first.is_empty());
        // The reader is gone (like `head -n1` exiting).
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "json={json}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "json={json}: {err}");
    }
}
