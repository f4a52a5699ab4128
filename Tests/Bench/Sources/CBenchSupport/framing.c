// Message boundaries in a byte stream, and the latency histogram.
#include "bench_support.h"

#include <string.h>

/// The largest D-Bus message accepted (the specification's limit is 128 MiB; ours are small).
#define DBUS_MAXIMUM_MESSAGE (1u << 20)

/// Little-endian uint32 at `bytes` (libdbus marshals in the machine's order, little on x86).
static uint32_t read_u32(const uint8_t *bytes) {
    return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
}

/// Counts D-Bus messages of the types in `types` that `data` completes.
static long count_dbus(unsigned types, struct bench_stream *stream, const uint8_t *data, size_t len) {
    long completed = 0;
    while (len > 0) {
        if (stream->remaining == 0) {
            size_t take = sizeof stream->header - stream->have;
            if (take > len) take = len;
            memcpy(stream->header + stream->have, data, take);
            stream->have += (uint32_t)take;
            data += take;
            len -= take;
            if (stream->have < sizeof stream->header) break;
            if (stream->header[0] != 'l') return -1;
            uint32_t fields = read_u32(stream->header + 12);
            uint32_t body = read_u32(stream->header + 4);
            uint32_t total = ((16 + fields + 7) & ~7u) + body;
            if (fields > DBUS_MAXIMUM_MESSAGE || body > DBUS_MAXIMUM_MESSAGE) return -1;
            stream->type = stream->header[1];
            stream->remaining = total - 16;
            stream->have = 0;
            if (stream->remaining > 0) continue;
        } else {
            size_t take = stream->remaining < len ? stream->remaining : len;
            stream->remaining -= (uint32_t)take;
            data += take;
            len -= take;
            if (stream->remaining > 0) break;
        }
        if (stream->type < 8 && (types & (1u << stream->type))) completed++;
    }
    return completed;
}

long bench_count_messages(enum bench_framing framing, unsigned dbus_types, struct bench_stream *stream,
                          const uint8_t *data, size_t len) {
    if (framing == BENCH_FRAME_DBUS) return count_dbus(dbus_types, stream, data, len);
    long completed = 0;
    const uint8_t *end = data + len;
    while ((data = memchr(data, 0, (size_t)(end - data))) != NULL) {
        completed++;
        data++;
    }
    return completed;
}

/// The bucket of a latency: 64 linear steps within each power of two.
static int bucket_of(int64_t nanoseconds) {
    if (nanoseconds < 64) return nanoseconds < 0 ? 0 : (int)nanoseconds;
    int power = 63 - __builtin_clzll((unsigned long long)nanoseconds);  // >= 6
    int step = (int)((nanoseconds >> (power - 6)) & 63);
    int bucket = (power - 5) * 64 + step;
    return bucket < BENCH_HISTOGRAM_BUCKETS ? bucket : BENCH_HISTOGRAM_BUCKETS - 1;
}

/// The middle of the latencies that fall in `bucket`.
static int64_t middle_of(int bucket) {
    if (bucket < 64) return bucket;
    int power = bucket / 64 + 5;
    return (((int64_t)64 + bucket % 64) << (power - 6)) + ((int64_t)1 << (power - 6)) / 2;
}

void bench_histogram_add(struct bench_histogram *histogram, int64_t nanoseconds) {
    histogram->counts[bucket_of(nanoseconds)]++;
    histogram->total++;
}

void bench_histogram_merge(struct bench_histogram *into, const struct bench_histogram *other) {
    for (int i = 0; i < BENCH_HISTOGRAM_BUCKETS; i++) into->counts[i] += other->counts[i];
    into->total += other->total;
}

int64_t bench_histogram_quantile(const struct bench_histogram *histogram, double fraction) {
    if (histogram->total == 0) return 0;
    uint64_t rank = (uint64_t)(fraction * (double)histogram->total);
    if (rank >= histogram->total) rank = histogram->total - 1;
    uint64_t seen = 0;
    for (int i = 0; i < BENCH_HISTOGRAM_BUCKETS; i++) {
        seen += histogram->counts[i];
        if (seen > rank) return middle_of(i);
    }
    return middle_of(BENCH_HISTOGRAM_BUCKETS - 1);
}
