import GRDB

extension Store {
    /// The full checks SQLite offers: `PRAGMA integrity_check` (every page, every index
    /// against its table) and `PRAGMA foreign_key_check` (no row whose parent is gone: a
    /// component without its entity). Returns the problems found, none if the file is sound.
    ///
    /// Reads the whole file: seconds for a large document. Any thread; it waits for the
    /// writer's current transaction.
    public func verify() throws -> [String] {
        do {
            return try queue.read { db in
                var problems = try String.fetchAll(db, sql: "PRAGMA integrity_check").filter { $0 != "ok" }
                for row in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") {
                    problems.append("foreign key: row \(row.value("rowid", as: Int64.self) ?? -1) of \(row.value("table", as: String.self) ?? "?") has no parent in \(row.value("parent", as: String.self) ?? "?")")
                }
                return problems
            }
        } catch {
            throw StoreError(.read, wrapping: error, path: location.path)
        }
    }
}
