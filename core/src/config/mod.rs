//! Configuration: defaults as named constants, per-kind overrides,
//! loading from code, a TOML file and `TELHA_JOBS_*` environment variables
//! (env over file over defaults), and [`Config::validate`], which `open`
//! calls.
//!
//! Reading and checking are separate steps on purpose: a file may hold a
//! value that only an environment override makes valid, so
//! [`Config::from_toml_str`], [`Config::from_file`] and [`Config::apply_env`]
//! reject only what they cannot read (syntax, types, unknown keys), and the
//! range checks run once, on the final result, in [`Config::validate`]
//! (which [`Config::load`] and `open` both call).
//!
//! Every setting is a row of the key table ([`keys::KEYS`]): its name,
//! type, unit, default and doc. The file, the environment and every front
//! end go through it.
//!
//! # File
//!
//! Every key is optional and falls back to its `*_DEFAULT` constant. An
//! unknown key is an error naming it, so a typo fails loudly instead of
//! silently leaving the default in force.
//!
//! ```toml
//! [jobs]
//! lease_ttl = "300s"          # how long a lease lasts without a heartbeat
//! reaper_interval = "30s"     # 0 starts no background reaper
//! max_attempts = 5
//! completed_retention = "24h" # or false / "off" / "none" to keep forever
//! sync_writes = false
//! max_payload_bytes = 16777216
//! prune_batch = 10000
//! dead_retention = "7d"       # or false to keep dead jobs forever
//! cancelled_retention = "24h"
//! timeout = false             # a Worker's run-time limit per handler call
//! max_lease_total = false     # the longest a lease is renewed
//! max_snoozes = 4294967295    # snoozes that spend no attempt
//!
//! [jobs.backoff]
//! base = "10s"
//! factor = 4.0
//! cap = "1h"
//! jitter = 0.2                # ±20 % at random on every retry delay; 0: exact
//!
//! # An internal map: a per-kind backoff base in whole seconds (the same as
//! # `kinds."<kind>".backoff_base`, which wins when both are set).
//! [jobs.backoff_base_secs_by_kind]
//! "clarify:temporal" = 900
//!
//! # Per-kind overrides; each unset key inherits the global value.
//! [jobs.kinds."ingest:pdf"]
//! lease_ttl = "600s"
//! max_attempts = 3
//! backoff_base = "30s"
//! backoff_factor = 2.0
//! backoff_cap = "2h"
//! backoff_jitter = 0.1
//! timeout = "15m"
//! max_lease_total = "1h"
//! max_snoozes = 10
//! ```
//!
//! A duration is a humantime string (`"250ms"`, `"5m"`, `"1h 30m"`) or a
//! number of seconds (`300`, `1.5`, or the same as a string, `"300"`).
//!
//! # Environment
//!
//! Each variable overrides the file, with the same value syntax.
//!
//! | variable | overrides | value |
//! |---|---|---|
//! | `TELHA_JOBS_CONFIG` | (the file itself) | path of the TOML file [`Config::load`] reads when it is given none |
//! | `TELHA_JOBS_LEASE_TTL` | `jobs.lease_ttl` | duration |
//! | `TELHA_JOBS_REAPER_INTERVAL` | `jobs.reaper_interval` | duration; `0` starts no reaper |
//! | `TELHA_JOBS_MAX_ATTEMPTS` | `jobs.max_attempts` | integer |
//! | `TELHA_JOBS_BACKOFF_BASE` | `jobs.backoff.base` | duration |
//! | `TELHA_JOBS_BACKOFF_FACTOR` | `jobs.backoff.factor` | number |
//! | `TELHA_JOBS_BACKOFF_CAP` | `jobs.backoff.cap` | duration |
//! | `TELHA_JOBS_BACKOFF_JITTER` | `jobs.backoff.jitter` | number from 0 to 1 |
//! | `TELHA_JOBS_COMPLETED_RETENTION` | `jobs.completed_retention` | duration, or `false`/`off`/`none` |
//! | `TELHA_JOBS_SYNC_WRITES` | `jobs.sync_writes` | `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off` |
//! | `TELHA_JOBS_MAX_PAYLOAD_BYTES` | `jobs.max_payload_bytes` | integer |
//! | `TELHA_JOBS_PRUNE_BATCH` | `jobs.prune_batch` | integer |
//! | `TELHA_JOBS_DEAD_RETENTION` | `jobs.dead_retention` | duration, or `false`/`off`/`none` |
//! | `TELHA_JOBS_CANCELLED_RETENTION` | `jobs.cancelled_retention` | duration, or `false`/`off`/`none` |
//! | `TELHA_JOBS_TIMEOUT` | `jobs.timeout` | duration, or `false`/`off`/`none` |
//! | `TELHA_JOBS_MAX_LEASE_TOTAL` | `jobs.max_lease_total` | duration, or `false`/`off`/`none` |
//! | `TELHA_JOBS_MAX_SNOOZES` | `jobs.max_snoozes` | integer |
//!
//! Per-kind settings have no variables: kinds are open-ended and do not map
//! onto variable names. Other `TELHA_JOBS_*` variables are ignored: the
//! environment is shared with other programs, so unlike the file it cannot be
//! held to a closed set of names. An empty or unreadable value is an error
//! naming the variable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Table;

use crate::error::{Error, Result};

mod env;
mod file;
pub mod keys;
mod text;
mod validate;

pub use crate::limits::MAX_PAYLOAD_BYTES_LIMIT;
pub use keys::{Key, KeyType, Value, KEYS};

/// `jobs.lease_ttl`: how long a lease lasts without a heartbeat.
pub const LEASE_TTL_DEFAULT: Duration = Duration::from_secs(300);
/// `jobs.reaper_interval`: how often the background reaper runs.
pub const REAPER_INTERVAL_DEFAULT: Duration = Duration::from_secs(30);
/// `jobs.max_attempts`: attempts before a job is dead-lettered.
pub const MAX_ATTEMPTS_DEFAULT: u32 = 5;
/// `jobs.backoff.base`: the delay after the first failed attempt.
pub const BACKOFF_BASE_DEFAULT: Duration = Duration::from_secs(10);
/// `jobs.backoff.factor`: growth of the delay per further attempt.
pub const BACKOFF_FACTOR_DEFAULT: f64 = 4.0;
/// `jobs.backoff.cap`: the longest delay.
pub const BACKOFF_CAP_DEFAULT: Duration = Duration::from_secs(3600);
/// `jobs.backoff.jitter`: each retry delay is drawn from `delay × (1 ± jitter)`.
pub const BACKOFF_JITTER_DEFAULT: f64 = 0.2;
/// `jobs.completed_retention`: how long completed jobs are kept.
pub const COMPLETED_RETENTION_DEFAULT: Duration = Duration::from_secs(24 * 3600);
/// `jobs.max_payload_bytes`: the largest payload or result accepted.
pub const MAX_PAYLOAD_BYTES_DEFAULT: usize = 16 * 1024 * 1024;
/// `jobs.dead_retention`: how long dead jobs are kept.
pub const DEAD_RETENTION_DEFAULT: Duration = Duration::from_secs(7 * 24 * 3600);
/// `jobs.cancelled_retention`: how long cancelled jobs are kept.
pub const CANCELLED_RETENTION_DEFAULT: Duration = Duration::from_secs(24 * 3600);
/// How many completed jobs one reaper pass prunes at most.
pub const PRUNE_BATCH_DEFAULT: usize = 10_000;
/// The default job priority (0 is most urgent, 255 least).
pub const PRIORITY_DEFAULT: u8 = 128;

/// Exponential backoff: attempt `k` waits `min(cap, base * factor^(k-1))`.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    /// The first delay: short enough that a transient failure retries soon.
    pub base: Duration,
    /// Growth per further attempt, so a persistent failure backs off fast
    /// instead of hammering what it depends on (>= 1.0).
    pub factor: f64,
    /// The longest delay, so a job that will recover is not parked for days.
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: BACKOFF_BASE_DEFAULT,
            factor: BACKOFF_FACTOR_DEFAULT,
            cap: BACKOFF_CAP_DEFAULT,
        }
    }
}

/// Per-kind overrides (`[jobs.kinds."<kind>"]` in the file). Unset fields
/// inherit the global value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KindConfig {
    /// For kinds whose handlers run much longer (or shorter) than most, so
    /// their leases neither expire mid-work nor hide a crash for too long.
    pub lease_ttl: Option<Duration>,
    /// For kinds whose failures are cheap (or expensive) to retry.
    pub max_attempts: Option<u32>,
    /// A per-kind base `b` is both the base and an at-least cap: the kind's
    /// schedule is `base' = b`, `cap' = max(cap, b)`.
    pub backoff_base: Option<Duration>,
    /// For kinds whose dependencies recover on a different schedule.
    pub backoff_factor: Option<f64>,
    /// The kind's cap; must not be below the kind's effective base.
    pub backoff_cap: Option<Duration>,
    /// The kind's jitter share (0 to 1).
    pub backoff_jitter: Option<f64>,
    /// The kind's run-time limit (`Some(None)`: none, over a global one).
    pub timeout: Option<Option<Duration>>,
    /// The kind's longest lease (`Some(None)`: none, over a global one).
    pub max_lease_total: Option<Option<Duration>>,
    /// The kind's snoozes that spend no attempt.
    pub max_snoozes: Option<u32>,
}

/// The engine's configuration. Build it with `Config::default()` and field
/// updates, or `Config::load(file)` for file + environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// How long a worker may go silent before its job is handed to another;
    /// the trade-off between rescuing crashed work and re-running slow work.
    pub lease_ttl: Duration,
    /// `Duration::ZERO` starts no background reaper (`reap()` still works).
    pub reaper_interval: Duration,
    /// How many times a job is leased before it is dead-lettered, so a
    /// poison job cannot loop forever.
    pub max_attempts: u32,
    /// The retry schedule for kinds without their own.
    pub backoff: Backoff,
    /// Each retry delay of the schedule is drawn uniformly from
    /// `delay × (1 ± jitter)` (0 to 1; 0 keeps exact delays), so jobs that
    /// failed together do not all retry at the same instant. Not applied to
    /// a delay the caller chose (`retry_in`, snooze).
    pub backoff_jitter: f64,
    /// `None` keeps completed jobs forever.
    pub completed_retention: Option<Duration>,
    /// fsync every commit (concurrent committers share one fsync).
    pub sync_writes: bool,
    /// The largest payload or result accepted, so one job cannot bloat the
    /// store or a worker's memory.
    pub max_payload_bytes: usize,
    /// Bounds one pruning pass, so pruning never stalls the reaper's lease
    /// rescue behind a huge backlog of deletes.
    pub prune_batch: usize,
    /// `None` keeps dead jobs forever (default 7 days).
    pub dead_retention: Option<Duration>,
    /// `None` keeps cancelled jobs forever (default 24 hours).
    pub cancelled_retention: Option<Duration>,
    /// How long a Worker lets a handler run (`None`: no limit). The engine
    /// hands it to workers with each lease ([`crate::Job::timeout_ms`]).
    pub timeout: Option<Duration>,
    /// The longest one lease may be held, heartbeats included (`None`: no
    /// limit): `extend` stops renewing past it.
    pub max_lease_total: Option<Duration>,
    /// Snoozes that spend no attempt; later ones count as failed attempts.
    pub max_snoozes: u32,
    /// Per-kind overrides, keyed by exact kind.
    pub kinds: BTreeMap<String, KindConfig>,
    /// An internal map (`jobs.backoff_base_secs_by_kind`): a per-kind
    /// backoff base in seconds, with the same rule as
    /// `kinds[k].backoff_base`, which wins when both are set. Not settable
    /// from the environment.
    pub backoff_base_secs_by_kind: BTreeMap<String, u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            lease_ttl: LEASE_TTL_DEFAULT,
            reaper_interval: REAPER_INTERVAL_DEFAULT,
            max_attempts: MAX_ATTEMPTS_DEFAULT,
            backoff: Backoff::default(),
            backoff_jitter: BACKOFF_JITTER_DEFAULT,
            completed_retention: Some(COMPLETED_RETENTION_DEFAULT),
            sync_writes: false,
            max_payload_bytes: MAX_PAYLOAD_BYTES_DEFAULT,
            prune_batch: PRUNE_BATCH_DEFAULT,
            dead_retention: Some(DEAD_RETENTION_DEFAULT),
            cancelled_retention: Some(CANCELLED_RETENTION_DEFAULT),
            timeout: None,
            max_lease_total: None,
            max_snoozes: u32::MAX,
            kinds: BTreeMap::new(),
            backoff_base_secs_by_kind: BTreeMap::new(),
        }
    }
}

impl Config {
    /// The lease TTL for `kind`.
    pub fn lease_ttl_for(&self, kind: &str) -> Duration {
        self.kinds
            .get(kind)
            .and_then(|k| k.lease_ttl)
            .unwrap_or(self.lease_ttl)
    }

    /// The run-time limit for `kind` (`None`: none).
    pub fn timeout_for(&self, kind: &str) -> Option<Duration> {
        match self.kinds.get(kind).and_then(|k| k.timeout) {
            Some(t) => t,
            None => self.timeout,
        }
    }

    /// The longest lease for `kind` (`None`: none).
    pub fn max_lease_total_for(&self, kind: &str) -> Option<Duration> {
        match self.kinds.get(kind).and_then(|k| k.max_lease_total) {
            Some(t) => t,
            None => self.max_lease_total,
        }
    }

    /// The snoozes that spend no attempt for `kind`.
    pub fn max_snoozes_for(&self, kind: &str) -> u32 {
        self.kinds
            .get(kind)
            .and_then(|k| k.max_snoozes)
            .unwrap_or(self.max_snoozes)
    }

    /// max_attempts for a job: per job > per kind > global.
    pub fn max_attempts_for(&self, kind: &str, per_job: Option<u32>) -> u32 {
        per_job
            .or_else(|| self.kinds.get(kind).and_then(|k| k.max_attempts))
            .unwrap_or(self.max_attempts)
    }

    /// The backoff schedule for `kind`: a per-kind base `b` gives
    /// `base' = b` and `cap' = max(cap, b)`.
    pub fn backoff_for(&self, kind: &str) -> Backoff {
        let k = self.kinds.get(kind);
        let base_override = k.and_then(|k| k.backoff_base).or_else(|| {
            self.backoff_base_secs_by_kind
                .get(kind)
                .map(|s| Duration::from_secs(*s))
        });
        let factor = k
            .and_then(|k| k.backoff_factor)
            .unwrap_or(self.backoff.factor);
        let cap = k.and_then(|k| k.backoff_cap).unwrap_or(self.backoff.cap);
        match base_override {
            Some(b) => Backoff {
                base: b,
                factor,
                cap: cap.max(b),
            },
            None => Backoff {
                base: self.backoff.base,
                factor,
                cap,
            },
        }
    }

    /// The delay before attempt `attempts + 1` of a job of `kind`, after
    /// `attempts` (≥ 1) failed attempts, before jitter.
    pub fn backoff_delay(&self, kind: &str, attempts: u32) -> Duration {
        crate::backoff::delay(&self.backoff_for(kind), attempts)
    }

    /// The schedule of one job: [`Config::backoff_for`] its kind, with a
    /// per-job base `b` (enqueue's `backoff_base`) over the kind's and the
    /// global one, by the same rule (`base' = b`, `cap' = max(cap, b)`).
    pub fn backoff_for_job(&self, kind: &str, base: Option<Duration>) -> Backoff {
        let mut b = self.backoff_for(kind);
        if let Some(base) = base {
            b.cap = b.cap.max(base);
            b.base = base;
        }
        b
    }

    /// The jitter share for `kind`: per kind, else global.
    pub fn backoff_jitter_for(&self, kind: &str) -> f64 {
        self.kinds
            .get(kind)
            .and_then(|k| k.backoff_jitter)
            .unwrap_or(self.backoff_jitter)
    }

    /// Check every value (each key against its type and range, then the
    /// rules across keys); `open` calls this and refuses a bad config.
    pub fn validate(&self) -> Result<()> {
        validate::validate(self)
    }

    /// Parses a TOML config over the defaults. Values are only type-checked
    /// here; ranges are checked by [`Config::validate`] once the environment
    /// has had its say, so an env override can rescue a bad file value.
    pub fn from_toml_str(s: &str) -> Result<Config> {
        let root: Table = s
            .parse()
            .map_err(|e| Error::invalid(format!("config is not valid TOML: {e}")))?;
        let mut c = Config::default();
        file::overlay_root(&mut c, &root)?;
        Ok(c)
    }

    /// Reads a TOML config file over the defaults; see
    /// [`Config::from_toml_str`]. Every error names the path, because the
    /// file may have come from `TELHA_JOBS_CONFIG` rather than the caller.
    pub fn from_file(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::invalid(format!("cannot read config file {}: {e}", path.display()))
        })?;
        Config::from_toml_str(&text)
            .map_err(|e| prefix(&format!("config file {}", path.display()), e))
    }

    /// The one call a program needs: defaults, then the file (`file`, else
    /// `$TELHA_JOBS_CONFIG` if set), then the environment, then
    /// [`Config::validate`], so a bad setting fails at startup rather than
    /// when the first job hits it.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        let env_file = std::env::var_os(env::CONFIG_PATH_VAR).map(PathBuf::from);
        load_with(file, env_file, env::telha_env_vars())
    }
}

/// [`Config::load`] with the environment passed in, for tests.
fn load_with(
    file: Option<&Path>,
    env_file: Option<PathBuf>,
    vars: Vec<(String, String)>,
) -> Result<Config> {
    let var = env::CONFIG_PATH_VAR;
    let mut c = match (file, env_file) {
        (Some(path), _) => Config::from_file(path)?,
        (None, Some(path)) if path.as_os_str().is_empty() => {
            return Err(Error::invalid(format!(
                "{var} is set but empty; unset it to load no config file"
            )))
        }
        (None, Some(path)) => Config::from_file(&path).map_err(|e| prefix(var, e))?,
        (None, None) => Config::default(),
    };
    c.apply_env_from(vars)?;
    c.validate()?;
    Ok(c)
}

/// Puts `context` in front of an `InvalidArgument` message.
fn prefix(context: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument(msg) => Error::invalid(format!("{context}: {msg}")),
        other => other,
    }
}

#[cfg(test)]
mod tests;
