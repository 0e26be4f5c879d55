//! Tags and metadata (issue 42): set on `tj_enqueue_options`, read from a
//! `tj_job` or `tj_job_info`, listed by with `tj_list_options_set_tag` and
//! counted with `tj_queue_count_tag`; the trace context's `traceparent`
//! (issue 45) is a checked metadata key.
//!
//! A tag, metadata key or value that is not UTF-8 is
//! `TJ_STATUS_INVALID_ARGUMENT` (not `TJ_STATUS_INVALID_UTF8`: the limit
//! is part of what a tag is), and nothing is changed.

use std::ffi::{c_char, CStr, CString};

use crate::boundary::{self, cstring, get, handle_mut, out, write, Res};
use crate::enqueue_options::tj_enqueue_options;
use crate::error::{tj_error, Failure};
use crate::job::tj_job;
use crate::job_info::tj_job_info;
use crate::list::tj_list_options;
use crate::queue::tj_queue;
use crate::stats::tj_state_counts;
use crate::status::tj_status;

/// A tag-like argument: NULL is `TJ_STATUS_NULL_ARGUMENT`; bytes that are
/// not UTF-8 are `TJ_STATUS_INVALID_ARGUMENT` naming the rule.
pub(crate) fn text<'a>(func: &str, arg: &str, p: *const c_char) -> Res<&'a str> {
    if p.is_null() {
        return Err(boundary::null(func, arg));
    }
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|e| {
        Failure::invalid(format!(
            "{func}: `{arg}` must be UTF-8 (a tag is 1 to {} bytes of UTF-8 without control characters): {e}",
            telha_jobs_core::tags::MAX_TAG_LEN
        ))
    })
}

/// Add tag `tag` (copied) to the options: at most `TJ_MAX_TAGS` distinct
/// tags (checked at enqueue; duplicates are removed), each 1 to
/// `TJ_MAX_TAG_LEN` bytes of UTF-8 without control characters (checked
/// here).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, tag),
/// `TJ_STATUS_INVALID_ARGUMENT` for a tag that breaks a rule, including
/// one that is not UTF-8 (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `tag` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_add_tag(
    options: *mut tj_enqueue_options,
    tag: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_add_tag";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let t = text(F, "tag", tag)?;
        telha_jobs_core::tags::validate_tag(t)?;
        o.options.tags.push(t.to_string());
        Ok(())
    })
}

/// Set metadata `key` to `value` (both copied; a key set again is
/// replaced): the whole map at most `TJ_MAX_METADATA_BYTES` (keys' and
/// values' bytes plus 2 per entry, checked at enqueue); keys 1 to
/// `TJ_MAX_TAG_LEN` bytes without control characters (checked here).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_ARGUMENT` (a bad
/// key, or a key or value that is not UTF-8; options unchanged).
///
/// # Safety
/// `options` is NULL or live; `key` and `value` are NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_meta(
    options: *mut tj_enqueue_options,
    key: *const c_char,
    value: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_meta";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let (k, v) = (text(F, "key", key)?, text(F, "value", value)?);
        let one = [(k.to_string(), String::new())].into_iter().collect();
        telha_jobs_core::tags::validate_metadata(&one)?;
        o.options.metadata.insert(k.to_string(), v.to_string());
        Ok(())
    })
}

/// Set the job's W3C trace context: `traceparent` (copied) goes into its
/// metadata under the key `traceparent`, where the Python and Node Workers
/// read it to link the handler's span to the producer's (a `tracestate`
/// goes in with `tj_enqueue_options_set_meta(options, "tracestate", ...)`).
/// The value is checked against W3C Trace Context's syntax
/// (`00-<32 hex>-<16 hex>-<2 hex>`, lowercase, ids not all zeros).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_ARGUMENT` (not
/// the syntax, or not UTF-8; options unchanged).
///
/// # Safety
/// `options` is NULL or live; `traceparent` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_traceparent(
    options: *mut tj_enqueue_options,
    traceparent: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_traceparent";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let v = text(F, "traceparent", traceparent)?;
        telha_jobs_core::trace_context::validate_traceparent(v)?;
        o.options.metadata.insert(
            telha_jobs_core::trace_context::TRACEPARENT.to_string(),
            v.to_string(),
        );
        Ok(())
    })
}

/// Only jobs carrying `tag` (copied), read from the tag index: pages in
/// scope, state and enqueue order, O(page). The page's `next` cursors are
/// the tag index's: pass them back with the same tag.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_ARGUMENT` (a bad
/// tag, or not UTF-8; options unchanged).
///
/// # Safety
/// `options` is NULL or live; `tag` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_list_options_set_tag(
    options: *mut tj_list_options,
    tag: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_list_options_set_tag";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let t = text(F, "tag", tag)?;
        telha_jobs_core::tags::validate_tag(t)?;
        o.query.tag = Some(t.to_string());
        Ok(())
    })
}

/// How many jobs carry `tag`, per state, into `*counts_out`; in tenant
/// `scope` (UUID text) or, when `scope` is NULL, every scope. Read from
/// the tag index: O(jobs carrying the tag), nothing else read.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, tag, counts_out),
/// `TJ_STATUS_INVALID_ARGUMENT` (a bad tag or scope), `TJ_STATUS_CLOSED`,
/// `TJ_STATUS_STORAGE`.
///
/// # Safety
/// `queue` is NULL or live; `tag` is NULL or NUL-terminated; `scope` is
/// NULL or NUL-terminated; `counts_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_count_tag(
    queue: *const tj_queue,
    tag: *const c_char,
    scope: *const c_char,
    counts_out: *mut tj_state_counts,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_count_tag";
    boundary::run(F, err, || {
        let q = crate::queue::q(F, queue)?;
        let t = text(F, "tag", tag)?;
        let scope = match boundary::opt_string(F, "scope", scope)? {
            Some(s) => Some(s.parse()?),
            None => None,
        };
        let counts_out = out(F, "counts_out", counts_out)?;
        let c = q.queue.count_tag(t, scope)?;
        write(counts_out, c.into());
        Ok(())
    })
}

/// The C strings of tags and metadata, made once per job.
pub(crate) struct TagTexts {
    tags: Vec<CString>,
    meta: Vec<(CString, CString)>,
}

impl TagTexts {
    pub(crate) fn new(tags: &[String], meta: &std::collections::BTreeMap<String, String>) -> Self {
        TagTexts {
            tags: tags.iter().map(|t| cstring(t)).collect(),
            meta: meta.iter().map(|(k, v)| (cstring(k), cstring(v))).collect(),
        }
    }
    pub(crate) fn tag(&self, i: usize) -> *const c_char {
        self.tags.get(i).map_or(std::ptr::null(), |t| t.as_ptr())
    }
    pub(crate) fn key(&self, i: usize) -> *const c_char {
        self.meta.get(i).map_or(std::ptr::null(), |m| m.0.as_ptr())
    }
    pub(crate) fn value(&self, i: usize) -> *const c_char {
        self.meta.get(i).map_or(std::ptr::null(), |m| m.1.as_ptr())
    }
}

/// How many tags the leased job carries (0 for NULL).
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_tag_count(job: *const tj_job) -> usize {
    get(job, 0, |j| j.job.tags.len())
}

/// Tag `i` of the leased job (NUL-terminated, borrowed until
/// `tj_job_free`); NULL when `i` is out of range or for NULL.
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_tag(job: *const tj_job, i: usize) -> *const c_char {
    get(job, std::ptr::null(), |j| j.tag_texts().tag(i))
}

/// How many metadata entries the leased job carries (0 for NULL).
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_meta_count(job: *const tj_job) -> usize {
    get(job, 0, |j| j.job.metadata.len())
}

/// The key of metadata entry `i` (entries in key order; borrowed until
/// `tj_job_free`); NULL when out of range or for NULL.
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_meta_key(job: *const tj_job, i: usize) -> *const c_char {
    get(job, std::ptr::null(), |j| j.tag_texts().key(i))
}

/// The value of metadata entry `i` (borrowed until `tj_job_free`); NULL
/// when out of range or for NULL.
///
/// # Safety
/// `job` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_meta_value(job: *const tj_job, i: usize) -> *const c_char {
    get(job, std::ptr::null(), |j| j.tag_texts().value(i))
}

/// How many tags the job carries (0 for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_tag_count(info: *const tj_job_info) -> usize {
    get(info, 0, |j| j.info.tags.len())
}

/// Tag `i` (borrowed from `info`); NULL when out of range or for NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_tag(info: *const tj_job_info, i: usize) -> *const c_char {
    get(info, std::ptr::null(), |j| j.tag_texts.tag(i))
}

/// How many metadata entries the job carries (0 for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_meta_count(info: *const tj_job_info) -> usize {
    get(info, 0, |j| j.info.metadata.len())
}

/// The key of metadata entry `i` (key order; borrowed from `info`); NULL
/// when out of range or for NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_meta_key(info: *const tj_job_info, i: usize) -> *const c_char {
    get(info, std::ptr::null(), |j| j.tag_texts.key(i))
}

/// The value of metadata entry `i` (borrowed from `info`); NULL when out
/// of range or for NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_meta_value(
    info: *const tj_job_info,
    i: usize,
) -> *const c_char {
    get(info, std::ptr::null(), |j| j.tag_texts.value(i))
}
