// See strata_network.h. Built like the power probe (strata_power.c): a private system bus
// connection (dropped and remade when the bus goes away, never exiting the process), an
// own main context for the signals, every call bounded.
#include "strata_network.h"
#include "strata_dbus.h"

#include <string.h>
#include <gio/gio.h>

#define NM_NAME "org.freedesktop.NetworkManager"
#define NM_PATH "/org/freedesktop/NetworkManager"

struct strata_network_probe {
    int timeout_ms;
    gchar *bus_address;
    GMainContext *context;
    GDBusConnection *bus;
    guint state_subscription;
    guint properties_subscription;
    gboolean changed;
};

static void set_message(strata_network_reading *r, strata_network_status status, const char *message) {
    r->status = status;
    g_strlcpy(r->message, message ? message : "", sizeof r->message);
}

static void on_signal(GDBusConnection *c, const gchar *sender, const gchar *path, const gchar *iface,
                      const gchar *signal, GVariant *parameters, gpointer data) {
    (void)c; (void)sender; (void)path; (void)iface; (void)signal; (void)parameters;
    ((strata_network_probe *)data)->changed = TRUE;
}

strata_network_probe *strata_network_probe_new(int timeout_ms, const char *bus_address) {
    strata_network_probe *probe = g_new0(strata_network_probe, 1);
    probe->bus_address = g_strdup(bus_address);
    probe->timeout_ms = timeout_ms > 0 ? timeout_ms : 500;
    probe->context = g_main_context_new();
    return probe;
}

static void drop_bus(strata_network_probe *probe) {
    if (probe->bus) {
        if (probe->state_subscription) g_dbus_connection_signal_unsubscribe(probe->bus, probe->state_subscription);
        if (probe->properties_subscription) g_dbus_connection_signal_unsubscribe(probe->bus, probe->properties_subscription);
    }
    probe->state_subscription = probe->properties_subscription = 0;
    g_clear_object(&probe->bus);
}

void strata_network_probe_free(strata_network_probe *probe) {
    if (!probe) return;
    drop_bus(probe);
    while (g_main_context_iteration(probe->context, FALSE)) {}
    g_main_context_unref(probe->context);
    g_free(probe->bus_address);
    g_free(probe);
}

static gboolean ensure_bus(strata_network_probe *probe, strata_network_reading *reading) {
    if (probe->bus && !g_dbus_connection_is_closed(probe->bus)) return TRUE;
    drop_bus(probe);
    GError *error = NULL;
    probe->bus = strata_dbus_connect(probe->bus_address, &error);
    if (!probe->bus) {
        set_message(reading, STRATA_NETWORK_NO_BUS, error ? error->message : "no system bus");
        g_clear_error(&error);
        return FALSE;
    }
    g_main_context_push_thread_default(probe->context);
    probe->state_subscription = g_dbus_connection_signal_subscribe(
        probe->bus, NULL, NM_NAME, "StateChanged", NM_PATH, NULL, G_DBUS_SIGNAL_FLAGS_NONE, on_signal, probe, NULL);
    probe->properties_subscription = g_dbus_connection_signal_subscribe(
        probe->bus, NULL, "org.freedesktop.DBus.Properties", "PropertiesChanged", NM_PATH, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_signal, probe, NULL);
    g_main_context_pop_thread_default(probe->context);
    return TRUE;
}

// Reads one uint32 property of the manager; FALSE with `reading` set on failure.
static gboolean get_u32(strata_network_probe *probe, const char *name, uint32_t *out, strata_network_reading *reading) {
    GError *error = NULL;
    GVariant *reply = g_dbus_connection_call_sync(probe->bus, NM_NAME, NM_PATH, "org.freedesktop.DBus.Properties", "Get",
                                                  g_variant_new("(ss)", NM_NAME, name), G_VARIANT_TYPE("(v)"),
                                                  G_DBUS_CALL_FLAGS_NO_AUTO_START, probe->timeout_ms, NULL, &error);
    if (!reply) {
        strata_dbus_failure failure = strata_dbus_classify(error);
        set_message(reading, failure == STRATA_DBUS_ABSENT ? STRATA_NETWORK_NO_DAEMON
                            : failure == STRATA_DBUS_TIMEOUT ? STRATA_NETWORK_NOT_ANSWERING : STRATA_NETWORK_ERROR,
                    error ? error->message : "Get failed");
        g_clear_error(&error);
        if (g_dbus_connection_is_closed(probe->bus)) drop_bus(probe);
        return FALSE;
    }
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    gboolean ok = value && (g_variant_is_of_type(value, G_VARIANT_TYPE_UINT32) || g_variant_is_of_type(value, G_VARIANT_TYPE_INT32));
    if (ok) *out = g_variant_is_of_type(value, G_VARIANT_TYPE_UINT32) ? g_variant_get_uint32(value) : (uint32_t)g_variant_get_int32(value);
    else set_message(reading, STRATA_NETWORK_ERROR, "NetworkManager's property is not a uint32");
    if (value) g_variant_unref(value);
    g_variant_unref(reply);
    return ok;
}

void strata_network_probe_read(strata_network_probe *probe, strata_network_reading *reading) {
    memset(reading, 0, sizeof *reading);
    if (!ensure_bus(probe, reading)) return;
    if (!get_u32(probe, "State", &reading->state, reading)) return;
    if (!get_u32(probe, "Connectivity", &reading->connectivity, reading)) return;
    reading->status = STRATA_NETWORK_OK;
    while (g_main_context_iteration(probe->context, FALSE)) {}
    probe->changed = FALSE;
}

int strata_network_probe_wait(strata_network_probe *probe, int timeout_ms) {
    return strata_dbus_wait(probe->context, &probe->changed, timeout_ms);
}
