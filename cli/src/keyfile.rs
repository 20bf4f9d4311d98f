//! Keys at rest: the key-file passphrase (`--passphrase-file FILE`, env
//! `DOCKET_PASSPHRASE_FILE`, or env `DOCKET_PASSPHRASE`) and
//! `docket keyfile encrypt|decrypt|show`.
//!
//! An encrypted key file is a standard PKCS#8 `EncryptedPrivateKeyInfo` PEM
//! (`-----BEGIN ENCRYPTED PRIVATE KEY-----`, RFC 5958) under PBES2 (RFC
//! 8018): scrypt (RFC 7914; N = 2^14, r = 8, p = 1, random 16-byte salt)
//! derives an AES-256-CBC key. OpenSSL reads it
//! (`openssl pkey -in FILE -passin file:PASSFILE`). The format and the KDF
//! are the RustCrypto `pkcs8`/`pkcs5` crates', not Docket's own.
//!
//! Every private key file (plain or encrypted) that group or others may
//! access is refused (exit 2) with the fix (`chmod 600 FILE`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Subcommand};
use docket_log::keys;
use zeroize::Zeroizing;

use crate::exit::{self, CliError};
use crate::output::Output;

/// The environment variable holding the passphrase itself (used when no
/// passphrase file is given).
pub const PASSPHRASE_ENV: &str = "DOCKET_PASSPHRASE";

/// Reads the passphrase from `file` (`--passphrase-file`, env
/// `DOCKET_PASSPHRASE_FILE`), else from `DOCKET_PASSPHRASE`, and makes it
/// the process's key-file passphrase. A passphrase file must be private
/// like a key (mode 0600); its one trailing newline is not part of it.
pub fn install_passphrase(file: Option<&Path>) -> Result<()> {
    let pass = match file {
        Some(path) => Some(read_passphrase_file(path)?),
        None => std::env::var(PASSPHRASE_ENV).ok().map(Zeroizing::new),
    };
    keys::set_passphrase(pass).map_err(|e| CliError::new(exit::USAGE, e.to_string()).into())
}

fn read_passphrase_file(path: &Path) -> Result<Zeroizing<String>> {
    keys::check_key_permissions(path).map_err(|e| match e {
        docket_domain::LedgerError::Io { .. } => CliError::new(
            exit::MISSING,
            format!("cannot read passphrase file {}: {e}", path.display()),
        ),
        other => CliError::new(
            exit::INVALID,
            other
                .to_string()
                .replace("invalid key file", "invalid passphrase file")
                .replace("a private key", "a passphrase file"),
        ),
    })?;
    let mut text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
        CliError::new(
            exit::MISSING,
            format!("cannot read passphrase file {}: {e}", path.display()),
        )
    })?);
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    if text.is_empty() {
        return Err(CliError::new(
            exit::USAGE,
            format!("passphrase file {} is empty", path.display()),
        )
        .into());
    }
    Ok(text)
}

/// `--encrypt` for `init` and `keygen`: new key files are encrypted with
/// the passphrase, which must be given.
pub fn require_encryption(encrypt: bool) -> Result<()> {
    if encrypt && !keys::has_passphrase() {
        return Err(CliError::new(
            exit::USAGE,
            "--encrypt needs a passphrase: give --passphrase-file FILE, or set DOCKET_PASSPHRASE_FILE or DOCKET_PASSPHRASE",
        )
        .into());
    }
    keys::set_encrypt_new_keys(encrypt);
    Ok(())
}

/// `docket keyfile …`.
#[derive(Debug, Subcommand)]
pub enum KeyfileCmd {
    /// Encrypt a plain private key file in place with the passphrase
    /// (PKCS#8, scrypt + AES-256-CBC).
    Encrypt(KeyfilePath),
    /// Decrypt an encrypted private key file in place (plain JSON, 0600).
    Decrypt(KeyfilePath),
    /// Check a private key file (permissions, passphrase) and print its
    /// public key and whether it is encrypted.
    Show(KeyfilePath),
}

/// The key file a `docket keyfile` command works on.
#[derive(Debug, Args)]
pub struct KeyfilePath {
    /// The private key file (e.g. DATA/keys/ledger.key).
    pub file: PathBuf,
}

/// Runs `docket keyfile …`.
pub fn run(cmd: &KeyfileCmd, out: Output) -> Result<u8> {
    let (path, action) = match cmd {
        KeyfileCmd::Encrypt(p) => (&p.file, Some(true)),
        KeyfileCmd::Decrypt(p) => (&p.file, Some(false)),
        KeyfileCmd::Show(p) => (&p.file, None),
    };
    let was_encrypted = keys::is_encrypted_key_file(path).map_err(|e| {
        CliError::new(
            exit::MISSING,
            format!("cannot read key {}: {e}", path.display()),
        )
    })?;
    let key = crate::core_cmds::load_key(path)?;
    let public = hex::encode(key.verifying_key().to_bytes());
    let encrypted = match action {
        Some(true) => {
            if was_encrypted {
                return Err(CliError::new(
                    exit::INVALID,
                    format!(
                        "{} is already encrypted (to change its passphrase: decrypt it with the old one, encrypt it with the new one)",
                        path.display()
                    ),
                )
                .into());
            }
            require_encryption(true)?;
            keys::rewrite_key_file(path, &key, true)?;
            true
        }
        Some(false) => {
            if !was_encrypted {
                return Err(CliError::new(
                    exit::INVALID,
                    format!("{} is not encrypted", path.display()),
                )
                .into());
            }
            keys::rewrite_key_file(path, &key, false)?;
            false
        }
        None => was_encrypted,
    };
    out.emit(
        &serde_json::json!({
            "key_file": path,
            "public_key": public,
            "encrypted": encrypted,
        }),
        || {
            format!(
                "{}: public key {public} ({})",
                path.display(),
                if encrypted {
                    "encrypted"
                } else {
                    "not encrypted"
                }
            )
        },
    );
    Ok(exit::OK)
}
