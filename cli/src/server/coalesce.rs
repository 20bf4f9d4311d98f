//! Coalesces concurrent appends into group-commit requests.
//!
//! Every plain append (one whose admission is the ledger's own: keys,
//! tasks, executions, checks, verdicts, approvals, retention custody,
//! extensions) goes through one channel. A task drains whatever is waiting
//! (up to [`MAX_BATCH`]) into a single `Ledger::submit_then` request, so
//! many concurrent calls cost one queue slot instead of one each; the ledger
//! still judges every statement on its own and answers in order, from its
//! publish thread, straight into each caller's oneshot. At most
//! [`MAX_BATCHES_IN_FLIGHT`] requests are queued at the ledger at once (far
//! below its queue depth), so the queue is never full. Callers get a oneshot
//! receiver, so a stream can keep many statements in flight and still read
//! receipts in request order.

use std::sync::Arc;

use docket_domain::{Ledger, LedgerError, Receipt, Statement};
use tokio::sync::{Semaphore, mpsc, oneshot};

/// Most statements one coalesced request carries.
pub const MAX_BATCH: usize = 512;
/// Coalesced requests waiting at the ledger at once.
pub const MAX_BATCHES_IN_FLIGHT: usize = 16;

/// The answer to one coalesced append.
pub type Reply = oneshot::Receiver<Result<Receipt, LedgerError>>;

struct Job {
    statement: Statement,
    reply: oneshot::Sender<Result<Receipt, LedgerError>>,
}

/// The front door of plain appends. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Coalescer {
    tx: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("kind", &self.statement.kind)
            .finish_non_exhaustive()
    }
}

fn closed() -> LedgerError {
    LedgerError::Closed("the server is shutting down".into())
}

impl Coalescer {
    /// Starts the coalescing task on the current runtime.
    pub fn start(ledger: Ledger, capacity: usize) -> Self {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        tokio::spawn(run(ledger, rx));
        Self { tx }
    }

    /// Queues one statement (waiting while the channel is full) and returns
    /// where its result will arrive. Statements queued by one caller are
    /// sequenced in the order it queued them.
    pub async fn enqueue(&self, statement: Statement) -> Result<Reply, LedgerError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Job { statement, reply })
            .await
            .map_err(|_| closed())?;
        Ok(rx)
    }

    /// Appends one statement; returns once it is durable. (Through the
    /// coalescing task even when alone: submitting each call straight to
    /// the ledger's queue measured a third slower at 64 clients, one
    /// wake-up of the verify stage per call.)
    pub async fn append(&self, statement: Statement) -> Result<Receipt, LedgerError> {
        self.enqueue(statement).await?.await.map_err(|_| closed())?
    }
}

async fn run(ledger: Ledger, mut rx: mpsc::Receiver<Job>) {
    let slots = Arc::new(Semaphore::new(MAX_BATCHES_IN_FLIGHT));
    while let Some(first) = rx.recv().await {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let (statements, replies): (Vec<Statement>, Vec<_>) =
            jobs.into_iter().map(|j| (j.statement, j.reply)).unzip();
        // Answered on the ledger's publish thread (no blocking wait here or
        // on the blocking pool); the slot is released with the answer.
        ledger.submit_then(statements, move |results| {
            let _slot = slot;
            for (reply, result) in replies.into_iter().zip(results) {
                // The caller may have gone away: nothing to tell.
                let _ = reply.send(result);
            }
        });
    }
}
