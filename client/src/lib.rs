//! [`RemoteQueue`]: a [`JobStore`](telha_jobs::JobStore) whose jobs live in a `telha serve`
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
//! unix:PATH`), or a comma-separated list of them
//! (`http://a:7450,http://b:7450`, at most [`MAX_ENDPOINTS`]).
//!
//! # Retries
//!
//! A call whose outcome is unknown (the transport failed after the request
//! may have been sent) or that the server answered `Unavailable` is
//! repeated with jittered backoff ([`BACKOFF_BASE`] doubling to
//! [`BACKOFF_MAX`]) until its deadline, on the next server of the list,
//! or on the one a `telha-leader` hint names ([`LEADER_TRAILER`]). What is
//! repeated: settles and their `_many` forms (a repeat is answered from
//! the record, as the first attempt was), extend and heartbeat, leases and
//! long polls (for what is left of the wait; a lost lease reply leaves a
//! lease that expires: late, never lost), reads, and control operations
//! (a repeat that finds its own work done, a deleted job or schedule, a
//! cancelled or retried job, answers success rather than `NotFound` or
//! `WrongState`). An enqueue is repeated only when every job carries an
//! idempotency key; with two or more servers the client gives unkeyed
//! enqueues a UUIDv7 key ([`ConnectOptions::auto_idempotency_key`]
//! opts out). An unkeyed enqueue that may have taken effect answers
//! `Unavailable` saying so. A `PollJobs` stream that loses its connection
//! is opened again (within the request timeout). Event subscriptions
//! (`WatchEvents`) are not resumed: they end, as before. Every repeat is
//! counted ([`RemoteQueue::retries`], `telha_client_retries_total{reason}`
//! at the end of [`JobStore::metrics`](telha_jobs::JobStore::metrics)'s
//! text) and logged at debug level (`tracing`, target
//! `telha_jobs_client`).
//!
//! # Errors
//!
//! The server's answers map back onto the core's kinds exactly (the kind
//! travels with the status), with the server's message. What only the
//! network adds: an unreachable server, a lost connection that was not
//! repeated, or a call past its deadline is `Unavailable` naming the URL
//! (`timed out after 2.0 s waiting for http://…`); a missing or wrong token (`UNAUTHENTICATED`) and a
//! request over the server's size limit are `InvalidArgument`; every call
//! after [`JobStore::close`](telha_jobs::JobStore::close) is `Closed`.
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
//! `Storage` within their sum. See [`ConnectOptions::with_timeout`].

#![warn(missing_docs)]

mod backup;
mod control;
mod deadline;
mod driver;
mod endpoints;
mod events;
mod fanin;
mod find;
mod retry;
mod schedules;
mod store;
mod stream;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs::{Error, LeaseOptions, Result};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;
use telha_jobs_proto::v1::jobs_client::JobsClient;
use tokio::sync::watch;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

pub use deadline::{KEEP_ALIVE_INTERVAL_DEFAULT, KEEP_ALIVE_MIN, KEEP_ALIVE_TIMEOUT_DEFAULT};
pub use endpoints::MAX_ENDPOINTS;
pub use retry::{RetryReason, BACKOFF_BASE, BACKOFF_MAX, LEADER_TRAILER};
pub use stream::JobStream;

use retry::{unavailable, Safe};

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
    /// its calls and streams fail with `Storage`, the next call reconnects.
    pub keep_alive_timeout: Duration,
    /// For `https://`: trust this CA certificate (PEM) instead of the
    /// public web PKI roots (e.g. a self-signed server certificate).
    pub ca_cert_pem: Option<Vec<u8>>,
    /// For `https://`: the name to check the certificate against, when it
    /// differs from the URL's host.
    pub tls_domain: Option<String>,
    /// With a list of two or more servers, give every enqueue that has no
    /// idempotency key a fresh UUIDv7 one, so that an enqueue whose reply
    /// was lost can be repeated without a duplicate (default `true`).
    /// `false`: unkeyed enqueues are repeated only when they certainly
    /// never reached a server. One server: no key is added.
    pub auto_idempotency_key: bool,
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
            auto_idempotency_key: true,
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
            .field("auto_idempotency_key", &self.auto_idempotency_key)
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
    pub(crate) endpoints: endpoints::Endpoints,
    rt: driver::Driver,
    closed: AtomicBool,
    close_tx: watch::Sender<bool>,
    pub(crate) request_timeout: Option<Duration>,
    /// Give unkeyed enqueues a UUIDv7 key (a list of 2+ servers, and the
    /// caller did not opt out).
    pub(crate) auto_key: bool,
    pub(crate) retries: retry::RetryStats,
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
            .field("url", &self.url())
            .field("closed", &self.inner.closed.load(Ordering::SeqCst))
            .finish()
    }
}

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// The causes of a transport error, joined (tonic's own message is often
/// just "transport error").
fn causes(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !msg.contains(&t) {
            msg = format!("{msg}: {t}");
        }
        src = s.source();
    }
    msg
}

/// Try the list in order until a server answers the probe, for at most
/// `timeout`; the one that answered becomes current.
async fn probe(eps: &endpoints::Endpoints, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut last = String::new();
    for n in 0.. {
        for i in 0..eps.listed() {
            eps.set(i);
            let (_, url, mut client) = eps.current();
            let left = deadline.saturating_duration_since(Instant::now());
            let probe = pb::GetRequest { id: vec![0; 16] };
            match tokio::time::timeout(left, client.get(probe)).await {
                Ok(Ok(_)) => return Ok(()),
                // A status the server sent (no local cause): it answers.
                Ok(Err(s)) if std::error::Error::source(&s).is_none() => return Ok(()),
                Ok(Err(s)) => {
                    last = format!("cannot reach telha server at {url}: {}", causes(&s));
                    // A TLS peer the client does not trust: no retry
                    // fixes that, so it is answered at once (`Storage`).
                    if let e @ Error::Storage(_) = deadline::transport(last.clone()) {
                        return Err(e);
                    }
                }
                Err(_) => {
                    last = format!(
                        "timed out after {:.1} s waiting for {url}",
                        timeout.as_secs_f64()
                    )
                }
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(retry::backoff(n).min(left)).await;
    }
    eps.set(0);
    Err(unavailable(if eps.listed() == 1 {
        last
    } else {
        format!(
            "no telha server of {} answered within {:.1} s; the last: {last}",
            eps.urls().join(","),
            timeout.as_secs_f64()
        )
    }))
}

impl RemoteQueue {
    /// Connect to the server at `url`, or to the first of a
    /// comma-separated list of servers that answers
    /// (`http://a:7450,http://b:7450`): each `http://host:port`,
    /// `https://…` for TLS, or `unix:/path/to.sock` for a server's
    /// Unix-domain socket on this machine. A server answers when one `Get`
    /// of the nil job id gets any answer of its own (even a refused token;
    /// the token is checked by the first real call). The list is tried in
    /// order, again and again with jittered backoff, until
    /// `connect_timeout` has passed.
    ///
    /// Later calls go to the server that answered; when its transport
    /// fails or it answers `Unavailable`, a call moves to the next server
    /// of the list, or to the one a `telha-leader` hint names, and is
    /// repeated within its deadline when that is safe (see the crate docs,
    /// "Retries").
    ///
    /// Errors: `InvalidArgument` naming the item for an empty item, a
    /// repeated URL or more than [`MAX_ENDPOINTS`] of them, a malformed
    /// URL, a scheme other than http/https/unix, a `unix:` URL without a
    /// path or with TLS settings; also a token that is not a valid header
    /// value or TLS settings that do not load; `Unavailable` when no server
    /// answered within `connect_timeout` (the message names the URLs).
    pub fn connect(url: &str, options: ConnectOptions) -> Result<RemoteQueue> {
        not_in_runtime()?;
        let urls = endpoints::parse_list(url, &options)?;
        let auth = match &options.token {
            None => Auth(None),
            Some(t) => {
                Auth(Some(format!("Bearer {}", t.trim()).parse().map_err(
                    |_| invalid("the token is not a valid header value".into()),
                )?))
            }
        };
        let rt = driver::Driver::new()?;
        let endpoints = {
            let _in = rt.enter()?;
            endpoints::Endpoints::new(&urls, &options, auth)?
        };
        let timeout = options.connect_timeout;
        rt.block_on(probe(&endpoints, timeout))??;
        let (close_tx, _) = watch::channel(false);
        Ok(RemoteQueue {
            inner: Arc::new(Inner {
                endpoints,
                rt,
                closed: AtomicBool::new(false),
                close_tx,
                request_timeout: options.request_timeout,
                auto_key: options.auto_idempotency_key && urls.len() > 1,
                retries: retry::RetryStats::default(),
            }),
        })
    }

    /// The server URL this client talks to now (the list's first that
    /// answered, or the one it moved to since).
    pub fn url(&self) -> String {
        self.inner.endpoints.current().1
    }

    /// Every server URL the list named, in order.
    pub fn urls(&self) -> Vec<String> {
        self.inner.endpoints.urls()
    }

    /// How many calls this client repeated for `reason` since it connected.
    pub fn retries(&self, reason: RetryReason) -> u64 {
        self.inner.retries.get(reason)
    }

    /// This client's own counters as Prometheus text
    /// (`telha_client_retries_total{reason}`); [`JobStore::metrics`] of a
    /// `RemoteQueue` appends them to the server's.
    ///
    /// [`JobStore::metrics`]: telha_jobs::JobStore::metrics
    pub fn client_metrics(&self) -> String {
        self.inner.retries.text()
    }

    /// Open a `PollJobs` stream: the server pushes leases (as `worker_id`,
    /// filtered by `options.scopes` / `options.kinds`) as they become ready,
    /// never more than `capacity` unsettled at once; a lease stops counting
    /// when it is completed, failed or released through this server, or
    /// lost. `options.wait` and `options.cancel` are not used: the stream
    /// waits until closed ([`JobStream::close`], which leaves no lease with
    /// nobody) or dropped.
    ///
    /// Errors: `InvalidArgument` for a bad worker id, filter or capacity
    /// (1 to [`telha_jobs::limits::MAX_BATCH`]); `Closed`; `Storage`.
    pub fn poll_jobs(
        &self,
        worker_id: &str,
        options: &LeaseOptions,
        capacity: u32,
    ) -> Result<JobStream> {
        self.poll_jobs_window(worker_id, options, capacity, None)
    }

    /// [`RemoteQueue::poll_jobs`] with a window that follows the handlers:
    /// the server keeps at most `clamp(ceil(settle rate * 100 ms), floor,
    /// capacity)` leases unsettled, so a worker with slow handlers holds
    /// about `floor` (its concurrency) and leaves the rest of a backlog to
    /// other workers, and one with fast handlers leases up to `capacity`.
    /// `floor` `None`: a fixed window of `capacity` (as `poll_jobs`).
    ///
    /// Errors: as `poll_jobs`, and `InvalidArgument` for a floor outside 1
    /// to `capacity` (from a server that knows the field; an older one
    /// ignores it and keeps the fixed window).
    pub fn poll_jobs_window(
        &self,
        worker_id: &str,
        options: &LeaseOptions,
        capacity: u32,
        floor: Option<u32>,
    ) -> Result<JobStream> {
        let req = pb::PollJobsRequest {
            worker_id: worker_id.to_string(),
            scopes: cv::scopes_to_pb(&options.scopes),
            kinds: cv::kinds_to_pb(&options.kinds),
            capacity,
            floor,
            window_ms: None,
        };
        let (streaming, id) = self.open_poll(&req)?;
        Ok(JobStream::new(self.clone(), req, streaming, id))
    }

    /// Open a `PollJobs` stream (the server's response headers), retried
    /// as a lease is, within the request timeout; with the stream's id
    /// (its `telha-poll-stream` header, for `StopPoll`) and the connection
    /// it is on, when the server sent one (an older server does not).
    pub(crate) fn open_poll(
        &self,
        req: &pb::PollJobsRequest,
    ) -> Result<(
        tonic::Streaming<pb::PollJobsResponse>,
        Option<stream::StopHandle>,
    )> {
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move {
                let on = c.clone();
                let resp = c.poll_jobs(r).await?;
                let id = resp
                    .metadata()
                    .get(stream::STREAM_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                Ok(tonic::Response::new((
                    resp.into_inner(),
                    id.map(|id| (id, on)),
                )))
            }
        })
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// The current endpoint's client, for the calls that are not retried
    /// (event streams).
    pub(crate) fn client(&self) -> Result<Client> {
        self.check_open()?;
        Ok(self.inner.endpoints.current().2)
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

    /// One unary call with the request deadline, its status mapped,
    /// repeated as `safe` allows (retry.rs).
    pub(crate) fn call<T, F, Fut>(&self, safe: Safe, f: F) -> Result<T>
    where
        F: Fn(Client) -> Fut + Send,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>> + Send,
        T: Send,
    {
        self.call_repeat(safe, self.inner.request_timeout, f).result
    }

    /// [`RemoteQueue::call`] with its own deadline, saying whether an
    /// earlier attempt may have taken effect.
    pub(crate) fn call_repeat<T, F, Fut>(
        &self,
        safe: Safe,
        limit: Option<Duration>,
        f: F,
    ) -> retry::Outcome<T>
    where
        F: Fn(Client) -> Fut + Send,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>> + Send,
        T: Send,
    {
        if let Err(e) = self.check_open() {
            return retry::Outcome {
                result: Err(e),
                repeated: false,
            };
        }
        match self.block(self.retried(safe, limit, f)) {
            Ok(o) => o,
            Err(e) => retry::Outcome {
                result: Err(e),
                repeated: false,
            },
        }
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
