use std::path::PathBuf;

/// Everything that can go wrong *around* verification. Rule failures are not
/// errors: they become checks and findings in a [`crate::Verdict`]. The engine
/// turns every `VerifierError` it meets into a FAIL verdict (fail closed); the
/// variants reach callers only from the I/O helpers they call directly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifierError {
    /// The artifacts directory itself does not exist or is not a directory.
    /// Callers report "missing required artifacts" (exit code 4).
    #[error("artifacts directory {path} is missing or not a directory")]
    ArtifactsDirMissing { path: PathBuf },

    /// An artifact exists but could not be read (permissions, I/O error).
    /// Callers treat the evidence as unusable: the verdict is FAIL.
    #[error("artifact {name} is unreadable: {source}")]
    ArtifactUnreadable {
        name: String,
        #[source]
        source: std::io::Error,
    },

    /// An artifact name escapes the artifacts root (absolute, `..`, empty
    /// component). Callers must refuse the name; it is never read.
    #[error("artifact name {name:?} is not a relative path inside the artifacts root")]
    InvalidArtifactName { name: String },

    /// An artifact is larger than [`crate::engine::MAX_ARTIFACT_BYTES`]; it is
    /// not read. Callers treat it as unjudgeable: the verdict is FAIL
    /// (`VERIFIER_ERROR`); split or compress the evidence.
    #[error("artifact {name} is {size} bytes, over the {limit}-byte limit")]
    ArtifactTooLarge { name: String, size: u64, limit: u64 },

    /// A document could not be decoded; `violations` lists every broken rule.
    /// Callers show the list (exit code 2 for a task contract).
    #[error("{document} is invalid: {} violation(s)", violations.len())]
    InvalidDocument {
        document: &'static str,
        violations: Vec<crate::Violation>,
    },

    /// A bug or panic inside the verifier itself. Callers record a FAIL with
    /// reason `VERIFIER_ERROR` and report the message to the verifier owners.
    #[error("internal verifier error in {context}: {message}")]
    Internal { context: String, message: String },
}
