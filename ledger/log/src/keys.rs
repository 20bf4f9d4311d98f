//! Key material: generation, key files, and the one canonical spelling of a
//! public key.
//!
//! A public key is written as exactly 64 lowercase hex digits, nothing
//! around them. Anything else (upper case, whitespace, `0x`, another length)
//! is refused, so one key can never count as two.

use std::fs;
use std::io::Write as _;
use std::path::Path;

use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

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

/// Writes `key` to `path` with mode 0600, refusing to overwrite.
pub fn write_key_file(path: &Path, key: &SigningKey) -> Result<()> {
    let file = KeyFile {
        kind: "ed25519".into(),
        secret: hex::encode(key.to_bytes()),
        public: hex::encode(key.verifying_key().to_bytes()),
    };
    // Invariant: KeyFile is plain strings; serialising cannot fail.
    let text = serde_json::to_string_pretty(&file).expect("key file serialises") + "\n";
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::store::create_dir_durably(dir)?;
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            LogError::AlreadyExists {
                what: format!("key file {}", path.display()),
            }
        } else {
            LogError::io(path, e)
        }
    })?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| LogError::io(path, e))?;
    // The new name is durable only once its directory is.
    crate::store::sync_dir(dir)
}

/// Reads a private key file written by [`write_key_file`].
pub fn read_key_file(path: &Path) -> Result<SigningKey> {
    let text = fs::read_to_string(path).map_err(|e| LogError::io(path, e))?;
    let file: KeyFile = serde_json::from_str(&text)
        .map_err(|e| LogError::malformed("key file", format!("{}: {e}", path.display())))?;
    if file.kind != "ed25519" {
        return Err(LogError::malformed(
            "key file",
            format!("{}: type {:?} is not ed25519", path.display(), file.kind),
        ));
    }
    let seed: [u8; 32] = hex::decode(&file.secret)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| LogError::malformed("key file", "secret must be 64 hex digits"))?;
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
