/* Round trip, step 3 (C): lease the jobs Python left, check each payload's
 * raw bytes against what Node stored, fail each (not retryable: dead), then
 * read every job back and compare the raw payload and result bytes with
 * the manifest (Node's payload bytes, Python's result bytes).
 *
 *   fail_rest STORE MANIFEST
 *
 * Ends with "N passed, N failed" (one check per comparison). */
#define _XOPEN_SOURCE 700
#include "mini_json.h"
#include "telha_jobs.h"

#define REASON "rejected by the C worker"

static int passed, failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            passed++;                                                      \
        } else {                                                           \
            failed++;                                                      \
            fprintf(stderr, "  check failed: %s: ", #cond);                \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

/* Whether `len` bytes at `b` are exactly the bytes of the hex text `hex`. */
static bool same_bytes(const uint8_t *b, size_t len, const char *hex) {
    size_t n = strlen(hex);
    if (n != 2 * len) return false;
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1 || v != b[i]) return false;
    }
    return true;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fail_rest STORE MANIFEST\n");
        return 2;
    }
    char perr[512];
    jval *m = jparse_file(argv[2], perr, sizeof perr);
    if (!m) {
        fprintf(stderr, "manifest: %s\n", perr);
        puts("0 passed, 1 failed");
        return 1;
    }
    const jval *jobs = jget(m, "jobs");
    const char *kind = jget_str(m, "kind", "");
    size_t n = jobs ? jobs->len : 0, half = n / 2;

    tj_options *o = tj_options_new();
    tj_options_set_reaper_interval_ms(o, 0);
    tj_queue *q = NULL;
    tj_error *err = NULL;
    tj_status st = tj_queue_open(argv[1], o, &q, &err);
    tj_options_free(o);
    if (st != TJ_STATUS_OK) {
        fprintf(stderr, "open: %s\n", tj_error_message(err));
        tj_error_free(err);
        jfree(m);
        puts("0 passed, 1 failed");
        return 1;
    }
    tj_lease_options *lo = tj_lease_options_new();
    tj_lease_options_add_kind(lo, kind, NULL);

    /* Lease and fail the rest, in enqueue order. */
    for (size_t i = half; i < n; i++) {
        const jval *want = jobs->items[i];
        tj_job *job = NULL;
        st = tj_queue_lease_next(q, "c-worker", lo, &job, NULL);
        CHECK(st == TJ_STATUS_OK && job != NULL, "job %zu is not leasable (%s)", i, tj_status_name(st));
        if (!job) continue;
        CHECK(strcmp(tj_job_id_str(job), jget_str(want, "id", "")) == 0, "FIFO: wanted %s, leased %s",
              jget_str(want, "id", ""), tj_job_id_str(job));
        size_t len = 0;
        const uint8_t *p = tj_job_payload(job, &len);
        CHECK(same_bytes(p, len, jget_str(want, "payload_hex", "")), "%s: payload bytes differ from Node's",
              tj_job_id_str(job));
        tj_token t = tj_job_token(job);
        st = tj_queue_fail(q, &t, REASON, false, NULL);
        CHECK(st == TJ_STATUS_OK, "fail: %s", tj_status_name(st));
        tj_job_free(job);
    }
    tj_job *none = NULL;
    st = tj_queue_lease_next(q, "c-worker", lo, &none, NULL);
    CHECK(st == TJ_STATUS_OK && none == NULL, "a job is left over");
    tj_job_free(none);
    tj_lease_options_free(lo);

    /* Every job, read back: Node's payload bytes, Python's result bytes. */
    for (size_t i = 0; i < n; i++) {
        const jval *want = jobs->items[i];
        tj_id id;
        tj_job_info *info = NULL;
        st = tj_id_parse(jget_str(want, "id", ""), &id, NULL);
        if (st == TJ_STATUS_OK) st = tj_queue_get(q, &id, &info, NULL);
        CHECK(st == TJ_STATUS_OK && info != NULL, "job %zu: get answered %s", i, tj_status_name(st));
        if (!info) continue;
        size_t len = 0;
        const uint8_t *p = tj_job_info_payload(info, &len);
        CHECK(same_bytes(p, len, jget_str(want, "payload_hex", "")), "job %zu: payload bytes", i);
        const uint8_t *r = tj_job_info_result(info, &len);
        if (i < half) {
            CHECK(tj_job_info_state(info) == TJ_STATE_COMPLETED, "job %zu: %s", i, tj_state_name(tj_job_info_state(info)));
            CHECK(r != NULL && same_bytes(r, len, jget_str(want, "result_hex", "")), "job %zu: result bytes differ from Python's", i);
        } else {
            CHECK(tj_job_info_state(info) == TJ_STATE_DEAD, "job %zu: %s", i, tj_state_name(tj_job_info_state(info)));
            CHECK(r == NULL, "job %zu: a failed job has a result", i);
            const char *e = tj_job_info_last_error(info);
            CHECK(e != NULL && strcmp(e, REASON) == 0, "job %zu: last error %s", i, e ? e : "(none)");
        }
        tj_job_info_free(info);
    }
    tj_queue_free(q);
    jfree(m);
    printf("roundtrip c: leased and failed %zu jobs, raw payload and result bytes of all %zu compared\n", n - half, n);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
