//! UDP latency probes (netrig extra). Placeholder filled in below.
use crate::config::ClientConfig;
use crate::error::{PerfError, Result};
use crate::output::Output;
pub fn run_client(_cfg: &ClientConfig, _out: &mut Output) -> Result<()> {
    Err(PerfError::Config("probe mode is not built yet".into()))
}
