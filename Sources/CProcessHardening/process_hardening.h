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

/* Tunes glibc's malloc for a daemon that keeps a store write's blocks for the next one yet
   gives back what a burst of work freed (sesame_return_free_memory).
   Each store write puts megabytes together (the store's JSON, its ciphertext); by default glibc
   maps such blocks and unmaps them, or trims the freed top of an arena with MADV_DONTNEED, so
   every write faults all of its pages in again: a quarter of a write's time with 1,000 accounts.
   Blocks under 8 MiB now come from the arena, which gives memory back by itself once 16 MiB at
   its top are free.
   And one arena for every thread: by default glibc makes one for each thread that allocates
   while another does (up to eight a core), and gives back the free top of any but the main one
   only when a free in it leaves more than the threshold above, never in malloc_trim; after a
   flood of connections each kept up to 16 MiB for good. Each thread's cache in front of the
   arena still serves most small blocks without its lock. Returns 1 on success, like mallopt. */
#ifdef __GLIBC__
#include <malloc.h>
static inline int sesame_tune_malloc(void) {
    return mallopt(M_MMAP_THRESHOLD, 8 << 20) && mallopt(M_TRIM_THRESHOLD, 16 << 20) && mallopt(M_ARENA_MAX, 1);
}
#else
static inline int sesame_tune_malloc(void) { return 1; }
#endif

/* Gives the system back every whole page malloc holds free, between the blocks in use and at
   the arena's top (glibc's malloc_trim), once it holds more than `kept` bytes free: what a burst
   of connections left behind would otherwise stay resident, up to the trim threshold above and
   more where blocks still in use lie between free ones. Up to `kept` is left for the next store
   write. Both steps walk the free blocks under the arena's lock, so not for an event loop, and
   not often. */
#ifdef __GLIBC__
static inline void sesame_return_free_memory(size_t kept) {
    if (mallinfo2().fordblks > kept) malloc_trim(0);
}
#else
static inline void sesame_return_free_memory(size_t kept) { (void)kept; }
#endif

#endif
