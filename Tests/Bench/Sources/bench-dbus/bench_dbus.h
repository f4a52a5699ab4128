// The D-Bus reference: a libdbus service and the transport the load drivers use on a bus.
#ifndef BENCH_DBUS_H
#define BENCH_DBUS_H

#include "bench_support.h"

/// The names the service and its callers and subscribers agree on.
#define BENCH_DBUS_NAME "io.sesame.Bench"
#define BENCH_DBUS_PATH "/io/sesame/Accounts"
#define BENCH_DBUS_INTERFACE "io.sesame.Accounts"
#define BENCH_DBUS_EVENTS "io.sesame.Events"

/// What the transport needs: the bus address and the sizes of the call and the signal.
struct dbus_bench_context {
    const char *address;
    const char *account;  // GetToken's argument
    size_t event_bytes;   // the signal's size on the wire, roughly (the bus adds the sender)
};

/// Fills a transport for the bus: callers connect with libdbus (Hello, then one round trip so
/// nothing the bus sent is left unread), then send prepared bytes and read raw replies;
/// subscribers add a match rule for the event signal. Returns 0 on success.
int bench_dbus_transport(struct dbus_bench_context *context, struct bench_transport *transport);

/// Runs the service: owns BENCH_DBUS_NAME, prints "ready", and answers GetToken with a reply of
/// about `reply_bytes` on the wire until the bus goes away. Returns the exit status.
int bench_dbus_service(const char *address, size_t reply_bytes);

#endif
