//! The tar form of a bundle (docs/BUNDLE.md §1, "Archive rules"), as test
//! vectors in `tests/vectors/archive/`: the valid bundle of
//! `tests/vectors/bundle/valid/` written as one tar, and tars that an
//! auditor must read the same way (a `./` prefix, directory entries) or
//! refuse (a symbolic link, a hard link, a file the manifest does not list),
//! each with the exit code of `docket audit --trusted-key
//! tests/vectors/bundle/trusted.vkey` (`cases.json`).
//!
//! The tars are deterministic: this test rebuilds them from the stored
//! directory bundle, compares the stored copies byte for byte and audits
//! each. Regenerate after a deliberate change with `DOCKET_REGEN_VECTORS=1
//! cargo test -p docket-domain --test archive_vectors`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use docket_domain::checkpoint::NoteVerifier;
use docket_domain::export::bundle::write_tar;
use docket_domain::export::{AuditOptions, audit};
use serde_json::{Value, json};

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

/// The valid directory bundle's files.
fn valid_files() -> BTreeMap<String, Vec<u8>> {
    let dir = vectors().join("bundle/valid");
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        assert!(e.file_type().unwrap().is_file(), "valid/ is flat");
        files.insert(
            e.file_name().to_string_lossy().into_owned(),
            std::fs::read(e.path()).unwrap(),
        );
    }
    files
}

fn header(size: u64, kind: tar::EntryType) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h.set_entry_type(kind);
    h
}

/// A tar of `files` with each name prefixed by `prefix`, and `extra`
/// entries (name, type, link target) appended.
fn tar_of(
    files: &BTreeMap<String, Vec<u8>>,
    prefix: &str,
    dirs: &[&str],
    extra: &[(&str, tar::EntryType, &str)],
) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for d in dirs {
        let mut h = header(0, tar::EntryType::Directory);
        h.set_mode(0o755);
        b.append_data(&mut h, d, std::io::empty()).unwrap();
    }
    for (name, bytes) in files {
        let mut h = header(bytes.len() as u64, tar::EntryType::Regular);
        b.append_data(&mut h, format!("{prefix}{name}"), bytes.as_slice())
            .unwrap();
    }
    for (name, kind, target) in extra {
        let mut h = header(0, *kind);
        if kind.is_symlink() || kind.is_hard_link() {
            b.append_link(&mut h, name, target).unwrap();
        } else {
            b.append_data(&mut h, name, target.as_bytes()).unwrap();
        }
    }
    b.into_inner().unwrap()
}

/// One tar vector.
struct Case {
    file: &'static str,
    what: &'static str,
    exit_code: u8,
    /// A finding kind that must be reported.
    finding: Option<&'static str>,
    bytes: Vec<u8>,
}

/// Every case.
fn cases() -> Vec<Case> {
    let files = valid_files();
    // `valid.tar`: exactly what the exporter writes (`write_tar`).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("valid.tar");
    write_tar(&out, &files).unwrap();
    let valid = std::fs::read(&out).unwrap();
    let mut with_extra = files.clone();
    with_extra.insert("notes.txt".into(), b"added after export\n".to_vec());
    let case = |file, what, exit_code, finding, bytes| Case {
        file,
        what,
        exit_code,
        finding,
        bytes,
    };
    vec![
        case(
            "valid.tar",
            "the valid bundle as the exporter writes it: ustar, sorted, mode 0644, uid/gid 0, mtime 0",
            0,
            None,
            valid,
        ),
        case(
            "dot-slash.tar",
            "the same files named ./manifest.json, ./events.bin, ...: the prefix is removed",
            0,
            None,
            tar_of(&files, "./", &[], &[]),
        ),
        case(
            "directory-entries.tar",
            "the same files after directory entries (./ and blobs/): directory entries carry no content and are ignored",
            0,
            None,
            tar_of(&files, "", &["./", "blobs/"], &[]),
        ),
        case(
            "symlink.tar",
            "the valid files plus a symbolic link blobs/outside -> /etc/passwd: refused without --allow-external-ref",
            2,
            Some("external_ref"),
            tar_of(
                &files,
                "",
                &[],
                &[("blobs/outside", tar::EntryType::Symlink, "/etc/passwd")],
            ),
        ),
        case(
            "hardlink.tar",
            "the valid files plus a hard link copy.json -> manifest.json: refused without --allow-external-ref",
            2,
            Some("external_ref"),
            tar_of(
                &files,
                "",
                &[],
                &[("copy.json", tar::EntryType::Link, "manifest.json")],
            ),
        ),
        case(
            "unlisted-file.tar",
            "the valid files plus notes.txt, which the manifest does not list",
            5,
            Some("unlisted_file"),
            tar_of(&with_extra, "", &[], &[]),
        ),
    ]
}

#[test]
fn archive_vectors_match_and_audit_as_stated() {
    let root = vectors().join("archive");
    let trusted = std::fs::read_to_string(vectors().join("bundle/trusted.vkey")).unwrap();
    let key = NoteVerifier::parse(trusted.trim()).unwrap();
    let cases = cases();
    let index: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({"file": c.file, "what": c.what, "exit_code": c.exit_code, "finding": c.finding})
        })
        .collect();
    let mut index_bytes = serde_json::to_vec_pretty(&index).unwrap();
    index_bytes.push(b'\n');
    if std::env::var_os("DOCKET_REGEN_VECTORS").is_some() {
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("cases.json"), &index_bytes).unwrap();
        for c in &cases {
            std::fs::write(root.join(c.file), &c.bytes).unwrap();
        }
    }
    assert_eq!(
        std::fs::read(root.join("cases.json")).unwrap(),
        index_bytes,
        "cases.json differs from the generator: regenerate"
    );
    for Case {
        file,
        exit_code: exit,
        finding,
        bytes,
        ..
    } in &cases
    {
        let path = root.join(file);
        assert!(
            std::fs::read(&path).unwrap() == *bytes,
            "{file} differs from the generator: regenerate"
        );
        let r = audit(
            &path,
            &AuditOptions {
                trusted_key: Some(key.clone()),
                allow_external_ref: false,
            },
            &mut |_, _, _| {},
        );
        assert_eq!(r.exit_code(), *exit, "{file}: {:#?}", r.findings);
        if let Some(kind) = finding {
            assert!(
                r.errors()
                    .any(|f| serde_json::to_value(f.kind).unwrap() == json!(kind)),
                "{file}: expected {kind} in {:#?}",
                r.findings
            );
        } else {
            assert_eq!(r.errors().count(), 0, "{file}: {:#?}", r.findings);
        }
    }
    // valid.tar holds nothing but the files' headers, contents and the end
    // of archive: 512-byte blocks, the last two zero.
    let valid = &cases[0].bytes;
    assert_eq!(valid.len() % 512, 0);
    assert!(valid[valid.len() - 1024..].iter().all(|b| *b == 0));
}
