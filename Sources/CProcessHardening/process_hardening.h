#ifndef SESAME_PROCESS_HARDENING_H
#define SESAME_PROCESS_HARDENING_H

#include <sys/prctl.h>
#include <sys/resource.h>

/* Keeps the tokens in sesamed's memory out of core files and away from other processes of its
   user: no core file (RLIMIT_CORE 0), and not dumpable, which also stops ptrace and reading
   /proc/PID/mem by anyone without CAP_SYS_PTRACE. prctl is variadic in Glibc, so Swift cannot
   call it directly. Each returns 0, or -1 with errno set. */
static inline int sesame_forbid_dumping(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static inline int sesame_forbid_core_files(void) {
    struct rlimit current;
    /* Already 0 under the unit's LimitCORE=0; a seccomp filter may forbid setting it again. */
    if (getrlimit(RLIMIT_CORE, &current) == 0 && current.rlim_cur == 0 && current.rlim_max == 0) return 0;
    struct rlimit none = {0, 0};
    return setrlimit(RLIMIT_CORE, &none);
}

/* Lets glibc keep the blocks of a store write for the next one. Each write puts megabytes
   together (the store's JSON, its ciphertext); by default glibc maps such blocks and unmaps
   them, or trims the freed top of an arena with MADV_DONTNEED, so every write faults all of
   its pages in again: a quarter of a write's time with 1,000 accounts. Blocks under 8 MiB now
   come from the arenas, and an arena gives memory back once 16 MiB at its top are free, which
   bounds what is kept. Returns 1 on success, like mallopt. */
#ifdef __GLIBC__
#include <malloc.h>
static inline int sesame_keep_store_buffers(void) {
    return mallopt(M_MMAP_THRESHOLD, 8 << 20) && mallopt(M_TRIM_THRESHOLD, 16 << 20);
}
#else
static inline int sesame_keep_store_buffers(void) { return 1; }
#endif

#endif
