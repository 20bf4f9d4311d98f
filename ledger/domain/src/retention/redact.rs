//! The secret scanner behind `docket retention redact --auto` (seed 000 §3:
//! "redact secrets before long-term retention").
//!
//! Finds common secrets in any bytes (not only UTF-8) and replaces each by
//! `[REDACTED:<kind>]`. A [`Finding`] names the kind and the 1-based line
//! of the original, never the secret. Detected:
//!
//! | kind | what |
//! | --- | --- |
//! | `private_key` | a PEM block whose header names a `PRIVATE KEY` (RSA, EC, OpenSSH, PKCS#8, encrypted, PGP), from `-----BEGIN` to its `-----END …-----` line (to the end when unterminated); also inside one line with `\n` escapes |
//! | `aws_access_key` | `AKIA` / `ASIA` + 16 upper-case letters or digits |
//! | `aws_secret_key` | the 40-character value after `aws_secret_access_key`, `secret_access_key` or `SecretAccessKey` and `=` or `:` |
//! | `github_token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + ≥ 36 letters or digits; `github_pat_` + ≥ 22 |
//! | `gitlab_token` | `glpat-`, `glptt-`, `glrt-`, `gldt-` + ≥ 20 of `[A-Za-z0-9_-]` |
//! | `slack_token` | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxe-`, `xapp-` + ≥ 10 of `[A-Za-z0-9-]` |
//! | `slack_webhook` | the path after `hooks.slack.com/services/` |
//! | `bearer_token` | the token after `Bearer` on a line with `Authorization`; elsewhere when it is ≥ 20 characters with a digit |
//! | `url_password` | the password of `scheme://user:password@host` |
//!
//! Only the secret is replaced (the header, key name or URL around it stays),
//! except a private key, whose whole PEM block goes.

use serde::Serialize;

/// A kind of secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    PrivateKey,
    AwsAccessKey,
    AwsSecretKey,
    GithubToken,
    GitlabToken,
    SlackToken,
    SlackWebhook,
    BearerToken,
    UrlPassword,
}

impl SecretKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private_key",
            SecretKind::AwsAccessKey => "aws_access_key",
            SecretKind::AwsSecretKey => "aws_secret_key",
            SecretKind::GithubToken => "github_token",
            SecretKind::GitlabToken => "gitlab_token",
            SecretKind::SlackToken => "slack_token",
            SecretKind::SlackWebhook => "slack_webhook",
            SecretKind::BearerToken => "bearer_token",
            SecretKind::UrlPassword => "url_password",
        }
    }
}

impl std::fmt::Display for SecretKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One secret replaced: its kind and where it started (never its value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: SecretKind,
    /// 1-based line in the original content.
    pub line: u64,
}

/// The redacted content and what was replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    pub content: Vec<u8>,
    pub findings: Vec<Finding>,
}

impl Redaction {
    /// Whether anything was replaced.
    pub fn changed(&self) -> bool {
        !self.findings.is_empty()
    }
}

#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    kind: SecretKind,
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Positions of `needle` in `hay` (non-overlapping scan, every start).
fn find_all<'a>(hay: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    let n = needle.len();
    let first = needle[0];
    (0..hay.len().saturating_sub(n - 1))
        .filter(move |&i| hay[i] == first && &hay[i..i + n] == needle)
}

fn find_from(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from > hay.len() || needle.is_empty() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Length of the run of bytes satisfying `ok` starting at `at`.
fn run(hay: &[u8], at: usize, ok: impl Fn(u8) -> bool) -> usize {
    hay[at.min(hay.len())..]
        .iter()
        .take_while(|b| ok(**b))
        .count()
}

fn boundary_before(hay: &[u8], at: usize) -> bool {
    at == 0 || !(is_alnum(hay[at - 1]) || hay[at - 1] == b'_')
}

fn pem_blocks(hay: &[u8], out: &mut Vec<Span>) {
    let mut from = 0;
    while let Some(begin) = find_from(hay, b"-----BEGIN ", from) {
        let header_from = begin + b"-----BEGIN ".len();
        let Some(header_end) = find_from(hay, b"-----", header_from) else {
            break;
        };
        let header = &hay[header_from..header_end];
        if !header.windows(11).any(|w| w == b"PRIVATE KEY") || header.contains(&b'\n') {
            from = header_from;
            continue;
        }
        let end = match find_from(hay, b"-----END ", header_end + 5) {
            Some(e) => {
                let tail = e + b"-----END ".len();
                find_from(hay, b"-----", tail).map_or(hay.len(), |x| x + 5)
            }
            None => hay.len(),
        };
        out.push(Span {
            start: begin,
            end,
            kind: SecretKind::PrivateKey,
        });
        from = end;
    }
}

fn prefixed_tokens(
    hay: &[u8],
    prefixes: &[&[u8]],
    min: usize,
    ok: impl Fn(u8) -> bool + Copy,
    kind: SecretKind,
    out: &mut Vec<Span>,
) {
    for p in prefixes {
        for at in find_all(hay, p) {
            if !boundary_before(hay, at) {
                continue;
            }
            let body = run(hay, at + p.len(), ok);
            if body >= min {
                out.push(Span {
                    start: at,
                    end: at + p.len() + body,
                    kind,
                });
            }
        }
    }
}

fn aws_access_keys(hay: &[u8], out: &mut Vec<Span>) {
    let upper_digit = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    for p in [&b"AKIA"[..], b"ASIA"] {
        for at in find_all(hay, p) {
            let body = run(hay, at + 4, upper_digit);
            let end = at + 4 + body;
            if boundary_before(hay, at) && body == 16 && (end == hay.len() || !is_alnum(hay[end])) {
                out.push(Span {
                    start: at,
                    end,
                    kind: SecretKind::AwsAccessKey,
                });
            }
        }
    }
}

fn aws_secret_keys(hay: &[u8], lower: &[u8], out: &mut Vec<Span>) {
    let secret = |b: u8| is_alnum(b) || b == b'/' || b == b'+' || b == b'=';
    for name in [&b"secret_access_key"[..], b"secretaccesskey"] {
        for at in find_all(lower, name) {
            let mut i = at + name.len();
            i += run(hay, i, |b| {
                b == b'"' || b == b'\'' || b == b' ' || b == b'\t'
            });
            if i >= hay.len() || !(hay[i] == b'=' || hay[i] == b':') {
                continue;
            }
            i += 1;
            i += run(hay, i, |b| {
                b == b'"' || b == b'\'' || b == b' ' || b == b'\t'
            });
            let body = run(hay, i, secret);
            if body == 40 {
                out.push(Span {
                    start: i,
                    end: i + 40,
                    kind: SecretKind::AwsSecretKey,
                });
            }
        }
    }
}

fn slack_webhooks(hay: &[u8], out: &mut Vec<Span>) {
    let needle = b"hooks.slack.com/services/";
    for at in find_all(hay, needle) {
        let start = at + needle.len();
        let body = run(hay, start, |b| {
            is_alnum(b) || b == b'/' || b == b'_' || b == b'-'
        });
        if body >= 8 {
            out.push(Span {
                start,
                end: start + body,
                kind: SecretKind::SlackWebhook,
            });
        }
    }
}

fn line_start(hay: &[u8], at: usize) -> usize {
    hay[..at]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1)
}

fn bearer_tokens(hay: &[u8], lower: &[u8], out: &mut Vec<Span>) {
    let token = |b: u8| is_alnum(b) || b"._~+/=-".contains(&b);
    for at in find_all(lower, b"bearer") {
        if !boundary_before(hay, at) {
            continue;
        }
        let mut i = at + 6;
        let gap = run(hay, i, |b| b == b' ' || b == b'\t');
        if gap == 0 {
            continue;
        }
        i += gap;
        let body = run(hay, i, token);
        if body < 8 {
            continue;
        }
        let ls = line_start(hay, at);
        let header = lower[ls..at].windows(13).any(|w| w == b"authorization");
        let tokenish = body >= 20 && hay[i..i + body].iter().any(u8::is_ascii_digit);
        if header || tokenish {
            out.push(Span {
                start: i,
                end: i + body,
                kind: SecretKind::BearerToken,
            });
        }
    }
}

fn url_passwords(hay: &[u8], out: &mut Vec<Span>) {
    for at in find_all(hay, b"://") {
        // The scheme: a letter then letters, digits, + . -
        let scheme = hay[..at]
            .iter()
            .rev()
            .take_while(|b| is_alnum(**b) || b"+.-".contains(b))
            .count();
        if scheme == 0 || !hay[at - scheme].is_ascii_alphabetic() {
            continue;
        }
        let from = at + 3;
        let stop = hay[from..]
            .iter()
            .position(|b| b"/?#@ \t\r\n\"'<>`".contains(b))
            .map_or(hay.len(), |p| p + from);
        if stop >= hay.len() || hay[stop] != b'@' {
            continue;
        }
        let userinfo = &hay[from..stop];
        if let Some(colon) = userinfo.iter().position(|b| *b == b':') {
            let start = from + colon + 1;
            if start < stop {
                out.push(Span {
                    start,
                    end: stop,
                    kind: SecretKind::UrlPassword,
                });
            }
        }
    }
}

/// Finds the secrets in `input` and returns the content with each replaced
/// by `[REDACTED:<kind>]`, and what was replaced (kind and line).
pub fn redact_secrets(input: &[u8]) -> Redaction {
    let lower = input.to_ascii_lowercase();
    let mut spans = Vec::new();
    // Private keys first: a whole block wins over anything inside it.
    pem_blocks(input, &mut spans);
    let mut others = Vec::new();
    aws_access_keys(input, &mut others);
    aws_secret_keys(input, &lower, &mut others);
    prefixed_tokens(
        input,
        &[b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"],
        36,
        is_alnum,
        SecretKind::GithubToken,
        &mut others,
    );
    prefixed_tokens(
        input,
        &[b"github_pat_"],
        22,
        |b| is_alnum(b) || b == b'_',
        SecretKind::GithubToken,
        &mut others,
    );
    prefixed_tokens(
        input,
        &[b"glpat-", b"glptt-", b"glrt-", b"gldt-"],
        20,
        |b| is_alnum(b) || b == b'_' || b == b'-',
        SecretKind::GitlabToken,
        &mut others,
    );
    prefixed_tokens(
        input,
        &[
            b"xoxb-", b"xoxp-", b"xoxa-", b"xoxr-", b"xoxs-", b"xoxe-", b"xapp-",
        ],
        10,
        |b| is_alnum(b) || b == b'-',
        SecretKind::SlackToken,
        &mut others,
    );
    slack_webhooks(input, &mut others);
    bearer_tokens(input, &lower, &mut others);
    url_passwords(input, &mut others);
    others.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    spans.extend(others);
    // Keep the first claim on every byte (private-key blocks, then by start).
    let mut kept: Vec<Span> = Vec::new();
    for s in spans {
        if kept.iter().all(|k| s.end <= k.start || s.start >= k.end) {
            kept.push(s);
        }
    }
    kept.sort_by_key(|s| s.start);
    let mut content = Vec::with_capacity(input.len());
    let mut findings = Vec::with_capacity(kept.len());
    let mut pos = 0;
    let mut line = 1u64;
    for s in &kept {
        line += input[pos..s.start].iter().filter(|b| **b == b'\n').count() as u64;
        content.extend_from_slice(&input[pos..s.start]);
        content.extend_from_slice(format!("[REDACTED:{}]", s.kind).as_bytes());
        findings.push(Finding { kind: s.kind, line });
        line += input[s.start..s.end]
            .iter()
            .filter(|b| **b == b'\n')
            .count() as u64;
        pos = s.end;
    }
    content.extend_from_slice(&input[pos..]);
    Redaction { content, findings }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(r: &Redaction) -> Vec<(&'static str, u64)> {
        r.findings
            .iter()
            .map(|f| (f.kind.as_str(), f.line))
            .collect()
    }

    #[test]
    fn finds_each_kind_and_keeps_the_rest() {
        // Fake values (AWS's documented examples; made-up tokens).
        let gh = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        let input = format!(
            "line one\n\
             export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n\
             aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n\
             token: {gh}\n\
             GITLAB=glpat-abcdefghij0123456789\n\
             slack xoxb-1234567890-abcdefghij\n\
             curl -H 'Authorization: Bearer abc.def.ghi' https://x\n\
             db = postgres://app:s3cr3t@db.internal:5432/app\n\
             hook https://hooks.slack.com/services/T000/B000/XXXXXXXX\n\
             -----BEGIN RSA PRIVATE KEY-----\n\
             MIIEowIBAAKCAQEA\n\
             -----END RSA PRIVATE KEY-----\n\
             done\n"
        );
        let r = redact_secrets(input.as_bytes());
        assert_eq!(
            kinds(&r),
            vec![
                ("aws_access_key", 2),
                ("aws_secret_key", 3),
                ("github_token", 4),
                ("gitlab_token", 5),
                ("slack_token", 6),
                ("bearer_token", 7),
                ("url_password", 8),
                ("slack_webhook", 9),
                ("private_key", 10),
            ]
        );
        let out = String::from_utf8(r.content).unwrap();
        for secret in [
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI",
            gh.as_str(),
            "glpat-abc",
            "xoxb-123",
            "abc.def.ghi",
            "s3cr3t",
            "XXXXXXXX",
            "MIIEowIBAAKCAQEA",
        ] {
            assert!(!out.contains(secret), "{secret} survived:\n{out}");
        }
        assert!(out.starts_with("line one\nexport AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key]\n"));
        assert!(out.contains("postgres://app:[REDACTED:url_password]@db.internal:5432/app"));
        assert!(out.contains("Authorization: Bearer [REDACTED:bearer_token]'"));
        assert!(out.ends_with("[REDACTED:private_key]\ndone\n"), "{out}");
    }

    #[test]
    fn no_false_positives_on_ordinary_text() {
        let input = b"The bearer of this note may pass.\n\
            See https://example.com/path?q=1 and mailto:a@b.c\n\
            AKIA is a prefix; AKIAshort is not a key.\n\
            -----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n\
            user@host:~$ ls\n";
        let r = redact_secrets(input);
        assert!(!r.changed(), "{:?}", r.findings);
        assert_eq!(r.content, input);
    }

    #[test]
    fn one_line_and_unterminated_private_keys() {
        let json = br#"{"private_key":"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n","x":1}"#;
        let r = redact_secrets(json);
        assert_eq!(kinds(&r), vec![("private_key", 1)]);
        assert_eq!(
            String::from_utf8(r.content).unwrap(),
            r#"{"private_key":"[REDACTED:private_key]\n","x":1}"#
        );
        let cut = b"a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n";
        let r = redact_secrets(cut);
        assert_eq!(kinds(&r), vec![("private_key", 2)]);
        assert_eq!(r.content, b"a\n[REDACTED:private_key]");
    }

    #[test]
    fn binary_input_is_fine() {
        let mut input = vec![0xff, 0x00, b'\n'];
        input.extend_from_slice(b"ASIAABCDEFGHIJKLMNOP\xfe");
        let r = redact_secrets(&input);
        assert_eq!(kinds(&r), vec![("aws_access_key", 2)]);
        assert!(r.content.ends_with(b"[REDACTED:aws_access_key]\xfe"));
    }
}
