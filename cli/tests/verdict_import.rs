//! Seed 001 verdicts through the built binary, on a real ledger:
//! `docket verdict import RUN_DIR --task ID --key VERIFIER_KEY` (good,
//! missing and malformed `evidence/verdict.json`, a missing evidence path,
//! refused keys; embedded and through `docket serve`), `docket verdict
//! deadlines`, `docket verify --reproduce TASK` on an untouched and on a
//! tampered ledger, and the exit codes of `docket verdict issue`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{docket, text};

use serde_json::{Value, json};

fn run(data: &Path, server: Option<&str>, args: &[&str]) -> Output {
    let mut c = docket();
    c.arg("--data").arg(data);
    if let Some(url) = server {
        c.arg("--server").arg(url);
    }
    c.args(args).output().unwrap()
}

fn code(out: &Output, want: i32) -> &Output {
    assert_eq!(out.status.code(), Some(want), "{}", text(out));
    out
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

/// A new ledger in `root/ledger`.
fn init_ledger(root: &Path) -> PathBuf {
    let data = root.join("ledger");
    code(&run(&data, None, &["init"]), 0);
    data
}

/// Registers the demo task and submits the demo's passing artifacts with
/// the submitter key `sub` (auto-verify judges it PASS); returns the task id.
fn demo_task_submitted(data: &Path, sub: &Path) -> String {
    let task_file = demo().join("task.json");
    let task: Value = serde_json::from_slice(&std::fs::read(&task_file).unwrap()).unwrap();
    let sub = sub.to_str().unwrap();
    let register = [
        "task",
        "register",
        task_file.to_str().unwrap(),
        "--key",
        sub,
    ];
    code(&run(data, None, &register), 0);
    let pass = demo().join("pass");
    code(
        &run(
            data,
            None,
            &["--json", "submit", pass.to_str().unwrap(), "--key", sub],
        ),
        0,
    );
    task["task_id"].as_str().unwrap().to_string()
}

/// A new key with `role`; returns its key file.
fn key(root: &Path, data: &Path, name: &str, role: &str) -> PathBuf {
    let file = root.join(format!("{name}.key"));
    let out = docket()
        .args(["--json", "keygen", "--out"])
        .arg(&file)
        .output()
        .unwrap();
    code(&out, 0);
    let v = json_of(&out);
    let admin = data.join("keys/admin.key");
    code(
        &run(
            data,
            None,
            &[
                "key",
                "add",
                v["public_key"].as_str().unwrap(),
                "--role",
                role,
                "--key",
                admin.to_str().unwrap(),
            ],
        ),
        0,
    );
    file
}

/// Registers a task (`n` makes the id) with an optional verdict deadline.
fn task(root: &Path, data: &Path, n: u32, deadline: Option<&str>) -> String {
    let id = format!("00000000-0000-4000-8000-{n:012x}");
    let mut t: Value =
        serde_json::from_slice(&std::fs::read(demo().join("task.json")).unwrap()).unwrap();
    t["task_id"] = json!(id);
    if let Some(d) = deadline {
        t["verdict_deadline"] = json!(d);
    }
    let file = root.join(format!("task-{n}.json"));
    std::fs::write(&file, serde_json::to_vec(&t).unwrap()).unwrap();
    let admin = data.join("keys/admin.key");
    code(
        &run(
            data,
            None,
            &[
                "task",
                "register",
                file.to_str().unwrap(),
                "--key",
                admin.to_str().unwrap(),
            ],
        ),
        0,
    );
    id
}

/// A run output dir with `verdict.json` (None: none) and files.
fn run_dir(root: &Path, name: &str, verdict: Option<&str>, files: &[(&str, &str)]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("evidence")).unwrap();
    if let Some(v) = verdict {
        std::fs::write(dir.join("evidence/verdict.json"), v).unwrap();
    }
    for (p, content) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

const PASS: &str = r#"{"verdict":"PASS","fail_class":null,"exit_code":0,"evidence_paths":["evidence/test.log","evidence/junit.xml"],"generated_utc":"2026-02-09T14:30:00Z"}"#;

fn tree_size(data: &Path) -> u64 {
    json_of(code(&run(data, None, &["--json", "checkpoint"]), 0))["size"]
        .as_u64()
        .unwrap()
}

fn import(data: &Path, server: Option<&str>, dir: &Path, task: &str, key: &Path) -> Output {
    run(
        data,
        server,
        &[
            "--json",
            "verdict",
            "import",
            dir.to_str().unwrap(),
            "--task",
            task,
            "--key",
            key.to_str().unwrap(),
        ],
    )
}

fn show(data: &Path, task: &str) -> (Option<i32>, Value) {
    let out = run(data, None, &["--json", "verdict", "show", task]);
    (out.status.code(), json_of(&out))
}

fn reproduce(data: &Path, task: &str) -> Output {
    run(data, None, &["--json", "verify", "--reproduce", task])
}

/// Overwrites the stored blob with SHA-256 `sha` (tampering on disk).
fn tamper_blob(data: &Path, sha: &str, content: &[u8]) {
    let path = data.join("blobs").join(&sha[..2]).join(sha);
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    #[allow(
        clippy::permissions_set_readonly_false,
        reason = "the test tampers with a stored blob, which the store keeps read-only"
    )]
    perms.set_readonly(false);
    std::fs::set_permissions(&path, perms).unwrap();
    std::fs::write(&path, content).unwrap();
}

#[test]
fn good_missing_and_malformed_verdict_json_embedded() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let data = init_ledger(root);
    let ver = key(root, &data, "ver", "verifier");
    let sub = key(root, &data, "sub", "submitter");

    // Given a run whose verdict.json says PASS and whose evidence exists.
    let t1 = task(root, &data, 1, None);
    let good = run_dir(
        root,
        "good",
        Some(PASS),
        &[
            ("evidence/test.log", "ok 12 tests\n"),
            ("evidence/junit.xml", "<testsuite/>"),
        ],
    );
    // When it is imported with a verifier key, then PASS is recorded (exit 0)
    // with verdict.json and both files registered by OID.
    let out = import(&data, None, &good, &t1, &ver);
    let v = json_of(code(&out, 0));
    assert_eq!(v["verdict"], "PASS");
    assert_eq!(v["fail_class"], Value::Null);
    let paths: Vec<&str> = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "evidence/verdict.json",
            "evidence/test.log",
            "evidence/junit.xml"
        ]
    );
    assert_eq!(v["engine"]["name"], "docket-verdict-import");
    let log_oid = v["evidence"][1]["oid"].as_str().unwrap().to_string();
    let log_sha = v["evidence"][1]["sha256"].as_str().unwrap().to_string();
    let (c, shown) = show(&data, &t1);
    assert_eq!(c, Some(0));
    assert_eq!(shown["status"], "pass");
    assert_eq!(shown["verdict"]["engine"]["name"], "docket-verdict-import");
    assert_eq!(shown["provenance"]["name"], "docket-verdict-import");
    assert_eq!(
        shown["provenance"]["rules_digest"].as_str().unwrap().len(),
        64
    );
    // The evidence is the file's content, by OID.
    let got = root.join("got.log");
    code(
        &run(
            &data,
            None,
            &["evidence", "get", &log_oid, "--out", got.to_str().unwrap()],
        ),
        0,
    );
    assert_eq!(std::fs::read(&got).unwrap(), b"ok 12 tests\n");
    // Importing the same run again appends nothing (idempotent).
    let size = tree_size(&data);
    let again = json_of(code(&import(&data, None, &good, &t1, &ver), 0));
    assert_eq!(again["receipt"]["duplicate"], true);
    assert_eq!(tree_size(&data), size);
    // An export bundle of the task carries the imported verdict with its
    // provenance and the imported files' blobs; it audits clean.
    let bundle = root.join("bundle");
    code(
        &run(
            &data,
            None,
            &[
                "export",
                bundle.to_str().unwrap(),
                "--task",
                &t1,
                "--with-blobs",
                "--format",
                "vsa",
            ],
        ),
        0,
    );
    code(&run(&data, None, &["audit", bundle.to_str().unwrap()]), 0);
    let seq = v["receipt"]["seq"].as_u64().unwrap();
    let env: Value = serde_json::from_slice(
        &std::fs::read(bundle.join(format!("attestations/verdict-{seq}.vsa.dsse.json"))).unwrap(),
    )
    .unwrap();
    use base64::Engine as _;
    let statement: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(env["payload"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        statement["predicate"]["verifier"]["engine"],
        shown["provenance"]
    );
    assert_eq!(statement["predicate"]["verificationResult"], "PASSED");
    assert_eq!(
        std::fs::read(bundle.join("blobs").join(&log_sha)).unwrap(),
        b"ok 12 tests\n"
    );
    // Reproduce on the untouched ledger: the import engine gives PASS again.
    let r = json_of(code(&reproduce(&data, &t1), 0));
    assert_eq!(r["matches"], true);
    assert_eq!(r["kind"], "verdict.imported");
    // Reproduce after the evidence content was altered on disk: exit 3.
    tamper_blob(&data, &log_sha, b"FAILED 3 tests\n");
    let r = json_of(code(&reproduce(&data, &t1), 3));
    assert_eq!(r["matches"], false);
    assert_eq!(r["reproduced"]["fail_class"], "artifact_missing");

    // Given a run without verdict.json: FAIL verdict_missing is recorded.
    let t2 = task(root, &data, 2, None);
    let none = run_dir(root, "none", None, &[("evidence/test.log", "x")]);
    let v = json_of(code(&import(&data, None, &none, &t2, &ver), 5));
    assert_eq!(v["verdict"], "FAIL");
    assert_eq!(v["fail_class"], "verdict_missing");
    assert_eq!(v["evidence"].as_array().unwrap().len(), 0);
    let (c, shown) = show(&data, &t2);
    assert_eq!(c, Some(5));
    assert_eq!(shown["status"], "fail");
    assert_eq!(shown["fail_class"], "verdict_missing");
    code(&reproduce(&data, &t2), 0);

    // Given a run whose evidence path is missing: FAIL artifact_missing,
    // even though verdict.json says PASS; verdict.json is still registered.
    let t3 = task(root, &data, 3, None);
    let partial = run_dir(
        root,
        "partial",
        Some(PASS),
        &[("evidence/test.log", "ok\n")],
    );
    let v = json_of(code(&import(&data, None, &partial, &t3, &ver), 5));
    assert_eq!(v["fail_class"], "artifact_missing");
    assert_eq!(v["missing_paths"], json!(["evidence/junit.xml"]));
    assert_eq!(v["evidence"].as_array().unwrap().len(), 2);
    assert_eq!(show(&data, &t3).1["fail_class"], "artifact_missing");

    // Given a malformed verdict.json: exit 2, nothing recorded.
    let t4 = task(root, &data, 4, None);
    let size = tree_size(&data);
    for (name, bad) in [
        ("notjson", "{not json"),
        (
            "badclass",
            r#"{"verdict":"FAIL","fail_class":"flaky","exit_code":1,"evidence_paths":[],"generated_utc":"2026-02-09T14:30:00Z"}"#,
        ),
        (
            "nopaths",
            r#"{"verdict":"PASS","fail_class":null,"exit_code":0,"generated_utc":"2026-02-09T14:30:00Z"}"#,
        ),
        (
            "escape",
            r#"{"verdict":"PASS","fail_class":null,"exit_code":0,"evidence_paths":["../secret"],"generated_utc":"2026-02-09T14:30:00Z"}"#,
        ),
    ] {
        let dir = run_dir(root, name, Some(bad), &[]);
        let out = import(&data, None, &dir, &t4, &ver);
        code(&out, 2);
        assert_eq!(tree_size(&data), size, "{name}: nothing appended");
    }
    let (c, shown) = show(&data, &t4);
    assert_eq!(c, Some(5));
    assert_eq!(shown["status"], "pending");

    // A key without the verifier role is refused: exit 2, nothing recorded.
    let out = import(&data, None, &good, &t4, &sub);
    code(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("verifier"),
        "{}",
        text(&out)
    );
    assert_eq!(tree_size(&data), size);
    // An unknown task: exit 4, nothing recorded.
    code(
        &import(
            &data,
            None,
            &good,
            "00000000-0000-4000-8000-0000000000ff",
            &ver,
        ),
        4,
    );
    assert_eq!(tree_size(&data), size);
    // A run dir that does not exist has no verdict.json: FAIL
    // verdict_missing, recorded (fail closed).
    let v = json_of(code(&import(&data, None, &root.join("nope"), &t4, &ver), 5));
    assert_eq!(v["fail_class"], "verdict_missing");
    assert_eq!(show(&data, &t4).1["fail_class"], "verdict_missing");
}

/// Seed 001: "if `verdict.json` is missing, treat the run as FAIL". Two
/// runs that both lack it are two facts (each records when it was looked
/// at), so a later one is not swallowed as a duplicate of the first.
#[test]
fn a_second_run_without_verdict_json_after_a_pass_fails_the_task() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let data = init_ledger(root);
    let ver = key(root, &data, "ver", "verifier");
    let t = task(root, &data, 7, None);
    let missing = run_dir(root, "missing", None, &[]);
    let good = run_dir(
        root,
        "good",
        Some(PASS),
        &[
            ("evidence/test.log", "ok\n"),
            ("evidence/junit.xml", "<testsuite/>"),
        ],
    );
    // Given a run without verdict.json (FAIL), then a run that PASSed,
    let first = json_of(code(&import(&data, None, &missing, &t, &ver), 5));
    assert_eq!(first["receipt"]["duplicate"], false);
    code(&import(&data, None, &good, &t, &ver), 0);
    assert_eq!(show(&data, &t).1["status"], "pass");
    // when another run without verdict.json is imported,
    std::thread::sleep(std::time::Duration::from_millis(5));
    let size = tree_size(&data);
    let again = json_of(code(&import(&data, None, &missing, &t, &ver), 5));
    // then it is appended and the task's verdict is FAIL verdict_missing.
    assert_eq!(again["receipt"]["duplicate"], false, "{again}");
    assert_eq!(tree_size(&data), size + 1);
    let (c, shown) = show(&data, &t);
    assert_eq!(c, Some(5));
    assert_eq!(shown["status"], "fail");
    assert_eq!(shown["fail_class"], "verdict_missing");
    code(&run(&data, None, &["replay", "--verify"]), 0);
}

/// `docket verdict issue` exits as every command that records a verdict
/// (README "Exit codes"): 0 for a PASS, 5 for a FAIL, 2 when refused.
#[test]
fn verdict_issue_exits_with_the_verdict_it_records() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let data = init_ledger(root);
    let ver = key(root, &data, "ver", "verifier");
    let sub = key(root, &data, "sub", "submitter");
    // Given the demo task with a submission (auto-verify judges it PASS),
    let t = demo_task_submitted(&data, &sub);
    let doc = |verdict: &str, tests_passed: bool| {
        let mut d = json!({
            "schema_version": "scc.verdict.v1",
            "task_id": t,
            "verdict": verdict,
            "messages": ["judged"],
            "checks": {"schema_valid": true, "scope_valid": true,
                       "tests_passed": tests_passed, "evidence_present": true},
            "timestamps": {"evaluated_at": "2026-03-01T12:00:00Z"},
        });
        if verdict == "FAIL" {
            d["reason_code"] = json!("CI_FAILED");
            d["fail_class"] = json!("test_failure");
        }
        let file = root.join(format!("{verdict}.json"));
        std::fs::write(&file, serde_json::to_vec(&d).unwrap()).unwrap();
        file
    };
    let issue = |file: &Path, key: &Path| {
        run(
            &data,
            None,
            &[
                "verdict",
                "issue",
                file.to_str().unwrap(),
                "--key",
                key.to_str().unwrap(),
            ],
        )
    };
    // when a verifier issues a PASS document, then exit 0;
    let pass = doc("PASS", true);
    code(&issue(&pass, &ver), 0);
    assert_eq!(show(&data, &t).1["status"], "pass");
    // when it issues a FAIL document, then exit 5 and the task fails.
    let fail = doc("FAIL", false);
    code(&issue(&fail, &ver), 5);
    assert_eq!(show(&data, &t).1["status"], "fail");
    // A submitter may not issue one: exit 2, nothing appended.
    let size = tree_size(&data);
    code(&issue(&fail, &sub), 2);
    assert_eq!(tree_size(&data), size);
}

#[test]
fn import_through_docket_serve() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let data = init_ledger(root);
    let ver = key(root, &data, "ver", "verifier");
    let sub = key(root, &data, "sub", "submitter");
    let t1 = task(root, &data, 1, None);
    let t2 = task(root, &data, 2, None);
    let t3 = task(root, &data, 3, None);
    let good = run_dir(
        root,
        "good",
        Some(PASS),
        &[
            ("evidence/test.log", "ok 12 tests\n"),
            ("evidence/junit.xml", "<testsuite/>"),
        ],
    );
    let none = run_dir(root, "none", None, &[]);
    let bad = run_dir(root, "bad", Some("[]"), &[]);
    let serve = support::Server::start(&data);
    let url = serve.url.clone();
    let v_sha = std::sync::Mutex::new(String::new());
    let result = std::panic::catch_unwind(|| {
        let u = Some(url.as_str());
        // A refused key uploads and records nothing.
        code(&import(&data, u, &good, &t1, &sub), 2);
        // Malformed: exit 2.
        code(&import(&data, u, &bad, &t1, &ver), 2);
        // Good: PASS with OIDs, the same OIDs the server minted.
        let v = json_of(code(&import(&data, u, &good, &t1, &ver), 0));
        assert_eq!(v["verdict"], "PASS");
        let oid = v["evidence"][2]["oid"].as_str().unwrap().to_string();
        *v_sha.lock().unwrap() = v["evidence"][2]["sha256"].as_str().unwrap().to_string();
        let e = json_of(code(
            &run(&data, u, &["--json", "evidence", "show", &oid]),
            0,
        ));
        assert_eq!(e["task_id"], t1);
        assert_eq!(e["sha256"], v["evidence"][2]["sha256"]);
        assert_eq!(e["registered_seq"], v["receipt"]["seq"]);
        // Missing verdict.json: FAIL verdict_missing (exit 5).
        let v = json_of(code(&import(&data, u, &none, &t2, &ver), 5));
        assert_eq!(v["fail_class"], "verdict_missing");
        let out = run(&data, u, &["--json", "verdict", "show", &t2]);
        let shown = json_of(code(&out, 5));
        assert_eq!(shown["fail_class"], "verdict_missing");
        assert_eq!(shown["provenance"]["name"], "docket-verdict-import");
        // Without --server, a served data directory is used through its
        // server.
        let v = json_of(code(&import(&data, None, &none, &t3, &ver), 5));
        assert_eq!(v["fail_class"], "verdict_missing");
        // Reproduce through the server: untouched, then with the evidence
        // content altered on the server's disk.
        let r = json_of(code(
            &run(&data, u, &["--json", "verify", "--reproduce", &t1]),
            0,
        ));
        assert_eq!(r["matches"], true);
        let sha = v_sha.lock().unwrap().clone();
        tamper_blob(&data, &sha, b"not junit");
        let r = json_of(code(
            &run(&data, u, &["--json", "verify", "--reproduce", &t1]),
            3,
        ));
        assert_eq!(r["reproduced"]["fail_class"], "artifact_missing");
        code(
            &run(
                &data,
                u,
                &[
                    "verify",
                    "--reproduce",
                    "00000000-0000-4000-8000-0000000000ff",
                ],
            ),
            4,
        );
    });
    drop(serve);
    result.unwrap();
    // The same answers from the data directory after the server stopped.
    assert_eq!(show(&data, &t1).1["status"], "pass");
    // The refused key stored nothing: the only blobs are the good run's.
    let blobs = walk_count(&data.join("blobs"));
    assert_eq!(blobs, 3, "verdict.json, test.log, junit.xml");
    assert_eq!(show(&data, &t2).1["fail_class"], "verdict_missing");
}

#[test]
fn deadlines_and_reproduce_of_engine_verdicts() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let data = init_ledger(root);
    let sub = key(root, &data, "sub", "submitter");

    // Deadlines: one passed, one far ahead.
    let late = task(root, &data, 1, Some("2020-01-01T00:00:00Z"));
    let ahead = task(root, &data, 2, Some("2999-01-01T00:00:00Z"));
    let dry = json_of(code(
        &run(
            &data,
            None,
            &["--json", "verdict", "deadlines", "--dry-run"],
        ),
        0,
    ));
    assert_eq!(dry["failed"].as_array().unwrap().len(), 1);
    assert_eq!(show(&data, &late).1["status"], "pending");
    let r = json_of(code(
        &run(&data, None, &["--json", "verdict", "deadlines"]),
        0,
    ));
    assert_eq!(r["failed"][0]["task_id"], late);
    let (c, shown) = show(&data, &late);
    assert_eq!(c, Some(5));
    assert_eq!(shown["fail_class"], "verdict_missing");
    assert_eq!(shown["provenance"]["name"], "docket-verdict-deadline");
    assert_eq!(show(&data, &ahead).1["status"], "pending");
    code(&reproduce(&data, &late), 0);
    // A second sweep records nothing; a --now after the ledger clock is
    // refused.
    let r = json_of(code(
        &run(&data, None, &["--json", "verdict", "deadlines"]),
        0,
    ));
    assert!(r["failed"].as_array().unwrap().is_empty());
    code(
        &run(
            &data,
            None,
            &["verdict", "deadlines", "--now", "2999-06-01T00:00:00Z"],
        ),
        2,
    );
    // Replay --verify of the ledger with the deadline event: clean.
    code(&run(&data, None, &["replay", "--verify"]), 0);

    // Reproduce of the auto-verify verdict on an untouched ledger: exit 0.
    let t = demo_task_submitted(&data, &sub);
    let (c, shown) = show(&data, &t);
    assert_eq!(c, Some(0), "{shown}");
    assert_eq!(shown["provenance"]["name"], "docket-verifier");
    let rules = json_of(code(&run(&data, None, &["--json", "verdict", "rules"]), 0));
    assert_eq!(
        rules["engine"]["rules_digest"],
        shown["provenance"]["rules_digest"]
    );
    let r = json_of(code(&reproduce(&data, &t), 0));
    assert_eq!(r["recorded"]["verdict"], "PASS");
    assert_eq!(r["reproduced"]["verdict"], "PASS");

    // Tampered: the content of the submission's selftest.log altered on
    // disk after the verdict: the engine no longer gives PASS (exit 3).
    let log = std::fs::read(demo().join("pass/selftest.log")).unwrap();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&log));
    tamper_blob(&data, &sha, b"$ cargo test\nFAILED\nEXIT_CODE=1\n");
    let r = json_of(code(&reproduce(&data, &t), 3));
    assert_eq!(r["recorded"]["verdict"], "PASS");
    assert_eq!(r["reproduced"]["verdict"], "FAIL");
    assert!(!r["differences"].as_array().unwrap().is_empty());
    // A task with no verdict: exit 4.
    code(&reproduce(&data, &ahead), 4);
}

fn walk_count(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            n += walk_count(&p);
        } else if !p.file_name().unwrap().to_string_lossy().starts_with('.') {
            n += 1;
        }
    }
    n
}

#[test]
fn the_server_records_passed_deadlines_on_its_sweep_timer() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let data = init_ledger(root);
    let late = task(root, &data, 1, Some("2020-01-01T00:00:00Z"));
    let ahead = task(root, &data, 2, Some("2999-01-01T00:00:00Z"));
    let serve = support::Server::start_with(&data, &["--sweep-every-secs", "1"]);
    let url = serve.url.clone();
    let result = std::panic::catch_unwind(|| {
        let u = Some(url.as_str());
        // Given a served ledger with a task whose deadline passed, when the
        // sweep timer fires, then FAIL verdict_missing is recorded.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let shown = loop {
            let out = run(&data, u, &["--json", "verdict", "show", &late]);
            let v = json_of(&out);
            if v["status"] == "fail" || std::time::Instant::now() > deadline {
                break v;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        };
        assert_eq!(shown["fail_class"], "verdict_missing", "{shown}");
        assert_eq!(shown["provenance"]["name"], "docket-verdict-deadline");
        let out = run(&data, u, &["--json", "verdict", "show", &ahead]);
        assert_eq!(json_of(&out)["status"], "pending");
        // A deadline command goes to the data directory, not the server.
        code(&run(&data, u, &["verdict", "deadlines"]), 64);
    });
    drop(serve);
    result.unwrap();
    // Replay of what the server recorded: clean, same verdict.
    code(&run(&data, None, &["replay", "--verify"]), 0);
    assert_eq!(show(&data, &late).1["fail_class"], "verdict_missing");
}
