//! The replica API: what a replicated state machine (the
//! `telha-jobs-cluster` crate, on openraft) needs from the core to run an
//! engine on a store it owns and whose writes go through consensus.
//!
//! - [`ReplicaStore`] owns an open store and runs no engine. Every node
//!   holds one; the state machine [`apply`](ReplicaStore::apply)s committed
//!   write batches to it, with its own bookkeeping (the applied log id, the
//!   membership) under [`RAFT_META_PREFIX`] in the same atomic write.
//! - [`Queue::open_replica`] runs an engine over a `ReplicaStore` (on the
//!   leader, one per leadership term). Its writes do not reach RocksDB
//!   directly: each batch's bytes go to a [`Replicate`], which answers once
//!   they are durable on a quorum and applied to this node's store.
//! - [`Queue::fence`] ends an engine from outside (leadership lost); a
//!   [`ReplicateError::Unknown`] answer fences it from inside. A fenced
//!   engine answers `Unavailable` to every call and is never revived: the
//!   next term opens a new one over the same `ReplicaStore`.
//!
//! Write batches name column families by RocksDB's numeric id, not by
//! name, so two stores may exchange batches only when their family tables
//! agree: compare [`ReplicaStore::cf_table_digest`]s.
//!
//! ```text
//!  leader:   Queue calls → engine → Replicate::replicate(bytes) ──► Raft log ──┐
//!                  ▲ reads                                                     │ committed
//!  every node:     └──────── ReplicaStore ◄── apply(batches, raft/ meta) ◄─────┘
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rocksdb::{AsColumnFamilyRef, Options, WriteBatch, WriteOptions, DB};

use crate::clock::Clock;
use crate::config::Config;
use crate::engine::{CheckReport, Engine, Replicated};
use crate::error::{Error, Result};
use crate::queue::Queue;
use crate::store::batch;
use crate::store::{self as st, Store};

mod swap;

pub use crate::store::RAFT_META_PREFIX;

/// An open store owned by a replicated state machine, with no engine.
///
/// Cheap to clone (clones share the store); `Send + Sync`. The store
/// closes (WAL synced, RocksDB's `LOCK` released) when the last clone and
/// the last engine opened over it are dropped. Like `Queue::open`, it
/// takes the store's one-process lock: a `Queue::open` of the same path
/// answers `StoreLocked` while it is open.
#[derive(Clone)]
pub struct ReplicaStore {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<Store>,
    /// Canonical, as the engines over it name it.
    path: PathBuf,
    /// Every family's name and numeric id, in id order.
    table: Vec<(String, u32)>,
    table_digest: u64,
    /// The id of [`st::CF_META`].
    meta_id: u32,
    /// The last engine opened over this store (at most one may write).
    engine: Mutex<Weak<Engine>>,
}

impl std::fmt::Debug for ReplicaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaStore")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl ReplicaStore {
    /// Open (create or upgrade) the store at `path` read-write, as
    /// [`Queue::open`] does, but run no engine. Writes nothing into RocksDB
    /// (the format marker and the pid file are files beside it), so every
    /// replica's contents change only through [`ReplicaStore::apply`].
    ///
    /// Errors as [`Queue::open`]: `StoreLocked`, `UnsupportedFormat`,
    /// `Storage`, `Corruption`.
    pub fn open(path: &Path) -> Result<ReplicaStore> {
        let canon = st::canonical(path)?;
        // A swap cut short by a crash (`swap.rs`) is finished or undone first.
        ReplicaStore::repair_swap(&canon)?;
        let store = Store::open_replica(&canon)?;
        ReplicaStore::over(store, canon)
    }

    /// The store directory, canonicalized.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// A digest (FNV-1a 64, the same on every build and platform) of the
    /// store's column-family table: every family's name and RocksDB numeric
    /// id, in id order. Write batches name families by id, so two nodes may
    /// exchange batches only when these agree. Read once at open (families
    /// are only created by an open).
    pub fn cf_table_digest(&self) -> u64 {
        self.inner.table_digest
    }

    /// Apply replicated write batches (each the bytes of a RocksDB
    /// `WriteBatch`, `WriteBatch::data()`, as a [`Replicate`] received
    /// them), then the `meta` puts (keys under [`RAFT_META_PREFIX`], into
    /// the `meta` family), as ONE atomic RocksDB write: all or nothing,
    /// after a crash too.
    ///
    /// **Without RocksDB's WAL**: the replicated log is this store's WAL.
    /// The write lands in the memtables only; after a crash (of the
    /// process or the machine) the store is what its last flush wrote,
    /// which, the store being opened with atomic flush, is the state after
    /// some earlier apply in every family at once, with that apply's meta
    /// (the applied id) beside it. The caller re-applies from its log what
    /// came after (a Raft state machine does so from `raft/applied`), so
    /// the log must keep every entry after the last flush: call
    /// [`ReplicaStore::persist`] before purging it. A clean close flushes.
    ///
    /// Every batch is checked before anything is written (RocksDB trusts
    /// the bytes: `store/batch.rs` says why that matters): `Corruption` for
    /// bytes that are not a batch of puts, deletes and merges, for a family
    /// id this store does not have, and for a batch that touches a reserved
    /// key (engines never do). `InvalidArgument` for a `meta` key outside
    /// [`RAFT_META_PREFIX`]. `Storage` when RocksDB fails. Nothing is
    /// written on any error.
    pub fn apply(&self, batches: &[&[u8]], meta: &[(&[u8], &[u8])]) -> Result<()> {
        for (k, _) in meta {
            reserved(k)?;
        }
        let mut data =
            Vec::with_capacity(batch::HEADER + batches.iter().map(|b| b.len()).sum::<usize>());
        data.resize(batch::HEADER, 0);
        let mut count: u32 = 0;
        for (i, b) in batches.iter().enumerate() {
            let n = batch::records(b, |r| {
                if !self.inner.table.iter().any(|(_, id)| *id == r.cf) {
                    return Err(Error::Corruption(format!(
                        "write batch {i} names column family id {}, which store {} does not have",
                        r.cf,
                        self.inner.path.display()
                    )));
                }
                if r.cf == self.inner.meta_id && r.key.starts_with(RAFT_META_PREFIX) {
                    return Err(Error::Corruption(format!(
                        "write batch {i} touches the reserved meta key {}",
                        String::from_utf8_lossy(r.key)
                    )));
                }
                Ok(())
            })?;
            count = count
                .checked_add(n)
                .ok_or_else(|| Error::invalid("more than 2^32 records in one apply"))?;
            // The records, without the header: RocksDB's own
            // `WriteBatchInternal::Append` concatenates batches this way.
            data.extend_from_slice(&b[batch::HEADER..]);
        }
        data[8..batch::HEADER].copy_from_slice(&count.to_le_bytes());
        // The records were read above, so RocksDB parses them as we did.
        let mut wb = WriteBatch::from_data(&data);
        let cf = st::cf(self.db(), st::CF_META)?;
        for (k, v) in meta {
            wb.put_cf(cf, k, v);
        }
        if wb.is_empty() {
            return Ok(());
        }
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        self.db().write_opt(wb, &wo)?;
        Ok(())
    }

    /// Read one reserved meta key (under [`RAFT_META_PREFIX`]; any other
    /// key is `InvalidArgument`).
    pub fn meta_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        reserved(key)?;
        let cf = st::cf(self.db(), st::CF_META)?;
        Ok(self.db().get_cf(cf, key)?)
    }

    /// Write everything applied so far to synced files (every family's
    /// memtable, at one point of the apply order): it then survives a
    /// crash or power loss. Call it before the log entries it covers are
    /// purged (applies write no WAL: see [`ReplicaStore::apply`]).
    pub fn persist(&self) -> Result<()> {
        st::flush_all(self.db(), &self.inner.path)
    }

    /// A digest (FNV-1a 64) of the store's contents, read at one snapshot:
    /// every family in id order, its name, id and every row (key and value,
    /// as merged), except the reserved keys under [`RAFT_META_PREFIX`].
    /// Replicas that applied the same batches have the same digest. One
    /// thing differs between such stores and is left out: a per-scope
    /// counters row that counts zero in every state, which the counters'
    /// compaction filter drops whenever a compaction happens to run (an
    /// absent row and a zero one mean the same). O(store size): for tests
    /// and the cluster's consistency checks.
    pub fn digest(&self) -> Result<u64> {
        let db = self.db();
        let snap = db.snapshot();
        let mut h = Fnv::new();
        for (name, id) in &self.inner.table {
            let cf = st::cf(db, name)?;
            h.framed(name.as_bytes());
            h.bytes(&id.to_le_bytes());
            let mut rows: u64 = 0;
            let mut it = snap.raw_iterator_cf(cf);
            it.seek_to_first();
            while let (Some(k), Some(v)) = (it.key(), it.value()) {
                let skip = (name == st::CF_META && k.starts_with(RAFT_META_PREFIX))
                    || (name == st::CF_COUNTERS
                        && matches!(
                            st::counters_filter(0, k, v),
                            rocksdb::CompactionDecision::Remove
                        ));
                if !skip {
                    h.framed(k);
                    h.framed(v);
                    rows += 1;
                }
                it.next();
            }
            it.status()?;
            h.bytes(&rows.to_le_bytes());
        }
        Ok(h.0)
    }

    /// The report [`Queue::check`] gives, over this store, by a read-only
    /// engine that borrows it (no reaper, nothing written). Runs beside an
    /// engine opened with [`Queue::open_replica`] or none. Its disk checks
    /// read one snapshot; its comparisons of the rebuilt memory with disk
    /// are exact while nothing is applied meanwhile.
    pub fn check(&self, config: Config) -> Result<CheckReport> {
        Engine::check_over(self.inner.store.clone(), &self.inner.path, config)
    }

    fn db(&self) -> &DB {
        self.inner.store.db()
    }
}

/// `InvalidArgument` for a key outside [`RAFT_META_PREFIX`].
fn reserved(key: &[u8]) -> Result<()> {
    if key.starts_with(RAFT_META_PREFIX) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "meta key {:?} is not a replica key: they start with {:?}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(RAFT_META_PREFIX)
    )))
}

/// Every family of the open `db`, by RocksDB's listing, with its numeric
/// id, in id order. The id is RocksDB's own
/// (`rocksdb_column_family_handle_get_id`), which rust-rocksdb does not
/// wrap: it is the id write batches carry.
fn cf_table(db: &DB, path: &Path) -> Result<Vec<(String, u32)>> {
    let mut table = Vec::new();
    for name in DB::list_cf(&Options::default(), path)? {
        let cf = st::cf(db, &name)?;
        // SAFETY: `cf` is a live handle of `db`, borrowed for the call.
        let id = unsafe { librocksdb_sys::rocksdb_column_family_handle_get_id(cf.inner()) };
        table.push((name, id));
    }
    table.sort_by_key(|(_, id)| *id);
    Ok(table)
}

/// FNV-1a, 64 bits: a digest defined by its spec, so nodes built apart
/// agree (std's hashers promise no stable output).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, b: &[u8]) {
        for x in b {
            self.0 ^= u64::from(*x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// Length, then bytes: no two sequences of fields hash alike by
    /// shifting bytes between neighbours.
    fn framed(&mut self, b: &[u8]) {
        self.bytes(&(b.len() as u64).to_le_bytes());
        self.bytes(b);
    }
}

/// Where a replicated engine's write batches go (telha-jobs-cluster's
/// proposer). Called from any thread the engine writes on, concurrently,
/// often under the engine's locks (a lease entry, idempotency stripes):
/// answer as soon as the outcome is known.
pub trait Replicate: Send + Sync {
    /// Replicate `batch` (the bytes of a RocksDB `WriteBatch`, to hand to
    /// [`ReplicaStore::apply`] on every node). `Ok` only once the batch is
    /// durable on a quorum AND applied to this node's [`ReplicaStore`], so
    /// the engine's later reads see it.
    fn replicate(&self, batch: Vec<u8>) -> std::result::Result<(), ReplicateError>;
}

/// Why a [`Replicate`] did not answer `Ok`.
#[derive(Debug)]
pub enum ReplicateError {
    /// Nothing was written, and never will be (refused before it was
    /// proposed): the call fails with this error and the engine goes on.
    Failed(Error),
    /// The batch may or may not be applied (leadership lost, a timeout):
    /// fences the engine, and the call answers `Unavailable` with this
    /// message.
    Unknown(String),
}

impl Queue {
    /// An engine over `store` whose writes go to `replicate` instead of
    /// RocksDB (telha-jobs-cluster's leader, one per term). Memory is
    /// rebuilt from the store as [`Queue::open`] does (counters, pauses,
    /// band cursors, leases, limits, schedules); the reaper and the
    /// scheduler run as `config` says. `config.sync_writes` is not used:
    /// durability is the quorum's.
    ///
    /// **Takeover grace**: every lease rebuilt here is not expired before
    /// `clock.now() + takeover_grace`, though its recorded deadline may be
    /// earlier: its worker could not heartbeat while no leader was elected,
    /// and would otherwise lose a job it still runs to another worker. Only
    /// memory changes (the reaper and the expiry checks read it); the rows
    /// keep their deadlines, and an extend moves them as usual. About twice
    /// the election timeout. `Duration::ZERO`: none.
    ///
    /// The engine is not in the process registry: the returned handle (and
    /// its clones) is the only way to it, and closing or dropping it, or a
    /// fence, drops the engine only; the store stays open. Opening may
    /// replicate one batch (the per-scope counters' first build, on a store
    /// that has none, such as a new one).
    ///
    /// Errors: `InvalidArgument` when `config` fails [`Config::validate`]
    /// or another engine over `store` is open and not fenced (at most one
    /// may write: [`Queue::fence`] or drop it first); `Corruption` and
    /// `Storage` from reading the store; an error of `replicate` (an
    /// `Unavailable` for an unknown outcome).
    pub fn open_replica(
        store: &ReplicaStore,
        config: Config,
        clock: Arc<dyn Clock>,
        replicate: Box<dyn Replicate>,
        takeover_grace: Duration,
    ) -> Result<Queue> {
        let mut slot = store.inner.engine.lock().unwrap_or_else(|p| p.into_inner());
        if slot.upgrade().is_some_and(|e| !e.is_fenced()) {
            return Err(Error::invalid(format!(
                "store {} has an engine open that is not fenced; fence it (Queue::fence) or drop it \
                 before opening another",
                store.inner.path.display()
            )));
        }
        let e = Engine::open_replica(
            store.inner.store.clone(),
            &store.inner.path,
            config,
            clock,
            Box::new(Replicated::new(replicate)),
            takeover_grace,
        )?;
        *slot = Arc::downgrade(&e);
        Ok(Queue::over(e))
    }

    /// Fence this queue's engine from outside (a replica's leadership was
    /// lost): from now on every call of every handle of it answers
    /// `Unavailable` with `reason`, as after an unknown commit outcome
    /// (writes already past their entry check are refused too); its reaper
    /// and scheduler stop, waits and event streams end. Never undone.
    /// Idempotent (the first reason stays); nothing after `close`.
    ///
    /// Meant for engines from [`Queue::open_replica`]. An embedded engine
    /// is fenced the same way: its store then answers `Unavailable` to
    /// `Queue::open` in this process until every handle of it is dropped.
    pub fn fence(&self, reason: &str) {
        if let Some(e) = self.held_engine() {
            e.fence(reason.to_string());
        }
    }
}
