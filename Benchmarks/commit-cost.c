// What one group commit costs on this machine's disk, four ways: a buffered write into a file
// whose blocks were all written before, then `fdatasync`; the same write through `O_DIRECT` (the
// page cache bypassed, the partial last block written again each time) followed by `fdatasync`;
// `O_DIRECT | O_DSYNC` (one system call; the kernel flushes the device's cache after the write, or
// marks the write FUA where the device supports it); and the log's own way, a buffered write into
// space only reserved (`posix_fallocate`) with zeros written 64 KiB ahead of the records, whose
// commits that write the zeros are timed apart from the others (`SegmentLog`'s `flushWriteBuffer`
// says why it zeroes ahead).
//
// Commits go back to back, as under load, into a 64 MiB file in the given directory. Printed per
// way: latency p50 and p99 and the CPU time per commit (getrusage, user plus system).
//
//   cc -O2 -o /tmp/commit-cost Benchmarks/commit-cost.c
//   /tmp/commit-cost /var/tmp 3000 1800     # directory, commits, bytes per commit
//
// A commit of 1,800 bytes is a group of a dozen 100-byte events with their record headers, about
// what the coordinator commits at 30,000 events a second.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpuSeconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static int compareDoubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum way { BUFFERED, DIRECT, DIRECT_DSYNC, ZERO_AHEAD };
static const char *names[] = {
    "write + fdatasync", "O_DIRECT write + fdatasync", "O_DIRECT | O_DSYNC write", "reserved, zeros ahead",
};
static const size_t zeroAheadBytes = 64 << 10;

static void printPercentiles(const char *name, double *latency, int count, double cpu) {
    qsort(latency, (size_t)count, sizeof(double), compareDoubles);
    printf("%-28s p50 %6.1f us  p99 %7.1f us", name, latency[count / 2] * 1e6, latency[count * 99 / 100] * 1e6);
    if (cpu >= 0) printf("  cpu %5.1f us per commit", cpu * 1e6);
    printf("  (%d commits)\n", count);
}

static void measure(const char *path, enum way way, int commits, size_t bytes) {
    const size_t fileSize = 64 << 20;
    // Written or reserved, and synced, so a commit changes no file size.
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); exit(1); }
    if (way == ZERO_AHEAD) {
        if (posix_fallocate(fd, 0, (off_t)fileSize) != 0) { perror("posix_fallocate"); exit(1); }
    } else {
        char *zeros = calloc(1, 1 << 20);
        for (size_t offset = 0; offset < fileSize; offset += 1 << 20) {
            if (pwrite(fd, zeros, 1 << 20, (off_t)offset) != 1 << 20) { perror("pwrite"); exit(1); }
        }
        free(zeros);
    }
    fsync(fd);
    close(fd);

    int flags = O_RDWR | (way == DIRECT || way == DIRECT_DSYNC ? O_DIRECT : 0) | (way == DIRECT_DSYNC ? O_DSYNC : 0);
    fd = open(path, flags);
    if (fd < 0) { perror("open"); exit(1); }
    char *buffer;
    size_t capacity = bytes + zeroAheadBytes + 8192;
    if (posix_memalign((void **)&buffer, 4096, capacity) != 0) { perror("posix_memalign"); exit(1); }
    memset(buffer, 'x', bytes + 8192);
    memset(buffer + bytes, 0, capacity - bytes);

    double *latency = malloc(sizeof(double) * (size_t)commits);
    double *zeroing = malloc(sizeof(double) * (size_t)commits);
    int plainCount = 0, zeroingCount = 0;
    size_t offset = 0, zeroedThrough = 0;
    double cpuStart = cpuSeconds();
    for (int i = 0; i < commits && offset + bytes + zeroAheadBytes + 4096 < fileSize; i++) {
        double start = seconds();
        ssize_t written;
        int zeroes = 0;
        if (way == ZERO_AHEAD) {
            size_t count = bytes;
            if (offset + bytes > zeroedThrough) {
                zeroedThrough = (offset + bytes + zeroAheadBytes + 4095) & ~(size_t)4095;
                count = zeroedThrough - offset;
                zeroes = 1;
            }
            written = pwrite(fd, buffer, count, (off_t)offset);
        } else if (way == BUFFERED) {
            written = pwrite(fd, buffer, bytes, (off_t)offset);
        } else {
            size_t first = offset & ~(size_t)4095, end = (offset + bytes + 4095) & ~(size_t)4095;
            written = pwrite(fd, buffer, end - first, (off_t)first);
        }
        if (written < 0) { perror("pwrite"); exit(1); }
        if (way != DIRECT_DSYNC && fdatasync(fd) != 0) { perror("fdatasync"); exit(1); }
        if (zeroes) zeroing[zeroingCount++] = seconds() - start; else latency[plainCount++] = seconds() - start;
        offset += bytes;
    }
    double cpu = cpuSeconds() - cpuStart;
    printPercentiles(names[way], latency, plainCount, zeroingCount > 0 ? -1 : cpu / plainCount);
    if (zeroingCount > 0) {
        printPercentiles("  ... commits writing zeros", zeroing, zeroingCount, -1);
        printf("  ... all commits: cpu %5.1f us per commit\n", cpu / (plainCount + zeroingCount) * 1e6);
    }
    close(fd);
    free(buffer);
    free(latency);
    free(zeroing);
    unlink(path);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s DIRECTORY COMMITS BYTES\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/commit-cost.%d", argv[1], (int)getpid());
    int commits = atoi(argv[2]);
    size_t bytes = (size_t)atol(argv[3]);
    // Interleaved rounds, as the machine's speed moves from minute to minute.
    for (int round = 0; round < 3; round++) {
        for (enum way way = BUFFERED; way <= ZERO_AHEAD; way++) measure(path, way, commits, bytes);
    }
    return 0;
}
