//! cargo-fuzz entry of the `config_parser` check: `fuzz/checks/config_parser.rs`
//! says what it checks; `core/tests/decoders.rs` runs the same check over
//! the committed inputs in `fuzz/regressions/config_parser/` in `make test`.
#![no_main]

#[path = "../checks/config_parser.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
