/// A column's values decoded from stored payloads during a reload (opening thread,
/// before the world is handed to the tick thread).
extension ComponentColumn {
    @usableFromInline
    func load(from payload: inout PayloadReader, version: Int, at entityIndex: UInt32) throws {
        set(try C(from: &payload, version: version), at: entityIndex)
    }

    /// Decodes a run of rows, at most one per entity, each from its `bytes[start..<start+count]`.
    /// One call for many rows: this code runs unspecialized (through
    /// ``AnyComponentColumn``), and the metadata of `C`'s arrays is looked up once per
    /// call rather than once per row. Rows that do not decode are added to `failures`
    /// and leave their entity's value as it was.
    @usableFromInline
    func load(_ rows: UnsafeBufferPointer<LoadedRow>, bytes: UnsafeRawBufferPointer, failures: inout [LoadFailure]) {
        for (position, row) in rows.enumerated() {
            do {
                var reader = PayloadReader(UnsafeRawBufferPointer(rebasing: bytes[row.start ..< row.start + row.count]))
                set(try C(from: &reader, version: row.version), at: row.entity)
            } catch {
                failures.append(LoadFailure(row: position, error: error))
            }
        }
    }
}

/// One stored value waiting to be decoded into a column: its entity's index, its payload
/// version, and where its payload sits in the run's bytes.
@usableFromInline
struct LoadedRow {
    var entity: UInt32
    var version: Int
    var start: Int
    var count: Int
}

/// A row of a run that did not decode, by its position in the run.
@usableFromInline
struct LoadFailure {
    var row: Int
    var error: any Error
}
