/* A small test harness for the C API tests (one per program; header-only).
 *
 * Each test is a `static void name(void)`; CHECK records a failure and goes
 * on, so one run reports every broken expectation. `run_tests` ends with the
 * summary line "N passed, N failed". */
#ifndef TJ_TEST_HARNESS_H
#define TJ_TEST_HARNESS_H

#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telha_jobs.h"

struct tj_test {
    const char *name;
    void (*fn)(void);
};

static int tj_test_failed;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__,         \
                    __LINE__, #cond);                                        \
            tj_test_failed = 1;                                              \
        }                                                                    \
    } while (0)

/* Checks that `call` returns `want`. `call` may pass `&err` (a `tj_error *err
 * = NULL` in scope): the message is shown on a mismatch, a failing call must
 * have produced one, and it is freed. */
#define CHECK_STATUS(want, call)                                             \
    do {                                                                     \
        tj_status got_ = (call);                                             \
        if (got_ != (tj_status)(want)) {                                     \
            fprintf(stderr, "  %s:%d: %s\n    want %s, got %s: %s\n",       \
                    __FILE__, __LINE__, #call, tj_status_name(want),         \
                    tj_status_name(got_), tj_error_message(err));            \
            tj_test_failed = 1;                                              \
        } else if (got_ != TJ_STATUS_OK && strstr(#call, "&err") != NULL &&  \
                   (err == NULL || tj_error_status(err) != got_ ||           \
                    tj_error_message(err)[0] == '\0')) {                     \
            fprintf(stderr, "  %s:%d: %s\n    no matching tj_error\n",       \
                    __FILE__, __LINE__, #call);                              \
            tj_test_failed = 1;                                              \
        }                                                                    \
        tj_error_free(err);                                                  \
        err = NULL;                                                          \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(TJ_STATUS_OK, call)

/* Stops the test (not the program) when a precondition fails. */
#define REQUIRE(cond)                                                        \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "  %s:%d: REQUIRE failed: %s\n", __FILE__,       \
                    __LINE__, #cond);                                        \
            tj_test_failed = 1;                                              \
            return;                                                          \
        }                                                                    \
    } while (0)

static inline int tj_rm_entry(const char *path, const struct stat *sb, int flag,
                       struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A fresh directory for one test's store; remove it with `tmpdir_remove`. */
static inline void tmpdir_make(char buf[64]) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, 64, "%s/tj-c-XXXXXX", base && base[0] ? base : "/tmp");
    if (mkdtemp(buf) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
}

static inline void tmpdir_remove(const char *dir) {
    nftw(dir, tj_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* How many jobs the heavy tests use: TJ_TEST_JOBS, else `dflt` (valgrind
 * runs pass a small number). */
static inline long test_jobs(long dflt) {
    const char *v = getenv("TJ_TEST_JOBS");
    long n = v && v[0] ? strtol(v, NULL, 10) : dflt;
    return n > 0 ? n : dflt;
}

static inline int run_tests(const char *program, const struct tj_test *tests,
                     size_t n) {
    int passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        tj_test_failed = 0;
        tests[i].fn();
        printf("%s %s::%s\n", tj_test_failed ? "FAIL" : "ok  ", program,
               tests[i].name);
        fflush(stdout);
        if (tj_test_failed)
            failed++;
        else
            passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* Sleep `ms` milliseconds (only where real time must pass: the C API has no
 * injectable clock). */
static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Wall-clock ms since the Unix epoch, as the library's timestamps. */
static inline uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#define TEST(name) {#name, name}

#endif
