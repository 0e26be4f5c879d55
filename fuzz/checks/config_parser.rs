//! The config parsers, on bytes from a user's file or environment:
//! `Config::from_toml_str` on the whole input; `Config::set_text` /
//! `set_text_for_kind` with a key picked by the first character and the
//! rest as its text value; `Config::apply_env_from` on `NAME=value` lines.
//! Each answers a config or `InvalidArgument`, never a panic; a config that
//! parsed validates to `Ok` or `InvalidArgument`, and one that validated
//! answers the derived per-kind values (TTL, ceiling, backoff delays up to
//! `u32::MAX` attempts) without a panic, every duration within
//! `limits::MAX_DURATION` (issue #14: nothing from a file may wrap later).

use telha_jobs::config::KEYS;
use telha_jobs::limits::MAX_DURATION;
use telha_jobs::{Config, ErrorKind, Result};

fn invalid<T: std::fmt::Debug>(r: &Result<T>) {
    if let Err(e) = r {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
}

fn derived_values(c: &Config) {
    assert!(c.reaper_interval <= MAX_DURATION);
    assert!(c.completed_retention.is_none_or(|r| r <= MAX_DURATION));
    let kinds = c.kinds.keys().chain(c.backoff_base_secs_by_kind.keys());
    for kind in kinds.map(String::as_str).chain(["", "other"]) {
        assert!(c.lease_ttl_for(kind) <= MAX_DURATION);
        let _ = c.max_attempts_for(kind, None);
        let _ = c.max_attempts_for(kind, Some(u32::MAX));
        let b = c.backoff_for(kind);
        let mut last = std::time::Duration::ZERO;
        for attempts in [0, 1, 2, 3, 10, 64, 1000, u32::MAX] {
            let d = c.backoff_delay(kind, attempts);
            assert!(d <= b.cap.max(b.base), "{d:?} past the cap {b:?}");
            assert!(d <= MAX_DURATION, "{d:?} past the longest duration");
            if attempts > 0 {
                assert!(d >= last, "backoff shrank: {last:?} then {d:?}");
                last = d;
            }
        }
    }
}

fn validated(c: &Config) {
    let v = c.validate();
    invalid(&v);
    if v.is_ok() {
        derived_values(c);
    }
}

/// The target's whole check on one input: panics on a finding.
pub fn check(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Config::from_toml_str(s);
    invalid(&parsed);
    if let Ok(c) = &parsed {
        validated(c);
    }

    let mut chars = s.chars();
    if let Some(first) = chars.next() {
        let key = &KEYS[first as usize % KEYS.len()];
        let value = chars.as_str();
        let mut c = Config::default();
        let r = c.set_text(key.name, value);
        invalid(&r);
        if r.is_ok() {
            let v = c.get(key.name).expect("a key just set reads back");
            let mut again = Config::default();
            again
                .set(key.name, v)
                .expect("a value just accepted is accepted");
            assert_eq!(again, c);
            validated(&c);
        }
        let mut c = Config::default();
        let r = c.set_text_for_kind("fuzz:kind", key.name, value);
        invalid(&r);
        if r.is_ok() {
            assert!(key.per_kind);
            validated(&c);
        }
    }

    let vars = s.lines().filter_map(|l| {
        let (k, v) = l.split_once('=')?;
        Some((k.to_string(), v.to_string()))
    });
    let mut c = Config::default();
    let before = c.clone();
    let r = c.apply_env_from(vars);
    invalid(&r);
    match r {
        Ok(()) => validated(&c),
        Err(_) => assert_eq!(c, before, "a failed overlay changed the config"),
    }
}
