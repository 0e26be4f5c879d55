//! `tj_cancel`: ends lease waits from another thread.

use telha_jobs_core::CancelWait;

use crate::boundary;

/// A cancel token for lease waits (see `tj_lease_options_set_cancel`).
/// Thread-safe: cancel it from any thread while a lease call waits on
/// another. Owned by the caller (`tj_cancel_new` / `tj_cancel_free`).
#[allow(non_camel_case_types)]
pub struct tj_cancel {
    pub(crate) token: CancelWait,
}

/// A new token, not cancelled. Never NULL.
#[no_mangle]
pub extern "C" fn tj_cancel_new() -> *mut tj_cancel {
    Box::into_raw(Box::new(tj_cancel {
        token: CancelWait::new(),
    }))
}

/// Cancel: every lease wait using this token returns promptly with what it
/// has (usually no job, `TJ_STATUS_OK`). Permanent: later lease calls with
/// it do not wait. Idempotent; NULL does nothing. Never blocks.
///
/// # Safety
/// `cancel` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_cancel_cancel(cancel: *const tj_cancel) {
    if let Some(c) = unsafe { cancel.as_ref() } {
        boundary::run_infallible((), || c.token.cancel());
    }
}

/// Whether `tj_cancel_cancel` was called (false for NULL).
///
/// # Safety
/// `cancel` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_cancel_is_cancelled(cancel: *const tj_cancel) -> bool {
    unsafe { cancel.as_ref() }.is_some_and(|c| c.token.is_cancelled())
}

/// Free a token (lease options given it keep their own reference). NULL does nothing.
///
/// # Safety
/// `cancel` is NULL or a `tj_cancel` not freed before, and no thread is using it.
#[no_mangle]
pub unsafe extern "C" fn tj_cancel_free(cancel: *mut tj_cancel) {
    boundary::free_box(cancel);
}
