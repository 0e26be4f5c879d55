//! The server's own counters, exported beside the store's metrics.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

/// RPCs answered by method and gRPC code, and open `PollJobs` streams.
#[derive(Debug, Default)]
pub struct ServerStats {
    rpcs: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    streams: AtomicI64,
}

fn code_name(c: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match c {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

impl ServerStats {
    pub(crate) fn record(&self, method: &'static str, code: tonic::Code) {
        let mut m = self.rpcs.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((method, code_name(code))).or_default() += 1;
    }
    pub(crate) fn stream_opened(&self) {
        self.streams.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn stream_closed(&self) {
        self.streams.fetch_sub(1, Ordering::Relaxed);
    }
    /// Open `PollJobs` streams.
    pub fn open_streams(&self) -> i64 {
        self.streams.load(Ordering::Relaxed)
    }
    /// How many calls of `method` were answered with `code` (e.g.
    /// `("Submit", "ABORTED")`).
    pub fn rpcs(&self, method: &str, code: &str) -> u64 {
        let m = self.rpcs.lock().unwrap_or_else(|p| p.into_inner());
        m.iter()
            .filter(|((me, c), _)| *me == method && *c == code)
            .map(|(_, n)| *n)
            .sum()
    }
    /// The Prometheus text of these counters.
    pub fn prometheus(&self) -> String {
        let mut s = String::from(
            "# HELP telha_server_rpcs_total RPCs answered, by method and gRPC code.\n\
             # TYPE telha_server_rpcs_total counter\n",
        );
        let m = self.rpcs.lock().unwrap_or_else(|p| p.into_inner());
        for ((method, code), n) in m.iter() {
            s.push_str(&format!(
                "telha_server_rpcs_total{{method=\"{method}\",code=\"{code}\"}} {n}\n"
            ));
        }
        s.push_str(&format!(
            "# HELP telha_server_poll_streams Open PollJobs streams.\n\
             # TYPE telha_server_poll_streams gauge\n\
             telha_server_poll_streams {}\n",
            self.open_streams()
        ));
        s
    }
}
