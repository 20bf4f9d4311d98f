//! Pin scope (seed 000 §1 `pins`): which repository paths a task may touch.
//!
//! A pin is one of
//! - a **glob** when it contains `*`, `?`, `[` or `{` (globset syntax, `*`
//!   does not cross `/`, `**` does);
//! - a **directory prefix** when it ends with `/` (`docs/io/` covers
//!   `docs/io/a.md` and everything below);
//! - otherwise a **path**: the path itself and, if it is a directory,
//!   everything below it (`docs/io` covers `docs/io` and `docs/io/a.md`, not
//!   `docs/iox`).
//!
//! `forbidden_paths` beat `allowed_paths`. Paths that are absolute or contain
//! `..` are never in scope.

use crate::Violation;
use globset::GlobMatcher;

#[derive(Debug, Clone)]
enum Matcher {
    Glob(GlobMatcher),
    Prefix(String),
    Path(String),
}

#[derive(Debug, Clone)]
struct Pin {
    text: String,
    matcher: Matcher,
}

impl Pin {
    fn compile(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err("pin is empty".into());
        }
        let cleaned = trimmed.strip_prefix("./").unwrap_or(trimmed);
        if cleaned.starts_with('/') || cleaned.split('/').any(|c| c == "..") {
            return Err(format!("pin {text:?} must be a relative path without `..`"));
        }
        let matcher = if cleaned.contains(['*', '?', '[', '{']) {
            let glob = globset::GlobBuilder::new(cleaned)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("pin {text:?} is not a valid glob: {e}"))?;
            Matcher::Glob(glob.compile_matcher())
        } else if cleaned.ends_with('/') {
            Matcher::Prefix(cleaned.to_owned())
        } else if cleaned == "." {
            Matcher::Prefix(String::new())
        } else {
            Matcher::Path(cleaned.to_owned())
        };
        Ok(Self {
            text: text.to_owned(),
            matcher,
        })
    }

    fn matches(&self, path: &str) -> bool {
        match &self.matcher {
            Matcher::Glob(g) => g.is_match(path),
            Matcher::Prefix(p) => path.starts_with(p.as_str()),
            Matcher::Path(p) => {
                path == p
                    || (path.len() > p.len()
                        && path.starts_with(p.as_str())
                        && path.as_bytes().get(p.len()) == Some(&b'/'))
            }
        }
    }
}

/// Compiled `pins.allowed_paths` and `pins.forbidden_paths`.
#[derive(Debug, Clone)]
pub struct Scope {
    allowed: Vec<Pin>,
    forbidden: Vec<Pin>,
}

/// Where a path falls with respect to the pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeDecision {
    /// Matched by the named allowed pin and by no forbidden pin.
    Allowed { pin: String },
    /// Matched by the named forbidden pin (whatever the allowed pins say).
    Forbidden { pin: String },
    /// Matched by no allowed pin.
    NotAllowed,
    /// Absolute, or escapes the root with `..`.
    Escapes,
    /// Under [`VERIFIER_OWNED`]: verifier-owned records (seed 001), which an
    /// executor must never write, whatever the task's pins allow.
    VerifierOwned,
}

/// The verifier-owned tree (seed 001: "Executor MUST NOT write under
/// `docs/REPORT/**`", which holds the per-task verdict pointer
/// `docs/REPORT/<area>/artifacts/<task_id>/verdict.json`).
pub const VERIFIER_OWNED: &str = "docs/REPORT";

impl ScopeDecision {
    #[must_use]
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allowed { .. })
    }
}

/// Normalises a repository path: strips `./` prefixes and repeated slashes.
/// Returns `None` for absolute paths and paths with `..` components.
#[must_use]
pub fn normalize_path(path: &str) -> Option<String> {
    if path.starts_with('/') || path.contains('\\') && path.contains(':') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

impl Scope {
    /// Compiles the pins; every malformed pin is reported.
    pub fn new(allowed: &[String], forbidden: &[String]) -> Result<Self, Vec<Violation>> {
        let mut violations = Vec::new();
        let mut compile = |list: &[String], field: &str| -> Vec<Pin> {
            let mut pins = Vec::new();
            for (i, text) in list.iter().enumerate() {
                match Pin::compile(text) {
                    Ok(pin) => pins.push(pin),
                    Err(message) => violations.push(Violation::new(
                        "task.pins.syntax",
                        format!("/pins/{field}/{i}"),
                        message,
                    )),
                }
            }
            pins
        };
        let allowed = compile(allowed, "allowed_paths");
        let forbidden = compile(forbidden, "forbidden_paths");
        if violations.is_empty() {
            Ok(Self { allowed, forbidden })
        } else {
            Err(violations)
        }
    }

    /// Decides one path. Forbidden beats allowed.
    #[must_use]
    pub fn decide(&self, path: &str) -> ScopeDecision {
        let Some(normal) = normalize_path(path) else {
            return ScopeDecision::Escapes;
        };
        if normal == VERIFIER_OWNED
            || normal
                .strip_prefix(VERIFIER_OWNED)
                .is_some_and(|rest| rest.starts_with('/'))
        {
            return ScopeDecision::VerifierOwned;
        }
        if let Some(pin) = self.forbidden.iter().find(|p| p.matches(&normal)) {
            return ScopeDecision::Forbidden {
                pin: pin.text.clone(),
            };
        }
        match self.allowed.iter().find(|p| p.matches(&normal)) {
            Some(pin) => ScopeDecision::Allowed {
                pin: pin.text.clone(),
            },
            None => ScopeDecision::NotAllowed,
        }
    }

    #[must_use]
    pub fn allows(&self, path: &str) -> bool {
        self.decide(path).is_allowed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(allowed: &[&str], forbidden: &[&str]) -> Scope {
        let a: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        let f: Vec<String> = forbidden.iter().map(|s| s.to_string()).collect();
        Scope::new(&a, &f).unwrap()
    }

    #[test]
    fn prefixes_paths_and_globs() {
        let s = scope(
            &["docs/io/", "src/lib.rs", "tests/**/*.rs", "crates/a"],
            &[],
        );
        assert!(s.allows("docs/io/schemas.md"));
        assert!(s.allows("docs/io/deep/x.md"));
        assert!(!s.allows("docs/iox/a.md"));
        assert!(s.allows("src/lib.rs"));
        assert!(!s.allows("src/lib.rs.bak"));
        assert!(s.allows("tests/a/b/c.rs"));
        assert!(s.allows("tests/c.rs"));
        assert!(!s.allows("tests/c.txt"));
        assert!(s.allows("crates/a/src/x.rs"));
        assert!(!s.allows("crates/ab/src/x.rs"));
        assert!(s.allows("./docs/io/a.md"));
    }

    #[test]
    fn star_does_not_cross_directories() {
        let s = scope(&["src/*.rs"], &[]);
        assert!(s.allows("src/a.rs"));
        assert!(!s.allows("src/x/a.rs"));
    }

    #[test]
    fn verifier_owned_beats_every_pin() {
        let s = scope(&["docs/", "**"], &[]);
        for p in [
            "docs/REPORT/x/artifacts/t/verdict.json",
            "./docs/REPORT/a.md",
            "docs//REPORT/b",
            "docs/REPORT",
        ] {
            assert_eq!(s.decide(p), ScopeDecision::VerifierOwned, "{p}");
        }
        assert!(s.decide("docs/REPORTS/a.md").is_allowed());
        assert!(s.decide("docs/report/a.md").is_allowed());
    }

    #[test]
    fn forbidden_beats_allowed() {
        let s = scope(&["src/"], &["src/secrets/", "**/*.pem"]);
        assert!(s.allows("src/main.rs"));
        assert_eq!(
            s.decide("src/secrets/key.txt"),
            ScopeDecision::Forbidden {
                pin: "src/secrets/".into()
            }
        );
        assert!(matches!(
            s.decide("src/tls/a.pem"),
            ScopeDecision::Forbidden { .. }
        ));
        assert_eq!(s.decide("README.md"), ScopeDecision::NotAllowed);
    }

    #[test]
    fn escaping_paths_are_never_in_scope() {
        let s = scope(&["**"], &[]);
        assert_eq!(s.decide("../etc/passwd"), ScopeDecision::Escapes);
        assert_eq!(s.decide("/etc/passwd"), ScopeDecision::Escapes);
        assert_eq!(s.decide("src/../../x"), ScopeDecision::Escapes);
        assert!(s.allows("a/b"));
    }

    #[test]
    fn bad_pins_are_reported() {
        let err = Scope::new(&["src/[".into(), "".into()], &["../x".into()]).unwrap_err();
        assert_eq!(err.len(), 3);
        assert!(err.iter().all(|v| v.rule == "task.pins.syntax"));
    }
}
