// The fan-out driver: subscribers spread over child processes, each child reading all of its
// connections with epoll and reporting when the last of them has received what the parent
// announced. The parent triggers events and measures from just before the trigger's bytes
// leave to the last receipt in any child (CLOCK_MONOTONIC is the same in every process).
#define _GNU_SOURCE
#include "bench_support.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

/// How long a child waits for one round's events before it reports a failure.
#define ROUND_TIMEOUT_MS 60000
/// At most this many child processes.
#define MAXIMUM_PROCESSES 64

/// One child process as the parent sees it.
struct child {
    pid_t pid;
    int command;  // parent -> child: uint32 events to wait for (0: exit)
    int results;  // child -> parent: two int64, the first and the last receipt (-1: failed)
};

/// Reads exactly `len` bytes; 0 on success.
static int read_exactly(int fd, void *data, size_t len) {
    uint8_t *bytes = data;
    while (len > 0) {
        ssize_t got = read(fd, bytes, len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        bytes += got;
        len -= (size_t)got;
    }
    return 0;
}

/// Reads what is waiting on subscriber `index`; returns -1 if the connection failed.
static int drain(const struct bench_transport *transport, int fd, struct bench_stream *stream, uint32_t *count) {
    uint8_t buffer[65536];
    for (;;) {
        ssize_t got = read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno == EAGAIN) return 0;
        if (got <= 0) return -1;
        long done = bench_count_messages(transport->framing, BENCH_DBUS_SIGNALS, stream, buffer, (size_t)got);
        if (done < 0) return -1;
        *count += (uint32_t)done;
    }
}

/// Waits until every connection has received `target` events; times[0] when the first connection
/// had them, times[1] when the last did (both -1 on failure).
static void await_events(const struct bench_transport *transport, int epoll, const int *fds,
                         struct bench_stream *streams, uint32_t *counts, int connections, uint32_t target,
                         int64_t times[2]) {
    int behind = 0;
    for (int i = 0; i < connections; i++) behind += counts[i] < target;
    times[0] = times[1] = -1;
    struct epoll_event events[256];
    while (behind > 0) {
        int ready = epoll_wait(epoll, events, 256, ROUND_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        for (int e = 0; e < ready; e++) {
            uint32_t i = events[e].data.u32;
            int was_behind = counts[i] < target;
            if (drain(transport, fds[i], &streams[i], &counts[i]) != 0) {
                times[0] = times[1] = -1;
                return;
            }
            if (was_behind && counts[i] >= target) {
                behind--;
                times[1] = bench_now_ns();
                if (times[0] < 0) times[0] = times[1];
            }
        }
    }
    if (behind > 0) times[0] = times[1] = -1;
}

/// A child: subscribes `connections` times, reports, then waits for events as told. Never returns.
static void child_main(const struct bench_transport *transport, int connections, int command, int results) {
    bench_raise_nofile();
    int *fds = calloc((size_t)connections, sizeof *fds);
    struct bench_stream *streams = calloc((size_t)connections, sizeof *streams);
    uint32_t *counts = calloc((size_t)connections, sizeof *counts);
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    int64_t status[2] = {0, 0};
    if (!fds || !streams || !counts || epoll < 0) status[0] = status[1] = -1;
    for (int i = 0; i < connections && status[1] == 0; i++) {
        fds[i] = transport->connect_subscriber(transport->context);
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (fds[i] < 0 || fcntl(fds[i], F_SETFL, O_NONBLOCK) != 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, fds[i], &event) != 0)
            status[0] = status[1] = -1;
    }
    bench_write_all(results, status, sizeof status);
    uint32_t target = 0, more = 0;
    while (status[1] == 0 && read_exactly(command, &more, sizeof more) == 0 && more > 0) {
        target += more;
        int64_t times[2];
        await_events(transport, epoll, fds, streams, counts, connections, target, times);
        bench_write_all(results, times, sizeof times);
    }
    _exit(0);  // the kernel closes every connection at once, as a crashed client's would be
}

/// Starts the children, spreading `subscribers` over `processes`; the number started.
static int start_children(const struct bench_transport *transport, const struct bench_fanout_options *options,
                          struct child *children) {
    int processes = options->processes;
    for (int p = 0; p < processes; p++) {
        int command[2], results[2];
        if (pipe2(command, O_CLOEXEC) != 0) return p;
        if (pipe2(results, O_CLOEXEC) != 0) {
            close(command[0]), close(command[1]);
            return p;
        }
        int share = options->subscribers / processes + (p < options->subscribers % processes);
        pid_t pid = fork();
        if (pid == 0) {
            close(command[1]), close(results[0]);
            for (int q = 0; q < p; q++) close(children[q].command), close(children[q].results);
            child_main(transport, share, command[0], results[1]);
        }
        close(command[0]), close(results[1]);
        children[p] = (struct child){.pid = pid, .command = command[1], .results = results[0]};
        if (pid < 0) return p;
    }
    return processes;
}

/// Reads a (first, last) pair from every child; the latest last (or -1 if any failed), and in
/// `earliest` the earliest first.
static int64_t collect(struct child *children, int processes, int64_t *earliest) {
    int64_t latest = 0;
    *earliest = INT64_MAX;
    for (int p = 0; p < processes; p++) {
        int64_t times[2] = {-1, -1};
        if (read_exactly(children[p].results, times, sizeof times) != 0 || times[1] < 0) latest = -1;
        if (latest >= 0 && times[1] > latest) latest = times[1];
        if (times[0] >= 0 && times[0] < *earliest) *earliest = times[0];
    }
    return latest;
}

/// Reads `replies` complete replies from the trigger connection; the time the first completed.
static int64_t read_replies(const struct bench_transport *transport, int fd, long replies) {
    uint8_t buffer[65536];
    struct bench_stream stream = {0};
    int64_t first = 0;
    long done = 0;
    while (done < replies) {
        ssize_t got = read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        long completed = bench_count_messages(transport->framing, BENCH_DBUS_REPLIES, &stream, buffer, (size_t)got);
        if (completed < 0) return -1;
        if (completed > 0 && done == 0) first = bench_now_ns();
        done += completed;
    }
    return first;
}

/// One round's times, in ms after the trigger's bytes were written: the first and the last
/// subscriber to have every event, and the trigger's first reply.
struct round_times {
    double first, last, reply;
};

/// One round: tells the children, writes `count` triggers back to back, and waits for everyone.
static int round_trip(const struct bench_transport *transport, struct child *children, int processes, int trigger,
                      uint32_t count, uint32_t *serial, struct round_times *times) {
    for (int p = 0; p < processes; p++) bench_write_all(children[p].command, &count, sizeof count);
    size_t capacity = (size_t)count * 16384;
    uint8_t *bytes = malloc(capacity);
    size_t length = 0;
    for (uint32_t i = 0; i < count && bytes; i++)
        length += transport->trigger(transport->context, (*serial)++, bytes + length, capacity - length);
    int64_t start = bench_now_ns();
    int status = bytes && bench_write_all(trigger, bytes, length) == 0 ? 0 : -1;
    free(bytes);
    // Replies first: each child's report waits in its pipe meanwhile, timed when it was made.
    int64_t replied = transport->trigger_replies ? read_replies(transport, trigger, count) : start;
    int64_t first;
    int64_t last = collect(children, processes, &first);
    if (status != 0 || last < 0 || replied < 0) return -1;
    *times = (struct round_times){
        .first = (double)(first - start) / 1e6, .last = (double)(last - start) / 1e6,
        .reply = (double)(replied - start) / 1e6};
    return 0;
}

/// Prints one field of every round as a comma-separated list after `key`.
static void print_list(const char *key, const struct round_times *rounds, int count, size_t field) {
    printf(" %s=", key);
    for (int i = 0; i < count; i++) printf("%s%.3f", i ? "," : "", *(const double *)((const char *)&rounds[i] + field));
}

/// Triggers the single events and the burst, then prints every result.
static int measure(const struct bench_transport *transport, const struct bench_fanout_options *options,
                   struct child *children, int processes) {
    int trigger = transport->connect_caller(transport->context);
    if (trigger < 0) return -1;
    int events = options->events > 0 ? options->events : 1;
    struct round_times *rounds = calloc((size_t)events, sizeof *rounds), burst = {0};
    uint32_t serial = 1000;
    int status = rounds ? 0 : -1;
    for (int e = 0; e < events && status == 0; e++)
        status = round_trip(transport, children, processes, trigger, 1, &serial, &rounds[e]);
    if (status == 0 && options->burst > 0)
        status = round_trip(transport, children, processes, trigger, (uint32_t)options->burst, &serial, &burst);
    if (status == 0) {
        print_list("event_ms", rounds, events, offsetof(struct round_times, last));
        print_list("first_receipt_ms", rounds, events, offsetof(struct round_times, first));
        print_list("trigger_reply_ms", rounds, events, offsetof(struct round_times, reply));
        printf(" burst=%d burst_ms=%.3f deliveries_per_s=%.0f", options->burst, burst.last,
               burst.last > 0 ? (double)options->subscribers * options->burst / (burst.last / 1e3) : 0.0);
    }
    free(rounds);
    transport->disconnect(transport->context, trigger);
    return status;
}

int bench_run_fanout(const struct bench_transport *transport, const struct bench_fanout_options *options) {
    struct child children[MAXIMUM_PROCESSES];
    if (options->processes < 1 || options->processes > MAXIMUM_PROCESSES) return 2;
    long rss_before = bench_rss_kib(options->daemon_pid), slab_before = bench_slab_kib();
    fflush(stdout);
    int64_t start = bench_now_ns();
    int started = start_children(transport, options, children);
    int64_t first;
    int status = started == options->processes && collect(children, started, &first) == 0 ? 0 : -1;
    double setup_ms = (double)(bench_now_ns() - start) / 1e6;
    bench_sleep_ms(500);  // lets the daemon finish what subscribing started (and the kernel settle)
    long rss_after = bench_rss_kib(options->daemon_pid), slab_after = bench_slab_kib();
    printf("subscribers=%d processes=%d setup_ms=%.1f rss_before_kib=%ld rss_after_kib=%ld slab_before_kib=%ld "
           "slab_after_kib=%ld",
           options->subscribers, options->processes, setup_ms, rss_before, rss_after, slab_before, slab_after);
    if (status == 0) status = measure(transport, options, children, started);
    printf(" failed=%d\n", status != 0);
    fflush(stdout);
    uint32_t stop = 0;
    for (int p = 0; p < started; p++) {
        bench_write_all(children[p].command, &stop, sizeof stop);
        close(children[p].command), close(children[p].results);
    }
    for (int p = 0; p < started; p++) waitpid(children[p].pid, NULL, 0);
    return status != 0;
}
