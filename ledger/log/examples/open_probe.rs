//! Probe of the log core's open path with a trivial state machine: builds a
//! log of N events under DIR once (64 writers, pipelined), then times
//! `Log::open` (the anchored open check: anchor, stored tree, the tail) and
//! the background check of the rest.
//! `cargo run --release -p docket-log --example open_probe -- DIR 1000000`

use std::time::{Duration, Instant};

use docket_log::{Log, LogOptions, Statement};

mod common;

use common::{Count, options};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("DIR"));
    let n: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    if !dir.join("ledger.json").exists() {
        let log = Log::<Count>::create(&dir, None, options()).expect("create");
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let started = Instant::now();
        let writers = 64u64;
        std::thread::scope(|s| {
            for w in 0..writers {
                let log = log.clone();
                let key = key.clone();
                s.spawn(move || {
                    let mut pending = std::collections::VecDeque::new();
                    for i in (w..n).step_by(writers as usize) {
                        let st = Statement::sign(
                            "x-probe",
                            format!("{{\"w\":{w},\"i\":{i}}}").into_bytes(),
                            &key,
                        );
                        pending.push_back(log.submit(vec![st]).expect("submit"));
                        if pending.len() >= 8
                            && let Some(rx) = pending.pop_front()
                        {
                            rx.recv().expect("reply")[0].as_ref().expect("append");
                        }
                    }
                    for rx in pending {
                        rx.recv().expect("reply")[0].as_ref().expect("append");
                    }
                });
            }
        });
        println!("built {} events in {:?}", log.len(), started.elapsed());
        log.close().expect("close");
    }
    for round in 0..3 {
        let started = Instant::now();
        // DOCKET_PROBE_NO_SCRUB=1: without the background check (to see
        // what it costs in memory and time).
        let options = LogOptions {
            background_scrub: std::env::var_os("DOCKET_PROBE_NO_SCRUB").is_none(),
            ..LogOptions::default()
        };
        let log = Log::<Count>::open(&dir, options).expect("open");
        println!("RSS after open: {} kB", rss_kb());
        let opened = started.elapsed();
        let _ = log.event(log.len() - 1).expect("read");
        println!(
            "round {round}: open of {} events in {opened:?} (first read after {:?})",
            log.len(),
            started.elapsed()
        );
        if round == 2 {
            // Let the background check finish, to time it.
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(30) && log.failure().is_none() {
                std::thread::sleep(Duration::from_millis(50));
                if t.elapsed() > Duration::from_secs(5) {
                    break;
                }
            }
        }
        log.close().expect("close");
    }
}

/// Resident set size of this process (Linux), in kB.
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}
