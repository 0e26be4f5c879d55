//! Settling leases: `tj_queue_extend` and `tj_queue_heartbeat`
//! (heartbeats, the latter with progress), `_complete`,
//! `_complete_with_encoding`, `_complete_then` (with follow-up jobs),
//! `_fail`, `_fail_in`, `_release` and `_snooze` (the batch form,
//! `tj_queue_complete_many`, is in `completions.rs`; `tj_queue_fail_many`
//! and `tj_queue_release_many` in `failures.rs`).
//!
//! Every settle call on a lease whose job has a cancel request records the
//! job `cancelled` and answers `TJ_STATUS_CANCELLED`.

use std::ffi::c_char;

use std::time::Duration;

use telha_jobs_core::{Completion, Failure, LeaseToken};

use crate::batch::tj_batch;
use crate::boundary::{self, bytes, handle, out, slice, string, Res};
use crate::encoding::encoding_from_u32;
use crate::error::tj_error;
use crate::id::tj_token;
use crate::queue::{q, tj_queue};
use crate::status::tj_status;

fn token_of(func: &str, token: *const tj_token) -> Res<LeaseToken> {
    Ok((*handle(func, "token", token)?).into())
}

/// Renew leases (a heartbeat) held by `worker_id`: `n` tokens at `tokens`.
/// For each token `i`, `statuses_out[i]` is `TJ_STATUS_OK` with the new
/// deadline (ms since the epoch) in `deadlines_out[i]` (when
/// `deadlines_out` is not NULL), or `TJ_STATUS_ABORTED` when that lease is
/// lost (stop working on that job: it expired and may be another worker's),
/// or `TJ_STATUS_NOT_FOUND` when there is no such job (`deadlines_out[i]` is
/// then 0). The return value is for the call as a whole.
///
/// Blocks for one RocksDB write per renewed lease.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, worker_id, tokens or
/// statuses_out with `n` > 0), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` (worker id), `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`. The arrays are written only on success.
///
/// # Safety
/// `queue` is NULL or live; `worker_id` is NULL or NUL-terminated; `tokens`
/// is NULL or holds `n` readable tokens; `statuses_out` is NULL or holds `n`
/// writable elements, and so is `deadlines_out`; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_extend(
    queue: *const tj_queue,
    worker_id: *const c_char,
    tokens: *const tj_token,
    n: usize,
    statuses_out: *mut tj_status,
    deadlines_out: *mut u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_extend";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let worker = string(F, "worker_id", worker_id)?;
        let tokens = slice(F, "tokens", tokens, n)?;
        if n > 0 {
            out(F, "statuses_out", statuses_out)?;
        }
        let tokens: Vec<LeaseToken> = tokens.iter().map(|t| (*t).into()).collect();
        let answers = q.queue.extend(&tokens, worker)?;
        write_answers(answers, n, statuses_out, deadlines_out);
        Ok(())
    })
}

/// Per token: its status and, when wanted, its new deadline (0 when not renewed).
fn write_answers(
    answers: Vec<telha_jobs_core::Result<u64>>,
    n: usize,
    statuses_out: *mut tj_status,
    deadlines_out: *mut u64,
) {
    for (i, a) in answers.into_iter().enumerate().take(n) {
        let (status, deadline) = match a {
            Ok(d) => (tj_status::TJ_STATUS_OK, d),
            Err(e) => (tj_status::from_kind(e.kind()), 0),
        };
        unsafe { statuses_out.add(i).write(status) };
        if !deadlines_out.is_null() {
            unsafe { deadlines_out.add(i).write(deadline) };
        }
    }
}

/// The progress reports of `tj_queue_heartbeat`, copied: entry `i` is
/// `progress_len[i]` bytes at `progress[i]`, none when that pointer is NULL
/// or the length 0. Lengths are checked before any memory is read.
fn progress_reports(
    func: &str,
    progress: *const *const u8,
    progress_len: *const usize,
    count: usize,
) -> Res<Vec<Option<Vec<u8>>>> {
    let ptrs = slice(func, "progress", progress, count)?;
    let lens = slice(func, "progress_len", progress_len, count)?;
    let max = crate::limits::TJ_MAX_PROGRESS_BYTES;
    let mut reports = Vec::with_capacity(count);
    for (i, (p, len)) in ptrs.iter().zip(lens).enumerate() {
        if p.is_null() || *len == 0 {
            reports.push(None);
            continue;
        }
        if *len > max {
            return Err(crate::error::Failure::invalid(format!(
                "{func}: progress report {i} of {len} bytes is over the limit of \
                 {max} bytes (TJ_MAX_PROGRESS_BYTES)"
            )));
        }
        reports.push(Some(
            unsafe { std::slice::from_raw_parts(*p, *len) }.to_vec(),
        ));
    }
    Ok(reports)
}

/// `tj_queue_extend` with progress: a heartbeat that also reports how far
/// along each job is. Report `i` (for `tokens[i]`, `i < progress_count`) is
/// `progress_len[i]` bytes at `progress[i]` (copied; at most
/// `TJ_MAX_PROGRESS_BYTES`): stored on the job's record by the same write
/// that renews the lease (no write beyond the heartbeat), shown by
/// `tj_job_info_progress` (until the job's next lease) and published as a
/// `progress` event to subscribers. A NULL `progress[i]` or a length of 0
/// is no report for that token, and so is every token from
/// `progress_count` on (`progress` and `progress_len` may be NULL when it
/// is 0: then this is `tj_queue_extend`). A lost lease's report is dropped
/// with it. Bytes as given: to be read by the Python and Node bindings,
/// write the payload convention (`0x01` + msgpack).
///
/// Per token and blocking as `tj_queue_extend`.
///
/// Errors: as `tj_queue_extend` (`TJ_STATUS_NULL_ARGUMENT` also for
/// `progress` or `progress_len` with `progress_count` > 0), and
/// `TJ_STATUS_INVALID_ARGUMENT`, for the whole call with nothing renewed,
/// when a report is over `TJ_MAX_PROGRESS_BYTES` (its memory is not read)
/// or `progress_count` > `n`.
///
/// # Safety
/// As `tj_queue_extend`; `progress` and `progress_len` are NULL or hold
/// `progress_count` readable elements, and each non-NULL `progress[i]`
/// holds `progress_len[i]` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_heartbeat(
    queue: *const tj_queue,
    worker_id: *const c_char,
    tokens: *const tj_token,
    n: usize,
    progress: *const *const u8,
    progress_len: *const usize,
    progress_count: usize,
    statuses_out: *mut tj_status,
    deadlines_out: *mut u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_heartbeat";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let worker = string(F, "worker_id", worker_id)?;
        let tokens = slice(F, "tokens", tokens, n)?;
        if n > 0 {
            out(F, "statuses_out", statuses_out)?;
        }
        if progress_count > n {
            return Err(crate::error::Failure::invalid(format!(
                "{F}: {progress_count} progress reports for {n} leases"
            )));
        }
        let reports = progress_reports(F, progress, progress_len, progress_count)?;
        let tokens: Vec<LeaseToken> = tokens.iter().map(|t| (*t).into()).collect();
        let answers = q.queue.heartbeat(&tokens, &reports, worker)?;
        write_answers(answers, n, statuses_out, deadlines_out);
        Ok(())
    })
}

/// Complete the leased job of `*token`, with an optional result:
/// `result_len` bytes at `result` (copied). A NULL `result` with length 0
/// stores no result; a non-NULL one with length 0 stores an empty result.
/// Only the token is checked, not the worker. The result's encoding is
/// recorded as `TJ_ENCODING_UNKNOWN` (see `tj_queue_complete_with_encoding`).
///
/// Retry-safe: repeated with the same token after it took effect (a lost
/// reply), it answers as the first call did (`TJ_STATUS_OK`, or
/// `TJ_STATUS_CANCELLED`) and changes nothing; the first result and
/// follow-ups stand. The same holds for `tj_queue_fail`, `tj_queue_release`
/// and `tj_queue_snooze`, each repeating itself.
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, token, result with a non-zero
/// length), `TJ_STATUS_ABORTED` for a stale token or a job no longer leased
/// by it that this call did not leave (nothing changes), `TJ_STATUS_CANCELLED` when the job has a cancel
/// request (it is recorded cancelled, the result kept), `TJ_STATUS_NOT_FOUND`, `TJ_STATUS_INVALID_ARGUMENT` for
/// a result over `max_payload_bytes`, `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `token` are NULL or live; `result` is NULL or holds
/// `result_len` readable bytes; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_complete(
    queue: *const tj_queue,
    token: *const tj_token,
    result: *const u8,
    result_len: usize,
    err: *mut *mut tj_error,
) -> tj_status {
    complete(
        "tj_queue_complete",
        queue,
        token,
        result,
        result_len,
        0,
        std::ptr::null(),
        err,
    )
}

/// `tj_queue_complete`, recording how the result was made: `encoding` is a
/// `tj_encoding`. `TJ_ENCODING_BYTES` makes the Python and Node bindings
/// hand the result back as bytes / a `Buffer` even when it happens to look
/// like the cross-language convention; `TJ_ENCODING_VALUE` says it is one
/// convention value (`0x01` + msgpack) that they decode. C always reads the
/// raw bytes back, whatever the encoding.
///
/// Errors: as `tj_queue_complete`, and `TJ_STATUS_INVALID_ARGUMENT` for a
/// number that is not a `tj_encoding` (nothing changes).
///
/// # Safety
/// As `tj_queue_complete`.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_complete_with_encoding(
    queue: *const tj_queue,
    token: *const tj_token,
    result: *const u8,
    result_len: usize,
    encoding: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_complete_with_encoding";
    let none = std::ptr::null();
    complete(F, queue, token, result, result_len, encoding, none, err)
}

/// `tj_queue_complete_with_encoding` with follow-up jobs: the jobs of
/// `then` (a `tj_batch` filled with `tj_batch_add`, copied; NULL or empty:
/// none) are enqueued in the same atomic write as the completion, so they
/// exist if and only if the job completed: none when the completion is
/// refused, or when a cancel request turns it into a cancel. Each records
/// this job as its parent (`tj_job_parent`, `tj_job_info_parent`,
/// `tj_list_options_set_parent`). At most `TJ_MAX_BATCH` follow-ups; an
/// idempotency key that names an existing job creates none for that item.
/// The batch may be freed or reused once the call returns.
///
/// Blocks for one RocksDB write.
///
/// Errors: as `tj_queue_complete_with_encoding`, and
/// `TJ_STATUS_INVALID_ARGUMENT` for a bad follow-up (a malformed kind,
/// scope or key, a payload over `max_payload_bytes`, too many): the job
/// stays leased and nothing changes.
///
/// # Safety
/// As `tj_queue_complete`; `then` is NULL or a live `tj_batch` not being
/// changed by another thread.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_complete_then(
    queue: *const tj_queue,
    token: *const tj_token,
    result: *const u8,
    result_len: usize,
    encoding: u32,
    then: *const tj_batch,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_complete_then";
    complete(F, queue, token, result, result_len, encoding, then, err)
}

#[allow(clippy::too_many_arguments)]
fn complete(
    func: &'static str,
    queue: *const tj_queue,
    token: *const tj_token,
    result: *const u8,
    result_len: usize,
    encoding: u32,
    then: *const tj_batch,
    err: *mut *mut tj_error,
) -> tj_status {
    boundary::run(func, err, || {
        let q = q(func, queue)?;
        let token = token_of(func, token)?;
        let encoding = encoding_from_u32(func, encoding)?;
        let result = if result.is_null() && result_len == 0 {
            None
        } else {
            Some(bytes(func, "result", result, result_len, q.max_payload)?.to_vec())
        };
        let then = unsafe { then.as_ref() }.map_or_else(Vec::new, |b| b.jobs.clone());
        q.queue.complete_with(Completion {
            token,
            result,
            encoding,
            then,
        })?;
        Ok(())
    })
}

/// Fail the leased job of `*token`: it spends an attempt and retries after
/// backoff, or goes dead when `retryable` is false or it is out of attempts.
/// `reason` (copied, cut to 4096 bytes) becomes its last error.
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, token, reason),
/// `TJ_STATUS_INVALID_UTF8`, `TJ_STATUS_ABORTED` (stale token, nothing
/// changes; a repeat of this fail answers as it did), `TJ_STATUS_CANCELLED` (the job had a cancel request: it is
/// recorded cancelled, not retried), `TJ_STATUS_NOT_FOUND`, `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `token` are NULL or live; `reason` is NULL or NUL-terminated;
/// `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_fail(
    queue: *const tj_queue,
    token: *const tj_token,
    reason: *const c_char,
    retryable: bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_fail";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let token = token_of(F, token)?;
        let reason = string(F, "reason", reason)?;
        q.queue.fail(&token, reason, retryable)?;
        Ok(())
    })
}

/// Hand the leased job of `*token` back to pending at its old place in
/// line, without spending an attempt (a worker shutting down gracefully).
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, token), `TJ_STATUS_ABORTED`
/// (stale token; a repeat of this release answers as it did),
/// `TJ_STATUS_CANCELLED` (the job had a cancel request: it is recorded
/// cancelled), `TJ_STATUS_NOT_FOUND`, `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `token` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_release(
    queue: *const tj_queue,
    token: *const tj_token,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_release";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let token = token_of(F, token)?;
        q.queue.release(&token)?;
        Ok(())
    })
}

/// `tj_queue_fail`, retrying after `retry_in_ms` instead of the backoff
/// schedule's delay (still an attempt spent; a job out of attempts or
/// failed not retryable goes dead all the same).
///
/// Errors: as `tj_queue_fail`, and `TJ_STATUS_INVALID_ARGUMENT` for a delay
/// over `TJ_MAX_DURATION_MS` (nothing changes).
///
/// # Safety
/// As `tj_queue_fail`.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_fail_in(
    queue: *const tj_queue,
    token: *const tj_token,
    reason: *const c_char,
    retryable: bool,
    retry_in_ms: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_fail_in";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let token = token_of(F, token)?;
        let reason = string(F, "reason", reason)?;
        let mut f = Failure::new(token, reason).retry_in(Duration::from_millis(retry_in_ms));
        f.retryable = retryable;
        q.queue.fail_with(f)?;
        Ok(())
    })
}

/// Snooze the leased job of `*token`: back to pending at now + `delay_ms`
/// without spending an attempt (its snooze count goes up; past the kind's
/// `max_snoozes` a snooze counts as a failed attempt).
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, token), `TJ_STATUS_INVALID_ARGUMENT`
/// for a delay over `TJ_MAX_DURATION_MS`, `TJ_STATUS_ABORTED` (stale token;
/// a repeat of this snooze answers as it did),
/// `TJ_STATUS_CANCELLED`, `TJ_STATUS_NOT_FOUND`, `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `token` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_snooze(
    queue: *const tj_queue,
    token: *const tj_token,
    delay_ms: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_snooze";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let token = token_of(F, token)?;
        q.queue.snooze(&token, Duration::from_millis(delay_ms))?;
        Ok(())
    })
}
