//! Job ids and tenant scopes.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use crate::error::{Error, Result};

/// A job's id: a UUIDv7 (time-ordered). Its text form is the canonical UUID string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub(crate) Uuid);

impl JobId {
    /// A UUIDv7 (RFC 9562, method 3): 48 bits of Unix ms, then a counter
    /// seeded at random each millisecond, so ids are unique and strictly
    /// increasing within the process (FIFO within a millisecond) without a
    /// getrandom call per id.
    pub(crate) fn new_v7() -> Self {
        use std::sync::Mutex;
        static STATE: Mutex<(u64, u128)> = Mutex::new((0, 0));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut st = STATE.lock().unwrap_or_else(|p| p.into_inner());
        // 74 bits of counter below the timestamp (the version and variant
        // bits are cut out of them when the id is assembled).
        let counter = if now > st.0 {
            st.0 = now;
            seed() & ((1u128 << 73) - 1) // top bit clear: room to count up
        } else {
            st.1.wrapping_add(1)
        };
        st.1 = counter;
        let ms = st.0 as u128 & ((1 << 48) - 1);
        drop(st);
        let rand_a = (counter >> 62) & 0xFFF;
        let rand_b = counter & ((1u128 << 62) - 1);
        let v = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b;
        JobId(Uuid::from_u128(v))
    }
    /// The id with these 16 bytes (big-endian UUID layout, as in row keys).
    /// Any bytes are accepted; whether such a job exists is up to the store.
    pub fn from_bytes(b: [u8; 16]) -> Self {
        JobId(Uuid::from_bytes(b))
    }
    /// The 16 bytes, as stored in row keys.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
    /// The id as a [`Uuid`].
    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

/// 128 bits of per-process randomness, refreshed cheaply (std's hasher keys
/// come from the OS once; a counter makes each call differ).
fn seed() -> u128 {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static KEYS: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    static N: AtomicU64 = AtomicU64::new(0);
    let k = KEYS.get_or_init(std::collections::hash_map::RandomState::new);
    let n = N.fetch_add(1, Ordering::Relaxed);
    ((k.hash_one(n) as u128) << 64) | k.hash_one(!n) as u128
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl FromStr for JobId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Uuid::parse_str(s.trim())
            .map(JobId)
            .map_err(|e| Error::invalid(format!("malformed job id {s:?}: {e}")))
    }
}

/// A tenant scope: a 16-byte UUID. The nil UUID is the system scope, the only
/// home of `system:*` kinds and the default when an enqueue names no scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Scope(pub(crate) Uuid);

impl Scope {
    /// The system scope (nil UUID).
    pub const SYSTEM: Scope = Scope(Uuid::nil());

    /// The scope of tenant `u`; the nil UUID is [`Scope::SYSTEM`].
    pub fn from_uuid(u: Uuid) -> Self {
        Scope(u)
    }
    /// The scope with these 16 bytes (big-endian UUID layout, as in row keys).
    pub fn from_bytes(b: [u8; 16]) -> Self {
        Scope(Uuid::from_bytes(b))
    }
    /// The 16 bytes, as stored in row keys.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
    /// True for the system (nil) scope, the only home of `system:*` kinds.
    pub fn is_system(&self) -> bool {
        self.0.is_nil()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl FromStr for Scope {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Uuid::parse_str(s.trim())
            .map(Scope)
            .map_err(|e| Error::invalid(format!("malformed scope {s:?}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_v7_unique_and_increasing() {
        let ids: Vec<JobId> = (0..10_000).map(|_| JobId::new_v7()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.iter().all(|i| i.0.get_version_num() == 7));
        assert!(ids
            .iter()
            .all(|i| i.0.get_variant() == uuid::Variant::RFC4122));
        let ms = ids[0].0.get_timestamp().unwrap().to_unix();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        assert!(now.as_secs().abs_diff(ms.0) < 5);
    }
}
