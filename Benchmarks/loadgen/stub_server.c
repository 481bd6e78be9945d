/*
 * stub_server: the LiveSignup wire protocol with no logic, as cheaply as possible.
 *
 * Its only purpose is to measure typing_load's own ceiling: whatever rate and latency the
 * generator reaches against this stub is the most it can show for a real server.
 *
 *   GET /                   -> a tiny page with <input name="token" value="HEX">
 *   GET /events?token=HEX   -> text/event-stream (close-delimited), `snapshot` with rev 0
 *   POST /fields            -> 202, X-Rev: next rev of the token, {"rev":N,"applied":true},
 *                              and one `message` event {"field":F,"message":"","rev":N}
 *                              on that token's stream if it is open.
 *
 * Single-threaded epoll, level-triggered, keep-alive, pipelining-safe. SIGTERM/SIGINT exit.
 * Usage: stub_server --port 0   (prints "stub listening on http://127.0.0.1:PORT pid N")
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_REQUEST 65536

static void die(const char *what)
{
    perror(what);
    exit(2);
}

struct conn {
    int fd;
    int dead;
    int want_out;
    int is_stream;
    long session;               /* the stream's session, if is_stream */
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_off, out_cap;
    struct conn *next_dead;
};

struct session {
    long rev;
    struct conn *stream;
};

static int epfd;
static struct session *sessions;
static long n_sessions, cap_sessions;
static struct conn *dead_list;

/* Closed now, freed after the epoll batch (which may still point at it). */
static void conn_kill(struct conn *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    close(c->fd);
    if (c->is_stream && sessions[c->session].stream == c)
        sessions[c->session].stream = NULL;
    c->next_dead = dead_list;
    dead_list = c;
}

static void set_want_out(struct conn *c, int want)
{
    if (c->want_out == want)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want;
}

static void flush_out(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            set_want_out(c, 1);
            return;
        } else {
            conn_kill(c);
            return;
        }
    }
    c->out_len = c->out_off = 0;
    set_want_out(c, 0);
}

/* Writes at once when nothing is queued (the common case: no copy), queues the rest. */
static void conn_write(struct conn *c, const char *s, size_t n)
{
    if (c->dead)
        return;
    if (c->out_len == 0) {
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            conn_kill(c);
            return;
        }
        if (w > 0) {
            s += w;
            n -= (size_t)w;
        }
        if (n == 0)
            return;
    }
    if (c->out_len + n > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_len + n)
            cap *= 2;
        c->out = realloc(c->out, cap);
        if (!c->out)
            die("realloc");
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, s, n);
    c->out_len += n;
    set_want_out(c, 1);
}

static void respond(struct conn *c, const char *status, const char *type, const char *extra, const char *body,
                    size_t blen)
{
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n", status, type, blen,
                     extra);
    /* One send for head and body: half the syscalls of two writes. */
    char whole[2048];
    if ((size_t)n + blen <= sizeof whole) {
        memcpy(whole, head, (size_t)n);
        memcpy(whole + n, body, blen);
        conn_write(c, whole, (size_t)n + blen);
    } else {
        conn_write(c, head, (size_t)n);
        conn_write(c, body, blen);
    }
}

/* Tokens are the session index in hex, so lookup is a parse, not a search. */
static long token_session(const char *s, size_t n)
{
    if (n == 0 || n > 32)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0 || v > (1L << 40))
            return -1;
        v = v * 16 + d;
    }
    return v < n_sessions ? v : -1;
}

/* The value of `name` in a query string or urlencoded body (not decoded). */
static const char *form_value(const char *s, size_t n, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    size_t i = 0;
    while (i < n) {
        size_t end = i;
        while (end < n && s[end] != '&')
            end++;
        if (end - i > nl && memcmp(s + i, name, nl) == 0 && s[i + nl] == '=') {
            *vlen = end - i - nl - 1;
            return s + i + nl + 1;
        }
        i = end + 1;
    }
    return NULL;
}

static void handle_page(struct conn *c)
{
    if (n_sessions == cap_sessions) {
        cap_sessions = cap_sessions ? cap_sessions * 2 : 4096;
        sessions = realloc(sessions, (size_t)cap_sessions * sizeof *sessions);
        if (!sessions)
            die("realloc");
    }
    long id = n_sessions++;
    sessions[id].rev = 0;
    sessions[id].stream = NULL;
    char body[256];
    int n = snprintf(body, sizeof body,
                     "<!doctype html><title>stub</title><form method=\"post\" action=\"/signup\">"
                     "<input type=\"hidden\" name=\"token\" value=\"%032lx\"></form>\n",
                     id);
    respond(c, "200 OK", "text/html; charset=utf-8", "Cache-Control: no-store\r\n", body, (size_t)n);
}

static void handle_events(struct conn *c, const char *query, size_t qlen)
{
    size_t tlen = 0;
    const char *token = form_value(query, qlen, "token", &tlen);
    long id = token ? token_session(token, tlen) : -1;
    if (id < 0) {
        respond(c, "404 Not Found", "text/plain", "", "no such form\n", 13);
        return;
    }
    if (sessions[id].stream)
        conn_kill(sessions[id].stream); /* one stream per form: the newest wins */
    c->is_stream = 1;
    c->session = id;
    sessions[id].stream = c;
    /* No Content-Length and no chunking: the body ends when the connection does. */
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Cache-Control: no-store\r\n\r\n";
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%sevent: snapshot\nid: %ld\ndata: {\"rev\":%ld}\n\n", head,
                     sessions[id].rev, sessions[id].rev);
    conn_write(c, buf, (size_t)n);
}

static void handle_fields(struct conn *c, const char *body, size_t blen)
{
    size_t tlen = 0, flen = 0;
    const char *token = form_value(body, blen, "token", &tlen);
    const char *field = form_value(body, blen, "field", &flen);
    long id = token ? token_session(token, tlen) : -1;
    if (id < 0 || !field) {
        respond(c, "400 Bad Request", "application/json", "", "{\"error\":\"bad form\"}", 20);
        return;
    }
    long rev = ++sessions[id].rev;
    char json[64], extra[64];
    int jn = snprintf(json, sizeof json, "{\"rev\":%ld,\"applied\":true}", rev);
    snprintf(extra, sizeof extra, "X-Rev: %ld\r\n", rev);
    respond(c, "202 Accepted", "application/json", extra, json, (size_t)jn);

    struct conn *s = sessions[id].stream;
    if (s && !s->dead) {
        /* Field names are plain words; anything else is dropped rather than escaped. */
        char name[32];
        size_t k = 0;
        for (size_t i = 0; i < flen && k < sizeof name - 1; i++) {
            char ch = field[i];
            if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_')
                name[k++] = ch;
        }
        name[k] = 0;
        char ev[160];
        int n = snprintf(ev, sizeof ev, "event: message\nid: %ld\ndata: {\"field\":\"%s\",\"message\":\"\",\"rev\":%ld}\n\n",
                         rev, name, rev);
        conn_write(s, ev, (size_t)n);
    }
}

/* Handles every complete request in the buffer; returns bytes consumed. */
static size_t handle_requests(struct conn *c)
{
    size_t off = 0;
    while (!c->dead && !c->is_stream) {
        const char *s = c->in + off;
        size_t avail = c->in_len - off;
        const char *hend = memmem(s, avail, "\r\n\r\n", 4);
        if (!hend) {
            if (avail > MAX_REQUEST)
                conn_kill(c);
            break;
        }
        size_t hlen = (size_t)(hend - s) + 4;
        long clen = 0;
        /* Content-Length is the only header the stub needs. */
        for (const char *line = memchr(s, '\n', hlen); line && line + 1 < hend;
             line = memchr(line + 1, '\n', (size_t)(hend - line - 1))) {
            if (strncasecmp(line + 1, "content-length:", 15) == 0)
                clen = strtol(line + 16, NULL, 10);
        }
        if (clen < 0 || clen > MAX_REQUEST) {
            conn_kill(c);
            break;
        }
        if (avail < hlen + (size_t)clen)
            break;
        const char *sp = memchr(s, ' ', hlen);
        const char *target = sp ? sp + 1 : s;
        const char *tend = memchr(target, ' ', (size_t)(hend - target));
        size_t tlen = tend ? (size_t)(tend - target) : 0;
        size_t mlen = sp ? (size_t)(sp - s) : 0;
        if (mlen == 3 && memcmp(s, "GET", 3) == 0 && tlen == 1 && target[0] == '/') {
            handle_page(c);
        } else if (mlen == 3 && memcmp(s, "GET", 3) == 0 && tlen >= 8 && memcmp(target, "/events?", 8) == 0) {
            handle_events(c, target + 8, tlen - 8);
        } else if (mlen == 4 && memcmp(s, "POST", 4) == 0 && tlen == 7 && memcmp(target, "/fields", 7) == 0) {
            handle_fields(c, s + hlen, (size_t)clen);
        } else {
            respond(c, "404 Not Found", "text/plain", "", "not found\n", 10);
        }
        off += hlen + (size_t)clen;
    }
    return off;
}

static void conn_read(struct conn *c)
{
    if (c->in_cap - c->in_len < 4096) {
        size_t cap = c->in_cap ? c->in_cap * 2 : 16384;
        c->in = realloc(c->in, cap);
        if (!c->in)
            die("realloc");
        c->in_cap = cap;
    }
    ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        conn_kill(c);
        return;
    }
    if (n < 0)
        return;
    if (c->is_stream) {
        return; /* a stream client has nothing more to say; only its EOF matters */
    }
    c->in_len += (size_t)n;
    size_t used = handle_requests(c);
    if (c->dead)
        return;
    if (c->is_stream) {
        c->in_len = 0;
        return;
    }
    if (used) {
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
    }
}

static void free_dead(void)
{
    while (dead_list) {
        struct conn *c = dead_list;
        dead_list = c->next_dead;
        free(c->in);
        free(c->out);
        free(c);
    }
}

int main(int argc, char **argv)
{
    int port = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) {
            port = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: stub_server [--port P]   (0: an ephemeral port)\n");
            return 2;
        }
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    /* Signals arrive as readable fd in the loop: no handler races, clean exit. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0)
        die("signalfd");

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0)
        die("socket");
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("bind");
    if (listen(lfd, 4096) < 0)
        die("listen");
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);

    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        die("epoll_create1");
    /* The listener and the signalfd are told apart from connections by these markers. */
    static char listener_tag, signal_tag;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listener_tag};
    epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
    ev.data.ptr = &signal_tag;
    epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);

    printf("stub listening on http://127.0.0.1:%d pid %d\n", ntohs(addr.sin_port), (int)getpid());
    fflush(stdout);

    struct epoll_event events[512];
    for (;;) {
        int n = epoll_wait(epfd, events, 512, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            if (tag == &signal_tag) {
                fprintf(stderr, "stub: signal, exiting (%ld forms served)\n", n_sessions);
                return 0;
            }
            if (tag == &listener_tag) {
                for (;;) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0)
                        break; /* EAGAIN, or out of fds: try again on the next wake-up */
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *c = calloc(1, sizeof *c);
                    if (!c)
                        die("calloc");
                    c->fd = fd;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            struct conn *c = tag;
            if (c->dead)
                continue;
            if (events[i].events & EPOLLOUT)
                flush_out(c);
            if (!c->dead && events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                conn_read(c);
        }
        free_dead();
    }
}
