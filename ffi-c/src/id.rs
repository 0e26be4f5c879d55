//! `tj_id` and `tj_token`: plain values, copied freely.

use std::ffi::c_char;

use telha_jobs_core::{JobId, LeaseToken};

use crate::boundary::{self, out, string, write};
use crate::error::{tj_error, Failure};
use crate::status::tj_status;

/// The size of a buffer that holds a job id's text form with its NUL:
/// 36 characters of canonical UUID (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`) and 1.
pub const TJ_ID_STRLEN: usize = 37;

/// A job id: the 16 bytes of a UUIDv7 (time-ordered). A plain value: copy it,
/// compare it with `memcmp`, keep it as long as you like.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tj_id {
    /// The UUID's bytes, big-endian (as in RFC 9562).
    pub bytes: [u8; 16],
}

/// The proof of a lease: the job id and the lease generation it was granted
/// under. `extend`, `complete`, `fail` and `release` check the generation: a
/// token from an older lease of the job answers `TJ_STATUS_ABORTED`. A plain
/// value: copy it and keep it after the `tj_job` it came from is freed.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tj_token {
    /// The leased job.
    pub id: tj_id,
    /// The lease generation (every lease of a job bumps it).
    pub generation: u64,
}

impl From<JobId> for tj_id {
    fn from(id: JobId) -> Self {
        tj_id {
            bytes: *id.as_bytes(),
        }
    }
}

impl From<tj_id> for JobId {
    fn from(id: tj_id) -> Self {
        JobId::from_bytes(id.bytes)
    }
}

impl From<LeaseToken> for tj_token {
    fn from(t: LeaseToken) -> Self {
        tj_token {
            id: t.id.into(),
            generation: t.generation,
        }
    }
}

impl From<tj_token> for LeaseToken {
    fn from(t: tj_token) -> Self {
        LeaseToken {
            id: t.id.into(),
            generation: t.generation,
        }
    }
}

/// Parse a job id from its text form (the canonical UUID string; hyphens,
/// braces and `urn:uuid:` are accepted as the `uuid` crate reads them) into
/// `*id_out`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (text, id_out), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a malformed id. `*id_out` is written only
/// on success. Thread-safe; never blocks.
///
/// # Safety
/// `text` is NULL or NUL-terminated; `id_out` is NULL or writable;
/// `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_id_parse(
    text: *const c_char,
    id_out: *mut tj_id,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_id_parse";
    boundary::run(F, err, || {
        let text = string(F, "text", text)?;
        let id_out = out(F, "id_out", id_out)?;
        let id: JobId = text.parse().map_err(Failure::from)?;
        write(id_out, id.into());
        Ok(())
    })
}

/// Write the canonical text form of `*id` (36 characters and a NUL) into
/// `buf`, which holds `buf_len` bytes (at least `TJ_ID_STRLEN`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (id, buf), `TJ_STATUS_INVALID_ARGUMENT`
/// when `buf_len < TJ_ID_STRLEN` (nothing is written). Thread-safe.
///
/// # Safety
/// `id` is NULL or readable; `buf` is NULL or holds `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tj_id_format(
    id: *const tj_id,
    buf: *mut c_char,
    buf_len: usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_id_format";
    boundary::run(F, err, || {
        let id = *boundary::handle(F, "id", id)?;
        let buf = out(F, "buf", buf)?;
        if buf_len < TJ_ID_STRLEN {
            return Err(Failure::invalid(format!(
                "{F}: buf_len {buf_len} is under TJ_ID_STRLEN ({TJ_ID_STRLEN})"
            )));
        }
        let text = JobId::from(id).to_string();
        let dst = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), TJ_ID_STRLEN) };
        dst[..36].copy_from_slice(text.as_bytes());
        dst[36] = 0;
        Ok(())
    })
}
