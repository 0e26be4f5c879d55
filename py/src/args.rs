//! Python arguments → owned core values, with `TypeError` for a wrong type
//! and `InvalidArgumentError` (a `ValueError`) for a wrong value.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDateTime, PyDelta, PyList, PyString, PyTuple};
use telha_jobs::{JobId, KindPattern, LeaseToken, Scope};

use crate::errors::{invalid, type_error, IntoPyResult};
use crate::job::Job;
use crate::payload::type_name;

/// A duration in seconds (int or float) or a `datetime.timedelta`; finite
/// and not negative.
pub fn duration(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    let py = obj.py();
    let s = if obj.is_instance_of::<PyDelta>() {
        obj.call_method0("total_seconds")?.extract::<f64>()?
    } else {
        number(obj, what)?
    };
    Duration::try_from_secs_f64(s).map_err(|_| {
        invalid(
            py,
            format!("{what} must be a finite number of seconds >= 0, got {s}"),
        )
    })
}

/// A point in time: seconds since the epoch (int or float) or an aware
/// `datetime.datetime` (a naive one is read as local time, like
/// `datetime.timestamp()`). Returns ms since the epoch.
pub fn instant_ms(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    let py = obj.py();
    let s = if obj.is_instance_of::<PyDateTime>() {
        obj.call_method0("timestamp")?.extract::<f64>()?
    } else {
        number(obj, what)?
    };
    if !s.is_finite() || s < 0.0 {
        return Err(invalid(
            py,
            format!("{what} must be seconds since the epoch (>= 0), got {s}"),
        ));
    }
    Ok((s * 1000.0).round() as u64)
}

fn number(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<pyo3::types::PyBool>() || obj.is_instance_of::<PyString>() {
        return Err(type_error(format!(
            "{what} must be a number of seconds, got {}",
            type_name(obj)
        )));
    }
    obj.extract::<f64>().map_err(|_| {
        type_error(format!(
            "{what} must be a number of seconds, got {}",
            type_name(obj)
        ))
    })
}

/// An integer in `lo..=hi` (a bool is refused).
pub fn int_in(obj: &Bound<'_, PyAny>, what: &str, lo: i64, hi: i64) -> PyResult<i64> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(type_error(format!("{what} must be an int, got bool")));
    }
    let v: i64 = obj.extract().map_err(|_| {
        if obj.is_instance_of::<pyo3::types::PyInt>() {
            invalid(obj.py(), format!("{what} must be {lo} to {hi}, got {obj}"))
        } else {
            type_error(format!("{what} must be an int, got {}", type_name(obj)))
        }
    })?;
    if v < lo || v > hi {
        return Err(invalid(
            obj.py(),
            format!("{what} must be {lo} to {hi}, got {v}"),
        ));
    }
    Ok(v)
}

/// `str(uuid)` for a `uuid.UUID`, the string itself for a `str`.
fn uuid_text(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if type_name(obj) == "UUID" && obj.hasattr("hex")? {
        return Ok(obj.str()?.to_cow()?.into_owned());
    }
    Err(type_error(format!(
        "{what} must be a UUID string or uuid.UUID, got {}",
        type_name(obj)
    )))
}

pub fn scope(obj: &Bound<'_, PyAny>) -> PyResult<Scope> {
    uuid_text(obj, "scope")?.parse().py_err(obj.py())
}

pub fn job_id(obj: &Bound<'_, PyAny>) -> PyResult<JobId> {
    uuid_text(obj, "job_id")?.parse().py_err(obj.py())
}

/// One string or a list / tuple of them.
fn one_or_many<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyString>() || type_name(obj) == "UUID" {
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
            s.to_cow()?.parse::<KindPattern>().py_err(obj.py())
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
        return s.to_cow()?.parse().py_err(obj.py());
    }
    Err(type_error(format!(
        "expected a Job from lease_next / lease_many (or its token string), got {}",
        type_name(obj)
    )))
}
