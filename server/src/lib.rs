//! telha-jobs over gRPC: [`serve`] a [`Queue`] this process owns to workers
//! in other processes and on other machines (`telha serve` is this, plus a
//! store and signal handling).
//!
//! ```no_run
//! use telha_jobs::{Config, Queue};
//! use telha_jobs_server::{serve, ServeOptions};
//!
//! let q = Queue::open("/tmp/telha-served", Config::default())?;
//! let server = serve(q, ServeOptions::default())?; // 127.0.0.1:7450
//! println!("serving on {}", server.url());
//! // ... later:
//! server.shutdown(std::time::Duration::from_secs(5));
//! # Ok::<(), telha_jobs::Error>(())
//! ```
//!
//! The server runs on its own tokio runtime (two worker threads, on a
//! thread of its own), so any host can start it. A short core call (one
//! job, or a batch of at most 16) runs inline on the async worker when the
//! store does not fsync per write (`sync_writes = false`, the default): it
//! takes microseconds, less than a hand-off to the blocking pool and back.
//! Waiting leases, scans (list, stats, purge, ...), larger batches and
//! every call of a `sync_writes` store run on the blocking pool, as does
//! every call of [`serve_source`] (a cluster node: the queue is asked for
//! per call, and a follower answers `UNAVAILABLE` with the leader hint,
//! [`NotLeader`]). The server listens on TCP addresses and Unix-domain sockets
//! (`unix:/run/telha.sock`), one or several at once. The protocol is
//! `proto/telha/jobs/v1/jobs.proto`; clients are `telha-jobs-client`'s
//! `RemoteQueue`, or any gRPC client generated from that file.
//!
//! # Security
//!
//! A listener on a non-loopback address without a token is refused at
//! [`serve`] time (`InvalidArgument`): the queue accepts arbitrary work, so
//! it is never exposed without authentication by accident. A Unix socket
//! needs no token: its file mode ([`ServeOptions::socket_mode`], owner only
//! by default) decides who connects; it is served without TLS. With a token,
//! every RPC must carry `authorization: Bearer <token>` (compared in constant
//! time) or is answered `UNAUTHENTICATED`; the `/metrics` endpoint asks for
//! the same header then. TLS (rustls, ring) is on when a certificate and key
//! are given.

#![warn(missing_docs)]

mod auth;
mod backup;
mod control;
mod events;
mod fanin;
mod find;
mod health;
mod http;
pub mod json;
mod lease;
mod listen;
mod mount;
mod poll;
mod schedules;
mod service;
mod settle;
mod shared;
mod sigpipe;
mod source;
mod stats;
#[cfg(feature = "test-hooks")]
pub mod testing;
mod window;

/// What the test hooks (feature `test-hooks`) hand to [`run`]; nothing
/// without the feature.
#[cfg(feature = "test-hooks")]
type TestHooks = Option<Arc<testing::Hooks>>;
#[cfg(not(feature = "test-hooks"))]
struct TestHooks;
/// No hooks: what [`serve`] runs with.
#[cfg(feature = "test-hooks")]
const NO_HOOKS: TestHooks = None;
#[cfg(not(feature = "test-hooks"))]
const NO_HOOKS: TestHooks = TestHooks;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use telha_jobs::{Config, Error, Queue, Result};
use telha_jobs_proto::v1::jobs_server::JobsServer;
use tokio::sync::{oneshot, watch};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};

use listen::{Bound, UnixIncoming};
pub use listen::{ListenAddr, SOCKET_MODE_DEFAULT};
pub use mount::Mount;
pub use source::{NotLeader, QueueSource, LEADER_ID_METADATA, LEADER_URL_METADATA};
pub use stats::ServerStats;

/// The default listen address: loopback only, so no token is needed.
pub const LISTEN_DEFAULT: &str = "127.0.0.1:7450";
/// The HTTP listener of the operator page when [`ServeOptions::ui`] is on
/// and no [`ServeOptions::metrics_listen`] is given.
pub const UI_LISTEN_DEFAULT: &str = "127.0.0.1:7451";
/// The longest a `Lease` call waits for work, whatever the client asks
/// (the client simply asks again).
pub const MAX_WAIT_DEFAULT: Duration = Duration::from_secs(60);
/// The smallest request size limit; the actual one is this or the store's
/// `max_payload_bytes` plus 1 MiB of headroom, whichever is larger.
pub const MESSAGE_LIMIT_MIN: usize = 64 * 1024 * 1024;

/// A PEM certificate chain and its private key, for TLS.
#[derive(Clone)]
pub struct TlsPem {
    /// The certificate chain, PEM.
    pub cert_pem: Vec<u8>,
    /// The private key, PEM.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsPem")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// How to serve. `ServeOptions::default()` listens on [`LISTEN_DEFAULT`],
/// without token, TLS or metrics endpoint.
#[derive(Clone)]
pub struct ServeOptions {
    /// `host:port` to listen on; port 0 picks a free port (see
    /// [`ServerHandle::addresses`]). A non-loopback address needs `token`.
    /// `unix:PATH` listens on a Unix-domain socket instead.
    pub listen: String,
    /// More addresses to listen on at once, same syntax (a TCP port and a
    /// Unix socket, say); [`ServerHandle::addresses`] lists `listen` first.
    pub also_listen: Vec<String>,
    /// The permission bits of the Unix sockets it creates
    /// ([`SOCKET_MODE_DEFAULT`], `0o600`: the owner only).
    pub socket_mode: u32,
    /// The bearer token every call must carry; `None` accepts every call
    /// (loopback listeners only).
    pub token: Option<String>,
    /// Serve TLS with this certificate and key.
    pub tls: Option<TlsPem>,
    /// The plain-HTTP listener (`host:port`, same loopback/token rule):
    /// the Prometheus text at `/metrics`, and with [`ServeOptions::ui`] the
    /// operator page at `/` and its JSON API at `/api/v1/`. With `ui` and
    /// no address, [`UI_LISTEN_DEFAULT`].
    pub metrics_listen: Option<String>,
    /// Serve the operator web page and its JSON API (`/api/v1/`, described
    /// by `/api/v1/openapi.json`) on the HTTP listener. With a token, the
    /// page asks for it (a login form setting an HttpOnly, SameSite=Strict
    /// session cookie) and the API takes the bearer header too.
    pub ui: bool,
    /// The page and API show but refuse every action (`READ_ONLY`).
    pub ui_read_only: bool,
    /// The cap on one `Lease` call's wait ([`MAX_WAIT_DEFAULT`]).
    pub max_wait: Duration,
    /// Answer the `Backup` RPC over any connection. Off (the default), it
    /// is answered only over a Unix socket or a loopback TCP connection:
    /// it writes a copy of the store to a directory on the server's
    /// filesystem, which a token holder elsewhere should not choose.
    pub allow_remote_backup: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: LISTEN_DEFAULT.into(),
            also_listen: Vec::new(),
            socket_mode: SOCKET_MODE_DEFAULT,
            token: None,
            tls: None,
            metrics_listen: None,
            ui: false,
            ui_read_only: false,
            max_wait: MAX_WAIT_DEFAULT,
            allow_remote_backup: false,
        }
    }
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("listen", &self.listen)
            .field("also_listen", &self.also_listen)
            .field("socket_mode", &format_args!("{:o}", self.socket_mode))
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("tls", &self.tls)
            .field("metrics_listen", &self.metrics_listen)
            .field("ui", &self.ui)
            .field("ui_read_only", &self.ui_read_only)
            .field("max_wait", &self.max_wait)
            .field("allow_remote_backup", &self.allow_remote_backup)
            .finish()
    }
}

/// A running server. [`ServerHandle::shutdown`] stops it gracefully;
/// dropping the handle does the same with a 5 s grace. Neither closes the
/// queue: it belongs to the caller.
#[derive(Debug)]
pub struct ServerHandle {
    addresses: Vec<ListenAddr>,
    tls: bool,
    metrics_addr: Option<SocketAddr>,
    ui: bool,
    stop: Option<oneshot::Sender<Duration>>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<stats::ServerStats>,
}

impl ServerHandle {
    /// The first TCP address the gRPC service is bound to (the picked
    /// port when the listen address had port 0); `None` when it listens on
    /// Unix sockets only.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addresses.iter().find_map(|a| match a {
            ListenAddr::Tcp(t) => Some(*t),
            ListenAddr::Unix(_) => None,
        })
    }
    /// Every address the gRPC service listens on, `listen` first.
    pub fn addresses(&self) -> &[ListenAddr] {
        &self.addresses
    }
    /// Whether its TCP listeners serve TLS.
    pub fn tls(&self) -> bool {
        self.tls
    }
    /// The first one (`ServeOptions::listen`'s).
    pub fn address(&self) -> &ListenAddr {
        &self.addresses[0]
    }
    /// The URL clients connect to for [`ServerHandle::address`]:
    /// `http://host:port`, `https://host:port` with TLS, or `unix:PATH`.
    pub fn url(&self) -> String {
        self.address().url(self.tls)
    }
    /// The HTTP listener's address (`/metrics`, and the page with
    /// [`ServeOptions::ui`]), when there is one. It serves TLS when
    /// [`ServeOptions::tls`] is given (the same certificate).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }
    /// The operator page's URL (`http://host:port/`), when
    /// [`ServeOptions::ui`] is on.
    pub fn ui_url(&self) -> Option<String> {
        let scheme = if self.tls { "https" } else { "http" };
        self.metrics_addr
            .filter(|_| self.ui)
            .map(|a| format!("{scheme}://{a}/"))
    }
    /// The server's own counters (RPCs by method and code, open streams).
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }
    /// Stop gracefully: stop accepting connections, end every `PollJobs`
    /// stream and `Lease` wait (leases not yet delivered are released), let
    /// calls in flight (submits, heartbeats) finish, for at most `grace`;
    /// then drop what is left. Blocks until the server thread has ended.
    pub fn shutdown(mut self, grace: Duration) {
        self.stop_now(grace);
    }

    fn stop_now(&mut self, grace: Duration) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(grace);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_now(Duration::from_secs(5));
    }
}

/// Start serving `store` in this process, on a runtime thread of its own;
/// returns once the listeners are bound.
///
/// Errors: `InvalidArgument` for an unparsable address, a non-loopback
/// listener without a token, an empty token, a TLS certificate/key that
/// does not load, a Unix path that exists and is not a socket, a socket
/// mode over `0o777` or a Unix `/metrics` address; `Storage` when an
/// address cannot be bound (in use, a live server's socket at a Unix path
/// included: a stale one is replaced); `Closed` when the queue is closed.
pub fn serve(store: Queue, options: ServeOptions) -> Result<ServerHandle> {
    let config = store.config()?;
    serve_with(
        source::Source::Fixed(store),
        &config,
        options,
        Vec::new(),
        NO_HOOKS,
    )
}

/// Serve the queue `source` answers on each call (a cluster node's engine
/// of the current term: `telha serve --cluster`), with `mounts` beside the
/// Jobs service on every gRPC listener (the cluster's peer service).
/// `config` is the engines' configuration (the request size limit comes
/// from it). No core call runs inline on the async workers; a call the
/// source cannot answer gets `UNAVAILABLE` with the leader hint
/// ([`NotLeader`]). Errors: as [`serve`].
pub fn serve_source(
    source: Arc<dyn QueueSource>,
    config: &Config,
    options: ServeOptions,
    mounts: Vec<Mount>,
) -> Result<ServerHandle> {
    serve_with(
        source::Source::Dynamic(source),
        config,
        options,
        mounts,
        NO_HOOKS,
    )
}

fn serve_with(
    source: source::Source,
    config: &Config,
    options: ServeOptions,
    mounts: Vec<Mount>,
    hooks: TestHooks,
) -> Result<ServerHandle> {
    if options
        .token
        .as_deref()
        .is_some_and(|t| t.trim().is_empty())
    {
        return Err(Error::InvalidArgument("the token is empty".into()));
    }
    let limit = config
        .max_payload_bytes
        .saturating_add(1 << 20)
        .max(MESSAGE_LIMIT_MIN);
    let has_token = options.token.is_some();
    let mut grpc = Vec::new();
    let mut addresses = Vec::new();
    for a in std::iter::once(&options.listen).chain(&options.also_listen) {
        let (b, at) = listen::bind("gRPC", a, has_token, options.socket_mode)?;
        grpc.push(b);
        addresses.push(at);
    }
    let http_listen = match (&options.metrics_listen, options.ui) {
        (None, true) => Some(UI_LISTEN_DEFAULT.to_string()),
        (a, _) => a.clone(),
    };
    let metrics = match &http_listen {
        Some(a) if listen::unix_path(a.trim()).is_some() => {
            return Err(Error::InvalidArgument(format!(
                "HTTP address {a:?}: /metrics and the page are served over TCP only (host:port)"
            )))
        }
        Some(a) => match listen::bind("HTTP", a, has_token, options.socket_mode)? {
            (Bound::Tcp(l), _) => Some(l),
            (Bound::Unix(..), _) => None,
        },
        None => None,
    };
    let metrics_addr = metrics.as_ref().and_then(|l| l.local_addr().ok());
    // The HTTP listener serves TLS with the gRPC listeners' certificate.
    let http_tls = match (&metrics, &options.tls) {
        (Some(_), Some(pem)) => Some(http::tls::acceptor(pem)?),
        _ => None,
    };

    // Plain HTTP/2 for Unix sockets (never TLS: the socket does not leave
    // the machine); TCP listeners get TLS when it is configured.
    let plain = Server::builder()
        .tcp_nodelay(true)
        .http2_keepalive_interval(Some(Duration::from_secs(20)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)));
    let mut builder = plain.clone();
    if let Some(tls) = &options.tls {
        builder = builder
            .tls_config(
                ServerTlsConfig::new().identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem)),
            )
            .map_err(|e| Error::InvalidArgument(format!("TLS certificate or key: {e}")))?;
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("telha-server")
        .on_thread_start(sigpipe::block_on_this_thread)
        .enable_all()
        .build()
        .map_err(|e| Error::Storage(format!("server runtime: {e}")))?;
    let stats = Arc::new(ServerStats::default());
    let (closing_tx, closing_rx) = watch::channel(false);
    let mut shared = service::Shared::new(source, stats.clone(), closing_rx, options.max_wait);
    shared.allow_remote_backup = options.allow_remote_backup;
    let shared = Arc::new(shared);
    let token = options.token.clone();
    let http_setup = HttpSetup {
        ui: options
            .ui
            .then_some((options.token.is_some(), options.ui_read_only)),
        tls: http_tls,
    };
    let (stop_tx, stop_rx) = oneshot::channel::<Duration>();

    let thread = std::thread::Builder::new()
        .name("telha-server".into())
        .spawn(move || {
            sigpipe::block_on_this_thread();
            let grace = rt.block_on(run(
                shared,
                [builder, plain],
                grpc,
                metrics,
                token,
                http_setup,
                limit,
                mounts,
                closing_tx,
                stop_rx,
                hooks,
            ));
            rt.shutdown_timeout(grace);
        })
        .map_err(|e| Error::Storage(format!("server thread: {e}")))?;

    Ok(ServerHandle {
        addresses,
        tls: options.tls.is_some(),
        metrics_addr,
        ui: options.ui,
        stop: Some(stop_tx),
        thread: Some(thread),
        stats,
    })
}

/// What the HTTP listener serves besides `/metrics`.
struct HttpSetup {
    /// The page: (a token is required, read-only).
    ui: Option<(bool, bool)>,
    tls: Option<http::tls::TlsAcceptor>,
}

#[allow(clippy::too_many_arguments)]
async fn run(
    shared: Arc<service::Shared>,
    [builder, plain]: [Server; 2],
    grpc: Vec<Bound>,
    metrics: Option<std::net::TcpListener>,
    token: Option<String>,
    http_setup: HttpSetup,
    limit: usize,
    mounts: Vec<Mount>,
    closing: watch::Sender<bool>,
    stop: oneshot::Receiver<Duration>,
    hooks: TestHooks,
) -> Duration {
    let check = auth::Check::new(token.as_deref());
    let svc = InterceptedService::new(
        JobsServer::new(service::JobsService::new(shared.clone()))
            .max_decoding_message_size(limit)
            .max_encoding_message_size(usize::MAX),
        {
            let check = check.clone();
            move |req| check.grpc(req)
        },
    );
    #[cfg(feature = "test-hooks")]
    let svc = testing::Hooked::new(svc, hooks);
    #[cfg(not(feature = "test-hooks"))]
    let TestHooks = hooks;
    // The health service beside it, outside the token check (a probe
    // cannot send one).
    let svc = health::WithHealth::new(svc, health::Health::server(shared.clone()));
    // More services beside them (the cluster's peer service), each with
    // its own credentials check: `serve_source`'s `mounts`.
    let svc = mount::WithMounts::new(svc, mounts);

    let (quit_tx, quit_rx) = watch::channel(false);
    let mut servers = Vec::new();
    for b in grpc {
        let (svc, mut quit) = (svc.clone(), quit_rx.clone());
        let quit = async move {
            let _ = quit.wait_for(|q| *q).await;
        };
        servers.push(match b {
            Bound::Tcp(l) => {
                let Ok(l) = tokio::net::TcpListener::from_std(l) else {
                    continue;
                };
                let incoming = TcpIncoming::from(l).with_nodelay(Some(true));
                let b = builder.clone();
                tokio::spawn(async move {
                    let _ = b.serve_with_incoming_shutdown(svc, incoming, quit).await;
                })
            }
            Bound::Unix(l, file) => {
                let Ok(listener) = tokio::net::UnixListener::from_std(l) else {
                    continue;
                };
                let incoming = UnixIncoming {
                    listener,
                    _file: file,
                };
                let b = plain.clone();
                tokio::spawn(async move {
                    let _ = b.serve_with_incoming_shutdown(svc, incoming, quit).await;
                })
            }
        });
    }
    let metrics_task = metrics.and_then(|l| {
        let l = tokio::net::TcpListener::from_std(l).ok()?;
        let secure = http_setup.tls.is_some();
        let ui = http_setup.ui.map(|(required, read_only)| {
            Arc::new(http::Ui::new(check.clone(), required, read_only, secure))
        });
        let http = Arc::new(http::Http {
            shared: shared.clone(),
            check,
            ui,
            tls: http_setup.tls,
        });
        Some(tokio::spawn(http::serve(l, http, quit_rx.clone())))
    });

    // Until the handle asks (or is dropped: then a default grace).
    let grace = stop.await.unwrap_or(Duration::from_secs(5));
    let _ = closing.send(true); // ends PollJobs streams and Lease waits
    let _ = quit_tx.send(true); // stop accepting; in-flight calls finish
    if let Some(m) = metrics_task {
        m.abort();
    }
    let all = async {
        for s in servers {
            let _ = s.await;
        }
    };
    let _ = tokio::time::timeout(grace, all).await;
    grace
}
