//! The gRPC client backend (`--server URL`). Placeholder until the server
//! work lands.

use anyhow::Result;

use crate::backend::Backend;
use crate::exit::{self, CliError};

/// Connects to a Docket server.
pub fn connect(url: &str) -> Result<Box<dyn Backend + Send + Sync>> {
    Err(CliError::new(exit::UNEXPECTED, format!("cannot reach {url}: the gRPC client is not built yet")).into())
}
