/* Fan-in (issue 43), part of the test_control program (included by
 * test_control.c after its helpers): a job enqueued with after ids waits
 * (TJ_STATE_WAITING, counted, listed, never leased) until its last child
 * finished; tj_queue_enqueue_group enqueues children and parent in one
 * batch; each on_child_dead policy; tj_queue_results_of_children pages
 * the children with their states, results and errors; bad input (NULLs,
 * non-UTF-8, unknown ids and policies, bad limits and cursors, a closed
 * queue) is a typed status and writes nothing. */
#ifndef TJ_TEST_CONTROL_FANIN_H
#define TJ_TEST_CONTROL_FANIN_H

/* Lease the next "page" job and complete it with result "r<i>", or fail it
 * for good with `reason` when not NULL. */
static void settle_page(tj_queue *q, int i, const char *reason) {
    tj_error *err = NULL;
    tj_lease_options *lo = tj_lease_options_new();
    CHECK_OK(tj_lease_options_add_kind(lo, "page", &err));
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", lo, &j, &err));
    tj_lease_options_free(lo);
    if (j == NULL) {
        CHECK(j != NULL);
        return;
    }
    tj_token t = tj_job_token(j);
    char r[16];
    snprintf(r, sizeof r, "r%d", i);
    if (reason)
        CHECK_OK(tj_queue_fail(q, &t, reason, false, &err));
    else
        CHECK_OK(tj_queue_complete(q, &t, (const uint8_t *)r, strlen(r), &err));
    tj_job_free(j);
}

static uint64_t waiting_count(tj_queue *q) {
    tj_error *err = NULL;
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    uint64_t n = s ? tj_stats_total(s).waiting : 99;
    tj_stats_free(s);
    return n;
}

static void a_parent_waits_for_its_children_then_reads_their_results(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id kids[3];
    for (int i = 0; i < 3; i++) kids[i] = enqueue(q, "page", NULL);
    tj_enqueue_options *o = tj_enqueue_options_new();
    for (int i = 0; i < 3; i++) CHECK_OK(tj_enqueue_options_add_after(o, &kids[i], &err));
    tj_id p = {{0}};
    CHECK_OK(tj_queue_enqueue(q, "index", NULL, 0, o, &p, NULL, &err));
    tj_enqueue_options_free(o);
    CHECK(state_of(q, p) == TJ_STATE_WAITING);
    CHECK(strcmp(tj_state_name(TJ_STATE_WAITING), "waiting") == 0 && TJ_STATE_WAITING == 7);
    CHECK(waiting_count(q) == 1);
    tj_list_options *lo = tj_list_options_new();
    CHECK_OK(tj_list_options_set_state(lo, TJ_STATE_WAITING, &err));
    tj_list_page *lp = NULL;
    CHECK_OK(tj_queue_list(q, lo, &lp, &err));
    CHECK(tj_list_page_len(lp) == 1);
    tj_list_options_free(lo);
    tj_list_page_free(lp);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &p, &info, &err));
    tj_fan_in f = {9, 9, 9};
    CHECK(tj_job_info_fan_in(info, &f));
    CHECK(f.unfinished == 3 && f.total == 3 && f.policy == TJ_CHILD_DEAD_FAIL);
    CHECK(tj_job_info_fan_in(info, NULL));
    tj_job_info_free(info);
    CHECK_OK(tj_queue_get(q, &kids[0], &info, &err));
    CHECK(!tj_job_info_fan_in(info, &f));
    tj_job_info_free(info);

    settle_page(q, 0, NULL);
    settle_page(q, 1, NULL);
    CHECK(state_of(q, p) == TJ_STATE_WAITING);
    settle_page(q, 2, NULL);
    CHECK(state_of(q, p) == TJ_STATE_PENDING);
    CHECK(waiting_count(q) == 0);

    /* Two pages of 2 and 1, in enqueue order. */
    tj_children_page *page = NULL;
    CHECK_OK(tj_queue_results_of_children(q, &p, NULL, 2, &page, &err));
    REQUIRE(page != NULL);
    CHECK(tj_children_page_len(page) == 2);
    tj_child_result c;
    memset(&c, 0, sizeof c);
    CHECK(tj_children_page_child(page, 1, &c));
    CHECK(memcmp(c.id.bytes, kids[1].bytes, 16) == 0);
    CHECK(c.state == TJ_STATE_COMPLETED && c.last_error == NULL);
    CHECK(c.result_len == 2 && memcmp(c.result, "r1", 2) == 0);
    CHECK(c.result_encoding == TJ_ENCODING_UNKNOWN);
    CHECK(!tj_children_page_child(page, 2, &c));
    CHECK(!tj_children_page_child(page, 0, NULL));
    const char *next = tj_children_page_next(page);
    REQUIRE(next != NULL);
    char cursor[64];
    snprintf(cursor, sizeof cursor, "%s", next);
    tj_children_page_free(page);
    page = NULL;
    CHECK_OK(tj_queue_results_of_children(q, &p, cursor, TJ_MAX_CHILDREN_PAGE, &page, &err));
    CHECK(tj_children_page_len(page) == 1);
    CHECK(tj_children_page_child(page, 0, &c) && memcmp(c.id.bytes, kids[2].bytes, 16) == 0);
    CHECK(tj_children_page_next(page) == NULL);
    tj_children_page_free(page);
    /* A job that waits on nothing has an empty page. */
    page = NULL;
    CHECK_OK(tj_queue_results_of_children(q, &kids[0], NULL, 10, &page, &err));
    CHECK(tj_children_page_len(page) == 0 && tj_children_page_next(page) == NULL);
    tj_children_page_free(page);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

/* A group of three pages and its parent with `policy`; the second page
 * fails for good. Returns the parent's state after that. */
static uint32_t group_with_a_dead_child(uint32_t policy, uint32_t *third_out) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    if (q == NULL) return 0;
    tj_batch *b = tj_batch_new();
    for (int i = 0; i < 3; i++) CHECK_OK(tj_batch_add(b, "page", (const uint8_t *)"p", 1, NULL, &err));
    tj_enqueue_options *o = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_on_child_dead(o, policy, &err));
    tj_id ids[3], p = {{0}};
    CHECK_OK(tj_queue_enqueue_group(q, b, "index", (const uint8_t *)"doc", 3, o, ids, &p, &err));
    tj_enqueue_options_free(o);
    tj_batch_free(b);
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &p, &info, &err));
    tj_fan_in f = {0, 0, 0};
    CHECK(tj_job_info_fan_in(info, &f) && f.total == 3 && f.policy == policy);
    tj_job_info_free(info);
    settle_page(q, 0, NULL);
    settle_page(q, 1, "page 1 unreadable");
    uint32_t s = state_of(q, p);
    if (s == TJ_STATE_DEAD) {
        CHECK_OK(tj_queue_get(q, &p, &info, &err));
        const char *e = tj_job_info_last_error(info);
        CHECK(e != NULL && strstr(e, "page 1 unreadable") != NULL);
        tj_job_info_free(info);
        tj_children_page *page = NULL;
        CHECK_OK(tj_queue_results_of_children(q, &p, NULL, 10, &page, &err));
        tj_child_result c;
        CHECK(tj_children_page_child(page, 1, &c) && c.state == TJ_STATE_DEAD);
        CHECK(c.last_error != NULL && strcmp(c.last_error, "page 1 unreadable") == 0);
        CHECK(c.result == NULL && c.result_len == 0);
        tj_children_page_free(page);
    }
    if (s == TJ_STATE_WAITING) {
        settle_page(q, 2, NULL);
        s = state_of(q, p);
    }
    tj_reap_report r;
    CHECK_OK(tj_queue_reap(q, &r, &err));
    *third_out = state_of(q, ids[2]);
    tj_queue_free(q);
    tmpdir_remove(dir);
    return s;
}

static void each_on_child_dead_policy_through_a_group(void) {
    uint32_t third = 0;
    CHECK(group_with_a_dead_child(TJ_CHILD_DEAD_FAIL, &third) == TJ_STATE_DEAD);
    CHECK(third == TJ_STATE_PENDING);
    CHECK(group_with_a_dead_child(TJ_CHILD_DEAD_CANCEL_REST, &third) == TJ_STATE_CANCELLED);
    CHECK(third == TJ_STATE_CANCELLED);
    CHECK(group_with_a_dead_child(TJ_CHILD_DEAD_IGNORE, &third) == TJ_STATE_PENDING);
    CHECK(third == TJ_STATE_COMPLETED);
}

static void bad_fan_in_input_is_typed_and_writes_nothing(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id kid = enqueue(q, "page", NULL), nobody = {{1}};
    tj_enqueue_options *o = tj_enqueue_options_new();
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_add_after(NULL, &kid, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_add_after(o, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_on_child_dead(o, 0, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_on_child_dead(o, 4, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_set_on_child_dead(NULL, 1, &err));
    /* A policy without after; then an unknown id: nothing written. */
    CHECK_OK(tj_enqueue_options_set_on_child_dead(o, TJ_CHILD_DEAD_IGNORE, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue(q, "index", NULL, 0, o, NULL, NULL, &err));
    CHECK_OK(tj_enqueue_options_add_after(o, &kid, &err));
    CHECK_OK(tj_enqueue_options_add_after(o, &nobody, &err));
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_enqueue(q, "index", NULL, 0, o, NULL, NULL, &err));

    tj_batch *b = tj_batch_new();
    tj_id ids[2], p = {{7}};
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue_group(q, b, "index", NULL, 0, NULL, ids, &p, &err));
    CHECK_OK(tj_batch_add(b, "page", NULL, 0, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_enqueue_group(q, b, "index", NULL, 0, o, ids, &p, &err));
    CHECK(p.bytes[0] == 7);
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_enqueue_group(NULL, b, "index", NULL, 0, NULL, ids, &p, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_enqueue_group(q, NULL, "index", NULL, 0, NULL, ids, &p, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_enqueue_group(q, b, NULL, NULL, 0, NULL, ids, &p, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_enqueue_group(q, b, "index", NULL, 3, NULL, ids, &p, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_enqueue_group(q, b, BAD_UTF8, NULL, 0, NULL, ids, &p, &err));
    tj_enqueue_options *keyed = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_idempotency_key(keyed, "k", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_enqueue_group(q, b, "index", NULL, 0, keyed, ids, &p, &err));
    tj_enqueue_options_free(keyed);
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    CHECK(tj_stats_total(s).pending == 1 && tj_stats_total(s).waiting == 0);
    tj_stats_free(s);

    /* results_of_children: NULLs, non-UTF-8, bad limits and cursors, no such parent. */
    tj_children_page *page = NULL;
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_results_of_children(NULL, &kid, NULL, 1, &page, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_results_of_children(q, NULL, NULL, 1, &page, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_results_of_children(q, &kid, NULL, 1, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_results_of_children(q, &kid, BAD_UTF8, 1, &page, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_results_of_children(q, &kid, NULL, 0, &page, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_results_of_children(q, &kid, NULL, TJ_MAX_CHILDREN_PAGE + 1, &page, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_results_of_children(q, &kid, "not a cursor", 1, &page, &err));
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_results_of_children(q, &nobody, NULL, 1, &page, &err));
    CHECK(page == NULL);
    /* Getters given NULL answer 0 / NULL / false. */
    CHECK(tj_children_page_len(NULL) == 0 && tj_children_page_next(NULL) == NULL);
    CHECK(!tj_children_page_child(NULL, 0, NULL) && !tj_job_info_fan_in(NULL, NULL));
    tj_children_page_free(NULL);

    tj_queue_close(q);
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_enqueue_group(q, b, "index", NULL, 0, NULL, ids, &p, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_results_of_children(q, &kid, NULL, 1, &page, &err));
    tj_batch_free(b);
    tj_enqueue_options_free(o);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#define CONTROL_FANIN_TESTS                                            \
    TEST(a_parent_waits_for_its_children_then_reads_their_results),    \
        TEST(each_on_child_dead_policy_through_a_group),               \
        TEST(bad_fan_in_input_is_typed_and_writes_nothing)

#endif
