//! cargo-fuzz entry of the `payload_decoder` check: `fuzz/checks/payload_decoder.rs`
//! says what it checks; `core/tests/decoders.rs` runs the same check over
//! the committed inputs in `fuzz/regressions/payload_decoder/` in `make test`.
#![no_main]

#[path = "../checks/payload_decoder.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
