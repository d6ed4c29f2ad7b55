//! Test slots and streams, in all and per source: what a test that passed its
//! handshake may take before it gets a thread. A source is an IPv4 address or an IPv6
//! /64 (the gate's grouping, one host's share of addresses), so that one address
//! cannot take every slot (`--max-tests-per-source`, below `--max-tests`) nor every
//! stream (`--max-streams`, of which a source holds its share: the proportion of the
//! slots it may hold). A test holds what it took until its [`Slot`] is dropped.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::config::ServerConfig;

/// The limits (from the server's configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub tests: usize,
    pub tests_per_source: usize,
    pub streams: usize,
    pub streams_per_source: usize,
}

impl Caps {
    pub fn of(cfg: &ServerConfig) -> Caps {
        Caps {
            tests: cfg.max_tests.max(1),
            tests_per_source: cfg.max_tests_per_source.clamp(1, cfg.max_tests.max(1)),
            streams: cfg.max_streams.max(1),
            streams_per_source: cfg.streams_per_source(),
        }
    }
}

/// Why a test gets no slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Every slot is taken.
    Tests { max: usize },
    /// The source holds every slot it may.
    SourceTests { max: usize },
    /// The test alone asks for more streams than one source may hold.
    TestStreams { asked: usize, share: usize, max: usize },
    /// The tests running hold too many streams to add this one's.
    Streams { asked: usize, held: usize, max: usize },
    /// The source's tests hold too many streams to add this one's.
    SourceStreams {
        asked: usize,
        held: usize,
        share: usize,
        max: usize,
    },
}

impl Refusal {
    /// The refusal in words for the client (and the server's log), `source` being the
    /// client's group (see [`source_label`]).
    pub fn sentence(&self, source: &str) -> String {
        match *self {
            Refusal::Tests { max } => format!(
                "the server is busy: it runs {}, its most (--max-tests {max}); try again later",
                tests(max)
            ),
            Refusal::SourceTests { max } => format!(
                "the server already runs {} from {source}, the most one address may run at once (--max-tests-per-source {max}); wait for one of them to end",
                tests(max)
            ),
            Refusal::TestStreams { asked, share, max } => format!(
                "the test asks for {asked} streams and one address may hold {share} at once on this server (its share of --max-streams {max}); ask for fewer (-P; --bidir counts each twice)"
            ),
            Refusal::Streams { asked, held, max } => format!(
                "the server is busy: its tests hold {held} of its {max} streams (--max-streams) and this test asks for {asked}; try again later"
            ),
            Refusal::SourceStreams { asked, held, share, max } => format!(
                "the tests from {source} hold {held} of the {share} streams one address may hold (its share of --max-streams {max}) and this test asks for {asked}; wait for one of them to end"
            ),
        }
    }
}

fn tests(n: usize) -> String {
    format!("{n} test{}", if n == 1 { "" } else { "s" })
}

/// A source as the refusals name it: the address, or the IPv6 /64.
pub fn source_label(key: IpAddr) -> String {
    match key {
        IpAddr::V6(v6) => format!("{v6}/64"),
        v4 => v4.to_string(),
    }
}

#[derive(Debug, Default)]
struct Held {
    tests: usize,
    streams: usize,
}

#[derive(Debug, Default)]
struct Inner {
    all: Held,
    by_source: HashMap<IpAddr, Held>,
}

/// The server's slots and streams.
#[derive(Debug)]
pub struct Slots {
    caps: Caps,
    inner: Arc<Mutex<Inner>>,
}

/// One test's slot and streams, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    inner: Arc<Mutex<Inner>>,
    source: IpAddr,
    streams: usize,
}

impl Slots {
    pub fn new(caps: Caps) -> Slots {
        Slots {
            caps,
            inner: Arc::default(),
        }
    }

    /// A slot and `streams` streams for a test from `source` (its group's key), or why
    /// not. Checked in this order: the server's slots, the source's, the test's own
    /// size, the server's streams, the source's.
    pub fn take(&self, source: IpAddr, streams: usize) -> Result<Slot, Refusal> {
        let c = self.caps;
        let mut inner = self.inner.lock().unwrap();
        let mine = inner
            .by_source
            .get(&source)
            .map(|h| (h.tests, h.streams))
            .unwrap_or((0, 0));
        if inner.all.tests >= c.tests {
            return Err(Refusal::Tests { max: c.tests });
        }
        if mine.0 >= c.tests_per_source {
            return Err(Refusal::SourceTests {
                max: c.tests_per_source,
            });
        }
        if streams > c.streams_per_source {
            return Err(Refusal::TestStreams {
                asked: streams,
                share: c.streams_per_source,
                max: c.streams,
            });
        }
        if inner.all.streams + streams > c.streams {
            return Err(Refusal::Streams {
                asked: streams,
                held: inner.all.streams,
                max: c.streams,
            });
        }
        if mine.1 + streams > c.streams_per_source {
            return Err(Refusal::SourceStreams {
                asked: streams,
                held: mine.1,
                share: c.streams_per_source,
                max: c.streams,
            });
        }
        inner.all.tests += 1;
        inner.all.streams += streams;
        let held = inner.by_source.entry(source).or_default();
        held.tests += 1;
        held.streams += streams;
        Ok(Slot {
            inner: self.inner.clone(),
            source,
            streams,
        })
    }

    /// Tests running now.
    pub fn active(&self) -> usize {
        self.inner.lock().unwrap().all.tests
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.all.tests -= 1;
        inner.all.streams -= self.streams;
        if let Some(h) = inner.by_source.get_mut(&self.source) {
            h.tests -= 1;
            h.streams -= self.streams;
            if h.tests == 0 {
                inner.by_source.remove(&self.source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(tests: usize, per_source: usize, streams: usize) -> Caps {
        let cfg = ServerConfig {
            max_tests: tests,
            max_tests_per_source: per_source,
            max_streams: streams,
            ..ServerConfig::default()
        };
        Caps::of(&cfg)
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

    #[test]
    fn one_source_cannot_take_every_slot() {
        // The probe: --max-tests 4, four tests from one address.
        let s = Slots::new(caps(4, crate::config::tests_per_source(4), 1024));
        let first = s.take(A, 1).unwrap();
        assert_eq!(s.take(A, 1).unwrap_err(), Refusal::SourceTests { max: 1 });
        let b = s.take(B, 1).unwrap();
        assert_eq!(s.active(), 2);
        drop(first);
        let again = s.take(A, 1).unwrap();
        drop((b, again));
        assert_eq!(s.active(), 0);
        assert!(s.inner.lock().unwrap().by_source.is_empty());
    }

    #[test]
    fn the_servers_slots_still_bound_all_sources() {
        let s = Slots::new(caps(2, 1, 1024));
        let _a = s.take(A, 1).unwrap();
        let _b = s.take(B, 1).unwrap();
        let c = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 3));
        assert_eq!(s.take(c, 1).unwrap_err(), Refusal::Tests { max: 2 });
    }

    #[test]
    fn streams_are_capped_in_all_and_per_source() {
        // 8 streams in all; 2 of 4 slots per source: a source's share is 4 streams.
        let s = Slots::new(caps(4, 2, 8));
        assert_eq!(
            s.take(A, 5).unwrap_err(),
            Refusal::TestStreams {
                asked: 5,
                share: 4,
                max: 8
            }
        );
        let a = s.take(A, 3).unwrap();
        assert_eq!(
            s.take(A, 2).unwrap_err(),
            Refusal::SourceStreams {
                asked: 2,
                held: 3,
                share: 4,
                max: 8
            }
        );
        let _a2 = s.take(A, 1).unwrap();
        let _b = s.take(B, 4).unwrap();
        let c = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 3));
        assert_eq!(
            s.take(c, 1).unwrap_err(),
            Refusal::Streams {
                asked: 1,
                held: 8,
                max: 8
            }
        );
        drop(a);
        let _c = s.take(c, 3).unwrap();
    }

    #[test]
    fn the_defaults_let_one_source_run_the_largest_test_but_not_hog() {
        let cfg = ServerConfig::default();
        assert_eq!(
            (cfg.max_tests, cfg.max_tests_per_source, cfg.max_streams),
            (64, 16, 1024)
        );
        // -P 128 --bidir: 256 streams, one source's share.
        assert_eq!(cfg.streams_per_source(), 256);
        let s = Slots::new(Caps::of(&cfg));
        let _big = s.take(A, 256).unwrap();
        assert!(matches!(s.take(A, 1), Err(Refusal::SourceStreams { .. })));
        assert!(s.take(B, 256).is_ok());
    }

    #[test]
    fn a_refusal_names_the_limit_and_the_source() {
        let r = Refusal::SourceTests { max: 1 }.sentence(&source_label(A));
        assert!(
            r.contains("from 127.0.0.1") && r.contains("--max-tests-per-source 1"),
            "{r}"
        );
        let v6: IpAddr = "2001:db8::".parse().unwrap();
        assert_eq!(source_label(v6), "2001:db8::/64");
        let r = Refusal::TestStreams {
            asked: 256,
            share: 64,
            max: 256,
        }
        .sentence("x");
        assert!(
            r.contains("256 streams") && r.contains("--max-streams 256"),
            "{r}"
        );
    }
}
