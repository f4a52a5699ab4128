// The D-Bus transport: libdbus connects, authenticates, says Hello and adds match rules; the
// calls and signals themselves are prepared once with libdbus and then written as bytes, so the
// client costs as little as bench-client does against the Varlink servers.
#define _GNU_SOURCE
#include "bench_dbus.h"

#include <dbus/dbus.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The connections by file descriptor (each is used by one thread, or one process, only).
#define MAXIMUM_FDS 65536
static DBusConnection *connections[MAXIMUM_FDS];

/// A marshalled message whose serial is patched in before each send.
struct prepared {
    char *bytes;
    int length;
};
static struct prepared call_message, event_message;

/// Marshals `message` (consumed) with serial 1; 0 on success.
static int marshal(DBusMessage *message, struct prepared *into) {
    dbus_message_set_serial(message, 1);
    dbus_bool_t marshalled = dbus_message_marshal(message, &into->bytes, &into->length);
    dbus_message_unref(message);
    return marshalled ? 0 : -1;
}

/// Prepares GetToken(account) to the service and the event signal of about `event_bytes`.
static int prepare(const struct dbus_bench_context *context) {
    DBusMessage *call = dbus_message_new_method_call(BENCH_DBUS_NAME, BENCH_DBUS_PATH, BENCH_DBUS_INTERFACE, "GetToken");
    const char *account = context->account;
    if (!call || !dbus_message_append_args(call, DBUS_TYPE_STRING, &account, DBUS_TYPE_INVALID)) return -1;
    if (marshal(call, &call_message) != 0) return -1;
    // The bus adds the sender field (about 16 bytes for ":1.NNNN") on the way to each subscriber.
    size_t overhead = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t length = context->event_bytes > overhead + 16 ? context->event_bytes - overhead - 16 : 1;
        char *padding = malloc(length + 1);
        if (!padding) return -1;
        memset(padding, 'x', length);
        padding[length] = 0;
        DBusMessage *event = dbus_message_new_signal(BENCH_DBUS_PATH, BENCH_DBUS_EVENTS, "Event");
        const char *text = pass == 0 ? "" : padding;
        int appended = event && dbus_message_append_args(event, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID);
        free(padding);
        dbus_free(event_message.bytes);
        event_message.bytes = NULL;
        if (!appended || marshal(event, &event_message) != 0) return -1;
        overhead = (size_t)event_message.length;
    }
    return 0;
}

/// Copies a prepared message into out with `serial`; its length, or 0 if it does not fit.
static size_t copy_prepared(const struct prepared *message, uint32_t serial, uint8_t *out, size_t capacity) {
    if ((size_t)message->length > capacity) return 0;
    memcpy(out, message->bytes, (size_t)message->length);
    for (int i = 0; i < 4; i++) out[8 + i] = (uint8_t)(serial >> (8 * i));  // little-endian, as marshalled
    return (size_t)message->length;
}

static size_t dbus_call(void *context, uint32_t serial, uint8_t *out, size_t capacity) {
    (void)context;
    return copy_prepared(&call_message, serial, out, capacity);
}

static size_t dbus_trigger(void *context, uint32_t serial, uint8_t *out, size_t capacity) {
    (void)context;
    return copy_prepared(&event_message, serial, out, capacity);
}

/// A registered private connection whose incoming bytes have all been read; its fd, or -1.
/// With `match`, a match rule for the event signal is added first.
static int open_connection(const struct dbus_bench_context *context, int match) {
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_connection_open_private(context->address, &error);
    int fd = -1;
    if (connection && dbus_bus_register(connection, &error)) {
        // Each round trip's reply comes after NameAcquired, so libdbus has read everything.
        if (match)
            dbus_bus_add_match(connection, "type='signal',interface='" BENCH_DBUS_EVENTS "',member='Event'", &error);
        else
            dbus_free(dbus_bus_get_id(connection, &error));
        // libdbus made the socket non-blocking; the drivers read and write it blocking (the fan-out
        // children make their subscribers non-blocking again for epoll).
        if (!dbus_error_is_set(&error) && dbus_connection_get_unix_fd(connection, &fd) && fd < MAXIMUM_FDS &&
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0) {
            connections[fd] = connection;
            return fd;
        }
    }
    if (dbus_error_is_set(&error)) fprintf(stderr, "bench-dbus: %s\n", error.message);
    dbus_error_free(&error);
    if (connection) {
        dbus_connection_close(connection);
        dbus_connection_unref(connection);
    }
    return -1;
}

static int dbus_connect_caller(void *context) { return open_connection(context, 0); }

static int dbus_connect_subscriber(void *context) { return open_connection(context, 1); }

static void dbus_disconnect(void *context, int fd) {
    (void)context;
    if (fd < 0 || fd >= MAXIMUM_FDS || !connections[fd]) return;
    DBusConnection *connection = connections[fd];
    connections[fd] = NULL;
    dbus_connection_close(connection);
    dbus_connection_unref(connection);
}

int bench_dbus_transport(struct dbus_bench_context *context, struct bench_transport *transport) {
    if (!dbus_threads_init_default() || prepare(context) != 0) return -1;
    *transport = (struct bench_transport){
        .context = context, .framing = BENCH_FRAME_DBUS, .connect_caller = dbus_connect_caller,
        .connect_subscriber = dbus_connect_subscriber, .disconnect = dbus_disconnect, .call = dbus_call,
        .trigger = dbus_trigger, .trigger_replies = 0,
    };
    return 0;
}
