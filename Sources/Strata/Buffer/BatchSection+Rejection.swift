/// How each section's rows are parked when a commit refuses them (``RejectedWrite``;
/// `Writer+Rejection.swift` decides when).
extension BatchSection {
    /// This section's rows of `batch` as rows to park, refused at `now` (Unix milliseconds)
    /// with `error`. `entityID` finds an entity's stable id by its number in the file. A
    /// replayed rejection's deletion is not a row to park: it has none.
    func rejected(in batch: WriteBatch, now: Int64, error message: String,
                  entityID id: (EntityNumber) -> EntityID?) -> [RejectedWrite] {
        switch self {
        case .entityDeletes:
            batch.entityDeletes.map { number in
                RejectedWrite(rejectedAt: now, error: message, kind: .entityDelete, entity: id(number), entityNumber: number)
            }
        case .entityInserts:
            batch.entityInserts.map { insert in
                RejectedWrite(rejectedAt: now, error: message, kind: .entityInsert, entity: insert.id, entityNumber: insert.number)
            }
        case .settings:
            batch.settingWrites.map { write in
                RejectedWrite(rejectedAt: now, error: message, kind: write.value == nil ? .settingRemoval : .setting,
                              name: write.key, payload: write.value.map { Array($0.storageText.utf8) })
            }
        case .operations:
            batch.operations.map { operation in
                RejectedWrite(rejectedAt: now, error: message, kind: .operation, entity: operation.node,
                              name: operation.kind, number: operation.seq, payload: operation.payload,
                              operationID: operation.id, timestamp: operation.timestamp.rawValue)
            }
        case .vectorClock:
            batch.vectorClockRows.map { node, seq in
                RejectedWrite(rejectedAt: now, error: message, kind: .vectorClock, entity: node, number: seq)
            }
        case .peerAcks:
            batch.peerAcks.map { ack in
                RejectedWrite(rejectedAt: now, error: message, kind: .peerAck, entity: ack.peer,
                              name: ack.node.description, number: ack.seq)
            }
        case .replayedRejections:
            []
        case .components:
            batch.writes.map { write in
                var payload: [UInt8]?
                var version: Int64?
                if let value = write.value {
                    var writer = PayloadWriter()
                    value.encode(to: &writer)
                    payload = writer.encodingFailure == nil ? writer.bytes : nil   // the error says why
                    // A stored state is parked self-contained: it reads without the document's numbers.
                    version = Int64(value is any StampIndexed ? ReplicaState.selfContainedVersion : type(of: value).payloadVersion)
                }
                return RejectedWrite(rejectedAt: now, error: message, kind: write.value == nil ? .componentRemoval : .component,
                                     entity: id(write.entity), entityNumber: write.entity, name: write.typeName,
                                     number: version, payload: payload)
            }
        }
    }
}

extension RejectedWrite.Kind {
    /// The section its rows come from (and go back to when replayed: `Engine+RejectedWrites.swift`);
    /// nil for rows no batch wrote (the salvage's).
    var section: BatchSection? {
        switch self {
        case .entityDelete: .entityDeletes
        case .entityInsert: .entityInserts
        case .setting, .settingRemoval: .settings
        case .operation: .operations
        case .vectorClock: .vectorClock
        case .peerAck: .peerAcks
        case .component, .componentRemoval: .components
        case .salvagedRow: nil
        }
    }
}
