//! The data-driven admission cases in `tests/cases/<rule>/*.json`: given
//! events (signed by named test keys), when one more statement, then the
//! outcome (admitted, refused with an error code and message fragments, or
//! a duplicate) and optionally what the projections hold afterwards.
//!
//! The format is described in `tests/cases/README.md`. Every case runs on
//! [`MemoryLog`], which admits statements with the ledger's own state
//! machine (`LedgerState::admit`, then `apply`) at the ledger times the case
//! states, plus the log's duplicate rule (a statement whose digest is in the
//! log is acknowledged as the first event that carried it; nothing is
//! appended and no rule runs).
//!
//! A case whose outcome differs fails the test, and so does a malformed
//! case file (unknown fields, unknown placeholders or templates, a given
//! event that is refused, a missing `then.code` for a refusal, ...): the
//! runner collects every failure and reports them all.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use docket_domain::event::Event;
use docket_domain::export::{LogSource as _, MemoryLog};
use docket_domain::{Ledger, LedgerError, LedgerOptions, LedgerState, Statement, oids};
use ed25519_dalek::SigningKey;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Ledger time of genesis: 2026-02-09T14:30:00Z.
const T0: u64 = 1_770_647_400_000;
/// Default step between two events, in ms.
const STEP_MS: u64 = 1_000;
const ORIGIN: &str = "cases.docket/rules";

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

// ------------------------------------------------------------ the format

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case shows, one sentence.
    description: String,
    /// Keys registered by `admin` right after genesis, in this order.
    #[serde(default)]
    keys: Vec<KeySpec>,
    /// Events appended (each must be admitted) before `when`.
    #[serde(default)]
    given: Vec<Step>,
    /// The statement under test.
    when: Step,
    /// Its expected outcome.
    then: Then,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeySpec {
    name: String,
    roles: Vec<String>,
    #[serde(default)]
    not_before_ms: Option<u64>,
    #[serde(default)]
    not_after_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    /// A name later steps use in placeholders (`${seq:LABEL}`, `${oid:LABEL}`).
    #[serde(default)]
    label: Option<String>,
    kind: String,
    /// The test key that signs the statement.
    by: String,
    /// The payload as JSON (placeholders and `$template` resolved); it is
    /// serialised compactly.
    #[serde(default)]
    payload: Option<Value>,
    /// The payload bytes verbatim (UTF-8), for payloads that are not JSON.
    #[serde(default)]
    payload_raw: Option<String>,
    /// Ledger time to append at (Unix ms); default: the previous event's + 1000.
    #[serde(default)]
    at_ms: Option<u64>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    Admitted,
    Refused,
    Duplicate,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Then {
    outcome: Outcome,
    /// For `refused`: the error code.
    #[serde(default)]
    code: Option<String>,
    /// For `refused`: fragments the error message must contain.
    #[serde(default)]
    message: Option<OneOrMany>,
    /// For `duplicate`: the label of the given event it duplicates.
    #[serde(default)]
    duplicate_of: Option<String>,
    /// Checks on the state after `when` (JSON pointers into the state).
    #[serde(default)]
    projection: Vec<ProjectionCheck>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectionCheck {
    pointer: String,
    #[serde(default)]
    equals: Option<Value>,
    #[serde(default)]
    absent: Option<bool>,
}

/// The error codes a refusal may name.
pub const CODES: &[&str] = &[
    "invalid",
    "permission_denied",
    "not_found",
    "already_exists",
    "failed_precondition",
    "resource_exhausted",
    "malformed",
    "bad_signature",
];

fn code_of(e: &LedgerError) -> &'static str {
    match e {
        LedgerError::Invalid { .. } => "invalid",
        LedgerError::PermissionDenied { .. } => "permission_denied",
        LedgerError::NotFound { .. } => "not_found",
        LedgerError::AlreadyExists { .. } => "already_exists",
        LedgerError::FailedPrecondition(_) => "failed_precondition",
        LedgerError::ResourceExhausted(_) => "resource_exhausted",
        LedgerError::Malformed { .. } => "malformed",
        LedgerError::BadSignature { .. } => "bad_signature",
        LedgerError::Corrupt { .. } => "corrupt",
        _ => "other",
    }
}

// ------------------------------------------------------------ keys

/// The test key called `name`: its secret is SHA-256("docket/test-key/" || name).
pub fn test_key(name: &str) -> SigningKey {
    let seed: [u8; 32] = Sha256::digest(format!("docket/test-key/{name}").as_bytes()).into();
    SigningKey::from_bytes(&seed)
}

fn pub_hex(k: &SigningKey) -> String {
    hex::encode(k.verifying_key().to_bytes())
}

// ------------------------------------------------------------ running

/// What happened to one statement.
enum Appended {
    Admitted { seq: u64 },
    Duplicate { seq: u64 },
    Refused(LedgerError),
}

/// Where a case runs.
enum Engine {
    /// The in-memory log, at the ledger times the case states.
    Memory(Box<MemoryLog>),
    /// A real ledger on disk (sled, fsync, the sequencer and its duplicate
    /// rule), at wall-clock times: only for cases whose outcome does not
    /// depend on time ([`time_free`]).
    Disk {
        ledger: Ledger,
        _dir: tempfile::TempDir,
    },
}

struct Run {
    engine: Engine,
    ledger_key: SigningKey,
    templates: Map<String, Value>,
    last_ms: u64,
    labels: HashMap<String, u64>,
    digests: HashMap<[u8; 32], u64>,
}

impl Run {
    fn new(templates: Map<String, Value>, disk: bool) -> Result<Self, String> {
        let (engine, ledger_key) = if disk {
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            let ledger = Ledger::create(dir.path(), Some(ORIGIN), LedgerOptions::default())
                .map_err(|e| format!("create: {e}"))?;
            let ledger_key = ledger.ledger_key().clone();
            let genesis = json!({
                "origin": ledger.origin(),
                "ledger_key": pub_hex(&ledger_key),
                "admin_key": pub_hex(&test_key("admin")),
                "ledger_roles": ["verifier", "custodian"],
            });
            ledger
                .append(Statement::sign(
                    "ledger.genesis",
                    genesis.to_string().into_bytes(),
                    &ledger_key,
                ))
                .map_err(|e| format!("genesis: {e}"))?;
            (Engine::Disk { ledger, _dir: dir }, ledger_key)
        } else {
            let log = MemoryLog::genesis(ORIGIN, test_key("ledger"), &test_key("admin"), T0)
                .map_err(|e| format!("genesis: {e}"))?;
            (Engine::Memory(Box::new(log)), test_key("ledger"))
        };
        Ok(Self {
            engine,
            ledger_key,
            templates,
            last_ms: T0,
            labels: HashMap::new(),
            digests: HashMap::new(),
        })
    }

    /// The key called `name` (`ledger`: this run's ledger key).
    fn key(&self, name: &str) -> SigningKey {
        if name == "ledger" {
            self.ledger_key.clone()
        } else {
            test_key(name)
        }
    }

    fn len(&self) -> u64 {
        match &self.engine {
            Engine::Memory(log) => log.len(),
            Engine::Disk { ledger, .. } => ledger.len(),
        }
    }

    fn event_bytes(&self, seq: u64) -> Result<Vec<u8>, String> {
        match &self.engine {
            Engine::Memory(log) => log
                .event_bytes(seq)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| format!("no event {seq}")),
            Engine::Disk { ledger, .. } => ledger
                .event(seq)
                .map(|e| e.encode())
                .map_err(|e| format!("event {seq}: {e}")),
        }
    }

    fn state(&self) -> LedgerState {
        match &self.engine {
            Engine::Memory(log) => log.state().clone(),
            Engine::Disk { ledger, .. } => ledger.state().clone(),
        }
    }

    fn event(&self, seq: u64) -> Result<Event, String> {
        Event::decode(&self.event_bytes(seq)?).map_err(|e| format!("event {seq}: {e}"))
    }

    fn label_seq(&self, label: &str) -> Result<u64, String> {
        self.labels
            .get(label)
            .copied()
            .ok_or_else(|| format!("unknown label {label:?} (label an earlier step)"))
    }

    /// The value of one placeholder `${NAME:ARG}`.
    fn placeholder(&self, name: &str, arg: &str) -> Result<Value, String> {
        Ok(match name {
            "pub" => json!(pub_hex(&self.key(arg))),
            "seq" => json!(self.label_seq(arg)?),
            "time" => json!(self.event(self.label_seq(arg)?)?.recorded_at_ms),
            "oid" => {
                let event = self.event(self.label_seq(arg)?)?;
                if event.kind != "evidence.registered" {
                    return Err(format!("${{oid:{arg}}}: {arg} is a {}", event.kind));
                }
                json!(oids::of_event(&event))
            }
            "sha256" => json!(hex::encode(Sha256::digest(arg.as_bytes()))),
            "size" => json!(arg.len()),
            other => return Err(format!("unknown placeholder ${{{other}:...}}")),
        })
    }

    /// Resolves every `${...}` in a string: a string that is exactly one
    /// placeholder takes its JSON value (numbers stay numbers); otherwise
    /// each is replaced by its text.
    fn resolve_str(&self, s: &str) -> Result<Value, String> {
        let mut out = String::new();
        let mut rest = s;
        let mut whole: Option<Value> = None;
        while let Some(start) = rest.find("${") {
            let end = rest[start..]
                .find('}')
                .ok_or_else(|| format!("unterminated placeholder in {s:?}"))?
                + start;
            let inner = &rest[start + 2..end];
            let (name, arg) = inner
                .split_once(':')
                .ok_or_else(|| format!("placeholder ${{{inner}}} needs NAME:ARG"))?;
            let v = self.placeholder(name, arg)?;
            if start == 0 && end + 1 == rest.len() && out.is_empty() {
                whole = Some(v.clone());
            }
            out.push_str(&rest[..start]);
            match &v {
                Value::String(t) => out.push_str(t),
                other => out.push_str(&other.to_string()),
            }
            rest = &rest[end + 1..];
        }
        if let Some(v) = whole {
            return Ok(v);
        }
        out.push_str(rest);
        Ok(Value::String(out))
    }

    fn resolve(&self, v: &Value) -> Result<Value, String> {
        Ok(match v {
            Value::String(s) => self.resolve_str(s)?,
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|x| self.resolve(x))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(m) => {
                let mut m = m.clone();
                match m.remove("$template") {
                    None => {
                        let mut resolved = Map::new();
                        for (k, x) in &m {
                            resolved.insert(k.clone(), self.resolve(x)?);
                        }
                        Value::Object(resolved)
                    }
                    // The template, patched by the other members, then
                    // resolved as a whole (an override replaces a
                    // template's placeholder before it is resolved).
                    Some(Value::String(name)) => {
                        let mut base = self
                            .templates
                            .get(&name)
                            .cloned()
                            .ok_or_else(|| format!("unknown template {name:?}"))?;
                        merge_patch(&mut base, &Value::Object(m));
                        self.resolve(&base)?
                    }
                    Some(other) => return Err(format!("$template must be a name, not {other}")),
                }
            }
            other => other.clone(),
        })
    }

    fn statement(&self, step: &Step) -> Result<Statement, String> {
        let payload = match (&step.payload, &step.payload_raw) {
            (Some(p), None) => {
                serde_json::to_vec(&self.resolve(p)?).map_err(|e| format!("payload: {e}"))?
            }
            (None, Some(raw)) => raw.clone().into_bytes(),
            _ => return Err("a step needs exactly one of payload and payload_raw".into()),
        };
        Ok(Statement::sign(&step.kind, payload, &self.key(&step.by)))
    }

    /// Appends `stmt` as the log does: a known digest is a duplicate,
    /// otherwise admission and the fold.
    fn append(&mut self, stmt: Statement, at_ms: Option<u64>) -> Appended {
        let log = match &mut self.engine {
            Engine::Memory(log) => log,
            Engine::Disk { ledger, .. } => {
                return match ledger.append(stmt) {
                    Ok(r) if r.duplicate => Appended::Duplicate { seq: r.seq },
                    Ok(r) => Appended::Admitted { seq: r.seq },
                    Err(e) => Appended::Refused(e),
                };
            }
        };
        let digest = stmt.digest();
        if let Some(seq) = self.digests.get(&digest) {
            return Appended::Duplicate { seq: *seq };
        }
        let time = at_ms.unwrap_or(self.last_ms + STEP_MS);
        match log.append(stmt, time) {
            Ok(seq) => {
                self.digests.insert(digest, seq);
                self.last_ms = time.max(self.last_ms);
                Appended::Admitted { seq }
            }
            Err(e) => Appended::Refused(e),
        }
    }

    fn step(&mut self, step: &Step, what: &str) -> Result<(), String> {
        let stmt = self.statement(step).map_err(|e| format!("{what}: {e}"))?;
        match self.append(stmt, step.at_ms) {
            Appended::Admitted { seq } => {
                if let Some(label) = &step.label
                    && self.labels.insert(label.clone(), seq).is_some()
                {
                    return Err(format!("{what}: label {label:?} is used twice"));
                }
                Ok(())
            }
            Appended::Duplicate { seq } => Err(format!(
                "{what} ({}) is a duplicate of event {seq}; given events must be admitted",
                step.kind
            )),
            Appended::Refused(e) => Err(format!(
                "{what} ({} by {}) was refused; given events must be admitted: {e}",
                step.kind, step.by
            )),
        }
    }
}

/// RFC 7386 JSON merge patch: objects merge, `null` deletes, anything else
/// replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else {
        return;
    };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn messages(m: &Option<OneOrMany>) -> Vec<String> {
    match m {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s.clone()],
        Some(OneOrMany::Many(v)) => v.clone(),
    }
}

/// Checks that `then` is well formed for its outcome.
fn check_then(then: &Then) -> Result<(), String> {
    match then.outcome {
        Outcome::Refused => {
            let code = then.code.as_deref().ok_or("then: a refusal needs a code")?;
            if !CODES.contains(&code) {
                return Err(format!(
                    "then.code {code:?} is not one of {}",
                    CODES.join(", ")
                ));
            }
            if then.duplicate_of.is_some() {
                return Err("then.duplicate_of is only for outcome duplicate".into());
            }
        }
        Outcome::Admitted | Outcome::Duplicate => {
            if then.code.is_some() || then.message.is_some() {
                return Err("then.code and then.message are only for outcome refused".into());
            }
            if (then.outcome == Outcome::Duplicate) != then.duplicate_of.is_some() {
                return Err("then.duplicate_of is required for, and only for, duplicate".into());
            }
        }
    }
    for p in &then.projection {
        if p.equals.is_some() == p.absent.is_some() {
            return Err(format!(
                "projection check {:?} needs exactly one of equals and absent",
                p.pointer
            ));
        }
    }
    Ok(())
}

/// Runs one case; `Err` says how the outcome differs or why the case is
/// malformed.
/// Runs one case; `Ok` is its admission vector (the log before `when`,
/// the statement, where it lands and the expected outcome), `Err` says how
/// the outcome differs or why the case is malformed.
fn run_case(text: &str, templates: &Map<String, Value>) -> Result<Value, String> {
    run_case_on(text, templates, false)
}

/// Whether a case's outcome is independent of the ledger times (no stated
/// time, no validity window, no expiry, deadline or sweep), so that it can
/// also run on a real ledger, whose clock is the wall clock.
fn time_free(text: &str) -> bool {
    ![
        "\"at_ms\"",
        "not_before_ms",
        "not_after_ms",
        "expires_at",
        "as_of_ms",
        "verdict_deadline",
        "retention.sweep",
        "${time:",
    ]
    .iter()
    .any(|m| text.contains(m))
}

fn run_case_on(text: &str, templates: &Map<String, Value>, disk: bool) -> Result<Value, String> {
    let case: Case = serde_json::from_str(text).map_err(|e| format!("malformed case file: {e}"))?;
    if case.description.trim().is_empty() {
        return Err("malformed case file: description is empty".into());
    }
    check_then(&case.then).map_err(|e| format!("malformed case file: {e}"))?;
    let mut run = Run::new(templates.clone(), disk)?;
    for k in &case.keys {
        let mut p = json!({"public_key": pub_hex(&test_key(&k.name)), "roles": k.roles});
        if let Some(t) = k.not_before_ms {
            p["not_before_ms"] = json!(t);
        }
        if let Some(t) = k.not_after_ms {
            p["not_after_ms"] = json!(t);
        }
        let step = Step {
            label: Some(format!("key:{}", k.name)),
            kind: "key.registered".into(),
            by: "admin".into(),
            payload: Some(p),
            payload_raw: None,
            at_ms: None,
        };
        run.step(&step, &format!("keys[{}]", k.name))
            .map_err(|e| format!("malformed case file: {e}"))?;
    }
    for (i, step) in case.given.iter().enumerate() {
        run.step(step, &format!("given[{i}]"))
            .map_err(|e| format!("malformed case file: {e}"))?;
    }
    let stmt = run
        .statement(&case.when)
        .map_err(|e| format!("malformed case file: when: {e}"))?;
    let log: Vec<String> = (0..run.len())
        .map(|seq| B64.encode(run.event_bytes(seq).unwrap_or_default()))
        .collect();
    let position = json!({
        "seq": run.len(),
        "recorded_at_ms": case.when.at_ms.unwrap_or(run.last_ms + STEP_MS).max(run.last_ms),
    });
    let statement = json!({
        "kind": stmt.kind,
        "author": hex::encode(stmt.author),
        "payload_b64": B64.encode(&stmt.payload),
        "signature": hex::encode(stmt.signature),
    });
    let got = run.append(stmt, case.when.at_ms);
    if let (Appended::Admitted { seq }, Some(label)) = (&got, &case.when.label)
        && run.labels.insert(label.clone(), *seq).is_some()
    {
        return Err(format!(
            "malformed case file: when: label {label:?} is used twice"
        ));
    }
    let then = &case.then;
    let mut expected = json!({});
    match (&got, then.outcome) {
        (Appended::Admitted { .. }, Outcome::Admitted) => {
            expected["outcome"] = json!("admitted");
        }
        (Appended::Duplicate { seq }, Outcome::Duplicate) => {
            expected["outcome"] = json!("duplicate");
            expected["duplicate_of"] = json!(seq);
            // Invariant: check_then made duplicate_of present for Duplicate.
            let label = then.duplicate_of.as_deref().unwrap_or_default();
            let want = run
                .label_seq(label)
                .map_err(|e| format!("malformed case file: then.duplicate_of: {e}"))?;
            if *seq != want {
                return Err(format!(
                    "expected a duplicate of {label} (seq {want}), got a duplicate of seq {seq}"
                ));
            }
        }
        (Appended::Refused(e), Outcome::Refused) => {
            let code = code_of(e);
            let want = then.code.as_deref().unwrap_or_default();
            if code != want {
                return Err(format!("expected refusal {want}, got {code}: {e}"));
            }
            expected["outcome"] = json!("refused");
            expected["code"] = json!(code);
            expected["message"] = json!(messages(&then.message));
            let text = e.to_string();
            for m in messages(&then.message) {
                if !text.contains(&m) {
                    return Err(format!(
                        "the refusal does not contain {m:?}; it says: {text}"
                    ));
                }
            }
        }
        (got, want) => {
            let got = match got {
                Appended::Admitted { seq } => format!("admitted at seq {seq}"),
                Appended::Duplicate { seq } => format!("a duplicate of seq {seq}"),
                Appended::Refused(e) => format!("refused ({}): {e}", code_of(e)),
            };
            return Err(format!("expected {want:?}, got {got}"));
        }
    }
    let mut checks = Vec::new();
    if !then.projection.is_empty() {
        let state = serde_json::to_value(run.state()).map_err(|e| e.to_string())?;
        for p in &then.projection {
            let pointer = match run.resolve_str(&p.pointer) {
                Ok(Value::String(s)) => s,
                Ok(other) => other.to_string(),
                Err(e) => return Err(format!("malformed case file: projection: {e}")),
            };
            let found = state.pointer(&pointer);
            if p.absent.is_some() {
                checks.push(json!({"pointer": pointer, "absent": p.absent}));
            }
            if p.absent == Some(true) {
                if let Some(v) = found {
                    return Err(format!("projection {pointer}: expected absent, found {v}"));
                }
                continue;
            }
            if p.absent == Some(false) && found.is_none() {
                return Err(format!("projection {pointer}: expected present, absent"));
            }
            if let Some(want) = &p.equals {
                let want = run
                    .resolve(want)
                    .map_err(|e| format!("malformed case file: projection: {e}"))?;
                if found != Some(&want) {
                    return Err(format!(
                        "projection {pointer}: expected {want}, found {}",
                        found.map_or("nothing".into(), Value::to_string)
                    ));
                }
                checks.push(json!({"pointer": pointer, "equals": want}));
            }
        }
    }
    if !checks.is_empty() {
        expected["projection"] = Value::Array(checks);
    }
    Ok(json!({
        "description": case.description,
        "log": log,
        "position": position,
        "statement": statement,
        "expected": expected,
    }))
}

fn templates() -> Map<String, Value> {
    let path = cases_dir().join("templates.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Object(m)) => m,
        other => panic!("{}: not a JSON object: {other:?}", path.display()),
    }
}

/// Every case file: (rule directory, file name, text).
fn case_files() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(cases_dir())
        .expect("tests/cases exists")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let rule = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("readable rule dir")
            .map(|e| e.expect("readable dir entry").path())
            .collect();
        files.sort();
        for f in files {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                name.ends_with(".json"),
                "tests/cases/{rule}/{name}: only .json case files belong in a rule directory"
            );
            let text = std::fs::read_to_string(&f).unwrap();
            out.push((rule.clone(), name, text));
        }
    }
    out
}

/// The rule directories the README promises (each must hold cases).
const RULES: &[&str] = &[
    "approvals",
    "deadlines",
    "duplicates",
    "gateway",
    "key_rotation",
    "key_spelling",
    "key_validity",
    "last_admin",
    "retention",
    "roles",
    "separation_of_duties",
    "touched_oids",
    "verdict_import",
    "verdicts",
];

#[test]
fn every_rule_case_holds() {
    let templates = templates();
    let files = case_files();
    let mut failures = Vec::new();
    let mut per_rule: BTreeMap<String, usize> = BTreeMap::new();
    for (rule, name, text) in &files {
        *per_rule.entry(rule.clone()).or_default() += 1;
        if let Err(e) = run_case(text, &templates) {
            failures.push(format!("tests/cases/{rule}/{name}: {e}"));
        }
    }
    for rule in RULES {
        if per_rule.get(*rule).copied().unwrap_or(0) == 0 {
            failures.push(format!("tests/cases/{rule}/ holds no case"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rule cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    eprintln!("{} rule cases hold ({per_rule:?})", files.len());
}

/// The admission vectors: every case as its log (canonical events, base64),
/// the statement, where it lands and the outcome.
const VECTORS: &str = "../../tests/vectors/admission/vectors.json";

fn admission_vectors() -> Vec<u8> {
    let templates = templates();
    let mut cases = Map::new();
    for (rule, name, text) in case_files() {
        let key = format!("{rule}/{}", name.trim_end_matches(".json"));
        let v = run_case(&text, &templates).unwrap_or_else(|e| panic!("{key}: {e}"));
        cases.insert(key, v);
    }
    let doc = json!({
        "format": "docket.admission-vectors/1",
        "source": "ledger/domain/tests/cases (regenerate: DOCKET_REGEN_VECTORS=1 cargo test -p docket-domain --test rule_cases)",
        "cases": cases,
    });
    // Invariant: a JSON value serialises.
    let mut bytes = serde_json::to_vec_pretty(&doc).expect("vectors serialise");
    bytes.push(b'\n');
    bytes
}

/// Given the rule cases, then `tests/vectors/admission/vectors.json` is
/// exactly what they generate (the vectors cannot drift from the cases,
/// nor the cases from the code). Regenerate after a deliberate change with
/// `DOCKET_REGEN_VECTORS=1`.
#[test]
fn admission_vectors_are_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(VECTORS);
    let fresh = admission_vectors();
    if std::env::var_os("DOCKET_REGEN_VECTORS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &fresh).unwrap();
    }
    let stored = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        stored == fresh,
        "{} differs from what the rule cases generate; regenerate with DOCKET_REGEN_VECTORS=1 if the change is deliberate",
        path.display()
    );
}

/// Given every rule case whose outcome does not depend on time, when it
/// runs on a real ledger on disk (sled, fsync, the sequencer with its own
/// duplicate rule, wall-clock ledger times), then its outcome is the one
/// the case states, as on the in-memory log.
#[test]
fn time_free_rule_cases_hold_on_a_real_ledger() {
    let templates = templates();
    let files = case_files();
    let eligible: Vec<&(String, String, String)> = files
        .iter()
        .filter(|(_, _, text)| time_free(text))
        .collect();
    // Each case has its own ledger; they are fsync-bound, so run four at a
    // time.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = eligible
            .chunks(eligible.len().div_ceil(4).max(1))
            .map(|chunk| {
                let templates = &templates;
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(rule, name, text)| {
                            run_case_on(text, templates, true)
                                .err()
                                .map(|e| format!("tests/cases/{rule}/{name} (on disk): {e}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a case thread panicked"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} rule cases failed on a real ledger:\n{}",
        failures.len(),
        eligible.len(),
        failures.join("\n")
    );
    assert!(
        eligible.len() * 2 > files.len(),
        "only {} of {} cases ran on disk",
        eligible.len(),
        files.len()
    );
    eprintln!(
        "{} of {} rule cases hold on a real ledger",
        eligible.len(),
        files.len()
    );
}

// ------------------------------------------------------------ the runner itself

/// Given a case that holds, when its expected outcome is changed, then the
/// runner reports the difference (so a regression cannot pass unnoticed).
#[test]
fn a_changed_outcome_is_caught() {
    let templates = templates();
    let case = json!({
        "description": "a submitter may register a task",
        "keys": [{"name": "sub", "roles": ["submitter"]}],
        "when": {"kind": "task.registered", "by": "sub", "payload": {"$template": "task"}},
        "then": {"outcome": "admitted"}
    });
    run_case(&case.to_string(), &templates).unwrap();
    let mut refused = case.clone();
    refused["then"] = json!({"outcome": "refused", "code": "permission_denied"});
    let e = run_case(&refused.to_string(), &templates).unwrap_err();
    assert!(e.contains("expected Refused, got admitted"), "{e}");
    let mut wrong_role = case.clone();
    wrong_role["keys"][0]["roles"] = json!(["verifier"]);
    wrong_role["then"] = json!({"outcome": "refused", "code": "not_found"});
    let e = run_case(&wrong_role.to_string(), &templates).unwrap_err();
    assert!(
        e.contains("expected refusal not_found, got permission_denied"),
        "{e}"
    );
    wrong_role["then"] =
        json!({"outcome": "refused", "code": "permission_denied", "message": "role approver"});
    let e = run_case(&wrong_role.to_string(), &templates).unwrap_err();
    assert!(e.contains("does not contain \"role approver\""), "{e}");
    let mut projection = case.clone();
    projection["then"]["projection"] = json!([{
        "pointer": "/domain/verdicts/tasks/72c84e9c-0975-4c1a-b9a5-864c2725dc8a/status",
        "equals": "pass"
    }]);
    let e = run_case(&projection.to_string(), &templates).unwrap_err();
    assert!(e.contains("expected \"pass\", found \"pending\""), "{e}");
}

/// Given malformed case files, then each is reported as malformed.
#[test]
fn malformed_cases_are_reported() {
    let templates = templates();
    let good = json!({
        "description": "d",
        "keys": [{"name": "sub", "roles": ["submitter"]}],
        "when": {"kind": "task.registered", "by": "sub", "payload": {"$template": "task"}},
        "then": {"outcome": "admitted"}
    });
    let mut bad: Vec<(&str, Value)> = Vec::new();
    let mut v = good.clone();
    v["surprise"] = json!(1);
    bad.push(("unknown field", v));
    let mut v = good.clone();
    v["then"] = json!({"outcome": "refused"});
    bad.push(("refusal without code", v));
    let mut v = good.clone();
    v["then"] = json!({"outcome": "refused", "code": "nope"});
    bad.push(("unknown code", v));
    let mut v = good.clone();
    v["then"] = json!({"outcome": "maybe"});
    bad.push(("unknown outcome", v));
    let mut v = good.clone();
    v["when"]["payload"]["$template"] = json!("no-such-template");
    bad.push(("unknown template", v));
    let mut v = good.clone();
    v["when"]["payload"]["task_id"] = json!("${nope:x}");
    bad.push(("unknown placeholder", v));
    let mut v = good.clone();
    v["given"] = json!([{"kind": "verdict.issued", "by": "sub", "payload": {}}]);
    bad.push(("refused given event", v));
    let mut v = good.clone();
    v["when"]["payload"]["task_id"] = json!("${oid:missing}");
    bad.push(("unknown label", v));
    for (what, v) in bad {
        let e = run_case(&v.to_string(), &templates).unwrap_err();
        assert!(e.starts_with("malformed case file"), "{what}: {e}");
    }
    assert!(run_case("{not json", &templates).is_err());
}
