//! `telha serve --cluster`: start this node (`telha_jobs_cluster::node`:
//! Raft and the engine watcher on the node's own 2-thread runtime, peers
//! over gRPC), bootstrap a new cluster if asked, and serve the engine of
//! the current term on the client listener, with the peer service mounted
//! beside the Jobs service. Until SIGTERM/SIGINT.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::ToSocketAddrs;
use std::sync::Arc;

use telha_jobs::{Config, Queue};
use telha_jobs_cluster::network::Router;
use telha_jobs_cluster::node::{dir, Bootstrap, EmptyDir, Node, NodeOptions};
use telha_jobs_cluster::transport::{
    check_peer_listener, AdminService, GrpcNetwork, GrpcOptions, PeerService,
};
use telha_jobs_server::{
    serve_source, Mount, NotLeader, QueueSource, ServeOptions, TlsPem, LISTEN_DEFAULT,
};

use crate::args::ServeArgs;
use crate::cluster_args::ClusterSetup;
use crate::store::Failure;

/// The engine of this node's current term, asked per call.
struct NodeSource {
    node: Arc<Node>,
    peers: BTreeMap<u64, String>,
}

impl QueueSource for NodeSource {
    fn queue(&self) -> Result<Queue, NotLeader> {
        self.node.queue().map_err(|u| NotLeader {
            reason: u.to_string(),
            leader_id: u.leader,
            // The stored membership's URL, else this node's --peers.
            leader_url: u.leader.and_then(|l| {
                self.node
                    .member_url(l)
                    .or_else(|| self.peers.get(&l).cloned())
            }),
        })
    }

    fn extra_metrics(&self) -> String {
        telha_jobs_cluster::metrics::render(&self.node)
    }
}

/// Every TCP address among `listen` must pass the peer listener rule
/// (a peer token off loopback).
fn check_listeners(listen: &[String], token: Option<&str>) -> Result<(), Failure> {
    for a in listen {
        if a.trim().starts_with("unix:") {
            continue;
        }
        let addrs = a
            .trim()
            .to_socket_addrs()
            .map_err(|e| Failure::usage(format!("--listen {a}: {e}")))?;
        for at in addrs {
            check_peer_listener(at, token).map_err(|e| {
                Failure::usage(format!(
                    "{e} (--peer-token-file, TELHA_PEER_TOKEN or cluster.peer_token)"
                ))
            })?;
        }
    }
    Ok(())
}

/// Serve as node `c.node_id` until a signal.
pub fn serve_until_signal(
    a: ServeArgs,
    c: ClusterSetup,
    listen: Vec<String>,
    token: Option<String>,
) -> Result<(), Failure> {
    if a.tls_cert.is_some() {
        return Err(Failure::usage(
            "--cluster with --tls-cert is not supported yet (peers speak plain http:// to each \
             other); run the cluster on a private network, or without TLS",
        ));
    }
    if !listen.iter().any(|l| !l.trim().starts_with("unix:")) {
        return Err(Failure::usage(
            "--cluster needs a TCP --listen address: peers reach this node there",
        ));
    }
    check_listeners(&listen, c.peer_token.as_deref())?;
    let config = Config::load(None).map_err(|e| Failure::usage(format!("configuration: {e}")))?;
    let intent = if c.bootstrap {
        EmptyDir::Initial
    } else {
        EmptyDir::Refuse
    };
    dir::check(c.node_id, &c.data_dir, intent).map_err(|e| {
        let hint = match e {
            dir::StartRefused::EmptyDataDir { .. } => {
                " (a member of a new cluster starts with --bootstrap)"
            }
            _ => "",
        };
        Failure::usage(format!("{e}{hint}"))
    })?;
    let addrs: HashMap<u64, String> = c.peers.iter().map(|(&i, u)| (i, u.clone())).collect();
    let network = GrpcNetwork::new(
        addrs.clone(),
        c.peer_token.as_deref(),
        GrpcOptions::default(),
    )
    .map_err(|e| Failure::usage(e.to_string()))?;
    let router = Router::new(c.node_id);
    let opts = NodeOptions {
        queue_config: config.clone(),
        empty_dir: intent,
        grpc: Some(network),
        ..NodeOptions::default()
    };
    let node = Node::start(c.node_id, &c.data_dir, &router, opts)
        .map_err(|e| Failure::storage(e.to_string()))?;
    let node = Arc::new(node);
    node.check_peers(&c.peers)
        .map_err(|e| Failure::usage(e.to_string()))?;
    let mut listen = listen.into_iter();
    let peer = PeerService::new(c.node_id, router.clone(), c.peer_token.as_deref());
    // `telha cluster` talks to this: the client token's rule (admin.rs).
    let admin = AdminService::new(node.clone(), token.as_deref()).with_peer_urls(addrs);
    let handle = serve_source(
        Arc::new(NodeSource {
            node: node.clone(),
            peers: c.peers.clone(),
        }),
        &config,
        ServeOptions {
            listen: listen.next().unwrap_or_else(|| LISTEN_DEFAULT.into()),
            also_listen: listen.collect(),
            socket_mode: a.socket_mode,
            token,
            tls: None::<TlsPem>,
            metrics_listen: a.metrics_listen,
            ui: a.ui,
            ui_read_only: a.ui_read_only,
            allow_remote_backup: a.allow_remote_backup,
            ..ServeOptions::default()
        },
        // One line per service mounted beside Jobs.
        vec![
            Mount::new(peer.into_server()),
            Mount::new(admin.into_server()),
        ],
    )?;
    if c.bootstrap {
        // After the listener is up, so the others can answer this node.
        match node.bootstrap(&c.peers) {
            Ok(Bootstrap::Initialized) => eprintln!(
                "telha: node {}: cluster initialized with nodes {:?}",
                c.node_id,
                c.peers.keys().collect::<Vec<_>>()
            ),
            Ok(Bootstrap::AlreadyInitialized) => eprintln!(
                "telha: node {}: --bootstrap: already initialized, nothing done",
                c.node_id
            ),
            Err(e) => {
                handle.shutdown(a.grace);
                return Err(Failure::storage(e.to_string()));
            }
        }
    }
    {
        let mut out = std::io::stdout().lock();
        for (i, at) in handle.addresses().iter().enumerate() {
            let also = if i == 0 { "" } else { "also " };
            let _ = writeln!(out, "{also}listening on {}", at.url(false));
        }
        if let Some(m) = handle.metrics_addr() {
            let _ = writeln!(out, "metrics on http://{m}/metrics");
        }
        if let Some(u) = handle.ui_url() {
            let _ = writeln!(out, "ui on {u}");
        }
        let _ = writeln!(out, "node {} of {}", c.node_id, peer_list(&c.peers));
        let _ = out.flush();
    }
    eprintln!(
        "telha: node {} serving {} (pid {})",
        c.node_id,
        c.data_dir.display(),
        std::process::id()
    );
    crate::serve::wait_for_signal()?;
    eprintln!("telha: shutting down");
    handle.shutdown(a.grace);
    // The node stops in order as the last handle goes: engine fenced,
    // Raft shut down, stores closed.
    drop(node);
    Ok(())
}

fn peer_list(peers: &BTreeMap<u64, String>) -> String {
    peers
        .iter()
        .map(|(i, u)| format!("{i}={u}"))
        .collect::<Vec<_>>()
        .join(",")
}
