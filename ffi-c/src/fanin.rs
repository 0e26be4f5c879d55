//! Fan-in (issue 43): a job that waits on other jobs (`after`, set on
//! `tj_enqueue_options`), `tj_queue_enqueue_group` (children and their
//! waiting parent in one atomic batch), `tj_queue_results_of_children` (a
//! parent's children with their states and results, a `tj_children_page`
//! at a time) and `tj_job_info_fan_in`.

use std::ffi::{c_char, CString};

use telha_jobs_core::{ChildDeadPolicy, ChildPage, EnqueueOptions, NewJob};

use crate::batch::tj_batch;
use crate::boundary::{self, bytes, cstring, get, handle, handle_mut, opt_ptr, opt_string};
use crate::boundary::{out, string, write, write_opt};
use crate::encoding::tj_encoding;
use crate::enqueue_options::tj_enqueue_options;
use crate::error::{tj_error, Failure};
use crate::id::tj_id;
use crate::job_info::tj_job_info;
use crate::queue::{q, tj_queue};
use crate::status::{tj_state, tj_status};

/// What a child that did not complete (dead, cancelled, deleted) does to
/// its parent. The numbers never change.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tj_child_dead {
    /// The parent goes dead at once, its last error naming the child and
    /// the child's error (the default).
    TJ_CHILD_DEAD_FAIL = 1,
    /// The parent is cancelled at once, then its unfinished children (by
    /// the next reaper pass, or `tj_queue_reap`).
    TJ_CHILD_DEAD_CANCEL_REST = 2,
    /// The child counts as finished: the parent runs once every child
    /// finished, whatever the outcome.
    TJ_CHILD_DEAD_IGNORE = 3,
}

impl From<ChildDeadPolicy> for tj_child_dead {
    fn from(p: ChildDeadPolicy) -> Self {
        match p {
            ChildDeadPolicy::CancelRest => tj_child_dead::TJ_CHILD_DEAD_CANCEL_REST,
            ChildDeadPolicy::Ignore => tj_child_dead::TJ_CHILD_DEAD_IGNORE,
            _ => tj_child_dead::TJ_CHILD_DEAD_FAIL,
        }
    }
}

/// A fan-in parent's children (`tj_job_info_fan_in`). A plain value.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tj_fan_in {
    /// Children not finished yet (0 once the parent was released).
    pub unfinished: u64,
    /// Every child it waits on.
    pub total: u64,
    /// Its `tj_child_dead` policy.
    pub policy: u32,
}

/// Wait on job `*child` (copied): the job is enqueued `TJ_STATE_WAITING`
/// (counted, listed, cancellable, never leased) until every job added
/// this way has finished, then it becomes pending, in the same atomic
/// write as the last one's settle. Ids that already finished count as
/// done; an unknown id makes the enqueue `TJ_STATUS_NOT_FOUND` with
/// nothing written. At most 100,000 (checked at enqueue); not with a
/// debounce, nor on a follow-up (`tj_queue_complete_then`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, child).
///
/// # Safety
/// `options` and `child` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_add_after(
    options: *mut tj_enqueue_options,
    child: *const tj_id,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_add_after";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let c = *handle(F, "child", child)?;
        o.options.after.push(c.into());
        Ok(())
    })
}

/// What a child that did not complete does to this job: a `tj_child_dead`
/// (default `TJ_CHILD_DEAD_FAIL`). Only with `tj_enqueue_options_add_after`
/// or on a group's parent (else the enqueue is `TJ_STATUS_INVALID_ARGUMENT`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_ARGUMENT` for a
/// number that is not a `tj_child_dead` (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_on_child_dead(
    options: *mut tj_enqueue_options,
    policy: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_on_child_dead";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let p = ChildDeadPolicy::ALL
            .into_iter()
            .find(|p| tj_child_dead::from(*p) as u32 == policy)
            .ok_or_else(|| {
                Failure::invalid(format!(
                    "{F}: {policy} is not a tj_child_dead (1 fail, 2 cancel_rest, 3 ignore)"
                ))
            })?;
        o.options.on_child_dead = Some(p);
        Ok(())
    })
}

/// Enqueue the jobs of `children` (a `tj_batch`, copied; at least one)
/// and their parent (`kind`, `payload_len` bytes at `payload`, `options`:
/// as `tj_queue_enqueue` takes them; `options` may add older jobs with
/// `tj_enqueue_options_add_after` and set the policy) in one atomic write:
/// all or none. The parent waits (`TJ_STATE_WAITING`) until every child
/// finished. On success, when not NULL, `ids_out[i]` is child `i`'s id (an
/// array of `tj_batch_len(children)`) and `*parent_out` the parent's.
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, children, kind, payload with
/// a non-zero length), `TJ_STATUS_INVALID_UTF8` (kind),
/// `TJ_STATUS_INVALID_ARGUMENT` (no child, over `TJ_MAX_BATCH`, a parent
/// with an idempotency key, a uniqueness window or a debounce, and what
/// `tj_queue_enqueue_many` refuses; the message names the job),
/// `TJ_STATUS_NOT_FOUND` (an `after` id names no job), `TJ_STATUS_CLOSED`,
/// `TJ_STATUS_STORAGE`. Nothing is written on an error.
///
/// # Safety
/// `queue` and `children` are NULL or live (`children` not being changed
/// by another thread); `kind` is NULL or NUL-terminated; `payload` is NULL
/// or holds `payload_len` readable bytes; `options` is NULL or live;
/// `ids_out` is NULL or holds `tj_batch_len(children)` writable elements;
/// `parent_out` and `err` are NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tj_queue_enqueue_group(
    queue: *const tj_queue,
    children: *const tj_batch,
    kind: *const c_char,
    payload: *const u8,
    payload_len: usize,
    options: *const tj_enqueue_options,
    ids_out: *mut tj_id,
    parent_out: *mut tj_id,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_enqueue_group";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let kids = handle(F, "children", children)?;
        let kind = string(F, "kind", kind)?;
        let payload = bytes(F, "payload", payload, payload_len, q.max_payload)?;
        let options = unsafe { options.as_ref() }
            .map(|o| o.options.clone())
            .unwrap_or_else(EnqueueOptions::default);
        let parent = NewJob::new(kind, payload).with(options);
        let (ids, p) = q.queue.enqueue_group(kids.jobs.clone(), parent)?;
        if !ids_out.is_null() {
            for (i, e) in ids.iter().enumerate() {
                unsafe { ids_out.add(i).write(e.id.into()) };
            }
        }
        write_opt(parent_out, p.id.into());
        Ok(())
    })
}

/// One child of a `tj_children_page` (`tj_children_page_child`): its
/// pointers are borrowed from the page and valid until it is freed.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tj_child_result {
    /// The child's id.
    pub id: tj_id,
    /// Its `tj_state` now; `TJ_STATE_UNKNOWN` (0) when it was pruned,
    /// purged or deleted.
    pub state: u32,
    /// What its completion was given (not NUL-terminated), or NULL.
    pub result: *const u8,
    /// The length of `result` (0 when NULL).
    pub result_len: usize,
    /// How the result was made (a `tj_encoding`).
    pub result_encoding: u32,
    /// Its latest failure (a dead child's error), or NULL.
    pub last_error: *const c_char,
}

/// A page of `tj_queue_results_of_children`: children in enqueue order and
/// the cursor of the next page. Owned by the caller
/// (`tj_children_page_free`). Immutable: readable from many threads.
#[allow(non_camel_case_types)]
pub struct tj_children_page {
    page: ChildPage,
    errors: Vec<Option<CString>>,
    next: Option<CString>,
}

/// A page of `*parent`'s children (every job its `after` named, or its
/// group's children) in enqueue order, each with its state, result and
/// last error: what a parent's handler reads. `cursor`: NULL for the
/// first page, else the previous page's `tj_children_page_next`. `limit`:
/// 1 to `TJ_MAX_CHILDREN_PAGE`. On success `*page_out` is a new page the
/// caller frees; a job that waits on nothing has an empty one.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, parent, page_out),
/// `TJ_STATUS_INVALID_UTF8` (cursor), `TJ_STATUS_INVALID_ARGUMENT` (a
/// limit of 0 or over the maximum, a malformed cursor),
/// `TJ_STATUS_NOT_FOUND` (no such parent), `TJ_STATUS_CLOSED`,
/// `TJ_STATUS_STORAGE`.
///
/// # Safety
/// `queue` and `parent` are NULL or live; `cursor` is NULL or
/// NUL-terminated; `page_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_results_of_children(
    queue: *const tj_queue,
    parent: *const tj_id,
    cursor: *const c_char,
    limit: usize,
    page_out: *mut *mut tj_children_page,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_results_of_children";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let parent = *handle(F, "parent", parent)?;
        let cursor = opt_string(F, "cursor", cursor)?;
        let page_out = out(F, "page_out", page_out)?;
        let page = q.queue.results_of_children(&parent.into(), cursor, limit)?;
        let p = tj_children_page {
            errors: page
                .children
                .iter()
                .map(|c| c.last_error.as_deref().map(cstring))
                .collect(),
            next: page.next.as_deref().map(cstring),
            page,
        };
        write(page_out, Box::into_raw(Box::new(p)));
        Ok(())
    })
}

/// Free a page. NULL does nothing.
///
/// # Safety
/// `page` is NULL or a `tj_children_page` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_children_page_free(page: *mut tj_children_page) {
    boundary::free_box(page);
}

/// How many children the page holds (0 for NULL).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_children_page_len(page: *const tj_children_page) -> usize {
    get(page, 0, |p| p.page.children.len())
}

/// Child `index` of the page into `*child_out` (its pointers borrowed from
/// the page): true, or false (nothing written) for NULL or an index past
/// the end.
///
/// # Safety
/// `page` is NULL or live; `child_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_children_page_child(
    page: *const tj_children_page,
    index: usize,
    child_out: *mut tj_child_result,
) -> bool {
    let c = get(page, None, |p| {
        let c = p.page.children.get(index)?;
        let (result, result_len) = match &c.result {
            Some(r) => (r.as_ptr(), r.len()),
            None => (std::ptr::null(), 0),
        };
        Some(tj_child_result {
            id: c.id.into(),
            state: c.state.map_or(tj_state::TJ_STATE_UNKNOWN, tj_state::from) as u32,
            result,
            result_len,
            result_encoding: tj_encoding::from(c.result_encoding) as u32,
            last_error: opt_ptr(&p.errors[index]),
        })
    });
    match c {
        Some(c) if !child_out.is_null() => {
            write(child_out, c);
            true
        }
        _ => false,
    }
}

/// The cursor of the next page (borrowed: valid until the page is freed),
/// or NULL after the last page.
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_children_page_next(page: *const tj_children_page) -> *const c_char {
    get(page, std::ptr::null(), |p| opt_ptr(&p.next))
}

/// A fan-in parent's children into `*fan_in_out` (when not NULL): true
/// for a job enqueued with `after` or as a group's parent, false (nothing
/// written) for any other job, or for NULL.
///
/// # Safety
/// `info` is NULL or live; `fan_in_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_fan_in(
    info: *const tj_job_info,
    fan_in_out: *mut tj_fan_in,
) -> bool {
    match get(info, None, |i| i.info.fan_in) {
        Some(f) => {
            write_opt(
                fan_in_out,
                tj_fan_in {
                    unfinished: f.unfinished,
                    total: f.total,
                    policy: tj_child_dead::from(f.policy) as u32,
                },
            );
            true
        }
        None => false,
    }
}
