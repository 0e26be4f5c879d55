//! `telha cluster`: the `Admin` service of a cluster node through
//! [`AdminClient`] (which follows a leader hint once), printed by the
//! cluster crate's renderers (text and `--json`).

use std::time::Duration;

use serde_json::json;
use telha_jobs_cluster::transport::admin_render::{
    membership_json, membership_text, status_json, status_text,
};
use telha_jobs_cluster::transport::wire;
use telha_jobs_cluster::transport::{AdminClient, AdminError};
use tonic::Code;

use crate::args_cluster::{Cluster, ClusterArgs};
use crate::commands::Output;
use crate::store::{Exit, Failure};

/// How long connecting may take, and each call beyond its `--wait`.
const CONNECT_DEFAULT: Duration = Duration::from_secs(10);

/// Exit codes by status: the caller's mistake (a bad id, an existing
/// member, a refused change, a missing token) is usage (2); an unknown id
/// not found (1); a node that cannot answer (or an outcome unknown)
/// storage (4), as for `--server`.
fn failure(e: AdminError) -> Failure {
    let exit = match e.code {
        Code::NotFound => Exit::NotFound,
        Code::InvalidArgument
        | Code::AlreadyExists
        | Code::FailedPrecondition
        | Code::Unauthenticated
        | Code::PermissionDenied => Exit::Usage,
        _ => Exit::Storage,
    };
    let mut message = e.to_string();
    if let (Some(id), Some(url)) = (e.leader_id, &e.leader_url) {
        message.push_str(&format!(" (leader: node {id} at {url})"));
    }
    Failure { exit, message }
}

fn changed(json: bool, what: String, reply: wire::ChangeReply) -> Output {
    let m = reply.membership.unwrap_or_default();
    if json {
        return Output::Json(json!({
            "changed": reply.changed,
            "membership": membership_json(&m),
        }));
    }
    Output::Text(format!("{what}\nmembership now:\n{}", membership_text(&m)))
}

pub fn run(
    a: ClusterArgs,
    token: Option<String>,
    timeout: Option<Duration>,
    json: bool,
) -> Result<Output, Failure> {
    let url = a
        .url
        .ok_or_else(|| Failure::usage("telha cluster needs --url URL (a node of the cluster)"))?;
    let token = a.token.or(token);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::storage(format!("cannot start a runtime: {e}")))?;
    let timeout = timeout.unwrap_or(CONNECT_DEFAULT);
    let wait = a.wait;
    rt.block_on(async move {
        let c = AdminClient::connect(&url, token.as_deref(), timeout)
            .await
            .map_err(failure)?;
        Ok(match a.command {
            Cluster::Status => {
                let s = c.status().await.map_err(failure)?;
                if json {
                    Output::Json(status_json(&s))
                } else {
                    Output::Text(status_text(&s))
                }
            }
            Cluster::Init { members } => {
                let mut seen = std::collections::BTreeSet::new();
                if let Some((id, _)) = members.iter().find(|(id, _)| !seen.insert(*id)) {
                    return Err(Failure::usage(format!("member {id} given twice")));
                }
                let r = c.init(&members).await.map_err(failure)?;
                let ids: Vec<u64> = members.iter().map(|(id, _)| *id).collect();
                changed(json, format!("cluster initialized with members {ids:?}"), r)
            }
            Cluster::Add { id, node_url } => {
                let p = c.add_learner(id, &node_url, wait).await.map_err(failure)?;
                let m = p.membership.clone().unwrap_or_default();
                if json {
                    Output::Json(json!({
                        "changed": true,
                        "learner": {
                            "id": p.id, "caught_up": p.caught_up, "matched": p.matched,
                            "target": p.target, "by_snapshot": p.by_snapshot,
                            "waited_ms": p.waited_millis,
                        },
                        "membership": membership_json(&m),
                    }))
                } else {
                    let state = if p.caught_up {
                        format!("caught up to index {} in {} ms", p.target, p.waited_millis)
                    } else {
                        format!(
                            "not caught up yet (holds {:?} of {}); promote it once it has",
                            p.matched, p.target
                        )
                    };
                    Output::Text(format!(
                        "node {id} added as a learner at {node_url}: {state}\nmembership now:\n{}",
                        membership_text(&m)
                    ))
                }
            }
            Cluster::Promote { ids } => {
                let r = c.promote(&ids, wait).await.map_err(failure)?;
                changed(json, format!("promoted {ids:?} to voters"), r)
            }
            Cluster::Remove { ids } => {
                let r = c.remove(&ids, wait).await.map_err(failure)?;
                changed(json, format!("removed {ids:?} (stop those nodes now)"), r)
            }
            Cluster::Replace { old, new, new_url } => {
                let r = c.replace(old, new, &new_url, wait).await.map_err(failure)?;
                changed(
                    json,
                    format!("replaced voter {old} by node {new} at {new_url} (stop node {old})"),
                    r,
                )
            }
            Cluster::Finish => {
                let r = c.finish_joint(wait).await.map_err(failure)?;
                let what = if r.changed {
                    "the joint configuration is finished".to_string()
                } else {
                    "the membership is not joint: nothing changed".to_string()
                };
                changed(json, what, r)
            }
        })
    })
}
