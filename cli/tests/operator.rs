//! The operator's experience (issue "One command-line path, and an
//! operator's experience that needs no reading of the code"): shell
//! completions, man pages, structured logs, the verdict `submit` reports.

mod support;

use std::path::Path;
use std::process::Output;
use support::docket;

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn completions_for_each_shell_and_one_man_page_per_command() {
    for shell in ["bash", "zsh", "fish"] {
        let out = docket().args(["completions", shell]).output().unwrap();
        ok(&out);
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains("docket"), "{shell}: {script}");
        assert!(script.contains("submit"), "{shell} completes subcommands");
    }
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man");
    let out = docket().args(["man", "--out"]).arg(&man).output().unwrap();
    ok(&out);
    for page in [
        "docket.1",
        "docket-init.1",
        "docket-submit.1",
        "docket-log-append.1",
    ] {
        let text =
            std::fs::read_to_string(man.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page} is a roff page");
    }
}

#[test]
fn log_format_json_writes_one_json_object_per_stderr_line() {
    let (_root, data) = support::init_ledger();
    // Deleted snapshots are rebuilt from the log, with a warning.
    for e in std::fs::read_dir(data.join("snapshots")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let out = docket()
        .args(["--log-format", "json", "--data"])
        .arg(&data)
        .arg("checkpoint")
        .output()
        .unwrap();
    ok(&out);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "a rebuilt snapshot is logged");
    for l in &lines {
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert!(v.get("level").is_some(), "{l}");
    }
    assert!(stderr.contains("rebuilding"), "{stderr}");
    // The environment variable does the same.
    for e in std::fs::read_dir(data.join("snapshots")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let out = docket()
        .env("DOCKET_LOG_FORMAT", "json")
        .arg("--data")
        .arg(&data)
        .arg("checkpoint")
        .output()
        .unwrap();
    ok(&out);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let first = stderr.lines().next().expect("a warning");
    serde_json::from_str::<serde_json::Value>(first).unwrap();
}

fn demo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/demo"))
}

/// A ledger in ROOT/ledger with a submitter key ROOT/s.key and the demo
/// task registered; returns (data, key, task id).
fn ledger_with_demo_task(root: &Path) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let data = root.join("ledger");
    ok(&docket()
        .arg("--data")
        .arg(&data)
        .arg("init")
        .output()
        .unwrap());
    let key = root.join("s.key");
    let out = docket()
        .args(["--json", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pubkey = v["public_key"].as_str().unwrap().to_string();
    ok(&docket()
        .arg("--data")
        .arg(&data)
        .args(["key", "add", &pubkey, "--role", "submitter", "--key"])
        .arg(data.join("keys/admin.key"))
        .output()
        .unwrap());
    let task: serde_json::Value =
        serde_json::from_slice(&std::fs::read(demo().join("task.json")).unwrap()).unwrap();
    ok(&docket()
        .arg("--data")
        .arg(&data)
        .args(["task", "register"])
        .arg(demo().join("task.json"))
        .arg("--key")
        .arg(&key)
        .output()
        .unwrap());
    (data, key, task["task_id"].as_str().unwrap().to_string())
}

fn submit(data: &Path, server: Option<&str>, dir: &str, task: &str, key: &Path) -> Output {
    let mut c = docket();
    c.arg("--data").arg(data);
    if let Some(s) = server {
        c.args(["--server", s]);
    }
    c.arg("submit")
        .arg(demo().join(dir))
        .args(["--task", task, "--key"])
        .arg(key)
        .output()
        .unwrap()
}

#[test]
fn submit_reports_the_verdict_of_the_submission_it_made() {
    let root = tempfile::tempdir().unwrap();
    let (data, key, task) = ledger_with_demo_task(root.path());
    let out = submit(&data, None, "fail", &task, &key);
    assert_eq!(out.status.code(), Some(5), "the failing submission");
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL"));
    let out = submit(&data, None, "pass", &task, &key);
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(" PASS"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    // And through a server: fail, pass, fail again.
    let serve = support::Server::start(&data);
    let url = serve.url.clone();
    let result = std::panic::catch_unwind(|| {
        let out = submit(&data, Some(&url), "fail", &task, &key);
        assert_eq!(out.status.code(), Some(5));
        let out = submit(&data, Some(&url), "pass", &task, &key);
        ok(&out);
        assert!(String::from_utf8_lossy(&out.stdout).contains(" PASS"));
    });
    drop(serve);
    result.unwrap();
}

fn is_json(out: &Output) -> bool {
    ok(out);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok()
}

#[test]
fn config_file_precedence_is_flag_then_env_then_file() {
    let (root, data) = support::init_ledger();
    let checkpoint = || {
        let mut c = docket();
        c.arg("--data").arg(&data).arg("checkpoint");
        c
    };
    assert!(!is_json(&checkpoint().output().unwrap()), "no file: human");
    // DATA/docket.toml is found without --config.
    std::fs::write(data.join("docket.toml"), "json = true\n").unwrap();
    assert!(is_json(&checkpoint().output().unwrap()), "file");
    // env > file.
    let out = checkpoint().env("DOCKET_JSON", "false").output().unwrap();
    assert!(!is_json(&out), "env over file");
    // flag > env.
    let out = checkpoint()
        .env("DOCKET_JSON", "false")
        .arg("--json")
        .output()
        .unwrap();
    assert!(is_json(&out), "flag over env");
    // --config FILE elsewhere, naming the data directory itself.
    let cfg = root.path().join("ops.toml");
    std::fs::write(
        &cfg,
        format!("data = {:?}\njson = true\n", data.display().to_string()),
    )
    .unwrap();
    let out = docket()
        .arg("--config")
        .arg(&cfg)
        .arg("checkpoint")
        .current_dir(root.path())
        .output()
        .unwrap();
    assert!(is_json(&out), "--config sets data and json");
    // A server named in the file is used unless a flag says otherwise.
    std::fs::write(&cfg, "server = \"http://127.0.0.1:1\"\n").unwrap();
    let out = docket()
        .arg("--config")
        .arg(&cfg)
        .arg("--data")
        .arg(&data)
        .arg("checkpoint")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the file's server is unreachable");
    // A malformed file is a usage error naming the file.
    std::fs::write(&cfg, "json = [1]\n").unwrap();
    let out = docket()
        .arg("--config")
        .arg(&cfg)
        .arg("checkpoint")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ops.toml"));
}

/// The tree size of the server at `url`'s latest checkpoint.
fn tree_size(url: &str) -> u64 {
    let out = docket()
        .args(["--json", "--server", url, "checkpoint"])
        .output()
        .unwrap();
    ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["size"]
        .as_u64()
        .unwrap_or_else(|| panic!("a size in {v}"))
}

/// `docket bench-load` against `url`, signing with `key`, with `global`
/// options before the command and `args` after it.
fn bench_load_with(
    global: &[&str],
    url: &str,
    key: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    docket()
        .args(global)
        .args(["--server", url, "bench-load", "--key"])
        .arg(key)
        .args(args)
        .output()
        .unwrap()
}

/// A `bench-load` run whose usage error is read as text on stderr.
fn bench_load(url: &str, key: &std::path::Path, args: &[&str]) -> std::process::Output {
    bench_load_with(&[], url, key, args)
}

/// The JSON report of a `bench-load` run that must succeed.
fn bench_load_report(url: &str, key: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = bench_load_with(&["--json"], url, key, args);
    ok(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn bench_load_appends_distinct_statements_past_its_presigned_ones() {
    // Given a server on a fresh ledger,
    let (_root, data) = support::init_ledger();
    let serve = support::Server::start(&data);
    let url = serve.url.clone();
    let result = std::panic::catch_unwind(|| {
        let size = || tree_size(&url);
        let before = size();
        // when a load of 60 appends runs with only 20 of them pre-signed,
        let key = data.join("keys/admin.key");
        let report = bench_load_report(
            &url,
            &key,
            &[
                "--clients",
                "2",
                "--seconds",
                "30",
                "--presign",
                "20",
                "--max-appends",
                "60",
            ],
        );
        // then every one was appended once (none a duplicate of a
        // pre-signed one), after the writer key's registration.
        assert_eq!(report["appends"], 60, "{report}");
        assert_eq!(report["errors"], 0, "{report}");
        assert_eq!(size(), before + 61);
        // And an unbounded pre-signing is refused before anything is sent.
        let out = bench_load(&url, &key, &["--presign", "10000001"]);
        assert_eq!(out.status.code(), Some(64), "{}", support::text(&out));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--presign"));
        assert_eq!(size(), before + 61);
    });
    drop(serve);
    result.unwrap();
}

#[test]
fn bench_load_raw_h2_client_appends_and_checks_every_receipt() {
    // Given a server on a fresh ledger,
    let (_root, data) = support::init_ledger();
    let serve = support::Server::start(&data);
    let url = serve.url.clone();
    let result = std::panic::catch_unwind(|| {
        let size = || tree_size(&url);
        let before = size();
        // when the lean client sends 50 unary appends, 10 of them pre-signed,
        let key = data.join("keys/admin.key");
        let report = bench_load_report(
            &url,
            &key,
            &[
                "--raw-h2",
                "--clients",
                "3",
                "--seconds",
                "30",
                "--presign",
                "10",
                "--max-appends",
                "50",
            ],
        );
        // then each was answered with an OK receipt and appended once,
        // after the writer key's registration.
        assert_eq!(report["mode"], "unary_h2", "{report}");
        assert_eq!(report["appends"], 50, "{report}");
        assert_eq!(report["errors"], 0, "{report}");
        assert_eq!(size(), before + 51);
        // And it cannot be combined with --stream (a usage error).
        let out = bench_load(&url, &key, &["--raw-h2", "--stream"]);
        assert_eq!(out.status.code(), Some(64), "{}", support::text(&out));
        assert_eq!(size(), before + 51);
    });
    drop(serve);
    result.unwrap();
}

#[test]
fn init_refuses_an_origin_that_cannot_name_checkpoints_and_writes_nothing() {
    let root = tempfile::tempdir().expect("temp dir");
    for (i, origin) in ["a b", "a+b", "a\rb", ""].into_iter().enumerate() {
        let data = root.path().join(format!("ledger{i}"));
        let out = docket()
            .arg("--data")
            .arg(&data)
            .args(["init", "--origin", origin])
            .output()
            .expect("run docket init");
        assert_eq!(
            out.status.code(),
            Some(2),
            "init --origin {origin:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !data.exists(),
            "init --origin {origin:?} wrote {}",
            data.display()
        );
    }
    let data = root.path().join("good");
    let out = docket()
        .arg("--data")
        .arg(&data)
        .args(["init", "--origin", "ci.example.com/docket"])
        .output()
        .expect("run docket init");
    ok(&out);
}
