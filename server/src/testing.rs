//! Test hooks (cargo feature `test-hooks`, never built into `telha serve`):
//! faults a client's retries must survive, injected at the server.
//!
//! - [`serve_hooked`]: a server whose [`Hooks`] can drop the reply of the
//!   next calls of a method *after* the handler ran (the work is durable,
//!   the stream is reset before the answer leaves): the lost reply of a
//!   connection that dropped at the worst moment.
//! - [`UnavailableStub`]: a server that answers every call `Unavailable`
//!   with a `telha-leader` hint, as a follower of a cluster will.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;

use telha_jobs::{Error, Queue, Result};
use tokio::sync::oneshot;
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;
use tonic::Status;

use crate::{ServeOptions, ServerHandle};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Which replies to drop. Methods are named as in the proto (`Submit`,
/// `SubmitMany`, `Release`, `Enqueue`, ...).
#[derive(Default, Debug)]
pub struct Hooks {
    armed: Mutex<HashMap<String, usize>>,
    dropped: AtomicUsize,
}

impl Hooks {
    /// Fresh hooks, nothing armed.
    pub fn new() -> Arc<Hooks> {
        Arc::new(Hooks::default())
    }

    /// Drop the replies of the next `n` calls of `method` (each runs to
    /// completion first).
    pub fn drop_replies(&self, method: &str, n: usize) {
        *self
            .armed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(method.to_string())
            .or_default() += n;
    }

    /// How many replies were dropped so far.
    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Whether the call at `path` (`/telha.jobs.v1.Jobs/Submit`) loses its
    /// reply; counts it down.
    fn take(&self, path: &str) -> bool {
        let method = path.rsplit('/').next().unwrap_or("");
        let mut armed = self.armed.lock().unwrap_or_else(|p| p.into_inner());
        match armed.get_mut(method) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }
}

/// The error that makes the HTTP/2 layer reset the call's stream.
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("reply dropped by a test hook")
    }
}

impl std::error::Error for Dropped {}

/// The gRPC service with the hooks in front.
#[derive(Clone)]
pub(crate) struct Hooked<S> {
    inner: S,
    hooks: Option<Arc<Hooks>>,
}

impl<S> Hooked<S> {
    pub(crate) fn new(inner: S, hooks: Option<Arc<Hooks>>) -> Self {
        Hooked { inner, hooks }
    }
}

impl<S: NamedService> NamedService for Hooked<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<Request<B>> for Hooked<S>
where
    S: Service<Request<B>> + Send,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<S::Response, BoxError>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let hooks = self.hooks.clone().filter(|h| h.take(req.uri().path()));
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await.map_err(Into::into)?;
            match hooks {
                None => Ok(resp),
                Some(h) => {
                    // The handler ran (the answer is built): lose it.
                    h.dropped.fetch_add(1, Ordering::SeqCst);
                    drop(resp);
                    Err(Box::new(Dropped) as BoxError)
                }
            }
        })
    }
}

/// [`crate::serve`] with `hooks` in front of every call.
pub fn serve_hooked(
    store: Queue,
    options: ServeOptions,
    hooks: Arc<Hooks>,
) -> Result<ServerHandle> {
    let config = store.config()?;
    crate::serve_with(
        crate::source::Source::Fixed(store),
        &config,
        options,
        Vec::new(),
        Some(hooks),
    )
}

/// A server (on `127.0.0.1`, a port of its own) answering every call
/// `UNAVAILABLE` with the kind trailer and, when given, a `telha-leader`
/// hint. Stops when dropped.
pub struct UnavailableStub {
    url: String,
    calls: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl UnavailableStub {
    /// Start it; `leader` is the hint it sends (`None`: no hint).
    pub fn start(leader: Option<&str>) -> Result<UnavailableStub> {
        let l = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::Storage(format!("stub listener: {e}")))?;
        l.set_nonblocking(true)
            .map_err(|e| Error::Storage(format!("stub listener: {e}")))?;
        let url = format!(
            "http://{}",
            l.local_addr()
                .map_err(|e| Error::Storage(format!("stub listener: {e}")))?
        );
        let calls = Arc::new(AtomicUsize::new(0));
        let stub = Stub {
            leader: leader.map(str::to_string),
            calls: calls.clone(),
        };
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let Ok(l) = tokio::net::TcpListener::from_std(l) else {
                    return;
                };
                let incoming = tonic::transport::server::TcpIncoming::from(l);
                let _ = tonic::transport::Server::builder()
                    .serve_with_incoming_shutdown(stub, incoming, async {
                        let _ = stop_rx.await;
                    })
                    .await;
            });
        });
        Ok(UnavailableStub {
            url,
            calls,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// Its URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How many calls it has answered.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Drop for UnavailableStub {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Clone)]
struct Stub {
    leader: Option<String>,
    calls: Arc<AtomicUsize>,
}

impl NamedService for Stub {
    const NAME: &'static str = "telha.jobs.v1.Jobs";
}

impl Service<Request<Body>> for Stub {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Response<Body>, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::result::Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<Body>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut s = Status::unavailable("not the leader (a test stub)");
        s.metadata_mut().insert(
            telha_jobs_proto::status::ERROR_KIND_TRAILER,
            tonic::metadata::MetadataValue::from_static("UNAVAILABLE"),
        );
        if let Some(Ok(v)) = self.leader.as_deref().map(str::parse) {
            s.metadata_mut().insert("telha-leader", v);
        }
        Box::pin(async move { Ok(s.into_http()) })
    }
}
