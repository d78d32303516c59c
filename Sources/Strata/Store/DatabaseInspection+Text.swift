import Foundation

/// `strata inspect`'s two forms: JSON for scripts (keys sorted, every documented key
/// present) and text for people.
extension DatabaseInspection {
    /// The JSON form, keys sorted.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Every documented key is present: an absent value is written as null, not left out.
        guard var object = try JSONSerialization.jsonObject(with: try encoder.encode(self)) as? [String: Any] else {
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }
        for key in Self.nullableKeys where object[key] == nil { object[key] = NSNull() }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// The JSON keys whose value may be absent (written as null).
    static let nullableKeys = ["digest", "document_detail", "owner", "node_id", "clean_shutdown", "session_id",
                               "session_started_at", "session_ended_at"]

    /// The human form.
    public var text: String {
        var lines = [
            "database         \(path)",
            "document         \(document)" + (documentDetail.map { " (\($0))" } ?? ""),
            "owner            \(owner?.description ?? "none (not open)")",
            "journal mode     \(journalMode)",
            "page size        \(pageSize)",
            "schema version   \(schemaVersion)",
            "WAL              \(walBytes) bytes",
        ]
        if readFromCopy { lines.append("read from        a copy (the folder is read-only, and SQLite needs the WAL's shared-memory file beside it)") }
        guard document == "strata" || document == "empty" else { return lines.joined(separator: "\n") }
        lines.append("entities         \(entityCount)")
        for (name, count) in components.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(count)")
        }
        lines.append("base rows        \(baseComponentRows)")
        lines.append("segments         \(segments) rows, \(segmentBytes) bytes, \(segmentRecords) records"
            + (unreadableSegments > 0 ? " (\(unreadableSegments) unreadable)" : "")
            + (unresolvedRecords > 0 ? " (\(unresolvedRecords) coded against a payload the log no longer has: skipped)" : ""))
        lines.append("compactions      \(compactions) (\(compactionSteps) steps)")
        if let digest {
            lines.append("digest           \(digest.replicated) replicated; per type " + digest.types.sorted { $0.key < $1.key }
                .map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if !rowsByKind.isEmpty {
            lines.append("rows by kind     " + DataKind.allCases.compactMap { kind in
                rowsByKind[kind.rawValue].map { "\(kind.rawValue) \($0)" }
            }.joined(separator: ", "))
        }
        if let nodeID { lines.append("node id          \(nodeID)") }
        lines.append("operation log    \(operationLog.values.reduce(0, +)) operations from \(operationLog.count) nodes")
        for (node, count) in operationLog.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(node)  \(count) logged, vector clock \(vectorClock[node].map(String.init) ?? "-")")
        }
        if rejectedWrites + rejectedWritesInSideFile + unreadableSideFileLines > 0 {
            lines.append("rejected writes  \(rejectedWrites) parked in the database, \(rejectedWritesInSideFile) in \(path).rejected"
                + (unreadableSideFileLines > 0 ? "; \(unreadableSideFileLines) lines there do not read (kept as they are)" : ""))
        }
        lines.append("settings         \(settings.count)")
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            let shown = SettingValue(storageText: value).map(\.description) ?? "\(value) (unreadable)"
            lines.append("  \(key.padding(toLength: 28, withPad: " ", startingAt: 0)) \(shown)")
        }
        let mark = cleanShutdown.map { $0 ? "set (last session shut down cleanly)" : "not set (running, or crashed)" } ?? "absent"
        lines.append("clean shutdown   \(mark)")
        lines.append("crashes          \(crashCount)")
        lines.append("clean shutdowns  \(cleanShutdownCount)")
        return lines.joined(separator: "\n")
    }
}
