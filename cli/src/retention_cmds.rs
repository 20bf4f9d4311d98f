//! Retention commands (`docket retention …`).
//! Placeholder until the retention work lands.

use anyhow::Result;
use clap::Subcommand;

use crate::Ctx;

/// Commands this module adds to `docket`.
#[derive(Debug, Subcommand)]
pub enum RetentionCmd {
    /// (placeholder)
    #[command(hide = true)]
    RetentionPlaceholder,
}

pub fn run(_cmd: &RetentionCmd, _ctx: &Ctx) -> Result<u8> {
    Ok(crate::exit::USAGE)
}
