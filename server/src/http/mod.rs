//! The HTTP/1.1 listener beside gRPC (hyper): `GET /metrics` (the store's
//! Prometheus text and the server's counters), the probes `GET /healthz`
//! (the process answers) and `GET /readyz` (the store is open and not
//! fenced), and, when
//! [`ServeOptions::ui`](crate::ServeOptions::ui) is on, the operator page
//! (`/`, `/assets/…`) and its JSON API (`/api/v1/…`, see `ui.rs`).
//!
//! Keep-alive connections, a 10 s limit to read a request's head, request
//! bodies up to 1 MiB; every answer carries the security headers of
//! [`reply`].

// Handlers return `Result<T, Response>`: the error is the answer, sent at
// once, so boxing it would only add an allocation.
#![allow(clippy::result_large_err)]

mod actions;
mod api;
mod assets;
mod reply;
mod session;
mod steer;
mod throughput;
pub(crate) mod tls;
mod ui;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::auth::Check;
use crate::service::Shared;
pub(crate) use reply::Body;
use reply::{error, text};
pub(crate) use ui::Ui;

/// The largest request body read (an action's JSON, a login).
const MAX_BODY: usize = 1 << 20;

/// What a request is answered from.
pub(crate) struct Http {
    pub shared: Arc<Shared>,
    pub check: Check,
    /// The page and its API; `None`: `/metrics` only.
    pub ui: Option<Arc<Ui>>,
    /// Serve TLS (the gRPC listeners' certificate).
    pub tls: Option<tls::TlsAcceptor>,
}

/// Accept connections until `quit` turns true.
pub(crate) async fn serve(l: TcpListener, http: Arc<Http>, mut quit: watch::Receiver<bool>) {
    if let Some(ui) = &http.ui {
        tokio::spawn(throughput::sample(
            http.shared.source.clone(),
            ui.throughput.clone(),
            quit.clone(),
        ));
    }
    loop {
        let accepted = tokio::select! {
            a = l.accept() => a,
            _ = quit.wait_for(|q| *q) => return,
        };
        let Ok((conn, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let _ = conn.set_nodelay(true);
        let (http, quit) = (http.clone(), quit.clone());
        tokio::spawn(async move {
            match http.tls.clone() {
                None => connection(conn, http, quit).await,
                Some(acceptor) => {
                    let hello = Duration::from_secs(10);
                    if let Ok(Ok(tls)) = tokio::time::timeout(hello, acceptor.accept(conn)).await {
                        connection(tls, http, quit).await;
                    }
                }
            }
        });
    }
}

/// Serve one connection's requests until it closes or `quit` turns true.
async fn connection<I>(io: I, http: Arc<Http>, mut quit: watch::Receiver<bool>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |req| {
        let http = http.clone();
        async move { Ok::<_, Infallible>(answer(&http, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = quit.wait_for(|q| *q) => conn.as_mut().graceful_shutdown(),
    }
}

/// A request's parts the handlers read, with the body already collected.
pub(crate) struct Req {
    pub method: Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

async fn answer(http: &Http, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => {
            return error(
                413,
                "INVALID_ARGUMENT",
                "the request body is over 1 MiB or broken",
            )
        }
    };
    let (path, query) = match parts.uri.path_and_query() {
        Some(pq) => (pq.path().to_string(), pq.query().unwrap_or("")),
        None => ("/".to_string(), ""),
    };
    let Some(path) = percent_decode(&path) else {
        return error(400, "INVALID_ARGUMENT", "the path is not valid UTF-8");
    };
    let Some(query) = parse_query(query) else {
        return error(
            400,
            "INVALID_ARGUMENT",
            "the query string is not valid UTF-8",
        );
    };
    let req = Req {
        method: parts.method,
        path,
        query,
        headers: parts.headers,
        body,
    };
    match req.path.as_str() {
        "/metrics" => return metrics(http, &req).await,
        "/healthz" | "/readyz" => return probe(http, &req),
        _ => {}
    }
    match &http.ui {
        Some(ui) => ui.route(http, req).await,
        None => text(404, "see /metrics\n"),
    }
}

/// The probes, without a token (a probe's answer is one status):
/// `/healthz` is 200 while the process answers at all; `/readyz` is 200
/// while the store is open and not fenced and the server is not shutting
/// down, else 503 with the reason.
fn probe(http: &Http, req: &Req) -> Response<Body> {
    if req.method != Method::GET && req.method != Method::HEAD {
        return text(405, "GET only\n");
    }
    if req.path == "/healthz" {
        return text(200, "ok\n");
    }
    if *http.shared.closing.borrow() {
        return text(503, "not ready: the server is shutting down\n");
    }
    let ready = match http.shared.source.queue() {
        Ok(q) => q.ready(),
        Err(nl) => Err(nl.to_error()),
    };
    match ready {
        Ok(()) => text(200, "ready\n"),
        Err(e) => text(503, &format!("not ready: {e}\n")),
    }
}

async fn metrics(http: &Http, req: &Req) -> Response<Body> {
    if req.method != Method::GET {
        return text(405, "GET only\n");
    }
    let auth = req.header("authorization").map(str::as_bytes);
    if !http.check.allows(auth) {
        return text(401, "bearer token required\n");
    }
    const PROM: &str = "text/plain; version=0.0.4; charset=utf-8";
    let extra = http.shared.source.extra_metrics();
    let q = match http.shared.source.queue() {
        Ok(q) => q,
        // A cluster's follower still answers its own cluster series.
        Err(_) if !extra.is_empty() => return reply::with_type(200, PROM, extra.into()),
        Err(nl) => return text(503, &format!("{}\n", nl.message())),
    };
    match tokio::task::spawn_blocking(move || q.metrics()).await {
        Ok(Ok(mut t)) => {
            t.push_str(&http.shared.stats.prometheus());
            t.push_str(&extra);
            reply::with_type(200, PROM, t.into())
        }
        Ok(Err(e)) => text(503, &format!("{e}\n")),
        Err(e) => text(500, &format!("{e}\n")),
    }
}

/// `%XX` and (in queries) `+` decoded; `None` when the result is not UTF-8.
fn decode(s: &str, plus: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(x) => {
                        out.push(x);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' if plus => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

fn percent_decode(s: &str) -> Option<String> {
    decode(s, false)
}

fn parse_query(q: &str) -> Option<Vec<(String, String)>> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Some((decode(k, true)?, decode(v, true)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_percent_and_plus_and_refuse_bad_utf8() {
        let q = parse_query("kind=a%2Fb+c&state=dead&x=%zz&y=%4").unwrap();
        assert_eq!(q[0], ("kind".into(), "a/b c".into()));
        assert_eq!(q[1], ("state".into(), "dead".into()));
        assert_eq!(q[2], ("x".into(), "%zz".into()));
        assert_eq!(q[3], ("y".into(), "%4".into()));
        assert!(parse_query("k=%ff").is_none());
        assert_eq!(percent_decode("/a+b%20c").unwrap(), "/a+b c");
    }
}
