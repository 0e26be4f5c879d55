/* Hostile input: NULL for every pointer argument, invalid UTF-8, zero and
 * huge lengths, free(NULL), calls on a closed queue. Every one gets a clear
 * status (and message), never a crash; out-params stay untouched. */
#include "harness.h"

#include <stdint.h>

static const char BAD_UTF8[] = "emb\xff\xfe";

/* Expect NULL_ARGUMENT naming `arg` in the message. */
#define CHECK_NULL_ARG(arg, call)                                            \
    do {                                                                     \
        tj_status got_ = (call);                                             \
        if (got_ != TJ_STATUS_NULL_ARGUMENT) {                               \
            fprintf(stderr, "  %s:%d: %s\n    want NULL_ARGUMENT, got %s\n", \
                    __FILE__, __LINE__, #call, tj_status_name(got_));        \
            tj_test_failed = 1;                                              \
        } else if (strstr(#call, "&err") &&                                  \
                   (!err || !strstr(tj_error_message(err), "`" arg "`"))) {  \
            fprintf(stderr, "  %s:%d: %s\n    message does not name %s: %s\n", \
                    __FILE__, __LINE__, #call, arg, tj_error_message(err));  \
            tj_test_failed = 1;                                              \
        }                                                                    \
        tj_error_free(err);                                                  \
        err = NULL;                                                          \
    } while (0)

static tj_queue *open_store(const char *dir) {
    tj_error *err = NULL;
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set_reaper_interval_ms(o, 0));
    CHECK_OK(tj_options_set_max_payload_bytes(o, 4096));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    return q;
}

static void null_for_every_pointer_argument_is_refused_by_name(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
    tj_job *job = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &job, &err));
    REQUIRE(job != NULL);
    tj_token tok = tj_job_token(job);
    tj_id id = tj_job_id(job);
    tj_options *o = tj_options_new();
    tj_enqueue_options *eo = tj_enqueue_options_new();
    tj_lease_options *lo = tj_lease_options_new();
    tj_list_options *li = tj_list_options_new();
    tj_batch *b = tj_batch_new();
    tj_queue *qo = NULL;
    tj_job *jo = NULL;
    tj_job *jobs[2];
    size_t n = 0;
    tj_status st[1];
    tj_job_info *info = NULL;
    tj_list_page *page = NULL;
    tj_stats *stats = NULL;
    char *text = NULL;
    char buf[TJ_ID_STRLEN];
    tj_options *loaded = NULL;

    /* open */
    CHECK_NULL_ARG("path", tj_queue_open(NULL, NULL, &qo, &err));
    CHECK_NULL_ARG("queue_out", tj_queue_open(dir, NULL, NULL, &err));
    CHECK_NULL_ARG("path", tj_queue_open_read_only(NULL, &qo, &err));
    CHECK_NULL_ARG("queue_out", tj_queue_open_read_only(dir, NULL, &err));
    CHECK_NULL_ARG("options_out", tj_options_load(NULL, NULL, &err));
    /* options */
    CHECK_NULL_ARG("options", tj_options_set_lease_ttl_ms(NULL, 1));
    CHECK_NULL_ARG("options", tj_options_set_reaper_interval_ms(NULL, 1));
    CHECK_NULL_ARG("options", tj_options_set_max_attempts(NULL, 1));
    CHECK_NULL_ARG("options", tj_options_set_backoff_base_ms(NULL, 1));
    CHECK_NULL_ARG("options", tj_options_set_backoff_factor(NULL, 1.0));
    CHECK_NULL_ARG("options", tj_options_set_backoff_cap_ms(NULL, 1));
    CHECK_NULL_ARG("options", tj_options_set_completed_retention_ms(NULL, 1));
    CHECK_NULL_ARG("options", tj_options_set_sync_writes(NULL, true));
    CHECK_NULL_ARG("options", tj_options_set_max_payload_bytes(NULL, 1));
    CHECK_NULL_ARG("options", tj_options_set_prune_batch(NULL, 1));
    CHECK_NULL_ARG("options", tj_options_set_kind_lease_ttl_ms(NULL, "embed", 1, &err));
    CHECK_NULL_ARG("kind", tj_options_set_kind_lease_ttl_ms(o, NULL, 1, &err));
    CHECK_NULL_ARG("options", tj_options_set_kind_max_attempts(NULL, "embed", 1, &err));
    CHECK_NULL_ARG("kind", tj_options_set_kind_max_attempts(o, NULL, 1, &err));
    CHECK_NULL_ARG("options", tj_options_set_kind_backoff_base_ms(NULL, "embed", 1, &err));
    CHECK_NULL_ARG("kind", tj_options_set_kind_backoff_base_ms(o, NULL, 1, &err));
    CHECK_NULL_ARG("options", tj_options_set_kind_backoff_factor(NULL, "embed", 1.0, &err));
    CHECK_NULL_ARG("kind", tj_options_set_kind_backoff_factor(o, NULL, 1.0, &err));
    CHECK_NULL_ARG("options", tj_options_set_kind_backoff_cap_ms(NULL, "embed", 1, &err));
    CHECK_NULL_ARG("kind", tj_options_set_kind_backoff_cap_ms(o, NULL, 1, &err));
    CHECK_NULL_ARG("options", tj_options_set_backoff_base_secs_by_kind(NULL, "embed", 1, &err));
    CHECK_NULL_ARG("kind", tj_options_set_backoff_base_secs_by_kind(o, NULL, 1, &err));
    CHECK_NULL_ARG("options", tj_options_set(NULL, "lease_ttl", "5s", &err));
    CHECK_NULL_ARG("key", tj_options_set(o, NULL, "5s", &err));
    CHECK_NULL_ARG("value", tj_options_set(o, "lease_ttl", NULL, &err));
    CHECK_NULL_ARG("options", tj_options_set_kind(NULL, "embed", "lease_ttl", "5s", &err));
    CHECK_NULL_ARG("kind", tj_options_set_kind(o, NULL, "lease_ttl", "5s", &err));
    CHECK_NULL_ARG("key", tj_options_set_kind(o, "embed", NULL, "5s", &err));
    CHECK_NULL_ARG("value", tj_options_set_kind(o, "embed", "lease_ttl", NULL, &err));
    char vbuf[64];
    CHECK_NULL_ARG("options", tj_options_get(NULL, "lease_ttl", vbuf, sizeof vbuf, NULL, &err));
    CHECK_NULL_ARG("key", tj_options_get(o, NULL, vbuf, sizeof vbuf, NULL, &err));
    CHECK_NULL_ARG("buf", tj_options_get(o, "lease_ttl", NULL, 8, NULL, &err));
    CHECK_NULL_ARG("options", tj_options_get_kind(NULL, "embed", "lease_ttl", vbuf, sizeof vbuf, NULL, &err));
    CHECK_NULL_ARG("kind", tj_options_get_kind(o, NULL, "lease_ttl", vbuf, sizeof vbuf, NULL, &err));
    CHECK_NULL_ARG("key", tj_options_get_kind(o, "embed", NULL, vbuf, sizeof vbuf, NULL, &err));
    CHECK_NULL_ARG("key_out", tj_config_key_at(0, NULL, &err));
    /* enqueue options, batch */
    CHECK_NULL_ARG("options", tj_enqueue_options_set_scope(NULL, "00000000-0000-0000-0000-000000000000", &err));
    CHECK_NULL_ARG("scope", tj_enqueue_options_set_scope(eo, NULL, &err));
    CHECK_NULL_ARG("options", tj_enqueue_options_set_priority(NULL, 1));
    CHECK_NULL_ARG("options", tj_enqueue_options_set_run_at_ms(NULL, 1));
    CHECK_NULL_ARG("options", tj_enqueue_options_set_delay_ms(NULL, 1));
    CHECK_NULL_ARG("options", tj_enqueue_options_set_idempotency_key(NULL, "k", &err));
    CHECK_NULL_ARG("key", tj_enqueue_options_set_idempotency_key(eo, NULL, &err));
    CHECK_NULL_ARG("options", tj_enqueue_options_set_max_attempts(NULL, 1));
    CHECK_NULL_ARG("options", tj_enqueue_options_set_encoding(NULL, TJ_ENCODING_BYTES, &err));
    CHECK_NULL_ARG("batch", tj_batch_add(NULL, "embed", NULL, 0, NULL, &err));
    CHECK_NULL_ARG("kind", tj_batch_add(b, NULL, NULL, 0, NULL, &err));
    CHECK_NULL_ARG("payload", tj_batch_add(b, "embed", NULL, 3, NULL, &err));
    /* lease options, list options */
    CHECK_NULL_ARG("options", tj_lease_options_add_scope(NULL, "00000000-0000-0000-0000-000000000000", &err));
    CHECK_NULL_ARG("scope", tj_lease_options_add_scope(lo, NULL, &err));
    CHECK_NULL_ARG("options", tj_lease_options_add_kind(NULL, "embed", &err));
    CHECK_NULL_ARG("kind", tj_lease_options_add_kind(lo, NULL, &err));
    CHECK_NULL_ARG("options", tj_lease_options_set_wait_ms(NULL, 1));
    CHECK_NULL_ARG("options", tj_lease_options_set_cancel(NULL, NULL));
    CHECK_NULL_ARG("cancel", tj_lease_options_set_cancel(lo, NULL));
    CHECK_NULL_ARG("options", tj_list_options_set_state(NULL, TJ_STATE_DEAD, &err));
    CHECK_NULL_ARG("options", tj_list_options_set_scope(NULL, "x", &err));
    CHECK_NULL_ARG("scope", tj_list_options_set_scope(li, NULL, &err));
    CHECK_NULL_ARG("options", tj_list_options_set_kind(NULL, "embed", &err));
    CHECK_NULL_ARG("kind", tj_list_options_set_kind(li, NULL, &err));
    CHECK_NULL_ARG("options", tj_list_options_set_limit(NULL, 1));
    CHECK_NULL_ARG("options", tj_list_options_set_after(NULL, NULL, &err));
    /* queue operations */
    CHECK_NULL_ARG("queue", tj_queue_enqueue(NULL, "embed", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_NULL_ARG("kind", tj_queue_enqueue(q, NULL, NULL, 0, NULL, NULL, NULL, &err));
    CHECK_NULL_ARG("payload", tj_queue_enqueue(q, "embed", NULL, 1, NULL, NULL, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_enqueue_many(NULL, b, NULL, NULL, &err));
    CHECK_NULL_ARG("batch", tj_queue_enqueue_many(q, NULL, NULL, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_lease_next(NULL, "w", NULL, &jo, &err));
    CHECK_NULL_ARG("worker_id", tj_queue_lease_next(q, NULL, NULL, &jo, &err));
    CHECK_NULL_ARG("job_out", tj_queue_lease_next(q, "w", NULL, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_lease_many(NULL, "w", NULL, 2, jobs, &n, &err));
    CHECK_NULL_ARG("worker_id", tj_queue_lease_many(q, NULL, NULL, 2, jobs, &n, &err));
    CHECK_NULL_ARG("jobs_out", tj_queue_lease_many(q, "w", NULL, 2, NULL, &n, &err));
    CHECK_NULL_ARG("count_out", tj_queue_lease_many(q, "w", NULL, 2, jobs, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_extend(NULL, "w", &tok, 1, st, NULL, &err));
    CHECK_NULL_ARG("worker_id", tj_queue_extend(q, NULL, &tok, 1, st, NULL, &err));
    CHECK_NULL_ARG("tokens", tj_queue_extend(q, "w", NULL, 1, st, NULL, &err));
    CHECK_NULL_ARG("statuses_out", tj_queue_extend(q, "w", &tok, 1, NULL, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_complete(NULL, &tok, NULL, 0, &err));
    CHECK_NULL_ARG("token", tj_queue_complete(q, NULL, NULL, 0, &err));
    CHECK_NULL_ARG("result", tj_queue_complete(q, &tok, NULL, 5, &err));
    CHECK_NULL_ARG("queue", tj_queue_complete_with_encoding(NULL, &tok, NULL, 0, 1, &err));
    CHECK_NULL_ARG("token", tj_queue_complete_with_encoding(q, NULL, NULL, 0, 1, &err));
    CHECK_NULL_ARG("result", tj_queue_complete_with_encoding(q, &tok, NULL, 5, 1, &err));
    CHECK_NULL_ARG("queue", tj_queue_fail(NULL, &tok, "r", true, &err));
    CHECK_NULL_ARG("token", tj_queue_fail(q, NULL, "r", true, &err));
    CHECK_NULL_ARG("reason", tj_queue_fail(q, &tok, NULL, true, &err));
    CHECK_NULL_ARG("queue", tj_queue_release(NULL, &tok, &err));
    CHECK_NULL_ARG("token", tj_queue_release(q, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_retry(NULL, &id, &err));
    CHECK_NULL_ARG("id", tj_queue_retry(q, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_get(NULL, &id, &info, &err));
    CHECK_NULL_ARG("id", tj_queue_get(q, NULL, &info, &err));
    CHECK_NULL_ARG("info_out", tj_queue_get(q, &id, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_list(NULL, li, &page, &err));
    CHECK_NULL_ARG("page_out", tj_queue_list(q, li, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_reap(NULL, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_stats(NULL, &stats, &err));
    CHECK_NULL_ARG("stats_out", tj_queue_stats(q, NULL, &err));
    CHECK_NULL_ARG("queue", tj_queue_metrics(NULL, &text, &err));
    CHECK_NULL_ARG("text_out", tj_queue_metrics(q, NULL, &err));
    /* values, results */
    CHECK_NULL_ARG("text", tj_id_parse(NULL, &id, &err));
    CHECK_NULL_ARG("id_out", tj_id_parse("01a2297d-e8cb-7612-a44d-31321cfe28b2", NULL, &err));
    CHECK_NULL_ARG("id", tj_id_format(NULL, buf, sizeof buf, &err));
    CHECK_NULL_ARG("buf", tj_id_format(&id, NULL, sizeof buf, &err));
    CHECK_NULL_ARG("info", tj_job_info_event(NULL, 0, NULL, NULL, NULL, &err));
    CHECK_NULL_ARG("stats", tj_stats_kind(NULL, 0, NULL, NULL, &err));
    CHECK(tj_error_status(NULL) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(strcmp(tj_error_message(NULL), "") == 0);

    /* None of the refused calls wrote an out-param or changed the job. */
    CHECK(qo == NULL && jo == NULL && info == NULL && page == NULL &&
          stats == NULL && text == NULL && loaded == NULL && n == 0);
    tj_job_info *now = NULL;
    CHECK_OK(tj_queue_get(q, &id, &now, &err));
    CHECK(now && tj_job_info_state(now) == TJ_STATE_LEASED &&
          tj_job_info_attempts(now) == 0 && tj_job_info_generation(now) == 1);
    tj_job_info_free(now);
    /* The job still settles normally. */
    CHECK_OK(tj_queue_complete(q, &tok, NULL, 0, &err));

    /* A NULL err is fine: only the status comes back. */
    CHECK(tj_queue_enqueue(q, NULL, NULL, 0, NULL, NULL, NULL, NULL) ==
          TJ_STATUS_NULL_ARGUMENT);

    tj_job_free(job);
    tj_batch_free(b);
    tj_list_options_free(li);
    tj_lease_options_free(lo);
    tj_enqueue_options_free(eo);
    tj_options_free(o);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void getters_given_null_answer_zero_or_null(void) {
    size_t len = 99;
    CHECK(tj_job_kind(NULL) == NULL && tj_job_scope(NULL) == NULL);
    CHECK(tj_job_id_str(NULL) == NULL && tj_job_worker_id(NULL) == NULL);
    CHECK(tj_job_payload(NULL, &len) == NULL && len == 0);
    CHECK(tj_job_attempts(NULL) == 0 && tj_job_max_attempts(NULL) == 0);
    CHECK(tj_job_generation(NULL) == 0 && tj_job_deadline_ms(NULL) == 0);
    CHECK(tj_job_priority(NULL) == 0);
    CHECK(tj_job_lease_ttl_ms(NULL) == 0);
    CHECK(tj_job_payload_encoding(NULL) == TJ_ENCODING_UNKNOWN);
    CHECK(tj_job_info_cursor(NULL) == NULL);
    CHECK(tj_job_info_payload_encoding(NULL) == TJ_ENCODING_UNKNOWN);
    CHECK(tj_job_info_result_encoding(NULL) == TJ_ENCODING_UNKNOWN);
    CHECK(strcmp(tj_encoding_name(TJ_ENCODING_BYTES), "bytes") == 0);
    CHECK(strcmp(tj_encoding_name(99), "unknown") == 0);
    tj_token t = tj_job_token(NULL);
    tj_id zero;
    memset(&zero, 0, sizeof zero);
    CHECK(t.generation == 0 && memcmp(t.id.bytes, zero.bytes, 16) == 0);
    tj_id i = tj_job_id(NULL);
    CHECK(memcmp(i.bytes, zero.bytes, 16) == 0);
    len = 99;
    CHECK(tj_job_info_payload(NULL, &len) == NULL && len == 0);
    CHECK(tj_job_info_result(NULL, NULL) == NULL);
    CHECK(tj_job_info_state(NULL) == 0 && tj_job_info_event_count(NULL) == 0);
    CHECK(tj_job_info_kind(NULL) == NULL && tj_job_info_worker_id(NULL) == NULL);
    CHECK(tj_list_page_len(NULL) == 0 && tj_list_page_get(NULL, 0) == NULL);
    CHECK(tj_list_page_next(NULL) == NULL && tj_list_page_corrupt_count(NULL) == 0);
    CHECK(tj_stats_kind_count(NULL) == 0 && tj_stats_total(NULL).pending == 0);
    CHECK(tj_batch_len(NULL) == 0);
    CHECK(!tj_cancel_is_cancelled(NULL));
    tj_cancel_cancel(NULL);
    tj_batch_clear(NULL);
    tj_queue_close(NULL);
}

static void free_null_does_nothing(void) {
    tj_error_free(NULL);
    tj_options_free(NULL);
    tj_enqueue_options_free(NULL);
    tj_lease_options_free(NULL);
    tj_list_options_free(NULL);
    tj_batch_free(NULL);
    tj_cancel_free(NULL);
    tj_job_free(NULL);
    tj_job_info_free(NULL);
    tj_list_page_free(NULL);
    tj_stats_free(NULL);
    tj_string_free(NULL);
    tj_queue_free(NULL);
    CHECK(1);
}

static void invalid_utf8_is_its_own_status(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_options *o = tj_options_new();
    tj_batch *b = tj_batch_new();
    tj_lease_options *lo = tj_lease_options_new();
    tj_enqueue_options *eo = tj_enqueue_options_new();
    tj_job *jo = NULL;
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8,
                 tj_queue_enqueue(q, BAD_UTF8, NULL, 0, NULL, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_batch_add(b, BAD_UTF8, NULL, 0, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_lease_options_add_kind(lo, BAD_UTF8, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8,
                 tj_options_set_kind_lease_ttl_ms(o, BAD_UTF8, 1, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_options_set(o, BAD_UTF8, "1s", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_options_set(o, "lease_ttl", BAD_UTF8, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8,
                 tj_options_set_kind(o, BAD_UTF8, "lease_ttl", "1s", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8,
                 tj_enqueue_options_set_idempotency_key(eo, BAD_UTF8, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_lease_next(q, BAD_UTF8, NULL, &jo, &err));
    tj_queue *qo = NULL;
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_open(BAD_UTF8, NULL, &qo, &err));
    CHECK(qo == NULL);
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_id_parse(BAD_UTF8, &(tj_id){{0}}, &err));
    CHECK(tj_batch_len(b) == 0);
    CHECK(jo == NULL);
    /* The message says which argument. */
    CHECK(tj_queue_enqueue(q, BAD_UTF8, NULL, 0, NULL, NULL, NULL, &err) ==
          TJ_STATUS_INVALID_UTF8);
    CHECK(err && strstr(tj_error_message(err), "`kind`") != NULL);
    tj_error_free(err);
    err = NULL;
    /* Valid UTF-8 that breaks the kind syntax is an invalid argument. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "Émbed", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_OK(tj_queue_enqueue(q, "system:vacuum", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_lease_options_add_kind(lo, "ingest:pdf:*", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_scope(eo, "tenant-7", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_lease_options_add_scope(lo, "", &err));
    /* system:* kinds live only in the system scope. */
    CHECK_OK(tj_enqueue_options_set_scope(eo, "7d444840-9dc0-11d1-b245-5ffdce74fad2", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "system:vacuum", NULL, 0, eo, NULL, NULL, &err));
    char long_worker[300];
    memset(long_worker, 'w', sizeof long_worker - 1);
    long_worker[sizeof long_worker - 1] = '\0';
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_lease_next(q, long_worker, NULL, &jo, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_lease_next(q, "", NULL, &jo, &err));
    CHECK(jo == NULL);
    tj_enqueue_options_free(eo);
    tj_lease_options_free(lo);
    tj_batch_free(b);
    tj_options_free(o);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void zero_and_huge_payload_lengths(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir); /* max_payload_bytes = 4096 */
    REQUIRE(q != NULL);
    uint8_t small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tj_id a, b, c;
    /* Zero length: NULL or not, an empty payload. */
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, &a, NULL, &err));
    CHECK_OK(tj_queue_enqueue(q, "embed", small, 0, NULL, &b, NULL, &err));
    /* Huge lengths are refused before the (8-byte) buffer is read. */
    c = a;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "embed", small, SIZE_MAX, NULL, &c, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "embed", small, (size_t)1 << 40, NULL, &c, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "embed", small, 4097, NULL, &c, NULL, &err));
    CHECK(memcmp(&c, &a, sizeof c) == 0);
    uint8_t *full = calloc(4096, 1);
    REQUIRE(full != NULL);
    CHECK_OK(tj_queue_enqueue(q, "embed", full, 4096, NULL, NULL, NULL, &err));
    tj_batch *batch = tj_batch_new();
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_batch_add(batch, "embed", small, SIZE_MAX, NULL, &err));
    CHECK_OK(tj_batch_add(batch, "embed", full, 4096, NULL, &err));
    CHECK_OK(tj_batch_add(batch, "embed", NULL, 0, NULL, &err));
    CHECK_OK(tj_queue_enqueue_many(q, batch, NULL, NULL, &err));
    tj_batch_free(batch);

    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    REQUIRE(j != NULL);
    size_t len = 99;
    const uint8_t *p = tj_job_payload(j, &len);
    CHECK(len == 0 && p != NULL);
    tj_token t = tj_job_token(j);
    /* A huge result is refused and the job stays leased. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_complete(q, &t, small, SIZE_MAX, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_complete(q, &t, full, 4097, &err));
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    CHECK(info && tj_job_info_state(info) == TJ_STATE_LEASED);
    tj_job_info_free(info);
    /* An empty, non-NULL result is stored as an empty result. */
    CHECK_OK(tj_queue_complete(q, &t, small, 0, &err));
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    len = 99;
    CHECK(info && tj_job_info_result(info, &len) != NULL && len == 0);
    tj_job_info_free(info);
    tj_job_free(j);
    free(full);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void every_call_on_a_closed_queue_answers_closed(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_id id;
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, &id, NULL, &err));
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    REQUIRE(j != NULL);
    tj_token t = tj_job_token(j);
    tj_queue_close(q);
    tj_queue_close(q); /* idempotent */
    tj_batch *b = tj_batch_new();
    CHECK_OK(tj_batch_add(b, "embed", NULL, 0, NULL, &err));
    tj_job *jobs[2];
    size_t n = 0;
    tj_status st[1];
    tj_job_info *info = NULL;
    tj_list_page *page = NULL;
    tj_stats *stats = NULL;
    char *text = NULL;
    tj_reap_report r;
    tj_job *jo = NULL;
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_enqueue_many(q, b, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_lease_next(q, "w", NULL, &jo, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_lease_many(q, "w", NULL, 2, jobs, &n, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_extend(q, "w", &t, 1, st, NULL, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_complete(q, &t, NULL, 0, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED,
                 tj_queue_complete_with_encoding(q, &t, NULL, 0, TJ_ENCODING_BYTES, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_fail(q, &t, "x", true, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_release(q, &t, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_retry(q, &id, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_get(q, &id, &info, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_list(q, NULL, &page, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_reap(q, &r, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_stats(q, &stats, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_metrics(q, &text, &err));
    CHECK(jo == NULL && n == 0 && info == NULL && page == NULL && stats == NULL && text == NULL);
    tj_batch_free(b);
    tj_job_free(j);
    tj_queue_free(q);

    /* Nothing was lost: the store reopens with the job still leased. */
    q = open_store(dir);
    REQUIRE(q != NULL);
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    CHECK(info && tj_job_info_state(info) == TJ_STATE_LEASED);
    tj_job_info_free(info);
    CHECK_OK(tj_queue_complete(q, &t, NULL, 0, &err));
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void read_only_open_refuses_writes_and_missing_stores(void) {
    tj_error *err = NULL;
    char dir[64], missing[96];
    tmpdir_make(dir);
    snprintf(missing, sizeof missing, "%s/nothing-here", dir);
    tj_queue *ro = NULL;
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_open_read_only(missing, &ro, &err));
    CHECK(ro == NULL);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_id id;
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, &id, NULL, &err));
    CHECK_OK(tj_queue_open_read_only(dir, &ro, &err));
    REQUIRE(ro != NULL);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(ro, &id, &info, &err));
    CHECK(info != NULL);
    tj_job_info_free(info);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(ro, "embed", NULL, 0, NULL, NULL, NULL, &err));
    tj_queue_free(ro);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

int main(void) {
    static const struct tj_test tests[] = {
        TEST(null_for_every_pointer_argument_is_refused_by_name),
        TEST(getters_given_null_answer_zero_or_null),
        TEST(free_null_does_nothing),
        TEST(invalid_utf8_is_its_own_status),
        TEST(zero_and_huge_payload_lengths),
        TEST(every_call_on_a_closed_queue_answers_closed),
        TEST(read_only_open_refuses_writes_and_missing_stores),
    };
    return run_tests("test_hostile", tests, sizeof tests / sizeof tests[0]);
}
