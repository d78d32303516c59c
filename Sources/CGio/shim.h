// GIO's D-Bus client (Debian: libglib2.0-dev), for the network probe.
#include <gio/gio.h>
