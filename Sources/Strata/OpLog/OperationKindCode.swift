/// How `local_operations.kind` stores Strata's own kinds (schema 17): as small integers,
/// which SQLite stores in 0 or 1 byte. Any other kind, and one a salvage copied from an
/// older file, is its text; every reader accepts both. Constants and SQL text: any thread.
enum OperationKindCode {
    static let component: Int64 = 1
    static let despawn: Int64 = 2

    /// The value to bind for `kind`: its code, or nil for a host's kind (bound as text).
    static func code(of kind: String) -> Int64? {
        switch kind {
        case ReplicatedOperation.componentKind: component
        case ReplicatedOperation.despawnKind: despawn
        default: nil
        }
    }

    /// SQL turning a kind's text into what the column stores.
    static func encodeSQL(_ column: String) -> String {
        "CASE \(column) WHEN '\(ReplicatedOperation.componentKind)' THEN \(component) WHEN '\(ReplicatedOperation.despawnKind)' THEN \(despawn) ELSE \(column) END"
    }

    /// SQL turning what the column stores back into the kind's text.
    static func decodeSQL(_ column: String) -> String {
        "CASE \(column) WHEN \(component) THEN '\(ReplicatedOperation.componentKind)' WHEN \(despawn) THEN '\(ReplicatedOperation.despawnKind)' ELSE \(column) END"
    }

    /// The condition a despawn's row of `local_operations` meets, in either form (the
    /// despawns' partial index is on exactly this, so a query with it uses the index).
    static let despawnSQL = "kind IN (\(despawn), '\(ReplicatedOperation.despawnKind)')"
}
