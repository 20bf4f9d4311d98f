//! Checkpoints: the C2SP `tlog-checkpoint` body signed as a C2SP `signed-note`
//! with the ledger's Ed25519 key.
//!
//! Body (c2sp.org/tlog-checkpoint, "Note text"):
//!
//! ```text
//! <origin>\n
//! <tree size, decimal, no leading zeros>\n
//! <base64(root hash), standard alphabet, padded>\n
//! [<extension line>\n]*
//! ```
//!
//! Signed note (c2sp.org/signed-note, "Format" and "Signatures"): the body,
//! an empty line, then one line per signature:
//! `U+2014 U+0020 <key name> U+0020 base64(key ID (4 bytes, big-endian) || signature) \n`.
//! Ed25519 key ID = `SHA-256(key name || 0x0A || 0x01 || 32-byte public key)[:4]`.
//! Verifier key text: `<key name>+<hex8(key ID)>+base64(0x01 || public key)`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::merkle::Hash;

/// Signature type byte for Ed25519 in c2sp.org/signed-note.
pub const SIG_TYPE_ED25519: u8 = 0x01;

/// The signature line prefix: em dash U+2014 and a space.
const SIG_PREFIX: &str = "\u{2014} ";

/// Maximum number of signature lines accepted in a note (the spec requires at
/// least 16 be accepted).
pub const MAX_SIGNATURES: usize = 100;

/// Maximum size of a note accepted by [`open_note`] (bytes).
pub const MAX_NOTE_BYTES: usize = 1 << 20;

/// Errors from building, parsing and verifying checkpoints and signed notes.
///
/// Every variant means "do not trust this note": the caller must reject the
/// checkpoint (gRPC `INVALID_ARGUMENT` for client input; in `docket audit`,
/// a hard fail). Key-format variants (`InvalidKeyName`, `MalformedVerifierKey`,
/// `VerifierKeyIdMismatch`, `UnsupportedKeyType`, `InvalidPublicKey`) point at
/// a bad configuration: the operator must supply a correct verifier key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NoteError {
    /// The note (or body) does not end with a newline. Reject: truncated.
    #[error("note text does not end with a newline")]
    MissingTrailingNewline,
    /// The note contains an ASCII control character other than newline
    /// (signed-note "Format"). Reject.
    #[error("control character {byte:#04x} at byte offset {offset}")]
    ControlCharacter {
        /// The offending byte.
        byte: u8,
        /// Its byte offset in the note.
        offset: usize,
    },
    /// The note exceeds [`MAX_NOTE_BYTES`]. Reject without parsing.
    #[error("note is {size} bytes, more than the {max} accepted")]
    TooLarge {
        /// Note size in bytes.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// No empty line separates the text from the signatures, or no signature
    /// line follows it. Reject: unsigned.
    #[error("note has no signature block (text, empty line, signature lines)")]
    MissingSignatures,
    /// A signature line is not `— <name> <base64>`. Reject the whole note.
    #[error("signature line {line} is malformed: {reason}")]
    MalformedSignatureLine {
        /// 1-based number of the line within the signature block.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// More than [`MAX_SIGNATURES`] signature lines. Reject.
    #[error("note has {count} signatures, more than the {max} accepted")]
    TooManySignatures {
        /// Number of signature lines.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// No signature line carries this verifier's key name and key ID. The note
    /// was not signed by the expected key (wrong key or wrong name): reject.
    #[error("no signature by key {name}+{key_id}")]
    NoMatchingSignature {
        /// The verifier's key name.
        name: String,
        /// The verifier's key ID, hex.
        key_id: String,
    },
    /// A signature line from this verifier's key does not verify (strict
    /// Ed25519). The note text was altered or forged: reject.
    #[error("signature by key {name}+{key_id} does not verify")]
    InvalidSignature {
        /// The verifier's key name.
        name: String,
        /// The verifier's key ID, hex.
        key_id: String,
    },
    /// The checkpoint body has fewer than three lines. Reject.
    #[error("checkpoint body has {found} lines, at least 3 are required")]
    TooFewLines {
        /// Lines found.
        found: usize,
    },
    /// An empty line inside the checkpoint body. Reject.
    #[error("checkpoint body line {line} is empty")]
    EmptyLine {
        /// 1-based line number.
        line: usize,
    },
    /// An origin or extension line contains a newline, which would shift the
    /// body's lines. Fix the value before signing.
    #[error("{field} contains a newline")]
    EmbeddedNewline {
        /// Which field: `origin` or `extension`.
        field: &'static str,
    },
    /// The tree size line is not a canonical decimal u64 (digits only, no
    /// leading zeros except `0`). Reject.
    #[error("invalid tree size {text:?}")]
    InvalidSize {
        /// The line as found.
        text: String,
    },
    /// The root hash line is not canonical padded standard base64 of 32 bytes.
    /// Reject.
    #[error("invalid root hash {text:?}: {reason}")]
    InvalidRoot {
        /// The line as found.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A key name is empty or contains a Unicode space or `+`. Fix the name.
    #[error("invalid key name {name:?}: must be non-empty with no spaces or '+'")]
    InvalidKeyName {
        /// The name as given.
        name: String,
    },
    /// A verifier key string is not `<name>+<hex8>+<base64>`. Fix the key.
    #[error("malformed verifier key: {reason}")]
    MalformedVerifierKey {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The key ID in a verifier key does not match its name and public key.
    /// The key string was altered or mis-copied: fix it.
    #[error("verifier key ID {stated} does not match the computed {computed}")]
    VerifierKeyIdMismatch {
        /// Key ID written in the verifier key, hex.
        stated: String,
        /// Key ID computed from name and key, hex.
        computed: String,
    },
    /// The verifier key is not of type Ed25519 (0x01). Use an Ed25519 key.
    #[error("unsupported signature type {byte:#04x} (only Ed25519 0x01)")]
    UnsupportedKeyType {
        /// The type byte found.
        byte: u8,
    },
    /// The public key bytes are not a valid Ed25519 point. Fix the key.
    #[error("invalid Ed25519 public key: {0}")]
    InvalidPublicKey(#[source] ed25519_dalek::SignatureError),
}

/// A transparency-log checkpoint (c2sp.org/tlog-checkpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Log identity; by convention the signing key's name.
    pub origin: String,
    /// Number of leaves in the tree.
    pub size: u64,
    /// RFC 9162 root hash of the tree at `size`.
    pub root: Hash,
    /// Optional extension lines (without newlines). Not recommended.
    pub extensions: Vec<String>,
}

impl Checkpoint {
    /// The note text: `origin\nsize\nbase64(root)\n` then each extension line
    /// and a newline. The caller must pass a [`Checkpoint::validate`]d value
    /// for the output to parse back.
    #[must_use]
    pub fn body(&self) -> String {
        let mut s = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        );
        for e in &self.extensions {
            s.push_str(e);
            s.push('\n');
        }
        s
    }

    /// Checks that [`Checkpoint::body`] will produce a well-formed body: a
    /// non-empty origin and non-empty extension lines, none containing a
    /// newline or another control character.
    pub fn validate(&self) -> Result<(), NoteError> {
        let fields = std::iter::once(("origin", self.origin.as_str()))
            .chain(self.extensions.iter().map(|e| ("extension", e.as_str())));
        for (i, (field, value)) in fields.enumerate() {
            if value.contains('\n') {
                return Err(NoteError::EmbeddedNewline { field });
            }
            if value.is_empty() {
                // Origin is line 1, extensions start at line 4.
                return Err(NoteError::EmptyLine {
                    line: if i == 0 { 1 } else { i + 3 },
                });
            }
        }
        check_controls(&self.body())
    }

    /// Parses a checkpoint body (the note text, with its final newline).
    pub fn parse_body(text: &str) -> Result<Self, NoteError> {
        check_controls(text)?;
        let Some(stripped) = text.strip_suffix('\n') else {
            return Err(NoteError::MissingTrailingNewline);
        };
        let lines: Vec<&str> = stripped.split('\n').collect();
        if let Some(i) = lines.iter().position(|l| l.is_empty()) {
            return Err(NoteError::EmptyLine { line: i + 1 });
        }
        if lines.len() < 3 {
            return Err(NoteError::TooFewLines { found: lines.len() });
        }
        let origin = lines[0].to_owned();
        let size = parse_size(lines[1])?;
        let root = parse_root(lines[2])?;
        let extensions = lines[3..].iter().map(|&l| l.to_owned()).collect();
        Ok(Self {
            origin,
            size,
            root,
            extensions,
        })
    }
}

/// The size and root a signed note's body names, read without checking its
/// signature (for a store recognising its own anchor; never trust them
/// further).
pub(crate) fn unverified_size_and_root(note: &str) -> Option<(u64, Hash)> {
    let mut lines = note.split('\n');
    let _origin = lines.next()?;
    let size = parse_size(lines.next()?).ok()?;
    let root = parse_root(lines.next()?).ok()?;
    Some((size, root))
}

fn parse_size(s: &str) -> Result<u64, NoteError> {
    let bad = || NoteError::InvalidSize { text: s.to_owned() };
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return Err(bad());
    }
    s.parse::<u64>().map_err(|_| bad())
}

fn parse_root(s: &str) -> Result<Hash, NoteError> {
    let bad = |reason| NoteError::InvalidRoot {
        text: s.to_owned(),
        reason,
    };
    let bytes = B64
        .decode(s)
        .map_err(|_| bad("not padded standard base64"))?;
    let root: Hash = bytes.try_into().map_err(|_| bad("not 32 bytes"))?;
    if B64.encode(root) != s {
        return Err(bad("not canonical base64"));
    }
    Ok(root)
}

fn check_controls(text: &str) -> Result<(), NoteError> {
    match text
        .bytes()
        .enumerate()
        .find(|&(_, b)| b < 0x20 && b != b'\n')
    {
        Some((offset, byte)) => Err(NoteError::ControlCharacter { byte, offset }),
        None => Ok(()),
    }
}

/// Checks that `origin` can name a ledger: it is the first line of every
/// checkpoint (not empty, no newline, no control character) and the name of
/// the ledger's verifier key (no Unicode space, no `+`, so that
/// `<name>+<hex8>+<base64>` splits one way). `docket init --origin`, the log's
/// create and the admission of a `ledger.genesis` all hold an origin to this.
pub fn check_origin(origin: &str) -> Result<(), NoteError> {
    check_name(origin)?;
    check_controls(origin)
}

fn check_name(name: &str) -> Result<(), NoteError> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c == '+') {
        return Err(NoteError::InvalidKeyName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// The signed-note key ID of an Ed25519 key:
/// `SHA-256(name || 0x0A || 0x01 || public key)[:4]`.
#[must_use]
pub fn key_id(name: &str, key: &VerifyingKey) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', SIG_TYPE_ED25519]);
    h.update(key.as_bytes());
    let d: [u8; 32] = h.finalize().into();
    [d[0], d[1], d[2], d[3]]
}

/// Signs `body` (which must end with a newline and follow the signed-note text
/// rules) and returns the full note: `body`, an empty line and the signature
/// line `— <name> base64(key ID || Ed25519 signature)`.
#[must_use]
pub fn sign_note(body: &str, name: &str, key: &SigningKey) -> String {
    let sig: Signature = key.sign(body.as_bytes());
    let mut blob = Vec::with_capacity(4 + 64);
    blob.extend_from_slice(&key_id(name, &key.verifying_key()));
    blob.extend_from_slice(&sig.to_bytes());
    format!("{body}\n{SIG_PREFIX}{name} {}\n", B64.encode(blob))
}

/// The verifier key text `<name>+<hex8 key ID>+base64(0x01 || public key)`.
#[must_use]
pub fn verifier_key(name: &str, key: &VerifyingKey) -> String {
    let mut typed = Vec::with_capacity(33);
    typed.push(SIG_TYPE_ED25519);
    typed.extend_from_slice(key.as_bytes());
    format!(
        "{name}+{}+{}",
        hex::encode(key_id(name, key)),
        B64.encode(typed)
    )
}

/// A trusted Ed25519 note-signing key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    /// Key name (matches the name on signature lines).
    pub name: String,
    /// Key ID (first 4 bytes of each signature blob).
    pub key_id: [u8; 4],
    /// The public key.
    pub key: VerifyingKey,
}

impl NoteVerifier {
    /// Builds a verifier from a name and key, computing the key ID.
    pub fn new(name: &str, key: VerifyingKey) -> Result<Self, NoteError> {
        check_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            key_id: key_id(name, &key),
            key,
        })
    }

    /// Parses a verifier key `<name>+<hex8>+<base64(0x01 || key)>` and checks
    /// its key ID.
    pub fn parse(vkey: &str) -> Result<Self, NoteError> {
        let (name, rest) = vkey
            .split_once('+')
            .ok_or(NoteError::MalformedVerifierKey {
                reason: "missing '+' after the key name",
            })?;
        check_name(name)?;
        let (id_hex, key_b64) = rest
            .split_once('+')
            .ok_or(NoteError::MalformedVerifierKey {
                reason: "missing '+' after the key ID",
            })?;
        if id_hex.len() != 8 {
            return Err(NoteError::MalformedVerifierKey {
                reason: "key ID is not 8 hex digits",
            });
        }
        let mut stated = [0u8; 4];
        hex::decode_to_slice(id_hex, &mut stated).map_err(|_| NoteError::MalformedVerifierKey {
            reason: "key ID is not 8 hex digits",
        })?;
        let typed = B64
            .decode(key_b64)
            .map_err(|_| NoteError::MalformedVerifierKey {
                reason: "key is not padded standard base64",
            })?;
        let (&alg, raw) = typed.split_first().ok_or(NoteError::MalformedVerifierKey {
            reason: "key is empty",
        })?;
        if alg != SIG_TYPE_ED25519 {
            return Err(NoteError::UnsupportedKeyType { byte: alg });
        }
        let raw: &[u8; 32] = raw
            .try_into()
            .map_err(|_| NoteError::MalformedVerifierKey {
                reason: "Ed25519 key is not 32 bytes",
            })?;
        let key = VerifyingKey::from_bytes(raw).map_err(NoteError::InvalidPublicKey)?;
        let computed = key_id(name, &key);
        if computed != stated {
            return Err(NoteError::VerifierKeyIdMismatch {
                stated: hex::encode(stated),
                computed: hex::encode(computed),
            });
        }
        Ok(Self {
            name: name.to_owned(),
            key_id: computed,
            key,
        })
    }

    /// The verifier key text for this key.
    #[must_use]
    pub fn to_vkey(&self) -> String {
        verifier_key(&self.name, &self.key)
    }
}

/// Verifies a signed note against `verifier` and returns its text (with the
/// final newline), without interpreting it.
///
/// Follows c2sp.org/signed-note: the text ends at the last empty line; every
/// signature line must be well-formed (else the note is refused); lines from
/// other keys (different name or key ID) are ignored; every line from this key
/// must verify (strict Ed25519), and at least one must be present.
pub fn verify_note<'a>(note: &'a str, verifier: &NoteVerifier) -> Result<&'a str, NoteError> {
    if note.len() > MAX_NOTE_BYTES {
        return Err(NoteError::TooLarge {
            size: note.len(),
            max: MAX_NOTE_BYTES,
        });
    }
    check_controls(note)?;
    if !note.ends_with('\n') {
        return Err(NoteError::MissingTrailingNewline);
    }
    let split = note.rfind("\n\n").ok_or(NoteError::MissingSignatures)?;
    let text = &note[..=split];
    let sigs = &note[split + 2..];
    if sigs.is_empty() {
        return Err(NoteError::MissingSignatures);
    }
    let lines: Vec<&str> = sigs[..sigs.len() - 1].split('\n').collect();
    if lines.len() > MAX_SIGNATURES {
        return Err(NoteError::TooManySignatures {
            count: lines.len(),
            max: MAX_SIGNATURES,
        });
    }
    let mut verified = false;
    for (i, line) in lines.iter().enumerate() {
        let bad = |reason| NoteError::MalformedSignatureLine {
            line: i + 1,
            reason,
        };
        let rest = line
            .strip_prefix(SIG_PREFIX)
            .ok_or_else(|| bad("does not start with an em dash and a space"))?;
        let (name, b64) = rest
            .split_once(' ')
            .ok_or_else(|| bad("no space between key name and signature"))?;
        if check_name(name).is_err() {
            return Err(bad("invalid key name"));
        }
        let blob = B64
            .decode(b64)
            .map_err(|_| bad("signature is not padded standard base64"))?;
        if blob.len() < 5 {
            return Err(bad("signature shorter than key ID plus one byte"));
        }
        if name != verifier.name || blob[..4] != verifier.key_id {
            continue;
        }
        let key_id = hex::encode(verifier.key_id);
        let invalid = || NoteError::InvalidSignature {
            name: verifier.name.clone(),
            key_id: key_id.clone(),
        };
        let sig = Signature::from_slice(&blob[4..]).map_err(|_| invalid())?;
        verifier
            .key
            .verify_strict(text.as_bytes(), &sig)
            .map_err(|_| invalid())?;
        verified = true;
    }
    if !verified {
        return Err(NoteError::NoMatchingSignature {
            name: verifier.name.clone(),
            key_id: hex::encode(verifier.key_id),
        });
    }
    Ok(text)
}

/// Verifies a signed checkpoint note against `verifier` (see [`verify_note`])
/// and parses its body. The caller should also check that `origin` is the log
/// it expects.
pub fn open_note(note: &str, verifier: &NoteVerifier) -> Result<Checkpoint, NoteError> {
    Checkpoint::parse_body(verify_note(note, verifier)?)
}
