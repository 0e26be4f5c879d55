//! Key layouts. All integers are big-endian so byte order is numeric order.
//!
//! | CF       | key                                                        | value                  |
//! |----------|------------------------------------------------------------|------------------------|
//! | jobs     | scope(16) state(1) priority(1) ts(8) job_id(16)  = 42 B    | format byte + msgpack  |
//! | ids      | job_id(16)                                                 | the jobs key (42 B)    |
//! | kinds    | scope(16) len(1) kind(len) priority(1) ts(8) job_id(16)    | state byte (P or F)    |
//! | idem     | scope(16) idempotency key bytes                            | job_id(16)             |
//! | counters | kind bytes                                                 | 5 × i64 LE, merge-add  |
//! | meta     | `tag/` len(1) tag(len) scope(16) job_id(16)                | empty (the tag index)  |
//! | meta     | `jkey/` scope(16) len(1) key(len) job_id(16)               | empty (the key index: unfinished keyed jobs) |

use crate::error::{Error, Result};
use crate::job::{JobId, Scope, State};

/// The length of a jobs key: scope 16 + state 1 + priority 1 + ts 8 + id 16.
pub const JOB_KEY_LEN: usize = 42;

/// A row key in the jobs column family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey {
    /// The tenant scope.
    pub scope: Scope,
    /// The job's state.
    pub state: State,
    /// 0 most urgent … 255 least.
    pub priority: u8,
    /// Ready-at (pending), deadline (leased), retry-at (failed), or when it
    /// got there (completed, dead); ms since the epoch.
    pub ts: u64,
    /// The job's id.
    pub id: JobId,
}

impl JobKey {
    /// The 42-byte key; byte order is (scope, state, priority, ts, id) order.
    pub fn encode(&self) -> [u8; JOB_KEY_LEN] {
        let mut k = [0u8; JOB_KEY_LEN];
        k[..16].copy_from_slice(self.scope.as_bytes());
        k[16] = self.state.byte();
        k[17] = self.priority;
        k[18..26].copy_from_slice(&self.ts.to_be_bytes());
        k[26..].copy_from_slice(self.id.as_bytes());
        k
    }

    /// Parse a jobs key. `Corruption` when it is not [`JOB_KEY_LEN`] bytes
    /// or its state byte is unknown.
    pub fn decode(k: &[u8]) -> Result<JobKey> {
        if k.len() != JOB_KEY_LEN {
            return Err(Error::Corruption(format!(
                "job key of {} bytes, expected {JOB_KEY_LEN}: {}",
                k.len(),
                hex(k)
            )));
        }
        let state = State::from_byte(k[16]).ok_or_else(|| {
            Error::Corruption(format!(
                "job key with unknown state byte {}: {}",
                k[16],
                hex(k)
            ))
        })?;
        Ok(JobKey {
            scope: Scope::from_bytes(k[..16].try_into().unwrap_or_default()),
            state,
            priority: k[17],
            ts: u64::from_be_bytes(k[18..26].try_into().unwrap_or_default()),
            id: JobId::from_bytes(k[26..].try_into().unwrap_or_default()),
        })
    }

    /// The key of the row at `pos` in the (scope, state, priority) band.
    pub fn at(scope: Scope, state: State, priority: u8, pos: Pos) -> JobKey {
        JobKey {
            scope,
            state,
            priority,
            ts: pos.ts,
            id: pos.id,
        }
    }

    /// The (ts, id) position of this key inside its band.
    pub fn pos(&self) -> Pos {
        Pos {
            ts: self.ts,
            id: self.id,
        }
    }
}

/// A position inside a band: rows sort by (ts, id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// The row's timestamp, ms since the epoch.
    pub ts: u64,
    /// The job's id (orders rows of the same ms).
    pub id: JobId,
}

impl Pos {
    /// The first position of any band.
    pub const MIN: Pos = Pos {
        ts: 0,
        id: JobId(uuid::Uuid::nil()),
    };
    /// The last position of any band.
    pub const MAX: Pos = Pos {
        ts: u64::MAX,
        id: JobId(uuid::Uuid::max()),
    };

    /// 24 bytes: ts (big-endian), then the id.
    pub fn encode(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&self.ts.to_be_bytes());
        b[8..].copy_from_slice(self.id.as_bytes());
        b
    }

    /// The smallest position strictly after this one (`Pos::MAX` has none
    /// and stays `Pos::MAX`; no row is ever written there).
    pub fn successor(&self) -> Pos {
        if *self == Pos::MAX {
            return Pos::MAX;
        }
        let n = self.id.0.as_u128();
        if n == u128::MAX {
            Pos {
                ts: self.ts.saturating_add(1),
                id: JobId(uuid::Uuid::nil()),
            }
        } else {
            Pos {
                ts: self.ts,
                id: JobId(uuid::Uuid::from_u128(n + 1)),
            }
        }
    }
}

/// The 18-byte prefix of a jobs band: scope, state, priority.
pub fn job_band_prefix(scope: &Scope, state: State, priority: u8) -> [u8; 18] {
    let mut p = [0u8; 18];
    p[..16].copy_from_slice(scope.as_bytes());
    p[16] = state.byte();
    p[17] = priority;
    p
}

/// The 17-byte prefix of all rows of one state in a scope.
pub fn job_state_prefix(scope: &Scope, state: State) -> [u8; 17] {
    let mut p = [0u8; 17];
    p[..16].copy_from_slice(scope.as_bytes());
    p[16] = state.byte();
    p
}

/// The prefix of a kind-index band: scope, kind (length-prefixed), priority.
pub fn kind_band_prefix(scope: &Scope, kind: &str, priority: u8) -> Vec<u8> {
    let mut p = Vec::with_capacity(18 + kind.len());
    p.extend_from_slice(scope.as_bytes());
    p.push(kind.len() as u8);
    p.extend_from_slice(kind.as_bytes());
    p.push(priority);
    p
}

/// A kind-index key.
pub fn kind_key(scope: &Scope, kind: &str, priority: u8, pos: Pos) -> Vec<u8> {
    let mut k = Vec::with_capacity(18 + kind.len() + 24);
    k.extend_from_slice(scope.as_bytes());
    k.push(kind.len() as u8);
    k.extend_from_slice(kind.as_bytes());
    k.push(priority);
    k.extend_from_slice(&pos.encode());
    k
}

/// A kind-index key, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindKey {
    /// The tenant scope.
    pub scope: Scope,
    /// The job's kind.
    pub kind: String,
    /// 0 most urgent … 255 least.
    pub priority: u8,
    /// The row's (ts, id), as in its jobs key.
    pub pos: Pos,
}

impl KindKey {
    /// Parse a kind-index key; `Corruption` when it is malformed.
    pub fn decode(k: &[u8]) -> Result<KindKey> {
        let bad = || Error::Corruption(format!("malformed kind-index key {}", hex(k)));
        if k.len() < 17 {
            return Err(bad());
        }
        let len = k[16] as usize;
        if k.len() != 17 + len + 1 + 24 {
            return Err(bad());
        }
        let kind = std::str::from_utf8(&k[17..17 + len])
            .map_err(|_| bad())?
            .to_string();
        let rest = &k[17 + len..];
        Ok(KindKey {
            scope: Scope::from_bytes(k[..16].try_into().map_err(|_| bad())?),
            kind,
            priority: rest[0],
            pos: decode_pos(&rest[1..]).ok_or_else(bad)?,
        })
    }
}

/// Parse what [`Pos::encode`] wrote; `None` unless `b` is 24 bytes.
pub fn decode_pos(b: &[u8]) -> Option<Pos> {
    if b.len() != 24 {
        return None;
    }
    Some(Pos {
        ts: u64::from_be_bytes(b[..8].try_into().ok()?),
        id: JobId::from_bytes(b[8..].try_into().ok()?),
    })
}

/// An idempotency-index key.
pub fn idem_key(scope: &Scope, key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(16 + key.len());
    k.extend_from_slice(scope.as_bytes());
    k.extend_from_slice(key.as_bytes());
    k
}

/// The smallest key greater than every key that starts with `prefix`
/// (`None` when the prefix is all 0xFF).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Lowercase hex, for keys in messages and `list` cursors.
pub fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// The bytes [`hex`] encoded; `None` for an odd length or a pair that does
/// not parse.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The `expiry` row of job `id` expiring at `at`.
pub fn expiry_key(at: u64, id: &JobId) -> [u8; 24] {
    let mut k = [0u8; 24];
    k[..8].copy_from_slice(&at.to_be_bytes());
    k[8..].copy_from_slice(id.as_bytes());
    k
}

/// Read an `expiry` row key back; `None` when it is not 24 bytes.
pub fn decode_expiry_key(k: &[u8]) -> Option<(u64, JobId)> {
    let at = u64::from_be_bytes(k.get(..8)?.try_into().ok()?);
    let id: [u8; 16] = k.get(8..)?.try_into().ok()?;
    Some((at, JobId::from_bytes(id)))
}

/// The prefix of the fan-in rows child → waiting parent in `meta`
/// (`fanc/ child(16) parent(16)`, empty): kept while the parent waits and
/// the child has not finished (issue 43).
pub const FAN_CHILD_PREFIX: &[u8] = b"fanc/";

/// The prefix of the fan-in rows parent → child in `meta` (`fanp/
/// parent(16) child(16)`, empty): every child a parent named, kept until
/// the parent is deleted (`results_of_children` reads them).
pub const FAN_PARENT_PREFIX: &[u8] = b"fanp/";

fn pair_key(prefix: &[u8], a: &JobId, b: &JobId) -> [u8; 37] {
    let mut k = [0u8; 37];
    k[..5].copy_from_slice(prefix);
    k[5..21].copy_from_slice(a.as_bytes());
    k[21..].copy_from_slice(b.as_bytes());
    k
}

/// The row saying `parent` waits on the unfinished `child`.
pub fn fan_child_key(child: &JobId, parent: &JobId) -> [u8; 37] {
    pair_key(FAN_CHILD_PREFIX, child, parent)
}

/// The row naming `child` among `parent`'s children.
pub fn fan_parent_key(parent: &JobId, child: &JobId) -> [u8; 37] {
    pair_key(FAN_PARENT_PREFIX, parent, child)
}

/// The prefix of one parent's `fanp/` rows.
pub fn fan_parent_prefix(parent: &JobId) -> [u8; 21] {
    let mut k = [0u8; 21];
    k[..5].copy_from_slice(FAN_PARENT_PREFIX);
    k[5..].copy_from_slice(parent.as_bytes());
    k
}

/// The two ids of a `fanc/` or `fanp/` row; `None` when it is not 37 bytes.
pub fn decode_fan_key(k: &[u8]) -> Option<(JobId, JobId)> {
    let a: [u8; 16] = k.get(5..21)?.try_into().ok()?;
    let b: [u8; 16] = k.get(21..37)?.try_into().ok()?;
    (k.len() == 37).then(|| (JobId::from_bytes(a), JobId::from_bytes(b)))
}

/// The prefix of the tag index's rows in the `meta` family.
pub const TAG_INDEX_PREFIX: &[u8] = b"tag/";

/// The prefix of one tag's index rows (every scope).
pub fn tag_prefix(tag: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(TAG_INDEX_PREFIX.len() + 1 + tag.len() + TAG_ROW_TAIL);
    push_tag_prefix(&mut p, tag);
    p
}

fn push_tag_prefix(p: &mut Vec<u8>, tag: &str) {
    p.extend_from_slice(TAG_INDEX_PREFIX);
    p.push(tag.len() as u8);
    p.extend_from_slice(tag.as_bytes());
}

/// The bytes of a tag-index row after its tag's prefix: scope 16 + id 16.
pub const TAG_ROW_TAIL: usize = 32;

/// The index row of job `id` carrying `tag`, in `scope`. The row holds no
/// state: it is written when the job is created and deleted with it, and
/// no move in between touches it (see docs/ARCHITECTURE.md, "Tag index").
pub fn tag_key(tag: &str, scope: &Scope, id: &JobId) -> Vec<u8> {
    let mut k = Vec::new();
    tag_key_into(&mut k, tag, scope, id);
    k
}

/// [`tag_key`] into `out` (cleared first), so a move's index rows share
/// one buffer.
pub fn tag_key_into(out: &mut Vec<u8>, tag: &str, scope: &Scope, id: &JobId) {
    out.clear();
    out.reserve(TAG_INDEX_PREFIX.len() + 1 + tag.len() + TAG_ROW_TAIL);
    push_tag_prefix(out, tag);
    out.extend_from_slice(scope.as_bytes());
    out.extend_from_slice(id.as_bytes());
}

/// A tag-index key, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagKey {
    /// The tag.
    pub tag: String,
    /// The job's scope.
    pub scope: Scope,
    /// The job.
    pub id: JobId,
}

impl TagKey {
    /// Parse a tag-index key (with its `tag/` prefix); `Corruption` when
    /// it is malformed (a row of slice 1's layout, with a state byte, is
    /// one: the open rebuilds those, `Engine::upgrade_tag_index`).
    pub fn decode(k: &[u8]) -> Result<TagKey> {
        let bad = || Error::Corruption(format!("malformed tag-index key {}", hex(k)));
        let rest = k.strip_prefix(TAG_INDEX_PREFIX).ok_or_else(bad)?;
        let len = *rest.first().ok_or_else(bad)? as usize;
        if rest.len() != 1 + len + TAG_ROW_TAIL {
            return Err(bad());
        }
        let tag = std::str::from_utf8(&rest[1..1 + len]).map_err(|_| bad())?;
        let tail = &rest[1 + len..];
        Ok(TagKey {
            tag: tag.to_string(),
            scope: Scope::from_bytes(tail[..16].try_into().map_err(|_| bad())?),
            id: JobId::from_bytes(tail[16..].try_into().map_err(|_| bad())?),
        })
    }
}

/// The prefix of the job-key index's rows in the `meta` family: one row
/// per unfinished job that has a job key (issue 43), `scope len key id`.
pub const JOB_KEY_INDEX_PREFIX: &[u8] = b"jkey/";

/// The index row of job `id` with job key `key` in `scope`. Written in the
/// batch that makes the job unfinished (its enqueue, an operator retry)
/// and deleted in the one that finishes or removes it.
pub fn job_key_row(scope: &Scope, key: &str, id: &JobId) -> Vec<u8> {
    let mut k = Vec::with_capacity(JOB_KEY_INDEX_PREFIX.len() + 33 + key.len());
    k.extend_from_slice(JOB_KEY_INDEX_PREFIX);
    k.extend_from_slice(scope.as_bytes());
    k.push(key.len() as u8);
    k.extend_from_slice(key.as_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

/// Read [`job_key_row`] back: (scope, key, id); `Corruption` when malformed.
pub fn decode_job_key_row(k: &[u8]) -> Result<(Scope, String, JobId)> {
    let bad = || Error::Corruption(format!("malformed key-index row {}", hex(k)));
    let rest = k.strip_prefix(JOB_KEY_INDEX_PREFIX).ok_or_else(bad)?;
    if rest.len() < 17 {
        return Err(bad());
    }
    let len = rest[16] as usize;
    if rest.len() != 17 + len + 16 {
        return Err(bad());
    }
    let key = std::str::from_utf8(&rest[17..17 + len]).map_err(|_| bad())?;
    Ok((
        Scope::from_bytes(rest[..16].try_into().map_err(|_| bad())?),
        key.to_string(),
        JobId::from_bytes(rest[17 + len..].try_into().map_err(|_| bad())?),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_key_rows_round_trip() {
        let s = Scope::from_bytes([7; 16]);
        let id = JobId::from_bytes([9; 16]);
        let k = job_key_row(&s, "customer-1", &id);
        assert_eq!(
            decode_job_key_row(&k).unwrap(),
            (s, "customer-1".into(), id)
        );
        assert!(decode_job_key_row(&k[..k.len() - 1]).is_err());
        assert!(decode_job_key_row(b"jkey/").is_err());
    }

    #[test]
    fn job_keys_round_trip_and_sort_by_scope_state_priority_ts_id() {
        let s = Scope::from_bytes([7; 16]);
        let a = JobKey {
            scope: s,
            state: State::Pending,
            priority: 1,
            ts: 5,
            id: JobId::new_v7(),
        };
        let b = JobKey { ts: 6, ..a };
        let c = JobKey {
            priority: 0,
            ts: 9,
            ..a
        };
        assert_eq!(JobKey::decode(&a.encode()).unwrap(), a);
        assert!(a.encode() < b.encode());
        assert!(c.encode() < a.encode());
    }

    #[test]
    fn malformed_keys_are_corruption_not_panics() {
        assert!(JobKey::decode(&[1, 2, 3]).is_err());
        let mut k = [0u8; JOB_KEY_LEN];
        k[16] = 99;
        assert!(JobKey::decode(&k).is_err());
        assert!(KindKey::decode(&[0; 17]).is_err());
        assert!(KindKey::decode(&[]).is_err());
    }

    #[test]
    fn kind_keys_round_trip() {
        let s = Scope::from_bytes([3; 16]);
        let pos = Pos {
            ts: 42,
            id: JobId::new_v7(),
        };
        let k = kind_key(&s, "ingest:pdf", 9, pos);
        let d = KindKey::decode(&k).unwrap();
        assert_eq!(
            (d.scope, d.kind.as_str(), d.priority, d.pos),
            (s, "ingest:pdf", 9, pos)
        );
    }

    #[test]
    fn tag_keys_round_trip_and_group_by_tag_scope() {
        let s = Scope::from_bytes([3; 16]);
        let id = JobId::new_v7();
        let k = tag_key("order-4711", &s, &id);
        assert!(k.starts_with(&tag_prefix("order-4711")));
        let mut into = b"left over".to_vec();
        tag_key_into(&mut into, "order-4711", &s, &id);
        assert_eq!(into, k);
        let d = TagKey::decode(&k).unwrap();
        assert_eq!((d.tag.as_str(), d.scope, d.id), ("order-4711", s, id));
        // "a" is not a prefix of "ab"'s rows: the length byte comes first.
        assert!(!tag_key("ab", &s, &id).starts_with(&tag_prefix("a")));
        // Slice 1's layout (a state byte before the id) does not decode.
        let mut old = tag_prefix("order-4711");
        old.extend_from_slice(s.as_bytes());
        old.push(State::Dead.byte());
        old.extend_from_slice(id.as_bytes());
        assert!(TagKey::decode(&old).is_err());
        assert!(TagKey::decode(b"tag/").is_err());
        assert!(TagKey::decode(&k[..k.len() - 1]).is_err());
    }

    #[test]
    fn prefix_end_and_successor() {
        assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xFF]), None);
        let p = Pos {
            ts: 1,
            id: JobId(uuid::Uuid::max()),
        };
        assert_eq!(
            p.successor(),
            Pos {
                ts: 2,
                id: JobId(uuid::Uuid::nil())
            }
        );
        assert!(Pos::MIN.successor() > Pos::MIN);
    }

    #[test]
    fn cursors_in_hex_are_strict_and_successor_of_max_stays_max() {
        assert_eq!(unhex("0a0B"), Some(vec![0x0a, 0x0b]));
        assert_eq!(unhex("+f"), None);
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(Pos::MAX.successor(), Pos::MAX);
    }
}
