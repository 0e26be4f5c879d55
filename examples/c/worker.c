/* A telha-jobs worker in C: lease, work while a second thread heartbeats
 * the lease, complete; stop a job when the lease is lost, when its
 * heartbeat answers CANCELLED (an operator cancelled it), or when it runs
 * past its kind's `timeout` (`tj_job_timeout_ms`).
 *
 *   cc examples/c/worker.c $(pkg-config --cflags --libs telha_jobs) -o worker
 *   ./worker ./telha-data 200      # enqueues 200 jobs, then works them off
 *
 * The lease TTL is short (300 ms) and every 20th job takes 400 ms, longer
 * than the TTL: it completes only because the heartbeat thread extends the
 * lease meanwhile. Two more jobs show job control: an `ingest:long` job
 * (10 s of work) that an operator thread cancels once it is leased, and an
 * `ingest:hang` job that never finishes by itself, bounded by its kind's
 * 300 ms timeout. Exits 0 when every plain job completed, no lease was
 * lost, the long job ended cancelled and the hung one timed out. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <telha_jobs.h>

#define WORKER "worker-c"

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* What the heartbeat thread shares with the worker loop. */
struct heart {
    tj_queue *q;
    pthread_mutex_t mu;
    bool has_job;  /* a lease is being worked on */
    tj_token token;
    atomic_long every_ms; /* a third of the lease's TTL */
    atomic_bool lease_lost;
    atomic_bool cancelled; /* the heartbeat answered TJ_STATUS_CANCELLED */
    atomic_bool stop;
    atomic_long beats;
};

static void *heartbeat(void *arg) {
    struct heart *h = arg;
    while (!atomic_load(&h->stop)) {
        /* From the TTL the lease was granted with, never from the deadline:
         * that is on the store owner's clock. */
        sleep_ms(atomic_load(&h->every_ms));
        pthread_mutex_lock(&h->mu);
        if (h->has_job) {
            tj_status answer = TJ_STATUS_OK;
            tj_status s = tj_queue_extend(h->q, WORKER, &h->token, 1, &answer, NULL, NULL);
            if (s == TJ_STATUS_OK && answer == TJ_STATUS_CANCELLED)
                atomic_store(&h->cancelled, true); /* stop, then settle it any way */
            else if (s != TJ_STATUS_OK || answer != TJ_STATUS_OK)
                atomic_store(&h->lease_lost, true); /* stop working on it */
            else
                atomic_fetch_add(&h->beats, 1);
        }
        pthread_mutex_unlock(&h->mu);
    }
    return NULL;
}

/* Work for `ms`, in slices, until done or stopped: cancelled, lost, or
 * past the kind's timeout (`timeout_ms`, 0 for none). */
enum outcome { DONE, CANCELLED, LOST, TIMED_OUT };

static enum outcome work(struct heart *h, long ms, uint64_t timeout_ms) {
    for (long spent = 0;; spent += 10) {
        if (atomic_load(&h->cancelled)) return CANCELLED;
        if (atomic_load(&h->lease_lost)) return LOST;
        if (timeout_ms > 0 && (uint64_t)spent >= timeout_ms) return TIMED_OUT;
        if (spent >= ms) return DONE;
        sleep_ms(10);
    }
}

/* The operator: cancels job `*id` once a worker holds it. */
struct operator_args {
    tj_queue *q;
    tj_id id;
};

static void *operator_thread(void *arg) {
    struct operator_args *o = arg;
    for (int i = 0; i < 3000; i++) {
        tj_job_info *info = NULL;
        if (tj_queue_get(o->q, &o->id, &info, NULL) != TJ_STATUS_OK) return NULL;
        uint32_t state = info ? tj_job_info_state(info) : 0;
        tj_job_info_free(info);
        if (state == TJ_STATE_LEASED) {
            tj_cancel_outcome outcome;
            tj_queue_cancel(o->q, &o->id, "an operator said stop", &outcome, NULL);
            return NULL;
        }
        sleep_ms(10);
    }
    return NULL;
}

static int fail_with(const char *what, tj_error *err) {
    fprintf(stderr, "%s: %s (%s)\n", what, tj_error_message(err),
            tj_status_name(tj_error_status(err)));
    tj_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "./telha-data";
    long jobs = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
    if (tj_abi_version() != TJ_ABI_VERSION) {
        fprintf(stderr, "libtelha_jobs ABI %u, header %u\n", tj_abi_version(), TJ_ABI_VERSION);
        return 1;
    }

    tj_error *err = NULL;
    tj_options *opts = tj_options_new();
    /* Any key of the table, in the config file's syntax (tj_config_key_at). */
    tj_status s = tj_options_set(opts, "lease_ttl", "300ms", &err);
    if (s == TJ_STATUS_OK)
        s = tj_options_set(opts, "reaper_interval", "50ms", &err);
    /* A per-kind run-time limit: leased jobs of this kind carry it. */
    if (s == TJ_STATUS_OK)
        s = tj_options_set_kind(opts, "ingest:hang", "timeout", "300ms", &err);
    tj_queue *q = NULL;
    if (s == TJ_STATUS_OK)
        s = tj_queue_open(path, opts, &q, &err);
    tj_options_free(opts);
    if (s != TJ_STATUS_OK)
        return fail_with("open", err);

    for (long i = 0; i < jobs; i++) {
        char payload[32];
        int n = snprintf(payload, sizeof payload, "doc-%ld", i);
        if (tj_queue_enqueue(q, "ingest:txt", (const uint8_t *)payload, (size_t)n, NULL,
                             NULL, NULL, &err) != TJ_STATUS_OK)
            return fail_with("enqueue", err);
    }

    tj_id long_id;
    if (tj_queue_enqueue(q, "ingest:long", NULL, 0, NULL, &long_id, NULL, &err) != TJ_STATUS_OK)
        return fail_with("enqueue", err);
    tj_enqueue_options *one_try = tj_enqueue_options_new();
    tj_enqueue_options_set_max_attempts(one_try, 1);
    s = tj_queue_enqueue(q, "ingest:hang", NULL, 0, one_try, NULL, NULL, &err);
    tj_enqueue_options_free(one_try);
    if (s != TJ_STATUS_OK)
        return fail_with("enqueue", err);
    struct operator_args op = {.q = q, .id = long_id};
    pthread_t operator;
    pthread_create(&operator, NULL, operator_thread, &op);

    struct heart h = {.q = q, .every_ms = 100};
    pthread_mutex_init(&h.mu, NULL);
    pthread_t beat;
    pthread_create(&beat, NULL, heartbeat, &h);

    tj_lease_options *lo = tj_lease_options_new();
    tj_lease_options_add_kind(lo, "ingest:*", NULL);
    tj_lease_options_set_wait_ms(lo, 500);
    long done = 0, lost = 0, seen = 0, cancelled = 0, timed_out = 0;
    for (;;) {
        tj_job *job = NULL;
        if (tj_queue_lease_next(q, WORKER, lo, &job, &err) != TJ_STATUS_OK)
            return fail_with("lease", err);
        if (!job)
            break; /* nothing for 500 ms: the backlog is done */
        pthread_mutex_lock(&h.mu);
        h.token = tj_job_token(job);
        h.has_job = true;
        atomic_store(&h.every_ms, (long)(tj_job_lease_ttl_ms(job) / 3));
        atomic_store(&h.lease_lost, false);
        atomic_store(&h.cancelled, false);
        pthread_mutex_unlock(&h.mu);

        size_t len = 0;
        const uint8_t *payload = tj_job_payload(job, &len);
        const char *kind = tj_job_kind(job);
        uint64_t timeout = tj_job_timeout_ms(job);
        long ms = strcmp(kind, "ingest:long") == 0   ? 10000
                  : strcmp(kind, "ingest:hang") == 0 ? 1000000000L
                  : seen++ % 20 == 0                 ? 400
                                                     : 2;
        enum outcome how = work(&h, ms, timeout); /* the work */
        char result[64];
        int n = snprintf(result, sizeof result, "%zu bytes of %.*s", len, (int)len,
                         (const char *)payload);

        pthread_mutex_lock(&h.mu);
        h.has_job = false;
        pthread_mutex_unlock(&h.mu);
        tj_token t = tj_job_token(job);
        if (how == CANCELLED) {
            /* Any settle records it cancelled (and answers CANCELLED). */
            s = tj_queue_release(q, &t, &err);
            if (s != TJ_STATUS_CANCELLED)
                return fail_with("settle a cancelled job", err);
            tj_error_free(err);
            err = NULL;
            cancelled++;
            tj_job_free(job);
            continue;
        }
        if (how == TIMED_OUT) {
            char why[64];
            snprintf(why, sizeof why, "timed out after %llu ms", (unsigned long long)timeout);
            if (tj_queue_fail(q, &t, why, true, &err) != TJ_STATUS_OK)
                return fail_with("fail a timed-out job", err);
            timed_out++;
            tj_job_free(job);
            continue;
        }
        s = how == LOST ? TJ_STATUS_ABORTED
                        : tj_queue_complete(q, &t, (const uint8_t *)result, (size_t)n, &err);
        if (s == TJ_STATUS_OK) {
            done++;
        } else if (s == TJ_STATUS_ABORTED) {
            lost++; /* someone else owns the job now: drop our result */
            tj_error_free(err);
            err = NULL;
        } else {
            return fail_with("complete", err);
        }
        tj_job_free(job);
    }
    atomic_store(&h.stop, true);
    pthread_join(beat, NULL);
    pthread_join(operator, NULL);
    pthread_mutex_destroy(&h.mu);
    tj_lease_options_free(lo);
    tj_queue_free(q);
    printf("worker: %ld completed, %ld lost, %ld heartbeats, %ld cancelled, %ld timed out\n", done,
           lost, atomic_load(&h.beats), cancelled, timed_out);
    return done == jobs && lost == 0 && cancelled == 1 && timed_out == 1 ? 0 : 1;
}
