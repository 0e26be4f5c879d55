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
//!
//! [jobs.backoff]
//! base = "10s"
//! factor = 4.0
//! cap = "1h"
//!
//! # A per-kind backoff base in whole seconds (same rule as `backoff_base`).
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
//! | `TELHA_JOBS_COMPLETED_RETENTION` | `jobs.completed_retention` | duration, or `false`/`off`/`none` |
//! | `TELHA_JOBS_SYNC_WRITES` | `jobs.sync_writes` | `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off` |
//! | `TELHA_JOBS_MAX_PAYLOAD_BYTES` | `jobs.max_payload_bytes` | integer |
//! | `TELHA_JOBS_PRUNE_BATCH` | `jobs.prune_batch` | integer |
//!
//! Per-kind settings have no variables: kinds are open-ended and do not map
//! onto variable names. Other `TELHA_JOBS_*` variables are ignored: the
//! environment is shared with other programs, so unlike the file it cannot be
//! held to a closed set of names. An empty or unreadable value is an error
//! naming the variable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use crate::error::{Error, Result};

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
/// `jobs.completed_retention`: how long completed jobs are kept.
pub const COMPLETED_RETENTION_DEFAULT: Duration = Duration::from_secs(24 * 3600);
/// `jobs.max_payload_bytes`: the largest payload or result accepted.
pub const MAX_PAYLOAD_BYTES_DEFAULT: usize = 16 * 1024 * 1024;
/// The hard ceiling for `max_payload_bytes` (RocksDB values are u32-sized).
pub const MAX_PAYLOAD_BYTES_LIMIT: usize = 1 << 30;
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
    /// This kind's backoff base `b`: it is both the base and an at-least cap
    /// (`base' = b`, `cap' = max(cap, b)`).
    pub backoff_base: Option<Duration>,
    /// For kinds whose dependencies recover on a different schedule.
    pub backoff_factor: Option<f64>,
    /// The kind's cap; must not be below the kind's effective base.
    pub backoff_cap: Option<Duration>,
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
    /// Per-kind overrides, keyed by exact kind.
    pub kinds: BTreeMap<String, KindConfig>,
    /// `jobs.backoff_base_secs_by_kind`: a per-kind backoff base in whole
    /// seconds, with the rule of [`KindConfig::backoff_base`] (`base' = b`,
    /// `cap' = max(cap, b)`). Not settable from the environment.
    /// `kinds[k].backoff_base` wins when both are set.
    pub backoff_base_secs_by_kind: BTreeMap<String, u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            lease_ttl: LEASE_TTL_DEFAULT,
            reaper_interval: REAPER_INTERVAL_DEFAULT,
            max_attempts: MAX_ATTEMPTS_DEFAULT,
            backoff: Backoff::default(),
            completed_retention: Some(COMPLETED_RETENTION_DEFAULT),
            sync_writes: false,
            max_payload_bytes: MAX_PAYLOAD_BYTES_DEFAULT,
            prune_batch: PRUNE_BATCH_DEFAULT,
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

    /// max_attempts for a job: per job > per kind > global.
    pub fn max_attempts_for(&self, kind: &str, per_job: Option<u32>) -> u32 {
        per_job
            .or_else(|| self.kinds.get(kind).and_then(|k| k.max_attempts))
            .unwrap_or(self.max_attempts)
    }

    /// The backoff schedule for `kind`, with the per-kind base applied: a
    /// per-kind base `b` gives `base' = b` and `cap' = max(cap, b)`.
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
    /// `attempts` (≥ 1) failed attempts.
    pub fn backoff_delay(&self, kind: &str, attempts: u32) -> Duration {
        crate::backoff::delay(&self.backoff_for(kind), attempts)
    }

    /// Check every value; `open` calls this and refuses a bad config.
    pub fn validate(&self) -> Result<()> {
        validate_impl(self)
    }

    /// Parses a TOML config over the defaults. Values are only type-checked
    /// here; ranges are checked by [`Config::validate`] once the environment
    /// has had its say, so an env override can rescue a bad file value.
    pub fn from_toml_str(s: &str) -> Result<Config> {
        let root: Table = s
            .parse()
            .map_err(|e| Error::invalid(format!("config is not valid TOML: {e}")))?;
        let mut c = Config::default();
        overlay_root(&mut c, &root)?;
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

    /// Overlays the `TELHA_JOBS_*` variables of this process (table in the
    /// module docs), so a deployment can change a setting without editing
    /// the file.
    pub fn apply_env(&mut self) -> Result<()> {
        self.apply_env_from(telha_env_vars())
    }

    /// Overlays `TELHA_JOBS_*` settings from `vars`: [`Config::apply_env`]
    /// with the environment passed in, so tests and embedders never have to
    /// mutate the process environment. Unrelated names are ignored. All or
    /// nothing: on error `self` is unchanged.
    pub fn apply_env_from<I: IntoIterator<Item = (String, String)>>(
        &mut self,
        vars: I,
    ) -> Result<()> {
        let mut c = self.clone();
        for (name, value) in vars {
            let (name, value) = (name.as_str(), value.as_str());
            match name {
                "TELHA_JOBS_LEASE_TTL" => c.lease_ttl = env_duration(name, value)?,
                "TELHA_JOBS_REAPER_INTERVAL" => c.reaper_interval = env_duration(name, value)?,
                "TELHA_JOBS_MAX_ATTEMPTS" => c.max_attempts = env_int(name, value)?,
                "TELHA_JOBS_BACKOFF_BASE" => c.backoff.base = env_duration(name, value)?,
                "TELHA_JOBS_BACKOFF_FACTOR" => c.backoff.factor = env_float(name, value)?,
                "TELHA_JOBS_BACKOFF_CAP" => c.backoff.cap = env_duration(name, value)?,
                "TELHA_JOBS_COMPLETED_RETENTION" => {
                    c.completed_retention = retention_text(value)
                        .ok_or_else(|| bad_env(name, RETENTION_HINT, value))?;
                }
                "TELHA_JOBS_SYNC_WRITES" => {
                    c.sync_writes = bool_text(value).ok_or_else(|| {
                        bad_env(name, "one of 1, 0, true, false, yes, no, on, off", value)
                    })?;
                }
                "TELHA_JOBS_MAX_PAYLOAD_BYTES" => c.max_payload_bytes = env_int(name, value)?,
                "TELHA_JOBS_PRUNE_BATCH" => c.prune_batch = env_int(name, value)?,
                // TELHA_JOBS_CONFIG is read by `load`; anything else is not ours.
                _ => {}
            }
        }
        *self = c;
        Ok(())
    }

    /// The one call a program needs: defaults, then the file (`file`, else
    /// `$TELHA_JOBS_CONFIG` if set), then the environment, then
    /// [`Config::validate`], so a bad setting fails at startup rather than
    /// when the first job hits it.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        let env_file = std::env::var_os(CONFIG_PATH_VAR).map(PathBuf::from);
        load_with(file, env_file, telha_env_vars())
    }
}

/// The variable naming the config file [`Config::load`] reads.
const CONFIG_PATH_VAR: &str = "TELHA_JOBS_CONFIG";

/// [`Config::load`] with the environment passed in, for tests.
fn load_with(
    file: Option<&Path>,
    env_file: Option<PathBuf>,
    vars: Vec<(String, String)>,
) -> Result<Config> {
    let mut c = match (file, env_file) {
        (Some(path), _) => Config::from_file(path)?,
        (None, Some(path)) if path.as_os_str().is_empty() => {
            return Err(Error::invalid(format!(
                "{CONFIG_PATH_VAR} is set but empty; unset it to load no config file"
            )))
        }
        (None, Some(path)) => Config::from_file(&path).map_err(|e| prefix(CONFIG_PATH_VAR, e))?,
        (None, None) => Config::default(),
    };
    c.apply_env_from(vars)?;
    c.validate()?;
    Ok(c)
}

/// The process's `TELHA_JOBS_*` variables. Non-UTF-8 values become
/// replacement characters, which no setting parses, so they are reported
/// by name instead of panicking as `std::env::vars` would.
fn telha_env_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            name.starts_with("TELHA_JOBS_")
                .then(|| (name, value.to_string_lossy().into_owned()))
        })
        .collect()
}

/// Puts `context` in front of an `InvalidArgument` message.
fn prefix(context: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument(msg) => Error::invalid(format!("{context}: {msg}")),
        other => other,
    }
}

// ---- value syntax shared by the file and the environment ----

const DURATION_HINT: &str =
    "a duration such as \"250ms\", \"5m\" or \"1h 30m\", or a number of seconds";
const RETENTION_HINT: &str = "a duration such as \"24h\" or a number of seconds, \
     or false/\"off\"/\"none\" to keep completed jobs forever";

/// A duration written as text: whole or fractional seconds, else humantime.
fn duration_text(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = s.parse::<f64>() {
        // Negative, NaN, infinite or too large: not a duration.
        return Duration::try_from_secs_f64(secs).ok();
    }
    humantime::parse_duration(s).ok()
}

/// A retention: a duration, or one of the words that mean "keep forever".
fn retention_text(s: &str) -> Option<Option<Duration>> {
    match s.trim().to_ascii_lowercase().as_str() {
        "false" | "off" | "none" => Some(None),
        _ => duration_text(s).map(Some),
    }
}

fn bool_text(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

// ---- the environment ----

fn bad_env(name: &str, expected: &str, value: &str) -> Error {
    Error::invalid(format!("{name} must be {expected}, got {value:?}"))
}

fn env_duration(name: &str, value: &str) -> Result<Duration> {
    duration_text(value).ok_or_else(|| bad_env(name, DURATION_HINT, value))
}

fn env_int<T: std::str::FromStr>(name: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| {
        let expected = format!(
            "a non-negative integer that fits in {}",
            std::any::type_name::<T>()
        );
        bad_env(name, &expected, value)
    })
}

fn env_float(name: &str, value: &str) -> Result<f64> {
    value
        .trim()
        .parse()
        .map_err(|_| bad_env(name, "a number", value))
}

// ---- the file ----

const ROOT_KEYS: &[&str] = &["jobs"];
const JOBS_KEYS: &[&str] = &[
    "lease_ttl",
    "reaper_interval",
    "max_attempts",
    "completed_retention",
    "sync_writes",
    "max_payload_bytes",
    "prune_batch",
    "backoff",
    "backoff_base_secs_by_kind",
    "kinds",
];
const BACKOFF_KEYS: &[&str] = &["base", "factor", "cap"];
const KIND_KEYS: &[&str] = &[
    "lease_ttl",
    "max_attempts",
    "backoff_base",
    "backoff_factor",
    "backoff_cap",
];

fn overlay_root(c: &mut Config, root: &Table) -> Result<()> {
    for (k, v) in root {
        match k.as_str() {
            "jobs" => overlay_jobs(c, file_table("jobs", v)?)?,
            _ => return Err(unknown_key(&key_segment(k), ROOT_KEYS)),
        }
    }
    Ok(())
}

fn overlay_jobs(c: &mut Config, jobs: &Table) -> Result<()> {
    for (k, v) in jobs {
        let key = format!("jobs.{}", key_segment(k));
        match k.as_str() {
            "lease_ttl" => c.lease_ttl = file_duration(&key, v)?,
            "reaper_interval" => c.reaper_interval = file_duration(&key, v)?,
            "max_attempts" => c.max_attempts = file_int(&key, v)?,
            "completed_retention" => c.completed_retention = file_retention(&key, v)?,
            "sync_writes" => c.sync_writes = file_bool(&key, v)?,
            "max_payload_bytes" => c.max_payload_bytes = file_int(&key, v)?,
            "prune_batch" => c.prune_batch = file_int(&key, v)?,
            "backoff" => {
                for (bk, bv) in file_table(&key, v)? {
                    let bkey = format!("{key}.{}", key_segment(bk));
                    match bk.as_str() {
                        "base" => c.backoff.base = file_duration(&bkey, bv)?,
                        "factor" => c.backoff.factor = file_float(&bkey, bv)?,
                        "cap" => c.backoff.cap = file_duration(&bkey, bv)?,
                        _ => return Err(unknown_key(&bkey, BACKOFF_KEYS)),
                    }
                }
            }
            "backoff_base_secs_by_kind" => {
                for (kind, secs) in file_table(&key, v)? {
                    let skey = format!("{key}.{}", key_segment(kind));
                    let secs = file_int(&skey, secs)?;
                    c.backoff_base_secs_by_kind.insert(kind.clone(), secs);
                }
            }
            "kinds" => {
                for (kind, kv) in file_table(&key, v)? {
                    let kkey = format!("{key}.{}", key_segment(kind));
                    let table = file_table(&kkey, kv)?;
                    overlay_kind(c.kinds.entry(kind.clone()).or_default(), &kkey, table)?;
                }
            }
            _ => return Err(unknown_key(&key, JOBS_KEYS)),
        }
    }
    Ok(())
}

fn overlay_kind(kc: &mut KindConfig, kkey: &str, table: &Table) -> Result<()> {
    for (k, v) in table {
        let key = format!("{kkey}.{}", key_segment(k));
        match k.as_str() {
            "lease_ttl" => kc.lease_ttl = Some(file_duration(&key, v)?),
            "max_attempts" => kc.max_attempts = Some(file_int(&key, v)?),
            "backoff_base" => kc.backoff_base = Some(file_duration(&key, v)?),
            "backoff_factor" => kc.backoff_factor = Some(file_float(&key, v)?),
            "backoff_cap" => kc.backoff_cap = Some(file_duration(&key, v)?),
            _ => return Err(unknown_key(&key, KIND_KEYS)),
        }
    }
    Ok(())
}

/// A key as TOML would write it: bare when it can be, quoted otherwise
/// (kinds such as `ingest:pdf` always need quotes).
fn key_segment(k: &str) -> String {
    let bare = !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

fn unknown_key(key: &str, known: &[&str]) -> Error {
    Error::invalid(format!(
        "unknown config key {key} (expected one of: {})",
        known.join(", ")
    ))
}

/// A value for an error message: its TOML type, and the value when short.
fn describe(v: &Value) -> String {
    match v {
        Value::Table(_) | Value::Array(_) => format!("a {}", v.type_str()),
        _ => format!("{} {v}", v.type_str()),
    }
}

fn bad_file(key: &str, expected: &str, v: &Value) -> Error {
    Error::invalid(format!("{key} must be {expected}, got {}", describe(v)))
}

fn file_table<'a>(key: &str, v: &'a Value) -> Result<&'a Table> {
    v.as_table().ok_or_else(|| bad_file(key, "a table", v))
}

fn duration_value(v: &Value) -> Option<Duration> {
    match v {
        Value::String(s) => duration_text(s),
        Value::Integer(i) => u64::try_from(*i).ok().map(Duration::from_secs),
        Value::Float(f) => Duration::try_from_secs_f64(*f).ok(),
        _ => None,
    }
}

fn file_duration(key: &str, v: &Value) -> Result<Duration> {
    duration_value(v).ok_or_else(|| bad_file(key, DURATION_HINT, v))
}

fn file_retention(key: &str, v: &Value) -> Result<Option<Duration>> {
    let r = match v {
        Value::Boolean(false) => Some(None),
        Value::String(s) => retention_text(s),
        _ => duration_value(v).map(Some),
    };
    r.ok_or_else(|| bad_file(key, RETENTION_HINT, v))
}

fn file_int<T: TryFrom<i64>>(key: &str, v: &Value) -> Result<T> {
    v.as_integer()
        .and_then(|i| T::try_from(i).ok())
        .ok_or_else(|| {
            let expected = format!(
                "a non-negative integer that fits in {}",
                std::any::type_name::<T>()
            );
            bad_file(key, &expected, v)
        })
}

fn file_float(key: &str, v: &Value) -> Result<f64> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Integer(i) => Ok(*i as f64),
        _ => Err(bad_file(key, "a number", v)),
    }
}

fn file_bool(key: &str, v: &Value) -> Result<bool> {
    v.as_bool().ok_or_else(|| bad_file(key, "true or false", v))
}

// ---- validation ----

fn fmt_duration(d: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(d)
}

fn check_kind_key(map: &str, kind: &str) -> Result<()> {
    crate::job::validate_kind(kind).map_err(|e| match e {
        Error::InvalidArgument(why) => {
            Error::invalid(format!("{map} key {kind:?} is not a valid kind: {why}"))
        }
        other => other,
    })
}

fn check_lease_ttl(key: &str, ttl: Duration) -> Result<()> {
    if ttl < Duration::from_millis(1) {
        return Err(Error::invalid(format!(
            "{key} must be >= 1ms, got {}",
            fmt_duration(ttl)
        )));
    }
    Ok(())
}

fn check_max_attempts(key: &str, n: u32) -> Result<()> {
    if n < 1 {
        return Err(Error::invalid(format!("{key} must be >= 1, got {n}")));
    }
    Ok(())
}

fn check_factor(key: &str, f: f64) -> Result<()> {
    // NaN fails `>=`, so this also rejects NaN.
    if !(f.is_finite() && f >= 1.0) {
        return Err(Error::invalid(format!(
            "{key} must be a finite number >= 1.0, got {f}"
        )));
    }
    Ok(())
}

fn check_base(key: &str, base: Duration) -> Result<()> {
    if base.is_zero() {
        return Err(Error::invalid(format!("{key} must be > 0, got 0s")));
    }
    Ok(())
}

fn validate_impl(c: &Config) -> Result<()> {
    check_lease_ttl("jobs.lease_ttl", c.lease_ttl)?;
    check_max_attempts("jobs.max_attempts", c.max_attempts)?;
    check_factor("jobs.backoff.factor", c.backoff.factor)?;
    check_base("jobs.backoff.base", c.backoff.base)?;
    if c.backoff.cap < c.backoff.base {
        return Err(Error::invalid(format!(
            "jobs.backoff.cap must be >= jobs.backoff.base ({}), got {}",
            fmt_duration(c.backoff.base),
            fmt_duration(c.backoff.cap)
        )));
    }
    if c.completed_retention == Some(Duration::ZERO) {
        return Err(Error::invalid(
            "jobs.completed_retention must be > 0 (false keeps completed jobs forever), got 0s",
        ));
    }
    if !(1..=MAX_PAYLOAD_BYTES_LIMIT).contains(&c.max_payload_bytes) {
        return Err(Error::invalid(format!(
            "jobs.max_payload_bytes must be between 1 and {MAX_PAYLOAD_BYTES_LIMIT}, got {}",
            c.max_payload_bytes
        )));
    }
    if c.prune_batch < 1 {
        return Err(Error::invalid("jobs.prune_batch must be >= 1, got 0"));
    }
    for (kind, secs) in &c.backoff_base_secs_by_kind {
        check_kind_key("jobs.backoff_base_secs_by_kind", kind)?;
        if *secs < 1 {
            return Err(Error::invalid(format!(
                "jobs.backoff_base_secs_by_kind.{} must be >= 1, got {secs}",
                key_segment(kind)
            )));
        }
    }
    for (kind, k) in &c.kinds {
        check_kind_key("jobs.kinds", kind)?;
        let p = format!("jobs.kinds.{}", key_segment(kind));
        if let Some(ttl) = k.lease_ttl {
            check_lease_ttl(&format!("{p}.lease_ttl"), ttl)?;
        }
        if let Some(n) = k.max_attempts {
            check_max_attempts(&format!("{p}.max_attempts"), n)?;
        }
        if let Some(f) = k.backoff_factor {
            check_factor(&format!("{p}.backoff_factor"), f)?;
        }
        if let Some(base) = k.backoff_base {
            check_base(&format!("{p}.backoff_base"), base)?;
        }
        if let Some(cap) = k.backoff_cap {
            // The kind's own base if it has one, else the global base: a cap
            // below it would make the first retry wait longer than the cap.
            let base = c.backoff_for(kind).base;
            if cap < base {
                return Err(Error::invalid(format!(
                    "{p}.backoff_cap must be >= the kind's backoff base ({}), got {}",
                    fmt_duration(base),
                    fmt_duration(cap)
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
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
        [jobs.backoff]
        base = "5s"
        factor = 3.0
        cap = "30m"
        [jobs.backoff_base_secs_by_kind]
        "clarify:temporal" = 900
        [jobs.kinds."ingest:pdf"]
        lease_ttl = "15m"
        max_attempts = 3
        backoff_base = "30s"
        backoff_factor = 2.0
        backoff_cap = "2h"
    "#;

    #[test]
    fn defaults_equal_the_named_constants() {
        let c = Config::default();
        assert_eq!(c.lease_ttl, LEASE_TTL_DEFAULT);
        assert_eq!(c.reaper_interval, REAPER_INTERVAL_DEFAULT);
        assert_eq!(c.max_attempts, MAX_ATTEMPTS_DEFAULT);
        assert_eq!(c.backoff.base, BACKOFF_BASE_DEFAULT);
        assert_eq!(c.backoff.factor, BACKOFF_FACTOR_DEFAULT);
        assert_eq!(c.backoff.cap, BACKOFF_CAP_DEFAULT);
        assert_eq!(c.completed_retention, Some(COMPLETED_RETENTION_DEFAULT));
        assert!(!c.sync_writes);
        assert_eq!(c.max_payload_bytes, MAX_PAYLOAD_BYTES_DEFAULT);
        assert_eq!(c.prune_batch, PRUNE_BATCH_DEFAULT);
        assert!(c.kinds.is_empty());
        assert!(c.backoff_base_secs_by_kind.is_empty());
        c.validate().expect("the defaults are valid");
    }

    #[test]
    fn an_empty_file_or_empty_jobs_table_gives_the_defaults() {
        assert_eq!(parse(""), Config::default());
        assert_eq!(parse("[jobs]"), Config::default());
    }

    #[test]
    fn a_full_file_sets_every_key() {
        let c = parse(FULL);
        let want = Config {
            lease_ttl: secs(600),
            reaper_interval: Duration::ZERO,
            max_attempts: 7,
            backoff: Backoff {
                base: secs(5),
                factor: 3.0,
                cap: secs(1800),
            },
            completed_retention: Some(2 * HOUR),
            sync_writes: true,
            max_payload_bytes: 1024,
            prune_batch: 50,
            kinds: BTreeMap::from([(
                "ingest:pdf".to_string(),
                KindConfig {
                    lease_ttl: Some(secs(900)),
                    max_attempts: Some(3),
                    backoff_base: Some(secs(30)),
                    backoff_factor: Some(2.0),
                    backoff_cap: Some(2 * HOUR),
                },
            )]),
            backoff_base_secs_by_kind: BTreeMap::from([("clarify:temporal".to_string(), 900)]),
        };
        assert_eq!(c, want);
        c.validate().expect("the full example is valid");
    }

    #[test]
    fn a_partial_file_keeps_the_defaults_for_the_rest() {
        let c = parse("[jobs.backoff]\nfactor = 2\n");
        assert_eq!(
            c,
            Config {
                backoff: Backoff {
                    factor: 2.0,
                    ..Backoff::default()
                },
                ..Config::default()
            }
        );
    }

    #[test]
    fn durations_accept_humantime_strings_and_numbers_of_seconds() {
        let cases: &[(&str, Duration)] = &[
            ("\"250ms\"", Duration::from_millis(250)),
            ("\"5m\"", secs(300)),
            ("\"1h 30m\"", secs(5400)),
            ("\"1h30m\"", secs(5400)),
            ("\"2 days\"", secs(2 * 86400)),
            ("300", secs(300)),
            ("1.5", Duration::from_millis(1500)),
            ("\"300\"", secs(300)),
            ("\"0.25\"", Duration::from_millis(250)),
            ("0", Duration::ZERO),
        ];
        for (text, want) in cases {
            let c = jobs(&format!("reaper_interval = {text}")).expect(text);
            assert_eq!(c.reaper_interval, *want, "reaper_interval = {text}");
        }
    }

    #[test]
    fn malformed_durations_are_rejected_naming_the_key() {
        for text in [
            "\"soon\"",
            "\"5 parsecs\"",
            "-1",
            "-0.5",
            "\"\"",
            "true",
            "nan",
            "inf",
            "1e300",
        ] {
            let msg = invalid_msg(jobs(&format!("lease_ttl = {text}")));
            assert!(msg.contains("jobs.lease_ttl"), "{text}: {msg}");
        }
    }

    #[test]
    fn completed_retention_false_off_or_none_keeps_jobs_forever() {
        for text in ["false", "\"off\"", "\"none\"", "\"OFF\""] {
            let c = jobs(&format!("completed_retention = {text}")).expect(text);
            assert_eq!(c.completed_retention, None, "{text}");
        }
        let c = jobs("completed_retention = \"7d\"").unwrap();
        assert_eq!(c.completed_retention, Some(secs(7 * 86400)));
        let msg = invalid_msg(jobs("completed_retention = true"));
        assert!(msg.contains("jobs.completed_retention"), "{msg}");
    }

    #[test]
    fn unknown_keys_are_rejected_naming_the_key() {
        let cases = [
            ("[jobs]\nlease_tll = 5", "jobs.lease_tll"),
            ("[jobs.backoff]\nfactr = 2.0", "jobs.backoff.factr"),
            (
                "[jobs.kinds.\"ingest:pdf\"]\nttl = 5",
                "jobs.kinds.\"ingest:pdf\".ttl",
            ),
            ("[job]\nlease_ttl = 5", "job"),
            ("[jobs.retry]\nbase = 5", "jobs.retry"),
        ];
        for (toml, key) in cases {
            let msg = invalid_msg(Config::from_toml_str(toml));
            assert!(
                msg.contains(&format!("unknown config key {key} ")),
                "{toml}: {msg}"
            );
        }
    }

    #[test]
    fn wrongly_typed_values_are_rejected_naming_the_key() {
        let cases = [
            ("max_attempts = \"5\"", "jobs.max_attempts"),
            ("max_attempts = -1", "jobs.max_attempts"),
            ("max_attempts = 4294967296", "jobs.max_attempts"),
            ("max_attempts = 2.5", "jobs.max_attempts"),
            ("sync_writes = \"yes\"", "jobs.sync_writes"),
            ("prune_batch = -5", "jobs.prune_batch"),
            ("max_payload_bytes = \"1MB\"", "jobs.max_payload_bytes"),
            ("backoff = 5", "jobs.backoff"),
            ("backoff.factor = \"fast\"", "jobs.backoff.factor"),
            ("kinds = [1]", "jobs.kinds"),
            ("kinds.embed = 5", "jobs.kinds.embed"),
            (
                "kinds.embed.max_attempts = true",
                "jobs.kinds.embed.max_attempts",
            ),
            (
                "backoff_base_secs_by_kind.\"a:b\" = \"15m\"",
                "jobs.backoff_base_secs_by_kind.\"a:b\"",
            ),
        ];
        for (body, key) in cases {
            let msg = invalid_msg(jobs(body));
            assert!(msg.starts_with(&format!("{key} must be")), "{body}: {msg}");
        }
        let msg = invalid_msg(Config::from_toml_str("jobs = 5"));
        assert!(msg.starts_with("jobs must be a table"), "{msg}");
    }

    #[test]
    fn invalid_toml_syntax_is_an_invalid_argument() {
        let msg = invalid_msg(Config::from_toml_str("[jobs\nlease_ttl ="));
        assert!(msg.contains("not valid TOML"), "{msg}");
    }

    #[test]
    fn from_file_reads_the_file_and_names_the_path_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.toml");
        std::fs::write(&good, FULL).unwrap();
        assert_eq!(Config::from_file(&good).unwrap(), parse(FULL));

        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[jobs]\nmax_atempts = 3\n").unwrap();
        let msg = invalid_msg(Config::from_file(&bad));
        assert!(msg.contains(&bad.display().to_string()), "{msg}");
        assert!(msg.contains("jobs.max_atempts"), "{msg}");

        let missing = dir.path().join("missing.toml");
        let msg = invalid_msg(Config::from_file(&missing));
        assert!(msg.contains(&missing.display().to_string()), "{msg}");
    }

    #[test]
    fn env_overrides_the_file() {
        let mut c = parse(FULL);
        c.apply_env_from(vars(&[
            ("TELHA_JOBS_LEASE_TTL", "45s"),
            ("TELHA_JOBS_REAPER_INTERVAL", "10"),
            ("TELHA_JOBS_MAX_ATTEMPTS", "9"),
            ("TELHA_JOBS_BACKOFF_BASE", "2s"),
            ("TELHA_JOBS_BACKOFF_FACTOR", "1.5"),
            ("TELHA_JOBS_BACKOFF_CAP", "10m"),
            ("TELHA_JOBS_COMPLETED_RETENTION", "off"),
            ("TELHA_JOBS_SYNC_WRITES", "no"),
            ("TELHA_JOBS_MAX_PAYLOAD_BYTES", "4096"),
            ("TELHA_JOBS_PRUNE_BATCH", "7"),
        ]))
        .unwrap();
        let file = parse(FULL);
        assert_eq!(
            c,
            Config {
                lease_ttl: secs(45),
                reaper_interval: secs(10),
                max_attempts: 9,
                backoff: Backoff {
                    base: secs(2),
                    factor: 1.5,
                    cap: secs(600),
                },
                completed_retention: None,
                sync_writes: false,
                max_payload_bytes: 4096,
                prune_batch: 7,
                // Per-kind settings come only from the file or code.
                kinds: file.kinds.clone(),
                backoff_base_secs_by_kind: file.backoff_base_secs_by_kind.clone(),
            }
        );
    }

    #[test]
    fn env_ignores_unrelated_variables_and_the_config_path() {
        let mut c = Config::default();
        c.apply_env_from(vars(&[
            ("PATH", "/usr/bin"),
            ("TELHA_JOBS_CONFIG", "/nonexistent.toml"),
            ("TELHA_JOBS_SOMETHING_NEWER", "garbage"),
            ("telha_jobs_lease_ttl", "garbage"),
        ]))
        .unwrap();
        assert_eq!(c, Config::default());
    }

    #[test]
    fn env_sync_writes_accepts_every_documented_spelling() {
        for (text, want) in [
            ("1", true),
            ("true", true),
            ("yes", true),
            ("on", true),
            ("TRUE", true),
            ("0", false),
            ("false", false),
            ("no", false),
            ("off", false),
            ("Off", false),
        ] {
            let mut c = Config {
                sync_writes: !want,
                ..Config::default()
            };
            c.apply_env_from(vars(&[("TELHA_JOBS_SYNC_WRITES", text)]))
                .unwrap();
            assert_eq!(c.sync_writes, want, "{text}");
        }
    }

    #[test]
    fn bad_env_values_are_rejected_naming_the_variable_and_change_nothing() {
        let cases = [
            ("TELHA_JOBS_LEASE_TTL", "forever"),
            ("TELHA_JOBS_REAPER_INTERVAL", "-3"),
            ("TELHA_JOBS_MAX_ATTEMPTS", "five"),
            ("TELHA_JOBS_MAX_ATTEMPTS", "-1"),
            ("TELHA_JOBS_BACKOFF_BASE", ""),
            ("TELHA_JOBS_BACKOFF_FACTOR", "fast"),
            ("TELHA_JOBS_BACKOFF_CAP", "1 fortnight"),
            ("TELHA_JOBS_COMPLETED_RETENTION", "never"),
            ("TELHA_JOBS_SYNC_WRITES", "maybe"),
            ("TELHA_JOBS_MAX_PAYLOAD_BYTES", "16MiB"),
            ("TELHA_JOBS_PRUNE_BATCH", "1.5"),
        ];
        for (name, value) in cases {
            let mut c = Config::default();
            let r = c.apply_env_from(vars(&[("TELHA_JOBS_LEASE_TTL", "1s"), (name, value)]));
            let msg = invalid_msg(r);
            assert!(
                msg.starts_with(&format!("{name} must be")),
                "{name}={value}: {msg}"
            );
            assert_eq!(c, Config::default(), "{name}={value} left a partial change");
        }
    }

    #[test]
    fn load_layers_env_over_the_file_over_the_defaults_then_validates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobs.toml");
        std::fs::write(&path, "[jobs]\nlease_ttl = \"10m\"\nmax_attempts = 2\n").unwrap();

        let c = load_with(Some(&path), None, vars(&[("TELHA_JOBS_MAX_ATTEMPTS", "4")])).unwrap();
        assert_eq!(c.lease_ttl, secs(600));
        assert_eq!(c.max_attempts, 4);
        assert_eq!(c.reaper_interval, REAPER_INTERVAL_DEFAULT);

        // The env can rescue a file value that is out of range...
        std::fs::write(&path, "[jobs]\nmax_attempts = 0\n").unwrap();
        let c = load_with(Some(&path), None, vars(&[("TELHA_JOBS_MAX_ATTEMPTS", "1")])).unwrap();
        assert_eq!(c.max_attempts, 1);
        // ...and without it, load refuses the file.
        let msg = invalid_msg(load_with(Some(&path), None, vec![]));
        assert!(msg.contains("jobs.max_attempts"), "{msg}");
        let msg = invalid_msg(load_with(
            None,
            None,
            vars(&[("TELHA_JOBS_MAX_ATTEMPTS", "0")]),
        ));
        assert!(msg.contains("jobs.max_attempts"), "{msg}");
    }

    #[test]
    fn load_reads_telha_jobs_config_only_when_given_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let from_arg = dir.path().join("arg.toml");
        let from_env = dir.path().join("env.toml");
        std::fs::write(&from_arg, "[jobs]\nmax_attempts = 2\n").unwrap();
        std::fs::write(&from_env, "[jobs]\nmax_attempts = 3\n").unwrap();

        let c = load_with(None, Some(from_env.clone()), vec![]).unwrap();
        assert_eq!(c.max_attempts, 3);
        let c = load_with(Some(&from_arg), Some(from_env.clone()), vec![]).unwrap();
        assert_eq!(c.max_attempts, 2);
        assert_eq!(load_with(None, None, vec![]).unwrap(), Config::default());

        let missing = dir.path().join("missing.toml");
        let msg = invalid_msg(load_with(None, Some(missing.clone()), vec![]));
        assert!(msg.starts_with("TELHA_JOBS_CONFIG: "), "{msg}");
        assert!(msg.contains(&missing.display().to_string()), "{msg}");
        let msg = invalid_msg(load_with(None, Some(PathBuf::new()), vec![]));
        assert!(msg.contains("TELHA_JOBS_CONFIG"), "{msg}");
    }

    /// Applies `f` to a default config and returns the validation message.
    fn rejected(f: impl FnOnce(&mut Config)) -> String {
        let mut c = Config::default();
        f(&mut c);
        invalid_msg(c.validate())
    }

    #[test]
    fn validate_rejects_each_out_of_range_global() {
        let cases: Vec<(&str, String)> = vec![
            (
                "jobs.lease_ttl must be >= 1ms",
                rejected(|c| c.lease_ttl = Duration::from_micros(999)),
            ),
            (
                "jobs.max_attempts must be >= 1",
                rejected(|c| c.max_attempts = 0),
            ),
            (
                "jobs.backoff.factor must be a finite number >= 1.0, got 0.5",
                rejected(|c| c.backoff.factor = 0.5),
            ),
            (
                "jobs.backoff.factor",
                rejected(|c| c.backoff.factor = f64::NAN),
            ),
            (
                "jobs.backoff.factor",
                rejected(|c| c.backoff.factor = f64::INFINITY),
            ),
            (
                "jobs.backoff.base must be > 0",
                rejected(|c| c.backoff.base = Duration::ZERO),
            ),
            (
                "jobs.backoff.cap must be >= jobs.backoff.base",
                rejected(|c| c.backoff.cap = secs(9)),
            ),
            (
                "jobs.completed_retention must be > 0",
                rejected(|c| c.completed_retention = Some(Duration::ZERO)),
            ),
            (
                "jobs.max_payload_bytes",
                rejected(|c| c.max_payload_bytes = 0),
            ),
            (
                "jobs.max_payload_bytes",
                rejected(|c| c.max_payload_bytes = MAX_PAYLOAD_BYTES_LIMIT + 1),
            ),
            (
                "jobs.prune_batch must be >= 1",
                rejected(|c| c.prune_batch = 0),
            ),
        ];
        for (want, msg) in cases {
            assert!(msg.starts_with(want), "want {want:?}, got {msg:?}");
        }
    }

    #[test]
    fn validate_accepts_the_edges_of_each_range() {
        let mut c = Config {
            lease_ttl: Duration::from_millis(1),
            reaper_interval: Duration::ZERO,
            max_attempts: 1,
            backoff: Backoff {
                base: Duration::from_millis(1),
                factor: 1.0,
                cap: Duration::from_millis(1),
            },
            completed_retention: None,
            max_payload_bytes: MAX_PAYLOAD_BYTES_LIMIT,
            prune_batch: 1,
            ..Config::default()
        };
        c.validate().unwrap();
        c.max_payload_bytes = 1;
        c.completed_retention = Some(Duration::from_nanos(1));
        c.validate().unwrap();
    }

    #[test]
    fn validate_rejects_malformed_kind_names_in_either_map() {
        for bad in [
            "",
            "Ingest:pdf",
            "ingest pdf",
            "ingest:*",
            "ingest/pdf",
            "é",
            &"a".repeat(65),
        ] {
            let msg = rejected(|c| {
                c.kinds.insert(bad.to_string(), KindConfig::default());
            });
            assert!(msg.starts_with("jobs.kinds key "), "{bad:?}: {msg}");
            let msg = rejected(|c| {
                c.backoff_base_secs_by_kind.insert(bad.to_string(), 60);
            });
            assert!(
                msg.starts_with("jobs.backoff_base_secs_by_kind key "),
                "{bad:?}: {msg}"
            );
        }
        let mut c = Config::default();
        for good in [
            "embed",
            "ingest:pdf",
            "system:vacuum.v2",
            "a_b-c",
            &"a".repeat(64),
        ] {
            c.kinds.insert(good.to_string(), KindConfig::default());
        }
        c.validate().unwrap();
    }

    #[test]
    fn validate_holds_per_kind_overrides_to_the_global_bounds() {
        fn kind(f: impl FnOnce(&mut KindConfig)) -> impl FnOnce(&mut Config) {
            move |c| f(c.kinds.entry("ingest:pdf".to_string()).or_default())
        }
        let p = "jobs.kinds.\"ingest:pdf\"";
        let cases: Vec<(String, String)> = vec![
            (
                format!("{p}.lease_ttl must be >= 1ms"),
                rejected(kind(|k| k.lease_ttl = Some(Duration::ZERO))),
            ),
            (
                format!("{p}.max_attempts must be >= 1"),
                rejected(kind(|k| k.max_attempts = Some(0))),
            ),
            (
                format!("{p}.backoff_factor must be a finite number >= 1.0"),
                rejected(kind(|k| k.backoff_factor = Some(0.9))),
            ),
            (
                format!("{p}.backoff_factor"),
                rejected(kind(|k| k.backoff_factor = Some(f64::NAN))),
            ),
            (
                format!("{p}.backoff_base must be > 0"),
                rejected(kind(|k| k.backoff_base = Some(Duration::ZERO))),
            ),
            (
                // No per-kind base: the global base (10s) is the floor.
                format!("{p}.backoff_cap must be >= the kind's backoff base (10s)"),
                rejected(kind(|k| k.backoff_cap = Some(secs(5)))),
            ),
            (
                format!("{p}.backoff_cap must be >= the kind's backoff base (1m)"),
                rejected(kind(|k| {
                    k.backoff_base = Some(secs(60));
                    k.backoff_cap = Some(secs(30));
                })),
            ),
            (
                "jobs.backoff_base_secs_by_kind.\"clarify:temporal\" must be >= 1".to_string(),
                rejected(|c| {
                    c.backoff_base_secs_by_kind
                        .insert("clarify:temporal".to_string(), 0);
                }),
            ),
        ];
        for (want, msg) in cases {
            assert!(msg.starts_with(&want), "want {want:?}, got {msg:?}");
        }
    }

    #[test]
    fn a_per_kind_cap_may_sit_below_the_global_base_but_not_the_kinds_own() {
        let mut c = Config::default();
        c.kinds.insert(
            "embed".to_string(),
            KindConfig {
                backoff_base: Some(secs(1)),
                backoff_cap: Some(secs(5)),
                ..KindConfig::default()
            },
        );
        c.validate().unwrap();

        // The secs map supplies the effective base when `kinds` has none.
        let mut c = Config::default();
        c.backoff_base_secs_by_kind.insert("embed".to_string(), 120);
        c.kinds.insert(
            "embed".to_string(),
            KindConfig {
                backoff_cap: Some(secs(60)),
                ..KindConfig::default()
            },
        );
        let msg = invalid_msg(c.validate());
        assert!(msg.contains("(2m)"), "{msg}");
    }

    #[test]
    fn a_per_kind_base_above_the_global_cap_raises_that_kinds_cap_v0_2() {
        let via_kinds = parse("[jobs.kinds.\"clarify:temporal\"]\nbackoff_base = \"2h\"\n");
        let via_map = parse("[jobs.backoff_base_secs_by_kind]\n\"clarify:temporal\" = 7200\n");
        for c in [&via_kinds, &via_map] {
            c.validate().expect("a base above the global cap is valid");
            let b = c.backoff_for("clarify:temporal");
            assert_eq!((b.base, b.cap, b.factor), (2 * HOUR, 2 * HOUR, 4.0));
            assert_eq!(c.backoff_delay("clarify:temporal", 1), 2 * HOUR);
            assert_eq!(c.backoff_delay("clarify:temporal", 5), 2 * HOUR);
            // Other kinds keep the global schedule.
            assert_eq!(c.backoff_for("embed"), Backoff::default());
        }
    }

    #[test]
    fn a_kinds_backoff_base_wins_over_the_secs_map() {
        let c = parse(
            r#"
            [jobs.backoff_base_secs_by_kind]
            "ingest:pdf" = 7200
            [jobs.kinds."ingest:pdf"]
            backoff_base = "30s"
            "#,
        );
        let b = c.backoff_for("ingest:pdf");
        assert_eq!((b.base, b.cap), (secs(30), HOUR));
    }

    #[test]
    fn max_attempts_prefers_the_job_then_the_kind_then_the_global() {
        let c = parse("[jobs]\nmax_attempts = 5\n[jobs.kinds.embed]\nmax_attempts = 3\n");
        assert_eq!(c.max_attempts_for("embed", Some(9)), 9);
        assert_eq!(c.max_attempts_for("embed", None), 3);
        assert_eq!(c.max_attempts_for("ingest:pdf", Some(9)), 9);
        assert_eq!(c.max_attempts_for("ingest:pdf", None), 5);
    }

    #[test]
    fn lease_ttl_prefers_the_kind_then_the_global() {
        let c = parse(FULL);
        assert_eq!(c.lease_ttl_for("ingest:pdf"), secs(900));
        assert_eq!(c.lease_ttl_for("embed"), secs(600));
    }

    #[test]
    fn the_readme_example_file_parses_and_applies_the_v0_2_rule() {
        let c = Config::from_toml_str(
            r#"
            [jobs]
            lease_ttl = "10m"
            max_attempts = 8
            [jobs.backoff]
            base = "5s"
            [jobs.kinds."ingest:pdf"]
            lease_ttl = "30m"
            backoff_base = "2h"
            "#,
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.lease_ttl_for("embed"), Duration::from_secs(600));
        assert_eq!(c.lease_ttl_for("ingest:pdf"), Duration::from_secs(1800));
        let b = c.backoff_for("ingest:pdf");
        assert_eq!(
            (b.base, b.cap),
            (Duration::from_secs(7200), Duration::from_secs(7200))
        );
        assert_eq!(c.backoff_for("embed").base, Duration::from_secs(5));
    }
}
