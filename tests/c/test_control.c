/* Job control through the C API: cancel (each state, the heartbeat's
 * CANCELLED, the settle that records it), cancel_many, delete, snooze,
 * fail with a retry delay, expiry, pause/resume, the kind's timeout; and
 * hostile input to each (NULL, bad UTF-8, malformed kinds/scopes/targets,
 * absurd delays): typed statuses, the store still usable. Flow control
 * (limits) and follow-up jobs (complete_then, parents) are in
 * test_control_flow.h; fan-in in test_control_fanin.h; job keys in
 * test_control_keys.h. */
#include "harness.h"

static const char BAD_UTF8[] = "emb\xff\xfe";
static const char SCOPE_A[] = "0b7e6a52-3c1e-4f57-9d5e-2a9a4f0c1a01";

static tj_queue *open_store(const char *dir, const char *kind_timeout) {
    tj_error *err = NULL;
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set(o, "reaper_interval", "0", &err));
    CHECK_OK(tj_options_set(o, "backoff_base", "1ms", &err));
    CHECK_OK(tj_options_set(o, "backoff_cap", "1ms", &err));
    if (kind_timeout) CHECK_OK(tj_options_set_kind(o, "slow", "timeout", kind_timeout, &err));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    return q;
}

static tj_id enqueue(tj_queue *q, const char *kind, const char *scope) {
    tj_error *err = NULL;
    tj_enqueue_options *o = tj_enqueue_options_new();
    if (scope) CHECK_OK(tj_enqueue_options_set_scope(o, scope, &err));
    tj_id id = {{0}};
    CHECK_OK(tj_queue_enqueue(q, kind, (const uint8_t *)"p", 1, o, &id, NULL, &err));
    tj_enqueue_options_free(o);
    return id;
}

static tj_job *lease(tj_queue *q) {
    tj_error *err = NULL;
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    return j;
}

static uint32_t state_of(tj_queue *q, tj_id id) {
    tj_error *err = NULL;
    tj_job_info *i = NULL;
    CHECK_OK(tj_queue_get(q, &id, &i, &err));
    uint32_t s = i ? tj_job_info_state(i) : 0;
    tj_job_info_free(i);
    return s;
}

static void cancel_each_state_and_a_leased_job_through_its_heartbeat(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed", NULL), b = enqueue(q, "embed", NULL);
    tj_job *j = lease(q);
    REQUIRE(j != NULL);
    tj_token t = tj_job_token(j);
    CHECK(memcmp(t.id.bytes, a.bytes, 16) == 0);
    tj_cancel_outcome o = 0;
    CHECK_OK(tj_queue_cancel(q, &b, "wrong batch", &o, &err));
    CHECK(o == TJ_CANCEL_CANCELLED);
    CHECK(state_of(q, b) == TJ_STATE_CANCELLED);
    CHECK_OK(tj_queue_cancel(q, &a, "stop", &o, &err));
    CHECK(o == TJ_CANCEL_REQUESTED);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_state(info) == TJ_STATE_LEASED);
    CHECK(strcmp(tj_job_info_cancel_requested(info), "stop") == 0);
    tj_job_info_free(info);
    /* The heartbeat answers CANCELLED (not renewed); the settle records it. */
    tj_status st[1] = {TJ_STATUS_OK};
    uint64_t deadline[1] = {7};
    CHECK_OK(tj_queue_extend(q, "w", &t, 1, st, deadline, &err));
    CHECK(st[0] == TJ_STATUS_CANCELLED);
    CHECK(deadline[0] == 0);
    CHECK_STATUS(TJ_STATUS_CANCELLED, tj_queue_complete(q, &t, NULL, 0, &err));
    CHECK(state_of(q, a) == TJ_STATE_CANCELLED);
    /* Finished jobs: WRONG_STATE, the outcome untouched; unknown: NOT_FOUND. */
    o = 42;
    CHECK_STATUS(TJ_STATUS_WRONG_STATE, tj_queue_cancel(q, &a, NULL, &o, &err));
    CHECK(o == 42);
    tj_id nobody = {{1}};
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_cancel(q, &nobody, NULL, NULL, &err));
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    CHECK(tj_stats_total(s).cancelled == 2);
    CHECK(tj_stats_total(s).leased == 0);
    tj_stats_free(s);
    CHECK(strcmp(tj_state_name(TJ_STATE_CANCELLED), "cancelled") == 0);
    CHECK(strcmp(tj_status_name(TJ_STATUS_CANCELLED), "CANCELLED") == 0);
    CHECK(strcmp(tj_status_name(TJ_STATUS_WRONG_STATE), "WRONG_STATE") == 0);
    CHECK(TJ_STATUS_CANCELLED == 9 && TJ_STATUS_WRONG_STATE == 10 && TJ_STATE_CANCELLED == 6);
    tj_job_free(j);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void cancel_many_by_kind_scope_and_state(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    for (int i = 0; i < 3; i++) enqueue(q, "ingest:pdf", SCOPE_A);
    tj_id other = enqueue(q, "embed", SCOPE_A);
    tj_id held = enqueue(q, "ingest:html", NULL);
    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_add_kind(lo, "ingest:html", &err));
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", lo, &j, &err));
    tj_lease_options_free(lo);
    REQUIRE(j != NULL);
    tj_cancel_report r = {9, 9, 9};
    CHECK_OK(tj_queue_cancel_many(q, "ingest:*", SCOPE_A, TJ_STATE_PENDING, "bulk", &r, &err));
    CHECK(r.cancelled == 3 && r.requested == 0 && r.corrupt == 0);
    CHECK_OK(tj_queue_cancel_many(q, "ingest:*", NULL, 0, NULL, &r, &err));
    CHECK(r.cancelled == 0 && r.requested == 1);
    CHECK(state_of(q, other) == TJ_STATE_PENDING);
    CHECK(state_of(q, held) == TJ_STATE_LEASED);
    /* Refused, nothing changed, the report untouched. */
    r.cancelled = 77;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_cancel_many(q, NULL, NULL, TJ_STATE_COMPLETED, NULL, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_cancel_many(q, NULL, NULL, 999, NULL, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_cancel_many(q, "Embed", NULL, 0, NULL, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_cancel_many(q, "x*", NULL, 0, NULL, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_cancel_many(q, NULL, "not-a-uuid", 0, NULL, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_cancel_many(q, BAD_UTF8, NULL, 0, NULL, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_cancel_many(q, NULL, NULL, 0, BAD_UTF8, &r, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_cancel_many(NULL, NULL, NULL, 0, NULL, &r, &err));
    CHECK(r.cancelled == 77);
    CHECK(state_of(q, other) == TJ_STATE_PENDING);
    tj_job_free(j);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void purge_deletes_finished_jobs_before_the_cutoff(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id done = enqueue(q, "embed", NULL);
    tj_id live = enqueue(q, "embed", NULL);
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    REQUIRE(j != NULL);
    tj_token t = tj_job_token(j);
    CHECK_OK(tj_queue_complete(q, &t, NULL, 0, &err));
    tj_job_free(j);
    uint64_t n = 99;
    CHECK_OK(tj_queue_purge(q, TJ_STATE_COMPLETED, now_ms() - 60000, &n, &err));
    CHECK(n == 0);
    CHECK(state_of(q, done) == TJ_STATE_COMPLETED);
    CHECK_OK(tj_queue_purge(q, TJ_STATE_COMPLETED, now_ms() + 60000, &n, &err));
    CHECK(n == 1);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &done, &info, &err));
    CHECK(info == NULL);
    CHECK_OK(tj_queue_purge(q, TJ_STATE_DEAD, now_ms(), NULL, &err));
    /* Refused, nothing changed, the count untouched. */
    n = 77;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_purge(q, TJ_STATE_PENDING, now_ms(), &n, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_purge(q, 999, now_ms(), &n, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_purge(q, 0, now_ms(), &n, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_purge(NULL, TJ_STATE_DEAD, now_ms(), &n, &err));
    CHECK(n == 77);
    CHECK(state_of(q, live) == TJ_STATE_PENDING);
    tj_queue_close(q);
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_purge(q, TJ_STATE_DEAD, now_ms(), &n, &err));
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void delete_removes_unleased_jobs_and_refuses_a_leased_one(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed", NULL), b = enqueue(q, "embed", NULL);
    tj_job *j = lease(q);
    REQUIRE(j != NULL);
    CHECK_STATUS(TJ_STATUS_WRONG_STATE, tj_queue_delete(q, &a, &err));
    CHECK(state_of(q, a) == TJ_STATE_LEASED);
    CHECK_OK(tj_queue_delete(q, &b, &err));
    tj_job_info *info = (tj_job_info *)1;
    CHECK_OK(tj_queue_get(q, &b, &info, &err));
    CHECK(info == NULL);
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_delete(q, &b, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_delete(q, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_delete(NULL, &a, &err));
    /* Cancel first, then it deletes. */
    CHECK_OK(tj_queue_cancel(q, &a, NULL, NULL, &err));
    tj_token t = tj_job_token(j);
    CHECK_STATUS(TJ_STATUS_CANCELLED, tj_queue_release(q, &t, &err));
    CHECK_OK(tj_queue_delete(q, &a, &err));
    tj_job_free(j);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void snooze_keeps_attempts_and_fail_in_sets_the_retry(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed", NULL);
    tj_job *j = lease(q);
    REQUIRE(j != NULL);
    tj_token t = tj_job_token(j);
    tj_job_free(j);
    /* Absurd delays are refused and the lease is still held. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_snooze(q, &t, UINT64_MAX, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_fail_in(q, &t, "x", true, UINT64_MAX, &err));
    CHECK(state_of(q, a) == TJ_STATE_LEASED);
    CHECK_OK(tj_queue_snooze(q, &t, 150, &err));
    /* A repeat is a retry: answered as the first, the first delay kept;
     * another settle of the token is refused. */
    CHECK_OK(tj_queue_snooze(q, &t, 10, &err));
    CHECK_STATUS(TJ_STATUS_ABORTED, tj_queue_release(q, &t, &err));
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_state(info) == TJ_STATE_PENDING);
    CHECK(tj_job_info_attempts(info) == 0);
    CHECK(tj_job_info_snoozes(info) == 1);
    tj_job_info_free(info);
    CHECK(lease(q) == NULL);
    sleep_ms(200);
    j = lease(q);
    REQUIRE(j != NULL);
    t = tj_job_token(j);
    tj_job_free(j);
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_fail_in(q, &t, NULL, true, 10, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_fail_in(q, &t, BAD_UTF8, true, 10, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_snooze(q, NULL, 10, &err));
    CHECK_OK(tj_queue_fail_in(q, &t, "later", true, 400, &err));
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_state(info) == TJ_STATE_FAILED);
    CHECK(tj_job_info_attempts(info) == 1);
    /* The handler's delay, not the 1 ms backoff. */
    CHECK(tj_job_info_state_ts_ms(info) >= now_ms() + 200);
    tj_job_info_free(info);
    CHECK(lease(q) == NULL);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void expiry_before_start(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_enqueue_options *o = tj_enqueue_options_new();
    tj_id id = {{0}};
    CHECK_OK(tj_enqueue_options_set_expires_in_ms(o, 0));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue(q, "embed", NULL, 0, o, &id, NULL, &err));
    CHECK_OK(tj_enqueue_options_set_expires_in_ms(o, UINT64_MAX));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue(q, "embed", NULL, 0, o, &id, NULL, &err));
    tj_enqueue_options_free(o);
    o = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_expires_at_ms(o, 1000));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue(q, "embed", NULL, 0, o, &id, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_set_expires_at_ms(NULL, 1));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_set_expires_in_ms(NULL, 1));
    tj_enqueue_options_free(o);
    o = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_expires_in_ms(o, 50));
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, o, &id, NULL, &err));
    tj_enqueue_options_free(o);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_expires_at_ms(info) > now_ms());
    tj_job_info_free(info);
    sleep_ms(100);
    CHECK(lease(q) == NULL);
    tj_reap_report rep;
    CHECK_OK(tj_queue_reap(q, &rep, &err));
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_state(info) == TJ_STATE_DEAD);
    CHECK(strstr(tj_job_info_last_error(info), "expired before start") != NULL);
    tj_job_info_free(info);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void pause_and_resume_kinds_families_and_scopes(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "ingest:pdf", NULL);
    enqueue(q, "embed", SCOPE_A);
    bool changed = false;
    CHECK_OK(tj_queue_pause(q, "kind:ingest:*", &changed, &err));
    CHECK(changed);
    CHECK_OK(tj_queue_pause(q, "kind:ingest:*", &changed, &err));
    CHECK(!changed);
    char label[64];
    snprintf(label, sizeof label, "scope:%s", SCOPE_A);
    CHECK_OK(tj_queue_pause(q, label, NULL, &err));
    tj_paused *p = NULL;
    CHECK_OK(tj_queue_paused(q, &p, &err));
    CHECK(tj_paused_count(p) == 2);
    CHECK(strcmp(tj_paused_label(p, 0), "kind:ingest:*") == 0);
    CHECK(strcmp(tj_paused_label(p, 1), label) == 0);
    CHECK(tj_paused_label(p, 2) == NULL);
    tj_paused_free(p);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    CHECK(info && tj_job_info_paused(info));
    tj_job_info_free(info);
    CHECK(lease(q) == NULL);
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    CHECK(tj_stats_paused_count(s) == 2);
    const char *l = NULL;
    CHECK_OK(tj_stats_paused(s, 0, &l, &err));
    CHECK(l && strcmp(l, "kind:ingest:*") == 0);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_stats_paused(s, 2, &l, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_stats_paused(s, 0, NULL, &err));
    tj_stats_free(s);
    /* Hostile targets: typed, nothing changes. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_pause(q, "embed", NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_pause(q, "kind:Embed", NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_pause(q, "kind:", NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_resume(q, "scope:zzz", NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_pause(q, BAD_UTF8, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_pause(q, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_resume(NULL, "kind:embed", NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_paused(q, NULL, &err));
    CHECK(tj_paused_count(NULL) == 0 && tj_paused_label(NULL, 0) == NULL);
    tj_paused_free(NULL);
    CHECK(!tj_job_info_paused(NULL) && tj_job_info_snoozes(NULL) == 0);
    CHECK(tj_job_info_expires_at_ms(NULL) == 0 && tj_job_info_cancel_requested(NULL) == NULL);
    CHECK(tj_job_timeout_ms(NULL) == 0 && tj_stats_paused_count(NULL) == 0);
    /* Durable: the pause survives a reopen; resume leases again. */
    tj_queue_free(q);
    q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    CHECK(lease(q) == NULL);
    CHECK_OK(tj_queue_resume(q, label, &changed, &err));
    CHECK(changed);
    CHECK_OK(tj_queue_resume(q, label, &changed, &err));
    CHECK(!changed);
    tj_job *j = lease(q);
    CHECK(j && strcmp(tj_job_kind(j), "embed") == 0);
    tj_job_free(j);
    CHECK_OK(tj_queue_resume(q, "kind:ingest:*", NULL, &err));
    j = lease(q);
    CHECK(j && strcmp(tj_job_kind(j), "ingest:pdf") == 0);
    tj_job_free(j);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void the_kinds_timeout_reaches_the_job(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, "250ms");
    REQUIRE(q != NULL);
    enqueue(q, "slow", NULL);
    tj_job *j = lease(q);
    CHECK(j && tj_job_timeout_ms(j) == 250);
    tj_job_free(j);
    enqueue(q, "fast", NULL);
    j = lease(q);
    CHECK(j && tj_job_timeout_ms(j) == 0);
    tj_job_free(j);
    tj_queue_free(q);
    tj_options *o = tj_options_new();
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_options_set_kind(o, "slow", "timeout", "-5s", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_options_set_kind(o, "slow", "max_lease_total", "forever", &err));
    CHECK_OK(tj_options_set_kind(o, "slow", "max_lease_total", "off", &err));
    CHECK_OK(tj_options_set(o, "max_snoozes", "3", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_options_set(o, "max_snoozes", "-1", &err));
    tj_options_free(o);
    tmpdir_remove(dir);
}

/* NULL_ARGUMENT with a message naming the argument. */
#define CHECK_NULL_NAMED(arg, call)                                          \
    do {                                                                     \
        CHECK((call) == TJ_STATUS_NULL_ARGUMENT);                            \
        CHECK(err != NULL && strstr(tj_error_message(err), "`" arg "`") != NULL); \
        tj_error_free(err);                                                  \
        err = NULL;                                                          \
    } while (0)

static void null_arguments_are_refused_by_name_and_the_store_stays_usable(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed", NULL);
    tj_token t = {a, 1};
    tj_paused *p = NULL;
    CHECK_NULL_NAMED("queue", tj_queue_cancel(NULL, &a, NULL, NULL, &err));
    CHECK_NULL_NAMED("id", tj_queue_cancel(q, NULL, NULL, NULL, &err));
    CHECK_NULL_NAMED("queue", tj_queue_cancel_many(NULL, NULL, NULL, 0, NULL, NULL, &err));
    CHECK_NULL_NAMED("id", tj_queue_delete(q, NULL, &err));
    CHECK_NULL_NAMED("token", tj_queue_snooze(q, NULL, 1, &err));
    CHECK_NULL_NAMED("queue", tj_queue_snooze(NULL, &t, 1, &err));
    CHECK_NULL_NAMED("token", tj_queue_fail_in(q, NULL, "x", true, 1, &err));
    CHECK_NULL_NAMED("reason", tj_queue_fail_in(q, &t, NULL, true, 1, &err));
    CHECK_NULL_NAMED("target", tj_queue_pause(q, NULL, NULL, &err));
    CHECK_NULL_NAMED("target", tj_queue_resume(q, NULL, NULL, &err));
    CHECK_NULL_NAMED("paused_out", tj_queue_paused(q, NULL, &err));
    CHECK_NULL_NAMED("queue", tj_queue_paused(NULL, &p, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_cancel(q, &a, BAD_UTF8, NULL, &err));
    CHECK(p == NULL);
    /* Nothing changed: the job is still pending and leases. */
    CHECK(state_of(q, a) == TJ_STATE_PENDING);
    tj_job *j = lease(q);
    CHECK(j != NULL);
    tj_job_free(j);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#include "test_control_flow.h"
#include "test_control_steer.h"
#include "test_control_tags.h"
#include "test_control_find.h"
#include "test_control_backup.h"
#include "test_control_fanin.h"
#include "test_control_keys.h"

static void job_control_on_a_closed_queue_answers_closed(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed", NULL);
    tj_token t = {a, 1};
    tj_queue_close(q);
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_cancel(q, &a, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_cancel_many(q, NULL, NULL, 0, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_delete(q, &a, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_snooze(q, &t, 1, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_fail_in(q, &t, "x", true, 1, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_pause(q, "kind:embed", NULL, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_resume(q, "kind:embed", NULL, &err));
    tj_paused *p = NULL;
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_paused(q, &p, &err));
    CHECK(p == NULL);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

int main(void) {
    static const struct tj_test tests[] = {
        TEST(cancel_each_state_and_a_leased_job_through_its_heartbeat),
        TEST(cancel_many_by_kind_scope_and_state),
        TEST(purge_deletes_finished_jobs_before_the_cutoff),
        TEST(delete_removes_unleased_jobs_and_refuses_a_leased_one),
        TEST(snooze_keeps_attempts_and_fail_in_sets_the_retry),
        TEST(expiry_before_start),
        TEST(pause_and_resume_kinds_families_and_scopes),
        TEST(the_kinds_timeout_reaches_the_job),
        TEST(null_arguments_are_refused_by_name_and_the_store_stays_usable),
        TEST(job_control_on_a_closed_queue_answers_closed),
        CONTROL_FLOW_TESTS,
        CONTROL_STEER_TESTS,
        CONTROL_TAGS_TESTS,
        CONTROL_FIND_TESTS,
        CONTROL_BACKUP_TESTS,
        CONTROL_FANIN_TESTS,
        CONTROL_KEYS_TESTS,
    };
    return run_tests("test_control", tests, sizeof tests / sizeof tests[0]);
}
