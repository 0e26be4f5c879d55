//! A random mixed workload against one queue per case, checked step by step
//! against a model of every job's state, and at the end against `check()`
//! and `stats()`.
//!
//! Each step asserts what the engine must answer: leases take only ready,
//! matching jobs, the most urgent of their scope first, never a job already
//! under a live lease, and come back short only when nothing else is ready;
//! live tokens settle, stale ones are `Aborted` (or `NotFound` once the job is
//! pruned) except a repeat of the settle that ended the lease, answered `Ok`
//! while the job sits where that settle left it; a reaper pass expires exactly the leases past their deadline and
//! prunes exactly the completed jobs past retention.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use common::*;
use proptest::prelude::*;
use proptest::sample::Index;
use telha_jobs::{
    Config, EnqueueOptions, ErrorKind, Job, JobId, KindConfig, KindPattern, LeaseOptions,
    LeaseToken, NewJob, Scope, State,
};

const KINDS: [&str; 3] = ["embed", "ingest:pdf", "ingest:html"];
const PRIORITIES: [u8; 3] = [0, 128, 255];
const WORKERS: [&str; 2] = ["w0", "w1"];
const FILTERS: [&[&str]; 5] = [
    &[],
    &["embed"],
    &["ingest:*"],
    &["ingest:pdf"],
    &["embed", "ingest:html"],
];
const RETENTION_MS: u64 = 24 * 3600 * 1000;

fn scope_of(i: usize) -> Scope {
    [Scope::SYSTEM, Scope::from_bytes([7; 16])][i]
}

/// Defaults, with per-kind overrides so the model exercises each lookup.
fn config() -> Config {
    let mut c = test_config();
    c.kinds.insert(
        "embed".into(),
        KindConfig {
            max_attempts: Some(3),
            ..KindConfig::default()
        },
    );
    c.kinds.insert(
        "ingest:pdf".into(),
        KindConfig {
            lease_ttl: Some(Duration::from_secs(60)),
            ..KindConfig::default()
        },
    );
    c.backoff_base_secs_by_kind.insert("ingest:html".into(), 30);
    c
}

// ------------------------------------------------------------ operations

#[derive(Debug, Clone)]
struct Enq {
    kind: usize,
    /// 0: no scope given (the nil scope); 1: a tenant scope.
    scope: usize,
    prio: usize,
    delay_ms: Option<u64>,
    key: Option<u8>,
    max_attempts: Option<u32>,
}

#[derive(Debug, Clone)]
enum Op {
    Enqueue(Enq),
    EnqueueMany(Vec<Enq>),
    Lease {
        filter: usize,
        scope: Option<usize>,
        worker: usize,
        max: usize,
    },
    Complete {
        live: bool,
        pick: Index,
    },
    Fail {
        live: bool,
        pick: Index,
        retryable: bool,
    },
    Release {
        live: bool,
        pick: Index,
    },
    Extend {
        picks: Vec<(bool, Index)>,
        worker: usize,
    },
    Retry {
        pick: Index,
        unknown: bool,
    },
    Advance(u64),
    Reap,
    /// Close and open the store again: the in-memory state is rebuilt from disk.
    Reopen,
    Get(Index),
}

fn enq() -> impl Strategy<Value = Enq> {
    (
        0..KINDS.len(),
        0..2usize,
        0..PRIORITIES.len(),
        prop::option::weighted(0.2, 1..120_000u64),
        prop::option::weighted(0.3, 0..4u8),
        prop::option::weighted(0.2, 1..4u32),
    )
        .prop_map(|(kind, scope, prio, delay_ms, key, max_attempts)| Enq {
            kind,
            scope,
            prio,
            delay_ms,
            key,
            max_attempts,
        })
}

fn advance() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1..5_000u64,
        2 => Just(10_000u64),
        2 => Just(61_000u64),
        2 => Just(301_000u64),
        1 => Just(3_600_000u64),
        1 => Just(RETENTION_MS + 3_600_000),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let live = || prop::bool::weighted(0.85);
    prop_oneof![
        8 => enq().prop_map(Op::Enqueue),
        2 => prop::collection::vec(enq(), 1..5).prop_map(Op::EnqueueMany),
        10 => (
            0..FILTERS.len(),
            prop::option::weighted(0.3, 0..2usize),
            0..WORKERS.len(),
            prop_oneof![3 => Just(1usize), 1 => 2..5usize],
        )
            .prop_map(|(filter, scope, worker, max)| Op::Lease { filter, scope, worker, max }),
        4 => (live(), any::<Index>()).prop_map(|(live, pick)| Op::Complete { live, pick }),
        4 => (live(), any::<Index>(), prop::bool::weighted(0.8))
            .prop_map(|(live, pick, retryable)| Op::Fail { live, pick, retryable }),
        2 => (live(), any::<Index>()).prop_map(|(live, pick)| Op::Release { live, pick }),
        2 => (
            prop::collection::vec((prop::bool::weighted(0.7), any::<Index>()), 1..4),
            0..WORKERS.len(),
        )
            .prop_map(|(picks, worker)| Op::Extend { picks, worker }),
        2 => (any::<Index>(), prop::bool::weighted(0.1))
            .prop_map(|(pick, unknown)| Op::Retry { pick, unknown }),
        5 => advance().prop_map(Op::Advance),
        3 => Just(Op::Reap),
        1 => Just(Op::Reopen),
        2 => any::<Index>().prop_map(Op::Get),
    ]
}

// ----------------------------------------------------------------- model

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum M {
    Pending,
    Leased,
    Failed,
    Completed,
    Dead,
    Pruned,
}

impl M {
    fn state(self) -> Option<State> {
        Some(match self {
            M::Pending => State::Pending,
            M::Leased => State::Leased,
            M::Failed => State::Failed,
            M::Completed => State::Completed,
            M::Dead => State::Dead,
            M::Pruned => return None,
        })
    }
}

#[derive(Debug, Clone)]
struct MJob {
    kind: &'static str,
    scope: Scope,
    priority: u8,
    state: M,
    /// The row key's ts: ready-at, deadline, retry-at, or when it got there.
    ts: u64,
    /// When it last became ready (where a release puts it back).
    ready_at: u64,
    attempts: u32,
    max_attempts: u32,
    generation: u64,
    worker: Option<&'static str>,
    /// How the lease of `generation` ended, while nothing moved the job
    /// since: a repeat of that settle answers as it did.
    ended: Option<Ended>,
}

/// A settle that ended a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Complete,
    Fail,
    Release,
}

struct Model {
    cfg: Config,
    jobs: BTreeMap<JobId, MJob>,
    /// The one live lease of each leased job.
    live: BTreeMap<JobId, LeaseToken>,
    /// Tokens whose lease has ended (settled or reaped).
    stale: Vec<LeaseToken>,
    idem: HashMap<(Scope, u8), JobId>,
    created: usize,
    pruned: usize,
}

impl Model {
    fn ready(&self, j: &MJob, now: u64) -> bool {
        matches!(j.state, M::Pending | M::Failed) && j.ts <= now
    }

    fn backoff_ms(&self, kind: &str, attempts: u32) -> u64 {
        self.cfg.backoff_delay(kind, attempts).as_millis() as u64
    }

    fn ttl_ms(&self, kind: &str) -> u64 {
        self.cfg.lease_ttl_for(kind).as_millis() as u64
    }

    /// The error a settle of the stale token `t` must get.
    fn stale_error(&self, t: &LeaseToken) -> ErrorKind {
        if self.jobs[&t.id].state == M::Pruned {
            ErrorKind::NotFound
        } else {
            ErrorKind::Aborted
        }
    }

    /// What a settle `op` of the ended lease `t` must answer: `None` (Ok)
    /// for a repeat of the settle that ended it, while the job sits where
    /// that settle left it; else as [`Model::stale_error`].
    fn repeat_answer(&self, t: &LeaseToken, op: Ended) -> Option<ErrorKind> {
        let j = &self.jobs[&t.id];
        let repeat = j.state != M::Pruned && j.generation == t.generation && j.ended == Some(op);
        (!repeat).then(|| self.stale_error(t))
    }

    /// An attempt ended in failure (by the worker or by expiry).
    fn failed_attempt(&mut self, id: JobId, now: u64, retryable: bool, expired: bool) {
        let backoff = {
            let j = &self.jobs[&id];
            self.backoff_ms(j.kind, j.attempts + 1)
        };
        let j = self.jobs.get_mut(&id).unwrap();
        j.attempts += 1;
        if !retryable || j.attempts >= j.max_attempts {
            j.state = M::Dead;
            j.ts = now;
        } else {
            j.state = if expired { M::Pending } else { M::Failed };
            j.ts = now + backoff;
            j.ready_at = j.ts;
        }
    }

    fn end_lease(&mut self, id: JobId) -> LeaseToken {
        let t = self.live.remove(&id).expect("a live lease");
        self.stale.push(t);
        t
    }
}

fn kind_filter(i: usize) -> Vec<KindPattern> {
    FILTERS[i].iter().map(|p| p.parse().unwrap()).collect()
}

fn kind_matches(filter: &[KindPattern], kind: &str) -> bool {
    filter.is_empty() || filter.iter().any(|p| p.matches(kind))
}

// ---------------------------------------------------------------- runner

struct Run {
    s: TestStore,
    m: Model,
}

impl Run {
    fn new() -> Run {
        let cfg = config();
        Run {
            s: TestStore::with_config(cfg.clone()),
            m: Model {
                cfg,
                jobs: BTreeMap::new(),
                live: BTreeMap::new(),
                stale: Vec::new(),
                idem: HashMap::new(),
                created: 0,
                pruned: 0,
            },
        }
    }

    fn new_job(&self, e: &Enq) -> NewJob {
        let mut o = EnqueueOptions::default().priority(PRIORITIES[e.prio]);
        if e.scope == 1 {
            o = o.scope(scope_of(1));
        }
        if let Some(d) = e.delay_ms {
            o = o.delay(Duration::from_millis(d));
        }
        if let Some(k) = e.key {
            o = o.idempotency_key(format!("key-{k}"));
        }
        if let Some(n) = e.max_attempts {
            o = o.max_attempts(n);
        }
        NewJob::new(KINDS[e.kind], vec![e.kind as u8]).with(o)
    }

    fn enqueue(&mut self, batch: &[Enq], many: bool) {
        let now = self.s.now();
        let jobs: Vec<NewJob> = batch.iter().map(|e| self.new_job(e)).collect();
        let out = if many {
            self.s.q.enqueue_many(jobs).unwrap()
        } else {
            vec![self
                .s
                .q
                .enqueue(&jobs[0].kind, &jobs[0].payload, jobs[0].options.clone())
                .unwrap()]
        };
        assert_eq!(out.len(), batch.len());
        for (e, got) in batch.iter().zip(out) {
            let scope = scope_of(e.scope);
            let existing = e
                .key
                .and_then(|k| self.m.idem.get(&(scope, k)).copied())
                .filter(|id| self.m.jobs[id].state != M::Pruned);
            if let Some(id) = existing {
                assert_eq!(
                    (got.id, got.created),
                    (id, false),
                    "a live idempotency key answers its job"
                );
                continue;
            }
            assert!(got.created, "{e:?} should have created a job");
            assert!(!self.m.jobs.contains_key(&got.id), "a reused id");
            if let Some(k) = e.key {
                self.m.idem.insert((scope, k), got.id);
            }
            let ready_at = now + e.delay_ms.unwrap_or(0);
            let kind = KINDS[e.kind];
            self.m.jobs.insert(
                got.id,
                MJob {
                    kind,
                    scope,
                    priority: PRIORITIES[e.prio],
                    state: M::Pending,
                    ts: ready_at,
                    ready_at,
                    attempts: 0,
                    max_attempts: self.m.cfg.max_attempts_for(kind, e.max_attempts),
                    generation: 0,
                    worker: None,
                    ended: None,
                },
            );
            self.m.created += 1;
        }
    }

    fn lease(&mut self, filter: usize, scope: Option<usize>, worker: usize, max: usize) {
        let now = self.s.now();
        let kinds = kind_filter(filter);
        let scopes: Vec<Scope> = scope.map(scope_of).into_iter().collect();
        let opts = LeaseOptions {
            scopes: scopes.clone(),
            kinds: kinds.clone(),
            wait: None,
            ..LeaseOptions::default()
        };
        let w = WORKERS[worker];
        let got: Vec<Job> = if max == 1 {
            self.s.q.lease_next(w, &opts).unwrap().into_iter().collect()
        } else {
            self.s.q.lease_many(w, max, &opts).unwrap()
        };
        assert!(got.len() <= max);
        let eligible = |m: &Model, j: &MJob| {
            m.ready(j, now)
                && kind_matches(&kinds, j.kind)
                && (scopes.is_empty() || scopes.contains(&j.scope))
        };
        for job in &got {
            assert!(
                !self.m.live.contains_key(&job.id),
                "job {} leased while its lease {:?} is live",
                job.id,
                self.m.live[&job.id]
            );
            let mj = self.m.jobs.get(&job.id).expect("a leased job was enqueued");
            assert!(
                eligible(&self.m, mj),
                "leased {} ({mj:?}) which is not ready or does not match {opts:?} at {now}",
                job.id
            );
            // The most urgent ready, matching job of its scope.
            let best = self
                .m
                .jobs
                .iter()
                .filter(|&(_, o)| o.scope == mj.scope && eligible(&self.m, o))
                .map(|(id, o)| (o.priority, o.ts, *id))
                .min()
                .unwrap();
            assert_eq!(
                best,
                (mj.priority, mj.ts, job.id),
                "not the head of its scope"
            );
            assert_eq!(job.generation, mj.generation + 1);
            assert_eq!(job.attempts, mj.attempts);
            assert_eq!(job.max_attempts, mj.max_attempts);
            assert_eq!((job.kind.as_str(), job.scope), (mj.kind, mj.scope));
            assert_eq!(job.priority, mj.priority);
            assert_eq!(job.deadline, now + self.m.ttl_ms(mj.kind));
            assert_eq!(job.worker_id, w);

            let mj = self.m.jobs.get_mut(&job.id).unwrap();
            mj.state = M::Leased;
            mj.ts = job.deadline;
            mj.generation = job.generation;
            mj.worker = Some(w);
            mj.ended = None;
            self.m.live.insert(job.id, job.token());
        }
        if got.len() < max {
            let left: Vec<(&JobId, &MJob)> = self
                .m
                .jobs
                .iter()
                .filter(|&(_, j)| eligible(&self.m, j))
                .collect();
            assert!(
                left.is_empty(),
                "leased {} of {max} with {opts:?} at {now}, but these were ready: {left:?}",
                got.len()
            );
        }
    }

    fn pick_live(&self, pick: &Index) -> Option<LeaseToken> {
        (!self.m.live.is_empty()).then(|| {
            *self
                .m
                .live
                .values()
                .nth(pick.index(self.m.live.len()))
                .unwrap()
        })
    }

    fn pick_stale(&self, pick: &Index) -> Option<LeaseToken> {
        (!self.m.stale.is_empty()).then(|| self.m.stale[pick.index(self.m.stale.len())])
    }

    /// Submits a stale token with the settle `op`: a repeat of the settle
    /// that ended its lease answers Ok, any other is refused; both change
    /// nothing.
    fn stale_submit<T: std::fmt::Debug>(
        &self,
        pick: &Index,
        op: Ended,
        f: impl FnOnce(&LeaseToken) -> telha_jobs::Result<T>,
    ) {
        let Some(t) = self.pick_stale(pick) else {
            return;
        };
        let before = self.s.q.get(&t.id).unwrap();
        match self.m.repeat_answer(&t, op) {
            None => {
                f(&t).unwrap_or_else(|e| panic!("a repeated {op:?} of {t}: {e}"));
            }
            Some(kind) => {
                expect_err(f(&t), kind);
            }
        }
        assert_eq!(
            self.s.q.get(&t.id).unwrap(),
            before,
            "a stale submit changed the job"
        );
    }

    fn step(&mut self, op: &Op) {
        let now = self.s.now();
        match op {
            Op::Enqueue(e) => self.enqueue(std::slice::from_ref(e), false),
            Op::EnqueueMany(b) => self.enqueue(b, true),
            Op::Lease {
                filter,
                scope,
                worker,
                max,
            } => self.lease(*filter, *scope, *worker, *max),
            Op::Complete { live: true, pick } => {
                let Some(t) = self.pick_live(pick) else {
                    return;
                };
                self.s.q.complete(&t, Some(b"result")).unwrap();
                self.m.end_lease(t.id);
                let j = self.m.jobs.get_mut(&t.id).unwrap();
                j.state = M::Completed;
                j.ts = now;
                j.ended = Some(Ended::Complete);
            }
            Op::Complete { live: false, pick } => {
                self.stale_submit(pick, Ended::Complete, |t| self.s.q.complete(t, None))
            }
            Op::Fail {
                live: true,
                pick,
                retryable,
            } => {
                let Some(t) = self.pick_live(pick) else {
                    return;
                };
                self.s.q.fail(&t, "boom", *retryable).unwrap();
                self.m.end_lease(t.id);
                self.m.failed_attempt(t.id, now, *retryable, false);
                self.m.jobs.get_mut(&t.id).unwrap().ended = Some(Ended::Fail);
            }
            Op::Fail {
                live: false,
                pick,
                retryable,
            } => self.stale_submit(pick, Ended::Fail, |t| self.s.q.fail(t, "late", *retryable)),
            Op::Release { live: true, pick } => {
                let Some(t) = self.pick_live(pick) else {
                    return;
                };
                self.s.q.release(&t).unwrap();
                self.m.end_lease(t.id);
                let j = self.m.jobs.get_mut(&t.id).unwrap();
                j.state = M::Pending;
                j.ts = j.ready_at.min(now);
                j.ended = Some(Ended::Release);
            }
            Op::Release { live: false, pick } => {
                self.stale_submit(pick, Ended::Release, |t| self.s.q.release(t))
            }
            Op::Extend { picks, worker } => self.extend(picks, WORKERS[*worker]),
            Op::Retry { pick, unknown } => self.retry(pick, *unknown),
            Op::Advance(ms) => self.s.advance(Duration::from_millis(*ms)),
            Op::Reap => self.reap(),
            Op::Reopen => self.s.reopen(),
            Op::Get(pick) => {
                if !self.m.jobs.is_empty() {
                    let id = *self
                        .m
                        .jobs
                        .keys()
                        .nth(pick.index(self.m.jobs.len()))
                        .unwrap();
                    self.assert_job(&id);
                }
            }
        }
    }

    fn extend(&mut self, picks: &[(bool, Index)], worker: &'static str) {
        let now = self.s.now();
        let mut tokens: Vec<LeaseToken> = Vec::new();
        for (live, pick) in picks {
            let t = if *live {
                self.pick_live(pick)
            } else {
                self.pick_stale(pick)
            };
            // One token per job: a batch naming one job twice is a separate test.
            if let Some(t) = t.filter(|t| tokens.iter().all(|x| x.id != t.id)) {
                tokens.push(t);
            }
        }
        if tokens.is_empty() {
            return;
        }
        let answers = self.s.q.extend(&tokens, worker).unwrap();
        assert_eq!(answers.len(), tokens.len());
        for (t, a) in tokens.iter().zip(answers) {
            if self.m.live.get(&t.id) == Some(t) {
                let j = self.m.jobs.get_mut(&t.id).unwrap();
                if j.worker == Some(worker) {
                    let want =
                        (now + self.m.cfg.lease_ttl_for(j.kind).as_millis() as u64).max(j.ts);
                    assert_eq!(a.unwrap(), want, "extend of {t}");
                    j.ts = want;
                } else {
                    expect_err(a, ErrorKind::Aborted);
                }
            } else {
                expect_err(a, self.m.stale_error(t));
            }
        }
    }

    fn retry(&mut self, pick: &Index, unknown: bool) {
        let now = self.s.now();
        if unknown || self.m.jobs.is_empty() {
            expect_err(
                self.s.q.retry(&JobId::from_bytes([0xEE; 16])),
                ErrorKind::NotFound,
            );
            return;
        }
        let id = *self
            .m
            .jobs
            .keys()
            .nth(pick.index(self.m.jobs.len()))
            .unwrap();
        let r = self.s.q.retry(&id);
        let j = self.m.jobs.get_mut(&id).unwrap();
        match j.state {
            M::Dead | M::Failed => {
                r.unwrap();
                j.state = M::Pending;
                j.attempts = 0;
                j.ts = now;
                j.ready_at = now;
                j.worker = None;
                j.ended = None;
            }
            M::Pending | M::Leased | M::Completed => {
                expect_err(r, ErrorKind::InvalidArgument);
            }
            M::Pruned => {
                expect_err(r, ErrorKind::NotFound);
            }
        }
    }

    fn reap(&mut self) {
        let now = self.s.now();
        let report = self.s.q.reap().unwrap();
        let due: Vec<JobId> = self
            .m
            .live
            .keys()
            .filter(|id| self.m.jobs[*id].ts <= now)
            .copied()
            .collect();
        let (mut expired, mut dead) = (0, 0);
        for id in due {
            self.m.end_lease(id);
            self.m.failed_attempt(id, now, true, true);
            self.m.jobs.get_mut(&id).unwrap().ended = None;
            if self.m.jobs[&id].state == M::Dead {
                dead += 1;
            } else {
                expired += 1;
            }
        }
        let cutoff = now.saturating_sub(RETENTION_MS);
        let mut pruned = 0;
        for j in self.m.jobs.values_mut() {
            if j.state == M::Completed && j.ts <= cutoff {
                j.state = M::Pruned;
                pruned += 1;
            }
        }
        self.m.pruned += pruned;
        assert_eq!(
            (report.expired, report.dead, report.pruned),
            (expired, dead, pruned),
            "reap at {now}"
        );
        assert!(report.corrupt.is_empty(), "{:?}", report.corrupt);
    }

    fn assert_job(&self, id: &JobId) {
        let m = &self.m.jobs[id];
        let got = self.s.q.get(id).unwrap();
        let Some(info) = got else {
            assert_eq!(
                m.state,
                M::Pruned,
                "job {id} is gone but the model has {m:?}"
            );
            return;
        };
        assert_eq!(
            Some(info.state),
            m.state.state(),
            "state of {id}: model {m:?}"
        );
        assert_eq!(info.state_ts, m.ts, "state ts of {id}: model {m:?}");
        assert_eq!(info.attempts, m.attempts, "attempts of {id}");
        assert_eq!(info.max_attempts, m.max_attempts, "max_attempts of {id}");
        assert_eq!(info.generation, m.generation, "generation of {id}");
        assert_eq!(
            (info.kind.as_str(), info.scope, info.priority),
            (m.kind, m.scope, m.priority)
        );
        if m.state == M::Leased {
            assert_eq!(info.worker_id.as_deref(), m.worker);
            assert_eq!(info.lease_deadline, Some(m.ts));
        }
    }

    fn finish(&self) {
        assert_consistent(&self.s.q);
        for id in self.m.jobs.keys() {
            self.assert_job(id);
        }
        let stats = self.s.q.stats().unwrap();
        assert_eq!(
            stats.total.total() as usize,
            self.m.created - self.m.pruned,
            "stats count every enqueued job that was not pruned"
        );
        let pruned = self
            .m
            .jobs
            .values()
            .filter(|j| j.state == M::Pruned)
            .count();
        assert_eq!(pruned, self.m.pruned);
        for s in State::ALL {
            let want = self
                .m
                .jobs
                .values()
                .filter(|j| j.state.state() == Some(s))
                .count() as u64;
            assert_eq!(stats.total.get(s), want, "{s} jobs");
        }
        assert_eq!(stats.total.leased as usize, self.m.live.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES raises the count for a longer hunt.
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(24),
        // Never write regression files into the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_random_workload_never_double_leases_and_keeps_every_index_and_count_exact(
        ops in prop::collection::vec(op(), 1..300)
    ) {
        let mut run = Run::new();
        for op in &ops {
            run.step(op);
        }
        run.finish();
    }
}
