//! The standard gRPC health service (`grpc.health.v1.Health`, the types
//! from `tonic-health`, the answers ours): `SERVING` while the store is
//! open and not fenced and the server is not shutting down, `NOT_SERVING`
//! otherwise. It answers for the whole server (`service = ""`) and for
//! `telha.jobs.v1.Jobs`; any other name is `NOT_FOUND` (`Check`) or
//! `SERVICE_UNKNOWN` (`Watch`), as the protocol asks.
//!
//! No token is asked: a Kubernetes gRPC probe cannot send one, and the
//! answer is one status. [`WithHealth`] routes its calls beside the Jobs
//! service on every gRPC listener (tonic's router would bring axum).

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{Body as HttpBody, BoxFuture, Bytes, Service};
use tonic::server::NamedService;
use tonic::Status;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::{self, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

use crate::service::Shared;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How often a `Watch` looks at the store's state (a fence has no
/// notification of its own here; a second is well inside any probe period).
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The service names answered for.
const SERVICES: [&str; 2] = ["", "telha.jobs.v1.Jobs"];

/// The health service over the server's store.
pub(crate) struct Health {
    shared: Arc<Shared>,
}

impl Health {
    pub(crate) fn server(shared: Arc<Shared>) -> HealthServer<Health> {
        HealthServer::new(Health { shared })
    }
}

/// `SERVING` while the store can serve and the server is not closing.
pub(crate) fn status(shared: &Shared) -> ServingStatus {
    // In cluster mode only the leader with its engine open serves.
    let ready = shared.source.queue().is_ok_and(|q| q.ready().is_ok());
    if ready && !*shared.closing.borrow() {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    }
}

fn answer(s: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse { status: s as i32 }
}

#[tonic::async_trait]
impl health_server::Health for Health {
    async fn check(
        &self,
        request: tonic::Request<HealthCheckRequest>,
    ) -> Result<tonic::Response<HealthCheckResponse>, Status> {
        if !SERVICES.contains(&request.get_ref().service.as_str()) {
            return Err(Status::not_found("service not registered"));
        }
        Ok(tonic::Response::new(answer(status(&self.shared))))
    }

    type WatchStream = ReceiverStream<Result<HealthCheckResponse, Status>>;

    /// The status now, then each change, until the client goes away or the
    /// server shuts down (after a last `NOT_SERVING`).
    async fn watch(
        &self,
        request: tonic::Request<HealthCheckRequest>,
    ) -> Result<tonic::Response<Self::WatchStream>, Status> {
        let (tx, rx) = mpsc::channel(4);
        let known = SERVICES.contains(&request.get_ref().service.as_str());
        let shared = self.shared.clone();
        tokio::spawn(async move {
            if !known {
                let _ = tx.send(Ok(answer(ServingStatus::ServiceUnknown))).await;
                // Held open (the protocol's rule) until the client leaves.
                tx.closed().await;
                return;
            }
            let mut closing = shared.closing.clone();
            let mut last = None;
            loop {
                let now = status(&shared);
                if last != Some(now) {
                    if tx.send(Ok(answer(now))).await.is_err() {
                        return;
                    }
                    last = Some(now);
                }
                if *closing.borrow() {
                    return;
                }
                tokio::select! {
                    _ = tokio::time::sleep(WATCH_EVERY) => {}
                    _ = closing.changed() => {}
                    _ = tx.closed() => return,
                }
            }
        });
        Ok(tonic::Response::new(ReceiverStream::new(rx)))
    }
}

/// The Jobs service with the health service's calls routed beside it.
#[derive(Clone)]
pub(crate) struct WithHealth<S> {
    jobs: S,
    health: HealthServer<Health>,
}

impl<S> WithHealth<S> {
    pub(crate) fn new(jobs: S, health: HealthServer<Health>) -> Self {
        WithHealth { jobs, health }
    }
}

impl<S: NamedService> NamedService for WithHealth<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<Request<Body>> for WithHealth<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Send,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<Response<Body>, BoxError>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // The health server is always ready.
        self.jobs.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if req.uri().path().starts_with("/grpc.health.v1.Health/") {
            let fut = self.health.call(req);
            return Box::pin(async move { fut.await.map_err(|e| match e {}) });
        }
        let fut = self.jobs.call(req);
        Box::pin(async move {
            let resp = fut.await.map_err(Into::into)?;
            Ok(resp.map(Body::new))
        })
    }
}
