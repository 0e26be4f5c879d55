/* The spec's guarantees, from C: zero double leases with pthread pollers,
 * a SIGKILLed child's lease re-leased after its TTL, poison jobs dead after
 * exactly max_attempts, and a stale complete answering TJ_STATUS_ABORTED. */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <sys/wait.h>

static const char *self_path; /* argv[0]: the child re-runs this program */

enum { POLLERS = 8 };

struct ledger {
    tj_queue *q;
    long jobs;
    atomic_int *leases; /* per job index: how many times it was leased */
    atomic_long completed;
    atomic_long errors;
};

struct poller {
    struct ledger *l;
    int index;
};

static void record(struct ledger *l, tj_job *job) {
    size_t len = 0;
    const uint8_t *p = tj_job_payload(job, &len);
    uint32_t i = 0;
    if (len != sizeof i) {
        atomic_fetch_add(&l->errors, 1);
        return;
    }
    memcpy(&i, p, sizeof i);
    if ((long)i >= l->jobs) {
        atomic_fetch_add(&l->errors, 1);
        return;
    }
    atomic_fetch_add(&l->leases[i], 1);
    tj_token t = tj_job_token(job);
    if (tj_queue_complete(l->q, &t, NULL, 0, NULL) == TJ_STATUS_OK)
        atomic_fetch_add(&l->completed, 1);
    else
        atomic_fetch_add(&l->errors, 1);
}

/* Odd pollers take batches, even ones single jobs; all stop when the
 * backlog is empty (nothing is re-queued in this test). */
static void *poll_until_empty(void *arg) {
    struct poller *me = arg;
    struct ledger *l = me->l;
    char worker[32];
    snprintf(worker, sizeof worker, "poller-%d", me->index);
    for (;;) {
        tj_job *jobs[16];
        size_t n = 0;
        tj_status s;
        if (me->index % 2) {
            s = tj_queue_lease_many(l->q, worker, NULL, 16, jobs, &n, NULL);
        } else {
            s = tj_queue_lease_next(l->q, worker, NULL, &jobs[0], NULL);
            n = s == TJ_STATUS_OK && jobs[0] ? 1 : 0;
        }
        if (s != TJ_STATUS_OK) {
            atomic_fetch_add(&l->errors, 1);
            return NULL;
        }
        if (n == 0)
            return NULL;
        for (size_t i = 0; i < n; i++) {
            record(l, jobs[i]);
            tj_job_free(jobs[i]);
        }
    }
}

static void pthread_pollers_never_lease_a_job_twice(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    long n = test_jobs(100000);
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set_reaper_interval_ms(o, 0));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    REQUIRE(q != NULL);

    tj_batch *b = tj_batch_new();
    for (long i = 0; i < n; i++) {
        uint32_t v = (uint32_t)i;
        CHECK_OK(tj_batch_add(b, i % 3 ? "embed" : "ingest:pdf", (const uint8_t *)&v,
                              sizeof v, NULL, &err));
        if (tj_batch_len(b) == 1000 || i == n - 1) {
            CHECK_OK(tj_queue_enqueue_many(q, b, NULL, NULL, &err));
            tj_batch_clear(b);
        }
    }
    tj_batch_free(b);

    struct ledger l = {.q = q, .jobs = n};
    l.leases = calloc((size_t)n, sizeof *l.leases);
    REQUIRE(l.leases != NULL);
    atomic_init(&l.completed, 0);
    atomic_init(&l.errors, 0);
    pthread_t th[POLLERS];
    struct poller args[POLLERS];
    for (int i = 0; i < POLLERS; i++) {
        args[i] = (struct poller){&l, i};
        REQUIRE(pthread_create(&th[i], NULL, poll_until_empty, &args[i]) == 0);
    }
    for (int i = 0; i < POLLERS; i++)
        pthread_join(th[i], NULL);

    long twice = 0, never = 0;
    for (long i = 0; i < n; i++) {
        int c = atomic_load(&l.leases[i]);
        twice += c > 1;
        never += c == 0;
    }
    printf("  %ld jobs, %d pollers: %ld leased twice, %ld never, %ld completed\n", n,
           POLLERS, twice, never, atomic_load(&l.completed));
    CHECK(twice == 0);
    CHECK(never == 0);
    CHECK(atomic_load(&l.errors) == 0);
    CHECK(atomic_load(&l.completed) == n);
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    tj_state_counts t = tj_stats_total(s);
    CHECK(t.completed == (uint64_t)n && t.pending == 0 && t.leased == 0);
    tj_stats_free(s);
    free(l.leases);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

/* The child: enqueue 20 jobs, lease one more, report, then hang holding the
 * lease until the parent kills it. */
static int child_hold_lease(const char *dir) {
    tj_options *o = tj_options_new();
    tj_options_set_lease_ttl_ms(o, 1000);
    tj_queue *q = NULL;
    tj_error *err = NULL;
    if (tj_queue_open(dir, o, &q, &err) != TJ_STATUS_OK) {
        fprintf(stderr, "child: %s\n", tj_error_message(err));
        return 1;
    }
    for (uint8_t i = 0; i < 20; i++)
        if (tj_queue_enqueue(q, "ack", &i, 1, NULL, NULL, NULL, NULL) != TJ_STATUS_OK)
            return 1;
    if (tj_queue_enqueue(q, "crash", NULL, 0, NULL, NULL, NULL, NULL) != TJ_STATUS_OK)
        return 1;
    tj_lease_options *lo = tj_lease_options_new();
    tj_lease_options_add_kind(lo, "crash", NULL);
    tj_job *job = NULL;
    if (tj_queue_lease_next(q, "doomed", lo, &job, NULL) != TJ_STATUS_OK || !job)
        return 1;
    printf("%s %llu\n", tj_job_id_str(job), (unsigned long long)tj_job_deadline_ms(job));
    fflush(stdout);
    for (;;)
        pause();
}

static void a_killed_childs_lease_is_re_leased_after_the_ttl(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(self_path, self_path, "--child-hold-lease", dir, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *from_child = fdopen(fds[0], "r");
    char line[128] = {0};
    int got_line = from_child && fgets(line, sizeof line, from_child) != NULL;
    char id_text[TJ_ID_STRLEN] = {0};
    unsigned long long deadline = 0;
    int parsed = got_line && sscanf(line, "%36s %llu", id_text, &deadline) == 2;

    /* While the child lives, the store is its own. */
    tj_queue *q = NULL;
    if (parsed) {
        tj_status s = tj_queue_open(dir, NULL, &q, &err);
        CHECK(s == TJ_STATUS_STORE_LOCKED);
        char pid_text[32];
        snprintf(pid_text, sizeof pid_text, "pid %d", (int)pid);
        CHECK(err && strstr(tj_error_message(err), dir) != NULL);
        CHECK(err && strstr(tj_error_message(err), pid_text) != NULL);
        tj_error_free(err);
        err = NULL;
        CHECK(q == NULL);
    }
    kill(pid, SIGKILL);
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    if (from_child)
        fclose(from_child);
    REQUIRE(parsed);
    CHECK(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);

    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set_reaper_interval_ms(o, 50));
    CHECK_OK(tj_options_set_backoff_base_ms(o, 10));
    CHECK_OK(tj_options_set_backoff_cap_ms(o, 10));
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    REQUIRE(q != NULL);

    /* Every acknowledged enqueue survived the kill. */
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    int acks = -1;
    for (size_t i = 0; i < tj_stats_kind_count(s); i++) {
        const char *kind;
        tj_state_counts c;
        CHECK_OK(tj_stats_kind(s, i, &kind, &c, &err));
        if (strcmp(kind, "ack") == 0)
            acks = (int)c.pending;
    }
    tj_stats_free(s);
    CHECK(acks == 20);

    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_add_kind(lo, "crash", &err));
    CHECK_OK(tj_lease_options_set_wait_ms(lo, 200));
    tj_job *job = NULL;
    uint64_t give_up = now_ms() + 20000;
    while (!job && now_ms() < give_up)
        CHECK_OK(tj_queue_lease_next(q, "rescuer", lo, &job, &err));
    tj_lease_options_free(lo);
    REQUIRE(job != NULL);
    uint64_t leased_at = now_ms();
    CHECK(strcmp(tj_job_id_str(job), id_text) == 0);
    CHECK(leased_at >= deadline); /* not before the dead child's TTL ran out */
    CHECK(tj_job_attempts(job) == 1);
    CHECK(tj_job_generation(job) == 2);
    tj_token t = tj_job_token(job);
    CHECK_OK(tj_queue_complete(q, &t, NULL, 0, &err));
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &t.id, &info, &err));
    int expired = 0;
    for (size_t i = 0; info && i < tj_job_info_event_count(info); i++) {
        const char *tr;
        CHECK_OK(tj_job_info_event(info, i, NULL, &tr, NULL, &err));
        expired += strcmp(tr, "lease_expired") == 0;
    }
    CHECK(expired == 1);
    CHECK(info && tj_job_info_state(info) == TJ_STATE_COMPLETED);
    tj_job_info_free(info);
    tj_job_free(job);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void a_poison_job_is_dead_after_exactly_max_attempts(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set_reaper_interval_ms(o, 0));
    CHECK_OK(tj_options_set_max_attempts(o, 5));
    CHECK_OK(tj_options_set_backoff_base_ms(o, 1));
    CHECK_OK(tj_options_set_backoff_cap_ms(o, 1));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    REQUIRE(q != NULL);
    tj_enqueue_options *eo = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_max_attempts(eo, 3));
    tj_id id;
    CHECK_OK(tj_queue_enqueue(q, "ingest:pdf", NULL, 0, eo, &id, NULL, &err));
    tj_enqueue_options_free(eo);

    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_set_wait_ms(lo, 500));
    int leases = 0;
    for (int round = 0; round < 10; round++) {
        tj_job *job = NULL;
        CHECK_OK(tj_queue_lease_next(q, "w", lo, &job, &err));
        if (!job)
            break;
        leases++;
        CHECK(tj_job_attempts(job) == (uint32_t)round);
        tj_token t = tj_job_token(job);
        CHECK_OK(tj_queue_fail(q, &t, "cannot parse PDF header", true, &err));
        tj_job_free(job);
    }
    tj_lease_options_free(lo);
    CHECK(leases == 3);

    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    REQUIRE(info != NULL);
    CHECK(tj_job_info_state(info) == TJ_STATE_DEAD);
    CHECK(tj_job_info_attempts(info) == 3);
    CHECK(strcmp(tj_job_info_last_error(info), "cannot parse PDF header") == 0);
    int leased = 0, failed = 0;
    size_t n = tj_job_info_event_count(info);
    const char *first = "", *last = "";
    for (size_t i = 0; i < n; i++) {
        const char *tr, *detail;
        CHECK_OK(tj_job_info_event(info, i, NULL, &tr, &detail, &err));
        leased += strcmp(tr, "leased") == 0;
        failed += strcmp(tr, "failed") == 0;
        if (i == 0)
            first = tr;
        last = tr;
    }
    CHECK(leased == 3 && failed == 3);
    CHECK(strcmp(first, "enqueued") == 0 && strcmp(last, "dead") == 0);
    CHECK(n == 8 && tj_job_info_dropped_events(info) == 0);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_job_info_event(info, n, NULL, NULL, NULL, &err));
    tj_job_info_free(info);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void a_stale_complete_answers_aborted_and_changes_nothing(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_options *o = tj_options_new();
    CHECK_OK(tj_options_set_reaper_interval_ms(o, 0));
    CHECK_OK(tj_options_set_kind_lease_ttl_ms(o, "slow", 30, &err));
    CHECK_OK(tj_options_set_backoff_base_ms(o, 1));
    CHECK_OK(tj_options_set_backoff_cap_ms(o, 1));
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    REQUIRE(q != NULL);
    CHECK_OK(tj_queue_enqueue(q, "slow", NULL, 0, NULL, NULL, NULL, &err));
    tj_job *a = NULL;
    CHECK_OK(tj_queue_lease_next(q, "worker-a", NULL, &a, &err));
    REQUIRE(a != NULL);
    tj_token stale = tj_job_token(a);

    sleep_ms(80); /* worker-a stalls past its 30 ms lease */
    tj_reap_report r;
    CHECK_OK(tj_queue_reap(q, &r, &err));
    CHECK(r.expired == 1);
    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_set_wait_ms(lo, 2000));
    tj_job *b = NULL;
    CHECK_OK(tj_queue_lease_next(q, "worker-b", lo, &b, &err));
    tj_lease_options_free(lo);
    REQUIRE(b != NULL);
    CHECK(tj_job_generation(b) == stale.generation + 1);

    /* Every late submit from worker-a is refused... */
    CHECK_STATUS(TJ_STATUS_ABORTED, tj_queue_complete(q, &stale, NULL, 0, &err));
    CHECK_STATUS(TJ_STATUS_ABORTED, tj_queue_fail(q, &stale, "late", true, &err));
    CHECK_STATUS(TJ_STATUS_ABORTED, tj_queue_release(q, &stale, &err));
    tj_status st = TJ_STATUS_OK;
    CHECK_OK(tj_queue_extend(q, "worker-a", &stale, 1, &st, NULL, &err));
    CHECK(st == TJ_STATUS_ABORTED);
    /* ...with a message saying the lease is lost. */
    CHECK(tj_queue_complete(q, &stale, NULL, 0, &err) == TJ_STATUS_ABORTED);
    CHECK(err && strstr(tj_error_message(err), "lease lost") != NULL);
    tj_error_free(err);
    err = NULL;

    /* ...and the job is untouched: still worker-b's lease. */
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &stale.id, &info, &err));
    CHECK(info && tj_job_info_state(info) == TJ_STATE_LEASED);
    CHECK(info && strcmp(tj_job_info_worker_id(info), "worker-b") == 0);
    CHECK(info && tj_job_info_generation(info) == stale.generation + 1);
    CHECK(info && tj_job_info_attempts(info) == 1);
    tj_job_info_free(info);
    tj_token fresh = tj_job_token(b);
    CHECK_OK(tj_queue_complete(q, &fresh, NULL, 0, &err));
    tj_job_free(a);
    tj_job_free(b);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

int main(int argc, char **argv) {
    self_path = argv[0];
    if (argc == 3 && strcmp(argv[1], "--child-hold-lease") == 0)
        return child_hold_lease(argv[2]);
    static const struct tj_test tests[] = {
        TEST(pthread_pollers_never_lease_a_job_twice),
        TEST(a_killed_childs_lease_is_re_leased_after_the_ttl),
        TEST(a_poison_job_is_dead_after_exactly_max_attempts),
        TEST(a_stale_complete_answers_aborted_and_changes_nothing),
    };
    return run_tests("test_guarantees", tests, sizeof tests / sizeof tests[0]);
}
