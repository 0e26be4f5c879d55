//! The committed `include/telha_jobs.h` must be exactly what cbindgen
//! generates from `ffi-c/src` now. Set `TJ_BLESS_HEADER=1` to rewrite it
//! (`make c-header` does; `make generated` rewrites it with every other
//! generated file).

use std::path::PathBuf;

fn generate() -> String {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("read ffi-c/cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn committed_header_matches_what_cbindgen_generates() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../include/telha_jobs.h");
    let fresh = generate();
    if std::env::var_os("TJ_BLESS_HEADER").is_some() {
        std::fs::write(&path, &fresh).expect("write include/telha_jobs.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let line = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "the end".to_string(), |i| format!("line {}", i + 1));
        panic!(
            "include/telha_jobs.h is stale (first difference at {line}); \
             run `make generated` (or `make c-header`) and commit it"
        );
    }
}

#[test]
fn header_declares_every_status_with_its_fixed_number() {
    let h = generate();
    for (name, n) in [
        ("TJ_STATUS_OK", 0),
        ("TJ_STATUS_INVALID_ARGUMENT", 1),
        ("TJ_STATUS_NOT_FOUND", 2),
        ("TJ_STATUS_ABORTED", 3),
        ("TJ_STATUS_STORE_LOCKED", 4),
        ("TJ_STATUS_STORAGE", 5),
        ("TJ_STATUS_CORRUPTION", 6),
        ("TJ_STATUS_CLOSED", 7),
        ("TJ_STATUS_NULL_ARGUMENT", 100),
        ("TJ_STATUS_INVALID_UTF8", 101),
        ("TJ_STATUS_PANIC", 102),
        ("TJ_STATUS_TIMED_OUT", 103),
    ] {
        assert!(
            h.contains(&format!("{name} = {n},")),
            "{name} = {n} missing"
        );
    }
    assert!(h.contains("#define TJ_ABI_VERSION 3"));
}
