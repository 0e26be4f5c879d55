/* The C API's benchmark row: the same workloads as the Rust core's
 * reference (core/examples/bench_ref.rs, same payload, reaper off), measured
 * through the C API, printed beside the reference from the same run.
 *
 *   bench_lifecycle N ROUNDS 'command printing bench_ref JSON' LABEL
 *   bench_lifecycle --json N BATCH
 *
 * The --json form measures one round of the two figures of `make bench`'s
 * table (scripts/bench_table.py) and prints them as one JSON object:
 * "lifecycle" (enqueue + lease_next + complete, one job at a time) and
 * "batch_lifecycle" (tj_queue_enqueue_many of BATCH, tj_queue_lease_many of
 * BATCH, then tj_queue_complete each: the C API has no complete_many).
 *
 * The machine is shared and noisy, so the reference and the C workloads
 * take turns, ROUNDS times, and each figure is the median of its rounds. */
#include "harness.h"

static const char PAYLOAD[] =
    "{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, tj_status s, tj_error *err) {
    fprintf(stderr, "bench: %s: %s %s\n", what, tj_status_name(s), tj_error_message(err));
    exit(1);
}

static tj_queue *open_store(const char *dir, const char *name) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tj_options *o = tj_options_new();
    tj_options_set_reaper_interval_ms(o, 0);
    tj_queue *q = NULL;
    tj_error *err = NULL;
    tj_status s = tj_queue_open(path, o, &q, &err);
    tj_options_free(o);
    if (s != TJ_STATUS_OK)
        die("open", s, err);
    return q;
}

static void enqueue(tj_queue *q) {
    tj_error *err = NULL;
    tj_status s = tj_queue_enqueue(q, "bench", (const uint8_t *)PAYLOAD, sizeof PAYLOAD - 1,
                                   NULL, NULL, NULL, &err);
    if (s != TJ_STATUS_OK)
        die("enqueue", s, err);
}

static void lease_complete(tj_queue *q) {
    tj_error *err = NULL;
    tj_job *job = NULL;
    tj_status s = tj_queue_lease_next(q, "w", NULL, &job, &err);
    if (s != TJ_STATUS_OK || job == NULL)
        die("lease", s, err);
    tj_token t = tj_job_token(job);
    s = tj_queue_complete(q, &t, NULL, 0, &err);
    if (s != TJ_STATUS_OK)
        die("complete", s, err);
    tj_job_free(job);
}

/* The number after "key": in the reference JSON, or 0 when absent. */
static double ref(const char *json, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = json ? strstr(json, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : 0.0;
}

static void row(const char *figure, double c, double rust, const char *target) {
    if (rust > 0)
        printf("%-52s %10.0f/s %10.0f/s %8.2fx%s\n", figure, c, rust, c / rust, target);
    else
        printf("%-52s %10.0f/s %12s\n", figure, c, "(no ref)");
}

struct figures {
    double enqueue, lease_complete, lifecycle;
};

static struct figures measure_c(long n) {
    char dir[64];
    tmpdir_make(dir);
    struct figures f;
    tj_queue *q = open_store(dir, "single");
    double t = seconds();
    for (long i = 0; i < n; i++)
        enqueue(q);
    f.enqueue = (double)n / (seconds() - t);
    t = seconds();
    for (long i = 0; i < n; i++)
        lease_complete(q);
    f.lease_complete = (double)n / (seconds() - t);
    tj_queue_free(q);

    q = open_store(dir, "lifecycle");
    t = seconds();
    for (long i = 0; i < n; i++) {
        enqueue(q);
        lease_complete(q);
    }
    f.lifecycle = (double)n / (seconds() - t);
    tj_queue_free(q);
    tmpdir_remove(dir);
    return f;
}

static struct figures measure_rust(const char *cmd) {
    struct figures f = {0, 0, 0};
    if (!cmd || !cmd[0])
        return f;
    FILE *p = popen(cmd, "r");
    if (!p) {
        perror("popen");
        return f;
    }
    char json[1024] = {0};
    size_t got = fread(json, 1, sizeof json - 1, p);
    json[got] = '\0';
    if (pclose(p) != 0) {
        fprintf(stderr, "bench: the reference command failed: %s\n", cmd);
        exit(1);
    }
    f.enqueue = ref(json, "enqueue");
    f.lease_complete = ref(json, "lease_complete");
    f.lifecycle = ref(json, "lifecycle");
    return f;
}

/* The table's batch figure: BATCH jobs at a time through the batch forms. */
static double batch_lifecycle(tj_queue *q, long n, long batch) {
    tj_batch *b = tj_batch_new();
    tj_job **jobs = calloc((size_t)batch, sizeof *jobs);
    if (!jobs) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    tj_error *err = NULL;
    double t = seconds();
    for (long done = 0; done < n;) {
        long k = n - done < batch ? n - done : batch;
        tj_batch_clear(b);
        for (long i = 0; i < k; i++) {
            tj_status s = tj_batch_add(b, "bench", (const uint8_t *)PAYLOAD, sizeof PAYLOAD - 1,
                                       NULL, &err);
            if (s != TJ_STATUS_OK)
                die("batch_add", s, err);
        }
        tj_status s = tj_queue_enqueue_many(q, b, NULL, NULL, &err);
        if (s != TJ_STATUS_OK)
            die("enqueue_many", s, err);
        size_t got = 0;
        s = tj_queue_lease_many(q, "w", NULL, (size_t)k, jobs, &got, &err);
        if (s != TJ_STATUS_OK || got != (size_t)k)
            die("lease_many", s, err);
        for (size_t i = 0; i < got; i++) {
            tj_token tok = tj_job_token(jobs[i]);
            s = tj_queue_complete(q, &tok, NULL, 0, &err);
            if (s != TJ_STATUS_OK)
                die("complete", s, err);
            tj_job_free(jobs[i]);
        }
        done += k;
    }
    double rate = (double)n / (seconds() - t);
    free(jobs);
    tj_batch_free(b);
    return rate;
}

static int table_json(long n, long batch) {
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, "lifecycle");
    double t = seconds();
    for (long i = 0; i < n; i++) {
        enqueue(q);
        lease_complete(q);
    }
    double lifecycle = (double)n / (seconds() - t);
    tj_queue_free(q);
    q = open_store(dir, "batch");
    double batched = batch_lifecycle(q, n, batch);
    tj_queue_free(q);
    tmpdir_remove(dir);
    printf("{\"n\":%ld,\"batch\":%ld,\"lifecycle\":%.0f,\"batch_lifecycle\":%.0f}\n", n, batch,
           lifecycle, batched);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { MAX_ROUNDS = 15 };

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--json") == 0) {
        long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
        long batch = argc > 3 ? strtol(argv[3], NULL, 10) : 100;
        if (n <= 0 || batch <= 0 || batch > 10000) {
            fprintf(stderr, "usage: bench_lifecycle --json N BATCH (BATCH 1..10000)\n");
            return 2;
        }
        return table_json(n, batch);
    }
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    int rounds = argc > 2 ? atoi(argv[2]) : 1;
    const char *ref_cmd = argc > 3 ? argv[3] : NULL;
    const char *label = argc > 4 ? argv[4] : "C API";
    if (n <= 0)
        n = 20000;
    if (rounds < 1 || rounds > MAX_ROUNDS)
        rounds = 1;
    double c[3][MAX_ROUNDS], r[3][MAX_ROUNDS];
    for (int i = 0; i < rounds; i++) {
        struct figures rf = measure_rust(ref_cmd);
        struct figures cf = measure_c(n);
        r[0][i] = rf.enqueue, r[1][i] = rf.lease_complete, r[2][i] = rf.lifecycle;
        c[0][i] = cf.enqueue, c[1][i] = cf.lease_complete, c[2][i] = cf.lifecycle;
        printf("round %d: lifecycle C %.0f/s, Rust %.0f/s\n", i + 1, cf.lifecycle, rf.lifecycle);
    }
    printf("telha-jobs %s benchmark: n=%ld, median of %d round(s), each round the Rust core "
           "(bench_ref) then the C API\n", label, n, rounds);
    printf("%-52s %12s %12s %9s\n", "figure", "C API", "Rust core", "C/Rust");
    row("enqueue, 1 thread", median(c[0], rounds), median(r[0], rounds), "");
    row("lease_next + complete, 1 thread", median(c[1], rounds), median(r[1], rounds), "");
    row("lifecycle enqueue+lease_next+complete, 1 thread", median(c[2], rounds),
        median(r[2], rounds), "  (target >= 0.9x)");
    return 0;
}
