import Foundation

/// New ids in time order (UUID version 7, RFC 9562 §5.7), without a system call each:
/// the entity ids ``World/spawn(id:)`` cannot make from a number, and the operation ids
/// ``OperationLog`` cannot make from a sequence.
///
/// Why time order: ids are keys of B-trees that grow as entities and operations are made
/// (`entities`' unique index on `id`). Random (version 4) ids land on a random leaf each,
/// so every commit that spawns dirties a leaf of its own; ids that grow with time append
/// at the right edge, where the previous commit's leaf already is.
///
/// Layout, big-endian, so that SQLite's `memcmp` of the 16-byte BLOBs sorts by time:
/// 48 bits of Unix milliseconds, the version (7), a 42-bit counter spread over `rand_a`
/// (12 bits) and the top of `rand_b` (30 bits), the variant (binary 10), 32 random bits.
/// The counter starts at a random value below 2^41 with each new millisecond and counts
/// up within it (RFC 9562's "fixed-length dedicated counter", method 1, with room for
/// 2^41 ids in a millisecond), so ids from one generator strictly increase; a clock that
/// steps back is treated as the last millisecond seen.
///
/// The random bits come from xoshiro256** (Blackman and Vigna), seeded once with 256
/// bits from the system generator: `UUID()` reads the kernel's random source for every
/// id, which cost most of a local append on the tick thread (3.8 µs on the development VM).
///
/// Tick thread (inside ``World`` and ``OperationLog``).
struct TimeOrderedIDs {
    private var state: (UInt64, UInt64, UInt64, UInt64)
    private var lastMilliseconds: Int64 = 0
    private var counter: UInt64 = 0

    init() {
        var system = SystemRandomNumberGenerator()
        state = (system.next(), system.next(), system.next(), system.next())
        if state == (0, 0, 0, 0) { state.0 = 1 }   // the one state the generator cannot leave
    }

    private mutating func next() -> UInt64 {
        let result = rotate(state.1 &* 5, 7) &* 9
        let t = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= t
        state.3 = rotate(state.3, 45)
        return result
    }

    private func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// The counter's width: 12 bits of `rand_a` and 30 of `rand_b`.
    private static let counterBits: UInt64 = 42

    /// A new id made at `milliseconds` (Unix time), above every id this generator made before.
    mutating func make(milliseconds: Int64) -> EntityID {
        if milliseconds > lastMilliseconds {
            lastMilliseconds = milliseconds
            counter = next() >> (64 - (Self.counterBits - 1))   // below 2^41: room to count up
        } else {
            counter += 1
            if counter >> Self.counterBits != 0 {   // 2^41 ids in one millisecond: borrow the next one
                lastMilliseconds += 1
                counter = 0
            }
        }
        let timestamp = UInt64(truncatingIfNeeded: lastMilliseconds) & 0xFFFF_FFFF_FFFF
        let high = timestamp << 16 | 0x7000 | (counter >> 30) & 0x0FFF
        let low = 0x8000_0000_0000_0000 | (counter & 0x3FFF_FFFF) << 32 | next() >> 32
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { bytes in
            bytes.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        return EntityID(UUID(uuid: raw))
    }

    /// A new id made now.
    mutating func make() -> EntityID { make(milliseconds: unixMilliseconds()) }
}
