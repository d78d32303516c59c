import Glibc
import GRDB
import GRDBSQLite
import Logging

extension Store {
    /// Rebuilds `world` from the database: every entity, the base rows of every
    /// registered type, then the segment log replayed over them in commit order (newest
    /// wins, tombstones remove, records of entities that are gone are ignored), and the
    /// settings. Nothing is marked dirty and nothing in the database changes.
    ///
    /// Also returns the interned id of every registered type (creating missing ones),
    /// indexed like the world's columns, and the writer's picture of the segment log.
    ///
    /// Cost: one pass over `entities` and `components` in key order (merged, no lookup per
    /// row) and one over `segments`; O(world + log), at open only.
    func load(into world: World, logger: Logger) throws -> (LoadSummary, typeIDs: [Int64?], log: SegmentLog) {
        precondition(world.entityCount == 0, "reload into an empty world")
        var summary = LoadSummary()
        var typeIDs: [Int64?] = []
        let log = SegmentLog()
        do {
            try queue.writeWithoutTransaction { db in
                for type in world.componentTypes {
                    typeIDs.append(try ComponentTypeNames.intern(type.typeName, replication: World.replication(of: type), db))
                }
            }
            try queue.read { db in
                summary = try Self.rebuild(world, typeIDs: typeIDs, log: log, db, logger: logger, asOf: nil)
            }
        } catch {
            throw StoreError(.read, wrapping: error, path: location.path)
        }
        summary.components = world.columns.reduce(0) { $0 + $1.count }
        return (summary, typeIDs, log)
    }

    /// Rebuilds `world` from the rows `db` reads (``load(into:logger:)``); with `asOf` (Unix
    /// ms), the world as the flushes up to that time left it (`Sources/Strata/History`): the
    /// entities spawned by then and not despawned, the despawned ones' kept rows, and the
    /// segments written by then.
    static func rebuild(_ world: World, typeIDs: [Int64?], log: SegmentLog, _ db: Database, logger: Logger,
                        asOf: Int64?) throws -> LoadSummary {
        var summary = LoadSummary()
        let clock = MonotonicClock()
        let started = clock.now()
        var loader = ComponentLoader(world: world, typeIDs: typeIDs, logger: logger, names: try StampNames(db, world: world))

        // Entities in number order: the world gives them indices 0, 1, 2… in that order.
        // Spawns waiting for compaction are entities like the others (`PendingEntities`).
        let layout = try PendingEntities.layout(db)
        let entitiesStatement = try db.makeStatement(sql: HistoryQueries.entities(asOf: asOf, layout: layout))
        defer { withExtendedLifetime(entitiesStatement) {} }
        if let asOf { sqlite3_bind_int64(entitiesStatement.sqliteStatement, 1, asOf) }
        let waiting = try PendingEntities.counts(db)
        let expected = (try Int.fetchOne(db, sql: "SELECT count(*) FROM entities") ?? 0) + waiting.spawns
        // Despawned, their rows waiting for compaction: not loaded, not reported.
        let despawning = try PendingEntities.despawnNumbers(db)
        (log.pendingSpawns, log.pendingDespawns) = waiting
        world.reserveEntities(max(0, expected - despawning.count))
        var numbers: [EntityNumber] = []
        numbers.reserveCapacity(expected)
        // The highest number a kept row names without being loaded (a malformed entity row, a
        // component row of no entity): never handed to a new entity, which would adopt them.
        var keptNumber: EntityNumber = 0
        // An id stored NULL is made from the node and the number (`EntityIDColumn`).
        let node = try EntityIDColumn.node(db)
        let entityRows = ReloadReader(entitiesStatement.sqliteStatement)
        entityRows.forEachRun { run in
            run.bytes.withUnsafeBytes { bytes in
                for row in run.rows {
                    let number = row.number
                    if !despawning.isEmpty, despawning.contains(number) { continue }
                    let stored = row.count == ReloadReader.nullID ? nil : UnsafeRawBufferPointer(rebasing: bytes[row.start ..< row.start + row.count])
                    guard let id = EntityIDColumn.id(stored: stored, number: number, node: node),
                          number > numbers.last ?? 0, number <= World.highestEntityNumber,
                          let entity = world.loadEntity(id: id, number: number) else {
                        // A number twice (in `entities` and waiting) is a damaged file's (the first is
                        // kept), and so is one that is not positive or past the highest a file may hold.
                        summary.malformedEntityRows += 1
                        if number <= World.highestEntityNumber { keptNumber = max(keptNumber, number) }
                        continue
                    }
                    precondition(entity.index == UInt32(numbers.count))
                    numbers.append(number)
                }
            }
        }
        try entityRows.check(db)
        summary.entities = numbers.count
        let entitiesLoaded = clock.now()

        // Base rows, in (entity_num, type_id) order: a merge with `numbers`.
        let baseStatement = try db.makeStatement(sql: HistoryQueries.baseRows(asOf: asOf))
        defer { withExtendedLifetime(baseStatement) {} }
        var position = 0
        var baseBytes = 0
        let baseRows = ReloadReader(baseStatement.sqliteStatement)
        baseRows.forEachRun { run in
            run.bytes.withUnsafeBytes { bytes in
                for row in run.rows {
                    let number = row.number
                    while position < numbers.count && numbers[position] < number { position += 1 }
                    log.baseRows += 1
                    baseBytes += row.count
                    guard position < numbers.count && numbers[position] == number else {
                        if !despawning.contains(number) { summary.orphanRows += 1 }
                        if number <= World.highestEntityNumber { keptNumber = max(keptNumber, number) }
                        continue
                    }
                    loader.queue(typeID: row.typeID, version: row.version,
                                 payload: UnsafeRawBufferPointer(rebasing: bytes[row.start ..< row.start + row.count]), at: UInt32(position))
                }
            }
        }
        try baseRows.check(db)
        loader.flush()
        if log.baseRows > 0 { log.baseRowBytes = baseBytes / log.baseRows + 16 }
        let baseLoaded = clock.now()

        // The segment log, in commit order. Which record of each key is the newest
        // (live) is kept in flat arrays, by column and entity, and handed to the log
        // at the end: one dictionary insert per key, not one update per record.
        let index = EntityNumberIndex(numbers)
        let newest = NewestRecords(columns: world.columns.count, entities: numbers.count)
        let replay = try SegmentReplay.run(db, log: log, logger: logger, through: asOf, unresolved: { key in
            if index.index(of: key.entity) != nil, loader.column(of: key.typeID) != nil { summary.unresolvedRecords += 1 }
        }) { record, seq in
            guard let entity = index.index(of: record.key.entity) else { return }   // gone: not live
            if let column = loader.column(of: record.key.typeID) {
                newest.note(column: column, entity: entity, seq: seq, bytes: record.approximateBytes)
                if let version = record.version {
                    loader.put(column: column, version: version, payload: record.payload, at: entity)
                } else {
                    loader.forget(column: column, entity: entity)
                }
            } else {
                loader.unknownTypeRows += record.isRemoval ? 0 : 1
                log.noteLive(record.key, seq: seq, bytes: record.approximateBytes)
            }
        }
        newest.hand(to: log) { column, entity in typeIDs[column].map { SegmentKey(entity: numbers[entity], typeID: $0) } }
        summary.segments = replay.rows
        summary.segmentRecords = replay.records
        summary.unreadableSegments = replay.unreadableRows
        if summary.unresolvedRecords > 0 {
            logger.error("reload: \(summary.unresolvedRecords) records of live entities are coded against a payload the log no longer has (a segment row lost or set aside): not loaded; each of those components holds the newest of its values that could be read, if any")
        }
        // Numbers are never reused while a record or the history window may name them.
        // Past the highest a file may hold: damage, not counted (the + 1 below never overflows).
        let highest = World.highestEntityNumber
        let despawned = try EntityNumber.fetchOne(db, sql: "SELECT max(num) FROM despawned_entities WHERE num <= ?", arguments: [highest]) ?? 0
        let waitingMax = layout.spawns
            ? try EntityNumber.fetchOne(db, sql: "SELECT max(num) FROM pending_entities WHERE num <= ?", arguments: [highest]) ?? 0
            : despawning.filter { $0 <= highest }.max() ?? 0
        // A number a deleted row had, whose id was made from it, is never given again (one
        // past the highest a file may hold is damage, as above).
        let deleted = try EntityIDColumn.numbersThrough(db).flatMap { $0 <= highest ? $0 : nil } ?? 0
        world.nextEntityNumber = max(numbers.last ?? 0, replay.highestEntityNumber, despawned, waitingMax, keptNumber, deleted) + 1
        summary.unknownTypeRows = loader.unknownTypeRows
        summary.undecodableRows = loader.undecodableRows
        summary.olderPayloadRows = loader.olderPayloads.count
        world.olderPayloads = loader.olderPayloads.sorted { ($0.column, $0.entity) > ($1.column, $1.entity) }
        for hook in world.persistenceHooks { hook.adoptLoaded(world) }
        if asOf == nil, summary.malformedEntityRows > 0 || summary.orphanRows > 0 {
            logger.warning("reload: kept but did not load \(summary.malformedEntityRows) entity rows with a malformed or repeated id or number and \(summary.orphanRows) component rows of no entity")
        }
        let settings = try Store.readSettings(db)
        world.loadSettings(settings.values)
        summary.settings = settings.values.count
        summary.unreadableSettings = settings.unreadable.count
        if !settings.unreadable.isEmpty {
            logger.warning("reload: settings \(settings.unreadable.sorted()) kept but not loaded: a format this build does not know")
        }
        let done = clock.now()
        logger.debug("""
            reload: \(numbers.count) entities in \(entitiesLoaded.duration(since: started)), \(log.baseRows) base rows in \
            \(baseLoaded.duration(since: entitiesLoaded)), \(replay.records) records of \(replay.rows) segments in \
            \(done.duration(since: baseLoaded))
            """)
        return summary
    }
}

private extension World {
    /// An entity read from the file, with one probe of the id index: nil if `id` is alive
    /// already (a damaged file's repeated id: the first row is kept).
    func loadEntity(id: EntityID, number: EntityNumber) -> Entity? {
        let next = UInt32(records.count)   // a reload fills an empty world: no free slot
        guard indexByID.findOrInsert(id, slot: next, ids: { self.records[Int($0)].id }).inserted else { return nil }
        return makeEntity(id: id, number: number, spawnPending: false, indexed: true)
    }
}

/// Entity number → world index during a reload: the entities were loaded in number order,
/// so the index is the position in `numbers`. A direct table when numbers are dense (the
/// usual case: assigned in spawn order, with the holes despawns leave), else a binary search.
private struct EntityNumberIndex {
    let numbers: [EntityNumber]
    /// `table[number - first]` is the index, or `UInt32.max`.
    let table: [UInt32]?
    let first: EntityNumber

    init(_ numbers: [EntityNumber]) {
        self.numbers = numbers
        first = numbers.first ?? 0
        let span = (numbers.last ?? 0) - first + 1
        if !numbers.isEmpty && span <= Int64(4 * numbers.count + 1024) {
            var table = [UInt32](repeating: .max, count: Int(span))
            for (i, number) in numbers.enumerated() { table[Int(number - first)] = UInt32(i) }
            self.table = table
        } else {
            table = nil
        }
    }

    @inline(__always)
    func index(of number: EntityNumber) -> UInt32? {
        if let table {
            let offset = number - first
            guard offset >= 0 && offset < table.count else { return nil }
            let index = table[Int(offset)]
            return index == .max ? nil : index
        }
        var low = 0, high = numbers.count
        while low < high {
            let mid = (low + high) / 2
            if numbers[mid] < number { low = mid + 1 } else { high = mid }
        }
        return low < numbers.count && numbers[low] == number ? UInt32(low) : nil
    }
}

/// The newest record of each (column, entity) key met in the log, in flat tables.
/// The tables come zeroed from `calloc`, which maps fresh pages for large sizes: only
/// the pages of keys the log touches are ever written (a few hot keys over a million
/// entities cost a few pages, not 12 MB of zeroes per column).
private final class NewestRecords {
    /// `seq[column][entity]`: the seq of the newest record, 0 if none.
    private var seq: [UnsafeMutablePointer<Int64>?]
    private var bytes: [UnsafeMutablePointer<Int32>?]
    private let entityCount: Int

    init(columns: Int, entities: Int) {
        seq = Array(repeating: nil, count: columns)
        bytes = Array(repeating: nil, count: columns)
        entityCount = entities
    }

    deinit {
        for table in seq { free(table) }
        for table in bytes { free(table) }
    }

    @inline(__always)
    func note(column: Int, entity: UInt32, seq s: Int64, bytes b: Int32) {
        if let seqs = seq[column], let sizes = bytes[column] {
            seqs[Int(entity)] = s
            sizes[Int(entity)] = b
            return
        }
        guard let seqTable = calloc(max(entityCount, 1), MemoryLayout<Int64>.stride),
              let bytesTable = calloc(max(entityCount, 1), MemoryLayout<Int32>.stride) else {
            fatalError("reload: out of memory for \(entityCount) entities")
        }
        let seqs = seqTable.assumingMemoryBound(to: Int64.self), sizes = bytesTable.assumingMemoryBound(to: Int32.self)
        seq[column] = seqs
        bytes[column] = sizes
        seqs[Int(entity)] = s
        sizes[Int(entity)] = b
    }

    /// Notes every newest record in `log`.
    func hand(to log: SegmentLog, key: (Int, Int) -> SegmentKey?) {
        for column in seq.indices {
            guard let seqs = seq[column], let sizes = bytes[column] else { continue }
            for entity in 0..<entityCount where seqs[entity] != 0 {
                guard let key = key(column, entity) else { continue }   // a column of a type without an id: none loads
                log.noteLive(key, seq: seqs[entity], bytes: sizes[entity])
            }
        }
    }
}
