#ifndef SESAME_WALL_CLOCK_H
#define SESAME_WALL_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <sys/timerfd.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

/* How Linux tells a program that the wall clock was set (by NTP stepping it, a user, a restored
   virtual machine) or that the machine resumed from suspend: a timer on CLOCK_REALTIME armed
   with TFD_TIMER_CANCEL_ON_SET is cancelled by either, its descriptor turns readable and read(2)
   fails with ECANCELED (timerfd_create(2); the kernel's resume path cancels such timers as a
   clock set does). It is armed for the end of time, so it never expires: only the notice
   matters. systemd watches for time changes the same way. Glibc's module for Swift leaves
   <sys/timerfd.h> out. Where a function fails, it returns -1 with errno set. */

/* The largest time_t, whatever its width: the end of time the timer is armed for. */
#define SESAME_TIME_T_MAX ((time_t)((UINT64_C(1) << (sizeof(time_t) * 8 - 1)) - 1))

/* Arms the timer (again: after each notice). */
static inline int sesame_wall_clock_arm(int fd) {
    struct itimerspec never = {.it_interval = {0, 0}, .it_value = {SESAME_TIME_T_MAX, 0}};
    return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &never, NULL);
}

/* A non-blocking descriptor that turns readable when the wall clock changes. */
static inline int sesame_wall_clock_watch(void) {
    int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) return -1;
    if (sesame_wall_clock_arm(fd) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Reads the descriptor: 1 when the clock changed (arm it again for the next change), 0 when it
   did not, -1 with errno on any other failure. */
static inline int sesame_wall_clock_changed(int fd) {
    uint64_t expirations;
    if (read(fd, &expirations, sizeof expirations) >= 0 || errno == EAGAIN || errno == EINTR) return 0;
    return errno == ECANCELED ? 1 : -1;
}

/* Whether something (an NTP daemon) may be keeping the wall clock synchronized: the kernel's
   STA_UNSYNC is clear, or its state cannot be read. For tests, which set the clock only where
   this is false. */
static inline int sesame_wall_clock_synchronized(void) {
    struct timex state = {.modes = 0};
    return adjtimex(&state) < 0 || !(state.status & STA_UNSYNC);
}

/* Sets the wall clock to what it reads, which cancels the timers above: it moves back by the
   time between reading and setting, well under a microsecond unless the thread is preempted
   between the two calls. (adjtimex's ADJ_SETOFFSET by zero would move it by nothing, but recent
   kernels do not count that as setting it.) Setting the clock also clears the kernel's NTP
   state, so tests call this only on a clock nothing synchronizes. Needs CAP_SYS_TIME. */
static inline int sesame_wall_clock_touch(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) < 0) return -1;
    return clock_settime(CLOCK_REALTIME, &now);
}

#endif
