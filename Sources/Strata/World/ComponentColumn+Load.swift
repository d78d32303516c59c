/// A column's values decoded from payloads: stored rows during a reload (opening thread,
/// before the world is handed to the tick thread), and pulled values of other devices
/// (tick thread, `StagedValues.swift`).
extension ComponentColumn {
    @usableFromInline
    func load(from payload: inout PayloadReader, version: Int, at entityIndex: UInt32) throws {
        set(try C(from: &payload, version: version), at: entityIndex)
    }

    /// Decodes a run of rows, at most one per entity, each from its `bytes[start..<start+count]`.
    /// Rows that do not decode are added to `failures` and leave their entity's value as
    /// it was. The loop runs in ``Component/_strataLoad(_:_:)``, specialized for `C` where
    /// its conformance is compiled (as the drain's does, `ComponentColumn+Drain.swift`):
    /// reached through ``AnyComponentColumn`` it would run unspecialized, every decode,
    /// value copy and append going through `C`'s runtime metadata (a pull or a reload
    /// decodes thousands of values).
    ///
    /// With `queueCritical` (pulled values), each value decoded is also queued for the
    /// critical tier (ephemeral types excepted), in the same specialized loop; returns
    /// true if that made it the column's first queued key (the tracker must hear of it).
    @usableFromInline
    func load(_ rows: UnsafeBufferPointer<LoadedRow>, bytes: UnsafeRawBufferPointer, failures: inout [LoadFailure],
              queueCritical: Bool = false) -> Bool {
        var context = ColumnLoadContext(rows: rows, bytes: bytes, failures: [], queueCritical: queueCritical)
        swap(&context.failures, &failures)
        withUnsafeMutablePointer(to: &context) { C._strataLoad(self, UnsafeMutableRawPointer($0)) }
        swap(&context.failures, &failures)
        return context.queuedFirst
    }

    @inlinable @inline(__always)
    func loadRun(_ context: inout ColumnLoadContext) {
        let (rows, bytes) = (context.rows, context.bytes)
        let queue = context.queueCritical && C.tier != .ephemeral
        for position in rows.indices {
            let row = rows[position]
            do {
                var reader = PayloadReader(UnsafeRawBufferPointer(rebasing: bytes[row.start ..< row.start + row.count]))
                set(try C(from: &reader, version: row.version), at: row.entity)
                if queue, queueCritical(row.entity) { context.queuedFirst = true }
            } catch {
                context.failures.append(LoadFailure(row: position, error: error))
            }
        }
    }
}

/// What ``Component/_strataLoad(_:_:)`` works on, behind a raw pointer: the requirement
/// is public, these types are not.
@usableFromInline
struct ColumnLoadContext {
    @usableFromInline var rows: UnsafeBufferPointer<LoadedRow>
    @usableFromInline var bytes: UnsafeRawBufferPointer
    @usableFromInline var failures: [LoadFailure]
    @usableFromInline var queueCritical: Bool
    @usableFromInline var queuedFirst = false

    @usableFromInline
    init(rows: UnsafeBufferPointer<LoadedRow>, bytes: UnsafeRawBufferPointer, failures: [LoadFailure], queueCritical: Bool) {
        self.rows = rows
        self.bytes = bytes
        self.failures = failures
        self.queueCritical = queueCritical
    }
}

extension Component {
    /// Strata's decoding of a run of stored values into a column of this type (see
    /// `ComponentColumn+Load.swift`). Provided by Strata; do not implement it.
    @inlinable
    public static func _strataLoad(_ column: AnyObject, _ context: UnsafeMutableRawPointer) {
        let context = context.assumingMemoryBound(to: ColumnLoadContext.self)
        unsafeDowncast(column, to: ComponentColumn<Self>.self).loadRun(&context.pointee)
    }
}

/// One stored value waiting to be decoded into a column: its entity's index, its payload
/// version, and where its payload sits in the run's bytes.
@usableFromInline
struct LoadedRow {
    @usableFromInline var entity: UInt32
    @usableFromInline var version: Int
    @usableFromInline var start: Int
    @usableFromInline var count: Int
}

/// A row of a run that did not decode, by its position in the run.
@usableFromInline
struct LoadFailure {
    var row: Int
    var error: any Error

    @usableFromInline
    init(row: Int, error: any Error) {
        self.row = row
        self.error = error
    }
}
