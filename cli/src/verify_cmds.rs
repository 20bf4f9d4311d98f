//! Offline verifier commands (placeholder; the verifier work replaces it).

use std::path::PathBuf;

use anyhow::Result;

/// `docket verify DIR --task task.json`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    pub dir: PathBuf,
    #[arg(long)]
    pub task: PathBuf,
}

/// `docket validate-task task.json`.
#[derive(Debug, clap::Args)]
pub struct ValidateTaskArgs {
    pub task_json: PathBuf,
}

/// `docket classify LOG...`.
#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    pub logs: Vec<PathBuf>,
}

pub fn run_verify(_a: &VerifyArgs) -> Result<u8> {
    Ok(crate::exit::USAGE)
}
pub fn run_validate_task(_a: &ValidateTaskArgs) -> Result<u8> {
    Ok(crate::exit::USAGE)
}
pub fn run_classify(_a: &ClassifyArgs) -> Result<u8> {
    Ok(crate::exit::USAGE)
}
