//! Running a core call from Python: the GIL released while it runs (so
//! other threads run Python and other store calls meanwhile), its error
//! mapped to the Python class, and a panic that escapes it turned into
//! `StorageError`, as the C boundary turns one into its storage status.
//!
//! Without this a panic would surface as PyO3's `PanicException`, a
//! `BaseException` that `except Exception` and `except TelhaError` miss and
//! that kills a Worker thread. Every call into the core goes through [`run`]
//! or [`pure`], and the whole body of every binding call (reading its
//! arguments, converting its answer) through [`guard`].

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
    py.detach(|| caught(f)).py_err(py)
}

/// Run two core calls one after the other with the GIL released once
/// around both (the second runs whatever the first answered); each one's
/// error, or a panic that escapes it, is its own answer.
pub fn run_two<A, B>(
    py: Python<'_>,
    first: impl FnOnce() -> telha_jobs::Result<A> + Send,
    second: impl FnOnce() -> telha_jobs::Result<B> + Send,
) -> (telha_jobs::Result<A>, telha_jobs::Result<B>)
where
    A: Send,
    B: Send,
{
    py.detach(|| (caught(first), caught(second)))
}

/// Run `f` (a core call, the GIL already released), a panic that escapes
/// it turned into `StorageError`.
fn caught<T>(f: impl FnOnce() -> telha_jobs::Result<T>) -> telha_jobs::Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panicked(&*p)))
}

/// Run `f`, a core call that neither touches the store nor waits (parsing,
/// the key table, encoding), with the GIL held; its error, or a panic that
/// escapes it, comes back as the Python exception, as in [`run`].
pub fn pure<T>(py: Python<'_>, f: impl FnOnce() -> telha_jobs::Result<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(panicked(&*p)))
        .py_err(py)
}

/// Run the body of the binding call `call` (its arguments read, its core
/// calls, its answer converted): a panic anywhere in it that [`run`] /
/// [`pure`] did not already catch comes back as `StorageError` too.
pub fn guard<T>(py: Python<'_>, call: &str, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| {
        let e = panicked(&*p);
        Err(crate::errors::to_py(py, in_call(call, e)))
    })
}

fn in_call(call: &str, e: telha_jobs::Error) -> telha_jobs::Error {
    match e {
        telha_jobs::Error::Storage(m) => telha_jobs::Error::Storage(format!("{call}: {m}")),
        e => e,
    }
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

/// For the test suite only: a panic in a binding call, run through the
/// same boundaries as every other: `stage="core"` panics inside a core call
/// ([`run`]), `"call"` in the binding's own code around it (where reading
/// arguments and converting answers run: inside [`guard`] only), so the
/// tests can see what a caller gets in each case.
#[pyfunction]
#[pyo3(name = "_panic_for_tests", signature = (stage, message))]
pub fn panic_for_tests(py: Python<'_>, stage: &str, message: String) -> PyResult<()> {
    guard(py, "_panic_for_tests", || match stage {
        "core" => run(py, move || -> telha_jobs::Result<()> {
            panic!("{message}")
        }),
        "call" => panic!("{message}"),
        _ => Err(crate::errors::invalid(
            py,
            format!("stage must be \"core\" or \"call\", got {stage:?}"),
        )),
    })
}

/// For the benchmark only (py/bench/bench.py): a binding call that does no
/// store work, to split what a call costs: `payload` (None, or a value
/// converted as `enqueue` converts its payload) and `detach` (the GIL
/// released and taken back, as around every store call). Returns the
/// converted payload's length.
#[pyfunction]
#[pyo3(name = "_call_cost", signature = (payload=None, detach=false))]
pub fn call_cost(
    py: Python<'_>,
    payload: Option<&Bound<'_, PyAny>>,
    detach: bool,
) -> PyResult<usize> {
    guard(py, "_call_cost", || {
        let n = match payload {
            Some(p) => crate::payload::to_bytes(p, "payload")?.0.len(),
            None => 0,
        };
        if detach {
            run(py, move || Ok(n))
        } else {
            Ok(n)
        }
    })
}
