//! The committed fuzz inputs, `fuzz/regressions/<target>/` (a minimized
//! corpus of each cargo-fuzz target, and every input that once failed
//! one), through the very checks the targets run (`fuzz/checks/*.rs`,
//! included here): `make test` replays what `make fuzz` found in the
//! ordinary test build, without building the fuzz crate or its sanitizer.

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/config_parser.rs"]
mod config_parser;
#[path = "../../../fuzz/checks/format_marker.rs"]
mod format_marker;
#[path = "../../../fuzz/checks/key_decoder.rs"]
mod key_decoder;
#[path = "../../../fuzz/checks/payload_decoder.rs"]
mod payload_decoder;
#[path = "../../../fuzz/checks/record_decoder.rs"]
mod record_decoder;

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    files
}

/// Every committed input of `target` through `check`, on a thread with the
/// default 2 MiB stack; names each input that fails.
fn replay(target: &'static str, check: fn(&[u8])) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let files = inputs(target);
            let failed: Vec<String> = files
                .iter()
                .filter(|f| {
                    let data = std::fs::read(f).unwrap();
                    std::panic::catch_unwind(|| check(&data)).is_err()
                })
                .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            assert!(
                failed.is_empty(),
                "{target}: {} of {} committed inputs fail: {failed:?}",
                failed.len(),
                files.len()
            );
        })
        .unwrap()
        .join()
        .unwrap_or_else(|_| panic!("{target}: the replay failed"));
}

#[test]
fn fuzz_regressions_record_decoder() {
    replay("record_decoder", record_decoder::check);
}

#[test]
fn fuzz_regressions_key_decoder() {
    replay("key_decoder", key_decoder::check);
}

#[test]
fn fuzz_regressions_payload_decoder() {
    replay("payload_decoder", payload_decoder::check);
}

#[test]
fn fuzz_regressions_format_marker() {
    replay("format_marker", format_marker::check);
}

#[test]
fn fuzz_regressions_config_parser() {
    replay("config_parser", config_parser::check);
}
