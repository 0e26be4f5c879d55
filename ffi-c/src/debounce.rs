//! Debounce on an enqueue (`debounce_ms` / `debounce_max_ms` with an
//! idempotency key, issue 44).

use std::time::Duration;

use crate::boundary::{self, handle_mut};
use crate::enqueue_options::tj_enqueue_options;
use crate::status::tj_status;

/// Debounce of `debounce_ms` on the idempotency key (which it needs,
/// checked at enqueue): the job runs that many ms after the latest enqueue
/// of the key. While the key's job is pending, a repeat replaces its
/// payload and moves its run time to now + `debounce_ms` (the answer is
/// that job, `created` false); once it was leased or finished, a repeat
/// makes a new job. At enqueue: 0, over `TJ_MAX_DURATION_MS`, no key, or
/// together with a run-at, a delay or `unique_for_ms` is
/// `TJ_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_debounce_ms(
    options: *mut tj_enqueue_options,
    debounce_ms: u64,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_debounce_ms";
    boundary::run(F, std::ptr::null_mut(), || {
        handle_mut(F, "options", options)?.options.debounce =
            Some(Duration::from_millis(debounce_ms));
        Ok(())
    })
}

/// The longest a debounced job waits: its run time never moves past its
/// first enqueue + `debounce_max_ms` (not set: no bound). At enqueue:
/// without `debounce_ms` or under it is `TJ_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_debounce_max_ms(
    options: *mut tj_enqueue_options,
    debounce_max_ms: u64,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_debounce_max_ms";
    boundary::run(F, std::ptr::null_mut(), || {
        handle_mut(F, "options", options)?.options.debounce_max =
            Some(Duration::from_millis(debounce_max_ms));
        Ok(())
    })
}
