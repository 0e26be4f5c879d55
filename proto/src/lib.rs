//! The telha-jobs gRPC protocol (`proto/telha/jobs/v1/jobs.proto`), shared
//! by the server (`telha-jobs-server`) and the client (`telha-jobs-client`):
//!
//! - [`v1`]: the generated messages, the `Jobs` service's server trait and
//!   client stub (prost + tonic, compiled by protox: no system `protoc`);
//! - [`cluster_v1`]: the peer protocol of a cluster
//!   (`proto/telha/cluster/v1/raft.proto`, the `Raft` service, and
//!   `admin.proto`, the operator's `Admin` service), used by
//!   the cluster crate's transport;
//! - [`convert`]: core types ⇄ messages, with every bound checked on the
//!   way in (ids exactly 16 bytes, known states, valid kinds);
//! - [`schedules`]: schedules ⇄ messages, checked the same way ([`fanin`],
//!   [`find`], [`events`] and [`flow`] likewise for their calls);
//! - [`status`]: core [`telha_jobs::Error`] ⇄ gRPC [`tonic::Status`], one
//!   table both ways, the exact kind carried in the
//!   [`status::ERROR_KIND_TRAILER`] metadata.

#![warn(missing_docs)]

/// The generated `telha.jobs.v1` package.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    include!("gen/telha.jobs.v1.rs");
}

/// The generated `telha.cluster.v1` package: the `Raft` service one
/// cluster node serves the others, and the operator's `Admin` service
/// (telha-jobs-cluster's `transport`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod cluster_v1 {
    include!("gen/telha.cluster.v1.rs");
}

mod control;
pub mod convert;
pub mod events;
pub mod fanin;
pub mod find;
pub mod flow;
pub mod schedules;
pub mod status;

/// Most items in one batch request (enqueue, submit, heartbeat, lease `max`,
/// PollJobs `capacity`): the core's [`telha_jobs::limits::MAX_BATCH`].
pub use telha_jobs::limits::MAX_BATCH;

#[cfg(test)]
mod drift {
    /// The committed generated code (src/gen/) must come from the .proto as it
    /// is now: the generator records the .proto's hash beside its output.
    /// Regenerate with `make generated` (or `make proto-gen`) when this fails.
    fn fnv64(b: &[u8]) -> String {
        let h = b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
            (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{h:016x}")
    }

    #[test]
    fn generated_code_matches_the_proto() {
        let pairs = [
            (
                &include_bytes!("../telha/jobs/v1/jobs.proto")[..],
                include_str!("gen/jobs.proto.fnv64"),
            ),
            (
                &include_bytes!("../telha/cluster/v1/raft.proto")[..],
                include_str!("gen/raft.proto.fnv64"),
            ),
            (
                &include_bytes!("../telha/cluster/v1/admin.proto")[..],
                include_str!("gen/admin.proto.fnv64"),
            ),
        ];
        for (proto, recorded) in pairs {
            assert_eq!(
                fnv64(proto),
                recorded.trim(),
                "proto/src/gen/ is stale: run `make generated` (or `make proto-gen`) and commit it"
            );
        }
    }
}
