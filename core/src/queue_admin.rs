//! `Queue`'s read-only admin surface: stats, metrics, transitions, check
//! (a second `impl Queue`, split from `queue.rs` by concept).

use crate::engine::CheckReport;
use crate::error::Result;
use crate::job::Stats;
use crate::queue::Queue;
use crate::scopes::StatsQuery;

impl Queue {
    /// Restart the engine's jitter draws at `seed` (see
    /// `Config::backoff_jitter`), so that the same sequence of retries gets
    /// the same delays: for tests with an injected clock. Shared by every
    /// handle of the store. `Closed` after `close`.
    pub fn seed_jitter(&self, seed: u64) -> Result<()> {
        self.engine()?.jitter.seed(seed);
        Ok(())
    }

    /// Exact counts per kind and state (no scan), and what is paused, with
    /// the default page of per-scope counts ([`StatsQuery::default`]: the
    /// 100 scopes with the most pending jobs; `scopes_next` says more
    /// exist). `Closed` after `close`.
    pub fn stats(&self) -> Result<Stats> {
        self.stats_with(&StatsQuery::default())
    }

    /// [`stats`](Self::stats) with the per-scope counts paged by `query`:
    /// the totals and per-kind counts are whole either way. The name order
    /// reads a range of an ordered map from the cursor; a count order reads
    /// an index ordered by count, first updated with the scopes that
    /// changed since the last count-ordered call (with a prefix: one pass
    /// over the prefix's range).
    ///
    /// Errors: `InvalidArgument` (a limit over
    /// [`MAX_SCOPE_LIMIT`](crate::limits::MAX_SCOPE_LIMIT), a cursor of
    /// another order, a prefix that is not the start of a scope id);
    /// `Closed`.
    pub fn stats_with(&self, query: &StatsQuery) -> Result<Stats> {
        let e = self.engine()?;
        let mut s = e.counts.stats(query)?;
        s.paused = (*e.paused()).clone();
        if query.oldest_ready {
            let now = e.now();
            s.oldest_ready_ms = e
                .oldest_ready(now)?
                .into_iter()
                .map(|(k, t)| (k, now.saturating_sub(t)))
                .collect();
        }
        Ok(s)
    }

    /// How many jobs carry `tag`, per state, in `scope` (or every scope):
    /// read from the tag index, O(jobs carrying the tag), whatever else
    /// the store holds (no counter rows: see docs/ARCHITECTURE.md, "Tag
    /// index"). Errors: `InvalidArgument` for a malformed tag; `Storage`;
    /// `Closed`.
    pub fn count_tag(
        &self,
        tag: &str,
        scope: Option<crate::ids::Scope>,
    ) -> Result<crate::state::StateCounts> {
        self.engine()?.count_tag(tag, scope)
    }

    /// Look `query.text` up exactly as a job id, an idempotency key and a
    /// tag, each from its own index: the job with that id (in the query's
    /// scope, when given), the job holding that idempotency key in the
    /// query's scope (the system scope when none is given: keys are per
    /// scope), and the first page (`query.limit`) of the jobs carrying the
    /// tag with a cursor for `list` by tag. Point reads and one page:
    /// O(page) whatever the store holds, never a scan; no full-text
    /// matching. [`FindResult::matched`](crate::FindResult::matched) says
    /// which kinds matched (a text can be a tag and a key at once).
    ///
    /// Errors: `InvalidArgument` for an empty text, one over
    /// [`MAX_FIND_TEXT_LEN`](crate::find::MAX_FIND_TEXT_LEN) bytes or with
    /// a control character, or a limit of 0 or over
    /// [`MAX_LIST_LIMIT`](crate::limits::MAX_LIST_LIMIT); `Corruption` when
    /// the id index names a row that is missing; `Storage`; `Closed`.
    pub fn find(&self, query: &crate::FindQuery) -> Result<crate::FindResult> {
        self.engine()?.find(query)
    }

    /// Prometheus text exposition: job counts, leases in flight, transitions
    /// and corrupt records since open, reaper passes, the backlog and the
    /// oldest ready job's age per kind, the wait and run-time histograms
    /// since open, what is paused, live
    /// subscriptions and job watches, the scopes pollers visit.
    /// `Closed` after `close`.
    pub fn metrics(&self) -> Result<String> {
        let e = self.engine()?;
        let stats = e.counts.kind_stats();
        let mut out = e.metrics.render(&stats, e.leases.len());
        let now = e.now();
        crate::metrics::render_ready(&mut out, &stats, &e.oldest_ready(now)?, now);
        e.metrics.timings.render(&mut out);
        crate::metrics::render_paused(&mut out, &e.paused());
        crate::metrics::render_limits(&mut out, &e.limits());
        let (subs, watches) = e.hub.counts();
        crate::metrics::render_listeners(&mut out, subs, watches);
        let (active, parked, held) = e.bands.sizes();
        let counters = e.counts.scopes_held();
        crate::metrics::render_scopes(&mut out, active, parked, (held, counters));
        e.render_schedules(&mut out);
        crate::rocksdb_memory::render(&mut out, e.db());
        Ok(out)
    }

    /// The transition counters since open (the numbers behind
    /// `telha_jobs_transitions_total`), one per [`Event`](crate::Event) in
    /// `Event::ALL` order: what a throughput graph samples. `Closed` after
    /// `close`.
    pub fn transitions(&self) -> Result<Vec<(crate::Event, u64)>> {
        let e = self.engine()?;
        Ok(crate::Event::ALL
            .into_iter()
            .map(|ev| (ev, e.metrics.get(ev)))
            .collect())
    }

    /// Write a consistent copy of the live store to `dir` (a RocksDB
    /// checkpoint plus the store's format marker) that opens with
    /// [`Queue::open`] as an ordinary store; calls on other threads go on
    /// meanwhile. SST files are hard-linked where the filesystem allows
    /// (then the time and the new space barely grow with the store), copied
    /// otherwise. The copy is written beside `dir` and renamed into place,
    /// so a crash never leaves a half backup at `dir`.
    ///
    /// The backup holds every operation acknowledged before the call (and
    /// perhaps some that ran during it). What lives only in memory is not
    /// in it, as after a crash: leased jobs are leased in the backup, their
    /// leases rebuilt from the rows when it is opened and expiring by the
    /// usual rules (their workers settle against the store they leased
    /// from, not the backup); the transition counters and histograms start
    /// from zero.
    ///
    /// Errors: `InvalidArgument` naming `dir` when it exists and is not an
    /// empty directory, its parent does not exist, or it lies inside the
    /// store, and for a read-only handle; `Storage`; `Closed`;
    /// `Unavailable` once fenced.
    pub fn backup(&self, dir: impl AsRef<std::path::Path>) -> Result<crate::BackupInfo> {
        let e = self.writable()?;
        crate::store::checkpoint::create(e.db(), &e.path, dir.as_ref())
    }

    /// Full consistency check (a scan of every row and index): O(store size),
    /// for tests and operators. Disagreements are listed in the report, not
    /// returned as errors. Rows, indexes and on-disk counters are read from
    /// one snapshot, so those checks are exact while the store is in use;
    /// the comparisons with memory (in-memory leases and counts) are exact
    /// only when nothing writes during the scan. Errors: `Storage`; `Closed`.
    pub fn check(&self) -> Result<CheckReport> {
        self.engine()?.check()
    }
}
