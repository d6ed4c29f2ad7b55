//! `netrig-link shell`: a mahimahi-style shell. CMD runs in a namespace whose only
//! link leads, through the emulated link, to the host namespace:
//!
//! ```text
//!   [ns PREFIX-in] Pi0 ==veth== Pi1 [ns PREFIX-emu: netrig-link] Po1 ==veth== Po0 [host]
//!      10.254.N.2/30                  a ──a_to_b──▶ b  (uplink)          10.254.N.1/30
//! ```
//!
//! The emulator's namespace holds the middle ends: if the daemon dies, nothing passes.
//! Everything is named after the run (`nrl<pid>`), and removed on exit, or later by
//! `netrig-link clean`.

use std::io;
use std::process::{Child, Command};
use std::sync::atomic::Ordering;

use netrig_core::link::spec::DirectionSpec;

use crate::config::{Config, LinkConfig};
use crate::daemon::{self, Daemon};
use crate::netns::{self, ip, ip_in};

pub const PREFIX: &str = "nrl";

pub struct Shell {
    pub prefix: String,
    pub net: u32,
    made: bool,
}

impl Shell {
    pub fn new() -> Shell {
        let pid = std::process::id();
        Shell {
            prefix: format!("{PREFIX}{pid}"),
            net: pid % 250 + 1,
            made: false,
        }
    }

    pub fn inner(&self) -> String {
        format!("{}-in", self.prefix)
    }

    pub fn emu(&self) -> String {
        format!("{}-emu", self.prefix)
    }

    pub fn inner_addr(&self) -> String {
        format!("10.254.{}.2", self.net)
    }

    pub fn host_addr(&self) -> String {
        format!("10.254.{}.1", self.net)
    }

    /// Makes the namespaces and veths; on failure, removes what it made.
    pub fn build(&mut self) -> io::Result<()> {
        self.made = true;
        let r = self.try_build();
        if r.is_err() {
            self.teardown();
        }
        r
    }

    fn try_build(&self) -> io::Result<()> {
        let (p, inner, emu) = (&self.prefix, self.inner(), self.emu());
        let (i0, i1, o0, o1) = (
            format!("{p}i0"),
            format!("{p}i1"),
            format!("{p}o0"),
            format!("{p}o1"),
        );
        ip(&["netns", "add", &inner])?;
        ip(&["netns", "add", &emu])?;
        ip(&[
            "link", "add", &i0, "netns", &inner, "type", "veth", "peer", "name", &i1, "netns", &emu,
        ])?;
        ip(&[
            "link", "add", &o0, "type", "veth", "peer", "name", &o1, "netns", &emu,
        ])?;
        let inner_cidr = format!("{}/30", self.inner_addr());
        let host_cidr = format!("{}/30", self.host_addr());
        ip_in(&inner, &["addr", "add", &inner_cidr, "dev", &i0])?;
        ip_in(&inner, &["link", "set", &i0, "up"])?;
        ip_in(&inner, &["link", "set", "lo", "up"])?;
        ip_in(&inner, &["route", "add", "default", "via", &self.host_addr()])?;
        ip(&["addr", "add", &host_cidr, "dev", &o0])?;
        ip(&["link", "set", &o0, "up"])?;
        ip_in(&emu, &["link", "set", &i1, "up"])?;
        ip_in(&emu, &["link", "set", &o1, "up"])?;
        ip_in(&emu, &["link", "set", "lo", "up"])?;
        // Every frame a wire frame: offloads off on all four ends.
        netns::within(&inner, || crate::afpacket::offloads_off(&i0))?;
        crate::afpacket::offloads_off(&o0)?;
        Ok(())
    }

    pub fn teardown(&mut self) {
        if !self.made {
            return;
        }
        // Deleting the namespaces deletes the veths in them, and so their peers.
        for ns in [self.inner(), self.emu()] {
            let _ = ip(&["netns", "del", &ns]);
        }
        let _ = ip(&["link", "del", &format!("{}o0", self.prefix)]);
        self.made = false;
    }

    pub fn link_config(&self, uplink: DirectionSpec, downlink: DirectionSpec) -> LinkConfig {
        LinkConfig {
            name: "shell".into(),
            a: format!("{}i1", self.prefix),
            b: format!("{}o1", self.prefix),
            both: None,
            a_to_b: Some(uplink),
            b_to_a: Some(downlink),
        }
    }

    /// Runs `cmd` inside, with the emulator running until it exits; returns its status.
    pub fn run(
        &mut self,
        mut cfg: Config,
        uplink: DirectionSpec,
        downlink: DirectionSpec,
        cmd: &[String],
    ) -> io::Result<i32> {
        self.build()?;
        cfg.links = vec![self.link_config(uplink, downlink)];
        let emu = self.emu();
        let mut d = netns::within(&emu, || Daemon::new(&cfg))?;
        let mut child: Child = Command::new("ip")
            .args(["netns", "exec", &self.inner()])
            .args(cmd)
            .env("NETRIG_LINK_HOST", self.host_addr())
            .env("NETRIG_LINK_ADDR", self.inner_addr())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", cmd.join(" "))))?;
        let worker = std::thread::spawn(move || d.run());
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if daemon::STOP.load(Ordering::Relaxed) {
                let _ = child.kill();
                break child.wait()?;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        daemon::STOP.store(true, Ordering::SeqCst);
        let totals = worker
            .join()
            .map_err(|_| io::Error::other("the emulator thread panicked"))??;
        eprintln!("{}", totals);
        self.teardown();
        Ok(status.code().unwrap_or(1))
    }
}

impl Default for Shell {
    fn default() -> Self {
        Shell::new()
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Removes what shells of dead processes left: namespaces `nrl<pid>-*` (and with them
/// their veths) whose pid is gone. Returns the names removed.
pub fn clean() -> Vec<String> {
    let mut removed = vec![];
    for ns in netns::list(PREFIX) {
        let pid: Option<u32> = ns[PREFIX.len()..].split('-').next().and_then(|p| p.parse().ok());
        if let Some(pid) = pid {
            if !netns::alive(pid) && ip(&["netns", "del", &ns]).is_ok() {
                let _ = ip(&["link", "del", &format!("{PREFIX}{pid}o0")]);
                removed.push(ns);
            }
        }
    }
    removed
}
