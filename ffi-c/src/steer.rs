//! Steering waiting jobs (issue 44): `tj_queue_promote`,
//! `tj_queue_reschedule`, `tj_queue_set_priority`. Each moves a pending or
//! failed job within its state; a move that changes nothing writes nothing
//! and succeeds.

use crate::boundary::{self};
use crate::control::id_of;
use crate::error::{tj_error, Failure};
use crate::id::tj_id;
use crate::queue::{q, tj_queue};
use crate::status::tj_status;

/// Make job `*id`, delayed or failed and waiting for its retry, ready now
/// (its state is kept: a failed job is leased as a retry). A job already
/// due is left as it is (`TJ_STATUS_OK`, nothing written).
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, id), `TJ_STATUS_NOT_FOUND`,
/// `TJ_STATUS_WRONG_STATE` (leased, completed, dead or cancelled:
/// untouched), `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `id` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_promote(
    queue: *const tj_queue,
    id: *const tj_id,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_promote";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let id = id_of(F, id)?;
        q.queue.promote(&id)?;
        Ok(())
    })
}

/// Give the pending or failed job `*id` a new run time, `run_at_ms` (ms
/// since the epoch). In the future a ready job becomes delayed; in the
/// past a delayed one becomes ready. The same time: nothing written.
///
/// Blocks for one RocksDB write.
///
/// Errors: as `tj_queue_promote`; `TJ_STATUS_INVALID_ARGUMENT` for a time
/// after 9999-12-31T23:59:59.999Z (nothing written).
///
/// # Safety
/// `queue` and `id` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_reschedule(
    queue: *const tj_queue,
    id: *const tj_id,
    run_at_ms: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_reschedule";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let id = id_of(F, id)?;
        q.queue.reschedule(&id, run_at_ms)?;
        Ok(())
    })
}

/// Give the pending or failed job `*id` a new priority, 0 (most urgent) to
/// 255; its time, so its place among jobs of that priority, is kept. The
/// same priority: nothing written.
///
/// Blocks for one RocksDB write.
///
/// Errors: as `tj_queue_promote`; `TJ_STATUS_INVALID_ARGUMENT` for a
/// priority over 255 (nothing written).
///
/// # Safety
/// `queue` and `id` are NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_set_priority(
    queue: *const tj_queue,
    id: *const tj_id,
    priority: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_set_priority";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let id = id_of(F, id)?;
        let p = u8::try_from(priority).map_err(|_| {
            Failure::invalid(format!("{F}: priority must be 0 to 255, got {priority}"))
        })?;
        q.queue.set_priority(&id, p)?;
        Ok(())
    })
}
