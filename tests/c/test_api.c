/* The C API's surface: every call does what the header says. */
#include "harness.h"
/* The header twice in one unit: its include guard must hold. */
#include "telha_jobs.h"
#include "telha_jobs.h"

#include <pthread.h>

static const char SCOPE[] = "7d444840-9dc0-11d1-b245-5ffdce74fad2";

/* A store with no background reaper, so tests decide when it runs. */
static tj_queue *open_store(const char *dir, tj_options *o) {
    tj_error *err = NULL;
    tj_queue *q = NULL;
    tj_options *own = o ? NULL : tj_options_new();
    if (own)
        CHECK_OK(tj_options_set_reaper_interval_ms(own, 0));
    CHECK_OK(tj_queue_open(dir, o ? o : own, &q, &err));
    tj_options_free(own);
    return q;
}

static void version_and_abi_match_the_header(void) {
    tj_error *err = NULL;
    CHECK(tj_abi_version() == TJ_ABI_VERSION);
    CHECK(strcmp(tj_version(), "0.1.0") == 0);
    CHECK(strcmp(tj_status_name(TJ_STATUS_OK), "OK") == 0);
    CHECK(strcmp(tj_status_name(TJ_STATUS_ABORTED), "ABORTED") == 0);
    CHECK(strcmp(tj_status_name(TJ_STATUS_STORE_LOCKED), "STORE_LOCKED") == 0);
    CHECK(strcmp(tj_status_name(TJ_STATUS_NULL_ARGUMENT), "NULL_ARGUMENT") == 0);
    CHECK(strcmp(tj_status_name(12345), "UNKNOWN") == 0);
    CHECK(strcmp(tj_state_name(TJ_STATE_DEAD), "dead") == 0);
    CHECK_OK(TJ_STATUS_OK);
}

static void a_job_goes_enqueue_lease_complete_with_its_event_log(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);

    tj_enqueue_options *eo = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_scope(eo, SCOPE, &err));
    CHECK_OK(tj_enqueue_options_set_priority(eo, 7));
    CHECK_OK(tj_enqueue_options_set_max_attempts(eo, 9));
    const char payload[] = "s3://bucket/a.pdf";
    tj_id id;
    bool created = false;
    uint64_t before = now_ms();
    CHECK_OK(tj_queue_enqueue(q, "ingest:pdf", (const uint8_t *)payload,
                              sizeof payload - 1, eo, &id, &created, &err));
    CHECK(created);
    tj_enqueue_options_free(eo);

    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_add_kind(lo, "ingest:*", &err));
    CHECK_OK(tj_lease_options_add_scope(lo, SCOPE, &err));
    tj_job *job = NULL;
    CHECK_OK(tj_queue_lease_next(q, "worker-1", lo, &job, &err));
    tj_lease_options_free(lo);
    REQUIRE(job != NULL);

    tj_id got = tj_job_id(job);
    CHECK(memcmp(got.bytes, id.bytes, 16) == 0);
    char text[TJ_ID_STRLEN];
    CHECK_OK(tj_id_format(&id, text, sizeof text, &err));
    CHECK(strcmp(text, tj_job_id_str(job)) == 0);
    CHECK(strcmp(tj_job_kind(job), "ingest:pdf") == 0);
    CHECK(strcmp(tj_job_scope(job), SCOPE) == 0);
    CHECK(strcmp(tj_job_worker_id(job), "worker-1") == 0);
    size_t len = 0;
    const uint8_t *p = tj_job_payload(job, &len);
    CHECK(len == sizeof payload - 1 && memcmp(p, payload, len) == 0);
    CHECK(tj_job_attempts(job) == 0);
    CHECK(tj_job_max_attempts(job) == 9);
    CHECK(tj_job_generation(job) == 1);
    CHECK(tj_job_priority(job) == 7);
    /* Default lease TTL: 300 s. */
    CHECK(tj_job_deadline_ms(job) >= before + 299000);
    CHECK(tj_job_deadline_ms(job) <= now_ms() + 301000);
    tj_token tok = tj_job_token(job);
    CHECK(tok.generation == 1 && memcmp(tok.id.bytes, id.bytes, 16) == 0);

    const char result[] = "42 pages";
    CHECK_OK(tj_queue_complete(q, &tok, (const uint8_t *)result,
                               sizeof result - 1, &err));
    tj_job_free(job);

    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_state(info) == TJ_STATE_COMPLETED);
    CHECK(strcmp(tj_job_info_kind(info), "ingest:pdf") == 0);
    CHECK(strcmp(tj_job_info_scope(info), SCOPE) == 0);
    CHECK(strcmp(tj_job_info_id_str(info), text) == 0);
    CHECK(tj_job_info_priority(info) == 7);
    CHECK(tj_job_info_generation(info) == 1);
    CHECK(tj_job_info_lease_deadline_ms(info) == 0);
    CHECK(tj_job_info_created_at_ms(info) >= before);
    CHECK(tj_job_info_last_error(info) == NULL);
    CHECK(tj_job_info_idempotency_key(info) == NULL);
    CHECK(strcmp(tj_job_info_worker_id(info), "worker-1") == 0);
    p = tj_job_info_result(info, &len);
    CHECK(p != NULL && len == sizeof result - 1 && memcmp(p, result, len) == 0);
    p = tj_job_info_payload(info, &len);
    CHECK(len == sizeof payload - 1 && memcmp(p, payload, len) == 0);
    const char *want[] = {"enqueued", "leased", "completed"};
    CHECK(tj_job_info_event_count(info) == 3);
    CHECK(tj_job_info_dropped_events(info) == 0);
    for (size_t i = 0; i < 3 && i < tj_job_info_event_count(info); i++) {
        uint64_t ts = 0;
        const char *tr = NULL, *detail = NULL;
        CHECK_OK(tj_job_info_event(info, i, &ts, &tr, &detail, &err));
        CHECK(strcmp(tr, want[i]) == 0);
        CHECK(detail != NULL);
        CHECK(ts >= before);
    }
    tj_job_info_free(info);

    /* An unknown id is no job, not an error. */
    tj_id unknown;
    memset(&unknown, 0xab, sizeof unknown);
    info = (tj_job_info *)&unknown; /* must be overwritten with NULL */
    CHECK_OK(tj_queue_get(q, &unknown, &info, &err));
    CHECK(info == NULL);

    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void a_repeated_idempotency_key_returns_the_existing_job(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_enqueue_options *eo = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_idempotency_key(eo, "doc-42", &err));
    tj_id a, b;
    bool created_a = false, created_b = true;
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, eo, &a, &created_a, &err));
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, eo, &b, &created_b, &err));
    CHECK(created_a && !created_b);
    CHECK(memcmp(a.bytes, b.bytes, 16) == 0);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    CHECK(info && strcmp(tj_job_info_idempotency_key(info), "doc-42") == 0);
    tj_job_info_free(info);
    tj_enqueue_options_free(eo);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void enqueue_many_and_lease_many_move_batches(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_batch *b = tj_batch_new();
    tj_enqueue_options *urgent = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_priority(urgent, 0));
    for (uint8_t i = 0; i < 10; i++)
        CHECK_OK(tj_batch_add(b, "embed", &i, 1, i == 9 ? urgent : NULL, &err));
    CHECK(tj_batch_len(b) == 10);
    tj_id ids[10];
    bool created[10];
    CHECK_OK(tj_queue_enqueue_many(q, b, ids, created, &err));
    for (int i = 0; i < 10; i++)
        CHECK(created[i]);
    /* One invalid job rejects the whole batch. */
    CHECK_OK(tj_batch_add(b, "Not A Kind", NULL, 0, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue_many(q, b, NULL, NULL, &err));
    tj_batch_clear(b);
    CHECK(tj_batch_len(b) == 0);

    tj_job *jobs[4] = {0};
    size_t n = 99;
    CHECK_OK(tj_queue_lease_many(q, "w", NULL, 4, jobs, &n, &err));
    CHECK(n == 4);
    /* The urgent one first, then FIFO. */
    if (n == 4) {
        size_t len;
        CHECK(*tj_job_payload(jobs[0], &len) == 9);
        CHECK(*tj_job_payload(jobs[1], &len) == 0);
        CHECK(*tj_job_payload(jobs[3], &len) == 2);
    }
    for (size_t i = 0; i < n; i++) {
        tj_token t = tj_job_token(jobs[i]);
        CHECK_OK(tj_queue_complete(q, &t, NULL, 0, &err));
        tj_job_free(jobs[i]);
    }
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    tj_state_counts c = tj_stats_total(s);
    CHECK(c.pending == 6 && c.completed == 4 && c.leased == 0);
    tj_stats_free(s);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_lease_many(q, "w", NULL, 0, jobs, &n, &err));
    tj_enqueue_options_free(urgent);
    tj_batch_free(b);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void extend_answers_per_token(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
    tj_job *a = NULL, *b = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &a, &err));
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &b, &err));
    REQUIRE(a && b);
    tj_token toks[4] = {tj_job_token(a), tj_job_token(b), tj_job_token(a),
                        tj_job_token(b)};
    toks[2].generation = 77; /* a stale generation */
    memset(toks[3].id.bytes, 0x11, 16); /* no such job */
    tj_status st[4];
    uint64_t dl[4];
    CHECK_OK(tj_queue_extend(q, "w", toks, 4, st, dl, &err));
    CHECK(st[0] == TJ_STATUS_OK && dl[0] >= tj_job_deadline_ms(a));
    CHECK(st[1] == TJ_STATUS_OK && dl[1] >= tj_job_deadline_ms(b));
    CHECK(st[2] == TJ_STATUS_ABORTED && dl[2] == 0);
    CHECK(st[3] == TJ_STATUS_NOT_FOUND && dl[3] == 0);
    /* Another worker's heartbeat on our lease is refused. */
    CHECK_OK(tj_queue_extend(q, "someone-else", toks, 1, st, NULL, &err));
    CHECK(st[0] == TJ_STATUS_ABORTED);
    /* Zero tokens need no arrays. */
    CHECK_OK(tj_queue_extend(q, "w", NULL, 0, NULL, NULL, &err));
    tj_job_free(a);
    tj_job_free(b);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void release_keeps_attempts_and_retry_revives_the_dead(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id id;
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, &id, NULL, &err));
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    REQUIRE(j);
    tj_token t = tj_job_token(j);
    tj_job_free(j);
    CHECK_OK(tj_queue_release(q, &t, &err));
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    CHECK(info && tj_job_info_state(info) == TJ_STATE_PENDING &&
          tj_job_info_attempts(info) == 0);
    tj_job_info_free(info);

    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    REQUIRE(j);
    t = tj_job_token(j);
    tj_job_free(j);
    CHECK_OK(tj_queue_fail(q, &t, "bad input file", false, &err));
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    CHECK(info && tj_job_info_state(info) == TJ_STATE_DEAD);
    CHECK(info && strcmp(tj_job_info_last_error(info), "bad input file") == 0);
    tj_job_info_free(info);

    CHECK_OK(tj_queue_retry(q, &id, &err));
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    CHECK(info && tj_job_info_state(info) == TJ_STATE_PENDING &&
          tj_job_info_attempts(info) == 0);
    tj_job_info_free(info);
    /* A pending job cannot be retried. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_retry(q, &id, &err));
    tj_id unknown;
    memset(&unknown, 0x22, sizeof unknown);
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_retry(q, &unknown, &err));
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void list_pages_through_every_job_with_a_cursor(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    for (int i = 0; i < 25; i++)
        CHECK_OK(tj_queue_enqueue(q, i % 5 ? "embed" : "ingest:pdf", NULL, 0,
                                  NULL, NULL, NULL, &err));
    tj_list_options *lo = tj_list_options_new();
    CHECK_OK(tj_list_options_set_limit(lo, 10));
    CHECK_OK(tj_list_options_set_state(lo, TJ_STATE_PENDING, &err));
    size_t seen = 0, pages = 0;
    for (;;) {
        tj_list_page *page = NULL;
        CHECK_OK(tj_queue_list(q, lo, &page, &err));
        if (!page)
            break;
        pages++;
        seen += tj_list_page_len(page);
        CHECK(tj_list_page_corrupt_count(page) == 0);
        for (size_t i = 0; i < tj_list_page_len(page); i++)
            CHECK(tj_job_info_state(tj_list_page_get(page, i)) == TJ_STATE_PENDING);
        CHECK(tj_list_page_get(page, tj_list_page_len(page)) == NULL);
        const char *next = tj_list_page_next(page);
        if (next)
            CHECK_OK(tj_list_options_set_after(lo, next, &err));
        tj_list_page_free(page); /* set_after copied the cursor */
        if (!next || pages > 10)
            break;
    }
    CHECK(seen == 25);
    CHECK(pages >= 3);
    /* A kind filter. */
    tj_list_options *ko = tj_list_options_new();
    CHECK_OK(tj_list_options_set_kind(ko, "ingest:*", &err));
    CHECK_OK(tj_list_options_set_scope(ko, "00000000-0000-0000-0000-000000000000", &err));
    tj_list_page *page = NULL;
    CHECK_OK(tj_queue_list(q, ko, &page, &err));
    CHECK(tj_list_page_len(page) == 5);
    tj_list_page_free(page);
    CHECK_OK(tj_list_options_set_after(ko, "garbage-cursor", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_list(q, ko, &page, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_list_options_set_state(ko, 9, &err));
    /* NULL options: the first page of everything. */
    CHECK_OK(tj_queue_list(q, NULL, &page, &err));
    CHECK(tj_list_page_len(page) == 25);
    tj_list_page_free(page);
    tj_list_options_free(ko);
    tj_list_options_free(lo);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void stats_metrics_and_reap_report(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set_reaper_interval_ms(o, 0));
    CHECK_OK(tj_options_set_kind_lease_ttl_ms(o, "embed", 1, &err));
    tj_queue *q = open_store(dir, o);
    tj_options_free(o);
    REQUIRE(q != NULL);
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_OK(tj_queue_enqueue(q, "ingest:csv", NULL, 0, NULL, NULL, NULL, &err));
    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_add_kind(lo, "embed", &err));
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", lo, &j, &err));
    CHECK(j != NULL);
    tj_job_free(j);
    tj_lease_options_free(lo);
    sleep_ms(20); /* past the 1 ms lease TTL of "embed" */
    tj_reap_report r;
    memset(&r, 0xff, sizeof r);
    CHECK_OK(tj_queue_reap(q, &r, &err));
    CHECK(r.expired == 1 && r.dead == 0 && r.pruned == 0 && r.corrupt == 0);

    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    REQUIRE(s != NULL);
    tj_state_counts t = tj_stats_total(s);
    CHECK(t.pending == 2 && t.leased == 0);
    CHECK(tj_stats_kind_count(s) == 2);
    const char *kind = NULL;
    tj_state_counts kc;
    CHECK_OK(tj_stats_kind(s, 0, &kind, &kc, &err));
    CHECK(kind && strcmp(kind, "embed") == 0 && kc.pending == 1);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_stats_kind(s, 2, &kind, &kc, &err));
    tj_stats_free(s);

    char *text = NULL;
    CHECK_OK(tj_queue_metrics(q, &text, &err));
    CHECK(text && strstr(text, "telha_jobs_") != NULL);
    tj_string_free(text);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void every_option_setter_reaches_the_config(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set_lease_ttl_ms(o, 60000));
    CHECK_OK(tj_options_set_reaper_interval_ms(o, 0));
    CHECK_OK(tj_options_set_max_attempts(o, 7));
    CHECK_OK(tj_options_set_backoff_base_ms(o, 500));
    CHECK_OK(tj_options_set_backoff_factor(o, 2.0));
    CHECK_OK(tj_options_set_backoff_cap_ms(o, 60000));
    CHECK_OK(tj_options_set_completed_retention_ms(o, 0));
    CHECK_OK(tj_options_set_sync_writes(o, true));
    CHECK_OK(tj_options_set_max_payload_bytes(o, 1024));
    CHECK_OK(tj_options_set_prune_batch(o, 50));
    CHECK_OK(tj_options_set_kind_lease_ttl_ms(o, "ingest:pdf", 900000, &err));
    CHECK_OK(tj_options_set_kind_max_attempts(o, "ingest:pdf", 3, &err));
    CHECK_OK(tj_options_set_kind_backoff_base_ms(o, "ingest:pdf", 1000, &err));
    CHECK_OK(tj_options_set_kind_backoff_factor(o, "ingest:pdf", 3.0, &err));
    CHECK_OK(tj_options_set_kind_backoff_cap_ms(o, "ingest:pdf", 120000, &err));
    CHECK_OK(tj_options_set_backoff_base_secs_by_kind(o, "clarify:temporal", 900, &err));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    REQUIRE(q != NULL);
    uint64_t t0 = now_ms();
    CHECK_OK(tj_queue_enqueue(q, "ingest:pdf", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
    tj_job *a = NULL, *b = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &a, &err));
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &b, &err));
    REQUIRE(a && b);
    /* Per-kind TTL and attempts for ingest:pdf, the global ones for embed. */
    CHECK(tj_job_deadline_ms(a) >= t0 + 900000 && tj_job_deadline_ms(a) < t0 + 910000);
    CHECK(tj_job_max_attempts(a) == 3);
    CHECK(tj_job_deadline_ms(b) >= t0 + 60000 && tj_job_deadline_ms(b) < t0 + 70000);
    CHECK(tj_job_max_attempts(b) == 7);
    tj_job_free(a);
    tj_job_free(b);
    /* max_payload_bytes = 1024 */
    uint8_t big[1025] = {0};
    CHECK_OK(tj_queue_enqueue(q, "embed", big, 1024, NULL, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "embed", big, 1025, NULL, NULL, NULL, &err));
    /* A second open in this process shares the engine; other options are refused. */
    tj_queue *q2 = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q2, &err));
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q2, &s, &err));
    CHECK(tj_stats_total(s).leased == 2);
    tj_stats_free(s);
    tj_queue_free(q2);
    tj_queue *q3 = (tj_queue *)&q3;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_open(dir, NULL, &q3, &err));
    CHECK(q3 == (tj_queue *)&q3); /* untouched on failure */
    tj_queue_free(q);
    tj_options_free(o);

    /* An out-of-range value is refused by its setter, and the options then
     * refuse to open until it is set again; rules across keys at open. */
    o = tj_options_new();
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_options_set_backoff_factor(o, 0.5));
    CHECK(tj_queue_open(dir, o, &q, &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err && strstr(tj_error_message(err), "backoff_factor") != NULL);
    tj_error_free(err);
    err = NULL;
    CHECK_OK(tj_options_set_backoff_base_ms(o, 5000));
    CHECK_OK(tj_options_set_backoff_cap_ms(o, 1000));
    CHECK_OK(tj_options_set_backoff_factor(o, 1.5));
    CHECK(tj_queue_open(dir, o, &q, &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err && strstr(tj_error_message(err), "jobs.backoff.cap") != NULL);
    tj_error_free(err);
    err = NULL;
    tj_options_free(o);
    o = tj_options_new();
    CHECK_OK(tj_options_set_kind_max_attempts(o, "Bad Kind", 3, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    tmpdir_remove(dir);
}

static void options_load_reads_a_toml_file(void) {
    tj_error *err = NULL;
    char dir[64], path[96];
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/jobs.toml", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("[jobs]\nlease_ttl = \"10m\"\nreaper_interval = 0\n"
          "[jobs.kinds.\"ingest:pdf\"]\nmax_attempts = 2\n", f);
    fclose(f);
    tj_options *o = NULL;
    CHECK_OK(tj_options_load(path, &o, &err));
    REQUIRE(o != NULL);
    char store[96];
    snprintf(store, sizeof store, "%s/store", dir);
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(store, o, &q, &err));
    tj_options_free(o);
    REQUIRE(q != NULL);
    uint64_t t0 = now_ms();
    CHECK_OK(tj_queue_enqueue(q, "ingest:pdf", NULL, 0, NULL, NULL, NULL, &err));
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    CHECK(j && tj_job_max_attempts(j) == 2);
    CHECK(j && tj_job_deadline_ms(j) >= t0 + 600000 && tj_job_deadline_ms(j) < t0 + 610000);
    tj_job_free(j);
    tj_queue_free(q);

    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("[jobs]\nlease_tll = \"10m\"\n", f); /* a typo */
    fclose(f);
    o = (tj_options *)&o;
    CHECK(tj_options_load(path, &o, &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err && strstr(tj_error_message(err), "lease_tll") != NULL);
    CHECK(o == (tj_options *)&o);
    tj_error_free(err);
    err = NULL;
    tmpdir_remove(dir);
}

static void ids_parse_and_format_round_trip(void) {
    tj_error *err = NULL;
    tj_id id;
    const char *text = "01a2297d-e8cb-7612-a44d-31321cfe28b2";
    CHECK_OK(tj_id_parse(text, &id, &err));
    CHECK(id.bytes[0] == 0x01 && id.bytes[15] == 0xb2);
    char buf[TJ_ID_STRLEN];
    CHECK_OK(tj_id_format(&id, buf, sizeof buf, &err));
    CHECK(strcmp(buf, text) == 0);
    char small[36];
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_id_format(&id, small, sizeof small, &err));
    tj_id before = id;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_id_parse("not-a-uuid", &id, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_id_parse("", &id, &err));
    CHECK(memcmp(&before, &id, sizeof id) == 0);
}

struct waiter {
    tj_queue *q;
    tj_lease_options *lo;
    tj_status status;
    tj_job *job;
};

static void *wait_for_job(void *arg) {
    struct waiter *w = arg;
    w->status = tj_queue_lease_next(w->q, "waiter", w->lo, &w->job, NULL);
    return NULL;
}

static void a_waiting_lease_wakes_on_enqueue_cancel_and_close(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_set_wait_ms(lo, 60000));
    tj_cancel *c = tj_cancel_new();
    CHECK_OK(tj_lease_options_set_cancel(lo, c));

    /* Woken by an enqueue from another thread. */
    struct waiter w = {q, lo, TJ_STATUS_PANIC, NULL};
    pthread_t th;
    uint64_t t0 = now_ms();
    REQUIRE(pthread_create(&th, NULL, wait_for_job, &w) == 0);
    sleep_ms(50);
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
    pthread_join(th, NULL);
    CHECK(w.status == TJ_STATUS_OK && w.job != NULL);
    CHECK(now_ms() - t0 < 30000); /* generous: far below the 60 s wait */
    tj_job_free(w.job);

    /* Ended by a cancel: no job, not an error. */
    w.status = TJ_STATUS_PANIC;
    w.job = (tj_job *)&w;
    REQUIRE(pthread_create(&th, NULL, wait_for_job, &w) == 0);
    sleep_ms(50);
    tj_cancel_cancel(c);
    pthread_join(th, NULL);
    CHECK(w.status == TJ_STATUS_OK && w.job == NULL);
    CHECK(tj_cancel_is_cancelled(c));
    tj_cancel_free(c); /* the options keep their own reference */
    tj_lease_options_free(lo);

    /* Ended by closing the queue from another thread. */
    lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_set_wait_ms(lo, 60000));
    w.lo = lo;
    w.status = TJ_STATUS_PANIC;
    w.job = NULL;
    REQUIRE(pthread_create(&th, NULL, wait_for_job, &w) == 0);
    sleep_ms(50);
    tj_queue_close(q);
    pthread_join(th, NULL);
    CHECK(w.status == TJ_STATUS_CLOSED);
    CHECK(now_ms() - t0 < 30000);
    tj_lease_options_free(lo);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

int main(void) {
    static const struct tj_test tests[] = {
        TEST(version_and_abi_match_the_header),
        TEST(a_job_goes_enqueue_lease_complete_with_its_event_log),
        TEST(a_repeated_idempotency_key_returns_the_existing_job),
        TEST(enqueue_many_and_lease_many_move_batches),
        TEST(extend_answers_per_token),
        TEST(release_keeps_attempts_and_retry_revives_the_dead),
        TEST(list_pages_through_every_job_with_a_cursor),
        TEST(stats_metrics_and_reap_report),
        TEST(every_option_setter_reaches_the_config),
        TEST(options_load_reads_a_toml_file),
        TEST(ids_parse_and_format_round_trip),
        TEST(a_waiting_lease_wakes_on_enqueue_cancel_and_close),
    };
    return run_tests("test_api", tests, sizeof tests / sizeof tests[0]);
}
