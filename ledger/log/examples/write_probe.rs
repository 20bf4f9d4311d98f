//! Probe of the log core's write path with a trivial state machine: W writer
//! threads each append 600 pre-signed statements one at a time (waiting for
//! durability); prints appends/s and the mean batch size.
//! `cargo run --release -p docket-log --example write_probe -- 64`
//! (`DOCKET_LAYOUT=sled` for the sled layout)

use std::sync::atomic::Ordering;
use std::time::Instant;

use docket_log::{Log, Statement};

mod common;

use common::{Count, options};

fn main() {
    let writers: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    let dir = tempfile::tempdir().expect("temp dir");
    let log = Log::<Count>::create(dir.path(), None, options()).expect("create");
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let per = 600usize;
    let work: Vec<Vec<Statement>> = (0..writers)
        .map(|w| {
            (0..per)
                .map(|i| {
                    Statement::sign(
                        "x-probe",
                        format!("{{\"w\":{w},\"i\":{i}}}").into_bytes(),
                        &key,
                    )
                })
                .collect()
        })
        .collect();
    let m = log.metrics();
    let (b0, a0) = (
        m.batches.load(Ordering::Relaxed),
        m.appended.load(Ordering::Relaxed),
    );
    let start = Instant::now();
    std::thread::scope(|s| {
        for batch in work {
            let log = log.clone();
            s.spawn(move || {
                for st in batch {
                    log.append(st).expect("append");
                }
            });
        }
    });
    let elapsed = start.elapsed();
    let batches = m.batches.load(Ordering::Relaxed) - b0;
    let appended = m.appended.load(Ordering::Relaxed) - a0;
    println!(
        "{writers} writers: {appended} appends in {elapsed:?} = {:.0}/s; {batches} batches, mean {:.1}/batch",
        appended as f64 / elapsed.as_secs_f64(),
        appended as f64 / batches.max(1) as f64,
    );
    log.close().expect("close");
}
