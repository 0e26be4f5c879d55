//! [`AdminClient`]: the `Admin` service's client (`telha cluster`). A
//! membership call answered `UNAVAILABLE` with a leader hint is sent once
//! more, to the leader the hint names.

use std::time::Duration;

use tonic::metadata::AsciiMetadataValue;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Status};

use super::admin::{check_url, ADMIN_ERROR_METADATA, LEADER_ID_METADATA, LEADER_URL_METADATA};
use super::wire;
use super::wire::admin_client::AdminClient as Stub;

/// An admin call that failed: its status, the refusal's stable name
/// (`unknown_node`, `already_member`, `last_voter`, `joint`, ...; see
/// `transport/admin.rs`), and a leader hint when the node did not lead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url}: {message}")]
pub struct AdminError {
    /// The node that answered (or could not be reached).
    pub url: String,
    pub code: Code,
    pub name: Option<String>,
    pub message: String,
    pub leader_id: Option<u64>,
    pub leader_url: Option<String>,
}

impl AdminError {
    fn of(url: &str, s: &Status) -> AdminError {
        let meta = |k: &str| {
            s.metadata()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        AdminError {
            url: url.to_string(),
            code: s.code(),
            name: meta(ADMIN_ERROR_METADATA),
            message: s.message().to_string(),
            leader_id: meta(LEADER_ID_METADATA).and_then(|v| v.parse().ok()),
            leader_url: meta(LEADER_URL_METADATA).filter(|u| !u.is_empty()),
        }
    }

    fn local(url: &str, code: Code, message: String) -> AdminError {
        AdminError {
            url: url.to_string(),
            code,
            name: None,
            message,
            leader_id: None,
            leader_url: None,
        }
    }
}

/// A client of one node's `Admin` service.
#[derive(Clone)]
pub struct AdminClient {
    url: String,
    token: Option<AsciiMetadataValue>,
    timeout: Duration,
    stub: Stub<Channel>,
}

impl AdminClient {
    /// Connect to the node at `url` (`http://host:port`); `token`, when
    /// set, goes as `authorization: Bearer <token>`; `timeout` bounds the
    /// connect and each call beyond the call's own wait.
    pub async fn connect(
        url: &str,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<AdminClient, AdminError> {
        check_url(url).map_err(|e| AdminError::local(url, Code::InvalidArgument, e))?;
        let token = token
            .map(|t| {
                AsciiMetadataValue::try_from(format!("Bearer {}", t.trim())).map_err(|_| {
                    AdminError::local(
                        url,
                        Code::InvalidArgument,
                        "the token must be visible ASCII".into(),
                    )
                })
            })
            .transpose()?;
        let ep = Endpoint::from_shared(url.to_string())
            .map_err(|e| AdminError::local(url, Code::InvalidArgument, e.to_string()))?
            .connect_timeout(timeout);
        let channel = ep.connect().await.map_err(|e| {
            AdminError::local(url, Code::Unavailable, format!("cannot connect: {e}"))
        })?;
        Ok(AdminClient {
            url: url.to_string(),
            token,
            timeout,
            stub: Stub::new(channel),
        })
    }

    /// The node this client talks to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn request<T>(&self, msg: T, wait: Duration) -> Request<T> {
        let mut r = Request::new(msg);
        r.set_timeout(self.timeout + wait);
        if let Some(t) = &self.token {
            r.metadata_mut().insert("authorization", t.clone());
        }
        r
    }

    /// The node's status (not forwarded: every node answers its own).
    pub async fn status(&self) -> Result<wire::StatusReply, AdminError> {
        let r = self.request(wire::StatusRequest {}, Duration::ZERO);
        let mut stub = self.stub.clone();
        stub.status(r)
            .await
            .map(|r| r.into_inner())
            .map_err(|s| AdminError::of(&self.url, &s))
    }

    /// Make `members` (id, URL) a new cluster, sent to this node (one of
    /// them).
    pub async fn init(&self, members: &[(u64, String)]) -> Result<wire::ChangeReply, AdminError> {
        let members = members
            .iter()
            .map(|(id, url)| wire::Member {
                id: *id,
                url: url.clone(),
            })
            .collect();
        let r = self.request(wire::InitRequest { members }, Duration::ZERO);
        let mut stub = self.stub.clone();
        stub.init(r)
            .await
            .map(|r| r.into_inner())
            .map_err(|s| AdminError::of(&self.url, &s))
    }

    pub async fn add_learner(
        &self,
        id: u64,
        url: &str,
        wait: Duration,
    ) -> Result<wire::AddLearnerReply, AdminError> {
        let msg = wire::AddLearnerRequest {
            node: Some(wire::Member {
                id,
                url: url.to_string(),
            }),
            wait_millis: millis(wait),
        };
        self.on_leader(|c| {
            let msg = msg.clone();
            async move {
                let mut stub = c.stub.clone();
                stub.add_learner(c.request(msg, wait)).await
            }
        })
        .await
    }

    pub async fn promote(
        &self,
        ids: &[u64],
        wait: Duration,
    ) -> Result<wire::ChangeReply, AdminError> {
        let msg = wire::PromoteRequest {
            ids: ids.to_vec(),
            wait_millis: millis(wait),
        };
        self.on_leader(|c| {
            let msg = msg.clone();
            async move { c.stub.clone().promote(c.request(msg, wait)).await }
        })
        .await
    }

    pub async fn remove(
        &self,
        ids: &[u64],
        wait: Duration,
    ) -> Result<wire::ChangeReply, AdminError> {
        let msg = wire::RemoveRequest {
            ids: ids.to_vec(),
            wait_millis: millis(wait),
        };
        self.on_leader(|c| {
            let msg = msg.clone();
            async move { c.stub.clone().remove(c.request(msg, wait)).await }
        })
        .await
    }

    pub async fn replace(
        &self,
        old: u64,
        new: u64,
        url: &str,
        wait: Duration,
    ) -> Result<wire::ChangeReply, AdminError> {
        let msg = wire::ReplaceRequest {
            old_id: old,
            new_node: Some(wire::Member {
                id: new,
                url: url.to_string(),
            }),
            wait_millis: millis(wait),
        };
        self.on_leader(|c| {
            let msg = msg.clone();
            async move { c.stub.clone().replace(c.request(msg, wait)).await }
        })
        .await
    }

    pub async fn finish_joint(&self, wait: Duration) -> Result<wire::ChangeReply, AdminError> {
        let msg = wire::FinishJointRequest {
            wait_millis: millis(wait),
        };
        self.on_leader(|c| async move { c.stub.clone().finish_joint(c.request(msg, wait)).await })
            .await
    }

    /// `call` on this node; answered `UNAVAILABLE` with a leader URL other
    /// than this one, once more on that leader.
    async fn on_leader<T, F, Fut>(&self, call: F) -> Result<T, AdminError>
    where
        F: Fn(AdminClient) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, Status>>,
    {
        let e = match call(self.clone()).await {
            Ok(r) => return Ok(r.into_inner()),
            Err(s) => AdminError::of(&self.url, &s),
        };
        let hint = match (&e.code, &e.leader_url) {
            (Code::Unavailable, Some(u)) if *u != self.url => u.clone(),
            _ => return Err(e),
        };
        let leader = AdminClient::connect(&hint, None, self.timeout).await;
        let leader = match leader {
            Ok(mut c) => {
                c.token = self.token.clone();
                c
            }
            Err(e2) => {
                return Err(AdminError {
                    message: format!("{} (the leader hint {hint}: {})", e.message, e2.message),
                    ..e
                })
            }
        };
        call(leader.clone())
            .await
            .map(|r| r.into_inner())
            .map_err(|s| AdminError::of(&leader.url, &s))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
