/// How a ``ReplicaState`` is encoded on its own (``Component/encode(to:)``): a parked row,
/// and the rows of files written before version 3 (`ReplicaState+Version3.swift`), which
/// the writer stores now. Tick thread and writer thread (a component payload).
///
/// Version 2, written since 512-byte pages became the default: the distinct node ids once
/// (16 bytes each), then per stamp its type name as the length of the prefix it shares with
/// the name before it and the rest, its timestamp as the difference from the one before it
/// (zig-zag varint), and its node as an index into that list. A shape's two stamps from one
/// device take about 66 bytes, where version 1 (each stamp's name, timestamp and node in
/// full) took 88: a `components` row of a `WITHOUT ROWID` table keeps at most 102 bytes on a
/// 512-byte page, and a longer one takes an overflow page of its own (docs/storage.md).
extension ReplicaState {
    func encode(to payload: inout PayloadWriter) {
        Self.encode(stamps: stamps, held: held, to: &payload)
    }

    /// A state of `stamps` (in type-name order) and `held`, encoded. No allocation: the
    /// node list is on the stack, names are compared and copied as UTF-8 in place (the
    /// writer encodes a state per changed replicated entity).
    static func encode<Stamps: Collection<Stamped>>(stamps: Stamps, held: [Held], to payload: inout PayloadWriter) {
        withUnsafeTemporaryAllocation(of: OperationStamp.self, capacity: max(1, stamps.count + held.count)) { buffer in
            var distinct = 0
            func note(_ stamp: OperationStamp) {
                for index in 0 ..< distinct where buffer[index].sameNode(as: stamp) { return }
                buffer.initializeElement(at: distinct, to: stamp)
                distinct += 1
            }
            for entry in stamps { note(entry.stamp) }
            for entry in held { note(entry.value.stamp) }
            let nodes = UnsafeBufferPointer(rebasing: buffer[..<distinct])
            payload.write(UInt64(distinct))
            for node in nodes {
                withUnsafeBytes(of: node.nodeHigh.bigEndian) { payload.append($0) }
                withUnsafeBytes(of: node.nodeLow.bigEndian) { payload.append($0) }
            }
            var previous = Previous()
            payload.write(UInt64(stamps.count))
            for entry in stamps {
                previous.write(entry.type, entry.stamp, nodes: nodes, to: &payload)
            }
            payload.write(UInt64(held.count))
            for entry in held {
                let value = entry.value
                previous.write(entry.type, value.stamp, nodes: nodes, to: &payload)
                payload.write(value.version)
                payload.write(value.reason.rawValue)
                payload.write(value.payload != nil)
                if let bytes = value.payload { payload.write(bytes) }
            }
        }
    }

    /// Versions 1 and 2. Version 3 reads only with its document's numbers (``init(version3:names:replicated:)``).
    init(from payload: inout PayloadReader, version: Int) throws {
        if version >= 3 {
            throw PayloadError.invalid("a replica state of payload version \(version) reads with its document's node and type numbers")
        }
        if version < 2 {
            try self.init(version1: &payload)
            return
        }
        self.init()
        var nodes: [(high: UInt64, low: UInt64)] = []
        for _ in 0 ..< (try payload.readCount()) {
            nodes.append((try Self.readHalf(&payload), try Self.readHalf(&payload)))
        }
        var previous = Previous()
        for _ in 0 ..< (try payload.readCount()) {
            let (type, stamp) = try previous.read(&payload, nodes: nodes)
            Self.set(&stamps, type, stamp)
        }
        for _ in 0 ..< (try payload.readCount()) {
            let (type, stamp) = try previous.read(&payload, nodes: nodes)
            Self.set(&held, type, try Self.readHeld(&payload, stamp: stamp))
        }
    }

    /// The name and timestamp the next entry is written or read against.
    private struct Previous {
        var name = ""
        var timestamp: Int64 = 0

        mutating func write(_ type: String, _ stamp: OperationStamp, nodes: UnsafeBufferPointer<OperationStamp>, to payload: inout PayloadWriter) {
            var shared = 0
            var before = name.utf8.makeIterator(), now = type.utf8.makeIterator()
            while let a = before.next(), let b = now.next(), a == b { shared += 1 }
            payload.write(UInt64(shared))
            var type = type
            type.withUTF8 { utf8 in
                payload.write(UInt64(utf8.count - shared))
                payload.append(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[shared...]))
            }
            payload.write(stamp.timestamp &- timestamp)
            var index = 0
            while index < nodes.count, !nodes[index].sameNode(as: stamp) { index += 1 }
            payload.write(UInt64(index))
            (name, timestamp) = (type, stamp.timestamp)
        }

        mutating func read(_ payload: inout PayloadReader, nodes: [(high: UInt64, low: UInt64)]) throws -> (String, OperationStamp) {
            // Not `readCount()`: what a name shares may be longer than what is left to read.
            let shared: UInt64 = try payload.read()
            guard shared <= UInt64(name.utf8.count) else { throw PayloadError.invalid("a name sharing \(shared) bytes of \(name.utf8.count)") }
            name = String(decoding: Array(name.utf8.prefix(Int(shared))) + (try payload.read() as [UInt8]), as: UTF8.self)
            timestamp = timestamp &+ (try payload.read() as Int64)
            let index: UInt64 = try payload.read()
            guard index < UInt64(nodes.count) else { throw PayloadError.invalid("node \(index) of \(nodes.count)") }
            let node = nodes[Int(index)]
            return (name, OperationStamp(timestamp: timestamp, nodeHigh: node.high, nodeLow: node.low))
        }
    }

    /// Version 1: every stamp's name, timestamp and node in full.
    private init(version1 payload: inout PayloadReader) throws {
        self.init()
        for _ in 0 ..< (try payload.readCount()) {
            let type: String = try payload.read()
            Self.set(&stamps, type, try Self.readStamp(&payload))
        }
        for _ in 0 ..< (try payload.readCount()) {
            let type: String = try payload.read()
            Self.set(&held, type, try Self.readHeld(&payload, stamp: try Self.readStamp(&payload)))
        }
    }

    /// A held value's fields after its stamp (both versions).
    private static func readHeld(_ payload: inout PayloadReader, stamp: OperationStamp) throws -> HeldValue {
        let version: Int = try payload.read()
        let raw: UInt8 = try payload.read()
        guard let reason = HeldValue.Reason(rawValue: raw) else { throw PayloadError.invalid("held reason \(raw)") }
        let present: Bool = try payload.read()
        return HeldValue(stamp: stamp, version: version, payload: present ? try payload.read() as [UInt8] : nil, reason: reason)
    }

    private static func readStamp(_ payload: inout PayloadReader) throws -> OperationStamp {
        let timestamp: Int64 = try payload.read()
        return OperationStamp(timestamp: timestamp, nodeHigh: try readHalf(&payload), nodeLow: try readHalf(&payload))
    }

    private static func readHalf(_ payload: inout PayloadReader) throws -> UInt64 {
        UInt64(bigEndian: try payload.readBytes(count: 8).loadUnaligned(as: UInt64.self))
    }
}
