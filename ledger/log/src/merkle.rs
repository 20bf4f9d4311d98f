//! RFC 9162 (Certificate Transparency v2) Merkle tree over the event log.
//!
//! * Leaf hash: `SHA-256(0x00 || data)` (RFC 9162 §2.1.1).
//! * Node hash: `SHA-256(0x01 || left || right)` (RFC 9162 §2.1.1).
//! * Empty tree: `SHA-256("")`.
//! * Inclusion proofs: generation per §2.1.3.1, verification per §2.1.3.2.
//! * Consistency proofs: generation per §2.1.4.1, verification per §2.1.4.2.
//!
//! # Node addressing
//!
//! A *complete* node `(level, index)` is the root of the perfect subtree over
//! leaves `[index << level, (index + 1) << level)`; level 0 holds leaf hashes.
//! A node is complete in a tree of `size` leaves iff
//! `(index + 1) << level <= size`. Complete nodes never change once created,
//! so a store can persist them as they are produced ([`Frontier::push`]) and
//! serve them through [`NodeSource`].
//!
//! Proof generation asks the [`NodeSource`] only for complete nodes, at most
//! `2 * ceil(log2(size))` of them per proof: the incomplete right edge of a
//! tree is hashed from its complete subtrees on the fly. Leaves are never read
//! beyond the O(log n) nodes a proof needs.

use std::error::Error as StdError;

use sha2::{Digest, Sha256};

/// A SHA-256 digest: a leaf hash, a node hash or a tree root.
pub type Hash = [u8; 32];

/// Errors from tree access, proof generation and proof verification.
///
/// Verification failures (`IndexOutOfRange` … `NewRootMismatch`) mean the
/// proof does not prove the claim: the caller must treat the claim as false
/// (and, in an audit, report tampering). Generation failures (`MissingNode`,
/// `Source`) mean the store cannot serve the request: the caller reports an
/// internal/storage error and retries or repairs the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MerkleError {
    /// `index >= size`: no such leaf in a tree of that size. The caller asked
    /// for (or was handed) a leaf that the tree does not contain; reject the
    /// request as invalid input.
    #[error("leaf index {index} is out of range for a tree of size {size}")]
    IndexOutOfRange {
        /// The requested leaf index.
        index: u64,
        /// The tree size it was checked against.
        size: u64,
    },
    /// A consistency request or proof with `old_size > new_size`. Trees only
    /// grow: reject as invalid input.
    #[error("old tree size {old_size} is larger than new tree size {new_size}")]
    SizeOrder {
        /// The claimed earlier size.
        old_size: u64,
        /// The claimed later size.
        new_size: u64,
    },
    /// The proof has more hashes than the RFC 9162 algorithm consumes for
    /// these sizes (the walk reached the root with hashes left over). The
    /// proof is invalid; reject it.
    #[error("proof has {actual} hashes, expected {expected}: too long")]
    ProofTooLong {
        /// Number of hashes the sizes call for.
        expected: usize,
        /// Number of hashes supplied.
        actual: usize,
    },
    /// The proof has fewer hashes than the RFC 9162 algorithm needs (the walk
    /// ended before reaching the root, or an empty proof where one is
    /// required). The proof is invalid; reject it.
    #[error("proof has {actual} hashes, expected {expected}: too short")]
    ProofTooShort {
        /// Number of hashes the sizes call for.
        expected: usize,
        /// Number of hashes supplied.
        actual: usize,
    },
    /// An inclusion proof recomputes a different root than the one claimed.
    /// Either the leaf is not at that index or the proof/root is forged;
    /// reject it.
    #[error("inclusion proof yields root {computed}, expected {expected}", computed = hex::encode(computed), expected = hex::encode(expected))]
    RootMismatch {
        /// The root the caller expected (e.g. from a signed checkpoint).
        expected: Hash,
        /// The root recomputed from the leaf and the proof.
        computed: Hash,
    },
    /// A consistency proof does not reproduce the old root: the old tree is
    /// not a prefix of the new one as claimed (or the proof is forged).
    /// Reject; in an audit this is evidence of a rewritten history.
    #[error("consistency proof yields old root {computed}, expected {expected}", computed = hex::encode(computed), expected = hex::encode(expected))]
    OldRootMismatch {
        /// The claimed old root.
        expected: Hash,
        /// The old root recomputed from the proof.
        computed: Hash,
    },
    /// A consistency proof does not reproduce the new root. Reject, as for
    /// [`MerkleError::OldRootMismatch`].
    #[error("consistency proof yields new root {computed}, expected {expected}", computed = hex::encode(computed), expected = hex::encode(expected))]
    NewRootMismatch {
        /// The claimed new root.
        expected: Hash,
        /// The new root recomputed from the proof.
        computed: Hash,
    },
    /// The [`NodeSource`] does not hold complete node `(level, index)`. The
    /// store is behind the requested size or lost data: report an internal
    /// error; rebuild the node table from the events if it persists.
    #[error("node (level {level}, index {index}) is not available")]
    MissingNode {
        /// Level of the missing node (0 = leaf).
        level: u8,
        /// Index of the missing node within its level.
        index: u64,
    },
    /// The [`NodeSource`] failed to read node `(level, index)` (I/O, decode).
    /// Report a storage error; retrying may help.
    #[error("reading node (level {level}, index {index}) failed: {source}")]
    Source {
        /// Level of the node being read.
        level: u8,
        /// Index of the node being read.
        index: u64,
        /// The backend's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
}

/// `SHA-256(0x00 || data)`: the hash of one log entry (RFC 9162 §2.1.1).
#[must_use]
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// `SHA-256(0x01 || left || right)`: an interior node (RFC 9162 §2.1.1).
#[must_use]
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// `SHA-256("")`: the root of the empty tree (RFC 9162 §2.1.1).
#[must_use]
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// Read access to complete-subtree hashes.
///
/// Node `(level, index)` covers leaves `[index << level, (index + 1) << level)`;
/// level 0 are the leaf hashes. Implementations return
/// [`MerkleError::MissingNode`] for nodes they do not hold and
/// [`MerkleError::Source`] for backend failures.
pub trait NodeSource {
    /// The hash of complete node `(level, index)`.
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError>;
}

impl<T: NodeSource + ?Sized> NodeSource for &T {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        (**self).node(level, index)
    }
}

/// An in-memory tree holding every complete node. For tests, small logs and
/// export bundles; memory is about `2 * 32` bytes per leaf.
#[derive(Debug, Clone, Default)]
pub struct MemoryTree {
    /// `levels[l][i]` is node `(l, i)`.
    levels: Vec<Vec<Hash>>,
}

impl MemoryTree {
    /// An empty tree.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a leaf hash (already `leaf_hash`ed) and every node it completes.
    pub fn push(&mut self, leaf: Hash) {
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        self.levels[0].push(leaf);
        let mut level = 0;
        while self.levels[level].len().is_multiple_of(2) {
            let n = self.levels[level].len();
            let parent = node_hash(&self.levels[level][n - 2], &self.levels[level][n - 1]);
            if self.levels.len() == level + 1 {
                self.levels.push(Vec::new());
            }
            self.levels[level + 1].push(parent);
            level += 1;
        }
    }

    /// Number of leaves.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }

    /// True when the tree has no leaves.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The root of the whole tree.
    #[must_use]
    pub fn root(&self) -> Hash {
        // Invariant: every complete node of a tree of `len()` leaves is stored,
        // and `root_at` only asks for complete nodes within `len()`.
        root_at(self, self.len()).expect("MemoryTree holds every complete node")
    }
}

impl NodeSource for MemoryTree {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.levels.get(usize::from(level))?.get(i))
            .copied()
            .ok_or(MerkleError::MissingNode { level, index })
    }
}

/// The right edge of the tree: for each set bit `l` of `size`, the root of the
/// complete subtree of `2^l` leaves on the right edge. O(log n) memory; enough
/// to append leaves and compute the root without reading the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    /// `edge[l]` is `Some` iff bit `l` of `size` is set.
    edge: Vec<Option<Hash>>,
}

impl Frontier {
    /// The frontier of the empty tree.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of leaves appended so far.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends a leaf hash. Returns every complete node created, leaf first:
    /// `(0, index, leaf)`, then each parent it completes, as
    /// `(level, index, hash)`, so the caller can persist them.
    pub fn push(&mut self, leaf: Hash) -> Vec<(u8, u64, Hash)> {
        let new_size = self.size + 1;
        let mut created = vec![(0u8, self.size, leaf)];
        let mut carry = leaf;
        let mut level = 0usize;
        while self.size >> level & 1 == 1 {
            // Invariant: bit `level` of `size` is set, so `edge[level]` is Some.
            let left = self.edge[level]
                .take()
                .expect("frontier edge matches the bits of size");
            carry = node_hash(&left, &carry);
            level += 1;
            // Level < 64 because `new_size` fits in u64.
            created.push((level as u8, (new_size >> level) - 1, carry));
        }
        if self.edge.len() <= level {
            self.edge.resize(level + 1, None);
        }
        self.edge[level] = Some(carry);
        self.size = new_size;
        created
    }

    /// The tree root at the current size (`empty_root()` when empty).
    #[must_use]
    pub fn root(&self) -> Hash {
        let mut acc: Option<Hash> = None;
        for h in self.edge.iter().flatten() {
            acc = Some(match acc {
                None => *h,
                Some(right) => node_hash(h, &right),
            });
        }
        acc.unwrap_or_else(empty_root)
    }

    /// Rebuilds the frontier of a tree of `size` leaves from its stored
    /// complete nodes (one lookup per set bit of `size`).
    pub fn restore(src: &dyn NodeSource, size: u64) -> Result<Self, MerkleError> {
        let mut edge = vec![None; 64 - size.leading_zeros() as usize];
        let mut pos = 0u64;
        for level in (0..edge.len()).rev() {
            if size >> level & 1 == 1 {
                edge[level] = Some(src.node(level as u8, pos >> level)?);
                pos += 1 << level;
            }
        }
        Ok(Self { size, edge })
    }
}

/// Largest power of two strictly less than `n` (`n >= 2`).
fn split_point(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1 << (63 - (n - 1).leading_zeros())
}

/// `MTH(D[lo:hi])` for a range produced by the RFC 9162 recursion: `lo` is a
/// multiple of the smallest power of two `>= hi - lo`. A power-of-two range is
/// one stored node; otherwise the range is hashed from its complete subtrees
/// (one per set bit of `hi - lo`, largest first), folded right to left.
fn range_hash(src: &dyn NodeSource, lo: u64, hi: u64) -> Result<Hash, MerkleError> {
    debug_assert!(hi > lo);
    let len = hi - lo;
    if len.is_power_of_two() {
        let level = len.trailing_zeros();
        return src.node(level as u8, lo >> level);
    }
    let mut parts: Vec<Hash> = Vec::with_capacity(len.count_ones() as usize);
    let mut pos = lo;
    for level in (0..64 - len.leading_zeros()).rev() {
        if len >> level & 1 == 1 {
            parts.push(src.node(level as u8, pos >> level)?);
            pos += 1 << level;
        }
    }
    let mut acc = parts
        .pop()
        .expect("len is not a power of two, so >= 2 parts");
    while let Some(left) = parts.pop() {
        acc = node_hash(&left, &acc);
    }
    Ok(acc)
}

/// The root of the first `size` leaves (`empty_root()` for 0).
pub fn root_at(src: &dyn NodeSource, size: u64) -> Result<Hash, MerkleError> {
    if size == 0 {
        return Ok(empty_root());
    }
    range_hash(src, 0, size)
}

/// The audit path for leaf `index` in the tree of the first `size` leaves
/// (RFC 9162 §2.1.3.1), ordered from the leaf's sibling up to the root's child.
pub fn inclusion_proof(
    src: &dyn NodeSource,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, MerkleError> {
    // A leaf is the complete subtree of height 0.
    subtree_inclusion_proof(src, 0, index, size)
}

/// The audit path above the complete subtree of height `height` whose
/// leaves begin at `index << height`, in the tree of the first `size`
/// leaves: the inclusion proof of that first leaf without the `height`
/// hashes inside the subtree (what [`verify_subtree_inclusion`] takes).
pub fn subtree_inclusion_proof(
    src: &dyn NodeSource,
    height: u32,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, MerkleError> {
    let width = 1u64.checked_shl(height).filter(|w| *w <= size);
    let first = width.and_then(|w| index.checked_mul(w));
    let (Some(width), Some(first)) = (width, first) else {
        return Err(MerkleError::IndexOutOfRange { index, size });
    };
    if first.checked_add(width).is_none_or(|end| end > size) {
        return Err(MerkleError::IndexOutOfRange { index: first, size });
    }
    let mut path = Vec::with_capacity(64);
    let (mut lo, mut hi) = (0u64, size);
    // Every aligned complete range inside the tree is one of its nodes, so
    // the halving reaches it exactly.
    while hi - lo > width {
        let mid = lo + split_point(hi - lo);
        if first < mid {
            path.push(range_hash(src, mid, hi)?);
            hi = mid;
        } else {
            path.push(range_hash(src, lo, mid)?);
            lo = mid;
        }
    }
    path.reverse();
    Ok(path)
}

/// The consistency proof between the trees of the first `old_size` and
/// `new_size` leaves (RFC 9162 §2.1.4.1). Empty when `old_size` is 0 or equals
/// `new_size`.
pub fn consistency_proof(
    src: &dyn NodeSource,
    old_size: u64,
    new_size: u64,
) -> Result<Vec<Hash>, MerkleError> {
    if old_size > new_size {
        return Err(MerkleError::SizeOrder { old_size, new_size });
    }
    if old_size == 0 || old_size == new_size {
        return Ok(Vec::new());
    }
    let mut path = Vec::with_capacity(64);
    let (mut lo, mut hi) = (0u64, new_size);
    // `b` of SUBPROOF: true while the old tree's root is the current range's left edge at the top.
    let mut whole_old_is_known = true;
    loop {
        if old_size == hi {
            if !whole_old_is_known {
                path.push(range_hash(src, lo, hi)?);
            }
            break;
        }
        let mid = lo + split_point(hi - lo);
        if old_size <= mid {
            path.push(range_hash(src, mid, hi)?);
            hi = mid;
        } else {
            path.push(range_hash(src, lo, mid)?);
            lo = mid;
            whole_old_is_known = false;
        }
    }
    path.reverse();
    Ok(path)
}

/// Number of hashes in an inclusion proof for `index < size`.
fn inclusion_len(index: u64, size: u64) -> usize {
    let (mut lo, mut hi, mut n) = (0u64, size, 0usize);
    while hi - lo > 1 {
        let mid = lo + split_point(hi - lo);
        if index < mid {
            hi = mid;
        } else {
            lo = mid;
        }
        n += 1;
    }
    n
}

/// Number of hashes in a consistency proof for `0 < old_size < new_size`.
fn consistency_len(old_size: u64, new_size: u64) -> usize {
    let (mut lo, mut hi, mut n, mut known) = (0u64, new_size, 0usize, true);
    loop {
        if old_size == hi {
            return n + usize::from(!known);
        }
        let mid = lo + split_point(hi - lo);
        if old_size <= mid {
            hi = mid;
        } else {
            lo = mid;
            known = false;
        }
        n += 1;
    }
}

/// Verifies that `leaf` (a leaf hash) is at `index` in the tree of `size`
/// leaves with root `root`, following RFC 9162 §2.1.3.2 step by step.
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), MerkleError> {
    // Step 1.
    if index >= size {
        return Err(MerkleError::IndexOutOfRange { index, size });
    }
    let expected = inclusion_len(index, size);
    // Steps 2 and 3.
    let computed = climb(*leaf, index, size - 1, proof, expected)?;
    if computed != *root {
        return Err(MerkleError::RootMismatch {
            expected: *root,
            computed,
        });
    }
    Ok(())
}

/// The root of a complete subtree from its nodes at one level, left to
/// right (their number is a power of two; one node is its own root).
pub fn complete_subtree_root(nodes: &[Hash]) -> Hash {
    debug_assert!(nodes.len().is_power_of_two());
    let mut level = nodes.to_vec();
    while level.len() > 1 {
        level = level
            .chunks_exact(2)
            .map(|p| node_hash(&p[0], &p[1]))
            .collect();
    }
    level.first().copied().unwrap_or_else(empty_root)
}

/// Verifies that `node` is the root of the complete subtree of height
/// `height` (its `2^height` leaves begin at leaf `index << height`) in the
/// tree of `size` leaves with root `root`. `path` is the audit path above
/// the subtree: the inclusion proof of leaf `index << height` without its
/// first `height` hashes (those inside the subtree). With `height` 0 this is
/// [`verify_inclusion`]; it is the same RFC 9162 §2.1.3.2 walk, begun
/// `height` levels up (inside a complete subtree every step of the walk
/// hashes the running value on the left, so those steps are the subtree's
/// own root).
pub fn verify_subtree_inclusion(
    node: &Hash,
    height: u32,
    index: u64,
    size: u64,
    path: &[Hash],
    root: &Hash,
) -> Result<(), MerkleError> {
    let first_leaf = index.checked_shl(height).filter(|f| f >> height == index);
    let end = first_leaf.and_then(|f| f.checked_add(1u64.checked_shl(height)?));
    let (Some(first_leaf), Some(end)) = (first_leaf, end) else {
        return Err(MerkleError::IndexOutOfRange { index, size });
    };
    if end > size {
        return Err(MerkleError::IndexOutOfRange {
            index: first_leaf,
            size,
        });
    }
    let expected = inclusion_len(first_leaf, size) - height as usize;
    let computed = climb(*node, index, (size - 1) >> height, path, expected)?;
    if computed != *root {
        return Err(MerkleError::RootMismatch {
            expected: *root,
            computed,
        });
    }
    Ok(())
}

/// RFC 9162 §2.1.3.2 step 4 from `r` at position `fn_` of last position
/// `sn`, over `proof` (of `expected` hashes); the root it gives.
fn climb(
    mut r: Hash,
    mut fn_: u64,
    mut sn: u64,
    proof: &[Hash],
    expected: usize,
) -> Result<Hash, MerkleError> {
    // Step 4.
    for p in proof {
        if sn == 0 {
            return Err(MerkleError::ProofTooLong {
                expected,
                actual: proof.len(),
            });
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    // Step 5.
    if sn != 0 {
        return Err(MerkleError::ProofTooShort {
            expected,
            actual: proof.len(),
        });
    }
    Ok(r)
}

/// Verifies that the tree of `old_size` leaves with root `old_root` is a
/// prefix of the tree of `new_size` leaves with root `new_root`, following
/// RFC 9162 §2.1.4.2 step by step.
///
/// Edge cases (outside the RFC's `0 < first < second`):
/// * `old_size > new_size`: [`MerkleError::SizeOrder`].
/// * `old_size == new_size`: the proof must be empty and the roots equal.
/// * `old_size == 0`: the proof must be empty and `old_root` must be
///   `empty_root()`; every tree extends the empty tree.
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), MerkleError> {
    if old_size > new_size {
        return Err(MerkleError::SizeOrder { old_size, new_size });
    }
    if old_size == new_size || old_size == 0 {
        if !proof.is_empty() {
            return Err(MerkleError::ProofTooLong {
                expected: 0,
                actual: proof.len(),
            });
        }
        let expected_old = if old_size == 0 {
            empty_root()
        } else {
            *new_root
        };
        if *old_root != expected_old {
            return Err(MerkleError::OldRootMismatch {
                expected: *old_root,
                computed: expected_old,
            });
        }
        return Ok(());
    }
    let expected = consistency_len(old_size, new_size);
    // Step 1.
    if proof.is_empty() {
        return Err(MerkleError::ProofTooShort {
            expected,
            actual: 0,
        });
    }
    // Step 2: with `first` a power of two, the old root is the path's head.
    let prepend = old_size.is_power_of_two();
    let mut path = std::iter::once(if prepend { old_root } else { &proof[0] })
        .chain(proof[usize::from(!prepend)..].iter());
    // Step 3.
    let (mut fn_, mut sn) = (old_size - 1, new_size - 1);
    // Step 4.
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    // Step 5. Invariant: the iterator starts with `once(..)`, so it has a head.
    let first = *path.next().expect("path starts with one element");
    let (mut fr, mut sr) = (first, first);
    // Step 6.
    for c in path {
        if sn == 0 {
            return Err(MerkleError::ProofTooLong {
                expected,
                actual: proof.len(),
            });
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    // Step 7.
    if sn != 0 {
        return Err(MerkleError::ProofTooShort {
            expected,
            actual: proof.len(),
        });
    }
    if fr != *old_root {
        return Err(MerkleError::OldRootMismatch {
            expected: *old_root,
            computed: fr,
        });
    }
    if sr != *new_root {
        return Err(MerkleError::NewRootMismatch {
            expected: *new_root,
            computed: sr,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_point_values() {
        for (n, k) in [
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 4),
            (7, 4),
            (8, 4),
            (9, 8),
            (28937, 16384),
        ] {
            assert_eq!(split_point(n), k, "n={n}");
        }
    }

    #[test]
    fn proof_lengths_match_generation() {
        for size in 1..70u64 {
            let mut t = MemoryTree::new();
            for i in 0..size {
                t.push(leaf_hash(&i.to_be_bytes()));
            }
            for i in 0..size {
                assert_eq!(
                    inclusion_proof(&t, i, size).unwrap().len(),
                    inclusion_len(i, size)
                );
            }
            for old in 1..size {
                assert_eq!(
                    consistency_proof(&t, old, size).unwrap().len(),
                    consistency_len(old, size)
                );
            }
        }
    }

    #[test]
    fn every_complete_subtree_proves_by_the_path_above_it_and_nothing_else_does() {
        for size in 1..70u64 {
            let mut t = MemoryTree::new();
            let leaves: Vec<Hash> = (0..size).map(|i| leaf_hash(&i.to_be_bytes())).collect();
            for l in &leaves {
                t.push(*l);
            }
            let root = t.root();
            for height in 0..7u32 {
                let width = 1u64 << height;
                for index in 0..size.div_ceil(width) + 1 {
                    let first = index * width;
                    let complete = first + width <= size;
                    let path = if first < size {
                        inclusion_proof(&t, first, size).unwrap()
                    } else {
                        Vec::new()
                    };
                    let above = path.get(height as usize..).unwrap_or_default();
                    if complete {
                        assert_eq!(
                            subtree_inclusion_proof(&t, height, index, size).unwrap(),
                            above
                        );
                    } else {
                        assert!(subtree_inclusion_proof(&t, height, index, size).is_err());
                    }
                    let node = if complete {
                        complete_subtree_root(&leaves[first as usize..(first + width) as usize])
                    } else {
                        empty_root()
                    };
                    let r = verify_subtree_inclusion(&node, height, index, size, above, &root);
                    assert_eq!(
                        r.is_ok(),
                        complete,
                        "size {size} height {height} index {index}"
                    );
                    if !complete {
                        continue;
                    }
                    // A wrong node, a wrong position or a wrong path does not.
                    let mut wrong = node;
                    wrong[0] ^= 1;
                    assert!(
                        verify_subtree_inclusion(&wrong, height, index, size, above, &root)
                            .is_err()
                    );
                    if first + 2 * width <= size {
                        assert!(
                            verify_subtree_inclusion(&node, height, index + 1, size, above, &root)
                                .is_err()
                        );
                    }
                    if let Some((last, rest)) = above.split_last() {
                        assert!(
                            verify_subtree_inclusion(&node, height, index, size, rest, &root)
                                .is_err()
                        );
                        let mut bent = above.to_vec();
                        bent[0] = *last;
                        bent[0][1] ^= 1;
                        assert!(
                            verify_subtree_inclusion(&node, height, index, size, &bent, &root)
                                .is_err()
                        );
                    }
                    if height == 0 {
                        verify_inclusion(&node, index, size, above, &root).unwrap();
                    }
                }
            }
        }
    }
}
