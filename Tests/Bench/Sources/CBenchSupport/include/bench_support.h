// What the benchmark's C programs share: clocks, /proc readings, message framing, a latency
// histogram, and the two load drivers (calls on persistent or fresh connections, and one event
// fanned out to many subscribers spread over child processes). A transport says how to connect
// and what to send; the drivers never parse more than message boundaries.
#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// ---- clocks and /proc ----

/// CLOCK_MONOTONIC in nanoseconds (the same clock in every process on the machine).
int64_t bench_now_ns(void);
/// utime + stime of a process in microseconds, from /proc/PID/stat; -1 if unreadable.
int64_t bench_cpu_us(pid_t pid);
/// VmRSS of a process in KiB, from /proc/PID/status; -1 if unreadable.
long bench_rss_kib(pid_t pid);
/// The kernel's slab memory in KiB (Slab in /proc/meminfo); -1 if unreadable.
long bench_slab_kib(void);
/// Raises this process's open-file limit to its hard limit.
void bench_raise_nofile(void);
/// Sleeps for `ms` milliseconds.
void bench_sleep_ms(long ms);

// ---- sockets ----

/// A connected Unix stream socket to `path` (blocking, close-on-exec); -1 on error.
int bench_unix_connect(const char *path);
/// Writes all `len` bytes (blocking socket); 0 on success, -1 on error.
int bench_write_all(int fd, const void *data, size_t len);

// ---- framing ----

/// How messages end: NUL-terminated (Varlink and the floor) or D-Bus wire messages.
enum bench_framing { BENCH_FRAME_NUL, BENCH_FRAME_DBUS };

/// Where a byte stream is between messages; zero-initialised at the start of a connection.
struct bench_stream {
    uint32_t remaining;  // D-Bus: bytes left of the current message once its header is known
    uint32_t have;       // D-Bus: header bytes gathered so far (up to 16)
    uint8_t header[16];  // D-Bus: the fixed header being gathered
    uint8_t type;        // D-Bus: the current message's type
};

/// D-Bus message types the counter counts (bit 1 << type); ignored for NUL framing.
enum { BENCH_DBUS_REPLIES = (1 << 2) | (1 << 3), BENCH_DBUS_SIGNALS = 1 << 4 };

/// Feeds `len` bytes of a stream; returns how many counted messages they completed, -1 if
/// the stream is malformed.
long bench_count_messages(enum bench_framing framing, unsigned dbus_types, struct bench_stream *stream,
                          const uint8_t *data, size_t len);

// ---- latency histogram ----

/// Log-linear latency buckets: 64 per power of two of nanoseconds (error under 1.6 %).
#define BENCH_HISTOGRAM_BUCKETS (64 * 40)

/// Counts of latencies; merge several with bench_histogram_merge.
struct bench_histogram {
    uint64_t counts[BENCH_HISTOGRAM_BUCKETS];
    uint64_t total;
};

/// Records one latency in nanoseconds.
void bench_histogram_add(struct bench_histogram *histogram, int64_t nanoseconds);
/// Adds every count of `other` to `into`.
void bench_histogram_merge(struct bench_histogram *into, const struct bench_histogram *other);
/// The latency (ns) below which `fraction` of the recorded ones fall (its bucket's middle); 0 if none.
int64_t bench_histogram_quantile(const struct bench_histogram *histogram, double fraction);

// ---- transports and drivers ----

/// How a system under test is reached. Every function gets `context` back.
struct bench_transport {
    void *context;
    enum bench_framing framing;
    /// A connection ready to send calls on; -1 on error.
    int (*connect_caller)(void *context);
    /// A connection subscribed to events (its set-up replies already read); -1 on error.
    int (*connect_subscriber)(void *context);
    /// Closes a connection made by the functions above.
    void (*disconnect)(void *context, int fd);
    /// Writes one call's bytes (serial for protocols that number messages) into out; its length.
    size_t (*call)(void *context, uint32_t serial, uint8_t *out, size_t capacity);
    /// Writes the bytes that make the system emit one event into out; its length.
    size_t (*trigger)(void *context, uint32_t serial, uint8_t *out, size_t capacity);
    /// Whether each trigger is answered on its connection (Varlink: yes; a D-Bus signal: no).
    int trigger_replies;
};

/// What a calls run asks for.
struct bench_calls_options {
    int clients;           // concurrent connections, one thread each
    double seconds;        // measured window (ignored when count > 0)
    long count;            // calls per client instead of a time window (0: use seconds)
    int fresh_connections; // 1: connect, one call, close, for every call
    pid_t pids[4];         // processes whose CPU time is read around the window (0: unused)
};

/// Runs calls as the options say and prints key=value results on stdout; 0 on success.
int bench_run_calls(const struct bench_transport *transport, const struct bench_calls_options *options);

/// What a fan-out run asks for.
struct bench_fanout_options {
    int subscribers;   // connections subscribed in all
    int processes;     // child processes they are spread over
    int events;        // events sent one at a time, each waited for at every subscriber
    int burst;         // then this many sent back to back (0: none)
    pid_t daemon_pid;  // whose RSS is read before and after subscribing
};

/// Runs a fan-out as the options say and prints key=value results on stdout; 0 on success.
int bench_run_fanout(const struct bench_transport *transport, const struct bench_fanout_options *options);

/// Applies one of the load options both clients take (--clients -n, --seconds -T, --count -C,
/// --pid -p, --subscribers -S, --processes -P, --events -e, --burst -b, --daemon-pid -d);
/// returns 0 when `option` is none of them.
int bench_load_option(int option, const char *value, struct bench_calls_options *calls, int *pids,
                      struct bench_fanout_options *fanout);

#endif
