//! [`JobStore`] over gRPC: each method one RPC (or a few, for paging),
//! answered with the core's error kinds.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use telha_jobs::{
    CancelFilter, CancelOutcome, CancelReport, Completion, EnqueueOptions, Enqueued, Error,
    Failure, Job, JobId, JobInfo, JobStore, JobWatch, LeaseOptions, LeaseToken, Limit, LimitStatus,
    LimitTarget, ListPage, ListQuery, NewJob, PauseTarget, Paused, PurgeReport, ReapReport, Result,
    RunReport, Schedule, ScheduleInfo, State, Stats, StatsQuery, SubscribeOptions, Subscription,
};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::status::from_item_error;
use telha_jobs_proto::v1 as pb;

use crate::deadline::long_poll;
use crate::retry::Safe;
use crate::{RemoteQueue, CANCEL_POLL};

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

/// An enqueue is repeated after a lost reply only with a key.
fn safety(keyed: bool) -> Safe {
    if keyed {
        Safe::Always
    } else {
        Safe::IfNotSent
    }
}

impl RemoteQueue {
    /// The current trace context (the core's `otel` feature; as
    /// `Queue::enqueue`) and, with a list of servers (and unless the caller
    /// opted out), a fresh UUIDv7 key for an enqueue that has none: its
    /// repeat is then safe.
    fn auto_key(&self, o: &mut EnqueueOptions) {
        telha_jobs::trace_context::inject_current(&mut o.metadata);
        if self.inner.auto_key && o.idempotency_key.is_none() {
            o.idempotency_key = Some(uuid::Uuid::now_v7().to_string());
        }
    }
}

fn submit(token: &LeaseToken, outcome: pb::submit_request::Outcome) -> pb::SubmitRequest {
    pb::SubmitRequest {
        token: Some(cv::token_to_pb(token)),
        outcome: Some(outcome),
    }
}

fn fail_to_pb(f: Failure) -> pb::submit_request::Outcome {
    pb::submit_request::Outcome::Fail(pb::Fail {
        reason: f.reason,
        retryable: f.retryable,
        retry_in_ms: f.retry_in.map(cv::duration_ms),
    })
}

impl RemoteQueue {
    /// One `SubmitMany` of `items` (the server settles each outcome's items
    /// in one atomic write), answered per item. Retried after a lost reply:
    /// a repeated settle answers as the first did.
    fn submit_many(&self, what: &str, items: Vec<pb::SubmitRequest>) -> Result<Vec<Result<()>>> {
        let n = items.len();
        let req = pb::SubmitManyRequest { items };
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.submit_many(r).await }
        })?;
        if r.results.len() != n {
            return Err(Error::Storage(format!(
                "server answered {} results for {n} {what}",
                r.results.len()
            )));
        }
        let url = &self.url();
        Ok(r.results
            .into_iter()
            .map(|s| match s.error {
                None => Ok(()),
                Some(e) => Err(from_item_error(&e, url)),
            })
            .collect())
    }
}

impl JobStore for RemoteQueue {
    fn enqueue(&self, kind: &str, payload: &[u8], mut options: EnqueueOptions) -> Result<Enqueued> {
        self.auto_key(&mut options);
        let safe = safety(options.idempotency_key.is_some());
        let job = cv::new_job_to_pb(NewJob {
            kind: kind.to_string(),
            payload: payload.to_vec(),
            options,
        });
        let req = pb::EnqueueRequest { job: Some(job) };
        let r = self.call(safe, |mut c| {
            let r = req.clone();
            async move { c.enqueue(r).await }
        })?;
        cv::enqueued_from_pb(
            r.enqueued
                .as_ref()
                .ok_or_else(|| Error::Storage("server answered no enqueue".into()))?,
        )
    }

    fn enqueue_many(&self, mut jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        for j in &mut jobs {
            self.auto_key(&mut j.options);
        }
        let safe = safety(jobs.iter().all(|j| j.options.idempotency_key.is_some()));
        let jobs: Vec<pb::NewJob> = jobs.into_iter().map(cv::new_job_to_pb).collect();
        let req = pb::EnqueueManyRequest { jobs };
        let r = self.call(safe, |mut c| {
            let r = req.clone();
            async move { c.enqueue_many(r).await }
        })?;
        r.enqueued.iter().map(cv::enqueued_from_pb).collect()
    }

    fn lease_feed(
        &self,
        worker_id: &str,
        options: &LeaseOptions,
        capacity: u32,
    ) -> Result<Option<Box<dyn telha_jobs::worker::LeaseFeed>>> {
        Ok(Some(Box::new(
            self.poll_jobs(worker_id, options, capacity)?,
        )))
    }

    fn lease_feed_floor(
        &self,
        worker_id: &str,
        options: &LeaseOptions,
        capacity: u32,
        floor: u32,
    ) -> Result<Option<Box<dyn telha_jobs::worker::LeaseFeed>>> {
        Ok(Some(Box::new(self.poll_jobs_window(
            worker_id,
            options,
            capacity,
            Some(floor.clamp(1, capacity.max(1))),
        )?)))
    }

    fn lease_many(&self, worker_id: &str, max: usize, options: &LeaseOptions) -> Result<Vec<Job>> {
        let wait = options.wait.unwrap_or(Duration::ZERO);
        let req = pb::LeaseRequest {
            worker_id: worker_id.to_string(),
            scopes: cv::scopes_to_pb(&options.scopes),
            kinds: cv::kinds_to_pb(&options.kinds),
            max: u32::try_from(max).unwrap_or(u32::MAX),
            wait_ms: ms(wait),
        };
        // The call's deadline is the request timeout plus the wait; a wait
        // too long to add to it ("forever") has no deadline. A repeat asks
        // for what is left of the wait (a lost reply leaves its lease to
        // expire: late, never lost).
        let limit = long_poll(self.inner.request_timeout, wait);
        let cancel = options.cancel.clone();
        let start = Instant::now();
        self.check_open()?;
        let r = self.block(async move {
            let call = self.retried(Safe::Always, limit, |mut c| {
                let mut r = req.clone();
                r.wait_ms = ms(wait.saturating_sub(start.elapsed()));
                async move { c.lease(r).await }
            });
            // A cancelled wait drops the call: the server's drop guard then
            // ends its wait and gives back anything it leased meanwhile.
            let cancelled = async {
                match &cancel {
                    Some(cw) => loop {
                        if cw.is_cancelled() {
                            break;
                        }
                        tokio::time::sleep(CANCEL_POLL).await;
                    },
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                r = call => Some(r.result),
                _ = cancelled => None,
            }
        })?;
        match r {
            None => Ok(Vec::new()),
            Some(resp) => resp?.jobs.into_iter().map(cv::job_from_pb).collect(),
        }
    }

    fn extend(&self, tokens: &[LeaseToken], worker_id: &str) -> Result<Vec<Result<u64>>> {
        self.heartbeat(tokens, &[], worker_id)
    }

    fn watch(&self, id: &JobId) -> Result<JobWatch> {
        self.watch_remote(id)
    }

    fn wait(&self, id: &JobId, timeout: Duration) -> Result<JobInfo> {
        self.wait_remote(id, timeout)
    }

    fn subscribe(&self, options: SubscribeOptions) -> Result<Subscription> {
        self.subscribe_remote(options)
    }

    fn heartbeat(
        &self,
        tokens: &[LeaseToken],
        progress: &[Option<Vec<u8>>],
        worker_id: &str,
    ) -> Result<Vec<Result<u64>>> {
        if progress.len() > tokens.len() {
            return Err(Error::InvalidArgument(format!(
                "{} progress reports for {} tokens",
                progress.len(),
                tokens.len()
            )));
        }
        let req = pb::HeartbeatRequest {
            worker_id: worker_id.to_string(),
            tokens: tokens.iter().map(cv::token_to_pb).collect(),
            progress: progress
                .iter()
                .map(|p| p.clone().unwrap_or_default())
                .collect(),
        };
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.heartbeat(r).await }
        })?;
        if r.results.len() != tokens.len() {
            return Err(Error::Storage(format!(
                "server answered {} heartbeats for {} tokens",
                r.results.len(),
                tokens.len()
            )));
        }
        let url = &self.url();
        Ok(r.results
            .into_iter()
            .map(|h| match h.outcome {
                Some(pb::heartbeat_result::Outcome::DeadlineMs(d)) => Ok(d),
                Some(pb::heartbeat_result::Outcome::Error(e)) => Err(from_item_error(&e, url)),
                None => Err(Error::Storage("server answered an empty heartbeat".into())),
            })
            .collect())
    }

    fn complete_with(&self, c: Completion) -> Result<()> {
        let token = c.token;
        let req = submit(
            &token,
            pb::submit_request::Outcome::Complete(telha_jobs_proto::flow::complete_to_pb(c)),
        );
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.submit(r).await }
        })?;
        Ok(())
    }

    fn complete_many(&self, items: Vec<Completion>) -> Result<Vec<Result<()>>> {
        self.submit_many(
            "completions",
            items
                .into_iter()
                .map(|c| {
                    let token = c.token;
                    submit(
                        &token,
                        pb::submit_request::Outcome::Complete(
                            telha_jobs_proto::flow::complete_to_pb(c),
                        ),
                    )
                })
                .collect(),
        )
    }

    fn fail_many(&self, items: Vec<Failure>) -> Result<Vec<Result<()>>> {
        self.submit_many(
            "failures",
            items
                .into_iter()
                .map(|f| {
                    let token = f.token;
                    submit(&token, fail_to_pb(f))
                })
                .collect(),
        )
    }

    fn release_many(&self, tokens: &[LeaseToken]) -> Result<Vec<Result<()>>> {
        self.submit_many(
            "releases",
            tokens
                .iter()
                .map(|t| submit(t, pb::submit_request::Outcome::Release(pb::GiveBack {})))
                .collect(),
        )
    }

    fn fail_with(&self, f: Failure) -> Result<()> {
        let token = f.token;
        let req = submit(&token, fail_to_pb(f));
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.submit(r).await }
        })?;
        Ok(())
    }

    fn release(&self, token: &LeaseToken) -> Result<()> {
        let req = pb::ReleaseRequest {
            token: Some(cv::token_to_pb(token)),
            delay_ms: None,
        };
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.release(r).await }
        })?;
        Ok(())
    }

    fn snooze(&self, token: &LeaseToken, delay: Duration) -> Result<()> {
        let req = pb::ReleaseRequest {
            token: Some(cv::token_to_pb(token)),
            delay_ms: Some(cv::duration_ms(delay)),
        };
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.release(r).await }
        })?;
        Ok(())
    }

    fn cancel(&self, id: &JobId, reason: &str) -> Result<CancelOutcome> {
        self.cancel_rpc(id, reason)
    }

    fn cancel_many(&self, filter: &CancelFilter) -> Result<CancelReport> {
        self.cancel_many_rpc(filter)
    }

    fn delete(&self, id: &JobId) -> Result<()> {
        self.delete_rpc(id)
    }

    fn promote(&self, id: &JobId) -> Result<()> {
        self.promote_rpc(id)
    }

    fn reschedule(&self, id: &JobId, run_at: u64) -> Result<()> {
        self.reschedule_rpc(id, run_at)
    }

    fn set_priority(&self, id: &JobId, priority: u8) -> Result<()> {
        self.set_priority_rpc(id, priority)
    }

    fn pause(&self, target: &PauseTarget) -> Result<bool> {
        self.pause_rpc(target)
    }

    fn resume(&self, target: &PauseTarget) -> Result<bool> {
        self.resume_rpc(target)
    }

    fn paused(&self) -> Result<Paused> {
        self.paused_rpc()
    }

    fn set_limit(&self, target: &LimitTarget, limit: Limit) -> Result<()> {
        self.set_limit_rpc(target, limit)
    }

    fn remove_limit(&self, target: &LimitTarget) -> Result<bool> {
        self.remove_limit_rpc(target)
    }

    fn limits(&self) -> Result<Vec<LimitStatus>> {
        self.limits_rpc()
    }

    // Schedules: one RPC each (schedules.rs).
    fn schedule_put(&self, s: &Schedule) -> Result<ScheduleInfo> {
        self.schedule_put_remote(s)
    }
    fn schedule_get(&self, name: &str) -> Result<ScheduleInfo> {
        self.schedule_get_remote(name)
    }
    fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        self.schedule_list_remote()
    }
    fn schedule_delete(&self, name: &str) -> Result<()> {
        self.schedule_delete_remote(name)
    }
    fn schedule_pause(&self, name: &str) -> Result<ScheduleInfo> {
        self.schedule_pause_remote(name, true)
    }
    fn schedule_resume(&self, name: &str) -> Result<ScheduleInfo> {
        self.schedule_pause_remote(name, false)
    }
    fn run_schedules(&self) -> Result<RunReport> {
        self.run_schedules_remote()
    }

    fn retry(&self, id: &JobId) -> Result<()> {
        self.retry_rpc(id)
    }

    fn get(&self, id: &JobId) -> Result<Option<JobInfo>> {
        let req = pb::GetRequest {
            id: id.as_bytes().to_vec(),
        };
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.get(r).await }
        })?;
        r.job.map(cv::job_info_from_pb).transpose()
    }

    fn list(&self, query: &ListQuery) -> Result<ListPage> {
        let req = cv::list_query_to_pb(query);
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.list(r).await }
        })?;
        cv::list_page_from_pb(r)
    }

    fn enqueue_group(
        &self,
        children: Vec<NewJob>,
        parent: NewJob,
    ) -> Result<(Vec<Enqueued>, Enqueued)> {
        self.group_rpc(children, parent)
    }

    fn results_of_children(
        &self,
        parent: &JobId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<telha_jobs::ChildPage> {
        self.children_rpc(parent, cursor, limit)
    }

    fn count_tag(
        &self,
        tag: &str,
        scope: Option<telha_jobs::Scope>,
    ) -> Result<telha_jobs::StateCounts> {
        let req = cv::count_tag_to_pb(tag, scope);
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.count_tag(r).await }
        })?;
        Ok(r.counts
            .as_ref()
            .map(cv::counts_from_pb)
            .unwrap_or_default())
    }

    fn backup(&self, dir: &std::path::Path) -> Result<telha_jobs::BackupInfo> {
        RemoteQueue::backup(self, dir)
    }

    fn find(&self, query: &telha_jobs::FindQuery) -> Result<telha_jobs::FindResult> {
        self.find_rpc(query)
    }

    fn reap(&self) -> Result<ReapReport> {
        let r = self.call(Safe::Always, |mut c| async move {
            c.reap(pb::ReapRequest {}).await
        })?;
        cv::reap_from_pb(r)
    }

    fn purge(&self, state: State, cutoff_ms: u64) -> Result<PurgeReport> {
        let req = pb::PurgeRequest {
            state: cv::state_to_pb(state) as i32,
            cutoff_ms,
        };
        let r = self.call(Safe::Always, |mut c| {
            let r = req;
            async move { c.purge(r).await }
        })?;
        cv::purge_from_pb(r)
    }

    fn stats_with(&self, query: &StatsQuery) -> Result<Stats> {
        let req = cv::stats_query_to_pb(query);
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.stats(r).await }
        })?;
        cv::stats_from_pb(&r)
    }

    fn metrics(&self) -> Result<String> {
        let r = self.call(Safe::Always, |mut c| async move {
            c.metrics(pb::MetricsRequest {}).await
        })?;
        // The server's counters, then this client's own.
        let mut text = r.text;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&self.client_metrics());
        Ok(text)
    }

    /// Closes this client (every clone): calls in progress end with
    /// `Closed`, later calls answer `Closed`. The server and its store are
    /// untouched.
    fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let _ = self.inner.close_tx.send(true);
    }

    fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    fn location(&self) -> Result<String> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        Ok(self.url())
    }
}
