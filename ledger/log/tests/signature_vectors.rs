//! Docket's Ed25519 signature rule against the committed vectors
//! (`tests/vectors/signatures/vectors.json`, explained in the README next to
//! it): every vector must give the same answer alone, in a batch of one and
//! inside a batch of 64 valid signatures. The vectors are built here from fixed
//! seeds; `vectors_file_matches_generator` fails if the committed file drifts.
//! Regenerate with
//! `UPDATE_VECTORS=1 cargo test -p docket-log --test signature_vectors`.

use std::path::PathBuf;

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use docket_log::signature::{PublicKey, SignatureError, verify, verify_batch, verify_prepared};
use ed25519_dalek::{Signer, SigningKey};
use proptest::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256, Sha512};

// ---------------------------------------------------------------------------
// Constants and small helpers
// ---------------------------------------------------------------------------

/// The group order L = 2^252 + 27742317777372353535851937790883648493, little-endian.
const L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// Encodings used by the vectors (all little-endian, sign of x in bit 255).
const IDENTITY: &str = "0100000000000000000000000000000000000000000000000000000000000000";
/// A point of order 8.
const ORDER_8_A: &str = "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05";
/// Another point of order 8.
const ORDER_8_B: &str = "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a";
/// y = p + 1 ≡ 1: the identity, written non-canonically.
const IDENTITY_Y_P_PLUS_1: &str =
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f";
/// y = 1 with the sign bit set although x = 0: the identity, "negative zero".
const IDENTITY_NEGATIVE_ZERO: &str =
    "0100000000000000000000000000000000000000000000000000000000000080";
/// y = p + 3 ≡ 3: a point of large order, written non-canonically.
const Y_P_PLUS_3: &str = "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f";
/// y = 2: no curve point has this y.
const NOT_ON_CURVE_Y_2: &str = "0200000000000000000000000000000000000000000000000000000000000000";

fn unhex<const N: usize>(s: &str) -> [u8; N] {
    hex::decode(s).unwrap().try_into().unwrap()
}

fn point(s: &str) -> EdwardsPoint {
    CompressedEdwardsY(unhex(s)).decompress().unwrap()
}

/// The smallest n in {1, 2, 4, 8} with [n]P = identity, or 0 (large order).
fn order(p: &EdwardsPoint) -> u32 {
    let mut q = *p;
    for n in [1, 2, 4, 8] {
        if q == EdwardsPoint::default() {
            return n;
        }
        q = q + q;
    }
    0
}

fn torsion(n: u32) -> EdwardsPoint {
    let t8 = point(ORDER_8_A);
    let t = match n {
        8 => t8,
        4 => t8 + t8,
        2 => t8 + t8 + t8 + t8,
        _ => unreachable!(),
    };
    assert_eq!(order(&t), n);
    t
}

fn add_le(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut carry = 0u16;
    for i in 0..32 {
        let t = u16::from(a[i]) + u16::from(b[i]) + carry;
        out[i] = t as u8;
        carry = t >> 8;
    }
    assert_eq!(carry, 0, "sum overflows 256 bits");
    out
}

/// The Docket signing message: "docket/v1/" || kind || 0x00 || SHA-256(payload).
fn docket_message(kind: &str, payload: &[u8]) -> Vec<u8> {
    let mut m = b"docket/v1/".to_vec();
    m.extend_from_slice(kind.as_bytes());
    m.push(0);
    m.extend_from_slice(&Sha256::digest(payload));
    m
}

/// A fixed 32-byte seed: SHA-256("docket/signature-vectors/" || label).
fn seed(label: &str) -> [u8; 32] {
    Sha256::digest(format!("docket/signature-vectors/{label}")).into()
}

/// An RFC 8032 §5.1.5 key: the secret scalar a, the nonce prefix and A = aB.
struct Key {
    a: Scalar,
    prefix: [u8; 32],
    public: [u8; 32],
}

fn key(seed: &[u8; 32]) -> Key {
    let h: [u8; 64] = Sha512::digest(seed).into();
    let mut a: [u8; 32] = h[..32].try_into().unwrap();
    a[0] &= 248;
    a[31] &= 127;
    a[31] |= 64;
    let a = Scalar::from_bytes_mod_order(a);
    Key {
        a,
        prefix: h[32..].try_into().unwrap(),
        public: EdwardsPoint::mul_base(&a).compress().to_bytes(),
    }
}

/// k = SHA-512(R || A || M) mod L.
fn challenge(r: &[u8; 32], a: &[u8; 32], m: &[u8]) -> Scalar {
    Scalar::from_hash(
        Sha512::new()
            .chain_update(r)
            .chain_update(a)
            .chain_update(m),
    )
}

/// The RFC 8032 nonce r = SHA-512(prefix || M) mod L.
fn nonce(k: &Key, m: &[u8]) -> Scalar {
    Scalar::from_hash(Sha512::new().chain_update(k.prefix).chain_update(m))
}

fn signature(r: &[u8; 32], s: &[u8; 32]) -> [u8; 64] {
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(r);
    sig[32..].copy_from_slice(s);
    sig
}

/// RFC 8032 signing, except that the nonce point is rB + `t` and `public` is
/// the key encoding hashed into k (its prime-order part must be aB).
fn sign_twisted(k: &Key, public: &[u8; 32], m: &[u8], t: EdwardsPoint) -> [u8; 64] {
    let r = nonce(k, m);
    let big_r = (EdwardsPoint::mul_base(&r) + t).compress().to_bytes();
    let s = r + challenge(&big_r, public, m) * k.a;
    signature(&big_r, s.as_bytes())
}

fn sign(k: &Key, m: &[u8]) -> [u8; 64] {
    sign_twisted(k, &k.public, m, EdwardsPoint::default())
}

/// A signature "valid for any message" under a key whose prime-order part is
/// zero: R = rB, S = r.
fn sign_without_key(k: &Key, m: &[u8]) -> [u8; 64] {
    let r = nonce(k, m);
    signature(
        &EdwardsPoint::mul_base(&r).compress().to_bytes(),
        r.as_bytes(),
    )
}

/// A signature whose R is the given (small-order) encoding and S = k·a, so the
/// cofactored equation holds when R is read leniently: [8](SB − R − kA) =
/// [8](−R) = identity.
fn sign_with_r(k: &Key, m: &[u8], r_hex: &str) -> [u8; 64] {
    let r: [u8; 32] = unhex(r_hex);
    let s = challenge(&r, &k.public, m) * k.a;
    signature(&r, s.as_bytes())
}

// ---------------------------------------------------------------------------
// The vectors
// ---------------------------------------------------------------------------

struct Vector {
    name: &'static str,
    public_key: [u8; 32],
    message: Vec<u8>,
    signature: [u8; 64],
    expected: Result<(), SignatureError>,
}

fn build_vectors() -> Vec<Vector> {
    use SignatureError::*;
    let mut v = Vec::new();
    let mut push = |name, public_key, message: Vec<u8>, signature, expected| {
        v.push(Vector {
            name,
            public_key,
            message,
            signature,
            expected,
        });
    };

    // RFC 8032 §7.1 TEST 1 and TEST 2, checked against our signer.
    let rfc1 = key(&unhex(
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    ));
    let rfc1_sig: [u8; 64] = unhex(concat!(
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155",
        "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
    ));
    assert_eq!(
        hex::encode(rfc1.public),
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    );
    assert_eq!(sign(&rfc1, b""), rfc1_sig);
    push("rfc8032_test_1", rfc1.public, vec![], rfc1_sig, Ok(()));
    let rfc2 = key(&unhex(
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
    ));
    let rfc2_sig: [u8; 64] = unhex(concat!(
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da",
        "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
    ));
    assert_eq!(
        hex::encode(rfc2.public),
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
    );
    assert_eq!(sign(&rfc2, &[0x72]), rfc2_sig);
    push("rfc8032_test_2", rfc2.public, vec![0x72], rfc2_sig, Ok(()));

    // An honest Docket signature (ed25519-dalek's signer, checked against ours).
    let author_seed = seed("author");
    let author = key(&author_seed);
    let msg = docket_message(
        "verdict.issued",
        br#"{"subject":"example","verdict":"pass"}"#,
    );
    let honest = SigningKey::from_bytes(&author_seed).sign(&msg).to_bytes();
    assert_eq!(honest, sign(&author, &msg));
    push("docket_honest", author.public, msg.clone(), honest, Ok(()));

    // Mixed-order R = rB + T: valid under the cofactored equation.
    for (name, n) in [
        ("mixed_order_r_order_2", 2),
        ("mixed_order_r_order_4", 4),
        ("mixed_order_r_order_8", 8),
    ] {
        let m = docket_message("x-vector", name.as_bytes());
        let sig = sign_twisted(&author, &author.public, &m, torsion(n));
        push(name, author.public, m, sig, Ok(()));
    }

    // Mixed-order key A = aB + T8 (not of small order): valid.
    let mixed = key(&seed("mixed-order-key"));
    let mixed_public = (EdwardsPoint::mul_base(&mixed.a) + torsion(8))
        .compress()
        .to_bytes();
    let m = docket_message("x-vector", b"mixed_order_key_order_8");
    let sig = sign_twisted(&mixed, &mixed_public, &m, EdwardsPoint::default());
    push("mixed_order_key_order_8", mixed_public, m, sig, Ok(()));

    // Small-order keys: R = rB, S = r satisfies the equation for any message.
    for (name, a) in [
        ("small_order_key_identity", IDENTITY),
        ("small_order_key_order_8", ORDER_8_A),
    ] {
        let m = docket_message("x-vector", name.as_bytes());
        let sig = sign_without_key(&author, &m);
        push(name, unhex(a), m, sig, Err(SmallOrderKey));
    }

    // Small-order R with S = k·a: the equation holds, R is refused.
    for (name, r) in [
        ("small_order_r_identity", IDENTITY),
        ("small_order_r_order_8", ORDER_8_B),
    ] {
        let m = docket_message("x-vector", name.as_bytes());
        push(
            name,
            author.public,
            m.clone(),
            sign_with_r(&author, &m, r),
            Err(SmallOrderR),
        );
    }

    // Non-canonical R.
    for (name, r) in [
        ("non_canonical_r_y_p_plus_1", IDENTITY_Y_P_PLUS_1),
        ("non_canonical_r_negative_zero", IDENTITY_NEGATIVE_ZERO),
        ("non_canonical_r_y_p_plus_3", Y_P_PLUS_3),
        ("non_canonical_r_not_on_curve", NOT_ON_CURVE_Y_2),
    ] {
        let m = docket_message("x-vector", name.as_bytes());
        push(
            name,
            author.public,
            m.clone(),
            sign_with_r(&author, &m, r),
            Err(NonCanonicalR),
        );
    }

    // Non-canonical S = S + L, for an honest signature whose S + L < 2^253, so
    // that checking only the top three bits of S does not catch it.
    let (m, sig) = (0u32..)
        .map(|i| {
            let m = docket_message("x-vector", format!("non_canonical_s_plus_l/{i}").as_bytes());
            let sig = sign(&author, &m);
            (m, sig)
        })
        .find(|(_, sig)| {
            let s: [u8; 32] = sig[32..].try_into().unwrap();
            add_le(&s, &L)[31] < 0x20
        })
        .unwrap();
    let s_plus_l = add_le(&sig[32..].try_into().unwrap(), &L);
    let sig_plus_l = signature(&sig[..32].try_into().unwrap(), &s_plus_l);
    push(
        "non_canonical_s_plus_l",
        author.public,
        m,
        sig_plus_l,
        Err(NonCanonicalS),
    );

    // Non-canonical S on a small-order key: step 1 is named first.
    let m = docket_message("x-vector", b"non_canonical_s_and_small_order_key");
    let sig = sign_without_key(&author, &m);
    let s_plus_l = add_le(&sig[32..].try_into().unwrap(), &L);
    let sig = signature(&sig[..32].try_into().unwrap(), &s_plus_l);
    push(
        "non_canonical_s_and_small_order_key",
        unhex(IDENTITY),
        m,
        sig,
        Err(NonCanonicalS),
    );

    // Non-canonical keys: R = rB, S = r, which would pass for any message if
    // the key were read leniently as the identity.
    for (name, a) in [
        ("non_canonical_key_y_p_plus_1", IDENTITY_Y_P_PLUS_1),
        ("non_canonical_key_negative_zero", IDENTITY_NEGATIVE_ZERO),
        ("non_canonical_key_not_on_curve", NOT_ON_CURVE_Y_2),
    ] {
        let m = docket_message("x-vector", name.as_bytes());
        let sig = sign_without_key(&author, &m);
        push(name, unhex(a), m, sig, Err(NonCanonicalKey));
    }

    // Plain wrong signatures.
    let mut flipped = msg.clone();
    flipped[10] ^= 0x01;
    push(
        "wrong_message_bit_flip",
        author.public,
        flipped,
        honest,
        Err(Equation),
    );
    let other = key(&seed("other-author"));
    push(
        "wrong_key",
        other.public,
        msg.clone(),
        honest,
        Err(Equation),
    );
    v
}

fn error_code(e: Result<(), SignatureError>) -> Option<&'static str> {
    e.err().map(SignatureError::code)
}

fn to_json(vectors: &[Vector]) -> String {
    let mut out = String::from("[\n");
    for (i, v) in vectors.iter().enumerate() {
        let error = match error_code(v.expected) {
            Some(code) => format!("\"{code}\""),
            None => "null".into(),
        };
        out.push_str(&format!(
            concat!(
                "  {{\n",
                "    \"name\": \"{}\",\n",
                "    \"public_key\": \"{}\",\n",
                "    \"message\": \"{}\",\n",
                "    \"signature\": \"{}\",\n",
                "    \"valid\": {},\n",
                "    \"error\": {}\n",
                "  }}{}\n"
            ),
            v.name,
            hex::encode(v.public_key),
            hex::encode(&v.message),
            hex::encode(v.signature),
            v.expected.is_ok(),
            error,
            if i + 1 == vectors.len() { "" } else { "," },
        ));
    }
    out.push_str("]\n");
    out
}

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/signatures/vectors.json")
}

fn parse_error(code: &str) -> SignatureError {
    use SignatureError::*;
    [
        NonCanonicalS,
        NonCanonicalR,
        SmallOrderR,
        NonCanonicalKey,
        SmallOrderKey,
        Equation,
    ]
    .into_iter()
    .find(|e| e.code() == code)
    .unwrap_or_else(|| panic!("unknown error code {code:?}"))
}

/// The committed vectors, as (name, key, message, signature, expected).
fn load_vectors() -> Vec<Vector> {
    let text = std::fs::read_to_string(vectors_path()).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&'static str> = build_vectors().iter().map(|v| v.name).collect();
    json.as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let field = |k: &str| o[k].as_str().unwrap_or_else(|| panic!("missing {k}"));
            let name = names
                .iter()
                .copied()
                .find(|n| *n == field("name"))
                .unwrap_or("unknown");
            let valid = o["valid"].as_bool().unwrap();
            let expected = match o["error"].as_str() {
                None => Ok(()),
                Some(code) => Err(parse_error(code)),
            };
            assert_eq!(valid, expected.is_ok(), "{name}: valid and error disagree");
            Vector {
                name,
                public_key: unhex(field("public_key")),
                message: hex::decode(field("message")).unwrap(),
                signature: unhex(field("signature")),
                expected,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Randomness for positions and background batches
// ---------------------------------------------------------------------------

/// SplitMix64, seeded from the OS; the seed is printed in failure messages.
struct Rng(u64);

impl Rng {
    fn fresh() -> (Self, u64) {
        let seed = getrandom::u64().unwrap();
        (Rng(seed), seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes32(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        out
    }
}

/// Honest signatures by a few fresh authors, several each (so batches also
/// merge items under one key).
struct Background {
    keys: Vec<PublicKey>,
    items: Vec<(usize, Vec<u8>, [u8; 64])>,
}

/// 64 honest signatures by 16 fresh authors.
fn background(rng: &mut Rng) -> Background {
    background_from(rng, 16, 64)
}

/// Checks one (key, message, signature) against `expected` alone, in a batch
/// of one, and inside the background batch at `rounds` random positions.
fn check_everywhere(
    label: &str,
    (key, message, sig): (&[u8; 32], &[u8], &[u8; 64]),
    expected: Result<(), SignatureError>,
    bg: &Background,
    rng: &mut Rng,
    rounds: usize,
) {
    assert_eq!(verify(key, message, sig), expected, "{label}: verify");
    let parsed = match PublicKey::parse(key) {
        Ok(k) => k,
        Err(e) => {
            // A key that does not parse cannot enter a batch; the caller gets
            // the parse error. `verify` names S first, then the key.
            let err = expected.expect_err("a refused key must refuse the signature");
            assert!(
                err == e || err == SignatureError::NonCanonicalS,
                "{label}: key error {e:?}, expected {err:?}"
            );
            return;
        }
    };
    assert_eq!(
        verify_prepared(&parsed, message, sig),
        expected,
        "{label}: verify_prepared"
    );
    assert_eq!(
        verify_batch(&[(&parsed, message, sig)]),
        vec![expected],
        "{label}: batch of one"
    );

    for round in 0..rounds {
        let mut order: Vec<usize> = (0..bg.items.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let mut batch: Vec<(&PublicKey, &[u8], &[u8; 64])> = order
            .iter()
            .map(|&j| {
                let (k, m, s) = &bg.items[j];
                (&bg.keys[*k], m.as_slice(), s)
            })
            .collect();
        let at = rng.below(batch.len() + 1);
        batch.insert(at, (&parsed, message, sig));
        let got = verify_batch(&batch);
        for (i, r) in got.iter().enumerate() {
            let want = if i == at { expected } else { Ok(()) };
            assert_eq!(
                *r, want,
                "{label}: round {round}, item {i} (vector at {at})"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn vectors_file_matches_generator() {
    let json = to_json(&build_vectors());
    let path = vectors_path();
    if std::env::var_os("UPDATE_VECTORS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &json).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        committed, json,
        "vectors.json differs from the generator; rerun with UPDATE_VECTORS=1"
    );
}

#[test]
fn generator_constructions_are_what_the_names_say() {
    // Guard the constructions themselves, independently of `verify`.
    for (n, hex_point) in [(1, IDENTITY), (8, ORDER_8_A), (8, ORDER_8_B)] {
        assert_eq!(order(&point(hex_point)), n);
    }
    // The lenient readings: p + 1 and negative zero decompress to the identity,
    // p + 3 to a point of large order, y = 2 to nothing.
    for h in [IDENTITY_Y_P_PLUS_1, IDENTITY_NEGATIVE_ZERO] {
        assert_eq!(point(h), EdwardsPoint::default());
        assert_ne!(point(h).compress().to_bytes(), unhex::<32>(h));
    }
    assert_eq!(order(&point(Y_P_PLUS_3)), 0);
    assert!(
        CompressedEdwardsY(unhex(NOT_ON_CURVE_Y_2))
            .decompress()
            .is_none()
    );

    // Every vector except the plain wrong ones and those whose R or key is a
    // large-order point or no point at all satisfies the cofactored equation when encodings are read leniently
    // (reduced mod p, sign of zero ignored, S reduced mod L): each is refused
    // only by the check it is named after.
    for v in build_vectors() {
        let lenient = [
            "wrong_message_bit_flip",
            "wrong_key",
            "non_canonical_r_y_p_plus_3",
            "non_canonical_r_not_on_curve",
            "non_canonical_key_not_on_curve",
        ];
        if lenient.contains(&v.name) {
            continue;
        }
        let a = CompressedEdwardsY(v.public_key).decompress().unwrap();
        let r = CompressedEdwardsY(v.signature[..32].try_into().unwrap())
            .decompress()
            .unwrap();
        let mut wide = [0u8; 64];
        wide[..32].copy_from_slice(&v.signature[32..]);
        let s = Scalar::from_bytes_mod_order_wide(&wide);
        let k = challenge(
            &v.signature[..32].try_into().unwrap(),
            &v.public_key,
            &v.message,
        );
        let lhs = ED25519_BASEPOINT_POINT * s - r - a * k;
        assert_eq!(lhs.mul_by_cofactor(), EdwardsPoint::default(), "{}", v.name);
    }
}

#[test]
fn every_vector_gives_the_same_answer_alone_and_in_any_batch() {
    let (mut rng, seed) = Rng::fresh();
    let bg = background(&mut rng);
    for v in load_vectors() {
        let label = format!("{} (rng seed {seed:#x})", v.name);
        check_everywhere(
            &label,
            (&v.public_key, &v.message, &v.signature),
            v.expected,
            &bg,
            &mut rng,
            50,
        );
    }
}

#[test]
fn mixed_order_r_differs_from_dalek_verify_strict() {
    // Documents why this module exists: dalek's strict single verification
    // refuses what its batch verification may accept.
    for v in load_vectors()
        .iter()
        .filter(|v| v.name.starts_with("mixed_order_r"))
    {
        let key = ed25519_dalek::VerifyingKey::from_bytes(&v.public_key).unwrap();
        let sig = ed25519_dalek::Signature::from_bytes(&v.signature);
        assert!(key.verify_strict(&v.message, &sig).is_err(), "{}", v.name);
        assert_eq!(verify(&v.public_key, &v.message, &v.signature), Ok(()));
    }
}

/// A way to damage an honest signature.
#[derive(Debug, Clone)]
enum Mutation {
    None,
    FlipSignatureBit(usize),
    FlipMessageBit(usize),
    FlipKeyBit(usize),
    TorsionOnR(usize),
    TorsionOnKey(usize),
    SmallOrderR(usize),
    SmallOrderKey(usize),
    SPlusL,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        Just(Mutation::None),
        (0usize..512).prop_map(Mutation::FlipSignatureBit),
        (0usize..512).prop_map(Mutation::FlipMessageBit),
        (0usize..256).prop_map(Mutation::FlipKeyBit),
        (1usize..8).prop_map(Mutation::TorsionOnR),
        (1usize..8).prop_map(Mutation::TorsionOnKey),
        (0usize..8).prop_map(Mutation::SmallOrderR),
        (0usize..8).prop_map(Mutation::SmallOrderKey),
        Just(Mutation::SPlusL),
    ]
}

fn apply(mutation: &Mutation, k: &Key, message: &mut Vec<u8>) -> ([u8; 32], [u8; 64]) {
    let t8 = torsion(8);
    let multiple = |i: usize| (0..i).fold(EdwardsPoint::default(), |acc, _| acc + t8);
    let mut public = k.public;
    let mut sig = sign(k, message);
    match *mutation {
        Mutation::None => {}
        Mutation::FlipSignatureBit(b) => sig[b / 8] ^= 1 << (b % 8),
        Mutation::FlipMessageBit(b) => {
            if message.is_empty() {
                message.push(0);
            } else {
                let b = b % (message.len() * 8);
                message[b / 8] ^= 1 << (b % 8);
            }
        }
        Mutation::FlipKeyBit(b) => public[b / 8] ^= 1 << (b % 8),
        Mutation::TorsionOnR(i) => sig = sign_twisted(k, &public, message, multiple(i)),
        Mutation::TorsionOnKey(i) => {
            public = (EdwardsPoint::mul_base(&k.a) + multiple(i))
                .compress()
                .to_bytes();
            sig = sign_twisted(k, &public, message, EdwardsPoint::default());
        }
        Mutation::SmallOrderR(i) => {
            let r = hex::encode(multiple(i).compress().to_bytes());
            sig = sign_with_r(k, message, &r);
        }
        Mutation::SmallOrderKey(i) => {
            public = multiple(i).compress().to_bytes();
            sig = sign_without_key(k, message);
        }
        Mutation::SPlusL => {
            let s_plus_l = add_le(&sig[32..].try_into().unwrap(), &L);
            sig[32..].copy_from_slice(&s_plus_l);
        }
    }
    (public, sig)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random honest signatures with random mutations: the same answer alone,
    /// in a batch of one and inside a background batch. Also checks the
    /// answers that the construction makes certain.
    #[test]
    fn mutated_signatures_agree_alone_and_in_batches(
        seed in any::<[u8; 32]>(),
        mut message in proptest::collection::vec(any::<u8>(), 0..80),
        mutation in mutation(),
    ) {
        let k = key(&seed);
        let (public, sig) = apply(&mutation, &k, &mut message);
        let answer = verify(&public, &message, &sig);
        match mutation {
            Mutation::None | Mutation::TorsionOnR(_) | Mutation::TorsionOnKey(_) => {
                prop_assert_eq!(answer, Ok(()));
            }
            Mutation::SmallOrderR(_) => prop_assert_eq!(answer, Err(SignatureError::SmallOrderR)),
            Mutation::SmallOrderKey(_) => prop_assert_eq!(answer, Err(SignatureError::SmallOrderKey)),
            Mutation::SPlusL => prop_assert_eq!(answer, Err(SignatureError::NonCanonicalS)),
            _ => prop_assert!(answer.is_err()),
        }
        let (mut rng, rng_seed) = Rng::fresh();
        let bg = background_from(&mut rng, 4, 8);
        let label = format!("{mutation:?} (rng seed {rng_seed:#x})");
        check_everywhere(&label, (&public, &message, &sig), answer, &bg, &mut rng, 2);
    }
}

/// `items` honest signatures by `authors` fresh keys, round-robin.
fn background_from(rng: &mut Rng, authors: usize, items: usize) -> Background {
    let signers: Vec<SigningKey> = (0..authors)
        .map(|_| SigningKey::from_bytes(&rng.bytes32()))
        .collect();
    let keys = signers
        .iter()
        .map(|s| PublicKey::parse(s.verifying_key().as_bytes()).unwrap())
        .collect();
    let items = (0..items)
        .map(|i| {
            let m = docket_message("x-background", &rng.bytes32());
            (
                i % authors,
                m.clone(),
                signers[i % authors].sign(&m).to_bytes(),
            )
        })
        .collect();
    Background { keys, items }
}
