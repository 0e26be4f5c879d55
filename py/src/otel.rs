//! Trace context at enqueue: when the application has imported
//! OpenTelemetry (`opentelemetry.trace` in `sys.modules`) and a span is
//! active, `telha_jobs._otel.carrier()` gives its W3C `traceparent` /
//! `tracestate`, which go into the new job's metadata. Otherwise one dict
//! lookup per job and nothing imported (the Python side documents why).

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// The module whose presence says the application traces.
const WATCHED: &str = "opentelemetry.trace";

static MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// Add the active span's context to `metadata`, unless the caller set
/// `traceparent` or `tracestate` (an explicit context is kept whole).
pub fn inject(py: Python<'_>, metadata: &mut BTreeMap<String, String>) -> PyResult<()> {
    if metadata.contains_key("traceparent") || metadata.contains_key("tracestate") {
        return Ok(());
    }
    let modules = MODULES.get_or_try_init(py, || -> PyResult<Py<PyDict>> {
        Ok(py
            .import("sys")?
            .getattr("modules")?
            .cast_into::<PyDict>()?
            .unbind())
    })?;
    if !modules.bind(py).contains(WATCHED)? {
        return Ok(());
    }
    let got = py.import("telha_jobs._otel")?.call_method0("carrier")?;
    if got.is_none() {
        return Ok(());
    }
    let got: BTreeMap<String, String> = got.extract()?;
    metadata.extend(got);
    Ok(())
}
