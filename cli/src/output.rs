//! Human and JSON output. `--json` prints one JSON object per line.

use serde::Serialize;

/// Where command output goes.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
}

impl Output {
    /// Prints `json`, one JSON object already serialised (e.g. by a server
    /// with the embedded code's own types, field order kept), or `human`.
    pub fn emit_json_text(&self, json: &str, human: impl FnOnce() -> String) {
        if self.json {
            write_line(json.trim_end());
        } else {
            write_line(&human());
        }
    }

    /// Prints `value` as one JSON line, or `human` otherwise.
    pub fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        let line = if self.json {
            match serde_json::to_string(value) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: cannot serialise output: {e}");
                    return;
                }
            }
        } else {
            human()
        };
        write_line(&line);
    }

    /// A progress bar on stderr for long work, hidden in JSON mode or when
    /// stderr is not a terminal. It stays on one line whatever the
    /// terminal's width (the bar takes what the fixed-width fields leave,
    /// the message is cut to 16 columns) and redraws at most 10 times a
    /// second, so a fast loop does not flood the terminal.
    pub fn progress(&self, len: u64, what: &str) -> indicatif::ProgressBar {
        use std::io::IsTerminal as _;
        if self.json || !std::io::stderr().is_terminal() {
            return indicatif::ProgressBar::hidden();
        }
        let bar = indicatif::ProgressBar::with_draw_target(
            // 0: not known yet (the caller sets it when it is).
            (len > 0).then_some(len),
            indicatif::ProgressDrawTarget::stderr_with_hz(10),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg:16!} [{wide_bar}] {pos:>7}/{len:<7} eta {eta:>4}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_string());
        bar
    }
}

/// Formats Unix milliseconds as RFC 3339 UTC (the ledger's one formatter).
pub fn rfc3339_ms(ms: u64) -> String {
    docket_domain::domain::payloads::ms_to_rfc3339(ms)
}

/// Parses RFC 3339 into Unix milliseconds.
pub fn parse_rfc3339_ms(s: &str) -> anyhow::Result<u64> {
    let t = docket_verifier::parse_rfc3339(s).ok_or_else(|| {
        crate::exit::CliError::new(
            crate::exit::INVALID,
            format!("{s:?} is not an RFC 3339 timestamp (e.g. 2026-02-09T14:30:00Z)"),
        )
    })?;
    let ms = t.unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).map_err(|_| {
        crate::exit::CliError::new(crate::exit::INVALID, format!("{s:?} is before 1970")).into()
    })
}

/// Writes one line to stdout. A closed pipe (`docket log tail | head -n1`)
/// ends the process quietly with exit 0, as a Unix filter does; any other
/// write error is reported and exits 10.
pub fn write_line(line: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(10);
    }
}
