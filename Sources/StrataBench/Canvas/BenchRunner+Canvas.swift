import Foundation
import Strata
import StrataCanvas

/// The canvas as a benchmark workload (`strata bench --workload canvas`): every kind of
/// data the engine keeps (components of both tiers, entity rows, the operation log and
/// its vector clock, jobs and their files, a second device's operations), measured like
/// components are, at several canvas sizes, beside snapshots of the same canvas.
extension BenchRunner {
    /// What the canvas sweep runs at every size: Strata, and the canvas's components
    /// encoded whole every second and every 5 s, watching the same world.
    package static let canvasStrategies = ["snapshot-1s", "snapshot-5s", "strata"]

    /// Extra Strata runs at the smallest size: every edit 18× as often (about 100
    /// operations a second), and on battery (derived every 10 s, a 5 MB WAL limit).
    static let canvasExtras: [(name: String, power: PowerState?, activity: Double)] = [
        ("strata-busy", nil, 18), ("strata-battery", .discharging(75), 1),
    ]

    /// Runs the canvas at every size in `sizes` (its shapes), each in a fresh folder that
    /// is removed afterwards. Strata ticks the canvas; the snapshots in `options.strategies`
    /// watch its world in the same loop, so every strategy saves the same changes.
    package static func canvasSweep(_ options: BenchOptions, sizes: [Int], directory: URL, command: String,
                                   progress: (String) -> Void = { _ in }) throws -> SweepResults {
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 1 }) else { throw BenchError("--sweep-entities needs sizes of at least 1") }
        var snapshotEvery: [Duration] = []
        for name in options.strategies where name != "strata" {
            guard name.hasPrefix("snapshot-"), name.hasSuffix("s"), let k = Double(name.dropFirst(9).dropLast()), k > 0 else {
                throw BenchError("the canvas runs strata and snapshot-<K>s strategies, not \"\(name)\"")
            }
            snapshotEvery.append(.nanoseconds(Int64(k * 1e9)))
        }
        var points: [SweepPoint] = []
        for (i, shapes) in sizes.enumerated() {
            let (pageSize, autoVacuum) = (options.strataPageSize, options.strataAutoVacuum.flatMap(AutoVacuum.init(rawValue:)))
            var runs = [CanvasStrataRun(name: "strata", power: nil, pageSize: pageSize, autoVacuum: autoVacuum)]
            if i == 0 && options.canvasExtras {
                runs += canvasExtras.map { CanvasStrataRun(name: $0.name, power: $0.power, activity: $0.activity, pageSize: pageSize, autoVacuum: autoVacuum) }
            }
            var results: [StrategyResult] = []
            for (r, run) in runs.enumerated() {
                let folder = directory.appendingPathComponent("canvas-\(shapes)-\(run.name)")
                try? FileManager.default.removeItem(at: folder)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                // The snapshots watch the default run only.
                let snapshots = r == 0 ? snapshotEvery.map { CanvasSnapshot(every: $0, directory: folder, types: canvasComponents) } : []
                progress("canvas of \(shapes) shapes: \(([run.name] + snapshots.map(\.name)).joined(separator: " with ")), \(options.seconds) s…")
                for result in try runCanvas(run, snapshots: snapshots, shapes: shapes, options: options, folder: folder) {
                    let host = result.bytesPerHostByte.map { perHostByte in
                        String(format: "%.2f bytes per byte of the host's data (%.2f per payload byte counting the engine's stamps, %.0f %% of it, and what the peer sent)",
                               perHostByte, result.bytesPerPayloadByte,
                               100 * Double(result.stampPayloadBytes ?? 0) / Double(max(1, result.persistedPayloadBytes)))
                    } ?? String(format: "%.2f bytes per payload byte", result.bytesPerPayloadByte)
                    progress(String(format: "  %@: setup %.1f s; %.1f Hz, %.0f bytes/s, %.2f syncs/s, %@",
                                    result.name as NSString, result.setupSeconds, result.tickRateHz, result.bytesWrittenPerSec,
                                    result.syncRequestsPerSec, host as NSString))
                    results.append(result)
                }
            }
            let order = options.strategies + canvasExtras.map(\.name)
            results.sort { (order.firstIndex(of: $0.name) ?? 0) < (order.firstIndex(of: $1.name) ?? 0) }
            points.append(SweepPoint(entities: shapes, moving: 0, results: results))
        }
        return SweepResults(options: options, command: command, date: ISO8601DateFormatter().string(from: Date()),
                            machine: machineDescription(), points: points, workload: "canvas")
    }

    /// One canvas run: Strata ticks the canvas in real time; each snapshot, every tick,
    /// saves the world whole if its interval has passed (timed apart).
    static func runCanvas(_ run: CanvasStrataRun, snapshots: [CanvasSnapshot], shapes: Int, options: BenchOptions,
                          folder: URL) throws -> [StrategyResult] {
        let clock = MonotonicClock()
        let setupStart = clock.now()
        try run.prepare(shapes: shapes, directory: folder, hz: options.hz)
        let setupSeconds = clock.now().duration(since: setupStart).seconds
        guard let vfs = run.vfs, let world = run.engine?.world else { throw BenchError("the canvas did not open") }
        run.watchers = snapshots.map(\.log)
        let vfsBefore = vfs.counts
        let plannedTicks = Int(options.seconds * Double(options.hz))
        var strataTimes: [Duration] = [], strataCPU: Duration = .zero
        var snapshotTimes = [[Duration]](repeating: [], count: snapshots.count)
        var snapshotCPU = [Duration](repeating: .zero, count: snapshots.count)
        strataTimes.reserveCapacity(plannedTicks)
        for i in snapshots.indices { snapshotTimes[i].reserveCapacity(plannedTicks) }
        let pacer = RealTimePacer(hz: options.hz, seconds: options.seconds)
        let start = pacer.start
        var ticks = 0
        while ticks < plannedTicks, pacer.wait(forTick: ticks) {
            let cpuStart = threadCPUTime()
            let tickStart = clock.now()
            run.tick(at: tickStart)
            strataTimes.append(clock.now().duration(since: tickStart))
            strataCPU += threadCPUTime() - cpuStart
            for (i, snapshot) in snapshots.enumerated() {
                let cpu = threadCPUTime()
                let t = clock.now()
                snapshot.tick(world, now: tickStart)
                snapshotTimes[i].append(clock.now().duration(since: t))
                snapshotCPU[i] += threadCPUTime() - cpu
            }
            if ticks % 6 == 0 { run.sample() }
            ticks += 1
        }
        let end = clock.now()
        for snapshot in snapshots { snapshot.finish() }
        run.finish()
        let simulated = Double(ticks) / Double(options.hz)
        let wall = end.duration(since: start).seconds


        // Strata, from its counting VFS and its metrics.
        guard let (startMetrics, endMetrics) = run.run else { throw BenchError("the canvas run did not finish") }
        let counts = vfs.counts.since(vfsBefore)
        let payload = endMetrics.payloadBytesWritten + endMetrics.operationPayloadBytes
            - startMetrics.payloadBytesWritten - startMetrics.operationPayloadBytes
        let rows = endMetrics.componentRowsWritten + endMetrics.componentRowsDeleted + endMetrics.entityRowsInserted
            + endMetrics.entityRowsDeleted + endMetrics.operationsLogged
            - startMetrics.componentRowsWritten - startMetrics.componentRowsDeleted - startMetrics.entityRowsInserted
            - startMetrics.entityRowsDeleted - startMetrics.operationsLogged
        let trees = (try? run.pages.byTree(databasePath: run.databasePath)) ?? []
        let risk = run.log.risk(from: start + .seconds(1), to: end)
        let strataTiming = TickTimes(strataTimes, window: options.hz * 10)
        let operations = endMetrics.operationsLogged - startMetrics.operationsLogged
        let checkpoints = endMetrics.checkpointCount - startMetrics.checkpointCount
        let cpu = endMetrics.writerCPUTime - startMetrics.writerCPUTime
        var alerts = endMetrics.alerts.filter { !$0.hasPrefix("WAL reached") }
        if run.walPeakBytes > run.engine.map({ FlushPolicy(config: $0.config.persistence).maxWalBytes(power: $0.powerState) }) ?? .max {
            alerts.append(String(format: "WAL reached %.1f MB during the run", Double(run.walPeakBytes) / 1_048_576))
        }
        let summary = run.summary
        let (setupBytes, fileBytes, shapesMade) = (run.setupBytes, run.fileBytes, run.shapes)
        try run.close()
        let reload = try run.reload()
        var strata = StrategyResult(
            name: run.name, summary: summary, entities: shapesMade, moving: 0, ticks: ticks, simulatedSeconds: simulated,
            wallSeconds: wall, tickRateHz: Double(ticks) / max(wall, 0.001),
            heldTickRate: ticks == plannedTicks && Double(ticks) / max(wall, 0.001) >= Double(options.hz) * 0.95,
            syncRequests: counts.syncs, syncRequestsPerSec: Double(counts.syncs) / max(simulated, 0.001),
            syncRequestsWholeProcess: vfs.counts.syncs,
            syncsByKind: ["main_db": counts.mainDatabase.syncs, "wal": counts.wal.syncs, "journal": counts.journal.syncs, "other": counts.other.syncs],
            bytesByKind: ["main_db": counts.mainDatabase.writeBytes, "wal": counts.wal.writeBytes, "journal": counts.journal.writeBytes,
                          "other": counts.other.writeBytes],
            bytesWritten: counts.writeBytes, bytesWrittenPerSec: Double(counts.writeBytes) / max(simulated, 0.001),
            writeCalls: counts.writes, changedBytes: payload,
            bytesPerChangedByte: payload == 0 ? 0 : Double(counts.writeBytes) / Double(payload),
            rowsWritten: rows, persistedPayloadBytes: payload,
            bytesPerPersistedRow: rows == 0 ? 0 : Double(counts.writeBytes) / Double(rows),
            bytesPerPayloadByte: payload == 0 ? 0 : Double(counts.writeBytes) / Double(payload),
            tickP50Ms: strataTiming.p50, tickP99Ms: strataTiming.p99, tickP99WindowMedianMs: strataTiming.p99WindowMedian,
            tickMaxMs: strataTiming.max,
            tickCpuMs: strataCPU.milliseconds, backgroundCpuMs: cpu.milliseconds,
            backgroundCpuMsPerSec: cpu.milliseconds / max(simulated, 0.001), risk: risk, reloadMs: reload.milliseconds,
            setupSeconds: setupSeconds, setupBytes: setupBytes,
            compactionRounds: endMetrics.compactionRounds - startMetrics.compactionRounds,
            compactionSteps: endMetrics.compactionSteps - startMetrics.compactionSteps)
        strata.fileBytes = fileBytes
        strata.commits = run.pages.commits
        strata.pagesPerCommit = run.pages.pagesPerCommit
        strata.pagesByTree = Dictionary(uniqueKeysWithValues: trees.map { ($0.name, $0.pagesPerCommit) })
        strata.walPeakBytes = run.walPeakBytes
        strata.checkpoints = checkpoints
        strata.operationsPerSec = Double(operations) / max(simulated, 0.001)
        strata.alerts = alerts
        let shares = PayloadShares(endMetrics, since: startMetrics)
        strata.stampPayloadBytes = shares.stamps
        strata.hostPayloadBytes = shares.hostData
        strata.derivedOperationPayloadBytes = shares.derivedOperations
        strata.receivedOperationPayloadBytes = shares.received
        strata.bytesPerHostByte = shares.perHostByte(counts.writeBytes)

        var results = [strata]
        for (i, snapshot) in snapshots.enumerated() {
            let (syncs, writes, bytes, records) = snapshot.counts
            let t = TickTimes(snapshotTimes[i], window: options.hz * 10)
            let cpu = snapshot.backgroundCPU
            results.append(StrategyResult(
                name: snapshot.name, summary: snapshot.summary, entities: shapesMade, moving: 0, ticks: ticks,
                simulatedSeconds: simulated, wallSeconds: wall, tickRateHz: Double(ticks) / max(wall, 0.001),
                heldTickRate: ticks == plannedTicks, syncRequests: syncs, syncRequestsPerSec: Double(syncs) / max(simulated, 0.001),
                syncRequestsWholeProcess: syncs, syncsByKind: ["file": syncs], bytesByKind: ["file": bytes], bytesWritten: bytes,
                bytesWrittenPerSec: Double(bytes) / max(simulated, 0.001), writeCalls: writes, changedBytes: payload,
                bytesPerChangedByte: payload == 0 ? 0 : Double(bytes) / Double(payload), rowsWritten: records,
                persistedPayloadBytes: bytes, bytesPerPersistedRow: records == 0 ? 0 : Double(bytes) / Double(records),
                bytesPerPayloadByte: bytes == 0 ? 0 : 1, tickP50Ms: t.p50, tickP99Ms: t.p99, tickP99WindowMedianMs: t.p99WindowMedian,
                tickMaxMs: t.max, tickCpuMs: snapshotCPU[i].milliseconds, backgroundCpuMs: cpu.milliseconds,
                backgroundCpuMsPerSec: cpu.milliseconds / max(simulated, 0.001), risk: snapshot.log.risk(from: start + .seconds(1), to: end),
                reloadMs: try? snapshot.reload().milliseconds, setupSeconds: 0, setupBytes: 0, compactionRounds: nil, compactionSteps: nil))
        }
        return results
    }
}
