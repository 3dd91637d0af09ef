#ifndef FLOWKIT_SUPPORT_H
#define FLOWKIT_SUPPORT_H

/// The malloc the process runs on: "jemalloc <version>" when the flowkit binaries are linked with
/// jemalloc (Linux), otherwise "system".
const char *flowkit_allocator(void);

#include <stdint.h>

/// What jemalloc holds, in bytes (its `stats.*`): `allocated` by the program, `active` in the pages
/// those allocations occupy, `metadata` for its own books, `resident` in physical memory (dirty
/// pages not yet purged included), `retained` as address space kept for reuse but not resident.
struct flowkit_malloc_stats {
    uint64_t allocated;
    uint64_t active;
    uint64_t metadata;
    uint64_t resident;
    uint64_t retained;
};

/// Fills `stats` and returns 0; returns -1 when the process is not on jemalloc.
int flowkit_malloc_stats(struct flowkit_malloc_stats *stats);

#endif
