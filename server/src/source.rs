//! Where the handlers take their [`Queue`] from: one store the server was
//! given ([`serve`](crate::serve)), or a [`QueueSource`] asked on every call
//! ([`serve_source`](crate::serve_source)): in a cluster, the engine of the
//! current leadership term, which a new term replaces and a follower does
//! not have.
//!
//! **The leader hint.** A call a source cannot answer (this node is not
//! the leader, or its engine is not open yet) is answered `UNAVAILABLE`
//! with the kind trailer `telha-error-kind: UNAVAILABLE`, a message naming
//! the leader, and, when a leader is known, the metadata
//! [`LEADER_ID_METADATA`] (`telha-leader-id: 2`) and
//! [`LEADER_URL_METADATA`] (`telha-leader-url: http://10.0.0.2:7450`),
//! plus the URL in `telha-leader` (the hint `RemoteQueue` endpoint lists
//! already follow). No leader known: neither key.

use std::sync::Arc;

use telha_jobs::{Error, ErrorKind, Queue};
use telha_jobs_proto::status::to_status;
use tonic::Status;

/// The metadata key naming the leader's node id on an `UNAVAILABLE`
/// answer of a cluster node.
pub const LEADER_ID_METADATA: &str = "telha-leader-id";
/// The metadata key with the URL clients reach the leader at.
pub const LEADER_URL_METADATA: &str = "telha-leader-url";

/// Why a source has no queue now, and who has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotLeader {
    /// For the message, e.g. "node 3 is not the leader (node 1 is)".
    pub reason: String,
    /// The leader's node id, when one is known (maybe this node, while its
    /// engine opens).
    pub leader_id: Option<u64>,
    /// Where clients reach that leader, when known.
    pub leader_url: Option<String>,
}

impl NotLeader {
    /// The core error: `Unavailable`, the leader's URL as its hint.
    pub fn to_error(&self) -> Error {
        Error::Unavailable {
            reason: self.message(),
            leader: self.leader_url.clone(),
        }
    }

    /// The message: the reason, and the leader when known.
    pub fn message(&self) -> String {
        match (self.leader_id, &self.leader_url) {
            (Some(id), Some(url)) => format!("{}; the leader is node {id} at {url}", self.reason),
            (Some(id), None) => format!("{}; the leader is node {id}", self.reason),
            _ => self.reason.clone(),
        }
    }

    /// The gRPC answer (module doc).
    pub fn to_status(&self) -> Status {
        let mut s = to_status(&self.to_error());
        if let Some(v) = self.leader_id.and_then(|id| id.to_string().parse().ok()) {
            s.metadata_mut().insert(LEADER_ID_METADATA, v);
        }
        if let Some(v) = self.leader_url.as_deref().and_then(|u| u.parse().ok()) {
            s.metadata_mut().insert(LEADER_URL_METADATA, v);
        }
        s
    }
}

/// A queue asked for on every call.
pub trait QueueSource: Send + Sync + 'static {
    /// The queue to answer this call with, or who can.
    fn queue(&self) -> Result<Queue, NotLeader>;

    /// Prometheus text appended to `/metrics` and the `Metrics` RPC on
    /// every node, leader or not (a cluster's `telha_cluster_*` series:
    /// a follower's lag is read on the follower too). Empty by default.
    fn extra_metrics(&self) -> String {
        String::new()
    }
}

/// What the handlers hold.
#[derive(Clone)]
pub(crate) enum Source {
    /// One store for the server's life.
    Fixed(Queue),
    /// Asked per call; no core call runs inline on the async workers.
    Dynamic(Arc<dyn QueueSource>),
}

impl Source {
    pub(crate) fn queue(&self) -> Result<Queue, NotLeader> {
        match self {
            Source::Fixed(q) => Ok(q.clone()),
            Source::Dynamic(s) => s.queue(),
        }
    }

    /// The status for a core error: an `Unavailable` from a source's
    /// engine (fenced while the call ran: leadership moved) carries the
    /// source's current leader hint.
    pub(crate) fn status(&self, e: &Error) -> Status {
        if let (Source::Dynamic(s), ErrorKind::Unavailable | ErrorKind::Closed) = (self, e.kind()) {
            if let Err(nl) = s.queue() {
                return nl.to_status();
            }
        }
        to_status(e)
    }

    /// [`QueueSource::extra_metrics`]; empty for a fixed store.
    pub(crate) fn extra_metrics(&self) -> String {
        match self {
            Source::Fixed(_) => String::new(),
            Source::Dynamic(s) => s.extra_metrics(),
        }
    }

    /// [`Source::queue`] as a gRPC answer.
    pub(crate) fn queue_or_status(&self) -> Result<Queue, Status> {
        self.queue().map_err(|nl| nl.to_status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_travels_as_metadata_and_is_absent_without_a_leader() {
        let nl = NotLeader {
            reason: "node 3 is not the leader".into(),
            leader_id: Some(1),
            leader_url: Some("http://127.0.0.1:7450".into()),
        };
        let s = nl.to_status();
        assert_eq!(s.code(), tonic::Code::Unavailable);
        let get = |k: &str| s.metadata().get(k).map(|v| v.to_str().unwrap().to_string());
        assert_eq!(get(LEADER_ID_METADATA).as_deref(), Some("1"));
        assert_eq!(
            get(LEADER_URL_METADATA).as_deref(),
            Some("http://127.0.0.1:7450")
        );
        assert_eq!(get("telha-error-kind").as_deref(), Some("UNAVAILABLE"));
        assert!(s.message().contains("node 1"), "{}", s.message());
        let none = NotLeader {
            reason: "node 3 has no engine: no leader known".into(),
            leader_id: None,
            leader_url: None,
        }
        .to_status();
        assert!(none.metadata().get(LEADER_ID_METADATA).is_none());
        assert!(none.metadata().get(LEADER_URL_METADATA).is_none());
        assert!(none.message().contains("no leader"), "{}", none.message());
    }
}
