//! Queues in other processes: `connect` (a `Queue` over a `telha serve`
//! server, through `telha_jobs_client::RemoteQueue`) and `Server` (this
//! process serving a queue it has open, through `telha_jobs_server::serve`).
//!
//! A remote queue is the same `Queue` class as an embedded one: both hold an
//! `Arc<dyn JobStore>`, so every method, type and error is shared.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use telha_jobs_server::{ServeOptions, ServerHandle, TlsPem};

use crate::errors::invalid;
use crate::queue::Queue;
use crate::{args, task};

/// How long `Server.stop()` lets in-flight calls finish by default.
const STOP_GRACE_DEFAULT: Duration = Duration::from_secs(5);

/// Connect to a `telha serve` server (`url`: `http://host:port`,
/// `https://` for TLS, or `unix:/path/to.sock` for its Unix socket), or to
/// the first of several that answers (a list of URLs, or one string of
/// comma-separated URLs: calls then move to the next server when one fails,
/// and a call whose reply was lost is repeated where that is safe).
/// Returns a `Queue` with the same methods, types and errors as an
/// embedded one. `token`: the server's bearer token (default:
/// `$TELHA_TOKEN`). `timeout` (seconds or a timedelta, at most
/// `limits.MAX_DURATION`): the deadline of connecting and of each call
/// (retries included; a waiting call gets its wait on top), past which it
/// raises the transport's error ("timed out after …"); a silent connection
/// is also dropped within twice `timeout` (each half held between 1 s and
/// 10 s). Default: 10 s to connect, 60 s per call, 10 s + 10 s keep-alive.
/// `ca_cert`: for `https://`, a PEM file of the CA to trust instead of the
/// public web roots (a self-signed server). `auto_idempotency_key`: with
/// two or more servers, unkeyed enqueues get a UUIDv7 idempotency key so
/// that they can be repeated safely (default `True`; `False` opts out).
#[pyfunction]
#[pyo3(signature = (url, token=None, *, timeout=None, ca_cert=None, auto_idempotency_key=true))]
// Field by field: `ConnectOptions` may grow fields.
#[allow(clippy::field_reassign_with_default)]
pub fn connect(
    py: Python<'_>,
    url: &Bound<'_, PyAny>,
    token: Option<String>,
    timeout: Option<&Bound<'_, PyAny>>,
    ca_cert: Option<PathBuf>,
    auto_idempotency_key: bool,
) -> PyResult<Queue> {
    task::guard(py, "connect", || {
        let url = url_list(py, url)?;
        let mut o = ConnectOptions::default();
        o.token = token.or_else(|| std::env::var("TELHA_TOKEN").ok().filter(|t| !t.is_empty()));
        if let Some(t) = timeout {
            o = o.with_timeout(args::duration(t, "timeout")?);
        }
        if let Some(path) = ca_cert {
            o.ca_cert_pem = Some(read_pem(py, &path, "ca_cert")?);
        }
        o.auto_idempotency_key = auto_idempotency_key;
        let q = task::run(py, move || RemoteQueue::connect(&url, o))?;
        Ok(Queue::from_remote(q))
    })
}

/// `url` as the client's comma list: a str as it is, a list or tuple of
/// str joined (the client checks each item).
fn url_list(py: Python<'_>, url: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = url.extract::<String>() {
        return Ok(s);
    }
    match url.extract::<Vec<String>>() {
        Ok(v) if v.iter().any(|u| u.contains(',')) => Err(invalid(
            py,
            "url: an item of a list of URLs contains a comma",
        )),
        Ok(v) => Ok(v.join(",")),
        Err(_) => Err(invalid(py, "url: a URL string, or a list of URL strings")),
    }
}

fn read_pem(py: Python<'_>, path: &Path, what: &str) -> PyResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        invalid(
            py,
            format!("{what}: cannot read PEM file {}: {e}", path.display()),
        )
    })
}

/// A server started by `Queue.serve`: other processes reach the queue at
/// `url`. `stop()` (or leaving a `with` block, or the process exiting)
/// shuts it down; the queue itself stays open.
#[pyclass(frozen, module = "telha_jobs", name = "Server")]
pub struct Server {
    handle: Mutex<Option<ServerHandle>>,
    address: String,
    metrics_address: Option<String>,
    ui_url: Option<String>,
    scheme: &'static str,
}

/// `Queue.serve`'s TLS files: both PEM files, or neither.
pub fn tls(
    py: Python<'_>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
) -> PyResult<Option<TlsPem>> {
    match (tls_cert, tls_key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some(TlsPem {
            cert_pem: read_pem(py, &cert, "tls_cert")?,
            key_pem: read_pem(py, &key, "tls_key")?,
        })),
        _ => Err(invalid(
            py,
            "tls_cert and tls_key go together: give both PEM files, or neither",
        )),
    }
}

/// `Queue.serve`'s body: start serving `queue` in this process.
// Field by field: `ServeOptions` may grow fields.
#[allow(clippy::field_reassign_with_default)]
pub fn serve(
    py: Python<'_>,
    queue: telha_jobs::Queue,
    listen: &str,
    token: Option<String>,
    tls: Option<TlsPem>,
    (metrics_listen, ui, ui_read_only): (Option<String>, bool, bool),
) -> PyResult<Server> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut options = ServeOptions::default();
    options.listen = listen.to_owned();
    options.token = token;
    options.tls = tls;
    options.metrics_listen = metrics_listen;
    options.ui = ui;
    options.ui_read_only = ui_read_only;
    let handle = task::run(py, move || telha_jobs_server::serve(queue, options))?;
    Ok(Server {
        address: handle.address().to_string(),
        metrics_address: handle.metrics_addr().map(|a| a.to_string()),
        ui_url: handle.ui_url(),
        handle: Mutex::new(Some(handle)),
        scheme,
    })
}

/// Stop a server without holding the GIL (calls in flight may need it).
fn shutdown(py: Python<'_>, h: ServerHandle, grace: Duration) -> PyResult<()> {
    task::run(py, move || {
        h.shutdown(grace);
        Ok(())
    })
}

impl Drop for Server {
    /// A `Server` collected without `stop()` stops with the default grace,
    /// without holding the GIL meanwhile (calls in flight may need it back).
    fn drop(&mut self) {
        let handle = self.handle.get_mut().ok().and_then(|h| h.take());
        if let Some(h) = handle {
            Python::attach(|py| shutdown(py, h, STOP_GRACE_DEFAULT)).ok();
        }
    }
}

#[pymethods]
impl Server {
    /// The address it listens on, `host:port` (the real port when
    /// `listen` asked for port 0).
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// `host:port` of the `/metrics` endpoint, when `metrics_listen` was given.
    #[getter]
    fn metrics_address(&self) -> Option<&str> {
        self.metrics_address.as_deref()
    }

    /// The operator web page's URL (`http://host:port/`) when served with
    /// `ui=True`.
    #[getter]
    fn ui_url(&self) -> Option<&str> {
        self.ui_url.as_deref()
    }

    /// The URL to pass to `telha_jobs.connect`.
    #[getter]
    fn url(&self) -> String {
        if self.address.starts_with("unix:") {
            return self.address.clone(); // a Unix socket: `unix:PATH`
        }
        format!("{}://{}", self.scheme, self.address)
    }

    /// Whether it is serving (`stop()` not called yet).
    #[getter]
    fn running(&self) -> bool {
        self.handle.lock().is_ok_and(|h| h.is_some())
    }

    /// Stop serving: refuse new calls, end lease streams, let calls in
    /// flight finish for up to `grace` seconds (at most
    /// `limits.MAX_DURATION`). Idempotent.
    #[pyo3(signature = (grace=None), text_signature = "($self, grace=5.0)")]
    fn stop(&self, py: Python<'_>, grace: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        task::guard(py, "stop", || {
            let grace = match grace {
                Some(g) => args::duration(g, "grace")?,
                None => STOP_GRACE_DEFAULT,
            };
            let handle = self.handle.lock().ok().and_then(|mut h| h.take());
            match handle {
                Some(h) => shutdown(py, h, grace),
                None => Ok(()),
            }
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.stop(py, None)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.running() { "" } else { ", stopped" };
        format!("Server('{}'{state})", self.url())
    }
}
