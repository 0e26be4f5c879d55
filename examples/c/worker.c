/* A telha-jobs worker in C: lease, work while a second thread heartbeats
 * the lease, complete (or stop when the lease is lost).
 *
 *   cc examples/c/worker.c $(pkg-config --cflags --libs telha_jobs) -o worker
 *   ./worker ./telha-data 200      # enqueues 200 jobs, then works them off
 *
 * The lease TTL is short (300 ms) and every 20th job takes 400 ms, longer
 * than the TTL: it completes only because the heartbeat thread extends the
 * lease meanwhile. Exits 0 when every job completed and no lease was lost. */
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
            if (s != TJ_STATUS_OK || answer != TJ_STATUS_OK)
                atomic_store(&h->lease_lost, true); /* stop working on it */
            else
                atomic_fetch_add(&h->beats, 1);
        }
        pthread_mutex_unlock(&h->mu);
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

    struct heart h = {.q = q, .every_ms = 100};
    pthread_mutex_init(&h.mu, NULL);
    pthread_t beat;
    pthread_create(&beat, NULL, heartbeat, &h);

    tj_lease_options *lo = tj_lease_options_new();
    tj_lease_options_add_kind(lo, "ingest:*", NULL);
    tj_lease_options_set_wait_ms(lo, 500);
    long done = 0, lost = 0, seen = 0;
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
        pthread_mutex_unlock(&h.mu);

        size_t len = 0;
        const uint8_t *payload = tj_job_payload(job, &len);
        sleep_ms(seen++ % 20 == 0 ? 400 : 2); /* the work */
        char result[64];
        int n = snprintf(result, sizeof result, "%zu bytes of %.*s", len, (int)len,
                         (const char *)payload);

        pthread_mutex_lock(&h.mu);
        h.has_job = false;
        pthread_mutex_unlock(&h.mu);
        tj_token t = tj_job_token(job);
        s = atomic_load(&h.lease_lost)
                ? TJ_STATUS_ABORTED
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
    pthread_mutex_destroy(&h.mu);
    tj_lease_options_free(lo);
    tj_queue_free(q);
    printf("worker: %ld completed, %ld lost, %ld heartbeats\n", done, lost,
           atomic_load(&h.beats));
    return done == jobs && lost == 0 ? 0 : 1;
}
