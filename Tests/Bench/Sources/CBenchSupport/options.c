#include <stdlib.h>

#include "bench_support.h"

int bench_load_option(int option, const char *value, struct bench_calls_options *calls, int *pids,
                      struct bench_fanout_options *fanout) {
    switch (option) {
    case 'n': calls->clients = atoi(value); return 1;
    case 'T': calls->seconds = atof(value); return 1;
    case 'C': calls->count = atol(value); return 1;
    case 'p':
        if (*pids < 4) calls->pids[(*pids)++] = atoi(value);
        return 1;
    case 'S': fanout->subscribers = atoi(value); return 1;
    case 'P': fanout->processes = atoi(value); return 1;
    case 'e': fanout->events = atoi(value); return 1;
    case 'b': fanout->burst = atoi(value); return 1;
    case 'd': fanout->daemon_pid = atoi(value); return 1;
    default: return 0;
    }
}
