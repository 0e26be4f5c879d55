/* The options through the core's key table, driven from the table itself:
 * every key the library lists is set with tj_options_set (and, per kind,
 * tj_options_set_kind) and read back, so a key added to the core that does
 * not work from C fails here. */
#include "harness.h"

/* A value of `k`'s type that differs from its default, as text. */
static const char *sample(const tj_config_key *k, char buf[32]) {
    if (strcmp(k->value_type, "duration") == 0 || strcmp(k->value_type, "retention") == 0)
        return "4321ms";
    if (strcmp(k->value_type, "factor") == 0)
        return "1.75";
    if (strcmp(k->value_type, "fraction") == 0)
        return "0.35";
    if (strcmp(k->value_type, "flag") == 0)
        return strcmp(k->default_value, "true") == 0 ? "false" : "true";
    if (strcmp(k->value_type, "count") == 0) {
        uint64_t v = k->count_min + 6;
        if (v > k->count_max)
            v = k->count_max;
        snprintf(buf, 32, "%llu", (unsigned long long)v);
        return buf;
    }
    return NULL; /* a type this test does not know: fails below */
}

static void every_key_of_the_table_sets_and_reads_back_globally_and_per_kind(void) {
    tj_error *err = NULL;
    size_t n = tj_config_key_count();
    CHECK(n >= 10);
    tj_options *o = tj_options_new();
    for (size_t i = 0; i < n; i++) {
        tj_config_key k;
        CHECK_OK(tj_config_key_at(i, &k, &err));
        CHECK(k.name && k.toml && k.value_type && k.unit && k.default_value && k.doc);
        char num[32], got[64];
        const char *v = sample(&k, num);
        if (v == NULL) {
            fprintf(stderr, "  key %s has type %s, unknown to this test\n", k.name, k.value_type);
            tj_test_failed = 1;
            continue;
        }
        /* The default reads back as the default. */
        tj_options *fresh = tj_options_new();
        CHECK_OK(tj_options_get(fresh, k.name, got, sizeof got, NULL, &err));
        tj_options *d = tj_options_new();
        CHECK_OK(tj_options_set(d, k.name, k.default_value, &err));
        char want[64];
        CHECK_OK(tj_options_get(d, k.name, want, sizeof want, NULL, &err));
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "  %s: default reads %s, its text %s reads %s\n", k.name, got,
                    k.default_value, want);
            tj_test_failed = 1;
        }
        tj_options_free(d);
        tj_options_free(fresh);

        size_t len = 0;
        CHECK_OK(tj_options_set(o, k.name, v, &err));
        CHECK_OK(tj_options_get(o, k.name, got, sizeof got, &len, &err));
        if (strcmp(got, v) != 0 || len != strlen(v)) {
            fprintf(stderr, "  %s: set %s, read %s\n", k.name, v, got);
            tj_test_failed = 1;
        }
        if (k.per_kind) {
            CHECK_OK(tj_options_get_kind(o, "ingest:pdf", k.name, got, sizeof got, NULL, &err));
            CHECK(strcmp(got, "") == 0); /* not set for the kind yet */
            CHECK_OK(tj_options_set_kind(o, "ingest:pdf", k.name, v, &err));
            CHECK_OK(tj_options_get_kind(o, "ingest:pdf", k.name, got, sizeof got, NULL, &err));
            if (strcmp(got, v) != 0) {
                fprintf(stderr, "  kind %s: set %s, read %s\n", k.name, v, got);
                tj_test_failed = 1;
            }
            /* A per-kind retention or limit may be "off" for the kind (no
             * limit for it, whatever the global), distinct from unset. */
            if (strcmp(k.value_type, "retention") == 0) {
                CHECK_OK(tj_options_set_kind(o, "ingest:html", k.name, "off", &err));
                CHECK_OK(tj_options_get_kind(o, "ingest:html", k.name, got, sizeof got, NULL, &err));
                if (strcmp(got, "off") != 0) {
                    fprintf(stderr, "  kind %s: set off, read %s\n", k.name, got);
                    tj_test_failed = 1;
                }
                CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                             tj_options_set_kind(o, "ingest:html", k.name, "-1s", &err));
                /* The refusal holds until the key is set again. */
                CHECK_OK(tj_options_set_kind(o, "ingest:html", k.name, "off", &err));
            }
        } else {
            CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                         tj_options_set_kind(o, "ingest:pdf", k.name, v, &err));
            CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                         tj_options_get_kind(o, "ingest:pdf", k.name, got, sizeof got, NULL, &err));
        }
    }
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_config_key_at(n, &(tj_config_key){0}, &err));
    /* The options with every key set open a queue. */
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = NULL;
    CHECK_OK(tj_options_set(o, "reaper_interval", "0", &err));
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_queue_free(q);
    tj_options_free(o);
    tmpdir_remove(dir);
}

static void a_key_set_by_text_is_what_the_queue_uses(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_options *o = tj_options_new();
    /* Only a retention may be "off"; the refusal is cleared by the next set. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_options_set(o, "reaper_interval", "off", &err));
    CHECK_OK(tj_options_set(o, "reaper_interval", "0s", &err));
    CHECK_OK(tj_options_set(o, "lease_ttl", "1m 30s", &err));
    CHECK_OK(tj_options_set(o, "max_attempts", "4", &err));
    CHECK_OK(tj_options_set_kind(o, "ingest:pdf", "lease_ttl", "600", &err));
    CHECK_OK(tj_options_set(o, "completed_retention", "off", &err));
    char got[64];
    CHECK_OK(tj_options_get(o, "lease_ttl", got, sizeof got, NULL, &err));
    CHECK(strcmp(got, "90000ms") == 0);
    CHECK_OK(tj_options_get(o, "completed_retention", got, sizeof got, NULL, &err));
    CHECK(strcmp(got, "off") == 0);
    /* The typed setters are wrappers over the same table. */
    CHECK_OK(tj_options_set_completed_retention_ms(o, 5000));
    CHECK_OK(tj_options_get(o, "completed_retention", got, sizeof got, NULL, &err));
    CHECK(strcmp(got, "5000ms") == 0);
    CHECK_OK(tj_options_set_completed_retention_ms(o, 0));
    CHECK_OK(tj_options_get(o, "completed_retention", got, sizeof got, NULL, &err));
    CHECK(strcmp(got, "off") == 0);
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    REQUIRE(q != NULL);
    uint64_t t0 = now_ms();
    CHECK_OK(tj_queue_enqueue(q, "ingest:pdf", NULL, 0, NULL, NULL, NULL, &err));
    CHECK_OK(tj_queue_enqueue(q, "embed", NULL, 0, NULL, NULL, NULL, &err));
    tj_job *a = NULL, *b = NULL;
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &a, &err));
    CHECK_OK(tj_queue_lease_next(q, "w", NULL, &b, &err));
    REQUIRE(a && b);
    CHECK(tj_job_lease_ttl_ms(a) == 600000 && tj_job_lease_ttl_ms(b) == 90000);
    CHECK(tj_job_deadline_ms(b) >= t0 + 90000 && tj_job_deadline_ms(b) < t0 + 100000);
    CHECK(tj_job_max_attempts(a) == 4 && tj_job_max_attempts(b) == 4);
    tj_job_free(a);
    tj_job_free(b);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void refused_values_name_the_key_and_keep_the_options_from_opening(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_options *o = tj_options_new();
    char got[64];
    /* An unknown key lists the valid ones. */
    CHECK(tj_options_set(o, "lease_tll", "5s", &err) == TJ_STATUS_INVALID_ARGUMENT);
    CHECK(err && strstr(tj_error_message(err), "lease_tll") &&
          strstr(tj_error_message(err), "lease_ttl") &&
          strstr(tj_error_message(err), "prune_batch"));
    tj_error_free(err);
    err = NULL;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_options_get(o, "lease_tll", got, sizeof got, NULL, &err));
    /* It set nothing, so it keeps nothing from opening: a host may probe
     * for a key a newer library knows. */
    CHECK_OK(tj_options_set(o, "reaper_interval", "0", &err));
    tj_queue *probe = NULL;
    CHECK_OK(tj_queue_open(dir, o, &probe, &err));
    tj_queue_free(probe);
    tj_options_free(o);

    /* Over 100 years, a wrong type, text that does not parse: each names the
     * key, the value stays as it was, and open refuses until it is fixed. */
    const char *bad[][2] = {
        {"lease_ttl", "18446744073709552"}, /* 2^64 / 1000 seconds */
        {"lease_ttl", "101y"},
        {"lease_ttl", "0"},
        {"completed_retention", "1e300"},
        {"max_attempts", "0"},
        {"max_attempts", "18446744073709551616"},
        {"backoff_factor", "nan"},
        {"backoff_factor", "inf"},
        {"sync_writes", "maybe"},
        {"max_payload_bytes", "1073741825"},
        {"reaper_interval", "-1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = tj_options_new();
        char before[64];
        CHECK_OK(tj_options_get(o, bad[i][0], before, sizeof before, NULL, &err));
        tj_status s = tj_options_set(o, bad[i][0], bad[i][1], &err);
        if (s != TJ_STATUS_INVALID_ARGUMENT || !err ||
            !strstr(tj_error_message(err), bad[i][0])) {
            fprintf(stderr, "  %s = %s: %s %s\n", bad[i][0], bad[i][1], tj_status_name(s),
                    tj_error_message(err));
            tj_test_failed = 1;
        }
        tj_error_free(err);
        err = NULL;
        CHECK_OK(tj_options_get(o, bad[i][0], got, sizeof got, NULL, &err));
        CHECK(strcmp(got, before) == 0);
        tj_queue *q = (tj_queue *)&q;
        CHECK(tj_queue_open(dir, o, &q, &err) == TJ_STATUS_INVALID_ARGUMENT);
        CHECK(err && strstr(tj_error_message(err), bad[i][0]));
        CHECK(q == (tj_queue *)&q);
        tj_error_free(err);
        err = NULL;
        /* Set again, correctly: the options open. */
        CHECK_OK(tj_options_set(o, bad[i][0], before, &err));
        CHECK_OK(tj_options_set(o, "reaper_interval", "0", &err));
        q = NULL;
        CHECK_OK(tj_queue_open(dir, o, &q, &err));
        tj_queue_free(q);
        tj_options_free(o);
    }
    /* The per-kind form, and a key that is not per kind. */
    o = tj_options_new();
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_options_set_kind(o, "embed", "lease_ttl", "200y", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_options_set_kind(o, "embed", "sync_writes", "true", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_options_set_kind_lease_ttl_ms(o, "embed", UINT64_MAX, &err));
    tj_queue *q = NULL;
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_open(dir, o, &q, &err));
    tj_options_free(o);
    tmpdir_remove(dir);
}

static void the_text_getter_reports_its_length_and_refuses_short_buffers(void) {
    tj_error *err = NULL;
    tj_options *o = tj_options_new();
    size_t len = 0;
    CHECK_OK(tj_options_get(o, "lease_ttl", NULL, 0, &len, &err));
    CHECK(len == strlen("300000ms"));
    char small[4] = {'x', 'x', 'x', 'x'};
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                 tj_options_get(o, "lease_ttl", small, sizeof small, &len, &err));
    CHECK(small[0] == 'x'); /* nothing written */
    char exact[9];
    CHECK_OK(tj_options_get(o, "lease_ttl", exact, sizeof exact, NULL, &err));
    CHECK(strcmp(exact, "300000ms") == 0);
    tj_options_free(o);
}

int main(void) {
    static const struct tj_test tests[] = {
        TEST(every_key_of_the_table_sets_and_reads_back_globally_and_per_kind),
        TEST(a_key_set_by_text_is_what_the_queue_uses),
        TEST(refused_values_name_the_key_and_keep_the_options_from_opening),
        TEST(the_text_getter_reports_its_length_and_refuses_short_buffers),
    };
    return run_tests("test_config", tests, sizeof tests / sizeof tests[0]);
}
