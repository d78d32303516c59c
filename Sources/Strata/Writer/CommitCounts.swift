/// What one commit wrote, for the metrics: the parts count it (``BatchPart``), the writer adds
/// it to ``PersistenceMetrics`` (``PersistenceMetrics/add(_:)``). A kind that counts more than
/// its rows adds a field here and its line there; no `Writer*.swift` file changes.
struct CommitCounts {
    /// The commit's wall-clock time (Unix ms, `Writer.Settings.wallClock`): the time its
    /// entity rows, segments and history row carry, one instant for the whole commit.
    var committedAt: Int64 = 0
    var componentPuts = 0
    var componentRemovals = 0
    var payloadBytes = 0
    /// Of `payloadBytes`, the replicated entities' stamps (`strata.replica`): the engine's own.
    var stampPayloadBytes = 0
    var entityInserts = 0
    var entityDeletes = 0
    var segmentRows = 0
    var segmentBytes = 0
    var settingWrites = 0
    var operations = 0
    var operationPayloadBytes = 0
    /// Of `operationPayloadBytes`: this replica's operations the engine derived from its
    /// synced components (Strata's kinds), and other replicas' operations received.
    var derivedOperationPayloadBytes = 0
    var receivedOperationPayloadBytes = 0
    var vectorClockRows = 0
    var operationsDropped = 0
}

extension PersistenceMetrics {
    /// Adds what one commit wrote (writer thread, under the metrics' lock).
    mutating func add(_ counts: CommitCounts) {
        componentRowsWritten += counts.componentPuts
        componentRowsDeleted += counts.componentRemovals
        entityRowsInserted += counts.entityInserts
        entityRowsDeleted += counts.entityDeletes
        settingRowsWritten += counts.settingWrites
        operationsLogged += counts.operations
        operationPayloadBytes += counts.operationPayloadBytes
        derivedOperationPayloadBytes += counts.derivedOperationPayloadBytes
        receivedOperationPayloadBytes += counts.receivedOperationPayloadBytes
        vectorClockRowsWritten += counts.vectorClockRows
        operationsDropped += counts.operationsDropped
        payloadBytesWritten += counts.payloadBytes
        stampPayloadBytesWritten += counts.stampPayloadBytes
        segmentsWritten += counts.segmentRows
        segmentBytesWritten += counts.segmentBytes
    }
}
