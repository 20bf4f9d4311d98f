//! Ledger core end to end: init, append, restart, proofs, checkpoints,
//! idempotency, authority, replay.

use docket_domain::checkpoint;
use docket_domain::keys::{self, Role};
use docket_domain::merkle;
use docket_domain::replay::{self, ReplayOptions};
use docket_domain::{Ledger, LedgerError, LedgerOptions, Statement};

fn admin(dir: &std::path::Path) -> ed25519_dalek::SigningKey {
    keys::read_key_file(&dir.join("keys/admin.key")).unwrap()
}

fn register(
    ledger: &Ledger,
    admin: &ed25519_dalek::SigningKey,
    roles: &[Role],
) -> ed25519_dalek::SigningKey {
    let k = keys::generate().unwrap();
    let payload = serde_json::json!({
        "public_key": hex::encode(k.verifying_key().to_bytes()),
        "roles": roles,
    });
    ledger
        .append(Statement::sign(
            "key.registered",
            payload.to_string().into_bytes(),
            admin,
        ))
        .unwrap();
    k
}

#[test]
fn init_append_restart_prove() {
    let dir = tempfile::tempdir().unwrap();
    let (ledger, out) = docket_domain::ledger::init(dir.path(), None).unwrap();
    assert!(out.admin_key_path.exists());
    assert_eq!(ledger.len(), 1);
    assert!(
        docket_domain::ledger::init(dir.path(), None).is_err(),
        "init refuses an existing ledger"
    );
    let admin = admin(dir.path());
    let writer = register(&ledger, &admin, &[Role::Submitter]);
    let mut receipts = Vec::new();
    for i in 0..50 {
        let st = Statement::sign("x-note", format!("{{\"i\":{i}}}").into_bytes(), &writer);
        receipts.push(ledger.append(st).unwrap());
    }
    assert_eq!(receipts.last().unwrap().seq, 51);
    // Idempotent replay of a statement.
    let again = ledger
        .append(Statement::sign("x-note", b"{\"i\":7}".to_vec(), &writer))
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.seq, receipts[7].seq);
    assert_eq!(ledger.len(), 52);
    ledger.close().unwrap();
    drop(ledger);

    let ledger = Ledger::open(dir.path(), LedgerOptions::default()).unwrap();
    assert_eq!(ledger.len(), 52);
    let (cp, note) = ledger.checkpoint().unwrap().unwrap();
    assert_eq!(cp.size, 52);
    let verifier = checkpoint::NoteVerifier::parse(&ledger.verifier_key()).unwrap();
    assert_eq!(checkpoint::open_note(&note, &verifier).unwrap(), cp);
    for seq in [0, 1, 25, 51] {
        let proof = ledger.inclusion_proof(seq, 52).unwrap();
        let leaf = merkle::leaf_hash(&ledger.event_bytes(seq).unwrap());
        merkle::verify_inclusion(&leaf, seq, 52, &proof, &cp.root).unwrap();
    }
    let old_root = ledger.root_at(10).unwrap();
    let proof = ledger.consistency_proof(10, 52).unwrap();
    merkle::verify_consistency(10, 52, &old_root, &cp.root, &proof).unwrap();
    // Appends continue the chain after restart.
    let r = ledger
        .append(Statement::sign("x-note", b"after".to_vec(), &writer))
        .unwrap();
    assert_eq!(r.seq, 52);
    assert_eq!(
        ledger.event(52).unwrap().prev_hash,
        ledger.leaf_hash(51).unwrap()
    );
    ledger.close().unwrap();

    let (report, state) = replay::replay(
        ledger.store().as_ref(),
        &verifier,
        ReplayOptions {
            verify: true,
            as_of: None,
        },
        &mut |_, _| {},
    )
    .unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.events, 53);
    assert_eq!(state.keys.keys.len(), 3);
}

#[test]
fn authority_and_signatures_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let (ledger, _) = docket_domain::ledger::init(dir.path(), None).unwrap();
    let admin = admin(dir.path());
    let stranger = keys::generate().unwrap();
    let e = ledger
        .append(Statement::sign("x-note", b"hi".to_vec(), &stranger))
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    let auditor = register(&ledger, &admin, &[Role::Auditor]);
    let e = ledger
        .append(Statement::sign("x-note", b"hi".to_vec(), &auditor))
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    let writer = register(&ledger, &admin, &[Role::Submitter]);
    let mut forged = Statement::sign("x-note", b"hi".to_vec(), &writer);
    forged.payload = b"ho".to_vec();
    let e = ledger.append(forged).unwrap_err();
    assert!(matches!(e, LedgerError::BadSignature { .. }), "{e}");
    let e = ledger
        .append(Statement::sign("no.such.kind", b"{}".to_vec(), &writer))
        .unwrap_err();
    assert!(matches!(e, LedgerError::Invalid { .. }), "{e}");
    // Revocation: nothing authored after it.
    let payload = serde_json::json!({"public_key": hex::encode(writer.verifying_key().to_bytes())});
    ledger
        .append(Statement::sign(
            "key.revoked",
            payload.to_string().into_bytes(),
            &admin,
        ))
        .unwrap();
    let e = ledger
        .append(Statement::sign("x-note", b"late".to_vec(), &writer))
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    // The last admin cannot be revoked.
    let payload = serde_json::json!({"public_key": hex::encode(admin.verifying_key().to_bytes())});
    let e = ledger
        .append(Statement::sign(
            "key.revoked",
            payload.to_string().into_bytes(),
            &admin,
        ))
        .unwrap_err();
    assert!(matches!(e, LedgerError::FailedPrecondition(_)), "{e}");
    assert_eq!(ledger.len(), 4, "rejections append nothing");
}

#[test]
fn concurrent_appenders_share_group_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (ledger, _) = docket_domain::ledger::init(dir.path(), None).unwrap();
    let admin = admin(dir.path());
    let writer = register(&ledger, &admin, &[Role::Submitter]);
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let ledger = ledger.clone();
            let writer = writer.clone();
            std::thread::spawn(move || {
                (0..40)
                    .map(|i| {
                        ledger
                            .append(Statement::sign(
                                "x-note",
                                format!("{t}-{i}").into_bytes(),
                                &writer,
                            ))
                            .unwrap()
                            .seq
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (2..2 + 16 * 40).collect::<Vec<_>>());
    let batches = ledger
        .metrics()
        .batches
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        batches < 16 * 40 + 2,
        "group commit batched appends ({batches} batches)"
    );
}
