/* Steering waiting jobs through the C API (issue 44), part of the
 * test_control program (included by test_control.c after its helpers):
 * tj_queue_promote, tj_queue_reschedule and tj_queue_set_priority move a
 * delayed job; a leased one is TJ_STATUS_WRONG_STATE; an unknown id
 * TJ_STATUS_NOT_FOUND; a priority over 255 or a time past the year 9999
 * TJ_STATUS_INVALID_ARGUMENT with nothing written; NULLs are named. */
#ifndef TJ_TEST_CONTROL_STEER_H
#define TJ_TEST_CONTROL_STEER_H

static tj_job_info *info_of(tj_queue *q, tj_id id) {
    tj_error *err = NULL;
    tj_job_info *i = NULL;
    CHECK_OK(tj_queue_get(q, &id, &i, &err));
    return i;
}

static void promote_reschedule_and_set_priority_steer_a_waiting_job(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = open_store(dir, NULL);
    REQUIRE(q != NULL);
    tj_id busy = enqueue(q, "embed", NULL);
    tj_job *held = lease(q);
    REQUIRE(held != NULL);
    tj_enqueue_options *o = tj_enqueue_options_new();
    CHECK_OK(tj_enqueue_options_set_delay_ms(o, 3600000));
    tj_id a = {{0}};
    CHECK_OK(tj_queue_enqueue(q, "embed", (const uint8_t *)"p", 1, o, &a, NULL, &err));
    tj_enqueue_options_free(o);
    tj_job *none = lease(q);
    CHECK(none == NULL);

    CHECK_OK(tj_queue_set_priority(q, &a, 3, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_set_priority(q, &a, 256, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_reschedule(q, &a, UINT64_MAX, &err));
    tj_job_info *i = info_of(q, a);
    REQUIRE(i != NULL);
    CHECK(tj_job_info_priority(i) == 3);
    uint64_t due = tj_job_info_state_ts_ms(i);
    tj_job_info_free(i);
    CHECK_OK(tj_queue_reschedule(q, &a, due + 1000, &err));
    i = info_of(q, a);
    REQUIRE(i != NULL);
    CHECK(tj_job_info_state_ts_ms(i) == due + 1000);
    tj_job_info_free(i);
    CHECK_OK(tj_queue_promote(q, &a, &err));
    CHECK_OK(tj_queue_promote(q, &a, &err)); /* already due: nothing to do */
    tj_job *j = lease(q);
    REQUIRE(j != NULL);
    tj_id got = tj_job_id(j);
    CHECK(memcmp(&got, &a, sizeof got) == 0);
    tj_job_free(j);

    CHECK_STATUS(TJ_STATUS_WRONG_STATE, tj_queue_promote(q, &busy, &err));
    CHECK_STATUS(TJ_STATUS_WRONG_STATE, tj_queue_set_priority(q, &busy, 1, &err));
    tj_id unknown = {{9}};
    CHECK_STATUS(TJ_STATUS_NOT_FOUND, tj_queue_reschedule(q, &unknown, 1, &err));
    CHECK_NULL_NAMED("id", tj_queue_promote(q, NULL, &err));
    CHECK_NULL_NAMED("queue", tj_queue_reschedule(NULL, &a, 1, &err));
    CHECK_NULL_NAMED("id", tj_queue_set_priority(q, NULL, 1, &err));
    CHECK(state_of(q, busy) == TJ_STATE_LEASED);
    tj_job_free(held);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

#define CONTROL_STEER_TESTS TEST(promote_reschedule_and_set_priority_steer_a_waiting_job)

#endif
