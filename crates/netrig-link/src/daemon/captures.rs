//! The daemon's side of pcapng captures: starting and stopping them on a link's
//! directions, and handing a direction's dropped frames to them. Several captures may
//! run on one link (say, one whole and one filtered), each to its own path.
//!
//! Start and stop replies carry the link's counters taken under the same locks as the
//! capture was attached or detached: what a capture shows can be checked frame for
//! frame against them.

use std::sync::{Arc, Mutex};

use netrig_core::link::direction::Dropped;
use serde_json::{json, Value};

use super::{lock, monotonic_ns, wall_ns, Daemon, DirState};
use crate::capture::{Capture, CaptureRequest};

impl DirState {
    /// Hands the frames the direction dropped (and kept) to its captures; their buffers
    /// are left in `spent` for the caller to reuse.
    pub(super) fn capture_drops(&mut self, d: usize, vnet: usize, spent: &mut Vec<Dropped>) {
        let start = spent.len();
        self.dir.take_dropped(spent);
        for c in &self.captures {
            let mut c = lock(c);
            for x in &spent[start..] {
                let (hdr, frame) = x.pkt.data.split_at(vnet.min(x.pkt.data.len()));
                c.dropped(d, x.at_ns, hdr, frame, x.reason);
            }
        }
    }
}

impl Daemon {
    /// Starts a pcapng capture of a link, to a path no running capture writes. The
    /// reply: {"capture": status, "link_counters": the link's counters now}.
    pub fn start_capture(&mut self, req: &CaptureRequest) -> Result<Value, String> {
        let opts = req.check()?;
        let i = self
            .link_index(&req.link)
            .ok_or_else(|| format!("no link '{}'", req.link))?;
        let path = opts.path.clone();
        if self.captures.iter().any(|c| lock(c).path() == path) {
            return Err(format!("a capture already writes to {}", path.display()));
        }
        let l = &self.links[i];
        let (mut a, mut b) = (lock(&l.dirs[0]), lock(&l.dirs[1]));
        let cap = Capture::start(&req.link, opts, [&a.spec, &b.spec], monotonic_ns(), wall_ns())
            .map_err(|e| e.to_string())?;
        let status = cap.status();
        let covers = [cap.covers(0), cap.covers(1)];
        let cap = Arc::new(Mutex::new(cap));
        for (d, st) in [&mut a, &mut b].into_iter().enumerate() {
            if covers[d] {
                st.captures.push(cap.clone());
                st.dir.set_keep_dropped(true);
            }
        }
        let counters = json!({ "a_to_b": a.dir.counters, "b_to_a": b.dir.counters });
        self.captures.push(cap);
        Ok(json!({ "ok": true, "capture": status, "link_counters": counters }))
    }

    /// Stops a capture of `link` (the one writing to `path`, or its only one): what the
    /// link dropped and has not handed over yet is written, the file flushed and
    /// closed. The reply: {"capture": final status, "link_counters": the link's
    /// counters now}.
    pub fn stop_capture(&mut self, link: &str, path: Option<&str>) -> Result<Value, String> {
        let mine: Vec<usize> = (0..self.captures.len())
            .filter(|&k| {
                let c = lock(&self.captures[k]);
                c.link() == link && path.is_none_or(|p| c.path() == std::path::Path::new(p))
            })
            .collect();
        let pos = match (mine.as_slice(), path) {
            ([k], _) => *k,
            ([], None) => return Err(format!("link '{link}' has no capture")),
            ([], Some(p)) => return Err(format!("link '{link}' has no capture to {p}")),
            (several, _) => {
                let paths: Vec<String> = several
                    .iter()
                    .map(|&k| lock(&self.captures[k]).path().display().to_string())
                    .collect();
                return Err(format!(
                    "link '{link}' has {} captures ({}): give the path of one",
                    paths.len(),
                    paths.join(", ")
                ));
            }
        };
        let cap = self.captures.remove(pos);
        let i = self.link_index(link).ok_or_else(|| format!("no link '{link}'"))?;
        let l = &self.links[i];
        let (mut a, mut b) = (lock(&l.dirs[0]), lock(&l.dirs[1]));
        let mut spent = vec![];
        for (d, st) in [&mut a, &mut b].into_iter().enumerate() {
            if st.captures.iter().any(|c| Arc::ptr_eq(c, &cap)) {
                // Its last frames: what the direction dropped since the worker's turn.
                st.capture_drops(d, self.vnet, &mut spent);
                st.captures.retain(|c| !Arc::ptr_eq(c, &cap));
                let keep = !st.captures.is_empty();
                st.dir.set_keep_dropped(keep);
            }
        }
        let counters = json!({ "a_to_b": a.dir.counters, "b_to_a": b.dir.counters });
        drop((a, b));
        // No direction holds it now: this is the last reference.
        let status = match Arc::try_unwrap(cap) {
            Ok(m) => m.into_inner().unwrap_or_else(|p| p.into_inner()).finish(),
            Err(shared) => {
                let mut c = lock(&shared);
                c.flush();
                c.status()
            }
        };
        Ok(json!({ "ok": true, "capture": status, "link_counters": counters }))
    }

    pub(super) fn capture_status(&self) -> Vec<Value> {
        self.captures.iter().map(|c| lock(c).status()).collect()
    }
}
