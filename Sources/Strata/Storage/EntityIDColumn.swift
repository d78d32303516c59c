import Foundation
import GRDB

/// `entities.id` as every reader sees it (schema 23). A row whose id is made from the
/// document's node and the row's number (``EntityID/init(node:number:)``: every entity
/// this document spawned itself) stores NULL there, 16 bytes fewer in the row and in the
/// id index; a row of any other id (a peer's entity, an older build's, one the host
/// gave) stores it as it is. Waiting spawns (`pending_entities`) store theirs whole: a NULL
/// id there says "despawn".
///
/// The readers: the reload and the digest make the id in Swift (``id(stored:number:node:)``),
/// the SQL readers with ``sql(_:)``; a lookup by id matches both forms (``matching(_:)``).
/// A restore, which gives the document a new node, writes the ids out first.
///
/// Pure functions and SQL text; the reads run on the caller's connection.
enum EntityIDColumn {
    /// The document's node id, as SQL.
    static let nodeSQL = "(SELECT node_id FROM replica WHERE id = 1)"

    /// SQL for the id made from the expressions `node` and `number`: NULL if either is
    /// (a row a `LEFT JOIN` did not find).
    static func derivedSQL(node: String, number: String) -> String {
        "CASE WHEN (\(number)) IS NOT NULL THEN CAST(substr(\(node), 9, 8) || char(\(EntityID.derivedTag), \(groupsSQL(number, 7))) AS BLOB) END"
    }

    /// The arguments of SQL's `char()` for the last `count` 7-bit groups of `value`, most
    /// significant first: each one byte below 128 (ids made from a number or a sequence).
    static func groupsSQL(_ value: String, _ count: Int) -> String {
        (0 ..< count).map { i in "((\(value)) >> \(7 * (count - 1 - i))) & 127" }.joined(separator: ", ")
    }

    /// SQL for the whole id of the row `table` (`entities`, or its alias in a join).
    static func sql(_ table: String = "entities") -> String {
        "coalesce(\(table).id, \(derivedSQL(node: nodeSQL, number: "\(table).num")))"
    }

    /// The document's node id; nil before the first open made it, or if it does not read.
    /// `table`: `replica`, or its second copy `replica_copy` (schema 25).
    static func node(_ db: Database, in table: String = "replica") throws -> NodeID? {
        guard try db.tableExists(table) else { return nil }
        let data = try Data.fetchOne(db.cachedStatement(sql: "SELECT node_id FROM \(table) WHERE id = 1"))
        return data.flatMap { data in data.withUnsafeBytes { NodeID(bytes: $0) } }
    }

    /// Triggers that keep `replica.numbers_through` (schema 23): a row of `entities` or
    /// `pending_entities` deleted above it raises it to its number. A commit of many
    /// despawns deletes their rows highest first, so it updates the row once; a compaction
    /// step deletes at most 256, lowest first, and updates it for those above the highest
    /// deleted before (none, mostly).
    /// In `pending_entities`, only a despawn's row counts (`id` NULL): a spawn's row is
    /// deleted when it moves into `entities`, where its number goes on.
    static let numbersThroughTriggers = [("entities", ""), ("pending_entities", "old.id IS NULL AND ")].map { table, despawn in
        """
        CREATE TRIGGER \(table)_numbers_through AFTER DELETE ON \(table)
        WHEN \(despawn)typeof(old.num) = 'integer' AND old.num > (SELECT numbers_through FROM replica WHERE id = 1)
        BEGIN UPDATE replica SET numbers_through = old.num WHERE id = 1; END;
        """
    }.joined(separator: "\n")

    /// The highest number a deleted row of `entities` or despawn row of `pending_entities` had
    /// (`replica.numbers_through`, kept by triggers): a new entity's number is above it, so
    /// that no id made from a number is ever made twice. Nil before schema 23 (or if it
    /// does not read).
    static func numbersThrough(_ db: Database) throws -> EntityNumber? {
        guard try db.tableExists("replica"), try db.columns(in: "replica").contains(where: { $0.name == "numbers_through" }) else { return nil }
        return try EntityNumber.fetchOne(db, sql: "SELECT numbers_through FROM replica WHERE id = 1 AND typeof(numbers_through) = 'integer'")
    }

    /// The id of a row numbered `number` that stores `stored` (nil: NULL); nil if it does
    /// not read (a damaged id, or NULL where no id can be made).
    @inline(__always)
    static func id(stored: UnsafeRawBufferPointer?, number: EntityNumber, node: NodeID?) -> EntityID? {
        guard let stored else { return node.flatMap { EntityID(node: $0, number: number) } }
        return EntityID(bytes: stored)
    }

    /// Whether the row of `id` numbered `number` stores NULL in the document of `node`.
    @inline(__always)
    static func isDerived(_ id: EntityID, number: EntityNumber, node: NodeID?) -> Bool {
        guard let node, let derived = EntityID(node: node, number: number) else { return false }
        return derived == id
    }

    /// A condition that holds for the row of an id in `table` (`entities` or its alias),
    /// with two arguments: ``arguments(for:_:)``.
    static func matching(_ table: String = "entities") -> String {
        "(\(table).id = ? OR (\(table).id IS NULL AND \(table).num = ?))"
    }

    /// The arguments of ``matching(_:)`` for `id`: its bytes, and the number it was made
    /// from in this document (NULL if none).
    static func arguments(for id: EntityID, _ db: Database) throws -> StatementArguments {
        let number = try node(db).flatMap { id.derivedNumber(node: $0) }
        return [id.withBytes { Data($0) }, number]
    }
}
