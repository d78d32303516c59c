/// When a scheduled backup is due (`[backup]`): the power decides the interval, as it
/// decides maintenance. Writer thread.
extension BackupTask {
    /// How long after the last scheduled backup the next is due: `interval_secs` on mains,
    /// `battery_interval_secs` on battery (nil: never), and sooner after failures (a
    /// minute, doubling, never past the interval). Nil before the engine's first end of
    /// tick, when the power is not known yet.
    static func wait(config: BackupConfig, onMains: Bool?, failures: Int) -> Duration? {
        guard config.keep > 0, let onMains else { return nil }
        let interval = onMains ? config.interval : config.batteryInterval
        guard interval > .zero else { return nil }
        guard failures > 0 else { return interval }
        return min(interval, .seconds(60) * (1 << min(failures - 1, 20)))
    }

    func scheduledDue() -> Bool {
        guard folder != nil, context.metrics.snapshot.commitCount > commitsAtLastScheduled,
              let wait = Self.wait(config: config, onMains: context.conditions.current?.onMains, failures: requests.failedInARow)
        else { return false }
        guard let lastScheduled else { return true }
        return context.settings.wallClock() - lastScheduled >= Int64(wait.milliseconds)
    }

    /// A request for the scheduled backup due now, if one is.
    func scheduledRequest() -> BackupRequest? {
        guard scheduledDue(), let folder else { return nil }
        let now = context.settings.wallClock()
        lastScheduled = now
        commitsAtLastScheduled = context.metrics.snapshot.commitCount
        do {
            let target = try BackupTarget(source: context.store.location, destination: folder.name(at: now))
            return BackupRequest(target: target, scheduled: true) { [requests] result in
                // Called on the finishing thread: the count is read by the writer thread.
                requests.noteScheduled(succeeded: (try? result.get()) != nil)
            }
        } catch {
            requests.noteScheduled(succeeded: false)
            context.logger.warning("backup: the scheduled backup cannot start (\(error)); tried again later")
            return nil
        }
    }
}
