//! `tj_completions`: completions collected for one atomic
//! `tj_queue_complete_many` (each with its result and follow-up jobs).

use telha_jobs_core::limits::{MAX_BATCH, MAX_PAYLOAD_BYTES_LIMIT};
use telha_jobs_core::Completion;

use crate::batch::tj_batch;
use crate::boundary::{self, bytes, handle, handle_mut, out, Res};
use crate::encoding::encoding_from_u32;
use crate::error::{tj_error, Failure};
use crate::id::tj_token;
use crate::queue::{q, tj_queue};
use crate::status::tj_status;

/// A list of completions for one `tj_queue_complete_many`. Owned by the
/// caller (`tj_completions_new` / `tj_completions_free`);
/// `tj_completions_add` copies its arguments. Not thread-safe while being
/// filled.
#[allow(non_camel_case_types)]
pub struct tj_completions {
    items: Vec<Completion>,
}

/// A new, empty list. Never NULL.
#[no_mangle]
pub extern "C" fn tj_completions_new() -> *mut tj_completions {
    Box::into_raw(Box::new(tj_completions { items: Vec::new() }))
}

/// Free a list. NULL does nothing.
///
/// # Safety
/// `completions` is NULL or a `tj_completions` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_completions_free(completions: *mut tj_completions) {
    boundary::free_box(completions);
}

/// Add the completion of the lease `*token`: `result_len` bytes at `result`
/// as its result (NULL with length 0: none), made as `encoding` (a
/// `tj_encoding`), and the jobs of `then` (a `tj_batch`, copied; NULL or
/// empty: none) as its follow-ups, enqueued in the same atomic write if and
/// only if this job completes. Everything is copied. The result's size
/// against `max_payload_bytes` and the follow-ups are checked by
/// `tj_queue_complete_many`, per item.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (completions, token, result with a
/// non-zero length), `TJ_STATUS_INVALID_ARGUMENT` (a number that is not a
/// `tj_encoding`; a length over `TJ_MAX_PAYLOAD_BYTES_LIMIT`, the memory
/// not read). Nothing is added on an error.
///
/// # Safety
/// `completions` is NULL or live and not used by another thread; `token` is
/// NULL or live; `result` is NULL or holds `result_len` readable bytes;
/// `then` is NULL or a live `tj_batch` not being changed by another thread;
/// `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_completions_add(
    completions: *mut tj_completions,
    token: *const tj_token,
    result: *const u8,
    result_len: usize,
    encoding: u32,
    then: *const tj_batch,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_completions_add";
    boundary::run(F, err, || {
        let c = handle_mut(F, "completions", completions)?;
        let token = (*handle(F, "token", token)?).into();
        let encoding = encoding_from_u32(F, encoding)?;
        let result = if result.is_null() && result_len == 0 {
            None
        } else {
            Some(bytes(F, "result", result, result_len, MAX_PAYLOAD_BYTES_LIMIT)?.to_vec())
        };
        let then = unsafe { then.as_ref() }.map_or_else(Vec::new, |b| b.jobs.clone());
        c.items.push(Completion {
            token,
            result,
            encoding,
            then,
        });
        Ok(())
    })
}

/// How many completions the list holds (0 for NULL).
///
/// # Safety
/// `completions` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_completions_len(completions: *const tj_completions) -> usize {
    unsafe { completions.as_ref() }.map_or(0, |c| c.items.len())
}

/// Empty the list, to fill it again. NULL does nothing.
///
/// # Safety
/// `completions` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_completions_clear(completions: *mut tj_completions) {
    if let Some(c) = unsafe { completions.as_mut() } {
        c.items.clear();
    }
}

/// Complete every lease of `completions` (with its result and follow-ups)
/// in one atomic write: the batch form of `tj_queue_complete_then`. For
/// item `i`, `statuses_out[i]` is `TJ_STATUS_OK`, or why that item changed
/// nothing: `TJ_STATUS_ABORTED` (stale token), `TJ_STATUS_NOT_FOUND`,
/// `TJ_STATUS_INVALID_ARGUMENT` (a result over `max_payload_bytes`, a bad
/// follow-up), `TJ_STATUS_CANCELLED` (a cancel request: recorded
/// cancelled, its follow-ups not enqueued). Each item is retry-safe as
/// `tj_queue_complete` is: a token completed by an earlier call, or named
/// again in this one, answers as its completion did. At most `TJ_MAX_BATCH`
/// items. The list may be freed or reused once the call returns.
///
/// Blocks for one RocksDB write.
///
/// Errors (for the whole call; nothing was written and `statuses_out` is
/// not written): `TJ_STATUS_NULL_ARGUMENT` (queue, completions,
/// statuses_out with a non-empty list), `TJ_STATUS_INVALID_ARGUMENT`
/// (`statuses_len` smaller than the list, more than `TJ_MAX_BATCH` items),
/// `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `completions` are NULL or live (`completions` not changed
/// by another thread during the call); `statuses_out` is NULL or holds
/// `statuses_len` writable elements; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_complete_many(
    queue: *const tj_queue,
    completions: *const tj_completions,
    statuses_out: *mut tj_status,
    statuses_len: usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_complete_many";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let c = handle(F, "completions", completions)?;
        let n = c.items.len();
        check_answers(F, "completions", n, statuses_out, statuses_len)?;
        let answers = q.queue.complete_many(c.items.clone())?;
        write_statuses(answers, n, statuses_out);
        Ok(())
    })
}

/// The checks of a batch call answered per item in `statuses_out`: at most
/// `TJ_MAX_BATCH` items, and room for every answer.
pub(crate) fn check_answers(
    func: &str,
    what: &str,
    n: usize,
    statuses_out: *mut tj_status,
    statuses_len: usize,
) -> Res<()> {
    if n > MAX_BATCH {
        return Err(Failure::invalid(format!(
            "{func}: {n} {what} is over the limit of {MAX_BATCH} (TJ_MAX_BATCH)"
        )));
    }
    if n > 0 {
        out(func, "statuses_out", statuses_out)?;
    }
    if statuses_len < n {
        return Err(Failure::invalid(format!(
            "{func}: statuses_len is {statuses_len}, the list holds {n} {what}"
        )));
    }
    Ok(())
}

/// Item `i`'s answer into `statuses_out[i]` (which holds `n` elements).
pub(crate) fn write_statuses(
    answers: Vec<telha_jobs_core::Result<()>>,
    n: usize,
    statuses_out: *mut tj_status,
) {
    for (i, a) in answers.into_iter().enumerate().take(n) {
        let status = match a {
            Ok(()) => tj_status::TJ_STATUS_OK,
            Err(e) => tj_status::from_kind(e.kind()),
        };
        unsafe { statuses_out.add(i).write(status) };
    }
}
