/* stats' per-scope counts a page at a time through the C API (issue 49):
 * tj_queue_stats gives the top TJ_STATS_SCOPE_LIMIT_DEFAULT by pending with
 * a cursor; tj_queue_stats_page walks every scope exactly once by name and
 * by a count; the totals stay whole; hostile options get typed statuses. */
#include "harness.h"

enum { SCOPES = 3000 };

static void nth(int i, char out[37]) {
    snprintf(out, 37, "0c000000-0000-0000-0000-%012x", i);
}

static tj_queue *seeded(const char *dir) {
    tj_error *err = NULL;
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, NULL, &q, &err));
    CHECK(q != NULL);
    if (!q) return NULL;
    tj_batch *b = tj_batch_new();
    tj_enqueue_options *o = tj_enqueue_options_new();
    for (int i = 0; i < SCOPES; i++) {
        char sc[37];
        nth(i, sc);
        CHECK_OK(tj_enqueue_options_set_scope(o, sc, &err));
        /* Scope i < 10 holds 12 - i jobs (the known top), the others 1. */
        for (int n = 0; n < (i < 10 ? 12 - i : 1); n++) CHECK_OK(tj_batch_add(b, "embed", NULL, 0, o, &err));
        if (tj_batch_len(b) >= 1000 || i == SCOPES - 1) {
            CHECK_OK(tj_queue_enqueue_many(q, b, NULL, NULL, &err));
            tj_batch_clear(b);
        }
    }
    tj_enqueue_options_free(o);
    tj_batch_free(b);
    return q;
}

static const uint64_t TOTAL = SCOPES - 10 + 75;

static void the_default_is_the_top_by_pending_with_a_cursor(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = seeded(dir);
    REQUIRE(q != NULL);
    tj_stats *s = NULL;
    CHECK_OK(tj_queue_stats(q, &s, &err));
    CHECK(tj_stats_total(s).pending == TOTAL);
    CHECK(tj_stats_scope_count(s) == TJ_STATS_SCOPE_LIMIT_DEFAULT);
    CHECK(tj_stats_scopes_next(s) != NULL);
    for (size_t i = 0; i < 10; i++) {
        const char *sc = NULL;
        tj_state_counts c;
        char want[37];
        nth((int)i, want);
        CHECK_OK(tj_stats_scope(s, i, &sc, &c, &err));
        CHECK(sc && strcmp(sc, want) == 0);
        CHECK(c.pending == 12 - i);
    }
    tj_stats_free(s);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static int walk(tj_queue *q, const char *order, size_t limit, char (*seen)[37]) {
    tj_error *err = NULL;
    tj_stats_options *o = tj_stats_options_new();
    CHECK_OK(tj_stats_options_set_scope_order(o, order, &err));
    CHECK_OK(tj_stats_options_set_scope_limit(o, limit, &err));
    int n = 0;
    for (;;) {
        tj_stats *s = NULL;
        CHECK_OK(tj_queue_stats_page(q, o, &s, &err));
        CHECK(s != NULL);
        if (!s) break;
        CHECK(tj_stats_total(s).pending == TOTAL);
        CHECK(tj_stats_scope_count(s) <= limit);
        for (size_t i = 0; i < tj_stats_scope_count(s) && n < SCOPES; i++) {
            const char *sc = NULL;
            CHECK_OK(tj_stats_scope(s, i, &sc, NULL, &err));
            snprintf(seen[n++], 37, "%s", sc);
        }
        const char *next = tj_stats_scopes_next(s);
        CHECK_OK(tj_stats_options_set_scopes_after(o, next, &err));
        tj_stats_free(s);
        if (!next) break;
    }
    tj_stats_options_free(o);
    return n;
}

static int by_text(const void *a, const void *b) { return strcmp(a, b); }

static void pages_visit_every_scope_once_by_name_and_by_count(void) {
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = seeded(dir);
    REQUIRE(q != NULL);
    static char seen[SCOPES][37];
    CHECK(walk(q, "name", 700, seen) == SCOPES);
    for (int i = 0; i < SCOPES; i++) {
        char want[37];
        nth(i, want);
        CHECK(strcmp(seen[i], want) == 0);
    }
    memset(seen, 0, sizeof seen);
    CHECK(walk(q, "dead", 1000, seen) == SCOPES);
    qsort(seen, SCOPES, sizeof seen[0], by_text);
    for (int i = 0; i < SCOPES; i++) {
        char want[37];
        nth(i, want);
        CHECK(strcmp(seen[i], want) == 0);
    }
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void hostile_options_get_typed_statuses(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = seeded(dir);
    REQUIRE(q != NULL);
    tj_stats_options *o = tj_stats_options_new();
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_stats_options_set_scope_order(o, "oldest", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_stats_options_set_scope_order(o, "emb\xff", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_stats_options_set_scope_order(o, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_stats_options_set_scope_limit(o, TJ_MAX_SCOPE_LIMIT + 1, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_stats_options_set_scope_limit(NULL, 1, &err));
    CHECK_OK(tj_stats_options_set_scopes_after(o, "not-a-cursor", &err));
    tj_stats *s = NULL;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_stats_page(q, o, &s, &err));
    CHECK(s == NULL);
    CHECK_OK(tj_stats_options_set_scopes_after(o, NULL, &err));
    CHECK_OK(tj_stats_options_set_scope_prefix(o, "0c00000", &err));
    CHECK_OK(tj_stats_options_set_scope_order(o, "name", &err));
    CHECK_OK(tj_queue_stats_page(q, o, &s, &err));
    CHECK(tj_stats_scope_count(s) == 100 && tj_stats_scopes_next(s) != NULL);
    tj_stats_free(s);
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_stats_page(q, o, NULL, &err));
    CHECK(tj_stats_scopes_next(NULL) == NULL);
    /* Oldest ready: empty unless asked; each seeded kind's job is due. */
    CHECK_OK(tj_queue_stats_page(q, o, &s, &err));
    CHECK(tj_stats_oldest_ready_count(s) == 0);
    const char *kind = NULL;
    uint64_t age = 0;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_stats_oldest_ready(s, 0, &kind, &age, &err));
    tj_stats_free(s);
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_stats_options_set_oldest_ready(NULL, true, &err));
    CHECK_OK(tj_stats_options_set_oldest_ready(o, true, &err));
    CHECK_OK(tj_queue_stats_page(q, o, &s, &err));
    CHECK(tj_stats_oldest_ready_count(s) >= 1 && tj_stats_oldest_ready_count(s) == tj_stats_kind_count(s));
    CHECK_OK(tj_stats_oldest_ready(s, 0, &kind, NULL, &err));
    CHECK(kind != NULL);
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_stats_oldest_ready(NULL, 0, &kind, &age, &err));
    CHECK(tj_stats_oldest_ready_count(NULL) == 0);
    tj_stats_free(s);
    tj_stats_options_free(o);
    tj_stats_options_free(NULL);
    tj_queue_close(q);
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_stats_page(q, NULL, &s, &err));
    tj_queue_free(q);
    tmpdir_remove(dir);
}

int main(void) {
    static const struct tj_test tests[] = {
        TEST(the_default_is_the_top_by_pending_with_a_cursor),
        TEST(pages_visit_every_scope_once_by_name_and_by_count),
        TEST(hostile_options_get_typed_statuses),
    };
    return run_tests("test_scopes", tests, sizeof tests / sizeof tests[0]);
}
