//! Export and audit commands (`docket export`, `docket audit`).
//! Placeholder until the export work lands.

use anyhow::Result;
use clap::Subcommand;

use crate::Ctx;

/// Commands this module adds to `docket`.
#[derive(Debug, Subcommand)]
pub enum ExportCmd {
    /// (placeholder)
    #[command(hide = true)]
    ExportPlaceholder,
}

pub fn run(_cmd: &ExportCmd, _ctx: &Ctx) -> Result<u8> {
    Ok(crate::exit::USAGE)
}
