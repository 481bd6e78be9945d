/*
 * typing_load: people typing a sign-up form, natively.
 *
 * The same scenario as Benchmarks/typing.py (read its docstring for the why), but one
 * single-threaded epoll loop in C, so that one core of load generator can offer ~15,000+
 * edits/s where the Python/aiohttp version saturates at a few thousand.
 *
 * Per person: GET / -> token; GET /events?token= (SSE) and wait for the first event
 * (the snapshot); then one POST /fields per keystroke at start + i/rate (open-loop), whole
 * value so far, and a blur (touched=1) after each field; then wait for every answer, keep
 * the stream 0.5 s more, score the form's edits, and start the next form (person += 100000).
 *
 * Latency of an applied edit: from writing its POST to the first event on that form's
 * stream whose top-level "rev" is the edit's X-Rev. Events can arrive before the POST's
 * answer, so both sides are recorded per rev and matched when the form is scored.
 *
 * Last stdout line: RESULT {json}. Everything else goes to stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_POST 4              /* POST connections per person (the brief's open-loop pool) */
#define SNAPSHOT_TIMEOUT 10.0   /* as typing.py: a form without snapshot is abandoned */
#define GRACE 0.5               /* stream kept after the last answer, for late events */
#define MAX_HEADER 65536
#define MAX_LINE (4 << 20)      /* an SSE line longer than this is a broken server */

/* ------------------------------------------------------------------ small helpers */

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p)
        die("out of memory");
    return p;
}

struct buf {
    char *p;
    size_t len, cap;
};

static void buf_reserve(struct buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

static void buf_append(struct buf *b, const char *s, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void buf_free(struct buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------------------------ options, totals */

static int opt_port;
static int opt_people = 200;
static double opt_rate = 5.0;
static double opt_warmup = 5.0;
static double opt_window = 20.0;
static double opt_timeout = -1;
static long opt_server_pid;
/* 1: POST /fields?token=... (what the page sends; a proxy in front of several instances
 * routes by it). 0: the token in the body only (what the peer understands). */
static int opt_token_in_url;

static char host_header[64];    /* "127.0.0.1:PORT" */
static struct sockaddr_in server_addr;
/* POST connections per person (1..MAX_POST). With fewer than MAX_POST a keystroke that finds
 * them all busy waits for one (as a browser queues on its connection) instead of counting as
 * an error; its latency still runs from the moment it is written. */
static int opt_post_conns = MAX_POST;
/* Each person's sockets from a loopback address of its own (127.0.X.Y), so per-address limits
 * see 200 people as 200 clients, as they would on the internet. */
static int opt_spread = 0;
static long n_queued;
static int epfd;

static long n_sent, n_answered, n_non202, n_errors, n_without_event;
static long window_ok;          /* 202 answers received inside the window */
static long window_sent;        /* POSTs written inside the window */
static long window_keys;        /* keystrokes due inside the window, sent or not: the offered load */
/* How late keystrokes left, in the window: the generator's own health. A late keystroke is
 * still timed from its write, so lag does not inflate latency, but a lagging generator is
 * not offering the load it claims. */
static double lag_max;
static long lag_over_1ms, lag_over_10ms;
static int in_window;

static struct { char kind[160]; long count; } kinds[64];
static int n_kinds;

static float *latencies;        /* ms, applied edits sent in the window that got their event */
static size_t n_lat, cap_lat;

static void count_error(const char *fmt, ...)
{
    char kind[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kind, sizeof kind, fmt, ap);
    va_end(ap);
    n_errors++;
    for (int i = 0; i < n_kinds; i++)
        if (strcmp(kinds[i].kind, kind) == 0) {
            kinds[i].count++;
            return;
        }
    if (n_kinds < (int)(sizeof kinds / sizeof kinds[0])) {
        snprintf(kinds[n_kinds].kind, sizeof kinds[0].kind, "%s", kind);
        kinds[n_kinds++].count = 1;
    } else {
        kinds[n_kinds - 1].count++; /* table full: lump into the last kind rather than lose it */
    }
}

static void add_latency(double ms)
{
    if (n_lat == cap_lat) {
        cap_lat = cap_lat ? cap_lat * 2 : 65536;
        latencies = xrealloc(latencies, cap_lat * sizeof *latencies);
    }
    latencies[n_lat++] = (float)ms;
}

/* ------------------------------------------------------------------ per-form rev table */

/* What is known about one rev of one form: when its first timed event arrived, and when
 * the applied edit answered with this X-Rev was written. A small open-addressing hash, so
 * revs need not start at 0 or be dense. */
struct revslot {
    long rev;
    double arrival, sent;
    unsigned char used, has_arrival, has_sent, counted;
};

struct revmap {
    struct revslot *slots;
    unsigned cap, used;
};

static void revmap_clear(struct revmap *m)
{
    if (!m->slots) {
        m->cap = 256;
        m->slots = xrealloc(NULL, m->cap * sizeof *m->slots);
    }
    memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->used = 0;
}

static struct revslot *revmap_get(struct revmap *m, long rev)
{
    if ((m->used + 1) * 2 > m->cap) {
        struct revslot *old = m->slots;
        unsigned oldcap = m->cap;
        m->cap *= 2;
        m->slots = xrealloc(NULL, m->cap * sizeof *m->slots);
        memset(m->slots, 0, m->cap * sizeof *m->slots);
        m->used = 0;
        for (unsigned i = 0; i < oldcap; i++)
            if (old[i].used) {
                struct revslot *s = revmap_get(m, old[i].rev);
                *s = old[i];
            }
        free(old);
    }
    unsigned mask = m->cap - 1;
    unsigned i = (unsigned)((unsigned long)rev * 2654435761u) & mask;
    while (m->slots[i].used && m->slots[i].rev != rev)
        i = (i + 1) & mask;
    struct revslot *s = &m->slots[i];
    if (!s->used) {
        s->used = 1;
        s->rev = rev;
        m->used++;
    }
    return s;
}

/* ------------------------------------------------------------------ connections, people */

enum kind { K_PAGE, K_STREAM, K_POST };
enum body_mode { BM_NONE, BM_LENGTH, BM_CHUNKED, BM_CLOSE };
enum chunk_state { CS_SIZE, CS_SIZE_EXT, CS_DATA, CS_DATA_END, CS_TRAILER_START, CS_TRAILER_LINE };

struct person;

struct conn {
    int fd;
    enum kind kind;
    struct person *owner;
    int connecting;             /* non-blocking connect not finished yet */
    int busy;                   /* a request is queued or in flight (always, for a stream) */
    int dead;
    int want_out;               /* EPOLLOUT registered */
    struct buf out;
    size_t out_off;
    struct buf in;
    size_t in_off;
    /* response being parsed */
    int have_headers, status, chunked, close_after, has_clen;
    long clen, xrev;
    enum body_mode body_mode;
    enum chunk_state cstate;
    long cleft;
    struct buf body;            /* page and POST bodies */
    /* POST */
    double sent_at;
    int sent_set, counted;
    /* stream: SSE line assembly */
    struct buf line, data;
    int has_data;
    struct conn *next_dead;
};

enum pstate { P_START, P_PAGE, P_RETRY, P_SNAP, P_TYPING, P_DRAIN, P_GRACE, P_DONE };

struct person {
    long form;                  /* the person index of the current form (p, p+100000, ...) */
    enum pstate state;
    char token_enc[512];        /* percent-encoded token */
    struct conn *page, *stream, *posts[MAX_POST];
    int outstanding;            /* POSTs written or queued, not answered */
    double started;
    int key, nkeys, field, pos; /* keystroke cursor */
    char values[4][64];
    int vlen[4], seq[4];
    struct revmap revs;
    double timer_at;
    int heap_pos;               /* -1: no timer */
};

static const char *FIELD_NAMES[4] = {"username", "email", "password", "confirm"};

static struct person *people;
static int people_done;
static double t_start, t_window_start, t_window_end, t_stop, t_deadline;
static struct conn *dead_list;

/* ------------------------------------------------------------------ timer heap */

/* One timer per person at most (its next keystroke, its retry, its snapshot timeout or its
 * grace end), so a binary heap of people with a back index gives O(log n) re-arming. */
static struct person **heap;
static int heap_n;

static void heap_swap(int a, int b)
{
    struct person *t = heap[a];
    heap[a] = heap[b];
    heap[b] = t;
    heap[a]->heap_pos = a;
    heap[b]->heap_pos = b;
}

static void heap_up(int i)
{
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (heap[parent]->timer_at <= heap[i]->timer_at)
            break;
        heap_swap(i, parent);
        i = parent;
    }
}

static void heap_down(int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < heap_n && heap[l]->timer_at < heap[m]->timer_at)
            m = l;
        if (r < heap_n && heap[r]->timer_at < heap[m]->timer_at)
            m = r;
        if (m == i)
            break;
        heap_swap(i, m);
        i = m;
    }
}

static void set_timer(struct person *p, double at)
{
    p->timer_at = at;
    if (p->heap_pos < 0) {
        p->heap_pos = heap_n;
        heap[heap_n++] = p;
        heap_up(p->heap_pos);
    } else {
        heap_up(p->heap_pos);
        heap_down(p->heap_pos);
    }
}

static void cancel_timer(struct person *p)
{
    int i = p->heap_pos;
    if (i < 0)
        return;
    heap_n--;
    if (i != heap_n) {
        struct person *moved = heap[heap_n];
        heap[i] = moved;
        moved->heap_pos = i;
        heap_up(i);
        heap_down(moved->heap_pos);
    }
    p->heap_pos = -1;
}

/* ------------------------------------------------------------------ connection plumbing */

static void conn_update_events(struct conn *c, int want_out)
{
    if (c->want_out == want_out)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
        die("epoll_ctl MOD: %s", strerror(errno));
    c->want_out = want_out;
}

/* Closes the socket now; frees the struct only after the current epoll batch, which may
 * still hold a pointer to it. */
static void conn_kill(struct conn *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    close(c->fd);
    struct person *p = c->owner;
    if (p->page == c)
        p->page = NULL;
    if (p->stream == c)
        p->stream = NULL;
    for (int i = 0; i < MAX_POST; i++)
        if (p->posts[i] == c)
            p->posts[i] = NULL;
    c->next_dead = dead_list;
    dead_list = c;
}

static void free_dead(void)
{
    while (dead_list) {
        struct conn *c = dead_list;
        dead_list = c->next_dead;
        buf_free(&c->out);
        buf_free(&c->in);
        buf_free(&c->body);
        buf_free(&c->line);
        buf_free(&c->data);
        free(c);
    }
}

static void reset_response(struct conn *c)
{
    c->have_headers = 0;
    c->status = 0;
    c->chunked = 0;
    c->close_after = 0;
    c->has_clen = 0;
    c->clen = 0;
    c->xrev = 0;
    c->body_mode = BM_NONE;
    c->cstate = CS_SIZE;
    c->cleft = 0;
    c->body.len = 0;
}

static struct conn *conn_open(struct person *p, enum kind kind, const char **err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = strerror(errno);
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* small requests, no Nagle wait */
    if (opt_spread) {
        long i = p - people;
        struct sockaddr_in source = {.sin_family = AF_INET, .sin_port = 0};
        source.sin_addr.s_addr = htonl(0x7F000000u | (uint32_t)(1 + i / 254) << 8 | (uint32_t)(1 + i % 254));
        if (bind(fd, (struct sockaddr *)&source, sizeof source) < 0) {
            *err = strerror(errno);
            close(fd);
            return NULL;
        }
    }
    int connecting = 0;
    if (connect(fd, (struct sockaddr *)&server_addr, sizeof server_addr) < 0) {
        if (errno != EINPROGRESS) {
            *err = strerror(errno);
            close(fd);
            return NULL;
        }
        connecting = 1;
    }
    struct conn *c = calloc(1, sizeof *c);
    if (!c)
        die("out of memory");
    c->fd = fd;
    c->kind = kind;
    c->owner = p;
    c->connecting = connecting;
    c->want_out = connecting;
    reset_response(c);
    struct epoll_event ev = {.events = EPOLLIN | (connecting ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        die("epoll_ctl ADD: %s", strerror(errno));
    return c;
}

static void conn_fail(struct conn *c, const char *why);

static void conn_flush(struct conn *c)
{
    if (c->connecting || c->dead)
        return;
    while (c->out_off < c->out.len) {
        if (c->kind == K_POST && !c->sent_set) {
            /* Latency starts when the request leaves us (not when it was queued behind a
             * connect), as the brief defines it. */
            c->sent_at = mono();
            c->sent_set = 1;
            if (c->counted)
                window_sent++;
        }
        ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            conn_update_events(c, 1);
            return;
        } else {
            conn_fail(c, n < 0 ? strerror(errno) : "send returned 0");
            return;
        }
    }
    c->out.len = c->out_off = 0;
    conn_update_events(c, 0);
}

static void conn_send(struct conn *c, const char *req, size_t len)
{
    buf_append(&c->out, req, len);
    c->busy = 1;
    conn_flush(c);
}

/* ------------------------------------------------------------------ the scenario */

static void begin_form(struct person *p, double now);
static void type_due(struct person *p, double now);

static void percent_encode(char *dst, size_t cap, const char *src, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            dst[o++] = (char)ch;
        } else {
            dst[o++] = '%';
            dst[o++] = hex[ch >> 4];
            dst[o++] = hex[ch & 15];
        }
    }
    dst[o] = 0;
}

static void enter_grace(struct person *p, double now)
{
    p->state = P_GRACE;
    set_timer(p, now + GRACE);
}

static void start_typing(struct person *p, double now)
{
    cancel_timer(p);
    p->state = P_TYPING;
    p->started = now;
    p->key = 0;
    p->field = 0;
    p->pos = 0;
    type_due(p, now);
}

/* Sends the next keystroke; 0 when it must wait for a connection (--post-connections). */
static int send_key(struct person *p)
{
    /* An idle keep-alive connection, else a new one, else the pool is exhausted. */
    struct conn *c = NULL;
    int free_slot = -1;
    for (int i = 0; i < opt_post_conns; i++) {
        if (p->posts[i] && !p->posts[i]->busy) {
            c = p->posts[i];
            break;
        }
        if (!p->posts[i] && free_slot < 0)
            free_slot = i;
    }
    if (!c && free_slot < 0 && opt_post_conns < MAX_POST) {
        n_queued++;
        return 0;
    }
    int f = p->field, full = p->vlen[f];
    int touched = p->pos == full;           /* the last step of each field is the blur */
    int len = touched ? full : p->pos + 1;
    if (++p->pos > full) {
        p->field++;
        p->pos = 0;
    }
    p->key++;
    p->seq[f]++;
    if (in_window)
        window_keys++;

    if (c) {
        n_sent++;
    } else {
        if (free_slot < 0) {
            count_error("POST /fields: %d connections busy", MAX_POST);
            return 1;
        }
        n_sent++; /* from here the edit counts as sent, even if its connect fails */
        const char *err = NULL;
        c = conn_open(p, K_POST, &err);
        if (!c) {
            count_error("POST /fields: connect: %s", err);
            return 1;
        }
        p->posts[free_slot] = c;
    }

    char value[256], body[1024], req[1536];
    percent_encode(value, sizeof value, p->values[f], (size_t)len);
    int blen = snprintf(body, sizeof body, "token=%s&field=%s&value=%s&seq=%d%s", p->token_enc,
                        FIELD_NAMES[f], value, p->seq[f], touched ? "&touched=1" : "");
    int rlen = snprintf(req, sizeof req,
                        "POST /fields%s%s HTTP/1.1\r\nHost: %s\r\n"
                        "Content-Type: application/x-www-form-urlencoded\r\n"
                        "Content-Length: %d\r\n\r\n%s",
                        opt_token_in_url ? "?token=" : "", opt_token_in_url ? p->token_enc : "",
                        host_header, blen, body);
    p->outstanding++;
    c->sent_set = 0;
    c->counted = in_window;
    conn_send(c, req, (size_t)rlen);
    return 1;
}

/* Sends every keystroke that is due (open-loop: late ones go at once), then sleeps until
 * the next one; after the last keystroke, or at the end of the run, the form drains. */
static void type_due(struct person *p, double now)
{
    while (p->key < p->nkeys) {
        double due = p->started + p->key / opt_rate;
        if (due > now) {
            set_timer(p, due);
            return;
        }
        if (now >= t_stop)
            break;
        if (in_window) {
            double lag = now - due;
            if (lag > lag_max)
                lag_max = lag;
            lag_over_1ms += lag > 0.001;
            lag_over_10ms += lag > 0.010;
        }
        if (!send_key(p))
            return; /* waits for its connection: post_done carries on */
        if (p->state != P_TYPING)
            return;
    }
    p->state = P_DRAIN;
    if (p->outstanding == 0)
        enter_grace(p, now);
}

static void score_form(struct person *p)
{
    struct revmap *m = &p->revs;
    for (unsigned i = 0; i < m->cap; i++) {
        struct revslot *s = &m->slots[i];
        if (!s->used || !s->has_sent || !s->counted)
            continue;
        if (s->has_arrival)
            add_latency((s->arrival - s->sent) * 1000.0);
        else
            n_without_event++;
    }
}

static void finish_form(struct person *p, double now)
{
    if (p->stream)
        conn_kill(p->stream);
    score_form(p);
    p->form += 100000;
    begin_form(p, now);
}

static void begin_form(struct person *p, double now)
{
    if (now >= t_stop) {
        p->state = P_DONE;
        people_done++;
        return;
    }
    /* The same fields and values as typing.py's keystrokes(person). */
    snprintf(p->values[0], sizeof p->values[0], "typist%05ld", p->form);
    snprintf(p->values[1], sizeof p->values[1], "typist%05ld@example.com", p->form);
    snprintf(p->values[2], sizeof p->values[2], "Lantern-Orbit-%02ldx", p->form % 97);
    snprintf(p->values[3], sizeof p->values[3], "%s", p->values[2]);
    p->nkeys = 0;
    for (int f = 0; f < 4; f++) {
        p->vlen[f] = (int)strlen(p->values[f]);
        p->nkeys += p->vlen[f] + 1;
        p->seq[f] = 0;
    }
    revmap_clear(&p->revs);

    if (!p->page) {
        const char *err = NULL;
        p->page = conn_open(p, K_PAGE, &err);
        if (!p->page) {
            count_error("GET /: connect: %s", err);
            p->state = P_RETRY;
            set_timer(p, now + 1.0);
            return;
        }
    }
    p->state = P_PAGE;
    char req[256];
    int n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host_header);
    conn_send(p->page, req, (size_t)n);
}

static void person_timer(struct person *p, double now)
{
    switch (p->state) {
    case P_START:
    case P_RETRY:
        begin_form(p, now);
        break;
    case P_SNAP:
        count_error("no snapshot within %.0f s", SNAPSHOT_TIMEOUT);
        if (p->stream)
            conn_kill(p->stream);
        begin_form(p, now);
        break;
    case P_TYPING:
        type_due(p, now);
        break;
    case P_GRACE:
        finish_form(p, now);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------ responses */

static int extract_token(const char *s, size_t n, char *out, size_t cap)
{
    static const char needle[] = "name=\"token\"";
    const char *end = s + n;
    const char *at = memmem(s, n, needle, sizeof needle - 1);
    while (at) {
        const char *q = at + sizeof needle - 1;
        const char *ws = q;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
            q++;
        if (q > ws && end - q > 7 && memcmp(q, "value=\"", 7) == 0) {
            q += 7;
            const char *close = memchr(q, '"', (size_t)(end - q));
            if (close && close > q && (size_t)(close - q) < cap) {
                memcpy(out, q, (size_t)(close - q));
                out[close - q] = 0;
                return 1;
            }
        }
        at = memmem(at + 1, (size_t)(end - at - 1), needle, sizeof needle - 1);
    }
    return 0;
}

static void page_done(struct conn *c, double now)
{
    struct person *p = c->owner;
    char token[256];
    c->busy = 0;
    int ok = c->status == 200 && extract_token(c->body.p, c->body.len, token, sizeof token);
    if (c->close_after)
        conn_kill(c);
    if (p->state != P_PAGE)
        return;
    if (!ok) {
        count_error("GET / %d: no token", c->status);
        p->state = P_RETRY;
        set_timer(p, now + 1.0);
        return;
    }
    percent_encode(p->token_enc, sizeof p->token_enc, token, strlen(token));
    const char *err = NULL;
    struct conn *s = conn_open(p, K_STREAM, &err);
    p->state = P_SNAP;
    if (!s) {
        /* typing.py types on when its reader fails; its edits then have no event. */
        count_error("GET /events: connect: %s", err);
        start_typing(p, now);
        return;
    }
    p->stream = s;
    char req[768];
    int n = snprintf(req, sizeof req,
                     "GET /events?token=%s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n",
                     p->token_enc, host_header);
    set_timer(p, now + SNAPSHOT_TIMEOUT);
    conn_send(s, req, (size_t)n);
}

/* "applied":false anywhere at the top level of a small JSON answer. */
static int answer_applied(const char *s, size_t n)
{
    static const char key[] = "\"applied\"";
    const char *end = s + n;
    const char *at = memmem(s, n, key, sizeof key - 1);
    if (!at)
        return 1; /* typing.py: .get("applied", True) */
    const char *q = at + sizeof key - 1;
    while (q < end && (*q == ' ' || *q == ':' || *q == '\t' || *q == '\n' || *q == '\r'))
        q++;
    return !(q < end && *q == 'f');
}

static void post_done(struct conn *c, double now)
{
    struct person *p = c->owner;
    (void)now;
    n_answered++;
    p->outstanding--;
    c->busy = 0;
    if (c->status != 202) {
        n_non202++;
    } else {
        if (in_window)
            window_ok++;
        if (answer_applied(c->body.p, c->body.len)) {
            /* Keyed by rev, last answer wins: exactly typing.py's sent_at[rev] dict. */
            struct revslot *s = revmap_get(&p->revs, c->xrev);
            s->has_sent = 1;
            s->sent = c->sent_at;
            s->counted = (unsigned char)c->counted;
        }
    }
    if (c->close_after)
        conn_kill(c);
    if (p->state == P_TYPING && opt_post_conns < MAX_POST)
        type_due(p, mono()); /* keystrokes that waited for this connection */
    else if (p->state == P_DRAIN && p->outstanding == 0)
        enter_grace(p, mono());
}

/* Top-level "rev" (an integer) and whether top-level "id" is "username.available". A tiny
 * JSON walk rather than a substring search, because a snapshot can nest objects. */
static void scan_event(const char *s, size_t n, long *rev, int *has_rev, int *availability)
{
    size_t i = 0;
    int depth = 0;
    *has_rev = 0;
    *availability = 0;
    while (i < n) {
        char ch = s[i];
        if (ch == '"') {
            size_t start = ++i;
            while (i < n && s[i] != '"')
                i += s[i] == '\\' ? 2 : 1;
            size_t end = i < n ? i : n;
            i++;
            if (depth != 1)
                continue;
            size_t j = i;
            while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n'))
                j++;
            if (j >= n || s[j] != ':')
                continue; /* a value, not a key */
            j++;
            while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n'))
                j++;
            size_t klen = end - start;
            if (klen == 3 && memcmp(s + start, "rev", 3) == 0) {
                size_t k = j;
                int neg = k < n && s[k] == '-';
                if (neg)
                    k++;
                long v = 0;
                size_t digits = k;
                while (k < n && s[k] >= '0' && s[k] <= '9')
                    v = v * 10 + (s[k++] - '0');
                /* An integer only (typing.py's isinstance(rev, int)): no fraction/exponent. */
                if (k > digits && !(k < n && (s[k] == '.' || s[k] == 'e' || s[k] == 'E'))) {
                    *rev = neg ? -v : v;
                    *has_rev = 1;
                }
            } else if (klen == 2 && memcmp(s + start, "id", 2) == 0) {
                static const char avail[] = "\"username.available\"";
                if (n - j >= sizeof avail - 1 && memcmp(s + j, avail, sizeof avail - 1) == 0)
                    *availability = 1;
            }
            i = j;
            continue;
        }
        if (ch == '{' || ch == '[')
            depth++;
        else if (ch == '}' || ch == ']')
            depth--;
        i++;
    }
}

static void sse_dispatch(struct conn *c, double now)
{
    struct person *p = c->owner;
    if (p->stream != c)
        return;
    long rev = 0;
    int has_rev, availability;
    scan_event(c->data.p, c->data.len, &rev, &has_rev, &availability);
    /* The availability answer comes from the debounce timer, not from the edit whose rev
     * it carries, so it times nothing (as in typing.py). */
    if (has_rev && !availability) {
        struct revslot *s = revmap_get(&p->revs, rev);
        if (!s->has_arrival) {
            s->has_arrival = 1;
            s->arrival = now;
        }
    }
    if (p->state == P_SNAP)
        start_typing(p, now);
}

static void sse_line(struct conn *c, const char *s, size_t n, double now)
{
    if (n && s[n - 1] == '\r')
        n--;
    if (n == 0) {
        if (c->has_data)
            sse_dispatch(c, now);
        c->data.len = 0;
        c->has_data = 0;
        return;
    }
    if (s[0] == ':')
        return; /* comment: heartbeat */
    const char *colon = memchr(s, ':', n);
    size_t flen = colon ? (size_t)(colon - s) : n;
    if (flen != 4 || memcmp(s, "data", 4) != 0)
        return; /* event:, id:, retry: are not needed for timing */
    const char *v = colon ? colon + 1 : s + n;
    if (v < s + n && *v == ' ')
        v++;
    if (c->has_data)
        buf_append(&c->data, "\n", 1);
    buf_append(&c->data, v, (size_t)(s + n - v));
    c->has_data = 1;
}

static void sse_feed(struct conn *c, const char *s, size_t n, double now)
{
    while (n && !c->dead) {
        const char *nl = memchr(s, '\n', n);
        if (!nl) {
            if (c->line.len + n > MAX_LINE) {
                conn_fail(c, "SSE line too long");
                return;
            }
            buf_append(&c->line, s, n);
            return;
        }
        size_t seg = (size_t)(nl - s);
        if (c->line.len == 0) {
            sse_line(c, s, seg, now);
        } else {
            buf_append(&c->line, s, seg);
            sse_line(c, c->line.p, c->line.len, now);
            c->line.len = 0;
        }
        s += seg + 1;
        n -= seg + 1;
    }
}

static void body_sink(struct conn *c, const char *s, size_t n, double now)
{
    if (c->kind == K_STREAM)
        sse_feed(c, s, n, now);
    else
        buf_append(&c->body, s, n);
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Feeds body bytes; returns how many were consumed, sets *complete at the body's end. */
static size_t body_feed(struct conn *c, const char *s, size_t n, double now, int *complete)
{
    *complete = 0;
    switch (c->body_mode) {
    case BM_NONE:
        *complete = 1;
        return 0;
    case BM_CLOSE:
        body_sink(c, s, n, now);
        return n;
    case BM_LENGTH: {
        size_t take = n < (size_t)c->clen ? n : (size_t)c->clen;
        body_sink(c, s, take, now);
        c->clen -= (long)take;
        *complete = c->clen == 0;
        return take;
    }
    case BM_CHUNKED:
        break;
    }
    size_t i = 0;
    while (i < n && !c->dead) {
        char ch = s[i];
        switch (c->cstate) {
        case CS_SIZE: {
            int h = hexval(ch);
            if (h >= 0) {
                c->cleft = c->cleft * 16 + h;
                i++;
                break;
            }
            c->cstate = CS_SIZE_EXT; /* the first non-hex character ends the size */
        }
            __attribute__((fallthrough));
        case CS_SIZE_EXT:
            i++;
            if (ch == '\n')
                c->cstate = c->cleft ? CS_DATA : CS_TRAILER_START;
            break;
        case CS_DATA: {
            size_t take = n - i < (size_t)c->cleft ? n - i : (size_t)c->cleft;
            body_sink(c, s + i, take, now);
            i += take;
            c->cleft -= (long)take;
            if (c->cleft == 0)
                c->cstate = CS_DATA_END;
            break;
        }
        case CS_DATA_END:
            i++;
            if (ch == '\n') {
                c->cstate = CS_SIZE;
                c->cleft = 0;
            }
            break;
        case CS_TRAILER_START:
            i++;
            if (ch == '\n') {
                *complete = 1;
                return i;
            }
            if (ch != '\r')
                c->cstate = CS_TRAILER_LINE;
            break;
        case CS_TRAILER_LINE:
            i++;
            if (ch == '\n')
                c->cstate = CS_TRAILER_START;
            break;
        }
    }
    return i;
}

static int header_is(const char *name, size_t nlen, const char *want)
{
    return nlen == strlen(want) && strncasecmp(name, want, nlen) == 0;
}

/* Parses the status line and the headers we need. Returns 0 on a malformed head. */
static int parse_head(struct conn *c, const char *s, size_t n)
{
    if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0)
        return 0;
    c->status = atoi(s + 9);
    const char *end = s + n;
    const char *line = memchr(s, '\n', n);
    while (line && ++line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            break;
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (colon) {
            const char *v = colon + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            size_t nlen = (size_t)(colon - line), vlen = (size_t)(eol - v);
            if (vlen && v[vlen - 1] == '\r')
                vlen--;
            if (header_is(line, nlen, "content-length")) {
                c->clen = strtol(v, NULL, 10);
                c->has_clen = 1;
            } else if (header_is(line, nlen, "transfer-encoding")) {
                c->chunked = vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0;
            } else if (header_is(line, nlen, "connection")) {
                c->close_after = vlen >= 5 && strncasecmp(v, "close", 5) == 0;
            } else if (header_is(line, nlen, "x-rev")) {
                c->xrev = strtol(v, NULL, 10);
            }
        }
        line = eol;
    }
    if (c->status == 204 || c->status == 304 || c->status / 100 == 1)
        c->body_mode = BM_NONE;
    else if (c->chunked)
        c->body_mode = BM_CHUNKED;
    else if (c->has_clen)
        c->body_mode = c->clen > 0 ? BM_LENGTH : BM_NONE;
    else
        c->body_mode = BM_CLOSE;
    if (c->body_mode == BM_CLOSE)
        c->close_after = 1;
    return 1;
}

static void response_done(struct conn *c, double now)
{
    if (c->kind == K_PAGE)
        page_done(c, now);
    else if (c->kind == K_POST)
        post_done(c, now);
    else
        conn_fail(c, "stream ended"); /* a bounded body on /events: the stream is over */
}

static void conn_process(struct conn *c, double now)
{
    while (!c->dead) {
        const char *s = c->in.p + c->in_off;
        size_t avail = c->in.len - c->in_off;
        if (!c->have_headers) {
            if (avail == 0)
                return;
            if (!c->busy) {
                conn_fail(c, "data without a request");
                return;
            }
            const char *hend = memmem(s, avail, "\r\n\r\n", 4);
            if (!hend) {
                if (avail > MAX_HEADER)
                    conn_fail(c, "header too long");
                return;
            }
            size_t hlen = (size_t)(hend - s) + 4;
            if (!parse_head(c, s, hlen)) {
                conn_fail(c, "malformed response");
                return;
            }
            c->in_off += hlen;
            if (c->status / 100 == 1) { /* interim answer: the real one follows */
                reset_response(c);
                continue;
            }
            c->have_headers = 1;
            if (c->kind == K_STREAM && c->status != 200) {
                char why[64];
                snprintf(why, sizeof why, "status %d", c->status);
                conn_fail(c, why);
                return;
            }
            continue;
        }
        int complete;
        size_t used = body_feed(c, s, avail, now, &complete);
        if (c->dead)
            return;
        c->in_off += used;
        if (!complete)
            return;
        int kind = c->kind;
        response_done(c, now);
        if (c->dead || kind == K_STREAM)
            return;
        reset_response(c);
    }
}

static void conn_read(struct conn *c)
{
    /* Keep unparsed bytes at the front so the buffer never creeps. */
    if (c->in_off == c->in.len) {
        c->in.len = c->in_off = 0;
    } else if (c->in_off > 0 && c->in.cap - c->in.len < 16384) {
        memmove(c->in.p, c->in.p + c->in_off, c->in.len - c->in_off);
        c->in.len -= c->in_off;
        c->in_off = 0;
    }
    /* Streams get room for bursts of events; answers are small (pages grow as needed). */
    buf_reserve(&c->in, c->kind == K_STREAM ? 65536 : 8192);
    ssize_t n = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
    double now = mono(); /* event arrival: taken right after the bytes came in */
    if (n > 0) {
        c->in.len += (size_t)n;
        conn_process(c, now);
    } else if (n == 0) {
        if (c->have_headers && c->body_mode == BM_CLOSE && c->kind != K_STREAM) {
            response_done(c, now); /* a close-delimited body ends here */
            conn_kill(c);
        } else if (c->busy) {
            conn_fail(c, c->kind == K_STREAM ? "closed by server" : "closed before the answer");
        } else {
            conn_kill(c); /* an idle keep-alive connection the server let go */
        }
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        conn_fail(c, strerror(errno));
    }
}

static void conn_fail(struct conn *c, const char *why)
{
    if (c->dead)
        return;
    struct person *p = c->owner;
    double now = mono();
    int busy = c->busy;
    enum kind kind = c->kind;
    int current_stream = p->stream == c;
    conn_kill(c);
    if (kind == K_POST) {
        if (!busy)
            return;
        count_error("POST /fields: %s", why);
        p->outstanding--;
        if (p->state == P_DRAIN && p->outstanding == 0)
            enter_grace(p, now);
    } else if (kind == K_PAGE) {
        if (!busy)
            return;
        count_error("GET /: %s", why);
        if (p->state == P_PAGE) {
            p->state = P_RETRY;
            set_timer(p, now + 1.0);
        }
    } else {
        if (!current_stream || p->state == P_GRACE || p->state == P_DONE)
            return; /* we were closing it anyway */
        count_error("GET /events: %s", why);
        if (p->state == P_SNAP)
            start_typing(p, now); /* as typing.py: a failed reader releases the wait */
    }
}

static void conn_writable(struct conn *c)
{
    if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            char why[128];
            snprintf(why, sizeof why, "connect: %s", strerror(err));
            conn_fail(c, why);
            return;
        }
        c->connecting = 0;
    }
    conn_flush(c);
}

/* ------------------------------------------------------------------ reporting */

/* The kernel's share (stime) of the last proc_cpu_seconds reading: what a server spends in
   system calls, beside what its own code costs. */
static double proc_last_kernel_seconds;

static double proc_cpu_seconds(long pid, int *ok)
{
    char path[64], text[2048];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    *ok = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strrchr(text, ')'); /* the command name may contain spaces */
    if (!p)
        return 0;
    unsigned long long utime = 0, stime = 0;
    /* After ")": state is field 3, utime field 14, stime field 15. */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return 0;
    *ok = 1;
    proc_last_kernel_seconds = (double)stime / (double)sysconf(_SC_CLK_TCK);
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double percentile(double fraction)
{
    size_t i = (size_t)(fraction * (double)n_lat); /* typing.py's index rule */
    if (i > n_lat - 1)
        i = n_lat - 1;
    return latencies[i];
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: typing_load --port P [--people N] [--rate K] [--warmup S] [--window S]\n"
            "                   [--server-pid PID] [--timeout S] [--token-in-url 0|1]\n"
            "                   [--post-connections 1..4] [--spread-addresses 0|1]\n"
            "N people type a sign-up form at K keys/s each, open-loop, against 127.0.0.1:P.\n"
            "Last stdout line: RESULT {json}.\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--port"))
            opt_port = atoi(v);
        else if (!strcmp(a, "--people"))
            opt_people = atoi(v);
        else if (!strcmp(a, "--rate"))
            opt_rate = atof(v);
        else if (!strcmp(a, "--warmup"))
            opt_warmup = atof(v);
        else if (!strcmp(a, "--window"))
            opt_window = atof(v);
        else if (!strcmp(a, "--server-pid"))
            opt_server_pid = atol(v);
        else if (!strcmp(a, "--timeout"))
            opt_timeout = atof(v);
        else if (!strcmp(a, "--token-in-url"))
            opt_token_in_url = atoi(v);
        else if (!strcmp(a, "--post-connections"))
            opt_post_conns = atoi(v);
        else if (!strcmp(a, "--spread-addresses"))
            opt_spread = atoi(v);
        else
            usage();
    }
    if (opt_port <= 0 || opt_port > 65535 || opt_people <= 0 || !(opt_rate > 0) || opt_window <= 0 ||
        opt_warmup < 0 || opt_post_conns < 1 || opt_post_conns > MAX_POST)
        usage();
    if (opt_timeout < 0)
        opt_timeout = opt_warmup + opt_window + 30;

    /* Thousands of people hold 2-6 sockets each. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: epoll_wait returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    snprintf(host_header, sizeof host_header, "127.0.0.1:%d", opt_port);
    server_addr.sin_family = AF_INET;
    server_addr.sin_port = htons((uint16_t)opt_port);
    server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        die("epoll_create1: %s", strerror(errno));

    people = calloc((size_t)opt_people, sizeof *people);
    heap = calloc((size_t)opt_people, sizeof *heap);
    if (!people || !heap)
        die("out of memory");
    srand48((long)time(NULL) ^ (long)getpid());
    t_start = mono();
    t_window_start = t_start + opt_warmup;
    t_window_end = t_window_start + opt_window;
    t_stop = t_window_end;
    t_deadline = t_start + opt_timeout;
    for (int i = 0; i < opt_people; i++) {
        struct person *p = &people[i];
        p->form = i;
        p->heap_pos = -1;
        p->state = P_START;
        /* Spread the starts over a second so the keystrokes do not arrive in step. */
        set_timer(p, t_start + drand48());
    }
    fprintf(stderr, "typing_load: %d people x %.2f keys/s = %.0f edits/s offered, warm-up %.1f s, window %.1f s\n",
            opt_people, opt_rate, opt_people * opt_rate, opt_warmup, opt_window);

    double cpu0 = 0, cpu1 = 0, kernel0 = 0, kernel1 = 0, self0 = 0, self1 = 0, w0 = 0, w1 = 0;
    int server_ok0 = 0, server_ok1 = 0, window_started = 0, window_ended = 0, timed_out = 0;
    double next_progress = t_start + 5;
    /* Small batches: timers (keystrokes) are only looked at between batches, so a big
     * batch of answers would make keystrokes late. */
    struct epoll_event events[128];

    for (;;) {
        double now = mono();
        if (!window_started && now >= t_window_start) {
            window_started = 1;
            in_window = 1;
            w0 = now;
            self0 = self_cpu_seconds();
            if (opt_server_pid) {
                cpu0 = proc_cpu_seconds(opt_server_pid, &server_ok0);
                kernel0 = proc_last_kernel_seconds;
            }
            fprintf(stderr, "window started\n");
        }
        if (window_started && !window_ended && now >= t_window_end) {
            window_ended = 1;
            in_window = 0;
            w1 = now;
            self1 = self_cpu_seconds();
            if (opt_server_pid) {
                cpu1 = proc_cpu_seconds(opt_server_pid, &server_ok1);
                kernel1 = proc_last_kernel_seconds;
            }
            fprintf(stderr, "window ended; draining\n");
        }
        while (heap_n && heap[0]->timer_at <= now) {
            struct person *p = heap[0];
            cancel_timer(p);
            person_timer(p, now);
        }
        free_dead();
        if (now >= next_progress) {
            fprintf(stderr, "t=%.0fs sent %ld answered %ld non-202 %ld errors %ld latencies %zu\n",
                    now - t_start, n_sent, n_answered, n_non202, n_errors, n_lat);
            next_progress += 5;
        }
        if (people_done == opt_people)
            break;
        if (interrupted || now >= t_deadline) {
            timed_out = !interrupted;
            break;
        }

        double wake = t_deadline;
        if (heap_n && heap[0]->timer_at < wake)
            wake = heap[0]->timer_at;
        if (!window_started && t_window_start < wake)
            wake = t_window_start;
        if (!window_ended && t_window_end < wake)
            wake = t_window_end;
        if (next_progress < wake)
            wake = next_progress;
        int timeout_ms = (int)ceil((wake - now) * 1000.0);
        if (timeout_ms < 0)
            timeout_ms = 0;
        int n = epoll_wait(epfd, events, (int)(sizeof events / sizeof events[0]), timeout_ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c->dead)
                continue;
            if (events[i].events & (EPOLLOUT | EPOLLERR) && (c->connecting || c->want_out))
                conn_writable(c);
            if (!c->dead && !c->connecting && events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                conn_read(c);
        }
        free_dead();
    }

    double now = mono();
    if (!window_started) { /* stopped before the window: report an empty one */
        w0 = now;
        self0 = self_cpu_seconds();
        if (opt_server_pid) {
            cpu0 = proc_cpu_seconds(opt_server_pid, &server_ok0);
            kernel0 = proc_last_kernel_seconds;
        }
    }
    if (!window_ended) {
        w1 = now;
        self1 = self_cpu_seconds();
        if (opt_server_pid) {
            cpu1 = proc_cpu_seconds(opt_server_pid, &server_ok1);
            kernel1 = proc_last_kernel_seconds;
        }
    }
    /* Forms cut short by the time limit are scored with what arrived. */
    for (int i = 0; i < opt_people; i++)
        if (people[i].state != P_DONE && people[i].state != P_START && people[i].revs.slots)
            score_form(&people[i]);

    double elapsed = w1 - w0 > 0 ? w1 - w0 : 1e-9;
    qsort(latencies, n_lat, sizeof *latencies, cmp_float);
    FILE *o = stdout;
    /* nominal: people x rate; offered: keystrokes actually due in the window (lower than
     * nominal by the pause between forms: 0.5 s of grace + page + snapshot per form). */
    fprintf(o, "RESULT {\"people\": %d, \"keys_per_s\": %g, \"nominal_per_s\": %.1f, \"offered_per_s\": %.1f, ",
            opt_people, opt_rate, opt_people * opt_rate, window_keys / (w1 - w0 > 0 ? w1 - w0 : 1e-9));
    fprintf(o, "\"edits_per_s\": %.1f, \"window_s\": %.1f, \"window_sent\": %ld, ", window_ok / elapsed, elapsed,
            window_sent);
    fprintf(o, "\"queued\": %ld, ", n_queued);
    fprintf(o, "\"sent\": %ld, \"answered\": %ld, \"non_202\": %ld, \"errors\": %ld, \"error_kinds\": {", n_sent,
            n_answered, n_non202, n_errors);
    for (int i = 0; i < n_kinds; i++) {
        if (i)
            fputs(", ", o);
        json_string(o, kinds[i].kind);
        fprintf(o, ": %ld", kinds[i].count);
    }
    fprintf(o, "}, \"latency_ms\": {\"n\": %zu", n_lat);
    if (n_lat)
        fprintf(o, ", \"p50\": %.2f, \"p99\": %.2f, \"max\": %.2f}", percentile(0.50), percentile(0.99),
                latencies[n_lat - 1]);
    else
        fputs(", \"p50\": null, \"p99\": null, \"max\": null}", o);
    fprintf(o, ", \"edits_without_event\": %ld", n_without_event);
    if (opt_server_pid && server_ok0 && server_ok1) {
        double cpu = cpu1 - cpu0;
        fprintf(o, ", \"server_cpu_percent\": %.1f, \"server_cpu_us_per_edit\": %.1f", cpu / elapsed * 100,
                cpu / (double)(window_ok > 0 ? window_ok : 1) * 1e6);
        fprintf(o, ", \"server_kernel_us_per_edit\": %.1f",
                (kernel1 - kernel0) / (double)(window_ok > 0 ? window_ok : 1) * 1e6);
    } else {
        fputs(", \"server_cpu_percent\": null, \"server_cpu_us_per_edit\": null, \"server_kernel_us_per_edit\": null", o);
    }
    fprintf(o, ", \"key_lag_ms\": {\"max\": %.2f, \"over_1ms\": %ld, \"over_10ms\": %ld}", lag_max * 1000,
            lag_over_1ms, lag_over_10ms);
    fprintf(o, ", \"generator_cpu_percent\": %.1f, \"timed_out\": %s, \"interrupted\": %s}\n",
            (self1 - self0) / elapsed * 100, timed_out ? "true" : "false", interrupted ? "true" : "false");
    fflush(o);
    fprintf(stderr, "typing_load: %.1f edits/s, p50 %.2f / p99 %.2f ms, %ld without event, non-202 %ld, errors %ld\n",
            window_ok / elapsed, n_lat ? percentile(0.5) : -1.0, n_lat ? percentile(0.99) : -1.0, n_without_event,
            n_non202, n_errors);
    return 0;
}
