//! `-D/--daemon` and `-I/--pidfile`, as iperf3 has them: the server forks into the
//! background (a new session, working directory `/`, stdio on /dev/null, or stdout and
//! stderr on `--logfile`), and the pidfile holds its PID until it exits (removed at a
//! normal end and on SIGTERM, SIGINT or SIGHUP). Unlike iperf3, the command returns only
//! once the daemon listens, and with its error (exit 1) if it cannot.
//!
//! Call [`daemonize`] before any thread starts: `fork` keeps only the calling thread.

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum DaemonError {
    #[error("-I {path}: another instance (PID {pid}) appears to be running")]
    Running { path: PathBuf, pid: i32 },
    #[error("-I {path}: {source}")]
    Pidfile { path: PathBuf, source: std::io::Error },
    #[error("-D: unable to become a daemon: {0}")]
    Fork(std::io::Error),
    #[error("-D: {0}")]
    Child(String),
}

/// The daemon's end of the pipe its parent waits on.
pub struct Ready(File);

impl Ready {
    /// Tells the waiting parent that the server listens (or why it cannot).
    pub fn report(mut self, outcome: Result<(), String>) {
        let msg = match outcome {
            Ok(()) => "ok\n".to_string(),
            Err(e) => format!("error {e}\n"),
        };
        let _ = self.0.write_all(msg.as_bytes());
    }
}

fn last_os() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Forks. The parent waits for the child's word and exits with it (never returns);
/// the child returns, detached, with the pipe to report on.
///
/// # Safety
/// No other thread may exist yet: after `fork` only the calling thread lives on in the
/// child, so a lock another thread held would stay held for ever.
pub unsafe fn daemonize(logfile: Option<&Path>) -> Result<Ready, DaemonError> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is valid for two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(DaemonError::Fork(last_os()));
    }
    // SAFETY: both descriptors are fresh and owned here.
    let (mut rx, tx) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    // SAFETY: no other thread runs yet (the caller's contract).
    match unsafe { libc::fork() } {
        -1 => Err(DaemonError::Fork(last_os())),
        0 => {
            drop(rx);
            // SAFETY: plain calls on this process.
            unsafe {
                if libc::setsid() < 0 {
                    return Err(DaemonError::Fork(last_os()));
                }
                let root = CString::new("/").unwrap_or_default();
                libc::chdir(root.as_ptr());
            }
            redirect_stdio(logfile).map_err(DaemonError::Fork)?;
            Ok(Ready(tx))
        }
        _child => {
            drop(tx);
            let mut word = String::new();
            let _ = rx.read_to_string(&mut word);
            match word.lines().next() {
                Some("ok") => std::process::exit(0),
                Some(line) => {
                    let why = line.strip_prefix("error ").unwrap_or(line);
                    eprintln!("netrig-perf: error - {why}");
                    std::process::exit(1)
                }
                None => {
                    eprintln!("netrig-perf: error - -D: the daemon ended before it listened");
                    std::process::exit(1)
                }
            }
        }
    }
}

fn redirect_stdio(logfile: Option<&Path>) -> std::io::Result<()> {
    let null = File::options().read(true).write(true).open("/dev/null")?;
    let out = match logfile {
        Some(p) => File::options().create(true).append(true).open(p)?,
        None => null.try_clone()?,
    };
    // SAFETY: dup2 onto the standard descriptors; the sources are open.
    unsafe {
        for (src, dst) in [(null.as_raw_fd(), 0), (out.as_raw_fd(), 1), (out.as_raw_fd(), 2)] {
            if libc::dup2(src, dst) < 0 {
                return Err(last_os());
            }
        }
    }
    Ok(())
}

static PIDFILE: OnceLock<CString> = OnceLock::new();

extern "C" fn remove_pidfile_and_exit(_sig: libc::c_int) {
    if let Some(p) = PIDFILE.get() {
        // SAFETY: unlink and _exit are async-signal-safe; p is a valid C string.
        unsafe { libc::unlink(p.as_ptr()) };
    }
    // SAFETY: as above.
    unsafe { libc::_exit(1) };
}

/// The pidfile, removed when dropped and when a terminating signal arrives.
pub struct Pidfile {
    path: PathBuf,
}

impl Pidfile {
    /// Writes this process's PID (no newline, as iperf3), refusing if the file names a
    /// process that still runs.
    pub fn create(path: &Path) -> Result<Pidfile, DaemonError> {
        let err = |source| DaemonError::Pidfile {
            path: path.to_path_buf(),
            source,
        };
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse::<i32>() {
                // SAFETY: kill with signal 0 only checks the process exists.
                if pid > 0 && pid != std::process::id() as i32 && unsafe { libc::kill(pid, 0) } == 0 {
                    return Err(DaemonError::Running {
                        path: path.to_path_buf(),
                        pid,
                    });
                }
            }
        }
        std::fs::write(path, std::process::id().to_string()).map_err(err)?;
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|e| err(std::io::Error::other(e)))?;
        let _ = PIDFILE.set(c);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            // SAFETY: the handler only makes async-signal-safe calls.
            unsafe { libc::signal(sig, remove_pidfile_and_exit as *const () as libc::sighandler_t) };
        }
        Ok(Pidfile {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for Pidfile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pidfile_of_a_live_process_is_refused_and_ours_is_removed() {
        let dir = std::env::temp_dir().join(format!("netrig-pidfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.pid");
        // PID 1 always runs.
        std::fs::write(&path, "1").unwrap();
        assert!(matches!(
            Pidfile::create(&path),
            Err(DaemonError::Running { pid: 1, .. })
        ));
        // A stale one is replaced.
        std::fs::write(&path, "999999999").unwrap();
        let p = Pidfile::create(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            std::process::id().to_string()
        );
        drop(p);
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
