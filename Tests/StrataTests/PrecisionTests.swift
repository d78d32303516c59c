import Foundation
import GRDB
import StrataCanvas
import Testing
@testable import Strata

/// A position declared to a hundredth (``PayloadWriter/write(_:precision:)``).
struct RoundedPosition: Component, Equatable {
    static let typeName = "test.rounded_position"
    static let tier = Tier.derived
    static let precision: Float = 0.01
    var x: Float, y: Float

    func encode(to payload: inout PayloadWriter) {
        payload.write(x, precision: Self.precision)
        payload.write(y, precision: Self.precision)
    }

    init(x: Float, y: Float) { self.x = x; self.y = y }

    init(from payload: inout PayloadReader, version: Int) throws {
        x = try payload.read(precision: Self.precision)
        y = try payload.read(precision: Self.precision)
    }
}

/// Floats stored to a declared precision: to the nearest step, stored again as the same
/// bytes, whole where the steps cannot hold them, and a moving value a byte or two.
@Suite struct PrecisionTests {
    func stored(_ value: Float, _ precision: Float) -> [UInt8] {
        var writer = PayloadWriter()
        writer.write(value, precision: precision)
        return writer.bytes
    }

    func read(_ bytes: [UInt8], _ precision: Float) throws -> Float {
        try bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            let value = try reader.read(precision: precision)
            #expect(reader.isAtEnd)
            return value
        }
    }

    @Test func aValueComesBackToTheNearestStepAndStoresAsTheSameBytes() throws {
        var rng = SplitMix64(seed: 7)
        for precision: Float in [0.01, 0.001, 0.5, 1, 1.0 / 1024] {
            for _ in 0 ..< 2_000 {
                let value = Float(Int64(rng.next() % 2_000_000) - 1_000_000) / 997
                let bytes = stored(value, precision)
                #expect(bytes.count == 4)
                let back = try read(bytes, precision)
                // The nearest step, as the nearest float to it.
                #expect(abs(Double(back) - Double(value)) <= Double(precision) / 2 + Double(value.ulp), "\(value) at \(precision): \(back)")
                #expect(stored(back, precision) == bytes, "\(value) at \(precision): stored again differently")
            }
        }
        #expect(try read(stored(12.344, 0.01), 0.01) == Float(Double(1234) * Double(Float(0.01))))
        #expect(try read(stored(-0.0, 0.01), 0.01) == 0)
    }

    @Test func whatTheStepsCannotHoldIsStoredWholeBitForBit() throws {
        let nan = Float(bitPattern: 0xFFC0_1234)
        let cases: [(Float, Float)] = [
            (nan, 0.01), (.infinity, 0.01), (-.infinity, 0.01),
            (3e9, 1), (-3e9, 1), (1e30, 0.001),                 // beyond Int32's steps
            (1.5, 0), (1.5, -0.01), (1.5, .nan), (1.5, .infinity) // not a precision
        ]
        for (value, precision) in cases {
            let bytes = stored(value, precision)
            #expect(bytes.count == 8, "\(value) at \(precision)")
            #expect(try read(bytes, precision).bitPattern == value.bitPattern, "\(value) at \(precision)")
        }
        // The marker alone, cut short: damage, never a value.
        #expect(throws: PayloadError.self) { try read(Array(stored(nan, 0.01).prefix(6)), 0.01) }
    }

    @Test func aMovingValueIsAFewBytesInTheLogAndReloadsAsStoredWithTheSameDigest() throws {
        let fixture = EngineFixture()
        let digest: WorldDigest
        var values: [EntityID: RoundedPosition] = [:]
        do {
            let engine = try Engine.open(config: fixture.config, components: testComponents + [RoundedPosition.self],
                                         logger: quietLogger, options: fixture.options)
            let entities = (0 ..< 500).map { engine.world.spawn(RoundedPosition(x: Float($0) * 1.37, y: 3.14159)) }
            #expect(engine.flushNow())
            for flush in 1 ... 6 {
                for (i, entity) in entities.enumerated() {
                    engine.world.insert(RoundedPosition(x: Float(i) * 1.37 + Float(flush) * 0.173, y: 3.14159), for: entity)
                }
                #expect(engine.flushNow())
            }
            for entity in entities {
                if let id = engine.world.id(of: entity), let value = engine.world.get(RoundedPosition.self, for: entity) { values[id] = value }
            }
            digest = engine.world.digest()
            try engine.shutdown()
        }
        let queue = try fixture.reader()
        let last = try queue.read { try Int.fetchOne($0, sql: "SELECT length(records) FROM segments ORDER BY id DESC LIMIT 1") }
        try queue.close()
        // 500 moves of x by 17 steps: its low byte, a mask, a shape, a check, an entity delta.
        #expect(try #require(last) <= 500 * 6, "\(String(describing: last)) bytes for 500 moves")

        let engine = try Engine.open(config: fixture.config, components: testComponents + [RoundedPosition.self],
                                     logger: quietLogger, options: fixture.options)
        defer { try? engine.shutdown() }
        #expect(engine.world.digest() == digest, "the digest covers the stored steps: the same before the reload and after")
        #expect(values.count == 500)
        for (id, live) in values {
            let entity = try #require(engine.world.entity(for: id))
            let loaded = try #require(engine.world.get(RoundedPosition.self, for: entity))
            #expect(abs(loaded.x - live.x) <= 0.005 + 1e-4 && loaded.y == Float(Double(314) * Double(Float(0.01))))
        }
    }
}
