#!/usr/bin/env python3
"""Runs the independent pieces (docket_spec.py, verify_bundle.py) against
tests/vectors/ and prints PASS/FAIL per vector. Exit 0 iff all pass.

    python3 tests/independent/check_vectors.py [-v]
"""
from __future__ import annotations

import base64
import json
import os
import struct
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import docket_spec as ds  # noqa: E402
import verify_bundle as vb  # noqa: E402
import admission as ad  # noqa: E402

V = os.path.join(HERE, "..", "vectors")
RESULTS = []
VERBOSE = "-v" in sys.argv


def report(group, name, ok, detail=""):
    if ok is None:  # not checked
        print(f"SKIP  {group}/{name}  -- {detail}")
        return
    RESULTS.append((group, name, ok))
    print(f"{'PASS' if ok else 'FAIL'}  {group}/{name}" + (f"  -- {detail}" if detail and (not ok or VERBOSE) else ""))


def load(*p):
    with open(os.path.join(V, *p), encoding="utf-8") as fh:
        return json.load(fh)


def pub_of_seed(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def sign(seed: bytes, msg: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).sign(msg)


# ---------------------------------------------------------------------------

def signatures():
    for v in load("signatures", "vectors.json"):
        err = ds.verify_rule(bytes.fromhex(v["public_key"]), bytes.fromhex(v["message"]),
                             bytes.fromhex(v["signature"]))
        ok = (err is None) == v["valid"] and err == v["error"]
        report("signatures", v["name"], ok, f"got {err}, want {v['error']}")


def events():
    d = load("events", "events.json")
    for v in d["events"]:
        name = f"seq{v['seq']}-{v['kind']}"
        problems = []
        raw = bytes.fromhex(v["event_hex"])
        try:
            ev = ds.decode_event(raw)
        except ds.DecodeError as e:
            report("events", name, False, f"decode: {e}")
            continue
        if ev.seq != v["seq"]: problems.append("seq")
        if ev.recorded_at_ms != v["recorded_at_ms"]: problems.append("recorded_at_ms")
        if ev.prev_hash.hex() != v["prev_hash"]: problems.append("prev_hash")
        if ev.kind != v["kind"]: problems.append("kind")
        if ev.author.hex() != v["author_public_key"]: problems.append("author")
        if ev.payload.hex() != v["payload_hex"]: problems.append("payload")
        if ev.signature.hex() != v["signature"]: problems.append("signature field")
        if ev.message.hex() != v["signing_message_hex"]: problems.append("signing message")
        if ds.statement_digest(ev.author, ev.kind.encode(), ev.payload).hex() != v["statement_digest"]:
            problems.append("statement digest")
        if ev.leaf_hash.hex() != v["leaf_hash"]: problems.append("leaf hash")
        if ds.verify_rule(ev.author, ev.message, ev.signature) is not None: problems.append("signature verify")
        seed = bytes.fromhex(v["author_secret_seed"])
        if pub_of_seed(seed).hex() != v["author_public_key"]: problems.append("public key from seed")
        if sign(seed, ev.message).hex() != v["signature"]: problems.append("re-signing differs")
        if ds.encode_event(ev.seq, ev.recorded_at_ms, ev.prev_hash, ev.kind.encode(), ev.author, ev.payload,
                           ev.signature) != raw: problems.append("re-encoding differs")
        # canonical-decoding negatives derived from this vector
        for label, bad in (("trailing byte", raw + b"\x00"), ("truncated", raw[:-1]),
                           ("format 2", b"\x02" + raw[1:])):
            try:
                ds.decode_event(bad)
                problems.append(f"accepted {label}")
            except ds.DecodeError:
                pass
        report("events", name, not problems, ", ".join(problems))


def rfc6962():
    t = load("rfc6962", "tree8.json")
    leaves = [bytes.fromhex(x) for x in t["leaf_inputs"]]
    lh = [ds.leaf_hash(x) for x in leaves]
    ok = all(ds.mth_from_leaf_hashes(lh[:n]).hex() == t["roots_by_size"][n] for n in range(len(t["roots_by_size"])))
    report("rfc6962", "roots_by_size 0..8", ok)
    # node_hashes[level][index] = MTH of the complete subtree
    ok = True
    for level, row in enumerate(t["node_hashes"]):
        for idx, h in enumerate(row):
            w = 1 << level
            if ds.mth_from_leaf_hashes(lh[idx * w:(idx + 1) * w]).hex() != h:
                ok = False
    report("rfc6962", "node_hashes", ok)
    for i, p in enumerate(t["inclusion_proofs"]):
        idx, size, path = p["index"], p["size"], [bytes.fromhex(x) for x in p["proof"]]
        root = bytes.fromhex(t["roots_by_size"][size])
        err = ds.verify_inclusion(idx, size, lh[idx], path, root)
        neg = []
        if path:
            bad = [bytes([path[0][0] ^ 1]) + path[0][1:]] + path[1:]
            neg.append(ds.verify_inclusion(idx, size, lh[idx], bad, root))
            neg.append(ds.verify_inclusion(idx, size, lh[idx], path[:-1], root))
        neg.append(ds.verify_inclusion(idx, size, lh[idx], path + [root], root))
        neg.append(ds.verify_inclusion(size, size, lh[idx], path, root))
        report("rfc6962", f"inclusion[{i}] index={idx} size={size}", err is None and all(neg),
               f"err={err} negatives={neg}")
    for i, p in enumerate(t["consistency_proofs"]):
        m, n, path = p["old_size"], p["new_size"], [bytes.fromhex(x) for x in p["proof"]]
        r1, r2 = bytes.fromhex(t["roots_by_size"][m]), bytes.fromhex(t["roots_by_size"][n])
        err = ds.verify_consistency(m, n, r1, r2, path)
        neg = []
        if path:
            bad = path[:-1] + [bytes([path[-1][0] ^ 1]) + path[-1][1:]]
            neg.append(ds.verify_consistency(m, n, r1, r2, bad))
        if m != n:
            neg.append(ds.verify_consistency(m, n, r2, r1, path) if m != 0 else "skip")
        report("rfc6962", f"consistency[{i}] {m}->{n}", err is None and all(neg), f"err={err} negatives={neg}")
    # Docket's decisions outside the RFC range (FORMAT.md §8.3)
    e = ds.sha256(b"")
    r8 = bytes.fromhex(t["roots_by_size"][8])
    checks = [ds.verify_consistency(0, 8, e, r8, []) is None,
              ds.verify_consistency(0, 8, r8, r8, []) is not None,
              ds.verify_consistency(8, 8, r8, r8, []) is None,
              ds.verify_consistency(8, 8, r8, r8, [r8]) is not None,
              ds.verify_consistency(8, 4, r8, r8, []) == "SizeOrder"]
    report("rfc6962", "consistency edge cases (first=0, first=second, first>second)", all(checks), str(checks))


def checkpoint():
    d = load("checkpoint", "signed_notes.json")
    for n in d["notes"]:
        problems = []
        vk = ds.parse_vkey(n["verifier_key"])
        if vk.name != n["key_name"] or vk.key_id.hex() != n["key_id"]:
            problems.append("vkey fields")
        note = ds.open_note_unverified(n["note"].encode())
        if note.body != n["text"]:
            problems.append("body")
        err = ds.note_signature_status(note, vk)
        if err:
            problems.append(f"verify: {err}")
        if "other_verifier_key" in n:
            if ds.note_signature_status(note, ds.parse_vkey(n["other_verifier_key"])):
                problems.append("other signer's line does not verify")
        tampered = ds.open_note_unverified(n["note"].replace("\n\n", " \n\n", 1).encode())
        if ds.note_signature_status(tampered, vk) is None:
            problems.append("tampered body verified")
        if "signer_key" in n:
            parts = n["signer_key"].split("+", 4)
            raw = base64.b64decode(parts[4])
            seed = raw[1:]
            if pub_of_seed(seed) != vk.public_key:
                problems.append("signer key does not match verifier key")
            sig = sign(seed, n["text"].encode())
            line = f"\u2014 {vk.name} " + base64.b64encode(vk.key_id + sig).decode() + "\n"
            if n["text"] + "\n" + line != n["note"]:
                problems.append("re-signed note differs byte for byte")
        report("checkpoint", f"signed_note/{n['name']}", not problems, "; ".join(problems))
    b = load("checkpoint", "checkpoint_bodies.json")
    for c in b["valid"]:
        try:
            cp = ds.parse_checkpoint_body(c["body"])
            ok = (cp.origin, cp.size, cp.root.hex(), cp.extensions) == (c["origin"], c["size"], c["root_hex"],
                                                                        c["extensions"])
            report("checkpoint", f"body-valid/{c['name']}", ok)
        except ds.NoteError as e:
            report("checkpoint", f"body-valid/{c['name']}", False, str(e))
    for c in b["invalid"]:
        try:
            ds.parse_checkpoint_body(c["body"])
            report("checkpoint", f"body-invalid/{c['name']}", False, "accepted")
        except ds.NoteError as e:
            report("checkpoint", f"body-invalid/{c['name']}", True, str(e))
    # the bundle's own checkpoint and verifier key
    vk = ds.parse_vkey(open(os.path.join(V, "bundle", "trusted.vkey")).read())
    note = ds.open_note_unverified(open(os.path.join(V, "bundle", "valid", "checkpoint.note"), "rb").read())
    report("checkpoint", "bundle/valid/checkpoint.note with trusted.vkey", ds.note_signature_status(note, vk) is None)


def oid():
    d = load("oid", "vectors.json")
    for i, c in enumerate(d["cases"]):
        author = bytes.fromhex(c["author"])
        payload = c["payload"].encode()
        kind = c["kind"].encode()
        problems = []
        if ds.sha256(payload).hex() != c["payload_sha256"]: problems.append("payload sha")
        dig = ds.statement_digest(author, kind, payload)
        if dig.hex() != c["statement_digest"]: problems.append("statement digest")
        if ds.sha256(b"docket/v1/oid\x00" + dig)[:10].hex() != c["random"]: problems.append("random")
        if ds.oid_for(author, kind, payload, c["recorded_at_ms"]) != c["oid"]: problems.append("oid")
        if "event_b64" in c:
            ev = ds.decode_event(base64.b64decode(c["event_b64"]))
            if ds.oid_for(ev.author, ev.kind.encode(), ev.payload, ev.recorded_at_ms) != c["oid"]:
                problems.append("oid from event")
            if ds.verify_rule(ev.author, ev.message, ev.signature): problems.append("event signature")
        report("oid", f"case{i}", not problems, ", ".join(problems))


def summary():
    """DOMAIN.md §4, BUNDLE.md §7-§8: the whole summary, `tasks` included, the
    task state digests and the needed/removed blobs."""
    for case in ("full", "slice"):
        e = load("summary", case, "events.json")
        s = load("summary", case, "summary.json")
        der = load("summary", case, "derived.json")
        evs = [ds.decode_event(base64.b64decode(x["event_b64"])) for x in e["events"]]
        runs = vb.runs_of([x.seq for x in evs])
        keys, tasks, oids, _ = ad.summary_projections(
            [(x.seq, x.recorded_at_ms, x.kind, x.author, x.payload) for x in evs])
        kinds = {}
        for x in evs:
            kinds[x.kind] = kinds.get(x.kind, 0) + 1
        got = json.loads(json.dumps({
            "format": "docket.summary/1", "tree_size": e["tree_size"], "events": len(evs),
            "ranges": [list(r) for r in runs], "kinds": kinds, "keys": keys, "tasks": tasks, "oids": oids}))
        for field in got:
            report("summary", f"{case}/{field}", got[field] == s[field],
                   "" if got[field] == s[field] else f"got {json.dumps(got[field])[:300]}")
        report("summary", f"{case}/members", set(got) == set(s), str(sorted(set(got) ^ set(s))))
        dg = {t: r["state_digest"] for t, r in tasks.items()}
        report("summary", f"{case}/derived.state_digests", dg == der["state_digests"], json.dumps(dg)[:300])
        # blobs: needed / removed (BUNDLE.md §7), through the verifier's own check
        audit = vb.Audit()
        blobs = {f"blobs/{h}": b"" for h in der["blobs"]["needed"]}
        blobs.update({f"blobs/{h}": b"" for h in der["blobs"]["removed"]})
        vb.check_blobs(blobs, {"with_blobs": True}, oids, audit)
        removed = {f["file"][6:]: f["seq"] for f in audit.findings if f["kind"] == "retention"}
        unknown = [f for f in audit.findings if f["kind"] in ("unknown", "missing_blob")]
        ok = removed == der["blobs"]["removed"] and not unknown
        report("summary", f"{case}/derived.blobs", ok, f"removed={removed} other={unknown}")
        audit = vb.Audit()
        if runs and len(runs) == 1 and runs[0][0] == 0:
            vb.readmit_all(evs, audit)
        else:
            vb.check_partial_authority(evs, audit)
        want = [] if case == "full" else ["missing_context"] * 0
        got_k = [(f["kind"], f["seq"]) for f in audit.findings]
        report("summary", f"{case}/authority (BUNDLE.md §10 step 7)", case == "slice" or not got_k,
               "; ".join(f"{f['seq']}:{f['detail']}" for f in audit.findings))
        ok_sigs = all(ds.verify_rule(x.author, x.message, x.signature) is None for x in evs)
        report("summary", f"{case}/signatures", ok_sigs)


def admission():
    """BUNDLE.md §10 step 7 on the admission vectors: each log, taken as a
    bundle from genesis, re-admits with no finding; with the statement
    appended at its position it gets one `authority` exactly when the vector
    refuses it (a bad signature is §4.2's `signature` instead; a duplicate is
    not a step 7 question)."""
    d = load("admission", "vectors.json")
    fp = []
    for name, c in sorted(d["cases"].items()):
        log = [ds.decode_event(base64.b64decode(x)) for x in c["log"]]
        audit = vb.Audit()
        vb.readmit_all(log, audit)
        if audit.findings:
            fp.append((name, audit.findings))
        exp = c["expected"]
        if exp["outcome"] == "duplicate":
            continue
        st = c["statement"]
        prev = log[-1].leaf_hash if log else b"\x00" * 32
        raw = ds.encode_event(c["position"]["seq"], c["position"]["recorded_at_ms"], prev, st["kind"].encode(),
                              bytes.fromhex(st["author"]), base64.b64decode(st["payload_b64"]),
                              bytes.fromhex(st["signature"]))
        try:
            ev = ds.decode_event(raw)
        except ds.DecodeError:
            # a statement the envelope cannot carry (kind/size): refused at step 1 of DOMAIN.md §1.2
            report("admission", f"{name} ({exp.get('code') or exp['outcome']})",
                   exp["outcome"] == "refused" and exp.get("code") in ("malformed", "resource_exhausted", "invalid"))
            continue
        if exp.get("code") == "unauthenticated":
            report("admission", f"{name} (unauthenticated)", ds.verify_rule(ev.author, ev.message, ev.signature) is not None)
            continue
        audit2 = vb.Audit()
        vb.readmit_all(log + [ev], audit2)
        refused = any(f["seq"] == ev.seq and f["kind"] == "authority" for f in audit2.findings)
        want = exp["outcome"] == "refused"
        report("admission", f"{name} ({exp.get('code') or exp['outcome']})", refused == want,
               f"refused={refused} want={want} "
               + "; ".join(f["detail"] for f in audit2.findings if f["seq"] == ev.seq))
    report("admission", f"no authority finding in any admitted log ({len(d['cases'])} logs)", not fp,
           "; ".join(f"{n}: {f[0]['seq']} {f[0]['detail']}" for n, f in fp[:5]))


def bundle():
    tk = open(os.path.join(V, "bundle", "trusted.vkey")).read()
    a = vb.audit_bundle(os.path.join(V, "bundle", "valid"), tk)
    errs = [f for f in a.findings]
    report("bundle", "valid", a.exit_code() == 0 and not errs, json.dumps(errs)[:300])
    a = vb.audit_bundle(os.path.join(V, "bundle", "valid"), None)
    report("bundle", "valid (no trusted key: exit 0 + self_asserted_key warning)",
           a.exit_code() == 0 and [f["kind"] for f in a.findings] == ["self_asserted_key"])
    for c in load("bundle", "cases.json"):
        a = vb.audit_bundle(os.path.join(V, "bundle", c["dir"]), tk)
        missing = []
        for want in c["findings"]:
            if not any(f["kind"] == want["kind"] and f["file"] == want["file"]
                       and ("seq" not in want or f["seq"] == want["seq"]) for f in a.findings):
                missing.append(want)
        ok = a.exit_code() == c["exit_code"] and not missing
        report("bundle", c["dir"], ok, f"exit {a.exit_code()} (want {c['exit_code']}), missing {missing}; got "
               + json.dumps([(f['kind'], f['file'], f['seq']) for f in a.findings]))
    for c in load("archive", "cases.json"):
        a = vb.audit_bundle(os.path.join(V, "archive", c["file"]), tk)
        kinds = [f["kind"] for f in a.findings if f["severity"] == "error"]
        ok = a.exit_code() == c["exit_code"] and (c["finding"] is None and not kinds or c["finding"] in kinds)
        report("archive", c["file"], ok, f"exit {a.exit_code()} findings {kinds}")


def main():
    for fn in (signatures, events, rfc6962, checkpoint, oid, summary, admission, bundle):
        fn()
    bad = [r for r in RESULTS if not r[2]]
    print(f"\n{len(RESULTS) - len(bad)}/{len(RESULTS)} passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
