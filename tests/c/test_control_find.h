/* tj_queue_find through the C API (issue 42), part of the test_control
 * program (included by test_control.c after its helpers): one text
 * answered as a job id, an idempotency key and a tag, side by side, read
 * through tj_find_result_by_id / _by_key / _by_tag (a borrowed
 * tj_list_page whose cursor continues in tj_queue_list by tag); an empty
 * text, one over TJ_MAX_FIND_TEXT_LEN bytes, with a control character or
 * not UTF-8 is TJ_STATUS_INVALID_ARGUMENT naming the limit. */
#ifndef TJ_TEST_CONTROL_FIND_H
#define TJ_TEST_CONTROL_FIND_H

static void find_answers_an_id_a_key_and_a_tag(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_enqueue_options *o = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_idempotency_key(o, "order-4711", &err));
    tj_id keyed = {{0}};
    CHECK_OK(tj_queue_enqueue(q, "mail", (const uint8_t *)"p", 1, o, &keyed, NULL, &err));
    tj_enqueue_options_free(o);
    tj_id tagged[3];
    for (int n = 0; n < 3; n++) {
        o = tj_enqueue_options_new();
        CHECK_OK(tj_enqueue_options_add_tag(o, "order-4711", &err));
        CHECK_OK(tj_queue_enqueue(q, "ship", (const uint8_t *)"p", 1, o, &tagged[n], NULL, &err));
        tj_enqueue_options_free(o);
    }

    tj_find_result *r = NULL;
    CHECK_OK(tj_queue_find(q, "order-4711", NULL, 2, &r, &err));
    REQUIRE(r != NULL);
    CHECK(tj_find_result_by_id(r) == NULL);
    const tj_job_info *k = tj_find_result_by_key(r);
    CHECK(k != NULL && memcmp(tj_job_info_id(k).bytes, keyed.bytes, 16) == 0);
    const tj_list_page *page = tj_find_result_by_tag(r);
    REQUIRE(page != NULL);
    CHECK(tj_list_page_len(page) == 2);
    CHECK(memcmp(tj_job_info_id(tj_list_page_get(page, 0)).bytes, tagged[0].bytes, 16) == 0);
    REQUIRE(tj_list_page_next(page) != NULL);
    /* The cursor continues in a list by the tag. */
    tj_list_options *lo = tj_list_options_new();
    CHECK_OK(tj_list_options_set_tag(lo, "order-4711", &err));
    CHECK_OK(tj_list_options_set_after(lo, tj_list_page_next(page), &err));
    tj_list_page *rest = NULL;
    CHECK_OK(tj_queue_list(q, lo, &rest, &err));
    CHECK(tj_list_page_len(rest) == 1);
    CHECK(memcmp(tj_job_info_id(tj_list_page_get(rest, 0)).bytes, tagged[2].bytes, 16) == 0);
    tj_list_page_free(rest);
    tj_list_options_free(lo);
    tj_find_result_free(r);

    /* An id: that job; 0 as the limit is the default page. */
    char text[TJ_ID_STRLEN];
    CHECK_OK(tj_id_format(&tagged[1], text, sizeof text, &err));
    r = NULL;
    CHECK_OK(tj_queue_find(q, text, NULL, 0, &r, &err));
    const tj_job_info *byid = tj_find_result_by_id(r);
    CHECK(byid != NULL && memcmp(tj_job_info_id(byid).bytes, tagged[1].bytes, 16) == 0);
    CHECK(tj_find_result_by_key(r) == NULL);
    CHECK(tj_list_page_len(tj_find_result_by_tag(r)) == 0);
    tj_find_result_free(r);
    /* In another scope, nothing: the key is the system scope's. */
    r = NULL;
    CHECK_OK(tj_queue_find(q, "order-4711", "00000000-0000-0000-0000-0000000000aa", 0, &r, &err));
    CHECK(tj_find_result_by_key(r) == NULL && tj_list_page_len(tj_find_result_by_tag(r)) == 0);
    tj_find_result_free(r);

    /* Bad input: the limit named, nothing written to result_out. */
    r = NULL;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_find(q, "", NULL, 0, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_find(q, "a\nb", NULL, 0, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_find(q, "\xff\xfe", NULL, 0, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_find(q, "a", "nope", 0, &r, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_find(q, "a", NULL, TJ_MAX_LIST_LIMIT + 1, &r, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_find(q, NULL, NULL, 0, &r, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_find(q, "a", NULL, 0, NULL, &err));
    static char long_text[TJ_MAX_FIND_TEXT_LEN + 2];
    memset(long_text, 'x', TJ_MAX_FIND_TEXT_LEN + 1);
    long_text[TJ_MAX_FIND_TEXT_LEN + 1] = '\0';
    CHECK(tj_queue_find(q, long_text, NULL, 0, &r, &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(tj_error_message(err), "1 to 512 bytes") != NULL);
    tj_error_free(err);
    err = NULL;
    CHECK(r == NULL);
    CHECK(tj_find_result_by_id(NULL) == NULL && tj_find_result_by_tag(NULL) == NULL);
    tj_find_result_free(NULL);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#define CONTROL_FIND_TESTS TEST(find_answers_an_id_a_key_and_a_tag)

#endif
