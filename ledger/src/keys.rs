//! Key material: generation, key files, public-key parsing, roles.

use std::fs;
use std::io::Write as _;
use std::path::Path;

use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::error::{LedgerError, Result};

/// A role a key may hold. Each event kind names the roles that may author it
/// (see [`crate::authority`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    Submitter,
    Verifier,
    Approver,
    Custodian,
    Auditor,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Admin,
        Role::Submitter,
        Role::Verifier,
        Role::Approver,
        Role::Custodian,
        Role::Auditor,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Submitter => "submitter",
            Role::Verifier => "verifier",
            Role::Approver => "approver",
            Role::Custodian => "custodian",
            Role::Auditor => "auditor",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = LedgerError;
    fn from_str(s: &str) -> Result<Self> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| LedgerError::malformed("role", format!("unknown role {s:?}")))
    }
}

/// Generates a fresh ed25519 key from the operating system's RNG.
pub fn generate() -> Result<SigningKey> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| LedgerError::Io {
        path: "getrandom".into(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Parses a hex public key, refusing malformed and weak (small-order) keys.
pub fn parse_public(hex_key: &str) -> Result<VerifyingKey> {
    let bytes: [u8; 32] = hex::decode(hex_key.trim())
        .map_err(|e| LedgerError::malformed("public key", e.to_string()))?
        .try_into()
        .map_err(|_| LedgerError::malformed("public key", "must be 32 bytes (64 hex digits)"))?;
    public_from_bytes(&bytes)
}

/// Decodes a raw public key, refusing malformed and weak keys.
pub fn public_from_bytes(bytes: &[u8; 32]) -> Result<VerifyingKey> {
    let key = VerifyingKey::from_bytes(bytes)
        .map_err(|e| LedgerError::malformed("public key", e.to_string()))?;
    if key.is_weak() {
        return Err(LedgerError::malformed(
            "public key",
            "weak (small-order) key refused",
        ));
    }
    Ok(key)
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
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| LedgerError::io(dir, e))?;
    }
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            LedgerError::AlreadyExists {
                what: format!("key file {}", path.display()),
            }
        } else {
            LedgerError::io(path, e)
        }
    })?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| LedgerError::io(path, e))?;
    Ok(())
}

/// Reads a private key file written by [`write_key_file`].
pub fn read_key_file(path: &Path) -> Result<SigningKey> {
    let text = fs::read_to_string(path).map_err(|e| LedgerError::io(path, e))?;
    let file: KeyFile = serde_json::from_str(&text)
        .map_err(|e| LedgerError::malformed("key file", format!("{}: {e}", path.display())))?;
    if file.kind != "ed25519" {
        return Err(LedgerError::malformed(
            "key file",
            format!("{}: type {:?} is not ed25519", path.display(), file.kind),
        ));
    }
    let seed: [u8; 32] = hex::decode(&file.secret)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| LedgerError::malformed("key file", "secret must be 64 hex digits"))?;
    let key = SigningKey::from_bytes(&seed);
    if hex::encode(key.verifying_key().to_bytes()) != file.public.to_ascii_lowercase() {
        return Err(LedgerError::malformed(
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
    }
}
