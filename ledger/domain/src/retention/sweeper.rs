//! The periodic sweep loop for servers: [`Sweeper`] runs
//! [`PeriodicSweep::periodic_sweep`] on an interval on its own thread.
//!
//! It is driven by time, not by events (expiry is a matter of the clock),
//! so it keeps no cursor; the sweep itself decides from the state. The
//! service implements [`PeriodicSweep`] (`domain::Docket`), so this
//! module does not depend on it.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{LedgerError, Result};

use super::reports::SweepReport;

/// What the sweeper runs: one sweep at the ledger clock.
pub trait PeriodicSweep: Send + 'static {
    /// Sweeps now; `Closed` stops the sweeper.
    fn periodic_sweep(&self) -> Result<SweepReport>;
}

/// Runs a [`PeriodicSweep`] on an interval on its own thread (for servers;
/// the gRPC server may instead call `periodic_sweep` from its own timer).
/// Stops when dropped.
#[derive(Debug)]
pub struct Sweeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl Sweeper {
    /// Sweeps every `every`, first after one interval.
    pub fn spawn(target: impl PeriodicSweep, every: Duration) -> Result<Sweeper> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("docket-sweeper".into())
            .spawn(move || {
                let (lock, cv) = &*flag;
                loop {
                    let guard = lock
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let (guard, _) = cv
                        .wait_timeout_while(guard, every, |stopped| !*stopped)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if *guard {
                        return;
                    }
                    drop(guard);
                    match target.periodic_sweep() {
                        Ok(r) if !r.expired.is_empty() || !r.skipped.is_empty() => {
                            tracing::info!(
                                "retention sweep: {} expired, {} skipped, {} bytes freed",
                                r.expired.len(),
                                r.skipped.len(),
                                r.bytes_freed
                            );
                        }
                        Ok(_) => {}
                        Err(LedgerError::Closed(_)) => return,
                        Err(e) => tracing::warn!("retention sweep failed: {e}"),
                    }
                }
            })
            .map_err(|e| LedgerError::Io {
                path: PathBuf::from("docket-sweeper thread"),
                source: e,
            })?;
        Ok(Sweeper {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for it (a sweep in progress finishes).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let (lock, cv) = &*self.stop;
        *lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        cv.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.shutdown();
    }
}
