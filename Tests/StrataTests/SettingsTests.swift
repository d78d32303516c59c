import Foundation
import GRDB
import Testing
@testable import Strata

/// Settings: typed, read from memory, written as critical work.
@Suite struct SettingsTests {
    struct Layout: Codable, Equatable {
        var columns: Int
        var names: [String]
    }

    func storedSettings(_ fixture: EngineFixture) throws -> [String: String] {
        try fixture.reader().read { db in
            try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT key, value FROM settings").map { ($0["key"], $0["value"]) })
        }
    }

    @Test func everyTypeReadsBackAfterARestart() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let world = engine.world
        world.setSetting(.boolean(true), for: "queue.paused")
        world.setSetting(.integer(-42), for: "sync.attempts")
        world.setSetting(.double(0.1), for: "zoom")
        world.setSetting(.string("a:b\nc"), for: "title")
        try world.setSetting(encoding: Layout(columns: 3, names: ["x", "y"]), for: "layout")
        world.setSetting(.integer(1), for: "gone")
        world.setSetting(nil, for: "gone")
        #expect(world.setting("zoom") == .double(0.1), "read from memory at once")
        try engine.shutdown()

        let next = try fixture.open()
        #expect(next.world.settings == [
            "queue.paused": .boolean(true), "sync.attempts": .integer(-42), "zoom": .double(0.1),
            "title": .string("a:b\nc"), "layout": .json(#"{"columns":3,"names":["x","y"]}"#),
        ])
        #expect(try next.world.setting("layout", as: Layout.self) == Layout(columns: 3, names: ["x", "y"]))
        #expect(throws: PayloadError.self) { try next.world.setting("zoom", as: Layout.self) }
        #expect(next.recovery.loaded.settings == 5)
        try next.shutdown()
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.settings["queue.paused"] == "b:1")
        #expect(inspection.settings["gone"] == nil)
        #expect(inspection.text.contains("queue.paused                 true"))
    }

    @Test func aSettingIsCommittedFullByTheCriticalDelayAndSurvivesACrash() throws {
        let fixture = EngineFixture()
        var engine: Engine? = try fixture.open()
        engine!.world.setSetting(.string("bold"), for: "tool")
        let delay = fixture.config.persistence.criticalFlushDelay
        fixture.clock.advance(by: delay - engine!.flushLookahead - .milliseconds(1))
        engine!.endTick()
        engine!.waitForWriter()
        #expect(try storedSettings(fixture)["tool"] == nil, "not before its deadline")

        fixture.clock.advance(by: .milliseconds(1))
        engine!.endTick()
        engine!.waitForWriter()
        #expect(try storedSettings(fixture)["tool"] == "s:bold")
        #expect(engine!.metrics.fullCommitCount == 1)
        #expect(engine!.metrics.settingRowsWritten == 1)

        engine = nil   // released without shutdown(): the session ends as a crash would
        let next = try fixture.open()
        #expect(next.recovery.crashed)
        #expect(next.world.setting("tool") == .string("bold"))
        try next.shutdown()
    }

    @Test func changesOfOneKeyBeforeAFlushAreOneWrite() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        for i in 0 ..< 100 { engine.world.setSetting(.integer(Int64(i)), for: "count") }
        engine.world.setSetting(.integer(5), for: "kept")
        engine.world.setSetting(.integer(5), for: "kept")   // unchanged: nothing more to write
        #expect(engine.world.pendingCount(.critical) == 2)
        engine.flushNow()
        #expect(engine.metrics.settingRowsWritten == 2)
        #expect(try storedSettings(fixture) == ["count": "i:99", "kept": "i:5"])
        try engine.shutdown()
    }

    @Test func storedTextReadsBackExactly() {
        let values: [SettingValue] = [
            .boolean(false), .integer(.min), .integer(.max), .double(0.1), .double(.pi), .double(-1e-300),
            .string(""), .string("s:i:1"), .json("[1,2]"),
        ]
        for value in values { #expect(SettingValue(storageText: value.storageText) == value, "\(value)") }
        for text in ["", "x", "q:1", "b:2", "i:1.5", "d:abc"] { #expect(SettingValue(storageText: text) == nil, "\(text)") }
    }

    @Test func aSettingThisBuildCannotReadIsKeptAndReported() throws {
        let fixture = EngineFixture()
        try fixture.open().shutdown()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { try $0.execute(sql: "INSERT INTO settings (key, value) VALUES ('future', 'u:128-bit')") }
        try queue.close()

        let engine = try fixture.open()
        #expect(engine.world.setting("future") == nil)
        #expect(engine.recovery.loaded.unreadableSettings == 1)
        engine.world.setSetting(.boolean(true), for: "other")
        try engine.shutdown()
        #expect(try storedSettings(fixture)["future"] == "u:128-bit", "kept untouched")
    }
}
