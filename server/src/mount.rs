//! More gRPC services on the server's listeners ([`Mount`]), routed by
//! their path (`/<package>.<Service>/<Method>`) beside the Jobs and health
//! services, outside the client token check: a mounted service checks its
//! own credentials (the cluster's peer service its peer token). tonic's
//! own router would bring axum; this is the few lines it needs.

use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{Body as HttpBody, BoxFuture, Bytes, Service};
use tonic::server::NamedService;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Call = dyn Fn(Request<Body>) -> BoxFuture<Response<Body>, BoxError> + Send + Sync;

/// One gRPC service to serve beside Jobs (e.g. the cluster's
/// `telha.cluster.v1.Raft`: `Mount::new(peer_service.into_server())`).
#[derive(Clone)]
pub struct Mount {
    /// `/<NamedService::NAME>/`.
    prefix: String,
    call: Arc<Call>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl Mount {
    /// Serve `svc` (a tonic-generated server) at its service name.
    pub fn new<S, B>(svc: S) -> Mount
    where
        S: Service<Request<Body>, Response = Response<B>>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
        B: HttpBody<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let call = move |req: Request<Body>| -> BoxFuture<Response<Body>, BoxError> {
            let mut s = svc.clone();
            Box::pin(async move {
                std::future::poll_fn(|cx| s.poll_ready(cx))
                    .await
                    .map_err(Into::into)?;
                let resp = s.call(req).await.map_err(Into::into)?;
                Ok(resp.map(Body::new))
            })
        };
        Mount {
            prefix: format!("/{}/", S::NAME),
            call: Arc::new(call),
        }
    }

    /// The service's name, as routed.
    pub fn name(&self) -> &str {
        self.prefix.trim_matches('/')
    }
}

/// `inner` with the mounted services routed beside it.
#[derive(Clone)]
pub(crate) struct WithMounts<S> {
    inner: S,
    mounts: Arc<[Mount]>,
}

impl<S> WithMounts<S> {
    pub(crate) fn new(inner: S, mounts: Vec<Mount>) -> Self {
        WithMounts {
            inner,
            mounts: mounts.into(),
        }
    }
}

impl<S: NamedService> NamedService for WithMounts<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<Request<Body>> for WithMounts<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = BoxError> + Send,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<Response<Body>, BoxError>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let path = req.uri().path();
        if let Some(m) = self.mounts.iter().find(|m| path.starts_with(&m.prefix)) {
            return (m.call)(req);
        }
        Box::pin(self.inner.call(req))
    }
}
