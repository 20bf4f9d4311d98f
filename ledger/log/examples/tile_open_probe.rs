//! Times the tile store's own open (no log above it) on a data directory.
fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("DIR"));
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let s = docket_log::tiles::TileStore::open(&dir).expect("open");
        println!("tile store open: {:?}", t.elapsed());
        drop(s);
    }
}
