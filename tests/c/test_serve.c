/* A C host serving its store (issue 46): tj_queue_serve on a picked port,
 * the operator page and /metrics read over HTTP from this process, the
 * queue closed (and freed) while the server runs, and every hostile
 * argument answered with a typed status. gRPC clients in another process
 * (Python) are tests/c/serve_python.py's. */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

/* GET `path` from `host:port` over plain HTTP/1.1; the whole answer
 * (status line, headers, body) into `out`. Returns the status code, or -1. */
static int http_get(const char *address, const char *path, char *out, size_t cap) {
    char host[64];
    snprintf(host, sizeof host, "%s", address);
    char *colon = strrchr(host, ':');
    if (!colon) return -1;
    *colon = '\0';
    int port = atoi(colon + 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = {10, 0}; /* a hung server fails the test, not the run */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    char req[256];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, address);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, out + got, cap - 1 - got);
        if (r <= 0) break;
        got += (size_t)r;
        if (got == cap - 1) break;
    }
    out[got] = '\0';
    close(fd);
    int code = -1;
    if (sscanf(out, "HTTP/1.%*d %d", &code) != 1) return -1;
    return code;
}

/* A TCP port this process holds bound and listening (the "port in use"). */
static int hold_a_port(int *port_out) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        perror("hold_a_port");
        exit(2);
    }
    *port_out = ntohs(sa.sin_port);
    return fd;
}

static void port_0_serves_on_a_picked_port_and_stops_idempotently(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, NULL, &q, &err));
    REQUIRE(q != NULL);
    tj_server *s = NULL;
    CHECK_OK(tj_queue_serve(q, "127.0.0.1:0", NULL, &s, &err));
    REQUIRE(s != NULL);
    const char *addr = tj_server_address(s);
    CHECK(addr && strncmp(addr, "127.0.0.1:", 10) == 0);
    CHECK(addr && atoi(addr + 10) > 0);
    char want[96];
    snprintf(want, sizeof want, "http://%s", addr);
    CHECK(strcmp(tj_server_url(s), want) == 0);
    CHECK(tj_server_metrics_address(s) == NULL);
    CHECK(tj_server_ui_url(s) == NULL);
    CHECK(tj_server_running(s));

    /* The store is the host's: it keeps working through the C calls. */
    tj_id id;
    CHECK_OK(tj_queue_enqueue(q, "served:c", NULL, 0, NULL, &id, NULL, &err));

    CHECK_OK(tj_server_stop(s, 1000, &err));
    CHECK(!tj_server_running(s));
    CHECK_OK(tj_server_stop(s, 0, &err)); /* idempotent */
    CHECK(strcmp(tj_server_address(s), addr) == 0); /* still readable */
    /* Stopped, its port is free again: a new server binds it. */
    tj_server *again = NULL;
    CHECK_OK(tj_queue_serve(q, addr, NULL, &again, &err));
    CHECK(again && strcmp(tj_server_address(again), addr) == 0);
    tj_server_close(again);
    tj_server_close(s);
    /* The queue outlives its servers. */
    tj_job_info *info = NULL;
    CHECK_OK(tj_queue_get(q, &id, &info, &err));
    CHECK(info && tj_job_info_state(info) == TJ_STATE_PENDING);
    tj_job_info_free(info);
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void the_page_and_metrics_show_the_hosts_store(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, NULL, &q, &err));
    REQUIRE(q != NULL);
    tj_id id;
    CHECK_OK(tj_queue_enqueue(q, "served:page", NULL, 0, NULL, &id, NULL, &err));
    tj_serve_options *o = tj_serve_options_new();
    CHECK_OK(tj_serve_options_set_metrics_listen(o, "127.0.0.1:0", &err));
    CHECK_OK(tj_serve_options_set_ui(o, true, &err));
    CHECK_OK(tj_serve_options_set_ui_read_only(o, true, &err));
    tj_server *s = NULL;
    CHECK_OK(tj_queue_serve(q, "127.0.0.1:0", o, &s, &err));
    tj_serve_options_free(o); /* copied */
    REQUIRE(s != NULL);
    REQUIRE(tj_server_metrics_address(s) != NULL);
    char http[64]; /* copied: the server's strings go with tj_server_close */
    snprintf(http, sizeof http, "%s", tj_server_metrics_address(s));
    char want[96];
    snprintf(want, sizeof want, "http://%s/", http);
    CHECK(tj_server_ui_url(s) && strcmp(tj_server_ui_url(s), want) == 0);

    static char body[1 << 16];
    CHECK(http_get(http, "/metrics", body, sizeof body) == 200);
    CHECK(strstr(body, "telha_jobs_") != NULL);
    CHECK(http_get(http, "/", body, sizeof body) == 200);
    CHECK(strstr(body, "<html") != NULL || strstr(body, "<!doctype") != NULL ||
          strstr(body, "<!DOCTYPE") != NULL);
    char path[96], text[TJ_ID_STRLEN];
    CHECK_OK(tj_id_format(&id, text, sizeof text, &err));
    snprintf(path, sizeof path, "/api/v1/jobs/%s", text);
    CHECK(http_get(http, path, body, sizeof body) == 200);
    CHECK(strstr(body, "served:page") != NULL);
    CHECK(http_get(http, "/readyz", body, sizeof body) == 200);

    tj_server_close(s);
    CHECK(http_get(http, "/readyz", body, sizeof body) == -1); /* nobody listens */
    tj_queue_free(q);
    tmpdir_remove(dir);
}

static void closing_the_queue_while_serving_closes_it_for_the_server_too(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, NULL, &q, &err));
    REQUIRE(q != NULL);
    tj_serve_options *o = tj_serve_options_new();
    CHECK_OK(tj_serve_options_set_metrics_listen(o, "127.0.0.1:0", &err));
    tj_server *s = NULL;
    CHECK_OK(tj_queue_serve(q, "127.0.0.1:0", o, &s, &err));
    tj_serve_options_free(o);
    REQUIRE(s != NULL);
    REQUIRE(tj_server_metrics_address(s) != NULL);
    char http[64]; /* copied: the server's strings go with tj_server_close */
    snprintf(http, sizeof http, "%s", tj_server_metrics_address(s));
    static char body[1 << 16];
    CHECK(http_get(http, "/readyz", body, sizeof body) == 200);

    tj_queue_close(q);
    /* Still listening, but the store is closed under it: not ready, and
     * every read answers 503 (gRPC clients get UNAVAILABLE). */
    CHECK(tj_server_running(s));
    CHECK(http_get(http, "/readyz", body, sizeof body) == 503);
    CHECK(strstr(body, "closed") != NULL);
    CHECK(http_get(http, "/metrics", body, sizeof body) == 503);
    /* The store was released: this process opens it afresh while the old
     * server still runs. */
    tj_queue *reopened = NULL;
    CHECK_OK(tj_queue_open(dir, NULL, &reopened, &err));
    CHECK(http_get(http, "/readyz", body, sizeof body) == 503); /* not the new handle */
    tj_queue_free(reopened);
    /* A closed queue cannot be served. */
    tj_server *none = (tj_server *)0x1;
    CHECK_STATUS(TJ_STATUS_CLOSED, tj_queue_serve(q, "127.0.0.1:0", NULL, &none, &err));
    CHECK(none == (tj_server *)0x1); /* out-param untouched on failure */
    /* Freeing the queue first is safe: the server holds its own reference. */
    tj_queue_free(q);
    CHECK(http_get(http, "/readyz", body, sizeof body) == 503);
    tj_server_close(s);
    tmpdir_remove(dir);
}

static void hostile_arguments_get_typed_statuses(void) {
    tj_error *err = NULL;
    char dir[64];
    tmpdir_make(dir);
    tj_queue *q = NULL;
    CHECK_OK(tj_queue_open(dir, NULL, &q, &err));
    REQUIRE(q != NULL);
    tj_server *s = (tj_server *)0x1;
    const char bad_utf8[] = {'1', '2', '7', (char)0xff, 0};

    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_serve(NULL, "127.0.0.1:0", NULL, &s, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_queue_serve(q, "127.0.0.1:0", NULL, NULL, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_queue_serve(q, bad_utf8, NULL, &s, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_serve(q, "not an address", NULL, &s, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_serve(q, "127.0.0.1:99999", NULL, &s, &err));
    /* Beyond loopback only with a token. */
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_serve(q, "0.0.0.0:0", NULL, &s, &err));
    /* A port in use: held by this process's own socket. */
    int port = 0;
    int fd = hold_a_port(&port);
    char taken[32];
    snprintf(taken, sizeof taken, "127.0.0.1:%d", port);
    CHECK_STATUS(TJ_STATUS_STORAGE, tj_queue_serve(q, taken, NULL, &s, &err));
    CHECK(tj_queue_serve(q, taken, NULL, &s, &err) == TJ_STATUS_STORAGE &&
          strstr(tj_error_message(err), taken) != NULL);
    tj_error_free(err);
    err = NULL;
    close(fd);
    CHECK(s == (tj_server *)0x1); /* never written by a failing call */

    tj_serve_options *o = tj_serve_options_new();
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_serve_options_set_token(NULL, "t", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_serve_options_set_token(o, bad_utf8, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_serve_options_set_tls_cert(NULL, "c", &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_serve_options_set_tls_key(NULL, "k", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_UTF8, tj_serve_options_set_metrics_listen(o, bad_utf8, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_serve_options_set_ui(NULL, true, &err));
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_serve_options_set_ui_read_only(NULL, true, &err));
    /* A blank token is refused, not taken as "no token". */
    CHECK_OK(tj_serve_options_set_token(o, "  ", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_serve(q, "127.0.0.1:0", o, &s, &err));
    CHECK_OK(tj_serve_options_set_token(o, NULL, &err));
    /* TLS: both files or neither; unreadable and non-PEM files refused. */
    CHECK_OK(tj_serve_options_set_tls_cert(o, "/nonexistent/cert.pem", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_serve(q, "127.0.0.1:0", o, &s, &err));
    CHECK_OK(tj_serve_options_set_tls_key(o, "/nonexistent/key.pem", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_serve(q, "127.0.0.1:0", o, &s, &err));
    char junk[96];
    snprintf(junk, sizeof junk, "%s/junk.pem", dir);
    FILE *f = fopen(junk, "w");
    REQUIRE(f != NULL);
    fputs("not a certificate\n", f);
    fclose(f);
    CHECK_OK(tj_serve_options_set_tls_cert(o, junk, &err));
    CHECK_OK(tj_serve_options_set_tls_key(o, junk, &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_serve(q, "127.0.0.1:0", o, &s, &err));
    CHECK_OK(tj_serve_options_set_tls_cert(o, NULL, &err));
    CHECK_OK(tj_serve_options_set_tls_key(o, NULL, &err));
    /* /metrics and the page over TCP only. */
    CHECK_OK(tj_serve_options_set_metrics_listen(o, "unix:/tmp/tj-metrics.sock", &err));
    CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT, tj_queue_serve(q, "127.0.0.1:0", o, &s, &err));
    CHECK(s == (tj_server *)0x1);
    tj_serve_options_free(o);
    tj_serve_options_free(NULL);

    /* The server's own calls. */
    CHECK_STATUS(TJ_STATUS_NULL_ARGUMENT, tj_server_stop(NULL, 0, &err));
    CHECK(tj_server_address(NULL) == NULL);
    CHECK(tj_server_url(NULL) == NULL);
    CHECK(tj_server_metrics_address(NULL) == NULL);
    CHECK(tj_server_ui_url(NULL) == NULL);
    CHECK(!tj_server_running(NULL));
    tj_server_close(NULL);
    s = NULL;
    /* NULL listen: 127.0.0.1:7450 (unless something else holds it). */
    tj_status st = tj_queue_serve(q, NULL, NULL, &s, &err);
    CHECK(st == TJ_STATUS_OK || st == TJ_STATUS_STORAGE);
    tj_error_free(err);
    err = NULL;
    if (s) {
        CHECK(strcmp(tj_server_address(s), "127.0.0.1:7450") == 0);
        CHECK_STATUS(TJ_STATUS_INVALID_ARGUMENT,
                     tj_server_stop(s, TJ_MAX_DURATION_MS + 1, &err));
        CHECK(tj_server_running(s)); /* a refused stop stops nothing */
        tj_server_close(s);
    }
    tj_queue_free(q);
    tmpdir_remove(dir);
}

int main(void) {
    static const struct tj_test tests[] = {
        TEST(port_0_serves_on_a_picked_port_and_stops_idempotently),
        TEST(the_page_and_metrics_show_the_hosts_store),
        TEST(closing_the_queue_while_serving_closes_it_for_the_server_too),
        TEST(hostile_arguments_get_typed_statuses),
    };
    return run_tests("test_serve", tests, sizeof tests / sizeof tests[0]);
}
