//! The table of settable keys: every setting's name, type, unit, default
//! and doc, in one place. The TOML file, the `TELHA_JOBS_*` variables,
//! Python's keyword arguments, Node's options and the C setters all go
//! through it ([`Config::set`], [`Config::set_for_kind`],
//! [`Config::set_text`]), so a new key is added here and nowhere else.
//!
//! Names are snake_case (`lease_ttl`). Front ends spell them their way:
//! Python as they are (`lease_ttl=`), Node in camelCase with `Ms` after
//! durations (`leaseTtlMs`), C by name (`tj_options_set(o, "lease_ttl",
//! "300s")`), the environment in capitals (`TELHA_JOBS_LEASE_TTL`).

use std::time::Duration;

use super::text;
use super::{Config, KindConfig};
use crate::error::{Error, Result};
use crate::limits::{self, MAX_PAYLOAD_BYTES_LIMIT};

/// What a key holds.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum KeyType {
    /// A duration of at least `min` (and at most [`limits::MAX_DURATION`]).
    Duration {
        /// The shortest value allowed.
        min: Duration,
    },
    /// A duration over zero, or off ([`Value::Off`]: keep forever).
    Retention,
    /// A whole number in `min..=max`.
    Count {
        /// The smallest value allowed.
        min: u64,
        /// The largest value allowed.
        max: u64,
    },
    /// A finite number of at least 1.0.
    Factor,
    /// A finite number from 0.0 to 1.0 (a share, such as a jitter band).
    Fraction,
    /// true or false.
    Flag,
}

/// A typed value for a key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// For [`KeyType::Duration`] and [`KeyType::Retention`].
    Duration(Duration),
    /// For [`KeyType::Retention`]: keep forever.
    Off,
    /// For [`KeyType::Count`].
    Count(u64),
    /// For [`KeyType::Factor`] and [`KeyType::Fraction`].
    Float(f64),
    /// For [`KeyType::Flag`].
    Flag(bool),
}

/// One settable key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    /// The name, snake_case: the Python keyword, the C key, the per-kind key
    /// in TOML (`[jobs.kinds."k"]`).
    pub name: &'static str,
    /// Where the global value lives in the TOML file, under `[jobs]`
    /// (`lease_ttl`, `backoff.base`).
    pub toml: &'static str,
    /// The environment variable that overrides it, if any.
    pub env: Option<&'static str>,
    /// What it holds.
    pub ty: KeyType,
    /// The unit, for docs and messages (`duration`, `attempts`, `bytes`, …).
    pub unit: &'static str,
    /// The default, as text in the file's syntax.
    pub default: &'static str,
    /// Settable per kind (`[jobs.kinds."k"]`, Python `kinds=`, Node `kinds`).
    pub per_kind: bool,
    /// One line saying what it does.
    pub doc: &'static str,
}

const MS: Duration = Duration::from_millis(1);
const ANY: Duration = Duration::ZERO;
const POSITIVE: Duration = Duration::from_nanos(1);

/// Every settable key.
pub const KEYS: &[Key] = &[
    Key {
        name: "lease_ttl",
        toml: "lease_ttl",
        env: Some("TELHA_JOBS_LEASE_TTL"),
        ty: KeyType::Duration { min: MS },
        unit: "duration",
        default: "300s",
        per_kind: true,
        doc: "How long a lease lasts without a heartbeat.",
    },
    Key {
        name: "reaper_interval",
        toml: "reaper_interval",
        env: Some("TELHA_JOBS_REAPER_INTERVAL"),
        ty: KeyType::Duration { min: ANY },
        unit: "duration",
        default: "30s",
        per_kind: false,
        doc: "How often the background reaper runs; 0 starts none.",
    },
    Key {
        name: "max_attempts",
        toml: "max_attempts",
        env: Some("TELHA_JOBS_MAX_ATTEMPTS"),
        ty: KeyType::Count {
            min: 1,
            max: u32::MAX as u64,
        },
        unit: "attempts",
        default: "5",
        per_kind: true,
        doc: "Failed attempts before a job is dead.",
    },
    Key {
        name: "backoff_base",
        toml: "backoff.base",
        env: Some("TELHA_JOBS_BACKOFF_BASE"),
        ty: KeyType::Duration { min: POSITIVE },
        unit: "duration",
        default: "10s",
        per_kind: true,
        doc: "The delay after the first failed attempt (per kind it also raises the kind's cap to at least itself).",
    },
    Key {
        name: "backoff_factor",
        toml: "backoff.factor",
        env: Some("TELHA_JOBS_BACKOFF_FACTOR"),
        ty: KeyType::Factor,
        unit: "factor",
        default: "4.0",
        per_kind: true,
        doc: "Growth of the delay per further attempt.",
    },
    Key {
        name: "backoff_cap",
        toml: "backoff.cap",
        env: Some("TELHA_JOBS_BACKOFF_CAP"),
        ty: KeyType::Duration { min: ANY },
        unit: "duration",
        default: "1h",
        per_kind: true,
        doc: "The longest retry delay (at least the base).",
    },
    Key {
        name: "backoff_jitter",
        toml: "backoff.jitter",
        env: Some("TELHA_JOBS_BACKOFF_JITTER"),
        ty: KeyType::Fraction,
        unit: "fraction",
        default: "0.2",
        per_kind: true,
        doc: "Each retry delay is spread at random over ±this share of it (0.2: 80 % to 120 %), so retries after an outage do not all fire at once; 0 keeps exact delays.",
    },
    Key {
        name: "completed_retention",
        toml: "completed_retention",
        env: Some("TELHA_JOBS_COMPLETED_RETENTION"),
        ty: KeyType::Retention,
        unit: "duration",
        default: "24h",
        per_kind: false,
        doc: "How long completed jobs are kept; off keeps them forever.",
    },
    Key {
        name: "sync_writes",
        toml: "sync_writes",
        env: Some("TELHA_JOBS_SYNC_WRITES"),
        ty: KeyType::Flag,
        unit: "flag",
        default: "false",
        per_kind: false,
        doc: "fsync every commit (survives power loss; concurrent commits share one fsync).",
    },
    Key {
        name: "max_payload_bytes",
        toml: "max_payload_bytes",
        env: Some("TELHA_JOBS_MAX_PAYLOAD_BYTES"),
        ty: KeyType::Count {
            min: 1,
            max: MAX_PAYLOAD_BYTES_LIMIT as u64,
        },
        unit: "bytes",
        default: "16777216",
        per_kind: false,
        doc: "The largest payload or result accepted.",
    },
    Key {
        name: "prune_batch",
        toml: "prune_batch",
        env: Some("TELHA_JOBS_PRUNE_BATCH"),
        ty: KeyType::Count {
            min: 1,
            max: u32::MAX as u64,
        },
        unit: "rows",
        default: "10000",
        per_kind: false,
        doc: "How many completed jobs one reaper pass prunes at most.",
    },
    Key {
        name: "dead_retention",
        toml: "dead_retention",
        env: Some("TELHA_JOBS_DEAD_RETENTION"),
        ty: KeyType::Retention,
        unit: "duration",
        default: "7d",
        per_kind: false,
        doc: "How long dead jobs are kept before the reaper prunes them; off keeps them forever.",
    },
    Key {
        name: "cancelled_retention",
        toml: "cancelled_retention",
        env: Some("TELHA_JOBS_CANCELLED_RETENTION"),
        ty: KeyType::Retention,
        unit: "duration",
        default: "24h",
        per_kind: false,
        doc: "How long cancelled jobs are kept before the reaper prunes them; off keeps them forever.",
    },
    Key {
        name: "timeout",
        toml: "timeout",
        env: Some("TELHA_JOBS_TIMEOUT"),
        ty: KeyType::Retention,
        unit: "duration",
        default: "off",
        per_kind: true,
        doc: "How long a Worker lets a handler run before it aborts it and fails the job retryably (\"timed out after ...\"); off: no limit.",
    },
    Key {
        name: "max_lease_total",
        toml: "max_lease_total",
        env: Some("TELHA_JOBS_MAX_LEASE_TOTAL"),
        ty: KeyType::Retention,
        unit: "duration",
        default: "off",
        per_kind: true,
        doc: "The longest one lease may be held, heartbeats included: extend stops renewing it then and the job expires as usual; off: no limit.",
    },
    Key {
        name: "max_snoozes",
        toml: "max_snoozes",
        env: Some("TELHA_JOBS_MAX_SNOOZES"),
        ty: KeyType::Count {
            min: 0,
            max: u32::MAX as u64,
        },
        unit: "snoozes",
        default: "4294967295",
        per_kind: true,
        doc: "Snoozes that spend no attempt; each one past this counts as a failed attempt (the default, 4294967295, is unlimited).",
    },
];

/// The key named `name`; `InvalidArgument` listing the names otherwise.
pub fn key(name: &str) -> Result<&'static Key> {
    KEYS.iter().find(|k| k.name == name).ok_or_else(|| {
        let names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        Error::invalid(format!(
            "unknown setting {name:?}; one of {}",
            names.join(", ")
        ))
    })
}

impl Key {
    /// Check `v` against this key's type and range; `what` names the
    /// setting in the message (a TOML path, a variable, a keyword).
    pub fn check(&self, what: &str, v: Value) -> Result<Value> {
        let bad = |rule: String| Error::invalid(format!("{what} must be {rule}"));
        match (self.ty, v) {
            (KeyType::Duration { min }, Value::Duration(d)) => {
                if d < min {
                    let rule = if min == POSITIVE {
                        "> 0".to_string()
                    } else {
                        format!(">= {}", text::fmt(min))
                    };
                    return Err(bad(format!("{rule}, got {}", text::fmt(d))));
                }
                limits::check_duration(what, d)?;
            }
            (KeyType::Retention, Value::Duration(d)) => {
                if d.is_zero() {
                    return Err(bad("> 0 (off: keep forever / no limit), got 0s".to_string()));
                }
                limits::check_duration(what, d)?;
            }
            (KeyType::Retention, Value::Off) => {}
            (KeyType::Count { min, max }, Value::Count(n)) => {
                if n < min || n > max {
                    let rule = if max >= u32::MAX as u64 {
                        format!(">= {min}")
                    } else {
                        format!("between {min} and {max}")
                    };
                    return Err(bad(format!("{rule}, got {n}")));
                }
            }
            (KeyType::Factor, Value::Float(f)) => {
                // NaN fails `>=`, so this also rejects NaN.
                if !(f.is_finite() && f >= 1.0) {
                    return Err(bad(format!("a finite number >= 1.0, got {f}")));
                }
            }
            (KeyType::Fraction, Value::Float(f)) => {
                // NaN fails both comparisons, so this also rejects NaN.
                if !(f.is_finite() && (0.0..=1.0).contains(&f)) {
                    return Err(bad(format!("a number from 0 to 1, got {f}")));
                }
            }
            (KeyType::Flag, Value::Flag(_)) => {}
            (ty, v) => {
                return Err(bad(format!("{}, got {v:?}", type_words(ty))));
            }
        }
        Ok(v)
    }
}

/// What a key of type `ty` holds, in words.
pub fn type_words(ty: KeyType) -> &'static str {
    match ty {
        KeyType::Duration { .. } => "a duration",
        KeyType::Retention => "a duration, or off (keep forever / no limit)",
        KeyType::Count { .. } => "a whole number",
        KeyType::Factor => "a number >= 1.0",
        KeyType::Fraction => "a number from 0 to 1",
        KeyType::Flag => "true or false",
    }
}

/// Whether `v` is a value of type `ty` (ranges aside).
fn fits(ty: KeyType, v: Value) -> bool {
    matches!(
        (ty, v),
        (KeyType::Duration { .. }, Value::Duration(_))
            | (KeyType::Retention, Value::Duration(_) | Value::Off)
            | (KeyType::Count { .. }, Value::Count(_))
            | (KeyType::Factor | KeyType::Fraction, Value::Float(_))
            | (KeyType::Flag, Value::Flag(_))
    )
}

/// `InvalidArgument` unless `v` is of `k`'s type.
pub(super) fn typed(k: &Key, what: &str, v: Value) -> Result<Value> {
    if fits(k.ty, v) {
        Ok(v)
    } else {
        Err(Error::invalid(format!(
            "{what} must be {}, got {v:?}",
            type_words(k.ty)
        )))
    }
}

impl Config {
    /// Set the global value of the key `name`, checked against its type
    /// and range (`InvalidArgument` naming the key). Checks across keys
    /// (a cap below its base) wait for [`Config::validate`].
    pub fn set(&mut self, name: &str, v: Value) -> Result<()> {
        let k = key(name)?;
        let v = k.check(name, v)?;
        self.assign(name, v)
    }

    /// Set without the range check (the file and the environment: ranges
    /// are checked once, by [`Config::validate`], on the final result, so
    /// an override can rescue a file value).
    pub(super) fn assign(&mut self, name: &str, v: Value) -> Result<()> {
        let k = key(name)?;
        typed(k, name, v)?;
        match (name, v) {
            ("lease_ttl", Value::Duration(d)) => self.lease_ttl = d,
            ("reaper_interval", Value::Duration(d)) => self.reaper_interval = d,
            ("max_attempts", Value::Count(n)) => self.max_attempts = n as u32,
            ("backoff_base", Value::Duration(d)) => self.backoff.base = d,
            ("backoff_factor", Value::Float(f)) => self.backoff.factor = f,
            ("backoff_cap", Value::Duration(d)) => self.backoff.cap = d,
            ("backoff_jitter", Value::Float(f)) => self.backoff_jitter = f,
            ("completed_retention", Value::Duration(d)) => self.completed_retention = Some(d),
            ("completed_retention", Value::Off) => self.completed_retention = None,
            ("sync_writes", Value::Flag(b)) => self.sync_writes = b,
            ("max_payload_bytes", Value::Count(n)) => self.max_payload_bytes = n as usize,
            ("prune_batch", Value::Count(n)) => self.prune_batch = n as usize,
            ("dead_retention", Value::Duration(d)) => self.dead_retention = Some(d),
            ("dead_retention", Value::Off) => self.dead_retention = None,
            ("cancelled_retention", Value::Duration(d)) => self.cancelled_retention = Some(d),
            ("cancelled_retention", Value::Off) => self.cancelled_retention = None,
            ("timeout", Value::Duration(d)) => self.timeout = Some(d),
            ("timeout", Value::Off) => self.timeout = None,
            ("max_lease_total", Value::Duration(d)) => self.max_lease_total = Some(d),
            ("max_lease_total", Value::Off) => self.max_lease_total = None,
            ("max_snoozes", Value::Count(n)) => self.max_snoozes = n as u32,
            _ => return Err(unmapped(name)),
        }
        Ok(())
    }

    /// The global value of the key `name`.
    pub fn get(&self, name: &str) -> Result<Value> {
        key(name)?;
        Ok(match name {
            "lease_ttl" => Value::Duration(self.lease_ttl),
            "reaper_interval" => Value::Duration(self.reaper_interval),
            "max_attempts" => Value::Count(self.max_attempts as u64),
            "backoff_base" => Value::Duration(self.backoff.base),
            "backoff_factor" => Value::Float(self.backoff.factor),
            "backoff_cap" => Value::Duration(self.backoff.cap),
            "backoff_jitter" => Value::Float(self.backoff_jitter),
            "completed_retention" => self.completed_retention.map_or(Value::Off, Value::Duration),
            "sync_writes" => Value::Flag(self.sync_writes),
            "max_payload_bytes" => Value::Count(self.max_payload_bytes as u64),
            "prune_batch" => Value::Count(self.prune_batch as u64),
            "dead_retention" => self.dead_retention.map_or(Value::Off, Value::Duration),
            "cancelled_retention" => self.cancelled_retention.map_or(Value::Off, Value::Duration),
            "timeout" => self.timeout.map_or(Value::Off, Value::Duration),
            "max_lease_total" => self.max_lease_total.map_or(Value::Off, Value::Duration),
            "max_snoozes" => Value::Count(self.max_snoozes as u64),
            _ => return Err(unmapped(name)),
        })
    }

    /// Set the key `name` for the jobs of `kind` (a per-kind key; the kind
    /// is checked when the config is validated).
    pub fn set_for_kind(&mut self, kind: &str, name: &str, v: Value) -> Result<()> {
        let k = key(name)?;
        if !k.per_kind {
            return Err(Error::invalid(format!(
                "{name} is not a per-kind setting; the per-kind ones are {}",
                per_kind_names().join(", ")
            )));
        }
        let v = k.check(&format!("kinds[{kind:?}].{name}"), v)?;
        self.kinds
            .entry(kind.to_string())
            .or_default()
            .assign(name, v)
    }

    /// Set the key `name` from text in the syntax of the file and the
    /// environment (`"250ms"`, `"5m"`, `"300"`, `"off"`, `"true"`).
    pub fn set_text(&mut self, name: &str, value: &str) -> Result<()> {
        let k = key(name)?;
        let v = text::parse(k.ty, value).ok_or_else(|| text::bad(name, k.ty, value))?;
        self.set(name, v)
    }

    /// [`Config::set_text`] for the jobs of `kind`.
    pub fn set_text_for_kind(&mut self, kind: &str, name: &str, value: &str) -> Result<()> {
        let k = key(name)?;
        let what = format!("kinds[{kind:?}].{name}");
        let v = text::parse(k.ty, value).ok_or_else(|| text::bad(&what, k.ty, value))?;
        self.set_for_kind(kind, name, v)
    }
}

impl KindConfig {
    /// Set a per-kind key (its type and range checked by the caller).
    pub(super) fn assign(&mut self, name: &str, v: Value) -> Result<()> {
        match (name, v) {
            ("lease_ttl", Value::Duration(d)) => self.lease_ttl = Some(d),
            ("max_attempts", Value::Count(n)) => self.max_attempts = Some(n as u32),
            ("backoff_base", Value::Duration(d)) => self.backoff_base = Some(d),
            ("backoff_factor", Value::Float(f)) => self.backoff_factor = Some(f),
            ("backoff_cap", Value::Duration(d)) => self.backoff_cap = Some(d),
            ("backoff_jitter", Value::Float(f)) => self.backoff_jitter = Some(f),
            ("timeout", Value::Duration(d)) => self.timeout = Some(Some(d)),
            ("timeout", Value::Off) => self.timeout = Some(None),
            ("max_lease_total", Value::Duration(d)) => self.max_lease_total = Some(Some(d)),
            ("max_lease_total", Value::Off) => self.max_lease_total = Some(None),
            ("max_snoozes", Value::Count(n)) => self.max_snoozes = Some(n as u32),
            _ => return Err(unmapped(name)),
        }
        Ok(())
    }

    /// The value of a per-kind key, when this kind sets it.
    pub fn get(&self, name: &str) -> Option<Value> {
        match name {
            "lease_ttl" => self.lease_ttl.map(Value::Duration),
            "max_attempts" => self.max_attempts.map(|n| Value::Count(n as u64)),
            "backoff_base" => self.backoff_base.map(Value::Duration),
            "backoff_factor" => self.backoff_factor.map(Value::Float),
            "backoff_cap" => self.backoff_cap.map(Value::Duration),
            "backoff_jitter" => self.backoff_jitter.map(Value::Float),
            "timeout" => self.timeout.map(|t| t.map_or(Value::Off, Value::Duration)),
            "max_lease_total" => self
                .max_lease_total
                .map(|t| t.map_or(Value::Off, Value::Duration)),
            "max_snoozes" => self.max_snoozes.map(|n| Value::Count(n as u64)),
            _ => None,
        }
    }
}

/// The per-kind keys' names.
pub fn per_kind_names() -> Vec<&'static str> {
    KEYS.iter().filter(|k| k.per_kind).map(|k| k.name).collect()
}

fn unmapped(name: &str) -> Error {
    Error::Storage(format!(
        "internal error: setting {name:?} is in the key table but not mapped to a field"
    ))
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
