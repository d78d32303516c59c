import Foundation
import GRDB

/// The conflicts a document's log holds (`strata sync status`): replicated values one
/// device wrote that a later value from another device replaced, found by replaying every
/// `strata.component` operation in stamp order, and the operations every device holds back
/// because they are stamped too far ahead of the clock. Any thread (a read-only
/// connection of its own).
public struct LoggedConflicts: Sendable, Equatable, Codable {
    /// Values of one device replaced by another device's later value, by the gap between
    /// the two stamps (as ``ReplicationStatus/overwrites`` counts them live, but over the
    /// whole log: the same on every device that holds the same operations).
    public var overwrites = OverwriteCounts()
    /// Defaults (``World/insertDefault(_:for:)``) that a value a device wrote replaced.
    public var defaultsReplaced = 0
    /// Operations stamped more than the allowed skew ahead of this clock: held on every
    /// device until its clock gets there.
    public var aheadOfClock = 0
    /// How far ahead of this clock the furthest one is (ms); nil if none is ahead.
    public var furthestAheadMilliseconds: Int64?
    /// Operations of a type the document's last open did not register as replicated:
    /// held with their entities until a build that knows the type opens it.
    public var unknownType = 0
    /// `strata.component` operations replayed.
    public var operations = 0

    public init() {}
}

extension OperationLogReader {
    /// The log's conflicts (``LoggedConflicts``), with `now` the wall clock (Unix ms) and
    /// `maxAheadMilliseconds` the skew a stamp may have and still apply (`[sync]
    /// max_clock_ahead_secs`). O(log): every replicated operation is read and sorted.
    public func conflicts(now: Int64, maxAheadMilliseconds: Int64) throws -> LoggedConflicts {
        var stamped: [(stamp: OperationStamp, key: Key)] = []
        var report = LoggedConflicts()
        try read { db in
            let known = try ComponentTypeNames.replicated(db)
            try Self.forEachComponentOperation(db) { operation in
                guard case let .component(entity, type, _, _, isDefault)? = try? ReplicatedOperation(kind: ReplicatedOperation.componentKind,
                                                                                                  payload: operation.payload)
                else { return }
                if !known.contains(type) { report.unknownType += 1 }
                let ahead = operation.timestamp.milliseconds - now
                if ahead > maxAheadMilliseconds {
                    report.aheadOfClock += 1
                    report.furthestAheadMilliseconds = max(report.furthestAheadMilliseconds ?? 0, ahead)
                }
                stamped.append((isDefault ? .ofDefault(node: operation.node) : OperationStamp(operation), Key(entity: entity, type: type)))
            }
        }
        report.operations = stamped.count
        stamped.sort { $0.stamp < $1.stamp }
        var last: [Key: OperationStamp] = [:]
        for (stamp, key) in stamped {
            if let before = last[key] {
                if before.isDefault, !stamp.isDefault, !before.sameNode(as: stamp) { report.defaultsReplaced += 1 }
                report.overwrites.note(stamp, replacing: before)
            }
            last[key] = stamp
        }
        return report
    }

    /// Every `strata.component` operation of the log, unordered. This replica's rows are
    /// read from their table and given back whole here, each type's name looked up once,
    /// rather than through the view, whose SQL puts every row's id and name back (a scan
    /// of two million operations took a third longer); the view on a file of a schema
    /// before 21. Ids are not read: the conflicts do not need them.
    private static func forEachComponentOperation(_ db: Database, _ body: (LoggedOperation) -> Void) throws {
        let component = ReplicatedOperation.componentKind
        guard try StoredOperation.isStoredShort(db) else {
            let rows = try Row.fetchCursor(db, sql: "SELECT node, seq, id, timestamp, kind, payload FROM operation_log WHERE kind = ?",
                                           arguments: [component])
            while let row = try rows.next() { if let operation = operation(row) { body(operation) } }
            return
        }
        let names = try ComponentTypeNames.all(db).mapValues { Array($0.utf8) }
        if let node = try EntityIDColumn.node(db) {
            let entity = try StoredOperation.storesEntityNumbers(db) ? "entity" : "NULL"
            let rows = try Row.fetchCursor(db, sql: """
                SELECT seq, timestamp, type, payload, \(entity) AS entity FROM local_operations
                WHERE kind IN (\(OperationKindCode.component), '\(component)')
                """)
            while let row = try rows.next() {
                guard let seq = row.value("seq", as: Int64.self), let timestamp = row.value("timestamp", as: Int64.self),
                      var payload = row.value("payload", as: Data.self).map(Array.init) else { continue }
                let entity = try row.decode(DatabaseValue.self, atIndex: 4)
                if !entity.isNull {
                    // An entity's number: its id made again (schema 24); one that makes none does not read (as through the view).
                    guard case .int64(let number) = entity.storage, let id = EntityID(node: node, number: number), !payload.isEmpty
                    else { continue }
                    id.withBytes { payload.insert(contentsOf: $0, at: 1) }
                }
                if let type = row.value("type", as: Int64.self) {
                    // A number that names nothing: the row does not read (as through the view).
                    guard let name = names[type], name.count < 128, payload.count >= StoredOperation.nameOffset else { continue }
                    payload.insert(contentsOf: [UInt8(name.count)] + name, at: StoredOperation.nameOffset)
                }
                body(LoggedOperation(id: LoggedOperation.placeholder.id, node: node, seq: seq, timestamp: HybridTimestamp(rawValue: timestamp),
                                     kind: component, payload: payload))
            }
        }
        let rows = try Row.fetchCursor(db, sql: "SELECT node, seq, id, timestamp, kind, payload FROM received_operations WHERE kind = ?",
                                       arguments: [component])
        while let row = try rows.next() { if let operation = operation(row) { body(operation) } }
    }

    private struct Key: Hashable {
        var entity: EntityID
        var type: String
    }
}
