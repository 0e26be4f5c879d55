/* A telha-jobs host in C: it owns a store, serves it to workers in other
 * processes and languages over gRPC (with the operator page), and works
 * its own kind in batches: lease_many, a heartbeat thread extending every
 * lease in hand, complete_many with a follow-up job per completion.
 *
 *   cc examples/c/worker.c $(pkg-config --cflags --libs telha_jobs) -o worker
 *   ./worker ./telha-data 200        # serve on a free port, work 200 jobs off, exit
 *   ./worker ./telha-data 0 --listen 127.0.0.1:7450 --until-signal   # a host daemon
 *
 * While it runs, any process reaches the store through the printed URL:
 *
 *   q = telha_jobs.connect("http://127.0.0.1:7450")     # Python
 *   q.enqueue("ingest:txt", b"hello")                   # worked here, in C
 *   telha_jobs.Worker(q, render, kinds=["thumb:*"]).run()  # the follow-ups, in Python
 *
 * This process works `ingest:*`; each completed ingest job enqueues a
 * `thumb:render` follow-up (in the same atomic write) for the workers that
 * connect. The lease TTL is short (300 ms) and every 20th job takes
 * 400 ms, longer than the TTL: it completes only because the heartbeat
 * thread extends the lease meanwhile. Two more jobs show job control: an
 * `ingest:long` job (10 s of work) that an operator thread cancels once it
 * is leased, and an `ingest:hang` job that never finishes by itself,
 * bounded by its kind's 300 ms timeout. Without `--until-signal` it exits
 * when its backlog is done; with it, it serves until SIGINT or SIGTERM.
 * Either way it drains (finishes and settles the batch in hand), stops the
 * server, then closes the store. Exits 0 when every plain job completed,
 * no lease was lost, the long job ended cancelled and the hung one timed
 * out. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <telha_jobs.h>

#define WORKER "worker-c"
#define BATCH 16

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* What the heartbeat thread shares with the worker loop: the leases in
 * hand (slot i of the batch), each until it is settled. */
struct heart {
    tj_queue *q;
    pthread_mutex_t mu;
    size_t n;
    tj_token tokens[BATCH];
    bool held[BATCH];
    atomic_bool lost[BATCH];
    atomic_bool cancelled[BATCH]; /* the heartbeat answered TJ_STATUS_CANCELLED */
    atomic_long cancelled_jobs;   /* settled as cancelled by the heartbeat thread */
    atomic_long every_ms;         /* a third of the leases' TTL */
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
        tj_token tokens[BATCH];
        size_t slot[BATCH], k = 0;
        for (size_t i = 0; i < h->n; i++)
            if (h->held[i]) {
                tokens[k] = h->tokens[i];
                slot[k++] = i;
            }
        if (k > 0) {
            tj_status answers[BATCH];
            tj_status s = tj_queue_extend(h->q, WORKER, tokens, k, answers, NULL, NULL);
            for (size_t j = 0; j < k; j++) {
                tj_status a = s == TJ_STATUS_OK ? answers[j] : s;
                if (a == TJ_STATUS_CANCELLED) {
                    /* An operator cancelled it: stop working on it, and
                     * settle it now (the settle records it cancelled):
                     * its lease is no longer extended. */
                    atomic_store(&h->cancelled[slot[j]], true);
                    h->held[slot[j]] = false;
                    if (tj_queue_release(h->q, &tokens[j], NULL) == TJ_STATUS_CANCELLED)
                        atomic_fetch_add(&h->cancelled_jobs, 1);
                } else if (a != TJ_STATUS_OK)
                    atomic_store(&h->lost[slot[j]], true); /* stop working on it */
            }
            atomic_fetch_add(&h->beats, 1);
        }
        pthread_mutex_unlock(&h->mu);
    }
    return NULL;
}

/* Work slot `i` for `ms`, in slices, until done or stopped: cancelled,
 * lost, or past the kind's timeout (`timeout_ms`, 0 for none). */
enum outcome { DONE, CANCELLED, LOST, TIMED_OUT };

static enum outcome work(struct heart *h, size_t i, long ms, uint64_t timeout_ms) {
    for (long spent = 0;; spent += 10) {
        if (atomic_load(&h->cancelled[i])) return CANCELLED;
        if (atomic_load(&h->lost[i])) return LOST;
        if (timeout_ms > 0 && (uint64_t)spent >= timeout_ms) return TIMED_OUT;
        if (spent >= ms) return DONE;
        sleep_ms(10);
    }
}

static void let_go(struct heart *h, size_t i) {
    pthread_mutex_lock(&h->mu);
    h->held[i] = false;
    pthread_mutex_unlock(&h->mu);
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
        if (state != TJ_STATE_PENDING) return NULL;
        sleep_ms(10);
    }
    return NULL;
}

/* SIGINT / SIGTERM end the lease wait at once (async-signal-safe). */
static tj_cancel *shutdown_requested;

static void on_signal(int sig) {
    (void)sig;
    tj_cancel_trigger(shutdown_requested);
}

static int fail_with(const char *what, tj_error *err) {
    fprintf(stderr, "%s: %s (%s)\n", what, tj_error_message(err),
            tj_status_name(tj_error_status(err)));
    tj_error_free(err);
    return 1;
}

struct tally {
    long done, lost, cancelled, timed_out, follow_ups;
};

/* Work one leased batch off, then settle it in one write. */
static int work_batch(struct heart *h, tj_job **jobs, size_t n, struct tally *t, long *seen) {
    tj_error *err = NULL;
    tj_completions *c = tj_completions_new();
    tj_batch *then = tj_batch_new();
    size_t slot_of[BATCH], k = 0; /* completion j is slot slot_of[j]'s */
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        const uint8_t *payload = tj_job_payload(jobs[i], &len);
        const char *kind = tj_job_kind(jobs[i]);
        uint64_t timeout = tj_job_timeout_ms(jobs[i]);
        long ms = strcmp(kind, "ingest:long") == 0   ? 10000
                  : strcmp(kind, "ingest:hang") == 0 ? 1000000000L
                  : (*seen)++ % 20 == 0              ? 400
                                                     : 2;
        enum outcome how = work(h, i, ms, timeout); /* the work */
        tj_token tok = tj_job_token(jobs[i]);
        if (how == CANCELLED) {
            continue; /* the heartbeat thread settled it */
        } else if (how == LOST) {
            let_go(h, i);
            t->lost++; /* someone else owns the job now: drop our result */
        } else if (how == TIMED_OUT) {
            let_go(h, i);
            char why[64];
            snprintf(why, sizeof why, "timed out after %llu ms", (unsigned long long)timeout);
            if (tj_queue_fail(h->q, &tok, why, true, &err) != TJ_STATUS_OK)
                return fail_with("fail a timed-out job", err);
            t->timed_out++;
        } else {
            char result[96];
            int rn = snprintf(result, sizeof result, "%zu bytes of %.*s", len,
                              (int)(len < 40 ? len : 40), (const char *)payload);
            tj_batch_clear(then);
            if (tj_batch_add(then, "thumb:render", payload, len, NULL, &err) != TJ_STATUS_OK)
                return fail_with("follow-up", err);
            if (tj_completions_add(c, &tok, (const uint8_t *)result, (size_t)rn,
                                   TJ_ENCODING_BYTES, then, &err) != TJ_STATUS_OK)
                return fail_with("completion", err);
            slot_of[k++] = i; /* held (and heartbeated) until the settle below */
        }
    }
    tj_status answers[BATCH];
    if (k > 0 && tj_queue_complete_many(h->q, c, answers, BATCH, &err) != TJ_STATUS_OK)
        return fail_with("complete_many", err);
    pthread_mutex_lock(&h->mu);
    h->n = 0;
    pthread_mutex_unlock(&h->mu);
    for (size_t j = 0; j < k; j++) {
        if (answers[j] == TJ_STATUS_OK) {
            t->done++;
            t->follow_ups++;
        } else if (atomic_load(&h->cancelled[slot_of[j]])) {
            /* cancelled after its work was done: settled as cancelled */
        } else if (answers[j] == TJ_STATUS_CANCELLED) {
            t->cancelled++; /* recorded cancelled by this settle */
        } else if (answers[j] == TJ_STATUS_ABORTED) {
            t->lost++;
        } else {
            fprintf(stderr, "complete_many: item %zu: %s\n", j, tj_status_name(answers[j]));
            return 1;
        }
    }
    tj_batch_free(then);
    tj_completions_free(c);
    return 0;
}

int main(int argc, char **argv) {
    const char *path = "./telha-data", *listen = "127.0.0.1:0";
    long jobs = 200;
    bool until_signal = false;
    for (int i = 1, pos = 0; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen = argv[++i];
        else if (strcmp(argv[i], "--until-signal") == 0)
            until_signal = true;
        else if (pos++ == 0)
            path = argv[i];
        else
            jobs = strtol(argv[i], NULL, 10);
    }
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

    /* Serve the store (gRPC on `listen`, the page on a free port) from the
     * library's threads; this thread stays ours. */
    tj_serve_options *so = tj_serve_options_new();
    tj_serve_options_set_metrics_listen(so, "127.0.0.1:0", NULL);
    tj_serve_options_set_ui(so, true, NULL);
    tj_server *server = NULL;
    s = tj_queue_serve(q, listen, so, &server, &err);
    tj_serve_options_free(so);
    if (s != TJ_STATUS_OK)
        return fail_with("serve", err);
    printf("worker: serving %s at %s (page %s)\n", path, tj_server_url(server),
           tj_server_ui_url(server));
    fflush(stdout);

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

    static struct heart h; /* zeroed: no lease in hand */
    h.q = q;
    h.every_ms = 100;
    pthread_mutex_init(&h.mu, NULL);
    pthread_t beat;
    pthread_create(&beat, NULL, heartbeat, &h);

    shutdown_requested = tj_cancel_new();
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    tj_lease_options *lo = tj_lease_options_new();
    tj_lease_options_add_kind(lo, "ingest:*", NULL);
    tj_lease_options_set_wait_ms(lo, 500);
    tj_lease_options_set_cancel(lo, shutdown_requested);
    struct tally t = {0};
    long seen = 0;
    while (!tj_cancel_is_cancelled(shutdown_requested)) {
        tj_job *batch[BATCH];
        size_t n = 0;
        if (tj_queue_lease_many(q, WORKER, lo, BATCH, batch, &n, &err) != TJ_STATUS_OK)
            return fail_with("lease", err);
        if (n == 0) {
            if (!until_signal)
                break; /* nothing for 500 ms: the backlog is done */
            continue;
        }
        pthread_mutex_lock(&h.mu);
        for (size_t i = 0; i < n; i++) {
            h.tokens[i] = tj_job_token(batch[i]);
            h.held[i] = true;
            atomic_store(&h.lost[i], false);
            atomic_store(&h.cancelled[i], false);
        }
        h.n = n;
        atomic_store(&h.every_ms, (long)(tj_job_lease_ttl_ms(batch[0]) / 3));
        pthread_mutex_unlock(&h.mu);
        int rc = work_batch(&h, batch, n, &t, &seen);
        for (size_t i = 0; i < n; i++) tj_job_free(batch[i]);
        if (rc != 0) return rc;
    }

    /* Drain: the batch in hand is settled; stop serving (calls in flight
     * get 5 s), then close the store. */
    tj_server_close(server);
    atomic_store(&h.stop, true);
    pthread_join(beat, NULL);
    pthread_join(operator, NULL);
    pthread_mutex_destroy(&h.mu);
    tj_lease_options_free(lo);
    tj_queue_free(q);
    tj_cancel_free(shutdown_requested);
    t.cancelled += atomic_load(&h.cancelled_jobs);
    printf("worker: %ld completed, %ld lost, %ld heartbeats, %ld cancelled, %ld timed out, "
           "%ld follow-ups\n",
           t.done, t.lost, atomic_load(&h.beats), t.cancelled, t.timed_out, t.follow_ups);
    return t.done >= jobs && t.lost == 0 && t.cancelled == 1 && t.timed_out == 1 ? 0 : 1;
}
