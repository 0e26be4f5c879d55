//! One table from the core's `ErrorKind` to the Python exception classes.
//!
//! The classes live in `telha_jobs/_errors.py` (plain Python, so
//! `InvalidArgumentError` can be both a `TelhaError` and a `ValueError`);
//! they are looked up once and cached. Every class name ends in `Error`
//! (the old names there are aliases of the same class objects).

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use telha_jobs::{Error, ErrorKind};

/// The Python class name for each kind, in `ErrorKind::ALL` order (sized
/// by it, so a new kind does not build until it has a class here).
const CLASS_NAMES: [(ErrorKind, &str); ErrorKind::ALL.len()] = [
    (ErrorKind::InvalidArgument, "InvalidArgumentError"),
    (ErrorKind::NotFound, "NotFoundError"),
    (ErrorKind::Aborted, "LeaseLostError"),
    (ErrorKind::StoreLocked, "StoreLockedError"),
    (ErrorKind::Storage, "StorageError"),
    (ErrorKind::Corruption, "CorruptionError"),
    (ErrorKind::Closed, "QueueClosedError"),
    (ErrorKind::UnsupportedFormat, "UnsupportedFormatError"),
    (ErrorKind::Cancelled, "CancelledError"),
    (ErrorKind::WrongState, "WrongStateError"),
    (ErrorKind::Unavailable, "UnavailableError"),
];

struct Classes {
    root: Py<PyType>,
    by_kind: Vec<(ErrorKind, Py<PyType>)>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let m = py.import("telha_jobs._errors")?;
        let get = |name: &str| -> PyResult<Py<PyType>> {
            Ok(m.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        let by_kind = CLASS_NAMES
            .iter()
            .map(|(k, n)| Ok((*k, get(n)?)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Classes {
            root: get("TelhaError")?,
            by_kind,
        })
    })
}

/// The Python exception for a core error: the class mapped from its kind
/// (`TelhaError` for a kind this build does not know), with the core's
/// message; `StoreLockedError` also carries the store `path`, and
/// `UnavailableError` the `leader` hint (a URL or `None`).
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = e.to_string();
    let build = || -> PyResult<PyErr> {
        let c = classes(py)?;
        let kind = e.kind();
        let cls = c
            .by_kind
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, t)| t)
            .unwrap_or(&c.root);
        let exc = cls.bind(py).call1((msg.clone(),))?;
        if let Error::StoreLocked { path, .. } = &e {
            exc.setattr("path", path.display().to_string())?;
        }
        if let Error::Unavailable { leader, .. } = &e {
            exc.setattr("leader", leader.clone())?;
        }
        Ok(PyErr::from_value(exc))
    };
    // Should the Python side be missing (a broken install), still raise
    // something that carries the message rather than lose it.
    build().unwrap_or_else(|err| {
        PyRuntimeError::new_err(format!("{msg} (and telha_jobs._errors failed: {err})"))
    })
}

/// `InvalidArgumentError` with `msg`: bad values from Python (a `ValueError`).
pub fn invalid(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    to_py(py, Error::InvalidArgument(msg.into()))
}

/// `TypeError` with `msg`: an argument of the wrong Python type.
pub fn type_error(msg: impl Into<String>) -> PyErr {
    PyTypeError::new_err(msg.into())
}

/// `map_err` helper: core result → Python result.
pub trait IntoPyResult<T> {
    /// Map the core error to its Python class.
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for telha_jobs::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
