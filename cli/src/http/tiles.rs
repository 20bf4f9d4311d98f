//! C2SP tlog-tiles read paths (c2sp.org/tlog-tiles) over the ledger's
//! stored Merkle nodes and events.
//!
//! * `/tile/<L>/<N>[.p/<W>]`: hash tile `N` of tile level `L`. Hash `i` of
//!   the tile is the complete Merkle node at tree level `8·L`, index
//!   `256·N + i` (docs/FORMAT.md §8.1 node addressing): the RFC 9162 hash of
//!   leaves `[(256·N + i)·256^L, (256·N + i + 1)·256^L)`. A full tile has
//!   256 hashes (8,192 bytes); a partial tile (`.p/W`) has the first `W`.
//! * `/tile/entries/<N>[.p/<W>]`: entry bundle `N`: for each of the entries
//!   `256·N ..`, a big-endian u16 length and the entry. An entry is the
//!   event's canonical bytes (docs/FORMAT.md §3), except for an event over
//!   65,535 bytes, which a u16 cannot frame: its entry is the 37-byte
//!   stand-in [`OVERSIZED_MARKER`] `|| u32be(event length) || leaf hash`
//!   (docs/API.md, "HTTP").
//!
//! `N` is written in groups of three digits, every group but the last
//! prefixed with `x` (1234067 → `x001/x234/067`); only that canonical
//! spelling is accepted. A tile (or bundle) is served when every hash (or
//! entry) it holds is in the tree of the log's durable length — so a
//! partial tile of any width up to what the tree holds, and a full tile
//! once it is complete; anything else is 404.

use docket_domain::{Ledger, LedgerError, Result};

/// Hashes in a full tile (and entries in a full bundle).
pub const TILE_WIDTH: u64 = 256;

/// The stand-in of an event over 65,535 bytes, and the index encoding, are
/// the tile store's (docs/FORMAT.md §11): a full bundle served here is
/// byte for byte the file the tile store keeps.
pub use docket_log::tiles::{
    MAX_INLINE_ENTRY as MAX_FRAMED_ENTRY, OVERSIZED_MARKER, oversized_entry,
    tile_index_path as encode_index,
};

/// What a `/tile/...` path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileRef {
    /// `None` for an entry bundle, else the tile level `L`.
    pub level: Option<u8>,
    /// The tile index `N`.
    pub index: u64,
    /// `Some(W)` for a partial tile of width `W` (1..=255).
    pub partial: Option<u16>,
}

impl TileRef {
    /// Number of hashes (or entries) the tile holds.
    pub fn width(&self) -> u64 {
        self.partial.map_or(TILE_WIDTH, u64::from)
    }

    /// Whether this is a full tile (immutable, cached for a year).
    pub fn is_full(&self) -> bool {
        self.partial.is_none()
    }
}

/// The path of a tile below the prefix (without the leading `/`).
pub fn tile_path(t: &TileRef) -> String {
    let level = t
        .level
        .map_or_else(|| "entries".to_string(), |l| l.to_string());
    let mut p = format!("tile/{level}/{}", encode_index(t.index));
    if let Some(w) = t.partial {
        p.push_str(&format!(".p/{w}"));
    }
    p
}

/// A decimal with no sign and no leading zeros (`0` alone is allowed).
fn plain_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// Parses the part of a path after `/tile/`. Only the canonical spelling is
/// accepted (it is re-encoded and compared), so one tile has one URL.
pub fn parse(rest: &str) -> Option<TileRef> {
    let mut parts = rest.split('/');
    let first = parts.next()?;
    let level = if first == "entries" {
        None
    } else {
        let l = plain_decimal(first)?;
        if l > 63 {
            return None;
        }
        Some(u8::try_from(l).ok()?)
    };
    let mut index: u64 = 0;
    let mut partial = None;
    let mut done = false;
    for part in parts.by_ref() {
        let (group, last) = match part.strip_prefix('x') {
            Some(g) => (g, false),
            None => (part.strip_suffix(".p").unwrap_or(part), true),
        };
        if group.len() != 3 || !group.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let g: u64 = group.parse().ok()?;
        index = index.checked_mul(1000)?.checked_add(g)?;
        if last {
            if part.ends_with(".p") {
                let w = plain_decimal(parts.next()?)?;
                if !(1..TILE_WIDTH).contains(&w) {
                    return None;
                }
                partial = Some(u16::try_from(w).ok()?);
            }
            done = true;
            break;
        }
    }
    if !done || parts.next().is_some() {
        return None;
    }
    let t = TileRef {
        level,
        index,
        partial,
    };
    (tile_path(&t) == format!("tile/{rest}")).then_some(t)
}

/// The first leaf index past the tile's last hash (or entry), if it fits in
/// u64: the tree must hold at least this many leaves to serve the tile.
pub fn leaves_needed(t: &TileRef) -> Option<u64> {
    let tree_level = u32::from(t.level.unwrap_or(0)) * 8;
    let nodes = u128::from(t.index) * u128::from(TILE_WIDTH) + u128::from(t.width());
    let leaves = nodes.checked_mul(1u128.checked_shl(tree_level)?)?;
    u64::try_from(leaves).ok()
}

/// Whether the tree of `size` leaves holds every hash (or entry) of `t`.
pub fn exists(t: &TileRef, size: u64) -> bool {
    leaves_needed(t).is_some_and(|n| n <= size)
}

/// The bytes of hash tile `t` (the caller checked [`exists`]): its hashes
/// read from the store and proved against the signed checkpoint before
/// they are served ([`docket_domain::Ledger::proved_nodes`]: a damaged
/// derived tile is rebuilt from the event bytes first, or refused).
pub fn hash_tile(ledger: &Ledger, t: &TileRef) -> Result<Vec<u8>> {
    let level = t.level.unwrap_or(0);
    let tree_level = level.checked_mul(8).ok_or_else(|| LedgerError::NotFound {
        what: format!("tile level {level}"),
    })?;
    let hashes = ledger.proved_nodes(tree_level, t.index * TILE_WIDTH, t.width())?;
    Ok(hashes.concat())
}

/// The bytes of entry bundle `t` (the caller checked [`exists`]): the events
/// read from the store, their leaf hashes proved against the signed
/// checkpoint before they are served ([`docket_domain::Ledger::proved_events`]).
pub fn entry_bundle(ledger: &Ledger, t: &TileRef) -> Result<Vec<u8>> {
    let events = ledger.proved_events(t.index * TILE_WIDTH, t.width())?;
    let mut out = Vec::new();
    for (_, bytes) in &events {
        let framed;
        let entry: &[u8] = if bytes.len() > MAX_FRAMED_ENTRY {
            framed = oversized_entry(bytes);
            &framed
        } else {
            bytes
        };
        // Invariant: `entry` is at most 65,535 bytes (checked just above;
        // the stand-in is 37 bytes).
        let len = u16::try_from(entry.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_canonical_paths_only() {
        let t = parse("0/x001/x234/067").unwrap();
        assert_eq!((t.level, t.index, t.partial), (Some(0), 1_234_067, None));
        let t = parse("entries/001.p/7").unwrap();
        assert_eq!((t.level, t.index, t.partial), (None, 1, Some(7)));
        let t = parse("2/000.p/255").unwrap();
        assert_eq!((t.level, t.index, t.partial), (Some(2), 0, Some(255)));
        for bad in [
            "0/1",
            "0/01",
            "00/000",
            "0/x000/001",
            "0/000.p/0",
            "0/000.p/256",
            "0/000.p/07",
            "0/000.p",
            "0/000/001",
            "64/000",
            "0/x001",
            "entries",
            "0/000.p/1/2",
            "-1/000",
            "0/abc",
        ] {
            assert!(parse(bad).is_none(), "{bad} must not parse");
        }
    }

    #[test]
    fn tiles_exist_once_the_tree_holds_them() {
        let full0 = parse("0/000").unwrap();
        assert!(!exists(&full0, 255));
        assert!(exists(&full0, 256));
        let p1 = parse("1/000.p/1").unwrap();
        assert!(!exists(&p1, 255));
        assert!(exists(&p1, 256));
        let p = parse("0/001.p/3").unwrap();
        assert!(!exists(&p, 258));
        assert!(exists(&p, 259));
        // The spec's example: a tree of 70,000 leaves.
        assert!(exists(&parse("0/272").unwrap(), 70_000));
        assert!(!exists(&parse("0/273").unwrap(), 70_000));
        assert!(exists(&parse("0/273.p/112").unwrap(), 70_000));
        assert!(exists(&parse("1/000").unwrap(), 70_000));
        assert!(exists(&parse("1/001.p/17").unwrap(), 70_000));
        assert!(!exists(&parse("1/001.p/18").unwrap(), 70_000));
        assert!(exists(&parse("2/000.p/1").unwrap(), 70_000));
        assert!(!exists(&parse("63/000.p/1").unwrap(), u64::MAX));
    }

    #[test]
    fn oversized_entries_are_a_marked_leaf_hash() {
        let event = vec![1u8; 70_000];
        let e = oversized_entry(&event);
        assert_eq!(e.len(), 37);
        assert_eq!(e[0], OVERSIZED_MARKER);
        assert_eq!(&e[1..5], &70_000u32.to_be_bytes());
        assert_eq!(&e[5..], &docket_domain::merkle::leaf_hash(&event));
    }
}
