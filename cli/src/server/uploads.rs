//! Who may upload evidence content, and how much.
//!
//! Every `Evidence.Upload` is signed before any content is read: either by
//! `header.uploader_public_key` + `header.upload_signature` over
//! [`upload_message`], or by the header's `evidence.registered` statement
//! (whose signed payload names the content's SHA-256 and size). The
//! signature is checked under the one signature rule
//! ([`docket_domain::signature::verify`]) — also for a statement already in
//! the log, so a replayed statement with a forged signature is refused. The
//! signing key must be registered, not revoked and inside its validity
//! window.
//!
//! Then two limits, both `RESOURCE_EXHAUSTED`:
//!
//! * the **upload quota**: bytes of content a key first stored that are
//!   still in the blob store (content already present costs nothing;
//!   content retention deleted is credited back). Recorded in
//!   `DATA/server/upload-usage.jsonl`, one line per new blob.
//! * the **disk reserve**: an upload must leave at least this much free
//!   space on the data directory's filesystem (`statvfs`), counting the
//!   uploads in flight. Appends of statements are not affected, so the
//!   ledger keeps working when uploads stop.

use std::collections::HashMap;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use docket_domain::LedgerError;
use docket_domain::blobs::BlobDigest;
use docket_domain::domain::Docket;
use ed25519_dalek::{Signer as _, SigningKey};
use serde::{Deserialize, Serialize};

/// Domain separation of upload signatures.
pub const UPLOAD_CONTEXT: &[u8] = b"docket/v1/upload\0";

/// Default upload quota per key (1 GiB).
pub const DEFAULT_UPLOAD_QUOTA: u64 = 1 << 30;
/// Default free-space reserve of the data directory's filesystem (256 MiB).
pub const DEFAULT_DISK_RESERVE: u64 = 256 << 20;

/// The message an uploader signs:
/// `"docket/v1/upload" || 0x00 || SHA-256(content) || size (u64 big-endian)`.
#[must_use]
pub fn upload_message(sha256: &[u8; 32], size: u64) -> Vec<u8> {
    let mut m = Vec::with_capacity(UPLOAD_CONTEXT.len() + 32 + 8);
    m.extend_from_slice(UPLOAD_CONTEXT);
    m.extend_from_slice(sha256);
    m.extend_from_slice(&size.to_be_bytes());
    m
}

/// Signs an upload of content with digest `sha256` and `size` bytes.
#[must_use]
pub fn sign_upload(key: &SigningKey, sha256: &[u8; 32], size: u64) -> [u8; 64] {
    key.sign(&upload_message(sha256, size)).to_bytes()
}

/// The signed upload fields of a header for `content` (`statement` unset):
/// expected digest and size, uploader key and signature.
#[must_use]
pub fn signed_header(key: &SigningKey, content: &[u8]) -> docket_proto::v1::UploadHeader {
    use sha2::{Digest as _, Sha256};
    let digest: [u8; 32] = Sha256::digest(content).into();
    let size = content.len() as u64;
    docket_proto::v1::UploadHeader {
        statement: None,
        expected_sha256: digest.to_vec(),
        expected_size: size,
        uploader_public_key: key.verifying_key().to_bytes().to_vec(),
        upload_signature: sign_upload(key, &digest, size).to_vec(),
    }
}

/// A byte count parsed from `N`, `N KiB|MiB|GiB|TiB` (also `K`, `M`, `G`,
/// `T`, `B`; binary multiples; case-insensitive).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 1048576, 512MiB, 2GiB)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => return Err(format!("{s:?}: unknown unit (use KiB, MiB, GiB or TiB)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// Free space an upload must leave on the data directory's filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskReserve {
    /// At least this many bytes.
    Bytes(u64),
    /// At least this percentage of the filesystem's size.
    Percent(u8),
}

impl DiskReserve {
    /// `N`, `N MiB`-style sizes (see [`parse_bytes`]) or `P%` (0..=100).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().strip_suffix('%') {
            Some(p) => match p.trim().parse::<u8>() {
                Ok(p) if p <= 100 => Ok(Self::Percent(p)),
                _ => Err(format!("{s:?} is not a percentage from 0% to 100%")),
            },
            None => parse_bytes(s).map(Self::Bytes),
        }
    }

    /// The reserve in bytes on a filesystem of `total` bytes.
    #[must_use]
    pub fn bytes(self, total: u64) -> u64 {
        match self {
            Self::Bytes(b) => b,
            Self::Percent(p) => total / 100 * u64::from(p),
        }
    }
}

impl fmt::Display for DiskReserve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bytes(b) => write!(f, "{b} bytes"),
            Self::Percent(p) => write!(f, "{p}% of the filesystem"),
        }
    }
}

/// Upload limits of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadLimits {
    /// Bytes of stored content per key (None: no quota).
    pub quota: Option<u64>,
    /// Free space uploads must leave (None: no reserve).
    pub reserve: Option<DiskReserve>,
}

impl Default for UploadLimits {
    fn default() -> Self {
        Self {
            quota: Some(DEFAULT_UPLOAD_QUOTA),
            reserve: Some(DiskReserve::Bytes(DEFAULT_DISK_RESERVE)),
        }
    }
}

/// How an upload claims to be authorised.
#[derive(Debug, Clone)]
pub enum UploadAuth {
    /// `uploader_public_key` + `upload_signature` over [`upload_message`].
    Signed { key: [u8; 32], signature: [u8; 64] },
    /// The header's `evidence.registered` statement.
    Statement(docket_domain::Statement),
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Checks an upload's signature (under the one rule) and that its key may
/// upload now. Returns the uploader's key.
pub fn authorize(
    docket: &Docket,
    auth: &UploadAuth,
    sha256: &[u8; 32],
    size: u64,
) -> Result<[u8; 32], LedgerError> {
    let key = match auth {
        UploadAuth::Signed { key, signature } => {
            docket_domain::signature::verify(key, &upload_message(sha256, size), signature)
                .map_err(|e| LedgerError::BadSignature {
                    seq: None,
                    detail: format!("the upload signature does not verify: {e}"),
                })?;
            *key
        }
        UploadAuth::Statement(st) => {
            // Verified here even when the statement is already in the log
            // (the ledger's precheck skips duplicates): a replayed statement
            // with a forged signature authorises nothing.
            st.verify()?;
            st.author
        }
    };
    let ledger = docket.ledger();
    let state = ledger.state();
    let reason = match state.keys.key(&key) {
        None => Some("the key is not registered".to_string()),
        Some(k) if k.revoked_seq.is_some() => Some(format!(
            "the key was revoked at seq {}",
            k.revoked_seq.unwrap_or_default()
        )),
        Some(k) if !k.usable_at(state.applied, now_ms().max(state.last_recorded_at_ms)) => {
            Some("the key is outside its validity window".to_string())
        }
        Some(_) => None,
    };
    match reason {
        Some(reason) => Err(LedgerError::PermissionDenied {
            kind: "upload".into(),
            author: hex::encode(key),
            reason,
        }),
        None => Ok(key),
    }
}

/// One line of the usage file.
#[derive(Debug, Serialize, Deserialize)]
struct UsageLine {
    key: String,
    sha256: String,
    size: u64,
}

#[derive(Debug, Default)]
struct Accounts {
    /// Blob digest → (key that first stored it, size).
    owner: HashMap<BlobDigest, ([u8; 32], u64)>,
    /// Key → bytes of blobs it owns.
    used: HashMap<[u8; 32], u64>,
    /// Key → bytes of its uploads in flight.
    pending: HashMap<[u8; 32], u64>,
    /// Bytes of every upload in flight.
    pending_disk: u64,
}

impl Accounts {
    fn insert(&mut self, digest: BlobDigest, key: [u8; 32], size: u64) {
        if let Some((old, old_size)) = self.owner.insert(digest, (key, size))
            && let Some(u) = self.used.get_mut(&old)
        {
            *u = u.saturating_sub(old_size);
        }
        *self.used.entry(key).or_default() += size;
    }

    fn remove(&mut self, digest: &BlobDigest) {
        if let Some((key, size)) = self.owner.remove(digest)
            && let Some(u) = self.used.get_mut(&key)
        {
            *u = u.saturating_sub(size);
        }
    }
}

/// Upload accounting of one data directory.
#[derive(Debug)]
pub struct Uploads {
    limits: UploadLimits,
    data: PathBuf,
    file: PathBuf,
    accounts: Mutex<Accounts>,
}

fn lock(m: &Mutex<Accounts>) -> std::sync::MutexGuard<'_, Accounts> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Uploads {
    /// Loads the usage file of `docket`'s data directory, forgetting blobs
    /// that are no longer stored.
    pub fn open(docket: &Docket, limits: UploadLimits) -> Result<Arc<Self>, LedgerError> {
        let data = docket.ledger().dir().to_path_buf();
        let file = data.join("server").join("upload-usage.jsonl");
        let mut accounts = Accounts::default();
        let mut lines = 0usize;
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                for line in text.lines() {
                    lines += 1;
                    // A torn last line (a crash mid-write) is skipped.
                    let Ok(u) = serde_json::from_str::<UsageLine>(line) else {
                        continue;
                    };
                    let (Ok(k), Ok(d)) = (hex::decode(&u.key), hex::decode(&u.sha256)) else {
                        continue;
                    };
                    let (Ok(k), Ok(d)) = (<[u8; 32]>::try_from(k), BlobDigest::try_from(d)) else {
                        continue;
                    };
                    accounts.insert(d, k, u.size);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LedgerError::io(&file, e)),
        }
        let gone: Vec<BlobDigest> = accounts
            .owner
            .keys()
            .filter(|d| !docket.blobs().contains(d).unwrap_or(true))
            .copied()
            .collect();
        for d in &gone {
            accounts.remove(d);
        }
        let uploads = Self {
            limits,
            data,
            file,
            accounts: Mutex::new(accounts),
        };
        if !gone.is_empty() || lines > uploads.len() {
            uploads.rewrite()?;
        }
        Ok(Arc::new(uploads))
    }

    fn len(&self) -> usize {
        lock(&self.accounts).owner.len()
    }

    /// The limits in force.
    #[must_use]
    pub fn limits(&self) -> UploadLimits {
        self.limits
    }

    /// Bytes of stored content `key` first uploaded.
    #[must_use]
    pub fn used(&self, key: &[u8; 32]) -> u64 {
        lock(&self.accounts).used.get(key).copied().unwrap_or(0)
    }

    /// Writes the usage file afresh (atomically).
    fn rewrite(&self) -> Result<(), LedgerError> {
        let mut text = String::new();
        for (d, (k, size)) in &lock(&self.accounts).owner {
            let line = UsageLine {
                key: hex::encode(k),
                sha256: hex::encode(d),
                size: *size,
            };
            // Invariant: a struct of strings and a number serialises.
            text.push_str(&serde_json::to_string(&line).expect("usage line serialises"));
            text.push('\n');
        }
        self.ensure_dir()?;
        docket_log::store::write_atomically(&self.file, text.as_bytes())
    }

    fn ensure_dir(&self) -> Result<(), LedgerError> {
        let dir = self.data.join("server");
        if !dir.exists() {
            docket_log::store::create_dir_durably(&dir)?;
        }
        Ok(())
    }

    /// Reserves room for an upload of `size` bytes with digest `digest` by
    /// `key`: checks the key's quota (unless the content is already stored)
    /// and the disk reserve. The reservation is released when dropped;
    /// [`Reservation::commit`] records the stored blob.
    pub fn reserve(
        self: &Arc<Self>,
        docket: &Docket,
        key: [u8; 32],
        digest: BlobDigest,
        size: u64,
    ) -> Result<Reservation, LedgerError> {
        let already = docket.blobs().size(&digest)? == Some(size);
        let mut acc = lock(&self.accounts);
        let charged = if already { 0 } else { size };
        if let Some(quota) = self.limits.quota
            && charged > 0
        {
            let over = |a: &Accounts| {
                a.used.get(&key).copied().unwrap_or(0)
                    + a.pending.get(&key).copied().unwrap_or(0)
                    + charged
                    > quota
            };
            if over(&acc) {
                // Credit back content retention (or an operator) deleted.
                let gone: Vec<BlobDigest> = acc
                    .owner
                    .iter()
                    .filter(|(d, (k, _))| *k == key && !docket.blobs().contains(d).unwrap_or(true))
                    .map(|(d, _)| *d)
                    .collect();
                for d in &gone {
                    acc.remove(d);
                }
                if over(&acc) {
                    let used = acc.used.get(&key).copied().unwrap_or(0)
                        + acc.pending.get(&key).copied().unwrap_or(0);
                    return Err(LedgerError::ResourceExhausted(format!(
                        "upload quota exceeded: key {} has {used} bytes stored, this upload is {size} bytes, \
                         the quota is {quota} bytes per key (server setting upload_quota)",
                        hex::encode(key)
                    )));
                }
            }
        }
        if let Some(reserve) = self.limits.reserve {
            let (free, total) = free_space(&self.data)?;
            let keep = reserve.bytes(total);
            let after = free.saturating_sub(acc.pending_disk).saturating_sub(size);
            if after < keep || free < acc.pending_disk + size {
                return Err(LedgerError::ResourceExhausted(format!(
                    "the server's disk is nearly full: {free} bytes free, an upload of {size} bytes would leave less \
                     than the reserve of {reserve} ({keep} bytes; server setting disk_reserve); \
                     uploads are refused until space is freed, appends still work"
                )));
            }
        }
        acc.pending_disk += size;
        *acc.pending.entry(key).or_default() += charged;
        Ok(Reservation {
            uploads: Arc::clone(self),
            key,
            digest,
            size,
            charged,
        })
    }
}

/// Free (available to unprivileged writers) and total bytes of the
/// filesystem holding `path`.
#[allow(clippy::useless_conversion)] // reason: c_ulong and fsblkcnt_t are u64 on 64-bit Linux only
pub fn free_space(path: &Path) -> Result<(u64, u64), LedgerError> {
    let st = nix::sys::statvfs::statvfs(path)
        .map_err(|e| LedgerError::io(path, std::io::Error::from(e)))?;
    let frag = u64::from(st.fragment_size());
    let (avail, blocks) = (u64::from(st.blocks_available()), u64::from(st.blocks()));
    Ok((avail.saturating_mul(frag), blocks.saturating_mul(frag)))
}

/// Room held for one upload in flight.
#[derive(Debug)]
pub struct Reservation {
    uploads: Arc<Uploads>,
    key: [u8; 32],
    digest: BlobDigest,
    size: u64,
    charged: u64,
}

impl Reservation {
    /// The digest and size this reservation is for.
    #[must_use]
    pub fn target(&self) -> (BlobDigest, u64) {
        (self.digest, self.size)
    }

    /// The content is stored: charge it to the key unless it was already
    /// there, and record that durably (a failure to record is logged; the
    /// upload itself succeeded).
    pub fn commit(self, already_present: bool) {
        if already_present || self.charged == 0 {
            return;
        }
        let line = UsageLine {
            key: hex::encode(self.key),
            sha256: hex::encode(self.digest),
            size: self.size,
        };
        {
            let mut acc = lock(&self.uploads.accounts);
            acc.insert(self.digest, self.key, self.size);
        }
        let write = || -> std::io::Result<()> {
            self.uploads
                .ensure_dir()
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.uploads.file)?;
            // Invariant: a struct of strings and a number serialises.
            let mut text = serde_json::to_string(&line).expect("usage line serialises");
            text.push('\n');
            f.write_all(text.as_bytes())?;
            f.sync_data()
        };
        if let Err(e) = write() {
            tracing::warn!(
                file = %self.uploads.file.display(),
                "cannot record upload usage (the quota under-counts until restart): {e}"
            );
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut acc = lock(&self.uploads.accounts);
        acc.pending_disk = acc.pending_disk.saturating_sub(self.size);
        if let Some(p) = acc.pending.get_mut(&self.key) {
            *p = p.saturating_sub(self.charged);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_reserves_parse() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
        assert_eq!(parse_bytes("1 GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("2k"), Ok(2048));
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("-1").is_err());
        assert_eq!(DiskReserve::parse("5%"), Ok(DiskReserve::Percent(5)));
        assert_eq!(DiskReserve::parse("1MiB"), Ok(DiskReserve::Bytes(1 << 20)));
        assert!(DiskReserve::parse("101%").is_err());
        assert_eq!(DiskReserve::Percent(5).bytes(1000), 50);
    }

    #[test]
    fn upload_message_layout() {
        let m = upload_message(&[7u8; 32], 0x0102);
        assert_eq!(m.len(), 17 + 32 + 8);
        assert_eq!(&m[..17], b"docket/v1/upload\0");
        assert_eq!(&m[17..49], &[7u8; 32]);
        assert_eq!(&m[49..], &[0, 0, 0, 0, 0, 0, 1, 2]);
    }
}
