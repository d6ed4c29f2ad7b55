//! TCP request/response transactions (netrig extra). Placeholder filled in below.
use crate::config::ClientConfig;
use crate::error::{PerfError, Result};
use crate::output::Output;
pub fn run_client(_cfg: &ClientConfig, _out: &mut Output) -> Result<()> {
    Err(PerfError::Config("rr mode is not built yet".into()))
}
