// The ceiling `strata-bench` measures the HTTP path against: libmicrohttpd alone, configured as
// `strata serve` configures it (an internal polling thread pool with epoll, one thread per core),
// answering every request with the same small JSON body. No Swift, no routing, no logging.
//
// Usage: strata-ceiling [PORT]   (0 or none: a free port). Prints "port N" once it listens, then
// serves until it reads end of input on stdin or is signalled.
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char body[] = "{\"status\":\"live\"}";

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **state) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    // Answering on the first call, before libmicrohttpd knows there is no body, makes it close
    // the connection; like `strata serve`, answer on the call after the (empty) body.
    static int seen;
    if (*state == NULL) {
        *state = &seen;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *response =
        MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(response, "Content-Type", "application/json");
    enum MHD_Result result = MHD_queue_response(connection, MHD_HTTP_OK, response);
    MHD_destroy_response(response);
    return result;
}

int main(int argc, char **argv) {
    unsigned port = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, (uint16_t)port, NULL, NULL, answer, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(cores > 0 ? cores : 1), MHD_OPTION_CONNECTION_LIMIT, 4096u,
        MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "strata-ceiling: cannot listen on port %u\n", port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    printf("port %u\n", info != NULL ? (unsigned)info->port : port);
    fflush(stdout);
    char buffer[64];
    while (fgets(buffer, sizeof buffer, stdin) != NULL) {}
    MHD_stop_daemon(daemon);
    return 0;
}
