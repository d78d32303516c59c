import Foundation
import GRDB

/// The small numbers a stored ``ReplicaState`` (payload version 3) names its stamps by, as
/// the writer resolves them: a node by its row in `replica_nodes`, a type by its id in
/// `component_types`. A number resolved inside a transaction is kept only once it commits
/// (a rolled-back insert leaves no row behind it). Writer thread (``SegmentAppender``).
final class StampIndex {
    private var nodes: [Node: Int64]?
    private var types: [String: Int64] = [:]
    private var provisionalNodes: [(Node, Int64)] = []
    private var provisionalTypes: [(String, Int64)] = []
    /// The last name resolved: a state's stamps come in name order, of the same few types.
    private var lastType: (name: String, id: Int64)?

    /// A node as a stamp holds it: its 16 bytes as two big-endian halves.
    struct Node: Hashable {
        var high: UInt64
        var low: UInt64

        init(_ stamp: OperationStamp) { (high, low) = (stamp.nodeHigh, stamp.nodeLow) }

        var bytes: Data {
            var data = Data(capacity: 16)
            withUnsafeBytes(of: high.bigEndian) { data.append(contentsOf: $0) }
            withUnsafeBytes(of: low.bigEndian) { data.append(contentsOf: $0) }
            return data
        }
    }

    /// The number of the node that made `stamp`, given it on first use.
    func number(ofNodeOf stamp: OperationStamp, _ db: Database) throws -> Int64 {
        let node = Node(stamp)
        if nodes == nil { nodes = try Self.readNodes(db) }
        if let known = nodes?[node] { return known }
        if let pending = provisionalNodes.first(where: { $0.0 == node }) { return pending.1 }
        let bytes = node.bytes
        try db.execute(sql: "INSERT INTO replica_nodes (node) VALUES (?) ON CONFLICT (node) DO NOTHING", arguments: [bytes])
        guard let number = try Int64.fetchOne(db, sql: "SELECT idx FROM replica_nodes WHERE node = ?", arguments: [bytes]) else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "replica_nodes has no row for a node right after inserting it")
        }
        provisionalNodes.append((node, number))
        return number
    }

    /// `name`'s `component_types.id`, interned on first use.
    func number(ofType name: String, _ db: Database) throws -> Int64 {
        if let lastType, lastType.name == name { return lastType.id }
        let id: Int64
        if let known = types[name] {
            id = known
        } else if let pending = provisionalTypes.first(where: { $0.0 == name }) {
            id = pending.1
        } else {
            id = try ComponentTypeNames.intern(name, db)
            provisionalTypes.append((name, id))
        }
        lastType = (name, id)
        return id
    }

    func didCommit() {
        for (node, number) in provisionalNodes { nodes?[node] = number }
        for (name, id) in provisionalTypes { types[name] = id }
        provisionalNodes.removeAll()
        provisionalTypes.removeAll()
    }

    /// What the transaction resolved is gone with it; what earlier commits resolved stays.
    func didRollBack() {
        provisionalNodes.removeAll()
        provisionalTypes.removeAll()
        lastType = nil   // may be provisional
    }

    private static func readNodes(_ db: Database) throws -> [Node: Int64] {
        var nodes: [Node: Int64] = [:]
        for (idx, stamp) in try StampNames.readNodes(db) { nodes[Node(stamp)] = idx }
        return nodes
    }
}

/// What a reload needs to read stored stamps of payload version 3: the node of each number
/// in `replica_nodes`, the name of each `component_types.id`, and the world's replicated
/// column of each type id. Opening thread (a reload, a history read).
struct StampNames {
    var nodes: [Int64: OperationStamp] = [:]
    var typeNames: [Int64: String] = [:]
    /// The world's replicated column by type id (a type this build replicates).
    var columns: [Int64: Int] = [:]

    init() {}

    init(_ db: Database, world: World) throws {
        nodes = try Self.readNodes(db)
        typeNames = try ComponentTypeNames.all(db)
        for (id, name) in typeNames {
            if let column = world.columnByName[name], world.replicas.stamps.keeps(column) { columns[id] = column }
        }
    }

    /// Each numbered node, as a stamp of time 0 (a row that does not read is left out: a
    /// state naming it does not decode, and stays in the file).
    static func readNodes(_ db: Database) throws -> [Int64: OperationStamp] {
        guard try db.tableExists("replica_nodes") else { return [:] }
        var nodes: [Int64: OperationStamp] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT idx, node FROM replica_nodes") {
            guard let idx = row.value("idx", as: Int64.self), let node = OperationLogReader.node(row) else { continue }
            nodes[idx] = OperationStamp(timestamp: HybridTimestamp(rawValue: 0), node: node)
        }
        return nodes
    }
}
