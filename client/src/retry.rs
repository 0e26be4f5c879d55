//! Retries: which failures a call repeats, how long it waits between
//! attempts, and the counters that show it (`telha_client_retries_total`).
//!
//! A call is repeated, within its own deadline, when its outcome is
//! unknown (the transport failed after the request may have been sent: a
//! reset stream, a lost connection) or when the server answered
//! `Unavailable` (closing, not the leader, outcome unknown; a
//! `telha-leader` hint names the server to ask instead). Repeating is safe
//! for the calls marked [`Safe::Always`]: settles are answered from the
//! record (a repeat answers as the first did), extend and reads change
//! nothing twice, a lost lease reply leaves a lease that expires (late,
//! never lost), keyed enqueues are deduplicated by the store. An unkeyed
//! enqueue is [`Safe::IfNotSent`]: repeated only when the request certainly
//! never left (the connection was refused).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use telha_jobs::{Error, Result};
use tonic::{Code, Status};

use crate::deadline::from_status;
use crate::{Client, RemoteQueue, REQUEST_TIMEOUT_DEFAULT};

/// The metadata key of a server's hint: the URL of the server to ask.
pub use telha_jobs_proto::status::LEADER_TRAILER;

/// The first pause between attempts; it doubles up to [`BACKOFF_MAX`],
/// each pause drawn between half and all of it (jitter, so clients that
/// lost the same server do not come back in step).
pub const BACKOFF_BASE: Duration = Duration::from_millis(25);
/// The longest pause between attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// When a failed attempt may be repeated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Safe {
    /// Whenever the outcome is unknown or the server was unavailable.
    Always,
    /// Only when the request certainly never reached a server.
    IfNotSent,
}

/// What one failed attempt means.
pub(crate) enum Failed {
    /// The server's answer: final.
    Answer(Error),
    /// The server answered `Unavailable`, maybe with a hint.
    Unavailable { err: Error, hint: Option<String> },
    /// The transport failed; `sent`: the request may have reached it.
    Transport { err: Error, sent: bool },
}

/// The error of a call that gave up: `Unavailable` (retryable), except a
/// TLS peer the client does not trust, which no retry fixes (`Storage`).
pub(crate) fn unavailable(msg: String) -> Error {
    crate::deadline::transport(msg)
}

fn kind_trailer(s: &Status) -> Option<&str> {
    s.metadata()
        .get(telha_jobs_proto::status::ERROR_KIND_TRAILER)
        .and_then(|v| v.to_str().ok())
}

/// Sort a failed call's status (from the server at `url`).
pub(crate) fn classify(s: &Status, url: &str) -> Failed {
    let err = from_status(s, url);
    let hint = s
        .metadata()
        .get(LEADER_TRAILER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match kind_trailer(s) {
        Some("UNAVAILABLE") => return Failed::Unavailable { err, hint },
        Some(_) => return Failed::Answer(err),
        None => {}
    }
    if std::error::Error::source(s).is_some() {
        return Failed::Transport {
            sent: !never_sent(s),
            err,
        };
    }
    if s.code() == Code::Unavailable {
        // Not the server's own answer (that carries the kind): a proxy or
        // the HTTP/2 layer saying the server is not there.
        return Failed::Unavailable { err, hint };
    }
    Failed::Answer(err)
}

/// Whether the cause chain says the connection was never made (so no
/// request was sent): refused, or no socket at a Unix path.
fn never_sent(s: &Status) -> bool {
    let mut cause = std::error::Error::source(s);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            if matches!(
                io.kind(),
                K::ConnectionRefused | K::NotFound | K::AddrNotAvailable
            ) {
                return true;
            }
        }
        cause = c.source();
    }
    false
}

/// The pause before retry number `n` (0-based): jittered exponential.
pub(crate) fn backoff(n: u32) -> Duration {
    let full = BACKOFF_BASE
        .saturating_mul(1u32 << n.min(16))
        .min(BACKOFF_MAX);
    let half = full / 2;
    half + half.mul_f64(jitter())
}

/// A number in [0, 1): splitmix64 over the clock and a counter, enough to
/// spread clients apart (nothing depends on its quality).
fn jitter() -> f64 {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = t ^ SEQ
        .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
        .rotate_left(17);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Why a call was repeated, as `telha_client_retries_total` labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryReason {
    /// The transport failed (outcome unknown, or the server unreachable).
    Transport,
    /// The server answered `Unavailable` without a hint.
    Unavailable,
    /// The server answered `Unavailable` naming another server.
    LeaderHint,
    /// A `PollJobs` stream or long poll reopened after a lost connection.
    Resume,
}

impl RetryReason {
    /// Every reason, in the order the metrics list them.
    pub const ALL: [RetryReason; 4] = [
        RetryReason::Transport,
        RetryReason::Unavailable,
        RetryReason::LeaderHint,
        RetryReason::Resume,
    ];

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            RetryReason::Transport => "transport",
            RetryReason::Unavailable => "unavailable",
            RetryReason::LeaderHint => "leader_hint",
            RetryReason::Resume => "resume",
        }
    }
}

/// The client's retry counters, one per [`RetryReason`].
#[derive(Default, Debug)]
pub(crate) struct RetryStats([AtomicU64; 4]);

impl RetryStats {
    pub(crate) fn count(&self, r: RetryReason) {
        self.0[r as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(&self, r: RetryReason) -> u64 {
        self.0[r as usize].load(Ordering::Relaxed)
    }

    /// The Prometheus text of the counters.
    pub(crate) fn text(&self) -> String {
        let mut t = String::from(
            "# HELP telha_client_retries_total Calls this client repeated, by reason.\n\
             # TYPE telha_client_retries_total counter\n",
        );
        for r in RetryReason::ALL {
            t.push_str(&format!(
                "telha_client_retries_total{{reason=\"{}\"}} {}\n",
                r.label(),
                self.get(r)
            ));
        }
        t
    }
}

/// What a retried call ended with, and whether an earlier attempt's
/// outcome was unknown (a control operation's "already done" answer then
/// means the repeat found its own work).
pub(crate) struct Outcome<T> {
    pub(crate) result: Result<T>,
    pub(crate) repeated: bool,
}

impl RemoteQueue {
    /// Run `f` against the current endpoint until it answers, retrying the
    /// failures `safe` allows with jittered backoff, for at most `limit`
    /// (`None`: each attempt unbounded, retries for at most
    /// [`REQUEST_TIMEOUT_DEFAULT`]).
    pub(crate) async fn retried<T, F, Fut>(
        &self,
        safe: Safe,
        limit: Option<Duration>,
        f: F,
    ) -> Outcome<T>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = std::result::Result<tonic::Response<T>, Status>>,
    {
        let start = Instant::now();
        let deadline = start + limit.unwrap_or(REQUEST_TIMEOUT_DEFAULT);
        let mut repeated = false;
        let mut n = 0u32;
        loop {
            let (i, url, client) = self.inner.endpoints.current();
            let attempt = f(client);
            let r = match limit {
                None => Ok(attempt.await),
                Some(_) => tokio::time::timeout(
                    deadline.saturating_duration_since(Instant::now()),
                    attempt,
                )
                .await
                .map_err(|_| ()),
            };
            let (err, reason, hint) = match r {
                Ok(Ok(resp)) => {
                    return Outcome {
                        result: Ok(resp.into_inner()),
                        repeated,
                    }
                }
                Err(()) => {
                    let took = start.elapsed();
                    return Outcome {
                        result: Err(unavailable(format!(
                            "timed out after {:.1} s waiting for {url}{}",
                            took.as_secs_f64(),
                            tries(n)
                        ))),
                        repeated,
                    };
                }
                Ok(Err(s)) => match classify(&s, &url) {
                    Failed::Answer(e) => {
                        return Outcome {
                            result: Err(e),
                            repeated,
                        }
                    }
                    Failed::Transport { err, sent } => {
                        if sent && safe == Safe::IfNotSent {
                            return Outcome {
                                result: Err(unavailable(format!(
                                    "{err} (not repeated: the request may have taken effect; \
                                     give it an idempotency key to make it retryable)"
                                ))),
                                repeated,
                            };
                        }
                        repeated |= sent;
                        self.inner.endpoints.rotate(i);
                        (err, RetryReason::Transport, None)
                    }
                    Failed::Unavailable { err, hint } => {
                        if safe == Safe::IfNotSent {
                            return Outcome {
                                result: Err(err),
                                repeated,
                            };
                        }
                        repeated = true;
                        match hint {
                            Some(h) if self.inner.endpoints.follow(&h) => {
                                (err, RetryReason::LeaderHint, Some(h))
                            }
                            _ => {
                                self.inner.endpoints.rotate(i);
                                (err, RetryReason::Unavailable, None)
                            }
                        }
                    }
                },
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Outcome {
                    result: Err(unavailable(format!("{}{}", message(&err), tries(n + 1)))),
                    repeated,
                };
            }
            self.inner.retries.count(reason);
            tracing::debug!(
                url = %url,
                reason = reason.label(),
                attempt = n + 1,
                hint = hint.as_deref().unwrap_or(""),
                "telha client retrying: {err}"
            );
            // A hint names the server to ask now: go at once, the first time.
            if !(reason == RetryReason::LeaderHint && n == 0) {
                tokio::time::sleep(backoff(n).min(left)).await;
            }
            n += 1;
        }
    }
}

fn tries(n: u32) -> String {
    match n {
        0 => String::new(),
        1 => " (1 attempt)".into(),
        n => format!(" ({n} attempts)"),
    }
}

fn message(e: &Error) -> String {
    telha_jobs_proto::status::message_of(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_up_to_its_cap() {
        for n in 0..20 {
            let full = BACKOFF_BASE.saturating_mul(1 << n.min(16)).min(BACKOFF_MAX);
            let b = backoff(n);
            assert!(b >= full / 2 && b <= full, "{n}: {b:?} of {full:?}");
        }
    }

    #[test]
    fn statuses_sort_into_answers_unavailable_and_transport() {
        let mut s = Status::unavailable("not the leader");
        s.metadata_mut()
            .insert(LEADER_TRAILER, "http://b:7450".parse().unwrap());
        assert!(matches!(
            classify(&s, "u"),
            Failed::Unavailable { hint: Some(h), .. } if h == "http://b:7450"
        ));
        let mut a = Status::aborted("lost");
        a.metadata_mut().insert(
            telha_jobs_proto::status::ERROR_KIND_TRAILER,
            "ABORTED".parse().unwrap(),
        );
        assert!(matches!(
            classify(&a, "u"),
            Failed::Answer(Error::Aborted(_))
        ));
        // The server closing its store is its answer, not a retry.
        let mut c = Status::unavailable("closed");
        c.metadata_mut().insert(
            telha_jobs_proto::status::ERROR_KIND_TRAILER,
            "CLOSED".parse().unwrap(),
        );
        assert!(matches!(classify(&c, "u"), Failed::Answer(Error::Closed)));
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let t = Status::from_error(Box::new(io));
        assert!(matches!(
            classify(&t, "u"),
            Failed::Transport { sent: false, .. }
        ));
    }

    #[test]
    fn counters_render_every_reason() {
        let s = RetryStats::default();
        s.count(RetryReason::Transport);
        s.count(RetryReason::Transport);
        let t = s.text();
        assert!(t.contains("telha_client_retries_total{reason=\"transport\"} 2\n"));
        assert!(t.contains("telha_client_retries_total{reason=\"resume\"} 0\n"));
    }
}
