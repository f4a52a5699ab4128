// bench-dbus: the D-Bus reference for sesame's benchmark, on a private dbus-daemon.
//
//   bench-dbus service --address A --reply-bytes N        answers GetToken; prints "ready"
//   bench-dbus calls   --address A --clients N (--seconds T | --count C) [--pid P]...
//   bench-dbus fanout  --address A --subscribers N --processes P --events E --burst B
//                      --daemon-pid P --event-bytes N
//
// calls and fanout print the same key=value lines as bench-client.
#define _GNU_SOURCE
#include "bench_dbus.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The command line, parsed.
struct arguments {
    struct dbus_bench_context context;
    struct bench_calls_options calls;
    struct bench_fanout_options fanout;
    size_t reply_bytes;
    int pids;
};

/// Parses the options after the mode; 0 on success.
static int parse(int argc, char **argv, struct arguments *arguments) {
    static const struct option options[] = {
        {"address", 1, 0, 'a'},     {"reply-bytes", 1, 0, 'r'}, {"event-bytes", 1, 0, 'E'},
        {"account", 1, 0, 'A'},     {"clients", 1, 0, 'n'},     {"seconds", 1, 0, 'T'},
        {"count", 1, 0, 'C'},       {"pid", 1, 0, 'p'},         {"subscribers", 1, 0, 'S'},
        {"processes", 1, 0, 'P'},   {"events", 1, 0, 'e'},      {"burst", 1, 0, 'b'},
        {"daemon-pid", 1, 0, 'd'},  {0, 0, 0, 0},
    };
    for (int option; (option = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        switch (option) {
        case 'a': arguments->context.address = optarg; break;
        case 'r': arguments->reply_bytes = (size_t)atol(optarg); break;
        case 'E': arguments->context.event_bytes = (size_t)atol(optarg); break;
        case 'A': arguments->context.account = optarg; break;
        default:
            if (!bench_load_option(option, optarg, &arguments->calls, &arguments->pids, &arguments->fanout)) return -1;
        }
    }
    return arguments->context.address ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench-dbus service|calls|fanout --address A OPTIONS (see the source)\n");
        return 64;
    }
    const char *mode = argv[1];
    struct arguments arguments = {
        .context = {.account = "google-0a1b2c3d", .event_bytes = 225},
        .calls = {.clients = 1, .seconds = 2},
        .fanout = {.processes = 4, .events = 5},
        .reply_bytes = 1114,
    };
    if (parse(argc - 1, argv + 1, &arguments) != 0) return 64;
    bench_raise_nofile();
    if (strcmp(mode, "service") == 0) return bench_dbus_service(arguments.context.address, arguments.reply_bytes);
    struct bench_transport transport;
    if (bench_dbus_transport(&arguments.context, &transport) != 0) {
        fprintf(stderr, "bench-dbus: cannot prepare the messages\n");
        return 1;
    }
    if (strcmp(mode, "calls") == 0) return bench_run_calls(&transport, &arguments.calls);
    if (strcmp(mode, "fanout") == 0) return bench_run_fanout(&transport, &arguments.fanout);
    fprintf(stderr, "bench-dbus: unknown mode %s\n", mode);
    return 64;
}
