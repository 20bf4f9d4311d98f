//! Verdict provenance: which engine produced a recorded verdict.
//!
//! Every verdict the ledger records carries an `engine` object:
//!
//! ```json
//! "engine": {"name": "docket-verifier", "version": "0.1.0", "rules_digest": "<64 hex>"}
//! ```
//!
//! `rules_digest` is SHA-256 (lower-case hex) of the engine's **rule
//! listing**: UTF-8 text, one entry per line, each line ending in `\n`,
//! sorted bytewise, without duplicates (docs/DOMAIN.md, "Verdict
//! provenance"). Three engines record verdicts:
//!
//! | engine | records | listing |
//! | --- | --- | --- |
//! | `docket-verifier` | `verdict.issued` by auto-verify | [`docket_verifier::rules::rule_listing`] |
//! | `docket-verdict-import` | `verdict.imported` (`docket verdict import`) | [`import_listing`] |
//! | `docket-verdict-deadline` | `verdict.deadline_passed` (the deadline sweeper) | [`deadline_listing`] |
//!
//! `docket verdict rules --engine NAME` prints a listing; `docket verify
//! --reproduce TASK` re-runs the named engine on the recorded evidence.

use docket_verifier::VerifierFailClass;
use serde::{Deserialize, Serialize};

use crate::schema::{Fields, MAX_LABEL, is_sha256_hex};

/// Name of the seed verdict engine (auto-verify).
pub const VERIFIER_ENGINE: &str = docket_verifier::rules::ENGINE_NAME;
/// Name of the seed 001 `verdict.json` import engine.
pub const IMPORT_ENGINE: &str = "docket-verdict-import";
/// Name of the verdict-deadline engine.
pub const DEADLINE_ENGINE: &str = "docket-verdict-deadline";

/// The rules of the import engine, one per line (the listing is these
/// lines sorted; see [`listing`]).
pub const IMPORT_RULES: &[&str] = &[
    "rule verifier_output.required",
    "rule verifier_output.type",
    "rule verifier_output.fail_class.known",
    "rule verifier_output.generated_utc",
    "rule verifier_output.evidence_paths.relative",
    "rule verifier_output.consistent",
    "rule import.verdict_missing FAIL verdict_missing 5",
    "rule import.artifact_missing FAIL artifact_missing",
    "rule import.fail_without_class FAIL unknown",
    "rule import.reported",
];

/// The rules of the deadline engine.
pub const DEADLINE_RULES: &[&str] = &["rule deadline.verdict_missing FAIL verdict_missing 5"];

/// Which engine produced a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub name: String,
    pub version: String,
    /// SHA-256 (lower-case hex) of the engine's rule listing.
    pub rules_digest: String,
}

/// The canonical listing of a named engine's rule set (None for an engine
/// this build does not know).
pub fn listing(engine: &str) -> Option<String> {
    let lines = |rules: &[&str]| {
        let mut lines: Vec<String> = rules.iter().map(|r| (*r).to_string()).collect();
        lines.extend(
            VerifierFailClass::ALL
                .iter()
                .map(|c| format!("fail_class {}", c.as_str())),
        );
        docket_verifier::rules::listing_of(lines)
    };
    match engine {
        VERIFIER_ENGINE => Some(docket_verifier::rules::rule_listing().to_string()),
        IMPORT_ENGINE => Some(lines(IMPORT_RULES)),
        DEADLINE_ENGINE => Some(lines(DEADLINE_RULES)),
        _ => None,
    }
}

/// The listing of the import engine.
pub fn import_listing() -> String {
    listing(IMPORT_ENGINE).unwrap_or_default()
}

/// The listing of the deadline engine.
pub fn deadline_listing() -> String {
    listing(DEADLINE_ENGINE).unwrap_or_default()
}

/// Every engine this build knows, by name.
pub const ENGINES: [&str; 3] = [VERIFIER_ENGINE, IMPORT_ENGINE, DEADLINE_ENGINE];

impl Provenance {
    /// The provenance this build records for `engine` (None for an unknown
    /// engine).
    pub fn current(engine: &str) -> Option<Provenance> {
        let listing = listing(engine)?;
        let version = if engine == VERIFIER_ENGINE {
            docket_verifier::rules::ENGINE_VERSION
        } else {
            env!("CARGO_PKG_VERSION")
        };
        Some(Provenance {
            name: engine.to_string(),
            version: version.to_string(),
            rules_digest: docket_verifier::rules::digest_of(&listing),
        })
    }

    /// The seed verdict engine's provenance.
    pub fn verifier() -> Provenance {
        Provenance {
            name: VERIFIER_ENGINE.into(),
            version: docket_verifier::rules::ENGINE_VERSION.into(),
            rules_digest: docket_verifier::rules::rules_digest().to_string(),
        }
    }

    /// The import engine's provenance.
    pub fn import() -> Provenance {
        Self::of(IMPORT_ENGINE, &import_listing())
    }

    /// The deadline engine's provenance.
    pub fn deadline() -> Provenance {
        Self::of(DEADLINE_ENGINE, &deadline_listing())
    }

    fn of(name: &str, listing: &str) -> Provenance {
        Provenance {
            name: name.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            rules_digest: docket_verifier::rules::digest_of(listing),
        }
    }

    /// As a JSON value (for payloads built as JSON).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "version": self.version,
            "rules_digest": self.rules_digest,
        })
    }
}

/// Reads and checks an `engine` object (every violation into `f`); the
/// provenance when it is well formed.
pub(crate) fn read_engine(f: &mut Fields<'_>, required: bool) -> Option<Provenance> {
    let v = match f.map.get("engine") {
        None | Some(serde_json::Value::Null) => {
            if required {
                f.violate("engine", "required field is missing");
            }
            return None;
        }
        Some(v) => v,
    };
    let Some(obj) = v.as_object() else {
        f.violate("engine", "must be an object {name, version, rules_digest}");
        return None;
    };
    let (engine, violations) = engine_object(obj);
    for v in violations {
        f.violations.push(format!("engine/{v}"));
    }
    engine
}

/// Reads and checks the fields of an `engine` object: the provenance when
/// they are well formed, and every violation (relative to the object).
pub(crate) fn engine_object(
    obj: &serde_json::Map<String, serde_json::Value>,
) -> (Option<Provenance>, Vec<String>) {
    let mut g = Fields::new(obj);
    g.only(&["name", "version", "rules_digest"]);
    let name = g.text("name", true, MAX_LABEL).map(str::to_string);
    let version = g.text("version", true, MAX_LABEL).map(str::to_string);
    let digest = g.str("rules_digest", true).map(str::to_string);
    if let Some(d) = &digest
        && !is_sha256_hex(d)
    {
        g.violate("rules_digest", "must be 64 lower-case hex digits");
    }
    let engine = match (g.violations.is_empty(), name, version, digest) {
        (true, Some(name), Some(version), Some(rules_digest)) => Some(Provenance {
            name,
            version,
            rules_digest,
        }),
        _ => None,
    };
    (engine, g.violations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_have_distinct_stable_digests() {
        let v = Provenance::verifier();
        let i = Provenance::import();
        let d = Provenance::deadline();
        assert_eq!(Provenance::current(VERIFIER_ENGINE), Some(v.clone()));
        assert_eq!(Provenance::current(IMPORT_ENGINE), Some(i.clone()));
        assert_eq!(Provenance::current(DEADLINE_ENGINE), Some(d.clone()));
        assert_eq!(Provenance::current("nope"), None);
        assert_ne!(v.rules_digest, i.rules_digest);
        assert_ne!(i.rules_digest, d.rules_digest);
        // The digest is SHA-256 of the listing text.
        assert_eq!(
            i.rules_digest,
            docket_verifier::sha256_hex(import_listing().as_bytes())
        );
        let l = deadline_listing();
        assert!(l.starts_with("fail_class artifact_missing\n"));
        assert!(l.contains("rule deadline.verdict_missing FAIL verdict_missing 5\n"));
    }
}
