// Start-up timing: exec until the program says it is ready, then its idle RSS; and a whole
// short-lived program's run, spawn to exit.
#define _GNU_SOURCE
#include "startup.h"

#include "bench_support.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/// How long a program may take to become ready.
#define READY_TIMEOUT_MS 30000

/// A datagram socket bound at `path` for the program's sd_notify; -1 on error.
static int notify_socket(char *path, size_t capacity) {
    snprintf(path, capacity, "/tmp/bench-notify-%d.sock", (int)getpid());
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path) return -1;
    strcpy(address.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/// Waits until `fd` says the program is ready: a datagram with READY=1, or a line on a pipe.
static int await_ready(int fd, int on_stdout) {
    char buffer[4096];
    size_t have = 0;
    int64_t deadline = bench_now_ns() + (int64_t)READY_TIMEOUT_MS * 1000000;
    for (;;) {
        int left = (int)((deadline - bench_now_ns()) / 1000000);
        struct pollfd wait = {.fd = fd, .events = POLLIN};
        if (left <= 0) return -1;
        int ready = poll(&wait, 1, left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return -1;
        ssize_t got = read(fd, buffer + have, sizeof buffer - 1 - have);
        if (got <= 0) return -1;
        if (on_stdout) {
            have += (size_t)got;
            if (memchr(buffer, '\n', have)) return 0;
            if (have == sizeof buffer - 1) return -1;
            continue;
        }
        buffer[got] = 0;
        // sd_notify's messages are newline-separated assignments.
        for (char *line = strtok(buffer, "\n"); line; line = strtok(NULL, "\n")) {
            if (strcmp(line, "READY=1") == 0) return 0;
        }
    }
}

/// Stops the program: SIGTERM, then SIGKILL if it is still there after ten seconds.
static void stop(pid_t pid) {
    kill(pid, SIGTERM);
    for (int i = 0; i < 1000; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid) return;
        bench_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/// Spawns `command` with stdin from `in` (or the caller's), stdout on `out` (or /dev/null) and
/// stderr on /dev/null; its pid or -1.
static pid_t spawn(char **command, const char *in, int out) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (in) posix_spawn_file_actions_addopen(&actions, 0, in, O_RDONLY, 0);
    if (out >= 0)
        posix_spawn_file_actions_adddup2(&actions, out, 1);
    else
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    if (posix_spawnp(&pid, command[0], &actions, NULL, command, environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&actions);
    return pid;
}

int bench_runs(char **command, long count, const char *stdin_path) {
    if (!command[0] || count < 1 || count > 100000) return 64;
    double *walls = calloc((size_t)count, sizeof *walls);
    if (!walls) return 1;
    int failed = 0;
    for (long i = 0; i < count && !failed; i++) {
        int64_t start = bench_now_ns();
        pid_t pid = spawn(command, stdin_path, -1);
        int status = -1;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "bench-client: %s failed (run %ld)\n", command[0], i + 1);
            failed = 1;
        }
        walls[i] = (double)(bench_now_ns() - start) / 1e3;
    }
    if (!failed) {
        printf("wall_us=");
        for (long i = 0; i < count; i++) printf("%s%.1f", i ? "," : "", walls[i]);
        printf("\n");
    }
    free(walls);
    return failed;
}

int bench_startup(char **command, int ready_on_stdout, long settle_ms) {
    if (!command[0]) return 64;
    char path[108] = "";
    int pipe_ends[2] = {-1, -1};
    int fd = -1;
    if (ready_on_stdout) {
        if (pipe2(pipe_ends, O_CLOEXEC) != 0) return 1;
        fd = pipe_ends[0];
    } else {
        if ((fd = notify_socket(path, sizeof path)) < 0) return 1;
        setenv("NOTIFY_SOCKET", path, 1);
    }
    int64_t start = bench_now_ns();
    pid_t pid = spawn(command, NULL, pipe_ends[1]);
    if (pipe_ends[1] >= 0) close(pipe_ends[1]);
    int status = pid > 0 ? await_ready(fd, ready_on_stdout) : -1;
    int64_t ready = bench_now_ns();
    long rss = -1;
    if (status == 0) {
        bench_sleep_ms(settle_ms);
        rss = bench_rss_kib(pid);
    }
    if (pid > 0) stop(pid);
    close(fd);
    if (path[0]) unlink(path);
    if (status != 0) {
        fprintf(stderr, "bench-client: %s did not become ready\n", command[0]);
        return 1;
    }
    printf("ready_us=%.1f rss_kib=%ld\n", (double)(ready - start) / 1e3, rss);
    return 0;
}
