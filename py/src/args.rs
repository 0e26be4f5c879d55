//! Python arguments → owned core values, with `TypeError` for a wrong type
//! and `InvalidArgumentError` (a `ValueError`) for a wrong value.
//!
//! Every duration and instant is range-checked here, before any arithmetic:
//! NaN, infinities, negatives and values too large for the core are a typed
//! error naming the argument (or, for a lease wait, the documented "wait
//! until a job comes"), never a wrapped or truncated number.
//!
//! Enqueue options and `enqueue_many` items (as node/src/args.rs): one rule
//! for option names, shared with Node's options objects and with
//! `Queue(...)` settings: an unknown name is `InvalidArgumentError` listing
//! the valid ones; a wrong type is `TypeError`.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDateTime, PyDelta, PyDict, PyInt, PyList, PyString, PyTuple};
use telha_jobs::limits::{self, MAX_DURATION, MAX_INSTANT_MS};
use telha_jobs::{
    Completion, EnqueueOptions, JobId, KindPattern, LeaseToken, NewJob, Scope, State,
};

use crate::errors::{invalid, type_error};
use crate::job::Job;
use crate::payload::{self, type_name};
use crate::task;

/// Seconds from an int, a float or a `datetime.timedelta`. An int too large
/// for a float is an infinity of its sign: larger than every limit.
fn seconds(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<PyDelta>() {
        return obj.call_method0("total_seconds")?.extract::<f64>();
    }
    number(obj, what, "a number of seconds")
}

fn number(obj: &Bound<'_, PyAny>, what: &str, expected: &str) -> PyResult<f64> {
    let wrong = || type_error(format!("{what} must be {expected}, got {}", type_name(obj)));
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyString>() {
        return Err(wrong());
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(obj.extract::<f64>().unwrap_or_else(|_| {
            let negative = obj.lt(0i32).unwrap_or(false);
            if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }));
    }
    obj.extract::<f64>().map_err(|_| wrong())
}

fn not_a_duration(py: Python<'_>, what: &str, s: f64) -> PyErr {
    invalid(
        py,
        format!("{what} must be a finite number of seconds >= 0, got {s:?}"),
    )
}

/// A duration the core keeps (a setting, a timeout): seconds or a
/// `timedelta`, finite, >= 0 and at most `limits.MAX_DURATION` (100 years).
pub fn duration(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    let py = obj.py();
    let s = seconds(obj, what)?;
    if !(s.is_finite() && s >= 0.0) {
        return Err(not_a_duration(py, what, s));
    }
    match Duration::try_from_secs_f64(s) {
        Ok(d) => task::pure(py, || limits::check_duration(what, d)),
        // Too large for a Duration: over the limit by far.
        Err(_) => Err(invalid(
            py,
            format!(
                "{what} must be at most {} seconds (limits.MAX_DURATION), got {s:?}",
                MAX_DURATION.as_secs()
            ),
        )),
    }
}

/// An enqueue `delay` (and a snooze's delay, a `retry_in`, an
/// `expires_in`; `what` names it): finite and >= 0. The core refuses a
/// delay whose sum with now passes the latest supported time
/// (`InvalidArgumentError` naming it); one too large even for a `Duration`
/// (over 2^64 seconds) is refused here by the same rule, with the seconds
/// as given.
pub fn delay(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    let py = obj.py();
    let s = seconds(obj, what)?;
    if !(s.is_finite() && s >= 0.0) {
        return Err(not_a_duration(py, what, s));
    }
    Duration::try_from_secs_f64(s).map_err(|_| {
        invalid(
            py,
            format!(
                "{what} of {s:?} seconds puts the time after 9999-12-31T23:59:59.999Z \
                 (limits.MAX_INSTANT)"
            ),
        )
    })
}

/// A lease wait: >= 0 (NaN and negatives are invalid). `math.inf`, and any
/// wait over `limits.MAX_DURATION`, is `None`: wait until a job comes, the
/// wait is cancelled or the queue closes.
pub fn wait(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<Duration>> {
    let s = seconds(obj, what)?;
    if s.is_nan() || s < 0.0 {
        return Err(invalid(
            obj.py(),
            format!(
                "{what} must be a number of seconds >= 0 (math.inf: until a job comes), got {s:?}"
            ),
        ));
    }
    if s > MAX_DURATION.as_secs_f64() {
        return Ok(None);
    }
    Ok(Duration::try_from_secs_f64(s).ok())
}

/// A point in time: seconds since the epoch (int or float) or a
/// `datetime.datetime` (a naive one is read as local time, like
/// `datetime.timestamp()`), from 0 to `limits.MAX_INSTANT`
/// (9999-12-31T23:59:59.999Z). Returns ms since the epoch.
pub fn instant_ms(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    let py = obj.py();
    let s = if obj.is_instance_of::<PyDateTime>() {
        obj.call_method0("timestamp")
            .and_then(|t| t.extract::<f64>())
            .map_err(|e| invalid(py, format!("{what}: {obj} has no timestamp: {e}")))?
    } else {
        number(obj, what, "seconds since the epoch or a datetime")?
    };
    // Rounded to the core's milliseconds, but checked as given: -0.0001
    // is before the epoch, not 0.
    let ms = (s * 1000.0).round();
    if !(s >= 0.0 && ms <= MAX_INSTANT_MS as f64) {
        return Err(invalid(
            py,
            format!(
                "{what} must be seconds since the epoch from 0 to {} \
                 (9999-12-31T23:59:59.999Z), got {s:?}",
                MAX_INSTANT_MS as f64 / 1000.0
            ),
        ));
    }
    Ok(ms as u64)
}

/// An integer in `lo..=hi` (a bool is refused, an int of any size is
/// checked against the range, never wrapped).
pub fn int_in(obj: &Bound<'_, PyAny>, what: &str, lo: u64, hi: u64) -> PyResult<u64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(type_error(format!(
            "{what} must be an int, got {}",
            type_name(obj)
        )));
    }
    match obj.extract::<u64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(invalid(
            obj.py(),
            format!("{what} must be {lo} to {hi}, got {obj}"),
        )),
    }
}

/// A non-negative int of any size, saturated at `u64::MAX` (the caller's
/// range check then refuses it by its own rule); negative is invalid.
pub fn count(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(type_error(format!(
            "{what} must be an int, got {}",
            type_name(obj)
        )));
    }
    if obj.lt(0i32)? {
        return Err(invalid(obj.py(), format!("{what} must be >= 0, got {obj}")));
    }
    Ok(obj.extract::<u64>().unwrap_or(u64::MAX))
}

/// A float (or an int); NaN and infinities pass to the caller's check.
pub fn float(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    number(obj, what, "a number")
}

/// True or False (not an int).
pub fn flag(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<bool> {
    obj.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
        type_error(format!(
            "{what} must be True or False, got {}",
            type_name(obj)
        ))
    })
}

/// A `str` argument (no other type).
pub fn text(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let s = obj
        .cast::<PyString>()
        .map_err(|_| type_error(format!("{what} must be a str, got {}", type_name(obj))))?;
    Ok(s.to_cow()?.into_owned())
}

/// `s` parsed by the core's own rules (ids, scopes, kinds, states, tokens).
pub fn parse<T>(py: Python<'_>, s: &str) -> PyResult<T>
where
    T: std::str::FromStr<Err = telha_jobs::Error>,
{
    task::pure(py, || s.parse())
}

/// `str(uuid)` for a `uuid.UUID`, the string itself for a `str`.
fn uuid_text(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if is_uuid(obj) {
        return Ok(obj.str()?.to_cow()?.into_owned());
    }
    Err(type_error(format!(
        "{what} must be a UUID string or uuid.UUID, got {}",
        type_name(obj)
    )))
}

pub fn is_uuid(obj: &Bound<'_, PyAny>) -> bool {
    type_name(obj) == "UUID" && obj.hasattr("hex").unwrap_or(false)
}

pub fn scope(obj: &Bound<'_, PyAny>) -> PyResult<Scope> {
    parse(obj.py(), &uuid_text(obj, "scope")?)
}

pub fn job_id(obj: &Bound<'_, PyAny>) -> PyResult<JobId> {
    parse(obj.py(), &uuid_text(obj, "job_id")?)
}

/// The job a `wait` names: a `Job`, a `JobInfo`, or an id (str / UUID).
pub fn job_ref(obj: &Bound<'_, PyAny>) -> PyResult<JobId> {
    if let Ok(j) = obj.cast::<Job>() {
        return Ok(j.get().inner.id);
    }
    if let Ok(i) = obj.cast::<crate::job::JobInfo>() {
        return Ok(i.get().inner.id);
    }
    job_id(obj)
}

/// A `wait`'s timeout: None (or `math.inf`, or anything over
/// `limits.MAX_DURATION`) waits without a limit; else seconds >= 0.
pub fn timeout(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Duration>> {
    match obj.filter(|t| !t.is_none()) {
        Some(t) => wait(t, "timeout"),
        None => Ok(None),
    }
}

pub fn state(obj: &Bound<'_, PyAny>) -> PyResult<State> {
    let s = obj
        .cast::<PyString>()
        .map_err(|_| type_error(format!("state must be a str, got {}", type_name(obj))))?;
    parse(obj.py(), &s.to_cow()?)
}

/// One string or a list / tuple of them.
fn one_or_many<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyString>() || is_uuid(obj) {
        return Ok(vec![obj.clone()]);
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return obj.try_iter()?.collect();
    }
    Err(type_error(format!(
        "{what} must be a str or a list of str, got {}",
        type_name(obj)
    )))
}

/// `kinds=`: `"embed"`, `"ingest:*"` or a list of them.
pub fn kinds(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<KindPattern>> {
    let Some(obj) = obj else { return Ok(vec![]) };
    one_or_many(obj, "kinds")?
        .iter()
        .map(|k| {
            let s = k
                .cast::<PyString>()
                .map_err(|_| type_error(format!("kinds must hold str, got {}", type_name(k))))?;
            parse::<KindPattern>(obj.py(), &s.to_cow()?)
        })
        .collect()
}

/// `scope=` of a lease: one scope or a list of them.
pub fn scopes(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Scope>> {
    let Some(obj) = obj else { return Ok(vec![]) };
    one_or_many(obj, "scope")?.iter().map(scope).collect()
}

/// The lease token of a `Job`, or parsed from its `"<id>:<generation>"` text.
pub fn token(obj: &Bound<'_, PyAny>) -> PyResult<LeaseToken> {
    if let Ok(j) = obj.cast::<Job>() {
        return Ok(j.get().inner.token());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return parse(obj.py(), &s.to_cow()?);
    }
    Err(type_error(format!(
        "expected a Job from lease_next / lease_many (or its token string), got {}",
        type_name(obj)
    )))
}

/// A list of jobs (or token strings), refusing one job or one string
/// (`what`: the method, for the message).
pub fn tokens(jobs: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<LeaseToken>> {
    if jobs.cast::<Job>().is_ok() || jobs.is_instance_of::<PyString>() {
        return Err(type_error(format!(
            "{what} takes a list of jobs; wrap one job as [job]"
        )));
    }
    jobs.try_iter()
        .map_err(|_| {
            type_error(format!(
                "{what} takes a list of jobs, got {}",
                type_name(jobs)
            ))
        })?
        .map(|j| token(&j?))
        .collect()
}

/// The keywords of `enqueue` (and keys of an `enqueue_many` dict item).
pub const ENQUEUE_OPTIONS: [&str; 18] = [
    "scope",
    "priority",
    "delay",
    "run_at",
    "idempotency_key",
    "max_attempts",
    "expires_in",
    "expires_at",
    "backoff_base",
    "unique_for",
    "unique_states",
    "tags",
    "metadata",
    "debounce",
    "debounce_max",
    "after",
    "on_child_dead",
    "key",
];

/// `options` (a dict of enqueue options; None values are "not given"),
/// checked by name; `at` prefixes messages (`"enqueue_many item 3: "`).
/// `extra` names keys the caller handles itself (an item's kind, payload).
pub fn enqueue_options(
    options: Option<&Bound<'_, PyDict>>,
    at: &str,
    extra: &[&str],
) -> PyResult<EnqueueOptions> {
    let mut o = EnqueueOptions::default();
    let Some(d) = options else { return Ok(o) };
    for (k, v) in d.iter() {
        let name = k
            .cast::<PyString>()
            .map_err(|_| {
                type_error(format!(
                    "{at}option names must be str, got {}",
                    type_name(&k)
                ))
            })?
            .to_string();
        if extra.contains(&name.as_str()) || v.is_none() {
            continue;
        }
        let v = &v;
        match name.as_str() {
            "scope" => o.scope = Some(scope(v)?),
            "priority" => o.priority = Some(int_in(v, "priority", 0, u8::MAX.into())? as u8),
            "delay" => o.delay = Some(delay(v, "delay")?),
            "expires_in" => o.expires_in = Some(delay(v, "expires_in")?),
            "backoff_base" => o.backoff_base = Some(delay(v, "backoff_base")?),
            "unique_for" => o.unique_for = Some(delay(v, "unique_for")?),
            "debounce" => o.debounce = Some(delay(v, "debounce")?),
            "debounce_max" => o.debounce_max = Some(delay(v, "debounce_max")?),
            "unique_states" => {
                let s = v.cast::<PyString>().map_err(|_| {
                    type_error(format!(
                        "unique_states must be \"any\" or \"active\", got {}",
                        type_name(v)
                    ))
                })?;
                o.unique_states = Some(
                    s.to_cow()?
                        .parse()
                        .map_err(|e: telha_jobs::Error| invalid(v.py(), e.to_string()))?,
                );
            }
            "expires_at" => o.expires_at = Some(instant_ms(v, "expires_at")?),
            "tags" => o.tags = tags(v)?,
            "after" => o.after = crate::fanin::after(v)?,
            "on_child_dead" => o.on_child_dead = Some(crate::fanin::policy(v)?),
            "metadata" => o.metadata = metadata(v)?,
            "run_at" => o.run_at = Some(instant_ms(v, "run_at")?),
            "idempotency_key" => {
                let k = v.cast::<PyString>().map_err(|_| {
                    type_error(format!(
                        "idempotency_key must be a str, got {}",
                        type_name(v)
                    ))
                })?;
                o.idempotency_key = Some(k.to_cow()?.into_owned());
            }
            "key" => {
                let k = v
                    .cast::<PyString>()
                    .map_err(|_| type_error(format!("key must be a str, got {}", type_name(v))))?;
                o.key = Some(k.to_cow()?.into_owned());
            }
            "max_attempts" => {
                o.max_attempts = Some(int_in(v, "max_attempts", 1, u32::MAX.into())? as u32)
            }
            _ => {
                let mut names: Vec<&str> = extra.to_vec();
                names.extend(ENQUEUE_OPTIONS);
                return Err(invalid(
                    d.py(),
                    format!("{at}unknown option {name:?}; one of {}", names.join(", ")),
                ));
            }
        }
    }
    Ok(o)
}

/// A job to enqueue: its payload converted (its encoding recorded), the
/// active trace context added to its metadata (`otel.rs`).
pub fn new_job(
    kind: String,
    payload: Option<&Bound<'_, PyAny>>,
    mut options: EnqueueOptions,
    py: Python<'_>,
) -> PyResult<NewJob> {
    let none = py.None().into_bound(py);
    let (bytes, encoding) = payload::to_bytes(payload.unwrap_or(&none), "payload")?;
    options.encoding = encoding;
    crate::otel::inject(py, &mut options.metadata)?;
    Ok(NewJob::new(kind, bytes).with(options))
}

/// One `enqueue_many` item: `(kind, payload)` or a dict with `kind`,
/// `payload` and the enqueue options.
/// `name` names it in messages (`"enqueue_many item 3"`, `"then item 0"`).
pub fn item_at(item: &Bound<'_, PyAny>, name: &str) -> PyResult<NewJob> {
    let py = item.py();
    let at = format!("{name}: ");
    let kind_of = |k: &Bound<'_, PyAny>| -> PyResult<String> {
        k.extract()
            .map_err(|_| type_error(format!("{at}kind must be a str, got {}", type_name(k))))
    };
    if let Ok(t) = item.cast::<PyTuple>() {
        if t.len() != 2 {
            return Err(type_error(format!(
                "{at}a tuple must be (kind, payload), got {} elements",
                t.len()
            )));
        }
        let kind = kind_of(&t.get_item(0)?)?;
        return new_job(kind, Some(&t.get_item(1)?), EnqueueOptions::default(), py);
    }
    let Ok(d) = item.cast::<PyDict>() else {
        return Err(type_error(format!(
            "{name} must be a (kind, payload) tuple or a dict, got {}",
            type_name(item)
        )));
    };
    let opts = enqueue_options(Some(d), &at, &["kind", "payload"])?;
    let kind = match d.get_item("kind")? {
        Some(k) => kind_of(&k)?,
        None => return Err(invalid(py, format!("{name} has no \"kind\""))),
    };
    new_job(kind, d.get_item("payload")?.as_ref(), opts, py)
}

/// The items of `enqueue_many` (a list or any iterable of items).
pub fn enqueue_items(items: &Bound<'_, PyAny>) -> PyResult<Vec<NewJob>> {
    items_of(items, "enqueue_many", "enqueue_many item")
}

/// A list (or any iterable) of `enqueue_many` items: `what` takes it,
/// `item` names one in messages (followed by its index).
pub fn items_of(items: &Bound<'_, PyAny>, what: &str, item: &str) -> PyResult<Vec<NewJob>> {
    let not_a_list = || {
        type_error(format!(
            "{what} takes a list of (kind, payload) tuples or dicts, got {}",
            type_name(items)
        ))
    };
    if items.is_instance_of::<PyString>() || items.is_instance_of::<PyDict>() {
        return Err(not_a_list());
    }
    items
        .try_iter()
        .map_err(|_| not_a_list())?
        .enumerate()
        .map(|(i, it)| item_at(&it?, &format!("{item} {i}")))
        .collect()
}

/// A completion with its result converted (its encoding recorded).
pub fn completion(
    token: telha_jobs::LeaseToken,
    result: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Completion> {
    let mut c = Completion::new(token, None);
    if let Some(r) = result.filter(|r| !r.is_none()) {
        let (bytes, encoding) = payload::to_bytes(r, what)?;
        c.result = Some(bytes);
        c.encoding = encoding;
    }
    Ok(c)
}

/// `tags=`: a list (or tuple) of str. A lone str is refused: it would be
/// read as one tag per character.
pub fn tags(v: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let bad = || type_error(format!("tags must be a list of str, got {}", type_name(v)));
    if v.is_instance_of::<PyString>() {
        return Err(bad());
    }
    v.try_iter()
        .map_err(|_| bad())?
        .map(|t| {
            let t = t?;
            let s = t.cast::<PyString>().map_err(|_| {
                type_error(format!("every tag must be a str, got {}", type_name(&t)))
            })?;
            Ok(s.to_cow()?.into_owned())
        })
        .collect()
}

/// `metadata=`: a dict of str to str.
pub fn metadata(v: &Bound<'_, PyAny>) -> PyResult<std::collections::BTreeMap<String, String>> {
    let d = v.cast::<PyDict>().map_err(|_| {
        type_error(format!(
            "metadata must be a dict of str to str, got {}",
            type_name(v)
        ))
    })?;
    let mut m = std::collections::BTreeMap::new();
    for (k, x) in d.iter() {
        let text = |o: &Bound<'_, PyAny>| -> PyResult<String> {
            Ok(o.cast::<PyString>()
                .map_err(|_| {
                    type_error(format!(
                        "metadata keys and values must be str, got {}",
                        type_name(o)
                    ))
                })?
                .to_cow()?
                .into_owned())
        };
        m.insert(text(&k)?, text(&x)?);
    }
    Ok(m)
}
