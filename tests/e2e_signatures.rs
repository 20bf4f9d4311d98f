//! One signature rule whatever the batch, end to end: each crafted signature
//! (mixed-order R of order 2, 4 and 8, small-order R, non-canonical R and
//! S, a plain forgery, an honest one) by a registered author is sent alone
//! (unary `Ledger.Append`), as a stream of one, inside a stream of 64 valid
//! statements, and through the CLI (`docket log append --signed`, embedded
//! and `--server`). The answer is the same every time, a refused statement
//! appends nothing, and it fails nothing else in its batch.

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use docket_e2e::*;
use docket_proto::v1 as pb;
use docket_proto::v1::ledger_client::LedgerClient;
use serde_json::json;
use sha2::{Digest, Sha256, Sha512};
use tonic::Code;

/// An order-8 point (the torsion subgroup's generator used by the vectors).
const ORDER_8: &str = "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05";
/// The identity, canonical.
const IDENTITY: &str = "0100000000000000000000000000000000000000000000000000000000000000";
/// The identity written with y = p + 1: a non-canonical R.
const IDENTITY_Y_P_PLUS_1: &str =
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f";
/// The group order L, little-endian.
const L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

fn unhex32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

fn torsion(order: u32) -> EdwardsPoint {
    let t8 = CompressedEdwardsY(unhex32(ORDER_8)).decompress().unwrap();
    match order {
        8 => t8,
        4 => t8 + t8,
        2 => t8 + t8 + t8 + t8,
        _ => unreachable!(),
    }
}

/// RFC 8032 key material from a seed.
struct Author {
    seed: [u8; 32],
    a: Scalar,
    prefix: [u8; 32],
    public: [u8; 32],
}

fn author(label: &str) -> Author {
    let seed: [u8; 32] = Sha256::digest(label.as_bytes()).into();
    let h: [u8; 64] = Sha512::digest(seed).into();
    let mut a: [u8; 32] = h[..32].try_into().unwrap();
    a[0] &= 248;
    a[31] &= 127;
    a[31] |= 64;
    let a = Scalar::from_bytes_mod_order(a);
    Author {
        seed,
        a,
        prefix: h[32..].try_into().unwrap(),
        public: EdwardsPoint::mul_base(&a).compress().to_bytes(),
    }
}

fn message(kind: &str, payload: &[u8]) -> Vec<u8> {
    let mut m = b"docket/v1/".to_vec();
    m.extend_from_slice(kind.as_bytes());
    m.push(0);
    m.extend_from_slice(&Sha256::digest(payload));
    m
}

fn challenge(r: &[u8; 32], a: &[u8; 32], m: &[u8]) -> Scalar {
    Scalar::from_hash(
        Sha512::new()
            .chain_update(r)
            .chain_update(a)
            .chain_update(m),
    )
}

/// The crafted signatures, each with whether the one rule accepts it.
#[derive(Debug, Clone, Copy)]
enum Craft {
    Honest,
    MixedOrderR(u32),
    SmallOrderR,
    NonCanonicalR,
    NonCanonicalS,
    Forged,
}

impl Craft {
    fn all() -> Vec<Craft> {
        vec![
            Craft::Honest,
            Craft::MixedOrderR(2),
            Craft::MixedOrderR(4),
            Craft::MixedOrderR(8),
            Craft::SmallOrderR,
            Craft::NonCanonicalR,
            Craft::NonCanonicalS,
            Craft::Forged,
        ]
    }

    fn accepted(self) -> bool {
        matches!(self, Craft::Honest | Craft::MixedOrderR(_))
    }

    fn sign(self, who: &Author, kind: &str, payload: &[u8]) -> [u8; 64] {
        let m = message(kind, payload);
        let r = Scalar::from_hash(Sha512::new().chain_update(who.prefix).chain_update(&m));
        let with_r = |big_r: [u8; 32], s: Scalar| {
            let mut sig = [0u8; 64];
            sig[..32].copy_from_slice(&big_r);
            sig[32..].copy_from_slice(s.as_bytes());
            sig
        };
        match self {
            Craft::Honest => {
                let big_r = EdwardsPoint::mul_base(&r).compress().to_bytes();
                with_r(big_r, r + challenge(&big_r, &who.public, &m) * who.a)
            }
            Craft::MixedOrderR(n) => {
                let big_r = (EdwardsPoint::mul_base(&r) + torsion(n))
                    .compress()
                    .to_bytes();
                with_r(big_r, r + challenge(&big_r, &who.public, &m) * who.a)
            }
            Craft::SmallOrderR | Craft::NonCanonicalR => {
                let big_r = unhex32(if matches!(self, Craft::SmallOrderR) {
                    IDENTITY
                } else {
                    IDENTITY_Y_P_PLUS_1
                });
                with_r(big_r, challenge(&big_r, &who.public, &m) * who.a)
            }
            Craft::NonCanonicalS => {
                let mut sig = Craft::Honest.sign(who, kind, payload);
                // S + L: the same scalar mod L, not canonical (fits 256 bits
                // because S < L < 2^253).
                let mut carry = 0u16;
                for i in 0..32 {
                    let t = u16::from(sig[32 + i]) + u16::from(L[i]) + carry;
                    sig[32 + i] = t as u8;
                    carry = t >> 8;
                }
                sig
            }
            Craft::Forged => {
                let mut sig = Craft::Honest.sign(who, kind, payload);
                sig[40] ^= 0x01;
                sig
            }
        }
    }
}

fn statement(craft: Craft, who: &Author, n: u64, tag: &str) -> pb::SignedStatement {
    let payload = json!({"n": n, "tag": tag}).to_string().into_bytes();
    let signature = craft.sign(who, "x-note", &payload);
    pb::SignedStatement {
        kind: "x-note".into(),
        payload,
        author_public_key: who.public.to_vec(),
        signature: signature.to_vec(),
    }
}

fn valid_batch(who: &Author, tag: &str) -> Vec<pb::SignedStatement> {
    (0..64)
        .map(|n| statement(Craft::Honest, who, n, tag))
        .collect()
}

async fn stream(
    ledger: &mut LedgerClient<tonic::transport::Channel>,
    statements: Vec<pb::SignedStatement>,
) -> (Vec<pb::AppendReceipt>, Option<tonic::Status>) {
    let mut out = Vec::new();
    let mut receipts = match ledger.append_stream(tokio_stream::iter(statements)).await {
        Ok(r) => r.into_inner(),
        Err(s) => return (out, Some(s)),
    };
    loop {
        match receipts.message().await {
            Ok(Some(r)) => out.push(r),
            Ok(None) => return (out, None),
            Err(s) => return (out, Some(s)),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_signature_rule_over_unary_streams_and_the_cli() {
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let who = author("docket/e2e/signature-author");
    let signing = ed25519_dalek::SigningKey::from_bytes(&who.seed);
    assert_eq!(signing.verifying_key().to_bytes(), who.public);
    // Register the author (by the admin) as a submitter.
    let admin = admin_key_of(&t.data());
    let mut ledger = LedgerClient::new(ch.clone());
    ledger
        .append(sign(
            "key.registered",
            &json!({"public_key": hex::encode(who.public), "roles": ["submitter"]}),
            &admin,
        ))
        .await
        .expect("register the author");
    let mut failures = Vec::new();
    for (i, craft) in Craft::all().into_iter().enumerate() {
        let base = 1000 * (i as u64 + 1);
        // 1. Alone, unary.
        let before = t.log_len();
        let alone = ledger.append(statement(craft, &who, base, "alone")).await;
        let unary_ok = alone.is_ok();
        if let Err(s) = &alone
            && s.code() != Code::Unauthenticated
        {
            failures.push(format!("{craft:?} alone: {s:?} (expected UNAUTHENTICATED)"));
        }
        if unary_ok != craft.accepted() {
            failures.push(format!("{craft:?} alone: accepted={unary_ok}"));
        }
        if !craft.accepted() && t.log_len() != before {
            failures.push(format!("{craft:?} alone: appended something"));
        }
        // 2. A stream of one.
        let (receipts, end) =
            stream(&mut ledger, vec![statement(craft, &who, base + 1, "one")]).await;
        if (receipts.len() == 1) != craft.accepted() {
            failures.push(format!("{craft:?} stream of one: {receipts:?} {end:?}"));
        }
        // 3. Inside a stream of 64 valid statements, at position 30.
        let mut batch = valid_batch(&who, &format!("batch-{i}"));
        batch.insert(30, statement(craft, &who, base + 2, "in-batch"));
        let (receipts, end) = stream(&mut ledger, batch.clone()).await;
        if craft.accepted() {
            if receipts.len() != 65 || end.is_some() {
                failures.push(format!(
                    "{craft:?} in a batch: {} receipts, end {end:?}",
                    receipts.len()
                ));
            }
        } else {
            // The refusal ends the stream after the 30 before it; the
            // statements after it were not failed: resent, all append.
            if receipts.len() != 30 || end.as_ref().map(|s| s.code()) != Some(Code::Unauthenticated)
            {
                failures.push(format!(
                    "{craft:?} in a batch: {} receipts, end {end:?}",
                    receipts.len()
                ));
            }
            let rest: Vec<_> = batch[31..].to_vec();
            let (resent, end) = stream(&mut ledger, rest).await;
            if resent.len() != 34 || end.is_some() {
                failures.push(format!(
                    "{craft:?} after the refusal: {} receipts, {end:?}",
                    resent.len()
                ));
            }
        }
    }
    // 4. The CLI, against the server: one file with every craft inside 64
    // valid statements; each line gets the same answer as over gRPC.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("signed.jsonl");
    let mut lines = Vec::new();
    let crafts = Craft::all();
    for n in 0..64u64 {
        let st = statement(Craft::Honest, &who, 50_000 + n, "cli");
        lines.push(line(&st));
        if let Some(craft) = crafts.get(n as usize) {
            lines.push(line(&statement(*craft, &who, 60_000 + n, "cli-craft")));
        }
    }
    std::fs::write(&file, lines.join("\n")).unwrap();
    let (code, stdout, stderr) = run_docket(&[
        "--json",
        "--server",
        &t.url(),
        "log",
        "append",
        "--signed",
        file.to_str().unwrap(),
    ]);
    let outcomes: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let refused = outcomes.iter().filter(|v| v.get("error").is_some()).count();
    let expected_refused = crafts.iter().filter(|c| !c.accepted()).count();
    if refused < 1 || refused > expected_refused {
        failures.push(format!(
            "cli --server: {refused} refused lines (expected {expected_refused} or fewer, at least 1): {stdout} {stderr}"
        ));
    }
    if code == 0 {
        failures.push("cli --server: exit 0 although statements were refused".into());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn line(st: &pb::SignedStatement) -> String {
    json!({
        "kind": st.kind,
        "payload_hex": hex::encode(&st.payload),
        "author": hex::encode(&st.author_public_key),
        "signature": hex::encode(&st.signature),
    })
    .to_string()
}

/// Embedded mode: every crafted statement inside 64 valid ones, one file;
/// each refused line is exactly a craft the rule refuses, and every valid
/// statement is appended.
#[test]
fn one_signature_rule_through_the_embedded_cli() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let (code, _, err) = run_docket(&["--data", data.to_str().unwrap(), "init"]);
    assert_eq!(code, 0, "{err}");
    let who = author("docket/e2e/signature-author-cli");
    let admin = data.join("keys/admin.key");
    let (code, _, err) = run_docket(&[
        "--data",
        data.to_str().unwrap(),
        "key",
        "add",
        &hex::encode(who.public),
        "--role",
        "submitter",
        "--key",
        admin.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let file = dir.path().join("signed.jsonl");
    let mut lines = Vec::new();
    let mut expect = Vec::new();
    for (i, craft) in Craft::all().into_iter().enumerate() {
        for n in 0..64u64 {
            lines.push(line(&statement(
                Craft::Honest,
                &who,
                100 * i as u64 + n,
                "emb",
            )));
            expect.push(true);
            if n == 30 {
                lines.push(line(&statement(
                    craft,
                    &who,
                    90_000 + i as u64,
                    "emb-craft",
                )));
                expect.push(craft.accepted());
            }
        }
    }
    std::fs::write(&file, lines.join("\n")).unwrap();
    let (code, stdout, _) = run_docket(&[
        "--json",
        "--data",
        data.to_str().unwrap(),
        "log",
        "append",
        "--signed",
        file.to_str().unwrap(),
    ]);
    let got: Vec<bool> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v.get("error").is_none())
        .collect();
    assert_eq!(got, expect, "{stdout}");
    assert_eq!(code, 5, "a refused signature is a hard fail");
}
