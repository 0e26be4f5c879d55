//! `tj_job`: a leased job, as a worker sees it.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use telha_jobs_core::Job;

use crate::boundary::{self, cstring, get, write_opt};
use crate::encoding::tj_encoding;
use crate::id::{tj_id, tj_token};

/// A leased job (from `tj_queue_lease_next` / `tj_queue_lease_many`). Owned by
/// the caller: free it with `tj_job_free`. Every pointer a getter returns is
/// borrowed from the job and stays valid until `tj_job_free`. Immutable, so
/// it may be read from several threads at once (e.g. a heartbeat thread
/// reading its token while a worker reads its payload).
///
/// Getters given NULL return 0, an all-zero id/token, or NULL.
#[allow(non_camel_case_types)]
pub struct tj_job {
    pub(crate) job: Job,
    // The C strings are made on first use: a worker that reads only the
    // token and payload pays nothing for them on the hot lease path.
    id_text: OnceLock<CString>,
    kind: OnceLock<CString>,
    scope: OnceLock<CString>,
    worker_id: OnceLock<CString>,
    schedule_name: OnceLock<Option<CString>>,
    tag_texts: OnceLock<crate::tags::TagTexts>,
    key_text: OnceLock<Option<CString>>,
}

impl tj_job {
    pub(crate) fn new(job: Job) -> Self {
        tj_job {
            job,
            id_text: OnceLock::new(),
            kind: OnceLock::new(),
            scope: OnceLock::new(),
            worker_id: OnceLock::new(),
            schedule_name: OnceLock::new(),
            tag_texts: OnceLock::new(),
            key_text: OnceLock::new(),
        }
    }

    /// Its job key as a C string, made on first use.
    pub(crate) fn key_text(&self) -> Option<&CString> {
        self.key_text
            .get_or_init(|| self.job.key.as_deref().map(cstring))
            .as_ref()
    }

    /// Its tags and metadata as C strings, made on first use.
    pub(crate) fn tag_texts(&self) -> &crate::tags::TagTexts {
        self.tag_texts
            .get_or_init(|| crate::tags::TagTexts::new(&self.job.tags, &self.job.metadata))
    }
}

/// Free a job (its lease is unaffected: settle it first). NULL does nothing.
///
/// # Safety
/// `job` is NULL or a `tj_job` from this library not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_job_free(job: *mut tj_job) {
    boundary::free_box(job);
}

/// The lease token to pass to `tj_queue_extend`, `_complete`, `_fail` and `_release`.
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_token(job: *const tj_job) -> tj_token {
    let zero = tj_token {
        id: tj_id { bytes: [0; 16] },
        generation: 0,
    };
    get(job, zero, |j| j.job.token().into())
}

/// The job's id.
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_id(job: *const tj_job) -> tj_id {
    get(job, tj_id { bytes: [0; 16] }, |j| j.job.id.into())
}

/// The job's id as canonical UUID text (NUL-terminated, borrowed).
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_id_str(job: *const tj_job) -> *const c_char {
    get(job, std::ptr::null(), |j| {
        j.id_text
            .get_or_init(|| cstring(&j.job.id.to_string()))
            .as_ptr()
    })
}

/// The job's kind (NUL-terminated, borrowed).
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_kind(job: *const tj_job) -> *const c_char {
    get(job, std::ptr::null(), |j| {
        j.kind.get_or_init(|| cstring(&j.job.kind)).as_ptr()
    })
}

/// The tenant scope as canonical UUID text (the nil UUID is the system
/// scope; NUL-terminated, borrowed).
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_scope(job: *const tj_job) -> *const c_char {
    get(job, std::ptr::null(), |j| {
        j.scope
            .get_or_init(|| cstring(&j.job.scope.to_string()))
            .as_ptr()
    })
}

/// The worker id the lease was granted to (NUL-terminated, borrowed).
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_worker_id(job: *const tj_job) -> *const c_char {
    get(job, std::ptr::null(), |j| {
        j.worker_id
            .get_or_init(|| cstring(&j.job.worker_id))
            .as_ptr()
    })
}

/// The payload bytes as enqueued (borrowed; not NUL-terminated). Writes its
/// length to `*len_out` when `len_out` is not NULL. An empty payload gives a
/// non-NULL pointer and length 0; a NULL job gives NULL and length 0.
///
/// # Safety
/// `job` is NULL or a live `tj_job`; `len_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_job_payload(job: *const tj_job, len_out: *mut usize) -> *const u8 {
    let (p, n) = get(job, (std::ptr::null(), 0), |j| {
        (j.job.payload.as_ptr(), j.job.payload.len())
    });
    write_opt(len_out, n);
    p
}

/// Failed attempts so far (this lease is attempt `attempts + 1`).
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_attempts(job: *const tj_job) -> u32 {
    get(job, 0, |j| j.job.attempts)
}

/// The effective attempt ceiling (per job > per kind > global).
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_max_attempts(job: *const tj_job) -> u32 {
    get(job, 0, |j| j.job.max_attempts)
}

/// The lease generation (also in the token).
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_generation(job: *const tj_job) -> u64 {
    get(job, 0, |j| j.job.generation)
}

/// The lease deadline, in ms since the Unix epoch, as granted (a later
/// `tj_queue_extend` returns the new one; this value does not change). It
/// is on the store owner's clock: schedule heartbeats from
/// `tj_job_lease_ttl_ms`, not from `deadline - now`.
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_deadline_ms(job: *const tj_job) -> u64 {
    get(job, 0, |j| j.job.deadline)
}

/// The priority: 0 most urgent ... 255 least.
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_priority(job: *const tj_job) -> u8 {
    get(job, 0, |j| j.job.priority)
}

/// The lease TTL this lease was granted with, in ms (the kind's or the
/// global `lease_ttl`): heartbeat well within it, e.g. every third of it.
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_lease_ttl_ms(job: *const tj_job) -> u64 {
    get(job, 0, |j| j.job.lease_ttl_ms)
}

/// How the payload was made (a `tj_encoding`; `TJ_ENCODING_UNKNOWN` for
/// NULL). `tj_job_payload` is the raw bytes whatever it says.
///
/// # Safety
/// `job` is NULL or a live `tj_job`.
#[no_mangle]
pub unsafe extern "C" fn tj_job_payload_encoding(job: *const tj_job) -> u32 {
    get(job, 0, |j| tj_encoding::from(j.job.payload_encoding) as u32)
}

/// The kind's run-time limit in ms (its `timeout` setting), or 0 for none:
/// a worker should stop a handler running longer and fail the job
/// retryably ("timed out after ...").
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_timeout_ms(job: *const tj_job) -> u64 {
    get(job, 0, |j| j.job.timeout_ms.unwrap_or(0))
}

/// The name of the schedule that enqueued this job (NUL-terminated,
/// borrowed), or NULL when no schedule did.
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_schedule_name(job: *const tj_job) -> *const c_char {
    get(job, std::ptr::null(), |j| {
        j.schedule_name
            .get_or_init(|| j.job.schedule.as_ref().map(|r| cstring(&r.name)))
            .as_ref()
            .map_or(std::ptr::null(), |c| c.as_ptr())
    })
}

/// The schedule slot this job was enqueued for, ms since the epoch; 0 when
/// no schedule enqueued it.
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_schedule_slot_ms(job: *const tj_job) -> u64 {
    get(job, 0, |j| j.job.schedule.as_ref().map_or(0, |r| r.slot))
}

/// How many earlier missed slots this scheduled job stands for (the
/// `TJ_CATCH_UP_ONE` policy); 0 for a slot run on its own, or when no
/// schedule enqueued it.
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_schedule_missed(job: *const tj_job) -> u64 {
    get(job, 0, |j| j.job.schedule.as_ref().map_or(0, |r| r.missed))
}

/// The job whose completion enqueued this one (`tj_queue_complete_then`):
/// true with its id in `*parent_out` (when not NULL), or false (nothing
/// written) when no completion did, or for NULL.
///
/// # Safety
/// `job` is NULL or live; `parent_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_job_parent(job: *const tj_job, parent_out: *mut tj_id) -> bool {
    match get(job, None, |j| j.job.parent) {
        Some(p) => {
            write_opt(parent_out, p.into());
            true
        }
        None => false,
    }
}
