#ifndef FLOWKIT_CZEROMQ_SHIM_H
#define FLOWKIT_CZEROMQ_SHIM_H

#include <zmq.h>
#include <pthread.h>
#include <stdint.h>

#if defined(__linux__)
#include <sys/eventfd.h>
#include <sys/timerfd.h>

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
