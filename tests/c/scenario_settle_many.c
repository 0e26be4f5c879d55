/* The batch settles of a conformance case beside complete_many (in
 * scenario_ops.c): fail_many through one tj_failures, release_many through
 * an array of tokens; both answer `{"answers": ["ok" | status name, ...]}`. */
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

/* The per-item answers as the case compares them. */
static jval *answers_json(const tj_status *sts, size_t n) {
    jval *answers = jnew_arr();
    for (size_t i = 0; i < n; i++)
        jarr_push(answers, jnew_str(sts[i] == TJ_STATUS_OK ? "ok" : tj_status_name(sts[i])));
    jval *o = jnew_obj();
    jobj_put(o, "answers", answers);
    return o;
}

/* `items`, each as `fail`'s arguments (lease, reason, retryable, retry_in_ms). */
tj_status op_fail_many(struct run *r, const jval *s, jval **obs, tj_error **err) {
    const jval *items = jget(s, "items");
    if (!items || items->t != J_ARR) return runner_error(r, "fail_many needs items");
    tj_failures *f = tj_failures_new();
    tj_status st = TJ_STATUS_OK;
    for (size_t i = 0; i < items->len && st == TJ_STATUS_OK; i++) {
        const jval *it = items->items[i];
        tj_token t;
        st = token_of(r, jget(it, "lease"), &t, err);
        if (st != TJ_STATUS_OK) break;
        const jval *rt = jget(it, "retryable");
        bool retryable = !(rt && rt->t == J_BOOL && !rt->b);
        const char *reason = jget_str(it, "reason", "");
        double in;
        if (jget_num(it, "retry_in_ms", &in))
            st = tj_failures_add_in(f, &t, reason, retryable, (uint64_t)in, err);
        else
            st = tj_failures_add(f, &t, reason, retryable, err);
    }
    size_t n = tj_failures_len(f);
    tj_status *sts = calloc(n ? n : 1, sizeof *sts);
    if (st == TJ_STATUS_OK) st = tj_queue_fail_many(r->q, f, sts, n, err);
    if (st == TJ_STATUS_OK) *obs = answers_json(sts, n);
    free(sts);
    tj_failures_free(f);
    return st;
}

/* `items`, each `{"lease": ...}`. */
tj_status op_release_many(struct run *r, const jval *s, jval **obs, tj_error **err) {
    const jval *items = jget(s, "items");
    if (!items || items->t != J_ARR) return runner_error(r, "release_many needs items");
    size_t n = items->len;
    tj_token *tokens = calloc(n ? n : 1, sizeof *tokens);
    tj_status *sts = calloc(n ? n : 1, sizeof *sts);
    tj_status st = TJ_STATUS_OK;
    for (size_t i = 0; i < n && st == TJ_STATUS_OK; i++)
        st = token_of(r, jget(items->items[i], "lease"), &tokens[i], err);
    if (st == TJ_STATUS_OK) st = tj_queue_release_many(r->q, tokens, n, sts, err);
    if (st == TJ_STATUS_OK) *obs = answers_json(sts, n);
    free(sts);
    free(tokens);
    return st;
}
