//! The one place where errors become gRPC statuses.
//!
//! | `LedgerError` | gRPC code | message |
//! | --- | --- | --- |
//! | `Invalid`, `Malformed` | `INVALID_ARGUMENT` | every violated rule, `; `-separated |
//! | `BadSignature` | `UNAUTHENTICATED` | |
//! | `PermissionDenied` | `PERMISSION_DENIED` | |
//! | `NotFound` | `NOT_FOUND` | |
//! | `AlreadyExists` | `ALREADY_EXISTS` | |
//! | `FailedPrecondition` | `FAILED_PRECONDITION` | |
//! | `ResourceExhausted` | `RESOURCE_EXHAUSTED` | names the limit |
//! | `Corrupt`, `Store` (sled corruption) | `DATA_LOSS` | relative locations (`event 7`, `log/`) |
//! | `Closed` | `UNAVAILABLE` (`DATA_LOSS` when the stop was for damage) | after a fail-stop: [`stopped`] |
//! | `Io` with a full disk or quota | `RESOURCE_EXHAUSTED` | "the server's disk is full (see its log)" |
//! | `Io`, `Store` (I/O) | `UNAVAILABLE` | "I/O error on the server (see its log)" |
//! | `Merkle` (a leaf or size the tree does not have) | `OUT_OF_RANGE` | |
//! | anything else (`Store` bugs, other `Merkle`/`Note` failures) | `INTERNAL` | logged |
//!
//! Requests tonic refuses before a handler runs are classified by
//! [`classify_transport`]: a body that does not decode as the request
//! message (bad protobuf, invalid UTF-8 in a `string`, a truncated frame) is
//! `INVALID_ARGUMENT`, a message over the size limit `RESOURCE_EXHAUSTED`
//! naming the limit (tonic says `INTERNAL` and `OUT_OF_RANGE`).
//!
//! No message names an absolute server path: I/O details go to the server
//! log only, and the messages of other server-side failures (`DATA_LOSS`,
//! `UNAVAILABLE`, `INTERNAL`) pass through [`scrub_paths`].
//!
//! Every status also carries the exit code the embedded CLI would have used
//! for the same error, in the `docket-exit-code` metadata entry, so that
//! `docket --server URL …` exits exactly like `docket --data DIR …`.

use docket_domain::LedgerError;
use docket_domain::merkle::MerkleError;
use tonic::{Code, Status};

use crate::exit;

/// Metadata key carrying the CLI exit code equivalent of an error status.
pub const EXIT_CODE_METADATA: &str = "docket-exit-code";

/// Binary metadata key carrying an `Invalid` error's rule list as JSON
/// (`{"what": …, "violations": […]}`), so a client rebuilds the very error
/// the embedded ledger returns (same message, same `--json` output).
pub const VIOLATIONS_METADATA: &str = "docket-violations-bin";

/// Whether an I/O error means the disk (or a disk quota) is full.
fn disk_full(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    ) || e.raw_os_error() == Some(libc::ENOSPC)
        || e.raw_os_error() == Some(libc::EDQUOT)
}

/// The gRPC code for a ledger error (the mapping table above).
#[must_use]
pub fn code_for(e: &LedgerError) -> Code {
    match e {
        LedgerError::Invalid { .. } | LedgerError::Malformed { .. } => Code::InvalidArgument,
        LedgerError::BadSignature { .. } => Code::Unauthenticated,
        LedgerError::PermissionDenied { .. } => Code::PermissionDenied,
        LedgerError::NotFound { .. } => Code::NotFound,
        LedgerError::AlreadyExists { .. } => Code::AlreadyExists,
        LedgerError::FailedPrecondition(_) => Code::FailedPrecondition,
        LedgerError::ResourceExhausted(_) => Code::ResourceExhausted,
        LedgerError::Corrupt { .. }
        | LedgerError::Store {
            source: sled::Error::Corruption { .. },
            ..
        } => Code::DataLoss,
        LedgerError::Closed(_) => Code::Unavailable,
        LedgerError::Io { source, .. } if disk_full(source) => Code::ResourceExhausted,
        LedgerError::Store {
            source: sled::Error::Io(source),
            ..
        } if disk_full(source) => Code::ResourceExhausted,
        LedgerError::Io { .. }
        | LedgerError::Store {
            source: sled::Error::Io(_),
            ..
        } => Code::Unavailable,
        LedgerError::Merkle(
            MerkleError::IndexOutOfRange { .. } | MerkleError::SizeOrder { .. },
        ) => Code::OutOfRange,
        _ => Code::Internal,
    }
}

/// The client-facing message of a ledger error: I/O failures say only that
/// they happened (the detail, with its server path, goes to the log);
/// server-side failures are their display text with absolute paths removed;
/// a refusal of the request is its display text unchanged (it speaks of
/// the request: rules, JSON pointers such as `/task_id`, keys, digests).
#[must_use]
pub fn message_for(e: &LedgerError) -> String {
    match (e, code_for(e)) {
        (LedgerError::Io { .. } | LedgerError::Store { .. }, Code::ResourceExhausted) => {
            "the server's disk is full (see its log)".into()
        }
        (LedgerError::Io { .. } | LedgerError::Store { .. }, Code::Unavailable) => {
            "I/O error on the server (see its log)".into()
        }
        (_, Code::DataLoss | Code::Unavailable | Code::Internal) => scrub_paths(&e.to_string()),
        _ => e.to_string(),
    }
}

/// Converts a ledger error into the status a client sees (see the table
/// above). Server-side failures are logged with their full detail.
#[must_use]
pub fn to_status(e: &LedgerError) -> Status {
    let code = code_for(e);
    match code {
        Code::Internal | Code::DataLoss => {
            tracing::error!(error = %e, "error answering a request");
        }
        Code::Unavailable | Code::ResourceExhausted
            if matches!(e, LedgerError::Io { .. } | LedgerError::Store { .. }) =>
        {
            tracing::error!(error = %e, "storage error answering a request");
        }
        _ => {}
    }
    let mut status = with_exit_code(Status::new(code, message_for(e)), exit::for_ledger_error(e));
    if let LedgerError::Invalid { what, violations } = e {
        let json = serde_json::json!({"what": what, "violations": violations}).to_string();
        status.metadata_mut().insert_bin(
            VIOLATIONS_METADATA,
            tonic::metadata::MetadataValue::from_bytes(json.as_bytes()),
        );
    }
    status
}

/// The ledger stopped accepting writes (fail-stop), naming the reason
/// (already free of server paths): after a storage error `UNAVAILABLE`
/// (exit 10: fix the cause, restart); after its background check found
/// damage `DATA_LOSS` (exit 5: a restart does not help, see
/// docs/OPERATIONS.md, "When the ledger reports damage").
#[must_use]
pub fn stopped(reason: &str) -> Status {
    match reason.strip_prefix(docket_log::sequencer::DAMAGE_STOP) {
        Some(damage) => with_exit_code(
            Status::data_loss(format!(
                "the ledger stopped on damage found by its background check: {damage}; \
                 restore from a backup or recover its intact prefix (docs/OPERATIONS.md)"
            )),
            exit::HARD_FAIL,
        ),
        None => unavailable(format!(
            "the ledger stopped after a storage error: {reason}; restart after fixing the cause"
        )),
    }
}

/// The reason of a fail-stop as the log core reports it, for clients: the
/// log core's prefix dropped, paths under `data_dir` made relative to it,
/// any other absolute path removed.
#[must_use]
pub fn failure_reason(failure: &str, data_dir: &std::path::Path) -> String {
    let reason = failure
        .strip_prefix("fail-stop after a storage error: ")
        .unwrap_or(failure);
    let mut text = reason.to_string();
    let mut dirs = vec![data_dir.to_path_buf()];
    if let Ok(c) = data_dir.canonicalize() {
        dirs.push(c);
    }
    for d in dirs {
        let d = d.display().to_string();
        if d.len() > 1 {
            text = text
                .replace(&format!("{d}/"), "")
                .replace(&d, "the data directory");
        }
    }
    scrub_paths(&text)
}

/// Replaces every absolute path in `s` (a `/` that starts a word, a quoted
/// string or a parenthesis, followed by more than itself) with
/// `<server path>`.
#[must_use]
pub fn scrub_paths(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.char_indices().peekable();
    let mut prev: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        let starts_word = prev.is_none_or(|p| p.is_whitespace() || "\"'`(=[{<".contains(p));
        let next_is_path = s[i + c.len_utf8()..]
            .chars()
            .next()
            .is_some_and(|n| n.is_alphanumeric() || "._-~".contains(n));
        if c == '/' && starts_word && next_is_path {
            let mut end = s.len();
            while let Some(&(j, n)) = chars.peek() {
                if n.is_whitespace() || "\"'`)]},;<>".contains(n) {
                    end = j;
                    break;
                }
                chars.next();
            }
            // A trailing `:` or `.` belongs to the sentence, not the path.
            let token = &s[i..end];
            let trimmed = token.trim_end_matches([':', '.']);
            out.push_str("<server path>");
            out.push_str(&token[trimmed.len()..]);
            prev = token.chars().last();
            continue;
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

/// tonic's own refusals of a request body, as Docket answers them: a body
/// that does not decode as the request message (tonic: `INTERNAL`) is
/// `INVALID_ARGUMENT`; a message over the size limit (tonic:
/// `OUT_OF_RANGE`) is `RESOURCE_EXHAUSTED` naming the limit. `None` for
/// every other status.
#[must_use]
pub fn classify_transport(s: &Status) -> Option<Status> {
    let m = s.message();
    match s.code() {
        Code::Internal
            if m.starts_with("failed to decode Protobuf message")
                || m == "Unexpected EOF decoding stream."
                || m == "Missing request message." =>
        {
            Some(with_exit_code(
                Status::invalid_argument(format!(
                    "the request body is not a valid protobuf encoding of this RPC's request message: {m}"
                )),
                exit::INVALID,
            ))
        }
        Code::OutOfRange if m.starts_with("Error, decoded message length too large") => {
            let numbers: Vec<u64> = m
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|t| t.parse().ok())
                .collect();
            let text = match numbers.as_slice() {
                [found, limit] => format!(
                    "resource exhausted: the request message is {found} bytes; the server's limit is {limit} bytes per message"
                ),
                _ => format!(
                    "resource exhausted: the request message is over the server's limit ({m})"
                ),
            };
            Some(with_exit_code(
                Status::resource_exhausted(text),
                exit::INVALID,
            ))
        }
        _ => None,
    }
}

/// A status a handler got while reading its request stream, classified as
/// [`classify_transport`] does (unchanged when it is something else).
#[must_use]
pub fn inbound(s: Status) -> Status {
    classify_transport(&s).unwrap_or(s)
}

/// Converts an export error: a ledger error keeps its mapping; a bad
/// request is `INVALID_ARGUMENT`, a missing task or empty log `NOT_FOUND`.
#[must_use]
pub fn export_status(e: &docket_domain::export::ExportError) -> Status {
    use docket_domain::export::ExportError;
    match e {
        ExportError::Ledger(l) => to_status(l),
        ExportError::Request(_) => {
            with_exit_code(Status::invalid_argument(e.to_string()), exit::INVALID)
        }
        ExportError::NotFound(_) => with_exit_code(Status::not_found(e.to_string()), exit::MISSING),
        ExportError::Io { .. } => {
            tracing::error!(error = %e, "export failed");
            with_exit_code(
                Status::unavailable("I/O error on the server (see its log)"),
                exit::UNEXPECTED,
            )
        }
        _ => {
            tracing::error!(error = %e, "export failed");
            with_exit_code(
                Status::internal(scrub_paths(&e.to_string())),
                exit::UNEXPECTED,
            )
        }
    }
}

/// A request that is malformed before it reaches the ledger (wrong field
/// sizes, wrong kind for the RPC, …): `INVALID_ARGUMENT`, exit code 2.
#[must_use]
pub fn invalid(violations: &[String]) -> Status {
    with_exit_code(
        Status::invalid_argument(format!("invalid request: {}", violations.join("; "))),
        exit::INVALID,
    )
}

/// `OUT_OF_RANGE` with the exit code the embedded command would give
/// (`MISSING` for a size beyond the head, `INVALID` for an inverted range).
#[must_use]
pub fn out_of_range(message: impl Into<String>, exit_code: u8) -> Status {
    with_exit_code(Status::out_of_range(message.into()), exit_code)
}

/// `OUT_OF_RANGE` carrying a ledger error's message and exit code (a
/// request for a leaf or tree size the log does not have).
#[must_use]
pub fn out_of_range_from(e: &LedgerError) -> Status {
    with_exit_code(
        Status::out_of_range(e.to_string()),
        exit::for_ledger_error(e),
    )
}

/// The server is shutting down or the ledger stopped: `UNAVAILABLE`.
#[must_use]
pub fn unavailable(message: impl Into<String>) -> Status {
    with_exit_code(Status::unavailable(message.into()), exit::UNEXPECTED)
}

/// A join error of a blocking task (a panic in ledger code, a bug):
/// `INTERNAL`.
#[must_use]
pub fn join_error(e: &tokio::task::JoinError) -> Status {
    tracing::error!(error = %e, "a blocking ledger call failed");
    with_exit_code(
        Status::internal("internal error on the server (see its log)"),
        exit::UNEXPECTED,
    )
}

/// Attaches the CLI exit code to a status.
#[must_use]
pub fn with_exit_code(mut status: Status, code: u8) -> Status {
    if let Ok(v) = code.to_string().parse() {
        status.metadata_mut().insert(EXIT_CODE_METADATA, v);
    }
    status
}

/// The CLI exit code for a status received from a server: the code the
/// server attached, else [`exit::for_status`].
#[must_use]
pub fn exit_code_of(status: &Status) -> u8 {
    let sent = status
        .metadata()
        .get(EXIT_CODE_METADATA)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok());
    match sent {
        Some(code) => code,
        None if is_local_transport_failure(status) => exit::UNEXPECTED,
        None => exit::for_status(status),
    }
}

/// Whether `status` was made by this client's own transport (a connection
/// that broke, an HTTP/2 error of the local library) rather than sent by a
/// server: such a status carries its cause, and no server's exit code. A
/// network failure (exit 10), whatever gRPC code the library chose for it
/// (h2's `ENHANCE_YOUR_CALM` becomes `RESOURCE_EXHAUSTED`, which a server
/// uses for a refusal).
#[must_use]
pub fn is_local_transport_failure(status: &Status) -> bool {
    status.metadata().get(EXIT_CODE_METADATA).is_none()
        && std::error::Error::source(status).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_status_the_client_transport_made_then_it_is_a_network_failure_not_a_refusal() {
        // Given the status tonic makes of the local h2 library's GOAWAY
        // (ENHANCE_YOUR_CALM, which tonic maps to RESOURCE_EXHAUSTED),
        let local = Status::from_error(Box::new(h2::Error::from(h2::Reason::ENHANCE_YOUR_CALM)));
        assert_eq!(local.code(), Code::ResourceExhausted);
        // then it is a network failure (exit 10),
        assert!(is_local_transport_failure(&local));
        assert_eq!(exit_code_of(&local), exit::UNEXPECTED);
        // while the same code sent by a server, with or without its exit
        // code, is a refusal (exit 2).
        let sent = Status::resource_exhausted("the write queue is full");
        assert!(!is_local_transport_failure(&sent));
        assert_eq!(exit_code_of(&sent), exit::INVALID);
        let coded = with_exit_code(Status::resource_exhausted("full"), exit::INVALID);
        assert!(!is_local_transport_failure(&coded));
        assert_eq!(exit_code_of(&coded), exit::INVALID);
    }

    #[test]
    fn mapping_table() {
        let cases: Vec<(LedgerError, Code)> = vec![
            (
                LedgerError::Invalid {
                    what: "task".into(),
                    violations: vec!["a".into(), "b".into()],
                },
                Code::InvalidArgument,
            ),
            (
                LedgerError::Malformed {
                    what: "event",
                    detail: "x".into(),
                },
                Code::InvalidArgument,
            ),
            (
                LedgerError::BadSignature {
                    seq: None,
                    detail: "x".into(),
                },
                Code::Unauthenticated,
            ),
            (
                LedgerError::PermissionDenied {
                    kind: "k".into(),
                    author: "a".into(),
                    reason: "r".into(),
                },
                Code::PermissionDenied,
            ),
            (LedgerError::NotFound { what: "x".into() }, Code::NotFound),
            (
                LedgerError::AlreadyExists { what: "x".into() },
                Code::AlreadyExists,
            ),
            (
                LedgerError::FailedPrecondition("x".into()),
                Code::FailedPrecondition,
            ),
            (
                LedgerError::ResourceExhausted("x".into()),
                Code::ResourceExhausted,
            ),
            (
                LedgerError::Corrupt {
                    location: "l".into(),
                    detail: "d".into(),
                },
                Code::DataLoss,
            ),
            (LedgerError::Closed("x".into()), Code::Unavailable),
        ];
        for (e, code) in cases {
            let s = to_status(&e);
            assert_eq!(s.code(), code, "{e}");
            assert_eq!(exit_code_of(&s), exit::for_ledger_error(&e), "{e}");
        }
        let s = to_status(&LedgerError::Invalid {
            what: "task".into(),
            violations: vec!["rule one".into(), "rule two".into()],
        });
        assert!(s.message().contains("rule one") && s.message().contains("rule two"));
    }

    #[test]
    fn a_stop_for_damage_is_data_loss_exit_5_and_a_stop_for_a_storage_error_is_unavailable_exit_10()
    {
        // Given the failure texts the log core reports (through
        // failure_reason, which drops its prefix and server paths),
        let data = std::path::Path::new("/srv/docket");
        let damage = failure_reason(
            &format!(
                "{}seq 100: the leaf hash of the bytes differs",
                docket_log::sequencer::DAMAGE_STOP
            ),
            data,
        );
        let storage = failure_reason(
            "fail-stop after a storage error: I/O error on /srv/docket/tiles/commits",
            data,
        );
        // then a stop for damage answers DATA_LOSS with exit 5, naming it,
        let s = stopped(&damage);
        assert_eq!(s.code(), Code::DataLoss);
        assert_eq!(exit_code_of(&s), exit::HARD_FAIL);
        assert!(s.message().contains("seq 100"), "{}", s.message());
        // and a stop after a storage error UNAVAILABLE with exit 10.
        let s = stopped(&storage);
        assert_eq!(s.code(), Code::Unavailable);
        assert_eq!(exit_code_of(&s), exit::UNEXPECTED);
        assert!(!s.message().contains("/srv"), "{}", s.message());
    }

    #[test]
    fn io_errors_name_no_server_path() {
        let io = LedgerError::io(
            "/srv/docket/blobs/ab/abcd.tmp",
            std::io::Error::from_raw_os_error(libc::EIO),
        );
        let s = to_status(&io);
        assert_eq!(s.code(), Code::Unavailable);
        assert_eq!(s.message(), "I/O error on the server (see its log)");
        let full = LedgerError::io(
            "/srv/docket/blobs/ab/abcd.tmp",
            std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let s = to_status(&full);
        assert_eq!(s.code(), Code::ResourceExhausted);
        assert!(!s.message().contains("/srv"), "{}", s.message());
        let store = LedgerError::store(
            "applying a commit batch",
            sled::Error::Io(std::io::Error::from_raw_os_error(libc::EIO)),
        );
        assert_eq!(to_status(&store).code(), Code::Unavailable);
        let corrupt = LedgerError::store("reading", sled::Error::Corruption { at: None, bt: () });
        assert_eq!(to_status(&corrupt).code(), Code::DataLoss);
    }

    #[test]
    fn refusals_keep_their_text() {
        // JSON pointers look like paths; a refusal of the request keeps them.
        let e = LedgerError::Invalid {
            what: "task.registered".into(),
            violations: vec!["[task.type] /type: must be a JSON object".into()],
        };
        assert!(to_status(&e).message().contains("/type:"));
    }

    #[test]
    fn paths_are_scrubbed() {
        assert_eq!(
            scrub_paths("corruption at /srv/d/ledger.json: bad"),
            "corruption at <server path>: bad"
        );
        assert_eq!(
            scrub_paths(r#"could not acquire lock on "/tmp/x/log/db": busy"#),
            r#"could not acquire lock on "<server path>": busy"#
        );
        for keep in [
            "I/O error",
            "docket/v1/upload",
            "see https://example.com/x",
            "media type text/plain",
            "event 7 and log/",
            "a / b",
        ] {
            assert_eq!(scrub_paths(keep), keep);
        }
        let dir = std::path::Path::new("/srv/docket");
        assert_eq!(
            failure_reason(
                "fail-stop after a storage error: I/O error on /srv/docket/snapshots/keys.tmp: No space left",
                dir
            ),
            "I/O error on snapshots/keys.tmp: No space left"
        );
        assert_eq!(
            failure_reason(
                "fail-stop after a storage error: I/O error on /elsewhere/f: x",
                dir
            ),
            "I/O error on <server path>: x"
        );
    }

    #[test]
    fn transport_errors_are_classified() {
        let bad = Status::internal(
            "failed to decode Protobuf message: SignedStatement.kind: invalid string value: data is not UTF-8 encoded",
        );
        let s = classify_transport(&bad).expect("a decode error");
        assert_eq!(s.code(), Code::InvalidArgument);
        assert!(s.message().contains("not UTF-8"));
        assert_eq!(exit_code_of(&s), exit::INVALID);
        let big = Status::out_of_range(
            "Error, decoded message length too large: found 5242880 bytes, the limit is: 4194304 bytes",
        );
        let s = classify_transport(&big).expect("too large");
        assert_eq!(s.code(), Code::ResourceExhausted);
        assert!(s.message().contains("5242880") && s.message().contains("4194304"));
        assert!(classify_transport(&Status::internal("a real bug")).is_none());
        assert!(classify_transport(&Status::out_of_range("beyond the head")).is_none());
        assert_eq!(inbound(Status::cancelled("gone")).code(), Code::Cancelled);
    }
}
