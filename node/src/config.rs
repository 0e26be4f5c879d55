//! `Queue.open` options -> the core's `Config`, through the core's key table
//! (`telha_jobs::config::keys::KEYS`) and nothing else: a key added to the
//! table is an option here without a change to this file.
//!
//! Each key's option is its name in camelCase, with `Ms` after a duration
//! (`lease_ttl` -> `leaseTtlMs`, `max_payload_bytes` -> `maxPayloadBytes`):
//! durations are numbers of milliseconds (a retention also takes `false`
//! or `null`: keep forever), counts and factors numbers, flags booleans.
//! `kinds: { [kind]: {...} }` takes the per-kind keys under the same names.
//! The nested `backoff: { baseMs, factor, capMs }` (global and per kind) is
//! the deprecated spelling of the keys whose TOML path is `backoff.*`; it
//! stays one release.
//!
//! Layering: defaults, then the TOML file (`configFile`, else
//! `$TELHA_JOBS_CONFIG`), then `TELHA_JOBS_*` environment variables (the
//! core's `Config::load`), then the options given in code, then `validate`.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use napi_derive::napi;
use telha_jobs::config::keys::{Key, KeyType, Value, KEYS};
use telha_jobs::payload::Value as PValue;
use telha_jobs::Config;

use crate::args::{setting_ms, whole, Arg};
use crate::errors::Failure;
use crate::payload;

/// Options of `Queue.open` that are not keys of the table.
const CONFIG_FILE: &str = "configFile";
const KINDS: &str = "kinds";

/// `lease_ttl` -> `leaseTtl`.
fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn is_duration(k: &Key) -> bool {
    matches!(k.ty, KeyType::Duration { .. } | KeyType::Retention)
}

/// The option name of a key: camelCase, `Ms` after a duration.
pub fn js_name(k: &Key) -> String {
    let mut s = camel(k.name);
    if is_duration(k) {
        s.push_str("Ms");
    }
    s
}

/// The key whose option is `name`.
fn by_js_name(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| js_name(k) == name)
}

/// The groups of the deprecated nested spelling (`backoff`), from the
/// keys' TOML paths.
fn groups() -> BTreeSet<&'static str> {
    KEYS.iter()
        .filter_map(|k| k.toml.split_once('.').map(|(g, _)| g))
        .collect()
}

/// The key spelled `group.leaf` in the nested form (`backoff.baseMs`).
fn by_nested_name(group: &str, leaf: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| {
        k.toml.split_once('.').is_some_and(|(g, l)| {
            g == group && {
                let mut s = camel(l);
                if is_duration(k) {
                    s.push_str("Ms");
                }
                s == leaf
            }
        })
    })
}

fn names(per_kind: bool) -> String {
    KEYS.iter()
        .filter(|k| !per_kind || k.per_kind)
        .map(js_name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn unknown(at: &str, name: &str, per_kind: bool) -> Failure {
    let rest = if per_kind {
        String::new()
    } else {
        format!(", {CONFIG_FILE}, {KINDS}")
    };
    Failure::Invalid(format!(
        "{at}: unknown option {name:?}; the options are {}{rest}",
        names(per_kind)
    ))
}

/// The typed value of option `what` for key `k`, checked against the key's
/// type and range; `None` when unset (`undefined`, or `null` for a key that
/// is not a retention).
fn value(k: &Key, v: Arg, what: &str) -> Result<Option<Value>, Failure> {
    let range = |v: Value| k.check(what, v).map(Some).map_err(Failure::range);
    match k.ty {
        KeyType::Retention if v.ty() == napi::ValueType::Null => range(Value::Off),
        _ if v.is_nullish() => Ok(None),
        KeyType::Duration { .. } => range(Value::Duration(setting_ms(v.number(what)?, what)?)),
        KeyType::Retention => match v.ty() {
            napi::ValueType::Boolean if !v.boolean(what)? => range(Value::Off),
            napi::ValueType::Number => range(Value::Duration(setting_ms(v.number(what)?, what)?)),
            _ => Err(v.wrong(what, "a number of milliseconds, or false to keep forever")),
        },
        KeyType::Count { min, max } => range(Value::Count(whole(v.number(what)?, what, min, max)?)),
        KeyType::Factor | KeyType::Fraction => range(Value::Float(v.number(what)?)),
        KeyType::Flag => range(Value::Flag(v.boolean(what)?)),
        _ => Err(Failure::Invalid(format!(
            "{what}: this build of the Node binding cannot read a setting of type {:?}",
            k.ty
        ))),
    }
}

/// Where one open's settings go: globally, or for one kind.
struct Target<'a> {
    c: &'a mut Config,
    kind: Option<&'a str>,
    at: String,
    /// Keys already given, so `backoffBaseMs` and `backoff.baseMs` together
    /// are refused rather than one silently winning.
    given: BTreeSet<&'static str>,
}

impl Target<'_> {
    fn set(&mut self, k: &'static Key, v: Arg, what: &str) -> Result<(), Failure> {
        if self.kind.is_some() && !k.per_kind {
            return Err(Failure::Invalid(format!(
                "{}: {} is not a per-kind option; the per-kind ones are {}",
                self.at,
                js_name(k),
                names(true)
            )));
        }
        if !self.given.insert(k.name) {
            return Err(Failure::Invalid(format!(
                "{}: {} is given twice (also in the nested form); give it once",
                self.at,
                js_name(k)
            )));
        }
        let Some(v) = value(k, v, what)? else {
            return Ok(());
        };
        match self.kind {
            Some(kind) => self.c.set_for_kind(kind, k.name, v)?,
            None => self.c.set(k.name, v)?,
        }
        Ok(())
    }

    /// One option of the object at `self.at`.
    fn option(&mut self, name: &str, v: Arg) -> Result<(), Failure> {
        let what = if self.kind.is_some() {
            format!("{}.{name}", self.at)
        } else {
            name.to_string()
        };
        if let Some(k) = by_js_name(name) {
            return self.set(k, v, &what);
        }
        if groups().contains(name) {
            if v.is_nullish() {
                return Ok(());
            }
            for (leaf, lv) in v.entries(&what)? {
                let k = by_nested_name(name, &leaf)
                    .filter(|k| self.kind.is_none() || k.per_kind)
                    .ok_or_else(|| unknown(&what, &leaf, self.kind.is_some()))?;
                self.set(k, lv, &format!("{what}.{leaf}"))?;
            }
            return Ok(());
        }
        Err(unknown(&self.at, name, self.kind.is_some()))
    }
}

/// The config `Queue.open` uses for `options` (an object, or nullish);
/// every bad option is `InvalidArgument` naming it.
pub fn build(options: Option<Arg>) -> Result<Config, Failure> {
    let at = "Queue.open options";
    let entries = match options {
        Some(o) if !o.is_nullish() => o.entries(at)?,
        _ => Vec::new(),
    };
    let file = match entries.iter().find(|(n, _)| n == CONFIG_FILE) {
        Some((_, v)) if !v.is_nullish() => Some(v.string(CONFIG_FILE)?),
        _ => None,
    };
    let mut c = Config::load(file.as_deref().map(Path::new))?;
    let mut top = Target {
        c: &mut c,
        kind: None,
        at: at.into(),
        given: BTreeSet::new(),
    };
    let mut kinds = None;
    for (name, v) in entries {
        match name.as_str() {
            CONFIG_FILE => {}
            KINDS => kinds = Some(v),
            _ => top.option(&name, v)?,
        }
    }
    if let Some(kinds) = kinds.filter(|k| !k.is_nullish()) {
        for (kind, opts) in kinds.entries(KINDS)? {
            let at = format!("{KINDS}[{kind:?}]");
            let mut t = Target {
                c: &mut c,
                kind: Some(&kind),
                given: BTreeSet::new(),
                at: at.clone(),
            };
            for (name, v) in opts.entries(&at)? {
                t.option(&name, v)?;
            }
        }
    }
    c.validate()?;
    Ok(c)
}

/// A setting's value as JS sees it: milliseconds, `false` for off,
/// numbers, booleans.
fn js_value(v: Value) -> PValue {
    match v {
        Value::Duration(d) => PValue::F64(ms(d)),
        Value::Off => PValue::Boolean(false),
        Value::Count(n) => PValue::from(n),
        Value::Float(f) => PValue::F64(f),
        Value::Flag(b) => PValue::Boolean(b),
    }
}

/// Milliseconds, exact for whole milliseconds (no float rounding on the way).
fn ms(d: Duration) -> f64 {
    d.as_millis() as f64 + f64::from(d.subsec_nanos() % 1_000_000) / 1e6
}

/// The effective settings of `c`, named as `Queue.open` takes them:
/// every key of the table, and `kinds` with what each kind sets.
pub fn settings(c: &Config) -> Result<payload::Plain, Failure> {
    let mut out = Vec::with_capacity(KEYS.len() + 1);
    for k in KEYS {
        out.push((PValue::from(js_name(k)), js_value(c.get(k.name)?)));
    }
    let kinds = c
        .kinds
        .iter()
        .map(|(kind, kc)| {
            let set = KEYS
                .iter()
                .filter(|k| k.per_kind)
                .filter_map(|k| {
                    kc.get(k.name)
                        .map(|v| (PValue::from(js_name(k)), js_value(v)))
                })
                .collect();
            (PValue::from(kind.as_str()), PValue::Map(set))
        })
        .collect();
    out.push((PValue::from(KINDS), PValue::Map(kinds)));
    Ok(payload::Plain(PValue::Map(out)))
}

/// One key of the core's table, as `configKeys()` lists it.
#[napi(object, object_from_js = false)]
pub struct ConfigKey {
    /// The `Queue.open` option (`leaseTtlMs`).
    pub name: String,
    /// The table's name (`lease_ttl`): the Python keyword, the C key, the
    /// per-kind key in the TOML file.
    pub key: String,
    /// Where it lives in the TOML file, under `[jobs]` (`backoff.base`).
    pub toml: String,
    /// The environment variable that overrides it.
    pub env: Option<String>,
    /// What it holds: milliseconds (`duration`; `retention` also takes
    /// `false`), a whole number (`count`), a number ≥ 1 (`factor`) or a
    /// boolean (`flag`).
    #[napi(
        js_name = "type",
        ts_type = "'duration' | 'retention' | 'count' | 'factor' | 'fraction' | 'flag'"
    )]
    pub ty: String,
    /// The unit, for docs (`duration`, `attempts`, `bytes`, …).
    pub unit: String,
    /// The default, in the file's syntax (`300s`).
    pub default: String,
    /// The default as `Queue.open` takes it (`300000`).
    #[napi(ts_type = "number | boolean")]
    pub default_value: payload::Plain,
    /// Settable per kind (`kinds: { [kind]: { … } }`).
    pub per_kind: bool,
    /// What it does.
    pub doc: String,
}

/// The table, in its order.
pub fn config_keys() -> Result<Vec<ConfigKey>, Failure> {
    let defaults = Config::default();
    KEYS.iter()
        .map(|k| {
            let ty = match k.ty {
                KeyType::Duration { .. } => "duration",
                KeyType::Retention => "retention",
                KeyType::Count { .. } => "count",
                KeyType::Factor => "factor",
                KeyType::Fraction => "fraction",
                KeyType::Flag => "flag",
                _ => "unknown",
            };
            Ok(ConfigKey {
                name: js_name(k),
                key: k.name.into(),
                toml: k.toml.into(),
                env: k.env.map(Into::into),
                ty: ty.into(),
                unit: k.unit.into(),
                default: k.default.into(),
                default_value: payload::Plain(js_value(defaults.get(k.name)?)),
                per_kind: k.per_kind,
                doc: k.doc.into(),
            })
        })
        .collect()
}
