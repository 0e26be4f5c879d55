/* The steps of a conformance case (tests/scenarios/README.md) as C API
 * calls, and what each answered as JSON for the runner (scenarios.c) to
 * compare with the case's `expect`. */
#define _XOPEN_SOURCE 700
#include <time.h>

#include "scenario.h"

uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------ names */

void bind_id(struct run *r, const jval *s, tj_id id) {
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
jval *name_of(const struct run *r, tj_id id) {
    for (size_t i = 0; i < r->nids; i++)
        if (memcmp(r->ids[i].id.bytes, id.bytes, 16) == 0) return jnew_str(r->ids[i].name);
    char buf[TJ_ID_STRLEN];
    tj_id_format(&id, buf, sizeof buf, NULL);
    return jnew_str(buf);
}

/* `job` (a case name) or `job_id` (text, parsed by the API). */
tj_status job_id(struct run *r, const jval *s, tj_id *out, tj_error **err) {
    const char *name = jget_str(s, "job", NULL);
    if (name) {
        for (size_t i = 0; i < r->nids; i++)
            if (strcmp(r->ids[i].name, name) == 0) { *out = r->ids[i].id; return TJ_STATUS_OK; }
        return runner_error(r, "the case names no job %s", name);
    }
    return tj_id_parse(jget_str(s, "job_id", ""), out, err);
}

/* A lease: a name bound by `lease ... as`, or {job | job_id, generation}. */
tj_status token_of(struct run *r, const jval *ref, tj_token *out, tj_error **err) {
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

void put_bytes(jval *o, const char *name, const uint8_t *b, size_t len, bool present) {
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
    uint64_t timeout = tj_job_timeout_ms(j);
    jobj_put(o, "timeout_ms", timeout ? jnew_num((double)timeout) : jnew_null());
    const char *sched = tj_job_schedule_name(j);
    jobj_put(o, "schedule", jnew_str(sched));
    jobj_put(o, "schedule_missed", sched ? jnew_num((double)tj_job_schedule_missed(j)) : jnew_null());
    tj_id parent;
    jobj_put(o, "parent", tj_job_parent(j, &parent) ? name_of(r, parent) : jnew_null());
    put_job_tags(o, j);
    size_t len = 0;
    const uint8_t *p = tj_job_payload(j, &len);
    put_bytes(o, "payload", p, len, true);
    return o;
}

jval *info_json(const struct run *r, const tj_job_info *i) {
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
    jobj_put(o, "cancel_requested", jnew_str(tj_job_info_cancel_requested(i)));
    jobj_put(o, "snoozes", jnew_num(tj_job_info_snoozes(i)));
    jobj_put(o, "paused", jnew_bool(tj_job_info_paused(i)));
    jobj_put(o, "expires", jnew_bool(tj_job_info_expires_at_ms(i) != 0));
    const char *sched = tj_job_info_schedule_name(i);
    jobj_put(o, "schedule", jnew_str(sched));
    jobj_put(o, "schedule_missed", sched ? jnew_num((double)tj_job_info_schedule_missed(i)) : jnew_null());
    tj_id parent;
    jobj_put(o, "parent", tj_job_info_parent(i, &parent) ? name_of(r, parent) : jnew_null());
    put_info_tags(o, i);
    put_fan_in(o, i);
    size_t len = 0;
    const uint8_t *p = tj_job_info_payload(i, &len);
    put_bytes(o, "payload", p, len, true);
    p = tj_job_info_result(i, &len);
    put_bytes(o, "result", p, len, p != NULL);
    p = tj_job_info_progress(i, &len);
    put_bytes(o, "progress", p, len, p != NULL);
    return o;
}

static jval *counts_json(tj_state_counts c) {
    jval *o = jnew_obj();
    jobj_put(o, "pending", jnew_num((double)c.pending));
    jobj_put(o, "leased", jnew_num((double)c.leased));
    jobj_put(o, "failed", jnew_num((double)c.failed));
    jobj_put(o, "completed", jnew_num((double)c.completed));
    jobj_put(o, "dead", jnew_num((double)c.dead));
    jobj_put(o, "cancelled", jnew_num((double)c.cancelled));
    jobj_put(o, "waiting", jnew_num((double)c.waiting));
    return o;
}

/* ------------------------------------------------------------ steps */

/* A step's bytes: `name` as text, or `<name>_size` bytes of 'x'. *buf is
 * malloc'd (free it); *present is false when the step gives neither. */
void bytes_arg(const jval *s, const char *name, uint8_t **buf, size_t *len, bool *present) {
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
tj_status enqueue_options(struct run *r, const jval *s, tj_enqueue_options **out, tj_error **err) {
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
    if (st == TJ_STATUS_OK && jget_num(s, "run_at_ago_ms", &n))
        st = tj_enqueue_options_set_run_at_ms(o, now_ms() - (uint64_t)n);
    if (st == TJ_STATUS_OK && key) st = tj_enqueue_options_set_idempotency_key(o, key, err);
    if (st == TJ_STATUS_OK && jget_num(s, "max_attempts", &n)) st = tj_enqueue_options_set_max_attempts(o, (uint32_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "expires_in_ms", &n)) st = tj_enqueue_options_set_expires_in_ms(o, (uint64_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "expires_at_ms", &n)) st = tj_enqueue_options_set_expires_at_ms(o, (uint64_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "backoff_base_ms", &n))
        st = tj_enqueue_options_set_backoff_base_ms(o, (uint64_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "unique_for_ms", &n))
        st = tj_enqueue_options_set_unique_for_ms(o, (uint64_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "debounce_ms", &n)) st = tj_enqueue_options_set_debounce_ms(o, (uint64_t)n);
    if (st == TJ_STATUS_OK && jget_num(s, "debounce_max_ms", &n))
        st = tj_enqueue_options_set_debounce_max_ms(o, (uint64_t)n);
    const char *states = jget_str(s, "unique_states", NULL);
    if (st == TJ_STATUS_OK && states)
        st = tj_enqueue_options_set_unique_states(
            o, strcmp(states, "active") == 0 ? TJ_UNIQUE_STATES_ACTIVE : strcmp(states, "any") == 0 ? TJ_UNIQUE_STATES_ANY : 99, err);
    if (st == TJ_STATUS_OK) st = tag_options(s, o, err);
    if (st == TJ_STATUS_OK) st = fan_options(r, s, o, err);
    if (st != TJ_STATUS_OK) { tj_enqueue_options_free(o); return st; }
    *out = o;
    return st;
}

tj_status op_enqueue(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_enqueue_options *o = NULL;
    tj_status st = enqueue_options(r, s, &o, err);
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

/* The items of enqueue_many's `jobs` (or complete's `then`) added to `b`. */
tj_status fill_batch(struct run *r, tj_batch *b, const jval *jobs, tj_error **err) {
    tj_status st = TJ_STATUS_OK;
    for (size_t i = 0; i < jobs->len && st == TJ_STATUS_OK; i++) {
        tj_enqueue_options *o = NULL;
        st = enqueue_options(r, jobs->items[i], &o, err);
        if (st != TJ_STATUS_OK) break;
        uint8_t *p; size_t len; bool present;
        bytes_arg(jobs->items[i], "payload", &p, &len, &present);
        st = tj_batch_add(b, jget_str(jobs->items[i], "kind", ""), p, len, o, err);
        free(p);
        tj_enqueue_options_free(o);
    }
    return st;
}

tj_status op_enqueue_many(struct run *r, const jval *s, tj_error **err) {
    const jval *jobs = jget(s, "jobs");
    if (!jobs || jobs->t != J_ARR) return runner_error(r, "enqueue_many needs jobs");
    tj_batch *b = tj_batch_new();
    tj_status st = fill_batch(r, b, jobs, err);
    tj_id *ids = jx_alloc((jobs->len + 1) * sizeof *ids);
    if (st == TJ_STATUS_OK) st = tj_queue_enqueue_many(r->q, b, ids, NULL, err);
    if (st == TJ_STATUS_OK)
        for (size_t i = 0; i < jobs->len; i++) bind_id(r, jobs->items[i], ids[i]);
    free(ids);
    tj_batch_free(b);
    return st;
}

tj_status op_lease(struct run *r, const jval *s, jval **obs, tj_error **err) {
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

/* extend's progress: `progress` (text or null per lease, as many as the
 * step gives) or `progress_size` (that many 'x' bytes for every lease).
 * False when the step has neither (a plain extend). */
static bool progress_arg(const jval *s, size_t n, uint8_t ***bufs, size_t **lens, size_t *count) {
    const jval *p = jget(s, "progress");
    double size;
    if (p && p->t == J_ARR) *count = p->len;
    else if (jget_num(s, "progress_size", &size)) *count = n;
    else return false;
    *bufs = jx_alloc((*count + 1) * sizeof **bufs);
    *lens = jx_alloc((*count + 1) * sizeof **lens);
    for (size_t i = 0; i < *count; i++) {
        if (p && p->t == J_ARR) {
            const jval *v = p->items[i];
            if (v->t != J_STR) continue; /* null: no report */
            (*bufs)[i] = jx_alloc(v->len + 1);
            memcpy((*bufs)[i], v->str, v->len);
            (*lens)[i] = v->len;
        } else {
            (*lens)[i] = (size_t)size;
            (*bufs)[i] = jx_alloc((*lens)[i] + 1);
            memset((*bufs)[i], 'x', (*lens)[i]);
        }
    }
    return true;
}

tj_status op_extend(struct run *r, const jval *s, jval **obs, tj_error **err) {
    const jval *refs = jget(s, "leases");
    size_t n = refs && refs->t == J_ARR ? refs->len : 0;
    tj_token *tokens = jx_alloc((n + 1) * sizeof *tokens);
    tj_status *sts = jx_alloc((n + 1) * sizeof *sts);
    tj_status st = TJ_STATUS_OK;
    uint8_t **bufs = NULL;
    size_t *lens = NULL, count = 0;
    bool progress = progress_arg(s, n, &bufs, &lens, &count);
    const char *worker = jget_str(s, "worker", "w1");
    for (size_t i = 0; i < n && st == TJ_STATUS_OK; i++) st = token_of(r, refs->items[i], &tokens[i], err);
    if (st == TJ_STATUS_OK && progress)
        st = tj_queue_heartbeat(r->q, worker, tokens, n, (const uint8_t *const *)bufs, lens, count, sts, NULL, err);
    else if (st == TJ_STATUS_OK)
        st = tj_queue_extend(r->q, worker, tokens, n, sts, NULL, err);
    if (st == TJ_STATUS_OK) {
        /* Per token: renewed, lost (ABORTED, NOT_FOUND) or cancelled (a lost
         * lease too); anything else fails. */
        jval *renewed = jnew_arr(), *answers = jnew_arr();
        for (size_t i = 0; i < n; i++) {
            const char *a = sts[i] == TJ_STATUS_OK ? "renewed"
                          : sts[i] == TJ_STATUS_CANCELLED ? "cancelled"
                          : (sts[i] == TJ_STATUS_ABORTED || sts[i] == TJ_STATUS_NOT_FOUND) ? "lost" : NULL;
            if (!a) st = runner_error(r, "extend: token %zu answered %s", i, tj_status_name(sts[i]));
            jarr_push(renewed, jnew_bool(sts[i] == TJ_STATUS_OK));
            jarr_push(answers, jnew_str(a ? a : "?"));
        }
        *obs = jnew_obj();
        jobj_put(*obs, "renewed", renewed);
        jobj_put(*obs, "answers", answers);
    }
    for (size_t i = 0; i < count; i++) free(bufs[i]);
    free(bufs);
    free(lens);
    free(tokens);
    free(sts);
    return st;
}

tj_status op_settle(struct run *r, const char *op, const jval *s, tj_error **err) {
    tj_token t;
    tj_status st = token_of(r, jget(s, "lease"), &t, err);
    if (st != TJ_STATUS_OK) return st;
    if (strcmp(op, "complete") == 0) {
        uint8_t *p; size_t len; bool present;
        bytes_arg(s, "result", &p, &len, &present);
        const jval *then = jget(s, "then");
        if (!then) {
            st = tj_queue_complete(r->q, &t, present ? p : NULL, len, err);
            free(p);
            return st;
        }
        if (then->t != J_ARR) { free(p); return runner_error(r, "complete's then must be a list"); }
        /* Follow-ups: a bad item is refused by tj_queue_complete_then (the
         * batch only copies), so the completion's answer is the step's. */
        tj_batch *b = tj_batch_new();
        st = fill_batch(r, b, then, err);
        if (st == TJ_STATUS_OK)
            st = tj_queue_complete_then(r->q, &t, present ? p : NULL, len, TJ_ENCODING_UNKNOWN, b, err);
        tj_batch_free(b);
        free(p);
        return st;
    }
    if (strcmp(op, "fail") == 0) {
        const jval *rt = jget(s, "retryable");
        bool retryable = !(rt && rt->t == J_BOOL && !rt->b);
        double in;
        if (jget_num(s, "retry_in_ms", &in))
            return tj_queue_fail_in(r->q, &t, jget_str(s, "reason", ""), retryable, (uint64_t)in, err);
        return tj_queue_fail(r->q, &t, jget_str(s, "reason", ""), retryable, err);
    }
    return tj_queue_release(r->q, &t, err);
}

/* `items`, each as `complete`'s arguments, through one tj_completions:
 * `{"answers": ["ok" | status name, ...]}`. */
tj_status op_complete_many(struct run *r, const jval *s, jval **obs, tj_error **err) {
    const jval *items = jget(s, "items");
    if (!items || items->t != J_ARR) return runner_error(r, "complete_many needs items");
    tj_completions *c = tj_completions_new();
    tj_status st = TJ_STATUS_OK;
    for (size_t i = 0; i < items->len && st == TJ_STATUS_OK; i++) {
        const jval *it = items->items[i];
        tj_token t;
        st = token_of(r, jget(it, "lease"), &t, err);
        if (st != TJ_STATUS_OK) break;
        uint8_t *p; size_t len; bool present;
        bytes_arg(it, "result", &p, &len, &present);
        const jval *then = jget(it, "then");
        tj_batch *b = NULL;
        if (then) {
            if (then->t != J_ARR) { free(p); st = runner_error(r, "complete_many: then must be a list"); break; }
            b = tj_batch_new();
            st = fill_batch(r, b, then, err);
        }
        if (st == TJ_STATUS_OK)
            st = tj_completions_add(c, &t, present ? p : NULL, len, TJ_ENCODING_UNKNOWN, b, err);
        tj_batch_free(b);
        free(p);
    }
    size_t n = tj_completions_len(c);
    tj_status *sts = calloc(n ? n : 1, sizeof *sts);
    if (st == TJ_STATUS_OK) st = tj_queue_complete_many(r->q, c, sts, n, err);
    if (st == TJ_STATUS_OK) {
        jval *answers = jnew_arr();
        for (size_t i = 0; i < n; i++)
            jarr_push(answers, jnew_str(sts[i] == TJ_STATUS_OK ? "ok" : tj_status_name(sts[i])));
        *obs = jnew_obj();
        jobj_put(*obs, "answers", answers);
    }
    free(sts);
    tj_completions_free(c);
    return st;
}

tj_status op_get(struct run *r, const jval *s, jval **obs, tj_error **err) {
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

uint32_t state_number(const char *name) {
    for (uint32_t i = 1; i <= TJ_STATE_WAITING; i++)
        if (strcmp(tj_state_name(i), name) == 0) return i;
    return 0; /* refused by tj_list_options_set_state */
}

tj_status op_list(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_list_options *o = tj_list_options_new();
    tj_status st = TJ_STATUS_OK;
    const char *state = jget_str(s, "state", NULL), *scope = jget_str(s, "scope", NULL),
               *kind = jget_str(s, "kind", NULL), *schedule = jget_str(s, "schedule", NULL);
    if (state) st = tj_list_options_set_state(o, state_number(state), err);
    if (st == TJ_STATUS_OK && scope) st = tj_list_options_set_scope(o, scope, err);
    if (st == TJ_STATUS_OK && kind) st = tj_list_options_set_kind(o, kind, err);
    if (st == TJ_STATUS_OK && schedule) st = tj_list_options_set_schedule(o, schedule, err);
    if (st == TJ_STATUS_OK && jget(s, "tag")) st = tj_list_options_set_tag(o, jget_str(s, "tag", ""), err);
    if (st == TJ_STATUS_OK && jget(s, "parent")) {
        /* `parent` is a case name, looked up as a step's `job`. */
        jval *ref = jnew_obj();
        jobj_put(ref, "job", jnew_str(jget_str(s, "parent", "")));
        tj_id parent;
        st = job_id(r, ref, &parent, err);
        jfree(ref);
        if (st == TJ_STATUS_OK) st = tj_list_options_set_parent(o, &parent, err);
    }
    tj_list_page *page = NULL;
    if (st == TJ_STATUS_OK) st = tj_queue_list(r->q, o, &page, err);
    tj_list_options_free(o);
    if (st != TJ_STATUS_OK) return st;
    jval *jobs = jnew_arr();
    size_t n = tj_list_page_len(page);
    for (size_t i = 0; i < n; i++)
        jarr_push(jobs, name_of(r, tj_job_info_id(tj_list_page_get(page, i))));
    tj_list_page_free(page);
    *obs = jnew_obj();
    jobj_put(*obs, "jobs", jobs);
    jobj_put(*obs, "count", jnew_num((double)n));
    return st;
}

/* Name a page's cursor (`as`), for a later step's `after` / `cursor`. */
void name_cursor(struct run *r, const char *name, const char *cursor) {
    if (r->ncursors == MAX_NAMES) return;
    r->cursors[r->ncursors].name = strdup(name);
    r->cursors[r->ncursors++].cursor = strdup(cursor);
}

const char *cursor_named(const struct run *r, const char *name) {
    for (size_t i = 0; i < r->ncursors; i++)
        if (strcmp(r->cursors[i].name, name) == 0) return r->cursors[i].cursor;
    return NULL;
}

tj_status op_stats(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_stats_options *o = tj_stats_options_new();
    tj_status st = TJ_STATUS_OK;
    const char *order = jget_str(s, "scope_order", NULL), *prefix = jget_str(s, "scope_prefix", NULL),
               *after = jget_str(s, "after", NULL), *as = jget_str(s, "as", NULL);
    double limit;
    if (order) st = tj_stats_options_set_scope_order(o, order, err);
    if (st == TJ_STATUS_OK && jget_num(s, "scope_limit", &limit)) st = tj_stats_options_set_scope_limit(o, (size_t)limit, err);
    if (st == TJ_STATUS_OK && prefix) st = tj_stats_options_set_scope_prefix(o, prefix, err);
    const jval *oldest = jget(s, "oldest_ready");
    if (st == TJ_STATUS_OK && oldest && oldest->t == J_BOOL) st = tj_stats_options_set_oldest_ready(o, oldest->b, err);
    if (st == TJ_STATUS_OK && after) {
        const char *c = cursor_named(r, after);
        st = c ? tj_stats_options_set_scopes_after(o, c, err) : runner_error(r, "no cursor named %s", after);
    }
    tj_stats *stats = NULL;
    if (st == TJ_STATUS_OK) st = tj_queue_stats_page(r->q, o, &stats, err);
    tj_stats_options_free(o);
    if (st != TJ_STATUS_OK) return st;
    const char *next = tj_stats_scopes_next(stats);
    if (as && next) name_cursor(r, as, next);
    *obs = counts_json(tj_stats_total(stats));
    jval *by = jnew_obj();
    for (size_t i = 0; i < tj_stats_kind_count(stats); i++) {
        const char *kind = NULL;
        tj_state_counts c;
        if (tj_stats_kind(stats, i, &kind, &c, NULL) == TJ_STATUS_OK) jobj_put(by, kind, counts_json(c));
    }
    jobj_put(*obs, "by_kind", by);
    jval *bs = jnew_obj(), *order_of = jnew_arr();
    for (size_t i = 0; i < tj_stats_scope_count(stats); i++) {
        const char *scope = NULL;
        tj_state_counts c;
        if (tj_stats_scope(stats, i, &scope, &c, NULL) == TJ_STATUS_OK) {
            jobj_put(bs, scope, counts_json(c));
            jarr_push(order_of, jnew_str(scope));
        }
    }
    jobj_put(*obs, "by_scope", bs);
    jobj_put(*obs, "scopes", order_of);
    jobj_put(*obs, "has_next", jnew_bool(next != NULL));
    /* Kinds with a due job (sorted by name) and its age in whole minutes. */
    jval *ready = jnew_arr(), *minutes = jnew_obj();
    for (size_t i = 0; i < tj_stats_oldest_ready_count(stats); i++) {
        const char *kind = NULL;
        uint64_t age = 0;
        if (tj_stats_oldest_ready(stats, i, &kind, &age, NULL) == TJ_STATUS_OK) {
            jarr_push(ready, jnew_str(kind));
            jobj_put(minutes, kind, jnew_num((double)((age + 30000) / 60000)));
        }
    }
    jobj_put(*obs, "ready_kinds", ready);
    jobj_put(*obs, "oldest_ready_min", minutes);
    tj_stats_free(stats);
    return st;
}

tj_status op_retry(struct run *r, const jval *s, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    return st == TJ_STATUS_OK ? tj_queue_retry(r->q, &id, err) : st;
}

tj_status op_reap(struct run *r, jval **obs, tj_error **err) {
    tj_reap_report rep;
    tj_status st = tj_queue_reap(r->q, &rep, err);
    if (st == TJ_STATUS_OK) {
        *obs = jnew_obj();
        jobj_put(*obs, "expired", jnew_num((double)rep.expired));
        jobj_put(*obs, "dead", jnew_num((double)rep.dead));
        jobj_put(*obs, "pruned", jnew_num((double)rep.pruned));
        jobj_put(*obs, "expired_unstarted", jnew_num((double)rep.expired_unstarted));
    }
    return st;
}
