//! A node's data directory `D` and its `D/node.toml` (node id, cluster
//! id, an unfinished seed), and the rules a start checks before anything
//! in `D` is opened (docs/ARCHITECTURE.md "Cluster", "Starting a node").
//!
//! ```text
//! # telha cluster node (docs/ARCHITECTURE.md, "Cluster")
//! node_id = 1
//! cluster_id = "0193a5c2-..."
//! ```
//!
//! **A wiped member must not come back under its id** (openraft's FAQ: a
//! member restarted with an empty log under its old id panics the leader,
//! and as a voter it could grant a vote that loses committed entries). So
//! a start with an empty (or missing) `D` is refused unless it says what
//! it is for ([`EmptyDir`]): a member of a cluster about to be initialized,
//! or a node joining an existing cluster as a learner under an id never
//! used before. A `D` whose `node.toml` or store is there but whose log
//! (`D/raft/`: entries and vote) is gone is refused whatever the intent.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use openraft::network::RPCTypes;
use openraft::Raft;
use serde::{Deserialize, Serialize};

use crate::network::{Arriving, Gate};
use crate::types::TypeConfig;

/// The file's name in `D`.
pub const NODE_FILE: &str = "node.toml";

/// What a start on an empty data directory is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmptyDir {
    /// Refused ([`StartRefused::EmptyDataDir`]): the default, so a member
    /// whose disk was wiped or replaced is not restarted as if new.
    #[default]
    Refuse,
    /// One of the members of a new cluster that one of them is about to
    /// initialize (`Node::initialize`).
    Initial,
    /// A new node joining an existing cluster as a learner, under an id
    /// the cluster never had. Until its first membership arrives it
    /// refuses vote requests, and append-entries from a leader whose
    /// configuration already has its id as a voter (a wiped member under
    /// its old id): [`Node::join_refused`](super::Node::join_refused).
    Join,
}

/// Why a node did not start (or, joining, was refused by the cluster).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartRefused {
    #[error(
        "node {id}: data directory {dir} is empty: a member whose data was wiped must not \
         restart under its id; start a new node with an explicit intent (EmptyDir::Initial for \
         a new cluster, EmptyDir::Join to join one under a new id) and, if this id was a \
         member, remove it from the cluster"
    )]
    EmptyDataDir { id: u64, dir: PathBuf },
    #[error(
        "node {id}: {dir} holds a node's data but its raft log and vote ({dir}/raft) are gone: \
         a member's id must not come back without its log; wipe the directory and join the \
         cluster under a new id"
    )]
    LogMissing { id: u64, dir: PathBuf },
    #[error("node {id}: {dir}/node.toml belongs to node {found}, not {id}")]
    OtherNode { id: u64, found: u64, dir: PathBuf },
    #[error(
        "node {id}: refused by node {leader}, whose configuration has {id} as a voter while this \
         node's data directory is new: this id is a member whose data was wiped; join under a \
         new id (and remove {id} from the cluster)"
    )]
    WipedMember { id: u64, leader: u64 },
    #[error("node {id}: {dir}/node.toml: {why}")]
    BadNodeFile { id: u64, dir: PathBuf, why: String },
}

/// `D/node.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFile {
    pub node_id: u64,
    /// Set by the node that initializes or seeds a cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// The plain store this node was seeded from, while the seed is
    /// unfinished (`seed.rs`): the next start finishes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeding_from: Option<PathBuf>,
    /// Started with [`EmptyDir::Join`] and no membership applied yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub joining: bool,
}

impl NodeFile {
    pub fn new(node_id: u64) -> NodeFile {
        NodeFile {
            node_id,
            cluster_id: None,
            seeding_from: None,
            joining: false,
        }
    }

    /// `D/node.toml`, if there is one.
    pub fn read(id: u64, dir: &Path) -> Result<Option<NodeFile>, StartRefused> {
        let bad = |why: String| StartRefused::BadNodeFile {
            id,
            dir: dir.to_path_buf(),
            why,
        };
        let text = match std::fs::read_to_string(dir.join(NODE_FILE)) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(bad(e.to_string())),
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|e| bad(e.to_string()))
    }

    /// Write it to `D/node.toml` (a synced temporary file renamed over it,
    /// then `D` synced).
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        use std::io::Write;
        let body = toml::to_string(self).map_err(|e| e.to_string())?;
        let text = format!("# telha cluster node (docs/ARCHITECTURE.md, \"Cluster\")\n{body}");
        let tmp = dir.join(format!("{NODE_FILE}.tmp"));
        let io = |e: std::io::Error| format!("{}: {e}", tmp.display());
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(io)?;
        std::fs::rename(&tmp, dir.join(NODE_FILE)).map_err(io)?;
        crate::snapshot::sync_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))
    }
}

/// Whether `dir` holds nothing (or does not exist).
pub fn is_empty(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(_) => !dir.exists(),
    }
}

/// Whether the log store at `D/raft` is missing or holds no RocksDB.
fn log_missing(dir: &Path) -> bool {
    !dir.join("raft").join("CURRENT").exists()
}

/// The start rules (module doc) without writing anything: what
/// [`prepare`] (and so `Node::start`) would refuse, for a caller that
/// checks all its input before it writes (`telha serve --cluster`).
pub fn check(id: u64, dir: &Path, intent: EmptyDir) -> Result<(), StartRefused> {
    if is_empty(dir) {
        return match intent {
            EmptyDir::Refuse => Err(StartRefused::EmptyDataDir {
                id,
                dir: dir.to_path_buf(),
            }),
            EmptyDir::Initial | EmptyDir::Join => Ok(()),
        };
    }
    let file = NodeFile::read(id, dir)?;
    check_existing(id, dir, file.as_ref())
}

/// The rules for a directory that holds something.
fn check_existing(id: u64, dir: &Path, file: Option<&NodeFile>) -> Result<(), StartRefused> {
    if let Some(f) = file {
        if f.node_id != id {
            return Err(StartRefused::OtherNode {
                id,
                found: f.node_id,
                dir: dir.to_path_buf(),
            });
        }
    }
    // A seed not yet started Raft has no log yet: the start makes it.
    let seeding = file.is_some_and(|f| f.seeding_from.is_some());
    if log_missing(dir) && !seeding {
        return Err(StartRefused::LogMissing {
            id,
            dir: dir.to_path_buf(),
        });
    }
    Ok(())
}

/// The start rules (module doc), checked before anything in `dir` is
/// opened: the node file to run with (written for a new directory and for
/// one that predates the file).
pub fn prepare(id: u64, dir: &Path, intent: EmptyDir) -> Result<NodeFile, StartRefused> {
    if is_empty(dir) {
        return match intent {
            EmptyDir::Refuse => Err(StartRefused::EmptyDataDir {
                id,
                dir: dir.to_path_buf(),
            }),
            EmptyDir::Initial | EmptyDir::Join => {
                let mut f = NodeFile::new(id);
                f.joining = intent == EmptyDir::Join;
                write_new(id, dir, &f)?;
                Ok(f)
            }
        };
    }
    let file = NodeFile::read(id, dir)?;
    check_existing(id, dir, file.as_ref())?;
    match file {
        Some(f) => Ok(f),
        // A directory from before node.toml (issue 38's nodes): adopted.
        None => {
            let f = NodeFile::new(id);
            write_new(id, dir, &f)?;
            Ok(f)
        }
    }
}

fn write_new(id: u64, dir: &Path, f: &NodeFile) -> Result<(), StartRefused> {
    std::fs::create_dir_all(dir)
        .map_err(|e| e.to_string())
        .and_then(|()| f.write(dir))
        .map_err(|why| StartRefused::BadNodeFile {
            id,
            dir: dir.to_path_buf(),
            why,
        })
}

/// The router's gate of a node started with [`EmptyDir::Join`], until its
/// log holds a membership with itself in it (then `joining` is cleared
/// from `node.toml`): while its log is empty (no entry, no snapshot) it
/// refuses vote requests, and any RPC from a sender whose configuration
/// already has it as a voter. A new node joins as a learner, so only a
/// member whose data was wiped meets that: refused with
/// [`StartRefused::WipedMember`] (kept in `refused`), so the leader sees
/// it unreachable (openraft 0.9 panics on a voter whose log went back)
/// and its vote never counts.
pub(super) fn join_gate(
    id: u64,
    dir: &Path,
    raft: Raft<TypeConfig>,
    refused: Arc<Mutex<Option<StartRefused>>>,
) -> Gate {
    let joined = Arc::new(AtomicBool::new(false));
    let dir = dir.to_path_buf();
    Arc::new(move |a: Arriving| {
        if joined.load(Ordering::Acquire) {
            return Ok(());
        }
        let (member, empty) = {
            let m = raft.metrics();
            let m = m.borrow();
            let member = m.membership_config.membership().get_node(&id).is_some();
            (member, m.last_log_index.is_none() && m.snapshot.is_none())
        };
        if member {
            if !joined.swap(true, Ordering::AcqRel) {
                if let Ok(Some(mut f)) = NodeFile::read(id, &dir) {
                    f.joining = false;
                    let _ = f.write(&dir);
                }
            }
            return Ok(());
        }
        if empty && (a.as_voter || a.action == RPCTypes::Vote) {
            let why = StartRefused::WipedMember { id, leader: a.from };
            *refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
            return Err(why.to_string());
        }
        Ok(())
    })
}
