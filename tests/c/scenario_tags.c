/* Conformance steps for tags and metadata (issue 42): the enqueue (and
 * schedule_put) arguments `tags`, `metadata` and `metadata_size`, the
 * `tags` and `metadata` fields of a leased job, a job info and a schedule,
 * and `count_tag`; and the job key (issue 43), the same kind of per-job
 * field: the enqueue argument `key` and the `key` field of a leased job
 * and a job info. */
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

tj_status tag_options(const jval *s, tj_enqueue_options *o, tj_error **err) {
    tj_status st = TJ_STATUS_OK;
    const jval *tags = jget(s, "tags");
    for (size_t i = 0; tags && tags->t == J_ARR && i < tags->len && st == TJ_STATUS_OK; i++)
        st = tj_enqueue_options_add_tag(o, tags->items[i]->str ? tags->items[i]->str : "", err);
    const jval *meta = jget(s, "metadata");
    for (size_t i = 0; meta && meta->t == J_OBJ && i < meta->len && st == TJ_STATUS_OK; i++)
        st = tj_enqueue_options_set_meta(o, meta->keys[i], meta->items[i]->str ? meta->items[i]->str : "", err);
    double n;
    if (st == TJ_STATUS_OK && jget_num(s, "metadata_size", &n)) {
        char *big = jx_alloc((size_t)n + 1);
        memset(big, 'x', (size_t)n);
        big[(size_t)n] = '\0';
        st = tj_enqueue_options_set_meta(o, "big", big, err);
        free(big);
    }
    const char *key = jget_str(s, "key", NULL);
    if (st == TJ_STATUS_OK && key) st = tj_enqueue_options_set_key(o, key, err);
    return st;
}

tj_status schedule_tag_settings(const jval *s, tj_schedule *sc, tj_error **err) {
    tj_status st = TJ_STATUS_OK;
    const jval *tags = jget(s, "tags");
    for (size_t i = 0; tags && tags->t == J_ARR && i < tags->len && st == TJ_STATUS_OK; i++)
        st = tj_schedule_add_tag(sc, tags->items[i]->str ? tags->items[i]->str : "", err);
    const jval *meta = jget(s, "metadata");
    for (size_t i = 0; meta && meta->t == J_OBJ && i < meta->len && st == TJ_STATUS_OK; i++)
        st = tj_schedule_set_meta(sc, meta->keys[i], meta->items[i]->str ? meta->items[i]->str : "", err);
    double n;
    if (st == TJ_STATUS_OK && jget_num(s, "metadata_size", &n)) {
        char *big = jx_alloc((size_t)n + 1);
        memset(big, 'x', (size_t)n);
        big[(size_t)n] = '\0';
        st = tj_schedule_set_meta(sc, "big", big, err);
        free(big);
    }
    return st;
}

void put_schedule_tags(jval *o, const tj_schedule_info *i) {
    jval *tags = jnew_arr(), *meta = jnew_obj();
    for (size_t k = 0; k < tj_schedule_info_tag_count(i); k++) jarr_push(tags, jnew_str(tj_schedule_info_tag(i, k)));
    for (size_t k = 0; k < tj_schedule_info_meta_count(i); k++)
        jobj_put(meta, tj_schedule_info_meta_key(i, k), jnew_str(tj_schedule_info_meta_value(i, k)));
    jobj_put(o, "tags", tags);
    jobj_put(o, "metadata", meta);
}

void put_job_tags(jval *o, const tj_job *j) {
    jval *tags = jnew_arr(), *meta = jnew_obj();
    for (size_t i = 0; i < tj_job_tag_count(j); i++) jarr_push(tags, jnew_str(tj_job_tag(j, i)));
    for (size_t i = 0; i < tj_job_meta_count(j); i++)
        jobj_put(meta, tj_job_meta_key(j, i), jnew_str(tj_job_meta_value(j, i)));
    jobj_put(o, "tags", tags);
    jobj_put(o, "metadata", meta);
    jobj_put(o, "key", tj_job_key(j) ? jnew_str(tj_job_key(j)) : jnew_null());
}

void put_info_tags(jval *o, const tj_job_info *i) {
    jval *tags = jnew_arr(), *meta = jnew_obj();
    for (size_t k = 0; k < tj_job_info_tag_count(i); k++) jarr_push(tags, jnew_str(tj_job_info_tag(i, k)));
    for (size_t k = 0; k < tj_job_info_meta_count(i); k++)
        jobj_put(meta, tj_job_info_meta_key(i, k), jnew_str(tj_job_info_meta_value(i, k)));
    jobj_put(o, "tags", tags);
    jobj_put(o, "metadata", meta);
    jobj_put(o, "key", tj_job_info_key(i) ? jnew_str(tj_job_info_key(i)) : jnew_null());
}

tj_status op_count_tag(struct run *r, const jval *s, jval **obs, tj_error **err) {
    tj_state_counts c;
    memset(&c, 0, sizeof c);
    tj_status st = tj_queue_count_tag(r->q, jget_str(s, "tag", ""), jget_str(s, "scope", NULL), &c, err);
    if (st != TJ_STATUS_OK) return st;
    *obs = jnew_obj();
    jobj_put(*obs, "pending", jnew_num((double)c.pending));
    jobj_put(*obs, "leased", jnew_num((double)c.leased));
    jobj_put(*obs, "failed", jnew_num((double)c.failed));
    jobj_put(*obs, "completed", jnew_num((double)c.completed));
    jobj_put(*obs, "dead", jnew_num((double)c.dead));
    jobj_put(*obs, "cancelled", jnew_num((double)c.cancelled));
    jobj_put(*obs, "total",
             jnew_num((double)(c.pending + c.leased + c.failed + c.completed + c.dead + c.cancelled)));
    return st;
}

/* `find` (issue 42): the text is `text`, `text_size` x's, or `text_of` a
 * named job's id; the answer names the jobs found. */
tj_status op_find(struct run *r, const jval *s, jval **obs, tj_error **err) {
    char *text = NULL;
    char id_text[TJ_ID_STRLEN];
    double n = 0;
    const char *t = jget_str(s, "text", "");
    if (jget_num(s, "text_size", &n)) {
        text = jx_alloc((size_t)n + 1);
        memset(text, 'x', (size_t)n);
        text[(size_t)n] = '\0';
        t = text;
    } else if (jget(s, "text_of")) {
        jval *ref = jnew_obj();
        jobj_put(ref, "job", jnew_str(jget_str(s, "text_of", "")));
        tj_id id;
        tj_status st = job_id(r, ref, &id, err);
        jfree(ref);
        if (st == TJ_STATUS_OK) st = tj_id_format(&id, id_text, sizeof id_text, err);
        if (st != TJ_STATUS_OK) return st;
        t = id_text;
    }
    double limit = 0;
    jget_num(s, "limit", &limit);
    tj_find_result *found = NULL;
    tj_status st = tj_queue_find(r->q, t, jget_str(s, "scope", NULL), (size_t)limit, &found, err);
    free(text);
    if (st != TJ_STATUS_OK) return st;
    const tj_job_info *by_id = tj_find_result_by_id(found), *by_key = tj_find_result_by_key(found);
    const tj_list_page *page = tj_find_result_by_tag(found);
    jval *matched = jnew_arr(), *tagged = jnew_arr();
    if (by_id) jarr_push(matched, jnew_str("id"));
    if (by_key) jarr_push(matched, jnew_str("key"));
    if (tj_list_page_len(page) > 0) jarr_push(matched, jnew_str("tag"));
    for (size_t i = 0; i < tj_list_page_len(page); i++)
        jarr_push(tagged, name_of(r, tj_job_info_id(tj_list_page_get(page, i))));
    *obs = jnew_obj();
    jobj_put(*obs, "matched", matched);
    jobj_put(*obs, "by_id", by_id ? name_of(r, tj_job_info_id(by_id)) : jnew_null());
    jobj_put(*obs, "by_key", by_key ? name_of(r, tj_job_info_id(by_key)) : jnew_null());
    jobj_put(*obs, "by_tag", tagged);
    jobj_put(*obs, "more", jnew_bool(tj_list_page_next(page) != NULL));
    tj_find_result_free(found);
    return st;
}
