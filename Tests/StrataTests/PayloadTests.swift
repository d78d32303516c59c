import Testing
@testable import Strata

@Suite struct PayloadTests {
    @Test func valuesRoundTrip() throws {
        var w = PayloadWriter()
        let id = EntityID()
        w.write(Int64.min); w.write(Int64.max); w.write(-1 as Int); w.write(UInt64.max)
        w.write(Float(3.5)); w.write(Double.pi); w.write(true); w.write("héllo"); w.write([Float(1), 2])
        w.write(id); w.write([UInt8](repeating: 7, count: 3))
        try w.bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws in
            var r = PayloadReader(buffer)
            #expect(try r.read() as Int64 == .min)
            #expect(try r.read() as Int64 == .max)
            #expect(try r.read() as Int == -1)
            #expect(try r.read() as UInt64 == .max)
            #expect(try r.read() as Float == 3.5)
            #expect(try r.read() as Double == .pi)
            #expect(try r.read() as Bool == true)
            #expect(try r.read() as String == "héllo")
            #expect(try r.read() as [Float] == [1, 2])
            #expect(try r.read() as EntityID == id)
            #expect(try r.read() as [UInt8] == [7, 7, 7])
            #expect(r.isAtEnd)
        }
    }

    @Test func smallIntegersAreOneByte() {
        var w = PayloadWriter()
        w.write(5 as Int)
        w.write(-3 as Int)
        #expect(w.bytes.count == 2)
    }

    @Test func truncatedInputFailsCleanly() {
        var w = PayloadWriter()
        w.write("a long enough string")
        let truncated = Array(w.bytes.prefix(5))
        truncated.withUnsafeBytes { buffer in
            var r = PayloadReader(buffer)
            #expect(throws: PayloadError.self) { _ = try r.read() as String }
        }
        [UInt8]().withUnsafeBytes { buffer in
            var r = PayloadReader(buffer)
            #expect(throws: PayloadError.self) { _ = try r.read() as Float }
        }
    }
}
