//! `Queue(...)` settings → the core's `Config`, through the core's table of
//! keys (`telha_jobs::config::keys`), generically: every key of the table is
//! a keyword of the same name, converted by its type, so a key added to
//! the table works here with no change to this file.
//!
//! Layering: defaults, then the TOML file (`config_file`, else
//! `$TELHA_JOBS_CONFIG`), then `TELHA_JOBS_*` variables (the core's
//! `Config::load`), then the keywords, then `validate` at open.
//!
//! Types by `KeyType`: durations are seconds (int / float) or a
//! `timedelta`; a retention also takes `False` or `math.inf` (keep
//! forever); counts are ints; factors floats; flags bools. `None` means
//! "not given here". An unknown name is `InvalidArgumentError` listing the
//! valid ones; a wrong type is `TypeError`.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};
use telha_jobs::config::keys::{self, Key, KeyType, Value, KEYS};
use telha_jobs::limits::MAX_DURATION;
use telha_jobs::Config;

use crate::args;
use crate::errors::{invalid, type_error};
use crate::payload::type_name;
use crate::task;

/// The config an embedded `Queue(...)` opens with.
pub fn build(
    py: Python<'_>,
    config_file: Option<PathBuf>,
    kinds: Option<&Bound<'_, PyAny>>,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<Config> {
    let mut c = task::run(py, || Config::load(config_file.as_deref()))?;
    for (name, v) in settings.into_iter().flat_map(|d| d.iter()) {
        let name = key_name(&name, "setting names")?;
        if v.is_none() {
            continue;
        }
        let k = task::pure(py, || keys::key(&name))?;
        let v = value(k, &v, &name)?;
        task::pure(py, || c.set(&name, v))?;
    }
    if let Some(kinds) = kinds.filter(|k| !k.is_none()) {
        let kinds = kinds.cast::<PyDict>().map_err(|_| {
            type_error(format!(
                "kinds must be a dict of {{kind: {{setting: value}}}}, got {}",
                type_name(kinds)
            ))
        })?;
        for (kind, over) in kinds.iter() {
            let kind = key_name(&kind, "kinds keys (kinds)")?;
            let over = over.cast::<PyDict>().map_err(|_| {
                type_error(format!(
                    "kinds[{kind:?}] must be a dict of per-kind settings, got {}",
                    type_name(&over)
                ))
            })?;
            for (name, v) in over.iter() {
                let name = key_name(&name, "per-kind setting names")?;
                if v.is_none() {
                    continue;
                }
                let k = per_kind_key(py, &kind, &name)?;
                let v = value(k, &v, &format!("kinds[{kind:?}][{name:?}]"))?;
                task::pure(py, || c.set_for_kind(&kind, &name, v))?;
            }
        }
    }
    Ok(c)
}

fn key_name(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    obj.cast::<PyString>()
        .map(|s| s.to_string())
        .map_err(|_| type_error(format!("{what} must be str, got {}", type_name(obj))))
}

fn per_kind_key(py: Python<'_>, kind: &str, name: &str) -> PyResult<&'static Key> {
    match keys::key(name) {
        Ok(k) if k.per_kind => Ok(k),
        _ => Err(invalid(
            py,
            format!(
                "unknown per-kind setting {name:?} for {kind:?}; one of {}",
                keys::per_kind_names().join(", ")
            ),
        )),
    }
}

/// A Python value as a value of `k`'s type (ranges are the core's check).
fn value(k: &Key, v: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    Ok(match k.ty {
        KeyType::Duration { .. } => Value::Duration(args::duration(v, what)?),
        KeyType::Retention => {
            let forever = v.cast::<PyBool>().is_ok_and(|b| !b.is_true())
                || v.cast::<PyFloat>()
                    .is_ok_and(|f| f.value() == f64::INFINITY);
            if forever {
                Value::Off
            } else if v.is_instance_of::<PyBool>() {
                return Err(type_error(format!(
                    "{what} must be a number of seconds, or False / math.inf to keep forever, got True"
                )));
            } else {
                Value::Duration(args::duration(v, what)?)
            }
        }
        KeyType::Count { .. } => Value::Count(args::count(v, what)?),
        KeyType::Factor | KeyType::Fraction => Value::Float(args::float(v, what)?),
        KeyType::Flag => Value::Flag(args::flag(v, what)?),
        _ => {
            return Err(invalid(
                v.py(),
                format!(
                    "{what}: this build of the Python binding cannot set a key of type {:?}",
                    k.ty
                ),
            ))
        }
    })
}

/// A core value as Python: durations in seconds, "off" as `math.inf`.
fn to_py(py: Python<'_>, v: Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Duration(d) => d.as_secs_f64().into_pyobject(py)?.into_any().unbind(),
        Value::Off => f64::INFINITY.into_pyobject(py)?.into_any().unbind(),
        Value::Count(n) => n.into_pyobject(py)?.into_any().unbind(),
        Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Value::Flag(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
    })
}

/// `Queue.settings()`: every key by name, then `"kinds"`: the per-kind
/// values each kind sets. The dict is valid input: `Queue(path, **s)`.
pub fn settings<'py>(py: Python<'py>, c: &Config) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for k in KEYS {
        let v = task::pure(py, || c.get(k.name))?;
        d.set_item(k.name, to_py(py, v)?)?;
    }
    let kinds = PyDict::new(py);
    for (kind, kc) in &c.kinds {
        let one = PyDict::new(py);
        for k in KEYS.iter().filter(|k| k.per_kind) {
            if let Some(v) = kc.get(k.name) {
                one.set_item(k.name, to_py(py, v)?)?;
            }
        }
        kinds.set_item(kind, one)?;
    }
    d.set_item("kinds", kinds)?;
    Ok(d)
}

/// One settable key of the core's table (`telha_jobs.config_keys()`).
#[pyclass(frozen, module = "telha_jobs", name = "ConfigKey")]
pub struct ConfigKey {
    /// The keyword (and the per-kind name, when `per_kind`).
    #[pyo3(get)]
    name: &'static str,
    /// `"duration"` (seconds or a timedelta), `"retention"` (also
    /// False / math.inf: forever), `"count"` (int), `"factor"` (float) or
    /// `"flag"` (bool).
    #[pyo3(get, name = "type")]
    ty: &'static str,
    /// The unit, for docs: `duration`, `attempts`, `bytes`, …
    #[pyo3(get)]
    unit: &'static str,
    /// The default, in the config file's syntax (`"300s"`, `"5"`).
    #[pyo3(get)]
    default: &'static str,
    /// Settable per kind (`kinds={kind: {name: value}}`).
    #[pyo3(get)]
    per_kind: bool,
    /// What it does.
    #[pyo3(get)]
    doc: &'static str,
    /// Its path under `[jobs]` in the TOML file (`backoff.base`).
    #[pyo3(get)]
    toml: &'static str,
    /// The environment variable that overrides it, or None.
    #[pyo3(get)]
    env: Option<&'static str>,
    /// The smallest value allowed (seconds for durations), or None.
    #[pyo3(get)]
    min: Option<Py<PyAny>>,
    /// The largest value allowed (seconds for durations), or None.
    #[pyo3(get)]
    max: Option<Py<PyAny>>,
}

fn secs(py: Python<'_>, d: Duration) -> PyResult<Py<PyAny>> {
    Ok(d.as_secs_f64().into_pyobject(py)?.into_any().unbind())
}

impl ConfigKey {
    fn new(py: Python<'_>, k: &'static Key) -> PyResult<Self> {
        let int = |n: u64| -> PyResult<Py<PyAny>> { Ok(n.into_pyobject(py)?.into_any().unbind()) };
        let (ty, min, max) = match k.ty {
            KeyType::Duration { min } => (
                "duration",
                Some(secs(py, min)?),
                Some(secs(py, MAX_DURATION)?),
            ),
            KeyType::Retention => ("retention", None, Some(secs(py, MAX_DURATION)?)),
            KeyType::Count { min, max } => ("count", Some(int(min)?), Some(int(max)?)),
            KeyType::Factor => (
                "factor",
                Some(1.0f64.into_pyobject(py)?.into_any().unbind()),
                None,
            ),
            KeyType::Fraction => (
                "fraction",
                Some(0.0f64.into_pyobject(py)?.into_any().unbind()),
                Some(1.0f64.into_pyobject(py)?.into_any().unbind()),
            ),
            KeyType::Flag => ("flag", None, None),
            _ => ("unknown", None, None),
        };
        Ok(ConfigKey {
            name: k.name,
            ty,
            unit: k.unit,
            default: k.default,
            per_kind: k.per_kind,
            doc: k.doc,
            toml: k.toml,
            env: k.env,
            min,
            max,
        })
    }
}

#[pymethods]
impl ConfigKey {
    fn __repr__(&self) -> String {
        format!(
            "ConfigKey(name='{}', type='{}', default='{}', per_kind={})",
            self.name,
            self.ty,
            self.default,
            if self.per_kind { "True" } else { "False" }
        )
    }
}

/// Every key `Queue(...)` accepts, from the core's table, in its order.
#[pyfunction]
pub fn config_keys(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    task::guard(py, "config_keys", || {
        let keys = KEYS
            .iter()
            .map(|k| ConfigKey::new(py, k))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, keys)
    })
}
