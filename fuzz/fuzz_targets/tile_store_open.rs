//! Untrusted bytes as the files of a tile store (docs/FORMAT.md §11): the
//! commit log, the open entry bundle, the partial tiles, the statement
//! index and the anchor (§9, whose slots may carry a redo the open commits)
//! are replaced by slices of the input. Opening and reading never panic: the store opens
//! (at some length whose events are all present) or reports damage.
#![no_main]
use docket_log::merkle::NodeSource as _;
use docket_log::store::Store as _;
use docket_log::tiles::TileStore;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("docket-fuzz-tiles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    drop(TileStore::create(&dir).expect("create"));
    let fifth = data.len() / 5;
    let (commits, rest) = data.split_at(fifth);
    let (bundle, rest) = rest.split_at(fifth);
    let (partial, rest) = rest.split_at(fifth);
    let (index, anchor) = rest.split_at(fifth);
    std::fs::write(dir.join("anchor"), anchor).expect("write");
    let tiles = dir.join("tiles");
    std::fs::write(tiles.join("commits"), commits).expect("write");
    std::fs::write(tiles.join("tile/entries/000.part"), bundle).expect("write");
    std::fs::write(tiles.join("partial"), partial).expect("write");
    std::fs::write(tiles.join("statements.idx"), index).expect("write");
    if let Ok(store) = TileStore::open(&dir) {
        let len = store.len().unwrap_or(0);
        let _ = store.event_range(0, len.min(300));
        let _ = store.leaf_hashes(0, len.min(300));
        let _ = store.node(0, 0);
        let _ = store.node(3, 1);
        let _ = store.statement_seq(&[0u8; 32]);
        let _ = store.checkpoint(Some(len));
    }
});
