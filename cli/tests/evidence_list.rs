//! `docket evidence list --task ID [--type TYPE]` (seed 000's evidence
//! query): given a task with submitted evidence, one OID pinned, when the
//! evidence is listed, then each OID comes with its type, digest, size,
//! retention state and the events that reference it; `--json` is one
//! object per line and byte-identical embedded and through `docket serve`;
//! an unknown type exits 2, an unknown task 4.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{docket, text};

use serde_json::Value;

fn run(data: &Path, server: Option<&str>, args: &[&str]) -> Output {
    let mut c = docket();
    c.arg("--data").arg(data);
    if let Some(url) = server {
        c.arg("--server").arg(url);
    }
    c.args(args).output().unwrap()
}

fn ok(out: &Output) -> &Output {
    assert!(out.status.success(), "{}", text(out));
    out
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

/// A new key with `role`; returns its key file.
fn key(root: &Path, data: &Path, name: &str, role: &str) -> PathBuf {
    let file = root.join(format!("{name}.key"));
    let out = docket()
        .args(["--json", "keygen", "--out"])
        .arg(&file)
        .output()
        .unwrap();
    ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let admin = data.join("keys/admin.key");
    ok(&run(
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
    ));
    file
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn given_submitted_evidence_when_listed_then_each_oid_has_its_record_and_references() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let data = root.join("ledger");
    ok(&run(&data, None, &["init"]));
    let sub = key(root, &data, "sub", "submitter");
    let cus = key(root, &data, "cus", "custodian");
    let task_file = demo().join("task.json");
    let task: Value = serde_json::from_slice(&std::fs::read(&task_file).unwrap()).unwrap();
    let task = task["task_id"].as_str().unwrap().to_string();
    ok(&run(
        &data,
        None,
        &[
            "task",
            "register",
            task_file.to_str().unwrap(),
            "--key",
            sub.to_str().unwrap(),
        ],
    ));
    // A task with no evidence yet lists nothing (exit 0).
    let out = ok(&run(
        &data,
        None,
        &["--json", "evidence", "list", "--task", &task],
    ))
    .clone();
    assert!(out.stdout.is_empty(), "{}", text(&out));
    // Submit the demo's passing artifacts: each file becomes an OID that
    // the submission names.
    ok(&run(
        &data,
        None,
        &[
            "submit",
            demo().join("pass").to_str().unwrap(),
            "--key",
            sub.to_str().unwrap(),
        ],
    ));
    let out = ok(&run(
        &data,
        None,
        &["--json", "evidence", "list", "--task", &task],
    ))
    .clone();
    let all = lines(&out);
    assert!(all.len() >= 4, "{}", text(&out));
    let by_name: BTreeMap<String, Value> = all
        .iter()
        .map(|v| (v["name"].as_str().unwrap().to_string(), v.clone()))
        .collect();
    let selftest = &by_name["selftest.log"];
    let content = std::fs::read(demo().join("pass/selftest.log")).unwrap();
    assert_eq!(selftest["evidence_type"], "selftest.log");
    assert_eq!(selftest["task_id"], task.as_str());
    assert_eq!(
        selftest["sha256"],
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&content))
    );
    assert_eq!(selftest["size"], content.len() as u64);
    assert_eq!(selftest["state"], "live");
    assert_eq!(selftest["pinned"], false);
    assert!(selftest["expires_at"].is_string(), "{selftest}");
    // Every OID: registered by its own event (first reference), then named
    // by the submission.
    let submission_seq = all
        .iter()
        .map(|v| v["referenced_by"][1]["seq"].as_u64().unwrap())
        .max()
        .unwrap();
    for v in &all {
        let refs = v["referenced_by"].as_array().unwrap();
        assert_eq!(refs[0]["kind"], "evidence.registered", "{v}");
        assert_eq!(refs[0]["seq"], v["registered_seq"], "{v}");
        assert!(
            refs.iter()
                .any(|r| r["kind"] == "submission.received" && r["seq"] == submission_seq),
            "{v}"
        );
    }
    // Pin one: the listing shows it pinned, with no expiry, and the pin
    // event among its references.
    let oid = selftest["oid"].as_str().unwrap();
    ok(&run(
        &data,
        None,
        &[
            "retention",
            "pin",
            oid,
            "--key",
            cus.to_str().unwrap(),
            "--reason",
            "legal hold",
        ],
    ));
    let out = ok(&run(
        &data,
        None,
        &[
            "--json", "evidence", "list", "--task", &task, "--type", "logs",
        ],
    ))
    .clone();
    let logs = lines(&out);
    assert_eq!(
        logs.len(),
        1,
        "only the selftest.log is a log: {}",
        text(&out)
    );
    assert_eq!(logs[0]["oid"], oid);
    assert_eq!(logs[0]["pinned"], true);
    assert_eq!(logs[0]["expires_at"], Value::Null);
    let last = logs[0]["referenced_by"].as_array().unwrap().last().unwrap();
    assert_eq!(last["kind"], "retention.pinned");
    // An evidence type filters too.
    let out = ok(&run(
        &data,
        None,
        &[
            "--json",
            "evidence",
            "list",
            "--task",
            &task,
            "--type",
            "patch.diff",
        ],
    ))
    .clone();
    assert!(
        lines(&out)
            .iter()
            .all(|v| v["evidence_type"] == "patch.diff"),
        "{}",
        text(&out)
    );
    // Plain output: a table with a header and one row per OID.
    let out = ok(&run(&data, None, &["evidence", "list", "--task", &task])).clone();
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(table.starts_with("OID "), "{table}");
    assert!(
        table.contains(oid) && table.contains("live,pinned"),
        "{table}"
    );
    assert_eq!(table.lines().count(), all.len() + 1, "{table}");
    // Refusals: an unknown type is invalid (2), an unknown task missing (4).
    let out = run(
        &data,
        None,
        &["evidence", "list", "--task", &task, "--type", "videos"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("videos"), "{}", text(&out));
    let out = run(
        &data,
        None,
        &[
            "evidence",
            "list",
            "--task",
            "00000000-0000-4000-8000-000000000009",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));

    // The same listing through `docket serve`: byte-identical --json, same
    // exit codes.
    let embedded = ok(&run(
        &data,
        None,
        &["--json", "evidence", "list", "--task", &task],
    ))
    .stdout
    .clone();
    let embedded_logs = out_of(&data, None, &task, "logs");
    let serve = support::Server::start(&data);
    let url = serve.url.clone();
    let result = std::panic::catch_unwind(|| {
        let remote = run(
            &data,
            Some(&url),
            &["--json", "evidence", "list", "--task", &task],
        );
        ok(&remote);
        assert_eq!(
            String::from_utf8_lossy(&remote.stdout),
            String::from_utf8_lossy(&embedded)
        );
        assert_eq!(out_of(&data, Some(&url), &task, "logs"), embedded_logs);
        let out = run(
            &data,
            Some(&url),
            &["evidence", "list", "--task", &task, "--type", "videos"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let out = run(
            &data,
            Some(&url),
            &[
                "evidence",
                "list",
                "--task",
                "00000000-0000-4000-8000-000000000009",
            ],
        );
        assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    });
    drop(serve);
    result.unwrap();
}

fn out_of(data: &Path, server: Option<&str>, task: &str, ty: &str) -> Vec<u8> {
    let out = run(
        data,
        server,
        &["--json", "evidence", "list", "--task", task, "--type", ty],
    );
    ok(&out);
    out.stdout
}

/// Seed 000 §3: "redact secrets before long-term retention". Given evidence
/// whose content holds a secret, when a custodian pins it or moves it to
/// `high_impact`, then the command is refused (exit 2, nothing appended)
/// naming the secret's kind and line and the redaction command; after
/// `retention redact --auto` (or with `--allow-secrets`) it goes through.
#[test]
fn long_term_retention_of_content_with_secrets_is_refused_until_redacted() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let data = root.join("ledger");
    ok(&run(&data, None, &["init"]));
    let sub = key(root, &data, "sub", "submitter");
    let cus = key(root, &data, "cus", "custodian");
    let task_file = demo().join("task.json");
    let task: Value = serde_json::from_slice(&std::fs::read(&task_file).unwrap()).unwrap();
    let task = task["task_id"].as_str().unwrap().to_string();
    let (sub, cus) = (sub.to_str().unwrap(), cus.to_str().unwrap());
    ok(&run(
        &data,
        None,
        &[
            "task",
            "register",
            task_file.to_str().unwrap(),
            "--key",
            sub,
        ],
    ));
    let put = |name: &str, content: &str| -> String {
        let file = root.join(name);
        std::fs::write(&file, content).unwrap();
        let out = ok(&run(
            &data,
            None,
            &[
                "--json",
                "evidence",
                "put",
                file.to_str().unwrap(),
                "--task",
                &task,
                "--key",
                sub,
            ],
        ))
        .clone();
        lines(&out)[0]["oid"].as_str().unwrap().to_string()
    };
    let size = |data: &Path| -> u64 {
        lines(ok(&run(data, None, &["--json", "checkpoint"])))[0]["size"]
            .as_u64()
            .unwrap()
    };
    let leaky = put("ci.log", "build ok\naws_key=AKIAIOSFODNN7EXAMPLE\n");
    let other = put("other.log", "token AKIAIOSFODNN7EXAMPLE\n");
    let before = size(&data);
    for args in [
        vec!["retention", "pin", leaky.as_str(), "--key", cus],
        vec![
            "retention",
            "reclassify",
            other.as_str(),
            "high_impact",
            "--key",
            cus,
        ],
    ] {
        let out = run(&data, None, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("aws_access_key on line"), "{err}");
        assert!(err.contains("retention redact"), "{err}");
        assert!(
            !err.contains("AKIAIOSFODNN7EXAMPLE"),
            "the secret is never printed: {err}"
        );
    }
    assert_eq!(size(&data), before, "refused: nothing appended");
    // Redacted first, then pinned.
    let redact = [
        "retention",
        "redact",
        leaky.as_str(),
        "--auto",
        "--reason",
        "secret",
        "--key",
        cus,
    ];
    ok(&run(&data, None, &redact));
    ok(&run(
        &data,
        None,
        &["retention", "pin", leaky.as_str(), "--key", cus],
    ));
    // Or kept as is, deliberately.
    ok(&run(
        &data,
        None,
        &[
            "retention",
            "reclassify",
            other.as_str(),
            "high_impact",
            "--allow-secrets",
            "--key",
            cus,
        ],
    ));
}
