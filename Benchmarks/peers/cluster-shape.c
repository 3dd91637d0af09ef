// FlowKit's message pattern in plain C: what the design itself costs on this machine, with no
// framework, no allocation per message and no checks. A floor to measure FlowKit against.
//
// The same processes and messages as `flowkit bench` against a coordinator and 3 nodes:
//
//   client --EMIT--> node --SUBMIT--> coordinator (append, fdatasync) --ENTRIES--> every node
//   node --EMITTED--> client (for the events it submitted), node --PROGRESS--> client (applied)
//
// Each process is one thread on epoll, reading and writing its own TCP sockets (Nagle off), as
// FlowKit's processes do with its ZMTP engine. The coordinator commits what one turn read as one
// group, on its thread, then publishes it to every node in one message each: the group commit as
// FlowKit does it. A node applies each entry (a counter per instance) and answers its own. The
// client sends open loop from each event's intended time, in rounds at least `tick` µs apart (as
// the bench's default), over 8 connections round-robin over the nodes, and times each event from
// its intended send time to its EMITTED (ordered) and to the last node's PROGRESS past its seq
// (applied on all).
//
//   cc -O2 -o /tmp/cluster-shape Benchmarks/peers/cluster-shape.c
//   /tmp/cluster-shape 10000 10       # rate per second, seconds measured (after 2 s of warm-up)
//
// Prints one JSON object: the rate, ordered and applied p50/p99 in µs, and the CPU per event of
// the coordinator and the nodes together (from /proc, over the measured window), each process's
// CPU, and the group commits per second.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { nodes = 3, connections = 8, payload_bytes = 100, instances = 1000, tick_us = 200, warmup_s = 2 };
enum { emit_type = 1, submit_type = 2, entries_type = 3, emitted_type = 4, progress_type = 5 };

static uint64_t now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static void check(int ok, const char *what) {
    if (!ok) { perror(what); exit(2); }
}

static void nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int listen_on(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    check(bind(fd, (struct sockaddr *)&address, sizeof address) == 0, "bind");
    check(listen(fd, 64) == 0, "listen");
    socklen_t length = sizeof address;
    getsockname(fd, (struct sockaddr *)&address, &length);
    *port = ntohs(address.sin_port);
    return fd;
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    while (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        check(errno == ECONNREFUSED, "connect");
        close(fd);
        usleep(10000);
        fd = socket(AF_INET, SOCK_STREAM, 0);
    }
    nodelay(fd);
    return fd;
}

// A connection: bytes read and not yet parsed, bytes to write and not yet written.
typedef struct {
    int fd;
    uint8_t in[1 << 20];
    size_t in_length;
    uint8_t out[1 << 20];
    size_t out_length;
} connection;

static connection *open_connection(int fd) {
    connection *c = calloc(1, sizeof *c);
    c->fd = fd;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return c;
}

// Reads what the kernel holds; 0 when the peer closed.
static int fill(connection *c) {
    for (;;) {
        ssize_t n = read(c->fd, c->in + c->in_length, sizeof c->in - c->in_length);
        if (n > 0) { c->in_length += (size_t)n; if (c->in_length == sizeof c->in) return 1; continue; }
        if (n == 0) return 0;
        if (errno == EAGAIN) return 1;
        if (errno != EINTR) return 0;
    }
}

// The next whole message (a u32 length, then the body): its body, or NULL.
static uint8_t *next_message(connection *c, size_t *offset, uint32_t *length) {
    if (c->in_length - *offset < 4) return NULL;
    memcpy(length, c->in + *offset, 4);
    if (c->in_length - *offset - 4 < *length) return NULL;
    uint8_t *body = c->in + *offset + 4;
    *offset += 4 + *length;
    return body;
}

static void consumed(connection *c, size_t offset) {
    memmove(c->in, c->in + offset, c->in_length - offset);
    c->in_length -= offset;
}

static void queue(connection *c, const void *body, uint32_t length) {
    check(c->out_length + 4 + length <= sizeof c->out, "output full");
    memcpy(c->out + c->out_length, &length, 4);
    memcpy(c->out + c->out_length + 4, body, length);
    c->out_length += 4 + length;
}

// Writes what is queued, in one send (the rest, if the kernel takes less, on the next turn).
static void flush(connection *c) {
    if (c->out_length == 0) return;
    ssize_t n = send(c->fd, c->out, c->out_length, MSG_NOSIGNAL);
    if (n <= 0) return;
    memmove(c->out, c->out + n, c->out_length - (size_t)n);
    c->out_length -= (size_t)n;
}

// The coordinator: one group commit per turn, published to every node.
static void coordinator(int listener, const char *path) {
    connection *peers[nodes];
    for (int i = 0; i < nodes; i++) {
        int fd = accept(listener, NULL, NULL);
        nodelay(fd);
        peers[i] = open_connection(fd);
    }
    int log = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(posix_fallocate(log, 0, 256 << 20) == 0, "posix_fallocate");
    off_t end = 0;
    int poller = epoll_create1(0);
    for (int i = 0; i < nodes; i++) {
        struct epoll_event event = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        epoll_ctl(poller, EPOLL_CTL_ADD, peers[i]->fd, &event);
    }
    static uint8_t group[1 << 20];
    uint64_t seq = 0;
    for (;;) {
        struct epoll_event ready[nodes];
        int count = epoll_wait(poller, ready, nodes, -1);
        if (count < 0 && errno == EINTR) continue;
        // ENTRIES: u8 type, u64 first seq, then per entry u32 origin, u64 request, the payload.
        size_t length = 9;
        uint32_t entries = 0;
        for (int r = 0; r < count; r++) {
            connection *c = peers[ready[r].data.u32];
            if (!fill(c)) exit(0);
            size_t offset = 0;
            uint32_t body_length;
            uint8_t *body;
            while ((body = next_message(c, &offset, &body_length)) != NULL) {
                // SUBMIT: u8 type, u32 origin, u64 request, the payload.
                check(body[0] == submit_type && length + body_length - 1 <= sizeof group, "SUBMIT");
                memcpy(group + length, body + 1, body_length - 1);
                length += body_length - 1;
                entries++;
            }
            consumed(c, offset);
        }
        if (entries == 0) continue;
        group[0] = entries_type;
        uint64_t first = seq + 1;
        memcpy(group + 1, &first, 8);
        seq += entries;
        // Durable before visible: appended and synced, then published.
        check(pwrite(log, group, length, end) == (ssize_t)length, "pwrite");
        end += (off_t)length;
        check(fdatasync(log) == 0, "fdatasync");
        for (int i = 0; i < nodes; i++) {
            queue(peers[i], group, (uint32_t)length);
            flush(peers[i]);
        }
    }
}

// A node: forwards its clients' events to the coordinator, applies every entry, answers its own.
static void node(int index, int listener, int coordinator_port) {
    connection *upstream = open_connection(dial(coordinator_port));
    int poller = epoll_create1(0);
    struct epoll_event event = { .events = EPOLLIN, .data.u32 = 0 };
    epoll_ctl(poller, EPOLL_CTL_ADD, upstream->fd, &event);
    fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK);
    event.data.u32 = 1;
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    connection *clients[connections];
    int client_count = 0;
    uint64_t applied = 0;
    static uint64_t counters[instances];
    // Which client connection sent each request still waiting (request ids are dense).
    static uint8_t waiting[1 << 22];
    for (;;) {
        struct epoll_event ready[connections + 2];
        int count = epoll_wait(poller, ready, connections + 2, -1);
        if (count < 0 && errno == EINTR) continue;
        for (int r = 0; r < count; r++) {
            uint32_t which = ready[r].data.u32;
            if (which == 1) {
                int fd;
                while ((fd = accept(listener, NULL, NULL)) >= 0) {
                    nodelay(fd);
                    clients[client_count] = open_connection(fd);
                    struct epoll_event client = { .events = EPOLLIN, .data.u32 = (uint32_t)(2 + client_count) };
                    epoll_ctl(poller, EPOLL_CTL_ADD, fd, &client);
                    client_count++;
                }
            } else if (which == 0) {
                if (!fill(upstream)) exit(0);
                size_t offset = 0;
                uint32_t length;
                uint8_t *body;
                while ((body = next_message(upstream, &offset, &length)) != NULL) {
                    uint64_t seq;
                    memcpy(&seq, body + 1, 8);
                    for (size_t at = 9; at < length; at += 12 + payload_bytes, seq++) {
                        uint32_t origin;
                        uint64_t request;
                        memcpy(&origin, body + at, 4);
                        memcpy(&request, body + at + 4, 8);
                        counters[request % instances]++;
                        applied = seq;
                        if (origin == (uint32_t)index) {
                            uint8_t emitted[17] = { emitted_type };
                            memcpy(emitted + 1, &request, 8);
                            memcpy(emitted + 9, &seq, 8);
                            queue(clients[waiting[request % sizeof waiting]], emitted, sizeof emitted);
                        }
                    }
                }
                consumed(upstream, offset);
                // PROGRESS on the first connection, as the bench's WATCH rides it.
                uint8_t progress[9] = { progress_type };
                memcpy(progress + 1, &applied, 8);
                if (client_count > 0) queue(clients[0], progress, sizeof progress);
                for (int i = 0; i < client_count; i++) flush(clients[i]);
            } else {
                connection *c = clients[which - 2];
                if (!fill(c)) exit(0);
                size_t offset = 0;
                uint32_t length;
                uint8_t *body;
                while ((body = next_message(c, &offset, &length)) != NULL) {
                    // EMIT: u8 type, u64 request, the payload. SUBMIT adds the origin.
                    uint8_t submit[1 + 4 + 8 + payload_bytes] = { submit_type };
                    uint32_t origin = (uint32_t)index;
                    memcpy(submit + 1, &origin, 4);
                    memcpy(submit + 5, body + 1, 8 + payload_bytes);
                    uint64_t request;
                    memcpy(&request, body + 1, 8);
                    waiting[request % sizeof waiting] = (uint8_t)(which - 2);
                    queue(upstream, submit, sizeof submit);
                }
                consumed(c, offset);
                flush(upstream);
            }
        }
    }
}

static double cpu_seconds(pid_t pid) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *file = fopen(path, "r");
    if (!file) return 0;
    size_t n = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[n] = 0;
    char *field = strrchr(text, ')') + 2;
    unsigned long user = 0, system = 0;
    // Fields 14 and 15 (utime, stime), counted from the state (field 3).
    sscanf(field, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &user, &system);
    return (double)(user + system) / (double)sysconf(_SC_CLK_TCK);
}

static double own_cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 + (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
}

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s RATE SECONDS\n", argv[0]);
        return 64;
    }
    const double rate = atof(argv[1]);
    const int seconds = atoi(argv[2]);
    char path[] = "/tmp/cluster-shape-XXXXXX";
    check(mkdtemp(path) != NULL, "mkdtemp");
    char log_path[64];
    snprintf(log_path, sizeof log_path, "%s/log", path);

    int coordinator_port, node_ports[nodes];
    int coordinator_listener = listen_on(&coordinator_port);
    pid_t children[1 + nodes];
    if ((children[0] = fork()) == 0) { coordinator(coordinator_listener, log_path); _exit(0); }
    close(coordinator_listener);
    for (int i = 0; i < nodes; i++) {
        int listener = listen_on(&node_ports[i]);
        if ((children[1 + i] = fork()) == 0) { node(i, listener, coordinator_port); _exit(0); }
        close(listener);
    }

    // The client: 8 connections, round-robin over the nodes; requests are dense ids.
    connection *links[connections];
    int poller = epoll_create1(0);
    for (int i = 0; i < connections; i++) {
        links[i] = open_connection(dial(node_ports[i % nodes]));
        struct epoll_event event = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        epoll_ctl(poller, EPOLL_CTL_ADD, links[i]->fd, &event);
    }
    const uint64_t total = (uint64_t)(rate * (warmup_s + seconds));
    uint64_t *intended = calloc(total, sizeof *intended);
    uint64_t *ordered = calloc(total, sizeof *ordered);
    uint64_t *seqs = calloc(total, sizeof *seqs);
    // When each node's applied seq passed each value: a node's progress, as (time, applied) pairs.
    uint64_t *progress_time[nodes], *progress_seq[nodes];
    size_t progress_count[nodes];
    for (int i = 0; i < nodes; i++) {
        progress_time[i] = calloc(total + 1, sizeof(uint64_t));
        progress_seq[i] = calloc(total + 1, sizeof(uint64_t));
        progress_count[i] = 0;
    }
    const uint64_t start = now_us() + 100000;
    const uint64_t window_start = start + warmup_s * 1000000u, window_end = window_start + (uint64_t)seconds * 1000000u;
    double cpu_before[1 + nodes] = { 0 }, cpu_after[1 + nodes] = { 0 }, client_before = 0, client_after = 0;
    int measuring = 0, measured = 0;
    uint64_t next = 0, answered = 0;
    while (answered < total || next < total) {
        uint64_t now = now_us();
        if (!measuring && now >= window_start) {
            for (int i = 0; i <= nodes; i++) cpu_before[i] = cpu_seconds(children[i]);
            client_before = own_cpu_seconds();
            measuring = 1;
        }
        if (now > window_end + 10000000u) {
            fprintf(stderr, "%llu of %llu events unanswered 10 s after the last was due\n", (unsigned long long)(total - answered), (unsigned long long)total);
            for (int i = 0; i <= nodes; i++) kill(children[i], SIGKILL);
            return 1;
        }
        if (measuring && !measured && now >= window_end) {
            for (int i = 0; i <= nodes; i++) cpu_after[i] = cpu_seconds(children[i]);
            client_after = own_cpu_seconds();
            measured = 1;
        }
        // Everything due, in one send per connection.
        while (next < total && start + (uint64_t)((double)next * 1e6 / rate) <= now) {
            uint8_t emit[1 + 8 + payload_bytes] = { emit_type };
            memcpy(emit + 1, &next, 8);
            memset(emit + 9, 0x2A, payload_bytes);
            intended[next] = start + (uint64_t)((double)next * 1e6 / rate);
            queue(links[next % connections], emit, sizeof emit);
            next++;
        }
        for (int i = 0; i < connections; i++) flush(links[i]);
        // Sleep until the next event is due (at least a tick) or a reply arrives.
        struct timespec timeout = { 0, 0 };
        if (next < total) {
            uint64_t due = start + (uint64_t)((double)next * 1e6 / rate);
            uint64_t wait = due > now ? due - now : 0;
            if (wait < tick_us) wait = tick_us;
            timeout.tv_sec = (time_t)(wait / 1000000u);
            timeout.tv_nsec = (long)(wait % 1000000u) * 1000;
        } else {
            timeout.tv_nsec = 1000000;
        }
        struct epoll_event ready[connections];
        int count = epoll_pwait2(poller, ready, connections, &timeout, NULL);
        now = now_us();
        for (int r = 0; r < count; r++) {
            connection *c = links[ready[r].data.u32];
            if (!fill(c)) { fprintf(stderr, "a node closed its connection\n"); return 1; }
            size_t offset = 0;
            uint32_t length;
            uint8_t *body;
            int node_index = (int)(ready[r].data.u32 % nodes);
            while ((body = next_message(c, &offset, &length)) != NULL) {
                if (body[0] == emitted_type) {
                    uint64_t request, seq;
                    memcpy(&request, body + 1, 8);
                    memcpy(&seq, body + 9, 8);
                    ordered[request] = now;
                    seqs[request] = seq;
                    answered++;
                } else if (body[0] == progress_type) {
                    uint64_t applied;
                    memcpy(&applied, body + 1, 8);
                    size_t k = progress_count[node_index];
                    if (k == 0 || applied > progress_seq[node_index][k - 1]) {
                        progress_time[node_index][k] = now;
                        progress_seq[node_index][k] = applied;
                        progress_count[node_index]++;
                    }
                }
            }
            consumed(c, offset);
        }
    }
    if (!measured) {
        // Every event was answered before the window's end came round: it ends here.
        for (int i = 0; i <= nodes; i++) cpu_after[i] = cpu_seconds(children[i]);
        client_after = own_cpu_seconds();
    }
    for (int i = 0; i <= nodes; i++) kill(children[i], SIGKILL);
    for (int i = 0; i <= nodes; i++) waitpid(children[i], NULL, 0);
    unlink(log_path);
    rmdir(path);

    // Latencies of the events intended in the measured window.
    uint64_t *ordered_latency = calloc(total, sizeof(uint64_t)), *applied_latency = calloc(total, sizeof(uint64_t));
    size_t measured_count = 0;
    for (uint64_t i = 0; i < total; i++) {
        if (intended[i] < window_start || intended[i] >= window_end) continue;
        ordered_latency[measured_count] = ordered[i] - intended[i];
        // Applied on all: the first PROGRESS at or past the seq, from the slowest node.
        uint64_t last = 0;
        for (int n = 0; n < nodes; n++) {
            size_t low = 0, high = progress_count[n];
            while (low < high) {
                size_t middle = (low + high) / 2;
                if (progress_seq[n][middle] < seqs[i]) low = middle + 1; else high = middle;
            }
            uint64_t at = low < progress_count[n] ? progress_time[n][low] : ordered[i];
            if (at > last) last = at;
        }
        applied_latency[measured_count] = last > intended[i] ? last - intended[i] : 0;
        measured_count++;
    }
    qsort(ordered_latency, measured_count, sizeof(uint64_t), compare);
    qsort(applied_latency, measured_count, sizeof(uint64_t), compare);
    double servers = 0;
    for (int i = 0; i <= nodes; i++) servers += cpu_after[i] - cpu_before[i];
    printf("{\"rate\":%.0f,\"seconds\":%d,\"events\":%zu,"
           "\"ordered\":{\"p50\":%llu,\"p99\":%llu},\"applied\":{\"p50\":%llu,\"p99\":%llu},"
           "\"cpuMicrosPerEvent\":%.1f,\"cpuSeconds\":{\"coordinator\":%.2f,\"node-1\":%.2f,\"node-2\":%.2f,\"node-3\":%.2f,\"client\":%.2f}}\n",
           rate, seconds, measured_count,
           (unsigned long long)ordered_latency[measured_count / 2], (unsigned long long)ordered_latency[measured_count * 99 / 100],
           (unsigned long long)applied_latency[measured_count / 2], (unsigned long long)applied_latency[measured_count * 99 / 100],
           servers / (double)measured_count * 1e6,
           cpu_after[0] - cpu_before[0], cpu_after[1] - cpu_before[1], cpu_after[2] - cpu_before[2], cpu_after[3] - cpu_before[3], client_after - client_before);
    return 0;
}
