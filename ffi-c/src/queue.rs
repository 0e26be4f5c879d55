//! `tj_queue`: an open store, and every operation on it but the settling of
//! leases (`settle.rs`).

use std::ffi::c_char;

use telha_jobs_core::{Config, EnqueueOptions, JobId, LeaseOptions, Queue};

use crate::batch::tj_batch;
use crate::boundary::{self, bytes, handle, out, string, write, write_opt, Res};
use crate::enqueue_options::tj_enqueue_options;
use crate::error::{tj_error, Failure};
use crate::id::tj_id;
use crate::job::tj_job;
use crate::job_info::tj_job_info;
use crate::lease_options::tj_lease_options;
use crate::list::{self, tj_list_options, tj_list_page};
use crate::options::tj_options;
use crate::stats::{tj_reap_report, tj_stats};
use crate::status::{state_from_u32, tj_status};

/// An open store. Thread-safe: one `tj_queue*` may be used from many threads
/// at once, and `tj_queue_close` may be called while other threads are in
/// calls on it (they finish, or end with `TJ_STATUS_CLOSED`). Only
/// `tj_queue_free` must be the last call on it.
///
/// Within one process, every open of the same path shares one engine; the
/// store is released to other processes when the last one is closed.
#[allow(non_camel_case_types)]
pub struct tj_queue {
    pub(crate) queue: Queue,
    /// Checked before a payload is read, so a huge length never touches memory.
    pub(crate) max_payload: usize,
}

pub(crate) fn q<'a>(func: &str, queue: *const tj_queue) -> Res<&'a tj_queue> {
    handle(func, "queue", queue)
}

/// Open (or create) the store directory `path` with `options` (NULL: the
/// defaults; copied, so they may be freed after). On success `*queue_out` is
/// a new `tj_queue` the caller frees with `tj_queue_free`.
///
/// Blocks while RocksDB opens and replays its log (milliseconds to seconds),
/// and while another handle of this process is closing the same store.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (path, queue_out), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for options out of range (the message names
/// the setting) or a store already open in this process with other options,
/// `TJ_STATUS_STORE_LOCKED` when another process owns the store (the message
/// names the path and the owner's pid), `TJ_STATUS_UNSUPPORTED_FORMAT` when
/// the store was written in a newer format (its `telha.format` marker; the
/// store is left untouched), `TJ_STATUS_STORAGE`, `TJ_STATUS_CORRUPTION`.
/// Options holding a value a setter refused are `TJ_STATUS_INVALID_ARGUMENT`
/// with that setter's message.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `options` is NULL or live; `queue_out`
/// and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_open(
    path: *const c_char,
    options: *const tj_options,
    queue_out: *mut *mut tj_queue,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_open";
    boundary::run(F, err, || {
        let path = string(F, "path", path)?;
        let queue_out = out(F, "queue_out", queue_out)?;
        let config = match unsafe { options.as_ref() } {
            Some(o) => o.config_for_open(F)?,
            None => Config::default(),
        };
        let max_payload = config.max_payload_bytes;
        let queue = Queue::open(path, config)?;
        write(
            queue_out,
            Box::into_raw(Box::new(tj_queue { queue, max_payload })),
        );
        Ok(())
    })
}

/// Open the store at `path` read-only, for inspection (`get`, `list`,
/// `stats`, `metrics`): works while another process owns it and sees what
/// that process wrote (a snapshot taken at open). Calls that write answer
/// `TJ_STATUS_INVALID_ARGUMENT`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_NOT_FOUND` when there is no store at `path`,
/// `TJ_STATUS_UNSUPPORTED_FORMAT` (a newer format), `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CORRUPTION`.
///
/// # Safety
/// As `tj_queue_open`.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_open_read_only(
    path: *const c_char,
    queue_out: *mut *mut tj_queue,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_open_read_only";
    boundary::run(F, err, || {
        let path = string(F, "path", path)?;
        let queue_out = out(F, "queue_out", queue_out)?;
        let queue = Queue::open_read_only(path)?;
        let max_payload = queue.config().map_err(Failure::from)?.max_payload_bytes;
        write(
            queue_out,
            Box::into_raw(Box::new(tj_queue { queue, max_payload })),
        );
        Ok(())
    })
}

/// Close the queue: later calls on it answer `TJ_STATUS_CLOSED`, and lease
/// waits in progress on other threads end with `TJ_STATUS_CLOSED`. The
/// store is released when no handle of this process holds it (RocksDB
/// flushes and closes here: may block for milliseconds). Idempotent;
/// thread-safe; NULL does nothing. The handle must still be freed.
///
/// # Safety
/// `queue` is NULL or a live `tj_queue`.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_close(queue: *const tj_queue) {
    if let Some(q) = unsafe { queue.as_ref() } {
        boundary::run_infallible((), || q.queue.close());
    }
}

/// Close (if not closed) and free the queue. NULL does nothing. No other
/// thread may be using the handle, now or later.
///
/// # Safety
/// `queue` is NULL or a `tj_queue` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_free(queue: *mut tj_queue) {
    if let Some(q) = unsafe { queue.as_ref() } {
        boundary::run_infallible((), || q.queue.close());
    }
    boundary::free_box(queue);
}

/// Enqueue one job: `kind`, `payload_len` bytes at `payload` (copied; NULL
/// allowed when the length is 0), `options` (NULL: the defaults). It becomes
/// pending, leasable at its run-at. On success writes the job's id to
/// `*id_out` and whether it was created to `*created_out` (false when the
/// idempotency key matched an existing job, whose id is written); either may
/// be NULL.
///
/// Blocks for one RocksDB write (microseconds; an fsync with sync writes).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, kind, payload with a non-zero
/// length), `TJ_STATUS_INVALID_UTF8` (kind), `TJ_STATUS_INVALID_ARGUMENT`
/// (malformed kind, `system:*` outside the system scope, payload over
/// `max_payload_bytes` (the memory is not read), bad idempotency key,
/// max_attempts 0, a run-at or delay past `TJ_MAX_INSTANT_MS`, naming it),
/// `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `kind` is NULL or NUL-terminated; `payload` is
/// NULL or holds `payload_len` readable bytes; `options` is NULL or live;
/// `id_out`, `created_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_enqueue(
    queue: *const tj_queue,
    kind: *const c_char,
    payload: *const u8,
    payload_len: usize,
    options: *const tj_enqueue_options,
    id_out: *mut tj_id,
    created_out: *mut bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_enqueue";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let kind = string(F, "kind", kind)?;
        let payload = bytes(F, "payload", payload, payload_len, q.max_payload)?;
        let options = unsafe { options.as_ref() }
            .map(|o| o.options.clone())
            .unwrap_or_else(EnqueueOptions::default);
        let e = q.queue.enqueue(kind, payload, options)?;
        write_opt(id_out, e.id.into());
        write_opt(created_out, e.created);
        Ok(())
    })
}

/// Enqueue every job of `batch` in one atomic write: all or none. On
/// success, when not NULL, `ids_out[i]` and `created_out[i]` answer job `i`
/// (arrays of `tj_batch_len(batch)` elements). Jobs of one batch sharing a
/// scope and idempotency key get one job. The batch is left as it was.
///
/// Blocks for one RocksDB write.
///
/// Errors: as `tj_queue_enqueue` (`TJ_STATUS_NULL_ARGUMENT` also for batch);
/// one invalid job rejects the batch, and the message names it.
///
/// # Safety
/// `queue` and `batch` are NULL or live; `ids_out` and `created_out` are
/// NULL or hold `tj_batch_len(batch)` writable elements; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_enqueue_many(
    queue: *const tj_queue,
    batch: *const tj_batch,
    ids_out: *mut tj_id,
    created_out: *mut bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_enqueue_many";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let b = handle(F, "batch", batch)?;
        let answers = q.queue.enqueue_many(b.jobs.clone())?;
        for (i, e) in answers.iter().enumerate() {
            if !ids_out.is_null() {
                unsafe { ids_out.add(i).write(e.id.into()) };
            }
            if !created_out.is_null() {
                unsafe { created_out.add(i).write(e.created) };
            }
        }
        Ok(())
    })
}

fn lease_options<'a>(
    func: &str,
    options: *const tj_lease_options,
) -> Res<Option<&'a LeaseOptions>> {
    if options.is_null() {
        return Ok(None);
    }
    Ok(Some(&handle(func, "options", options)?.options))
}

/// Lease the most urgent ready job for `worker_id` (1 to
/// `TJ_MAX_WORKER_ID_LEN` bytes),
/// filtered and waiting as `options` says (NULL: any job, no wait). On
/// success `*job_out` is a new `tj_job` the caller frees, or NULL when no job
/// was ready (after the wait): that is `TJ_STATUS_OK`, not an error. The
/// lease lasts the kind's lease TTL: heartbeat with `tj_queue_extend`, then
/// complete, fail or release it.
///
/// Blocks for one RocksDB write, plus up to the options' wait when no job is
/// ready; the wait ends early when a job arrives, the queue is closed
/// (`TJ_STATUS_CLOSED`) or the options' cancel token is cancelled.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, worker_id, job_out),
/// `TJ_STATUS_INVALID_UTF8`, `TJ_STATUS_INVALID_ARGUMENT` (worker id
/// length), `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `worker_id` is NULL or NUL-terminated; `options`
/// is NULL or live; `job_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_lease_next(
    queue: *const tj_queue,
    worker_id: *const c_char,
    options: *const tj_lease_options,
    job_out: *mut *mut tj_job,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_lease_next";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let worker = string(F, "worker_id", worker_id)?;
        let options = lease_options(F, options)?;
        let job_out = out(F, "job_out", job_out)?;
        let default = LeaseOptions::default();
        let job = q.queue.lease_next(worker, options.unwrap_or(&default))?;
        let p = job.map_or(std::ptr::null_mut(), |j| {
            Box::into_raw(Box::new(tj_job::new(j)))
        });
        write(job_out, p);
        Ok(())
    })
}

/// Lease up to `max` (1 to `TJ_MAX_BATCH`) ready jobs in one write, waiting as
/// `options` says for the first (it returns as soon as it has any). On
/// success `jobs_out[0 .. *count_out]` are new `tj_job`s the caller frees
/// one by one; `*count_out` is 0 when none was ready.
///
/// Blocks as `tj_queue_lease_next`.
///
/// Errors: as `tj_queue_lease_next` (`TJ_STATUS_NULL_ARGUMENT` also for
/// jobs_out and count_out), and `TJ_STATUS_INVALID_ARGUMENT` when `max` is
/// 0 or over `TJ_MAX_BATCH`.
///
/// # Safety
/// As `tj_queue_lease_next`; `jobs_out` is NULL or holds `max` writable
/// pointers; `count_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_lease_many(
    queue: *const tj_queue,
    worker_id: *const c_char,
    options: *const tj_lease_options,
    max: usize,
    jobs_out: *mut *mut tj_job,
    count_out: *mut usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_lease_many";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let worker = string(F, "worker_id", worker_id)?;
        let options = lease_options(F, options)?;
        let jobs_out = out(F, "jobs_out", jobs_out)?;
        let count_out = out(F, "count_out", count_out)?;
        let default = LeaseOptions::default();
        let jobs = q
            .queue
            .lease_many(worker, max, options.unwrap_or(&default))?;
        // The core never returns more than `max`; hold it to that anyway,
        // since writing past `jobs_out` would corrupt the caller's memory.
        if jobs.len() > max {
            return Err(Failure::new(
                tj_status::TJ_STATUS_PANIC,
                format!("{F}: {} jobs for max {max}", jobs.len()),
            ));
        }
        let n = jobs.len();
        for (i, j) in jobs.into_iter().enumerate() {
            unsafe {
                jobs_out
                    .add(i)
                    .write(Box::into_raw(Box::new(tj_job::new(j))))
            };
        }
        write(count_out, n);
        Ok(())
    })
}

/// Operator action: a dead or failed job back to pending, attempts reset,
/// ready now.
///
/// Blocks for one RocksDB read and write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, id), `TJ_STATUS_NOT_FOUND`,
/// `TJ_STATUS_INVALID_ARGUMENT` when the job is neither dead nor failed,
/// `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `id` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_retry(
    queue: *const tj_queue,
    id: *const tj_id,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_retry";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let id: JobId = (*handle(F, "id", id)?).into();
        q.queue.retry(&id)?;
        Ok(())
    })
}

/// Everything known about job `*id`, with its event log. On success
/// `*info_out` is a new `tj_job_info` the caller frees, or NULL when there
/// is no such job (`TJ_STATUS_OK`).
///
/// Blocks for two RocksDB reads.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, id, info_out),
/// `TJ_STATUS_CORRUPTION` when the job's record does not decode,
/// `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `id` are NULL or live; `info_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_get(
    queue: *const tj_queue,
    id: *const tj_id,
    info_out: *mut *mut tj_job_info,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_get";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let id: JobId = (*handle(F, "id", id)?).into();
        let info_out = out(F, "info_out", info_out)?;
        let info = q.queue.get(&id)?;
        let p = info.map_or(std::ptr::null_mut(), |i| {
            Box::into_raw(Box::new(tj_job_info::new(i)))
        });
        write(info_out, p);
        Ok(())
    })
}

/// A page of jobs matching `options` (NULL: the first 100 of every job). On
/// success `*page_out` is a new `tj_list_page` the caller frees. Pass
/// `tj_list_page_next(page)` to `tj_list_options_set_after` for the next page.
///
/// Blocks while it reads up to `TJ_LIST_SCAN_BUDGET` rows.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, page_out),
/// `TJ_STATUS_INVALID_ARGUMENT` for a limit of 0 or over `TJ_MAX_LIST_LIMIT` or a
/// malformed cursor, `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `options` are NULL or live; `page_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_list(
    queue: *const tj_queue,
    options: *const tj_list_options,
    page_out: *mut *mut tj_list_page,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_list";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let query = list::query(F, options)?;
        let page_out = out(F, "page_out", page_out)?;
        let page = q.queue.list(&query)?;
        write(page_out, Box::into_raw(Box::new(tj_list_page::new(page))));
        Ok(())
    })
}

/// Run one reaper pass now: expired leases go back to pending with backoff
/// (or dead when out of attempts), then up to `prune_batch` completed jobs
/// past their retention are deleted. Writes what it did to `*report_out`
/// when not NULL. Independent of the background reaper.
///
/// Blocks for the pass: one write per expired lease, one per pruned batch.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue), `TJ_STATUS_STORAGE` (the pass
/// stops there), `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `report_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_reap(
    queue: *const tj_queue,
    report_out: *mut tj_reap_report,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_reap";
    boundary::run(F, err, || {
        let report = q(F, queue)?.queue.reap()?;
        write_opt(report_out, report.into());
        Ok(())
    })
}

/// Operator action: delete the jobs in `state` (`TJ_STATE_COMPLETED`,
/// `TJ_STATE_DEAD` or `TJ_STATE_CANCELLED`) that got there before
/// `before_ms` (ms since the epoch), with their indexes, idempotency keys
/// and counts, in batches of 1,000. Writes how many to `*purged_out` when
/// not NULL. An error stops it with the earlier batches committed.
///
/// Blocks for one RocksDB write per batch.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue), `TJ_STATUS_INVALID_ARGUMENT`
/// (a state that is not a `tj_state` or not finished), `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `purged_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_purge(
    queue: *const tj_queue,
    state: u32,
    before_ms: u64,
    purged_out: *mut u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_purge";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let state = state_from_u32(state)
            .ok_or_else(|| Failure::invalid(format!("{F}: state {state} is not a tj_state")))?;
        let r = q.queue.purge(state, before_ms)?;
        write_opt(purged_out, r.purged as u64);
        Ok(())
    })
}

/// Exact job counts per kind and state (kept with every write, never a
/// scan). On success `*stats_out` is a new `tj_stats` the caller frees.
/// Never blocks on I/O.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, stats_out), `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `stats_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_stats(
    queue: *const tj_queue,
    stats_out: *mut *mut tj_stats,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_stats";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let stats_out = out(F, "stats_out", stats_out)?;
        let stats = q.queue.stats()?;
        write(stats_out, Box::into_raw(Box::new(tj_stats::new(stats))));
        Ok(())
    })
}

/// Prometheus text exposition (job counts, leases in flight, transitions,
/// corrupt records, reaper passes). On success `*text_out` is a new
/// NUL-terminated string the caller frees with `tj_string_free`. Never
/// blocks on I/O.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, text_out), `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `text_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_metrics(
    queue: *const tj_queue,
    text_out: *mut *mut c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_metrics";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let text_out = out(F, "text_out", text_out)?;
        let text = q.queue.metrics()?;
        write(text_out, boundary::cstring(&text).into_raw());
        Ok(())
    })
}
