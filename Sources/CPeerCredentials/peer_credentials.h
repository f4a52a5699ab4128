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

/* accept4(2), which Glibc declares only under _GNU_SOURCE, which the Swift module for Glibc is
   not built with: a server's accepted connections are non-blocking and close-on-exec from the
   one call (Linux 2.6.28 and later).
   The address is never asked for, so struct sockaddr stays incomplete here and socklen_t is
   spelled as Glibc defines it: this header must not pull <sys/socket.h> into its own module. */
struct sockaddr;
extern int accept4(int fd, struct sockaddr *address, unsigned int *length, int flags);

#endif
