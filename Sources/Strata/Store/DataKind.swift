/// Every kind of data a document keeps, and the tables each owns: the one list that the
/// document check (``DocumentKind``), the salvage and the start's check of the tables it
/// does not read all use. A new kind of data adds its case and its tables here (and a
/// migration); `DataKindTests` fails if a table of the schema belongs to no kind, or to two.
///
/// The cases are in the order rows may refer to each other (entities before the rows that
/// name them), which is the order the salvage copies them in.
enum DataKind: String, CaseIterable {
    /// Entities (and the spawns and despawns that wait for compaction), the component types'
    /// names, the node ids the stored stamps name, the components' base rows.
    case world
    /// The segment log of component changes, its compaction state, the rows set aside.
    case segments
    /// What `[history]` keeps beside the segment log: the flushes of the window, and the
    /// entities despawned within it with their base rows.
    case history
    /// The document's settings.
    case settings
    /// Writes the file refused, kept to be replayed.
    case rejectedWrites
    /// The operation log, this replica's id, the vector clock, the peers' acknowledgements
    /// and the floor below which operations were dropped.
    case operations
    /// The job queue.
    case jobs
    /// The files beside the document, and the ones waiting to be removed.
    case assets
    /// The outbox's state and the operations the server refused.
    case sync
    /// The session row (clean shutdowns, crashes, the last check) and the repairs that made
    /// this file (where each damaged original was set aside).
    case session
    /// GRDB's record of the migrations applied.
    case migrations

    /// How the salvage gets a table's rows out of a damaged file.
    enum Salvage: Equatable {
        /// In the order of this integer key, probing past a damaged page.
        case keyed(String)
        /// From each end up to a damaged page.
        case scanned
        /// Node by node (`Salvage.copyOperationLog`).
        case operationLog
        /// Not copied: rebuilt (the vector clock from the log; the compaction state),
        /// carried by hand (the session's counters), filled by triggers as another table is
        /// copied (the node's copy) or the new file's own (migrations).
        case notCopied
    }

    struct Table: Equatable {
        let name: String
        let salvage: Salvage
        /// Every start reads it (so its damage shows at once); the others get a
        /// `quick_check` of their own now and then (`SessionState.swift`).
        let readAtStart: Bool
    }

    var tables: [Table] {
        switch self {
        case .world:
            [Table(name: "component_types", salvage: .keyed("id"), readAtStart: true),
             Table(name: "replica_nodes", salvage: .keyed("idx"), readAtStart: true),
             Table(name: "entities", salvage: .keyed("num"), readAtStart: true),
             Table(name: "pending_entities", salvage: .keyed("seq"), readAtStart: true),
             Table(name: "components", salvage: .keyed("entity_num"), readAtStart: true)]
        case .segments:
            [Table(name: "segments", salvage: .keyed("id"), readAtStart: true),
             Table(name: "compaction_state", salvage: .notCopied, readAtStart: false),
             Table(name: "segments_set_aside", salvage: .keyed("id"), readAtStart: false)]
        case .history:
            // Not salvaged: the window's start (compaction_state) is not copied either, and a
            // window without it could claim times the base rows no longer hold. History starts
            // again in the new file.
            [Table(name: "history_flushes", salvage: .notCopied, readAtStart: false),
             Table(name: "despawned_entities", salvage: .notCopied, readAtStart: true),
             Table(name: "despawned_components", salvage: .notCopied, readAtStart: false)]
        case .settings:
            [Table(name: "settings", salvage: .scanned, readAtStart: true)]
        case .rejectedWrites:
            [Table(name: "rejected_writes", salvage: .keyed("id"), readAtStart: false)]
        case .operations:
            [Table(name: "replica", salvage: .scanned, readAtStart: false),
             // Filled by `replica`'s triggers as its row is copied; read when that row is not.
             Table(name: "replica_copy", salvage: .notCopied, readAtStart: false),
             Table(name: "local_operations", salvage: .keyed("seq"), readAtStart: true),
             Table(name: "received_operations", salvage: .operationLog, readAtStart: true),
             Table(name: "vector_clock", salvage: .notCopied, readAtStart: true),
             Table(name: "peer_acks", salvage: .scanned, readAtStart: false),
             Table(name: "operation_floor", salvage: .scanned, readAtStart: false)]
        case .jobs:
            [Table(name: "jobs", salvage: .keyed("id"), readAtStart: false)]
        case .assets:
            [Table(name: "assets", salvage: .keyed("id"), readAtStart: false),
             Table(name: "asset_trash", salvage: .scanned, readAtStart: false)]
        case .sync:
            [Table(name: "sync_state", salvage: .scanned, readAtStart: false),
             Table(name: "sync_failures", salvage: .keyed("seq"), readAtStart: false)]
        case .session:
            [Table(name: "session_state", salvage: .notCopied, readAtStart: true),
             Table(name: "repairs", salvage: .keyed("id"), readAtStart: false)]
        case .migrations:
            [Table(name: "grdb_migrations", salvage: .notCopied, readAtStart: true)]
        }
    }

    /// Every table of a document, kind by kind.
    static let allTables: [Table] = allCases.flatMap(\.tables)

    /// The kind whose table `name` is; nil for a table no kind claims.
    static func owning(table name: String) -> DataKind? {
        allCases.first { $0.tables.contains { $0.name == name } }
    }
}
