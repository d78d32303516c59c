import ArgumentParser
import Foundation
import Strata

/// `strata oplog PATH`: the operation log of a document, read without changing it.
struct OplogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oplog",
        abstract: "Show a document's operation log: per node, the operations, the vector clock and the gaps; then operations.",
        discussion: "Without --node, lists the operations of every node, in node order. --json prints keys node_id, nodes and operations.")

    @Argument(help: "The database file.")
    var path: String

    @Option(help: "Only this node's operations (its id, as `strata inspect` shows it).")
    var node: String?

    @Option(help: "Only operations after this sequence number (with --node).")
    var after: Int64 = 0

    @Option(help: "At most this many operations.")
    var limit = 100

    @Flag(help: "Print JSON (a stable interface for scripts).")
    var json = false

    func validate() throws {
        if limit < 1 { throw ValidationError("--limit must be at least 1") }
        if let node, UUID(uuidString: node) == nil { throw ValidationError("--node must be a node id (a UUID), not \"\(node)\"") }
        if after != 0 && node == nil { throw ValidationError("--after needs --node") }
    }

    func run() throws {
        do {
            let reader = try OperationLogReader(path: path)
            let summary = try reader.summary()
            let operations: [LoggedOperation]
            if let node = node.flatMap(UUID.init(uuidString:)).map(NodeID.init) {
                operations = try reader.operations(of: node, after: after, limit: limit)
            } else {
                operations = try reader.missing(for: [:], limit: limit).operations
            }
            let me = try reader.nodeID()
            if json {
                say(try render(json: me, summary, operations))
            } else {
                say("node id   \(me?.description ?? "none")")
                for (node, s) in summary.sorted(by: { $0.key.description < $1.key.description }) {
                    var gaps = s.gaps.isEmpty ? "no gaps" : "gaps " + s.gaps.map { "\($0.lowerBound)–\($0.upperBound)" }.joined(separator: ", ")
                    if s.dropped > 0 { gaps += ", 1–\(s.dropped) dropped (acknowledged by every peer)" }
                    say("\(node)\(node == me ? " (this replica)" : "")  \(s.count) operations, highest \(s.highest), "
                        + "vector clock \(s.vectorClock.map(String.init) ?? "-"), \(gaps)")
                }
                for op in operations {
                    say("  \(op.node) #\(op.seq)  \(op.timestamp)  \(op.kind)  \(op.payload.count) bytes  id \(op.id)")
                }
            }
        } catch let error as StoreError {
            printError("strata oplog: \(error)")
            throw ExitCode.failure
        }
    }

    private func render(json me: NodeID?, _ summary: [NodeID: OperationLogReader.NodeSummary], _ operations: [LoggedOperation]) throws -> String {
        let nodes: [String: Any] = Dictionary(uniqueKeysWithValues: summary.map { node, s in
            (node.description, [
                "count": s.count, "highest": s.highest, "vector_clock": s.vectorClock as Any? ?? NSNull(),
                "gaps": s.gaps.map { [$0.lowerBound, $0.upperBound] }, "dropped": s.dropped,
            ] as [String: Any])
        })
        let list: [[String: Any]] = operations.map { op in
            ["node": op.node.description, "seq": op.seq, "id": op.id.description, "timestamp": op.timestamp.rawValue,
             "timestamp_ms": op.timestamp.milliseconds, "kind": op.kind, "payload_base64": Data(op.payload).base64EncodedString()]
        }
        let object: [String: Any] = ["node_id": me?.description as Any? ?? NSNull(), "nodes": nodes, "operations": list]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
