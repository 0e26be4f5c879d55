//! The schedules column family's rows: key = the name's bytes; value = the
//! byte `1`, then a MessagePack array in the job record's style (fixed
//! fields by position, then an extension map whose unknown tags, and any
//! elements after it, are kept as their exact bytes and written back), so
//! a row written by a newer build survives being rewritten by this one.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::ids::{JobId, Scope};
use crate::payload::Encoding;
use crate::store::msgpack::{Reader, Writer};

use super::{CatchUp, Schedule, ScheduleInfo};

const FORMAT_V1: u8 = 1;
const KNOWN_FIELDS: usize = 22;

/// A stored schedule: what was put and what it has done.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScheduleRecord {
    pub schedule: Schedule,
    pub created_at: u64,
    pub updated_at: u64,
    pub cursor: u64,
    pub last_slot: Option<u64>,
    pub last_job: Option<JobId>,
    pub last_fired_at: Option<u64>,
    pub enqueued: u64,
    pub skipped: u64,
    pub last_error: Option<String>,
    /// Extension tags this build does not know, with their exact bytes.
    pub unknown: Vec<(u64, Vec<u8>)>,
    /// Elements after the extension map.
    pub tail: Vec<Vec<u8>>,
}

impl ScheduleRecord {
    pub fn info(&self, next_slot: Option<u64>) -> ScheduleInfo {
        ScheduleInfo {
            schedule: self.schedule.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            cursor: self.cursor,
            last_slot: self.last_slot,
            last_job: self.last_job,
            last_fired_at: self.last_fired_at,
            next_slot,
            enqueued: self.enqueued,
            skipped: self.skipped,
            last_error: self.last_error.clone(),
        }
    }
}

pub fn encode(r: &ScheduleRecord) -> Vec<u8> {
    let s = &r.schedule;
    let mut out = Vec::with_capacity(64 + s.payload.len() + s.spec.len() + s.kind.len());
    out.push(FORMAT_V1);
    let mut w = Writer(&mut out);
    let with_ext = !r.unknown.is_empty() || !r.tail.is_empty();
    w.array(KNOWN_FIELDS + usize::from(with_ext) + r.tail.len());
    w.str(&s.spec);
    w.opt_str(s.timezone.as_deref());
    w.opt_uint(s.anchor);
    w.str(&s.kind);
    w.bin(&s.payload);
    w.uint(s.encoding.code() as u64);
    w.opt_bin(s.scope.as_ref().map(|x| &x.as_bytes()[..]));
    w.opt_uint(s.priority.map(u64::from));
    w.opt_uint(s.max_attempts.map(u64::from));
    w.opt_uint(s.expires_in.map(|d| d.as_millis() as u64));
    w.uint(s.catch_up.code());
    w.opt_uint(s.max_catch_up.map(u64::from));
    w.uint(u64::from(s.paused));
    w.uint(r.created_at);
    w.uint(r.updated_at);
    w.uint(r.cursor);
    w.opt_uint(r.last_slot);
    w.opt_bin(r.last_job.as_ref().map(|j| &j.as_bytes()[..]));
    w.opt_uint(r.last_fired_at);
    w.uint(r.enqueued);
    w.uint(r.skipped);
    w.opt_str(r.last_error.as_deref());
    if with_ext {
        w.map(r.unknown.len());
        for (t, v) in &r.unknown {
            w.uint(*t);
            w.raw(v);
        }
        for v in &r.tail {
            w.raw(v);
        }
    }
    out
}

fn corrupt(name: &str, why: impl std::fmt::Display) -> Error {
    Error::Corruption(format!("schedule {name:?} does not decode: {why}"))
}

pub fn decode(name: &[u8], b: &[u8]) -> Result<ScheduleRecord> {
    let name = String::from_utf8(name.to_vec())
        .map_err(|_| Error::Corruption("a schedule name is not UTF-8".into()))?;
    match b.first() {
        Some(&FORMAT_V1) => {}
        Some(v) => return Err(corrupt(&name, format!("unknown format version {v}"))),
        None => return Err(corrupt(&name, "empty row")),
    }
    let mut r = Reader::new(&b[1..]);
    let n = r.array()?;
    if n < KNOWN_FIELDS {
        return Err(corrupt(
            &name,
            format!("{n} fields, {KNOWN_FIELDS} expected"),
        ));
    }
    let mut rec = ScheduleRecord::default();
    let s = &mut rec.schedule;
    s.name = name.clone();
    s.spec = r.str()?;
    s.timezone = r.opt_str()?;
    s.anchor = r.opt_uint()?;
    s.kind = r.str()?;
    s.payload = r.bin()?;
    s.encoding = Encoding::from_code(r.uint()?);
    s.scope = match r.opt_bin()? {
        None => None,
        Some(b) => Some(Scope::from_bytes(
            b.try_into()
                .map_err(|_| corrupt(&name, "a scope is not 16 bytes"))?,
        )),
    };
    s.priority = match r.opt_uint()? {
        None => None,
        Some(p) => Some(u8::try_from(p).map_err(|_| corrupt(&name, "priority over 255"))?),
    };
    s.max_attempts = r.opt_u32()?;
    s.expires_in = r.opt_uint()?.map(Duration::from_millis);
    s.catch_up =
        CatchUp::from_code(r.uint()?).ok_or_else(|| corrupt(&name, "unknown catch-up policy"))?;
    s.max_catch_up = r.opt_u32()?;
    s.paused = r.uint()? != 0;
    rec.created_at = r.uint()?;
    rec.updated_at = r.uint()?;
    rec.cursor = r.uint()?;
    rec.last_slot = r.opt_uint()?;
    rec.last_job = match r.opt_bin()? {
        None => None,
        Some(b) => Some(JobId::from_bytes(
            b.try_into()
                .map_err(|_| corrupt(&name, "a job id is not 16 bytes"))?,
        )),
    };
    rec.last_fired_at = r.opt_uint()?;
    rec.enqueued = r.uint()?;
    rec.skipped = r.uint()?;
    rec.last_error = r.opt_str()?;
    for i in KNOWN_FIELDS..n {
        if i == KNOWN_FIELDS && r.peek_map() {
            for _ in 0..r.map()? {
                let t = r.uint()?;
                rec.unknown.push((t, r.skip()?.to_vec()));
            }
        } else {
            rec.tail.push(r.skip()?.to_vec());
        }
    }
    if !r.at_end() {
        return Err(corrupt(&name, "bytes after the row"));
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ScheduleRecord {
        ScheduleRecord {
            schedule: Schedule {
                name: "nightly".into(),
                spec: "30 2 * * *".into(),
                timezone: Some("Europe/Lisbon".into()),
                kind: "compact".into(),
                payload: vec![1, 2, 3],
                encoding: Encoding::Bytes,
                scope: Some(Scope::from_bytes([7; 16])),
                priority: Some(3),
                max_attempts: Some(5),
                expires_in: Some(Duration::from_secs(60)),
                catch_up: CatchUp::All,
                max_catch_up: Some(10),
                paused: true,
                ..Schedule::default()
            },
            created_at: 1,
            updated_at: 2,
            cursor: 3,
            last_slot: Some(4),
            last_job: Some(JobId::from_bytes([9; 16])),
            last_fired_at: Some(5),
            enqueued: 6,
            skipped: 7,
            last_error: Some("x".into()),
            ..ScheduleRecord::default()
        }
    }

    #[test]
    fn round_trip() {
        let r = sample();
        assert_eq!(decode(b"nightly", &encode(&r)).unwrap(), r);
        let d = ScheduleRecord {
            schedule: Schedule::new("n", "every 5m", "k"),
            ..ScheduleRecord::default()
        };
        assert_eq!(decode(b"n", &encode(&d)).unwrap(), d);
    }

    #[test]
    fn a_newer_builds_fields_are_kept_when_rewritten() {
        let r = sample();
        let mut b = encode(&r);
        // Rewrite the array header for two more elements: a map with one
        // unknown tag, and a trailing string.
        assert_eq!(b[1], 0xdc);
        b[3] += 2;
        b.extend_from_slice(&[0x81, 0x2a, 0xa2, b'h', b'i', 0xa3, b'e', b'n', b'd']);
        let got = decode(b"nightly", &b).unwrap();
        assert_eq!(got.unknown, vec![(42, vec![0xa2, b'h', b'i'])]);
        assert_eq!(got.tail, vec![vec![0xa3, b'e', b'n', b'd']]);
        assert_eq!(encode(&got), b);
    }

    #[test]
    fn garbage_is_corruption() {
        for b in [&[][..], &[2, 0x90], &[1, 0x90], &[1, 0xdc, 0, 22]] {
            let e = decode(b"x", b).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corruption, "{b:?}");
        }
    }
}
