//! Unique windows on an enqueue (`unique_for` with an idempotency key) and
//! `tj_unique_states`, which states of the window's job hold it.

use std::time::Duration;

use telha_jobs_core::UniqueStates;

use crate::boundary::{self, handle_mut};
use crate::enqueue_options::tj_enqueue_options;
use crate::error::{tj_error, Failure};
use crate::status::tj_status;

/// Which states of a unique window's job hold the window. The numbers
/// never change.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tj_unique_states {
    /// Whatever became of the job (completed, dead, cancelled, pruned):
    /// at most one job per window. The default.
    TJ_UNIQUE_STATES_ANY = 0,
    /// Only while the job is pending, leased or waiting for a retry; once
    /// it is finished the next enqueue makes a new job.
    TJ_UNIQUE_STATES_ACTIVE = 1,
}

/// A window of `unique_for_ms` on the idempotency key (which it needs,
/// checked at enqueue): a repeat of the key within that many ms of the
/// enqueue that opened the window answers that job (`created` false);
/// after it, a new job opens a new window. The window outlives the job's
/// record (the reaper deletes ended windows). At enqueue: 0, over
/// `TJ_MAX_DURATION_MS`, or no key is `TJ_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_unique_for_ms(
    options: *mut tj_enqueue_options,
    unique_for_ms: u64,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_unique_for_ms";
    boundary::run(F, std::ptr::null_mut(), || {
        handle_mut(F, "options", options)?.options.unique_for =
            Some(Duration::from_millis(unique_for_ms));
        Ok(())
    })
}

/// Which states hold the window: `states` is a `tj_unique_states`
/// (default `TJ_UNIQUE_STATES_ANY`); only with a `unique_for_ms`
/// (checked at enqueue).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_ARGUMENT`
/// for a number that is not a `tj_unique_states` (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_unique_states(
    options: *mut tj_enqueue_options,
    states: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_unique_states";
    boundary::run(F, err, || {
        const ANY: u32 = tj_unique_states::TJ_UNIQUE_STATES_ANY as u32;
        const ACTIVE: u32 = tj_unique_states::TJ_UNIQUE_STATES_ACTIVE as u32;
        let s = match states {
            ANY => UniqueStates::Any,
            ACTIVE => UniqueStates::Active,
            n => {
                return Err(Failure::invalid(format!(
                    "{F}: states {n} is not a tj_unique_states (0 any, 1 active)"
                )))
            }
        };
        handle_mut(F, "options", options)?.options.unique_states = Some(s);
        Ok(())
    })
}
