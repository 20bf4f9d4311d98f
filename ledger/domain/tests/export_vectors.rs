//! The bundle test vectors in `tests/vectors/bundle/`: a small valid bundle
//! and tampered variants, each with the finding it must produce
//! (`cases.json`).
//!
//! The vectors are deterministic (fixed keys and times, Ed25519 is
//! deterministic), so this test both regenerates them in memory and checks
//! the stored copies byte for byte, then audits every stored case.
//! Regenerate after a deliberate format change with
//! `DOCKET_REGEN_VECTORS=1 cargo test -p docket-domain --test export_vectors`.

mod export_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use docket_domain::Statement;
use docket_domain::checkpoint::{self, Checkpoint, NoteVerifier};
use docket_domain::export::format::{
    self, CHECKPOINT, EVENTS, MANIFEST, PROOFS, ProofsFile, SUMMARY, VKEY,
};
use docket_domain::export::{ExportOptions, LogSource, MemoryLog};
use docket_domain::keys::Role;
use export_common::{audit_path, build, key, records, reseal, set_records};
use serde::{Deserialize, Serialize};

type Files = BTreeMap<String, Vec<u8>>;

const ORIGIN: &str = "vectors.docket/bundle";
const T0: u64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Case {
    /// Directory under tests/vectors/bundle/.
    dir: String,
    /// What was done to the valid bundle.
    mutation: String,
    /// Exit code `docket audit --trusted-key trusted.vkey` must return.
    exit_code: u8,
    /// Findings (kind, sequence number when it names one) that must appear.
    findings: Vec<Expected>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Expected {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    file: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/bundle")
}

/// The log: genesis, a submitter and a verifier, six notes, two commits.
fn log() -> MemoryLog {
    let admin = key(2);
    let mut log = MemoryLog::genesis(ORIGIN, key(1), &admin, T0).unwrap();
    let sub = key(3);
    let ver = key(4);
    log.register(&admin, &sub, &[Role::Submitter], T0 + 1_000)
        .unwrap();
    log.register(&admin, &ver, &[Role::Verifier], T0 + 2_000)
        .unwrap();
    log.commit();
    for i in 0..6u64 {
        let author = if i % 2 == 0 { &sub } else { &ver };
        let payload = format!("{{\"note\":{i}}}").into_bytes();
        log.append(
            Statement::sign("x-note", payload, author),
            T0 + 10_000 + i * 1_000,
        )
        .unwrap();
        if i == 2 {
            log.commit();
        }
    }
    log.commit();
    log
}

fn edit_json<T: Serialize + for<'a> Deserialize<'a>>(
    f: &mut Files,
    name: &str,
    edit: impl FnOnce(&mut T),
) {
    let mut v: T = serde_json::from_slice(&f[name]).unwrap();
    edit(&mut v);
    f.insert(name.into(), serde_json::to_vec(&v).unwrap());
}

fn offset_of(f: &Files, index: usize) -> usize {
    records(f)[..index]
        .iter()
        .map(|r| r.len() + 4)
        .sum::<usize>()
        + 4
}

/// Every vector: (case, files).
fn generate() -> (Files, Vec<(Case, Files)>) {
    let log = log();
    let valid = build(&log, &ExportOptions::default());
    let expect = |kind: &str, seq: Option<u64>, file: &str| Expected {
        kind: kind.into(),
        seq,
        file: file.into(),
    };
    let mut out: Vec<(Case, Files)> = Vec::new();
    let mut add = |dir: &str,
                   mutation: &str,
                   exit_code: u8,
                   findings: Vec<Expected>,
                   resealed: bool,
                   f: &dyn Fn(&mut Files)| {
        let mut files = valid.clone();
        f(&mut files);
        if resealed {
            reseal(&mut files);
        }
        out.push((
            Case {
                dir: format!("tampered/{dir}"),
                mutation: mutation.into(),
                exit_code,
                findings,
            },
            files,
        ));
    };
    add(
        "payload-byte-flipped",
        "one byte of event 5's payload flipped; manifest resealed",
        5,
        vec![expect("signature", Some(5), EVENTS)],
        true,
        &|f| {
            let at = offset_of(f, 5) + 104;
            f.get_mut(EVENTS).unwrap()[at] ^= 1;
        },
    );
    add(
        "prev-hash-altered",
        "event 6's prev_hash altered; manifest resealed",
        5,
        vec![
            expect("chain", Some(6), EVENTS),
            expect("root", None, EVENTS),
        ],
        true,
        &|f| {
            let at = offset_of(f, 6) + 17;
            f.get_mut(EVENTS).unwrap()[at] ^= 0x80;
        },
    );
    add(
        "events-reordered",
        "records 3 and 4 of events.bin swapped; manifest resealed",
        5,
        vec![expect("order", Some(3), EVENTS)],
        true,
        &|f| {
            let mut r = records(f);
            r.swap(3, 4);
            set_records(f, &r);
        },
    );
    add(
        "events-truncated",
        "the last 7 bytes of events.bin cut off; manifest resealed",
        5,
        vec![
            expect("malformed", None, EVENTS),
            expect("missing_proof", Some(7), PROOFS),
        ],
        true,
        &|f| {
            let n = f[EVENTS].len();
            f.get_mut(EVENTS).unwrap().truncate(n - 7);
        },
    );
    add(
        "file-edited",
        "summary.json edited without updating the manifest",
        5,
        vec![expect("digest", None, SUMMARY)],
        false,
        &|f| f.get_mut(SUMMARY).unwrap().push(b' '),
    );
    add(
        "proofs-dropped",
        "proofs.json deleted (still listed in the manifest)",
        4,
        vec![expect("missing_file", None, PROOFS)],
        false,
        &|f| {
            f.remove(PROOFS);
        },
    );
    add(
        "proof-altered",
        "the first hash of the proof of event 0 altered; manifest resealed",
        5,
        vec![expect("inclusion", Some(0), PROOFS)],
        true,
        &|f| edit_json::<ProofsFile>(f, PROOFS, |p| p.inclusion[0].path[0] = "00".repeat(32)),
    );
    add(
        "key-substituted",
        "verifier.vkey replaced by another key under the same name; manifest resealed",
        5,
        vec![expect("key_mismatch", None, VKEY)],
        true,
        &|f| {
            let other = checkpoint::verifier_key(ORIGIN, &key(66).verifying_key());
            f.insert(VKEY.into(), format!("{other}\n").into_bytes());
        },
    );
    add(
        "checkpoint-forged",
        "checkpoint.note re-signed over another root by another key, verifier.vkey replaced to match; manifest resealed",
        5,
        vec![
            expect("checkpoint_signature", None, CHECKPOINT),
            expect("key_mismatch", None, VKEY),
        ],
        true,
        &|f| {
            let s = String::from_utf8(f[CHECKPOINT].clone()).unwrap();
            let mut cp = Checkpoint::parse_body(&s[..=s.find("\n\n").unwrap()]).unwrap();
            cp.root = [0x42; 32];
            let forger = key(66);
            f.insert(
                CHECKPOINT.into(),
                checkpoint::sign_note(&cp.body(), ORIGIN, &forger).into_bytes(),
            );
            let vkey = checkpoint::verifier_key(ORIGIN, &forger.verifying_key());
            f.insert(VKEY.into(), format!("{vkey}\n").into_bytes());
        },
    );
    add(
        "summary-altered",
        "summary.json says 5 x-note events instead of 6; manifest resealed",
        3,
        vec![expect("summary_mismatch", None, SUMMARY)],
        true,
        &|f| edit_json::<serde_json::Value>(f, SUMMARY, |v| v["kinds"]["x-note"] = 5.into()),
    );
    add(
        "external-ref",
        "the manifest lists ../outside.json and https://example.org/x",
        2,
        vec![expect("external_ref", None, "../outside.json")],
        false,
        &|f| {
            edit_json::<format::Manifest>(f, MANIFEST, |m| {
                let e = m.files[SUMMARY].clone();
                m.files.insert("../outside.json".into(), e.clone());
                m.files.insert("https://example.org/x".into(), e);
            })
        },
    );
    (valid, out)
}

fn write_dir(dir: &Path, files: &Files) {
    let _ = std::fs::remove_dir_all(dir);
    export_common::write(files, &{
        std::fs::create_dir_all(dir).unwrap();
        dir.to_path_buf()
    });
}

fn read_dir(dir: &Path) -> Files {
    let mut out = Files::new();
    fn walk(base: &Path, rel: &str, out: &mut Files) {
        let here = if rel.is_empty() {
            base.to_path_buf()
        } else {
            base.join(rel)
        };
        for e in std::fs::read_dir(here).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type().unwrap().is_dir() {
                walk(base, &r, out);
            } else {
                out.insert(r, std::fs::read(e.path()).unwrap());
            }
        }
    }
    walk(dir, "", &mut out);
    out
}

#[test]
fn stored_vectors_match_the_generator_and_audit_as_documented() {
    let (valid, cases) = generate();
    let trusted = format!("{}\n", log().verifier_key());
    let root = root();
    if std::env::var_os("DOCKET_REGEN_VECTORS").is_some() {
        write_dir(&root.join("valid"), &valid);
        let _ = std::fs::remove_dir_all(root.join("tampered"));
        for (case, files) in &cases {
            write_dir(&root.join(&case.dir), files);
        }
        let list: Vec<&Case> = cases.iter().map(|(c, _)| c).collect();
        std::fs::write(
            root.join("cases.json"),
            serde_json::to_string_pretty(&list).unwrap() + "\n",
        )
        .unwrap();
        std::fs::write(root.join("trusted.vkey"), &trusted).unwrap();
    }
    // The stored vectors are exactly what the generator makes.
    assert_eq!(
        read_dir(&root.join("valid")),
        valid,
        "valid/ differs from the generator: regenerate"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("trusted.vkey")).unwrap(),
        trusted
    );
    let stored: Vec<Case> =
        serde_json::from_slice(&std::fs::read(root.join("cases.json")).unwrap()).unwrap();
    assert!(
        stored.iter().eq(cases.iter().map(|(c, _)| c)),
        "cases.json differs from the generator: regenerate"
    );
    for (case, files) in &cases {
        assert_eq!(
            &read_dir(&root.join(&case.dir)),
            files,
            "{} differs from the generator",
            case.dir
        );
    }
    // Audit the stored copies.
    let key = NoteVerifier::parse(trusted.trim()).unwrap();
    let r = audit_path(&root.join("valid"), Some(key.clone()), false);
    export_common::assert_clean(&r);
    for case in &stored {
        let r = audit_path(&root.join(&case.dir), Some(key.clone()), false);
        assert_eq!(
            r.exit_code(),
            case.exit_code,
            "{}: {:#?}",
            case.dir,
            r.findings
        );
        for e in &case.findings {
            let found = r.errors().any(|f| {
                serde_json::to_value(f.kind).unwrap() == serde_json::json!(e.kind)
                    && f.seq == e.seq.or(if e.seq.is_none() { f.seq } else { None })
                    && f.file.as_deref() == Some(e.file.as_str())
            });
            assert!(found, "{}: expected {e:?} in {:#?}", case.dir, r.findings);
        }
    }
    let _ = LogSource::len(&log());
}
