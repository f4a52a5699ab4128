#ifndef SESAME_CSYSTEMD_SHIM_H
#define SESAME_CSYSTEMD_SHIM_H

#include <sys/types.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

/* sd_journal_send and sd_notifyf are variadic and do not import; use sd_journal_sendv and
   sd_notify, which do. */

#endif
