//! Probe of the write path: N writer threads append pre-signed statements
//! for a few seconds; prints appends/s, mean batch size and mean committer
//! time per batch (from `Ledger::metrics`).
//! `cargo run --release -p docket-domain --example write_path_probe -- 64`

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use docket_domain::{Statement, keys};

fn main() {
    let writers: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    let dir = tempfile::tempdir().expect("temp dir");
    let (ledger, info) = docket_domain::ledger::init(dir.path(), None).expect("init");
    let admin = keys::read_key_file(&info.admin_key_path).expect("admin key");
    let per = 600usize;
    let work: Vec<Vec<Statement>> = (0..writers)
        .map(|w| {
            (0..per)
                .map(|i| {
                    Statement::sign(
                        "x-probe",
                        format!("{{\"w\":{w},\"i\":{i}}}").into_bytes(),
                        &admin,
                    )
                })
                .collect()
        })
        .collect();
    let m = ledger.metrics();
    let (b0, a0, c0) = (
        m.batches.load(Ordering::Relaxed),
        m.appended.load(Ordering::Relaxed),
        m.commit_micros_total.load(Ordering::Relaxed),
    );
    let start = Instant::now();
    std::thread::scope(|s| {
        for batch in work {
            let ledger = ledger.clone();
            s.spawn(move || {
                for st in batch {
                    ledger.append(st).expect("append");
                }
            });
        }
    });
    let elapsed = start.elapsed();
    let batches = m.batches.load(Ordering::Relaxed) - b0;
    let appended = m.appended.load(Ordering::Relaxed) - a0;
    let commit = Duration::from_micros(m.commit_micros_total.load(Ordering::Relaxed) - c0);
    println!(
        "{writers} writers: {appended} appends in {elapsed:?} = {:.0}/s; {batches} batches, mean {:.1}/batch, committer {:?}/batch ({:.0}% busy)",
        appended as f64 / elapsed.as_secs_f64(),
        appended as f64 / batches as f64,
        commit / u32::try_from(batches).unwrap_or(1),
        100.0 * commit.as_secs_f64() / elapsed.as_secs_f64()
    );
    ledger.close().expect("close");
}
