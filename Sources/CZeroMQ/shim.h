#ifndef FLOWKIT_CZEROMQ_SHIM_H
#define FLOWKIT_CZEROMQ_SHIM_H

#include <zmq.h>
#include <pthread.h>
#include <stdint.h>

#if defined(__linux__)
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

/* pthread_setname_np is a GNU extension that Swift's Glibc module does not expose. */
extern int pthread_setname_np(pthread_t thread, const char *name);

/* A one-shot timer the I/O loop polls as a descriptor (CLOCK_MONOTONIC, non-blocking). */
static inline int flowkit_timerfd_create(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

/* Arms `fd` to fire once, `delay_ns` from now (at least a nanosecond). */
static inline int flowkit_timerfd_arm(int fd, int64_t delay_ns) {
    if (delay_ns < 1) delay_ns = 1;
    struct itimerspec spec = {{0, 0}, {(time_t)(delay_ns / 1000000000), (long)(delay_ns % 1000000000)}};
    return timerfd_settime(fd, 0, &spec, 0);
}

/* accept4 (a GNU extension Swift's Glibc module does not expose): the connection non-blocking and
   close-on-exec from the start. */
static inline int flowkit_accept_nonblocking(int listener) {
    return accept4(listener, 0, 0, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/* An epoll instance for an I/O loop's descriptors (close-on-exec). */
static inline int flowkit_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

/* Adds, changes or removes `fd` (op: EPOLL_CTL_ADD, _MOD, _DEL), with `data` handed back with its events.
   Here because struct epoll_event is packed on x86-64 and its data a union. */
static inline int flowkit_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}

/* Waits like epoll_wait (timeout in ms, -1: no limit) for at most `capacity` (up to 256) ready
   descriptors, and writes each one's events and data into `events` and `data`. */
static inline int flowkit_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int capacity, int timeout_ms) {
    struct epoll_event ready[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epfd, ready, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        events[i] = ready[i].events;
        data[i] = ready[i].data.u64;
    }
    return count;
}
#endif

/* Names the calling thread (at most 15 bytes are kept) so it shows in top -H and gdb. */
static inline int flowkit_zmq_set_thread_name(const char *name) {
#if defined(__linux__)
    return pthread_setname_np(pthread_self(), name);
#elif defined(__APPLE__)
    return pthread_setname_np(name);
#else
    (void)name;
    return 0;
#endif
}

#endif
