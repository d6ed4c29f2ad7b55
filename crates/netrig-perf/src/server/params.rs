//! What a test asks of the server, judged before it takes a slot: the parameter
//! exchange's verdict (the key's proof, the parameters within the server's limits, a
//! test this server can serve) and the data streams it would hold.

use netrig_core::iperf3::{Mode, Params, Protocol};
use netrig_core::wire::iperf3::Cookie;

use super::gate;
use crate::auth;
use crate::config::ServerConfig;
use crate::error::{ierr, PerfError};

/// The data streams (a thread each) a test asks for: -P, twice with --bidir; an rr
/// test of new connections, as many as it may have open at once.
pub(super) fn streams_of(p: &Params) -> usize {
    let n = p.parallel.max(1) as usize;
    match p.mode() {
        Mode::Bulk if p.bidirectional => 2 * n,
        Mode::Rr if p.netrig.as_ref().is_some_and(|x| x.rr_new_conn) => crate::rr::max_new_conns(p.parallel),
        _ => n,
    }
}

/// The parameter exchange's verdict, before the test takes a slot: the proof answers
/// this connection's challenge for these exact parameter bytes (if the server has a
/// key), and the parameters parse within the server's limits, in a protocol version it
/// speaks, and ask for a test it can serve.
pub(super) fn check_params(
    cfg: &ServerConfig,
    cookie: &Cookie,
    body: &[u8],
    proof: Option<&gate::Proof>,
) -> std::result::Result<Params, (i32, PerfError)> {
    if let Some(key) = &cfg.common.auth_key {
        let refused = |why: String| (ierr::IEAUTHTEST, PerfError::Auth(why));
        let Some(p) = proof else {
            return Err(refused("this server requires a key and sent no challenge".into()));
        };
        auth::verify(key.as_bytes(), &p.nonce, cookie, body, &p.doc).map_err(|e| refused(e.to_string()))?;
    }
    let params = Params::parse(body, &cfg.limits).map_err(|e| (ierr::IERECVPARAMS, e.into()))?;
    if let Some(v) = params
        .netrig
        .as_ref()
        .map(|n| n.version)
        .filter(|&v| v > crate::protocol::NETRIG_PROTO)
    {
        let e = PerfError::Config(format!(
            "the client speaks netrig protocol version {v}; this server speaks up to {} (upgrade the server)",
            crate::protocol::NETRIG_PROTO
        ));
        return Err((ierr::IEUNIMP, e));
    }
    let mode = params.mode();
    if let (Mode::Probe, Protocol::Tcp) | (Mode::Rr, Protocol::Udp) = (mode, params.protocol) {
        let e = PerfError::Config(format!("{mode:?} mode needs the other protocol"));
        return Err((ierr::IEUNIMP, e));
    }
    server_checks(cfg, &params)?;
    Ok(params)
}

/// What this server's own flags demand of a test, checked before any stream opens:
/// the total rate it asks for against `--server-bitrate-limit` (as iperf3 does), and
/// what `-F` can serve. (The CPU it asks for, `-A n,m`, is set on the test's thread.)
fn server_checks(cfg: &ServerConfig, p: &Params) -> std::result::Result<(), (i32, PerfError)> {
    if let Some(limit) = cfg.bitrate_limit {
        let asked = p
            .bandwidth
            .saturating_mul(p.parallel as u64)
            .saturating_mul(if p.bidirectional { 2 } else { 1 });
        if asked > limit.bits_per_second {
            return Err((
                ierr::IETOTALRATE,
                PerfError::Config(format!(
                    "total required bandwidth is larger than server limit: the test asks for {asked} bit/s, limit {} bit/s (--server-bitrate-limit)",
                    limit.bits_per_second
                )),
            ));
        }
    }
    if let Some(f) = &cfg.common.file {
        let why = if p.protocol == Protocol::Udp {
            Some("UDP")
        } else if p.parallel > 1 {
            Some("-P above 1")
        } else if p.bidirectional {
            Some("--bidir")
        } else {
            None
        };
        if let (Some(why), Mode::Bulk) = (why, p.mode()) {
            return Err((
                ierr::IEUNIMP,
                PerfError::Config(format!(
                    "this server sends and receives the file {} (-F), which works with one TCP stream in one direction, not {why}",
                    f.display()
                )),
            ));
        }
    }
    Ok(())
}
