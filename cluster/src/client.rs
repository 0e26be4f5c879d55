//! [`ClusterQueue`]: a `Queue` for in-process clusters (tests) that sends
//! each call to the current leader's engine and repeats it, within a
//! deadline, as the remote client's retry table allows (client/src/retry.rs):
//!
//! - **always** repeated on `Unavailable` (no engine, not the leader, a
//!   fenced engine, an outcome unknown): settles (a repeat is answered from
//!   the job's record as the first was), extend and heartbeat, lease (a
//!   lost reply leaves one orphan lease that expires: late, never lost),
//!   reads, and an enqueue carrying an idempotency key (deduplicated);
//! - an enqueue without a key gets a fresh UUIDv7 key (as the remote
//!   client does with more than one server), so its repeat after an
//!   unknown outcome finds the job the first attempt created instead of
//!   creating a second; the answer then says `created: true` (that job is
//!   this call's). With [`ClusterQueue::with_auto_keys`]`(false)` an
//!   unkeyed enqueue is repeated only when it certainly reached no engine
//!   (no node had one open), since a repeat could enqueue twice.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use telha_jobs::{
    Completion, EnqueueOptions, Enqueued, Error, ErrorKind, Failure, Job, JobId, JobInfo,
    LeaseOptions, LeaseToken, NewJob, Queue, Result,
};

use crate::network::SplitMix64;
use crate::node::Node;

/// The nodes of an in-process cluster by id, shared by whoever runs them
/// and the [`ClusterQueue`]s that route to them. A node absent from the
/// set is down.
#[derive(Clone, Default)]
pub struct Nodes(Arc<RwLock<BTreeMap<u64, Arc<Node>>>>);

impl Nodes {
    pub fn insert(&self, node: Node) {
        self.write().insert(node.id(), Arc::new(node));
    }

    /// Take node `id` out (to crash or stop it).
    pub fn remove(&self, id: u64) -> Option<Arc<Node>> {
        self.write().remove(&id)
    }

    pub fn get(&self, id: u64) -> Option<Arc<Node>> {
        self.read().get(&id).cloned()
    }

    /// The ids of the nodes up, ascending.
    pub fn ids(&self) -> Vec<u64> {
        self.read().keys().copied().collect()
    }

    pub fn all(&self) -> Vec<Arc<Node>> {
        self.read().values().cloned().collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<u64, Arc<Node>>> {
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u64, Arc<Node>>> {
        self.0.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// How long a call keeps trying by default.
pub const CALL_DEADLINE_DEFAULT: Duration = Duration::from_secs(20);
/// The first pause between attempts; doubles up to [`BACKOFF_MAX`]. An
/// attempt costs a lock per node here (no network), and a new leader's
/// engine opens within milliseconds of its election, so the pause stays
/// short: a client asleep for 200 ms (the old maximum) was a tenth of the
/// failover time.
pub const BACKOFF_BASE: Duration = Duration::from_millis(1);
pub const BACKOFF_MAX: Duration = Duration::from_millis(5);

/// When a failed attempt may be repeated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Safe {
    Always,
    IfNotSent,
}

/// A queue over an in-process cluster: every call goes to the leader's
/// engine of the moment. Cheap to clone; clones share their counters.
#[derive(Clone)]
pub struct ClusterQueue {
    nodes: Nodes,
    deadline: Duration,
    retries: Arc<AtomicU64>,
    /// The leader that answered last: tried first.
    last: Arc<AtomicU64>,
    /// Unkeyed enqueues get a fresh key (on by default).
    auto_keys: bool,
}

impl ClusterQueue {
    pub fn new(nodes: Nodes) -> ClusterQueue {
        ClusterQueue {
            nodes,
            deadline: CALL_DEADLINE_DEFAULT,
            retries: Arc::default(),
            last: Arc::default(),
            auto_keys: true,
        }
    }

    /// Whether an enqueue without an idempotency key gets a fresh one so
    /// that it may be repeated after an unknown outcome (default true).
    /// The key costs an index row per job; without it such an enqueue is
    /// repeated only when it reached no engine.
    pub fn with_auto_keys(mut self, on: bool) -> ClusterQueue {
        self.auto_keys = on;
        self
    }

    /// A fresh key for `o` when it has none and auto keys are on; whether
    /// one was added.
    fn auto_key(&self, o: &mut EnqueueOptions) -> bool {
        let add = self.auto_keys && o.idempotency_key.is_none();
        if add {
            o.idempotency_key = Some(uuid::Uuid::now_v7().to_string());
        }
        add
    }

    /// How long each call keeps trying before it answers `Unavailable`.
    pub fn with_deadline(mut self, d: Duration) -> ClusterQueue {
        self.deadline = d;
        self
    }

    /// Attempts repeated so far, by this queue and its clones.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// The engine of the moment: the last leader's first, else any node's;
    /// a node's hint is followed. `Unavailable` when none has one.
    fn engine(&self) -> Result<Queue> {
        let last = self.last.load(Ordering::Relaxed);
        if let Some(q) = self.nodes.get(last).and_then(|n| n.queue().ok()) {
            return Ok(q);
        }
        let mut why = Vec::new();
        for n in self.nodes.all() {
            match n.queue() {
                Ok(q) => {
                    self.last.store(n.id(), Ordering::Relaxed);
                    return Ok(q);
                }
                Err(u) => {
                    if let Some(q) = u
                        .leader
                        .filter(|&l| l != n.id())
                        .and_then(|l| self.nodes.get(l))
                        .and_then(|l| l.queue().ok())
                    {
                        return Ok(q);
                    }
                    why.push(u.to_string());
                }
            }
        }
        Err(Error::unavailable(format!(
            "no node has an engine open: {}",
            why.join("; ")
        )))
    }

    fn call<T>(&self, safe: Safe, f: impl Fn(&Queue) -> Result<T>) -> Result<T> {
        let end = Instant::now() + self.deadline;
        let mut rng = SplitMix64::new(
            self.retries.load(Ordering::Relaxed) ^ (end.elapsed().as_nanos() as u64),
        );
        let mut n = 0u32;
        loop {
            let (res, sent) = match self.engine() {
                Ok(q) => (f(&q), true),
                Err(e) => (Err(e), false),
            };
            match res {
                Err(e)
                    if e.kind() == ErrorKind::Unavailable
                        && (safe == Safe::Always || !sent)
                        && Instant::now() < end =>
                {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                    let full = BACKOFF_BASE.saturating_mul(1 << n.min(10)).min(BACKOFF_MAX);
                    let pause = full / 2 + (full / 2).mul_f64(rng.next_f64());
                    std::thread::sleep(pause.min(end.saturating_duration_since(Instant::now())));
                    n += 1;
                }
                res => return res,
            }
        }
    }

    pub fn enqueue(
        &self,
        kind: &str,
        payload: &[u8],
        mut options: EnqueueOptions,
    ) -> Result<Enqueued> {
        let auto = self.auto_key(&mut options);
        let safe = if options.idempotency_key.is_some() {
            Safe::Always
        } else {
            Safe::IfNotSent
        };
        let mut r = self.call(safe, |q| q.enqueue(kind, payload, options.clone()))?;
        // Only this call carried the key: a job found by it is the one
        // its first attempt created.
        r.created |= auto;
        Ok(r)
    }

    /// Repeated when every job carries an idempotency key (given, or
    /// added by auto keys).
    pub fn enqueue_many(&self, mut jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        let auto: Vec<bool> = jobs
            .iter_mut()
            .map(|j| self.auto_key(&mut j.options))
            .collect();
        let safe = if jobs.iter().all(|j| j.options.idempotency_key.is_some()) {
            Safe::Always
        } else {
            Safe::IfNotSent
        };
        let mut r = self.call(safe, |q| q.enqueue_many(jobs.clone()))?;
        for (e, auto) in r.iter_mut().zip(auto) {
            e.created |= auto;
        }
        Ok(r)
    }

    pub fn lease_next(&self, worker_id: &str, options: &LeaseOptions) -> Result<Option<Job>> {
        self.call(Safe::Always, |q| q.lease_next(worker_id, options))
    }

    /// Repeated like `lease_next`: a lost reply leaves orphan leases that
    /// expire.
    pub fn lease_many(
        &self,
        worker_id: &str,
        max: usize,
        options: &LeaseOptions,
    ) -> Result<Vec<Job>> {
        self.call(Safe::Always, |q| q.lease_many(worker_id, max, options))
    }

    /// Repeated: each item is answered from the job's record as the first was.
    pub fn complete_many(&self, items: Vec<Completion>) -> Result<Vec<Result<()>>> {
        self.call(Safe::Always, |q| q.complete_many(items.clone()))
    }

    pub fn complete(&self, token: &LeaseToken, result: Option<&[u8]>) -> Result<()> {
        self.call(Safe::Always, |q| q.complete(token, result))
    }

    pub fn complete_with(&self, completion: Completion) -> Result<()> {
        self.call(Safe::Always, |q| q.complete_with(completion.clone()))
    }

    pub fn fail(&self, token: &LeaseToken, reason: &str, retryable: bool) -> Result<()> {
        self.call(Safe::Always, |q| q.fail(token, reason, retryable))
    }

    /// Repeated: each item is answered from the job's record as the first was.
    pub fn fail_many(&self, items: Vec<Failure>) -> Result<Vec<Result<()>>> {
        self.call(Safe::Always, |q| q.fail_many(items.clone()))
    }

    /// Repeated: each item is answered from the job's record as the first was.
    pub fn release_many(&self, tokens: &[LeaseToken]) -> Result<Vec<Result<()>>> {
        self.call(Safe::Always, |q| q.release_many(tokens))
    }

    pub fn fail_with(&self, failure: Failure) -> Result<()> {
        self.call(Safe::Always, |q| q.fail_with(failure.clone()))
    }

    pub fn release(&self, token: &LeaseToken) -> Result<()> {
        self.call(Safe::Always, |q| q.release(token))
    }

    pub fn extend(&self, tokens: &[LeaseToken], worker_id: &str) -> Result<Vec<Result<u64>>> {
        self.call(Safe::Always, |q| q.extend(tokens, worker_id))
    }

    pub fn get(&self, id: &JobId) -> Result<Option<JobInfo>> {
        self.call(Safe::Always, |q| q.get(id))
    }

    /// Run any read (or any call safe to repeat) on the leader's engine.
    pub fn read<T>(&self, f: impl Fn(&Queue) -> Result<T>) -> Result<T> {
        self.call(Safe::Always, f)
    }
}
