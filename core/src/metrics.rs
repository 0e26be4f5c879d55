//! Exact per-(kind, state) counts mirrored in memory, transition counters, and
//! the Prometheus text exposition.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::RwLock;

use crate::event::Event;
use crate::ids::Scope;
use crate::job::{State, StateCounts, Stats};
use crate::scopes::{ScopeCounts, StatsQuery};
use crate::state::PerState;

/// Exact counts per state for each key of a map (a kind, a scope).
#[derive(Debug)]
struct CountMap<K>(RwLock<HashMap<K, [AtomicI64; State::COUNT]>>);

impl<K> Default for CountMap<K> {
    fn default() -> Self {
        CountMap(RwLock::new(HashMap::default()))
    }
}

impl<K: std::hash::Hash + Eq + Clone> CountMap<K> {
    fn add<Q>(&self, key: &Q, delta: &PerState<i64>)
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        {
            let r = self.0.read().unwrap_or_else(|p| p.into_inner());
            if let Some(c) = r.get(key) {
                for (a, d) in c.iter().zip(delta.0) {
                    if d != 0 {
                        a.fetch_add(d, Ordering::Relaxed);
                    }
                }
                return;
            }
        }
        let mut w = self.0.write().unwrap_or_else(|p| p.into_inner());
        let c = w.entry(key.to_owned()).or_default();
        for (a, d) in c.iter().zip(delta.0) {
            a.fetch_add(d, Ordering::Relaxed);
        }
    }

    /// Every key with a non-zero count, and the sum over all of them.
    fn snapshot<T: Ord>(
        &self,
        name: impl Fn(&K) -> T,
    ) -> (BTreeMap<T, PerState<i64>>, PerState<i64>) {
        let r = self.0.read().unwrap_or_else(|p| p.into_inner());
        let mut out = BTreeMap::new();
        let mut total = PerState::<i64>::default();
        for (k, c) in r.iter() {
            let a = PerState(std::array::from_fn(|i| c[i].load(Ordering::Relaxed)));
            if a.is_zero() {
                continue;
            }
            total.add(&a);
            out.insert(name(k), a);
        }
        (out, total)
    }

    /// Drop the keys whose counts are all zero. Exact: an absent key
    /// counts zero, and a later delta recreates it (under the write lock,
    /// so no `add` is between its read and its increments meanwhile).
    fn sweep(&self) {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, c| c.iter().any(|a| a.load(Ordering::Relaxed) != 0));
    }
}

/// The in-memory mirror of the counters column family: per kind and per
/// scope. The disk copy is updated by merge operands in the same batch as
/// each move; this copy after the commit, so `stats()` is a map read.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    by_kind: CountMap<String>,
    by_scope: ScopeCounts,
}

impl Counts {
    pub fn add(&self, kind: &str, delta: &PerState<i64>) {
        self.by_kind.add(kind, delta);
    }

    pub fn add_scope(&self, scope: &Scope, delta: &PerState<i64>) {
        self.by_scope.add(scope, delta);
    }

    /// The scopes with a job in one of `states` (exact: the counters are).
    pub fn scopes_with(&self, states: &[State]) -> Vec<Scope> {
        self.by_scope.keys_with(states)
    }

    /// Forget the kinds and scopes that have no job in any state (the
    /// reaper's pass), so memory follows the jobs kept, not every scope
    /// ever seen. Returns the per-scope entries kept.
    pub fn sweep(&self) -> usize {
        self.by_kind.sweep();
        self.by_scope.sweep();
        self.by_scope.len()
    }

    /// Whether `scope` has a job in `state`.
    pub fn has(&self, scope: &Scope, state: State) -> bool {
        self.by_scope.has(scope, state)
    }

    /// Per-scope entries held in memory (for metrics).
    pub fn scopes_held(&self) -> usize {
        self.by_scope.len()
    }

    /// Forget the per-scope counts (before they are rebuilt by a scan).
    pub fn clear_scopes(&self) {
        self.by_scope.clear();
    }

    /// The per-state sums over kinds and over scopes: equal unless the
    /// per-scope counters went stale (see `recover.rs`).
    pub fn totals(&self) -> (PerState<i64>, PerState<i64>) {
        (
            self.by_kind.snapshot(|k| k.clone()).1,
            self.by_scope.total(),
        )
    }

    /// Every scope with jobs (the consistency check's whole view).
    pub fn scopes_all(&self) -> BTreeMap<Scope, PerState<i64>> {
        self.by_scope.all()
    }

    /// The per-kind and total counts, and one page of per-scope ones.
    pub fn stats(&self, q: &StatsQuery) -> crate::error::Result<Stats> {
        let page = self.by_scope.page(q)?;
        let (kinds, total) = self.by_kind.snapshot(|k| k.clone());
        Ok(Stats {
            by_kind: kinds
                .iter()
                .map(|(k, a)| (k.clone(), StateCounts::from_per_state(a)))
                .collect(),
            by_scope: page.scopes,
            scopes_next: page.next,
            scope_order: q.scope_order,
            total: StateCounts::from_per_state(&total),
            paused: Default::default(),
            oldest_ready_ms: Default::default(),
        })
    }

    /// The per-kind and total counts only (no scope).
    pub fn kind_stats(&self) -> Stats {
        let none = StatsQuery {
            scope_limit: 0,
            ..StatsQuery::default()
        };
        self.stats(&none).unwrap_or_default()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Metrics {
    transitions: [AtomicU64; Event::ALL.len()],
    pub corrupt_records: AtomicU64,
    pub reaper_passes: AtomicU64,
    /// Unique windows the reaper deleted after their end.
    pub windows_pruned: AtomicU64,
    /// Background reaper passes that failed (storage errors).
    pub reaper_errors: AtomicU64,
    /// Scheduler passes (background and `run_schedules`).
    pub schedule_passes: AtomicU64,
    /// Background scheduler passes that failed (storage errors).
    pub schedule_errors: AtomicU64,
    /// The wait and run-time histograms.
    pub timings: crate::timings::Timings,
}

impl Metrics {
    pub fn count(&self, e: Event, n: u64) {
        if n > 0 {
            self.transitions[e.index()].fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn get(&self, e: Event) -> u64 {
        self.transitions[e.index()].load(Ordering::Relaxed)
    }

    /// Prometheus text exposition format (version 0.0.4).
    pub fn render(&self, stats: &Stats, leased_inflight: usize) -> String {
        let mut o = String::with_capacity(2048);
        header(
            &mut o,
            "telha_jobs_jobs",
            "gauge",
            "Jobs in each state, by kind.",
        );
        for (kind, c) in &stats.by_kind {
            for s in State::ALL {
                let _ = writeln!(
                    o,
                    "telha_jobs_jobs{{kind=\"{}\",state=\"{s}\"}} {}",
                    escape(kind),
                    c.get(s)
                );
            }
        }
        single(
            &mut o,
            "telha_jobs_dead_letter_jobs",
            "gauge",
            "Jobs in the dead state (dead-lettered). Alert when above zero.",
            stats.total.dead,
        );
        single(
            &mut o,
            "telha_jobs_leases_in_flight",
            "gauge",
            "Leases currently held.",
            leased_inflight as u64,
        );
        header(
            &mut o,
            "telha_jobs_transitions_total",
            "counter",
            "State transitions since the store was opened.",
        );
        for t in Event::ALL {
            let _ = writeln!(
                o,
                "telha_jobs_transitions_total{{transition=\"{}\"}} {}",
                t.name(),
                self.get(t)
            );
        }
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        single(
            &mut o,
            "telha_jobs_corrupt_records_total",
            "counter",
            "Distinct records that did not decode (skipped and kept on disk).",
            load(&self.corrupt_records),
        );
        single(
            &mut o,
            "telha_jobs_reaper_passes_total",
            "counter",
            "Reaper passes run.",
            load(&self.reaper_passes),
        );
        single(
            &mut o,
            "telha_jobs_unique_windows_pruned_total",
            "counter",
            "Unique windows (enqueue's unique_for) deleted by the reaper after their end.",
            load(&self.windows_pruned),
        );
        single(
            &mut o,
            "telha_jobs_reaper_errors_total",
            "counter",
            "Background reaper passes that failed (retried at the next interval).",
            load(&self.reaper_errors),
        );
        o
    }
}

/// The ready work per kind, for autoscalers: `telha_jobs_backlog{kind}`
/// (pending + failed, due or not, from the counters) and
/// `telha_jobs_oldest_ready_seconds{kind}` (how long the oldest due job has
/// been ready, from the band heads; 0 when nothing is due), for every kind
/// with jobs.
pub(crate) fn render_ready(
    o: &mut String,
    stats: &Stats,
    oldest: &BTreeMap<String, u64>,
    now: u64,
) {
    header(
        o,
        "telha_jobs_backlog",
        "gauge",
        "Jobs waiting to run (pending + failed, due or not), by kind.",
    );
    for (kind, c) in &stats.by_kind {
        let _ = writeln!(
            o,
            "telha_jobs_backlog{{kind=\"{}\"}} {}",
            escape(kind),
            c.pending + c.failed
        );
    }
    header(
        o,
        "telha_jobs_oldest_ready_seconds",
        "gauge",
        "How long the oldest job that is due (past its run-at or retry time) has been waiting, by kind; 0 when none is due.",
    );
    let mut kinds: std::collections::BTreeSet<&str> =
        stats.by_kind.keys().map(String::as_str).collect();
    kinds.extend(oldest.keys().map(String::as_str));
    for kind in kinds {
        let age = oldest.get(kind).map_or(0, |t| now.saturating_sub(*t));
        let _ = writeln!(
            o,
            "telha_jobs_oldest_ready_seconds{{kind=\"{}\"}} {}",
            escape(kind),
            age as f64 / 1000.0
        );
    }
}

/// `telha_jobs_paused{kind="..."}` / `{scope="..."}` 1 for each paused
/// kind, family and scope (the family is absent when nothing is paused,
/// as Prometheus expects of label sets that come and go).
pub(crate) fn render_paused(o: &mut String, p: &crate::control::Paused) {
    header(
        o,
        "telha_jobs_paused",
        "gauge",
        "1 for each paused kind (or family) and scope.",
    );
    for k in &p.kinds {
        let _ = writeln!(
            o,
            "telha_jobs_paused{{kind=\"{}\"}} 1",
            escape(&k.to_string())
        );
    }
    for s in &p.scopes {
        let _ = writeln!(o, "telha_jobs_paused{{scope=\"{s}\"}} 1");
    }
}

/// The flow-control limits: `telha_jobs_limit_leased{target}` (leases a
/// limit counts now), `telha_jobs_limit_held{target}` (its instances held
/// back now) and `telha_jobs_throttled_total{by, target}` (how often it
/// held work back, by `concurrency` or `rate`).
pub(crate) fn render_limits(o: &mut String, limits: &[crate::flow::LimitStatus]) {
    header(
        o,
        "telha_jobs_limit_leased",
        "gauge",
        "Leases a flow-control limit counts now (summed over the scopes of a scope:* target).",
    );
    for l in limits {
        let t = escape(&l.target.label());
        let _ = writeln!(o, "telha_jobs_limit_leased{{target=\"{t}\"}} {}", l.leased);
    }
    header(
        o,
        "telha_jobs_limit_held",
        "gauge",
        "Instances of a limit at their cap or out of tokens now (scopes, for a scope:* target).",
    );
    for l in limits {
        let t = escape(&l.target.label());
        let _ = writeln!(o, "telha_jobs_limit_held{{target=\"{t}\"}} {}", l.held);
    }
    header(
        o,
        "telha_jobs_throttled_total",
        "counter",
        "Times a limit held work back (a lease took its last slot or token, or found none), by cap or rate.",
    );
    for l in limits {
        let t = escape(&l.target.label());
        let _ = writeln!(
            o,
            "telha_jobs_throttled_total{{by=\"concurrency\",target=\"{t}\"}} {}",
            l.throttled_concurrency
        );
        let _ = writeln!(
            o,
            "telha_jobs_throttled_total{{by=\"rate\",target=\"{t}\"}} {}",
            l.throttled_rate
        );
    }
}

/// `telha_jobs_subscriptions` and `telha_jobs_job_watches`: who listens.
pub(crate) fn render_listeners(o: &mut String, subscriptions: usize, watches: usize) {
    single(
        o,
        "telha_jobs_subscriptions",
        "gauge",
        "Live event subscriptions (Queue::subscribe, WatchEvents).",
        subscriptions as u64,
    );
    single(
        o,
        "telha_jobs_job_watches",
        "gauge",
        "Pending waits for a job to finish (Queue::wait, WaitJob).",
        watches as u64,
    );
}

/// The scope set: `telha_jobs_scopes_active` (scopes a poller without a
/// scope filter visits), `telha_jobs_scopes_parked` (scopes whose only
/// work is delayed, out of the walk until it is due), and what the engine
/// holds per scope: `telha_jobs_scopes_in_memory` (band state) and
/// `telha_jobs_scope_counters_in_memory` (the counters' mirror).
pub(crate) fn render_scopes(o: &mut String, active: usize, parked: usize, held: (usize, usize)) {
    single(
        o,
        "telha_jobs_scopes_in_memory",
        "gauge",
        "Scopes whose band state is held in memory (forgotten when idle).",
        held.0 as u64,
    );
    single(
        o,
        "telha_jobs_scope_counters_in_memory",
        "gauge",
        "Scopes whose counters are mirrored in memory (those with jobs).",
        held.1 as u64,
    );
    single(
        o,
        "telha_jobs_scopes_active",
        "gauge",
        "Scopes that may have ready work (visited by any-scope polls).",
        active as u64,
    );
    single(
        o,
        "telha_jobs_scopes_parked",
        "gauge",
        "Scopes whose earliest job is not yet due (not visited until then).",
        parked as u64,
    );
}

/// The schedules: `telha_jobs_schedules` (how many), and per schedule
/// `telha_jobs_schedule_lag_seconds` (its last slot's enqueue minus the
/// slot), `telha_jobs_schedule_enqueued_total` and
/// `telha_jobs_schedule_skipped_total` (slots without a job of their own,
/// by catch-up). Each item: (name, lag ms, enqueued, skipped).
pub(crate) fn render_schedules<'a>(
    o: &mut String,
    rows: impl Iterator<Item = (&'a str, Option<u64>, u64, u64)> + Clone,
    count: usize,
) {
    single(
        o,
        "telha_jobs_schedules",
        "gauge",
        "Schedules in the store.",
        count as u64,
    );
    header(
        o,
        "telha_jobs_schedule_lag_seconds",
        "gauge",
        "How late the schedule's latest slot was enqueued (seconds after the slot).",
    );
    for (name, lag, _, _) in rows.clone() {
        if let Some(ms) = lag {
            let _ = writeln!(
                o,
                "telha_jobs_schedule_lag_seconds{{schedule=\"{}\"}} {}",
                escape(name),
                ms as f64 / 1000.0
            );
        }
    }
    header(
        o,
        "telha_jobs_schedule_enqueued_total",
        "counter",
        "Jobs the schedule enqueued.",
    );
    for (name, _, n, _) in rows.clone() {
        let _ = writeln!(
            o,
            "telha_jobs_schedule_enqueued_total{{schedule=\"{}\"}} {n}",
            escape(name)
        );
    }
    header(
        o,
        "telha_jobs_schedule_skipped_total",
        "counter",
        "Slots of the schedule that got no job of their own (catch-up after downtime or a clock step).",
    );
    for (name, _, _, n) in rows {
        let _ = writeln!(
            o,
            "telha_jobs_schedule_skipped_total{{schedule=\"{}\"}} {n}",
            escape(name)
        );
    }
}

/// The `# HELP` and `# TYPE` lines of a metric family.
fn header(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

/// A metric family with one unlabelled sample.
fn single(o: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    header(o, name, kind, help);
    let _ = writeln!(o, "{name} {value}");
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
