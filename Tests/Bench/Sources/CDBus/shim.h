// libdbus (pkg-config dbus-1), for the benchmark's D-Bus reference clients.
#include <dbus/dbus.h>
