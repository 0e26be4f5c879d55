//! The runner's arguments and answers: building calls from a step,
//! comparing answers with its `expect`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value as Json};
use telha_jobs::{Config, EnqueueOptions, Error};

use super::R;

/// The case's `config` over the defaults, through the core's key table:
/// `<key>_ms` is a duration key in ms, `false` turns a retention or limit
/// off, numbers are counts or factors; `kinds` holds per-kind keys the
/// same way. The background reaper is always off (cases reap explicitly);
/// retry delays are exact unless the case sets a `backoff_jitter`.
pub(crate) fn config_of(c: Option<&Json>) -> R<Config> {
    let mut cfg = Config {
        reaper_interval: Duration::ZERO,
        backoff_jitter: 0.0,
        ..Config::default()
    };
    let Some(c) = c else { return Ok(cfg) };
    for (k, v) in c.as_object().ok_or("config must be an object")? {
        if k == "kinds" {
            for (kind, o) in v.as_object().ok_or("kinds must be an object")? {
                for (k, v) in o.as_object().ok_or("a kind's config must be an object")? {
                    let (name, value) = key_value(k, v)?;
                    cfg.set_for_kind(kind, name, value)
                        .map_err(|e| e.to_string())?;
                }
            }
            continue;
        }
        let (name, value) = key_value(k, v)?;
        cfg.set(name, value).map_err(|e| e.to_string())?;
    }
    Ok(cfg)
}

/// A case's config entry as a key of the table and its typed value.
fn key_value<'a>(k: &'a str, v: &Json) -> R<(&'a str, telha_jobs::config::Value)> {
    use telha_jobs::config::{keys, KeyType, Value};
    let name = k.strip_suffix("_ms").unwrap_or(k);
    let key = keys::key(name).map_err(|e| format!("config key {k:?}: {e}"))?;
    let value = match (key.ty, v) {
        (KeyType::Duration { .. } | KeyType::Retention, Json::Bool(false)) => Value::Off,
        (KeyType::Duration { .. } | KeyType::Retention, v) if name != k => Value::Duration(ms(v)?),
        (KeyType::Count { .. }, v) => Value::Count(uint(v)?),
        (KeyType::Factor | KeyType::Fraction, v) => {
            Value::Float(v.as_f64().ok_or("a factor or fraction is a number")?)
        }
        (KeyType::Flag, Json::Bool(b)) => Value::Flag(*b),
        _ => return Err(format!("config key {k:?}: a duration key ends in _ms")),
    };
    Ok((name, value))
}

pub(crate) fn uint(v: &Json) -> R<u64> {
    v.as_u64()
        .ok_or_else(|| format!("expected a whole number, got {v}"))
}

pub(crate) fn ms(v: &Json) -> R<Duration> {
    uint(v).map(Duration::from_millis)
}

pub(crate) fn strs(v: Option<&Json>) -> Vec<String> {
    v.and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A step's bytes: `name` as UTF-8 text, or `size_key` bytes of `x`.
pub(crate) fn bytes_arg(s: &Json, name: &str, size_key: &str) -> R<Option<Vec<u8>>> {
    if let Some(v) = s.get(name) {
        return Ok(Some(v.as_str().ok_or("text expected")?.as_bytes().to_vec()));
    }
    s.get(size_key)
        .map(|n| uint(n).map(|n| vec![b'x'; n as usize]))
        .transpose()
}

pub(crate) fn new_job_args(s: &Json) -> Result<(String, Vec<u8>, EnqueueOptions), Error> {
    let kind = s
        .get("kind")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string();
    let payload = bytes_arg(s, "payload", "payload_size")
        .map_err(Error::Storage)?
        .unwrap_or_default();
    let mut o = EnqueueOptions::default();
    if let Some(sc) = s.get("scope").and_then(Json::as_str) {
        o = o.scope(sc.parse()?);
    }
    let num = |k: &str| s.get(k).and_then(Json::as_u64);
    if let Some(p) = num("priority") {
        o = o.priority(p as u8);
    }
    if let Some(d) = num("delay_ms") {
        o = o.delay(Duration::from_millis(d));
    }
    if let Some(at) = num("run_at_ms") {
        o = o.run_at(at);
    }
    if let Some(d) = num("run_at_in_ms") {
        o = o.run_at(now_ms() + d);
    }
    if let Some(d) = num("run_at_ago_ms") {
        o = o.run_at(now_ms().saturating_sub(d));
    }
    if let Some(k) = s.get("idempotency_key").and_then(Json::as_str) {
        o = o.idempotency_key(k);
    }
    if let Some(n) = num("max_attempts") {
        o = o.max_attempts(n as u32);
    }
    if let Some(d) = num("expires_in_ms") {
        o = o.expires_in(Duration::from_millis(d));
    }
    if let Some(at) = num("expires_at_ms") {
        o = o.expires_at(at);
    }
    if let Some(d) = num("backoff_base_ms") {
        o = o.backoff_base(Duration::from_millis(d));
    }
    if let Some(d) = num("unique_for_ms") {
        o = o.unique_for(Duration::from_millis(d));
    }
    if let Some(v) = s.get("unique_states").and_then(Json::as_str) {
        o = o.unique_states(v.parse()?);
    }
    for t in s.get("tags").and_then(Json::as_array).into_iter().flatten() {
        o = o.tag(t.as_str().unwrap_or_default());
    }
    for (k, v) in s
        .get("metadata")
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
    {
        o = o.meta(k, v.as_str().unwrap_or_default());
    }
    if let Some(n) = num("metadata_size") {
        o = o.meta("big", "x".repeat(n as usize));
    }
    if let Some(k) = s.get("key").and_then(Json::as_str) {
        o = o.key(k);
    }
    if let Some(d) = num("debounce_ms") {
        o = o.debounce(Duration::from_millis(d));
    }
    if let Some(d) = num("debounce_max_ms") {
        o = o.debounce_max(Duration::from_millis(d));
    }
    Ok((kind, payload, o))
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `payload` / `result` as text (they are ASCII in the cases) and their size.
pub(crate) fn put_bytes(o: &mut Json, name: &str, b: Option<&[u8]>) {
    o[name] = b.map_or(Json::Null, |b| json!(String::from_utf8_lossy(b)));
    o[format!("{name}_size")] = b.map_or(Json::Null, |b| json!(b.len()));
}

/// Compare a step's answer with its `expect`: `{"error": CODE}` wants that
/// error kind; `{"none": true}` wants no job; any other object must be a
/// subset of the answer. No `expect` wants success.
pub(crate) fn check(expect: Option<&Json>, observed: Result<Json, Error>) -> R<()> {
    let want_err = expect.and_then(|e| e.get("error")).and_then(Json::as_str);
    match (want_err, observed) {
        (Some(code), Err(e)) if e.kind().code() == code => Ok(()),
        (Some(code), Err(e)) => Err(format!("wanted {code}, got {}: {e}", e.kind().code())),
        (Some(code), Ok(v)) => Err(format!("wanted {code}, got success: {v}")),
        (None, Err(e)) => Err(format!("unexpected {}: {e}", e.kind().code())),
        (None, Ok(v)) => match expect {
            None => Ok(()),
            Some(e) if e.get("none") == Some(&Json::Bool(true)) => match v {
                Json::Null => Ok(()),
                other => Err(format!("wanted none, got {other}")),
            },
            Some(e) => subset(e, &v, ""),
        },
    }
}

fn subset(want: &Json, got: &Json, at: &str) -> R<()> {
    match (want, got) {
        (Json::Object(w), Json::Object(g)) => w.iter().try_for_each(|(k, wv)| {
            let path = format!("{at}.{k}");
            match g.get(k) {
                Some(gv) => subset(wv, gv, &path),
                None if at == ".by_kind" || at == ".by_scope" => subset(wv, &zero_counts(), &path),
                None => Err(format!("{path}: the runner has no such field")),
            }
        }),
        (Json::Object(_), other) => Err(format!("{at}: wanted an object, got {other}")),
        (Json::Array(w), Json::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .try_for_each(|(i, (wv, gv))| subset(wv, gv, &format!("{at}[{i}]"))),
        (Json::Array(w), Json::Array(g)) => Err(format!(
            "{at}: wanted {} items, got {}: {}",
            w.len(),
            g.len(),
            Json::Array(g.clone())
        )),
        (w, g) if w == g => Ok(()),
        // A number is its value: 4 and 4.0 are equal (JSON has one number type).
        (Json::Number(w), Json::Number(g)) if w.as_f64() == g.as_f64() => Ok(()),
        (w, g) => Err(format!("{at}: wanted {w}, got {g}")),
    }
}

fn zero_counts() -> Json {
    let m: BTreeMap<&str, u64> = [
        "pending",
        "leased",
        "failed",
        "completed",
        "dead",
        "cancelled",
    ]
    .into_iter()
    .map(|s| (s, 0))
    .collect();
    json!(m)
}
