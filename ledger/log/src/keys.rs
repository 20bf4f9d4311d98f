//! Key material: generation, key files, and the one canonical spelling of a
//! public key.
//!
//! A public key is written as exactly 64 lowercase hex digits, nothing
//! around them. Anything else (upper case, whitespace, `0x`, another length)
//! is refused, so one key can never count as two.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::error::{LogError, Result};

/// Generates a fresh ed25519 key from the operating system's RNG.
pub fn generate() -> Result<SigningKey> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| LogError::Io {
        path: "getrandom".into(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Parses a public key in its one canonical spelling (64 lowercase hex
/// digits, nothing else) and refuses keys the signature rule refuses
/// (non-canonical point encoding, small order).
pub fn parse_public(hex_key: &str) -> Result<VerifyingKey> {
    Ok(parse_public_bytes(hex_key)?.1)
}

/// Like [`parse_public`], also returning the raw bytes.
pub fn parse_public_bytes(hex_key: &str) -> Result<([u8; 32], VerifyingKey)> {
    if hex_key.len() != 64 {
        return Err(LogError::malformed(
            "public key",
            format!(
                "must be exactly 64 lowercase hex digits, got {} characters",
                hex_key.len()
            ),
        ));
    }
    if !hex_key
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(LogError::malformed(
            "public key",
            "must be exactly 64 lowercase hex digits (no upper case, spaces or prefix)",
        ));
    }
    let bytes: [u8; 32] = hex::decode(hex_key)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| LogError::malformed("public key", "must be 64 hex digits"))?;
    Ok((bytes, public_from_bytes(&bytes)?))
}

/// Decodes a raw public key, refusing what the signature rule refuses:
/// non-canonical encodings and small-order (weak) keys.
pub fn public_from_bytes(bytes: &[u8; 32]) -> Result<VerifyingKey> {
    crate::signature::check_public_key(bytes)
        .map_err(|e| LogError::malformed("public key", e.to_string()))?;
    VerifyingKey::from_bytes(bytes).map_err(|e| LogError::malformed("public key", e.to_string()))
}

/// On-disk private key file (`docket keygen` writes it, mode 0600):
/// `{"type":"ed25519","secret":"<hex 32-byte seed>","public":"<hex>"}`.
#[derive(Debug, Serialize, Deserialize)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: String,
    secret: String,
    public: String,
}

/// The PEM label of an encrypted key file (PKCS#8 `EncryptedPrivateKeyInfo`,
/// RFC 5958 §3, PBES2 of RFC 8018 with scrypt (RFC 7914) and AES-256-CBC).
pub const ENCRYPTED_PEM_LABEL: &str = "ENCRYPTED PRIVATE KEY";

/// The passphrase for encrypted key files, set once by the binary from
/// `--passphrase-file` or the environment (`DOCKET_PASSPHRASE`,
/// `DOCKET_PASSPHRASE_FILE`); every key file this process reads or writes
/// uses it, so the ledger key that the sequencer loads at open accepts it
/// without a passphrase argument on every path that opens a ledger.
static PASSPHRASE: RwLock<Option<Zeroizing<String>>> = RwLock::new(None);

/// Whether [`write_key_file`] encrypts new key files with the passphrase
/// (`docket init --encrypt`, `docket keygen --encrypt`).
static ENCRYPT_NEW: AtomicBool = AtomicBool::new(false);

/// Sets (or clears) the process's key-file passphrase. An empty passphrase
/// is refused.
pub fn set_passphrase(passphrase: Option<Zeroizing<String>>) -> Result<()> {
    if passphrase.as_ref().is_some_and(|p| p.is_empty()) {
        return Err(LogError::malformed(
            "passphrase",
            "the key-file passphrase is empty",
        ));
    }
    // A poisoned lock only means a panic elsewhere while it was held; the
    // value (an Option) is still whole.
    *PASSPHRASE.write().unwrap_or_else(|e| e.into_inner()) = passphrase;
    Ok(())
}

/// Whether a key-file passphrase is set.
pub fn has_passphrase() -> bool {
    PASSPHRASE
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .is_some()
}

/// Makes [`write_key_file`] encrypt new key files with the passphrase
/// (which must then be set).
pub fn set_encrypt_new_keys(on: bool) {
    ENCRYPT_NEW.store(on, Ordering::SeqCst);
}

fn passphrase() -> Option<Zeroizing<String>> {
    PASSPHRASE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The hint every "needs a passphrase" message ends with.
const PASSPHRASE_HINT: &str = "give it with --passphrase-file FILE, or the environment variable DOCKET_PASSPHRASE_FILE or DOCKET_PASSPHRASE";

/// Writes `key` to `path` with mode 0600, refusing to overwrite. When new
/// keys are to be encrypted ([`set_encrypt_new_keys`]), the file is an
/// encrypted PKCS#8 PEM under the process's passphrase.
pub fn write_key_file(path: &Path, key: &SigningKey) -> Result<()> {
    if ENCRYPT_NEW.load(Ordering::SeqCst) {
        let pass = passphrase().ok_or_else(|| LogError::NotFound {
            what: format!(
                "a passphrase to encrypt {} ({PASSPHRASE_HINT})",
                path.display()
            ),
        })?;
        write_key_file_with(path, key, Some(&pass))
    } else {
        write_key_file_with(path, key, None)
    }
}

/// Like [`write_key_file`] with an explicit passphrase (None: plain).
pub fn write_key_file_with(path: &Path, key: &SigningKey, passphrase: Option<&str>) -> Result<()> {
    let text = match passphrase {
        Some(pass) => encrypt_key(key, pass)?,
        None => plain_key_text(key),
    };
    write_private_file(path, text.as_bytes(), false)
}

/// Rewrites the key file at `path` (`docket keyfile encrypt|decrypt`):
/// encrypted under the process's passphrase when `encrypt`, else plain.
/// The new file replaces the old one atomically (mode 0600).
pub fn rewrite_key_file(path: &Path, key: &SigningKey, encrypt: bool) -> Result<()> {
    let text = if encrypt {
        let pass = passphrase().ok_or_else(|| LogError::NotFound {
            what: format!(
                "a passphrase to encrypt {} ({PASSPHRASE_HINT})",
                path.display()
            ),
        })?;
        encrypt_key(key, &pass)?
    } else {
        plain_key_text(key)
    };
    write_private_file(path, text.as_bytes(), true)
}

fn plain_key_text(key: &SigningKey) -> Zeroizing<String> {
    let file = KeyFile {
        kind: "ed25519".into(),
        secret: hex::encode(key.to_bytes()),
        public: hex::encode(key.verifying_key().to_bytes()),
    };
    // Invariant: KeyFile is plain strings; serialising cannot fail.
    Zeroizing::new(serde_json::to_string_pretty(&file).expect("key file serialises") + "\n")
}

/// PKCS#8 v1 (RFC 8410's `id-Ed25519` private key, no public key, so that
/// OpenSSL 3.0 reads it too) encrypted with PBES2: scrypt (N = 2^14, r 8,
/// p 1, 16-byte random salt) and AES-256-CBC (random IV), as PEM.
fn encrypt_key(key: &SigningKey, pass: &str) -> Result<Zeroizing<String>> {
    use ed25519_dalek::pkcs8::EncodePrivateKey as _;
    let bytes = ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    };
    bytes
        .to_pkcs8_encrypted_pem(pass.as_bytes(), pkcs8::LineEnding::LF)
        .map_err(|e| LogError::malformed("key file", format!("cannot encrypt the key: {e}")))
}

/// Writes a private file with mode 0600 and fsyncs it and its directory;
/// `replace` writes a temporary file and renames it over `path`.
fn write_private_file(path: &Path, bytes: &[u8], replace: bool) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::store::create_dir_durably(dir)?;
    let target = if replace {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        dir.join(format!(".{name}.{}.tmp", std::process::id()))
    } else {
        path.to_path_buf()
    };
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts.open(&target).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            LogError::AlreadyExists {
                what: format!("key file {}", target.display()),
            }
        } else {
            LogError::io(&target, e)
        }
    })?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    if let Err(e) = written {
        if replace {
            let _ = fs::remove_file(&target);
        }
        return Err(LogError::io(&target, e));
    }
    if replace {
        fs::rename(&target, path).map_err(|e| {
            let _ = fs::remove_file(&target);
            LogError::io(path, e)
        })?;
    }
    // The new name is durable only once its directory is.
    crate::store::sync_dir(dir)
}

/// Refuses a private key file that its group or others may access (like
/// ssh): the message names the file and the fix.
pub fn check_key_permissions(path: &Path) -> Result<()> {
    let meta = fs::metadata(path).map_err(|e| LogError::io(path, e))?;
    // What is not a regular file is no key file, whatever its mode: never
    // advise `chmod 600` on a directory or a device.
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory, not a key file"
        } else {
            "not a regular file, so not a key file"
        };
        return Err(LogError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, what),
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(LogError::Invalid {
                what: format!("key file {}", path.display()),
                violations: vec![format!(
                    "permissions {mode:04o} are too open: a private key must not be accessible by group or others; run `chmod 600 {}`",
                    path.display()
                )],
            });
        }
    }
    Ok(())
}

/// Whether the key file at `path` is encrypted (without decrypting it).
pub fn is_encrypted_key_file(path: &Path) -> Result<bool> {
    let text = fs::read_to_string(path).map_err(|e| LogError::io(path, e))?;
    Ok(text
        .trim_start()
        .starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
}

/// Reads a private key file written by [`write_key_file`]: the plain JSON
/// form, an encrypted PKCS#8 PEM (decrypted with the process's passphrase),
/// or a plain PKCS#8 PEM (e.g. `openssl genpkey -algorithm ed25519`).
/// A file its group or others may access is refused first.
pub fn read_key_file(path: &Path) -> Result<SigningKey> {
    read_key_file_with(path, passphrase().as_deref().map(String::as_str))
}

/// Like [`read_key_file`] with an explicit passphrase.
pub fn read_key_file_with(path: &Path, passphrase: Option<&str>) -> Result<SigningKey> {
    use ed25519_dalek::pkcs8::DecodePrivateKey as _;
    check_key_permissions(path)?;
    let text = Zeroizing::new(fs::read_to_string(path).map_err(|e| {
        // Bytes that are not UTF-8 are a malformed (damaged) key file, as
        // any other content that does not parse; not an I/O failure.
        if e.kind() == std::io::ErrorKind::InvalidData {
            LogError::malformed("key file", format!("{}: not UTF-8 text", path.display()))
        } else {
            LogError::io(path, e)
        }
    })?);
    let trimmed = text.trim_start();
    if trimmed.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let pass = passphrase.ok_or_else(|| LogError::NotFound {
            what: format!(
                "the passphrase of the encrypted key file {} ({PASSPHRASE_HINT})",
                path.display()
            ),
        })?;
        return SigningKey::from_pkcs8_encrypted_pem(trimmed, pass.as_bytes()).map_err(|e| {
            LogError::Invalid {
                what: format!("key file {}", path.display()),
                violations: vec![format!(
                    "cannot decrypt it: wrong passphrase, or the file is damaged ({e})"
                )],
            }
        });
    }
    if trimmed.starts_with("-----BEGIN PRIVATE KEY-----") {
        return SigningKey::from_pkcs8_pem(trimmed)
            .map_err(|e| LogError::malformed("key file", format!("{}: {e}", path.display())));
    }
    let file: KeyFile = serde_json::from_str(&text)
        .map_err(|e| LogError::malformed("key file", format!("{}: {e}", path.display())))?;
    if file.kind != "ed25519" {
        return Err(LogError::malformed(
            "key file",
            format!("{}: type {:?} is not ed25519", path.display(), file.kind),
        ));
    }
    let seed: Zeroizing<[u8; 32]> = Zeroizing::new(
        hex::decode(&file.secret)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| LogError::malformed("key file", "secret must be 64 hex digits"))?,
    );
    let key = SigningKey::from_bytes(&seed);
    if hex::encode(key.verifying_key().to_bytes()) != file.public.to_ascii_lowercase() {
        return Err(LogError::malformed(
            "key file",
            format!("{}: public key does not match the secret", path.display()),
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_round_trip_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k/a.key");
        let k = generate().unwrap();
        write_key_file(&p, &k).unwrap();
        assert_eq!(read_key_file(&p).unwrap().to_bytes(), k.to_bytes());
        assert!(write_key_file(&p, &k).is_err(), "no overwrite");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(
                fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
    }

    #[test]
    fn encrypted_key_file_needs_its_passphrase() {
        // Given a key file encrypted under "correct horse"
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("enc.key");
        let k = generate().unwrap();
        write_key_file_with(&p, &k, Some("correct horse")).unwrap();
        let text = fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----"));
        assert!(
            !text.contains(&hex::encode(k.to_bytes())),
            "no plain secret"
        );
        assert!(is_encrypted_key_file(&p).unwrap());
        // Then the right passphrase opens it
        assert_eq!(
            read_key_file_with(&p, Some("correct horse"))
                .unwrap()
                .to_bytes(),
            k.to_bytes()
        );
        // And a wrong one is refused as invalid, naming the file
        let wrong = read_key_file_with(&p, Some("battery staple")).unwrap_err();
        assert!(matches!(wrong, LogError::Invalid { .. }), "{wrong}");
        assert!(wrong.to_string().contains("wrong passphrase"), "{wrong}");
        assert!(wrong.to_string().contains("enc.key"), "{wrong}");
        // And none says how to give one
        let none = read_key_file_with(&p, None).unwrap_err();
        assert!(matches!(none, LogError::NotFound { .. }), "{none}");
        assert!(none.to_string().contains("--passphrase-file"), "{none}");
    }

    #[cfg(unix)]
    #[test]
    fn a_key_readable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        // Given a plain key file made world-readable
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("open.key");
        write_key_file_with(&p, &generate().unwrap(), None).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        // Then reading it is refused with the fix
        let e = read_key_file_with(&p, None).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        assert!(e.to_string().contains("0644"), "{e}");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        assert!(read_key_file_with(&p, None).is_err());
        // And 0600 reads again
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(read_key_file_with(&p, None).is_ok());
    }

    #[test]
    fn weak_keys_are_refused() {
        // The identity point (small order) encoded as y = 1.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert!(public_from_bytes(&identity).is_err());
        assert!(parse_public(&hex::encode(generate().unwrap().verifying_key().to_bytes())).is_ok());
        assert!(parse_public("zz").is_err());
        let good = hex::encode(generate().unwrap().verifying_key().to_bytes());
        assert!(parse_public(&good.to_ascii_uppercase()).is_err());
        assert!(parse_public(&format!(" {good}")).is_err());
        assert!(parse_public(&format!("{good}\n")).is_err());
        assert!(parse_public(&format!("0x{good}")).is_err());
    }
}
