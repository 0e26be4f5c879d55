//! [`RemoteQueue`]: a [`JobStore`] whose jobs live in a `telha serve`
//! server (or any host running `telha_jobs_server::serve`), with the same
//! methods, answers and error kinds as an embedded `telha_jobs::Queue`.
//!
//! ```no_run
//! use telha_jobs::{EnqueueOptions, JobStore, LeaseOptions};
//! use telha_jobs_client::{ConnectOptions, RemoteQueue};
//!
//! let q = RemoteQueue::connect("http://127.0.0.1:7450", ConnectOptions::default())?;
//! q.enqueue("embed", b"doc-42", EnqueueOptions::default())?;
//! if let Some(job) = q.lease_next("worker-1", &LeaseOptions::default())? {
//!     q.complete(&job.token(), Some(b"ok"))?;
//! }
//! # Ok::<(), telha_jobs::Error>(())
//! ```
//!
//! # Blocking
//!
//! Every method blocks the calling thread: the client owns a
//! current-thread tokio runtime that each call drives on the calling
//! thread (the request is written and the answer read there, with no
//! hand-off to another thread); a keeper thread drives the connection
//! between calls. Call it from plain threads (or a tokio `spawn_blocking`
//! closure), several at once if you like; called from inside a tokio
//! runtime's async context it does not block (which would panic or stall
//! that runtime) but answers `InvalidArgument` saying so.
//!
//! URLs: `http://host:port`, `https://host:port` (TLS) or `unix:PATH` (a
//! server's Unix-domain socket on this machine, `telha serve --listen
//! unix:PATH`).
//!
//! # Errors
//!
//! The server's answers map back onto the core's kinds exactly (the kind
//! travels with the status), with the server's message. What only the
//! network adds: an unreachable server, a lost connection, a server that is
//! shutting down or a call past its deadline is `Unavailable` naming the URL
//! (`timed out after 2.0 s waiting for http://…`): retryable, its outcome
//! unknown; a missing or wrong token (`UNAUTHENTICATED`) and a
//! request over the server's size limit are `InvalidArgument`; every call
//! after [`JobStore::close`] is `Closed`.
//!
//! # Deadlines
//!
//! Every call ends by its deadline whatever the server does (accepts and
//! never answers, stops reading, is paused): `connect` within
//! `connect_timeout` (TCP, TLS, the HTTP/2 handshake and one round trip);
//! a unary call within `request_timeout`; a long poll (`lease_next` with a
//! wait, `wait`, a `WaitJob` of a watch) within its wait plus
//! `request_timeout`; the opening of a `PollJobs` or `WatchEvents` stream
//! within `request_timeout`. An open stream and an idle connection are
//! pinged after `keep_alive_interval` of silence and dropped when the ping
//! goes unanswered for `keep_alive_timeout`: a silent stream ends with
//! `Unavailable` within their sum. See [`ConnectOptions::with_timeout`].

#![warn(missing_docs)]

mod deadline;
mod driver;
mod events;
mod schedules;
mod store;
mod stream;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use telha_jobs::{Error, LeaseOptions, Result};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;
use telha_jobs_proto::v1::jobs_client::JobsClient;
use tokio::sync::watch;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

pub use deadline::{KEEP_ALIVE_INTERVAL_DEFAULT, KEEP_ALIVE_MIN, KEEP_ALIVE_TIMEOUT_DEFAULT};
pub use stream::JobStream;

use deadline::{from_status, within};

/// How long `connect` waits for the server by default.
pub const CONNECT_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);
/// The default deadline of one call that does not wait for work.
pub const REQUEST_TIMEOUT_DEFAULT: Duration = Duration::from_secs(60);
/// The largest message the client sends or accepts.
pub const MESSAGE_LIMIT: usize = 1 << 30;
/// How often a waiting lease checks its `CancelWait`.
pub(crate) const CANCEL_POLL: Duration = Duration::from_millis(50);

/// How to connect. `ConnectOptions::default()`: no token, 10 s to connect,
/// 60 s per call, a ping after 10 s of silence answered within 10 s, public
/// web PKI roots for `https://`.
#[derive(Clone)]
pub struct ConnectOptions {
    /// Sent as `authorization: Bearer <token>` on every call.
    pub token: Option<String>,
    /// How long `connect` waits for the connection.
    pub connect_timeout: Duration,
    /// The deadline of one call (a waiting lease gets its wait on top);
    /// `None`: no deadline (a dead server is still noticed by keep-alive).
    pub request_timeout: Option<Duration>,
    /// How long the connection (idle, or a stream waiting for its next
    /// message) may go without a frame from the server before the client
    /// pings it.
    pub keep_alive_interval: Duration,
    /// How long a ping may go unanswered before the connection is dropped:
    /// its calls and streams fail with `Unavailable`, the next call reconnects.
    pub keep_alive_timeout: Duration,
    /// For `https://`: trust this CA certificate (PEM) instead of the
    /// public web PKI roots (e.g. a self-signed server certificate).
    pub ca_cert_pem: Option<Vec<u8>>,
    /// For `https://`: the name to check the certificate against, when it
    /// differs from the URL's host.
    pub tls_domain: Option<String>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            token: None,
            connect_timeout: CONNECT_TIMEOUT_DEFAULT,
            request_timeout: Some(REQUEST_TIMEOUT_DEFAULT),
            keep_alive_interval: KEEP_ALIVE_INTERVAL_DEFAULT,
            keep_alive_timeout: KEEP_ALIVE_TIMEOUT_DEFAULT,
            ca_cert_pem: None,
            tls_domain: None,
        }
    }
}

impl ConnectOptions {
    /// One `timeout` for everything, as the front ends' `timeout` /
    /// `timeoutMs` / `--timeout` give it: `connect` and each call get
    /// `timeout` (a long poll its wait on top), and a silent connection is
    /// pinged after `timeout` and dropped `timeout` later, both held between
    /// [`KEEP_ALIVE_MIN`] and their defaults (so with `timeout` 2 s a silent
    /// stream ends within 4 s; with 60 s, within 20 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self.request_timeout = Some(timeout);
        self.keep_alive_interval = timeout.clamp(KEEP_ALIVE_MIN, KEEP_ALIVE_INTERVAL_DEFAULT);
        self.keep_alive_timeout = timeout.clamp(KEEP_ALIVE_MIN, KEEP_ALIVE_TIMEOUT_DEFAULT);
        self
    }
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("keep_alive_interval", &self.keep_alive_interval)
            .field("keep_alive_timeout", &self.keep_alive_timeout)
            .field("ca_cert_pem", &self.ca_cert_pem.as_ref().map(Vec::len))
            .field("tls_domain", &self.tls_domain)
            .finish()
    }
}

#[derive(Clone)]
pub(crate) struct Auth(Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

pub(crate) type Client = JobsClient<InterceptedService<Channel, Auth>>;

pub(crate) struct Inner {
    pub(crate) url: String,
    rt: driver::Driver,
    pub(crate) client: Client,
    closed: AtomicBool,
    close_tx: watch::Sender<bool>,
    request_timeout: Option<Duration>,
}

/// A client of a telha-jobs server: the queue's operations over gRPC.
/// Clone + Send + Sync; clones share one connection (HTTP/2 multiplexes
/// concurrent calls from many threads).
#[derive(Clone)]
pub struct RemoteQueue {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for RemoteQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteQueue")
            .field("url", &self.inner.url)
            .field("closed", &self.inner.closed.load(Ordering::SeqCst))
            .finish()
    }
}

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// `Unavailable` naming the URL (`Storage` for an untrusted certificate),
/// with every cause in the chain (tonic's own message is often just
/// "transport error").
fn unreachable(url: &str, e: &dyn std::error::Error) -> Error {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg = format!("{msg}: {s}");
        src = s.source();
    }
    deadline::transport(format!("cannot reach telha server at {url}: {msg}"))
}

impl RemoteQueue {
    /// Connect to the server at `url` (`http://host:port`, `https://…`
    /// for TLS, or `unix:/path/to.sock` for a server's Unix-domain socket
    /// on this machine) and check that it answers (one `Get` of the nil job
    /// id: any answer of the server's, even a refused token, will do; the
    /// token is checked by the first real call, as before).
    ///
    /// Errors: `InvalidArgument` for a malformed URL, a scheme other than
    /// http/https/unix, a `unix:` URL without a path or with TLS settings,
    /// a token that is not a valid header value or TLS settings that do not
    /// load; `Unavailable` when the server cannot be reached within
    /// `connect_timeout` (the message names the URL).
    pub fn connect(url: &str, options: ConnectOptions) -> Result<RemoteQueue> {
        not_in_runtime()?;
        let url = url.trim().trim_end_matches('/').to_string();
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| invalid(format!("server URL {url:?}: {e}")))?;
        let unix = url.starts_with("unix:");
        let scheme = if unix {
            let path = url.trim_start_matches("unix:").trim_start_matches("//");
            if path.is_empty() {
                return Err(invalid(format!(
                    "server URL {url:?}: unix: needs a socket path (unix:/run/telha.sock)"
                )));
            }
            if options.ca_cert_pem.is_some() || options.tls_domain.is_some() {
                return Err(invalid(format!(
                    "server URL {url:?}: a Unix socket is served without TLS; \
                     ca_cert / tls_domain apply to https:// only"
                )));
            }
            "unix".to_string()
        } else {
            endpoint.uri().scheme_str().unwrap_or("").to_string()
        };
        if scheme != "http" && scheme != "https" && scheme != "unix" {
            return Err(invalid(format!(
                "server URL {url:?}: the scheme must be http://, https:// or unix:"
            )));
        }
        if !unix && endpoint.uri().host().is_none() {
            return Err(invalid(format!("server URL {url:?} has no host")));
        }
        endpoint = endpoint
            .connect_timeout(options.connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(options.keep_alive_interval)
            .keep_alive_timeout(options.keep_alive_timeout)
            .keep_alive_while_idle(true);
        if scheme == "https" {
            let mut tls = ClientTlsConfig::new();
            tls = match &options.ca_cert_pem {
                Some(pem) => tls.ca_certificate(Certificate::from_pem(pem)),
                None => tls.with_webpki_roots(),
            };
            if let Some(d) = &options.tls_domain {
                tls = tls.domain_name(d.clone());
            }
            endpoint = endpoint
                .tls_config(tls)
                .map_err(|e| invalid(format!("TLS settings for {url}: {e}")))?;
        }
        let auth = match &options.token {
            None => Auth(None),
            Some(t) => {
                Auth(Some(format!("Bearer {}", t.trim()).parse().map_err(
                    |_| invalid("the token is not a valid header value".into()),
                )?))
            }
        };
        let rt = driver::Driver::new()?;
        let timeout = options.connect_timeout;
        let client = rt.block_on(within(&url, Some(timeout), async {
            let channel = endpoint
                .connect()
                .await
                .map_err(|e| unreachable(&url, &e))?;
            let mut client = JobsClient::with_interceptor(channel, auth)
                .max_decoding_message_size(MESSAGE_LIMIT)
                .max_encoding_message_size(MESSAGE_LIMIT);
            // The TCP connect and HTTP/2 handshake succeed against anything
            // that accepts connections: one round trip proves a server.
            let probe = pb::GetRequest { id: vec![0; 16] };
            match client.get(probe).await {
                Ok(_) => Ok(client),
                // A status the server sent (no local cause): it answers.
                Err(s) if std::error::Error::source(&s).is_none() => Ok(client),
                Err(s) => Err(unreachable(&url, &s)),
            }
        }))??;
        let (close_tx, _) = watch::channel(false);
        Ok(RemoteQueue {
            inner: Arc::new(Inner {
                url,
                rt,
                client,
                closed: AtomicBool::new(false),
                close_tx,
                request_timeout: options.request_timeout,
            }),
        })
    }

    /// The server URL this client talks to.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Open a `PollJobs` stream: the server pushes leases (as `worker_id`,
    /// filtered by `options.scopes` / `options.kinds`) as they become ready,
    /// never more than `capacity` unsettled at once; a lease stops counting
    /// when it is completed, failed or released through this server, or
    /// lost. `options.wait` and `options.cancel` are not used: the stream
    /// waits until dropped.
    ///
    /// Errors: `InvalidArgument` for a bad worker id, filter or capacity
    /// (1 to [`telha_jobs::limits::MAX_BATCH`]); `Closed`; `Storage`.
    pub fn poll_jobs(
        &self,
        worker_id: &str,
        options: &LeaseOptions,
        capacity: u32,
    ) -> Result<JobStream> {
        let req = pb::PollJobsRequest {
            worker_id: worker_id.to_string(),
            scopes: cv::scopes_to_pb(&options.scopes),
            kinds: cv::kinds_to_pb(&options.kinds),
            capacity,
        };
        let mut c = self.client()?;
        let url = self.inner.url.clone();
        let limit = self.inner.request_timeout;
        let streaming = self.block(async move {
            within(&url, limit, async {
                c.poll_jobs(req)
                    .await
                    .map(tonic::Response::into_inner)
                    .map_err(|s| from_status(&s, &url))
            })
            .await
        })??;
        Ok(JobStream::new(self.clone(), streaming))
    }

    pub(crate) fn client(&self) -> Result<Client> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        Ok(self.inner.client.clone())
    }

    /// Run `f` in the background on this client's runtime.
    pub(crate) fn spawn<F>(&self, f: F) -> Result<tokio::task::JoinHandle<()>>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.client()?;
        self.inner.rt.spawn(f)
    }

    pub(crate) fn closed_rx(&self) -> watch::Receiver<bool> {
        self.inner.close_tx.subscribe()
    }

    /// Run `f` on the client's runtime, ending early (with `Closed`) when
    /// the client is closed meanwhile.
    pub(crate) fn block<T>(&self, f: impl std::future::Future<Output = T> + Send) -> Result<T> {
        not_in_runtime()?;
        let mut closed = self.closed_rx();
        self.inner.rt.block_on(async move {
            tokio::select! {
                r = f => Ok(r),
                _ = closed.wait_for(|c| *c) => Err(Error::Closed),
            }
        })?
    }

    /// One unary call with the request deadline, its status mapped.
    fn call<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>> + Send,
        T: Send,
    {
        let c = self.client()?;
        let url = &self.inner.url;
        let timeout = self.inner.request_timeout;
        let fut = f(c);
        self.block(within(url, timeout, async move {
            fut.await
                .map(tonic::Response::into_inner)
                .map_err(|s| from_status(&s, url))
        }))?
    }
}

/// A `block_on` inside a runtime's async context would panic (or stall its
/// worker): refuse with a typed error instead.
fn not_in_runtime() -> Result<()> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(invalid(
            "RemoteQueue blocks: call it from a plain thread or tokio::task::spawn_blocking, \
             not from inside an async task"
                .into(),
        ));
    }
    Ok(())
}
