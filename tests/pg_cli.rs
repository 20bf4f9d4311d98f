//! The `docket` binary with `--store postgres://…` on a throwaway server
//! (skipped without PostgreSQL): init, appends and reads on the embedded
//! ledger, `docket migrate` to a data directory and back (each verified by
//! replay, the same root and the same signed checkpoint), refusals (a
//! second init, a bad `--store`), and a damaged database refused naming
//! the event (exit 5).

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use docket_e2e::docket_bin;
use docket_store_pg::scratch::ScratchPostgres;

/// Runs `docket ARGS` (stdin: `input`); returns (exit code, stdout, stderr).
fn docket(args: &[&str], input: &str) -> (i32, String, String) {
    let mut child = Command::new(docket_bin())
        .args(args)
        .env_remove("DOCKET_SERVER")
        .env_remove("DOCKET_DATA")
        .env_remove("DOCKET_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run docket");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str], input: &str) -> String {
    let (code, out, err) = docket(args, input);
    assert_eq!(code, 0, "docket {args:?}: {out}{err}");
    out
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn init_append_migrate_both_ways_and_refuse_damage() {
    let pg = match ScratchPostgres::shared() {
        Ok(pg) => pg,
        Err(why) => {
            println!("SKIPPED: no PostgreSQL ({why})");
            return;
        }
    };
    let (db, db2) = (
        pg.fresh_database("cli").unwrap(),
        pg.fresh_database("cli_back").unwrap(),
    );
    let base = tempfile::tempdir().unwrap();
    let (d, d2) = (base.path().join("node"), base.path().join("copy"));

    // init: the data directory keeps the keys and ledger.json only.
    ok(&["--data", s(&d), "--store", &db, "init"], "");
    assert!(d.join("ledger.json").exists() && d.join("keys/ledger.key").exists());
    assert!(!d.join("log").exists() && !d.join("anchor").exists());
    let (code, _, err) = docket(&["--data", s(&d), "--store", &db, "init"], "");
    assert_eq!(code, 2, "a second init is refused: {err}");
    let (code, _, err) = docket(&["--data", s(&d), "--store", "mysql://x", "checkpoint"], "");
    assert_eq!(code, 64, "{err}");

    // Appends and reads on the embedded ledger (it takes the lease).
    let admin = d.join("keys/admin.key");
    ok(
        &[
            "--data",
            s(&d),
            "--store",
            &db,
            "log",
            "append",
            "--key",
            s(&admin),
            "--kind",
            "x-test",
            "--stdin",
        ],
        "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n",
    );
    let cp = ok(&["--data", s(&d), "--store", &db, "checkpoint"], "");
    assert_eq!(cp.lines().nth(1), Some("4"), "{cp}");
    // The full check and recover read the database with --store too.
    ok(&["--data", s(&d), "--store", &db, "replay", "--verify"], "");
    let prefix = d.parent().unwrap().join("prefix-bundle");
    let out = ok(
        &[
            "--json",
            "--data",
            s(&d),
            "--store",
            &db,
            "recover",
            "--out",
            s(&prefix),
        ],
        "",
    );
    let plan: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(plan["plan"]["lost"], 0, "{plan}");
    assert_eq!(plan["plan"]["prefix"], 4, "{plan}");

    // To a data directory: verified by replay, the same checkpoint.
    let out = ok(
        &[
            "--json",
            "--data",
            s(&d),
            "migrate",
            "--from",
            &db,
            "--to",
            s(&d2),
        ],
        "",
    );
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["events"], 4);
    assert_eq!(v["replay"]["same_root"], true, "{v}");
    assert!(
        d2.join("keys/ledger.key").exists(),
        "the ledger key came along"
    );
    ok(&["--data", s(&d2), "replay", "--verify"], "");
    assert_eq!(ok(&["--data", s(&d2), "checkpoint"], ""), cp);

    // And back into another database.
    let out = ok(&["--json", "migrate", "--from", s(&d2), "--to", &db2], "");
    let back: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(back["root"], v["root"]);
    assert_eq!(
        ok(&["--data", s(&d), "--store", &db2, "checkpoint"], ""),
        cp
    );
    // Into a database that holds a ledger: refused.
    let (code, _, err) = docket(&["migrate", "--from", s(&d2), "--to", &db2], "");
    assert_eq!(code, 2, "{err}");

    // A deleted event row: the open refuses, naming it (exit 5).
    let mut c = docket_store_pg::scratch::connect(&db2).unwrap();
    c.execute("DELETE FROM docket_events WHERE seq = 2", &[])
        .unwrap();
    let (code, out, err) = docket(&["--data", s(&d), "--store", &db2, "checkpoint"], "");
    assert_eq!(code, 5, "{out}{err}");
    assert!(err.contains("event 2"), "{err}");
    // recover --salvage-out reads the database too: the prefix stops before
    // the hole, and the salvage carries event 3 after it, proved by the
    // anchor's checkpoint (exit 5: event 2 is lost).
    let salvage = base.path().join("salvage-bundle");
    let (code, out, err) = docket(
        &[
            "--json",
            "--data",
            s(&d),
            "--store",
            &db2,
            "recover",
            "--out",
            s(&base.path().join("prefix-after-damage")),
            "--salvage-out",
            s(&salvage),
        ],
        "",
    );
    assert_eq!(code, 5, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["salvage"]["tree_size"], 4, "{v}");
    assert_eq!(v["salvage"]["missing"], serde_json::json!([[2, 2]]), "{v}");
    let vkey = ok(&["--data", s(&d2), "checkpoint", "--vkey"], "");
    let audit = ok(
        &["--json", "audit", s(&salvage), "--trusted-key", vkey.trim()],
        "",
    );
    let audit: serde_json::Value = serde_json::from_str(audit.trim()).unwrap();
    assert_eq!(
        audit["report"]["ranges"],
        serde_json::json!([[0, 1], [3, 3]]),
        "{audit}"
    );
}
