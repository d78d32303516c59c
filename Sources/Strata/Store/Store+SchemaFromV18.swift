import GRDB

extension Store {
    static func registerFromV18(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v18: repairs: where each damaged original was set aside, and what its salvage kept") { db in
            // A salvage builds the new document beside the old one and records, in the new
            // file, the original it was made from (`Repair.swift`): `strata doctor` names it,
            // and a later salvage copies the rows, so the record goes on from file to file.
            try db.execute(sql: """
                CREATE TABLE repairs (
                    id INTEGER PRIMARY KEY,
                    repaired_at INTEGER NOT NULL,
                    set_aside TEXT NOT NULL,
                    cause TEXT NOT NULL,
                    report TEXT NOT NULL
                );
                PRAGMA user_version = 18;
                """)
        }
    }
}
