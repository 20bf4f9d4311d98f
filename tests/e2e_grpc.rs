//! End-to-end tests of the gRPC API: real tonic servers on 127.0.0.1 with
//! port 0 (in process, and the `docket` binary), real clients, no mocks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use docket_domain::merkle;
use docket_e2e::{
    ServeProcess, TestServer, demo_files, fresh_key, new_task_id, public_hex, register_key,
    run_docket, sign, sign_bytes, task_contract,
};
use docket_proto::v1 as pb;
use docket_proto::v1::admin_client::AdminClient;
use docket_proto::v1::approvals_client::ApprovalsClient;
use docket_proto::v1::evidence_client::EvidenceClient;
use docket_proto::v1::executions_client::ExecutionsClient;
use docket_proto::v1::keys_client::KeysClient;
use docket_proto::v1::ledger_client::LedgerClient;
use docket_proto::v1::submissions_client::SubmissionsClient;
use docket_proto::v1::tasks_client::TasksClient;
use docket_proto::v1::verdicts_client::VerdictsClient;
use serde_json::json;
use sha2::{Digest as _, Sha256};
use tokio_stream::StreamExt as _;
use tonic::Code;
use tonic::transport::Channel;

fn hash(v: &[u8]) -> merkle::Hash {
    v.try_into().expect("32-byte hash")
}

fn hashes(v: &[Vec<u8>]) -> Vec<merkle::Hash> {
    v.iter().map(|h| hash(h)).collect()
}

async fn checkpoint(ch: &Channel) -> pb::Checkpoint {
    LedgerClient::new(ch.clone())
        .get_checkpoint(pb::GetCheckpointRequest {})
        .await
        .expect("checkpoint")
        .into_inner()
}

/// Tails without follow from `from` to the head.
async fn tail_all(ch: &Channel, from: u64) -> Vec<pb::Event> {
    let mut s = LedgerClient::new(ch.clone())
        .tail(pb::TailRequest {
            from_seq: from,
            follow: false,
        })
        .await
        .expect("tail")
        .into_inner();
    let mut out = Vec::new();
    while let Some(e) = s.message().await.expect("tail message") {
        out.push(e);
    }
    out
}

// ------------------------------------------------------------ health, reflection

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_reflection_answer() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

    let t = TestServer::start().await;
    let ch = t.channel().await;
    let mut health = HealthClient::new(ch.clone());
    for service in [
        "",
        "docket.v1.Ledger",
        "docket.v1.Verdicts",
        "docket.v1.Evidence",
    ] {
        let r = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("health check")
            .into_inner();
        assert_eq!(r.status, ServingStatus::Serving as i32, "{service:?}");
    }

    let mut refl = ServerReflectionClient::new(ch.clone());
    let reqs = vec![
        ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        },
        ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::FileContainingSymbol(
                "docket.v1.Ledger".into(),
            )),
        },
    ];
    let mut answers = refl
        .server_reflection_info(tokio_stream::iter(reqs))
        .await
        .expect("reflection")
        .into_inner();
    let first = answers.next().await.expect("an answer").expect("ok");
    let Some(MessageResponse::ListServicesResponse(list)) = first.message_response else {
        panic!("expected a service list");
    };
    let names: BTreeSet<String> = list.service.into_iter().map(|s| s.name).collect();
    for s in [
        "docket.v1.Ledger",
        "docket.v1.Keys",
        "docket.v1.Tasks",
        "docket.v1.Evidence",
        "docket.v1.Executions",
        "docket.v1.Submissions",
        "docket.v1.Verdicts",
        "docket.v1.Approvals",
        "docket.v1.Retention",
        "docket.v1.Export",
        "docket.v1.Admin",
        "grpc.health.v1.Health",
    ] {
        assert!(names.contains(s), "{s} listed in {names:?}");
    }
    let second = answers.next().await.expect("an answer").expect("ok");
    let Some(MessageResponse::FileDescriptorResponse(fds)) = second.message_response else {
        panic!("expected file descriptors");
    };
    assert!(!fds.file_descriptor_proto.is_empty());

    // The v1alpha service answers too (older grpcurl versions use it).
    use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient as Alpha;
    use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest as AlphaReq;
    let mut alpha = Alpha::new(ch);
    let mut a = alpha
        .server_reflection_info(tokio_stream::iter(vec![
            tonic_reflection::pb::v1alpha::ServerReflectionRequest {
                host: String::new(),
                message_request: Some(AlphaReq::ListServices(String::new())),
            },
        ]))
        .await
        .expect("v1alpha")
        .into_inner();
    assert!(a.next().await.expect("answer").is_ok());
    t.server.shutdown().await.expect("shutdown");
}

// ------------------------------------------------------------ ledger RPCs

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_keys_and_admin_rpcs_succeed() {
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let mut ledger = LedgerClient::new(ch.clone());
    let mut keys = KeysClient::new(ch.clone());

    // Keys.RegisterKey, ListKeys (latest and as of a sequence), RevokeKey.
    let writer = fresh_key();
    let r = keys
        .register_key(sign(
            "key.registered",
            &json!({"public_key": public_hex(&writer), "roles": ["submitter"], "label": "w"}),
            &t.admin,
        ))
        .await
        .expect("register")
        .into_inner();
    assert_eq!(
        (r.seq, r.kind.as_str(), r.duplicate),
        (1, "key.registered", false)
    );
    let listed = keys
        .list_keys(pb::ListKeysRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.keys.len(), 3, "ledger key, admin, writer");
    let w = listed
        .keys
        .iter()
        .find(|k| k.public_key == writer.verifying_key().to_bytes())
        .expect("writer listed");
    assert_eq!(
        (w.roles.clone(), w.label.as_str()),
        (vec!["submitter".to_string()], "w")
    );
    let at_genesis = keys
        .list_keys(pb::ListKeysRequest {
            as_of: Some(pb::AsOf {
                point: Some(pb::as_of::Point::Seq(0)),
            }),
            include_revoked: false,
        })
        .await
        .expect("list as of")
        .into_inner();
    assert_eq!((at_genesis.keys.len(), at_genesis.as_of_seq), (2, 0));

    // Ledger.Append and its idempotent replay.
    let note = sign("x-note", &json!({"n": 1}), &writer);
    let a = ledger
        .append(note.clone())
        .await
        .expect("append")
        .into_inner();
    assert_eq!((a.seq, a.duplicate), (2, false));
    let again = ledger.append(note).await.expect("replay").into_inner();
    assert_eq!((again.seq, again.duplicate), (2, true));
    assert_eq!(again.leaf_hash, a.leaf_hash);

    // Ledger.AppendStream: receipts in order.
    let batch: Vec<pb::SignedStatement> = (10..20)
        .map(|n| sign("x-note", &json!({"n": n}), &writer))
        .collect();
    let mut receipts = ledger
        .append_stream(tokio_stream::iter(batch))
        .await
        .expect("append stream")
        .into_inner();
    let mut seqs = Vec::new();
    while let Some(r) = receipts.message().await.expect("receipt") {
        seqs.push(r.seq);
    }
    assert_eq!(seqs, (3..13).collect::<Vec<_>>());

    // The first rejected statement ends the stream with its status, after
    // the receipts of the statements before it; replays are duplicates.
    let mut forged = sign("x-note", &json!({"n": 100}), &writer);
    forged.signature[5] ^= 0x40;
    let mixed = vec![
        sign("x-note", &json!({"n": 10}), &writer),
        sign("x-note", &json!({"n": 101}), &writer),
        forged,
        sign("x-note", &json!({"n": 102}), &writer),
    ];
    let mut receipts = ledger
        .append_stream(tokio_stream::iter(mixed))
        .await
        .expect("append stream")
        .into_inner();
    let first = receipts.message().await.expect("ok").expect("receipt");
    assert_eq!((first.seq, first.duplicate), (3, true));
    let second = receipts.message().await.expect("ok").expect("receipt");
    assert_eq!((second.seq, second.duplicate), (13, false));
    let end = receipts
        .message()
        .await
        .expect_err("the forged statement ends the call");
    assert_eq!(end.code(), Code::Unauthenticated);
    // Resending everything after the last receipt is safe.
    let resent = ledger
        .append(sign("x-note", &json!({"n": 102}), &writer))
        .await
        .expect("resend")
        .into_inner();
    assert_eq!(
        resent.seq, 14,
        "appended in the stream (a duplicate now) or just now"
    );
    let n = resent.seq + 1;

    // GetEvent: canonical bytes, decoded fields, leaf hash.
    let e = ledger
        .get_event(pb::GetEventRequest { seq: 2 })
        .await
        .expect("event")
        .into_inner();
    assert_eq!(e.kind, "x-note");
    assert_eq!(e.payload, br#"{"n":1}"#);
    assert_eq!(e.leaf_hash, merkle::leaf_hash(&e.canonical).to_vec());
    assert_eq!(e.leaf_hash, a.leaf_hash);

    // Tail without follow: everything, in order.
    let all = tail_all(&ch, 0).await;
    assert_eq!(
        all.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (0..n).collect::<Vec<_>>()
    );
    for w in all.windows(2) {
        assert_eq!(w[1].prev_hash, w[0].leaf_hash, "hash chain");
    }

    // Checkpoint, inclusion and consistency proofs, verified locally.
    let cp = checkpoint(&ch).await;
    assert_eq!(cp.size, n);
    let verifier = docket_domain::checkpoint::NoteVerifier::parse(&cp.verifier_key).expect("vkey");
    let opened = docket_domain::checkpoint::open_note(&cp.note, &verifier).expect("signed");
    assert_eq!(
        (opened.size, opened.root.to_vec()),
        (cp.size, cp.root.clone())
    );
    let p = ledger
        .get_inclusion_proof(pb::GetInclusionProofRequest {
            seq: 5,
            tree_size: 0,
        })
        .await
        .expect("inclusion")
        .into_inner();
    assert_eq!(p.tree_size, n);
    merkle::verify_inclusion(
        &hash(&p.leaf_hash),
        5,
        n,
        &hashes(&p.proof),
        &hash(&cp.root),
    )
    .expect("inclusion verifies");
    let c = ledger
        .get_consistency_proof(pb::GetConsistencyProofRequest {
            old_size: 4,
            new_size: 0,
        })
        .await
        .expect("consistency")
        .into_inner();
    merkle::verify_consistency(
        4,
        n,
        &hash(&c.old_root),
        &hash(&c.new_root),
        &hashes(&c.proof),
    )
    .expect("consistency verifies");

    // Keys.RevokeKey; the revoked key then authors nothing.
    keys.revoke_key(sign(
        "key.revoked",
        &json!({"public_key": public_hex(&writer), "reason": "test"}),
        &t.admin,
    ))
    .await
    .expect("revoke");
    let denied = ledger
        .append(sign("x-note", &json!({"n": 99}), &writer))
        .await
        .expect_err("revoked key");
    assert_eq!(denied.code(), Code::PermissionDenied);

    // Admin.GetStatus.
    let s = AdminClient::new(ch)
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner();
    assert_eq!(s.tree_size, n + 1);
    assert!(s.appended_total >= 13, "{s:?}");
    assert!(s.duplicates_total >= 1 && s.rejected_total >= 1, "{s:?}");
    assert!(
        s.append_rate_per_sec > 0.0 && s.append_latency_p99_us > 0,
        "{s:?}"
    );
    assert!(s.queue_capacity > 0 && s.checkpoint.is_some() && s.auto_verify);
    t.server.shutdown().await.expect("shutdown");
}

// ------------------------------------------------------------ domain RPCs

/// A signed execution record for `task_id`.
fn execution_record(task_id: &str) -> serde_json::Value {
    let rec = docket_verifier::execution::ExecutionRecord::from_execution(
        "cargo test",
        0,
        "test result: ok. 3 passed\n",
        "",
        "2026-02-09T14:29:00Z",
        "2026-02-09T14:29:02Z",
        2.0,
    );
    let mut v = serde_json::to_value(rec).expect("record");
    v["task_id"] = json!(task_id);
    v
}

async fn upload_raw(
    ch: &Channel,
    key: &ed25519_dalek::SigningKey,
    content: &[u8],
) -> pb::EvidenceReceipt {
    let header = pb::UploadEvidenceRequest {
        part: Some(pb::upload_evidence_request::Part::Header(
            docket_cli::server::uploads::signed_header(key, content),
        )),
    };
    let chunk = pb::UploadEvidenceRequest {
        part: Some(pb::upload_evidence_request::Part::Chunk(content.to_vec())),
    };
    EvidenceClient::new(ch.clone())
        .upload(tokio_stream::iter(vec![header, chunk]))
        .await
        .expect("upload without statement")
        .into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domain_rpcs_succeed() {
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let submitter = register_key(&ch, &t.admin, &["submitter"]).await;
    let verifier = register_key(&ch, &t.admin, &["verifier"]).await;
    let approver = register_key(&ch, &t.admin, &["approver"]).await;
    let task_id = new_task_id();

    // Tasks.RegisterTask, GetTask.
    let contract = serde_json::to_vec(&task_contract(&task_id)).expect("json");
    let r = TasksClient::new(ch.clone())
        .register_task(sign_bytes("task.registered", contract.clone(), &submitter))
        .await
        .expect("register task")
        .into_inner();
    let task = TasksClient::new(ch.clone())
        .get_task(pb::GetTaskRequest {
            task_id: task_id.clone(),
            as_of: None,
        })
        .await
        .expect("get task")
        .into_inner();
    assert_eq!(task.contract_json, contract);
    assert_eq!(task.registered_seq, r.seq);
    assert_eq!(task.registered_by, submitter.verifying_key().to_bytes());

    // Evidence: upload without a statement, then Register; GetEvidence;
    // Download.
    let extra = b"extra evidence\n".to_vec();
    let stored = upload_raw(&ch, &submitter, &extra).await;
    assert!(stored.oid.is_empty() && stored.receipt.is_none());
    assert_eq!(stored.sha256, Sha256::digest(&extra).to_vec());
    let payload =
        docket_cli::client::flow::evidence_payload(&task_id, "evidence/extra.txt", &extra);
    let reg = EvidenceClient::new(ch.clone())
        .register(sign_bytes("evidence.registered", payload, &submitter))
        .await
        .expect("register evidence")
        .into_inner();
    assert_eq!(reg.oid.len(), 26, "a ULID");
    let info = EvidenceClient::new(ch.clone())
        .get_evidence(pb::GetEvidenceRequest {
            oid: reg.oid.clone(),
        })
        .await
        .expect("get evidence")
        .into_inner();
    assert_eq!(
        (info.task_id.as_str(), info.size),
        (task_id.as_str(), extra.len() as u64)
    );
    assert_eq!(info.state, pb::EvidenceState::Live as i32);
    let mut dl = EvidenceClient::new(ch.clone())
        .download(pb::DownloadEvidenceRequest {
            oid: reg.oid.clone(),
            allow_redacted: false,
        })
        .await
        .expect("download")
        .into_inner();
    let mut got = Vec::new();
    let mut saw_info = false;
    while let Some(m) = dl.message().await.expect("download message") {
        match m.part {
            Some(pb::download_evidence_response::Part::Info(i)) => {
                saw_info = true;
                assert_eq!(i.oid, reg.oid);
            }
            Some(pb::download_evidence_response::Part::Chunk(c)) => got.extend(c),
            None => {}
        }
    }
    assert!(saw_info);
    assert_eq!(got, extra);

    // Executions.RecordExecution.
    let exec = ExecutionsClient::new(ch.clone())
        .record_execution(sign(
            "execution.recorded",
            &execution_record(&task_id),
            &submitter,
        ))
        .await
        .expect("record execution")
        .into_inner();
    assert_eq!(exec.kind, "execution.recorded");

    // Verdicts.WatchVerdicts from now, for this task.
    let len_now = checkpoint(&ch).await.size;
    let mut watch = VerdictsClient::new(ch.clone())
        .watch_verdicts(pb::WatchVerdictsRequest {
            task_ids: vec![task_id.clone()],
            from_seq: len_now,
        })
        .await
        .expect("watch")
        .into_inner();

    // Submissions.Submit (Evidence.Upload with statements inside): a failing
    // attempt, then a passing one, each auto-verified.
    let (_, fail) = docket_cli::client::flow::submit_artifacts(
        ch.clone(),
        &submitter,
        &task_id,
        &demo_files("fail", &task_id),
        true,
    )
    .await
    .expect("submit failing");
    let fv = fail.verdict.expect("verdict");
    assert_eq!(fv.status, pb::VerdictStatus::Fail as i32);
    assert_eq!(
        (fv.reason_code.as_str(), fv.fail_class.as_str()),
        ("CI_FAILED", "test_failure")
    );
    let (_, pass) = docket_cli::client::flow::submit_artifacts(
        ch.clone(),
        &submitter,
        &task_id,
        &demo_files("pass", &task_id),
        true,
    )
    .await
    .expect("submit passing");
    let pv = pass.verdict.expect("verdict");
    assert_eq!(pv.status, pb::VerdictStatus::Pass as i32, "{pv:?}");
    assert!(!pv.verdict_json.is_empty() && pv.checks.iter().all(|c| c.passed));

    // The watch saw the FAIL verdict, then the PASS verdict, in order.
    let mut statuses = Vec::new();
    let mut last_seq = 0;
    while statuses.last() != Some(&(pb::VerdictStatus::Pass as i32)) {
        let v = tokio::time::timeout(Duration::from_secs(30), watch.message())
            .await
            .expect("watch in time")
            .expect("watch ok")
            .expect("watch open");
        assert!(v.as_of_seq > last_seq, "sequence order");
        last_seq = v.as_of_seq;
        if v.verdict_seq == v.as_of_seq {
            statuses.push(v.status);
        }
    }
    assert_eq!(
        statuses,
        vec![
            pb::VerdictStatus::Fail as i32,
            pb::VerdictStatus::Pass as i32
        ]
    );
    // Resuming right after the FAIL verdict replays from there: the first
    // change is after it, and the PASS verdict comes again, once.
    let mut resumed = VerdictsClient::new(ch.clone())
        .watch_verdicts(pb::WatchVerdictsRequest {
            task_ids: vec![task_id.clone()],
            from_seq: fv.verdict_seq + 1,
        })
        .await
        .expect("resume watch")
        .into_inner();
    let mut replayed = Vec::new();
    loop {
        let v = tokio::time::timeout(Duration::from_secs(30), resumed.message())
            .await
            .expect("in time")
            .expect("ok")
            .expect("open");
        replayed.push(v.as_of_seq);
        if v.as_of_seq == pv.verdict_seq {
            break;
        }
    }
    assert!(replayed[0] > fv.verdict_seq, "{replayed:?}");
    assert!(replayed.windows(2).all(|w| w[0] < w[1]), "{replayed:?}");

    // An external verifier records a check and a verdict; GetVerdict with
    // history; as of the failing verdict.
    let mut verdicts = VerdictsClient::new(ch.clone());
    verdicts
        .record_check(sign(
            "check.recorded",
            &json!({"task_id": task_id, "name": "security_review", "passed": true,
                    "details": {"reviewer": "e2e"}}),
            &verifier,
        ))
        .await
        .expect("record check");
    let mut external: serde_json::Value =
        serde_json::from_slice(&pv.verdict_json).expect("verdict json");
    external["messages"] = json!(["confirmed by an external verifier"]);
    let issued = verdicts
        .issue_verdict(sign("verdict.issued", &external, &verifier))
        .await
        .expect("issue verdict")
        .into_inner();
    let v = verdicts
        .get_verdict(pb::GetVerdictRequest {
            task_id: task_id.clone(),
            as_of: None,
            include_history: true,
        })
        .await
        .expect("get verdict")
        .into_inner();
    assert_eq!(
        (v.status, v.verdict_seq),
        (pb::VerdictStatus::Pass as i32, issued.seq)
    );
    assert_eq!(v.verifier_public_key, verifier.verifying_key().to_bytes());
    assert!(v.history.len() >= 4);
    let check = v
        .checks
        .iter()
        .find(|c| c.name == "security_review")
        .expect("external check");
    assert_eq!(check.details_json, br#"{"reviewer":"e2e"}"#);
    assert_eq!(
        v.state_digest,
        v.history.last().expect("history").after_digest
    );
    let earlier = verdicts
        .get_verdict(pb::GetVerdictRequest {
            task_id: task_id.clone(),
            as_of: Some(pb::AsOf {
                point: Some(pb::as_of::Point::Seq(fv.verdict_seq)),
            }),
            include_history: false,
        })
        .await
        .expect("as of")
        .into_inner();
    assert_eq!(earlier.status, pb::VerdictStatus::Fail as i32);

    // ListVerdicts with paging: a second task, one per page.
    let other = new_task_id();
    TasksClient::new(ch.clone())
        .register_task(sign("task.registered", &task_contract(&other), &submitter))
        .await
        .expect("second task");
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = verdicts
            .list_verdicts(pb::ListVerdictsRequest {
                status: 0,
                as_of: None,
                page_size: 1,
                page_token: token.clone(),
            })
            .await
            .expect("list")
            .into_inner();
        seen.extend(page.verdicts.iter().map(|v| (v.task_id.clone(), v.status)));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let mut expected = vec![
        (task_id.clone(), pb::VerdictStatus::Pass as i32),
        (other.clone(), pb::VerdictStatus::Pending as i32),
    ];
    expected.sort();
    assert_eq!(seen, expected);
    let passing = verdicts
        .list_verdicts(pb::ListVerdictsRequest {
            status: pb::VerdictStatus::Pass as i32,
            ..Default::default()
        })
        .await
        .expect("list pass")
        .into_inner();
    assert_eq!(passing.verdicts.len(), 1);

    // Approvals: request, grant; request, deny.
    let mut approvals = ApprovalsClient::new(ch.clone());
    let request = |scope: &str| {
        json!({"task_id": task_id, "actor": "release-bot", "scope": scope,
               "mutation_mode": "real-repo", "timestamp": "2026-02-09T14:31:00Z"})
    };
    let req1 = approvals
        .request_approval(sign("approval.requested", &request("merge"), &submitter))
        .await
        .expect("request approval")
        .into_inner();
    approvals
        .grant_approval(sign(
            "approval.granted",
            &json!({"task_id": task_id, "request_seq": req1.seq, "actor": "alice",
                    "scope": "merge", "mutation_mode": "real-repo",
                    "timestamp": "2026-02-09T14:32:00Z"}),
            &approver,
        ))
        .await
        .expect("grant");
    let req2 = approvals
        .request_approval(sign(
            "approval.requested",
            &request("deploy:prod"),
            &submitter,
        ))
        .await
        .expect("request approval 2")
        .into_inner();
    approvals
        .deny_approval(sign(
            "approval.denied",
            &json!({"task_id": task_id, "request_seq": req2.seq, "actor": "alice",
                    "scope": "deploy:prod", "mutation_mode": "real-repo",
                    "timestamp": "2026-02-09T14:33:00Z", "reason": "not today"}),
            &approver,
        ))
        .await
        .expect("deny");
    let v = verdicts
        .get_verdict(pb::GetVerdictRequest {
            task_id: task_id.clone(),
            ..Default::default()
        })
        .await
        .expect("verdict with approvals")
        .into_inner();
    let states: BTreeMap<u64, i32> = v
        .approvals
        .iter()
        .map(|a| (a.request_seq, a.state))
        .collect();
    assert_eq!(states[&req1.seq], pb::ApprovalState::Granted as i32);
    assert_eq!(states[&req2.seq], pb::ApprovalState::Denied as i32);

    // Ledger.Append routes a submission through the same checks as Submit.
    let oids: Vec<String> = Vec::new();
    let sub = docket_cli::client::flow::submission_payload(
        &demo_files("pass", &other)
            .into_iter()
            .find(|(n, _)| n == "submit.json")
            .expect("submit.json")
            .1,
        &oids,
    )
    .expect("payload");
    let routed = LedgerClient::new(ch.clone())
        .append(sign_bytes("submission.received", sub, &submitter))
        .await
        .expect("submission through Ledger.Append")
        .into_inner();
    let judged = verdicts
        .get_verdict(pb::GetVerdictRequest {
            task_id: other.clone(),
            ..Default::default()
        })
        .await
        .expect("verdict")
        .into_inner();
    assert_eq!(judged.latest_submission_seq, routed.seq);
    assert_eq!(
        judged.status,
        pb::VerdictStatus::Fail as i32,
        "no evidence: fail closed"
    );
    t.server.shutdown().await.expect("shutdown");
}

// ------------------------------------------------------------ errors

/// Asserts a call failed with `code` and appended nothing.
macro_rules! refused {
    ($t:expr, $code:expr, $call:expr) => {{
        let before = $t.log_len();
        let status = $call.await.expect_err("the call must fail");
        assert_eq!(status.code(), $code, "{status:?}");
        assert_eq!(
            $t.log_len(),
            before,
            "a rejected call appended nothing: {status:?}"
        );
        status
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_code_from_a_real_bad_request_appends_nothing() {
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let submitter = register_key(&ch, &t.admin, &["submitter"]).await;
    let mut ledger = LedgerClient::new(ch.clone());
    let mut keys = KeysClient::new(ch.clone());
    let mut tasks = TasksClient::new(ch.clone());
    let mut evidence = EvidenceClient::new(ch.clone());
    let task_id = new_task_id();
    tasks
        .register_task(sign(
            "task.registered",
            &task_contract(&task_id),
            &submitter,
        ))
        .await
        .expect("task");

    // INVALID_ARGUMENT: a contract breaking several rules lists each one.
    let mut bad = task_contract(&new_task_id());
    bad["task_id"] = json!("not-a-uuid");
    bad["role"] = json!(42);
    bad["pins"] = json!("nope");
    let s = refused!(
        t,
        Code::InvalidArgument,
        tasks.register_task(sign("task.registered", &bad, &submitter))
    );
    let m = s.message();
    assert!(
        m.contains("task_id") && m.contains("role") && m.contains("pins"),
        "{m}"
    );
    // ... a malformed statement (short key, short signature), every problem listed.
    let mut short = sign("x-note", &json!({}), &submitter);
    short.author_public_key.truncate(31);
    short.signature.truncate(10);
    let s = refused!(t, Code::InvalidArgument, ledger.append(short));
    assert!(s.message().contains("author_public_key") && s.message().contains("signature"));
    // ... the wrong kind for a typed RPC.
    refused!(
        t,
        Code::InvalidArgument,
        keys.register_key(sign("x-note", &json!({}), &t.admin))
    );

    // UNAUTHENTICATED: a signature that does not verify.
    let mut forged = sign("x-note", &json!({"n": 1}), &submitter);
    forged.signature[0] ^= 1;
    refused!(t, Code::Unauthenticated, ledger.append(forged));

    // PERMISSION_DENIED: a submitter registering a key; an unknown key.
    refused!(
        t,
        Code::PermissionDenied,
        keys.register_key(sign(
            "key.registered",
            &json!({"public_key": public_hex(&fresh_key()), "roles": ["admin"]}),
            &submitter,
        ))
    );
    refused!(
        t,
        Code::PermissionDenied,
        ledger.append(sign("x-note", &json!({}), &fresh_key()))
    );
    // ... separation of duties: the submitter cannot judge its own task.
    let both = register_key(&ch, &t.admin, &["submitter", "verifier"]).await;
    let own = new_task_id();
    tasks
        .register_task(sign("task.registered", &task_contract(&own), &both))
        .await
        .expect("own task");
    docket_cli::client::flow::submit_artifacts(
        ch.clone(),
        &both,
        &own,
        &demo_files("pass", &own),
        false,
    )
    .await
    .expect("own submission");
    refused!(
        t,
        Code::PermissionDenied,
        VerdictsClient::new(ch.clone()).record_check(sign(
            "check.recorded",
            &json!({"task_id": own, "name": "self_review", "passed": true}),
            &both,
        ))
    );

    // NOT_FOUND: beyond the head; an unknown task; an unknown OID.
    refused!(
        t,
        Code::NotFound,
        ledger.get_event(pb::GetEventRequest { seq: 10_000 })
    );
    refused!(
        t,
        Code::NotFound,
        tasks.get_task(pb::GetTaskRequest {
            task_id: new_task_id(),
            as_of: None,
        })
    );
    refused!(
        t,
        Code::NotFound,
        evidence.get_evidence(pb::GetEvidenceRequest {
            oid: "01KGCV31W0C42YQHMVAT6FSR1H".into(),
        })
    );
    let mut orphan = serde_json::from_slice::<serde_json::Value>(
        &demo_files("pass", &new_task_id())
            .into_iter()
            .find(|(n, _)| n == "submit.json")
            .expect("submit.json")
            .1,
    )
    .expect("json");
    orphan["evidence_oids"] = json!([]);
    refused!(
        t,
        Code::NotFound,
        SubmissionsClient::new(ch.clone()).submit(pb::SubmitRequest {
            statement: Some(sign("submission.received", &orphan, &submitter)),
            ..Default::default()
        })
    );

    // ALREADY_EXISTS: the task id registered again by a different statement;
    // a key registered twice.
    let mut again = task_contract(&task_id);
    again["goal"] = json!("a different goal");
    refused!(
        t,
        Code::AlreadyExists,
        tasks.register_task(sign("task.registered", &again, &submitter))
    );
    refused!(
        t,
        Code::AlreadyExists,
        keys.register_key(sign(
            "key.registered",
            &json!({"public_key": public_hex(&submitter), "roles": ["submitter"], "label": "again"}),
            &t.admin,
        ))
    );

    // FAILED_PRECONDITION: registering evidence whose content was never
    // uploaded; revoking a revoked key.
    let ghost = b"never uploaded".to_vec();
    refused!(
        t,
        Code::FailedPrecondition,
        evidence.register(sign_bytes(
            "evidence.registered",
            docket_cli::client::flow::evidence_payload(&task_id, "ghost.txt", &ghost),
            &submitter,
        ))
    );
    let gone = register_key(&ch, &t.admin, &["auditor"]).await;
    let revoke = json!({"public_key": public_hex(&gone)});
    keys.revoke_key(sign("key.revoked", &revoke, &t.admin))
        .await
        .expect("revoke");
    refused!(
        t,
        Code::FailedPrecondition,
        keys.revoke_key(sign(
            "key.revoked",
            &json!({"public_key": public_hex(&gone), "reason": "twice"}),
            &t.admin
        ))
    );

    // RESOURCE_EXHAUSTED: a payload over the 256 KiB limit; an upload chunk
    // over 1 MiB.
    let big = vec![b'x'; (256 << 10) + 1];
    refused!(
        t,
        Code::ResourceExhausted,
        ledger.append(sign_bytes("x-big", big, &submitter))
    );
    let huge = vec![7u8; (1 << 20) + 1];
    let msgs = vec![
        pb::UploadEvidenceRequest {
            part: Some(pb::upload_evidence_request::Part::Header(
                docket_cli::server::uploads::signed_header(&submitter, &huge),
            )),
        },
        pb::UploadEvidenceRequest {
            part: Some(pb::upload_evidence_request::Part::Chunk(huge)),
        },
    ];
    refused!(
        t,
        Code::ResourceExhausted,
        evidence.upload(tokio_stream::iter(msgs))
    );

    // INVALID_ARGUMENT on upload: content that does not match its digest.
    let content = b"real content".to_vec();
    let msgs = vec![
        pb::UploadEvidenceRequest {
            part: Some(pb::upload_evidence_request::Part::Header(
                pb::UploadHeader {
                    statement: None,
                    expected_sha256: Sha256::digest(b"other content").to_vec(),
                    expected_size: content.len() as u64,
                    uploader_public_key: submitter.verifying_key().to_bytes().to_vec(),
                    upload_signature: docket_cli::server::uploads::sign_upload(
                        &submitter,
                        &Sha256::digest(b"other content").into(),
                        content.len() as u64,
                    )
                    .to_vec(),
                },
            )),
        },
        pb::UploadEvidenceRequest {
            part: Some(pb::upload_evidence_request::Part::Chunk(content)),
        },
    ];
    refused!(
        t,
        Code::InvalidArgument,
        evidence.upload(tokio_stream::iter(msgs))
    );

    // OUT_OF_RANGE: a proof against a tree larger than the log.
    refused!(
        t,
        Code::OutOfRange,
        ledger.get_inclusion_proof(pb::GetInclusionProofRequest {
            seq: 1,
            tree_size: 1_000_000,
        })
    );

    // DATA_LOSS: evidence content altered on disk is refused on download.
    let stored = upload_raw(&ch, &submitter, b"precious bytes").await;
    let reg = evidence
        .register(sign_bytes(
            "evidence.registered",
            docket_cli::client::flow::evidence_payload(&task_id, "precious.txt", b"precious bytes"),
            &submitter,
        ))
        .await
        .expect("register")
        .into_inner();
    let digest = hex::encode(&stored.sha256);
    let blob = t.data().join("blobs").join(&digest[..2]).join(&digest);
    std::fs::write(&blob, b"tampered bytes").expect("tamper");
    let before = t.log_len();
    let mut dl = evidence
        .download(pb::DownloadEvidenceRequest {
            oid: reg.oid,
            allow_redacted: false,
        })
        .await
        .expect("download starts")
        .into_inner();
    let mut failure = None;
    loop {
        match dl.message().await {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(s) => {
                failure = Some(s);
                break;
            }
        }
    }
    assert_eq!(failure.expect("the stream fails").code(), Code::DataLoss);
    assert_eq!(t.log_len(), before);
    t.server.shutdown().await.expect("shutdown");
}

// ------------------------------------------------------------ concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_clients_append_without_loss_and_a_tail_sees_each_once_in_order() {
    const CLIENTS: usize = 64;
    const EACH: usize = 25;
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let writer = register_key(&ch, &t.admin, &["submitter"]).await;
    let start = t.log_len();

    // A live tail from the current head.
    let mut tail = LedgerClient::new(ch.clone())
        .tail(pb::TailRequest {
            from_seq: start,
            follow: true,
        })
        .await
        .expect("tail")
        .into_inner();
    let collector = tokio::spawn(async move {
        let mut events = Vec::new();
        while events.len() < CLIENTS * EACH {
            let e = tokio::time::timeout(Duration::from_secs(60), tail.message())
                .await
                .expect("tail keeps up")
                .expect("tail ok")
                .expect("tail open");
            events.push(e);
        }
        events
    });

    let writer = Arc::new(writer);
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let url = t.url();
        let writer = Arc::clone(&writer);
        tasks.push(tokio::spawn(async move {
            let ch = docket_cli::client::channel(&url).await.expect("connect");
            let mut client = LedgerClient::new(ch);
            let mut seqs = Vec::new();
            for n in 0..EACH {
                let r = client
                    .append(sign("x-load", &json!({"c": c, "n": n}), &writer))
                    .await
                    .expect("append")
                    .into_inner();
                assert!(!r.duplicate);
                seqs.push(r.seq);
            }
            seqs
        }));
    }
    let mut acked = BTreeSet::new();
    for task in tasks {
        for s in task.await.expect("client") {
            assert!(acked.insert(s), "seq {s} acknowledged twice");
        }
    }
    let expected: BTreeSet<u64> = (start..start + (CLIENTS * EACH) as u64).collect();
    assert_eq!(acked, expected, "no loss, no gap");

    let events = collector.await.expect("collector");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        expected.iter().copied().collect::<Vec<_>>(),
        "each once, in order"
    );
    let payloads: BTreeSet<(u64, u64)> = events
        .iter()
        .map(|e| {
            let v: serde_json::Value = serde_json::from_slice(&e.payload).expect("json");
            (v["c"].as_u64().expect("c"), v["n"].as_u64().expect("n"))
        })
        .collect();
    assert_eq!(
        payloads.len(),
        CLIENTS * EACH,
        "every statement exactly once"
    );
    t.server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_keeps_every_acknowledged_append() {
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let writer = Arc::new(register_key(&ch, &t.admin, &["submitter"]).await);
    let mut tasks = Vec::new();
    for c in 0..8 {
        let ch = ch.clone();
        let writer = Arc::clone(&writer);
        tasks.push(tokio::spawn(async move {
            let mut client = LedgerClient::new(ch);
            let mut acked = Vec::new();
            for n in 0..10_000 {
                match client
                    .append(sign("x-load", &json!({"c": c, "n": n}), &writer))
                    .await
                {
                    Ok(r) => acked.push((r.get_ref().seq, r.get_ref().leaf_hash.clone())),
                    Err(_) => break,
                }
            }
            acked
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let data = t.data();
    let TestServer { server, dir, .. } = t;
    server.shutdown().await.expect("graceful shutdown");
    let mut acked = Vec::new();
    for task in tasks {
        acked.extend(task.await.expect("client"));
    }
    assert!(!acked.is_empty());
    let ledger = docket_domain::Ledger::open(&data, docket_domain::LedgerOptions::default())
        .expect("reopen");
    for (seq, leaf) in &acked {
        assert_eq!(
            ledger
                .leaf_hash(*seq)
                .expect("acknowledged event is durable")
                .to_vec(),
            *leaf
        );
    }
    ledger.close().expect("close");
    drop(dir);
}

// ------------------------------------------------------------ restart mid-tail

#[test]
fn a_tail_resumes_by_sequence_across_a_server_restart() {
    use docket_cli::backend::Backend as _;
    use docket_cli::server::{BackgroundServer, ServeOptions};

    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("ledger");
    let first = BackgroundServer::start(ServeOptions::new(&data, docket_e2e::loopback0()))
        .expect("first server");
    let addr = first.addr;
    let url = first.url();
    let admin =
        docket_domain::keys::read_key_file(&first.init().expect("initialised").admin_key_path)
            .expect("admin key");
    let remote = docket_cli::client::Remote::connect(&url).expect("client");
    let writer = fresh_key();
    remote
        .append(docket_domain::Statement::sign(
            "key.registered",
            json!({"public_key": public_hex(&writer), "roles": ["submitter"]})
                .to_string()
                .into_bytes(),
            &admin,
        ))
        .expect("register writer");
    let append = |remote: &docket_cli::client::Remote, n: u64| {
        remote
            .append(docket_domain::Statement::sign(
                "x-tick",
                json!({"n": n}).to_string().into_bytes(),
                &writer,
            ))
            .expect("append")
    };
    for n in 0..20 {
        append(&remote, n);
    }
    let total: u64 = 2 + 40 + 20; // genesis, key, 20 + 20 + 20 ticks

    // A following tail in its own thread, through the CLI's gRPC backend.
    let tail_url = url.clone();
    let tail = std::thread::spawn(move || {
        let client = docket_cli::client::Remote::connect(&tail_url).expect("tail client");
        let mut seqs = Vec::new();
        client
            .tail(0, true, &mut |e| {
                seqs.push(e.seq);
                (seqs.len() as u64) < total
            })
            .expect("tail survives the restart");
        seqs
    });
    std::thread::sleep(Duration::from_millis(300));
    for n in 20..40 {
        append(&remote, n);
    }
    std::thread::sleep(Duration::from_millis(200));

    // Restart on the same address; the tail resumes from its last seq + 1.
    // An idle client whose runtime nobody drives cannot answer the
    // server's shutdown handshake; drop it (the grace period would cut it).
    drop(remote);
    let t0 = std::time::Instant::now();
    first.shutdown().expect("graceful shutdown");
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    let second = BackgroundServer::start(ServeOptions::new(&data, addr)).expect("second server");
    let remote = docket_cli::client::Remote::connect(&second.url()).expect("client 2");
    for n in 40..60 {
        append(&remote, n);
    }
    let seqs = tail.join().expect("tail thread");
    assert_eq!(seqs, (0..total).collect::<Vec<_>>(), "no gap, no duplicate");
    drop(remote);
    second.shutdown().expect("shutdown");
}

// ------------------------------------------------------------ the binary

#[test]
fn serve_on_an_empty_directory_creates_the_layout_store_names() {
    for (flags, made, not_made) in [
        (&["--store", "sled"][..], "log", "tiles"),
        (&[][..], "tiles", "log"),
    ] {
        // Given an empty directory, when `docket serve` starts on it with
        // `flags` and gets SIGTERM straight after its `listening on` line
        // (it watches the signal before printing that line: a clean stop,
        // exit 0, never the signal's default action),
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("ledger");
        let serve = ServeProcess::start(&data, flags);
        assert!(
            serve.stdout_head.iter().any(|l| l.contains("admin key")),
            "it initialised the ledger: {:?}",
            serve.stdout_head
        );
        assert_eq!(serve.terminate(), 0);
        // then the ledger it made is in the layout `--store` names, and
        // verifies.
        assert!(data.join(made).is_dir(), "{flags:?}: {made}/ made");
        assert!(!data.join(not_made).exists(), "{flags:?}: no {not_made}/");
        let (code, out, err) = run_docket(&[
            "--data",
            data.to_str().expect("utf-8"),
            "replay",
            "--verify",
        ]);
        assert_eq!(code, 0, "{flags:?}: {out}{err}");
    }
}

#[test]
fn cli_over_grpc_matches_embedded_output_and_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("ledger");
    let data_s = data.to_str().expect("utf-8").to_string();
    let serve = ServeProcess::start(&data, &[]);
    assert!(
        serve.stdout_head.iter().any(|l| l.contains("admin key")),
        "first start says where the admin key is: {:?}",
        serve.stdout_head
    );
    let url = serve.url();
    let admin_key = data.join("keys/admin.key");
    let payload = dir.path().join("note.json");
    std::fs::write(&payload, br#"{"hello":"grpc"}"#).expect("payload");
    let (code, out, err) = run_docket(&[
        "--server",
        &url,
        "--json",
        "log",
        "append",
        "--key",
        admin_key.to_str().expect("utf-8"),
        "--kind",
        "x-note",
        "--payload",
        payload.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("\"seq\":1"), "{out}");

    // bench-load against the server: bounded, prints a report.
    let (code, out, err) = run_docket(&[
        "--server",
        &url,
        "--json",
        "bench-load",
        "--key",
        admin_key.to_str().expect("utf-8"),
        "--clients",
        "4",
        "--seconds",
        "1",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(out.trim()).expect("report JSON");
    assert!(report["appends"].as_u64().expect("appends") > 0, "{report}");
    assert!(report["p99_us"].as_u64().is_some());

    // `prove` verifies against a trust anchor: pin the same key in both
    // modes (embedded would otherwise use ledger.json, remote the key the
    // server states, and say so).
    let (code, vkey, err) = run_docket(&["--server", &url, "checkpoint", "--vkey"]);
    assert_eq!(code, 0, "{err}");
    let vkey = vkey.trim().to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["log", "show", "1"],
        vec!["log", "show", "999999"],
        vec!["log", "tail", "--from", "0"],
        vec!["log", "tail", "--from", "999999"],
        vec![
            "prove",
            "inclusion",
            "1",
            "--size",
            "3",
            "--trusted-key",
            &vkey,
        ],
        vec![
            "prove",
            "inclusion",
            "1",
            "--size",
            "999999",
            "--trusted-key",
            &vkey,
        ],
        vec![
            "prove",
            "inclusion",
            "5",
            "--size",
            "3",
            "--trusted-key",
            &vkey,
        ],
        vec!["prove", "consistency", "2", "3", "--trusted-key", &vkey],
        vec!["prove", "consistency", "3", "2", "--trusted-key", &vkey],
        vec!["checkpoint", "--vkey"],
    ];
    let remote = run_in_both_formats(&["--server", url.as_str()], &commands);
    assert_eq!(serve.terminate(), 0, "SIGTERM: graceful exit 0");
    let embedded = run_in_both_formats(&["--data", data_s.as_str()], &commands);
    assert_modes_agree(&commands, &remote, &embedded, true);
}

/// Runs every command in `commands` after `mode` (`--server URL` or `--data
/// DIR`), first with human output then with `--json`.
fn run_in_both_formats(mode: &[&str], commands: &[Vec<&str>]) -> Vec<(i32, String, String)> {
    let mut results = Vec::new();
    for c in commands {
        for json_flag in [false, true] {
            let mut args = mode.to_vec();
            if json_flag {
                args.push("--json");
            }
            args.extend(c.iter().copied());
            results.push(run_docket(&args));
        }
    }
    results
}

/// `--server` and embedded runs of the same commands gave the same exit
/// codes and stdout (and, with `compare_errors`, the same error text).
fn assert_modes_agree(
    commands: &[Vec<&str>],
    remote: &[(i32, String, String)],
    embedded: &[(i32, String, String)],
    compare_errors: bool,
) {
    let runs = commands
        .iter()
        .flat_map(|c| [(c, false), (c, true)])
        .zip(remote.iter().zip(embedded));
    for ((c, json_flag), ((rcode, rout, rerr), (code, out, err))) in runs {
        assert_eq!(
            code, rcode,
            "exit code of {c:?} (json {json_flag}): {err} / {rerr}"
        );
        assert_eq!(out, rout, "output of {c:?} (json {json_flag})");
        if compare_errors && *code != 0 {
            assert_eq!(
                err.trim_start_matches("error: "),
                rerr.trim_start_matches("error: "),
                "error of {c:?}"
            );
        }
    }
}

#[test]
fn demo_runs_end_to_end() {
    let (code, out, err) = run_docket(&["--json", "demo"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("demo JSON");
    assert_eq!(v["fail_verdict"]["status"], "FAIL", "{v}");
    assert_eq!(v["pass_verdict"]["status"], "PASS", "{v}");
    assert_eq!(v["proof_verified"], true, "{v}");
}

// ------------------------------------------------------------ Python client

#[test]
fn python_client_with_only_the_proto_submits_and_reads_a_verdict() {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import grpc, grpc_tools, cryptography"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        println!(
            "note: skipping the Python client test (needs python3 with grpcio, grpcio-tools and cryptography)"
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("ledger");
    let serve = ServeProcess::start(&data, &[]);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = root.join("examples/python/client.py");
    for (artifacts, status, reason) in [("pass", "PASS", ""), ("fail", "FAIL", "CI_FAILED")] {
        let out = std::process::Command::new("python3")
            .arg(&script)
            .args(["--server", &serve.addr.to_string()])
            .arg("--admin-key")
            .arg(data.join("keys/admin.key"))
            .arg("--artifacts")
            .arg(root.join("cli/demo").join(artifacts))
            .output()
            .expect("run the Python client");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let last = stdout.lines().last().expect("output");
        let v: serde_json::Value = serde_json::from_str(last).expect("final JSON line");
        assert_eq!(v["status"], status, "{stdout}");
        assert_eq!(v["reason_code"], reason, "{stdout}");
        assert_eq!(v["proof_verified"], true, "{stdout}");
    }
    assert_eq!(serve.terminate(), 0);
}

// ------------------------------------------------------------ retention, export

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_and_export_rpcs_succeed() {
    use docket_proto::v1::export_client::ExportClient;
    use docket_proto::v1::retention_client::RetentionClient;

    let t = TestServer::start().await;
    let ch = t.channel().await;
    let submitter = register_key(&ch, &t.admin, &["submitter"]).await;
    let custodian = register_key(&ch, &t.admin, &["custodian"]).await;
    let task_id = new_task_id();
    TasksClient::new(ch.clone())
        .register_task(sign(
            "task.registered",
            &task_contract(&task_id),
            &submitter,
        ))
        .await
        .expect("task");
    let (oids, _) = docket_cli::client::flow::submit_artifacts(
        ch.clone(),
        &submitter,
        &task_id,
        &demo_files("pass", &task_id),
        true,
    )
    .await
    .expect("submit");
    let mut retention = RetentionClient::new(ch.clone());

    // SetPolicy, Pin, Unpin, Reclassify.
    retention
        .set_policy(sign(
            "retention.policy_set",
            &json!({"routine_days": 30, "high_impact_days": 120}),
            &t.admin,
        ))
        .await
        .expect("set policy");
    retention
        .pin(sign(
            "retention.pinned",
            &json!({"oid": oids[0], "reason": "legal hold"}),
            &custodian,
        ))
        .await
        .expect("pin");
    retention
        .unpin(sign(
            "retention.unpinned",
            &json!({"oid": oids[0]}),
            &custodian,
        ))
        .await
        .expect("unpin");
    retention
        .reclassify(sign(
            "retention.reclassified",
            &json!({"oid": oids[1], "class": "high_impact"}),
            &custodian,
        ))
        .await
        .expect("reclassify");
    let info = EvidenceClient::new(ch.clone())
        .get_evidence(pb::GetEvidenceRequest {
            oid: oids[1].clone(),
        })
        .await
        .expect("evidence")
        .into_inner();
    assert_eq!(info.retention_class, "high_impact");
    assert!(info.expires_at_unix_ms > info.registered_at_unix_ms);

    // GetStatus.
    let status = retention
        .get_status(pb::GetRetentionStatusRequest::default())
        .await
        .expect("status")
        .into_inner();
    assert!(!status.policy_json.is_empty());
    let live: u64 = status.classes.iter().map(|c| c.live_count).sum();
    assert_eq!(live, oids.len() as u64);

    // Sweep (dry run: nothing is due yet, nothing appended).
    let before = t.log_len();
    let sweep = retention
        .sweep(pb::SweepRequest {
            statement: Some(sign("retention.sweep", &json!({}), &custodian)),
            dry_run: true,
        })
        .await
        .expect("sweep")
        .into_inner();
    assert!(sweep.dry_run && sweep.expired_oids.is_empty() && sweep.receipts.is_empty());
    assert_eq!(t.log_len(), before);
    // A real sweep records its statement.
    let sweep = retention
        .sweep(pb::SweepRequest {
            statement: Some(sign("retention.sweep", &json!({"note": "e2e"}), &custodian)),
            dry_run: false,
        })
        .await
        .expect("sweep")
        .into_inner();
    assert_eq!(sweep.receipts.len(), 1);
    assert_eq!(sweep.receipts[0].kind, "retention.sweep");

    // Redact: store the redacted content, then the statement; the original
    // is refused, the redacted version downloads with allow_redacted.
    let report = demo_files("pass", &task_id)
        .into_iter()
        .find(|(n, _)| n == "report.md")
        .expect("report.md")
        .1;
    let report_oid = {
        let names = demo_files("pass", &task_id);
        let i = names
            .iter()
            .position(|(n, _)| n == "report.md")
            .expect("report.md");
        oids[i].clone()
    };
    let redacted = b"# Report\n[REDACTED]\n".to_vec();
    upload_raw(&ch, &t.admin, &redacted).await;
    retention
        .redact(sign(
            "retention.redacted",
            &json!({
                "oid": report_oid,
                "original_sha256": hex::encode(Sha256::digest(&report)),
                "redacted_sha256": hex::encode(Sha256::digest(&redacted)),
                "redacted_size": redacted.len(),
                "reason": "personal data",
            }),
            &custodian,
        ))
        .await
        .expect("redact");
    let mut evidence = EvidenceClient::new(ch.clone());
    let refused = evidence
        .download(pb::DownloadEvidenceRequest {
            oid: report_oid.clone(),
            allow_redacted: false,
        })
        .await
        .expect_err("the original is gone");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    let mut dl = evidence
        .download(pb::DownloadEvidenceRequest {
            oid: report_oid.clone(),
            allow_redacted: true,
        })
        .await
        .expect("redacted download")
        .into_inner();
    let mut got = Vec::new();
    while let Some(m) = dl.message().await.expect("chunk") {
        if let Some(pb::download_evidence_response::Part::Chunk(c)) = m.part {
            got.extend(c);
        }
    }
    assert_eq!(got, redacted);

    // Export the task's verdict chain; the streamed files audit clean
    // against the ledger's verifier key.
    let cp = checkpoint(&ch).await;
    let out = t.dir.path().join("bundle");
    let files = docket_cli::server::demo::download_export(ch.clone(), &task_id, &out)
        .await
        .expect("export");
    assert!(files >= 3, "{files} files");
    assert!(out.join("manifest.json").exists());
    assert!(docket_cli::server::demo::audit_dir(&out, &cp.verifier_key).expect("audit"));
    // The last chunk of each file carries its SHA-256; the manifest comes last.
    let mut stream = ExportClient::new(ch.clone())
        .export_bundle(pb::ExportRequest::default())
        .await
        .expect("whole-log export")
        .into_inner();
    let mut last_path = String::new();
    while let Some(c) = stream.message().await.expect("chunk") {
        if c.last {
            assert_eq!(c.sha256.len(), 32);
        }
        last_path = c.path;
    }
    assert_eq!(last_path, "manifest.json");
    let bad = ExportClient::new(ch)
        .export_bundle(pb::ExportRequest {
            format: "zip".into(),
            ..Default::default()
        })
        .await
        .expect_err("unknown format");
    assert_eq!(bad.code(), Code::InvalidArgument);
    t.server.shutdown().await.expect("shutdown");
}

#[test]
fn the_grpc_backend_fetches_an_export_that_audits_clean() {
    use docket_cli::backend::Backend as _;
    use docket_cli::server::{BackgroundServer, ServeOptions};

    let dir = tempfile::tempdir().expect("tempdir");
    let server = BackgroundServer::start(ServeOptions::new(
        dir.path().join("ledger"),
        docket_e2e::loopback0(),
    ))
    .expect("server");
    let remote = docket_cli::client::Remote::connect(&server.url()).expect("client");
    let vkey = remote.checkpoint().expect("checkpoint").verifier_key;
    let (files, report) = remote
        .export_files(pb::ExportRequest::default())
        .expect("export over gRPC");
    assert!(files.contains_key("manifest.json"), "{:?}", files.keys());
    // The server's report: what an embedded export prints.
    let report = report.expect("the server sends its export report");
    assert_eq!(
        report["files"].as_u64(),
        Some(files.len() as u64),
        "{report}"
    );
    let out = dir.path().join("bundle");
    docket_domain::export::bundle::write_dir(&out, &files).expect("write bundle");
    assert!(docket_cli::server::demo::audit_dir(&out, &vkey).expect("audit"));
    // The same through the command line: `export --server`, then an offline
    // `audit` against the trusted key.
    let cli_out = dir.path().join("cli-bundle.tar");
    let cli_out_s = cli_out.to_str().expect("utf-8");
    let (code, _, err) =
        docket_e2e::run_docket(&["--server", &server.url(), "export", cli_out_s, "--tar"]);
    assert_eq!(code, 0, "export --server: {err}");
    let (code, out, err) = docket_e2e::run_docket(&["audit", cli_out_s, "--trusted-key", &vkey]);
    assert_eq!(code, 0, "audit of a --server export: {out} {err}");
    let (code, _, _) = docket_e2e::run_docket(&["--server", &server.url(), "export", cli_out_s]);
    assert_eq!(code, 2, "an export never overwrites");
    drop(remote);
    server.shutdown().expect("shutdown");
}

#[test]
fn domain_cli_over_grpc_matches_embedded() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/demo");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("ledger");
    let data_s = data.to_str().expect("utf-8").to_string();
    let admin = data.join("keys/admin.key");
    let sub = dir.path().join("submitter.key");
    let p = |x: &std::path::Path| x.to_str().expect("utf-8").to_string();
    let serve = ServeProcess::start(&data, &[]);
    let url = serve.url();
    let (code, public, err) = run_docket(&["keygen", "--out", &p(&sub)]);
    assert_eq!(code, 0, "{err}");
    let writes: Vec<(Vec<String>, i32)> = vec![
        (
            vec![
                "key",
                "add",
                public.trim(),
                "--role",
                "submitter",
                "--key",
                &p(&admin),
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            0,
        ),
        (
            vec![
                "task",
                "register",
                &p(&root.join("task.json")),
                "--key",
                &p(&sub),
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            0,
        ),
        (
            vec!["submit", &p(&root.join("fail")), "--key", &p(&sub)]
                .into_iter()
                .map(String::from)
                .collect(),
            5,
        ),
        (
            vec!["submit", &p(&root.join("pass")), "--key", &p(&sub)]
                .into_iter()
                .map(String::from)
                .collect(),
            0,
        ),
    ];
    for (args, want) in &writes {
        let mut full = vec!["--server", url.as_str()];
        full.extend(args.iter().map(String::as_str));
        let (code, out, err) = run_docket(&full);
        assert_eq!(code, *want, "{args:?}: {out}{err}");
    }
    let task = "72c84e9c-0975-4c1a-b9a5-864c2725dc8a";
    let unknown = "00000000-0000-4000-8000-000000000000";
    let reads: Vec<Vec<&str>> = vec![
        vec!["verdict", "show", task],
        vec!["verdict", "show", task, "--history"],
        vec!["verdict", "show", task, "--as-of", "12"],
        vec!["verdict", "show", unknown],
        vec!["verdict", "list"],
        vec!["key", "list"],
        vec!["key", "list", "--all"],
        vec!["task", "show", task],
        vec!["task", "show", unknown],
    ];
    let remote = run_in_both_formats(&["--server", url.as_str()], &reads);
    assert_eq!(serve.terminate(), 0);
    let embedded = run_in_both_formats(&["--data", data_s.as_str()], &reads);
    assert_modes_agree(&reads, &remote, &embedded, false);
}

// ------------------------------------------------------------ TLS

/// Writes a test CA, a server certificate for 127.0.0.1/localhost and a
/// client certificate with `openssl`; None when openssl is unavailable.
fn test_pki(dir: &std::path::Path) -> Option<()> {
    let run = |args: &[&str]| {
        std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| ())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=docket test CA",
    ]);
    run(&ca)?;
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .ok()?;
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").ok()?;
    for (name, cn) in [("server", "/CN=localhost"), ("client", "/CN=docket client")] {
        let key = format!("{name}.key");
        let csr = format!("{name}.csr");
        let pem = format!("{name}.pem");
        let ext = format!("{name}.ext");
        let mut req = vec!["req"];
        req.extend(ec);
        req.extend(["-keyout", key.as_str(), "-out", csr.as_str(), "-subj", cn]);
        run(&req)?;
        run(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            &ext,
        ])?;
    }
    Some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_serves_only_clients_with_a_certificate() {
    use docket_cli::client::{ClientTls, channel_with};
    use docket_cli::server::config::TlsFiles;

    let pki = tempfile::tempdir().expect("tempdir");
    if test_pki(pki.path()).is_none() {
        println!("note: skipping the TLS test (needs the openssl command)");
        return;
    }
    let p = |n: &str| pki.path().join(n);
    let t = TestServer::start_with(|o| {
        o.tls = Some(TlsFiles {
            cert: p("server.pem"),
            key: p("server.key"),
            client_ca: Some(p("ca.pem")),
        });
    })
    .await;
    let url = t.url();
    assert!(url.starts_with("https://"), "{url}");
    let read = |n: &str| std::fs::read(p(n)).expect("pem");
    let good = ClientTls {
        ca_pem: Some(read("ca.pem")),
        identity_pem: Some((read("client.pem"), read("client.key"))),
        domain: Some("localhost".into()),
    };
    let ch = channel_with(&url, Some(&good)).await.expect("mTLS connect");
    let cp = checkpoint(&ch).await;
    assert_eq!(cp.size, 1);
    let writer = register_key(&ch, &t.admin, &["submitter"]).await;
    LedgerClient::new(ch)
        .append(sign("x-note", &json!({"tls": true}), &writer))
        .await
        .expect("append over mTLS");

    // Without a client certificate, and in plaintext, nothing gets through.
    let anonymous = ClientTls {
        identity_pem: None,
        ..good.clone()
    };
    let refused = match channel_with(&url, Some(&anonymous)).await {
        Err(_) => true,
        Ok(ch) => LedgerClient::new(ch)
            .get_checkpoint(pb::GetCheckpointRequest {})
            .await
            .is_err(),
    };
    assert!(refused, "a client without a certificate is refused");
    let plain = url.replace("https://", "http://");
    let refused = match channel_with(&plain, None).await {
        Err(_) => true,
        Ok(ch) => LedgerClient::new(ch)
            .get_checkpoint(pb::GetCheckpointRequest {})
            .await
            .is_err(),
    };
    assert!(refused, "plaintext is refused");
    let before = t.log_len();
    assert_eq!(before, 3);
    t.server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_token_protects_reads_but_not_signed_writes() {
    use docket_cli::client::Auth;
    use tonic::service::interceptor::InterceptedService;

    let t = TestServer::start_with(|o| o.read_token = Some("s3cret".into())).await;
    let ch = t.channel().await;
    // Writes are authenticated by their signatures.
    let writer = register_key(&ch, &t.admin, &["submitter"]).await;
    LedgerClient::new(ch.clone())
        .append(sign("x-note", &json!({}), &writer))
        .await
        .expect("a signed write needs no token");
    // Reads need the token.
    let denied = LedgerClient::new(ch.clone())
        .get_event(pb::GetEventRequest { seq: 0 })
        .await
        .expect_err("no token");
    assert_eq!(denied.code(), Code::Unauthenticated);
    let wrong = InterceptedService::new(ch.clone(), Auth::token(Some("nope")).expect("auth"));
    let denied = LedgerClient::new(wrong)
        .tail(pb::TailRequest {
            from_seq: 0,
            follow: false,
        })
        .await
        .expect_err("wrong token");
    assert_eq!(denied.code(), Code::Unauthenticated);
    let right = InterceptedService::new(ch, Auth::token(Some("s3cret")).expect("auth"));
    let e = LedgerClient::new(right)
        .get_event(pb::GetEventRequest { seq: 0 })
        .await
        .expect("with the token")
        .into_inner();
    assert_eq!(e.kind, "ledger.genesis");
    t.server.shutdown().await.expect("shutdown");
}
