#ifndef SESAME_PROCESS_HARDENING_H
#define SESAME_PROCESS_HARDENING_H

#include <sys/prctl.h>
#include <sys/resource.h>

/* Keeps the tokens in sesamed's memory out of core files and away from other processes of its
   user: no core file (RLIMIT_CORE 0), and not dumpable, which also stops ptrace and reading
   /proc/PID/mem by anyone without CAP_SYS_PTRACE. prctl is variadic in Glibc, so Swift cannot
   call it directly. Returns 0, or -1 with errno set. */
static inline int sesame_forbid_core_dumps(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

#endif
