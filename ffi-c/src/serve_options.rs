//! `tj_serve_options`: how `tj_queue_serve` serves, the same options as
//! Python's `Queue.serve` and Node's `queue.serve` (token, TLS files,
//! metrics listener, the operator page and its read-only mode).

use std::ffi::c_char;

use telha_jobs_server::{ServeOptions, TlsPem};

use crate::boundary::{self, handle_mut, opt_string};
use crate::error::{tj_error, Failure};
use crate::status::tj_status;

/// How `tj_queue_serve` serves. Owned by the caller
/// (`tj_serve_options_new` / `tj_serve_options_free`); copied by
/// `tj_queue_serve`, so it may be freed after. Not thread-safe while being
/// set.
#[allow(non_camel_case_types)]
pub struct tj_serve_options {
    token: Option<String>,
    tls_cert: Option<String>,
    tls_key: Option<String>,
    metrics_listen: Option<String>,
    ui: bool,
    ui_read_only: bool,
}

/// New serve options: no token, no TLS, no HTTP listener, no page (what a
/// NULL `options` means to `tj_queue_serve`). Never NULL.
#[no_mangle]
pub extern "C" fn tj_serve_options_new() -> *mut tj_serve_options {
    Box::into_raw(Box::new(tj_serve_options::defaults()))
}

/// Free serve options. NULL does nothing.
///
/// # Safety
/// `options` is NULL or a `tj_serve_options` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_serve_options_free(options: *mut tj_serve_options) {
    boundary::free_box(options);
}

/// A setter taking an optional string: NULL clears the field.
fn set_text(
    func: &'static str,
    options: *mut tj_serve_options,
    arg: &'static str,
    value: *const c_char,
    err: *mut *mut tj_error,
    field: fn(&mut tj_serve_options) -> &mut Option<String>,
) -> tj_status {
    boundary::run(func, err, || {
        let o = handle_mut(func, "options", options)?;
        let v = opt_string(func, arg, value)?.map(str::to_owned);
        *field(o) = v;
        Ok(())
    })
}

/// The bearer token every call must carry (copied; NULL: none). A
/// listener on a non-loopback address needs one; an empty or blank token
/// is refused by `tj_queue_serve`. Clients pass the same token
/// (`telha_jobs.connect(url, token=...)`); the `/metrics` endpoint and the
/// page ask for it too.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_UTF8`
/// (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `token` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_serve_options_set_token(
    options: *mut tj_serve_options,
    token: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    set_text(
        "tj_serve_options_set_token",
        options,
        "token",
        token,
        err,
        |o| &mut o.token,
    )
}

/// Serve TLS with the certificate chain in this PEM file (path copied;
/// NULL: none). Goes with `tj_serve_options_set_tls_key`: both or
/// neither. The files are read by `tj_queue_serve`. TLS covers the TCP
/// gRPC listeners and the HTTP listener (`https://`); a Unix socket is
/// served without it.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_UTF8`
/// (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `path` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_serve_options_set_tls_cert(
    options: *mut tj_serve_options,
    path: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    set_text(
        "tj_serve_options_set_tls_cert",
        options,
        "path",
        path,
        err,
        |o| &mut o.tls_cert,
    )
}

/// The PEM file of the TLS certificate's private key (path copied; NULL:
/// none). See `tj_serve_options_set_tls_cert`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_UTF8`
/// (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `path` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_serve_options_set_tls_key(
    options: *mut tj_serve_options,
    path: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    set_text(
        "tj_serve_options_set_tls_key",
        options,
        "path",
        path,
        err,
        |o| &mut o.tls_key,
    )
}

/// Also serve Prometheus text on `http://<address>/metrics` (`host:port`,
/// port 0 picks a free one; copied; NULL: no HTTP listener unless the page
/// is on). The same loopback/token rule as the gRPC listener.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_UTF8`
/// (options unchanged). A bad address is refused by `tj_queue_serve`.
///
/// # Safety
/// `options` is NULL or live; `address` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_serve_options_set_metrics_listen(
    options: *mut tj_serve_options,
    address: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    set_text(
        "tj_serve_options_set_metrics_listen",
        options,
        "address",
        address,
        err,
        |o| &mut o.metrics_listen,
    )
}

/// Serve the operator web page (and its JSON API, `/api/v1/`) on the HTTP
/// listener: the metrics address when one is set, else `127.0.0.1:7451`
/// (`tj_server_ui_url`). Default false.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_serve_options_set_ui(
    options: *mut tj_serve_options,
    ui: bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_serve_options_set_ui";
    boundary::run(F, err, || {
        handle_mut(F, "options", options)?.ui = ui;
        Ok(())
    })
}

/// The page and its API show but refuse every action (`READ_ONLY`).
/// Default false.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_serve_options_set_ui_read_only(
    options: *mut tj_serve_options,
    read_only: bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_serve_options_set_ui_read_only";
    boundary::run(F, err, || {
        handle_mut(F, "options", options)?.ui_read_only = read_only;
        Ok(())
    })
}

fn read_pem(func: &str, path: &str, what: &str) -> Result<Vec<u8>, Failure> {
    std::fs::read(path)
        .map_err(|e| Failure::invalid(format!("{func}: {what}: cannot read PEM file {path}: {e}")))
}

impl tj_serve_options {
    /// The server's options for `listen`: the TLS files read (both or
    /// neither), everything else copied.
    // Field by field: `ServeOptions` may grow fields.
    #[allow(clippy::field_reassign_with_default)]
    pub(crate) fn to_serve(&self, func: &str, listen: &str) -> Result<ServeOptions, Failure> {
        let tls = match (&self.tls_cert, &self.tls_key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(TlsPem {
                cert_pem: read_pem(func, cert, "tls_cert")?,
                key_pem: read_pem(func, key, "tls_key")?,
            }),
            _ => {
                return Err(Failure::invalid(format!(
                    "{func}: tls_cert and tls_key go together: give both PEM files, or neither"
                )))
            }
        };
        let mut s = ServeOptions::default();
        s.listen = listen.to_owned();
        s.token = self.token.clone();
        s.tls = tls;
        s.metrics_listen = self.metrics_listen.clone();
        s.ui = self.ui;
        s.ui_read_only = self.ui_read_only;
        Ok(s)
    }

    pub(crate) fn defaults() -> tj_serve_options {
        tj_serve_options {
            token: None,
            tls_cert: None,
            tls_key: None,
            metrics_listen: None,
            ui: false,
            ui_read_only: false,
        }
    }
}
