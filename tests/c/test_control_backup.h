/* tj_queue_backup (issue 39), part of the test_control program (included
 * by test_control.c after its helpers): a backup of a live store opens
 * with tj_queue_open as a store holding its jobs (a leased one leased);
 * a taken directory is TJ_STATUS_INVALID_ARGUMENT naming it; NULLs are
 * refused by name; a closed queue answers TJ_STATUS_CLOSED. */
#ifndef TJ_TEST_CONTROL_BACKUP_H
#define TJ_TEST_CONTROL_BACKUP_H

static void backup_opens_as_a_store_and_a_taken_dir_is_refused(void) {
    tj_error *err = NULL;
    char dir[64], store[96], to[96], other[96];
    tmpdir_make(dir);
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(to, sizeof to, "%s/b1", dir);
    snprintf(other, sizeof other, "%s/b2", dir);
    tj_queue *q = open_store(store, NULL);
    REQUIRE(q != NULL);
    tj_id a = enqueue(q, "mail", NULL);
    tj_id b = enqueue(q, "mail", NULL);
    tj_job *j = lease(q);
    REQUIRE(j != NULL);

    tj_backup_info info = {0};
    CHECK_OK(tj_queue_backup(q, to, &info, &err));
    CHECK(info.files >= 4 && info.bytes > 0 && info.sequence > 0);
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_backup(q, to, &info, &err));
    tj_queue_backup(q, to, NULL, &err);
    CHECK(err != NULL && strstr(tj_error_message(err), "b1") != NULL &&
          strstr(tj_error_message(err), "not empty") != NULL);
    tj_error_free(err);
    err = NULL;
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_backup(q, NULL, &info, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_backup(NULL, other, &info, &err));
    /* Invalid UTF-8 in the directory name. */
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_backup(q, "\xff\xfe", &info, &err));
    tj_job_free(j);
    tj_queue_close(q);
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_backup(q, other, &info, &err));
    tj_queue_free(q);

    tj_queue *c = open_store(to, NULL);
    REQUIRE(c != NULL);
    uint32_t sa = state_of(c, a), sb = state_of(c, b);
    CHECK((sa == TJ_STATE_LEASED && sb == TJ_STATE_PENDING) ||
          (sa == TJ_STATE_PENDING && sb == TJ_STATE_LEASED));
    tj_queue_free(c);
    tmpdir_remove(dir);
}

#define CONTROL_BACKUP_TESTS TEST(backup_opens_as_a_store_and_a_taken_dir_is_refused)

#endif
