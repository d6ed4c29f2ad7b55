//! Every running test's hard end: the time past which the server closes the test
//! whatever its client does (trickles its results a byte at a time, stops reading,
//! never sends TEST_END), so that no client holds a slot beyond its test's declared
//! end and the grace.
//!
//! A test registers its control connection when it takes its slot, with a deadline
//! for setting up its streams; when it starts, the deadline moves to its declared end
//! (`-O` and `-t`, or `--max-duration` for `-n`/`-k`) plus the grace and one handshake
//! deadline for the results. The accepting thread calls [`Watch::expire`] every round
//! (at most 200 ms apart): a test past its deadline is told SERVER_TERMINATE (without
//! waiting), its control and data connections are shut down and its streams stopped,
//! which unblocks every read and write of its threads.

use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use netrig_core::wire::iperf3::State;

use crate::engine::RunControl;
use crate::sys;

struct Deadline {
    at: Instant,
    /// What the test was closed for, if it is.
    why: String,
}

/// One test, as the watch sees it.
pub struct Watched {
    id: u64,
    ctrl: TcpStream,
    deadline: Mutex<Deadline>,
    data: Mutex<Vec<TcpStream>>,
    run: Mutex<Option<Arc<RunControl>>>,
    closed: AtomicBool,
}

impl Watched {
    /// A new deadline, and what passing it means ("past its end: ...").
    pub fn set_deadline(&self, at: Instant, why: String) {
        *self.deadline.lock().unwrap() = Deadline { at, why };
    }

    /// A data connection to shut down with the test.
    pub fn add_data(&self, s: &TcpStream) {
        if let Ok(d) = s.try_clone() {
            self.data.lock().unwrap().push(d);
        }
    }

    /// The test's streams, to stop with it.
    pub fn set_run(&self, run: Arc<RunControl>) {
        *self.run.lock().unwrap() = Some(run);
    }

    /// Why the server closed the test, if it did.
    pub fn closed(&self) -> Option<String> {
        self.closed
            .load(Relaxed)
            .then(|| self.deadline.lock().unwrap().why.clone())
    }

    fn close(&self, why: Option<String>) {
        if self.closed.swap(true, Relaxed) {
            return;
        }
        if let Some(why) = why {
            self.deadline.lock().unwrap().why = why;
        }
        // SERVER_TERMINATE, so that iperf3 says "the server has terminated"; never
        // waiting (a client that does not read has a full buffer).
        let byte = [State::ServerTerminate.emit()];
        // SAFETY: a valid socket of ours and a one-byte buffer; no flag changes the fd.
        unsafe {
            libc::send(
                self.ctrl.as_raw_fd(),
                byte.as_ptr().cast(),
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        let _ = self.ctrl.shutdown(Shutdown::Both);
        for d in self.data.lock().unwrap().iter() {
            let _ = d.shutdown(Shutdown::Both);
        }
        if let Some(run) = self.run.lock().unwrap().as_ref() {
            run.stop_at(sys::monotonic_ns());
        }
    }
}

/// The running tests' deadlines.
#[derive(Default)]
pub struct Watch {
    tests: Mutex<Vec<Arc<Watched>>>,
    next: AtomicU64,
}

/// A test's place in the watch, removed when dropped.
pub struct Entry<'a> {
    watch: &'a Watch,
    pub test: Arc<Watched>,
}

impl Drop for Entry<'_> {
    fn drop(&mut self) {
        let id = self.test.id;
        self.watch
            .tests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|t| t.id != id);
    }
}

impl Watch {
    /// Watches the test on `ctrl` (a duplicate of it is kept), to be closed at `at`.
    pub fn add(&self, ctrl: &TcpStream, at: Instant, why: String) -> std::io::Result<Entry<'_>> {
        let test = Arc::new(Watched {
            id: self.next.fetch_add(1, Relaxed),
            ctrl: ctrl.try_clone()?,
            deadline: Mutex::new(Deadline { at, why }),
            data: Mutex::new(vec![]),
            run: Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        self.tests.lock().unwrap().push(test.clone());
        Ok(Entry { watch: self, test })
    }

    /// Closes every test past its deadline; how many.
    pub fn expire(&self, now: Instant) -> usize {
        let due: Vec<Arc<Watched>> = self
            .tests
            .lock()
            .unwrap()
            .iter()
            .filter(|t| !t.closed.load(Relaxed) && t.deadline.lock().unwrap().at <= now)
            .cloned()
            .collect();
        for t in &due {
            t.close(None);
        }
        due.len()
    }

    /// Closes every test, for `why`; how many.
    pub fn close_all(&self, why: &str) -> usize {
        let all: Vec<Arc<Watched>> = self.tests.lock().unwrap().clone();
        for t in &all {
            t.close(Some(why.to_string()));
        }
        all.len()
    }

    /// Tests watched.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.tests.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::Duration;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (s, c)
    }

    #[test]
    fn a_test_past_its_deadline_is_closed_and_its_blocked_read_returns() {
        let w = Watch::default();
        let (server, mut client) = pair();
        let now = Instant::now();
        let e = w
            .add(&server, now + Duration::from_millis(50), "past its end".into())
            .unwrap();
        // The test's thread, blocked reading what the client never sends.
        let mut ctrl = server.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut b = [0u8; 1];
            ctrl.read(&mut b).map(|n| n == 0).unwrap_or(true)
        });
        assert_eq!(w.expire(now), 0);
        assert_eq!(e.test.closed(), None);
        assert_eq!(w.expire(now + Duration::from_millis(60)), 1);
        assert!(reader.join().unwrap(), "the blocked read saw the end");
        assert_eq!(e.test.closed().as_deref(), Some("past its end"));
        // The client heard SERVER_TERMINATE, then the end.
        let mut got = vec![];
        client.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        client.read_to_end(&mut got).unwrap();
        assert_eq!(got, vec![State::ServerTerminate.emit()]);
        // Closed once; gone from the watch when the test ends.
        assert_eq!(w.expire(now + Duration::from_secs(1)), 0);
        drop(e);
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn a_moved_deadline_and_closing_all() {
        let w = Watch::default();
        let (s1, _c1) = pair();
        let (s2, _c2) = pair();
        let now = Instant::now();
        let a = w.add(&s1, now, "setup".into()).unwrap();
        let b = w.add(&s2, now + Duration::from_secs(60), "later".into()).unwrap();
        a.test
            .set_deadline(now + Duration::from_secs(10), "its end".into());
        let run = RunControl::new(0, 0);
        a.test.set_run(run.clone());
        assert_eq!(w.expire(now + Duration::from_secs(1)), 0);
        assert_eq!(w.close_all("--exit-after"), 2);
        assert!(run.stopped());
        assert_eq!(a.test.closed().as_deref(), Some("--exit-after"));
        assert_eq!(b.test.closed().as_deref(), Some("--exit-after"));
    }
}
