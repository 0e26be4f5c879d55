/* Job keys and ordered limits through the C API (issue 43: flow control
 * by key), part of the test_control program (included by test_control.c
 * after its helpers and test_control_flow.h): a key set with
 * tj_enqueue_options_set_key comes back from the leased tj_job and from
 * tj_job_info; a `key:*` cap of 1 holds a key's second job while another
 * key runs; tj_limit_set_ordered leases a key's jobs in enqueue order and
 * reads back as tj_limit_status.ordered; an empty key, one over
 * TJ_MAX_JOB_KEY_LEN bytes, with a control character or not UTF-8 is
 * TJ_STATUS_INVALID_ARGUMENT (NULL: TJ_STATUS_NULL_ARGUMENT), nothing
 * written. */
#ifndef TJ_TEST_CONTROL_KEYS_H
#define TJ_TEST_CONTROL_KEYS_H

static tj_id enqueue_keyed(tj_queue *q, const char *kind, const char *key, int priority) {
    tj_error *err = NULL;
    tj_enqueue_options *o = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_key(o, key, &err));
    if (priority >= 0) CHECK_OK(tj_enqueue_options_set_priority(o, (uint8_t)priority));
    tj_id id = {{0}};
    CHECK_OK(tj_queue_enqueue(q, kind, (const uint8_t *)"p", 1, o, &id, NULL, &err));
    tj_enqueue_options_free(o);
    return id;
}

static void a_job_key_round_trips_and_a_key_cap_holds_its_second_job(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    CHECK_OK(set_limit(q, "key:*", 1, 0, 0, 0, &err));
    tj_id a1 = enqueue_keyed(q, "mail", "a", -1);
    tj_id a2 = enqueue_keyed(q, "mail", "a", -1);
    tj_id b1 = enqueue_keyed(q, "mail", "b", -1);
    tj_id plain = enqueue(q, "mail", NULL);

    tj_job_info *i = NULL;
    CHECK_OK(tj_queue_get(q, &a2, &i, &err));
    REQUIRE(i != NULL);
    CHECK(tj_job_info_key(i) != NULL && strcmp(tj_job_info_key(i), "a") == 0);
    tj_job_info_free(i);
    i = NULL;
    CHECK_OK(tj_queue_get(q, &plain, &i, &err));
    REQUIRE(i != NULL);
    CHECK(tj_job_info_key(i) == NULL);
    tj_job_info_free(i);

    tj_job *j1 = lease(q), *j2 = lease(q), *j3 = lease(q);
    REQUIRE(j1 != NULL && j2 != NULL && j3 != NULL);
    CHECK(memcmp(tj_job_id(j1).bytes, a1.bytes, 16) == 0);
    CHECK(strcmp(tj_job_key(j1), "a") == 0);
    /* a's second job is held back while a runs: b, then the plain job. */
    CHECK(memcmp(tj_job_id(j2).bytes, b1.bytes, 16) == 0);
    CHECK(strcmp(tj_job_key(j2), "b") == 0);
    CHECK(memcmp(tj_job_id(j3).bytes, plain.bytes, 16) == 0);
    CHECK(tj_job_key(j3) == NULL);
    CHECK(lease(q) == NULL);
    tj_token t = tj_job_token(j1);
    CHECK_OK(tj_queue_complete(q, &t, NULL, 0, &err));
    tj_job *j4 = lease(q);
    REQUIRE(j4 != NULL);
    CHECK(memcmp(tj_job_id(j4).bytes, a2.bytes, 16) == 0);
    CHECK(tj_job_key(NULL) == NULL && tj_job_info_key(NULL) == NULL);

    tj_job_free(j1);
    tj_job_free(j2);
    tj_job_free(j3);
    tj_job_free(j4);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void an_ordered_key_leases_in_enqueue_order(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_limit *l = tj_limit_new();
    CHECK_OK(tj_limit_set_concurrency(l, 1));
    CHECK_OK(tj_limit_set_ordered(l, true));
    CHECK_OK(tj_queue_set_limit(q, "key:doc-1", l, &err));
    /* Ordered needs a key target. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_set_limit(q, "kind:edit", l, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_limit_set_ordered(NULL, true));
    tj_limit_free(l);
    tj_limits *ls = NULL;
    CHECK_OK(tj_queue_limits(q, &ls, &err));
    REQUIRE(ls != NULL && tj_limits_count(ls) == 1);
    tj_limit_status s;
    memset(&s, 0, sizeof s);
    CHECK_OK(tj_limits_get(ls, 0, &s, &err));
    CHECK(strcmp(s.target, "key:doc-1") == 0 && s.ordered && s.concurrency == 1);
    tj_limits_free(ls);

    /* Later jobs are more urgent, yet lease after the older ones. */
    tj_id ids[4];
    for (int n = 0; n < 4; n++) ids[n] = enqueue_keyed(q, "edit", "doc-1", 200 - 50 * n);
    for (int n = 0; n < 4; n++) {
        tj_job *j = lease(q);
        REQUIRE(j != NULL);
        CHECK(memcmp(tj_job_id(j).bytes, ids[n].bytes, 16) == 0);
        CHECK(lease(q) == NULL); /* one at a time */
        tj_token t = tj_job_token(j);
        CHECK_OK(tj_queue_complete(q, &t, NULL, 0, &err));
        tj_job_free(j);
    }
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void bad_keys_are_invalid_argument_and_write_nothing(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_enqueue_options *o = tj_enqueue_options_new();
    char long_key[TJ_MAX_JOB_KEY_LEN + 2];
    memset(long_key, 'k', TJ_MAX_JOB_KEY_LEN + 1);
    long_key[TJ_MAX_JOB_KEY_LEN + 1] = '\0';
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_key(o, "", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_key(o, long_key, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_key(o, "a\nb", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_key(o, "\xff\xfe", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_set_key(o, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_set_key(NULL, "k", &err));
    /* The message names the limit. */
    CHECK(tj_enqueue_options_set_key(o, long_key, &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(tj_error_message(err), "1 to 128 bytes") != NULL);
    tj_error_free(err);
    err = NULL;
    /* The longest key is fine; the refused ones left the options keyless. */
    long_key[TJ_MAX_JOB_KEY_LEN] = '\0';
    tj_id id = {{0}};
    CHECK_OK(tj_queue_enqueue(q, "mail", (const uint8_t *)"p", 1, o, &id, NULL, &err));
    tj_job_info *i = NULL;
    CHECK_OK(tj_queue_get(q, &id, &i, &err));
    REQUIRE(i != NULL);
    CHECK(tj_job_info_key(i) == NULL);
    tj_job_info_free(i);
    CHECK_OK(tj_enqueue_options_set_key(o, long_key, &err));
    CHECK_OK(tj_queue_enqueue(q, "mail", (const uint8_t *)"p", 1, o, &id, NULL, &err));
    tj_enqueue_options_free(o);
    tj_stats *st = NULL;
    CHECK_OK(tj_queue_stats(q, &st, &err));
    CHECK(tj_stats_total(st).pending == 2);
    tj_stats_free(st);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#define CONTROL_KEYS_TESTS                                           \
    TEST(a_job_key_round_trips_and_a_key_cap_holds_its_second_job), \
        TEST(an_ordered_key_leases_in_enqueue_order),                \
        TEST(bad_keys_are_invalid_argument_and_write_nothing)

#endif
