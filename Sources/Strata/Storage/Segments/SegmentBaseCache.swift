/// The payload the writer committed last for each key, to code the key's next record
/// against it (``XorCoding``): payloads of at most ``XorCoding/maxBaseBytes``, in slots of
/// that size, for at most ``capacity`` keys (past it, it starts over: the next record of
/// each key is written whole, and the one after is coded again). Every
/// ``wholeEvery``-th record of a key is written whole anyway, so that a row lost to damage
/// costs the records coded against it for that many writes of each key at most.
///
/// It changes only once a transaction commits (``SegmentAppender/didCommit()``), so what it
/// holds is what a reader finds before the next record: the key's newest record in the
/// log, or its base row (compaction moves values, it never changes them). Emptied when a
/// row leaves the log without its values reaching the base rows (set aside as unreadable).
/// A new writer (a new file) starts with an empty one. Writer thread, on ``SegmentLog``.
final class SegmentBaseCache {
    static let capacity = 131_072
    static let wholeEvery = 16

    private var slots: [UInt8] = []
    private var lengths: [UInt8] = []
    /// Records of the key coded in a row since its last whole one.
    private var coded: [UInt8] = []
    private var index: [SegmentKey: Int32] = [:]
    private var free: [Int32] = []

    var count: Int { index.count }

    /// Appends `key`'s base to `out` and returns where it is; nil when there is none, or
    /// when it is not `length` bytes long (only a payload of its length is coded against it).
    func appendBase(of key: SegmentKey, length: Int, to out: inout PayloadWriter) -> Range<Int>? {
        guard let slot = index[key], Int(coded[Int(slot)]) < Self.wholeEvery - 1, Int(lengths[Int(slot)]) == length else { return nil }
        let start = Int(slot) * XorCoding.maxBaseBytes
        let from = out.bytes.count
        slots.withUnsafeBytes { out.append(UnsafeRawBufferPointer(rebasing: $0[start ..< start + length])) }
        return from ..< out.bytes.count
    }

    /// `key`'s newest committed payload (nil: a removal, or a payload too long to keep),
    /// and whether it was written coded.
    func commit(_ key: SegmentKey, _ payload: UnsafeRawBufferPointer?, wasCoded: Bool) {
        guard let payload, payload.count <= XorCoding.maxBaseBytes else {
            if let slot = index.removeValue(forKey: key) { free.append(slot) }
            return
        }
        let slot: Int32
        if let existing = index[key] {
            slot = existing
        } else {
            if index.count >= Self.capacity { removeAll() }
            if let reused = free.popLast() {
                slot = reused
            } else {
                slot = Int32(lengths.count)
                lengths.append(0)
                coded.append(0)
                slots.append(contentsOf: repeatElement(0, count: XorCoding.maxBaseBytes))
            }
            index[key] = slot
        }
        let start = Int(slot) * XorCoding.maxBaseBytes
        slots.withUnsafeMutableBytes { UnsafeMutableRawBufferPointer(rebasing: $0[start ..< start + payload.count]).copyMemory(from: payload) }
        lengths[Int(slot)] = UInt8(payload.count)
        coded[Int(slot)] = wasCoded ? coded[Int(slot)] &+ 1 : 0
    }

    func removeAll() {
        slots.removeAll()
        lengths.removeAll()
        coded.removeAll()
        index.removeAll()
        free.removeAll()
    }
}
