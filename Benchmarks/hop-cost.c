// What one message hop between two processes costs on this machine, through libzmq and
// through a plain TCP socket read and written by the application's own thread.
//
// A client sends a small message and waits for the echo, paced at a rate (so every hop starts
// from sleeping threads, as in a cluster at 10,000 events a second) or as fast as it can. The
// echo server is a child process. Printed: round-trip p50 and p99, and the CPU time both
// processes spent per round trip (getrusage), user and system.
//
//   cc -O2 -o /tmp/hop-cost Benchmarks/hop-cost.c -lzmq
//   /tmp/hop-cost zmq 20000 5000      # transport, round trips, rate per second (0: unpaced)
//   /tmp/hop-cost tcp 20000 5000
//   FLOWKIT=.build-release/release/flowkit /tmp/hop-cost flowkit 20000 5000
//
// `flowkit` keeps the libzmq DEALER client and makes the echo server FlowKit's own: a ROUTER on
// an I/O loop with the ZMTP engine, echoing from a task on the loop (`flowkit bench-peer
// loop-echo`), the path of a node's client socket. The echo side's CPU is printed on its own, so
// it compares with the C echo servers of the other two modes.
//
// libzmq carries each message through its I/O thread on both sides (the application thread
// hands it over a pipe and an eventfd), so a round trip wakes four threads twice where plain
// TCP wakes two; the difference is the price of that thread.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

enum { message_bytes = 32 };

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_until(uint64_t deadline) {
    struct timespec t = { .tv_sec = deadline / 1000000000u, .tv_nsec = deadline % 1000000000u };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {}
}

static void check(int ok, const char *what) {
    if (!ok) { perror(what); exit(2); }
}

// Plain TCP: the application thread reads and writes the socket itself.
static int tcp_listen(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    check(bind(fd, (struct sockaddr *)&address, sizeof address) == 0, "bind");
    check(listen(fd, 1) == 0, "listen");
    socklen_t length = sizeof address;
    getsockname(fd, (struct sockaddr *)&address, &length);
    *port = ntohs(address.sin_port);
    return fd;
}

static void tcp_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int read_full(int fd, char *buffer, size_t count) {
    size_t done = 0;
    while (done < count) {
        ssize_t n = read(fd, buffer + done, count - done);
        if (n <= 0) return -1;
        done += (size_t)n;
    }
    return 0;
}

static void tcp_echo(int listener) {
    int fd = accept(listener, NULL, NULL);
    tcp_nodelay(fd);
    char buffer[message_bytes];
    while (read_full(fd, buffer, sizeof buffer) == 0) {
        if (write(fd, buffer, sizeof buffer) != sizeof buffer) break;
    }
    _exit(0);
}

// libzmq: DEALER client, ROUTER echo server, as FlowKit's clients and nodes talk.
static void zmq_echo(const char *endpoint) {
    void *context = zmq_ctx_new();
    void *router = zmq_socket(context, ZMQ_ROUTER);
    check(zmq_bind(router, endpoint) == 0, "zmq_bind");
    char identity[256], body[message_bytes];
    for (;;) {
        int n = zmq_recv(router, identity, sizeof identity, 0);
        if (n < 0) break;
        zmq_recv(router, body, sizeof body, 0);
        zmq_send(router, identity, (size_t)n, ZMQ_SNDMORE);
        zmq_send(router, body, sizeof body, 0);
        if (body[0] == 'q') break;
    }
    zmq_close(router);
    zmq_ctx_term(context);
    _exit(0);
}

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double seconds(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s zmq|tcp|flowkit ROUNDTRIPS RATE (0: unpaced)\n", argv[0]);
        return 64;
    }
    const int flowkit = strcmp(argv[1], "flowkit") == 0;
    const int zmq = flowkit || strcmp(argv[1], "zmq") == 0;
    const int count = atoi(argv[2]);
    const double rate = atof(argv[3]);
    uint64_t *rtt = calloc((size_t)count, sizeof *rtt);
    char buffer[message_bytes];
    memset(buffer, 'x', sizeof buffer);

    int port = 0, listener = -1;
    char endpoint[64];
    if (zmq) {
        // A port for the child to bind: ask the OS for a free one.
        listener = tcp_listen(&port);
        close(listener);
        snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    } else {
        listener = tcp_listen(&port);
    }
    pid_t child = fork();
    if (child == 0) {
        if (flowkit) {
            // Every round trip, the warm-up and the closing one.
            char total[32];
            snprintf(total, sizeof total, "%d", count + 1001);
            const char *binary = getenv("FLOWKIT") ? getenv("FLOWKIT") : "flowkit";
            execlp(binary, binary, "bench-peer", "loop-echo", endpoint, total, (char *)NULL);
            perror("exec flowkit");
            _exit(2);
        }
        if (zmq) zmq_echo(endpoint); else tcp_echo(listener);
    }

    void *context = NULL, *dealer = NULL;
    int fd = -1;
    if (zmq) {
        context = zmq_ctx_new();
        dealer = zmq_socket(context, ZMQ_DEALER);
        check(zmq_connect(dealer, endpoint) == 0, "zmq_connect");
    } else {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        check(connect(fd, (struct sockaddr *)&address, sizeof address) == 0, "connect");
        tcp_nodelay(fd);
    }

    const int warmup = 1000;
    struct rusage before_self, before_children;
    const uint64_t interval = rate > 0 ? (uint64_t)(1e9 / rate) : 0;
    uint64_t next = now_ns();
    for (int i = -warmup; i < count; i++) {
        if (i == 0) {
            getrusage(RUSAGE_SELF, &before_self);
            next = now_ns();
        }
        if (interval) {
            next += interval;
            sleep_until(next);
        }
        const uint64_t start = now_ns();
        if (zmq) {
            zmq_send(dealer, buffer, sizeof buffer, 0);
            check(zmq_recv(dealer, buffer, sizeof buffer, 0) == sizeof buffer, "zmq_recv");
        } else {
            check(write(fd, buffer, sizeof buffer) == sizeof buffer, "write");
            check(read_full(fd, buffer, sizeof buffer) == 0, "read");
        }
        if (i >= 0) rtt[i] = now_ns() - start;
    }
    struct rusage after_self;
    getrusage(RUSAGE_SELF, &after_self);

    if (zmq) {
        buffer[0] = 'q';
        zmq_send(dealer, buffer, sizeof buffer, 0);
        zmq_recv(dealer, buffer, sizeof buffer, 0);
        zmq_close(dealer);
        zmq_ctx_term(context);
    } else {
        close(fd);
    }
    // The child's CPU covers its warm-up too: counted out in proportion below.
    getrusage(RUSAGE_CHILDREN, &before_children);
    int status;
    waitpid(child, &status, 0);
    struct rusage children;
    getrusage(RUSAGE_CHILDREN, &children);

    qsort(rtt, (size_t)count, sizeof *rtt, compare);
    const double share = (double)count / (double)(count + warmup);
    const double self_user = seconds(after_self.ru_utime) - seconds(before_self.ru_utime);
    const double self_system = seconds(after_self.ru_stime) - seconds(before_self.ru_stime);
    const double child_user = seconds(children.ru_utime) * share;
    const double child_system = seconds(children.ru_stime) * share;
    const double switches = (double)(after_self.ru_nvcsw - before_self.ru_nvcsw + (children.ru_nvcsw) * share);
    printf(
        "%s rate %.0f/s: rtt p50 %.1f µs p99 %.1f µs | cpu per round trip %.1f µs (user %.1f, system %.1f; the echo side %.1f) | voluntary switches per round trip %.1f\n",
        argv[1], rate, rtt[count / 2] / 1e3, rtt[(size_t)(count * 0.99)] / 1e3,
        (self_user + self_system + child_user + child_system) / count * 1e6,
        (self_user + child_user) / count * 1e6, (self_system + child_system) / count * 1e6,
        (child_user + child_system) / count * 1e6, switches / count
    );
    return 0;
}
