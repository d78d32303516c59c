import Logging

/// Puts decoded values into the world's columns during a reload, counting what it
/// cannot load. Opening thread.
///
/// Values come one at a time (`put`, the segment replay) or queued per column and
/// decoded a run at a time (`queue`, then `flush`, the base rows): a column's code is
/// generic and runs unspecialized here, so each call looks up its type's metadata
/// again; a run of a thousand rows pays that once (per row, those lookups were about a
/// tenth of a million-entity reload's CPU samples under `perf record`).
struct ComponentLoader {
    /// The world's columns, held here: reached through the world for every record, they
    /// cost a retain and a release each (a third of a replay's time).
    let columns: [any AnyComponentColumn]
    let logger: Logger
    /// Column index by `component_types.id` (ids are small: interned one by one).
    private var columnByTypeID: [Int?] = []
    private var overflowColumnByTypeID: [Int64: Int] = [:]
    /// Each column's payload version, read once.
    private let versions: [Int]
    var unknownTypeRows = 0
    var undecodableRows = 0
    /// Keys whose newest value was written with an older payload version than this
    /// build's (rewritten at their next change, or by maintenance: `rewrite_old_payloads`).
    var olderPayloads: Set<OlderPayload> = []
    private var warned: Set<Int> = []
    /// Rows queued per column, and their payload bytes.
    private var queued: [[LoadedRow]]
    private var queuedBytes: [[UInt8]]
    private var failures: [LoadFailure] = []
    /// Rows a column queues before they are decoded.
    static let run = 1024

    /// The world, for the columns that load through their hook (``ColumnPersistence``),
    /// and what their rows name (``StampNames``).
    private unowned let world: World
    private let hooks: [(any ColumnPersistence)?]
    private let names: StampNames

    init(world: World, typeIDs: [Int64?], logger: Logger, names: StampNames = StampNames()) {
        self.columns = world.columns
        self.world = world
        hooks = world.columns.indices.map { world.persistence(ofColumn: $0) }
        self.names = names
        self.logger = logger
        versions = world.columns.map { $0.componentType.payloadVersion }
        queued = Array(repeating: [], count: world.columns.count)
        queuedBytes = Array(repeating: [], count: world.columns.count)
        for (column, id) in typeIDs.enumerated() {
            guard let id else { continue }
            if id >= 0 && id < 65_536 {
                if columnByTypeID.count <= Int(id) { columnByTypeID += repeatElement(nil, count: Int(id) + 1 - columnByTypeID.count) }
                columnByTypeID[Int(id)] = column
            } else {
                overflowColumnByTypeID[id] = column
            }
        }
    }

    /// The column of a registered type, nil for a type this build does not register.
    @inline(__always)
    func column(of typeID: Int64) -> Int? {
        typeID >= 0 && typeID < columnByTypeID.count ? columnByTypeID[Int(typeID)] : overflowColumnByTypeID[typeID]
    }

    /// Queues a base row for its column (an unknown type is counted and left in the
    /// file). At most one row per key may be queued: `flush` before anything else
    /// touches the column.
    mutating func queue(typeID: Int64, version: Int, payload: UnsafeRawBufferPointer, at entityIndex: UInt32) {
        guard let column = column(of: typeID) else {
            unknownTypeRows += 1
            return
        }
        guard version <= versions[column] else {
            put(column: column, version: version, payload: payload, at: entityIndex)   // counted and reported there
            return
        }
        if version < versions[column] { olderPayloads.insert(OlderPayload(column: column, entity: entityIndex)) }
        queued[column].append(LoadedRow(entity: entityIndex, version: version, start: queuedBytes[column].count, count: payload.count))
        queuedBytes[column].append(contentsOf: payload)
        if queued[column].count >= Self.run { flush(column) }
    }

    /// Decodes every queued row into its column.
    mutating func flush() {
        for column in columns.indices where !queued[column].isEmpty { flush(column) }
    }

    private mutating func flush(_ column: Int) {
        let target = columns[column]
        queued[column].withUnsafeBufferPointer { rows in
            queuedBytes[column].withUnsafeBytes { bytes in
                if let hook = hooks[column] {
                    hook.load(rows, bytes: bytes, failures: &failures, names: names, in: world)
                } else {
                    _ = target.load(rows, bytes: bytes, failures: &failures, queueCritical: false)
                }
            }
        }
        for failure in failures {
            undecodable(column: column, entity: queued[column][failure.row].entity, error: failure.error)
        }
        failures.removeAll(keepingCapacity: true)
        queued[column].removeAll(keepingCapacity: true)
        queuedBytes[column].removeAll(keepingCapacity: true)
    }

    /// A value for the key: decoded into its column. One that does not decode leaves the
    /// key without a value (the newest value is the one that counts, and it is not
    /// readable by this build); its bytes stay in the file.
    mutating func put(column: Int, version: Int, payload: UnsafeRawBufferPointer, at entityIndex: UInt32) {
        let target = columns[column]
        do {
            guard version <= versions[column] else {
                throw PayloadError.invalid("version \(version) is newer than this build's \(versions[column])")
            }
            if let hook = hooks[column] {
                var failed: [LoadFailure] = []
                withUnsafePointer(to: LoadedRow(entity: entityIndex, version: version, start: 0, count: payload.count)) { row in
                    hook.load(UnsafeBufferPointer(start: row, count: 1), bytes: payload, failures: &failed, names: names, in: world)
                }
                if let failure = failed.first { throw failure.error }
            } else {
                var reader = PayloadReader(payload)
                try target.load(from: &reader, version: version, at: entityIndex)
            }
            if version < versions[column] {
                olderPayloads.insert(OlderPayload(column: column, entity: entityIndex))
            } else if !olderPayloads.isEmpty {
                olderPayloads.remove(OlderPayload(column: column, entity: entityIndex))   // a newer record of the key
            }
        } catch {
            undecodable(column: column, entity: entityIndex, error: error)
        }
    }

    /// The key has no value any more (removed by a newer record, or undecodable).
    mutating func forget(column: Int, entity: UInt32) {
        columns[column].forget(entity)
        hooks[column]?.forgetLoaded(entity, in: world)
        if !olderPayloads.isEmpty { olderPayloads.remove(OlderPayload(column: column, entity: entity)) }
    }

    private mutating func undecodable(column: Int, entity: UInt32, error: any Error) {
        undecodableRows += 1
        forget(column: column, entity: entity)
        if warned.insert(column).inserted {
            logger.warning("reload: rows of \(columns[column].componentType.typeName) kept but not loaded: \(error)")
        }
    }
}

/// A key loaded from a payload of an older version: its column and entity index.
struct OlderPayload: Hashable, Sendable {
    var column: Int
    var entity: UInt32
}
