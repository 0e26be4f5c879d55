//! Job keys (issue 43: flow control by key): set on `tj_enqueue_options`,
//! read from a `tj_job` or `tj_job_info`, and the `ordered` flag of a
//! `tj_limit` (FIFO per key). `key:<k>` and `key:*` targets themselves go
//! through `tj_queue_set_limit` like every target.
//!
//! A key that is not UTF-8 is `TJ_STATUS_INVALID_ARGUMENT` (not
//! `TJ_STATUS_INVALID_UTF8`: the rule is part of what a key is), as a
//! tag's; nothing is changed.

use std::ffi::{c_char, CStr};

use crate::boundary::{self, get, handle_mut};
use crate::enqueue_options::tj_enqueue_options;
use crate::error::{tj_error, Failure};
use crate::flow::tj_limit;
use crate::job::tj_job;
use crate::job_info::tj_job_info;
use crate::status::tj_status;

/// Set the job's key (copied; a second call replaces it): 1 to
/// `TJ_MAX_JOB_KEY_LEN` bytes of UTF-8 without control characters, per
/// scope (checked here). `key:<k>` and `key:*` limits count the job; an
/// ordered one leases a key's jobs in enqueue order. Follow-ups take it
/// like every option.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, key),
/// `TJ_STATUS_INVALID_ARGUMENT` for a key that is empty, too long, holds a
/// control character or is not UTF-8 (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `key` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_key(
    options: *mut tj_enqueue_options,
    key: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_key";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        if key.is_null() {
            return Err(boundary::null(F, "key"));
        }
        let k = unsafe { CStr::from_ptr(key) }.to_str().map_err(|e| {
            Failure::invalid(format!(
                "{F}: `key` must be UTF-8 (a job key is 1 to {} bytes of UTF-8 without control characters): {e}",
                telha_jobs_core::flow::MAX_KEY_LEN
            ))
        })?;
        telha_jobs_core::flow::validate_key(k)?;
        o.options.key = Some(k.to_string());
        Ok(())
    })
}

/// FIFO per key: the limit's key (or each key, for `key:*`) leases its
/// jobs one at a time, strictly in enqueue order; a job waiting for a
/// retry holds its key until it ends. Only on `key:<k>` and `key:*`
/// targets with a concurrency of 1 (checked by `tj_queue_set_limit`:
/// `TJ_STATUS_INVALID_ARGUMENT` otherwise). `false` clears it.
///
/// # Safety
/// `limit` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_limit_set_ordered(limit: *mut tj_limit, ordered: bool) -> tj_status {
    crate::flow::set("tj_limit_set_ordered", limit, |l| l.ordered = ordered)
}

/// The leased job's key (NUL-terminated, borrowed until `tj_job_free`);
/// NULL when it has none or for NULL.
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_key(job: *const tj_job) -> *const c_char {
    get(job, std::ptr::null(), |j| {
        j.key_text().map_or(std::ptr::null(), |k| k.as_ptr())
    })
}

/// The job's key (borrowed from `info`); NULL when it has none or for
/// NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_key(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |j| {
        j.key_text.as_ref().map_or(std::ptr::null(), |k| k.as_ptr())
    })
}
