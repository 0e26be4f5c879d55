//! [`JobStore`]: the queue's operations as a trait, so a front end can hold
//! either an embedded [`Queue`] or a client of a remote one (the
//! `telha-jobs-client` crate's `RemoteQueue`) behind one type.
//!
//! Every method has the meaning, the answers and the error kinds of the
//! [`Queue`] method of the same name; an implementation that talks to a
//! server maps the server's answers back onto the same [`crate::ErrorKind`]s
//! (a lost connection is `Storage`), so code written against `JobStore`
//! behaves the same in process and over the network.

use crate::control::{CancelFilter, CancelOutcome, CancelReport, Failure, PauseTarget, Paused};
use crate::flow::{Limit, LimitStatus, LimitTarget};
use crate::job::{
    Completion, EnqueueOptions, Enqueued, Job, JobId, JobInfo, LeaseOptions, LeaseToken, ListPage,
    ListQuery, NewJob, PurgeReport, ReapReport, State, Stats,
};
use crate::schedule::{RunReport, Schedule, ScheduleInfo};
use crate::scopes::StatsQuery;
use crate::watch::{JobWatch, SubscribeOptions, Subscription};
use crate::{Queue, Result};
use std::time::Duration;

/// The most rows [`JobStore::list_full`] reads for one page.
pub const LIST_FILL_ROWS: usize = 10 * crate::limits::LIST_SCAN_BUDGET;

/// The queue's operations; see [`Queue`] for each one's contract.
pub trait JobStore: Send + Sync + std::fmt::Debug {
    /// See [`Queue::enqueue`].
    fn enqueue(&self, kind: &str, payload: &[u8], options: EnqueueOptions) -> Result<Enqueued>;
    /// See [`Queue::enqueue_many`].
    fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>>;
    /// See [`Queue::lease_next`].
    fn lease_next(&self, worker_id: &str, options: &LeaseOptions) -> Result<Option<Job>> {
        Ok(self.lease_many(worker_id, 1, options)?.pop())
    }
    /// See [`Queue::lease_many`].
    fn lease_many(&self, worker_id: &str, max: usize, options: &LeaseOptions) -> Result<Vec<Job>>;
    /// Leases pushed to `worker_id` as they become ready, never more than
    /// `capacity` unsettled at once (filtered by `options.scopes` /
    /// `options.kinds`): what a [`crate::Worker`] leases ahead through, so
    /// no handler waits a round trip for its next job. `None` when the
    /// store has no such feed: an embedded queue, whose lease calls cost no
    /// round trip. A remote store's is its `PollJobs` stream.
    fn lease_feed(
        &self,
        worker_id: &str,
        options: &LeaseOptions,
        capacity: u32,
    ) -> Result<Option<Box<dyn crate::worker::LeaseFeed>>> {
        let _ = (worker_id, options, capacity);
        Ok(None)
    }
    /// [`JobStore::lease_feed`] whose window follows the handlers: a
    /// remote store's server keeps at most `clamp(settle rate * 100 ms,
    /// floor, capacity)` leases unsettled, so slow handlers hold about
    /// `floor` (the worker's concurrency) and fast ones up to `capacity`.
    /// The default ignores `floor`.
    fn lease_feed_floor(
        &self,
        worker_id: &str,
        options: &LeaseOptions,
        capacity: u32,
        floor: u32,
    ) -> Result<Option<Box<dyn crate::worker::LeaseFeed>>> {
        let _ = floor;
        self.lease_feed(worker_id, options, capacity)
    }
    /// See [`Queue::extend`].
    fn extend(&self, tokens: &[LeaseToken], worker_id: &str) -> Result<Vec<Result<u64>>>;
    /// See [`Queue::heartbeat`].
    fn heartbeat(
        &self,
        tokens: &[LeaseToken],
        progress: &[Option<Vec<u8>>],
        worker_id: &str,
    ) -> Result<Vec<Result<u64>>>;
    /// See [`Queue::watch`]. A remote store's watch is fired by its
    /// connection, with the job as the server saw it ([`JobWatch::take_job`]).
    fn watch(&self, id: &JobId) -> Result<JobWatch>;
    /// The job a watch is about, as it is now: what the watch's feed handed
    /// over, else read with `get` (`NotFound` when it is gone).
    fn watched_job(&self, w: &JobWatch) -> Result<JobInfo> {
        match w.take_job() {
            Some(r) => r,
            None => self
                .get(&w.id())?
                .ok_or_else(|| crate::Error::NotFound(format!("no job {}", w.id()))),
        }
    }
    /// See [`Queue::wait`].
    fn wait(&self, id: &JobId, timeout: Duration) -> Result<JobInfo> {
        let w = self.watch(id)?;
        let deadline = std::time::Instant::now().checked_add(timeout);
        loop {
            if self.is_closed() {
                return Err(crate::Error::Closed);
            }
            let left = deadline.map_or(Duration::from_millis(100), |d| {
                d.saturating_duration_since(std::time::Instant::now())
            });
            let slice = left.min(Duration::from_millis(100));
            if w.wait(Some(slice)) || left <= slice || w.is_cancelled() {
                break;
            }
        }
        self.watched_job(&w)
    }
    /// See [`Queue::subscribe`].
    fn subscribe(&self, options: SubscribeOptions) -> Result<Subscription>;
    /// See [`Queue::complete`].
    fn complete(&self, token: &LeaseToken, result: Option<&[u8]>) -> Result<()> {
        self.complete_with(Completion::new(*token, result.map(<[u8]>::to_vec)))
    }
    /// See [`Queue::complete_with`].
    fn complete_with(&self, completion: Completion) -> Result<()>;
    /// See [`Queue::complete_many`].
    fn complete_many(&self, items: Vec<Completion>) -> Result<Vec<Result<()>>>;
    /// See [`Queue::fail`].
    fn fail(&self, token: &LeaseToken, reason: &str, retryable: bool) -> Result<()> {
        let mut f = Failure::new(*token, reason);
        f.retryable = retryable;
        self.fail_with(f)
    }
    /// See [`Queue::fail_with`].
    fn fail_with(&self, failure: Failure) -> Result<()>;
    /// See [`Queue::fail_many`].
    fn fail_many(&self, items: Vec<Failure>) -> Result<Vec<Result<()>>>;
    /// See [`Queue::release`].
    fn release(&self, token: &LeaseToken) -> Result<()>;
    /// See [`Queue::release_many`].
    fn release_many(&self, tokens: &[LeaseToken]) -> Result<Vec<Result<()>>>;
    /// See [`Queue::snooze`].
    fn snooze(&self, token: &LeaseToken, delay: Duration) -> Result<()>;
    /// See [`Queue::cancel`].
    fn cancel(&self, id: &JobId, reason: &str) -> Result<CancelOutcome>;
    /// See [`Queue::cancel_many`].
    fn cancel_many(&self, filter: &CancelFilter) -> Result<CancelReport>;
    /// See [`Queue::delete`].
    fn delete(&self, id: &JobId) -> Result<()>;
    /// See [`Queue::promote`].
    fn promote(&self, id: &JobId) -> Result<()>;
    /// See [`Queue::reschedule`].
    fn reschedule(&self, id: &JobId, run_at: u64) -> Result<()>;
    /// See [`Queue::set_priority`].
    fn set_priority(&self, id: &JobId, priority: u8) -> Result<()>;
    /// See [`Queue::pause`].
    fn pause(&self, target: &PauseTarget) -> Result<bool>;
    /// See [`Queue::resume`].
    fn resume(&self, target: &PauseTarget) -> Result<bool>;
    /// See [`Queue::paused`].
    fn paused(&self) -> Result<Paused>;
    /// See [`Queue::set_limit`].
    fn set_limit(&self, target: &LimitTarget, limit: Limit) -> Result<()>;
    /// See [`Queue::remove_limit`].
    fn remove_limit(&self, target: &LimitTarget) -> Result<bool>;
    /// See [`Queue::limits`].
    fn limits(&self) -> Result<Vec<LimitStatus>>;
    /// See [`Queue::retry`].
    fn retry(&self, id: &JobId) -> Result<()>;
    /// See [`Queue::schedule_put`].
    fn schedule_put(&self, schedule: &Schedule) -> Result<ScheduleInfo>;
    /// See [`Queue::schedule_get`].
    fn schedule_get(&self, name: &str) -> Result<ScheduleInfo>;
    /// See [`Queue::schedule_list`].
    fn schedule_list(&self) -> Result<Vec<ScheduleInfo>>;
    /// See [`Queue::schedule_delete`].
    fn schedule_delete(&self, name: &str) -> Result<()>;
    /// See [`Queue::schedule_pause`].
    fn schedule_pause(&self, name: &str) -> Result<ScheduleInfo>;
    /// See [`Queue::schedule_resume`].
    fn schedule_resume(&self, name: &str) -> Result<ScheduleInfo>;
    /// See [`Queue::run_schedules`].
    fn run_schedules(&self) -> Result<RunReport>;
    /// See [`Queue::get`].
    fn get(&self, id: &JobId) -> Result<Option<JobInfo>>;
    /// See [`Queue::list`].
    fn list(&self, query: &ListQuery) -> Result<ListPage>;
    /// A full page: [`JobStore::list`] again and again until the page holds
    /// `query.limit` jobs or the range ends, so a page shorter than `limit`
    /// with no `next` is the end. Bounded all the same: it reads at most
    /// `LIST_FILL_ROWS` rows (ten calls' worth) and then answers what it
    /// has with a `next`. `corrupt` collects every call's skipped rows.
    /// The one paging rule every front end uses (Python's `list`, Node's
    /// `list`, the CLI).
    fn list_full(&self, query: &ListQuery) -> Result<ListPage> {
        let mut q = query.clone();
        let mut out = ListPage {
            jobs: Vec::new(),
            next: None,
            corrupt: Vec::new(),
        };
        for _ in 0..LIST_FILL_ROWS / crate::limits::LIST_SCAN_BUDGET {
            q.limit = query.limit - out.jobs.len();
            let page = self.list(&q)?;
            out.jobs.extend(page.jobs);
            out.corrupt.extend(page.corrupt);
            out.next = page.next;
            match &out.next {
                Some(n) if out.jobs.len() < query.limit => q.after = Some(n.clone()),
                _ => break,
            }
        }
        Ok(out)
    }
    /// See [`Queue::count_tag`].
    fn count_tag(
        &self,
        tag: &str,
        scope: Option<crate::ids::Scope>,
    ) -> Result<crate::state::StateCounts>;
    /// See [`Queue::find`].
    fn find(&self, query: &crate::FindQuery) -> Result<crate::FindResult>;
    /// See [`Queue::enqueue_group`] (a store that does not serve it yet
    /// answers `InvalidArgument`).
    fn enqueue_group(
        &self,
        _children: Vec<NewJob>,
        _parent: NewJob,
    ) -> Result<(Vec<Enqueued>, Enqueued)> {
        Err(crate::Error::invalid(
            "enqueue_group is not served by this store",
        ))
    }
    /// See [`Queue::results_of_children`] (a store that does not serve it
    /// yet answers `InvalidArgument`).
    fn results_of_children(
        &self,
        _parent: &crate::ids::JobId,
        _cursor: Option<&str>,
        _limit: usize,
    ) -> Result<crate::fanin::ChildPage> {
        Err(crate::Error::invalid(
            "results_of_children is not served by this store",
        ))
    }
    /// See [`Queue::backup`]; a remote store writes it on the server's
    /// filesystem. The default answers `InvalidArgument` (a store with no
    /// files of its own to copy).
    fn backup(&self, dir: &std::path::Path) -> Result<crate::BackupInfo> {
        Err(crate::Error::InvalidArgument(format!(
            "{self:?} cannot write a backup (to {})",
            dir.display()
        )))
    }
    /// See [`Queue::reap`].
    fn reap(&self) -> Result<ReapReport>;
    /// See [`Queue::purge`].
    fn purge(&self, state: State, cutoff_ms: u64) -> Result<PurgeReport>;
    /// See [`Queue::stats`]: the default page of scopes.
    fn stats(&self) -> Result<Stats> {
        self.stats_with(&StatsQuery::default())
    }
    /// See [`Queue::stats_with`].
    fn stats_with(&self, query: &StatsQuery) -> Result<Stats>;
    /// See [`Queue::metrics`].
    fn metrics(&self) -> Result<String>;
    /// See [`Queue::close`]: later calls answer `Closed`, waits in progress
    /// end. For a remote store this closes the connection, not the store.
    fn close(&self);
    /// See [`Queue::is_closed`].
    fn is_closed(&self) -> bool;
    /// Where the jobs live, for messages and `repr`s: the store directory of
    /// an embedded queue, the server URL of a remote one. `Closed` after
    /// `close`.
    fn location(&self) -> Result<String>;
    /// The embedded queue behind this store, when it is one (for what only a
    /// local store has: `path`, `config`, `check`, serving it).
    fn as_local(&self) -> Option<&Queue> {
        None
    }
}

impl JobStore for Queue {
    fn enqueue(&self, kind: &str, payload: &[u8], options: EnqueueOptions) -> Result<Enqueued> {
        Queue::enqueue(self, kind, payload, options)
    }
    fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        Queue::enqueue_many(self, jobs)
    }
    fn enqueue_group(
        &self,
        children: Vec<NewJob>,
        parent: NewJob,
    ) -> Result<(Vec<Enqueued>, Enqueued)> {
        Queue::enqueue_group(self, children, parent)
    }
    fn results_of_children(
        &self,
        parent: &crate::ids::JobId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<crate::fanin::ChildPage> {
        Queue::results_of_children(self, parent, cursor, limit)
    }
    fn lease_next(&self, worker_id: &str, options: &LeaseOptions) -> Result<Option<Job>> {
        Queue::lease_next(self, worker_id, options)
    }
    fn lease_many(&self, worker_id: &str, max: usize, options: &LeaseOptions) -> Result<Vec<Job>> {
        Queue::lease_many(self, worker_id, max, options)
    }
    fn extend(&self, tokens: &[LeaseToken], worker_id: &str) -> Result<Vec<Result<u64>>> {
        Queue::extend(self, tokens, worker_id)
    }
    fn heartbeat(
        &self,
        tokens: &[LeaseToken],
        progress: &[Option<Vec<u8>>],
        worker_id: &str,
    ) -> Result<Vec<Result<u64>>> {
        Queue::heartbeat(self, tokens, progress, worker_id)
    }
    fn watch(&self, id: &JobId) -> Result<JobWatch> {
        Queue::watch(self, id)
    }
    fn wait(&self, id: &JobId, timeout: Duration) -> Result<JobInfo> {
        Queue::wait(self, id, timeout)
    }
    fn subscribe(&self, options: SubscribeOptions) -> Result<Subscription> {
        Queue::subscribe(self, options)
    }
    fn complete(&self, token: &LeaseToken, result: Option<&[u8]>) -> Result<()> {
        Queue::complete(self, token, result)
    }
    fn complete_with(&self, completion: Completion) -> Result<()> {
        Queue::complete_with(self, completion)
    }
    fn complete_many(&self, items: Vec<Completion>) -> Result<Vec<Result<()>>> {
        Queue::complete_many(self, items)
    }
    fn fail(&self, token: &LeaseToken, reason: &str, retryable: bool) -> Result<()> {
        Queue::fail(self, token, reason, retryable)
    }
    fn fail_with(&self, failure: Failure) -> Result<()> {
        Queue::fail_with(self, failure)
    }
    fn fail_many(&self, items: Vec<Failure>) -> Result<Vec<Result<()>>> {
        Queue::fail_many(self, items)
    }
    fn release(&self, token: &LeaseToken) -> Result<()> {
        Queue::release(self, token)
    }
    fn release_many(&self, tokens: &[LeaseToken]) -> Result<Vec<Result<()>>> {
        Queue::release_many(self, tokens)
    }
    fn snooze(&self, token: &LeaseToken, delay: Duration) -> Result<()> {
        Queue::snooze(self, token, delay)
    }
    fn cancel(&self, id: &JobId, reason: &str) -> Result<CancelOutcome> {
        Queue::cancel(self, id, reason)
    }
    fn cancel_many(&self, filter: &CancelFilter) -> Result<CancelReport> {
        Queue::cancel_many(self, filter)
    }
    fn delete(&self, id: &JobId) -> Result<()> {
        Queue::delete(self, id)
    }
    fn promote(&self, id: &JobId) -> Result<()> {
        Queue::promote(self, id)
    }
    fn reschedule(&self, id: &JobId, run_at: u64) -> Result<()> {
        Queue::reschedule(self, id, run_at)
    }
    fn set_priority(&self, id: &JobId, priority: u8) -> Result<()> {
        Queue::set_priority(self, id, priority)
    }
    fn pause(&self, target: &PauseTarget) -> Result<bool> {
        Queue::pause(self, target)
    }
    fn resume(&self, target: &PauseTarget) -> Result<bool> {
        Queue::resume(self, target)
    }
    fn paused(&self) -> Result<Paused> {
        Queue::paused(self)
    }
    fn set_limit(&self, target: &LimitTarget, limit: Limit) -> Result<()> {
        Queue::set_limit(self, target, limit)
    }
    fn remove_limit(&self, target: &LimitTarget) -> Result<bool> {
        Queue::remove_limit(self, target)
    }
    fn limits(&self) -> Result<Vec<LimitStatus>> {
        Queue::limits(self)
    }
    fn retry(&self, id: &JobId) -> Result<()> {
        Queue::retry(self, id)
    }
    fn schedule_put(&self, schedule: &Schedule) -> Result<ScheduleInfo> {
        Queue::schedule_put(self, schedule)
    }
    fn schedule_get(&self, name: &str) -> Result<ScheduleInfo> {
        Queue::schedule_get(self, name)
    }
    fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        Queue::schedule_list(self)
    }
    fn schedule_delete(&self, name: &str) -> Result<()> {
        Queue::schedule_delete(self, name)
    }
    fn schedule_pause(&self, name: &str) -> Result<ScheduleInfo> {
        Queue::schedule_pause(self, name)
    }
    fn schedule_resume(&self, name: &str) -> Result<ScheduleInfo> {
        Queue::schedule_resume(self, name)
    }
    fn run_schedules(&self) -> Result<RunReport> {
        Queue::run_schedules(self)
    }
    fn get(&self, id: &JobId) -> Result<Option<JobInfo>> {
        Queue::get(self, id)
    }
    fn list(&self, query: &ListQuery) -> Result<ListPage> {
        Queue::list(self, query)
    }
    fn count_tag(
        &self,
        tag: &str,
        scope: Option<crate::ids::Scope>,
    ) -> Result<crate::state::StateCounts> {
        Queue::count_tag(self, tag, scope)
    }
    fn find(&self, query: &crate::FindQuery) -> Result<crate::FindResult> {
        Queue::find(self, query)
    }
    fn backup(&self, dir: &std::path::Path) -> Result<crate::BackupInfo> {
        Queue::backup(self, dir)
    }
    fn reap(&self) -> Result<ReapReport> {
        Queue::reap(self)
    }
    fn purge(&self, state: State, cutoff_ms: u64) -> Result<PurgeReport> {
        Queue::purge(self, state, cutoff_ms)
    }
    fn stats_with(&self, query: &StatsQuery) -> Result<Stats> {
        Queue::stats_with(self, query)
    }
    fn metrics(&self) -> Result<String> {
        Queue::metrics(self)
    }
    fn close(&self) {
        Queue::close(self)
    }
    fn is_closed(&self) -> bool {
        Queue::is_closed(self)
    }
    fn location(&self) -> Result<String> {
        Ok(Queue::path(self)?.display().to_string())
    }
    fn as_local(&self) -> Option<&Queue> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use std::sync::Arc;

    #[test]
    fn a_queue_works_through_the_trait_object() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn JobStore> = Arc::new(Queue::open(dir.path(), Config::default()).unwrap());
        let id = s
            .enqueue("embed", b"x", EnqueueOptions::default())
            .unwrap()
            .id;
        let job = s
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        assert_eq!(job.id, id);
        s.complete(&job.token(), Some(b"r")).unwrap();
        assert_eq!(s.get(&id).unwrap().unwrap().state, State::Completed);
        assert!(s.as_local().is_some());
        assert!(s
            .location()
            .unwrap()
            .contains(dir.path().file_name().unwrap().to_str().unwrap()));
        s.close();
        assert!(s.is_closed());
        assert_eq!(s.stats().unwrap_err().kind(), crate::ErrorKind::Closed);
    }
}
