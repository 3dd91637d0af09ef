/*
 * An open-loop Redis client: sends XADD of a fixed payload at a fixed rate over N connections,
 * each request at its intended time whatever the replies do, and times each reply from that
 * intended time (so a stall shows in the latency instead of slowing the offered load: no
 * coordinated omission). Prints one line of JSON.
 *
 *   redis-openloop <port> <rate> <seconds> <connections> <payload bytes> <stream key>
 *
 * Built by Benchmarks/peers/redis-compare.sh with the system's C compiler; plain POSIX.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

typedef struct {
    int fd;
    uint64_t *pending; /* intended send times of requests not yet answered, a ring */
    size_t head, tail, capacity;
    char *in;          /* bytes read and not yet parsed */
    size_t in_len, in_cap;
    char *out;         /* bytes not yet written */
    size_t out_len, out_cap;
} connection;

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void append(char **buffer, size_t *length, size_t *capacity, const char *bytes, size_t count) {
    if (*length + count > *capacity) {
        *capacity = (*length + count) * 2;
        *buffer = realloc(*buffer, *capacity);
    }
    memcpy(*buffer + *length, bytes, count);
    *length += count;
}

/* The length of the first complete RESP reply in `bytes`, 0 if incomplete; sets *error. */
static size_t reply_length(const char *bytes, size_t length, int *error) {
    const char *end = memchr(bytes, '\n', length);
    if (!end) return 0;
    size_t line = (size_t)(end - bytes) + 1;
    *error = bytes[0] == '-';
    if (bytes[0] != '$') return line;
    long size = strtol(bytes + 1, NULL, 10);
    if (size < 0) return line;
    size_t total = line + (size_t)size + 2;
    return total <= length ? total : 0;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s <port> <rate> <seconds> <connections> <payload bytes> <stream key>\n", argv[0]);
        return 64;
    }
    int port = atoi(argv[1]);
    double rate = atof(argv[2]), seconds = atof(argv[3]);
    int connections = atoi(argv[4]), payload = atoi(argv[5]);
    const char *key = argv[6];
    size_t total = (size_t)(rate * seconds);

    char *value = malloc((size_t)payload);
    memset(value, 'x', (size_t)payload);
    char command[4096];
    int command_length = snprintf(command, sizeof command, "*5\r\n$4\r\nXADD\r\n$%zu\r\n%s\r\n$1\r\n*\r\n$1\r\nf\r\n$%d\r\n", strlen(key), key, payload);
    char *request = malloc((size_t)command_length + (size_t)payload + 2);
    memcpy(request, command, (size_t)command_length);
    memcpy(request + command_length, value, (size_t)payload);
    memcpy(request + command_length + payload, "\r\n", 2);
    size_t request_length = (size_t)command_length + (size_t)payload + 2;

    connection *pool = calloc((size_t)connections, sizeof *pool);
    struct pollfd *fds = calloc((size_t)connections, sizeof *fds);
    for (int index = 0; index < connections; index++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(0x7F000001)};
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
            perror("connect");
            return 1;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        pool[index].fd = fd;
        pool[index].capacity = total / (size_t)connections + 16;
        pool[index].pending = malloc(pool[index].capacity * sizeof(uint64_t));
        fds[index].fd = fd;
    }

    uint64_t *latencies = malloc((total + 1) * sizeof(uint64_t));
    size_t answered = 0, errors = 0, next = 0;
    uint64_t start = now_us() + 100000;
    uint64_t deadline = start + (uint64_t)(seconds * 1e6) + 10000000; /* 10 s for the last replies */
    while (answered + errors < total && now_us() < deadline) {
        uint64_t now = now_us();
        /* Everything due by now. */
        while (next < total && start + (uint64_t)((double)next * 1e6 / rate) <= now) {
            connection *c = &pool[next % (size_t)connections];
            c->pending[c->tail++ % c->capacity] = start + (uint64_t)((double)next * 1e6 / rate);
            append(&c->out, &c->out_len, &c->out_cap, request, request_length);
            next++;
        }
        for (int index = 0; index < connections; index++) {
            connection *c = &pool[index];
            if (c->out_len > 0) {
                ssize_t written = write(c->fd, c->out, c->out_len);
                if (written > 0) {
                    memmove(c->out, c->out + written, c->out_len - (size_t)written);
                    c->out_len -= (size_t)written;
                }
            }
            fds[index].events = POLLIN | (c->out_len > 0 ? POLLOUT : 0);
        }
        /* Sleep until the next request is due or a reply arrives, to the microsecond: no spinning,
           which would take a core from the servers being measured. */
        uint64_t wait = 10000;
        if (next < total) {
            uint64_t due = start + (uint64_t)((double)next * 1e6 / rate);
            now = now_us();
            wait = due > now ? due - now : 0;
        }
        struct timespec timeout = {.tv_sec = (time_t)(wait / 1000000), .tv_nsec = (long)(wait % 1000000) * 1000};
        if (ppoll(fds, (nfds_t)connections, &timeout, NULL) < 0 && errno != EINTR) break;
        uint64_t received = now_us();
        for (int index = 0; index < connections; index++) {
            if (!(fds[index].revents & POLLIN)) continue;
            connection *c = &pool[index];
            char chunk[65536];
            ssize_t count;
            while ((count = read(c->fd, chunk, sizeof chunk)) > 0) append(&c->in, &c->in_len, &c->in_cap, chunk, (size_t)count);
            size_t offset = 0, length;
            int error = 0;
            while (offset < c->in_len && (length = reply_length(c->in + offset, c->in_len - offset, &error)) > 0) {
                uint64_t intended = c->pending[c->head++ % c->capacity];
                if (error) errors++; else latencies[answered++] = received - intended;
                offset += length;
            }
            memmove(c->in, c->in + offset, c->in_len - offset);
            c->in_len -= offset;
        }
    }
    double elapsed = (double)(now_us() - start) / 1e6;
    qsort(latencies, answered, sizeof(uint64_t), compare);
#define AT(q) (answered ? latencies[(size_t)((double)(answered - 1) * (q))] : 0)
    printf("{\"rate\":%.0f,\"seconds\":%.1f,\"connections\":%d,\"sent\":%zu,\"answered\":%zu,\"errors\":%zu,"
           "\"achievedPerSecond\":%.0f,\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu}\n",
           rate, seconds, connections, next, answered, errors, (double)answered / (elapsed > seconds ? seconds : elapsed),
           (unsigned long long)AT(0.5), (unsigned long long)AT(0.9), (unsigned long long)AT(0.99), (unsigned long long)AT(0.999),
           (unsigned long long)(answered ? latencies[answered - 1] : 0));
    return 0;
}
