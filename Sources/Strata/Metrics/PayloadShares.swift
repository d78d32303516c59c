/// What the payload a run persisted was: the host's data (the values of its components,
/// and the operations this replica logged: its own kinds and those the engine derived from
/// its synced components, each carrying a value the host set), and beside it what is not
/// the host's: the engine's stamps (`strata.replica`) and the operations received from other
/// replicas. A report's headline is bytes written per byte of the host's data. Any thread.
package struct PayloadShares: Sendable, Equatable {
    /// The host's components' encoded values (every type but the engine's stamps).
    package var components = 0
    /// This replica's operations' payloads, and of them those the engine derived.
    package var operations = 0
    package var derivedOperations = 0
    /// The engine's overhead: the replicated entities' stamps.
    package var stamps = 0
    /// Other replicas' operations, logged here as they arrived.
    package var received = 0

    /// What the metrics counted between `start` and `end`.
    package init(_ end: PersistenceMetrics, since start: PersistenceMetrics = PersistenceMetrics()) {
        stamps = end.stampPayloadBytesWritten - start.stampPayloadBytesWritten
        components = end.payloadBytesWritten - start.payloadBytesWritten - stamps
        received = end.receivedOperationPayloadBytes - start.receivedOperationPayloadBytes
        operations = end.operationPayloadBytes - start.operationPayloadBytes - received
        derivedOperations = end.derivedOperationPayloadBytes - start.derivedOperationPayloadBytes
    }

    /// The host's data: its components and its operations.
    package var hostData: Int { components + operations }

    /// Everything persisted as payload, the overhead included.
    package var total: Int { hostData + stamps + received }

    /// `bytes` written per byte of the host's data (0 when there was none).
    package func perHostByte(_ bytes: Int) -> Double {
        hostData == 0 ? 0 : Double(bytes) / Double(hostData)
    }
}
