//! Running a core call from Python: the GIL released while it runs (so
//! other threads run Python and other store calls meanwhile), its error
//! mapped to the Python class, and a panic that escapes it turned into
//! `StorageError`, as the C boundary turns one into its storage status.
//!
//! Without this a panic would surface as PyO3's `PanicException`, a
//! `BaseException` that `except Exception` and `except TelhaError` miss and
//! that kills a Worker thread. Every call into the core goes through [`run`]
//! or [`pure`].

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// Run `f` (a core call) with the GIL released; its error, or a panic that
/// escapes it, comes back as the Python exception.
pub fn run<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> telha_jobs::Result<T> + Send,
{
    py.detach(|| catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panicked(&*p))))
        .py_err(py)
}

/// Run `f`, a core call that neither touches the store nor waits (parsing,
/// the key table, encoding), with the GIL held; its error, or a panic that
/// escapes it, comes back as the Python exception, as in [`run`].
pub fn pure<T>(py: Python<'_>, f: impl FnOnce() -> telha_jobs::Result<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(panicked(&*p)))
        .py_err(py)
}

/// The storage error a caught panic becomes, with the panic's message.
fn panicked(payload: &(dyn Any + Send)) -> telha_jobs::Error {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    telha_jobs::Error::Storage(format!(
        "internal error: {msg} (a panic in telha_jobs, caught at the Python boundary)"
    ))
}

/// For the test suite only: a core call that panics, run through [`run`]
/// like every other, so the tests can see what a caller gets.
#[pyfunction]
#[pyo3(name = "_panic_in_core_call_for_tests")]
pub fn panic_in_core_call_for_tests(py: Python<'_>, message: String) -> PyResult<()> {
    run(py, move || -> telha_jobs::Result<()> {
        panic!("{message}")
    })
}
