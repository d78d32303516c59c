// A probe of the machine's power state: UPower through libupower-glib, and the active
// profile of power-profiles-daemon, every D-Bus call bounded by a timeout.
//
// Not thread-safe: one probe belongs to one thread (Strata's power monitor thread).
#ifndef STRATA_POWER_H
#define STRATA_POWER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What answered.
typedef enum {
    STRATA_POWER_OK = 0,            ///< UPower answered.
    STRATA_POWER_NO_BUS = 1,        ///< No system bus to connect to.
    STRATA_POWER_NO_UPOWER = 2,     ///< A bus, but no UPower daemon on it.
    STRATA_POWER_NOT_ANSWERING = 3, ///< UPower owns its name but did not answer in time.
    STRATA_POWER_ERROR = 4,         ///< Anything else; see `message`.
} strata_power_status;

typedef struct {
    strata_power_status status;
    char message[256];          ///< Why, when status is not OK.
    char daemon_version[32];
    int on_battery;             ///< UPower's OnBattery.
    int battery_present;        ///< The display device is a present battery.
    int state;                  ///< UpDeviceState of the display device.
    double percentage;          ///< 0…100.
    int warning_level;          ///< UpDeviceLevel of the display device.
    int profile_found;          ///< A power-profiles daemon answered.
    char profile[32];           ///< Its ActiveProfile ("power-saver", "balanced", "performance").
} strata_power_reading;

typedef struct strata_power_probe strata_power_probe;

/// A probe whose every D-Bus call waits at most `timeout_ms`.
strata_power_probe *strata_power_probe_new(int timeout_ms);

/// Reads the power state now. Never waits longer than a few timeouts.
void strata_power_probe_read(strata_power_probe *probe, strata_power_reading *reading);

/// Waits up to `timeout_ms` for a change signal (battery, AC, profile).
/// Returns 1 if one arrived, 0 on timeout.
int strata_power_probe_wait(strata_power_probe *probe, int timeout_ms);

void strata_power_probe_free(strata_power_probe *probe);

#ifdef __cplusplus
}
#endif

#endif
