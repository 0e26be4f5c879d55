/* The C conformance runner's shared state: scenarios.c (cases, comparison,
 * the store, other processes) and scenario_ops.c (the steps as API calls;
 * also scenario_control.c, scenario_schedules.c, scenario_settle_many.c,
 * scenario_tags.c, scenario_fanin.c). */
#ifndef TJ_SCENARIO_H
#define TJ_SCENARIO_H

#include <sys/types.h>

#include "mini_json.h"
#include "telha_jobs.h"

#define MAX_NAMES 128
/* A step the runner itself could not carry out (a malformed case, an
 * unknown op or field): never one of the API's statuses. */
#define RUNNER_ERROR 9999u

struct named_id { char *name; tj_id id; };
struct named_token { char *name; tj_token token; };
/* A stats page's cursor, named by the step's `as`. */
struct named_cursor { char *name; char *cursor; };
/* A subscription of the case, with the seq it answered last (0: none yet). */
struct named_sub { char *name; tj_subscription *sub; uint64_t last_seq; };

struct run {
    char dir[256];
    char store[300];
    const jval *config;
    tj_queue *q;
    struct named_id ids[MAX_NAMES];
    size_t nids;
    struct named_token leases[MAX_NAMES];
    size_t nleases;
    struct named_sub subs[MAX_NAMES];
    size_t nsubs;
    struct named_cursor cursors[MAX_NAMES];
    size_t ncursors;
    pid_t holder;
    int holder_stdin;
    /* A store file as it was before write_store_file. */
    char saved_name[64];
    char *saved;
    size_t saved_len;
    char msg[4096]; /* why the last step failed */
};

/* scenarios.c */
tj_status runner_error(struct run *r, const char *fmt, ...);

/* scenario_ops.c: one function per op; `obs` receives the answer. */
uint64_t now_ms(void);
tj_status job_id(struct run *r, const jval *s, tj_id *out, tj_error **err);
tj_status token_of(struct run *r, const jval *ref, tj_token *out, tj_error **err);
jval *name_of(const struct run *r, tj_id id);
jval *info_json(const struct run *r, const tj_job_info *i);
void put_bytes(jval *o, const char *name, const uint8_t *b, size_t len, bool present);
uint32_t state_number(const char *name);
tj_status op_enqueue(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_enqueue_many(struct run *r, const jval *s, tj_error **err);
tj_status op_lease(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_extend(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_settle(struct run *r, const char *op, const jval *s, tj_error **err);
tj_status op_retry(struct run *r, const jval *s, tj_error **err);
tj_status op_get(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_list(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_reap(struct run *r, jval **obs, tj_error **err);
tj_status op_stats(struct run *r, const jval *s, jval **obs, tj_error **err);
/* scenario_control.c: the job-control steps. */
tj_status op_snooze(struct run *r, const jval *s, tj_error **err);
tj_status op_cancel(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_cancel_many(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_complete_many(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_purge(struct run *r, const jval *s, jval **obs, tj_error **err);
/* scenario_ops.c, shared with the other step files. */
void bind_id(struct run *r, const jval *s, tj_id id);
void bytes_arg(const jval *s, const char *name, uint8_t **buf, size_t *len, bool *present);
tj_status enqueue_options(struct run *r, const jval *s, tj_enqueue_options **out, tj_error **err);
tj_status fill_batch(struct run *r, tj_batch *b, const jval *jobs, tj_error **err);
void name_cursor(struct run *r, const char *name, const char *cursor);
const char *cursor_named(const struct run *r, const char *name);
/* scenario_fanin.c: fan-in. */
tj_status fan_options(struct run *r, const jval *s, tj_enqueue_options *o, tj_error **err);
void put_fan_in(jval *o, const tj_job_info *i);
tj_status op_enqueue_group(struct run *r, const jval *s, tj_error **err);
tj_status op_results_of_children(struct run *r, const jval *s, jval **obs, tj_error **err);
/* scenario_tags.c: tags and metadata. */
tj_status tag_options(const jval *s, tj_enqueue_options *o, tj_error **err);
void put_job_tags(jval *o, const tj_job *j);
void put_info_tags(jval *o, const tj_job_info *i);
tj_status schedule_tag_settings(const jval *s, tj_schedule *sc, tj_error **err);
void put_schedule_tags(jval *o, const tj_schedule_info *i);
tj_status op_count_tag(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_find(struct run *r, const jval *s, jval **obs, tj_error **err);
/* scenario_settle_many.c: the batch failures and releases. */
tj_status op_fail_many(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_release_many(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_delete(struct run *r, const jval *s, tj_error **err);
tj_status op_promote(struct run *r, const jval *s, tj_error **err);
tj_status op_reschedule(struct run *r, const jval *s, tj_error **err);
tj_status op_set_priority(struct run *r, const jval *s, tj_error **err);
tj_status op_pause(struct run *r, const jval *s, bool on, jval **obs, tj_error **err);
tj_status op_paused(struct run *r, jval **obs, tj_error **err);
/* scenario_control.c: results, events and progress (extend's progress is
 * in op_extend). */
tj_status op_wait(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_subscribe(struct run *r, const jval *s, tj_error **err);
tj_status op_events(struct run *r, const jval *s, jval **obs, tj_error **err);
/* scenario_control.c: flow control (complete's `then` is in op_settle). */
tj_status op_set_limit(struct run *r, const jval *s, tj_error **err);
tj_status op_remove_limit(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_limits(struct run *r, jval **obs, tj_error **err);
/* scenario_schedules.c: the schedule steps. op_schedule carries out
 * schedule_get, _list, _delete, _pause, _resume and run_schedules. */
tj_status op_schedule_put(struct run *r, const jval *s, jval **obs, tj_error **err);
tj_status op_schedule(struct run *r, const char *op, const jval *s, jval **obs, tj_error **err);
tj_status op_schedule_next(struct run *r, const jval *s, jval **obs, tj_error **err);

#endif
