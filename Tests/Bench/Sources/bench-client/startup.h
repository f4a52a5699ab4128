// Start-up timing: exec until the program says it is ready.
#ifndef BENCH_STARTUP_H
#define BENCH_STARTUP_H

/// Starts `command`, waits until it is ready (READY=1 on a NOTIFY_SOCKET of our own, or its first
/// line on stdout), waits `settle_ms`, reads its RSS, stops it with SIGTERM, and prints
/// ready_us= and rss_kib=. Returns 0 on success.
int bench_startup(char **command, int ready_on_stdout, long settle_ms);

/// Runs `command` `count` times, one after the other, each from spawn to exit, and prints
/// wall_us= with each run's time; each reads `stdin_path` when given. Returns 0 when every run
/// exited with status 0.
int bench_runs(char **command, long count, const char *stdin_path);

#endif
