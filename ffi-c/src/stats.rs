//! `tj_stats`, `tj_state_counts` and `tj_reap_report`.

use std::ffi::{c_char, CString};

use telha_jobs_core::{PauseTarget, Paused, ReapReport, StateCounts, Stats};

use crate::boundary::{self, cstring, write_opt};
use crate::error::{tj_error, Failure};
use crate::status::tj_status;

/// Job counts per state. A plain value.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct tj_state_counts {
    /// Waiting to be leased (delayed ones included).
    pub pending: u64,
    /// Held by a worker.
    pub leased: u64,
    /// Failed retryably, leasable again from their retry-at.
    pub failed: u64,
    /// Completed, not yet pruned.
    pub completed: u64,
    /// Dead-lettered.
    pub dead: u64,
    /// Cancelled, not yet pruned.
    pub cancelled: u64,
    /// Fan-in parents waiting on their children (`TJ_STATE_WAITING`).
    pub waiting: u64,
}

impl From<StateCounts> for tj_state_counts {
    fn from(c: StateCounts) -> Self {
        tj_state_counts {
            pending: c.pending,
            leased: c.leased,
            failed: c.failed,
            completed: c.completed,
            dead: c.dead,
            cancelled: c.cancelled,
            waiting: c.waiting,
        }
    }
}

/// What one reaper pass (`tj_queue_reap`) did. A plain value.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct tj_reap_report {
    /// Expired leases moved back to pending (with backoff).
    pub expired: usize,
    /// Expired leases that had no attempts left and went dead.
    pub dead: usize,
    /// Completed, dead and cancelled jobs pruned past their retention.
    pub pruned: usize,
    /// Jobs never leased before their expiry, moved to dead.
    pub expired_unstarted: usize,
    /// Records skipped because they did not decode.
    pub corrupt: usize,
}

impl From<ReapReport> for tj_reap_report {
    fn from(r: ReapReport) -> Self {
        tj_reap_report {
            expired: r.expired,
            dead: r.dead,
            pruned: r.pruned,
            expired_unstarted: r.expired_unstarted,
            corrupt: r.corrupt.len(),
        }
    }
}

/// Exact counts per kind and state, and one page of per-scope counts, as of
/// the `tj_queue_stats` (or `tj_queue_stats_page`) call. Owned
/// by the caller (`tj_stats_free`); strings borrowed from it live until
/// then. Immutable: readable from many threads.
#[allow(non_camel_case_types)]
pub struct tj_stats {
    total: tj_state_counts,
    kinds: Vec<(CString, tj_state_counts)>,
    /// Scope UUIDs (hyphenated) and their counts, in the page's order.
    scopes: Vec<(CString, tj_state_counts)>,
    /// The next page's cursor; `None` on the last page.
    pub(crate) scopes_next: Option<CString>,
    paused: Vec<CString>,
    /// Kinds with a job due now and its age, ms (by kind name); filled
    /// only when the options asked (`tj_stats_options_set_oldest_ready`).
    oldest_ready: Vec<(CString, u64)>,
}

impl tj_stats {
    pub(crate) fn new(s: Stats) -> Self {
        let ranked = s.scopes_ranked();
        tj_stats {
            total: s.total.into(),
            kinds: s
                .by_kind
                .into_iter()
                .map(|(k, c)| (cstring(&k), c.into()))
                .collect(),
            scopes: ranked
                .into_iter()
                .map(|(sc, c)| (cstring(&sc.to_string()), c.into()))
                .collect(),
            scopes_next: s.scopes_next.as_deref().map(cstring),
            paused: paused_labels(&s.paused),
            oldest_ready: s
                .oldest_ready_ms
                .iter()
                .map(|(k, ms)| (cstring(k), *ms))
                .collect(),
        }
    }
}

/// `kind:<pattern>` then `scope:<uuid>` labels, in the core's order.
pub(crate) fn paused_labels(p: &Paused) -> Vec<CString> {
    let kinds = p.kinds.iter().map(|k| PauseTarget::Kind(k.clone()));
    let scopes = p.scopes.iter().map(|s| PauseTarget::Scope(*s));
    kinds.chain(scopes).map(|t| cstring(&t.label())).collect()
}

/// Free stats. NULL does nothing.
///
/// # Safety
/// `stats` is NULL or a `tj_stats` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_free(stats: *mut tj_stats) {
    boundary::free_box(stats);
}

/// The counts over every kind (all zero for NULL).
///
/// # Safety
/// `stats` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_total(stats: *const tj_stats) -> tj_state_counts {
    unsafe { stats.as_ref() }.map_or_else(Default::default, |s| s.total)
}

/// How many kinds have jobs (kinds with none are omitted); 0 for NULL.
///
/// # Safety
/// `stats` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_kind_count(stats: *const tj_stats) -> usize {
    unsafe { stats.as_ref() }.map_or(0, |s| s.kinds.len())
}

/// Kind `index` (kinds sorted by name): its name (borrowed from `stats`) and
/// counts. Either out-pointer may be NULL; they are written only on success.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (stats), `TJ_STATUS_INVALID_ARGUMENT`
/// when `index >= tj_stats_kind_count(stats)`.
///
/// # Safety
/// `stats` is NULL or live; the out-pointers and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_kind(
    stats: *const tj_stats,
    index: usize,
    kind_out: *mut *const c_char,
    counts_out: *mut tj_state_counts,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_kind";
    boundary::run(F, err, || {
        let s = boundary::handle(F, "stats", stats)?;
        let (k, c) = s.kinds.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "{F}: index {index} is past the {} kinds",
                s.kinds.len()
            ))
        })?;
        write_opt(kind_out, k.as_ptr());
        write_opt(counts_out, *c);
        Ok(())
    })
}

/// How many scopes this page holds (scopes with no jobs are omitted; see
/// `tj_stats_scopes_next` for whether more follow); 0 for NULL.
///
/// # Safety
/// `stats` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_scope_count(stats: *const tj_stats) -> usize {
    unsafe { stats.as_ref() }.map_or(0, |s| s.scopes.len())
}

/// Scope `index` in the page's order (the most first for a count order, by
/// id for `"name"`): its UUID, hyphenated (borrowed from
/// `stats`), and counts. Either out-pointer may be NULL; they are written
/// only on success.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (stats), `TJ_STATUS_INVALID_ARGUMENT`
/// when `index >= tj_stats_scope_count(stats)`.
///
/// # Safety
/// `stats` is NULL or live; the out-pointers and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_scope(
    stats: *const tj_stats,
    index: usize,
    scope_out: *mut *const c_char,
    counts_out: *mut tj_state_counts,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_scope";
    boundary::run(F, err, || {
        let s = boundary::handle(F, "stats", stats)?;
        let (sc, c) = s.scopes.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "{F}: index {index} is past the {} scopes",
                s.scopes.len()
            ))
        })?;
        write_opt(scope_out, sc.as_ptr());
        write_opt(counts_out, *c);
        Ok(())
    })
}

/// How many kinds and scopes are paused (see `tj_stats_paused`); 0 for NULL.
///
/// # Safety
/// `stats` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_paused_count(stats: *const tj_stats) -> usize {
    unsafe { stats.as_ref() }.map_or(0, |s| s.paused.len())
}

/// Paused target `index`: `"kind:<kind or family:*>"` (kinds first, sorted)
/// or `"scope:<uuid>"`, borrowed from `stats`. Written only on success.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (stats, label_out),
/// `TJ_STATUS_INVALID_ARGUMENT` when `index >= tj_stats_paused_count(stats)`.
///
/// # Safety
/// `stats` is NULL or live; `label_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_paused(
    stats: *const tj_stats,
    index: usize,
    label_out: *mut *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_paused";
    boundary::run(F, err, || {
        let s = boundary::handle(F, "stats", stats)?;
        boundary::out(F, "label_out", label_out)?;
        let l = s.paused.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "{F}: index {index} is past the {} paused targets",
                s.paused.len()
            ))
        })?;
        write_opt(label_out, l.as_ptr());
        Ok(())
    })
}

/// How many kinds have a job due now, in stats taken with
/// `tj_stats_options_set_oldest_ready` (0 otherwise, and for NULL).
///
/// # Safety
/// `stats` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_oldest_ready_count(stats: *const tj_stats) -> usize {
    unsafe { stats.as_ref() }.map_or(0, |s| s.oldest_ready.len())
}

/// Entry `index` (kinds sorted by name) of the oldest-ready ages: the kind
/// (borrowed from `stats`) and how long its oldest due job (pending or
/// failed, past its run-at or retry time) has been ready, in ms by the
/// store's clock when the stats were taken. Exact, read from the band
/// heads. Either out-pointer may be NULL; they are written only on
/// success. A kind's ready backlog is its `pending + failed` in
/// `tj_stats_kind`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (stats), `TJ_STATUS_INVALID_ARGUMENT`
/// when `index >= tj_stats_oldest_ready_count(stats)`.
///
/// # Safety
/// `stats` is NULL or live; the out-pointers and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_oldest_ready(
    stats: *const tj_stats,
    index: usize,
    kind_out: *mut *const c_char,
    age_ms_out: *mut u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_oldest_ready";
    boundary::run(F, err, || {
        let s = boundary::handle(F, "stats", stats)?;
        let (k, ms) = s.oldest_ready.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "{F}: index {index} is past the {} kinds with a ready job",
                s.oldest_ready.len()
            ))
        })?;
        write_opt(kind_out, k.as_ptr());
        write_opt(age_ms_out, *ms);
        Ok(())
    })
}

/// Free a string this library handed out (`tj_queue_metrics`). NULL does nothing.
///
/// # Safety
/// `s` is NULL or a string from this library not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_string_free(s: *mut c_char) {
    if !s.is_null() {
        boundary::run_infallible((), || drop(unsafe { CString::from_raw(s) }));
    }
}
