//! The Raft log on its own RocksDB (`D/raft/`), apart from the store it
//! replicates, so a snapshot install never touches the vote or the log.
//!
//! Layout: column family `log` holds each entry under its index
//! (big-endian), the value a CRC-32C and the MessagePack entry; `meta`
//! holds `vote`, `committed` and `last_purged`, framed the same way.
//! `append` writes without sync and completes once the WAL is synced: on
//! its own thread when it is the only append waiting, else by the flusher
//! thread (group commit, `flusher.rs`); the vote is synced before `save_vote`
//! returns. Everything goes through one WAL, so a later sync also covers
//! earlier unsynced truncates, purges and committed ids, in order. The
//! newest entries are also kept decoded in memory (`cache.rs`): openraft
//! reads each entry back for the apply and for every follower.

mod cache;
pub(crate) mod codec;
mod flusher;

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    AnyError, ErrorSubject, ErrorVerb, LogState, OptionalSend, RaftLogReader, StorageIOError,
};
use rocksdb::{
    ColumnFamily, ColumnFamilyDescriptor, Options, ReadOptions, WriteBatch, WriteOptions, DB,
};
use serde::de::DeserializeOwned;

use crate::types::{Entry, LogId, StorageError, TypeConfig, Vote};
use cache::{Cache, CACHE_BYTES_DEFAULT};
use codec::{decode_entry, decode_meta, encode, index_key, key_index};
use flusher::Flusher;

const CF_LOG: &str = "log";
const CF_META: &str = "meta";
const KEY_VOTE: &str = "vote";
const KEY_COMMITTED: &str = "committed";
const KEY_LAST_PURGED: &str = "last_purged";

/// Why the log store did not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogStoreError {
    #[error("raft log db: {0}")]
    Rocks(#[from] rocksdb::Error),
    #[error("raft log db: {0}")]
    Storage(#[from] StorageError),
    #[error("raft log db: {0}")]
    Io(#[from] io::Error),
}

/// A node's Raft log. Cheap to clone: clones share the DB and the flusher
/// (openraft reads through one clone while appending through another).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Inner>,
}

struct Inner {
    // Declared first so it is dropped first: it syncs and completes what is
    // queued, and its thread lets go of the DB, before the DB closes.
    flusher: Flusher,
    db: Arc<DB>,
    /// Cached: every `get_log_state` needs it.
    last_purged: Mutex<Option<LogId>>,
    /// The newest entries, decoded: what every read of them gets.
    cache: Mutex<Cache>,
    /// The node this log belongs to, for `probe` marks only.
    probe_node: AtomicU64,
    /// The node this log belongs to (0: not told). A leader's own append
    /// is synced on the flusher's thread, never on the caller's: openraft
    /// (as vendored) replicates while the leader's log syncs.
    node: AtomicU64,
    /// The highest index known to be on disk, lowered by a truncate: a
    /// state machine applies no entry past it ([`LogStore::durable`]).
    durable: tokio::sync::watch::Sender<u64>,
    /// The highest index each truncation left standing, in order, changed
    /// and read only under `durable`'s lock: a flush that lands after a
    /// truncate raises `durable` no higher than that truncate left (the
    /// indexes above it may hold other, unsynced entries by then).
    /// One number per truncation (a conflict after a leader change).
    truncations: Mutex<Vec<u64>>,
    /// Bytes of entries appended since open (encoded), for the snapshot
    /// policy's size rule.
    appended_bytes: AtomicU64,
    /// Run before every purge, with the last entry it deletes: the node
    /// makes its store durable up to it first ([`LogStore::before_purge`]).
    before_purge: Mutex<Option<PurgeGuard>>,
    /// A purge the guard put off: done by [`LogStore::purge_deferred`].
    deferred: Mutex<Option<LogId>>,
}

/// See [`LogStore::before_purge`]: `Ok(true)` purge now, `Ok(false)` not
/// yet (the store has not applied the entries: an install is under way),
/// `Err` never (a reason).
pub type PurgeGuard = Arc<dyn Fn(LogId) -> Result<bool, String> + Send + Sync>;

/// The log DB's WAL limit (RocksDB `max_total_wal_size`).
pub const LOG_WAL_LIMIT: u64 = 64 << 20;
/// Each family's memtable size in the log DB.
pub const LOG_WRITE_BUFFER: usize = 16 << 20;

impl LogStore {
    /// Opens (or creates) the log DB in `dir`.
    pub fn open(dir: impl AsRef<Path>) -> Result<LogStore, LogStoreError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)?;
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_max_background_jobs(2);
        opts.set_keep_log_file_num(4);
        // Disk bounded (docs/ARCHITECTURE.md "Disk bound"): `meta` takes a
        // few small writes, so without a limit its memtable would pin every
        // WAL file until RocksDB's default limit (4 × all write buffers,
        // 512 MiB here); past LOG_WAL_LIMIT the families holding the oldest
        // WAL are flushed and it goes.
        opts.set_max_total_wal_size(LOG_WAL_LIMIT);
        let cfs = [CF_LOG, CF_META].map(|n| {
            let mut o = Options::default();
            o.set_write_buffer_size(LOG_WRITE_BUFFER);
            ColumnFamilyDescriptor::new(n, o)
        });
        let db = Arc::new(DB::open_cf_descriptors(&opts, dir, cfs)?);
        let flusher = Flusher::start(db.clone())?;
        let inner = Inner {
            flusher,
            db,
            last_purged: Mutex::new(None),
            cache: Mutex::new(Cache::new(CACHE_BYTES_DEFAULT)),
            probe_node: AtomicU64::new(0),
            node: AtomicU64::new(0),
            durable: tokio::sync::watch::Sender::new(0),
            truncations: Mutex::new(Vec::new()),
            appended_bytes: AtomicU64::new(0),
            before_purge: Mutex::new(None),
            deferred: Mutex::new(None),
        };
        let last_purged = inner.read_meta(KEY_LAST_PURGED, ErrorSubject::Logs)?;
        *inner.last_purged.lock().unwrap() = last_purged;
        let log = LogStore {
            inner: Arc::new(inner),
        };
        // An unreadable last entry is reported by the log state openraft
        // reads first (the node does not start); nothing is applied then.
        let last = log.last_entry_id().ok().flatten().map_or(0, |id| id.index);
        log.inner.durable.send_replace(last);
        Ok(log)
    }

    /// Names the node in this log's [`crate::probe`] marks.
    pub fn set_probe_node(&self, id: u64) {
        self.inner.probe_node.store(id, Ordering::Relaxed);
    }

    /// Tells the log whose it is: entries this node created as leader are
    /// synced on the flusher's thread, so the append returns at once and
    /// the leader replicates while its own log syncs.
    pub fn set_node(&self, id: u64) {
        self.inner.node.store(id, Ordering::Relaxed);
    }

    /// Runs `guard` before each purge, with the last entry the purge
    /// deletes. The node passes one that makes its store durable up to
    /// that entry: the store applies without a WAL, so the log is its WAL
    /// until the store's memtables are flushed. `Ok(false)` (the store has
    /// not applied the entries yet) puts the purge off: nothing is deleted
    /// and the log answers as if it had been (openraft reads no entry at
    /// or below a purge), until [`LogStore::purge_deferred`] finds the
    /// store ready; keeping more log than asked is always safe. An error
    /// stops the purge (a `StorageError` naming it, which stops openraft:
    /// nothing is deleted).
    pub fn before_purge(&self, guard: PurgeGuard) {
        *self.inner.before_purge.lock().unwrap() = Some(guard);
    }

    /// Runs a purge the guard put off, if its guard now lets it; whether
    /// one is still put off. The node's watcher calls it.
    pub fn purge_deferred(&self) -> Result<bool, StorageError> {
        let pending = *self.inner.deferred.lock().unwrap();
        match pending {
            None => Ok(false),
            Some(id) => {
                self.purge_now(id)?;
                Ok(self.inner.deferred.lock().unwrap().is_some())
            }
        }
    }

    /// Deletes every entry up to and including `log_id` and remembers it
    /// as the last purged, in one batch, once the guard lets it.
    fn purge_now(&self, log_id: LogId) -> Result<(), StorageError> {
        let inner = &self.inner;
        let guard = inner.before_purge.lock().unwrap().clone();
        if let Some(guard) = guard {
            if inner.last_purged.lock().unwrap().is_none_or(|l| l < log_id) {
                let now = guard(log_id).map_err(|why| {
                    let msg = format!("not purging the log up to {log_id}: {why}");
                    StorageIOError::new(ErrorSubject::Logs, ErrorVerb::Delete, AnyError::error(msg))
                })?;
                if !now {
                    let mut d = inner.deferred.lock().unwrap();
                    if d.is_none_or(|d| d < log_id) {
                        *d = Some(log_id);
                    }
                    return Ok(());
                }
            }
        }
        let mut last = inner.last_purged.lock().unwrap();
        if last.is_none_or(|l| l < log_id) {
            let mut batch = WriteBatch::default();
            inner.put_meta(&mut batch, KEY_LAST_PURGED, &log_id, ErrorSubject::Logs)?;
            let cf = inner.cf(CF_LOG);
            batch.delete_range_cf(cf, index_key(0), index_key(log_id.index.saturating_add(1)));
            inner.cache().purge(log_id.index);
            inner
                .write(batch, false)
                .map_err(|e| StorageIOError::new(ErrorSubject::Logs, ErrorVerb::Delete, e))?;
            *last = Some(log_id);
        }
        let mut d = inner.deferred.lock().unwrap();
        if d.is_some_and(|d| d <= log_id) {
            *d = None;
        }
        Ok(())
    }

    /// Bytes of entries appended since this log opened (as encoded).
    pub fn appended_bytes(&self) -> u64 {
        self.inner.appended_bytes.load(Ordering::Relaxed)
    }

    /// The highest index on disk, watched: what was in the log at open,
    /// raised by each flushed append, lowered by a truncate. A leader's
    /// entry can commit on two followers before the leader's own sync
    /// ends; the state machine waits on this so a node never applies an
    /// entry its own log could lose.
    pub fn durable(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.durable.subscribe()
    }

    /// Writes `entries` (readable on return) and calls `on_flushed` once
    /// they are on disk, after the completions of earlier appends: on this
    /// thread before returning when no other append is queued or being
    /// synced (a lone append syncs here) unless the entries are this node's
    /// own as leader ([`LogStore::set_node`]), else on the flusher's
    /// thread. This is
    /// [`RaftLogStorage::append`] for any callback; benches and tests use it.
    pub fn append_then<I, F>(&self, entries: I, on_flushed: F) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry>,
        F: FnOnce(io::Result<()>) + Send + 'static,
    {
        let inner = &self.inner;
        let cf = inner.cf(CF_LOG);
        let mut batch = WriteBatch::default();
        let entries: Vec<Entry> = entries.into_iter().collect();
        if crate::probe::on() {
            let (node, now) = (
                inner.probe_node.load(Ordering::Relaxed),
                std::time::Instant::now(),
            );
            for e in &entries {
                crate::probe::mark(crate::probe::Stage::AppendCalled, node, e.log_id.index, now);
            }
        }
        let mut bytes = 0;
        for e in &entries {
            let value = encode(e)
                .map_err(|err| StorageIOError::write_log_entry(e.log_id, AnyError::new(&err)))?;
            bytes += value.len() as u64;
            batch.put_cf(cf, index_key(e.log_id.index), value);
        }
        inner.appended_bytes.fetch_add(bytes, Ordering::Relaxed);
        let queue = inner.flusher.enqueue();
        let mut cache = inner.cache();
        if let Err(e) = inner.write(batch, false) {
            // What the DB holds at these indexes is unknown now.
            if let Some(first) = entries.first() {
                cache.truncate(first.log_id.index);
            }
            return Err(StorageIOError::write_logs(e).into());
        }
        let last = entries.last().map(|e| e.log_id);
        let own = last.is_some_and(|id| {
            let node = inner.node.load(Ordering::Relaxed);
            node != 0 && id.leader_id.node_id == node
        });
        // Weak: a completion must not hold the log open after its caller
        // dropped it (the last handle would go on the flusher's thread and
        // the DB would close after the caller's reopen tried its LOCK).
        let durable = Arc::downgrade(&self.inner);
        let truncations = inner.truncations.lock().unwrap().len();
        let on_flushed = move |res: io::Result<()>| {
            if let (Ok(()), Some(id), Some(durable)) = (&res, last, durable.upgrade()) {
                durable.durable.send_if_modified(|d| {
                    let since = durable.truncations.lock().unwrap();
                    let cap = since[truncations..].iter().copied().min();
                    let to = cap.map_or(id.index, |c| c.min(id.index));
                    let raise = *d < to;
                    if raise {
                        *d = to;
                    }
                    raise
                });
            }
            on_flushed(res)
        };
        if crate::probe::on() {
            let node = inner.probe_node.load(Ordering::Relaxed);
            let indexes: Vec<u64> = entries.iter().map(|e| e.log_id.index).collect();
            let now = std::time::Instant::now();
            for &i in &indexes {
                crate::probe::mark(crate::probe::Stage::Appended, node, i, now);
            }
            cache.appended(entries);
            drop(cache);
            let done = move |res| {
                let now = std::time::Instant::now();
                for i in indexes {
                    crate::probe::mark(crate::probe::Stage::Flushed, node, i, now);
                }
                on_flushed(res)
            };
            if own {
                queue.push(Box::new(done));
            } else {
                queue.sync_here(&inner.db, Box::new(done));
            }
            return Ok(());
        }
        cache.appended(entries);
        drop(cache);
        if own {
            queue.push(Box::new(on_flushed));
        } else {
            queue.sync_here(&inner.db, Box::new(on_flushed));
        }
        Ok(())
    }

    /// WAL syncs run by the flusher so far: appends per sync is the group
    /// size.
    pub fn wal_syncs(&self) -> u64 {
        self.inner.flusher.syncs()
    }

    fn entries(&self, start: u64, end: Option<u64>) -> Result<Vec<Entry>, StorageError> {
        let inner = &self.inner;
        if let Some(hit) = end.and_then(|end| inner.cache().get(start, end)) {
            return Ok(hit);
        }
        let mut ro = ReadOptions::default();
        if let Some(end) = end {
            ro.set_iterate_upper_bound(index_key(end));
        }
        let mut it = inner.db.raw_iterator_cf_opt(inner.cf(CF_LOG), ro);
        it.seek(index_key(start));
        let mut out = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let index = key_index(k).ok_or_else(|| bad_key(k))?;
            out.push(decode_entry(index, v)?);
            it.next();
        }
        it.status()
            .map_err(|e| StorageIOError::read_logs(AnyError::new(&e)))?;
        Ok(out)
    }

    fn last_entry_id(&self) -> Result<Option<LogId>, StorageError> {
        let inner = &self.inner;
        let mut it = inner.db.raw_iterator_cf(inner.cf(CF_LOG));
        it.seek_to_last();
        if let (Some(k), Some(v)) = (it.key(), it.value()) {
            let index = key_index(k).ok_or_else(|| bad_key(k))?;
            return Ok(Some(decode_entry(index, v)?.log_id));
        }
        it.status()
            .map_err(|e| StorageIOError::read_logs(AnyError::new(&e)))?;
        Ok(None)
    }
}

impl Inner {
    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        // Every change to the cache is one call that cannot panic half-way.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cf(&self, name: &str) -> &ColumnFamily {
        self.db
            .cf_handle(name)
            .expect("column family created at open")
    }

    fn write(&self, batch: WriteBatch, sync: bool) -> Result<(), AnyError> {
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        self.db.write_opt(batch, &wo).map_err(|e| AnyError::new(&e))
    }

    fn read_meta<T: DeserializeOwned>(
        &self,
        key: &str,
        subject: ErrorSubject<u64>,
    ) -> Result<Option<T>, StorageError> {
        let raw = self.db.get_pinned_cf(self.cf(CF_META), key).map_err(|e| {
            StorageIOError::new(subject.clone(), ErrorVerb::Read, AnyError::new(&e))
        })?;
        raw.map(|raw| decode_meta(key, subject, &raw)).transpose()
    }

    fn put_meta<T: serde::Serialize>(
        &self,
        batch: &mut WriteBatch,
        key: &str,
        value: &T,
        subject: ErrorSubject<u64>,
    ) -> Result<(), StorageError> {
        let raw = encode(value)
            .map_err(|e| StorageIOError::new(subject, ErrorVerb::Write, AnyError::new(&e)))?;
        batch.put_cf(self.cf(CF_META), key, raw);
        Ok(())
    }
}

fn bad_key(k: &[u8]) -> StorageError {
    let msg = format!("raft log key {k:02x?} is not an 8-byte index");
    StorageIOError::read_logs(AnyError::error(msg)).into()
}

/// `range` as `[start, end)`, `end` `None` for unbounded.
fn index_range(range: &impl RangeBounds<u64>) -> (u64, Option<u64>) {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => None,
    };
    (start, end)
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let (start, end) = index_range(&range);
        if end.is_some_and(|end| end <= start) {
            return Ok(Vec::new());
        }
        self.entries(start, end)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last_purged_log_id = *self.inner.last_purged.lock().unwrap();
        let last_log_id = self.last_entry_id()?.or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    /// Synced before it returns: a node must never vote twice in a term.
    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let inner = &self.inner;
        let mut batch = WriteBatch::default();
        inner.put_meta(&mut batch, KEY_VOTE, vote, ErrorSubject::Vote)?;
        inner
            .write(batch, true)
            .map_err(StorageIOError::write_vote)?;
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        self.inner.read_meta(KEY_VOTE, ErrorSubject::Vote)
    }

    /// Not synced: a committed id that rolls back after power loss is found
    /// again from the quorum; the WAL keeps it behind the entries it names.
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let inner = &self.inner;
        let mut batch = WriteBatch::default();
        match committed {
            Some(id) => inner.put_meta(&mut batch, KEY_COMMITTED, &id, ErrorSubject::Store)?,
            None => batch.delete_cf(inner.cf(CF_META), KEY_COMMITTED),
        }
        inner.write(batch, false).map_err(StorageIOError::write)?;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        self.inner.read_meta(KEY_COMMITTED, ErrorSubject::Store)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        self.append_then(entries, move |res| callback.log_io_completed(res))
    }

    /// Deletes `log_id` and every entry after it. Not synced: entries that
    /// come back after a crash were never acknowledged as on disk by the
    /// callback's sync of a later append, which would cover this delete.
    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let inner = &self.inner;
        let cf = inner.cf(CF_LOG);
        let mut batch = WriteBatch::default();
        batch.delete_range_cf(cf, index_key(log_id.index), index_key(u64::MAX));
        batch.delete_cf(cf, index_key(u64::MAX));
        let mut cache = inner.cache();
        // Dropped whether or not the delete lands: the cache then serves
        // none of these indexes, the DB answers for them.
        cache.truncate(log_id.index);
        // Entries written at these indexes again are not on disk until
        // their own append's sync.
        inner.durable.send_if_modified(|d| {
            let floor = log_id.index.saturating_sub(1);
            inner.truncations.lock().unwrap().push(floor);
            let lower = *d >= log_id.index;
            if lower {
                *d = floor;
            }
            lower
        });
        inner
            .write(batch, false)
            .map_err(|e| StorageIOError::write_log_entry(log_id, e))?;
        Ok(())
    }

    /// Deletes every entry up to and including `log_id` and remembers it as
    /// the last purged, in one batch.
    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.purge_now(log_id)
    }
}
