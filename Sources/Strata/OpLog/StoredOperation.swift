import Foundation
import GRDB

/// How a row of `local_operations` stores this replica's operations in fewer bytes
/// (schema 21), and the SQL that gives them back whole: what `operation_log` shows, so
/// that every reader, a push to the server among them, sees the operation as it was made.
///
/// A canvas logs an operation for every changed replicated component, and a row of about
/// 80 bytes carried 35 that the row's other columns already say:
///
/// - **The id.** An operation's id only has to be unique across every replica. This
///   replica's are made from its node id and their sequence (``derivedID(node:seq:)``),
///   and the column holds NULL for such an id; an id made otherwise (an older build's,
///   a sequence past 2^56) is stored as it is.
/// - **The type's name** in a `strata.component` payload. The column `type` holds the
///   type's `component_types.id` and the payload leaves out the name's length and bytes
///   (offset 17, after the format byte and the entity's id): ``payloadSQL(type:payload:)``.
///   A name of 128 bytes or more, or one the table does not hold, stays in the payload.
/// - **The entity's id** (schema 24) in a `strata.component` payload, when it is made from
///   this document's node and a number (``EntityID/init(node:number:)``: an entity this
///   replica spawned). The column `entity` holds the number and the payload leaves out the
///   16 bytes at offset 1: ``payloadSQL(type:entity:payload:)``.
///
/// Constants, pure functions and SQL text: any thread.
enum StoredOperation {
    /// Where a `strata.component` payload's type name starts: after its format byte and entity.
    static let nameOffset = 17

    /// The id of this replica's operation `seq`: the last 8 bytes of `node` (random in a
    /// UUID of version 4 or 7), then `seq` in 7-bit groups, most significant first, one a
    /// byte (SQL's `char()` builds each as one byte below 128: ``idSQL(node:seq:)``); nil
    /// for a sequence of 2^56 or more.
    static func derivedID(node: NodeID, seq: Int64) -> EntityID? {
        guard seq > 0, seq < 1 << 56 else { return nil }
        var uuid = node.uuid.uuid   // a tuple on the stack: no allocation on the tick thread
        withUnsafeMutableBytes(of: &uuid) { bytes in
            for i in 0 ..< 8 {
                bytes[i] = bytes[8 + i]
                bytes[8 + i] = UInt8((seq >> (7 * (7 - i))) & 0x7F)
            }
        }
        return EntityID(UUID(uuid: uuid))
    }

    /// SQL for ``derivedID(node:seq:)`` of the expressions `node` and `seq`.
    static func idSQL(node: String, seq: String) -> String {
        "CAST(substr(\(node), 9, 8) || char(\(EntityIDColumn.groupsSQL(seq, 8))) AS BLOB)"
    }

    /// This replica's operations as `operation_log` shows them, `(node, seq, id, timestamp,
    /// kind, payload, logged_at)`, from `local_operations` alone: the view's first half. A
    /// read of this replica's operations (the outbox) queries it with its own `WHERE seq`:
    /// a range of the table's key in its order, where the view's union sorts every row above
    /// the range before it gives the first few.
    static let localSQL = localSQL(payload: payloadSQL(columns: ["type", "entity"]))

    /// ``localSQL`` as schema 21 made it, before `entity` (its migration still runs on older files).
    static let localSQLV21 = localSQL(payload: payloadSQL(columns: ["type"]))

    /// SQL giving the payloads of `local_operations` back whole, for a file whose table has
    /// `columns`: the payload as stored before schema 21.
    static func payloadSQL(columns: Set<String>) -> String {
        let (type, entity, payload) = ("local_operations.type", "local_operations.entity", "payload")
        if columns.contains("entity") { return payloadSQL(type: type, entity: entity, payload: payload) }
        return columns.contains("type") ? payloadSQL(type: type, payload: payload) : payload
    }

    private static func localSQL(payload: String) -> String {
        """
        SELECT \(EntityIDColumn.nodeSQL) AS node, seq,
               coalesce(id, \(idSQL(node: EntityIDColumn.nodeSQL, seq: "seq"))) AS id, timestamp,
               \(OperationKindCode.decodeSQL("kind")) AS kind, \(payload) AS payload,
               timestamp >> 16 AS logged_at
        FROM local_operations
        """
    }

    /// SQL giving a stored row's payload back whole: the type's name (its length, one
    /// byte, then its bytes) put back at ``nameOffset`` when `type` is set. NULL when the
    /// name is missing from `component_types` (a damaged table): the row does not read.
    static func payloadSQL(type: String, payload: String) -> String {
        """
        CASE WHEN \(type) IS NULL THEN \(payload) ELSE CAST(substr(\(payload), 1, \(nameOffset)) || \
        (SELECT char(length(CAST(name AS BLOB))) || name FROM component_types WHERE id = \(type)) || \
        substr(\(payload), \(nameOffset + 1)) AS BLOB) END
        """
    }

    /// SQL giving a stored row's payload back whole, the entity's id first (put back at
    /// offset 1 when `entity` is set), then the type's name (``payloadSQL(type:payload:)``).
    /// NULL when `entity` is not a number an id is made from (damage): the row does not read.
    static func payloadSQL(type: String, entity: String, payload: String) -> String {
        let id = EntityIDColumn.derivedSQL(node: EntityIDColumn.nodeSQL, number: entity)
        let whole = """
            CASE WHEN \(entity) IS NULL THEN \(payload) \
            WHEN typeof(\(entity)) = 'integer' AND \(entity) BETWEEN 1 AND \(EntityID.highestDerivedNumber) \
            THEN CAST(substr(\(payload), 1, 1) || \(id) || substr(\(payload), 2) AS BLOB) END
            """
        return payloadSQL(type: type, payload: "(\(whole))")
    }

    /// The stored form of a `strata.component` payload (of format 1 or 2, its name left
    /// out or not) whose entity's id is made from `node` and a number: the payload without
    /// the id, and the number.
    static func withoutEntity(_ payload: [UInt8], node: NodeID) -> (stored: [UInt8], number: EntityNumber)? {
        guard payload.count >= nameOffset, payload[0] == ReplicatedOperation.format || payload[0] == ReplicatedOperation.defaultFormat,
              let id = payload.withUnsafeBytes({ EntityID(bytes: UnsafeRawBufferPointer(rebasing: $0[1 ..< nameOffset])) }),
              let number = id.derivedNumber(node: node)
        else { return nil }
        return ([payload[0]] + payload[nameOffset...], number)
    }

    /// Whether `db`'s `local_operations` leaves entity ids out of rows (schema 24 on).
    static func storesEntityNumbers(_ db: Database) throws -> Bool {
        try db.tableExists("local_operations") && db.columns(in: "local_operations").contains { $0.name == "entity" }
    }

    /// Whether `db`'s `local_operations` stores rows this way (schema 21 on); a file of an
    /// older schema, read as it is, is read through its own view.
    static func isStoredShort(_ db: Database) throws -> Bool {
        try db.tableExists("local_operations") && db.columns(in: "local_operations").contains { $0.name == "type" }
    }

    /// The stored form of a `strata.component` payload of format 1 or 2: the payload
    /// without its type's name, if the name can be left out (1–127 bytes).
    static func withoutName(_ payload: [UInt8]) -> (stored: [UInt8], name: ArraySlice<UInt8>)? {
        guard payload.count > nameOffset, payload[0] == ReplicatedOperation.format || payload[0] == ReplicatedOperation.defaultFormat
        else { return nil }
        let length = Int(payload[nameOffset])
        guard length >= 1, length < 128, nameOffset + 1 + length <= payload.count else { return nil }
        return (Array(payload[..<nameOffset] + payload[(nameOffset + 1 + length)...]), payload[(nameOffset + 1) ..< (nameOffset + 1 + length)])
    }
}
