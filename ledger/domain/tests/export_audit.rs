//! Export then audit: clean bundles of every shape, and every kind of
//! tampering caught with the right finding and exit code.

mod export_common;

use std::collections::BTreeMap;

use docket_domain::Statement;
use docket_domain::checkpoint::{self, Checkpoint};
use docket_domain::export::format::{
    self, CHECKPOINT, CONSISTENCY, EVENTS, MANIFEST, PROOFS, ProofsFile, SINCE, SUMMARY, VKEY,
};
use docket_domain::export::{AsOf, ExportOptions, FindingKind, LogSource, MemoryLog};
use docket_domain::keys::Role;
use export_common::*;

type Files = BTreeMap<String, Vec<u8>>;

fn standard_bundle() -> (World, Files) {
    let w = World::standard();
    let files = build(&w.log, &ExportOptions::default());
    (w, files)
}

#[test]
fn full_export_audits_clean_with_and_without_a_trusted_key() {
    let (w, files) = standard_bundle();
    let r = audit(&files, Some(w.trusted()));
    assert_clean(&r);
    assert!(r.whole_tree && r.from_genesis);
    assert_eq!(r.events, w.log.len());
    assert_eq!(r.signatures_checked, w.log.len());
    assert!(!r.has(FindingKind::SelfAssertedKey));
    let r = audit(&files, None);
    assert_clean(&r);
    assert!(
        r.has(FindingKind::SelfAssertedKey),
        "self-asserted key is a warning"
    );
}

#[test]
fn range_as_of_since_and_tar_exports_audit_clean() {
    let w = World::standard();
    let n = w.log.len();
    // A middle range: key context is added, each run proven at both ends.
    let files = build(
        &w.log,
        &ExportOptions {
            from: Some(20),
            to: Some(35),
            ..Default::default()
        },
    );
    let r = audit(&files, Some(w.trusted()));
    assert_clean(&r);
    assert!(!r.from_genesis);
    assert!(r.ranges.contains(&[20, 35]));
    assert_eq!(r.ranges[0][0], 0, "genesis is carried");
    // As of a sequence number that is not a commit boundary.
    let files = build(
        &w.log,
        &ExportOptions {
            as_of: Some(AsOf::Seq(13)),
            ..Default::default()
        },
    );
    let m: format::Manifest = serde_json::from_slice(&files[MANIFEST]).unwrap();
    assert!(m.tree_size >= 14 && m.tree_size < n);
    let r = audit(&files, Some(w.trusted()));
    assert_clean(&r);
    assert_eq!(r.ranges, vec![[0, 13]]);
    // As of a time.
    let files = build(
        &w.log,
        &ExportOptions {
            as_of: Some(AsOf::TimeMs(T0 + 1000 + 20 * 7)),
            ..Default::default()
        },
    );
    assert_clean(&audit(&files, Some(w.trusted())));
    // Since an earlier checkpoint.
    let (old, note) = w.log.checkpoint_covering(10).unwrap();
    let files = build(
        &w.log,
        &ExportOptions {
            since_note: Some(note),
            ..Default::default()
        },
    );
    assert!(files.contains_key(CONSISTENCY) && files.contains_key(SINCE));
    let r = audit(&files, Some(w.trusted()));
    assert_clean(&r);
    assert!(r.consistency_checked);
    assert!(r.ranges.iter().any(|r| r[0] == old.size && r[1] == n - 1));
    // Tar.
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("b.tar");
    docket_domain::export::export(&w.log, &ExportOptions::default(), &tar, true).unwrap();
    let r = audit_path(&tar, Some(w.trusted()), false);
    assert_clean(&r);
    assert_eq!(r.events, n);
    // Directory, and never over an existing path.
    let out = dir.path().join("d");
    docket_domain::export::export(&w.log, &ExportOptions::default(), &out, false).unwrap();
    assert_clean(&audit_path(&out, Some(w.trusted()), false));
    assert!(docket_domain::export::export(&w.log, &ExportOptions::default(), &out, false).is_err());
}

#[test]
fn a_run_of_one_event_without_its_proof_is_reported_once() {
    // Given a bundle of the single event 20 (a run a = b) with every proof dropped
    let w = World::standard();
    let mut files = build(
        &w.log,
        &ExportOptions {
            from: Some(20),
            to: Some(20),
            ..Default::default()
        },
    );
    edit_proofs(&mut files, |p| p.inclusion.clear());
    reseal(&mut files);
    // When it is audited
    let r = audit(&files, Some(w.trusted()));
    // Then each run end lacks a proof once, and the one-event run has one end
    assert!(r.ranges.contains(&[20, 20]), "ranges {:?}", r.ranges);
    let mut per_seq = BTreeMap::new();
    for f in r
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::MissingProof)
    {
        *per_seq.entry(f.seq).or_insert(0) += 1;
    }
    assert_eq!(per_seq.get(&Some(20)), Some(&1), "{:?}", r.findings);
    assert!(per_seq.values().all(|n| *n == 1), "{per_seq:?}");
}

#[test]
fn exports_are_deterministic() {
    let w = World::standard();
    let a = build(&w.log, &ExportOptions::default());
    let b = build(&w.log, &ExportOptions::default());
    assert_eq!(a, b);
    let ta = docket_domain::export::bundle::tar_bytes(&a).unwrap();
    assert_eq!(ta, docket_domain::export::bundle::tar_bytes(&b).unwrap());
}

#[test]
fn bad_requests_are_refused() {
    let w = World::standard();
    let n = w.log.len();
    for opts in [
        ExportOptions {
            from: Some(10),
            to: Some(5),
            ..Default::default()
        },
        ExportOptions {
            to: Some(n),
            ..Default::default()
        },
        ExportOptions {
            as_of: Some(AsOf::Seq(n)),
            ..Default::default()
        },
        ExportOptions {
            since_note: Some("not a note\n".into()),
            ..Default::default()
        },
    ] {
        assert!(
            docket_domain::export::writer::build(&w.log, &opts).is_err(),
            "{opts:?}"
        );
    }
    // A checkpoint of another log.
    let other = MemoryLog::genesis(ORIGIN, key(1), &key(42), T0).unwrap();
    let (_, note) = other.checkpoint_covering(1).unwrap();
    let opts = ExportOptions {
        since_note: Some(note),
        ..Default::default()
    };
    assert!(docket_domain::export::writer::build(&w.log, &opts).is_err());
}

/// One tamper case: mutate, optionally reseal the manifest, expect a
/// finding kind (at a sequence number) and an exit code.
struct Case {
    name: &'static str,
    mutate: fn(&mut Files, &World),
    reseal: bool,
    expect: FindingKind,
    seq: Option<u64>,
    exit: u8,
}

fn flip(bytes: &mut [u8], at: usize) {
    bytes[at] ^= 0x01;
}

fn record_offset(files: &Files, index: usize) -> usize {
    let recs = records(files);
    recs[..index].iter().map(|r| r.len() + 4).sum::<usize>() + 4
}

fn edit_proofs(files: &mut Files, f: impl FnOnce(&mut ProofsFile)) {
    let mut p: ProofsFile = serde_json::from_slice(&files[PROOFS]).unwrap();
    f(&mut p);
    files.insert(PROOFS.into(), serde_json::to_vec(&p).unwrap());
}

fn cases() -> Vec<Case> {
    vec![
        // --- manifest.json
        Case {
            name: "manifest dropped",
            mutate: |f, _| {
                f.remove(MANIFEST);
            },
            reseal: false,
            expect: FindingKind::MissingFile,
            seq: None,
            exit: 4,
        },
        Case {
            name: "manifest not JSON",
            mutate: |f, _| {
                f.insert(MANIFEST.into(), b"{not json".to_vec());
            },
            reseal: false,
            expect: FindingKind::Malformed,
            seq: None,
            exit: 5,
        },
        Case {
            name: "manifest of an unknown format",
            mutate: |f, _| {
                let s = String::from_utf8(f[MANIFEST].clone()).unwrap();
                f.insert(
                    MANIFEST.into(),
                    s.replace("docket.bundle/1", "docket.bundle/9").into_bytes(),
                );
            },
            reseal: false,
            expect: FindingKind::UnsupportedFormat,
            seq: None,
            exit: 2,
        },
        Case {
            name: "manifest digest of a file altered",
            mutate: |f, _| {
                let s = String::from_utf8(f[MANIFEST].clone()).unwrap();
                let m: format::Manifest = serde_json::from_str(&s).unwrap();
                let d = &m.files[PROOFS].sha256;
                f.insert(
                    MANIFEST.into(),
                    s.replace(d.as_str(), &"0".repeat(64)).into_bytes(),
                );
            },
            reseal: false,
            expect: FindingKind::Digest,
            seq: None,
            exit: 5,
        },
        Case {
            name: "manifest refers to an absolute path",
            mutate: |f, _| {
                let mut m: format::Manifest = serde_json::from_slice(&f[MANIFEST]).unwrap();
                let e = m.files.remove(SUMMARY).unwrap();
                m.files.insert("/etc/docket/summary.json".into(), e);
                f.insert(MANIFEST.into(), serde_json::to_vec(&m).unwrap());
            },
            reseal: false,
            expect: FindingKind::ExternalRef,
            seq: None,
            exit: 5, // summary.json is now unlisted (5) as well
        },
        Case {
            name: "manifest refers to a URL and a parent directory",
            mutate: |f, _| {
                let mut m: format::Manifest = serde_json::from_slice(&f[MANIFEST]).unwrap();
                let e = m.files[SUMMARY].clone();
                m.files.insert("https://example.org/blob".into(), e.clone());
                m.files.insert("../outside.json".into(), e);
                f.insert(MANIFEST.into(), serde_json::to_vec(&m).unwrap());
            },
            reseal: false,
            expect: FindingKind::ExternalRef,
            seq: None,
            exit: 2,
        },
        // --- dropped and added files
        Case {
            name: "proofs.json dropped",
            mutate: |f, _| {
                f.remove(PROOFS);
            },
            reseal: false,
            expect: FindingKind::MissingFile,
            seq: None,
            exit: 4,
        },
        Case {
            name: "events.bin dropped and unlisted",
            mutate: |f, _| {
                f.remove(EVENTS);
            },
            reseal: true,
            expect: FindingKind::MissingFile,
            seq: None,
            exit: 4,
        },
        Case {
            name: "an extra file",
            mutate: |f, _| {
                f.insert("notes.txt".into(), b"hello".to_vec());
            },
            reseal: false,
            expect: FindingKind::UnlistedFile,
            seq: None,
            exit: 5,
        },
        // --- checkpoint.note
        Case {
            name: "checkpoint root altered",
            mutate: |f, _| {
                let s = String::from_utf8(f[CHECKPOINT].clone()).unwrap();
                let mut lines: Vec<String> = s.split('\n').map(str::to_string).collect();
                lines[2] = checkpoint_root_b64(&[7u8; 32]);
                f.insert(CHECKPOINT.into(), lines.join("\n").into_bytes());
            },
            reseal: true,
            expect: FindingKind::CheckpointSignature,
            seq: None,
            exit: 5,
        },
        Case {
            name: "checkpoint forged with another key (trusted key given)",
            mutate: |f, w| forge_checkpoint(f, w),
            reseal: true,
            expect: FindingKind::CheckpointSignature,
            seq: None,
            exit: 5,
        },
        Case {
            name: "checkpoint truncated",
            mutate: |f, _| {
                let n = f[CHECKPOINT].len();
                f.get_mut(CHECKPOINT).unwrap().truncate(n / 2);
            },
            reseal: true,
            expect: FindingKind::Malformed,
            seq: None,
            exit: 5,
        },
        // --- verifier.vkey
        Case {
            name: "verifier key substituted",
            mutate: |f, _| {
                let other = checkpoint::verifier_key(super_origin(), &key(99).verifying_key());
                f.insert(VKEY.into(), format!("{other}\n").into_bytes());
            },
            reseal: true,
            expect: FindingKind::KeyMismatch,
            seq: None,
            exit: 5,
        },
        Case {
            name: "verifier key garbage",
            mutate: |f, _| {
                f.insert(VKEY.into(), b"nonsense\n".to_vec());
            },
            reseal: true,
            expect: FindingKind::Malformed,
            seq: None,
            exit: 5,
        },
        // --- events.bin
        Case {
            name: "event payload byte flipped",
            mutate: |f, _| {
                let at = record_offset(f, 7) + 130;
                flip(f.get_mut(EVENTS).unwrap(), at);
            },
            reseal: true,
            expect: FindingKind::Signature,
            seq: Some(7),
            exit: 5,
        },
        Case {
            name: "event prev_hash altered",
            mutate: |f, _| {
                let at = record_offset(f, 12) + 20;
                flip(f.get_mut(EVENTS).unwrap(), at);
            },
            reseal: true,
            expect: FindingKind::Chain,
            seq: Some(12),
            exit: 5,
        },
        Case {
            name: "event time moved back",
            mutate: |f, _| {
                let at = record_offset(f, 30) + 9;
                f.get_mut(EVENTS).unwrap()[at..at + 8].copy_from_slice(&T0.to_be_bytes());
            },
            reseal: true,
            expect: FindingKind::Time,
            seq: Some(30),
            exit: 5,
        },
        Case {
            name: "events reordered",
            mutate: |f, _| {
                let mut r = records(f);
                r.swap(20, 21);
                set_records(f, &r);
            },
            reseal: true,
            expect: FindingKind::Order,
            seq: Some(20),
            exit: 5,
        },
        Case {
            name: "events.bin truncated",
            mutate: |f, _| {
                let n = f[EVENTS].len();
                f.get_mut(EVENTS).unwrap().truncate(n - 10);
            },
            reseal: true,
            expect: FindingKind::Malformed,
            seq: None,
            exit: 5,
        },
        Case {
            name: "an event dropped from the middle",
            mutate: |f, _| {
                let mut r = records(f);
                r.remove(25);
                set_records(f, &r);
            },
            reseal: true,
            expect: FindingKind::MissingProof,
            seq: Some(24),
            exit: 4,
        },
        Case {
            name: "an event replaced by one signed by an unregistered key",
            mutate: |f, _| {
                let mut r = records(f);
                let mut e = docket_domain::Event::decode(&r[33]).unwrap();
                let st = Statement::sign("x-note", e.payload.clone(), &key(77));
                e.author = st.author;
                e.signature = st.signature;
                r[33] = e.encode();
                set_records(f, &r);
            },
            reseal: true,
            expect: FindingKind::Chain,
            seq: Some(34),
            exit: 5,
        },
        Case {
            name: "events.bin random bytes",
            mutate: |f, _| {
                let n = f[EVENTS].len();
                let mut x = 0x2545_f491_4f6c_dd1du64;
                let junk: Vec<u8> = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x >> 24) as u8
                    })
                    .collect();
                f.insert(EVENTS.into(), junk);
            },
            reseal: true,
            expect: FindingKind::Malformed,
            seq: None,
            exit: 5,
        },
        // --- proofs.json
        Case {
            name: "an inclusion proof hash altered",
            mutate: |f, _| {
                edit_proofs(f, |p| {
                    let h = &mut p.inclusion[0].path[0];
                    *h = "f".repeat(64);
                });
            },
            reseal: true,
            expect: FindingKind::Inclusion,
            seq: Some(0),
            exit: 5,
        },
        Case {
            name: "an inclusion proof removed",
            mutate: |f, _| {
                edit_proofs(f, |p| {
                    p.inclusion.pop();
                });
            },
            reseal: true,
            expect: FindingKind::MissingProof,
            seq: None,
            exit: 4,
        },
        Case {
            name: "proofs.json not JSON",
            mutate: |f, _| {
                f.insert(PROOFS.into(), b"[[[".to_vec());
            },
            reseal: true,
            expect: FindingKind::Malformed,
            seq: None,
            exit: 5,
        },
        Case {
            name: "proofs.json for another tree size",
            mutate: |f, _| edit_proofs(f, |p| p.tree_size += 1),
            reseal: true,
            expect: FindingKind::Inconsistent,
            seq: None,
            exit: 5,
        },
        // --- summary.json
        Case {
            name: "summary altered",
            mutate: |f, _| {
                let mut v: serde_json::Value = serde_json::from_slice(&f[SUMMARY]).unwrap();
                v["kinds"]["x-note"] = serde_json::json!(1);
                f.insert(SUMMARY.into(), serde_json::to_vec(&v).unwrap());
            },
            reseal: true,
            expect: FindingKind::SummaryMismatch,
            seq: None,
            exit: 3,
        },
        Case {
            name: "summary not JSON",
            mutate: |f, _| {
                f.insert(SUMMARY.into(), b"\x00\x01".to_vec());
            },
            reseal: true,
            expect: FindingKind::Malformed,
            seq: None,
            exit: 5,
        },
    ]
}

fn super_origin() -> &'static str {
    ORIGIN
}

fn checkpoint_root_b64(root: &[u8; 32]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(root)
}

/// Replaces checkpoint and key with a checkpoint over a different root,
/// signed by an attacker's key under the same origin.
fn forge_checkpoint(f: &mut Files, _w: &World) {
    let s = String::from_utf8(f[CHECKPOINT].clone()).unwrap();
    let body = &s[..=s.find("\n\n").unwrap()];
    let mut cp = Checkpoint::parse_body(body).unwrap();
    cp.root = [9; 32];
    let attacker = key(66);
    let note = checkpoint::sign_note(&cp.body(), ORIGIN, &attacker);
    f.insert(CHECKPOINT.into(), note.into_bytes());
    let vkey = checkpoint::verifier_key(ORIGIN, &attacker.verifying_key());
    f.insert(VKEY.into(), format!("{vkey}\n").into_bytes());
}

#[test]
fn every_tamper_is_caught_with_the_right_finding() {
    let (w, clean) = standard_bundle();
    let mut failures = Vec::new();
    for case in cases() {
        let mut files = clean.clone();
        (case.mutate)(&mut files, &w);
        if case.reseal && files.contains_key(MANIFEST) {
            reseal(&mut files);
        }
        let r = audit(&files, Some(w.trusted()));
        let found = r
            .errors()
            .any(|f| f.kind == case.expect && (case.seq.is_none() || f.seq == case.seq));
        if !found || r.exit_code() != case.exit {
            failures.push(format!(
                "{}: expected {:?}{} exit {}, got exit {}:\n  {}",
                case.name,
                case.expect,
                case.seq.map(|s| format!(" at seq {s}")).unwrap_or_default(),
                case.exit,
                r.exit_code(),
                r.findings
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_forged_checkpoint_without_a_trusted_key_is_caught_by_the_genesis_key() {
    let (w, mut files) = standard_bundle();
    forge_checkpoint(&mut files, &w);
    reseal(&mut files);
    let r = audit(&files, None);
    assert!(
        r.errors()
            .any(|f| f.kind == FindingKind::KeyMismatch && f.seq == Some(0)),
        "{:?}",
        r.findings
    );
    assert_eq!(r.exit_code(), 5);
}

#[test]
fn unauthorised_events_in_a_misbehaving_log_are_caught() {
    // A ledger that logged what its rules refuse: an event by a revoked
    // key, a key registration by a non-admin, an unknown kind.
    let mut w = World::standard();
    let revoked_write = w.log.append_unchecked(
        Statement::sign("x-note", b"{\"late\":1}".to_vec(), &w.retired),
        T0 + 9000,
    );
    let payload = serde_json::json!({"public_key": hex::encode(key(50).verifying_key().to_bytes()), "roles": [Role::Admin]});
    let self_promotion = w.log.append_unchecked(
        Statement::sign(
            "key.registered",
            payload.to_string().into_bytes(),
            &w.submitter,
        ),
        T0 + 9001,
    );
    let unknown = w.log.append_unchecked(
        Statement::sign("bogus.kind", b"{}".to_vec(), &w.admin),
        T0 + 9002,
    );
    w.log.commit();
    for opts in [
        ExportOptions::default(),
        ExportOptions {
            from: Some(revoked_write),
            ..Default::default()
        },
    ] {
        let files = build(&w.log, &opts);
        let r = audit(&files, Some(w.trusted()));
        for seq in [revoked_write, self_promotion, unknown] {
            assert!(
                r.errors()
                    .any(|f| f.kind == FindingKind::Authority && f.seq == Some(seq)),
                "seq {seq} not flagged: {:?}",
                r.findings
            );
        }
        assert_eq!(r.exit_code(), 5);
    }
}

#[test]
fn links_out_of_the_bundle_are_refused_unless_allowed() {
    let (w, mut files) = standard_bundle();
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("summary.json");
    std::fs::write(&outside, &files[SUMMARY]).unwrap();
    // An absolute manifest path to a real file outside the bundle.
    let mut m: format::Manifest = serde_json::from_slice(&files[MANIFEST]).unwrap();
    let e = m.files.remove(SUMMARY).unwrap();
    m.files.insert(outside.display().to_string(), e);
    files.insert(MANIFEST.into(), serde_json::to_vec(&m).unwrap());
    files.remove(SUMMARY);
    let root = dir.path().join("b");
    std::fs::create_dir(&root).unwrap();
    write(&files, &root);
    let r = audit_path(&root, Some(w.trusted()), false);
    assert!(r.has(FindingKind::ExternalRef));
    assert_eq!(
        r.exit_code(),
        4,
        "summary.json is then missing: {:?}",
        r.findings
    );
    let r = audit_path(&root, Some(w.trusted()), true);
    assert!(!r.has(FindingKind::ExternalRef), "{:?}", r.findings);
    // A symlink inside the bundle.
    #[cfg(unix)]
    {
        let root2 = dir.path().join("c");
        std::fs::create_dir(&root2).unwrap();
        let clean = standard_bundle().1;
        write(&clean, &root2);
        std::fs::remove_file(root2.join(SUMMARY)).unwrap();
        std::os::unix::fs::symlink(&outside, root2.join(SUMMARY)).unwrap();
        let r = audit_path(&root2, Some(w.trusted()), false);
        assert!(r.has(FindingKind::ExternalRef), "{:?}", r.findings);
        assert_eq!(r.exit_code(), 2);
        assert_clean(&audit_path(&root2, Some(w.trusted()), true));
    }
}

#[test]
fn consistency_and_since_tampering() {
    let w = World::standard();
    let (_, note) = w.log.checkpoint_covering(9).unwrap();
    let clean = build(
        &w.log,
        &ExportOptions {
            since_note: Some(note),
            ..Default::default()
        },
    );
    let mut f = clean.clone();
    let mut c: format::ConsistencyFile = serde_json::from_slice(&f[CONSISTENCY]).unwrap();
    c.path[0] = "0".repeat(64);
    f.insert(CONSISTENCY.into(), serde_json::to_vec(&c).unwrap());
    reseal(&mut f);
    let r = audit(&f, Some(w.trusted()));
    assert!(r.has(FindingKind::Consistency), "{:?}", r.findings);
    assert_eq!(r.exit_code(), 5);
    // A since.note of a different (forked) log under the same origin.
    let mut f = clean.clone();
    let forged = checkpoint::sign_note(
        &Checkpoint {
            origin: ORIGIN.into(),
            size: 9,
            root: [1; 32],
            extensions: vec![],
        }
        .body(),
        ORIGIN,
        &key(66),
    );
    f.insert(SINCE.into(), forged.clone().into_bytes());
    reseal(&mut f);
    let r = audit(&f, Some(w.trusted()));
    assert!(r.errors().any(|x| x.kind == FindingKind::CheckpointSignature && x.file.as_deref() == Some(SINCE)));
    let mut f = clean.clone();
    f.remove(CONSISTENCY);
    reseal(&mut f);
    assert_eq!(audit(&f, Some(w.trusted())).exit_code(), 4);
    // A since.note by the ledger key, but of another origin.
    let mut f = clean.clone();
    let (old, _) = w.log.checkpoint_covering(9).unwrap();
    let other = checkpoint::sign_note(
        &Checkpoint {
            origin: "other.example/log".into(),
            ..old.clone()
        }
        .body(),
        ORIGIN,
        &key(1),
    );
    f.insert(SINCE.into(), other.into_bytes());
    reseal(&mut f);
    let r = audit(&f, Some(w.trusted()));
    assert!(
        r.errors()
            .any(|x| x.kind == FindingKind::Consistency && x.file.as_deref() == Some(SINCE)),
        "{:?}",
        r.findings
    );
    // The manifest's since_size is not since.note's size.
    let mut f = clean.clone();
    let mut m: format::Manifest = serde_json::from_slice(&f[MANIFEST]).unwrap();
    m.scope.since_size = Some(old.size - 1);
    f.insert(MANIFEST.into(), serde_json::to_vec(&m).unwrap());
    let r = audit(&f, Some(w.trusted()));
    assert!(
        r.errors()
            .any(|x| x.kind == FindingKind::Inconsistent && x.file.as_deref() == Some(MANIFEST)),
        "{:?}",
        r.findings
    );
    // A forged since.note is found even when nothing else names it.
    let mut f = clean;
    f.remove(CONSISTENCY);
    f.insert(SINCE.into(), forged.into_bytes());
    let mut m: format::Manifest = serde_json::from_slice(&f[MANIFEST]).unwrap();
    m.scope.since_size = None;
    f.insert(MANIFEST.into(), serde_json::to_vec(&m).unwrap());
    reseal(&mut f);
    let r = audit(&f, Some(w.trusted()));
    assert!(
        r.errors()
            .any(|x| x.kind == FindingKind::CheckpointSignature && x.file.as_deref() == Some(SINCE)),
        "{:?}",
        r.findings
    );
}

#[test]
fn a_second_registration_does_not_revive_a_revoked_key() {
    // Given a misbehaving ledger that registers the revoked key again and
    // lets it write,
    let mut w = World::standard();
    let payload = serde_json::json!({
        "public_key": hex::encode(w.retired.verifying_key().to_bytes()),
        "roles": [Role::Submitter],
    });
    let again = w.log.append_unchecked(
        Statement::sign("key.registered", payload.to_string().into_bytes(), &w.admin),
        T0 + 9000,
    );
    let write = w.log.append_unchecked(
        Statement::sign("x-note", b"{\"revived\":1}".to_vec(), &w.retired),
        T0 + 9001,
    );
    w.log.commit();
    // when the whole log or a range from the registration is audited,
    for opts in [
        ExportOptions::default(),
        ExportOptions {
            from: Some(again),
            ..Default::default()
        },
    ] {
        let files = build(&w.log, &opts);
        let r = audit(&files, Some(w.trusted()));
        // then both events are refused: the key stays revoked.
        for seq in [again, write] {
            assert!(
                r.errors()
                    .any(|f| f.kind == FindingKind::Authority && f.seq == Some(seq)),
                "seq {seq} not flagged ({opts:?}): {:?}",
                r.findings
            );
        }
        assert_eq!(r.exit_code(), 5);
    }
}

#[test]
fn blobs_are_checked_against_their_names() {
    let mut log = {
        let w = World::new();
        w.log
    };
    let sub = key(3);
    let d = log.put_blob(b"evidence content".to_vec());
    let payload = serde_json::json!({"x_evidence": true, "sha256": hex::encode(d)});
    log.append(
        Statement::sign("x-evidence", payload.to_string().into_bytes(), &sub),
        T0 + 100,
    )
    .unwrap();
    log.commit();
    let _ = MemoryLog::len(&log);
    // x- kinds do not reference blobs; add a blob file by hand and check the
    // digest rule on it.
    let mut files = build(&log, &ExportOptions::default());
    files.insert(
        format!("blobs/{}", hex::encode(d)),
        b"evidence content".to_vec(),
    );
    reseal(&mut files);
    let r = audit(&files, Some(log.note_verifier().unwrap()));
    assert_clean(&r);
    assert!(
        r.has(FindingKind::Unknown),
        "an unreferenced blob is a warning"
    );
    files.insert(
        format!("blobs/{}", hex::encode(d)),
        b"evidence c0ntent".to_vec(),
    );
    reseal(&mut files);
    let r = audit(&files, Some(log.note_verifier().unwrap()));
    assert!(r.has(FindingKind::BlobDigest));
    assert_eq!(r.exit_code(), 5);
}
