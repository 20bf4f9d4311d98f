//! The progress bar on long work: absent when stderr is not a terminal (or
//! with `--json`); on a terminal, every frame fits on one line of the
//! terminal's width and never shows a position past its length.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use support::docket;

/// A ledger of `n` appended events plus an export bundle of it.
fn ledger(root: &Path, n: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let data = root.join("d");
    assert!(
        docket()
            .arg("--data")
            .arg(&data)
            .arg("init")
            .output()
            .unwrap()
            .status
            .success()
    );
    let lines: String = (0..n).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    let mut child = docket()
        .arg("--data")
        .arg(&data)
        .args(["log", "append", "--kind", "x-n", "--stdin", "--key"])
        .arg(data.join("keys/admin.key"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let bundle = root.join("bundle");
    assert!(
        docket()
            .arg("--data")
            .arg(&data)
            .arg("export")
            .arg(&bundle)
            .output()
            .unwrap()
            .status
            .success()
    );
    (data, bundle)
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let root = tempfile::tempdir().unwrap();
    let (data, bundle) = ledger(root.path(), 300);
    for args in [
        vec![
            "--data".to_string(),
            data.display().to_string(),
            "replay".into(),
            "--verify".into(),
        ],
        vec!["audit".to_string(), bundle.display().to_string()],
    ] {
        let out = docket().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains('['), "no bar on a pipe for {args:?}: {err:?}");
        assert!(
            !err.contains('\r'),
            "no redraws on a pipe for {args:?}: {err:?}"
        );
    }
}

#[test]
fn on_a_terminal_each_frame_fits_one_line_and_counts_sensibly() {
    // `script` gives the child a pseudo-terminal; without it, skip.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) for a pseudo-terminal");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (data, bundle) = ledger(root.path(), 2000);
    let bin = env!("CARGO_BIN_EXE_docket");
    for cmd in [
        format!("{bin} --data {} replay --verify", data.display()),
        format!("{bin} audit {}", bundle.display()),
    ] {
        let out = Command::new("script")
            .args(["-qec", &format!("stty rows 24 cols 60; {cmd}"), "/dev/null"])
            .env_remove("DOCKET_JSON")
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout).replace("\x1b[2K", "\r");
        let frames: Vec<&str> = text
            .split(['\r', '\n'])
            .filter(|f| f.contains(" eta "))
            .collect();
        assert!(
            !frames.is_empty(),
            "{cmd}: the bar shows on a terminal: {text:?}"
        );
        for f in &frames {
            assert!(
                f.chars().count() <= 60,
                "{cmd}: a frame wider than the terminal: {f:?}"
            );
            // "pos/len" never has pos past len.
            let counts = f
                .split_whitespace()
                .find(|w| w.contains('/') && w.split('/').all(|n| n.parse::<u64>().is_ok()));
            if let Some(c) = counts {
                let (pos, len) = c.split_once('/').unwrap();
                let (pos, len): (u64, u64) = (pos.parse().unwrap(), len.parse().unwrap());
                assert!(pos <= len, "{cmd}: frame {f:?} counts past its length");
            }
        }
    }
}
