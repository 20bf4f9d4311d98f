//! Helpers shared by the export tests (included with `mod export_common;`).
#![allow(
    dead_code,
    clippy::new_without_default,
    reason = "each test binary includes this module and uses a part of it"
)]

use std::collections::BTreeMap;
use std::path::Path;

use docket_domain::Statement;
use docket_domain::checkpoint::NoteVerifier;
use docket_domain::export::format::{self, FileEntry, MANIFEST, Manifest};
use docket_domain::export::{self, AuditOptions, AuditReport, ExportOptions, LogSource, MemoryLog};
use docket_domain::keys::Role;
use ed25519_dalek::SigningKey;
use sha2::{Digest as _, Sha256};

pub const T0: u64 = 1_700_000_000_000;
pub const ORIGIN: &str = "docket.test/bundle";

pub fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

/// A deterministic log: genesis, four keys, notes by each, a revocation.
pub struct World {
    pub log: MemoryLog,
    pub admin: SigningKey,
    pub submitter: SigningKey,
    pub verifier: SigningKey,
    pub custodian: SigningKey,
    pub retired: SigningKey,
}

impl World {
    pub fn new() -> Self {
        let admin = key(2);
        let mut log = MemoryLog::genesis(ORIGIN, key(1), &admin, T0).unwrap();
        let submitter = key(3);
        let verifier = key(4);
        let custodian = key(5);
        let retired = key(6);
        let mut t = T0;
        for (k, roles) in [
            (&submitter, &[Role::Submitter][..]),
            (&verifier, &[Role::Verifier][..]),
            (&custodian, &[Role::Custodian][..]),
            (&retired, &[Role::Submitter][..]),
        ] {
            t += 10;
            log.register(&admin, k, roles, t).unwrap();
        }
        log.commit();
        Self {
            log,
            admin,
            submitter,
            verifier,
            custodian,
            retired,
        }
    }

    /// Appends `n` `x-note` events round-robin by submitter, verifier and
    /// custodian, committing every `batch`.
    pub fn notes(&mut self, n: u64, batch: u64) {
        let authors = [
            self.submitter.clone(),
            self.verifier.clone(),
            self.custodian.clone(),
        ];
        for i in 0..n {
            let len = self.log.len();
            let a = &authors[usize::try_from(i % 3).unwrap()];
            let payload = format!("{{\"note\":{len}}}").into_bytes();
            self.log
                .append(Statement::sign("x-note", payload, a), T0 + 1000 + len * 7)
                .unwrap();
            if (i + 1) % batch == 0 {
                self.log.commit();
            }
        }
        self.log.commit();
    }

    /// The standard small log of the tests: 40 notes, the `retired` key
    /// writes once and is revoked, 10 more notes.
    pub fn standard() -> Self {
        let mut w = Self::new();
        w.notes(40, 8);
        let p = b"{\"note\":\"retired\"}".to_vec();
        w.log
            .append(Statement::sign("x-note", p, &w.retired), T0 + 5000)
            .unwrap();
        w.log
            .revoke(&w.admin.clone(), &w.retired.clone(), T0 + 5001)
            .unwrap();
        w.log.commit();
        w.notes(10, 4);
        w
    }

    pub fn trusted(&self) -> NoteVerifier {
        self.log.note_verifier().unwrap()
    }
}

/// Builds a bundle in memory.
pub fn build(src: &dyn LogSource, opts: &ExportOptions) -> BTreeMap<String, Vec<u8>> {
    export::writer::build(src, opts).unwrap().0
}

/// Writes bundle files into `dir` (created).
pub fn write(files: &BTreeMap<String, Vec<u8>>, dir: &Path) {
    for (rel, bytes) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// Audits bundle files (written to a temp directory).
pub fn audit(files: &BTreeMap<String, Vec<u8>>, trusted: Option<NoteVerifier>) -> AuditReport {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("b");
    std::fs::create_dir(&root).unwrap();
    write(files, &root);
    audit_path(&root, trusted, false)
}

pub fn audit_path(
    path: &Path,
    trusted: Option<NoteVerifier>,
    allow_external_ref: bool,
) -> AuditReport {
    export::audit(
        path,
        &AuditOptions {
            trusted_key: trusted,
            allow_external_ref,
        },
        &mut |_, _, _| {},
    )
}

/// Recomputes the manifest's digests after a deliberate mutation, so that
/// the finding under test is not hidden behind a digest mismatch.
pub fn reseal(files: &mut BTreeMap<String, Vec<u8>>) {
    let mut m: Manifest = serde_json::from_slice(&files[MANIFEST]).unwrap();
    m.files = files
        .iter()
        .filter(|(k, _)| k.as_str() != MANIFEST)
        .map(|(k, v)| {
            (
                k.clone(),
                FileEntry {
                    sha256: hex::encode(Sha256::digest(v)),
                    size: v.len() as u64,
                },
            )
        })
        .collect();
    files.insert(MANIFEST.into(), serde_json::to_vec_pretty(&m).unwrap());
}

/// The records of `events.bin`.
pub fn records(files: &BTreeMap<String, Vec<u8>>) -> Vec<Vec<u8>> {
    format::split_event_records(&files[format::EVENTS])
        .unwrap()
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect()
}

/// Replaces `events.bin` with these records.
pub fn set_records(files: &mut BTreeMap<String, Vec<u8>>, records: &[Vec<u8>]) {
    let mut out = Vec::new();
    for r in records {
        format::push_event_record(&mut out, r);
    }
    files.insert(format::EVENTS.into(), out);
}

/// Asserts a clean audit (no error findings).
pub fn assert_clean(r: &AuditReport) {
    let errors: Vec<String> = r.errors().map(ToString::to_string).collect();
    assert!(
        errors.is_empty(),
        "expected a clean audit, got:\n{}",
        errors.join("\n")
    );
    assert_eq!(r.exit_code(), 0);
}
