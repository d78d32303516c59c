import Foundation
import Strata
import StrataWire

extension SyncWire.Operation {
    init(_ operation: LoggedOperation) {
        self.init(id: operation.id.uuid, node: operation.node.uuid, seq: operation.seq, hlc: operation.timestamp.rawValue,
                  kind: operation.kind, payload: Data(operation.payload))
    }

    var logged: LoggedOperation {
        LoggedOperation(id: EntityID(id), node: NodeID(node), seq: seq, timestamp: HybridTimestamp(rawValue: hlc),
                        kind: kind, payload: [UInt8](payload))
    }
}
