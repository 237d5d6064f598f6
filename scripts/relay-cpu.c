/*
 * Where the proxy's throughput goes (docs/benchmarks.md, "The proxy
 * transfer"): 100 MiB over loopback, six ways, interleaved run by run so
 * that load from other work falls on all alike:
 *   direct               the client to the server;
 *   splice               through a relay built as the proxy's
 *                        (src/proxy/serve.rs: splice through
 *                        a 1 MiB pipe, TCP_NODELAY, no SPLICE_F_MORE, both
 *                        of its legs on Reno, unpaced, chosen before the
 *                        connection exists);
 *   splice, host CC      the same relay on the host's default congestion
 *                        control (BBR here: the proxy before its Reno legs);
 *   copy                 a read/write relay with a 1 MiB buffer, Reno legs;
 *   direct / splice, Reno client
 *                        the first two with the client on Reno as well, as
 *                        on a host whose default does not pace.
 * Prints medians of the wall time and of the CPU time of all parties
 * (client, relay, server: one process, three threads) and of each.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TRANSFER (100L << 20)
#define CHUNK (1 << 20)
#define MAX_REPS 200
#define MODES 6

enum { DIRECT, SPLICE, SPLICE_PACED, COPY, DIRECT_RENO, SPLICE_RENO };
static const char *names[MODES] = {"direct",          "splice",
                                   "splice, host CC", "copy",
                                   "direct, Reno client", "splice, Reno client"};

static int sink_port, relay_port, sink_done[2];
static volatile int relay_mode;
static char *chunk;
static pthread_t sink_thread, relay_thread;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* CPU time of one thread of this process. */
static double cpu_ms(pthread_t thread) {
    clockid_t clock;
    struct timespec t;
    pthread_getcpuclockid(thread, &clock);
    clock_gettime(clock, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

/* As serve.rs's `unpaced`: Reno, before the connection exists. */
static void unpaced(int s) {
    if (setsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "reno", 4))
        die("TCP_CONGESTION");
}

static int listener(int *port, int reno) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s >= 0 && reno)
        unpaced(s);
    if (s < 0 || bind(s, (void *)&a, sizeof a) || listen(s, 16) || getsockname(s, (void *)&a, &len))
        die("listen");
    *port = ntohs(a.sin_port);
    return s;
}

static int dial(int port, int reno) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons(port)};
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s >= 0 && reno)
        unpaced(s);
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

/* The relay's listener is on Reno (the proxy sets its listeners so);
 * only the leg the relay sends on, to the server, carries the bytes
 * here, and it is dialled with or without Reno by mode. */
static void *relay(void *arg) {
    char *buf = malloc(CHUNK);
    int one = 1;
    for (;;) {
        int client = accept((int)(long)arg, 0, 0);
        int upstream = dial(sink_port, relay_mode != SPLICE_PACED);
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (relay_mode == COPY)
            relay_copy(client, upstream, buf);
        else
            relay_splice(client, upstream);
        shutdown(upstream, SHUT_WR);
        close(client);
        close(upstream);
    }
    return NULL;
}

/* The client: on the host's default congestion control, as any program,
 * or on Reno (what a host whose default does not pace would give). */
static void transfer(int port, int reno) {
    int s = dial(port, reno);
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

static double median(double *v, int n) {
    qsort(v, n, sizeof(double), by_value);
    return v[n / 2];
}

int main(int argc, char **argv) {
    /* wall, then CPU of all, client, relay, server */
    static double m[MODES][5][MAX_REPS];
    int reps = argc > 1 ? atoi(argv[1]) : 30;
    if (reps < 1 || reps > MAX_REPS)
        reps = 30;
    chunk = malloc(CHUNK);
    memset(chunk, 0x5a, CHUNK);
    if (pipe(sink_done))
        die("pipe");
    int ls = listener(&sink_port, 0), lr = listener(&relay_port, 1);
    pthread_create(&sink_thread, 0, sink, (void *)(long)ls);
    pthread_create(&relay_thread, 0, relay, (void *)(long)lr);
    pthread_t self = pthread_self();
    for (int i = 0; i < reps; i++) {
        for (int k = 0; k < MODES; k++) {
            int which = (i & 1) ? MODES - 1 - k : k; /* alternate the order */
            int direct = which == DIRECT || which == DIRECT_RENO;
            int reno = which == DIRECT_RENO || which == SPLICE_RENO;
            if (!direct)
                relay_mode = which == SPLICE_RENO ? SPLICE : which;
            double c0 = cpu_ms(self), r0 = cpu_ms(relay_thread), s0 = cpu_ms(sink_thread);
            double t0 = now_ms();
            transfer(direct ? sink_port : relay_port, reno);
            m[which][0][i] = now_ms() - t0;
            m[which][2][i] = cpu_ms(self) - c0;
            m[which][3][i] = cpu_ms(relay_thread) - r0;
            m[which][4][i] = cpu_ms(sink_thread) - s0;
            m[which][1][i] = m[which][2][i] + m[which][3][i] + m[which][4][i];
        }
    }
    printf("medians of %d, ms per 100 MiB\n", reps);
    for (int k = 0; k < MODES; k++) {
        double v[5];
        for (int q = 0; q < 5; q++)
            v[q] = median(m[k][q], reps);
        printf("%-20s wall %6.1f | CPU, all parties %6.1f: client %5.1f, relay %5.1f, server %5.1f\n",
               names[k], v[0], v[1], v[2], v[3], v[4]);
    }
    return 0;
}
