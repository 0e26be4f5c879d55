//! `PollJobs`: one server-streaming call per worker that pushes leases as
//! they become ready, never more than its window unsettled at once (its
//! `capacity`, or with a `floor` what `window.rs` sizes by the stream's
//! settle rate, between the floor and the capacity). A
//! lease stops counting when it is settled through this server (any
//! connection), lost (past its deadline, or the core says so) or released.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use telha_jobs::{limits, CancelWait, Error, Job, LeaseOptions, LeaseToken};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::status::to_status;
use telha_jobs_proto::v1 as pb;
use tokio::sync::{mpsc, watch, Notify};
use tonic::Status;

use crate::lease::lease_or_give_back;
use crate::service::{now_ms, until_closing, JobsService, Shared};
use crate::window::Window;

/// The response header naming a PollJobs stream for StopPoll.
pub(crate) const STREAM_HEADER: &str = "telha-poll-stream";

/// How long one PollJobs lease wait lasts before the loop looks around
/// (shutdown, capacity) and waits again.
const POLL_WAIT: Duration = Duration::from_secs(30);
/// How often a stream with no free capacity checks, in cluster mode, that
/// this node still runs the engine.
const CLUSTER_RECHECK: Duration = Duration::from_secs(1);

/// One PollJobs stream's unsettled leases (token → lease deadline) and how
/// many of them were settled (the window's rate).
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) held: Mutex<HashMap<LeaseToken, u64>>,
    pub(crate) freed: Notify,
    pub(crate) settles: AtomicU64,
}

impl JobsService {
    /// Open a stream: its response and its id (for StopPoll).
    pub(crate) fn poll(&self, r: pb::PollJobsRequest) -> Result<(Undelivered, String), Status> {
        if self.shared.is_closing() {
            return Err(to_status(&Error::Closed));
        }
        limits::validate_worker_id(&r.worker_id).map_err(|e| to_status(&e))?;
        // The stream leases up to `capacity` jobs at once: the core's batch bound.
        if r.capacity == 0 || r.capacity as usize > limits::MAX_BATCH {
            return Err(to_status(&Error::InvalidArgument(format!(
                "capacity must be 1 to {}, got {}",
                limits::MAX_BATCH,
                r.capacity
            ))));
        }
        let window =
            Window::from_request(r.capacity, r.floor, r.window_ms).map_err(|e| to_status(&e))?;
        let (scopes, kinds) = cv::filter_from_pb(&r.scopes, &r.kinds).map_err(|e| to_status(&e))?;
        let (tx, rx) = mpsc::channel(2);
        let shared = self.shared.clone();
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (stop_tx, stop) = watch::channel(false);
        lock(&shared.polls).insert(id.clone(), stop_tx);
        shared.stats.stream_opened();
        let stream = Undelivered {
            rx,
            shared: shared.clone(),
        };
        let ends = Ends {
            shared: shared.clone(),
            id: id.clone(),
        };
        tokio::spawn(async move {
            let _ends = ends;
            poll_loop(shared, tx, stop, r.worker_id, scopes, kinds, window).await
        });
        Ok((stream, id))
    }
}

impl Shared {
    /// StopPoll: tell the stream's loop to stop leasing and end the
    /// stream. False for an unknown (or ended) stream.
    pub(crate) fn stop_poll(&self, id: &str) -> bool {
        match lock(&self.polls).get(id) {
            Some(tx) => {
                let _ = tx.send(true);
                true
            }
            None => false,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes a stream out of the StopPoll map when its loop ends (or panics).
struct Ends {
    shared: Arc<Shared>,
    id: String,
}

impl Drop for Ends {
    fn drop(&mut self) {
        lock(&self.shared.polls).remove(&self.id);
    }
}

/// The response stream of one `PollJobs` call. When the client goes away,
/// tonic drops it with up to the channel's capacity of messages that were
/// leased for this stream and never handed to the transport: dropping it
/// releases those at once (without this they would stay leased, by nobody,
/// until their TTL ran out and then spend an attempt). A message already
/// taken by the transport counts as delivered: the worker may hold it.
pub(crate) struct Undelivered {
    rx: mpsc::Receiver<Result<pb::PollJobsResponse, Status>>,
    shared: Arc<Shared>,
}

impl tokio_stream::Stream for Undelivered {
    type Item = Result<pb::PollJobsResponse, Status>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Undelivered {
    fn drop(&mut self) {
        // No more sends succeed from here on (the loop sees `closed`).
        self.rx.close();
        let mut tokens = Vec::new();
        while let Ok(msg) = self.rx.try_recv() {
            if let Ok(m) = msg {
                for j in &m.jobs {
                    if let Ok(id) = cv::id_from_pb(&j.id) {
                        tokens.push(LeaseToken {
                            id,
                            generation: j.generation,
                        });
                    }
                }
            }
        }
        if tokens.is_empty() {
            return;
        }
        for t in &tokens {
            self.shared.settled(t);
        }
        let Ok(q) = self.shared.queue() else {
            return; // no engine here now: they are reaped after their TTL
        };
        let release = move || {
            for t in &tokens {
                // Best effort: one that cannot be released is reaped.
                let _ = q.release(t);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => drop(h.spawn_blocking(release)),
            Err(_) => release(),
        }
    }
}

/// One PollJobs stream: lease as capacity frees, push, repeat; end when the
/// client goes away (the receiver is dropped: `tx.closed()`, which cancels
/// the wait in progress), the client asks it to stop (StopPoll: the same,
/// but the stream then ends normally, after what was already sent) or the
/// server closes.
async fn poll_loop(
    shared: Arc<Shared>,
    tx: mpsc::Sender<Result<pb::PollJobsResponse, Status>>,
    mut stop: watch::Receiver<bool>,
    worker: String,
    scopes: Vec<telha_jobs::Scope>,
    kinds: Vec<telha_jobs::KindPattern>,
    mut window: Window,
) {
    let slot = Arc::new(Slot::default());
    let mut closing = shared.closing.clone();
    let started = Instant::now();
    // A full stream looks at the leadership this often in cluster mode (a
    // wait for work ends by itself when the engine is fenced).
    let recheck = match shared.source {
        crate::source::Source::Dynamic(_) => CLUSTER_RECHECK,
        crate::source::Source::Fixed(_) => POLL_WAIT,
    };
    loop {
        if *closing.borrow() || *stop.borrow() {
            break;
        }
        // In cluster mode, this term's engine; on a node that lost the
        // leadership the stream ends with UNAVAILABLE and the leader hint.
        let q = match shared.queue() {
            Ok(q) => q,
            Err(s) => {
                let _ = tx.send(Err(s)).await;
                break;
            }
        };
        // How many unsettled leases this stream keeps now: its settle rate
        // times the window, between the floor and the capacity.
        let capacity = window.sample(
            slot.settles.load(Ordering::Relaxed),
            started.elapsed().as_secs_f64(),
        );
        // Leases past their deadline are lost: they no longer count.
        let now = now_ms();
        let (free, next_expiry) = {
            let mut held = slot.held.lock().unwrap_or_else(|p| p.into_inner());
            let lost: Vec<LeaseToken> = held
                .iter()
                .filter(|(_, d)| **d <= now)
                .map(|(t, _)| *t)
                .collect();
            for t in &lost {
                held.remove(t);
            }
            let mut streamed = shared.streamed.lock().unwrap_or_else(|p| p.into_inner());
            for t in &lost {
                streamed.remove(t);
            }
            (
                capacity.saturating_sub(held.len()),
                held.values().min().copied(),
            )
        };
        if free == 0 {
            let nap = next_expiry
                .map(|d| Duration::from_millis(d.saturating_sub(now) + 1))
                .unwrap_or(POLL_WAIT)
                .min(recheck);
            tokio::select! {
                _ = slot.freed.notified() => {}
                _ = tokio::time::sleep(nap) => {}
                _ = until_closing(&mut closing) => break,
                _ = until_closing(&mut stop) => break,
                _ = tx.closed() => break,
            }
            continue;
        }
        let cancel = CancelWait::new();
        let options = LeaseOptions {
            scopes: scopes.clone(),
            kinds: kinds.clone(),
            wait: Some(POLL_WAIT),
            cancel: Some(cancel.clone()),
        };
        let (w, c2) = (worker.clone(), cancel.clone());
        let q2 = q.clone();
        let mut task =
            tokio::task::spawn_blocking(move || lease_or_give_back(&q, &w, free, &options, &c2));
        let (res, ending) = tokio::select! {
            r = &mut task => (r, false),
            _ = until_closing(&mut closing) => { cancel.cancel(); (task.await, true) }
            _ = until_closing(&mut stop) => { cancel.cancel(); (task.await, true) }
            _ = tx.closed() => { cancel.cancel(); (task.await, true) }
        };
        let jobs = match res {
            Ok(Ok(jobs)) => jobs,
            Ok(Err(e)) => {
                let _ = tx.send(Err(shared.status(&e))).await;
                break;
            }
            Err(e) => {
                let _ = tx
                    .send(Err(Status::internal(format!("server task failed: {e}"))))
                    .await;
                break;
            }
        };
        if ending {
            // Leased just before the cancel landed: nobody will get them.
            give_back(&shared, &jobs).await;
            break;
        }
        if jobs.is_empty() {
            continue;
        }
        {
            let mut held = slot.held.lock().unwrap_or_else(|p| p.into_inner());
            let mut streamed = shared.streamed.lock().unwrap_or_else(|p| p.into_inner());
            for j in &jobs {
                held.insert(j.token(), j.deadline);
                streamed.insert(j.token(), Arc::downgrade(&slot));
            }
        }
        let tokens: Vec<LeaseToken> = jobs.iter().map(Job::token).collect();
        let msg = pb::PollJobsResponse {
            jobs: jobs.into_iter().map(cv::job_to_pb).collect(),
        };
        if tx.send(Ok(msg)).await.is_err() {
            // Not delivered: give the jobs back now rather than after the TTL.
            let q = q2;
            let t2 = tokens.clone();
            let _ = tokio::task::spawn_blocking(move || {
                for t in &t2 {
                    let _ = q.release(t);
                }
            })
            .await;
            for t in &tokens {
                shared.settled(t);
            }
            break;
        }
    }
    // Forget this stream's leases (they stay leased in the store until
    // settled by the worker through any connection, or reaped).
    let held: Vec<LeaseToken> = slot
        .held
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .copied()
        .collect();
    {
        let mut streamed = shared.streamed.lock().unwrap_or_else(|p| p.into_inner());
        for t in &held {
            streamed.remove(t);
        }
    }
    shared.stats.stream_closed();
}

/// Release jobs leased for a stream that will not deliver them (best
/// effort: one that cannot be released is reaped after its TTL).
async fn give_back(shared: &Shared, jobs: &[Job]) {
    if jobs.is_empty() {
        return;
    }
    let Ok(q) = shared.queue() else {
        return; // no engine here now: they are reaped after their TTL
    };
    let tokens: Vec<LeaseToken> = jobs.iter().map(Job::token).collect();
    let _ = tokio::task::spawn_blocking(move || {
        for t in &tokens {
            let _ = q.release(t);
        }
    })
    .await;
}
