//! Bad input gets a clear error with the documented exit code and changes
//! nothing (findings of the twenty-first session's bad-input campaign):
//! a `--key` that is a directory or a device, `evidence put` of a
//! directory, a second `docket serve` on a served data directory.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};
use support::{At, Server, append_empty, checkpoint_size, docket, text};

#[test]
fn given_a_key_path_that_is_no_regular_file_then_it_is_missing_input_never_a_chmod_advice() {
    let (root, data) = support::init_ledger();
    let before = checkpoint_size(At::Data(&data));
    let open_dir = root.path().join("keys-dir");
    std::fs::create_dir(&open_dir).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    for key in [open_dir.as_path(), Path::new("/dev/null")] {
        // When a statement is signed with it,
        let out = append_empty(At::Data(&data), key);
        // then the command exits 4 (missing input) naming the path, and
        // never tells the user to chmod a directory or a device.
        assert_eq!(
            out.status.code(),
            Some(4),
            "{}: {}",
            key.display(),
            text(&out)
        );
        let err = text(&out);
        assert!(err.contains(&key.display().to_string()), "{err}");
        assert!(err.contains("not a key file"), "{err}");
        assert!(!err.contains("chmod"), "{err}");
    }
    assert_eq!(checkpoint_size(At::Data(&data)), before, "nothing appended");
}

#[test]
fn given_a_directory_as_evidence_when_put_then_exit_4_names_it_and_nothing_is_appended() {
    let (root, data) = support::init_ledger();
    let before = checkpoint_size(At::Data(&data));
    let dir = root.path().join("not-a-file");
    std::fs::create_dir(&dir).unwrap();
    let out = docket()
        .arg("--data")
        .arg(&data)
        .args(["evidence", "put"])
        .arg(&dir)
        .args(["--task", "72c84e9c-0975-4c1a-b9a5-864c2725dc8a", "--key"])
        .arg(data.join("keys/admin.key"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let err = text(&out);
    assert!(
        err.contains(&format!("cannot read {}", dir.display())),
        "{err}"
    );
    assert_eq!(checkpoint_size(At::Data(&data)), before, "nothing appended");
}

#[test]
fn given_a_served_data_directory_when_a_second_server_starts_then_exit_64_names_the_first() {
    let (_root, data) = support::init_ledger();
    let first = Server::start(&data);
    let mut second = docket()
        .arg("--data")
        .arg(&data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while second.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = second.kill();
            panic!("a second server on a served data directory kept running");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = second.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", text(&out));
    let err = text(&out);
    assert!(err.contains(&first.url), "names the serving address: {err}");
    assert_eq!(
        err.matches("could not acquire lock").count(),
        0,
        "says it in words, once: {err}"
    );
    // The first server still serves.
    let out = docket()
        .args(["--server", &first.url, "checkpoint"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
