/* The job-control steps of a conformance case (tests/scenarios/README.md):
 * snooze, cancel, cancel_many, purge, delete, pause, resume and paused (fail with
 * retry_in_ms is in scenario_ops.c's op_settle); the steps of results,
 * events and progress: wait, subscribe, events (extend's progress is in
 * op_extend); and flow control: set_limit, remove_limit, limits
 * (complete's follow-ups are in op_settle). */
#define _XOPEN_SOURCE 700
#include <time.h>

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
    const char *tag = jget_str(s, "tag", NULL);
    tj_status st = tag ? tj_queue_cancel_tag(r->q, tag, jget_str(s, "kind", NULL), jget_str(s, "scope", NULL), n,
                                             jget_str(s, "reason", NULL), &rep, err)
                       : tj_queue_cancel_many(r->q, jget_str(s, "kind", NULL), jget_str(s, "scope", NULL), n,
                                              jget_str(s, "reason", NULL), &rep, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = jnew_obj();
    jobj_put(*obs, "cancelled", jnew_num((double)rep.cancelled));
    jobj_put(*obs, "requested", jnew_num((double)rep.requested));
    return st;
}

/* `state` by name (an unknown one is a number no tj_state has: refused),
 * the cutoff now minus `older_than_ms`. */
tj_status op_purge(struct run *r, const jval *s, jval **obs, tj_error **err) {
    uint32_t n = state_number(jget_str(s, "state", ""));
    if (n == 0) n = 999;
    double ago = 0;
    jget_num(s, "older_than_ms", &ago);
    uint64_t purged = 0;
    tj_status st = tj_queue_purge(r->q, n, now_ms() - (uint64_t)ago, &purged, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = jnew_obj();
    jobj_put(*obs, "purged", jnew_num((double)purged));
    return st;
}

tj_status op_delete(struct run *r, const jval *s, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    return st == TJ_STATUS_OK ? tj_queue_delete(r->q, &id, err) : st;
}

tj_status op_promote(struct run *r, const jval *s, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    return st == TJ_STATUS_OK ? tj_queue_promote(r->q, &id, err) : st;
}

/* `run_at_ms` (absolute) or `run_at_in_ms` (now + ms). */
tj_status op_reschedule(struct run *r, const jval *s, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    if (st != TJ_STATUS_OK) return st;
    double n = 0;
    uint64_t at;
    if (jget_num(s, "run_at_ms", &n)) at = (uint64_t)n;
    else if (jget_num(s, "run_at_in_ms", &n)) at = now_ms() + (uint64_t)n;
    else return runner_error(r, "reschedule takes run_at_ms or run_at_in_ms");
    return tj_queue_reschedule(r->q, &id, at, err);
}

tj_status op_set_priority(struct run *r, const jval *s, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    if (st != TJ_STATUS_OK) return st;
    double n = 0;
    if (!jget_num(s, "priority", &n)) return runner_error(r, "set_priority takes priority");
    return tj_queue_set_priority(r->q, &id, (uint32_t)n, err);
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

tj_status op_wait(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_id id;
    double ms = 0;
    jget_num(s, "timeout_ms", &ms);
    tj_status st = job_id(r, s, &id, err);
    tj_job_info *info = NULL;
    if (st == TJ_STATUS_OK) st = tj_queue_wait(r->q, &id, (uint64_t)ms, NULL, &info, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = info_json(r, info);
    tj_job_info_free(info);
    return st;
}

tj_status op_subscribe(struct run *r, const jval *s, tj_error **err) {
    tj_subscribe_options *o = tj_subscribe_options_new();
    tj_status st = TJ_STATUS_OK;
    const jval *kinds = jget(s, "kinds"), *scopes = jget(s, "scopes"), *ts = jget(s, "transitions");
    double buffer;
    for (size_t i = 0; kinds && i < kinds->len && st == TJ_STATUS_OK; i++)
        st = tj_subscribe_options_add_kind(o, kinds->items[i]->str, err);
    for (size_t i = 0; scopes && i < scopes->len && st == TJ_STATUS_OK; i++)
        st = tj_subscribe_options_add_scope(o, scopes->items[i]->str, err);
    for (size_t i = 0; ts && i < ts->len && st == TJ_STATUS_OK; i++)
        st = tj_subscribe_options_add_transition(o, ts->items[i]->str, err);
    if (st == TJ_STATUS_OK && jget_num(s, "buffer", &buffer))
        st = tj_subscribe_options_set_buffer(o, (size_t)buffer, err);
    tj_subscription *sub = NULL;
    if (st == TJ_STATUS_OK) st = tj_queue_subscribe(r->q, o, &sub, err);
    tj_subscribe_options_free(o);
    if (st != TJ_STATUS_OK) return st;
    const char *name = jget_str(s, "as", NULL);
    if (!name || r->nsubs == MAX_NAMES) { tj_subscription_free(sub); return TJ_STATUS_OK; }
    struct named_sub *ns = &r->subs[r->nsubs++];
    ns->name = strdup(name);
    ns->sub = sub;
    ns->last_seq = 0;
    return st;
}

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Read up to `count` events within `timeout_ms` (default 2000); `seq`
 * must rise by exactly 1 + missed from one event to the next. */
tj_status op_events(struct run *r, const jval *s, jval **obs, tj_error **err) {
    const char *name = jget_str(s, "sub", "");
    struct named_sub *ns = NULL;
    for (size_t i = 0; i < r->nsubs; i++)
        if (strcmp(r->subs[i].name, name) == 0) ns = &r->subs[i];
    if (!ns) return runner_error(r, "the case names no subscription %s", name);
    double count = 1, timeout = 2000;
    jget_num(s, "count", &count);
    jget_num(s, "timeout_ms", &timeout);
    uint64_t deadline = mono_ms() + (uint64_t)timeout;
    jval *events = jnew_arr();
    uint64_t missed = 0;
    tj_status st = TJ_STATUS_OK;
    while (events->len < (size_t)count) {
        uint64_t now = mono_ms();
        uint32_t left = now < deadline ? (uint32_t)(deadline - now) : 0;
        tj_event ev;
        st = tj_events_next(ns->sub, left, &ev, err);
        if (st == TJ_STATUS_TIMED_OUT) {
            tj_error_free(*err);
            *err = NULL;
            st = TJ_STATUS_OK;
            break;
        }
        if (st != TJ_STATUS_OK) break;
        if (ns->last_seq && ev.seq != ns->last_seq + 1 + ev.missed) {
            st = runner_error(r, "seq %llu after %llu with %llu missed", (unsigned long long)ev.seq,
                              (unsigned long long)ns->last_seq, (unsigned long long)ev.missed);
            break;
        }
        ns->last_seq = ev.seq;
        missed += ev.missed;
        jval *o = jnew_obj();
        jobj_put(o, "job", name_of(r, ev.id));
        jobj_put(o, "kind", jnew_str(ev.kind));
        jobj_put(o, "scope", jnew_str(ev.scope));
        jobj_put(o, "transition", jnew_str(ev.transition));
        jobj_put(o, "attempt", jnew_num(ev.attempt));
        jobj_put(o, "worker_id", jnew_str(ev.worker_id));
        put_bytes(o, "progress", ev.progress, ev.progress_len, ev.progress != NULL);
        jarr_push(events, o);
    }
    if (st != TJ_STATUS_OK) { jfree(events); return st; }
    *obs = jnew_obj();
    jobj_put(*obs, "events", events);
    jobj_put(*obs, "missed", jnew_num((double)missed));
    return st;
}

/* ------------------------------------------------------------ flow control */

/* A u32 setting of set_limit: out-of-range numbers saturate, so the API
 * (not the runner) refuses them. */
static uint32_t u32_arg(double n) {
    if (n <= 0) return 0;
    if (n >= 4294967295.0) return UINT32_MAX;
    return (uint32_t)n;
}

tj_status op_set_limit(struct run *r, const jval *s, tj_error **err) {
    const char *target = jget_str(s, "target", NULL);
    if (!target) return runner_error(r, "set_limit needs a target");
    tj_limit *l = tj_limit_new();
    tj_status st = TJ_STATUS_OK;
    double n;
    if (jget_num(s, "concurrency", &n)) st = tj_limit_set_concurrency(l, u32_arg(n));
    if (st == TJ_STATUS_OK && jget_num(s, "rate", &n)) st = tj_limit_set_rate(l, n);
    if (st == TJ_STATUS_OK && jget_num(s, "burst", &n)) st = tj_limit_set_burst(l, u32_arg(n));
    if (st == TJ_STATUS_OK && jget_num(s, "weight", &n)) st = tj_limit_set_weight(l, u32_arg(n));
    const jval *ordered = jget(s, "ordered");
    if (st == TJ_STATUS_OK && ordered && ordered->t == J_BOOL) st = tj_limit_set_ordered(l, ordered->b);
    if (st == TJ_STATUS_OK) st = tj_queue_set_limit(r->q, target, l, err);
    tj_limit_free(l);
    return st;
}

tj_status op_remove_limit(struct run *r, const jval *s, jval **obs, tj_error **err) {
    const char *target = jget_str(s, "target", NULL);
    if (!target) return runner_error(r, "remove_limit needs a target");
    bool removed = false;
    tj_status st = tj_queue_remove_limit(r->q, target, &removed, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = jnew_obj();
    jobj_put(*obs, "removed", jnew_bool(removed));
    return st;
}

tj_status op_limits(struct run *r, jval **obs, tj_error **err) {
    tj_limits *ls = NULL;
    tj_status st = tj_queue_limits(r->q, &ls, err);
    if (st != TJ_STATUS_OK) return st;
    jval *arr = jnew_arr();
    for (size_t i = 0; i < tj_limits_count(ls) && st == TJ_STATUS_OK; i++) {
        tj_limit_status l;
        st = tj_limits_get(ls, i, &l, err);
        if (st != TJ_STATUS_OK) break;
        jval *o = jnew_obj();
        jobj_put(o, "target", jnew_str(l.target));
        jobj_put(o, "concurrency", l.has_concurrency ? jnew_num(l.concurrency) : jnew_null());
        jobj_put(o, "rate", l.has_rate ? jnew_num(l.rate) : jnew_null());
        jobj_put(o, "burst", l.has_burst ? jnew_num(l.burst) : jnew_null());
        jobj_put(o, "weight", l.has_weight ? jnew_num(l.weight) : jnew_null());
        jobj_put(o, "leased", jnew_num((double)l.leased));
        jobj_put(o, "held", jnew_num((double)l.held));
        jobj_put(o, "throttled_concurrency", jnew_num((double)l.throttled_concurrency));
        jobj_put(o, "throttled_rate", jnew_num((double)l.throttled_rate));
        jobj_put(o, "ordered", jnew_bool(l.ordered));
        jarr_push(arr, o);
    }
    tj_limits_free(ls);
    if (st != TJ_STATUS_OK) { jfree(arr); return st; }
    *obs = jnew_obj();
    jobj_put(*obs, "limits", arr);
    return st;
}
