//! The config module's tests: reading (file, environment, layering) in
//! read.rs, the bounds `validate` holds in validate.rs; the helpers and
//! the full example file here.

use super::*;

const HOUR: Duration = Duration::from_secs(3600);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The message of an `InvalidArgument`; any other error fails the test.
fn invalid_msg(r: Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

fn parse(toml: &str) -> Config {
    Config::from_toml_str(toml).expect("config parses")
}

fn jobs(body: &str) -> Result<Config> {
    Config::from_toml_str(&format!("[jobs]\n{body}\n"))
}

const FULL: &str = r#"
    [jobs]
    lease_ttl = "600s"
    reaper_interval = "0s"
    max_attempts = 7
    completed_retention = "2h"
    sync_writes = true
    max_payload_bytes = 1024
    prune_batch = 50
    dead_retention = "3d"
    cancelled_retention = false
    timeout = "10m"
    max_lease_total = "2h"
    max_snoozes = 20
    [jobs.backoff]
    base = "5s"
    factor = 3.0
    cap = "30m"
    jitter = 0.5
    [jobs.backoff_base_secs_by_kind]
    "clarify:temporal" = 900
    [jobs.kinds."ingest:pdf"]
    lease_ttl = "15m"
    max_attempts = 3
    backoff_base = "30s"
    backoff_factor = 2.0
    backoff_cap = "2h"
    backoff_jitter = 0.1
    timeout = false
    max_lease_total = "30m"
    max_snoozes = 2
"#;

mod read;
mod validate;
