//! The TOML file: `[jobs]` holds the table's keys at their `toml` paths,
//! `[jobs.kinds."<kind>"]` the per-kind keys by name, and
//! `[jobs.backoff_base_secs_by_kind]` the internal per-kind base map.

use std::time::Duration;

use toml::{Table, Value as Toml};

use super::keys::{self, KeyType, Value, KEYS};
use super::text::{self, DURATION_HINT, RETENTION_HINT};
use super::Config;
use crate::error::{Error, Result};

/// The tables and keys `[jobs]` may hold besides the table's own.
const JOBS_TABLES: &[&str] = &["backoff", "kinds", "backoff_base_secs_by_kind"];

pub(super) fn overlay_root(c: &mut Config, root: &Table) -> Result<()> {
    for (k, v) in root {
        match k.as_str() {
            "jobs" => overlay_jobs(c, file_table("jobs", v)?)?,
            // `telha serve --cluster` reads this table (cli/src/cluster_args.rs);
            // the engine has nothing in it.
            "cluster" => {
                file_table("cluster", v)?;
            }
            _ => return Err(unknown_key(&key_segment(k), &["jobs", "cluster"])),
        }
    }
    Ok(())
}

fn jobs_keys() -> Vec<&'static str> {
    let mut names: Vec<&str> = KEYS
        .iter()
        .filter(|k| !k.toml.contains('.'))
        .map(|k| k.toml)
        .collect();
    names.extend_from_slice(JOBS_TABLES);
    names
}

fn overlay_jobs(c: &mut Config, jobs: &Table) -> Result<()> {
    for (k, v) in jobs {
        let key = format!("jobs.{}", key_segment(k));
        match k.as_str() {
            "backoff" => {
                for (bk, bv) in file_table(&key, v)? {
                    let bkey = format!("{key}.{}", key_segment(bk));
                    let path = format!("backoff.{bk}");
                    let Some(spec) = KEYS.iter().find(|s| s.toml == path) else {
                        let subs: Vec<&str> = KEYS
                            .iter()
                            .filter_map(|s| s.toml.strip_prefix("backoff."))
                            .collect();
                        return Err(unknown_key(&bkey, &subs));
                    };
                    c.assign(spec.name, file_value(spec.ty, &bkey, bv)?)?;
                }
            }
            "backoff_base_secs_by_kind" => {
                for (kind, secs) in file_table(&key, v)? {
                    let skey = format!("{key}.{}", key_segment(kind));
                    let secs = file_int(&skey, secs, "u64")?;
                    c.backoff_base_secs_by_kind.insert(kind.clone(), secs);
                }
            }
            "kinds" => {
                for (kind, kv) in file_table(&key, v)? {
                    let kkey = format!("{key}.{}", key_segment(kind));
                    for (name, value) in file_table(&kkey, kv)? {
                        let vkey = format!("{kkey}.{}", key_segment(name));
                        let spec = KEYS.iter().find(|s| s.per_kind && s.name == name);
                        let Some(spec) = spec else {
                            return Err(unknown_key(&vkey, &keys::per_kind_names()));
                        };
                        let v = file_value(spec.ty, &vkey, value)?;
                        c.kinds
                            .entry(kind.clone())
                            .or_default()
                            .assign(spec.name, v)?;
                    }
                    c.kinds.entry(kind.clone()).or_default();
                }
            }
            _ => match KEYS.iter().find(|s| s.toml == k) {
                Some(spec) => c.assign(spec.name, file_value(spec.ty, &key, v)?)?,
                None => return Err(unknown_key(&key, &jobs_keys())),
            },
        }
    }
    Ok(())
}

/// A file value of type `ty` (ranges are checked later, by `validate`).
fn file_value(ty: KeyType, key: &str, v: &Toml) -> Result<Value> {
    Ok(match ty {
        KeyType::Duration { .. } => Value::Duration(file_duration(key, v)?),
        KeyType::Retention => {
            let r = match v {
                Toml::Boolean(false) => Some(None),
                Toml::String(s) => text::retention(s),
                _ => duration_value(v).map(Some),
            };
            r.ok_or_else(|| bad_file(key, RETENTION_HINT, v))?
                .map_or(Value::Off, Value::Duration)
        }
        KeyType::Count { max, .. } => {
            let t = if max <= u32::MAX as u64 {
                "u32"
            } else {
                "usize"
            };
            Value::Count(file_int(key, v, t)?)
        }
        KeyType::Factor | KeyType::Fraction => Value::Float(match v {
            Toml::Float(f) => *f,
            Toml::Integer(i) => *i as f64,
            _ => return Err(bad_file(key, "a number", v)),
        }),
        KeyType::Flag => Value::Flag(
            v.as_bool()
                .ok_or_else(|| bad_file(key, "true or false", v))?,
        ),
    })
}

/// A key as TOML would write it: bare when it can be, quoted otherwise
/// (kinds such as `ingest:pdf` always need quotes).
pub(super) fn key_segment(k: &str) -> String {
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
fn describe(v: &Toml) -> String {
    match v {
        Toml::Table(_) | Toml::Array(_) => format!("a {}", v.type_str()),
        _ => format!("{} {v}", v.type_str()),
    }
}

fn bad_file(key: &str, expected: &str, v: &Toml) -> Error {
    Error::invalid(format!("{key} must be {expected}, got {}", describe(v)))
}

fn file_table<'a>(key: &str, v: &'a Toml) -> Result<&'a Table> {
    v.as_table().ok_or_else(|| bad_file(key, "a table", v))
}

fn duration_value(v: &Toml) -> Option<Duration> {
    match v {
        Toml::String(s) => text::duration(s),
        Toml::Integer(i) => u64::try_from(*i).ok().map(Duration::from_secs),
        Toml::Float(f) => Duration::try_from_secs_f64(*f).ok(),
        _ => None,
    }
}

fn file_duration(key: &str, v: &Toml) -> Result<Duration> {
    duration_value(v).ok_or_else(|| bad_file(key, DURATION_HINT, v))
}

/// A non-negative integer; `fits` names the Rust type for the message, and
/// u32 values are held to u32 here (the file has no bigger per-attempt or
/// per-batch counts).
fn file_int(key: &str, v: &Toml, fits: &str) -> Result<u64> {
    let n = v.as_integer().and_then(|i| u64::try_from(i).ok());
    let n = match fits {
        "u32" => n.filter(|n| *n <= u32::MAX as u64),
        _ => n,
    };
    n.ok_or_else(|| {
        bad_file(
            key,
            &format!("a non-negative integer that fits in {fits}"),
            v,
        )
    })
}
