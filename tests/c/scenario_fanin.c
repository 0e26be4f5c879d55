/* Conformance steps for fan-in (issue 43), as
 * core/tests/scenario_runner/fanin.rs: `after` (job names), `after_ids`
 * (literal id text) and `on_child_dead` on an enqueue or an item,
 * `enqueue_group`, `results_of_children` and `get`'s `fan_in`. */
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

tj_status fan_options(struct run *r, const jval *s, tj_enqueue_options *o, tj_error **err) {
    tj_status st = TJ_STATUS_OK;
    const jval *after = jget(s, "after"), *ids = jget(s, "after_ids");
    for (size_t i = 0; after && after->t == J_ARR && i < after->len && st == TJ_STATUS_OK; i++) {
        jval *ref = jnew_obj();
        jobj_put(ref, "job", jnew_str(after->items[i]->str ? after->items[i]->str : ""));
        tj_id id;
        st = job_id(r, ref, &id, err);
        jfree(ref);
        if (st == TJ_STATUS_OK) st = tj_enqueue_options_add_after(o, &id, err);
    }
    for (size_t i = 0; ids && ids->t == J_ARR && i < ids->len && st == TJ_STATUS_OK; i++) {
        tj_id id;
        st = tj_id_parse(ids->items[i]->str ? ids->items[i]->str : "", &id, err);
        if (st == TJ_STATUS_OK) st = tj_enqueue_options_add_after(o, &id, err);
    }
    const char *p = jget_str(s, "on_child_dead", NULL);
    if (st == TJ_STATUS_OK && p) {
        uint32_t n = strcmp(p, "fail") == 0          ? TJ_CHILD_DEAD_FAIL
                     : strcmp(p, "cancel_rest") == 0 ? TJ_CHILD_DEAD_CANCEL_REST
                     : strcmp(p, "ignore") == 0      ? TJ_CHILD_DEAD_IGNORE
                                                     : 99; /* the setter refuses it */
        st = tj_enqueue_options_set_on_child_dead(o, n, err);
    }
    return st;
}

void put_fan_in(jval *o, const tj_job_info *i) {
    tj_fan_in f;
    if (!tj_job_info_fan_in(i, &f)) {
        jobj_put(o, "fan_in", jnew_null());
        return;
    }
    const char *policy = f.policy == TJ_CHILD_DEAD_CANCEL_REST ? "cancel_rest"
                         : f.policy == TJ_CHILD_DEAD_IGNORE    ? "ignore"
                                                               : "fail";
    jval *fo = jnew_obj();
    jobj_put(fo, "unfinished", jnew_num((double)f.unfinished));
    jobj_put(fo, "total", jnew_num((double)f.total));
    jobj_put(fo, "policy", jnew_str(policy));
    jobj_put(o, "fan_in", fo);
}

tj_status op_enqueue_group(struct run *r, const jval *s, tj_error **err) {
    const jval *kids = jget(s, "children"), *parent = jget(s, "parent");
    if (!kids || kids->t != J_ARR || !parent || parent->t != J_OBJ)
        return runner_error(r, "enqueue_group needs children and a parent");
    tj_batch *b = tj_batch_new();
    tj_status st = fill_batch(r, b, kids, err);
    tj_enqueue_options *o = NULL;
    if (st == TJ_STATUS_OK) st = enqueue_options(r, parent, &o, err);
    tj_id *ids = jx_alloc((kids->len + 1) * sizeof *ids), pid;
    if (st == TJ_STATUS_OK) {
        uint8_t *p; size_t len; bool present;
        bytes_arg(parent, "payload", &p, &len, &present);
        st = tj_queue_enqueue_group(r->q, b, jget_str(parent, "kind", ""), p, len, o, ids, &pid, err);
        free(p);
    }
    if (st == TJ_STATUS_OK) {
        for (size_t i = 0; i < kids->len; i++) bind_id(r, kids->items[i], ids[i]);
        bind_id(r, parent, pid);
    }
    free(ids);
    tj_enqueue_options_free(o);
    tj_batch_free(b);
    return st;
}

tj_status op_results_of_children(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_id id;
    tj_status st = job_id(r, s, &id, err);
    if (st != TJ_STATUS_OK) return st;
    const char *cursor = NULL, *name = jget_str(s, "cursor", NULL), *as = jget_str(s, "as", NULL);
    if (name) {
        cursor = cursor_named(r, name);
        if (!cursor) return runner_error(r, "no cursor named %s", name);
    }
    double limit = 100;
    jget_num(s, "limit", &limit);
    tj_children_page *page = NULL;
    st = tj_queue_results_of_children(r->q, &id, cursor, (size_t)limit, &page, err);
    if (st != TJ_STATUS_OK) return st;
    const char *next = tj_children_page_next(page);
    if (as && next) name_cursor(r, as, next);
    jval *children = jnew_arr();
    for (size_t i = 0; i < tj_children_page_len(page); i++) {
        tj_child_result c;
        if (!tj_children_page_child(page, i, &c)) continue;
        jval *o = jnew_obj();
        jobj_put(o, "job", name_of(r, c.id));
        jobj_put(o, "state", c.state == TJ_STATE_UNKNOWN ? jnew_null() : jnew_str(tj_state_name(c.state)));
        jobj_put(o, "last_error", jnew_str(c.last_error));
        put_bytes(o, "result", c.result, c.result_len, c.result != NULL);
        jarr_push(children, o);
    }
    *obs = jnew_obj();
    jobj_put(*obs, "children", children);
    jobj_put(*obs, "has_next", jnew_bool(next != NULL));
    tj_children_page_free(page);
    return st;
}
