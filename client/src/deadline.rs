//! Every remote call ends by its deadline, whatever the peer does.
//!
//! tonic's own timeouts cover less than a caller expects: the endpoint's
//! `connect_timeout` bounds the TCP connect only (the HTTP/2 handshake does
//! not wait for the server's SETTINGS, so a listener that accepts and never
//! answers "connects"), and a request to a server that stopped reading waits
//! until HTTP/2 keep-alive drops the connection. So the client bounds each
//! call itself, on its own clock ([`within`]): a unary call by the request
//! timeout, a long poll by its wait plus the request timeout, the opening of
//! a stream (the server's response headers) by the request timeout. Between
//! calls, and on an open stream, keep-alive pings notice a peer that went
//! silent within `keep_alive_interval + keep_alive_timeout`.

use std::future::Future;
use std::time::Duration;

use telha_jobs::{Error, Result};

/// How long an idle connection goes before the client pings it, by default.
pub const KEEP_ALIVE_INTERVAL_DEFAULT: Duration = Duration::from_secs(10);
/// How long a ping may go unanswered before the connection is dropped (its
/// calls and streams then fail with `Unavailable`), by default.
pub const KEEP_ALIVE_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);
/// The shortest keep-alive interval and timeout
/// [`crate::ConnectOptions::with_timeout`] derives: pings more often than
/// this would cost more than the seconds they save.
pub const KEEP_ALIVE_MIN: Duration = Duration::from_secs(1);

/// The error of a call that ran out of time: `Unavailable` (its outcome is
/// unknown; repeating it may succeed), saying how long it waited and for whom.
pub(crate) fn timed_out(url: &str, after: Duration) -> Error {
    Error::unavailable(format!(
        "timed out after {:.1} s waiting for {url}",
        after.as_secs_f64()
    ))
}

/// `fut`, or [`timed_out`] once `limit` has passed (`None`: no limit).
pub(crate) async fn within<T>(
    url: &str,
    limit: Option<Duration>,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    match limit {
        Some(t) => tokio::time::timeout(t, fut)
            .await
            .unwrap_or_else(|_| Err(timed_out(url, t))),
        None => fut.await,
    }
}

/// The deadline of a call that waits up to `wait` on the server: the wait
/// plus the request timeout (`None` when either is unbounded).
pub(crate) fn long_poll(request: Option<Duration>, wait: Duration) -> Option<Duration> {
    request.and_then(|t| t.checked_add(wait))
}

/// A call's status as the core's error, through the shared table; when the
/// connection itself failed (a status with a local cause: keep-alive gave
/// up on a silent server, the peer closed) it is `Unavailable` whatever
/// code tonic chose (the call's outcome is unknown), and the message says
/// so and names the causes, which tonic's own ("operation was canceled")
/// does not.
pub(crate) fn from_status(s: &tonic::Status, url: &str) -> Error {
    let e = telha_jobs_proto::status::from_status(s, url);
    let Some(mut cause) = std::error::Error::source(s) else {
        return e;
    };
    if !matches!(
        e,
        Error::Storage(_) | Error::Unavailable { leader: None, .. }
    ) {
        return e;
    }
    let mut msg = s.message().to_string();
    loop {
        let t = cause.to_string();
        if !msg.contains(&t) {
            msg = format!("{msg}: {t}");
        }
        match cause.source() {
            Some(next) => cause = next,
            None => break,
        }
    }
    transport(format!("lost the connection to {url}: {msg}"))
}

/// A failed connection as the core's error: `Unavailable` (retryable),
/// except a TLS peer the client does not trust, which no retry fixes:
/// `Storage`, as before there was a retryable kind.
pub(crate) fn transport(msg: String) -> Error {
    if msg.contains("certificate") {
        Error::Storage(msg)
    } else {
        Error::unavailable(msg)
    }
}
