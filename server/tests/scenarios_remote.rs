//! The conformance scenarios (`tests/scenarios/*.json`) through gRPC: each
//! case's store is an embedded `Queue` served in this process by
//! [`telha_jobs_server::serve`] on a loopback port, and the runner reaches it
//! only through [`RemoteQueue`] — the same runner, and the same expected
//! answers, as `core/tests/scenarios.rs` against the embedded queue.

#[path = "../../core/tests/scenario_runner/mod.rs"]
mod scenario_runner;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use telha_jobs::{
    CancelFilter, CancelOutcome, CancelReport, Completion, Config, EnqueueOptions, Enqueued,
    Failure, Job, JobId, JobInfo, JobStore, LeaseOptions, LeaseToken, ListPage, ListQuery, NewJob,
    PauseTarget, Paused, PurgeReport, Queue, ReapReport, Result, State, Stats,
};
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use telha_jobs_server::{serve, ServeOptions, ServerHandle};

/// A served store as the runner sees it: every call goes through `remote`;
/// closing it also stops the server and closes the queue behind it, so a
/// case's `reopen` can open the store again.
#[derive(Debug)]
struct Served {
    remote: RemoteQueue,
    server: Mutex<Option<ServerHandle>>,
    local: Queue,
}

fn open_store(path: &Path, config: &Config) -> Result<Arc<dyn JobStore>> {
    let local = Queue::open(path, config.clone())?;
    let server = serve(
        local.clone(),
        ServeOptions {
            listen: "127.0.0.1:0".into(),
            ..ServeOptions::default()
        },
    )?;
    let url = server.url();
    let remote = RemoteQueue::connect(&url, ConnectOptions::default())?;
    Ok(Arc::new(Served {
        remote,
        server: Mutex::new(Some(server)),
        local,
    }))
}

fn main() {
    scenario_runner::run_all("rust scenarios through the server", open_store);
}

impl JobStore for Served {
    fn enqueue(&self, kind: &str, payload: &[u8], options: EnqueueOptions) -> Result<Enqueued> {
        self.remote.enqueue(kind, payload, options)
    }
    fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        self.remote.enqueue_many(jobs)
    }
    fn lease_next(&self, worker_id: &str, options: &LeaseOptions) -> Result<Option<Job>> {
        self.remote.lease_next(worker_id, options)
    }
    fn lease_many(&self, worker_id: &str, max: usize, options: &LeaseOptions) -> Result<Vec<Job>> {
        self.remote.lease_many(worker_id, max, options)
    }
    fn extend(&self, tokens: &[LeaseToken], worker_id: &str) -> Result<Vec<Result<u64>>> {
        self.remote.extend(tokens, worker_id)
    }
    fn heartbeat(
        &self,
        tokens: &[LeaseToken],
        progress: &[Option<Vec<u8>>],
        worker_id: &str,
    ) -> Result<Vec<Result<u64>>> {
        self.remote.heartbeat(tokens, progress, worker_id)
    }
    fn watch(&self, id: &JobId) -> Result<telha_jobs::JobWatch> {
        self.remote.watch(id)
    }
    fn wait(&self, id: &JobId, timeout: Duration) -> Result<JobInfo> {
        self.remote.wait(id, timeout)
    }
    fn subscribe(&self, options: telha_jobs::SubscribeOptions) -> Result<telha_jobs::Subscription> {
        self.remote.subscribe(options)
    }
    fn complete(&self, token: &LeaseToken, result: Option<&[u8]>) -> Result<()> {
        self.remote.complete(token, result)
    }
    fn complete_with(&self, c: Completion) -> Result<()> {
        self.remote.complete_with(c)
    }
    fn complete_many(&self, items: Vec<Completion>) -> Result<Vec<Result<()>>> {
        self.remote.complete_many(items)
    }
    fn fail(&self, token: &LeaseToken, reason: &str, retryable: bool) -> Result<()> {
        self.remote.fail(token, reason, retryable)
    }
    fn fail_with(&self, f: Failure) -> Result<()> {
        self.remote.fail_with(f)
    }
    fn fail_many(&self, items: Vec<Failure>) -> Result<Vec<Result<()>>> {
        self.remote.fail_many(items)
    }
    fn release(&self, token: &LeaseToken) -> Result<()> {
        self.remote.release(token)
    }
    fn release_many(&self, tokens: &[LeaseToken]) -> Result<Vec<Result<()>>> {
        self.remote.release_many(tokens)
    }
    fn snooze(&self, token: &LeaseToken, delay: Duration) -> Result<()> {
        self.remote.snooze(token, delay)
    }
    fn cancel(&self, id: &JobId, reason: &str) -> Result<CancelOutcome> {
        self.remote.cancel(id, reason)
    }
    fn cancel_many(&self, filter: &CancelFilter) -> Result<CancelReport> {
        self.remote.cancel_many(filter)
    }
    fn delete(&self, id: &JobId) -> Result<()> {
        self.remote.delete(id)
    }
    fn promote(&self, id: &JobId) -> Result<()> {
        self.remote.promote(id)
    }
    fn reschedule(&self, id: &JobId, run_at: u64) -> Result<()> {
        self.remote.reschedule(id, run_at)
    }
    fn set_priority(&self, id: &JobId, priority: u8) -> Result<()> {
        self.remote.set_priority(id, priority)
    }
    fn pause(&self, target: &PauseTarget) -> Result<bool> {
        self.remote.pause(target)
    }
    fn resume(&self, target: &PauseTarget) -> Result<bool> {
        self.remote.resume(target)
    }
    fn paused(&self) -> Result<Paused> {
        self.remote.paused()
    }
    fn set_limit(&self, t: &telha_jobs::LimitTarget, l: telha_jobs::Limit) -> Result<()> {
        self.remote.set_limit(t, l)
    }
    fn remove_limit(&self, t: &telha_jobs::LimitTarget) -> Result<bool> {
        self.remote.remove_limit(t)
    }
    fn limits(&self) -> Result<Vec<telha_jobs::LimitStatus>> {
        self.remote.limits()
    }
    fn retry(&self, id: &JobId) -> Result<()> {
        self.remote.retry(id)
    }
    fn schedule_put(&self, s: &telha_jobs::Schedule) -> Result<telha_jobs::ScheduleInfo> {
        self.remote.schedule_put(s)
    }
    fn schedule_get(&self, name: &str) -> Result<telha_jobs::ScheduleInfo> {
        self.remote.schedule_get(name)
    }
    fn schedule_list(&self) -> Result<Vec<telha_jobs::ScheduleInfo>> {
        self.remote.schedule_list()
    }
    fn schedule_delete(&self, name: &str) -> Result<()> {
        self.remote.schedule_delete(name)
    }
    fn schedule_pause(&self, name: &str) -> Result<telha_jobs::ScheduleInfo> {
        self.remote.schedule_pause(name)
    }
    fn schedule_resume(&self, name: &str) -> Result<telha_jobs::ScheduleInfo> {
        self.remote.schedule_resume(name)
    }
    fn run_schedules(&self) -> Result<telha_jobs::RunReport> {
        self.remote.run_schedules()
    }
    fn get(&self, id: &JobId) -> Result<Option<JobInfo>> {
        self.remote.get(id)
    }
    fn list(&self, query: &ListQuery) -> Result<ListPage> {
        self.remote.list(query)
    }
    fn count_tag(
        &self,
        tag: &str,
        scope: Option<telha_jobs::Scope>,
    ) -> Result<telha_jobs::StateCounts> {
        self.remote.count_tag(tag, scope)
    }
    fn find(&self, query: &telha_jobs::FindQuery) -> Result<telha_jobs::FindResult> {
        self.remote.find(query)
    }
    fn backup(&self, dir: &Path) -> Result<telha_jobs::BackupInfo> {
        self.remote.backup(dir)
    }
    fn enqueue_group(
        &self,
        children: Vec<NewJob>,
        parent: NewJob,
    ) -> Result<(Vec<Enqueued>, Enqueued)> {
        self.remote.enqueue_group(children, parent)
    }
    fn results_of_children(
        &self,
        parent: &telha_jobs::JobId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<telha_jobs::ChildPage> {
        self.remote.results_of_children(parent, cursor, limit)
    }
    fn reap(&self) -> Result<ReapReport> {
        self.remote.reap()
    }
    fn purge(&self, state: State, cutoff_ms: u64) -> Result<PurgeReport> {
        self.remote.purge(state, cutoff_ms)
    }
    fn stats_with(&self, query: &telha_jobs::StatsQuery) -> Result<Stats> {
        self.remote.stats_with(query)
    }
    fn metrics(&self) -> Result<String> {
        self.remote.metrics()
    }
    fn close(&self) {
        self.remote.close();
        let server = self.server.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(server) = server {
            server.shutdown(Duration::from_secs(1));
        }
        self.local.close();
    }
    fn is_closed(&self) -> bool {
        self.remote.is_closed()
    }
    fn location(&self) -> Result<String> {
        self.remote.location()
    }
}
