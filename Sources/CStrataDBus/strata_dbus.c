// See strata_dbus.h.
#include "strata_dbus.h"

GDBusConnection *strata_dbus_connect(const char *address, GError **error) {
    gchar *resolved = address ? g_strdup(address) : g_dbus_address_get_for_bus_sync(G_BUS_TYPE_SYSTEM, NULL, error);
    if (!resolved) return NULL;
    GDBusConnection *bus = g_dbus_connection_new_for_address_sync(
        resolved, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
        NULL, NULL, error);
    g_free(resolved);
    if (bus) g_dbus_connection_set_exit_on_close(bus, FALSE);
    return bus;
}

static gboolean on_timeout(gpointer data) {
    *(gboolean *)data = TRUE;
    return G_SOURCE_REMOVE;
}

int strata_dbus_wait(GMainContext *context, gboolean *flag, int timeout_ms) {
    gboolean expired = FALSE;
    GSource *timer = g_timeout_source_new(timeout_ms > 0 ? (guint)timeout_ms : 0);
    g_source_set_callback(timer, on_timeout, &expired, NULL);
    g_source_attach(timer, context);
    while (!*flag && !expired) {
        g_main_context_iteration(context, TRUE);
    }
    g_source_destroy(timer);
    g_source_unref(timer);
    int changed = *flag ? 1 : 0;
    *flag = FALSE;
    return changed;
}

strata_dbus_failure strata_dbus_classify(const GError *error) {
    if (g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN)
        || g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER)) return STRATA_DBUS_ABSENT;
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)
        || g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY)
        || g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_TIMEOUT)) return STRATA_DBUS_TIMEOUT;
    return STRATA_DBUS_OTHER;
}
