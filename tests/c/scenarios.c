/* The conformance scenarios (tests/scenarios/<name>.json, format in that
 * directory's README) run through the C API.
 *
 *   scenarios [CASES_DIR]          run every case; default tests/scenarios
 *   scenarios --hold STORE         the "other process" of hold_elsewhere
 *
 * Prints one line per case, then "c scenarios: ran N of M case files" and
 * "N passed, N failed"; exits 1 when a case failed or fewer ran than there
 * are files. The cases are read with the small reader in mini_json.h; the
 * steps are API calls in scenario_ops.c. To run them against another store
 * implementation, change open_store() and nothing else. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scenario.h"

#define MIN_CASES 30
#define HOLDER_READY "telha-scenario-holder ready"

tj_status runner_error(struct run *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    return RUNNER_ERROR;
}

static void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* One config key of the case through the library's key table: `<key>_ms`
 * is the duration `<key>` in ms, `false` turns a retention or limit off,
 * any other key a number. */
static tj_status set_key(struct run *r, tj_options *o, const char *kind, const char *k,
                         const jval *v, tj_error **err) {
    char name[64], text[64];
    size_t n = strlen(k);
    if (n >= sizeof name) return runner_error(r, "config key %s is too long", k);
    if (v->t == J_BOOL && !v->b) {
        snprintf(name, sizeof name, "%.*s", (int)(n > 3 && strcmp(k + n - 3, "_ms") == 0 ? n - 3 : n), k);
        return kind ? tj_options_set_kind(o, kind, name, "off", err) : tj_options_set(o, name, "off", err);
    }
    if (v->t != J_NUM) return runner_error(r, "config %s must be a number or false", k);
    if (n > 3 && strcmp(k + n - 3, "_ms") == 0) {
        snprintf(name, sizeof name, "%.*s", (int)(n - 3), k);
        snprintf(text, sizeof text, "%.0fms", v->num);
    } else {
        snprintf(name, sizeof name, "%s", k);
        snprintf(text, sizeof text, "%.17g", v->num);
    }
    return kind ? tj_options_set_kind(o, kind, name, text, err) : tj_options_set(o, name, text, err);
}

/* The one place this runner opens a store: the case's config over the
 * defaults (`kinds` holds per-kind keys), the background reaper off (the
 * cases reap explicitly), exact retry delays unless the case sets a
 * `backoff_jitter`. */
static tj_status open_store(struct run *r, tj_queue **q, tj_error **err) {
    tj_options *o = tj_options_new();
    tj_status st = tj_options_set(o, "reaper_interval", "0", err);
    if (st == TJ_STATUS_OK) st = tj_options_set(o, "backoff_jitter", "0", err);
    const jval *c = r->config;
    for (size_t i = 0; c && c->t == J_OBJ && i < c->len && st == TJ_STATUS_OK; i++) {
        const jval *v = c->items[i];
        if (strcmp(c->keys[i], "kinds") != 0) {
            st = set_key(r, o, NULL, c->keys[i], v, err);
            continue;
        }
        for (size_t j = 0; v->t == J_OBJ && j < v->len && st == TJ_STATUS_OK; j++)
            for (size_t m = 0; v->items[j]->t == J_OBJ && m < v->items[j]->len && st == TJ_STATUS_OK; m++)
                st = set_key(r, o, v->keys[j], v->items[j]->keys[m], v->items[j]->items[m], err);
    }
    if (st == TJ_STATUS_OK) st = tj_queue_open(r->store, o, q, err);
    tj_options_free(o);
    return st;
}

static bool read_file(const char *path, char **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t cap = 256, n = 0, got;
    char *b = jx_alloc(cap);
    while ((got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { cap *= 2; b = realloc(b, cap); if (!b) abort(); }
    }
    fclose(f);
    *buf = b;
    *len = n;
    return true;
}

static bool write_file(const char *path, const char *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(buf, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* write_store_file / restore_store_file: overwrite one of the store's files
 * with the step's `text` (keeping the old bytes), or put them back. */
static tj_status store_file(struct run *r, const jval *s, bool restore) {
    const char *name = jget_str(s, "file", "");
    char path[400];
    if (!name[0] || strchr(name, '/') || strlen(name) >= sizeof r->saved_name)
        return runner_error(r, "bad store file name %s", name);
    snprintf(path, sizeof path, "%s/%s", r->store, name);
    if (restore) {
        if (!r->saved || strcmp(r->saved_name, name) != 0) return runner_error(r, "nothing saved to restore");
        bool ok = write_file(path, r->saved, r->saved_len);
        free(r->saved);
        r->saved = NULL;
        return ok ? TJ_STATUS_OK : runner_error(r, "cannot write %s", path);
    }
    if (!r->saved) {
        if (!read_file(path, &r->saved, &r->saved_len)) return runner_error(r, "cannot read %s", path);
        snprintf(r->saved_name, sizeof r->saved_name, "%s", name);
    }
    const char *text = jget_str(s, "text", "");
    return write_file(path, text, strlen(text)) ? TJ_STATUS_OK : runner_error(r, "cannot write %s", path);
}

/* The directory beside the store named by the step's `dir` (a plain name):
 * where `backup` writes and `open_backup` opens. */
static bool sibling(struct run *r, const jval *s, char *out, size_t n) {
    const char *name = jget_str(s, "dir", "");
    if (!name[0] || strchr(name, '/') || strcmp(name, "store") == 0) {
        runner_error(r, "bad backup dir name %s", name);
        return false;
    }
    snprintf(out, n, "%s/%s", r->dir, name);
    return true;
}

/* backup: tj_queue_backup to the sibling `dir`; open_backup: the case's
 * store is now that backup (a later reopen too). */
static tj_status backup_op(struct run *r, const jval *s, bool open, tj_error **err) {
    char path[300];
    if (!sibling(r, s, path, sizeof path)) return RUNNER_ERROR;
    if (!open) return tj_queue_backup(r->q, path, NULL, err);
    snprintf(r->store, sizeof r->store, "%s", path);
    tj_queue *q = NULL;
    tj_status st = open_store(r, &q, err);
    if (st == TJ_STATUS_OK) { tj_queue_free(r->q); r->q = q; }
    return st;
}

/* open_at_file: a store path that is a regular file (the open's I/O error). */
static tj_status open_at_file(struct run *r, tj_error **err) {
    struct run other = *r;
    snprintf(other.store, sizeof other.store, "%s/not-a-directory", r->dir);
    const char *text = "a file, not a store";
    if (!write_file(other.store, text, strlen(text))) return runner_error(r, "cannot write %s", other.store);
    tj_queue *q = NULL;
    tj_status st = open_store(&other, &q, err);
    tj_queue_free(q);
    if (st == RUNNER_ERROR) memcpy(r->msg, other.msg, sizeof r->msg);
    return st;
}

/* hold_elsewhere: this program again, as another process (fork + exec of
 * /proc/self/exe), holding the store until its stdin closes. */
static tj_status start_holder(struct run *r) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return runner_error(r, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return runner_error(r, "fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]); close(in[1]); close(out[0]); close(out[1]);
        execl("/proc/self/exe", "scenarios", "--hold", r->store, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    r->holder = pid;
    r->holder_stdin = in[1];
    char line[256] = {0};
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t k = read(out[0], line + n, 1);
        if (k <= 0 || line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    close(out[0]);
    if (strcmp(line, HOLDER_READY) != 0) return runner_error(r, "the holder process did not start: %s", line);
    return TJ_STATUS_OK;
}

static void stop_holder(struct run *r) {
    if (r->holder <= 0) return;
    close(r->holder_stdin);
    int status;
    waitpid(r->holder, &status, 0);
    r->holder = 0;
}

static int hold(const char *path) {
    tj_options *o = tj_options_new();
    tj_options_set(o, "reaper_interval", "0", NULL);
    tj_queue *q = NULL;
    tj_error *err = NULL;
    tj_status st = tj_queue_open(path, o, &q, &err);
    tj_options_free(o);
    if (st != TJ_STATUS_OK) {
        printf("holder could not open %s: %s\n", path, tj_error_message(err));
        tj_error_free(err);
        return 1;
    }
    printf("%s\n", HOLDER_READY);
    fflush(stdout);
    char buf[256];
    while (read(0, buf, sizeof buf) > 0) {
    }
    tj_queue_free(q);
    return 0;
}

static tj_status do_step(struct run *r, const char *op, const jval *s, jval **obs, tj_error **err) {
    double n;
    if (strcmp(op, "enqueue") == 0) return op_enqueue(r, s, obs, err);
    if (strcmp(op, "enqueue_many") == 0) return op_enqueue_many(r, s, err);
    if (strcmp(op, "enqueue_group") == 0) return op_enqueue_group(r, s, err);
    if (strcmp(op, "results_of_children") == 0) return op_results_of_children(r, s, obs, err);
    if (strcmp(op, "lease") == 0) return op_lease(r, s, obs, err);
    if (strcmp(op, "extend") == 0) return op_extend(r, s, obs, err);
    if (strcmp(op, "complete") == 0 || strcmp(op, "fail") == 0 || strcmp(op, "release") == 0)
        return op_settle(r, op, s, err);
    if (strcmp(op, "retry") == 0) return op_retry(r, s, err);
    if (strcmp(op, "snooze") == 0) return op_snooze(r, s, err);
    if (strcmp(op, "cancel") == 0) return op_cancel(r, s, obs, err);
    if (strcmp(op, "cancel_many") == 0) return op_cancel_many(r, s, obs, err);
    if (strcmp(op, "complete_many") == 0) return op_complete_many(r, s, obs, err);
    if (strcmp(op, "fail_many") == 0) return op_fail_many(r, s, obs, err);
    if (strcmp(op, "release_many") == 0) return op_release_many(r, s, obs, err);
    if (strcmp(op, "purge") == 0) return op_purge(r, s, obs, err);
    if (strcmp(op, "delete") == 0) return op_delete(r, s, err);
    if (strcmp(op, "promote") == 0) return op_promote(r, s, err);
    if (strcmp(op, "reschedule") == 0) return op_reschedule(r, s, err);
    if (strcmp(op, "set_priority") == 0) return op_set_priority(r, s, err);
    if (strcmp(op, "pause") == 0) return op_pause(r, s, true, obs, err);
    if (strcmp(op, "resume") == 0) return op_pause(r, s, false, obs, err);
    if (strcmp(op, "paused") == 0) return op_paused(r, obs, err);
    if (strcmp(op, "set_limit") == 0) return op_set_limit(r, s, err);
    if (strcmp(op, "remove_limit") == 0) return op_remove_limit(r, s, obs, err);
    if (strcmp(op, "limits") == 0) return op_limits(r, obs, err);
    if (strcmp(op, "get") == 0) return op_get(r, s, obs, err);
    if (strcmp(op, "wait") == 0) return op_wait(r, s, obs, err);
    if (strcmp(op, "subscribe") == 0) return op_subscribe(r, s, err);
    if (strcmp(op, "events") == 0) return op_events(r, s, obs, err);
    if (strcmp(op, "list") == 0) return op_list(r, s, obs, err);
    if (strcmp(op, "count_tag") == 0) return op_count_tag(r, s, obs, err);
    if (strcmp(op, "find") == 0) return op_find(r, s, obs, err);
    if (strcmp(op, "reap") == 0) return op_reap(r, obs, err);
    if (strcmp(op, "stats") == 0) return op_stats(r, s, obs, err);
    if (strcmp(op, "schedule_put") == 0) return op_schedule_put(r, s, obs, err);
    if (strcmp(op, "schedule_next") == 0) return op_schedule_next(r, s, obs, err);
    if (strncmp(op, "schedule_", 9) == 0 || strcmp(op, "run_schedules") == 0) return op_schedule(r, op, s, obs, err);
    if (strcmp(op, "sleep_ms") == 0) {
        if (!jget_num(s, "ms", &n)) return runner_error(r, "sleep_ms needs ms");
        sleep_ms((uint64_t)n);
        return TJ_STATUS_OK;
    }
    if (strcmp(op, "close") == 0) { tj_queue_close(r->q); return TJ_STATUS_OK; }
    if (strcmp(op, "reopen") == 0) {
        tj_queue *q = NULL;
        tj_status st = open_store(r, &q, err);
        if (st == TJ_STATUS_OK) { tj_queue_free(r->q); r->q = q; }
        return st;
    }
    if (strcmp(op, "backup") == 0) return backup_op(r, s, false, err);
    if (strcmp(op, "open_backup") == 0) return backup_op(r, s, true, err);
    if (strcmp(op, "open_at_file") == 0) return open_at_file(r, err);
    if (strcmp(op, "write_store_file") == 0) return store_file(r, s, false);
    if (strcmp(op, "restore_store_file") == 0) return store_file(r, s, true);
    if (strcmp(op, "hold_elsewhere") == 0) return start_holder(r);
    if (strcmp(op, "release_elsewhere") == 0) { stop_holder(r); return TJ_STATUS_OK; }
    return runner_error(r, "unknown op %s", op);
}

static const jval ZERO = {J_NUM, false, 0, NULL, 0, NULL, NULL, 0};

/* `want` must be a subset of `got` (objects: every wanted key, recursively;
 * arrays: the same length, element by element; anything else: equal). A
 * kind missing from stats' by_kind (a scope from by_scope) counts zero. */
static bool subset(struct run *r, const jval *want, const jval *got, const char *at) {
    char path[256];
    if (want->t == J_OBJ) {
        if (!got || got->t != J_OBJ) {
            snprintf(r->msg, sizeof r->msg, "%s: wanted an object, got ", at);
            jprint(got, r->msg, sizeof r->msg);
            return false;
        }
        for (size_t i = 0; i < want->len; i++) {
            snprintf(path, sizeof path, "%s.%s", at, want->keys[i]);
            const jval *g = jget(got, want->keys[i]);
            if (!g && (strcmp(at, ".by_kind") == 0 || strcmp(at, ".by_scope") == 0)) {
                const jval *w = want->items[i];
                for (size_t k = 0; k < w->len; k++)
                    if (!jequal(w->items[k], &ZERO)) {
                        snprintf(r->msg, sizeof r->msg, "%s: no such kind or scope in stats", path);
                        return false;
                    }
                continue;
            }
            if (!g) { snprintf(r->msg, sizeof r->msg, "%s: the runner has no such field", path); return false; }
            if (!subset(r, want->items[i], g, path)) return false;
        }
        return true;
    }
    if (want->t == J_ARR && got && got->t == J_ARR && want->len == got->len) {
        for (size_t i = 0; i < want->len; i++) {
            snprintf(path, sizeof path, "%s[%zu]", at, i);
            if (!subset(r, want->items[i], got->items[i], path)) return false;
        }
        return true;
    }
    if (got && jequal(want, got)) return true;
    snprintf(r->msg, sizeof r->msg, "%s: wanted ", at);
    jprint(want, r->msg, sizeof r->msg);
    strncat(r->msg, ", got ", sizeof r->msg - strlen(r->msg) - 1);
    jprint(got, r->msg, sizeof r->msg);
    return false;
}

/* Run one step and compare its answer with `expect`: {"error": CODE} wants
 * that status; {"none": true} wants no job; another object must be a
 * subset of the answer; no expect wants success. */
static bool step(struct run *r, const jval *s) {
    const char *op = jget_str(s, "op", "?");
    const jval *expect = jget(s, "expect");
    const char *want_err = jget_str(expect, "error", NULL);
    jval *obs = NULL;
    tj_error *err = NULL;
    r->msg[0] = 0;
    tj_status st = do_step(r, op, s, &obs, &err);
    bool ok = false;
    const char *emsg = err ? tj_error_message(err) : "";
    if (st == RUNNER_ERROR) {
        ok = false;
    } else if (want_err) {
        if (st == TJ_STATUS_OK) snprintf(r->msg, sizeof r->msg, "wanted %s, got success", want_err);
        else if (strcmp(tj_status_name(st), want_err) != 0)
            snprintf(r->msg, sizeof r->msg, "wanted %s, got %s: %s", want_err, tj_status_name(st), emsg);
        else ok = true;
    } else if (st != TJ_STATUS_OK) {
        snprintf(r->msg, sizeof r->msg, "unexpected %s: %s", tj_status_name(st), emsg);
    } else if (!expect) {
        ok = true;
    } else if (jget(expect, "none")) {
        ok = obs && obs->t == J_NULL;
        if (!ok) {
            snprintf(r->msg, sizeof r->msg, "wanted none, got ");
            jprint(obs, r->msg, sizeof r->msg);
        }
    } else {
        ok = subset(r, expect, obs, "");
    }
    jfree(obs);
    tj_error_free(err);
    return ok;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static bool run_case(const char *file, char *why, size_t whylen) {
    char perr[512];
    jval *c = jparse_file(file, perr, sizeof perr);
    if (!c) { snprintf(why, whylen, "bad JSON: %s", perr); return false; }
    struct run *r = jx_alloc(sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/telha-c-scenario-XXXXXX");
    bool ok = mkdtemp(r->dir) != NULL;
    snprintf(r->store, sizeof r->store, "%s/store", r->dir);
    r->config = jget(c, "config");
    tj_error *err = NULL;
    tj_status st = ok ? open_store(r, &r->q, &err) : TJ_STATUS_STORAGE;
    if (st != TJ_STATUS_OK) {
        snprintf(why, whylen, "open: %s %s", tj_status_name(st), err ? tj_error_message(err) : r->msg);
        ok = false;
    }
    tj_error_free(err);
    const jval *steps = jget(c, "steps");
    if (ok && (!steps || steps->t != J_ARR)) { snprintf(why, whylen, "the case has no steps"); ok = false; }
    for (size_t i = 0; ok && i < steps->len; i++) {
        if (!step(r, steps->items[i])) {
            snprintf(why, whylen, "step %zu (%s): %s", i + 1, jget_str(steps->items[i], "op", "?"), r->msg);
            ok = false;
        }
    }
    tj_queue_free(r->q);
    stop_holder(r);
    nftw(r->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(r->saved);
    for (size_t i = 0; i < r->nids; i++) free(r->ids[i].name);
    for (size_t i = 0; i < r->nleases; i++) free(r->leases[i].name);
    for (size_t i = 0; i < r->nsubs; i++) { tj_subscription_free(r->subs[i].sub); free(r->subs[i].name); }
    for (size_t i = 0; i < r->ncursors; i++) { free(r->cursors[i].name); free(r->cursors[i].cursor); }
    free(r);
    jfree(c);
    return ok;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--hold") == 0) return hold(argv[2]);
    signal(SIGPIPE, SIG_IGN);
    const char *dir = argc > 1 ? argv[1] : "tests/scenarios";
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "cannot open %s\n", dir); puts("0 passed, 1 failed"); return 1; }
    char **files = NULL;
    size_t nfiles = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
        files = realloc(files, (nfiles + 1) * sizeof *files);
        files[nfiles++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(files, nfiles, sizeof *files, cmp_names);
    size_t passed = 0, failed = 0;
    for (size_t i = 0; i < nfiles; i++) {
        char path[1024], why[4400];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (run_case(path, why, sizeof why)) {
            passed++;
            printf("ok     %s\n", files[i]);
        } else {
            failed++;
            printf("FAILED %s: %s\n", files[i], why);
        }
        fflush(stdout);
        free(files[i]);
    }
    free(files);
    printf("c scenarios: ran %zu of %zu case files in %s\n", passed + failed, nfiles, dir);
    if (nfiles < MIN_CASES) {
        printf("expected at least %d case files\n", MIN_CASES);
        failed++;
    }
    printf("%zu passed, %zu failed\n", passed, failed);
    return failed > 0 || passed + failed < nfiles ? 1 : 0;
}
