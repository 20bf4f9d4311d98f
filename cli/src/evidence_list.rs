//! `docket evidence list --task ID [--type TYPE]` and its RPC
//! (`Evidence.ListEvidence`): seed 000's evidence query. A task's evidence,
//! each OID with its type, digest, size, retention state and the events
//! that reference it (docs/DOMAIN.md, "Evidence query").
//!
//! Both modes print from the same `pb::ListEvidenceResponse`: embedded
//! mode builds it with [`list`], the function the server answers the RPC
//! with, so `--json` is byte-identical with `--data` and `--server`.

use anyhow::Result;
use clap::Args;
use docket_domain::LedgerError;
use docket_domain::domain::Docket;
use docket_domain::domain::evidence_query::TypeFilter;
use docket_proto::v1 as pb;
use serde::Serialize;

use crate::Ctx;
use crate::client;
use crate::domain_cmds::{Mode, mode};
use crate::exit;
use crate::output::rfc3339_ms;
use crate::server::domain_svc::evidence_info;

/// `docket evidence list`.
#[derive(Debug, Args)]
pub struct EvidenceListArgs {
    /// Task id (UUID).
    #[arg(long)]
    pub task: String,
    /// Keep one evidence type (`patch.diff`, `selftest.log`, `report.md`,
    /// `submit.json`, `screenshot`, `stdout`, `stderr`, `execution`,
    /// `trace`, `metrics`, `other`) or a seed 000 category (`logs`, `diff`,
    /// `reports`, `metrics`, `screenshots`).
    #[arg(long = "type")]
    pub evidence_type: Option<String>,
}

/// The listing as the RPC returns it; the server's `ListEvidence` handler.
pub fn list(
    docket: &Docket,
    req: &pb::ListEvidenceRequest,
) -> Result<pb::ListEvidenceResponse, LedgerError> {
    let filter = match req.evidence_type.trim() {
        "" => None,
        t => Some(TypeFilter::parse(t)?),
    };
    let listing = docket.evidence_list(&req.task_id, filter.as_ref())?;
    Ok(pb::ListEvidenceResponse {
        task_id: listing.task_id,
        size: listing.size,
        entries: listing
            .entries
            .into_iter()
            .map(|e| {
                let view = docket_domain::domain::service::EvidenceView {
                    oid: e.oid,
                    record: e.record,
                };
                pb::EvidenceListEntry {
                    info: Some(evidence_info(&view, e.expires_at_ms)),
                    artifact_name: view.record.artifact_name,
                    references: e
                        .references
                        .into_iter()
                        .map(|r| pb::EvidenceReference {
                            seq: r.seq,
                            kind: r.kind,
                        })
                        .collect(),
                }
            })
            .collect(),
    })
}

/// One line of `--json` output.
#[derive(Debug, Serialize)]
struct EntryOut {
    oid: String,
    task_id: String,
    evidence_type: String,
    name: String,
    media_type: String,
    sha256: String,
    size: u64,
    retention_class: String,
    pinned: bool,
    /// `live`, `expired` or `redacted`.
    state: String,
    /// When the content becomes eligible for expiry (RFC 3339); null when
    /// pinned, removed or never.
    expires_at: Option<String>,
    registered_seq: u64,
    registered_at: String,
    /// The event that removed the original content, if any.
    removed_seq: Option<u64>,
    /// The events that reference the OID, in log order.
    referenced_by: Vec<RefOut>,
}

#[derive(Debug, Serialize)]
struct RefOut {
    seq: u64,
    kind: String,
}

fn ms(v: i64) -> Option<String> {
    u64::try_from(v).ok().filter(|m| *m > 0).map(rfc3339_ms)
}

fn entry_out(e: pb::EvidenceListEntry) -> EntryOut {
    let info = e.info.unwrap_or_default();
    let state = match pb::EvidenceState::try_from(info.state) {
        Ok(pb::EvidenceState::Expired) => "expired",
        Ok(pb::EvidenceState::Redacted) => "redacted",
        _ => "live",
    };
    EntryOut {
        oid: info.oid,
        task_id: info.task_id,
        evidence_type: info.evidence_type,
        name: e.artifact_name,
        media_type: info.media_type,
        sha256: hex::encode(&info.sha256),
        size: info.size,
        retention_class: info.retention_class,
        pinned: info.pinned,
        state: state.to_string(),
        expires_at: ms(info.expires_at_unix_ms),
        registered_seq: info.registered_seq,
        registered_at: ms(info.registered_at_unix_ms).unwrap_or_default(),
        removed_seq: info.removal.map(|r| r.seq),
        referenced_by: e
            .references
            .into_iter()
            .map(|r| RefOut {
                seq: r.seq,
                kind: r.kind,
            })
            .collect(),
    }
}

/// The plain-text table.
fn table(task_id: &str, rows: &[EntryOut]) -> String {
    if rows.is_empty() {
        return format!("task {task_id}: no evidence");
    }
    let header = [
        "OID", "TYPE", "NAME", "SHA256", "SIZE", "CLASS", "STATE", "EXPIRES", "EVENTS",
    ];
    let cells: Vec<[String; 9]> = rows
        .iter()
        .map(|r| {
            let state = if r.pinned && r.state == "live" {
                "live,pinned".to_string()
            } else {
                r.state.clone()
            };
            let events: Vec<String> = r
                .referenced_by
                .iter()
                .map(|x| format!("{}:{}", x.seq, x.kind))
                .collect();
            [
                r.oid.clone(),
                r.evidence_type.clone(),
                r.name.clone(),
                r.sha256.clone(),
                r.size.to_string(),
                r.retention_class.clone(),
                state,
                r.expires_at.clone().unwrap_or_else(|| "-".into()),
                events.join(","),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s
    };
    let mut out = vec![line(&header.map(String::from))];
    out.extend(cells.iter().map(|r| line(r)));
    out.join("\n")
}

/// Runs `docket evidence list`: exit 0 (also for a task without evidence),
/// 4 for an unknown task, 2 for an unknown type.
pub fn run(ctx: &Ctx, a: &EvidenceListArgs) -> Result<u8> {
    let req = pb::ListEvidenceRequest {
        task_id: a.task.clone(),
        evidence_type: a.evidence_type.clone().unwrap_or_default(),
    };
    let resp = match mode(ctx)? {
        Mode::Embedded(d) => list(&d, &req)?,
        Mode::Remote(r) => r
            .block_on(pb::evidence_client::EvidenceClient::new(r.channel()).list_evidence(req))
            .map_err(|s| client::status_error(&s))?
            .into_inner(),
    };
    let task_id = resp.task_id.clone();
    let rows: Vec<EntryOut> = resp.entries.into_iter().map(entry_out).collect();
    if ctx.out.json {
        for r in &rows {
            ctx.out.emit(r, String::new);
        }
    } else {
        crate::output::write_line(&table(&task_id, &rows));
    }
    Ok(exit::OK)
}
