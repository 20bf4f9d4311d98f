#!/usr/bin/env python3
"""Minimal Docket client that knows nothing but the .proto files.

Generates the gRPC stubs from ../../proto at run time (grpc_tools.protoc),
signs statements with an ed25519 key from the `cryptography` package as
documented on `SignedStatement` in proto/docket/v1/common.proto, submits work
for a task and reads the verdict.

The JSON payload shapes below are illustrative; the authoritative schemas are
in docs/FORMAT.md.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import pathlib
import sys
import tempfile
import uuid

PROTO_DIR = pathlib.Path(__file__).resolve().parents[2] / "proto"
PROTO_FILES = ["common", "ledger", "domain", "retention", "export", "admin"]


def load_stubs():
    """Compile docket/v1/*.proto into a temp dir and import the modules."""
    import grpc_tools
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="docket-stubs-")
    wkt = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    args = ["protoc", f"-I{PROTO_DIR}", f"-I{wkt}", f"--python_out={out}", f"--grpc_python_out={out}"]
    args += [f"docket/v1/{name}.proto" for name in PROTO_FILES]
    if protoc.main(args) != 0:
        sys.exit("stub generation failed")
    sys.path.insert(0, out)
    pb = importlib.import_module("docket.v1.domain_pb2")
    common = importlib.import_module("docket.v1.common_pb2")
    ledger = importlib.import_module("docket.v1.ledger_pb2")
    grpc_domain = importlib.import_module("docket.v1.domain_pb2_grpc")
    grpc_ledger = importlib.import_module("docket.v1.ledger_pb2_grpc")
    return common, pb, ledger, grpc_domain, grpc_ledger


def load_key(path: str | None):
    """An ed25519 key: 32-byte raw seed, or 64 hex chars, or a fresh one."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if path is None:
        return Ed25519PrivateKey.generate()
    data = pathlib.Path(path).read_bytes().strip()
    seed = bytes.fromhex(data.decode()) if len(data) == 64 else data
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_bytes(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def signing_message(kind: str, payload: bytes) -> bytes:
    """"docket/v1/" || kind || 0x00 || SHA-256(payload)"""
    return b"docket/v1/" + kind.encode() + b"\x00" + hashlib.sha256(payload).digest()


def sign(common, key, kind: str, document: dict):
    payload = json.dumps(document, separators=(",", ":")).encode()
    return common.SignedStatement(
        kind=kind,
        payload=payload,
        author_public_key=public_bytes(key),
        signature=key.sign(signing_message(kind, payload)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--admin-key", help="admin seed file (registers the submitter key)")
    parser.add_argument("--key", help="submitter seed file (default: a fresh key)")
    parser.add_argument("--diff", default=None, help="patch.diff to submit as evidence")
    parser.add_argument("--dry-run", action="store_true", help="build and sign, do not connect")
    args = parser.parse_args()

    common, pb, ledger, grpc_domain, grpc_ledger = load_stubs()
    submitter = load_key(args.key)
    task_id = str(uuid.uuid4())
    diff = pathlib.Path(args.diff).read_bytes() if args.diff else b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"

    key_stmt = None
    if args.admin_key:
        admin = load_key(args.admin_key)
        key_stmt = sign(common, admin, "key.registered",
                        {"public_key": public_bytes(submitter).hex(), "roles": ["submitter"]})
    task_stmt = sign(common, submitter, "task.registered", {
        "task_id": task_id, "goal": "example", "role": "builder",
        "pins": {"allowed_paths": ["x"], "forbidden_paths": []}, "files": ["x"], "context": {},
        "acceptance": {"required_evidence": ["patch.diff"]}, "retention_class": "routine"})
    evidence_stmt = sign(common, submitter, "evidence.registered", {
        "task_id": task_id, "evidence_type": "patch.diff", "media_type": "text/x-diff",
        "sha256": hashlib.sha256(diff).hexdigest(), "size": len(diff)})

    if args.dry_run:
        print(f"stubs OK; submitter key {public_bytes(submitter).hex()}; task {task_id}")
        print(task_stmt)
        return

    import grpc

    channel = grpc.insecure_channel(args.server)
    keys = grpc_domain.KeysStub(channel)
    tasks = grpc_domain.TasksStub(channel)
    evidence = grpc_domain.EvidenceStub(channel)
    submissions = grpc_domain.SubmissionsStub(channel)
    verdicts = grpc_domain.VerdictsStub(channel)
    log = grpc_ledger.LedgerStub(channel)

    if key_stmt is not None:
        print("key registered at seq", keys.RegisterKey(key_stmt).seq)
    print("task registered at seq", tasks.RegisterTask(task_stmt).seq)

    def upload():  # first message: header with the signed statement, then chunks
        yield pb.UploadEvidenceRequest(header=pb.UploadHeader(statement=evidence_stmt))
        for i in range(0, len(diff), 1 << 20):
            yield pb.UploadEvidenceRequest(chunk=diff[i:i + (1 << 20)])

    oid = evidence.Upload(upload()).oid
    print("evidence OID", oid)

    submit_stmt = sign(common, submitter, "submission.received", {
        "schema": "scc.submit.v1", "task_id": task_id, "artifacts": {"patch.diff": oid}})
    response = submissions.Submit(pb.SubmitRequest(statement=submit_stmt, wait_for_verdict=True))
    print("submitted at seq", response.receipt.seq)

    verdict = verdicts.GetVerdict(pb.GetVerdictRequest(task_id=task_id))
    print("verdict:", pb.VerdictStatus.Name(verdict.status), verdict.reason_code)
    if verdict.verdict_seq:
        proof = log.GetInclusionProof(ledger.GetInclusionProofRequest(seq=verdict.verdict_seq))
        print(f"verdict event {proof.leaf_index} is in tree {proof.tree_size}, "
              f"root {proof.root_hash.hex()}, {len(proof.proof)} proof hashes")


if __name__ == "__main__":
    main()
