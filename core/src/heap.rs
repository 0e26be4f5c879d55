//! Giving freed heap memory back to the system after the engine forgot
//! many scopes' state (issue 50).
//!
//! glibc's malloc keeps freed memory in its arenas for reuse; after a pass
//! that forgot thousands of scopes (each a band map entry, groups, cursors,
//! counters), much of a tenant churn's peak stays resident as free heap:
//! 64–85 MiB after 1,000,000 lifecycles (`make bench-memory`, before and
//! after `malloc_trim`). [`forgotten`] counts what the reaper forgot and
//! trims the heap once every [`TRIM_EVERY`] scopes, on the reaper's thread,
//! holding no engine lock. Other allocators (musl, or a program's own global
//! allocator, which glibc's `malloc_trim` does not see) are left alone.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Scopes forgotten between two trims.
pub(crate) const TRIM_EVERY: usize = 65_536;

static SINCE_TRIM: AtomicUsize = AtomicUsize::new(0);

/// `n` more scopes forgotten (by any engine of this process): trim the
/// heap when [`TRIM_EVERY`] have been since the last trim.
pub(crate) fn forgotten(n: usize) {
    if n == 0 {
        return;
    }
    let before = SINCE_TRIM.fetch_add(n, Ordering::Relaxed);
    if before + n >= TRIM_EVERY {
        SINCE_TRIM.store(0, Ordering::Relaxed);
        trim();
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: malloc_trim takes no pointers; it walks glibc's own arenas
    // under their locks and is safe to call from any thread at any time.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
