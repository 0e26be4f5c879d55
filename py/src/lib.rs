//! `telha_jobs._native`: the PyO3 module under the `telha_jobs` package.
//! Mirrors node/src: queue.rs, job.rs, errors.rs, payload.rs (+ args.rs for
//! argument conversion). The Worker and asyncio layers are pure Python.

mod args;
mod errors;
mod job;
mod payload;
mod queue;
mod remote;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The embedded default store: `$TELHA_DB` when set, else `./telha-data`.
#[pyfunction]
fn default_store_path() -> String {
    telha_jobs::default_store_path().display().to_string()
}

/// Encode a value by the cross-language payload convention (version byte
/// 0x01, then msgpack); what `enqueue` stores for a non-bytes payload.
#[pyfunction]
fn encode_payload<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let v = payload::to_value(value, "value", 0)?;
    let b = telha_jobs::payload::encode(&v).map_err(|e| errors::to_py(value.py(), e))?;
    Ok(PyBytes::new(value.py(), &b))
}

/// Decode stored bytes as a reader sees them: the value when they follow
/// the convention, else the bytes unchanged.
#[pyfunction]
fn decode_payload(py: Python<'_>, data: &[u8]) -> PyResult<Py<PyAny>> {
    payload::from_bytes(py, data)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<queue::Queue>()?;
    m.add_class::<queue::CancelWait>()?;
    m.add_class::<job::Job>()?;
    m.add_class::<job::JobInfo>()?;
    m.add_class::<remote::Server>()?;
    m.add_function(wrap_pyfunction!(remote::connect, m)?)?;
    m.add_function(wrap_pyfunction!(default_store_path, m)?)?;
    m.add_function(wrap_pyfunction!(encode_payload, m)?)?;
    m.add_function(wrap_pyfunction!(decode_payload, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
