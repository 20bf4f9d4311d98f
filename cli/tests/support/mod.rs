//! Helpers shared by the command-line tests (`mod support;` in each).

#![allow(
    dead_code,
    reason = "each test binary compiles this module and uses a part of it"
)]

use std::process::{Command, Output};

/// The built `docket` binary, with every `DOCKET_*` variable of the
/// caller's environment removed: what a test sees must not depend on the
/// shell it runs in (a test sets what it needs on the returned command).
pub fn docket() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_docket"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("DOCKET_") {
            c.env_remove(name);
        }
    }
    c
}

/// Exit code, stdout and stderr of a finished command, for assertion
/// messages.
pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
