/* The attacker's side of tests/kernel_network.rs: one network trick per
 * invocation, run as a child of a magus spell.
 *
 *   probe ROW HOST PORT MARKER [PORTFILE | NSPATH]
 *
 * Prints one line: "ok ..." when the trick got through (data sent and, for
 * UDP, the listener's echo received), "fail <step>: <errno>" otherwise.
 * Always exits 0, so the spell's output carries the verdict.
 *
 * io_uring is driven with raw syscalls (no liburing in CI): one SQE at a
 * time, waited for with io_uring_enter(GETEVENTS). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/netlink.h>
#include <linux/vm_sockets.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

static const char *marker;

static int fail(const char *step) {
    printf("fail %s: %s\n", step, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
    return 0;
}

/* HOST and PORT as a socket address; the family follows the address. */
static socklen_t address(const char *host, int port, struct sockaddr_storage *out) {
    memset(out, 0, sizeof *out);
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        return sizeof *v4;
    }
    inet_pton(AF_INET6, host, &v6->sin6_addr);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return sizeof *v6;
}

/* Waits up to 1.5 s for the UDP listener's echo of the marker. */
static int echo_back(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char buf[512];
    if (poll(&p, 1, 1500) != 1) {
        printf("fail echo: timeout\n");
        return 0;
    }
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    if (n < 0) return fail("recv");
    printf("ok echoed\n");
    return 0;
}

static int stream(const char *host, int port, int protocol) {
    struct sockaddr_storage sa;
    socklen_t len = address(host, port, &sa);
    int fd = socket(sa.ss_family, SOCK_STREAM, protocol);
    if (fd < 0) return fail("socket");
    if (connect(fd, (struct sockaddr *)&sa, len) < 0) return fail("connect");
    if (send(fd, marker, strlen(marker), 0) < 0) return fail("send");
    printf("ok sent\n");
    return 0;
}

static int fast_open(const char *host, int port) {
    struct sockaddr_storage sa;
    socklen_t len = address(host, port, &sa);
    int fd = socket(sa.ss_family, SOCK_STREAM, 0);
    if (fd < 0) return fail("socket");
    if (sendto(fd, marker, strlen(marker), MSG_FASTOPEN, (struct sockaddr *)&sa, len) < 0)
        return fail("sendto");
    printf("ok sent\n");
    return 0;
}

static int fast_open_connect(const char *host, int port) {
    struct sockaddr_storage sa;
    socklen_t len = address(host, port, &sa);
    int fd = socket(sa.ss_family, SOCK_STREAM, 0);
    int on = 1;
    if (fd < 0) return fail("socket");
    if (setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &on, sizeof on) < 0)
        return fail("setsockopt");
    if (connect(fd, (struct sockaddr *)&sa, len) < 0) return fail("connect");
    if (send(fd, marker, strlen(marker), 0) < 0) return fail("send");
    printf("ok sent\n");
    return 0;
}

static int udp(const char *host, int port) {
    struct sockaddr_storage sa;
    socklen_t len = address(host, port, &sa);
    int fd = socket(sa.ss_family, SOCK_DGRAM, 0);
    if (fd < 0) return fail("socket");
    if (sendto(fd, marker, strlen(marker), 0, (struct sockaddr *)&sa, len) < 0)
        return fail("sendto");
    return echo_back(fd);
}

/* An echo request carrying the marker: a raw socket where allowed, else
 * an unprivileged ping socket (net.ipv4.ping_group_range). */
static int icmp(const char *host) {
    struct sockaddr_storage sa;
    socklen_t len = address(host, 0, &sa);
    int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    if (fd < 0) fd = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
    if (fd < 0) return fail("socket");
    unsigned char packet[128] = {0};
    struct icmphdr *h = (struct icmphdr *)packet;
    h->type = ICMP_ECHO;
    h->un.echo.id = htons(0x4d47);
    size_t n = sizeof *h + strlen(marker);
    memcpy(packet + sizeof *h, marker, strlen(marker));
    unsigned long sum = 0;
    for (size_t i = 0; i < n; i += 2) sum += packet[i] << 8 | (i + 1 < n ? packet[i + 1] : 0);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    h->checksum = htons(~sum & 0xffff);
    if (sendto(fd, packet, n, 0, (struct sockaddr *)&sa, len) < 0) return fail("sendto");
    printf("ok sent\n");
    return 0;
}

/* listen() on a socket never bound: the kernel picks a port. The port goes
 * to PORTFILE; the test connects from outside and sends the marker. */
static int listen_unbound(const char *host, const char *portfile) {
    struct sockaddr_storage sa;
    socklen_t len = address(host, 0, &sa);
    int fd = socket(sa.ss_family, SOCK_STREAM, 0);
    if (fd < 0) return fail("socket");
    if (listen(fd, 1) < 0) return fail("listen");
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0) return fail("getsockname");
    int port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    FILE *f = fopen(portfile, "w");
    if (!f) return fail("portfile");
    fprintf(f, "%d\n", port);
    fclose(f);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 2500) != 1) {
        printf("fail accept: timeout\n");
        return 0;
    }
    int peer = accept(fd, NULL, NULL);
    char buf[256] = {0};
    if (peer < 0 || recv(peer, buf, sizeof buf - 1, 0) < 0) return fail("accept");
    printf(strstr(buf, marker) ? "ok accepted\n" : "fail accepted: no marker\n");
    return 0;
}

/* A packet socket on loopback, sniffing other processes' traffic for the
 * marker the test keeps sending. */
static int packet(void) {
    int fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL));
    if (fd < 0) return fail("socket");
    struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
    ll.sll_ifindex = if_nametoindex("lo");
    if (bind(fd, (struct sockaddr *)&ll, sizeof ll) < 0) return fail("bind");
    time_t until = time(NULL) + 3;
    char buf[2048];
    while (time(NULL) < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 500) != 1) continue;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0 && memmem(buf, n, marker, strlen(marker))) {
            printf("ok sniffed\n");
            return 0;
        }
    }
    printf("fail sniff: nothing seen\n");
    return 0;
}

/* vsock to the hypervisor's host (CID 2), which no network namespace
 * isolates. Nothing of ours listens there: the host answering at all
 * (a connection, or a reset or refusal from its side) means the socket
 * reached outside the machine. */
static int vsock(int port) {
    int fd = socket(AF_VSOCK, SOCK_STREAM, 0);
    if (fd < 0) return fail("socket");
    struct sockaddr_vm vm = {.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_HOST, .svm_port = port};
    fcntl(fd, F_SETFL, O_NONBLOCK);
    int res = connect(fd, (struct sockaddr *)&vm, sizeof vm);
    if (res < 0 && errno == EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int err = 0;
        socklen_t len = sizeof err;
        if (poll(&p, 1, 1500) != 1) {
            printf("fail connect: timeout\n");
            return 0;
        }
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        errno = err;
        res = err ? -1 : 0;
    }
    if (res == 0 || errno == ECONNRESET || errno == ECONNREFUSED) {
        printf("ok host-answered %s\n", res == 0 ? "connected" : strerrorname_np(errno));
        return 0;
    }
    return fail("connect");
}

/* NETLINK_USERSOCK, the one netlink protocol whose messages any user may
 * send to another process's socket: unicast to the port id PORT (the
 * test's listener) in this network namespace. */
static int netlink_user(int port) {
    int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_USERSOCK);
    if (fd < 0) return fail("socket");
    char buf[NLMSG_SPACE(256)];
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    size_t len = strlen(marker);
    memset(buf, 0, sizeof buf);
    h->nlmsg_len = NLMSG_LENGTH(len);
    memcpy(NLMSG_DATA(h), marker, len);
    struct sockaddr_nl to = {.nl_family = AF_NETLINK, .nl_pid = (unsigned)port};
    if (sendto(fd, buf, h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof to) < 0)
        return fail("sendto");
    printf("ok sent\n");
    return 0;
}

/* Joins the network namespace at NSPATH (under magus, /proc/1/ns/net is
 * its reaper's: the host's), then connects to the host's listener. */
static int setns_tcp(const char *host, int port, const char *nspath) {
    int ns = open(nspath, O_RDONLY | O_CLOEXEC);
    if (ns < 0) return fail("open");
    if (setns(ns, CLONE_NEWNET) < 0) return fail("setns");
    return stream(host, port, 0);
}

/* ---- io_uring, by hand */

struct ring {
    int fd;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static int ring_setup(struct ring *r) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    r->fd = syscall(__NR_io_uring_setup, 4, &p);
    if (r->fd < 0) return -1;
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, IORING_OFF_CQ_RING);
    r->sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED, r->fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED) return -1;
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(cq + p.cq_off.head);
    r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    return 0;
}

/* Submits one prepared SQE and returns its result (negative errno). */
static int ring_run(struct ring *r, struct io_uring_sqe *sqe) {
    unsigned tail = *r->sq_tail, index = tail & *r->sq_mask;
    r->sqes[index] = *sqe;
    r->sq_array[index] = index;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
        return -errno;
    unsigned head = *r->cq_head;
    while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
    }
    int res = r->cqes[head & *r->cq_mask].res;
    __atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
    return res;
}

static int uring_fail(const char *step, int res) {
    errno = -res;
    return fail(step);
}

/* IORING_OP_SOCKET, then CONNECT (streams), then SENDMSG with the marker
 * (to the address itself for datagrams). */
static int uring(const char *host, int port, int type, int protocol) {
    struct ring r;
    if (ring_setup(&r) < 0) return fail("io_uring_setup");
    struct sockaddr_storage sa;
    socklen_t len = address(host, port, &sa);
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_SOCKET;
    sqe.fd = sa.ss_family;
    sqe.off = type;
    sqe.len = protocol;
    int fd = ring_run(&r, &sqe);
    if (fd < 0) return uring_fail("IORING_OP_SOCKET", fd);
    struct iovec iov = {.iov_base = (void *)marker, .iov_len = strlen(marker)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (type == SOCK_STREAM) {
        memset(&sqe, 0, sizeof sqe);
        sqe.opcode = IORING_OP_CONNECT;
        sqe.fd = fd;
        sqe.addr = (unsigned long)&sa;
        sqe.off = len;
        int res = ring_run(&r, &sqe);
        if (res < 0) return uring_fail("IORING_OP_CONNECT", res);
    } else {
        msg.msg_name = &sa;
        msg.msg_namelen = len;
    }
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_SENDMSG;
    sqe.fd = fd;
    sqe.addr = (unsigned long)&msg;
    sqe.len = 1;
    int res = ring_run(&r, &sqe);
    if (res < 0) return uring_fail("IORING_OP_SENDMSG", res);
    if (type == SOCK_DGRAM) return echo_back(fd);
    printf("ok sent\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: probe ROW HOST PORT MARKER [PORTFILE]\n");
        return 2;
    }
    const char *row = argv[1], *host = argv[2];
    int port = atoi(argv[3]);
    marker = argv[4];
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(row, "tcp")) return stream(host, port, 0);
    if (!strcmp(row, "mptcp")) return stream(host, port, IPPROTO_MPTCP);
    if (!strcmp(row, "fastopen")) return fast_open(host, port);
    if (!strcmp(row, "fastopen-connect")) return fast_open_connect(host, port);
    if (!strcmp(row, "udp")) return udp(host, port);
    if (!strcmp(row, "icmp")) return icmp(host);
    if (!strcmp(row, "listen") && argc > 5) return listen_unbound(host, argv[5]);
    if (!strcmp(row, "packet")) return packet();
    if (!strcmp(row, "vsock")) return vsock(port);
    if (!strcmp(row, "netlink-user")) return netlink_user(port);
    if (!strcmp(row, "setns-tcp") && argc > 5) return setns_tcp(host, port, argv[5]);
    if (!strcmp(row, "uring-tcp")) return uring(host, port, SOCK_STREAM, 0);
    if (!strcmp(row, "uring-mptcp")) return uring(host, port, SOCK_STREAM, IPPROTO_MPTCP);
    if (!strcmp(row, "uring-udp")) return uring(host, port, SOCK_DGRAM, 0);
    fprintf(stderr, "unknown row %s\n", row);
    return 2;
}
