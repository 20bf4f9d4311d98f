//! Keys at rest: private key files encrypted with a passphrase (PKCS#8,
//! scrypt + AES-256-CBC) are accepted everywhere a private key is loaded
//! (an author's `--key`, the ledger key at open, `docket serve`) with the
//! right passphrase and refused without it or with a wrong one; a key file
//! that group or others may read is refused with the fix.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use support::{docket, listening_url};

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: &Output) {
    assert!(out.status.success(), "{}", show(out));
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn private_file(path: &Path, text: &str) {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn is_encrypted(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .unwrap()
        .starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----")
}

/// `docket --data DATA log append --kind x-note --payload P --key KEY`
/// (a new payload each time), with the passphrase set up by `pass`.
fn append(data: &Path, key: &Path, pass: impl FnOnce(&mut Command)) -> Output {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let payload = data.parent().unwrap().join(format!("payload{n}.json"));
    std::fs::write(&payload, format!("{{\"note\":{n}}}")).unwrap();
    let mut c = docket();
    pass(&mut c);
    c.arg("--data")
        .arg(data)
        .args(["log", "append", "--kind", "x-note", "--payload"])
        .arg(&payload)
        .arg("--key")
        .arg(key)
        .output()
        .unwrap()
}

#[test]
fn an_encrypted_ledger_opens_only_with_its_passphrase() {
    // Given a ledger made with `init --encrypt` under a passphrase file
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("ledger");
    let pass = root.path().join("pass");
    private_file(&pass, "correct horse battery staple\n");
    let out = docket()
        .arg("--passphrase-file")
        .arg(&pass)
        .arg("--data")
        .arg(&data)
        .args(["init", "--encrypt"])
        .output()
        .unwrap();
    ok(&out);
    // Then both private keys are encrypted PKCS#8 files, mode 0600
    for k in ["keys/ledger.key", "keys/admin.key"] {
        assert!(is_encrypted(&data.join(k)), "{k} is encrypted");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(data.join(k))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{k}");
    }
    let admin = data.join("keys/admin.key");

    // When the passphrase is given (file flag, file env, or the env itself)
    ok(&append(&data, &admin, |c| {
        c.arg("--passphrase-file").arg(&pass);
    }));
    ok(&append(&data, &admin, |c| {
        c.env("DOCKET_PASSPHRASE_FILE", &pass);
    }));
    ok(&append(&data, &admin, |c| {
        c.env("DOCKET_PASSPHRASE", "correct horse battery staple");
    }));

    // When it is missing: exit 4, naming the ledger key and how to give it
    let out = docket()
        .arg("--data")
        .arg(&data)
        .arg("checkpoint")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(stderr(&out).contains("ledger.key"), "{}", show(&out));
    assert!(stderr(&out).contains("--passphrase-file"), "{}", show(&out));

    // When it is wrong: exit 2, "wrong passphrase", nothing appended
    let out = append(&data, &admin, |c| {
        c.env("DOCKET_PASSPHRASE", "Tr0ub4dor&3");
    });
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(stderr(&out).contains("wrong passphrase"), "{}", show(&out));
    let head = docket()
        .env("DOCKET_PASSPHRASE", "correct horse battery staple")
        .args(["--json", "--data"])
        .arg(&data)
        .arg("checkpoint")
        .output()
        .unwrap();
    ok(&head);
    let head: serde_json::Value = serde_json::from_slice(&head.stdout).unwrap();
    // Genesis and the three appends: a tree of four.
    assert_eq!(head["size"], 4, "{head}");
}

#[test]
fn keygen_encrypt_keyfile_encrypt_decrypt_and_show() {
    let root = tempfile::tempdir().unwrap();
    let key = root.path().join("me.key");
    // Given no passphrase, --encrypt is a usage error and writes nothing
    let out = docket()
        .args(["keygen", "--encrypt", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", show(&out));
    assert!(!key.exists());
    // Given a passphrase, the key file is encrypted
    let out = docket()
        .env("DOCKET_PASSPHRASE", "s3cret")
        .args(["--json", "keygen", "--encrypt", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    ok(&out);
    let made: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(is_encrypted(&key));
    let show_key = |pass: Option<&str>| {
        let mut c = docket();
        if let Some(p) = pass {
            c.env("DOCKET_PASSPHRASE", p);
        }
        c.args(["--json", "keyfile", "show"])
            .arg(&key)
            .output()
            .unwrap()
    };
    let shown = show_key(Some("s3cret"));
    ok(&shown);
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["public_key"], made["public_key"]);
    assert_eq!(shown["encrypted"], true);
    assert_eq!(show_key(None).status.code(), Some(4));
    assert_eq!(show_key(Some("wrong")).status.code(), Some(2));
    // When decrypted, it is a plain key with the same public key
    let out = docket()
        .env("DOCKET_PASSPHRASE", "s3cret")
        .args(["keyfile", "decrypt"])
        .arg(&key)
        .output()
        .unwrap();
    ok(&out);
    assert!(!is_encrypted(&key));
    let plain = show_key(None);
    ok(&plain);
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(plain["public_key"], made["public_key"]);
    // And encrypting it again under a new passphrase works
    let out = docket()
        .env("DOCKET_PASSPHRASE", "new one")
        .args(["keyfile", "encrypt"])
        .arg(&key)
        .output()
        .unwrap();
    ok(&out);
    assert!(is_encrypted(&key));
    ok(&show_key(Some("new one")));
    assert_eq!(show_key(Some("s3cret")).status.code(), Some(2));
}

#[test]
fn a_key_file_readable_by_group_or_others_is_refused() {
    // Given a plain ledger and an admin key made world-readable
    let (_root, data) = support::init_ledger();
    let admin = data.join("keys/admin.key");
    chmod(&admin, 0o644);
    // Then an append signed with it is refused: exit 2, the file, the fix
    let out = append(&data, &admin, |_| {});
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = stderr(&out);
    assert!(err.contains(&admin.display().to_string()), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
    assert!(err.contains("0644"), "{err}");
    // And a group-readable ledger key stops the ledger from opening
    chmod(&admin, 0o600);
    ok(&append(&data, &admin, |_| {}));
    let ledger_key = data.join("keys/ledger.key");
    chmod(&ledger_key, 0o640);
    let out = docket()
        .arg("--data")
        .arg(&data)
        .arg("checkpoint")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(stderr(&out).contains("ledger.key"), "{}", show(&out));
    assert!(stderr(&out).contains("chmod 600"), "{}", show(&out));
    chmod(&ledger_key, 0o600);
    ok(&docket()
        .arg("--data")
        .arg(&data)
        .arg("checkpoint")
        .output()
        .unwrap());
}

/// `docket serve` on an encrypted ledger key: refuses to start without the
/// passphrase, serves with it.
#[test]
fn serve_loads_an_encrypted_ledger_key() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("ledger");
    let pass = root.path().join("pass");
    private_file(&pass, "serve me\n");
    ok(&docket()
        .arg("--data")
        .arg(&data)
        .arg("init")
        .output()
        .unwrap());
    // Given the ledger key encrypted after the fact
    let out = docket()
        .arg("--passphrase-file")
        .arg(&pass)
        .args(["keyfile", "encrypt"])
        .arg(data.join("keys/ledger.key"))
        .output()
        .unwrap();
    ok(&out);
    // Without the passphrase the server does not start
    let out = docket()
        .arg("--data")
        .arg(&data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(stderr(&out).contains("passphrase"), "{}", show(&out));
    // The full check needs no secret: without the passphrase it verifies
    // the log and says the encrypted key was not checked
    let out = docket()
        .arg("--data")
        .arg(&data)
        .args(["replay", "--verify"])
        .output()
        .unwrap();
    ok(&out);
    assert!(
        stderr(&out).contains("keys/ledger.key was not checked"),
        "{}",
        show(&out)
    );
    // With it, it serves, and a client reads the checkpoint it signs
    let mut serve = docket()
        .env("DOCKET_PASSPHRASE_FILE", &pass)
        .arg("--data")
        .arg(&data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = listening_url(&mut serve);
    let out = docket()
        .args(["--server", &url, "checkpoint"])
        .output()
        .unwrap();
    let _ = serve.kill();
    let _ = serve.wait();
    ok(&out);
}

/// The encrypted format is the standard one: OpenSSL decrypts it with the
/// same passphrase and finds the same public key (skipped without openssl).
#[test]
fn openssl_reads_an_encrypted_key_file() {
    if Command::new("openssl").arg("version").output().is_err() {
        eprintln!("skipped: no openssl");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let key = root.path().join("k.key");
    let pass = root.path().join("pass");
    private_file(&pass, "interop\n");
    let out = docket()
        .arg("--passphrase-file")
        .arg(&pass)
        .args(["--json", "keygen", "--encrypt", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    ok(&out);
    let made: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let der = Command::new("openssl")
        .args(["pkey", "-pubout", "-outform", "DER", "-in"])
        .arg(&key)
        .arg("-passin")
        .arg(format!("file:{}", pass.display()))
        .output()
        .unwrap();
    assert!(der.status.success(), "{}", show(&der));
    // SubjectPublicKeyInfo of Ed25519: a 12-byte header, then the key.
    let public = hex::encode(&der.stdout[der.stdout.len() - 32..]);
    assert_eq!(made["public_key"], public.as_str());
}
