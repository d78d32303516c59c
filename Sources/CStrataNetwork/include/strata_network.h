// A probe of the machine's connectivity: NetworkManager's State and Connectivity over
// D-Bus, every call bounded by a timeout, and its change signals.
//
// Not thread-safe: one probe belongs to one thread (Strata's network monitor thread).
#ifndef STRATA_NETWORK_H
#define STRATA_NETWORK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    STRATA_NETWORK_OK = 0,             ///< NetworkManager answered.
    STRATA_NETWORK_NO_BUS = 1,         ///< No system bus to connect to.
    STRATA_NETWORK_NO_DAEMON = 2,      ///< A bus, but no NetworkManager on it.
    STRATA_NETWORK_NOT_ANSWERING = 3,  ///< NetworkManager owns its name but did not answer in time.
    STRATA_NETWORK_ERROR = 4,          ///< Anything else; see `message`.
} strata_network_status;

typedef struct {
    strata_network_status status;
    char message[256];
    uint32_t state;         ///< NMState: 20 disconnected … 70 connected (global).
    uint32_t connectivity;  ///< NMConnectivityState: 0 unknown, 1 none, 2 portal, 3 limited, 4 full.
} strata_network_reading;

typedef struct strata_network_probe strata_network_probe;

/// A probe whose every D-Bus call waits at most `timeout_ms`, on the system bus, or on
/// the bus at `bus_address` if it is not NULL (tests run a private one).
strata_network_probe *strata_network_probe_new(int timeout_ms, const char *bus_address);
void strata_network_probe_read(strata_network_probe *probe, strata_network_reading *reading);
/// Waits up to `timeout_ms` for a change signal. Returns 1 if one arrived, 0 on timeout.
int strata_network_probe_wait(strata_network_probe *probe, int timeout_ms);
void strata_network_probe_free(strata_network_probe *probe);

#ifdef __cplusplus
}
#endif

#endif
