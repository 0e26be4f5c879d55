//! [`AdminService`]: the operator's `Admin` gRPC service of one node
//! (proto/telha/cluster/v1/admin.proto), what `telha cluster` calls.
//!
//! Every call runs the node's blocking API on tokio's blocking pool. A
//! membership call on a node that does not lead answers `UNAVAILABLE`
//! with the leader hint ([`LEADER_ID_METADATA`], [`LEADER_URL_METADATA`]);
//! each refusal ([`MembershipError`], [`InitError`]) gets its own status
//! code and a stable name in [`ADMIN_ERROR_METADATA`], and changed
//! nothing. Auth is the client token rule: `authorization: Bearer
//! <token>` when the node has a token (`check_peer_listener` requires one
//! off loopback).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tonic::metadata::AsciiMetadataValue;
use tonic::{Code, Request, Response, Status};

use super::admin_init::{initialize_members, InitError};
use super::admin_status::{self, url_of};
use super::wire;
use super::wire::admin_server::{Admin, AdminServer};
use crate::node::{MembershipError, Node};
use crate::types::PeerNode;

/// The metadata of a non-leader's answer naming the leader's id...
pub const LEADER_ID_METADATA: &str = "telha-leader-id";
/// ...and its URL (each absent when unknown).
pub const LEADER_URL_METADATA: &str = "telha-leader-url";
/// A refusal's stable name (`unknown_node`, `already_member`, ...).
pub const ADMIN_ERROR_METADATA: &str = "telha-admin-error";

/// How long a membership call waits for a learner to catch up or a
/// change to apply when the request says 0.
pub const ADMIN_WAIT_DEFAULT: Duration = Duration::from_secs(30);
/// The longest wait a request may ask for.
pub const ADMIN_WAIT_MAX: Duration = Duration::from_secs(600);

/// Node `node`'s `Admin` service.
#[derive(Clone)]
pub struct AdminService {
    node: Arc<Node>,
    token: Option<Arc<[u8]>>,
    urls: Arc<HashMap<u64, String>>,
}

impl AdminService {
    /// The service over `node`; with `token`, a call without
    /// `authorization: Bearer <token>` is refused (`UNAUTHENTICATED`).
    pub fn new(node: Arc<Node>, token: Option<&str>) -> AdminService {
        AdminService {
            node,
            token: token
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| Arc::from(t.as_bytes())),
            urls: Arc::default(),
        }
    }

    /// Where members listen when the membership does not record it (the
    /// node's `--peers`): used for the leader hint and in `Status`.
    pub fn with_peer_urls(mut self, urls: HashMap<u64, String>) -> AdminService {
        self.urls = Arc::new(urls);
        self
    }

    /// The tonic service, ready to mount on a listener.
    pub fn into_server(self) -> AdminServer<AdminService> {
        AdminServer::new(self)
    }

    fn check_token<T>(&self, req: &Request<T>) -> Result<(), Status> {
        let Some(want) = &self.token else {
            return Ok(());
        };
        match req.metadata().get("authorization") {
            None => Err(Status::unauthenticated(
                "this node requires `authorization: Bearer <token>` (the client token)",
            )),
            Some(h) => {
                let got = h.as_bytes().strip_prefix(b"Bearer ").unwrap_or(b"");
                if super::server::ct_eq(got, want) {
                    Ok(())
                } else {
                    Err(Status::unauthenticated("wrong bearer token"))
                }
            }
        }
    }

    /// Run `f` on the node, off the async workers.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Node, &HashMap<u64, String>) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let (node, urls) = (self.node.clone(), self.urls.clone());
        tokio::task::spawn_blocking(move || f(&node, &urls))
            .await
            .map_err(|e| Status::internal(format!("admin call: {e}")))?
    }
}

/// `UNAVAILABLE` naming the leader `node` knows of, if any.
fn not_leader(
    node: &Node,
    urls: &HashMap<u64, String>,
    leader: Option<u64>,
    msg: String,
) -> Status {
    let mut s = Status::unavailable(msg);
    if let Some(l) = leader.filter(|&l| l != node.id()) {
        s.metadata_mut()
            .insert(LEADER_ID_METADATA, AsciiMetadataValue::from(l));
        let url = url_of(&node.metrics(), urls, l);
        if let Ok(v) = AsciiMetadataValue::try_from(url.as_str()) {
            if !url.is_empty() {
                s.metadata_mut().insert(LEADER_URL_METADATA, v);
            }
        }
    }
    s
}

fn refused(code: Code, name: &'static str, msg: String) -> Status {
    let mut s = Status::new(code, msg);
    s.metadata_mut()
        .insert(ADMIN_ERROR_METADATA, AsciiMetadataValue::from_static(name));
    s
}

/// A membership error as a status (one table).
pub fn membership_status(node: &Node, urls: &HashMap<u64, String>, e: MembershipError) -> Status {
    use MembershipError as M;
    let msg = e.to_string();
    match e {
        M::NotLeader { leader, .. } => not_leader(node, urls, leader, msg),
        M::NoIds => refused(Code::InvalidArgument, "no_ids", msg),
        M::SameId { .. } => refused(Code::InvalidArgument, "same_id", msg),
        M::AlreadyMember { .. } => refused(Code::AlreadyExists, "already_member", msg),
        M::AlreadyVoter { .. } => refused(Code::AlreadyExists, "already_voter", msg),
        M::UnknownNode { .. } => refused(Code::NotFound, "unknown_node", msg),
        M::NotAVoter { .. } => refused(Code::FailedPrecondition, "not_a_voter", msg),
        M::RemovedBefore { .. } => refused(Code::FailedPrecondition, "removed_before", msg),
        M::NoVotersLeft { .. } => refused(Code::FailedPrecondition, "last_voter", msg),
        M::MajorityAtOnce { .. } => refused(Code::FailedPrecondition, "majority_at_once", msg),
        M::Joint { .. } => refused(Code::FailedPrecondition, "joint", msg),
        M::InProgress(_) => refused(Code::FailedPrecondition, "in_progress", msg),
        M::NotCaughtUp(_) => refused(Code::FailedPrecondition, "not_caught_up", msg),
        // No leader hint: the client must not send an unknown outcome
        // again by itself (read the status on the leader, then decide).
        M::Unknown(_) => refused(Code::Unavailable, "outcome_unknown", msg),
        M::Stopped { .. } => refused(Code::Unavailable, "stopped", msg),
    }
}

fn init_status(e: InitError) -> Status {
    let msg = e.to_string();
    match e {
        InitError::NoMembers => refused(Code::InvalidArgument, "no_members", msg),
        InitError::NotAMember { .. } => refused(Code::InvalidArgument, "not_a_member", msg),
        InitError::AlreadyInitialized { .. } => {
            refused(Code::FailedPrecondition, "already_initialized", msg)
        }
        InitError::Failed { .. } => refused(Code::Unavailable, "init_failed", msg),
    }
}

/// A member's URL checked: `http://host:port` or `https://host:port`.
pub fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("{url:?} is not a URL: it must start with http:// or https://"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let port_ok = authority
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
    if authority.contains('/') || !port_ok {
        return Err(format!(
            "{url:?} is not a URL of the form http://host:port (a host and a port, no path)"
        ));
    }
    tonic::transport::Endpoint::from_shared(url.to_string())
        .map(drop)
        .map_err(|e| format!("{url:?} is not a URL: {e}"))
}

fn member(m: Option<wire::Member>, what: &str) -> Result<(u64, PeerNode), Status> {
    let m = m.ok_or_else(|| Status::invalid_argument(format!("{what}: missing")))?;
    if m.id == 0 {
        return Err(Status::invalid_argument(format!(
            "{what}: node id 0 is not an id"
        )));
    }
    check_url(&m.url).map_err(|e| Status::invalid_argument(format!("{what} {}: {e}", m.id)))?;
    Ok((m.id, PeerNode { addr: m.url }))
}

fn wait(ms: u64) -> Result<Duration, Status> {
    let d = Duration::from_millis(ms);
    if d > ADMIN_WAIT_MAX {
        return Err(Status::invalid_argument(format!(
            "wait {d:?} is longer than {ADMIN_WAIT_MAX:?}"
        )));
    }
    Ok(if ms == 0 { ADMIN_WAIT_DEFAULT } else { d })
}

fn changed(
    node: &Node,
    urls: &HashMap<u64, String>,
    view: crate::node::MembershipView,
    changed: bool,
) -> Response<wire::ChangeReply> {
    let m = node.metrics();
    Response::new(wire::ChangeReply {
        membership: Some(admin_status::membership(&view, &m, urls)),
        changed,
    })
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn status(
        &self,
        request: Request<wire::StatusRequest>,
    ) -> Result<Response<wire::StatusReply>, Status> {
        self.check_token(&request)?;
        let s = self
            .blocking(|n, urls| admin_status::status(n, urls).map_err(Status::unavailable))
            .await?;
        Ok(Response::new(s))
    }

    async fn init(
        &self,
        request: Request<wire::InitRequest>,
    ) -> Result<Response<wire::ChangeReply>, Status> {
        self.check_token(&request)?;
        let mut members = BTreeMap::new();
        for m in request.into_inner().members {
            let (id, node) = member(Some(m), "member")?;
            if members.insert(id, node).is_some() {
                return Err(Status::invalid_argument(format!("member {id} given twice")));
            }
        }
        self.blocking(move |n, urls| {
            initialize_members(n, members).map_err(init_status)?;
            let view = n.membership().map_err(|e| membership_status(n, urls, e))?;
            Ok(changed(n, urls, view, true))
        })
        .await
    }

    async fn add_learner(
        &self,
        request: Request<wire::AddLearnerRequest>,
    ) -> Result<Response<wire::AddLearnerReply>, Status> {
        self.check_token(&request)?;
        let r = request.into_inner();
        let (id, peer) = member(r.node, "node")?;
        let within = wait(r.wait_millis)?;
        self.blocking(move |n, urls| {
            let err = |e| membership_status(n, urls, e);
            let p = n.add_learner(id, peer, within).map_err(err)?;
            let view = n.membership().map_err(err)?;
            let m = n.metrics();
            Ok(Response::new(wire::AddLearnerReply {
                id: p.id,
                caught_up: p.caught_up,
                matched: p.matched,
                target: p.target,
                by_snapshot: p.by_snapshot,
                waited_millis: p.waited.as_millis() as u64,
                membership: Some(admin_status::membership(&view, &m, urls)),
            }))
        })
        .await
    }

    async fn promote(
        &self,
        request: Request<wire::PromoteRequest>,
    ) -> Result<Response<wire::ChangeReply>, Status> {
        self.check_token(&request)?;
        let r = request.into_inner();
        let within = wait(r.wait_millis)?;
        self.blocking(move |n, urls| {
            let view = n
                .promote(&r.ids, within)
                .map_err(|e| membership_status(n, urls, e))?;
            Ok(changed(n, urls, view, true))
        })
        .await
    }

    async fn remove(
        &self,
        request: Request<wire::RemoveRequest>,
    ) -> Result<Response<wire::ChangeReply>, Status> {
        self.check_token(&request)?;
        let r = request.into_inner();
        let within = wait(r.wait_millis)?;
        self.blocking(move |n, urls| {
            let view = n
                .remove(&r.ids, within)
                .map_err(|e| membership_status(n, urls, e))?;
            Ok(changed(n, urls, view, true))
        })
        .await
    }

    async fn replace(
        &self,
        request: Request<wire::ReplaceRequest>,
    ) -> Result<Response<wire::ChangeReply>, Status> {
        self.check_token(&request)?;
        let r = request.into_inner();
        let (new, peer) = member(r.new_node, "new node")?;
        let within = wait(r.wait_millis)?;
        self.blocking(move |n, urls| {
            let view = n
                .replace(r.old_id, new, peer, within)
                .map_err(|e| membership_status(n, urls, e))?;
            Ok(changed(n, urls, view, true))
        })
        .await
    }

    async fn finish_joint(
        &self,
        request: Request<wire::FinishJointRequest>,
    ) -> Result<Response<wire::ChangeReply>, Status> {
        self.check_token(&request)?;
        let within = wait(request.into_inner().wait_millis)?;
        self.blocking(move |n, urls| {
            let err = |e| membership_status(n, urls, e);
            let before = n.membership().map_err(err)?;
            let view = n.finish_joint(within).map_err(err)?;
            let did = before.is_joint() && view.log_id != before.log_id;
            Ok(changed(n, urls, view, did))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn member_urls_need_a_scheme_a_host_and_a_port() {
        for good in [
            "http://127.0.0.1:7450",
            "https://node-2.example:7450/",
            "http://[::1]:1",
        ] {
            assert!(check_url(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "127.0.0.1:7450",
            "ftp://a:1",
            "http://a",
            "http://:7450",
            "http://a:port",
            "http://a:0",
            "http://a:7450/path",
            "http://a:99999",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
