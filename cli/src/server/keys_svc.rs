//! `docket.v1.Keys` and `docket.v1.Admin`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use docket_domain::projection::KeysProjection;
use docket_proto::v1 as pb;
use docket_proto::v1::admin_server::Admin;
use docket_proto::v1::keys_server::Keys;
use tonic::{Request, Response, Status};

use super::convert;
use super::shared::{METRICS_WINDOW, Shared};

/// The `Keys` service.
#[derive(Debug, Clone)]
pub struct KeysService {
    pub shared: Arc<Shared>,
}

fn key_infos(keys: &KeysProjection, include_revoked: bool) -> Vec<pb::KeyInfo> {
    let mut out: Vec<pb::KeyInfo> = keys
        .keys
        .iter()
        .filter(|(_, k)| include_revoked || k.revoked_seq.is_none())
        .filter_map(|(hex_key, k)| {
            Some(pb::KeyInfo {
                public_key: hex::decode(hex_key).ok()?,
                roles: k.roles.iter().map(|r| r.as_str().to_string()).collect(),
                registered_seq: k.registered_seq,
                revoked_seq: k.revoked_seq.unwrap_or(0),
                valid_from_unix_ms: k.not_before_ms.map_or(0, convert::ms_i64),
                valid_until_unix_ms: k.not_after_ms.map_or(0, convert::ms_i64),
                label: k.label.clone().unwrap_or_default(),
            })
        })
        .collect();
    // In order of first registration (ties: genesis ledger key first).
    out.sort_by(|a, b| {
        a.registered_seq
            .cmp(&b.registered_seq)
            .then(a.public_key.cmp(&b.public_key))
    });
    out
}

#[tonic::async_trait]
impl Keys for KeysService {
    async fn register_key(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.shared
            .append_proto(request.get_ref(), &["key.registered"])
            .await
            .map(Response::new)
    }

    async fn revoke_key(
        &self,
        request: Request<pb::SignedStatement>,
    ) -> Result<Response<pb::AppendReceipt>, Status> {
        self.shared
            .append_proto(request.get_ref(), &["key.revoked"])
            .await
            .map(Response::new)
    }

    async fn list_keys(
        &self,
        request: Request<pb::ListKeysRequest>,
    ) -> Result<Response<pb::ListKeysResponse>, Status> {
        self.shared.check_read(&request)?;
        let req = request.into_inner();
        let as_of = convert::as_of(req.as_of.as_ref())?;
        let (keys, as_of_seq) = self
            .shared
            .read(move |d| {
                d.with_state(as_of, |s| {
                    (
                        key_infos(&s.keys, req.include_revoked),
                        s.applied.saturating_sub(1),
                    )
                })
            })
            .await?;
        Ok(Response::new(pb::ListKeysResponse { keys, as_of_seq }))
    }
}

/// The `Admin` service.
#[derive(Debug, Clone)]
pub struct AdminService {
    pub shared: Arc<Shared>,
    pub auto_verify: bool,
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn get_status(
        &self,
        request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::ServerStatus>, Status> {
        self.shared.check_read(&request)?;
        let failure = self.shared.failure_reason();
        let cp = self
            .shared
            .blocking(|l| {
                Ok(l.checkpoint()?
                    .map(|(cp, note)| (cp, note, l.verifier_key())))
            })
            .await;
        // After a fail-stop the store may no longer read: the status still
        // answers (without a checkpoint), naming the failure.
        let cp = match cp {
            Ok(cp) => cp,
            Err(_) if failure.is_some() => None,
            Err(e) => return Err(e),
        };
        let s = &self.shared;
        let uptime = s.started.elapsed();
        let m = s.metrics.snapshot(uptime);
        Ok(Response::new(pb::ServerStatus {
            version: env!("CARGO_PKG_VERSION").to_string(),
            tree_size: s.ledger.len(),
            checkpoint: cp.map(|(cp, note, vkey)| convert::checkpoint(&cp, note, vkey)),
            uptime_ms: i64::try_from(uptime.as_millis()).unwrap_or(i64::MAX),
            window_ms: i64::try_from(METRICS_WINDOW.as_millis()).unwrap_or(i64::MAX),
            append_rate_per_sec: m.append_rate_per_sec,
            append_latency_p50_us: m.p50_us,
            append_latency_p99_us: m.p99_us,
            append_latency_p999_us: m.p999_us,
            queue_depth: s.inflight_now(),
            queue_capacity: s.max_inflight as u64,
            mean_batch_size: m.mean_batch_size,
            appended_total: s.ledger.len().saturating_sub(s.metrics.start_len),
            duplicates_total: s.metrics.duplicates.load(Ordering::Relaxed),
            rejected_total: s.metrics.rejected.load(Ordering::Relaxed),
            auto_verify: self.auto_verify,
            failure: failure.unwrap_or_default(),
        }))
    }
}
