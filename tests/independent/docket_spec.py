"""Independent building blocks for verifying Docket data, written only from
docs/FORMAT.md, docs/BUNDLE.md, docs/DOMAIN.md, docs/RETENTION.md and the
test vectors under tests/vectors/ (no Docket source was read).

Pieces: the Ed25519 signature rule (FORMAT.md §1.1), the event canonical
encoding (FORMAT.md §3 / BUNDLE.md §4.1), RFC 9162 Merkle hashing and proofs
(FORMAT.md §5, §8), C2SP signed notes, checkpoints and verifier keys
(FORMAT.md §6, §8.4-§8.6), OID minting (DOMAIN.md §2).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from dataclasses import dataclass

# ---------------------------------------------------------------------------
# Ed25519, the one signature rule (FORMAT.md §1.1)
# ---------------------------------------------------------------------------

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = (-121665 * pow(121666, P - 2, P)) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)

SMALL_ORDER_ENCODINGS = {bytes.fromhex(h) for h in (
    "0100000000000000000000000000000000000000000000000000000000000000",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
)}

# extended coordinates (X, Y, Z, T), x = X/Z, y = Y/Z, xy = T/Z
IDENTITY = (0, 1, 1, 0)


def _add(p1, p2):
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = t1 * 2 * D * t2 % P
    d = z1 * 2 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _neg(p1):
    x, y, z, t = p1
    return ((-x) % P, y, z, (-t) % P)


def _mul(k, p1):
    q = IDENTITY
    while k > 0:
        if k & 1:
            q = _add(q, p1)
        p1 = _add(p1, p1)
        k >>= 1
    return q


def _is_identity(p1):
    x, y, z, _ = p1
    return x % P == 0 and (y - z) % P == 0


def _recover_x(y, sign, strict=True):
    """RFC 8032 §5.1.3 with its failure cases; None on failure. strict=False
    is FORMAT.md §1.2's lenient decoding: the caller reduces y mod p, and
    x = 0 with the sign bit set is not a failure."""
    if y >= P:
        return None
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    if x2 == 0:
        if sign and strict:
            return None
        return 0
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P != 0:
        x = x * SQRT_M1 % P
    if (x * x - x2) % P != 0:
        return None
    if (x & 1) != sign:
        x = P - x
    return x


def decode_point(b: bytes):
    """Strict decoding: canonical y, on the curve, no negative zero."""
    if len(b) != 32:
        return None
    n = int.from_bytes(b, "little")
    sign = n >> 255
    y = n & ((1 << 255) - 1)
    x = _recover_x(y, sign)
    if x is None:
        return None
    return (x, y, 1, x * y % P)


B_POINT = decode_point(bytes.fromhex(
    "5866666666666666666666666666666666666666666666666666666666666666"))


def verify_rule(pub: bytes, msg: bytes, sig: bytes):
    """Returns None when valid, else the name of the first failing step."""
    if len(sig) != 64 or len(pub) != 32:
        return "equation"
    r_bytes, s_bytes = sig[:32], sig[32:]
    s = int.from_bytes(s_bytes, "little")
    if s >= L:
        return "non_canonical_s"
    a_pt = decode_point(pub)
    if a_pt is None:
        return "non_canonical_key"
    if pub in SMALL_ORDER_ENCODINGS:
        return "small_order_key"
    r_pt = decode_point(r_bytes)
    if r_pt is None:
        return "non_canonical_r"
    if r_bytes in SMALL_ORDER_ENCODINGS:
        return "small_order_r"
    k = int.from_bytes(hashlib.sha512(r_bytes + pub + msg).digest(), "little") % L
    v = _add(_add(_mul(s, B_POINT), _neg(r_pt)), _neg(_mul(k, a_pt)))
    for _ in range(3):
        v = _add(v, v)
    if not _is_identity(v):
        return "equation"
    return None


def key_is_acceptable(pub: bytes) -> bool:
    """FORMAT.md §1: a key is usable only if it passes step 2 of §1.1."""
    return decode_point(pub) is not None and pub not in SMALL_ORDER_ENCODINGS


# ---------------------------------------------------------------------------
# Events (FORMAT.md §2, §3; BUNDLE.md §4.1)
# ---------------------------------------------------------------------------

MAX_PAYLOAD = 262_144
KIND_RE = re.compile(rb"\A[a-z][a-z0-9._-]{0,63}\Z")


def signing_message(kind: bytes, payload: bytes) -> bytes:
    return b"docket/v1/" + kind + b"\x00" + hashlib.sha256(payload).digest()


def statement_digest(author: bytes, kind: bytes, payload: bytes) -> bytes:
    return hashlib.sha256(b"docket/v1/statement\x00" + author +
                          signing_message(kind, payload)).digest()


@dataclass
class Event:
    raw: bytes
    seq: int
    recorded_at_ms: int
    prev_hash: bytes
    kind: str
    author: bytes
    payload: bytes
    signature: bytes

    @property
    def leaf_hash(self) -> bytes:
        return leaf_hash(self.raw)

    @property
    def message(self) -> bytes:
        return signing_message(self.kind.encode(), self.payload)


class DecodeError(Exception):
    def __init__(self, msg, seq=None):
        super().__init__(msg)
        self.seq = seq


def decode_event(b: bytes) -> Event:
    seq = None
    if len(b) >= 9:
        seq = struct.unpack(">Q", b[1:9])[0]
    if len(b) < 57:
        raise DecodeError("truncated header", seq)
    if b[0] != 1:
        raise DecodeError(f"format byte {b[0]} != 1", seq)
    seq, t = struct.unpack(">QQ", b[1:17])
    prev = b[17:49]
    (klen,) = struct.unpack(">Q", b[49:57])
    if klen < 1 or klen > 64:
        raise DecodeError(f"kind length {klen} outside 1..=64", seq)
    off = 57
    if len(b) < off + klen + 32 + 8:
        raise DecodeError("truncated kind/author", seq)
    kind = b[off:off + klen]
    if not KIND_RE.match(kind):
        raise DecodeError(f"kind {kind!r} outside [a-z][a-z0-9._-]*", seq)
    off += klen
    author = b[off:off + 32]
    off += 32
    (plen,) = struct.unpack(">Q", b[off:off + 8])
    off += 8
    if plen > MAX_PAYLOAD:
        raise DecodeError(f"payload length {plen} over {MAX_PAYLOAD}", seq)
    if len(b) < off + plen + 64:
        raise DecodeError("truncated payload/signature", seq)
    payload = b[off:off + plen]
    off += plen
    sig = b[off:off + 64]
    off += 64
    if off != len(b):
        raise DecodeError(f"{len(b) - off} trailing bytes", seq)
    return Event(b, seq, t, prev, kind.decode("ascii"), author, payload, sig)


def encode_event(seq, t, prev, kind: bytes, author, payload, sig) -> bytes:
    return (b"\x01" + struct.pack(">QQ", seq, t) + prev + struct.pack(">Q", len(kind)) +
            kind + author + struct.pack(">Q", len(payload)) + payload + sig)


# ---------------------------------------------------------------------------
# RFC 9162 Merkle tree (FORMAT.md §5, §8)
# ---------------------------------------------------------------------------

def sha256(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def leaf_hash(data: bytes) -> bytes:
    return sha256(b"\x00" + data)


def node_hash(l: bytes, r: bytes) -> bytes:
    return sha256(b"\x01" + l + r)


def mth_from_leaf_hashes(hs):
    n = len(hs)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return hs[0]
    k = 1
    while k * 2 < n:
        k *= 2
    return node_hash(mth_from_leaf_hashes(hs[:k]), mth_from_leaf_hashes(hs[k:]))


def verify_inclusion(index, size, leaf, path, root):
    """FORMAT.md §8.2 / RFC 9162 §2.1.3.2. Returns None or an error name."""
    if index >= size:
        return "IndexOutOfRange"
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return "ProofTooLong"
        if (fn & 1) or fn == sn:
            r = node_hash(p, r)
            if not (fn & 1):
                while not (fn & 1) and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        return "ProofTooShort"
    if r != root:
        return "RootMismatch"
    return None


def verify_consistency(first, second, first_hash, second_hash, path):
    """FORMAT.md §8.3 / RFC 9162 §2.1.4.2. Returns None or an error name."""
    if first > second:
        return "SizeOrder"
    if first == second:
        if path:
            return "ProofTooLong"
        return None if first_hash == second_hash else "RootMismatch"
    if first == 0:
        if path:
            return "ProofTooLong"
        return None if first_hash == sha256(b"") else "OldRootMismatch"
    if not path:
        return "ProofTooShort"
    path = list(path)
    if first & (first - 1) == 0:
        path = [first_hash] + path
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return "ProofTooLong"
        if (fn & 1) or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not (fn & 1):
                while not (fn & 1) and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        return "ProofTooShort"
    if fr != first_hash:
        return "OldRootMismatch"
    if sr != second_hash:
        return "NewRootMismatch"
    return None


# ---------------------------------------------------------------------------
# Signed notes, checkpoints, verifier keys (FORMAT.md §6, §8.4-§8.6)
# ---------------------------------------------------------------------------

class NoteError(Exception):
    pass


def b64_strict(s: str) -> bytes:
    """Standard alphabet, padded, canonical (re-encodes to the same text)."""
    if not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", s) or len(s) % 4 != 0:
        raise ValueError("not standard padded base64")
    b = base64.b64decode(s, validate=True)
    if base64.b64encode(b).decode() != s:
        raise ValueError("non-canonical base64")
    return b


def key_id(name: str, pub: bytes) -> bytes:
    return sha256(name.encode() + b"\x0a\x01" + pub)[:4]


def valid_key_name(name: str) -> bool:
    return bool(name) and "+" not in name and not any(c.isspace() for c in name)


@dataclass
class VerifierKey:
    name: str
    key_id: bytes
    public_key: bytes
    text: str


def parse_vkey(text: str) -> VerifierKey:
    """A verifier key exactly as Docket writes it (FORMAT.md §1.3): §8.6's
    parser, then one line, the canonical spelling (lower-case key ID) and a
    strictly acceptable point (§1.1)."""
    t = text
    if t.endswith("\n"):
        t = t[:-1]
    if "\n" in t or "\r" in t:
        raise NoteError("verifier key is not one line")
    vk, canon = parse_vkey_fmt(t)
    if canon != t:
        raise NoteError("verifier key is not in the canonical form (lower-case key ID)")
    if not valid_key_name(vk.name):
        raise NoteError("invalid key name")
    if not key_is_acceptable(vk.public_key):
        raise NoteError("public key is not a valid (canonical, not small-order) Ed25519 point")
    return VerifierKey(vk.name, vk.key_id, vk.public_key, t)


EM_DASH = "\u2014"


@dataclass
class Note:
    text: str
    body: str
    sig_lines: list  # (name, keyid bytes, sig bytes)


def open_note_unverified(data: bytes) -> Note:
    if len(data) > 1 << 20:
        raise NoteError("note over 1 MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError("note is not UTF-8")
    for ch in text:
        if (ord(ch) < 0x20 and ch != "\n") or ord(ch) == 0x7F:
            raise NoteError("control character in note")
    if not text.endswith("\n"):
        raise NoteError("note does not end in a newline")
    idx = text.rfind("\n\n")
    if idx < 0:
        raise NoteError("no blank line before the signatures")
    body = text[:idx + 1]
    sigs = text[idx + 2:]
    if not sigs:
        raise NoteError("no signature line")
    lines = sigs[:-1].split("\n")
    if len(lines) > 100:
        raise NoteError("more than 100 signatures")
    out = []
    for ln in lines:
        if not ln.startswith(EM_DASH + " "):
            raise NoteError(f"malformed signature line {ln!r}")
        rest = ln[2:]
        sp = rest.split(" ")
        if len(sp) != 2:
            raise NoteError(f"malformed signature line {ln!r}")
        name, b64 = sp
        if not valid_key_name(name):
            raise NoteError(f"malformed key name in {ln!r}")
        try:
            blob = b64_strict(b64)
        except (ValueError, binascii.Error):
            raise NoteError(f"malformed signature base64 in {ln!r}")
        if len(blob) < 5:
            raise NoteError("signature too short")
        out.append((name, blob[:4], blob[4:]))
    return Note(text, body, out)


def note_signature_status(note: Note, vk: VerifierKey):
    """None when at least one line from vk verifies and none from vk fails."""
    mine = [(n, k, s) for (n, k, s) in note.sig_lines if n == vk.name and k == vk.key_id]
    if not mine:
        return f"no signature line from {vk.name}+{vk.key_id.hex()}"
    for _, _, s in mine:
        if len(s) != 64:
            return "signature line from the key is not 64 bytes"
        err = verify_rule(vk.public_key, note.body.encode(), s)
        if err:
            return f"signature does not verify ({err})"
    return None


@dataclass
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: list


def parse_checkpoint_body(body: str) -> Checkpoint:
    for ch in body:
        if ord(ch) < 0x20 and ch != "\n":  # FORMAT.md §8.4: C0 only; DEL and C1 pass
            raise NoteError("control character")
    if not body.endswith("\n"):
        raise NoteError("body does not end in a newline")
    lines = body[:-1].split("\n")
    if len(lines) < 3:
        raise NoteError("fewer than three lines")
    if any(ln == "" for ln in lines):
        raise NoteError("empty line")
    origin, size_s, root_s = lines[:3]
    if not re.fullmatch(r"0|[1-9][0-9]*", size_s):
        raise NoteError("tree size is not canonical decimal")
    size = int(size_s)
    if size >= 2**64:
        raise NoteError("tree size does not fit u64")
    if len(root_s) != 44:
        raise NoteError("root hash is not 44 base64 characters")
    try:
        root = b64_strict(root_s)
    except (ValueError, binascii.Error) as e:
        raise NoteError(f"root hash: {e}")
    if len(root) != 32:
        raise NoteError("root hash is not 32 bytes")
    return Checkpoint(origin, size, root, lines[3:])


# ---------------------------------------------------------------------------
# OIDs (DOMAIN.md §2)
# ---------------------------------------------------------------------------

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(ts_ms: int, random10: bytes) -> str:
    n = ((ts_ms % (1 << 48)) << 80) | int.from_bytes(random10, "big")
    out = []
    for _ in range(26):
        out.append(CROCKFORD[n & 31])
        n >>= 5
    return "".join(reversed(out))


def oid_for(author: bytes, kind: bytes, payload: bytes, recorded_at_ms: int) -> str:
    dig = statement_digest(author, kind, payload)
    rnd = sha256(b"docket/v1/oid\x00" + dig)[:10]
    return ulid(recorded_at_ms, rnd)


def imported_oid(author: bytes, kind: bytes, payload: bytes, recorded_at_ms: int, i: int) -> str:
    dig = statement_digest(author, kind, payload)
    inner = sha256(b"docket/v1/imported-evidence\x00" + dig + struct.pack(">Q", i))
    rnd = sha256(b"docket/v1/oid\x00" + inner)[:10]
    return ulid(recorded_at_ms, rnd)


# ---------------------------------------------------------------------------
# FORMAT.md §1.2: the strict rule (ledger-key signatures: checkpoints, since.note,
# DSSE attestations) -- ed25519-dalek verify_strict, cofactorless, lenient decoding
# ---------------------------------------------------------------------------

def decode_point_lenient(b: bytes):
    """FORMAT.md §1.2 step 2: y taken mod p, x = 0 with the sign bit set is
    not a failure; fails only when there is no square root."""
    if len(b) != 32:
        return None
    n = int.from_bytes(b, "little")
    sign = n >> 255
    y = (n & ((1 << 255) - 1)) % P
    x = _recover_x(y, sign, strict=False)
    if x is None:
        return None
    return (x, y, 1, x * y % P)


def encode_point(pt) -> bytes:
    x, y, z, _ = pt
    zi = pow(z, P - 2, P)
    x, y = x * zi % P, y * zi % P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _small_order(pt) -> bool:
    v = pt
    for _ in range(3):
        v = _add(v, v)
    return _is_identity(v)


def verify_strict(pub: bytes, msg: bytes, sig: bytes) -> bool:
    """FORMAT.md §1.2: True when the signature verifies under the strict rule."""
    if len(sig) != 64 or len(pub) != 32:
        return False
    r_bytes, s_bytes = sig[:32], sig[32:]
    s = int.from_bytes(s_bytes, "little")
    if s >= L:
        return False
    a_pt = decode_point_lenient(pub)
    r_pt = decode_point_lenient(r_bytes)
    if a_pt is None or r_pt is None:
        return False
    if _small_order(a_pt) or _small_order(r_pt):
        return False
    k = int.from_bytes(hashlib.sha512(r_bytes + pub + msg).digest(), "little") % L
    return encode_point(_add(_mul(s, B_POINT), _neg(_mul(k, a_pt)))) == r_bytes


# Rust char::is_whitespace (Unicode White_Space), FORMAT.md §8.5
_WHITE = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200B)}


def valid_key_name_fmt(name: str) -> bool:
    return bool(name) and "+" not in name and not any(c in _WHITE for c in name)


def parse_vkey_fmt(text: str):
    """FORMAT.md §8.6 exactly (NoteVerifier::parse): upper-case key ID accepted,
    lenient point decoding. Returns (VerifierKey, canonical_text)."""
    parts = text.split("+", 2)
    if len(parts) != 3:
        raise NoteError("MalformedVerifierKey: missing '+'")
    name, hid, b64 = parts
    if not valid_key_name_fmt(name):
        raise NoteError("InvalidKeyName")
    if not re.fullmatch(r"[0-9a-fA-F]{8}", hid):
        raise NoteError("MalformedVerifierKey: key ID is not 8 hex digits")
    try:
        raw = b64_strict(b64)
    except (ValueError, binascii.Error) as e:
        raise NoteError(f"MalformedVerifierKey: {e}")
    if len(raw) < 1:
        raise NoteError("MalformedVerifierKey: empty key")
    if raw[0] != 0x01:
        raise NoteError("UnsupportedKeyType")
    if len(raw) != 33:
        raise NoteError("MalformedVerifierKey: not 32 key bytes")
    pub = raw[1:]
    if decode_point_lenient(pub) is None:
        raise NoteError("InvalidPublicKey")
    if key_id(name, pub).hex() != hid.lower():
        raise NoteError("VerifierKeyIdMismatch")
    canon = f"{name}+{hid.lower()}+{b64}"
    return VerifierKey(name, bytes.fromhex(hid.lower()), pub, canon), canon


def open_note_fmt(data: bytes, vk):
    """FORMAT.md §8.5 "Opening" a note with the strict rule. Returns
    (error, kind) where kind is None (opened), "malformed" or
    "checkpoint_signature" (BUNDLE.md §3's classification), and the body text
    (None when the note is not UTF-8). vk None: no usable key."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8", "malformed", None
    if len(data) > 1 << 20:
        return "TooLarge", "malformed", text
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        return "ControlCharacter", "malformed", text
    if not text.endswith("\n"):
        return "MissingTrailingNewline", "malformed", text
    idx = text.rfind("\n\n")
    if idx < 0 or idx + 2 >= len(text):
        return "MissingSignatures", "checkpoint_signature", text
    lines = text[idx + 2:-1].split("\n")
    if len(lines) > 100:
        return "TooManySignatures", "malformed", text
    parsed = []
    for ln in lines:
        if not ln.startswith(EM_DASH + " "):
            return "MalformedSignatureLine", "malformed", text
        rest = ln[2:]
        sp = rest.find(" ")
        if sp < 0:
            return "MalformedSignatureLine", "malformed", text
        name, b64 = rest[:sp], rest[sp + 1:]
        if not valid_key_name_fmt(name):
            return "MalformedSignatureLine", "malformed", text
        try:
            blob = b64_strict(b64)
        except (ValueError, binascii.Error):
            return "MalformedSignatureLine", "malformed", text
        if len(blob) < 5:
            return "MalformedSignatureLine", "malformed", text
        parsed.append((name, blob))
    if vk is None:
        return "no usable verifier key", "checkpoint_signature", text
    body = text[:idx + 1]
    matched = False
    for name, blob in parsed:
        if name != vk.name or blob[:4] != vk.key_id:
            continue
        matched = True
        if len(blob) != 68 or not verify_strict(vk.public_key, body.encode("utf-8"), blob[4:]):
            return "InvalidSignature", "checkpoint_signature", text
    if not matched:
        return "NoMatchingSignature", "checkpoint_signature", text
    try:
        parse_checkpoint_body(body)
    except NoteError as e:
        return f"body: {e}", "malformed", text
    return None, None, text


def unverified_body(text: str) -> str:
    """BUNDLE.md §3: "the text before the last empty line"."""
    idx = text.rfind("\n\n")
    return text[:idx + 1] if idx >= 0 else text
