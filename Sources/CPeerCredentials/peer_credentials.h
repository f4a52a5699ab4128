#ifndef SESAME_PEER_CREDENTIALS_H
#define SESAME_PEER_CREDENTIALS_H

#include <sys/types.h>

/* Same layout as the kernel's struct ucred, which Glibc only declares under _GNU_SOURCE, so it
   never reaches Swift. Read with getsockopt(SOL_SOCKET, SO_PEERCRED). Header only: the wire
   module and every client that links it need no C library beyond libc. */
struct sesame_ucred {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};

#endif
