/* The schedule steps of a conformance case (tests/scenarios/README.md):
 * schedule_put, schedule_get, schedule_list, schedule_delete,
 * schedule_pause, schedule_resume, run_schedules and schedule_next, as the
 * Rust reference runner (core/tests/scenario_runner/schedules.rs) answers
 * them. A job's schedule in get / lease / list answers is in scenario_ops.c. */
#include "scenario.h"

/* The step's `name`, or `name_size` that many 'n's (malloc'd: free it). */
static char *schedule_name(const jval *s) {
    double n;
    if (jget_num(s, "name_size", &n) && n >= 0) {
        size_t len = (size_t)n;
        char *b = jx_alloc(len + 1);
        memset(b, 'n', len);
        b[len] = 0;
        return b;
    }
    const char *name = jget_str(s, "name", "");
    char *b = jx_alloc(strlen(name) + 1);
    strcpy(b, name);
    return b;
}

/* An optional whole number in [0, max]; false (with a runner error) when
 * present but not one. */
static bool opt_uint(struct run *r, const jval *s, const char *key, double max, bool *present, uint64_t *out) {
    const jval *v = jget(s, key);
    *present = v && v->t != J_NULL;
    if (!*present) return true;
    if (v->t != J_NUM || v->num < 0 || v->num > max || v->num != (double)(uint64_t)v->num) {
        runner_error(r, "%s must be a whole number up to %.0f", key, max);
        return false;
    }
    *out = (uint64_t)v->num;
    return true;
}

static jval *schedule_json(const tj_schedule_info *i) {
    jval *o = jnew_obj();
    jobj_put(o, "name", jnew_str(tj_schedule_info_name(i)));
    jobj_put(o, "spec", jnew_str(tj_schedule_info_spec(i)));
    jobj_put(o, "timezone", jnew_str(tj_schedule_info_timezone(i)));
    jobj_put(o, "kind", jnew_str(tj_schedule_info_kind(i)));
    jobj_put(o, "priority",
             tj_schedule_info_has_priority(i) ? jnew_num(tj_schedule_info_priority(i)) : jnew_null());
    uint32_t n = tj_schedule_info_max_attempts(i);
    jobj_put(o, "max_attempts", n ? jnew_num(n) : jnew_null());
    jobj_put(o, "catch_up", jnew_str(tj_catch_up_name(tj_schedule_info_catch_up(i))));
    n = tj_schedule_info_max_catch_up(i);
    jobj_put(o, "max_catch_up", n ? jnew_num(n) : jnew_null());
    jobj_put(o, "paused", jnew_bool(tj_schedule_info_paused(i)));
    jobj_put(o, "enqueued", jnew_num((double)tj_schedule_info_enqueued(i)));
    jobj_put(o, "skipped", jnew_num((double)tj_schedule_info_skipped(i)));
    jobj_put(o, "has_next", jnew_bool(tj_schedule_info_has_next_slot(i)));
    jobj_put(o, "has_last", jnew_bool(tj_schedule_info_has_last_slot(i)));
    jobj_put(o, "last_error", jnew_str(tj_schedule_info_last_error(i)));
    put_schedule_tags(o, i);
    return o;
}

/* The answer of a call handing out a schedule info (freed here). */
static tj_status info_answer(tj_status st, tj_schedule_info *i, jval **obs) {
    if (st == TJ_STATUS_OK) *obs = schedule_json(i);
    tj_schedule_info_free(i);
    return st;
}

/* A catch-up name as a tj_catch_up; an unknown one as a number no policy
 * has, so the library refuses it (INVALID_ARGUMENT), as the core refuses
 * the name. */
static uint32_t catch_up_number(const char *name) {
    const uint32_t all[] = {TJ_CATCH_UP_SKIP, TJ_CATCH_UP_ONE, TJ_CATCH_UP_ALL};
    for (size_t i = 0; i < 3; i++)
        if (strcmp(tj_catch_up_name(all[i]), name) == 0) return all[i];
    return UINT32_MAX;
}

/* The step's settings onto `sc`. */
static tj_status schedule_settings(struct run *r, const jval *s, tj_schedule *sc, tj_error **err) {
    tj_status st = TJ_STATUS_OK;
    bool has;
    uint64_t v = 0;
    const char *tz = jget_str(s, "timezone", NULL), *scope = jget_str(s, "scope", NULL),
               *catch_up = jget_str(s, "catch_up", NULL);
    const jval *payload = jget(s, "payload"), *paused = jget(s, "paused");
    if (tz) st = tj_schedule_set_timezone(sc, tz, err);
    if (st == TJ_STATUS_OK && payload && payload->t == J_STR)
        st = tj_schedule_set_payload(sc, (const uint8_t *)payload->str, payload->len, err);
    if (st == TJ_STATUS_OK && scope) st = tj_schedule_set_scope(sc, scope, err);
    if (st == TJ_STATUS_OK && catch_up) st = tj_schedule_set_catch_up(sc, catch_up_number(catch_up), err);
    if (st == TJ_STATUS_OK && paused && paused->t == J_BOOL) st = tj_schedule_set_paused(sc, paused->b);
    if (st != TJ_STATUS_OK) return st;
    if (!opt_uint(r, s, "anchor_ms", 9007199254740991.0, &has, &v)) return RUNNER_ERROR;
    if (has) st = tj_schedule_set_anchor_ms(sc, v);
    if (!opt_uint(r, s, "priority", 255, &has, &v)) return RUNNER_ERROR;
    if (has && st == TJ_STATUS_OK) st = tj_schedule_set_priority(sc, (uint8_t)v);
    if (!opt_uint(r, s, "max_attempts", UINT32_MAX, &has, &v)) return RUNNER_ERROR;
    if (has && st == TJ_STATUS_OK) st = tj_schedule_set_max_attempts(sc, (uint32_t)v);
    if (!opt_uint(r, s, "expires_in_ms", 9007199254740991.0, &has, &v)) return RUNNER_ERROR;
    if (has && st == TJ_STATUS_OK) st = tj_schedule_set_expires_in_ms(sc, v);
    if (!opt_uint(r, s, "max_catch_up", UINT32_MAX, &has, &v)) return RUNNER_ERROR;
    if (has && st == TJ_STATUS_OK) st = tj_schedule_set_max_catch_up(sc, (uint32_t)v);
    if (st == TJ_STATUS_OK) st = schedule_tag_settings(s, sc, err);
    return st;
}

tj_status op_schedule_put(struct run *r, const jval *s, jval **obs, tj_error **err) {
    char *name = schedule_name(s);
    tj_schedule *sc = tj_schedule_new(name, jget_str(s, "spec", ""), jget_str(s, "kind", ""));
    free(name);
    if (!sc) return runner_error(r, "tj_schedule_new refused the step's strings");
    tj_status st = schedule_settings(r, s, sc, err);
    tj_schedule_info *i = NULL;
    if (st == TJ_STATUS_OK) st = tj_queue_schedule_put(r->q, sc, &i, err);
    tj_schedule_free(sc);
    return info_answer(st, i, obs);
}

tj_status op_schedule(struct run *r, const char *op, const jval *s, jval **obs, tj_error **err) {
    tj_schedule_info *i = NULL;
    if (strcmp(op, "schedule_list") == 0) {
        tj_schedule_list *l = NULL;
        tj_status st = tj_queue_schedule_list(r->q, &l, err);
        if (st != TJ_STATUS_OK) return st;
        jval *names = jnew_arr();
        for (size_t k = 0; k < tj_schedule_list_len(l); k++)
            jarr_push(names, jnew_str(tj_schedule_info_name(tj_schedule_list_get(l, k))));
        tj_schedule_list_free(l);
        *obs = jnew_obj();
        jobj_put(*obs, "names", names);
        return st;
    }
    if (strcmp(op, "run_schedules") == 0) {
        tj_run_report rep;
        tj_status st = tj_queue_run_schedules(r->q, &rep, err);
        if (st != TJ_STATUS_OK) return st;
        *obs = jnew_obj();
        jobj_put(*obs, "schedules", jnew_num((double)rep.schedules));
        jobj_put(*obs, "enqueued", jnew_num((double)rep.enqueued));
        jobj_put(*obs, "skipped", jnew_num((double)rep.skipped));
        jobj_put(*obs, "failed", jnew_num((double)rep.failed));
        return st;
    }
    char *name = schedule_name(s);
    tj_status st;
    bool answers = true;
    if (strcmp(op, "schedule_get") == 0) st = tj_queue_schedule_get(r->q, name, &i, err);
    else if (strcmp(op, "schedule_pause") == 0) st = tj_queue_schedule_pause(r->q, name, &i, err);
    else if (strcmp(op, "schedule_resume") == 0) st = tj_queue_schedule_resume(r->q, name, &i, err);
    else if (strcmp(op, "schedule_delete") == 0) { st = tj_queue_schedule_delete(r->q, name, err); answers = false; }
    else { st = runner_error(r, "unknown schedule op %s", op); answers = false; }
    if (answers) st = info_answer(st, i, obs);
    free(name);
    return st;
}

tj_status op_schedule_next(struct run *r, const jval *s, jval **obs, tj_error **err) {
    bool has_anchor, has;
    uint64_t anchor = 0, after = 0, n = 5;
    if (!opt_uint(r, s, "anchor_ms", 1.8e19, &has_anchor, &anchor)) return RUNNER_ERROR;
    if (!opt_uint(r, s, "after_ms", 1.8e19, &has, &after)) return RUNNER_ERROR;
    if (!opt_uint(r, s, "n", 1e9, &has, &n)) return RUNNER_ERROR;
    if (!has) n = 5;
    /* Room for n, however many the case asks for: the library checks n. */
    uint64_t *times = jx_alloc((size_t)(n + 1) * sizeof *times);
    size_t count = 0;
    tj_status st = tj_schedule_next_times(jget_str(s, "spec", ""), jget_str(s, "timezone", NULL),
                                          has_anchor ? &anchor : NULL, after, (size_t)n, times, &count, err);
    if (st == TJ_STATUS_OK) {
        jval *a = jnew_arr();
        for (size_t k = 0; k < count; k++) jarr_push(a, jnew_num((double)times[k]));
        *obs = jnew_obj();
        jobj_put(*obs, "times", a);
    }
    free(times);
    return st;
}
