//! `telha cluster ...`: the operator's commands on a cluster node's
//! `Admin` service (docs/operators.md, "telha cluster"). Ids and URLs are
//! checked here, so a malformed one is a usage error (exit 2) before any
//! node is called.

use std::time::Duration;

use clap::{Args, Subcommand};

use crate::args::parse_duration;

#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// A node of the cluster (http://host:port, its gRPC listener).
    /// Membership changes sent to a follower go to the leader it names.
    #[arg(long, global = true, value_parser = parse_url, value_name = "URL")]
    pub url: Option<String>,
    /// The client token, sent as `authorization: Bearer` [default: the
    /// --token-file, else $TELHA_TOKEN].
    #[arg(long, global = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// How long a change may wait for a learner to catch up or for the
    /// change to commit.
    #[arg(long, global = true, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub wait: Duration,
    #[command(subcommand)]
    pub command: Cluster,
}

#[derive(Debug, Subcommand)]
pub enum Cluster {
    /// Make MEMBERS a new cluster (ID=URL each; --url is one of them).
    Init {
        #[arg(required = true, value_parser = parse_member, value_name = "ID=URL")]
        members: Vec<(u64, String)>,
    },
    /// The node's view: members, roles, URLs, the leader, term, commit and
    /// applied index, joint state; on the leader each member's lag.
    Status,
    /// Add a new node as a learner (it receives the log, does not vote)
    /// and wait for it to catch up.
    Add {
        #[arg(value_parser = parse_id)]
        id: u64,
        #[arg(value_parser = parse_url)]
        node_url: String,
    },
    /// Make learners voters (each caught up first).
    Promote {
        #[arg(required = true, value_parser = parse_id)]
        ids: Vec<u64>,
    },
    /// Take members out; a removed leader steps down once it commits.
    Remove {
        #[arg(required = true, value_parser = parse_id)]
        ids: Vec<u64>,
    },
    /// Replace voter OLD by a new node NEW at NEW_URL (a new id, never a
    /// removed one).
    Replace {
        #[arg(value_parser = parse_id)]
        old: u64,
        #[arg(value_parser = parse_id)]
        new: u64,
        #[arg(value_parser = parse_url)]
        new_url: String,
    },
    /// Finish a joint configuration an interrupted change left.
    Finish,
}

fn parse_id(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("node id 0 is not an id (ids start at 1)".into()),
        Ok(id) => Ok(id),
        Err(_) => Err(format!("{s:?} is not a node id (a positive integer)")),
    }
}

fn parse_url(s: &str) -> Result<String, String> {
    telha_jobs_cluster::transport::check_url(s.trim())?;
    Ok(s.trim().to_string())
}

fn parse_member(s: &str) -> Result<(u64, String), String> {
    let (id, url) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not ID=URL (like 1=http://10.0.0.1:7450)"))?;
    Ok((parse_id(id)?, parse_url(url)?))
}
