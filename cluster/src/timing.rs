//! A node's Raft timing: heartbeat and election timeouts, openraft's
//! configuration from them, and the takeover grace they imply.

use std::time::Duration;

use crate::node::NodeError;

/// Raft timing. Defaults: heartbeat 100 ms, election 300–600 ms (a dead
/// leader is noticed in about 0.9–1.2 s).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub heartbeat: Duration,
    pub election_min: Duration,
    pub election_max: Duration,
}

pub const HEARTBEAT_DEFAULT: Duration = Duration::from_millis(100);
pub const ELECTION_MIN_DEFAULT: Duration = Duration::from_millis(300);
pub const ELECTION_MAX_DEFAULT: Duration = Duration::from_millis(600);

impl Default for Timing {
    fn default() -> Self {
        Timing {
            heartbeat: HEARTBEAT_DEFAULT,
            election_min: ELECTION_MIN_DEFAULT,
            election_max: ELECTION_MAX_DEFAULT,
        }
    }
}

impl Timing {
    /// openraft's configuration: these timings, and `keep_log` entries
    /// kept behind the newest snapshot. openraft's own snapshot policy is
    /// `Never`: the node triggers snapshots by its [`crate::snapshot::SnapshotPolicy`]
    /// (log size), and a purge follows each snapshot. The sender's
    /// deadlines are the router's own (`network/stream.rs`), not
    /// `install_snapshot_timeout`, whose 200 ms default makes big
    /// snapshots resend forever (renegade-fi/renegade #634).
    pub fn raft_config(&self, keep_log: u64) -> Result<openraft::Config, NodeError> {
        openraft::Config {
            cluster_name: "telha".into(),
            heartbeat_interval: self.heartbeat.as_millis() as u64,
            election_timeout_min: self.election_min.as_millis() as u64,
            election_timeout_max: self.election_max.as_millis() as u64,
            snapshot_policy: openraft::SnapshotPolicy::Never,
            max_in_snapshot_log_to_keep: keep_log,
            purge_batch_size: 1,
            ..Default::default()
        }
        .validate()
        .map_err(|e| NodeError(format!("raft config: {e}")))
    }

    /// Leases recovered by a new leader's engine are held this long
    /// (twice the election maximum): their workers could not heartbeat
    /// while no leader was elected.
    pub fn takeover_grace(&self) -> Duration {
        self.election_max * 2
    }
}
