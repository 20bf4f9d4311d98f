#!/usr/bin/env python3
"""Independent verifier of Docket export bundles (`docket.bundle/1`).

Written only from docs/BUNDLE.md (its §10 procedure, §10.1 findings table,
§10.2 stop rules, §10.3 output), docs/FORMAT.md (§1.1 author signatures,
§1.2 the strict rule for ledger-key signatures, §8 notes and keys),
docs/DOMAIN.md (§1-§4, §8: admission and the projections) and
tests/vectors/. No Docket source was read.

    python3 verify_bundle.py [--trusted-key VKEY_FILE_OR_TEXT] [--allow-external-ref]
                             [--json] BUNDLE_DIR_OR_TAR

Without --json: one JSON object per finding on stdout (kind, severity, file,
seq, detail). With --json: one object {"ok", "exit_code", "trust", "report"}
like `docket audit --json` (BUNDLE.md §10.3). Exit code as BUNDLE.md §10
(0, 2, 3, 4, 5; 64 for an unparsable --trusted-key, 4 for an unreadable
trusted-key file).

Every check of BUNDLE.md is implemented, including the full re-admission of
a bundle from genesis (DOMAIN.md §8, through admission.py's engine) and the
recomputation of the whole summary.json, `tasks` and `oids` included.
"""
from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import os
import re
import stat
import sys
import tarfile
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docket_spec as ds  # noqa: E402
import admission as ad  # noqa: E402

EXIT = {
    "unsupported_format": 2, "external_ref": 2,
    "summary_mismatch": 3,
    "missing_file": 4, "missing_proof": 4, "missing_context": 4, "missing_blob": 4,
    "malformed": 5, "digest": 5, "unlisted_file": 5, "checkpoint_signature": 5, "key_mismatch": 5,
    "inconsistent": 5, "order": 5, "signature": 5, "chain": 5, "time": 5,
    "inclusion": 5, "root": 5, "consistency": 5, "authority": 5, "blob_digest": 5,
    "retention": 5, "attestation": 5,
    "self_asserted_key": 0, "unknown": 0,
}
WARNINGS = {"self_asserted_key", "unknown"}
RANK = {0: 0, 2: 1, 3: 2, 4: 3, 5: 4}  # 5 > 4 > 3 > 2 (BUNDLE.md §10)
MAX_LISTED = 1000                       # BUNDLE.md §10.1: at most 1,000 listed, the rest counted

TABLE_FILES = ["checkpoint.note", "verifier.vkey", "events.bin", "proofs.json", "summary.json",
               "since.note", "consistency.json"]
REQUIRED_FILES = ["checkpoint.note", "verifier.vkey", "events.bin", "proofs.json", "summary.json"]
HEX64_LOWER = re.compile(r"\A[0-9a-f]{64}\Z")
BLOB_RE = re.compile(r"\Ablobs/[0-9a-f]{64}\Z")
ATT_RE = re.compile(r"\Aattestations/[^/]+\.json\Z")
U64_MAX = 2 ** 64 - 1

# BUNDLE.md §10 step 7 table (= DOMAIN.md §1)
KIND_ROLES = {k: set(v) for k, v in ad.KIND_ROLES.items() if v is not None}
EXT_ROLES = set(ad.X_ROLES)
ROLE_ORDER = ad.ROLE_ORDER


class Stop(Exception):
    """BUNDLE.md §10.2: the audit stops."""


class Audit:
    def __init__(self):
        self.findings = []
        self.notes = []
        self.info = {}

    def add(self, kind, file=None, seq=None, detail=""):
        self.findings.append({"kind": kind, "severity": "warning" if kind in WARNINGS else "error",
                              "file": file, "seq": seq, "detail": detail})

    def note(self, msg):
        self.notes.append(msg)

    @staticmethod
    def _code(fs):
        best = 0
        for f in fs:
            if f["severity"] == "error" and RANK[EXIT[f["kind"]]] > RANK[best]:
                best = EXIT[f["kind"]]
        return best

    def exit_code(self):
        return self._code(self.findings)  # omitted findings count too (BUNDLE.md §10.1)

    def listed(self):
        return self.findings[:MAX_LISTED]

    def omitted(self):
        return self.findings[MAX_LISTED:]


# ---------------------------------------------------------------------------
# §1 Container
# ---------------------------------------------------------------------------

def _utf8(name):
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


class Container:
    def __init__(self):
        self.content = {}      # path -> bytes (regular files; for duplicate tar entries, the last)
        self.entries = []      # every regular entry path, duplicates included (tar)
        self.refused = set()   # links and special entries (external_ref unless allowed)
        self.links = {}        # path -> how to read it when external references are allowed
        self.base = None       # directory relative paths are read from (allow-external-ref)


def read_directory(root, audit, allow_ext):
    c = Container()
    c.base = root
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in list(dirnames) + list(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            st = os.lstat(full)
            if stat.S_ISDIR(st.st_mode):
                if not _utf8(rel):
                    audit.add("external_ref", rel.encode("utf-8", "replace").decode(), None,
                              "directory name is not UTF-8")
                    dirnames.remove(name)
                continue
            if not _utf8(rel):
                audit.add("external_ref", rel.encode("utf-8", "replace").decode(), None,
                          "entry name is not UTF-8")
                continue
            if stat.S_ISLNK(st.st_mode):
                if allow_ext:
                    c.links[rel] = full
                    c.entries.append(rel)
                else:
                    c.refused.add(rel)
                    audit.add("external_ref", rel, None, "symbolic link inside the bundle (not followed)")
                if name in dirnames:
                    dirnames.remove(name)
                continue
            if not stat.S_ISREG(st.st_mode):
                c.refused.add(rel)
                audit.add("external_ref", rel, None, "special file inside the bundle")
                continue
            # a hard link in a directory is read as a regular file (BUNDLE.md §1)
            with open(full, "rb") as fh:
                c.content[rel] = fh.read()
            c.entries.append(rel)
    return c


def read_tar(path, audit, allow_ext):
    c = Container()
    c.base = os.path.dirname(os.path.abspath(path))
    with tarfile.open(path, "r:") as tf:
        members = tf.getmembers()
        for m in members:
            name = m.name
            if not _utf8(name):
                audit.add("external_ref", name.encode("utf-8", "replace").decode(), None,
                          "entry name is not UTF-8")
                continue
            while name.startswith("./"):
                name = name[2:]
            if m.isdir():
                continue
            if m.issym() or m.islnk():
                if allow_ext:
                    c.links[name] = os.path.join(c.base, name)
                    c.entries.append(name)
                else:
                    c.refused.add(name)
                    audit.add("external_ref", name, None,
                              f"{'symbolic' if m.issym() else 'hard'} link to {m.linkname!r} (not followed)")
                continue
            if not m.isreg():
                c.refused.add(name)
                audit.add("external_ref", name, None, "special entry")
                continue
            data = tf.extractfile(m).read()
            if len(data) != m.size:
                raise tarfile.ReadError("truncated entry")
            c.content[name] = data
            c.entries.append(name)
    return c


# ---------------------------------------------------------------------------
# §2 manifest.json
# ---------------------------------------------------------------------------

class JObj(dict):
    dup = False


def _pairs(pairs):
    o = JObj()
    for k, v in pairs:
        if k in o:
            o.dup = True
        o[k] = v
    return o


def _no_const(c):
    raise ValueError(f"{c} is not JSON")


def strict_json(raw: bytes):
    """RFC 8259 as serde_json reads it; objects remember repeated members."""
    return json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_no_const)


def is_u64(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= U64_MAX


def external_reason(p: str):
    if p == "":
        return "empty path"
    if p.startswith("/") or p.startswith("\\"):
        return "absolute path"
    if len(p) >= 2 and p[1] == ":":
        return "drive path"
    if "\\" in p:
        return "backslash"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in p):
        return "control character"
    if "://" in p:
        return "URL"
    if any(comp in ("", ".", "..") for comp in p.split("/")):
        return "empty, '.' or '..' component"
    if p.startswith("data:") or p.startswith("file:"):
        return "URL"
    return None


def defined_path(p):
    return p == "manifest.json" or p in TABLE_FILES or bool(BLOB_RE.match(p)) or bool(ATT_RE.match(p))


def manifest_shape(m):
    """None when the manifest fits BUNDLE.md §2's table, else why not."""
    if not isinstance(m, dict):
        return "not a JSON object"
    if getattr(m, "dup", False):
        return "a member is named twice"
    want = {"format", "origin", "tree_size", "scope", "with_blobs", "files"}
    for k in m:
        if k not in want:
            return f"unknown member {k!r}"
    for k in want:
        if k not in m:
            return f"missing member {k!r}"
    if not isinstance(m["origin"], str):
        return "origin is not a string"
    if not is_u64(m["tree_size"]):
        return "tree_size is not an unsigned 64-bit integer"
    if not isinstance(m["with_blobs"], bool):
        return "with_blobs is not a boolean"
    sc = m["scope"]
    if not isinstance(sc, dict):
        return "scope is not an object"
    if getattr(sc, "dup", False):
        return "a scope member is named twice"
    for k, v in sc.items():
        if k in ("from", "to", "as_of", "since_size"):
            if v is not None and not is_u64(v):
                return f"scope.{k} is not an unsigned integer or null"
        elif k == "tasks":
            if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                return "scope.tasks is not an array of strings"
        else:
            return f"unknown scope member {k!r}"
    fl = m["files"]
    if not isinstance(fl, dict):
        return "files is not an object"
    for path, ent in fl.items():
        if not isinstance(ent, dict):
            return f"files[{path!r}] is not an object"
        if getattr(ent, "dup", False):
            return f"files[{path!r}] names a member twice"
        if set(ent) != {"sha256", "size"}:
            return f"files[{path!r}] is not exactly {{sha256, size}}"
        if not isinstance(ent["sha256"], str) or not is_u64(ent["size"]):
            return f"files[{path!r}] has a wrong type"
    return None


def check_manifest(c: Container, audit, allow_ext):
    """Returns (manifest, read) where read maps path -> content of the files
    the later steps use."""
    raw = c.content.get("manifest.json")
    if raw is None:
        audit.add("missing_file", "manifest.json", None, "the bundle has no manifest.json")
        raise Stop
    try:
        m = strict_json(raw)
    except (UnicodeDecodeError, ValueError) as e:
        audit.add("malformed", "manifest.json", None, f"not JSON: {e}")
        raise Stop
    if isinstance(m, dict) and isinstance(m.get("format"), str) and m["format"] != "docket.bundle/1":
        audit.add("unsupported_format", "manifest.json", None, f"format {m['format']!r}")
        raise Stop
    why = manifest_shape(m)
    if why is None and m["format"] != "docket.bundle/1":
        why = "format is not docket.bundle/1"
    if why:
        audit.add("malformed", "manifest.json", None, why)
        raise Stop
    files = m["files"]
    read = {}
    reported_missing = set()
    for path in sorted(files, key=lambda p: p.encode("utf-8", "surrogatepass")):
        ent = files[path]
        ext = external_reason(path)
        if ext and not allow_ext:
            audit.add("external_ref", path, None, f"manifest path refers outside the bundle ({ext})")
            continue
        if not defined_path(path) and not ext:
            audit.add("unknown", path, None, "path not defined by docket.bundle/1 (read and digest-checked)")
        if path in c.refused:
            continue
        content = None
        if ext:
            if "://" in path:
                audit.add("missing_file", path, None, "a URL is never fetched (an audit is offline)")
                reported_missing.add(path)
                continue
            full = path if os.path.isabs(path) else os.path.join(c.base, path)
            try:
                with open(full, "rb") as fh:
                    content = fh.read()
            except OSError:
                content = None
        elif path in c.links:
            try:
                with open(c.links[path], "rb") as fh:
                    content = fh.read()
            except OSError:
                content = None
        else:
            content = c.content.get(path)
        if content is None:
            audit.add("missing_file", path, None, "listed in the manifest, absent")
            reported_missing.add(path)
            continue
        if len(content) != ent["size"] or hashlib.sha256(content).hexdigest() != ent["sha256"]:
            audit.add("digest", path, None, "size or SHA-256 differs from the manifest")
        read[path] = content
    for path in sorted(c.entries, key=lambda p: p.encode()):
        if path == "manifest.json" or path in files:
            continue
        audit.add("unlisted_file", path, None, "present but not listed in the manifest")
    for req in TABLE_FILES:
        if req not in files and req in c.content and req not in read:
            read[req] = c.content[req]   # unlisted: used as if listed (BUNDLE.md §2)
    for req in REQUIRED_FILES:
        if req not in files and req not in c.content and req not in c.links:
            audit.add("missing_file", req, None, "required file neither listed nor present")
            reported_missing.add(req)
    return m, read, reported_missing


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def runs_of(seqs):
    runs = []
    for s in seqs:
        if runs and s == runs[-1][1] + 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    return runs


def genesis_reads(payload: bytes):
    """DOMAIN.md §3.0: the genesis payload reads as a typed document."""
    try:
        doc = strict_json(payload)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict) or getattr(doc, "dup", False):
        return None
    if set(doc) != {"origin", "ledger_key", "admin_key", "ledger_roles"}:
        return None
    if not all(isinstance(doc[k], str) for k in ("origin", "ledger_key", "admin_key")):
        return None
    r = doc["ledger_roles"]
    if not isinstance(r, list) or not all(isinstance(x, str) and x in ROLE_ORDER for x in r):
        return None
    return doc


def rfc3339_ms(ms):
    """OBSERVED (BUNDLE.md §9 only says "RFC 3339"): Docket writes the
    milliseconds without trailing zeros (`…:01.49Z` for 490 ms); GUESS: no
    fraction at all for a whole second."""
    dt = datetime.fromtimestamp(ms // 1000, tz=timezone.utc)
    frac = ("%03d" % (ms % 1000)).rstrip("0")
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + ("." + frac if frac else "") + "Z"


# ---------------------------------------------------------------------------
# The audit (§10)
# ---------------------------------------------------------------------------

def audit_bundle(path, trusted_key_text=None, allow_ext=False):
    audit = Audit()
    try:
        _audit(path, trusted_key_text, allow_ext, audit)
    except Stop:
        pass
    return audit


def _audit(path, tk_text, allow_ext, audit):
    # ---- step 1: container and manifest
    if os.path.isdir(path):
        c = read_directory(path, audit, allow_ext)
    else:
        try:
            if not os.path.isfile(path):
                raise OSError("no such bundle")
            c = read_tar(path, audit, allow_ext)
        except (tarfile.TarError, OSError, EOFError) as e:
            audit.add("missing_file", None, None, f"the bundle cannot be opened: {e}")
            raise Stop
    manifest, read, reported_missing = check_manifest(c, audit, allow_ext)

    # ---- step 2: the verifier key (§3)
    bundle_vk = None
    vraw = read.get("verifier.vkey")
    if vraw is not None:
        try:
            text = vraw.decode("utf-8")
            body = text.rstrip("\n")
            bundle_vk, canon = ds.parse_vkey_fmt(body)
            if body != canon:
                audit.add("malformed", "verifier.vkey", None, "not in canonical form (the parsed key is used)")
        except (UnicodeDecodeError, ds.NoteError) as e:
            bundle_vk = None
            audit.add("malformed", "verifier.vkey", None, f"does not parse: {e}")
    if tk_text is not None:
        vk, _ = ds.parse_vkey_fmt(tk_text.strip())
        trust = "trusted key"
        if bundle_vk is not None and (bundle_vk.name, bundle_vk.public_key) != (vk.name, vk.public_key):
            audit.add("key_mismatch", "verifier.vkey", None, "verifier.vkey is not the trusted key")
    else:
        vk = bundle_vk
        trust = "untrusted key"
        audit.add("self_asserted_key", "verifier.vkey", None,
                  "no trusted key given: the bundle's own key was used")
    audit.info["trust"] = trust
    audit.info["key"] = vk.text if vk is not None else None

    # ---- step 3: checkpoint.note (§3)
    craw = read.get("checkpoint.note")
    if craw is None:
        raise Stop
    err, kind, text = ds.open_note_fmt(craw, vk)
    if text is None:
        audit.add("malformed", "checkpoint.note", None, "not UTF-8")
        raise Stop
    if kind is not None:
        audit.add(kind, "checkpoint.note", None, err)
        try:
            cp = ds.parse_checkpoint_body(ds.unverified_body(text))
        except ds.NoteError as e:
            audit.add("malformed", "checkpoint.note", None, f"the unverified body does not parse either: {e}")
            raise Stop
    else:
        cp = ds.parse_checkpoint_body(ds.unverified_body(text))
    if manifest["origin"] != cp.origin:
        audit.add("inconsistent", "manifest.json", None, f"origin {manifest['origin']!r} != checkpoint {cp.origin!r}")
    if manifest["tree_size"] != cp.size:
        audit.add("inconsistent", "manifest.json", None, f"tree_size {manifest['tree_size']} != checkpoint {cp.size}")
    if vk is not None and vk.name != cp.origin:
        audit.add("key_mismatch", "verifier.vkey", None, f"key name {vk.name!r} != checkpoint origin {cp.origin!r}")
    audit.info.update(origin=cp.origin, tree_size=cp.size, root=cp.root.hex())

    # ---- step 4: events.bin (§4)
    decoded = []
    eraw = read.get("events.bin") or b""
    off, n, idx = 0, len(eraw), 0
    while off < n:
        if n - off < 4:
            audit.add("malformed", "events.bin", None, f"record {idx}: length prefix cut short")
            break
        ln = int.from_bytes(eraw[off:off + 4], "big")
        if not 1 <= ln <= 262_369 or off + 4 + ln > n:
            audit.add("malformed", "events.bin", None, f"record {idx}: length {ln} out of bounds or past the end")
            break
        body = eraw[off + 4:off + 4 + ln]
        off += 4 + ln
        try:
            decoded.append(ds.decode_event(body))
        except ds.DecodeError as e:
            audit.add("malformed", "events.bin", None, f"record {idx} is not an event: {e}")
        idx += 1
    for ev in decoded:
        if ds.verify_rule(ev.author, ev.message, ev.signature):
            audit.add("signature", "events.bin", ev.seq, "author signature does not verify (FORMAT.md §1.1)")
        if ev.seq >= cp.size:
            audit.add("inclusion", "events.bin", ev.seq, f"seq {ev.seq} is beyond the tree size {cp.size}")
    inclusion_seqs = {ev.seq for ev in decoded if ev.seq >= cp.size}

    # ---- step 5: order, chain, time (§4.3)
    prev = None
    for ev in decoded:
        if prev is not None and ev.seq <= prev:
            audit.add("order", "events.bin", ev.seq, f"seq {ev.seq} after {prev}")
            break
        prev = ev.seq
    by_seq = {}
    for ev in decoded:
        by_seq.setdefault(ev.seq, ev)
    seqs = sorted(by_seq)
    events = [by_seq[s] for s in seqs]
    runs = runs_of(seqs)
    from_genesis = len(runs) == 1 and runs[0][0] == 0
    whole = from_genesis and runs[0][1] == cp.size - 1
    audit.info.update(events=len(events), ranges=runs, from_genesis=from_genesis, whole_tree=whole)
    for a, b in runs:
        for s in range(a, b + 1):
            ev = by_seq[s]
            if s == 0:
                if ev.prev_hash != b"\x00" * 32:
                    audit.add("chain", "events.bin", 0, "genesis prev_hash is not all zero")
            elif s > a and ev.prev_hash != by_seq[s - 1].leaf_hash:
                audit.add("chain", "events.bin", s, "prev_hash is not the leaf hash of the event before")
    hi = None
    for ev in events:
        if hi is not None and ev.recorded_at_ms < hi:
            audit.add("time", "events.bin", ev.seq, f"recorded_at_ms {ev.recorded_at_ms} < {hi}")
        hi = ev.recorded_at_ms if hi is None else max(hi, ev.recorded_at_ms)

    # ---- step 6: proofs and coverage (§5)
    proven = set()
    praw = read.get("proofs.json")
    if praw is not None:
        pj = None
        try:
            pj = strict_json(praw)
            why = proofs_shape(pj)
        except (UnicodeDecodeError, ValueError) as e:
            why = f"not JSON: {e}"
        if why:
            audit.add("malformed", "proofs.json", None, why)
        else:
            if pj["tree_size"] != cp.size:
                audit.add("inconsistent", "proofs.json", None, f"tree_size {pj['tree_size']} != checkpoint {cp.size}")
            if pj["root"] != cp.root.hex():
                audit.add("root", "proofs.json", None, "root is not the checkpoint's root")
            for ent in pj["inclusion"]:
                s = ent["seq"]
                ev = by_seq.get(s)
                if ev is None:
                    audit.add("unknown", "proofs.json", s, "proof of an event the bundle does not carry")
                    continue
                if ent["leaf_hash"] != ev.leaf_hash.hex():
                    audit.add("inclusion", "proofs.json", s, "leaf_hash is not the carried event's")
                    inclusion_seqs.add(s)
                if not all(HEX64_LOWER.match(x) for x in ent["path"]):
                    audit.add("malformed", "proofs.json", s, "a path element is not 64 lower-case hex digits")
                    continue
                e2 = ds.verify_inclusion(s, cp.size, ev.leaf_hash, [bytes.fromhex(x) for x in ent["path"]], cp.root)
                if e2:
                    audit.add("inclusion", "proofs.json", s, f"inclusion proof fails: {e2}")
                    inclusion_seqs.add(s)
                else:
                    proven.add(s)
    for a, b in runs:
        for s in sorted({a, b}):
            if s in proven or s in inclusion_seqs or s >= cp.size:
                continue
            audit.add("missing_proof", "proofs.json", s, f"no verifying proof for seq {s}, an end of run [{a}, {b}]")
    if whole:
        if ds.mth_from_leaf_hashes([e.leaf_hash for e in events]) != cp.root:
            audit.add("root", "events.bin", None, "the root recomputed from the carried events is not the checkpoint's")

    # ---- step 7: genesis (§4.4) and authority
    if not events:
        audit.add("missing_context", "events.bin", None, "the bundle carries no event")
    elif events[0].seq != 0:
        audit.add("missing_context", "events.bin", 0, "the genesis event (seq 0) is not carried")
    elif events[0].kind == "ledger.genesis":
        g = genesis_reads(events[0].payload)
        if g is None:
            audit.add("authority", "events.bin", 0, "the genesis payload does not decode")
        else:
            if vk is not None and g["ledger_key"] != vk.public_key.hex():
                audit.add("key_mismatch", "verifier.vkey", 0, "genesis ledger_key is not the key in use")
            if g["origin"] != cp.origin:
                audit.add("key_mismatch", "checkpoint.note", 0, "genesis origin is not the checkpoint origin")
    if from_genesis:
        readmit_all(events, audit)
    else:
        check_partial_authority(events, audit)

    # ---- step 8: consistency (§6), blobs (§7), attestations (§9)
    check_consistency(read, manifest, cp, vk, audit, reported_missing)
    keys, tasks, oids, _ = ad.summary_projections(
        [(e.seq, e.recorded_at_ms, e.kind, e.author, e.payload) for e in events])
    check_blobs(read, manifest, oids, audit)
    if vk is not None:
        check_attestations(read, by_seq, vk, cp.origin, tasks, audit)

    # ---- step 9: summary (§8)
    check_summary(read, cp, events, runs, keys, tasks, oids, audit)


def proofs_shape(pj):
    if not isinstance(pj, dict) or getattr(pj, "dup", False) or set(pj) != {"tree_size", "root", "inclusion"}:
        return "not exactly {tree_size, root, inclusion}"
    if not is_u64(pj["tree_size"]) or not isinstance(pj["root"], str) or not isinstance(pj["inclusion"], list):
        return "a member has a wrong type"
    for ent in pj["inclusion"]:
        if not isinstance(ent, dict) or getattr(ent, "dup", False) or set(ent) != {"seq", "leaf_hash", "path"}:
            return "an inclusion entry is not exactly {seq, leaf_hash, path}"
        if not is_u64(ent["seq"]) or not isinstance(ent["leaf_hash"], str) or not (
                isinstance(ent["path"], list) and all(isinstance(x, str) for x in ent["path"])):
            return "an inclusion entry has a wrong type"
    return None


# ---------------------------------------------------------------------------
# §10 step 7: admission
# ---------------------------------------------------------------------------

def readmit_all(events, audit):
    """A bundle from genesis: every event re-admitted with DOMAIN.md §8 steps
    2-5 against the state folded from the admitted events before it; a
    refused event is one `authority` and is not folded."""
    st = ad.State()
    for ev in events:
        try:
            doc = ad.admit(st, ev.seq, ev.recorded_at_ms, ev.kind, ev.author, ev.payload, ev.signature,
                           check_signature=False)
        except ad.Refused as r:
            audit.add("authority", "events.bin", ev.seq, f"refused on re-admission: {r.code}: {r.message}")
            continue
        except Exception as e:  # the engine could not judge it: count it refused, and say so
            audit.add("authority", "events.bin", ev.seq, f"refused on re-admission (checker error {e!r})")
            audit.note(f"admission engine error at seq {ev.seq}: {e!r}")
            continue
        ad.fold(st, ev.seq, ev.recorded_at_ms, ev.kind, ev.author, ev.payload, doc)


def check_partial_authority(events, audit):
    keys = {}
    flagged = set()
    for ev in events:
        s, t, a = ev.seq, ev.recorded_at_ms, ev.author.hex()
        if s == 0:
            try:
                doc = ad.admit(ad.State(), 0, t, ev.kind, ev.author, ev.payload, ev.signature, check_signature=False)
            except ad.Refused as r:
                audit.add("authority", "events.bin", 0, f"refused on re-admission: {r.code}: {r.message}")
                continue
            keys[doc["ledger_key"]] = {"roles": ad._roles(doc["ledger_roles"]), "reg": 0, "rev": None,
                                       "nb": None, "na": None}
            keys[doc["admin_key"]] = {"roles": ["admin"], "reg": 0, "rev": None, "nb": None, "na": None}
            continue
        if ev.kind == "ledger.genesis":
            audit.add("authority", "events.bin", s, "ledger.genesis after sequence 0")
            continue
        if ev.kind not in KIND_ROLES and not ev.kind.startswith("x-"):
            audit.add("authority", "events.bin", s, f"unknown kind {ev.kind!r}")
            continue
        k = keys.get(a)
        if k is None:
            if a not in flagged:
                flagged.add(a)
                audit.add("missing_context", "events.bin", s, f"the registration of author {a} is not carried")
            fold_key_event(keys, ev, audit, report=False)
            continue
        if k["rev"] is not None and k["rev"] < s:
            audit.add("authority", "events.bin", s, f"key was revoked at seq {k['rev']}")
            continue
        if not (k["reg"] < s and (k["nb"] is None or k["nb"] <= t) and (k["na"] is None or t <= k["na"])):
            audit.add("authority", "events.bin", s, "key is outside its validity window")
            continue
        need = EXT_ROLES if ev.kind.startswith("x-") else KIND_ROLES[ev.kind]
        if not need & set(k["roles"]):
            audit.add("authority", "events.bin", s,
                      f"needs one of the roles {[r for r in ROLE_ORDER if r in need]}; has {k['roles']}")
            continue
        fold_key_event(keys, ev, audit, report=True)


def fold_key_event(keys, ev, audit, report):
    if ev.kind not in ("key.registered", "key.revoked"):
        return
    doc = ad.decode_payload(ev.kind, ev.payload)
    if doc is None:
        return
    pk = doc["public_key"]
    if ev.kind == "key.registered":
        if pk in keys:
            if report:
                audit.add("authority", "events.bin", ev.seq, f"key {pk} already has a record")
            return
        keys[pk] = {"roles": ad._roles(doc["roles"]), "reg": ev.seq, "rev": None,
                    "nb": doc.get("not_before_ms"), "na": doc.get("not_after_ms")}
    else:
        k = keys.get(pk)
        if k is None:
            return
        if k["rev"] is not None:
            if report:
                audit.add("authority", "events.bin", ev.seq, f"key {pk} is already revoked")
            return
        k["rev"] = ev.seq


# ---------------------------------------------------------------------------
# §6 since.note and consistency.json
# ---------------------------------------------------------------------------

def check_consistency(read, manifest, cp, vk, audit, reported_missing):
    since_size = manifest["scope"].get("since_size")
    if since_size is None and "since.note" not in read and "consistency.json" not in read:
        return
    for f in ("since.note", "consistency.json"):
        if f not in read and f not in reported_missing:
            audit.add("missing_file", f, None, "needed by scope.since_size / --since")
    if "since.note" not in read:
        return
    if vk is None:
        audit.note("since.note not checked: no usable verifier key (BUNDLE.md §6)")
        return
    err, kind, text = ds.open_note_fmt(read["since.note"], vk)
    if text is None:
        audit.add("malformed", "since.note", None, "not UTF-8")
        return
    if kind is not None:
        audit.add("checkpoint_signature", "since.note", None, err)
        return
    old = ds.parse_checkpoint_body(ds.unverified_body(text))
    if old.origin != cp.origin:
        audit.add("consistency", "since.note", None, f"origin {old.origin!r} is not the checkpoint's")
    if since_size is not None and since_size != old.size:
        audit.add("inconsistent", "manifest.json", None, f"scope.since_size {since_size} != since.note size {old.size}")
    if "consistency.json" not in read:
        return
    try:
        cj = strict_json(read["consistency.json"])
    except (UnicodeDecodeError, ValueError) as e:
        audit.add("malformed", "consistency.json", None, f"not JSON: {e}")
        return
    if (not isinstance(cj, dict) or getattr(cj, "dup", False)
            or set(cj) != {"old_size", "old_root", "new_size", "new_root", "path"}
            or not is_u64(cj["old_size"]) or not is_u64(cj["new_size"])
            or not isinstance(cj["old_root"], str) or not isinstance(cj["new_root"], str)
            or not isinstance(cj["path"], list) or not all(isinstance(x, str) for x in cj["path"])):
        audit.add("malformed", "consistency.json", None, "not exactly {old_size, old_root, new_size, new_root, path}")
        return
    if (cj["old_size"] != old.size or cj["old_root"] != old.root.hex()
            or cj["new_size"] != cp.size or cj["new_root"] != cp.root.hex()):
        audit.add("consistency", "consistency.json", None, "old_*/new_* are not since.note's and the checkpoint's")
    if not all(HEX64_LOWER.match(x) for x in cj["path"]):
        audit.add("malformed", "consistency.json", None, "a path element is not 64 lower-case hex digits")
        return
    e = ds.verify_consistency(old.size, cp.size, old.root, cp.root, [bytes.fromhex(x) for x in cj["path"]])
    if e:
        audit.add("consistency", "consistency.json", None, f"consistency proof fails: {e}")


# ---------------------------------------------------------------------------
# §7 blobs
# ---------------------------------------------------------------------------

def check_blobs(read, manifest, oids, audit):
    needed = set()
    for o in oids.values():
        if o["state"] == "live":
            needed.add(o["sha256"])
        elif o["state"] == "redacted" and o["removal"] is not None:
            needed.add(o["removal"]["redacted_sha256"])
    removed = {}  # digest -> removal.seq of the removing OID whose text sorts last
    for oid in sorted(oids):
        o = oids[oid]
        if o["state"] in ("expired", "redacted") and o["sha256"] not in needed:
            removed[o["sha256"]] = o["removal"]["seq"]
    blobs = {p[6:]: read[p] for p in read if BLOB_RE.match(p)}
    for h in sorted(blobs):
        if hashlib.sha256(blobs[h]).hexdigest() != h:
            audit.add("blob_digest", "blobs/" + h, None, "content's SHA-256 is not its name")
        if h in removed:
            audit.add("retention", "blobs/" + h, removed[h], f"content removed by event {removed[h]} is present")
        elif h not in needed:
            audit.add("unknown", "blobs/" + h, None, "content no carried OID needs")
    if manifest["with_blobs"]:
        for h in sorted(x for x in needed if isinstance(x, str)):
            if h in blobs:
                continue
            regs = [oid for oid in sorted(oids) if oids[oid]["sha256"] == h]
            audit.add("missing_blob", "blobs/" + h, oids[regs[-1]]["registered_seq"] if regs else None,
                      "content a carried OID holds is absent")


# ---------------------------------------------------------------------------
# §9 attestations
# ---------------------------------------------------------------------------

PASS_WORDS = {"PASS", "PASSED", "pass", "ok", "true"}


def _passed(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v in PASS_WORDS
    if isinstance(v, dict):
        for k in ("passed", "ok", "result", "status"):
            if k in v:
                return _passed(v[k])
    return None


def test_pairs(payload: bytes):
    try:
        p = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    pairs = []
    checks = p.get("checks") if isinstance(p, dict) else None
    if isinstance(checks, dict):
        for name in sorted(checks, key=lambda x: x.encode()):
            ok = _passed(checks[name])
            if ok is not None:
                pairs.append((name, ok))
    elif isinstance(checks, list):
        for el in checks:
            if isinstance(el, dict) and isinstance(el.get("name"), str):
                ok = _passed(el)
                if ok is not None:
                    pairs.append((el["name"], ok))
    elif isinstance(p, dict) and isinstance(p.get("name"), str):
        ok = _passed(p)
        if ok is not None:
            pairs.append((p["name"], ok))
    return pairs


def expected_statement(name, ev, origin):
    """BUNDLE.md §9: the statement Docket writes for `name` and event `ev`,
    or None when the event has no such attestation."""
    m = re.fullmatch(r"attestations/(verdict|check)-(\d+)\.(vsa|test-result)\.dsse\.json", name)
    if not m or int(m.group(2)) != ev.seq:
        return None
    what, typ = m.group(1), m.group(3)
    try:
        p = json.loads(ev.payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(p, dict):
        return None
    task = ad.canonical_task_id(p.get("task_id")) or p.get("task_id")
    subject = [{"name": f"docket://{origin}/tasks/{task}/{ev.kind}/{ev.seq}",
                "digest": {"sha256": hashlib.sha256(ev.payload).hexdigest()}}]
    binding = {"uri": f"docket://{origin}/log/{ev.seq}", "digest": {"sha256": ev.leaf_hash.hex()}}
    verdict_kinds = ("verdict.issued", "verdict.imported", "verdict.deadline_passed")
    if what == "verdict" and typ == "vsa":
        if ev.kind not in verdict_kinds:
            return None
        passed = p.get("verdict") == "PASS"
        verifier = {"id": f"docket://{origin}/keys/{ev.author.hex()}"}
        eng = p.get("engine")
        if isinstance(eng, dict):
            verifier["engine"] = eng
        pred = {"verifier": verifier, "timeVerified": rfc3339_ms(ev.recorded_at_ms),
                "resourceUri": f"docket://{origin}/tasks/{task}",
                "policy": {"uri": f"docket://{origin}/tasks/{task}/contract"},
                "inputAttestations": [binding],
                "verificationResult": "PASSED" if passed else "FAILED",
                "verifiedLevels": ["DOCKET_VERDICT_PASS"] if passed else ["FAILED"],
                "slsaVersion": "1.0"}
        ptype = "https://slsa.dev/verification_summary/v1"
    elif typ == "test-result" and ((what == "verdict" and ev.kind in verdict_kinds)
                                   or (what == "check" and ev.kind == "check.recorded")):
        pairs = test_pairs(ev.payload)
        if what == "verdict" and not pairs:
            return None
        if pairs is None:
            return None
        pred = {"result": "PASSED" if pairs and all(ok for _, ok in pairs) else "FAILED",
                "configuration": [binding],
                # OBSERVED (BUNDLE.md §9 names `url` but not its value): the log URI
                "url": f"docket://{origin}/log/{ev.seq}",
                "passedTests": [n for n, ok in pairs if ok], "warnedTests": [],
                "failedTests": [n for n, ok in pairs if not ok]}
        ptype = "https://in-toto.io/attestation/test-result/v0.1"
    else:
        return None
    return {"_type": "https://in-toto.io/Statement/v1", "subject": subject,
            "predicateType": ptype, "predicate": pred}


def _strip_version(st):
    try:
        st = json.loads(json.dumps(st))
        st["predicate"]["verifier"].pop("version", None)
    except (KeyError, TypeError, AttributeError):
        pass
    return st


def check_attestations(read, by_seq, vk, origin, tasks, audit):
    for path in sorted((p for p in read if p.startswith("attestations/")), key=lambda p: p.encode()):
        try:
            env = json.loads(read[path].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            env = None
        if not (isinstance(env, dict) and isinstance(env.get("payloadType"), str)
                and isinstance(env.get("payload"), str) and isinstance(env.get("signatures"), list)
                and all(isinstance(s, dict) and isinstance(s.get("sig"), str) for s in env["signatures"])):
            audit.add("malformed", path, None, "not a DSSE envelope")
            continue
        ptype = env["payloadType"]
        if ptype != "application/vnd.in-toto+json":
            audit.add("attestation", path, None, f"payloadType {ptype!r}")
        try:
            body = ds.b64_strict(env["payload"])
        except (ValueError, binascii.Error):
            audit.add("attestation", path, None, "payload is not base64")
            continue
        pt = ptype.encode()
        pae = b"DSSEv1 %d %s %d %s" % (len(pt), pt, len(body), body)
        ok = False
        for s in env["signatures"]:
            try:
                sig = ds.b64_strict(s["sig"])
            except (ValueError, binascii.Error):
                continue
            if len(sig) == 64 and ds.verify_strict(vk.public_key, pae, sig):
                ok = True
                break
        if not ok:
            audit.add("attestation", path, None, "no DSSE signature verifies with the key in use (FORMAT.md §1.2)")
            continue
        try:
            st = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            audit.add("malformed", path, None, "the statement is not JSON")
            continue
        if not isinstance(st, dict) or st.get("_type") != "https://in-toto.io/Statement/v1":
            audit.add("attestation", path, None, "_type is not the in-toto Statement v1 URI")
        pred = st.get("predicate") if isinstance(st, dict) else None
        arr = None
        if isinstance(pred, dict):
            arr = pred["inputAttestations"] if "inputAttestations" in pred else pred.get("configuration")
        bound = None
        for el in arr if isinstance(arr, list) else []:
            if not isinstance(el, dict) or not isinstance(el.get("uri"), str):
                continue
            dg = el.get("digest")
            if not isinstance(dg, dict) or not isinstance(dg.get("sha256"), str):
                continue
            m = re.fullmatch(r"docket://(.*)/log/([0-9]+)", el["uri"])
            if not m or m.group(1) != origin:
                continue
            s = int(m.group(2))
            ev = by_seq.get(s)
            if ev is not None and ev.leaf_hash.hex() == dg["sha256"]:
                bound = ev
            else:
                audit.add("attestation", path, s, "binds to no carried event with that leaf hash")
        if bound is None:
            audit.add("attestation", path, None, "binds to no carried event")
            continue
        exp = expected_statement(path, bound, origin)
        if exp is None or _strip_version(exp) != _strip_version(st):
            audit.add("attestation", path, bound.seq, "the statement is not the one its event gives under this name")


# ---------------------------------------------------------------------------
# §8 summary.json
# ---------------------------------------------------------------------------

def check_summary(read, cp, events, runs, keys, tasks, oids, audit):
    raw = read.get("summary.json")
    if raw is None:
        return
    try:
        s = json.loads(raw.decode("utf-8"), parse_constant=_no_const)
    except (UnicodeDecodeError, ValueError) as e:
        audit.add("malformed", "summary.json", None, f"not JSON: {e}")
        return
    kinds = {}
    for ev in events:
        kinds[ev.kind] = kinds.get(ev.kind, 0) + 1
    exp = json.loads(json.dumps({
        "format": "docket.summary/1", "tree_size": cp.size, "events": len(events),
        "ranges": [list(r) for r in runs], "kinds": kinds, "keys": keys, "tasks": tasks, "oids": oids}))
    if s != exp:
        diff = sorted(set(s) ^ set(exp)) if isinstance(s, dict) else ["not an object"]
        if isinstance(s, dict):
            diff += [k for k in exp if k in s and s[k] != exp[k]]
        audit.add("summary_mismatch", "summary.json", None, "differs from the recomputed summary in: " + ", ".join(diff))


# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trusted-key", help="verifier key text, or a file holding one")
    ap.add_argument("--allow-external-ref", action="store_true")
    ap.add_argument("--json", action="store_true", help="print {ok, exit_code, trust, report} like docket audit --json")
    ap.add_argument("bundle")
    a = ap.parse_args(argv)
    tk = None
    if a.trusted_key is not None:
        tk = a.trusted_key.strip()
        try:
            ds.parse_vkey_fmt(tk)
        except ds.NoteError:
            try:
                with open(a.trusted_key, encoding="utf-8") as fh:
                    tk = fh.read().strip()
            except (OSError, UnicodeDecodeError) as e:
                if os.path.exists(a.trusted_key) or "/" in a.trusted_key:
                    print(json.dumps({"error": f"cannot read the trusted key: {e}", "exit_code": 4})
                          if a.json else f"cannot read the trusted key: {e}", file=sys.stdout if a.json else sys.stderr)
                    return 4
                print(json.dumps({"error": "unparsable --trusted-key", "exit_code": 64})
                      if a.json else "usage: unparsable --trusted-key", file=sys.stdout if a.json else sys.stderr)
                return 64
            try:
                ds.parse_vkey_fmt(tk)
            except ds.NoteError as e:
                print(json.dumps({"error": f"unparsable --trusted-key: {e}", "exit_code": 64})
                      if a.json else f"usage: unparsable --trusted-key: {e}", file=sys.stdout if a.json else sys.stderr)
                return 64
    audit = audit_bundle(a.bundle, tk, a.allow_external_ref)
    code = audit.exit_code()
    om = audit.omitted()
    if a.json:
        rep = {"bundle": a.bundle, **audit.info, "findings": audit.listed(),
               "findings_omitted": len(om), "findings_omitted_exit_code": Audit._code(om)}
        print(json.dumps({"ok": code == 0, "exit_code": code, "trust": audit.info.get("trust"), "report": rep}))
    else:
        for f in audit.listed():
            print(json.dumps(f))
        if om:
            print(json.dumps({"findings_omitted": len(om), "findings_omitted_exit_code": Audit._code(om)}))
    for n in audit.notes:
        print("note: " + n, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
