// bench-client: the load, subscriber and start-up driver for NUL-framed Varlink servers (sesamed
// and the floor). Messages come from the command line, exactly as sent; the client parses
// nothing but message boundaries, so it costs the same against every server.
//
//   bench-client call    --socket S --call MSG [--wait-ms N]      one call; prints bytes= and the reply
//   bench-client event   --socket S --subscribe MSG --trigger MSG  one event; prints bytes= and the event
//   bench-client calls   --socket S --call MSG --clients N (--seconds T | --count C) [--pid P]...
//   bench-client connect --socket S --call MSG --clients N --seconds T [--pid P]...
//   bench-client fanout  --socket S --subscribe MSG --trigger MSG --subscribers N --processes P
//                        --events E --burst B --daemon-pid P
//   bench-client startup (--notify | --stdout) [--settle-ms N] -- COMMAND ARGS...
//   bench-client runs    --count N [--stdin FILE] -- COMMAND ARGS...   N whole runs, spawn to exit
#define _GNU_SOURCE
#include "bench_support.h"
#include "startup.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/// The messages of one run; each is sent with its NUL terminator.
struct varlink_context {
    const char *socket;
    const char *call;
    const char *subscribe;
    const char *trigger;
};

/// Copies `message` and its NUL into out; the length, or 0 if it does not fit.
static size_t copy_message(const char *message, uint8_t *out, size_t capacity) {
    size_t length = message ? strlen(message) + 1 : 0;
    if (length > capacity) return 0;
    memcpy(out, message, length);
    return length;
}

static size_t varlink_call(void *context, uint32_t serial, uint8_t *out, size_t capacity) {
    (void)serial;
    return copy_message(((struct varlink_context *)context)->call, out, capacity);
}

static size_t varlink_trigger(void *context, uint32_t serial, uint8_t *out, size_t capacity) {
    (void)serial;
    return copy_message(((struct varlink_context *)context)->trigger, out, capacity);
}

static int varlink_connect(void *context) { return bench_unix_connect(((struct varlink_context *)context)->socket); }

static void varlink_disconnect(void *context, int fd) {
    (void)context;
    close(fd);
}

/// Reads one NUL-terminated reply into buffer (NUL included); its length, or -1.
static long read_reply(int fd, char *buffer, size_t capacity) {
    size_t length = 0;
    while (length == 0 || buffer[length - 1] != 0) {
        if (length == capacity) return -1;
        ssize_t got = read(fd, buffer + length, capacity - length);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        // Replies come one per call here, so a NUL can only end the buffer's contents.
        length += (size_t)got;
    }
    return (long)length;
}

/// Connects and sends Subscribe with "more"; the connection once its first reply (ready) came.
static int varlink_subscribe(void *context) {
    struct varlink_context *varlink = context;
    int fd = bench_unix_connect(varlink->socket);
    char reply[4096];
    if (fd < 0) return -1;
    if (bench_write_all(fd, varlink->subscribe, strlen(varlink->subscribe) + 1) != 0 ||
        read_reply(fd, reply, sizeof reply) < 0 || strstr(reply, "\"error\"")) {
        close(fd);
        return -1;
    }
    return fd;
}

/// One call, retrying the connection for up to `wait_ms`; prints the reply's size and text.
static int single_call(struct varlink_context *varlink, long wait_ms) {
    int64_t deadline = bench_now_ns() + (int64_t)wait_ms * 1000000;
    int fd;
    while ((fd = bench_unix_connect(varlink->socket)) < 0 && bench_now_ns() < deadline) bench_sleep_ms(10);
    if (fd < 0) {
        fprintf(stderr, "bench-client: cannot connect to %s\n", varlink->socket);
        return 1;
    }
    static char reply[1 << 20];
    long length = -1;
    if (bench_write_all(fd, varlink->call, strlen(varlink->call) + 1) == 0)
        length = read_reply(fd, reply, sizeof reply);
    close(fd);
    if (length < 0) return 1;
    printf("bytes=%ld\n%s\n", length - 1, reply);
    return 0;
}

/// Subscribes once, triggers one event, and prints the first event's size and text.
static int sample_event(struct varlink_context *varlink) {
    int subscriber = varlink_subscribe(varlink), trigger = bench_unix_connect(varlink->socket);
    static char event[1 << 16], reply[1 << 16];
    long length = -1;
    if (subscriber >= 0 && trigger >= 0 && bench_write_all(trigger, varlink->trigger, strlen(varlink->trigger) + 1) == 0 &&
        read_reply(trigger, reply, sizeof reply) >= 0)
        length = read_reply(subscriber, event, sizeof event);
    if (subscriber >= 0) close(subscriber);
    if (trigger >= 0) close(trigger);
    if (length < 0) return 1;
    printf("bytes=%ld\n%s\n", length - 1, event);
    return 0;
}

/// The command line, parsed.
struct arguments {
    struct varlink_context varlink;
    struct bench_calls_options calls;
    struct bench_fanout_options fanout;
    long wait_ms, settle_ms;
    int pids, ready_on_stdout;
    const char *stdin_path;
};

/// Parses the options after the mode; the index of the first operand (startup's command).
static int parse(int argc, char **argv, struct arguments *arguments) {
    static const struct option options[] = {
        {"socket", 1, 0, 's'},      {"call", 1, 0, 'c'},   {"subscribe", 1, 0, 'u'}, {"trigger", 1, 0, 't'},
        {"clients", 1, 0, 'n'},     {"seconds", 1, 0, 'T'}, {"count", 1, 0, 'C'},    {"pid", 1, 0, 'p'},
        {"subscribers", 1, 0, 'S'}, {"processes", 1, 0, 'P'}, {"events", 1, 0, 'e'},  {"burst", 1, 0, 'b'},
        {"daemon-pid", 1, 0, 'd'},  {"wait-ms", 1, 0, 'w'}, {"settle-ms", 1, 0, 'm'}, {"notify", 0, 0, 'N'},
        {"stdout", 0, 0, 'O'},      {"stdin", 1, 0, 'I'},  {0, 0, 0, 0},
    };
    int option;
    while ((option = getopt_long(argc, argv, "+", options, NULL)) != -1) {
        switch (option) {
        case 's': arguments->varlink.socket = optarg; break;
        case 'c': arguments->varlink.call = optarg; break;
        case 'u': arguments->varlink.subscribe = optarg; break;
        case 't': arguments->varlink.trigger = optarg; break;
        case 'w': arguments->wait_ms = atol(optarg); break;
        case 'm': arguments->settle_ms = atol(optarg); break;
        case 'N': arguments->ready_on_stdout = 0; break;
        case 'O': arguments->ready_on_stdout = 1; break;
        case 'I': arguments->stdin_path = optarg; break;
        default:
            if (!bench_load_option(option, optarg, &arguments->calls, &arguments->pids, &arguments->fanout)) return -1;
        }
    }
    return optind;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench-client call|event|calls|connect|fanout|startup|runs OPTIONS (see the source)\n");
        return 64;
    }
    const char *mode = argv[1];
    struct arguments arguments = {.calls = {.clients = 1, .seconds = 2}, .wait_ms = 10000, .settle_ms = 500};
    arguments.fanout = (struct bench_fanout_options){.processes = 4, .events = 5};
    int operands = parse(argc - 1, argv + 1, &arguments);
    if (operands < 0) return 64;
    bench_raise_nofile();
    if (strcmp(mode, "startup") == 0)
        return bench_startup(argv + 1 + operands, arguments.ready_on_stdout, arguments.settle_ms);
    if (strcmp(mode, "runs") == 0) return bench_runs(argv + 1 + operands, arguments.calls.count, arguments.stdin_path);
    struct bench_transport transport = {
        .context = &arguments.varlink, .framing = BENCH_FRAME_NUL, .connect_caller = varlink_connect,
        .connect_subscriber = varlink_subscribe, .disconnect = varlink_disconnect, .call = varlink_call,
        .trigger = varlink_trigger, .trigger_replies = 1,
    };
    if (!arguments.varlink.socket) return 64;
    if (strcmp(mode, "call") == 0 && arguments.varlink.call) return single_call(&arguments.varlink, arguments.wait_ms);
    if ((strcmp(mode, "calls") == 0 || strcmp(mode, "connect") == 0) && arguments.varlink.call) {
        arguments.calls.fresh_connections = strcmp(mode, "connect") == 0;
        return bench_run_calls(&transport, &arguments.calls);
    }
    if (strcmp(mode, "event") == 0 && arguments.varlink.subscribe && arguments.varlink.trigger)
        return sample_event(&arguments.varlink);
    if (strcmp(mode, "fanout") == 0 && arguments.varlink.subscribe && arguments.varlink.trigger)
        return bench_run_fanout(&transport, &arguments.fanout);
    fprintf(stderr, "bench-client: unknown mode or missing option\n");
    return 64;
}
