import Foundation
import GRDB
import Testing
@testable import Strata
import StrataTesting

/// Version 1 of `test.shield`, as the build that wrote `Fixtures/payload-v1.db` had it.
struct ShieldV1: Component {
    static let typeName = "test.shield"
    static let tier = Tier.critical
    var strength: Int32

    init(strength: Int32) { self.strength = strength }
    func encode(to payload: inout PayloadWriter) { payload.write(strength) }
    init(from payload: inout PayloadReader, version: Int) throws { strength = try payload.read() }
}

/// Version 2: a durability the old saves did not have, and strength widened to a Double.
/// It reads version 1 (strength as an integer, durability full).
struct Shield: Component {
    static let typeName = "test.shield"
    static let tier = Tier.critical
    static let payloadVersion = 2
    var strength: Double
    var durability: Float

    init(strength: Double, durability: Float) { self.strength = strength; self.durability = durability }
    func encode(to payload: inout PayloadWriter) { payload.write(strength); payload.write(durability) }
    init(from payload: inout PayloadReader, version: Int) throws {
        switch version {
        case 1:
            strength = Double(try payload.read() as Int32)
            durability = 100
        default:
            strength = try payload.read()
            durability = try payload.read()
        }
    }
}

/// A save written by an older build keeps loading after a component's encoding changes, and
/// an older build meets rows it cannot read without destroying them.
@Suite struct PayloadVersionTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/payload-v1.db")
    static let shields = 20

    /// A copy of the committed fixture: the tests never write the original.
    static func copyOfFixture(_ directory: TestDirectory) throws -> StrataConfig {
        try FileManager.default.copyItem(atPath: fixture.path, toPath: directory.databasePath)
        var config = StrataConfig()
        config.database.path = directory.databasePath
        return config
    }

    static func byTitle<C: Component>(_ type: C.Type, in world: World) -> [String: C] {
        var result: [String: C] = [:]
        world.forEach(Title.self) { entity, title in
            if let value = world.get(type, for: entity) { result[title.text] = value }
        }
        return result
    }

    /// Writes `Fixtures/payload-v1.db` with the version-1 build's types. Run by hand when
    /// the fixture must be made again: `STRATA_WRITE_FIXTURES=1 swift test --filter writeTheFixture`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_WRITE_FIXTURES"] == "1"))
    func writeTheFixture() throws {
        try? FileManager.default.removeItem(at: Self.fixture)
        var config = StrataConfig()
        config.database.path = Self.fixture.path
        let engine = try Engine.open(config: config, components: [Title.self, ShieldV1.self], logger: quietLogger)
        for index in 0 ..< Self.shields {
            engine.world.spawn(Title("shield \(index)"), ShieldV1(strength: Int32(index * 10)))
        }
        try engine.shutdown()
        for suffix in ["-wal", "-shm", ".lock"] { try? FileManager.default.removeItem(atPath: Self.fixture.path + suffix) }
    }

    @Test func aVersionTwoBuildReloadsVersionOneRows() throws {
        let directory = TestDirectory()
        let engine = try Engine.open(config: try Self.copyOfFixture(directory), components: [Title.self, Shield.self],
                                     logger: quietLogger)
        defer { try? engine.shutdown() }
        #expect(engine.recovery.loaded.undecodableRows == 0)
        let shields = Self.byTitle(Shield.self, in: engine.world)
        #expect(shields.count == Self.shields)
        for index in 0 ..< Self.shields {
            #expect(shields["shield \(index)"] == Shield(strength: Double(index * 10), durability: 100))
        }
    }

    @Test func maintenanceRewritesOlderPayloadsWhileIdleOnMains() throws {
        let directory = TestDirectory()
        var config = try Self.copyOfFixture(directory)
        config.maintenance.rewriteOldPayloads = true
        config.maintenance.rewriteStepRows = 6   // four steps, each after the last one's flush
        let clock = ManualClock()
        var options = Engine.Options()
        options.clock = clock
        do {
            let engine = try Engine.open(config: config, components: [Title.self, Shield.self], logger: quietLogger, options: options)
            #expect(engine.recovery.loaded.olderPayloadRows == Self.shields)
            #expect(engine.olderPayloadsPending == Self.shields)
            // Active on battery: nothing.
            engine.powerState = .discharging(80)
            engine.noteInput()
            engine.endTick()
            #expect(engine.olderPayloadsPending == Self.shields)
            // Idle on mains: a step, its flush, the next step, until none is left.
            engine.powerState = .charging(80)
            clock.advance(by: config.persistence.idleAfter + .seconds(1))
            for _ in 0 ..< 200 where engine.olderPayloadsPending > 0 {
                clock.advance(by: .seconds(1))
                engine.endTick()
            }
            #expect(engine.olderPayloadsPending == 0)
            try engine.shutdown()
        }
        // Every row is version 2 now: a version-1 build cannot read one of them (and keeps them all).
        let older = try Engine.open(config: config, components: [Title.self, ShieldV1.self], logger: quietLogger)
        #expect(older.recovery.loaded.undecodableRows == Self.shields)
        try older.shutdown()
        let newer = try Engine.open(config: config, components: [Title.self, Shield.self], logger: quietLogger)
        defer { try? newer.shutdown() }
        #expect(newer.recovery.loaded.olderPayloadRows == 0)
        #expect(Self.byTitle(Shield.self, in: newer.world)["shield 7"] == Shield(strength: 70, durability: 100))
    }

    @Test func rowsAreRewrittenAtTheirNextChangeAndAnOlderBuildKeepsWhatItCannotRead() throws {
        let directory = TestDirectory()
        let config = try Self.copyOfFixture(directory)
        do {
            // The version-2 build changes three shields: their rows are written as version 2.
            let engine = try Engine.open(config: config, components: [Title.self, Shield.self], logger: quietLogger)
            var changed = 0
            engine.world.forEach(Title.self) { entity, title in
                guard ["shield 1", "shield 2", "shield 3"].contains(title.text) else { return }
                engine.world.mutate(Shield.self, of: entity) { $0.durability = 50 }
                changed += 1
            }
            #expect(changed == 3)
            try engine.shutdown()
        }
        do {
            // The version-1 build reads the 17 untouched rows and refuses the 3 newer ones: kept, not loaded.
            let engine = try Engine.open(config: config, components: [Title.self, ShieldV1.self], logger: quietLogger)
            #expect(engine.recovery.loaded.undecodableRows == 3, "\(engine.recovery)")
            let shields = Self.byTitle(ShieldV1.self, in: engine.world)
            #expect(shields.count == Self.shields - 3)
            #expect(shields["shield 1"] == nil)
            #expect(shields["shield 4"] == ShieldV1(strength: 40))
            // It goes on working: a change of its own, a compaction, a clean shutdown.
            engine.world.forEach(Title.self) { entity, title in
                if title.text == "shield 4" { engine.world.mutate(ShieldV1.self, of: entity) { $0.strength = 41 } }
            }
            #expect(engine.compactNow())
            try engine.shutdown()
        }
        // The version-2 build finds its three rows as it left them, and the older build's change.
        let engine = try Engine.open(config: config, components: [Title.self, Shield.self], logger: quietLogger)
        defer { try? engine.shutdown() }
        #expect(engine.recovery.loaded.undecodableRows == 0)
        let shields = Self.byTitle(Shield.self, in: engine.world)
        #expect(shields["shield 1"] == Shield(strength: 10, durability: 50))
        #expect(shields["shield 3"] == Shield(strength: 30, durability: 50))
        #expect(shields["shield 4"] == Shield(strength: 41, durability: 100), "written as version 1 by the older build")
        #expect(shields["shield 5"] == Shield(strength: 50, durability: 100))
    }
}
