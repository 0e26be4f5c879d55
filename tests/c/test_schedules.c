/* Schedules through the C API: a schedule put with every setting and read
 * back (get, list, pause, resume, delete, a reopen); every bad input
 * refused at put with a typed status and a message, nothing stored;
 * NOT_FOUND for unknown names; tj_schedule_next_times' values and its
 * buffer rules; an every-second schedule firing through
 * tj_queue_run_schedules, its job carrying the schedule, and list filtered
 * by schedule; tags and metadata on its jobs (test_schedule_tags.h); NULL
 * for every pointer; every call on a closed queue. */
#include "harness.h"

static const char BAD_UTF8[] = "nightly\xff\xfe";
static const char SCOPE_A[] = "0b7e6a52-3c1e-4f57-9d5e-2a9a4f0c1a01";

/* `max_payload`: the store's max_payload_bytes (NULL: the default). */
static tj_queue *open_store_with(const char *dir, const char *max_payload) {
    tj_error *err = NULL;
    tj_options *o = tj_options_new();
    /* No background threads: slots are enqueued by tj_queue_run_schedules. */
    CHECK_OK(tj_options_set(o, "reaper_interval", "0", &err));
    if (max_payload) CHECK_OK(tj_options_set(o, "max_payload_bytes", max_payload, &err));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    return q;
}

static tj_queue *open_store(const char *dir) { return open_store_with(dir, NULL); }

static size_t schedule_count(tj_queue *q) {
    tj_error *err = NULL;
    tj_schedule_list *l = NULL;
    CHECK_OK(tj_queue_schedule_list(q, &l, &err));
    size_t n = tj_schedule_list_len(l);
    tj_schedule_list_free(l);
    return n;
}

static void a_schedule_round_trips_through_put_get_list_pause_resume_and_delete(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    CHECK(schedule_count(q) == 0);

    tj_schedule *s = tj_schedule_new("nightly", "30 2 * * *", "compact");
    REQUIRE(s != NULL);
    CHECK_OK(tj_schedule_set_payload(s, (const uint8_t *)"all\0x", 5, &err));
    CHECK_OK(tj_schedule_set_encoding(s, TJ_ENCODING_BYTES, &err));
    CHECK_OK(tj_schedule_set_timezone(s, "Europe/Lisbon", &err));
    CHECK_OK(tj_schedule_set_scope(s, SCOPE_A, &err));
    CHECK_OK(tj_schedule_set_priority(s, 0));
    CHECK_OK(tj_schedule_set_max_attempts(s, 2));
    CHECK_OK(tj_schedule_set_expires_in_ms(s, 60000));
    CHECK_OK(tj_schedule_set_catch_up(s, TJ_CATCH_UP_ALL, &err));
    CHECK_OK(tj_schedule_set_max_catch_up(s, 10));
    uint64_t before = now_ms();
    tj_schedule_info *i = NULL;
    CHECK_OK(tj_queue_schedule_put(q, s, &i, &err));
    REQUIRE(i != NULL);
    CHECK(strcmp(tj_schedule_info_name(i), "nightly") == 0);
    CHECK(strcmp(tj_schedule_info_spec(i), "30 2 * * *") == 0);
    CHECK(strcmp(tj_schedule_info_timezone(i), "Europe/Lisbon") == 0);
    CHECK(strcmp(tj_schedule_info_kind(i), "compact") == 0);
    CHECK(strcmp(tj_schedule_info_scope(i), SCOPE_A) == 0);
    size_t len = 0;
    const uint8_t *p = tj_schedule_info_payload(i, &len);
    CHECK(len == 5 && p != NULL && memcmp(p, "all\0x", 5) == 0);
    CHECK(tj_schedule_info_payload_encoding(i) == TJ_ENCODING_BYTES);
    CHECK(tj_schedule_info_has_priority(i) && tj_schedule_info_priority(i) == 0);
    CHECK(tj_schedule_info_max_attempts(i) == 2);
    CHECK(tj_schedule_info_expires_in_ms(i) == 60000);
    CHECK(tj_schedule_info_catch_up(i) == TJ_CATCH_UP_ALL);
    CHECK(strcmp(tj_catch_up_name(tj_schedule_info_catch_up(i)), "all") == 0);
    CHECK(tj_schedule_info_max_catch_up(i) == 10);
    CHECK(!tj_schedule_info_paused(i));
    CHECK(tj_schedule_info_created_at_ms(i) >= before);
    CHECK(tj_schedule_info_updated_at_ms(i) >= tj_schedule_info_created_at_ms(i));
    CHECK(tj_schedule_info_cursor_ms(i) >= before - 1000);
    CHECK(!tj_schedule_info_has_last_slot(i) && tj_schedule_info_last_slot_ms(i) == 0);
    CHECK(tj_schedule_info_last_fired_at_ms(i) == 0);
    /* A daily 02:30 in Lisbon: within a day (and a DST hour) of now. */
    CHECK(tj_schedule_info_has_next_slot(i));
    CHECK(tj_schedule_info_next_slot_ms(i) > before);
    CHECK(tj_schedule_info_next_slot_ms(i) <= before + 25 * 3600 * 1000ull);
    CHECK(tj_schedule_info_enqueued(i) == 0 && tj_schedule_info_skipped(i) == 0);
    CHECK(tj_schedule_info_last_error(i) == NULL);
    tj_schedule_info_free(i);
    tj_schedule_free(s);

    /* Defaults read back as "not set"; an interval with an anchor. */
    s = tj_schedule_new("a-first", "every 1h", "sync");
    REQUIRE(s != NULL);
    CHECK_OK(tj_schedule_set_anchor_ms(s, 900000));
    CHECK_OK(tj_schedule_set_paused(s, true));
    CHECK_OK(tj_queue_schedule_put(q, s, NULL, &err)); /* info_out may be NULL */
    tj_schedule_free(s);
    CHECK_OK(tj_queue_schedule_get(q, "a-first", &i, &err));
    REQUIRE(i != NULL);
    CHECK(tj_schedule_info_timezone(i) == NULL && tj_schedule_info_scope(i) == NULL);
    CHECK(!tj_schedule_info_has_priority(i) && tj_schedule_info_max_attempts(i) == 0);
    CHECK(tj_schedule_info_max_catch_up(i) == 0 && tj_schedule_info_expires_in_ms(i) == 0);
    CHECK(tj_schedule_info_catch_up(i) == TJ_CATCH_UP_ONE);
    CHECK(tj_schedule_info_anchor_ms(i) == 900000);
    CHECK(tj_schedule_info_paused(i));
    p = tj_schedule_info_payload(i, &len);
    CHECK(len == 0);
    tj_schedule_info_free(i);

    /* Listed by name. */
    tj_schedule_list *l = NULL;
    CHECK_OK(tj_queue_schedule_list(q, &l, &err));
    CHECK(tj_schedule_list_len(l) == 2);
    CHECK(strcmp(tj_schedule_info_name(tj_schedule_list_get(l, 0)), "a-first") == 0);
    CHECK(strcmp(tj_schedule_info_name(tj_schedule_list_get(l, 1)), "nightly") == 0);
    CHECK(tj_schedule_list_get(l, 2) == NULL);
    tj_schedule_list_free(l);

    /* Replaced in place: unset settings go back to their defaults. */
    s = tj_schedule_new("nightly", "30 2 * * *", "compact-v2");
    CHECK_OK(tj_schedule_set_timezone(s, "Europe/Lisbon", &err));
    CHECK_OK(tj_queue_schedule_put(q, s, &i, &err));
    tj_schedule_free(s);
    CHECK(i && strcmp(tj_schedule_info_kind(i), "compact-v2") == 0);
    CHECK(!tj_schedule_info_has_priority(i) && tj_schedule_info_enqueued(i) == 0);
    tj_schedule_info_free(i);
    CHECK(schedule_count(q) == 2);

    /* Pause (twice), resume. */
    CHECK_OK(tj_queue_schedule_pause(q, "nightly", &i, &err));
    CHECK(i && tj_schedule_info_paused(i));
    tj_schedule_info_free(i);
    CHECK_OK(tj_queue_schedule_pause(q, "nightly", NULL, &err));
    CHECK_OK(tj_queue_schedule_resume(q, "nightly", &i, &err));
    CHECK(i && !tj_schedule_info_paused(i) && tj_schedule_info_has_next_slot(i));
    tj_schedule_info_free(i);

    /* Durable: a reopen reads back the same. */
    tj_queue_free(q);
    q = open_store(dir);
    REQUIRE(q != NULL);
    CHECK(schedule_count(q) == 2);
    CHECK_OK(tj_queue_schedule_get(q, "a-first", &i, &err));
    CHECK(i && tj_schedule_info_paused(i) && tj_schedule_info_anchor_ms(i) == 900000);
    tj_schedule_info_free(i);

    /* Delete; unknown names are NOT_FOUND, out-params untouched. */
    CHECK_OK(tj_queue_schedule_delete(q, "a-first", &err));
    CHECK(schedule_count(q) == 1);
    i = (tj_schedule_info *)0x1;
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_schedule_get(q, "a-first", &i, &err));
    CHECK(i == (tj_schedule_info *)0x1);
    i = NULL;
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_schedule_delete(q, "a-first", &err));
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_schedule_pause(q, "nope", &i, &err));
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_schedule_resume(q, "nope", &i, &err));
    CHECK(i == NULL);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

/* A put of `s` that must fail with INVALID_ARGUMENT and a message. */
static void refused(tj_queue *q, tj_schedule *s, int line) {
    tj_error *err = NULL;
    tj_schedule_info *i = NULL;
    tj_status st = tj_queue_schedule_put(q, s, &i, &err);
    if (st != TJ_STATUS_INVALID_ARGUMENT || !err || tj_error_status(err) != st ||
        !tj_error_message(err)[0] || i != NULL) {
        fprintf(stderr, "  line %d: put answered %s: %s\n", line, tj_status_name(st), tj_error_message(err));
        tj_test_failed = 1;
    }
    tj_error_free(err);
    tj_schedule_info_free(i);
    tj_schedule_free(s);
}

#define REFUSED(q, s) refused(q, s, __LINE__)

static tj_schedule *with_u32(tj_schedule *s, tj_status (*set)(tj_schedule *, uint32_t), uint32_t v) {
    CHECK(set(s, v) == TJ_STATUS_OK);
    return s;
}

static tj_schedule *with_zone(tj_schedule *s, const char *zone) {
    CHECK(tj_schedule_set_timezone(s, zone, NULL) == TJ_STATUS_OK);
    return s;
}

static void every_bad_schedule_is_refused_at_put_with_a_message(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store_with(dir, "1024");
    REQUIRE(q != NULL);
    char long_name[TJ_MAX_SCHEDULE_NAME_LEN + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    REFUSED(q, tj_schedule_new("n", "0 25 * * *", "k"));           /* bad cron */
    REFUSED(q, tj_schedule_new("n", "", "k"));
    REFUSED(q, tj_schedule_new("n", "@sometimes", "k"));
    REFUSED(q, with_zone(tj_schedule_new("n", "0 3 * * *", "k"), "Mars/Olympus"));
    REFUSED(q, tj_schedule_new("n", "every 0s", "k"));
    REFUSED(q, tj_schedule_new("n", "every 500ms", "k"));
    REFUSED(q, with_zone(tj_schedule_new("n", "every 5m", "k"), "UTC"));
    REFUSED(q, tj_schedule_new("", "every 5m", "k"));
    REFUSED(q, tj_schedule_new(long_name, "every 5m", "k"));
    REFUSED(q, tj_schedule_new("tab\there", "every 5m", "k"));
    REFUSED(q, tj_schedule_new("n", "every 5m", "Not A Kind!"));
    REFUSED(q, with_u32(tj_schedule_new("n", "every 5m", "k"), tj_schedule_set_max_attempts, 0));
    REFUSED(q, with_u32(tj_schedule_new("n", "every 5m", "k"), tj_schedule_set_max_catch_up, 0));
    REFUSED(q, with_u32(tj_schedule_new("n", "every 5m", "k"), tj_schedule_set_max_catch_up,
                        TJ_MAX_CATCH_UP + 1));
    REFUSED(q, tj_schedule_new("n", "0 0 30 2 *", "k")); /* never fires */
    tj_schedule *s = tj_schedule_new("n", "every 5m", "k");
    CHECK_OK(tj_schedule_set_expires_in_ms(s, 0));
    REFUSED(q, s);
    s = tj_schedule_new("n", "every 5m", "k");
    CHECK_OK(tj_schedule_set_expires_in_ms(s, UINT64_MAX));
    REFUSED(q, s);
    /* A payload over the store's max_payload_bytes (1024 here). */
    size_t big = 1025;
    uint8_t *buf = calloc(big, 1);
    REQUIRE(buf != NULL);
    s = tj_schedule_new("n", "every 5m", "k");
    CHECK_OK(tj_schedule_set_payload(s, buf, big, &err));
    free(buf);
    REFUSED(q, s);
    CHECK(schedule_count(q) == 0); /* nothing stored */

    /* The name at its limit is fine. */
    long_name[TJ_MAX_SCHEDULE_NAME_LEN] = 0;
    s = tj_schedule_new(long_name, "every 5m", "k");
    CHECK_OK(tj_queue_schedule_put(q, s, NULL, &err));
    tj_schedule_free(s);

    /* Setter checks: the value is refused and the schedule unchanged. */
    s = tj_schedule_new("n", "every 5m", "k");
    CHECK_OK(tj_schedule_set_catch_up(s, TJ_CATCH_UP_SKIP, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_set_catch_up(s, 7, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_set_catch_up(s, UINT32_MAX, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_set_encoding(s, 9, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_set_scope(s, "not-a-uuid", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_schedule_set_payload(s, (const uint8_t *)"x", TJ_MAX_PAYLOAD_BYTES_LIMIT + 1, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_set_payload(s, (const uint8_t *)"x", SIZE_MAX, &err));
    tj_schedule_info *i = NULL;
    CHECK_OK(tj_queue_schedule_put(q, s, &i, &err));
    CHECK(i && tj_schedule_info_catch_up(i) == TJ_CATCH_UP_SKIP && tj_schedule_info_scope(i) == NULL);
    tj_schedule_info_free(i);
    i = NULL;
    tj_schedule_free(s);
    CHECK(strcmp(tj_catch_up_name(7), "unknown") == 0);
    CHECK(strcmp(tj_catch_up_name(TJ_CATCH_UP_ONE), "one") == 0);

    /* Names: empty is INVALID_ARGUMENT, not UTF-8 is INVALID_UTF8. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_schedule_get(q, "", &i, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_schedule_get(q, BAD_UTF8, &i, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_schedule_delete(q, BAD_UTF8, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_schedule_pause(q, BAD_UTF8, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_schedule_resume(q, BAD_UTF8, NULL, &err));
    CHECK(tj_schedule_new(BAD_UTF8, "every 5m", "k") == NULL);
    CHECK(tj_schedule_new("n", BAD_UTF8, "k") == NULL);
    CHECK(tj_schedule_new("n", "every 5m", BAD_UTF8) == NULL);
    s = tj_schedule_new("n", "every 5m", "k");
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_schedule_set_timezone(s, BAD_UTF8, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_schedule_set_scope(s, BAD_UTF8, &err));
    tj_schedule_free(s);
    CHECK(i == NULL);
    CHECK(schedule_count(q) == 2);

    /* The store is still usable. */
    tj_run_report rep = {9, 9, 9, 9};
    CHECK_OK(tj_queue_run_schedules(q, &rep, &err));
    CHECK(rep.enqueued == 0 && rep.failed == 0);
    CHECK_OK(tj_queue_run_schedules(q, NULL, &err)); /* report_out may be NULL */
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void next_times_answers_the_specs_fire_times_into_the_callers_buffer(void) {
    tj_error *err = NULL;
    uint64_t t[8];
    size_t n = 99;
    /* Monday 2026-01-05 09:00 UTC, the first after 2026-01-01. */
    CHECK_OK(tj_schedule_next_times("0 9 * * 1", NULL, NULL, 1767225600000ull, 1, t, &n, &err));
    CHECK(n == 1 && t[0] == 1767603600000ull);
    CHECK_OK(tj_schedule_next_times("*/10 * * * * *", NULL, NULL, 1772323200500ull, 2, t, &n, &err));
    CHECK(n == 2 && t[0] == 1772323210000ull && t[1] == 1772323220000ull);
    CHECK_OK(tj_schedule_next_times("@daily", NULL, NULL, 0, 2, t, &n, &err));
    CHECK(n == 2 && t[0] == 86400000ull && t[1] == 172800000ull);
    uint64_t anchor = 900000;
    CHECK_OK(tj_schedule_next_times("every 1h", NULL, &anchor, 0, 2, t, &n, &err));
    CHECK(n == 2 && t[0] == 900000ull && t[1] == 4500000ull);
    /* Berlin's spring-forward day: 02:30 does not exist, it fires once after the gap. */
    CHECK_OK(tj_schedule_next_times("30 2 * * *", "Europe/Berlin", NULL, 1774699200000ull, 3, t, &n, &err));
    CHECK(n == 3 && t[0] == 1774746000000ull && t[1] == 1774830600000ull && t[2] == 1774917000000ull);

    /* Exactly n written; the rest of the buffer untouched. */
    for (size_t k = 0; k < 8; k++) t[k] = 7;
    CHECK_OK(tj_schedule_next_times("every 5m", NULL, NULL, 0, 3, t, &n, &err));
    CHECK(n == 3 && t[0] == 300000 && t[1] == 600000 && t[2] == 900000 && t[3] == 7);
    /* n 0: no buffer needed, the spec still checked. */
    CHECK_OK(tj_schedule_next_times("every 5m", NULL, NULL, 0, 0, NULL, &n, &err));
    CHECK(n == 0);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_next_times("every 0s", NULL, NULL, 0, 0, NULL, &n, &err));
    /* Fewer than n near the end of time: count says how many. */
    for (size_t k = 0; k < 8; k++) t[k] = 7;
    CHECK_OK(tj_schedule_next_times("every 1h", NULL, NULL, TJ_MAX_INSTANT_MS - 3 * 3600 * 1000ull, 5, t, &n, &err));
    CHECK(n == 3 && t[0] == 253402290000000ull && t[2] == 253402297200000ull && t[3] == 7);

    /* Bad input: typed statuses, out-params untouched. */
    n = 42;
    t[0] = 7;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_next_times("0 25 * * *", NULL, NULL, 0, 1, t, &n, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_next_times("0 3 * * *", "Nowhere/Land", NULL, 0, 1, t, &n, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_next_times("every 0s", NULL, NULL, 0, 1, t, &n, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_next_times("every 5m", "UTC", NULL, 0, 1, t, &n, &err));
    uint64_t *many = calloc(TJ_MAX_NEXT_TIMES + 1, sizeof *many);
    REQUIRE(many != NULL);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_schedule_next_times("* * * * *", NULL, NULL, 0, TJ_MAX_NEXT_TIMES + 1, many, &n, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_schedule_next_times("* * * * *", NULL, NULL, 0, SIZE_MAX, many, &n, &err));
    CHECK_OK(tj_schedule_next_times("* * * * *", NULL, NULL, 0, TJ_MAX_NEXT_TIMES, many, &n, &err));
    CHECK(n == TJ_MAX_NEXT_TIMES && many[0] == 60000 && many[TJ_MAX_NEXT_TIMES - 1] == 60000ull * TJ_MAX_NEXT_TIMES);
    free(many);
    n = 42;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_schedule_next_times("@daily", NULL, NULL, TJ_MAX_INSTANT_MS + 1, 1, t, &n, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_next_times("@daily", NULL, NULL, UINT64_MAX, 1, t, &n, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_next_times(NULL, NULL, NULL, 0, 1, t, &n, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_next_times("@daily", NULL, NULL, 0, 1, NULL, &n, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_next_times("@daily", NULL, NULL, 0, 1, t, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_schedule_next_times(BAD_UTF8, NULL, NULL, 0, 1, t, &n, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_schedule_next_times("@daily", BAD_UTF8, NULL, 0, 1, t, &n, &err));
    CHECK(n == 42 && t[0] == 7);
}

static void an_every_second_schedule_fires_through_run_schedules(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_schedule *s = tj_schedule_new("tick", "* * * * * *", "tick");
    REQUIRE(s != NULL);
    CHECK_OK(tj_schedule_set_payload(s, (const uint8_t *)"p", 1, &err));
    CHECK_OK(tj_schedule_set_priority(s, 200));
    CHECK_OK(tj_queue_schedule_put(q, s, NULL, &err));
    tj_schedule_free(s);
    s = tj_schedule_new("other", "@yearly", "tick");
    CHECK_OK(tj_queue_schedule_put(q, s, NULL, &err));
    tj_schedule_free(s);
    tj_id plain = {{0}};
    CHECK_OK(tj_queue_enqueue(q, "plain", NULL, 0, NULL, &plain, NULL, &err));

    sleep_ms(1100);
    tj_run_report rep = {0, 0, 0, 0};
    CHECK_OK(tj_queue_run_schedules(q, &rep, &err));
    CHECK(rep.schedules == 1 && rep.enqueued == 1 && rep.failed == 0);

    tj_schedule_info *i = NULL;
    CHECK_OK(tj_queue_schedule_get(q, "tick", &i, &err));
    REQUIRE(i != NULL);
    CHECK(tj_schedule_info_enqueued(i) == 1);
    CHECK(tj_schedule_info_has_last_slot(i) && tj_schedule_info_last_slot_ms(i) % 1000 == 0);
    CHECK(tj_schedule_info_last_fired_at_ms(i) >= tj_schedule_info_last_slot_ms(i));
    CHECK(tj_schedule_info_cursor_ms(i) >= tj_schedule_info_last_slot_ms(i));
    CHECK(tj_schedule_info_last_error(i) == NULL);
    tj_id last = tj_schedule_info_last_job(i);
    uint64_t slot = tj_schedule_info_last_slot_ms(i);
    tj_schedule_info_free(i);

    /* Lease the scheduled job first (priority 200 is after the plain 128). */
    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_add_kind(lo, "tick", &err));
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", lo, &j, &err));
    tj_lease_options_free(lo);
    REQUIRE(j != NULL);
    CHECK(strcmp(tj_job_kind(j), "tick") == 0 && tj_job_priority(j) == 200);
    CHECK(tj_job_schedule_name(j) != NULL && strcmp(tj_job_schedule_name(j), "tick") == 0);
    CHECK(tj_job_schedule_slot_ms(j) > 0 && tj_job_schedule_slot_ms(j) % 1000 == 0);
    CHECK(tj_job_schedule_slot_ms(j) == slot); /* the one job is the latest slot's */
    CHECK(tj_job_schedule_missed(j) <= 2); /* catch_up one: one job for the slots of 1.1 s */
    tj_id id = tj_job_id(j);
    tj_token tok = tj_job_token(j);
    tj_job_free(j);
    CHECK(tj_job_schedule_name(NULL) == NULL && tj_job_schedule_slot_ms(NULL) == 0 && tj_job_schedule_missed(NULL) == 0);

    /* Its info carries the schedule and the idempotency key of its slot. */
    tj_job_info *ji = NULL;
    CHECK_OK(tj_queue_get(q, &id, &ji, &err));
    REQUIRE(ji != NULL);
    CHECK(strcmp(tj_job_info_schedule_name(ji), "tick") == 0);
    CHECK(tj_job_info_schedule_slot_ms(ji) == slot);
    char key[64];
    snprintf(key, sizeof key, "schedule:tick:%llu", (unsigned long long)tj_job_info_schedule_slot_ms(ji));
    CHECK(strcmp(tj_job_info_idempotency_key(ji), key) == 0);
    tj_job_info_free(ji);
    CHECK(memcmp(id.bytes, last.bytes, 16) == 0); /* one job: the schedule's last */
    CHECK_OK(tj_queue_complete(q, &tok, NULL, 0, &err));

    /* A plain job has no schedule. */
    CHECK_OK(tj_queue_get(q, &plain, &ji, &err));
    REQUIRE(ji != NULL);
    CHECK(tj_job_info_schedule_name(ji) == NULL && tj_job_info_schedule_slot_ms(ji) == 0);
    CHECK(tj_job_info_schedule_missed(ji) == 0);
    tj_job_info_free(ji);
    CHECK(tj_job_info_schedule_name(NULL) == NULL && tj_job_info_schedule_missed(NULL) == 0);

    /* List by schedule, also after the schedule is deleted. */
    const char *names[] = {"tick", "other"};
    size_t want[] = {1, 0};
    for (int round = 0; round < 2; round++) {
        for (size_t k = 0; k < 2; k++) {
            tj_list_options *o = tj_list_options_new();
            CHECK_OK(tj_list_options_set_schedule(o, names[k], &err));
            tj_list_page *page = NULL;
            CHECK_OK(tj_queue_list(q, o, &page, &err));
            CHECK(tj_list_page_len(page) == want[k]);
            if (want[k] == 1) {
                const tj_job_info *li = tj_list_page_get(page, 0);
                CHECK(memcmp(tj_job_info_id(li).bytes, id.bytes, 16) == 0);
                CHECK(strcmp(tj_job_info_schedule_name(li), "tick") == 0);
            }
            tj_list_page_free(page);
            tj_list_options_free(o);
        }
        if (round == 0) CHECK_OK(tj_queue_schedule_delete(q, "tick", &err));
    }
    tj_list_options *o = tj_list_options_new();
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_list_options_set_schedule(o, "", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_list_options_set_schedule(o, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_list_options_set_schedule(o, BAD_UTF8, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_list_options_set_schedule(NULL, "tick", &err));
    tj_list_page *page = NULL;
    CHECK_OK(tj_queue_list(q, o, &page, &err)); /* refused filters leave the options unfiltered */
    CHECK(tj_list_page_len(page) == 2);
    tj_list_page_free(page);
    tj_list_options_free(o);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void null_arguments_are_refused_by_name(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    CHECK(tj_schedule_new(NULL, "every 5m", "k") == NULL);
    CHECK(tj_schedule_new("n", NULL, "k") == NULL);
    CHECK(tj_schedule_new("n", "every 5m", NULL) == NULL);
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_set_payload(NULL, (const uint8_t *)"x", 1, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_set_encoding(NULL, 0, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_set_timezone(NULL, "UTC", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_set_scope(NULL, SCOPE_A, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_set_catch_up(NULL, TJ_CATCH_UP_ONE, &err));
    CHECK(tj_schedule_set_anchor_ms(NULL, 0) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(tj_schedule_set_priority(NULL, 0) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(tj_schedule_set_max_attempts(NULL, 1) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(tj_schedule_set_expires_in_ms(NULL, 1) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(tj_schedule_set_max_catch_up(NULL, 1) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(tj_schedule_set_paused(NULL, true) == TJ_STATUS_NULL_ARGUMENT);
    tj_schedule *s = tj_schedule_new("n", "every 5m", "k");
    REQUIRE(s != NULL);
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_set_payload(s, NULL, 1, &err));
    CHECK_OK(tj_schedule_set_payload(s, NULL, 0, &err)); /* a zero length needs no pointer */
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_set_scope(s, NULL, &err));
    CHECK_OK(tj_schedule_set_timezone(s, NULL, &err)); /* NULL: UTC */
    tj_schedule_info *i = NULL;
    tj_schedule_list *l = NULL;
    tj_run_report rep;
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_put(NULL, s, &i, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_put(q, NULL, &i, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_get(NULL, "n", &i, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_get(q, NULL, &i, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_get(q, "n", NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_list(NULL, &l, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_list(q, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_delete(NULL, "n", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_delete(q, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_pause(NULL, "n", &i, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_pause(q, NULL, &i, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_resume(NULL, "n", &i, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_schedule_resume(q, NULL, &i, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_run_schedules(NULL, &rep, &err));
    CHECK(i == NULL && l == NULL);
    /* A NULL err is fine: the status alone. */
    CHECK(tj_queue_schedule_get(q, NULL, &i, NULL) == TJ_STATUS_NULL_ARGUMENT);
    CHECK_OK(tj_queue_schedule_put(q, s, NULL, &err)); /* the store stays usable */
    tj_schedule_free(s);
    CHECK(schedule_count(q) == 1);
    /* Getters and frees given NULL. */
    size_t len = 9;
    CHECK(tj_schedule_info_name(NULL) == NULL && tj_schedule_info_spec(NULL) == NULL);
    CHECK(tj_schedule_info_timezone(NULL) == NULL && tj_schedule_info_kind(NULL) == NULL);
    CHECK(tj_schedule_info_payload(NULL, &len) == NULL && len == 0);
    CHECK(tj_schedule_info_scope(NULL) == NULL && tj_schedule_info_last_error(NULL) == NULL);
    CHECK(!tj_schedule_info_has_priority(NULL) && tj_schedule_info_priority(NULL) == 0);
    CHECK(tj_schedule_info_max_attempts(NULL) == 0 && tj_schedule_info_max_catch_up(NULL) == 0);
    CHECK(tj_schedule_info_catch_up(NULL) == TJ_CATCH_UP_SKIP && !tj_schedule_info_paused(NULL));
    CHECK(tj_schedule_info_created_at_ms(NULL) == 0 && tj_schedule_info_updated_at_ms(NULL) == 0);
    CHECK(tj_schedule_info_cursor_ms(NULL) == 0 && tj_schedule_info_anchor_ms(NULL) == 0);
    CHECK(!tj_schedule_info_has_last_slot(NULL) && tj_schedule_info_last_slot_ms(NULL) == 0);
    CHECK(!tj_schedule_info_has_next_slot(NULL) && tj_schedule_info_next_slot_ms(NULL) == 0);
    CHECK(tj_schedule_info_enqueued(NULL) == 0 && tj_schedule_info_skipped(NULL) == 0);
    CHECK(tj_schedule_info_expires_in_ms(NULL) == 0 && tj_schedule_info_last_fired_at_ms(NULL) == 0);
    CHECK(tj_schedule_info_payload_encoding(NULL) == 0);
    tj_id zero = {{0}}, got = tj_schedule_info_last_job(NULL);
    CHECK(memcmp(zero.bytes, got.bytes, 16) == 0);
    CHECK(tj_schedule_list_len(NULL) == 0 && tj_schedule_list_get(NULL, 0) == NULL);
    tj_schedule_free(NULL);
    tj_schedule_info_free(NULL);
    tj_schedule_list_free(NULL);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void every_schedule_call_on_a_closed_queue_answers_closed(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_schedule *s = tj_schedule_new("n", "every 5m", "k");
    tj_queue_close(q);
    tj_schedule_info *i = NULL;
    tj_schedule_list *l = NULL;
    tj_run_report rep = {1, 2, 3, 4};
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_schedule_put(q, s, &i, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_schedule_get(q, "n", &i, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_schedule_list(q, &l, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_schedule_delete(q, "n", &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_schedule_pause(q, "n", &i, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_schedule_resume(q, "n", &i, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_run_schedules(q, &rep, &err));
    CHECK(i == NULL && l == NULL && rep.schedules == 1 && rep.failed == 4);
    /* next_times needs no store. */
    uint64_t t[1];
    size_t n = 0;
    CHECK_OK(tj_schedule_next_times("@daily", NULL, NULL, 0, 1, t, &n, &err));
    CHECK(n == 1);
    tj_schedule_free(s);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#include "test_schedule_tags.h"

int main(void) {
    static const struct tj_test tests[] = {
        TEST(a_schedule_round_trips_through_put_get_list_pause_resume_and_delete),
        TEST(every_bad_schedule_is_refused_at_put_with_a_message),
        TEST(next_times_answers_the_specs_fire_times_into_the_callers_buffer),
        TEST(an_every_second_schedule_fires_through_run_schedules),
        TEST(a_schedules_tags_and_metadata_go_on_its_jobs),
        TEST(null_arguments_are_refused_by_name),
        TEST(every_schedule_call_on_a_closed_queue_answers_closed),
    };
    return run_tests("test_schedules", tests, sizeof tests / sizeof tests[0]);
}
