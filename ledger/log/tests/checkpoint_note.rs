//! C2SP tlog-checkpoint + signed-note: public known-answer vectors
//! (tests/vectors/checkpoint), round trips and refusal of malformed or
//! tampered notes.

use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use docket_log::checkpoint::{
    Checkpoint, NoteError, NoteVerifier, key_id, open_note, sign_note, verifier_key, verify_note,
};
use ed25519_dalek::SigningKey;
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/checkpoint")
        .join(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap()
}

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn sample() -> Checkpoint {
    Checkpoint {
        origin: "docket.example/log".into(),
        size: 1234,
        root: [0x42; 32],
        extensions: vec![],
    }
}

#[test]
fn public_signed_note_vectors_verify() {
    let v = load("signed_notes.json");
    for case in v["notes"].as_array().unwrap() {
        let name = s(&case["name"]);
        let verifier =
            NoteVerifier::parse(s(&case["verifier_key"])).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(verifier.name, s(&case["key_name"]), "{name}");
        assert_eq!(hex::encode(verifier.key_id), s(&case["key_id"]), "{name}");
        assert_eq!(
            key_id(&verifier.name, &verifier.key),
            verifier.key_id,
            "{name}"
        );
        // verifier_key() reproduces the published key text byte for byte.
        assert_eq!(
            verifier_key(&verifier.name, &verifier.key),
            s(&case["verifier_key"]),
            "{name}"
        );
        assert_eq!(verifier.to_vkey(), s(&case["verifier_key"]));
        let note = s(&case["note"]);
        assert_eq!(
            verify_note(note, &verifier).unwrap_or_else(|e| panic!("{name}: {e}")),
            s(&case["text"])
        );
        if let Some(other) = case.get("other_verifier_key") {
            let other = NoteVerifier::parse(s(other)).unwrap();
            assert_eq!(
                verify_note(note, &other).unwrap(),
                s(&case["text"]),
                "{name}: other signer"
            );
        }
        // Tampering with the text breaks the signature.
        let tampered = note.replacen(' ', "  ", 1);
        assert!(
            matches!(
                verify_note(&tampered, &verifier),
                Err(NoteError::InvalidSignature { .. })
            ),
            "{name}: tampered"
        );
    }
}

#[test]
fn go_signer_key_reproduces_published_note() {
    // Ed25519 is deterministic: our signer must produce Go's note exactly.
    let v = load("signed_notes.json");
    let case = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c.get("signer_key").is_some())
        .unwrap();
    let skey = s(&case["signer_key"]);
    // PRIVATE+KEY+<name>+<hex8>+base64(0x01 || 32-byte seed)
    let parts: Vec<&str> = skey.splitn(5, '+').collect();
    assert_eq!(&parts[..2], ["PRIVATE", "KEY"]);
    let raw = B64.decode(parts[4]).unwrap();
    assert_eq!(raw[0], 0x01);
    let sk = SigningKey::from_bytes(raw[1..].try_into().unwrap());
    assert_eq!(parts[3], hex::encode(key_id(parts[2], &sk.verifying_key())));
    assert_eq!(sign_note(s(&case["text"]), parts[2], &sk), s(&case["note"]));
    assert_eq!(
        verifier_key(parts[2], &sk.verifying_key()),
        s(&case["verifier_key"])
    );
}

#[test]
fn public_checkpoint_bodies() {
    let v = load("checkpoint_bodies.json");
    for case in v["valid"].as_array().unwrap() {
        let cp = Checkpoint::parse_body(s(&case["body"]))
            .unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
        assert_eq!(cp.origin, s(&case["origin"]));
        assert_eq!(cp.size, case["size"].as_u64().unwrap());
        assert_eq!(hex::encode(cp.root), s(&case["root_hex"]));
        let ext: Vec<String> = case["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| s(e).to_owned())
            .collect();
        assert_eq!(cp.extensions, ext);
        assert_eq!(cp.body(), s(&case["body"]), "body() reproduces the text");
        cp.validate().unwrap();
    }
    for case in v["invalid"].as_array().unwrap() {
        assert!(
            Checkpoint::parse_body(s(&case["body"])).is_err(),
            "{} parsed",
            case["name"]
        );
    }
}

#[test]
fn body_format_is_exact() {
    let mut cp = sample();
    let root64 = B64.encode([0x42u8; 32]);
    assert_eq!(cp.body(), format!("docket.example/log\n1234\n{root64}\n"));
    cp.extensions = vec!["a b".into(), "c".into()];
    assert_eq!(
        cp.body(),
        format!("docket.example/log\n1234\n{root64}\na b\nc\n")
    );
    assert_eq!(Checkpoint::parse_body(&cp.body()).unwrap(), cp);
    cp.size = 0;
    assert!(cp.body().contains("\n0\n"));
    assert_eq!(Checkpoint::parse_body(&cp.body()).unwrap(), cp);
    cp.size = u64::MAX;
    assert_eq!(Checkpoint::parse_body(&cp.body()).unwrap(), cp);
}

#[test]
fn validate_refuses_unsignable_checkpoints() {
    let mut cp = sample();
    cp.validate().unwrap();
    cp.origin = String::new();
    assert!(matches!(
        cp.validate(),
        Err(NoteError::EmptyLine { line: 1 })
    ));
    cp.origin = "a\nb".into();
    assert!(matches!(
        cp.validate(),
        Err(NoteError::EmbeddedNewline { field: "origin" })
    ));
    cp = sample();
    cp.extensions = vec![String::new()];
    assert!(matches!(
        cp.validate(),
        Err(NoteError::EmptyLine { line: 4 })
    ));
    cp.extensions = vec!["x\ty".into()];
    assert!(matches!(
        cp.validate(),
        Err(NoteError::ControlCharacter { byte: 0x09, .. })
    ));
}

#[test]
fn round_trip_sign_open() {
    let sk = key(7);
    let cp = sample();
    let note = sign_note(&cp.body(), &cp.origin, &sk);
    assert!(note.starts_with(&cp.body()));
    assert!(note.ends_with('\n'));
    let sig_line = note.lines().last().unwrap();
    assert!(sig_line.starts_with("\u{2014} docket.example/log "));
    let blob = B64.decode(sig_line.rsplit(' ').next().unwrap()).unwrap();
    assert_eq!(blob.len(), 4 + 64);
    assert_eq!(blob[..4], key_id(&cp.origin, &sk.verifying_key()));

    let vkey = verifier_key(&cp.origin, &sk.verifying_key());
    let verifier = NoteVerifier::parse(&vkey).unwrap();
    assert_eq!(
        verifier,
        NoteVerifier::new(&cp.origin, sk.verifying_key()).unwrap()
    );
    assert_eq!(open_note(&note, &verifier).unwrap(), cp);

    // With extensions too.
    let mut cp2 = sample();
    cp2.extensions = vec!["ext one".into()];
    let note2 = sign_note(&cp2.body(), &cp2.origin, &sk);
    assert_eq!(open_note(&note2, &verifier).unwrap(), cp2);
}

#[test]
fn other_signers_are_ignored_and_cosigned_notes_open() {
    let log = key(1);
    let witness = key(2);
    let cp = sample();
    let note = sign_note(&cp.body(), &cp.origin, &log);
    // Append a witness's line: "— witness.example <sig>".
    let wnote = sign_note(&cp.body(), "witness.example/w1", &witness);
    let wline = wnote.lines().last().unwrap();
    let both = format!("{note}{wline}\n");
    let log_v = NoteVerifier::new(&cp.origin, log.verifying_key()).unwrap();
    let wit_v = NoteVerifier::new("witness.example/w1", witness.verifying_key()).unwrap();
    assert_eq!(open_note(&both, &log_v).unwrap(), cp);
    assert_eq!(open_note(&both, &wit_v).unwrap(), cp);
    // Witness line first.
    let both_rev = format!("{}\n{wline}\n{}\n", cp.body(), note.lines().last().unwrap());
    assert_eq!(open_note(&both_rev, &log_v).unwrap(), cp);
}

#[test]
fn tampered_and_malformed_notes_fail() {
    let sk = key(3);
    let cp = sample();
    let note = sign_note(&cp.body(), &cp.origin, &sk);
    let v = NoteVerifier::new(&cp.origin, sk.verifying_key()).unwrap();

    // Tampered body: size changed.
    let t = note.replacen("1234", "1235", 1);
    assert!(
        matches!(open_note(&t, &v), Err(NoteError::InvalidSignature { .. })),
        "{:?}",
        open_note(&t, &v)
    );

    // Wrong key, same name: key ID differs, so no matching signature.
    let other = NoteVerifier::new(&cp.origin, key(4).verifying_key()).unwrap();
    assert!(matches!(
        open_note(&note, &other),
        Err(NoteError::NoMatchingSignature { .. })
    ));

    // Wrong key with a forged matching key ID: signature check fails.
    let forged = NoteVerifier {
        name: cp.origin.clone(),
        key_id: v.key_id,
        key: key(4).verifying_key(),
    };
    assert!(matches!(
        open_note(&note, &forged),
        Err(NoteError::InvalidSignature { .. })
    ));

    // Right key, wrong name.
    let renamed = NoteVerifier::new("other.example/log", sk.verifying_key()).unwrap();
    assert!(matches!(
        open_note(&note, &renamed),
        Err(NoteError::NoMatchingSignature { .. })
    ));

    // Missing trailing newline.
    let cut = note.strip_suffix('\n').unwrap();
    assert!(matches!(
        open_note(cut, &v),
        Err(NoteError::MissingTrailingNewline)
    ));

    // Bad base64 in the signature line.
    let line = note.lines().last().unwrap();
    let b64 = line.rsplit(' ').next().unwrap();
    let bad = note.replace(b64, &format!("{}!", &b64[..b64.len() - 1]));
    assert!(matches!(
        open_note(&bad, &v),
        Err(NoteError::MalformedSignatureLine { line: 1, .. })
    ));
    let unpadded = note.replace(b64, b64.trim_end_matches('='));
    assert!(matches!(
        open_note(&unpadded, &v),
        Err(NoteError::MalformedSignatureLine { .. })
    ));

    // Hyphen instead of em dash.
    let hyphen = note.replace('\u{2014}', "-");
    assert!(matches!(
        open_note(&hyphen, &v),
        Err(NoteError::MalformedSignatureLine { .. })
    ));

    // No blank line / no signatures at all.
    assert!(matches!(
        open_note(&cp.body(), &v),
        Err(NoteError::MissingSignatures)
    ));
    let no_sigs = format!("{}\n", cp.body());
    assert!(matches!(
        open_note(&no_sigs, &v),
        Err(NoteError::MissingSignatures)
    ));

    // A malformed foreign line refuses the whole note.
    let extra = format!("{note}\u{2014} someone\n");
    assert!(matches!(
        open_note(&extra, &v),
        Err(NoteError::MalformedSignatureLine { line: 2, .. })
    ));

    // Truncated signature (key ID only + a few bytes).
    let short = note.replace(b64, &B64.encode(&B64.decode(b64).unwrap()[..10]));
    assert!(matches!(
        open_note(&short, &v),
        Err(NoteError::InvalidSignature { .. })
    ));

    // Control character in the note.
    let ctl = note.replacen("docket", "dock\u{7}et", 1);
    assert!(matches!(
        open_note(&ctl, &v),
        Err(NoteError::ControlCharacter { byte: 7, .. })
    ));

    // Signed but not a checkpoint body.
    let prose = sign_note("hello\n", &cp.origin, &sk);
    assert!(matches!(
        open_note(&prose, &v),
        Err(NoteError::TooFewLines { found: 1 })
    ));

    // Body that is signed but invalid (leading zero size).
    let lz = sign_note(&cp.body().replacen("1234", "01234", 1), &cp.origin, &sk);
    assert!(matches!(
        open_note(&lz, &v),
        Err(NoteError::InvalidSize { .. })
    ));

    // Too many signature lines.
    let many = format!("{note}{}", format!("{line}\n").repeat(200));
    assert!(matches!(
        open_note(&many, &v),
        Err(NoteError::TooManySignatures { .. })
    ));
}

#[test]
fn verifier_key_parsing() {
    let sk = key(9);
    let vk = verifier_key("docket.example/log", &sk.verifying_key());
    NoteVerifier::parse(&vk).unwrap();
    let (name, rest) = vk.split_once('+').unwrap();
    let (id, b64) = rest.split_once('+').unwrap();

    assert!(matches!(
        NoteVerifier::parse("nokey"),
        Err(NoteError::MalformedVerifierKey { .. })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("{name}+{id}")),
        Err(NoteError::MalformedVerifierKey { .. })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("+{id}+{b64}")),
        Err(NoteError::InvalidKeyName { .. })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("a b+{id}+{b64}")),
        Err(NoteError::InvalidKeyName { .. })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("{name}+00000000+{b64}")),
        Err(NoteError::VerifierKeyIdMismatch { .. })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("other+{id}+{b64}")),
        Err(NoteError::VerifierKeyIdMismatch { .. })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("{name}+{id}0+{b64}")),
        Err(NoteError::MalformedVerifierKey { .. })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("{name}+zzzzzzzz+{b64}")),
        Err(NoteError::MalformedVerifierKey { .. })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("{name}+{id}+{b64}x")),
        Err(NoteError::MalformedVerifierKey { .. })
    ));
    let mut raw = B64.decode(b64).unwrap();
    raw[0] = 0x02;
    assert!(matches!(
        NoteVerifier::parse(&format!("{name}+{id}+{}", B64.encode(&raw))),
        Err(NoteError::UnsupportedKeyType { byte: 2 })
    ));
    assert!(matches!(
        NoteVerifier::parse(&format!("{name}+{id}+{}", B64.encode(&raw[..20]))),
        Err(NoteError::UnsupportedKeyType { .. })
    ));
    raw[0] = 0x01;
    assert!(matches!(
        NoteVerifier::parse(&format!("{name}+{id}+{}", B64.encode(&raw[..20]))),
        Err(NoteError::MalformedVerifierKey { .. })
    ));
    assert!(matches!(
        NoteVerifier::new("bad+name", sk.verifying_key()),
        Err(NoteError::InvalidKeyName { .. })
    ));
}
