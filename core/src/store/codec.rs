//! The stored job record: one format-version byte, then msgpack (rmp-serde).
//!
//! Rows are written as msgpack arrays (half the bytes of named maps, and the
//! record is rewritten by every transition). Fields are only ever appended,
//! each `#[serde(default)]`, so a row that ends before a field (a v0.1 row
//! without `max_attempts`) decodes with its default. The decoder also reads
//! the named-map form, for tools that write records by hand.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::job::Event;

/// The record format written by this version.
pub const FORMAT_V1: u8 = 1;

/// The event log keeps this many newest events and counts the rest.
pub const MAX_EVENTS: usize = 64;

/// The longest event detail or error message kept, in bytes.
pub const MAX_DETAIL_LEN: usize = 4096;

/// A job's stored record (the jobs row value after the format byte). The
/// field order is the on-disk array order: append new fields only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job's kind.
    pub kind: String,
    /// The payload as enqueued.
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
    /// Failed attempts so far.
    #[serde(default)]
    pub attempts: u32,
    /// The worker of the current or last lease.
    #[serde(default)]
    pub worker_id: Option<String>,
    /// The lease deadline (ms since the epoch) while leased.
    #[serde(default)]
    pub lease_deadline: Option<u64>,
    /// Bumped by every lease; the fencing number in lease tokens.
    #[serde(default)]
    pub generation: u64,
    /// The idempotency key it was enqueued with.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// When it was enqueued, ms since the epoch.
    #[serde(default)]
    pub created_at: u64,
    /// When the job last became ready (enqueue/run-at, backoff, retry), so a
    /// released job goes back to its place in line.
    #[serde(default)]
    pub ready_at: u64,
    /// What `complete` was given.
    #[serde(default, with = "serde_bytes")]
    pub result: Option<Vec<u8>>,
    /// The reason of the latest failure or lease expiry.
    #[serde(default)]
    pub last_error: Option<String>,
    /// `(ts, transition, detail)`, oldest first.
    #[serde(default)]
    pub events: Vec<(u64, String, String)>,
    /// How many older events were dropped to keep the log bounded.
    #[serde(default)]
    pub dropped_events: u32,
    /// Per-job `max_attempts`; `None` inherits per-kind, then global.
    /// New fields go last: rows are msgpack arrays, so a row written before
    /// a field existed simply ends early and the field takes its default.
    #[serde(default)]
    pub max_attempts: Option<u32>,
}

impl JobRecord {
    /// Append an event, keeping the log bounded.
    pub fn log(&mut self, ts: u64, transition: &str, detail: impl Into<String>) {
        let mut detail = detail.into();
        truncate_utf8(&mut detail, MAX_DETAIL_LEN);
        self.events.push((ts, transition.to_string(), detail));
        if self.events.len() > MAX_EVENTS {
            let drop = self.events.len() - MAX_EVENTS;
            self.events.drain(..drop);
            self.dropped_events = self.dropped_events.saturating_add(drop as u32);
        }
    }

    /// The event log as [`Event`]s (copies), oldest first.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .iter()
            .map(|(ts, t, d)| Event {
                ts: *ts,
                transition: t.clone(),
                detail: d.clone(),
            })
            .collect()
    }
}

/// Cut `s` to at most `max` bytes, at a char boundary.
pub fn truncate_utf8(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

/// A jobs row value: [`FORMAT_V1`], then `r` as a msgpack array.
/// `Storage` if msgpack encoding fails.
pub fn encode(r: &JobRecord) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + r.payload.len() + r.events.len() * 32);
    out.push(FORMAT_V1);
    rmp_serde::encode::write(&mut out, r)
        .map_err(|e| Error::Storage(format!("cannot encode job record: {e}")))?;
    Ok(out)
}

/// Decode a jobs row value. `Corruption` for an empty value, an unknown
/// format byte, or msgpack that does not decode as a [`JobRecord`].
pub fn decode(b: &[u8]) -> Result<JobRecord> {
    match b.first() {
        Some(&FORMAT_V1) => rmp_serde::from_slice(&b[1..])
            .map_err(|e| Error::Corruption(format!("job record does not decode: {e}"))),
        Some(v) => Err(Error::Corruption(format!(
            "unknown job record format version {v}"
        ))),
        None => Err(Error::Corruption("empty job record".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> JobRecord {
        JobRecord {
            kind: "embed".into(),
            payload: vec![1, 2, 3],
            attempts: 0,
            max_attempts: None,
            worker_id: None,
            lease_deadline: None,
            generation: 0,
            idempotency_key: None,
            created_at: 1,
            ready_at: 1,
            result: None,
            last_error: None,
            events: vec![],
            dropped_events: 0,
        }
    }

    #[test]
    fn records_round_trip() {
        let mut r = rec();
        r.result = Some(vec![9]);
        r.log(5, "enqueued", "");
        assert_eq!(decode(&encode(&r).unwrap()).unwrap(), r);
    }

    #[test]
    fn a_v01_array_row_without_max_attempts_decodes_with_none() {
        let mut r = rec();
        r.attempts = 2;
        r.log(5, "enqueued", "");
        // The v0.1 layout: every field up to dropped_events, nothing after.
        let v01 = (
            &r.kind,
            serde_bytes::Bytes::new(&r.payload),
            r.attempts,
            &r.worker_id,
            r.lease_deadline,
            r.generation,
            &r.idempotency_key,
            r.created_at,
            r.ready_at,
            None::<serde_bytes::ByteBuf>,
            &r.last_error,
            &r.events,
            r.dropped_events,
        );
        let mut b = vec![FORMAT_V1];
        rmp_serde::encode::write(&mut b, &v01).unwrap();
        let d = decode(&b).unwrap();
        assert_eq!(d.max_attempts, None);
        assert_eq!(d, r);
    }

    #[test]
    fn a_v01_named_row_without_max_attempts_decodes_with_none() {
        #[derive(Serialize)]
        struct V01 {
            kind: String,
            #[serde(with = "serde_bytes")]
            payload: Vec<u8>,
            attempts: u32,
            created_at: u64,
        }
        let mut b = vec![FORMAT_V1];
        rmp_serde::encode::write_named(
            &mut b,
            &V01 {
                kind: "embed".into(),
                payload: vec![1],
                attempts: 2,
                created_at: 3,
            },
        )
        .unwrap();
        let r = decode(&b).unwrap();
        assert_eq!(
            (r.max_attempts, r.attempts, r.kind.as_str()),
            (None, 2, "embed")
        );
    }

    #[test]
    fn garbage_is_corruption() {
        for b in [
            &b""[..],
            &[0u8][..],
            &[1, 0xc1][..],
            &[1, 0x92, 0x01][..],
            &[7, 1, 2][..],
        ] {
            assert!(matches!(decode(b), Err(Error::Corruption(_))), "{b:?}");
        }
    }

    #[test]
    fn the_event_log_is_bounded_and_counts_what_it_dropped() {
        let mut r = rec();
        for i in 0..(MAX_EVENTS as u64 + 10) {
            r.log(i, "leased", "w");
        }
        assert_eq!(r.events.len(), MAX_EVENTS);
        assert_eq!(r.dropped_events, 10);
        assert_eq!(r.events[0].0, 10);
    }
}
