//! `Queue.open` options (milliseconds, like JS timers) -> the core's `Config`.
//!
//! Layering: defaults, then the TOML file (`configFile`, else
//! `$TELHA_JOBS_CONFIG`), then `TELHA_JOBS_*` environment variables (the
//! core's `Config::load`), then the options given in code, then `validate`.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use napi::bindgen_prelude::Either;
use napi_derive::napi;
use telha_jobs::{Config, KindConfig};

use crate::errors::Failure;

/// Exponential backoff: attempt `k` waits `min(capMs, baseMs * factor^(k-1))`.
#[napi(object)]
pub struct BackoffOptions {
    /// The first delay (default 10,000).
    pub base_ms: Option<f64>,
    /// Growth per further attempt, ≥ 1 (default 4).
    pub factor: Option<f64>,
    /// The longest delay (default 3,600,000).
    pub cap_ms: Option<f64>,
}

/// Per-kind overrides (`kinds: { "ingest:pdf": { … } }`).
#[napi(object)]
pub struct KindOptions {
    /// This kind's lease TTL.
    pub lease_ttl_ms: Option<f64>,
    /// This kind's attempt ceiling.
    pub max_attempts: Option<u32>,
    /// This kind's backoff; a `baseMs` here is this kind's base `b` and
    /// raises the kind's cap to at least itself (`cap' = max(cap, b)`).
    pub backoff: Option<BackoffOptions>,
}

/// Options of `Queue.open`. Unset fields come from the config file, the
/// environment, then the defaults.
#[napi(object)]
pub struct OpenOptions {
    /// How long a silent worker keeps a job (default 300,000).
    pub lease_ttl_ms: Option<f64>,
    /// Background reaper period; 0 runs none (default 30,000).
    pub reaper_interval_ms: Option<f64>,
    /// Failed attempts before a job is dead (default 5).
    pub max_attempts: Option<u32>,
    /// The retry schedule.
    pub backoff: Option<BackoffOptions>,
    /// How long completed jobs are kept; `false` keeps them forever
    /// (default 86,400,000).
    pub completed_retention_ms: Option<Either<f64, bool>>,
    /// fsync every commit (default false).
    pub sync_writes: Option<bool>,
    /// The largest payload or result accepted, in bytes (default 16 MiB).
    pub max_payload_bytes: Option<f64>,
    /// Per-kind overrides.
    pub kinds: Option<HashMap<String, KindOptions>>,
    /// A TOML config file (as read by the Rust core and the CLI).
    pub config_file: Option<String>,
}

fn ms(v: f64, name: &str) -> Result<Duration, Failure> {
    if !v.is_finite() || !(0.0..=1e15).contains(&v) {
        return Err(Failure::Invalid(format!(
            "{name} must be a finite number of milliseconds ≥ 0, got {v}"
        )));
    }
    Ok(Duration::from_micros((v * 1000.0).round() as u64))
}

fn apply_backoff(
    b: &BackoffOptions,
    base: &mut Duration,
    factor: &mut f64,
    cap: &mut Duration,
    at: &str,
) -> Result<(), Failure> {
    if let Some(v) = b.base_ms {
        *base = ms(v, &format!("{at}.baseMs"))?;
    }
    if let Some(v) = b.factor {
        *factor = v;
    }
    if let Some(v) = b.cap_ms {
        *cap = ms(v, &format!("{at}.capMs"))?;
    }
    Ok(())
}

/// The config `Queue.open` uses; `InvalidArgument` names the bad option.
pub fn build(o: OpenOptions) -> Result<Config, Failure> {
    let mut c = Config::load(o.config_file.as_deref().map(Path::new))?;
    if let Some(v) = o.lease_ttl_ms {
        c.lease_ttl = ms(v, "leaseTtlMs")?;
    }
    if let Some(v) = o.reaper_interval_ms {
        c.reaper_interval = ms(v, "reaperIntervalMs")?;
    }
    if let Some(v) = o.max_attempts {
        c.max_attempts = v;
    }
    if let Some(b) = &o.backoff {
        let (mut base, mut factor, mut cap) = (c.backoff.base, c.backoff.factor, c.backoff.cap);
        apply_backoff(b, &mut base, &mut factor, &mut cap, "backoff")?;
        c.backoff.base = base;
        c.backoff.factor = factor;
        c.backoff.cap = cap;
    }
    match o.completed_retention_ms {
        Some(Either::A(v)) => c.completed_retention = Some(ms(v, "completedRetentionMs")?),
        Some(Either::B(false)) => c.completed_retention = None,
        Some(Either::B(true)) => {
            return Err(Failure::Invalid(
                "completedRetentionMs is a number of milliseconds, or false to keep \
                 completed jobs forever"
                    .into(),
            ))
        }
        None => {}
    }
    if let Some(v) = o.sync_writes {
        c.sync_writes = v;
    }
    if let Some(v) = o.max_payload_bytes {
        if !(v.is_finite() && v >= 0.0 && v.fract() == 0.0) {
            return Err(Failure::Invalid(format!(
                "maxPayloadBytes must be a whole number of bytes, got {v}"
            )));
        }
        c.max_payload_bytes = v as usize;
    }
    for (kind, k) in o.kinds.unwrap_or_default() {
        let at = format!("kinds[{kind:?}]");
        let entry: &mut KindConfig = c.kinds.entry(kind).or_default();
        if let Some(v) = k.lease_ttl_ms {
            entry.lease_ttl = Some(ms(v, &format!("{at}.leaseTtlMs"))?);
        }
        if let Some(v) = k.max_attempts {
            entry.max_attempts = Some(v);
        }
        if let Some(b) = &k.backoff {
            if let Some(v) = b.base_ms {
                entry.backoff_base = Some(ms(v, &format!("{at}.backoff.baseMs"))?);
            }
            if let Some(v) = b.factor {
                entry.backoff_factor = Some(v);
            }
            if let Some(v) = b.cap_ms {
                entry.backoff_cap = Some(ms(v, &format!("{at}.backoff.capMs"))?);
            }
        }
    }
    c.validate()?;
    Ok(c)
}
