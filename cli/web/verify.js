// Docket explorer: what the browser verifies itself, with WebCrypto
// (SHA-256 and Ed25519) and nothing from the server taken on trust.
//
// * Verifier keys and C2SP signed notes (docs/FORMAT.md §8.4-8.6).
// * Canonical event bytes (§3), the author signing message (§2).
// * RFC 9162 leaf/node hashing, inclusion and consistency proofs (§8.1-8.3).
// * ustar parsing and the export-bundle audit (docs/BUNDLE.md).
//
// Ed25519 here is the browser's (Chromium: BoringSSL, RFC 8032 with
// canonical S, cofactorless equation). It gives the answer of the ledger's
// rule (§1.1) for every honestly produced signature; the two differ only on
// crafted signatures with a torsion component (§1.1's mixed-order vectors),
// which the browser refuses and the ledger accepts, and on keys of small
// order, which the ledger refuses at registration.

export const enc = new TextEncoder();

// ------------------------------------------------------------ bytes

export function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function unhex(s) {
  if (typeof s !== "string" || s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) {
    throw new Error(`not hex: ${String(s).slice(0, 80)}`);
  }
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function b64encode(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

// Standard padded base64; refuses non-canonical encodings.
export function b64decode(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) {
    throw new Error("not standard padded base64");
  }
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  if (b64encode(out) !== s) throw new Error("non-canonical base64");
  return out;
}

export function concat(...parts) {
  const arrays = parts.map((p) => (p instanceof Uint8Array ? p : Uint8Array.from(p)));
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let o = 0;
  for (const a of arrays) {
    out.set(a, o);
    o += a.length;
  }
  return out;
}

export function equalBytes(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

// ------------------------------------------------------------ hashing

export function webCryptoAvailable() {
  return !!(globalThis.crypto && globalThis.crypto.subtle);
}

function needWebCrypto() {
  if (!webCryptoAvailable()) {
    throw new Error(
      "WebCrypto is not available: browsers offer it only to https:// pages and to http://localhost or 127.0.0.1",
    );
  }
}

export async function sha256(bytes) {
  needWebCrypto();
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

export const leafHash = (eventBytes) => sha256(concat([0], eventBytes));
export const nodeHash = (left, right) => sha256(concat([1], left, right));

// ------------------------------------------------------------ Ed25519

const keyCache = new Map();

// Plain Ed25519 verification of `sig` over `msg` by the 32-byte `pub`.
// Resolves to true or false; rejects only when the browser has no Ed25519.
export async function ed25519Verify(pub, sig, msg) {
  needWebCrypto();
  if (pub.length !== 32 || sig.length !== 64) return false;
  const id = hex(pub);
  let key = keyCache.get(id);
  if (!key) {
    try {
      key = await crypto.subtle.importKey("raw", pub, { name: "Ed25519" }, false, ["verify"]);
    } catch (e) {
      if (e && e.name === "NotSupportedError") {
        throw new Error("this browser's WebCrypto has no Ed25519");
      }
      return false; // not a valid public key
    }
    keyCache.set(id, key);
  }
  try {
    return await crypto.subtle.verify({ name: "Ed25519" }, key, sig, msg);
  } catch (e) {
    if (e && e.name === "NotSupportedError") throw new Error("this browser's WebCrypto has no Ed25519");
    return false;
  }
}

// ------------------------------------------------------------ verifier keys and notes

export async function keyId(name, pub) {
  return (await sha256(concat(enc.encode(name), [0x0a, 0x01], pub))).slice(0, 4);
}

// `<name>+<hex8 key ID>+<base64(0x01 || public key)>` (FORMAT.md §8.6).
export async function parseVerifierKey(text) {
  const t = String(text || "").trim();
  // The name and the key ID hold no "+"; the base64 key may.
  const a = t.indexOf("+");
  const b = a < 0 ? -1 : t.indexOf("+", a + 1);
  if (a < 0 || b < 0) throw new Error("a verifier key is <name>+<key ID>+<base64 key>");
  const [name, idHex, keyB64] = [t.slice(0, a), t.slice(a + 1, b), t.slice(b + 1)];
  if (!name || /\s/u.test(name)) throw new Error("bad key name");
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new Error("the key ID is not 8 lowercase hex digits");
  const raw = b64decode(keyB64);
  if (raw.length !== 33 || raw[0] !== 0x01) throw new Error("not an Ed25519 verifier key (type 0x01, 32 bytes)");
  const pub = raw.slice(1);
  const id = await keyId(name, pub);
  if (hex(id) !== idHex) throw new Error(`the key ID ${idHex} does not match the key (computed ${hex(id)})`);
  return { name, keyId: id, publicKey: pub, text: t };
}

// Parses a checkpoint body (FORMAT.md §8.4).
export function parseCheckpointBody(body) {
  if (!body.endsWith("\n")) throw new Error("checkpoint body does not end with a newline");
  const lines = body.slice(0, -1).split("\n");
  if (lines.length < 3) throw new Error("checkpoint body has fewer than three lines");
  if (lines.some((l) => l === "")) throw new Error("checkpoint body has an empty line");
  const [origin, sizeText, rootText] = lines;
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText)) throw new Error(`bad tree size ${JSON.stringify(sizeText)}`);
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) throw new Error("tree size too large for this viewer");
  if (rootText.length !== 44) throw new Error("the root is not 44 characters of base64");
  const root = b64decode(rootText);
  if (root.length !== 32) throw new Error("the root is not 32 bytes");
  return { origin, size, root, extensions: lines.slice(3) };
}

// Opens a signed note with a trusted verifier key (FORMAT.md §8.5): at
// least one signature line by that key, and every such line verifies.
export async function openNote(text, vkey) {
  if (typeof text !== "string") throw new Error("no checkpoint note");
  if (enc.encode(text).length > 1 << 20) throw new Error("note over 1 MiB");
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f\u007f]/.test(text)) throw new Error("note has control characters");
  if (!text.endsWith("\n")) throw new Error("note does not end with a newline");
  const split = text.lastIndexOf("\n\n");
  if (split < 0) throw new Error("note has no signature block");
  const body = text.slice(0, split + 1);
  const sigLines = text.slice(split + 2, -1).split("\n");
  if (sigLines.length === 0 || sigLines[0] === "") throw new Error("note has no signature line");
  if (sigLines.length > 100) throw new Error("note has over 100 signatures");
  let good = 0;
  for (const line of sigLines) {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/u.exec(line);
    if (!m) throw new Error(`malformed signature line ${JSON.stringify(line.slice(0, 80))}`);
    const blob = b64decode(m[2]);
    if (blob.length < 5) throw new Error("signature line too short");
    if (m[1] !== vkey.name || !equalBytes(blob.slice(0, 4), vkey.keyId)) continue;
    if (blob.length !== 68) throw new Error("an Ed25519 signature line must carry 68 bytes");
    const ok = await ed25519Verify(vkey.publicKey, blob.slice(4), enc.encode(body));
    if (!ok) throw new Error(`the signature by ${vkey.name} does not verify`);
    good++;
  }
  if (good === 0) {
    throw new Error(`no signature by the pinned key ${vkey.name}+${hex(vkey.keyId)}`);
  }
  const cp = parseCheckpointBody(body);
  return { ...cp, body };
}

// ------------------------------------------------------------ events

const MAX_PAYLOAD = 262144;

function u64(view, at) {
  const v = view.getBigUint64(at, false);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error("integer too large for this viewer");
  return Number(v);
}

// Decodes canonical event bytes (FORMAT.md §3), refusing anything that is
// not the one canonical encoding.
export function decodeEvent(bytes) {
  if (bytes.length < 161) throw new Error(`event of ${bytes.length} bytes is truncated`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const format = bytes[0];
  if (format !== 1) throw new Error(`unknown event format ${format}`);
  const seq = u64(view, 1);
  const recordedAtMs = u64(view, 9);
  const prevHash = bytes.slice(17, 49);
  const kindLen = u64(view, 49);
  if (kindLen < 1 || kindLen > 64) throw new Error(`kind length ${kindLen}`);
  if (bytes.length < 161 + kindLen) throw new Error("event is truncated");
  const kind = new TextDecoder("utf-8", { fatal: true }).decode(bytes.slice(57, 57 + kindLen));
  if (!/^[a-z][a-z0-9._-]*$/.test(kind)) throw new Error(`bad kind ${JSON.stringify(kind)}`);
  const author = bytes.slice(57 + kindLen, 89 + kindLen);
  const payloadLen = u64(view, 89 + kindLen);
  if (payloadLen > MAX_PAYLOAD) throw new Error("payload over 262,144 bytes");
  const total = 161 + kindLen + payloadLen;
  if (bytes.length < total) throw new Error("event is truncated");
  if (bytes.length > total) throw new Error(`${bytes.length - total} trailing bytes`);
  const payload = bytes.slice(97 + kindLen, 97 + kindLen + payloadLen);
  const signature = bytes.slice(97 + kindLen + payloadLen, total);
  return { format, seq, recordedAtMs, prevHash, kind, author, payload, signature };
}

export async function signingMessage(kind, payload) {
  return concat(enc.encode("docket/v1/"), enc.encode(kind), [0], await sha256(payload));
}

export async function verifyAuthorSignature(ev) {
  return ed25519Verify(ev.author, ev.signature, await signingMessage(ev.kind, ev.payload));
}

// ------------------------------------------------------------ RFC 9162 proofs

export class ProofError extends Error {}

// RFC 9162 §2.1.3.2 (FORMAT.md §8.2). Throws ProofError naming the failure.
export async function verifyInclusion(index, size, leaf, path, root) {
  let fn = BigInt(index);
  let sn = BigInt(size) - 1n;
  if (BigInt(index) >= BigInt(size)) {
    throw new ProofError(`IndexOutOfRange: leaf ${index} is not below tree size ${size}`);
  }
  let r = leaf;
  for (const p of path) {
    if (p.length !== 32) throw new ProofError("a proof hash is not 32 bytes");
    if (sn === 0n) throw new ProofError("ProofTooLong: the proof has more hashes than the tree has levels");
    if ((fn & 1n) === 1n || fn === sn) {
      r = await nodeHash(p, r);
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) throw new ProofError("ProofTooShort: the proof ends below the root");
  if (!equalBytes(r, root)) throw new ProofError("RootMismatch: the proof leads to a different root");
  return true;
}

// RFC 9162 §2.1.4.2 with Docket's decisions outside 0 < first < second
// (FORMAT.md §8.3).
export async function verifyConsistency(first, second, firstHash, secondHash, path) {
  if (first > second) throw new ProofError("SizeOrder: the old size is above the new size");
  if (first === second) {
    if (path.length !== 0) throw new ProofError("ProofTooLong: equal sizes need an empty proof");
    if (!equalBytes(firstHash, secondHash)) throw new ProofError("RootMismatch: equal sizes, different roots");
    return true;
  }
  if (first === 0) {
    if (path.length !== 0) throw new ProofError("ProofTooLong: size 0 needs an empty proof");
    if (!equalBytes(firstHash, await sha256(new Uint8Array(0)))) {
      throw new ProofError("OldRootMismatch: the empty tree's root is SHA-256 of nothing");
    }
    return true;
  }
  if (path.length === 0) throw new ProofError("ProofTooShort: empty consistency proof");
  let p = path;
  const f = BigInt(first);
  if ((f & (f - 1n)) === 0n) p = [firstHash, ...path];
  let fn = f - 1n;
  let sn = BigInt(second) - 1n;
  while ((fn & 1n) === 1n) {
    fn >>= 1n;
    sn >>= 1n;
  }
  let fr = p[0];
  let sr = p[0];
  for (const c of p.slice(1)) {
    if (sn === 0n) throw new ProofError("ProofTooLong");
    if ((fn & 1n) === 1n || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) throw new ProofError("ProofTooShort");
  if (!equalBytes(fr, firstHash)) throw new ProofError("OldRootMismatch");
  if (!equalBytes(sr, secondHash)) throw new ProofError("NewRootMismatch");
  return true;
}

// RFC 9162 MTH over leaf hashes.
export async function rootFromLeaves(leaves) {
  async function mth(lo, hi) {
    const n = hi - lo;
    if (n === 0) return sha256(new Uint8Array(0));
    if (n === 1) return leaves[lo];
    let k = 1;
    while (k * 2 < n) k *= 2;
    return nodeHash(await mth(lo, lo + k), await mth(lo + k, hi));
  }
  return mth(0, leaves.length);
}

// ------------------------------------------------------------ one event, end to end

// Verifies an event page's claims: the bytes decode, the author signature
// holds, the checkpoint is signed by the pinned key, and the inclusion proof
// leads from the recomputed leaf hash to the signed root. Returns the steps
// (each {name, ok, detail}); `ok` overall only when every step passed.
export async function verifyEventInclusion({ seq, eventB64, proof, vkeyText }) {
  const steps = [];
  const step = (name, ok, detail) => {
    steps.push({ name, ok, detail });
    return ok;
  };
  const fail = (why) => ({ ok: false, why, steps });
  let vkey;
  try {
    vkey = await parseVerifierKey(vkeyText);
    step("pinned key", true, `${vkey.name}+${hex(vkey.keyId)}`);
  } catch (e) {
    step("pinned key", false, e.message);
    return fail(`no usable pinned ledger key (${e.message})`);
  }
  let bytes;
  let ev;
  let leaf;
  try {
    bytes = b64decode(eventB64);
    ev = decodeEvent(bytes);
    leaf = await leafHash(bytes);
    step("event bytes", true, `${bytes.length} canonical bytes, leaf hash ${hex(leaf)}`);
  } catch (e) {
    step("event bytes", false, e.message);
    return fail(`the event bytes do not decode: ${e.message}`);
  }
  if (ev.seq !== seq) {
    step("sequence number", false, `the bytes say ${ev.seq}`);
    return fail(`the event bytes are event ${ev.seq}, not ${seq}`);
  }
  try {
    const ok = await verifyAuthorSignature(ev);
    if (!step("author signature", ok, ok ? `Ed25519 by ${hex(ev.author)}` : "does not verify")) {
      return fail("the author signature does not verify");
    }
  } catch (e) {
    step("author signature", false, e.message);
    return fail(e.message);
  }
  let cp;
  try {
    cp = await openNote(proof.checkpoint, vkey);
    step("checkpoint signature", true, `tree size ${cp.size}, signed by ${vkey.name}`);
  } catch (e) {
    step("checkpoint signature", false, e.message);
    return fail(`checkpoint: ${e.message}`);
  }
  if (cp.origin !== vkey.name) {
    step("checkpoint origin", false, `${cp.origin} is not ${vkey.name}`);
    return fail(`the checkpoint's origin ${cp.origin} is not the pinned log ${vkey.name}`);
  }
  if (proof.tree_size !== cp.size || proof.leaf_index !== seq) {
    step("proof shape", false, `proof for leaf ${proof.leaf_index} in ${proof.tree_size}`);
    return fail("the proof is not for this event in the signed tree");
  }
  let path;
  try {
    path = (proof.proof || []).map(unhex);
    await verifyInclusion(seq, cp.size, leaf, path, cp.root);
    step("inclusion proof", true, `${path.length} hashes to the signed root of ${cp.size} leaves`);
  } catch (e) {
    step("inclusion proof", false, e.message);
    return fail(`inclusion proof: ${e.message}`);
  }
  return { ok: true, why: "", steps, event: ev, checkpoint: cp };
}

// ------------------------------------------------------------ tar

function cstr(bytes, from, len) {
  let end = from;
  while (end < from + len && bytes[end] !== 0) end++;
  return new TextDecoder().decode(bytes.slice(from, end));
}

function octal(bytes, from, len) {
  const s = cstr(bytes, from, len).trim();
  if (!/^[0-7]*$/.test(s)) throw new Error(`bad octal field ${JSON.stringify(s)}`);
  return s === "" ? 0 : parseInt(s, 8);
}

// Path rule of BUNDLE.md §1.
export function badBundlePath(p) {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(p)) return "a control character or backslash";
  if (p.startsWith("/") || /^[A-Za-z]:/.test(p)) return "an absolute path";
  if (p.includes("://") || p.startsWith("data:") || p.startsWith("file:")) return "a URL";
  if (p.split("/").some((c) => c === "" || c === "." || c === "..")) return "an empty, . or .. component";
  return null;
}

// Parses a ustar (or GNU/pax long-name) archive. Returns the regular files
// by path and the problems found (links and special files are refused).
export function parseTar(buf) {
  const bytes = buf instanceof Uint8Array ? buf : new Uint8Array(buf);
  const files = new Map();
  const problems = [];
  let off = 0;
  let longName = null;
  while (off + 512 <= bytes.length) {
    const h = bytes.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i];
    const stated = octal(h, 148, 8);
    if (sum !== stated) {
      problems.push({ kind: "malformed", file: "", detail: `tar header checksum mismatch at byte ${off}` });
      break;
    }
    const size = octal(h, 124, 12);
    const type = String.fromCharCode(h[156] || 48);
    const magic = cstr(h, 257, 6);
    let name = cstr(h, 0, 100);
    const prefix = magic === "ustar" ? cstr(h, 345, 155) : "";
    if (prefix) name = `${prefix}/${name}`;
    const dataStart = off + 512;
    const dataEnd = dataStart + size;
    if (dataEnd > bytes.length) {
      problems.push({ kind: "malformed", file: name, detail: "tar entry runs past the end of the file" });
      break;
    }
    const data = bytes.slice(dataStart, dataEnd);
    off = dataStart + Math.ceil(size / 512) * 512;
    if (type === "L") {
      longName = cstr(data, 0, data.length);
      continue;
    }
    if (type === "x") {
      const text = new TextDecoder().decode(data);
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(text);
      if (m) longName = m[1];
      continue;
    }
    if (type === "g") continue;
    if (longName !== null) {
      name = longName;
      longName = null;
    }
    if (type === "5") continue;
    if (type !== "0" && type !== "7") {
      problems.push({
        kind: "external_ref",
        file: name,
        detail: `a ${type === "1" ? "hard link" : type === "2" ? "symbolic link" : "special file"} inside the bundle`,
      });
      continue;
    }
    const bad = badBundlePath(name);
    if (bad) {
      problems.push({ kind: "external_ref", file: name, detail: `path has ${bad}` });
      continue;
    }
    files.set(name, data);
  }
  return { files, problems };
}

// ------------------------------------------------------------ bundle audit

// What the browser's bundle audit checks, and what it leaves to
// `docket audit` (shown on the page; docs/API.md, "HTTP").
export const AUDIT_CHECKS = [
  "tar container: regular files only, self-contained paths",
  "manifest: format, every listed file present with its SHA-256 and size, no unlisted file",
  "verifier key: the pinned key (else self-asserted, a warning); its name is the checkpoint origin",
  "checkpoint: Ed25519 signature by that key, body, agreement with the manifest",
  "events.bin: framing and canonical decoding of every event",
  "author signatures of every event (WebCrypto Ed25519)",
  "order, hash chain inside each run of consecutive events, non-decreasing time, seq below the tree size",
  "genesis carried, signed by the ledger key it names, naming the checkpoint origin",
  "inclusion proofs of the first and last event of every run against the signed root; the root itself when the bundle carries the whole tree",
  "since.note signature and the consistency proof, when present",
  "blobs: each file's SHA-256 is its name",
  "attestations: DSSE signature by the ledger key and the leaf hash they bind",
  "summary.json: format, tree size, event count, runs and kinds",
];
export const AUDIT_NOT_CHECKED = [
  "authority: roles, revocations, validity windows and re-admission of every event (docket audit does this)",
  "summary.json's keys, tasks and OIDs (they need the domain fold)",
  "retention rules for blobs (which content must be present or absent)",
  "the ledger's exact signature rule on crafted mixed-order signatures (the browser's Ed25519 is cofactorless)",
];

function parseJson(bytes, file, finding) {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    finding("malformed", file, null, `does not parse as JSON: ${e.message}`);
    return null;
  }
}

// Audits a bundle's files (Map path → bytes) in the browser. `pinnedVkey`
// is the verifier key text to trust (or null: the bundle's own, reported as
// self-asserted). Resolves to {accepted, findings, info}.
export async function auditBundle(files, tarProblems, pinnedVkey) {
  const findings = [];
  const finding = (kind, file, seq, detail, severity = "error") =>
    findings.push({ kind, severity, file, seq, detail });
  const info = {};
  for (const p of tarProblems || []) finding(p.kind, p.file, null, p.detail);

  // 1. Manifest.
  const manifestBytes = files.get("manifest.json");
  let manifest = null;
  if (!manifestBytes) finding("missing_file", "manifest.json", null, "no manifest.json");
  else manifest = parseJson(manifestBytes, "manifest.json", finding);
  if (manifest) {
    if (manifest.format !== "docket.bundle/1") {
      finding("unsupported_format", "manifest.json", null, `format ${JSON.stringify(manifest.format)}`);
    }
    const listed = manifest.files && typeof manifest.files === "object" ? manifest.files : {};
    for (const [path, meta] of Object.entries(listed)) {
      const bad = badBundlePath(path);
      if (bad) {
        finding("external_ref", path, null, `manifest path has ${bad}`);
        continue;
      }
      const content = files.get(path);
      if (!content) {
        finding("missing_file", path, null, "listed in the manifest, absent");
        continue;
      }
      const digest = hex(await sha256(content));
      if (digest !== meta.sha256 || content.length !== meta.size) {
        finding("digest", path, null, `SHA-256 ${digest} (${content.length} bytes), the manifest says ${meta.sha256} (${meta.size} bytes)`);
      }
    }
    for (const path of files.keys()) {
      if (path !== "manifest.json" && !(path in listed)) finding("unlisted_file", path, null, "not in the manifest");
    }
    info.scope = manifest.scope;
  }

  // 2. Verifier key.
  let vkey = null;
  const bundleVkeyText = files.get("verifier.vkey")
    ? new TextDecoder().decode(files.get("verifier.vkey")).trim()
    : null;
  if (!bundleVkeyText) finding("missing_file", "verifier.vkey", null, "no verifier.vkey");
  try {
    if (pinnedVkey) {
      vkey = await parseVerifierKey(pinnedVkey);
      info.key = `pinned ${vkey.name}+${hex(vkey.keyId)}`;
      if (bundleVkeyText && bundleVkeyText !== vkey.text) {
        finding("key_mismatch", "verifier.vkey", null, `the bundle's key ${bundleVkeyText} is not the pinned key ${vkey.text}`);
      }
    } else if (bundleVkeyText) {
      vkey = await parseVerifierKey(bundleVkeyText);
      info.key = `self-asserted ${vkey.name}+${hex(vkey.keyId)}`;
      finding("self_asserted_key", "verifier.vkey", null, "no pinned key: the bundle's own key was used", "warning");
    }
  } catch (e) {
    finding("key_mismatch", "verifier.vkey", null, e.message);
  }

  // 3. Checkpoint.
  let cp = null;
  const noteBytes = files.get("checkpoint.note");
  if (!noteBytes) finding("missing_file", "checkpoint.note", null, "no checkpoint.note");
  else if (vkey) {
    const note = new TextDecoder().decode(noteBytes);
    try {
      cp = await openNote(note, vkey);
    } catch (e) {
      finding("checkpoint_signature", "checkpoint.note", null, e.message);
      try {
        const split = note.lastIndexOf("\n\n");
        cp = parseCheckpointBody(note.slice(0, split + 1)); // unverified, to report more
      } catch (_) {
        cp = null;
      }
    }
    if (cp) {
      info.tree_size = cp.size;
      info.root = hex(cp.root);
      info.origin = cp.origin;
      if (cp.origin !== vkey.name) finding("key_mismatch", "checkpoint.note", null, `origin ${cp.origin} is not the key name ${vkey.name}`);
      if (manifest && (manifest.origin !== cp.origin || manifest.tree_size !== cp.size)) {
        finding("inconsistent", "manifest.json", null, "origin or tree_size differs from the checkpoint");
      }
    }
  }

  // 4. Events.
  const events = [];
  const eventsBin = files.get("events.bin");
  if (!eventsBin) finding("missing_file", "events.bin", null, "no events.bin");
  else {
    const view = new DataView(eventsBin.buffer, eventsBin.byteOffset, eventsBin.byteLength);
    let off = 0;
    while (off < eventsBin.length) {
      if (off + 4 > eventsBin.length) {
        finding("malformed", "events.bin", null, `a record length runs past the end at byte ${off}`);
        break;
      }
      const len = view.getUint32(off, false);
      if (len < 1 || len > 262369 || off + 4 + len > eventsBin.length) {
        finding("malformed", "events.bin", null, `record at byte ${off}: length ${len} out of bounds`);
        break;
      }
      const bytes = eventsBin.slice(off + 4, off + 4 + len);
      off += 4 + len;
      try {
        const ev = decodeEvent(bytes);
        ev.bytes = bytes;
        ev.leaf = await leafHash(bytes);
        events.push(ev);
      } catch (e) {
        finding("malformed", "events.bin", null, `record at byte ${off - len - 4}: ${e.message}`);
        break;
      }
    }
  }
  info.events = events.length;
  for (const ev of events) {
    if (!(await verifyAuthorSignature(ev))) finding("signature", "events.bin", ev.seq, "the author signature does not verify");
  }

  // 5. Order, chain, time.
  const runs = [];
  let prev = null;
  for (const ev of events) {
    if (prev && ev.seq <= prev.seq) finding("order", "events.bin", ev.seq, `after ${prev.seq}`);
    if (prev && ev.recordedAtMs < prev.recordedAtMs) finding("time", "events.bin", ev.seq, "recorded before the previous event");
    if (ev.seq === 0 && !ev.prevHash.every((b) => b === 0)) finding("chain", "events.bin", 0, "genesis prev_hash is not zero");
    if (prev && ev.seq === prev.seq + 1) {
      if (!equalBytes(ev.prevHash, prev.leaf)) finding("chain", "events.bin", ev.seq, "prev_hash is not the previous event's leaf hash");
      runs[runs.length - 1][1] = ev;
    } else {
      runs.push([ev, ev]);
    }
    if (cp && ev.seq >= cp.size) finding("inclusion", "events.bin", ev.seq, `beyond the tree size ${cp.size}`);
    prev = ev;
  }
  info.runs = runs.map(([a, b]) => [a.seq, b.seq]);

  // 6. Genesis.
  const genesis = events.find((e) => e.seq === 0);
  if (!genesis) finding("missing_context", "events.bin", 0, "the genesis event is not carried");
  else {
    let g = null;
    try {
      g = JSON.parse(new TextDecoder().decode(genesis.payload));
    } catch (_) {
      finding("malformed", "events.bin", 0, "genesis payload is not JSON");
    }
    if (g) {
      if (genesis.kind !== "ledger.genesis") finding("malformed", "events.bin", 0, `event 0 is ${genesis.kind}`);
      if (vkey && String(g.ledger_key).toLowerCase() !== hex(vkey.publicKey)) {
        finding("key_mismatch", "events.bin", 0, "genesis names another ledger key");
      }
      if (String(g.ledger_key).toLowerCase() !== hex(genesis.author)) {
        finding("key_mismatch", "events.bin", 0, "genesis is not signed by the ledger key it names");
      }
      if (cp && g.origin !== cp.origin) finding("key_mismatch", "events.bin", 0, "genesis names another origin");
    }
  }

  // 7. Proofs.
  const proofsJson = files.get("proofs.json") ? parseJson(files.get("proofs.json"), "proofs.json", finding) : null;
  if (!files.get("proofs.json")) finding("missing_file", "proofs.json", null, "no proofs.json");
  if (proofsJson && cp) {
    if (proofsJson.tree_size !== cp.size) finding("inconsistent", "proofs.json", null, "tree_size differs from the checkpoint");
    if (proofsJson.root !== hex(cp.root)) finding("root", "proofs.json", null, "root differs from the checkpoint");
    const bySeq = new Map(events.map((e) => [e.seq, e]));
    const proven = new Set();
    for (const p of proofsJson.inclusion || []) {
      const ev = bySeq.get(p.seq);
      if (!ev) {
        finding("unknown", "proofs.json", p.seq, "a proof for an event the bundle does not carry", "warning");
        continue;
      }
      if (p.leaf_hash !== hex(ev.leaf)) {
        finding("inclusion", "proofs.json", p.seq, "leaf_hash is not the hash of the carried event");
        continue;
      }
      try {
        await verifyInclusion(p.seq, cp.size, ev.leaf, (p.path || []).map(unhex), cp.root);
        proven.add(p.seq);
      } catch (e) {
        finding("inclusion", "proofs.json", p.seq, e.message);
      }
    }
    for (const [a, b] of runs) {
      for (const ev of [a, b]) {
        if (!proven.has(ev.seq)) finding("missing_proof", "proofs.json", ev.seq, "the first and last event of every run need a verified proof");
      }
    }
    if (events.length === cp.size && runs.length === 1 && runs[0][0].seq === 0) {
      const root = await rootFromLeaves(events.map((e) => e.leaf));
      const matches = equalBytes(root, cp.root);
      if (!matches) finding("root", "events.bin", null, "the root of the carried events is not the signed root");
      info.full_tree = matches ? "matches" : "DIFFERS";
    }
  }

  // 8. Consistency.
  const sinceBytes = files.get("since.note");
  if (sinceBytes && vkey && cp) {
    let since = null;
    try {
      since = await openNote(new TextDecoder().decode(sinceBytes), vkey);
    } catch (e) {
      finding("checkpoint_signature", "since.note", null, e.message);
    }
    const c = files.get("consistency.json") ? parseJson(files.get("consistency.json"), "consistency.json", finding) : null;
    if (!c) finding("missing_file", "consistency.json", null, "since.note without consistency.json");
    if (since && c) {
      try {
        if (c.old_size !== since.size || c.old_root !== hex(since.root) || c.new_size !== cp.size || c.new_root !== hex(cp.root)) {
          throw new Error("sizes or roots differ from the notes");
        }
        await verifyConsistency(since.size, cp.size, since.root, cp.root, (c.path || []).map(unhex));
        info.consistency = `${since.size} → ${cp.size}`;
      } catch (e) {
        finding("consistency", "consistency.json", null, e.message);
      }
    }
  }

  // 9. Blobs.
  for (const [path, content] of files) {
    const m = /^blobs\/(.*)$/.exec(path);
    if (!m) continue;
    if (hex(await sha256(content)) !== m[1]) finding("blob_digest", path, null, "content does not hash to its name");
  }

  // 10. Attestations.
  const bySeq = new Map(events.map((e) => [e.seq, e]));
  for (const [path, content] of files) {
    if (!path.startsWith("attestations/")) continue;
    const env = parseJson(content, path, finding);
    if (!env || !vkey) continue;
    try {
      const payload = b64decode(env.payload);
      const type = enc.encode(env.payloadType);
      const pae = concat(
        enc.encode(`DSSEv1 ${type.length} `),
        type,
        enc.encode(` ${payload.length} `),
        payload,
      );
      const sigs = env.signatures || [];
      let ok = false;
      for (const s of sigs) if (await ed25519Verify(vkey.publicKey, b64decode(s.sig), pae)) ok = true;
      if (!ok) throw new Error("no signature by the ledger key verifies");
      const statement = JSON.parse(new TextDecoder().decode(payload));
      const pred = statement.predicate || {};
      const bindings = [...(pred.inputAttestations || []), ...(pred.configuration || [])];
      for (const b of bindings) {
        const m = /\/log\/(\d+)$/.exec(b.uri || "");
        if (!m) continue;
        const ev = bySeq.get(Number(m[1]));
        if (!ev || hex(ev.leaf) !== (b.digest || {}).sha256) throw new Error(`binds event ${m[1]}, which is not carried with that leaf hash`);
      }
    } catch (e) {
      finding("attestation", path, null, e.message);
    }
  }

  // 11. Summary (the parts that need no domain fold).
  const summary = files.get("summary.json") ? parseJson(files.get("summary.json"), "summary.json", finding) : null;
  if (summary) {
    const kinds = {};
    for (const ev of events) kinds[ev.kind] = (kinds[ev.kind] || 0) + 1;
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    const sortKeys = (o) => Object.fromEntries(Object.entries(o || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    if (summary.format !== "docket.summary/1") finding("summary_mismatch", "summary.json", null, "format");
    if (cp && summary.tree_size !== cp.size) finding("summary_mismatch", "summary.json", null, "tree_size");
    if (summary.events !== events.length) finding("summary_mismatch", "summary.json", null, "events");
    if (!same(summary.ranges, info.runs)) finding("summary_mismatch", "summary.json", null, "ranges");
    if (!same(sortKeys(summary.kinds), sortKeys(kinds))) finding("summary_mismatch", "summary.json", null, "kinds");
  }

  const errors = findings.filter((f) => f.severity === "error");
  return { accepted: errors.length === 0 && events.length > 0, findings, info };
}
