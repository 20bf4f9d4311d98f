//! Tests of the command-line definition itself (the clap tree in
//! `main.rs`): every command and flag has help text, and a flag name means
//! one thing everywhere.

use std::collections::BTreeMap;

use clap::CommandFactory as _;

use super::Cli;

/// Every (command path, argument) in the tree.
fn walk(cmd: &clap::Command, path: &str, f: &mut dyn FnMut(&str, &clap::Command)) {
    f(path, cmd);
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        walk(sub, &format!("{path} {}", sub.get_name()), f);
    }
}

fn is_builtin(a: &clap::Arg) -> bool {
    matches!(a.get_id().as_str(), "help" | "version")
}

#[test]
fn every_command_and_every_flag_has_help_text() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut missing = Vec::new();
    walk(&cmd, "docket", &mut |path, c| {
        if c.get_about().is_none() && c.get_long_about().is_none() {
            missing.push(format!("command `{path}`"));
        }
        for a in c
            .get_arguments()
            .filter(|a| !is_builtin(a) && !a.is_global_set())
        {
            if a.get_help().is_none() && a.get_long_help().is_none() {
                let name = a
                    .get_long()
                    .map(|l| format!("--{l}"))
                    .unwrap_or_else(|| format!("<{}>", a.get_id()));
                missing.push(format!("`{path}` {name}"));
            }
        }
    });
    assert!(
        missing.is_empty(),
        "{} without help text:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

/// A flag name means one thing: `--task` is always a task id (a contract
/// file is `--task-file` or a positional), `--key` always a private key
/// file, `--out` always a path to write.
#[test]
fn one_meaning_per_flag_name() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut by_name: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    walk(&cmd, "docket", &mut |path, c| {
        for a in c
            .get_arguments()
            .filter(|a| !is_builtin(a) && !a.is_global_set())
        {
            if let Some(long) = a.get_long() {
                let help = a
                    .get_help()
                    .or(a.get_long_help())
                    .map(ToString::to_string)
                    .unwrap_or_default();
                by_name
                    .entry(long.to_string())
                    .or_default()
                    .push((path.to_string(), help));
            }
        }
    });
    let mut wrong = Vec::new();
    for (path, help) in by_name.get("task").into_iter().flatten() {
        let h = help.to_ascii_lowercase();
        if !(h.contains("task id") || h.contains("uuid")) || h.contains("task.json") {
            wrong.push(format!("`{path} --task` is not a task id: {help:?}"));
        }
    }
    for (path, help) in by_name.get("task-file").into_iter().flatten() {
        if !help.to_ascii_lowercase().contains("file") {
            wrong.push(format!("`{path} --task-file` is not a file: {help:?}"));
        }
    }
    for (path, help) in by_name.get("key").into_iter().flatten() {
        if !help.to_ascii_lowercase().contains("key file") {
            wrong.push(format!(
                "`{path} --key` is not a private key file: {help:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Seed 004 names its retention fields (`keep_days`, `keep_runs`): given
/// them as flags, when parsed, then they set Docket's `routine_days` and
/// `keep_last_submissions`.
#[test]
fn seed_004_retention_names_are_flags_of_policy_set() {
    use clap::Parser as _;
    let cli = Cli::try_parse_from([
        "docket",
        "retention",
        "policy",
        "set",
        "--keep-days",
        "14",
        "--keep-runs",
        "200",
        "--key",
        "admin.key",
    ])
    .expect("seed 004 names parse");
    let debug = format!("{cli:?}");
    assert!(debug.contains("routine_days: Some(14)"), "{debug}");
    assert!(
        debug.contains("keep_last_submissions: Some(200)"),
        "{debug}"
    );
}
