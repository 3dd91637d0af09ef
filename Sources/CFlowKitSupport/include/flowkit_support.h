#ifndef FLOWKIT_SUPPORT_H
#define FLOWKIT_SUPPORT_H

/// The malloc the process runs on: "jemalloc <version>" when the flowkit binaries are linked with
/// jemalloc (Linux), otherwise "system".
const char *flowkit_allocator(void);

#endif
