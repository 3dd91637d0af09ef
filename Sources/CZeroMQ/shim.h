#ifndef FLOWKIT_CZEROMQ_SHIM_H
#define FLOWKIT_CZEROMQ_SHIM_H

#include <zmq.h>
#include <pthread.h>

#if defined(__linux__)
#include <sys/eventfd.h>

/* pthread_setname_np is a GNU extension that Swift's Glibc module does not expose. */
extern int pthread_setname_np(pthread_t thread, const char *name);
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
