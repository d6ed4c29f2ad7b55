//! Network namespaces and veth pairs for the standalone modes, made with `ip` (a
//! handful of commands per run), every name carrying the run's prefix so that
//! `netrig-link clean` can find what a crashed run left.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::process::Command;

pub fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("ip: {e}")))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

pub fn ip_in(ns: &str, args: &[&str]) -> io::Result<()> {
    let mut full = vec!["-n", ns];
    full.extend_from_slice(args);
    ip(&full)
}

/// Runs `f` with this thread inside namespace `ns`, then returns to where it was.
pub fn within<T>(ns: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let here = File::open("/proc/thread-self/ns/net")?;
    let there = File::open(format!("/var/run/netns/{ns}"))
        .map_err(|e| io::Error::new(e.kind(), format!("namespace {ns}: {e}")))?;
    // SAFETY: setns on a namespace descriptor we opened.
    if unsafe { libc::setns(there.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let result = f();
    // SAFETY: as above; returning to the original namespace.
    if unsafe { libc::setns(here.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    result
}

/// Namespaces whose name starts with `prefix`.
pub fn list(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/var/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether process `pid` is alive.
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}
