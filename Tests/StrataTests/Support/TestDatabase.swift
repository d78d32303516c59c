import Foundation
import GRDB
import Logging
import Testing
@testable import Strata
import StrataTesting

/// A temporary directory with a database path, removed when the test ends.
final class TestDirectory {
    let url: URL

    init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-tests-\(safe)-\(UUID().uuidString.prefix(8))")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    var databasePath: String { url.appendingPathComponent("test.db").path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Builds engines on a temporary database in virtual time.
struct EngineFixture {
    let directory: TestDirectory
    let clock = ManualClock()
    var config = StrataConfig()
    var options = Engine.Options()

    init(_ name: String = #function) {
        directory = TestDirectory(name)
        config.database.path = directory.databasePath
        config.writer.retryInitialBackoff = .milliseconds(1)
        config.writer.retryMaxBackoff = .milliseconds(5)
        options.clock = clock
    }

    func open() throws -> Engine {
        try Engine.open(config: config, components: testComponents, logger: quietLogger, options: options)
    }

    /// A separate read connection onto the database, as another process would see it.
    func reader() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: directory.databasePath, configuration: configuration)
    }

    func count(_ sql: String, _ arguments: StatementArguments = []) throws -> Int {
        let queue = try reader()
        defer { try? queue.close() }
        return try queue.read { try Int.fetchOne($0, sql: sql, arguments: arguments) ?? 0 }
    }

    /// Live entities: despawned ones whose rows wait for compaction are left out, spawned ones counted.
    func entityCount() throws -> Int {
        // One statement, one snapshot: compaction may move a waiting spawn into `entities` between two.
        try count("""
            SELECT (SELECT count(*) FROM entities WHERE \(PendingEntities.Layout.current.live("num")))
                 + (SELECT count(*) FROM pending_entities WHERE id IS NOT NULL AND \(PendingEntities.Layout.current.live("num")))
            """)
    }

    /// The file as a reload would read it.
    func persisted() throws -> PersistedComponents { try PersistedComponents.read(directory.databasePath) }
    func componentCount(_ type: any Component.Type) throws -> Int { try persisted().count(type) }
    /// Entities whose `C` is `value` in the file.
    func count<C: Component>(persisted value: C) throws -> Int { try persisted().count(value) }
}

/// Tests log nothing: assertions say what matters.
let quietLogger = Logger(label: "strata.tests", factory: { _ in SwiftLogNoOpLogHandler() })

/// An index of ``writeTitlesAndOperations(_:count:)``'s document that a clean open never
/// reads (the jobs' unique index on entity and kind): damage there goes unseen until the
/// idle integrity check.
let quietIndex = "sqlite_autoindex_jobs_1"

/// Overwrites a leaf page of `name` (a table or an index; a LIKE pattern), the `skip`-th
/// in page order, with garbage, and returns how many cells it held. The WAL is first
/// checkpointed into the file by a connection of its own, so that the page read from the
/// file is the current one (and a running engine's connection sees the file changed).
@discardableResult
func damageLeafPage(of name: String, skip: Int, in path: String) throws -> Int {
    let queue = try DatabaseQueue(path: path)
    let (page, cells, pageSize) = try queue.writeWithoutTransaction { db -> (Int, Int, Int) in
        try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        guard let row = try Row.fetchOne(db, sql: """
            SELECT pageno, ncell FROM dbstat WHERE name LIKE ? AND pagetype = 'leaf' ORDER BY pageno LIMIT 1 OFFSET ?
            """, arguments: [name, skip]) else {
            throw DatabaseError(message: "no leaf page \(skip) of \(name)")
        }
        return (row["pageno"], row["ncell"], try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096)
    }
    try queue.close()
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    try handle.seek(toOffset: UInt64((page - 1) * pageSize))
    try handle.write(contentsOf: Data(repeating: 0xA5, count: pageSize))
    try handle.close()
    return cells
}

/// A document of `count` entities with a Title and a job each and `count` operations,
/// shut down cleanly. The jobs' unique index on (entity, kind) is one no clean open
/// reads (``quietIndex``).
func writeTitlesAndOperations(_ fixture: EngineFixture, count: Int) throws {
    let engine = try fixture.open()
    for i in 0 ..< count {
        let entity = engine.world.spawn(Title("title \(i)"))
        engine.jobs.enqueueSoon("test.job", for: engine.world.id(of: entity)!)
    }
    for i in 0 ..< count { engine.appendOperation(kind: "shape.create", payload: [UInt8(i & 0xFF)]) }
    try engine.shutdown()
}

/// A logger whose messages a test reads back.
final class CapturedLog: @unchecked Sendable {
    // @unchecked Sendable: `lines` is guarded by `lock`.
    private let lock = NSLock()
    private var lines: [String] = []

    var messages: [String] { lock.withLock { lines } }

    var logger: Logger {
        Logger(label: "strata.tests") { _ in Handler(log: self) }
    }

    fileprivate func append(_ line: String) { lock.withLock { lines.append(line) } }

    struct Handler: LogHandler {
        let log: CapturedLog
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            log.append("\(event.level): \(event.message)")
        }
    }
}

/// A file an older build left: a temporary database migrated up to the migration whose
/// identifier starts with `prefix` ("v21:"). The caller removes `path`.
func olderSchemaFile(upTo prefix: String) throws -> (queue: DatabaseQueue, path: String) {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("older-schema-\(UUID()).sqlite").path
    let queue = try DatabaseQueue(path: path)
    let migration = try #require(Store.migrator.migrations.first { $0.hasPrefix(prefix) })
    try Store.migrator.migrate(queue, upTo: migration)
    return (queue, path)
}
