//! `tj_queue_wait`: block until a job is terminal, a timeout or a cancel.

use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs_core::{Error, JobId};

use crate::boundary::{self, handle, out, write, Res};
use crate::cancel::tj_cancel;
use crate::error::tj_error;
use crate::id::tj_id;
use crate::job_info::tj_job_info;
use crate::queue::{q, tj_queue};
use crate::status::tj_status;

/// How often a wait looks at the queue's closed flag (and at a trigger the
/// cancel thread has not passed on yet). The job's own transition and a
/// `tj_cancel_cancel` wake it at once.
const SLICE: Duration = Duration::from_millis(100);

/// Wait for job `*id` to be terminal (completed, dead or cancelled), for
/// up to `timeout_ms` (0: answer at once; `UINT64_MAX`: no limit), or until
/// `cancel` (NULL: none) is cancelled or triggered. On success `*info_out`
/// is a new `tj_job_info` the caller frees: the job once terminal (with its
/// result, last error or cancel reason), or as it is now when the time ran
/// out or the wait was cancelled (check `tj_job_info_state`). Woken by the
/// commit of the transition itself, never by polling the store. Any number
/// of threads may wait on one job; a waiter never delays a writer.
///
/// Blocks the calling thread only: up to the timeout, plus two RocksDB
/// reads. `tj_queue_close` from another thread ends it within 100 ms.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, id, info_out),
/// `TJ_STATUS_NOT_FOUND` for no such job (or one deleted during the wait),
/// `TJ_STATUS_CLOSED` when the queue is closed before or during the wait,
/// `TJ_STATUS_CORRUPTION`, `TJ_STATUS_STORAGE`.
///
/// # Safety
/// `queue` and `id` are NULL or live; `cancel` is NULL or live until the
/// call returns; `info_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_wait(
    queue: *const tj_queue,
    id: *const tj_id,
    timeout_ms: u64,
    cancel: *const tj_cancel,
    info_out: *mut *mut tj_job_info,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_wait";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let id: JobId = (*handle(F, "id", id)?).into();
        let info_out = out(F, "info_out", info_out)?;
        let cancel = unsafe { cancel.as_ref() }.map(|c| c.shared.clone());
        let info = wait(q, &id, Duration::from_millis(timeout_ms), cancel)?;
        write(info_out, Box::into_raw(Box::new(tj_job_info::new(info))));
        Ok(())
    })
}

fn wait(
    q: &tj_queue,
    id: &JobId,
    timeout: Duration,
    cancel: Option<Arc<crate::cancel::Shared>>,
) -> Res<telha_jobs_core::JobInfo> {
    if q.queue.is_closed() {
        return Err(Error::Closed.into());
    }
    let w = Arc::new(q.queue.watch(id)?);
    if let Some(c) = &cancel {
        c.register(&w);
    }
    // A timeout too long to represent has no end.
    let deadline = Instant::now().checked_add(timeout);
    loop {
        if q.queue.is_closed() {
            return Err(Error::Closed.into());
        }
        if cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            break;
        }
        let left = deadline.map_or(SLICE, |d| d.saturating_duration_since(Instant::now()));
        if w.wait(Some(left.min(SLICE))) || left <= SLICE || w.is_cancelled() {
            break;
        }
    }
    if q.queue.is_closed() {
        return Err(Error::Closed.into());
    }
    Ok(q.queue.wait_watched(&w, Duration::ZERO)?)
}
