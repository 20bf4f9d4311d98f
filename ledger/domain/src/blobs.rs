//! The evidence blob store: content-addressed files under `DATA/blobs/`.
//!
//! Layout: `DATA/blobs/<aa>/<sha256 hex>` where `<aa>` is the first two hex
//! digits of the digest; temporary files live in `DATA/blobs/tmp/`.
//!
//! - **Atomic**: content is streamed into a temp file, fsynced, renamed onto
//!   its final name (replacing any previous copy, so a damaged copy is healed
//!   by the next upload of the same content) and the directory is fsynced. A
//!   crash leaves either no blob or a complete one, never a partial one.
//! - **Streamed**: [`BlobStore::put_stream`] hashes while writing in fixed
//!   64 KiB chunks; a blob is never held in memory whole.
//! - **Deduplicated** by digest: the same content is one file.
//! - **Checked**: the digest (and size) are compared with the expected ones on
//!   write, and [`BlobStore::open_verified`] re-hashes on read, failing at the
//!   end of the stream when the content no longer matches its name.
//!
//! The log keeps only digests, so deleting a blob ([`BlobStore::delete`], used
//! by retention) never breaks verification of the log.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

use crate::error::{LedgerError, Result};
use crate::store::sync_dir;

/// A SHA-256 digest (raw bytes).
pub type BlobDigest = [u8; 32];

const CHUNK: usize = 64 << 10;

/// Parses a 64-hex-digit SHA-256 digest.
pub fn parse_digest(hex_digest: &str) -> Result<BlobDigest> {
    let bytes = hex::decode(hex_digest.trim()).map_err(|e| LedgerError::Invalid {
        what: "sha256".into(),
        violations: vec![format!("{hex_digest:?} is not hex: {e}")],
    })?;
    bytes.try_into().map_err(|_| LedgerError::Invalid {
        what: "sha256".into(),
        violations: vec![format!("{hex_digest:?} is not 32 bytes (64 hex digits)")],
    })
}

/// What [`BlobStore::put_stream`] stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PutOutcome {
    /// SHA-256 of the content.
    pub digest: BlobDigest,
    /// Size in bytes.
    pub size: u64,
    /// A blob with this digest was already present (deduplicated).
    pub already_present: bool,
}

impl PutOutcome {
    /// The digest as lower-case hex.
    pub fn digest_hex(&self) -> String {
        hex::encode(self.digest)
    }
}

/// The content-addressed blob store under `DATA/blobs/`.
#[derive(Debug)]
pub struct BlobStore {
    root: PathBuf,
    tmp: PathBuf,
    counter: AtomicU64,
}

impl BlobStore {
    /// Opens (creating if needed) the blob store of the ledger in `data_dir`
    /// (`data_dir/blobs`). Leftover temp files of a crashed upload are removed.
    pub fn open(data_dir: &Path) -> Result<Self> {
        Self::open_at(&data_dir.join("blobs"))
    }

    /// Opens the blob store of the ledger in `data_dir` only to read it
    /// (the full check, `recover`, an export's source): nothing is created
    /// or removed, so that it works on a data directory kept as evidence
    /// (or one the caller cannot write) and never removes the temp file of
    /// an upload a running server has in flight. Only reads may be used.
    pub fn open_to_read(data_dir: &Path) -> Self {
        let root = data_dir.join("blobs");
        Self {
            tmp: root.join("tmp"),
            root,
            counter: AtomicU64::new(0),
        }
    }

    /// Opens a blob store rooted exactly at `root`.
    pub fn open_at(root: &Path) -> Result<Self> {
        let tmp = root.join("tmp");
        fs::create_dir_all(&tmp).map_err(|e| LedgerError::io(&tmp, e))?;
        if let Ok(entries) = fs::read_dir(&tmp) {
            for entry in entries.flatten() {
                // Best effort: a temp file is never referenced by anything.
                let _ = fs::remove_file(entry.path());
            }
        }
        Ok(Self {
            root: root.to_path_buf(),
            tmp,
            counter: AtomicU64::new(0),
        })
    }

    /// The root directory (`DATA/blobs`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob with `digest` lives.
    pub fn path_of(&self, digest: &BlobDigest) -> PathBuf {
        let hex = hex::encode(digest);
        self.root.join(&hex[..2]).join(hex)
    }

    /// Size of the stored blob, or None when absent.
    pub fn size(&self, digest: &BlobDigest) -> Result<Option<u64>> {
        let path = self.path_of(digest);
        match fs::metadata(&path) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(LedgerError::io(path, e)),
        }
    }

    /// Whether a blob with `digest` is stored.
    pub fn contains(&self, digest: &BlobDigest) -> Result<bool> {
        Ok(self.size(digest)?.is_some())
    }

    /// Streams `reader` into the store, hashing while writing, and returns the
    /// digest and size. Refuses (storing nothing) content larger than
    /// `max_size` (`ResourceExhausted`) or whose digest or size differs from
    /// the expected ones (`Invalid`).
    pub fn put_stream<R: Read>(
        &self,
        mut reader: R,
        expected_sha256: Option<&BlobDigest>,
        expected_size: Option<u64>,
        max_size: u64,
    ) -> Result<PutOutcome> {
        if let Some(size) = expected_size
            && size > max_size
        {
            return Err(LedgerError::ResourceExhausted(format!(
                "blob of {size} bytes exceeds the limit of {max_size} bytes"
            )));
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut nonce = [0u8; 8];
        // A predictable nonce is harmless: the pid and counter already make
        // the name unique within this process.
        let _ = getrandom::fill(&mut nonce);
        let tmp_path = self.tmp.join(format!(
            "{}-{n}-{}.tmp",
            std::process::id(),
            hex::encode(nonce)
        ));
        let result = self.write_temp(&mut reader, &tmp_path, expected_size, max_size);
        let (digest, size) = match result {
            Ok(v) => v,
            Err(e) => {
                let _ = fs::remove_file(&tmp_path);
                return Err(e);
            }
        };
        let mut violations = Vec::new();
        if let Some(want) = expected_sha256
            && *want != digest
        {
            violations.push(format!(
                "content SHA-256 is {} but {} was expected",
                hex::encode(digest),
                hex::encode(want)
            ));
        }
        if let Some(want) = expected_size
            && want != size
        {
            violations.push(format!("content is {size} bytes but {want} were expected"));
        }
        if !violations.is_empty() {
            let _ = fs::remove_file(&tmp_path);
            return Err(LedgerError::Invalid {
                what: "evidence content".into(),
                violations,
            });
        }
        let final_path = self.path_of(&digest);
        // Invariant: path_of always yields `root/<aa>/<hex>`, which has a parent.
        let shard = final_path
            .parent()
            .expect("blob path has a shard directory");
        let already_present = self.size(&digest)? == Some(size);
        if !shard.exists() {
            fs::create_dir_all(shard).map_err(|e| LedgerError::io(shard, e))?;
            sync_dir(&self.root)?;
        }
        if let Err(e) = fs::rename(&tmp_path, &final_path) {
            let _ = fs::remove_file(&tmp_path);
            return Err(LedgerError::io(&final_path, e));
        }
        sync_dir(shard)?;
        Ok(PutOutcome {
            digest,
            size,
            already_present,
        })
    }

    fn write_temp<R: Read>(
        &self,
        reader: &mut R,
        tmp_path: &Path,
        expected_size: Option<u64>,
        max_size: u64,
    ) -> Result<(BlobDigest, u64)> {
        let mut file = File::create(tmp_path).map_err(|e| LedgerError::io(tmp_path, e))?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(LedgerError::io("evidence upload stream", e)),
            };
            size += n as u64;
            if size > max_size {
                return Err(LedgerError::ResourceExhausted(format!(
                    "blob exceeds the limit of {max_size} bytes"
                )));
            }
            if let Some(want) = expected_size
                && size > want
            {
                return Err(LedgerError::Invalid {
                    what: "evidence content".into(),
                    violations: vec![format!("content is longer than the expected {want} bytes")],
                });
            }
            hasher.update(&buf[..n]);
            file.write_all(&buf[..n])
                .map_err(|e| LedgerError::io(tmp_path, e))?;
        }
        file.sync_all().map_err(|e| LedgerError::io(tmp_path, e))?;
        Ok((hasher.finalize().into(), size))
    }

    /// Stores `bytes` (a convenience over [`BlobStore::put_stream`]).
    pub fn put_bytes(&self, bytes: &[u8], max_size: u64) -> Result<PutOutcome> {
        self.put_stream(bytes, None, None, max_size)
    }

    /// Opens a stored blob for reading. The reader re-hashes the content and
    /// fails (`InvalidData`) at the end of the stream when it does not match
    /// `digest`; callers must read to the end before trusting the content.
    pub fn open_verified(&self, digest: &BlobDigest) -> Result<VerifiedReader> {
        let path = self.path_of(digest);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(LedgerError::NotFound {
                    what: format!("blob {}", hex::encode(digest)),
                });
            }
            Err(e) => return Err(LedgerError::io(path, e)),
        };
        let size = file
            .metadata()
            .map_err(|e| LedgerError::io(&path, e))?
            .len();
        Ok(VerifiedReader {
            file,
            hasher: Sha256::new(),
            expected: *digest,
            size,
            done: false,
        })
    }

    /// Reads a whole blob (at most `max_size` bytes), checking its digest.
    /// A mismatch is `Corrupt`.
    pub fn read_verified(&self, digest: &BlobDigest, max_size: u64) -> Result<Vec<u8>> {
        let mut reader = self.open_verified(digest)?;
        if reader.size() > max_size {
            return Err(LedgerError::ResourceExhausted(format!(
                "blob {} is {} bytes, over the {max_size}-byte read limit",
                hex::encode(digest),
                reader.size()
            )));
        }
        let mut out = Vec::with_capacity(usize::try_from(reader.size()).unwrap_or(0));
        reader.read_to_end(&mut out).map_err(|e| {
            if e.kind() == io::ErrorKind::InvalidData {
                LedgerError::corrupt(format!("blob {}", hex::encode(digest)), e.to_string())
            } else {
                LedgerError::io(self.path_of(digest), e)
            }
        })?;
        Ok(out)
    }

    /// Copies a blob into `out`, checking its digest while streaming.
    pub fn copy_verified<W: Write>(&self, digest: &BlobDigest, out: &mut W) -> Result<u64> {
        let mut reader = self.open_verified(digest)?;
        io::copy(&mut reader, out).map_err(|e| {
            if e.kind() == io::ErrorKind::InvalidData {
                LedgerError::corrupt(format!("blob {}", hex::encode(digest)), e.to_string())
            } else {
                LedgerError::io(self.path_of(digest), e)
            }
        })
    }

    /// Deletes a blob (durably). Returns whether it existed.
    pub fn delete(&self, digest: &BlobDigest) -> Result<bool> {
        let path = self.path_of(digest);
        match fs::remove_file(&path) {
            Ok(()) => {
                if let Some(shard) = path.parent() {
                    sync_dir(shard)?;
                }
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(LedgerError::io(path, e)),
        }
    }

    /// Digests of every stored blob (for audits and retention sweeps).
    pub fn list(&self) -> Result<Vec<BlobDigest>> {
        let mut out = Vec::new();
        let entries = fs::read_dir(&self.root).map_err(|e| LedgerError::io(&self.root, e))?;
        for shard in entries {
            let shard = shard.map_err(|e| LedgerError::io(&self.root, e))?;
            let name = shard.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.len() != 2 || !shard.path().is_dir() {
                continue;
            }
            let files = fs::read_dir(shard.path()).map_err(|e| LedgerError::io(shard.path(), e))?;
            for f in files {
                let f = f.map_err(|e| LedgerError::io(shard.path(), e))?;
                if let Some(d) = f.file_name().to_str().and_then(|s| parse_digest(s).ok()) {
                    out.push(d);
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }
}

/// A reader over a stored blob that checks its digest at the end.
#[derive(Debug)]
pub struct VerifiedReader {
    file: File,
    hasher: Sha256,
    expected: BlobDigest,
    size: u64,
    done: bool,
}

impl VerifiedReader {
    /// Size of the stored file in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Read for VerifiedReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        let n = self.file.read(buf)?;
        if n == 0 {
            self.done = true;
            let got: BlobDigest = std::mem::take(&mut self.hasher).finalize().into();
            if got != self.expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "content hashes to {}, not its name {}",
                        hex::encode(got),
                        hex::encode(self.expected)
                    ),
                ));
            }
            return Ok(0);
        }
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Chunky {
        left: u64,
    }
    impl Read for Chunky {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = (buf.len() as u64).min(self.left).min(7777);
            for (i, b) in buf[..n as usize].iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
            self.left -= n;
            Ok(n as usize)
        }
    }

    #[test]
    fn put_dedup_read_delete() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let a = store.put_bytes(b"hello", 1 << 20).unwrap();
        assert!(!a.already_present);
        assert_eq!(a.digest_hex(), sha(b"hello"));
        let b = store
            .put_stream(&b"hello"[..], Some(&a.digest), Some(5), 1 << 20)
            .unwrap();
        assert!(b.already_present);
        assert_eq!(store.read_verified(&a.digest, 100).unwrap(), b"hello");
        assert_eq!(store.list().unwrap(), vec![a.digest]);
        assert!(store.delete(&a.digest).unwrap());
        assert!(!store.delete(&a.digest).unwrap());
        assert!(matches!(
            store.read_verified(&a.digest, 100),
            Err(LedgerError::NotFound { .. })
        ));
        assert_eq!(
            fs::read_dir(dir.path().join("blobs/tmp")).unwrap().count(),
            0
        );
    }

    fn sha(b: &[u8]) -> String {
        hex::encode(Sha256::digest(b))
    }

    #[test]
    fn mismatches_and_limits_store_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let wrong = [0u8; 32];
        let e = store
            .put_stream(&b"abc"[..], Some(&wrong), Some(4), 1 << 20)
            .unwrap_err();
        match e {
            LedgerError::Invalid { violations, .. } => assert_eq!(violations.len(), 2),
            other => panic!("{other}"),
        }
        let e = store.put_stream(&b"abcdef"[..], None, None, 3).unwrap_err();
        assert!(matches!(e, LedgerError::ResourceExhausted(_)), "{e}");
        let e = store
            .put_stream(&b"abc"[..], None, Some(10), 3)
            .unwrap_err();
        assert!(matches!(e, LedgerError::ResourceExhausted(_)), "{e}");
        assert!(store.list().unwrap().is_empty());
        assert_eq!(
            fs::read_dir(dir.path().join("blobs/tmp")).unwrap().count(),
            0
        );
    }

    #[test]
    fn large_stream_and_tamper_detection() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let size = 3 * CHUNK as u64 + 123;
        let out = store
            .put_stream(Chunky { left: size }, None, Some(size), u64::MAX)
            .unwrap();
        assert_eq!(out.size, size);
        let mut sink = Vec::new();
        assert_eq!(store.copy_verified(&out.digest, &mut sink).unwrap(), size);
        assert_eq!(hex::encode(Sha256::digest(&sink)), out.digest_hex());
        // Tamper: flip one byte in place.
        let path = store.path_of(&out.digest);
        let mut bytes = fs::read(&path).unwrap();
        bytes[1000] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let e = store.read_verified(&out.digest, u64::MAX).unwrap_err();
        assert!(matches!(e, LedgerError::Corrupt { .. }), "{e}");
        // Uploading the same content again heals the damaged copy.
        let again = store
            .put_stream(
                Chunky { left: size },
                Some(&out.digest),
                Some(size),
                u64::MAX,
            )
            .unwrap();
        assert!(again.already_present);
        assert_eq!(
            store.read_verified(&out.digest, u64::MAX).unwrap().len() as u64,
            size
        );
    }
}
