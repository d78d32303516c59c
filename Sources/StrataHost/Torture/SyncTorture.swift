import Foundation
import Strata
import StrataCanvas

/// `strata torture --mode sync`: replication checked from outside. Each run, 3–5 devices
/// (`strata sim --sync` processes, each in a network namespace of its own, see
/// ``SyncTortureNetwork``) edit one shared canvas through a private PostgreSQL server
/// (``SyncTortureServer``) while the checker, on a seeded schedule, cuts devices off and
/// heals them (some, or all: the server unreachable to them only), kills them (SIGKILL),
/// cuts their power (the fault VFS drops every unsynced write), stops the server hard,
/// moves devices' clocks (`--clock-offset`: a minute or an hour ahead, ten minutes back), and
/// lets a device join late, against the document's history. Then everything heals, every
/// device settles (sessions that only sync, with every clock past the furthest stamp, so
/// nothing is held as too far ahead), and ``SyncTortureCheck`` decides. Every run is
/// replayable from its seed (`--seed`, with `--cycles 1`).
///
/// With `--sync-service PATH` the devices sync through a `strata-server` in front of that
/// PostgreSQL instead (``SyncTortureService``: HTTPS, a subject and a token per device),
/// which the checker also kills and starts again; the check then also holds every
/// operation to have been pushed by its own device's subject.
struct SyncTorture {
    let setup: TortureSetup
    let runs: Int
    /// Seconds of faults per run.
    let faultSeconds: Double
    /// Before each check, one replicated operation is deleted from the server (as a server
    /// that lost a write it had acknowledged): the check must then fail. Proves it can.
    var sabotage = false
    /// `--sync-service`: the `strata-server` the devices sync through (nil: straight to PostgreSQL).
    var service: String?

    enum Fault: String, CaseIterable {
        case partition, isolateSome = "partition_some", kill, powerCut = "power_cut", serverStop = "server_stop", clockJump = "clock_jump"
        case serviceKill = "service_kill"
    }

    func run(progress: (Int, TortureResult) -> Void) throws -> TortureResult {
        var result = TortureResult(mode: "sync", seed: setup.seed)
        let started = MonotonicClock().now()
        let strata = try strataExecutable()
        let network = try SyncTortureNetwork(devices: 5)
        defer { withExtendedLifetime(network) { network.teardown() } }
        let server = try SyncTortureServer(folder: setup.directory.appendingPathComponent("server"), port: SyncTortureServer.freePort())
        defer { server.stop() }
        let service = try self.service.map {
            try SyncTortureService(binary: $0, folder: setup.directory.appendingPathComponent("service"), database: server.localURL,
                                   devices: network.devices)
        }
        defer { service?.stop() }
        let config = setup.directory.appendingPathComponent("device.toml").path
        try Self.deviceConfig.write(toFile: config, atomically: true, encoding: .utf8)
        for run in 1 ... runs {
            // Run k's seed is the command's plus k - 1: `--seed SEED --cycles 1` replays it.
            let seed = setup.seed &+ UInt64(run - 1)
            let folder = setup.directory.appendingPathComponent("run-\(run)")
            var outcome = ContractCheck.Outcome()
            do {
                let figures = try runOnce(seed: seed, folder: folder, strata: strata, config: config, network: network, server: server,
                                          service: service, result: &result, outcome: &outcome)
                result.details["operations", default: 0] += figures.operations
                result.details["values", default: 0] += figures.values
                result.details["overwrites", default: 0] += figures.overwrites
                result.details["overwrites_under_250ms", default: 0] += figures.overwritesUnder250ms
                result.details["acknowledged_checked", default: 0] += figures.acknowledgedChecked
                result.details["logged_within_the_delay_of_a_fault", default: 0] += figures.withinDelay
            } catch {
                outcome.fail(.notSettled, "run \(run) (replay: --seed \(seed) --cycles 1): \(error)")
            }
            result.cycles = run
            if result.absorb(outcome, cycle: run) {
                let kept = setup.directory.appendingPathComponent("failed-run-\(run)-seed-\(seed)")
                try? FileManager.default.removeItem(at: kept)
                try? FileManager.default.moveItem(at: folder, to: kept)
                result.keptFiles.append(kept.path)
            } else {
                try? FileManager.default.removeItem(at: folder)
            }
            progress(run, result)
        }
        result.seconds = MonotonicClock().now().duration(since: started).seconds
        return result
    }

    /// The devices' config: no NetworkManager (the namespaces are their network), short
    /// timeouts (a partition is found out within a second or two), a small, quick canvas.
    static let deviceConfig = """
        [simulation]
        tick_hz = 30

        [sync]
        network_source = "none"
        request_timeout_ms = 1500
        pull_interval_ms = 250
        max_clock_ahead_secs = 300
        """

    private func runOnce(seed: UInt64, folder: URL, strata: String, config: String, network: SyncTortureNetwork,
                         server: SyncTortureServer, service: SyncTortureService?, result: inout TortureResult,
                         outcome: inout ContractCheck.Outcome) throws -> SyncTortureCheck.Figures {
        try? FileManager.default.removeItem(at: folder)
        var rng = SplitMix64(seed: seed)
        let count = 3 + Int(rng.next() % 3)
        let document = "run-\(seed)"
        let devices = try (1 ... count).map { try SyncTortureDevice(index: $0, folder: folder.appendingPathComponent("device\($0)")) }
        let late = rng.next() % 2 == 0 ? Int(rng.next() % UInt64(count)) : nil
        let lateStart = Duration.milliseconds(Int64(1_000 + rng.next() % 2_000))
        for device in devices where service != nil {
            try service?.admit(Self.subject(device), to: document, tokenFile: device.tokenPath)
            device.trustBundle = service?.trustBundle
        }
        // Where a device syncs: the service (with its token) or PostgreSQL.
        func sync(_ device: SyncTortureDevice) -> [String] {
            guard let service else { return ["--sync", server.url(forDevice: device.index), "--sync-document", document] }
            return ["--sync", service.url(forDevice: device.index), "--token-file", device.tokenPath, "--sync-document", document]
        }
        func editing(_ device: SyncTortureDevice, _ rng: inout SplitMix64) -> [String] {
            sync(device) + ["--entities", "15",
             "--seed", "\(rng.next() % 1_000_000)", "--activity", "\(2 + rng.next() % 5)", "--sync-settle", "0"]
        }
        for (i, device) in devices.enumerated() where i != late {
            try device.start(strata: strata, config: config, arguments: editing(device, &rng))
        }

        // The faults, on a schedule; each heals on a schedule too.
        let clock = MonotonicClock()
        let start = clock.now()
        let end = start + .nanoseconds(Int64(faultSeconds * 1e9))
        var pending: [(at: Instant, action: () throws -> Void)] = []
        var serverDown = false
        var serviceDown = false
        // The direct run's faults keep their order (and so every seed its schedule).
        let faults = Fault.allCases.filter { service != nil || $0 != .serviceKill }
        var lateStarted = late == nil
        var next = start + .milliseconds(Int64(300 + rng.next() % 700))
        while clock.now() < end {
            let now = clock.now()
            if !lateStarted, let late, now >= start + lateStart {
                try devices[late].start(strata: strata, config: config, arguments: editing(devices[late], &rng))
                lateStarted = true
                result.details["late_joins", default: 0] += 1
            }
            let due = pending.filter { $0.at <= now }
            pending.removeAll { $0.at <= now }
            for item in due { try item.action() }
            if now >= next {
                next = now + .milliseconds(Int64(300 + rng.next() % 900))
                let fault = faults[Int(rng.next() % UInt64(faults.count))]
                let heal = now + .milliseconds(Int64(400 + rng.next() % 1_600))
                let running = devices.filter(\.isRunning)
                switch fault {
                case .partition, .isolateSome:
                    let cut = fault == .partition ? [devices[Int(rng.next() % UInt64(count))]]
                        : devices.filter { _ in rng.next() % 2 == 0 }
                    for device in cut { try network.set(device.index, connected: false) }
                    pending.append((heal, { for device in cut { try network.set(device.index, connected: true) } }))
                case .kill, .powerCut, .clockJump:
                    guard !running.isEmpty else { continue }
                    let device = running[Int(rng.next() % UInt64(running.count))]
                    switch fault {
                    case .kill: device.kill()
                    case .powerCut: device.cutPower()
                    default:
                        device.stop()
                        device.clockOffset = [60, 3_600, -600, 0][Int(rng.next() % 4)]
                    }
                    let arguments = editing(device, &rng)
                    pending.append((heal, { try device.start(strata: strata, config: config, arguments: arguments) }))
                case .serverStop:
                    guard !serverDown else { continue }
                    try server.stopHard()
                    serverDown = true
                    pending.append((heal, { try server.start(); serverDown = false }))
                case .serviceKill:
                    guard let service, !serviceDown else { continue }
                    service.kill()
                    serviceDown = true
                    pending.append((heal, { try service.start(); serviceDown = false }))
                }
                result.faults += 1
                result.details["fault_\(fault.rawValue)", default: 0] += 1
            }
            usleep(20_000)
        }

        // Heal: everything that was to come back comes back; the editing sessions stop.
        for item in pending { try item.action() }
        if serverDown { try server.start() }
        if let service {
            if serviceDown || !service.isRunning { try service.start() }
            try service.waitUntilListening()
        }
        for device in devices { try network.set(device.index, connected: true) }
        if !lateStarted, let late { try devices[late].start(strata: strata, config: config, arguments: editing(devices[late], &rng)) }
        for device in devices { device.stop() }

        // Settle: sessions that only sync, every clock past the furthest stamp, until every
        // device holds what the server holds and the server stops growing.
        let furthest = devices.flatMap(\.offsetsUsed).max() ?? 0
        var settled = false
        var last = -1
        for round in 1 ... 6 {
            for device in devices {
                device.clockOffset = furthest + 5
                try device.start(strata: strata, config: config, arguments: sync(device) + [
                    "--entities", "0",
                    "--duration", "0.05", "--sync-settle", round == 1 ? "3" : "2", "--activity", "0.001"])
            }
            for device in devices { device.waitForExit(seconds: 60) }
            let keys = try SyncTortureCheck.serverKeys(server, document: document)
            if keys.count == last, devices.allSatisfy({ SyncTortureCheck.holdsExactly($0, keys) }) {
                settled = true
                result.details["settle_rounds", default: 0] += round
                break
            }
            last = keys.count
        }
        if !settled { outcome.fail(.notSettled, "the devices did not settle in 6 rounds (replay: --seed \(seed) --cycles 1)") }
        if sabotage {
            _ = try server.query("""
                DELETE FROM strata_operations WHERE position = (SELECT max(position) FROM strata_operations
                WHERE document = '\(document)' AND kind = 'strata.component')
                """)
            // Through the service, an operation recorded as another subject's.
            if service != nil {
                _ = try server.query("""
                    UPDATE strata_operations SET pushed_by = 'mallory' WHERE position = (SELECT min(position)
                    FROM strata_operations WHERE document = '\(document)')
                    """)
            }
        }
        let check = SyncTortureCheck(server: server, document: document, devices: devices, strata: strata,
                                     criticalDelay: StrataConfig().persistence.criticalFlushDelay)   // the devices' (device.toml leaves it)
        if service != nil { try checkPushers(server: server, document: document, devices: devices, into: &outcome) }
        result.details["devices", default: 0] += count
        result.details["power_cuts_before_set_up", default: 0] += devices.reduce(0) { $0 + $1.powerCutsBeforeSetUp }
        result.details["stops_before_set_up", default: 0] += devices.reduce(0) { $0 + $1.stopsBeforeSetUp }
        return try check.run(into: &outcome)
    }

    /// The subject a device syncs as through the service.
    static func subject(_ device: SyncTortureDevice) -> String { "device-\(device.index)" }

    /// Through the service, each node's operations were all pushed by one subject, its
    /// device's: none by another subject, none without one.
    private func checkPushers(server: SyncTortureServer, document: String, devices: [SyncTortureDevice],
                              into outcome: inout ContractCheck.Outcome) throws {
        outcome.checks += 1
        let rows = try server.query("""
            SELECT node, coalesce(string_agg(DISTINCT pushed_by, ','), ''), count(*) FILTER (WHERE pushed_by IS NULL)
            FROM strata_operations WHERE document = '\(document)' GROUP BY node
            """)
        let subjects = Set(devices.map(Self.subject))
        for fields in rows {
            guard fields.count == 3 else { outcome.fail(.wrongPusher, "a server row does not read: \(fields)"); continue }
            let pushers = fields[1].split(separator: ",").map(String.init)
            if fields[2] != "0" || pushers.count != 1 || !subjects.contains(pushers[0]) {
                outcome.fail(.wrongPusher, "node \(fields[0]): pushed by [\(fields[1])], \(fields[2]) without a subject")
            }
        }
    }

    private func strataExecutable() throws -> String {
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        return me
    }
}
