// The reference a one-shot CLI is measured against (scripts/bench): a plain C program, built by
// the system's C compiler with nothing else linked in, that makes one Varlink call and prints the
// reply. Usage: oneshot-client SOCKET MESSAGE (the message without its NUL).
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) return 64;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof address.sun_path) return 64;
    strcpy(address.sun_path, argv[1]);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) return 69;
    size_t length = strlen(argv[2]) + 1, sent = 0;
    while (sent < length) {
        ssize_t wrote = send(fd, argv[2] + sent, length - sent, MSG_NOSIGNAL);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return 74;
        sent += (size_t)wrote;
    }
    static char reply[1 << 16];
    size_t have = 0;
    while (have == 0 || reply[have - 1] != 0) {
        if (have == sizeof reply) return 74;
        ssize_t got = read(fd, reply + have, sizeof reply - have);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 74;
        have += (size_t)got;
    }
    close(fd);
    if (strstr(reply, "\"error\"")) return 1;
    return puts(reply) < 0;
}
