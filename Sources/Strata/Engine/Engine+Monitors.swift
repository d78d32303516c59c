/// The monitors beside the data path: power (UPower) and memory pressure, each on its
/// own thread; the engine reads their latest values at every end of tick.
extension Engine {
    /// Takes the power state from `monitor` at every ``endTick()`` from now on
    /// (started here if it was not), and stops it at shutdown.
    public func attach(_ monitor: PowerMonitor) {
        owner.check("Engine")
        powerMonitor = monitor
        powerChangesSeen = -1
        monitor.startIfNeeded()
    }

    /// Flushes every tier (reason ``FlushReason/lowMemory``) when `monitor` reports
    /// memory pressure, checked at every ``endTick()``; stops it at shutdown.
    public func attach(_ monitor: MemoryPressureMonitor) {
        owner.check("Engine")
        memoryMonitor = monitor
        memoryWarningsSeen = monitor.warningCount
        monitor.startIfNeeded()
    }

    /// Where the current power state came from: the monitor's source, or the host's setting.
    public var powerReading: PowerReading {
        powerMonitor?.latest ?? PowerReading(source: .fallback, state: powerState)
    }

    /// Takes the latest power state and memory warnings (tick thread, every end of tick).
    func pollMonitors() {
        // The reading is copied (under the monitor's lock) only when it changed: most
        // ticks compare one number.
        if let powerMonitor, case let changes = powerMonitor.changeCount, changes != powerChangesSeen {
            let state = powerMonitor.latest.state
            if state != powerState {
                let before = (powerTier, derivedInterval)
                powerState = state
                if (powerTier, derivedInterval) != before {
                    logger.info("power: \(state) [\(powerTier.rawValue)]: derived interval now \(derivedInterval.seconds) s")
                }
            }
            powerChangesSeen = changes
        }
        if let syncClient { pollSync(syncClient) }
        if let memoryMonitor {
            let warnings = memoryMonitor.warningCount
            if warnings != memoryWarningsSeen {
                memoryWarningsSeen = warnings
                flush(reason: .lowMemory)
            }
        }
    }
}
