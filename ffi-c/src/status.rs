//! `tj_status`: what every fallible call returns, and `tj_state`.

use std::ffi::c_char;

use telha_jobs_core::{ErrorKind, State};

/// What a call did. `TJ_STATUS_OK` is 0; every other value is an error whose
/// message, when the caller passed a `tj_error **`, is in the `tj_error`.
///
/// The numbers are part of the ABI: they are never renumbered or reused. The
/// core's error kinds are 1-99 (in the order of the core's `ErrorKind::ALL`);
/// errors the C boundary itself detects are 100 and up.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tj_status {
    /// Success.
    TJ_STATUS_OK = 0,
    /// Bad input: kind syntax, sizes, ids, options, config, a closed range.
    TJ_STATUS_INVALID_ARGUMENT = 1,
    /// No such job (or no store, for a read-only open).
    TJ_STATUS_NOT_FOUND = 2,
    /// The lease is lost (stale token): nothing changed; stop working on the job.
    TJ_STATUS_ABORTED = 3,
    /// Another process owns the store; the message names the path and owner.
    TJ_STATUS_STORE_LOCKED = 4,
    /// RocksDB or the filesystem failed.
    TJ_STATUS_STORAGE = 5,
    /// Bytes on disk do not decode.
    TJ_STATUS_CORRUPTION = 6,
    /// The queue was closed (before or during the call).
    TJ_STATUS_CLOSED = 7,
    /// The store was written in a format this library cannot open (by a
    /// newer version); nothing in it was changed. The message names the
    /// store's format and what this library supports.
    TJ_STATUS_UNSUPPORTED_FORMAT = 8,
    /// The job was cancelled: a heartbeat answers it for a lease whose job
    /// has a cancel request (stop working on it), and a settle call answers
    /// it after recording the job `cancelled`.
    TJ_STATUS_CANCELLED = 9,
    /// The job is in a state the call does not apply to (cancelling a
    /// finished job, deleting a leased one): nothing changed.
    TJ_STATUS_WRONG_STATE = 10,
    /// The call could not be answered now and may succeed if repeated:
    /// a write whose outcome is unknown fenced the queue (every later call
    /// answers this too; close it and open the store again). Retryable.
    TJ_STATUS_UNAVAILABLE = 11,
    /// A required pointer argument was NULL; the message names it.
    TJ_STATUS_NULL_ARGUMENT = 100,
    /// A string argument was not valid UTF-8; the message names it.
    TJ_STATUS_INVALID_UTF8 = 101,
    /// A bug: the library panicked. The panic was caught at the boundary; the
    /// queue stays usable, but please report the message.
    TJ_STATUS_PANIC = 102,
    /// Nothing happened within the call's timeout: `tj_events_next` had no
    /// event to give (the subscription goes on; call it again). Not a
    /// fault, but reported as the other statuses are (with a `tj_error`
    /// when one was asked for).
    TJ_STATUS_TIMED_OUT = 103,
}

impl tj_status {
    /// Every status, for `tj_status_name` and the tests.
    pub(crate) const ALL: [tj_status; 16] = [
        tj_status::TJ_STATUS_OK,
        tj_status::TJ_STATUS_INVALID_ARGUMENT,
        tj_status::TJ_STATUS_NOT_FOUND,
        tj_status::TJ_STATUS_ABORTED,
        tj_status::TJ_STATUS_STORE_LOCKED,
        tj_status::TJ_STATUS_STORAGE,
        tj_status::TJ_STATUS_CORRUPTION,
        tj_status::TJ_STATUS_CLOSED,
        tj_status::TJ_STATUS_UNSUPPORTED_FORMAT,
        tj_status::TJ_STATUS_CANCELLED,
        tj_status::TJ_STATUS_WRONG_STATE,
        tj_status::TJ_STATUS_UNAVAILABLE,
        tj_status::TJ_STATUS_NULL_ARGUMENT,
        tj_status::TJ_STATUS_INVALID_UTF8,
        tj_status::TJ_STATUS_PANIC,
        tj_status::TJ_STATUS_TIMED_OUT,
    ];

    /// The one table from core error kinds to C statuses.
    pub(crate) fn from_kind(k: ErrorKind) -> tj_status {
        match k {
            ErrorKind::InvalidArgument => tj_status::TJ_STATUS_INVALID_ARGUMENT,
            ErrorKind::NotFound => tj_status::TJ_STATUS_NOT_FOUND,
            ErrorKind::Aborted => tj_status::TJ_STATUS_ABORTED,
            ErrorKind::StoreLocked => tj_status::TJ_STATUS_STORE_LOCKED,
            ErrorKind::Storage => tj_status::TJ_STATUS_STORAGE,
            ErrorKind::Corruption => tj_status::TJ_STATUS_CORRUPTION,
            ErrorKind::Closed => tj_status::TJ_STATUS_CLOSED,
            ErrorKind::UnsupportedFormat => tj_status::TJ_STATUS_UNSUPPORTED_FORMAT,
            ErrorKind::Cancelled => tj_status::TJ_STATUS_CANCELLED,
            ErrorKind::WrongState => tj_status::TJ_STATUS_WRONG_STATE,
            ErrorKind::Unavailable => tj_status::TJ_STATUS_UNAVAILABLE,
            // ErrorKind is non_exhaustive: a kind added to the core before
            // this table learns it still reaches C as a storage failure.
            _ => tj_status::TJ_STATUS_STORAGE,
        }
    }

    fn name(self) -> &'static std::ffi::CStr {
        match self {
            tj_status::TJ_STATUS_OK => c"OK",
            tj_status::TJ_STATUS_INVALID_ARGUMENT => c"INVALID_ARGUMENT",
            tj_status::TJ_STATUS_NOT_FOUND => c"NOT_FOUND",
            tj_status::TJ_STATUS_ABORTED => c"ABORTED",
            tj_status::TJ_STATUS_STORE_LOCKED => c"STORE_LOCKED",
            tj_status::TJ_STATUS_STORAGE => c"STORAGE",
            tj_status::TJ_STATUS_CORRUPTION => c"CORRUPTION",
            tj_status::TJ_STATUS_CLOSED => c"CLOSED",
            tj_status::TJ_STATUS_UNSUPPORTED_FORMAT => c"UNSUPPORTED_FORMAT",
            tj_status::TJ_STATUS_CANCELLED => c"CANCELLED",
            tj_status::TJ_STATUS_WRONG_STATE => c"WRONG_STATE",
            tj_status::TJ_STATUS_UNAVAILABLE => c"UNAVAILABLE",
            tj_status::TJ_STATUS_NULL_ARGUMENT => c"NULL_ARGUMENT",
            tj_status::TJ_STATUS_INVALID_UTF8 => c"INVALID_UTF8",
            tj_status::TJ_STATUS_PANIC => c"PANIC",
            tj_status::TJ_STATUS_TIMED_OUT => c"TIMED_OUT",
        }
    }
}

/// The stable name of `status` (`"OK"`, `"ABORTED"`, ... the same codes as
/// the Node binding's `code`), or `"UNKNOWN"` for a number that is not a
/// `tj_status`. Static storage: never free it. Thread-safe; never fails.
#[no_mangle]
pub extern "C" fn tj_status_name(status: u32) -> *const c_char {
    tj_status::ALL
        .iter()
        .find(|s| **s as u32 == status)
        .map_or(c"UNKNOWN", |s| s.name())
        .as_ptr()
}

/// A job's state. The numbers equal the core's state bytes and never change.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tj_state {
    /// Not a state this library knows (never stored; `tj_state_name` says
    /// `"unknown"`).
    TJ_STATE_UNKNOWN = 0,
    /// Waiting for a worker; leasable from its ready-at.
    TJ_STATE_PENDING = 1,
    /// Held by a worker until its lease deadline.
    TJ_STATE_LEASED = 2,
    /// Failed retryably; leasable again from its retry-at.
    TJ_STATE_FAILED = 3,
    /// Done; pruned after the completed retention.
    TJ_STATE_COMPLETED = 4,
    /// Out of attempts or failed as not retryable; kept until an operator retry.
    TJ_STATE_DEAD = 5,
    /// Cancelled by an operator or program; never retried; pruned after the
    /// cancelled retention.
    TJ_STATE_CANCELLED = 6,
    /// A fan-in parent waiting on its children (`tj_enqueue_options_add_after`,
    /// `tj_queue_enqueue_group`): never leased; pending once every child
    /// finished.
    TJ_STATE_WAITING = 7,
}

impl From<State> for tj_state {
    fn from(s: State) -> Self {
        match s {
            State::Pending => tj_state::TJ_STATE_PENDING,
            State::Leased => tj_state::TJ_STATE_LEASED,
            State::Failed => tj_state::TJ_STATE_FAILED,
            State::Completed => tj_state::TJ_STATE_COMPLETED,
            State::Dead => tj_state::TJ_STATE_DEAD,
            State::Cancelled => tj_state::TJ_STATE_CANCELLED,
            State::Waiting => tj_state::TJ_STATE_WAITING,
            // A state this library does not number yet reads as 0 (no tj_state).
            _ => tj_state::TJ_STATE_UNKNOWN,
        }
    }
}

/// The core state for a number from C, or `None` when it is not a `tj_state`.
pub(crate) fn state_from_u32(v: u32) -> Option<State> {
    State::ALL
        .into_iter()
        .find(|s| v != 0 && tj_state::from(*s) as u32 == v)
}

/// The lowercase name of `state` (`"pending"`, ... `"waiting"`), or `"unknown"`
/// for a number that is not a `tj_state`. Static storage: never free it.
#[no_mangle]
pub extern "C" fn tj_state_name(state: u32) -> *const c_char {
    match state_from_u32(state) {
        Some(State::Pending) => c"pending",
        Some(State::Leased) => c"leased",
        Some(State::Failed) => c"failed",
        Some(State::Completed) => c"completed",
        Some(State::Dead) => c"dead",
        Some(State::Cancelled) => c"cancelled",
        Some(State::Waiting) => c"waiting",
        _ => c"unknown",
    }
    .as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_core_error_kind_maps_to_its_numbered_status() {
        for (i, k) in ErrorKind::ALL.into_iter().enumerate() {
            let s = tj_status::from_kind(k);
            assert_eq!(s as u32, i as u32 + 1, "{k:?}");
            let name = unsafe { std::ffi::CStr::from_ptr(tj_status_name(s as u32)) };
            assert_eq!(name.to_str().unwrap(), k.code());
        }
    }

    #[test]
    fn each_core_state_has_its_byte_and_name() {
        for s in State::ALL {
            let n = tj_state::from(s) as u32;
            assert_eq!(n, u32::from(s.byte()), "{s:?}");
            assert_eq!(state_from_u32(n), Some(s));
            let name = unsafe { std::ffi::CStr::from_ptr(tj_state_name(n)) };
            assert_eq!(name.to_str().unwrap(), s.as_str());
        }
    }

    #[test]
    fn unknown_numbers_have_a_name_too() {
        let name = unsafe { std::ffi::CStr::from_ptr(tj_status_name(9999)) };
        assert_eq!(name.to_str().unwrap(), "UNKNOWN");
        let name = unsafe { std::ffi::CStr::from_ptr(tj_state_name(0)) };
        assert_eq!(name.to_str().unwrap(), "unknown");
    }
}
