//! The C ABI of telha-jobs: `libtelha_jobs.so` / `libtelha_jobs.a` and
//! `include/telha_jobs.h` (generated from these files by cbindgen).
//!
//! Conventions (`docs/c.md`, "C API conventions", says the same for C users):
//! opaque handles with `_new`/`_free` pairs, `_free(NULL)` a no-op; every
//! fallible call returns a `tj_status` and takes an optional `tj_error **`
//! for the message; out-params are written only on success; every pointer is
//! checked for NULL and every string for UTF-8; every body runs inside a
//! panic boundary. Each binding function converts its arguments, calls the
//! core, and maps the error through `tj_status::from_kind`.
//!
//! One file per C object.

#![allow(clippy::missing_safety_doc)] // every function's `# Safety` is in its doc
#![deny(unsafe_op_in_unsafe_fn)]

mod backup;
mod batch;
mod boundary;
mod cancel;
mod completions;
mod config_keys;
mod control;
mod debounce;
mod encoding;
mod enqueue_options;
mod error;
mod events;
mod failures;
mod fanin;
mod find;
mod flow;
mod id;
mod job;
mod job_info;
mod job_keys;
mod lease_options;
// Public so the header constants count as used (C reads them, Rust does not).
pub mod limits;
mod list;
mod options;
mod options_typed;
mod queue;
mod schedule;
mod schedule_info;
mod schedule_queue;
mod schedule_tags;
mod serve;
mod serve_options;
mod settle;
mod stats;
mod stats_options;
mod status;
mod steer;
mod tags;
mod unique;
mod wait;

use std::ffi::c_char;

/// The ABI version of this header. `tj_abi_version()` returns the library's;
/// a program should refuse to run when they differ. Bumped on every
/// incompatible change to a signature, a struct layout or a number.
pub const TJ_ABI_VERSION: u32 = 3;

/// The library's ABI version; compare it with `TJ_ABI_VERSION` from the
/// header the program was compiled with. Thread-safe; never fails.
#[no_mangle]
pub extern "C" fn tj_abi_version() -> u32 {
    TJ_ABI_VERSION
}

/// The library's version, e.g. `"0.1.0"` (static storage: never free it).
#[no_mangle]
pub extern "C" fn tj_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_soname_carries_the_abi_version() {
        assert_eq!(env!("TJ_SONAME_ABI"), super::TJ_ABI_VERSION.to_string());
    }
}
