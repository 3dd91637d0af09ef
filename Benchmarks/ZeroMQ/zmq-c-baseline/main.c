/*
 * Raw libzmq baseline for the Swift ZeroMQ wrapper, measured exactly like zmq-perf:
 *
 *   zmq-c-baseline thr COUNT SIZE   SUB (this process, binds) <- XPUB (child, connects)
 *   zmq-c-baseline lat COUNT SIZE   REQ (this process, binds) <-> REP echo (child)
 *
 * The child is this executable started again with posix_spawn (as zmq-perf does).
 * Throughput is timed from the first to the last message at the subscriber; the
 * publisher waits for the subscription (XPUB) and uses XPUB_NODROP so nothing is lost.
 * Latency times every round trip after 1000 warm-up ones; prints median and p99.
 */
#include <zmq.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { HWM = 100000, WARMUP = 1000 };

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* CPU time (user + system) of this process so far, in microseconds (children excluded). */
static double cpu_us(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_sec * 1e6 + usage.ru_stime.tv_usec;
}

static void check(int rc, const char *what) {
    if (rc == -1) {
        fprintf(stderr, "%s: %s\n", what, zmq_strerror(zmq_errno()));
        exit(1);
    }
}

static void set_int(void *socket, int option, int value) {
    check(zmq_setsockopt(socket, option, &value, sizeof value), "zmq_setsockopt");
}

static pid_t spawn_child(const char *role, const char *endpoint, const char *count, const char *size) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) { perror("readlink"); exit(1); }
    self[n] = 0;
    char *argv[] = {self, (char *)role, (char *)endpoint, (char *)count, (char *)size, NULL};
    pid_t pid;
    if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) { perror("posix_spawn"); exit(1); }
    return pid;
}

static void publisher(const char *endpoint, long count, size_t size) {
    void *context = zmq_ctx_new();
    void *socket = zmq_socket(context, ZMQ_XPUB);
    set_int(socket, ZMQ_SNDHWM, HWM);
    set_int(socket, ZMQ_XPUB_NODROP, 1);
    check(zmq_connect(socket, endpoint), "zmq_connect");
    char subscription[256];
    check(zmq_recv(socket, subscription, sizeof subscription, 0), "zmq_recv(subscription)");
    char *payload = calloc(1, size ? size : 1);
    for (long i = 0; i < count; i++) check(zmq_send(socket, payload, size, 0), "zmq_send");
    set_int(socket, ZMQ_LINGER, -1);
    zmq_close(socket);
    zmq_ctx_term(context);
    free(payload);
}

static void throughput(const char *argv0, const char *count_text, const char *size_text) {
    long count = atol(count_text);
    void *context = zmq_ctx_new();
    void *socket = zmq_socket(context, ZMQ_SUB);
    set_int(socket, ZMQ_RCVHWM, HWM);
    check(zmq_setsockopt(socket, ZMQ_SUBSCRIBE, "", 0), "subscribe");
    check(zmq_bind(socket, "tcp://127.0.0.1:*"), "zmq_bind");
    char endpoint[256];
    size_t length = sizeof endpoint;
    check(zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, endpoint, &length), "ZMQ_LAST_ENDPOINT");
    pid_t child = spawn_child("pub-child", endpoint, count_text, size_text);
    (void)argv0;

    zmq_msg_t message;
    zmq_msg_init(&message);
    check(zmq_msg_recv(&message, socket, 0), "zmq_msg_recv");
    double start = now_us();
    double cpu_start = cpu_us();
    size_t bytes = zmq_msg_size(&message);
    for (long i = 1; i < count; i++) {
        check(zmq_msg_recv(&message, socket, 0), "zmq_msg_recv");
        bytes += zmq_msg_size(&message);
    }
    double elapsed = now_us() - start;
    double cpu = cpu_us() - cpu_start;
    zmq_msg_close(&message);
    printf("RESULT pubsub msgs_per_sec=%.0f cpu_ns_per_msg=%.0f messages=%ld bytes=%zu seconds=%.3f\n",
           (count - 1) / (elapsed / 1e6), cpu * 1e3 / (count - 1), count, bytes, elapsed / 1e6);
    waitpid(child, NULL, 0);
    zmq_close(socket);
    zmq_ctx_term(context);
}

static void echo_server(const char *endpoint, long count) {
    void *context = zmq_ctx_new();
    void *socket = zmq_socket(context, ZMQ_REP);
    check(zmq_connect(socket, endpoint), "zmq_connect");
    zmq_msg_t message;
    zmq_msg_init(&message);
    for (long i = 0; i < count + WARMUP; i++) {
        check(zmq_msg_recv(&message, socket, 0), "zmq_msg_recv");
        check(zmq_msg_send(&message, socket, 0), "zmq_msg_send");
    }
    zmq_msg_close(&message);
    zmq_close(socket);
    zmq_ctx_term(context);
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void latency(const char *count_text, const char *size_text) {
    long count = atol(count_text);
    size_t size = (size_t)atol(size_text);
    void *context = zmq_ctx_new();
    void *socket = zmq_socket(context, ZMQ_REQ);
    check(zmq_bind(socket, "tcp://127.0.0.1:*"), "zmq_bind");
    char endpoint[256];
    size_t length = sizeof endpoint;
    check(zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, endpoint, &length), "ZMQ_LAST_ENDPOINT");
    pid_t child = spawn_child("rep-child", endpoint, count_text, size_text);

    char *payload = calloc(1, size ? size : 1);
    double *samples = malloc(sizeof(double) * count);
    zmq_msg_t reply;
    zmq_msg_init(&reply);
    double cpu_start = 0;
    for (long i = 0; i < count + WARMUP; i++) {
        double start = now_us();
        check(zmq_send(socket, payload, size, 0), "zmq_send");
        check(zmq_msg_recv(&reply, socket, 0), "zmq_msg_recv");
        if (i >= WARMUP) samples[i - WARMUP] = now_us() - start;
        if (i == WARMUP - 1) cpu_start = cpu_us();
    }
    double cpu = cpu_us() - cpu_start;
    qsort(samples, count, sizeof(double), compare);
    printf("RESULT reqrep median_us=%.1f p99_us=%.1f cpu_us_per_rt=%.1f roundtrips=%ld\n",
           samples[count / 2], samples[(long)(count * 0.99)], cpu / count, count);
    waitpid(child, NULL, 0);
    zmq_msg_close(&reply);
    zmq_close(socket);
    zmq_ctx_term(context);
    free(samples);
    free(payload);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "thr") == 0) {
        throughput(argv[0], argv[2], argv[3]);
    } else if (argc == 4 && strcmp(argv[1], "lat") == 0) {
        latency(argv[2], argv[3]);
    } else if (argc == 5 && strcmp(argv[1], "pub-child") == 0) {
        publisher(argv[2], atol(argv[3]), (size_t)atol(argv[4]));
    } else if (argc == 5 && strcmp(argv[1], "rep-child") == 0) {
        echo_server(argv[2], atol(argv[3]));
    } else {
        fprintf(stderr, "usage: %s thr COUNT SIZE | lat COUNT SIZE\n", argv[0]);
        return 2;
    }
    return 0;
}
