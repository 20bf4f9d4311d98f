#!/usr/bin/env python3
"""Regenerates verifier/tests/cases/. Each case: task.json, artifacts/, expected.json.

expected.json: verdict, reason_code, failed_checks (exact set), rules (must all
appear among the findings), optional fail_class. Or, for an invalid contract,
task_violations (rules that must be reported by TaskContract::parse).

Hashes (execution evidence_hash, harness artifact_digests) are computed here
with Python's hashlib, independently of the Rust code under test.
"""
import copy, hashlib, json, os, shutil

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
TASK_ID = "72c84e9c-0975-4c1a-b9a5-864c2725dc8a"

TASK = {
    "task_id": TASK_ID,
    "goal": "Add a greeting function and document it.",
    "role": "executor",
    "pins": {"allowed_paths": ["src/", "docs/"], "forbidden_paths": ["src/secrets/"]},
    "files": ["src/lib.rs", "docs/hello.md"],
    "context": {"map": {}, "docs": {}, "history": {}},
    "acceptance": {
        "required_evidence": ["patch.diff", "selftest.log", "report.md", "submit.json"],
        "required_checks": ["scope_valid", "tests_passed"],
        "required_test_commands": ["cargo test"],
    },
    "retention_class": "routine",
}

DIFF = """diff --git a/src/lib.rs b/src/lib.rs
index 83db48f..bf269f4 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,6 @@
 pub fn add(a: i32, b: i32) -> i32 {
     a + b
 }
+pub fn greet() -> &'static str {
+    "hello"
+}
diff --git a/docs/hello.md b/docs/hello.md
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/docs/hello.md
@@ -0,0 +1,2 @@
+# Hello
+`greet()` returns a greeting.
"""

SUBMIT = {
    "schema_version": "scc.submit.v1",
    "task_id": TASK_ID,
    "status": "DONE",
    "changed_files": ["src/lib.rs"],
    "new_files": ["docs/hello.md"],
    "tests": {"commands": ["cargo test"], "passed": True, "summary": "3 passed"},
    "artifacts": {
        "report_md": "report.md",
        "selftest_log": "selftest.log",
        "evidence_dir": "evidence/",
        "patch_diff": "patch.diff",
        "submit_json": "submit.json",
    },
    "exit_code": 0,
    "needs_input": [],
}

SELFTEST = """2026-02-09T14:29:00Z cwd=/repo
$ cargo test
running 3 tests
test tests::add ... ok
test tests::greet ... ok
test tests::doc ... ok
test result: ok. 3 passed; 0 failed
EXIT_CODE=0
"""

REPORT = """# Report
## Goal summary
Add a greeting function and document it.
## Key decisions
- Keep `greet` pure.
## Changed files
- src/lib.rs
## New files
- docs/hello.md
"""


def base():
    return {
        "task": copy.deepcopy(TASK),
        "files": {
            "submit.json": json.dumps(SUBMIT, indent=2),
            "patch.diff": DIFF,
            "evidence/patch.diff": DIFF,
            "selftest.log": SELFTEST,
            "report.md": REPORT,
        },
    }


def submit_of(case):
    return json.loads(case["files"]["submit.json"])


def set_submit(case, s):
    case["files"]["submit.json"] = json.dumps(s, indent=2)


def set_diff(case, d):
    case["files"]["patch.diff"] = d
    case["files"]["evidence/patch.diff"] = d


def sha(b):
    if isinstance(b, str):
        b = b.encode()
    return hashlib.sha256(b).hexdigest()


MARKER = "\n\n[TRUNCATED - output exceeded limit]"


def truncate(s):
    return s if len(s) <= 10000 else s[:9950] + MARKER


def execution(case, step, cmd, code, stdout, stderr, status=None):
    t_out, t_err = truncate(stdout), truncate(stderr)
    code_s = "null" if code is None else str(code)
    rec = {
        "raw_command": cmd,
        "exit_code": code,
        "stdout": t_out,
        "stderr": t_err,
        "started_at": "2026-02-09T14:29:00Z",
        "finished_at": "2026-02-09T14:29:02Z",
        "duration_seconds": 2.0,
        "status": status or ("SUCCESS" if code == 0 else "FAILURE"),
        "evidence_hash": sha(f"{cmd}|{t_out}|{t_err}|{code_s}"),
        "artifacts": [f"execution/{step}/stdout.log", f"execution/{step}/stderr.log"],
    }
    d = f"evidence/execution/{step}/"
    case["files"][d + "evidence.json"] = json.dumps(rec, indent=2)
    case["files"][d + "stdout.log"] = stdout
    case["files"][d + "stderr.log"] = stderr
    case["files"][d + "command.txt"] = cmd + "\n"
    return rec


STARTED = "2026-02-09T14:28:00Z"


HARNESS_EVENTS = [
    {"event": "run.started", "actor": "harness", "timestamp": "2026-02-09T14:28:01Z"},
    {"event": "task.contract.created", "actor": "harness", "timestamp": "2026-02-09T14:28:02Z"},
    {"event": "plan.updated", "actor": "backend-x", "timestamp": "2026-02-09T14:28:03Z"},
    {"event": "patch.applied", "actor": "backend-x", "timestamp": "2026-02-09T14:28:10Z"},
    {"event": "git.diff.checked", "actor": "harness", "timestamp": "2026-02-09T14:28:11Z"},
    {"event": "verification.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:20Z"},
    {"event": "run.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:21Z", "status": "pass"},
]


def harness_events():
    return copy.deepcopy(HARNESS_EVENTS)


def harness(case, events=None, mutate=None, approval="not-required"):
    f = case["files"]
    evs = events
    if evs is None:
        evs = harness_events()
    f["events.normalized.jsonl"] = "".join(json.dumps(e) + "\n" for e in evs)
    f["test.log"] = "$ cargo test\ntest result: ok. 3 passed\n"
    f["trace.jsonl"] = json.dumps({"action": "check", "name": "diff"}) + "\n"
    f["backend/raw.log"] = "backend raw output\n"
    digested = ["events.normalized.jsonl", "patch.diff", "test.log", "trace.jsonl", "backend/raw.log"]
    report = {
        "case_id": "CASE-7",
        "run_id": "run-0001",
        "status": "pass",
        "backend": "backend-x",
        "run_started_at": STARTED,
        "run_finished_at": "2026-02-09T14:28:30Z",
        "backend_exit_code": 0,
        "artifacts_dir": "/runs/run-0001",
        "changed_files": ["src/lib.rs", "docs/hello.md"],
        "allowed_writes_passed": True,
        "approval_status": approval,
        "verification": [{"command": "cargo test", "passed": True}],
        "blockers": [],
        "artifact_paths": {n: "/runs/run-0001/" + n for n in ["report.json", "report.md"] + digested},
        "artifact_digests": {"report.json": "0" * 64},
        "freshness": {n: "2026-02-09T14:28:25Z" for n in ["report.json", "report.md", "events.normalized.jsonl", "patch.diff", "test.log", "trace.jsonl"]},
    }
    for n in digested:
        report["artifact_digests"][n] = sha(f[n])
    if mutate:
        mutate(report)
    f["report.json"] = json.dumps(report, indent=2)


CASES = {}


def case(name, verdict, reason, failed, rules=(), fail_class=None):
    def deco(fn):
        c = base()
        fn(c)
        exp = {"verdict": verdict, "reason_code": reason, "failed_checks": sorted(failed), "rules": list(rules)}
        if fail_class:
            exp["fail_class"] = fail_class
        c["expected"] = exp
        CASES[name] = c
        return fn
    return deco


@case("pass_minimal", "PASS", None, [])
def _(c):
    pass


@case("pass_plain_diff_u_with_timestamps", "PASS", None, [])
def _(c):
    set_diff(c, """--- src/lib.rs\t2026-02-09 14:00:00.000000000 +0000
+++ src/lib.rs\t2026-02-09 14:10:00.000000000 +0000
@@ -3 +3,2 @@
 }
+pub fn greet() -> &'static str { "hello" }
--- /dev/null\t1970-01-01 00:00:00.000000000 +0000
+++ docs/hello.md\t2026-02-09 14:10:00.000000000 +0000
@@ -0,0 +1 @@
+# Hello
\\ No newline at end of file
""")


@case("pass_rename_copy_binary_delete", "PASS", None, [])
def _(c):
    set_diff(c, DIFF + """diff --git a/src/old_name.rs b/src/new_name.rs
similarity index 95%
rename from src/old_name.rs
rename to src/new_name.rs
index 1111111..2222222 100644
--- a/src/old_name.rs
+++ b/src/new_name.rs
@@ -1 +1 @@
-pub fn old() {}
+pub fn new() {}
diff --git a/docs/logo.png b/docs/logo.png
new file mode 100644
index 0000000..3333333
Binary files /dev/null and b/docs/logo.png differ
diff --git a/src/dead.rs b/src/dead.rs
deleted file mode 100644
index 4444444..0000000
--- a/src/dead.rs
+++ /dev/null
@@ -1,2 +0,0 @@
-fn dead() {}
-// gone
""")
    s = submit_of(c)
    s["changed_files"] += ["src/old_name.rs", "src/dead.rs"]
    s["new_files"] += ["src/new_name.rs", "docs/logo.png"]
    set_submit(c, s)
    c["files"]["report.md"] += "- src/old_name.rs -> src/new_name.rs\n- docs/logo.png\n- src/dead.rs\n"


@case("pass_with_execution_record", "PASS", None, [])
def _(c):
    execution(c, "user_execution", "cargo test", 0, "ok line\n" * 2000, "")
    c["task"]["acceptance"]["required_evidence"].append("execution")


@case("pass_with_harness_report", "PASS", None, [])
def _(c):
    harness(c)


@case("pass_with_granted_approval", "PASS", None, [])
def _(c):
    evs = [
        {"event": "run.started", "actor": "harness", "timestamp": "2026-02-09T14:28:01Z"},
        {"event": "task.contract.created", "actor": "harness", "timestamp": "2026-02-09T14:28:02Z"},
        {"event": "plan.updated", "actor": "backend-x", "timestamp": "2026-02-09T14:28:03Z"},
        {"event": "approval.requested", "actor": "backend-x", "scope": "src/", "mutation_mode": "write", "timestamp": "2026-02-09T14:28:04Z"},
        {"event": "approval.granted", "actor": "operator:jp", "scope": "src/", "mutation_mode": "write", "timestamp": "2026-02-09T14:28:05Z", "expires_at": "2026-02-09T15:28:05Z"},
        {"event": "patch.applied", "actor": "backend-x", "timestamp": "2026-02-09T14:28:10Z"},
        {"event": "git.diff.checked", "actor": "harness", "timestamp": "2026-02-09T14:28:11Z"},
        {"event": "verification.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:20Z"},
        {"event": "run.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:21Z"},
    ]
    harness(c, events=evs, approval="granted")


@case("fail_scope_forbidden_path", "FAIL", "SCOPE_CONFLICT", ["scope_valid"], ["evidence.patch_diff.within_pins", "submit.paths_within_pins"], "scope_violation")
def _(c):
    set_diff(c, DIFF + """diff --git a/src/secrets/key.rs b/src/secrets/key.rs
--- a/src/secrets/key.rs
+++ b/src/secrets/key.rs
@@ -1 +1 @@
-const K: &str = "a";
+const K: &str = "b";
""")
    s = submit_of(c)
    s["changed_files"].append("src/secrets/key.rs")
    set_submit(c, s)
    c["files"]["report.md"] += "- src/secrets/key.rs\n"


@case("fail_scope_outside_allowed", "FAIL", "SCOPE_CONFLICT", ["scope_valid"], ["evidence.patch_diff.within_pins"])
def _(c):
    set_diff(c, DIFF + """diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1 +1,2 @@
 # project
+greeting added
""")
    s = submit_of(c)
    s["changed_files"].append("README.md")
    set_submit(c, s)
    c["files"]["report.md"] += "- README.md\n"


@case("fail_scope_path_escape", "FAIL", "SCOPE_CONFLICT", ["scope_valid", "diff_matches_submit"], ["submit.paths_within_pins"])
def _(c):
    s = submit_of(c)
    s["changed_files"].append("src/../../etc/passwd")
    set_submit(c, s)
    c["files"]["report.md"] += "- src/../../etc/passwd\n"


@case("fail_scope_beats_tests", "FAIL", "SCOPE_CONFLICT", ["scope_valid", "tests_passed", "submission_done"], ["tests.passed"])
def _(c):
    s = submit_of(c)
    s["changed_files"].append("Cargo.toml")
    s["status"] = "FAILED"; s["reason_code"] = "CI_FAILED"; s["exit_code"] = 101
    s["tests"]["passed"] = False
    set_submit(c, s)
    set_diff(c, DIFF + "diff --git a/Cargo.toml b/Cargo.toml\n--- a/Cargo.toml\n+++ b/Cargo.toml\n@@ -1 +1 @@\n-a\n+b\n")
    c["files"]["report.md"] += "- Cargo.toml\n"
    c["files"]["selftest.log"] = SELFTEST.replace("EXIT_CODE=0", "test result: FAILED. 1 failed\nEXIT_CODE=101")


@case("fail_ci_tests_failed", "FAIL", "CI_FAILED", ["tests_passed", "submission_done"], ["tests.passed", "tests.exit_code", "tests.selftest_exit_code", "submit.status_done"], "test_failure")
def _(c):
    s = submit_of(c)
    s["status"] = "FAILED"; s["reason_code"] = "CI_FAILED"; s["exit_code"] = 101
    s["tests"]["passed"] = False; s["tests"]["summary"] = "1 failed"
    set_submit(c, s)
    c["files"]["selftest.log"] = SELFTEST.replace("test tests::greet ... ok", "test tests::greet ... FAILED").replace("test result: ok. 3 passed; 0 failed", "test result: FAILED. 2 passed; 1 failed").replace("EXIT_CODE=0", "EXIT_CODE=101")


@case("fail_ci_timeout_classified", "FAIL", "CI_FAILED", ["tests_passed", "submission_done"], ["tests.selftest_exit_code"], "timeout")
def _(c):
    s = submit_of(c)
    s["status"] = "FAILED"; s["reason_code"] = "CI_FAILED"; s["exit_code"] = 124
    s["tests"]["passed"] = False
    set_submit(c, s)
    c["files"]["selftest.log"] = SELFTEST.replace("test result: ok. 3 passed; 0 failed", "test tests::slow has been running for over 60 seconds\nerror: test timed out").replace("EXIT_CODE=0", "EXIT_CODE=124")


@case("fail_ci_selftest_exit_nonzero_but_claims_pass", "FAIL", "CI_FAILED", ["tests_passed"], ["tests.selftest_exit_code"])
def _(c):
    c["files"]["selftest.log"] = SELFTEST.replace("EXIT_CODE=0", "EXIT_CODE=1")


@case("fail_ci_required_test_command_not_run", "FAIL", "CI_FAILED", ["tests_passed"], ["acceptance.required_test_commands"])
def _(c):
    c["task"]["acceptance"]["required_test_commands"].append("cargo clippy -- -D warnings")
    c["files"]["selftest.log"] = "$ cargo clippy -- -D warnings\n" + SELFTEST


@case("fail_schema_wrong_version", "FAIL", "SCHEMA_VIOLATION", ["schema_valid", "tests_passed"], ["submit.schema_version", "engine.not_evaluated"], "type_error")
def _(c):
    s = submit_of(c); s["schema_version"] = "scc.submit.v2"; set_submit(c, s)


@case("fail_schema_missing_fields", "FAIL", "SCHEMA_VIOLATION", ["schema_valid", "tests_passed"], ["submit.required"])
def _(c):
    s = submit_of(c); del s["tests"]; del s["needs_input"]; set_submit(c, s)


@case("fail_schema_not_json", "FAIL", "SCHEMA_VIOLATION", ["schema_valid", "tests_passed"], ["submit.json_syntax"])
def _(c):
    c["files"]["submit.json"] = '{"schema_version": "scc.submit.v1",\n  "task_id": \n'


@case("fail_schema_done_nonzero_exit", "FAIL", "SCHEMA_VIOLATION", ["schema_valid", "tests_passed"], ["submit.done_exit_code"])
def _(c):
    s = submit_of(c); s["exit_code"] = 2; set_submit(c, s)


# 000 §2 "If tests.passed=false, status SHOULD be FAILED and reason_code
# SHOULD be CI_FAILED" is a SHOULD: judged (CI_FAILED), not refused.
@case("fail_tests_failed_but_done", "FAIL", "CI_FAILED", ["tests_passed"], ["tests.passed"], "test_failure")
def _(c):
    s = submit_of(c); s["tests"]["passed"] = False; set_submit(c, s)


# A timed-out run whose tests did not pass keeps its specific code.
@case("fail_timeout_with_failed_tests", "FAIL", "TIMEOUT_EXCEEDED", ["submission_done", "tests_passed"], ["submit.status_done", "tests.passed"])
def _(c):
    s = submit_of(c); s["tests"]["passed"] = False; s["status"] = "FAILED"; s["reason_code"] = "TIMEOUT_EXCEEDED"; s["exit_code"] = 124; set_submit(c, s)


# Blocked before the tests ran: NEED_INPUT with tests.passed=false.
@case("fail_need_input_before_tests", "FAIL", "NEEDS_CLARIFICATION", ["submission_done", "tests_passed"], ["submit.status_done", "tests.passed"])
def _(c):
    s = submit_of(c); s["tests"]["passed"] = False; s["status"] = "NEED_INPUT"; s["needs_input"] = ["Which database?"]; s["exit_code"] = 3; set_submit(c, s)


@case("fail_schema_task_id_mismatch", "FAIL", "SCHEMA_VIOLATION", ["schema_valid"], ["submit.task_id_matches"])
def _(c):
    s = submit_of(c); s["task_id"] = "00000000-0000-4000-8000-000000000000"; set_submit(c, s)


@case("fail_diff_unparseable", "FAIL", "SCHEMA_VIOLATION", ["patch_diff_valid"], ["evidence.patch_diff.parse"])
def _(c):
    set_diff(c, DIFF.replace("@@ -1,3 +1,6 @@", "@@ -1,3 +1,9 @@"))


# 000 §4 "MUST be parseable as a unified diff": text with no file header.
@case("fail_diff_not_a_diff", "FAIL", "SCHEMA_VIOLATION", ["patch_diff_valid"], ["evidence.patch_diff.parse"])
def _(c):
    set_diff(c, "this is not a diff at all\n")


# A hunk with no file header before it.
@case("fail_diff_headless_hunk", "FAIL", "SCHEMA_VIOLATION", ["patch_diff_valid"], ["evidence.patch_diff.parse"])
def _(c):
    set_diff(c, "junk\n@@ -1,3 +1,3 @@\n-a\n+b\n")


@case("fail_diff_undeclared_change", "FAIL", "SCHEMA_VIOLATION", ["diff_matches_submit"], ["submit.files_match_diff"])
def _(c):
    s = submit_of(c); s["new_files"] = []; s["changed_files"] = ["src/lib.rs", "src/extra.rs"]; set_submit(c, s)
    c["files"]["report.md"] += "- src/extra.rs\n"


@case("fail_diff_new_file_not_in_new_files", "FAIL", "SCHEMA_VIOLATION", ["diff_matches_submit"], ["submit.new_files_match_diff"])
def _(c):
    s = submit_of(c); s["new_files"] = []; s["changed_files"] = ["src/lib.rs", "docs/hello.md"]; set_submit(c, s)


@case("fail_evidence_missing_selftest", "FAIL", "EVIDENCE_MISSING", ["evidence_present", "tests_passed"], ["evidence.selftest_log.present", "acceptance.required_evidence", "submit.artifacts_exist"], "test_failure")
def _(c):
    del c["files"]["selftest.log"]


@case("fail_evidence_missing_patch", "FAIL", "EVIDENCE_MISSING", ["evidence_present"], ["evidence.patch_diff.present"])
def _(c):
    del c["files"]["patch.diff"]; del c["files"]["evidence/patch.diff"]
    s = submit_of(c); s["changed_files"] = []; s["new_files"] = []; set_submit(c, s)


@case("fail_evidence_empty_dir", "FAIL", "EVIDENCE_MISSING", ["evidence_present", "schema_valid", "scope_valid", "tests_passed"], ["evidence.submit_json.present"])
def _(c):
    c["files"] = {}


@case("fail_evidence_selftest_no_exit_line", "FAIL", "EVIDENCE_MISSING", ["selftest_log_valid", "tests_passed"], ["evidence.selftest_log.exit_code_line"])
def _(c):
    c["files"]["selftest.log"] = SELFTEST.replace("EXIT_CODE=0\n", "done\n")


@case("fail_evidence_selftest_missing_command", "FAIL", "EVIDENCE_MISSING", ["selftest_log_valid"], ["evidence.selftest_log.commands"])
def _(c):
    c["files"]["selftest.log"] = SELFTEST.replace("$ cargo test\n", "")


@case("fail_evidence_report_md_incomplete", "FAIL", "EVIDENCE_MISSING", ["report_md_valid"], ["evidence.report_md.sections", "evidence.report_md.files"])
def _(c):
    c["files"]["report.md"] = "# Report\nDid the work.\n"


@case("fail_evidence_required_type_absent", "FAIL", "EVIDENCE_MISSING", ["evidence_present"], ["acceptance.required_evidence"])
def _(c):
    c["task"]["acceptance"]["required_evidence"].append("screenshot")


@case("fail_evidence_submit_artifact_path_missing", "FAIL", "EVIDENCE_MISSING", ["evidence_present"], ["submit.artifacts_exist"])
def _(c):
    s = submit_of(c); s["artifacts"]["report_md"] = "reports/final.md"; set_submit(c, s)


@case("fail_tampered_patch_copies_differ", "FAIL", "EVIDENCE_TAMPERED", ["patch_diff_valid"], ["evidence.patch_diff.copies_identical"], "security_violation")
def _(c):
    c["files"]["evidence/patch.diff"] = DIFF.replace('"hello"', '"HELLO"')


@case("fail_tampered_execution_hash", "FAIL", "EVIDENCE_TAMPERED", ["execution_records_valid"], ["execution.evidence_hash"])
def _(c):
    execution(c, "user_execution", "cargo test", 0, "ok\n", "")
    name = "evidence/execution/user_execution/evidence.json"
    rec = json.loads(c["files"][name]); rec["stdout"] = "all good, trust me\n"; c["files"][name] = json.dumps(rec)


@case("fail_tampered_execution_full_output", "FAIL", "EVIDENCE_TAMPERED", ["execution_records_valid"], ["execution.full_output_kept"])
def _(c):
    execution(c, "user_execution", "cargo test", 0, "ok\n", "")
    c["files"]["evidence/execution/user_execution/stdout.log"] = "something else\n"


@case("fail_execution_failure", "FAIL", "CI_FAILED", ["execution_records_valid"], ["execution.succeeded"], "security_violation")
def _(c):
    execution(c, "user_execution", "wsl pipeline run test.yaml", 1, "", "ERROR: API authentication failed")


@case("fail_execution_no_evidence", "FAIL", "EVIDENCE_MISSING", ["execution_records_valid"], ["execution.no_evidence"])
def _(c):
    execution(c, "user_execution", "wsl pipeline run", None, "", "ExecutionGateway is unavailable", status="NO_EVIDENCE")


@case("fail_execution_status_lies", "FAIL", "SCHEMA_VIOLATION", ["execution_records_valid"], ["execution.status_exit_code"])
def _(c):
    execution(c, "user_execution", "cargo test", 3, "", "boom", status="SUCCESS")


@case("fail_harness_digest_mismatch", "FAIL", "EVIDENCE_TAMPERED", ["harness_report_valid"], ["harness.digest_match"])
def _(c):
    harness(c)
    c["files"]["test.log"] = "$ cargo test\ntest result: ok. 4 passed\n"


@case("fail_harness_missing_artifact", "FAIL", "EVIDENCE_MISSING", ["harness_report_valid"], ["harness.artifact_set", "harness.digest_match"])
def _(c):
    harness(c)
    del c["files"]["trace.jsonl"]


@case("fail_harness_stale_artifact", "FAIL", "EVIDENCE_MISSING", ["harness_report_valid"], ["harness.freshness"])
def _(c):
    harness(c, mutate=lambda r: r["freshness"].__setitem__("test.log", "2026-02-09T13:00:00Z"))


@case("fail_harness_missing_field", "FAIL", "SCHEMA_VIOLATION", ["harness_report_valid"], ["harness.required"])
def _(c):
    harness(c, mutate=lambda r: r.pop("approval_status"))


@case("fail_harness_event_order", "FAIL", "SCHEMA_VIOLATION", ["harness_report_valid"], ["harness.events.order"])
def _(c):
    harness(c)
    lines = c["files"]["events.normalized.jsonl"].splitlines(True)
    lines[3], lines[4] = lines[4], lines[3]  # git.diff.checked before patch.applied
    c["files"]["events.normalized.jsonl"] = "".join(lines)
    rep = json.loads(c["files"]["report.json"])
    rep["artifact_digests"]["events.normalized.jsonl"] = sha(c["files"]["events.normalized.jsonl"])
    c["files"]["report.json"] = json.dumps(rep)


@case("fail_harness_missing_event", "FAIL", "EVIDENCE_MISSING", ["harness_report_valid"], ["harness.events.required"])
def _(c):
    evs = [
        {"event": "run.started", "actor": "harness", "timestamp": "2026-02-09T14:28:01Z"},
        {"event": "task.contract.created", "actor": "harness", "timestamp": "2026-02-09T14:28:02Z"},
        {"event": "plan.updated", "actor": "backend-x", "timestamp": "2026-02-09T14:28:03Z"},
        {"event": "patch.applied", "actor": "backend-x", "timestamp": "2026-02-09T14:28:10Z"},
        {"event": "run.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:21Z"},
    ]
    harness(c, events=evs)


@case("fail_harness_self_approval", "FAIL", "POLICY_VIOLATION", ["harness_report_valid"], ["harness.approval.self"], "security_violation")
def _(c):
    evs = [
        {"event": "run.started", "actor": "backend-x", "timestamp": "2026-02-09T14:28:01Z"},
        {"event": "task.contract.created", "actor": "harness", "timestamp": "2026-02-09T14:28:02Z"},
        {"event": "plan.updated", "actor": "backend-x", "timestamp": "2026-02-09T14:28:03Z"},
        {"event": "approval.requested", "actor": "backend-x", "scope": "src/", "mutation_mode": "write", "timestamp": "2026-02-09T14:28:04Z"},
        {"event": "approval.granted", "actor": "backend-x", "scope": "src/", "mutation_mode": "write", "timestamp": "2026-02-09T14:28:05Z", "expires_at": "2026-02-09T15:00:00Z"},
        {"event": "patch.applied", "actor": "backend-x", "timestamp": "2026-02-09T14:28:10Z"},
        {"event": "git.diff.checked", "actor": "harness", "timestamp": "2026-02-09T14:28:11Z"},
        {"event": "verification.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:20Z"},
        {"event": "run.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:21Z"},
    ]
    harness(c, events=evs, approval="granted")


@case("fail_harness_incomplete_approval", "FAIL", "SCHEMA_VIOLATION", ["harness_report_valid"], ["harness.approval.complete"])
def _(c):
    evs = [
        {"event": "run.started", "actor": "harness", "timestamp": "2026-02-09T14:28:01Z"},
        {"event": "task.contract.created", "actor": "harness", "timestamp": "2026-02-09T14:28:02Z"},
        {"event": "plan.updated", "actor": "backend-x", "timestamp": "2026-02-09T14:28:03Z"},
        {"event": "approval.requested", "actor": "backend-x", "scope": "src/", "mutation_mode": "write", "timestamp": "2026-02-09T14:28:04Z"},
        {"event": "approval.granted", "actor": "operator:jp", "timestamp": "2026-02-09T14:28:05Z"},
        {"event": "patch.applied", "actor": "backend-x", "timestamp": "2026-02-09T14:28:10Z"},
        {"event": "git.diff.checked", "actor": "harness", "timestamp": "2026-02-09T14:28:11Z"},
        {"event": "verification.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:20Z"},
        {"event": "run.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:21Z"},
    ]
    harness(c, events=evs, approval="granted")


@case("fail_harness_pass_despite_disallowed_write", "FAIL", "SCOPE_CONFLICT", ["harness_report_valid"], ["harness.fail_closed"])
def _(c):
    harness(c, mutate=lambda r: r.__setitem__("allowed_writes_passed", False))


@case("fail_harness_blocker_timeout", "FAIL", "TIMEOUT_EXCEEDED", ["harness_report_valid"], ["harness.run_failed"], "timeout")
def _(c):
    def m(r):
        r["status"] = "fail"; r["blockers"] = ["timeout: backend exceeded 600s"]
    harness(c, mutate=m)


# Seed 003: run.started and run.completed each exactly once, nothing after
# run.completed; a repeat is harness.events.once.
@case("fail_harness_run_completed_twice", "FAIL", "SCHEMA_VIOLATION", ["harness_report_valid"], ["harness.events.once"])
def _(c):
    evs = harness_events()
    harness(c, events=evs + [copy.deepcopy(evs[-1])])


@case("fail_harness_run_started_again_before_completed", "FAIL", "SCHEMA_VIOLATION", ["harness_report_valid"], ["harness.events.once"])
def _(c):
    evs = harness_events()
    harness(c, events=evs[:6] + [copy.deepcopy(evs[0])] + evs[6:])


# Seed 003: a denied/failed run "must ... emit run.completed with a failed or
# blocked status"; such a run.completed under a report that says pass is a
# contradiction (EVIDENCE_TAMPERED), not a pass.
@case("fail_harness_completed_status_fail_report_pass", "FAIL", "EVIDENCE_TAMPERED", ["harness_report_valid"], ["harness.events.status_consistent"], "security_violation")
def _(c):
    evs = harness_events()
    evs[-1]["status"] = "fail"
    harness(c, events=evs)


@case("fail_harness_second_completed_blocked", "FAIL", "EVIDENCE_TAMPERED", ["harness_report_valid"], ["harness.events.once", "harness.events.status_consistent"])
def _(c):
    evs = harness_events()
    harness(c, events=evs + [{"event": "run.completed", "actor": "harness", "timestamp": "2026-02-09T14:28:22Z", "status": "blocked"}])


# Seed 002 reads "auth"/"timeout"/"schema" in stderr only: the same words in
# stdout leave the CI_FAILED fail_class at test_failure.
@case("fail_execution_auth_only_in_stdout", "FAIL", "CI_FAILED", ["execution_records_valid"], ["execution.succeeded"], "test_failure")
def _(c):
    execution(c, "user_execution", "pytest", 1, "auth module loaded\n", "")


@case("fail_execution_timeout_only_in_stdout", "FAIL", "CI_FAILED", ["execution_records_valid"], ["execution.succeeded"], "test_failure")
def _(c):
    execution(c, "user_execution", "pytest", 1, "test_connection_timeout PASSED\nschema v2 loaded\n", "exit 1\n")


for code in ["TIMEOUT_EXCEEDED", "BUDGET_EXCEEDED", "EXECUTOR_ERROR", "POLICY_VIOLATION", "PERMISSION_DENIED",
             "MERGE_CONFLICT", "FILE_NOT_FOUND", "PINS_INSUFFICIENT", "PREFLIGHT_FAILED"]:
    def make(code):
        def fn(c):
            s = submit_of(c)
            s["status"] = "FAILED"; s["reason_code"] = code; s["exit_code"] = 3
            set_submit(c, s)
        return fn
    case(f"fail_reported_{code.lower()}", "FAIL", code, ["submission_done", "tests_passed"], ["submit.status_done", "tests.exit_code"])(make(code))


@case("fail_reported_needs_clarification", "FAIL", "NEEDS_CLARIFICATION", ["submission_done"], ["submit.status_done"])
def _(c):
    s = submit_of(c)
    s["status"] = "NEED_INPUT"; s["needs_input"] = ["Which locale should greet() use?"]
    set_submit(c, s)


@case("fail_preflight_unknown_required_check", "FAIL", "PREFLIGHT_FAILED", ["acceptance"], ["acceptance.required_check_evaluated"])
def _(c):
    c["task"]["acceptance"]["required_checks"].append("lint_clean")


@case("pass_with_state_and_screenshots", "PASS", None, [])
def _(c):
    c["files"]["evidence/pre_state.json"] = json.dumps({"files": {"src/lib.rs": {"size": 40}}})
    c["files"]["evidence/post_state.json"] = json.dumps({"files": {"src/lib.rs": {"size": 90}, "docs/hello.md": {"size": 30}}})
    c["files"]["screenshots/docs.png"] = "\x89PNG fake"
    c["task"]["acceptance"]["required_evidence"] += ["screenshot", "other"]


@case("fail_schema_state_json_invalid", "FAIL", "SCHEMA_VIOLATION", ["evidence_present"], ["evidence.state_json.parse"])
def _(c):
    c["files"]["evidence/post_state.json"] = "not json"


@case("fail_policy_non_image_in_screenshots", "FAIL", "POLICY_VIOLATION", ["evidence_present"], ["evidence.screenshots.images_only"])
def _(c):
    c["files"]["screenshots/creds.txt"] = "AWS_SECRET=..."


@case("fail_schema_empty_test_command", "FAIL", "SCHEMA_VIOLATION", ["schema_valid", "tests_passed"], ["submit.tests.commands.non_empty"])
def _(c):
    s = submit_of(c); s["tests"]["commands"].append("  "); set_submit(c, s)


@case("fail_priority_tamper_beats_scope_and_missing", "FAIL", "EVIDENCE_TAMPERED", ["patch_diff_valid", "scope_valid", "report_md_valid"], ["evidence.patch_diff.copies_identical", "evidence.patch_diff.within_pins", "evidence.report_md.sections"])
def _(c):
    d = DIFF + "diff --git a/Makefile b/Makefile\n--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-a\n+b\n"
    c["files"]["patch.diff"] = d
    c["files"]["report.md"] = "src/lib.rs docs/hello.md"
    s = submit_of(c); s["changed_files"].append("Makefile"); set_submit(c, s)


@case("fail_pins_insufficient_copy_source", "FAIL", "PINS_INSUFFICIENT", ["scope_valid"], ["evidence.patch_diff.sources_pinned"], "scope_violation")
def _(c):
    set_diff(c, DIFF + """diff --git a/vendor/template.rs b/src/template.rs
similarity index 100%
copy from vendor/template.rs
copy to src/template.rs
""")
    s = submit_of(c); s["new_files"].append("src/template.rs"); set_submit(c, s)
    c["files"]["report.md"] += "- src/template.rs\n"


INVALID_TASKS = {
    "invalid_task_every_rule": (
        {"task_id": "TASK-001", "goal": "", "pins": {"allowed_paths": [], "forbidden_paths": []},
         "files": ["src/a.rs"], "acceptance": {"required_evidence": ["video"]}, "retention_class": "forever"},
        ["task.task_id.uuid", "task.goal.non_empty", "task.required", "task.pins.allowed_paths.non_empty",
         "task.acceptance.required_evidence.known", "task.retention_class"],
    ),
    "invalid_task_overlapping_pins": (
        {"task_id": TASK_ID, "goal": "g", "role": "executor",
         "pins": {"allowed_paths": ["src/", "docs/"], "forbidden_paths": ["docs/"]}, "files": ["lib/x.rs"]},
        ["task.pins.disjoint", "task.files.within_scope"],
    ),
}


def write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as fh:
        fh.write(content)


def main():
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    for name, c in CASES.items():
        d = os.path.join(ROOT, name)
        write(os.path.join(d, "task.json"), json.dumps(c["task"], indent=2) + "\n")
        os.makedirs(os.path.join(d, "artifacts"), exist_ok=True)
        if not c["files"]:
            write(os.path.join(d, "artifacts", ".gitkeep"), "")  # git keeps no empty dirs
        for fname, content in c["files"].items():
            write(os.path.join(d, "artifacts", fname), content)
        write(os.path.join(d, "expected.json"), json.dumps(c["expected"], indent=2) + "\n")
    for name, (task, rules) in INVALID_TASKS.items():
        d = os.path.join(ROOT, name)
        write(os.path.join(d, "task.json"), json.dumps(task, indent=2) + "\n")
        os.makedirs(os.path.join(d, "artifacts"), exist_ok=True)
        write(os.path.join(d, "artifacts", ".keep"), "")
        write(os.path.join(d, "expected.json"), json.dumps({"task_violations": rules}, indent=2) + "\n")
    print(f"{len(CASES) + len(INVALID_TASKS)} cases")


if __name__ == "__main__":
    main()
