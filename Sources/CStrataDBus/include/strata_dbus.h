// What the power probe and the network probe share: a private bus connection, bounded
// waits for change signals, and what a failed call means.
#ifndef STRATA_DBUS_H
#define STRATA_DBUS_H

#include <gio/gio.h>

/// A private connection to the system bus, or to the bus at `address` if not NULL (not
/// the process-wide singleton: it can be dropped and remade when the bus goes away, and
/// its closing never exits the process). NULL with `error` set.
GDBusConnection *strata_dbus_connect(const char *address, GError **error);

/// Iterates `context` until `*flag` is set or `timeout_ms` passes. Returns 1 if the flag
/// was set (and clears it), 0 on timeout.
int strata_dbus_wait(GMainContext *context, gboolean *flag, int timeout_ms);

typedef enum {
    STRATA_DBUS_ABSENT = 0,   ///< Nobody owns the name.
    STRATA_DBUS_TIMEOUT = 1,  ///< The owner did not answer in time.
    STRATA_DBUS_OTHER = 2,
} strata_dbus_failure;

/// What a failed call's error means.
strata_dbus_failure strata_dbus_classify(const GError *error);

#endif
