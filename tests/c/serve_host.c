/* A C host for tests/c/serve_python.py: opens the store argv[1], serves it
 * on a free loopback port (printing "serving URL"), with the token argv[2]
 * and the TLS certificate and key files argv[3] and argv[4] when given,
 * then does what stdin says, one word a line, answering each on stdout:
 *   close  tj_queue_close while the server runs   -> "closed"
 *   free   tj_queue_free while the server runs    -> "freed"
 *   stop   tj_server_stop (1 s grace)             -> "stopped"
 * At end of input: tj_server_close, then the queue freed if it was not.
 * Built with ASan + UBSan: this process is the ASan host, the Python
 * client another process. */
#include <stdio.h>
#include <string.h>

#include "telha_jobs.h"

static int fail_with(const char *what, tj_error *err) {
    fprintf(stderr, "%s: %s (%s)\n", what, tj_error_message(err),
            tj_status_name(tj_error_status(err)));
    tj_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3 && argc != 5) {
        fprintf(stderr, "usage: serve_host STORE [TOKEN [CERT.pem KEY.pem]]\n");
        return 2;
    }
    tj_error *err = NULL;
    tj_queue *q = NULL;
    if (tj_queue_open(argv[1], NULL, &q, &err) != TJ_STATUS_OK) return fail_with("open", err);
    tj_serve_options *so = tj_serve_options_new();
    if (argc >= 3 && tj_serve_options_set_token(so, argv[2], &err) != TJ_STATUS_OK)
        return fail_with("token", err);
    if (argc == 5 && (tj_serve_options_set_tls_cert(so, argv[3], &err) != TJ_STATUS_OK ||
                      tj_serve_options_set_tls_key(so, argv[4], &err) != TJ_STATUS_OK))
        return fail_with("tls", err);
    tj_server *server = NULL;
    tj_status s = tj_queue_serve(q, "127.0.0.1:0", so, &server, &err);
    tj_serve_options_free(so);
    if (s != TJ_STATUS_OK) return fail_with("serve", err);
    printf("serving %s\n", tj_server_url(server));
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "close") == 0) {
            tj_queue_close(q);
            puts("closed");
        } else if (strcmp(line, "free") == 0) {
            tj_queue_free(q);
            q = NULL;
            puts("freed");
        } else if (strcmp(line, "stop") == 0) {
            if (tj_server_stop(server, 1000, &err) != TJ_STATUS_OK) return fail_with("stop", err);
            puts(tj_server_running(server) ? "still running" : "stopped");
        } else {
            printf("unknown command %s\n", line);
        }
        fflush(stdout);
    }
    tj_server_close(server);
    tj_queue_free(q);
    return 0;
}
