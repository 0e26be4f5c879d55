//! The leased jobs, in memory.
//!
//! One process owns the store, so the set of leased rows can live in memory
//! beside the disk: it is rebuilt from the leased range at open and changed
//! only after the write that moves a row has committed. Settling a lease
//! (complete, fail, release, extend) then needs no read, and the reaper finds
//! expired leases without walking the tombstones that every completion leaves
//! in the leased range.
//!
//! Each entry has its own mutex, held across the write that settles it, so two
//! calls with the same token (a heartbeat racing a completion) serialise, and a
//! call that finds `live == false` knows the lease is gone.

use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::job::JobId;
use crate::store::codec::JobRecord;
use crate::store::keys::JobKey;

const SHARDS: usize = 32;

#[derive(Debug)]
pub(crate) struct LeaseEntry {
    /// The leased row's current key (its ts is the deadline).
    pub key: JobKey,
    pub record: JobRecord,
    /// False once the job has left the leased state.
    pub live: bool,
    /// Not expired before this instant, whatever the row's deadline says:
    /// the takeover grace of a replica engine (see [`Leases::hold_until`]);
    /// 0 otherwise.
    pub hold: u64,
}

impl LeaseEntry {
    /// When the reaper may expire this lease: its deadline, or the
    /// takeover hold when that is later.
    pub fn expires_at(&self) -> u64 {
        self.key.ts.max(self.hold)
    }
}

pub(crate) type Entry = Arc<Mutex<LeaseEntry>>;

pub(crate) fn lock(e: &Entry) -> MutexGuard<'_, LeaseEntry> {
    e.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Debug)]
pub(crate) struct Leases {
    shards: Vec<Mutex<HashMap<JobId, Entry>>>,
}

impl Default for Leases {
    fn default() -> Self {
        Leases {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::default()))
                .collect(),
        }
    }
}

impl Leases {
    fn shard(&self, id: &JobId) -> MutexGuard<'_, HashMap<JobId, Entry>> {
        self.shards[(FxBuildHasher.hash_one(id) as usize) % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub fn insert(&self, key: JobKey, record: JobRecord) {
        let e = Arc::new(Mutex::new(LeaseEntry {
            key,
            record,
            live: true,
            hold: 0,
        }));
        self.shard(&key.id).insert(key.id, e);
    }

    pub fn get(&self, id: &JobId) -> Option<Entry> {
        self.shard(id).get(id).cloned()
    }

    /// Remove `id` if it still maps to `entry` (a newer lease may have replaced it).
    pub fn remove(&self, id: &JobId, entry: &Entry) {
        let mut s = self.shard(id);
        if s.get(id).is_some_and(|e| Arc::ptr_eq(e, entry)) {
            s.remove(id);
        }
    }

    /// Ids of the leases whose deadline is at or before `now`.
    pub fn expired(&self, now: u64) -> Vec<JobId> {
        let mut out = Vec::new();
        for s in &self.shards {
            let s = s.lock().unwrap_or_else(|p| p.into_inner());
            for (id, e) in s.iter() {
                if let Ok(e) = e.try_lock() {
                    if e.live && e.expires_at() <= now {
                        out.push(*id);
                    }
                } else {
                    // Busy: someone is settling it right now; a later pass
                    // sees it if it is still expired.
                }
            }
        }
        out.sort();
        out
    }

    /// Hold every lease until at least `until`: a replica engine's takeover
    /// grace (`Engine::open_replica`). The leases were rebuilt from the
    /// store at a leadership change, during which their workers could not
    /// heartbeat; expiring them at their recorded deadlines would hand
    /// their jobs to others while the first workers still run them. Only
    /// memory changes (the rows keep their deadlines; an extend moves the
    /// deadline as usual), so a later takeover starts from the rows again.
    pub fn hold_until(&self, until: u64) {
        for e in self.entries() {
            let mut e = lock(&e);
            e.hold = e.hold.max(until);
        }
    }

    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }

    /// Every live lease's key and kind (to count them at open).
    pub fn snapshot_kinds(&self) -> Vec<(JobKey, String)> {
        self.live(|e| (e.key, e.record.kind.clone()))
    }

    /// Every live lease's scope and job key, for the keyed ones (to count
    /// them at open).
    pub fn snapshot_keys(&self) -> Vec<(crate::ids::Scope, String)> {
        self.live(|e| e.record.ext.key.clone().map(|k| (e.key.scope, k)))
            .into_iter()
            .flatten()
            .collect()
    }

    /// Every live entry (for consistency checks).
    pub fn snapshot(&self) -> Vec<(JobId, JobKey, u64)> {
        self.live(|e| (e.key.id, e.key, e.record.generation))
    }

    /// `f` of every live entry. Entry locks are never taken while a shard
    /// lock is held (settlers hold an entry, then a shard).
    fn live<T>(&self, f: impl Fn(&LeaseEntry) -> T) -> Vec<T> {
        self.entries()
            .iter()
            .filter_map(|e| {
                let e = lock(e);
                e.live.then(|| f(&e))
            })
            .collect()
    }

    /// Every entry, taken from the shards before any entry is locked.
    fn entries(&self) -> Vec<Entry> {
        self.shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .values()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}
