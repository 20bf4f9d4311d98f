//! `docket.v1.Ledger`: append, read, tail, checkpoints and proofs.

use std::sync::Arc;
use std::time::Instant;

use docket_domain::LedgerError;
use docket_proto::v1 as pb;
use docket_proto::v1::ledger_server::Ledger as LedgerRpc;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::coalesce::Reply;
use super::shared::{DOMAIN_ROUTED, Shared};
use super::{convert, status};
use crate::exit;

/// Events read from the store per chunk while tailing.
const TAIL_CHUNK: u64 = 512;
/// Events buffered per tail stream before back-pressure stops reading.
const TAIL_BUFFER: usize = 1024;

/// Kinds `Ledger.Append` refuses because they need more than a statement.
pub const NEEDS_OWN_SERVICE: &[(&str, &str)] = &[
    ("retention.sweep", "Retention.Sweep"),
    ("evidence.expired", "Retention.Sweep"),
];

/// The `Ledger` service.
#[derive(Debug, Clone)]
pub struct LedgerService {
    pub shared: Arc<Shared>,
}

type ReceiptStream =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::AppendReceipt, Status>> + Send>>;
type EventStream = ReceiverStream<Result<pb::Event, Status>>;

impl LedgerService {
    async fn append_one(&self, st: &pb::SignedStatement) -> Result<pb::AppendReceipt, Status> {
        if let Some((_, rpc)) = NEEDS_OWN_SERVICE.iter().find(|(k, _)| *k == st.kind) {
            self.shared
                .metrics
                .rejected
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err(status::invalid(&[format!(
                "kind {:?} cannot be appended with Ledger.Append; use {rpc}",
                st.kind
            )]));
        }
        self.shared.append_proto(st, &[]).await
    }
}

#[tonic::async_trait]
impl LedgerRpc for LedgerService {
    async fn append(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        let st = request.into_inner();
        self.append_one(&st).await.map(Response::new)
    }

    type AppendStreamStream = ReceiptStream;

    async fn append_stream(
        &self,
        request: Request<Streaming<pb::SignedStatement>>,
    ) -> Result<Response<Self::AppendStreamStream>, Status> {
        let inbound = request.into_inner();
        let shared = Arc::clone(&self.shared);
        let (pending_tx, pending_rx) = mpsc::channel::<Pending>(shared.max_inflight.max(1));
        let this = self.clone();
        tokio::spawn(async move { this.pump_append_stream(inbound, pending_tx).await });
        Ok(Response::new(receipts_in_order(shared, pending_rx)))
    }

    async fn get_event(
        &self,
        request: Request<pb::GetEventRequest>,
    ) -> Result<Response<pb::Event>, Status> {
        self.shared.check_read(&request)?;
        let seq = request.into_inner().seq;
        let bytes = self.shared.blocking(move |l| l.event_bytes(seq)).await?;
        convert::event(bytes).map(Response::new)
    }

    type TailStream = EventStream;

    async fn tail(
        &self,
        request: Request<pb::TailRequest>,
    ) -> Result<Response<Self::TailStream>, Status> {
        self.shared.check_read(&request)?;
        let pb::TailRequest { from_seq, follow } = request.into_inner();
        let len = *self.shared.len.borrow();
        if !follow && from_seq > len {
            return Err(status::out_of_range(
                format!(
                    "from_seq {from_seq} is beyond the head ({len} events); use follow to wait for it"
                ),
                exit::MISSING,
            ));
        }
        let (tx, rx) = mpsc::channel(TAIL_BUFFER);
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move { feed_tail(shared, from_seq, follow, tx).await });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_checkpoint(
        &self,
        request: Request<pb::GetCheckpointRequest>,
    ) -> Result<Response<pb::Checkpoint>, Status> {
        self.shared.check_read(&request)?;
        let (cp, note, vkey) = self
            .shared
            .blocking(|l| {
                let cp = l.checkpoint()?;
                Ok((cp, l.verifier_key()))
            })
            .await
            .and_then(|(cp, vkey)| match cp {
                Some((cp, note)) => Ok((cp, note, vkey)),
                None => Err(status::with_exit_code(
                    Status::not_found("the log is empty: no checkpoint yet"),
                    exit::MISSING,
                )),
            })?;
        Ok(Response::new(convert::checkpoint(&cp, note, vkey)))
    }

    async fn get_inclusion_proof(
        &self,
        request: Request<pb::GetInclusionProofRequest>,
    ) -> Result<Response<pb::InclusionProof>, Status> {
        self.shared.check_read(&request)?;
        let pb::GetInclusionProofRequest { seq, tree_size } = request.into_inner();
        let len = self.shared.ledger.len();
        let size = if tree_size == 0 { len } else { tree_size };
        if size > len {
            return Err(beyond_head(size, len));
        }
        if seq >= size {
            return Err(status::out_of_range_from(&LedgerError::Invalid {
                what: "inclusion proof".into(),
                violations: vec![format!("leaf index {seq} is not below tree size {size}")],
            }));
        }
        // Checked against the signed checkpoint before it is served.
        let proved = self
            .shared
            .blocking(move |l| l.prove_inclusion(seq, size))
            .await?;
        Ok(Response::new(pb::InclusionProof {
            leaf_index: seq,
            tree_size: size,
            leaf_hash: proved.leaf.to_vec(),
            root_hash: proved.root.to_vec(),
            proof: proved.path.iter().map(|h| h.to_vec()).collect(),
        }))
    }

    async fn get_consistency_proof(
        &self,
        request: Request<pb::GetConsistencyProofRequest>,
    ) -> Result<Response<pb::ConsistencyProof>, Status> {
        self.shared.check_read(&request)?;
        let pb::GetConsistencyProofRequest { old_size, new_size } = request.into_inner();
        let len = self.shared.ledger.len();
        let new = if new_size == 0 { len } else { new_size };
        if new > len {
            return Err(beyond_head(new, len));
        }
        if old_size > new {
            return Err(status::out_of_range_from(&LedgerError::Invalid {
                what: "consistency proof".into(),
                violations: vec![format!("old size {old_size} is above new size {new}")],
            }));
        }
        let proved = self
            .shared
            .blocking(move |l| l.prove_consistency(old_size, new))
            .await?;
        Ok(Response::new(pb::ConsistencyProof {
            old_size,
            new_size: new,
            old_root: proved.old_root.to_vec(),
            new_root: proved.new_root.to_vec(),
            proof: proved.path.iter().map(|h| h.to_vec()).collect(),
        }))
    }
}

/// A tree size beyond the head: `OUT_OF_RANGE`, worded (and exiting) as
/// the embedded ledger's `NotFound`.
fn beyond_head(size: u64, len: u64) -> Status {
    status::out_of_range_from(&LedgerError::NotFound {
        what: format!("tree size {size} (the log has {len} events)"),
    })
}

/// One entry of an `AppendStream` pipeline, in request order.
enum Pending {
    /// Queued for group commit; the waiter awaits its reply.
    Submitted {
        kind: String,
        started: Instant,
        reply: Reply,
        _permit: tokio::sync::OwnedSemaphorePermit,
    },
    /// Already answered (a routed kind, or a rejection before submission).
    Done(Result<pb::AppendReceipt, Status>),
    /// Fired once every entry before it has been answered.
    Barrier(tokio::sync::oneshot::Sender<()>),
}

impl LedgerService {
    /// Whether `kind` must go through [`Self::append_one`] (typed checks)
    /// rather than straight into the group committer.
    fn needs_route(kind: &str) -> bool {
        NEEDS_OWN_SERVICE.iter().any(|(k, _)| *k == kind) || DOMAIN_ROUTED.contains(&kind)
    }

    /// Reads statements, submits them pipelined (many in flight, so they
    /// share group commits) and streams receipts back in request order from
    /// a blocking waiter. The first rejection ends the call; statements
    /// already submitted behind it may have been appended (see docs/API.md).
    /// Evidence registrations and submissions go through the domain service
    /// one at a time, after everything before them is durable, so dependent
    /// statements in one stream (a task, then its evidence) are admitted in
    /// order and see the same checks as their typed RPCs.
    async fn pump_append_stream(
        self,
        mut inbound: Streaming<pb::SignedStatement>,
        pending_tx: mpsc::Sender<Pending>,
    ) {
        let shared = Arc::clone(&self.shared);
        let mut shutdown = shared.shutdown.clone();
        loop {
            let next = tokio::select! {
                m = inbound.message() => m,
                () = stopped(&mut shutdown) => {
                    let _ = pending_tx
                        .send(Pending::Done(Err(status::unavailable(
                            "the server is shutting down; resend unacknowledged statements",
                        ))))
                        .await;
                    break;
                }
            };
            let msg = match next {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    // A message that does not decode is the client's
                    // mistake: say so; anything else ended the stream.
                    if let Some(s) = status::classify_transport(&e) {
                        let _ = pending_tx.send(Pending::Done(Err(s))).await;
                    } else {
                        tracing::debug!("append stream ended by the client: {e}");
                    }
                    break;
                }
            };
            if let Err(s) = shared.writable() {
                let _ = pending_tx.send(Pending::Done(Err(s))).await;
                break;
            }
            let entry = if Self::needs_route(&msg.kind) {
                let (btx, brx) = tokio::sync::oneshot::channel();
                if pending_tx.send(Pending::Barrier(btx)).await.is_err() || brx.await.is_err() {
                    break;
                }
                Pending::Done(self.append_one(&msg).await)
            } else {
                match shared.checked(&msg, &[]) {
                    Err(e) => Pending::Done(Err(e)),
                    Ok(st) => {
                        let started = Instant::now();
                        let Ok(permit) = Arc::clone(&shared.inflight).acquire_owned().await else {
                            break;
                        };
                        let kind = st.kind.clone();
                        match shared.coalescer.enqueue(st).await {
                            Ok(reply) => Pending::Submitted {
                                kind,
                                started,
                                reply,
                                _permit: permit,
                            },
                            Err(e) => Pending::Done(Err(shared.write_status(&e).await)),
                        }
                    }
                }
            };
            let stop = matches!(entry, Pending::Done(Err(_)));
            // An error: the receipts stream ended (a rejection, or the
            // client went away), and with it this reader.
            if pending_tx.send(entry).await.is_err() || stop {
                break;
            }
        }
    }
}

/// The receipts of one `AppendStream`, in request order, each once it is
/// answered; the stream ends after the first error (dropping `pending`,
/// which stops the reader). Receipts already answered follow one another
/// with no pause, so tonic encodes all of them into one buffer and sends
/// them as one DATA frame: a group commit's answers to many pipelined
/// statements reach the client as a few large frames rather than a small
/// frame each, which a client library may refuse to hold unread (h2 0.4.20
/// closes a connection past half its window's worth of small frames).
fn receipts_in_order(shared: Arc<Shared>, pending: mpsc::Receiver<Pending>) -> ReceiptStream {
    Box::pin(futures_util::stream::unfold(
        (shared, pending, false),
        |(shared, mut pending, ended)| async move {
            if ended {
                return None;
            }
            loop {
                let item = match pending.recv().await? {
                    Pending::Barrier(tx) => {
                        let _ = tx.send(());
                        continue;
                    }
                    Pending::Done(item) => item,
                    Pending::Submitted {
                        kind,
                        started,
                        reply,
                        _permit,
                    } => {
                        let result = reply.await.unwrap_or_else(|_| {
                            Err(LedgerError::Closed(
                                "the ledger closed before acknowledging".into(),
                            ))
                        });
                        drop(_permit);
                        shared.account(result.as_ref().map_err(|_| ()), started);
                        match result {
                            Ok(r) => Ok(convert::receipt(&r, &kind)),
                            Err(e) => Err(shared.write_status(&e).await),
                        }
                    }
                };
                let failed = item.is_err();
                return Some((item, (shared, pending, failed)));
            }
        },
    ))
}

/// Streams events `from..` to `tx`, then (with `follow`) every newly durable
/// event, in order, without gap or duplicate. Ends on shutdown with
/// `UNAVAILABLE` (the client resumes from its last seq + 1).
async fn feed_tail(
    shared: Arc<Shared>,
    from: u64,
    follow: bool,
    tx: mpsc::Sender<Result<pb::Event, Status>>,
) {
    let mut len_rx = shared.len.clone();
    let mut shutdown = shared.shutdown.clone();
    let mut next = from;
    let shutting_down = |next: u64| {
        status::unavailable(format!(
            "the server is shutting down; resume the tail with from_seq = {next}"
        ))
    };
    loop {
        let len = *len_rx.borrow_and_update();
        while next < len {
            let to = (next + TAIL_CHUNK).min(len);
            let chunk = shared
                .blocking(move |l| l.store().event_range(next, to))
                .await;
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            for (seq, bytes) in chunk {
                debug_assert_eq!(seq, next);
                let item = convert::event(bytes);
                let failed = item.is_err();
                tokio::select! {
                    r = tx.send(item) => if r.is_err() || failed { return; },
                    () = stopped(&mut shutdown) => {
                        let _ = tx.try_send(Err(shutting_down(next)));
                        return;
                    }
                }
                next = seq + 1;
            }
        }
        if !follow {
            return;
        }
        tokio::select! {
            r = len_rx.changed() => if r.is_err() {
                let _ = tx.send(Err(status::unavailable("the ledger closed"))).await;
                return;
            },
            () = stopped(&mut shutdown) => {
                let _ = tx.send(Err(shutting_down(next))).await;
                return;
            }
            () = tx.closed() => return,
        }
    }
}

/// Resolves once the server starts shutting down.
pub async fn stopped(shutdown: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await;
}
