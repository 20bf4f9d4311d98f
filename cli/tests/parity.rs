//! Embedded/server parity: every read and write command gives the same
//! `--json` output and exit code on an embedded ledger (`--data`) and
//! through a real `docket serve` child on 127.0.0.1 (`--server`).
//!
//! * Reads are compared **byte for byte** on one ledger: each read runs
//!   embedded (no server), then the same read runs through a server on that
//!   very data directory.
//! * Writes run in lockstep on two copies of one ledger (same keys, same
//!   history): embedded on copy A, through the server on copy B. Their
//!   outputs must be the same JSON, field for field, except the values that
//!   depend on the wall clock (the recording time and what hashes it: leaf
//!   hashes, roots, notes, ULID evidence ids, state digests), which are
//!   masked before comparing.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{Server, docket};

use serde_json::Value;

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: &Output) -> &Output {
    assert!(out.status.success(), "{}", show(out));
    out
}

/// Runs `args` with `--json`; `{OUT}` in an argument becomes `out`.
fn run(data: &Path, server: Option<&str>, args: &[&str], out: &Path) -> Output {
    let mut c = docket();
    c.arg("--json").arg("--data").arg(data);
    if let Some(url) = server {
        c.args(["--server", url]);
    }
    for a in args {
        c.arg(a.replace("{OUT}", &out.display().to_string()));
    }
    c.output().expect("run docket")
}

/// Both outputs with their `{OUT}` paths put back as `{OUT}`.
fn normalised(o: &Output, out: &Path) -> (Option<i32>, String) {
    let text = String::from_utf8_lossy(&o.stdout).replace(&out.display().to_string(), "{OUT}");
    (o.status.code(), text)
}

/// Values that depend on the wall clock at recording time.
const CLOCK_FIELDS: &[&str] = &[
    "started_at",
    "finished_at",
    "duration_seconds",
    "now",
    "now_ms",
    "leaf_hash",
    "recorded_at_ms",
    "recorded_at",
    "issued_at",
    "state_digest",
    "root",
    "note",
    "event_b64",
    "prev_hash",
    "evaluated_at",
    "submitted_at",
    "expires_at",
    "expires_at_ms",
    "at",
    "at_ms",
    "requested_at",
    "decided_at",
];

fn is_ulid(s: &str) -> bool {
    s.len() == 26
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)))
}

fn mask(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = if CLOCK_FIELDS.contains(&k.as_str()) && !v.is_null() {
                        Value::String("<clock>".into())
                    } else {
                        mask(v)
                    };
                    // ULID keys (evidence ids as map keys).
                    let k = if is_ulid(k) {
                        "<ulid>".to_string()
                    } else {
                        k.clone()
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(mask).collect()),
        Value::String(s) if is_ulid(s) => Value::String("<ulid>".into()),
        // `docket exec`'s evidence names carry its start time.
        Value::String(s) if s.starts_with("execution/") => {
            Value::String("execution/<start time>/…".into())
        }
        other => other.clone(),
    }
}

fn masked_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {l}"));
            mask(&v)
        })
        .collect()
}

/// The lockstep pair for writes: copy A embedded, copy B served.
struct Lockstep<'a> {
    root: &'a Path,
    a: PathBuf,
    b: PathBuf,
    url: String,
    n: usize,
    failures: Vec<String>,
}

impl Lockstep<'_> {
    /// Runs a write both ways; returns the embedded output.
    fn write(&mut self, args: &[&str]) -> Output {
        self.n += 1;
        let (oa, ob) = (
            self.root.join(format!("out-a-{}", self.n)),
            self.root.join(format!("out-b-{}", self.n)),
        );
        let ea = run(&self.a, None, args, &oa);
        let eb = run(&self.b, Some(&self.url), args, &ob);
        let (ca, ta) = normalised(&ea, &oa);
        let (cb, tb) = normalised(&eb, &ob);
        if ca != cb || masked_lines(&ta) != masked_lines(&tb) {
            self.failures.push(format!(
                "write `docket {}`:\n  embedded (exit {ca:?}): {ta}\n  server   (exit {cb:?}): {tb}\n  stderr: {} | {}",
                args.join(" "),
                String::from_utf8_lossy(&ea.stderr).trim(),
                String::from_utf8_lossy(&eb.stderr).trim(),
            ));
        }
        ea
    }
}

fn json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .last()
        .unwrap_or_else(|| panic!("{}", show(out)));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {}", show(out)))
}

fn keygen(path: &Path) -> String {
    let out = docket()
        .args(["--json", "keygen", "--out"])
        .arg(path)
        .output()
        .unwrap();
    json(ok(&out))["public_key"].as_str().unwrap().to_string()
}

#[test]
fn every_command_answers_the_same_embedded_and_through_the_server() {
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path();
    let (a, b) = (root.join("a"), root.join("b"));
    ok(&docket().arg("--data").arg(&a).arg("init").output().unwrap());
    let keys = root.join("keys");
    std::fs::create_dir(&keys).unwrap();
    let k = |n: &str| keys.join(format!("{n}.key")).display().to_string();
    let gw = keygen(Path::new(&k("gw")));
    let (sub, ver, cus, app, spare) = (
        keygen(Path::new(&k("sub"))),
        keygen(Path::new(&k("ver"))),
        keygen(Path::new(&k("cus"))),
        keygen(Path::new(&k("app"))),
        keygen(Path::new(&k("spare"))),
    );
    // The two copies share keys and history from here on.
    let copy = Command::new("cp")
        .arg("-a")
        .arg(&a)
        .arg(&b)
        .status()
        .unwrap();
    assert!(copy.success());
    let admin = a.join("keys/admin.key").display().to_string();
    let task_file = demo().join("task.json").display().to_string();
    let task: Value = serde_json::from_slice(&std::fs::read(&task_file).unwrap()).unwrap();
    let task = task["task_id"].as_str().unwrap().to_string();
    let pass_dir = demo().join("pass").display().to_string();
    let fail_dir = demo().join("fail").display().to_string();
    let note = root.join("note.txt");
    std::fs::write(
        &note,
        "a note with a token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n",
    )
    .unwrap();
    let note = note.display().to_string();
    let redacted = root.join("redacted.txt");
    std::fs::write(&redacted, "a note with a token [redacted]\n").unwrap();
    let redacted = redacted.display().to_string();
    let payload = root.join("payload.json");
    std::fs::write(&payload, "{\"hello\":\"world\"}").unwrap();
    let payload = payload.display().to_string();
    let exec = root.join("exec.json");
    std::fs::write(
        &exec,
        serde_json::json!({"raw_command": "make test", "exit_code": 0, "stdout": "ok",
            "stderr": "", "started_at": "2026-02-09T14:30:00Z",
            "finished_at": "2026-02-09T14:30:01Z", "duration_seconds": 1.0,
            "status": "SUCCESS", "evidence_hash": "00"})
        .to_string(),
    )
    .unwrap();
    let exec = exec.display().to_string();

    // ---- writes, in lockstep ----
    let server_b = Server::start(&b);
    let mut w = Lockstep {
        root,
        a: a.clone(),
        b: b.clone(),
        url: server_b.url.clone(),
        n: 0,
        failures: Vec::new(),
    };
    for (key, role) in [
        (&sub, "submitter"),
        (&ver, "verifier"),
        (&cus, "custodian"),
        (&app, "approver"),
        (&spare, "auditor"),
        (&gw, "gateway"),
    ] {
        w.write(&["key", "add", key, "--role", role, "--key", &admin]);
    }
    w.write(&["key", "add", &sub, "--role", "submitter", "--key", &admin]);
    w.write(&["key", "revoke", &spare, "--key", &admin]);
    w.write(&["task", "register", &task_file, "--key", &k("sub")]);
    w.write(&["submit", &fail_dir, "--task", &task, "--key", &k("sub")]);
    w.write(&["submit", &pass_dir, "--task", &task, "--key", &k("sub")]);
    let put = w.write(&[
        "evidence",
        "put",
        &note,
        "--task",
        &task,
        "--key",
        &k("sub"),
    ]);
    w.write(&[
        "log",
        "append",
        "--kind",
        "x-note",
        "--payload",
        &payload,
        "--key",
        &k("sub"),
    ]);
    w.write(&[
        "check",
        "record",
        "--task",
        &task,
        "--name",
        "lint",
        "--passed",
        "--key",
        &k("ver"),
    ]);
    w.write(&[
        "execution",
        "record",
        &exec,
        "--task",
        &task,
        "--key",
        &k("sub"),
    ]);
    w.write(&[
        "exec",
        "--task",
        &task,
        "--key",
        &k("gw"),
        "--",
        "echo",
        "hello",
    ]);
    w.write(&["exec", "--task", &task, "--key", &k("gw"), "--", "false"]);
    let req = w.write(&[
        "approval",
        "request",
        "--task",
        &task,
        "--actor",
        "ci",
        "--scope",
        "merge",
        "--mode",
        "real-repo",
        "--key",
        &k("sub"),
    ]);
    let req_seq = json(&req)["seq"].to_string();
    w.write(&[
        "approval",
        "grant",
        &req_seq,
        "--task",
        &task,
        "--actor",
        "lead",
        "--key",
        &k("app"),
    ]);
    // The OIDs differ between the copies (ULIDs): look them up per copy.
    let oid_a = json(&put)["oid"].as_str().map(str::to_string);
    drop(put);
    if let Some(oid_a) = oid_a {
        let oid_b = {
            let out = run(
                &b,
                Some(&server_b.url),
                &[
                    "evidence",
                    "put",
                    &note,
                    "--task",
                    &task,
                    "--key",
                    &k("sub"),
                ],
                root,
            );
            json(&out)["oid"].as_str().unwrap().to_string()
        };
        // One more put on A keeps the copies in step.
        ok(&run(
            &a,
            None,
            &[
                "evidence",
                "put",
                &note,
                "--task",
                &task,
                "--key",
                &k("sub"),
            ],
            root,
        ));
        for args in [
            vec![
                "retention",
                "pin",
                "{OID}",
                "--reason",
                "hold",
                "--key",
                &k("cus"),
            ],
            vec!["retention", "unpin", "{OID}", "--key", &k("cus")],
            vec![
                "retention",
                "reclassify",
                "{OID}",
                "high_impact",
                "--key",
                &k("cus"),
            ],
            vec![
                "retention",
                "redact",
                "{OID}",
                "--with",
                &redacted,
                "--reason",
                "token",
                "--key",
                &k("cus"),
            ],
        ] {
            let ea = run(
                &a,
                None,
                &args
                    .iter()
                    .map(|s| s.replace("{OID}", &oid_a))
                    .collect::<Vec<_>>()
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                root,
            );
            let eb = run(
                &b,
                Some(&server_b.url),
                &args
                    .iter()
                    .map(|s| s.replace("{OID}", &oid_b))
                    .collect::<Vec<_>>()
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                root,
            );
            let (ta, tb) = (
                String::from_utf8_lossy(&ea.stdout).replace(&oid_a, "{OID}"),
                String::from_utf8_lossy(&eb.stdout).replace(&oid_b, "{OID}"),
            );
            if ea.status.code() != eb.status.code() || masked_lines(&ta) != masked_lines(&tb) {
                w.failures.push(format!(
                    "write `docket {}`:\n  embedded (exit {:?}): {ta}\n  server   (exit {:?}): {tb}\n  stderr: {} | {}",
                    args.join(" "),
                    ea.status.code(),
                    eb.status.code(),
                    String::from_utf8_lossy(&ea.stderr).trim(),
                    String::from_utf8_lossy(&eb.stderr).trim(),
                ));
            }
        }
    } else {
        w.failures.push(format!(
            "evidence put printed no oid: {}",
            show(&put_placeholder())
        ));
    }
    w.write(&["retention", "policy", "set", "--key", &admin]);
    w.write(&["retention", "sweep", "--key", &k("cus")]);
    // Refusals answer alike too.
    w.write(&["task", "register", &task_file, "--key", &k("ver")]);
    w.write(&[
        "submit",
        &pass_dir,
        "--task",
        "00000000-0000-4000-8000-000000000000",
        "--key",
        &k("sub"),
    ]);
    w.write(&["key", "add", "nothex", "--role", "admin", "--key", &admin]);
    let mut failures = std::mem::take(&mut w.failures);
    server_b.stop();

    // ---- reads, byte for byte on one ledger (B) ----
    let evidence_oid = {
        let out = run(&b, None, &["verdict", "show", &task], root);
        json(&out)["evidence_oids"][0]
            .as_str()
            .unwrap_or("none")
            .to_string()
    };
    // A trust anchor for the proofs: without one, a proof reports where its
    // key came from (ledger.json embedded, the server's word otherwise).
    let vkey = {
        let out = run(&b, None, &["checkpoint", "--vkey"], root);
        let text = String::from_utf8_lossy(&ok(&out).stdout).to_string();
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        v["verifier_key"].as_str().unwrap().to_string()
    };
    // Not here: commands that run only on a data directory by design
    // (`replay`, `recover`, `verdict deadlines`: a server runs deadlines on
    // its own timer) and the offline ones (`verify`, `audit`, `classify`).
    let reads: Vec<Vec<&str>> = vec![
        vec!["checkpoint"],
        vec!["checkpoint", "--vkey"],
        vec!["log", "show", "0"],
        vec!["log", "show", "7"],
        vec!["log", "show", "100000"],
        vec!["log", "tail", "--from", "0"],
        vec!["log", "tail", "--from", "20"],
        vec!["prove", "inclusion", "5", "--trusted-key", &vkey],
        vec![
            "prove",
            "inclusion",
            "5",
            "--size",
            "10",
            "--trusted-key",
            &vkey,
        ],
        vec!["prove", "consistency", "10", "--trusted-key", &vkey],
        vec!["key", "list"],
        vec!["task", "show", &task],
        vec!["task", "show", "00000000-0000-4000-8000-000000000000"],
        vec!["verdict", "show", &task],
        vec!["verdict", "show", &task, "--as-of", "25"],
        vec!["verdict", "list"],
        vec!["verdict", "list", "--status", "pass"],
        vec!["verdict", "show", &task, "--history"],
        vec!["verdict", "rules"],
        vec!["key", "list", "--all"],
        vec!["evidence", "list", "--task", &task],
        vec!["evidence", "show", &evidence_oid],
        vec!["evidence", "show", "01M871X9JBGMFR88Z55ZFDH9DW"],
        vec!["evidence", "get", &evidence_oid, "--out", "{OUT}"],
        vec!["retention", "status", "--now", "2030-01-01T00:00:00Z"],
        vec!["retention", "policy", "show"],
        vec!["export", "{OUT}"],
        vec!["export", "{OUT}", "--task", &task],
        vec![
            "export",
            "{OUT}",
            "--from",
            "3",
            "--to",
            "9",
            "--with-blobs",
        ],
        vec![
            "export", "{OUT}", "--tar", "--task", &task, "--format", "vsa",
        ],
    ];
    let embedded: Vec<(Output, PathBuf)> = reads
        .iter()
        .enumerate()
        .map(|(i, args)| {
            let out = root.join(format!("read-e-{i}"));
            (run(&b, None, args, &out), out)
        })
        .collect();
    let server = Server::start(&b);
    for (i, args) in reads.iter().enumerate() {
        let out = root.join(format!("read-s-{i}"));
        let through = run(&b, Some(&server.url), args, &out);
        let (eo, ep) = &embedded[i];
        let (ce, te) = normalised(eo, ep);
        let (cs, ts) = normalised(&through, &out);
        if ce != cs || te != ts {
            failures.push(format!(
                "read `docket {}`:\n  embedded (exit {ce:?}): {te}\n  server   (exit {cs:?}): {ts}\n  stderr: {} | {}",
                args.join(" "),
                String::from_utf8_lossy(&eo.stderr).trim(),
                String::from_utf8_lossy(&through.stderr).trim(),
            ));
        }
        // What the command wrote is the same too.
        if ep.exists() && !same_tree(ep, &out) {
            failures.push(format!(
                "read `docket {}`: the files written differ ({} vs {})",
                args.join(" "),
                ep.display(),
                out.display()
            ));
        }
    }
    server.stop();
    assert!(
        failures.is_empty(),
        "{} command(s) differ between embedded and --server:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

fn put_placeholder() -> Output {
    docket().arg("--version").output().unwrap()
}

/// Whether two files or directory trees hold the same names and bytes.
fn same_tree(x: &Path, y: &Path) -> bool {
    if x.is_file() {
        return std::fs::read(x).ok() == std::fs::read(y).ok();
    }
    let names = |p: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let (nx, ny) = (names(x), names(y));
    nx == ny && nx.iter().all(|n| same_tree(&x.join(n), &y.join(n)))
}
