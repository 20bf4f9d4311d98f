//! The README's quick start, line by line, with the built binary in a fresh
//! temporary directory: the commands are read from the README's
//! `<!-- quickstart -->` code block, so the two cannot drift.
//!
//! Each line runs in `bash` with the built `docket` first on PATH and a copy
//! of `cli/demo/` where a clone has it. A line's comment may say
//! `exit N`: that is its expected exit code (else 0). `cargo install` is
//! skipped (the binary under test is already built); a line ending in `&`
//! starts a background server (its port replaced by a free one), which
//! `kill %1` stops: it must stop cleanly.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The quick start's command lines.
fn quickstart_lines(readme: &str) -> Vec<String> {
    let start = readme
        .find("<!-- quickstart -->")
        .expect("README has a <!-- quickstart --> block");
    let end = readme
        .find("<!-- /quickstart -->")
        .expect("README closes the quickstart block");
    let block = &readme[start..end];
    let body = block
        .split("```sh")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the quickstart block holds a ```sh code block");
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// (command, comment) of a line: the comment starts at the first `  #`.
fn split_comment(line: &str) -> (&str, &str) {
    match line.find("  #") {
        Some(i) => (line[..i].trim(), line[i + 3..].trim()),
        None => (line.trim(), ""),
    }
}

fn expected_exit(comment: &str) -> i32 {
    comment
        .split("exit ")
        .nth(1)
        .and_then(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn bash(line: &str, dir: &Path, path: &str) -> Command {
    let mut c = Command::new("bash");
    c.args(["-o", "pipefail", "-c", line])
        .current_dir(dir)
        .env("PATH", path);
    for v in [
        "DOCKET_DATA",
        "DOCKET_SERVER",
        "DOCKET_STORE",
        "DOCKET_LOG",
        "DOCKET_LOG_FORMAT",
        "DOCKET_CONFIG",
        "DOCKET_TRUSTED_KEY",
        "DOCKET_PASSPHRASE",
        "DOCKET_PASSPHRASE_FILE",
        "DOCKET_JSON",
    ] {
        c.env_remove(v);
    }
    c
}

#[test]
fn the_readme_quick_start_works_line_by_line() {
    let text = readme();
    let lines = quickstart_lines(&text);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("cargo install --path cli")),
        "the quick start says how to install docket"
    );
    for must in ["docket demo", "docket init", "docket serve", "cli/demo/"] {
        assert!(
            lines.iter().any(|l| l.contains(must)),
            "the quick start uses `{must}`"
        );
    }
    assert!(
        text.contains("cargo test --workspace"),
        "the README names the test command"
    );

    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("demo"),
        &dir.join("cli/demo"),
    );
    let bin: PathBuf = Path::new(env!("CARGO_BIN_EXE_docket"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let port = free_port().to_string();
    let mut server: Option<Child> = None;
    let mut ran = 0;
    for line in &lines {
        let line = line.replace("50051", &port);
        let (cmd, comment) = split_comment(&line);
        if cmd.starts_with("cargo install") {
            continue;
        }
        ran += 1;
        if let Some(bg) = cmd.strip_suffix('&') {
            let mut child = bash(&format!("exec {}", bg.trim()), dir, &path)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn the background command");
            use std::io::BufRead;
            let stdout = child.stdout.take().unwrap();
            let mut out = std::io::BufReader::new(stdout).lines();
            loop {
                let l = out
                    .next()
                    .unwrap_or_else(|| panic!("`{cmd}` ended before it listened"))
                    .unwrap();
                if l.starts_with("listening on ") {
                    break;
                }
            }
            std::thread::spawn(move || for _ in out {});
            server = Some(child);
            continue;
        }
        if cmd == "kill %1" {
            let mut child = server.take().expect("a background server to stop");
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let status = child.wait().unwrap();
            assert!(status.success(), "the server stops cleanly: {status:?}");
            continue;
        }
        let out = bash(cmd, dir, &path).output().unwrap();
        let want = expected_exit(comment);
        if out.status.code() != Some(want) {
            if let Some(mut s) = server.take() {
                let _ = s.kill();
                let _ = s.wait();
            }
            panic!(
                "quick start line `{cmd}`: exit {:?}, the README says {want}\nstdout: {}\nstderr: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    if let Some(mut s) = server.take() {
        let _ = s.kill();
        let _ = s.wait();
        panic!("the quick start leaves its server running (no `kill %1`)");
    }
    assert!(ran >= 10, "the quick start ran {ran} lines");
    assert!(dir.join("docket-data/ledger.json").exists());
    assert!(dir.join("bundle").exists(), "the export was written");
}

/// `docket serve` first, then the local commands of the quick start: `init`
/// says a ledger exists (exit 2, where its admin key is) and changes
/// nothing; reads and writes on the data directory go through the server,
/// which says so on stderr.
#[test]
fn serve_first_then_init_and_local_commands() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let docket = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_docket"));
        c.current_dir(dir);
        for v in [
            "DOCKET_DATA",
            "DOCKET_SERVER",
            "DOCKET_JSON",
            "DOCKET_CONFIG",
            "DOCKET_LOG",
        ] {
            c.env_remove(v);
        }
        c
    };
    let mut serve = docket()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let stdout = serve.stdout.take().unwrap();
        let mut lines = std::io::BufReader::new(stdout).lines();
        loop {
            let l = lines.next().expect("serve printed its address").unwrap();
            if l.starts_with("listening on ") {
                break;
            }
        }
        std::thread::spawn(move || for _ in lines {});
    }
    let result = std::panic::catch_unwind(|| {
        let genesis = std::fs::read(dir.join("docket-data/ledger.json")).unwrap();
        let out = docket().arg("init").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("already exists"), "{err}");
        assert!(err.contains("admin.key"), "{err}");
        assert_eq!(
            std::fs::read(dir.join("docket-data/ledger.json")).unwrap(),
            genesis,
            "init changed nothing"
        );
        // A write and reads on the data directory go through the server.
        let key = dir.join("me.key");
        let out = docket()
            .args(["keygen", "--out"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(out.status.success());
        let public = String::from_utf8_lossy(&out.stdout).trim().to_string();
        for args in [
            vec![
                "key".to_string(),
                "add".into(),
                public.clone(),
                "--role".into(),
                "submitter".into(),
                "--key".into(),
                "docket-data/keys/admin.key".into(),
            ],
            vec!["key".into(), "list".into()],
            vec!["checkpoint".into()],
            vec!["retention".into(), "status".into()],
        ] {
            let out = docket().args(&args).output().unwrap();
            assert!(out.status.success(), "{args:?}: {out:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("using it"),
                "{args:?} says it uses the server: {err}"
            );
        }
        let list = docket().args(["key", "list"]).output().unwrap();
        assert!(String::from_utf8_lossy(&list.stdout).contains(&public));
    });
    let _ = Command::new("kill").arg(serve.id().to_string()).status();
    let _ = serve.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// Every `docket …` line in the README's code blocks names real commands
/// and flags: each (before any `&&` or `|`, placeholders and all) parses
/// with `--help` appended, which clap refuses for an unknown flag.
#[test]
fn every_readme_command_uses_real_commands_and_flags() {
    let text = readme();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for block in text.split("```sh").skip(1) {
        let block = block.split("```").next().unwrap_or("");
        for line in block.lines() {
            // The command before its comment, `&&` and `|`.
            let cmd = line.split(" #").next().unwrap_or("");
            let cmd = cmd.split("&&").next().unwrap_or("");
            let cmd = cmd.split('|').next().unwrap_or("").trim();
            // `VAR=value docket …`
            let words: Vec<&str> = cmd
                .split_whitespace()
                .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                .collect();
            if words.first() != Some(&"docket") {
                continue;
            }
            // Drop redirections, `$(…)` substitutions, a trailing `&`, and
            // what follows `--` (a child's command line).
            let mut args: Vec<String> = Vec::new();
            let mut skip_next = false;
            let mut in_subst = false;
            for w in &words[1..] {
                if skip_next {
                    skip_next = false;
                    continue;
                }
                if in_subst {
                    in_subst = !w.trim_end_matches('"').ends_with(')');
                    continue;
                }
                if *w == "--" {
                    break;
                }
                if *w == ">" || *w == "<" {
                    skip_next = true;
                    continue;
                }
                if w.trim_start_matches('"').starts_with("$(") {
                    in_subst = !w.trim_end_matches('"').ends_with(')');
                    args.push("X".into());
                    continue;
                }
                let a = w.trim_end_matches('&').trim_matches('"');
                if !a.is_empty() {
                    args.push(a.to_string());
                }
            }
            let out = Command::new(env!("CARGO_BIN_EXE_docket"))
                .args(&args)
                .arg("--help")
                .env_remove("DOCKET_CONFIG")
                .output()
                .unwrap();
            checked += 1;
            if !out.status.success() {
                wrong.push(format!(
                    "`{line}`: {}",
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .next()
                        .unwrap_or("")
                ));
            }
        }
    }
    assert!(checked >= 20, "checked {checked} README commands");
    assert!(
        wrong.is_empty(),
        "README commands that do not parse:\n{}",
        wrong.join("\n")
    );
}
