//! Untrusted bytes as the damaged files `docket recover` reads (docs/
//! OPERATIONS.md, "When the ledger reports damage"): a full entry bundle,
//! its level-0 hash tile and the open bundle after it, with no commit log.
//! Opening the store to salvage and reading what survives, past its length
//! too, never panics: every event it yields is returned with its sequence
//! number, and a resynced entry only when its bytes hash to its kept leaf.
#![no_main]
use docket_log::store::Store as _;
use docket_log::tiles::TileStore;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("docket-fuzz-salvage-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    drop(TileStore::create(&dir).expect("create"));
    let third = data.len() / 3;
    let (bundle, rest) = data.split_at(third);
    let (tile, open) = rest.split_at(third);
    let tiles = dir.join("tiles");
    std::fs::remove_file(tiles.join("commits")).expect("no commit log");
    std::fs::write(tiles.join("tile/entries/000"), bundle).expect("write");
    std::fs::create_dir_all(tiles.join("tile/0")).expect("mkdir");
    std::fs::write(tiles.join("tile/0/000"), tile).expect("write");
    std::fs::write(tiles.join("tile/entries/001.part"), open).expect("write");
    if let Ok(store) = TileStore::open_to_salvage(&dir) {
        let len = store.len().unwrap_or(0);
        let _ = store.salvage_range(0, len.min(600));
        let _ = store.leaf_hashes(0, len.min(600));
        let _ = store.salvage_past_len(600);
    }
});
