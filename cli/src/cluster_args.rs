//! `telha serve --cluster`: its flags, the `[cluster]` table of the config
//! file (`$TELHA_JOBS_CONFIG`), and the checks made before anything is
//! written (docs/operators.md "A three-node cluster").
//!
//! ```toml
//! [cluster]
//! node_id = 1
//! peers = "1=http://10.0.0.1:7450,2=http://10.0.0.2:7450,3=http://10.0.0.3:7450"
//! data_dir = "/var/lib/telha/node"
//! peer_token = "..."        # or --peer-token-file / TELHA_PEER_TOKEN
//! bootstrap = true
//! ```
//!
//! A flag wins over the file's key. Only the `--cluster` flag turns
//! cluster mode on; the table alone does not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::Args;

use crate::store::Failure;

/// The cluster flags of `telha serve`.
#[derive(Debug, Args, Default)]
pub struct ClusterFlags {
    /// Run as a node of a replicated cluster (Raft): the leader serves
    /// the queue, the other nodes answer UNAVAILABLE with the leader's id
    /// and URL (`telha-leader-id`, `telha-leader-url`). Needs --node-id,
    /// --peers and --data-dir (or the [cluster] table of the config file);
    /// not with --db.
    #[arg(long)]
    pub cluster: bool,
    /// This node's id: one of the ids in --peers.
    #[arg(long, value_name = "N", requires = "cluster")]
    pub node_id: Option<u64>,
    /// Every member as ID=URL, comma-separated
    /// (1=http://10.0.0.1:7450,2=...): the URL of its `telha serve`
    /// listener, which peers and clients both use.
    #[arg(long, value_name = "LIST", requires = "cluster")]
    pub peers: Option<String>,
    /// This node's data directory (its Raft log, store and snapshots).
    #[arg(long, value_name = "DIR", requires = "cluster")]
    pub data_dir: Option<PathBuf>,
    /// The token peers send each other (read from FILE, trimmed)
    /// [default: $TELHA_PEER_TOKEN, else the config file's peer_token];
    /// required when the listener is not loopback.
    #[arg(long, value_name = "FILE", requires = "cluster")]
    pub peer_token_file: Option<PathBuf>,
    /// Initialize a new cluster with the --peers members if this node's
    /// Raft state is empty (logged, and nothing done, when it is not).
    /// Give it to every member of a new cluster; an empty data directory
    /// is refused without it.
    #[arg(long, requires = "cluster")]
    pub bootstrap: bool,
}

/// A checked cluster setup.
#[derive(Debug, Clone)]
pub struct ClusterSetup {
    pub node_id: u64,
    pub peers: BTreeMap<u64, String>,
    pub data_dir: PathBuf,
    pub peer_token: Option<String>,
    pub bootstrap: bool,
}

/// What the config file's `[cluster]` table says.
#[derive(Debug, Default)]
struct FileKeys {
    node_id: Option<u64>,
    peers: Option<String>,
    data_dir: Option<PathBuf>,
    peer_token: Option<String>,
    bootstrap: Option<bool>,
}

fn usage(m: impl Into<String>) -> Failure {
    Failure::usage(m.into())
}

/// The `[cluster]` table of the file at `$TELHA_JOBS_CONFIG`, if any.
fn file_keys() -> Result<FileKeys, Failure> {
    let Some(path) = std::env::var_os("TELHA_JOBS_CONFIG").filter(|p| !p.is_empty()) else {
        return Ok(FileKeys::default());
    };
    let path = PathBuf::from(path);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| usage(format!("config file {}: {e}", path.display())))?;
    parse_file_keys(&text).map_err(|m| usage(format!("config file {}: {m}", path.display())))
}

fn parse_file_keys(text: &str) -> Result<FileKeys, String> {
    let root: toml::Table = text.parse().map_err(|e| format!("not valid TOML: {e}"))?;
    let Some(t) = root.get("cluster") else {
        return Ok(FileKeys::default());
    };
    let t = t.as_table().ok_or("[cluster] must be a table")?;
    let mut k = FileKeys::default();
    for (key, v) in t {
        let bad = |want: &str| format!("cluster.{key} must be {want}");
        match key.as_str() {
            "node_id" => {
                let n = v.as_integer().ok_or_else(|| bad("an integer"))?;
                k.node_id = Some(u64::try_from(n).map_err(|_| bad("a positive integer"))?);
            }
            "peers" => {
                k.peers = Some(match v {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Table(m) => {
                        let mut items = Vec::new();
                        for (id, url) in m {
                            let url = url.as_str().ok_or_else(|| bad("id = \"URL\" pairs"))?;
                            items.push(format!("{id}={url}"));
                        }
                        items.join(",")
                    }
                    _ => return Err(bad("\"ID=URL,...\" or a table of id = \"URL\"")),
                })
            }
            "data_dir" => k.data_dir = Some(v.as_str().ok_or_else(|| bad("a string"))?.into()),
            "peer_token" => {
                k.peer_token = Some(v.as_str().ok_or_else(|| bad("a string"))?.to_string())
            }
            "bootstrap" => k.bootstrap = Some(v.as_bool().ok_or_else(|| bad("true or false"))?),
            other => {
                return Err(format!(
                    "unknown key cluster.{other} (expected one of: node_id, peers, data_dir, \
                     peer_token, bootstrap)"
                ))
            }
        }
    }
    Ok(k)
}

/// `1=http://a:7450,2=http://b:7450` as id → URL: ids positive, URLs
/// `http://host:port`, no id or URL twice.
pub fn parse_peers(s: &str) -> Result<BTreeMap<u64, String>, String> {
    let mut peers = BTreeMap::new();
    let mut urls = BTreeSet::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((id, url)) = item.split_once('=') else {
            return Err(format!("--peers item {item:?} is not ID=URL"));
        };
        let id: u64 =
            id.trim().parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                format!("--peers item {item:?}: the id must be a positive integer")
            })?;
        let url = url.trim().trim_end_matches('/').to_string();
        check_url(&url).map_err(|why| format!("--peers item {item:?}: {why}"))?;
        if !urls.insert(url.clone()) {
            return Err(format!("--peers names {url} twice"));
        }
        if peers.insert(id, url).is_some() {
            return Err(format!("--peers names node {id} twice"));
        }
    }
    if peers.is_empty() {
        return Err("--peers names no node (ID=URL,...)".into());
    }
    Ok(peers)
}

fn check_url(url: &str) -> Result<(), String> {
    if url.starts_with("https://") {
        return Err("TLS between peers is not supported yet: use http:// URLs".into());
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(format!("{url:?} is not an http://host:port URL"));
    };
    match rest.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !rest.contains('/') => {
            port.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("{url:?}: the port is not a number from 1 to 65535"))?;
            Ok(())
        }
        _ => Err(format!("{url:?} is not an http://host:port URL")),
    }
}

/// The token from `--peer-token-file`, else `$TELHA_PEER_TOKEN`, else the
/// file's `peer_token`; an empty one is a usage error.
fn peer_token(file: Option<&Path>, from_config: Option<String>) -> Result<Option<String>, Failure> {
    let t = match file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .map_err(|e| usage(format!("--peer-token-file {}: {e}", f.display())))?,
        ),
        None => std::env::var("TELHA_PEER_TOKEN").ok().or(from_config),
    };
    match t.map(|t| t.trim().to_string()) {
        Some(t) if t.is_empty() => Err(usage(
            "the peer token is empty (--peer-token-file, TELHA_PEER_TOKEN or cluster.peer_token)",
        )),
        Some(t) if !t.bytes().all(|b| b.is_ascii_graphic()) => {
            Err(usage("the peer token must be visible ASCII without spaces"))
        }
        t => Ok(t),
    }
}

/// The setup `flags` and the config file describe, checked (nothing is
/// written): `db_given` is whether `--db` was given.
pub fn setup(flags: &ClusterFlags, db_given: bool) -> Result<ClusterSetup, Failure> {
    if db_given {
        return Err(usage(
            "--cluster keeps its store in --data-dir: --db is for a single store, not a node",
        ));
    }
    let file = file_keys()?;
    let node_id = flags
        .node_id
        .or(file.node_id)
        .ok_or_else(|| usage("--cluster needs --node-id N (or cluster.node_id)"))?;
    if node_id == 0 {
        return Err(usage("--node-id must be a positive integer"));
    }
    let peers = flags
        .peers
        .clone()
        .or(file.peers)
        .ok_or_else(|| usage("--cluster needs --peers ID=URL,... (or cluster.peers)"))?;
    let peers = parse_peers(&peers).map_err(usage)?;
    if !peers.contains_key(&node_id) {
        return Err(usage(format!(
            "--node-id {node_id} is not in --peers (nodes {})",
            peers
                .keys()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let data_dir = flags
        .data_dir
        .clone()
        .or(file.data_dir)
        .ok_or_else(|| usage("--cluster needs --data-dir DIR (or cluster.data_dir)"))?;
    let peer_token = peer_token(flags.peer_token_file.as_deref(), file.peer_token)?;
    Ok(ClusterSetup {
        node_id,
        peers,
        data_dir,
        peer_token,
        bootstrap: flags.bootstrap || file.bootstrap.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_lists_parse_and_bad_ones_say_why() {
        let p = parse_peers("1=http://127.0.0.1:7450, 2=http://h:1/").unwrap();
        assert_eq!(p[&1], "http://127.0.0.1:7450");
        assert_eq!(p[&2], "http://h:1");
        for (bad, why) in [
            ("", "names no node"),
            ("1", "not ID=URL"),
            ("x=http://a:1", "positive integer"),
            ("0=http://a:1", "positive integer"),
            ("1=a:1", "not an http://host:port URL"),
            ("1=http://a", "not an http://host:port URL"),
            ("1=http://a:0", "port"),
            ("1=https://a:1", "TLS"),
            ("1=http://a:1,1=http://b:1", "node 1 twice"),
            ("1=http://a:1,2=http://a:1", "twice"),
        ] {
            let e = parse_peers(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_config_table_is_read_and_unknown_keys_refused() {
        let k = parse_file_keys(
            "[jobs]\nmax_attempts = 3\n[cluster]\nnode_id = 2\n\
             peers = { 1 = \"http://a:1\", 2 = \"http://b:1\" }\n\
             data_dir = \"/d\"\nbootstrap = true\npeer_token = \"t\"\n",
        )
        .unwrap();
        assert_eq!(k.node_id, Some(2));
        assert_eq!(
            parse_peers(&k.peers.unwrap()).unwrap().len(),
            2,
            "a table of peers"
        );
        assert_eq!(k.data_dir, Some(PathBuf::from("/d")));
        assert_eq!(k.bootstrap, Some(true));
        assert_eq!(k.peer_token.as_deref(), Some("t"));
        let e = parse_file_keys("[cluster]\nnode = 1\n").unwrap_err();
        assert!(e.contains("unknown key cluster.node"), "{e}");
        let e = parse_file_keys("[cluster]\nnode_id = -1\n").unwrap_err();
        assert!(e.contains("positive"), "{e}");
    }
}
