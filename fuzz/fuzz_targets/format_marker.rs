//! cargo-fuzz entry of the `format_marker` check: `fuzz/checks/format_marker.rs`
//! says what it checks; `core/tests/decoders.rs` runs the same check over
//! the committed inputs in `fuzz/regressions/format_marker/` in `make test`.
#![no_main]

#[path = "../checks/format_marker.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
