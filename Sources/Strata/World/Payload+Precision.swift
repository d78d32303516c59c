/// Floats stored to a declared precision: a component type that needs a position to a
/// hundredth, not to the float's last bit, writes it as a whole number of steps.
///
///     func encode(to p: inout PayloadWriter) { p.write(x, precision: 0.01); p.write(y, precision: 0.01) }
///     init(from p: inout PayloadReader, version: Int) throws {
///         x = try p.read(precision: 0.01); y = try p.read(precision: 0.01)
///     }
///
/// The value is stored as `(value / precision).rounded()`, a little-endian `Int32`: four
/// bytes, like the float, but a value that moves by a few steps changes only the low byte
/// or two of it, where a float on a grid changes most of its mantissa. The segment log
/// codes a record against its key's previous one (its XOR: the bytes that did not change
/// are left out), so a moving (x, y) costs a byte or two per field instead of four.
///
/// It is lossy on purpose, and deterministic: what a reload, a pull or a digest gets is
/// `steps × precision`, the value to the nearest step, and storing that again gives the
/// same steps, so a device's digest (which covers the encoded bytes) is the same before a
/// reload and after, and the same on a device that received the value. A value the steps
/// cannot hold (NaN, an infinity, beyond `Int32`'s steps, or one that would not come back
/// to the same steps), or a precision that is not a positive finite number, is stored
/// whole after a marker (eight bytes): nothing is ever clamped or lost silently.
///
/// Declaring a precision changes the type's encoding: bump its ``Component/payloadVersion``
/// and keep reading the older version with `read()`.
extension PayloadWriter {
    /// The steps that mark a value stored whole after them.
    static let wholeFloatMarker = Int32.min

    /// Appends `value` to `precision` (see the extension's description).
    public mutating func write(_ value: Float, precision: Float) {
        if let steps = Self.steps(of: value, precision: precision) {
            appendUInt32(UInt32(bitPattern: steps))
        } else {
            appendUInt32(UInt32(bitPattern: Self.wholeFloatMarker))
            appendUInt32(value.bitPattern)
        }
    }

    /// `value` in steps of `precision`, when those steps read back as a value that gives
    /// the same steps again; nil when it must be stored whole.
    static func steps(of value: Float, precision: Float) -> Int32? {
        guard precision.isFinite, precision > 0, value.isFinite else { return nil }
        let step = Double(precision)
        let steps = (Double(value) / step).rounded()
        guard steps > Double(Int32.min), steps <= Double(Int32.max) else { return nil }
        let stored = Int32(steps)
        // What a reader gets must store as the same steps: the digest covers these bytes.
        guard (Double(PayloadReader.value(ofSteps: stored, precision: precision)) / step).rounded() == steps else { return nil }
        return stored
    }
}

extension PayloadReader {
    /// A float written with ``PayloadWriter/write(_:precision:)`` and the same `precision`.
    public mutating func read(precision: Float) throws -> Float {
        let steps = Int32(bitPattern: try readFixedUInt32())
        if steps == PayloadWriter.wholeFloatMarker { return Float(bitPattern: try readFixedUInt32()) }
        return Self.value(ofSteps: steps, precision: precision)
    }

    static func value(ofSteps steps: Int32, precision: Float) -> Float {
        Float(Double(steps) * Double(precision))
    }
}
