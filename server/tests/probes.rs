//! The probes of `telha serve`: HTTP `/healthz` and `/readyz` on the
//! metrics listener and the standard gRPC health service, against a real
//! in-process server, before and after its store is fenced or closed.

mod common;

use std::time::Duration;

use common::http::Http;
use common::*;
use telha_jobs_server::ServeOptions;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

fn with_probes(token: Option<&str>) -> (Served, Http) {
    let s = served_with(
        config(),
        ServeOptions {
            metrics_listen: Some("127.0.0.1:0".into()),
            token: token.map(str::to_string),
            ..ServeOptions::default()
        },
    );
    let h = Http::new(s.server.as_ref().unwrap().metrics_addr().unwrap());
    (s, h)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn health(url: &str) -> HealthClient<tonic::transport::Channel> {
    let ch = tonic::transport::Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    HealthClient::new(ch)
}

async fn check(c: &mut HealthClient<tonic::transport::Channel>, service: &str) -> ServingStatus {
    let r = c
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .unwrap();
    ServingStatus::try_from(r.into_inner().status).unwrap()
}

#[test]
fn readyz_and_the_grpc_health_check_turn_not_serving_when_the_store_is_fenced() {
    let (s, h) = with_probes(None);
    let rt = runtime();
    let mut c = rt.block_on(health(&s.url));
    assert_eq!(h.request("GET", "/healthz", None).status, 200);
    let r = h.request("GET", "/readyz", None);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ready\n"[..]));
    assert_eq!(rt.block_on(check(&mut c, "")), ServingStatus::Serving);
    assert_eq!(
        rt.block_on(check(&mut c, "telha.jobs.v1.Jobs")),
        ServingStatus::Serving
    );
    // A Watch sees SERVING at once, then the change.
    let mut watch = rt
        .block_on(c.watch(HealthCheckRequest { service: "".into() }))
        .unwrap()
        .into_inner();
    let first = rt.block_on(watch.message()).unwrap().unwrap();
    assert_eq!(first.status, ServingStatus::Serving as i32);

    s.queue.fence("leadership lost (test)");
    let r = h.request("GET", "/readyz", None);
    assert_eq!(r.status, 503);
    let body = String::from_utf8(r.body).unwrap();
    assert!(body.contains("leadership lost (test)"), "{body}");
    assert_eq!(h.request("GET", "/healthz", None).status, 200, "still up");
    assert_eq!(rt.block_on(check(&mut c, "")), ServingStatus::NotServing);
    let next = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(5), watch.message()).await })
        .expect("the watch reports the change within its poll")
        .unwrap()
        .unwrap();
    assert_eq!(next.status, ServingStatus::NotServing as i32);
}

#[test]
fn readyz_answers_503_once_the_store_is_closed() {
    let (s, h) = with_probes(None);
    assert_eq!(h.request("GET", "/readyz", None).status, 200);
    s.queue.close();
    let r = h.request("GET", "/readyz", None);
    assert_eq!(r.status, 503);
    assert!(String::from_utf8_lossy(&r.body).starts_with("not ready: "));
    let rt = runtime();
    let mut c = rt.block_on(health(&s.url));
    assert_eq!(rt.block_on(check(&mut c, "")), ServingStatus::NotServing);
}

#[test]
fn probes_need_no_token_where_metrics_does() {
    let (s, h) = with_probes(Some("sekret"));
    assert_eq!(h.request("GET", "/metrics", None).status, 401);
    assert_eq!(h.request("GET", "/healthz", None).status, 200);
    assert_eq!(h.request("GET", "/readyz", None).status, 200);
    assert_eq!(h.request("POST", "/readyz", Some("")).status, 405);
    let rt = runtime();
    let mut c = rt.block_on(health(&s.url));
    assert_eq!(rt.block_on(check(&mut c, "")), ServingStatus::Serving);
    // The Jobs service itself still asks for the token.
    let jobs = telha_jobs_client::RemoteQueue::connect(
        &s.url,
        telha_jobs_client::ConnectOptions::default(),
    )
    .and_then(|q| telha_jobs::JobStore::stats(&q).map(|_| ()));
    assert!(jobs.is_err(), "no token, no Jobs calls");
}

#[test]
fn an_unknown_service_is_not_found_and_watched_as_service_unknown() {
    let (s, _h) = with_probes(None);
    let rt = runtime();
    let mut c = rt.block_on(health(&s.url));
    let e = rt
        .block_on(c.check(HealthCheckRequest {
            service: "nope.v1.Nope".into(),
        }))
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    let mut w = rt
        .block_on(c.watch(HealthCheckRequest {
            service: "nope.v1.Nope".into(),
        }))
        .unwrap()
        .into_inner();
    let m = rt.block_on(w.message()).unwrap().unwrap();
    assert_eq!(m.status, ServingStatus::ServiceUnknown as i32);
}
