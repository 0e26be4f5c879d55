/* Tags and metadata through the C API (issue 42), part of the
 * test_control program (included by test_control.c after its helpers):
 * set with tj_enqueue_options_add_tag / _set_meta, read from the leased
 * tj_job and from tj_job_info, listed with tj_list_options_set_tag and
 * counted with tj_queue_count_tag; a tag over 64 bytes, with a control
 * character or not UTF-8, 17 tags and 5 KiB of metadata are
 * TJ_STATUS_INVALID_ARGUMENT and nothing is written; a traceparent set
 * with tj_enqueue_options_set_traceparent (issue 45) is checked against
 * the W3C syntax and read back as the `traceparent` metadata key. */
#ifndef TJ_TEST_CONTROL_TAGS_H
#define TJ_TEST_CONTROL_TAGS_H

static void tags_and_metadata_round_trip_and_find_the_job(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_enqueue_options *o = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_add_tag(o, "order-4711", &err));
    CHECK_OK(tj_enqueue_options_add_tag(o, "eu", &err));
    CHECK_OK(tj_enqueue_options_add_tag(o, "order-4711", &err));
    CHECK_OK(tj_enqueue_options_set_meta(o, "trace", "00-abc-01", &err));
    tj_id a = {{0}};
    CHECK_OK(tj_queue_enqueue(q, "mail", (const uint8_t *)"p", 1, o, &a, NULL, &err));
    tj_id other = enqueue(q, "mail", NULL);
    (void)other;

    tj_job *j = lease(q);
    REQUIRE(j != NULL);
    CHECK(tj_job_tag_count(j) == 2);
    CHECK(strcmp(tj_job_tag(j, 0), "order-4711") == 0);
    CHECK(strcmp(tj_job_tag(j, 1), "eu") == 0);
    CHECK(tj_job_tag(j, 2) == NULL);
    CHECK(tj_job_meta_count(j) == 1);
    CHECK(strcmp(tj_job_meta_key(j, 0), "trace") == 0);
    CHECK(strcmp(tj_job_meta_value(j, 0), "00-abc-01") == 0);
    CHECK(tj_job_meta_key(j, 1) == NULL);

    tj_list_options *lo = tj_list_options_new();
    CHECK_OK(tj_list_options_set_tag(lo, "eu", &err));
    tj_list_page *page = NULL;
    CHECK_OK(tj_queue_list(q, lo, &page, &err));
    REQUIRE(page != NULL);
    CHECK(tj_list_page_len(page) == 1);
    const tj_job_info *i = tj_list_page_get(page, 0);
    CHECK(i != NULL && memcmp(tj_job_info_id(i).bytes, a.bytes, 16) == 0);
    CHECK(tj_job_info_tag_count(i) == 2);
    CHECK(strcmp(tj_job_info_tag(i, 1), "eu") == 0);
    CHECK(tj_job_info_meta_count(i) == 1);
    CHECK(strcmp(tj_job_info_meta_value(i, 0), "00-abc-01") == 0);
    tj_list_page_free(page);
    tj_list_options_free(lo);

    tj_state_counts c = {0};
    CHECK_OK(tj_queue_count_tag(q, "order-4711", NULL, &c, &err));
    CHECK(c.leased == 1 && c.pending == 0);
    CHECK_OK(tj_queue_count_tag(q, "order-4711", "00000000-0000-0000-0000-000000000000", &c, &err));
    CHECK(c.leased == 1);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_count_tag(q, "", NULL, &c, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_count_tag(q, NULL, NULL, &c, &err));
    CHECK(tj_job_tag_count(NULL) == 0 && tj_job_info_tag(NULL, 0) == NULL);

    tj_job_free(j);
    tj_enqueue_options_free(o);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void bad_tags_and_metadata_are_invalid_argument_and_write_nothing(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_enqueue_options *o = tj_enqueue_options_new();
    char long_tag[66];
    memset(long_tag, 'x', 65);
    long_tag[65] = '\0';
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_add_tag(o, long_tag, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_add_tag(o, "a\nb", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_add_tag(o, "\xff\xfe", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_meta(o, "k", "\xc3", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_add_tag(o, NULL, &err));
    /* The message names the limit. */
    CHECK(tj_enqueue_options_add_tag(o, long_tag, &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(tj_error_message(err), "1 to 64 bytes") != NULL);
    tj_error_free(err);
    err = NULL;
    /* 17 distinct tags pass one by one and are refused at enqueue. */
    for (int n = 0; n < 17; n++) {
        char t[16];
        snprintf(t, sizeof t, "t%d", n);
        CHECK_OK(tj_enqueue_options_add_tag(o, t, &err));
    }
    tj_id id = {{0}};
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "mail", (const uint8_t *)"p", 1, o, &id, NULL, &err));
    tj_enqueue_options_free(o);
    o = tj_enqueue_options_new();
    static char big[5 * 1024 + 1];
    memset(big, 'v', 5 * 1024);
    big[5 * 1024] = '\0';
    CHECK_OK(tj_enqueue_options_set_meta(o, "k", big, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_queue_enqueue(q, "mail", (const uint8_t *)"p", 1, o, &id, NULL, &err));
    tj_enqueue_options_free(o);
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    CHECK(tj_stats_total(s).pending == 0);
    tj_stats_free(s);
    tj_list_options *lo = tj_list_options_new();
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_list_options_set_tag(lo, "\xff", &err));
    tj_list_options_free(lo);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void a_traceparent_is_checked_and_carried_in_metadata(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    const char *tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    tj_enqueue_options *o = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_traceparent(o, tp, &err));
    CHECK_OK(tj_enqueue_options_set_meta(o, "tracestate", "vendor=abc", &err));
    /* Not the W3C syntax: refused, the value set before kept. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_traceparent(o, "00-abc-01", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_enqueue_options_set_traceparent(o, "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_enqueue_options_set_traceparent(o, "00-00000000000000000000000000000000-b7ad6b7169203331-01", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_enqueue_options_set_traceparent(o, "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_enqueue_options_set_traceparent(o, "\xff", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_set_traceparent(o, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_enqueue_options_set_traceparent(NULL, tp, &err));
    /* The message names the syntax. */
    CHECK(tj_enqueue_options_set_traceparent(o, "nope", &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(tj_error_message(err), "W3C Trace Context") != NULL);
    tj_error_free(err);
    err = NULL;
    tj_id a = {{0}};
    CHECK_OK(tj_queue_enqueue(q, "mail", (const uint8_t *)"p", 1, o, &a, NULL, &err));
    tj_job *j = lease(q);
    REQUIRE(j != NULL);
    CHECK(tj_job_meta_count(j) == 2);
    CHECK(strcmp(tj_job_meta_key(j, 0), "traceparent") == 0);
    CHECK(strcmp(tj_job_meta_value(j, 0), tp) == 0);
    CHECK(strcmp(tj_job_meta_key(j, 1), "tracestate") == 0);
    CHECK(strcmp(tj_job_meta_value(j, 1), "vendor=abc") == 0);
    tj_job_free(j);
    tj_enqueue_options_free(o);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#define CONTROL_TAGS_TESTS                                      \
    TEST(tags_and_metadata_round_trip_and_find_the_job),       \
        TEST(bad_tags_and_metadata_are_invalid_argument_and_write_nothing), \
        TEST(a_traceparent_is_checked_and_carried_in_metadata)

#endif
