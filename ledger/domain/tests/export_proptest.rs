//! Properties: random exports of random ledgers audit clean; any byte
//! flipped in any bundle file (manifest resealed) fails the audit.

mod export_common;

use docket_domain::Statement;
use docket_domain::export::format::MANIFEST;
use docket_domain::export::{self, AsOf, ExportOptions, LogSource, MemoryLog};
use docket_domain::keys::Role;
use ed25519_dalek::SigningKey;
use export_common::{audit, key, reseal};
use proptest::prelude::*;

const T0: u64 = 1_700_000_000_000;
const ROLES: [Role; 4] = [
    Role::Submitter,
    Role::Verifier,
    Role::Approver,
    Role::Custodian,
];

/// One step of a random history.
#[derive(Debug, Clone)]
enum Step {
    /// Register a new key with role `ROLES[r]`.
    Register(usize),
    /// Revoke the `k`-th registered key (if still live).
    Revoke(usize),
    /// The `k`-th live key appends a note of `len` bytes.
    Note(usize, usize),
    /// A commit boundary (a signed checkpoint).
    Commit,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        1 => (0..ROLES.len()).prop_map(Step::Register),
        1 => any::<usize>().prop_map(Step::Revoke),
        8 => (any::<usize>(), 0..200usize).prop_map(|(k, n)| Step::Note(k, n)),
        2 => Just(Step::Commit),
    ]
}

fn ledger(steps: &[Step]) -> MemoryLog {
    let admin = key(2);
    let mut log = MemoryLog::genesis("prop.docket/x", key(1), &admin, T0).unwrap();
    let mut live: Vec<SigningKey> = vec![key(3)];
    log.register(&admin, &live[0], &[Role::Submitter], T0)
        .unwrap();
    let mut next_key = 10u8;
    let mut t = T0;
    for s in steps {
        t += 3;
        match s {
            Step::Register(r) => {
                let k = key(next_key);
                next_key = next_key.wrapping_add(1).max(10);
                if log.register(&admin, &k, &[ROLES[*r]], t).is_ok() {
                    live.push(k);
                }
            }
            Step::Revoke(i) if live.len() > 1 => {
                let k = live.remove(i % live.len());
                log.revoke(&admin, &k, t).unwrap();
            }
            Step::Revoke(_) => {}
            Step::Note(i, n) => {
                let k = &live[i % live.len()];
                let payload = format!("{{\"n\":\"{}\"}}", "x".repeat(*n)).into_bytes();
                log.append(Statement::sign("x-note", payload, k), t)
                    .unwrap();
            }
            Step::Commit => log.commit(),
        }
    }
    log.commit();
    log
}

/// Export options from random numbers, valid for a log of `len` events.
fn options(log: &MemoryLog, a: u64, b: u64, mode: u8) -> ExportOptions {
    let len = log.len();
    let (lo, hi) = (a % len, b % len);
    let (from, to) = (lo.min(hi), lo.max(hi));
    match mode % 4 {
        0 => ExportOptions::default(),
        1 => ExportOptions {
            from: Some(from),
            to: Some(to),
            ..Default::default()
        },
        2 => ExportOptions {
            as_of: Some(AsOf::Seq(to)),
            from: Some(from),
            ..Default::default()
        },
        _ => {
            let (_, note) = log.checkpoint_covering(from.max(1)).unwrap();
            ExportOptions {
                since_note: Some(note),
                ..Default::default()
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_exports_of_random_ledgers_audit_clean(
        steps in prop::collection::vec(step(), 1..60),
        a in any::<u64>(),
        b in any::<u64>(),
        mode in any::<u8>(),
        tar in any::<bool>(),
    ) {
        let log = ledger(&steps);
        let opts = options(&log, a, b, mode);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("bundle");
        export::export(&log, &opts, &out, tar).unwrap();
        let r = export_common::audit_path(&out, Some(log.note_verifier().unwrap()), false);
        let errors: Vec<String> = r.errors().map(ToString::to_string).collect();
        prop_assert!(errors.is_empty(), "{opts:?}: {errors:#?}");
        prop_assert_eq!(r.exit_code(), 0);
    }

    #[test]
    fn any_flipped_byte_fails_the_audit(
        steps in prop::collection::vec(step(), 1..30),
        a in any::<u64>(),
        b in any::<u64>(),
        mode in any::<u8>(),
        file in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        bit in 0..8u8,
    ) {
        let log = ledger(&steps);
        let opts = options(&log, a, b, mode);
        let mut files = export_common::build(&log, &opts);
        let names: Vec<String> = files.keys().filter(|k| k.as_str() != MANIFEST).cloned().collect();
        let name = file.get(&names).clone();
        let bytes = files.get_mut(&name).unwrap();
        let i = at.index(bytes.len());
        bytes[i] ^= 1 << bit;
        reseal(&mut files);
        let r = audit(&files, Some(log.note_verifier().unwrap()));
        prop_assert!(r.exit_code() != 0, "flipping bit {bit} of byte {i} of {name} went unnoticed");
    }
}
