//! The named-map form of a job record (`{"kind": …, "payload": …}`), for
//! tools that write records by hand (split from `codec.rs`).

use crate::error::{Error, Result};

use super::{events, JobRecord, Reader};

/// The named-map form: known names are read, others skipped.
pub(super) fn decode_named(r: &mut Reader<'_>) -> Result<JobRecord> {
    let mut rec = JobRecord::default();
    let (mut kind, mut payload) = (false, false);
    for _ in 0..r.map()? {
        match r.str()?.as_str() {
            "kind" => (rec.kind, kind) = (r.str()?, true),
            "payload" => (rec.payload, payload) = (r.bin()?, true),
            "attempts" => rec.attempts = r.u32()?,
            "worker_id" => rec.worker_id = r.opt_str()?,
            "lease_deadline" => rec.lease_deadline = r.opt_uint()?,
            "generation" => rec.generation = r.uint()?,
            "idempotency_key" => rec.idempotency_key = r.opt_str()?,
            "created_at" => rec.created_at = r.uint()?,
            "ready_at" => rec.ready_at = r.uint()?,
            "result" => rec.result = r.opt_bin()?,
            "last_error" => rec.last_error = r.opt_str()?,
            "events" => rec.events = events(r)?,
            "dropped_events" => rec.dropped_events = r.u32()?,
            "max_attempts" => rec.max_attempts = r.opt_u32()?,
            _ => {
                r.skip()?;
            }
        }
    }
    if !(kind && payload) {
        return Err(Error::Corruption(
            "job record does not decode: kind and payload are required".into(),
        ));
    }
    Ok(rec)
}
