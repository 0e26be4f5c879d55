//! The core's limits as header constants (`telha_jobs::limits`): C needs
//! literals, so each is written out here and a test holds it equal to the
//! core's value.

/// The largest kind, in bytes.
pub const TJ_MAX_KIND_LEN: usize = 64;
/// The largest idempotency key, in bytes.
pub const TJ_MAX_IDEMPOTENCY_KEY_LEN: usize = 512;
/// The longest `tj_queue_find` text, in bytes (the longest idempotency
/// key).
pub const TJ_MAX_FIND_TEXT_LEN: usize = 512;
/// The largest worker id, in bytes.
pub const TJ_MAX_WORKER_ID_LEN: usize = 256;
/// The most jobs one `tj_queue_lease_many` takes.
pub const TJ_MAX_BATCH: usize = 10000;
/// The largest `tj_queue_results_of_children` page.
pub const TJ_MAX_CHILDREN_PAGE: usize = 1000;
/// The most jobs one job may wait on (`tj_enqueue_options_add_after`).
pub const TJ_MAX_AFTER: usize = 100000;
/// The largest `tj_queue_list` page (`tj_list_options_set_limit`).
pub const TJ_MAX_LIST_LIMIT: usize = 10000;
/// The most rows one `tj_queue_list` reads before it returns a page
/// (possibly short) with a cursor.
pub const TJ_LIST_SCAN_BUDGET: usize = 100000;
/// The most scopes one `tj_queue_stats_page` returns
/// (`tj_stats_options_set_scope_limit`).
pub const TJ_MAX_SCOPE_LIMIT: usize = 10000;
/// The scopes `tj_queue_stats` returns (the most pending first).
pub const TJ_STATS_SCOPE_LIMIT_DEFAULT: usize = 100;
/// The hard ceiling of `max_payload_bytes` (1 GiB).
pub const TJ_MAX_PAYLOAD_BYTES_LIMIT: usize = 1073741824;
/// The latest time a job may be scheduled for, and any time the library
/// stores or returns: 9999-12-31T23:59:59.999Z in ms since the epoch (below
/// 2^53, so exact in a `double`).
pub const TJ_MAX_INSTANT_MS: u64 = 253402300799999;
/// The longest duration a setting may hold: 100 years (of 365 days), in ms.
pub const TJ_MAX_DURATION_MS: u64 = 3153600000000;
/// How long `tj_server_close` lets calls in flight finish (5 s), as
/// Python's `Server.stop()` and Rust's `ServerHandle` drop.
pub const TJ_SERVER_GRACE_DEFAULT_MS: u64 = 5000;
/// The largest progress report one lease may carry
/// (`tj_queue_heartbeat`), in bytes.
pub const TJ_MAX_PROGRESS_BYTES: usize = 4096;
/// The events a subscription buffers unless told otherwise
/// (`tj_subscribe_options_set_buffer`).
pub const TJ_DEFAULT_EVENT_BUFFER: usize = 10000;
/// The largest subscription buffer, in events.
pub const TJ_MAX_EVENT_BUFFER: usize = 1000000;
/// The longest schedule name, in bytes.
pub const TJ_MAX_SCHEDULE_NAME_LEN: usize = 200;
/// The most fire times one `tj_schedule_next_times` answers.
pub const TJ_MAX_NEXT_TIMES: usize = 1000;
/// The largest `tj_schedule_set_max_catch_up`.
pub const TJ_MAX_CATCH_UP: u32 = 10000;
/// The `max_catch_up` of a schedule that sets none.
pub const TJ_DEFAULT_MAX_CATCH_UP: u32 = 100;
/// The most distinct tags one job carries (`tj_enqueue_options_add_tag`).
pub const TJ_MAX_TAGS: usize = 16;
/// The longest tag (and metadata key), in bytes.
pub const TJ_MAX_TAG_LEN: usize = 64;
/// The largest metadata map: keys' and values' bytes plus 2 per entry.
pub const TJ_MAX_METADATA_BYTES: usize = 4096;
/// The longest job key (`tj_enqueue_options_set_key`), in bytes.
pub const TJ_MAX_JOB_KEY_LEN: usize = 128;

#[cfg(test)]
mod tests {
    use super::*;
    use telha_jobs_core::limits;

    #[test]
    fn every_header_limit_equals_the_cores() {
        assert_eq!(TJ_MAX_KIND_LEN, limits::MAX_KIND_LEN);
        assert_eq!(TJ_MAX_TAGS, telha_jobs_core::tags::MAX_TAGS);
        assert_eq!(TJ_MAX_TAG_LEN, telha_jobs_core::tags::MAX_TAG_LEN);
        assert_eq!(TJ_MAX_JOB_KEY_LEN, telha_jobs_core::flow::MAX_KEY_LEN);
        assert_eq!(
            TJ_MAX_METADATA_BYTES,
            telha_jobs_core::tags::MAX_METADATA_BYTES
        );
        assert_eq!(TJ_MAX_IDEMPOTENCY_KEY_LEN, limits::MAX_IDEMPOTENCY_KEY_LEN);
        assert_eq!(TJ_MAX_WORKER_ID_LEN, limits::MAX_WORKER_ID_LEN);
        assert_eq!(TJ_MAX_BATCH, limits::MAX_BATCH);
        assert_eq!(TJ_MAX_LIST_LIMIT, limits::MAX_LIST_LIMIT);
        assert_eq!(
            TJ_MAX_CHILDREN_PAGE,
            telha_jobs_core::fanin::MAX_CHILDREN_PAGE
        );
        assert_eq!(TJ_MAX_AFTER, telha_jobs_core::fanin::MAX_AFTER);
        assert_eq!(TJ_LIST_SCAN_BUDGET, limits::LIST_SCAN_BUDGET);
        assert_eq!(TJ_MAX_SCOPE_LIMIT, limits::MAX_SCOPE_LIMIT);
        assert_eq!(
            TJ_STATS_SCOPE_LIMIT_DEFAULT,
            telha_jobs_core::scopes::STATS_SCOPE_LIMIT_DEFAULT
        );
        assert_eq!(TJ_MAX_PAYLOAD_BYTES_LIMIT, limits::MAX_PAYLOAD_BYTES_LIMIT);
        assert_eq!(TJ_MAX_INSTANT_MS, limits::MAX_INSTANT_MS);
        assert_eq!(
            u128::from(TJ_MAX_DURATION_MS),
            limits::MAX_DURATION.as_millis()
        );
        assert_eq!(TJ_MAX_PROGRESS_BYTES, limits::MAX_PROGRESS_BYTES);
        assert_eq!(
            TJ_MAX_FIND_TEXT_LEN,
            telha_jobs_core::find::MAX_FIND_TEXT_LEN
        );
        assert_eq!(
            TJ_DEFAULT_EVENT_BUFFER,
            telha_jobs_core::watch::DEFAULT_EVENT_BUFFER
        );
        assert_eq!(
            TJ_MAX_EVENT_BUFFER,
            telha_jobs_core::watch::MAX_EVENT_BUFFER
        );
        use telha_jobs_core::schedule;
        assert_eq!(TJ_MAX_SCHEDULE_NAME_LEN, schedule::MAX_NAME_LEN);
        assert_eq!(TJ_MAX_NEXT_TIMES, schedule::MAX_NEXT_TIMES);
        assert_eq!(TJ_MAX_CATCH_UP, schedule::MAX_CATCH_UP_LIMIT);
        assert_eq!(TJ_DEFAULT_MAX_CATCH_UP, schedule::DEFAULT_MAX_CATCH_UP);
    }
}
