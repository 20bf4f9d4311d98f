//! Model-based property test: the ledger against a `Vec` of statements, with
//! random appends (single and batched), duplicates, rejected statements,
//! restarts and reads. After every step the ledger must agree with the model.

use docket_domain::keys::{self, Role};
use docket_domain::merkle::{self, MemoryTree};
use docket_domain::{Ledger, LedgerOptions, Statement};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Append(u16),
    AppendMany(Vec<u16>),
    Duplicate(usize),
    Forged(u16),
    Restart,
    Read(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u16>().prop_map(Op::Append),
        2 => prop::collection::vec(any::<u16>(), 1..20).prop_map(Op::AppendMany),
        1 => any::<usize>().prop_map(Op::Duplicate),
        1 => any::<u16>().prop_map(Op::Forged),
        1 => Just(Op::Restart),
        2 => any::<usize>().prop_map(Op::Read),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn ledger_matches_vec_model(ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let (mut ledger, _) = docket_domain::ledger::init(dir.path(), None).unwrap();
        let admin = keys::read_key_file(&dir.path().join("keys/admin.key")).unwrap();
        let writer = keys::generate().unwrap();
        let reg = serde_json::json!({
            "public_key": hex::encode(writer.verifying_key().to_bytes()),
            "roles": [Role::Submitter],
        });
        ledger.append(Statement::sign("key.registered", reg.to_string().into_bytes(), &admin)).unwrap();
        // The model: payloads of x-model events, in order, after the first 2 events.
        let mut model: Vec<Vec<u8>> = Vec::new();
        let mut unique = 0u32;
        let mut fresh = |v: u16| { unique += 1; format!("{v}-{unique}").into_bytes() };
        for op in ops {
            match op {
                Op::Append(v) => {
                    let p = fresh(v);
                    let r = ledger.append(Statement::sign("x-model", p.clone(), &writer)).unwrap();
                    prop_assert_eq!(r.seq, 2 + model.len() as u64);
                    prop_assert!(!r.duplicate);
                    model.push(p);
                }
                Op::AppendMany(vs) => {
                    let ps: Vec<Vec<u8>> = vs.into_iter().map(&mut fresh).collect();
                    let sts = ps.iter().map(|p| Statement::sign("x-model", p.clone(), &writer)).collect();
                    let rs = ledger.append_many(sts).unwrap();
                    for (r, p) in rs.into_iter().zip(ps) {
                        let r = r.unwrap();
                        prop_assert_eq!(r.seq, 2 + model.len() as u64);
                        model.push(p);
                    }
                }
                Op::Duplicate(i) => {
                    if model.is_empty() { continue; }
                    let i = i % model.len();
                    let r = ledger.append(Statement::sign("x-model", model[i].clone(), &writer)).unwrap();
                    prop_assert!(r.duplicate);
                    prop_assert_eq!(r.seq, 2 + i as u64);
                }
                Op::Forged(v) => {
                    let mut st = Statement::sign("x-model", fresh(v), &writer);
                    st.signature[10] ^= 1;
                    prop_assert!(ledger.append(st).is_err());
                }
                Op::Restart => {
                    ledger.close().unwrap();
                    drop(ledger);
                    ledger = Ledger::open(dir.path(), LedgerOptions::default()).unwrap();
                }
                Op::Read(i) => {
                    if model.is_empty() { continue; }
                    let i = i % model.len();
                    let e = ledger.event(2 + i as u64).unwrap();
                    prop_assert_eq!(&e.payload, &model[i]);
                }
            }
            prop_assert_eq!(ledger.len(), 2 + model.len() as u64);
        }
        // Whole-log agreement: payloads, chain, and the Merkle root against an
        // independent in-memory tree and the signed checkpoint.
        let events = ledger.events(0, ledger.len()).unwrap();
        let mut tree = MemoryTree::new();
        let mut prev = [0u8; 32];
        for (i, e) in events.iter().enumerate() {
            prop_assert_eq!(e.seq, i as u64);
            prop_assert_eq!(e.prev_hash, prev);
            if i >= 2 { prop_assert_eq!(&e.payload, &model[i - 2]); }
            prev = merkle::leaf_hash(&e.encode());
            tree.push(prev);
        }
        let (cp, _) = ledger.checkpoint().unwrap().unwrap();
        prop_assert_eq!(cp.root, tree.root());
        prop_assert_eq!(ledger.root_at(ledger.len()).unwrap(), tree.root());
    }
}
