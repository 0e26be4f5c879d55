//! The `Backup` RPC: `Queue::backup` into a directory on the server's
//! filesystem, answered only over a Unix socket or a loopback TCP
//! connection unless `ServeOptions::allow_remote_backup` says otherwise.

use std::net::SocketAddr;

use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;
use tonic::{Request, Status};

use crate::shared::{invalid, Shared};

/// Whether a connection from `peer` may ask for a backup: a Unix socket
/// (no TCP peer: its file mode decided who connects), a loopback address,
/// or any when the server allows it.
pub(crate) fn allowed(peer: Option<SocketAddr>, allow_remote: bool) -> bool {
    allow_remote || peer.is_none_or(|a| a.ip().to_canonical().is_loopback())
}

pub(crate) async fn backup(
    shared: &Shared,
    req: Request<pb::BackupRequest>,
) -> Result<pb::BackupResponse, Status> {
    let peer = req.remote_addr();
    if !allowed(peer, shared.allow_remote_backup) {
        return Err(invalid(format!(
            "Backup writes to the server's filesystem and is answered only over a Unix socket \
             or a loopback connection (this one is from {}); start the server with \
             allow_remote_backup (`telha serve --allow-remote-backup`) to allow it",
            peer.map_or_else(|| "elsewhere".to_string(), |a| a.to_string())
        )));
    }
    let dir = req.into_inner().dir;
    if dir.is_empty() {
        return Err(invalid("Backup: `dir` is empty"));
    }
    let info = shared.run(move |q| q.backup(&dir)).await?;
    Ok(cv::backup_to_pb(&info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_peers_unless_allowed() {
        let at = |s: &str| Some(s.parse::<SocketAddr>().unwrap());
        assert!(allowed(None, false));
        assert!(allowed(at("127.0.0.1:5"), false));
        assert!(allowed(at("[::1]:5"), false));
        assert!(allowed(at("[::ffff:127.0.0.1]:5"), false));
        assert!(!allowed(at("10.0.0.2:5"), false));
        assert!(!allowed(at("[2001:db8::1]:5"), false));
        assert!(allowed(at("10.0.0.2:5"), true));
    }
}
