#ifndef STRATA_CMICROHTTPD_SHIM_H
#define STRATA_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <microhttpd.h>

/// `MHD_start_daemon` is variadic, which Swift cannot call. This wrapper passes every option
/// through one `MHD_OPTION_ARRAY` terminated by an `MHD_OPTION_END` item.
static inline struct MHD_Daemon *cmhd_start_daemon(unsigned int flags, uint16_t port,
                                                   MHD_AccessHandlerCallback handler,
                                                   void *handler_cls,
                                                   const struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// Names the calling thread as the kernel knows it (what `top -H`, `perf` and a debugger show).
/// `prctl` is variadic, which Swift cannot call.
static inline void cmhd_name_this_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/// The bound port of a running daemon (useful when started on port 0), or 0.
static inline uint16_t cmhd_daemon_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// One `MHD_OptionItem` carrying a number (limits, timeouts).
static inline struct MHD_OptionItem cmhd_option_value(enum MHD_OPTION option, intptr_t value) {
    struct MHD_OptionItem item = {option, value, NULL};
    return item;
}

/// One `MHD_OptionItem` carrying a single pointer (e.g. `MHD_OPTION_SOCK_ADDR`).
static inline struct MHD_OptionItem cmhd_option_pointer(enum MHD_OPTION option, void *pointer) {
    struct MHD_OptionItem item = {option, 0, pointer};
    return item;
}

/// The `MHD_OPTION_END` item that terminates an option array.
static inline struct MHD_OptionItem cmhd_option_end(void) {
    struct MHD_OptionItem item = {MHD_OPTION_END, 0, NULL};
    return item;
}

/// `MHD_OPTION_NOTIFY_COMPLETED`: in an option array a function pointer travels as `intptr_t`.
static inline struct MHD_OptionItem cmhd_option_notify_completed(MHD_RequestCompletedCallback callback,
                                                                 void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)callback, cls};
    return item;
}

/// The signature of an `MHD_OPTION_UNESCAPE_CALLBACK` function (the header has no typedef for it).
typedef size_t (*cmhd_unescape_callback)(void *cls, struct MHD_Connection *connection, char *string);

/// `MHD_OPTION_UNESCAPE_CALLBACK`, which replaces libmicrohttpd's `%HH` decoding of the URL path
/// and query arguments.
static inline struct MHD_OptionItem cmhd_option_unescape(cmhd_unescape_callback callback, void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)callback, cls};
    return item;
}

/// `MHD_OPTION_EXTERNAL_LOGGER`, which receives libmicrohttpd's error messages.
static inline struct MHD_OptionItem cmhd_option_logger(MHD_LogCallback callback, void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)callback, cls};
    return item;
}

/// The peer address of a connection (`MHD_get_connection_info` is variadic), or NULL.
static inline const struct sockaddr *cmhd_connection_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// `MHD_OPTION_NOTIFY_CONNECTION`: told when a connection opens and before it closes.
static inline struct MHD_OptionItem cmhd_option_notify_connection(MHD_NotifyConnectionCallback callback,
                                                                  void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)callback, cls};
    return item;
}

/// The signature of an `MHD_OPTION_URI_LOG_CALLBACK` function: called when a request line has
/// been read, before the headers; what it returns is the request's first `*con_cls`.
typedef void *(*cmhd_uri_log_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/// `MHD_OPTION_URI_LOG_CALLBACK`.
static inline struct MHD_OptionItem cmhd_option_uri_log(cmhd_uri_log_callback callback, void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)callback, cls};
    return item;
}

/// The socket of a connection, or -1.
static inline int cmhd_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// What `MHD_OPTION_NOTIFY_CONNECTION`'s callback stored in a connection's socket context, or NULL.
static inline void *cmhd_connection_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

#endif
