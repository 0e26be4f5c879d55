//! `tj_batch`: jobs collected for one atomic `tj_queue_enqueue_many`.

use std::ffi::c_char;

use telha_jobs_core::limits::MAX_PAYLOAD_BYTES_LIMIT;
use telha_jobs_core::{EnqueueOptions, NewJob};

use crate::boundary::{self, bytes, handle_mut, string};
use crate::enqueue_options::tj_enqueue_options;
use crate::error::tj_error;
use crate::status::tj_status;

/// A list of jobs to enqueue in one atomic batch. Owned by the caller
/// (`tj_batch_new` / `tj_batch_free`); `tj_batch_add` copies its arguments.
/// Not thread-safe while being filled.
#[allow(non_camel_case_types)]
pub struct tj_batch {
    pub(crate) jobs: Vec<NewJob>,
}

/// A new, empty batch. Never NULL.
#[no_mangle]
pub extern "C" fn tj_batch_new() -> *mut tj_batch {
    Box::into_raw(Box::new(tj_batch { jobs: Vec::new() }))
}

/// Free a batch. NULL does nothing.
///
/// # Safety
/// `batch` is NULL or a `tj_batch` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_batch_free(batch: *mut tj_batch) {
    boundary::free_box(batch);
}

/// Add a job: `kind`, `payload_len` bytes at `payload` (NULL allowed when the
/// length is 0), and `options` (NULL for the defaults). Everything is copied.
/// The kind and sizes are checked by `tj_queue_enqueue_many`, which rejects
/// the whole batch when one job is invalid.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (batch, kind, payload with a non-zero
/// length), `TJ_STATUS_INVALID_UTF8` (kind), `TJ_STATUS_INVALID_ARGUMENT`
/// for a length over `TJ_MAX_PAYLOAD_BYTES_LIMIT` (1 GiB, the hard payload
/// ceiling; the memory is not read).
///
/// # Safety
/// `batch` is NULL or live; `kind` is NULL or NUL-terminated; `payload` is
/// NULL or holds `payload_len` readable bytes; `options` is NULL or live;
/// `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_batch_add(
    batch: *mut tj_batch,
    kind: *const c_char,
    payload: *const u8,
    payload_len: usize,
    options: *const tj_enqueue_options,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_batch_add";
    boundary::run(F, err, || {
        let b = handle_mut(F, "batch", batch)?;
        let kind = string(F, "kind", kind)?;
        let payload = bytes(F, "payload", payload, payload_len, MAX_PAYLOAD_BYTES_LIMIT)?;
        let options = unsafe { options.as_ref() }
            .map(|o| o.options.clone())
            .unwrap_or_else(EnqueueOptions::default);
        b.jobs.push(NewJob::new(kind, payload).with(options));
        Ok(())
    })
}

/// How many jobs the batch holds (0 for NULL).
///
/// # Safety
/// `batch` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_batch_len(batch: *const tj_batch) -> usize {
    unsafe { batch.as_ref() }.map_or(0, |b| b.jobs.len())
}

/// Empty the batch, to fill it again. NULL does nothing.
///
/// # Safety
/// `batch` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_batch_clear(batch: *mut tj_batch) {
    if let Some(b) = unsafe { batch.as_mut() } {
        b.jobs.clear();
    }
}
