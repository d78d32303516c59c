// See strata_power.h. Facts this code is built on (found on Debian 12, upower 0.99.20):
// - up_client_new_full() returns NULL with a GError when there is no bus (up_client_new()
//   emits a g_warning instead, fatal under G_DEBUG=fatal-warnings).
// - With a bus but no daemon, up_client_new_full() succeeds and the daemon version is NULL.
// - A daemon that owns the name but never answers makes each sync call wait 25 s: every
//   read starts with a Peer.Ping bounded by the probe's timeout, and the profile is read
//   with a bounded call; libupower-glib is only used once UPower has answered.
// - Cached properties of a held proxy go stale without a GLib main context: the probe
//   owns a context, iterates it, and fetches the display device again on every read.
#include "strata_power.h"
#include "strata_dbus.h"

#include <string.h>
#include <upower.h>
#include <gio/gio.h>

struct strata_power_probe {
    int timeout_ms;
    GMainContext *context;     // signals of the client, the device and the profiles
    GDBusConnection *bus;      // the system bus (exit-on-close off)
    UpClient *client;
    UpDevice *display;         // held between reads for its change signals
    guint profile_subscription;
    gboolean changed;
};

static void set_message(strata_power_reading *r, strata_power_status status, const char *message) {
    r->status = status;
    g_strlcpy(r->message, message ? message : "", sizeof r->message);
}

static void on_change(GObject *object, GParamSpec *spec, gpointer data) {
    (void)object; (void)spec;
    ((strata_power_probe *)data)->changed = TRUE;
}

static void on_profile_signal(GDBusConnection *c, const gchar *sender, const gchar *path, const gchar *iface,
                              const gchar *signal, GVariant *parameters, gpointer data) {
    (void)c; (void)sender; (void)path; (void)iface; (void)signal; (void)parameters;
    ((strata_power_probe *)data)->changed = TRUE;
}

strata_power_probe *strata_power_probe_new(int timeout_ms) {
    strata_power_probe *probe = g_new0(strata_power_probe, 1);
    probe->timeout_ms = timeout_ms > 0 ? timeout_ms : 500;
    probe->context = g_main_context_new();
    return probe;
}

static void drop_client(strata_power_probe *probe) {
    g_clear_object(&probe->display);
    g_clear_object(&probe->client);
}

static void drop_bus(strata_power_probe *probe) {
    drop_client(probe);
    if (probe->bus && probe->profile_subscription) {
        g_dbus_connection_signal_unsubscribe(probe->bus, probe->profile_subscription);
    }
    probe->profile_subscription = 0;
    g_clear_object(&probe->bus);
}

void strata_power_probe_free(strata_power_probe *probe) {
    if (!probe) return;
    drop_bus(probe);
    while (g_main_context_iteration(probe->context, FALSE)) {}
    g_main_context_unref(probe->context);
    g_free(probe);
}

// Connects to the system bus, subscribing to profile changes. Returns FALSE with `reading` set.
static gboolean ensure_bus(strata_power_probe *probe, strata_power_reading *reading) {
    if (probe->bus && !g_dbus_connection_is_closed(probe->bus)) return TRUE;
    drop_bus(probe);
    GError *error = NULL;
    probe->bus = strata_dbus_connect(NULL, &error);
    if (!probe->bus) {
        set_message(reading, STRATA_POWER_NO_BUS, error ? error->message : "no system bus");
        g_clear_error(&error);
        return FALSE;
    }
    g_main_context_push_thread_default(probe->context);
    probe->profile_subscription = g_dbus_connection_signal_subscribe(
        probe->bus, NULL, "org.freedesktop.DBus.Properties", "PropertiesChanged", NULL, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_profile_signal, probe, NULL);
    g_main_context_pop_thread_default(probe->context);
    return TRUE;
}

// A bounded call; returns the reply or NULL with `error` set.
static GVariant *call(strata_power_probe *probe, const char *name, const char *path, const char *iface,
                      const char *method, GVariant *args, const GVariantType *reply, GError **error) {
    return g_dbus_connection_call_sync(probe->bus, name, path, iface, method, args, reply,
                                       G_DBUS_CALL_FLAGS_NO_AUTO_START, probe->timeout_ms, NULL, error);
}

static void read_profile(strata_power_probe *probe, strata_power_reading *reading) {
    static const char *const daemons[][2] = {
        {"org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles"},
        {"net.hadess.PowerProfiles", "/net/hadess/PowerProfiles"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(daemons); i++) {
        GError *error = NULL;
        GVariant *reply = call(probe, daemons[i][0], daemons[i][1], "org.freedesktop.DBus.Properties", "Get",
                               g_variant_new("(ss)", daemons[i][0], "ActiveProfile"), G_VARIANT_TYPE("(v)"), &error);
        g_clear_error(&error);
        if (!reply) continue;
        GVariant *value = NULL;
        g_variant_get(reply, "(v)", &value);
        if (value && g_variant_is_of_type(value, G_VARIANT_TYPE_STRING)) {
            reading->profile_found = 1;
            g_strlcpy(reading->profile, g_variant_get_string(value, NULL), sizeof reading->profile);
        }
        if (value) g_variant_unref(value);
        g_variant_unref(reply);
        if (reading->profile_found) return;
    }
}

void strata_power_probe_read(strata_power_probe *probe, strata_power_reading *reading) {
    memset(reading, 0, sizeof *reading);
    if (!ensure_bus(probe, reading)) return;
    read_profile(probe, reading);

    // Is UPower there, and answering? (Bounded: libupower-glib's own calls are not.)
    GError *error = NULL;
    GVariant *pong = call(probe, "org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.DBus.Peer",
                          "Ping", NULL, NULL, &error);
    if (!pong) {
        strata_dbus_failure failure = strata_dbus_classify(error);
        set_message(reading, failure == STRATA_DBUS_ABSENT ? STRATA_POWER_NO_UPOWER
                            : failure == STRATA_DBUS_TIMEOUT ? STRATA_POWER_NOT_ANSWERING : STRATA_POWER_ERROR,
                    error ? error->message : "ping failed");
        g_clear_error(&error);
        drop_client(probe);
        if (g_dbus_connection_is_closed(probe->bus)) drop_bus(probe);
        return;
    }
    g_variant_unref(pong);

    g_main_context_push_thread_default(probe->context);
    if (!probe->client) {
        probe->client = up_client_new_full(NULL, &error);
        if (probe->client) g_signal_connect(probe->client, "notify", G_CALLBACK(on_change), probe);
    }
    if (!probe->client) {
        set_message(reading, STRATA_POWER_ERROR, error ? error->message : "up_client_new_full failed");
        g_clear_error(&error);
        g_main_context_pop_thread_default(probe->context);
        return;
    }
    // Deliver pending property changes to the client's cache.
    while (g_main_context_iteration(probe->context, FALSE)) {}
    const char *version = up_client_get_daemon_version(probe->client);
    if (!version) {
        set_message(reading, STRATA_POWER_NO_UPOWER, "no UPower daemon on the system bus");
        drop_client(probe);
        g_main_context_pop_thread_default(probe->context);
        return;
    }
    g_strlcpy(reading->daemon_version, version, sizeof reading->daemon_version);
    reading->on_battery = up_client_get_on_battery(probe->client) ? 1 : 0;

    // A fresh display device each read: a held one's cache may lag.
    UpDevice *display = up_client_get_display_device(probe->client);
    g_main_context_pop_thread_default(probe->context);
    if (display) {
        guint kind = 0, state = 0, level = 0;
        gboolean present = FALSE;
        gdouble percentage = 0;
        g_object_get(display, "kind", &kind, "state", &state, "percentage", &percentage,
                     "is-present", &present, "warning-level", &level, NULL);
        reading->battery_present = (kind == UP_DEVICE_KIND_BATTERY && present) ? 1 : 0;
        reading->state = (int)state;
        reading->percentage = percentage;
        reading->warning_level = (int)level;
        g_signal_connect(display, "notify", G_CALLBACK(on_change), probe);
        g_clear_object(&probe->display);
        probe->display = display;
    }
    reading->status = STRATA_POWER_OK;
    probe->changed = FALSE;
}

int strata_power_probe_wait(strata_power_probe *probe, int timeout_ms) {
    return strata_dbus_wait(probe->context, &probe->changed, timeout_ms);
}
