import Foundation
import Testing
@testable import Strata

/// The real libupower-glib, in a real `strata power` process, against mock daemons on a
/// private system bus: every scenario of the power source, including the broken ones.
@Suite(.serialized) struct PowerSourceTests {
    /// Runs `strata power --json` with `environment`, and decodes its report.
    func power(_ environment: [String: String], config: String? = nil) throws -> PowerReport {
        let directory = TestDirectory("power")
        var arguments = ["power", "--json"]
        if let config {
            let file = directory.url.appendingPathComponent("c.toml")
            try config.write(to: file, atomically: true, encoding: .utf8)
            arguments += ["--config", file.path]
        }
        let run = try ChildProcess.strata(arguments, environment: environment, in: directory.url)
        #expect(run.status == 0)
        let json = run.stdout
        return try PowerReport.decode(json: json)
    }

    @Test func dischargingAt15Percent() throws {
        let bus = try PrivateSystemBus()
        try bus.startUPower(onBattery: true)
        try bus.setDisplayDevice(battery: true, state: 2, percentage: 15, level: 3)
        let report = try power(bus.environment)
        #expect(report.source == "upower")
        #expect(report.batteryPresent && report.onBattery && !report.charging)
        #expect(report.percentage == 15)
        #expect(report.warningLevel == "low")
        #expect(report.powerTier == "low")
        #expect(report.derivedIntervalSecs == 60)
        #expect(report.criticalFlushDelayMs == 1000)
        #expect(report.checkpointIntervalSecs == 30)
    }

    @Test func dischargingAt80Percent() throws {
        let bus = try PrivateSystemBus()
        try bus.startUPower(onBattery: true)
        try bus.setDisplayDevice(battery: true, state: 2, percentage: 80, level: 1)
        let report = try power(bus.environment)
        #expect(report.powerTier == "high")
        #expect(report.derivedIntervalSecs == 10)
        #expect(report.idleDerivedIntervalSecs == 30)
        #expect(report.warningLevel == "none")
    }

    @Test func charging() throws {
        let bus = try PrivateSystemBus()
        try bus.startUPower(onBattery: false)
        try bus.setDisplayDevice(battery: true, state: 1, percentage: 42, level: 1)
        let report = try power(bus.environment)
        #expect(report.charging && !report.onBattery)
        #expect(report.powerTier == "charging")
        #expect(report.derivedIntervalSecs == 5)
    }

    @Test func acOnlyWithoutABattery() throws {
        let bus = try PrivateSystemBus()
        try bus.startUPower(onBattery: false)
        let report = try power(bus.environment)   // the template's display device: no battery
        #expect(report.source == "upower")
        #expect(!report.batteryPresent)
        #expect(report.percentage == nil)
        #expect(report.powerTier == "desktop")
        #expect(report.derivedIntervalSecs == 5)
        #expect(report.maxWalSizeMb == 10)
    }

    @Test func powerSaverProfile() throws {
        let bus = try PrivateSystemBus()
        try bus.startUPower(onBattery: true)
        try bus.setDisplayDevice(battery: true, state: 2, percentage: 80, level: 1)
        try bus.startMock(template: "power_profiles_daemon", name: "net.hadess.PowerProfiles",
                          parameters: ["ActiveProfile": "power-saver"])
        let report = try power(bus.environment)
        #expect(report.profile == "power-saver")
        #expect(report.powerSaver)
        #expect(report.powerTier == "power-saver")
        #expect(report.derivedIntervalSecs == 60)
    }

    @Test func aChangeWhileRunningIsSeenFromItsSignal() throws {
        let bus = try PrivateSystemBus()
        try bus.startUPower(onBattery: true)
        try bus.setDisplayDevice(battery: true, state: 2, percentage: 80, level: 1)
        // A poll interval far longer than the test: only the change signal can deliver it.
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: try strataExecutable())
        watcher.arguments = ["power", "--watch", "--json", "--poll-interval", "600"]
        watcher.environment = bus.environment
        let out = Pipe()
        watcher.standardOutput = out
        watcher.standardError = FileHandle.nullDevice
        let lines = LineCollector(out.fileHandleForReading)
        try watcher.run()
        defer {
            kill(watcher.processIdentifier, SIGTERM)
            watcher.waitUntilExit()
        }
        #expect(eventually { lines.reports.contains { $0.percentage == 80 && $0.powerTier == "high" } })

        try bus.setDisplayDevice(battery: true, state: 2, percentage: 15, level: 3)
        #expect(eventually { lines.reports.contains { $0.percentage == 15 && $0.powerTier == "low" } })

        try bus.setOnBattery(false)
        try bus.setDisplayDevice(battery: true, state: 1, percentage: 16, level: 1)
        #expect(eventually { lines.reports.contains { $0.charging && $0.powerTier == "charging" && $0.derivedIntervalSecs == 5 } })
    }

    @Test func noBusAtAll() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/system_bus_socket"
        let report = try power(environment)
        #expect(report.source == "error")
        #expect(report.sourceDetail.hasPrefix("no system bus"))
        #expect(report.powerTier == "desktop", "the default fallback is AC")
    }

    @Test func aBusWithoutUPower() throws {
        let bus = try PrivateSystemBus()
        let report = try power(bus.environment)
        #expect(report.source == "error")
        #expect(report.sourceDetail.hasPrefix("no UPower daemon"))
    }

    @Test func aHungUPowerIsReportedNotWaitedFor() throws {
        let bus = try PrivateSystemBus()
        try bus.startHungUPower()
        let report = try power(bus.environment, config: "[persistence.linux]\ndbus_timeout_ms = 200\npower_fallback = \"battery_low\"\n")
        #expect(report.source == "error")
        #expect(report.sourceDetail.hasPrefix("UPower is not answering"))
        #expect(report.powerTier == "low", "the configured fallback applies")
    }

    @Test func theFallbackSourceNeverTouchesDBus() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/system_bus_socket"
        let report = try power(environment, config: "[persistence.linux]\npower_source = \"fallback\"\npower_fallback = \"charging\"\n")
        #expect(report.source == "fallback")
        #expect(report.powerTier == "charging")
    }
}

/// Collects the JSON lines a child process writes, as they arrive.
final class LineCollector: @unchecked Sendable {
    // @unchecked Sendable: `buffer` and `decoded` are only touched under `lock`.
    private let lock = NSLock()
    private var buffer = Data()
    private var decoded: [PowerReport] = []

    init(_ handle: FileHandle) {
        handle.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            self?.append(data)
        }
    }

    private func append(_ data: Data) {
        lock.withLock {
            buffer.append(data)
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex ..< newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex ... newline)
                if let report = try? PowerReport.decode(json: line) { decoded.append(report) }
            }
        }
    }

    var reports: [PowerReport] { lock.withLock { decoded } }
}
