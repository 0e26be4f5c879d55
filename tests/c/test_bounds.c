/* Bounds: the header's limits are the ones enforced; every numeric argument
 * (durations, instants, priorities, counts, limits) at 0, huge, 2^53, 2^63
 * and UINT64_MAX gets a typed status and reads back exactly, never a wrap or
 * a crash; a store of a newer format is refused untouched; encodings,
 * lease TTLs and cursors come through. */
#include "harness.h"

#include <math.h>

static const uint64_t NUMBERS[] = {
    0,
    1,
    1000,
    4294967295ull,          /* 2^32 - 1 */
    4294967296ull,          /* 2^32 */
    9007199254740992ull,    /* 2^53 */
    9007199254740993ull,    /* 2^53 + 1 */
    9223372036854775808ull, /* 2^63 */
    18446744073709551614ull,
    UINT64_MAX,
    TJ_MAX_INSTANT_MS,
    TJ_MAX_INSTANT_MS + 1,
    TJ_MAX_DURATION_MS,
    TJ_MAX_DURATION_MS + 1,
};
#define N_NUMBERS (sizeof NUMBERS / sizeof NUMBERS[0])

static tj_queue *open_quiet(const char *dir) {
    tj_error *err = NULL;
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set_reaper_interval_ms(o, 0));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    return q;
}

/* One duration setter at `v` ms: OK exactly when `min <= v <= max`, and
 * then the value reads back as `v` ms (or "off" for a retention of 0). */
static void check_duration_setter(const char *key, tj_status (*set)(tj_options *, uint64_t),
                                  uint64_t v, uint64_t min) {
    tj_error *err = NULL;
    tj_options *o = tj_options_new();
    tj_status want = v >= min && v <= TJ_MAX_DURATION_MS ? TJ_STATUS_OK : TJ_STATUS_INVALID_ARGUMENT;
    tj_status got = set(o, v);
    if (got != want) {
        fprintf(stderr, "  %s(%llu): want %s, got %s\n", key, (unsigned long long)v,
                tj_status_name(want), tj_status_name(got));
        tj_test_failed = 1;
    }
    char text[64], expect[64];
    CHECK_OK(tj_options_get(o, key, text, sizeof text, NULL, &err));
    if (got == TJ_STATUS_OK) {
        if (v == 0 && strcmp(key, "completed_retention") == 0)
            snprintf(expect, sizeof expect, "off");
        else
            snprintf(expect, sizeof expect, "%llums", (unsigned long long)v);
        if (strcmp(text, expect) != 0) {
            fprintf(stderr, "  %s(%llu) reads back %s\n", key, (unsigned long long)v, text);
            tj_test_failed = 1;
        }
    } else {
        /* Refused: open says so, naming the key. */
        char dir[64];
        tmpdir_make(dir);
        tj_queue *q = NULL;
        CHECK(tj_queue_open(dir, o, &q, &err) == TJ_STATUS_INVALID_ARGUMENT);
        CHECK(err && strstr(tj_error_message(err), key) != NULL);
        tj_error_free(err);
        CHECK(q == NULL);
        tmpdir_remove(dir);
    }
    tj_options_free(o);
}

static void every_duration_and_count_setter_is_range_checked(void) {
    tj_error *err = NULL;
    for (size_t i = 0; i < N_NUMBERS; i++) {
        uint64_t v = NUMBERS[i];
        check_duration_setter("lease_ttl", tj_options_set_lease_ttl_ms, v, 1);
        check_duration_setter("reaper_interval", tj_options_set_reaper_interval_ms, v, 0);
        check_duration_setter("backoff_base", tj_options_set_backoff_base_ms, v, 1);
        check_duration_setter("backoff_cap", tj_options_set_backoff_cap_ms, v, 0);
        check_duration_setter("completed_retention", tj_options_set_completed_retention_ms, v, 0);
        tj_options *o = tj_options_new();
        tj_status want = v >= 1 && v <= TJ_MAX_DURATION_MS ? TJ_STATUS_OK : TJ_STATUS_INVALID_ARGUMENT;
        CHECK(tj_options_set_kind_lease_ttl_ms(o, "embed", v, NULL) == want);
        CHECK(tj_options_set_kind_backoff_base_ms(o, "embed", v, NULL) == want);
        /* Counts: size_t and u32 arguments. */
        tj_status pb = tj_options_set_prune_batch(o, (size_t)v);
        CHECK(pb == (v >= 1 && v <= UINT32_MAX ? TJ_STATUS_OK : TJ_STATUS_INVALID_ARGUMENT));
        tj_status mp = tj_options_set_max_payload_bytes(o, (size_t)v);
        CHECK(mp == (v >= 1 && v <= TJ_MAX_PAYLOAD_BYTES_LIMIT ? TJ_STATUS_OK
                                                               : TJ_STATUS_INVALID_ARGUMENT));
        if (v <= UINT32_MAX)
            CHECK(tj_options_set_max_attempts(o, (uint32_t)v) ==
                  (v >= 1 ? TJ_STATUS_OK : TJ_STATUS_INVALID_ARGUMENT));
        if (pb == TJ_STATUS_OK) {
            char text[64], expect[32];
            CHECK_OK(tj_options_get(o, "prune_batch", text, sizeof text, NULL, &err));
            snprintf(expect, sizeof expect, "%llu", (unsigned long long)v);
            CHECK(strcmp(text, expect) == 0);
        }
        /* The internal per-kind map in seconds: checked at open, never a wrap. */
        tj_options *s = tj_options_new();
        CHECK_OK(tj_options_set_backoff_base_secs_by_kind(s, "embed", v, &err));
        char dir[64];
        tmpdir_make(dir);
        tj_queue *q = NULL;
        tj_status st = tj_queue_open(dir, s, &q, &err);
        CHECK(st == (v >= 1 && v <= TJ_MAX_DURATION_MS / 1000 ? TJ_STATUS_OK
                                                             : TJ_STATUS_INVALID_ARGUMENT));
        if (st != TJ_STATUS_OK)
            CHECK(err && strstr(tj_error_message(err), "backoff_base_secs_by_kind"));
        tj_error_free(err);
        err = NULL;
        tj_queue_free(q);
        tmpdir_remove(dir);
        tj_options_free(s);
        tj_options_free(o);
    }
    /* Factors: NaN, infinities, negatives, huge. */
    const double factors[] = {NAN, INFINITY, -INFINITY, -1.0, 0.0, 0.999, 1.0, 4.0,
                              9007199254740992.0, 9223372036854775808.0, 1e300};
    for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++) {
        double f = factors[i];
        tj_options *o = tj_options_new();
        tj_status want = isfinite(f) && f >= 1.0 ? TJ_STATUS_OK : TJ_STATUS_INVALID_ARGUMENT;
        CHECK(tj_options_set_backoff_factor(o, f) == want);
        CHECK(tj_options_set_kind_backoff_factor(o, "embed", f, NULL) == want);
        tj_options_free(o);
    }
}

static void instants_and_delays_past_the_year_9999_are_refused_by_name(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_quiet(dir);
    REQUIRE(q != NULL);
    uint64_t now = now_ms();
    for (size_t i = 0; i < N_NUMBERS; i++) {
        uint64_t v = NUMBERS[i];
        /* run_at: accepted up to the latest instant, and stored exactly. */
        tj_enqueue_options *eo = tj_enqueue_options_new();
        CHECK_OK(tj_enqueue_options_set_run_at_ms(eo, v));
        tj_id id;
        tj_status s = tj_queue_enqueue(q, "embed", NULL, 0, eo, &id, NULL, &err);
        if (v <= TJ_MAX_INSTANT_MS) {
            CHECK_OK(s);
            tj_job_info *info = NULL;
            CHECK_OK(tj_queue_get(q, &id, &info, &err));
            CHECK(info && tj_job_info_state_ts_ms(info) == v);
            tj_job_info_free(info);
        } else {
            CHECK(s == TJ_STATUS_INVALID_ARGUMENT && err &&
                  strstr(tj_error_message(err), "run_at") != NULL);
            tj_error_free(err);
            err = NULL;
        }
        tj_enqueue_options_free(eo);
        /* delay: accepted while now + delay is at most the latest instant. */
        eo = tj_enqueue_options_new();
        CHECK_OK(tj_enqueue_options_set_delay_ms(eo, v));
        s = tj_queue_enqueue(q, "embed", NULL, 0, eo, &id, NULL, &err);
        if (v <= TJ_MAX_INSTANT_MS - now - 60000) {
            CHECK_OK(s);
            tj_job_info *info = NULL;
            CHECK_OK(tj_queue_get(q, &id, &info, &err));
            CHECK(info && tj_job_info_state_ts_ms(info) >= now + v &&
                  tj_job_info_state_ts_ms(info) <= now_ms() + v);
            tj_job_info_free(info);
        } else if (v > TJ_MAX_INSTANT_MS - now) {
            CHECK(s == TJ_STATUS_INVALID_ARGUMENT && err &&
                  strstr(tj_error_message(err), "delay") != NULL);
            tj_error_free(err);
            err = NULL;
        }
        tj_enqueue_options_free(eo);
    }
    /* Priorities at both ends; an attempt ceiling of 0 is refused. */
    tj_enqueue_options *eo = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_priority(eo, 255));
    CHECK_OK(tj_enqueue_options_set_max_attempts(eo, UINT32_MAX));
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, eo, NULL, NULL, &err));
    CHECK_OK(tj_enqueue_options_set_priority(eo, 0));
    CHECK_OK(tj_enqueue_options_set_max_attempts(eo, 0));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue(q, "embed", NULL, 0, eo, NULL, NULL, &err));
    tj_enqueue_options_free(eo);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void waits_counts_and_indexes_of_any_size_get_a_typed_answer(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_quiet(dir);
    REQUIRE(q != NULL);
    tj_cancel *c = tj_cancel_new();
    tj_cancel_cancel(c);
    tj_job *jobs[4] = {NULL};
    for (size_t i = 0; i < N_NUMBERS; i++) {
        /* A wait of any length: with nothing ready and the cancel fired it
         * returns at once with no job; with a job ready it returns the job. */
        tj_lease_options *lo = tj_lease_options_new();
        CHECK_OK(tj_lease_options_set_wait_ms(lo, NUMBERS[i]));
        CHECK_OK(tj_lease_options_set_cancel(lo, c));
        tj_job *j = (tj_job *)&j;
        CHECK_OK(tj_queue_lease_next(q, "w", lo, &j, &err));
        CHECK(j == NULL);
        CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
        CHECK_OK(tj_queue_lease_next(q, "w", lo, &j, &err));
        CHECK(j != NULL);
        if (j) {
            tj_token t = tj_job_token(j);
            CHECK_OK(tj_queue_complete(q, &t, NULL, 0, &err));
        }
        tj_job_free(j);
        tj_lease_options_free(lo);
        /* Batch sizes and page sizes past the limits are refused before any
         * out-array is written. */
        size_t m = (size_t)NUMBERS[i], n = 99;
        if (m == 0 || m > TJ_MAX_BATCH) {
            CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                         tj_queue_lease_many(q, "w", NULL, m, jobs, &n, &err));
            CHECK(n == 99 && jobs[0] == NULL);
        }
        tj_list_options *li = tj_list_options_new();
        CHECK_OK(tj_list_options_set_limit(li, m));
        tj_list_page *page = NULL;
        tj_status s = tj_queue_list(q, li, &page, &err);
        CHECK(s == (m >= 1 && m <= TJ_MAX_LIST_LIMIT ? TJ_STATUS_OK : TJ_STATUS_INVALID_ARGUMENT));
        tj_list_page_free(page);
        tj_list_options_free(li);
    }
    tj_cancel_free(c);
    /* The limits themselves are allowed; one over is not. */
    tj_job **many = calloc(TJ_MAX_BATCH, sizeof *many);
    REQUIRE(many != NULL);
    size_t n = 0;
    CHECK_OK(tj_queue_lease_many(q, "w", NULL, TJ_MAX_BATCH, many, &n, &err));
    CHECK(n == 0);
    free(many);
    char worker[TJ_MAX_WORKER_ID_LEN + 2];
    memset(worker, 'w', sizeof worker - 1);
    worker[sizeof worker - 1] = '\0';
    tj_job *j = NULL;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_lease_next(q, worker, NULL, &j, &err));
    worker[TJ_MAX_WORKER_ID_LEN] = '\0';
    CHECK_OK(tj_queue_lease_next(q, worker, NULL, &j, &err));
    char kind[TJ_MAX_KIND_LEN + 2];
    memset(kind, 'k', sizeof kind - 1);
    kind[sizeof kind - 1] = '\0';
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue(q, kind, NULL, 0, NULL, NULL, NULL, &err));
    kind[TJ_MAX_KIND_LEN] = '\0';
    CHECK_OK(tj_queue_enqueue(q, kind, NULL, 0, NULL, NULL, NULL, &err));
    char key[TJ_MAX_IDEMPOTENCY_KEY_LEN + 2];
    memset(key, 'i', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    tj_enqueue_options *eo = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_idempotency_key(eo, key, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue(q, "embed", NULL, 0, eo, NULL, NULL, &err));
    key[TJ_MAX_IDEMPOTENCY_KEY_LEN] = '\0';
    CHECK_OK(tj_enqueue_options_set_idempotency_key(eo, key, &err));
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, eo, NULL, NULL, &err));
    tj_enqueue_options_free(eo);
    /* Indexes and lengths at SIZE_MAX. */
    tj_batch *b = tj_batch_new();
    uint8_t byte = 1;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_batch_add(b, "embed", &byte, SIZE_MAX, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_batch_add(b, "embed", &byte, TJ_MAX_PAYLOAD_BYTES_LIMIT + 1, NULL, &err));
    tj_batch_free(b);
    tj_config_key k;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_config_key_at(SIZE_MAX, &k, &err));
    tj_token t = {{{0}}, 1};
    tj_status st[1];
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_extend(q, "w", &t, SIZE_MAX, st, NULL, &err));
    tj_queue_free(q);
    tmpdir_remove(dir);
}

/* Every file below `dir` as one "path size hash" line each, sorted. */
static char snap[8192];
static size_t snap_len;
static int snap_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)ftw;
    if (flag != FTW_F)
        return 0;
    if (snap_len >= sizeof snap - 1)
        return 1;
    FILE *f = fopen(path, "rb");
    uint64_t h = 0xcbf29ce484222325ull;
    int ch;
    while (f && (ch = fgetc(f)) != EOF)
        h = (h ^ (uint64_t)ch) * 0x100000001b3ull;
    if (f)
        fclose(f);
    snap_len += (size_t)snprintf(snap + snap_len, sizeof snap - snap_len, "%s %lld %016llx\n",
                                 path, (long long)sb->st_size, (unsigned long long)h);
    return 0;
}
static void snapshot(const char *dir, char *out, size_t cap) {
    snap_len = 0;
    snap[0] = '\0';
    nftw(dir, snap_entry, 16, FTW_PHYS);
    snprintf(out, cap, "%s", snap);
}

static void a_store_of_a_newer_format_is_refused_untouched(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_quiet(dir);
    REQUIRE(q != NULL);
    CHECK_OK(tj_queue_enqueue(q, "embed", (const uint8_t *)"x", 1, NULL, NULL, NULL, &err));
    tj_queue_free(q);
    char marker[96];
    snprintf(marker, sizeof marker, "%s/telha.format", dir);
    FILE *f = fopen(marker, "w");
    REQUIRE(f != NULL);
    fputs("format = 9\ncompatible_from = 9\n", f);
    fclose(f);
    static char before[8192], after[8192];
    snapshot(dir, before, sizeof before);
    CHECK(strstr(before, "telha.format") != NULL);
    q = (tj_queue *)&q;
    CHECK(tj_queue_open(dir, NULL, &q, &err) == TJ_STATUS_UNSUPPORTED_FORMAT);
    CHECK(err && tj_error_status(err) == TJ_STATUS_UNSUPPORTED_FORMAT &&
          strstr(tj_error_message(err), "9") != NULL);
    tj_error_free(err);
    err = NULL;
    CHECK(q == (tj_queue *)&q);
    CHECK_STATUS(TJ_STATUS_UNSUPPORTED_FORMAT, tj_queue_open_read_only(dir, &q, &err));
    CHECK(strcmp(tj_status_name(TJ_STATUS_UNSUPPORTED_FORMAT), "UNSUPPORTED_FORMAT") == 0);
    snapshot(dir, after, sizeof after);
    CHECK(strcmp(before, after) == 0);
    tmpdir_remove(dir);
}

static void encodings_lease_ttls_and_cursors_come_through(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set(o, "reaper_interval", "0", &err));
    CHECK_OK(tj_options_set(o, "lease_ttl", "45s", &err));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    REQUIRE(q != NULL);
    /* Bytes that look like the convention, recorded as bytes: C reads the
     * same raw bytes, and the encoding says how they were made. */
    const uint8_t looks[] = {0x01, 0x91, 0x01};
    tj_enqueue_options *eo = tj_enqueue_options_new();
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_encoding(eo, 3, &err));
    CHECK_OK(tj_enqueue_options_set_encoding(eo, TJ_ENCODING_BYTES, &err));
    tj_id a, b;
    CHECK_OK(tj_queue_enqueue(q, "embed", looks, sizeof looks, eo, &a, NULL, &err));
    tj_enqueue_options_free(eo);
    CHECK_OK(tj_queue_enqueue(q, "embed", looks, sizeof looks, NULL, &b, NULL, &err));
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    REQUIRE(j != NULL);
    CHECK(memcmp(tj_job_id(j).bytes, a.bytes, 16) == 0);
    CHECK(tj_job_payload_encoding(j) == TJ_ENCODING_BYTES);
    CHECK(tj_job_lease_ttl_ms(j) == 45000);
    size_t len = 0;
    const uint8_t *p = tj_job_payload(j, &len);
    CHECK(len == sizeof looks && memcmp(p, looks, len) == 0);
    tj_token t = tj_job_token(j);
    const uint8_t value[] = {0x01, 0xc3}; /* the convention's `true` */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_complete_with_encoding(q, &t, value, sizeof value, 7, &err));
    CHECK_OK(tj_queue_complete_with_encoding(q, &t, value, sizeof value, TJ_ENCODING_VALUE, &err));
    tj_job_free(j);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_payload_encoding(info) == TJ_ENCODING_BYTES);
    CHECK(tj_job_info_result_encoding(info) == TJ_ENCODING_VALUE);
    p = tj_job_info_result(info, &len);
    CHECK(len == sizeof value && memcmp(p, value, len) == 0);
    tj_job_info_free(info);
    CHECK_OK(tj_queue_get(q, &b, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_payload_encoding(info) == TJ_ENCODING_UNKNOWN);
    CHECK(tj_job_info_result_encoding(info) == TJ_ENCODING_UNKNOWN);
    tj_job_info_free(info);
    /* A job's cursor lists what comes after it. */
    tj_list_options *li = tj_list_options_new();
    tj_list_page *page = NULL;
    CHECK_OK(tj_queue_list(q, li, &page, &err));
    REQUIRE(page && tj_list_page_len(page) == 2);
    const tj_job_info *first = tj_list_page_get(page, 0);
    const tj_job_info *second = tj_list_page_get(page, 1);
    CHECK_OK(tj_list_options_set_after(li, tj_job_info_cursor(first), &err));
    tj_list_page *rest = NULL;
    CHECK_OK(tj_queue_list(q, li, &rest, &err));
    CHECK(rest && tj_list_page_len(rest) == 1 &&
          strcmp(tj_job_info_id_str(tj_list_page_get(rest, 0)), tj_job_info_id_str(second)) == 0);
    tj_list_page_free(rest);
    tj_list_page_free(page);
    tj_list_options_free(li);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

int main(void) {
    static const struct tj_test tests[] = {
        TEST(every_duration_and_count_setter_is_range_checked),
        TEST(instants_and_delays_past_the_year_9999_are_refused_by_name),
        TEST(waits_counts_and_indexes_of_any_size_get_a_typed_answer),
        TEST(a_store_of_a_newer_format_is_refused_untouched),
        TEST(encodings_lease_ttls_and_cursors_come_through),
    };
    return run_tests("test_bounds", tests, sizeof tests / sizeof tests[0]);
}
