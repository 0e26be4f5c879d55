//! `tj_queue_find` (issue 42): a text looked up exactly as a job id, an
//! idempotency key and a tag (`Queue::find`), and `tj_find_result`, what
//! it found.

use std::ffi::{c_char, CStr};

use telha_jobs_core::FindQuery;

use crate::boundary::{self, out, write};
use crate::error::{tj_error, Failure};
use crate::job_info::tj_job_info;
use crate::list::tj_list_page;
use crate::queue::tj_queue;
use crate::status::tj_status;

/// What `tj_queue_find` found: every kind the text matched, side by side
/// (a text can be a tag and an idempotency key at once). Owned by the
/// caller (`tj_find_result_free`); the job infos and the page it lends
/// live until then. Immutable: readable from many threads.
#[allow(non_camel_case_types)]
pub struct tj_find_result {
    by_id: Option<tj_job_info>,
    by_key: Option<tj_job_info>,
    by_tag: tj_list_page,
}

/// Look `text` up exactly (no full-text matching) as a job id, an
/// idempotency key and a tag, each from its own index: O(page), never a
/// scan. `scope` (UUID text) limits the id and the tag to that scope and
/// is the scope the key is looked up in; NULL: the id and the tag in every
/// scope, the key in the system (nil) scope (keys are per scope). `limit`
/// is the most of the tag's jobs returned (1 to `TJ_MAX_LIST_LIMIT`; 0
/// means 50); pass the page's `tj_list_page_next` to
/// `tj_list_options_set_after` with `tj_list_options_set_tag(text)` for
/// the rest. On success `*result_out` is a new `tj_find_result` the caller
/// frees.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, text, result_out),
/// `TJ_STATUS_INVALID_ARGUMENT` for a text that is empty, over
/// `TJ_MAX_FIND_TEXT_LEN` bytes, holds a control character or is not
/// UTF-8, a bad scope or a limit over `TJ_MAX_LIST_LIMIT`;
/// `TJ_STATUS_CORRUPTION`, `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `text` and `scope` are NULL or
/// NUL-terminated; `result_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_find(
    queue: *const tj_queue,
    text: *const c_char,
    scope: *const c_char,
    limit: usize,
    result_out: *mut *mut tj_find_result,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_find";
    boundary::run(F, err, || {
        let q = crate::queue::q(F, queue)?;
        if text.is_null() {
            return Err(boundary::null(F, "text"));
        }
        let t = unsafe { CStr::from_ptr(text) }.to_str().map_err(|e| {
            Failure::invalid(format!(
                "{F}: `text` must be UTF-8 (a find text is 1 to {} bytes of UTF-8 without control characters): {e}",
                telha_jobs_core::find::MAX_FIND_TEXT_LEN
            ))
        })?;
        let scope = match boundary::opt_string(F, "scope", scope)? {
            Some(s) => Some(s.parse()?),
            None => None,
        };
        let result_out = out(F, "result_out", result_out)?;
        let query = FindQuery {
            text: t.to_string(),
            scope,
            limit: if limit == 0 {
                telha_jobs_core::find::DEFAULT_FIND_LIMIT
            } else {
                limit
            },
        };
        let r = q.queue.find(&query)?;
        let found = tj_find_result {
            by_id: r.by_id.map(tj_job_info::new),
            by_key: r.by_key.map(tj_job_info::new),
            by_tag: tj_list_page::new(r.by_tag),
        };
        write(result_out, Box::into_raw(Box::new(found)));
        Ok(())
    })
}

/// Free a find result and everything borrowed from it. NULL does nothing.
///
/// # Safety
/// `result` is NULL or a `tj_find_result` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_find_result_free(result: *mut tj_find_result) {
    boundary::free_box(result);
}

/// The job whose id the text is (borrowed from the result: never free it),
/// or NULL when no job has that id (in the scope asked) or `result` is
/// NULL.
///
/// # Safety
/// `result` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_find_result_by_id(result: *const tj_find_result) -> *const tj_job_info {
    unsafe { result.as_ref() }
        .and_then(|r| r.by_id.as_ref())
        .map_or(std::ptr::null(), |j| j as *const tj_job_info)
}

/// The job holding the text as its idempotency key in the scope asked
/// (borrowed), or NULL when none does or `result` is NULL.
///
/// # Safety
/// `result` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_find_result_by_key(
    result: *const tj_find_result,
) -> *const tj_job_info {
    unsafe { result.as_ref() }
        .and_then(|r| r.by_key.as_ref())
        .map_or(std::ptr::null(), |j| j as *const tj_job_info)
}

/// The first page of the jobs carrying the text as a tag (borrowed: read
/// it with `tj_list_page_len` / `_get` / `_next`, never free it; empty
/// when none does), or NULL when `result` is NULL.
///
/// # Safety
/// `result` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_find_result_by_tag(
    result: *const tj_find_result,
) -> *const tj_list_page {
    unsafe { result.as_ref() }.map_or(std::ptr::null(), |r| &r.by_tag as *const tj_list_page)
}
