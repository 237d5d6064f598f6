/*
 * Where the proxy's throughput goes (README, "Benchmarks"): 100 MiB over
 * loopback sent directly, through a relay built as the proxy's
 * (src/enforce/linux/proxy/serve.rs: splice through a 1 MiB pipe,
 * TCP_NODELAY on both legs, no SPLICE_F_MORE), and through a read/write
 * relay with a 1 MiB buffer; the three interleaved run by run, so load
 * from other work falls on all alike. Prints wall time and the CPU time
 * of all parties (client, relay, server: one process, three threads).
 *
 *     cc -O2 -o /tmp/relay-cpu scripts/relay-cpu.c -lpthread
 *     /tmp/relay-cpu 30
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TRANSFER (100L << 20)
#define CHUNK (1 << 20)
#define MAX_REPS 200

static int sink_port, relay_port, sink_done[2];
static volatile int relay_mode; /* 0: splice, 1: read/write */
static char *chunk;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double cpu_ms(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e3 +
           (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e3;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static int listener(int *port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || bind(s, (void *)&a, sizeof a) || listen(s, 16) || getsockname(s, (void *)&a, &len))
        die("listen");
    *port = ntohs(a.sin_port);
    return s;
}

static int dial(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons(port)};
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (void *)&a, sizeof a))
        die("connect");
    return s;
}

static void write_all(int fd, const char *p, long n) {
    while (n > 0) {
        ssize_t m = write(fd, p, n);
        if (m <= 0)
            die("write");
        n -= m;
        p += m;
    }
}

/* The server: reads each connection to its end, then reports the bytes. */
static void *sink(void *arg) {
    char *buf = malloc(CHUNK);
    for (;;) {
        int c = accept((int)(long)arg, 0, 0);
        long total = 0;
        ssize_t n;
        while ((n = read(c, buf, CHUNK)) > 0)
            total += n;
        close(c);
        write_all(sink_done[1], (char *)&total, sizeof total);
    }
    return NULL;
}

/* As serve.rs's `spliced`: socket -> pipe -> socket. */
static void relay_splice(int from, int to) {
    int p[2];
    if (pipe2(p, O_CLOEXEC))
        die("pipe");
    fcntl(p[1], F_SETPIPE_SZ, CHUNK);
    for (;;) {
        ssize_t n = splice(from, 0, p[1], 0, CHUNK, SPLICE_F_MOVE);
        if (n <= 0)
            break;
        while (n > 0) {
            ssize_t m = splice(p[0], 0, to, 0, n, SPLICE_F_MOVE);
            if (m <= 0)
                die("splice");
            n -= m;
        }
    }
    close(p[0]);
    close(p[1]);
}

static void relay_copy(int from, int to, char *buf) {
    ssize_t n;
    while ((n = read(from, buf, CHUNK)) > 0)
        write_all(to, buf, n);
}

static void *relay(void *arg) {
    char *buf = malloc(CHUNK);
    int one = 1;
    for (;;) {
        int client = accept((int)(long)arg, 0, 0);
        int upstream = dial(sink_port);
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (relay_mode == 0)
            relay_splice(client, upstream);
        else
            relay_copy(client, upstream, buf);
        shutdown(upstream, SHUT_WR);
        close(client);
        close(upstream);
    }
    return NULL;
}

static void transfer(int port) {
    int s = dial(port);
    long total;
    for (long i = 0; i < TRANSFER / CHUNK; i++)
        write_all(s, chunk, CHUNK);
    shutdown(s, SHUT_WR);
    if (read(sink_done[0], &total, sizeof total) != sizeof total || total != TRANSFER)
        die("short transfer");
    close(s);
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    static const char *names[3] = {"direct", "splice", "copy"};
    static double wall[3][MAX_REPS], cpu[3][MAX_REPS];
    int reps = argc > 1 ? atoi(argv[1]) : 30;
    pthread_t t;
    if (reps < 1 || reps > MAX_REPS)
        reps = 30;
    chunk = malloc(CHUNK);
    memset(chunk, 0x5a, CHUNK);
    if (pipe(sink_done))
        die("pipe");
    int ls = listener(&sink_port), lr = listener(&relay_port);
    pthread_create(&t, 0, sink, (void *)(long)ls);
    pthread_create(&t, 0, relay, (void *)(long)lr);
    for (int i = 0; i < reps; i++) {
        for (int k = 0; k < 3; k++) {
            int which = (i & 1) ? 2 - k : k; /* alternate the order */
            if (which > 0)
                relay_mode = which - 1;
            double c0 = cpu_ms(), t0 = now_ms();
            transfer(which == 0 ? sink_port : relay_port);
            wall[which][i] = now_ms() - t0;
            cpu[which][i] = cpu_ms() - c0;
        }
    }
    for (int k = 0; k < 3; k++) {
        qsort(wall[k], reps, sizeof(double), by_value);
        qsort(cpu[k], reps, sizeof(double), by_value);
        printf("%-6s wall min %6.1f median %6.1f ms | CPU, all parties: min %6.1f median %6.1f ms\n",
               names[k], wall[k][0], wall[k][reps / 2], cpu[k][0], cpu[k][reps / 2]);
    }
    return 0;
}
