//! Nothing here: the tests in `tests/otel.rs` exercise `telha-jobs` built
//! with its `otel` feature (see Cargo.toml for why this is a crate of its
//! own).
