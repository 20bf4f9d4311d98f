#!/usr/bin/env python3
"""Independent admission checker for Docket (auditor's re-implementation).

Written ONLY from the published documentation (docs/DOMAIN.md, docs/FORMAT.md,
docs/RETENTION.md, docs/VERIFIER.md, docs/BUNDLE.md), the seed documents and
the vectors under tests/vectors/ -- no Rust source was read.

For every case of tests/vectors/admission/vectors.json it
  1. decodes each log event (FORMAT.md section 3), checks seq, prev_hash chain,
     time order and the author signature (FORMAT.md section 1.1, strict +
     cofactored),
  2. re-admits each log event against the state folded from the events before
     it (DOMAIN.md section 1.2, 1.3, 8) and folds it (DOMAIN.md section 4),
  3. judges the statement at `position` (admitted / refused with a code /
     duplicate of a seq), folds it when admitted, and resolves the optional
     `projection` JSON pointers,
and compares with `expected`.  It also checks tests/vectors/oid/ (DOMAIN.md
section 2) and the signature rule against tests/vectors/signatures/.

Usage:  python3 tests/independent/admission.py [-v] [FILTER ...]
        (-v prints the outcome/message of every case; FILTER keeps case names
        containing it; exit status 0 when everything agrees)

Decisions taken from the vectors rather than the docs, or guessed (see the
audit report; search for "GUESS" below):
  * statement-digest duplicate check runs before the signature check;
  * `/applied` pointer = number of events folded (undocumented);
  * submissions[].touched_oids is omitted when the statement has none;
  * verdict.deadline_passed: codes and order (INVALID for as_of < deadline,
    FAILED_PRECONDITION for the rest; "once per task" before "task has a
    verdict" before the submission_seq check);
  * verdict.imported: artifacts/missing_paths vs evidence_paths is INVALID;
    imported OID indices start at 0 for the first file present; imported OIDs
    join the task's `evidence`; submission_seq absent while the task has a
    submission is FAILED_PRECONDITION;
  * unknown fields refused for key/genesis/import/deadline payloads too;
  * an expired request is one with t > expires_at_ms; a request may be
    created with expires_at == t; redacted OIDs may be submitted;
  * removal.reason default "expired under the <class> retention class" and
    the retention projection layout come from tests/vectors/summary.
"""

import base64
import copy
import hashlib
import json
import os
import re
import struct
import sys
import uuid
from datetime import datetime, timezone

try:  # fast path for step 4 of the signature rule (cofactorless => cofactored)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.exceptions import InvalidSignature
except Exception:  # pragma: no cover
    Ed25519PublicKey = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VEC = os.path.join(ROOT, "tests", "vectors")

# --------------------------------------------------------------------------
# Ed25519, FORMAT.md section 1.1 (canonical S, canonical non-small-order A
# and R, cofactored equation)
# --------------------------------------------------------------------------
P = 2 ** 255 - 19
L = 2 ** 252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, P - 2, P) % P
SQRTM1 = pow(2, (P - 1) // 4, P)
SMALL_ORDER = {bytes.fromhex(h) for h in (
    "0100000000000000000000000000000000000000000000000000000000000000",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
)}


def _decode_point(b):
    """RFC 8032 5.1.3 with its failure cases; None when not canonical."""
    if len(b) != 32:
        return None
    y = int.from_bytes(b, "little") & ((1 << 255) - 1)
    sign = b[31] >> 7
    if y >= P:
        return None
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    if x2 == 0:
        if sign:
            return None
        x = 0
    else:
        x = pow(x2, (P + 3) // 8, P)
        if (x * x - x2) % P:
            x = x * SQRTM1 % P
        if (x * x - x2) % P:
            return None
        if (x & 1) != sign:
            x = P - x
    return (x, y, 1, x * y % P)


def _add(p, q):
    x1, y1, z1, t1 = p
    x2, y2, z2, t2 = q
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = t1 * 2 * D * t2 % P
    d = z1 * 2 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _neg(p):
    x, y, z, t = p
    return ((-x) % P, y, z, (-t) % P)


def _mul(s, p):
    q = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = _add(q, p)
        p = _add(p, p)
        s >>= 1
    return q


def _is_identity(p):
    x, y, z, _ = p
    return x % P == 0 and (y - z) % P == 0


_BY = 4 * pow(5, P - 2, P) % P
B = _decode_point(_BY.to_bytes(32, "little"))


def key_is_acceptable(pub):
    """Step 2 of section 1.1 (also what key.registered requires, FORMAT.md section 1)."""
    if _decode_point(pub) is None:
        return "non_canonical_key"
    if pub in SMALL_ORDER:
        return "small_order_key"
    return None


def verify_sig(pub, msg, sig):
    """Returns None when valid, else the error name of FORMAT.md section 1.1."""
    if len(sig) != 64 or len(pub) != 32:
        return "equation"
    rb, sb = sig[:32], sig[32:]
    s = int.from_bytes(sb, "little")
    if s >= L:
        return "non_canonical_s"
    a = _decode_point(pub)
    if a is None:
        return "non_canonical_key"
    if pub in SMALL_ORDER:
        return "small_order_key"
    r = _decode_point(rb)
    if r is None:
        return "non_canonical_r"
    if rb in SMALL_ORDER:
        return "small_order_r"
    if Ed25519PublicKey is not None:
        try:
            Ed25519PublicKey.from_public_bytes(pub).verify(sig, msg)
            return None  # cofactorless holds => cofactored holds
        except (InvalidSignature, ValueError):
            pass
    k = int.from_bytes(hashlib.sha512(rb + pub + msg).digest(), "little") % L
    v = _add(_add(_mul(s, B), _neg(r)), _neg(_mul(k, a)))
    v = _add(v, v)
    v = _add(v, v)
    v = _add(v, v)
    return None if _is_identity(v) else "equation"


# --------------------------------------------------------------------------
# Bytes: FORMAT.md section 2 and 3
# --------------------------------------------------------------------------
KIND_RE = re.compile(r"^[a-z][a-z0-9._-]{0,63}$")
MAX_PAYLOAD = 262144


def H(b):
    return hashlib.sha256(b).digest()


def signing_message(kind, payload):
    return b"docket/v1/" + kind.encode() + b"\x00" + H(payload)


def statement_digest(author, kind, payload):
    return H(b"docket/v1/statement\x00" + author + signing_message(kind, payload))


def leaf_hash(event_bytes):
    return H(b"\x00" + event_bytes)


class DecodeError(Exception):
    pass


def decode_event(b):
    if len(b) < 161:
        raise DecodeError("truncated")
    if b[0] != 1:
        raise DecodeError("format != 1")
    seq, t = struct.unpack(">QQ", b[1:17])
    prev = b[17:49]
    (klen,) = struct.unpack(">Q", b[49:57])
    if klen > 64 or 57 + klen + 32 + 8 > len(b):
        raise DecodeError("kind length")
    kind_b = b[57:57 + klen]
    try:
        kind = kind_b.decode("utf-8")
    except UnicodeDecodeError:
        raise DecodeError("kind not UTF-8")
    if not KIND_RE.fullmatch(kind):
        raise DecodeError("kind alphabet")
    o = 57 + klen
    author = b[o:o + 32]
    (plen,) = struct.unpack(">Q", b[o + 32:o + 40])
    if plen > MAX_PAYLOAD:
        raise DecodeError("payload too large")
    o += 40
    if o + plen + 64 != len(b):
        raise DecodeError("truncated or trailing bytes")
    payload = b[o:o + plen]
    sig = b[o + plen:]
    return {"seq": seq, "recorded_at_ms": t, "prev_hash": prev, "kind": kind,
            "author": author, "payload": payload, "signature": sig}


# --------------------------------------------------------------------------
# OIDs: DOMAIN.md section 2 and 3.9
# --------------------------------------------------------------------------
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
OID_RE = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")


def ulid(ts_ms, random10):
    n = ((ts_ms % (1 << 48)) << 80) | int.from_bytes(random10, "big")
    out = []
    for _ in range(26):
        out.append(CROCKFORD[n & 31])
        n >>= 5
    return "".join(reversed(out))


def oid_random(digest):
    return H(b"docket/v1/oid\x00" + digest)[:10]


def mint_oid(digest, ts_ms):
    return ulid(ts_ms, oid_random(digest))


def mint_imported_oid(digest, i, ts_ms):
    inner = H(b"docket/v1/imported-evidence\x00" + digest + struct.pack(">Q", i))
    return ulid(ts_ms, H(b"docket/v1/oid\x00" + inner)[:10])


def is_oid(s):
    return isinstance(s, str) and bool(OID_RE.fullmatch(s))


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------
class Refused(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class Violations:
    """Collects every violated schema rule (DOMAIN.md section 1.2 step 2)."""

    def __init__(self):
        self.items = []

    def add(self, text):
        self.items.append(text)

    def rule(self, rule, pointer, message):
        self.items.append("[%s] %s: %s" % (rule, pointer or "/", message))

    def field(self, name, message):
        self.items.append("%s: %s" % (name, message))

    def raise_if_any(self):
        if self.items:
            raise Refused("invalid", "invalid statement: " + "; ".join(self.items))


# --------------------------------------------------------------------------
# Shared vocabulary
# --------------------------------------------------------------------------
# DOMAIN.md §1 "Roles" / §4.4: admin, submitter, verifier, approver, custodian, auditor, gateway
ROLE_ORDER = ["admin", "submitter", "verifier", "approver", "custodian", "auditor", "gateway"]
X_ROLES = ["admin", "submitter", "verifier", "approver", "custodian", "gateway"]
KIND_ROLES = {
    "ledger.genesis": None,
    "key.registered": ["admin"],
    "key.revoked": ["admin"],
    "task.registered": ["admin", "submitter"],
    "evidence.registered": ["submitter", "gateway"],
    "execution.recorded": ["submitter", "gateway"],
    "submission.received": ["submitter"],
    "check.recorded": ["verifier"],
    "verdict.issued": ["verifier"],
    "verdict.imported": ["verifier"],
    "verdict.deadline_passed": ["verifier"],
    "approval.requested": ["submitter", "approver"],
    "approval.granted": ["approver"],
    "approval.denied": ["approver"],
    "retention.policy_set": ["admin"],
    "retention.pinned": ["custodian"],
    "retention.unpinned": ["custodian"],
    "retention.reclassified": ["custodian"],
    "retention.redacted": ["custodian"],
    "evidence.expired": ["custodian"],
    "retention.sweep": ["custodian"],
}
EVIDENCE_TYPES = ["patch.diff", "selftest.log", "report.md", "submit.json", "screenshot",
                  "stdout", "stderr", "execution", "trace", "metrics", "other"]
CLASSES = ["routine", "high_impact", "pinned"]
REASON_CODES = ["VERIFIER_ERROR", "EVIDENCE_TAMPERED", "SCOPE_CONFLICT", "POLICY_VIOLATION",
                "EVIDENCE_MISSING", "SCHEMA_VIOLATION", "PREFLIGHT_FAILED", "PINS_INSUFFICIENT",
                "PERMISSION_DENIED", "FILE_NOT_FOUND", "MERGE_CONFLICT", "TIMEOUT_EXCEEDED",
                "BUDGET_EXCEEDED", "EXECUTOR_ERROR", "NEEDS_CLARIFICATION", "CI_FAILED"]
SEED000_FAIL_CLASSES = ["timeout", "test_failure", "lint_error", "type_error",
                        "security_violation", "scope_violation", "external_dependency"]
SEED001_FAIL_CLASSES = ["command_failed", "command_denied", "timeout", "verifier_error",
                        "artifact_missing", "verdict_missing", "unknown"]
SEED_CHECKS = ["schema_valid", "scope_valid", "tests_passed", "evidence_present"]
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
RFC3339_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
MEDIA_RE = re.compile(r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(\s*;.*)?$")
CHECK_NAME_RE = re.compile(r"^[A-Za-z0-9_.:/-]{1,128}$")


def parse_rfc3339(s):
    """Unix ms, or None."""
    if not isinstance(s, str):
        return None
    m = RFC3339_RE.fullmatch(s)
    if not m:
        return None
    try:
        text = s.upper().replace("Z", "+00:00")
        frac = m.group(7) or ""
        if frac:  # python wants <= 6 digits
            text = text.replace(frac, frac[:7].ljust(7, "0")[:7], 1)
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return int(dt.timestamp() * 1000) if not frac else (
        int(dt.replace(microsecond=0).timestamp()) * 1000 + int(frac[1:4].ljust(3, "0")))


def canonical_task_id(s):
    if not isinstance(s, str):
        return None
    try:
        return str(uuid.UUID(s.strip() if False else s))
    except (ValueError, AttributeError, TypeError):
        return None


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_text(v, lo=1, hi=4096):
    return isinstance(v, str) and lo <= len(v.encode()) <= hi and not any(
        ord(c) < 32 or ord(c) == 127 for c in v)


def load_json_object(payload, v):
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        v.add("payload is not UTF-8")
        v.raise_if_any()

    def no_dupes(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            v.add("repeated key in a JSON object")
        return dict(pairs)
    try:
        doc = json.loads(text, object_pairs_hook=no_dupes)
    except ValueError as e:
        v.add("payload is not JSON: %s" % e)
        v.raise_if_any()
    if not isinstance(doc, dict):
        v.add("payload is not a JSON object")
        v.raise_if_any()
    return doc


def refuse_unknown(doc, allowed, v):
    for k in doc:
        if k not in allowed:
            v.field(k, "unknown field")


def check_key_spelling(doc, name, v, required=True):
    val = doc.get(name)
    if val is None:
        if required:
            v.field(name, "required")
        return None
    if not isinstance(val, str) or not HEX64_RE.fullmatch(val):
        v.field(name, "must be 64 lower-case hex digits")
        return None
    if key_is_acceptable(bytes.fromhex(val)):
        v.field(name, "not a valid Ed25519 public key (%s)" % key_is_acceptable(bytes.fromhex(val)))
        return None
    return val


# --------------------------------------------------------------------------
# Pins (VERIFIER.md "Pin scope")
# --------------------------------------------------------------------------
def _glob_to_re(g):
    i, out = 0, ""
    while i < len(g):
        c = g[i]
        if g.startswith("**", i):
            out += ".*"
            i += 2
            if i < len(g) and g[i] == "/":
                i += 1
                out = out[:-2] + "(?:.*/)?"
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            j = g.find("]", i + 1)
            if j < 0:
                raise ValueError("unclosed [")
            cls = g[i + 1:j]
            if cls.startswith("!"):
                cls = "^" + cls[1:]
            out += "[" + cls + "]"
            i = j
        elif c == "{":
            j = g.find("}", i + 1)
            if j < 0:
                raise ValueError("unclosed {")
            out += "(?:" + "|".join(re.escape(a) for a in g[i + 1:j].split(",")) + ")"
            i = j
        else:
            out += re.escape(c)
        i += 1
    return re.compile("^" + out + "$")


def pin_matches(pin, path):
    if path.startswith("/") or ".." in path.split("/"):
        return False
    if any(c in pin for c in "*?[{"):
        try:
            return bool(_glob_to_re(pin).fullmatch(path))
        except (ValueError, re.error):
            return False
    if pin.endswith("/"):
        return path.startswith(pin)
    return path == pin or path.startswith(pin + "/")


def pin_syntax_ok(pin):
    if not isinstance(pin, str) or not pin or pin.startswith("/") or ".." in pin.split("/"):
        return False
    if any(c in pin for c in "*?[{"):
        try:
            _glob_to_re(pin)
        except (ValueError, re.error):
            return False
    return True


def norm_pin(p):
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/")


# --------------------------------------------------------------------------
# Seed document schemas (VERIFIER.md)
# --------------------------------------------------------------------------
def parse_task_contract(doc, v):
    """TaskContract::parse, every rule of VERIFIER.md 'Task contract rules'."""
    for f in ("task_id", "goal", "role", "pins"):
        if f not in doc:
            v.rule("task.required", "/" + f, "required field missing")
    tid = doc.get("task_id")
    if "task_id" in doc:
        if not isinstance(tid, str):
            v.rule("task.type", "/task_id", "must be a string")
        elif canonical_task_id(tid) is None:
            v.rule("task.task_id.uuid", "/task_id", "must be a UUID")
    for f, rule in (("goal", "task.goal.non_empty"), ("role", "task.role.non_empty")):
        if f in doc:
            if not isinstance(doc[f], str):
                v.rule("task.type", "/" + f, "must be a string")
            elif not doc[f].strip():
                v.rule(rule, "/" + f, "must not be empty")
    pins = doc.get("pins")
    allowed, forbidden = [], []
    if "pins" in doc:
        if not isinstance(pins, dict):
            v.rule("task.type", "/pins", "must be an object")
        else:
            for f in ("allowed_paths", "forbidden_paths"):
                val = pins.get(f, [] if f == "forbidden_paths" else None)
                if val is None:
                    v.rule("task.required", "/pins/" + f, "required field missing")
                    continue
                if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
                    v.rule("task.type", "/pins/" + f, "must be an array of strings")
                    continue
                for i, p in enumerate(val):
                    if not pin_syntax_ok(p):
                        v.rule("task.pins.syntax", "/pins/%s/%d" % (f, i), "not a relative path or glob")
                if f == "allowed_paths":
                    allowed = val
                    if not val:
                        v.rule("task.pins.allowed_paths.non_empty", "/pins/allowed_paths", "must not be empty")
                else:
                    forbidden = val
            both = {norm_pin(a) for a in allowed} & {norm_pin(b) for b in forbidden}
            for p in sorted(both):
                v.rule("task.pins.disjoint", "/pins", "%s is both allowed and forbidden" % p)
    if "files" in doc:
        files = doc["files"]
        if not isinstance(files, list) or not all(isinstance(x, str) for x in files):
            v.rule("task.type", "/files", "must be an array of strings")
        else:
            for i, f in enumerate(files):
                ok = any(pin_matches(a, f) for a in allowed) and not any(pin_matches(b, f) for b in forbidden)
                if not ok:
                    v.rule("task.files.within_scope", "/files/%d" % i, "%s is not within the pins" % f)
    if "context" in doc:
        ctx = doc["context"]
        if not isinstance(ctx, dict):
            v.rule("task.context.object", "/context", "must be an object")
        else:
            for f in ("map", "docs", "history"):
                if f in ctx and not isinstance(ctx[f], dict):
                    v.rule("task.context.object", "/context/" + f, "must be an object")
    acc = doc.get("acceptance")
    if "acceptance" in doc:
        if not isinstance(acc, dict):
            v.rule("task.type", "/acceptance", "must be an object")
            acc = None
        else:
            for f in ("required_evidence", "required_checks", "required_test_commands"):
                if f in acc:
                    val = acc[f]
                    if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
                        v.rule("task.type", "/acceptance/" + f, "must be an array of strings")
                        continue
                    for i, x in enumerate(val):
                        if not x.strip():
                            v.rule("task.acceptance.non_empty", "/acceptance/%s/%d" % (f, i), "must not be empty")
                        elif f == "required_evidence" and x not in EVIDENCE_TYPES:
                            v.rule("task.acceptance.required_evidence.known", "/acceptance/%s/%d" % (f, i),
                                   "unknown evidence type %s" % x)
            if "require_gateway_execution" in acc and not isinstance(acc["require_gateway_execution"], bool):
                v.rule("task.type", "/acceptance/require_gateway_execution", "must be a boolean")
    if "retention_class" in doc and doc["retention_class"] not in CLASSES:
        v.rule("task.retention_class", "/retention_class", "must be routine, high_impact or pinned")
    deadline_ms = None
    if "verdict_deadline" in doc:
        deadline_ms = parse_rfc3339(doc["verdict_deadline"])
        if deadline_ms is None:
            v.rule("task.verdict_deadline", "/verdict_deadline", "must be an RFC 3339 timestamp")
    v.raise_if_any()
    acc = acc or {}
    return {
        "task_id": canonical_task_id(tid),
        "retention_class": doc.get("retention_class", "routine"),
        "required_checks": list(acc.get("required_checks", [])),
        "required_evidence": list(acc.get("required_evidence", [])),
        "verdict_deadline_ms": deadline_ms,
    }


def parse_submission(doc, v):
    """Submission::parse (VERIFIER.md `submit.json` rules that do not need artifacts)."""
    req = ["schema_version", "task_id", "status", "changed_files", "new_files", "tests",
           "artifacts", "exit_code", "needs_input"]
    for f in req:
        if f not in doc:
            v.rule("submit.required", "/" + f, "required field missing")
    types = {"schema_version": str, "task_id": str, "status": str, "changed_files": list,
             "new_files": list, "tests": dict, "artifacts": dict, "needs_input": list}
    for f, ty in types.items():
        if f in doc and not isinstance(doc[f], ty):
            v.rule("submit.type", "/" + f, "wrong type")
    if "exit_code" in doc and not is_int(doc["exit_code"]):
        v.rule("submit.type", "/exit_code", "must be an integer")
    for f in ("changed_files", "new_files", "needs_input"):
        if isinstance(doc.get(f), list) and not all(isinstance(x, str) for x in doc[f]):
            v.rule("submit.type", "/" + f, "must be an array of strings")
    if isinstance(doc.get("artifacts"), dict):
        for k, x in doc["artifacts"].items():
            if not isinstance(x, str):
                v.rule("submit.type", "/artifacts/" + k, "must be a string")
    tests = doc.get("tests") if isinstance(doc.get("tests"), dict) else None
    if tests is not None:
        for f in ("commands", "passed", "summary"):
            if f not in tests:
                v.rule("submit.required", "/tests/" + f, "required field missing")
        if "commands" in tests:
            if not isinstance(tests["commands"], list) or not all(isinstance(x, str) for x in tests["commands"]):
                v.rule("submit.type", "/tests/commands", "must be an array of strings")
            else:
                for i, c in enumerate(tests["commands"]):
                    if not c.strip():
                        v.rule("submit.tests.commands.non_empty", "/tests/commands/%d" % i, "empty command")
        if "passed" in tests and not isinstance(tests["passed"], bool):
            v.rule("submit.type", "/tests/passed", "must be a boolean")
        if "summary" in tests and not isinstance(tests["summary"], str):
            v.rule("submit.type", "/tests/summary", "must be a string")
    if isinstance(doc.get("schema_version"), str) and doc["schema_version"] != "scc.submit.v1":
        v.rule("submit.schema_version", "/schema_version", "must be scc.submit.v1")
    status = doc.get("status")
    if isinstance(status, str) and status not in ("DONE", "NEED_INPUT", "FAILED"):
        v.rule("submit.status", "/status", "must be DONE, NEED_INPUT or FAILED")
    rc = doc.get("reason_code")
    if rc is not None and (not isinstance(rc, str) or rc not in REASON_CODES):
        v.rule("submit.reason_code.known", "/reason_code", "unknown reason code")
    if status == "DONE" and is_int(doc.get("exit_code")) and doc["exit_code"] != 0:
        v.rule("submit.done_exit_code", "/exit_code", "status DONE needs exit_code 0")
    if status == "NEED_INPUT" and not doc.get("needs_input"):
        v.rule("submit.needs_input", "/needs_input", "NEED_INPUT needs a question")


def parse_verdict(doc, v):
    """Verdict::parse (VERIFIER.md 'Verdicts')."""
    for f in ("schema_version", "task_id", "verdict", "checks"):
        if f not in doc:
            v.rule("verdict.required", "/" + f, "required field missing")
    if "schema_version" in doc and doc["schema_version"] != "scc.verdict.v1":
        v.rule("verdict.schema_version", "/schema_version", "must be scc.verdict.v1")
    verdict = doc.get("verdict")
    if "verdict" in doc and verdict not in ("PASS", "FAIL"):
        v.rule("verdict.type", "/verdict", "must be PASS or FAIL")
    rc, fc = doc.get("reason_code"), doc.get("fail_class")
    if rc is not None and rc not in REASON_CODES:
        v.rule("verdict.reason_code.known", "/reason_code", "unknown reason code")
    if fc is not None and fc not in SEED000_FAIL_CLASSES:
        v.rule("verdict.fail_class.known", "/fail_class", "unknown fail_class")
    checks = doc.get("checks")
    if "checks" in doc and (not isinstance(checks, dict) or not all(isinstance(x, bool) for x in checks.values())):
        v.rule("verdict.type", "/checks", "must be an object of booleans")
        checks = None
    if isinstance(checks, dict):
        for c in SEED_CHECKS:
            if c not in checks:
                v.rule("verdict.checks.seed", "/checks/" + c, "seed check missing")
    if "messages" in doc and (not isinstance(doc["messages"], list) or not all(isinstance(x, str) for x in doc["messages"])):
        v.rule("verdict.type", "/messages", "must be an array of strings")
    if "links" in doc and not isinstance(doc["links"], dict):
        v.rule("verdict.type", "/links", "must be an object")
    if "timestamps" in doc:
        ts = doc["timestamps"]
        if not isinstance(ts, dict):
            v.rule("verdict.type", "/timestamps", "must be an object")
        else:
            for k, x in ts.items():
                if k in ("submitted_at", "evaluated_at") and parse_rfc3339(x) is None:
                    v.rule("verdict.timestamps", "/timestamps/" + k, "not RFC 3339")
    if verdict == "PASS":
        if not checks or not all(checks.values()) or rc is not None or fc is not None:
            v.rule("verdict.no_check_no_pass", "/verdict", "PASS needs checks, all true, and no reason")
    if verdict == "FAIL":
        if rc is None or fc is None:
            v.rule("verdict.fail_needs_reason", "/verdict", "FAIL names reason_code and fail_class")
        if isinstance(checks, dict) and all(checks.values()):
            v.rule("verdict.follows_from_checks", "/checks", "FAIL needs a failed check")


TRUNC_MARK = "\n\n[TRUNCATED - output exceeded limit]"


def evidence_hash(rec):
    ec = rec.get("exit_code")
    ecs = "null" if ec is None else str(ec)
    pre = "%s|%s|%s|%s" % (rec.get("raw_command"), rec.get("stdout"), rec.get("stderr"), ecs)
    return hashlib.sha256(pre.encode("utf-8")).hexdigest()


def parse_execution_record(doc, v):
    """ExecutionRecord::parse (VERIFIER.md 'Execution records')."""
    req = ["raw_command", "exit_code", "stdout", "stderr", "started_at", "finished_at",
           "duration_seconds", "status", "evidence_hash"]
    for f in req:
        if f not in doc:
            v.rule("execution.required", "/" + f, "required field missing")
    for f in ("raw_command", "stdout", "stderr", "started_at", "finished_at", "status", "evidence_hash"):
        if f in doc and not isinstance(doc[f], str):
            v.rule("execution.type", "/" + f, "must be a string")
    if "exit_code" in doc and doc["exit_code"] is not None and not is_int(doc["exit_code"]):
        v.rule("execution.type", "/exit_code", "must be an integer or null")
    if "duration_seconds" in doc and (isinstance(doc["duration_seconds"], bool) or
                                      not isinstance(doc["duration_seconds"], (int, float))):
        v.rule("execution.type", "/duration_seconds", "must be a number")
    if "artifacts" in doc:
        a = doc["artifacts"]
        ok = (isinstance(a, list) and all(isinstance(x, str) for x in a)) or \
             (isinstance(a, dict) and all(isinstance(x, str) for x in a.values()))
        if not ok:
            v.rule("execution.type", "/artifacts", "array of strings or object of strings")
    status = doc.get("status")
    if isinstance(status, str) and status not in ("SUCCESS", "FAILURE", "NO_EVIDENCE"):
        v.rule("execution.status", "/status", "must be SUCCESS, FAILURE or NO_EVIDENCE")
    if v.items:
        return
    if evidence_hash(doc) != doc["evidence_hash"]:
        v.rule("execution.evidence_hash", "/evidence_hash", "does not match SHA-256 of raw_command|stdout|stderr|exit_code")
    ec = doc["exit_code"]
    if status == "SUCCESS" and ec != 0:
        v.rule("execution.status_exit_code", "/status", "SUCCESS needs exit code 0")
    if status == "FAILURE" and (ec is None or ec == 0):
        v.rule("execution.status_exit_code", "/status", "FAILURE needs a non-zero exit code")
    if status == "NO_EVIDENCE" and not doc["stderr"].strip():
        v.rule("execution.no_evidence_reason", "/stderr", "NO_EVIDENCE must say why in stderr")
    for f in ("stdout", "stderr"):
        s = doc[f]
        if len(s) > 10000 or (s.endswith(TRUNC_MARK) and len(s) != 9950 + len(TRUNC_MARK) and len(s) > 10000):
            v.rule("execution.truncation", "/" + f, "stored output over 10,000 characters")
    a, b = parse_rfc3339(doc["started_at"]), parse_rfc3339(doc["finished_at"])
    if a is None or b is None:
        v.rule("execution.timestamps", "/started_at", "not RFC 3339")
    elif a > b:
        v.rule("execution.timestamps", "/finished_at", "before started_at")
    elif abs((b - a) / 1000.0 - float(doc["duration_seconds"])) > 1.0:
        v.rule("execution.timestamps", "/duration_seconds", "differs from the timestamps by over 1 s")


def check_oid_list(doc, name, v, required=False):
    if name not in doc:
        if required:
            v.field(name, "required")
        return None
    val = doc[name]
    if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
        v.field(name, "must be an array of strings")
        return None
    seen = set()
    for i, x in enumerate(val):
        if not is_oid(x):
            v.field("%s/%d" % (name, i), "%r is not an OID" % x)
        elif x in seen:
            v.field("%s/%d" % (name, i), "%s is listed twice" % x)
        seen.add(x)
    return val


# --------------------------------------------------------------------------
# Payload decoders (DOMAIN.md section 3, RETENTION.md)
# --------------------------------------------------------------------------
def dec_genesis(doc, v):
    refuse_unknown(doc, {"origin", "ledger_key", "admin_key", "ledger_roles"}, v)
    if not isinstance(doc.get("origin"), str):
        v.field("origin", "required string")
    lk = check_key_spelling(doc, "ledger_key", v)
    ak = check_key_spelling(doc, "admin_key", v)
    roles = doc.get("ledger_roles")
    if not isinstance(roles, list) or not all(r in ROLE_ORDER for r in roles):
        v.field("ledger_roles", "must be an array of roles")
    v.raise_if_any()
    return doc


def dec_key_registered(doc, v):
    refuse_unknown(doc, {"public_key", "roles", "not_before_ms", "not_after_ms", "label"}, v)
    check_key_spelling(doc, "public_key", v)
    roles = doc.get("roles")
    if not isinstance(roles, list) or not roles or not all(isinstance(r, str) for r in roles):
        v.field("roles", "must be a non-empty array of roles")
    else:
        for r in roles:
            if r not in ROLE_ORDER:
                v.field("roles", "unknown role %s" % r)
    for f in ("not_before_ms", "not_after_ms"):
        if f in doc and doc[f] is not None and (not is_int(doc[f]) or doc[f] < 0):
            v.field(f, "must be a non-negative integer")
    nb, na = doc.get("not_before_ms"), doc.get("not_after_ms")
    if is_int(nb) and is_int(na) and nb > na:
        v.field("not_before_ms", "not_before_ms is after not_after_ms")
    if "label" in doc and doc["label"] is not None and not isinstance(doc["label"], str):
        v.field("label", "must be a string")
    v.raise_if_any()
    return doc


def dec_key_revoked(doc, v):
    refuse_unknown(doc, {"public_key", "reason"}, v)
    check_key_spelling(doc, "public_key", v)
    if "reason" in doc and doc["reason"] is not None and not isinstance(doc["reason"], str):
        v.field("reason", "must be a string")
    v.raise_if_any()
    return doc


def dec_task(doc, v):
    return parse_task_contract(doc, v)


def valid_artifact_name(n):
    if not isinstance(n, str) or not n or len(n.encode()) > 1024 or "\\" in n:
        return False
    return all(c not in ("", ".", "..") for c in n.split("/"))


def dec_evidence(doc, v):
    refuse_unknown(doc, {"task_id", "evidence_type", "sha256", "size", "media_type", "retention_class", "name"}, v)
    if canonical_task_id(doc.get("task_id")) is None:
        v.field("task_id", "must be a task id (UUID)")
    if doc.get("evidence_type") not in EVIDENCE_TYPES:
        v.field("evidence_type", "unknown evidence type")
    if not isinstance(doc.get("sha256"), str) or not HEX64_RE.fullmatch(doc["sha256"]):
        v.field("sha256", "must be 64 lower-case hex digits")
    if not is_int(doc.get("size")) or doc["size"] < 0:
        v.field("size", "must be an integer >= 0")
    mt = doc.get("media_type")
    if not isinstance(mt, str) or len(mt.encode()) > 255 or not MEDIA_RE.fullmatch(mt):
        v.field("media_type", "must be type/subtype[;params], at most 255 bytes")
    if "retention_class" in doc and doc["retention_class"] not in CLASSES:
        v.field("retention_class", "must be routine, high_impact or pinned")
    if "name" in doc and doc["name"] is not None and not valid_artifact_name(doc["name"]):
        v.field("name", "not a valid relative artifact path")
    v.raise_if_any()
    return doc


def dec_execution(doc, v):
    if canonical_task_id(doc.get("task_id")) is None:
        v.field("task_id", "required task id")
    check_oid_list(doc, "evidence_oids", v)
    parse_execution_record(doc, v)
    v.raise_if_any()
    return doc


def dec_submission(doc, v):
    parse_submission(doc, v)
    if isinstance(doc.get("task_id"), str) and canonical_task_id(doc["task_id"]) is None:
        v.field("task_id", "must be a task id (UUID)")
    check_oid_list(doc, "evidence_oids", v, required=True)
    check_oid_list(doc, "touched_oids", v)
    v.raise_if_any()
    return doc


def dec_check(doc, v):
    refuse_unknown(doc, {"task_id", "submission_seq", "name", "passed", "details"}, v)
    if canonical_task_id(doc.get("task_id")) is None:
        v.field("task_id", "must be a task id (UUID)")
    if "submission_seq" in doc and (not is_int(doc["submission_seq"]) or doc["submission_seq"] < 0):
        v.field("submission_seq", "must be a sequence number")
    if not isinstance(doc.get("name"), str) or not CHECK_NAME_RE.fullmatch(doc["name"]):
        v.field("name", "1..=128 of [A-Za-z0-9_.:/-]")
    if not isinstance(doc.get("passed"), bool):
        v.field("passed", "must be a boolean")
    v.raise_if_any()
    return doc


def dec_verdict(doc, v):
    parse_verdict(doc, v)
    if isinstance(doc.get("task_id"), str) and canonical_task_id(doc["task_id"]) is None:
        v.field("task_id", "must be a task id (UUID)")
    if "submission_seq" in doc and (not is_int(doc["submission_seq"]) or doc["submission_seq"] < 0):
        v.field("submission_seq", "must be a sequence number")
    check_oid_list(doc, "evidence_oids", v)
    v.raise_if_any()
    return doc


def check_engine(doc, name, v):
    e = doc.get("engine")
    if not isinstance(e, dict) or e.get("name") != name or not isinstance(e.get("version"), str) \
            or not isinstance(e.get("rules_digest"), str) or not HEX64_RE.fullmatch(e.get("rules_digest", "")):
        v.field("engine", "must be {name: %s, version, rules_digest}" % name)


def check_artifact(a, ptr, v):
    if not isinstance(a, dict):
        v.field(ptr, "must be an artifact object")
        return
    refuse_unknown(a, {"path", "sha256", "size", "evidence_type", "media_type"}, Violations())
    if not valid_artifact_name(a.get("path")):
        v.field(ptr + "/path", "not a normalized relative path")
    if not isinstance(a.get("sha256"), str) or not HEX64_RE.fullmatch(a["sha256"]):
        v.field(ptr + "/sha256", "must be 64 lower-case hex digits")
    if not is_int(a.get("size")) or a["size"] < 0:
        v.field(ptr + "/size", "must be an integer >= 0")
    if a.get("evidence_type") not in EVIDENCE_TYPES:
        v.field(ptr + "/evidence_type", "unknown evidence type")
    if not isinstance(a.get("media_type"), str) or not MEDIA_RE.fullmatch(a["media_type"]):
        v.field(ptr + "/media_type", "not a media type")


def import_decide(reported, missing):
    """verdicts::imported::decide (DOMAIN.md section 3.9)."""
    if reported is None:
        return ("FAIL", "verdict_missing", 5)
    if missing:
        ec = reported.get("exit_code")
        return ("FAIL", "artifact_missing", 5 if ec == 0 else ec)
    if reported.get("verdict") == "FAIL" and reported.get("fail_class") is None:
        return ("FAIL", "unknown", reported.get("exit_code"))
    return (reported.get("verdict"), reported.get("fail_class"), reported.get("exit_code"))


def dec_imported(doc, v):
    refuse_unknown(doc, {"task_id", "submission_seq", "verdict_json", "reported", "observed_utc",
                         "artifacts", "missing_paths", "verdict", "fail_class", "exit_code", "engine"}, v)
    if canonical_task_id(doc.get("task_id")) is None:
        v.field("task_id", "must be a task id (UUID)")
    if "submission_seq" in doc and (not is_int(doc["submission_seq"]) or doc["submission_seq"] < 0):
        v.field("submission_seq", "must be a sequence number")
    vj, rep = doc.get("verdict_json"), doc.get("reported")
    if "verdict_json" not in doc or "reported" not in doc:
        v.field("verdict_json", "verdict_json and reported are required (null allowed)")
    if vj is not None:
        check_artifact(vj, "verdict_json", v)
        if isinstance(vj, dict) and vj.get("path") != "evidence/verdict.json":
            v.field("verdict_json/path", "must be evidence/verdict.json")
    if (vj is None) != (rep is None):
        v.field("reported", "null exactly when verdict_json is null")
    obs = doc.get("observed_utc")
    if obs is not None:
        if not isinstance(obs, str) or parse_rfc3339(obs) is None or not (
                obs.endswith("Z") or obs.endswith("z") or obs.endswith("+00:00")):
            v.field("observed_utc", "must be an RFC 3339 UTC timestamp")
        elif rep is not None:
            v.field("observed_utc", "only for a run without verdict.json")
    arts = doc.get("artifacts")
    if not isinstance(arts, list):
        v.field("artifacts", "must be an array of artifacts")
        arts = []
    for i, a in enumerate(arts):
        check_artifact(a, "artifacts/%d" % i, v)
    missing = doc.get("missing_paths")
    if not isinstance(missing, list) or not all(isinstance(x, str) for x in missing):
        v.field("missing_paths", "must be an array of strings")
        missing = []
    if rep is not None:
        if not isinstance(rep, dict):
            v.field("reported", "must be an object")
            rep = None
        else:
            if rep.get("verdict") not in ("PASS", "FAIL"):
                v.rule("verifier_output.verdict", "/reported/verdict", "must be PASS or FAIL")
            fc = rep.get("fail_class")
            if fc is not None and fc not in SEED001_FAIL_CLASSES:
                v.rule("verifier_output.fail_class", "/reported/fail_class",
                       "%r is not in the seed 001 taxonomy" % fc)
            if not is_int(rep.get("exit_code")):
                v.rule("verifier_output.exit_code", "/reported/exit_code", "must be an integer")
            ep = rep.get("evidence_paths")
            if not isinstance(ep, list) or not all(isinstance(x, str) for x in ep):
                v.rule("verifier_output.evidence_paths", "/reported/evidence_paths", "must be an array of relative paths")
                ep = []
            else:
                for i, p in enumerate(ep):
                    if p.startswith("/"):
                        v.rule("verifier_output.evidence_paths", "/reported/evidence_paths/%d" % i, "must be relative")
            g = rep.get("generated_utc")
            if parse_rfc3339(g) is None or not (g.endswith("Z") or g.endswith("z") or g.endswith("+00:00")):
                v.rule("verifier_output.generated_utc", "/reported/generated_utc", "must be a UTC timestamp")
            entries = [a.get("path") for a in arts if isinstance(a, dict)] + list(missing)
            norm_ep = [p[2:] if p.startswith("./") else p for p in ep]
            if sorted(entries) != sorted(norm_ep) or len(set(entries)) != len(entries):
                v.field("artifacts", "artifacts and missing_paths must be exactly the evidence_paths")
    else:
        if arts or missing:
            v.field("artifacts", "artifacts and missing_paths must be exactly the evidence_paths (none without verdict.json)")
    if doc.get("verdict") not in ("PASS", "FAIL"):
        v.field("verdict", "must be PASS or FAIL")
    fc = doc.get("fail_class")
    if fc is not None and fc not in SEED001_FAIL_CLASSES:
        v.field("fail_class", "%r is not in the seed 001 taxonomy" % fc)
    if doc.get("exit_code") is not None and not is_int(doc.get("exit_code")):
        v.field("exit_code", "must be an integer")
    check_engine(doc, "docket-verdict-import", v)
    if not v.items:
        want = import_decide(rep, missing)
        got = (doc.get("verdict"), doc.get("fail_class"), doc.get("exit_code"))
        if want != got:
            v.rule("import.rules", "/verdict", "recorded %r but the import rules give %r" % (got, want))
    v.raise_if_any()
    return doc


def dec_deadline(doc, v):
    refuse_unknown(doc, {"task_id", "submission_seq", "deadline_ms", "as_of_ms", "verdict",
                         "fail_class", "exit_code", "engine"}, v)
    if canonical_task_id(doc.get("task_id")) is None:
        v.field("task_id", "must be a task id (UUID)")
    if "submission_seq" in doc and (not is_int(doc["submission_seq"]) or doc["submission_seq"] < 0):
        v.field("submission_seq", "must be a sequence number")
    for f in ("deadline_ms", "as_of_ms"):
        if not is_int(doc.get(f)) or doc[f] < 0:
            v.field(f, "must be Unix ms")
    if doc.get("verdict") != "FAIL" or doc.get("fail_class") != "verdict_missing" or doc.get("exit_code") != 5:
        v.field("verdict", "must be FAIL verdict_missing 5")
    check_engine(doc, "docket-verdict-deadline", v)
    if is_int(doc.get("deadline_ms")) and is_int(doc.get("as_of_ms")) and doc["as_of_ms"] < doc["deadline_ms"]:
        v.field("as_of_ms", "%d is before the deadline %d" % (doc["as_of_ms"], doc["deadline_ms"]))
    v.raise_if_any()
    return doc


def dec_approval_requested(doc, v):
    refuse_unknown(doc, {"task_id", "actor", "scope", "mutation_mode", "timestamp", "expires_at", "note"}, v)
    if canonical_task_id(doc.get("task_id")) is None:
        v.field("task_id", "must be a task id (UUID)")
    a = doc.get("actor")
    if not isinstance(a, str) or not a.strip() or len(a.encode()) > 256:
        v.field("actor", "non-empty, at most 256 bytes")
    for f in ("scope", "mutation_mode"):
        if not isinstance(doc.get(f), str) or not doc[f]:
            v.field(f, "required non-empty string")
    ts = parse_rfc3339(doc.get("timestamp"))
    if ts is None:
        v.field("timestamp", "must be RFC 3339")
    if "expires_at" in doc and doc["expires_at"] is not None:
        ex = parse_rfc3339(doc["expires_at"])
        if ex is None:
            v.field("expires_at", "must be RFC 3339")
        elif ts is not None and ex <= ts:
            v.field("expires_at", "must be after timestamp")
    if "note" in doc and doc["note"] is not None and (not isinstance(doc["note"], str) or len(doc["note"].encode()) > 4096):
        v.field("note", "at most 4096 bytes")
    v.raise_if_any()
    return doc


def dec_approval_decided(kind):
    def dec(doc, v):
        refuse_unknown(doc, {"task_id", "request_seq", "actor", "scope", "mutation_mode", "timestamp",
                             "expires_at", "reason"}, v)
        if canonical_task_id(doc.get("task_id")) is None:
            v.field("task_id", "must be a task id (UUID)")
        if not is_int(doc.get("request_seq")) or doc["request_seq"] < 0:
            v.field("request_seq", "must be a sequence number")
        a = doc.get("actor")
        if not isinstance(a, str) or not a.strip() or len(a.encode()) > 256:
            v.field("actor", "non-empty, at most 256 bytes")
        for f in ("scope", "mutation_mode"):
            if not isinstance(doc.get(f), str):
                v.field(f, "required string")
        if parse_rfc3339(doc.get("timestamp")) is None:
            v.field("timestamp", "must be RFC 3339")
        if "expires_at" in doc and doc["expires_at"] is not None:
            if kind == "approval.denied":
                v.field("expires_at", "a denial has no expiry")
            elif parse_rfc3339(doc["expires_at"]) is None:
                v.field("expires_at", "must be RFC 3339")
        r = doc.get("reason")
        if kind == "approval.denied" and (not isinstance(r, str) or not r.strip()):
            v.field("reason", "a denial needs a reason")
        if r is not None and not isinstance(r, str):
            v.field("reason", "must be a string")
        v.raise_if_any()
        return doc
    return dec


def _oid_field(doc, v):
    if not is_oid(doc.get("oid")):
        v.field("oid", "is not an OID")


def _opt_text(doc, f, v):
    if f in doc and doc[f] is not None and not is_text(doc[f]):
        v.field(f, "1 to 4096 bytes without control characters")


def dec_policy(doc, v):
    refuse_unknown(doc, {"routine_days", "high_impact_days", "keep_last_submissions", "allow_future_sweeps", "note"}, v)
    hi, ro = doc.get("high_impact_days"), doc.get("routine_days")
    if not is_int(hi) or not 90 <= hi <= 180:
        v.field("high_impact_days", "must be 90..=180")
    if not is_int(ro) or ro < 1 or (is_int(hi) and ro > hi):
        v.field("routine_days", "must be 1 <= n <= high_impact_days")
    k = doc.get("keep_last_submissions", 0)
    if not is_int(k) or not 0 <= k <= 100000:
        v.field("keep_last_submissions", "must be 0..=100000")
    if not isinstance(doc.get("allow_future_sweeps", False), bool):
        v.field("allow_future_sweeps", "must be a boolean")
    _opt_text(doc, "note", v)
    v.raise_if_any()
    return doc


def dec_pinned(doc, v):
    refuse_unknown(doc, {"oid", "reason"}, v)
    _oid_field(doc, v)
    _opt_text(doc, "reason", v)
    v.raise_if_any()
    return doc


def dec_unpinned(doc, v):
    refuse_unknown(doc, {"oid", "class", "reason"}, v)
    _oid_field(doc, v)
    if "class" in doc and doc["class"] is not None and doc["class"] not in ("routine", "high_impact"):
        v.field("class", "must be routine or high_impact")
    _opt_text(doc, "reason", v)
    v.raise_if_any()
    return doc


def dec_reclassified(doc, v):
    refuse_unknown(doc, {"oid", "class", "reason"}, v)
    _oid_field(doc, v)
    if doc.get("class") not in CLASSES:
        v.field("class", "must be routine, high_impact or pinned")
    _opt_text(doc, "reason", v)
    v.raise_if_any()
    return doc


def dec_redacted(doc, v):
    refuse_unknown(doc, {"oid", "original_sha256", "redacted_sha256", "redacted_size", "reason", "findings"}, v)
    _oid_field(doc, v)
    for f in ("original_sha256", "redacted_sha256"):
        if not isinstance(doc.get(f), str) or not HEX64_RE.fullmatch(doc[f]):
            v.field(f, "must be 64 lower-case hex digits")
    if not is_int(doc.get("redacted_size")) or doc["redacted_size"] < 0:
        v.field("redacted_size", "must be an integer >= 0")
    if not is_text(doc.get("reason")):
        v.field("reason", "1 to 4096 bytes without control characters")
    if "findings" in doc and doc["findings"] is not None:
        f = doc["findings"]
        if not isinstance(f, list) or not all(isinstance(x, dict) and set(x) <= {"kind", "line"} for x in f):
            v.field("findings", "must be a list of {kind, line}")
    v.raise_if_any()
    return doc


def dec_sweep(doc, v):
    refuse_unknown(doc, {"now", "note"}, v)
    if "now" in doc and doc["now"] is not None and parse_rfc3339(doc["now"]) is None:
        v.field("now", "must be RFC 3339")
    _opt_text(doc, "note", v)
    v.raise_if_any()
    return doc


def dec_expired(doc, v):
    refuse_unknown(doc, {"oid", "as_of_ms", "sweep_seq", "reason"}, v)
    _oid_field(doc, v)
    if not is_int(doc.get("as_of_ms")) or doc["as_of_ms"] < 0:
        v.field("as_of_ms", "must be Unix ms")
    if "sweep_seq" in doc and doc["sweep_seq"] is not None and (not is_int(doc["sweep_seq"]) or doc["sweep_seq"] < 0):
        v.field("sweep_seq", "must be a sequence number")
    _opt_text(doc, "reason", v)
    v.raise_if_any()
    return doc


DECODERS = {
    "ledger.genesis": dec_genesis,
    "key.registered": dec_key_registered,
    "key.revoked": dec_key_revoked,
    "task.registered": dec_task,
    "evidence.registered": dec_evidence,
    "execution.recorded": dec_execution,
    "submission.received": dec_submission,
    "check.recorded": dec_check,
    "verdict.issued": dec_verdict,
    "verdict.imported": dec_imported,
    "verdict.deadline_passed": dec_deadline,
    "approval.requested": dec_approval_requested,
    "approval.granted": dec_approval_decided("approval.granted"),
    "approval.denied": dec_approval_decided("approval.denied"),
    "retention.policy_set": dec_policy,
    "retention.pinned": dec_pinned,
    "retention.unpinned": dec_unpinned,
    "retention.reclassified": dec_reclassified,
    "retention.redacted": dec_redacted,
    "evidence.expired": dec_expired,
    "retention.sweep": dec_sweep,
}


# --------------------------------------------------------------------------
# State (DOMAIN.md section 4)
# --------------------------------------------------------------------------
DAY_MS = 86400000


def ms_to_rfc3339(ms):
    return datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class State:
    def __init__(self):
        self.keys = {}            # hex -> record (section 4.4 / summary vectors)
        self.origin = None
        self.ledger_key = None
        self.digests = {}         # statement digest -> seq
        self.kinds = {}           # seq -> (kind, payload dict or None)
        self.tasks = {}           # canonical task id -> TaskState (section 4.1)
        self.oids = {}            # OID -> OidRecord (section 4.3)
        self.policy = {"routine_days": 30, "high_impact_days": 180,
                       "keep_last_submissions": 0, "allow_future_sweeps": False}
        self.policy_event = None
        self.pins = {}            # OID -> {seq, at_ms, by, reason}
        self.redactions = {}
        self.sweeps = {}          # str(seq) -> {as_of_ms, at_ms, by, expired}
        self.applied = 0
        self.last_time = None
        self.last_leaf = None

    def as_json(self):
        return {
            "applied": self.applied,
            "keys": {"keys": self.keys, "ledger_key": self.ledger_key, "origin": self.origin},
            "domain": {
                "verdicts": {"tasks": self.tasks},
                "oids": {"oids": self.oids},
                "retention": {"policy": {"policy": self.policy, **(self.policy_event or {})},
                              "pins": self.pins, "redactions": self.redactions, "sweeps": self.sweeps},
            },
        }


# ---- authority (section 1.3) --------------------------------------------
def key_active(rec, s, t):
    if rec["revoked_seq"] is not None:
        return False
    if not rec["registered_seq"] < s:
        return False
    if rec["not_before_ms"] is not None and t < rec["not_before_ms"]:
        return False
    if rec["not_after_ms"] is not None and t > rec["not_after_ms"]:
        return False
    return True


def check_authority(st, author_hex, kind, s, t):
    rec = st.keys.get(author_hex)
    if rec is None:
        raise Refused("permission_denied", "unknown key %s" % author_hex)
    if rec["revoked_seq"] is not None:
        raise Refused("permission_denied", "key was revoked at seq %d" % rec["revoked_seq"])
    if not (rec["registered_seq"] < s and
            (rec["not_before_ms"] is None or rec["not_before_ms"] <= t) and
            (rec["not_after_ms"] is None or t <= rec["not_after_ms"])):
        raise Refused("permission_denied", "key is outside its validity window")
    roles = X_ROLES if kind.startswith("x-") else KIND_ROLES[kind]
    if not any(r in rec["roles"] for r in roles):
        raise Refused("permission_denied", "%s needs one of the roles %s" % (kind, ", ".join(roles)))


# ---- task helpers ---------------------------------------------------------
def get_task(st, raw_id):
    tid = canonical_task_id(raw_id)
    task = st.tasks.get(tid)
    if task is None:
        raise Refused("not_found", "task %s is not registered" % (tid or raw_id))
    return task


def latest_submission(task):
    return task["submissions"][-1]["seq"] if task["submissions"] else None


def judged_submission(task, given, verb="judge"):
    latest = latest_submission(task)
    if latest is None:
        raise Refused("failed_precondition", "task %s has no submission to %s" % (task["task_id"], verb))
    if given is None:
        return latest
    if given == latest:
        return latest
    if any(x["seq"] == given for x in task["submissions"]):
        raise Refused("failed_precondition", "submission %d was superseded by submission %d" % (given, latest))
    raise Refused("not_found", "submission %d of task %s not found" % (given, task["task_id"]))


def check_oids_of_task(st, task, oids, field="evidence_oids"):
    for o in oids or []:
        rec = st.oids.get(o)
        if rec is None:
            raise Refused("not_found", "evidence OID %s is not registered" % o)
        if rec["task_id"] != task["task_id"]:
            raise Refused("invalid", "%s: evidence OID %s is registered to task %s" % (field, o, rec["task_id"]))


def not_submitter(task, author_hex, verb):
    if author_hex in task["submitters"]:
        raise Refused("permission_denied",
                      "separation of duties: key %s is a submitter of task %s and cannot %s it"
                      % (author_hex, task["task_id"], verb))


# ---- retention rule (RETENTION.md "The expiry rule") ----------------------
def explicit_pin(st, oid):
    return st.pins.get(oid)


def is_pinned(st, oid):
    return oid in st.pins or st.oids[oid]["retention_class"] == "pinned"


def class_days(st, cls):
    if cls == "routine":
        return st.policy["routine_days"]
    if cls == "high_impact":
        return st.policy["high_impact_days"]
    return None


def held_by_count_limit(st, oid):
    n = st.policy.get("keep_last_submissions", 0)
    if not n:
        return False
    task = st.tasks.get(st.oids[oid]["task_id"])
    if task is None:
        return False
    for sub in task["submissions"][-n:]:
        if oid in sub["evidence_oids"]:
            return True
    return False


def expiry_decision(st, oid, now_ms):
    """(expired?, why kept)."""
    rec = st.oids[oid]
    pin = explicit_pin(st, oid)
    if pin is not None:
        return False, "it is pinned (event %d)" % pin["seq"]
    if rec["retention_class"] == "pinned":
        return False, "it is pinned by its class"
    if held_by_count_limit(st, oid):
        return False, "the count limit keeps it"
    days = class_days(st, rec["retention_class"])
    if days is None:
        return False, "its class has no period"
    exp = rec["registered_at_ms"] + days * DAY_MS
    if now_ms >= exp:
        return True, None
    return False, "its class keeps it until %s" % ms_to_rfc3339(exp)


# --------------------------------------------------------------------------
# Admission: DOMAIN.md sections 1.2, 1.3, 8
# --------------------------------------------------------------------------
def admit(st, seq, t, kind, author, payload, signature, check_signature=True):
    """Raises Refused or returns the decoded payload (dict / None for x- kinds).

    check_signature=False: BUNDLE.md §10 step 7 re-admits with DOMAIN.md §8
    steps 2-5 only (the author signature is BUNDLE.md §4.2's own finding)."""
    a = author.hex()
    # 1. shape and authority
    if len(payload) > MAX_PAYLOAD:
        raise Refused("resource_exhausted", "payload over 256 KiB")
    if not KIND_RE.fullmatch(kind):
        raise Refused("invalid", "kind outside the alphabet")
    if kind not in KIND_ROLES and not kind.startswith("x-"):
        raise Refused("invalid", "unknown kind %s" % kind)
    err = verify_sig(author, signing_message(kind, payload), signature) if check_signature else None
    if err:
        raise Refused("unauthenticated", "signature does not verify (%s)" % err)
    if seq == 0 and kind != "ledger.genesis":
        raise Refused("permission_denied", "sequence 0 must be the genesis event")
    if kind == "ledger.genesis" and seq != 0:
        raise Refused("permission_denied", "genesis is only valid at sequence 0")
    if kind != "ledger.genesis":
        check_authority(st, a, kind, seq, t)
    if kind.startswith("x-"):
        return None  # opaque
    # 2. schema
    v = Violations()
    doc = load_json_object(payload, v)
    dec = DECODERS[kind](doc, v)
    # 3-5. the kind's rule (DOMAIN.md section 8 table order)
    rule = RULES.get(kind)
    if rule:
        rule(st, seq, t, a, doc, dec, payload, author)
    return doc


def rule_genesis(st, seq, t, a, doc, dec, payload, author):
    if a != doc["ledger_key"]:
        raise Refused("permission_denied", "genesis must be signed by the ledger key it names")
    v = Violations()
    if doc["admin_key"] == doc["ledger_key"]:
        v.field("admin_key", "must differ from ledger_key")
    o = doc["origin"]
    if not o or "\n" in o:
        v.field("origin", "must be one non-empty line")
    v.raise_if_any()


def rule_key_registered(st, seq, t, a, doc, dec, payload, author):
    rec = st.keys.get(doc["public_key"])
    if rec is not None:
        msg = "key %s is already registered at seq %d" % (doc["public_key"], rec["registered_seq"])
        if rec["revoked_seq"] is not None:
            msg += " and revoked at seq %d" % rec["revoked_seq"]
        raise Refused("already_exists", msg)


def rule_key_revoked(st, seq, t, a, doc, dec, payload, author):
    k = doc["public_key"]
    rec = st.keys.get(k)
    if rec is None:
        raise Refused("not_found", "key %s is not registered" % k)
    if rec["revoked_seq"] is not None:
        raise Refused("failed_precondition", "key %s is already revoked at seq %d" % (k, rec["revoked_seq"]))
    if k == st.ledger_key:
        raise Refused("failed_precondition", "the ledger key cannot be revoked: rotate the ledger instead")
    if "admin" in rec["roles"]:
        active = [h for h, r in st.keys.items() if "admin" in r["roles"] and key_active(r, seq, t)]
        if len(active) < 2:
            raise Refused("failed_precondition", "refusing to revoke the last active admin key")


def rule_task(st, seq, t, a, doc, dec, payload, author):
    tid = dec["task_id"]
    if tid in st.tasks:
        raise Refused("already_exists", "task %s is already registered at seq %d" % (tid, st.tasks[tid]["contract"]["seq"]))


def rule_evidence(st, seq, t, a, doc, dec, payload, author):
    get_task(st, doc["task_id"])
    oid = mint_oid(statement_digest(author, "evidence.registered", payload), t)
    if oid in st.oids:
        raise Refused("already_exists", "evidence OID %s is already registered" % oid)


def rule_execution(st, seq, t, a, doc, dec, payload, author):
    task = get_task(st, doc["task_id"])
    check_oids_of_task(st, task, doc.get("evidence_oids"))


def artifact_name_of(rec, oid):
    if rec.get("name"):
        return rec["name"]
    if rec["evidence_type"] in ("patch.diff", "selftest.log", "report.md", "submit.json"):
        return rec["evidence_type"]
    return "evidence/%s" % oid


def rule_submission(st, seq, t, a, doc, dec, payload, author):
    task = get_task(st, doc["task_id"])
    check_oids_of_task(st, task, doc["evidence_oids"])
    for o in doc.get("touched_oids") or []:
        if o not in st.oids:
            raise Refused("not_found", "touched_oids: OID %s is not registered" % o)
    names = {}
    for o in doc["evidence_oids"]:
        n = st.oids[o]["artifact_name"]
        if n in names:
            raise Refused("invalid", "evidence_oids: two OIDs have the artifact name %s (%s, %s)" % (n, names[n], o))
        names[n] = o
    for o in doc["evidence_oids"]:
        if st.oids[o]["state"] != "live":
            raise Refused("failed_precondition", "evidence %s is %s (content removed at seq %d)"
                          % (o, st.oids[o]["state"], st.oids[o]["removal"]["seq"]))


def rule_check(st, seq, t, a, doc, dec, payload, author):
    task = get_task(st, doc["task_id"])
    not_submitter(task, a, "check")
    judged_submission(task, doc.get("submission_seq"), "check")


def rule_verdict(st, seq, t, a, doc, dec, payload, author):
    task = get_task(st, doc["task_id"])
    check_oids_of_task(st, task, doc.get("evidence_oids"))
    not_submitter(task, a, "judge")
    sub = judged_submission(task, doc.get("submission_seq"))
    if doc["verdict"] == "PASS":
        v = Violations()
        checks = doc.get("checks") or {}
        recorded = {n: c for n, c in task["checks"].items() if c["submission_seq"] == sub}
        for name in task["contract"]["required_checks"]:
            if checks.get(name) is True:
                continue
            if name not in checks and recorded.get(name, {}).get("passed") is True:
                continue
            v.rule("verdict.required_check", "/checks/" + name, "required check %s is not passed" % name)
        for name, c in sorted(recorded.items()):
            if not c["passed"]:
                v.rule("verdict.no_check_no_pass", "/verdict", "check %s is recorded as failed (event %d)" % (name, c["seq"]))
        sub_rec = [x for x in task["submissions"] if x["seq"] == sub][0]
        types = {"submit.json"} | {st.oids[o]["evidence_type"] for o in sub_rec["evidence_oids"] if o in st.oids}
        for et in task["contract"]["required_evidence"]:
            if et not in types:
                v.rule("verdict.required_evidence", "/verdict", "required evidence %s is not in submission %d" % (et, sub))
        v.raise_if_any()


def imported_oids(author, payload, doc, t):
    dg = statement_digest(author, "verdict.imported", payload)
    files = ([doc["verdict_json"]] if doc.get("verdict_json") is not None else []) + list(doc.get("artifacts") or [])
    # DOMAIN.md §3.9: index 0 is verdict.json when verdict_json is not null, then the artifacts
    return [(mint_imported_oid(dg, i, t), f) for i, f in enumerate(files)]


def rule_imported(st, seq, t, a, doc, dec, payload, author):
    task = get_task(st, doc["task_id"])
    not_submitter(task, a, "judge")
    latest = latest_submission(task)
    given = doc.get("submission_seq")
    if latest is None:
        if given is not None:
            raise Refused("not_found", "task %s has no submission %d" % (task["task_id"], given))
    else:
        if given is not None:  # DOMAIN.md §3.9: absent is always allowed
            judged_submission(task, given)
    for oid, _ in imported_oids(author, payload, doc, t):
        if oid in st.oids:
            raise Refused("already_exists", "evidence OID %s is already registered" % oid)


def rule_deadline(st, seq, t, a, doc, dec, payload, author):
    task = get_task(st, doc["task_id"])
    not_submitter(task, a, "judge")
    dl = task["contract"].get("verdict_deadline_ms")
    if dl is None:
        raise Refused("failed_precondition", "task %s has no verdict deadline" % task["task_id"])
    if doc["deadline_ms"] != dl:
        raise Refused("failed_precondition", "the task's verdict deadline is %d, not %d" % (dl, doc["deadline_ms"]))
    if doc["as_of_ms"] > t:
        raise Refused("failed_precondition", "as_of_ms %d is after the ledger clock %d" % (doc["as_of_ms"], t))
    if any(h["kind"] == "verdict.deadline_passed" for h in task["history"]):
        raise Refused("failed_precondition", "the deadline of task %s was already recorded as passed" % task["task_id"])
    if task["verdict"] is not None:
        raise Refused("failed_precondition", "task %s has a verdict (event %d)" % (task["task_id"], task["verdict"]["seq"]))
    latest = latest_submission(task)
    given = doc.get("submission_seq")
    if given != latest:  # DOMAIN.md §3.9 step 7: also for unknown or older numbers
        raise Refused("failed_precondition", "submission_seq must name the task's latest submission (%s)"
                      % ("none" if latest is None else latest))


def rule_approval_requested(st, seq, t, a, doc, dec, payload, author):
    get_task(st, doc["task_id"])
    ex = parse_rfc3339(doc.get("expires_at")) if doc.get("expires_at") is not None else None
    if ex is not None and ex < t:
        raise Refused("failed_precondition", "expires_at %s is already past at the ledger time" % doc["expires_at"])


def rule_approval_decided(st, seq, t, a, doc, dec, payload, author):
    task = get_task(st, doc["task_id"])
    req = task["approvals"].get(str(doc["request_seq"]))
    if req is None:
        raise Refused("not_found", "approval request %d of task %s not found" % (doc["request_seq"], task["task_id"]))
    v = Violations()
    if doc["scope"] != req["scope"]:
        v.field("scope", "%r is not the request's %r" % (doc["scope"], req["scope"]))
    if doc["mutation_mode"] != req["mutation_mode"]:
        v.field("mutation_mode", "%r is not the request's %r" % (doc["mutation_mode"], req["mutation_mode"]))
    if doc.get("expires_at") is not None and req["expires_at_ms"] is not None:
        if parse_rfc3339(doc["expires_at"]) > req["expires_at_ms"]:
            v.field("expires_at", "a grant cannot outlive the request's expiry")
    v.raise_if_any()
    if a == req["requested_by"]:
        raise Refused("permission_denied", "nobody answers their own approval request")
    if doc["actor"].strip().lower() == req["actor"].strip().lower():
        raise Refused("permission_denied", "actor %s requested this approval and cannot answer it" % doc["actor"])
    not_submitter(task, a, "approve")
    if req["state"] != "requested":
        raise Refused("failed_precondition", "approval request %d was already %s" % (doc["request_seq"], req["state"]))
    if req["expires_at_ms"] is not None and t > req["expires_at_ms"]:
        raise Refused("failed_precondition", "approval request %d has expired" % doc["request_seq"])
    if doc.get("expires_at") is not None and parse_rfc3339(doc["expires_at"]) < t:
        raise Refused("failed_precondition", "the grant's expires_at is already past")


def _registered_oid(st, oid):
    rec = st.oids.get(oid)
    if rec is None:
        raise Refused("not_found", "evidence OID %s is not registered" % oid)
    return rec


def _not_expired(rec, oid):
    if rec["state"] == "expired":
        raise Refused("failed_precondition", "the content of %s is expired" % oid)


def rule_pinned(st, seq, t, a, doc, dec, payload, author):
    rec = _registered_oid(st, doc["oid"])
    _not_expired(rec, doc["oid"])
    if doc["oid"] in st.pins:
        raise Refused("failed_precondition", "%s is already pinned (by event %d)" % (doc["oid"], st.pins[doc["oid"]]["seq"]))
    if rec["retention_class"] == "pinned":
        raise Refused("failed_precondition", "%s is already pinned (by its class)" % doc["oid"])


def rule_unpinned(st, seq, t, a, doc, dec, payload, author):
    rec = _registered_oid(st, doc["oid"])
    if not is_pinned(st, doc["oid"]):
        raise Refused("failed_precondition", "%s is not pinned" % doc["oid"])
    if doc.get("class") is not None and rec["retention_class"] != "pinned":
        raise Refused("invalid", "class: only for an OID of class pinned")


def rule_reclassified(st, seq, t, a, doc, dec, payload, author):
    rec = _registered_oid(st, doc["oid"])
    _not_expired(rec, doc["oid"])
    if rec["retention_class"] == doc["class"]:
        raise Refused("failed_precondition", "%s is already in class %s" % (doc["oid"], doc["class"]))


def rule_redacted(st, seq, t, a, doc, dec, payload, author):
    rec = _registered_oid(st, doc["oid"])
    _not_expired(rec, doc["oid"])
    now = rec["removal"]["redacted_sha256"] if rec["state"] == "redacted" else rec["sha256"]
    if doc["original_sha256"] != now:
        raise Refused("failed_precondition", "%s holds %s, not original_sha256 %s" % (doc["oid"], now, doc["original_sha256"]))
    if doc["redacted_sha256"] == now:
        raise Refused("failed_precondition", "redacted_sha256 must differ from the content it replaces")


def rule_sweep(st, seq, t, a, doc, dec, payload, author):
    if doc.get("now") is not None:
        now = parse_rfc3339(doc["now"])
        if now > t and not st.policy.get("allow_future_sweeps"):
            raise Refused("failed_precondition", "the sweep's now %s is after the ledger clock" % doc["now"])


def rule_expired(st, seq, t, a, doc, dec, payload, author):
    oid = doc["oid"]
    rec = _registered_oid(st, oid)
    if doc.get("sweep_seq") is not None:
        k = st.kinds.get(doc["sweep_seq"])
        if k is None or k[0] != "retention.sweep":
            raise Refused("not_found", "sweep_seq %d is not a retention.sweep event" % doc["sweep_seq"])
        if st.sweeps[str(doc["sweep_seq"])]["as_of_ms"] != doc["as_of_ms"]:
            raise Refused("invalid", "as_of_ms: not the now of sweep %d" % doc["sweep_seq"])
    _not_expired(rec, oid)
    if doc["as_of_ms"] > t and not st.policy.get("allow_future_sweeps"):
        raise Refused("failed_precondition", "as_of_ms %d is after the ledger clock %d" % (doc["as_of_ms"], t))
    expired, why = expiry_decision(st, oid, doc["as_of_ms"])
    if not expired:
        raise Refused("failed_precondition", "%s has not expired at %d: %s" % (oid, doc["as_of_ms"], why))


RULES = {
    "ledger.genesis": rule_genesis,
    "key.registered": rule_key_registered,
    "key.revoked": rule_key_revoked,
    "task.registered": rule_task,
    "evidence.registered": rule_evidence,
    "execution.recorded": rule_execution,
    "submission.received": rule_submission,
    "check.recorded": rule_check,
    "verdict.issued": rule_verdict,
    "verdict.imported": rule_imported,
    "verdict.deadline_passed": rule_deadline,
    "approval.requested": rule_approval_requested,
    "approval.granted": rule_approval_decided,
    "approval.denied": rule_approval_decided,
    "retention.pinned": rule_pinned,
    "retention.unpinned": rule_unpinned,
    "retention.reclassified": rule_reclassified,
    "retention.redacted": rule_redacted,
    "retention.sweep": rule_sweep,
    "evidence.expired": rule_expired,
}


# --------------------------------------------------------------------------
# Folds (DOMAIN.md section 4, 8.1)
# --------------------------------------------------------------------------
def _u64(n):
    return struct.pack(">Q", n)


def _str(s):
    b = s.encode("utf-8")
    return _u64(len(b)) + b


def _opt(x):
    return b"\x00" if x is None else b"\x01" + x


def state_digest(task):
    """DOMAIN.md section 4.2."""
    out = b"docket/v1/task-state\x00" + _str(task["task_id"]) + bytes.fromhex(task["contract"]["sha256"])
    out += bytes([{"pending": 0, "pass": 1, "fail": 2}[task["status"]]])
    out += _u64(len(task["submissions"])) + b"".join(_u64(s["seq"]) for s in task["submissions"])
    out += _u64(len(task["checks"]))
    for name in sorted(task["checks"], key=lambda n: n.encode()):
        c = task["checks"][name]
        out += _str(name) + bytes([1 if c["passed"] else 0]) + _u64(c["seq"]) + bytes.fromhex(c["by"]) + _u64(c["submission_seq"])
    vd = task["verdict"]
    if vd is None:
        out += b"\x00"
    else:
        out += b"\x01" + _u64(vd["seq"]) + bytes.fromhex(vd["by"]) + _u64(vd["at_ms"]) + _str(vd["verdict"])
        out += _opt(None if vd["reason_code"] is None else _str(vd["reason_code"]))
        out += _opt(None if vd["fail_class"] is None else _str(vd["fail_class"]))
        out += bytes.fromhex(vd["sha256"]) + _u64(vd["submission_seq"])
        out += _u64(len(vd["evidence_oids"])) + b"".join(_str(o) for o in vd["evidence_oids"])
    out += _u64(len(task["approvals"]))
    for rs in sorted(task["approvals"], key=int):
        ap = task["approvals"][rs]
        out += _u64(ap["request_seq"]) + bytes.fromhex(ap["requested_by"]) + _str(ap["actor"]) + _str(ap["scope"])
        out += _str(ap["mutation_mode"]) + _str(ap["requested_at"])
        out += _opt(None if ap["expires_at_ms"] is None else struct.pack(">q", ap["expires_at_ms"]))
        out += bytes([{"requested": 0, "granted": 1, "denied": 2}[ap["state"]]])
        out += _opt(None if ap["decided_seq"] is None else _u64(ap["decided_seq"]))
        out += _opt(None if ap["decided_by"] is None else bytes.fromhex(ap["decided_by"]))
        out += _opt(None if ap["decided_actor"] is None else _str(ap["decided_actor"]))
        out += _opt(None if ap["note"] is None else _str(ap["note"]))
        out += _opt(None if ap["reason"] is None else _str(ap["reason"]))
    return hashlib.sha256(out).hexdigest()


def _history(task, seq, kind, t, reason_code=None):
    # DOMAIN.md §4.1 "History": reason_code is the current verdict's after the event
    # (non-null only for a verdict.issued naming one), whatever the entry's kind.
    reason_code = task["verdict"]["reason_code"] if task["verdict"] is not None else None
    before = task["state_digest"] if task["history"] else None
    after = state_digest(task)
    task["history"].append({"after": after, "at_ms": t, "before": before, "kind": kind,
                            "reason_code": reason_code, "seq": seq, "status": task["status"]})
    task["state_digest"] = after


def _join_submitters(task, a):
    if a not in task["submitters"]:
        task["submitters"].append(a)
        task["submitters"].sort()  # DOMAIN.md §4.1: sorted


def _roles(rs):
    """Without repetition, in the order of DOMAIN.md §1."""
    return [r for r in ROLE_ORDER if r in rs]


def _sub_or_latest(doc, task):
    s = doc.get("submission_seq")
    return latest_submission(task) if s is None else s


def fold(st, seq, t, kind, author, payload, doc):
    a = author.hex()
    st.kinds[seq] = (kind, doc)
    st.digests[statement_digest(author, kind, payload)] = seq
    st.applied += 1
    if kind.startswith("x-"):
        return
    if kind == "ledger.genesis":
        st.origin, st.ledger_key = doc["origin"], doc["ledger_key"]
        base = {"label": None, "not_after_ms": None, "not_before_ms": None, "registered_by": doc["ledger_key"],
                "registered_seq": seq, "revoked_reason": None, "revoked_seq": None}
        st.keys[doc["ledger_key"]] = dict(base, roles=_roles(doc["ledger_roles"]))
        st.keys[doc["admin_key"]] = dict(base, roles=["admin"], label="genesis admin")
    elif kind == "key.registered":
        st.keys[doc["public_key"]] = {"label": doc.get("label"), "not_after_ms": doc.get("not_after_ms"),
                                      "not_before_ms": doc.get("not_before_ms"), "registered_by": a,
                                      "registered_seq": seq, "revoked_reason": None, "revoked_seq": None,
                                      "roles": _roles(doc["roles"])}
    elif kind == "key.revoked":
        st.keys[doc["public_key"]]["revoked_seq"] = seq
        st.keys[doc["public_key"]]["revoked_reason"] = doc.get("reason")
    elif kind == "task.registered":
        c = parse_task_contract(doc, Violations())
        contract = {"registered_at_ms": t, "registered_by": a, "required_checks": c["required_checks"],
                    "required_evidence": c["required_evidence"], "retention_class": c["retention_class"],
                    "seq": seq, "sha256": hashlib.sha256(payload).hexdigest()}
        if c["verdict_deadline_ms"] is not None:
            contract["verdict_deadline_ms"] = c["verdict_deadline_ms"]
        task = {"approvals": {}, "checks": {}, "contract": contract, "evidence": [], "executions": [],
                "history": [], "state_digest": None, "status": "pending", "submissions": [],
                "submitters": [], "task_id": c["task_id"], "verdict": None}
        st.tasks[c["task_id"]] = task
        _history(task, seq, kind, t)
    elif kind == "evidence.registered":
        task = st.tasks[canonical_task_id(doc["task_id"])]
        oid = mint_oid(statement_digest(author, kind, payload), t)
        cls = doc.get("retention_class") or task["contract"]["retention_class"]
        rec = {"artifact_name": None, "evidence_type": doc["evidence_type"], "media_type": doc["media_type"],
               "name": doc.get("name"), "pinned": cls == "pinned", "registered_at_ms": t, "registered_by": a,
               "registered_seq": seq, "removal": None, "retention_class": cls, "sha256": doc["sha256"],
               "size": doc["size"], "state": "live", "task_id": task["task_id"]}
        rec["artifact_name"] = artifact_name_of(rec, oid)
        st.oids[oid] = rec
        _join_submitters(task, a)
        task["evidence"].append(oid)
    elif kind == "execution.recorded":
        task = st.tasks[canonical_task_id(doc["task_id"])]
        _join_submitters(task, a)
        task["executions"].append({"by": a, "evidence_hash": doc["evidence_hash"],
                                   "evidence_oids": list(doc.get("evidence_oids") or []),
                                   "exit_code": doc["exit_code"], "seq": seq, "status": doc["status"]})
    elif kind == "submission.received":
        task = st.tasks[canonical_task_id(doc["task_id"])]
        _join_submitters(task, a)
        sub = {"at_ms": t, "by": a, "evidence_oids": list(doc["evidence_oids"]), "seq": seq,
               "sha256": hashlib.sha256(payload).hexdigest(), "status": doc["status"]}
        if doc.get("touched_oids"):
            sub["touched_oids"] = list(doc["touched_oids"])
        task["submissions"].append(sub)
        task["checks"] = {}
        task["verdict"] = None
        task["status"] = "pending"
        _history(task, seq, kind, t)
    elif kind == "check.recorded":
        task = st.tasks[canonical_task_id(doc["task_id"])]
        sub = _sub_or_latest(doc, task)
        task["checks"][doc["name"]] = {"by": a, "passed": doc["passed"], "seq": seq, "submission_seq": sub}
        _history(task, seq, kind, t)
    elif kind == "verdict.issued":
        task = st.tasks[canonical_task_id(doc["task_id"])]
        sub = _sub_or_latest(doc, task)
        for name, passed in (doc.get("checks") or {}).items():
            cur = task["checks"].get(name)
            if cur is not None and cur["passed"] == passed and cur["submission_seq"] == sub:
                continue
            task["checks"][name] = {"by": a, "passed": passed, "seq": seq, "submission_seq": sub}
        task["verdict"] = {"at_ms": t, "by": a, "evidence_oids": list(doc.get("evidence_oids") or []),
                           "fail_class": doc.get("fail_class"), "reason_code": doc.get("reason_code"),
                           "seq": seq, "sha256": hashlib.sha256(payload).hexdigest(), "submission_seq": sub,
                           "verdict": doc["verdict"]}
        task["status"] = "pass" if doc["verdict"] == "PASS" else "fail"
        _history(task, seq, kind, t, doc.get("reason_code"))
    elif kind in ("verdict.imported", "verdict.deadline_passed"):
        task = st.tasks[canonical_task_id(doc["task_id"])]
        minted = []
        if kind == "verdict.imported":
            for oid, f in imported_oids(author, payload, doc, t):
                cls = task["contract"]["retention_class"]
                rec = {"artifact_name": f["path"], "evidence_type": f["evidence_type"], "media_type": f["media_type"],
                       "name": f["path"], "pinned": cls == "pinned", "registered_at_ms": t, "registered_by": a,
                       "registered_seq": seq, "removal": None, "retention_class": cls, "sha256": f["sha256"],
                       "size": f["size"], "state": "live", "task_id": task["task_id"]}
                st.oids[oid] = rec
                task["evidence"].append(oid)  # DOMAIN.md §4.1 `evidence`, §8.1
                minted.append(oid)
        task["verdict"] = {"at_ms": t, "by": a, "evidence_oids": minted, "fail_class": doc.get("fail_class"),
                           "reason_code": None, "seq": seq, "sha256": hashlib.sha256(payload).hexdigest(),
                           "submission_seq": (doc.get("submission_seq") if doc.get("submission_seq") is not None
                                              else (latest_submission(task) if latest_submission(task) is not None
                                                    else 0)),
                           "verdict": doc["verdict"]}
        task["status"] = "pass" if doc["verdict"] == "PASS" else "fail"
        _history(task, seq, kind, t)
    elif kind == "approval.requested":
        task = st.tasks[canonical_task_id(doc["task_id"])]
        ex = doc.get("expires_at")
        task["approvals"][str(seq)] = {
            "actor": doc["actor"], "decided_actor": None, "decided_by": None, "decided_seq": None,
            "expires_at_ms": parse_rfc3339(ex) if ex is not None else None, "mutation_mode": doc["mutation_mode"],
            "note": doc.get("note"), "reason": None, "request_seq": seq, "requested_at": doc["timestamp"],
            "requested_by": a, "scope": doc["scope"], "state": "requested"}
        _history(task, seq, kind, t)
    elif kind in ("approval.granted", "approval.denied"):
        task = st.tasks[canonical_task_id(doc["task_id"])]
        ap = task["approvals"][str(doc["request_seq"])]
        ap["state"] = "granted" if kind == "approval.granted" else "denied"
        ap["decided_seq"], ap["decided_by"], ap["decided_actor"] = seq, a, doc["actor"]
        ap["reason"] = doc.get("reason")
        if kind == "approval.granted" and doc.get("expires_at") is not None:
            ap["expires_at_ms"] = parse_rfc3339(doc["expires_at"])
        _history(task, seq, kind, t)
    elif kind == "retention.policy_set":
        st.policy = {"allow_future_sweeps": doc.get("allow_future_sweeps", False),
                     "high_impact_days": doc["high_impact_days"],
                     "keep_last_submissions": doc.get("keep_last_submissions", 0),
                     "routine_days": doc["routine_days"]}
        st.policy_event = {"at_ms": t, "by": a, "seq": seq}
    elif kind == "retention.pinned":
        st.pins[doc["oid"]] = {"at_ms": t, "by": a, "reason": doc.get("reason"), "seq": seq}
        st.oids[doc["oid"]]["pinned"] = True
    elif kind == "retention.unpinned":
        rec = st.oids[doc["oid"]]
        st.pins.pop(doc["oid"], None)
        if rec["retention_class"] == "pinned":
            tc = st.tasks[rec["task_id"]]["contract"]["retention_class"]
            rec["retention_class"] = doc.get("class") or (tc if tc != "pinned" else "routine")
        rec["pinned"] = False
    elif kind == "retention.reclassified":
        rec = st.oids[doc["oid"]]
        rec["retention_class"] = doc["class"]
        rec["pinned"] = doc["oid"] in st.pins or doc["class"] == "pinned"
    elif kind == "retention.redacted":
        rec = st.oids[doc["oid"]]
        rec["state"] = "redacted"
        rec["removal"] = {"at_ms": t, "reason": doc["reason"], "redacted_sha256": doc["redacted_sha256"],
                          "redacted_size": doc["redacted_size"], "seq": seq}
        st.redactions.setdefault(doc["oid"], []).append({"seq": seq, "at_ms": t, "by": a})
    elif kind == "retention.sweep":
        now = parse_rfc3339(doc["now"]) if doc.get("now") is not None else t
        st.sweeps[str(seq)] = {"as_of_ms": now, "at_ms": t, "by": a, "expired": 0}
    elif kind == "evidence.expired":
        rec = st.oids[doc["oid"]]
        reason = doc.get("reason") or "expired under the %s retention class" % rec["retention_class"]
        # BUNDLE.md §8: an expiry replaces `removal`, redacted_* null, also for a redacted OID
        rec["removal"] = {"at_ms": t, "reason": reason, "redacted_sha256": None, "redacted_size": None, "seq": seq}
        rec["state"] = "expired"
        if doc.get("sweep_seq") is not None and str(doc["sweep_seq"]) in st.sweeps:
            st.sweeps[str(doc["sweep_seq"])]["expired"] += 1


# --------------------------------------------------------------------------
# Folds without admission (BUNDLE.md §8, DOMAIN.md §1 "apply_partial", §8.1)
# --------------------------------------------------------------------------
RETENTION_OID_KINDS = ("retention.pinned", "retention.unpinned", "retention.reclassified",
                       "retention.redacted", "evidence.expired")


def decode_payload(kind, payload):
    """Payload::decode (DOMAIN.md §1.2 step 7): the decoded JSON object, or None."""
    v = Violations()
    try:
        doc = load_json_object(payload, v)
        DECODERS[kind](doc, v)
        return doc
    except Refused:
        return None
    except Exception:  # a payload this checker cannot even look at does not decode
        return None


def fold_unadmitted(st, seq, t, kind, author, payload):
    """Folds one event with no admission, as a bundle's summary does (BUNDLE.md
    §8): an event whose kind or payload does not decode, or that names a task,
    OID, request or key the folded events did not create, changes nothing.
    Returns True when the event changed the state."""
    if kind.startswith("x-"):
        return False
    if kind not in KIND_ROLES:
        return False
    doc = decode_payload(kind, payload)
    if doc is None:
        return False
    if kind == "key.registered":
        if doc["public_key"] in st.keys:  # a second registration changes nothing (BUNDLE.md §8)
            return False
    elif kind == "key.revoked":
        rec = st.keys.get(doc["public_key"])
        if rec is None or rec["revoked_seq"] is not None:
            return False
    elif kind == "task.registered":
        # GUESS (BUNDLE.md §8 silent): a second registration of one task id changes nothing
        if canonical_task_id(doc["task_id"]) in st.tasks:
            return False
    elif kind in RETENTION_OID_KINDS:
        if doc["oid"] not in st.oids:
            return False
    elif kind not in ("ledger.genesis", "retention.policy_set", "retention.sweep"):
        task = st.tasks.get(canonical_task_id(doc.get("task_id")))
        if task is None:
            return False
        if kind == "evidence.registered":
            if mint_oid(statement_digest(author, kind, payload), t) in st.oids:
                return False
        elif kind in ("check.recorded", "verdict.issued"):
            # GUESS (BUNDLE.md §8 silent): with no submission_seq and no carried
            # submission there is nothing to attach the check/verdict to
            if _sub_or_latest(doc, task) is None:
                return False
        elif kind == "verdict.imported":
            if any(o in st.oids for o, _ in imported_oids(author, payload, doc, t)):
                return False
        elif kind in ("approval.granted", "approval.denied"):
            if str(doc["request_seq"]) not in task["approvals"]:
                return False
    try:
        fold(st, seq, t, kind, author, payload, doc)
    except Exception:  # pragma: no cover -- a fold that fails must change nothing
        raise
    return True


def summary_projections(events):
    """events: (seq, recorded_at_ms, kind, author bytes, payload bytes) in
    sequence order. Returns (keys, tasks, oids, state) as BUNDLE.md §8 writes
    them in summary.json."""
    st = State()
    for seq, t, kind, author, payload in events:
        fold_unadmitted(st, seq, t, kind, author, payload)
    keys = {h: {"roles": r["roles"], "registered_seq": r["registered_seq"], "revoked_seq": r["revoked_seq"]}
            for h, r in st.keys.items()}
    return keys, st.tasks, st.oids, st


# --------------------------------------------------------------------------
# JSON pointer
# --------------------------------------------------------------------------
_MISSING = object()


def resolve(doc, pointer):
    if pointer == "":
        return doc
    cur = doc
    for raw in pointer.split("/")[1:]:
        tok = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, dict):
            if tok not in cur:
                return _MISSING
            cur = cur[tok]
        elif isinstance(cur, list):
            if not tok.isdigit() or int(tok) >= len(cur):
                return _MISSING
            cur = cur[int(tok)]
        else:
            return _MISSING
    return cur


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------
def replay_log(events_b64):
    """Decodes, verifies, re-admits and folds every log event; returns (state, problems)."""
    st = State()
    problems = []
    for i, e in enumerate(events_b64):
        raw = base64.b64decode(e)
        try:
            ev = decode_event(raw)
        except DecodeError as ex:
            problems.append("log[%d]: does not decode: %s" % (i, ex))
            return st, problems
        if ev["seq"] != i:
            problems.append("log[%d]: seq %d" % (i, ev["seq"]))
        want_prev = b"\x00" * 32 if i == 0 else st.last_leaf
        if ev["prev_hash"] != want_prev:
            problems.append("log[%d]: prev_hash does not chain" % i)
        if st.last_time is not None and ev["recorded_at_ms"] < st.last_time:
            problems.append("log[%d]: time goes back" % i)
        dg = statement_digest(ev["author"], ev["kind"], ev["payload"])
        if dg in st.digests:
            problems.append("log[%d]: statement already in the log at seq %d" % (i, st.digests[dg]))
        try:
            doc = admit(st, i, ev["recorded_at_ms"], ev["kind"], ev["author"], ev["payload"], ev["signature"])
        except Refused as r:
            problems.append("log[%d] (%s) refused on re-admission: %s %s" % (i, ev["kind"], r.code, r.message))
            return st, problems
        fold(st, i, ev["recorded_at_ms"], ev["kind"], ev["author"], ev["payload"], doc)
        st.last_leaf = leaf_hash(raw)
        st.last_time = ev["recorded_at_ms"]
    return st, problems


def run_case(name, case):
    """Returns (ok, detail, message_fragments_matched, fragments_total)."""
    exp = case["expected"]
    st, problems = replay_log(case["log"])
    if problems:
        return False, "; ".join(problems), 0, len(exp.get("message", []))
    pos = case["position"]
    seq, t = pos["seq"], pos["recorded_at_ms"]
    notes = []
    if seq != len(case["log"]):
        notes.append("position.seq %d != log length %d" % (seq, len(case["log"])))
    if st.last_time is not None and t < st.last_time:
        notes.append("position time goes back")
    s = case["statement"]
    kind, author = s["kind"], bytes.fromhex(s["author"])
    payload, sig = base64.b64decode(s["payload_b64"]), bytes.fromhex(s["signature"])
    dg = statement_digest(author, kind, payload)
    outcome = {}
    if dg in st.digests:
        outcome = {"outcome": "duplicate", "duplicate_of": st.digests[dg]}
    else:
        try:
            doc = admit(st, seq, t, kind, author, payload, sig)
            outcome = {"outcome": "admitted"}
            fold(st, seq, t, kind, author, payload, doc)
        except Refused as r:
            outcome = {"outcome": "refused", "code": r.code, "message_text": r.message}
    ok = outcome["outcome"] == exp["outcome"]
    if ok and exp["outcome"] == "refused":
        ok = outcome["code"] == exp["code"]
    if ok and exp["outcome"] == "duplicate":
        ok = outcome["duplicate_of"] == exp["duplicate_of"]
    frag_hit = 0
    frags = exp.get("message", []) if exp["outcome"] == "refused" else []
    if outcome["outcome"] == "refused":
        frag_hit = sum(1 for f in frags if f in outcome["message_text"])
    proj_fail = []
    if "projection" in exp:
        sj = json.loads(json.dumps(st.as_json()))
        for p in exp["projection"]:
            got = resolve(sj, p["pointer"])
            if "absent" in p:
                if p["absent"] and got is not _MISSING:
                    proj_fail.append("%s present (%r)" % (p["pointer"], got))
            elif got is _MISSING:
                proj_fail.append("%s missing (want %r)" % (p["pointer"], p["equals"]))
            elif got != p["equals"]:
                proj_fail.append("%s = %r (want %r)" % (p["pointer"], got, p["equals"]))
    detail = "got %s" % outcome["outcome"]
    if outcome["outcome"] == "refused":
        detail += " %s: %s" % (outcome["code"], outcome["message_text"])
    if outcome["outcome"] == "duplicate":
        detail += " of %d" % outcome["duplicate_of"]
    if not ok:
        detail = "expected %s %s%s; %s" % (exp["outcome"], exp.get("code", ""),
                                            " of %s" % exp["duplicate_of"] if "duplicate_of" in exp else "", detail)
    if proj_fail:
        ok = False
        detail += "; projection: " + "; ".join(proj_fail)
    if notes:
        detail += "; " + "; ".join(notes)
    return ok, detail, frag_hit, len(frags)


def check_oid_vectors():
    path = os.path.join(VEC, "oid", "vectors.json")
    cases = json.load(open(path))["cases"]
    results = []
    for i, c in enumerate(cases):
        payload = c["payload"].encode("utf-8")
        author = bytes.fromhex(c["author"])
        errs = []
        if hashlib.sha256(payload).hexdigest() != c["payload_sha256"]:
            errs.append("payload_sha256")
        dg = statement_digest(author, c["kind"], payload)
        if dg.hex() != c["statement_digest"]:
            errs.append("statement_digest")
        if oid_random(dg).hex() != c["random"]:
            errs.append("random")
        if mint_oid(dg, c["recorded_at_ms"]) != c["oid"]:
            errs.append("oid (%s)" % mint_oid(dg, c["recorded_at_ms"]))
        if not is_oid(c["oid"]):
            errs.append("oid spelling")
        if "event_b64" in c:
            ev = decode_event(base64.b64decode(c["event_b64"]))
            if (ev["kind"], ev["author"], ev["payload"]) != (c["kind"], author, payload):
                errs.append("event fields")
            if ev["signature"].hex() != c.get("signature"):
                errs.append("event signature field")
            if verify_sig(ev["author"], signing_message(ev["kind"], ev["payload"]), ev["signature"]):
                errs.append("event signature does not verify")
            if mint_oid(statement_digest(ev["author"], ev["kind"], ev["payload"]), ev["recorded_at_ms"]) != c["oid"]:
                errs.append("oid from event")
        results.append((i, errs))
    return results


def check_signature_vectors():
    path = os.path.join(VEC, "signatures", "vectors.json")
    bad = []
    vecs = json.load(open(path))
    for c in vecs:
        msg = bytes.fromhex(c["message"]) if c["message"] else b""
        err = verify_sig(bytes.fromhex(c["public_key"]), msg, bytes.fromhex(c["signature"]))
        if (err is None) != c["valid"] or (err is not None and err != c["error"]):
            bad.append("%s: got %s want %s" % (c["name"], err, c["error"]))
    return len(vecs), bad


def main(argv):
    verbose = "-v" in argv
    filters = [a for a in argv if not a.startswith("-")]
    nsig, sigbad = check_signature_vectors()
    print("signature rule (FORMAT.md 1.1) vs tests/vectors/signatures: %d/%d agree%s"
          % (nsig - len(sigbad), nsig, "" if not sigbad else " -- " + "; ".join(sigbad)))
    oids = check_oid_vectors()
    print("OID vectors (DOMAIN.md 2): %d/%d pass" % (sum(1 for _, e in oids if not e), len(oids)))
    for i, e in oids:
        if e:
            print("  oid case %d FAIL: %s" % (i, ", ".join(e)))
    data = json.load(open(os.path.join(VEC, "admission", "vectors.json")))
    cases = data["cases"]
    passed = failed = 0
    fh = ft = 0
    failures = []
    print()
    print("%-62s %-6s %s" % ("case", "result", "detail" if verbose else ""))
    print("-" * 100)
    for name in sorted(cases):
        if filters and not any(f in name for f in filters):
            continue
        try:
            ok, detail, h, n = run_case(name, cases[name])
        except Exception as ex:  # a crash of this checker is a failure, not an abort
            ok, detail, h, n = False, "checker crashed: %r" % ex, 0, len(cases[name]["expected"].get("message", []))
        fh += h
        ft += n
        if ok:
            passed += 1
        else:
            failed += 1
            failures.append((name, detail))
        print("%-62s %-6s %s" % (name, "PASS" if ok else "FAIL", detail if (verbose or not ok) else ""))
    print("-" * 100)
    print("admission cases: %d passed, %d failed, %d total" % (passed, failed, passed + failed))
    print("message fragments (Docket's wording, informational): %d/%d matched" % (fh, ft))
    return 0 if failed == 0 and not sigbad and all(not e for _, e in oids) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
