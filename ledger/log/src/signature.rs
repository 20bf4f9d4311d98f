//! Docket's one Ed25519 signature rule, for single and batch verification.
//!
//! # The rule
//!
//! A signature `sig` (`R_bytes = sig[0..32]`, `S_bytes = sig[32..64]`) by the
//! public key `A_bytes` over the message `M` is valid if and only if, checked
//! in this order (the first failing step names the error):
//!
//! 1. `S_bytes`, read as a little-endian integer, is below the group order
//!    `L = 2^252 + 27742317777372353535851937790883648493`, else
//!    [`SignatureError::NonCanonicalS`];
//! 2. `A_bytes` is the canonical encoding of a curve point (the `y` coordinate
//!    is below `p = 2^255 − 19`, the point is on the curve, and the sign bit is
//!    clear when `x = 0`; equivalently, decompressing and re-compressing gives
//!    the same 32 bytes), else [`SignatureError::NonCanonicalKey`]; and `A` is
//!    not of small order (`[8]A` is not the identity), else
//!    [`SignatureError::SmallOrderKey`];
//! 3. `R_bytes` is canonical in the same sense, else
//!    [`SignatureError::NonCanonicalR`]; and `R` is not of small order, else
//!    [`SignatureError::SmallOrderR`];
//! 4. with `k = SHA-512(R_bytes || A_bytes || M)` read as a 64-byte
//!    little-endian integer reduced mod `L`, the **cofactored** equation
//!    `[8]([S]B − R − [k]A) = identity` holds, else
//!    [`SignatureError::Equation`].
//!
//! This is ZIP-215's cofactored equation plus deterministic encoding checks
//! (ZIP-215 itself accepts non-canonical and small-order `A` and `R`; Docket
//! refuses them). Consequences:
//!
//! * an `R` with a torsion component (`R = R' + T`, `T` of order 2, 4 or 8) is
//!   **accepted** whenever the equation holds for the prime-order part, alone
//!   or in any batch; likewise a key with a torsion component;
//! * small-order `R` and small-order `A` are always refused;
//! * non-canonical `R`, `A` and `S` are always refused;
//! * every honestly produced Ed25519 signature (RFC 8032, OpenSSL, libsodium,
//!   WebCrypto, ed25519-dalek) satisfies the rule.
//!
//! # Why this rule
//!
//! The answer must not depend on how a signature is checked. ed25519-dalek's
//! `verify_strict` uses the cofactorless equation `[S]B = R + [k]A` and
//! refuses an `R` with a torsion component, while its `verify_batch` checks a
//! random linear combination of the cofactorless equations, which such an `R`
//! passes with a probability that depends on the random coefficients, and it
//! skips the weak-key check. A log whose validity depends on which
//! signatures shared a batch cannot be re-verified reproducibly.
//!
//! With the cofactored equation, a random linear combination
//! `[8](Σ zᵢ([Sᵢ]B − Rᵢ − [kᵢ]Aᵢ)) = identity` holds whenever every item's
//! equation holds (the torsion parts vanish under `[8]` whatever the `zᵢ`),
//! and fails with probability at least `1 − 2⁻¹²⁸` when one does not. The
//! encoding checks are deterministic and run per item. So [`verify_batch`]
//! returns exactly what [`verify`] returns for each item (the one possible
//! difference, a bad signature reported valid, has probability at most
//! `2⁻¹²⁸` per batch; a valid one is never refused), at the cost of a
//! cofactorless batch: the extra work is three doublings for the whole batch
//! and byte comparisons per item (a canonical encoding is of small order
//! exactly when it is one of eight known encodings).

use std::collections::HashMap;

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use sha2::{Digest, Sha512};

/// Why a signature or a public key is refused. Each variant is one step of the
/// rule in the [module documentation](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// `S` (the last 32 bytes of the signature) is not below the group order.
    #[error("signature S is not a canonical scalar (S >= L)")]
    NonCanonicalS,
    /// `R` (the first 32 bytes of the signature) is not the canonical encoding
    /// of a curve point.
    #[error("signature R is not the canonical encoding of a curve point")]
    NonCanonicalR,
    /// `R` is a point of small order (order 1, 2, 4 or 8).
    #[error("signature R is a point of small order")]
    SmallOrderR,
    /// The public key is not the canonical encoding of a curve point.
    #[error("public key is not the canonical encoding of a curve point")]
    NonCanonicalKey,
    /// The public key is a point of small order (a "weak" key).
    #[error("public key is a point of small order (weak key)")]
    SmallOrderKey,
    /// The encodings are fine but `[8]([S]B − R − [k]A)` is not the identity.
    #[error("signature does not satisfy the verification equation")]
    Equation,
}

impl SignatureError {
    /// The error's stable snake_case name, as used in the test vectors
    /// (`tests/vectors/signatures/vectors.json`) and in logs.
    pub const fn code(self) -> &'static str {
        match self {
            SignatureError::NonCanonicalS => "non_canonical_s",
            SignatureError::NonCanonicalR => "non_canonical_r",
            SignatureError::SmallOrderR => "small_order_r",
            SignatureError::NonCanonicalKey => "non_canonical_key",
            SignatureError::SmallOrderKey => "small_order_key",
            SignatureError::Equation => "equation",
        }
    }
}

/// Whether `bytes` is in canonical form: `y < p`, and no sign bit when
/// `x = 0`. For an encoding that decompresses, this is exactly "re-compressing
/// gives the same bytes". Byte comparisons only,
/// which is much cheaper than the equivalent re-compression (a field
/// inversion).
fn is_canonical_encoding(bytes: &[u8; 32]) -> bool {
    let sign = bytes[31] >> 7;
    let mut y = *bytes;
    y[31] &= 0x7f;
    // p = 2^255 − 19 is ed ff .. ff 7f little-endian: y >= p exactly when the
    // top 31 bytes are all ff (7f for the last) and the low byte is >= ed.
    let top_all_ones = y[1..31].iter().all(|&b| b == 0xff) && y[31] == 0x7f;
    if top_all_ones && y[0] >= 0xed {
        return false;
    }
    // x = 0 exactly when y² = 1, i.e. y = 1 or y = p − 1 (ec ff .. ff 7f);
    // the sign bit must then be 0.
    if sign == 1 {
        let y_is_one = y[0] == 1 && y[1..].iter().all(|&b| b == 0);
        let y_is_minus_one = top_all_ones && y[0] == 0xec;
        if y_is_one || y_is_minus_one {
            return false;
        }
    }
    true
}

/// The canonical encodings of the eight points of small order (the 8-torsion
/// subgroup: orders 1, 2, 4, 4, 8, 8, 8, 8). A canonical encoding names a
/// point of small order exactly when it is one of these, which is much
/// cheaper than computing `[8]P`.
const SMALL_ORDER_ENCODINGS: [[u8; 32]; 8] = [
    // Order 1: the identity (0, 1).
    hex_32("0100000000000000000000000000000000000000000000000000000000000000"),
    // Order 2: (0, −1).
    hex_32("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    // Order 4: (±sqrt(−1), 0).
    hex_32("0000000000000000000000000000000000000000000000000000000000000000"),
    hex_32("0000000000000000000000000000000000000000000000000000000000000080"),
    // Order 8.
    hex_32("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    hex_32("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85"),
    hex_32("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    hex_32("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"),
];

/// Decodes 64 lowercase hex digits at compile time.
// Invariant: only evaluated in the constant above, so a malformed literal
// fails the build; the panics cannot happen at run time.
const fn hex_32(s: &str) -> [u8; 32] {
    const fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a lowercase hex digit"),
        }
    }
    let s = s.as_bytes();
    assert!(s.len() == 64, "need 64 hex digits");
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = (digit(s[2 * i]) << 4) | digit(s[2 * i + 1]);
        i += 1;
    }
    out
}

/// Why a 32-byte point encoding is refused.
enum PointDefect {
    NonCanonical,
    SmallOrder,
}

/// Decodes a point that must be canonical, on the curve and not of small
/// order (steps 2 and 3 of the rule).
fn decode_checked(bytes: &[u8; 32]) -> Result<EdwardsPoint, PointDefect> {
    if !is_canonical_encoding(bytes) {
        return Err(PointDefect::NonCanonical);
    }
    // Every listed encoding is canonical and on the curve, so testing this
    // before decompression names the same defect as testing `[8]P` after.
    if SMALL_ORDER_ENCODINGS.contains(bytes) {
        return Err(PointDefect::SmallOrder);
    }
    CompressedEdwardsY(*bytes)
        .decompress()
        .ok_or(PointDefect::NonCanonical)
}

/// Step 1: `S` is a canonical scalar.
fn parse_s(signature: &[u8; 64]) -> Result<Scalar, SignatureError> {
    let mut s = [0u8; 32];
    s.copy_from_slice(&signature[32..]);
    Option::from(Scalar::from_canonical_bytes(s)).ok_or(SignatureError::NonCanonicalS)
}

/// Step 3: `R` is canonical and not of small order.
fn parse_r(signature: &[u8; 64]) -> Result<EdwardsPoint, SignatureError> {
    let mut r = [0u8; 32];
    r.copy_from_slice(&signature[..32]);
    decode_checked(&r).map_err(|d| match d {
        PointDefect::NonCanonical => SignatureError::NonCanonicalR,
        PointDefect::SmallOrder => SignatureError::SmallOrderR,
    })
}

/// `k = SHA-512(R_bytes || A_bytes || M) mod L`.
fn challenge(signature: &[u8; 64], key: &[u8; 32], message: &[u8]) -> Scalar {
    Scalar::from_hash(
        Sha512::new()
            .chain_update(&signature[..32])
            .chain_update(key)
            .chain_update(message),
    )
}

/// A public key that passed [`check_public_key`], kept decompressed.
///
/// Checking and decompressing a key costs a noticeable share of a
/// verification (about 4.5 of 37 µs measured, and more relative to a batch):
/// parse each author's key once and reuse it with [`verify_prepared`] and
/// [`verify_batch`].
/// Equality and hashing use the 32-byte encoding.
#[derive(Clone, Copy, Debug)]
pub struct PublicKey {
    bytes: [u8; 32],
    point: EdwardsPoint,
}

impl PublicKey {
    /// Checks (step 2 of the rule) and decompresses a public key.
    pub fn parse(key: &[u8; 32]) -> Result<Self, SignatureError> {
        let point = decode_checked(key).map_err(|d| match d {
            PointDefect::NonCanonical => SignatureError::NonCanonicalKey,
            PointDefect::SmallOrder => SignatureError::SmallOrderKey,
        })?;
        Ok(PublicKey { bytes: *key, point })
    }

    /// The key's 32-byte encoding (canonical, as given to [`PublicKey::parse`]).
    pub fn bytes(&self) -> [u8; 32] {
        self.bytes
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for PublicKey {}

impl std::hash::Hash for PublicKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes.hash(state);
    }
}

/// Checks a public key's encoding: canonical, on the curve, not of small
/// order (step 2 of the rule). Used at key registration too, so that a key
/// that could never sign is refused up front.
pub fn check_public_key(key: &[u8; 32]) -> Result<(), SignatureError> {
    PublicKey::parse(key).map(|_| ())
}

/// A signature whose encodings passed steps 1 and 3, ready for step 4.
struct Prepared {
    s: Scalar,
    r: EdwardsPoint,
    k: Scalar,
}

impl Prepared {
    fn new(key: &PublicKey, message: &[u8], signature: &[u8; 64]) -> Result<Self, SignatureError> {
        let s = parse_s(signature)?;
        let r = parse_r(signature)?;
        let k = challenge(signature, &key.bytes, message);
        Ok(Prepared { s, r, k })
    }

    /// Step 4 alone: `[8]([S]B − R − [k]A) = identity`.
    fn equation_holds(&self, key: &EdwardsPoint) -> bool {
        let sb_minus_ka = EdwardsPoint::vartime_double_scalar_mul_basepoint(&-self.k, key, &self.s);
        (sb_minus_ka - self.r).mul_by_cofactor().is_identity()
    }

    fn check(&self, key: &EdwardsPoint) -> Result<(), SignatureError> {
        if self.equation_holds(key) {
            Ok(())
        } else {
            Err(SignatureError::Equation)
        }
    }
}

/// Verifies one signature under the rule (see the [module
/// documentation](self)).
pub fn verify(key: &[u8; 32], message: &[u8], signature: &[u8; 64]) -> Result<(), SignatureError> {
    // Step 1 comes before the key check so that the error named for a
    // signature with several defects follows the rule's order.
    parse_s(signature)?;
    let key = PublicKey::parse(key)?;
    verify_prepared(&key, message, signature)
}

/// Verifies one signature under the rule with an already checked key.
/// Same answer as [`verify`] for that key's bytes.
pub fn verify_prepared(
    key: &PublicKey,
    message: &[u8],
    signature: &[u8; 64],
) -> Result<(), SignatureError> {
    Prepared::new(key, message, signature)?.check(&key.point)
}

/// Verifies many signatures; item `i` of the result is exactly what
/// [`verify_prepared`] (and so [`verify`]) returns for item `i`, whatever
/// else is in the batch (up to a `2⁻¹²⁸` chance of reporting a bad signature
/// valid; a valid signature is never refused). Items are
/// `(key, message, signature)`.
///
/// The encoding checks (steps 1 to 3) run per item. The items that pass them
/// are checked together with one cofactored random linear combination,
/// `[8](Σ zᵢ([Sᵢ]B − Rᵢ − [kᵢ]Aᵢ)) = identity` with fresh random 128-bit `zᵢ`
/// (keys shared by several items are merged into one term). If that fails,
/// or the system's random source is unavailable, each of those items is
/// checked alone. Single-threaded: callers split large inputs into chunks
/// (64 to 256 items amortise well) and parallelise over them.
pub fn verify_batch(items: &[(&PublicKey, &[u8], &[u8; 64])]) -> Vec<Result<(), SignatureError>> {
    let mut results = vec![Ok(()); items.len()];
    let mut pending = Vec::with_capacity(items.len());
    for (i, (key, message, signature)) in items.iter().enumerate() {
        match Prepared::new(key, message, signature) {
            Ok(p) => pending.push((i, p)),
            Err(e) => results[i] = Err(e),
        }
    }
    // One item: the single equation is cheaper than a three-point combination.
    if pending.len() >= 2 && combination_holds(items, &pending) {
        return results;
    }
    for (i, p) in &pending {
        results[*i] = p.check(&items[*i].0.point);
    }
    results
}

/// The cofactored random linear combination over `pending` (indices into
/// `items` with their prepared signatures). False if it does not hold or no
/// randomness is available; the caller then checks each item alone.
fn combination_holds(
    items: &[(&PublicKey, &[u8], &[u8; 64])],
    pending: &[(usize, Prepared)],
) -> bool {
    let mut random = vec![0u8; 16 * pending.len()];
    if getrandom::fill(&mut random).is_err() {
        return false;
    }
    let (chunks, _) = random.as_chunks::<16>();
    let zs: Vec<Scalar> = chunks
        .iter()
        .map(|c| Scalar::from(u128::from_le_bytes(*c)))
        .collect();

    // Σ zᵢ([Sᵢ]B − Rᵢ − [kᵢ]Aᵢ) = 0  ⇔  −(Σ zᵢSᵢ)B + Σ zᵢRᵢ + Σ_A (Σ_{Aᵢ=A} zᵢkᵢ)A = 0.
    let mut b_coefficient = Scalar::ZERO;
    let mut key_terms: Vec<(EdwardsPoint, Scalar)> = Vec::new();
    let mut key_index: HashMap<[u8; 32], usize> = HashMap::new();
    for ((i, p), z) in pending.iter().zip(&zs) {
        b_coefficient += z * p.s;
        let key = items[*i].0;
        let zk = z * p.k;
        match key_index.get(&key.bytes) {
            Some(&j) => key_terms[j].1 += zk,
            None => {
                key_index.insert(key.bytes, key_terms.len());
                key_terms.push((key.point, zk));
            }
        }
    }
    let scalars = std::iter::once(-b_coefficient)
        .chain(zs.iter().copied())
        .chain(key_terms.iter().map(|(_, c)| *c));
    let points = std::iter::once(ED25519_BASEPOINT_POINT)
        .chain(pending.iter().map(|(_, p)| p.r))
        .chain(key_terms.iter().map(|(a, _)| *a));
    EdwardsPoint::vartime_multiscalar_mul(scalars, points)
        .mul_by_cofactor()
        .is_identity()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey, Verifier};

    /// Group order L, little-endian.
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    fn arr<const N: usize>(v: &[u8]) -> [u8; N] {
        v.try_into().unwrap()
    }

    /// Little-endian 256-bit addition (no overflow in the cases used).
    fn add_le(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let mut carry = 0u16;
        for i in 0..32 {
            let t = u16::from(a[i]) + u16::from(b[i]) + carry;
            out[i] = t as u8;
            carry = t >> 8;
        }
        assert_eq!(carry, 0);
        out
    }

    /// An RFC 8032 key from a seed: (secret scalar a, nonce prefix, A bytes).
    fn expand(seed: &[u8; 32]) -> (Scalar, [u8; 32], [u8; 32]) {
        let hash: [u8; 64] = Sha512::digest(seed).into();
        let mut a = [0u8; 32];
        a.copy_from_slice(&hash[..32]);
        a[0] &= 248;
        a[31] &= 127;
        a[31] |= 64;
        let a = Scalar::from_bytes_mod_order(a);
        let prefix: [u8; 32] = arr(&hash[32..]);
        (a, prefix, EdwardsPoint::mul_base(&a).compress().to_bytes())
    }

    /// Signs with the nonce point `rB + torsion` and key bytes `key` (whose
    /// prime-order part must be `aB`).
    fn sign_with(
        a: Scalar,
        prefix: &[u8; 32],
        key: &[u8; 32],
        message: &[u8],
        torsion: EdwardsPoint,
    ) -> [u8; 64] {
        let r = Scalar::from_hash(Sha512::new().chain_update(prefix).chain_update(message));
        let big_r = (EdwardsPoint::mul_base(&r) + torsion).compress().to_bytes();
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&big_r);
        let k = challenge(&sig, key, message);
        sig[32..].copy_from_slice((r + k * a).as_bytes());
        sig
    }

    fn torsion_point(order: u32) -> EdwardsPoint {
        // A point of order 8 (checked by `torsion_helper_has_the_right_orders`);
        // its multiples by 2 and 4 have orders 4 and 2.
        let t8 = CompressedEdwardsY(arr(&h(
            "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        )))
        .decompress()
        .unwrap();
        match order {
            8 => t8,
            4 => t8 + t8,
            2 => t8 + t8 + t8 + t8,
            _ => unreachable!(),
        }
    }

    fn point_order(p: &EdwardsPoint) -> u32 {
        let mut q = *p;
        for order in [1, 2, 4, 8] {
            if q.is_identity() {
                return order;
            }
            q = q + q;
        }
        0
    }

    #[test]
    fn torsion_helper_has_the_right_orders() {
        for order in [2, 4, 8] {
            assert_eq!(point_order(&torsion_point(order)), order);
        }
    }

    #[test]
    fn rfc8032_test_1() {
        let key = arr(&h(
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        ));
        let sig = arr(&h(concat!(
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155",
            "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        )));
        assert_eq!(verify(&key, b"", &sig), Ok(()));
        assert_eq!(verify(&key, b"x", &sig), Err(SignatureError::Equation));
    }

    #[test]
    fn honest_signatures_verify_alone_and_in_batches() {
        let keys: Vec<SigningKey> = (0..8u8).map(|i| SigningKey::from_bytes(&[i; 32])).collect();
        let messages: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; usize::from(i) * 7]).collect();
        let sigs: Vec<[u8; 64]> = keys
            .iter()
            .zip(&messages)
            .map(|(k, m)| k.sign(m).to_bytes())
            .collect();
        let pks: Vec<PublicKey> = keys
            .iter()
            .map(|k| PublicKey::parse(k.verifying_key().as_bytes()).unwrap())
            .collect();
        for i in 0..8 {
            assert_eq!(verify(&pks[i].bytes(), &messages[i], &sigs[i]), Ok(()));
            assert_eq!(verify_prepared(&pks[i], &messages[i], &sigs[i]), Ok(()));
        }
        let items: Vec<_> = (0..8)
            .map(|i| (&pks[i], messages[i].as_slice(), &sigs[i]))
            .collect();
        assert!(verify_batch(&items).iter().all(Result::is_ok));
        assert!(verify_batch(&[]).is_empty());
    }

    #[test]
    fn same_author_items_are_merged_and_still_checked() {
        let (a, prefix, key) = expand(&[9; 32]);
        let pk = PublicKey::parse(&key).unwrap();
        let messages: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 3]).collect();
        let mut sigs: Vec<[u8; 64]> = messages
            .iter()
            .map(|m| sign_with(a, &prefix, &key, m, EdwardsPoint::default()))
            .collect();
        let items: Vec<_> = messages
            .iter()
            .zip(&sigs)
            .map(|(m, s)| (&pk, m.as_slice(), s))
            .collect();
        assert!(verify_batch(&items).iter().all(Result::is_ok));
        sigs[3][40] ^= 1;
        let items: Vec<_> = messages
            .iter()
            .zip(&sigs)
            .map(|(m, s)| (&pk, m.as_slice(), s))
            .collect();
        let got = verify_batch(&items);
        for (i, r) in got.iter().enumerate() {
            let want = if i == 3 {
                Err(SignatureError::Equation)
            } else {
                Ok(())
            };
            assert_eq!(*r, want, "item {i}");
        }
    }

    #[test]
    fn mixed_order_r_is_accepted_everywhere_unlike_dalek_strict() {
        let (a, prefix, key) = expand(&[7; 32]);
        let pk = PublicKey::parse(&key).unwrap();
        let dalek = ed25519_dalek::VerifyingKey::from_bytes(&key).unwrap();
        for order in [2, 4, 8] {
            let sig = sign_with(a, &prefix, &key, b"m", torsion_point(order));
            assert_eq!(verify(&key, b"m", &sig), Ok(()), "order {order}");
            assert_eq!(verify_batch(&[(&pk, b"m".as_slice(), &sig)]), vec![Ok(())]);
            let dsig = ed25519_dalek::Signature::from_bytes(&sig);
            assert!(dalek.verify_strict(b"m", &dsig).is_err(), "order {order}");
        }
    }

    #[test]
    fn mixed_order_key_is_accepted() {
        let (a, prefix, _) = expand(&[5; 32]);
        let key = (EdwardsPoint::mul_base(&a) + torsion_point(8))
            .compress()
            .to_bytes();
        let sig = sign_with(a, &prefix, &key, b"m", EdwardsPoint::default());
        assert_eq!(verify(&key, b"m", &sig), Ok(()));
    }

    #[test]
    fn small_order_and_non_canonical_inputs_are_refused() {
        let (a, prefix, key) = expand(&[3; 32]);
        let honest = sign_with(a, &prefix, &key, b"m", EdwardsPoint::default());

        // Small-order keys: identity and the order-8 point.
        let identity = EdwardsPoint::default().compress().to_bytes();
        let t8 = torsion_point(8).compress().to_bytes();
        for k in [identity, t8] {
            assert_eq!(check_public_key(&k), Err(SignatureError::SmallOrderKey));
            assert_eq!(
                verify(&k, b"m", &honest),
                Err(SignatureError::SmallOrderKey)
            );
        }

        // Small-order R.
        let mut sig = honest;
        sig[..32].copy_from_slice(&t8);
        assert_eq!(verify(&key, b"m", &sig), Err(SignatureError::SmallOrderR));

        // Non-canonical R: y = p + 1 (the identity written non-canonically).
        let mut p_plus_1 = [0xffu8; 32];
        p_plus_1[0] = 0xee;
        p_plus_1[31] = 0x7f;
        sig[..32].copy_from_slice(&p_plus_1);
        assert_eq!(verify(&key, b"m", &sig), Err(SignatureError::NonCanonicalR));
        assert_eq!(
            check_public_key(&p_plus_1),
            Err(SignatureError::NonCanonicalKey)
        );

        // Non-canonical S: S + L.
        let mut sig = honest;
        let s_plus_l = add_le(&arr(&honest[32..]), &L);
        sig[32..].copy_from_slice(&s_plus_l);
        assert_eq!(verify(&key, b"m", &sig), Err(SignatureError::NonCanonicalS));
        // Step 1 is named before the key's defect.
        assert_eq!(
            verify(&identity, b"m", &sig),
            Err(SignatureError::NonCanonicalS)
        );
    }

    #[test]
    fn small_order_table_is_the_eight_torsion_subgroup() {
        let mut table: Vec<[u8; 32]> = curve25519_dalek::constants::EIGHT_TORSION
            .iter()
            .map(|p| p.compress().to_bytes())
            .collect();
        let mut ours = SMALL_ORDER_ENCODINGS.to_vec();
        table.sort_unstable();
        ours.sort_unstable();
        assert_eq!(table, ours);
        for e in &SMALL_ORDER_ENCODINGS {
            assert!(is_canonical_encoding(e));
            let p = CompressedEdwardsY(*e).decompress().unwrap();
            assert!(p.is_small_order());
        }
    }

    #[test]
    fn byte_checks_match_recompression_and_cofactor_reference() {
        let mut cases: Vec<[u8; 32]> = Vec::new();
        for sign in [0u8, 0x80] {
            for low in 0u8..=40 {
                // y = low (small values, including 0 and 1).
                let mut y = [0u8; 32];
                y[0] = low;
                y[31] |= sign;
                cases.push(y);
                // y = 2^255 − 1 − low (around p = 2^255 − 19).
                let mut y = [0xffu8; 32];
                y[0] = 0xff - low;
                y[31] = 0x7f | sign;
                cases.push(y);
            }
        }
        for seed in 0u8..64 {
            let p = EdwardsPoint::mul_base(&Scalar::from(u64::from(seed) + 1));
            cases.push(p.compress().to_bytes());
            cases.push((p + torsion_point(8)).compress().to_bytes());
            let hash: [u8; 64] = Sha512::digest([seed]).into();
            cases.push(arr(&hash[..32]));
        }
        for bytes in &cases {
            // Reference: decompress, re-compress and compare, then compute [8]P.
            let want = match CompressedEdwardsY(*bytes).decompress() {
                None => Err(SignatureError::NonCanonicalKey),
                Some(p) if p.compress().to_bytes() != *bytes => {
                    Err(SignatureError::NonCanonicalKey)
                }
                Some(p) if p.is_small_order() => Err(SignatureError::SmallOrderKey),
                Some(_) => Ok(()),
            };
            assert_eq!(check_public_key(bytes), want, "{}", hex::encode(bytes));
        }
    }

    #[test]
    fn batch_answers_equal_single_answers_for_mixed_inputs() {
        let (a, prefix, key) = expand(&[1; 32]);
        let pk = PublicKey::parse(&key).unwrap();
        let messages: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i]).collect();
        let mut sigs: Vec<[u8; 64]> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let torsion = if i % 3 == 0 {
                    torsion_point(8)
                } else {
                    EdwardsPoint::default()
                };
                sign_with(a, &prefix, &key, m, torsion)
            })
            .collect();
        sigs[1][0] ^= 2; // R changes: equation or encoding error
        sigs[4][63] |= 0x80; // S >= L
        sigs[7][10] ^= 1;
        let items: Vec<_> = messages
            .iter()
            .zip(&sigs)
            .map(|(m, s)| (&pk, m.as_slice(), s))
            .collect();
        let got = verify_batch(&items);
        for (i, (m, s)) in messages.iter().zip(&sigs).enumerate() {
            assert_eq!(got[i], verify(&key, m, s), "item {i}");
        }
        assert_eq!(got[4], Err(SignatureError::NonCanonicalS));
        assert_eq!(got[0], Ok(()));
    }

    #[test]
    fn combination_alone_accepts_mixed_order_items() {
        let (a, prefix, key) = expand(&[2; 32]);
        let pk = PublicKey::parse(&key).unwrap();
        let messages: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 9]).collect();
        let sigs: Vec<[u8; 64]> = messages
            .iter()
            .zip([1u32, 2, 4, 8, 8])
            .map(|(m, order)| {
                let t = if order == 1 {
                    EdwardsPoint::default()
                } else {
                    torsion_point(order)
                };
                sign_with(a, &prefix, &key, m, t)
            })
            .collect();
        let items: Vec<_> = messages
            .iter()
            .zip(&sigs)
            .map(|(m, s)| (&pk, m.as_slice(), s))
            .collect();
        let pending: Vec<_> = items
            .iter()
            .enumerate()
            .map(|(i, (k, m, s))| (i, Prepared::new(k, m, s).unwrap()))
            .collect();
        // No fallback involved: the combination itself must hold, every time.
        for _ in 0..20 {
            assert!(combination_holds(&items, &pending));
        }
    }

    #[test]
    fn dalek_signatures_agree_with_dalek_verify() {
        let sk = SigningKey::from_bytes(&[42; 32]);
        let sig = sk.sign(b"hello");
        assert!(sk.verifying_key().verify(b"hello", &sig).is_ok());
        assert_eq!(
            verify(sk.verifying_key().as_bytes(), b"hello", &sig.to_bytes()),
            Ok(())
        );
    }

    #[test]
    fn error_codes_are_snake_case_names() {
        assert_eq!(SignatureError::SmallOrderR.code(), "small_order_r");
        assert_eq!(SignatureError::NonCanonicalKey.code(), "non_canonical_key");
        assert_eq!(
            SignatureError::NonCanonicalS.to_string(),
            "signature S is not a canonical scalar (S >= L)"
        );
    }
}
