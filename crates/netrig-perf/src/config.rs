//! The options of a client and a server, as the command line (or a program) sets them.
//! Sizes and rates are already in bytes and bit/s here; parsing units is the caller's.

use std::path::PathBuf;
use std::time::Duration;

use netrig_core::iperf3::{Limits, Protocol};
use netrig_core::units::UnitFormat;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// iperf3's human-readable lines.
    #[default]
    Text,
    /// One iperf3 `-J` document at the end.
    Json,
    /// One JSON event per line, as they happen (`--json-stream`).
    JsonStream,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    #[default]
    Any,
    V4,
    V6,
}

/// Options shared by client and server.
#[derive(Debug, Clone)]
pub struct Common {
    pub port: u16,
    pub bind: Option<String>,
    pub family: Family,
    pub interval: Duration,
    pub format: Format,
    pub logfile: Option<PathBuf>,
    pub forceflush: bool,
    pub verbose: bool,
    /// `--auth-key-file`, `NETRIG_PERF_KEY` or `--auth-key`: see [`crate::auth`].
    pub auth_key: Option<crate::auth::AuthKey>,
    /// `-f`: the unit of the bitrate column.
    pub units: UnitFormat,
    /// `--timestamps[=FORMAT]`: a strftime(3) prefix for every text line.
    pub timestamps: Option<String>,
    /// `-d`: diagnostic lines on stderr.
    pub debug: bool,
    /// `--bind-dev`: SO_BINDTODEVICE on every socket.
    pub bind_dev: Option<String>,
    /// `-A n`: the CPU this process runs on.
    pub affinity: Option<usize>,
    /// `-F`: a sender reads its data from this file; a receiver writes what it got.
    pub file: Option<PathBuf>,
    /// `--rcv-timeout`: a receiving side that gets no data this long ends the test.
    pub rcv_timeout: Duration,
}

/// iperf3's default `--rcv-timeout`.
pub const DEFAULT_RCV_TIMEOUT: Duration = Duration::from_secs(120);

impl Default for Common {
    fn default() -> Self {
        Common {
            port: 5201,
            bind: None,
            family: Family::Any,
            interval: Duration::from_secs(1),
            format: Format::Text,
            logfile: None,
            forceflush: false,
            verbose: false,
            auth_key: None,
            units: UnitFormat::default(),
            timestamps: None,
            debug: false,
            bind_dev: None,
            affinity: None,
            file: None,
            rcv_timeout: DEFAULT_RCV_TIMEOUT,
        }
    }
}

/// What the client measures.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMode {
    Bulk,
    /// UDP latency probes: one request every `interval`, `size` bytes each.
    Probe {
        interval: Duration,
        size: usize,
    },
    /// TCP transactions: request, then `response` bytes back; a new connection per
    /// transaction or one reused; `interval` between starts (0 = back to back).
    Rr {
        response: u64,
        new_conn: bool,
        interval: Duration,
    },
}

#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub common: Common,
    pub host: String,
    pub mode: ClientMode,
    pub protocol: Protocol,
    /// Seconds; 0 with a byte or block count.
    pub time: u64,
    pub bytes: u64,
    pub blocks: u64,
    pub parallel: u32,
    pub reverse: bool,
    pub bidir: bool,
    pub window: u64,
    /// 0 = iperf3's default (128 KiB TCP, path-MTU-sized UDP).
    pub len: u64,
    /// bit/s per stream; UDP defaults to 1 Mbit/s as in iperf3.
    pub rate: Option<u64>,
    pub burst: u64,
    pub mss: u32,
    pub congestion: Option<String>,
    pub nodelay: bool,
    pub zerocopy: bool,
    pub omit: u64,
    pub tos: u32,
    pub title: Option<String>,
    pub extra_data: Option<String>,
    pub get_server_output: bool,
    pub udp_counters_64bit: bool,
    pub repeating_payload: bool,
    pub connect_timeout: Duration,
    pub cport: Option<u16>,
    /// UDP: send datagram by datagram, without GSO.
    pub no_gso: bool,
    /// Interval between TCP_INFO samples streamed as events (None: off).
    pub tcp_info_interval: Option<Duration>,
    /// `-A n,m`: the CPU asked of the server.
    pub server_affinity: Option<u32>,
    /// `--fq-rate`: SO_MAX_PACING_RATE on every data socket, bit/s (0 = off).
    pub fq_rate: u64,
    /// `--snd-timeout`: TCP_USER_TIMEOUT on the client's TCP data sockets.
    pub snd_timeout: Option<Duration>,
    /// `--pacing-timer`: the sender's pacing timer in microseconds (iperf3's default 1000).
    pub pacing_timer_us: u64,
    /// `--dont-fragment`: DF on UDP streams.
    pub dont_fragment: bool,
    /// `-L`: IPv6 flow label of the TCP data streams (0 = none).
    pub flowlabel: u32,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            common: Common::default(),
            host: String::new(),
            mode: ClientMode::Bulk,
            protocol: Protocol::Tcp,
            time: 10,
            bytes: 0,
            blocks: 0,
            parallel: 1,
            reverse: false,
            bidir: false,
            window: 0,
            len: 0,
            rate: None,
            burst: 0,
            mss: 0,
            congestion: None,
            nodelay: false,
            zerocopy: false,
            omit: 0,
            tos: 0,
            title: None,
            extra_data: None,
            get_server_output: false,
            udp_counters_64bit: false,
            repeating_payload: false,
            connect_timeout: Duration::from_secs(10),
            cport: None,
            no_gso: false,
            tcp_info_interval: None,
            server_affinity: None,
            fq_rate: 0,
            snd_timeout: None,
            pacing_timer_us: 1000,
            dont_fragment: false,
            flowlabel: 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub common: Common,
    /// Serve one test, then exit (`-1`).
    pub one_off: bool,
    pub limits: Limits,
    /// Tests served at the same time; more get ACCESS_DENIED.
    pub max_tests: usize,
    /// Tests served at the same time from one source (an IPv4 address or an IPv6 /64);
    /// more from it get ACCESS_DENIED. Below `max_tests` (see [`tests_per_source`]).
    pub max_tests_per_source: usize,
    /// Data streams (one thread each) of all tests together; a test that would go over
    /// gets ACCESS_DENIED. One source's tests hold at most its share (see
    /// [`ServerConfig::streams_per_source`]).
    pub max_streams: usize,
    /// How long a new connection may take, from its accept, to send its cookie and (if
    /// it opens a test) its parameters: one deadline for the whole handshake, not a
    /// timeout per read (default 5 s). Later setup steps of a test use it too.
    pub handshake_timeout: Duration,
    /// netrig: connections waiting for their handshake, in all (default 256). Past it,
    /// the one that has waited longest is closed to make room.
    pub max_pending: usize,
    /// netrig: connections waiting for their handshake from one source, an IPv4 address
    /// or an IPv6 /64 (default 16). Past it, that source's longest-waiting one is closed.
    pub max_pending_per_source: usize,
    /// `--grace`: how long past a test's declared end (`-O` and `-t`, or
    /// `--max-duration` for a test of `-n`/`-k`) its client has to end it; then the
    /// server ends it (at least `handshake_timeout`), and one `handshake_timeout` later
    /// closes it whatever the client does.
    pub grace: Duration,
    /// `--exit-after`: the server ends every test and exits this long after it started.
    pub exit_after: Option<Duration>,
    /// Largest rr response a client may ask for.
    pub max_rr_response: u64,
    /// `--idle-timeout`: with no test for this long, a one-off server exits and any
    /// other reopens its listening socket (iperf3's restart).
    pub idle_timeout: Option<Duration>,
    /// `--server-bitrate-limit`: the most a test may move, all streams together.
    pub bitrate_limit: Option<BitrateLimit>,
}

/// `--max-streams`' default: four tests of -P 128 (or two of -P 128 --bidir) at once,
/// a thousand threads and, at the largest -l (1 MiB), a GiB of buffers at worst.
pub const DEFAULT_MAX_STREAMS: usize = 1024;

/// `--max-tests-per-source`' default: a quarter of `--max-tests` (16 of the default 64),
/// at least 1. One address then leaves three quarters of the slots to others, and
/// still runs as many tests at once as anyone runs by hand.
pub fn tests_per_source(max_tests: usize) -> usize {
    (max_tests / 4).max(1)
}

impl ServerConfig {
    /// The streams one source's tests may hold at once: its share of `max_streams`, in
    /// the proportion of its test slots (`max_tests_per_source` of `max_tests`), rounded
    /// up; 256 with the defaults, one test of -P 128 --bidir.
    pub fn streams_per_source(&self) -> usize {
        let tests = self.max_tests.max(1);
        let share = (self.max_streams * self.max_tests_per_source.min(tests)).div_ceil(tests);
        share.clamp(1, self.max_streams.max(1))
    }
}

/// A server's limit on a test's total rate, averaged over a window (iperf3's
/// `--server-bitrate-limit RATE[/SECS]`, window 5 s by default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BitrateLimit {
    pub bits_per_second: u64,
    pub window: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            common: Common::default(),
            one_off: false,
            limits: Limits::default(),
            max_tests: 64,
            max_tests_per_source: tests_per_source(64),
            max_streams: DEFAULT_MAX_STREAMS,
            handshake_timeout: Duration::from_secs(5),
            max_pending: 256,
            max_pending_per_source: 16,
            grace: Duration::from_secs(10),
            exit_after: None,
            max_rr_response: 1 << 30,
            idle_timeout: None,
            bitrate_limit: None,
        }
    }
}
