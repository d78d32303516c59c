// libupower-glib (UPower's client library) and GIO, for CStrataPower.
#include <upower.h>
#include <gio/gio.h>
