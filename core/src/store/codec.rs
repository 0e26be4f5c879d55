//! The stored job record: one format byte ([`FORMAT_V1`]), then a
//! MessagePack array.
//!
//! # Rolling forward and back
//!
//! Elements 0 to 13 are the fields every build knows, in a fixed order (a
//! row written before `max_attempts` existed ends after element 12, and the
//! field takes its default). Element 14, when present, is the *extension
//! map*: small integer tags to values, for every field added since. After
//! it, further array elements are allowed.
//!
//! A build reads what it knows and keeps the rest: extension tags it does
//! not know and array elements past the extension map are held as their
//! exact bytes and written back unchanged when the row is rewritten. So a
//! row written by a newer build keeps that build's fields through a lease,
//! a heartbeat and a settle done by this one. A newer field that is not safe
//! to ignore (one that changes what a transition must do) cannot go there:
//! that build raises the store's format so older builds refuse to open it
//! (`store::format`).
//!
//! The extension map is written only when it holds something, and an
//! extension value is written only when it differs from its default, so a
//! record that uses no extension is byte-compatible with format-1 readers.
//! The decoder also reads the named-map form (`{"kind": …, "payload": …}`),
//! for tools that write records by hand.

use crate::error::{Error, Result};
use crate::payload::Encoding;

use super::msgpack::{Reader, Writer};

/// The first byte of every jobs row value (the record layout described
/// above; it has never changed, extensions live inside it).
pub const FORMAT_V1: u8 = 1;

/// The event log keeps this many newest entries in full.
pub const MAX_EVENTS: usize = 64;

/// At most this many folded attempts ([`LogEntry::ATTEMPT`]) are kept
/// before the oldest of them are dropped (and counted).
pub const MAX_ATTEMPT_SUMMARIES: usize = 1000;

/// The longest event detail or error message kept, in bytes.
pub const MAX_DETAIL_LEN: usize = 4096;

/// The longest folded-attempt detail kept, in bytes.
pub const MAX_SUMMARY_LEN: usize = 512;

/// The number of fields every build knows (elements 0 to 13).
const KNOWN_FIELDS: usize = 14;

/// Extension tags. Never renumbered or reused.
mod tag {
    /// How the payload was made ([`Encoding::code`]).
    pub const PAYLOAD_ENCODING: u64 = 1;
    /// How the result was made.
    pub const RESULT_ENCODING: u64 = 2;
    /// The attempt ceiling that decided the latest failure or expiry.
    pub const CEILING: u64 = 3;
    /// The payload's length when it lives in the payloads column family
    /// (the record's own payload is then empty).
    pub const PAYLOAD_LEN: u64 = 4;
    /// A cancel requested while the job was leased: its reason.
    pub const CANCEL_REQUESTED: u64 = 5;
    /// Snoozes so far (releases with a delay that spent no attempt).
    pub const SNOOZES: u64 = 6;
    /// When a job never leased expires (ms since the epoch).
    pub const EXPIRES_AT: u64 = 7;
    /// When the current lease was granted (ms since the epoch).
    pub const LEASED_AT: u64 = 8;
    /// The latest progress a holder reported with a heartbeat (bytes,
    /// payload convention). Safe to ignore: an older build keeps it as an
    /// unknown tag.
    pub const PROGRESS: u64 = 9;
    /// The schedule that enqueued the job: `[name, slot, missed]`. Safe
    /// to ignore.
    pub const SCHEDULE: u64 = 10;
    /// The job whose completion enqueued this one (`complete(…, then)`):
    /// its 16 id bytes. Safe to ignore.
    pub const PARENT: u64 = 11;
    /// The job's own backoff base (enqueue's `backoff_base`), in ms. Safe
    /// to ignore: an older build retries on the kind's schedule.
    pub const BACKOFF_BASE: u64 = 12;
    /// The job's tags (an array of strings, issue 42). Safe to ignore: an
    /// older build keeps them as an unknown tag, and its moves leave the
    /// tag index behind (see docs/ARCHITECTURE.md, "Tag index").
    pub const TAGS: u64 = 13;
    /// The job's metadata (a map of strings to strings). Safe to ignore.
    pub const METADATA: u64 = 14;
    /// A debounced job's latest run time (its first enqueue +
    /// `debounce_max`), ms since the epoch. Safe to ignore: an older build
    /// only does not debounce the job.
    pub const DEBOUNCE_UNTIL: u64 = 15;
    /// A fan-in parent's children (issue 43): `[unfinished, total,
    /// policy]`. Not safe to ignore on a waiting job (an older build
    /// would not wake it); see docs/ARCHITECTURE.md, "Fan-in".
    pub const FAN_IN: u64 = 16;
    /// The job key (issue 43, a string). Safe to ignore: an older build
    /// keeps it as an unknown tag, and its moves leave the key index
    /// behind (see docs/ARCHITECTURE.md, "Key index").
    pub const KEY: u64 = 17;
}

/// A job's stored record (the jobs row value after the format byte).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRecord {
    /// The job's kind.
    pub kind: String,
    /// The payload as enqueued.
    pub payload: Vec<u8>,
    /// Failed attempts so far.
    pub attempts: u32,
    /// The worker of the current or last lease.
    pub worker_id: Option<String>,
    /// The lease deadline (ms since the epoch) while leased.
    pub lease_deadline: Option<u64>,
    /// Bumped by every lease; the fencing number in lease tokens.
    pub generation: u64,
    /// The idempotency key it was enqueued with.
    pub idempotency_key: Option<String>,
    /// When it was enqueued, ms since the epoch.
    pub created_at: u64,
    /// When the job last became ready (enqueue/run-at, backoff, retry), so a
    /// released job goes back to its place in line.
    pub ready_at: u64,
    /// What `complete` was given.
    pub result: Option<Vec<u8>>,
    /// The reason of the latest failure or lease expiry.
    pub last_error: Option<String>,
    /// `(ts, transition, detail)`, oldest first: folded attempts
    /// ([`LogEntry::ATTEMPT`]) first, then at most [`MAX_EVENTS`] entries
    /// in full.
    pub events: Vec<(u64, String, String)>,
    /// How many entries were dropped (not folded) to keep the log bounded.
    pub dropped_events: u32,
    /// The per-job attempt ceiling; `None` inherits per-kind, then global.
    pub max_attempts: Option<u32>,
    /// Fields added after format 1, and what this build does not know.
    pub ext: Ext,
}

/// A fan-in parent's children (extension tag 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FanIn {
    /// Children not finished yet (0: the parent is, or was, pending).
    pub unfinished: u64,
    /// Children it waits on (every id of `after`, finished or not).
    pub total: u64,
    /// What a child that did not complete does to the parent.
    pub policy: crate::fanin::ChildDeadPolicy,
}

/// The extension map of a record, and whatever a newer build wrote that
/// this one keeps without understanding it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ext {
    /// How the payload was made.
    pub payload_encoding: Encoding,
    /// How the result was made.
    pub result_encoding: Encoding,
    /// The effective `max_attempts` (per job > per kind > global) when the
    /// latest failure or expiry was decided: the ceiling that decided a
    /// dead job's fate.
    pub ceiling: Option<u32>,
    /// `Some(length)` when the payload lives in the payloads column family
    /// under the job's id (payloads over `store::INLINE_PAYLOAD_MAX`); the
    /// record's `payload` is then empty. An older build must not ignore it,
    /// which is why it arrived with format 2 (the marker keeps format-1
    /// builds out).
    pub payload_len: Option<u64>,
    /// `Some(reason)` once a cancel was requested for the leased job: its
    /// holder's next settle, or the lease's expiry, makes it cancelled.
    /// Format 2 (a format-1 build would retry the job).
    pub cancel_requested: Option<String>,
    /// Snoozes so far (each one a release with a delay that spent no
    /// attempt, up to the kind's `max_snoozes`).
    pub snoozes: u32,
    /// A job that is still pending and was never leased at this instant is
    /// never leased: it goes dead ("expired before start"). Indexed in the
    /// `expiry` column family while it applies (format 2).
    pub expires_at: Option<u64>,
    /// When the current (or last) lease was granted, for `max_lease_total`.
    pub leased_at: Option<u64>,
    /// The latest progress reported by a heartbeat of the current or last
    /// lease (at most `limits::MAX_PROGRESS_BYTES`); cleared by a new lease.
    pub progress: Option<Vec<u8>>,
    /// The schedule and slot that enqueued the job.
    pub schedule: Option<crate::schedule::ScheduleRef>,
    /// The job whose completion enqueued this one, in the same batch.
    pub parent: Option<crate::ids::JobId>,
    /// The job's own backoff base, over its kind's and the global one.
    pub backoff_base: Option<std::time::Duration>,
    /// The job's tags (checked, without duplicates), indexed in `meta`
    /// under `tag/` while the job exists; kept encoded ([`Tags`]).
    pub tags: Tags,
    /// The job's metadata, never indexed.
    pub metadata: std::collections::BTreeMap<String, String>,
    /// A debounced job's latest run time (first enqueue + `debounce_max`).
    pub debounce_until: Option<u64>,
    /// A fan-in parent's children: how many are unfinished, how many it
    /// waits on, and its `on_child_dead` policy.
    pub fan_in: Option<FanIn>,
    /// The job key (flow control by key), indexed in `meta` under `key/`
    /// while the job is not finished.
    pub key: Option<String>,
    /// Extension tags this build does not know: tag and the exact bytes of
    /// its value.
    pub unknown: Vec<(u64, Vec<u8>)>,
    /// Array elements after the extension map, as their exact bytes.
    pub tail: Vec<Vec<u8>>,
}

impl Ext {
    fn entries(&self) -> usize {
        usize::from(self.payload_encoding != Encoding::Unknown)
            + usize::from(self.result_encoding != Encoding::Unknown)
            + usize::from(self.ceiling.is_some())
            + usize::from(self.payload_len.is_some())
            + usize::from(self.cancel_requested.is_some())
            + usize::from(self.snoozes != 0)
            + usize::from(self.expires_at.is_some())
            + usize::from(self.leased_at.is_some())
            + usize::from(self.progress.is_some())
            + usize::from(self.schedule.is_some())
            + usize::from(self.parent.is_some())
            + usize::from(self.backoff_base.is_some())
            + usize::from(!self.tags.is_empty())
            + usize::from(!self.metadata.is_empty())
            + usize::from(self.debounce_until.is_some())
            + usize::from(self.fan_in.is_some())
            + usize::from(self.key.is_some())
            + self.unknown.len()
    }

    fn is_empty(&self) -> bool {
        self.entries() == 0 && self.tail.is_empty()
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

/// A jobs row value: [`FORMAT_V1`], then `r` as a MessagePack array.
pub fn encode(r: &JobRecord) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(encoded_len_hint(r));
    encode_into(r, &mut out);
    Ok(out)
}

/// About how many bytes [`encode`] writes for `r` (a capacity to reserve,
/// so the encoding does not grow its buffer step by step).
pub fn encoded_len_hint(r: &JobRecord) -> usize {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let events: usize = r
        .events
        .iter()
        .map(|(_, t, d)| 12 + t.len() + d.len())
        .sum();
    96 + r.kind.len()
        + r.payload.len()
        + r.result.as_ref().map_or(0, Vec::len)
        + text(&r.worker_id)
        + text(&r.idempotency_key)
        + text(&r.last_error)
        + r.ext.progress.as_ref().map_or(0, Vec::len)
        + r.ext.schedule.as_ref().map_or(0, |s| 24 + s.name.len())
        + r.ext.tags.encoded_len()
        + r.ext.key.as_ref().map_or(0, |k| 2 + k.len())
        + crate::tags::metadata_size(&r.ext.metadata)
        + 4 * r.ext.metadata.len()
        + events
}

/// [`encode`] into `out` (appended).
pub fn encode_into(r: &JobRecord, out: &mut Vec<u8>) {
    out.push(FORMAT_V1);
    let mut w = Writer(out);
    let with_ext = !r.ext.is_empty();
    w.array(KNOWN_FIELDS + usize::from(with_ext) + r.ext.tail.len());
    w.str(&r.kind);
    w.bin(&r.payload);
    w.uint(r.attempts as u64);
    w.opt_str(r.worker_id.as_deref());
    w.opt_uint(r.lease_deadline);
    w.uint(r.generation);
    w.opt_str(r.idempotency_key.as_deref());
    w.uint(r.created_at);
    w.uint(r.ready_at);
    w.opt_bin(r.result.as_deref());
    w.opt_str(r.last_error.as_deref());
    w.array(r.events.len());
    for (ts, t, d) in &r.events {
        w.array(3);
        w.uint(*ts);
        w.str(t);
        w.str(d);
    }
    w.uint(r.dropped_events as u64);
    w.opt_uint(r.max_attempts.map(u64::from));
    if with_ext {
        let x = &r.ext;
        w.map(x.entries());
        if x.payload_encoding != Encoding::Unknown {
            w.uint(tag::PAYLOAD_ENCODING);
            w.uint(x.payload_encoding.code() as u64);
        }
        if x.result_encoding != Encoding::Unknown {
            w.uint(tag::RESULT_ENCODING);
            w.uint(x.result_encoding.code() as u64);
        }
        if let Some(c) = x.ceiling {
            w.uint(tag::CEILING);
            w.uint(c as u64);
        }
        if let Some(n) = x.payload_len {
            w.uint(tag::PAYLOAD_LEN);
            w.uint(n);
        }
        if let Some(r) = &x.cancel_requested {
            w.uint(tag::CANCEL_REQUESTED);
            w.str(r);
        }
        if x.snoozes != 0 {
            w.uint(tag::SNOOZES);
            w.uint(x.snoozes as u64);
        }
        if let Some(t) = x.expires_at {
            w.uint(tag::EXPIRES_AT);
            w.uint(t);
        }
        if let Some(t) = x.leased_at {
            w.uint(tag::LEASED_AT);
            w.uint(t);
        }
        if let Some(p) = &x.progress {
            w.uint(tag::PROGRESS);
            w.bin(p);
        }
        if let Some(sr) = &x.schedule {
            w.uint(tag::SCHEDULE);
            w.array(3);
            w.str(&sr.name);
            w.uint(sr.slot);
            w.uint(sr.missed);
        }
        if let Some(p) = &x.parent {
            w.uint(tag::PARENT);
            w.bin(p.as_bytes());
        }
        if let Some(b) = x.backoff_base {
            w.uint(tag::BACKOFF_BASE);
            w.uint(b.as_millis() as u64);
        }
        if !x.tags.is_empty() {
            w.uint(tag::TAGS);
            x.tags.write(&mut w);
        }
        if !x.metadata.is_empty() {
            w.uint(tag::METADATA);
            w.map(x.metadata.len());
            for (k, v) in &x.metadata {
                w.str(k);
                w.str(v);
            }
        }
        if let Some(t) = x.debounce_until {
            w.uint(tag::DEBOUNCE_UNTIL);
            w.uint(t);
        }
        if let Some(f) = &x.fan_in {
            w.uint(tag::FAN_IN);
            w.array(3);
            w.uint(f.unfinished);
            w.uint(f.total);
            w.uint(f.policy.code());
        }
        if let Some(k) = &x.key {
            w.uint(tag::KEY);
            w.str(k);
        }
        for (t, v) in &x.unknown {
            w.uint(*t);
            w.raw(v);
        }
        for v in &x.tail {
            w.raw(v);
        }
    }
}

/// The kind of an encoded record without decoding the rest (the claim
/// path needs it for kind limits); `None` when the record does not start
/// as an array record does (then decode it whole).
pub fn peek_kind(b: &[u8]) -> Option<String> {
    if b.first() != Some(&FORMAT_V1) {
        return None;
    }
    let mut r = Reader::new(&b[1..]);
    if r.peek_map() {
        return None;
    }
    r.array().ok()?;
    r.str().ok()
}

/// Decode a jobs row value. `Corruption` for an empty value, an unknown
/// format byte, or bytes that do not decode as a record.
pub fn decode(b: &[u8]) -> Result<JobRecord> {
    match b.first() {
        Some(&FORMAT_V1) => {
            let mut r = Reader::new(&b[1..]);
            let rec = if r.peek_map() {
                decode_named(&mut r)?
            } else {
                decode_array(&mut r)?
            };
            if !r.at_end() {
                return Err(Error::Corruption(format!(
                    "job record does not decode: {} bytes after the record",
                    b.len() - 1 - r.pos
                )));
            }
            Ok(rec)
        }
        Some(v) => Err(Error::Corruption(format!(
            "unknown job record format version {v}"
        ))),
        None => Err(Error::Corruption("empty job record".into())),
    }
}

fn decode_array(r: &mut Reader<'_>) -> Result<JobRecord> {
    let n = r.array()?;
    if n < 2 {
        return Err(Error::Corruption(format!(
            "job record does not decode: {n} fields, kind and payload are required"
        )));
    }
    let mut rec = JobRecord {
        kind: r.str()?,
        payload: r.bin()?,
        ..JobRecord::default()
    };
    for i in 2..n {
        match i {
            2 => rec.attempts = r.u32()?,
            3 => rec.worker_id = r.opt_str()?,
            4 => rec.lease_deadline = r.opt_uint()?,
            5 => rec.generation = r.uint()?,
            6 => rec.idempotency_key = r.opt_str()?,
            7 => rec.created_at = r.uint()?,
            8 => rec.ready_at = r.uint()?,
            9 => rec.result = r.opt_bin()?,
            10 => rec.last_error = r.opt_str()?,
            11 => rec.events = events(r)?,
            12 => rec.dropped_events = r.u32()?,
            13 => rec.max_attempts = r.opt_u32()?,
            14 => rec.ext = ext(r)?,
            _ => {
                let v = r.skip()?.to_vec();
                rec.ext.tail.push(v);
            }
        }
    }
    Ok(rec)
}

fn events(r: &mut Reader<'_>) -> Result<Vec<(u64, String, String)>> {
    let n = r.array()?;
    let mut v = Vec::with_capacity(n.min(MAX_EVENTS + MAX_ATTEMPT_SUMMARIES));
    for _ in 0..n {
        if r.array()? != 3 {
            return Err(Error::Corruption(
                "job record does not decode: an event is not (ts, transition, detail)".into(),
            ));
        }
        v.push((r.uint()?, r.str()?, r.str()?));
    }
    Ok(v)
}

fn ext(r: &mut Reader<'_>) -> Result<Ext> {
    let mut x = Ext::default();
    if r.peek_nil() {
        r.skip()?;
        return Ok(x);
    }
    for _ in 0..r.map()? {
        let t = r.uint()?;
        match t {
            tag::PAYLOAD_ENCODING => x.payload_encoding = Encoding::from_code(r.uint()?),
            tag::RESULT_ENCODING => x.result_encoding = Encoding::from_code(r.uint()?),
            tag::CEILING => x.ceiling = Some(r.u32()?),
            tag::PAYLOAD_LEN => x.payload_len = Some(r.uint()?),
            tag::CANCEL_REQUESTED => x.cancel_requested = Some(r.str()?),
            tag::SNOOZES => x.snoozes = r.u32()?,
            tag::EXPIRES_AT => x.expires_at = Some(r.uint()?),
            tag::LEASED_AT => x.leased_at = Some(r.uint()?),
            tag::PROGRESS => x.progress = Some(r.bin()?),
            tag::SCHEDULE => {
                if r.array()? != 3 {
                    return Err(Error::Corruption(
                        "job record does not decode: its schedule is not (name, slot, missed)"
                            .into(),
                    ));
                }
                x.schedule = Some(crate::schedule::ScheduleRef {
                    name: r.str()?,
                    slot: r.uint()?,
                    missed: r.uint()?,
                });
            }
            tag::PARENT => {
                let b = r.bin()?;
                let id: [u8; 16] = b.as_slice().try_into().map_err(|_| {
                    Error::Corruption(format!(
                        "job record does not decode: its parent id is {} bytes",
                        b.len()
                    ))
                })?;
                x.parent = Some(crate::ids::JobId::from_bytes(id));
            }
            tag::BACKOFF_BASE => {
                x.backoff_base = Some(std::time::Duration::from_millis(r.uint()?));
            }
            tag::TAGS => x.tags = Tags::read(r)?,
            tag::METADATA => {
                for _ in 0..r.map()? {
                    let k = r.str()?;
                    x.metadata.insert(k, r.str()?);
                }
            }
            tag::DEBOUNCE_UNTIL => x.debounce_until = Some(r.uint()?),
            tag::FAN_IN => {
                if r.array()? != 3 {
                    return Err(Error::Corruption(
                        "job record does not decode: its fan-in is not (unfinished, total, policy)"
                            .into(),
                    ));
                }
                x.fan_in = Some(FanIn {
                    unfinished: r.uint()?,
                    total: r.uint()?,
                    policy: crate::fanin::ChildDeadPolicy::from_code(r.uint()?),
                });
            }
            tag::KEY => x.key = Some(r.str()?),
            _ => {
                let v = r.skip()?.to_vec();
                x.unknown.push((t, v));
            }
        }
    }
    Ok(x)
}

#[path = "codec_log.rs"]
mod log;

#[path = "codec_tags.rs"]
mod tags;
pub use tags::Tags;

#[path = "codec_named.rs"]
mod named;
use named::decode_named;

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
