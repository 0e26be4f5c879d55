//! [`Config::validate`]: every key against its type and range (from the
//! key table), then the rules across keys. `open` calls it.

use super::file::key_segment;
use super::keys::KEYS;
use super::text::fmt;
use super::Config;
use crate::error::{Error, Result};

fn check_kind_key(map: &str, kind: &str) -> Result<()> {
    crate::kind::validate_kind(kind).map_err(|e| match e {
        Error::InvalidArgument(why) => {
            Error::invalid(format!("{map} key {kind:?} is not a valid kind: {why}"))
        }
        other => other,
    })
}

pub(super) fn validate(c: &Config) -> Result<()> {
    for k in KEYS {
        k.check(&format!("jobs.{}", k.toml), c.get(k.name)?)?;
    }
    if c.backoff.cap < c.backoff.base {
        return Err(Error::invalid(format!(
            "jobs.backoff.cap must be >= jobs.backoff.base ({}), got {}",
            fmt(c.backoff.base),
            fmt(c.backoff.cap)
        )));
    }
    for (kind, secs) in &c.backoff_base_secs_by_kind {
        check_kind_key("jobs.backoff_base_secs_by_kind", kind)?;
        let what = format!("jobs.backoff_base_secs_by_kind.{}", key_segment(kind));
        if *secs < 1 {
            return Err(Error::invalid(format!("{what} must be >= 1, got {secs}")));
        }
        crate::limits::check_duration(&what, std::time::Duration::from_secs(*secs))?;
    }
    for (kind, kc) in &c.kinds {
        check_kind_key("jobs.kinds", kind)?;
        let p = format!("jobs.kinds.{}", key_segment(kind));
        for k in KEYS.iter().filter(|k| k.per_kind) {
            if let Some(v) = kc.get(k.name) {
                k.check(&format!("{p}.{}", k.name), v)?;
            }
        }
        if let Some(cap) = kc.backoff_cap {
            // The kind's own base if it has one, else the global base: a cap
            // below it would make the first retry wait longer than the cap.
            let base = c.backoff_for(kind).base;
            if cap < base {
                return Err(Error::invalid(format!(
                    "{p}.backoff_cap must be >= the kind's backoff base ({}), got {}",
                    fmt(base),
                    fmt(cap)
                )));
            }
        }
    }
    Ok(())
}
