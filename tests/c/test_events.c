/* Results, events and progress through the C API: tj_queue_wait (terminal,
 * timeout, unknown, dead with its error, closed, ended by a tj_cancel from
 * another thread and from a signal handler), subscriptions (transitions in
 * commit order, an exact missed count behind a small buffer, close from
 * another thread, the store closing), progress on tj_queue_heartbeat (in
 * get and in the events, its limits) and NULL for every new pointer. */
#include "harness.h"

#include <pthread.h>
#include <signal.h>

static tj_queue *open_store(const char *dir) {
    tj_error *err = NULL;
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set(o, "reaper_interval", "0", &err));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    return q;
}

static tj_id enqueue(tj_queue *q, const char *kind) {
    tj_error *err = NULL;
    tj_id id = {{0}};
    CHECK_OK(tj_queue_enqueue(q, kind, (const uint8_t *)"p", 1, NULL, &id, NULL, &err));
    return id;
}

static tj_token lease(tj_queue *q, const char *worker) {
    tj_error *err = NULL;
    tj_job *j = NULL;
    tj_token t = {{{0}}, 0};
    CHECK_OK(tj_queue_lease_next(q, worker, NULL, &j, &err));
    if (j) t = tj_job_token(j);
    tj_job_free(j);
    return t;
}

/* Monotonic ms, for elapsed times. */
static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------ wait */

struct completer { tj_queue *q; tj_token t; long after_ms; };

static void *complete_later(void *arg) {
    struct completer *c = arg;
    sleep_ms(c->after_ms);
    tj_queue_complete(c->q, &c->t, (const uint8_t *)"42", 2, NULL);
    return NULL;
}

static void wait_answers_terminal_jobs_with_their_result_or_error(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    /* A waiter woken by the completion on another thread. */
    tj_id a = enqueue(q, "embed");
    struct completer c = {q, lease(q, "w1"), 100};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, complete_later, &c) == 0);
    uint64_t t0 = mono_ms();
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_wait(q, &a, 10000, NULL, &info, &err));
    uint64_t took = mono_ms() - t0;
    pthread_join(th, NULL);
    REQUIRE(info != NULL);
    CHECK(tj_job_info_state(info) == TJ_STATE_COMPLETED);
    size_t len = 0;
    const uint8_t *r = tj_job_info_result(info, &len);
    CHECK(r && len == 2 && memcmp(r, "42", 2) == 0);
    CHECK(took < 5000);
    tj_job_info_free(info);
    /* Already terminal: at once, even with no time to wait. */
    info = NULL;
    CHECK_OK(tj_queue_wait(q, &a, 0, NULL, &info, &err));
    CHECK(info && tj_job_info_state(info) == TJ_STATE_COMPLETED);
    tj_job_info_free(info);
    /* Dead: its last error. */
    tj_id b = enqueue(q, "embed");
    tj_token tb = lease(q, "w1");
    CHECK_OK(tj_queue_fail(q, &tb, "bad input", false, &err));
    info = NULL;
    CHECK_OK(tj_queue_wait(q, &b, 5000, NULL, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_state(info) == TJ_STATE_DEAD);
    CHECK(strcmp(tj_job_info_last_error(info), "bad input") == 0);
    tj_job_info_free(info);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void wait_times_out_with_the_current_state_and_refuses_unknown_ids(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed");
    uint64_t t0 = mono_ms();
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_wait(q, &a, 150, NULL, &info, &err));
    uint64_t took = mono_ms() - t0;
    CHECK(info && tj_job_info_state(info) == TJ_STATE_PENDING);
    CHECK(took >= 140 && took < 5000);
    tj_job_info_free(info);
    tj_id unknown = {{0x01, 0x89, 0, 0, 0, 0, 0x70, 0, 0x80}};
    tj_job_info *untouched = (tj_job_info *)&a;
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_wait(q, &unknown, 50, NULL, &untouched, &err));
    CHECK(untouched == (tj_job_info *)&a);
    tj_queue_close(q);
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_wait(q, &a, 50, NULL, &untouched, &err));
    tj_queue_free(q);
    tmpdir_remove(dir);
}

struct canceller { tj_cancel *c; tj_queue *q; long after_ms; int how; };

static void *cancel_later(void *arg) {
    struct canceller *k = arg;
    sleep_ms(k->after_ms);
    if (k->how == 0) tj_cancel_trigger(k->c);
    else if (k->how == 1) tj_cancel_cancel(k->c);
    else tj_queue_close(k->q);
    return NULL;
}

static void a_wait_ends_on_a_cancel_or_close_from_another_thread(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed");
    for (int how = 0; how < 3; how++) {
        tj_cancel *c = tj_cancel_new();
        struct canceller k = {c, q, 100, how};
        pthread_t th;
        REQUIRE(pthread_create(&th, NULL, cancel_later, &k) == 0);
        uint64_t t0 = mono_ms();
        tj_job_info *info = NULL;
        tj_status st = tj_queue_wait(q, &a, UINT64_MAX, c, &info, &err);
        uint64_t took = mono_ms() - t0;
        pthread_join(th, NULL);
        if (how < 2) {
            /* Cancelled: the job as it is now, TJ_STATUS_OK. */
            CHECK_STATUS(TJ_STATUS_OK, st);
            CHECK(info && tj_job_info_state(info) == TJ_STATE_PENDING);
            CHECK(tj_cancel_is_cancelled(c));
            CHECK(took >= 90 && took < 3000);
        } else {
            CHECK_STATUS(TJ_STATUS_CLOSED, st);
            CHECK(info == NULL);
            CHECK(took < 3000);
        }
        tj_job_info_free(info);
        /* A cancelled token does not wait at all. */
        if (how < 2) {
            info = NULL;
            t0 = mono_ms();
            CHECK_OK(tj_queue_wait(q, &a, UINT64_MAX, c, &info, &err));
            CHECK(mono_ms() - t0 < 1000);
            tj_job_info_free(info);
        }
        tj_cancel_free(c);
    }
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static tj_cancel *signal_token;

static void on_signal(int sig) {
    (void)sig;
    tj_cancel_trigger(signal_token);
}

static void *signal_later(void *arg) {
    (void)arg;
    sleep_ms(100);
    kill(getpid(), SIGUSR1);
    return NULL;
}

static void a_signal_handler_may_trigger_a_cancel(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed");
    signal_token = tj_cancel_new();
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, signal_later, NULL) == 0);
    uint64_t t0 = mono_ms();
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_wait(q, &a, 20000, signal_token, &info, &err));
    CHECK(mono_ms() - t0 < 5000);
    CHECK(info && tj_job_info_state(info) == TJ_STATE_PENDING);
    pthread_join(th, NULL);
    sigaction(SIGUSR1, &old, NULL);
    tj_job_info_free(info);
    /* The trigger reaches lease waits too. */
    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_add_kind(lo, "none", &err));
    CHECK(tj_lease_options_set_wait_ms(lo, 20000) == TJ_STATUS_OK);
    CHECK(tj_lease_options_set_cancel(lo, signal_token) == TJ_STATUS_OK);
    tj_job *j = (tj_job *)&a;
    t0 = mono_ms();
    CHECK_OK(tj_queue_lease_next(q, "w", lo, &j, &err));
    CHECK(j == NULL && mono_ms() - t0 < 1000);
    tj_lease_options_free(lo);
    tj_cancel_free(signal_token);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

/* ------------------------------------------------------------ events */

static tj_subscription *subscribe(tj_queue *q, size_t buffer, const char *transition) {
    tj_error *err = NULL;
    tj_subscribe_options *o = tj_subscribe_options_new();
    if (buffer) CHECK_OK(tj_subscribe_options_set_buffer(o, buffer, &err));
    if (transition) CHECK_OK(tj_subscribe_options_add_transition(o, transition, &err));
    tj_subscription *s = NULL;
    CHECK_OK(tj_queue_subscribe(q, o, &s, &err));
    tj_subscribe_options_free(o);
    return s;
}

static void a_subscriber_sees_each_transition_in_commit_order(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_subscription *all = NULL;
    CHECK_OK(tj_queue_subscribe(q, NULL, &all, &err));
    tj_subscription *ends = subscribe(q, 0, "completed");
    REQUIRE(all != NULL && ends != NULL);
    uint64_t before = now_ms();
    tj_id a = enqueue(q, "embed");
    tj_token t = lease(q, "w9");
    CHECK_OK(tj_queue_complete(q, &t, NULL, 0, &err));
    static const char *const want[] = {"enqueued", "leased", "completed"};
    tj_event ev;
    uint64_t last = 0;
    for (size_t i = 0; i < 3; i++) {
        CHECK_OK(tj_events_next(all, 5000, &ev, &err));
        CHECK(strcmp(ev.transition, want[i]) == 0);
        CHECK(memcmp(ev.id.bytes, a.bytes, 16) == 0);
        CHECK(strcmp(ev.kind, "embed") == 0);
        CHECK(strlen(ev.scope) == 36);
        CHECK(ev.missed == 0);
        CHECK(last == 0 || ev.seq == last + 1);
        CHECK(ev.ts_ms >= before - 1000 && ev.ts_ms <= now_ms() + 1000);
        CHECK(ev.progress == NULL && ev.progress_len == 0);
        if (i == 0) CHECK(ev.worker_id == NULL && ev.attempt == 0);
        else CHECK(ev.worker_id && strcmp(ev.worker_id, "w9") == 0 && ev.attempt == 1);
        last = ev.seq;
    }
    CHECK_STATUS(TJ_STATUS_TIMED_OUT, tj_events_next(all, 20, &ev, &err));
    CHECK(strcmp(tj_status_name(TJ_STATUS_TIMED_OUT), "TIMED_OUT") == 0);
    CHECK_OK(tj_events_next(ends, 5000, &ev, &err));
    /* Its own count: the first event that matched it. */
    CHECK(strcmp(ev.transition, "completed") == 0 && ev.seq == 1);
    CHECK_STATUS(TJ_STATUS_TIMED_OUT, tj_events_next(ends, 0, &ev, &err));
    /* Closed: what was buffered, then CLOSED for good. */
    enqueue(q, "embed");
    CHECK_OK(tj_events_next(all, 5000, &ev, &err));
    enqueue(q, "embed");
    sleep_ms(100);
    tj_subscription_close(all);
    tj_subscription_close(all);
    CHECK_OK(tj_events_next(all, 100, &ev, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_events_next(all, 100, &ev, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_events_next(all, 0, &ev, &err));
    tj_subscription_free(all);
    /* The store closing ends the others. */
    tj_queue_close(q);
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_events_next(ends, 1000, &ev, &err));
    tj_subscription *late = (tj_subscription *)&ev;
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_subscribe(q, NULL, &late, &err));
    CHECK(late == (tj_subscription *)&ev);
    tj_subscription_free(ends);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void a_slow_subscriber_learns_exactly_how_many_it_missed(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_subscription *s = subscribe(q, 4, NULL);
    REQUIRE(s != NULL);
    const int n = 50;
    for (int i = 0; i < n; i++) enqueue(q, "embed");
    sleep_ms(500); /* the 50 are delivered (4) or dropped (46) */
    enqueue(q, "embed"); /* carries the count of what was dropped */
    tj_event ev;
    uint64_t got = 0, missed = 0, last = 0;
    /* Read up to the last event with a generous timeout (a loaded machine
       under asan is slow), then nothing more may come. */
    while (last < (uint64_t)n + 1 && got < (uint64_t)n + 1 &&
           tj_events_next(s, 5000, &ev, &err) == TJ_STATUS_OK) {
        CHECK(last == 0 ? ev.seq == 1 + ev.missed : ev.seq == last + 1 + ev.missed);
        got++;
        missed += ev.missed;
        last = ev.seq;
    }
    CHECK(err == NULL);
    tj_error_free(err);
    err = NULL;
    CHECK(tj_events_next(s, 200, &ev, &err) == TJ_STATUS_TIMED_OUT);
    CHECK(tj_error_status(err) == TJ_STATUS_TIMED_OUT);
    tj_error_free(err);
    err = NULL;
    CHECK(got + missed == (uint64_t)n + 1);
    CHECK(last == (uint64_t)n + 1);
    CHECK(got == 5 && missed == (uint64_t)n - 4);
    tj_subscription_free(s);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

struct closer { tj_subscription *s; };

static void *close_later(void *arg) {
    sleep_ms(100);
    tj_subscription_close(((struct closer *)arg)->s);
    return NULL;
}

static void closing_a_subscription_ends_a_read_on_another_thread(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_subscription *s = subscribe(q, 0, NULL);
    REQUIRE(s != NULL);
    struct closer c = {s};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, close_later, &c) == 0);
    uint64_t t0 = mono_ms();
    tj_event ev;
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_events_next(s, 20000, &ev, &err));
    CHECK(mono_ms() - t0 < 5000);
    pthread_join(th, NULL);
    tj_subscription_free(s);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

/* ------------------------------------------------------------ progress */

static void progress_shows_in_get_and_in_the_events(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed"), b = enqueue(q, "embed");
    tj_token t[2] = {lease(q, "w1"), lease(q, "w1")};
    tj_subscription *s = subscribe(q, 0, "progress");
    REQUIRE(s != NULL);
    const uint8_t *rep[2] = {(const uint8_t *)"40%", NULL};
    size_t len[2] = {3, 0};
    tj_status st[2] = {99, 99};
    uint64_t dl[2] = {0, 0};
    CHECK_OK(tj_queue_heartbeat(q, "w1", t, 2, rep, len, 2, st, dl, &err));
    CHECK(st[0] == TJ_STATUS_OK && st[1] == TJ_STATUS_OK && dl[0] > 0 && dl[1] > 0);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    size_t n = 0;
    const uint8_t *p = tj_job_info_progress(info, &n);
    CHECK(p && n == 3 && memcmp(p, "40%", 3) == 0);
    tj_job_info_free(info);
    info = NULL;
    CHECK_OK(tj_queue_get(q, &b, &info, &err));
    n = 7;
    CHECK(tj_job_info_progress(info, &n) == NULL && n == 0);
    tj_job_info_free(info);
    tj_event ev;
    CHECK_OK(tj_events_next(s, 5000, &ev, &err));
    CHECK(strcmp(ev.transition, "progress") == 0 && memcmp(ev.id.bytes, a.bytes, 16) == 0);
    CHECK(ev.progress_len == 3 && memcmp(ev.progress, "40%", 3) == 0);
    CHECK(ev.attempt == 1 && strcmp(ev.worker_id, "w1") == 0);
    CHECK_STATUS(TJ_STATUS_TIMED_OUT, tj_events_next(s, 50, &ev, &err));
    /* Fewer reports than tokens: none for the rest; NULL arrays with 0. */
    rep[0] = (const uint8_t *)"90%";
    CHECK_OK(tj_queue_heartbeat(q, "w1", t, 2, rep, len, 1, st, NULL, &err));
    CHECK_OK(tj_queue_heartbeat(q, "w1", t, 2, NULL, NULL, 0, st, NULL, &err));
    CHECK(st[0] == TJ_STATUS_OK && st[1] == TJ_STATUS_OK);
    /* Too big or too many: nothing renewed, nothing stored, memory unread. */
    uint8_t big[TJ_MAX_PROGRESS_BYTES + 1];
    memset(big, 'x', sizeof big);
    const uint8_t *brep[1] = {big};
    size_t blen[1] = {sizeof big};
    st[0] = 99;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_heartbeat(q, "w1", t, 1, brep, blen, 1, st, NULL, &err));
    CHECK(st[0] == 99);
    size_t huge[1] = {SIZE_MAX};
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_heartbeat(q, "w1", t, 1, brep, huge, 1, st, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_heartbeat(q, "w1", t, 1, rep, len, 2, st, NULL, &err));
    blen[0] = TJ_MAX_PROGRESS_BYTES;
    CHECK_OK(tj_queue_heartbeat(q, "w1", t, 1, brep, blen, 1, st, NULL, &err));
    info = NULL;
    CHECK_OK(tj_queue_get(q, &a, &info, &err));
    CHECK(tj_job_info_progress(info, &n) != NULL && n == TJ_MAX_PROGRESS_BYTES);
    tj_job_info_free(info);
    /* Another worker's heartbeat is lost, with its report. */
    CHECK_OK(tj_queue_heartbeat(q, "w2", t, 1, rep, len, 1, st, NULL, &err));
    CHECK(st[0] == TJ_STATUS_ABORTED);
    tj_subscription_free(s);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

/* ------------------------------------------------------------ hostile input */

static void every_new_pointer_argument_is_checked(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "embed");
    tj_token t = lease(q, "w1");
    tj_job_info *info = NULL;
    tj_event ev;
    tj_subscription *s = NULL;
    tj_status st[1];
    const uint8_t *rep[1] = {(const uint8_t *)"x"};
    size_t len[1] = {1};
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_wait(NULL, &a, 0, NULL, &info, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_wait(q, NULL, 0, NULL, &info, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_wait(q, &a, 0, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_subscribe(NULL, NULL, &s, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_subscribe(q, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_events_next(NULL, 0, &ev, &err));
    CHECK_OK(tj_queue_subscribe(q, NULL, &s, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_events_next(s, 0, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_heartbeat(NULL, "w1", &t, 1, rep, len, 1, st, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_heartbeat(q, NULL, &t, 1, rep, len, 1, st, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_heartbeat(q, "w1", NULL, 1, rep, len, 1, st, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_heartbeat(q, "w1", &t, 1, NULL, len, 1, st, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_heartbeat(q, "w1", &t, 1, rep, NULL, 1, st, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_heartbeat(q, "w1", &t, 1, rep, len, 1, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_heartbeat(q, "w\xff", &t, 1, rep, len, 1, st, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_subscribe_options_add_kind(NULL, "embed", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_subscribe_options_add_scope(NULL, "x", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_subscribe_options_add_transition(NULL, "leased", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_subscribe_options_set_buffer(NULL, 1, &err));
    tj_subscribe_options *o = tj_subscribe_options_new();
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_subscribe_options_add_kind(o, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_subscribe_options_add_scope(o, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_subscribe_options_add_transition(o, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_subscribe_options_add_kind(o, "emb\xff", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_subscribe_options_add_kind(o, "Bad Kind!", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_subscribe_options_add_scope(o, "not-a-uuid", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_subscribe_options_add_transition(o, "no_such", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_subscribe_options_set_buffer(o, 0, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_subscribe_options_set_buffer(o, TJ_MAX_EVENT_BUFFER + 1, &err));
    CHECK_OK(tj_subscribe_options_set_buffer(o, TJ_MAX_EVENT_BUFFER, &err));
    tj_subscribe_options_free(o);
    /* NULL is a no-op for the frees, close, trigger and cancel. */
    tj_subscribe_options_free(NULL);
    tj_subscription_close(NULL);
    tj_subscription_free(NULL);
    tj_cancel_trigger(NULL);
    tj_cancel_cancel(NULL);
    CHECK(!tj_cancel_is_cancelled(NULL));
    CHECK(tj_job_info_progress(NULL, NULL) == NULL);
    size_t n = 5;
    CHECK(tj_job_info_progress(NULL, &n) == NULL && n == 0);
    /* The store is still usable. */
    st[0] = 99;
    CHECK_OK(tj_queue_heartbeat(q, "w1", &t, 1, rep, len, 1, st, NULL, &err));
    CHECK(st[0] == TJ_STATUS_OK);
    tj_subscription_free(s);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

int main(void) {
    static const struct tj_test tests[] = {
        TEST(wait_answers_terminal_jobs_with_their_result_or_error),
        TEST(wait_times_out_with_the_current_state_and_refuses_unknown_ids),
        TEST(a_wait_ends_on_a_cancel_or_close_from_another_thread),
        TEST(a_signal_handler_may_trigger_a_cancel),
        TEST(a_subscriber_sees_each_transition_in_commit_order),
        TEST(a_slow_subscriber_learns_exactly_how_many_it_missed),
        TEST(closing_a_subscription_ends_a_read_on_another_thread),
        TEST(progress_shows_in_get_and_in_the_events),
        TEST(every_new_pointer_argument_is_checked),
    };
    return run_tests("test_events", tests, sizeof tests / sizeof tests[0]);
}
