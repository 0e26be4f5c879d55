/* Tags and metadata of a schedule's jobs through the C API (issue 42),
 * part of the test_schedules program (included by test_schedules.c after
 * its helpers): set with tj_schedule_add_tag / _set_meta, read back from
 * the tj_schedule_info, carried by the job a slot enqueues (leased, and
 * counted by tj_queue_count_tag); a tag over 64 bytes, with a control
 * character or not UTF-8, a metadata value that is not UTF-8, 17 tags and
 * 5 KiB of metadata are TJ_STATUS_INVALID_ARGUMENT and nothing is stored. */
#ifndef TJ_TEST_SCHEDULE_TAGS_H
#define TJ_TEST_SCHEDULE_TAGS_H

static void a_schedules_tags_and_metadata_go_on_its_jobs(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir);
    REQUIRE(q != NULL);
    tj_schedule *s = tj_schedule_new("tagged", "* * * * * *", "tick");
    REQUIRE(s != NULL);
    CHECK_OK(tj_schedule_add_tag(s, "nightly", &err));
    CHECK_OK(tj_schedule_add_tag(s, "team-a", &err));
    CHECK_OK(tj_schedule_add_tag(s, "nightly", &err));
    CHECK_OK(tj_schedule_set_meta(s, "owner", "ops", &err));
    tj_schedule_info *i = NULL;
    CHECK_OK(tj_queue_schedule_put(q, s, &i, &err));
    tj_schedule_free(s);
    REQUIRE(i != NULL);
    CHECK(tj_schedule_info_tag_count(i) == 2); /* the duplicate removed */
    CHECK(strcmp(tj_schedule_info_tag(i, 0), "nightly") == 0);
    CHECK(strcmp(tj_schedule_info_tag(i, 1), "team-a") == 0);
    CHECK(tj_schedule_info_tag(i, 2) == NULL);
    CHECK(tj_schedule_info_meta_count(i) == 1);
    CHECK(strcmp(tj_schedule_info_meta_key(i, 0), "owner") == 0);
    CHECK(strcmp(tj_schedule_info_meta_value(i, 0), "ops") == 0);
    CHECK(tj_schedule_info_meta_key(i, 1) == NULL);
    tj_schedule_info_free(i);
    CHECK(tj_schedule_info_tag_count(NULL) == 0 && tj_schedule_info_tag(NULL, 0) == NULL);

    sleep_ms(1100);
    tj_run_report rep = {0, 0, 0, 0};
    CHECK_OK(tj_queue_run_schedules(q, &rep, &err));
    CHECK(rep.enqueued == 1);
    tj_job *j = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &j, &err));
    REQUIRE(j != NULL);
    CHECK(tj_job_tag_count(j) == 2 && strcmp(tj_job_tag(j, 1), "team-a") == 0);
    CHECK(tj_job_meta_count(j) == 1 && strcmp(tj_job_meta_value(j, 0), "ops") == 0);
    tj_job_free(j);
    tj_state_counts c;
    CHECK_OK(tj_queue_count_tag(q, "team-a", NULL, &c, &err));
    CHECK(c.leased == 1);

    /* Bad ones: refused by the setter (schedule unchanged) or at put. */
    s = tj_schedule_new("bad", "@daily", "k");
    char long_tag[66];
    memset(long_tag, 'x', 65);
    long_tag[65] = '\0';
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_add_tag(s, long_tag, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_add_tag(s, "a\tb", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_add_tag(s, "\xff\xfe", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_schedule_set_meta(s, "k", "\xc3", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_add_tag(s, NULL, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_schedule_add_tag(NULL, "t", &err));
    CHECK(tj_schedule_add_tag(s, long_tag, &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(tj_error_message(err), "1 to 64 bytes") != NULL);
    tj_error_free(err);
    err = NULL;
    /* Not UTF-8: the tag's rule, named. */
    CHECK(tj_schedule_add_tag(s, "\xff", &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(tj_error_message(err), "must be UTF-8") != NULL &&
          strstr(tj_error_message(err), "1 to 64 bytes") != NULL);
    tj_error_free(err);
    err = NULL;
    for (int n = 0; n < 17; n++) {
        char t[16];
        snprintf(t, sizeof t, "t%d", n);
        CHECK_OK(tj_schedule_add_tag(s, t, &err));
    }
    REFUSED(q, s);
    s = tj_schedule_new("bad", "@daily", "k");
    static char big[5 * 1024 + 1];
    memset(big, 'v', 5 * 1024);
    big[5 * 1024] = '\0';
    CHECK_OK(tj_schedule_set_meta(s, "k", big, &err));
    REFUSED(q, s);
    CHECK(schedule_count(q) == 1);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#endif
