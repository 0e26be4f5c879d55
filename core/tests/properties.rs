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

#[path = "properties/run.rs"]
mod run;
use run::Run;

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
