//! Queues in other processes: `NativeQueue.connect` (a queue over a
//! `telha serve` server, through `telha_jobs_client::RemoteQueue`) and
//! `NativeServer` (this process serving a queue it has open, through
//! `telha_jobs_server::serve`). A remote queue is the same `NativeQueue`
//! as an embedded one: both hold an `Arc<dyn JobStore>`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::{AsyncTask, Env, Undefined};
use napi_derive::napi;
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use telha_jobs_server::{ServeOptions, ServerHandle, TlsPem};

use crate::args::setting_ms;
use crate::errors::Failure;
use crate::queue::NativeQueue;
use crate::task::{guard, Op};

/// Options of `NativeQueue.connect`.
#[napi(object)]
pub struct NativeConnectOptions {
    pub token: Option<String>,
    pub timeout_ms: Option<f64>,
    pub ca_cert: Option<String>,
    pub auto_idempotency_key: Option<bool>,
}

/// Options of `NativeQueue.serve`.
#[napi(object)]
pub struct NativeServeOptions {
    pub listen: Option<String>,
    pub token: Option<String>,
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    pub metrics_listen: Option<String>,
    pub ui: Option<bool>,
    pub ui_read_only: Option<bool>,
}

/// How long a collected server lets calls in flight finish.
const CLOSE_GRACE_DEFAULT: Duration = Duration::from_secs(5);

fn read_pem(path: &str, what: &str) -> Result<Vec<u8>, Failure> {
    std::fs::read(path)
        .map_err(|e| Failure::Invalid(format!("{what}: cannot read PEM file {path}: {e}")))
}

// Field by field: `ServeOptions` may grow fields.
#[allow(clippy::field_reassign_with_default)]
fn serve_options(o: NativeServeOptions) -> Result<ServeOptions, Failure> {
    let tls = match (o.tls_cert, o.tls_key) {
        (None, None) => None,
        (Some(cert), Some(key)) => Some(TlsPem {
            cert_pem: read_pem(&cert, "tlsCert")?,
            key_pem: read_pem(&key, "tlsKey")?,
        }),
        _ => {
            return Err(Failure::Invalid(
                "tlsCert and tlsKey go together: give both PEM files, or neither".into(),
            ))
        }
    };
    let mut s = ServeOptions::default();
    if let Some(l) = o.listen {
        s.listen = l;
    }
    s.token = o.token;
    s.tls = tls;
    s.metrics_listen = o.metrics_listen;
    s.ui = o.ui.unwrap_or(false);
    s.ui_read_only = o.ui_read_only.unwrap_or(false);
    Ok(s)
}

#[napi]
impl NativeQueue {
    /// Connect to a `telha serve` server at `url` (`http://host:port`,
    /// `https://…`, or `unix:/path/to.sock` for its Unix socket), or to the
    /// first of a comma-separated list that answers.
    #[napi(ts_return_type = "Promise<NativeQueue>")]
    pub fn connect(
        env: Env,
        url: String,
        options: Option<NativeConnectOptions>,
    ) -> napi::Result<AsyncTask<Op<RemoteQueue, NativeQueue>>> {
        guard(&env, "connect", || {
            let mut o = ConnectOptions::default();
            if let Some(opts) = options {
                o.token = opts.token;
                if let Some(t) = opts.timeout_ms {
                    o = o.with_timeout(setting_ms(t, "timeoutMs")?);
                }
                if let Some(ca) = opts.ca_cert {
                    o.ca_cert_pem = Some(read_pem(&ca, "caCert")?);
                }
                if let Some(k) = opts.auto_idempotency_key {
                    o.auto_idempotency_key = k;
                }
            }
            if o.token.is_none() {
                o.token = std::env::var("TELHA_TOKEN").ok().filter(|t| !t.is_empty());
            }
            Ok(Op::task(
                "connect",
                move || Ok(RemoteQueue::connect(&url, o)?),
                |q| NativeQueue::from_store(Arc::new(q)),
            ))
        })
    }

    /// Serve this embedded queue over gRPC from this process.
    #[napi(ts_return_type = "Promise<NativeServer>")]
    pub fn serve(
        &self,
        env: Env,
        options: Option<NativeServeOptions>,
    ) -> napi::Result<AsyncTask<Op<(ServerHandle, bool), NativeServer>>> {
        guard(&env, "serve", || {
            let store = self.store();
            // The server's threads write too: calls stay off the loop.
            self.serving
                .store(true, std::sync::atomic::Ordering::Relaxed);
            let Some(q) = store.as_local().cloned() else {
                let at = store.location().unwrap_or_default();
                return Err(Failure::Invalid(format!(
                    "serve needs an embedded queue; this one is a client of {at}"
                )));
            };
            let options = serve_options(options.unwrap_or(NativeServeOptions {
                listen: None,
                token: None,
                tls_cert: None,
                tls_key: None,
                metrics_listen: None,
                ui: None,
                ui_read_only: None,
            }))?;
            let tls = options.tls.is_some();
            Ok(Op::task(
                "serve",
                move || Ok((telha_jobs_server::serve(q, options)?, tls)),
                NativeServer::new,
            ))
        })
    }
}

/// A running server (`Queue.serve`). Dropped (garbage-collected) or
/// closed, it stops; the queue stays open.
#[napi]
pub struct NativeServer {
    handle: Arc<Mutex<Option<ServerHandle>>>,
    address: String,
    metrics_address: Option<String>,
    ui_url: Option<String>,
    tls: bool,
}

impl NativeServer {
    fn new((h, tls): (ServerHandle, bool)) -> Self {
        NativeServer {
            address: h.address().to_string(),
            metrics_address: h.metrics_addr().map(|a| a.to_string()),
            ui_url: h.ui_url(),
            tls,
            handle: Arc::new(Mutex::new(Some(h))),
        }
    }
}

impl Drop for NativeServer {
    /// A server garbage-collected without `close()` stops on a thread of
    /// its own: shutting down waits for calls in flight, and the JS thread
    /// (where finalizers run) must not block.
    fn drop(&mut self) {
        let handle = self.handle.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = handle {
            let _ = std::thread::Builder::new()
                .name("telha-server-stop".into())
                .spawn(move || h.shutdown(CLOSE_GRACE_DEFAULT));
        }
    }
}

#[napi]
impl NativeServer {
    /// `host:port` it listens on.
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.address.clone()
    }

    /// `host:port` of the `/metrics` endpoint, when one was asked for.
    #[napi(getter)]
    pub fn metrics_address(&self) -> Option<String> {
        self.metrics_address.clone()
    }

    /// The operator web page's URL, when served with `ui`.
    #[napi(getter)]
    pub fn ui_url(&self) -> Option<String> {
        self.ui_url.clone()
    }

    /// Whether it serves TLS.
    #[napi(getter)]
    pub fn tls(&self) -> bool {
        self.tls
    }

    /// Whether `close()` has not been called.
    #[napi(getter)]
    pub fn running(&self) -> bool {
        self.handle.lock().is_ok_and(|h| h.is_some())
    }

    /// Stop serving; calls in flight get `graceMs` to finish.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self, env: Env, grace_ms: f64) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "Server.close", || {
            let grace = setting_ms(grace_ms, "graceMs")?;
            let handle = self.handle.clone();
            Ok(Op::task(
                "Server.close",
                move || {
                    let h = handle.lock().ok().and_then(|mut h| h.take());
                    if let Some(h) = h {
                        h.shutdown(grace);
                    }
                    Ok(())
                },
                |_| (),
            ))
        })
    }
}
