//! RFC 9162 Merkle tree: known-answer vectors (tests/vectors/rfc6962), an
//! exhaustive cross-check of proof generation and verification for small
//! trees, mutation tests, Frontier/MemoryTree agreement and property tests.

use std::collections::HashMap;
use std::path::PathBuf;

use docket_log::merkle::{
    Frontier, Hash, MemoryTree, MerkleError, NodeSource, consistency_proof, empty_root,
    inclusion_proof, leaf_hash, node_hash, root_at, verify_consistency, verify_inclusion,
};
use proptest::prelude::*;
use serde_json::Value;

fn vectors() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/rfc6962/tree8.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn h(v: &Value) -> Hash {
    let mut out = [0u8; 32];
    hex::decode_to_slice(v.as_str().unwrap(), &mut out).unwrap();
    out
}

fn hashes(v: &Value) -> Vec<Hash> {
    v.as_array().unwrap().iter().map(h).collect()
}

fn tree8() -> (Vec<Vec<u8>>, MemoryTree) {
    let v = vectors();
    let leaves: Vec<Vec<u8>> = v["leaf_inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| hex::decode(x.as_str().unwrap()).unwrap())
        .collect();
    let mut t = MemoryTree::new();
    for l in &leaves {
        t.push(leaf_hash(l));
    }
    (leaves, t)
}

/// Reference MTH straight from RFC 9162 §2.1.1, recursive over leaf hashes.
fn ref_root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = 1usize << (usize::BITS - 1 - (n - 1).leading_zeros());
            node_hash(&ref_root(&leaves[..k]), &ref_root(&leaves[k..]))
        }
    }
}

fn tree_of(n: u64) -> (Vec<Hash>, MemoryTree) {
    let mut t = MemoryTree::new();
    let leaves: Vec<Hash> = (0..n).map(|i| leaf_hash(&i.to_le_bytes())).collect();
    for l in &leaves {
        t.push(*l);
    }
    (leaves, t)
}

#[test]
fn hashing_primitives() {
    assert_eq!(
        hex::encode(empty_root()),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    let v = vectors();
    let (leaves, _) = tree8();
    for (i, l) in leaves.iter().enumerate() {
        assert_eq!(leaf_hash(l), h(&v["node_hashes"][0][i]), "leaf {i}");
    }
    assert_eq!(
        node_hash(&h(&v["node_hashes"][0][0]), &h(&v["node_hashes"][0][1])),
        h(&v["node_hashes"][1][0])
    );
}

#[test]
fn kat_roots_and_nodes() {
    let v = vectors();
    let (leaves, t) = tree8();
    let roots = hashes(&v["roots_by_size"]);
    assert_eq!(roots.len(), 9);
    let mut f = Frontier::new();
    let mut m = MemoryTree::new();
    assert_eq!(f.root(), roots[0]);
    assert_eq!(m.root(), roots[0]);
    for (size, l) in leaves.iter().enumerate() {
        f.push(leaf_hash(l));
        m.push(leaf_hash(l));
        assert_eq!(
            f.root(),
            roots[size + 1],
            "frontier root at size {}",
            size + 1
        );
        assert_eq!(
            m.root(),
            roots[size + 1],
            "memory root at size {}",
            size + 1
        );
        assert_eq!(root_at(&t, size as u64 + 1).unwrap(), roots[size + 1]);
    }
    for (level, row) in v["node_hashes"].as_array().unwrap().iter().enumerate() {
        for (index, want) in row.as_array().unwrap().iter().enumerate() {
            assert_eq!(
                t.node(level as u8, index as u64).unwrap(),
                h(want),
                "node ({level}, {index})"
            );
        }
    }
}

#[test]
fn kat_inclusion_proofs() {
    let v = vectors();
    let (leaves, t) = tree8();
    let roots = hashes(&v["roots_by_size"]);
    for case in v["inclusion_proofs"].as_array().unwrap() {
        let index = case["index"].as_u64().unwrap();
        let size = case["size"].as_u64().unwrap();
        let want = hashes(&case["proof"]);
        assert_eq!(
            inclusion_proof(&t, index, size).unwrap(),
            want,
            "proof {index}/{size}"
        );
        let leaf = leaf_hash(&leaves[index as usize]);
        verify_inclusion(&leaf, index, size, &want, &roots[size as usize]).unwrap();
    }
}

#[test]
fn kat_consistency_proofs() {
    let v = vectors();
    let (_, t) = tree8();
    let roots = hashes(&v["roots_by_size"]);
    for case in v["consistency_proofs"].as_array().unwrap() {
        let old = case["old_size"].as_u64().unwrap();
        let new = case["new_size"].as_u64().unwrap();
        let want = hashes(&case["proof"]);
        assert_eq!(
            consistency_proof(&t, old, new).unwrap(),
            want,
            "proof {old}->{new}"
        );
        verify_consistency(old, new, &roots[old as usize], &roots[new as usize], &want).unwrap();
    }
}

/// Inclusion proof mutations that must all fail (after transparency-dev's corruptInclusionProof).
fn assert_inclusion_mutants_fail(leaf: &Hash, index: u64, size: u64, proof: &[Hash], root: &Hash) {
    let some: Hash = [0xab; 32];
    let mut cases: Vec<(String, Hash, u64, u64, Vec<Hash>, Hash)> = vec![
        (
            "index+1".into(),
            *leaf,
            index + 1,
            size,
            proof.to_vec(),
            *root,
        ),
        (
            "index^2".into(),
            *leaf,
            index ^ 2,
            size,
            proof.to_vec(),
            *root,
        ),
        (
            "size*2".into(),
            *leaf,
            index,
            size * 2,
            proof.to_vec(),
            *root,
        ),
        (
            "size/2".into(),
            *leaf,
            index,
            size / 2,
            proof.to_vec(),
            *root,
        ),
        (
            "wrong leaf".into(),
            some,
            index,
            size,
            proof.to_vec(),
            *root,
        ),
        (
            "empty root".into(),
            *leaf,
            index,
            size,
            proof.to_vec(),
            empty_root(),
        ),
        (
            "random root".into(),
            *leaf,
            index,
            size,
            proof.to_vec(),
            some,
        ),
        (
            "trailing root".into(),
            *leaf,
            index,
            size,
            [proof, &[*root]].concat(),
            *root,
        ),
        (
            "preceding root".into(),
            *leaf,
            index,
            size,
            [&[*root], proof].concat(),
            *root,
        ),
    ];
    if index > 0 {
        cases.push((
            "index-1".into(),
            *leaf,
            index - 1,
            size,
            proof.to_vec(),
            *root,
        ));
    }
    for i in 0..proof.len() {
        let mut p = proof.to_vec();
        p[i][0] ^= 8;
        cases.push((format!("flip proof[{i}]"), *leaf, index, size, p, *root));
    }
    if !proof.is_empty() {
        cases.push((
            "removed".into(),
            *leaf,
            index,
            size,
            proof[..proof.len() - 1].to_vec(),
            *root,
        ));
    }
    if proof.len() > 1 {
        let p = [&[proof[0], some][..], &proof[1..]].concat();
        cases.push(("inserted".into(), *leaf, index, size, p, *root));
    }
    for (desc, l, i, s, p, r) in cases {
        assert!(
            verify_inclusion(&l, i, s, &p, &r).is_err(),
            "mutant {desc} verified for {index}/{size}"
        );
    }
}

fn assert_consistency_mutants_fail(old: u64, new: u64, r1: &Hash, r2: &Hash, proof: &[Hash]) {
    let wrong: Hash = [0x5a; 32];
    let mut cases: Vec<(String, u64, u64, Hash, Hash, Vec<Hash>)> = vec![
        ("old+1".into(), old + 1, new, *r1, *r2, proof.to_vec()),
        ("old^2".into(), old ^ 2, new, *r1, *r2, proof.to_vec()),
        ("new*2".into(), old, new * 2, *r1, *r2, proof.to_vec()),
        ("new/2".into(), old, new / 2, *r1, *r2, proof.to_vec()),
        ("wrong r1".into(), old, new, wrong, *r2, proof.to_vec()),
        ("wrong r2".into(), old, new, *r1, wrong, proof.to_vec()),
        ("swapped".into(), old, new, *r2, *r1, proof.to_vec()),
        ("empty proof".into(), old, new, *r1, *r2, vec![]),
        (
            "trailing r1".into(),
            old,
            new,
            *r1,
            *r2,
            [proof, &[*r1]].concat(),
        ),
        (
            "trailing r2".into(),
            old,
            new,
            *r1,
            *r2,
            [proof, &[*r2]].concat(),
        ),
        (
            "preceding r1".into(),
            old,
            new,
            *r1,
            *r2,
            [&[*r1], proof].concat(),
        ),
        (
            "preceding r2".into(),
            old,
            new,
            *r1,
            *r2,
            [&[*r2], proof].concat(),
        ),
        (
            "preceding p0".into(),
            old,
            new,
            *r1,
            *r2,
            [&[proof[0]], proof].concat(),
        ),
        (
            "truncated".into(),
            old,
            new,
            *r1,
            *r2,
            proof[..proof.len() - 1].to_vec(),
        ),
    ];
    if old > 1 {
        cases.push(("old-1".into(), old - 1, new, *r1, *r2, proof.to_vec()));
    }
    for i in 0..proof.len() {
        let mut p = proof.to_vec();
        p[i][0] ^= 16;
        cases.push((format!("flip proof[{i}]"), old, new, *r1, *r2, p));
    }
    for (desc, o, n, a, b, p) in cases {
        assert!(
            verify_consistency(o, n, &a, &b, &p).is_err(),
            "mutant {desc} verified for {old}->{new}"
        );
    }
}

#[test]
fn exhaustive_small_trees() {
    let max = 300u64;
    let (leaves, t) = tree_of(max);
    let roots: Vec<Hash> = (0..=max as usize).map(|n| ref_root(&leaves[..n])).collect();
    for size in 1..=max {
        assert_eq!(
            root_at(&t, size).unwrap(),
            roots[size as usize],
            "root {size}"
        );
        // Inclusion: every index for small sizes, a sample for larger ones.
        let step = if size <= 64 { 1 } else { 7 };
        let mut idx: Vec<u64> = (0..size).step_by(step).collect();
        idx.push(size - 1);
        for &i in &idx {
            let p = inclusion_proof(&t, i, size).unwrap();
            verify_inclusion(&leaves[i as usize], i, size, &p, &roots[size as usize])
                .unwrap_or_else(|e| panic!("inclusion {i}/{size}: {e}"));
            if size <= 64 || i % 21 == 0 {
                assert_inclusion_mutants_fail(
                    &leaves[i as usize],
                    i,
                    size,
                    &p,
                    &roots[size as usize],
                );
            }
        }
        // Consistency: all pairs up to 64, sampled beyond.
        let step = if size <= 64 { 1 } else { 5 };
        let mut olds: Vec<u64> = (0..=size).step_by(step).collect();
        olds.push(size - 1);
        olds.push(size);
        for &old in &olds {
            let p = consistency_proof(&t, old, size).unwrap();
            verify_consistency(old, size, &roots[old as usize], &roots[size as usize], &p)
                .unwrap_or_else(|e| panic!("consistency {old}->{size}: {e}"));
            if 0 < old && old < size && (size <= 64 || old % 15 == 0) {
                assert_consistency_mutants_fail(
                    old,
                    size,
                    &roots[old as usize],
                    &roots[size as usize],
                    &p,
                );
            }
        }
    }
}

#[test]
fn frontier_matches_memory_tree_and_restores() {
    let mut f = Frontier::new();
    let mut m = MemoryTree::new();
    let mut store: HashMap<(u8, u64), Hash> = HashMap::new();
    struct Map<'a>(&'a HashMap<(u8, u64), Hash>);
    impl NodeSource for Map<'_> {
        fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
            self.0
                .get(&(level, index))
                .copied()
                .ok_or(MerkleError::MissingNode { level, index })
        }
    }
    for i in 0..600u64 {
        let l = leaf_hash(&i.to_be_bytes());
        let created = f.push(l);
        m.push(l);
        assert_eq!(created[0], (0, i, l));
        for &(level, index, hash) in &created {
            assert_eq!(
                m.node(level, index).unwrap(),
                hash,
                "created node ({level},{index})"
            );
            assert!(
                store.insert((level, index), hash).is_none(),
                "node created twice"
            );
        }
        assert_eq!(created.len(), 1 + (i + 1).trailing_zeros() as usize);
        assert_eq!(f.size(), i + 1);
        assert_eq!(f.root(), m.root(), "root at {}", i + 1);
        let src = Map(&store);
        let r = Frontier::restore(&src, i + 1).unwrap();
        assert_eq!(r, f, "restore at {}", i + 1);
        assert_eq!(root_at(&src, i + 1).unwrap(), m.root());
    }
    // The persisted nodes are exactly the complete nodes.
    assert_eq!(
        store.len() as u64,
        (0..10).map(|l| 600u64 >> l).sum::<u64>()
    );
    let r = Frontier::restore(&Map(&store), 0).unwrap();
    assert_eq!(r, Frontier::new());
    assert_eq!(r.root(), empty_root());
}

#[test]
fn proofs_only_touch_log_n_nodes() {
    use std::cell::Cell;
    struct Counting<'a>(&'a MemoryTree, Cell<usize>);
    impl NodeSource for Counting<'_> {
        fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
            self.1.set(self.1.get() + 1);
            // Only complete nodes within the tree may be requested.
            self.0.node(level, index)
        }
    }
    let (_, t) = tree_of(1000);
    let c = Counting(&t, Cell::new(0));
    for size in [1u64, 2, 3, 7, 8, 9, 100, 511, 999, 1000] {
        for i in [0, size / 3, size / 2, size - 1] {
            c.1.set(0);
            inclusion_proof(&c, i, size).unwrap();
            assert!(
                c.1.get() <= 2 * 10,
                "inclusion {i}/{size}: {} lookups",
                c.1.get()
            );
        }
        for old in [1, size / 3, size / 2, size - 1] {
            c.1.set(0);
            consistency_proof(&c, old.max(1), size).unwrap();
            assert!(
                c.1.get() <= 2 * 10 + 1,
                "consistency {old}->{size}: {} lookups",
                c.1.get()
            );
        }
    }
}

#[test]
fn edge_cases_give_precise_errors() {
    let (leaves, t) = tree_of(8);
    let root = t.root();
    assert!(matches!(
        inclusion_proof(&t, 8, 8),
        Err(MerkleError::IndexOutOfRange { index: 8, size: 8 })
    ));
    assert!(matches!(
        inclusion_proof(&t, 0, 0),
        Err(MerkleError::IndexOutOfRange { .. })
    ));
    assert!(matches!(
        inclusion_proof(&t, 0, 9),
        Err(MerkleError::MissingNode { .. })
    ));
    assert!(matches!(
        verify_inclusion(&leaves[0], 8, 8, &[], &root),
        Err(MerkleError::IndexOutOfRange { index: 8, size: 8 })
    ));
    assert!(matches!(
        verify_inclusion(&leaves[0], 0, 0, &[], &root),
        Err(MerkleError::IndexOutOfRange { .. })
    ));
    let p = inclusion_proof(&t, 3, 8).unwrap();
    assert!(matches!(
        verify_inclusion(&leaves[3], 3, 8, &p[..2], &root),
        Err(MerkleError::ProofTooShort {
            expected: 3,
            actual: 2
        })
    ));
    assert!(matches!(
        verify_inclusion(&leaves[3], 3, 8, &[&p[..], &[root]].concat(), &root),
        Err(MerkleError::ProofTooLong {
            expected: 3,
            actual: 4
        })
    ));
    assert!(matches!(
        verify_inclusion(&leaves[2], 3, 8, &p, &root),
        Err(MerkleError::RootMismatch { .. })
    ));
    // Single leaf: root is the leaf, proof empty.
    verify_inclusion(&leaves[0], 0, 1, &[], &leaves[0]).unwrap();
    assert!(verify_inclusion(&leaves[0], 0, 1, &[], &empty_root()).is_err());

    let r5 = root_at(&t, 5).unwrap();
    assert!(matches!(
        consistency_proof(&t, 6, 5),
        Err(MerkleError::SizeOrder {
            old_size: 6,
            new_size: 5
        })
    ));
    assert!(matches!(
        verify_consistency(6, 5, &r5, &root, &[]),
        Err(MerkleError::SizeOrder { .. })
    ));
    // Equal sizes: empty proof and equal roots.
    verify_consistency(8, 8, &root, &root, &[]).unwrap();
    assert!(matches!(
        verify_consistency(8, 8, &r5, &root, &[]),
        Err(MerkleError::OldRootMismatch { .. })
    ));
    assert!(matches!(
        verify_consistency(8, 8, &root, &root, &[root]),
        Err(MerkleError::ProofTooLong { .. })
    ));
    // Empty old tree: always consistent, with an empty proof and the empty root.
    verify_consistency(0, 8, &empty_root(), &root, &[]).unwrap();
    verify_consistency(0, 0, &empty_root(), &empty_root(), &[]).unwrap();
    assert!(matches!(
        verify_consistency(0, 8, &r5, &root, &[]),
        Err(MerkleError::OldRootMismatch { .. })
    ));
    assert!(matches!(
        verify_consistency(0, 8, &empty_root(), &root, &[root]),
        Err(MerkleError::ProofTooLong { .. })
    ));
    assert!(consistency_proof(&t, 0, 8).unwrap().is_empty());
    assert!(consistency_proof(&t, 8, 8).unwrap().is_empty());
    // Non-trivial: empty proof is too short; wrong roots are named.
    assert!(matches!(
        verify_consistency(5, 8, &r5, &root, &[]),
        Err(MerkleError::ProofTooShort { actual: 0, .. })
    ));
    let p = consistency_proof(&t, 5, 8).unwrap();
    assert!(matches!(
        verify_consistency(5, 8, &root, &root, &p),
        Err(MerkleError::OldRootMismatch { .. })
    ));
    assert!(matches!(
        verify_consistency(5, 8, &r5, &r5, &p),
        Err(MerkleError::NewRootMismatch { .. })
    ));
    assert!(matches!(
        verify_consistency(5, 8, &r5, &root, &[&p[..], &[root]].concat()),
        Err(MerkleError::ProofTooLong { .. })
    ));
    assert!(matches!(
        verify_consistency(5, 8, &r5, &root, &p[..p.len() - 1]),
        Err(MerkleError::ProofTooShort { .. })
    ));
}

#[test]
fn errors_display_context() {
    let e = MerkleError::IndexOutOfRange { index: 9, size: 3 };
    assert_eq!(
        e.to_string(),
        "leaf index 9 is out of range for a tree of size 3"
    );
    let e = MerkleError::RootMismatch {
        expected: [0; 32],
        computed: [1; 32],
    };
    assert!(e.to_string().contains(&hex::encode([1u8; 32])));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_sizes_prove_and_verify(size in 1u64..3000, a in any::<u64>(), b in any::<u64>()) {
        let (leaves, t) = tree_of(size);
        let root = t.root();
        let mut f = Frontier::new();
        for l in &leaves { f.push(*l); }
        prop_assert_eq!(f.root(), root);
        prop_assert_eq!(Frontier::restore(&t, size).unwrap(), f);
        let i = a % size;
        let p = inclusion_proof(&t, i, size).unwrap();
        prop_assert!(verify_inclusion(&leaves[i as usize], i, size, &p, &root).is_ok());
        prop_assert!(verify_inclusion(&leaves[i as usize], i, size, &p, &[7; 32]).is_err());
        let old = b % (size + 1);
        let old_root = root_at(&t, old).unwrap();
        let c = consistency_proof(&t, old, size).unwrap();
        prop_assert!(verify_consistency(old, size, &old_root, &root, &c).is_ok());
        if 0 < old && old < size {
            let mut bad = c.clone();
            let k = (a as usize) % bad.len();
            bad[k][31] ^= 1;
            prop_assert!(verify_consistency(old, size, &old_root, &root, &bad).is_err());
        }
    }
}
