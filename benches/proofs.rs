//! Merkle proof generation at 1M leaves (RFC 9162, `docket_domain::merkle`).
//!
//! The tree is built once with `Frontier` into a map-backed `NodeSource`
//! (every complete node, as the sled store persists them), outside the timed
//! loops. Each proof is compared with the physical baseline measured in the
//! same run: (node lookups the proof makes) x (one map lookup) + (hashes the
//! proof computes) x (one `node_hash`). The same tree is also written to the
//! real sled store and proofs are timed against it (goal: < 100 µs
//! inclusion, < 200 µs consistency).

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use docket_domain::merkle::{
    Frontier, Hash, MerkleError, NodeSource, consistency_proof, inclusion_proof, leaf_hash,
    node_hash,
};

const SIZE: u64 = 1_000_000;

struct HashSource(HashMap<(u8, u64), Hash>);
impl NodeSource for HashSource {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        self.0
            .get(&(level, index))
            .copied()
            .ok_or(MerkleError::MissingNode { level, index })
    }
}

/// Big-endian keys in an ordered map, like the sled node tree.
struct OrderedSource(BTreeMap<[u8; 9], Hash>);
fn key(level: u8, index: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = level;
    k[1..].copy_from_slice(&index.to_be_bytes());
    k
}
impl NodeSource for OrderedSource {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        self.0
            .get(&key(level, index))
            .copied()
            .ok_or(MerkleError::MissingNode { level, index })
    }
}

struct Counting<'a>(&'a dyn NodeSource, Cell<u64>);
impl NodeSource for Counting<'_> {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        self.1.set(self.1.get() + 1);
        self.0.node(level, index)
    }
}

/// Deterministic spread of sample points (splitmix64).
fn samples(n: usize, modulo: u64) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % modulo
        })
        .collect()
}

fn build() -> (HashSource, OrderedSource) {
    let mut f = Frontier::new();
    let mut map = HashMap::with_capacity(2 * SIZE as usize);
    for i in 0..SIZE {
        for (level, index, h) in f.push(leaf_hash(&i.to_le_bytes())) {
            map.insert((level, index), h);
        }
    }
    let ordered = map.iter().map(|(&(l, i), h)| (key(l, i), *h)).collect();
    (HashSource(map), OrderedSource(ordered))
}

fn per_op(n: u64, mut f: impl FnMut(u64)) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        f(i);
    }
    start.elapsed() / u32::try_from(n).unwrap_or(u32::MAX)
}

fn report(name: &str, src: &dyn NodeSource, lookup: Duration, hash: Duration) {
    let idx = samples(2000, SIZE);
    // Count lookups (and so hashes) per proof, outside the timing.
    let c = Counting(src, Cell::new(0));
    let (mut inc_lookups, mut con_lookups, mut con_len, mut inc_len) = (0u64, 0u64, 0u64, 0u64);
    for &i in &idx {
        inc_len += inclusion_proof(&c, i, SIZE).unwrap().len() as u64;
    }
    inc_lookups += c.1.replace(0);
    for &i in &idx {
        con_len += consistency_proof(&c, i.max(1), SIZE).unwrap().len() as u64;
    }
    con_lookups += c.1.replace(0);
    let n = idx.len() as u64;
    let inc = per_op(n, |k| {
        black_box(inclusion_proof(src, idx[k as usize], SIZE).unwrap());
    });
    let con = per_op(n, |k| {
        black_box(consistency_proof(src, idx[k as usize].max(1), SIZE).unwrap());
    });
    // Hashes computed: lookups beyond one per proof element are folded with node_hash.
    let inc_base = lookup * u32::try_from(inc_lookups / n).unwrap_or(0)
        + hash * u32::try_from((inc_lookups - inc_len) / n).unwrap_or(0);
    let con_base = lookup * u32::try_from(con_lookups / n).unwrap_or(0)
        + hash * u32::try_from((con_lookups - con_len) / n).unwrap_or(0);
    println!(
        "[proofs/{name}] inclusion @1M: {inc:?}/proof, {:.1} lookups/proof, baseline {inc_base:?}, ratio {:.2}x; \
         at 1 us/lookup: ~{:.0} us",
        inc_lookups as f64 / n as f64,
        inc.as_secs_f64() / inc_base.as_secs_f64().max(1e-12),
        inc.as_secs_f64() * 1e6 + inc_lookups as f64 / n as f64,
    );
    println!(
        "[proofs/{name}] consistency @1M: {con:?}/proof, {:.1} lookups/proof, baseline {con_base:?}, ratio {:.2}x; \
         at 1 us/lookup: ~{:.0} us",
        con_lookups as f64 / n as f64,
        con.as_secs_f64() / con_base.as_secs_f64().max(1e-12),
        con.as_secs_f64() * 1e6 + con_lookups as f64 / n as f64,
    );
}

fn benches(c: &mut Criterion) {
    let t = Instant::now();
    let (hashed, ordered) = build();
    println!(
        "[proofs] built 1M-leaf tree ({} nodes) in {:?}",
        hashed.0.len(),
        t.elapsed()
    );

    // Physical baselines, same run.
    let keys = samples(100_000, SIZE);
    let lookup_hash = per_op(keys.len() as u64, |k| {
        black_box(hashed.node(0, keys[k as usize]).unwrap());
    });
    let lookup_ordered = per_op(keys.len() as u64, |k| {
        black_box(ordered.node(0, keys[k as usize]).unwrap());
    });
    let a = leaf_hash(b"a");
    let one_hash = per_op(100_000, |k| {
        black_box(node_hash(black_box(&a), &[k as u8; 32]));
    });
    println!(
        "[proofs] baseline: HashMap lookup {lookup_hash:?}, BTreeMap lookup {lookup_ordered:?}, node_hash {one_hash:?}"
    );
    report("hashmap", &hashed, lookup_hash, one_hash);
    report("btreemap", &ordered, lookup_ordered, one_hash);

    // The real store: every complete node in sled, as the ledger persists them.
    let dir = tempfile::tempdir().expect("temp dir");
    let sled_store = docket_domain::store::SledStore::create(dir.path()).expect("sled store");
    let t = Instant::now();
    let mut batch = docket_domain::store::CommitBatch::default();
    let mut sorted: Vec<(u8, u64, Hash)> = hashed.0.iter().map(|(&(l, i), h)| (l, i, *h)).collect();
    sorted.sort_unstable_by_key(|&(l, i, _)| (l, i));
    for (level, index, h) in sorted {
        batch.nodes.push((level, index, h));
        if batch.nodes.len() == 100_000 {
            docket_domain::store::Store::commit(&sled_store, &batch).expect("commit nodes");
            batch.nodes.clear();
        }
    }
    docket_domain::store::Store::commit(&sled_store, &batch).expect("commit nodes");
    println!(
        "[proofs] wrote {} nodes to sled in {:?}",
        hashed.0.len(),
        t.elapsed()
    );
    let lookup_sled = per_op(keys.len() as u64, |k| {
        black_box(sled_store.node(0, keys[k as usize]).unwrap());
    });
    println!("[proofs] baseline: sled lookup {lookup_sled:?}");
    report("sled", &sled_store, lookup_sled, one_hash);

    checked_against_unchecked();

    let idx = samples(4096, SIZE);
    let mut g = c.benchmark_group("proofs_1m");
    let mut k = 0usize;
    g.bench_function("inclusion/hashmap", |b| {
        b.iter(|| {
            k = (k + 1) % idx.len();
            inclusion_proof(&hashed, black_box(idx[k]), SIZE).unwrap()
        });
    });
    g.bench_function("consistency/hashmap", |b| {
        b.iter(|| {
            k = (k + 1) % idx.len();
            consistency_proof(&hashed, black_box(idx[k].max(1)), SIZE).unwrap()
        });
    });
    g.bench_function("inclusion/btreemap", |b| {
        b.iter(|| {
            k = (k + 1) % idx.len();
            inclusion_proof(&ordered, black_box(idx[k]), SIZE).unwrap()
        });
    });
    g.bench_function("consistency/btreemap", |b| {
        b.iter(|| {
            k = (k + 1) % idx.len();
            consistency_proof(&ordered, black_box(idx[k].max(1)), SIZE).unwrap()
        });
    });
    g.bench_function("inclusion/sled", |b| {
        b.iter(|| {
            k = (k + 1) % idx.len();
            inclusion_proof(&sled_store, black_box(idx[k]), SIZE).unwrap()
        });
    });
    g.bench_function("consistency/sled", |b| {
        b.iter(|| {
            k = (k + 1) % idx.len();
            consistency_proof(&sled_store, black_box(idx[k].max(1)), SIZE).unwrap()
        });
    });
    g.bench_function("baseline/node_hash", |b| {
        b.iter(|| node_hash(black_box(&a), black_box(&a)))
    });
    g.finish();
}

/// Events in the live tile ledger of [`checked_against_unchecked`].
const LEDGER_EVENTS: u64 = 50_000;

/// What a ledger serves is proved first (`Log::prove_inclusion`,
/// `prove_consistency`, `proved_nodes`, `proved_events`: verified against
/// the signed checkpoint of the head). Timed on a live tile ledger against
/// what serving cost without the check, the same reads straight from the
/// store, in the same run: `RATIO` lines, the price of the check.
fn checked_against_unchecked() {
    use docket_domain::merkle::root_at;
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = docket_benches::ledger_with_events(dir.path(), LEDGER_EVENTS);
    let n = ledger.len();
    let store = ledger.store().clone();
    let src = store.as_ref();
    let idx = samples(2000, n);
    let rounds = idx.len() as u64;
    // Warm the tile cache for both.
    for &i in &idx {
        ledger.prove_inclusion(i, n).expect("proof");
    }
    let unchecked = per_op(rounds, |k| {
        let i = idx[k as usize];
        black_box(inclusion_proof(src, i, n).unwrap());
        black_box(NodeSource::node(src, 0, i).unwrap());
        black_box(root_at(src, n).unwrap());
    });
    let checked = per_op(rounds, |k| {
        black_box(ledger.prove_inclusion(idx[k as usize], n).unwrap());
    });
    println!(
        "RATIO checked inclusion proof at {n} events: {checked:?} vs unchecked (path, leaf, root from the store): {unchecked:?} = {:.2}",
        checked.as_secs_f64() / unchecked.as_secs_f64()
    );
    let unchecked = per_op(rounds, |k| {
        let old = idx[k as usize].max(1);
        black_box(consistency_proof(src, old, n).unwrap());
        black_box(root_at(src, old).unwrap());
        black_box(root_at(src, n).unwrap());
    });
    let checked = per_op(rounds, |k| {
        black_box(ledger.prove_consistency(idx[k as usize].max(1), n).unwrap());
    });
    println!(
        "RATIO checked consistency proof at {n} events: {checked:?} vs unchecked: {unchecked:?} = {:.2}",
        checked.as_secs_f64() / unchecked.as_secs_f64()
    );
    // A full level-0 tile and a full entry bundle, as HTTP /tile/ serves them.
    let tiles: Vec<u64> = samples(200, n / 256);
    let unchecked = per_op(tiles.len() as u64, |k| {
        let first = tiles[k as usize] * 256;
        black_box(store.leaf_hashes(first, first + 256).unwrap());
    });
    let checked = per_op(tiles.len() as u64, |k| {
        black_box(
            ledger
                .proved_nodes(0, tiles[k as usize] * 256, 256)
                .unwrap(),
        );
    });
    println!(
        "RATIO checked level-0 tile: {checked:?} vs unchecked (stored leaf hashes): {unchecked:?} = {:.2}",
        checked.as_secs_f64() / unchecked.as_secs_f64()
    );
    let unchecked = per_op(tiles.len() as u64, |k| {
        let first = tiles[k as usize] * 256;
        black_box(store.event_range(first, first + 256).unwrap());
    });
    let checked = per_op(tiles.len() as u64, |k| {
        black_box(ledger.proved_events(tiles[k as usize] * 256, 256).unwrap());
    });
    println!(
        "RATIO checked entry bundle: {checked:?} vs unchecked (stored events): {unchecked:?} = {:.2}",
        checked.as_secs_f64() / unchecked.as_secs_f64()
    );
    ledger.close().expect("close");
}

criterion_group! {
    name = proofs;
    config = Criterion::default().sample_size(30).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(proofs);
