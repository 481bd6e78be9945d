#ifndef MICROHTTPD_SHIMS_H
#define MICROHTTPD_SHIMS_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

/// Called with the raw request target (path and query exactly as sent, before any
/// unescaping) when a request line arrives; its result becomes the request's context.
typedef void *(*mhd_shim_uri_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/// Receives one of libmicrohttpd's error messages, already formatted.
typedef void (*mhd_shim_message_callback)(void *cls, const char *message);

/// Everything Swift needs to start a daemon. libmicrohttpd's own start function is
/// C-variadic, which Swift cannot call, so this struct carries the options instead.
typedef struct mhd_shim_daemon_config {
    /// Dotted IPv4, IPv6 literal or host name to bind; NULL binds every IPv4 address.
    const char *host;
    /// 0 asks the kernel for a free port (read it back with mhd_shim_bound_port).
    uint16_t port;
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    /// Connections one client address may hold at once; 0 = no per-address limit.
    unsigned int per_ip_connection_limit;
    /// Seconds of inactivity before a (non-suspended) connection is closed; 0 = never.
    unsigned int connection_timeout;
    /// Bytes of memory each connection may use for headers and buffers.
    size_t connection_memory_limit;
    MHD_AccessHandlerCallback access_handler;
    void *access_handler_cls;
    /// Told when a connection starts and when it is about to be closed (its socket still open).
    MHD_NotifyConnectionCallback connection_handler;
    void *connection_handler_cls;
    MHD_RequestCompletedCallback completed_handler;
    void *completed_handler_cls;
    mhd_shim_uri_callback uri_callback;
    void *uri_callback_cls;
    /// libmicrohttpd's own error messages (e.g. "address in use"); NULL keeps them off.
    mhd_shim_message_callback error_log;
    void *error_log_cls;
} mhd_shim_daemon_config;

/// Starts an epoll daemon with a worker thread pool and suspend/resume enabled.
/// Returns NULL on failure and writes a readable reason into `error` (may be NULL).
struct MHD_Daemon *mhd_shim_start_daemon(const mhd_shim_daemon_config *config,
                                         char *error, size_t error_capacity);

/// Stops the daemon accepting connections without MHD_quiesce_daemon, which races libmicrohttpd
/// 0.9.75's own busy workers and can abort the process (see the .c file). New connections are
/// refused from then on; MHD_stop_daemon still works as usual. Returns 0, or -1 if the daemon
/// had no listening socket or it could not be replaced.
int mhd_shim_stop_listening(struct MHD_Daemon *daemon);

/// A set of sockets watched for their peer hanging up (epoll, edge-triggered, so each
/// hang-up is reported once). Returns the set's descriptor, or -1; `wake_fd` receives an
/// eventfd that `mhd_shim_hangups_wake` uses to end a wait.
int mhd_shim_hangups_create(int *wake_fd);

/// Adds `fd` to the set; its hang-up is reported with `token` (never 0). 0 or -1.
int mhd_shim_hangups_watch(int set, int fd, uint64_t token);

/// Also reports when `fd` can take more bytes (`writable` 1), edge-triggered, or stops
/// (`writable` 0): an event stream written directly waits this way for a slow reader.
/// The caller must hold the connection (its number cannot have been reused). 0 or -1.
int mhd_shim_hangups_watch_writable(int set, int fd, uint64_t token, int writable);

/// Blocks until something hangs up or becomes writable, the set is woken, or `timeout_ms`
/// passes (-1: no limit); writes up to `capacity` tokens (0 for a wake-up) and whether each
/// was only a socket becoming writable (`writable_only[i]` 1) or a hang-up or error (0),
/// and returns how many, or -1.
int mhd_shim_hangups_wait(int set, uint64_t *tokens, uint8_t *writable_only, int capacity, int timeout_ms);

/// Makes libmicrohttpd look at a socket whose peer has hung up: shutdown(SHUT_RD) wakes its
/// epoll set, and its next read ends the way the peer's FIN already said.
void mhd_shim_nudge(int fd);

void mhd_shim_hangups_wake(int wake_fd);

/// The port the daemon listens on (useful after binding port 0); 0 if unknown.
uint16_t mhd_shim_bound_port(struct MHD_Daemon *daemon);

/// Raises the soft open-file limit to the hard limit; returns the new soft limit.
unsigned long mhd_shim_raise_open_file_limit(void);

/// What the connection-notify callback stored for the connection (NULL if nothing).
void *mhd_shim_connection_socket_context(struct MHD_Connection *connection);

/// The connection's socket, or -1.
int mhd_shim_connection_fd(struct MHD_Connection *connection);

/// The peer's address as text ("127.0.0.1", "::1") into `buffer`; returns 0 on success.
int mhd_shim_client_address(struct MHD_Connection *connection, char *buffer, size_t capacity);

/// Sends what it can of `length` bytes without blocking and without SIGPIPE: the count
/// sent (possibly fewer, 0 when the socket's buffer is full) or -errno on failure.
long mhd_shim_send_now(int fd, const void *bytes, size_t length);

/// The longest size line of an HTTP/1.1 chunk: 16 hex digits and CRLF.
#define MHD_SHIM_CHUNK_SIZE_LINE_MAX 18

/// Writes the size line of a `length`-byte chunk (its size in lower-case hex, CRLF) into
/// `line` (`MHD_SHIM_CHUNK_SIZE_LINE_MAX` bytes); returns its length. The one definition of
/// the framing: `mhd_shim_send_chunk_now` and `EventStream.chunk` both use it.
size_t mhd_shim_chunk_size_line(char *line, size_t length);

/// Sends `length` bytes (more than 0) as one HTTP/1.1 chunk (size line, the bytes, CRLF) in
/// one call, without blocking and without SIGPIPE: how many bytes of the framed chunk were
/// sent (possibly fewer, 0 when the buffer is full) or -errno. `*framed_length` is set to
/// the framed chunk's whole length.
long mhd_shim_send_chunk_now(int fd, const void *bytes, size_t length, size_t *framed_length);

/// Turns Nagle's algorithm off for `fd`, so a small write leaves at once.
void mhd_shim_no_delay(int fd);

/// Whether the peer of a socket that should be silent (an event stream's client sends
/// nothing after its request) has hung up or failed: 1 gone, 0 still there.
int mhd_shim_peer_has_gone(int fd);

#endif
