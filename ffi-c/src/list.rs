//! `tj_list_options` and `tj_list_page`: listing jobs, a page at a time.

use std::ffi::{c_char, CString};

use telha_jobs_core::{KindPattern, ListPage, ListQuery, Scope};

use crate::boundary::{self, cstring, handle, handle_mut, string};
use crate::error::{tj_error, Failure};
use crate::id::tj_id;
use crate::job_info::tj_job_info;
use crate::status::{state_from_u32, tj_status};

/// A list query: filters, page size and the cursor. Owned by the caller
/// (`tj_list_options_new` / `tj_list_options_free`). Not thread-safe while
/// being set.
#[allow(non_camel_case_types)]
pub struct tj_list_options {
    pub(crate) query: ListQuery,
}

/// One page of `tj_queue_list`: job infos in key order (scope, state,
/// priority, time), the cursor of the next page, and how many rows did not
/// decode. Owned by the caller (`tj_list_page_free`); everything borrowed
/// from it lives until then. Immutable: readable from many threads.
#[allow(non_camel_case_types)]
pub struct tj_list_page {
    jobs: Vec<tj_job_info>,
    next: Option<CString>,
    corrupt: usize,
}

impl tj_list_page {
    pub(crate) fn new(page: ListPage) -> Self {
        tj_list_page {
            jobs: page.jobs.into_iter().map(tj_job_info::new).collect(),
            next: page.next.as_deref().map(cstring),
            corrupt: page.corrupt.len(),
        }
    }
}

/// New list options: every state, scope and kind, 100 per page, from the start. Never NULL.
#[no_mangle]
pub extern "C" fn tj_list_options_new() -> *mut tj_list_options {
    Box::into_raw(Box::new(tj_list_options {
        query: ListQuery::default(),
    }))
}

/// Free list options. NULL does nothing.
///
/// # Safety
/// `options` is NULL or a `tj_list_options` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_free(options: *mut tj_list_options) {
    boundary::free_box(options);
}

/// Only jobs in `state` (a `tj_state`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_ARGUMENT` for a
/// number that is not a `tj_state`.
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_set_state(
    options: *mut tj_list_options,
    state: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_list_options_set_state";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let s = state_from_u32(state)
            .ok_or_else(|| Failure::invalid(format!("{F}: {state} is not a tj_state")))?;
        o.query.state = Some(s);
        Ok(())
    })
}

/// Only jobs of tenant `scope` (UUID text).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a malformed UUID.
///
/// # Safety
/// `options` is NULL or live; `scope` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_set_scope(
    options: *mut tj_list_options,
    scope: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_list_options_set_scope";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let s: Scope = string(F, "scope", scope)?.parse()?;
        o.query.scope = Some(s);
        Ok(())
    })
}

/// Only jobs whose kind matches `kind` (exact, or a family `"ingest:*"`).
/// Filtered as rows are read, so a rare kind can give short pages.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a malformed pattern.
///
/// # Safety
/// `options` is NULL or live; `kind` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_set_kind(
    options: *mut tj_list_options,
    kind: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_list_options_set_kind";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let k: KindPattern = string(F, "kind", kind)?.parse()?;
        o.query.kind = Some(k);
        Ok(())
    })
}

/// Only jobs enqueued by the schedule named `name` (copied; they stay
/// listable after the schedule is deleted). Filtered as rows are read, so
/// pages can be short.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for an empty name (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `name` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_set_schedule(
    options: *mut tj_list_options,
    name: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_list_options_set_schedule";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let name = string(F, "name", name)?;
        if name.is_empty() {
            return Err(Failure::invalid(format!("{F}: the schedule name is empty")));
        }
        o.query.schedule = Some(name.to_string());
        Ok(())
    })
}

/// Only the follow-up jobs of job `*parent` (those its completion
/// enqueued, `tj_queue_complete_then`); `parent` is copied. Filtered as
/// rows are read, so pages can be short.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, parent).
///
/// # Safety
/// `options` and `parent` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_set_parent(
    options: *mut tj_list_options,
    parent: *const tj_id,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_list_options_set_parent";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let p = *handle(F, "parent", parent)?;
        o.query.parent = Some(p.into());
        Ok(())
    })
}

/// The most jobs per page: 1 to `TJ_MAX_LIST_LIMIT` (checked by
/// `tj_queue_list`; default 100).
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_set_limit(
    options: *mut tj_list_options,
    limit: usize,
) -> tj_status {
    const F: &str = "tj_list_options_set_limit";
    boundary::run(F, std::ptr::null_mut(), || {
        handle_mut(F, "options", options)?.query.limit = limit;
        Ok(())
    })
}

/// Start after `cursor`: the `tj_list_page_next` of the previous page
/// (copied, so the page may be freed). NULL starts from the beginning.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_UTF8`.
/// A malformed cursor is reported by `tj_queue_list`.
///
/// # Safety
/// `options` is NULL or live; `cursor` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_set_after(
    options: *mut tj_list_options,
    cursor: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_list_options_set_after";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        o.query.after = boundary::opt_string(F, "cursor", cursor)?.map(str::to_string);
        Ok(())
    })
}

/// Free a page and every job info borrowed from it. NULL does nothing.
///
/// # Safety
/// `page` is NULL or a `tj_list_page` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_list_page_free(page: *mut tj_list_page) {
    boundary::free_box(page);
}

/// How many jobs the page holds (0 for NULL).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_list_page_len(page: *const tj_list_page) -> usize {
    unsafe { page.as_ref() }.map_or(0, |p| p.jobs.len())
}

/// Job `index` of the page, borrowed from the page (never free it), or NULL
/// when `page` is NULL or `index >= tj_list_page_len(page)`.
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_list_page_get(
    page: *const tj_list_page,
    index: usize,
) -> *const tj_job_info {
    unsafe { page.as_ref() }
        .and_then(|p| p.jobs.get(index))
        .map_or(std::ptr::null(), |j| j as *const tj_job_info)
}

/// The cursor of the next page (borrowed; pass it to
/// `tj_list_options_set_after`), or NULL at the end. A page may hold fewer
/// than `limit` jobs and still have a next one.
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_list_page_next(page: *const tj_list_page) -> *const c_char {
    unsafe { page.as_ref() }
        .and_then(|p| p.next.as_ref())
        .map_or(std::ptr::null(), |c| c.as_ptr())
}

/// How many rows in the page's range did not decode (skipped, not returned).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_list_page_corrupt_count(page: *const tj_list_page) -> usize {
    unsafe { page.as_ref() }.map_or(0, |p| p.corrupt)
}

pub(crate) fn query(func: &str, options: *const tj_list_options) -> Result<ListQuery, Failure> {
    if options.is_null() {
        return Ok(ListQuery::default());
    }
    handle(func, "options", options).map(|o| o.query.clone())
}
