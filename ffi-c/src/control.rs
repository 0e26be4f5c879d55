//! Job control: `tj_queue_cancel`, `_cancel_many`, `_delete`, `_pause`,
//! `_resume` and `_paused` (settling forms — snooze, fail with a retry
//! delay — are in `settle.rs`).

use std::ffi::{c_char, CString};

use telha_jobs_core::{CancelFilter, CancelOutcome, JobId, KindPattern, PauseTarget, Scope};

use crate::boundary::{self, handle, opt_string, out, string, write, Res};
use crate::error::{tj_error, Failure};
use crate::id::tj_id;
use crate::queue::{q, tj_queue};
use crate::stats::paused_labels;
use crate::status::{state_from_u32, tj_status};

/// What `tj_queue_cancel` did.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tj_cancel_outcome {
    /// The job was pending, scheduled or failed: it is cancelled now.
    TJ_CANCEL_CANCELLED = 1,
    /// The job is leased: a durable cancel request is on it. Its holder's
    /// next heartbeat answers `TJ_STATUS_CANCELLED`; whatever it then
    /// submits, or the lease expiring, records the job cancelled.
    TJ_CANCEL_REQUESTED = 2,
}

/// What `tj_queue_cancel_many` did. A plain value.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct tj_cancel_report {
    /// Jobs cancelled at once (pending, scheduled, failed).
    pub cancelled: u64,
    /// Leased jobs that got a cancel request.
    pub requested: u64,
    /// Rows that matched but did not decode (kept, untouched).
    pub corrupt: u64,
}

pub(crate) fn id_of(func: &str, id: *const tj_id) -> Res<JobId> {
    Ok((*handle(func, "id", id)?).into())
}

/// Cancel job `*id`, recording `reason` (copied; NULL: empty). On success
/// `*outcome_out` (when not NULL) says whether it was cancelled at once or,
/// leased, got a cancel request.
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, id), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_NOT_FOUND` (no such job), `TJ_STATUS_WRONG_STATE` (completed,
/// dead or cancelled already: untouched), `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `id` are NULL or live; `reason` is NULL or NUL-terminated;
/// `outcome_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_cancel(
    queue: *const tj_queue,
    id: *const tj_id,
    reason: *const c_char,
    outcome_out: *mut tj_cancel_outcome,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_cancel";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let id = id_of(F, id)?;
        let reason = opt_string(F, "reason", reason)?.unwrap_or("");
        let o = match q.queue.cancel(&id, reason)? {
            CancelOutcome::Requested => tj_cancel_outcome::TJ_CANCEL_REQUESTED,
            _ => tj_cancel_outcome::TJ_CANCEL_CANCELLED,
        };
        boundary::write_opt(outcome_out, o);
        Ok(())
    })
}

/// Cancel every unfinished job matching all the given filters, in bounded
/// batches: `kind` an exact kind or `family:*` (NULL: any), `scope` a
/// tenant UUID (NULL: any), `state` a `tj_state` of pending, failed or
/// leased (0: all three), `reason` recorded on each (NULL: empty). Leased
/// jobs get a cancel request. On success `*report_out` (when not NULL)
/// holds the counts.
///
/// Blocks for one RocksDB write per batch.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` (malformed kind or scope, a state that is
/// not a `tj_state` or is finished), `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `kind`, `scope` and `reason` are NULL or
/// NUL-terminated; `report_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_cancel_many(
    queue: *const tj_queue,
    kind: *const c_char,
    scope: *const c_char,
    state: u32,
    reason: *const c_char,
    report_out: *mut tj_cancel_report,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_cancel_many";
    boundary::run(F, err, || {
        cancel_filtered(F, queue, None, kind, scope, state, reason, report_out)
    })
}

/// `tj_queue_cancel_many` of the jobs carrying `tag` (and matching the
/// other filters, as there): the tag index is walked a page of 1,000 rows
/// per atomic batch, O(jobs carrying the tag) whatever the store holds.
///
/// Errors: those of `tj_queue_cancel_many`, and `TJ_STATUS_NULL_ARGUMENT`
/// (tag), `TJ_STATUS_INVALID_ARGUMENT` for a bad tag (also one that is not
/// UTF-8, the tag's rule).
///
/// # Safety
/// As `tj_queue_cancel_many`; `tag` is NULL or NUL-terminated.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tj_queue_cancel_tag(
    queue: *const tj_queue,
    tag: *const c_char,
    kind: *const c_char,
    scope: *const c_char,
    state: u32,
    reason: *const c_char,
    report_out: *mut tj_cancel_report,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_cancel_tag";
    boundary::run(F, err, || {
        let t = crate::tags::text(F, "tag", tag)?;
        cancel_filtered(
            F,
            queue,
            Some(t.to_string()),
            kind,
            scope,
            state,
            reason,
            report_out,
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn cancel_filtered(
    func: &str,
    queue: *const tj_queue,
    tag: Option<String>,
    kind: *const c_char,
    scope: *const c_char,
    state: u32,
    reason: *const c_char,
    report_out: *mut tj_cancel_report,
) -> Res<()> {
    let q = q(func, queue)?;
    let kind = opt_string(func, "kind", kind)?
        .map(str::parse::<KindPattern>)
        .transpose()?;
    let scope = opt_string(func, "scope", scope)?
        .map(str::parse::<Scope>)
        .transpose()?;
    let state = match state {
        0 => None,
        n => Some(
            state_from_u32(n)
                .ok_or_else(|| Failure::invalid(format!("{func}: state {n} is not a tj_state")))?,
        ),
    };
    let reason = opt_string(func, "reason", reason)?.unwrap_or("").to_owned();
    let r = q.queue.cancel_many(&CancelFilter {
        kind,
        scope,
        state,
        reason,
        tag,
    })?;
    boundary::write_opt(
        report_out,
        tj_cancel_report {
            cancelled: r.cancelled,
            requested: r.requested,
            corrupt: r.corrupt,
        },
    );
    Ok(())
}

/// Delete job `*id` with all its index entries and events. A leased job is
/// refused: cancel it first.
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, id), `TJ_STATUS_NOT_FOUND`,
/// `TJ_STATUS_WRONG_STATE` (leased: untouched), `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `id` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_delete(
    queue: *const tj_queue,
    id: *const tj_id,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_delete";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let id = id_of(F, id)?;
        q.queue.delete(&id)?;
        Ok(())
    })
}

fn parse_target(func: &str, target: *const c_char) -> Res<PauseTarget> {
    Ok(PauseTarget::parse(string(func, "target", target)?)?)
}

/// Pause `target`: `"kind:<kind or family:*>"` or `"scope:<uuid>"`. Paused
/// work is never leased (running leases carry on); durable. On success
/// `*changed_out` (when not NULL) is false when it was paused already.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, target), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` (malformed target), `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `target` is NULL or NUL-terminated;
/// `changed_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_pause(
    queue: *const tj_queue,
    target: *const c_char,
    changed_out: *mut bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_pause";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let t = parse_target(F, target)?;
        boundary::write_opt(changed_out, q.queue.pause(&t)?);
        Ok(())
    })
}

/// Resume `target` (as `tj_queue_pause` names it); waiting lease calls wake.
/// `*changed_out` (when not NULL) is false when it was not paused.
///
/// Errors: as `tj_queue_pause`.
///
/// # Safety
/// As `tj_queue_pause`.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_resume(
    queue: *const tj_queue,
    target: *const c_char,
    changed_out: *mut bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_resume";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let t = parse_target(F, target)?;
        boundary::write_opt(changed_out, q.queue.resume(&t)?);
        Ok(())
    })
}

/// What is paused, as an owned list of labels (`tj_paused_free`).
#[allow(non_camel_case_types)]
pub struct tj_paused {
    labels: Vec<CString>,
}

/// What is paused now. On success `*paused_out` is a new `tj_paused` the
/// caller frees with `tj_paused_free`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, paused_out), `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `paused_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_paused(
    queue: *const tj_queue,
    paused_out: *mut *mut tj_paused,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_paused";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let paused_out = out(F, "paused_out", paused_out)?;
        let labels = paused_labels(&q.queue.paused()?);
        write(paused_out, Box::into_raw(Box::new(tj_paused { labels })));
        Ok(())
    })
}

/// How many targets are paused; 0 for NULL.
///
/// # Safety
/// `paused` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_paused_count(paused: *const tj_paused) -> usize {
    unsafe { paused.as_ref() }.map_or(0, |p| p.labels.len())
}

/// Paused target `index` (kinds first, sorted, then scopes) as its label,
/// borrowed from `paused`; NULL for NULL or an index past the end.
///
/// # Safety
/// `paused` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_paused_label(paused: *const tj_paused, index: usize) -> *const c_char {
    unsafe { paused.as_ref() }
        .and_then(|p| p.labels.get(index))
        .map_or(std::ptr::null(), |l| l.as_ptr())
}

/// Free a `tj_paused`. NULL does nothing.
///
/// # Safety
/// `paused` is NULL or a `tj_paused` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_paused_free(paused: *mut tj_paused) {
    boundary::free_box(paused);
}
