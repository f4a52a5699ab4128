#ifndef SESAME_CSYSTEMD_SHIM_H
#define SESAME_CSYSTEMD_SHIM_H

#include <sys/types.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

/* Same layout as the kernel's struct ucred, which Glibc only declares under _GNU_SOURCE, so it
   never reaches Swift. Read with getsockopt(SOL_SOCKET, SO_PEERCRED).
   sd_journal_send and sd_notifyf are variadic and do not import; use sd_journal_sendv and
   sd_notify, which do. */
struct sesame_ucred {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};

#endif
