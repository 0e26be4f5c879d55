//! Enqueue options and batch items → the core's `EnqueueOptions` / `NewJob`,
//! and the answer back as `telha_jobs.Enqueued` (a `str`, the job id, with
//! `.created`: False when an idempotency key matched an existing job).
//!
//! One rule for option names, shared with Node's options objects and with
//! `Queue(...)` settings: an unknown name is `InvalidArgumentError` listing
//! the valid ones; a wrong type is `TypeError`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};
use telha_jobs::{EnqueueOptions, Enqueued, NewJob};

use crate::args;
use crate::errors::{invalid, type_error};
use crate::payload::{self, type_name};

/// The keywords of `enqueue` (and keys of an `enqueue_many` dict item).
pub const OPTIONS: [&str; 6] = [
    "scope",
    "priority",
    "delay",
    "run_at",
    "idempotency_key",
    "max_attempts",
];

/// `options` (a dict of enqueue options; None values are "not given"),
/// checked by name; `at` prefixes messages (`"enqueue_many item 3: "`).
/// `extra` names keys the caller handles itself (an item's kind, payload).
pub fn options(
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
            "scope" => o.scope = Some(args::scope(v)?),
            "priority" => o.priority = Some(args::int_in(v, "priority", 0, u8::MAX.into())? as u8),
            "delay" => o.delay = Some(args::delay(v)?),
            "run_at" => o.run_at = Some(args::instant_ms(v, "run_at")?),
            "idempotency_key" => {
                let k = v.cast::<PyString>().map_err(|_| {
                    type_error(format!(
                        "idempotency_key must be a str, got {}",
                        type_name(v)
                    ))
                })?;
                o.idempotency_key = Some(k.to_cow()?.into_owned());
            }
            "max_attempts" => {
                o.max_attempts = Some(args::int_in(v, "max_attempts", 1, u32::MAX.into())? as u32)
            }
            _ => {
                let mut names: Vec<&str> = extra.to_vec();
                names.extend(OPTIONS);
                return Err(invalid(
                    d.py(),
                    format!("{at}unknown option {name:?}; one of {}", names.join(", ")),
                ));
            }
        }
    }
    Ok(o)
}

/// A job to enqueue: its payload converted (its encoding recorded).
pub fn job(
    kind: String,
    payload: Option<&Bound<'_, PyAny>>,
    mut options: EnqueueOptions,
    py: Python<'_>,
) -> PyResult<NewJob> {
    let none = py.None().into_bound(py);
    let (bytes, encoding) = payload::to_bytes(payload.unwrap_or(&none), "payload")?;
    options.encoding = encoding;
    Ok(NewJob::new(kind, bytes).with(options))
}

/// One `enqueue_many` item: `(kind, payload)` or a dict with `kind`,
/// `payload` and the enqueue options.
pub fn item(item: &Bound<'_, PyAny>, i: usize) -> PyResult<NewJob> {
    let py = item.py();
    let at = format!("enqueue_many item {i}: ");
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
        return job(kind, Some(&t.get_item(1)?), EnqueueOptions::default(), py);
    }
    let Ok(d) = item.cast::<PyDict>() else {
        return Err(type_error(format!(
            "enqueue_many item {i} must be a (kind, payload) tuple or a dict, got {}",
            type_name(item)
        )));
    };
    let opts = options(Some(d), &at, &["kind", "payload"])?;
    let kind = match d.get_item("kind")? {
        Some(k) => kind_of(&k)?,
        None => {
            return Err(invalid(
                py,
                format!("enqueue_many item {i} has no \"kind\""),
            ))
        }
    };
    job(kind, d.get_item("payload")?.as_ref(), opts, py)
}

/// The items of `enqueue_many` (a list or any iterable of items).
pub fn items(items: &Bound<'_, PyAny>) -> PyResult<Vec<NewJob>> {
    let not_a_list = || {
        type_error(format!(
            "enqueue_many takes a list of (kind, payload) tuples or dicts, got {}",
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
        .map(|(i, it)| item(&it?, i))
        .collect()
}

static ENQUEUED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The core's answer as `telha_jobs.Enqueued(id, created)`.
pub fn answer(py: Python<'_>, e: &Enqueued) -> PyResult<Py<PyAny>> {
    let cls = ENQUEUED.import(py, "telha_jobs._types", "Enqueued")?;
    Ok(cls.call1((e.id.to_string(), e.created))?.unbind())
}
