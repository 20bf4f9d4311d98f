//! The engine's identity and rule set, for verdict provenance.
//!
//! Every verdict the ledger records names the engine that produced it
//! ([`ENGINE_NAME`], [`ENGINE_VERSION`]) and a digest of its rule set
//! ([`rules_digest`]): SHA-256 (lower-case hex) of the UTF-8 text
//! [`rule_listing`], which is one line per entry, each ending in `\n`,
//! sorted bytewise, without duplicates:
//!
//! * `rule <id>` for every rule identifier the engine's sources can report
//!   (`submit.paths_within_pins`, `verdict.no_check_no_pass`, ...: every
//!   string literal of the form `<family>.<name>` whose family is one of
//!   [`RULE_FAMILIES`] and whose last component is not a file extension);
//! * `check <name>` for the four seed checks;
//! * `reason <CODE> <fail_class> <verifier_fail_class>` for every code of
//!   the failure catalogue, with the seed 000 and seed 001 classes it maps
//!   to.
//!
//! The listing is derived from the engine's own sources at build time, so a
//! new rule, a renamed one or a changed mapping changes the digest; a change
//! of logic under the same identifiers is what [`ENGINE_VERSION`] is for.
//! `docket verdict rules` prints the listing, so an outside verifier can
//! recompute the digest.

use std::sync::OnceLock;

use crate::catalogue::{ReasonCode, fail_class_for, verifier_fail_class_for};
use crate::verdict::SEED_CHECKS;

/// The engine's name as verdict provenance records it.
pub const ENGINE_NAME: &str = "docket-verifier";
/// The engine's version (the crate's).
pub const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Families of rule identifiers (the part before the first dot).
pub const RULE_FAMILIES: [&str; 10] = [
    "acceptance",
    "engine",
    "evidence",
    "execution",
    "harness",
    "submit",
    "task",
    "tests",
    "verdict",
    "verifier_output",
];

/// Last components that make a literal a file name, not a rule.
const FILE_EXTENSIONS: [&str; 10] = [
    "json", "jsonl", "md", "diff", "log", "txt", "sha256", "png", "dat", "sh",
];

/// The engine's sources, scanned for rule identifiers.
const SOURCES: [&str; 14] = [
    include_str!("catalogue.rs"),
    include_str!("classify.rs"),
    include_str!("diff.rs"),
    include_str!("engine.rs"),
    include_str!("error.rs"),
    include_str!("evidence.rs"),
    include_str!("execution.rs"),
    include_str!("harness.rs"),
    include_str!("json.rs"),
    include_str!("scope.rs"),
    include_str!("submit.rs"),
    include_str!("task.rs"),
    include_str!("verdict.rs"),
    include_str!("violation.rs"),
];

/// Whether `s` (the inside of a string literal) is a rule identifier.
fn is_rule_id(s: &str) -> bool {
    let Some((family, rest)) = s.split_once('.') else {
        return false;
    };
    if !RULE_FAMILIES.contains(&family) || rest.is_empty() {
        return false;
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
    {
        return false;
    }
    if s.split('.').any(str::is_empty) {
        return false;
    }
    let last = s.rsplit('.').next().unwrap_or_default();
    !FILE_EXTENSIONS.contains(&last)
}

/// Every rule identifier in `source` (string literals only).
fn rule_ids_in(source: &str, out: &mut Vec<String>) {
    for (i, part) in source.split('"').enumerate() {
        // Odd parts are inside quotes (escaped quotes do not occur in rule ids).
        if i % 2 == 1 && is_rule_id(part) {
            out.push(part.to_string());
        }
    }
}

/// The canonical listing of the engine's rule set (see the module docs).
#[must_use]
pub fn rule_listing() -> &'static str {
    static LISTING: OnceLock<String> = OnceLock::new();
    LISTING.get_or_init(|| {
        let mut ids = Vec::new();
        for s in SOURCES {
            rule_ids_in(s, &mut ids);
        }
        let mut lines: Vec<String> = ids.into_iter().map(|id| format!("rule {id}")).collect();
        lines.extend(SEED_CHECKS.iter().map(|c| format!("check {c}")));
        lines.extend(ReasonCode::ALL.iter().map(|c| {
            format!(
                "reason {} {} {}",
                c.as_str(),
                fail_class_for(*c).as_str(),
                verifier_fail_class_for(*c).as_str()
            )
        }));
        listing_of(lines)
    })
}

/// Sorts and deduplicates `lines` into a listing (each line ends in `\n`).
#[must_use]
pub fn listing_of(mut lines: Vec<String>) -> String {
    lines.sort();
    lines.dedup();
    let mut out = String::new();
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// SHA-256 (lower-case hex) of a listing.
#[must_use]
pub fn digest_of(listing: &str) -> String {
    crate::sha256_hex(listing.as_bytes())
}

/// The engine's rule-set digest: SHA-256 of [`rule_listing`].
#[must_use]
pub fn rules_digest() -> &'static str {
    static DIGEST: OnceLock<String> = OnceLock::new();
    DIGEST.get_or_init(|| digest_of(rule_listing()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_is_sorted_and_names_known_rules() {
        let l = rule_listing();
        let lines: Vec<&str> = l.lines().collect();
        let mut sorted = lines.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(lines, sorted);
        for id in [
            "rule verdict.no_check_no_pass",
            "rule submit.paths_within_pins",
            "rule verifier_output.fail_class.known",
            "check scope_valid",
        ] {
            assert!(lines.contains(&id), "{id} in the listing");
        }
        assert!(!lines.iter().any(|l| l.ends_with(".json")));
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("reason ")).count(),
            ReasonCode::ALL.len()
        );
        assert!(l.ends_with('\n'));
        assert_eq!(rules_digest().len(), 64);
        assert_eq!(rules_digest(), digest_of(l));
    }

    /// Every source file of the engine is scanned: a new module must be
    /// added to `SOURCES` (its rules then count in the digest).
    #[test]
    fn every_engine_source_is_scanned() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let scanned: Vec<String> = SOURCES.iter().map(|s| s.to_string()).collect();
        for e in std::fs::read_dir(&dir).expect("verifier/src") {
            let path = e.expect("entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if !name.ends_with(".rs") || name == "lib.rs" || name == "rules.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable source");
            assert!(
                scanned.contains(&text),
                "verifier/src/{name} is not in rules::SOURCES"
            );
        }
    }

    #[test]
    fn rule_ids_are_recognised() {
        assert!(is_rule_id("task.verdict_deadline"));
        assert!(!is_rule_id("task.json"));
        assert!(!is_rule_id("scc.verdict.v1"));
        assert!(!is_rule_id("verdict."));
        assert!(!is_rule_id("Verdict.x"));
    }
}
