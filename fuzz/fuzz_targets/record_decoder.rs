//! cargo-fuzz entry of the `record_decoder` check: `fuzz/checks/record_decoder.rs`
//! says what it checks; `core/tests/decoders.rs` runs the same check over
//! the committed inputs in `fuzz/regressions/record_decoder/` in `make test`.
#![no_main]

#[path = "../checks/record_decoder.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
