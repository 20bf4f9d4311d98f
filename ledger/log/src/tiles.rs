//! The tile store: the log as C2SP tlog-tiles on plain files.
//!
//! Events live in entry bundles of 256 (`tiles/tile/entries/<N>`), Merkle
//! hashes in hash tiles (`tiles/tile/<L>/<N>`), with the path encoding of
//! C2SP tlog-tiles (`x001/x234/067`). Next to them, one append-only commit
//! log (`tiles/commits`) records for every commit the log length it
//! reached, the statement digests it carried and its signed checkpoint; it
//! is what makes a commit atomic. Two derived indexes (`tiles/statements.idx`,
//! `tiles/checkpoints.idx`) answer lookups without a scan; they are checked
//! on every read and rebuilt from the commit log when in doubt. The full
//! byte format is in docs/FORMAT.md ("The tile store").
//!
//! # Durability
//!
//! A commit appends its events to the open bundle (`<N>.part`, created
//! ahead of need by a thread of its own), large events (over 65,535 bytes)
//! to files of their own under `tiles/large/`, and one record to the
//! commit log; a bundle that reaches 256 entries is renamed to its full
//! name at once. The bundles written since their last sync (each filled
//! one, the open one, the filled ones' directories) and the commit log are
//! fdatasynced before the commit returns, or, for a commit its anchor slot
//! acknowledges, in a background round (below). A hash tile is written only when full, and like the indexes'
//! inserts after the commit returns, by the store's derived-data thread
//! (`tiles/derived.rs`; temp file, fsync, rename, fsync of the directory): both
//! are derived, answered from memory until written, and recomputed or
//! caught up when a crash lost them. The partial hash tiles are kept in
//! memory; those of levels 1 and up also in the derived file
//! `tiles/partial`, which an open uses only when it gives the latest
//! checkpoint's root (else they are recomputed from the full tiles below),
//! so opening reads the same few files whatever the log's size.
//!
//! [`Store::commit_anchored`] writes the anchor too, with the commit's
//! events as its redo, when they fit one anchor slot: the slot's
//! fdatasync is then the only one the commit waits for (the bundles' and
//! the commit log's run in background rounds, and a slot of the anchor's
//! ring is overwritten only once the store is durable up to the size it
//! names). An open that finds the store short of, or torn
//! within, the commits the ring carries commits them again (FORMAT.md §9).
//!
//! At open the store's length is that of the last valid commit record whose
//! events are all present; bytes past it (a commit that never returned) are
//! ignored and overwritten by the next commit, never deleted at open, so a
//! store that lost acknowledged events is still there to be reported by
//! the anchor check of the log above.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use sha2::Digest as _;

use crate::error::{LogError, Result};
use crate::merkle::{self, Hash, MerkleError, NodeSource};
use crate::store::{
    Anchor, AnchorRedo, CommitBatch, Store, create_dir_durably, sync_dir, write_atomically,
};

/// Entries per entry bundle and hashes per hash tile (C2SP tlog-tiles).
pub const TILE_WIDTH: u64 = 256;
/// The largest event stored inline in a bundle (a tlog-tiles entry has a
/// 2-byte length). A larger event's entry is the stand-in
/// [`oversized_entry`] and its bytes are the file `tiles/large/<seq>`.
pub const MAX_INLINE_ENTRY: usize = 65_535;

/// First byte of the stand-in entry of an event over 65,535 bytes. No
/// event's canonical bytes start with it (they start with format `0x01`).
pub const OVERSIZED_MARKER: u8 = 0xFF;

/// Length of the stand-in entry.
pub const OVERSIZED_ENTRY_LEN: usize = 37;

/// The stand-in entry of an event over 65,535 bytes, in bundles on disk and
/// served alike: `0xFF || u32be(event length) || leaf hash`.
pub fn oversized_entry(event: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(OVERSIZED_ENTRY_LEN);
    out.push(OVERSIZED_MARKER);
    out.extend_from_slice(&u32::try_from(event.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&merkle::leaf_hash(event));
    out
}

/// What [`TileStore::salvage_entries`] found in a damaged bundle.
struct SalvagedEntries {
    /// The entries it yields, by sequence number.
    entries: BTreeMap<u64, Entry>,
    /// Why the run of intact entries ended.
    damage: String,
}

impl Entry {
    /// The leaf hash the entry stands for: its bytes' for an event kept
    /// inline, the one a large event's stand-in names (its file is checked
    /// against it when read).
    fn claimed_leaf(&self) -> Hash {
        match self {
            Entry::Inline(b) => merkle::leaf_hash(b),
            Entry::Large { leaf, .. } => *leaf,
        }
    }
}

/// Reads a bundle entry: the event itself, or the stand-in of a large one
/// (`None` for bytes that are neither).
fn read_entry(entry: &[u8]) -> Option<Entry> {
    match entry.first() {
        Some(&OVERSIZED_MARKER) if entry.len() == OVERSIZED_ENTRY_LEN => {
            let len = u32::from_be_bytes(entry[1..5].try_into().ok()?);
            let mut leaf = [0u8; 32];
            leaf.copy_from_slice(&entry[5..]);
            Some(Entry::Large { len, leaf })
        }
        Some(&OVERSIZED_MARKER) | None => None,
        Some(_) => Some(Entry::Inline(Arc::from(entry))),
    }
}

const COMMIT_MAGIC: &[u8; 4] = b"DKC1";
const COMMIT_END: &[u8; 4] = b"DKCE";
const NO_CHECKPOINT: u64 = u64::MAX;
/// Events between two syncs of the derived indexes (their watermark).
/// Bounds the re-indexing an open does after a crash (65,536 events, about
/// 0.2 s); a sync writes back every page an insert touched since the last
/// one, and at a million events nearly every insert touches its own page,
/// so syncing every 1,024 events wrote 4 KiB of index per event (with 64
/// unary clients at 830k events: 11.0k appends/s, against 12.4k with this
/// interval).
const INDEX_SYNC_EVERY: u64 = 1 << 16;
const PARTIAL_MAGIC: &[u8; 4] = b"DKP1";
/// The derived file holding the partial hash tiles of levels 1 and up.
const PARTIAL_FILE: &str = "partial";

/// The C2SP tlog-tiles encoding of a tile index: 3-digit groups, all but
/// the last prefixed with `x` (`1234067` → `x001/x234/067`).
pub fn tile_index_path(index: u64) -> String {
    let mut groups = Vec::new();
    let mut n = index;
    loop {
        groups.push(n % 1000);
        n /= 1000;
        if n == 0 {
            break;
        }
    }
    let last = groups.len() - 1;
    groups
        .iter()
        .rev()
        .enumerate()
        .map(|(i, g)| {
            if i < last {
                format!("x{g:03}")
            } else {
                format!("{g:03}")
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `tile/entries/<N>`, relative to the store's directory.
pub fn bundle_path(index: u64) -> String {
    format!("tile/entries/{}", tile_index_path(index))
}

/// `tile/<L>/<N>`, relative to the store's directory.
pub fn hash_tile_path(level: u8, index: u64) -> String {
    format!("tile/{level}/{}", tile_index_path(index))
}

/// Parses an entry bundle: `(u16 BE length, bytes)*`.
pub fn parse_bundle(bytes: &[u8]) -> std::result::Result<Vec<&[u8]>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let Some(len) = bytes.get(at..at + 2) else {
            return Err(format!("a torn entry length at byte {at}"));
        };
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let Some(entry) = bytes.get(at + 2..at + 2 + len) else {
            return Err(format!("a torn entry at byte {at}"));
        };
        out.push(entry);
        at += 2 + len;
    }
    Ok(out)
}

/// The first entries of a bundle, at most `max`: the entries, the byte
/// where they end, and why the parse stopped short of `max` inside the
/// bytes (`None`: it reached `max` or the end of the bytes cleanly).
fn bundle_prefix(bytes: &[u8], max: u64) -> (Vec<&[u8]>, usize, Option<String>) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while (out.len() as u64) < max && at < bytes.len() {
        let Some(len) = bytes.get(at..at + 2) else {
            return (out, at, Some(format!("a torn entry length at byte {at}")));
        };
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let Some(entry) = bytes.get(at + 2..at + 2 + len) else {
            return (out, at, Some(format!("a torn entry at byte {at}")));
        };
        out.push(entry);
        at += 2 + len;
    }
    (out, at, None)
}

/// Parses a full entry bundle: its first 256 entries, and the number of
/// bytes after them (none in an intact bundle: bytes appended to a full
/// bundle are damage, reported by the caller, and not part of it).
fn parse_full_bundle(bytes: &[u8]) -> std::result::Result<(Vec<&[u8]>, usize), String> {
    match bundle_prefix(bytes, TILE_WIDTH) {
        (_, _, Some(why)) => Err(why),
        (entries, _, None) if (entries.len() as u64) < TILE_WIDTH => Err(format!(
            "a full bundle holds {} of 256 entries",
            entries.len()
        )),
        (entries, end, None) => Ok((entries, bytes.len() - end)),
    }
}

/// The entries of a damaged bundle found again after the damage by the
/// leaf hashes its level-0 tile kept (`leaves[i]` for entry `i`, `first`
/// the bundle's first sequence number): entries `from..` are looked for
/// from byte `at` on, each where its own bytes say it begins (an event's
/// bytes start with format `0x01` and its sequence number, a stand-in with
/// `0xFF`), and taken only when its bytes hash to its kept leaf; an entry
/// not found is skipped and the next one looked for. So a tear or a
/// garbled length loses the damaged entry, not every entry after it.
fn resync_entries<'a>(
    bytes: &'a [u8],
    at: usize,
    first: u64,
    from: usize,
    leaves: &[Hash],
) -> Vec<(usize, &'a [u8])> {
    let mut found = Vec::new();
    let mut pos = at;
    for (i, leaf) in leaves.iter().enumerate().skip(from) {
        let seq = first + i as u64;
        let mut event_start = [0u8; 9];
        event_start[0] = 0x01;
        event_start[1..].copy_from_slice(&seq.to_be_bytes());
        let hit = (pos..bytes.len()).find_map(|q| {
            // An inline event: its length precedes it, its bytes hash to
            // the leaf.
            if bytes[q..].starts_with(&event_start) && q >= pos + 2 {
                let len = usize::from(u16::from_be_bytes([bytes[q - 2], bytes[q - 1]]));
                let entry = bytes.get(q..q + len)?;
                return (merkle::leaf_hash(entry) == *leaf).then_some((q, entry));
            }
            // A large event's stand-in: `0xFF || u32 length || leaf`.
            if bytes[q] == OVERSIZED_MARKER && q >= pos + 2 {
                let entry = bytes.get(q..q + OVERSIZED_ENTRY_LEN)?;
                let framed = usize::from(u16::from_be_bytes([bytes[q - 2], bytes[q - 1]]));
                return (framed == OVERSIZED_ENTRY_LEN && entry[5..] == leaf[..])
                    .then_some((q, entry));
            }
            None
        });
        if let Some((q, entry)) = hit {
            found.push((i, entry));
            pos = q + entry.len();
        }
    }
    found
}

/// The entries of a damaged bundle that has no level-0 tile to check them
/// against (the open bundle, `.part`), found again after the damage by the
/// chain: entries `from..` are looked for from byte `at` on, each where its
/// own bytes say it begins (format `0x01` and its sequence number, its
/// length before it), and taken only when they decode as that event and
/// name, in `prev_hash`, the leaf of the entry taken just before (the first
/// after a gap names one that is lost: it is taken if it decodes). A large
/// event's stand-in is not looked for (its bytes are elsewhere). Nothing
/// found here is trusted either: a salvage carries it only when the leaves
/// give a signed root.
fn resync_entries_by_chain(
    bytes: &[u8],
    at: usize,
    first: u64,
    from: usize,
) -> Vec<(usize, &[u8])> {
    let mut found = Vec::new();
    let mut pos = at;
    let mut before: Option<Hash> = None;
    for i in from..TILE_WIDTH as usize {
        let seq = first + i as u64;
        let mut event_start = [0u8; 9];
        event_start[0] = 0x01;
        event_start[1..].copy_from_slice(&seq.to_be_bytes());
        let hit = (pos..bytes.len()).find_map(|q| {
            if !(bytes[q..].starts_with(&event_start) && q >= pos + 2) {
                return None;
            }
            let len = usize::from(u16::from_be_bytes([bytes[q - 2], bytes[q - 1]]));
            let entry = bytes.get(q..q + len)?;
            let event = crate::event::Event::decode(entry).ok()?;
            (event.seq == seq && before.is_none_or(|leaf| event.prev_hash == leaf))
                .then_some((q, entry))
        });
        match hit {
            Some((q, entry)) => {
                found.push((i, entry));
                before = Some(merkle::leaf_hash(entry));
                pos = q + entry.len();
            }
            None => before = None,
        }
    }
    found
}

/// How many of a bundle's first entries (the bundle begins at sequence
/// number `first`) form a chain: each inline event decodes as the event
/// of its place and names the leaf of the entry before in its `prev_hash`
/// (the first one's predecessor is in the bundle before; a large event's
/// stand-in is taken as it is, its bytes being elsewhere).
fn chained_prefix(entries: &[Entry], first: u64) -> usize {
    let mut before: Option<Hash> = None;
    for (i, entry) in entries.iter().enumerate() {
        if let Entry::Inline(bytes) = entry {
            let Ok(event) = crate::event::Event::decode(bytes) else {
                return i;
            };
            if event.seq != first + i as u64 || before.is_some_and(|leaf| event.prev_hash != leaf) {
                return i;
            }
        }
        before = Some(entry.claimed_leaf());
    }
    entries.len()
}

/// Parses a hash tile: concatenated 32-byte hashes.
fn parse_tile(bytes: &[u8]) -> Option<Vec<Hash>> {
    if !bytes.len().is_multiple_of(32) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(32)
            .map(|c| {
                let mut h = [0u8; 32];
                h.copy_from_slice(c);
                h
            })
            .collect(),
    )
}

/// Root of a complete subtree of `2^k` hashes.
fn subtree_root(hashes: &[Hash]) -> Hash {
    let mut level = hashes.to_vec();
    while level.len() > 1 {
        level = level
            .chunks_exact(2)
            .map(|p| merkle::node_hash(&p[0], &p[1]))
            .collect();
    }
    level[0]
}

/// `tiles/partial`: `"DKP1" || u64be(full level-0 tiles) || u8(levels)`,
/// then per level from 1 up `u16be(count) || count hashes`, then the first
/// 16 bytes of the SHA-256 of everything before.
fn encode_partial(full_level0_tiles: u64, upper: &[Vec<Hash>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + upper.iter().map(|t| 2 + 32 * t.len()).sum::<usize>());
    out.extend_from_slice(PARTIAL_MAGIC);
    out.extend_from_slice(&full_level0_tiles.to_be_bytes());
    // At most 7 levels above level 0 (8·L < 64 bits).
    out.push(upper.len() as u8);
    for tile in upper {
        // At most 255 hashes: a tile of 256 is full and written as such.
        out.extend_from_slice(&(tile.len() as u16).to_be_bytes());
        for h in tile {
            out.extend_from_slice(h);
        }
    }
    let check = sha2::Sha256::digest(&out);
    out.extend_from_slice(&check[..16]);
    out
}

/// The upper partial tiles of `tiles/partial` if it is intact and describes
/// a log of `full_level0_tiles` full level-0 tiles (the count of each level
/// follows from it).
fn decode_partial(bytes: &[u8], full_level0_tiles: u64) -> Option<Vec<Vec<Hash>>> {
    let (body, check) = bytes.split_at_checked(bytes.len().checked_sub(16)?)?;
    if sha2::Sha256::digest(body)[..16] != *check || body.get(..4)? != PARTIAL_MAGIC {
        return None;
    }
    let stored = u64::from_be_bytes(body.get(4..12)?.try_into().ok()?);
    if stored != full_level0_tiles {
        return None;
    }
    let levels = usize::from(*body.get(12)?);
    let mut at = 13;
    let mut out = Vec::with_capacity(levels);
    let mut total = full_level0_tiles;
    for _ in 0..levels {
        if total == 0 {
            return None;
        }
        let count = usize::from(u16::from_be_bytes(body.get(at..at + 2)?.try_into().ok()?));
        if count as u64 != total % TILE_WIDTH {
            return None;
        }
        at += 2;
        out.push(parse_tile(body.get(at..at + 32 * count)?)?);
        at += 32 * count;
        total /= TILE_WIDTH;
    }
    (total == 0 && at == body.len()).then_some(out)
}

/// `tiles/partial` decoded for the log length it was written at:
/// `(full level-0 tiles, the upper partial tiles)`, if it is intact.
fn decode_partial_as_written(bytes: &[u8]) -> Option<(u64, Vec<Vec<Hash>>)> {
    let stored = u64::from_be_bytes(bytes.get(4..12)?.try_into().ok()?);
    decode_partial(bytes, stored).map(|upper| (stored, upper))
}

/// The right border of a tree of `len` leaves: its partial tiles, one per
/// tile level. Every node of a root at `len` lies in them.
struct Border<'a> {
    len: u64,
    tiles: &'a [Vec<Hash>],
}

impl NodeSource for Border<'_> {
    fn node(&self, level: u8, index: u64) -> std::result::Result<Hash, MerkleError> {
        partial_node(self.len, self.tiles, level, index)?
            .ok_or(MerkleError::MissingNode { level, index })
    }
}

/// Node `(level, index)` of a tree of `len` leaves from its partial tiles;
/// `Ok(None)` when the node lies in a full tile instead.
fn partial_node(
    len: u64,
    partial_tiles: &[Vec<Hash>],
    level: u8,
    index: u64,
) -> std::result::Result<Option<Hash>, MerkleError> {
    let missing = || MerkleError::MissingNode { level, index };
    let tile_level = level / 8;
    let r = u32::from(level % 8);
    let width = 1usize << r;
    // Past the end (or past 2^64, which no log reaches) is missing.
    let first = index.checked_mul(width as u64).ok_or_else(missing)?;
    let at_level_total = len.checked_shr(8 * u32::from(tile_level)).unwrap_or(0);
    if first
        .checked_add(width as u64)
        .is_none_or(|end| end > at_level_total)
    {
        return Err(missing());
    }
    if first / TILE_WIDTH < at_level_total / TILE_WIDTH {
        return Ok(None);
    }
    let pos = (first % TILE_WIDTH) as usize;
    let slice = partial_tiles
        .get(usize::from(tile_level))
        .and_then(|t| t.get(pos..pos + width))
        .ok_or_else(missing)?;
    Ok(Some(subtree_root(slice)))
}

fn mix64(x: u64) -> u64 {
    // splitmix64's finaliser: sizes are consecutive, slots should not be.
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn digest_key(d: &Hash) -> u64 {
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// One parsed commit record.
#[derive(Debug, Clone)]
struct CommitRecord {
    start: u64,
    end: u64,
    log_len: u64,
    statements: Vec<(Hash, u64)>,
    checkpoint: Option<(u64, String)>,
}

impl CommitRecord {
    const HEADER: u64 = 8;
    const TRAILER: u64 = 24;
    /// Offset of statement pair `i` from the record's start.
    fn statement_offset(i: usize) -> u64 {
        Self::HEADER + 12 + 40 * i as u64
    }

    fn encode(
        log_len: u64,
        statements: &[(Hash, u64)],
        checkpoint: Option<&(u64, String)>,
    ) -> Vec<u8> {
        let note = checkpoint.map_or(&[][..], |c| c.1.as_bytes());
        let body_len = 8 + 4 + 40 * statements.len() + 8 + 4 + note.len();
        let mut out = Vec::with_capacity(body_len + 32);
        out.extend_from_slice(COMMIT_MAGIC);
        out.extend_from_slice(&(body_len as u32).to_be_bytes());
        out.extend_from_slice(&log_len.to_be_bytes());
        out.extend_from_slice(&(statements.len() as u32).to_be_bytes());
        for (d, seq) in statements {
            out.extend_from_slice(d);
            out.extend_from_slice(&seq.to_be_bytes());
        }
        out.extend_from_slice(&checkpoint.map_or(NO_CHECKPOINT, |c| c.0).to_be_bytes());
        out.extend_from_slice(&(note.len() as u32).to_be_bytes());
        out.extend_from_slice(note);
        let check = sha2::Sha256::digest(&out);
        out.extend_from_slice(&check[..16]);
        out.extend_from_slice(&(body_len as u32).to_be_bytes());
        out.extend_from_slice(COMMIT_END);
        out
    }

    /// Parses the record that starts at `start` in `bytes` (which hold the
    /// file from `start` on, at least the whole record).
    fn parse(bytes: &[u8], start: u64) -> Option<Self> {
        if bytes.get(..4)? != COMMIT_MAGIC {
            return None;
        }
        let body_len = u32::from_be_bytes(bytes.get(4..8)?.try_into().ok()?) as usize;
        let total = 8 + body_len + 24;
        let rec = bytes.get(..total)?;
        let check = sha2::Sha256::digest(&rec[..8 + body_len]);
        if rec[8 + body_len..8 + body_len + 16] != check[..16]
            || rec[total - 8..total - 4] != (body_len as u32).to_be_bytes()
            || &rec[total - 4..] != COMMIT_END
        {
            return None;
        }
        let body = &rec[8..8 + body_len];
        let log_len = u64::from_be_bytes(body.get(..8)?.try_into().ok()?);
        let n = u32::from_be_bytes(body.get(8..12)?.try_into().ok()?) as usize;
        let mut statements = Vec::with_capacity(n);
        let mut at = 12;
        for _ in 0..n {
            let mut d = [0u8; 32];
            d.copy_from_slice(body.get(at..at + 32)?);
            let seq = u64::from_be_bytes(body.get(at + 32..at + 40)?.try_into().ok()?);
            statements.push((d, seq));
            at += 40;
        }
        let cp_size = u64::from_be_bytes(body.get(at..at + 8)?.try_into().ok()?);
        let note_len = u32::from_be_bytes(body.get(at + 8..at + 12)?.try_into().ok()?) as usize;
        let note = body.get(at + 12..at + 12 + note_len)?;
        if at + 12 + note_len != body_len {
            return None;
        }
        let checkpoint = if cp_size == NO_CHECKPOINT {
            None
        } else {
            Some((cp_size, String::from_utf8(note.to_vec()).ok()?))
        };
        Some(Self {
            start,
            end: start + total as u64,
            log_len,
            statements,
            checkpoint,
        })
    }
}

/// Opens `path` for reading and writing, creating it empty if missing.
fn open_rw(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| LogError::io(path, e))
}

/// Takes `tiles/lock` exclusively. A lock held by this process (a store
/// just dropped by another thread) is retried briefly; one held elsewhere
/// (a running `docket serve`) is reported, in the words sled uses.
fn lock_store(root: &Path) -> Result<File> {
    let path = root.join("lock");
    lock_waiting(open_rw(&path)?, &path)
}

/// Takes the exclusive lock on `file` (the store's lock file `path`). A lock
/// held by this process is retried briefly (a store just closed may still
/// be releasing it); one held elsewhere is reported after half a second.
fn lock_waiting(file: File, path: &Path) -> Result<File> {
    const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
    let started = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(crate::store::held_elsewhere(path));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(LogError::io(path, e)),
        }
    }
}

/// Whether `rel` (a path below `tiles/`) names a full entry bundle or a
/// full hash tile: files written once, by a rename, and never in place
/// afterwards, except for cutting bytes after a full bundle's 256 entries,
/// which a store in a private copy does not do
/// ([`TileStore::rebuild_hash_tiles`]). A private copy hard-links them
/// rather than copying them: the copy then costs the commit log, the
/// indexes and the open bundle, not the whole store.
fn is_immutable_tile_file(rel: &Path) -> bool {
    let mut parts = rel.components();
    let top = parts.next().and_then(|c| c.as_os_str().to_str());
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    top == Some("tile") && !name.ends_with(".part") && !name.starts_with('.') && !name.is_empty()
}

/// Locks `root/lock` of a store that is only read from a private copy
/// ([`TileStore::open_copy`]), opened read-only so that a directory the
/// caller cannot write can be read. `None` when there is no lock file: no
/// process has the store open (an open store holds it).
fn lock_original(root: &Path) -> Result<Option<File>> {
    let path = root.join("lock");
    match File::open(&path) {
        Ok(file) => lock_waiting(file, &path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LogError::io(&path, e)),
    }
}

fn read_at(file: &File, offset: u64, len: usize, what: &Path) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let n = file
            .read_at(&mut buf[done..], offset + done as u64)
            .map_err(|e| LogError::io(what, e))?;
        if n == 0 {
            break;
        }
        done += n;
    }
    buf.truncate(done);
    Ok(buf)
}

/// Reads the record that ends at `end` (`end` is a record boundary).
fn record_ending_at(file: &File, end: u64, path: &Path) -> Result<Option<CommitRecord>> {
    if end < CommitRecord::HEADER + CommitRecord::TRAILER {
        return Ok(None);
    }
    let tail = read_at(file, end - 8, 8, path)?;
    if tail.len() != 8 || &tail[4..] != COMMIT_END {
        return Ok(None);
    }
    let body_len = u64::from(u32::from_be_bytes([tail[0], tail[1], tail[2], tail[3]]));
    let total = CommitRecord::HEADER + body_len + CommitRecord::TRAILER;
    let Some(start) = end.checked_sub(total) else {
        return Ok(None);
    };
    let bytes = read_at(file, start, total as usize, path)?;
    Ok(CommitRecord::parse(&bytes, start))
}

/// The record that starts at `offset` of the commit log `commits`.
fn record_at(commits: &File, path: &Path, offset: u64) -> Result<CommitRecord> {
    let head = read_at(commits, offset, 8, path)?;
    let bad = || {
        LogError::corrupt(
            format!("tiles/commits, byte {offset}"),
            "a damaged commit record",
        )
    };
    if head.len() != 8 || &head[..4] != COMMIT_MAGIC {
        return Err(bad());
    }
    let body_len = u64::from(u32::from_be_bytes([head[4], head[5], head[6], head[7]]));
    let total = CommitRecord::HEADER + body_len + CommitRecord::TRAILER;
    let bytes = read_at(commits, offset, total as usize, path)?;
    CommitRecord::parse(&bytes, offset).ok_or_else(bad)
}

/// The `(digest, seq)` pair at `offset` of the commit log, if it lies
/// before `end`.
fn statement_at(commits: &File, path: &Path, offset: u64, end: u64) -> Result<Option<(Hash, u64)>> {
    if offset + 40 > end {
        return Ok(None);
    }
    let b = read_at(commits, offset, 40, path)?;
    if b.len() != 40 {
        return Ok(None);
    }
    let mut d = [0u8; 32];
    d.copy_from_slice(&b[..32]);
    Ok(Some((
        d,
        u64::from_be_bytes(b[32..].try_into().unwrap_or([0; 8])),
    )))
}

/// The checkpoint of the record at `offset` of the commit log, if it lies
/// before `end`.
fn checkpoint_at(
    commits: &File,
    path: &Path,
    offset: u64,
    end: u64,
) -> Result<Option<(u64, String)>> {
    if offset >= end {
        return Ok(None);
    }
    match record_at(commits, path, offset) {
        Ok(rec) if rec.end <= end => Ok(rec.checkpoint),
        // A stale slot may point anywhere: not this key.
        _ => Ok(None),
    }
}

/// An empty slot a probe ended at, with its page as read and checked.
struct EmptySlot {
    index: u64,
    page: Vec<u8>,
}

/// A derived open-addressing hash table on disk: 16-byte slots of
/// `(key hash u64 BE, value + 1 u64 BE)`, value 0 meaning empty, 255 to a
/// 4 KiB page sealed by a CRC-32 of its index and its slots, after a 4 KiB
/// header `"DKTIDX2\0" ‖ capacity ‖ count ‖ watermark ‖ SHA-256[..16]`
/// (docs/FORMAT.md §11). Values are commit-log offsets; every hit is
/// checked against the commit log by the caller, so a stale slot is never
/// believed, and a page whose seal does not hold is damage (a slot lost
/// there could hide a key: a statement would look new).
struct DiskTable {
    path: PathBuf,
    file: File,
    capacity: u64,
    count: u64,
    /// Commit-log offset up to which every key is in the table and synced.
    watermark: u64,
}

impl DiskTable {
    const HEADER: u64 = 4096;
    const MAGIC: &'static [u8; 8] = b"DKTIDX2\0";
    const INITIAL: u64 = 1 << 14;
    /// Regions a growth builds the new table in (its memory: 1/16 of the
    /// new table, a quarter of the old one).
    const GROW_PASSES: u64 = 16;
    const PAGE: usize = 4096;
    const SLOTS_PER_PAGE: u64 = 255;
    /// Where a page's seal sits (after its 255 slots).
    const SEAL_AT: usize = 255 * 16;

    /// Pages holding `capacity` slots.
    fn pages(capacity: u64) -> u64 {
        capacity.div_ceil(Self::SLOTS_PER_PAGE)
    }

    /// The file's length for `capacity` slots (`None`: past u64).
    fn file_len(capacity: u64) -> Option<u64> {
        Self::pages(capacity)
            .checked_mul(Self::PAGE as u64)
            .and_then(|b| b.checked_add(Self::HEADER))
    }

    /// The seal of page `index` holding `slots` (its first 4,080 bytes).
    fn seal(index: u64, slots: &[u8]) -> [u8; 4] {
        let mut crc = crc32fast::Hasher::new();
        crc.update(&index.to_be_bytes());
        crc.update(slots);
        crc.finalize().to_be_bytes()
    }

    /// Page `index` from raw slot bytes (at most 4,080), sealed.
    fn sealed_page(index: u64, slots: &[u8]) -> Vec<u8> {
        let mut page = vec![0u8; Self::PAGE];
        page[..slots.len()].copy_from_slice(slots);
        let seal = Self::seal(index, &page[..Self::SEAL_AT]);
        page[Self::SEAL_AT..Self::SEAL_AT + 4].copy_from_slice(&seal);
        page
    }

    /// A new table of `capacity` slots; with `fill`, every page is written
    /// empty and sealed (a growth writes its pages itself).
    fn create(path: &Path, capacity: u64, fill: bool) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| LogError::io(path, e))?;
        let len = Self::file_len(capacity)
            .ok_or_else(|| LogError::corrupt(path.display().to_string(), "index too large"))?;
        file.set_len(len).map_err(|e| LogError::io(path, e))?;
        let mut t = Self {
            path: path.to_path_buf(),
            file,
            capacity,
            count: 0,
            watermark: 0,
        };
        if fill {
            for p in 0..Self::pages(capacity) {
                t.write_page(p, &Self::sealed_page(p, &[]))?;
            }
        }
        t.write_header()?;
        Ok(t)
    }

    /// Opens the table, or `None` when it is missing or its header does not
    /// check (the caller rebuilds it). Pages are checked as they are read.
    fn open(path: &Path) -> Result<Option<Self>> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LogError::io(path, e)),
        };
        let h = read_at(&file, 0, 48, path)?;
        if h.len() != 48
            || &h[..8] != Self::MAGIC
            || sha2::Sha256::digest(&h[..32])[..16] != h[32..48]
        {
            return Ok(None);
        }
        let word = |i: usize| u64::from_be_bytes(h[i..i + 8].try_into().unwrap_or([0; 8]));
        let (capacity, count, watermark) = (word(8), word(16), word(24));
        let len = file.metadata().map_err(|e| LogError::io(path, e))?.len();
        if !capacity.is_power_of_two() || count > capacity || Some(len) != Self::file_len(capacity)
        {
            return Ok(None);
        }
        Ok(Some(Self {
            path: path.to_path_buf(),
            file,
            capacity,
            count,
            watermark,
        }))
    }

    fn write_header(&mut self) -> Result<()> {
        let mut h = Vec::with_capacity(48);
        h.extend_from_slice(Self::MAGIC);
        h.extend_from_slice(&self.capacity.to_be_bytes());
        h.extend_from_slice(&self.count.to_be_bytes());
        h.extend_from_slice(&self.watermark.to_be_bytes());
        let check = sha2::Sha256::digest(&h);
        h.extend_from_slice(&check[..16]);
        self.file
            .write_all_at(&h, 0)
            .map_err(|e| LogError::io(&self.path, e))
    }

    fn write_page(&self, index: u64, page: &[u8]) -> Result<()> {
        self.file
            .write_all_at(page, Self::HEADER + index * Self::PAGE as u64)
            .map_err(|e| LogError::io(&self.path, e))
    }

    /// Page `index`, its seal checked. A page that is short or whose seal
    /// does not hold is damage, named by page; the header is cleared so
    /// that the next open rebuilds the table from the commit log.
    fn read_page(&self, index: u64) -> Result<Vec<u8>> {
        let page = read_at(
            &self.file,
            Self::HEADER + index * Self::PAGE as u64,
            Self::PAGE,
            &self.path,
        )?;
        if page.len() == Self::PAGE
            && page[Self::SEAL_AT..Self::SEAL_AT + 4] == Self::seal(index, &page[..Self::SEAL_AT])
        {
            return Ok(page);
        }
        // Best effort: if this write is lost too, the next read finds the
        // same damage.
        let _ = self.file.write_all_at(&[0u8; 8], 0);
        Err(LogError::corrupt(
            format!("{} page {index}", self.path.display()),
            "the derived index's page does not match its seal (it is rebuilt from \
             the commit log at the next open)",
        ))
    }

    /// Slot `i` of `page` (the page that holds it).
    fn slot_in(page: &[u8], i: u64) -> (u64, u64) {
        let at = (16 * (i % Self::SLOTS_PER_PAGE)) as usize;
        let word = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or([0; 8]));
        (word(&page[at..at + 8]), word(&page[at + 8..at + 16]))
    }

    /// Walks the probe sequence of `key` until an empty slot (reading each
    /// page once); `visit` sees each occupied slot's `(key, value)` and
    /// returns `Some` to stop. Returns that, or the empty slot with its
    /// page as read (checked), for an insert to fill.
    fn probe<T>(
        &self,
        key: u64,
        visit: &mut dyn FnMut(u64, u64) -> Result<Option<T>>,
    ) -> Result<std::result::Result<T, EmptySlot>> {
        let mask = self.capacity - 1;
        let mut i = key & mask;
        let mut loaded: Option<(u64, Vec<u8>)> = None;
        for _ in 0..self.capacity {
            let p = i / Self::SLOTS_PER_PAGE;
            let page = match &loaded {
                Some((q, page)) if *q == p => page,
                _ => &loaded.insert((p, self.read_page(p)?)).1,
            };
            let (k, v) = Self::slot_in(page, i);
            if v == 0 {
                // The page just read holds slot `i` (an empty page instead
                // would only make `put_slot` read it again).
                let page = loaded.map(|(_, page)| page).unwrap_or_default();
                return Ok(Err(EmptySlot { index: i, page }));
            }
            if let Some(found) = visit(k, v - 1)? {
                return Ok(Ok(found));
            }
            i = (i + 1) & mask;
        }
        Err(LogError::corrupt(
            self.path.display().to_string(),
            "the derived index has no empty slot",
        ))
    }

    /// Writes `slot` (16 bytes) into the empty slot `empty`, resealing its
    /// page.
    fn put_slot(&self, empty: EmptySlot, slot: &[u8]) -> Result<()> {
        let EmptySlot { index: i, page } = empty;
        let p = i / Self::SLOTS_PER_PAGE;
        let mut page = if page.len() == Self::PAGE {
            page
        } else {
            self.read_page(p)?
        };
        let at = (16 * (i % Self::SLOTS_PER_PAGE)) as usize;
        page[at..at + 16].copy_from_slice(slot);
        let seal = Self::seal(p, &page[..Self::SEAL_AT]);
        page[Self::SEAL_AT..Self::SEAL_AT + 4].copy_from_slice(&seal);
        self.write_page(p, &page)
    }

    /// Values stored under `key`, in probe order, until `accept` says yes.
    fn find(&self, key: u64, accept: &mut dyn FnMut(u64) -> Result<bool>) -> Result<Option<u64>> {
        let found = self.probe(key, &mut |k, v| Ok((k == key && accept(v)?).then_some(v)))?;
        Ok(found.ok())
    }

    /// Inserts `(key, value)` unless a slot for `key` already holds a value
    /// `accept` confirms.
    fn insert(
        &mut self,
        key: u64,
        value: u64,
        accept: &mut dyn FnMut(u64) -> Result<bool>,
    ) -> Result<()> {
        if self.needs_growth(1) {
            *self = self.grown()?;
        }
        let probed = self.probe(key, &mut |k, v| Ok((k == key && accept(v)?).then_some(())))?;
        if let Err(empty) = probed {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&key.to_be_bytes());
            b[8..].copy_from_slice(&(value + 1).to_be_bytes());
            self.put_slot(empty, &b)?;
        }
        // Counted when found too: every caller offers keys of commit
        // records past what the table counted (the header's count is the
        // one synced with its watermark), so a key already there was
        // written by a process that stopped before its next sync and is
        // not in `count`. Counting it keeps growth ahead of the slots in
        // use (an overcount only grows the table sooner); not counting it
        // let a table fill up after repeated kills (no empty slot: the
        // writer stopped).
        self.count += 1;
        Ok(())
    }

    /// Whether inserting `more` new keys would take the table past half
    /// full (an insert then grows it first).
    fn needs_growth(&self, more: u64) -> bool {
        self.count.saturating_add(more).saturating_mul(2) > self.capacity
    }

    /// A second handle of the table as it is now, for work that only reads
    /// it (growth, sync) while lookups go on through the first.
    fn handle(&self) -> Result<Self> {
        Ok(Self {
            path: self.path.clone(),
            file: self
                .file
                .try_clone()
                .map_err(|e| LogError::io(&self.path, e))?,
            capacity: self.capacity,
            count: self.count,
            watermark: self.watermark,
        })
    }

    /// Slots of one region of a growth of a table to `capacity` slots: whole
    /// pages, about 1/16 of the table.
    fn grow_region(capacity: u64) -> u64 {
        Self::pages(capacity).div_ceil(Self::GROW_PASSES).max(1) * Self::SLOTS_PER_PAGE
    }

    /// The table rewritten at four times its capacity (temp file, fsync,
    /// rename over this one's path), returned for the caller to use from
    /// now on: this handle still reads the old file, which holds the same
    /// keys. The slots move, nothing is re-read from the log. Memory stays
    /// bounded: the new table is built in regions of whole pages (about
    /// [`Self::GROW_PASSES`] of them), each from one pass over the old table
    /// read 256 pages at a time, every page's seal checked (a key's home in
    /// the new table is its home in the old one plus some of its higher
    /// bits, so each region gathers the keys whose home falls in it). A
    /// probe that runs past a region's end carries into the next one; past
    /// the table's end it wraps, and those few are placed last, slot by
    /// slot.
    fn grown(&self) -> Result<Self> {
        let tmp = self.path.with_extension("idx.grow");
        let mut next = Self::create(&tmp, self.capacity * 4, false)?;
        let mask = next.capacity - 1;
        let region = Self::grow_region(next.capacity);
        const CHUNK_PAGES: u64 = 256;
        let old_pages = Self::pages(self.capacity);
        let mut carried: Vec<[u8; 16]> = Vec::new();
        let mut wrapped: Vec<[u8; 16]> = Vec::new();
        let mut first = 0u64;
        while first < next.capacity {
            let len = region.min(next.capacity - first);
            let mut buf = vec![0u8; (16 * len) as usize];
            let place = |slot: [u8; 16], buf: &mut Vec<u8>, out: &mut Vec<[u8; 16]>| {
                let k = u64::from_be_bytes(slot[..8].try_into().unwrap_or([0; 8]));
                let home = k & mask;
                let mut i = home.max(first) - first;
                while i < len && buf[(16 * i + 8) as usize..(16 * i + 16) as usize] != [0u8; 8] {
                    i += 1;
                }
                if i < len {
                    buf[(16 * i) as usize..(16 * i + 16) as usize].copy_from_slice(&slot);
                } else {
                    out.push(slot);
                }
            };
            // Probes carried over from the region before come first: their
            // homes are earlier, so they precede every home of this region.
            let mut overflow = Vec::new();
            for slot in std::mem::take(&mut carried) {
                place(slot, &mut buf, &mut overflow);
            }
            let mut at = 0u64;
            while at < old_pages {
                let n = CHUNK_PAGES.min(old_pages - at);
                for p in at..at + n {
                    let page = self.read_page(p)?;
                    for s in page[..Self::SEAL_AT].chunks_exact(16) {
                        if s[8..] == [0u8; 8] {
                            continue;
                        }
                        let k = u64::from_be_bytes(s[..8].try_into().unwrap_or([0; 8]));
                        let home = k & mask;
                        if home >= first && home < first + len {
                            let mut slot = [0u8; 16];
                            slot.copy_from_slice(s);
                            place(slot, &mut buf, &mut overflow);
                            next.count += 1;
                        }
                    }
                }
                at += n;
            }
            // Page by page (4 KiB writes: the page cache would hold a large
            // write in large folios, up to 2 MiB on kernel 6.18's ext4, and
            // every later insert then walks all of its folio's blocks;
            // measured here on a 64 MiB table: 6.5 µs per insert after
            // 4 MiB writes, 0.85 µs after 4 KiB ones).
            let first_page = first / Self::SLOTS_PER_PAGE;
            for (n, slots) in buf.chunks(Self::SEAL_AT).enumerate() {
                let p = first_page + n as u64;
                next.write_page(p, &Self::sealed_page(p, slots))?;
            }
            first += len;
            if first < next.capacity {
                carried = overflow;
            } else {
                wrapped = overflow;
            }
        }
        // Probes that ran off the end continue at slot 0 (rare).
        for slot in wrapped {
            let k = u64::from_be_bytes(slot[..8].try_into().unwrap_or([0; 8]));
            let empty = next.probe(k, &mut |_, _| Ok(None::<()>))?;
            if let Err(empty) = empty {
                next.put_slot(empty, &slot)?;
            }
        }
        next.watermark = self.watermark;
        next.write_header()?;
        next.file.sync_all().map_err(|e| LogError::io(&tmp, e))?;
        fs::rename(&tmp, &self.path).map_err(|e| LogError::io(&self.path, e))?;
        if let Some(dir) = self.path.parent() {
            sync_dir(dir)?;
        }
        next.path = self.path.clone();
        Ok(next)
    }
    /// Makes every slot written so far durable, then records `watermark`
    /// and makes that durable too.
    fn sync(&mut self, watermark: u64) -> Result<()> {
        self.sync_slots()?;
        self.record_watermark(watermark)?;
        self.sync_slots()
    }

    /// Makes every slot written so far durable (through any handle).
    fn sync_slots(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| LogError::io(&self.path, e))
    }

    /// Records that every key up to commit-log offset `watermark` is in the
    /// table and durable (the caller synced them first, and syncs the
    /// header after: until then the older watermark stands, which only
    /// costs a longer catch-up).
    fn record_watermark(&mut self, watermark: u64) -> Result<()> {
        self.watermark = watermark;
        self.write_header()
    }
}

/// An event of the open bundle, as readers see it.
#[derive(Clone, Debug)]
enum Entry {
    Inline(Arc<[u8]>),
    /// Stored in `tiles/large/<seq>`; its length and leaf hash are in the
    /// bundle, so the file is checked when read.
    Large {
        len: u32,
        leaf: Hash,
    },
}

/// What readers see: only what is durable.
#[derive(Debug, Default, Clone)]
struct View {
    len: u64,
    /// Entries of bundle `len / 256`.
    open_bundle: Vec<Entry>,
    /// Per tile level: hashes (at tree level 8·L) not yet in a full tile.
    partial_tiles: Vec<Vec<Hash>>,
    /// The latest stored checkpoint.
    latest: Option<(u64, String)>,
    /// Logical end of the commit log.
    commits_end: u64,
}

struct Writer {
    view: View,
    /// Logical byte length of the open bundle's `.part` file.
    part_bytes: u64,
    /// The open bundle's file may hold bytes past its logical end (a
    /// commit that never returned): cut them before its next write.
    cut_pending: bool,
    /// The same for the commit log (cut before its first write).
    commits_cut_pending: bool,
    /// A commit failed part-way: the in-memory state may be ahead of the
    /// files; refuse further writes (the log above fails stop anyway).
    broken: bool,
    /// The open bundle's `.part`, kept open between commits.
    part_file: Option<(u64, Arc<File>)>,
    /// Bundles filled (and renamed to their full names) since the store's
    /// last sync of its bundles: their fdatasyncs and their directories'
    /// fsyncs run with the next sync of the open bundle, in a background
    /// round or beside the commit log's.
    filled: Vec<(PathBuf, Arc<File>)>,
    /// Creates the next bundle's file ahead of need.
    preparer: Option<BundlePreparer>,
    /// A thread that fdatasyncs the bundles while the commit thread
    /// fdatasyncs the commit log.
    bundle_syncer: Option<BundleSyncer>,
    /// A second one, for the commit log while the commit thread writes and
    /// fdatasyncs the anchor ([`Store::commit_anchored`]).
    commits_syncer: Option<BundleSyncer>,
    /// The fdatasyncs of the open bundle and the commit log running in the
    /// background behind commits that their anchor slots alone
    /// acknowledged (their redos hold the events): a round covers every
    /// commit written when it began ([`TileStore::settle`]).
    in_flight: Option<InFlight>,
    /// The store's length up to which its events and commit records are
    /// known durable. A slot of the anchor ring is overwritten only when
    /// this reaches the size the slot names, so that the ring's redos
    /// always cover every commit the store may lack (docs/FORMAT.md §9).
    durable_len: u64,
    /// How long each fdatasync of the store's sync threads is held back:
    /// zero, but in crash tests ([`TileStore::hold_back_syncs`]).
    sync_delay: std::time::Duration,
    /// Work the last commit left for after its callers are answered
    /// ([`Store::after_commit`]), or else for the start of the next commit.
    deferred: Deferred,
}

/// What a commit acknowledged by its anchor slot defers until its callers
/// are answered: threads woken before the answers would take a core from
/// the callers' wake-ups (docs/BENCHMARKS.md, thirteenth session).
#[derive(Default)]
struct Deferred {
    /// Begin the background round covering this many events.
    round: Option<u64>,
    /// Wake the derived-data thread for the commit record queued.
    wake_derived: bool,
}

/// A round of background fdatasyncs begun after a commit acknowledged by
/// its anchor slot: of the commit log always, with `bundles` also of the
/// bundles written since the last round. When all finish, the store is
/// durable up to `covers`.
struct InFlight {
    bundles: bool,
    covers: u64,
}

impl Writer {
    /// The writer of a store opened at `view`, whose open bundle's file is
    /// `part_bytes` long logically (bytes past the ends of it and of the
    /// commit log are cut before their first write).
    fn at(view: View, part_bytes: u64) -> Self {
        Self {
            view,
            part_bytes,
            cut_pending: true,
            commits_cut_pending: true,
            broken: false,
            part_file: None,
            filled: Vec::new(),
            preparer: None,
            bundle_syncer: None,
            commits_syncer: None,
            in_flight: None,
            durable_len: 0,
            sync_delay: std::time::Duration::ZERO,
            deferred: Deferred::default(),
        }
    }
}

/// One step of a background sync: the fdatasync of a store file, or the
/// fsync of a directory whose listing changed (a bundle renamed to its
/// full name).
enum SyncStep {
    Data(PathBuf, Arc<File>),
    Dir(PathBuf),
}

impl SyncStep {
    fn run(&self) -> Result<()> {
        match self {
            Self::Data(path, file) => file.sync_data().map_err(|e| LogError::io(path, e)),
            Self::Dir(dir) => sync_dir(dir),
        }
    }
}

/// A long-lived thread that runs the sync steps it is handed, in order,
/// and answers once for all of them (one request at a time: the writer's
/// lock serialises commits).
struct BundleSyncer {
    requests: std::sync::mpsc::Sender<Vec<SyncStep>>,
    answers: std::sync::mpsc::Receiver<Result<()>>,
    /// Steps were begun and their answer not yet taken.
    busy: bool,
}

/// The answer of a sync thread that is gone (it only ends with the writer).
fn sync_thread_gone() -> LogError {
    LogError::io(
        "store fsync thread",
        std::io::Error::other("the store's fsync thread ended"),
    )
}

impl BundleSyncer {
    /// The thread; each request waits `delay` first (zero but in tests).
    fn start(delay: std::time::Duration) -> Result<Self> {
        let (requests, rx) = std::sync::mpsc::channel::<Vec<SyncStep>>();
        let (tx, answers) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("docket-bundle-sync".into())
            .spawn(move || {
                // Ends when the writer (the sender) is dropped.
                for steps in rx {
                    if !delay.is_zero() {
                        std::thread::sleep(delay);
                    }
                    if tx.send(steps.iter().try_for_each(SyncStep::run)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| LogError::io("bundle fsync thread", e))?;
        Ok(Self {
            requests,
            answers,
            busy: false,
        })
    }

    /// Starts `steps`; [`BundleSyncer::wait`] gives their result.
    fn begin(&mut self, steps: Vec<SyncStep>) -> Result<()> {
        self.requests.send(steps).map_err(|_| sync_thread_gone())?;
        self.busy = true;
        Ok(())
    }

    /// The result of the steps begun last (`Ok` when none are running).
    fn wait(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.busy) {
            return Ok(());
        }
        self.answers
            .recv()
            .unwrap_or_else(|_| Err(sync_thread_gone()))
    }

    /// [`BundleSyncer::wait`] if the steps have finished, else `None`.
    fn finished(&mut self) -> Option<Result<()>> {
        if !self.busy {
            return Some(Ok(()));
        }
        match self.answers.try_recv() {
            Ok(answer) => {
                self.busy = false;
                Some(answer)
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => None,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.busy = false;
                Some(Err(sync_thread_gone()))
            }
        }
    }
}

/// A thread that creates the `.part` file of the bundle after the open one
/// ahead of need, empty, and fsyncs its directory, so that a commit that
/// fills a bundle waits neither for an inode to be allocated (up to a
/// millisecond on an ext4 that deleted files lately) nor for the new
/// name's directory fsync. A file it prepared that is never used (the
/// store closed first) is an empty `.part` past the open bundle, which the
/// store ignores and truncates before its first write (FORMAT.md §11).
struct BundlePreparer {
    /// `None` only while dropping.
    requests: Option<std::sync::mpsc::Sender<(u64, PathBuf)>>,
    answers: std::sync::mpsc::Receiver<(u64, Result<File>)>,
    /// The bundle asked for last, whose answer is not yet taken.
    asked: Option<u64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Waits for the thread: a file it is still preparing is emptied before
/// the store's lock is released (another store of the same directory may
/// write to it next).
impl Drop for BundlePreparer {
    fn drop(&mut self) {
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl BundlePreparer {
    fn start() -> Result<Self> {
        let (requests, rx) = std::sync::mpsc::channel::<(u64, PathBuf)>();
        let (tx, answers) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("docket-bundle-prep".into())
            .spawn(move || {
                // Ends when the writer (the sender) is dropped.
                for (bundle, path) in rx {
                    if tx.send((bundle, prepare_part(&path))).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| LogError::io("bundle preparing thread", e))?;
        Ok(Self {
            requests: Some(requests),
            answers,
            asked: None,
            thread: Some(thread),
        })
    }

    /// Asks for the `.part` of `bundle` at `path`, unless already asked.
    fn ask(&mut self, bundle: u64, path: PathBuf) {
        if self.asked.is_some() {
            return;
        }
        if let Some(requests) = &self.requests
            && requests.send((bundle, path)).is_ok()
        {
            self.asked = Some(bundle);
        }
    }

    /// The prepared `.part` of `bundle` (waiting for it if it was asked
    /// for and is not ready yet); `None` when another bundle was asked for
    /// or preparing it failed (the writer then creates it itself, and
    /// reports what fails).
    fn take(&mut self, bundle: u64) -> Option<File> {
        let asked = self.asked.take()?;
        let (answered, file) = self.answers.recv().ok()?;
        debug_assert_eq!(asked, answered, "one request at a time");
        (answered == bundle).then_some(file.ok()).flatten()
    }
}

/// Creates `path` (and its directories) if missing, empties it, and makes
/// its name durable.
fn prepare_part(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        create_dir_durably(dir)?;
    }
    let file = open_rw(path)?;
    file.set_len(0).map_err(|e| LogError::io(path, e))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(file)
}

/// Where the commits of an anchored chain begin, and where the last ends,
/// in order.
fn chain_boundaries(chain: &[(String, AnchorRedo)]) -> impl DoubleEndedIterator<Item = u64> + '_ {
    chain.iter().map(|(_, r)| r.first_seq).chain(
        chain
            .last()
            .map(|(_, r)| r.first_seq.saturating_add(r.events.len() as u64)),
    )
}

mod derived;
use derived::Derived;

/// The tile store under `DIR/tiles/`, with snapshots in `DIR/snapshots/`
/// and the anchor in `DIR/anchor` (as for [`crate::store::SledStore`]).
pub struct TileStore {
    root: PathBuf,
    /// `tiles/lock`, held exclusively while the store is open: one process
    /// at a time (as sled does for `log/`).
    _lock: File,
    snapshot_dir: PathBuf,
    anchor: Anchor,
    /// `tiles/commits` (shared with the writer's second sync thread).
    commits: Arc<File>,
    commits_path: PathBuf,
    /// `tiles/partial`: the partial hash tiles of levels 1 and up (derived,
    /// written without a sync whenever a level-0 tile fills, checked at open
    /// against the latest checkpoint's root, recomputed when in doubt).
    partial: File,
    view: RwLock<View>,
    writer: Mutex<Writer>,
    /// The indexes and the full tiles a commit queued ([`derived`]);
    /// lookups never wait for a commit's fsync.
    derived: Derived,
    /// Full tiles and bundles read recently (immutable files).
    tile_cache: Mutex<TileCache>,
    bundle_cache: Mutex<HashMap<u64, Arc<Vec<Entry>>>>,
    /// Opened by [`TileStore::open_to_salvage`] past its commit log (missing,
    /// or ending before the events the bundles hold): why, for
    /// [`Store::check_structures`]. The length then comes from the bundles,
    /// and nothing is committed.
    salvaged: Option<String>,
    /// The bytes of `tiles/partial` as the open found them (only when
    /// opened to salvage): the open rewrites a file that does not prove
    /// out, and a salvage may still find in it the only copy of the node
    /// over a run of events that is gone ([`Store::salvage_past_len`]).
    partial_as_found: Vec<u8>,
    /// Opened by [`TileStore::open_to_salvage`] (or its copy): read what
    /// can be read, past what the open cannot recompute.
    opened_to_salvage: bool,
    /// What the open repaired ([`Store::repaired_at_open`]).
    repaired_at_open: Mutex<Vec<String>>,
    /// Opened in a private copy ([`TileStore::open_copy`]): its full
    /// bundles and tiles are hard links to the original's, never written in
    /// place.
    in_private_copy: bool,
    /// For [`TileStore::open_copy`]: the private copy opened (removed on
    /// drop, after the fields above) and the lock held on the original.
    _copy: Option<crate::store::PrivateCopy>,
}

impl std::fmt::Debug for TileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileStore")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Full hash tiles read recently, by (tile level, index).
type TileCache = HashMap<(u8, u64), Arc<Vec<Hash>>>;

const CACHE_TILES: usize = 512;
const CACHE_BUNDLES: usize = 64;

impl TileStore {
    /// Where the bytes of event `seq` lie in the tile store of data
    /// directory `dir`: `(file, offset, length)` (a bundle, or for an event
    /// over 65,535 bytes its own file). For forensics and damage tests; it
    /// reads the bundle as found, without the commit log.
    pub fn locate_entry(dir: &Path, seq: u64) -> Result<(PathBuf, u64, usize)> {
        let root = dir.join("tiles");
        let rel = bundle_path(seq / TILE_WIDTH);
        let full = root.join(&rel);
        let path = if full.exists() {
            full
        } else {
            root.join(format!("{rel}.part"))
        };
        let bytes = fs::read(&path).map_err(|e| LogError::io(&path, e))?;
        let entries =
            parse_bundle(&bytes).map_err(|e| LogError::corrupt(format!("tiles/{rel}"), e))?;
        let index = (seq % TILE_WIDTH) as usize;
        let entry = entries.get(index).ok_or_else(|| LogError::NotFound {
            what: format!("event {seq} in tiles/{rel}"),
        })?;
        if entry.first() == Some(&OVERSIZED_MARKER) {
            let large = root.join("large").join(seq.to_string());
            let len = fs::metadata(&large)
                .map_err(|e| LogError::io(&large, e))?
                .len();
            return Ok((large, 0, len as usize));
        }
        let offset = entry.as_ptr() as usize - bytes.as_ptr() as usize;
        Ok((path, offset as u64, entry.len()))
    }

    /// For crash tests: holds back every fdatasync of the store's sync
    /// threads (the background rounds, and the bundle's and commit log's
    /// syncs of a commit) by `delay`, as a slow disk would, so that a test
    /// can stop the store while a round is known not to have finished.
    /// Never used by the ledger.
    #[doc(hidden)]
    pub fn hold_back_syncs(&self, delay: std::time::Duration) {
        let mut guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let w = &mut *guard;
        if let Err(e) = self.settle(w, true) {
            tracing::warn!("tile store: {e}");
            w.broken = true;
        }
        w.sync_delay = delay;
        w.bundle_syncer = None;
        w.commits_syncer = None;
    }

    /// Creates an empty tile store under `dir` durably (`tiles/`,
    /// `snapshots/`, the anchor), every new name fsynced. Refuses a
    /// directory that holds a store.
    pub fn create(dir: &Path) -> Result<Self> {
        create_dir_durably(dir)?;
        for name in ["tiles", "log", "snapshots", "anchor"] {
            if dir.join(name).exists() {
                return Err(LogError::AlreadyExists {
                    what: format!("{name} in the data directory"),
                });
            }
        }
        let staging = dir.join(".tiles.new");
        let _ = fs::remove_dir_all(&staging);
        create_dir_durably(&staging.join("tile/entries"))?;
        let commits = staging.join("commits");
        File::create(&commits)
            .and_then(|f| f.sync_all())
            .map_err(|e| LogError::io(&commits, e))?;
        for name in ["statements.idx", "checkpoints.idx"] {
            let mut t = DiskTable::create(&staging.join(name), DiskTable::INITIAL, true)?;
            t.sync(0)?;
            t.file.sync_all().map_err(|e| LogError::io(&t.path, e))?;
        }
        sync_dir(&staging)?;
        fs::rename(&staging, dir.join("tiles")).map_err(|e| LogError::io(dir.join("tiles"), e))?;
        create_dir_durably(&dir.join("snapshots"))?;
        Anchor::create(&dir.join("anchor"))?;
        sync_dir(dir)?;
        Self::open(dir)
    }

    /// Opens the tile store under `dir`. Reads the same files whatever the
    /// log's size: the end of the commit log, the open bundle and
    /// `tiles/partial` (or, when that does not prove out, the full tiles
    /// under the partial ones).
    pub fn open(dir: &Path) -> Result<Self> {
        Self::open_with(dir, false, false)
    }

    /// Opens the tile store of a damaged data directory to read what it
    /// still holds (`docket recover`). As [`TileStore::open`], except that
    /// a missing commit log is not an error: the log's length is then that
    /// of the entry bundles (every full one in a row, and the entries of the
    /// next that read whole), no checkpoint is stored but the anchor's,
    /// [`Store::check_structures`] reports the commit log missing, and
    /// every commit is refused.
    pub fn open_to_salvage(dir: &Path) -> Result<Self> {
        Self::open_with(dir, true, false)
    }

    /// Opens a private copy of the tile store under `dir`, for commands
    /// that only read a store that may be damaged (`replay --verify`, the
    /// source of `migrate`): the open's own recovery (a redo from the
    /// anchor, a torn tail cut off, `tiles/partial` or an index rebuilt)
    /// happens in the copy, never in the evidence, which may hold the only
    /// copy of a hash a salvage needs. `tiles/`, `anchor` and `snapshots/`
    /// are copied to the system's temporary directory (`TMPDIR`); the
    /// original `tiles/lock` stays locked while the copy is in use, so a
    /// server cannot start on it meanwhile, and one already running is
    /// reported (`could not acquire lock`). Costs one copy of the store
    /// (about 381 bytes per event of 237 bytes), and works on a data
    /// directory the caller cannot write.
    pub fn open_copy(dir: &Path) -> Result<Self> {
        Self::open_copy_with(dir, false)
    }

    /// [`TileStore::open_to_salvage`] on a private copy, as
    /// [`TileStore::open_copy`] (`docket recover`).
    pub fn open_copy_to_salvage(dir: &Path) -> Result<Self> {
        Self::open_copy_with(dir, true)
    }

    fn open_copy_with(dir: &Path, salvage: bool) -> Result<Self> {
        // (Snapshots are derived: a salvage goes on without them; the full
        // check reports their directory missing.)
        let copy =
            crate::store::PrivateCopy::of_store("tiles", dir, salvage, &lock_original, &|rel| {
                is_immutable_tile_file(rel)
            })?;
        let mut store = Self::open_with(&copy.dir, salvage, true)?;
        store._copy = Some(copy);
        Ok(store)
    }

    fn open_with(dir: &Path, salvage: bool, in_private_copy: bool) -> Result<Self> {
        let root = dir.join("tiles");
        let snapshot_dir = dir.join("snapshots");
        crate::store::require_dirs(&[&root, &snapshot_dir])?;
        let lock = lock_store(&root)?;
        let anchor = Anchor::open(&dir.join("anchor"))?;
        let commits_path = root.join("commits");
        let mut commits_missing = false;
        let commits = match OpenOptions::new()
            .read(true)
            .write(true)
            .open(&commits_path)
        {
            Ok(f) => f,
            Err(e) if salvage && e.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!(
                    "tile store: the commit log is missing; reading the log's length from the entry bundles"
                );
                commits_missing = true;
                // An empty commit log that nothing is written to.
                File::open("/dev/null").map_err(|e| LogError::io("/dev/null", e))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LogError::corrupt(
                    "tiles/commits",
                    "the commit log is missing",
                ));
            }
            Err(e) => return Err(LogError::io(&commits_path, e)),
        };
        let physical = commits
            .metadata()
            .map_err(|e| LogError::io(&commits_path, e))?
            .len();
        let open_table = |name: &str| -> Result<DiskTable> {
            let path = root.join(name);
            Ok(match DiskTable::open(&path)? {
                Some(t) => t,
                None => {
                    tracing::warn!("tile store: index {name} is missing or damaged; rebuilding it");
                    DiskTable::create(&path, DiskTable::INITIAL, true)?
                }
            })
        };
        let partial_path = root.join(PARTIAL_FILE);
        let partial_as_found = if salvage {
            // Small (at most a few KiB); any failure only means no nodes.
            fs::read(&partial_path)
                .ok()
                .filter(|b| b.len() <= 64 * 1024)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let partial = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&partial_path)
            .map_err(|e| LogError::io(&partial_path, e))?;
        let derived_commits = commits
            .try_clone()
            .map_err(|e| LogError::io(&commits_path, e))?;
        let mut store = Self {
            _lock: lock,
            root: root.clone(),
            snapshot_dir,
            anchor,
            commits: Arc::new(commits),
            commits_path: commits_path.clone(),
            partial,
            view: RwLock::new(View::default()),
            writer: Mutex::new(Writer::at(View::default(), 0)),
            // Its indexes catch up below, before anything is queued.
            derived: Derived::start(
                open_table("statements.idx")?,
                open_table("checkpoints.idx")?,
                root.clone(),
                derived_commits,
                commits_path.clone(),
            )?,
            tile_cache: Mutex::default(),
            bundle_cache: Mutex::default(),
            salvaged: commits_missing.then(|| {
                "the commit log is missing (its records, the checkpoints stored with the events \
                 and the statement digests are lost); the events the entry bundles hold in a row \
                 were read without it"
                    .to_string()
            }),
            partial_as_found,
            opened_to_salvage: salvage,
            in_private_copy,
            repaired_at_open: Mutex::default(),
            _copy: None,
        };
        if commits_missing {
            {
                let mut ix = store.derived.indexes();
                let ix = &mut *ix;
                catch_up_index(&mut ix.statements, 0, true, &store.commits, &commits_path)?;
                catch_up_index(&mut ix.checkpoints, 0, false, &store.commits, &commits_path)?;
                ix.indexed_end = 0;
            }
            store.read_past_the_commit_log()?;
            return Ok(store);
        }

        // The last valid commit record whose events are all present.
        let mut record = store.last_record(physical)?;
        // (first record skipped: its start and length; how many skipped)
        let mut skipped: Option<(u64, u64, u64)> = None;
        let (log_len, open_bundle, part_bytes) = loop {
            let Some(rec) = record.as_ref() else {
                break (0, Vec::new(), 0);
            };
            if let Some((entries, bytes)) = store.entries_present(rec.log_len)? {
                break (rec.log_len, entries, bytes);
            }
            let s = skipped.get_or_insert((rec.start, rec.log_len, 0));
            s.0 = rec.start;
            s.2 += 1;
            record = record_ending_at(&store.commits, rec.start, &commits_path)?;
        };
        if let Some((from, names, count)) = skipped {
            tracing::warn!(
                "tile store: the last {count} commit(s) of tiles/commits, from byte {from}, name events up to {names} that are not all stored (commits that never returned, or damage to the entry bundles since: the anchor check below decides)"
            );
        }
        let mut view = store.view_at(record.as_ref(), log_len, open_bundle)?;
        let mut part_bytes = part_bytes;
        // The commits the anchor ring carries (small commits, each
        // acknowledged by its slot alone): the store may lack them, or hold
        // them torn, after a stop. Where it does not hold them intact, it is
        // cut back to the last commit of theirs it holds intact (at worst to
        // where they begin, which was durable before they were anchored),
        // and the rest are committed again below.
        let chain = store.anchored_chain()?;
        if let Some((_, first)) = chain.first()
            && view.len >= first.first_seq
        {
            *store.view.write().unwrap_or_else(PoisonError::into_inner) = view.clone();
            let from = first.first_seq;
            let to = chain.last().map_or(from, |(_, r)| {
                r.first_seq.saturating_add(r.events.len() as u64)
            });
            // Events past the chain's end were never acknowledged but are
            // valid (the ledger's open anchors them): not cut.
            let held = store.chain_held_intact(view.len, &chain)?;
            if held < view.len.min(to) {
                let mut cut = None;
                for boundary in chain_boundaries(&chain).rev().filter(|b| *b <= held) {
                    if let Some(found) = store.record_of_len(physical, boundary)? {
                        cut = Some((boundary, found));
                        break;
                    }
                }
                match cut {
                    Some((at, (rec, entries, bytes))) => {
                        tracing::warn!(
                            "tile store: the anchor carries events {from}..{to}, which the store does not hold intact ({} events); cut back to {at} to commit the rest again",
                            view.len
                        );
                        view = store.view_at(rec.as_ref(), at, entries)?;
                        part_bytes = bytes;
                    }
                    None => tracing::warn!(
                        "tile store: the anchor carries events {from}..{to}, but the store holds no intact commit ending at {from}"
                    ),
                }
            }
        }
        // Bytes an earlier process wrote may be in the page cache only (it
        // was killed between a commit and its background fdatasyncs): they
        // are made durable before any slot of the ring can be overwritten.
        let ring_from = chain.first().map_or(view.len, |(_, r)| r.first_seq);
        store.sync_open_files(ring_from, view.len)?;
        let commits_end = view.commits_end;
        {
            let mut ix = store.derived.indexes();
            let ix = &mut *ix;
            let caught_up = catch_up_index(
                &mut ix.statements,
                commits_end,
                true,
                &store.commits,
                &commits_path,
            )
            .and_then(|()| {
                catch_up_index(
                    &mut ix.checkpoints,
                    commits_end,
                    false,
                    &store.commits,
                    &commits_path,
                )
            });
            match caught_up {
                Ok(()) => {}
                // Opened to salvage, over a commit log the indexes cannot
                // be rebuilt from (a damaged record before the end): they
                // stay empty (the checkpoints they would hold are not
                // found; the anchor's still is), and what can be read is.
                Err(LogError::Corrupt { location, detail }) if salvage => {
                    tracing::warn!(
                        "tile store: the indexes cannot be rebuilt ({location}: {detail}); \
                         reading without them"
                    );
                    for table in [&mut ix.statements, &mut ix.checkpoints] {
                        *table = DiskTable::create(&table.path.clone(), DiskTable::INITIAL, true)?;
                        table.sync(commits_end)?;
                    }
                }
                Err(e) => return Err(e),
            }
            ix.indexed_end = commits_end;
        }
        let mut writer = Writer::at(view.clone(), part_bytes);
        writer.durable_len = view.len;
        store.writer = Mutex::new(writer);
        store.view = RwLock::new(view);
        store.redo_from_anchor(chain)?;
        if salvage {
            store.read_past_the_commit_log()?;
        }
        Ok(store)
    }

    /// In a store opened to salvage: when the entry bundles hold more events
    /// in a row than the commit log accounts for (it is missing, was cut
    /// short or damaged), the view takes them all (proved, or not, by the anchor and
    /// the checkpoints above), and the store becomes read-only.
    fn read_past_the_commit_log(&mut self) -> Result<()> {
        let (len, open_bundle, part_bytes) = self.salvaged_length()?;
        let mut view = self.read_view().clone();
        if len <= view.len {
            return Ok(());
        }
        tracing::warn!(
            "tile store: the commit log accounts for {} events but the entry bundles hold {len} in a row; reading them all",
            view.len
        );
        // (A missing commit log was named at the open already.)
        self.salvaged.get_or_insert_with(|| format!(
            "the commit log accounts for {} events (its intact records end at byte {}) but the entry bundles hold {len} in a row: the rest were read without it",
            view.len, view.commits_end
        ));
        view.len = len;
        view.open_bundle = open_bundle;
        view.partial_tiles = self.partial_tiles(&view)?;
        let mut writer = Writer::at(view.clone(), part_bytes);
        writer.durable_len = len;
        self.writer = Mutex::new(writer);
        self.view = RwLock::new(view);
        Ok(())
    }

    /// The view of a store whose last commit is `record` (none: empty) and
    /// whose open bundle holds `open_bundle`: its latest checkpoint and its
    /// partial hash tiles (the stored ones when they prove out, else
    /// recomputed and stored).
    fn view_at(
        &self,
        record: Option<&CommitRecord>,
        len: u64,
        open_bundle: Vec<Entry>,
    ) -> Result<View> {
        let latest = match record {
            Some(r) => self.latest_checkpoint_before(r)?,
            None => None,
        };
        let mut view = View {
            len,
            open_bundle,
            partial_tiles: Vec::new(),
            latest,
            commits_end: record.map_or(0, |r| r.end),
        };
        view.partial_tiles = match self.stored_partial_tiles(&view)? {
            Some(tiles) => tiles,
            None => match self.partial_tiles(&view) {
                Ok(tiles) => {
                    self.write_partial(view.len, &tiles)?;
                    tiles
                }
                // Opened to salvage, over tiles the partial ones cannot be
                // computed from: no node above the open bundle is known (a
                // proof that needs one fails), and what can be read is.
                Err(LogError::Corrupt { location, detail }) if self.opened_to_salvage => {
                    tracing::warn!(
                        "tile store: the partial hash tiles cannot be recomputed ({location}: {detail}); \
                         reading without them"
                    );
                    vec![self.open_bundle_leaves(&view)?]
                }
                Err(e) => return Err(e),
            },
        };
        Ok(view)
    }

    /// The commits the anchor ring carries that the store may lack, oldest
    /// first: the newest slot's redo, preceded by the redo of the slot that
    /// ends where it begins (its checkpoint names that size), and so on
    /// back, but none that ends where the newest slot says the store was
    /// durable already. A commit acknowledged by its slot alone overwrites
    /// the oldest slot only once the store is durable up to the size that
    /// slot names, so these cover everything the store may lack; and a
    /// difference before the durable mark is damage, never taken for a
    /// write that did not reach the disk (docs/FORMAT.md §9).
    fn anchored_chain(&self) -> Result<Vec<(String, AnchorRedo)>> {
        let mut slots = self.anchor.read_newest_first()?;
        let Some((note, Some(newest))) = (!slots.is_empty()).then(|| slots.remove(0)) else {
            return Ok(Vec::new());
        };
        let mut chain = vec![(note, newest)];
        loop {
            let begins = chain[chain.len() - 1].1.first_seq;
            let before = slots.iter().position(|(note, redo)| {
                redo.as_ref().is_some_and(|r| {
                    r.first_seq.checked_add(r.events.len() as u64) == Some(begins)
                        && crate::checkpoint::unverified_size_and_root(note)
                            .is_some_and(|(size, _)| size == begins)
                })
            });
            match before.map(|i| slots.remove(i)) {
                Some((note, Some(redo))) => chain.push((note, redo)),
                _ => break,
            }
        }
        chain.reverse();
        // The slots are untrusted bytes: lengths add up saturating.
        let durable = chain.last().map_or(0, |(_, r)| r.durable);
        chain.retain(|(_, r)| r.first_seq.saturating_add(r.events.len() as u64) > durable);
        Ok(chain)
    }

    /// The largest boundary of the anchored `chain` (where one of its
    /// commits begins or the last ends), at most `len`, such that the store
    /// holds the chain's events from its first one up to it byte for byte.
    fn chain_held_intact(&self, len: u64, chain: &[(String, AnchorRedo)]) -> Result<u64> {
        let Some((_, first)) = chain.first() else {
            return Ok(len);
        };
        let mut held = first.first_seq;
        for (note, redo) in chain {
            let end = redo.first_seq.saturating_add(redo.events.len() as u64);
            if end > len {
                break;
            }
            let stored = match self.event_range(redo.first_seq, end) {
                Ok(stored) => stored,
                // Torn bytes: not held intact, so committed again.
                Err(LogError::Corrupt { .. }) => break,
                Err(e) => return Err(e),
            };
            if !stored.iter().map(|(_, b)| b).eq(redo.events.iter()) {
                // The store's own events may be the intact copy and the
                // slot's redo the damaged one: when they give the root the
                // slot's checkpoint names, the store holds the commit.
                if self.stored_give_root(redo.first_seq, &stored, note)? {
                    let warning = format!(
                        "the anchor's redo of events {}..{end} differs from the store's events, \
                         which give its signed root: that anchor slot is damaged and was passed \
                         over; the store's events were kept",
                        redo.first_seq
                    );
                    tracing::warn!("tile store: {warning}");
                    self.repaired_at_open
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(warning);
                    held = end;
                    continue;
                }
                break;
            }
            held = end;
        }
        Ok(held)
    }

    /// Whether the store's events `stored` (from `first`, following the
    /// store's tree of `first` events) give the root of the checkpoint
    /// `note` names, for its size. The note's signature is the anchored
    /// open's to check.
    fn stored_give_root(&self, first: u64, stored: &[(u64, Vec<u8>)], note: &str) -> Result<bool> {
        let Some((size, root)) = crate::checkpoint::unverified_size_and_root(note) else {
            return Ok(false);
        };
        if first.checked_add(stored.len() as u64) != Some(size) {
            return Ok(false);
        }
        let Ok(mut frontier) = merkle::Frontier::restore(self, first) else {
            return Ok(false);
        };
        for (_, bytes) in stored {
            frontier.push(merkle::leaf_hash(bytes));
        }
        Ok(frontier.root() == root)
    }

    /// fdatasyncs the commit log and the bundles of a store of `len`
    /// events that an earlier process may have left in the page cache
    /// only: the open bundle, and the full ones from the one holding event
    /// `from` (where the anchor ring's commits begin) or at least the one
    /// before the open bundle. A full bundle found under its `.part` name
    /// (its rename had not reached the disk; the open found all its
    /// entries) is renamed to its full name, durably.
    fn sync_open_files(&self, from: u64, len: u64) -> Result<()> {
        self.commits_step().run()?;
        let open = len / TILE_WIDTH;
        let first = (from.min(len) / TILE_WIDTH).min(open.saturating_sub(1));
        let sync = |path: &Path| -> Result<bool> {
            match File::open(path) {
                Ok(f) => f
                    .sync_data()
                    .map(|()| true)
                    .map_err(|e| LogError::io(path, e)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(LogError::io(path, e)),
            }
        };
        for bundle in first..open {
            let full = self.path(&bundle_path(bundle));
            if sync(&full)? {
                continue;
            }
            let part = self.part_path(bundle);
            if sync(&part)? {
                tracing::warn!(
                    "tile store: full bundle {bundle} was still named {}; renamed to its full name",
                    part.display()
                );
                fs::rename(&part, &full).map_err(|e| LogError::io(&full, e))?;
                if let Some(dir) = full.parent() {
                    sync_dir(dir)?;
                }
            }
        }
        if !len.is_multiple_of(TILE_WIDTH) {
            sync(&self.part_path(open))?;
            sync(&self.path(&bundle_path(open)))?;
        }
        Ok(())
    }

    /// The last intact commit record whose log length is `len`, searched
    /// back from `physical` bytes of the commit log past records that are
    /// torn, with the open bundle's entries and bytes at `len`; `None` when
    /// there is none or its events are not all present. `Some((None, ..))`
    /// for `len` 0.
    #[allow(clippy::type_complexity, reason = "a private search result")]
    fn record_of_len(
        &self,
        physical: u64,
        len: u64,
    ) -> Result<Option<(Option<CommitRecord>, Vec<Entry>, u64)>> {
        let mut r = self.last_record(physical)?;
        while let Some(rec) = &r
            && rec.log_len > len
        {
            r = match record_ending_at(&self.commits, rec.start, &self.commits_path)? {
                Some(prev) => Some(prev),
                None => self.last_record(rec.start)?,
            };
        }
        if r.as_ref().map_or(0, |rec| rec.log_len) != len {
            return Ok(None);
        }
        Ok(self
            .entries_present(len)?
            .map(|(entries, bytes)| (r, entries, bytes)))
    }

    /// Commits again the events the anchor slots carry (`chain`, from
    /// [`TileStore::anchored_chain`]) that follow the store's last one:
    /// the stop came after a slot's fdatasync and before the store's
    /// ([`Store::commit_anchored`]). Each is applied only when it follows
    /// the store's last event and gives its checkpoint's root; any other
    /// gap is left for the ledger's anchor check to report as damage.
    fn redo_from_anchor(&self, chain: Vec<(String, AnchorRedo)>) -> Result<()> {
        for (note, redo) in chain {
            let len = self.read_view().len;
            let Some((size, root)) = crate::checkpoint::unverified_size_and_root(&note) else {
                return Ok(());
            };
            let count = redo.events.len() as u64;
            if size <= len {
                continue;
            }
            if redo.first_seq != len || len.checked_add(count) != Some(size) {
                return Ok(());
            }
            let mut frontier = match merkle::Frontier::restore(self, len) {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!("tile store: cannot redo the anchored commit: {e}");
                    return Ok(());
                }
            };
            let mut batch = CommitBatch::default();
            for (i, bytes) in redo.events.into_iter().enumerate() {
                batch.nodes.extend(frontier.push(merkle::leaf_hash(&bytes)));
                batch.events.push((len + i as u64, bytes));
            }
            let statements_fit = redo
                .statements
                .iter()
                .all(|(_, seq)| (len..size).contains(seq));
            if frontier.root() != root || !statements_fit {
                tracing::warn!(
                    "tile store: the anchor carries events {len}..{size} that do not give its checkpoint's root; not redone"
                );
                return Ok(());
            }
            batch.statements = redo.statements;
            batch.checkpoint = Some((size, note));
            tracing::warn!(
                "tile store: events {len}..{size} are anchored but the store does not hold them (a commit interrupted before its files were durable, or damage to them since); committed them again from the anchor"
            );
            self.commit(&batch)?;
            self.repaired_at_open
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!(
                    "events {len}..{size} were committed again from the anchor's redo (the \
                     store did not hold them whole: a commit interrupted at a crash, or damage \
                     since)"
                ));
        }
        Ok(())
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn part_path(&self, bundle: u64) -> PathBuf {
        self.path(&format!("{}.part", bundle_path(bundle)))
    }

    fn large_path(&self, seq: u64) -> PathBuf {
        self.root.join("large").join(seq.to_string())
    }

    /// The last valid record at or before `physical` bytes of the commit
    /// log: the record ending at the end of the file, or (after a commit
    /// that never returned left a torn record) the last one before it.
    fn last_record(&self, physical: u64) -> Result<Option<CommitRecord>> {
        if physical == 0 {
            return Ok(None);
        }
        if let Some(r) = record_ending_at(&self.commits, physical, &self.commits_path)? {
            return Ok(Some(r));
        }
        // Search backwards for the end marker of an intact record.
        const WINDOW: u64 = 8 << 20;
        let from = physical.saturating_sub(WINDOW);
        let window = read_at(
            &self.commits,
            from,
            (physical - from) as usize,
            &self.commits_path,
        )?;
        let mut at = window.len();
        while at >= 4 {
            at -= 1;
            if at + 1 >= 4 && &window[at + 1 - 4..at + 1] == COMMIT_END {
                let end = from + at as u64 + 1;
                if let Some(r) = record_ending_at(&self.commits, end, &self.commits_path)? {
                    return Ok(Some(r));
                }
            }
        }
        if from == 0 {
            // Not one intact record: the first commit never returned. (A
            // log that lost acknowledged records is shorter than its
            // anchor, which the log above reports.)
            tracing::warn!(
                "tile store: tiles/commits holds no intact record ({physical} bytes of a commit that never returned)"
            );
            return Ok(None);
        }
        Err(LogError::corrupt(
            format!("tiles/commits, the last {WINDOW} bytes"),
            "no intact commit record at the end of the commit log",
        ))
    }

    /// The latest checkpoint stored at or before record `rec`.
    fn latest_checkpoint_before(&self, rec: &CommitRecord) -> Result<Option<(u64, String)>> {
        let mut r = Some(CommitRecord {
            start: rec.start,
            end: rec.end,
            log_len: rec.log_len,
            statements: Vec::new(),
            checkpoint: rec.checkpoint.clone(),
        });
        let mut best: Option<(u64, String)> = None;
        // Checkpoint-only records may hold older sizes (a copied history):
        // look back a little for the largest size at this log length.
        for _ in 0..64 {
            let Some(cur) = r else { break };
            if cur.log_len != rec.log_len && best.is_some() {
                break;
            }
            if let Some(c) = cur.checkpoint.clone()
                && best.as_ref().is_none_or(|b| c.0 > b.0)
            {
                best = Some(c);
            }
            r = record_ending_at(&self.commits, cur.start, &self.commits_path)?;
        }
        Ok(best)
    }

    /// The open bundle's entries and byte length if every one of the first
    /// `log_len` events is present, `None` if some are missing.
    fn entries_present(&self, log_len: u64) -> Result<Option<(Vec<Entry>, u64)>> {
        let bundle = log_len / TILE_WIDTH;
        let in_open = (log_len % TILE_WIDTH) as usize;
        if bundle > 0 && !self.bundle_complete(bundle - 1)? {
            return Ok(None);
        }
        if in_open == 0 {
            return Ok(Some((Vec::new(), 0)));
        }
        // The open bundle: `.part`, or its full name if a commit that never
        // returned filled it.
        let bytes = match self.read_bundle_file(bundle)? {
            Some(b) => b,
            None => return Ok(None),
        };
        // A torn tail past the committed entries is not an error.
        let mut entries = Vec::new();
        let mut at = 0usize;
        while entries.len() < in_open {
            let Some(len) = bytes.get(at..at + 2) else {
                return Ok(None);
            };
            let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
            let Some(entry) = bytes.get(at + 2..at + 2 + len) else {
                return Ok(None);
            };
            let seq = bundle * TILE_WIDTH + entries.len() as u64;
            match read_entry(entry) {
                Some(e @ Entry::Large { .. }) if self.large_path(seq).exists() => entries.push(e),
                Some(e @ Entry::Inline(_)) => entries.push(e),
                _ => return Ok(None),
            }
            at += 2 + len;
        }
        Ok(Some((entries, at as u64)))
    }

    /// Past the commit log: the length of the run of events the bundles
    /// hold from the start, the open bundle's entries and its byte length.
    fn salvaged_length(&self) -> Result<(u64, Vec<Entry>, u64)> {
        let mut full = 0u64;
        while self.bundle_complete(full)? {
            full += 1;
        }
        for in_open in (1..TILE_WIDTH).rev() {
            if let Some((entries, bytes)) = self.entries_present(full * TILE_WIDTH + in_open)? {
                return Ok((full * TILE_WIDTH + in_open, entries, bytes));
            }
        }
        Ok((full * TILE_WIDTH, Vec::new(), 0))
    }

    /// Whether bundle `bundle`'s file (full, or a `.part` a commit filled)
    /// holds 256 entries that read as events or stand-ins (zeroed bytes
    /// frame as many empty entries, which are not).
    fn bundle_complete(&self, bundle: u64) -> Result<bool> {
        Ok(match self.read_bundle_file(bundle)? {
            Some(b) => parse_full_bundle(&b)
                .is_ok_and(|(entries, _)| entries.iter().all(|e| read_entry(e).is_some())),
            None => false,
        })
    }

    /// The bytes of bundle `index`: its full file, else its `.part`.
    fn read_bundle_file(&self, index: u64) -> Result<Option<Vec<u8>>> {
        for path in [self.path(&bundle_path(index)), self.part_path(index)] {
            match fs::read(&path) {
                Ok(b) => return Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(path, e)),
            }
        }
        Ok(None)
    }

    /// A full bundle's entries (cached).
    fn full_bundle(&self, index: u64) -> Result<Arc<Vec<Entry>>> {
        if let Some(b) = self
            .bundle_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&index)
        {
            return Ok(Arc::clone(b));
        }
        let location = bundle_path(index);
        let bytes = self.read_bundle_file(index)?.ok_or_else(|| {
            LogError::corrupt(format!("tiles/{location}"), "the entry bundle is missing")
        })?;
        let (parsed, trailing) = parse_full_bundle(&bytes)
            .map_err(|e| LogError::corrupt(format!("tiles/{location}"), e))?;
        let entries: Arc<Vec<Entry>> = Arc::new(
            parsed
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    read_entry(e).ok_or_else(|| {
                        LogError::corrupt(
                            format!("tiles/{location}"),
                            format!("entry {i} is neither an event nor a large event's stand-in"),
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        );
        // Said only once the 256 entries read as events (zeroed bytes
        // also frame 256 entries, of no event), and once per read of the
        // file (the bundle is cached next).
        if trailing > 0 {
            tracing::warn!(
                "tile store: tiles/{location} holds {trailing} bytes after its 256 entries, from byte {} \
                 (damage to the file; the entries before them read as events and are used)",
                bytes.len() - trailing
            );
        }
        let mut cache = self
            .bundle_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= CACHE_BUNDLES {
            cache.clear();
        }
        cache.insert(index, Arc::clone(&entries));
        Ok(entries)
    }

    /// The leaf hash of an entry (a large event's is in its stand-in).
    fn entry_leaf(&self, seq: u64, entry: &Entry) -> Result<Hash> {
        match entry {
            Entry::Large { leaf, .. } => Ok(*leaf),
            Entry::Inline(_) => Ok(merkle::leaf_hash(&self.entry_bytes(seq, entry)?)),
        }
    }

    fn entry_bytes(&self, seq: u64, entry: &Entry) -> Result<Vec<u8>> {
        match entry {
            Entry::Inline(b) => Ok(b.to_vec()),
            Entry::Large { len, leaf } => {
                let path = self.large_path(seq);
                let bytes = fs::read(&path).map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => LogError::corrupt(
                        format!("tiles/large/{seq}"),
                        format!("the bytes of event {seq} (over 65,535 bytes) are missing"),
                    ),
                    _ => LogError::io(path, e),
                })?;
                if bytes.len() as u64 != u64::from(*len) || merkle::leaf_hash(&bytes) != *leaf {
                    return Err(LogError::corrupt(
                        format!("tiles/large/{seq}"),
                        format!(
                            "the bytes of event {seq} differ from the length and leaf hash its bundle records"
                        ),
                    ));
                }
                Ok(bytes)
            }
        }
    }

    /// Full hash tile `(level, index)`: read (cached), or, when missing,
    /// recomputed from the level below and written again (derived data).
    fn full_tile(&self, level: u8, index: u64) -> Result<Arc<Vec<Hash>>> {
        // A tile a commit completed, until its file is in place.
        if let Some(t) = self.derived.queued_tile(level, index) {
            return Ok(t);
        }
        if let Some(t) = self
            .tile_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(level, index))
        {
            return Ok(Arc::clone(t));
        }
        let rel = hash_tile_path(level, index);
        let path = self.path(&rel);
        let hashes = match fs::read(&path) {
            Ok(b) => parse_tile(&b)
                .filter(|h| h.len() as u64 == TILE_WIDTH)
                .ok_or_else(|| {
                    LogError::corrupt(
                        format!("tiles/{rel}"),
                        "a full hash tile that is not 256 hashes",
                    )
                })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!("tile store: hash tile {rel} is missing; recomputing it");
                let hashes = self.compute_tile(level, index)?;
                self.write_tile(level, index, &hashes)?;
                hashes
            }
            Err(e) => return Err(LogError::io(path, e)),
        };
        let hashes = Arc::new(hashes);
        let mut cache = self
            .tile_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= CACHE_TILES {
            cache.clear();
        }
        cache.insert((level, index), Arc::clone(&hashes));
        Ok(hashes)
    }

    /// The 256 hashes of full tile `(level, index)` from the level below.
    fn compute_tile(&self, level: u8, index: u64) -> Result<Vec<Hash>> {
        if level == 0 {
            let entries = self.full_bundle(index)?;
            return entries
                .iter()
                .enumerate()
                .map(|(i, e)| self.entry_leaf(index * TILE_WIDTH + i as u64, e))
                .collect();
        }
        (0..TILE_WIDTH)
            .map(|i| {
                Ok(subtree_root(
                    &self.full_tile(level - 1, index * TILE_WIDTH + i)?,
                ))
            })
            .collect()
    }

    fn write_tile(&self, level: u8, index: u64, hashes: &[Hash]) -> Result<()> {
        write_tile_file(&self.root, level, index, hashes)
    }

    /// The leaf hashes of the open bundle's events (the level-0 partial tile).
    fn open_bundle_leaves(&self, view: &View) -> Result<Vec<Hash>> {
        let open_start = view.len - view.open_bundle.len() as u64;
        view.open_bundle
            .iter()
            .enumerate()
            .map(|(i, e)| self.entry_leaf(open_start + i as u64, e))
            .collect()
    }

    /// The partial hash tiles of a log of `view.len` events: level 0 from
    /// the open bundle, level L from the full tiles of level L−1 past the
    /// last full tile of level L.
    /// The Merkle nodes of levels 8, 16, … over events `from..to` that the
    /// store's files kept: the full hash tiles of levels 1 and up, and the
    /// partial tiles of `tiles/partial` as the open found it (for the log
    /// length it was written at, whatever the length now). For a salvage
    /// ([`Store::salvage_past_len`]); unverified, as every kept hash is.
    fn kept_upper_nodes(&self, from: u64, to: u64) -> Result<Vec<(u8, u64, Hash)>> {
        let mut nodes = Vec::new();
        if from >= to {
            return Ok(nodes);
        }
        for tile_level in 1..8u8 {
            let shift = 8 * u32::from(tile_level);
            let (first, last) = (from >> shift, (to - 1) >> shift);
            for tile in first / TILE_WIDTH..=last / TILE_WIDTH {
                let path = self.path(&hash_tile_path(tile_level, tile));
                let bytes = match fs::read(&path) {
                    Ok(b) => b,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(LogError::io(path, e)),
                };
                let Some(hashes) = parse_tile(&bytes).filter(|h| h.len() as u64 == TILE_WIDTH)
                else {
                    continue;
                };
                nodes.extend(
                    (tile * TILE_WIDTH..)
                        .zip(hashes)
                        .filter(|(i, _)| (first..=last).contains(i))
                        .map(|(i, h)| (8 * tile_level, i, h)),
                );
            }
        }
        if let Some((full_level0_tiles, upper)) = decode_partial_as_written(&self.partial_as_found)
        {
            let mut total = full_level0_tiles;
            for (l, tile) in upper.iter().enumerate() {
                // Hashes at tree level 8·(l+1): `total` of them, the last
                // `total % 256` in this partial tile.
                let level = 8 * (l as u8 + 1);
                // decode_partial checked `tile.len() == total % 256`.
                let start = total - tile.len() as u64;
                nodes.extend(
                    (start..)
                        .zip(tile.iter().copied())
                        .filter(|(i, _)| {
                            // In u128: a partial file names any length.
                            let shift = u32::from(level);
                            let (i, from, to) = (u128::from(*i), u128::from(from), u128::from(to));
                            (i << shift) < to && ((i + 1) << shift) > from
                        })
                        .map(|(i, h)| (level, i, h)),
                );
                total /= TILE_WIDTH;
            }
        }
        Ok(nodes)
    }

    fn partial_tiles(&self, view: &View) -> Result<Vec<Vec<Hash>>> {
        let mut out = Vec::new();
        let leaves = self.open_bundle_leaves(view)?;
        out.push(leaves);
        let mut level = 1u8;
        // Hashes at tree level 8·L: len >> 8L of them.
        while u32::from(level) * 8 < 64 && (view.len >> (8 * u32::from(level))) > 0 {
            let total = view.len >> (8 * u32::from(level));
            let first = total - total % TILE_WIDTH;
            let hashes = (first..total)
                .map(|i| Ok(subtree_root(&self.full_tile(level - 1, i)?)))
                .collect::<Result<Vec<_>>>()?;
            out.push(hashes);
            level += 1;
        }
        Ok(out)
    }

    /// The partial hash tiles from `tiles/partial`, if that file describes
    /// this log length and, with the open bundle's leaves, gives the root of
    /// the latest checkpoint (which must be at this length). `None` (and a
    /// warning when the file is damaged or stale) means: recompute them.
    fn stored_partial_tiles(&self, view: &View) -> Result<Option<Vec<Vec<Hash>>>> {
        let path = self.path(PARTIAL_FILE);
        let len = self
            .partial
            .metadata()
            .map_err(|e| LogError::io(&path, e))?
            .len();
        if len == 0 || len > 64 * 1024 {
            return Ok(None);
        }
        let bytes = read_at(&self.partial, 0, len as usize, &path)?;
        let Some(upper) = decode_partial(&bytes, view.len / TILE_WIDTH) else {
            tracing::warn!(
                "tile store: tiles/partial is damaged or stale; recomputing the partial tiles"
            );
            return Ok(None);
        };
        let Some((size, note)) = view.latest.as_ref() else {
            return Ok(None);
        };
        if *size != view.len || view.len == 0 {
            return Ok(None);
        }
        let leaves = self.open_bundle_leaves(view)?;
        let mut tiles = Vec::with_capacity(upper.len() + 1);
        tiles.push(leaves);
        tiles.extend(upper);
        let border = Border {
            len: view.len,
            tiles: &tiles,
        };
        let signed_root = note
            .rfind("\n\n")
            .and_then(|i| crate::checkpoint::Checkpoint::parse_body(&note[..=i]).ok())
            .map(|c| c.root);
        match (merkle::root_at(&border, view.len), signed_root) {
            (Ok(root), Some(signed)) if root == signed => Ok(Some(tiles)),
            _ => {
                tracing::warn!(
                    "tile store: tiles/partial does not give the latest checkpoint's root; recomputing the partial tiles"
                );
                Ok(None)
            }
        }
    }

    /// Rewrites `tiles/partial` (derived: no sync; checked at open).
    fn write_partial(&self, len: u64, tiles: &[Vec<Hash>]) -> Result<()> {
        let path = self.path(PARTIAL_FILE);
        let bytes = encode_partial(len / TILE_WIDTH, tiles.get(1..).unwrap_or_default());
        self.partial
            .write_all_at(&bytes, 0)
            .and_then(|()| self.partial.set_len(bytes.len() as u64))
            .map_err(|e| LogError::io(&path, e))
    }

    /// The record that starts at `offset` of the commit log.
    fn record_at(&self, offset: u64) -> Result<CommitRecord> {
        record_at(&self.commits, &self.commits_path, offset)
    }

    /// The commit record that holds byte `offset` of the commit log, read
    /// and checked from the start (a damaged record on the way is the
    /// error, with its location). Only for a lookup that found what looks
    /// like damage: it reads the whole commit log.
    fn record_holding(&self, offset: u64, end: u64) -> Result<CommitRecord> {
        let mut at = 0;
        while at < end {
            let rec = self.record_at(at)?;
            if rec.end > offset {
                return Ok(rec);
            }
            at = rec.end;
        }
        Err(LogError::corrupt(
            format!("tiles/commits, byte {offset}"),
            "the statement index points past the commit log",
        ))
    }

    /// [`Store::check_structures`]: every commit record up to the logical
    /// end read and checked (checksum, order, the sequence numbers its
    /// statements name), the statement digests they record by sequence
    /// number, and every stored hash tile above level 0 compared with its
    /// recomputation from the level below (level 0 is compared with the
    /// events by the verifier, through [`Store::leaf_hashes`]).
    fn structure_report(
        &self,
        keep_going: &dyn Fn() -> bool,
    ) -> Result<crate::store::StructureReport> {
        let (len, commits_end) = {
            let view = self.read_view();
            (view.len, view.commits_end)
        };
        let mut report = crate::store::StructureReport {
            statements: vec![None; usize::try_from(len).unwrap_or(0)],
            damage: Vec::new(),
        };
        if let Some(why) = &self.salvaged {
            report.damage.push(("tiles/commits".into(), why.clone()));
        }
        let commits = "tiles/commits";
        let (mut at, mut prev_len) = (0u64, 0u64);
        while at < commits_end {
            let rec = match self.record_at(at) {
                Ok(rec) => rec,
                Err(LogError::Corrupt { location, detail }) => {
                    // Without a valid record here the next boundary is
                    // unknown: the records after it are not read.
                    report.damage.push((
                        location,
                        format!("{detail}; the commit log after it is not checked"),
                    ));
                    break;
                }
                Err(e) => return Err(e),
            };
            let whole = format!("{commits}, byte {}", rec.start);
            if rec.log_len < prev_len || rec.log_len > len || rec.end > commits_end {
                report.damage.push((
                    whole.clone(),
                    format!(
                        "a commit record claims a log length of {} after {prev_len} (the log holds {len})",
                        rec.log_len
                    ),
                ));
            }
            let mut next = prev_len;
            for (d, seq) in &rec.statements {
                if *seq < next || *seq >= rec.log_len {
                    report.damage.push((
                        whole.clone(),
                        format!(
                            "a commit record names seq {seq} outside the events it committed ({prev_len}..{})",
                            rec.log_len
                        ),
                    ));
                    continue;
                }
                next = seq + 1;
                if let Some(slot) = usize::try_from(*seq)
                    .ok()
                    .and_then(|i| report.statements.get_mut(i))
                {
                    *slot = Some(*d);
                }
            }
            prev_len = prev_len.max(rec.log_len);
            at = rec.end;
            if !keep_going() {
                return Ok(report);
            }
        }
        // Full entry bundles: nothing after their 256 entries.
        for index in 0..len / TILE_WIDTH {
            if !keep_going() {
                return Ok(report);
            }
            if let Some((end, excess)) = self.full_bundle_excess(index)? {
                report.damage.push((
                    format!("tiles/{}, byte {end}", bundle_path(index)),
                    format!(
                        "{excess} bytes after the bundle's 256 entries: not part of any event \
                         (the entries are intact); the server's background check cuts them off \
                         when the entries give the anchored root"
                    ),
                ));
            }
        }
        // Hash tiles above level 0, each against the level below.
        let mut level = 1u8;
        while let Some(full) = len
            .checked_shr(8 * (u32::from(level) + 1))
            .filter(|n| *n > 0)
        {
            for index in 0..full {
                if !keep_going() {
                    return Ok(report);
                }
                let rel = hash_tile_path(level, index);
                let stored = match fs::read(self.path(&rel)) {
                    Ok(b) => b,
                    // A missing tile is recomputed when it is needed.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(LogError::io(self.path(&rel), e)),
                };
                let Some(stored) = parse_tile(&stored).filter(|h| h.len() as u64 == TILE_WIDTH)
                else {
                    report.damage.push((
                        format!("tiles/{rel}"),
                        "a full hash tile that is not 256 hashes".into(),
                    ));
                    continue;
                };
                let computed = match self.compute_tile(level, index) {
                    Ok(c) => c,
                    Err(LogError::Corrupt { location, detail }) => {
                        report.damage.push((location, detail));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if let Some(k) = stored.iter().zip(&computed).position(|(a, b)| a != b) {
                    report.damage.push((
                        format!("tiles/{rel}, byte {}", 32 * k),
                        format!(
                            "hash {k} of this level-{level} hash tile differs from the root of \
                             tiles/{} below it (one of the two derived files is damaged; the \
                             server's background check, or any proof through them, rewrites \
                             them from the events when those give the anchored root)",
                            hash_tile_path(level - 1, index * TILE_WIDTH + k as u64)
                        ),
                    ));
                }
            }
            level += 1;
        }
        Ok(report)
    }

    /// Events `from..to` of one full bundle that does not read whole: the
    /// entries its file holds intact before the first damage (a torn
    /// entry, bytes that are no entry), each event read alone (a large
    /// event whose file is damaged is named by itself); every other event
    /// of the range is named with the damage.
    fn salvage_bundle(&self, from: u64, to: u64) -> Result<crate::store::SalvagedRange> {
        let index = from / TILE_WIDTH;
        let location = format!("tiles/{}", bundle_path(index));
        let mut entries: BTreeMap<u64, Entry> = BTreeMap::new();
        let mut damage = "the entry bundle is missing".to_string();
        if let Some(bytes) = self.read_bundle_file(index)? {
            let salvaged = self.salvage_entries(index, &bytes);
            damage = salvaged.damage;
            entries = salvaged.entries;
        }
        let mut events = Vec::new();
        let mut unreadable = Vec::new();
        for seq in from..to {
            let Some(entry) = entries.get(&seq) else {
                unreadable.push((seq, location.clone(), damage.clone()));
                continue;
            };
            match self.entry_bytes(seq, entry) {
                Ok(bytes) => events.push((seq, bytes)),
                Err(LogError::Corrupt { location, detail }) => {
                    unreadable.push((seq, location, detail));
                }
                Err(e) => return Err(e),
            }
        }
        Ok((events, unreadable))
    }

    /// The bytes of large event `seq` read from its own file,
    /// `tiles/large/<seq>`, whatever its stand-in entry says (damaged or
    /// lost): only when they are a large event's and decode as event `seq`.
    /// A salvage then decides (kept leaf, chain, signed root) whether they
    /// are the event the ledger signed; nothing here vouches for them, and
    /// the damaged stand-in stays damage for every check.
    fn large_event_by_name(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        let path = self.large_path(seq);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LogError::io(path, e)),
        };
        let is_event = bytes.len() > MAX_INLINE_ENTRY
            && crate::event::Event::decode(&bytes).is_ok_and(|e| e.seq == seq);
        Ok(is_event.then_some(bytes))
    }

    /// The entries of bundle `index` that its damaged file `bytes` still
    /// yields, by sequence number: those before the first damage and, when
    /// its full level-0 tile file is there (read as it is: nothing
    /// recomputed), only those whose bytes hash to the leaf it kept (a
    /// garbled length that still frames whole entries gives entries that
    /// are not the events: the first of them ends the run), then those
    /// found again after the damage by [`resync_entries`]. With why the
    /// run ended.
    fn salvage_entries(&self, index: u64, bytes: &[u8]) -> SalvagedEntries {
        let (raw, _, stopped) = bundle_prefix(bytes, TILE_WIDTH);
        let mut parsed: Vec<Entry> = raw.iter().map_while(|e| read_entry(e)).collect();
        let mut damage = match &stopped {
            _ if parsed.len() < raw.len() => format!(
                "entry {} is neither an event nor a large event's stand-in",
                parsed.len()
            ),
            Some(why) => why.clone(),
            None => format!("the bundle ends after {} entries", parsed.len()),
        };
        let leaves = fs::read(self.path(&hash_tile_path(0, index)))
            .ok()
            .and_then(|b| parse_tile(&b))
            .filter(|h| h.len() as u64 == TILE_WIDTH);
        let first = index * TILE_WIDTH;
        if let Some(leaves) = &leaves {
            let matching = parsed
                .iter()
                .zip(leaves)
                .take_while(|(entry, leaf)| entry.claimed_leaf() == **leaf)
                .count();
            if matching < parsed.len() {
                damage = format!(
                    "entry {matching} does not hash to the leaf tiles/{} kept (a garbled \
                     length or altered bytes)",
                    hash_tile_path(0, index)
                );
                parsed.truncate(matching);
            }
        }
        if leaves.is_none() {
            // No kept leaves (the open bundle has no level-0 tile): the
            // chain checks each entry instead.
            let chained = chained_prefix(&parsed, first);
            if chained < parsed.len() {
                damage = format!(
                    "entry {chained} is not the event the chain expects there (a garbled \
                     length or altered bytes)"
                );
                parsed.truncate(chained);
            }
        }
        let intact = parsed.len();
        let mut entries: BTreeMap<u64, Entry> = (first..).zip(parsed).collect();
        if (intact as u64) < TILE_WIDTH {
            // Look from the end of the last intact entry: by the kept
            // leaves, or by the chain when there are none.
            let (_, at, _) = bundle_prefix(bytes, intact as u64);
            let found = match &leaves {
                Some(leaves) => resync_entries(bytes, at, first, intact, leaves),
                None => resync_entries_by_chain(bytes, at, first, intact),
            };
            for (i, e) in found {
                if let Some(entry) = read_entry(e) {
                    entries.insert(first + i as u64, entry);
                }
            }
        }
        SalvagedEntries { entries, damage }
    }

    /// Where full bundle `index`'s 256 entries end and how many bytes
    /// follow them in its file (`None`: none follow, or the file is missing
    /// or does not hold 256 intact entries, which the event reads report).
    fn full_bundle_excess(&self, index: u64) -> Result<Option<(usize, usize)>> {
        let path = self.path(&bundle_path(index));
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LogError::io(path, e)),
        };
        Ok(match parse_full_bundle(&bytes) {
            Ok((_, excess)) if excess > 0 => Some((bytes.len() - excess, excess)),
            _ => None,
        })
    }

    /// [`Store::rebuild_derived_tree`]: every full hash tile recomputed
    /// from the entry bundles (level 0) and the level below (levels 1 and
    /// up), and, only if the bundles give `root` at `size`, every stored
    /// tile that differs (or is missing, or is not 256 hashes) written
    /// again, the tile cache dropped and the partial tiles recomputed.
    /// Reads every bundle: it runs only when the open check found the
    /// stored tree disagreeing with the event bytes.
    fn rebuild_hash_tiles(&self, size: u64, root: &Hash) -> Result<Option<Vec<String>>> {
        let mut guard = self.lock_writer()?;
        let w = &mut *guard;
        self.settle(w, true)?;
        let len = w.view.len;
        if size > len {
            return Ok(None);
        }
        let mut frontier = merkle::Frontier::new();
        let mut root_at_size = (size == 0).then(merkle::empty_root);
        // Full tiles of the current level, recomputed: (index, hashes).
        let mut level_tiles: Vec<(u64, Vec<Hash>)> = Vec::new();
        for index in 0..len / TILE_WIDTH {
            let entries = match self.full_bundle(index) {
                Ok(e) => e,
                // The events themselves are damaged: not a derived file's
                // fault, and nothing is rewritten from them.
                Err(LogError::Corrupt { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            let mut leaves = Vec::with_capacity(TILE_WIDTH as usize);
            for (i, entry) in entries.iter().enumerate() {
                let leaf = match self.entry_leaf(index * TILE_WIDTH + i as u64, entry) {
                    Ok(l) => l,
                    Err(LogError::Corrupt { .. }) => return Ok(None),
                    Err(e) => return Err(e),
                };
                frontier.push(leaf);
                if frontier.size() == size {
                    root_at_size = Some(frontier.root());
                }
                leaves.push(leaf);
            }
            level_tiles.push((index, leaves));
        }
        for leaf in self.open_bundle_leaves(&w.view)? {
            frontier.push(leaf);
            if frontier.size() == size {
                root_at_size = Some(frontier.root());
            }
        }
        if root_at_size.as_ref() != Some(root) {
            return Ok(None);
        }
        // The bytes give the signed root: every stored tile that differs
        // from them is a damaged derived copy.
        let mut rewritten = Vec::new();
        // And bytes after a full bundle's 256 entries are part of no event
        // (the entries just gave the root without them): cut off.
        for index in 0..len / TILE_WIDTH {
            // (Not in a private copy: its full bundles are links to the
            // evidence, and the check that opened it only reports.)
            if self.in_private_copy {
                break;
            }
            if let Some((end, excess)) = self.full_bundle_excess(index)? {
                let rel = bundle_path(index);
                let path = self.path(&rel);
                let file = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| LogError::io(&path, e))?;
                file.set_len(end as u64)
                    .and_then(|()| file.sync_all())
                    .map_err(|e| LogError::io(&path, e))?;
                rewritten.push(format!(
                    "tiles/{rel} (the {excess} bytes after its 256 entries, from byte {end})"
                ));
            }
        }
        let mut level = 0u8;
        while !level_tiles.is_empty() {
            for (index, hashes) in &level_tiles {
                // A tile a recent commit queued is the derived thread's to
                // write (from memory); writing it here too would race it.
                if self.derived.queued_tile(level, *index).is_some() {
                    continue;
                }
                let rel = hash_tile_path(level, *index);
                let path = self.path(&rel);
                let stored = match fs::read(&path) {
                    Ok(b) => parse_tile(&b),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(LogError::io(path, e)),
                };
                if stored.as_ref() != Some(hashes) {
                    self.write_tile(level, *index, hashes)?;
                    rewritten.push(format!("tiles/{rel}"));
                }
            }
            let roots: Vec<Hash> = level_tiles.iter().map(|(_, h)| subtree_root(h)).collect();
            level_tiles = roots
                .chunks_exact(TILE_WIDTH as usize)
                .enumerate()
                .map(|(i, c)| (i as u64, c.to_vec()))
                .collect();
            level += 1;
        }
        self.tile_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let tiles = self.partial_tiles(&w.view)?;
        if tiles != w.view.partial_tiles {
            rewritten.push(format!("tiles/{PARTIAL_FILE}"));
        }
        self.write_partial(len, &tiles)?;
        w.view.partial_tiles = tiles;
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = w.view.clone();
        if !rewritten.is_empty() {
            tracing::warn!(
                "tile store: {} differed from the event bytes, which give the signed root; rewritten from them",
                rewritten.join(", ")
            );
        }
        Ok(Some(rewritten))
    }

    /// The `(digest, seq)` pair at `offset`, if it lies before `end`.
    fn statement_at(&self, offset: u64, end: u64) -> Result<Option<(Hash, u64)>> {
        statement_at(&self.commits, &self.commits_path, offset, end)
    }

    /// The checkpoint of the record at `offset`, if it lies before `end`.
    fn checkpoint_at(&self, offset: u64, end: u64) -> Result<Option<(u64, String)>> {
        checkpoint_at(&self.commits, &self.commits_path, offset, end)
    }

    fn read_view(&self) -> std::sync::RwLockReadGuard<'_, View> {
        self.view.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `bytes` to the open bundle's `.part` at the writer's offset,
    /// without syncing it (the caller does, before the commit returns).
    fn append_part(&self, w: &mut Writer, bundle: u64, bytes: &[u8]) -> Result<()> {
        if let Some((b, f)) = &w.part_file
            && *b == bundle
            && !w.cut_pending
        {
            let path = self.part_path(bundle);
            f.write_all_at(bytes, w.part_bytes)
                .map_err(|e| LogError::io(&path, e))?;
            w.part_bytes += bytes.len() as u64;
            return Ok(());
        }
        let path = self.part_path(bundle);
        let full = self.path(&bundle_path(bundle));
        if w.part_bytes == 0 && full.exists() {
            // The log holds exactly `bundle · 256` events: a full file of
            // this bundle is from a commit that never returned.
            fs::remove_file(&full).map_err(|e| LogError::io(&full, e))?;
        } else if w.cut_pending && full.exists() {
            // A commit that never returned filled this bundle and renamed
            // it: it is the open bundle again.
            fs::rename(&full, &path).map_err(|e| LogError::io(&path, e))?;
            if let Some(dir) = path.parent() {
                sync_dir(dir)?;
            }
        }
        // A new bundle's file, made empty and its name durable by the
        // preparing thread while the bundle before filled.
        let prepared = match &mut w.preparer {
            Some(p) if w.part_bytes == 0 && !w.cut_pending => p.take(bundle),
            _ => None,
        };
        let f = match prepared {
            Some(f) => f,
            None => {
                let f = open_rw(&path)?;
                if w.cut_pending || w.part_bytes == 0 {
                    // Bytes past the logical end are from a commit that
                    // never returned (a new bundle's file may hold some too).
                    f.set_len(w.part_bytes)
                        .map_err(|e| LogError::io(&path, e))?;
                }
                if w.part_bytes == 0 {
                    // A new file: its name must be durable before its bytes
                    // count.
                    if let Some(dir) = path.parent() {
                        sync_dir(dir)?;
                    }
                }
                f
            }
        };
        f.write_all_at(bytes, w.part_bytes)
            .map_err(|e| LogError::io(&path, e))?;
        w.part_bytes += bytes.len() as u64;
        w.part_file = Some((bundle, Arc::new(f)));
        // The next bundle's file, ahead of need.
        if w.preparer.is_none() {
            w.preparer = Some(BundlePreparer::start()?);
        }
        if let Some(p) = &mut w.preparer {
            p.ask(bundle + 1, self.part_path(bundle + 1));
        }
        Ok(())
    }

    /// The writer, unless an earlier commit failed part-way (its in-memory
    /// state may be ahead of the files: the log above fails stop anyway).
    fn lock_writer(&self) -> Result<std::sync::MutexGuard<'_, Writer>> {
        if self.salvaged.is_some() {
            return Err(LogError::FailedPrecondition(
                "the tile store was opened to salvage a data directory past its commit log: nothing is written to it".into(),
            ));
        }
        let guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.broken {
            return Err(LogError::FailedPrecondition(
                "an earlier commit to the tile store failed; reopen the ledger".into(),
            ));
        }
        Ok(guard)
    }

    /// Cuts bytes past the commit log's logical end (a commit that never
    /// returned) before its first write after the open.
    fn cut_commit_log(&self, w: &mut Writer) -> Result<()> {
        if w.commits_cut_pending {
            self.commits
                .set_len(w.view.commits_end)
                .map_err(|e| LogError::io(&self.commits_path, e))?;
            w.commits_cut_pending = false;
        }
        Ok(())
    }

    /// Takes the result of the round of background fdatasyncs, if one was
    /// begun: waiting for it with `block`, else only when it has finished.
    /// When it has, the store is durable up to what it covers. A failure
    /// fails this call (and so the commit that waits: fail-stop); the
    /// commits the round covers are safe in the anchor ring's redos either
    /// way.
    fn settle(&self, w: &mut Writer, block: bool) -> Result<()> {
        let Writer {
            in_flight,
            commits_syncer,
            bundle_syncer,
            durable_len,
            ..
        } = w;
        let Some(round) = in_flight.as_ref() else {
            return Ok(());
        };
        let take = |syncer: &mut Option<BundleSyncer>| match syncer {
            Some(s) if block => Some(s.wait()),
            Some(s) => s.finished(),
            None => Some(Ok(())),
        };
        let commits = take(commits_syncer);
        let bundles = if round.bundles {
            take(bundle_syncer)
        } else {
            Some(Ok(()))
        };
        match (commits, bundles) {
            (Some(Err(e)), _) | (_, Some(Err(e))) => Err(e),
            (Some(Ok(())), Some(Ok(()))) => {
                *durable_len = (*durable_len).max(round.covers);
                *in_flight = None;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Begins a round of background fdatasyncs of the commit log and of the
    /// bundles written since the last one, covering every commit written
    /// so far (`covers` events).
    fn begin_round(&self, w: &mut Writer, covers: u64) -> Result<()> {
        let sync_delay = w.sync_delay;
        let steps = self.bundle_steps(w);
        sync_thread(&mut w.commits_syncer, sync_delay)?.begin(vec![self.commits_step()])?;
        w.in_flight = Some(InFlight {
            bundles: false,
            covers,
        });
        if !steps.is_empty() {
            sync_thread(&mut w.bundle_syncer, sync_delay)?.begin(steps)?;
            w.in_flight = Some(InFlight {
                bundles: true,
                covers,
            });
        }
        Ok(())
    }

    /// The commit log's fdatasync.
    fn commits_step(&self) -> SyncStep {
        SyncStep::Data(self.commits_path.clone(), Arc::clone(&self.commits))
    }

    /// The sync steps of the bundles written since their last sync: the
    /// fdatasync of each bundle filled since and of the open one, then the
    /// fsync of the filled ones' directories (their renames).
    fn bundle_steps(&self, w: &mut Writer) -> Vec<SyncStep> {
        let mut steps = Vec::new();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for (path, file) in w.filled.drain(..) {
            if let Some(dir) = path.parent()
                && !dirs.iter().any(|d| d == dir)
            {
                dirs.push(dir.to_path_buf());
            }
            steps.push(SyncStep::Data(path, file));
        }
        if let Some((bundle, file)) = &w.part_file {
            steps.push(SyncStep::Data(self.part_path(*bundle), Arc::clone(file)));
        }
        steps.extend(dirs.into_iter().map(SyncStep::Dir));
        steps
    }

    /// Makes the store durable up to the size the anchor slot written next
    /// names, since the redo it holds is lost with the overwrite: takes the
    /// running round, and when that is not enough begins one covering this
    /// commit (`next` events, all written) and waits for it. A round
    /// normally finished long before the ring comes round.
    fn make_room_for_slot(&self, w: &mut Writer, next: u64) -> Result<()> {
        let needed = self.anchor.overwritten_by_next();
        if w.durable_len >= needed {
            return Ok(());
        }
        self.settle(w, true)?;
        if w.durable_len >= needed {
            return Ok(());
        }
        self.begin_round(w, next)?;
        self.settle(w, true)
    }
}

/// The sync thread in `slot`, started (with `delay`) if it is not yet.
fn sync_thread(
    slot: &mut Option<BundleSyncer>,
    delay: std::time::Duration,
) -> Result<&mut BundleSyncer> {
    match slot {
        Some(s) => Ok(s),
        none => Ok(none.insert(BundleSyncer::start(delay)?)),
    }
}

impl TileStore {
    /// [`Store::commit`], and with `anchor` [`Store::commit_anchored`]: the
    /// anchor carries the batch when the two fit one slot (a few small
    /// events: one client's appends). Returns whether it anchored. A failed
    /// commit leaves the writer broken (the log above fails stop).
    fn commit_with(&self, batch: &CommitBatch, anchor: bool) -> Result<bool> {
        let mut guard = self.lock_writer()?;
        if let Some(e) = self.derived.failure() {
            guard.broken = true;
            return Err(e);
        }
        let anchored_note = match &batch.checkpoint {
            Some((size, note))
                if anchor
                    && batch.events.first().map(|(seq, _)| *seq) == Some(guard.view.len)
                    && guard.view.len.checked_add(batch.events.len() as u64) == Some(*size)
                    && self.anchor.fits_redo_of(note, batch) =>
            {
                Some(note.as_str())
            }
            _ => None,
        };
        let result = self.commit_locked(&mut guard, batch, anchored_note);
        if result.is_err() {
            guard.broken = true;
        }
        result.map(|()| anchored_note.is_some())
    }

    /// The anchor slot carrying `note` and `batch`'s redo, with the
    /// store's durable length as it is now.
    fn redo_slot(&self, w: &Writer, note: &str, batch: &CommitBatch) -> Result<Vec<u8>> {
        self.anchor
            .slot_with_redo(note, &AnchorRedo::of(batch, w.durable_len))
            .ok_or_else(|| {
                LogError::FailedPrecondition("a commit's redo does not fit an anchor slot".into())
            })
    }

    /// Commits `batch`; with `anchor_slot` (the checkpoint note of an
    /// anchor slot to carry this batch's redo: it fits) also writes the
    /// anchor, synced beside the bundle and the commit log, or alone.
    fn commit_locked(
        &self,
        w: &mut Writer,
        batch: &CommitBatch,
        anchor_slot: Option<&str>,
    ) -> Result<()> {
        self.run_deferred(w)?;
        let mut next = w.view.len;
        for (seq, _) in &batch.events {
            if *seq != next {
                return Err(LogError::FailedPrecondition(format!(
                    "commit of event {seq} to a log of {next} events"
                )));
            }
            next += 1;
        }
        // Leaf hashes must come with the events, in order.
        let leaves: Vec<&(u8, u64, Hash)> = batch.nodes.iter().filter(|n| n.0 == 0).collect();
        if leaves.len() != batch.events.len()
            || leaves
                .iter()
                .zip(&batch.events)
                .any(|(n, (seq, _))| n.1 != *seq)
        {
            return Err(LogError::FailedPrecondition(
                "a commit's Merkle leaves do not match its events".into(),
            ));
        }
        // Take the result of the background round if it has finished
        // (commits acknowledged by their anchor slots alone): the store is
        // then durable up to what it covered.
        self.settle(w, false)?;
        self.cut_commit_log(w)?;
        // Events into bundles.
        let mut large_written = false;
        let mut buf = Vec::new();
        for (seq, bytes) in &batch.events {
            let bundle = seq / TILE_WIDTH;
            if bytes.len() > MAX_INLINE_ENTRY || bytes.is_empty() {
                let path = self.large_path(*seq);
                if !large_written {
                    create_dir_durably(&self.root.join("large"))?;
                }
                fs::write(&path, bytes)
                    .and_then(|()| File::open(&path)?.sync_all())
                    .map_err(|e| LogError::io(&path, e))?;
                large_written = true;
                let stand_in = oversized_entry(bytes);
                buf.extend_from_slice(&(OVERSIZED_ENTRY_LEN as u16).to_be_bytes());
                buf.extend_from_slice(&stand_in);
                // Invariant: `stand_in` is what `oversized_entry` made.
                w.view
                    .open_bundle
                    .push(read_entry(&stand_in).expect("a stand-in entry"));
            } else {
                buf.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
                buf.extend_from_slice(bytes);
                w.view
                    .open_bundle
                    .push(Entry::Inline(Arc::from(bytes.as_slice())));
            }
            if seq % TILE_WIDTH == 0 {
                // A new bundle's file: its name must be durable too.
                if let Some(dir) = self.part_path(bundle).parent() {
                    create_dir_durably(dir)?;
                }
            }
            if (seq + 1) % TILE_WIDTH == 0 {
                if large_written {
                    sync_dir(&self.root.join("large"))?;
                }
                self.append_part(w, bundle, &buf)?;
                buf.clear();
                // Renamed now, synced (the file, then its directory) with
                // the next sync of the open bundle: a full name whose bytes
                // did not all reach the disk is the open bundle again at
                // the next open (`append_part`), and a rename that did not
                // is finished there (`TileStore::sync_open_files`).
                let full = self.path(&bundle_path(bundle));
                fs::rename(self.part_path(bundle), &full).map_err(|e| LogError::io(&full, e))?;
                if let Some((_, file)) = w.part_file.take() {
                    w.filled.push((full, file));
                }
                w.part_bytes = 0;
                w.cut_pending = false;
                w.view.open_bundle.clear();
            }
        }
        if !buf.is_empty() {
            // What is left belongs to the last event's bundle (a bundle
            // that filled up was written above).
            self.append_part(w, (next - 1) / TILE_WIDTH, &buf)?;
        }
        if large_written {
            sync_dir(&self.root.join("large"))?;
        }
        // Hash tiles: hashes at tree levels 8·L; a full tile is written.
        let mut upper_changed = false;
        for &(level, index, hash) in &batch.nodes {
            if level % 8 != 0 {
                continue;
            }
            upper_changed |= level > 0;
            let l = usize::from(level / 8);
            while w.view.partial_tiles.len() <= l {
                w.view.partial_tiles.push(Vec::new());
            }
            w.view.partial_tiles[l].push(hash);
            if w.view.partial_tiles[l].len() as u64 == TILE_WIDTH {
                let tile = index / TILE_WIDTH;
                let hashes = std::mem::take(&mut w.view.partial_tiles[l]);
                self.derived.queue_tile(level / 8, tile, hashes);
            }
        }
        if upper_changed {
            // Derived: checked at open against the checkpoint's root.
            self.write_partial(next, &w.view.partial_tiles)?;
        }
        // The commit record: what makes the commit atomic.
        let record = CommitRecord::encode(next, &batch.statements, batch.checkpoint.as_ref());
        let start = w.view.commits_end;
        self.commits
            .write_all_at(&record, start)
            .map_err(|e| LogError::io(&self.commits_path, e))?;
        let size = batch.checkpoint.as_ref().map(|c| c.0);
        match anchor_slot {
            Some(note) => {
                // Small commits (one client's appends, or a group commit of
                // up to a few hundred small events): the anchor slot,
                // carrying the events, is the one fdatasync the commit
                // waits for. The bundles' and the commit log's run in
                // background rounds, each covering every commit written
                // when it began (a bundle this commit filled included),
                // and overlap the next commits instead of this one. The
                // slot overwritten is the oldest of the ring, whose commit
                // the store must hold durably first
                // ([`TileStore::make_room_for_slot`]). An open after a stop
                // redoes from the ring whatever the store lacks
                // (docs/FORMAT.md §9).
                self.make_room_for_slot(w, next)?;
                let slot = self.redo_slot(w, note, batch)?;
                self.anchor.write_slot(size, &slot)?;
                if w.in_flight.is_none() {
                    // Begun once the callers are answered.
                    w.deferred.round = Some(next);
                }
            }
            None => {
                // The bundles and the commit log are synced side by side: a
                // record made durable before its events is a commit that
                // never returned, which the open recognises (its events are
                // not all present). The anchor acknowledges, written after
                // this returns. The bundle syncer is free first (a running
                // round is taken).
                self.settle(w, true)?;
                let sync_delay = w.sync_delay;
                let steps = self.bundle_steps(w);
                let bundles = !steps.is_empty();
                if bundles {
                    sync_thread(&mut w.bundle_syncer, sync_delay)?.begin(steps)?;
                }
                let commits = self.commits_step().run();
                let bundles = match &mut w.bundle_syncer {
                    Some(syncer) if bundles => syncer.wait(),
                    _ => Ok(()),
                };
                commits?;
                bundles?;
                w.durable_len = next;
            }
        }
        w.cut_pending = false;
        let end = start + record.len() as u64;
        let rec = CommitRecord {
            start,
            end,
            log_len: next,
            statements: batch.statements.clone(),
            checkpoint: batch.checkpoint.clone(),
        };
        w.view.len = next;
        w.view.commits_end = end;
        if let Some(c) = &batch.checkpoint
            && w.view.latest.as_ref().is_none_or(|l| c.0 >= l.0)
        {
            w.view.latest = Some(c.clone());
        }
        // Publish what is durable, then queue it for the indexes (derived,
        // inserted and synced by the derived-data thread; findable now).
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = w.view.clone();
        self.derived.queue_record_quietly(rec);
        w.deferred.wake_derived = true;
        Ok(())
    }

    /// Does what the last commit deferred ([`Deferred`]): at
    /// [`Store::after_commit`], or at the start of the next commit (or the
    /// close) if nobody called it.
    fn run_deferred(&self, w: &mut Writer) -> Result<()> {
        if std::mem::take(&mut w.deferred.wake_derived) {
            self.derived.wake();
        }
        if let Some(covers) = w.deferred.round.take()
            && w.in_flight.is_none()
        {
            self.begin_round(w, covers)?;
        }
        Ok(())
    }
}

/// Brings a derived index up to `commits_end` from the commit log (the
/// records past its watermark); rebuilds it from the whole commit log when
/// it claims more than the log holds, or when one of its pages is damaged
/// (damage in the commit log itself is returned).
fn catch_up_index(
    table: &mut DiskTable,
    commits_end: u64,
    statements: bool,
    commits: &File,
    path: &Path,
) -> Result<()> {
    if table.watermark > commits_end {
        tracing::warn!(
            "tile store: index {} is ahead of the commit log; rebuilding it",
            table.path.display()
        );
        *table = DiskTable::create(&table.path.clone(), DiskTable::INITIAL, true)?;
    }
    let mut at = table.watermark;
    if at == commits_end {
        // Caught up already (a clean close): nothing to make durable.
        return Ok(());
    }
    while at < commits_end {
        let rec = record_at(commits, path, at)?;
        match index_record(table, &rec, statements, commits, path) {
            Ok(()) => at = rec.end,
            Err(LogError::Corrupt { location, detail })
                if location.starts_with(&table.path.display().to_string()) =>
            {
                tracing::warn!("tile store: {location}: {detail}; rebuilding the index");
                *table = DiskTable::create(&table.path.clone(), DiskTable::INITIAL, true)?;
                at = 0;
            }
            Err(e) => return Err(e),
        }
    }
    table.sync(commits_end)
}

/// Inserts a commit record's statements (`statements`) or its checkpoint
/// into `table`, unless a checked entry is there already.
fn index_record(
    table: &mut DiskTable,
    rec: &CommitRecord,
    statements: bool,
    commits: &File,
    path: &Path,
) -> Result<()> {
    if statements {
        for (i, (d, _)) in rec.statements.iter().enumerate() {
            let offset = rec.start + CommitRecord::statement_offset(i);
            table.insert(digest_key(d), offset, &mut |v| {
                Ok(statement_at(commits, path, v, rec.end)?.is_some_and(|(sd, _)| sd == *d))
            })?;
        }
    } else if let Some((size, _)) = rec.checkpoint {
        table.insert(mix64(size), rec.start, &mut |v| {
            Ok(checkpoint_at(commits, path, v, rec.end)?.is_some_and(|(s, _)| s == size))
        })?;
    }
    Ok(())
}

/// Writes full hash tile `(level, index)` under the tile root `root`
/// (atomically; its directories durably).
fn write_tile_file(root: &Path, level: u8, index: u64, hashes: &[Hash]) -> Result<()> {
    let path = root.join(hash_tile_path(level, index));
    if let Some(dir) = path.parent() {
        create_dir_durably(dir)?;
    }
    write_atomically(&path, &hashes.concat())
}

impl NodeSource for TileStore {
    fn node(&self, level: u8, index: u64) -> std::result::Result<Hash, MerkleError> {
        let view = self.read_view();
        if let Some(hash) = partial_node(view.len, &view.partial_tiles, level, index)? {
            return Ok(hash);
        }
        drop(view);
        let width = 1usize << (level % 8);
        // partial_node checked that this neither overflows nor passes the end.
        let first = index * width as u64;
        let pos = (first % TILE_WIDTH) as usize;
        let hashes = self
            .full_tile(level / 8, first / TILE_WIDTH)
            .map_err(|_| MerkleError::MissingNode { level, index })?;
        Ok(subtree_root(&hashes[pos..pos + width]))
    }
}

impl Store for TileStore {
    fn repaired_at_open(&self) -> Vec<String> {
        self.repaired_at_open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn commit(&self, batch: &CommitBatch) -> Result<()> {
        self.commit_with(batch, false).map(|_| ())
    }

    fn commit_anchored(&self, batch: &CommitBatch) -> Result<bool> {
        self.commit_with(batch, true)
    }

    fn after_commit(&self) -> Result<()> {
        let mut guard = self.lock_writer()?;
        let result = self.run_deferred(&mut guard);
        if result.is_err() {
            guard.broken = true;
        }
        result
    }

    fn len(&self) -> Result<u64> {
        Ok(self.read_view().len)
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        Ok(self
            .event_range(seq, seq.saturating_add(1))?
            .pop()
            .map(|(_, b)| b))
    }

    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        // What is needed of the open bundle, copied under the read lock.
        let (to, open_start, open) = {
            let view = self.read_view();
            let to = to.min(view.len);
            let open_start = view.len - view.open_bundle.len() as u64;
            let lo = from.clamp(open_start, to.max(open_start));
            let hi = to.max(open_start);
            let open: Vec<Entry> =
                view.open_bundle[(lo - open_start) as usize..(hi - open_start) as usize].to_vec();
            (to, lo, open)
        };
        let mut out = Vec::with_capacity(to.saturating_sub(from) as usize);
        let mut seq = from;
        while seq < to {
            if seq >= open_start {
                let e = &open[(seq - open_start) as usize];
                out.push((seq, self.entry_bytes(seq, e)?));
                seq += 1;
                continue;
            }
            let bundle = seq / TILE_WIDTH;
            let entries = self.full_bundle(bundle)?;
            let end = to.min((bundle + 1) * TILE_WIDTH);
            for s in seq..end {
                out.push((s, self.entry_bytes(s, &entries[(s % TILE_WIDTH) as usize])?));
            }
            seq = end;
        }
        Ok(out)
    }

    fn salvage_range(&self, from: u64, to: u64) -> Result<crate::store::SalvagedRange> {
        match self.event_range(from, to) {
            Ok(events) => return Ok((events, Vec::new())),
            Err(LogError::Corrupt { .. }) => {}
            Err(e) => return Err(e),
        }
        // Bundle by bundle; in a damaged one, the entries before the damage.
        let to = to.min(self.read_view().len);
        let mut events = Vec::new();
        let mut unreadable = Vec::new();
        let mut seq = from;
        while seq < to {
            let end = to.min((seq / TILE_WIDTH + 1) * TILE_WIDTH);
            match self.event_range(seq, end) {
                Ok(read) => events.extend(read),
                Err(LogError::Corrupt { .. }) => {
                    let (read, lost) = self.salvage_bundle(seq, end)?;
                    events.extend(read);
                    unreadable.extend(lost);
                }
                Err(e) => return Err(e),
            }
            seq = end;
        }
        Ok((events, unreadable))
    }

    /// From the start of the bundle the store's length ends in (a torn
    /// entry bundle, a missing one), every bundle file up to `to` is read
    /// as far as its entries go (checked against, and found again by, the
    /// leaves of its level-0 tile file), and every full level-0 hash tile
    /// file gives its leaves. Nothing is written, nothing recomputed.
    fn salvage_past_len(&self, to: u64) -> Result<crate::store::SalvagedPastLen> {
        let len = self.read_view().len;
        let mut found = crate::store::SalvagedPastLen::default();
        let mut index = len / TILE_WIDTH;
        // From the start of the bundle the length ends in: a length cut
        // inside a damaged bundle came from parsing it as the open one,
        // entries a garbled length made up included, and its partial tile
        // was recomputed from them; its own level-0 tile file and the
        // entries checked against it are what the ledger wrote.
        let from = index * TILE_WIDTH;
        while index * TILE_WIDTH < to {
            let first = index * TILE_WIDTH;
            let wanted = |seq: u64| seq >= from && seq < to;
            if let Some(bytes) = self.read_bundle_file(index)? {
                for (seq, entry) in self.salvage_entries(index, &bytes).entries {
                    if !wanted(seq) {
                        continue;
                    }
                    match self.entry_bytes(seq, &entry) {
                        Ok(bytes) => found.events.push((seq, bytes)),
                        Err(LogError::Corrupt { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            let tile = self.path(&hash_tile_path(0, index));
            match fs::read(&tile) {
                Ok(bytes) => {
                    if let Some(hashes) =
                        parse_tile(&bytes).filter(|h| h.len() as u64 == TILE_WIDTH)
                    {
                        found
                            .leaves
                            .extend((first..).zip(hashes).filter(|(seq, _)| wanted(*seq)));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(tile, e)),
            }
            index += 1;
        }
        found.nodes = self.kept_upper_nodes(from, to)?;
        Ok(found)
    }

    fn salvage_set_apart(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        self.large_event_by_name(seq)
    }

    fn check_structures(
        &self,
        keep_going: &dyn Fn() -> bool,
    ) -> Result<Option<crate::store::StructureReport>> {
        self.structure_report(keep_going).map(Some)
    }

    fn explain_shortfall(&self, expected: u64) -> Result<Option<String>> {
        let (held, _, _) = self.salvaged_length()?;
        let view = self.read_view().clone();
        // The bundle (full, or the open one's `.part`) where the run of
        // stored events ends.
        let ends_in = {
            let index = held / TILE_WIDTH;
            let full = self.path(&bundle_path(index));
            // A bundle that is gone is named as the log of `expected`
            // events would hold it: the open one (`.part`) when those
            // events end inside it.
            let open = self.part_path(index).exists()
                || (!full.exists() && (index + 1) * TILE_WIDTH > expected);
            if open {
                format!("tiles/{}.part", bundle_path(index))
            } else {
                format!("tiles/{}", bundle_path(index))
            }
        };
        // An intact commit record after those the store uses: the commit
        // log goes on, and the events it names are what is missing.
        let log_goes_on = self.record_at(view.commits_end).is_ok();
        Ok(Some(if log_goes_on {
            format!(
                "tiles/commits goes on past event {} with intact records whose events are not \
                 all stored: the entry bundles hold {held} events in a row; {ends_in} is missing, \
                 cut short or damaged",
                view.len
            )
        } else if held > view.len {
            format!(
                "tiles/commits accounts for {} events (its intact records end at byte {}) \
                 but the entry bundles hold {held} in a row: the commit log was cut short or \
                 damaged (`docket recover` reads past it)",
                view.len, view.commits_end
            )
        } else if held < expected {
            format!(
                "the entry bundles hold {held} events in a row: {ends_in} is missing, cut short \
                 or damaged"
            )
        } else {
            return Ok(None);
        }))
    }
    fn rebuild_derived_tree(&self, size: u64, root: &Hash) -> Result<Option<Vec<String>>> {
        self.rebuild_hash_tiles(size, root)
    }

    fn statement_seq(&self, digest: &Hash) -> Result<Option<u64>> {
        let end = self.read_view().commits_end;
        let mut ix = self.derived.indexes();
        if let Some(seq) = ix.queued_statement(digest) {
            return Ok(Some(seq));
        }
        let mut found = None;
        let looked = ix.statements.find(digest_key(digest), &mut |offset| {
            Ok(match self.statement_at(offset, end)? {
                Some((d, seq)) if d == *digest => {
                    found = Some(seq);
                    true
                }
                Some(_) => {
                    // The slot's 64-bit key is this digest's, the pair it
                    // points at is not: a key collision (about 2^-64), or a
                    // damaged commit record, which must not pass for "not
                    // in the log" (the statement would be appended twice).
                    self.record_holding(offset, end)?;
                    false
                }
                None => false,
            })
        });
        if let Err(e) = looked {
            // A damaged index can no longer say that a statement is new:
            // no commit may go on before a reopen rebuilds it.
            ix.fail(&e);
            return Err(e);
        }
        Ok(found)
    }

    fn for_each_statement(&self, f: &mut dyn FnMut(Hash)) -> Result<()> {
        let end = self.read_view().commits_end;
        let mut at = 0;
        while at < end {
            let rec = self.record_at(at)?;
            for (d, _) in &rec.statements {
                f(*d);
            }
            at = rec.end;
        }
        Ok(())
    }

    fn leaf_hashes(&self, from: u64, to: u64) -> Result<Vec<(u64, Hash)>> {
        let (len, partial) = {
            let view = self.read_view();
            let partial = if to.min(view.len) > view.len / TILE_WIDTH * TILE_WIDTH {
                view.partial_tiles.first().cloned()
            } else {
                None
            };
            (view.len, partial)
        };
        let to = to.min(len);
        let mut out = Vec::new();
        let mut seq = from;
        while seq < to {
            let tile = seq / TILE_WIDTH;
            let end = to.min((tile + 1) * TILE_WIDTH);
            if tile < len / TILE_WIDTH {
                let hashes = self.full_tile(0, tile)?;
                out.extend((seq..end).map(|s| (s, hashes[(s % TILE_WIDTH) as usize])));
            } else if let Some(p) = &partial {
                out.extend(
                    (seq..end).filter_map(|s| p.get((s % TILE_WIDTH) as usize).map(|h| (s, *h))),
                );
            }
            seq = end;
        }
        Ok(out)
    }

    fn checkpoint(&self, size: Option<u64>) -> Result<Option<(u64, String)>> {
        let (latest, commits_end) = {
            let view = self.read_view();
            (view.latest.clone(), view.commits_end)
        };
        let Some(size) = size else {
            return Ok(latest);
        };
        if latest.as_ref().is_some_and(|l| l.0 == size) {
            return Ok(latest);
        }
        let mut ix = self.derived.indexes();
        if let Some(c) = ix.queued_checkpoint(size) {
            return Ok(Some(c.clone()));
        }
        let mut found = None;
        let looked = ix.checkpoints.find(mix64(size), &mut |offset| {
            Ok(match self.checkpoint_at(offset, commits_end)? {
                Some(c) if c.0 == size => {
                    found = Some(c);
                    true
                }
                _ => false,
            })
        });
        if let Err(e) = looked {
            ix.fail(&e);
            return Err(e);
        }
        Ok(found)
    }

    fn checkpoints(&self, from: u64, to: u64) -> Result<Vec<(u64, String)>> {
        let top = to.min(self.read_view().len);
        let mut out = Vec::new();
        for size in from..=top {
            if let Some(c) = self.checkpoint(Some(size))? {
                out.push(c);
            }
        }
        Ok(out)
    }

    fn put_checkpoints(&self, checkpoints: &[(u64, String)]) -> Result<()> {
        let mut guard = self.lock_writer()?;
        let w = &mut *guard;
        self.settle(w, true)?;
        self.cut_commit_log(w)?;
        let mut bytes = Vec::new();
        let mut records = Vec::new();
        let mut at = w.view.commits_end;
        for c in checkpoints {
            if c.0 > w.view.len {
                return Err(LogError::FailedPrecondition(format!(
                    "a checkpoint of size {} for a log of {} events",
                    c.0, w.view.len
                )));
            }
            let rec = CommitRecord::encode(w.view.len, &[], Some(c));
            records.push(CommitRecord {
                start: at,
                end: at + rec.len() as u64,
                log_len: w.view.len,
                statements: Vec::new(),
                checkpoint: Some(c.clone()),
            });
            at += rec.len() as u64;
            bytes.extend_from_slice(&rec);
        }
        self.commits
            .write_all_at(&bytes, w.view.commits_end)
            .and_then(|()| self.commits.sync_data())
            .map_err(|e| LogError::io(&self.commits_path, e))?;
        w.view.commits_end = at;
        for c in checkpoints {
            if w.view.latest.as_ref().is_none_or(|l| c.0 >= l.0) {
                w.view.latest = Some(c.clone());
            }
        }
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = w.view.clone();
        for rec in records {
            self.derived.queue_record(rec);
        }
        Ok(())
    }

    fn put_snapshot(&self, name: &str, bytes: &[u8]) -> Result<()> {
        crate::store::put_snapshot_file(&self.snapshot_dir, name, bytes)
    }

    fn snapshot(&self, name: &str) -> Result<Option<Vec<u8>>> {
        crate::store::read_snapshot_file(&self.snapshot_dir, name)
    }

    fn anchor(&self) -> Result<Option<String>> {
        self.anchor.read()
    }

    fn anchor_notes_of_damaged_slots(&self) -> Result<Vec<String>> {
        self.anchor.notes_of_damaged_slots()
    }

    fn put_anchor(&self, note: &str) -> Result<()> {
        self.anchor.write(note)
    }

    fn exact_statement_lookup(&self) -> bool {
        true
    }
}

impl Drop for TileStore {
    fn drop(&mut self) {
        // Let the store's last fdatasyncs finish (a failure is only
        // reported: the commits they cover are safe in the anchor's redo,
        // which the next open commits again).
        let w = self
            .writer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        // Its thread ends (joined) before the process lock is released.
        w.preparer = None;
        if w.in_flight.is_some() || w.durable_len < w.view.len {
            let mut w = std::mem::replace(w, Writer::at(View::default(), 0));
            let mut closed = self.settle(&mut w, true);
            if closed.is_ok() && !w.broken && w.durable_len < w.view.len {
                closed = self
                    .bundle_steps(&mut w)
                    .iter()
                    .chain([&self.commits_step()])
                    .try_for_each(SyncStep::run);
            }
            if let Err(e) = closed {
                tracing::warn!(
                    "tile store: closing: {e}; the next open commits the last commits again from the anchor"
                );
            }
        }
        // Finish the queued index inserts and tile writes and leave the
        // indexes' watermark current, so the next open re-indexes nothing,
        // before the process lock (a field dropped after this) is released.
        self.derived.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_slot_naming_events_at_the_end_of_the_sequence_space_opens_without_overflow() {
        // Given a valid slot whose redo claims events from u64::MAX - 1 on
        // (untrusted bytes: sums of its lengths would overflow),
        let dir = tempfile::tempdir().unwrap();
        let store = TileStore::create(dir.path()).unwrap();
        let body = crate::checkpoint::Checkpoint {
            origin: "example.org/ring-test".into(),
            size: u64::MAX,
            root: [7; 32],
            extensions: Vec::new(),
        }
        .body();
        let note = format!("{body}\n— example.org/ring-test AAAA\n");
        let redo = AnchorRedo {
            durable: 0,
            first_seq: u64::MAX - 1,
            events: vec![b"\x01a".to_vec(), b"\x01b".to_vec(), b"\x01c".to_vec()],
            statements: Vec::new(),
        };
        let slot = store.anchor.slot_with_redo(&note, &redo).unwrap();
        store.anchor.write_slot(Some(u64::MAX), &slot).unwrap();
        drop(store);
        // when the store opens, then it opens empty, redoing nothing (the
        // anchor check of the log above reports the gap).
        let store = TileStore::open(dir.path()).unwrap();
        assert_eq!(store.len().unwrap(), 0);
    }

    /// The one-event commit of event `seq` (small: its anchor slot can
    /// carry it), its Merkle nodes pushed onto `frontier`.
    fn one_event_commit(frontier: &mut merkle::Frontier, seq: u64) -> CommitBatch {
        let bytes = format!("\x01ring-{seq}").into_bytes();
        let mut batch = CommitBatch::default();
        batch.nodes.extend(frontier.push(merkle::leaf_hash(&bytes)));
        batch.events.push((seq, bytes));
        let body = crate::checkpoint::Checkpoint {
            origin: "example.org/ring-test".into(),
            size: seq + 1,
            root: frontier.root(),
            extensions: Vec::new(),
        }
        .body();
        batch.checkpoint = Some((seq + 1, format!("{body}\n— example.org/ring-test AAAA\n")));
        batch
    }

    #[test]
    fn a_slot_commit_begins_its_background_round_only_after_its_callers_are_answered() {
        // Given a commit acknowledged by its anchor slot alone,
        let dir = tempfile::tempdir().unwrap();
        let store = TileStore::create(dir.path()).unwrap();
        let mut frontier = merkle::Frontier::new();
        assert!(
            store
                .commit_anchored(&one_event_commit(&mut frontier, 0))
                .unwrap()
        );
        // then its background round waits (the write path answers the
        // commit's callers first),
        {
            let w = store.writer.lock().unwrap();
            assert!(w.in_flight.is_none());
            assert_eq!(w.deferred.round, Some(1));
            assert!(w.deferred.wake_derived);
        }
        // and when the write path calls `after_commit`, the round begins,
        // covers the commit, and once it settles the store is durable up
        // to it.
        store.after_commit().unwrap();
        let mut w = store.writer.lock().unwrap();
        assert_eq!(w.deferred.round, None);
        assert!(!w.deferred.wake_derived);
        assert_eq!(w.in_flight.as_ref().map(|r| r.covers), Some(1));
        store.settle(&mut w, true).unwrap();
        assert_eq!(w.durable_len, 1);
    }

    #[test]
    fn a_ring_slot_is_overwritten_only_once_the_store_is_durable_where_the_ring_begins() {
        // With and without the write path's `after_commit` (a store also
        // runs what a commit deferred at the start of the next one):
        for after_commit in [false, true] {
            ring_comes_round_five_times(after_commit);
        }
    }

    fn ring_comes_round_five_times(after_commit: bool) {
        // Given a tile store whose background fdatasyncs take 30 ms each (a
        // slow disk: many slot writes happen during one round),
        let dir = tempfile::tempdir().unwrap();
        let store = TileStore::create(dir.path()).unwrap();
        store.hold_back_syncs(std::time::Duration::from_millis(30));
        let mut frontier = merkle::Frontier::new();
        // when 40 one-event commits are acknowledged by their anchor slots
        // alone (five times round the ring of eight),
        for seq in 0..40u64 {
            let batch = one_event_commit(&mut frontier, seq);
            assert!(
                store.commit_anchored(&batch).unwrap(),
                "commit {seq} anchored"
            );
            if after_commit {
                store.after_commit().unwrap();
            }
            // then after each, the store is durable at least up to where the
            // ring's chain of redos begins, so a stop loses nothing the
            // ring cannot give back.
            let chain = store.anchored_chain().unwrap();
            assert_eq!(chain.last().map(|(_, r)| r.first_seq), Some(seq));
            let durable = store.writer.lock().unwrap().durable_len;
            assert!(
                chain[0].1.first_seq <= durable,
                "after commit {seq}: the ring's redos begin at {} but the store is durable only to {durable}",
                chain[0].1.first_seq
            );
        }
    }

    #[test]
    fn given_a_garbled_entry_length_when_resyncing_then_only_that_entry_is_lost() {
        // Given a bundle of 8 entries from seq 512 (entry 5 a large event's
        // stand-in) and the leaves its level-0 tile kept,
        let first = 512u64;
        let events: Vec<Vec<u8>> = (0..8u64)
            .map(|i| {
                let mut e = vec![0x01];
                e.extend_from_slice(&(first + i).to_be_bytes());
                e.extend_from_slice(format!("event {i} {}", "x".repeat(i as usize * 7)).as_bytes());
                e
            })
            .collect();
        let large = {
            let mut e = vec![0x01];
            e.extend_from_slice(&(first + 5).to_be_bytes());
            e.extend(std::iter::repeat_n(7u8, MAX_INLINE_ENTRY + 1));
            e
        };
        let entries: Vec<Vec<u8>> = (0..8)
            .map(|i| {
                if i == 5 {
                    oversized_entry(&large)
                } else {
                    events[i].clone()
                }
            })
            .collect();
        let leaves: Vec<Hash> = (0..8)
            .map(|i| merkle::leaf_hash(if i == 5 { &large } else { &events[i] }))
            .collect();
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        for e in &entries {
            starts.push(bytes.len());
            bytes.extend_from_slice(&u16::try_from(e.len()).unwrap().to_be_bytes());
            bytes.extend_from_slice(e);
        }
        // and entry 2's length garbled (the parse tears there),
        bytes[starts[2]..starts[2] + 2].copy_from_slice(&[0xFF, 0xFF]);
        let (intact, at, stopped) = bundle_prefix(&bytes, TILE_WIDTH);
        assert_eq!(intact.len(), 2);
        assert!(stopped.is_some());
        // when the entries are looked for again from where it stopped,
        let found = resync_entries(&bytes, at, first, intact.len(), &leaves);
        // then every entry after the garbled one is found, the stand-in
        // included, each with its own bytes; entry 2 is lost.
        let indexes: Vec<usize> = found.iter().map(|(i, _)| *i).collect();
        assert_eq!(indexes, vec![3, 4, 5, 6, 7]);
        for (i, entry) in &found {
            assert_eq!(*entry, &entries[*i][..], "entry {i}");
        }
        // And an entry whose bytes were altered (its leaf no longer
        // matches) is not taken: the one after it still is.
        let mut altered = bytes.clone();
        altered[starts[4] + 14] ^= 1;
        let found = resync_entries(&altered, at, first, intact.len(), &leaves);
        let indexes: Vec<usize> = found.iter().map(|(i, _)| *i).collect();
        assert_eq!(indexes, vec![3, 5, 6, 7]);
    }

    proptest::proptest! {
        /// Damaged bundle bytes (any bytes overwritten, cut or inserted)
        /// never make the resync panic, and every entry it returns is one
        /// whose bytes hash to its kept leaf, at an index after the
        /// intact ones, in increasing order.
        #[test]
        fn resync_takes_only_entries_that_hash_to_their_leaf(
            sizes in proptest::collection::vec(9usize..200, 1..40),
            edits in proptest::collection::vec((0usize..10_000, 0u8..3, proptest::num::u8::ANY), 0..6),
        ) {
            let first = 256u64;
            let events: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let mut e = vec![0x01];
                    e.extend_from_slice(&(first + i as u64).to_be_bytes());
                    e.resize(*n, b'a' + (i % 26) as u8);
                    e
                })
                .collect();
            let leaves: Vec<Hash> = events.iter().map(|e| merkle::leaf_hash(e)).collect();
            let mut bytes = Vec::new();
            for e in &events {
                bytes.extend_from_slice(&u16::try_from(e.len()).unwrap().to_be_bytes());
                bytes.extend_from_slice(e);
            }
            for (at, op, value) in edits {
                if bytes.is_empty() {
                    break;
                }
                let at = at % bytes.len();
                match op {
                    0 => bytes[at] = value,
                    1 => bytes.truncate(at),
                    _ => bytes.insert(at, value),
                }
            }
            let (intact, end, _) = bundle_prefix(&bytes, TILE_WIDTH);
            let intact = intact.len().min(leaves.len());
            let found = resync_entries(&bytes, end, first, intact, &leaves);
            let mut last = None;
            for (i, entry) in &found {
                proptest::prop_assert!(*i >= intact);
                proptest::prop_assert!(last.is_none_or(|l| l < *i));
                proptest::prop_assert_eq!(merkle::leaf_hash(entry), leaves[*i]);
                last = Some(*i);
            }
        }
    }

    #[test]
    fn tile_paths_follow_c2sp() {
        assert_eq!(tile_index_path(0), "000");
        assert_eq!(tile_index_path(67), "067");
        assert_eq!(tile_index_path(1000), "x001/000");
        assert_eq!(tile_index_path(1_234_067), "x001/x234/067");
        assert_eq!(bundle_path(5), "tile/entries/005");
        assert_eq!(hash_tile_path(1, 1234), "tile/1/x001/234");
    }

    #[test]
    fn a_grown_index_finds_every_key_even_clustered_at_region_and_table_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = DiskTable::create(&dir.path().join("t.idx"), 1 << 9, true).unwrap();
        // Keys whose homes crowd the last slots of every region of the grown
        // table (and of the table itself), so probes carry and wrap.
        let capacity = 4u64 << 9;
        let region = DiskTable::grow_region(capacity);
        let mut keys = Vec::new();
        for r in 0..capacity.div_ceil(region) {
            for j in 0..20u64 {
                keys.push(((r + 1) * region).min(capacity) - 3 + (j << 40));
            }
        }
        keys.extend((0..150u64).map(|i| mix64(i) | 1));
        for (v, k) in keys.iter().enumerate() {
            t.insert(*k, v as u64, &mut |_| Ok(false)).unwrap();
        }
        assert_eq!(t.capacity, 4 << 9, "it grew once");
        for (v, k) in keys.iter().enumerate() {
            let found = t.find(*k, &mut |x| Ok(x == v as u64)).unwrap();
            assert_eq!(found, Some(v as u64), "key {k:#x}");
        }
        assert_eq!(t.count, keys.len() as u64);
    }

    #[test]
    fn keys_written_past_the_synced_count_are_counted_when_offered_again() {
        // Given a table whose header count lags the keys in its pages (a
        // process wrote them and was killed before syncing the header),
        // twice over,
        let dir = tempfile::tempdir().unwrap();
        let mut t = DiskTable::create(&dir.path().join("t.idx"), 1 << 12, true).unwrap();
        let mut next = 0u64;
        for _ in 0..2 {
            let first = next;
            for k in first..first + 2000 {
                t.insert(k, k, &mut |_| Ok(false)).unwrap();
            }
            next = first + 2000;
            if t.capacity == 1 << 12 {
                t.count = 0; // the synced count: none of these keys
            }
            // when the catch-up offers the same keys again,
            for k in first..next {
                t.insert(k, k, &mut |v| Ok(v == k)).unwrap();
            }
        }
        // then the table grows in time and never runs out of slots.
        for k in next..next + 1000 {
            t.insert(k, k, &mut |_| Ok(false)).unwrap();
        }
        assert!(t.capacity > 1 << 12);
        assert_eq!(t.find(3, &mut |v| Ok(v == 3)).unwrap(), Some(3));
    }

    #[test]
    fn a_damaged_index_page_is_reported_by_page_and_the_next_open_rebuilds() {
        // Given a table holding keys on its first pages,
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.idx");
        let mut t = DiskTable::create(&path, 1 << 12, true).unwrap();
        for k in 0..600u64 {
            t.insert(k, k, &mut |_| Ok(false)).unwrap();
        }
        assert_eq!(t.find(300, &mut |v| Ok(v == 300)).unwrap(), Some(300));
        // when a slot of page 1 (slots 255..510) is zeroed on disk, so that
        // its key would simply look absent,
        let at = DiskTable::HEADER + 4096 + 16 * (300 - 255);
        t.file.write_all_at(&[0u8; 16], at).unwrap();
        // then looking it up (or inserting near it) is damage naming the
        // page, not a miss,
        for e in [
            t.find(300, &mut |v| Ok(v == 300)).unwrap_err(),
            t.insert(301, 301, &mut |_| Ok(false)).unwrap_err(),
        ] {
            assert!(matches!(e, LogError::Corrupt { .. }), "{e:?}");
            assert!(e.to_string().contains("t.idx page 1"), "{e}");
        }
        // keys on intact pages are still found,
        assert_eq!(t.find(3, &mut |v| Ok(v == 3)).unwrap(), Some(3));
        // and the header no longer opens: the store rebuilds the table.
        drop(t);
        assert!(DiskTable::open(&path).unwrap().is_none());
    }

    #[test]
    fn index_page_seals_are_zlib_crc32_of_the_page_number_and_slots() {
        // Vectors computed outside Rust: Python's zlib.crc32 over
        // u64be(page) || the 4,080 slot bytes (docs/FORMAT.md §11).
        assert_eq!(
            DiskTable::seal(0, &[0u8; 4080]),
            0xa4b6_8f86u32.to_be_bytes()
        );
        let mut slots = vec![0u8; 4080];
        slots[..8].copy_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        slots[8..16].copy_from_slice(&42u64.to_be_bytes());
        assert_eq!(DiskTable::seal(7, &slots), 0x5ce1_3e37u32.to_be_bytes());
        let page = DiskTable::sealed_page(7, &slots[..16]);
        assert_eq!(page.len(), 4096);
        assert_eq!(page[4080..4084], 0x5ce1_3e37u32.to_be_bytes());
        assert_eq!(page[4084..], [0u8; 12]);
    }

    #[test]
    fn a_page_copied_to_another_place_does_not_pass_its_seal() {
        let dir = tempfile::tempdir().unwrap();
        let t = DiskTable::create(&dir.path().join("t.idx"), 1 << 10, true).unwrap();
        let page = t.read_page(0).unwrap();
        t.write_page(2, &page).unwrap();
        assert!(t.read_page(2).is_err());
        assert!(t.read_page(1).is_ok());
    }

    #[test]
    fn a_commit_record_round_trips_and_a_flipped_byte_is_refused() {
        let cp = (7u64, "note\n7\n".to_string());
        let rec = CommitRecord::encode(7, &[([3u8; 32], 6)], Some(&cp));
        let parsed = CommitRecord::parse(&rec, 100).expect("parses");
        assert_eq!(parsed.log_len, 7);
        assert_eq!(parsed.statements, vec![([3u8; 32], 6)]);
        assert_eq!(parsed.checkpoint, Some(cp));
        assert_eq!(parsed.end, 100 + rec.len() as u64);
        for i in 0..rec.len() {
            let mut bad = rec.clone();
            bad[i] ^= 1;
            assert!(CommitRecord::parse(&bad, 0).is_none(), "byte {i}");
        }
    }

    #[test]
    fn the_partial_tiles_file_round_trips_only_for_its_own_length() {
        // 66,000 events: 257 full level-0 tiles, so one hash of level 1
        // (tile 256's root) and one of level 2.
        let upper = vec![vec![[1u8; 32]], vec![[2u8; 32]]];
        let bytes = encode_partial(257, &upper);
        assert_eq!(decode_partial(&bytes, 257), Some(upper.clone()));
        assert_eq!(decode_partial(&bytes, 258), None, "another length");
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert_eq!(decode_partial(&bad, 257), None, "byte {i}");
        }
        assert_eq!(decode_partial(&bytes[..bytes.len() - 1], 257), None);
        // A count that does not follow from the length is refused even
        // under a valid check.
        assert_eq!(decode_partial(&encode_partial(257, &upper[..1]), 257), None);
    }

    #[test]
    fn nodes_past_the_end_or_past_two_to_the_64_are_missing_not_a_panic() {
        let tiles = vec![vec![[3u8; 32]; 4]];
        assert!(partial_node(4, &tiles, 2, 0).unwrap().is_some());
        for (level, index) in [(1, u64::MAX), (7, u64::MAX / 64), (2, 1), (63, 0), (255, 0)] {
            assert!(
                partial_node(4, &tiles, level, index).is_err(),
                "{level}/{index}"
            );
        }
    }
}
