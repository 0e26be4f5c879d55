//! The schedules column family's rows: key = the name's bytes; value = the
//! byte `1`, then a MessagePack array in the job record's style (fixed
//! fields by position, then an extension map whose unknown tags, and any
//! elements after it, are kept as their exact bytes and written back), so
//! a row written by a newer build survives being rewritten by this one.
//!
//! Extension tags (never renumbered or reused): 1 = the job template's
//! tags (an array of strings), 2 = its metadata (a map of strings to
//! strings); both issue 42, written only when not empty, and read by an
//! older build as unknown tags it writes back unchanged.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::ids::{JobId, Scope};
use crate::payload::Encoding;
use crate::store::msgpack::{Reader, Writer};

use super::{CatchUp, Schedule, ScheduleInfo};

const FORMAT_V1: u8 = 1;
const KNOWN_FIELDS: usize = 22;

/// Extension tag: the job template's tags.
const EXT_TAGS: u64 = 1;
/// Extension tag: the job template's metadata.
const EXT_METADATA: u64 = 2;

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
    let known_ext = usize::from(!s.tags.is_empty()) + usize::from(!s.metadata.is_empty());
    let with_ext = known_ext > 0 || !r.unknown.is_empty() || !r.tail.is_empty();
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
        w.map(known_ext + r.unknown.len());
        if !s.tags.is_empty() {
            w.uint(EXT_TAGS);
            w.array(s.tags.len());
            for t in &s.tags {
                w.str(t);
            }
        }
        if !s.metadata.is_empty() {
            w.uint(EXT_METADATA);
            w.map(s.metadata.len());
            for (k, v) in &s.metadata {
                w.str(k);
                w.str(v);
            }
        }
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
                match r.uint()? {
                    EXT_TAGS => {
                        let n = r.array()?;
                        let tags = &mut rec.schedule.tags;
                        *tags = Vec::with_capacity(n.min(crate::tags::MAX_TAGS));
                        for _ in 0..n {
                            tags.push(r.str()?);
                        }
                    }
                    EXT_METADATA => {
                        for _ in 0..r.map()? {
                            let k = r.str()?;
                            rec.schedule.metadata.insert(k, r.str()?);
                        }
                    }
                    t => rec.unknown.push((t, r.skip()?.to_vec())),
                }
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
            }
            .tag("nightly")
            .tag("müller")
            .meta("owner", "ops"),
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
        let mut r = sample();
        r.schedule.tags.clear();
        r.schedule.metadata.clear();
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
    fn tags_and_metadata_are_extension_tags_1_and_2() {
        let r = sample();
        let plain = ScheduleRecord {
            schedule: Schedule {
                tags: Vec::new(),
                metadata: Default::default(),
                ..r.schedule.clone()
            },
            ..r.clone()
        };
        // Without them the row is the fixed fields alone (what the build
        // before issue 42's schedules wrote).
        let b = encode(&plain);
        assert_eq!(&b[1..4], &[0xdc, 0, KNOWN_FIELDS as u8]);
        // With them: one more element, the map {1: [tags], 2: {metadata}}.
        let t = encode(&r);
        assert_eq!(&t[1..4], &[0xdc, 0, KNOWN_FIELDS as u8 + 1]);
        let ext = &t[b.len()..];
        let mut want = vec![0x82, 0x01, 0x92, 0xa7];
        want.extend_from_slice(b"nightly");
        want.push(0xa7);
        want.extend_from_slice("müller".as_bytes());
        want.extend_from_slice(&[0x02, 0x81, 0xa5]);
        want.extend_from_slice(b"owner");
        want.push(0xa3);
        want.extend_from_slice(b"ops");
        assert_eq!(ext, &want[..]);
    }

    #[test]
    fn an_older_build_keeps_the_templates_tags_as_unknown_tags() {
        // What a build without extension tags 1 and 2 reads: the fixed
        // fields, and both tags as unknown ones (exact bytes) it writes
        // back unchanged, so rolling back and forth loses nothing.
        let r = sample();
        let bytes = encode(&r);
        let mut old = decode(b"nightly", &bytes).unwrap();
        let mut unknown = Vec::new();
        {
            let mut v = Vec::new();
            let mut w = Writer(&mut v);
            w.array(2);
            w.str("nightly");
            w.str("müller");
            unknown.push((EXT_TAGS, v));
            let mut v = Vec::new();
            let mut w = Writer(&mut v);
            w.map(1);
            w.str("owner");
            w.str("ops");
            unknown.push((EXT_METADATA, v));
        }
        old.schedule.tags.clear();
        old.schedule.metadata.clear();
        old.unknown = unknown;
        assert_eq!(encode(&old), bytes);
    }

    #[test]
    fn garbage_is_corruption() {
        for b in [&[][..], &[2, 0x90], &[1, 0x90], &[1, 0xdc, 0, 22]] {
            let e = decode(b"x", b).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corruption, "{b:?}");
        }
    }
}
