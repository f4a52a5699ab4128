// The calls driver: N threads, each with a connection of its own (or a fresh one per call),
// sending one call and reading its reply in a loop. The measured window starts once every
// thread is connected and warmed up; the servers' CPU time is read at both ends of it.
#define _GNU_SOURCE
#include "bench_support.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/// Calls each thread makes before the window opens (connections, caches and branch predictors warm).
#define WARM_UP_CALLS 50

/// One thread's state and results.
struct caller {
    const struct bench_transport *transport;
    const struct bench_calls_options *options;
    pthread_barrier_t *ready;
    atomic_int *phase;  // 0: warming up, 1: measuring, 2: stopped
    struct bench_histogram latencies;
    long calls;
    long reply_bytes;  // the size of the last reply, as read
    int failed;
};

/// One call on `fd`: its bytes out, then reading until its reply is complete. 0 on success.
static int one_call(struct caller *caller, int fd, uint32_t serial) {
    uint8_t buffer[65536];
    size_t length = caller->transport->call(caller->transport->context, serial, buffer, sizeof buffer);
    if (bench_write_all(fd, buffer, length) != 0) return -1;
    struct bench_stream stream = {0};
    caller->reply_bytes = 0;
    for (;;) {
        ssize_t got = read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        caller->reply_bytes += got;
        long done = bench_count_messages(caller->transport->framing, BENCH_DBUS_REPLIES, &stream, buffer, (size_t)got);
        if (done < 0) return -1;
        if (done > 0) return 0;
    }
}

/// Makes one timed call, on `fd` or, for fresh connections, on one opened and closed around it.
static int timed_call(struct caller *caller, int fd, uint32_t serial, int measuring) {
    const struct bench_transport *transport = caller->transport;
    int64_t start = bench_now_ns();
    int own = fd < 0;
    if (own && (fd = transport->connect_caller(transport->context)) < 0) return -1;
    int status = one_call(caller, fd, serial);
    if (own) transport->disconnect(transport->context, fd);
    if (status == 0 && measuring) bench_histogram_add(&caller->latencies, bench_now_ns() - start);
    return status;
}

/// A caller thread: connects, warms up, waits for the others, then calls until told to stop.
static void *caller_main(void *argument) {
    struct caller *caller = argument;
    const struct bench_transport *transport = caller->transport;
    int fd = caller->options->fresh_connections ? -1 : transport->connect_caller(transport->context);
    uint32_t serial = 100;
    caller->failed = !caller->options->fresh_connections && fd < 0;
    for (int i = 0; i < WARM_UP_CALLS && !caller->failed; i++) caller->failed = timed_call(caller, fd, serial++, 0) != 0;
    pthread_barrier_wait(caller->ready);  // the window opens once every thread is here
    pthread_barrier_wait(caller->ready);  // ... and the main thread has read the CPU times
    long limit = caller->options->count;
    while (!caller->failed && atomic_load_explicit(caller->phase, memory_order_relaxed) == 1) {
        if (limit > 0 && caller->calls >= limit) break;
        if (timed_call(caller, fd, serial++, 1) != 0) {
            caller->failed = 1;
            break;
        }
        if (atomic_load_explicit(caller->phase, memory_order_relaxed) == 1 || limit > 0) caller->calls++;
        if (serial == 0) serial = 100;
    }
    if (fd >= 0) transport->disconnect(transport->context, fd);
    return NULL;
}

/// Reads the CPU time of every given process into cpu (microseconds).
static void read_cpu(const struct bench_calls_options *options, int64_t cpu[4]) {
    for (int i = 0; i < 4; i++) cpu[i] = options->pids[i] > 0 ? bench_cpu_us(options->pids[i]) : 0;
}

/// Prints the run's results as key=value pairs on one line.
static void report(const struct bench_calls_options *options, struct caller *callers, double seconds,
                   const int64_t before[4], const int64_t after[4]) {
    struct bench_histogram *all = calloc(1, sizeof *all);
    long calls = 0;
    int failed = 0;
    for (int i = 0; i < options->clients; i++) {
        bench_histogram_merge(all, &callers[i].latencies);
        calls += callers[i].calls;
        failed |= callers[i].failed;
    }
    printf("calls=%ld seconds=%.6f rate=%.1f p50_us=%.2f p99_us=%.2f reply_bytes=%ld failed=%d", calls, seconds,
           seconds > 0 ? (double)calls / seconds : 0.0, (double)bench_histogram_quantile(all, 0.50) / 1e3,
           (double)bench_histogram_quantile(all, 0.99) / 1e3, callers[0].reply_bytes, failed);
    for (int i = 0; i < 4; i++) {
        if (options->pids[i] > 0) printf(" cpu_us_%d=%lld", i, (long long)(after[i] - before[i]));
    }
    printf("\n");
    fflush(stdout);
    free(all);
}

int bench_run_calls(const struct bench_transport *transport, const struct bench_calls_options *options) {
    int clients = options->clients;
    struct caller *callers = calloc((size_t)clients, sizeof *callers);
    pthread_t *threads = calloc((size_t)clients, sizeof *threads);
    if (!callers || !threads) return 1;
    pthread_barrier_t ready;
    pthread_barrier_init(&ready, NULL, (unsigned)clients + 1);
    atomic_int phase = 1;
    for (int i = 0; i < clients; i++) {
        callers[i] = (struct caller){.transport = transport, .options = options, .ready = &ready, .phase = &phase};
        pthread_create(&threads[i], NULL, caller_main, &callers[i]);
    }
    int64_t before[4], after[4];
    pthread_barrier_wait(&ready);
    read_cpu(options, before);
    int64_t start = bench_now_ns();
    pthread_barrier_wait(&ready);
    int64_t end = 0;
    if (options->count == 0) {
        bench_sleep_ms((long)(options->seconds * 1000));
        end = bench_now_ns();
        atomic_store(&phase, 2);
        read_cpu(options, after);
    }
    for (int i = 0; i < clients; i++) pthread_join(threads[i], NULL);
    if (options->count > 0) {
        end = bench_now_ns();
        read_cpu(options, after);
    }
    report(options, callers, (double)(end - start) / 1e9, before, after);
    int failed = 0;
    for (int i = 0; i < clients; i++) failed |= callers[i].failed;
    pthread_barrier_destroy(&ready);
    free(callers);
    free(threads);
    return failed;
}
