/* Flow control and follow-up jobs through the C API, part of the
 * test_control program (included by test_control.c after its helpers
 * open_store, enqueue, lease, state_of and CHECK_NULL_NAMED): limits set,
 * listed and removed; a cap that holds a lease back; bad limit input with
 * its typed status; tj_queue_complete_then creating children that record
 * their parent, listed by it; a refused completion creating none;
 * tj_queue_complete_many, tj_queue_fail_many and tj_queue_release_many
 * answering per item in one write. */
#ifndef TJ_TEST_CONTROL_FLOW_H
#define TJ_TEST_CONTROL_FLOW_H

#include <math.h>

static tj_status set_limit(tj_queue *q, const char *target, uint32_t concurrency, double rate,
                           uint32_t burst, uint32_t weight, tj_error **err) {
    tj_limit *l = tj_limit_new();
    if (concurrency) tj_limit_set_concurrency(l, concurrency);
    if (rate > 0) tj_limit_set_rate(l, rate);
    if (burst) tj_limit_set_burst(l, burst);
    if (weight) tj_limit_set_weight(l, weight);
    tj_status st = tj_queue_set_limit(q, target, l, err);
    tj_limit_free(l);
    return st;
}

static void limits_are_set_listed_in_label_order_and_removed(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    CHECK_OK(set_limit(q, "scope:*", 0, 0.5, 3, 2, &err));
    CHECK_OK(set_limit(q, "kind:embed", 2, 0, 0, 0, &err));
    CHECK_OK(set_limit(q, "scope:*/kind:img:*", 0, 4, 0, 0, &err));
    /* Setting a target again replaces its limit. */
    CHECK_OK(set_limit(q, "kind:embed", 5, 0, 0, 0, &err));
    tj_limits *ls = NULL;
    CHECK_OK(tj_queue_limits(q, &ls, &err));
    REQUIRE(ls != NULL);
    CHECK(tj_limits_count(ls) == 3);
    tj_limit_status s;
    memset(&s, 0, sizeof s);
    CHECK_OK(tj_limits_get(ls, 0, &s, &err));
    CHECK(strcmp(s.target, "kind:embed") == 0);
    CHECK(s.has_concurrency && s.concurrency == 5);
    CHECK(!s.has_rate && !s.has_burst && !s.has_weight);
    CHECK(s.leased == 0 && s.held == 0);
    CHECK_OK(tj_limits_get(ls, 1, &s, &err));
    CHECK(strcmp(s.target, "scope:*") == 0);
    CHECK(!s.has_concurrency && s.has_rate && s.rate == 0.5);
    CHECK(s.has_burst && s.burst == 3 && s.has_weight && s.weight == 2);
    CHECK_OK(tj_limits_get(ls, 2, &s, &err));
    CHECK(strcmp(s.target, "scope:*/kind:img:*") == 0);
    CHECK(s.has_rate && s.rate == 4 && !s.has_burst); /* the burst as given: none */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_limits_get(ls, 3, &s, &err));
    CHECK_NULL_NAMED("status_out", tj_limits_get(ls, 0, NULL, &err));
    CHECK_NULL_NAMED("limits", tj_limits_get(NULL, 0, &s, &err));
    tj_limits_free(ls);
    bool removed = false;
    CHECK_OK(tj_queue_remove_limit(q, "kind:embed", &removed, &err));
    CHECK(removed);
    CHECK_OK(tj_queue_remove_limit(q, "kind:embed", &removed, &err));
    CHECK(!removed);
    CHECK_OK(tj_queue_remove_limit(q, "scope:*", NULL, &err));
    /* Durable: the one left is there after a reopen. */
    tj_queue_free(q);
    q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    ls = NULL;
    CHECK_OK(tj_queue_limits(q, &ls, &err));
    CHECK(tj_limits_count(ls) == 1);
    CHECK_OK(tj_limits_get(ls, 0, &s, &err));
    CHECK(strcmp(s.target, "scope:*/kind:img:*") == 0 && s.rate == 4);
    tj_limits_free(ls);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void a_concurrency_cap_holds_a_lease_back_until_one_settles(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    enqueue(q, "embed", NULL);
    tj_id b = enqueue(q, "embed", NULL);
    tj_id o = enqueue(q, "other", NULL);
    CHECK_OK(set_limit(q, "kind:embed", 1, 0, 0, 0, &err));
    tj_job *j1 = lease(q);
    REQUIRE(j1 != NULL);
    CHECK(strcmp(tj_job_kind(j1), "embed") == 0);
    /* The second embed is held back; the other kind is not. */
    tj_job *j2 = lease(q);
    REQUIRE(j2 != NULL);
    CHECK(memcmp(tj_job_id(j2).bytes, o.bytes, 16) == 0);
    tj_job *none = lease(q);
    CHECK(none == NULL);
    tj_job_free(none);
    tj_limits *ls = NULL;
    CHECK_OK(tj_queue_limits(q, &ls, &err));
    tj_limit_status s;
    memset(&s, 0, sizeof s);
    CHECK_OK(tj_limits_get(ls, 0, &s, &err));
    CHECK(s.leased == 1 && s.held == 1);
    CHECK(s.throttled_concurrency >= 1 && s.throttled_rate == 0);
    tj_limits_free(ls);
    tj_token t1 = tj_job_token(j1);
    CHECK_OK(tj_queue_complete(q, &t1, NULL, 0, &err));
    tj_job *j3 = lease(q);
    REQUIRE(j3 != NULL);
    CHECK(memcmp(tj_job_id(j3).bytes, b.bytes, 16) == 0);
    tj_job_free(j1);
    tj_job_free(j2);
    tj_job_free(j3);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void bad_limit_input_is_refused_with_its_status_and_changes_nothing(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_limit *l = tj_limit_new();
    CHECK_OK(tj_limit_set_concurrency(l, 1));
    CHECK_NULL_NAMED("queue", tj_queue_set_limit(NULL, "kind:embed", l, &err));
    CHECK_NULL_NAMED("target", tj_queue_set_limit(q, NULL, l, &err));
    CHECK_NULL_NAMED("limit", tj_queue_set_limit(q, "kind:embed", NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_set_limit(q, "kind:\xff", l, &err));
    const char *bad[] = {"tenant:x", "kind:", "scope:not-a-uuid", "scope:*/embed", "", "kind:BAD"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_set_limit(q, bad[i], l, &err));
    tj_limit_free(l);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, set_limit(q, "kind:embed", 0, 0, 0, 0, &err));
    l = tj_limit_new();
    CHECK_OK(tj_limit_set_concurrency(l, 0));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_set_limit(q, "kind:embed", l, &err));
    CHECK_OK(tj_limit_set_concurrency(l, 1000001));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_set_limit(q, "kind:embed", l, &err));
    CHECK_OK(tj_limit_set_concurrency(l, 2));
    CHECK_OK(tj_limit_set_burst(l, 3)); /* a burst without a rate */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_set_limit(q, "kind:embed", l, &err));
    tj_limit_free(l);
    const double bad_rates[] = {0, -1, NAN, INFINITY, 1000001};
    for (size_t i = 0; i < sizeof bad_rates / sizeof bad_rates[0]; i++) {
        l = tj_limit_new();
        CHECK_OK(tj_limit_set_rate(l, bad_rates[i]));
        CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_set_limit(q, "kind:embed", l, &err));
        tj_limit_free(l);
    }
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, set_limit(q, "kind:embed", 0, 0, 0, 2, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, set_limit(q, "scope:*", 0, 0, 0, 1001, &err));
    CHECK(tj_limit_set_concurrency(NULL, 1) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(tj_limit_set_rate(NULL, 1) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(tj_limit_set_burst(NULL, 1) == TJ_STATUS_NULL_ARGUMENT);
    CHECK(tj_limit_set_weight(NULL, 1) == TJ_STATUS_NULL_ARGUMENT);
    CHECK_NULL_NAMED("target", tj_queue_remove_limit(q, NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_remove_limit(q, "bogus", NULL, &err));
    CHECK_NULL_NAMED("limits_out", tj_queue_limits(q, NULL, &err));
    CHECK(tj_limits_count(NULL) == 0);
    tj_limits_free(NULL);
    tj_limit_free(NULL);
    tj_limits *ls = NULL;
    CHECK_OK(tj_queue_limits(q, &ls, &err));
    CHECK(ls != NULL && tj_limits_count(ls) == 0); /* nothing was set */
    tj_limits_free(ls);
    tj_queue_close(q);
    CHECK_STATUS(TJ_STATUS_CLOSED, set_limit(q, "kind:embed", 1, 0, 0, 0, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_remove_limit(q, "kind:embed", NULL, &err));
    ls = NULL;
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_limits(q, &ls, &err));
    CHECK(ls == NULL);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

/* How many jobs list by parent `p`; each must record `p` as its parent. */
static size_t children_of(tj_queue *q, tj_id p) {
    tj_error *err = NULL;
    tj_list_options *o = tj_list_options_new();
    CHECK_OK(tj_list_options_set_parent(o, &p, &err));
    tj_list_page *page = NULL;
    CHECK_OK(tj_queue_list(q, o, &page, &err));
    size_t n = tj_list_page_len(page);
    for (size_t i = 0; i < n; i++) {
        tj_id got = {{0}};
        CHECK(tj_job_info_parent(tj_list_page_get(page, i), &got));
        CHECK(memcmp(got.bytes, p.bytes, 16) == 0);
    }
    tj_list_page_free(page);
    tj_list_options_free(o);
    return n;
}

static void complete_then_creates_children_that_record_their_parent(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id p = enqueue(q, "ingest", NULL);
    tj_job *j = lease(q);
    REQUIRE(j != NULL);
    tj_id none = {{0}};
    CHECK(!tj_job_parent(j, &none)); /* enqueued, not a follow-up */
    tj_token t = tj_job_token(j);
    tj_batch *b = tj_batch_new();
    tj_enqueue_options *eo = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_scope(eo, SCOPE_A, &err));
    CHECK_OK(tj_batch_add(b, "embed", (const uint8_t *)"one", 3, NULL, &err));
    CHECK_OK(tj_batch_add(b, "cascade", (const uint8_t *)"two", 3, eo, &err));
    tj_enqueue_options_free(eo);
    /* A bad follow-up refuses the whole completion: still leased, no child. */
    tj_batch *bad = tj_batch_new();
    CHECK_OK(tj_batch_add(bad, "embed", NULL, 0, NULL, &err));
    CHECK_OK(tj_batch_add(bad, "BAD", NULL, 0, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_complete_then(q, &t, NULL, 0, TJ_ENCODING_UNKNOWN, bad, &err));
    tj_batch_free(bad);
    CHECK(state_of(q, p) == TJ_STATE_LEASED);
    CHECK(children_of(q, p) == 0);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_complete_then(q, &t, NULL, 0, 77, b, &err));
    CHECK_NULL_NAMED("token", tj_queue_complete_then(q, NULL, NULL, 0, 0, b, &err));
    CHECK_OK(tj_queue_complete_then(q, &t, (const uint8_t *)"r", 1, TJ_ENCODING_BYTES, b, &err));
    CHECK(state_of(q, p) == TJ_STATE_COMPLETED);
    CHECK(children_of(q, p) == 2);
    /* The batch was copied: it is still the caller's. */
    CHECK(tj_batch_len(b) == 2);
    /* The same completion again (a retry): answered as the first, and no
     * more children. A stale token: ABORTED, and none either. */
    CHECK_OK(tj_queue_complete_then(q, &t, NULL, 0, 0, b, &err));
    CHECK(children_of(q, p) == 2);
    tj_token stale = {t.id, t.generation + 1};
    CHECK_STATUS(TJ_STATUS_ABORTED, tj_queue_complete_then(q, &stale, NULL, 0, 0, b, &err));
    CHECK(children_of(q, p) == 2);
    tj_batch_free(b);
    tj_job_free(j);
    /* Leased, a child knows its parent; completing it with NULL then is a
     * plain completion. */
    for (int i = 0; i < 2; i++) {
        tj_job *c = lease(q);
        REQUIRE(c != NULL);
        tj_id got = {{0}};
        CHECK(tj_job_parent(c, &got));
        CHECK(memcmp(got.bytes, p.bytes, 16) == 0);
        CHECK(tj_job_parent(c, NULL));
        if (strcmp(tj_job_kind(c), "cascade") == 0) CHECK(strcmp(tj_job_scope(c), SCOPE_A) == 0);
        tj_token ct = tj_job_token(c);
        CHECK_OK(tj_queue_complete_then(q, &ct, NULL, 0, TJ_ENCODING_UNKNOWN, NULL, &err));
        CHECK(children_of(q, tj_job_id(c)) == 0);
        tj_job_free(c);
    }
    tj_job_info *pi = NULL;
    CHECK_OK(tj_queue_get(q, &p, &pi, &err));
    CHECK(!tj_job_info_parent(pi, NULL));
    tj_job_info_free(pi);
    CHECK(!tj_job_parent(NULL, &none));
    CHECK(!tj_job_info_parent(NULL, &none));
    tj_list_options *o = tj_list_options_new();
    CHECK_NULL_NAMED("parent", tj_list_options_set_parent(o, NULL, &err));
    CHECK_NULL_NAMED("options", tj_list_options_set_parent(NULL, &p, &err));
    tj_list_options_free(o);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void complete_many_answers_per_item_in_one_write(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "ingest", NULL);
    tj_id b = enqueue(q, "ingest", NULL);
    tj_job *ja = lease(q), *jb = lease(q);
    REQUIRE(ja != NULL && jb != NULL);
    tj_token ta = tj_job_token(ja), tb = tj_job_token(jb);
    tj_token stale = {tb.id, tb.generation + 1};
    tj_batch *then = tj_batch_new();
    CHECK_OK(tj_batch_add(then, "embed", (const uint8_t *)"child", 5, NULL, &err));
    tj_completions *c = tj_completions_new();
    CHECK(tj_completions_len(c) == 0);
    CHECK_OK(tj_completions_add(c, &ta, (const uint8_t *)"ra", 2, TJ_ENCODING_BYTES, then, &err));
    CHECK_OK(tj_completions_add(c, &stale, NULL, 0, TJ_ENCODING_UNKNOWN, NULL, &err));
    CHECK_OK(tj_completions_add(c, &tb, NULL, 0, TJ_ENCODING_UNKNOWN, NULL, &err));
    tj_batch_free(then); /* copied */
    /* Bad arguments add nothing. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_completions_add(c, &ta, NULL, 0, 77, NULL, &err));
    CHECK_NULL_NAMED("token", tj_completions_add(c, NULL, NULL, 0, 0, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_completions_add(c, &ta, NULL, 3, 0, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_completions_add(NULL, &ta, NULL, 0, 0, NULL, &err));
    CHECK(tj_completions_len(c) == 3);
    tj_status sts[3] = {99, 99, 99};
    /* Too small an answer array, or none: refused before anything is written. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_complete_many(q, c, sts, 2, &err));
    CHECK_NULL_NAMED("statuses_out", tj_queue_complete_many(q, c, NULL, 3, &err));
    CHECK_NULL_NAMED("completions", tj_queue_complete_many(q, NULL, sts, 3, &err));
    CHECK(sts[0] == 99 && state_of(q, a) == TJ_STATE_LEASED);
    CHECK_OK(tj_queue_complete_many(q, c, sts, 3, &err));
    CHECK(sts[0] == TJ_STATUS_OK && sts[1] == TJ_STATUS_ABORTED && sts[2] == TJ_STATUS_OK);
    CHECK(state_of(q, a) == TJ_STATE_COMPLETED && state_of(q, b) == TJ_STATE_COMPLETED);
    CHECK(children_of(q, a) == 1 && children_of(q, b) == 0);
    /* The same list again (a retry after a lost reply): the same answers,
     * no second child. */
    CHECK_OK(tj_queue_complete_many(q, c, sts, 3, &err));
    CHECK(sts[0] == TJ_STATUS_OK && sts[1] == TJ_STATUS_ABORTED && sts[2] == TJ_STATUS_OK);
    CHECK(children_of(q, a) == 1);
    tj_completions_clear(c);
    CHECK(tj_completions_len(c) == 0);
    CHECK_OK(tj_queue_complete_many(q, c, NULL, 0, &err)); /* empty: nothing to answer */
    tj_queue_close(q);
    CHECK_OK(tj_completions_add(c, &ta, NULL, 0, 0, NULL, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_complete_many(q, c, sts, 1, &err));
    tj_completions_free(c);
    tj_completions_free(NULL);
    tj_completions_clear(NULL);
    CHECK(tj_completions_len(NULL) == 0);
    tj_job_free(ja);
    tj_job_free(jb);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void fail_many_and_release_many_answer_per_item_in_one_write(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "ingest", NULL);
    tj_id b = enqueue(q, "ingest", NULL);
    tj_id c = enqueue(q, "ingest", NULL);
    tj_job *ja = lease(q), *jb = lease(q), *jc = lease(q);
    REQUIRE(ja != NULL && jb != NULL && jc != NULL);
    tj_token ta = tj_job_token(ja), tb = tj_job_token(jb), tc = tj_job_token(jc);
    tj_token stale = {tb.id, tb.generation + 1};
    tj_failures *f = tj_failures_new();
    CHECK(tj_failures_len(f) == 0);
    CHECK_OK(tj_failures_add(f, &ta, "boom", true, &err));
    CHECK_OK(tj_failures_add(f, &stale, "late", true, &err));
    CHECK_OK(tj_failures_add(f, &tb, "bad input", false, &err));
    CHECK_OK(tj_failures_add_in(f, &tc, "too far", true, TJ_MAX_DURATION_MS + 1, &err));
    /* Bad arguments add nothing. */
    CHECK_NULL_NAMED("token", tj_failures_add(f, NULL, "x", true, &err));
    CHECK_NULL_NAMED("reason", tj_failures_add(f, &ta, NULL, true, &err));
    CHECK_NULL_NAMED("failures", tj_failures_add_in(NULL, &ta, "x", true, 5, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_failures_add(f, &ta, "\xff", true, &err));
    CHECK(tj_failures_len(f) == 4);
    tj_status sts[4] = {99, 99, 99, 99};
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_fail_many(q, f, sts, 3, &err));
    CHECK_NULL_NAMED("statuses_out", tj_queue_fail_many(q, f, NULL, 4, &err));
    CHECK_NULL_NAMED("failures", tj_queue_fail_many(q, NULL, sts, 4, &err));
    CHECK(sts[0] == 99 && state_of(q, a) == TJ_STATE_LEASED);
    CHECK_OK(tj_queue_fail_many(q, f, sts, 4, &err));
    CHECK(sts[0] == TJ_STATUS_OK && sts[1] == TJ_STATUS_ABORTED && sts[2] == TJ_STATUS_OK &&
          sts[3] == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(state_of(q, a) == TJ_STATE_FAILED && state_of(q, b) == TJ_STATE_DEAD);
    CHECK(state_of(q, c) == TJ_STATE_LEASED);
    /* The same list again (a retry after a lost reply): the same answers. */
    CHECK_OK(tj_queue_fail_many(q, f, sts, 4, &err));
    CHECK(sts[0] == TJ_STATUS_OK && sts[2] == TJ_STATUS_OK && state_of(q, a) == TJ_STATE_FAILED);
    tj_failures_clear(f);
    CHECK(tj_failures_len(f) == 0);
    CHECK_OK(tj_queue_fail_many(q, f, NULL, 0, &err)); /* empty: nothing to answer */
    /* release_many: c goes back; a was failed by its token (ABORTED). */
    tj_token rel[3] = {tc, ta, tc};
    tj_status rs[3] = {99, 99, 99};
    CHECK_NULL_NAMED("statuses_out", tj_queue_release_many(q, rel, 3, NULL, &err));
    CHECK_NULL_NAMED("tokens", tj_queue_release_many(q, NULL, 3, rs, &err));
    CHECK(rs[0] == 99 && state_of(q, c) == TJ_STATE_LEASED);
    CHECK_OK(tj_queue_release_many(q, rel, 3, rs, &err));
    CHECK(rs[0] == TJ_STATUS_OK && rs[1] == TJ_STATUS_ABORTED && rs[2] == TJ_STATUS_OK);
    CHECK(state_of(q, c) == TJ_STATE_PENDING);
    CHECK_OK(tj_queue_release_many(q, NULL, 0, NULL, &err));
    tj_queue_close(q);
    CHECK_OK(tj_failures_add(f, &ta, "x", true, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_fail_many(q, f, sts, 1, &err));
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_release_many(q, rel, 1, rs, &err));
    tj_failures_free(f);
    tj_failures_free(NULL);
    tj_failures_clear(NULL);
    CHECK(tj_failures_len(NULL) == 0);
    tj_job_free(ja);
    tj_job_free(jb);
    tj_job_free(jc);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#define CONTROL_FLOW_TESTS                                                   \
    TEST(limits_are_set_listed_in_label_order_and_removed),                 \
    TEST(a_concurrency_cap_holds_a_lease_back_until_one_settles),           \
    TEST(bad_limit_input_is_refused_with_its_status_and_changes_nothing),   \
    TEST(complete_then_creates_children_that_record_their_parent),          \
    TEST(complete_many_answers_per_item_in_one_write),                      \
    TEST(fail_many_and_release_many_answer_per_item_in_one_write)

#endif
