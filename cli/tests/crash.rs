//! Crash test: a child `docket log append --stdin` process is killed with
//! SIGKILL at random moments; the ledger must reopen, verify end to end, and
//! hold every append the child acknowledged (printed) before it died.
//!
//! CI runs a few trials; `DOCKET_CRASH_TRIALS=300 cargo test -p docket --test
//! crash --release` runs hundreds.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use docket_domain::replay::{self, ReplayOptions};
use docket_domain::{Ledger, LedgerOptions};

fn docket() -> Command {
    Command::new(env!("CARGO_BIN_EXE_docket"))
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn acknowledged_appends_survive_sigkill() {
    let trials: u64 = std::env::var("DOCKET_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    println!("crash test seed {seed}, {trials} trials");
    let mut rng = Rng(seed);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("ledger");
    let (ledger, info) = docket_domain::ledger::init(&data, None).unwrap();
    ledger.close().unwrap();
    drop(ledger);
    let mut total_acked = 0usize;
    for trial in 0..trials {
        let mut child = docket()
            .args(["--json", "--data"])
            .arg(&data)
            .args(["log", "append", "--kind", "x-crash", "--stdin", "--key"])
            .arg(&info.admin_key_path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let feeder = std::thread::spawn(move || {
            for i in 0.. {
                if writeln!(stdin, "trial-{trial}-line-{i}").is_err() {
                    break;
                }
            }
        });
        let acked: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
        let acked2 = Arc::clone(&acked);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                if let (Some(seq), Some(leaf)) = (v["seq"].as_u64(), v["leaf_hash"].as_str()) {
                    acked2.lock().unwrap().push((seq, leaf.to_string()));
                }
            }
        });
        std::thread::sleep(Duration::from_millis(100 + rng.next() % 700));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        feeder.join().unwrap();
        let acked = acked.lock().unwrap().clone();
        total_acked += acked.len();

        // Reopen: must succeed, verify clean, and hold every acknowledged event.
        let ledger = Ledger::open(&data, LedgerOptions::default())
            .unwrap_or_else(|e| panic!("trial {trial}: reopen after SIGKILL failed: {e}"));
        for (seq, leaf) in &acked {
            assert!(
                *seq < ledger.len(),
                "trial {trial}: acknowledged seq {seq} lost (len {})",
                ledger.len()
            );
            assert_eq!(
                &hex::encode(ledger.leaf_hash(*seq).unwrap()),
                leaf,
                "trial {trial}: seq {seq}"
            );
        }
        let (report, _) = replay::replay(
            ledger.store().as_ref(),
            &ledger.note_verifier().unwrap(),
            ReplayOptions {
                verify: true,
                as_of: None,
            },
            &mut |_, _| {},
        )
        .unwrap();
        assert!(
            report.findings.is_empty(),
            "trial {trial}: {:?}",
            report.findings
        );
        ledger.close().unwrap();
    }
    assert!(
        total_acked > 0,
        "the child acknowledged nothing in {trials} trials"
    );
    println!("{total_acked} acknowledged appends survived {trials} SIGKILLs");
}

/// A submission acknowledged just before the process dies (abort: no
/// destructor, no snapshot, like kill -9) still gets its automatic verdict:
/// the next open scans for submissions without one and judges them.
#[test]
fn pending_verification_resumes_after_a_crash() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("ledger");
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("demo");
    let run = |args: &[&str], fault: bool| {
        let mut cmd = docket();
        cmd.arg("--json").arg("--data").arg(&data).args(args);
        if fault {
            cmd.env("DOCKET_FAULT", "abort-after-submission");
        }
        cmd.output().unwrap()
    };
    assert!(run(&["init"], false).status.success());
    let key = root.path().join("s.key");
    let out = docket()
        .args(["--json", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    let pubkey: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pubkey = pubkey["public_key"].as_str().unwrap().to_string();
    let admin = data.join("keys/admin.key");
    let out = run(
        &[
            "key",
            "add",
            &pubkey,
            "--role",
            "submitter",
            "--key",
            admin.to_str().unwrap(),
        ],
        false,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let task: serde_json::Value =
        serde_json::from_slice(&std::fs::read(demo.join("task.json")).unwrap()).unwrap();
    let task_id = task["task_id"].as_str().unwrap().to_string();
    let out = run(
        &[
            "task",
            "register",
            demo.join("task.json").to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ],
        false,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Given a submission acknowledged, then the process dies before auto-verify.
    let out = run(
        &[
            "submit",
            demo.join("pass").to_str().unwrap(),
            "--task",
            &task_id,
            "--key",
            key.to_str().unwrap(),
        ],
        true,
    );
    assert!(!out.status.success(), "the fault point aborted the process");
    // When the ledger opens again, then the submission has its verdict.
    let out = run(&["verdict", "show", &task_id], false);
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap_or("null"))
        .unwrap_or(serde_json::Value::Null);
    assert!(
        v["status"] == "pass" && v["verdict_seq"].is_u64(),
        "the pending submission was judged on reopen: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
