//! Replaying kept fuzz inputs under plain `cargo test` (stable): each crate's
//! tests/fuzz_regressions.rs includes this file and a target's harness, and hands
//! every file of its tests/fuzz/TARGET directory to the harness. An input must end
//! without a panic and without more than 1 GiB live at once: this allocator refuses
//! more, so such an input aborts the test (as a huge allocation aborts the program).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

pub const LIMIT: usize = 1 << 30;

/// The system allocator, refusing a request that would take the live total past LIMIT.
pub struct Bounded;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Relaxed) + l.size();
        if now > LIMIT {
            LIVE.fetch_sub(l.size(), Relaxed);
            return std::ptr::null_mut();
        }
        PEAK.fetch_max(now, Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        // SAFETY: p came from System.alloc with this layout.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: Bounded = Bounded;

/// The files of `tests/fuzz/<target>` under the crate being tested, sorted.
pub fn inputs(manifest_dir: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(manifest_dir).join("tests/fuzz").join(target);
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert!(!v.is_empty(), "{}: no inputs", dir.display());
    v
}

/// Runs `run` on every kept input of `target`; returns how many there were.
pub fn replay(manifest_dir: &str, target: &str, run: fn(&[u8])) -> usize {
    let files = inputs(manifest_dir, target);
    for f in &files {
        let data = std::fs::read(f).unwrap();
        PEAK.store(LIVE.load(Relaxed), Relaxed);
        run(&data);
        let peak = PEAK.load(Relaxed);
        assert!(peak < LIMIT, "{}: {peak} bytes live at once", f.display());
    }
    files.len()
}
