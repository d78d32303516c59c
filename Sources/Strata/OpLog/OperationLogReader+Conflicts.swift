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
            let rows = try Row.fetchCursor(db, sql: """
                SELECT node, seq, id, timestamp, kind, payload FROM operation_log
                WHERE kind IN (\(OperationKindCode.component), '\(ReplicatedOperation.componentKind)')
                """)
            while let row = try rows.next() {
                guard let operation = Self.operation(row),
                      case let .component(entity, type, _, _, isDefault)? = try? ReplicatedOperation(kind: ReplicatedOperation.componentKind,
                                                                                                  payload: operation.payload)
                else { continue }
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

    private struct Key: Hashable {
        var entity: EntityID
        var type: String
    }
}
