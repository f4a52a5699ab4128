// Clocks, /proc readings and socket helpers for the benchmark's C programs.
#define _GNU_SOURCE
#include "bench_support.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int64_t bench_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

void bench_sleep_ms(long ms) {
    struct timespec delay = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&delay, &delay) != 0 && errno == EINTR) {
    }
}

int64_t bench_cpu_us(pid_t pid) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *file = fopen(path, "re");
    if (!file) return -1;
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = 0;
    // The command name may hold spaces and parentheses: fields are counted after the last ')'.
    char *rest = strrchr(text, ')');
    if (!rest) return -1;
    unsigned long long utime = 0, stime = 0;
    // Fields 3..13 are skipped; 14 and 15 are utime and stime, in clock ticks.
    if (sscanf(rest + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return -1;
    long ticks = sysconf(_SC_CLK_TCK);
    return (int64_t)((utime + stime) * 1000000ULL / (unsigned long long)(ticks > 0 ? ticks : 100));
}

/// The number after `key` in a /proc file of "Key:   value kB" lines; -1 if absent.
static long proc_field_kib(const char *path, const char *key) {
    FILE *file = fopen(path, "re");
    if (!file) return -1;
    char line[256];
    long value = -1;
    size_t key_length = strlen(key);
    while (fgets(line, sizeof line, file)) {
        if (strncmp(line, key, key_length) == 0 && line[key_length] == ':') {
            sscanf(line + key_length + 1, "%ld", &value);
            break;
        }
    }
    fclose(file);
    return value;
}

long bench_rss_kib(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    return proc_field_kib(path, "VmRSS");
}

long bench_slab_kib(void) { return proc_field_kib("/proc/meminfo", "Slab"); }

void bench_raise_nofile(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
}

int bench_unix_connect(const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path) return -1;
    strcpy(address.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    while (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        if (errno == EINTR) continue;
        // A full accept backlog: the server is busy accepting others; try again shortly.
        if (errno == EAGAIN) {
            bench_sleep_ms(1);
            continue;
        }
        close(fd);
        return -1;
    }
    return fd;
}

int bench_write_all(int fd, const void *data, size_t len) {
    const uint8_t *bytes = data;
    while (len > 0) {
        ssize_t written = write(fd, bytes, len);
        if (written < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        bytes += written;
        len -= (size_t)written;
    }
    return 0;
}
