/* POLLRDHUP (peer closed its side) is a GNU extension. */
#define _GNU_SOURCE
#include "MicroHTTPDShims.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

static int resolve_host(const char *host, uint16_t port, struct sockaddr_storage *out,
                        char *error, size_t error_capacity) {
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned) port);
    struct addrinfo *result = NULL;
    int status = getaddrinfo(host, service, &hints, &result);
    if (status != 0 || result == NULL) {
        if (error) snprintf(error, error_capacity, "cannot resolve host '%s': %s", host, gai_strerror(status));
        return -1;
    }
    memcpy(out, result->ai_addr, result->ai_addrlen);
    freeaddrinfo(result);
    return 0;
}

/* libmicrohttpd logs printf-style with a va_list, which Swift cannot format: format here.
   The daemon's options hold a pointer to this pair, alive as long as the daemon. */
typedef struct { mhd_shim_message_callback callback; void *cls; } log_target;

static void format_log(void *cls, const char *format, va_list arguments) {
    const log_target *target = cls;
    char message[512];
    vsnprintf(message, sizeof message, format, arguments);
    target->callback(target->cls, message);
}

struct MHD_Daemon *mhd_shim_start_daemon(const mhd_shim_daemon_config *config,
                                         char *error, size_t error_capacity) {
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    struct sockaddr_storage address;
    memset(&address, 0, sizeof address);
    int has_address = 0;
    if (config->host != NULL && config->host[0] != '\0') {
        if (resolve_host(config->host, config->port, &address, error, error_capacity) != 0) return NULL;
        has_address = 1;
        if (address.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    }

    if (config->error_log != NULL) flags |= MHD_USE_ERROR_LOG;


    struct MHD_OptionItem options[14];
    int n = 0;
    options[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, config->thread_pool_size, NULL };
    options[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, config->connection_limit, NULL };
    options[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, config->connection_timeout, NULL };
    if (config->per_ip_connection_limit > 0)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                                config->per_ip_connection_limit, NULL };
    if (config->uri_callback != NULL)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_URI_LOG_CALLBACK,
                                                (intptr_t) config->uri_callback, config->uri_callback_cls };
    if (config->connection_memory_limit > 0)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                                (intptr_t) config->connection_memory_limit, NULL };
    if (config->connection_handler != NULL)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION,
                                                (intptr_t) config->connection_handler,
                                                config->connection_handler_cls };
    if (config->completed_handler != NULL)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED,
                                                (intptr_t) config->completed_handler,
                                                config->completed_handler_cls };
    if (has_address)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &address };
    options[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };

    /* The logger must be the very first option (not inside the array), or libmicrohttpd
       complains that options before it may have logged through its default logger. */
    log_target *target = NULL;
    if (config->error_log != NULL) {
        /* Leaked once per daemon start: a few bytes, and the daemon may log until it stops. */
        target = malloc(sizeof *target);
        if (target != NULL) {
            target->callback = config->error_log;
            target->cls = config->error_log_cls;
        }
    }
    struct MHD_Daemon *daemon = target != NULL
        ? MHD_start_daemon(flags, config->port, NULL, NULL,
                           config->access_handler, config->access_handler_cls,
                           MHD_OPTION_EXTERNAL_LOGGER, format_log, target,
                           MHD_OPTION_ARRAY, options, MHD_OPTION_END)
        : MHD_start_daemon(flags, config->port, NULL, NULL,
                           config->access_handler, config->access_handler_cls,
                           MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (daemon == NULL && error)
        snprintf(error, error_capacity, "libmicrohttpd could not start on port %u (address in use or not permitted?)",
                 (unsigned) config->port);
    return daemon;
}

/* Why not MHD_quiesce_daemon: it removes the listening socket from every worker's epoll set
   while a busy worker may be removing it from its own set (it sees the daemon quiesced), and
   libmicrohttpd 0.9.75 aborts the process when its removal comes second (MHD_PANIC "Failed to
   remove listen FD from epoll set", daemon.c:4976 in the worker or 5531 in the quiesce). A
   test stopping a busy server aborted about once per 1,000 stops.

   Instead the listening socket's descriptor number is pointed at an eventfd that is never
   readable (dup3 replaces it atomically). The listening socket itself is closed by that: the
   kernel refuses new connections at once and drops it from every epoll set. libmicrohttpd
   still believes its socket is registered and never touches it again, except in a worker that
   accepted its last allowed connection just before the swap (it would remove the eventfd,
   which is not in its set, and abort: a server at its connection limit as it stops). An
   accept() already under way gets ENOTSOCK, which is logged and ignored. MHD_stop_daemon
   closes the eventfd as its own socket. */
int mhd_shim_stop_listening(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_LISTEN_FD);
    if (info == NULL || info->listen_fd == MHD_INVALID_SOCKET) return -1;
    int placeholder = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (placeholder < 0) return -1;
    int replaced = dup3(placeholder, info->listen_fd, O_CLOEXEC);
    close(placeholder);
    return replaced < 0 ? -1 : 0;
}

int mhd_shim_hangups_create(int *wake_fd) {
    int set = epoll_create1(EPOLL_CLOEXEC);
    if (set < 0) return -1;
    int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event event = { .events = EPOLLIN, .data.u64 = 0 };
    if (wake < 0 || epoll_ctl(set, EPOLL_CTL_ADD, wake, &event) != 0) {
        if (wake >= 0) close(wake);
        close(set);
        return -1;
    }
    *wake_fd = wake;
    return set;
}

int mhd_shim_hangups_watch(int set, int fd, uint64_t token) {
    /* Never removed by hand: closing the socket (libmicrohttpd does) drops it from the set,
       and removing by number later could hit a new connection that reuses the number. A
       socket libmicrohttpd closed and the kernel gave the same number again is still in the
       set only if the number was added again, which replaces the old registration. */
    struct epoll_event event = { .events = EPOLLRDHUP | EPOLLET, .data.u64 = token };
    if (epoll_ctl(set, EPOLL_CTL_ADD, fd, &event) == 0) return 0;
    /* Still there from an earlier stream on the same keep-alive connection: the caller holds
       this connection, so the number is certainly still its socket. */
    return errno == EEXIST ? epoll_ctl(set, EPOLL_CTL_MOD, fd, &event) : -1;
}

int mhd_shim_hangups_watch_writable(int set, int fd, uint64_t token, int writable) {
    struct epoll_event event = {
        .events = EPOLLRDHUP | EPOLLET | (writable ? EPOLLOUT : 0), .data.u64 = token };
    return epoll_ctl(set, EPOLL_CTL_MOD, fd, &event);
}

int mhd_shim_hangups_wait(int set, uint64_t *tokens, uint8_t *writable_only, int capacity, int timeout_ms) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(set, events, capacity, timeout_ms);
    if (count < 0) return errno == EINTR ? 0 : -1;
    for (int i = 0; i < count; i++) {
        tokens[i] = events[i].data.u64;
        writable_only[i] = (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0
            && (events[i].events & EPOLLOUT) != 0;
    }
    return count;
}

/* A non-blocking send's result as the shim reports it: the count sent, 0 when the socket
   would block (or a signal interrupted it), -errno on failure. */
static long sent_or_error(ssize_t sent) {
    if (sent >= 0) return (long) sent;
    return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -(long) errno;
}

long mhd_shim_send_now(int fd, const void *bytes, size_t length) {
    return sent_or_error(send(fd, bytes, length, MSG_DONTWAIT | MSG_NOSIGNAL));
}

/* Written directly: snprintf's format parsing was a sixth of a heartbeat ping's user-space
   time. */
size_t mhd_shim_chunk_size_line(char *line, size_t length) {
    static const char digits[] = "0123456789abcdef";
    int count = 0;
    for (size_t rest = length; ; rest >>= 4) {
        count++;
        if (rest < 16) break;
    }
    for (int i = count - 1; i >= 0; i--, length >>= 4) line[i] = digits[length & 0xf];
    line[count] = '\r';
    line[count + 1] = '\n';
    return (size_t) count + 2;
}

long mhd_shim_send_chunk_now(int fd, const void *bytes, size_t length, size_t *framed_length) {
    char size_line[MHD_SHIM_CHUNK_SIZE_LINE_MAX];
    size_t size_length = mhd_shim_chunk_size_line(size_line, length);
    *framed_length = size_length + length + 2;
    static char crlf[2] = { '\r', '\n' };
    /* A small chunk (a heartbeat, most events) is framed in one buffer and sent with send():
       the kernel then copies one buffer instead of importing a message header and three
       iovecs from user space, which showed in the idle heartbeat's profile (issue 24). */
    char framed[512];
    if (*framed_length <= sizeof framed) {
        memcpy(framed, size_line, size_length);
        memcpy(framed + size_length, bytes, length);
        memcpy(framed + size_length + length, crlf, sizeof crlf);
        return mhd_shim_send_now(fd, framed, *framed_length);
    }
    struct iovec parts[3] = {
        { .iov_base = size_line, .iov_len = size_length },
        { .iov_base = (void *) bytes, .iov_len = length },
        { .iov_base = crlf, .iov_len = sizeof crlf },
    };
    struct msghdr message = { .msg_iov = parts, .msg_iovlen = 3 };
    return sent_or_error(sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL));
}

void mhd_shim_no_delay(int fd) {
    int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

void mhd_shim_nudge(int fd) {
    /* The peer has sent its FIN, so no more bytes can come: refusing further reads changes
       nothing a reader would see (buffered bytes are still read, then end of file), but the
       kernel wakes every epoll set the socket is in, libmicrohttpd's among them. */
    shutdown(fd, SHUT_RD);
}

void mhd_shim_hangups_wake(int wake_fd) {
    uint64_t one = 1;
    ssize_t written = write(wake_fd, &one, sizeof one);
    (void) written;
}

uint16_t mhd_shim_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

unsigned long mhd_shim_raise_open_file_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    return (unsigned long) limit.rlim_cur;
}

void *mhd_shim_connection_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

int mhd_shim_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int) info->connect_fd : -1;
}

/* An IPv4 address in dotted decimal, as inet_ntop writes it. Every request's client address
   is made here; glibc's inet_ntop formats IPv4 with sprintf, about 1,500 instructions. */
static int write_ipv4(const unsigned char bytes[4], char *buffer, size_t capacity) {
    char text[16];
    size_t length = 0;
    for (int part = 0; part < 4; part++) {
        unsigned value = bytes[part];
        if (part > 0) text[length++] = '.';
        if (value >= 100) text[length++] = (char) ('0' + value / 100);
        if (value >= 10) text[length++] = (char) ('0' + value / 10 % 10);
        text[length++] = (char) ('0' + value % 10);
    }
    if (length + 1 > capacity) return -1;
    memcpy(buffer, text, length);
    buffer[length] = '\0';
    return 0;
}

int mhd_shim_client_address(struct MHD_Connection *connection, char *buffer, size_t capacity) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || capacity == 0) return -1;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        return write_ipv4((const unsigned char *) &((const struct sockaddr_in *) address)->sin_addr,
                          buffer, capacity);
    } else if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *) address;
        /* An IPv4 client on a dual-stack socket: show it as the IPv4 address it is. */
        if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr))
            return write_ipv4(&v6->sin6_addr.s6_addr[12], buffer, capacity);
        return inet_ntop(AF_INET6, &v6->sin6_addr, buffer, capacity) ? 0 : -1;
    }
    return -1;
}

int mhd_shim_peer_has_gone(int fd) {
    if (fd < 0) return 1;
    struct pollfd entry = { .fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0 };
    if (poll(&entry, 1, 0) <= 0) return 0;
    if (entry.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return 1;
    if (entry.revents & POLLIN) {
        /* Readable: either end of stream (0) or bytes the client should not send. */
        char byte;
        ssize_t count = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        return count == 0 ? 1 : 0;
    }
    return 0;
}
