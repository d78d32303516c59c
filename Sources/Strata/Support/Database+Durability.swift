import GRDB

extension Database {
    /// Runs `body` (which commits a transaction) with `synchronous=FULL` when `durability`
    /// is ``Durability/full``, so that its commit syncs the WAL; the connection is back to
    /// `NORMAL`, its usual setting (`Store.swift`), afterwards, whatever `body` did. The one
    /// place a commit's durability is chosen: batches, request groups, the session marks.
    func committing<T>(_ durability: Durability, _ body: () throws -> T) throws -> T {
        guard durability == .full else { return try body() }
        try execute(sql: "PRAGMA synchronous = FULL")
        defer { try? execute(sql: "PRAGMA synchronous = NORMAL") }
        return try body()
    }
}
