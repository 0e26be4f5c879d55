//! cargo-fuzz entry of the `key_decoder` check: `fuzz/checks/key_decoder.rs`
//! says what it checks; `core/tests/decoders.rs` runs the same check over
//! the committed inputs in `fuzz/regressions/key_decoder/` in `make test`.
#![no_main]

#[path = "../checks/key_decoder.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
