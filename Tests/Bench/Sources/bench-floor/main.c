// bench-floor: the least a server can do for sesame's benchmark, as the floor every figure is
// compared with. One thread, epoll, NUL-framed messages on a Unix socket, and no parsing beyond
// a substring: a Subscribe call makes the connection a subscriber (answered with a `ready`
// reply), an ImportTokens call sends one prepared event to every subscriber and is answered,
// and anything else gets the prepared GetToken reply. Replies and events have the sizes given.
//
//   bench-floor --socket PATH --reply-bytes N --event-bytes N
//
// It sends READY=1 to $NOTIFY_SOCKET once it listens, and exits on SIGTERM.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/// The longest message read, and the most bytes queued for a peer that does not read.
#define MAXIMUM_MESSAGE (1 << 20)
#define MAXIMUM_PENDING (4 << 20)

/// What the floor keeps per connection: usually nothing but its subscriber slot.
struct connection {
    char *partial;  // an incomplete message, if the last read ended inside one
    uint32_t partial_length;
    char *pending;  // bytes the socket did not take yet
    uint32_t pending_length;
    int subscriber;  // index in the subscriber list, or -1
    int open;
};

/// A prepared message (with its NUL).
struct message {
    char *bytes;
    size_t length;
};

static struct connection *connections;
static int connection_limit;
static int *subscribers;
static int subscriber_count;
static int epoll_fd;
static struct message reply, event, ready, imported;
static volatile sig_atomic_t stopping;

/// A message of exactly `length` bytes before its NUL: `prefix`, then padding, then `suffix`.
static struct message prepare(const char *prefix, const char *suffix, size_t length) {
    size_t fixed = strlen(prefix) + strlen(suffix);
    if (length < fixed) length = fixed;
    struct message message = {.bytes = malloc(length + 1), .length = length + 1};
    if (!message.bytes) exit(1);
    memset(message.bytes, 'x', length);
    memcpy(message.bytes, prefix, strlen(prefix));
    memcpy(message.bytes + length - strlen(suffix), suffix, strlen(suffix));
    message.bytes[length] = 0;
    return message;
}

/// Closes a connection and forgets everything about it.
static void close_connection(int fd) {
    struct connection *connection = &connections[fd];
    if (connection->subscriber >= 0) {
        int last = subscribers[--subscriber_count];
        subscribers[connection->subscriber] = last;
        connections[last].subscriber = connection->subscriber;
    }
    free(connection->partial);
    free(connection->pending);
    *connection = (struct connection){.subscriber = -1};
    close(fd);
}

/// Sends bytes, queueing what the socket does not take; -1 if the peer is gone or too far behind.
static int send_bytes(int fd, const char *bytes, size_t length) {
    struct connection *connection = &connections[fd];
    if (connection->pending_length == 0) {
        ssize_t written = send(fd, bytes, length, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (written < 0 && errno != EAGAIN) return -1;
        if (written == (ssize_t)length) return 0;
        if (written > 0) bytes += written, length -= (size_t)written;
        struct epoll_event watch = {.events = EPOLLIN | EPOLLOUT, .data.fd = fd};
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &watch);
    }
    if (connection->pending_length + length > MAXIMUM_PENDING) return -1;
    char *grown = realloc(connection->pending, connection->pending_length + length);
    if (!grown) return -1;
    memcpy(grown + connection->pending_length, bytes, length);
    connection->pending = grown;
    connection->pending_length += (uint32_t)length;
    return 0;
}

/// Writes queued bytes once the socket takes them again; -1 if the peer is gone.
static int flush_pending(int fd) {
    struct connection *connection = &connections[fd];
    ssize_t written = send(fd, connection->pending, connection->pending_length, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) return errno == EAGAIN ? 0 : -1;
    memmove(connection->pending, connection->pending + written, connection->pending_length - (size_t)written);
    connection->pending_length -= (uint32_t)written;
    if (connection->pending_length == 0) {
        struct epoll_event watch = {.events = EPOLLIN, .data.fd = fd};
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &watch);
    }
    return 0;
}

/// Answers one message; -1 if `fd` had to be closed.
static int handle(int fd, const char *bytes, size_t length) {
    if (memmem(bytes, length, "io.sesame.Events.Subscribe", 26)) {
        if (connections[fd].subscriber < 0) {
            connections[fd].subscriber = subscriber_count;
            subscribers[subscriber_count++] = fd;
        }
        return send_bytes(fd, ready.bytes, ready.length);
    }
    if (memmem(bytes, length, "ImportTokens", 12)) {
        // Backwards, so that a subscriber closed here is replaced by one already served.
        for (int i = subscriber_count - 1; i >= 0; i--) {
            int subscriber = subscribers[i];
            if (subscriber != fd && send_bytes(subscriber, event.bytes, event.length) != 0) close_connection(subscriber);
        }
        return send_bytes(fd, imported.bytes, imported.length);
    }
    return send_bytes(fd, reply.bytes, reply.length);
}

/// Answers every complete message in data; keeps an incomplete tail. -1 if `fd` was closed.
static int consume(int fd, char *data, size_t length) {
    char *end = data + length, *start = data, *nul;
    while ((nul = memchr(start, 0, (size_t)(end - start))) != NULL) {
        if (handle(fd, start, (size_t)(nul - start)) != 0) return -1;
        start = nul + 1;
    }
    size_t rest = (size_t)(end - start);
    if (rest > MAXIMUM_MESSAGE) return -1;
    struct connection *connection = &connections[fd];
    if (rest > 0 && start != connection->partial) {
        char *kept = malloc(rest);
        if (!kept) return -1;
        memcpy(kept, start, rest);
        free(connection->partial);
        connection->partial = kept;
    } else if (rest > 0) {
        memmove(connection->partial, start, rest);
    } else {
        free(connection->partial);
        connection->partial = NULL;
    }
    connection->partial_length = (uint32_t)rest;
    return 0;
}

/// Reads what a connection sent and answers it; closes the connection when it ends.
static void readable(int fd) {
    static char buffer[65536];
    ssize_t got = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (got <= 0) {
        close_connection(fd);
        return;
    }
    struct connection *connection = &connections[fd];
    int status;
    if (connection->partial_length == 0) {
        status = consume(fd, buffer, (size_t)got);
    } else {
        size_t total = connection->partial_length + (size_t)got;
        char *joined = total <= MAXIMUM_MESSAGE ? realloc(connection->partial, total) : NULL;
        if (!joined) {
            close_connection(fd);
            return;
        }
        memcpy(joined + connection->partial_length, buffer, (size_t)got);
        connection->partial = joined;
        status = consume(fd, joined, total);
    }
    if (status != 0 && connections[fd].open) close_connection(fd);
}

/// Accepts every waiting connection.
static void accept_all(int listener) {
    int fd;
    while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        if (fd >= connection_limit) {
            close(fd);
            continue;
        }
        connections[fd] = (struct connection){.subscriber = -1, .open = 1};
        struct epoll_event watch = {.events = EPOLLIN, .data.fd = fd};
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &watch);
    }
}

/// Binds and listens at `path`; the socket, or -1.
static int listen_at(const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path) return -1;
    strcpy(address.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof address) != 0 || listen(fd, 4096) != 0) return -1;
    return fd;
}

/// Tells $NOTIFY_SOCKET (if any) that the floor is ready, as sd_notify would.
static void notify_ready(void) {
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (!path || strlen(path) >= sizeof address.sun_path) return;
    strcpy(address.sun_path, path);
    if (address.sun_path[0] == '@') address.sun_path[0] = 0;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    sendto(fd, "READY=1", 7, MSG_NOSIGNAL, (struct sockaddr *)&address, sizeof address);
    close(fd);
}

static void on_terminate(int signal_number) {
    (void)signal_number;
    stopping = 1;
}

/// Parses the options, prepares the messages and the tables; the listening socket, or -1.
static int set_up(int argc, char **argv) {
    static const struct option options[] = {
        {"socket", 1, 0, 's'}, {"reply-bytes", 1, 0, 'r'}, {"event-bytes", 1, 0, 'e'}, {0, 0, 0, 0}};
    const char *path = NULL;
    size_t reply_bytes = 1114, event_bytes = 225;
    for (int option; (option = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        if (option == 's') path = optarg;
        else if (option == 'r') reply_bytes = (size_t)atol(optarg);
        else if (option == 'e') event_bytes = (size_t)atol(optarg);
        else return -1;
    }
    if (!path) return -1;
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    connection_limit = (int)limit.rlim_cur;
    connections = calloc((size_t)connection_limit, sizeof *connections);
    subscribers = calloc((size_t)connection_limit, sizeof *subscribers);
    if (!connections || !subscribers) return -1;
    reply = prepare("{\"parameters\":{\"accessToken\":\"", "\",\"tokenType\":\"Bearer\"}}", reply_bytes);
    event = prepare("{\"continues\":true,\"parameters\":{\"event\":{\"kind\":\"loggedIn\",\"account\":\"", "\"}}}",
                    event_bytes);
    ready = prepare("{\"continues\":true,\"parameters\":{\"ready\":{\"sequence\":0}}}", "", 0);
    imported = prepare("{\"parameters\":{\"account\":{}}}", "", 0);
    return listen_at(path);
}

int main(int argc, char **argv) {
    int listener = set_up(argc, argv);
    if (listener < 0) {
        fprintf(stderr, "usage: bench-floor --socket PATH [--reply-bytes N] [--event-bytes N]\n");
        return 64;
    }
    struct sigaction action = {.sa_handler = on_terminate};
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event watch = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &watch);
    notify_ready();
    struct epoll_event events[256];
    while (!stopping) {
        int count = epoll_wait(epoll_fd, events, 256, -1);
        for (int i = 0; i < count; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) accept_all(listener);
            else if (!connections[fd].open) continue;
            else if ((events[i].events & EPOLLOUT) && flush_pending(fd) != 0) close_connection(fd);
            else if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readable(fd);
        }
    }
    for (int fd = 0; fd < connection_limit; fd++)
        if (connections[fd].open) close_connection(fd);
    free(connections), free(subscribers);
    free(reply.bytes), free(event.bytes), free(ready.bytes), free(imported.bytes);
    close(epoll_fd), close(listener);
    return 0;
}
