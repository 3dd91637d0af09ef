#include "flowkit_support.h"

#if defined(__linux__)
#include <sys/prctl.h>

int flowkit_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0);
}
#else
int flowkit_set_parent_death_signal(int signal) {
    (void)signal;
    return -1;
}
#endif
