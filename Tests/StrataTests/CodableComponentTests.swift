import Foundation
import Testing
@testable import Strata

/// A `Codable` component with the shapes a game's data has: nested structs, optionals
/// (nested ones too), arrays, dictionaries, sets, enums with and without associated
/// values, ids, dates and bytes. No hand-written payload code.
struct CharacterSheet: Component, Codable {
    static let typeName = "test.character_sheet"
    static let tier = Tier.critical

    struct Stats: Codable, Equatable, Sendable {
        var strength: Int8
        var luck: Double
        var title: String?
    }

    enum Stance: String, Codable, Sendable { case idle, guarding }

    enum Goal: Codable, Equatable, Sendable {
        case wander
        case follow(EntityID, distance: Float)
        case collect(items: [String], deadline: Int64?)
    }

    var name: String
    var level: UInt16
    var stats: Stats
    var companion: Stats?
    var nickname: String??
    var inventory: [String: Int]
    var tags: Set<String>
    var path: [Float]
    var history: [Stats?]
    var stance: Stance
    var goals: [Goal]
    var owner: EntityID
    var seed: UUID
    var bornAt: Date
    var portrait: Data
    var score: Int64?
}

@Suite struct CodableComponentTests {
    static func sample() -> CharacterSheet {
        CharacterSheet(
            name: "Ærin", level: 42,
            stats: .init(strength: -7, luck: 0.25, title: nil),
            companion: .init(strength: 3, luck: 1, title: "hound"),
            nickname: .some(nil),
            inventory: ["arrow": 20, "potion": 2], tags: ["brave", "tired"],
            path: [1, 2.5, -3], history: [nil, .init(strength: 1, luck: 2, title: "was")],
            stance: .guarding,
            goals: [.wander, .follow(EntityID(), distance: 2.5), .collect(items: ["gem"], deadline: nil),
                    .collect(items: [], deadline: 99)],
            owner: EntityID(), seed: UUID(), bornAt: Date(timeIntervalSince1970: 1_700_000_000.5),
            portrait: Data([0, 1, 2, 255]), score: nil)
    }

    static func roundTrip<C: Component>(_ value: C) throws -> (C, Int) {
        var writer = PayloadWriter()
        value.encode(to: &writer)
        let bytes = writer.bytes
        let decoded = try bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            let decoded = try C(from: &reader, version: C.payloadVersion)
            #expect(reader.isAtEnd, "the decoder read \(reader.offset) of \(bytes.count) bytes")
            return decoded
        }
        return (decoded, bytes.count)
    }

    @Test func nestedOptionalAndCollectionFieldsRoundTrip() throws {
        let sheet = Self.sample()
        let (decoded, _) = try Self.roundTrip(sheet)
        #expect(decoded == sheet)
        // The nested optional keeps its inner nil apart from its outer one.
        #expect(decoded.nickname == .some(nil))
        var other = sheet
        other.nickname = nil
        #expect(try Self.roundTrip(other).0.nickname == .none)
    }

    @Test func theEncodingIsAsCompactAsAHandWrittenOne() throws {
        struct Transform: Component, Codable {
            static let typeName = "test.codable_transform"
            static let tier = Tier.derived
            var x: Float, y: Float, rotation: Float, scale: Float
        }
        let (decoded, size) = try Self.roundTrip(Transform(x: 1, y: 2, rotation: 3, scale: 4))
        #expect(decoded == Transform(x: 1, y: 2, rotation: 3, scale: 4))
        #expect(size == 16)   // four Floats, no keys, no framing: as `Position`'s hand-written payload
    }

    @Test func aTruncatedOrDamagedPayloadThrowsInsteadOfTrapping() throws {
        var writer = PayloadWriter()
        Self.sample().encode(to: &writer)
        let bytes = writer.bytes
        for length in stride(from: 0, to: bytes.count, by: 3) {
            let cut = Array(bytes.prefix(length))
            cut.withUnsafeBytes { buffer in
                var reader = PayloadReader(buffer)
                #expect(throws: (any Error).self) { try CharacterSheet(from: &reader, version: 1) }
            }
        }
        // A presence byte that is neither 0 nor 1.
        struct Maybe: Codable, Equatable { var value: Int? }
        [UInt8(7), 2].withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            #expect(throws: PayloadError.self) { try reader.decode(Maybe.self) }
        }
        // A value out of its type's range.
        var wide = PayloadWriter()
        wide.write(300 as Int)
        wide.bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            #expect(throws: PayloadError.self) { try reader.decode(Int8.self) }
        }
    }

    @Test func aBareNilIsRefusedAtEncode() {
        struct Custom: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encodeNil()
            }
        }
        var writer = PayloadWriter()
        #expect(throws: EncodingError.self) { try writer.encode(Custom()) }
    }

    @Test func aCustomUnkeyedContainerCountsItsElements() throws {
        struct Pair: Codable, Equatable {
            var a: Int, b: String
            init(a: Int, b: String) { self.a = a; self.b = b }
            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                #expect(container.count == 2)
                a = try container.decode(Int.self)
                b = try container.decode(String.self)
                #expect(container.isAtEnd)
            }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.unkeyedContainer()
                try container.encode(a)
                try container.encode(b)
            }
        }
        var writer = PayloadWriter()
        try writer.encode([Pair(a: -1, b: "x"), Pair(a: 300, b: "")])
        try writer.bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws in
            var reader = PayloadReader(buffer)
            #expect(try reader.decode([Pair].self) == [Pair(a: -1, b: "x"), Pair(a: 300, b: "")])
            #expect(reader.isAtEnd)
        }
    }

    @Test func aCodableComponentIsPersistedAndReloaded() throws {
        let directory = TestDirectory()
        var config = StrataConfig()
        config.database.path = directory.databasePath
        let sheet = Self.sample()
        let id: EntityID
        do {
            let engine = try Engine.open(config: config, components: [CharacterSheet.self], logger: quietLogger)
            let entity = engine.world.spawn(sheet)
            id = engine.world.id(of: entity)!
            #expect(engine.flushNow())
            try engine.shutdown()
        }
        let engine = try Engine.open(config: config, components: [CharacterSheet.self], logger: quietLogger)
        defer { try? engine.shutdown() }
        let entity = try #require(engine.world.entity(for: id))
        #expect(engine.world.get(CharacterSheet.self, for: entity) == sheet)
        #expect(engine.recovery.loaded.undecodableRows == 0)
    }
}

/// A `Codable` component whose hand-written `encode(to: Encoder)` throws for some values.
struct Fussy: Component, Codable, Equatable {
    static let typeName = "test.fussy"
    static let tier = Tier.critical
    struct Refused: Error {}
    var value: Int

    func encode(to encoder: any Encoder) throws {
        if value < 0 { throw Refused() }
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
    init(value: Int) { self.value = value }
    init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int.self) }
}

@Suite struct CodableEncodingFailureTests {
    @Test func aValueThatCannotBeEncodedIsParkedAndTheRestCommits() throws {
        // Its encoding throws on the writer thread: the process goes on, the row is rejected
        // and parked with the reason, and the rest of its batch commits.
        let fixture = EngineFixture()
        let engine = try Engine.open(config: fixture.config, components: [Fussy.self, Position.self], logger: quietLogger,
                                     options: fixture.options)
        defer { try? engine.shutdown() }
        let good = engine.world.spawn(Fussy(value: 7))
        let bad = engine.world.spawn(Fussy(value: -1))
        engine.world.spawn(Position(x: 1, y: 2))
        #expect(engine.flushNow())
        let parked = try engine.rejectedWrites()
        #expect(parked.count == 1, "\(parked)")
        #expect(parked.first?.entity == engine.world.id(of: bad))
        #expect(parked.first?.error.contains("test.fussy: its Codable encoding failed") == true, "\(parked)")
        #expect(try fixture.count(persisted: Fussy(value: 7)) == 1)
        #expect(try fixture.count(persisted: Position(x: 1, y: 2)) == 1)
        #expect(engine.world.get(Fussy.self, for: good) == Fussy(value: 7))
    }
}
