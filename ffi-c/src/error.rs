//! `tj_error`: the optional, owned error object carrying a message.
//!
//! No thread-local "last error": a call that fails writes a new `tj_error`
//! through its `tj_error **err` argument (when that is not NULL), and the
//! caller owns it.

use std::ffi::{c_char, CString};

use crate::status::tj_status;

/// An error: its status and a human-readable message. Created by a failing
/// call, owned by the caller, freed with `tj_error_free`. Immutable, so it
/// may be read from any thread.
#[allow(non_camel_case_types)]
pub struct tj_error {
    status: tj_status,
    message: CString,
}

/// Why a call failed, before it is handed to C.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: tj_status,
    pub message: String,
}

impl Failure {
    pub(crate) fn new(status: tj_status, message: impl Into<String>) -> Self {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Failure::new(tj_status::TJ_STATUS_INVALID_ARGUMENT, message)
    }

    pub(crate) fn into_error(self) -> tj_error {
        // A message with an interior NUL would be cut short by C; show it instead.
        let text = self.message.replace('\0', "\\0");
        tj_error {
            status: self.status,
            message: CString::new(text).unwrap_or_default(),
        }
    }
}

impl From<telha_jobs_core::Error> for Failure {
    fn from(e: telha_jobs_core::Error) -> Self {
        Failure::new(tj_status::from_kind(e.kind()), e.to_string())
    }
}

/// The status of `err`; `TJ_STATUS_NULL_ARGUMENT` when `err` is NULL.
/// Thread-safe; never fails.
///
/// # Safety
/// `err` is NULL or a live `tj_error` from this library.
#[no_mangle]
pub unsafe extern "C" fn tj_error_status(err: *const tj_error) -> tj_status {
    match unsafe { err.as_ref() } {
        Some(e) => e.status,
        None => tj_status::TJ_STATUS_NULL_ARGUMENT,
    }
}

/// The message of `err`: NUL-terminated UTF-8, borrowed from `err` and valid
/// until `tj_error_free(err)`. An empty string when `err` is NULL (never
/// NULL). Thread-safe.
///
/// # Safety
/// `err` is NULL or a live `tj_error` from this library.
#[no_mangle]
pub unsafe extern "C" fn tj_error_message(err: *const tj_error) -> *const c_char {
    match unsafe { err.as_ref() } {
        Some(e) => e.message.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// Free an error. `tj_error_free(NULL)` does nothing.
///
/// # Safety
/// `err` is NULL or a `tj_error` from this library not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_error_free(err: *mut tj_error) {
    if !err.is_null() {
        drop(unsafe { Box::from_raw(err) });
    }
}
