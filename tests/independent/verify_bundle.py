#!/usr/bin/env python3
"""Independent verifier of Docket export bundles (`docket.bundle/1`).

Written only from docs/BUNDLE.md (§10 audit procedure), docs/FORMAT.md,
docs/DOMAIN.md, docs/RETENTION.md and tests/vectors/. No Docket source used.

    python3 verify_bundle.py [--trusted-key VKEY_FILE_OR_TEXT] [--allow-external-ref]
                             [--json] BUNDLE_DIR_OR_TAR

Prints one JSON object per finding on stdout (kind, severity, file, seq,
detail), notes about what was not verified on stderr, and exits with the
code of BUNDLE.md §10 (0, 2, 3, 4, 5; 64 for a usage error).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import stat
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docket_spec as ds  # noqa: E402

EXIT = {
    "unsupported_format": 2, "external_ref": 2,
    "malformed": 5,
    "summary_mismatch": 3,
    "missing_file": 4, "missing_proof": 4, "missing_context": 4, "missing_blob": 4,
    "digest": 5, "unlisted_file": 5, "checkpoint_signature": 5, "key_mismatch": 5,
    "inconsistent": 5, "order": 5, "signature": 5, "chain": 5, "time": 5,
    "inclusion": 5, "root": 5, "consistency": 5, "authority": 5, "blob_digest": 5,
    "retention": 5, "attestation": 5,
    "self_asserted_key": 0, "unknown": 0,
}
WARNINGS = {"self_asserted_key", "unknown"}
SEVERITY_RANK = {5: 4, 4: 3, 3: 2, 2: 1, 0: 0}  # 5 > 4 > 3 > 2

KNOWN_FILES = {"manifest.json", "checkpoint.note", "verifier.vkey", "events.bin",
               "proofs.json", "summary.json", "since.note", "consistency.json"}
REQUIRED_FILES = ["checkpoint.note", "verifier.vkey", "events.bin", "proofs.json", "summary.json"]

ROLE_ORDER = ["admin", "submitter", "verifier", "approver", "custodian", "auditor", "gateway"]
KIND_ROLES = {
    "key.registered": {"admin"}, "key.revoked": {"admin"},
    "task.registered": {"admin", "submitter"},
    "evidence.registered": {"submitter", "gateway"}, "execution.recorded": {"submitter", "gateway"},
    "submission.received": {"submitter"},
    "check.recorded": {"verifier"}, "verdict.issued": {"verifier"},
    "verdict.imported": {"verifier"}, "verdict.deadline_passed": {"verifier"},
    "approval.requested": {"submitter", "approver"},
    "approval.granted": {"approver"}, "approval.denied": {"approver"},
    "retention.policy_set": {"admin"},
    "retention.pinned": {"custodian"}, "retention.unpinned": {"custodian"},
    "retention.reclassified": {"custodian"}, "retention.redacted": {"custodian"},
    "retention.sweep": {"custodian"}, "evidence.expired": {"custodian"},
}
EXT_ROLES = {"admin", "submitter", "verifier", "approver", "custodian", "gateway"}
HEX64 = re.compile(r"\A[0-9a-fA-F]{64}\Z")


class Audit:
    def __init__(self):
        self.findings = []
        self.notes = []

    def add(self, kind, file=None, seq=None, detail=""):
        self.findings.append({
            "kind": kind,
            "severity": "warning" if kind in WARNINGS else "error",
            "file": file, "seq": seq, "detail": detail})

    def note(self, msg):
        self.notes.append(msg)

    def exit_code(self):
        best = 0
        for f in self.findings:
            if f["severity"] != "error":
                continue
            c = EXIT[f["kind"]]
            if SEVERITY_RANK[c] > SEVERITY_RANK[best]:
                best = c
        return best


# ---------------------------------------------------------------------------
# Reading the container (§1)
# ---------------------------------------------------------------------------

def bad_component_path(p: str) -> bool:
    return p == "" or any(c in ("", ".", "..") for c in p.split("/"))


def read_directory(root, audit):
    files = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                audit.add("external_ref", rel, None, "symbolic link inside the bundle (not followed)")
                dirnames.remove(name)
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                audit.add("external_ref", rel, None, "symbolic link inside the bundle (not followed)")
                continue
            if not stat.S_ISREG(st.st_mode):
                audit.add("external_ref", rel, None, "special file inside the bundle")
                continue
            if st.st_nlink > 1:
                # a hard link in a directory cannot be told from a file; BUNDLE.md
                # lists hard links as external references: report it.
                audit.add("external_ref", rel, None, f"hard link (link count {st.st_nlink})")
                continue
            with open(full, "rb") as fh:
                files[rel] = fh.read()
    return files


def read_tar(path, audit):
    files = {}
    with tarfile.open(path, "r:") as tf:
        for m in tf.getmembers():
            name = m.name
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                audit.add("external_ref", repr(name), None, "entry name is not UTF-8")
                continue
            while name.startswith("./"):
                name = name[2:]
            if m.isdir():
                continue
            if m.issym() or m.islnk():
                audit.add("external_ref", name, None,
                          f"{'symbolic' if m.issym() else 'hard'} link to {m.linkname} (not followed)")
                continue
            if not m.isreg():
                audit.add("external_ref", name, None, "special entry")
                continue
            if name.startswith("/") or bad_component_path(name):
                audit.add("external_ref", name, None, "entry path leaves the bundle")
                continue
            files[name] = tf.extractfile(m).read()  # last entry with a path wins
    return files


# ---------------------------------------------------------------------------
# Manifest (§2)
# ---------------------------------------------------------------------------

def is_external(p: str):
    if p.startswith("/") or p.startswith("\\") or re.match(r"^[A-Za-z]:", p):
        return "absolute path"
    if "://" in p or p.startswith("data:") or p.startswith("file:"):
        return "URL"
    if "\\" in p:
        return "backslash"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in p):
        return "control character"
    if bad_component_path(p):
        return "empty, '.' or '..' component"
    return None


def is_url(p):
    return "://" in p or p.startswith("data:") or p.startswith("file:")


def defined_path(p):
    if p in KNOWN_FILES:
        return True
    if re.fullmatch(r"blobs/[0-9a-f]{64}", p):
        return True
    if re.fullmatch(r"attestations/[^/]+\.json", p):
        return True
    return False


def check_manifest(files, audit, allow_ext, bundle_root, is_dir):
    m = None
    raw = files.get("manifest.json")
    if raw is None:
        audit.add("missing_file", "manifest.json", None, "manifest.json is absent")
        return None, False
    try:
        m = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        audit.add("malformed", "manifest.json", None, f"does not parse: {e}")
        return None, False
    if not isinstance(m, dict):
        audit.add("malformed", "manifest.json", None, "not a JSON object")
        return None, False
    if m.get("format") != "docket.bundle/1":
        audit.add("unsupported_format", "manifest.json", None, f"format {m.get('format')!r}")
        return m, True
    allowed = {"format", "origin", "tree_size", "scope", "with_blobs", "files"}
    for k in m:
        if k not in allowed:
            audit.add("malformed", "manifest.json", None, f"unknown field {k!r}")
    for k in allowed:
        if k not in m:
            audit.add("malformed", "manifest.json", None, f"missing field {k!r}")
    if "origin" in m and not isinstance(m["origin"], str):
        audit.add("malformed", "manifest.json", None, "origin is not a string")
    if "tree_size" in m and not (isinstance(m["tree_size"], int) and not isinstance(m["tree_size"], bool)
                                 and m["tree_size"] >= 0):
        audit.add("malformed", "manifest.json", None, "tree_size is not a non-negative integer")
    if "with_blobs" in m and not isinstance(m["with_blobs"], bool):
        audit.add("malformed", "manifest.json", None, "with_blobs is not a boolean")
    scope = m.get("scope")
    if "scope" in m:
        if not isinstance(scope, dict):
            audit.add("malformed", "manifest.json", None, "scope is not an object")
        else:
            for k in scope:
                if k not in {"from", "to", "tasks", "as_of", "since_size"}:
                    audit.add("malformed", "manifest.json", None, f"unknown scope field {k!r}")
    flist = m.get("files")
    if not isinstance(flist, dict):
        if "files" in m:
            audit.add("malformed", "manifest.json", None, "files is not an object")
        flist = {}
    # self-containment, presence, digests
    listed_ok = set()
    for path, ent in flist.items():
        ext = is_external(path)
        if ext:
            if not allow_ext:
                audit.add("external_ref", path, None, f"manifest path refers outside the bundle ({ext})")
                continue
            if is_url(path):
                audit.add("missing_file", path, None, "URL: never fetched (an audit is offline)")
                continue
            if not is_dir:
                audit.add("missing_file", path, None, "local path outside a tar bundle")
                continue
            full = path if os.path.isabs(path) else os.path.join(bundle_root, path)
            try:
                with open(full, "rb") as fh:
                    files[path] = fh.read()
            except OSError:
                pass
        if path == "manifest.json":
            audit.add("malformed", "manifest.json", None, "the manifest lists itself")
            continue
        if not (isinstance(ent, dict) and set(ent) == {"sha256", "size"}
                and isinstance(ent["sha256"], str) and isinstance(ent["size"], int)):
            audit.add("malformed", "manifest.json", None, f"entry for {path!r} is not {{sha256, size}}")
            continue
        listed_ok.add(path)
        if path not in files:
            audit.add("missing_file", path, None, "listed in the manifest, absent")
            continue
        content = files[path]
        if len(content) != ent["size"]:
            audit.add("digest", path, None, f"size {len(content)} != manifest {ent['size']}")
        elif hashlib.sha256(content).hexdigest() != ent["sha256"].lower():
            audit.add("digest", path, None, "SHA-256 differs from the manifest")
        if not defined_path(path) and not is_external(path):
            audit.add("unknown", path, None, "path not defined by docket.bundle/1 (digest-checked, ignored)")
    for path in sorted(files):
        if path == "manifest.json" or path in flist:
            continue
        audit.add("unlisted_file", path, None, "present but not listed in the manifest")
    for req in REQUIRED_FILES:
        if req not in flist and req not in files:
            audit.add("missing_file", req, None, "required file neither listed nor present")
    return m, False


# ---------------------------------------------------------------------------
# Main audit
# ---------------------------------------------------------------------------

def jload(files, name, audit):
    raw = files.get(name)
    if raw is None:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        audit.add("malformed", name, None, f"does not parse: {e}")
        return None


def parse_hex32(s):
    if isinstance(s, str) and HEX64.match(s):
        return bytes.fromhex(s)
    return None


def runs_of(seqs):
    runs = []
    for s in seqs:
        if runs and s == runs[-1][1] + 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    return runs


def audit_bundle(path, trusted_key_text=None, allow_ext=False):
    audit = Audit()
    is_dir = os.path.isdir(path)
    if is_dir:
        files = read_directory(path, audit)
    else:
        try:
            files = read_tar(path, audit)
        except (tarfile.TarError, OSError) as e:
            audit.add("malformed", os.path.basename(path), None, f"not a readable tar: {e}")
            return audit

    # 1. manifest
    manifest, unsupported = check_manifest(files, audit, allow_ext, path, is_dir)
    if unsupported:
        return audit  # nothing else can be interpreted under an unknown format
    manifest = manifest or {}

    # 2. verifier key
    bundle_vk = None
    vraw = files.get("verifier.vkey")
    if vraw is not None:
        try:
            bundle_vk = ds.parse_vkey(vraw.decode("utf-8"))
        except (ds.NoteError, UnicodeDecodeError) as e:
            audit.add("malformed", "verifier.vkey", None, str(e))
    vk = None
    if trusted_key_text is not None:
        vk = ds.parse_vkey(trusted_key_text)  # validated by the caller
        if bundle_vk is not None and (bundle_vk.name, bundle_vk.public_key) != (vk.name, vk.public_key):
            audit.add("key_mismatch", "verifier.vkey", None,
                      "verifier.vkey differs from the trusted key")
        elif bundle_vk is None and vraw is not None:
            pass
    else:
        vk = bundle_vk
        if vk is not None:
            audit.add("self_asserted_key", "verifier.vkey", None,
                      "no trusted key given: the bundle's own key was used (internally consistent only)")

    # 3. checkpoint
    cp = None
    craw = files.get("checkpoint.note")
    if craw is not None:
        try:
            note = ds.open_note_unverified(craw)
        except ds.NoteError as e:
            audit.add("malformed", "checkpoint.note", None, str(e))
            note = None
        if note is not None:
            if vk is not None:
                err = ds.note_signature_status(note, vk)
                if err:
                    audit.add("checkpoint_signature", "checkpoint.note", None, err)
            else:
                audit.add("checkpoint_signature", "checkpoint.note", None, "no usable verifier key")
            try:
                cp = ds.parse_checkpoint_body(note.body)
            except ds.NoteError as e:
                audit.add("malformed", "checkpoint.note", None, f"checkpoint body: {e}")
    if cp is not None:
        if "origin" in manifest and manifest.get("origin") != cp.origin:
            audit.add("inconsistent", "manifest.json", None,
                      f"manifest origin {manifest.get('origin')!r} != checkpoint {cp.origin!r}")
        if "tree_size" in manifest and manifest.get("tree_size") != cp.size:
            audit.add("inconsistent", "manifest.json", None,
                      f"manifest tree_size {manifest.get('tree_size')} != checkpoint {cp.size}")
        if vk is not None and vk.name != cp.origin:
            audit.add("key_mismatch", "verifier.vkey", None,
                      f"key name {vk.name!r} != checkpoint origin {cp.origin!r}")
    tree_size = cp.size if cp else manifest.get("tree_size") if isinstance(manifest.get("tree_size"), int) else None
    origin = cp.origin if cp else manifest.get("origin")

    # 4. events.bin
    events_by_seq = {}
    decoded = []
    eraw = files.get("events.bin")
    if eraw is not None:
        off = 0
        n = len(eraw)
        while off < n:
            if n - off < 4:
                audit.add("malformed", "events.bin", None, f"record length at byte {off} runs past the end")
                break
            ln = int.from_bytes(eraw[off:off + 4], "big")
            if ln < 1 or ln > 262_369:
                audit.add("malformed", "events.bin", None, f"record length {ln} at byte {off} out of bounds")
                break
            if off + 4 + ln > n:
                audit.add("malformed", "events.bin", None,
                          f"record at byte {off} (length {ln}) runs past the end of the file")
                break
            body = eraw[off + 4: off + 4 + ln]
            try:
                ev = ds.decode_event(body)
            except ds.DecodeError as e:
                audit.add("malformed", "events.bin", e.seq, f"record at byte {off}: {e}")
                off += 4 + ln
                continue
            decoded.append(ev)
            off += 4 + ln
        for ev in decoded:
            err = ds.verify_rule(ev.author, ev.message, ev.signature)
            if err:
                audit.add("signature", "events.bin", ev.seq, f"author signature: {err}")

    # 5. order, chain, time
    last = None
    for ev in decoded:
        if last is not None and ev.seq <= last:
            audit.add("order", "events.bin", ev.seq,
                      f"sequence {ev.seq} after {last}" + (" (duplicate)" if ev.seq in events_by_seq else ""))
        if ev.seq not in events_by_seq:
            events_by_seq[ev.seq] = ev
        last = ev.seq if last is None else max(last, ev.seq)
    seqs = sorted(events_by_seq)
    events = [events_by_seq[s] for s in seqs]
    runs = runs_of(seqs)
    for a, b in runs:
        for s in range(a, b + 1):
            ev = events_by_seq[s]
            if s == 0:
                if ev.prev_hash != b"\x00" * 32:
                    audit.add("chain", "events.bin", 0, "genesis prev_hash is not all zero")
            elif s > a:
                if ev.prev_hash != events_by_seq[s - 1].leaf_hash:
                    audit.add("chain", "events.bin", s, "prev_hash != leaf hash of the previous event")
    for i in range(1, len(events)):
        if events[i].recorded_at_ms < events[i - 1].recorded_at_ms:
            audit.add("time", "events.bin", events[i].seq,
                      f"recorded_at_ms {events[i].recorded_at_ms} < {events[i - 1].recorded_at_ms} of seq {events[i - 1].seq}")
    if tree_size is not None:
        for ev in events:
            if ev.seq >= tree_size:
                audit.add("inclusion", "events.bin", ev.seq, f"seq {ev.seq} >= tree size {tree_size}")

    # genesis (§4.4) and key binding (§3)
    genesis = events_by_seq.get(0)
    gen_payload = None
    if genesis is None:
        audit.add("missing_context", "events.bin", 0, "the genesis event (seq 0) is not carried")
    else:
        if genesis.kind != "ledger.genesis":
            audit.add("authority", "events.bin", 0, f"seq 0 is {genesis.kind!r}, not ledger.genesis")
        else:
            try:
                gen_payload = json.loads(genesis.payload.decode("utf-8"))
                if not isinstance(gen_payload, dict):
                    raise ValueError("not an object")
            except (UnicodeDecodeError, ValueError) as e:
                audit.add("malformed", "events.bin", 0, f"genesis payload: {e}")
                gen_payload = None
        if gen_payload is not None:
            lk = gen_payload.get("ledger_key")
            lkb = parse_hex32(lk)
            if lkb is None:
                audit.add("malformed", "events.bin", 0, "genesis ledger_key is not 64 hex digits")
            else:
                if genesis.author != lkb:
                    audit.add("key_mismatch", "events.bin", 0, "genesis is not signed by the ledger_key it names")
                if vk is not None and vk.public_key != lkb:
                    audit.add("key_mismatch", "verifier.vkey", 0,
                              "the verifier key is not the genesis ledger_key")
            if cp is not None and gen_payload.get("origin") != cp.origin:
                audit.add("key_mismatch", "events.bin", 0,
                          f"genesis origin {gen_payload.get('origin')!r} != checkpoint origin {cp.origin!r}")

    # 6. proofs and coverage
    proofs = jload(files, "proofs.json", audit)
    proof_ok = {}
    if proofs is not None:
        if not isinstance(proofs, dict) or not isinstance(proofs.get("inclusion"), list):
            audit.add("malformed", "proofs.json", None, "not {tree_size, root, inclusion: [...]}")
        else:
            for k in proofs:
                if k not in ("tree_size", "root", "inclusion"):
                    audit.add("malformed", "proofs.json", None, f"unknown field {k!r}")
            if cp is not None and proofs.get("tree_size") != cp.size:
                audit.add("inconsistent", "proofs.json", None,
                          f"proofs tree_size {proofs.get('tree_size')} != checkpoint {cp.size}")
            proot = parse_hex32(proofs.get("root"))
            if proot is None:
                audit.add("malformed", "proofs.json", None, "root is not 64 hex digits")
            elif cp is not None and proot != cp.root:
                audit.add("root", "proofs.json", None, "proofs root != checkpoint root")
            for ent in proofs["inclusion"]:
                if not (isinstance(ent, dict) and isinstance(ent.get("seq"), int)
                        and isinstance(ent.get("path"), list)):
                    audit.add("malformed", "proofs.json", None, f"bad inclusion entry {str(ent)[:80]}")
                    continue
                s = ent["seq"]
                lh = parse_hex32(ent.get("leaf_hash"))
                path_h = [parse_hex32(p) for p in ent["path"]]
                if lh is None or any(p is None for p in path_h):
                    audit.add("malformed", "proofs.json", s, "leaf_hash/path entries are not 64 hex digits")
                    continue
                ev = events_by_seq.get(s)
                if ev is None:
                    audit.add("unknown", "proofs.json", s, "proof for an event the bundle does not carry")
                    continue
                if lh != ev.leaf_hash:
                    audit.add("inclusion", "proofs.json", s, "leaf_hash differs from the carried event's")
                    proof_ok.setdefault(s, False)
                    continue
                if cp is None:
                    continue
                err = ds.verify_inclusion(s, cp.size, lh, path_h, cp.root)
                if err:
                    audit.add("inclusion", "proofs.json", s, f"inclusion proof fails: {err}")
                    proof_ok.setdefault(s, False)
                else:
                    proof_ok[s] = True
    for a, b in runs:
        if tree_size is not None:
            b = min(b, tree_size - 1)  # events past the checkpoint are already `inclusion`
            if a > b:
                continue
        for s in sorted({a, b}):
            if s not in proof_ok:
                audit.add("missing_proof", "proofs.json", s,
                          f"no inclusion proof for seq {s}, an end of run [{a}, {b}]")
    if cp is not None and seqs and seqs == list(range(cp.size)):
        root = ds.mth_from_leaf_hashes([e.leaf_hash for e in events])
        if root != cp.root:
            audit.add("root", "events.bin", None, "root recomputed from all carried events != checkpoint root")
    elif cp is not None and cp.size == 0 and not seqs:
        if cp.root != ds.sha256(b""):
            audit.add("root", "checkpoint.note", None, "empty tree root is not SHA-256('')")

    # 7. authority
    keys = fold_keys_and_check_authority(events, runs, audit)

    # 8. consistency, blobs, attestations
    check_consistency(files, manifest, cp, vk, audit)
    oids, tasks_seen = fold_oids(events)
    check_blobs(files, manifest, oids, audit)
    check_attestations(files, events_by_seq, vk, origin, audit)

    # 9. summary
    check_summary(files, audit, tree_size, events, runs, fold_summary_keys(events), oids)
    return audit


# ---------------------------------------------------------------------------
# Keys and authority (§4.4, §10 step 7, DOMAIN.md §1.3)
# ---------------------------------------------------------------------------

def _payload(ev):
    try:
        p = json.loads(ev.payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return p if isinstance(p, dict) else None


def _opt_int(v):
    return v is None or (isinstance(v, int) and not isinstance(v, bool))


def fold_keys_and_check_authority(events, runs, audit):
    """Fold genesis and key.* events (partial fold: failures change nothing)
    and check each event's author. Returns the keys projection."""
    keys = {}  # hex -> {roles, registered_seq, revoked_seq, nb, na}
    ledger_key = None
    full = bool(runs) and len(runs) == 1 and runs[0][0] == 0
    if not full:
        audit.note("authority: carried events do not start at 0 without gap; "
                   "checked against the carried key events only (BUNDLE.md §10 step 7)")
    else:
        audit.note("authority: whole prefix carried; roles, windows, revocations, genesis and key-event "
                   "admission re-checked; the domain admission rules of other kinds (DOMAIN.md §8 table: "
                   "schemas, tasks, OIDs, approvals, separation of duties, retention) are NOT re-checked")

    def active(hexkey, s, t):
        k = keys.get(hexkey)
        if k is None or k["revoked_seq"] is not None:
            return False
        if not k["registered_seq"] < s:
            return False
        if k["nb"] is not None and t < k["nb"]:
            return False
        if k["na"] is not None and t > k["na"]:
            return False
        return True

    for ev in events:
        s, t, author = ev.seq, ev.recorded_at_ms, ev.author.hex()
        p = _payload(ev)
        # authority of the author
        if ev.kind == "ledger.genesis":
            if s != 0:
                audit.add("authority", "events.bin", s, "ledger.genesis after seq 0")
                continue
        else:
            if ev.kind in KIND_ROLES:
                need = KIND_ROLES[ev.kind]
            elif ev.kind.startswith("x-"):
                need = EXT_ROLES
            else:
                need = set()
                audit.add("authority", "events.bin", s, f"unknown kind {ev.kind!r}")
            k = keys.get(author)
            if k is None:
                if full:
                    audit.add("authority", "events.bin", s, "author key is not registered (unknown key)")
                else:
                    audit.add("missing_context", "events.bin", s,
                              "the author's registration is not carried")
            elif k["revoked_seq"] is not None and k["revoked_seq"] < s:
                audit.add("authority", "events.bin", s, f"key was revoked at seq {k['revoked_seq']}")
            elif not (k["registered_seq"] < s) or (k["nb"] is not None and t < k["nb"]) or \
                    (k["na"] is not None and t > k["na"]):
                audit.add("authority", "events.bin", s, "key is outside its validity window")
            elif need and not (need & set(k["roles"])):
                audit.add("authority", "events.bin", s,
                          f"needs one of the roles {sorted(need, key=ROLE_ORDER.index)}; has {k['roles']}")
        # fold
        if ev.kind == "ledger.genesis" and s == 0 and p is not None:
            lk, ak, roles = p.get("ledger_key"), p.get("admin_key"), p.get("ledger_roles")
            if full:
                if not (isinstance(ak, str) and HEX64.match(ak)) or (isinstance(lk, str) and ak.lower() == lk.lower()):
                    audit.add("authority", "events.bin", 0, "admin_key missing, malformed or equal to ledger_key")
                o = p.get("origin")
                if not (isinstance(o, str) and o and "\n" not in o):
                    audit.add("authority", "events.bin", 0, "origin is not one non-empty line")
            if isinstance(lk, str) and HEX64.match(lk) and isinstance(roles, list):
                ledger_key = lk.lower()
                keys[ledger_key] = {"roles": _sort_roles(roles), "registered_seq": 0, "revoked_seq": None,
                                    "nb": None, "na": None}
            if isinstance(ak, str) and HEX64.match(ak):
                keys.setdefault(ak.lower(), {"roles": ["admin"], "registered_seq": 0, "revoked_seq": None,
                                             "nb": None, "na": None})
        elif ev.kind == "key.registered":
            pk = p.get("public_key") if p else None
            roles = p.get("roles") if p else None
            ok = (isinstance(pk, str) and HEX64.match(pk) and isinstance(roles, list) and roles
                  and all(r in ROLE_ORDER for r in roles)
                  and _opt_int(p.get("not_before_ms")) and _opt_int(p.get("not_after_ms")))
            if not ok:
                if full:
                    audit.add("authority", "events.bin", s, "key.registered payload does not decode")
                continue
            if full and pk != pk.lower():
                audit.add("authority", "events.bin", s, "public_key not spelled in lower-case hex")
                continue
            nb, na = p.get("not_before_ms"), p.get("not_after_ms")
            if full and nb is not None and na is not None and nb > na:
                audit.add("authority", "events.bin", s, "not_before_ms > not_after_ms")
                continue
            if full and not ds.key_is_acceptable(bytes.fromhex(pk)):
                audit.add("authority", "events.bin", s, "registered key is non-canonical or of small order")
            if pk.lower() in keys:
                if full:
                    audit.add("authority", "events.bin", s, "key already registered (ALREADY_EXISTS)")
                continue
            keys[pk.lower()] = {"roles": _sort_roles(roles), "registered_seq": s, "revoked_seq": None,
                                "nb": p.get("not_before_ms"), "na": p.get("not_after_ms")}
        elif ev.kind == "key.revoked":
            pk = p.get("public_key") if p else None
            if not (isinstance(pk, str) and HEX64.match(pk)):
                if full:
                    audit.add("authority", "events.bin", s, "key.revoked payload does not decode")
                continue
            if full and pk != pk.lower():
                audit.add("authority", "events.bin", s, "public_key not spelled in lower-case hex")
                continue
            k = keys.get(pk.lower())
            if k is None:
                if full:
                    audit.add("authority", "events.bin", s, "revoked key has no record (NOT_FOUND)")
                continue
            if k["revoked_seq"] is not None:
                if full:
                    audit.add("authority", "events.bin", s, "key already revoked")
                continue
            if full:
                if pk.lower() == ledger_key:
                    audit.add("authority", "events.bin", s, "refusing to revoke the ledger key")
                    continue
                if "admin" in k["roles"]:
                    n_active = sum(1 for h, r in keys.items() if "admin" in r["roles"] and active(h, s, t))
                    if n_active < 2:
                        audit.add("authority", "events.bin", s, "refusing to revoke the last active admin key")
                        continue
            k["revoked_seq"] = s
    return keys


def fold_summary_keys(events):
    """The keys of summary.json: genesis and key.* folded with no admission
    (BUNDLE.md §8). Observed with docket 0.1: a second key.registered of a
    key replaces its record; a key.revoked of an unknown key changes nothing."""
    keys = {}
    for ev in events:
        p = _payload(ev)
        if p is None:
            continue
        if ev.kind == "ledger.genesis" and ev.seq == 0:
            lk, ak, roles = p.get("ledger_key"), p.get("admin_key"), p.get("ledger_roles")
            if isinstance(lk, str) and HEX64.match(lk) and isinstance(roles, list):
                keys[lk.lower()] = {"roles": _sort_roles(roles), "registered_seq": 0, "revoked_seq": None}
            if isinstance(ak, str) and HEX64.match(ak):
                keys[ak.lower()] = {"roles": ["admin"], "registered_seq": 0, "revoked_seq": None}
        elif ev.kind == "key.registered":
            pk, roles = p.get("public_key"), p.get("roles")
            if isinstance(pk, str) and HEX64.match(pk) and isinstance(roles, list) \
                    and all(r in ROLE_ORDER for r in roles):
                keys[pk.lower()] = {"roles": _sort_roles(roles), "registered_seq": ev.seq, "revoked_seq": None}
        elif ev.kind == "key.revoked":
            pk = p.get("public_key")
            if isinstance(pk, str) and pk.lower() in keys:
                keys[pk.lower()]["revoked_seq"] = ev.seq
    return keys


def _sort_roles(roles):
    rs = [r for r in ROLE_ORDER if r in roles]
    return rs


# ---------------------------------------------------------------------------
# OID registry (DOMAIN.md §4.3, §8.1; RETENTION.md "Fold") for §7 and §8
# ---------------------------------------------------------------------------

ARTIFACT_TYPE_NAMES = {"patch.diff", "selftest.log", "report.md", "submit.json"}


def fold_oids(events):
    tasks = {}  # canonical id -> retention_class
    oids = {}
    explicit_pin = {}
    for ev in events:
        p = _payload(ev)
        if p is None:
            continue
        if ev.kind == "task.registered":
            tid = _canon_task(p.get("task_id"))
            if tid and tid not in tasks:
                rc = p.get("retention_class", "routine")
                tasks[tid] = rc if rc in ("routine", "high_impact", "pinned") else "routine"
        elif ev.kind == "evidence.registered":
            tid = _canon_task(p.get("task_id"))
            if tid not in tasks:
                continue
            oid = ds.oid_for(ev.author, ev.kind.encode(), ev.payload, ev.recorded_at_ms)
            if oid in oids:
                continue
            name = p.get("name")
            et = p.get("evidence_type")
            rc = p.get("retention_class") or tasks[tid]
            oids[oid] = {
                "sha256": p.get("sha256"), "size": p.get("size"), "evidence_type": et,
                "media_type": p.get("media_type"), "task_id": tid, "retention_class": rc,
                "name": name,
                "artifact_name": name if name else (et if et in ARTIFACT_TYPE_NAMES else f"evidence/{oid}"),
                "registered_seq": ev.seq, "registered_at_ms": ev.recorded_at_ms,
                "registered_by": ev.author.hex(), "state": "live", "pinned": rc == "pinned",
                "removal": None,
            }
        elif ev.kind == "verdict.imported":
            tid = _canon_task(p.get("task_id"))
            if tid not in tasks:
                continue
            arts = []
            if isinstance(p.get("verdict_json"), dict):
                arts.append(p["verdict_json"])
            else:
                arts.append(None)
            arts += [a for a in (p.get("artifacts") or []) if isinstance(a, dict)]
            for i, a in enumerate(arts):
                if a is None:
                    continue
                oid = ds.imported_oid(ev.author, ev.kind.encode(), ev.payload, ev.recorded_at_ms, i)
                if oid in oids:
                    continue
                # Field mapping for imported files is not documented: best guess.
                oids[oid] = {
                    "sha256": a.get("sha256"), "size": a.get("size"), "evidence_type": a.get("evidence_type"),
                    "media_type": a.get("media_type"), "task_id": tid, "retention_class": tasks[tid],
                    "name": a.get("path"), "artifact_name": a.get("path"),
                    "registered_seq": ev.seq, "registered_at_ms": ev.recorded_at_ms,
                    "registered_by": ev.author.hex(), "state": "live", "pinned": tasks[tid] == "pinned",
                    "removal": None,
                }
        elif ev.kind in ("retention.pinned", "retention.unpinned", "retention.reclassified",
                         "retention.redacted", "evidence.expired"):
            o = oids.get(p.get("oid"))
            if o is None:
                continue
            oid = p["oid"]
            if ev.kind == "retention.pinned":
                if o["state"] == "expired" or o["pinned"]:
                    continue
                explicit_pin[oid] = True
                o["pinned"] = True
            elif ev.kind == "retention.unpinned":
                if not o["pinned"]:
                    continue
                explicit_pin[oid] = False
                if o["retention_class"] == "pinned":
                    c = p.get("class")
                    tc = tasks.get(o["task_id"], "routine")
                    o["retention_class"] = c if c else (tc if tc != "pinned" else "routine")
                o["pinned"] = o["retention_class"] == "pinned"
            elif ev.kind == "retention.reclassified":
                c = p.get("class")
                if o["state"] == "expired" or c not in ("routine", "high_impact", "pinned"):
                    continue
                o["retention_class"] = c
                o["pinned"] = c == "pinned" or explicit_pin.get(oid, False)
            elif ev.kind == "retention.redacted":
                if o["state"] == "expired":
                    continue
                o["state"] = "redacted"
                # BUNDLE.md §7: only the OID's *original* sha256 is ever "removed"
                if "_removed" not in o:
                    o["_removed"] = [(o["sha256"], ev.seq)]
                o["removal"] = {"seq": ev.seq, "at_ms": ev.recorded_at_ms, "reason": p.get("reason"),
                                "redacted_sha256": p.get("redacted_sha256"),
                                "redacted_size": p.get("redacted_size")}
            elif ev.kind == "evidence.expired":
                if o["state"] == "expired":
                    continue
                if "_removed" not in o:
                    o["_removed"] = [(o["sha256"], ev.seq)]
                o["state"] = "expired"
                reason = p.get("reason") or f"expired under the {o['retention_class']} retention class"
                # Observed with the real exporter (not in the docs): an expiry replaces the whole
                # removal record, redacted_* become null even for a redacted OID.
                o["removal"] = {"seq": ev.seq, "at_ms": ev.recorded_at_ms, "reason": reason,
                                "redacted_sha256": None, "redacted_size": None}
    return oids, tasks


def _canon_task(t):
    if not isinstance(t, str):
        return None
    s = t.strip().lower()
    if s.startswith("urn:uuid:"):
        s = s[9:]
    s = s.strip("{}").replace("-", "")
    if not re.fullmatch(r"[0-9a-f]{32}", s):
        return None
    return f"{s[:8]}-{s[8:12]}-{s[12:16]}-{s[16:20]}-{s[20:]}"


def check_blobs(files, manifest, oids, audit):
    needed, removed = set(), {}
    for o in oids.values():
        if o["state"] == "live":
            needed.add(o["sha256"])
        elif o["state"] == "redacted" and o["removal"]:
            needed.add(o["removal"]["redacted_sha256"])
    for o in oids.values():
        for dig, seq in o.get("_removed", []):
            if dig not in needed:
                removed[dig] = seq
    blobs = {p[6:]: c for p, c in files.items() if p.startswith("blobs/")}
    for name, content in sorted(blobs.items()):
        if hashlib.sha256(content).hexdigest() != name:
            audit.add("blob_digest", "blobs/" + name, None, "content's SHA-256 differs from its name")
    if manifest.get("with_blobs") is True:
        for d in sorted(x for x in needed if isinstance(x, str)):
            if d not in blobs:
                regs = [o["registered_seq"] for o in oids.values()
                        if (o["state"] == "live" and o["sha256"] == d)
                        or (o["state"] == "redacted" and (o["removal"] or {}).get("redacted_sha256") == d)]
                audit.add("missing_blob", "blobs/" + d, min(regs) if regs else None,
                          "content a carried OID holds is absent")
    for d, seq in sorted(removed.items()):
        if d in blobs:
            audit.add("retention", "blobs/" + d, seq, f"content removed by event {seq} is present")
    for d in sorted(blobs):
        if d not in needed and d not in removed:
            audit.add("unknown", "blobs/" + d, None, "blob no carried OID needs or removed")


# ---------------------------------------------------------------------------
# Consistency (§6) and attestations (§9)
# ---------------------------------------------------------------------------

def check_consistency(files, manifest, cp, vk, audit):
    scope = manifest.get("scope") if isinstance(manifest.get("scope"), dict) else {}
    since_size = scope.get("since_size")
    have = "since.note" in files or "consistency.json" in files
    if since_size is None and not have:
        return
    for f in ("since.note", "consistency.json"):
        if f not in files:
            audit.add("missing_file", f, None, "required with since_size / --since")
    if "since.note" not in files or "consistency.json" not in files:
        return
    old = None
    try:
        note = ds.open_note_unverified(files["since.note"])
        if vk is not None:
            err = ds.note_signature_status(note, vk)
            if err:
                audit.add("checkpoint_signature", "since.note", None, err)
        old = ds.parse_checkpoint_body(note.body)
    except ds.NoteError as e:
        audit.add("malformed", "since.note", None, str(e))
    if old is not None and since_size is not None and since_size != old.size:
        audit.add("inconsistent", "manifest.json", None, "scope.since_size != since.note size")
    if old is not None and cp is not None and old.origin != cp.origin:
        audit.add("consistency", "since.note", None, "since.note origin differs from the checkpoint's")
    c = jload(files, "consistency.json", audit)
    if not isinstance(c, dict):
        return
    try:
        o_size, n_size = c["old_size"], c["new_size"]
        o_root, n_root = parse_hex32(c["old_root"]), parse_hex32(c["new_root"])
        path = [parse_hex32(x) for x in c["path"]]
        if o_root is None or n_root is None or any(x is None for x in path):
            raise ValueError
    except (KeyError, TypeError, ValueError):
        audit.add("malformed", "consistency.json", None, "not {old_size, old_root, new_size, new_root, path}")
        return
    if old is not None and (o_size != old.size or o_root != old.root):
        audit.add("consistency", "consistency.json", None, "old_* differ from since.note")
    if cp is not None and (n_size != cp.size or n_root != cp.root):
        audit.add("consistency", "consistency.json", None, "new_* differ from checkpoint.note")
    err = ds.verify_consistency(o_size, n_size, o_root, n_root, path)
    if err:
        audit.add("consistency", "consistency.json", None, f"consistency proof fails: {err}")


def check_attestations(files, events_by_seq, vk, origin, audit):
    import base64
    for path in sorted(p for p in files if p.startswith("attestations/")):
        env = jload(files, path, audit)
        if env is None:
            continue
        try:
            ptype = env["payloadType"]
            body = base64.b64decode(env["payload"], validate=True)
            sigs = env["signatures"]
            pae = b"DSSEv1 %d %s %d %s" % (len(ptype.encode()), ptype.encode(), len(body), body)
        except (KeyError, TypeError, ValueError) as e:
            audit.add("malformed", path, None, f"not a DSSE envelope: {e}")
            continue
        ok = False
        if vk is not None:
            for s in sigs if isinstance(sigs, list) else []:
                try:
                    sig = base64.b64decode(s.get("sig", ""), validate=True)
                except (ValueError, AttributeError):
                    continue
                if ds.verify_rule(vk.public_key, pae, sig) is None:
                    ok = True
        if not ok:
            audit.add("attestation", path, None, "no DSSE signature by the ledger key verifies")
        try:
            st = json.loads(body)
            pred = st.get("predicate", {})
            binds = pred.get("inputAttestations") or pred.get("configuration") or []
        except (ValueError, AttributeError):
            audit.add("attestation", path, None, "statement does not parse")
            continue
        m = re.search(r"-(\d+)\.", path)
        seq = int(m.group(1)) if m else None
        found = False
        for b in binds if isinstance(binds, list) else []:
            if not isinstance(b, dict):
                continue
            uri = b.get("uri", "")
            mm = re.fullmatch(r"docket://(.+)/log/(\d+)", uri)
            if not mm:
                continue
            found = True
            s = int(mm.group(2))
            ev = events_by_seq.get(s)
            if mm.group(1) != origin or ev is None or \
                    (b.get("digest") or {}).get("sha256") != ev.leaf_hash.hex():
                audit.add("attestation", path, s, "binding to the log does not match a carried event")
        if not found:
            audit.add("attestation", path, seq, "no docket://<origin>/log/<seq> binding")


# ---------------------------------------------------------------------------
# Summary (§8)
# ---------------------------------------------------------------------------

def check_summary(files, audit, tree_size, events, runs, keys, oids):
    s = jload(files, "summary.json", audit)
    if s is None:
        return
    if not isinstance(s, dict):
        audit.add("malformed", "summary.json", None, "not a JSON object")
        return
    kinds = {}
    for ev in events:
        kinds[ev.kind] = kinds.get(ev.kind, 0) + 1
    exp = {
        "format": "docket.summary/1",
        "tree_size": tree_size,
        "events": len(events),
        "ranges": [list(r) for r in runs],
        "kinds": kinds,
        "keys": {h: {"roles": k["roles"], "registered_seq": k["registered_seq"], "revoked_seq": k["revoked_seq"]}
                 for h, k in keys.items()},
        "oids": {o: {k: v for k, v in r.items() if not k.startswith("_")} for o, r in oids.items()},
    }
    diffs = []
    for k, v in exp.items():
        if s.get(k) != v:
            diffs.append(k)
    extra = set(s) - set(exp) - {"tasks"}
    if extra:
        diffs.append(f"unexpected members {sorted(extra)}")
    if "tasks" not in s:
        diffs.append("tasks missing")
    if diffs:
        audit.add("summary_mismatch", "summary.json", None, "differs from the recomputed fold in: " + ", ".join(diffs))
    audit.note("summary: format, tree_size, events, ranges, kinds, keys and oids recomputed; "
               "tasks (verdicts projection) NOT verified")


# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trusted-key", help="verifier key file, or the key text itself")
    ap.add_argument("--allow-external-ref", action="store_true")
    ap.add_argument("--json", action="store_true", help="print {ok, exit_code, report} like docket audit --json")
    ap.add_argument("bundle")
    a = ap.parse_args(argv)
    tk = None
    if a.trusted_key is not None:
        tk = a.trusted_key
        if os.path.isfile(tk):
            with open(tk, encoding="utf-8") as fh:
                tk = fh.read()
        try:
            ds.parse_vkey(tk)
        except ds.NoteError as e:
            print(f"usage: invalid --trusted-key: {e}", file=sys.stderr)
            return 64
    if not os.path.exists(a.bundle):
        print(f"bundle {a.bundle} does not exist", file=sys.stderr)
        return 4
    audit = audit_bundle(a.bundle, tk, a.allow_external_ref)
    code = audit.exit_code()
    if a.json:
        print(json.dumps({"ok": code == 0, "exit_code": code, "report": {"findings": audit.findings}}))
    else:
        for f in audit.findings:
            print(json.dumps(f))
    for n in audit.notes:
        print("note: " + n, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
