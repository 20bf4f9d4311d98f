//! Probe of the open path: builds a ledger of N events under DIR once (64
//! writers, pipelined appends), then times `Ledger::open` (which runs the
//! anchored open check over every stored event) and the first read.
//! `cargo run --release -p docket-domain --example ledger_open_probe -- DIR 1000000`

use std::time::Instant;

use docket_domain::ledger::{Ledger, LedgerOptions};
use docket_domain::{Statement, keys};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("DIR"));
    let n: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    if !dir.join("ledger.json").exists() {
        let (ledger, info) = docket_domain::ledger::init(&dir, None).expect("init");
        let admin = keys::read_key_file(&info.admin_key_path).expect("admin key");
        let started = Instant::now();
        let writers = 64u64;
        std::thread::scope(|s| {
            for w in 0..writers {
                let ledger = ledger.clone();
                let admin = admin.clone();
                s.spawn(move || {
                    let mut pending = std::collections::VecDeque::new();
                    for i in (w..n).step_by(writers as usize) {
                        let st = Statement::sign(
                            "x-probe",
                            format!("{{\"w\":{w},\"i\":{i}}}").into_bytes(),
                            &admin,
                        );
                        pending.push_back(ledger.submit(vec![st]).expect("submit"));
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
        println!("built {} events in {:?}", ledger.len(), started.elapsed());
        ledger.close().expect("close");
    }
    for round in 0..3 {
        let started = Instant::now();
        let ledger = Ledger::open(&dir, LedgerOptions::default()).expect("open");
        let opened = started.elapsed();
        let _ = ledger.event(ledger.len() - 1).expect("read");
        println!(
            "round {round}: open of {} events in {opened:?} (first read after {:?})",
            ledger.len(),
            started.elapsed()
        );
        drop(ledger);
    }
}
