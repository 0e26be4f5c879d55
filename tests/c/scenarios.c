/* The conformance scenarios (tests/scenarios/<name>.json, format in that
 * directory's README) run through the C API.
 *
 *   scenarios [CASES_DIR]          run every case; default tests/scenarios
 *   scenarios --hold STORE         the "other process" of hold_elsewhere
 *
 * Prints one line per case, then "c scenarios: ran N of M case files" and
 * "N passed, N failed"; exits 1 when a case failed or fewer ran than there
 * are files. The cases are read with the small reader in mini_json.h. To
 * run them against another store implementation, change open_store() and
 * nothing else. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mini_json.h"
#include "telha_jobs.h"

#define MIN_CASES 30
#define MAX_NAMES 128
#define HOLDER_READY "telha-scenario-holder ready"
/* A step the runner itself could not carry out (a malformed case, an
 * unknown op or field): never one of the API's statuses. */
#define RUNNER_ERROR 9999u

struct named_id { char *name; tj_id id; };
struct named_token { char *name; tj_token token; };

struct run {
    char dir[256];
    char store[300];
    const jval *config;
    tj_queue *q;
    struct named_id ids[MAX_NAMES];
    size_t nids;
    struct named_token leases[MAX_NAMES];
    size_t nleases;
    pid_t holder;
    int holder_stdin;
    /* A store file as it was before write_store_file. */
    char saved_name[64];
    char *saved;
    size_t saved_len;
    char msg[4096]; /* why the last step failed */
};

static tj_status runner_error(struct run *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    return RUNNER_ERROR;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The one place this runner opens a store: the case's config over the
 * defaults, the background reaper off (the cases reap explicitly). */
static tj_status open_store(struct run *r, tj_queue **q, tj_error **err) {
    tj_options *o = tj_options_new();
    tj_status st = tj_options_set_reaper_interval_ms(o, 0);
    const jval *c = r->config;
    for (size_t i = 0; c && c->t == J_OBJ && i < c->len && st == TJ_STATUS_OK; i++) {
        const char *k = c->keys[i];
        const jval *v = c->items[i];
        if (strcmp(k, "kinds") == 0) {
            for (size_t j = 0; j < v->len && st == TJ_STATUS_OK; j++) {
                const char *kind = v->keys[j];
                const jval *kc = v->items[j];
                for (size_t m = 0; m < kc->len && st == TJ_STATUS_OK; m++) {
                    const char *kk = kc->keys[m];
                    uint64_t n = (uint64_t)kc->items[m]->num;
                    if (strcmp(kk, "lease_ttl_ms") == 0) st = tj_options_set_kind_lease_ttl_ms(o, kind, n, err);
                    else if (strcmp(kk, "max_attempts") == 0) st = tj_options_set_kind_max_attempts(o, kind, (uint32_t)n, err);
                    else if (strcmp(kk, "backoff_base_ms") == 0) st = tj_options_set_kind_backoff_base_ms(o, kind, n, err);
                    else st = runner_error(r, "unknown kind config key %s", kk);
                }
            }
            continue;
        }
        if (v->t != J_NUM) { st = runner_error(r, "config %s must be a number", k); break; }
        if (strcmp(k, "lease_ttl_ms") == 0) st = tj_options_set_lease_ttl_ms(o, (uint64_t)v->num);
        else if (strcmp(k, "max_attempts") == 0) st = tj_options_set_max_attempts(o, (uint32_t)v->num);
        else if (strcmp(k, "backoff_base_ms") == 0) st = tj_options_set_backoff_base_ms(o, (uint64_t)v->num);
        else if (strcmp(k, "backoff_factor") == 0) st = tj_options_set_backoff_factor(o, v->num);
        else if (strcmp(k, "backoff_cap_ms") == 0) st = tj_options_set_backoff_cap_ms(o, (uint64_t)v->num);
        else if (strcmp(k, "max_payload_bytes") == 0) st = tj_options_set_max_payload_bytes(o, (size_t)v->num);
        else st = runner_error(r, "unknown config key %s", k);
    }
    if (st == TJ_STATUS_OK) st = tj_queue_open(r->store, o, q, err);
    tj_options_free(o);
    return st;
}

/* ------------------------------------------------------------ names */

static void bind_id(struct run *r, const jval *s, tj_id id) {
    const char *name = jget_str(s, "as", NULL);
    if (!name) return;
    for (size_t i = 0; i < r->nids; i++)
        if (strcmp(r->ids[i].name, name) == 0) { r->ids[i].id = id; return; }
    if (r->nids == MAX_NAMES) return;
    r->ids[r->nids].name = strdup(name);
    r->ids[r->nids++].id = id;
}

static void bind_token(struct run *r, const char *name, tj_token t) {
    if (!name) return;
    for (size_t i = 0; i < r->nleases; i++)
        if (strcmp(r->leases[i].name, name) == 0) { r->leases[i].token = t; return; }
    if (r->nleases == MAX_NAMES) return;
    r->leases[r->nleases].name = strdup(name);
    r->leases[r->nleases++].token = t;
}

/* A job's case name, else its id text. */
static jval *name_of(const struct run *r, tj_id id) {
    for (size_t i = 0; i < r->nids; i++)
        if (memcmp(r->ids[i].id.bytes, id.bytes, 16) == 0) return jnew_str(r->ids[i].name);
    char buf[TJ_ID_STRLEN];
    tj_id_format(&id, buf, sizeof buf, NULL);
    return jnew_str(buf);
}

/* `job` (a case name) or `job_id` (text, parsed by the API). */
static tj_status job_id(struct run *r, const jval *s, tj_id *out, tj_error **err) {
    const char *name = jget_str(s, "job", NULL);
    if (name) {
        for (size_t i = 0; i < r->nids; i++)
            if (strcmp(r->ids[i].name, name) == 0) { *out = r->ids[i].id; return TJ_STATUS_OK; }
        return runner_error(r, "the case names no job %s", name);
    }
    return tj_id_parse(jget_str(s, "job_id", ""), out, err);
}

/* A lease: a name bound by `lease ... as`, or {job | job_id, generation}. */
static tj_status token_of(struct run *r, const jval *ref, tj_token *out, tj_error **err) {
    if (ref && ref->t == J_STR) {
        for (size_t i = 0; i < r->nleases; i++)
            if (strcmp(r->leases[i].name, ref->str) == 0) { *out = r->leases[i].token; return TJ_STATUS_OK; }
        return runner_error(r, "the case names no lease %s", ref->str);
    }
    double g;
    if (!ref || ref->t != J_OBJ || !jget_num(ref, "generation", &g)) return runner_error(r, "bad lease reference");
    out->generation = (uint64_t)g;
    return job_id(r, ref, &out->id, err);
}

/* ------------------------------------------------------------ observed answers */

static void put_bytes(jval *o, const char *name, const uint8_t *b, size_t len, bool present) {
    char size_key[64];
    snprintf(size_key, sizeof size_key, "%s_size", name);
    jobj_put(o, name, present ? jnew_strn((const char *)b, len) : jnew_null());
    jobj_put(o, size_key, present ? jnew_num((double)len) : jnew_null());
}

static jval *job_json(const struct run *r, const tj_job *j) {
    jval *o = jnew_obj();
    jobj_put(o, "job", name_of(r, tj_job_id(j)));
    jobj_put(o, "kind", jnew_str(tj_job_kind(j)));
    jobj_put(o, "scope", jnew_str(tj_job_scope(j)));
    jobj_put(o, "attempts", jnew_num(tj_job_attempts(j)));
    jobj_put(o, "max_attempts", jnew_num(tj_job_max_attempts(j)));
    jobj_put(o, "generation", jnew_num((double)tj_job_generation(j)));
    jobj_put(o, "priority", jnew_num(tj_job_priority(j)));
    jobj_put(o, "worker_id", jnew_str(tj_job_worker_id(j)));
    size_t len = 0;
    const uint8_t *p = tj_job_payload(j, &len);
    put_bytes(o, "payload", p, len, true);
    return o;
}

static jval *info_json(const struct run *r, const tj_job_info *i) {
    jval *o = jnew_obj();
    jobj_put(o, "job", name_of(r, tj_job_info_id(i)));
    jobj_put(o, "kind", jnew_str(tj_job_info_kind(i)));
    jobj_put(o, "scope", jnew_str(tj_job_info_scope(i)));
    jobj_put(o, "state", jnew_str(tj_state_name(tj_job_info_state(i))));
    jobj_put(o, "priority", jnew_num(tj_job_info_priority(i)));
    jobj_put(o, "attempts", jnew_num(tj_job_info_attempts(i)));
    jobj_put(o, "max_attempts", jnew_num(tj_job_info_max_attempts(i)));
    jobj_put(o, "generation", jnew_num((double)tj_job_info_generation(i)));
    jobj_put(o, "worker_id", jnew_str(tj_job_info_worker_id(i)));
    jobj_put(o, "last_error", jnew_str(tj_job_info_last_error(i)));
    jobj_put(o, "idempotency_key", jnew_str(tj_job_info_idempotency_key(i)));
    jval *ev = jnew_arr();
    for (size_t k = 0; k < tj_job_info_event_count(i); k++) {
        const char *t = NULL;
        if (tj_job_info_event(i, k, NULL, &t, NULL, NULL) == TJ_STATUS_OK) jarr_push(ev, jnew_str(t));
    }
    jobj_put(o, "events", ev);
    size_t len = 0;
    const uint8_t *p = tj_job_info_payload(i, &len);
    put_bytes(o, "payload", p, len, true);
    p = tj_job_info_result(i, &len);
    put_bytes(o, "result", p, len, p != NULL);
    return o;
}

static jval *counts_json(tj_state_counts c) {
    jval *o = jnew_obj();
    jobj_put(o, "pending", jnew_num((double)c.pending));
    jobj_put(o, "leased", jnew_num((double)c.leased));
    jobj_put(o, "failed", jnew_num((double)c.failed));
    jobj_put(o, "completed", jnew_num((double)c.completed));
    jobj_put(o, "dead", jnew_num((double)c.dead));
    return o;
}

/* ------------------------------------------------------------ steps */

/* A step's bytes: `name` as text, or `<name>_size` bytes of 'x'. *buf is
 * malloc'd (free it); *present is false when the step gives neither. */
static void bytes_arg(const jval *s, const char *name, uint8_t **buf, size_t *len, bool *present) {
    char size_key[64];
    snprintf(size_key, sizeof size_key, "%s_size", name);
    const jval *v = jget(s, name);
    double n;
    *buf = NULL; *len = 0; *present = true;
    if (v && v->t == J_STR) {
        *buf = jx_alloc(v->len + 1);
        memcpy(*buf, v->str, v->len);
        *len = v->len;
    } else if (jget_num(s, size_key, &n)) {
        *len = (size_t)n;
        *buf = jx_alloc(*len + 1);
        memset(*buf, 'x', *len);
    } else {
        *present = false;
    }
}

/* Enqueue options from a step (or an enqueue_many item). */
static tj_status enqueue_options(const jval *s, tj_enqueue_options **out, tj_error **err) {
    tj_enqueue_options *o = tj_enqueue_options_new();
    tj_status st = TJ_STATUS_OK;
    double n;
    const char *scope = jget_str(s, "scope", NULL), *key = jget_str(s, "idempotency_key", NULL);
    if (scope) st = tj_enqueue_options_set_scope(o, scope, err);
    if (st == TJ_STATUS_OK && jget_num(s, "priority", &n)) st = tj_enqueue_options_set_priority(o, (uint8_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "delay_ms", &n)) st = tj_enqueue_options_set_delay_ms(o, (uint64_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "run_at_ms", &n)) st = tj_enqueue_options_set_run_at_ms(o, (uint64_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "run_at_in_ms", &n))
        st = tj_enqueue_options_set_run_at_ms(o, now_ms() + (uint64_t)n);
    if (st == TJ_STATUS_OK && key) st = tj_enqueue_options_set_idempotency_key(o, key, err);
    if (st == TJ_STATUS_OK && jget_num(s, "max_attempts", &n)) st = tj_enqueue_options_set_max_attempts(o, (uint32_t)n);
    if (st != TJ_STATUS_OK) { tj_enqueue_options_free(o); return st; }
    *out = o;
    return st;
}

static tj_status op_enqueue(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_enqueue_options *o = NULL;
    tj_status st = enqueue_options(s, &o, err);
    if (st != TJ_STATUS_OK) return st;
    uint8_t *p; size_t len; bool present;
    bytes_arg(s, "payload", &p, &len, &present);
    tj_id id;
    st = tj_queue_enqueue(r->q, jget_str(s, "kind", ""), p, len, o, &id, NULL, err);
    free(p);
    tj_enqueue_options_free(o);
    if (st != TJ_STATUS_OK) return st;
    bind_id(r, s, id);
    *obs = jnew_obj();
    jobj_put(*obs, "same_as", name_of(r, id));
    return st;
}

static tj_status op_enqueue_many(struct run *r, const jval *s, tj_error **err) {
    const jval *jobs = jget(s, "jobs");
    if (!jobs || jobs->t != J_ARR) return runner_error(r, "enqueue_many needs jobs");
    tj_batch *b = tj_batch_new();
    tj_status st = TJ_STATUS_OK;
    for (size_t i = 0; i < jobs->len && st == TJ_STATUS_OK; i++) {
        tj_enqueue_options *o = NULL;
        st = enqueue_options(jobs->items[i], &o, err);
        if (st != TJ_STATUS_OK) break;
        uint8_t *p; size_t len; bool present;
        bytes_arg(jobs->items[i], "payload", &p, &len, &present);
        st = tj_batch_add(b, jget_str(jobs->items[i], "kind", ""), p, len, o, err);
        free(p);
        tj_enqueue_options_free(o);
    }
    tj_id *ids = jx_alloc((jobs->len + 1) * sizeof *ids);
    if (st == TJ_STATUS_OK) st = tj_queue_enqueue_many(r->q, b, ids, NULL, err);
    if (st == TJ_STATUS_OK)
        for (size_t i = 0; i < jobs->len; i++) bind_id(r, jobs->items[i], ids[i]);
    free(ids);
    tj_batch_free(b);
    return st;
}

static tj_status op_lease(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_lease_options *o = tj_lease_options_new();
    tj_status st = TJ_STATUS_OK;
    const jval *kinds = jget(s, "kinds"), *scopes = jget(s, "scopes");
    for (size_t i = 0; kinds && i < kinds->len && st == TJ_STATUS_OK; i++)
        st = tj_lease_options_add_kind(o, kinds->items[i]->str, err);
    for (size_t i = 0; scopes && i < scopes->len && st == TJ_STATUS_OK; i++)
        st = tj_lease_options_add_scope(o, scopes->items[i]->str, err);
    tj_job *job = NULL;
    if (st == TJ_STATUS_OK) st = tj_queue_lease_next(r->q, jget_str(s, "worker", "w1"), o, &job, err);
    tj_lease_options_free(o);
    if (st != TJ_STATUS_OK) return st;
    if (!job) { *obs = jnew_null(); return st; }
    bind_token(r, jget_str(s, "as", NULL), tj_job_token(job));
    *obs = job_json(r, job);
    tj_job_free(job);
    return st;
}

static tj_status op_extend(struct run *r, const jval *s, jval **obs, tj_error **err) {
    const jval *refs = jget(s, "leases");
    size_t n = refs && refs->t == J_ARR ? refs->len : 0;
    tj_token *tokens = jx_alloc((n + 1) * sizeof *tokens);
    tj_status *sts = jx_alloc((n + 1) * sizeof *sts);
    tj_status st = TJ_STATUS_OK;
    for (size_t i = 0; i < n && st == TJ_STATUS_OK; i++) st = token_of(r, refs->items[i], &tokens[i], err);
    if (st == TJ_STATUS_OK) st = tj_queue_extend(r->q, jget_str(s, "worker", "w1"), tokens, n, sts, NULL, err);
    if (st == TJ_STATUS_OK) {
        /* Per token: renewed, or lost (ABORTED, NOT_FOUND); anything else fails. */
        jval *renewed = jnew_arr();
        for (size_t i = 0; i < n; i++) {
            if (sts[i] != TJ_STATUS_OK && sts[i] != TJ_STATUS_ABORTED && sts[i] != TJ_STATUS_NOT_FOUND)
                st = runner_error(r, "extend: token %zu answered %s", i, tj_status_name(sts[i]));
            jarr_push(renewed, jnew_bool(sts[i] == TJ_STATUS_OK));
        }
        *obs = jnew_obj();
        jobj_put(*obs, "renewed", renewed);
    }
    free(tokens);
    free(sts);
    return st;
}

static tj_status op_settle(struct run *r, const char *op, const jval *s, tj_error **err) {
    tj_token t;
    tj_status st = token_of(r, jget(s, "lease"), &t, err);
    if (st != TJ_STATUS_OK) return st;
    if (strcmp(op, "complete") == 0) {
        uint8_t *p; size_t len; bool present;
        bytes_arg(s, "result", &p, &len, &present);
        st = tj_queue_complete(r->q, &t, present ? p : NULL, len, err);
        free(p);
        return st;
    }
    if (strcmp(op, "fail") == 0) {
        const jval *rt = jget(s, "retryable");
        bool retryable = !(rt && rt->t == J_BOOL && !rt->b);
        return tj_queue_fail(r->q, &t, jget_str(s, "reason", ""), retryable, err);
    }
    return tj_queue_release(r->q, &t, err);
}

static tj_status op_get(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    if (st != TJ_STATUS_OK) return st;
    tj_job_info *info = NULL;
    st = tj_queue_get(r->q, &id, &info, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = info ? info_json(r, info) : jnew_null();
    tj_job_info_free(info);
    return st;
}

static uint32_t state_number(const char *name) {
    for (uint32_t i = 1; i <= 5; i++)
        if (strcmp(tj_state_name(i), name) == 0) return i;
    return 0; /* refused by tj_list_options_set_state */
}

static tj_status op_list(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_list_options *o = tj_list_options_new();
    tj_status st = TJ_STATUS_OK;
    const char *state = jget_str(s, "state", NULL), *scope = jget_str(s, "scope", NULL),
               *kind = jget_str(s, "kind", NULL);
    if (state) st = tj_list_options_set_state(o, state_number(state), err);
    if (st == TJ_STATUS_OK && scope) st = tj_list_options_set_scope(o, scope, err);
    if (st == TJ_STATUS_OK && kind) st = tj_list_options_set_kind(o, kind, err);
    tj_list_page *page = NULL;
    if (st == TJ_STATUS_OK) st = tj_queue_list(r->q, o, &page, err);
    tj_list_options_free(o);
    if (st != TJ_STATUS_OK) return st;
    jval *jobs = jnew_arr();
    for (size_t i = 0; i < tj_list_page_len(page); i++)
        jarr_push(jobs, name_of(r, tj_job_info_id(tj_list_page_get(page, i))));
    tj_list_page_free(page);
    *obs = jnew_obj();
    jobj_put(*obs, "jobs", jobs);
    return st;
}

static tj_status op_stats(struct run *r, jval **obs, tj_error **err) {
    tj_stats *stats = NULL;
    tj_status st = tj_queue_stats(r->q, &stats, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = counts_json(tj_stats_total(stats));
    jval *by = jnew_obj();
    for (size_t i = 0; i < tj_stats_kind_count(stats); i++) {
        const char *kind = NULL;
        tj_state_counts c;
        if (tj_stats_kind(stats, i, &kind, &c, NULL) == TJ_STATUS_OK) jobj_put(by, kind, counts_json(c));
    }
    jobj_put(*obs, "by_kind", by);
    tj_stats_free(stats);
    return st;
}

static bool read_file(const char *path, char **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t cap = 256, n = 0, got;
    char *b = jx_alloc(cap);
    while ((got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { cap *= 2; b = realloc(b, cap); if (!b) abort(); }
    }
    fclose(f);
    *buf = b;
    *len = n;
    return true;
}

static bool write_file(const char *path, const char *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(buf, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* write_store_file / restore_store_file: overwrite one of the store's files
 * with the step's `text` (keeping the old bytes), or put them back. */
static tj_status store_file(struct run *r, const jval *s, bool restore) {
    const char *name = jget_str(s, "file", "");
    char path[400];
    if (!name[0] || strchr(name, '/') || strlen(name) >= sizeof r->saved_name)
        return runner_error(r, "bad store file name %s", name);
    snprintf(path, sizeof path, "%s/%s", r->store, name);
    if (restore) {
        if (!r->saved || strcmp(r->saved_name, name) != 0) return runner_error(r, "nothing saved to restore");
        bool ok = write_file(path, r->saved, r->saved_len);
        free(r->saved);
        r->saved = NULL;
        return ok ? TJ_STATUS_OK : runner_error(r, "cannot write %s", path);
    }
    if (!r->saved) {
        if (!read_file(path, &r->saved, &r->saved_len)) return runner_error(r, "cannot read %s", path);
        snprintf(r->saved_name, sizeof r->saved_name, "%s", name);
    }
    const char *text = jget_str(s, "text", "");
    return write_file(path, text, strlen(text)) ? TJ_STATUS_OK : runner_error(r, "cannot write %s", path);
}

/* open_at_file: a store path that is a regular file (the open's I/O error). */
static tj_status open_at_file(struct run *r, tj_error **err) {
    struct run other = *r;
    snprintf(other.store, sizeof other.store, "%s/not-a-directory", r->dir);
    const char *text = "a file, not a store";
    if (!write_file(other.store, text, strlen(text))) return runner_error(r, "cannot write %s", other.store);
    tj_queue *q = NULL;
    tj_status st = open_store(&other, &q, err);
    tj_queue_free(q);
    if (st == RUNNER_ERROR) memcpy(r->msg, other.msg, sizeof r->msg);
    return st;
}

/* hold_elsewhere: this program again, as another process (fork + exec of
 * /proc/self/exe), holding the store until its stdin closes. */
static tj_status start_holder(struct run *r) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return runner_error(r, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return runner_error(r, "fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]); close(in[1]); close(out[0]); close(out[1]);
        execl("/proc/self/exe", "scenarios", "--hold", r->store, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    r->holder = pid;
    r->holder_stdin = in[1];
    char line[256] = {0};
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t k = read(out[0], line + n, 1);
        if (k <= 0 || line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    close(out[0]);
    if (strcmp(line, HOLDER_READY) != 0) return runner_error(r, "the holder process did not start: %s", line);
    return TJ_STATUS_OK;
}

static void stop_holder(struct run *r) {
    if (r->holder <= 0) return;
    close(r->holder_stdin);
    int status;
    waitpid(r->holder, &status, 0);
    r->holder = 0;
}

static int hold(const char *path) {
    tj_options *o = tj_options_new();
    tj_options_set_reaper_interval_ms(o, 0);
    tj_queue *q = NULL;
    tj_error *err = NULL;
    tj_status st = tj_queue_open(path, o, &q, &err);
    tj_options_free(o);
    if (st != TJ_STATUS_OK) {
        printf("holder could not open %s: %s\n", path, tj_error_message(err));
        tj_error_free(err);
        return 1;
    }
    printf("%s\n", HOLDER_READY);
    fflush(stdout);
    char buf[256];
    while (read(0, buf, sizeof buf) > 0) {
    }
    tj_queue_free(q);
    return 0;
}

static tj_status do_step(struct run *r, const char *op, const jval *s, jval **obs, tj_error **err) {
    double n;
    if (strcmp(op, "enqueue") == 0) return op_enqueue(r, s, obs, err);
    if (strcmp(op, "enqueue_many") == 0) return op_enqueue_many(r, s, err);
    if (strcmp(op, "lease") == 0) return op_lease(r, s, obs, err);
    if (strcmp(op, "extend") == 0) return op_extend(r, s, obs, err);
    if (strcmp(op, "complete") == 0 || strcmp(op, "fail") == 0 || strcmp(op, "release") == 0)
        return op_settle(r, op, s, err);
    if (strcmp(op, "retry") == 0) {
        tj_id id;
        tj_status st = job_id(r, s, &id, err);
        return st == TJ_STATUS_OK ? tj_queue_retry(r->q, &id, err) : st;
    }
    if (strcmp(op, "get") == 0) return op_get(r, s, obs, err);
    if (strcmp(op, "list") == 0) return op_list(r, s, obs, err);
    if (strcmp(op, "reap") == 0) {
        tj_reap_report rep;
        tj_status st = tj_queue_reap(r->q, &rep, err);
        if (st == TJ_STATUS_OK) {
            *obs = jnew_obj();
            jobj_put(*obs, "expired", jnew_num((double)rep.expired));
            jobj_put(*obs, "dead", jnew_num((double)rep.dead));
            jobj_put(*obs, "pruned", jnew_num((double)rep.pruned));
        }
        return st;
    }
    if (strcmp(op, "stats") == 0) return op_stats(r, obs, err);
    if (strcmp(op, "sleep_ms") == 0) {
        if (!jget_num(s, "ms", &n)) return runner_error(r, "sleep_ms needs ms");
        sleep_ms((uint64_t)n);
        return TJ_STATUS_OK;
    }
    if (strcmp(op, "close") == 0) { tj_queue_close(r->q); return TJ_STATUS_OK; }
    if (strcmp(op, "reopen") == 0) {
        tj_queue *q = NULL;
        tj_status st = open_store(r, &q, err);
        if (st == TJ_STATUS_OK) { tj_queue_free(r->q); r->q = q; }
        return st;
    }
    if (strcmp(op, "open_at_file") == 0) return open_at_file(r, err);
    if (strcmp(op, "write_store_file") == 0) return store_file(r, s, false);
    if (strcmp(op, "restore_store_file") == 0) return store_file(r, s, true);
    if (strcmp(op, "hold_elsewhere") == 0) return start_holder(r);
    if (strcmp(op, "release_elsewhere") == 0) { stop_holder(r); return TJ_STATUS_OK; }
    return runner_error(r, "unknown op %s", op);
}

static const jval ZERO = {J_NUM, false, 0, NULL, 0, NULL, NULL, 0};

/* `want` must be a subset of `got` (objects: every wanted key, recursively;
 * anything else: equal). A kind missing from stats' by_kind counts zero. */
static bool subset(struct run *r, const jval *want, const jval *got, const char *at) {
    char path[256];
    if (want->t == J_OBJ) {
        if (!got || got->t != J_OBJ) {
            snprintf(r->msg, sizeof r->msg, "%s: wanted an object, got ", at);
            jprint(got, r->msg, sizeof r->msg);
            return false;
        }
        for (size_t i = 0; i < want->len; i++) {
            snprintf(path, sizeof path, "%s.%s", at, want->keys[i]);
            const jval *g = jget(got, want->keys[i]);
            if (!g && strcmp(at, ".by_kind") == 0) {
                const jval *w = want->items[i];
                for (size_t k = 0; k < w->len; k++)
                    if (!jequal(w->items[k], &ZERO)) {
                        snprintf(r->msg, sizeof r->msg, "%s: no such kind in stats", path);
                        return false;
                    }
                continue;
            }
            if (!g) { snprintf(r->msg, sizeof r->msg, "%s: the runner has no such field", path); return false; }
            if (!subset(r, want->items[i], g, path)) return false;
        }
        return true;
    }
    if (got && jequal(want, got)) return true;
    snprintf(r->msg, sizeof r->msg, "%s: wanted ", at);
    jprint(want, r->msg, sizeof r->msg);
    strncat(r->msg, ", got ", sizeof r->msg - strlen(r->msg) - 1);
    jprint(got, r->msg, sizeof r->msg);
    return false;
}

/* Run one step and compare its answer with `expect`: {"error": CODE} wants
 * that status; {"none": true} wants no job; another object must be a
 * subset of the answer; no expect wants success. */
static bool step(struct run *r, const jval *s) {
    const char *op = jget_str(s, "op", "?");
    const jval *expect = jget(s, "expect");
    const char *want_err = jget_str(expect, "error", NULL);
    jval *obs = NULL;
    tj_error *err = NULL;
    r->msg[0] = 0;
    tj_status st = do_step(r, op, s, &obs, &err);
    bool ok = false;
    const char *emsg = err ? tj_error_message(err) : "";
    if (st == RUNNER_ERROR) {
        ok = false;
    } else if (want_err) {
        if (st == TJ_STATUS_OK) snprintf(r->msg, sizeof r->msg, "wanted %s, got success", want_err);
        else if (strcmp(tj_status_name(st), want_err) != 0)
            snprintf(r->msg, sizeof r->msg, "wanted %s, got %s: %s", want_err, tj_status_name(st), emsg);
        else ok = true;
    } else if (st != TJ_STATUS_OK) {
        snprintf(r->msg, sizeof r->msg, "unexpected %s: %s", tj_status_name(st), emsg);
    } else if (!expect) {
        ok = true;
    } else if (jget(expect, "none")) {
        ok = obs && obs->t == J_NULL;
        if (!ok) {
            snprintf(r->msg, sizeof r->msg, "wanted none, got ");
            jprint(obs, r->msg, sizeof r->msg);
        }
    } else {
        ok = subset(r, expect, obs, "");
    }
    jfree(obs);
    tj_error_free(err);
    return ok;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static bool run_case(const char *file, char *why, size_t whylen) {
    char perr[512];
    jval *c = jparse_file(file, perr, sizeof perr);
    if (!c) { snprintf(why, whylen, "bad JSON: %s", perr); return false; }
    struct run *r = jx_alloc(sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/telha-c-scenario-XXXXXX");
    bool ok = mkdtemp(r->dir) != NULL;
    snprintf(r->store, sizeof r->store, "%s/store", r->dir);
    r->config = jget(c, "config");
    tj_error *err = NULL;
    tj_status st = ok ? open_store(r, &r->q, &err) : TJ_STATUS_STORAGE;
    if (st != TJ_STATUS_OK) {
        snprintf(why, whylen, "open: %s %s", tj_status_name(st), err ? tj_error_message(err) : r->msg);
        ok = false;
    }
    tj_error_free(err);
    const jval *steps = jget(c, "steps");
    if (ok && (!steps || steps->t != J_ARR)) { snprintf(why, whylen, "the case has no steps"); ok = false; }
    for (size_t i = 0; ok && i < steps->len; i++) {
        if (!step(r, steps->items[i])) {
            snprintf(why, whylen, "step %zu (%s): %s", i + 1, jget_str(steps->items[i], "op", "?"), r->msg);
            ok = false;
        }
    }
    tj_queue_free(r->q);
    stop_holder(r);
    nftw(r->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(r->saved);
    for (size_t i = 0; i < r->nids; i++) free(r->ids[i].name);
    for (size_t i = 0; i < r->nleases; i++) free(r->leases[i].name);
    free(r);
    jfree(c);
    return ok;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--hold") == 0) return hold(argv[2]);
    signal(SIGPIPE, SIG_IGN);
    const char *dir = argc > 1 ? argv[1] : "tests/scenarios";
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "cannot open %s\n", dir); puts("0 passed, 1 failed"); return 1; }
    char **files = NULL;
    size_t nfiles = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
        files = realloc(files, (nfiles + 1) * sizeof *files);
        files[nfiles++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(files, nfiles, sizeof *files, cmp_names);
    size_t passed = 0, failed = 0;
    for (size_t i = 0; i < nfiles; i++) {
        char path[1024], why[4400];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (run_case(path, why, sizeof why)) {
            passed++;
            printf("ok     %s\n", files[i]);
        } else {
            failed++;
            printf("FAILED %s: %s\n", files[i], why);
        }
        fflush(stdout);
        free(files[i]);
    }
    free(files);
    printf("c scenarios: ran %zu of %zu case files in %s\n", passed + failed, nfiles, dir);
    if (nfiles < MIN_CASES) {
        printf("expected at least %d case files\n", MIN_CASES);
        failed++;
    }
    printf("%zu passed, %zu failed\n", passed, failed);
    return failed > 0 || passed + failed < nfiles ? 1 : 0;
}
