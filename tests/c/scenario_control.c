/* The job-control steps of a conformance case (tests/scenarios/README.md):
 * snooze, cancel, cancel_many, delete, pause, resume and paused (fail with
 * retry_in_ms is in scenario_ops.c's op_settle). */
#include "scenario.h"

tj_status op_snooze(struct run *r, const jval *s, tj_error **err) {
    tj_token t;
    tj_status st = token_of(r, jget(s, "lease"), &t, err);
    double ms = 0;
    if (st == TJ_STATUS_OK && !jget_num(s, "delay_ms", &ms)) return runner_error(r, "snooze needs delay_ms");
    return st == TJ_STATUS_OK ? tj_queue_snooze(r->q, &t, (uint64_t)ms, err) : st;
}

tj_status op_cancel(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    tj_cancel_outcome o = 0;
    if (st == TJ_STATUS_OK) st = tj_queue_cancel(r->q, &id, jget_str(s, "reason", ""), &o, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = jnew_obj();
    jobj_put(*obs, "outcome", jnew_str(o == TJ_CANCEL_REQUESTED ? "requested" : "cancelled"));
    return st;
}

tj_status op_cancel_many(struct run *r, const jval *s, jval **obs, tj_error **err) {
    const char *state = jget_str(s, "state", NULL);
    /* An unknown state name is a number no tj_state has (refused), not "any". */
    uint32_t n = state ? state_number(state) : 0;
    if (state && n == 0) n = 999;
    tj_cancel_report rep;
    tj_status st = tj_queue_cancel_many(r->q, jget_str(s, "kind", NULL), jget_str(s, "scope", NULL), n,
                                        jget_str(s, "reason", NULL), &rep, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = jnew_obj();
    jobj_put(*obs, "cancelled", jnew_num((double)rep.cancelled));
    jobj_put(*obs, "requested", jnew_num((double)rep.requested));
    return st;
}

tj_status op_delete(struct run *r, const jval *s, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    return st == TJ_STATUS_OK ? tj_queue_delete(r->q, &id, err) : st;
}

/* `kind` or `scope` names the target, as a `kind:`/`scope:` label. */
tj_status op_pause(struct run *r, const jval *s, bool on, jval **obs, tj_error **err) {
    const char *kind = jget_str(s, "kind", NULL), *scope = jget_str(s, "scope", NULL);
    if (!kind == !scope) return runner_error(r, "pause names a kind or a scope");
    size_t len = strlen(kind ? kind : scope) + 8;
    char *label = jx_alloc(len);
    snprintf(label, len, "%s:%s", kind ? "kind" : "scope", kind ? kind : scope);
    bool changed = false;
    tj_status st = on ? tj_queue_pause(r->q, label, &changed, err) : tj_queue_resume(r->q, label, &changed, err);
    free(label);
    if (st != TJ_STATUS_OK) return st;
    *obs = jnew_obj();
    jobj_put(*obs, "changed", jnew_bool(changed));
    return st;
}

tj_status op_paused(struct run *r, jval **obs, tj_error **err) {
    tj_paused *p = NULL;
    tj_status st = tj_queue_paused(r->q, &p, err);
    if (st != TJ_STATUS_OK) return st;
    jval *kinds = jnew_arr(), *scopes = jnew_arr();
    for (size_t i = 0; i < tj_paused_count(p); i++) {
        const char *l = tj_paused_label(p, i);
        if (strncmp(l, "kind:", 5) == 0) jarr_push(kinds, jnew_str(l + 5));
        else if (strncmp(l, "scope:", 6) == 0) jarr_push(scopes, jnew_str(l + 6));
        else st = runner_error(r, "paused: unexpected label %s", l);
    }
    tj_paused_free(p);
    *obs = jnew_obj();
    jobj_put(*obs, "kinds", kinds);
    jobj_put(*obs, "scopes", scopes);
    return st;
}
