import Foundation
import GRDB

/// The rows commits rejected (``RejectedWrite``): read them, and put them back.
extension Engine {
    /// Every parked row: those in `rejected_writes` (committed so far), then those in the
    /// side file `PATH.rejected`. Tick thread.
    public func rejectedWrites() throws -> [RejectedWrite] {
        owner.check("Engine")
        var rows: [RejectedWrite] = []
        do {
            rows = try store.queue.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM rejected_writes ORDER BY id").map { row in
                    func id(_ column: String) -> EntityID? {
                        row.value(column, as: Data.self).flatMap { data in data.withUnsafeBytes { EntityID(bytes: $0) } }
                    }
                    // A parked row is shown whatever it holds: a value that does not read is left out.
                    return RejectedWrite(id: try row.decode(forColumn: "id"), rejectedAt: row.value("rejected_at") ?? 0,
                                         error: row.value("error") ?? "(unreadable)",
                                         kind: row.value("kind", as: String.self).flatMap(RejectedWrite.Kind.init(rawValue:)) ?? .component,
                                         entity: id("entity"), entityNumber: row.value("entity_num"), name: row.value("name"),
                                         number: row.value("number"), payload: row.value("payload", as: Data.self).map { [UInt8]($0) },
                                         operationID: id("operation_id"), timestamp: row.value("timestamp"))
                }
            }
        } catch {
            throw StoreError(.read, wrapping: error, path: store.location.path)
        }
        return rows + Self.sideFileRows(store.location.rejectedPath)
    }

    /// What ``replayRejectedWrites()`` did.
    public struct ReplayReport: Sendable, Equatable {
        /// Rows put back in the world: they are written again with the next flush.
        public var replayed = 0
        /// Rows left parked, and why.
        public var kept: [String] = []
    }

    /// Puts the parked rows back, to be written with the next flush (call it once the
    /// cause is fixed: a migration, a smaller value): components and settings into the
    /// world, with the spawns and despawns among them; operations into the operation log
    /// as they were (same id, sequence and timestamp; one logged meanwhile is not logged
    /// twice); vector-clock rows (the clock as it is now is written); acknowledgements.
    /// The rows replayed leave `rejected_writes` in that flush's transaction, and the side
    /// file at once. Rows the engine cannot express (components of entities that are gone
    /// or of types not registered, operations parked by a build that did not keep their
    /// id) stay parked. Tick thread.
    @discardableResult
    public func replayRejectedWrites() throws -> ReplayReport {
        var report = ReplayReport()
        var remainingSide: [RejectedWrite] = []
        let sideFile = SideFile(path: store.location.rejectedPath)
        let unreadable = sideFile.read().unreadableLines
        for line in unreadable {
            report.kept.append("a line of \(sideFile.path) that does not read (\(line.count) bytes): kept in the file")
        }
        for row in try rejectedWrites() {
            if let reason = replay(row) {
                report.kept.append("\(row.kind.rawValue) \(row.name ?? ""): \(reason)")
                if row.id == nil { remainingSide.append(row) }
                continue
            }
            report.replayed += 1
            if let id = row.id { nextBatch.replayedRejections.append(id) }
        }
        try sideFile.rewrite(rows: remainingSide, keeping: unreadable)
        if report.replayed > 0 { flush(reason: .explicitSave) }
        return report
    }

    /// Applies one parked row to the world, back into its section (``RejectedWrite/Kind/section``);
    /// returns why it cannot be, if so.
    private func replay(_ row: RejectedWrite) -> String? {
        switch row.kind {
        case .setting:
            guard let key = row.name, let text = row.payload.map({ String(decoding: $0, as: UTF8.self) }),
                  let value = SettingValue(storageText: text) else { return "its stored text does not read" }
            world.setSetting(value, for: key)
            return nil
        case .settingRemoval:
            guard let key = row.name else { return "no key" }
            world.setSetting(nil, for: key)
            return nil
        case .component, .componentRemoval:
            guard let id = row.entity, let entity = world.entity(for: id) else { return "its entity is not in the world" }
            guard let type = world.componentTypes.first(where: { $0.typeName == row.name }) else { return "its type is not registered" }
            if let index = world.columnByName[type.typeName], let hook = world.persistence(ofColumn: index) {
                return hook.replay(row, of: entity, in: world)
            }
            if row.kind == .componentRemoval {
                _ = remove(type, from: entity)
                return nil
            }
            do {
                try reinsert(type, row, for: entity)
                return nil
            } catch {
                return "it does not decode: \(error)"
            }
        case .entityInsert:
            // A spawn whose row never landed: the entity again, by its id (its parked
            // components, later in the list, then find it).
            guard let id = row.entity else { return "no entity id" }
            if world.entity(for: id) == nil { world.spawn(id: id) }
            return nil
        case .entityDelete:
            guard let id = row.entity else { return "no entity id" }
            if let entity = world.entity(for: id) { world.despawn(entity) }
            return nil
        case .operation:
            // Read from disk: a damaged row must not reach the log's precondition (sequences start at 1).
            if let seq = row.number, seq < 1 { return "its sequence \(seq) is below 1 (a damaged row)" }
            guard let operation = row.operation else { return "parked without its id and timestamp (an older build)" }
            // After a restart it is missing from the log (a gap): logged again, the clock moves.
            // In the session that parked it, the clock has it already: only the row is written.
            if world.operationLog.receive(operation) == .duplicate { world.operationLog.requeue(operation) }
            world.tracker.noteCriticalWork(clock: world.clock)
            return nil
        case .vectorClock:
            guard let node = row.entity else { return "no node" }
            world.operationLog.requeueClock(of: node)
            world.tracker.noteCriticalWork(clock: world.clock)
            return nil
        case .peerAck:
            guard let peer = row.entity, let text = row.name, let uuid = UUID(uuidString: text), let seq = row.number
            else { return "no peer, node or sequence" }
            world.operationLog.acknowledge(from: peer, clock: [NodeID(uuid): seq])
            world.tracker.noteCriticalWork(clock: world.clock)
            return nil
        case .salvagedRow:
            return "a row of \(row.name ?? "a table") the salvage read from a damaged file, refused by the new one: kept to be looked at"
        }
    }

    private func reinsert<C: Component>(_ type: C.Type, _ row: RejectedWrite, for entity: Entity) throws {
        world.insert(try row.decode(C.self), for: entity)
    }

    private func remove<C: Component>(_ type: C.Type, from entity: Entity) -> C? {
        world.remove(C.self, from: entity)
    }

    static func sideFileRows(_ path: String) -> [RejectedWrite] { SideFile(path: path).read().rows }

}
