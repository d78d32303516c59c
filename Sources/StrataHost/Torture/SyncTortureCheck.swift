import Foundation
import Strata

/// The sync checker's verdict on one run, after the faults healed and every device
/// settled: read from outside (the server through psql, each file through a read-only
/// connection and `strata inspect --json`), against the reference it works out itself.
struct SyncTortureCheck {
    let server: SyncTortureServer
    let document: String
    let devices: [SyncTortureDevice]
    let strata: String
    /// `[persistence] critical_flush_delay_ms`: an operation logged longer than this before
    /// a kill or a power cut must survive it.
    let criticalDelay: Duration

    struct Figures {
        var operations = 0
        var values = 0
        var overwrites = 0
        var overwritesUnder250ms = 0
        var acknowledgedChecked = 0
        var withinDelay = 0
    }

    func run(into outcome: inout ContractCheck.Outcome) throws -> Figures {
        var figures = Figures()
        let rows = try server.query("""
            SELECT node, seq, id, hlc, kind, encode(payload, 'hex') FROM strata_operations
            WHERE document = '\(document)' ORDER BY position
            """)
        var operations: [SyncTortureReference.Operation] = []
        var serverKeys = Set<String>(), serverIDs = Set<String>()
        for fields in rows {
            // psql's fields as text, by position (no index past the count).
            guard fields.count == 6 else {
                outcome.fail(.diverged, "a server row does not read: \(fields.prefix(3))")
                continue
            }
            let (nodeText, seqText, idText, hlcText, kind, payloadHex) = (fields[0], fields[1], fields[2], fields[3], fields[4], fields[5])
            guard let seq = Int64(seqText), let hlc = Int64(hlcText), let node = Self.uuidBytes(nodeText) else {
                outcome.fail(.diverged, "a server row does not read: \(fields.prefix(3))")
                continue
            }
            let key = "\(nodeText.lowercased()):\(seq)"
            if !serverKeys.insert(key).inserted { outcome.fail(.duplicate, "the server holds \(key) twice") }
            if !serverIDs.insert(idText.lowercased()).inserted { outcome.fail(.duplicate, "the server holds operation id \(idText) twice") }
            operations.append(.init(node: node, seq: seq, hlc: hlc, kind: kind, payload: Self.hexBytes(payloadHex)))
        }
        figures.operations = operations.count
        let reference = SyncTortureReference(operations)
        if reference.unreadable > 0 { outcome.fail(.diverged, "\(reference.unreadable) of the server's operations do not read as the format says") }
        figures.values = reference.values
        figures.overwrites = reference.overwrites
        figures.overwritesUnder250ms = reference.overwritesUnder250ms

        for device in devices {
            outcome.checks += 1
            try Self.checkLog(of: device, serverKeys: serverKeys, into: &outcome)
            let digest = try replicatedDigest(of: device)
            if digest != reference.replicatedDigest {
                outcome.fail(.diverged, "device \(device.index): replicated digest \(digest ?? "none"), the server's operations give \(reference.replicatedDigest)")
            }
            let (checked, within) = checkAcknowledged(device, serverKeys: serverKeys, into: &outcome)
            figures.acknowledgedChecked += checked
            figures.withinDelay += within
            for exit in device.unexpectedExits { outcome.fail(.unexpectedExit, "device \(device.index): \(exit)") }
        }
        return figures
    }

    /// The server's operations as `node:seq` keys.
    static func serverKeys(_ server: SyncTortureServer, document: String) throws -> Set<String> {
        Set(try server.query("SELECT node, seq FROM strata_operations WHERE document = '\(document)'").map { "\($0[0].lowercased()):\($0.count > 1 ? $0[1] : "")" })
    }

    /// Whether the device holds exactly `serverKeys` (what retention dropped counts as held).
    static func holdsExactly(_ device: SyncTortureDevice, _ serverKeys: Set<String>) -> Bool {
        var outcome = ContractCheck.Outcome()
        guard (try? checkLog(of: device, serverKeys: serverKeys, into: &outcome)) != nil else { return false }
        return outcome.failures.isEmpty
    }

    /// The device holds exactly the server's operations, each once.
    private static func checkLog(of device: SyncTortureDevice, serverKeys: Set<String>, into outcome: inout ContractCheck.Outcome) throws {
        let reader = try OperationLogReader(path: device.databasePath)
        var keys = Set<String>(), ids = Set<String>()
        let summary = try reader.summary()
        for node in summary.keys {
            var after: Int64 = 0
            while true {
                let page = try reader.operations(of: node, after: after, limit: 5_000)
                for operation in page {
                    keys.insert("\(node):\(operation.seq)")
                    if !ids.insert(operation.id.description).inserted {
                        outcome.fail(.duplicate, "device \(device.index) holds operation id \(operation.id) twice")
                    }
                }
                guard let last = page.last, page.count == 5_000 else { break }
                after = last.seq
            }
        }
        // Retention drops operations the server has (and a floor says through which
        // sequence): those count as held.
        let missing = serverKeys.subtracting(keys).filter { key in
            let parts = key.split(separator: ":")
            guard parts.count == 2, let node = UUID(uuidString: String(parts[0])).map(EntityID.init), let seq = Int64(parts[1]) else { return true }
            return seq > (summary[node]?.dropped ?? 0)
        }
        let extra = keys.subtracting(serverKeys)
        if !missing.isEmpty {
            outcome.fail(.missingOperation, "device \(device.index) lacks \(missing.count) of the server's operations, e.g. \(missing.sorted().prefix(3))")
        }
        if !extra.isEmpty {
            outcome.fail(.missingOperation, "device \(device.index) holds \(extra.count) operations the server never got, e.g. \(extra.sorted().prefix(3))")
        }
    }

    /// `strata inspect --json`'s replicated digest of the device's file.
    private func replicatedDigest(of device: SyncTortureDevice) throws -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: strata)
        process.arguments = ["inspect", "--json", device.databasePath]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let digest = object["digest"] as? [String: Any] else { return nil }
        return digest["replicated"] as? String
    }

    /// Every operation the device logged longer than the critical delay before a kill or a
    /// power cut (or before a clean stop) is on the server. Returns (checked, logged within
    /// the delay of a fault: allowed to be lost).
    private func checkAcknowledged(_ device: SyncTortureDevice, serverKeys: Set<String>,
                                   into outcome: inout ContractCheck.Outcome) -> (Int, Int) {
        let traced = device.tracedOperations()
        // When each (node, seq) was logged at the latest: the first line that reached it.
        var loggedAt: [String: Instant] = [:]
        var highest: [String: Int64] = [:]
        for line in traced {
            let from = (highest[line.node] ?? 0) + 1
            if line.seq >= from {
                for seq in from ... line.seq { loggedAt["\(line.node):\(seq)"] = line.at }
                highest[line.node] = line.seq
            } else if line.seq < from {
                // A new session starts lower (its last sequences were lost): the later ones are new again.
                for seq in (line.seq + 1) ..< from { loggedAt["\(line.node):\(seq)"] = nil }
                highest[line.node] = line.seq
            }
        }
        var checked = 0, within = 0
        for (key, at) in loggedAt {
            // A fault up to a tick before the trace's line counts as after it: the session
            // notices a power cut's signal at the end of a tick, and traces first what that
            // tick logged if the signal came after the check.
            let fault = device.faults.first { $0 >= at - .milliseconds(50) }
            if let fault, fault < at || fault.duration(since: at) <= criticalDelay + .milliseconds(100) {
                within += 1
                continue
            }
            checked += 1
            if !serverKeys.contains(key) {
                let age = fault.map { "\($0.duration(since: at).milliseconds) ms before a fault" } ?? "with no fault after it"
                outcome.fail(.acknowledgedLost, "device \(device.index): operation \(key), logged \(age), is not on the server")
            }
        }
        return (checked, within)
    }

    static func uuidBytes(_ text: String) -> [UInt8]? {
        UUID(uuidString: text).map { withUnsafeBytes(of: $0.uuid) { Array($0) } }
    }

    static func hexBytes(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for c in text.utf8 {
            let v: UInt8 = c >= 97 ? c - 87 : c >= 65 ? c - 55 : c - 48
            if let h = high { bytes.append(h << 4 | v); high = nil } else { high = v }
        }
        return bytes
    }
}
