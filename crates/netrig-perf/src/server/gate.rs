//! The handshake gate: every new connection waits here, on the server's one accepting
//! thread, until it has sent its 37-byte cookie (and, if it opens a new test, its
//! parameters, and on a server with a key the proof that answers the challenge the
//! gate sent it: see [`crate::auth`]) or its deadline passes. No connection gets a
//! thread or a test slot before that.
//!
//! Three limits keep a crowd of idle or slow connections from starving real clients:
//! - a deadline from accept for the whole handshake (`--handshake-timeout`), not a
//!   timeout per read, so dripping a byte at a time does not extend it;
//! - at most `max_pending_per_source` connections waiting per source (an IPv4
//!   address, or an IPv6 /64: one host's share of addresses);
//! - at most `max_pending` connections waiting in all.
//!
//! When a new connection would go over a cap, the connection of that group that has
//! waited longest is closed to make room: a real client finishes its handshake within a
//! round trip, so the oldest waiting connection is the likeliest idler, and a client
//! arriving beside a crowd of idlers still gets in. Closures are counted and reported
//! once per burst (see [`Burst`]), never once per connection.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use netrig_core::wire::iperf3::{emit_json_frame, parse_json_frame_len, Cookie, State, COOKIE_LEN};

use crate::auth::{self, Nonce};
use crate::error::PerfError;

/// The gate's limits (from the server's configuration).
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub deadline: Duration,
    pub per_source: usize,
    pub total: usize,
    /// Largest parameter document accepted.
    pub max_params: usize,
}

enum Stage {
    Cookie {
        buf: [u8; COOKIE_LEN],
        got: usize,
    },
    /// Waiting for the parameters and, after a challenge, the proof (see
    /// [`crate::auth`]).
    Params {
        cookie: Cookie,
        challenge: Option<Nonce>,
        frame: Frame,
        params: Option<Vec<u8>>,
    },
}

/// One length-prefixed JSON frame, read as far as it has arrived.
struct Frame {
    prefix: [u8; 4],
    got: usize,
    body: Vec<u8>,
    len: Option<usize>,
    max: usize,
}

enum FrameStep {
    Wait,
    Done(Vec<u8>),
    Bad(PerfError),
    Closed,
}

impl Frame {
    fn new(max: usize) -> Frame {
        Frame {
            prefix: [0; 4],
            got: 0,
            body: vec![],
            len: None,
            max,
        }
    }

    fn read(&mut self, stream: &mut TcpStream) -> FrameStep {
        if self.len.is_none() {
            if !fill(stream, &mut self.prefix, &mut self.got) {
                return FrameStep::Closed;
            }
            if self.got < self.prefix.len() {
                return FrameStep::Wait;
            }
            match parse_json_frame_len(self.prefix, self.max) {
                Ok(n) => self.len = Some(n),
                Err(e) => return FrameStep::Bad(e.into()),
            }
        }
        let n = self.len.unwrap_or(0);
        // Grown as bytes arrive, not by what the length prefix claims.
        let mut chunk = [0u8; 4096];
        while self.body.len() < n {
            let want = (n - self.body.len()).min(chunk.len());
            match stream.read(&mut chunk[..want]) {
                Ok(0) => return FrameStep::Closed,
                Ok(k) => self.body.extend_from_slice(&chunk[..k]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return FrameStep::Wait,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return FrameStep::Closed,
            }
        }
        FrameStep::Done(std::mem::take(&mut self.body))
    }
}

struct Waiting {
    stream: TcpStream,
    peer: SocketAddr,
    seq: u64,
    since: Instant,
    stage: Stage,
}

/// A connection that got through its part of the handshake.
pub enum Ready {
    /// It sent a cookie: the server decides whether it is a data stream, a new test
    /// (then [`Gate::await_params`]) or refused.
    Cookie(Arrived),
    /// A new test's control connection sent its parameters (the framed body) and,
    /// if it was challenged, its proof.
    Params {
        arrived: Arrived,
        body: Vec<u8>,
        proof: Option<Proof>,
    },
    /// Its parameter frame is malformed (too long, empty): refuse it with this error.
    BadFrame { arrived: Arrived, error: PerfError },
}

/// A connection and what the gate learnt of it.
pub struct Arrived {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    /// Accept order (stream roles follow the order the client opened its streams in).
    pub seq: u64,
    pub cookie: Cookie,
    pub since: Instant,
}

/// A challenged connection's answer: the nonce it was sent, and its proof document.
pub struct Proof {
    pub nonce: Nonce,
    pub doc: Vec<u8>,
}

/// Closures of one kind, reported once per burst: a line when a burst ends (a second
/// with none) or, while one lasts, every ten seconds.
#[derive(Debug)]
pub struct Burst {
    what: &'static str,
    count: u64,
    first: Option<Instant>,
    last: Instant,
}

const BURST_QUIET: Duration = Duration::from_secs(1);
const BURST_REPORT_EVERY: Duration = Duration::from_secs(10);

impl Burst {
    pub fn new(what: &'static str) -> Burst {
        Burst {
            what,
            count: 0,
            first: None,
            last: Instant::now(),
        }
    }

    pub fn hit(&mut self, now: Instant) {
        self.count += 1;
        self.first.get_or_insert(now);
        self.last = now;
    }

    /// The burst's line if it is due: the burst has ended, or has lasted a while.
    pub fn due(&mut self, now: Instant) -> Option<String> {
        let first = self.first?;
        let ended = now.duration_since(self.last) >= BURST_QUIET;
        if !ended && now.duration_since(first) < BURST_REPORT_EVERY {
            return None;
        }
        let n = std::mem::take(&mut self.count);
        self.first = (!ended).then_some(now);
        (n > 0).then(|| {
            let span = if n == 1 {
                String::new()
            } else {
                format!(" in {:.1} s", self.last.duration_since(first).as_secs_f64())
            };
            format!(
                "closed {n} connection{}{span} {}",
                if n == 1 { "" } else { "s" },
                self.what
            )
        })
    }
}

pub struct Gate {
    caps: Caps,
    waiting: Vec<Waiting>,
    pub over_source_cap: Burst,
    pub over_total_cap: Burst,
    pub expired: Burst,
    /// Connections that hung up on the auth challenge (clients without the key).
    pub unanswered: Burst,
}

/// The group a source's connections share a cap in: the IPv4 address, or the IPv6 /64.
pub(super) fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut s = v6.segments();
                s[4..].fill(0);
                IpAddr::V6(s.into())
            }
        },
        v4 => v4,
    }
}

enum Step {
    Wait,
    Done(Got),
    Drop,
    /// It hung up on its challenge.
    Unanswered,
}

/// What a connection got through with (its stream is still in its `Waiting`).
enum Got {
    Cookie(Cookie),
    Params(Cookie, Vec<u8>, Option<Proof>),
    BadFrame(Cookie, PerfError),
}

impl Gate {
    pub fn new(caps: Caps) -> Gate {
        Gate {
            caps,
            waiting: vec![],
            over_source_cap: Burst::new(
                "waiting for their handshake, the longest waiting, over --max-pending-per-source",
            ),
            over_total_cap: Burst::new(
                "waiting for their handshake, the longest waiting, over --max-pending",
            ),
            expired: Burst::new("that had not sent their handshake within --handshake-timeout"),
            unanswered: Burst::new("that hung up on the auth challenge (clients without the key?)"),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.len()
    }

    /// The waiting connections' descriptors, in the order [`Gate::service`] takes.
    pub fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.waiting.iter().map(|w| w.stream.as_raw_fd())
    }

    /// Takes a new connection: reads what it has sent already and, if that is not
    /// its whole cookie, lets it wait (closing the oldest waiting one over a cap).
    pub fn admit(&mut self, stream: TcpStream, peer: SocketAddr, seq: u64, now: Instant) -> Option<Ready> {
        if stream.set_nonblocking(true).is_err() {
            return None;
        }
        let mut w = Waiting {
            stream,
            peer,
            seq,
            since: now,
            stage: Stage::Cookie {
                buf: [0; COOKIE_LEN],
                got: 0,
            },
        };
        match advance(&mut w) {
            Step::Done(got) => return Some(ready(w, got)),
            Step::Drop | Step::Unanswered => return None,
            Step::Wait => {}
        }
        let key = source_key(peer.ip());
        let same = self
            .waiting
            .iter()
            .filter(|o| source_key(o.peer.ip()) == key)
            .count();
        if same >= self.caps.per_source {
            self.evict_oldest(|o| source_key(o.peer.ip()) == key);
            self.over_source_cap.hit(now);
        } else if self.waiting.len() >= self.caps.total {
            self.evict_oldest(|_| true);
            self.over_total_cap.hit(now);
        }
        self.waiting.push(w);
        None
    }

    /// A new test's control connection: challenges it if the server has a key (a
    /// fresh `challenge` for this connection alone), asks for its parameters and waits
    /// for them (and the proof), within what is left of the deadline from its accept.
    pub fn await_params(&mut self, a: Arrived, challenge: Option<Nonce>) -> Option<Ready> {
        let mut stream = a.stream;
        let mut hello = vec![];
        if let Some(nonce) = &challenge {
            hello.push(auth::CHALLENGE_STATE);
            hello.extend_from_slice(&emit_json_frame(&nonce.challenge_json()));
        }
        hello.push(State::ParamExchange.emit());
        if stream.write_all(&hello).is_err() {
            return None;
        }
        let mut w = Waiting {
            stream,
            peer: a.peer,
            seq: a.seq,
            since: a.since,
            stage: Stage::Params {
                cookie: a.cookie,
                challenge,
                frame: Frame::new(self.caps.max_params),
                params: None,
            },
        };
        match advance(&mut w) {
            Step::Done(got) => Some(ready(w, got)),
            Step::Drop => None,
            Step::Unanswered => {
                self.unanswered.hit(Instant::now());
                None
            }
            Step::Wait => {
                // It was counted when admitted: it goes back without a cap check.
                self.waiting.push(w);
                None
            }
        }
    }

    fn evict_oldest(&mut self, pred: impl Fn(&Waiting) -> bool) {
        let oldest = (self.waiting.iter().enumerate())
            .filter(|(_, w)| pred(w))
            .min_by_key(|(_, w)| (w.since, w.seq))
            .map(|(i, _)| i);
        if let Some(i) = oldest {
            self.waiting.swap_remove(i);
        }
    }

    /// Reads from the connections `readable` marks (same order as [`Gate::fds`]) and
    /// closes those past their deadline; returns those that got through.
    pub fn service(&mut self, readable: &[bool], now: Instant) -> Vec<Ready> {
        let mut out = vec![];
        let waiting = std::mem::take(&mut self.waiting);
        for (i, mut w) in waiting.into_iter().enumerate() {
            if readable.get(i).copied().unwrap_or(false) {
                match advance(&mut w) {
                    Step::Done(got) => {
                        out.push(ready(w, got));
                        continue;
                    }
                    Step::Drop => continue,
                    Step::Unanswered => {
                        self.unanswered.hit(now);
                        continue;
                    }
                    Step::Wait => {}
                }
            }
            if now.duration_since(w.since) >= self.caps.deadline {
                self.expired.hit(now);
                continue; // dropped: closed
            }
            self.waiting.push(w);
        }
        out
    }

    /// When the next waiting connection's deadline falls.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.waiting.iter().map(|w| w.since + self.caps.deadline).min()
    }

    /// The burst lines that are due.
    pub fn reports(&mut self, now: Instant) -> Vec<String> {
        [
            &mut self.over_source_cap,
            &mut self.over_total_cap,
            &mut self.expired,
            &mut self.unanswered,
        ]
        .into_iter()
        .filter_map(|b| b.due(now))
        .collect()
    }
}

/// Reads into `buf[*got..]` without blocking; false: the peer closed or failed.
fn fill(stream: &mut TcpStream, buf: &mut [u8], got: &mut usize) -> bool {
    while *got < buf.len() {
        match stream.read(&mut buf[*got..]) {
            Ok(0) => return false,
            Ok(n) => *got += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// Reads what the connection's stage needs, as far as it has arrived.
fn advance(w: &mut Waiting) -> Step {
    if let Stage::Cookie { buf, got } = &mut w.stage {
        if !fill(&mut w.stream, buf, got) {
            return Step::Drop;
        }
        if *got < COOKIE_LEN {
            return Step::Wait;
        }
        let Ok(cookie) = Cookie::parse(buf) else {
            let _ = w.stream.write_all(&[State::AccessDenied.emit()]);
            return Step::Drop;
        };
        return Step::Done(Got::Cookie(cookie));
    }
    let Stage::Params {
        cookie,
        challenge,
        frame,
        params,
    } = &mut w.stage
    else {
        unreachable!("the cookie stage returned above")
    };
    let cookie = *cookie;
    if params.is_none() {
        match frame.read(&mut w.stream) {
            FrameStep::Wait => return Step::Wait,
            FrameStep::Closed if challenge.is_some() => return Step::Unanswered,
            FrameStep::Closed => return Step::Drop,
            FrameStep::Bad(e) => return Step::Done(Got::BadFrame(cookie, e)),
            FrameStep::Done(body) => match challenge {
                None => return Step::Done(Got::Params(cookie, body, None)),
                Some(_) => {
                    *params = Some(body);
                    *frame = Frame::new(auth::MAX_FRAME);
                }
            },
        }
    }
    let Some(nonce) = *challenge else {
        return Step::Drop; // only a challenged connection gets here
    };
    match frame.read(&mut w.stream) {
        FrameStep::Wait => Step::Wait,
        FrameStep::Closed => Step::Unanswered,
        FrameStep::Bad(e) => Step::Done(Got::BadFrame(cookie, e)),
        FrameStep::Done(doc) => Step::Done(Got::Params(
            cookie,
            params.take().unwrap_or_default(),
            Some(Proof { nonce, doc }),
        )),
    }
}

fn ready(w: Waiting, got: Got) -> Ready {
    let arrived = |cookie| Arrived {
        stream: w.stream,
        peer: w.peer,
        seq: w.seq,
        cookie,
        since: w.since,
    };
    match got {
        Got::Cookie(c) => Ready::Cookie(arrived(c)),
        Got::Params(c, body, proof) => Ready::Params {
            arrived: arrived(c),
            body,
            proof,
        },
        Got::BadFrame(c, error) => Ready::BadFrame {
            arrived: arrived(c),
            error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair(l: &TcpListener) -> (TcpStream, TcpStream, SocketAddr) {
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, peer) = l.accept().unwrap();
        (c, s, peer)
    }

    fn caps(per_source: usize, total: usize) -> Caps {
        Caps {
            deadline: Duration::from_secs(5),
            per_source,
            total,
            max_params: 1024,
        }
    }

    #[test]
    fn over_the_per_source_cap_the_oldest_waiting_connection_is_closed() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut g = Gate::new(caps(2, 10));
        let t0 = Instant::now();
        let mut clients = vec![];
        for i in 0..3u64 {
            let (c, s, peer) = pair(&l);
            assert!(g.admit(s, peer, i, t0 + Duration::from_millis(i)).is_none());
            clients.push(c);
        }
        assert_eq!(g.len(), 2);
        // The first (oldest) was closed: its client reads EOF.
        let mut b = [0u8; 1];
        clients[0].set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(clients[0].read(&mut b).unwrap(), 0);
        assert_eq!(g.over_source_cap.count, 1);
    }

    #[test]
    fn the_deadline_counts_from_accept_not_from_the_last_byte() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut g = Gate::new(caps(4, 4));
        let t0 = Instant::now();
        let (mut c, s, peer) = pair(&l);
        assert!(g.admit(s, peer, 1, t0).is_none());
        c.write_all(b"ab").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(g.service(&[true], t0 + Duration::from_secs(4)).is_empty());
        assert_eq!(g.len(), 1, "still within its deadline");
        c.write_all(b"c").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(g.service(&[true], t0 + Duration::from_secs(5)).is_empty());
        assert_eq!(g.len(), 0, "a byte just now does not extend the deadline");
        assert!(g.reports(t0 + Duration::from_secs(7))[0].contains("closed 1 connection that"));
    }

    #[test]
    fn a_whole_cookie_and_parameters_get_through() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut g = Gate::new(caps(4, 4));
        let (mut c, s, peer) = pair(&l);
        let cookie = [b'a'; 36];
        c.write_all(&cookie).unwrap();
        c.write_all(&[0]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let Some(Ready::Cookie(a)) = g.admit(s, peer, 1, Instant::now()) else {
            panic!("cookie not read at accept")
        };
        assert!(g.await_params(a, None).is_none());
        let mut b = [0u8; 1];
        c.read_exact(&mut b).unwrap();
        assert_eq!(b[0], State::ParamExchange.emit());
        c.write_all(&[0, 0, 0, 2, b'{', b'}']).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let got = g.service(&[true], Instant::now());
        assert!(matches!(&got[..], [Ready::Params { body, proof: None, .. }] if body == b"{}"));
    }

    #[test]
    fn bursts_are_reported_once_with_their_count() {
        let t0 = Instant::now();
        let mut b = Burst::new("x");
        for i in 0..100 {
            b.hit(t0 + Duration::from_millis(i));
        }
        assert_eq!(b.due(t0 + Duration::from_millis(500)), None);
        let line = b.due(t0 + Duration::from_secs(2)).unwrap();
        assert_eq!(line, "closed 100 connections in 0.1 s x");
        assert_eq!(b.due(t0 + Duration::from_secs(30)), None);
    }

    #[test]
    fn ipv6_sources_share_a_cap_per_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(source_key(a), source_key(b));
        assert_ne!(source_key(a), source_key(c));
        let m: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(source_key(m), "10.0.0.1".parse::<IpAddr>().unwrap());
    }
}
