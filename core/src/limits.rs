//! Every limit the core enforces, in one public place, so front ends (the
//! C header, Python, Node, the gRPC server, the CLI) use these instead of
//! restating them; and the checks that go with them.
//!
//! Times are milliseconds since the Unix epoch, durations milliseconds,
//! both `u64` in the core. Every time the core stores or returns is at
//! most [`MAX_INSTANT_MS`], which is below 2^53: a safe integer in
//! JavaScript, exact in a `double`, and a date every front end can print.

use std::time::Duration;

use crate::error::{Error, Result};

/// The largest kind, in bytes.
pub const MAX_KIND_LEN: usize = 64;
/// The largest idempotency key, in bytes.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 512;
/// The largest worker id, in bytes.
pub const MAX_WORKER_ID_LEN: usize = 256;
/// The most jobs one `lease_many` takes, and the largest batch any batch
/// call (`enqueue_many`, `complete_many`, `extend`) is sent over the network.
pub const MAX_BATCH: usize = 10_000;
/// The largest `list` page.
pub const MAX_LIST_LIMIT: usize = 10_000;
/// The most rows one `list` call reads before it returns a page (possibly
/// short) with a cursor, so a filtered list never scans without bound.
pub const LIST_SCAN_BUDGET: usize = 100_000;
/// The most scopes one `stats` call returns (`StatsQuery::scope_limit`).
pub const MAX_SCOPE_LIMIT: usize = 10_000;
/// The most scopes one by-name `stats` page examines before it returns
/// (possibly short) with a cursor: scopes whose jobs are all gone stay in
/// memory with zero counts and are skipped, never listed.
pub const SCOPE_SCAN_BUDGET: usize = 100_000;
/// The hard ceiling for `max_payload_bytes` (RocksDB values are u32-sized).
pub const MAX_PAYLOAD_BYTES_LIMIT: usize = 1 << 30;
/// The largest progress report a heartbeat may carry, in bytes (the
/// encoded value): progress is a small number, string or map.
pub const MAX_PROGRESS_BYTES: usize = 4096;
/// The latest time a job may be scheduled for, or any time the core stores:
/// 9999-12-31T23:59:59.999Z, in ms since the epoch.
pub const MAX_INSTANT_MS: u64 = 253_402_300_799_999;
/// The longest duration a setting may hold (a TTL, an interval, a
/// retention, a backoff): 100 years. Longer values are `InvalidArgument`
/// naming the setting; "forever" is said with the setting's own word
/// (`completed_retention = false`), never with a huge number.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Check a worker id: 1 to [`MAX_WORKER_ID_LEN`] bytes.
pub fn validate_worker_id(w: &str) -> Result<()> {
    if w.is_empty() || w.len() > MAX_WORKER_ID_LEN {
        return Err(Error::invalid(format!(
            "worker id must be 1 to {MAX_WORKER_ID_LEN} bytes, got {}",
            w.len()
        )));
    }
    Ok(())
}

/// Check an idempotency key: 1 to [`MAX_IDEMPOTENCY_KEY_LEN`] bytes.
pub fn validate_idempotency_key(k: &str) -> Result<()> {
    if k.is_empty() || k.len() > MAX_IDEMPOTENCY_KEY_LEN {
        return Err(Error::invalid(format!(
            "idempotency key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} bytes, got {}",
            k.len()
        )));
    }
    Ok(())
}

/// A time in ms since the epoch, checked: `InvalidArgument` naming `what`
/// past [`MAX_INSTANT_MS`].
pub fn check_instant(what: &str, ms: u64) -> Result<u64> {
    if ms > MAX_INSTANT_MS {
        return Err(Error::invalid(format!(
            "{what} of {ms} ms since the epoch is after the latest supported time, \
             9999-12-31T23:59:59.999Z ({MAX_INSTANT_MS})"
        )));
    }
    Ok(ms)
}

/// `now + d`, checked: `InvalidArgument` naming `what` when the sum passes
/// [`MAX_INSTANT_MS`].
pub fn instant_after(what: &str, now: u64, d: Duration) -> Result<u64> {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    match now.checked_add(ms) {
        Some(t) if t <= MAX_INSTANT_MS => Ok(t),
        _ => Err(Error::invalid(format!(
            "{what} of {} puts the time after 9999-12-31T23:59:59.999Z",
            humantime::format_duration(d)
        ))),
    }
}

/// A duration in whole ms, for the engine's arithmetic: only ever called
/// on durations already checked against [`MAX_DURATION`] (settings) or
/// against [`MAX_INSTANT_MS`] (delays), so it never truncates; it
/// saturates rather than wraps all the same.
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `InvalidArgument` naming `what` when `d` is over [`MAX_DURATION`].
pub fn check_duration(what: &str, d: Duration) -> Result<Duration> {
    if d > MAX_DURATION {
        return Err(Error::invalid(format!(
            "{what} must be at most 100 years, got {}",
            humantime::format_duration(d)
        )));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_instant_is_a_safe_integer_and_the_end_of_year_9999() {
        const { assert!(MAX_INSTANT_MS < (1u64 << 53)) };
        assert_eq!((MAX_INSTANT_MS + 1) / 1000, 253_402_300_800); // 10000-01-01
        assert!(check_instant("run_at", MAX_INSTANT_MS).is_ok());
        assert!(check_instant("run_at", MAX_INSTANT_MS + 1).is_err());
    }

    #[test]
    fn sums_past_the_latest_instant_are_invalid_never_wrapped() {
        assert_eq!(
            instant_after("delay", 5, Duration::from_millis(7)).unwrap(),
            12
        );
        for d in [
            Duration::MAX,
            Duration::from_secs(u64::MAX / 1000),
            Duration::from_secs(1 << 60),
        ] {
            let e = instant_after("delay", 1_700_000_000_000, d).unwrap_err();
            assert!(e.to_string().contains("delay"), "{e}");
        }
        assert!(check_duration("lease_ttl", Duration::from_secs(u64::MAX)).is_err());
        assert_eq!(ms(Duration::MAX), u64::MAX);
    }
}
