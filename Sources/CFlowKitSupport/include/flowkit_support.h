#ifndef FLOWKIT_SUPPORT_H
#define FLOWKIT_SUPPORT_H

/// Asks the kernel to send `signal` to this process when its parent dies (Linux
/// `prctl(PR_SET_PDEATHSIG)`; a no-op returning -1 elsewhere). Swift cannot call the variadic
/// `prctl` itself.
int flowkit_set_parent_death_signal(int signal);

/// The malloc the process runs on: "jemalloc <version>" when the flowkit binaries are linked with
/// jemalloc (Linux), otherwise "system".
const char *flowkit_allocator(void);

#endif
