//! `tj_queue_serve` and `tj_server`: a C host serving the store it has
//! open to other processes over gRPC (and the operator page), on the
//! library's own threads, through `telha_jobs_server::serve`: the entry
//! point Python's `Queue.serve` and Node's `queue.serve` use too.

use std::ffi::{c_char, CString};
use std::sync::Mutex;
use std::time::Duration;

use telha_jobs_server::{ServerHandle, LISTEN_DEFAULT};

use crate::boundary::{self, cstring, handle, opt_ptr, opt_string, out, write};
use crate::error::{tj_error, Failure};
use crate::limits::{TJ_MAX_DURATION_MS, TJ_SERVER_GRACE_DEFAULT_MS};
use crate::queue::tj_queue;
use crate::serve_options::tj_serve_options;
use crate::status::tj_status;

/// A running server started by `tj_queue_serve`. Thread-safe: its getters,
/// `tj_server_running` and `tj_server_stop` may be called from any thread
/// at once. `tj_server_close` stops it (when still running) and frees it:
/// the last call on it.
///
/// It serves through its own handle on the queue's store, shared with the
/// `tj_queue` it was started from: `tj_queue_close` (or `tj_queue_free`)
/// while it runs closes the store for the server too. Every call a client
/// makes then answers `UNAVAILABLE` ("the telha server is closing":
/// retryable for the client), the listeners stay bound until
/// `tj_server_stop` / `tj_server_close`, and nothing is unsafe. Stop the
/// server first, then close the queue: clients in flight finish their
/// calls within the grace.
#[allow(non_camel_case_types)]
pub struct tj_server {
    handle: Mutex<Option<ServerHandle>>,
    address: CString,
    url: CString,
    metrics_address: Option<CString>,
    ui_url: Option<CString>,
}

impl tj_server {
    fn take(&self) -> Option<ServerHandle> {
        self.handle.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Serve `queue` to workers in other processes over gRPC, on `listen`
/// (`host:port`, port 0 picks a free one: read it back with
/// `tj_server_address`; `unix:PATH` for a Unix-domain socket; NULL:
/// `127.0.0.1:7450`), with `options` (NULL: no token, TLS, metrics or
/// page; copied). Clients connect to `tj_server_url` (Python:
/// `telha_jobs.connect(url)`, Node: `Queue.connect(url)`, Rust:
/// `RemoteQueue`, the CLI: `telha --server url`). The server runs on
/// threads of the library (a tokio runtime of two workers and a blocking
/// pool) until `tj_server_stop` or `tj_server_close`; the calling thread
/// is free once this returns. On success `*server_out` is a new
/// `tj_server` the caller frees with `tj_server_close`.
///
/// A listener on a non-loopback address needs a token. A read-only queue
/// (`tj_queue_open_read_only`) may be served: writes answer
/// `INVALID_ARGUMENT` to the client.
///
/// Blocks while the listeners bind and the TLS files are read.
///
/// Errors (nothing is left running): `TJ_STATUS_NULL_ARGUMENT` (queue,
/// server_out), `TJ_STATUS_INVALID_UTF8` (listen),
/// `TJ_STATUS_INVALID_ARGUMENT` for an unparsable address, a non-loopback
/// listener without a token, an empty token, a TLS file that cannot be
/// read or does not load, only one of the two TLS files, a Unix metrics
/// address; `TJ_STATUS_STORAGE` when an address cannot be bound (the port
/// is in use: the message names the address); `TJ_STATUS_CLOSED` when the
/// queue is closed.
///
/// # Safety
/// `queue` and `options` are NULL or live; `listen` is NULL or
/// NUL-terminated; `server_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_serve(
    queue: *const tj_queue,
    listen: *const c_char,
    options: *const tj_serve_options,
    server_out: *mut *mut tj_server,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_serve";
    boundary::run(F, err, || {
        let q = crate::queue::q(F, queue)?;
        let listen = opt_string(F, "listen", listen)?.unwrap_or(LISTEN_DEFAULT);
        let server_out = out(F, "server_out", server_out)?;
        let options = match unsafe { options.as_ref() } {
            Some(o) => o.to_serve(F, listen)?,
            None => tj_serve_options::defaults().to_serve(F, listen)?,
        };
        let h = telha_jobs_server::serve(q.queue.clone(), options).map_err(Failure::from)?;
        let server = tj_server {
            address: cstring(&h.address().to_string()),
            url: cstring(&h.url()),
            metrics_address: h.metrics_addr().map(|a| cstring(&a.to_string())),
            ui_url: h.ui_url().map(|u| cstring(&u)),
            handle: Mutex::new(Some(h)),
        };
        write(server_out, Box::into_raw(Box::new(server)));
        Ok(())
    })
}

/// The address the server listens on: `host:port` (the port it picked
/// when `listen` asked for port 0) or `unix:PATH`. Borrowed from `server`,
/// valid until `tj_server_close`; the same after a stop. NULL for a NULL
/// server.
///
/// # Safety
/// `server` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_server_address(server: *const tj_server) -> *const c_char {
    boundary::get(server, std::ptr::null(), |s| s.address.as_ptr())
}

/// The URL clients connect to: `http://host:port`, `https://host:port`
/// with TLS, or `unix:PATH`. Borrowed as `tj_server_address`.
///
/// # Safety
/// `server` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_server_url(server: *const tj_server) -> *const c_char {
    boundary::get(server, std::ptr::null(), |s| s.url.as_ptr())
}

/// `host:port` of the HTTP listener (`/metrics`, and the page when served
/// with `ui`), or NULL when there is none. Borrowed as `tj_server_address`.
///
/// # Safety
/// `server` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_server_metrics_address(server: *const tj_server) -> *const c_char {
    boundary::get(server, std::ptr::null(), |s| opt_ptr(&s.metrics_address))
}

/// The operator page's URL (`http://host:port/`), or NULL when it is not
/// served. Borrowed as `tj_server_address`.
///
/// # Safety
/// `server` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_server_ui_url(server: *const tj_server) -> *const c_char {
    boundary::get(server, std::ptr::null(), |s| opt_ptr(&s.ui_url))
}

/// Whether the server is serving (not stopped yet); false for NULL.
///
/// # Safety
/// `server` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_server_running(server: *const tj_server) -> bool {
    boundary::get(server, false, |s| {
        s.handle.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    })
}

/// Stop serving: refuse new calls, end lease waits and lease streams
/// (leases not yet delivered are released), let calls in flight finish
/// for up to `grace_ms`, then drop what is left. Blocks until the
/// server's threads have ended. The queue stays open. Idempotent; may be
/// called from any thread, also while another is in `tj_server_stop`
/// (that one does the stopping). The handle still needs
/// `tj_server_close`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_ARGUMENT` when
/// `grace_ms` is over `TJ_MAX_DURATION_MS` (nothing stopped).
///
/// # Safety
/// `server` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_server_stop(
    server: *const tj_server,
    grace_ms: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_server_stop";
    boundary::run(F, err, || {
        let s = handle(F, "server", server)?;
        if grace_ms > TJ_MAX_DURATION_MS {
            return Err(Failure::invalid(format!(
                "{F}: grace_ms {grace_ms} is over TJ_MAX_DURATION_MS"
            )));
        }
        if let Some(h) = s.take() {
            h.shutdown(Duration::from_millis(grace_ms));
        }
        Ok(())
    })
}

/// Stop the server (when still running, with `TJ_SERVER_GRACE_DEFAULT_MS`
/// for calls in flight; blocks until its threads have ended) and free it.
/// The queue stays open. NULL does nothing.
///
/// # Safety
/// `server` is NULL or a `tj_server` not freed before, and no other thread
/// is using it, now or later.
#[no_mangle]
pub unsafe extern "C" fn tj_server_close(server: *mut tj_server) {
    if let Some(s) = unsafe { server.as_ref() } {
        boundary::run_infallible((), || {
            if let Some(h) = s.take() {
                h.shutdown(Duration::from_millis(TJ_SERVER_GRACE_DEFAULT_MS));
            }
        });
    }
    boundary::free_box(server);
}
