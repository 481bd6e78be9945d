/*
 * What one small chunk costs the sending thread, framed two ways: three iovecs through
 * sendmsg() (the size line, the bytes, CRLF) or one buffer through send(). Loopback TCP,
 * TCP_NODELAY, a reader thread draining the other end; rounds alternate the two ways.
 *
 *   cc -O2 -o /tmp/send_shapes Benchmarks/send_shapes.c -lpthread
 *   taskset -c 0 /tmp/send_shapes 200000
 *
 * Issue 24, step 30: why mhd_shim_send_chunk_now frames a small chunk in one buffer.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static void *drain(void *argument) {
    int fd = *(int *) argument;
    char buffer[65536];
    while (read(fd, buffer, sizeof buffer) > 0) {}
    return NULL;
}

static double thread_cpu_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 200000;
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t address_length = sizeof address;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (bind(listener, (struct sockaddr *) &address, sizeof address) != 0 || listen(listener, 1) != 0) return 1;
    getsockname(listener, (struct sockaddr *) &address, &address_length);
    int reader = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(reader, (struct sockaddr *) &address, sizeof address) != 0) return 1;
    int writer = accept(listener, NULL, NULL);
    int on = 1;
    setsockopt(writer, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    pthread_t thread;
    pthread_create(&thread, NULL, drain, &reader);

    static const char payload[] = ": ping\n\n", size_line[] = "8\r\n", crlf[] = "\r\n";
    for (int round = 0; round < 6; round++) {
        int one_buffer = round % 2;
        double start = thread_cpu_seconds();
        for (int i = 0; i < count; i++) {
            if (one_buffer) {
                char framed[512];
                memcpy(framed, size_line, 3);
                memcpy(framed + 3, payload, 8);
                memcpy(framed + 11, crlf, 2);
                send(writer, framed, 13, MSG_DONTWAIT | MSG_NOSIGNAL);
            } else {
                struct iovec parts[3] = {
                    { (void *) size_line, 3 }, { (void *) payload, 8 }, { (void *) crlf, 2 },
                };
                struct msghdr message = { .msg_iov = parts, .msg_iovlen = 3 };
                sendmsg(writer, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
            }
        }
        printf("%-18s %.3f µs a chunk\n", one_buffer ? "send, one buffer" : "sendmsg, 3 iovecs",
               (thread_cpu_seconds() - start) / count * 1e6);
    }
    return 0;
}
