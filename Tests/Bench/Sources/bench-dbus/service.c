// The D-Bus service: answers GetToken(account) with (token, "Bearer", expiry) the way a
// straightforward libdbus program does, one message at a time.
#define _GNU_SOURCE
#include "bench_dbus.h"

#include <dbus/dbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *token_type = "Bearer";
static const char *expiry = "2026-11-22T10:00:00Z";

/// A method return for `call` carrying `token`; NULL if out of memory.
static DBusMessage *answer(DBusMessage *call, const char *token) {
    DBusMessage *reply = dbus_message_new_method_return(call);
    if (reply && !dbus_message_append_args(reply, DBUS_TYPE_STRING, &token, DBUS_TYPE_STRING, &token_type,
                                           DBUS_TYPE_STRING, &expiry, DBUS_TYPE_INVALID)) {
        dbus_message_unref(reply);
        return NULL;
    }
    return reply;
}

/// A token long enough that a reply to `call` is about `reply_bytes` on the wire (the bus adds
/// the sender field, about 16 bytes). The caller frees it.
static char *sized_token(DBusMessage *call, size_t reply_bytes) {
    size_t length = 1;
    DBusMessage *empty = answer(call, "");
    if (empty) {
        char *bytes = NULL;
        int marshalled = 0;
        dbus_message_set_serial(empty, 1);
        if (dbus_message_marshal(empty, &bytes, &marshalled) && reply_bytes > (size_t)marshalled + 16)
            length = reply_bytes - (size_t)marshalled - 16;
        dbus_free(bytes);
        dbus_message_unref(empty);
    }
    char *token = malloc(length + 1);
    if (token) {
        memset(token, 't', length);
        token[length] = 0;
    }
    return token;
}

/// Answers every GetToken waiting on the connection; 0, or -1 when out of memory.
static int answer_waiting(DBusConnection *connection, size_t reply_bytes, char **token) {
    DBusMessage *message;
    while ((message = dbus_connection_pop_message(connection)) != NULL) {
        if (dbus_message_is_method_call(message, BENCH_DBUS_INTERFACE, "GetToken")) {
            if (!*token) *token = sized_token(message, reply_bytes);
            DBusMessage *reply = *token ? answer(message, *token) : NULL;
            if (!reply) {
                dbus_message_unref(message);
                return -1;
            }
            dbus_connection_send(connection, reply, NULL);
            dbus_message_unref(reply);
        }
        dbus_message_unref(message);
    }
    return 0;
}

int bench_dbus_service(const char *address, size_t reply_bytes) {
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_connection_open_private(address, &error);
    int status = 1;
    if (connection && dbus_bus_register(connection, &error) &&
        dbus_bus_request_name(connection, BENCH_DBUS_NAME, DBUS_NAME_FLAG_DO_NOT_QUEUE, &error) ==
            DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        printf("ready\n");
        fflush(stdout);
        char *token = NULL;
        status = 0;
        while (status == 0 && dbus_connection_read_write(connection, -1))
            status = answer_waiting(connection, reply_bytes, &token);
        free(token);
    }
    if (dbus_error_is_set(&error)) fprintf(stderr, "bench-dbus service: %s\n", error.message);
    dbus_error_free(&error);
    if (connection) {
        dbus_connection_close(connection);
        dbus_connection_unref(connection);
    }
    return status;
}
