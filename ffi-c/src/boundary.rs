//! The boundary every exported function goes through: panics are caught and
//! become `TJ_STATUS_PANIC`, arguments from C are checked before use (NULL,
//! UTF-8, lengths), and an error is handed out through the optional
//! `tj_error **`.

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{tj_error, Failure};
use crate::status::tj_status;

pub(crate) type Res<T> = Result<T, Failure>;

/// Run `body` inside a panic boundary. On failure, when `err_out` is not
/// NULL, a new `tj_error` is written through it (the caller owns it); on
/// success `err_out` is left alone.
pub(crate) fn run(
    func: &'static str,
    err_out: *mut *mut tj_error,
    body: impl FnOnce() -> Res<()>,
) -> tj_status {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return tj_status::TJ_STATUS_OK,
        Ok(Err(f)) => f,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic".to_string());
            // Dropping a panic payload can itself panic; leak it instead.
            std::mem::forget(payload);
            Failure::new(
                tj_status::TJ_STATUS_PANIC,
                format!("{func}: telha-jobs panicked (a bug, please report it): {what}"),
            )
        }
    };
    let status = failure.status;
    if !err_out.is_null() {
        // Building the error only allocates; keep even that inside a boundary.
        if let Ok(e) = catch_unwind(AssertUnwindSafe(|| Box::new(failure.into_error()))) {
            unsafe { *err_out = Box::into_raw(e) };
        }
    }
    status
}

/// Run a body that cannot fail except by panicking (getters, frees): a
/// panic yields `fallback`.
pub(crate) fn run_infallible<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

pub(crate) fn null(func: &str, arg: &str) -> Failure {
    Failure::new(
        tj_status::TJ_STATUS_NULL_ARGUMENT,
        format!("{func}: argument `{arg}` is NULL"),
    )
}

/// A borrowed handle; NULL is `TJ_STATUS_NULL_ARGUMENT`.
pub(crate) fn handle<'a, T>(func: &str, arg: &str, p: *const T) -> Res<&'a T> {
    unsafe { p.as_ref() }.ok_or_else(|| null(func, arg))
}

/// A mutable handle; NULL is `TJ_STATUS_NULL_ARGUMENT`.
pub(crate) fn handle_mut<'a, T>(func: &str, arg: &str, p: *mut T) -> Res<&'a mut T> {
    unsafe { p.as_mut() }.ok_or_else(|| null(func, arg))
}

/// Check an out-parameter before any work is done, so a NULL out-pointer
/// fails fast instead of after a side effect.
pub(crate) fn out<T>(func: &str, arg: &str, p: *mut T) -> Res<*mut T> {
    if p.is_null() {
        Err(null(func, arg))
    } else {
        Ok(p)
    }
}

/// A NUL-terminated UTF-8 string; NULL and invalid UTF-8 are their own statuses.
pub(crate) fn string<'a>(func: &str, arg: &str, p: *const c_char) -> Res<&'a str> {
    if p.is_null() {
        return Err(null(func, arg));
    }
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|e| {
        Failure::new(
            tj_status::TJ_STATUS_INVALID_UTF8,
            format!("{func}: argument `{arg}` is not valid UTF-8: {e}"),
        )
    })
}

/// An optional string: NULL is `None`.
pub(crate) fn opt_string<'a>(func: &str, arg: &str, p: *const c_char) -> Res<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        string(func, arg, p).map(Some)
    }
}

/// `len` bytes at `p`, refusing lengths over `max` before the memory is
/// touched (so a huge length with a small buffer is an error, not a read
/// past its end). A zero length needs no pointer.
pub(crate) fn bytes<'a>(
    func: &str,
    arg: &str,
    p: *const u8,
    len: usize,
    max: usize,
) -> Res<&'a [u8]> {
    if len > max {
        return Err(Failure::invalid(format!(
            "{func}: `{arg}` of {len} bytes is over the limit of {max} bytes (max_payload_bytes)"
        )));
    }
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(func, arg));
    }
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// An array of `n` elements at `p`; a zero length needs no pointer.
pub(crate) fn slice<'a, T>(func: &str, arg: &str, p: *const T, n: usize) -> Res<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(func, arg));
    }
    if n > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(Failure::invalid(format!(
            "{func}: `{arg}` length {n} is too large"
        )));
    }
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Write `v` through an out-pointer already checked by [`out`].
pub(crate) fn write<T>(p: *mut T, v: T) {
    unsafe { p.write(v) }
}

/// Write through an optional out-pointer (NULL: the caller does not want it).
pub(crate) fn write_opt<T>(p: *mut T, v: T) {
    if !p.is_null() {
        unsafe { p.write(v) }
    }
}

/// A getter's body: `f` of the object behind `p` under the panic boundary,
/// or `fallback` when `p` is NULL (or `f` panics). The getter's caller
/// promises `p` is NULL or live.
pub(crate) fn get<H, T>(p: *const H, fallback: T, f: impl FnOnce(&H) -> T) -> T {
    match unsafe { p.as_ref() } {
        Some(h) => run_infallible(fallback, || f(h)),
        None => fallback,
    }
}

/// A borrowed pointer to an optional C string (NULL for none).
pub(crate) fn opt_ptr(s: &Option<std::ffi::CString>) -> *const std::ffi::c_char {
    s.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
}

/// Free a `Box` handed out to C; NULL is a no-op.
pub(crate) fn free_box<T>(p: *mut T) {
    if !p.is_null() {
        run_infallible((), || drop(unsafe { Box::from_raw(p) }));
    }
}

/// A Rust string as an owned NUL-terminated C string (interior NULs shown as `\0`).
pub(crate) fn cstring(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}
