//! placeholder
use crate::config::ServerConfig;
use crate::error::Result;
use crate::output::Sink;
pub fn run(_cfg: &ServerConfig, _sink: Sink) -> Result<()> { Ok(()) }
