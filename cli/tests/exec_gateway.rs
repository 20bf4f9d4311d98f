//! The seed 002 execution gateway (`docket exec`) with real child
//! processes, embedded and through a real `docket serve` on 127.0.0.1:
//! success, a failing exit code, a timeout (the process group is killed),
//! a command not found, a file without exec permission, `--simulate` (a
//! gateway without real execution) and output over the truncation limit
//! (the record carries the first 9,950 characters and the marker, the
//! evidence the full output). A key without the gateway role runs nothing.
//! A task whose acceptance requires gateway-attested records passes only on
//! a gateway's record, never on the executor's own; a harness run that
//! claims an approval passes only with a matching ledger grant.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use support::{Server, docket};

use docket_verifier::execution::{
    TRUNCATION_KEEP, TRUNCATION_MARKER, evidence_hash_preimage, truncate_output,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: Output) -> Output {
    assert!(out.status.success(), "{}", show(&out));
    out
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(out)))
}

fn sha_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// A ledger with a gateway key, a submitter key, an approver key and (when
/// given) a task.
struct Ledger {
    root: tempfile::TempDir,
    data: PathBuf,
    admin: PathBuf,
    gateway: PathBuf,
    submitter: PathBuf,
    approver: PathBuf,
    gateway_pub: String,
    server: Option<String>,
}

impl Ledger {
    fn new() -> Ledger {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("ledger");
        ok(docket()
            .arg("--data")
            .arg(&data)
            .arg("init")
            .output()
            .unwrap());
        let mut l = Ledger {
            admin: data.join("keys/admin.key"),
            gateway: root.path().join("gateway.key"),
            submitter: root.path().join("submitter.key"),
            approver: root.path().join("approver.key"),
            data,
            root,
            gateway_pub: String::new(),
            server: None,
        };
        for (file, role) in [
            (l.gateway.clone(), "gateway"),
            (l.submitter.clone(), "submitter"),
            (l.approver.clone(), "approver"),
        ] {
            let out = ok(docket()
                .args(["--json", "keygen", "--out"])
                .arg(&file)
                .output()
                .unwrap());
            let public = json_of(&out)["public_key"].as_str().unwrap().to_string();
            let admin = l.admin.display().to_string();
            ok(l.run(&["key", "add", &public, "--role", role, "--key", &admin]));
            if role == "gateway" {
                l.gateway_pub = public;
            }
        }
        l
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn cmd(&self) -> Command {
        let mut c = docket();
        c.arg("--json").arg("--data").arg(&self.data);
        if let Some(url) = &self.server {
            c.args(["--server", url]);
        }
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    fn register_task(&self, task: &Value) -> String {
        let file = self.path("task.json");
        std::fs::write(&file, serde_json::to_vec_pretty(task).unwrap()).unwrap();
        ok(self.run(&[
            "task",
            "register",
            file.to_str().unwrap(),
            "--key",
            self.submitter.to_str().unwrap(),
        ]));
        task["task_id"].as_str().unwrap().to_string()
    }

    /// `docket exec --task TASK --key KEY [extra] -- argv`.
    fn exec(&self, task: &str, key: &Path, extra: &[&str], argv: &[&str]) -> Output {
        self.cmd()
            .args(["exec", "--task", task, "--key"])
            .arg(key)
            .args(extra)
            .arg("--")
            .args(argv)
            .output()
            .unwrap()
    }

    fn event(&self, seq: u64) -> Value {
        json_of(&ok(self.run(&["log", "show", &seq.to_string()])))
    }

    fn events(&self) -> usize {
        let out = ok(self.run(&["log", "tail", "--from", "0"]));
        String::from_utf8_lossy(&out.stdout).lines().count()
    }

    fn evidence(&self, oid: &str) -> Vec<u8> {
        let file = self.path(&format!("got-{oid}"));
        ok(self.run(&["evidence", "get", oid, "--out", file.to_str().unwrap()]));
        std::fs::read(file).unwrap()
    }
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

fn demo_task() -> Value {
    serde_json::from_slice(&std::fs::read(demo().join("task.json")).unwrap()).unwrap()
}

/// Runs one `docket exec` and checks the printed outcome against the
/// appended record and the stored full outputs; returns the record.
fn check_exec(
    l: &Ledger,
    task: &str,
    extra: &[&str],
    argv: &[&str],
    exit: i32,
    status: &str,
) -> (Value, Vec<u8>, Vec<u8>) {
    let out = l.exec(task, &l.gateway, extra, argv);
    assert_eq!(out.status.code(), Some(exit), "{argv:?}: {}", show(&out));
    let printed = json_of(&out);
    assert_eq!(printed["status"], status, "{argv:?}");
    let event = l.event(printed["receipt"]["seq"].as_u64().unwrap());
    assert_eq!(event["kind"], "execution.recorded");
    assert_eq!(
        event["author"],
        l.gateway_pub.as_str(),
        "signed by the gateway"
    );
    let record = event["payload"].clone();
    assert_eq!(record["status"], status, "{argv:?}");
    assert_eq!(record["task_id"], task);
    assert_eq!(record["evidence_hash"], printed["evidence_hash"]);
    // evidence_hash = SHA-256(command|stdout|stderr|exit_code) over the
    // stored (truncated) fields.
    let pre = evidence_hash_preimage(
        record["raw_command"].as_str().unwrap(),
        record["stdout"].as_str().unwrap(),
        record["stderr"].as_str().unwrap(),
        record["exit_code"].as_i64(),
    );
    assert_eq!(record["evidence_hash"], sha_hex(&pre), "{argv:?}");
    for t in ["started_at", "finished_at"] {
        let s = record[t].as_str().unwrap();
        assert!(
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_ok(),
            "{t} {s}"
        );
    }
    assert!(record["duration_seconds"].as_f64().unwrap() >= 0.0);
    // The full outputs are evidence, and the record's fields are their
    // deterministic truncation.
    let oids = record["evidence_oids"].as_array().unwrap();
    assert_eq!(oids.len(), 2);
    assert_eq!(record["artifacts"]["stdout"], oids[0]);
    assert_eq!(record["artifacts"]["stderr"], oids[1]);
    let full_out = l.evidence(oids[0].as_str().unwrap());
    let full_err = l.evidence(oids[1].as_str().unwrap());
    assert_eq!(
        truncate_output(&String::from_utf8_lossy(&full_out)),
        record["stdout"].as_str().unwrap()
    );
    assert_eq!(
        truncate_output(&String::from_utf8_lossy(&full_err)),
        record["stderr"].as_str().unwrap()
    );
    (record, full_out, full_err)
}

fn every_outcome(l: &Ledger) {
    let task = l.register_task(&demo_task());

    // Success.
    let (r, out, err) = check_exec(
        l,
        &task,
        &[],
        &["sh", "-c", "printf hello; printf oops >&2"],
        0,
        "SUCCESS",
    );
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["raw_command"], "sh -c 'printf hello; printf oops >&2'");
    assert_eq!(
        (out.as_slice(), err.as_slice()),
        (&b"hello"[..], &b"oops"[..])
    );
    assert_eq!(
        r["evidence_hash"],
        sha_hex(b"sh -c 'printf hello; printf oops >&2'|hello|oops|0")
    );

    // --step names the outputs as the seed's artifact layout does.
    let out = ok(l.exec(&task, &l.gateway, &["--step", "env_validation"], &["true"]));
    let v = json_of(&out);
    assert_eq!(v["stdout"]["name"], "execution/env_validation/stdout.log");
    assert_eq!(v["stderr"]["name"], "execution/env_validation/stderr.log");
    let out = l.exec(&task, &l.gateway, &["--step", "../x"], &["true"]);
    assert_eq!(out.status.code(), Some(64), "{}", show(&out));

    // A failing exit code.
    let (r, _, err) = check_exec(
        l,
        &task,
        &[],
        &["sh", "-c", "echo failing >&2; exit 3"],
        5,
        "FAILURE",
    );
    assert_eq!(r["exit_code"], 3);
    assert_eq!(err, b"failing\n");

    // A timeout: the whole process group is killed (the `sleep` child of
    // `sh` too, or the pipes would stay open for 30 s).
    let t0 = Instant::now();
    let (r, out, _) = check_exec(
        l,
        &task,
        &["--timeout", "1"],
        &["sh", "-c", "echo started; sleep 30; echo never"],
        4,
        "NO_EVIDENCE",
    );
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_eq!(r["exit_code"], Value::Null);
    let stderr = r["stderr"].as_str().unwrap();
    assert!(stderr.starts_with("NO_EVIDENCE: timeout"), "{stderr}");
    assert_eq!(
        out, b"started\n",
        "what it wrote before the timeout is kept"
    );

    // Death by a signal reads as the shell does: 128 + signal.
    let (r, _, _) = check_exec(l, &task, &[], &["sh", "-c", "kill -9 $$"], 5, "FAILURE");
    assert_eq!(r["exit_code"], 137);

    // Bytes that are not UTF-8: the evidence keeps them, the record reads
    // them as U+FFFD.
    let (r, out, _) = check_exec(l, &task, &[], &["printf", "\\377\\376ok"], 0, "SUCCESS");
    assert_eq!(out, b"\xff\xfeok");
    assert_eq!(r["stdout"], "\u{fffd}\u{fffd}ok");

    // A command that exits but leaves a child holding its pipes: recorded
    // once the grace after its exit runs out (the child is killed).
    let t0 = Instant::now();
    let (r, out, _) = check_exec(
        l,
        &task,
        &[],
        &["sh", "-c", "sleep 60 & echo done"],
        0,
        "SUCCESS",
    );
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert_eq!(r["exit_code"], 0);
    assert_eq!(out, b"done\n");

    // The key's passphrase never reaches the command.
    let (_, out, _) = {
        let o = l
            .cmd()
            .env("DOCKET_PASSPHRASE", "secret-pass")
            .args(["exec", "--task", &task, "--key"])
            .arg(&l.gateway)
            .args(["--", "sh", "-c", "echo \"[${DOCKET_PASSPHRASE:-}]\""])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let oid = json_of(&o)["stdout"]["oid"].as_str().unwrap().to_string();
        ((), l.evidence(&oid), ())
    };
    assert_eq!(out, b"[]\n");

    // Not found.
    let (r, _, _) = check_exec(
        l,
        &task,
        &[],
        &["docket-no-such-command-7f3a", "--flag"],
        4,
        "NO_EVIDENCE",
    );
    assert_eq!(r["exit_code"], Value::Null);
    assert!(
        r["stderr"]
            .as_str()
            .unwrap()
            .starts_with("NO_EVIDENCE: command not found: docket-no-such-command-7f3a"),
        "{r}"
    );

    // Not permitted: a script without exec permission.
    let script = l.path("no-exec.sh");
    std::fs::write(&script, "#!/bin/sh\necho should not run\n").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (r, out, _) = check_exec(l, &task, &[], &[script.to_str().unwrap()], 4, "NO_EVIDENCE");
    assert!(
        r["stderr"]
            .as_str()
            .unwrap()
            .starts_with("NO_EVIDENCE: permission denied"),
        "{r}"
    );
    assert!(out.is_empty());

    // Not a program: an executable file in no format the kernel runs
    // (ENOEXEC) is the command's fault, not an unavailable gateway.
    let garbage = l.path("not-a-program");
    std::fs::write(&garbage, [0x7f, b'X', b'Y', b'Z', 0, 1, 2, 3]).unwrap();
    std::fs::set_permissions(&garbage, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (r, _, _) = check_exec(
        l,
        &task,
        &[],
        &[garbage.to_str().unwrap()],
        4,
        "NO_EVIDENCE",
    );
    assert!(
        r["stderr"]
            .as_str()
            .unwrap()
            .starts_with("NO_EVIDENCE: not executable: "),
        "{r}"
    );

    // A gateway without real execution.
    let marker = l.path("simulated-marker");
    let (r, _, _) = check_exec(
        l,
        &task,
        &["--simulate"],
        &["touch", marker.to_str().unwrap()],
        4,
        "NO_EVIDENCE",
    );
    assert!(
        r["stderr"]
            .as_str()
            .unwrap()
            .contains("ExecutionGateway is unavailable")
    );
    assert!(!marker.exists(), "--simulate runs nothing");

    // Over the truncation limit: 3,000 numbered lines (33,000 characters).
    let (r, out, _) = check_exec(
        l,
        &task,
        &[],
        &[
            "awk",
            "BEGIN { for (i = 0; i < 3000; i++) printf \"line %05d\\n\", i }",
        ],
        0,
        "SUCCESS",
    );
    let expected: String = (0..3000).map(|i| format!("line {i:05}\n")).collect();
    assert_eq!(out, expected.as_bytes(), "the full output is the evidence");
    let stored = r["stdout"].as_str().unwrap();
    assert!(stored.ends_with(TRUNCATION_MARKER));
    assert!(stored.ends_with("\n\n[TRUNCATED - output exceeded limit]"));
    assert_eq!(&stored[..TRUNCATION_KEEP], &expected[..TRUNCATION_KEEP]);
    assert_eq!(stored.len(), TRUNCATION_KEEP + TRUNCATION_MARKER.len());

    // The ledger re-checks all of it on replay.
    if l.server.is_none() {
        ok(l.run(&["replay", "--verify"]));
    }
}

#[test]
fn every_outcome_is_recorded_embedded() {
    let l = Ledger::new();
    every_outcome(&l);
}

#[test]
fn every_outcome_is_recorded_through_docket_serve() {
    let mut l = Ledger::new();
    let server = Server::start(&l.data);
    l.server = Some(server.url.clone());
    every_outcome(&l);
}

#[test]
fn a_key_without_the_gateway_role_runs_nothing_and_appends_nothing() {
    let l = Ledger::new();
    let task = l.register_task(&demo_task());
    let before = l.events();
    let marker = l.path("marker");
    let out = l.exec(
        &task,
        &l.submitter,
        &[],
        &["touch", marker.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(show(&out).contains("not the gateway role"));
    assert!(!marker.exists(), "the command did not run");
    assert_eq!(l.events(), before, "nothing appended");
    // An unknown task: nothing runs either (exit 4).
    let out = l.exec(
        "00000000-0000-4000-8000-0000000000ff",
        &l.gateway,
        &[],
        &["touch", marker.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(!marker.exists());
    assert_eq!(l.events(), before);
    // A ledger that cannot be reached: nothing could be recorded, so
    // nothing runs (exit 10).
    let out = docket()
        .args([
            "--server",
            "http://127.0.0.1:1",
            "exec",
            "--task",
            &task,
            "--key",
        ])
        .arg(&l.gateway)
        .args(["--", "touch", marker.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(10), "{}", show(&out));
    assert!(!marker.exists());
}

/// Copies a directory tree.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Writes `submit.json` as a new attempt (an extra field makes the
/// statement new).
fn new_attempt(dir: &Path, n: u64) {
    let file = dir.join("submit.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    v["attempt"] = json!(n);
    std::fs::write(&file, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

fn submit(l: &Ledger, dir: &Path) -> (Option<i32>, Value) {
    let out = l.run(&[
        "submit",
        dir.to_str().unwrap(),
        "--key",
        l.submitter.to_str().unwrap(),
    ]);
    (out.status.code(), json_of(&out))
}

fn messages(v: &Value) -> String {
    v["result"]["messages"].to_string()
}

#[test]
fn a_task_requiring_gateway_records_passes_only_on_a_gateways_record() {
    let l = Ledger::new();
    let mut contract = demo_task();
    contract["acceptance"]["require_gateway_execution"] = json!(true);
    let task = l.register_task(&contract);
    let dir = l.path("run");
    copy_dir(&demo().join("pass"), &dir);

    // No gateway record: FAIL, EVIDENCE_MISSING.
    let (code, v) = submit(&l, &dir);
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["result"]["reason_code"], "EVIDENCE_MISSING", "{v}");
    assert!(
        messages(&v).contains("ledger.gateway.record_missing"),
        "{v}"
    );

    // The executor writes its own (well-formed) test result: it does not count.
    let own = docket_verifier::execution::ExecutionRecord::from_execution(
        "cargo test",
        0,
        "test result: ok. 3 passed; 0 failed\n",
        "",
        "2026-02-09T14:29:00Z",
        "2026-02-09T14:29:02Z",
        2.0,
    );
    let file = l.path("own.json");
    std::fs::write(&file, serde_json::to_vec(&own).unwrap()).unwrap();
    ok(l.run(&[
        "execution",
        "record",
        file.to_str().unwrap(),
        "--task",
        &task,
        "--key",
        l.submitter.to_str().unwrap(),
    ]));
    new_attempt(&dir, 2);
    let (code, v) = submit(&l, &dir);
    assert_eq!(code, Some(5), "{v}");
    assert!(
        messages(&v).contains("ledger.gateway.record_missing"),
        "{v}"
    );

    // The gateway runs the required `cargo test` (a stand-in on PATH) and
    // it fails: FAIL, CI_FAILED.
    let bin = l.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run_cargo = |exit: u8| {
        std::fs::write(
            &cargo,
            format!("#!/bin/sh\necho \"test result: exit {exit}\"\nexit {exit}\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
        l.cmd()
            .env("PATH", &path)
            .args(["exec", "--task", &task, "--key"])
            .arg(&l.gateway)
            .args(["--", "cargo", "test"])
            .output()
            .unwrap()
    };
    let out = run_cargo(1);
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    assert_eq!(json_of(&out)["raw_command"], "cargo test");
    new_attempt(&dir, 3);
    let (code, v) = submit(&l, &dir);
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["result"]["reason_code"], "CI_FAILED", "{v}");
    assert!(messages(&v).contains("ledger.gateway.failed"), "{v}");

    // It passes: PASS, with the gateway_attested check.
    ok(run_cargo(0));
    new_attempt(&dir, 4);
    let (code, v) = submit(&l, &dir);
    assert_eq!(code, Some(0), "{v}");
    let checks = v["result"]["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["name"] == "gateway_attested" && c["passed"] == true),
        "{v}"
    );
}

/// The seed 003 harness run of the verifier's `pass_with_harness_report`
/// case, changed to claim an approval granted by `operator` for scope
/// `src/` in mode `write` (digests kept right).
fn harness_run_with_grant(dir: &Path) {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verifier/tests/cases/pass_with_harness_report/artifacts");
    copy_dir(&case, dir);
    let events_file = dir.join("events.normalized.jsonl");
    let text = std::fs::read_to_string(&events_file).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = lines
        .iter()
        .position(|l| l.contains("patch.applied"))
        .unwrap();
    lines.insert(at, r#"{"event": "approval.granted", "actor": "operator", "scope": "src/", "mutation_mode": "write", "timestamp": "2026-02-09T14:28:06Z", "expires_at": "2026-02-09T15:00:00Z"}"#.into());
    lines.insert(at, r#"{"event": "approval.requested", "actor": "backend-x", "scope": "src/", "mutation_mode": "write", "timestamp": "2026-02-09T14:28:05Z"}"#.into());
    let text = lines.join("\n") + "\n";
    std::fs::write(&events_file, &text).unwrap();
    let report_file = dir.join("report.json");
    let mut report: Value = serde_json::from_slice(&std::fs::read(&report_file).unwrap()).unwrap();
    report["approval_status"] = json!("granted");
    report["artifact_digests"]["events.normalized.jsonl"] = json!(sha_hex(text.as_bytes()));
    std::fs::write(&report_file, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
}

#[test]
fn a_harness_approval_passes_only_with_a_matching_ledger_grant() {
    let l = Ledger::new();
    let contract: Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../verifier/tests/cases/pass_with_harness_report/task.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let task = l.register_task(&contract);
    let dir = l.path("run");
    harness_run_with_grant(&dir);

    // The run says granted; the ledger holds nothing: FAIL, approval denied.
    let (code, v) = submit(&l, &dir);
    assert_eq!(code, Some(5), "{v}");
    assert_eq!(v["result"]["reason_code"], "POLICY_VIOLATION", "{v}");
    let m = messages(&v);
    assert!(m.contains("harness.approval.ledger"), "{m}");
    assert!(m.contains("approval denied"), "{m}");
    assert!(m.contains("holds no approval"), "{m}");

    let request = |actor: &str| -> u64 {
        let out = ok(l.run(&[
            "approval",
            "request",
            "--task",
            &task,
            "--actor",
            actor,
            "--scope",
            "src/",
            "--mode",
            "write",
            "--expires",
            "2099-01-01T00:00:00Z",
            "--key",
            l.submitter.to_str().unwrap(),
        ]));
        json_of(&out)["seq"].as_u64().unwrap()
    };

    // The ledger denied it: FAIL.
    let denied = request("backend-x");
    ok(l.run(&[
        "approval",
        "deny",
        &denied.to_string(),
        "--task",
        &task,
        "--actor",
        "operator",
        "--reason",
        "not now",
        "--key",
        l.approver.to_str().unwrap(),
    ]));
    new_attempt(&dir, 2);
    let (code, v) = submit(&l, &dir);
    assert_eq!(code, Some(5), "{v}");
    assert!(messages(&v).contains("the ledger denied request"), "{v}");

    // A grant by another actor does not match either.
    let other = request("backend-x");
    ok(l.run(&[
        "approval",
        "grant",
        &other.to_string(),
        "--task",
        &task,
        "--actor",
        "someone-else",
        "--key",
        l.approver.to_str().unwrap(),
    ]));
    new_attempt(&dir, 3);
    let (code, v) = submit(&l, &dir);
    assert_eq!(code, Some(5), "{v}");
    assert!(messages(&v).contains("another approver"), "{v}");

    // The matching grant (operator, src/, write, not expired): PASS.
    let granted = request("backend-x");
    ok(l.run(&[
        "approval",
        "grant",
        &granted.to_string(),
        "--task",
        &task,
        "--actor",
        "operator",
        "--key",
        l.approver.to_str().unwrap(),
    ]));
    new_attempt(&dir, 4);
    let (code, v) = submit(&l, &dir);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["result"]["status"], "pass", "{v}");
}

fn touched(l: &Ledger) {
    let task = l.register_task(&demo_task());
    // Something the executor touched: the output of a gateway run.
    let out = ok(l.exec(&task, &l.gateway, &[], &["sh", "-c", "echo touched"]));
    let oid = json_of(&out)["stdout"]["oid"].as_str().unwrap().to_string();
    let dir = l.path("touched-run");
    copy_dir(&demo().join("pass"), &dir);

    // An unregistered OID: refused before anything is uploaded.
    let before = l.events();
    let ghost = "01KGCV31W0C42YQHMVAT6FSR1H";
    let out = l.run(&[
        "submit",
        dir.to_str().unwrap(),
        "--touched",
        &format!("{oid},{ghost}"),
        "--key",
        l.submitter.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(show(&out).contains(ghost), "{}", show(&out));
    assert_eq!(l.events(), before, "nothing appended");

    // Registered: recorded beside evidence_oids.
    let out = l.run(&[
        "submit",
        dir.to_str().unwrap(),
        "--touched",
        &oid,
        "--key",
        l.submitter.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let seq = json_of(&out)["submission"]["seq"].as_u64().unwrap();
    let payload = &l.event(seq)["payload"];
    assert_eq!(payload["touched_oids"], json!([oid]));
    assert_eq!(payload["evidence_oids"].as_array().unwrap().len(), 5);
}

#[test]
fn submissions_record_registered_touched_oids_embedded_and_through_docket_serve() {
    let l = Ledger::new();
    touched(&l);
    let mut l = Ledger::new();
    let server = Server::start(&l.data);
    l.server = Some(server.url.clone());
    touched(&l);
}
