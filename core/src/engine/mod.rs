//! The engine: one per open store per process.

mod admin;
mod bands;
mod bucket;
mod check;
mod claim;
mod close;
mod commit;
mod control;
pub(crate) mod debounce;
mod enqueue;
mod fanin;
mod fanin_check;
mod fanin_group;
mod fanin_results;
mod find;
mod flow;
mod heartbeat;
mod hub;
mod key_list;
mod keyed;
mod keyed_lease;
mod lease;
mod leases;
mod limiter;
mod notifier;
mod pause;
mod peek;
mod prune;
mod purge;
mod ready_age;
mod recover;
mod replica;
mod resettle;
mod schedules;
mod scope_counts;
mod scopes;
mod settle;
mod settle_many;
mod steer;
mod tag_ops;
mod tags;
mod transition;
mod unique;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use rocksdb::{ColumnFamily, DB};

use crate::clock::Clock;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::job::{CorruptRecord, JobId, State};
use crate::metrics::{Counts, Metrics};
use crate::reaper::Reaper;
use crate::store::codec::{self, JobRecord};
use crate::store::keys::{self, JobKey};
use crate::store::{self as st, Store};

pub use admin::CheckReport;
pub(crate) use bands::Bands;
pub(crate) use commit::{unavailable, Commit, Replicated};
pub(crate) use leases::Leases;
pub(crate) use notifier::Notifier;
pub(crate) use schedules::Wake;

const STRIPES: usize = 64;

/// Makes a fresh engine's [`Commit`] over its store (`commit::Local`, or a
/// test's wrapper of it).
pub(crate) type MakeCommit<'a> = dyn Fn(Arc<Store>, &Config) -> Box<dyn Commit> + 'a;

/// One open store. Shared by every `Queue` handle of the process that
/// opened the same path; `Send + Sync`, called from any thread.
///
/// # Lock order
///
/// From outer to inner; a thread holding a lock only ever takes locks
/// below it, never above:
///
/// 1. `maintenance` (pruning and purging, which both delete completed rows);
///    `schedules` (the schedule table: a firing pass, a put), never with it
/// 2. `job_locks` stripes: one (operator retry of a dead row), or all of
///    them in index order (purge of dead rows)
/// 3. `idem_locks` stripes, in index order (an enqueue holds its batch's
///    stripes from the idempotency check to the commit)
/// 4. lease entries (`leases`), in job-id order (`extend`, `settle_many`);
///    a settle holds its entry across its write
/// 5. a band group (`bands`), held only to seek and claim, never across a
///    write; then the `limiter` (flow control: a claim takes its slots, a
///    settle's commit frees them); then the `Bands` scope-set lock
///
/// `pause_gate` sits outside all of these: a lease holds it shared for its
/// claim and commit, `pause`/`resume` exclusively for their write (they
/// take no other lock but the scope-set's and a leaf under it).
/// 6. leaf locks: a lease shard, `counts`, `corrupt_seen`,
///    `prune_cursors`, the notifier's epoch, the `reaper` slot
///
/// The process registry is held while an engine opens and while a
/// registered engine closes, and is never taken under any of these. No
/// lock is held across an fsync but a lease entry's (which only blocks
/// other calls on the same job) and the stripes of an enqueue.
///
/// A fence (`commit.rs`) runs inside a write, under whatever its writer
/// holds: it takes only the reaper and scheduler slots (leaves) and the
/// hub's own locks below `order`, and joins no thread.
pub(crate) struct Engine {
    /// The store (RocksDB, the pid and format files) this engine borrows.
    /// Let go in `drop` after the cached iterators and `commit`, under the
    /// registry lock; the store closes when its last owner lets go.
    store: ManuallyDrop<Arc<Store>>,
    /// Where every write goes (`commit.rs`); let go before `store`.
    commit: ManuallyDrop<Box<dyn Commit>>,
    /// Set, with the reason, when a commit's outcome was unknown: every
    /// later call answers `Unavailable` (see `commit.rs`).
    fenced: OnceLock<String>,
    /// The store's column family handles, looked up once (see [`CfHandles`]).
    cfs: CfHandles,
    /// The canonical store directory (the registry key).
    pub path: PathBuf,
    /// The configuration this engine was opened with (a second open in
    /// the process must pass an equal one).
    pub cfg: Config,
    /// Every TTL, deadline, backoff and retention reads this clock.
    pub clock: Arc<dyn Clock>,
    /// The draws of the retry delays' jitter (`backoff.rs`).
    pub jitter: crate::backoff::JitterRng,
    /// Band cursors, claims and cached iterators: how pollers find work.
    pub bands: Bands,
    /// The leased jobs, rebuilt from the leased rows at open.
    pub leases: Leases,
    /// The in-memory mirror of the counters column family.
    pub counts: Counts,
    /// Transition counters and reaper figures since open.
    pub metrics: Metrics,
    /// Wakes waiting pollers when work may have arrived.
    pub notifier: Notifier,
    /// Subscriptions and job watches (`hub.rs`).
    pub hub: hub::Hub,
    /// Serialises idempotent enqueues of one (scope, key).
    idem_locks: Vec<Mutex<()>>,
    /// Fan-in: the gate and the waiting parents by child (`fanin.rs`).
    pub(crate) fan: fanin::FanState,
    /// Serialises moves of dead rows (operator retry and purge).
    job_locks: Vec<Mutex<()>>,
    /// The round-robin position of the scope served last.
    pub rr: AtomicUsize,
    /// Leases that scope had in its current turn (weighted fairness: a
    /// scope of weight w keeps its turn for w leases).
    pub rr_used: std::sync::atomic::AtomicU32,
    /// Flow-control limits in memory (`limiter.rs`, `flow.rs`).
    pub limiter: limiter::Limiter,
    /// Flow control by job key (`keyed.rs`, `keyed_lease.rs`).
    pub keys: keyed::KeyGate,
    /// The background reaper thread, if one runs.
    reaper: Mutex<Option<Reaper>>,
    /// The schedules (`schedules.rs`).
    schedules: schedules::Schedules,
    /// The scheduler thread, if one runs (beside the reaper).
    scheduler: Mutex<Option<crate::scheduler::Scheduler>>,
    /// Set when the last handle closes: no new open shares this engine and
    /// waits end with `Closed`.
    pub shutting_down: AtomicBool,
    /// `Queue` handles (opens, not clones) holding this engine. Counted apart
    /// from the `Arc`'s references, which the reaper thread and calls in
    /// progress also take for a moment. Changed under the registry lock.
    handles: AtomicUsize,
    /// Recently seen corrupt records (bounded), for reports.
    pub corrupt_seen: Mutex<Vec<CorruptRecord>>,
    /// Where each (scope, state, priority) pruning pass resumes.
    pub prune_cursors: Mutex<HashMap<(crate::job::Scope, State, u8), keys::Pos>>,
    /// Where the next pass over the unique windows' expiry index starts
    /// (`unique.rs`).
    pub window_cursor: Mutex<Option<Vec<u8>>>,
    /// What is paused (see `pause.rs`).
    pub paused: RwLock<Arc<crate::control::Paused>>,
    /// Held shared by each claim-and-commit of a lease, exclusively by
    /// `pause` and `resume`.
    pub pause_gate: RwLock<()>,
    /// Opened with [`Engine::open_read_only`]: never written, never registered.
    pub read_only: bool,
    /// Held by pruning and purging, which both delete completed rows.
    pub maintenance: Mutex<()>,
    /// Set once the engine is in the registry. An engine whose open failed
    /// half-way is dropped while its opener still holds the registry lock,
    /// so only a registered engine may take that lock in `drop`.
    registered: AtomicBool,
    /// Set at the very end of `drop`, once the engine has let go of its
    /// store: what the last handle's `close` waits for (`close.rs`).
    pub(crate) dropped: Arc<close::Dropped>,
}

/// The column family handles of the engine's `DB`, resolved at open so a
/// move does not search the `DB`'s map by name (about 300 instructions a
/// lookup, a dozen lookups a lifecycle: `make bench`, callgrind).
///
/// Each pointer points at a `ColumnFamily` that the single-threaded `DB`
/// owns in its map. The map changes only through `&mut DB`
/// (`create_cf`, `drop_cf`), which nothing takes: the [`Store`] hands its
/// `DB` out as `&DB` only, and the engine holds the store until the last
/// step of `Engine::drop`. So every pointer is valid for as long as `&self`
/// of the engine is.
struct CfHandles([Option<std::ptr::NonNull<ColumnFamily>>; st::ALL_CFS.len()]);

// SAFETY: `ColumnFamily` is `Send + Sync`; these are shared references to
// handles the engine's `DB` owns (see above).
unsafe impl Send for CfHandles {}
unsafe impl Sync for CfHandles {}

impl CfHandles {
    fn new(db: &DB) -> Self {
        CfHandles(st::ALL_CFS.map(|n| db.cf_handle(n).map(std::ptr::NonNull::from)))
    }

    fn get(&self, name: &str) -> Option<std::ptr::NonNull<ColumnFamily>> {
        let i = match name {
            st::CF_JOBS => 0,
            st::CF_IDS => 1,
            st::CF_KINDS => 2,
            st::CF_IDEM => 3,
            st::CF_COUNTERS => 4,
            st::CF_META => 5,
            st::CF_PAYLOADS => 6,
            st::CF_EXPIRY => 7,
            st::CF_SCHEDULES => 8,
            _ => return None,
        };
        debug_assert_eq!(st::ALL_CFS[i], name);
        self.0[i]
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Process-wide registry: a second open of a store in this process shares its engine.
static REGISTRY: LazyLock<Mutex<HashMap<PathBuf, Weak<Engine>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn registry() -> MutexGuard<'static, HashMap<PathBuf, Weak<Engine>>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

impl Engine {
    /// Open (or share) the engine for `path`.
    pub fn open(path: &Path, cfg: Config, clock: Arc<dyn Clock>) -> Result<Arc<Engine>> {
        Self::open_with(path, cfg, clock, &|store, cfg| {
            Box::new(commit::Local::new(store, cfg.sync_writes))
        })
    }

    /// [`Engine::open`], a fresh engine's commits made by `commit` (tests
    /// wrap the embedded one). A fenced engine is not shared: its store
    /// answers `Unavailable` until every handle of it is dropped.
    pub(crate) fn open_with(
        path: &Path,
        cfg: Config,
        clock: Arc<dyn Clock>,
        commit: &MakeCommit<'_>,
    ) -> Result<Arc<Engine>> {
        cfg.validate()?;
        let canon = st::canonical(path)?;
        let started = Instant::now();
        loop {
            let mut reg = registry();
            let existing = reg.get(&canon).map(|w| (w.upgrade(), w.strong_count()));
            match existing {
                Some((Some(e), _)) if !e.shutting_down.load(Ordering::SeqCst) => {
                    if let Err(err) = e.check_fenced() {
                        drop(reg);
                        return Err(err);
                    }
                    if e.cfg != cfg {
                        drop(reg);
                        return Err(Error::invalid(format!(
                            "store {} is already open in this process with a different configuration",
                            canon.display()
                        )));
                    }
                    // Under the registry lock: a close cannot reach zero
                    // handles between the check above and this count.
                    e.handles.fetch_add(1, Ordering::SeqCst);
                    drop(reg);
                    return Ok(e);
                }
                Some(_) => {
                    // The last handle is closing it right now (the engine
                    // may still live for a moment in the reaper thread or a
                    // call in progress); wait for the close to release
                    // RocksDB's lock, then open afresh. The registry lock
                    // goes first: dropping the last reference takes it.
                    drop(reg);
                    drop(existing);
                    if started.elapsed() > Duration::from_secs(30) {
                        return Err(Error::Storage(format!(
                            "store {} did not finish closing within 30 s",
                            canon.display()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                None => {
                    let e = Arc::new(Engine::open_fresh(&canon, cfg, clock, commit)?);
                    reg.insert(canon.clone(), Arc::downgrade(&e));
                    e.registered.store(true, Ordering::SeqCst);
                    drop(reg);
                    e.start_threads();
                    return Ok(e);
                }
            }
        }
    }

    /// Start the reaper and the scheduler, unless `reaper_interval` is 0.
    fn start_threads(self: &Arc<Engine>) {
        if self.cfg.reaper_interval.is_zero() {
            return;
        }
        let r = Reaper::start(Arc::downgrade(self), self.cfg.reaper_interval);
        *self.reaper.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        let s =
            crate::scheduler::Scheduler::start(Arc::downgrade(self), self.schedules.wake.clone());
        *self.scheduler.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
    }

    /// A read-only engine for inspection: outside the registry, no reaper.
    pub fn open_read_only(path: &Path, cfg: Config) -> Result<Arc<Engine>> {
        cfg.validate()?;
        let store = Arc::new(Store::open_read_only(path)?);
        let path = path
            .canonicalize()
            .map_err(|e| Error::Storage(format!("cannot resolve {}: {e}", path.display())))?;
        let cfg = Config {
            reaper_interval: Duration::ZERO,
            ..cfg
        };
        // Never called: `write` refuses a read-only engine first.
        let commit = Box::new(commit::Local::new(store.clone(), false));
        let e = Engine::with_store(
            store,
            commit,
            &path,
            cfg,
            Arc::new(crate::clock::SystemClock),
        );
        e.recover()?;
        Ok(Arc::new(e))
    }

    fn open_fresh(
        path: &Path,
        cfg: Config,
        clock: Arc<dyn Clock>,
        commit: &MakeCommit<'_>,
    ) -> Result<Engine> {
        let store = Arc::new(Store::open(path)?);
        let commit = commit(store.clone(), &cfg);
        let e = Engine::with_store(store, commit, path, cfg, clock);
        e.recover()?;
        Ok(e)
    }

    fn with_store(
        store: Arc<Store>,
        commit: Box<dyn Commit>,
        path: &Path,
        cfg: Config,
        clock: Arc<dyn Clock>,
    ) -> Engine {
        let cfs = CfHandles::new(store.db());
        Engine {
            read_only: store.read_only(),
            store: ManuallyDrop::new(store),
            commit: ManuallyDrop::new(commit),
            fenced: OnceLock::new(),
            cfs,
            path: path.to_path_buf(),
            cfg,
            clock,
            jitter: crate::backoff::JitterRng::from_entropy(),
            bands: Bands::default(),
            leases: Leases::default(),
            counts: Counts::default(),
            metrics: Metrics::default(),
            notifier: Notifier::default(),
            idem_locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            fan: fanin::FanState::default(),
            job_locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            rr: AtomicUsize::new(0),
            rr_used: std::sync::atomic::AtomicU32::new(0),
            limiter: limiter::Limiter::default(),
            keys: keyed::KeyGate::default(),
            reaper: Mutex::new(None),
            schedules: schedules::Schedules::default(),
            scheduler: Mutex::new(None),
            shutting_down: AtomicBool::new(false),
            hub: hub::Hub::default(),
            handles: AtomicUsize::new(1),
            corrupt_seen: Mutex::new(Vec::new()),
            prune_cursors: Mutex::new(HashMap::new()),
            window_cursor: Mutex::new(None),
            paused: RwLock::new(Arc::default()),
            pause_gate: RwLock::new(()),
            maintenance: Mutex::new(()),
            registered: AtomicBool::new(false),
            dropped: Arc::default(),
        }
    }

    pub fn db(&self) -> &DB {
        self.store.db()
    }

    /// Heavy writes of this store running now (`Queue::write_busy`).
    pub fn heavy_writes(&self) -> usize {
        self.store.heavy_writes()
    }

    /// The store's format, read from its marker after the open.
    pub fn format(&self) -> Option<crate::store::format::StoreFormat> {
        self.store.format()
    }

    /// The handle of the column family `name` (one of [`st::ALL_CFS`]);
    /// `Corruption` when the store lacks it.
    pub fn cf(&self, name: &str) -> Result<&ColumnFamily> {
        match self.cfs.get(name) {
            // SAFETY: see `CfHandles`: the handle lives in the store's `DB`
            // map, which nothing changes while the engine lives.
            Some(p) => Ok(unsafe { p.as_ref() }),
            None => st::cf(self.db(), name),
        }
    }

    pub fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// A watch of job `id` (see `crate::watch`): `NotFound` for no such
    /// job; done at once when it is terminal already.
    pub fn watch(&self, id: &crate::job::JobId) -> Result<crate::watch::JobWatch> {
        if self.shutting_down.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        self.hub
            .watch(*id, || Ok(self.key_of(id)?.map(|k| k.state.is_terminal())))
    }

    /// A subscription to the transitions committed from now on.
    pub fn subscribe(
        &self,
        options: crate::watch::SubscribeOptions,
    ) -> Result<crate::watch::Subscription> {
        if self.shutting_down.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        let sub = self.hub.subscribe(options)?;
        if self.shutting_down.load(Ordering::SeqCst) || self.is_fenced() {
            // `close_all` (or a fence) may have run before the registration.
            sub.close();
        }
        Ok(sub)
    }

    fn stripe<'a, T: Hash>(locks: &'a [Mutex<()>], k: &T) -> MutexGuard<'a, ()> {
        let mut h = rustc_hash::FxHasher::default();
        k.hash(&mut h);
        locks[(h.finish() as usize) % locks.len()]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub fn job_lock(&self, id: &JobId) -> MutexGuard<'_, ()> {
        Self::stripe(&self.job_locks, id)
    }

    /// Every job lock, in order (a bulk move of dead rows; a single-row
    /// holder takes one, so the fixed order cannot deadlock).
    pub fn all_job_locks(&self) -> Vec<MutexGuard<'_, ()>> {
        self.job_locks
            .iter()
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }

    /// The jobs key the id index holds for `id`.
    pub fn key_of(&self, id: &JobId) -> Result<Option<JobKey>> {
        match self
            .db()
            .get_pinned_cf(self.cf(st::CF_IDS)?, id.as_bytes())?
        {
            Some(v) => JobKey::decode(&v).map(Some),
            None => Ok(None),
        }
    }

    /// The record at `key`, decoded.
    pub fn record_at(&self, key: &JobKey) -> Result<Option<JobRecord>> {
        match self
            .db()
            .get_pinned_cf(self.cf(st::CF_JOBS)?, key.encode())?
        {
            Some(v) => codec::decode(&v)
                .map(Some)
                .map_err(|e| Error::Corruption(format!("job {}: {e}", key.id))),
            None => Ok(None),
        }
    }

    /// The payload of job `id` whose record is `rec`: its own bytes, or,
    /// for one over `store::INLINE_PAYLOAD_MAX`, the payloads column
    /// family's. `Corruption` when that entry is missing or has another
    /// length than the record says.
    pub fn payload_of(&self, id: &JobId, rec: &JobRecord) -> Result<Vec<u8>> {
        let Some(len) = rec.ext.payload_len else {
            return Ok(rec.payload.clone());
        };
        match self
            .db()
            .get_pinned_cf(self.cf(st::CF_PAYLOADS)?, id.as_bytes())?
        {
            Some(p) if p.len() as u64 == len => Ok(p.to_vec()),
            Some(p) => Err(Error::Corruption(format!(
                "payload of job {id} is {} bytes, its record says {len}",
                p.len()
            ))),
            None => Err(Error::Corruption(format!(
                "payload of job {id} ({len} bytes) is missing"
            ))),
        }
    }

    /// Remember a corrupt record for reports and count it.
    pub fn report_corrupt(&self, key: &[u8], id: Option<JobId>, err: &Error) -> CorruptRecord {
        let c = CorruptRecord {
            key: keys::hex(key),
            id,
            error: err.to_string(),
        };
        // Count each bad record once (the reaper and `list` meet the same
        // one again and again), so the counter means "records", not "reads".
        let mut seen = self.corrupt_seen.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.iter().any(|s| s.key == c.key) {
            self.metrics.corrupt_records.fetch_add(1, Ordering::Relaxed);
            if seen.len() < 1024 {
                seen.push(c.clone());
            }
        }
        c
    }

    /// After a commit that wrote a pending or failed row: lower the cursors of
    /// its jobs band and kind band so pollers see it, and wake waiters.
    pub fn note_ready_row(&self, key: &JobKey, kind: &str) {
        self.note_row(key, kind);
        self.notifier.bump();
    }

    /// [`Engine::note_ready_row`] for many rows, waking waiters once.
    pub fn note_ready_rows<'a>(&self, rows: impl IntoIterator<Item = (&'a JobKey, &'a str)>) {
        for (key, kind) in rows {
            self.note_row(key, kind);
        }
        self.notifier.bump();
    }

    fn note_row(&self, key: &JobKey, kind: &str) {
        let group = self.bands.scope(key.scope).group(key.priority);
        {
            let mut g = bands::lock(&group);
            let pos = key.pos();
            match key.state {
                State::Pending => g.pending.note_insert(pos),
                State::Failed => g.failed.note_insert(pos),
                _ => return,
            }
            g.kind_cursor(kind).note_insert(pos);
        }
        self.bands.activate(key.scope);
    }
}
