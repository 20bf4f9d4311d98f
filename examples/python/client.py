#!/usr/bin/env python3
"""Docket client that knows nothing but the .proto files.

Generates the gRPC stubs from ../../proto at run time (grpc_tools.protoc),
signs statements with an ed25519 key from the `cryptography` package as
documented on `SignedStatement` in proto/docket/v1/common.proto, registers a
submitter key and a task, uploads an artifacts directory as evidence, submits
it, reads the verdict, and checks an inclusion proof of the verdict event
against the ledger's signed checkpoint -- all without Docket code.

By default it uses the bundled demo task and passing artifacts
(cli/demo/task.json, cli/demo/pass/), under a fresh task id.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib
import json
import pathlib
import sys
import tempfile
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTO_DIR = ROOT / "proto"
PROTO_FILES = ["common", "ledger", "domain", "retention", "export", "admin"]
UPLOAD_CHUNK = 256 << 10  # the server accepts chunks of up to 1 MiB


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
    mods = {}
    for name in ["common", "domain", "ledger"]:
        mods[name] = importlib.import_module(f"docket.v1.{name}_pb2")
        if name != "common":
            mods[name + "_grpc"] = importlib.import_module(f"docket.v1.{name}_pb2_grpc")
    return mods


def load_key(path: str | None):
    """An ed25519 key from a Docket key file (JSON with a hex `secret`), a
    raw 32-byte seed, or 64 hex characters; a fresh key when path is None."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if path is None:
        return Ed25519PrivateKey.generate()
    data = pathlib.Path(path).read_bytes().strip()
    if data.startswith(b"{"):
        seed = bytes.fromhex(json.loads(data)["secret"])
    elif len(data) == 64:
        seed = bytes.fromhex(data.decode())
    else:
        seed = data
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_bytes(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def signing_message(kind: str, payload: bytes) -> bytes:
    """"docket/v1/" || kind || 0x00 || SHA-256(payload)"""
    return b"docket/v1/" + kind.encode() + b"\x00" + hashlib.sha256(payload).digest()


def sign(common, key, kind: str, payload: bytes):
    """A SignedStatement over the exact payload bytes."""
    return common.SignedStatement(
        kind=kind,
        payload=payload,
        author_public_key=public_bytes(key),
        signature=key.sign(signing_message(kind, payload)),
    )


def doc(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def evidence_type(name: str) -> str:
    """The seed 000 evidence type of an artifact name (as docs/DOMAIN.md)."""
    file = name.rsplit("/", 1)[-1]
    lower = file.lower()
    if file in ("patch.diff", "selftest.log", "report.md", "submit.json"):
        return file
    if "screenshots/" in name and lower.endswith((".png", ".jpg", ".jpeg", ".gif", ".webp")):
        return "screenshot"
    if lower.startswith("stdout") or lower.endswith(".stdout.log"):
        return "stdout"
    if lower.startswith("stderr") or lower.endswith(".stderr.log"):
        return "stderr"
    if lower == "trace.jsonl" or lower.endswith(".trace.jsonl"):
        return "trace"
    if name.startswith("metrics/") or lower == "metrics.json" or lower.endswith(".metrics.json"):
        return "metrics"
    return "other"


def media_type(name: str) -> str:
    ext = name.lower().rsplit(".", 1)[-1] if "." in name else ""
    return {
        "diff": "text/x-diff", "patch": "text/x-diff", "log": "text/plain", "txt": "text/plain",
        "md": "text/markdown", "json": "application/json", "jsonl": "application/x-ndjson",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg",
    }.get(ext, "application/octet-stream")


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def verify_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes) -> bool:
    """RFC 9162 section 2.1.3.2."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def open_checkpoint(note: str, verifier_key: str) -> tuple[int, bytes]:
    """Verifies a C2SP signed note with the ledger's verifier key
    (`<name>+<key id hex>+<base64(0x01 || public key)>`) and returns the tree
    size and root of its tlog-checkpoint body (lines 2 and 3)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    name, key_id, key_b64 = verifier_key.split("+", 2)
    raw = base64.b64decode(key_b64)
    if raw[0] != 1:
        raise ValueError("not an ed25519 verifier key")
    public = Ed25519PublicKey.from_public_bytes(raw[1:])
    body, _, signatures = note.partition("\n\n")
    body += "\n"
    for line in signatures.splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == "\u2014" and parts[1] == name:
            blob = base64.b64decode(parts[2])
            if blob[:4] == bytes.fromhex(key_id):
                public.verify(blob[4:], body.encode())  # raises InvalidSignature
                lines = body.split("\n")
                return int(lines[1]), base64.b64decode(lines[2])
    raise ValueError("no signature by the ledger key on the checkpoint")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--admin-key", help="admin key file (e.g. docket-data/keys/admin.key)")
    parser.add_argument("--key", help="submitter key file (default: a fresh key, registered by --admin-key)")
    parser.add_argument("--task", default=str(ROOT / "cli/demo/task.json"), help="task contract JSON")
    parser.add_argument("--artifacts", default=str(ROOT / "cli/demo/pass"), help="artifacts directory")
    parser.add_argument("--dry-run", action="store_true", help="build and sign, do not connect")
    args = parser.parse_args()

    m = load_stubs()
    common, pb, ledger = m["common"], m["domain"], m["ledger"]
    submitter = load_key(args.key)
    task_id = str(uuid.uuid4())

    task = json.loads(pathlib.Path(args.task).read_text())
    task["task_id"] = task_id
    task_stmt = sign(common, submitter, "task.registered", doc(task))
    root = pathlib.Path(args.artifacts)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    artifacts = [(p.relative_to(root).as_posix(), p.read_bytes()) for p in files]

    if args.dry_run:
        print(f"stubs OK; submitter key {public_bytes(submitter).hex()}; task {task_id}; "
              f"{len(artifacts)} artifacts")
        return

    import grpc

    channel = grpc.insecure_channel(args.server)
    keys = m["domain_grpc"].KeysStub(channel)
    tasks = m["domain_grpc"].TasksStub(channel)
    evidence = m["domain_grpc"].EvidenceStub(channel)
    submissions = m["domain_grpc"].SubmissionsStub(channel)
    verdicts = m["domain_grpc"].VerdictsStub(channel)
    log = m["ledger_grpc"].LedgerStub(channel)

    if args.admin_key:
        admin = load_key(args.admin_key)
        stmt = sign(common, admin, "key.registered",
                    doc({"public_key": public_bytes(submitter).hex(), "roles": ["submitter"],
                         "label": "python example"}))
        print("submitter key registered at seq", keys.RegisterKey(stmt).seq)
    print("task", task_id, "registered at seq", tasks.RegisterTask(task_stmt).seq)

    oids = []
    submit_doc = None
    for name, content in artifacts:
        if name == "submit.json":
            submit_doc = json.loads(content)
            submit_doc["task_id"] = task_id
            content = doc(submit_doc)
        stmt = sign(common, submitter, "evidence.registered", doc({
            "task_id": task_id, "evidence_type": evidence_type(name), "media_type": media_type(name),
            "sha256": hashlib.sha256(content).hexdigest(), "size": len(content), "name": name}))

        def upload(stmt=stmt, content=content):  # header first, then chunks
            yield pb.UploadEvidenceRequest(header=pb.UploadHeader(statement=stmt))
            for i in range(0, len(content), UPLOAD_CHUNK):
                yield pb.UploadEvidenceRequest(chunk=content[i:i + UPLOAD_CHUNK])

        receipt = evidence.Upload(upload())
        oids.append(receipt.oid)
        print(f"evidence {name}: OID {receipt.oid} at seq {receipt.receipt.seq}")
    if submit_doc is None:
        sys.exit("the artifacts directory has no submit.json")

    submit_doc["evidence_oids"] = oids
    stmt = sign(common, submitter, "submission.received", doc(submit_doc))
    response = submissions.Submit(pb.SubmitRequest(statement=stmt, wait_for_verdict=True))
    print("submitted at seq", response.receipt.seq)

    verdict = verdicts.GetVerdict(pb.GetVerdictRequest(task_id=task_id))
    status = pb.VerdictStatus.Name(verdict.status).removeprefix("VERDICT_STATUS_")
    print("verdict:", status, verdict.reason_code)
    proof_ok = False
    if verdict.verdict_seq:
        cp = log.GetCheckpoint(ledger.GetCheckpointRequest())
        size, root_hash = open_checkpoint(cp.note, cp.verifier_key)
        proof = log.GetInclusionProof(ledger.GetInclusionProofRequest(seq=verdict.verdict_seq, tree_size=size))
        event = log.GetEvent(ledger.GetEventRequest(seq=verdict.verdict_seq))
        proof_ok = verify_inclusion(leaf_hash(event.canonical), proof.leaf_index, proof.tree_size,
                                    list(proof.proof), root_hash)
        print(f"verdict event {proof.leaf_index} is in the signed tree of {size}: "
              f"{'verified' if proof_ok else 'NOT verified'}")
    print(json.dumps({"task_id": task_id, "status": status, "reason_code": verdict.reason_code,
                      "proof_verified": proof_ok}))


if __name__ == "__main__":
    main()
