//! How long jobs wait and run, per kind: the queue-wait histogram (from the
//! instant a job became ready, its run-at or retry time, to its lease) and
//! the run-time histogram (from the lease to the move that ends it, by
//! outcome), kept in memory since the store was opened, like the transition
//! counters.
//!
//! Observed after a commit from what the move already carries (the ready
//! instant is the from-row's key, the lease instant the record's
//! `leased_at`), so a lease adds no clock read and a settle one per
//! transaction. Each observation is a read lock, a hash of the kind and
//! two relaxed atomic adds.
//!
//! Memory: one [`KindTimings`] (8 histograms of 21 counters, 1.4 KB) per
//! kind observed, at most [`MAX_TIMED_KINDS`]; the kinds after that are
//! counted together under the label [`OTHER_KINDS`] (which no kind can
//! spell: kinds are lowercase), so a process fed unbounded kinds holds a
//! bounded set. Nothing is forgotten while the store is open: these are
//! counters, and a Prometheus counter must not go back.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use rustc_hash::FxHashMap as HashMap;

use crate::event::Event;

/// The bucket bounds, ms (log-spaced, 1 ms to 1 h; above is `+Inf`).
pub(crate) const BUCKETS_MS: [u64; 20] = [
    1, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000,
    600_000, 900_000, 1_800_000, 3_600_000,
];

/// At most this many kinds get histograms of their own.
pub(crate) const MAX_TIMED_KINDS: usize = 1_000;

/// The `kind` label of the kinds past [`MAX_TIMED_KINDS`].
pub(crate) const OTHER_KINDS: &str = "(other)";

/// How a lease ended: the `outcome` label of the run-time histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Completed,
    Failed,
    Dead,
    Released,
    Snoozed,
    Cancelled,
    /// The lease's deadline passed (the reaper moved it back to pending).
    Expired,
}

impl Outcome {
    pub const ALL: [Outcome; 7] = [
        Outcome::Completed,
        Outcome::Failed,
        Outcome::Dead,
        Outcome::Released,
        Outcome::Snoozed,
        Outcome::Cancelled,
        Outcome::Expired,
    ];

    /// The outcome of a move out of the leased state by `event` (`None`
    /// for events that keep the job leased).
    pub fn of(event: Event) -> Option<Outcome> {
        Some(match event {
            Event::Completed => Outcome::Completed,
            Event::Failed => Outcome::Failed,
            Event::Dead => Outcome::Dead,
            Event::Released => Outcome::Released,
            Event::Snoozed => Outcome::Snoozed,
            Event::Cancelled => Outcome::Cancelled,
            Event::LeaseExpired => Outcome::Expired,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Dead => "dead",
            Outcome::Released => "released",
            Outcome::Snoozed => "snoozed",
            Outcome::Cancelled => "cancelled",
            Outcome::Expired => "expired",
        }
    }
}

/// One observation a transaction makes, applied after its commit.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Timing {
    /// Leased after waiting this many ms since it was ready.
    Wait(u64),
    /// A lease granted at this instant ended this way (the run time is
    /// the commit's clock minus it).
    Run(u64, Outcome),
}

/// Counts per bucket (not cumulative: the text adds them up) and the sum.
#[derive(Debug, Default)]
struct Histogram {
    counts: [AtomicU64; BUCKETS_MS.len() + 1],
    sum_ms: AtomicU64,
}

impl Histogram {
    fn observe(&self, ms: u64) {
        let i = BUCKETS_MS.partition_point(|&b| b < ms);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ms.fetch_add(ms, Ordering::Relaxed);
    }

    /// `_bucket`, `_sum` and `_count` lines; `labels` ends with a comma or
    /// is empty. Skipped while nothing was observed.
    fn render(&self, o: &mut String, name: &str, labels: &str) {
        let counts: [u64; BUCKETS_MS.len() + 1] =
            std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed));
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return;
        }
        let mut cumulative = 0;
        for (i, n) in counts.iter().enumerate() {
            cumulative += n;
            match BUCKETS_MS.get(i) {
                Some(b) => {
                    let le = *b as f64 / 1000.0;
                    let _ = writeln!(o, "{name}_bucket{{{labels}le=\"{le}\"}} {cumulative}");
                }
                None => {
                    let _ = writeln!(o, "{name}_bucket{{{labels}le=\"+Inf\"}} {cumulative}");
                }
            }
        }
        let sum = self.sum_ms.load(Ordering::Relaxed) as f64 / 1000.0;
        let labels = labels.trim_end_matches(',');
        let _ = writeln!(o, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(o, "{name}_count{{{labels}}} {total}");
    }
}

/// The histograms of one kind.
#[derive(Debug, Default)]
pub(crate) struct KindTimings {
    wait: Histogram,
    run: [Histogram; Outcome::ALL.len()],
}

/// Every kind's histograms.
#[derive(Debug, Default)]
pub(crate) struct Timings {
    kinds: RwLock<HashMap<String, Box<KindTimings>>>,
    other: KindTimings,
}

impl Timings {
    /// Record `t` for `kind`; `now` is the commit's clock (for run times).
    pub fn observe(&self, kind: &str, t: Timing, now: u64) {
        {
            let r = self.kinds.read().unwrap_or_else(|p| p.into_inner());
            if let Some(k) = r.get(kind) {
                k.apply(t, now);
                return;
            }
        }
        let mut w = self.kinds.write().unwrap_or_else(|p| p.into_inner());
        if w.len() < MAX_TIMED_KINDS || w.contains_key(kind) {
            w.entry(kind.to_string()).or_default().apply(t, now);
        } else {
            drop(w);
            self.other.apply(t, now);
        }
    }

    /// `telha_jobs_wait_seconds` and `telha_jobs_run_seconds`, by kind (and
    /// outcome), in kind order.
    pub fn render(&self, o: &mut String) {
        let r = self.kinds.read().unwrap_or_else(|p| p.into_inner());
        let mut kinds: Vec<(&str, &KindTimings)> =
            r.iter().map(|(k, t)| (k.as_str(), &**t)).collect();
        kinds.sort_unstable_by_key(|(k, _)| *k);
        kinds.push((OTHER_KINDS, &self.other));
        header(
            o,
            "telha_jobs_wait_seconds",
            "histogram",
            "Time from a job being ready (its run-at or retry time) to its lease, by kind, since the store was opened.",
        );
        for (kind, t) in &kinds {
            let labels = format!("kind=\"{kind}\",");
            t.wait.render(o, "telha_jobs_wait_seconds", &labels);
        }
        header(
            o,
            "telha_jobs_run_seconds",
            "histogram",
            "Time from a lease to the move that ended it, by kind and outcome, since the store was opened.",
        );
        for (kind, t) in &kinds {
            for (h, out) in t.run.iter().zip(Outcome::ALL) {
                let labels = format!("kind=\"{kind}\",outcome=\"{}\",", out.name());
                h.render(o, "telha_jobs_run_seconds", &labels);
            }
        }
    }
}

impl KindTimings {
    fn apply(&self, t: Timing, now: u64) {
        match t {
            Timing::Wait(ms) => self.wait.observe(ms),
            Timing::Run(at, out) => self.run[out as usize].observe(now.saturating_sub(at)),
        }
    }
}

fn header(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_on_a_bound_counts_in_that_bucket() {
        let h = Histogram::default();
        for ms in [0, 1, 2, 5, 3_600_000, 3_600_001] {
            h.observe(ms);
        }
        let n = |i: usize| h.counts[i].load(Ordering::Relaxed);
        assert_eq!((n(0), n(1), n(BUCKETS_MS.len() - 1)), (2, 2, 1));
        assert_eq!(n(BUCKETS_MS.len()), 1, "+Inf");
    }

    #[test]
    fn kinds_past_the_cap_count_together() {
        let t = Timings::default();
        for i in 0..MAX_TIMED_KINDS + 5 {
            t.observe(&format!("k{i}"), Timing::Wait(3), 0);
        }
        t.observe("k0", Timing::Wait(3), 0);
        assert_eq!(t.kinds.read().unwrap().len(), MAX_TIMED_KINDS);
        let mut o = String::new();
        t.render(&mut o);
        assert!(o.contains("telha_jobs_wait_seconds_count{kind=\"(other)\"} 5\n"));
        assert!(o.contains("telha_jobs_wait_seconds_count{kind=\"k0\"} 2\n"));
    }
}
