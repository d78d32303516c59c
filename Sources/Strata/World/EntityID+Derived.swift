import Foundation

/// Entity ids made from the document's node and the entity's number (schema 23), so that
/// the file need not store them: `entities.id` is NULL for such an id, and every reader
/// makes it again (``EntityIDColumn``). A world spawns its new entities with them
/// (``World/spawn(id:)``).
///
/// Layout: the last 8 bytes of the node id (random in a UUID of version 4 or 7), the tag
/// byte 127, then the number in 7 groups of 7 bits, most significant first, one a byte
/// (SQL's `char()` builds each as one byte below 128: ``EntityIDColumn/derivedSQL(node:number:)``).
/// An operation id made from its sequence (`StoredOperation.derivedID(node:seq:)`) has the
/// same first 8 bytes and its sequence's top group at byte 8, which is 127 only for a
/// sequence of 127 × 2^49 or more: the two never meet below that, and they are not kept in
/// one table anyway.
///
/// Such an id is unique while numbers are: a number is never given twice in a document
/// whose entity ids are made from it (`replica.numbers_through` keeps the highest number
/// a deleted row had). Pure functions: any thread.
extension EntityID {
    /// The highest number an id is made from: 7 groups of 7 bits. A number above it gets
    /// an id made the usual way (time-ordered), stored as it is.
    static let highestDerivedNumber: EntityNumber = (1 << 49) - 1

    /// Byte 8 of an id made from a number.
    static let derivedTag: UInt8 = 127

    /// The id of the entity numbered `number` in the document of `node`; nil for a
    /// number that is not positive or above ``highestDerivedNumber``.
    init?(node: NodeID, number: EntityNumber) {
        guard number > 0, number <= Self.highestDerivedNumber else { return nil }
        var uuid = node.uuid.uuid   // a tuple on the stack: no allocation on the tick thread
        withUnsafeMutableBytes(of: &uuid) { bytes in
            for i in 0 ..< 8 { bytes[i] = bytes[8 + i] }
            bytes[8] = Self.derivedTag
            for i in 1 ..< 8 { bytes[8 + i] = UInt8((number >> (7 * (7 - i))) & 0x7F) }
        }
        self.init(UUID(uuid: uuid))
    }

    /// The number this id was made from in the document of `node`, or nil if it was not
    /// made from one there.
    func derivedNumber(node: NodeID) -> EntityNumber? {
        guard let number = withBytes({ bytes -> EntityNumber? in
            guard bytes[8] == Self.derivedTag else { return nil }
            var number: EntityNumber = 0
            for i in 1 ..< 8 {
                guard bytes[8 + i] < 128 else { return nil }
                number = number << 7 | EntityNumber(bytes[8 + i])
            }
            return number
        }) else { return nil }
        return EntityID(node: node, number: number) == self ? number : nil
    }
}
