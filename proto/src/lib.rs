//! The telha-jobs gRPC protocol (`proto/telha/jobs/v1/jobs.proto`), shared
//! by the server (`telha-jobs-server`) and the client (`telha-jobs-client`):
//!
//! - [`v1`]: the generated messages, the `Jobs` service's server trait and
//!   client stub (prost + tonic, compiled by protox: no system `protoc`);
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
    #[test]
    fn generated_code_matches_the_proto() {
        let proto = include_bytes!("../telha/jobs/v1/jobs.proto");
        let h = proto.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
            (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
        });
        let recorded = include_str!("gen/jobs.proto.fnv64").trim();
        assert_eq!(
            format!("{h:016x}"),
            recorded,
            "proto/src/gen/ is stale: run `make generated` (or `make proto-gen`) and commit it"
        );
    }
}
