import GRDB

/// Values of another type than their column's: SQLite keeps whatever a column is given
/// (damage, a hand edit, another tool), and the engine reads around such a value where it
/// meets it (`Row+Values.swift`). `strata doctor` counts them, per table and column, so that
/// a row the engine passes over is not a silent one.
extension DoctorReport {
    /// Per `table.column`, the rows whose value is not of the column's declared type (NULL
    /// where the column is NOT NULL included); columns without a declared type take anything.
    /// One scan per table. Empty if the file cannot be read that far.
    static func valuesOfAnotherType(_ db: Database) -> [String: Int] {
        var found: [String: Int] = [:]
        let tables = (try? String.fetchAll(db, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")) ?? []
        for table in tables {
            guard let columns = try? Row.fetchAll(db, sql: "SELECT name, type, \"notnull\" FROM pragma_table_info(?)", arguments: [table])
            else { continue }
            var checks: [(column: String, condition: String)] = []
            for column in columns {
                guard let name = column.value("name", as: String.self), let declared = column.value("type", as: String.self),
                      let types = expectedTypes(declared) else { continue }
                let allowed = types + (column.value("notnull", as: Int.self) == 1 ? [] : ["null"])
                let quoted = "\"\(name.replacingOccurrences(of: "\"", with: "\"\""))\""
                checks.append((name, "typeof(\(quoted)) NOT IN (\(allowed.map { "'\($0)'" }.joined(separator: ", ")))"))
            }
            guard !checks.isEmpty else { continue }
            let sums = checks.map { "coalesce(sum(\($0.condition)), 0)" }.joined(separator: ", ")
            guard let row = try? Row.fetchOne(db, sql: "SELECT \(sums) FROM \"\(table)\"") else { continue }
            for (index, check) in checks.enumerated() {
                if let count = row.value(at: index, as: Int.self), count > 0 { found["\(table).\(check.column)"] = count }
            }
        }
        return found
    }

    /// The storage classes a declared type holds (SQLite's affinity rules, section 3.1 of
    /// its datatype page): nil for a column that takes anything.
    static func expectedTypes(_ declared: String) -> [String]? {
        let type = declared.uppercased()
        if type.contains("INT") { return ["integer"] }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return ["text"] }
        if type.contains("BLOB") { return ["blob"] }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return ["real", "integer"] }
        return nil
    }
}
